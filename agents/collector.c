/* collector.c - rings, definitions and the writer thread of a recorder. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "stream.h"
#include "term.h"
#include "internal.h"

#define RING_MIN (64u << 10)
#define RING_MAX (64u << 20)
#define RING_HUGE (4u << 20)    /* rings this big: in huge pages */

struct def {
	char *name, *file;     /* file: a function's, or an NVTX domain */
	struct ist_wdef wd;    /* the same, and the line, for the writer */
	struct ist_wdef wy;    /* the same, of a generator's run that
	                        * yielded (the writer's short path too) */
};

static struct {
	pthread_mutex_t lock;        /* rings list, defs, budget */
	pthread_cond_t wake;
	pthread_cond_t flushed;      /* flush_done moved */
	pthread_t thread;
	bool running, stopping, thread_started;
	bool thread_cpu;             /* a thread's CPU time as it exits */
	bool paused;                 /* writer stopped across a fork */
	uint64_t flush_req, flush_done;  /* ist_coll_flush() handshake */
	bool flush_final;            /* ist_coll_flush(), not a dump's wait */
	struct ist_stream out;       /* the stream, by fd and by path */
	struct ist_writer *w;
	struct ist_ring *rings;
	uint64_t budget, used, used_big;
	_Atomic uint64_t resident;   /* the rings' bytes said resident: their
	                              * said, summed */
	_Atomic uint64_t rec_bytes;  /* resident as last said, by a thread's
	                              * record or the writer */
	struct ist_said said;        /* the writer's buffers (allocated whole
	                              * as it starts: ist_writer_reserve) and
	                              * the flight recorder's kept frames: in
	                              * every process.recorder_bytes */
	struct def *defs;            /* index id - 1 */
	uint32_t ndefs, capdefs;
	uint64_t flush_ms;
	char *producer;
	pid_t pid;
	struct ist_error werr;       /* first writer error */
	uint64_t events_ok;          /* events in frames written */
	uint64_t dropped;            /* events after the writer failed */
	bool failed;
	/* flight recorder */
	uint64_t ring_bytes;
	struct ist_flight flight;
	bool ring;
	bool dying;                  /* of a signal: the ring is written */
	/* the capture's switches and dumps when the writer started: those
	 * after are its to act on, however late the thread first runs */
	uint64_t switches0, dumps0;
	int64_t frame_t0;            /* the frame's oldest event's end */
	/* the writer thread's tid, and its CPU time (ns) as it ended at
	 * ts (0: not read), for its last thread.cpu_ns */
	int64_t wtid, wcpu_ns, wcpu_ts;
} C = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
    .flushed = PTHREAD_COND_INITIALIZER, .out.fd = -1,
    .frame_t0 = INT64_MAX };

int ist_coll_use_tsc;
static void (*on_switch)(void);

int64_t
ist_coll_switch_ticks(const struct ist_capture_switch *s)
{
	return ist_coll_use_tsc ? s->tsc : s->ns;
}

void
ist_coll_on_switch(void (*fn)(void))
{
	on_switch = fn;
}

bool
ist_coll_clip(int64_t *t0, int64_t *t1, int *cut)
{
	struct ist_capture *c = ist_cap;
	uint64_t n, k;
	int64_t hi = INT64_MAX, lo = INT64_MIN;

	*cut = 0;
	if (c == NULL || (n = ist_capture_n()) == 0)
		return true;
	/* back from the newest switch to the last at or before *t1 (the
	 * first, the state the recording began in, holds before it too): the
	 * state at the range's end, and the window it ended in or after */
	for (k = n; k-- > 0 && n - k <= IST_CAPTURE_HIST; ) {
		const struct ist_capture_switch *s =
		    &c->hist[k % IST_CAPTURE_HIST];
		if (ist_coll_switch_ticks(s) > *t1 && k > 0)
			continue;
		if (!s->on) {
			/* ended in a pause: cut at its start */
			if (k == 0)
				return false;
			hi = ist_coll_switch_ticks(s);
			k--;
		}
		if (k > 0)
			lo = ist_coll_switch_ticks(&c->hist[k %
			    IST_CAPTURE_HIST]);
		break;
	}
	if (*t0 >= hi)
		return false;
	if (*t1 > hi) {
		*t1 = hi;
		*cut |= IST_CUT_END;
	}
	if (*t0 < lo) {
		*t0 = lo;
		*cut |= IST_CUT_START;
	}
	return *t0 <= *t1;
}

/*
 * tick -> ns: piecewise linear between the calibration pairs taken at every
 * drain.  A tick always maps to the same ns whenever it is converted, and
 * the map is monotonic, so nesting survives conversion exactly.
 */
#define NPAIRS 8192
static struct {
	int64_t t[NPAIRS], n[NPAIRS];
	size_t count;           /* pairs taken; the newest at (count-1) % N */
} cal;

static void
pair(int64_t *t, int64_t *n)
{
	int64_t a = ist_ticks(), m = ist_now_ns(), b = ist_ticks();

	*t = a + (b - a) / 2;
	*n = m;
}

/*
 * first: the first pair, at the start; the second is taken rate_now, else
 * by the first drain.  The first slope spans 1 ms or more: whoever takes
 * the second pair waits for that, the writer thread rather than the
 * program where it can (1.4 ms of every recorded process's start).
 */
static void
calibrate(bool first, bool rate_now)
{
	int64_t t, n, left;
	size_t last;

	if (!ist_coll_use_tsc)
		return;
	if (first) {
		cal.count = 0;
		pair(&cal.t[0], &cal.n[0]);
		cal.count = 1;
		if (!rate_now)
			return;
	}
	if (cal.count == 1 && (left = cal.n[0] + 1000000 - ist_now_ns()) > 0)
		nanosleep(&(struct timespec){ 0, left }, NULL);
	pair(&t, &n);
	last = (cal.count - 1) % NPAIRS;
	if (t <= cal.t[last] || n < cal.n[last])
		return;             /* keep the map strictly increasing */
	cal.t[cal.count % NPAIRS] = t;
	cal.n[cal.count % NPAIRS] = n;
	cal.count++;
}

/* The interval last used: most records of a drain fall in one. */
static struct {
	size_t i, count;        /* interval, and cal.count it was made for */
	int64_t ta, tb, na;
	double slope;
} near;

/* t in the interval near holds: the one formula every conversion uses */
static inline int64_t
near_ns(int64_t t)
{
	return near.na + (int64_t)((double)(t - near.ta) * near.slope);
}

static int64_t
seg(size_t i, int64_t t)
{
	if (near.count != cal.count || near.i != i) {
		size_t a = i % NPAIRS, b = (i + 1) % NPAIRS;
		near.i = i;
		near.count = cal.count;
		near.ta = cal.t[a];
		near.tb = cal.t[b];
		near.na = cal.n[a];
		near.slope = (double)(cal.n[b] - cal.n[a]) /
		    (double)(cal.t[b] - cal.t[a]);
	}
	return near_ns(t);
}

int64_t
ist_coll_duration_ticks(int64_t ns)
{
	if (!ist_coll_use_tsc || cal.count < 2 || cal.n[1] <= cal.n[0])
		return ns;
	return (int64_t)((double)ns * (double)(cal.t[1] - cal.t[0]) /
	    (double)(cal.n[1] - cal.n[0]));
}

static __attribute__((noinline)) int64_t
to_ns_far(int64_t t)
{
	size_t first, i;

	if (!ist_coll_use_tsc)
		return t;
	if (cal.count < 2)
		return cal.n[0] + (t - cal.t[0]);
	first = cal.count > NPAIRS ? cal.count - NPAIRS : 0;
	/* most records fall in the newest interval */
	for (i = cal.count - 2; ; i--) {
		if (t >= cal.t[i % NPAIRS] || i == first)
			return seg(i, t);
	}
}

/* Inlined: the interval of the record before, whenever it is the same one
 * (near is only ever made for cal.count >= 2) */
static inline int64_t
to_ns(int64_t t)
{
	if (ist_coll_use_tsc && near.count == cal.count && t >= near.ta &&
	    (t < near.tb || near.i == cal.count - 2))
		return near_ns(t);
	return to_ns_far(t);
}

/* Both ends of a range, as to_ns gives them: most ranges lie in the
 * interval the record before used, which one test then says of both */
static inline void
to_ns2(int64_t t0, int64_t t1, int64_t *n0, int64_t *n1)
{
	if (ist_coll_use_tsc && near.count == cal.count && t0 >= near.ta &&
	    t1 >= t0 && (t1 < near.tb || near.i == cal.count - 2)) {
		*n0 = near_ns(t0);
		*n1 = near_ns(t1);
	} else {
		*n0 = to_ns(t0);
		*n1 = to_ns(t1);
	}
}

static bool
tsc_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
	char buf[8192];
	FILE *f = fopen("/proc/cpuinfo", "r");
	bool constant = false, nonstop = false;

	if (f == NULL)
		return false;
	while (fgets(buf, sizeof(buf), f)) {
		if (strncmp(buf, "flags", 5) != 0)
			continue;
		constant = strstr(buf, " constant_tsc") != NULL;
		nonstop = strstr(buf, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
#else
	return false;
#endif
}

/* ist_ring.cpu_given: who gives a thread's last CPU time */
enum {
	CPU_NONE,       /* nobody yet */
	CPU_EXITING,    /* the thread, as it exits: recording it now */
	CPU_EXITED,     /* the thread did: in its ring, or counted lost */
	CPU_AT_STOP     /* recording stopped first: cpu_ts and cpu_ns */
};

static pthread_key_t ring_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static __thread struct ist_ring *my_ring;

/*
 * A thread exits: its CPU time then, when is-record samples /proc, as a
 * last sample of it.  The sampler reads every 10 ms, so a thread that
 * lives less (a thread pool made per request) had none at all, and none
 * of its calls was costed on CPU; one that lived longer had the time
 * after its last sample uncosted.
 */
/* A CPU clock's time in ns, in *ns; false when it cannot be read */
static bool
cpu_clock_ns(clockid_t c, int64_t *ns)
{
	struct timespec ts;

	if (clock_gettime(c, &ts) != 0)
		return false;
	*ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	return true;
}

void
ist_coll_thread_cpu(struct ist_ring *r, int64_t t)
{
	struct ist_rec *h;
	int64_t cpu;

	if (!C.thread_cpu || r == NULL || r != my_ring ||
	    !cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID, &cpu) ||
	    (h = ist_coll_reserve(r, 24)) == NULL)
		return;
	ist_coll_rec_put(h, 24, IST_REC_THREAD_CPU, 0, 0, t, cpu);
	ist_coll_commit(r, 24);
}

static void
ring_dead(void *p)
{
	struct ist_ring *r = p;
	int none = CPU_NONE;

	/* recording may be stopping on another thread (live_threads_cpu):
	 * one of the two gives the thread's last CPU time, never both */
	if (C.thread_cpu && r == my_ring && atomic_compare_exchange_strong(
	    &r->cpu_given, &none, CPU_EXITING)) {
		ist_coll_thread_cpu(r, ist_ticks());
		atomic_store(&r->cpu_given, CPU_EXITED);
	}
	atomic_store(&r->dead, 1);
}

int64_t
ist_coll_cpu_every_ticks(void)
{
	return C.thread_cpu ? ist_coll_duration_ticks(1000000) : 0;
}

static void
make_key(void)
{
	pthread_key_create(&ring_key, ring_dead);
}

bool
ist_coll_running(void)
{
	return C.running;
}

/*
 * A ring of RING_HUGE bytes or more is mapped on its own, in huge pages
 * (ist_map_huge).  In 4 KiB pages the recording thread takes a page fault
 * every 170 calls or so until the ring has wrapped once, and a TLB miss
 * after that: fib(30) on Python 3.12 ran 0.42 s recorded against 0.12 s
 * untraced, 0.32 s in huge pages.  What a ring never reaches is never
 * touched; NULL when out of memory.
 */
static bool thp_on(void);

static void *
ring_alloc(size_t size)
{
	return size < RING_HUGE ? malloc(size) : ist_map_huge(size, 0);
}

/*
 * The first write to each 2 MiB page of a huge ring zeroes it: 50 to 150
 * us on this machine, which the recording thread took inside whatever
 * call it was recording (24 of fib(27)'s 318,798 leaf calls, of 0.2 us
 * each, took 20 us to 140 us).  Once a thread has written half a MiB, the
 * writer thread faults its pages in ahead of it instead, RING_AHEAD bytes
 * past its head: a pass of the writer over a busy ring can take tens of
 * ms, while the producer goes on (1.5 MiB ahead was too little: fib(28)
 * took 8 of its 12 faults all the same).  A thread that records little
 * has its first huge page zeroed alone, by its first record (`python -c
 * pass`: 2 MiB of AnonHugePages, its RSS 15.3 MB recorded against 9.1
 * untraced; in small pages the busy thread took its first 512 KiB's
 * faults itself instead, fib(28)'s thread 169 against 5).
 * MADV_POPULATE_WRITE (Linux 5.14) faults pages in as a write would,
 * without changing a byte, so it is safe beside the producer's
 * writes; where it fails, the producer faults them in itself as before.
 * A ring that has wrapped has been touched whole.
 */
#define RING_PAGE (2u << 20)
#define RING_AHEAD (8u << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/*
 * The rings' pages resident in the process: they grow as recording goes
 * on, which is-analyze would take for the program's memory creeping up,
 * and it leaves them out of the process's RSS.  A ring's pages are said
 * (r->said, C.resident, a process.recorder_bytes) before they are
 * touched, so that an RSS sample read meanwhile holds them as ours, never
 * as the program's: by its thread as it reaches them (ist_coll_room), and
 * by the writer before it faults them in ahead of that (ring_populate), a
 * huge page at a time.  Said only after the writer's pass, the pages a
 * thread had faulted in while its writer waited for a core read as the
 * program's (its writer never running: 21 MB of steady growth), and 8 MiB
 * faulted in ahead, said whole before they were, 8 MiB too little (a CI
 * run read a steady worker growing 16 MiB).
 */
static void resident_say(int64_t ts, uint64_t n);

/* Ring r's said moved up to want; the rings' resident bytes then, or 0
 * where it had got there already (the other side said them) */
static uint64_t
said_to(struct ist_ring *r, uint64_t want)
{
	uint64_t was = atomic_load_explicit(&r->said, memory_order_relaxed);

	do {
		if (was >= want)
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(&r->said, &was, want,
	    memory_order_relaxed, memory_order_relaxed));
	return atomic_fetch_add_explicit(&C.resident, want - was,
	    memory_order_relaxed) + (want - was);
}

bool
ist_coll_room(struct ist_ring *r, size_t len)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint64_t said = atomic_load_explicit(&r->said, memory_order_relaxed);
	uint64_t room = r->size - (head & (r->size - 1));
	uint64_t need = room < len ? room + len : len, want, n;
	uint64_t free = r->size - (head - tail);
	struct ist_rec *h;

	if (free < need)
		return false;
	if (said >= r->size || head + need <= said) {
		r->lim = said >= r->size ? tail + r->size : said;
		return true;
	}
	/* the pages up to need and a record of ours (with its pad) past it
	 * said, the record written: the caller's record fits.  A ring too
	 * full for ours drops the caller's, its pages not touched unsaid */
	if (free < need + 48)
		return false;
	want = (head + need + 48 + r->step - 1) & ~(r->step - 1);
	if (want > r->size)
		want = r->size;
	n = said_to(r, want);
	r->lim = want >= r->size ? tail + r->size : want;
	if (n == 0 || (h = ist_coll_reserve_fast(r, 24)) == NULL)
		return true;      /* the writer said them */
	ist_coll_rec_put(h, 24, IST_REC_RESIDENT, 0, 0, ist_ticks(),
	    (int64_t)n);
	ist_coll_commit(r, 24);
	atomic_store_explicit(&C.rec_bytes, n, memory_order_relaxed);
	return true;
}

void
ist_coll_rec_slow(struct ist_ring *r, int kind, int flags, uint32_t id,
    int64_t t0, int64_t t1)
{
	size_t len = ist_coll_rec_len(kind);
	void *h = ist_coll_reserve(r, len);

	if (h == NULL)
		return;
	ist_coll_rec_put(h, len, kind, flags, id, t0, t1);
	ist_coll_commit(r, len);
}

/* Ring r faulted in ahead of its head, each huge page said first */
static void
ring_populate(struct ist_ring *r, uint64_t head)
{
	uint64_t want = (head + RING_AHEAD + RING_PAGE - 1) &
	    ~(uint64_t)(RING_PAGE - 1), n;

	if (r->size < RING_HUGE || r->populated >= r->size ||
	    head < RING_PAGE / 4)
		return;
	if (head >= r->size || want > r->size)
		want = r->size;
	if (want <= r->populated)
		return;
	for (uint64_t at = r->populated; at < want && head < r->size;
	    at += RING_PAGE) {
		uint64_t end = at + RING_PAGE < want ? at + RING_PAGE : want;
		if ((n = said_to(r, end)) != 0)
			resident_say(to_ns(ist_ticks()), n);
		if (madvise(r->buf + at, end - at, MADV_POPULATE_WRITE) !=
		    0) {
			/* an older kernel: let the producer do it */
			want = r->size;
			break;
		}
	}
	r->populated = want;
}

static void
ring_free(struct ist_ring *r)
{
	if (r->size >= RING_HUGE)
		ist_unmap_huge(r->buf, r->size);
	else
		free(r->buf);
}

struct ist_ring *
ist_coll_ring(void)
{
	struct ist_ring *r;
	size_t size;

	if (my_ring)
		return my_ring;
	if (!C.running)
		return NULL;
	if ((r = aligned_alloc(64, (sizeof(*r) + 63) & ~(size_t)63)) == NULL)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->tid = (int64_t)syscall(SYS_gettid);
	r->have_cpuclock = pthread_getcpuclockid(pthread_self(),
	    &r->cpuclock) == 0;
	pthread_mutex_lock(&C.lock);
	/* Three quarters of the budget are shared out by halving: the first
	 * (usually the busiest) threads get the most.  The last quarter is
	 * kept for small rings, so that hundreds of threads each get one. */
	{
		uint64_t big = C.budget / 4 * 3;
		size = RING_MAX;
		while (size > RING_MIN && (C.used_big + size > big ||
		    size > (big - C.used_big) / 2))
			size /= 2;
		if (size <= RING_MIN)
			size = C.used + RING_MIN <= C.budget ? RING_MIN : 0;
	}
	if (size >= RING_MIN && (r->buf = ring_alloc(size)) != NULL) {
		r->size = size;
		r->step = size < RING_HUGE ? size : thp_on() ? RING_PAGE :
		    RING_MIN;
		C.used += size;
		if (size > RING_MIN)
			C.used_big += size;
	}
	r->next = C.rings;
	C.rings = r;
	pthread_mutex_unlock(&C.lock);
	pthread_once(&key_once, make_key);
	pthread_setspecific(ring_key, r);
	my_ring = r;
	return r;
}

static uint32_t
define(const char *name, const char *file, int64_t line)
{
	uint32_t id = 0;
	struct def *d;

	pthread_mutex_lock(&C.lock);
	if (C.ndefs == C.capdefs) {
		uint32_t cap = C.capdefs ? C.capdefs * 2 : 1024;
		struct def *nd = realloc(C.defs, cap * sizeof(*nd));
		if (nd == NULL)
			goto out;
		C.defs = nd;
		C.capdefs = cap;
	}
	d = &C.defs[C.ndefs];
	d->name = strdup(name ? name : "");
	d->file = file ? strdup(file) : NULL;
	if (d->name == NULL || (file && d->file == NULL)) {
		free(d->name);
		free(d->file);
		goto out;
	}
	d->wd = (struct ist_wdef){
		.name = { d->name, strlen(d->name) },
		.more = { d->file, d->file ? strlen(d->file) : 0 },
		.line = line > 0 ? line : 0,
	};
	d->wy = d->wd;
	d->wy.yielded = true;
	id = ++C.ndefs;
out:
	pthread_mutex_unlock(&C.lock);
	return id;
}

uint32_t
ist_coll_define_func(const char *name, const char *file, int64_t line)
{
	return define(name, file, line);
}

uint32_t
ist_coll_define_name(const char *name)
{
	return define(name, NULL, 0);
}

static struct ist_str
S(const char *s)
{
	return (struct ist_str){ s, s ? strlen(s) : 0 };
}

static void
wfail(struct ist_error *e)
{
	if (!C.failed) {
		C.failed = true;
		C.werr = *e;
	}
}

static void
emit(const struct ist_event *ev)
{
	struct ist_error e;

	if (C.failed)
		C.dropped++;
	else if (ist_writer_write(C.w, ev, &e) != IST_OK)
		wfail(&e);
}

/* The rings' resident bytes n, said at ts (ns): by the writer, or a
 * thread's record (drained: said already); the writer's buffers and a
 * flight recorder's kept frames with them */
static void
recorder_write(int64_t ts, uint64_t total)
{
	struct ist_event ev;

	ist_counter_init(&ev, C.pid, -1, S("process.recorder_bytes"), ts,
	    (int64_t)total);
	C.flight.said = total;  /* kept with the frames that follow */
	emit(&ev);
}

static void
resident_write(int64_t ts, uint64_t n)
{
	recorder_write(ts, n + ist_said_bytes(&C.said));
}

static void
resident_say(int64_t ts, uint64_t n)
{
	atomic_store_explicit(&C.rec_bytes, n, memory_order_relaxed);
	resident_write(ts, n);
}

static void
thread_record(struct ist_ring *r, const char *name, size_t n)
{
	struct ist_event ev;

	ist_event_init(&ev, IST_THREAD);
	ev.pid = C.pid;
	ev.tid = r->tid;
	IST_SET(&ev, IST_F_PID);
	IST_SET(&ev, IST_F_TID);
	if (name) {
		ev.name = (struct ist_str){ name, n };
		IST_SET(&ev, IST_F_NAME);
	}
	emit(&ev);
}

/* A thread's CPU time v (ns) at ts: a thread.cpu_ns sample of it */
static void
thread_cpu_record(int64_t tid, int64_t ts, int64_t v)
{
	struct ist_event ev;

	ist_counter_init(&ev, C.pid, tid, S("thread.cpu_ns"), ts, v);
	emit(&ev);
}

/* the writer thread's name, by which is-analyze tells the profiler's own
 * CPU use (ist_recorder_thread) */
#define WRITER_NAME "inferscope"

/* The writer thread's last CPU time, under its name (the thread record
 * tells a collector's stream read without the sampler's whose it is),
 * once, when the thread that ended read it */
static void
writer_cpu_write(void)
{
	struct ist_event ev;

	if (C.wcpu_ts <= 0)
		return;
	ist_event_init(&ev, IST_THREAD);
	ev.pid = C.pid;
	ev.tid = C.wtid;
	ev.name = S(WRITER_NAME);
	IST_SET(&ev, IST_F_PID);
	IST_SET(&ev, IST_F_TID);
	IST_SET(&ev, IST_F_NAME);
	emit(&ev);
	thread_cpu_record(C.wtid, C.wcpu_ts, C.wcpu_ns);
	C.wcpu_ts = 0;
}

/* A range a capture window cut, or a call that raised (flags: the
 * ring record's): with its cut, raised and yielded fields, by the long
 * path */
static void
cut_record(enum ist_type type, int64_t tid, const int64_t t[2], int flags,
    const struct def *d)
{
	int cut = flags & (IST_CUT_START | IST_CUT_END);
	struct ist_event ev;

	ist_event_init(&ev, type);
	ev.pid = C.pid;
	ev.tid = tid;
	ev.start_ns = to_ns(t[0]);
	ev.end_ns = to_ns(t[1]);
	ev.name = d->wd.name;
	IST_SET(&ev, IST_F_PID);
	IST_SET(&ev, IST_F_TID);
	IST_SET(&ev, IST_F_START);
	IST_SET(&ev, IST_F_END);
	IST_SET(&ev, IST_F_NAME);
	if (cut) {
		ev.cut = cut;
		IST_SET(&ev, IST_F_CUT);
	}
	if (type == IST_CPU_CALL && (flags & IST_REC_RAISED)) {
		ev.raised = true;
		IST_SET(&ev, IST_F_RAISED);
	}
	if (type == IST_CPU_CALL && (flags & IST_REC_YIELDED)) {
		ev.yielded = true;
		IST_SET(&ev, IST_F_YIELDED);
	}
	if (d->wd.more.p) {
		if (type == IST_CPU_CALL) {
			ev.file = d->wd.more;
			IST_SET(&ev, IST_F_FILE);
		} else if (type == IST_NVTX_RANGE) {
			ev.domain = d->wd.more;
			IST_SET(&ev, IST_F_DOMAIN);
		}
	}
	if (type == IST_CPU_CALL && d->wd.line > 0) {
		ev.line = d->wd.line;
		IST_SET(&ev, IST_F_LINE);
	}
	emit(&ev);
}

/*
 * Timed records waiting for the writer: runs of one thread's, written
 * together (ist_writer_timed_run) before any other record, in ring order.
 */
#define RUN 256
static struct ist_timed run[RUN];

/* Writes run[0..n), all of thread tid; 0, the records left in it. */
static size_t
write_run(size_t n, int64_t tid)
{
	struct ist_error e;
	size_t i = 0, done;

	while (i < n) {
		if (C.failed) {
			C.dropped += n - i;
			break;
		}
		/* the frame the run goes to begins no later than its first
		 * record's end: a ring's records come in the order they
		 * ended, so that is the earliest (the flight recorder's
		 * window starts at its frames' earliest) */
		if (run[i].end_ns < C.frame_t0)
			C.frame_t0 = run[i].end_ns;
		if (ist_writer_timed_run(C.w, C.pid, tid, run + i, n - i,
		    &done, &e) != IST_OK) {
			wfail(&e);
			C.dropped += n - i - done;
			break;
		}
		i += done;
	}
	return 0;
}

/* The definition a timed record h of d's takes the writer's short path
 * with: d's own, or its yielded twin for a call whose one flag is
 * IST_REC_YIELDED; NULL when its flags need the long path (cut_record). */
static inline struct ist_wdef *
short_def(const struct ist_rec *h, struct def *d)
{
	if (h->flags == 0)
		return &d->wd;
	if (h->flags == IST_REC_YIELDED && h->kind == IST_REC_CALL)
		return &d->wy;
	return NULL;
}

/* Converts and writes the records of ring r up to head.  Timed records,
 * nearly all of them, take the writer's short path. */
static void
drain_ring(struct ist_ring *r, uint64_t head, struct def *defs,
    uint32_t ndefs)
{
	static const enum ist_type timed[] = {
		[IST_REC_CALL] = IST_CPU_CALL, [IST_REC_SCOPE] = IST_SCOPE,
		[IST_REC_NVTX] = IST_NVTX_RANGE, [IST_REC_NVTX_ON] =
		IST_NVTX_RANGE,
	};
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	struct ist_event ev;
	size_t nrun = 0;        /* records in run[], of thread run_tid */
	int64_t run_tid = 0;

	while (tail < head) {
		const uint8_t *p = r->buf + (tail & (r->size - 1));
		struct ist_rec h;
		int64_t t[2], tid;
		struct def *d;
		struct ist_wdef *wd;

		memcpy(&h, p, sizeof(h));
		/* nearly every record: a call or scope of this thread, not
		 * cut, defined; the same as the switch below makes of it */
		if (h.kind - (unsigned)IST_REC_CALL < 2 && h.len == 24 &&
		    h.id - 1u < ndefs && (wd = short_def(&h,
		    &defs[h.id - 1])) != NULL) {
			if (nrun == RUN || (nrun && r->tid != run_tid))
				nrun = write_run(nrun, run_tid);
			run_tid = r->tid;
			memcpy(t, p + 8, 16);
			run[nrun].d = wd;
			run[nrun].type = timed[h.kind];
			to_ns2(t[0], t[1], &run[nrun].start_ns,
			    &run[nrun].end_ns);
			nrun++;
			tail += 24;
			continue;
		}
		if (h.kind == IST_REC_PAD) {
			tail += h.id;
			continue;
		}
		if (h.len < 8)
			break; /* cannot happen: stop rather than spin */
		if (h.len >= 24)
			memcpy(t, p + 8, 16);
		else
			memcpy(t, p + 8, h.len >= 16 ? 8 : 0);
		if (h.kind == IST_REC_THREAD_NAME) {
			nrun = write_run(nrun, run_tid);
			thread_record(r, (const char *)p + 8, strnlen(
			    (const char *)p + 8, h.len - 8u));
			tail += h.len;
			continue;
		}
		if (h.kind == IST_REC_THREAD_CPU && h.len == 24) {
			nrun = write_run(nrun, run_tid);
			thread_cpu_record(r->tid, to_ns(t[0]), t[1]);
			tail += h.len;
			continue;
		}
		if (h.kind == IST_REC_RESIDENT && h.len == 24) {
			nrun = write_run(nrun, run_tid);
			resident_write(to_ns(t[0]), (uint64_t)t[1]);
			tail += h.len;
			continue;
		}
		if (h.id == 0 || h.id > ndefs) {
			tail += h.len;
			continue;
		}
		d = &defs[h.id - 1];
		switch (h.kind) {
		case IST_REC_CALL:
		case IST_REC_SCOPE:
		case IST_REC_NVTX:
		case IST_REC_NVTX_ON:
			tid = r->tid;
			if (h.kind == IST_REC_NVTX_ON) {
				if (h.len < 32)
					break;
				memcpy(&tid, p + 24, 8);
			}
			wd = short_def(&h, d);
			if (wd == NULL && h.kind != IST_REC_NVTX_ON) {
				nrun = write_run(nrun, run_tid);
				cut_record(timed[h.kind], r->tid, t, h.flags,
				    d);
				break;
			}
			if (nrun == RUN || (nrun && tid != run_tid))
				nrun = write_run(nrun, run_tid);
			run_tid = tid;
			run[nrun].d = wd ? wd : &d->wd;
			run[nrun].type = timed[h.kind];
			to_ns2(t[0], t[1], &run[nrun].start_ns,
			    &run[nrun].end_ns);
			nrun++;
			break;
		case IST_REC_MARK:
		case IST_REC_NVTX_MARK:
			nrun = write_run(nrun, run_tid);
			ist_event_init(&ev, h.kind == IST_REC_MARK ?
			    IST_INSTANT : IST_NVTX_MARK);
			ev.ts_ns = to_ns(t[0]);
			IST_SET(&ev, IST_F_TS);
			if (h.kind == IST_REC_NVTX_MARK && d->file) {
				ev.domain = d->wd.more;
				IST_SET(&ev, IST_F_DOMAIN);
			}
			if (h.kind == IST_REC_MARK && h.len > 16) {
				ev.metadata = (struct ist_blob){ p + 16,
				    h.len - 16u - h.flags };
				IST_SET(&ev, IST_F_METADATA);
			}
			ev.pid = C.pid;
			ev.tid = r->tid;
			ev.name = d->wd.name;
			IST_SET(&ev, IST_F_PID);
			IST_SET(&ev, IST_F_TID);
			IST_SET(&ev, IST_F_NAME);
			emit(&ev);
			if (ev.ts_ns < C.frame_t0)
				C.frame_t0 = ev.ts_ns;
			break;
		}
		tail += h.len;
	}
	write_run(nrun, run_tid);
	atomic_store_explicit(&r->tail, tail, memory_order_release);
}

static void
loss_record(uint64_t n, const char *reason)
{
	struct ist_event ev;

	ist_event_init(&ev, IST_LOSS);
	ev.pid = C.pid;
	ev.events = (int64_t)n;
	ev.reason = S(reason);
	IST_SET(&ev, IST_F_PID);
	IST_SET(&ev, IST_F_EVENTS);
	IST_SET(&ev, IST_F_REASON);
	emit(&ev);
}

/* whether the kernel gives huge rings huge pages (transparent huge pages
 * not "never"), asked once */
static bool
thp_on(void)
{
	static int thp = -1;

	if (thp < 0) {
		char b[128] = "";
		int fd = open("/sys/kernel/mm/transparent_hugepage/enabled",
		    O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t k = read(fd, b, sizeof(b) - 1);
			b[k > 0 ? k : 0] = '\0';
			close(fd);
		}
		thp = fd >= 0 && strstr(b, "[never]") == NULL;
	}
	return thp;
}

/* In the writer thread: what changed of InferScope's memory, said.  The
 * rings freed, a ring a forked child kept, the writer's buffers grown for
 * a record past a frame's room, or a flight recorder's frames kept (said
 * as of the first one's keeping, before its copy was made) and forgotten
 * (as of now, after): kept frames up to its size had read as a flat
 * program's memory growing 150% */
static void
memory_say(void)
{
	uint64_t wbytes = C.w != NULL ? ist_writer_bytes(C.w) :
	    C.said.wbytes;

	if (atomic_load_explicit(&C.resident, memory_order_relaxed) !=
	    atomic_load_explicit(&C.rec_bytes, memory_order_relaxed) ||
	    ist_said_changed(&C.said, wbytes, &C.flight))
		resident_say(ist_said_take(&C.said, wbytes, &C.flight,
		    to_ns(ist_ticks())), atomic_load_explicit(&C.resident,
		    memory_order_relaxed));
}

/* One pass over every ring; frees rings of threads that have exited.
 * Returns the bytes drained. */
static uint64_t
drain_all(void)
{
	static struct def *defs;
	static uint32_t ndefs, cap;
	struct ist_ring *r, **pp, *list;
	uint64_t lost = 0;

	pthread_mutex_lock(&C.lock);
	list = C.rings;
	pthread_mutex_unlock(&C.lock);
	/* heads first, then the definitions: every id a record in
	 * [tail, head) uses was defined before it was written */
	static uint64_t *heads;
	static size_t nheads;
	size_t i = 0, n = 0;

	uint64_t drained = 0;

	for (r = list; r; r = r->next)
		n++;
	if (n > nheads) {
		uint64_t *nh = realloc(heads, n * 2 * sizeof(*nh));
		if (nh == NULL)
			return 0;
		heads = nh;
		nheads = n * 2;
	}
	for (r = list; r; r = r->next, i++)
		heads[i] = atomic_load_explicit(&r->head, memory_order_acquire);
	calibrate(false, false); /* after the heads: every record is older */
	pthread_mutex_lock(&C.lock);
	if (C.ndefs > cap) {
		struct def *nd = realloc(defs, C.ndefs * sizeof(*nd));
		if (nd) {
			defs = nd;
			cap = C.ndefs;
		}
	}
	if (C.ndefs <= cap) {
		memcpy(defs + ndefs, C.defs + ndefs,
		    (C.ndefs - ndefs) * sizeof(*defs));
		ndefs = C.ndefs;
	}
	pthread_mutex_unlock(&C.lock);
	i = 0;
	for (r = list; r; r = r->next, i++) {
		uint64_t d;
		if (r->size) {
			/* the pages ahead faulted in before the drain, which
			 * can take tens of ms, each said first: faulted in
			 * after it, from the head before it, they were
			 * behind a busy thread, which had faulted its own in
			 * meanwhile (saying them itself) */
			ring_populate(r, heads[i]);
			drained += heads[i] - atomic_load_explicit(&r->tail,
			    memory_order_relaxed);
			drain_ring(r, heads[i], defs, ndefs);
		}
		d = atomic_load_explicit(&r->dropped, memory_order_relaxed);
		if (d > r->reported) {
			lost += d - r->reported;
			r->reported = d;
		}
	}
	if (lost)
		loss_record(lost, "buffer full");
	if (!C.failed) {
		struct ist_error e;
		if (ist_writer_tick(C.w, &e) != IST_OK)
			wfail(&e);
	}
	/* free the rings of exited threads once empty */
	pthread_mutex_lock(&C.lock);
	for (pp = &C.rings; (r = *pp) != NULL; ) {
		if (atomic_load(&r->dead) && atomic_load(&r->head) ==
		    atomic_load(&r->tail) && atomic_load(&r->dropped) ==
		    r->reported &&
		    atomic_load(&r->cpu_given) != CPU_AT_STOP) {
			*pp = r->next;
			atomic_fetch_sub_explicit(&C.resident,
			    atomic_load(&r->said), memory_order_relaxed);
			C.used -= r->size;
			if (r->size > RING_MIN)
				C.used_big -= r->size;
			ring_free(r);
			free(r);
			continue;
		}
		pp = &r->next;
	}
	pthread_mutex_unlock(&C.lock);
	memory_say();
	return drained;
}

static enum ist_status finish(struct ist_error *err);
static enum ist_status ring_finish(struct ist_error *err);
static void dump_now(void);

/* Whether the ring is written as the stream ends: with --ring alone or
 * --dump-on exit, and always when a signal kills the process (the flight
 * recorder's black box).  Otherwise only dumps write it. */
static bool
ring_at_end(void)
{
	return C.dying || ist_capture_dump_exit();
}

/* In the writer thread, after a drain: everything recorded goes to the
 * file now; a flight recorder writes the frames it keeps and from then on
 * streams (the process is about to become another program). */
static void
flush_now(void)
{
	struct ist_error e = { 0 };

	if (C.failed)
		return;
	if (ist_writer_flush(C.w, &e) != IST_OK ||
	    (C.ring && ring_at_end() && ring_finish(&e) != IST_OK))
		wfail(&e);
}

/* In the writer thread: write all, then die of the signal after all. */
static _Noreturn void
die_of(int sig)
{
	struct ist_error e;

	C.dying = true;
	/* C.running stays: ist_coll_stop() at exit waits for this thread,
	 * which never returns; from ist_coll_stop(), all is written */
	if (C.w != NULL && finish(&e) != IST_OK)
		fprintf(stderr, "inferscope: error: %s\n", e.msg);
	ist_term_die(sig);
}

#define KEEP (256u << 10)       /* bytes a pass drains, busy */

/*
 * The writer's buffers whole (ist_writer_reserve), by its thread as it
 * starts rather than in the program's start-up (1 to 2 ms of page faults
 * there), said as of before they are made.  Grown as frames filled, 2.5
 * MiB of them had read as the program's memory growing wherever the
 * writer first ran long.  Without memory for them, they grow as before.
 */
static void
writer_reserve(void)
{
	int64_t t = to_ns(ist_ticks());
	struct ist_error e;

	if (C.failed || ist_writer_reserve(C.w, &e) != IST_OK)
		return;
	C.said.wbytes = ist_writer_bytes(C.w);
	resident_say(t, atomic_load_explicit(&C.resident,
	    memory_order_relaxed));
}

static void *
writer_main(void *arg)
{
	uint64_t last = 0, switches = C.switches0, dumps = C.dumps0;
	int64_t pass_t = 0, gap = 0;    /* the last pass's start, and the
	                                 * time from the one before's */

	(void)arg;
	/* is-analyze tells the profiler's own CPU use by this name */
	pthread_setname_np(pthread_self(), WRITER_NAME);
	C.wtid = (int64_t)syscall(SYS_gettid);
	pthread_mutex_lock(&C.lock);
	if (!C.stopping) {      /* a program ending at once waits for none */
		pthread_mutex_unlock(&C.lock);
		writer_reserve();
		pthread_mutex_lock(&C.lock);
	}
	while (!C.stopping) {
		uint64_t req, d;
		bool final;

		if (ist_term_pending()) {
			pthread_mutex_unlock(&C.lock);
			die_of(ist_term_pending());
		}
		/* rest until about KEEP bytes will have come at the rate the
		 * last pass found, 1 ms to 20 ms; none when it found that
		 * much: keep up.  Resting 20 ms whenever a pass found less
		 * let a busy thread's calls pile up 20 ms at a time (fib: 5
		 * MB), and at the program's end 2 to 5 ms of them were left
		 * to drain */
		if (last < KEEP) {
			struct timespec ts;
			int64_t rest = 20000000;
			if (last > 0 && gap > 0 && gap < rest &&
			    gap * (int64_t)KEEP / (int64_t)last < rest)
				rest = gap * (int64_t)KEEP / (int64_t)last;
			if (rest < 1000000)
				rest = 1000000;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += rest;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&C.wake, &C.lock, &ts);
		}
		if (C.stopping)
			break;
		req = C.flush_req;
		final = C.flush_final;
		C.flush_final = false;
		pthread_mutex_unlock(&C.lock);
		if (on_switch != NULL && ist_capture_n() != switches) {
			switches = ist_capture_n();
			on_switch();
		}
		{
			int64_t now = ist_now_ns();
			gap = pass_t ? now - pass_t : 0;
			pass_t = now;
		}
		/* a dump asked before this pass's drain: its window holds
		 * every record written before the ask.  One asked while the
		 * drain went on is the next pass's (it had been written
		 * here, without the asking thread's records since the drain
		 * began: a dump at the end of 300 calls kept fewer once in
		 * about 40 runs on a loaded machine; the asker waits for that
		 * pass) */
		d = ist_capture_dumps();
		last = drain_all();
		if (d != dumps) {
			dumps = d;
			dump_now();
		}
		if (final)
			flush_now();
		pthread_mutex_lock(&C.lock);
		if (req != C.flush_done) {
			C.flush_done = req;
			pthread_cond_broadcast(&C.flushed);
		}
	}
	/* a flush asked for as we stop: ist_coll_stop() writes all */
	C.flush_done = C.flush_req;
	pthread_cond_broadcast(&C.flushed);
	pthread_mutex_unlock(&C.lock);
	/* at the stop, what is left is drained here, not by the thread
	 * that stops us (the program's, in its exit); at the stop or a
	 * fork's pause, this thread's CPU is read as it ends: the
	 * sampler's last reading of it was up to a tick before, and a
	 * backlog a loaded machine left it (70 ms in 0.3 s) was ours
	 * uncounted, in the program's thread after its end */
	if (!C.running)
		drain_all();
	if (C.thread_cpu && cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID,
	    &C.wcpu_ns))
		C.wcpu_ts = ist_now_ns();
	return NULL;
}

/* One pass of the writer thread, asked for and waited for; final: the
 * stream is written out as for an exec. */
static enum ist_status
writer_pass(bool final)
{
	uint64_t want;

	if (!C.running || !C.thread_started)
		return IST_OK;
	pthread_mutex_lock(&C.lock);
	want = ++C.flush_req;
	C.flush_final = C.flush_final || final;
	pthread_cond_signal(&C.wake);
	while (C.flush_done < want && C.thread_started)
		pthread_cond_wait(&C.flushed, &C.lock);
	pthread_mutex_unlock(&C.lock);
	return C.failed ? C.werr.status : IST_OK;
}

enum ist_status
ist_coll_flush(void)
{
	return writer_pass(true);
}

bool
ist_coll_dump(void)
{
	if (!C.running || C.ring_bytes == 0 ||
	    !ist_capture_ask_dump(IST_DW_API))
		return false;
	(void)writer_pass(false);      /* a failure is told at stop */
	return true;
}

/* The flight recorder's sink: keep frames, forget the oldest. */
static int
ring_sink(void *ctx, const void *buf, size_t n)
{
	struct ist_writer_stats st;
	int64_t t0 = C.frame_t0;
	int e;

	ist_writer_stats(C.w, &st);
	C.frame_t0 = INT64_MAX;
	if (!C.ring) {
		if ((e = ist_stream_sink(ctx, buf, n)) == 0)
			C.events_ok = st.events;
		return e;
	}
	ist_said_kept(&C.said, to_ns(ist_ticks()));
	return ist_flight_keep(&C.flight, buf, n, st.events, t0);
}

static void
capture_record(bool on, int64_t ts, const char *reason)
{
	struct ist_event ev;

	ist_capture_event(&ev, C.pid, ts, on, reason);
	emit(&ev);
}

/*
 * Writes the kept frames, then a frame saying what was overwritten and,
 * when the window does not reach back to the stream's start or the last
 * dump, where it begins (a capture record, on); mid-run (a dump, at `at`),
 * also where it ends (off), and the recorder keeps on.
 */
static enum ist_status
ring_write(struct ist_error *err, bool mid, int64_t at, int why)
{
	uint64_t lost;
	int64_t from;
	int e;

	C.ring = false;         /* from here the sink writes to the file */
	if ((e = ist_flight_write(&C.flight, &C.out, &C.events_ok, &lost,
	    &from)) != 0) {
		ist_seterr(err, IST_EIO, "cannot write '%s': %s", C.out.path,
		    strerror(e));
		if (err)
			err->sys_errno = e;
		return IST_EIO;
	}
	if (lost)
		loss_record(lost, "flight recorder: older events "
		    "overwritten");
	if (from != INT64_MIN) {
		capture_record(true, from, "ring");
		/* what it held as the window began, as said with its
		 * oldest frame: said in frames overwritten, InferScope's
		 * memory read as the program's until the next */
		if (C.flight.said)
			recorder_write(from, C.flight.said);
	}
	if (!mid)
		return IST_OK;
	capture_record(false, at, ist_dump_reason(why));
	if (ist_writer_flush(C.w, err) != IST_OK)
		return err ? err->status : IST_EIO;
	C.ring = true;
	ist_flight_resume(&C.flight, at);
	return IST_OK;
}

static enum ist_status
ring_finish(struct ist_error *err)
{
	return ring_write(err, false, 0, 0);
}

/* In the writer thread: a dump was asked for (is-record's SIGUSR1,
 * inferscope.dump()): the window so far goes to the file. */
static void
dump_now(void)
{
	struct ist_error e = { 0 };
	int64_t at;
	int why;

	if (C.failed || !C.ring)
		return;
	ist_capture_last_dump(&at, &why);
	if (ist_writer_flush(C.w, &e) != IST_OK) {
		wfail(&e);
		return;
	}
	/* the frame the flush kept said as of its keeping, the frames
	 * written and forgotten after: said together as of the keeping,
	 * a sample while they were written read them as the program's */
	memory_say();
	if (ring_write(&e, true, at, why) != IST_OK)
		wfail(&e);
	memory_say();
}

static enum ist_status
open_stream(const char *path, struct ist_error *err)
{
	/* frames stored: compressing them would cost the program a third of
	 * what recording a call costs; is-record compresses them, a frame
	 * at a time, while the program runs: frames of 1 MiB rather than 4
	 * leave it less to do after (fib(30) recorded on 3.12: 398 -> 351
	 * ms, the trace as big).  A flight recorder keeps compressed frames
	 * in its memory: level 1, which keeps up with millions of events a
	 * second.  Strings are interned by their text, not their address
	 * (stable_strings): a thread's name is read out of its ring, whose
	 * memory a thread started after it had ended may be given, and the
	 * next thread's name of the same length at the same address had
	 * taken the first's (Thread-3 recorded as Thread-1, in 6 runs of 40
	 * of three short threads); the calls' names and files, interned
	 * once a segment (ist_writer_timed_run), cost no more */
	struct ist_writer_opts wo = { .level = 1, .store = C.ring_bytes == 0,
	    .frame_bytes = C.ring_bytes == 0 ? 1u << 20 : 0,
	    .flush_interval_ms = C.flush_ms,
	    .self_contained = C.ring_bytes > 0 };
	struct ist_event h, p;
	struct timespec rt, mt;
	char host[256] = "", cmd[4096];
	enum ist_status st;
	ssize_t n = 0;
	int fd, e;

	C.pid = getpid();
	/* appended to: after an exec the new program's stream follows the
	 * old one's (the same pid), which it must not wipe */
	if ((e = ist_stream_open(&C.out, path, true)) != 0) {
		ist_seterr(err, IST_EIO, "cannot create '%s': %s", path,
		    strerror(e));
		return IST_EIO;
	}
	C.ring = C.ring_bytes > 0;
	C.flight = (struct ist_flight){ .cap_bytes = C.ring_bytes };
	if ((st = ist_writer_new(&C.w, ring_sink, &C.out, &wo, err)) !=
	    IST_OK)
		return st;
	/* its thread makes the writer's (writer_reserve) */
	C.said = (struct ist_said){ 0 };
	gethostname(host, sizeof(host) - 1);
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	ist_event_init(&h, IST_HEADER);
	h.producer = S(C.producer);
	h.host = S(host);
	h.realtime_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
	h.monotonic_ns = (int64_t)mt.tv_sec * 1000000000 + mt.tv_nsec;
	IST_SET(&h, IST_F_PRODUCER);
	IST_SET(&h, IST_F_HOST);
	IST_SET(&h, IST_F_REALTIME_NS);
	IST_SET(&h, IST_F_MONOTONIC_NS);
	{
		struct ist_buf pids = { 0 };
		int64_t pid = C.pid;
		if (ist_cbor_ints(&pid, 1, &pids) == 0) {
			h.pids = (struct ist_blob){ (uint8_t *)pids.p, pids.n };
			IST_SET(&h, IST_F_PIDS);
		}
		h.clocks = (struct ist_blob){
		    (const uint8_t *)"\x81\x69monotonic", 11 };
		IST_SET(&h, IST_F_CLOCKS);
		st = ist_writer_header(C.w, &h, err);
		ist_buf_release(&pids);
		if (st != IST_OK)
			return st;
	}
	/* the process: name and command line from /proc */
	ist_event_init(&p, IST_PROCESS);
	p.pid = C.pid;
	p.host = S(host);
	IST_SET(&p, IST_F_PID);
	IST_SET(&p, IST_F_HOST);
	if ((fd = open("/proc/self/cmdline", O_RDONLY)) >= 0) {
		n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
	}
	if (n > 0) {
		struct ist_buf blob = { 0 };
		cmd[n] = '\0';
		/* a cut last argument (no NUL of its own) counts too */
		if (ist_cbor_args(cmd, (size_t)n + (cmd[n - 1] != '\0'),
		    &blob) == 0) {
			p.cmdline = (struct ist_blob){ (uint8_t *)blob.p,
			    blob.n };
			IST_SET(&p, IST_F_CMDLINE);
		}
		{
			const char *base = strrchr(cmd, '/');
			p.name = S(base ? base + 1 : cmd);
			IST_SET(&p, IST_F_NAME);
		}
		emit(&p);
		ist_buf_release(&blob);
	} else {
		emit(&p);
	}
	return IST_OK;
}

/*
 * fork() with the lock held by the writer thread, which the child does not
 * have, left it locked for good in the child: the first definition there
 * (a Python at-fork hook that runs before ours, such as threading's, calls
 * functions never seen) waited forever.  The lock is taken across fork().
 */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void) { pthread_mutex_lock(&C.lock); }
static void fork_done(void) { pthread_mutex_unlock(&C.lock); }

static void
fork_hooks(void)
{
	pthread_atfork(fork_prepare, fork_done, fork_done);
}

/* Creates the writer thread (ist_term_thread: it takes no signals). */
static enum ist_status
start_writer(struct ist_error *err)
{
	C.stopping = false;
	C.switches0 = ist_capture_n();
	C.dumps0 = ist_capture_dumps();
	if (ist_term_thread(&C.thread, writer_main) != 0) {
		ist_seterr(err, IST_ENOMEM, "cannot start the writer thread");
		return IST_ENOMEM;
	}
	C.thread_started = true;
	return IST_OK;
}

enum ist_status
ist_coll_start(const struct ist_coll_opts *o, struct ist_error *err)
{
	enum ist_status st;

	if (C.running)
		return IST_OK;
	pthread_once(&fork_once, fork_hooks);
	C.budget = o->budget_bytes ? o->budget_bytes : 100u << 20;
	C.flush_ms = o->flush_interval_ms ? o->flush_interval_ms : 1000;
	C.ring_bytes = o->ring_bytes;
	C.thread_cpu = ist_env_sample();
	free(C.producer);
	C.producer = strdup(o->producer ? o->producer : "inferscope");
	C.failed = false;
	C.events_ok = C.dropped = 0;
	if ((st = open_stream(o->path, err)) != IST_OK) {
		ist_writer_free(C.w);
		C.w = NULL;
		ist_stream_close(&C.out);
		return st;
	}
	ist_coll_use_tsc = tsc_invariant();
	calibrate(true, o->rate_now);
	ist_capture_attach();
	C.running = true;
	C.paused = false;
	ist_term_reset();
	if ((st = start_writer(err)) != IST_OK) {
		C.running = false;
		return st;
	}
	ist_term_catch();
	return IST_OK;
}

static void
stop_writer(void)
{
	pthread_mutex_lock(&C.lock);
	C.stopping = true;
	pthread_cond_signal(&C.wake);
	pthread_mutex_unlock(&C.lock);
	if (C.thread_started)
		pthread_join(C.thread, NULL);
	C.thread_started = false;
}

/* The process's threads as the kernel counts them (/proc/self/stat's
 * num_threads, which Python 3.12+ reads to warn of a fork with threads),
 * or -1 */
static long
os_threads(void)
{
	char buf[1024], *p;
	ssize_t n;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* after the name, which may hold anything: field 20 is the 18th */
	if ((p = strrchr(buf, ')')) == NULL)
		return -1;
	for (int k = 0; k < 18 && p; k++)
		p = strchr(p + 1, ' ');
	return p ? strtol(p + 1, NULL, 10) : -1;
}

void
ist_coll_pause(void)
{
	if (C.running && C.thread_started) {
		long n0 = os_threads();
		stop_writer();
		C.paused = true;
		writer_cpu_write();     /* before the fork: the parent's alone */
		/* the joined thread is still counted until the kernel has
		 * released it, after the join returns: a fork then reads
		 * "multi-threaded" (a sanitized build, where the exit takes
		 * longer, warned); up to 20 ms for the count to drop */
		for (int i = 0; n0 > 0 && i < 200 && os_threads() >= n0; i++)
			nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	}
}

enum ist_status
ist_coll_resume(struct ist_error *err)
{
	if (!C.paused)
		return IST_OK;
	C.paused = false;
	return C.running ? start_writer(err) : IST_OK;
}

enum ist_status
ist_coll_stop(struct ist_error *err)
{
	enum ist_status st;

	if (!C.running)
		return IST_OK;
	C.running = false;
	C.paused = false;
	stop_writer();
	st = finish(err);
	ist_term_release();
	if (ist_term_pending())  /* it came as we stopped: die of it now */
		die_of(ist_term_pending());
	ist_term_stopped();
	return st;
}

/*
 * Recording stops (at the program's exit): the CPU time of each recorded
 * thread still alive, the main thread's included, as a last sample of it
 * (ring_dead's, for those that exit before), so that the time since the
 * sampler's last reading, up to 10 ms, is costed too.  A thread that a
 * join has already let go may be exiting on another core as we stop:
 * each ring's time is claimed by one side only (cpu_given), and this
 * waits for a thread that claimed it to have written it (or counted it
 * lost) before the last drain.  Read here, written by live_cpu_write
 * after that drain, so that it follows the thread's records.
 */
static void
live_threads_cpu(void)
{
	int64_t now = ist_now_ns();

	pthread_mutex_lock(&C.lock);
	for (struct ist_ring *r = C.rings; r; r = r->next) {
		int none = CPU_NONE;

		if (!atomic_load(&r->dead) && r->have_cpuclock &&
		    atomic_compare_exchange_strong(
		    &r->cpu_given, &none, CPU_AT_STOP))
			r->cpu_ts = cpu_clock_ns(r->cpuclock, &r->cpu_ns) ?
			    now : -1;
		/* a thread in ring_dead: a few instructions from done (a
		 * second at most, for one the scheduler left) */
		for (int i = 0; i < 1000 && atomic_load(&r->cpu_given) ==
		    CPU_EXITING; i++)
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	pthread_mutex_unlock(&C.lock);
}

static void
live_cpu_write(void)
{
	pthread_mutex_lock(&C.lock);
	for (struct ist_ring *r = C.rings; r; r = r->next)
		if (atomic_load(&r->cpu_given) == CPU_AT_STOP &&
		    r->cpu_ts >= 0)
			thread_cpu_record(r->tid, r->cpu_ts, r->cpu_ns);
	pthread_mutex_unlock(&C.lock);
}

/* Drains every ring and closes the stream (the writer thread stopped, or
 * is the caller). */
static enum ist_status
finish(struct ist_error *err)
{
	enum ist_status st = IST_OK;
	struct ist_writer_stats ws;
	int e;

	if (C.thread_cpu)
		live_threads_cpu();
	drain_all();
	if (C.thread_cpu)
		live_cpu_write();
	writer_cpu_write();
	if (C.ring)
		flush_now();     /* the kept frames, unless only dumps write */
	ist_writer_stats(C.w, &ws);
	if (C.failed) {
		if (err)
			*err = C.werr;
		st = C.werr.status;
		ist_writer_free(C.w);
	} else {
		st = ist_writer_close(C.w, err);       /* frees it */
	}
	C.w = NULL;
	/* a ring still kept: only dumps write it (--dump-on without exit) */
	ist_flight_release(&C.flight);
	if (st != IST_OK) {
		/* what never reached the file: the events of the frames
		 * that failed, and those after */
		uint64_t lost = ws.events - C.events_ok + C.dropped;
		char cause[sizeof(err->msg)], why[sizeof(cause) + 40];
		snprintf(cause, sizeof(cause), "%s", err && err->sys_errno ?
		    strerror(err->sys_errno) : err ? err->msg : "error");
		snprintf(why, sizeof(why), "the stream could not be written: "
		    "%s", cause);
		if (err)
			ist_seterr(err, st, "cannot write '%s': %s; %llu events "
			    "are lost", C.out.path, cause,
			    (unsigned long long)lost);
		ist_stream_lost(&C.out, lost, why);
	}
	if ((e = ist_stream_close(&C.out)) != 0 && st == IST_OK) {
		ist_seterr(err, IST_EIO, "cannot close the trace: %s",
		    strerror(e));
		st = IST_EIO;
	}
	return st;
}

enum ist_status
ist_coll_after_fork(const char *path, struct ist_error *err)
{
	struct ist_ring *r, *next;

	/* only this thread survives: the parent's rings and writer are the
	 * parent's business; drop ours without touching the parent's file.
	 * The lock came through fork() unlocked (fork_hooks). */
	pthread_cond_init(&C.wake, NULL);
	pthread_cond_init(&C.flushed, NULL);
	C.flush_req = C.flush_done = 0;
	for (r = C.rings; r; r = next) {
		next = r->next;
		if (r != my_ring) {
			ring_free(r);
			free(r);
		}
	}
	C.rings = NULL;
	C.used = 0;
	C.used_big = 0;
	/* the ring kept is resident here too (its pages shared with the
	 * parent's until written) */
	atomic_store(&C.resident, my_ring ? atomic_load(&my_ring->said) : 0);
	atomic_store(&C.rec_bytes, 0);
	if (my_ring) {
		uint64_t h = atomic_load(&my_ring->head);
		atomic_store(&my_ring->tail, h);
		my_ring->lim = 0;
		atomic_store(&my_ring->dropped, 0);
		my_ring->reported = 0;
		my_ring->tid = (int64_t)syscall(SYS_gettid);
		/* the clock was the parent thread's (its tid's) */
		my_ring->have_cpuclock = pthread_getcpuclockid(
		    pthread_self(), &my_ring->cpuclock) == 0;
		atomic_store(&my_ring->cpu_given, CPU_NONE);
		my_ring->next = NULL;
		C.rings = my_ring;
		C.used = my_ring->size;
		if (my_ring->size > RING_MIN)
			C.used_big = my_ring->size;
	}
	ist_writer_free(C.w);
	C.w = NULL;
	ist_stream_close(&C.out);
	C.running = false;
	C.thread_started = false;
	ist_flight_release(&C.flight);  /* the parent's to write */
	{
		struct ist_coll_opts o = { path, C.producer, C.budget,
		    C.flush_ms, C.ring_bytes, false };
		char *prod = C.producer;
		C.producer = NULL;
		o.producer = prod;
		enum ist_status st = ist_coll_start(&o, err);
		free(prod);
		return st;
	}
}
