/* analysis_json.c - the analysis as JSON (formats/analysis.md): every
 * section, the data quality, then the rules and the verdict. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>

#include "analyze_int.h"
#include "steps.h"

/* ---- the JSON ---- */


static json_t *
jreal(double v, int digits)
{
	return json_real(ist_round(v, digits));
}

static int
by_total_sc(const void *x, const void *y, void *ctx)
{
	const struct ist_analyzer *a = ctx;
	const struct sstat *p = x, *q = y;
	if (p->total != q->total)
		return p->total < q->total ? 1 : -1;
	return strcmp(a->nm.str.e[p->name].p, a->nm.str.e[q->name].p);
}

static int
by_self_fn(const void *x, const void *y, void *ctx)
{
	const struct ist_analyzer *a = ctx;
	const struct fstat *p = x, *q = y;
	if (p->self != q->self)
		return p->self < q->self ? 1 : -1;
	return strcmp(a->nm.str.e[p->name].p, a->nm.str.e[q->name].p);
}

static int
by_total_kn(const void *x, const void *y, void *ctx)
{
	const struct ist_analyzer *a = ctx;
	const struct kstat *p = x, *q = y;
	if (p->total != q->total)
		return p->total < q->total ? 1 : -1;
	return strcmp(a->nm.str.e[p->name].p, a->nm.str.e[q->name].p);
}

static int
by_ns_sy(const void *x, const void *y, void *ctx)
{
	const struct ist_analyzer *a = ctx;
	const struct ystat *p = x, *q = y;
	if (p->ns != q->ns)
		return p->ns < q->ns ? 1 : -1;
	if (p->count != q->count)
		return p->count < q->count ? 1 : -1;
	return strcmp(a->nm.str.e[p->site ? p->site - 1 : 0].p,
	    a->nm.str.e[q->site ? q->site - 1 : 0].p);
}

static int
by_ns_idle(const void *x, const void *y, void *ctx)
{
	const struct pend *p = x, *q = y;
	(void)ctx;
	if (p->ns != q->ns)
		return p->ns < q->ns ? 1 : -1;
	return p->key < q->key ? -1 : p->key > q->key;
}

static const char *
thread_name(const struct ist_analyzer *a, const struct thr *t)
{
	return a->nm.str.e[t->name].p;
}

/* Devices in the order of their numbers, then of their UUIDs */
static int
by_devno(const void *x, const void *y, void *ctx)
{
	const struct ist_analyzer *a = ctx;
	const struct dev *p = &a->dev[*(const int *)x];
	const struct dev *q = &a->dev[*(const int *)y];

	if (p->devno != q->devno)
		return p->devno < q->devno ? -1 : 1;
	return strcmp(a->nm.str.e[p->uuid].p, a->nm.str.e[q->uuid].p);
}

/* Which GPU dev i is: its UUID, the processes that named it so, and the
 * label reports give it after "GPU ": its number, and the UUID's start
 * when another GPU has the same number (in another process) */
static void
dev_identity(const struct ist_analyzer *a, int i, json_t *o)
{
	const struct dev *d = &a->dev[i];
	json_t *pids = json_array();
	bool shared = false;
	char label[64];

	for (int k = 0; k < a->nbind; k++)
		if (a->dbind[k].slot == i)
			json_array_append_new(pids, json_integer(
			    a->dbind[k].pid));
	for (int k = 0; k < a->ndev; k++)
		shared |= k != i && (a->dev[k].seen || a->dev[k].info) &&
		    a->dev[k].devno == d->devno;
	if (shared && d->uuid)
		snprintf(label, sizeof(label), "%lld (%.12s)",
		    (long long)d->devno, a->nm.str.e[d->uuid].p);
	else
		snprintf(label, sizeof(label), "%lld", (long long)d->devno);
	json_object_set_new(o, "uuid", d->uuid ?
	    json_string(a->nm.str.e[d->uuid].p) : json_null());
	json_object_set_new(o, "pids", pids);
	json_object_set_new(o, "label", json_string(label));
}

/* Does dev i belong to process pid: one of those that named it by UUID,
 * or any when none did */
static bool
dev_of_pid(const struct ist_analyzer *a, int i, int64_t pid)
{
	bool named = false;

	for (int k = 0; k < a->nbind; k++)
		if (a->dbind[k].slot == i) {
			if (a->dbind[k].pid == pid)
				return true;
			named = true;
		}
	return !named;
}

/* What the thread that launched most work (of dev i's processes) was
 * doing while dev i was idle; null without launches */
static json_t *
idle_attribution(const struct ist_analyzer *a, int i, int64_t idle)
{
	const struct thr *t;
	json_t *top;
	uint32_t thr = 0;
	uint64_t best = 0;
	int n = 0;
	int64_t other = 0;

	for (uint32_t k = 0; k < a->nthr; k++)
		if (a->thr[k].launches > best &&
		    dev_of_pid(a, i, a->thr[k].pid)) {
			best = a->thr[k].launches;
			thr = k + 1;
		}
	if (thr == 0)
		return json_null();
	t = &a->thr[thr - 1];
	top = json_array();
	for (uint32_t k = 0; k < a->nidle; k++) {
		const struct pend *p = &a->idle[k];
		unsigned kind = (unsigned)(p->key >> 32) & 7;
		if ((int)(p->key >> 59) != i ||
		    ((p->key >> 40) & 0x7ffff) != thr - 1)
			continue;
		if (n++ >= 8) {
			other += p->ns;
			continue;
		}
		json_array_append_new(top, json_pack("{s:s,s:s,s:I,s:o}",
		    "kind", kind < 5 ? frame_kind[kind] : kind == 6 ? "none" :
		    "other", "what", kind == 6 ? "(no recorded activity)" :
		    kind == 7 ? "(other activity)" :
		    a->nm.str.e[(uint32_t)p->key].p, "ns", JI(p->ns), "share",
		    jreal(idle ? (double)p->ns / (double)idle : 0, 4)));
	}
	if (other)
		json_array_append_new(top, json_pack("{s:s,s:s,s:I,s:o}",
		    "kind", "other", "what", "(other activity)", "ns",
		    JI(other), "share", jreal(idle ? (double)other /
		    (double)idle : 0, 4)));
	return json_pack("{s:I,s:I,s:s,s:o}", "pid", JI(t->pid), "tid",
	    JI(t->tid), "thread", thread_name(a, t), "top", top);
}

static int
by_busy_stream(const void *x, const void *y)
{
	const struct cstream *p = x, *q = y;
	if (p->busy != q->busy)
		return p->busy < q->busy ? 1 : -1;
	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	return p->id < q->id ? -1 : p->id > q->id;
}

/* What ran at once on a GPU: kernels beside copies, kernels beside each
 * other, streams beside each other */
static json_t *
conc_json(struct conc *c, int64_t active)
{
	json_t *st = json_array();

	an_conc_drain(c);
	qsort(c->st, (size_t)c->nst, sizeof(c->st[0]), by_busy_stream);
	for (int i = 0; i < c->nst; i++)
		json_array_append_new(st, json_pack("{s:o,s:o,s:I,s:I,s:I,s:o,"
		    "s:I}", "pid", c->st[i].others ? json_null() :
		    json_integer(JI(c->st[i].pid)),
		    "stream", c->st[i].others ? json_null() :
		    json_integer(JI(c->st[i].id)), "ops",
		    JI(c->st[i].ops), "kernels", JI(c->st[i].kernels), "busy_ns",
		    JI(c->st[i].busy), "busy_pct", jreal(active ? 100.0 *
		    (double)c->st[i].busy / (double)active : 0, 2),
		    "overlap_ns", JI(c->st[i].overlap)));
	return json_pack("{s:I,s:I,s:I,s:o,s:i,s:I,s:I,s:o}", "kernel_ns",
	    JI(c->kernel_ns), "copy_ns", JI(c->copy_ns),
	    "copy_under_kernels_ns", JI(c->both_ns), "copy_under_kernels_pct",
	    jreal(c->copy_ns ? 100.0 * (double)c->both_ns / (double)c->copy_ns
	    : 0, 2), "max_concurrent_kernels", c->maxk,
	    "concurrent_kernels_ns", JI(c->multi_kernel_ns),
	    "multi_stream_ns", JI(c->multi_stream_ns), "streams", st);
}

static json_t *
devices_json(struct ist_analyzer *a)
{
	json_t *arr = json_array();
	int order[MAXDEV];

	if (a->nidle)
		qsort_r(a->idle, a->nidle, sizeof(*a->idle), by_ns_idle, NULL);
	for (int i = 0; i < a->ndev; i++)
		order[i] = i;
	qsort_r(order, (size_t)a->ndev, sizeof(order[0]), by_devno, a);
	for (int x = 0; x < a->ndev; x++) {
		int i = order[x];
		struct dev *d = &a->dev[i];
		json_t *o, *ut;
		int64_t active, idle;

		if (!d->seen && !d->info)
			continue;
		if (d->seen) {
			d->busy += d->ce - d->cs;
			an_util_add(d, d->cs, d->ce);
		}
		active = d->seen ? d->ce - d->first - d->paused : 0;
		idle = active - d->busy;
		o = json_pack("{s:I,s:s,s:I,s:I,s:o,s:I,s:I}",
		    "device", JI(d->devno), "name", a->nm.str.e[d->name].p,
		    "sm_count", JI(d->sm), "memory_bytes", JI(d->mem),
		    "pcie_gbps", jreal(d->pcie, 3), "ops", JI(d->ops),
		    "kernels", JI(d->kernels));
		json_object_set_new(o, "graph_ops", json_integer(
		    JI(d->graph_ops)));
		dev_identity(a, i, o);
		json_object_set_new(o, "active_start_ns", json_integer(
		    d->seen ? d->first : 0));
		json_object_set_new(o, "active_end_ns", json_integer(
		    d->seen ? d->ce : 0));
		json_object_set_new(o, "active_ns", json_integer(active));
		json_object_set_new(o, "busy_ns", json_integer(d->busy));
		json_object_set_new(o, "idle_ns", json_integer(idle));
		json_object_set_new(o, "busy_pct", jreal(active ? 100.0 *
		    (double)d->busy / (double)active : 0, 2));
		json_object_set_new(o, "idle_pct", jreal(active ? 100.0 *
		    (double)idle / (double)active : 0, 2));
		json_object_set_new(o, "idle_breakdown", json_pack(
		    "{s:I,s:I,s:I}", "host_wait_ns", JI(d->host_wait),
		    "kernel_wait_ns", JI(d->kernel_wait), "other_ns",
		    JI(d->other)));
		json_object_set_new(o, "idle_gaps", an_topk_json(&d->gaps));
		json_object_set_new(o, "idle_attribution",
		    idle_attribution(a, i, idle));
		json_object_set_new(o, "kernel_p50_ns",
		    json_integer(an_dist_pct(&d->kdur, 50)));
		json_object_set_new(o, "kernel_p95_ns",
		    json_integer(an_dist_pct(&d->kdur, 95)));
		json_object_set_new(o, "gaps", json_integer((json_int_t)
		    d->ngaps));
		json_object_set_new(o, "gap_p50_ns",
		    json_integer(an_dist_pct(&d->gapd, 50)));
		json_object_set_new(o, "launch_delay_p50_ns",
		    json_integer(an_dist_pct(&d->ldelay, 50)));
		json_object_set_new(o, "launch_delay_outliers",
		    json_integer(JI(d->ldelay_out)));
		json_object_set_new(o, "memory_peak_bytes",
		    json_integer(d->mem_peak));
		json_object_set_new(o, "concurrency", conc_json(&d->conc,
		    active));
		ut = json_array();
		if (d->seen) {
			int64_t nb = (d->ce - d->ut0 + d->utw - 1) / d->utw;
			for (int64_t b = 0; b < nb && b < NBUCKETS; b++)
				json_array_append_new(ut, jreal((double)
				    d->ub[b] / (double)d->utw, 4));
		}
		json_object_set_new(o, "utilization", json_pack(
		    "{s:I,s:I,s:o}", "start_ns", JI(d->ut0), "bucket_ns",
		    JI(d->utw), "values", ut));
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *
scopes_json(struct ist_analyzer *a)
{
	json_t *arr = json_array();
	if (a->nsc)
		qsort_r(a->sc, a->nsc, sizeof(*a->sc), by_total_sc, a);
	for (uint32_t i = 0; i < a->nsc; i++) {
		struct sstat *s = &a->sc[i];
		uint64_t n = s->d.count;
		json_array_append_new(arr, json_pack(
		    "{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
		    "kind", s->kind == F_SCOPE ? "scope" : "nvtx",
		    "name", a->nm.str.e[s->name].p, "count", JI(n),
		    "total_ns", JI(s->total), "mean_ns", JI(n ? s->total /
		    (int64_t)n : 0), "p50_ns", JI(an_dist_pct(&s->d, 50)),
		    "p95_ns", JI(an_dist_pct(&s->d, 95)), "max_ns", JI(s->max),
		    "gpu_ns", JI(s->gpu_ns), "gpu_ops", JI(s->gpu_ops)));
	}
	return arr;
}

static json_t *
functions_json(struct ist_analyzer *a)
{
	json_t *arr = json_array();
	if (a->nfn)
		qsort_r(a->fn, a->nfn, sizeof(*a->fn), by_self_fn, a);
	for (uint32_t i = 0; i < a->nfn && i < 25; i++) {
		struct fstat *f = &a->fn[i];
		json_t *o = json_pack("{s:s,s:I,s:I,s:I,s:I}", "name",
		    a->nm.str.e[f->name].p, "count", JI(f->count), "self_ns",
		    JI(f->self), "incl_ns", JI(f->incl), "max_ns", JI(f->max));
		if (f->file) {
			json_object_set_new(o, "file",
			    json_string(a->nm.str.e[f->file].p));
			json_object_set_new(o, "line", json_integer(f->line));
		}
		if (a->cpu_samples)
			json_object_set_new(o, "cpu_ns",
			    json_integer((json_int_t)llround(f->cpu)));
		json_array_append_new(arr, o);
	}
	return arr;
}

static int
by_import(const void *x, const void *y, void *ctx)
{
	const struct ist_analyzer *a = ctx;
	const struct fstat *p = *(struct fstat *const *)x;
	const struct fstat *q = *(struct fstat *const *)y;
	if (p->imp_cum != q->imp_cum)
		return p->imp_cum < q->imp_cum ? 1 : -1;
	return strcmp(a->nm.str.e[p->name].p, a->nm.str.e[q->name].p);
}

/* Imports on every thread (the outermost), and the 20 modules whose
 * imports took longest, with -X importtime's self and cumulative. */
static json_t *
imports_json(struct ist_analyzer *a)
{
	json_t *mods = json_array();
	struct fstat **v = malloc((a->nfn ? a->nfn : 1) * sizeof(*v));
	int64_t ns = 0;
	uint64_t count = 0;
	uint32_t n = 0;

	for (uint32_t i = 0; i < a->nthr; i++) {
		ns += a->thr[i].imp_ns;
		count += a->thr[i].imp_n;
	}
	for (uint32_t i = 0; v && i < a->nfn; i++)
		if (a->fn[i].imp_count)
			v[n++] = &a->fn[i];
	if (n)
		qsort_r(v, n, sizeof(*v), by_import, a);
	for (uint32_t i = 0; i < n && i < 20; i++) {
		const char *name = a->nm.str.e[v[i]->name].p;
		json_array_append_new(mods, json_pack(
		    "{s:s%,s:s,s:I,s:I,s:I,s:I}", "module", name,
		    strlen(name) - 9, "file", a->nm.str.e[v[i]->file].p, "count",
		    JI(v[i]->imp_count), "first_hand",
		    JI(v[i]->imp_first_hand), "self_ns", JI(v[i]->imp_self),
		    "cumulative_ns", JI(v[i]->imp_cum)));
	}
	free(v);
	return json_pack("{s:I,s:I,s:o}", "ns", JI(ns), "count", JI(count),
	    "modules", mods);
}

/* Garbage collections, by generation (the Python collector names each
 * "gc (generation N)"). */
static json_t *
gc_json(struct ist_analyzer *a)
{
	json_t *gens = json_array();
	int64_t ns = 0, max = 0, imp_ns = 0;
	uint64_t n = 0, imp_n = 0;

	for (uint32_t i = 0; i < a->nthr; i++) {
		imp_n += a->thr[i].gc_imp_n;
		imp_ns += a->thr[i].gc_imp_ns;
	}

	for (int g = 0; g < 8; g++)
		for (uint32_t i = 0; i < a->nfn; i++) {
			const struct fstat *f = &a->fn[i];
			if (f->role != FN_GC || f->gc_gen != g)
				continue;
			json_array_append_new(gens, json_pack("{s:i,s:I,s:I,s:I}",
			    "generation", g, "count", JI(f->count), "ns",
			    JI(f->incl), "max_ns", JI(f->max)));
			n += f->count;
			ns += f->incl;
			if (f->max > max)
				max = f->max;
		}
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:o}", "collections", JI(n),
	    "ns", JI(ns), "max_ns", JI(max), "in_imports", JI(imp_n),
	    "in_imports_ns", JI(imp_ns), "generations", gens);
}

static json_t *
kernels_json(struct ist_analyzer *a)
{
	json_t *arr = json_array();
	if (a->nkn)
		qsort_r(a->kn, a->nkn, sizeof(*a->kn), by_total_kn, a);
	for (uint32_t i = 0; i < a->nkn && i < 25; i++) {
		struct kstat *k = &a->kn[i];
		const struct fstat *f = k->from ? &a->fn[k->from - 1] : NULL;
		json_array_append_new(arr, json_pack(
		    "{s:s,s:I,s:I,s:I,s:I,s:o}", "name", a->nm.str.e[k->name].p,
		    "count", JI(k->count), "total_ns", JI(k->total),
		    "mean_ns", JI(k->total / (int64_t)k->count), "max_ns",
		    JI(k->max), "launched_from", f ? json_pack(
		    "{s:s,s:s,s:I,s:I,s:o}", "function", a->nm.str.e[f->name].p,
		    "file", a->nm.str.e[f->file].p, "line", JI(f->line), "gpu_ns",
		    JI(k->from_ns), "share", jreal(k->total ? (double)k->from_ns /
		    (double)k->total : 0, 4)) : json_null()));
	}
	return arr;
}

static json_t *
copies_json(struct ist_analyzer *a)
{
	static const char *const dir[] = { "h2d", "d2h", "d2d", "memset" };
	json_t *arr = json_array();
	for (int i = 0; i < 4; i++) {
		struct xstat *s = &a->xs[i];
		if (s->count == 0 && s->sync_calls == 0)
			continue;
		json_array_append_new(arr, json_pack(
		    "{s:s,s:I,s:I,s:I,s:o,s:I,s:I,s:I,s:o}", "direction",
		    dir[i], "count", JI(s->count), "bytes", JI(s->bytes),
		    "ns", JI(s->ns), "gbps", jreal(s->ns ? (double)s->bytes /
		    (double)s->ns : 0, 3), "pageable_count",
		    JI(s->pageable_count), "pageable_bytes",
		    JI(s->pageable_bytes), "sync_calls", JI(s->sync_calls),
		    "longest", an_topk_json(&s->longest)));
	}
	return arr;
}

static json_t *
syncs_json(struct ist_analyzer *a)
{
	json_t *arr = json_array();
	if (a->nsy)
		qsort_r(a->sy, a->nsy, sizeof(*a->sy), by_ns_sy, a);
	for (uint32_t i = 0; i < a->nsy; i++) {
		struct ystat *s = &a->sy[i];
		json_t *sites;
		int n = 0;
		if (s->site)
			continue;
		sites = json_array();
		for (uint32_t j = 0; j < a->nsy && n < 5; j++)
			if (a->sy[j].site && a->sy[j].kind == s->kind) {
				n++;
				json_array_append_new(sites, json_pack(
				    "{s:s,s:I,s:I}", "where",
				    a->nm.str.e[a->sy[j].site - 1].p, "count",
				    JI(a->sy[j].count), "blocked_ns",
				    JI(a->sy[j].ns)));
			}
		json_array_append_new(arr, json_pack(
		    "{s:s,s:I,s:I,s:o,s:o}", "kind", a->nm.str.e[s->kind].p,
		    "count", JI(s->count), "blocked_ns", JI(s->ns), "sites",
		    sites, "longest", an_topk_json(&s->longest)));
	}
	return arr;
}

/* A thread's share of one core: CPU time over the window between the two
 * samples that measured it, at most 1 (the counters are read a little
 * after their timestamps, which can tip a short window over). */
static double
util_of(int64_t cpu, int64_t win)
{
	double u = win > 0 ? (double)cpu / (double)win : 0;

	return u > 1 ? 1 : u < 0 ? 0 : u;
}

/*
 * A launcher's helpers: processes with nothing recorded but their samples
 * (a pyenv shim's bash and readlink, a wrapper script) fold into the
 * program they started: an ancestor of a recorded process, or a child of
 * one (or of a helper folded into one) that ended before its first
 * recorded range.  Children the program started later stay rows, but
 * for a copy of it seen only before its exec (copy_of).
 */
/* The index + 1 of process p's parent; 0 when it is not in the trace. */
static uint32_t
parent_of(struct ist_analyzer *a, const struct proc *p)
{
	bool found;
	uint32_t *v;

	if (!p->have_ppid)
		return 0;
	v = an_u64map_slot(&a->procmap, (uint64_t)p->ppid, &found);
	return v && found ? *v : 0;
}

/* Whether process pid wrote a stream of its own (a collector's). */
static bool
streamed(struct ist_analyzer *a, int64_t pid)
{
	bool found;

	return an_u64map_slot(&a->streamed, (uint64_t)pid, &found) &&
	    found;
}

/*
 * Whether p, with no stream of its own, is a copy of its parent q, which
 * has one: the same name and command line (or none read, in the middle
 * of its exec), as the sampler saw it between its fork and its exec (a
 * subprocess that ran a program, exec'd and ended between two ticks).
 * A fork of a recorded Python that went on in Python writes a stream of
 * its own.
 */
static bool
copy_of(struct ist_analyzer *a, const struct proc *p, const struct proc *q)
{
	return !streamed(a, p->pid) && streamed(a, q->pid) &&
	    p->name == q->name && (p->cmdline.n == 0 ||
	    (p->cmdline.n == q->cmdline.n &&
	    memcmp(p->cmdline.p, q->cmdline.p, p->cmdline.n) == 0));
}

static void
fold_helpers(struct ist_analyzer *a)
{
	int64_t *first;
	bool *rec, changed = true;

	rec = calloc(a->nproc ? a->nproc : 1, sizeof(*rec));
	first = calloc(a->nproc ? a->nproc : 1, sizeof(*first));
	if (rec == NULL || first == NULL)
		goto out;
	for (uint32_t i = 0; i < a->nthr; i++) {
		const struct thr *t = &a->thr[i];
		bool found;
		uint32_t *v;
		if (!t->own)
			continue;
		v = an_u64map_slot(&a->procmap, (uint64_t)t->pid, &found);
		if (v == NULL || !found)
			continue;
		if (!rec[*v - 1] || t->own_first < first[*v - 1])
			first[*v - 1] = t->own_first;
		rec[*v - 1] = true;
	}
	for (uint32_t j = 0; j < a->nproc; j++) {
		uint32_t k = j + 1;
		if (!rec[j])
			continue;
		/* its ancestors with nothing recorded */
		for (int n = 0; n < 64 && (k = parent_of(a, &a->proc[k - 1])) &&
		    !rec[k - 1]; n++)
			if (a->proc[k - 1].fold == 0 && a->proc[k - 1].pid)
				a->proc[k - 1].fold = (int)j + 1;
	}
	while (changed) {
		changed = false;
		for (uint32_t i = 0; i < a->nproc; i++) {
			struct proc *p = &a->proc[i];
			uint32_t k = parent_of(a, p);
			int to;
			if (rec[i] || p->fold || p->pid == 0 || k == 0)
				continue;
			if (copy_of(a, p, &a->proc[k - 1])) {
				/* its memory was its parent's: no row */
				p->fold = a->proc[k - 1].fold ?
				    a->proc[k - 1].fold : (int)k;
				changed = true;
				continue;
			}
			to = rec[k - 1] ? (int)k : a->proc[k - 1].fold;
			if (to && p->last_sample <= first[to - 1]) {
				p->fold = to;
				changed = true;
			}
		}
	}
out:
	free(rec);
	free(first);
}

/*
 * The CPU of each process's waited-for children that no sample of theirs
 * shows (proc.unseen): what its children's count (cutime and cstime) rose
 * by, less each child's own as sampled (its threads' CPU at their last
 * sample, and its own children's count then) for the children sampled
 * last before it was (ended, and waited for: one still running at the
 * end is in no count of its parent's).  A child shorter than the
 * sampler's tick has no sample; one sampled has its last moments after
 * its last.  In the kernel's ticks (10 ms), the readings a tick apart.
 */
static void
children_cpu(struct ist_analyzer *a)
{
	int64_t *seen = calloc(a->nproc ? a->nproc : 1, sizeof(*seen));

	if (seen == NULL)
		return;
	for (uint32_t i = 0; i < a->nthr; i++) {
		bool found;
		uint32_t *v = an_u64map_slot(&a->procmap,
		    (uint64_t)a->thr[i].pid, &found);
		if (v && found && a->thr[i].have_cpu)
			seen[*v - 1] += a->thr[i].cpu1;
	}
	for (uint32_t i = 0; i < a->nproc; i++) {
		const struct proc *c = &a->proc[i];
		uint32_t k = parent_of(a, c);
		if (k && c->last_sample < a->proc[k - 1].last_sample)
			a->proc[k - 1].unseen -= seen[i] + (c->have_ccpu ?
			    c->ccpu1 : 0);
	}
	for (uint32_t i = 0; i < a->nproc; i++) {
		struct proc *p = &a->proc[i];
		p->unseen = p->have_ccpu ? p->unseen + p->ccpu1 - p->ccpu0 : 0;
		if (p->unseen < 0)
			p->unseen = 0;
	}
	/* a process folded into another (a launcher's helper) is its */
	for (uint32_t i = 0; i < a->nproc; i++)
		if (a->proc[i].fold) {
			a->proc[a->proc[i].fold - 1].unseen +=
			    a->proc[i].unseen;
			a->proc[i].unseen = 0;
		}
	free(seen);
}

static json_t *
threads_json(struct ist_analyzer *a)
{
	json_t *arr = json_array();
	for (uint32_t i = 0; i < a->nthr; i++) {
		struct thr *t = &a->thr[i];
		const struct proc *p = NULL;
		bool found;
		uint32_t *v = an_u64map_slot(&a->procmap, (uint64_t)t->pid,
		    &found);
		int64_t end, win, cpu, wait;
		const char *name;
		json_t *o;
		if (v && found)
			p = &a->proc[*v - 1];
		if (!t->have_cpu && !t->have_py)
			continue;
		if (p && p->fold) {      /* a helper's: its program's */
			a->proc[p->fold - 1].helper_cpu += t->cpu1;
			continue;
		}
		/* the thread's own life as sampled: the sampler reads every
		 * thread at every tick, so a thread whose samples stop before
		 * its process's had ended (a pool's worker): its utilisation
		 * is over its life, not diluted by the process's rest */
		end = t->cpu1_ts;
		win = end - t->cpu0_ts;
		cpu = t->cpu1 - t->cpu0;
		wait = t->wait1 - t->wait0;
		name = thread_name(a, t);
		if (ist_recorder_thread(name, strlen(name))) {
			/* the collectors' threads: overhead, not the app */
			a->profiler_cpu += cpu;
			continue;
		}
		o = json_pack("{s:I,s:I,s:s,s:I,s:I,s:o,s:I,s:o,s:I}",
		    "pid", JI(t->pid), "tid", JI(t->tid), "name",
		    name, "cpu_ns", JI(cpu), "window_ns",
		    JI(win), "cpu_util", jreal(util_of(cpu, win), 4),
		    "wait_ns", JI(wait), "wait_share",
		    jreal(cpu + wait > 0 ? (double)wait / (double)(cpu +
		    wait) : 0, 4), "ctx_involuntary", JI(t->inv1 - t->inv0));
		if (t->have_py) {
			/* CPU over the samples' own window, which the Python
			 * window bounds: not CPU to the last sample (after
			 * the interpreter's teardown) over the Python window */
			int64_t pw = t->cpu_py_end_ts - t->cpu_at_py_ts;
			int64_t pc = t->cpu_py_end - t->cpu_at_py;
			int64_t pq = t->wait_py_end - t->wait_at_py;
			if (pw <= 0) {      /* no two samples inside: all */
				pw = win;
				pc = cpu;
				pq = wait;
			}
			json_t *py = json_pack("{s:I,s:I,s:I,s:I,s:o,s:I,s:I}",
			    "first_ns", JI(t->py_first), "last_ns",
			    JI(t->py_last), "self_ns", JI(t->py_self),
			    "cpu_ns", JI(pc), "cpu_util", jreal(t->have_cpu ?
			    util_of(pc, pw) : 0, 4),
			    "imports", JI(t->imp_n), "import_ns",
			    JI(t->imp_ns));
			json_object_set_new(py, "wait_ns", json_integer(
			    t->have_wait ? pq : 0));
			json_object_set_new(py, "wait_util", jreal(t->have_wait ?
			    util_of(pq, pw) : 0, 4));
			if (t->imp_n) {
				json_object_set_new(py, "import_first_ns",
				    json_integer(t->imp_first));
				json_object_set_new(py, "import_last_ns",
				    json_integer(t->imp_last));
			}
			json_object_set_new(py, "gc_collections",
			    json_integer(JI(t->gc_n)));
			json_object_set_new(py, "gc_ns", json_integer(t->gc_ns));
			json_object_set_new(py, "gc_max_ns",
			    json_integer(t->gc_max));
			json_object_set_new(py, "gc_in_imports",
			    json_integer(JI(t->gc_imp_n)));
			json_object_set_new(py, "gc_in_imports_ns",
			    json_integer(t->gc_imp_ns));
			if (t->gc_n) {
				json_object_set_new(py, "gc_max_scope",
				    t->gc_scope ? json_string(a->nm.str.e[
				    t->gc_scope - 1].p) : json_null());
				json_object_set_new(py, "gc_longest",
				    an_topk_json(&t->gc_long));
			}
			json_object_set_new(o, "python", py);
		}
		json_object_set_new(o, "launches", json_integer(
		    JI(t->launches)));
		json_array_append_new(arr, o);
	}
	return arr;
}

/* The helpers folded into process i: how many, their CPU, their names;
 * NULL when none. */
static json_t *
helpers_json(struct ist_analyzer *a, uint32_t i)
{
	json_t *names = NULL;
	uint64_t n = 0;

	for (uint32_t j = 0; j < a->nproc; j++) {
		const char *nm = a->nm.str.e[a->proc[j].name].p;
		bool seen = false;
		size_t k;
		json_t *x;
		if (a->proc[j].fold != (int)i + 1)
			continue;
		n++;
		if (names == NULL)
			names = json_array();
		json_array_foreach(names, k, x)
			seen |= strcmp(json_string_value(x), nm) == 0;
		if (!seen)
			json_array_append_new(names, json_string(nm));
	}
	if (n == 0)
		return NULL;
	return json_pack("{s:I,s:I,s:o}", "processes", JI(n), "cpu_ns",
	    JI(a->proc[i].helper_cpu), "names", names);
}

static json_t *
processes_json(struct ist_analyzer *a, json_t **command)
{
	json_t *arr = json_array();
	for (uint32_t i = 0; i < a->nproc; i++) {
		struct proc *p = &a->proc[i];
		json_t *o, *h;
		if (p->pid == 0 || p->fold)
			continue;
		if (*command == NULL && p->cmdline.p) {
			struct ist_buf b = { 0 };
			struct ist_error e;
			struct ist_blob bl = { p->cmdline.p, p->cmdline.n };
			if (ist_cbor_to_json(bl, &b, &e) == IST_OK)
				*command = json_loadb(b.p, b.n, 0, NULL);
			ist_buf_release(&b);
		}
		o = json_pack("{s:I,s:s}", "pid", JI(p->pid), "name",
		    a->nm.str.e[p->name].p);
		/* the last sample before teardown: at or before the end of
		 * its last call from Python, for a Python process */
		bool pre = p->rss_pre_ts > 0;
		int64_t last = pre ? p->rss_pre : p->rss1;
		int64_t last_ts = pre ? p->rss_pre_ts : p->rss1_ts;
		if (p->have_rss) {
			json_object_set_new(o, "rss_first_bytes",
			    json_integer(p->rss0));
			json_object_set_new(o, "rss_peak_bytes",
			    json_integer(p->rss_peak));
			json_object_set_new(o, "rss_last_bytes",
			    json_integer(last));
			json_object_set_new(o, "rss_first_ns",
			    json_integer(p->rss0_ts));
			json_object_set_new(o, "rss_peak_ns",
			    json_integer(p->rss_peak_ts));
			json_object_set_new(o, "rss_last_ns",
			    json_integer(last_ts));
			json_object_set_new(o, "rss_final_bytes",
			    json_integer(p->rss1));
			json_object_set_new(o, "rss_final_ns",
			    json_integer(p->rss1_ts));
			json_object_set_new(o, "recorder_peak_bytes",
			    json_integer(p->rec_peak));
		}
		/* its life: to the end of its last call from Python, or
		 * without one to its last sample of any kind (its threads' CPU time
		 * is written at every one), as RSS is written when it changes
		 * and may stay put long before the end */
		int64_t end = pre ? p->call_end : p->last_sample;
		int64_t life = (end > last_ts ? end : last_ts) - p->rss0_ts;
		int64_t ta = p->rss0_ts + life / 4;
		int64_t tb = p->rss0_ts + life / 10 * 9;
		/* start-up: the imports that began in the first half of it
		 * (import torch grows a process by 200 MiB over seconds) */
		for (uint32_t k = 0; k < p->nimps &&
		    p->imps[k].s < p->rss0_ts + life / 2; k++)
			if (p->imps[k].e > ta)
				ta = p->imps[k].e;
		if (p->nr && ta < tb) {
			/* steady-state growth: from a quarter of the sampled
			 * life before teardown, or the end of start-up if
			 * later, to nine tenths of it */
			int64_t tm = ta + (tb - ta) / 2;
			int64_t va = p->rv[0], vb = p->rv[0], vm = p->rv[0];
			for (uint32_t k = 0; k < p->nr; k++) {
				if (p->rts[k] <= ta)
					va = p->rv[k];
				if (p->rts[k] <= tm)
					vm = p->rv[k];
				if (p->rts[k] <= tb)
					vb = p->rv[k];
			}
			json_object_set_new(o, "rss_steady_mid_bytes",
			    json_integer(vm));
			json_object_set_new(o, "rss_steady_from_bytes",
			    json_integer(va));
			json_object_set_new(o, "rss_steady_to_bytes",
			    json_integer(vb));
			json_object_set_new(o, "rss_steady_from_ns",
			    json_integer(ta));
			json_object_set_new(o, "rss_steady_to_ns",
			    json_integer(tb));
		}
		json_object_set_new(o, "major_faults",
		    json_integer(p->flt1 - p->flt0));
		if (p->have_ccpu) {
			json_object_set_new(o, "children_cpu_ns",
			    json_integer(p->ccpu1 - p->ccpu0));
			json_object_set_new(o, "children_unseen_cpu_ns",
			    json_integer(p->unseen));
		}
		json_object_set_new(o, "threads_peak",
		    json_integer(p->threads_peak));
		if ((h = helpers_json(a, i)) != NULL)
			json_object_set_new(o, "helpers", h);
		json_array_append_new(arr, o);
	}
	return arr;
}


/* "SIGSEGV" for 11, or "" for a number with no name */
static const char *
signal_name(int64_t v, char *b, size_t n)
{
	const char *s = v > 0 && v < 65 ? sigabbrev_np((int)v) : NULL;

	snprintf(b, n, "%s%s", s ? "SIG" : "", s ? s : "");
	return b;
}

/* How the commands is-record started ended: [{pid, code} or {pid, signal,
 * signal_name}], by pid */
static json_t *
exits_json(const struct ist_analyzer *a)
{
	json_t *arr = json_array();
	int64_t last = INT64_MIN;
	char b[16];

	/* a few at most: the least pid above the last, each time */
	for (;;) {
		const struct proc *p = NULL;
		for (uint32_t i = 0; i < a->nproc; i++)
			if (a->proc[i].exit_kind && a->proc[i].pid > last &&
			    (p == NULL || a->proc[i].pid < p->pid))
				p = &a->proc[i];
		if (p == NULL)
			return arr;
		last = p->pid;
		json_array_append_new(arr, p->exit_kind == 1 ?
		    json_pack("{s:I,s:I}", "pid", JI(p->pid), "code",
		    JI(p->exit_v)) : json_pack("{s:I,s:I,s:s}", "pid",
		    JI(p->pid), "signal", JI(p->exit_v), "signal_name",
		    signal_name(p->exit_v, b, sizeof(b))));
	}
}

/* run: the span analysed (the trace, or --from/--to within it), less the
 * capture's pauses */
static json_t *
run_json(const struct ist_analyzer *a, json_t *command)
{
	int64_t s0 = a->have_t ? a->t0 : 0, s1 = a->have_t ? a->t1 : 0, p;
	json_t *run;

	if (a->have_t && a->windowed) {
		s0 = a->win[0] > s0 ? a->win[0] : s0;
		s1 = a->win[1] < s1 ? a->win[1] : s1;
		s1 = s1 < s0 ? s0 : s1;
	}
	p = an_paused(a, s0, s1);
	run = json_pack("{s:s,s:o,s:O,s:I,s:I,s:I,s:I,s:I}",
	    "host", a->nm.str.e[a->host].p, "command", command ? command :
	    json_null(), "producers", a->producers, "segments",
	    JI(a->segments), "start_ns", JI(s0), "end_ns", JI(s1), "wall_ns",
	    JI(s1 - s0 - p), "events", JI(a->events));
	json_object_set_new(run, "window", json_pack(
	    "{s:b,s:I,s:I,s:I,s:I,s:I,s:I}", "windowed", a->windowed,
	    "trace_start_ns", JI(a->have_t ? a->t0 : 0), "trace_end_ns",
	    JI(a->have_t ? a->t1 : 0), "paused_ns", JI(p), "pauses",
	    JI(a->npz + a->cap_off), "capture_records", JI(a->captures),
	    "left_out_events", JI(a->left_out)));
	json_object_set(json_object_get(run, "window"), "steps", a->win_how ?
	    a->win_how : json_null());
	json_object_set_new(run, "exits", exits_json(a));
	return run;
}

json_t *
an_step_json(const struct ist_steps *s, uint64_t count, uint64_t measured)
{
	const char *name, *file = ist_steps_file(s);
	int64_t pid, tid, line;
	enum ist_type type;
	size_t n;
	json_t *j;
	int loop;

	ist_steps_get(s, &n, &name, &type);
	ist_steps_chosen(s, &pid, &tid, &type, &line, &loop);
	j = json_pack("{s:s,s:s,s:I,s:I}", "name", name, "record",
	    ist_type_name(type), "pid", (json_int_t)pid, "tid",
	    (json_int_t)tid);
	if (j && file) {
		json_object_set_new(j, "file", json_string(file));
		json_object_set_new(j, "line", json_integer(line));
	}
	if (j) {
		json_object_set_new(j, "iteration", json_boolean(loop !=
		    IST_LOOP_NONE));
		json_object_set_new(j, "count", json_integer((json_int_t)count));
		json_object_set_new(j, "measured",
		    json_integer((json_int_t)measured));
		if (ist_steps_overlapped(s))
			json_object_set_new(j, "overlapped", json_integer(
			    (json_int_t)ist_steps_overlapped(s)));
	}
	return j;
}

/* The step found, when the trace could not be read again to measure it */
static json_t *
steps_found_json(struct ist_analyzer *a)
{
	if (ist_steps_choose(a->steps) == NULL)
		return json_null();
	return an_step_json(a->steps, ist_steps_found(a->steps), 0);
}

/* A data-quality note, and what it costs the confidence (a factor). */
static void __attribute__((format(printf, 4, 5)))
dq_note(json_t *notes, double *factor, double cost, const char *fmt, ...)
{
	char m[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	json_array_append_new(notes, json_string(m));
	*factor *= cost;
}

/* Sets key k of o to v (taken); false when v or the setting failed, for
 * lack of memory. */
static bool
put(json_t *o, const char *k, json_t *v)
{
	return v != NULL && json_object_set_new(o, k, v) == 0;
}

enum ist_status
ist_analyzer_finish(struct ist_analyzer *a, const struct ist_reader_stats *st,
    json_t **out, struct ist_error *err)
{
	json_t *an, *run, *dq, *notes, *command = NULL, *procs, *threads, *d,
	    *kernels;
	bool ok;
	double lost_share, factor = 1, rec_cores, wall;
	size_t k;

	*out = NULL;
	for (uint32_t i = 0; i < a->nthr; i++) {
		if (a->thr[i].launches && an_advance(a, &a->thr[i], a->t1)) {
			ist_seterr(err, IST_ENOMEM, "out of memory");
			return IST_ENOMEM;
		}
		/* imports still on a stack ended by the trace's end */
		for (uint32_t j = 0; j < a->thr[i].n; j++)
			an_import_done(a, &a->thr[i].st[j]);
	}
	fold_helpers(a);
	children_cpu(a);
	threads = threads_json(a);      /* first: the helpers' CPU */
	kernels = kernels_json(a);      /* before the functions are sorted */
	procs = processes_json(a, &command);
	run = run_json(a, command);
	notes = json_array();
	lost_share = a->lost ? (double)a->lost / (double)(a->lost +
	    a->events) : 0;
	if (a->lost)
		dq_note(notes, &factor, 1 - (lost_share * 5 > 0.5 ? 0.5 :
		    lost_share * 5), "%llu events (%.2f%%) were lost while "
		    "recording", (unsigned long long)a->lost,
		    100 * lost_share);
	if (st && st->truncated_bytes)
		dq_note(notes, &factor, 0.9, "the trace is truncated: its last "
		    "%llu bytes, a frame cut short, were not read whole",
		    (unsigned long long)st->truncated_bytes);
	if (*a->read_error)
		dq_note(notes, &factor, 0.7, "the trace could not be read to "
		    "its end (%.300s): what came before is analysed",
		    a->read_error);
	json_array_foreach(a->damaged, k, d) {
		if (*ist_jstr(d, "error"))
			dq_note(notes, &factor, 0.7, "is-merge could not read "
			    "input '%.160s' whole: %.200s", ist_jstr(d,
			    "input"), ist_jstr(d, "error"));
		else
			dq_note(notes, &factor, 0.9, "input '%.160s' of "
			    "is-merge was truncated: its last %lld bytes were "
			    "not read whole", ist_jstr(d, "input"),
			    (long long)ist_jint(d, "truncated_bytes"));
	}
	json_array_foreach(json_object_get(run, "exits"), k, d) {
		bool sig = json_is_integer(json_object_get(d, "signal"));
		char how[64];
		if (ist_exit_clean(d))
			continue;
		dq_note(notes, &factor, ist_exit_stopped(d) ? 1 : 0.8,
		    "the program (pid %lld) %s%s", ist_jint(d, "pid"),
		    ist_exit_clause(d, how, sizeof(how)),
		    ist_exit_stopped(d) ?
		    "" : sig ? ": what it did before is analysed" :
		    ": it may have failed before its steady state");
	}
	if (a->out_of_order)
		dq_note(notes, &factor, 0.7, "%llu records were out of time "
		    "order and left out: run is-merge before is-analyze",
		    (unsigned long long)a->out_of_order);
	if (a->bad_times)
		dq_note(notes, &factor, 0.9, "%llu records with impossible "
		    "times (beyond 73 years) were left out",
		    (unsigned long long)a->bad_times);
	if (a->unaligned)
		dq_note(notes, &factor, 0.8, "%lld source(s) could not be "
		    "aligned exactly: times are uncertain by up to %.3f ms",
		    (long long)a->unaligned, (double)a->clock_unc / 1e6);
	/* InferScope's own threads' CPU in cores over the run: from a
	 * quarter of one, the program shared its cores with them (two
	 * workers whose every call a writer encodes: 0.66 of 2) */
	wall = ist_jnum(run, "wall_ns");
	rec_cores = wall > 0 ? (double)a->profiler_cpu / wall : 0;
	if (rec_cores >= 0.25) {
		char of[32] = "";
		if (a->cores > 0)
			snprintf(of, sizeof(of), " (of %lld)",
			    (long long)a->cores);
		dq_note(notes, &factor, 1, "InferScope's own recording threads "
		    "used %.2f cores on average over the run%s: the program "
		    "shared the cores with them, and its threads' CPU and "
		    "run-queue figures are as it ran recorded", rec_cores, of);
	}
	dq = json_pack("{s:I,s:I,s:o,s:I,s:b,s:I,s:I,s:I,s:o,s:o}",
	    "events", JI(a->events), "lost_events", JI(a->lost),
	    "lost_share", jreal(lost_share, 6), "truncated_bytes",
	    JI((st ? st->truncated_bytes : 0) + (uint64_t)a->damaged_bytes),
	    "merged", a->merged,
	    "out_of_order", JI(a->out_of_order), "clock_uncertainty_ns",
	    JI(a->clock_unc), "unaligned_sources", JI(a->unaligned),
	    "confidence_factor", jreal(factor, 3), "notes", notes);
	ok = put(dq, "profiler_cpu_ns", json_integer(a->profiler_cpu));
	ok &= put(dq, "profiler_cores", jreal(rec_cores, 2));
	ok &= put(dq, "damaged_inputs", json_incref(a->damaged));
	ok &= put(dq, "read_error", *a->read_error ?
	    json_string(a->read_error) : json_null());
	ok &= (an = json_pack("{s:i,s:s,s:o,s:o}", "analysis_version",
	    IST_ANALYSIS_VERSION, "producer", "is-analyze " IST_PACKAGE_VERSION,
	    "run", run, "data_quality", dq)) != NULL;
	ok &= put(an, "system", json_pack(
	    "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "cpu_cores",
	    JI(a->cores), "memory_bytes", JI(a->memory), "runnable_samples",
	    JI(a->run_samples), "oversubscribed_samples", JI(a->oversub),
	    "program_runnable_samples", JI(a->prog_samples),
	    "program_oversubscribed_samples", JI(a->prog_oversub),
	    "recorder_runnable_samples", JI(a->rec_samples),
	    "recorder_oversubscribed_samples", JI(a->rec_oversub),
	    "cpu_utilization_mean", jreal(a->util_n ? a->util_sum /
	    (double)a->util_n : 0, 4)));
	ok &= put(an, "devices", devices_json(a));
	ok &= put(an, "launches", json_pack(
	    "{s:I,s:I,s:I,s:I}", "count", JI(a->launches), "p50_ns",
	    JI(an_dist_pct(&a->launch_d, 50)), "max_ns", JI(a->launch_max),
	    "slow_count", JI(a->slow_launches)));
	ok &= put(an, "scopes", scopes_json(a));
	ok &= put(an, "imports", imports_json(a));
	ok &= put(an, "gc", gc_json(a));
	ok &= put(an, "functions", functions_json(a));
	ok &= put(an, "functions_distinct", json_integer(a->nfn));
	ok &= put(an, "kernels", kernels);
	ok &= put(an, "kernels_distinct", json_integer(a->nkn));
	ok &= put(an, "copies", copies_json(a));
	ok &= put(an, "syncs", syncs_json(a));
	ok &= put(an, "threads", threads);
	ok &= put(an, "processes", procs);
	ok &= put(an, "instants", json_integer(JI(a->instants)));
	ok &= put(an, "steps", a->sw ? an_stepwork_json(a->sw, a->steps) :
	    steps_found_json(a));
	if (!ok || ist_rules_run(a->rules, an) == NULL) {
		json_decref(an);
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	*out = an;
	return IST_OK;
}
