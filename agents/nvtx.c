/*
 * nvtx.c - libinferscope-nvtx.so, the NVTX v3 injection library.
 *
 * is-record points NVTX_INJECTION64_PATH at it; the first NVTX call of any
 * library embedding the NVTX headers (a C program, torch, NCCL) loads it and
 * calls InitializeInjectionNvtx2, where we fill the CORE and CORE2 callback
 * tables.  Ranges and marks go into per-thread rings of this process's own
 * collector (agents/collector.c), written to $INFERSCOPE_DIR/PID-nvtx.ist, in
 * the host clock.  No CUDA is needed.  Idempotent: every library that
 * embeds NVTX initialises through here; the collector starts once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "collector.h"
#include "stream.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_STACK 256
#define CACHE 1024

struct domain {
	char *name;                  /* NULL: the default domain */
};

struct nframe {
	int64_t t0;
	uint32_t id;
	int cw;                      /* the capture range it opened, or -1 */
};

struct cache_ent {
	const void *key;             /* message pointer */
	const struct domain *dom;
	char *copy;                  /* its text when cached */
	uint32_t id;
};

/* push/pop ranges nest per thread and per domain (the NVTX spec): one
 * stack per domain this thread pushed in, NULL the default domain */
struct dstack {
	const struct domain *dom;
	int depth;
	struct nframe *st;           /* MAX_STACK frames, the rest counted */
};

struct tstate {
	struct ist_ring *ring;
	struct dstack *ds;
	int nds;
	struct cache_ent cache[CACHE];
};

static __thread struct tstate *me;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int started;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * start/end ranges, which may end on another thread than they started on:
 * by id, behind the lock.  An id is its slot + 1 in the low 32 bits and
 * the slot's use count above, so that end() finds its range in O(1) and
 * an id ended twice (or never ours) finds nothing; freed slots are reused
 * last in, first out.
 */
struct open_range {
	uint64_t id;
	int64_t t0, tid;
	uint32_t name;
	uint32_t next_free;          /* slot + 1 of the next free one */
	int cw;                      /* the capture range it opened, or -1 */
};

/* the names of --capture-range nvtx:NAME: (definition id, which), set
 * under the lock, read without it (at most CAPS, then count published) */
#define CAPS 64
static struct { uint32_t id; int which; } caps[CAPS];
static _Atomic int ncaps;
static struct open_range *open_r;
static uint32_t open_cap, open_used, free_top;

/* names: (domain, text) -> definition id, behind the lock */
struct name_ent {
	const struct domain *dom;
	char *text;
	uint32_t id;
};
static struct name_ent *names;
static size_t names_n, names_cap;

static struct tstate *
tstate(void)
{
	if (me == NULL && started) {
		me = calloc(1, sizeof(*me));
		if (me)
			me->ring = ist_coll_ring();
	}
	return me;
}

static uint64_t
hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

static uint32_t
global_id(const struct domain *dom, const char *text)
{
	uint32_t id = 0;
	size_t i;
	int which;

	pthread_mutex_lock(&lock);
	if ((names_n + 1) * 2 > names_cap) {
		size_t cap = names_cap ? names_cap * 2 : 1024;
		struct name_ent *nt = calloc(cap, sizeof(*nt));
		if (nt == NULL)
			goto out;
		for (size_t k = 0; k < names_cap; k++) {
			if (names[k].text == NULL)
				continue;
			size_t j = (hash_str(names[k].text) ^
			    (uintptr_t)names[k].dom) & (cap - 1);
			while (nt[j].text)
				j = (j + 1) & (cap - 1);
			nt[j] = names[k];
		}
		free(names);
		names = nt;
		names_cap = cap;
	}
	i = (hash_str(text) ^ (uintptr_t)dom) & (names_cap - 1);
	while (names[i].text) {
		if (names[i].dom == dom && strcmp(names[i].text, text) == 0) {
			id = names[i].id;
			goto out;
		}
		i = (i + 1) & (names_cap - 1);
	}
	/* the definition carries the domain where functions carry a file */
	id = ist_coll_define_func(text, dom && dom->name ? dom->name : NULL,
	    0);
	if (id && (which = ist_capture_nvtx_which(text)) >= 0 &&
	    ncaps < CAPS) {
		caps[ncaps].id = id;
		caps[ncaps].which = which;
		atomic_fetch_add(&ncaps, 1);
	}
	if (id && (names[i].text = strdup(text)) != NULL) {
		names[i].dom = dom;
		names[i].id = id;
		names_n++;
	}
out:
	pthread_mutex_unlock(&lock);
	return id;
}

/* The id of a message: a per-thread cache by address, checked by text. */
static uint32_t
name_id(struct tstate *t, const struct domain *dom, const char *text)
{
	struct cache_ent *c;
	uint32_t id;

	if (text == NULL)
		text = "";
	c = &t->cache[(((uintptr_t)text >> 3) ^ (uintptr_t)dom) & (CACHE - 1)];
	if (c->key == text && c->dom == dom && c->copy &&
	    strcmp(c->copy, text) == 0)
		return c->id;
	if ((id = global_id(dom, text)) == 0)
		return 0;
	free(c->copy);
	c->copy = strdup(text);
	c->key = text;
	c->dom = dom;
	c->id = id;
	return id;
}

/* UTF-32 (wchar_t on Linux) to UTF-8, truncated to the buffer. */
static const char *
wide(const wchar_t *w, char *buf, size_t cap)
{
	size_t n = 0;

	for (; w && *w && n + 5 < cap; w++) {
		uint32_t c = (uint32_t)*w;
		if (c < 0x80) {
			buf[n++] = (char)c;
		} else if (c < 0x800) {
			buf[n++] = (char)(0xc0 | c >> 6);
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			buf[n++] = (char)(0xe0 | c >> 12);
			buf[n++] = (char)(0x80 | (c >> 6 & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			buf[n++] = (char)(0xf0 | c >> 18);
			buf[n++] = (char)(0x80 | (c >> 12 & 0x3f));
			buf[n++] = (char)(0x80 | (c >> 6 & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	buf[n] = '\0';
	return buf;
}

static uint32_t
attr_id(struct tstate *t, const struct domain *dom,
    const nvtxEventAttributes_t *a)
{
	char buf[1024];

	if (a == NULL)
		return name_id(t, dom, "");
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		return name_id(t, dom, a->message.ascii);
	case NVTX_MESSAGE_TYPE_UNICODE:
		return global_id(dom, wide(a->message.unicode, buf,
		    sizeof(buf)));
	case NVTX_MESSAGE_TYPE_REGISTERED:
		/* our handles point at the registered text */
		return name_id(t, dom, a->message.registered ?
		    (const char *)a->message.registered : "");
	default:
		return name_id(t, dom, "");
	}
}

/* ---- callbacks ---- */

/* A range of name id opens: the capture range it opens a window for
 * (recording switched on before its start is read), or -1 */
static int
capture_open(uint32_t id)
{
	int n = atomic_load(&ncaps);

	for (int i = 0; i < n; i++)
		if (caps[i].id == id)
			return ist_capture_nvtx_open(caps[i].which) ?
			    caps[i].which : -1;
	return -1;
}

/* A range [t0, t1] of name id ends on ring r (started on thread tid):
 * written as far as a capture window holds it; then the capture range it
 * opened, if any, closes. */
static void
range_end(struct ist_ring *r, uint32_t id, int64_t t0, int64_t t1,
    int64_t tid, int cw)
{
	int cut = 0;

	if (ist_coll_clip(&t0, &t1, &cut)) {
		if (r == NULL || tid == r->tid)
			ist_coll_cut(r, IST_REC_NVTX, id, t0, t1, cut);
		else    /* started on another thread: written on that one */
			ist_coll_range_on(r, id, t0, t1, tid);
	}
	if (cw >= 0)
		ist_capture_nvtx_close(cw);
}

static void
mark(const struct domain *dom, uint32_t (*idf)(struct tstate *,
    const struct domain *, const void *), const void *arg)
{
	struct tstate *t = tstate();
	int64_t now = ist_ticks();
	uint32_t id;

	if (t && ist_capture_recording() && (id = idf(t, dom, arg)) != 0)
		ist_coll_timed(t->ring, IST_REC_NVTX_MARK, id, now, 0);
}

static uint32_t
id_ascii(struct tstate *t, const struct domain *dom, const void *m)
{
	return name_id(t, dom, m);
}

static uint32_t
id_wide(struct tstate *t, const struct domain *dom, const void *m)
{
	char buf[1024];
	(void)t;
	return global_id(dom, wide(m, buf, sizeof(buf)));
}

static uint32_t
id_attr(struct tstate *t, const struct domain *dom, const void *a)
{
	return attr_id(t, dom, a);
}

/* This thread's stack of domain dom; NULL when there is none and create
 * is false, or no memory */
static struct dstack *
dstack(struct tstate *t, const struct domain *dom, bool create)
{
	struct dstack *ds;

	for (int i = 0; i < t->nds; i++)
		if (t->ds[i].dom == dom)
			return &t->ds[i];
	if (!create || (ds = realloc(t->ds, (size_t)(t->nds + 1) *
	    sizeof(*ds))) == NULL)
		return NULL;
	t->ds = ds;
	ds = &t->ds[t->nds];
	*ds = (struct dstack){ dom, 0, calloc(MAX_STACK, sizeof(*ds->st)) };
	if (ds->st == NULL)
		return NULL;
	t->nds++;
	return ds;
}

static int
push(const struct domain *dom, uint32_t (*idf)(struct tstate *,
    const struct domain *, const void *), const void *arg)
{
	struct tstate *t = tstate();
	int64_t now = ist_ticks();
	struct dstack *ds;

	if (t == NULL || (ds = dstack(t, dom, true)) == NULL)
		return -1;
	if (ds->depth < MAX_STACK) {
		uint32_t id = idf(t, dom, arg);
		int cw = ncaps ? capture_open(id) : -1;
		ds->st[ds->depth] = (struct nframe){ cw >= 0 ? ist_ticks() :
		    now, id, cw };
	}
	return ds->depth++;
}

static int
pop(const struct domain *dom)
{
	struct tstate *t = tstate();
	int64_t now = ist_ticks();
	struct dstack *ds;

	if (t == NULL || (ds = dstack(t, dom, false)) == NULL ||
	    ds->depth == 0)
		return -1;
	ds->depth--;
	if (ds->depth < MAX_STACK && ds->st[ds->depth].id)
		range_end(t->ring, ds->st[ds->depth].id, ds->st[ds->depth].t0,
		    now, t->ring ? t->ring->tid : 0, ds->st[ds->depth].cw);
	return ds->depth;
}

/* A free slot of open_r, under the lock; UINT32_MAX when out of memory */
static uint32_t
open_slot(void)
{
	uint32_t i;

	if (free_top) {
		i = free_top - 1;
		free_top = open_r[i].next_free;
		return i;
	}
	if (open_used == open_cap) {
		uint32_t cap = open_cap ? open_cap * 2 : 64;
		struct open_range *no;
		if (cap > (1u << 30) ||
		    (no = realloc(open_r, cap * sizeof(*no))) == NULL)
			return UINT32_MAX;
		memset(no + open_cap, 0, (cap - open_cap) * sizeof(*no));
		open_r = no;
		open_cap = cap;
	}
	return open_used++;
}

static nvtxRangeId_t
start(const struct domain *dom, uint32_t (*idf)(struct tstate *,
    const struct domain *, const void *), const void *arg)
{
	struct tstate *t = tstate();
	int64_t now = ist_ticks();
	struct open_range *o;
	uint32_t name, i;
	uint64_t id = 0;
	int cw;

	if (t == NULL || t->ring == NULL || (name = idf(t, dom, arg)) == 0)
		return 0;
	if ((cw = ncaps ? capture_open(name) : -1) >= 0)
		now = ist_ticks();
	pthread_mutex_lock(&lock);
	if ((i = open_slot()) != UINT32_MAX) {
		o = &open_r[i];
		/* the slot's uses so far above its number: never 0 */
		id = ((o->id >> 32) + 1) << 32 | (i + 1);
		*o = (struct open_range){ id, now, t->ring->tid, name, 0, cw };
	} else if (cw >= 0) {
		ist_capture_nvtx_close(cw);
	}
	pthread_mutex_unlock(&lock);
	return id;
}

static void
end(nvtxRangeId_t id)
{
	struct tstate *t = tstate();
	int64_t now = ist_ticks();
	uint32_t i = (uint32_t)id - 1;
	struct open_range r = { 0 };

	if (t == NULL || (uint32_t)id == 0)
		return;
	pthread_mutex_lock(&lock);
	if (i < open_used && open_r[i].id == id && open_r[i].name) {
		r = open_r[i];
		open_r[i].name = 0;
		open_r[i].next_free = free_top;
		free_top = i + 1;
	}
	pthread_mutex_unlock(&lock);
	if (r.name == 0)
		return;
	range_end(t->ring, r.name, r.t0, now, r.tid, r.cw);
}

static void NVTX_API cb_markEx(const nvtxEventAttributes_t *a)
{ mark(NULL, id_attr, a); }
static void NVTX_API cb_markA(const char *m) { mark(NULL, id_ascii, m); }
static void NVTX_API cb_markW(const wchar_t *m) { mark(NULL, id_wide, m); }
static nvtxRangeId_t NVTX_API cb_startEx(const nvtxEventAttributes_t *a)
{ return start(NULL, id_attr, a); }
static nvtxRangeId_t NVTX_API cb_startA(const char *m)
{ return start(NULL, id_ascii, m); }
static nvtxRangeId_t NVTX_API cb_startW(const wchar_t *m)
{ return start(NULL, id_wide, m); }
static void NVTX_API cb_end(nvtxRangeId_t id) { end(id); }
static int NVTX_API cb_pushEx(const nvtxEventAttributes_t *a)
{ return push(NULL, id_attr, a); }
static int NVTX_API cb_pushA(const char *m) { return push(NULL, id_ascii, m); }
static int NVTX_API cb_pushW(const wchar_t *m) { return push(NULL, id_wide, m); }
static int NVTX_API cb_pop(void) { return pop(NULL); }

static void
thread_name(uint32_t tid, const char *name)
{
	struct tstate *t = tstate();

	/* only a thread naming itself: the record belongs to its ring */
	if (t && t->ring && (int64_t)tid == t->ring->tid)
		ist_coll_thread_name(t->ring, name);
}

static void NVTX_API cb_nameThreadA(uint32_t tid, const char *name)
{ if (name) thread_name(tid, name); }
static void NVTX_API cb_nameThreadW(uint32_t tid, const wchar_t *name)
{
	char buf[1024];
	if (name)
		thread_name(tid, wide(name, buf, sizeof(buf)));
}

static void NVTX_API cb_dmark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{ mark((const struct domain *)d, id_attr, a); }
static nvtxRangeId_t NVTX_API cb_dstart(nvtxDomainHandle_t d,
    const nvtxEventAttributes_t *a)
{ return start((const struct domain *)d, id_attr, a); }
static void NVTX_API cb_dend(nvtxDomainHandle_t d, nvtxRangeId_t id)
{ (void)d; end(id); }
static int NVTX_API cb_dpush(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{ return push((const struct domain *)d, id_attr, a); }
static int NVTX_API cb_dpop(nvtxDomainHandle_t d)
{ return pop((const struct domain *)d); }

static nvtxStringHandle_t NVTX_API
cb_registerA(nvtxDomainHandle_t d, const char *s)
{
	(void)d;
	return (nvtxStringHandle_t)strdup(s ? s : "");   /* kept for good */
}

static nvtxStringHandle_t NVTX_API
cb_registerW(nvtxDomainHandle_t d, const wchar_t *s)
{
	char buf[1024];
	(void)d;
	return (nvtxStringHandle_t)strdup(wide(s, buf, sizeof(buf)));
}

static nvtxDomainHandle_t NVTX_API
cb_domainA(const char *name)
{
	struct domain *d = calloc(1, sizeof(*d));

	if (d)
		d->name = strdup(name ? name : "");
	return (nvtxDomainHandle_t)d;
}

static nvtxDomainHandle_t NVTX_API
cb_domainW(const wchar_t *name)
{
	char buf[1024];
	return cb_domainA(wide(name, buf, sizeof(buf)));
}

static void NVTX_API cb_domainDestroy(nvtxDomainHandle_t d) { (void)d; }

/* ---- start, stop, fork ---- */

static char path_buf[4096];

static void
stop(void)
{
	struct ist_error e;

	if (started)
		ist_coll_stop(&e);
	started = 0;
}

static void
after_fork(void)
{
	struct ist_error e;
	const char *dir = getenv("INFERSCOPE_DIR");

	me = NULL;     /* the parent's stack means nothing here */
	if (!started || dir == NULL)
		return;
	snprintf(path_buf, sizeof(path_buf), "%s/%ld-nvtx.ist", dir,
	    (long)getpid());
	if (ist_coll_after_fork(path_buf, &e) != IST_OK)
		started = 0;
}

static void
start_collector(void)
{
	struct ist_coll_opts o = { 0 };
	struct ist_error e;
	const char *dir = getenv("INFERSCOPE_DIR");

	if (dir == NULL || getenv("INFERSCOPE_ENABLED") == NULL ||
	    strcmp(getenv("INFERSCOPE_ENABLED"), "1") != 0)
		return;
	snprintf(path_buf, sizeof(path_buf), "%s/%ld-nvtx.ist", dir,
	    (long)getpid());
	o.path = path_buf;
	o.producer = "inferscope-nvtx " IST_PACKAGE_VERSION;
	o.budget_bytes = ist_env_budget();
	o.ring_bytes = ist_env_ring() ? o.budget_bytes : 0;
	o.flush_interval_ms = 250;
	if (ist_coll_start(&o, &e) != IST_OK)
		return;
	started = 1;
	atexit(stop);
	pthread_atfork(NULL, NULL, after_fork);
}

static void
fill(NvtxGetExportTableFunc_t get, NvtxCallbackModule module,
    const NvtxFunctionPointer *fns, unsigned n)
{
	const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
	NvtxFunctionTable table = NULL;
	unsigned size = 0;

	if (cb == NULL || cb->struct_size < sizeof(*cb) ||
	    !cb->GetModuleFunctionTable(module, &table, &size) || table == NULL)
		return;
	for (unsigned i = 1; i < n && i < size; i++)
		if (fns[i] && table[i])
			*table[i] = fns[i];
}

#define F(x) ((NvtxFunctionPointer)(x))

EXPORT int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);

EXPORT int NVTX_API
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	static const NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE] = {
		[NVTX_CBID_CORE_MarkEx] = F(cb_markEx),
		[NVTX_CBID_CORE_MarkA] = F(cb_markA),
		[NVTX_CBID_CORE_MarkW] = F(cb_markW),
		[NVTX_CBID_CORE_RangeStartEx] = F(cb_startEx),
		[NVTX_CBID_CORE_RangeStartA] = F(cb_startA),
		[NVTX_CBID_CORE_RangeStartW] = F(cb_startW),
		[NVTX_CBID_CORE_RangeEnd] = F(cb_end),
		[NVTX_CBID_CORE_RangePushEx] = F(cb_pushEx),
		[NVTX_CBID_CORE_RangePushA] = F(cb_pushA),
		[NVTX_CBID_CORE_RangePushW] = F(cb_pushW),
		[NVTX_CBID_CORE_RangePop] = F(cb_pop),
		[NVTX_CBID_CORE_NameOsThreadA] = F(cb_nameThreadA),
		[NVTX_CBID_CORE_NameOsThreadW] = F(cb_nameThreadW),
	};
	static const NvtxFunctionPointer core2[NVTX_CBID_CORE2_SIZE] = {
		[NVTX_CBID_CORE2_DomainMarkEx] = F(cb_dmark),
		[NVTX_CBID_CORE2_DomainRangeStartEx] = F(cb_dstart),
		[NVTX_CBID_CORE2_DomainRangeEnd] = F(cb_dend),
		[NVTX_CBID_CORE2_DomainRangePushEx] = F(cb_dpush),
		[NVTX_CBID_CORE2_DomainRangePop] = F(cb_dpop),
		[NVTX_CBID_CORE2_DomainRegisterStringA] = F(cb_registerA),
		[NVTX_CBID_CORE2_DomainRegisterStringW] = F(cb_registerW),
		[NVTX_CBID_CORE2_DomainCreateA] = F(cb_domainA),
		[NVTX_CBID_CORE2_DomainCreateW] = F(cb_domainW),
		[NVTX_CBID_CORE2_DomainDestroy] = F(cb_domainDestroy),
	};

	if (get == NULL)
		return 0;
	pthread_once(&once, start_collector);
	if (!started)
		return 0;      /* NVTX stays a no-op: nothing is lost */
	fill(get, NVTX_CB_MODULE_CORE, core, NVTX_CBID_CORE_SIZE);
	fill(get, NVTX_CB_MODULE_CORE2, core2, NVTX_CBID_CORE2_SIZE);
	return 1;
}
