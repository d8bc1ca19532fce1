/*
 * clock.h - one clock domain (a GPU's, CUPTI's) mapped onto the host clock
 * by a least-squares fit of its calibration pairs: pure arithmetic, no I/O
 * (is-merge's, tested alone in tests/unit/test_clock.c).
 */
#ifndef IST_CLOCK_H
#define IST_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ist_clock_fit {
	char *domain;           /* its name, owned; the caller's to set */
	double *x, *y;          /* domain ns, host ns (relative to x0, y0) */
	int64_t x0, y0;         /* the first pair */
	size_t n, cap;
	/* the fit: host = y0 + a + b * (domain - x0) */
	double a, b, resid;     /* resid: RMS of the residuals, ns */
	bool fitted;
};

/* Adds the pair (host, domain) read together; -1 when out of memory. */
int ist_clock_add(struct ist_clock_fit *c, int64_t host, int64_t domain);
/* Fits the pairs so far: with fewer than two (or no spread) the drift is
 * taken as none and the offset as the pairs' mean. */
void ist_clock_fit(struct ist_clock_fit *c);
/* Domain time t on the host clock, rounded to the nanosecond. */
int64_t ist_clock_map(const struct ist_clock_fit *c, int64_t t);
/* Host minus domain time at the first pair. */
int64_t ist_clock_offset(const struct ist_clock_fit *c);
void ist_clock_release(struct ist_clock_fit *c);

#endif
