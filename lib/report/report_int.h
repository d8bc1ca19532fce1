/*
 * report_int.h - shared by is-report's renderers (lib/report/); not
 * installed.
 */
#ifndef IST_REPORT_INT_H
#define IST_REPORT_INT_H

#include <stddef.h>

/*
 * Room for the figures of one line of a report: each call of dur(),
 * bytes() and span() takes the next slot, so that a line may print eight
 * figures at once.  Declare one with `struct nums u = { 0 };`.
 */
struct nums {
	char b[8][64];
	unsigned i;
};

/* A duration in ns, as "812 ns", "3.4 µs", "12.50 ms", "1.204 s". */
const char *dur(struct nums *u, double ns);
/* A size, as "512 B", "3.0 KiB", "1.5 MiB", "2.00 GiB". */
const char *bytes(struct nums *u, double v);
/* A range from start s to end e, both in ns, from the run's start t0. */
const char *span(struct nums *u, double s, double e, double t0);
/* A duration for an axis tick, one digit less: "3 µs", "12.5 ms". */
const char *dur_tick(char *b, size_t n, double ns);

#endif
