/* containers.c - the analyzer's containers: an interner, a map from 64-bit
 * keys, growable arrays, distributions, the longest few ranges. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>

#include "analyze_int.h"

/* ---- string interning ---- */


/* ---- a map from 64-bit keys to indices ---- */


/* The slot for key: *found says whether it holds key. */
uint32_t *
an_u64map_slot(struct u64map *m, uint64_t key, bool *found)
{
	if ((m->n + 1) * 2 > m->mask + 1) {
		uint32_t ncap = m->mask ? (m->mask + 1) * 2 : 256;
		uint64_t *nk = calloc(ncap, sizeof(*nk));
		uint32_t *nv = calloc(ncap, sizeof(*nv));
		if (nk == NULL || nv == NULL) {
			free(nk);
			free(nv);
			return NULL;
		}
		for (uint32_t i = 0; m->mask && i <= m->mask; i++) {
			uint32_t j;
			if (!m->val[i])
				continue;
			j = (uint32_t)an_mix64(m->key[i]) & (ncap - 1);
			while (nv[j])
				j = (j + 1) & (ncap - 1);
			nk[j] = m->key[i];
			nv[j] = m->val[i];
		}
		free(m->key);
		free(m->val);
		m->key = nk;
		m->val = nv;
		m->mask = ncap - 1;
	}
	for (uint32_t j = (uint32_t)an_mix64(key) & m->mask;;
	    j = (j + 1) & m->mask) {
		if (!m->val[j]) {
			*found = false;
			m->key[j] = key;
			return &m->val[j];
		}
		if (m->key[j] == key) {
			*found = true;
			return &m->val[j];
		}
	}
}

/* Empties m, keeping its table for what it will hold next */
void
an_u64map_clear(struct u64map *m)
{
	if (m->n == 0)
		return;
	memset(m->val, 0, ((size_t)m->mask + 1) * sizeof(*m->val));
	m->n = 0;
}

void
an_u64map_release(struct u64map *m)
{
	free(m->key);
	free(m->val);
}

int
an_grow(void **p, uint32_t *cap, size_t size)
{
	uint32_t c = *cap ? *cap * 2 : 16;
	void *np = realloc(*p, (size_t)c * size);

	if (np == NULL)
		return -1;
	*p = np;
	*cap = c;
	return 0;
}

/* ---- distributions: exact up to EXACT_MAX values, then log buckets ---- */


static uint32_t
bucket_of(int64_t v)
{
	int msb;
	if (v < 64)
		return v < 0 ? 0 : (uint32_t)v;
	msb = 63 - __builtin_clzll((uint64_t)v);
	return (uint32_t)(msb - 5) * 64 +
	    (uint32_t)(((uint64_t)v >> (msb - 6)) & 63);
}

static int64_t
bucket_mid(uint32_t b)
{
	int msb;
	int64_t lo;
	if (b < 64)
		return b;
	msb = (int)(b / 64) + 5;
	lo = (int64_t)(64 + b % 64) << (msb - 6);
	return lo + ((int64_t)1 << (msb - 6)) / 2;
}

int
an_dist_add(struct dist *d, int64_t v)
{
	d->count++;
	if (d->hist) {
		d->hist[bucket_of(v)]++;
		return 0;
	}
	if (d->n < EXACT_MAX) {
		if (d->n == d->cap) {
			uint32_t c = d->cap ? d->cap * 2 : 16;
			int64_t *nv = realloc(d->v, c * sizeof(*nv));
			if (nv == NULL)
				return -1;
			d->v = nv;
			d->cap = c;
		}
		d->v[d->n++] = v;
		return 0;
	}
	if ((d->hist = calloc(64 * 64, sizeof(*d->hist))) == NULL)
		return -1;
	for (uint32_t i = 0; i < d->n; i++)
		d->hist[bucket_of(d->v[i])]++;
	d->hist[bucket_of(v)]++;
	free(d->v);
	d->v = NULL;
	d->n = d->cap = 0;
	return 0;
}

int
an_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile (p in 0..100); exact while the values fit. */
int64_t
an_dist_pct(struct dist *d, double p)
{
	uint64_t rank;
	if (d->count == 0)
		return 0;
	rank = (uint64_t)ceil(p / 100.0 * (double)d->count);
	if (rank < 1)
		rank = 1;
	if (d->hist == NULL) {
		qsort(d->v, d->n, sizeof(*d->v), an_cmp_i64);
		return d->v[rank - 1];
	}
	for (uint32_t b = 0, seen = 0; b < 64 * 64; b++)
		if ((seen += d->hist[b]) >= rank)
			return bucket_mid(b);
	return 0;
}

void
an_dist_release(struct dist *d)
{
	free(d->v);
	free(d->hist);
}

/* ---- the longest few time ranges ---- */


void
an_topk_add(struct topk *t, int64_t s, int64_t e)
{
	int i;
	if (t->n < TOPK)
		i = t->n++;
	else if (e - s > t->e[TOPK - 1] - t->s[TOPK - 1])
		i = TOPK - 1;
	else
		return;
	t->s[i] = s;
	t->e[i] = e;
	for (; i > 0 && t->e[i] - t->s[i] > t->e[i - 1] - t->s[i - 1]; i--) {
		int64_t a = t->s[i], b = t->e[i];
		t->s[i] = t->s[i - 1];
		t->e[i] = t->e[i - 1];
		t->s[i - 1] = a;
		t->e[i - 1] = b;
	}
}

json_t *
an_topk_json(const struct topk *t)
{
	json_t *a = json_array();
	for (int i = 0; i < t->n; i++)
		json_array_append_new(a, json_pack("[I,I]", (json_int_t)t->s[i],
		    (json_int_t)t->e[i]));
	return a;
}
