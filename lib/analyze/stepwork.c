/*
 * stepwork.c - what each step is made of, its critical path, and what a
 * change would save: the analysis's `steps` section (formats/analysis.md).
 *
 * The first pass (analyze.c) counts the candidates for a step (steps.c) and
 * chooses one; this second pass over the same trace cuts every occurrence
 * of the chosen step on its thread into segments that tile it (host work,
 * CUDA launch and copy calls, synchronisations, garbage collections,
 * imports, sleeps and other waits) and collects the GPU work each launch
 * started (by correlation).  Each step is then replayed: the host runs its
 * segments in order, each GPU op starts when both its launch (plus the
 * launch latency the step shows) and the op before it on its stream allow,
 * and a synchronisation ends its return latency after the GPU work it
 * waited for.  The replay with nothing changed gives the critical path; the
 * replay with one change gives what that change saves.  Steps start
 * replayed with their GPU idle.
 *
 * Memory: the last few steps' segments and ops (steps are finished once a
 * later one starts and the GPU work of the earlier ones has arrived), the
 * distributions (exact to 4096 steps, then buckets), the slowest steps and
 * the synchronisation sites.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_int.h"
#include "steps.h"

#define RING 4                   /* steps open at once */
#define WINS 16                  /* waits kept for the other threads */
#define SLOWEST 5

enum seg_kind { S_HOST, S_LAUNCH, S_SYNC, S_GC, S_IMPORT, S_WAIT, S_KINDS };
/* critical-path categories: the segments', then GPU work */
enum { C_KERNEL = S_KINDS, C_COPY, C_CATS };
static const char *const cat_name[C_CATS] = { "host", "cuda_api", "sync",
    "gc", "import", "wait", "kernel", "copy" };

struct seg {
	int64_t s, e;
	uint8_t kind;
	bool memcpy_sync;        /* a synchronous copy call (cudaMemcpy) */
	bool graph;              /* a kernel launch (graphable) */
	bool lead;               /* host work before the step's first launch,
				  * sync or wait (what `overlap` moves) */
	uint32_t site;           /* sync: its site's id */
	uint32_t who;            /* host: the call of the step's it ran in
	                          * (interned name + 1), 0 its own code */
	int64_t obs;             /* sync: the recorded end of the GPU work
				  * launched before it in the step */
	int64_t obs_own;         /* the recorded end of its own ops */
	int op1, nops;           /* ops it launched: first index, count */
	/* replay */
	int64_t rs, re;
	int wait_op;             /* the op whose end it waited for, or -1 */
};

struct op {
	int64_t s, e, stream, bytes;
	uint8_t cat;             /* C_KERNEL or C_COPY */
	bool pageable;
	int dir;                 /* 0 h2d, 1 d2h, 2 d2d, 3 memset */
	uint32_t name;
	int seg;                 /* its launch */
	int next;                /* the next op of the same launch, or -1 */
	/* replay */
	int64_t rs, re;
	int after;               /* the op before it on its stream, or -1 */
};

struct frame2 {
	int64_t end;
	uint32_t name, file;
	int64_t line;
	bool py;
};

/* another thread (of the step's process or another): its open calls, and
 * how far its time has been given to them */
struct oframe {
	int64_t end;
	uint32_t name;           /* interned */
	bool py, wait;
};
struct othr {
	int64_t cur;
	struct oframe *st;
	uint32_t n, cap;
	bool listed;             /* in stepwork's act */
	bool profiler;           /* InferScope's own (ist_recorder_thread) */
	int64_t pid;
	int64_t busy, busy_w;    /* its time in calls (not waits), and the
	                          * part of it within the steps' waits */
	int64_t busy_wc;         /* of busy_w, inside a C call */
	/* its time within the waits by function (who: the stepwork's wo):
	 * since its last CPU sample (0), and between that one and the one
	 * before (1, iv: its time in calls, of it within the waits, and its
	 * CPU time), given to wo at the share of its time in calls on a core
	 * the interval tells (frac: the last one's, -1 none yet) once the
	 * next sample comes.  A sample of the sampler's lags a running
	 * thread's clock by up to a scheduler tick, which the interval after
	 * it holds beyond its time in calls: given back to the one before */
	struct pendset {
		struct hostby *e;
		uint32_t n, cap;
		struct u64map map;
	} pend[2];
	struct ival { bool have; double db, bw, part; } iv;
	double frac;
	/* its CPU time (0) and run-queue time (1) counters: the last sample
	 * of each, the waits' time and its busy times then */
	struct { int64_t ts, w, busy, busy_w; double v; bool have; } c[2];
	double in[2];            /* what of each fell within the waits, ns */
	int64_t first, first_w;  /* its first call's start (0: none), and
	                          * the waits' time then */
};

struct open_step {
	bool used;
	uint64_t index;          /* 1 the first in the trace */
	int64_t s, e, gpu_credit_to;
	struct seg *seg;
	uint32_t nseg, capseg;
	struct op *op;
	uint32_t nop, capop;
	struct u64map corr;      /* (pid, correlation) -> seg + 1 */
	int64_t cursor;          /* host time cut into segments so far */
	struct frame2 *fr;       /* the thread's open calls */
	uint32_t nfr, capfr;
	int64_t gpu_busy;
	uint32_t imp_mod;        /* the first module an import in it ran */
	uint32_t who;            /* the step's call running now (a seg's who) */
};

struct comp {                    /* what a finished step is made of */
	uint64_t index;
	int64_t s, wall, host, gpu, copy, sync, gc, imp, wait, kmax;
	uint32_t kname, sync_site, imp_mod;
};

struct site {
	uint32_t site;
	uint64_t steps;          /* steps it synchronised in */
	int64_t saved;
};

enum { W_OVERLAP, W_PINNED, W_GRAPH, W_GC, W_IMPORT, W_WAIT, W_FIXED };

struct stepwork {
	struct ist_analyzer *a;  /* read only for the bases, at the end */
	struct an_names nm;      /* the names it keeps, its own: it may read
	                          * in a thread of its own (ahead.c) */
	int64_t pid, tid;
	enum ist_type type;
	int64_t line;            /* a function's: others of its name differ */
	uint32_t name;           /* interned */
	size_t name_n;
	struct open_step ring[RING];
	uint64_t seen;           /* occurrences so far (an iterator's:
	                          * iterations) */
	int64_t last_end;
	/* a loop's call, an iterator's __next__ or a generator's run (enum
	 * ist_step_loop): a step is an iteration of its loop, from one call
	 * to the next, open (its end INT64_MAX) until the next call comes */
	int loop;
	bool iter_on;            /* an iteration under way */
	struct open_step *iter_open;  /* it, measured: in the window */
	int64_t next_end;        /* the end of the step thread's last
	                          * builtins.next: a call inside is no loop's */
	/* the GPU's busy union, as ops arrive */
	bool have_u;
	int64_t us, ue;
	bool gpu_ops;
	/* results */
	uint64_t steps;
	struct dist d_wall, d_host, d_gpu, d_idle, d_copy, d_sync;
	struct comp slow[SLOWEST];
	int nslow;
	struct comp *all;        /* components of the first steps (median) */
	int64_t sum_wall, sum_replay, sum_abs_err;
	int64_t span_s, span_e;  /* the first measured step's start, the
	                          * last one's end */
	int64_t cp[C_CATS];
	int64_t saved[W_FIXED];
	uint64_t applies[W_FIXED];
	int64_t pre_sum;         /* host work before the first wait */
	struct site *site;
	uint32_t nsite, capsite;
	double pinned_gbps[3];   /* per direction, the basis */
	const char *pinned_basis[3];
	int64_t graph_launch_ns; /* one launch call, the basis */
	int64_t launch_lat_sum;
	uint64_t launch_lat_n;
	/* host time on the critical path by the step's call it ran in */
	struct hostby { uint32_t who; int64_t ns; } *hb;
	uint32_t nhb, caphb, hb_last;
	struct u64map hbmap;
	/* what the other threads (every process's) ran while the steps
	 * waited: the last waits (in time order, apart), each other thread's
	 * open calls, and their time within the waits by Python function */
	struct win { int64_t s, e; } win[WINS];
	uint64_t nwin;           /* ever: the newest is win[(nwin-1) % WINS] */
	int64_t wait_ns;         /* the measured steps' wait segments */
	struct othr *oth;
	uint32_t noth, capoth;
	struct u64map othmap;
	uint32_t *act;           /* the oth with open calls (and some that
	                          * closed theirs since), by index */
	uint32_t nact, capact;
	uint8_t *owait;          /* an interned name: a wait (an_is_wait_id) */
	size_t nowait;
	struct hostby *wo;       /* who: the function's interned name + 1 */
	uint32_t nwo, capwo;
	struct u64map womap;
	int64_t wo_ns;
	int64_t wo_c_ns;         /* of it, inside a C call (a Python thread
	                          * waiting for the GIL is mostly not) */
	/* and on how many cores: each other thread's CPU (thread.cpu_ns)
	 * and run-queue time (thread.wait_ns) between two of its samples
	 * given to the waits (oth_counter; wcum: the waits' time so far) */
	int64_t wcum;
	bool needs_bases;        /* a step replayed with GPU work: the bases
	                          * were asked for */
	bool oom;
};

enum ist_status
an_stepwork_new(struct stepwork **out, struct ist_analyzer *a,
    const char *name, int64_t pid, int64_t tid, enum ist_type type,
    int64_t line, int loop, struct ist_error *err)
{
	struct stepwork *w;
	int64_t id;

	*out = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL ||
	    an_intern(&w->nm.str, "", 0) != 0 ||
	    (id = an_intern(&w->nm.str, name, strlen(name))) < 0) {
		an_stepwork_free(w);
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	w->a = a;
	w->pid = pid;
	w->tid = tid;
	w->type = type;
	w->line = line;
	w->name = (uint32_t)id;
	w->name_n = strlen(name);
	w->loop = type == IST_CPU_CALL ? loop : IST_LOOP_NONE;
	w->last_end = INT64_MIN;
	w->next_end = INT64_MIN;
	w->span_s = INT64_MAX;
	w->span_e = INT64_MIN;
	*out = w;
	return IST_OK;
}

void
an_stepwork_reader(struct stepwork *w, const struct ist_reader *r)
{
	an_names_reader(&w->nm, r);
}

bool
an_stepwork_needs_bases(const struct stepwork *w)
{
	return w->needs_bases;
}

static void
step_release(struct open_step *o)
{
	free(o->seg);
	free(o->op);
	free(o->fr);
	an_u64map_release(&o->corr);
	memset(o, 0, sizeof(*o));
}

/* A finished step's slot, emptied for the next: its buffers kept (a step
 * of a few hundred nanoseconds costs less than their malloc and free) */
static void
step_done(struct open_step *o)
{
	struct open_step k = { .seg = o->seg, .capseg = o->capseg,
	    .op = o->op, .capop = o->capop, .fr = o->fr, .capfr = o->capfr,
	    .corr = o->corr };

	an_u64map_clear(&k.corr);
	*o = k;
}

void
an_stepwork_free(struct stepwork *w)
{
	if (w == NULL)
		return;
	for (int i = 0; i < RING; i++)
		step_release(&w->ring[i]);
	an_dist_release(&w->d_wall);
	an_dist_release(&w->d_host);
	an_dist_release(&w->d_gpu);
	an_dist_release(&w->d_idle);
	an_dist_release(&w->d_copy);
	an_dist_release(&w->d_sync);
	free(w->all);
	free(w->site);
	free(w->hb);
	an_u64map_release(&w->hbmap);
	for (uint32_t i = 0; i < w->noth; i++) {
		free(w->oth[i].st);
		for (int k = 0; k < 2; k++) {
			free(w->oth[i].pend[k].e);
			an_u64map_release(&w->oth[i].pend[k].map);
		}
	}
	free(w->oth);
	free(w->act);
	an_u64map_release(&w->othmap);
	free(w->wo);
	free(w->owait);
	an_u64map_release(&w->womap);
	an_names_release(&w->nm);
	free(w);
}

/* ---- what the other threads ran while the step waited ---- */

/* The steps' wait time before t (the waits that reach past t are among
 * the newest: they come in the order they start, apart); the waits'
 * time within [a, b) is waits_before(b) - waits_before(a) */
static int64_t
waits_before(const struct stepwork *w, int64_t t)
{
	int64_t n = w->wcum;

	for (uint64_t k = w->nwin; k-- > 0 && k + WINS >= w->nwin;) {
		const struct win *v = &w->win[k % WINS];
		if (v->e <= t)
			break;
		n -= v->e - (v->s > t ? v->s : t);
	}
	return n;
}

/* [a, b) of another thread, in its innermost Python call (a C call's time
 * is its Python caller's, a wait's nobody's): its overlap with the steps'
 * waits */
static void
oth_credit(struct stepwork *w, struct othr *t, int64_t a, int64_t b)
{
	const struct oframe *f = NULL;
	int64_t ns, i;
	struct pendset *p = &t->pend[0];
	bool created;

	if (a >= b || t->n == 0 || t->st[t->n - 1].wait)
		return;
	t->busy += b - a;
	for (uint32_t j = t->n; j-- > 0 && f == NULL;)
		if (t->st[j].py)
			f = &t->st[j];
	if (f == NULL)
		f = &t->st[t->n - 1];
	ns = waits_before(w, b) - waits_before(w, a);
	if (ns <= 0)
		return;
	t->busy_w += ns;
	if ((i = an_stat_of(&p->map, (void **)&p->e, &p->n, &p->cap,
	    sizeof(*p->e), f->name, &created)) < 0) {
		w->oom = true;
		return;
	}
	p->e[i].who = f->name + 1;
	p->e[i].ns += ns;
	w->wo_ns += ns;
	if (!t->st[t->n - 1].py) {
		w->wo_c_ns += ns;
		t->busy_wc += ns;
	}
}

/* Thread t's time within the waits in p to wo, by function, at its last
 * frac (the share of its time in calls it was on a core; all of it before
 * its first sample that tells) */
static void
oth_settle(struct stepwork *w, struct othr *t, struct pendset *p)
{
	double frac = t->frac >= 0 ? t->frac : 1;
	bool created;
	int64_t i;

	for (uint32_t k = 0; k < p->n; k++) {
		if ((i = an_stat_of(&w->womap, (void **)&w->wo, &w->nwo,
		    &w->capwo, sizeof(*w->wo), p->e[k].who - 1,
		    &created)) < 0) {
			w->oom = true;
			return;
		}
		w->wo[i].who = p->e[k].who;
		w->wo[i].ns += ist_d2i((double)p->e[k].ns * frac);
	}
	p->n = 0;
	an_u64map_clear(&p->map);
}

/* The interval between t's last two CPU samples, its CPU time (part, of
 * its time in calls) final: the share of its time in calls on a core, at
 * one rate (a thread's time off a core falls where it does: a scheduler
 * preempts a long C call as often as Python code); its CPU within the
 * waits, and its time within them by function */
static void
oth_final(struct stepwork *w, struct othr *t)
{
	if (!t->iv.have)
		return;
	t->frac = t->iv.part / t->iv.db;
	t->in[0] += t->frac * t->iv.bw;
	oth_settle(w, t, &t->pend[1]);
	t->iv.have = false;
}

/* Thread t's time up to now given to its calls: those ended close */
static void
oth_advance(struct stepwork *w, struct othr *t, int64_t now)
{
	while (t->n && t->st[t->n - 1].end <= now) {
		int64_t e = t->st[t->n - 1].end;
		if (e > t->cur) {
			oth_credit(w, t, t->cur, e);
			t->cur = e;
		}
		t->n--;
	}
	if (now > t->cur) {
		oth_credit(w, t, t->cur, now);
		t->cur = now;
	}
}

/* Another thread, by pid and tid; NULL for lack of memory */
static struct othr *
oth_of(struct stepwork *w, const struct ist_event *ev, bool *created)
{
	int64_t i = an_stat_of(&w->othmap, (void **)&w->oth, &w->noth,
	    &w->capoth, sizeof(*w->oth), (uint64_t)ev->pid << 32 ^
	    (uint32_t)ev->tid, created);

	if (i < 0) {
		w->oom = true;
		return NULL;
	}
	if (*created) {
		w->oth[i].frac = -1;
		w->oth[i].pid = ev->pid;
	}
	return &w->oth[i];
}

/* A call of another thread, of the step's process or another */
static void
oth_call(struct stepwork *w, const struct ist_event *ev)
{
	struct oframe *f;
	struct othr *t;
	bool created;
	int64_t nm = an_names_id(&w->nm, ev, IST_F_NAME);

	if (nm < 0) {
		w->oom = true;
		return;
	}
	if ((t = oth_of(w, ev, &created)) == NULL)
		return;
	if (created)
		t->cur = ev->start_ns;
	if (t->first == 0) {
		t->first = ev->start_ns;
		t->first_w = waits_before(w, ev->start_ns);
	}
	oth_advance(w, t, ev->start_ns);
	if (!t->listed) {
		uint32_t *a = an_push((void **)&w->act, &w->nact, &w->capact,
		    sizeof(*a));
		if (a == NULL) {
			w->oom = true;
			return;
		}
		*a = (uint32_t)(t - w->oth);
		t->listed = true;
	}
	if ((f = an_push((void **)&t->st, &t->n, &t->cap, sizeof(*f))) ==
	    NULL) {
		w->oom = true;
		return;
	}
	*f = (struct oframe){ ev->end_ns, (uint32_t)nm, IST_HAS(ev,
	    IST_F_FILE), !IST_HAS(ev, IST_F_FILE) && an_is_wait_id(&w->owait,
	    &w->nowait, (uint32_t)nm, ev->name.p, ev->name.n) };
}

/* A wait of a measured step starts at s: the other threads' time before
 * it is given out (none can fall in a later wait) */
static void
oth_wait(struct stepwork *w, int64_t s, int64_t e)
{
	uint32_t k = 0;

	/* only threads in a call have time to give; those no longer are
	 * dropped from the list (a thread per request leaves no cost) */
	for (uint32_t i = 0; i < w->nact; i++) {
		struct othr *t = &w->oth[w->act[i]];
		oth_advance(w, t, s);
		if (t->n)
			w->act[k++] = w->act[i];
		else
			t->listed = false;
	}
	w->nact = k;
	w->win[w->nwin++ % WINS] = (struct win){ s, e };
	w->wcum += e - s;
}

/*
 * A thread's counter sample (k: 0 its CPU time, 1 its run-queue time):
 * what it grew by since the one before is given to the steps' waits.  Up
 * to the thread's time in calls meanwhile, by the share of that time
 * within the waits (a worker's CPU goes where it works, which is when
 * the step waits for it); the rest, or all of it for a thread in no
 * Python call, at one rate over the interval, by the waits' share of it.
 */
static void
oth_counter(struct stepwork *w, const struct ist_event *ev, int k)
{
	bool created;
	struct othr *t = oth_of(w, ev, &created);
	struct ival nx = { false, 0, 0, 0 };   /* the interval it closes */
	int64_t wt;

	if (t == NULL)
		return;
	if (created)
		t->cur = ev->ts_ns;
	oth_advance(w, t, ev->ts_ns);
	wt = waits_before(w, ev->ts_ns);
	/* a thread's first sample: from its first call, when the counter
	 * can have started there (a worker started during the run; a forked
	 * process's clocks start at 0) */
	if (!t->c[k].have && t->first && ev->ts_ns > t->first &&
	    ev->value <= (double)(ev->ts_ns - t->first)) {
		t->c[k].have = true;
		t->c[k].ts = t->first;
		t->c[k].v = 0;
		t->c[k].w = t->first_w;
		t->c[k].busy = t->c[k].busy_w = 0;
	}
	if (t->c[k].have && ev->ts_ns > t->c[k].ts && ev->value >= t->c[k].v) {
		double d = ev->value - t->c[k].v, in = 0;
		int64_t db = t->busy - t->c[k].busy;
		double bw = (double)(t->busy_w - t->c[k].busy_w);
		double part = d < (double)db ? d : (double)db;
		if (k == 0 && t->iv.have && d > part) {
			/* beyond its calls: the sample before lagged */
			double room = t->iv.db - t->iv.part;
			double back = d - part < room ? d - part : room;
			t->iv.part += back;
			d -= back;
		}
		if (k == 0 && db > 0)
			nx = (struct ival){ true, (double)db, bw, part };
		else if (k == 1 && db > 0)
			in = part * bw / (double)db;
		d -= part;
		if (d > 0 && wt > t->c[k].w)
			in += d * (double)(wt - t->c[k].w) /
			    (double)(ev->ts_ns - t->c[k].ts);
		t->in[k] += in;
	}
	if (k == 0) {
		/* the interval before settled; the time since it waits for
		 * the next sample (the interval's, iv), or is settled at the
		 * last share */
		struct pendset x;
		oth_final(w, t);
		x = t->pend[1];
		t->iv = nx;
		if (t->iv.have) {
			t->pend[1] = t->pend[0];
			t->pend[0] = x;
		} else {
			oth_settle(w, t, &t->pend[0]);
		}
	}
	t->c[k].have = true;
	t->c[k].ts = ev->ts_ns;
	t->c[k].v = ev->value;
	t->c[k].w = wt;
	t->c[k].busy = t->busy;
	t->c[k].busy_w = t->busy_w;
}

/* A thread's name: is-record's own threads are none of the program's */
static void
oth_thread(struct stepwork *w, const struct ist_event *ev)
{
	bool created;
	struct othr *t;

	if (IST_HAS(ev, IST_F_NAME) && ist_recorder_thread(ev->name.p,
	    ev->name.n) && (t = oth_of(w, ev, &created)) != NULL)
		t->profiler = true;
}

/* ---- cutting a step into segments ---- */

/* A segment [s, e) of kind; NULL for lack of memory */
static struct seg *
push_seg(struct stepwork *w, struct open_step *o, int64_t s, int64_t e,
    uint8_t kind)
{
	struct seg *g;

	if ((g = an_push((void **)&o->seg, &o->nseg, &o->capseg,
	    sizeof(*g))) == NULL) {
		w->oom = true;
		return NULL;
	}
	*g = (struct seg){ .s = s, .e = e, .kind = kind, .op1 = -1,
	    .wait_op = -1 };
	o->cursor = e;
	return g;
}

/* The host work since the last segment, up to t: in the step's call
 * running now (one segment with the last when that ran in it too) */
static void
host_upto(struct stepwork *w, struct open_step *o, int64_t t)
{
	struct seg *g;

	if (t <= o->cursor)
		return;
	if (o->nseg && (g = &o->seg[o->nseg - 1])->kind == S_HOST &&
	    g->e == o->cursor && g->who == o->who) {
		g->e = o->cursor = t;
		return;
	}
	if ((g = push_seg(w, o, o->cursor, t, S_HOST)) != NULL)
		g->who = o->who;
}

/* The depth of the step's own calls on the stack of its calls: below a
 * function step's own frame, else the first */
static uint32_t
child_depth(const struct stepwork *w)
{
	return w->type == IST_CPU_CALL && !w->loop;
}

/* The innermost open call ended: when it was one of the step's own calls,
 * the host work up to its end ran in it */
static void
pop_frame(struct stepwork *w, struct open_step *o)
{
	const struct frame2 *f = &o->fr[--o->nfr];

	if (o->nfr == child_depth(w) && o->who) {
		host_upto(w, o, f->end < o->e ? f->end : o->e);
		o->who = 0;
	}
}

static struct seg *
add_seg(struct stepwork *w, struct open_step *o, int64_t s, int64_t e,
    uint8_t kind)
{
	host_upto(w, o, s);
	return push_seg(w, o, s, e, kind);
}

/* The innermost Python call open at t: the site of a sync. */
static uint32_t
site_at(struct stepwork *w, struct open_step *o, const char *api,
    size_t apin)
{
	char buf[800];
	int n;

	for (uint32_t i = o->nfr; i-- > 0;)
		if (o->fr[i].py) {
			n = snprintf(buf, sizeof(buf), "%.*s in %s (%s:%" PRId64
			    ")", (int)apin, api, w->nm.str.e[o->fr[i].name].p,
			    w->nm.str.e[o->fr[i].file].p, o->fr[i].line);
			goto done;
		}
	if (w->type == IST_CPU_CALL)
		n = snprintf(buf, sizeof(buf), "%.*s", (int)apin, api);
	else                     /* in the step's own scope or range */
		n = snprintf(buf, sizeof(buf), "%.*s in %s '%s'", (int)apin,
		    api, w->type == IST_SCOPE ? "scope" : "NVTX range",
		    w->nm.str.e[w->name].p);
done:
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	int64_t id = an_intern(&w->nm.str, buf, (size_t)n);
	if (id < 0)
		w->oom = true;
	return id < 0 ? 0 : (uint32_t)id;
}

static void
host_event(struct stepwork *w, struct open_step *o, const struct ist_event *ev)
{
	int64_t s = ev->start_ns, e = ev->end_ns, nm = 0;
	const char *sync;
	struct frame2 *f;
	struct seg *g;

	if (s < o->s || s >= o->e)
		return;
	if (e > o->e)
		e = o->e;
	while (o->nfr && o->fr[o->nfr - 1].end <= s)
		pop_frame(w, o);
	if (ev->type == IST_CPU_CALL) {
		int64_t fl;
		nm = an_names_id(&w->nm, ev, IST_F_NAME);
		fl = an_names_id(&w->nm, ev, IST_F_FILE);
		if (nm < 0 || fl < 0 || (f = an_push((void **)&o->fr, &o->nfr,
		    &o->capfr, sizeof(*f))) == NULL) {
			w->oom = true;
			return;
		}
		*f = (struct frame2){ e, (uint32_t)nm, (uint32_t)fl,
		    IST_HAS(ev, IST_F_LINE) ? ev->line : 0,
		    IST_HAS(ev, IST_F_FILE) && ev->file.n && ev->file.p[0] !=
		    '<' };
		if (o->nfr - 1 == child_depth(w)) {
			/* one of the step's own calls starts */
			host_upto(w, o, s);
			o->who = (uint32_t)nm + 1;
		}
		if (o->imp_mod == 0 && ev->name.n > 9 && memcmp(ev->name.p +
		    ev->name.n - 9, ".<module>", 9) == 0 &&
		    !an_name_is(ev, "__main__.<module>") && o->nseg &&
		    o->seg[o->nseg - 1].kind == S_IMPORT &&
		    o->seg[o->nseg - 1].e >= e)
			o->imp_mod = (uint32_t)nm + 1;
	}
	if (s < o->cursor)
		return;              /* inside a segment already cut */
	if (ev->type == IST_CPU_CALL) {
		if (ist_gc_generation(ev->name.p, ev->name.n) >= 0)
			add_seg(w, o, s, e, S_GC);
		else if (an_is_import(ev->name.p, ev->name.n))
			add_seg(w, o, s, e, S_IMPORT);
		else if (an_is_wait_id(&w->owait, &w->nowait, (uint32_t)nm,
		    ev->name.p, ev->name.n) && add_seg(w, o, s, e, S_WAIT) !=
		    NULL)
			oth_wait(w, s, e);
		return;
	}
	if (ev->type == IST_SYNC) {
		char k[80];
		int n = snprintf(k, sizeof(k), "%.*s sync",
		    IST_HAS(ev, IST_F_KIND) ? (int)(ev->kind.n < 60 ?
		    ev->kind.n : 60) : 0, IST_HAS(ev, IST_F_KIND) ?
		    ev->kind.p : "");
		if ((g = add_seg(w, o, s, e, S_SYNC)) != NULL)
			g->site = site_at(w, o, n > 5 ? k : "sync", n > 5 ?
			    (size_t)n : 4);
		return;
	}
	if (ev->type != IST_CUDA_API)
		return;
	sync = an_implicit_sync(ev);
	if (an_name_has(ev, "Synchronize") || (sync && strcmp(sync, "free") ==
	    0)) {
		if ((g = add_seg(w, o, s, e, S_SYNC)) != NULL)
			g->site = site_at(w, o, ev->name.p, ev->name.n);
		return;
	}
	if (an_is_launch(ev)) {
		bool found;
		uint32_t *v;
		if ((g = add_seg(w, o, s, e, S_LAUNCH)) == NULL)
			return;
		g->memcpy_sync = sync != NULL;   /* "memcpy" */
		g->graph = an_name_has(ev, "Kernel") && !an_name_has(ev, "Graph");
		g->site = site_at(w, o, ev->name.p, ev->name.n);
		if (IST_HAS(ev, IST_F_CORRELATION) && (v = an_u64map_slot(
		    &o->corr, an_mix64((uint64_t)ev->pid) ^
		    (uint64_t)ev->correlation, &found)) != NULL) {
			o->corr.n += !found;
			*v = o->nseg;    /* index + 1 */
		}
		else if (IST_HAS(ev, IST_F_CORRELATION))
			w->oom = true;
	}
}

static void
gpu_event(struct stepwork *w, const struct ist_event *ev)
{
	uint64_t key = an_mix64((uint64_t)ev->pid) ^ (uint64_t)ev->correlation;
	bool found;
	struct op *p;

	for (int i = 0; i < RING; i++) {
		struct open_step *o = &w->ring[i];
		uint32_t *v;
		struct seg *g;
		if (!o->used || o->corr.n == 0 || (v = an_u64map_slot(&o->corr,
		    key, &found)) == NULL || !found)
			continue;
		if ((p = an_push((void **)&o->op, &o->nop, &o->capop,
		    sizeof(*p))) == NULL) {
			w->oom = true;
			return;
		}
		g = &o->seg[*v - 1];
		*p = (struct op){ .s = ev->start_ns, .e = ev->end_ns,
		    .stream = IST_HAS(ev, IST_F_STREAM) ? ev->stream : 0,
		    .bytes = IST_HAS(ev, IST_F_BYTES) ? ev->bytes : 0,
		    .cat = ev->type == IST_GPU_KERNEL ? C_KERNEL : C_COPY,
		    .pageable = IST_HAS(ev, IST_F_PAGEABLE) && ev->pageable,
		    .dir = ev->type == IST_H2D_COPY ? 0 : ev->type ==
		    IST_D2H_COPY ? 1 : ev->type == IST_D2D_COPY ? 2 : 3,
		    .seg = (int)(*v - 1), .next = -1, .after = -1 };
		if (ev->type == IST_GPU_KERNEL) {
			int64_t nm = an_names_id(&w->nm, ev, IST_F_NAME);
			p->name = nm < 0 ? 0 : (uint32_t)nm;
		}
		/* chain it to its launch's ops */
		if (g->op1 < 0) {
			g->op1 = (int)o->nop - 1;
		} else {
			int k = g->op1;
			while (o->op[k].next >= 0)
				k = o->op[k].next;
			o->op[k].next = (int)o->nop - 1;
		}
		g->nops++;
		return;
	}
}

/* The GPU's busy time within each open step. */
static void
credit_union(struct stepwork *w, int64_t s, int64_t e)
{
	for (int i = 0; i < RING; i++) {
		struct open_step *o = &w->ring[i];
		int64_t x, y;
		if (!o->used)
			continue;
		x = s > o->gpu_credit_to ? s : o->gpu_credit_to;
		if (x < o->s)
			x = o->s;
		y = e < o->e ? e : o->e;
		if (y > x) {
			o->gpu_busy += y - x;
			o->gpu_credit_to = y;
		}
	}
}

/* ---- the replay ---- */

struct scen {
	int what;                /* W_ or W_FIXED + site index, or -1 */
	uint32_t site;           /* W_FIXED: the site deferred */
	const struct stepwork *w;
};

static int64_t
op_dur(const struct scen *sc, const struct op *p)
{
	int64_t d = p->e - p->s;

	if (sc->what == W_PINNED && p->pageable && p->dir < 3 &&
	    sc->w->pinned_gbps[p->dir] > 0 && p->bytes > 0) {
		int64_t pin = (int64_t)((double)p->bytes /
		    sc->w->pinned_gbps[p->dir]);
		if (pin < d)
			d = pin;
	}
	return d;
}

/* Replays step o under sc: its length; the segments' and ops' replayed
 * times stay in them (for the critical path). */
static int64_t
replay(struct open_step *o, const struct scen *sc, int64_t lat, int64_t pre)
{
	struct free_stream { int64_t stream, free; int last; } fs[16];
	int nfs = 0, last_op = -1, first_launch = 1;
	int64_t t = 0, all_done = 0, deferred_tail = -1, graph_t0 = 0;

	for (uint32_t i = 0; i < o->nseg; i++) {
		struct seg *g = &o->seg[i];
		int64_t d = g->e - g->s;
		g->rs = t;
		g->wait_op = -1;
		switch (g->kind) {
		case S_HOST:
			if (sc->what == W_OVERLAP && g->lead)
				d = 0;
			t += d;
			break;
		case S_GC:
			t += sc->what == W_GC ? 0 : d;
			break;
		case S_IMPORT:
			t += sc->what == W_IMPORT ? 0 : d;
			break;
		case S_WAIT:
			t += sc->what == W_WAIT ? 0 : d;
			break;
		case S_LAUNCH: {
			int64_t start = t, blk_end = -1, ready;
			int wait_on = -1;
			if (sc->what == W_GRAPH && g->graph) {
				if (first_launch) {
					graph_t0 = t;
					d = sc->w->graph_launch_ns < d ?
					    sc->w->graph_launch_ns : d;
				} else {
					d = 0;
				}
				first_launch = 0;
			}
			ready = (sc->what == W_GRAPH && g->graph ? graph_t0 :
			    start) + lat;
			for (int k = g->op1; k >= 0; k = o->op[k].next) {
				struct op *p = &o->op[k];
				int j;
				for (j = 0; j < nfs && fs[j].stream != p->stream;
				    j++)
					;
				if (j == nfs && nfs < 16)
					fs[nfs++] = (struct free_stream){
					    p->stream, 0, -1 };
				if (j == 16)
					j = 15;
				p->after = -1;
				p->rs = ready;
				if (fs[j].free > ready) {
					p->rs = fs[j].free;
					p->after = fs[j].last;
				}
				p->re = p->rs + op_dur(sc, p);
				fs[j].free = p->re;
				fs[j].last = k;
				if (p->re > all_done) {
					all_done = p->re;
					last_op = k;
				}
				/* a synchronous copy, or one from pageable
				 * memory, holds the call until it is done */
				if ((g->memcpy_sync || p->pageable) && p->e <=
				    g->e && p->re + (g->e - p->e) > blk_end) {
					blk_end = p->re + (g->e - p->e);
					wait_on = k;
				}
			}
			t = start + d;
			if (blk_end > t) {
				t = blk_end;
				g->wait_op = wait_on;
			}
			break;
		}
		case S_SYNC: {
			/* what it waited for, as recorded: the step's GPU
			 * work launched before it */
			int64_t obs = g->obs, tail;
			if (obs <= g->s || obs > g->e) {
				t += d;      /* it waited for nothing here */
				break;
			}
			tail = g->e - obs;
			if (sc->what >= W_FIXED && g->site == sc->site) {
				if (tail > deferred_tail)
					deferred_tail = tail;
				break;
			}
			if (all_done + tail > t) {
				t = all_done + tail;
				g->wait_op = last_op;
			}
			break;
		}
		}
		g->re = t;
	}
	if (deferred_tail >= 0 && all_done + deferred_tail > t)
		t = all_done + deferred_tail;
	if (sc->what == W_OVERLAP && pre > t)
		t = pre;
	return t;
}

/* ns of host work on the critical path, in the step's call who */
static void
host_by(struct stepwork *w, uint32_t who, int64_t ns)
{
	bool created;
	int64_t k = w->hb_last;

	/* most steps run the same call again: no hashing then */
	if (k >= w->nhb || w->hb[k].who != who) {
		k = an_stat_of(&w->hbmap, (void **)&w->hb, &w->nhb,
		    &w->caphb, sizeof(*w->hb), who, &created);
		if (k < 0) {
			w->oom = true;
			return;
		}
		w->hb[k].who = who;
		w->hb_last = (uint32_t)k;
	}
	w->hb[k].ns += ns;
}

/* The critical path of the replay just made: ns per category into cp,
 * its host work by call into w's host_by */
static void
critical_path(struct stepwork *w, const struct open_step *o, int64_t *cp)
{
	int i = (int)o->nseg - 1;

	while (i >= 0) {
		const struct seg *g = &o->seg[i];
		int k;
		if (g->wait_op < 0) {
			cp[g->kind] += g->re - g->rs;
			if (g->kind == S_HOST)
				host_by(w, g->who, g->re - g->rs);
			i--;
			continue;
		}
		/* the tail after the GPU work it waited for */
		k = g->wait_op;
		cp[g->kind == S_LAUNCH ? S_LAUNCH : S_SYNC] += g->re -
		    o->op[k].re;
		for (;;) {
			const struct op *p = &o->op[k];
			cp[p->cat] += p->re - p->rs;
			if (p->after >= 0) {
				k = p->after;
				continue;
			}
			/* from its launch's start: the launch latency */
			cp[S_LAUNCH] += p->rs - o->seg[p->seg].rs;
			i = p->seg - 1;
			break;
		}
	}
}

static void
add_site(struct stepwork *w, uint32_t site, int64_t saved)
{
	uint32_t i;
	struct site *s;

	for (i = 0; i < w->nsite; i++)
		if (w->site[i].site == site)
			break;
	if (i == w->nsite) {
		if ((s = an_push((void **)&w->site, &w->nsite, &w->capsite,
		    sizeof(*s))) == NULL) {
			w->oom = true;
			return;
		}
		*s = (struct site){ site, 0, 0 };
	}
	w->site[i].steps++;
	w->site[i].saved += saved;
}

static void
keep_slow(struct stepwork *w, const struct comp *c)
{
	int at = w->nslow;

	if (w->nslow == SLOWEST) {
		if (c->wall <= w->slow[SLOWEST - 1].wall)
			return;
		at = SLOWEST - 1;
	} else {
		w->nslow++;
	}
	while (at > 0 && w->slow[at - 1].wall < c->wall) {
		w->slow[at] = w->slow[at - 1];
		at--;
	}
	w->slow[at] = *c;
}

static void
finish_step(struct stepwork *w, struct open_step *o)
{
	struct comp c = { .index = o->index, .s = o->s, .wall = o->e - o->s };
	int64_t lat = INT64_MAX, pre = 0, base, r, cp[C_CATS] = { 0 };
	struct scen sc = { -1, 0, w };
	bool pre_phase = true, waits = false;

	while (o->nfr && o->fr[o->nfr - 1].end <= o->e)
		pop_frame(w, o);
	host_upto(w, o, o->e);           /* the last host work */
	credit_union(w, w->us, w->ue);
	for (uint32_t i = 0; i < o->nseg; i++) {
		const struct seg *g = &o->seg[i];
		int64_t d = g->e - g->s;
		switch (g->kind) {
		case S_SYNC: c.sync += d; break;
		case S_GC: c.gc += d; break;
		case S_IMPORT: c.imp += d; break;
		case S_WAIT: c.wait += d; break;
		default: break;
		}
		if (g->kind == S_SYNC && d > 0 && c.sync_site == 0)
			c.sync_site = g->site + 1;
		if (g->kind != S_HOST && g->kind != S_GC &&
		    g->kind != S_IMPORT) {
			pre_phase = false;
			waits = true;
		} else if (pre_phase && g->kind == S_HOST) {
			o->seg[i].lead = true;
			pre += d;
		}
	}
	for (uint32_t k = 0; k < o->nop; k++) {
		const struct op *p = &o->op[k];
		int64_t l = p->s - o->seg[p->seg].s;
		if (l >= 0 && l < lat)
			lat = l;
		if (p->cat == C_COPY)
			c.copy += p->e - p->s;
		else if (p->e - p->s > c.kmax) {
			c.kmax = p->e - p->s;
			c.kname = p->name + 1;
		}
	}
	if (lat == INT64_MAX)
		lat = 0;
	if (o->nop)
		w->needs_bases = true;
	/* each segment's obs: the latest recorded end of the ops launched
	 * before it (first each launch's own, then the running maximum) */
	for (uint32_t i = 0; i < o->nseg; i++)
		o->seg[i].obs = INT64_MIN;
	for (uint32_t q = 0; q < o->nop; q++)
		if (o->op[q].e > o->seg[o->op[q].seg].obs)
			o->seg[o->op[q].seg].obs = o->op[q].e;
	for (uint32_t i = 0; i < o->nseg; i++) {
		int64_t own = o->seg[i].obs;
		o->seg[i].obs = i ? o->seg[i - 1].obs : INT64_MIN;
		if (i && o->seg[i - 1].obs_own > o->seg[i].obs)
			o->seg[i].obs = o->seg[i - 1].obs_own;
		o->seg[i].obs_own = own;
	}
	c.host = c.wall - c.sync - c.wait;
	w->wait_ns += c.wait;
	c.gpu = o->gpu_busy;
	c.imp_mod = o->imp_mod;
	w->steps++;
	if (an_dist_add(&w->d_wall, c.wall) || an_dist_add(&w->d_host,
	    c.host) || an_dist_add(&w->d_gpu, c.gpu) || an_dist_add(&w->d_idle,
	    c.wall - c.gpu) || an_dist_add(&w->d_copy, c.copy) ||
	    an_dist_add(&w->d_sync, c.sync))
		w->oom = true;
	if (w->steps <= EXACT_MAX) {
		struct comp *na = realloc(w->all, w->steps * sizeof(*na));
		if (na == NULL)
			w->oom = true;
		else
			(w->all = na)[w->steps - 1] = c;
	}
	keep_slow(w, &c);

	base = replay(o, &sc, lat, 0);
	critical_path(w, o, cp);
	for (int k = 0; k < C_CATS; k++)
		w->cp[k] += cp[k];
	w->sum_wall += c.wall;
	if (o->s < w->span_s)
		w->span_s = o->s;
	if (o->e > w->span_e)
		w->span_e = o->e;
	w->sum_replay += base;
	w->sum_abs_err += base > c.wall ? base - c.wall : c.wall - base;

	for (int what = 0; what < W_FIXED; what++) {
		sc.what = what;
		if (what == W_OVERLAP && (!waits || pre == 0))
			continue;
		if ((what == W_GC && c.gc == 0) || (what == W_IMPORT &&
		    c.imp == 0) || (what == W_PINNED && c.copy == 0) ||
		    (what == W_GRAPH && o->nop == 0) || (what == W_WAIT &&
		    c.wait == 0))
			continue;
		r = replay(o, &sc, lat, pre);
		w->applies[what]++;
		w->saved[what] += base - r;
	}
	w->pre_sum += pre;
	for (uint32_t i = 0; i < o->nseg; i++) {
		const struct seg *g = &o->seg[i];
		bool dup = false;
		if (g->kind != S_SYNC)
			continue;
		for (uint32_t j = 0; j < i; j++)
			if (o->seg[j].kind == S_SYNC && o->seg[j].site ==
			    g->site)
				dup = true;
		if (dup)
			continue;
		sc.what = W_FIXED;
		sc.site = g->site;
		r = replay(o, &sc, lat, 0);
		add_site(w, g->site, base - r);
	}
	step_done(o);
}

/* Finishes the oldest open step when no slot is free (all: every one):
 * by then a later step has started, so every op that starts inside it has
 * come. */
static void
finish_oldest(struct stepwork *w, bool all)
{
	for (;;) {
		struct open_step *old = NULL;
		bool free_slot = false;
		for (int i = 0; i < RING; i++)
			if (!w->ring[i].used)
				free_slot = true;
			else if (old == NULL || w->ring[i].index < old->index)
				old = &w->ring[i];
		if (old == NULL || (!all && free_slot))
			return;
		finish_step(w, old);
	}
}

/*
 * A loop's call: the iteration under way ends where it begins (cut to
 * there, as the segments that ran past its end were not known to), and
 * one begins with it, its first call the loop's, unless it ends the loop
 * (ist_steps_loop_end: the StopIteration an iterator raised, a generator's
 * return).
 */
static void
iter_step(struct stepwork *w, const struct ist_event *ev, int64_t from,
    int64_t to)
{
	struct open_step *o = w->iter_open;

	w->last_end = ev->end_ns;
	w->seen += w->iter_on;
	w->iter_open = NULL;
	if (o != NULL) {
		o->e = ev->start_ns;
		for (uint32_t i = 0; i < o->nseg; i++) {
			if (o->seg[i].e > o->e)
				o->seg[i].e = o->e;
			if (o->seg[i].s > o->e)
				o->seg[i].s = o->e;
		}
		if (o->cursor > o->e)
			o->cursor = o->e;
		if (o->e > to)
			step_done(o);    /* it runs past the window */
	}
	w->iter_on = !ist_steps_loop_end(ev, w->loop);
	if (!w->iter_on || ev->start_ns < from || ev->start_ns >= to)
		return;
	finish_oldest(w, false);
	o = NULL;
	for (int i = 0; i < RING && o == NULL; i++)
		if (!w->ring[i].used)
			o = &w->ring[i];
	o->used = true;
	o->index = w->seen + 1;
	o->s = o->gpu_credit_to = o->cursor = ev->start_ns;
	o->e = INT64_MAX;
	if (w->have_u)
		credit_union(w, w->us, w->ue);
	host_event(w, o, ev);
	w->iter_open = o;
}

static bool
is_step(const struct stepwork *w, const struct ist_event *ev)
{
	const char *nm = w->nm.str.e[w->name].p;

	return ev->type == w->type && ev->tid == w->tid && ev->pid == w->pid &&
	    IST_HAS(ev, IST_F_START) && IST_HAS(ev, IST_F_END) &&
	    ev->end_ns >= ev->start_ns && ev->name.n == w->name_n &&
	    memcmp(ev->name.p, nm, w->name_n) == 0 && (w->type !=
	    IST_CPU_CALL || (IST_HAS(ev, IST_F_LINE) ? ev->line : 0) ==
	    w->line);
}

enum ist_status
an_stepwork_add(struct stepwork *w, const struct ist_event *ev,
    int64_t from, int64_t to, struct ist_error *err)
{
	if (w == NULL)
		return IST_OK;
	switch (ev->type) {
	case IST_GPU_KERNEL:
	case IST_H2D_COPY:
	case IST_D2H_COPY:
	case IST_D2D_COPY:
	case IST_MEMSET:
		if (!IST_HAS(ev, IST_F_START) || !IST_HAS(ev, IST_F_END) ||
		    ev->end_ns < ev->start_ns)
			break;
		w->gpu_ops = true;
		if (ev->pid == w->pid) {
			if (!w->have_u || ev->start_ns > w->ue) {
				if (w->have_u)
					credit_union(w, w->us, w->ue);
				w->have_u = true;
				w->us = ev->start_ns;
				w->ue = ev->end_ns;
			} else if (ev->end_ns > w->ue) {
				w->ue = ev->end_ns;
			}
		}
		if (IST_HAS(ev, IST_F_CORRELATION))
			gpu_event(w, ev);
		break;
	case IST_CPU_CALL:
	case IST_SCOPE:
	case IST_NVTX_RANGE:
	case IST_CUDA_API:
	case IST_SYNC:
		if (ev->type == IST_CPU_CALL && (ev->pid != w->pid ||
		    ev->tid != w->tid) && IST_HAS(ev, IST_F_START) &&
		    IST_HAS(ev, IST_F_END) && IST_HAS(ev, IST_F_TID) &&
		    ev->end_ns >= ev->start_ns) {
			oth_call(w, ev);
			break;
		}
		if (ev->tid != w->tid || ev->pid != w->pid ||
		    !IST_HAS(ev, IST_F_START) || !IST_HAS(ev, IST_F_END) ||
		    ev->end_ns < ev->start_ns)
			break;
		if (w->loop && ist_steps_next_call(ev) &&
		    ev->end_ns > w->next_end)
			w->next_end = ev->end_ns;
		if (w->loop && is_step(w, ev) && ev->start_ns >= w->last_end) {
			/* a call made by next(it), no loop's, is passed over
			 * as a call inside the iteration under way */
			if (ev->start_ns >= w->next_end) {
				iter_step(w, ev, from, to);
				break;
			}
		} else if (is_step(w, ev) && ev->start_ns >= w->last_end) {
			struct open_step *o = NULL;
			w->seen++;
			w->last_end = ev->end_ns;
			if (ev->start_ns < from || ev->end_ns > to)
				break;
			finish_oldest(w, false);
			for (int i = 0; i < RING && o == NULL; i++)
				if (!w->ring[i].used)
					o = &w->ring[i];
			o->used = true;
			o->index = w->seen;
			o->s = o->gpu_credit_to = o->cursor = ev->start_ns;
			o->e = ev->end_ns;
			if (w->have_u)
				credit_union(w, w->us, w->ue);
			/* a function step is the first Python caller of
			 * what it calls */
			if (ev->type == IST_CPU_CALL)
				host_event(w, o, ev);
			break;
		}
		for (int i = 0; i < RING; i++)
			if (w->ring[i].used && ev->start_ns >= w->ring[i].s &&
			    ev->start_ns < w->ring[i].e)
				host_event(w, &w->ring[i], ev);
		break;
	case IST_COUNTER:
		if (!IST_HAS(ev, IST_F_TID) || !IST_HAS(ev, IST_F_TS) ||
		    !IST_HAS(ev, IST_F_VALUE) || (ev->pid == w->pid &&
		    ev->tid == w->tid))
			break;
		if (an_name_is(ev, "thread.cpu_ns"))
			oth_counter(w, ev, 0);
		else if (an_name_is(ev, "thread.wait_ns"))
			oth_counter(w, ev, 1);
		break;
	case IST_THREAD:
		if (IST_HAS(ev, IST_F_TID))
			oth_thread(w, ev);
		break;
	default:
		break;
	}
	if (w->oom) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	return IST_OK;
}

enum ist_status
an_stepwork_event(struct stepwork *w, const struct ist_event *ev,
    int64_t from, int64_t to, struct ist_error *err)
{
	an_names_event(&w->nm, ev);
	if (ev->type == IST_HEADER || ev->type == IST_ANALYSIS)
		return IST_OK;
	return an_stepwork_add(w, ev, from, to, err);
}

/* ---- the result ---- */

struct hbsort {
	int64_t ns;
	const char *call;        /* NULL: the step's own code */
};

/* most first; a tie by the call's name, the step's own code first (not
 * by the order the names were met in) */
static int
by_ns_hb(const void *x, const void *y)
{
	const struct hbsort *p = x, *q = y;

	if (p->ns != q->ns)
		return p->ns < q->ns ? 1 : -1;
	if (p->call == NULL || q->call == NULL)
		return (p->call != NULL) - (q->call != NULL);
	return strcmp(p->call, q->call);
}

/* Time by call (who: the call's interned name + 1, 0 none): the 8 with
 * the most, each a tenth of a percent of total or more, as [{call,
 * share}], call null for none */
static json_t *
by_call_json(struct stepwork *w, const struct hostby *hb, uint32_t n,
    int64_t total)
{
	json_t *arr = json_array();
	struct hbsort *v = malloc((n ? n : 1) * sizeof(*v));

	if (v == NULL) {
		w->oom = true;
		return arr;
	}
	for (uint32_t i = 0; i < n; i++)
		v[i] = (struct hbsort){ hb[i].ns, hb[i].who ?
		    w->nm.str.e[hb[i].who - 1].p : NULL };
	if (n)
		qsort(v, n, sizeof(*v), by_ns_hb);
	for (uint32_t i = 0; i < n && i < 8 && total > 0; i++) {
		double sh = ist_round((double)v[i].ns / (double)total, 3);
		if (sh < 0.001)
			break;
		json_array_append_new(arr, json_pack("{s:o,s:f}", "call",
		    v[i].call ? json_string(v[i].call) : json_null(), "share",
		    sh));
	}
	free(v);
	return arr;
}

static int
by_pid(const void *x, const void *y)
{
	const struct othr *p = *(const struct othr *const *)x;
	const struct othr *q = *(const struct othr *const *)y;

	return (p->pid > q->pid) - (p->pid < q->pid);
}

/*
 * Of the other threads' time in calls on no core and queued for none,
 * what the GIL can explain, in threads (ns over the waits' time): a
 * process's, in its Python code, and no more of a thread's than the
 * time its process's other threads were in calls (a thread waits for
 * the GIL while another holds it: a pool's worker process, one thread
 * in Python, waits for none, nor does a thread blocked in a C call the
 * collector cannot see, called from C, alone in its process)
 */
static double
gil_waiting(struct stepwork *w)
{
	struct othr **v = malloc((w->noth ? w->noth : 1) * sizeof(*v));
	double g = 0;
	uint32_t n = 0;

	if (v == NULL) {
		w->oom = true;
		return 0;
	}
	for (uint32_t i = 0; i < w->noth; i++)
		if (!w->oth[i].profiler)
			v[n++] = &w->oth[i];
	qsort(v, n, sizeof(*v), by_pid);
	for (uint32_t i = 0, j; i < n; i = j) {
		double busy = 0, c = 0, py = 0, most = 0, off;
		for (j = i; j < n && v[j]->pid == v[i]->pid; j++)
			busy += (double)v[j]->busy_w;
		for (j = i; j < n && v[j]->pid == v[i]->pid; j++) {
			double b = (double)v[j]->busy_w;
			c += v[j]->in[0] + v[j]->in[1];
			py += b - (double)v[j]->busy_wc;
			most += b < busy - b ? b : busy - b;
		}
		off = busy - c;
		if (off > py)
			off = py;
		if (off > most)
			off = most;
		if (off > 0)
			g += off;
	}
	free(v);
	return g / (double)w->wait_ns;
}

/* The other threads' time within the steps' waits, by function */
static json_t *
waited_on_json(struct stepwork *w)
{
	double in[2] = { 0, 0 }, rec = 0;
	bool have[2] = { false, false };
	int64_t by = 0;
	json_t *o;

	for (uint32_t i = 0; i < w->noth; i++) {
		oth_advance(w, &w->oth[i], INT64_MAX);
		/* the last interval as it stands, and after its last
		 * sample: at that one's share */
		oth_final(w, &w->oth[i]);
		oth_settle(w, &w->oth[i], &w->oth[i].pend[0]);
	}
	if (w->wait_ns <= 0 || w->wo_ns <= 0)
		return json_null();
	for (uint32_t i = 0; i < w->nwo; i++)
		by += w->wo[i].ns;
	for (uint32_t i = 0; i < w->noth; i++) {
		/* InferScope's own threads: beside the others, not theirs */
		if (w->oth[i].profiler) {
			rec += w->oth[i].in[0];
			continue;
		}
		for (int k = 0; k < 2; k++) {
			in[k] += w->oth[i].in[k];
			have[k] |= w->oth[i].c[k].have;
		}
	}
	o = json_pack("{s:f,s:f}", "threads", ist_round((double)w->wo_ns /
	    (double)w->wait_ns, 2), "in_c_calls", ist_round((double)
	    w->wo_c_ns / (double)w->wait_ns, 2));
	json_object_set_new(o, "cores", have[0] ? json_real(ist_round(in[0] /
	    (double)w->wait_ns, 2)) : json_null());
	json_object_set_new(o, "queued", have[1] ? json_real(ist_round(in[1] /
	    (double)w->wait_ns, 2)) : json_null());
	json_object_set_new(o, "recorder_cores", have[0] ? json_real(ist_round(
	    rec / (double)w->wait_ns, 2)) : json_null());
	if (have[0] && have[1]) {
		double g = gil_waiting(w);
		json_object_set_new(o, "gil_waiting", json_real(ist_round(g,
		    2)));
		/* on a core, queued for one, or waiting for the GIL: the
		 * rest of their time in calls they were blocked */
		json_object_set_new(o, "working", json_real(ist_round((in[0] +
		    in[1]) / (double)w->wait_ns + g, 2)));
	} else {
		json_object_set_new(o, "gil_waiting", json_null());
		json_object_set_new(o, "working", json_null());
	}
	json_object_set_new(o, "by", by_call_json(w, w->wo, w->nwo, by));
	return o;
}

static json_t *
dist_json(struct dist *d)
{
	return json_pack("{s:I,s:I,s:I}", "p50_ns", JI(an_dist_pct(d, 50)),
	    "p95_ns", JI(an_dist_pct(d, 95)), "max_ns", JI(an_dist_pct(d,
	    100)));
}

/* The median of the part at off of the first steps' components */
static int64_t
median_of(const struct stepwork *w, size_t off)
{
	size_t n = w->steps < EXACT_MAX ? w->steps : EXACT_MAX;
	int64_t *v = malloc((n ? n : 1) * sizeof(*v)), m;

	if (v == NULL || n == 0) {
		free(v);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = *(const int64_t *)((const char *)&w->all[i] + off);
	qsort(v, n, sizeof(*v), an_cmp_i64);
	m = v[(n - 1) / 2];
	free(v);
	return m;
}

/* The parts a step is made of, by which a slow one is explained */
static const struct { const char *cause; size_t off; } part[] = {
	{ "gc", offsetof(struct comp, gc) },
	{ "import", offsetof(struct comp, imp) },
	{ "sync", offsetof(struct comp, sync) },
	{ "kernel", offsetof(struct comp, kmax) },
	{ "copy", offsetof(struct comp, copy) },
	{ "wait", offsetof(struct comp, wait) },
	{ "host", offsetof(struct comp, host) },
};
#define NPART (sizeof(part) / sizeof(part[0]))

/* What made a slow step slow: the part furthest above its median (med,
 * by part) */
static json_t *
slow_json(const struct stepwork *w, const struct comp *c,
    const int64_t *med)
{
	const struct ist_strtab *str = &w->nm.str;
	int64_t best = 0, excess;
	int bi = -1;
	const char *detail = NULL;

	for (size_t i = 0; i < NPART; i++) {
		int64_t v = *(const int64_t *)((const char *)c + part[i].off);
		int64_t m = med[i];
		/* host time counts what the others do not explain */
		if (strcmp(part[i].cause, "host") == 0)
			v -= c->gc + c->imp, m -= med[0] + med[1];
		if ((excess = v - m) > best) {
			best = excess;
			bi = (int)i;
		}
	}
	if (bi >= 0 && strcmp(part[bi].cause, "import") == 0 && c->imp_mod)
		detail = str->e[c->imp_mod - 1].p;
	else if (bi >= 0 && strcmp(part[bi].cause, "kernel") == 0 && c->kname)
		detail = str->e[c->kname - 1].p;
	else if (bi >= 0 && strcmp(part[bi].cause, "sync") == 0 &&
	    c->sync_site)
		detail = str->e[c->sync_site - 1].p;
	return json_pack("{s:I,s:I,s:I,s:s?,s:I,s:s?}", "step", JI(c->index),
	    "start_ns", JI(c->s), "wall_ns", JI(c->wall),
	    "cause", bi >= 0 ? part[bi].cause : NULL, "excess_ns", JI(best),
	    "detail", detail);
}

/* The step is asyncio's event loop tick (BaseEventLoop._run_once): it runs
 * the program's tasks, and waits for them */
static bool
event_loop_tick(const struct stepwork *w)
{
	static const char tick[] =
	    "asyncio.base_events.BaseEventLoop._run_once";

	return w->type == IST_CPU_CALL && w->name_n == sizeof(tick) - 1 &&
	    memcmp(w->nm.str.e[w->name].p, tick, sizeof(tick) - 1) == 0;
}

static json_t *
what_if_entry(const struct stepwork *w, const char *change, const char *id,
    int64_t saved_sum, const char *basis)
{
	int64_t per = saved_sum / (int64_t)w->steps;
	double mean = (double)w->sum_wall / (double)w->steps;

	return json_pack("{s:s,s:s,s:I,s:f,s:s}", "id", id, "change", change,
	    "saves_ns", JI(per), "saves_pct", mean > 0 ?
	    ist_round(100.0 * (double)per / mean, 1) : 0.0, "basis", basis);
}

static int
by_saving(const void *x, const void *y)
{
	json_int_t a = json_integer_value(json_object_get(*(json_t *const *)x,
	    "saves_ns"));
	json_int_t b = json_integer_value(json_object_get(*(json_t *const *)y,
	    "saves_ns"));

	if (a != b)
		return a > b ? -1 : 1;
	return strcmp(json_string_value(json_object_get(*(json_t *const *)x,
	    "change")), json_string_value(json_object_get(*(json_t *const *)y,
	    "change")));
}

/* The pass's results, before the JSON: the bases the replays need from the
 * first pass (pinned bandwidth, launch cost). */
void
an_stepwork_bases(struct stepwork *w)
{
	const struct ist_analyzer *a;
	static const char *const dirs[3] = { "h2d", "d2h", "d2d" };

	if (w == NULL)
		return;
	a = w->a;
	for (int d = 0; d < 3; d++) {
		const struct xstat *x = &a->xs[d];
		int64_t pb = x->bytes - x->pageable_bytes;
		int64_t pn = x->ns - x->pageable_ns;
		(void)dirs;
		if (pb > 0 && pn > 0 && x->count > x->pageable_count) {
			w->pinned_gbps[d] = (double)pb / (double)pn;
			w->pinned_basis[d] = "measured";
		} else {
			for (int k = 0; k < a->ndev; k++)
				if (a->dev[k].pcie > 0) {
					w->pinned_gbps[d] = a->dev[k].pcie;
					w->pinned_basis[d] = "device";
					break;
				}
		}
	}
	w->graph_launch_ns = an_dist_pct((struct dist *)&a->launch_d, 50);
}

json_t *
an_stepwork_json(struct stepwork *w, const struct ist_steps *s)
{
	json_t *j, *slow, *wi, *cp, *rest, *arr[W_FIXED + 64];
	int64_t med[NPART];
	size_t na = 0;
	char basis[400];
	int64_t cpsum = 0;
	double mean;

	if (w == NULL)
		return json_null();
	if (w->iter_open) {
		/* the last iteration: its end is not in the trace */
		step_done(w->iter_open);
		w->iter_open = NULL;
	}
	finish_oldest(w, true);
	if (w->steps == 0)
		return an_step_json(s, w->seen ? w->seen : ist_steps_found(s),
		    0);
	mean = (double)w->sum_wall / (double)w->steps;
	for (size_t i = 0; i < NPART; i++)
		med[i] = median_of(w, part[i].off);
	slow = json_array();
	for (int i = 0; i < w->nslow; i++)
		json_array_append_new(slow, slow_json(w, &w->slow[i], med));
	for (int k = 0; k < C_CATS; k++)
		cpsum += w->cp[k];
	cp = json_object();
	json_object_set_new(cp, "length_ns", json_integer(cpsum /
	    (int64_t)w->steps));
	{
		json_t *sh = json_object();
		for (int k = 0; k < C_CATS; k++)
			json_object_set_new(sh, cat_name[k], json_real(
			    cpsum ? ist_round((double)w->cp[k] / (double)cpsum,
			    3) : 0.0));
		json_object_set_new(cp, "share", sh);
	}
	/* the host work on the critical path by the step's call it ran in */
	json_object_set_new(cp, "host_by", by_call_json(w, w->hb, w->nhb,
	    cpsum));
	json_object_set_new(cp, "waited_on", waited_on_json(w));
	json_object_set_new(cp, "replay_error_pct", json_real(ist_round(
	    100.0 * (double)w->sum_abs_err / (double)w->sum_wall, 1)));

	if (w->applies[W_OVERLAP]) {
		snprintf(basis, sizeof(basis), "host work before the step's "
		    "first launch or wait (%.3f ms per step) done ahead, in "
		    "another thread or process, overlapping the rest of the "
		    "step", (double)w->pre_sum / (double)w->steps / 1e6);
		arr[na++] = what_if_entry(w, "overlap the leading host work "
		    "with the rest of the step",
		    "overlap", w->saved[W_OVERLAP], basis);
	}
	if (w->applies[W_PINNED]) {
		int d = w->pinned_gbps[0] > 0 ? 0 : w->pinned_gbps[1] > 0 ?
		    1 : 2;
		snprintf(basis, sizeof(basis), "pageable copies at %.1f GB/s "
		    "(pinned bandwidth %s)", w->pinned_gbps[d],
		    w->pinned_basis[d] && strcmp(w->pinned_basis[d],
		    "device") == 0 ? "of the device's link" :
		    "measured in this trace");
		if (w->pinned_gbps[d] > 0)
			arr[na++] = what_if_entry(w, "pin the host memory "
			    "of pageable copies", "pinned", w->saved[W_PINNED],
			    basis);
	}
	if (w->applies[W_GRAPH]) {
		snprintf(basis, sizeof(basis), "one launch call per step "
		    "(%.1f us, the median launch) instead of one per kernel",
		    (double)w->graph_launch_ns / 1e3);
		arr[na++] = what_if_entry(w, "capture the step's kernel "
		    "launches in a CUDA graph", "graph", w->saved[W_GRAPH],
		    basis);
	}
	if (w->applies[W_GC])
		arr[na++] = what_if_entry(w, "move garbage collection out "
		    "of the steps (gc.freeze() after warm-up, or "
		    "gc.collect() between steps)", "gc", w->saved[W_GC],
		    "the step's collections removed");
	if (w->applies[W_IMPORT])
		arr[na++] = what_if_entry(w, "import before the first step",
		    "import", w->saved[W_IMPORT],
		    "the step's imports removed");
	if (w->applies[W_WAIT] && event_loop_tick(w))
		/* a tick waits in its selector when every task awaits
		 * something: more workers would not come sooner, and on a
		 * server it is often the clients (a lightly loaded one's
		 * "largest saving") */
		arr[na++] = what_if_entry(w, "have what the event loop's "
		    "tasks await ready sooner (the loop idled, every task "
		    "waiting: on a server, often for its clients)", "wait",
		    w->saved[W_WAIT], "the loop's waits (its selector's, "
		    "sleeps, locks, queues, pipes and sockets) removed");
	else if (w->applies[W_WAIT])
		/* how: by what it waits for (step_wait's finding: more
		 * workers, or cheaper work where their cores are full) */
		arr[na++] = what_if_entry(w, "have what the step waits for "
		    "ready when it asks",
		    "wait", w->saved[W_WAIT], "the step's waits (sleeps, "
		    "locks, queues, pipes and sockets) removed");
	for (uint32_t i = 0; i < w->nsite && na < sizeof(arr) /
	    sizeof(arr[0]); i++) {
		char change[900];
		snprintf(change, sizeof(change), "defer the synchronisation "
		    "%s to the step's end", w->nm.str.e[w->site[i].site].p);
		snprintf(basis, sizeof(basis), "the wait removed, one at the "
		    "step's end for all its GPU work (in %" PRIu64 " of %"
		    PRIu64 " steps)", w->site[i].steps, w->steps);
		arr[na++] = what_if_entry(w, change, "sync", w->site[i].saved,
		    basis);
	}
	qsort(arr, na, sizeof(arr[0]), by_saving);
	wi = json_array();
	for (size_t i = 0; i < na; i++)
		json_array_append_new(wi, arr[i]);
	rest = json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
	    "mean_ns", JI((int64_t)mean), "coverage", json_real(ist_round(
	    w->span_e > w->span_s ? (double)w->sum_wall / (double)(w->span_e -
	    w->span_s) : 1.0, 3)),
	    "wall", dist_json(&w->d_wall), "host_busy", dist_json(&w->d_host),
	    "gpu_busy", w->gpu_ops ? dist_json(&w->d_gpu) : json_null(),
	    "gpu_idle", w->gpu_ops ? dist_json(&w->d_idle) : json_null(),
	    "copies", dist_json(&w->d_copy), "sync", dist_json(&w->d_sync),
	    "slowest", slow, "critical_path", cp, "what_if", wi);
	if ((j = an_step_json(s, w->seen, w->steps)) == NULL || rest == NULL ||
	    json_object_update(j, rest) != 0) {
		json_decref(j);
		j = NULL;
	}
	json_decref(rest);
	return j;
}
