/* clock.c - least squares of host on domain time (see clock.h). */
#include <math.h>
#include <stdlib.h>

#include "clock.h"

int
ist_clock_add(struct ist_clock_fit *c, int64_t host, int64_t domain)
{
	if (c->n == 0) {
		c->x0 = domain;
		c->y0 = host;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		double *nx = realloc(c->x, cap * sizeof(double));
		double *ny;
		if (nx == NULL)
			return -1;
		c->x = nx;
		if ((ny = realloc(c->y, cap * sizeof(double))) == NULL)
			return -1;
		c->y = ny;
		c->cap = cap;
	}
	c->x[c->n] = (double)(domain - c->x0);
	c->y[c->n] = (double)(host - c->y0);
	c->n++;
	return 0;
}

void
ist_clock_fit(struct ist_clock_fit *c)
{
	long double sx = 0, sy = 0, sxx = 0, sxy = 0, n = (long double)c->n;
	double ss = 0;

	for (size_t i = 0; i < c->n; i++) {
		sx += c->x[i];
		sy += c->y[i];
		sxx += (long double)c->x[i] * c->x[i];
		sxy += (long double)c->x[i] * c->y[i];
	}
	if (c->n >= 2 && n * sxx - sx * sx > 0) {
		c->b = (double)((n * sxy - sx * sy) / (n * sxx - sx * sx));
		c->a = (double)((sy - c->b * sx) / n);
	} else {
		c->b = 1.0;
		c->a = c->n ? (double)((sy - sx) / n) : 0.0;
	}
	for (size_t i = 0; i < c->n; i++) {
		double r = c->y[i] - (c->a + c->b * c->x[i]);
		ss += r * r;
	}
	c->resid = c->n ? sqrt(ss / (double)c->n) : 0.0;
	c->fitted = true;
}

int64_t
ist_clock_map(const struct ist_clock_fit *c, int64_t t)
{
	return c->y0 + (int64_t)llround(c->a + c->b * (double)(t - c->x0));
}

int64_t
ist_clock_offset(const struct ist_clock_fit *c)
{
	return (c->y0 + (int64_t)llround(c->a)) - c->x0;
}

void
ist_clock_release(struct ist_clock_fit *c)
{
	free(c->domain);
	free(c->x);
	free(c->y);
}
