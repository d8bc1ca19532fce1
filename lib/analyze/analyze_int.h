/*
 * analyze_int.h - shared by the analyzer's files (lib/analyze/); not
 * installed.  The state of the sweep and the containers it keeps it in.
 */
#ifndef IST_ANALYZE_INT_H
#define IST_ANALYZE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

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

/* ---- containers (containers.c) ---- */

struct u64map {
	uint64_t *key;
	uint32_t *val;           /* index + 1, 0 empty */
	uint32_t mask, n;
};

struct dist {
	int64_t *v;
	uint32_t n, cap;
	uint32_t *hist;          /* 64 sub-buckets per power of two */
	uint64_t count;
};

struct topk {
	int64_t s[TOPK], e[TOPK];
	int n;
};

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
	bool own;                /* ranges of its own, beyond the samples */
	int64_t own_first;       /* the first one's start */
	/* /proc samples */
	bool have_cpu, have_wait, have_inv;
	int64_t cpu0_ts, cpu0, cpu1_ts, cpu1, wait0, wait1, inv0, inv1;
	/* Python activity, for the GIL check */
	int64_t py_first, py_last, py_self, cpu_at_py;
	/* the CPU samples that bound the Python window: the last at or
	 * before its first call, the last at or before its last return */
	int64_t cpu_at_py_ts, cpu_py_end, cpu_py_end_ts;
	bool have_cpu_at_py;     /* else the first sample after it starts */
	int64_t wait_at_py, wait_py_end;  /* the same of its run-queue time */
	bool have_wait_at_py;
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
	/* CPU time by function: the innermost call's wall time since the
	 * thread's last thread.cpu_ns sample (win_t, win_v), by function,
	 * costed at the thread's CPU rate over that window when the next
	 * sample closes it */
	bool have_win, win_read;     /* win_v was read, not assumed */
	int64_t win_t, win_v;
	struct u64map wmap;      /* function -> index + 1 in w */
	struct wcost { uint32_t fn; int64_t ns; } *w;
	uint32_t wn, wcap, wlast;   /* wlast: index + 1 of the last */
	/* the window before's calls not made to wait, the time they had
	 * (pnb) and the CPU they were costed (pcpu): what a window holds
	 * beyond a core goes back to them, up to that time */
	struct wcost *pw;
	uint32_t pwn, pwcap;
	int64_t pnb, pcpu;
};

struct proc {
	int64_t pid;
	uint32_t name;
	bool have_rss, have_flt;
	bool captured;           /* a capture record of its own was read */
	int64_t rss0, rss0_ts, rss_peak, rss_peak_ts, rss1, rss1_ts;
	int64_t flt0, flt1, threads_peak, last_sample;
	/* its waited-for children's CPU (process.children_cpu_ns), first
	 * and last read; unseen: of what it rose by, what no sample of
	 * its children's own shows (children_cpu, analysis_json.c) */
	bool have_ccpu;
	int64_t ccpu0, ccpu1, unseen;
	int64_t tick[3];         /* the sampler's last three readings of its
	                          * threads (thread.wait_ns), newest first */
	bool have_ppid;
	int64_t ppid;            /* its parent: the first process.ppid */
	int fold;                /* folded into process fold - 1 (0: not) */
	int64_t helper_cpu;      /* the CPU of those folded into it */
	/* the end of its last call from Python so far (a Python function's
	 * or a builtin's: a loop of builtins alone is the program at work
	 * too), and the last RSS sample at or before it: before the
	 * interpreter's teardown frees memory */
	int64_t call_end, rss_pre, rss_pre_ts;
	int64_t *rts, *rv;       /* RSS samples, halved when full */
	/* InferScope's own buffers in it, as its collectors last wrote
	 * them (rec_py: process.recorder_bytes, the Python collector's;
	 * rec_cuda: process.cuda_recorder_bytes), both, and at their most;
	 * of them, held: what its RSS has risen to hold since they were
	 * said, which its RSS samples leave out (said before they are
	 * faulted in: a sample read in between holds them not yet);
	 * rss_raw: its last sample, as read */
	int64_t rec_py, rec_cuda, rec_py_ts, rec_cuda_ts;  /* and when */
	int64_t rec_bytes, rec_peak, rec_held, rss_raw;
	bool rec_said;
	uint32_t nr, rstride, rskip;
	/* its outermost imports on all its threads, overlapping ones as
	 * one, by start: its start-up, which the steady state leaves out */
	struct ispan { int64_t s, e; } *imps;
	uint32_t nimps, capimps;
	struct blob_copy { uint8_t *p; size_t n; } cmdline;
	/* how it ended, as is-record saw the command it started end
	 * (process.exit_code, process.exit_signal): 0 unknown, 1 an exit
	 * status, 2 a signal; exit_v the status or the signal's number */
	int exit_kind;
	int64_t exit_v;
};

struct pend {
	uint64_t key;            /* thread index << 40 | kind << 32 | name */
	int64_t ns;
};

/* What runs at once on a GPU: a sweep over its running operations (a heap
 * by end time), with the time spent at each level of concurrency */
#define STREAM_MAX 32
struct conc {
	struct run_op { int64_t e; uint8_t copy, si; } *h;
	uint32_t hn, hcap;
	int64_t t;               /* swept up to here */
	int nk, nc, nsa, maxk;   /* kernels, copies, streams running; max nk */
	int64_t kernel_ns, copy_ns, both_ns, multi_kernel_ns, multi_stream_ns;
	int nst;                 /* the last one takes the streams past 31 */
	struct cstream {
		int64_t pid, id;         /* a stream is its process's */
		uint64_t ops, kernels;
		int act;
		bool others;     /* the streams past the 31st */
		int64_t busy, overlap;
	} st[STREAM_MAX];
};

/* A GPU: by its UUID where its device record says it, else by the number
 * its process gave it (processes each see their GPUs from 0) */
struct dev {
	bool seen, info;
	int64_t devno;           /* the number in its processes' records */
	int64_t paused;          /* the capture's pauses between its work */
	uint32_t uuid;           /* interned; 0 unknown */
	uint32_t name;
	int64_t sm, mem;
	double pcie;
	uint64_t ops, kernels, ngaps;
	uint64_t graph_ops;      /* of ops, those a CUDA graph ran */
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
	struct conc conc;
};

struct sstat {               /* scopes and NVTX ranges */
	uint8_t kind;
	uint32_t name;
	int64_t total, max, gpu_ns;
	uint64_t gpu_ops;
	struct dist d;
};

enum { FN_PLAIN, FN_IMPORT, FN_MODULE, FN_GC };

struct fstat {               /* Python and C functions: by name, file
                              * and line */
	uint32_t name, file;
	int64_t line;
	uint32_t same;           /* another of its name: its index + 1 */
	uint64_t count;
	int64_t self, incl, max;
	double cpu;              /* self CPU time (ns), from the samples */
	uint8_t role;            /* FN_: an import, a module's body */
	bool wait;               /* a call made to wait (time.sleep, a lock's
	                          * acquire, select): costed last on CPU */
	int8_t gc_gen;           /* FN_GC: the generation collected */
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
	/* the Python function (fstat index + 1) whose launches ran the most
	 * of its GPU time, and that time */
	uint32_t from;
	int64_t from_ns;
};

struct kfrom {               /* GPU time by (kernel, launching function):
	                          * kfmap's key is the kstat index << 32 |
	                          * the fstat index + 1 */
	int64_t ns;
};

struct xstat {               /* copies by direction and memsets */
	uint64_t count, pageable_count, sync_calls;
	int64_t bytes, ns, pageable_bytes, pageable_ns;
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
	uint32_t pyfn;           /* the innermost Python function's fstat
	                          * index + 1; 0 none */
	bool sync_copy;          /* launched by a synchronous copy call */
};

/* Names interned (an_intern id k is str.e[k]; 0 is ""), with the reader
 * the events come from (an_names_reader), its event being looked at, and
 * its segment's string ids to ours (id + 1; 0: not yet seen), so that a
 * name the reader has seen is found without hashing. */
struct an_names {
	struct ist_strtab str;
	const struct ist_reader *src;
	const struct ist_event *src_ev;
	uint32_t *sidmap;
	size_t nsid;
	const uint32_t *src_sid;  /* the reader's string ids of its event */
};

struct ist_analyzer {
	double slow_launch_ns, launch_delay_ns, kernel_wait_ns;
	struct an_names nm;      /* every name the analysis keeps */
	struct thr *thr;
	uint32_t nthr, capthr;
	uint32_t thr_last;       /* the thread an_thread_of found last */
	struct u64map thrmap;
	struct proc *proc;
	uint32_t nproc, capproc;
	struct u64map procmap;
	struct u64map streamed;  /* pids a header names: with a stream of
	                          * their own (a collector's) */
	struct dev dev[MAXDEV];
	int ndev;
	/* (pid, device number) -> dev index, from device records with a UUID */
	struct devbind { int64_t pid, devno; int slot; } dbind[4 * MAXDEV];
	int nbind;
	struct sstat *sc;
	uint32_t nsc, capsc;
	struct u64map scmap;
	struct fstat *fn;
	uint32_t nfn, capfn;
	struct u64map fnmap;      /* name, file and line -> fn index + 1 */
	uint32_t *fn_of_name;     /* a name's id -> the fn index + 1 of the
	                           * last of that name made (fstat.same) */
	size_t nfn_of_name;
	struct kstat *kn;
	uint32_t nkn, capkn;
	struct u64map knmap;
	struct kfrom *kf;
	uint32_t nkf, capkf;
	struct u64map kfmap;
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
	/* the analysis window (ist_analyzer_window): relative as asked, then
	 * absolute once the first event is placed; and the capture's pauses
	 * (capture records), each [s, e), with their running sums */
	int64_t win_rel[2], win[2];
	bool windowed, win_at;   /* win_at: win given in trace time */
	json_t *win_how;         /* run.window.steps, or NULL */
	bool cap_off;
	int64_t cap_off_at;
	struct pause { int64_t s, e, sum; } *pz;   /* sum: up to its end */
	uint32_t npz, cappz, captures;
	uint64_t left_out;       /* events outside the window or a pause */
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
	uint64_t prog_samples, prog_oversub;  /* system.program_runnable */
	/* system.recorder_runnable: the ticks read, and those at which the
	 * machine's runnable threads outnumbered its cores only with
	 * InferScope's own among them */
	uint64_t rec_samples, rec_oversub;
	int64_t tick_run;        /* the last tick's runnable threads, the
	                          * sampler reading them not counted */
	double util_sum;
	uint64_t util_n;
	bool cpu_samples;        /* thread.cpu_ns seen: functions' CPU time */
	int64_t sys_tick;        /* the sampler's last reading of the system
	                          * (system.runnable), which ends each tick */
	const struct ist_rules *rules;
	/* steps: the candidates (this pass), then what each is made of (the
	 * second pass, ist_analyzer_again) */
	struct ist_steps *steps;
	struct stepwork *sw;
	/* the second pass made while this one goes on (ahead.c), looked at
	 * when events reaches look_at (0: never); ride: the step's measure
	 * taking each event this pass takes, or NULL */
	struct an_ahead *ahead;
	uint64_t look_at;
	struct stepwork *ride;
};

/* ---- across the analyzer's files ---- */

/* The capture's pauses within [x, y) (0 in a trace recorded whole) */
int64_t an_paused(const struct ist_analyzer *a, int64_t x, int64_t y);

/* The dev index of ev's GPU (its pid and device number); MAXDEV - 1 when
 * there are more GPUs than that */
int an_dev_of(struct ist_analyzer *a, const struct ist_event *ev);
int an_dist_add(struct dist *d, int64_t v);
int64_t an_dist_pct(struct dist *d, double p);
void an_dist_release(struct dist *d);
/* The id of (p, n), interned; -1 on ENOMEM.  Id 0 is always "". */
static inline int64_t
an_intern(struct ist_strtab *t, const char *p, size_t n)
{
	uint32_t id = ist_strtab_intern(t, p, n, NULL);

	return id ? (int64_t)id - 1 : -1;
}
/* MurmurHash3's 64-bit finalizer: a key's bits spread over a slot index */
static inline uint64_t
an_mix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	return k ^ (k >> 33);
}
/* Doubles a (ptr, n, cap) array's room: an_push's slow path */
int an_grow(void **p, uint32_t *cap, size_t size);
/* Grows a (ptr, n, cap) array by one zeroed element; NULL on ENOMEM. */
static inline void *
an_push(void **p, uint32_t *n, uint32_t *cap, size_t size)
{
	char *e;

	if (*n == *cap && an_grow(p, cap, size) != 0)
		return NULL;
	e = (char *)*p + (size_t)(*n)++ * size;
	memset(e, 0, size);
	return e;
}
void an_topk_add(struct topk *t, int64_t s, int64_t e);
json_t *an_topk_json(const struct topk *t);
void an_u64map_clear(struct u64map *m);
void an_u64map_release(struct u64map *m);
uint32_t *an_u64map_slot(struct u64map *m, uint64_t key, bool *found);
int an_advance(struct ist_analyzer *a, struct thr *t, int64_t now);
/* Thread t ran [s, e) in its innermost call: that function's share of the
 * window its next CPU sample closes. */
int an_cpu_credit(struct ist_analyzer *a, struct thr *t, int64_t s,
    int64_t e);
int an_copy_op(struct ist_analyzer *a, const struct ist_event *ev);
/* Names of CUDA calls and Python functions (host.c) */
/* inline: a literal's length is known where it is called */
static inline bool
an_name_is(const struct ist_event *ev, const char *s)
{
	size_t n = strlen(s);

	return ev->name.n == n && memcmp(ev->name.p, s, n) == 0;
}
bool an_name_has(const struct ist_event *ev, const char *s);
/* CPython's import entry point, _find_and_load (every `import` of a module
 * not yet loaded runs it; frozen or not) */
bool an_is_import(const char *p, size_t n);
/* A C call made to wait (time.sleep, a lock's acquire, epoll.poll, ...) */
bool an_is_wait(const char *p, size_t n);
/* The same, remembered by the name's id in *cache (of *n; 1 a wait, 2
 * not, 0 not yet asked; grown as ids come, freed by the caller) */
bool an_is_wait_id(uint8_t **cache, size_t *n, uint32_t id, const char *p,
    size_t len);
/* A launch, copy or memset call: one that starts GPU work */
bool an_is_launch(const struct ist_event *ev);
/* A CUDA call that blocks the host until the GPU catches up: "memcpy" (a
 * synchronous copy), "free", or NULL */
const char *an_implicit_sync(const struct ist_event *ev);
int an_cmp_i64(const void *a, const void *b);
void an_import_done(struct ist_analyzer *a, const struct frame *f);
int an_kernel(struct ist_analyzer *a, const struct ist_event *ev);
/* Ends the concurrency sweep of d (everything has run) */
void an_conc_drain(struct conc *c);
void an_util_add(struct dev *d, int64_t s, int64_t e);
int an_counter(struct ist_analyzer *a, const struct ist_event *ev);
/* ev's name (a sync's kind) interned by an_name_id */
int an_host_range(struct ist_analyzer *a, const struct ist_event *ev,
    int64_t name);
int64_t an_open_count(struct thr *t, uint32_t stat, int delta);
int64_t an_names_id_slow(struct an_names *nm, const struct ist_event *ev,
    enum ist_field f);
/* ev's string field f interned: through the reader's string id, when ev is
 * the reader's own event and the id was seen before, without hashing */
static inline int64_t
an_names_id(struct an_names *nm, const struct ist_event *ev, enum ist_field f)
{
	uint32_t sid;

	if (!IST_HAS(ev, f))
		return 0;
	if (ev == nm->src_ev && ev->type != IST_HEADER &&
	    (sid = nm->src_sid[f]) != 0 && sid < nm->nsid && nm->sidmap[sid])
		return (int64_t)nm->sidmap[sid] - 1;
	return an_names_id_slow(nm, ev, f);
}
static inline int64_t
an_name_id(struct ist_analyzer *a, const struct ist_event *ev,
    enum ist_field f)
{
	return an_names_id(&a->nm, ev, f);
}
/* The reader the events come from (NULL: none, or no longer) */
void an_names_reader(struct an_names *nm, const struct ist_reader *r);
/* Each event, before its names are asked for: a header starts a segment,
 * whose string ids are new */
void an_names_event(struct an_names *nm, const struct ist_event *ev);
void an_names_release(struct an_names *nm);
struct proc *an_proc_of(struct ist_analyzer *a, int64_t pid);
struct proc *an_thr_proc(struct ist_analyzer *a, struct thr *t);
void an_proc_rss_restart(struct proc *p);
/* Thread t made a call from Python that ended at end: its process was at
 * work until then at least.  Inline: every call recorded asks (a call
 * out to it cost is-analyze 1.7% more instructions on builtins) */
static inline int
an_proc_call_end(struct ist_analyzer *a, struct thr *t, int64_t end)
{
	struct proc *p = t->proc1 ? &a->proc[t->proc1 - 1] :
	    an_thr_proc(a, t);

	if (p == NULL)
		return -1;
	if (end > p->call_end)
		p->call_end = end;
	return 0;
}
int64_t an_stat_of(struct u64map *m, void **arr, uint32_t *n, uint32_t *cap,
    size_t size, uint64_t key, bool *created);
struct thr *an_thread_of(struct ist_analyzer *a, int64_t pid, int64_t tid);

/* ---- the second pass ahead (ahead.c) ---- */
struct ist_again;
/* Before the first event: again's trace may be read during the pass */
void an_ahead_begin(struct ist_analyzer *a, const struct ist_again *again);
/* When a->events reaches a->look_at: the step that leads now */
void an_ahead_look(struct ist_analyzer *a);
/* Each event the first pass takes, while a->ride is set */
void an_ahead_ride(struct ist_analyzer *a, const struct ist_event *ev);
/* At the first pass's end, the step chosen: the second pass already made
 * for it, or NULL (read again) */
struct stepwork *an_ahead_take(struct ist_analyzer *a, const char *name,
    int64_t pid, int64_t tid, enum ist_type type, int64_t line, int loop);
void an_ahead_free(struct ist_analyzer *a);

/* ---- steps (stepwork.c) ---- */
struct stepwork;
struct ist_steps;
/* The measure of the step given: its name, process, thread, record, line
 * and loop (ist_steps_chosen) */
enum ist_status an_stepwork_new(struct stepwork **out,
    struct ist_analyzer *a, const char *name, int64_t pid, int64_t tid,
    enum ist_type type, int64_t line, int loop, struct ist_error *err);
/* The reader the second pass's events come from (an_names_reader) */
void an_stepwork_reader(struct stepwork *w, const struct ist_reader *r);
/* Every event of the second pass as the reader gives it, headers and
 * analyses included (an_stepwork_add the others) */
enum ist_status an_stepwork_event(struct stepwork *w,
    const struct ist_event *ev, int64_t from, int64_t to,
    struct ist_error *err);
/* Whether a step was replayed with GPU work, which the bases serve: a
 * pass made before an_stepwork_bases() is then not the pass */
bool an_stepwork_needs_bases(const struct stepwork *w);
/* Every event of the second pass; from, to: the analysis window (steps
 * wholly inside it are measured). */
enum ist_status an_stepwork_add(struct stepwork *w, const struct ist_event *ev,
    int64_t from, int64_t to, struct ist_error *err);
/* After the first pass: what the replays take from it */
void an_stepwork_bases(struct stepwork *w);
/* The `steps` section (null: no step) */
json_t *an_stepwork_json(struct stepwork *w, const struct ist_steps *s);
/* The step's name, record, file and line (a function's), count and
 * measured: the `steps` object's first keys (analysis_json.c) */
json_t *an_step_json(const struct ist_steps *s, uint64_t count,
    uint64_t measured);
void an_stepwork_free(struct stepwork *w);

#define JI(v) ((json_int_t)(v))

#endif
