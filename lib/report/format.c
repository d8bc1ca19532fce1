/* format.c - the figures every report prints, formatted in one place. */
#include <math.h>
#include <stdio.h>

#include "report_int.h"

static char *
slot(struct nums *u)
{
	return u->b[u->i++ % (sizeof(u->b) / sizeof(u->b[0]))];
}

/* ns with `less` fewer decimals than a report's text (never fewer than 0) */
static const char *
fmt_dur(char *b, size_t n, double ns, int less)
{
	static const struct { double below, unit; const char *name; int d; }
	    units[] = {
		{ 1e3, 1, "ns", 0 }, { 1e6, 1e3, "µs", 1 },
		{ 1e9, 1e6, "ms", 2 }, { INFINITY, 1e9, "s", 3 },
	};
	double a = fabs(ns);
	size_t k = 0;

	while (a >= units[k].below)
		k++;
	snprintf(b, n, "%.*f %s", units[k].d > less ? units[k].d - less : 0,
	    ns / units[k].unit, units[k].name);
	return b;
}

const char *
dur(struct nums *u, double ns)
{
	return fmt_dur(slot(u), sizeof(u->b[0]), ns, 0);
}

const char *
dur_tick(char *b, size_t n, double ns)
{
	return fmt_dur(b, n, ns, 1);
}

const char *
bytes(struct nums *u, double v)
{
	char *b = slot(u);
	size_t n = sizeof(u->b[0]);

	if (v < 1024)
		snprintf(b, n, "%.0f B", v);
	else if (v < 1048576)
		snprintf(b, n, "%.1f KiB", v / 1024);
	else if (v < 1073741824)
		snprintf(b, n, "%.1f MiB", v / 1048576);
	else
		snprintf(b, n, "%.2f GiB", v / 1073741824);
	return b;
}

const char *
span(struct nums *u, double s, double e, double t0)
{
	char *b = slot(u);
	const char *x = dur(u, s - t0), *y = dur(u, e - t0);

	snprintf(b, sizeof(u->b[0]), "%s – %s", x, y);
	return b;
}
