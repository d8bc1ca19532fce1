/*
 * steps.c - a program's steps: the unit of work it repeats (a training or
 * inference step, a request), found in a trace without being told, for
 * analysis windows by step and --skip-warmup.
 *
 * Two passes over a merged trace.  The first counts, per thread and name
 * (and line, for a function), the scopes, NVTX ranges and Python
 * functions (those with a file: not builtins) that recur, an occurrence
 * nested in another of its own name (recursion) not counted; the second
 * collects the chosen one's occurrences.  The step is the candidate with
 * the most time among those that occur at least three times (a function:
 * none of them more than half its time, as asyncio.run's
 * run_until_complete, which spans the run once and then twice briefly;
 * for one of Python's library, less than 95% of its time in the calls
 * made to wait that it makes itself or through the library's functions,
 * and off a CPU outside them (off_cpu), as a wrapper of a wait, a
 * queue's feeder thread's Condition.wait, and
 * for the library's machinery, half the time from its first to its last
 * in its occurrences; at most half of them inside an import; a function
 * of the program's in a child process runs inside its ancestors' calls
 * open around it, and a wrapper of a wait that is the outermost of the
 * library's around such a one in half its calls stays one: Pool.map, as
 * does one that waits for a child process to end: subprocess.run):
 * on the thread that launches the most CUDA work (else any), a scope or
 * NVTX range the program marked before any Python function, and the
 * library's functions on threads of their own (plumbing) after the
 * others.  An iterator's __next__, and a generator, count the iterations
 * of the loop that calls them, not their calls (enum ist_step_loop), and
 * are no wrappers of a wait (a loop's iterations wait for its items): a
 * function's candidate turns a generator's at its first run that yielded,
 * its count begun again.  Memory: one entry per
 * thread and name, each thread's open occurrences, and the chosen one's
 * occurrences.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze_int.h"
#include "internal.h"
#include "steps.h"

#define MIN_STEPS 3
/* a step is warm-up while it takes more than this times the median */
#define SETTLED 1.5
/* a thread's waits kept since its last CPU reading (off_cpu), at most */
#define WAITS_KEPT 256

struct cand {
	char *name;              /* NULL: a free slot */
	size_t nlen;             /* its bytes (a name may hold a NUL) */
	uint64_t nid;            /* the name's id (ist_steps_add_id) */
	int64_t pid, tid;
	/* a function's line and file (functions of one name in a process
	 * are told apart by line: lambdas, comprehensions, a property's
	 * getter and setter); 0 and NULL for a scope or range */
	int64_t line;
	char *file;
	int kind;                /* 0 scope or NVTX range, 1 Python function */
	enum ist_type type;
	uint64_t count;
	int64_t total, max, last_end;
	int64_t first;           /* the first counted occurrence's start */
	int64_t wait;            /* of total, in the calls made to wait */
	uint64_t in_imp;         /* occurrences inside an import */
	bool lib;                /* a function of Python's library */
	int loop;                /* enum ist_step_loop: an iterator's
	                          * __next__ or a generator counts the
	                          * iterations of its loop */
	int64_t iter_s;          /* the iteration under way's start, or
	                          * INT64_MIN none */
	int64_t in_own;          /* of total, inside a recurring function of
	                          * the program's (lib only) */
	uint64_t held;           /* occurrences that ran a function of the
	                          * program's (lib only) */
	uint64_t xheld;          /* of them, those around one run in a child
	                          * process (lib only) */
	uint64_t xinner;         /* of those, the ones inside another of the
	                          * library's (Event.wait in Pool.map) */
	uint64_t child;          /* occurrences that waited for a child
	                          * process to end (subprocess.run) */
	uint64_t in_lib;         /* a loop's iterations whose loop ran in a
	                          * function of the library's (lib only) */
	uint64_t overlapped;     /* a scope's or range's occurrences begun
	                          * while one counted was open (concurrent
	                          * requests of an event loop, or nested) */
	uint64_t in_next;        /* occurrences inside a loop's fetch (an
	                          * iterator's __next__ or a generator's run:
	                          * a DataLoader's _next_data) */
};

/* a thread's counted occurrences still open, innermost last: a wait call
 * inside them is theirs */
struct open_occ {
	uint64_t nid;
	int64_t line, start, end;
	bool own;                /* of a function of the program's (not the
	                          * library's, no module's body) met before */
	bool lib;                /* of a function of Python's library */
	bool held;               /* a function of the program's ran inside
	                          * (then so did inside every one below) */
	bool next;               /* an iterator's __next__ or a generator's
	                          * run: a loop's fetch */
	bool xheld;              /* a function of the program's ran inside,
	                          * in a child process (then so did inside
	                          * every one below) */
	bool child;              /* it waited for a child process to end */
};
struct othread {
	int64_t tid;
	int64_t pid;             /* 0 until a function is met on it */
	struct open_occ *o;
	uint32_t n, cap;
	uint32_t own;            /* of o, those own */
	uint32_t nnext;          /* of o, those of a loop's fetch (next) */
	uint32_t sweep_at;       /* n at which the ended ones are swept */
	int64_t imp_end;         /* the end of its last import */
	int64_t next_end;        /* the end of its last builtins.next */
	/* its last thread.cpu_ns (cpu_ts 0: none), and its waits that end
	 * after it */
	int64_t cpu_ts;
	double cpu_v;
	struct span { int64_t s, e; } *wt;
	uint32_t nwt, capwt;
};

struct launcher {
	int64_t tid;
	uint64_t launches;
};

struct ist_steps {
	char *want;              /* --step NAME, or NULL */
	size_t wantlen;
	int64_t lo, hi;          /* the calls' and marks' span: the run */
	struct ist_strtab names; /* the ids of ist_steps_add's names */
	struct cand *c;
	size_t n, cap;           /* cap: a power of two */
	uint32_t *last;          /* a name id -> the slot + 1 its candidate
	                          * was last found in (checked: a thread of
	                          * its own, or the table grown, moves it) */
	size_t nlast;
	struct launcher *l;
	uint32_t nl, capl;
	struct othread *th;
	uint32_t nth, capth, th_last;
	struct u64map thmap;     /* tid -> th index + 1 */
	int64_t *ppid;           /* a process's first process.ppid */
	uint32_t nproc, capproc;
	struct u64map procmap;   /* pid -> ppid index + 1 */
	uint8_t *waits;          /* a C call's name id -> 1 a wait, 2 not,
	                          * 0 not yet known */
	size_t nwaits;
	const struct cand *chosen;
	struct ist_step *s;      /* the chosen one's occurrences */
	uint32_t ns, caps;
	int64_t last_end;
	int64_t iter_s;          /* the chosen iterator's iteration under way,
	                          * or INT64_MIN */
	int64_t next_end;        /* the end of the last builtins.next on the
	                          * chosen one's thread */
};

/* The library's iterators whose __next__ is a method of another name
 * (`__next__ = next`): its code, and the trace, name it so.  A Pool's
 * imap and imap_unordered loop had stepped by a worker's task function,
 * not by the loop's iterations */
static const char *const next_alias[] = {
	"multiprocessing.pool.IMapIterator.next",
};

bool
ist_steps_iterator(const char *name, size_t n)
{
	if (n > 9 && memcmp(name + n - 9, ".__next__", 9) == 0)
		return true;
	for (size_t i = 0; i < sizeof(next_alias) / sizeof(next_alias[0]); i++)
		if (strlen(next_alias[i]) == n && memcmp(name, next_alias[i],
		    n) == 0)
			return true;
	return false;
}

bool
ist_steps_next_call(const struct ist_event *ev)
{
	return ev->type == IST_CPU_CALL && !IST_HAS(ev, IST_F_FILE) &&
	    IST_HAS(ev, IST_F_END) && an_name_is(ev, "builtins.next");
}

bool
ist_steps_loop_end(const struct ist_event *ev, int loop)
{
	if (loop == IST_LOOP_GEN)
		return !(IST_HAS(ev, IST_F_YIELDED) && ev->yielded);
	return IST_HAS(ev, IST_F_RAISED) && ev->raised;
}

/*
 * A loop's call at ev: the iteration under way (*open, INT64_MIN none)
 * ends where it begins, and it begins the next unless it ends the loop.
 * Returns the iteration ended, [*s, ev's start), or false for none.
 */
static bool
iteration(int64_t *open, const struct ist_event *ev, int loop, int64_t *s)
{
	*s = *open;
	*open = ist_steps_loop_end(ev, loop) ? INT64_MIN : ev->start_ns;
	return *s != INT64_MIN && ev->start_ns >= *s;
}

static uint64_t
hash(int64_t tid, uint64_t nid, int64_t line)
{
	return an_mix64((nid * 0x9e3779b97f4a7c15ull ^ (uint64_t)tid) +
	    (uint64_t)line * 0xbf58476d1ce4e5b9ull);
}

/* the slot of (tid, name id, line): its candidate, or the free slot */
static struct cand *
slot(struct ist_steps *s, int64_t tid, uint64_t nid, int64_t line)
{
	size_t i = hash(tid, nid, line) & (s->cap - 1);

	for (; s->c[i].name; i = (i + 1) & (s->cap - 1))
		if (s->c[i].nid == nid && s->c[i].tid == tid &&
		    s->c[i].line == line)
			return &s->c[i];
	return &s->c[i];
}

static int
grow(struct ist_steps *s)
{
	struct cand *old = s->c;
	size_t ocap = s->cap, ncap = ocap ? ocap * 2 : 256;

	if ((s->c = calloc(ncap, sizeof(*s->c))) == NULL) {
		s->c = old;
		return -1;
	}
	s->cap = ncap;
	for (size_t k = 0; k < ocap; k++)
		if (old[k].name)
			*slot(s, old[k].tid, old[k].nid, old[k].line) = old[k];
	free(old);
	return 0;
}

enum ist_status
ist_steps_new(struct ist_steps **out, const char *name,
    struct ist_error *err)
{
	struct ist_steps *s = calloc(1, sizeof(*s));

	if (s == NULL || grow(s) != 0 || (name && (s->want = strdup(name)) ==
	    NULL)) {
		ist_steps_free(s);
		ist_seterr(err, IST_ENOMEM, "cannot find steps: %s",
		    strerror(ENOMEM));
		return IST_ENOMEM;
	}
	s->wantlen = name ? strlen(name) : 0;
	s->lo = INT64_MAX;
	s->hi = INT64_MIN;
	*out = s;
	return IST_OK;
}

/* Which kind of candidate ev is: 0 a mark, 1 a Python function, -1 none */
static int
kind_of(const struct ist_event *ev)
{
	if (!IST_HAS(ev, IST_F_START) || !IST_HAS(ev, IST_F_END) ||
	    !IST_HAS(ev, IST_F_NAME) || !IST_HAS(ev, IST_F_TID) ||
	    ev->end_ns < ev->start_ns)
		return -1;
	if (ev->type == IST_SCOPE || ev->type == IST_NVTX_RANGE)
		return 0;
	if (ev->type == IST_CPU_CALL && IST_HAS(ev, IST_F_FILE) &&
	    ev->file.n > 0 && ev->file.p[0] != '<' &&
	    (ev->name.n < 10 || memcmp(ev->name.p, "importlib.", 10) != 0))
		return 1;
	return -1;
}

/* A file of Python's own library: under lib/python3.N/, not in its
 * site-packages or dist-packages */
static bool
stdlib_file(const char *f)
{
	const char *p = strstr(f, "/lib/python3");

	return p && strstr(p, "-packages/") == NULL;
}

/* the line that tells ev's function from others of its name (kind 1) */
static int64_t
line_of(const struct ist_event *ev, int kind)
{
	return kind == 1 && IST_HAS(ev, IST_F_LINE) ? ev->line : 0;
}

/* t's occurrences ended by now, closed */
static void
close_ended(struct othread *t, int64_t now)
{
	uint32_t k = 0;

	while (t->n && t->o[t->n - 1].end <= now) {
		t->own -= t->o[--t->n].own;
		t->nnext -= t->o[t->n].next;
	}
	/* calls that do not nest (a generated trace's: the 10 M-event
	 * bench's held 4 M open) leave ended ones under one still open:
	 * swept as their number doubles */
	if (t->n < 64 || t->n < t->sweep_at)
		return;
	t->own = t->nnext = 0;
	for (uint32_t i = 0; i < t->n; i++)
		if (t->o[i].end > now) {
			t->o[k++] = t->o[i];
			t->own += t->o[i].own;
			t->nnext += t->o[i].next;
		}
	t->n = k;
	t->sweep_at = 2 * k;
}

/* tid's; NULL for lack of memory */
static struct othread *
thread_of(struct ist_steps *s, int64_t tid)
{
	struct othread *t;
	bool created;
	int64_t i;

	if (s->th_last < s->nth && s->th[s->th_last].tid == tid)
		return &s->th[s->th_last];
	if ((i = an_stat_of(&s->thmap, (void **)&s->th, &s->nth, &s->capth,
	    sizeof(*s->th), (uint64_t)tid, &created)) < 0)
		return NULL;
	t = &s->th[i];
	t->tid = tid;
	s->th_last = (uint32_t)i;
	return t;
}

/* tid's open occurrences, those ended by now closed; NULL for lack of
 * memory */
static struct othread *
thread_at(struct ist_steps *s, int64_t tid, int64_t now)
{
	struct othread *t = thread_of(s, tid);

	if (t != NULL)
		close_ended(t, now);
	return t;
}

/* A function of the program's starts on t: the occurrences open around
 * it ran one.  Marked from the innermost out to the first already marked,
 * below which all are: each is marked once */
static void
hold(struct ist_steps *s, struct othread *t, int64_t tid)
{
	struct cand *c;

	for (uint32_t i = t->n; i-- > 0 && !t->o[i].held;) {
		t->o[i].held = true;
		if (t->o[i].lib && (c = slot(s, tid, t->o[i].nid,
		    t->o[i].line))->name)
			c->held++;
	}
}

/* The process that started pid (its first process.ppid), 0 unknown */
static int64_t
parent_of(struct ist_steps *s, int64_t pid)
{
	bool found;
	uint32_t *v;

	if (s->procmap.n == 0 || (v = an_u64map_slot(&s->procmap,
	    (uint64_t)pid, &found)) == NULL || !found)
		return 0;
	return s->ppid[*v - 1];
}

/* hold_across's, in process ppid */
static void
hold_in(struct ist_steps *s, int64_t ppid, int64_t st, int64_t en)
{
	struct cand *c;

	for (uint32_t k = 0; k < s->nth; k++) {
		struct othread *u = &s->th[k];
		uint32_t i = u->n;
		if (u->pid != ppid)
			continue;
		close_ended(u, st);
		while (i > 0 && u->o[i - 1].end < en)
			i--;
		while (i-- > 0 && !u->o[i].xheld) {
			struct open_occ *o = &u->o[i];
			o->xheld = true;
			if (!o->lib || (c = slot(s, u->tid, o->nid,
			    o->line))->name == NULL)
				continue;
			c->xheld++;
			c->xinner += i > 0 && u->o[i - 1].lib;
			if (!o->held)
				c->held++;
			o->held = true;
		}
	}
}

/* how far up a process's ancestors a call of its is held (a worker of a
 * forkserver's, Python 3.14's default start method, is the main
 * process's grandchild) */
#define ANCESTORS 4

/*
 * A function of the program's runs in process pid, [st, en): the calls
 * open around it on its ancestors' threads, begun before it and ended
 * after, ran it too (a Pool.map in the main loop, waiting for the pool's
 * workers).  Marked from the innermost that does out to the first
 * already marked, below which all are
 */
static void
hold_across(struct ist_steps *s, int64_t pid, int64_t st, int64_t en)
{
	for (int d = 0; d < ANCESTORS; d++) {
		int64_t ppid = parent_of(s, pid);
		if (ppid <= 0 || ppid == pid)
			return;
		hold_in(s, ppid, st, en);
		pid = ppid;
	}
}

/* ev a call made to wait?  By its name's id when it has one (0: none) */
static bool
is_wait(struct ist_steps *s, const struct ist_event *ev, uint64_t nid)
{
	if (nid == 0 || nid > UINT32_MAX)
		return an_is_wait(ev->name.p, ev->name.n);
	return an_is_wait_id(&s->waits, &s->nwaits, (uint32_t)nid,
	    ev->name.p, ev->name.n);
}

/* a call made to wait, [ws, we) on tid: the innermost occurrence open
 * around it (the Python function that called it, but for one nested in
 * another of its name) waited that long, and so did the library's
 * functions around a function of the library's, up to the first of the
 * program's: a wait wrapped in the library's wrappers (Thread.start in
 * Event.wait in Condition.wait in lock.acquire) is each one's */
static int
add_wait(struct ist_steps *s, int64_t tid, int64_t ws, int64_t we,
    bool child)
{
	struct othread *t = thread_at(s, tid, ws);
	struct cand *c;
	struct span *w;

	if (t == NULL)
		return -1;
	/* for off_cpu, while it reads a CPU time: a thread that is read
	 * none keeps none, and one whose readings stopped (WAITS_KEPT
	 * since its last) none till the next, rather than every one */
	if (t->cpu_ts && t->nwt >= WAITS_KEPT) {
		t->cpu_ts = 0;
		t->nwt = 0;
	} else if (t->cpu_ts) {
		if ((w = an_push((void **)&t->wt, &t->nwt, &t->capwt,
		    sizeof(*w))) == NULL)
			return -1;
		*w = (struct span){ ws, we };
	}
	for (uint32_t i = t->n; i-- > 0;) {
		struct open_occ *o = &t->o[i];
		if (i + 1 < t->n && !(o->lib && t->o[i + 1].lib))
			break;
		if ((c = slot(s, tid, o->nid, o->line))->name) {
			c->wait += (we < o->end ? we : o->end) - ws;
			c->child += child && !o->child;
		}
		o->child |= child;
	}
	return 0;
}

/* of [a, b), the time t waited (its waits since its last reading) */
static int64_t
waited(const struct othread *t, int64_t a, int64_t b)
{
	int64_t n = 0;

	for (uint32_t k = 0; k < t->nwt; k++) {
		int64_t x = t->wt[k].s > a ? t->wt[k].s : a;
		int64_t y = t->wt[k].e < b ? t->wt[k].e : b;
		n += y > x ? y - x : 0;
	}
	return n;
}

/*
 * A thread.cpu_ns of t at ts: the time since its last one that t spent
 * off a CPU, not in a wait, is a wait's to the occurrences add_wait would
 * give a wait to (t queued for a core, or for the GIL another thread
 * held: Thread.start's _thread.start_new_thread ran 14 ms on a loaded
 * machine, and 14 ms more went by in its Python code before its
 * Event.wait, of which 0.2 ms on a CPU, and the three starts fell short of
 * a wrapper of a wait).  The interval's time outside its waits was on a
 * CPU at one rate (the collector reads a thread's CPU clock at each call
 * or return a millisecond or more after its last, so that a stretch off
 * a CPU is mostly an interval of its own; laid first where the rest of
 * the interval could not hold the CPU time, a library call preempted as
 * often as the code around it, half of a 10 ms interval on a machine
 * that ran the thread half the time, had looked all off a CPU).
 */
static void
off_cpu(struct ist_steps *s, struct othread *t, int64_t ts, double v)
{
	int64_t r0 = t->cpu_ts, nw, d;
	uint32_t top = t->n, k = 0;
	double rate;
	struct cand *c;

	if (t->cpu_ts == 0 || ts <= r0) {
		if (t->cpu_ts == 0) {
			t->cpu_ts = ts;
			t->cpu_v = v;
		}
		return;
	}
	d = v > t->cpu_v ? ist_d2i(v - t->cpu_v) : 0;
	/* the share of the interval's time outside its waits on a CPU */
	nw = ts - r0 - waited(t, r0, ts);
	rate = nw <= 0 || d >= nw ? 1 : (double)d / (double)nw;
	while (top > 0 && t->o[top - 1].end <= r0)
		top--;           /* ended before: closed at the next call */
	for (uint32_t i = top; i-- > 0;) {
		const struct open_occ *o = &t->o[i];
		int64_t a = o->start > r0 ? o->start : r0;
		int64_t b = o->end < ts ? o->end : ts, off;
		if (i + 1 < top && !(o->lib && t->o[i + 1].lib))
			break;
		if (b <= a)
			continue;
		off = ist_d2i((double)(b - a - waited(t, a, b)) * (1 - rate));
		if (off > 0 && (c = slot(s, t->tid, o->nid, o->line))->name)
			c->wait += off;
	}
	for (uint32_t i = 0; i < t->nwt; i++)
		if (t->wt[i].e > ts)
			t->wt[k++] = t->wt[i];
	t->nwt = k;
	t->cpu_ts = ts;
	t->cpu_v = v;
}

/* a process.ppid: the first one, the process that started it (not the
 * one it was handed to when that ended) */
static int
add_parent(struct ist_steps *s, const struct ist_event *ev)
{
	int64_t v = ev->value_is_int ? ev->ivalue : ist_d2i(ev->value);
	bool created;
	int64_t i;

	if (v <= 0)
		return 0;
	if ((i = an_stat_of(&s->procmap, (void **)&s->ppid, &s->nproc,
	    &s->capproc, sizeof(*s->ppid), (uint64_t)ev->pid, &created)) < 0)
		return -1;
	if (created)
		s->ppid[i] = v;
	return 0;
}

static int
count_launch(struct ist_steps *s, int64_t tid)
{
	struct launcher *l;

	for (uint32_t i = 0; i < s->nl; i++)
		if (s->l[i].tid == tid) {
			s->l[i].launches++;
			return 0;
		}
	if ((l = an_push((void **)&s->l, &s->nl, &s->capl,
	    sizeof(*l))) == NULL)
		return -1;
	*l = (struct launcher){ tid, 1 };
	return 0;
}

enum ist_status
ist_steps_add_id(struct ist_steps *s, const struct ist_event *ev,
    uint64_t nid, struct ist_error *err)
{
	struct cand *c;
	int64_t line, it0;
	int k;

	if (ev->type == IST_CUDA_API && IST_HAS(ev, IST_F_TID) &&
	    IST_HAS(ev, IST_F_CORRELATION)) {
		if (count_launch(s, ev->tid) != 0)
			goto nomem;
		return IST_OK;
	}
	if (IST_HAS(ev, IST_F_START) && IST_HAS(ev, IST_F_END) &&
	    ev->end_ns >= ev->start_ns) {
		if (ev->start_ns < s->lo)
			s->lo = ev->start_ns;
		if (ev->end_ns > s->hi)
			s->hi = ev->end_ns;
	}
	if ((k = kind_of(ev)) < 0) {
		struct othread *t;
		if (ev->type == IST_COUNTER && IST_HAS(ev, IST_F_PID) &&
		    an_name_is(ev, "process.ppid")) {
			if (add_parent(s, ev) != 0)
				goto nomem;
			return IST_OK;
		}
		if (ev->type == IST_COUNTER && IST_HAS(ev, IST_F_TID) &&
		    an_name_is(ev, "thread.cpu_ns")) {
			if ((t = thread_of(s, ev->tid)) == NULL)
				goto nomem;
			off_cpu(s, t, ev->ts_ns, ev->value_is_int ?
			    (double)ev->ivalue : ev->value);
			return IST_OK;
		}
		if (ev->type != IST_CPU_CALL || !IST_HAS(ev, IST_F_START) ||
		    !IST_HAS(ev, IST_F_END) || !IST_HAS(ev, IST_F_TID) ||
		    ev->end_ns <= ev->start_ns)
			return IST_OK;
		if (!IST_HAS(ev, IST_F_FILE) && is_wait(s, ev, nid)) {
			if (add_wait(s, ev->tid, ev->start_ns, ev->end_ns,
			    an_name_is(ev, "posix.waitpid") ||
			    an_name_is(ev, "posix.wait4") ||
			    an_name_is(ev, "posix.waitid") ||
			    an_name_is(ev, "posix.wait")) != 0)
				goto nomem;
		} else if (ist_steps_next_call(ev)) {
			if ((t = thread_at(s, ev->tid, ev->start_ns)) == NULL)
				goto nomem;
			if (ev->end_ns > t->next_end)
				t->next_end = ev->end_ns;
		} else if (IST_HAS(ev, IST_F_FILE) &&
		    an_is_import(ev->name.p, ev->name.n)) {
			if ((t = thread_at(s, ev->tid, ev->start_ns)) == NULL)
				goto nomem;
			if (ev->end_ns > t->imp_end)
				t->imp_end = ev->end_ns;
		}
		return IST_OK;
	}
	if (s->want && (ev->name.n != s->wantlen ||
	    memcmp(ev->name.p, s->want, ev->name.n) != 0))
		return IST_OK;
	line = line_of(ev, k);
	if (nid < s->nlast && s->last[nid] && (c = &s->c[s->last[nid] -
	    1])->name && c->nid == nid && c->tid == ev->tid && c->line == line)
		goto found;
	c = slot(s, ev->tid, nid, line);
	if (c->name == NULL) {
		if ((s->n + 1) * 2 > s->cap) {
			if (grow(s) != 0)
				goto nomem;
			c = slot(s, ev->tid, nid, line);
		}
		if ((c->name = malloc(ev->name.n + 1)) == NULL)
			goto nomem;
		memcpy(c->name, ev->name.p, ev->name.n);
		c->name[ev->name.n] = '\0';
		if (k == 1 && (c->file = strndup(ev->file.p,
		    ev->file.n)) == NULL) {
			free(c->name);
			c->name = NULL;
			goto nomem;
		}
		c->nlen = ev->name.n;
		c->lib = k == 1 && stdlib_file(c->file);
		c->nid = nid;
		c->line = line;
		c->tid = ev->tid;
		c->pid = ev->pid;
		c->kind = k;
		c->type = ev->type;
		c->last_end = INT64_MIN;
		c->loop = k == 1 && ist_steps_iterator(c->name, c->nlen) ?
		    IST_LOOP_NEXT : IST_LOOP_NONE;
		c->iter_s = INT64_MIN;
		s->n++;
	}
	if (nid <= UINT32_MAX && ist_idmap_put(&s->last, &s->nlast,
	    (uint32_t)nid, (uint32_t)(c - s->c) + 1) != 0)
		goto nomem;
found:
	if (ev->start_ns < c->last_end) {
		/* inside another of its name: a function's recursion, or a
		 * scope's or range's nesting or concurrency */
		c->overlapped += k == 0;
		return IST_OK;
	}
	if (c->loop == IST_LOOP_NONE && k == 1 && IST_HAS(ev, IST_F_YIELDED) &&
	    ev->yielded) {
		/* a generator's: its loop's iterations from here */
		c->loop = IST_LOOP_GEN;
		c->count = 0;
		c->total = c->max = 0;
	}
	if (c->loop == IST_LOOP_NONE) {
		struct othread *t = k == 1 ? thread_at(s, ev->tid,
		    ev->start_ns) : NULL;
		if (k == 1 && t == NULL)
			goto nomem;
		/* counted, not looked for: calls that do not nest (a
		 * generated trace's) left thousands open, and each call
		 * looked through them (is-analyze at 54,000 events/s) */
		c->in_next += t != NULL && t->nnext > 0;
		if (c->count++ == 0)
			c->first = ev->start_ns;
		c->total += ev->end_ns - ev->start_ns;
		if (ev->end_ns - ev->start_ns > c->max)
			c->max = ev->end_ns - ev->start_ns;
	} else {
		struct othread *t = thread_at(s, ev->tid, ev->start_ns);
		if (t == NULL)
			goto nomem;
		if (ev->start_ns < t->next_end)
			return IST_OK;  /* next(it): no loop's */
		if (iteration(&c->iter_s, ev, c->loop, &it0)) {
			c->count++;
			c->total += ev->start_ns - it0;
			if (ev->start_ns - it0 > c->max)
				c->max = ev->start_ns - it0;
			/* looped over by a function of the library's */
			c->in_lib += c->lib && t->n && t->o[t->n - 1].lib;
		}
	}
	c->last_end = ev->end_ns;
	if (k == 1) {
		struct othread *t = thread_at(s, ev->tid, ev->start_ns);
		struct open_occ *o;
		if (t == NULL || (o = an_push((void **)&t->o, &t->n, &t->cap,
		    sizeof(*o))) == NULL)
			goto nomem;
		bool prog = !c->lib && (c->nlen < 9 || memcmp(c->name +
		    c->nlen - 9, ".<module>", 9) != 0);
		if (c->lib && t->own)
			c->in_own += ev->end_ns - ev->start_ns;
		t->pid = ev->pid;
		if (prog) {
			hold(s, t, ev->tid);
			hold_across(s, ev->pid, ev->start_ns, ev->end_ns);
		}
		*o = (struct open_occ){ nid, line, ev->start_ns, ev->end_ns,
		    prog && c->count >= 2, c->lib, false,
		    c->loop != IST_LOOP_NONE, false, false };
		t->own += o->own;
		t->nnext += o->next;
		c->in_imp += ev->start_ns < t->imp_end;
	}
	return IST_OK;
nomem:
	ist_seterr(err, IST_ENOMEM, "cannot find steps: %s", strerror(ENOMEM));
	return IST_ENOMEM;
}

enum ist_status
ist_steps_add(struct ist_steps *s, const struct ist_event *ev,
    struct ist_error *err)
{
	uint32_t nid = 0;

	if (kind_of(ev) >= 0 && (nid = ist_strtab_intern(&s->names,
	    ev->name.p, ev->name.n, NULL)) == 0) {
		ist_seterr(err, IST_ENOMEM, "cannot find steps: %s",
		    strerror(ENOMEM));
		return IST_ENOMEM;
	}
	return ist_steps_add_id(s, ev, nid, err);
}

/* A function of Python's library on a thread other than its process's
 * main one: plumbing (a pool's result handler, a queue's feeder) */
static bool
helper(const struct cand *c)
{
	return c->lib && c->tid != c->pid;
}

/* A function of Python's library that seldom runs one of the program's
 * (fewer than a quarter of its calls do): the library's own machinery (a
 * pool worker's SimpleQueue.put pickling and sending its results, as long
 * as the main loop's step while it waits for the consumer).  An event
 * loop's tick runs the program's coroutines; an iterator's or a
 * generator's loop holds the program's body, but for one the library
 * loops over itself, most iterations in a function of its own (a
 * generator expression subprocess joins over PATH's directories, 2,002
 * items a call, had been the step of a program that ran 20 subprocesses) */
static bool
machinery(const struct cand *c)
{
	return c->lib && (c->loop == IST_LOOP_NONE ? c->held * 4 < c->count :
	    c->in_lib * 2 > c->count);
}

/* b is a better step than a; blib, alib: each is the library's, to rank
 * after the program's own unless that has less than a LIB_BEYOND-th of
 * its time */
#define LIB_BEYOND 20
static bool
better(const struct cand *b, bool blib, const struct cand *a, bool alib,
    int64_t launcher)
{
	bool bl = b->tid == launcher, al = a->tid == launcher;

	if (bl != al)
		return bl;
	if (b->kind != a->kind)
		return b->kind < a->kind;
	/* the program's own first, but for a trifle beside the library's
	 * (a generator expression over 2,000 items once at start-up, 1.7 ms,
	 * beside 20 subprocess.run calls, 147 ms): the most time then */
	if (blib != alib && (blib ? a : b)->total * LIB_BEYOND >=
	    (blib ? b : a)->total)
		return !blib;
	if (b->total != a->total)
		return b->total > a->total;
	/* a tie: not the hash table's order, which no user can see */
	if (b->count != a->count)
		return b->count > a->count;
	if (b->tid != a->tid)
		return b->tid < a->tid;
	{
		size_t n = b->nlen < a->nlen ? b->nlen : a->nlen;
		int c = memcmp(b->name, a->name, n);
		if (c || b->nlen != a->nlen)
			return c ? c < 0 : b->nlen < a->nlen;
	}
	return b->line < a->line;
}

/* A candidate that can be a step: a function that spans the run once is
 * none, whatever else it did twice; nor one of Python's library that
 * only wraps a wait (a Condition's wait in a queue's feeder thread: a
 * program's own function that sleeps is a step; one that waits for a
 * child process to end in half its calls or more runs another program,
 * subprocess.run, and is one), nor the library's
 * machinery that holds less than half the time from its first call's
 * start to its last one's end (the plumbing between a program's pieces
 * of work: a Condition's _acquire_restore, a Thread's _stop, four calls
 * of some microseconds in three threads' half a second of work) or less
 * than a twentieth of the run (three Thread.__init__ in a row, 73 us of
 * 200 ms), nor one
 * called mostly while modules are imported (dataclasses' wrap, 71 times
 * in `import torch`): a scope or range marked is one.
 *
 * A look during the first pass (peek) sees a step's first calls only: one
 * of them long (a warm-up, a preemption on a loaded machine) holds more
 * than half their time, and would keep the step out until the others
 * outweighed it (a 60 ms stall in the 100th of 50,000 calls of 7 us: the
 * step led at the 256k-th event, not the 16k-th, and the trace was read
 * again in full).  There a function called PEEK_MANY times or more is
 * one whatever its longest call; the choice at the end still weighs it,
 * and drops the measure begun when it is not the step.
 */
#define PEEK_MANY 16
static bool
eligible(const struct ist_steps *s, const struct cand *c, bool peek)
{
	return c->name != NULL && c->count >= MIN_STEPS && (c->kind != 1 ||
	    ((c->max <= c->total / 2 || (peek && c->count >= PEEK_MANY)) &&
	    !(c->wait >= c->total / 20 * 19 && c->loop == IST_LOOP_NONE &&
	    c->lib && (c->xheld - c->xinner) * 2 < c->count &&
	    c->child * 2 < c->count) && !(c->loop == IST_LOOP_NONE &&
	    machinery(c) &&
	    (c->total < (c->last_end - c->first) / 2 ||
	    c->total < (s->hi - s->lo) / 20)) &&
	    c->in_imp * 2 <= c->count));
}

/*
 * The best candidate so far, or NULL.  The library's functions rank after
 * the program's own: on threads of their own (plumbing), and when half
 * their time or more lies inside a function of the program's that
 * recurs (a ProcessPoolExecutor.map loop's result generator, resumed for
 * each result inside the program's step, 93 times in 30 steps and a
 * warm-up, held 2 ms more than the step around it), and when they are its
 * machinery (above); an event loop's tick (asyncio's _run_once) runs the
 * program's coroutines, not inside them, and stays one.  So do the
 * functions, anyone's, most of whose calls are inside a loop's fetch (a
 * DataLoader's _next_data inside its iterator's __next__: it waits for
 * the batch, and once more to end the loop, shutting the workers down,
 * 17 calls in 16 steps and 10 ms more than the iterations around them):
 * the loop's iterations are the step.
 */
static const struct cand *
best(const struct ist_steps *s, bool peek)
{
	const struct cand *chosen = NULL;
	bool chosen_lib = false;
	int64_t launcher = INT64_MIN;
	uint64_t most = 0;

	for (size_t i = 0; i < s->nl; i++)
		if (s->l[i].launches > most) {
			most = s->l[i].launches;
			launcher = s->l[i].tid;
		}
	for (size_t i = 0; i < s->cap; i++) {
		const struct cand *c = &s->c[i];
		bool lib;
		if (!eligible(s, c, peek))
			continue;
		lib = helper(c) || machinery(c) || (c->lib && c->in_own >=
		    c->total / 2) || (c->loop == IST_LOOP_NONE &&
		    c->in_next * 2 > c->count);
		if (chosen == NULL || better(c, lib, chosen, chosen_lib,
		    launcher)) {
			chosen = c;
			chosen_lib = lib;
		}
	}
	return chosen;
}

const char *
ist_steps_choose(struct ist_steps *s)
{
	s->chosen = best(s, false);
	s->last_end = INT64_MIN;
	s->iter_s = INT64_MIN;
	s->next_end = INT64_MIN;
	return s->chosen ? s->chosen->name : NULL;
}

const char *
ist_steps_peek(const struct ist_steps *s, int64_t *pid, int64_t *tid,
    enum ist_type *type, int64_t *line, int *loop)
{
	const struct cand *c = best(s, true);

	if (c == NULL)
		return NULL;
	*pid = c->pid;
	*tid = c->tid;
	*type = c->type;
	*line = c->line;
	*loop = c->loop;
	return c->name;
}

enum ist_status
ist_steps_collect(struct ist_steps *s, const struct ist_event *ev,
    struct ist_error *err)
{
	const struct cand *c = s->chosen;
	struct ist_step *st;
	int64_t from = ev->start_ns;

	if (c != NULL && c->loop && ev->tid == c->tid &&
	    ist_steps_next_call(ev) && ev->end_ns > s->next_end)
		s->next_end = ev->end_ns;
	if (c == NULL || ev->type != c->type || kind_of(ev) < 0 ||
	    ev->tid != c->tid || ev->name.n != c->nlen ||
	    memcmp(ev->name.p, c->name, ev->name.n) != 0 ||
	    line_of(ev, c->kind) != c->line || ev->start_ns < s->last_end)
		return IST_OK;
	if (c->loop && ev->start_ns < s->next_end)
		return IST_OK;          /* next(it): no loop's */
	if (c->loop && !iteration(&s->iter_s, ev, c->loop, &from)) {
		s->last_end = ev->end_ns;
		return IST_OK;
	}
	if ((st = an_push((void **)&s->s, &s->ns, &s->caps,
	    sizeof(*st))) == NULL) {
		ist_seterr(err, IST_ENOMEM, "cannot find steps: %s",
		    strerror(ENOMEM));
		return IST_ENOMEM;
	}
	*st = (struct ist_step){ from, c->loop ? ev->start_ns : ev->end_ns };
	s->last_end = ev->end_ns;
	return IST_OK;
}

const struct ist_step *
ist_steps_get(const struct ist_steps *s, size_t *n, const char **name,
    enum ist_type *type)
{
	*n = s->ns;
	if (name)
		*name = s->chosen ? s->chosen->name : NULL;
	if (type)
		*type = s->chosen ? s->chosen->type : IST_CPU_CALL;
	return s->s;
}

void
ist_steps_chosen(const struct ist_steps *s, int64_t *pid, int64_t *tid,
    enum ist_type *type, int64_t *line, int *loop)
{
	*pid = s->chosen ? s->chosen->pid : 0;
	*tid = s->chosen ? s->chosen->tid : 0;
	*type = s->chosen ? s->chosen->type : IST_CPU_CALL;
	*line = s->chosen ? s->chosen->line : 0;
	*loop = s->chosen ? s->chosen->loop : IST_LOOP_NONE;
}

const char *
ist_steps_file(const struct ist_steps *s)
{
	return s->chosen ? s->chosen->file : NULL;
}

uint64_t
ist_steps_found(const struct ist_steps *s)
{
	return s->chosen ? s->chosen->count : 0;
}

uint64_t
ist_steps_overlapped(const struct ist_steps *s)
{
	return s->chosen ? s->chosen->overlapped : 0;
}

size_t
ist_steps_warmup(const struct ist_steps *s)
{
	int64_t *d, median;
	size_t k = 0;

	if (s->ns < MIN_STEPS || (d = malloc(s->ns * sizeof(*d))) == NULL)
		return 0;
	for (size_t i = 0; i < s->ns; i++)
		d[i] = s->s[i].end - s->s[i].start;
	qsort(d, s->ns, sizeof(*d), an_cmp_i64);
	median = d[s->ns / 2];
	free(d);
	while (k + 1 < s->ns && (double)(s->s[k].end - s->s[k].start) >
	    SETTLED * (double)median)
		k++;
	return k;
}

void
ist_steps_free(struct ist_steps *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->cap; i++) {
		free(s->c[i].name);
		free(s->c[i].file);
	}
	free(s->c);
	free(s->last);
	free(s->l);
	for (uint32_t i = 0; i < s->nth; i++) {
		free(s->th[i].o);
		free(s->th[i].wt);
	}
	free(s->th);
	an_u64map_release(&s->thmap);
	free(s->ppid);
	an_u64map_release(&s->procmap);
	free(s->waits);
	free(s->s);
	free(s->want);
	ist_strtab_release(&s->names);
	free(s);
}

enum ist_status
ist_steps_scan(const char *path, const char *name, struct ist_steps **out,
    struct ist_error *err)
{
	struct ist_steps *s;
	enum ist_status st;

	if ((st = ist_steps_new(&s, name, err)) != IST_OK)
		return st;
	for (int pass = 0; pass < 2; pass++) {
		struct ist_reader *r = NULL;
		const struct ist_event *ev;
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			ist_seterr(err, IST_EIO, "cannot open '%s': %s", path,
			    strerror(errno));
			st = IST_EIO;
			break;
		}
		if ((st = ist_reader_new(&r, ist_fd_source, &fd, path, err)) ==
		    IST_OK) {
			while ((st = ist_reader_next(r, &ev, err)) == IST_OK &&
			    (st = pass ? ist_steps_collect(s, ev, err) :
			    ist_steps_add(s, ev, err)) == IST_OK)
				;
			ist_reader_free(r);
		}
		close(fd);
		/* a truncated trace: the steps it holds */
		if (st != IST_END && st != IST_TRUNCATED)
			break;
		st = IST_OK;
		if (pass == 0 && ist_steps_choose(s) == NULL)
			break;
	}
	if (st != IST_OK) {
		ist_steps_free(s);
		return st;
	}
	*out = s;
	return IST_OK;
}
