/*
 * clock.c - a clock domain onto the host clock (see clock.h): least
 * squares per piece, the pieces split where the domain's clock stepped,
 * pairs that stray alone left out.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

/* The least jump between two pairs, beyond the domain's rate, in ns, that
 * is a step or a stray pair rather than jitter (pairs read host, domain,
 * host within a few microseconds). */
#define STEP_NS 20000.0

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

/* Least squares over pairs [i, j) not marked out; slope 1 with fewer than
 * two.  Returns how many it used. */
static size_t
lsq(const struct ist_clock_fit *c, const bool *out, size_t i, size_t j,
    double *a, double *b)
{
	long double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;

	for (size_t k = i; k < j; k++) {
		if (out && out[k])
			continue;
		sx += c->x[k];
		sy += c->y[k];
		sxx += (long double)c->x[k] * c->x[k];
		sxy += (long double)c->x[k] * c->y[k];
		n++;
	}
	if (n >= 2 && n * sxx - sx * sx > 0) {
		*b = (double)((n * sxy - sx * sy) / (n * sxx - sx * sx));
		*a = (double)((sy - *b * sx) / n);
	} else {
		*b = 1.0;
		*a = n > 0 ? (double)((sy - sx) / n) : 0.0;
	}
	return (size_t)n;
}

static int
by_x(const void *p, const void *q)
{
	const double *u = p, *v = q;

	return (u[0] > v[0]) - (u[0] < v[0]);
}

/* The pairs in domain order (they come in it; a merge of inputs may not). */
static int
sort_pairs(struct ist_clock_fit *c)
{
	double *xy = malloc(c->n * 2 * sizeof(double));

	if (xy == NULL)
		return -1;
	for (size_t i = 0; i < c->n; i++) {
		xy[2 * i] = c->x[i];
		xy[2 * i + 1] = c->y[i];
	}
	qsort(xy, c->n, 2 * sizeof(double), by_x);
	for (size_t i = 0; i < c->n; i++) {
		c->x[i] = xy[2 * i];
		c->y[i] = xy[2 * i + 1];
	}
	free(xy);
	return 0;
}

static int
add_piece(struct ist_clock_fit *c, double from, double a, double b)
{
	struct ist_clock_piece *np = realloc(c->piece, (c->npiece + 1) *
	    sizeof(*np));

	if (np == NULL)
		return -1;
	c->piece = np;
	c->piece[c->npiece++] = (struct ist_clock_piece){ from, a, b };
	return 0;
}

static int
by_value(const void *p, const void *q)
{
	double u = *(const double *)p, v = *(const double *)q;

	return (u > v) - (u < v);
}

/* The median of v[0..n) (which it sorts); 0 for none. */
static double
median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The rate (host per domain ns) of the piece that starts at pair i: the
 * median slope of its first few intervals, so that one stray pair among
 * them does not set it; 1 with none. */
static double
piece_rate(const struct ist_clock_fit *c, size_t i)
{
	double w[5];
	size_t m = 0;

	for (size_t k = i + 1; k < c->n && m < 5; k++)
		if (c->x[k] > c->x[k - 1])
			w[m++] = (c->y[k] - c->y[k - 1]) /
			    (c->x[k] - c->x[k - 1]);
	return m ? median(w, m) : 1.0;
}

/* How far the host moved from pair k-1 to k beyond what rate says */
static double
excess(const struct ist_clock_fit *c, size_t k, double rate)
{
	return (c->y[k] - c->y[k - 1]) - rate * (c->x[k] - c->x[k - 1]);
}

/* The jitter bound: 8 robust standard deviations of how far each interval
 * strays from the one before's rate (a step or a change of rate moves
 * one or two of them), at least STEP_NS. */
static int
jitter_bound(const struct ist_clock_fit *c, double *lim)
{
	double *e = malloc(c->n * sizeof(double));
	size_t m = 0;

	if (e == NULL)
		return -1;
	for (size_t k = 2; k < c->n; k++)
		if (c->x[k - 1] > c->x[k - 2])
			e[m++] = fabs(excess(c, k, (c->y[k - 1] - c->y[k - 2]) /
			    (c->x[k - 1] - c->x[k - 2])));
	*lim = 8 * 1.4826 * median(e, m) / 2;  /* two intervals' jitter */
	if (*lim < STEP_NS)
		*lim = STEP_NS;
	free(e);
	return 0;
}

/* A piece from pair i to j (excluded): least squares, or through its one
 * pair at the rate its neighbours gave */
static int
piece(struct ist_clock_fit *c, const bool *out, size_t i, size_t j,
    double rate)
{
	double a, b;

	if (lsq(c, out, i, j, &a, &b) < 2) {
		b = rate;
		a = c->y[i] - rate * c->x[i];
	}
	return add_piece(c, c->x[i], a, b);
}

/*
 * Between consecutive pairs, how far the host moved beyond what the
 * piece's own rate says: jitter, save where the clock stepped or changed
 * its rate (a large difference, the pairs after it agreeing with each
 * other: Kineto may switch CUPTI to the TSC) or one pair strayed (two
 * large differences of opposite sign, its own and the next's).  A step
 * or a new rate starts a piece, which takes its own rate; a stray pair is
 * left out.
 */
static int
split(struct ist_clock_fit *c, bool *out)
{
	double rate = piece_rate(c, 0), lim, d, d1;
	size_t start = 0;

	if (jitter_bound(c, &lim) != 0)
		return -1;
	for (size_t k = 1; k < c->n; k++) {
		if (fabs(d = excess(c, k, rate)) <= lim)
			continue;
		if (k + 1 < c->n && fabs(d1 = excess(c, k + 1, rate)) > lim &&
		    fabs(d + d1) <= lim) {
			out[k] = true;          /* strayed, and came back */
			c->outliers++;
			k++;
		} else if (k + 1 < c->n) {
			if (piece(c, out, start, k, rate) != 0)
				return -1;
			c->steps++;
			start = k;
			rate = piece_rate(c, k);
		} else {
			out[k] = true;          /* the last alone: no piece */
			c->outliers++;
		}
	}
	return piece(c, out, start, c->n, rate);
}

static void
forget_pieces(struct ist_clock_fit *c)
{
	free(c->piece);
	c->piece = NULL;
	c->npiece = 0;
	c->steps = c->outliers = 0;
}

/* The piece that holds domain time x (from x0): the last that starts at or
 * before it, the first before them all; 0 when there are none. */
static size_t
piece_of(const struct ist_clock_fit *c, double x)
{
	size_t lo = 0, hi = c->npiece;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->piece[mid].from <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The line that maps domain time x (from x0): its piece's, the fit's when
 * there are fewer than two pieces. */
static void
line_at(const struct ist_clock_fit *c, double x, double *a, double *b)
{
	size_t k;

	*a = c->a;
	*b = c->b;
	if (c->npiece < 2)
		return;
	k = piece_of(c, x);
	*a = c->piece[k].a;
	*b = c->piece[k].b;
}

/*
 * The uncertainty of a fit whose every piece has at most two pairs kept:
 * a line through two pairs leaves no residual, whatever their error, so
 * the residual says nothing.  The pairs' offsets (host minus domain) are
 * taken instead, at the rate of 1: their RMS about each piece's mean,
 * which counts the pairs' jitter and whatever drift there was (two pairs
 * cannot tell them apart).
 */
static double
spread(const struct ist_clock_fit *c, const bool *out)
{
	size_t np = c->npiece ? c->npiece : 1, m = 0;
	double *sum = calloc(np, sizeof(double)), ss = 0;
	size_t *cnt = calloc(np, sizeof(size_t));

	if (sum == NULL || cnt == NULL) {
		free(sum);
		free(cnt);
		return c->resid;
	}
	for (size_t i = 0; i < c->n; i++)
		if (!(out && out[i])) {
			size_t k = piece_of(c, c->x[i]);
			sum[k] += c->y[i] - c->x[i];
			cnt[k]++;
		}
	for (size_t i = 0; i < c->n; i++)
		if (!(out && out[i])) {
			size_t k = piece_of(c, c->x[i]);
			double r = c->y[i] - c->x[i] - sum[k] / (double)cnt[k];
			ss += r * r;
			m++;
		}
	free(sum);
	free(cnt);
	return m ? sqrt(ss / (double)m) : 0.0;
}

void
ist_clock_fit(struct ist_clock_fit *c)
{
	bool *out = c->n ? calloc(c->n, sizeof(bool)) : NULL;
	double ss = 0;
	size_t m = 0;

	forget_pieces(c);
	if (c->n == 0 || out == NULL || sort_pairs(c) != 0 ||
	    split(c, out) != 0) {
		/* no pairs, or out of memory: one line through them all */
		forget_pieces(c);
		lsq(c, NULL, 0, c->n, &c->a, &c->b);
		free(out);
		out = NULL;
	} else {
		c->a = c->piece[0].a;
		c->b = c->piece[0].b;
	}
	for (size_t i = 0; i < c->n; i++) {
		double a, b, r;
		if (out && out[i])
			continue;
		line_at(c, c->x[i], &a, &b);
		r = c->y[i] - (a + b * c->x[i]);
		ss += r * r;
		m++;
	}
	c->resid = m ? sqrt(ss / (double)m) : 0.0;
	/* pairs to spare beyond the two each piece's line goes through: the
	 * residual measures the fit; else the offsets' spread does */
	c->unc = m > 2 * (c->npiece ? c->npiece : 1) ? c->resid :
	    spread(c, out);
	c->fitted = true;
	free(out);
}

int64_t
ist_clock_map(const struct ist_clock_fit *c, int64_t t)
{
	double x = (double)(t - c->x0), a, b;

	line_at(c, x, &a, &b);
	return c->y0 + (int64_t)llround(a + b * x);
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
	free(c->piece);
}
