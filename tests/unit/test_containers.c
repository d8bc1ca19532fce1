/*
 * test_containers.c - the containers every stage leans on, alone: the
 * string interner (lib/trace/strtab.c) and the analyzer's map, its
 * distributions and its longest few ranges (lib/analyze/containers.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_int.h"
#include "tap.h"

static void
test_strtab(void)
{
	struct ist_strtab t = { 0 };
	const char *first;
	char name[32];
	bool added, good = true, stable = true;
	uint32_t id;

	ok(ist_strtab_intern(&t, "", 0, &added) == 1 && added &&
	    ist_strtab_intern(&t, "", 0, &added) == 1 && !added,
	    "the empty string is a string: id 1, found again");
	first = ist_strtab_get(&t, 1)->p;
	/* enough to grow the table and fill several blocks */
	for (int i = 0; i < 100000 && good; i++) {
		int n = snprintf(name, sizeof(name), "name %d", i);
		good = ist_strtab_intern(&t, name, (size_t)n, &added) ==
		    (uint32_t)i + 2 && added;
	}
	for (int i = 0; i < 100000 && good; i += 7) {
		int n = snprintf(name, sizeof(name), "name %d", i);
		const struct ist_strent *e;
		id = ist_strtab_intern(&t, name, (size_t)n, &added);
		e = ist_strtab_get(&t, id);
		good = id == (uint32_t)i + 2 && !added && e->n == (uint32_t)n &&
		    memcmp(e->p, name, (size_t)n) == 0 && e->p[n] == '\0';
	}
	stable = ist_strtab_get(&t, 1)->p == first;
	ok(good && t.n == 100001, "100,000 strings numbered as first seen, "
	    "found again, NUL-terminated");
	ok(stable, "bytes never move as the table grows (stable strings)");
	id = ist_strtab_intern(&t, "a\0b", 3, NULL);
	ok(id != ist_strtab_intern(&t, "a", 1, NULL) &&
	    ist_strtab_get(&t, id)->n == 3, "a NUL inside a string is part "
	    "of it");
	ist_strtab_clear(&t);
	ok(t.n == 0 && ist_strtab_intern(&t, "name 5", 6, &added) == 1 &&
	    added, "cleared: numbering starts again at 1");
	ist_strtab_release(&t);
}

static void
test_u64map(void)
{
	struct u64map m = { 0 };
	bool found, good = true;

	for (uint64_t k = 0; k < 50000 && good; k++) {
		uint32_t *v = an_u64map_slot(&m, k * 0x9e3779b97f4a7c15ull,
		    &found);
		good = v != NULL && !found;
		if (good) {
			*v = (uint32_t)k + 1;
			m.n++;
		}
	}
	for (uint64_t k = 0; k < 50000 && good; k += 3) {
		uint32_t *v = an_u64map_slot(&m, k * 0x9e3779b97f4a7c15ull,
		    &found);
		good = found && *v == (uint32_t)k + 1;
	}
	ok(good, "u64map: 50,000 keys placed, each found with its value");
	an_u64map_release(&m);
}

static void
test_dist(void)
{
	struct dist d = { 0 };
	int64_t p50, p95, p100;

	for (int64_t v = 1; v <= 1000; v++)
		an_dist_add(&d, v);
	ok(an_dist_pct(&d, 50) == 500 && an_dist_pct(&d, 95) == 950 &&
	    an_dist_pct(&d, 100) == 1000 && an_dist_pct(&d, 0) == 1,
	    "a distribution of 1..1000 while exact: nearest-rank p50 500, "
	    "p95 950");
	an_dist_release(&d);
	memset(&d, 0, sizeof(d));
	/* past EXACT_MAX values it keeps log buckets: within 1/64 */
	for (int64_t v = 1; v <= 100000; v++)
		an_dist_add(&d, v * 1000);
	p50 = an_dist_pct(&d, 50);
	p95 = an_dist_pct(&d, 95);
	p100 = an_dist_pct(&d, 100);
	ok(llabs(p50 - 50000000) <= 50000000 / 64 &&
	    llabs(p95 - 95000000) <= 95000000 / 64 &&
	    llabs(p100 - 100000000) <= 100000000 / 64, "100,000 values in "
	    "buckets: p50 %lld, p95 %lld, max %lld, each within 1/64",
	    (long long)p50, (long long)p95, (long long)p100);
	an_dist_release(&d);
}

static void
test_topk(void)
{
	struct topk t = { 0 };
	bool sorted = true;

	for (int64_t i = 0; i < 100; i++)
		an_topk_add(&t, i * 1000, i * 1000 + (i * 37) % 101);
	for (int i = 1; i < t.n; i++)
		sorted &= t.e[i] - t.s[i] <= t.e[i - 1] - t.s[i - 1];
	ok(t.n == TOPK && sorted && t.e[0] - t.s[0] == 100,
	    "the longest %d ranges of 100, longest first (%lld ns)", TOPK,
	    (long long)(t.e[0] - t.s[0]));
}

int
main(void)
{
	test_strtab();
	test_u64map();
	test_dist();
	test_topk();
	return done();
}
