/*
 * analyze.c - one streaming pass over a merged trace (records in start-time
 * order) computing the metrics of formats/analysis.md; the rules and the
 * verdict follow in ist_analyzer_finish().
 *
 * Per thread, a stack of the open ranges (Python calls, scopes, NVTX ranges,
 * CUDA calls, syncs) is kept by sweeping time forward: a range is pushed
 * when it starts and popped when the sweep passes its end.  Per device, the
 * union of GPU work (kernels, copies, memsets) is kept as its latest merged
 * interval; a gap opens when the sweep passes that interval's end and closes
 * when the next GPU operation starts.  While a gap is open, the time of the
 * launching threads is credited to what is on top of their stacks, which is
 * how idle GPU time gets attributed to host activity.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>

#include "analyze.h"
#include "internal.h"
#include "rules/rules.h"

#define MAXDEV 16
#define NBUCKETS 480
#define EXACT_MAX 4096
#define TOPK 5
#define PENDING_MAX 64
#define CORR_SLOTS (1u << 18)
#define RSS_MAX 512

/* ---- string interning ---- */

struct strtab {
	char **s;
	uint32_t *len;
	uint32_t n, cap;
	uint32_t *slot;          /* id + 1, 0 empty */
	uint32_t mask;
};

static int
strtab_grow(struct strtab *t)
{
	uint32_t ncap = t->mask ? (t->mask + 1) * 2 : 1024;
	uint32_t *ns = calloc(ncap, sizeof(*ns));
	if (ns == NULL)
		return -1;
	for (uint32_t i = 0; i < t->n; i++) {
		uint64_t h = ist_hash_bytes(t->s[i], t->len[i]);
		uint32_t j = (uint32_t)h & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = i + 1;
	}
	free(t->slot);
	t->slot = ns;
	t->mask = ncap - 1;
	return 0;
}

/* The id of (p, n), interned; -1 on ENOMEM.  Id 0 is always "". */
static int64_t
intern(struct strtab *t, const char *p, size_t n)
{
	uint64_t h;
	uint32_t j;

	if ((t->n + 1) * 2 > t->mask + 1 && strtab_grow(t))
		return -1;
	h = ist_hash_bytes(p, n);
	for (j = (uint32_t)h & t->mask; t->slot[j]; j = (j + 1) & t->mask) {
		uint32_t id = t->slot[j] - 1;
		if (t->len[id] == n && memcmp(t->s[id], p, n) == 0)
			return id;
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 1024;
		char **ns = realloc(t->s, cap * sizeof(*ns));
		uint32_t *nl;
		if (ns == NULL)
			return -1;
		t->s = ns;
		if ((nl = realloc(t->len, cap * sizeof(*nl))) == NULL)
			return -1;
		t->len = nl;
		t->cap = cap;
	}
	if ((t->s[t->n] = malloc(n + 1)) == NULL)
		return -1;
	memcpy(t->s[t->n], p, n);
	t->s[t->n][n] = '\0';
	t->len[t->n] = (uint32_t)n;
	t->slot[j] = t->n + 1;
	return t->n++;
}

static void
strtab_release(struct strtab *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->len);
	free(t->slot);
}

/* ---- a map from 64-bit keys to indices ---- */

struct u64map {
	uint64_t *key;
	uint32_t *val;           /* index + 1, 0 empty */
	uint32_t mask, n;
};

static uint64_t
mix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	return k ^ (k >> 33);
}

/* The slot for key: *found says whether it holds key. */
static uint32_t *
u64map_slot(struct u64map *m, uint64_t key, bool *found)
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
			j = (uint32_t)mix64(m->key[i]) & (ncap - 1);
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
	for (uint32_t j = (uint32_t)mix64(key) & m->mask;;
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

static void
u64map_release(struct u64map *m)
{
	free(m->key);
	free(m->val);
}

/* Grows a (ptr, n, cap) array by one zeroed element; NULL on ENOMEM. */
static void *
push(void **p, uint32_t *n, uint32_t *cap, size_t size)
{
	if (*n == *cap) {
		uint32_t c = *cap ? *cap * 2 : 16;
		void *np = realloc(*p, (size_t)c * size);
		if (np == NULL)
			return NULL;
		*p = np;
		*cap = c;
	}
	memset((char *)*p + (size_t)*n * size, 0, size);
	return (char *)*p + (size_t)(*n)++ * size;
}

/* ---- distributions: exact up to EXACT_MAX values, then log buckets ---- */

struct dist {
	int64_t *v;
	uint32_t n, cap;
	uint32_t *hist;          /* 64 sub-buckets per power of two */
	uint64_t count;
};

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

static int
dist_add(struct dist *d, int64_t v)
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

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile (p in 0..100); exact while the values fit. */
static int64_t
dist_pct(struct dist *d, double p)
{
	uint64_t rank;
	if (d->count == 0)
		return 0;
	rank = (uint64_t)ceil(p / 100.0 * (double)d->count);
	if (rank < 1)
		rank = 1;
	if (d->hist == NULL) {
		qsort(d->v, d->n, sizeof(*d->v), cmp_i64);
		return d->v[rank - 1];
	}
	for (uint32_t b = 0, seen = 0; b < 64 * 64; b++)
		if ((seen += d->hist[b]) >= rank)
			return bucket_mid(b);
	return 0;
}

static void
dist_release(struct dist *d)
{
	free(d->v);
	free(d->hist);
}

/* ---- the longest few time ranges ---- */

struct topk {
	int64_t s[TOPK], e[TOPK];
	int n;
};

static void
topk_add(struct topk *t, int64_t s, int64_t e)
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

static json_t *
topk_json(const struct topk *t)
{
	json_t *a = json_array();
	for (int i = 0; i < t->n; i++)
		json_array_append_new(a, json_pack("[I,I]", (json_int_t)t->s[i],
		    (json_int_t)t->e[i]));
	return a;
}

/* ---- the state ---- */

enum { F_CALL, F_SCOPE, F_NVTX, F_CUDA, F_SYNC };
static const char *const frame_kind[] = { "python", "scope", "nvtx", "cuda",
    "sync" };

struct frame {
	int64_t start, end;
	uint32_t name;
	uint32_t stat;           /* index in scopes or funcs */
	uint8_t kind;
	bool py;                 /* a Python function (has a file) */
	/* an import (_find_and_load): the module whose body it ran (its
	 * function's index + 1), the imports nested in it first-hand, and
	 * whether another import encloses it */
	bool imp, imp_nested_in;
	uint32_t imp_mod;
	int64_t imp_nested;
};

struct thr {
	int64_t pid, tid;
	uint32_t name;
	uint32_t proc1;          /* its process's index + 1; 0 not yet */
	struct frame *st;
	uint32_t n, cap;
	int64_t last_t;          /* the sweep has credited time up to here */
	uint32_t *okey, *ocnt;   /* functions open on the stack: counts */
	uint32_t omask, oused;
	uint64_t launches;
	/* /proc samples */
	bool have_cpu, have_wait, have_inv;
	int64_t cpu0_ts, cpu0, cpu1_ts, cpu1, wait0, wait1, inv0, inv1;
	/* Python activity, for the GIL check */
	int64_t py_first, py_last, py_self, cpu_at_py;
	/* the CPU samples that bound the Python window: the last at or
	 * before its first call, the last at or before its last return */
	int64_t cpu_at_py_ts, cpu_py_end, cpu_py_end_ts;
	bool have_cpu_at_py;     /* else the first sample after it starts */
	bool have_py;
	/* imports: the outermost _find_and_load calls, and the outermost
	 * module bodies (__main__ aside) */
	int64_t imp_end, imp_ns, imp_first, imp_last;
	uint64_t imp_n;
	/* garbage collections that paused the thread, outside imports (those
	 * inside are start-up, and counted apart) */
	uint64_t gc_n, gc_imp_n;
	int64_t gc_ns, gc_max, gc_imp_ns;
	uint32_t gc_scope;       /* the longest one's innermost range + 1 */
	struct topk gc_long;
};

struct proc {
	int64_t pid;
	uint32_t name;
	bool have_rss, have_flt;
	int64_t rss0, rss0_ts, rss_peak, rss_peak_ts, rss1, rss1_ts;
	int64_t flt0, flt1, threads_peak, last_sample;
	/* the end of its last Python call so far, and the last RSS sample
	 * at or before it: before the interpreter's teardown frees memory */
	int64_t py_end, rss_pre, rss_pre_ts;
	int64_t *rts, *rv;       /* RSS samples, halved when full */
	uint32_t nr, rstride, rskip;
	struct blob_copy { uint8_t *p; size_t n; } cmdline;
};

struct pend {
	uint64_t key;            /* thread index << 40 | kind << 32 | name */
	int64_t ns;
};

struct dev {
	bool seen, info;
	uint32_t name;
	int64_t sm, mem;
	double pcie;
	uint64_t ops, kernels, ngaps;
	int64_t first, cs, ce;   /* first start; the current busy interval */
	int64_t busy, host_wait, kernel_wait, other;
	struct topk gaps;
	struct dist kdur, gapd, ldelay;
	uint64_t ldelay_out;
	struct pend pend[PENDING_MAX];
	int npend;
	int64_t mem_cur, mem_peak;
	/* utilisation series */
	int64_t ut0, utw;
	int64_t ub[NBUCKETS];
};

struct sstat {               /* scopes and NVTX ranges */
	uint8_t kind;
	uint32_t name;
	int64_t total, max, gpu_ns;
	uint64_t gpu_ops;
	struct dist d;
};

enum { FN_PLAIN, FN_IMPORT, FN_MODULE, FN_GC };
#define GC_PREFIX "gc (generation "     /* the Python collector's name */

struct fstat {               /* Python and C functions */
	uint32_t name, file;
	int64_t line;
	uint64_t count;
	int64_t self, incl, max;
	uint8_t role;            /* FN_: an import, a module's body */
	/* FN_MODULE: the imports that ran the body (first_hand: those no
	 * other import enclosed), their time with and without the imports
	 * nested in them, as -X importtime's cumulative and self */
	uint64_t imp_count, imp_first_hand;
	int64_t imp_cum, imp_self;
};

struct kstat {
	uint32_t name;
	uint64_t count;
	int64_t total, max;
};

struct xstat {               /* copies by direction and memsets */
	uint64_t count, pageable_count, sync_calls;
	int64_t bytes, ns, pageable_bytes;
	struct topk longest;
};

struct ystat {               /* syncs by kind, and by kind and site */
	uint32_t kind, site;
	uint64_t count;
	int64_t ns;
	struct topk longest;
};

struct corr {
	int64_t pid, corr;
	int64_t api_start, api_end;
	uint32_t thr;            /* index + 1 */
	uint32_t scopes[4];      /* sstat index + 1 of the open scopes */
	bool sync_copy;          /* launched by a synchronous copy call */
};

struct ist_analyzer {
	double slow_launch_ns, launch_delay_ns, kernel_wait_ns;
	struct strtab str;
	struct thr *thr;
	uint32_t nthr, capthr;
	struct u64map thrmap;
	struct proc *proc;
	uint32_t nproc, capproc;
	struct u64map procmap;
	struct dev dev[MAXDEV];
	struct sstat *sc;
	uint32_t nsc, capsc;
	struct u64map scmap;
	struct fstat *fn;
	uint32_t nfn, capfn;
	struct u64map fnmap;
	struct kstat *kn;
	uint32_t nkn, capkn;
	struct u64map knmap;
	struct xstat xs[4];      /* h2d, d2h, d2d, memset */
	struct ystat *sy;
	uint32_t nsy, capsy;
	struct u64map symap;
	struct pend *idle;       /* committed idle attribution, per device */
	uint32_t nidle, capidle;
	struct u64map idlemap;
	struct corr *corr;       /* direct-mapped by correlation id */
	/* launches */
	uint64_t launches, slow_launches;
	int64_t launch_max;
	struct dist launch_d;
	/* run */
	int64_t t0, t1, last_key;
	bool have_t;
	uint64_t events, out_of_order, lost, instants, segments, bad_times;
	int64_t profiler_cpu;
	uint32_t host;
	json_t *producers, *sources_q;
	json_t *damaged;         /* sources is-merge could not read whole */
	char read_error[400];    /* why the input could not be read whole */
	int64_t damaged_bytes;   /* their truncated bytes */
	int64_t clock_unc, unaligned;
	bool merged;
	/* system */
	int64_t cores, memory;
	uint64_t run_samples, oversub;
	double util_sum;
	uint64_t util_n;
	const struct ist_rules *rules;
};

/* ---- lookups ---- */

static struct thr *
thread_of(struct ist_analyzer *a, int64_t pid, int64_t tid)
{
	bool found;
	uint64_t key = (uint64_t)pid << 32 ^ (uint64_t)tid;
	uint32_t *v = u64map_slot(&a->thrmap, key, &found);
	struct thr *t;

	if (v == NULL)
		return NULL;
	if (found)
		return &a->thr[*v - 1];
	if ((t = push((void **)&a->thr, &a->nthr, &a->capthr,
	    sizeof(*t))) == NULL)
		return NULL;
	a->thrmap.n++;
	*v = a->nthr;
	t->pid = pid;
	t->tid = tid;
	t->last_t = INT64_MIN;
	t->imp_end = INT64_MIN;
	return t;
}

static struct proc *
proc_of(struct ist_analyzer *a, int64_t pid)
{
	bool found;
	uint32_t *v = u64map_slot(&a->procmap, (uint64_t)pid, &found);
	struct proc *p;

	if (v == NULL)
		return NULL;
	if (found)
		return &a->proc[*v - 1];
	if ((p = push((void **)&a->proc, &a->nproc, &a->capproc,
	    sizeof(*p))) == NULL)
		return NULL;
	a->procmap.n++;
	*v = a->nproc;
	p->pid = pid;
	return p;
}

/* Thread t's Python activity ends at its py_last: its process's too. */
static int
proc_py_end(struct ist_analyzer *a, struct thr *t)
{
	struct proc *p;

	if (t->proc1 == 0) {
		if ((p = proc_of(a, t->pid)) == NULL)
			return -1;
		t->proc1 = (uint32_t)(p - a->proc) + 1;
	}
	p = &a->proc[t->proc1 - 1];
	if (t->py_last > p->py_end)
		p->py_end = t->py_last;
	return 0;
}

/* Index of the stat for key in (arr, n, cap), created zeroed; -1 ENOMEM. */
static int64_t
stat_of(struct u64map *m, void **arr, uint32_t *n, uint32_t *cap,
    size_t size, uint64_t key, bool *created)
{
	bool found;
	uint32_t *v = u64map_slot(m, key, &found);
	if (v == NULL)
		return -1;
	*created = !found;
	if (found)
		return *v - 1;
	if (push(arr, n, cap, size) == NULL)
		return -1;
	m->n++;
	*v = *n;
	return *n - 1;
}

static int64_t
name_id(struct ist_analyzer *a, const struct ist_event *ev,
    enum ist_field f)
{
	const struct ist_str *s = f == IST_F_NAME ? &ev->name :
	    f == IST_F_FILE ? &ev->file : f == IST_F_KIND ? &ev->kind :
	    f == IST_F_HOST ? &ev->host : &ev->domain;
	if (!IST_HAS(ev, f))
		return 0;
	return intern(&a->str, s->p, s->n);
}

/* ---- idle attribution ---- */

static void
pend_add(struct dev *d, uint64_t key, int64_t ns)
{
	for (int i = 0; i < d->npend; i++)
		if (d->pend[i].key == key) {
			d->pend[i].ns += ns;
			return;
		}
	if (d->npend == PENDING_MAX) {
		/* too many labels in one gap: the rest count as untracked */
		key = key & ~(((uint64_t)1 << 40) - 1);
		key |= (uint64_t)7 << 32;
		for (int i = 0; i < d->npend; i++)
			if (d->pend[i].key == key) {
				d->pend[i].ns += ns;
				return;
			}
		d->pend[d->npend - 1].ns += ns;
		return;
	}
	d->pend[d->npend].key = key;
	d->pend[d->npend++].ns = ns;
}

/* Thread t spent [s, e) under its current top frame: credit the part of
 * it during which a device was idle (within its active window). */
static void
credit(struct ist_analyzer *a, struct thr *t, int64_t s, int64_t e)
{
	uint64_t label;

	if (t->launches == 0 || e <= s)
		return;
	if (t->n == 0)
		label = (uint64_t)6 << 32;
	else
		label = (uint64_t)t->st[t->n - 1].kind << 32 |
		    t->st[t->n - 1].name;
	label |= (uint64_t)(t - a->thr) << 40;
	for (int i = 0; i < MAXDEV; i++) {
		struct dev *d = &a->dev[i];
		int64_t from;
		if (!d->seen || d->ce >= e)
			continue;
		from = s > d->ce ? s : d->ce;
		pend_add(d, label, e - from);
	}
}

static int64_t open_count(struct thr *t, uint32_t stat, int delta);

/* An import that ended: its module's cumulative and self time. */
static void
import_done(struct ist_analyzer *a, const struct frame *f)
{
	struct fstat *m;

	if (!f->imp || f->imp_mod == 0)
		return;
	m = &a->fn[f->imp_mod - 1];
	m->imp_count++;
	m->imp_first_hand += !f->imp_nested_in;
	m->imp_cum += f->end - f->start;
	m->imp_self += f->end - f->start - f->imp_nested;
}

/* Moves thread t's sweep to time now, popping the ranges that ended. */
static void
advance(struct ist_analyzer *a, struct thr *t, int64_t now)
{
	if (t->last_t == INT64_MIN)
		t->last_t = now;
	while (t->n > 0 && t->st[t->n - 1].end <= now) {
		int64_t end = t->st[t->n - 1].end;
		if (end > t->last_t) {
			credit(a, t, t->last_t, end);
			t->last_t = end;
		}
		t->n--;
		if (t->st[t->n].kind == F_CALL) {
			open_count(t, t->st[t->n].stat, -1);
			import_done(a, &t->st[t->n]);
		}
	}
	if (now > t->last_t) {
		credit(a, t, t->last_t, now);
		t->last_t = now;
	}
}

static int
commit_gap(struct ist_analyzer *a, struct dev *d, int devno, uint32_t thr)
{
	for (int i = 0; i < d->npend; i++) {
		struct pend *p;
		bool created;
		int64_t k;
		uint64_t key = d->pend[i].key | (uint64_t)devno << 59;
		if (thr && (uint32_t)(d->pend[i].key >> 40) != thr - 1)
			continue;
		k = stat_of(&a->idlemap, (void **)&a->idle, &a->nidle,
		    &a->capidle, sizeof(*a->idle), key, &created);
		if (k < 0)
			return -1;
		p = &a->idle[k];
		p->key = key;
		p->ns += d->pend[i].ns;
	}
	d->npend = 0;
	return 0;
}

/* ---- GPU work ---- */

static void
util_add(struct dev *d, int64_t s, int64_t e)
{
	if (d->utw == 0) {
		d->ut0 = s;
		d->utw = 1000000;    /* 1 ms, doubled as the run grows */
	}
	while (e > d->ut0 + d->utw * NBUCKETS) {
		for (int i = 0; i < NBUCKETS / 2; i++)
			d->ub[i] = d->ub[2 * i] + d->ub[2 * i + 1];
		memset(d->ub + NBUCKETS / 2, 0,
		    NBUCKETS / 2 * sizeof(d->ub[0]));
		d->utw *= 2;
	}
	while (s < e) {
		int64_t b = (s - d->ut0) / d->utw;
		int64_t be = d->ut0 + (b + 1) * d->utw;
		int64_t x = e < be ? e : be;
		d->ub[b] += x - s;
		s = x;
	}
}

static int
gpu_op(struct ist_analyzer *a, const struct ist_event *ev)
{
	struct dev *d;
	struct corr *c = NULL;
	int devno = IST_HAS(ev, IST_F_DEVICE) ? (int)ev->device : 0;
	int64_t s = ev->start_ns, e = ev->end_ns;
	uint32_t launcher = 0;

	if (devno < 0 || devno >= MAXDEV)
		devno = MAXDEV - 1;
	d = &a->dev[devno];
	if (IST_HAS(ev, IST_F_CORRELATION)) {
		struct corr *x = &a->corr[(uint64_t)ev->correlation &
		    (CORR_SLOTS - 1)];
		if (x->thr && x->corr == ev->correlation && x->pid == ev->pid)
			c = x;
	}
	/* every launching thread's sweep reaches s before the union moves */
	for (uint32_t i = 0; i < a->nthr; i++)
		if (a->thr[i].launches)
			advance(a, &a->thr[i], s);
	if (c) {
		launcher = c->thr;
		for (int i = 0; i < 4 && c->scopes[i]; i++) {
			a->sc[c->scopes[i] - 1].gpu_ns += e - s;
			a->sc[c->scopes[i] - 1].gpu_ops++;
		}
	}
	d->ops++;
	if (!d->seen) {
		d->seen = true;
		d->first = d->cs = s;
		d->ce = e;
		d->npend = 0;
		return 0;
	}
	if (s > d->ce) {
		int64_t gap = s - d->ce;
		d->ngaps++;
		if (c && c->api_start >= d->ce) {
			int64_t as = c->api_start < s ? c->api_start : s;
			d->host_wait += as - d->ce;
			d->kernel_wait += s - as;
			if (dist_add(&d->ldelay, s - c->api_start))
				return -1;
			if (s - c->api_start > a->launch_delay_ns)
				d->ldelay_out++;
		} else if (c && gap <= a->kernel_wait_ns) {
			d->kernel_wait += gap;
		} else {
			d->other += gap;
		}
		if (dist_add(&d->gapd, gap))
			return -1;
		topk_add(&d->gaps, d->ce, s);
		if (!launcher) {
			uint64_t best = 0;
			for (uint32_t i = 0; i < a->nthr; i++)
				if (a->thr[i].launches > best) {
					best = a->thr[i].launches;
					launcher = i + 1;
				}
		}
		if (commit_gap(a, d, devno, launcher))
			return -1;
		d->busy += d->ce - d->cs;
		util_add(d, d->cs, d->ce);
		d->cs = s;
		d->ce = e;
	} else {
		d->npend = 0;
		if (e > d->ce)
			d->ce = e;
		if (dist_add(&d->gapd, 0))
			return -1;
	}
	return 0;
}

/* ---- per record kind ---- */

static bool
name_is(const struct ist_event *ev, const char *s)
{
	size_t n = strlen(s);
	return ev->name.n == n && memcmp(ev->name.p, s, n) == 0;
}

static bool
name_starts(const struct ist_event *ev, const char *s)
{
	size_t n = strlen(s);
	return ev->name.n >= n && memcmp(ev->name.p, s, n) == 0;
}

static bool
name_has(const struct ist_event *ev, const char *s)
{
	size_t n = strlen(s);
	for (size_t i = 0; i + n <= ev->name.n; i++)
		if (memcmp(ev->name.p + i, s, n) == 0)
			return true;
	return false;
}

static bool
is_launch(const struct ist_event *ev)
{
	return name_has(ev, "Launch") || name_has(ev, "launch") ||
	    name_has(ev, "Memcpy") || name_has(ev, "Memset") ||
	    name_has(ev, "GraphLaunch");
}

/* A CUDA call that blocks the host until the GPU catches up: synchronous
 * copies (cudaMemcpy, cuMemcpyDtoH...) and cudaFree. */
static const char *
implicit_sync(const struct ist_event *ev)
{
	if ((name_starts(ev, "cudaMemcpy") || name_starts(ev, "cuMemcpy")) &&
	    !name_has(ev, "Async") && !name_has(ev, "ToSymbol") &&
	    !name_has(ev, "FromSymbol"))
		return "memcpy";
	if (name_is(ev, "cudaFree") || name_starts(ev, "cuMemFree"))
		return "free";
	return NULL;
}

/* The call site of a sync: the innermost function, and the innermost
 * Python function with its file and line when that is another one. */
static int64_t
site_of(struct ist_analyzer *a, const struct thr *t)
{
	const struct frame *in = NULL, *py = NULL;
	char buf[1024];
	int n;

	for (uint32_t i = t->n; i-- > 0;) {
		const struct frame *f = &t->st[i];
		if (f->kind != F_CALL)
			continue;
		if (in == NULL)
			in = f;
		if (f->py) {
			py = f;
			break;
		}
	}
	if (in == NULL) {
		for (uint32_t i = t->n; i-- > 0;)
			if (t->st[i].kind == F_SCOPE || t->st[i].kind == F_NVTX) {
				n = snprintf(buf, sizeof(buf), "%s '%s'",
				    frame_kind[t->st[i].kind],
				    a->str.s[t->st[i].name]);
				return intern(&a->str, buf, (size_t)n <
				    sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
			}
		return intern(&a->str, "(no recorded caller)", 20);
	}
	if (py == NULL || py == in) {
		const struct fstat *fs = &a->fn[in->stat];
		if (py)
			n = snprintf(buf, sizeof(buf), "%s (%s:%lld)",
			    a->str.s[in->name], a->str.s[fs->file],
			    (long long)fs->line);
		else
			n = snprintf(buf, sizeof(buf), "%s",
			    a->str.s[in->name]);
	} else {
		const struct fstat *fs = &a->fn[py->stat];
		n = snprintf(buf, sizeof(buf), "%s in %s (%s:%lld)",
		    a->str.s[in->name], a->str.s[py->name],
		    a->str.s[fs->file], (long long)fs->line);
	}
	if (n < 0)
		n = 0;
	return intern(&a->str, buf, (size_t)n < sizeof(buf) ? (size_t)n :
	    sizeof(buf) - 1);
}

static int
add_sync(struct ist_analyzer *a, struct thr *t, const char *kind,
    size_t kn, int64_t s, int64_t e)
{
	int64_t k = intern(&a->str, kind, kn), site, i;
	bool created;

	if (k < 0 || (site = site_of(a, t)) < 0)
		return -1;
	for (int pass = 0; pass < 2; pass++) {
		uint64_t key = (uint64_t)k << 32 | (pass ? (uint64_t)site + 1 : 0);
		if ((i = stat_of(&a->symap, (void **)&a->sy, &a->nsy, &a->capsy,
		    sizeof(*a->sy), key, &created)) < 0)
			return -1;
		a->sy[i].kind = (uint32_t)k;
		a->sy[i].site = pass ? (uint32_t)site + 1 : 0;
		a->sy[i].count++;
		a->sy[i].ns += e - s;
		topk_add(&a->sy[i].longest, s, e);
	}
	return 0;
}

/* How many frames of function stat are open on t's stack, plus delta. */
static int64_t
open_count(struct thr *t, uint32_t stat, int delta)
{
	uint32_t j;

	if (t->oused * 2 >= t->omask) {
		/* rebuild, dropping functions no longer open: sized for
		 * those still open, so that it shrinks back after a deep
		 * stack (a large table is slow to probe: cache misses) */
		uint32_t cap = 64, n = 0;
		uint32_t *nk, *nc;
		for (uint32_t i = 0; t->omask && i <= t->omask; i++)
			n += t->ocnt[i] > 0;
		while (n * 4 >= cap)
			cap *= 2;
		nk = calloc(cap, sizeof(*nk));
		nc = calloc(cap, sizeof(*nc));
		if (nk == NULL || nc == NULL) {
			free(nk);
			free(nc);
			return -1;
		}
		for (uint32_t i = 0; t->omask && i <= t->omask; i++) {
			if (t->ocnt[i] == 0)
				continue;
			/* placed where the lookup below probes: by stat,
			 * the key less one */
			for (j = (uint32_t)mix64(t->okey[i] - 1) & (cap - 1);
			    nc[j]; j = (j + 1) & (cap - 1))
				;
			nk[j] = t->okey[i];
			nc[j] = t->ocnt[i];
		}
		free(t->okey);
		free(t->ocnt);
		t->okey = nk;
		t->ocnt = nc;
		t->omask = cap - 1;
		t->oused = n;
	}
	for (j = (uint32_t)mix64(stat) & t->omask;; j = (j + 1) & t->omask) {
		if (t->okey[j] == stat + 1)
			break;
		if (t->okey[j] == 0) {
			t->okey[j] = stat + 1;
			t->oused++;
			break;
		}
	}
	t->ocnt[j] += (uint32_t)delta;
	return t->ocnt[j] - (uint32_t)(delta > 0 ? delta : 0);
}

/* Pushes a range onto its thread's stack, keeping ends non-increasing from
 * the bottom (ties in start time arrive child first). */
static struct frame *
push_frame(struct thr *t, const struct ist_event *ev)
{
	uint32_t i;
	if (t->n == t->cap) {
		uint32_t c = t->cap ? t->cap * 2 : 32;
		struct frame *nf = realloc(t->st, c * sizeof(*nf));
		if (nf == NULL)
			return NULL;
		t->st = nf;
		t->cap = c;
	}
	/* ranges that overlap without nesting (not from one call stack)
	 * are kept in order only among the top 64 */
	for (i = t->n; i > 0 && t->n - i < 64 && t->st[i - 1].end <
	    ev->end_ns; i--)
		;
	memmove(t->st + i + 1, t->st + i, (t->n - i) * sizeof(*t->st));
	t->n++;
	memset(&t->st[i], 0, sizeof(t->st[i]));
	t->st[i].start = ev->start_ns;
	t->st[i].end = ev->end_ns;
	return &t->st[i];
}

/* Frame f, just pushed on t, is an import or a module's body (role, of
 * function fn): an import counts, first-hand, in the one that encloses it;
 * a body names the module of the nearest import around it, the one that
 * ran it (__main__ and bodies run by exec have none). */
static void
import_frame(struct thr *t, struct frame *f, int role, uint32_t fn)
{
	struct frame *up = NULL;

	for (struct frame *g = f; g > t->st; g--)
		if (g[-1].imp && g[-1].end >= f->end) {
			up = &g[-1];
			break;
		}
	if (role == FN_IMPORT) {
		f->imp = true;
		f->imp_nested_in = up != NULL;
		if (up)
			up->imp_nested += f->end - f->start;
	} else if (up && up->imp_mod == 0) {
		up->imp_mod = fn + 1;
	}
}

/* What a function is to the import and GC checks: CPython's import entry
 * point (every `import` of a module not yet loaded runs it), a module's
 * body (`numpy.<module>`), a garbage collection, or none of these. */
static uint8_t
fn_role(const char *s)
{
	static const char body[] = ".<module>";
	size_t n = strlen(s), k = sizeof(body) - 1;

	if (strncmp(s, GC_PREFIX, sizeof(GC_PREFIX) - 1) == 0)
		return FN_GC;
	if (strcmp(s, "_frozen_importlib._find_and_load") == 0 ||
	    strcmp(s, "importlib._bootstrap._find_and_load") == 0)
		return FN_IMPORT;
	if (n > k && memcmp(s + n - k, body, k) == 0 &&
	    strcmp(s, "__main__.<module>") != 0)
		return FN_MODULE;
	return FN_PLAIN;
}

static int
host_range(struct ist_analyzer *a, const struct ist_event *ev)
{
	struct thr *t = thread_of(a, ev->pid, IST_HAS(ev, IST_F_TID) ?
	    ev->tid : ev->pid);
	int64_t name, dur = ev->end_ns - ev->start_ns, k;
	struct frame *f;
	bool created;
	uint32_t below;

	if (t == NULL || (name = name_id(a, ev, ev->type == IST_SYNC ?
	    IST_F_KIND : IST_F_NAME)) < 0)
		return -1;
	advance(a, t, ev->start_ns);
	below = t->n;
	if ((f = push_frame(t, ev)) == NULL)
		return -1;
	f->name = (uint32_t)name;
	switch (ev->type) {
	case IST_CPU_CALL: {
		struct fstat *fs;
		bool rec = false;
		int64_t oc;
		f->kind = F_CALL;
		f->py = IST_HAS(ev, IST_F_FILE);
		k = stat_of(&a->fnmap, (void **)&a->fn, &a->nfn, &a->capfn,
		    sizeof(*a->fn), (uint64_t)name, &created);
		if (k < 0)
			return -1;
		f->stat = (uint32_t)k;
		fs = &a->fn[k];
		if (created) {
			int64_t file = name_id(a, ev, IST_F_FILE);
			if (file < 0)
				return -1;
			fs->name = (uint32_t)name;
			fs->file = (uint32_t)file;
			fs->line = IST_HAS(ev, IST_F_LINE) ? ev->line : 0;
			fs->role = fn_role(a->str.s[name]);
		}
		fs->count++;
		if (fs->role == FN_IMPORT || fs->role == FN_MODULE)
			import_frame(t, f, fs->role, (uint32_t)k);
		/* calls start in order: one that starts before the current
		 * outermost one ends is nested in it */
		if (fs->role == FN_IMPORT && ev->start_ns >= t->imp_end) {
			if (t->imp_n++ == 0)
				t->imp_first = ev->start_ns;
			t->imp_ns += dur;
			t->imp_end = ev->end_ns;
			if (ev->end_ns > t->imp_last)
				t->imp_last = ev->end_ns;
		} else if (fs->role == FN_GC && t->imp_n &&
		    ev->start_ns < t->imp_end) {
			t->gc_imp_n++;
			t->gc_imp_ns += dur;
		} else if (fs->role == FN_GC) {
			t->gc_n++;
			t->gc_ns += dur;
			topk_add(&t->gc_long, ev->start_ns, ev->end_ns);
			if (t->gc_n == 1 || dur > t->gc_max) {
				/* the scope or NVTX range it lengthened */
				t->gc_max = dur;
				t->gc_scope = 0;
				for (uint32_t i = t->n; i-- > 0;) {
					const struct frame *p = &t->st[i];
					if (p != f && (p->kind == F_SCOPE ||
					    p->kind == F_NVTX) && p->start <=
					    ev->start_ns && p->end >= ev->end_ns) {
						t->gc_scope = p->name + 1;
						break;
					}
				}
			}
		}
		fs->self += dur;
		if (dur > fs->max)
			fs->max = dur;
		/* the enclosing call loses this much self time; recursion
		 * counts once in inclusive time */
		for (uint32_t i = t->n; i-- > 0;) {
			struct frame *p = &t->st[i];
			if (p == f || p->kind != F_CALL)
				continue;
			if (p->start <= ev->start_ns && p->end >= ev->end_ns) {
				a->fn[p->stat].self -= dur;
				if (p->py)
					t->py_self -= dur;
			}
			break;
		}
		if ((oc = open_count(t, (uint32_t)k, 1)) < 0)
			return -1;
		for (uint32_t i = 0; oc > 0 && i < t->n; i++)
			if (&t->st[i] != f && t->st[i].kind == F_CALL &&
			    t->st[i].name == name && t->st[i].start <=
			    ev->start_ns && t->st[i].end >= ev->end_ns)
				rec = true;
		if (!rec)
			fs->incl += dur;
		if (f->py) {
			if (!t->have_py) {
				t->have_py = true;
				t->py_first = ev->start_ns;
				t->cpu_at_py = t->cpu1;
				t->cpu_at_py_ts = t->cpu1_ts;
				t->have_cpu_at_py = t->have_cpu;
			}
			if (ev->end_ns > t->py_last) {
				t->py_last = ev->end_ns;
				if (proc_py_end(a, t) != 0)
					return -1;
			}
			/* every sample so far is before this call starts */
			if (t->have_cpu_at_py) {
				t->cpu_py_end = t->cpu1;
				t->cpu_py_end_ts = t->cpu1_ts;
			}
			t->py_self += dur;
		}
		break;
	}
	case IST_SCOPE:
	case IST_NVTX_RANGE: {
		struct sstat *ss;
		f->kind = ev->type == IST_SCOPE ? F_SCOPE : F_NVTX;
		k = stat_of(&a->scmap, (void **)&a->sc, &a->nsc, &a->capsc,
		    sizeof(*a->sc), (uint64_t)f->kind << 32 | (uint64_t)name,
		    &created);
		if (k < 0)
			return -1;
		f->stat = (uint32_t)k;
		ss = &a->sc[k];
		ss->kind = f->kind;
		ss->name = (uint32_t)name;
		ss->total += dur;
		if (dur > ss->max)
			ss->max = dur;
		if (dist_add(&ss->d, dur))
			return -1;
		break;
	}
	case IST_CUDA_API: {
		/* a driver call made by a runtime call is the same launch
		 * or the same sync: counted once, by the outer call */
		uint32_t fi = (uint32_t)(f - t->st);
		bool nested = fi > 0 && t->st[fi - 1].kind == F_CUDA &&
		    t->st[fi - 1].end >= ev->end_ns;
		const char *is = nested ? NULL : implicit_sync(ev);
		f->kind = F_CUDA;
		if (is && add_sync(a, t, is, strlen(is), ev->start_ns,
		    ev->end_ns))
			return -1;
		if (is_launch(ev)) {
			struct corr *c;
			int sn = 0;
			if (!nested) {
				t->launches++;
				a->launches++;
				if (dist_add(&a->launch_d, dur))
					return -1;
				if (dur > a->slow_launch_ns)
					a->slow_launches++;
				if (dur > a->launch_max)
					a->launch_max = dur;
			}
			c = &a->corr[(uint64_t)ev->correlation &
			    (CORR_SLOTS - 1)];
			memset(c, 0, sizeof(*c));
			c->pid = ev->pid;
			c->corr = ev->correlation;
			c->api_start = ev->start_ns;
			c->api_end = ev->end_ns;
			c->thr = (uint32_t)(t - a->thr) + 1;
			/* the copy it starts, when it comes, is synchronous */
			c->sync_copy = is && strcmp(is, "memcpy") == 0;
			for (uint32_t i = below; i-- > 0 && sn < 4;)
				if (t->st[i].kind == F_SCOPE ||
				    t->st[i].kind == F_NVTX)
					c->scopes[sn++] = t->st[i].stat + 1;
		}
		break;
	}
	case IST_SYNC:
		f->kind = F_SYNC;
		if (add_sync(a, t, ev->kind.p, ev->kind.n, ev->start_ns,
		    ev->end_ns))
			return -1;
		break;
	default:
		break;
	}
	return 0;
}

static int
copy_op(struct ist_analyzer *a, const struct ist_event *ev)
{
	int x = ev->type == IST_H2D_COPY ? 0 : ev->type == IST_D2H_COPY ? 1 :
	    ev->type == IST_D2D_COPY ? 2 : 3;
	struct xstat *s = &a->xs[x];

	s->count++;
	s->bytes += ev->bytes;
	s->ns += ev->end_ns - ev->start_ns;
	if (IST_HAS(ev, IST_F_PAGEABLE) && ev->pageable) {
		s->pageable_count++;
		s->pageable_bytes += ev->bytes;
	}
	topk_add(&s->longest, ev->start_ns, ev->end_ns);
	if (IST_HAS(ev, IST_F_CORRELATION)) {
		struct corr *c = &a->corr[(uint64_t)ev->correlation &
		    (CORR_SLOTS - 1)];
		if (c->thr && c->corr == ev->correlation && c->pid == ev->pid &&
		    c->sync_copy)
			s->sync_calls++;
	}
	return gpu_op(a, ev);
}

static int
kernel(struct ist_analyzer *a, const struct ist_event *ev)
{
	int64_t name = name_id(a, ev, IST_F_NAME), k, dur;
	int devno = IST_HAS(ev, IST_F_DEVICE) ? (int)ev->device : 0;
	bool created;
	struct kstat *ks;

	if (name < 0)
		return -1;
	if (devno < 0 || devno >= MAXDEV)
		devno = MAXDEV - 1;
	k = stat_of(&a->knmap, (void **)&a->kn, &a->nkn, &a->capkn,
	    sizeof(*a->kn), (uint64_t)name, &created);
	if (k < 0)
		return -1;
	ks = &a->kn[k];
	dur = ev->end_ns - ev->start_ns;
	ks->name = (uint32_t)name;
	ks->count++;
	ks->total += dur;
	if (dur > ks->max)
		ks->max = dur;
	a->dev[devno].kernels++;
	if (dist_add(&a->dev[devno].kdur, dur))
		return -1;
	return gpu_op(a, ev);
}

static int
counter(struct ist_analyzer *a, const struct ist_event *ev)
{
	int64_t v = ev->value_is_int ? ev->ivalue : ist_d2i(ev->value);
	struct proc *p;
	struct thr *t;

	if (ev->pid == 0 && !IST_HAS(ev, IST_F_TID)) {
		if (name_is(ev, "system.cpu_cores"))
			a->cores = v;
		else if (name_is(ev, "system.memory_bytes"))
			a->memory = v;
		else if (name_is(ev, "system.runnable")) {
			a->run_samples++;
			/* procs_running counts the sampler reading it */
			if (a->cores && v - 1 > a->cores)
				a->oversub++;
		} else if (name_is(ev, "system.cpu_utilization")) {
			a->util_sum += ev->value_is_int ? (double)ev->ivalue :
			    ev->value;
			a->util_n++;
		}
		return 0;
	}
	if (name_starts(ev, "process.")) {
		if ((p = proc_of(a, ev->pid)) == NULL)
			return -1;
		p->last_sample = ev->ts_ns;
		if (name_is(ev, "process.rss_bytes") && v > 0) {
			/* 0: read as the process exited (a zombie has none) */
			if (!p->have_rss) {
				p->have_rss = true;
				p->rss0 = v;
				p->rss0_ts = ev->ts_ns;
			}
			if (v > p->rss_peak) {
				p->rss_peak = v;
				p->rss_peak_ts = ev->ts_ns;
			}
			p->rss1 = v;
			p->rss1_ts = ev->ts_ns;
			if (ev->ts_ns <= p->py_end) {
				p->rss_pre = v;
				p->rss_pre_ts = ev->ts_ns;
			}
			if (p->rts == NULL && ((p->rts = malloc(RSS_MAX *
			    sizeof(int64_t))) == NULL || (p->rv = malloc(
			    RSS_MAX * sizeof(int64_t))) == NULL))
				return -1;
			if (p->rskip++ % (p->rstride ? p->rstride : 1) == 0) {
				if (p->nr == RSS_MAX) {
					for (uint32_t i = 0; i < RSS_MAX / 2; i++) {
						p->rts[i] = p->rts[2 * i];
						p->rv[i] = p->rv[2 * i];
					}
					p->nr = RSS_MAX / 2;
					p->rstride = p->rstride ? p->rstride * 2 :
					    2;
				}
				p->rts[p->nr] = ev->ts_ns;
				p->rv[p->nr++] = v;
			}
		} else if (name_is(ev, "process.major_faults")) {
			if (!p->have_flt)
				p->flt0 = v;
			p->have_flt = true;
			p->flt1 = v;
		} else if (name_is(ev, "process.threads") &&
		    v > p->threads_peak)
			p->threads_peak = v;
		return 0;
	}
	if (!name_starts(ev, "thread.") || !IST_HAS(ev, IST_F_TID))
		return 0;
	if ((t = thread_of(a, ev->pid, ev->tid)) == NULL ||
	    (p = proc_of(a, ev->pid)) == NULL)
		return -1;
	p->last_sample = ev->ts_ns;
	if (name_is(ev, "thread.cpu_ns")) {
		if (!t->have_cpu) {
			t->cpu0 = v;
			t->cpu0_ts = ev->ts_ns;
		}
		t->have_cpu = true;
		t->cpu1 = v;
		t->cpu1_ts = ev->ts_ns;
		if (t->have_py && !t->have_cpu_at_py) {
			t->cpu_at_py = v;
			t->cpu_at_py_ts = ev->ts_ns;
			t->have_cpu_at_py = true;
		}
		if (t->have_py && ev->ts_ns <= t->py_last) {
			t->cpu_py_end = v;
			t->cpu_py_end_ts = ev->ts_ns;
		}
	} else if (name_is(ev, "thread.wait_ns")) {
		if (!t->have_wait)
			t->wait0 = v;
		t->have_wait = true;
		t->wait1 = v;
	} else if (name_is(ev, "thread.ctx_involuntary")) {
		if (!t->have_inv)
			t->inv0 = v;
		t->have_inv = true;
		t->inv1 = v;
	}
	return 0;
}

void
ist_analyzer_read_error(struct ist_analyzer *a, const char *msg)
{
	snprintf(a->read_error, sizeof(a->read_error), "%s", msg);
}

/* A source is-merge could not read whole (formats/trace-format.md). */
static void
source_damage(struct ist_analyzer *a, const json_t *s)
{
	const char *why = ist_jstr(s, "error");
	int64_t cut = ist_jint(s, "truncated_bytes");
	json_t *d;

	if (cut < 0)
		cut = 0;
	if ((*why == 0 && cut == 0) || (d = json_pack("{s:s,s:I}", "input",
	    ist_jstr(s, "input"), "truncated_bytes", (json_int_t)cut)) == NULL)
		return;
	if (*why)
		json_object_set_new(d, "error", json_string(why));
	json_array_append_new(a->damaged, d);
	a->damaged_bytes += cut;
}

static int
header(struct ist_analyzer *a, const struct ist_event *ev)
{
	a->segments++;
	if (IST_HAS(ev, IST_F_PRODUCER) && !IST_HAS(ev, IST_F_SOURCES))
		json_array_append_new(a->producers, json_stringn(
		    ev->producer.p, ev->producer.n));
	if (IST_HAS(ev, IST_F_HOST) && a->host == 0) {
		int64_t h = name_id(a, ev, IST_F_HOST);
		if (h < 0)
			return -1;
		a->host = (uint32_t)h;
	}
	if (IST_HAS(ev, IST_F_SOURCES)) {
		struct ist_buf b = { 0 };
		struct ist_error e;
		json_t *src, *s;
		size_t i;
		a->merged = true;
		if (ist_cbor_to_json(ev->sources, &b, &e) == IST_OK &&
		    (src = json_loadb(b.p, b.n, 0, NULL)) != NULL) {
			json_array_foreach(src, i, s) {
				json_t *d;
				size_t j;
				double u = ist_jnum(s, "uncertainty_ns");
				const char *ps = ist_jstr(s, "producer");
				const char *hs = ist_jstr(s, "host");
				if (*ps)
					json_array_append_new(a->producers,
					    json_string(ps));
				if (*hs && a->host == 0) {
					int64_t h = intern(&a->str, hs,
					    strlen(hs));
					if (h > 0)
						a->host = (uint32_t)h;
				}
				if (json_is_false(json_object_get(s,
				    "aligned")))
					a->unaligned++;
				source_damage(a, s);
				if (u > a->clock_unc)
					a->clock_unc = ist_d2i(u);
				json_array_foreach(json_object_get(s,
				    "domains"), j, d)
					if (ist_jnum(d, "uncertainty_ns") >
					    a->clock_unc)
						a->clock_unc = ist_jint(d,
						    "uncertainty_ns");
			}
			json_decref(src);
		}
		ist_buf_release(&b);
	}
	return 0;
}

enum ist_status
ist_analyzer_add(struct ist_analyzer *a, const struct ist_event *ev,
    struct ist_error *err)
{
	int64_t key;
	int r = 0;

	if (ev->type == IST_HEADER) {
		r = header(a, ev);
		goto out;
	}
	if (ev->type == IST_ANALYSIS)
		return IST_OK;
	a->events++;
	/* times beyond +-2^61 ns (73 years) are not times: left out, so
	 * that no difference or bucket index overflows */
	if ((IST_HAS(ev, IST_F_START) && (ev->start_ns > IST_TIME_MAX ||
	    ev->start_ns < -IST_TIME_MAX || ev->end_ns > IST_TIME_MAX ||
	    ev->end_ns < -IST_TIME_MAX)) || (IST_HAS(ev, IST_F_TS) &&
	    (ev->ts_ns > IST_TIME_MAX || ev->ts_ns < -IST_TIME_MAX))) {
		a->bad_times++;
		return IST_OK;
	}
	key = IST_HAS(ev, IST_F_START) ? ev->start_ns :
	    IST_HAS(ev, IST_F_TS) ? ev->ts_ns : INT64_MIN;
	if (key != INT64_MIN) {
		int64_t end = IST_HAS(ev, IST_F_END) ? ev->end_ns : key;
		if (key < a->last_key) {
			a->out_of_order++;
			return IST_OK;   /* not merged: cannot be placed */
		}
		a->last_key = key;
		if (!a->have_t) {
			a->t0 = key;
			a->t1 = end;
			a->have_t = true;
		}
		if (end > a->t1)
			a->t1 = end;
		if (IST_HAS(ev, IST_F_END) && end < key)
			return IST_OK;   /* a negative range: ignored */
	}
	switch (ev->type) {
	case IST_PROCESS: {
		struct proc *p = proc_of(a, ev->pid);
		int64_t n = name_id(a, ev, IST_F_NAME);
		if (p == NULL || n < 0) {
			r = -1;
			break;
		}
		p->name = (uint32_t)n;
		/* the last command line: a process that exec'd (a wrapper,
		 * a pyenv shim) is named again, and its own stream, after
		 * the sampler's, knows its command line best */
		if (IST_HAS(ev, IST_F_CMDLINE)) {
			uint8_t *c = malloc(ev->cmdline.n);
			if (c != NULL) {
				memcpy(c, ev->cmdline.p, ev->cmdline.n);
				free(p->cmdline.p);
				p->cmdline.p = c;
				p->cmdline.n = ev->cmdline.n;
			}
		}
		break;
	}
	case IST_THREAD: {
		struct thr *t = thread_of(a, ev->pid, ev->tid);
		int64_t n = name_id(a, ev, IST_F_NAME);
		if (t == NULL || n < 0)
			r = -1;
		else
			t->name = (uint32_t)n;
		break;
	}
	case IST_DEVICE:
		if (ev->device >= 0 && ev->device < MAXDEV) {
			struct dev *d = &a->dev[ev->device];
			int64_t n = name_id(a, ev, IST_F_NAME);
			if (n < 0) {
				r = -1;
				break;
			}
			d->info = true;
			d->name = (uint32_t)n;
			d->sm = IST_HAS(ev, IST_F_SM_COUNT) ? ev->sm_count : 0;
			d->mem = IST_HAS(ev, IST_F_MEMORY_BYTES) ?
			    ev->memory_bytes : 0;
			d->pcie = IST_HAS(ev, IST_F_PCIE_GBPS) ?
			    ev->pcie_gbps : 0;
		}
		break;
	case IST_CPU_CALL:
	case IST_SCOPE:
	case IST_NVTX_RANGE:
	case IST_CUDA_API:
	case IST_SYNC:
		r = host_range(a, ev);
		break;
	case IST_GPU_KERNEL:
		r = kernel(a, ev);
		break;
	case IST_H2D_COPY:
	case IST_D2H_COPY:
	case IST_D2D_COPY:
	case IST_MEMSET:
		r = copy_op(a, ev);
		break;
	case IST_MEMORY_ALLOC:
	case IST_MEMORY_FREE:
		if (IST_HAS(ev, IST_F_DEVICE) && ev->device >= 0 &&
		    ev->device < MAXDEV) {
			struct dev *d = &a->dev[ev->device];
			d->mem_cur += ev->type == IST_MEMORY_ALLOC ? ev->bytes :
			    -ev->bytes;
			if (d->mem_cur > d->mem_peak)
				d->mem_peak = d->mem_cur;
		}
		break;
	case IST_COUNTER:
		r = counter(a, ev);
		break;
	case IST_LOSS:
		a->lost += (uint64_t)ev->events;
		break;
	case IST_INSTANT:
	case IST_NVTX_MARK:
		a->instants++;
		break;
	default:
		break;
	}
out:
	if (r) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	return IST_OK;
}

/* ---- lifecycle ---- */

double ist_rules_param(const struct ist_rules *r, const char *rule,
    const char *param);

enum ist_status
ist_analyzer_new(struct ist_analyzer **out, const struct ist_rules *rules,
    struct ist_error *err)
{
	struct ist_analyzer *a = calloc(1, sizeof(*a));

	*out = NULL;
	if (a == NULL || (a->corr = calloc(CORR_SLOTS, sizeof(*a->corr))) ==
	    NULL || intern(&a->str, "", 0) != 0 ||
	    (a->producers = json_array()) == NULL ||
	    (a->damaged = json_array()) == NULL) {
		ist_analyzer_free(a);
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	a->rules = rules;
	a->last_key = INT64_MIN;
	a->slow_launch_ns = ist_rules_param(rules, "launch_bound",
	    "slow_launch_us") * 1000;
	a->launch_delay_ns = ist_rules_param(rules, "launch_bound",
	    "launch_delay_us") * 1000;
	a->kernel_wait_ns = ist_rules_param(rules, "gpu_idle",
	    "kernel_wait_us") * 1000;
	*out = a;
	return IST_OK;
}

void
ist_analyzer_free(struct ist_analyzer *a)
{
	if (a == NULL)
		return;
	strtab_release(&a->str);
	for (uint32_t i = 0; i < a->nthr; i++) {
		free(a->thr[i].st);
		free(a->thr[i].okey);
		free(a->thr[i].ocnt);
	}
	free(a->thr);
	u64map_release(&a->thrmap);
	for (uint32_t i = 0; i < a->nproc; i++) {
		free(a->proc[i].cmdline.p);
		free(a->proc[i].rts);
		free(a->proc[i].rv);
	}
	free(a->proc);
	u64map_release(&a->procmap);
	for (int i = 0; i < MAXDEV; i++) {
		dist_release(&a->dev[i].kdur);
		dist_release(&a->dev[i].gapd);
		dist_release(&a->dev[i].ldelay);
	}
	for (uint32_t i = 0; i < a->nsc; i++)
		dist_release(&a->sc[i].d);
	free(a->sc);
	u64map_release(&a->scmap);
	free(a->fn);
	u64map_release(&a->fnmap);
	free(a->kn);
	u64map_release(&a->knmap);
	free(a->sy);
	u64map_release(&a->symap);
	free(a->idle);
	u64map_release(&a->idlemap);
	free(a->corr);
	dist_release(&a->launch_d);
	json_decref(a->producers);
	json_decref(a->damaged);
	free(a);
}

/* ---- the JSON ---- */

#define JI(v) ((json_int_t)(v))

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
	return strcmp(a->str.s[p->name], a->str.s[q->name]);
}

static int
by_self_fn(const void *x, const void *y, void *ctx)
{
	const struct ist_analyzer *a = ctx;
	const struct fstat *p = x, *q = y;
	if (p->self != q->self)
		return p->self < q->self ? 1 : -1;
	return strcmp(a->str.s[p->name], a->str.s[q->name]);
}

static int
by_total_kn(const void *x, const void *y, void *ctx)
{
	const struct ist_analyzer *a = ctx;
	const struct kstat *p = x, *q = y;
	if (p->total != q->total)
		return p->total < q->total ? 1 : -1;
	return strcmp(a->str.s[p->name], a->str.s[q->name]);
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
	return strcmp(a->str.s[p->site ? p->site - 1 : 0],
	    a->str.s[q->site ? q->site - 1 : 0]);
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
	return a->str.s[t->name];
}

static json_t *
devices_json(struct ist_analyzer *a)
{
	json_t *arr = json_array();

	if (a->nidle)
		qsort_r(a->idle, a->nidle, sizeof(*a->idle), by_ns_idle, NULL);
	for (int i = 0; i < MAXDEV; i++) {
		struct dev *d = &a->dev[i];
		json_t *o, *top, *ut;
		int64_t active, idle;
		uint32_t thr = 0;
		uint64_t best = 0;

		if (!d->seen && !d->info)
			continue;
		if (d->seen) {
			d->busy += d->ce - d->cs;
			util_add(d, d->cs, d->ce);
		}
		active = d->seen ? d->ce - d->first : 0;
		idle = active - d->busy;
		o = json_pack("{s:I,s:s,s:I,s:I,s:o,s:I,s:I}",
		    "device", JI(i), "name", a->str.s[d->name],
		    "sm_count", JI(d->sm), "memory_bytes", JI(d->mem),
		    "pcie_gbps", jreal(d->pcie, 3), "ops", JI(d->ops),
		    "kernels", JI(d->kernels));
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
		json_object_set_new(o, "idle_gaps", topk_json(&d->gaps));
		/* attribution: the thread that launched most work */
		for (uint32_t k = 0; k < a->nthr; k++)
			if (a->thr[k].launches > best) {
				best = a->thr[k].launches;
				thr = k + 1;
			}
		top = json_array();
		if (thr) {
			const struct thr *t = &a->thr[thr - 1];
			int n = 0;
			int64_t other = 0;
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
				json_array_append_new(top, json_pack(
				    "{s:s,s:s,s:I,s:o}", "kind",
				    kind < 5 ? frame_kind[kind] : kind == 6 ?
				    "none" : "other", "what", kind == 6 ?
				    "(no recorded activity)" : kind == 7 ?
				    "(other activity)" :
				    a->str.s[(uint32_t)p->key], "ns", JI(p->ns),
				    "share", jreal(idle ? (double)p->ns /
				    (double)idle : 0, 4)));
			}
			if (other)
				json_array_append_new(top, json_pack(
				    "{s:s,s:s,s:I,s:o}", "kind", "other",
				    "what", "(other activity)", "ns", JI(other),
				    "share", jreal(idle ? (double)other /
				    (double)idle : 0, 4)));
			json_object_set_new(o, "idle_attribution", json_pack(
			    "{s:I,s:I,s:s,s:o}", "pid", JI(t->pid), "tid",
			    JI(t->tid), "thread", thread_name(a, t), "top",
			    top));
		} else {
			json_object_set_new(o, "idle_attribution", json_null());
			json_decref(top);
		}
		json_object_set_new(o, "kernel_p50_ns",
		    json_integer(dist_pct(&d->kdur, 50)));
		json_object_set_new(o, "kernel_p95_ns",
		    json_integer(dist_pct(&d->kdur, 95)));
		json_object_set_new(o, "gaps", json_integer((json_int_t)
		    d->ngaps));
		json_object_set_new(o, "gap_p50_ns",
		    json_integer(dist_pct(&d->gapd, 50)));
		json_object_set_new(o, "launch_delay_p50_ns",
		    json_integer(dist_pct(&d->ldelay, 50)));
		json_object_set_new(o, "launch_delay_outliers",
		    json_integer(JI(d->ldelay_out)));
		json_object_set_new(o, "memory_peak_bytes",
		    json_integer(d->mem_peak));
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
		    "name", a->str.s[s->name], "count", JI(n),
		    "total_ns", JI(s->total), "mean_ns", JI(n ? s->total /
		    (int64_t)n : 0), "p50_ns", JI(dist_pct(&s->d, 50)),
		    "p95_ns", JI(dist_pct(&s->d, 95)), "max_ns", JI(s->max),
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
		    a->str.s[f->name], "count", JI(f->count), "self_ns",
		    JI(f->self), "incl_ns", JI(f->incl), "max_ns", JI(f->max));
		if (f->file) {
			json_object_set_new(o, "file",
			    json_string(a->str.s[f->file]));
			json_object_set_new(o, "line", json_integer(f->line));
		}
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
	return strcmp(a->str.s[p->name], a->str.s[q->name]);
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
		const char *name = a->str.s[v[i]->name];
		json_array_append_new(mods, json_pack(
		    "{s:s%,s:s,s:I,s:I,s:I,s:I}", "module", name,
		    strlen(name) - 9, "file", a->str.s[v[i]->file], "count",
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
			const char *s = a->str.s[f->name];
			if (f->role != FN_GC ||
			    atoi(s + sizeof(GC_PREFIX) - 1) != g)
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
		json_array_append_new(arr, json_pack(
		    "{s:s,s:I,s:I,s:I,s:I}", "name", a->str.s[k->name],
		    "count", JI(k->count), "total_ns", JI(k->total),
		    "mean_ns", JI(k->total / (int64_t)k->count), "max_ns",
		    JI(k->max)));
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
		    "longest", topk_json(&s->longest)));
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
				    a->str.s[a->sy[j].site - 1], "count",
				    JI(a->sy[j].count), "blocked_ns",
				    JI(a->sy[j].ns)));
			}
		json_array_append_new(arr, json_pack(
		    "{s:s,s:I,s:I,s:o,s:o}", "kind", a->str.s[s->kind],
		    "count", JI(s->count), "blocked_ns", JI(s->ns), "sites",
		    sites, "longest", topk_json(&s->longest)));
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

static json_t *
threads_json(struct ist_analyzer *a)
{
	json_t *arr = json_array();
	for (uint32_t i = 0; i < a->nthr; i++) {
		struct thr *t = &a->thr[i];
		const struct proc *p = NULL;
		bool found;
		uint32_t *v = u64map_slot(&a->procmap, (uint64_t)t->pid,
		    &found);
		int64_t end, win, cpu, wait;
		json_t *o;
		if (v && found)
			p = &a->proc[*v - 1];
		if (!t->have_cpu && !t->have_py)
			continue;
		end = p && p->last_sample > t->cpu1_ts ? p->last_sample :
		    t->cpu1_ts;
		win = end - t->cpu0_ts;
		cpu = t->cpu1 - t->cpu0;
		wait = t->wait1 - t->wait0;
		if (strcmp(thread_name(a, t), "inferscope") == 0) {
			/* the collector's writer: overhead, not the app */
			a->profiler_cpu += cpu;
			continue;
		}
		o = json_pack("{s:I,s:I,s:s,s:I,s:I,s:o,s:I,s:o,s:I}",
		    "pid", JI(t->pid), "tid", JI(t->tid), "name",
		    thread_name(a, t), "cpu_ns", JI(cpu), "window_ns",
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
			if (pw <= 0) {      /* no two samples inside: all */
				pw = win;
				pc = cpu;
			}
			json_t *py = json_pack("{s:I,s:I,s:I,s:I,s:o,s:I,s:I}",
			    "first_ns", JI(t->py_first), "last_ns",
			    JI(t->py_last), "self_ns", JI(t->py_self),
			    "cpu_ns", JI(pc), "cpu_util", jreal(t->have_cpu ?
			    util_of(pc, pw) : 0, 4),
			    "imports", JI(t->imp_n), "import_ns",
			    JI(t->imp_ns));
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
				    t->gc_scope ? json_string(a->str.s[
				    t->gc_scope - 1]) : json_null());
				json_object_set_new(py, "gc_longest",
				    topk_json(&t->gc_long));
			}
			json_object_set_new(o, "python", py);
		}
		json_object_set_new(o, "launches", json_integer(
		    JI(t->launches)));
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *
processes_json(struct ist_analyzer *a, json_t **command)
{
	json_t *arr = json_array();
	for (uint32_t i = 0; i < a->nproc; i++) {
		struct proc *p = &a->proc[i];
		json_t *o;
		if (p->pid == 0)
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
		    a->str.s[p->name]);
		/* the last sample before teardown: at or before the end of
		 * its last Python call, for a Python process */
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
		}
		if (p->nr) {
			/* steady-state growth: from a quarter to nine tenths
			 * of the sampled life before teardown (start-up and
			 * teardown left out) */
			int64_t life = last_ts - p->rss0_ts;
			int64_t ta = p->rss0_ts + life / 4;
			int64_t tb = p->rss0_ts + life / 10 * 9;
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
		json_object_set_new(o, "threads_peak",
		    json_integer(p->threads_peak));
		json_array_append_new(arr, o);
	}
	return arr;
}

json_t *ist_rules_run(const struct ist_rules *r, json_t *an);

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

enum ist_status
ist_analyzer_finish(struct ist_analyzer *a, const struct ist_reader_stats *st,
    json_t **out, struct ist_error *err)
{
	json_t *an, *run, *dq, *notes, *command = NULL, *procs, *threads, *d;
	double lost_share, factor = 1;
	size_t k;

	*out = NULL;
	for (uint32_t i = 0; i < a->nthr; i++) {
		if (a->thr[i].launches)
			advance(a, &a->thr[i], a->t1);
		/* imports still on a stack ended by the trace's end */
		for (uint32_t j = 0; j < a->thr[i].n; j++)
			import_done(a, &a->thr[i].st[j]);
	}
	procs = processes_json(a, &command);
	threads = threads_json(a);
	run = json_pack("{s:s,s:o,s:O,s:I,s:I,s:I,s:I,s:I}",
	    "host", a->str.s[a->host], "command", command ? command :
	    json_null(), "producers", a->producers, "segments",
	    JI(a->segments), "start_ns", JI(a->have_t ? a->t0 : 0), "end_ns",
	    JI(a->have_t ? a->t1 : 0), "wall_ns", JI(a->have_t ? a->t1 - a->t0 :
	    0), "events", JI(a->events));
	notes = json_array();
	lost_share = a->lost ? (double)a->lost / (double)(a->lost +
	    a->events) : 0;
	if (a->lost)
		dq_note(notes, &factor, 1 - (lost_share * 5 > 0.5 ? 0.5 :
		    lost_share * 5), "%llu events (%.2f%%) were lost while "
		    "recording", (unsigned long long)a->lost,
		    100 * lost_share);
	if (st && st->truncated_bytes)
		dq_note(notes, &factor, 0.9, "the trace is truncated: the last "
		    "%llu bytes were dropped", (unsigned long long)
		    st->truncated_bytes);
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
			    "dropped", ist_jstr(d, "input"),
			    (long long)ist_jint(d, "truncated_bytes"));
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
	dq = json_pack("{s:I,s:I,s:o,s:I,s:b,s:I,s:I,s:I,s:o,s:o}",
	    "events", JI(a->events), "lost_events", JI(a->lost),
	    "lost_share", jreal(lost_share, 6), "truncated_bytes",
	    JI((st ? st->truncated_bytes : 0) + (uint64_t)a->damaged_bytes),
	    "merged", a->merged,
	    "out_of_order", JI(a->out_of_order), "clock_uncertainty_ns",
	    JI(a->clock_unc), "unaligned_sources", JI(a->unaligned),
	    "confidence_factor", jreal(factor, 3), "notes", notes);
	json_object_set_new(dq, "profiler_cpu_ns", json_integer(
	    a->profiler_cpu));
	json_object_set(dq, "damaged_inputs", a->damaged);
	json_object_set_new(dq, "read_error", *a->read_error ?
	    json_string(a->read_error) : json_null());
	an = json_pack("{s:i,s:s,s:o,s:o}", "analysis_version",
	    IST_ANALYSIS_VERSION, "producer", "is-analyze " IST_PACKAGE_VERSION,
	    "run", run, "data_quality", dq);
	json_object_set_new(an, "system", json_pack(
	    "{s:I,s:I,s:I,s:I,s:o}", "cpu_cores", JI(a->cores),
	    "memory_bytes", JI(a->memory), "runnable_samples",
	    JI(a->run_samples), "oversubscribed_samples", JI(a->oversub),
	    "cpu_utilization_mean", jreal(a->util_n ? a->util_sum /
	    (double)a->util_n : 0, 4)));
	json_object_set_new(an, "devices", devices_json(a));
	json_object_set_new(an, "launches", json_pack(
	    "{s:I,s:I,s:I,s:I}", "count", JI(a->launches), "p50_ns",
	    JI(dist_pct(&a->launch_d, 50)), "max_ns", JI(a->launch_max),
	    "slow_count", JI(a->slow_launches)));
	json_object_set_new(an, "scopes", scopes_json(a));
	json_object_set_new(an, "imports", imports_json(a));
	json_object_set_new(an, "gc", gc_json(a));
	json_object_set_new(an, "functions", functions_json(a));
	json_object_set_new(an, "functions_distinct", json_integer(a->nfn));
	json_object_set_new(an, "kernels", kernels_json(a));
	json_object_set_new(an, "kernels_distinct", json_integer(a->nkn));
	json_object_set_new(an, "copies", copies_json(a));
	json_object_set_new(an, "syncs", syncs_json(a));
	json_object_set_new(an, "threads", threads);
	json_object_set_new(an, "processes", procs);
	json_object_set_new(an, "instants", json_integer(JI(a->instants)));
	if (json_object_size(an) < 10 || ist_rules_run(a->rules, an) == NULL) {
		json_decref(an);
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	*out = an;
	return IST_OK;
}
