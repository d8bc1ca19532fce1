/*
 * clock.h - one clock domain (a GPU's, CUPTI's) mapped onto the host clock
 * by least-squares fits of its calibration pairs: pure arithmetic, no I/O
 * (is-merge's, tested alone in tests/unit/test_clock.c).  CUPTI's clock
 * follows CLOCK_REALTIME, which steps (NTP, an administrator): the pairs
 * are split into pieces where it stepped, each with its own line, and a
 * pair that strays alone (a preempted reading) is left out.
 */
#ifndef IST_CLOCK_H
#define IST_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ist_clock_piece {
	double from;            /* domain ns (from x0) where it starts */
	double a, b;            /* host = y0 + a + b * (domain - x0) */
};

struct ist_clock_fit {
	char *domain;           /* its name, owned; the caller's to set */
	double *x, *y;          /* domain ns, host ns (relative to x0, y0) */
	int64_t x0, y0;         /* the first pair */
	size_t n, cap;
	/* the fit: host = y0 + a + b * (domain - x0), the first piece's */
	double a, b, resid;     /* resid: RMS of the residuals kept, ns */
	double unc;             /* ns: resid, or where every piece has at
	                         * most two pairs (a line through them leaves
	                         * none), the RMS of the pairs' offsets about
	                         * each piece's mean */
	bool fitted;
	struct ist_clock_piece *piece;   /* in domain order */
	size_t npiece;
	size_t steps, outliers; /* steps found, pairs left out */
};

/* Adds the pair (host, domain) read together; -1 when out of memory. */
int ist_clock_add(struct ist_clock_fit *c, int64_t host, int64_t domain);
/* Fits the pairs so far (sorting them by domain time): a piece per step
 * of the domain's clock; within a piece of fewer than two pairs (or no
 * spread) the drift is taken as none and the offset as the pairs' mean. */
void ist_clock_fit(struct ist_clock_fit *c);
/* Domain time t on the host clock, rounded to the nanosecond, through the
 * piece that holds t (the first before it, the last after). */
int64_t ist_clock_map(const struct ist_clock_fit *c, int64_t t);
/* Host minus domain time at the first pair. */
int64_t ist_clock_offset(const struct ist_clock_fit *c);
void ist_clock_release(struct ist_clock_fit *c);

#endif
