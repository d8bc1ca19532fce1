/*
 * report_detail.c - what the HTML report's viewer draws beyond the binned
 * timeline: the ranges themselves (down to a duration that doubles
 * whenever they pass a budget, so the page stays small whatever the run's
 * length), the garbage collections and import phases, and per thread a
 * flame graph of its Python calls merged by call path.  Written as JSON
 * into the page, read by viewer.js.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "report.h"
#include "report_int.h"

#define SLICES_MAX 60000         /* ranges kept for the zoomable timeline */
#define NODES_MAX (1u << 18)     /* flame graph nodes, all threads */
#define PHASES_MAX 4096
#define PHASE_JOIN 1000000       /* imports closer than 1 ms: one phase */

static uint64_t
mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

/* Drops the ranges below min_dur, which doubles until a quarter of the
 * budget is free; collections stay, whatever their length. */
static void
thin(struct ist_timeline *tl)
{
	while (tl->nsl > SLICES_MAX * 3 / 4) {
		size_t j = 0;
		tl->min_dur = tl->min_dur ? tl->min_dur * 2 : 1000;
		for (size_t i = 0; i < tl->nsl; i++)
			if (tl->sl[i].d >= tl->min_dur || tl->sl[i].gc)
				tl->sl[j++] = tl->sl[i];
			else
				tl->sl_dropped++;
		tl->nsl = j;
	}
}

/* The child of node parent named name on lane li, made when new; the
 * parent itself when the budget is spent. */
static int64_t
child(struct ist_timeline *tl, struct flame *f, int li, uint32_t parent,
    uint32_t name)
{
	uint64_t key = (uint64_t)li << 58 | (uint64_t)parent << 32 | name;
	uint32_t j;

	if ((tl->fused + 1) * 2 > tl->fmask + 1) {
		uint32_t ncap = tl->fmask ? (tl->fmask + 1) * 2 : 4096;
		struct fkey *nm = calloc(ncap, sizeof(*nm));
		if (nm == NULL)
			return -1;
		for (uint32_t i = 0; tl->fmask && i <= tl->fmask; i++) {
			if (tl->fmap[i].node == 0)
				continue;
			j = (uint32_t)mix(tl->fmap[i].key) & (ncap - 1);
			while (nm[j].node)
				j = (j + 1) & (ncap - 1);
			nm[j] = tl->fmap[i];
		}
		free(tl->fmap);
		tl->fmap = nm;
		tl->fmask = ncap - 1;
	}
	for (j = (uint32_t)mix(key) & tl->fmask; tl->fmap[j].node;
	    j = (j + 1) & tl->fmask)
		if (tl->fmap[j].key == key)
			return tl->fmap[j].node;
	if (tl->fnodes >= NODES_MAX) {
		tl->fmerged++;
		return parent;
	}
	if (ist_room((void **)&f->n, &f->cap, f->nn, sizeof(*f->n)))
		return -1;
	f->n[f->nn] = (struct fnode){ name, parent, 0, 0 };
	tl->fmap[j] = (struct fkey){ key, f->nn };
	tl->fused++;
	tl->fnodes++;
	return f->nn++;
}

/* A Python call on lane l: its node in the lane's flame graph, and its
 * import phase. */
static int
flame_add(struct ist_timeline *tl, struct lane *l, int li, uint32_t name,
    const struct ist_event *ev)
{
	struct flame *f = &l->fl;
	int64_t s = ev->start_ns, e = ev->end_ns, d = e - s, k;
	uint32_t parent;

	if (f->nn == 0) {       /* the root */
		if (ist_room((void **)&f->n, &f->cap, 0, sizeof(*f->n)))
			return -1;
		f->n[0] = (struct fnode){ 0, 0, 0, 0 };
		f->nn = 1;
		f->imp_end = INT64_MIN;
	}
	/* calls arrive by start: those that ended are done */
	while (f->depth > 0 && f->st[f->depth - 1].end <= s)
		f->depth--;
	parent = f->depth ? f->st[f->depth - 1].node : 0;
	if ((k = child(tl, f, li, parent, name)) < 0)
		return -1;
	if ((uint32_t)k != parent) {
		f->n[k].incl += d;
		f->n[k].self += d;
		f->n[parent].self -= d;
	}
	if (parent == 0)
		f->n[0].incl += d;
	if (ist_room((void **)&f->st, &f->capst, f->depth, sizeof(*f->st)))
		return -1;
	f->st[f->depth++] = (struct fopen){ e, (uint32_t)k };
	/* an outermost import: a phase, or the one it follows closely */
	if (s >= f->imp_end && ev->name.n >= 15 && memcmp(ev->name.p +
	    ev->name.n - 15, "._find_and_load", 15) == 0) {
		struct phase *p = tl->nph ? &tl->ph[tl->nph - 1] : NULL;
		f->imp_end = e;
		for (size_t i = tl->nph; i-- > 0 && tl->nph - i < 64;)
			if (tl->ph[i].lane == li) {
				p = &tl->ph[i];
				break;
			}
		if (p && p->lane == li && s - p->e < PHASE_JOIN) {
			p->e = e > p->e ? e : p->e;
		} else if (tl->nph < PHASES_MAX) {
			if (ist_room((void **)&tl->ph, &tl->capph, tl->nph,
			    sizeof(*tl->ph)))
				return -1;
			tl->ph[tl->nph++] = (struct phase){ s, e, (uint8_t)li };
		}
	}
	return 0;
}

int
ist_detail_add(struct ist_timeline *tl, struct lane *l, int li, enum cat c,
    const struct ist_event *ev)
{
	int64_t d = ev->end_ns - ev->start_ns;
	uint32_t name = 0;
	bool gc = false;

	if (tl->dnames == NULL &&
	    (tl->dnames = calloc(1, sizeof(*tl->dnames))) == NULL)
		return -1;
	if (IST_HAS(ev, IST_F_NAME) || ev->type == IST_SYNC) {
		const struct ist_str *n = ev->type == IST_SYNC ? &ev->kind :
		    &ev->name;
		if ((name = ist_strtab_intern(tl->dnames, n->p, n->n,
		    NULL)) == 0)
			return -1;
	}
	if (c == C_PY) {
		gc = ev->name.n > 15 && memcmp(ev->name.p, "gc (generation ",
		    15) == 0;
		if (flame_add(tl, l, li, name, ev))
			return -1;
	}
	if (d < tl->min_dur && !gc) {
		tl->sl_dropped++;
		return 0;
	}
	if (ist_room((void **)&tl->sl, &tl->capsl, tl->nsl, sizeof(*tl->sl)))
		return -1;
	tl->sl[tl->nsl++] = (struct slice){ ev->start_ns - tl->t0, d,
	    IST_HAS(ev, IST_F_CORRELATION) ? ev->correlation : -1, name,
	    (uint8_t)li, (uint8_t)c, gc };
	if (tl->nsl >= SLICES_MAX)
		thin(tl);
	return 0;
}

/* ---- JSON ---- */

static int
by_incl(const void *x, const void *y, void *ctx)
{
	const struct fnode *n = ctx;
	int64_t a = n[*(const uint32_t *)x].incl, b = n[*(const uint32_t *)y].incl;
	return a < b ? 1 : a > b ? -1 : 0;
}

/* Node k and the children that are wide enough (a 2000th of the thread's
 * time): [name, inclusive, self, [children]]; the narrower ones' time in
 * its self time. */
static void
node_json(struct ist_buf *o, const struct flame *f, uint32_t k,
    uint32_t **kids, uint32_t *nkids, int64_t min, int depth)
{
	int64_t self = f->n[k].self;
	uint32_t shown = 0;

	for (uint32_t i = 0; i < nkids[k]; i++)
		if (f->n[kids[k][i]].incl < min || depth > 512)
			self += f->n[kids[k][i]].incl;
	if (k == 0)
		self = 0;
	ist_buf_printf(o, "[%u,%lld,%lld,[", f->n[k].name,
	    (long long)f->n[k].incl, (long long)(self > 0 ? self : 0));
	for (uint32_t i = 0; i < nkids[k]; i++) {
		uint32_t c = kids[k][i];
		if (f->n[c].incl < min || depth > 512)
			continue;
		if (shown++)
			ist_buf_printf(o, ",");
		node_json(o, f, c, kids, nkids, min, depth + 1);
	}
	ist_buf_printf(o, "]]");
}

static int
flame_json(struct ist_buf *o, const struct flame *f)
{
	uint32_t **kids, *nkids, *all;

	if ((kids = calloc(f->nn, sizeof(*kids))) == NULL ||
	    (nkids = calloc(f->nn, sizeof(*nkids))) == NULL ||
	    (all = malloc(f->nn * sizeof(*all))) == NULL) {
		free(kids);
		return -1;
	}
	/* children, grouped by parent, widest first */
	for (uint32_t k = 1; k < f->nn; k++)
		nkids[f->n[k].parent]++;
	for (uint32_t k = 0, at = 0; k < f->nn; at += nkids[k], k++)
		kids[k] = all + at;
	memset(nkids, 0, f->nn * sizeof(*nkids));
	for (uint32_t k = 1; k < f->nn; k++)
		kids[f->n[k].parent][nkids[f->n[k].parent]++] = k;
	for (uint32_t k = 0; k < f->nn; k++)
		qsort_r(kids[k], nkids[k], sizeof(uint32_t), by_incl,
		    f->n);
	node_json(o, f, 0, kids, nkids, f->n[0].incl / 2000 + 1, 0);
	free(all);
	free(nkids);
	free(kids);
	return 0;
}

int
ist_detail_json(const struct ist_timeline *tl, struct lane *const *sorted,
    struct ist_buf *o)
{
	int order[MAXLANES];
	int64_t end = 0;
	bool first = true;

	for (int i = 0; i < tl->nlanes; i++)
		for (int j = 0; j < tl->nlanes; j++)
			if (sorted[j] == tl->lane[i])
				order[i] = j;
	for (size_t i = 0; i < tl->nsl; i++)
		if (tl->sl[i].s + tl->sl[i].d > end)
			end = tl->sl[i].s + tl->sl[i].d;
	if (tl->nsl == 0) {      /* the columns drawn */
		bool used[NCAT];
		end = tl->w * ist_timeline_used(tl, used);
	}
	ist_buf_printf(o, "{\"t0\":%lld,\"w\":%lld,\"cols\":%d,\"end\":%lld,"
	    "\"min_dur\":%lld,\"dropped\":%llu,\"lanes\":[",
	    (long long)tl->t0, (long long)tl->w, COLS, (long long)end,
	    (long long)tl->min_dur, (unsigned long long)tl->sl_dropped);
	for (int j = 0; j < tl->nlanes; j++) {
		const struct lane *l = sorted[j];
		ist_buf_printf(o, "%s{\"name\":", j ? "," : "");
		ist_json_str(o, l->name, strlen(l->name), true);
		ist_buf_printf(o, ",\"gpu\":%s,\"pid\":%lld,\"bins\":[",
		    l->gpu ? "true" : "false", (long long)l->pid);
		/* per column, the time covered per category */
		for (int c = 0; c < NCAT; c++) {
			int last = -1;
			for (int k = 0; k < COLS; k++)
				if (l->cov[c][k])
					last = k;
			ist_buf_printf(o, "%s[", c ? "," : "");
			for (int k = 0; k <= last; k++)
				ist_buf_printf(o, k ? ",%lld" : "%lld",
				    (long long)l->cov[c][k]);
			ist_buf_printf(o, "]");
		}
		ist_buf_printf(o, "],\"flame\":");
		if (l->fl.nn > 1) {
			if (flame_json(o, &l->fl))
				return -1;
		} else {
			ist_buf_printf(o, "null");
		}
		ist_buf_printf(o, "}");
	}
	ist_buf_printf(o, "],\"names\":[\"\"");
	for (uint32_t i = 1; tl->dnames && i <= tl->dnames->n; i++) {
		const struct ist_strent *e = ist_strtab_get(tl->dnames, i);
		ist_buf_printf(o, ",");
		ist_json_str(o, e->p, e->n, true);
	}
	/* lane, category, start, duration, name, correlation, GC */
	ist_buf_printf(o, "],\"slices\":[");
	for (size_t i = 0; i < tl->nsl; i++) {
		const struct slice *x = &tl->sl[i];
		ist_buf_printf(o, "%s%d,%d,%lld,%lld,%u,%lld,%d", first ? "" :
		    ",", order[x->lane], x->cat, (long long)x->s,
		    (long long)x->d, x->name, (long long)x->corr, x->gc);
		first = false;
	}
	ist_buf_printf(o, "],\"imports\":[");
	for (size_t i = 0; i < tl->nph; i++)
		ist_buf_printf(o, "%s%d,%lld,%lld", i ? "," : "",
		    order[tl->ph[i].lane], (long long)(tl->ph[i].s - tl->t0),
		    (long long)(tl->ph[i].e - tl->ph[i].s));
	return ist_buf_printf(o, "],\"merged_calls\":%llu}",
	    (unsigned long long)tl->fmerged) ? -1 : 0;
}

void
ist_detail_free(struct ist_timeline *tl)
{
	for (int i = 0; i < tl->nlanes; i++) {
		free(tl->lane[i]->fl.n);
		free(tl->lane[i]->fl.st);
	}
	free(tl->sl);
	free(tl->ph);
	free(tl->fmap);
	if (tl->dnames) {
		ist_strtab_release(tl->dnames);
		free(tl->dnames);
	}
}
