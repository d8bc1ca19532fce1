/*
 * collector.h - the in-process side of recording: per-thread rings filled
 * by hooks (Python, NVTX) without locks or allocation, drained by a
 * background writer thread that encodes, compresses and writes the
 * process's own stream file.  Library code: silent, no exit().
 *
 * Hot path contract: ist_coll_reserve()/ist_coll_commit() on the calling
 * thread's ring take no lock, allocate nothing and never block; when the
 * ring is full the record is dropped and counted, and the writer reports
 * the count as a loss record.
 */
#ifndef IST_COLLECTOR_H
#define IST_COLLECTOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "ist.h"
#include "capture_agent.h"

enum ist_rec_kind {
	IST_REC_PAD = 0,
	IST_REC_CALL,      /* t0, t1; id: a function definition */
	IST_REC_SCOPE,     /* t0, t1; id: a name */
	IST_REC_MARK,      /* t0, then CBOR metadata (maybe empty); id: name */
	IST_REC_NVTX,      /* t0, t1; id: a name */
	IST_REC_NVTX_MARK, /* t0; id: a name */
	IST_REC_THREAD_NAME,/* then the UTF-8 name */
	IST_REC_NVTX_ON,   /* t0, t1, tid; id: a name: a range another
	                    * thread started, written on that thread */
	IST_REC_THREAD_CPU,/* t0, then the thread's CPU time (ns): written
	                    * as it exits, a thread.cpu_ns counter */
	IST_REC_RESIDENT   /* t0, then the rings' resident bytes: said by a
	                    * thread as its ring reaches pages not yet said
	                    * (ist_coll_room), a process.recorder_bytes */
};

/* A ring record starts with this 8-byte head; sizes are multiples of 8. */
struct ist_rec {
	uint8_t kind;
	uint8_t flags;
	uint16_t len;      /* bytes of the whole record, head included */
	uint32_t id;
};

struct ist_ring {
	/* the producer's cache line: only the recording thread writes it */
	uint8_t *buf;
	size_t size;                 /* a power of two, or 0: drop all */
	_Atomic uint64_t head;       /* producer's position */
	_Atomic uint64_t dropped;    /* records that did not fit */
	uint64_t lim;                /* head goes this far without looking:
	                              * tail as last seen plus size, or the
	                              * pages said resident before the ring
	                              * first wraps (ist_coll_room) */
	/* the consumer's: only the writer thread writes these */
	_Alignas(64) _Atomic uint64_t tail;
	uint64_t reported;           /* dropped already written as loss */
	uint64_t populated;          /* bytes of buf from its start faulted in
	                              * by the writer (ring_populate), or its
	                              * size where the producer faults them */
	/* both sides' */
	_Atomic uint64_t said;       /* bytes of buf from its start counted
	                              * in the process's resident bytes:
	                              * whole steps, or size */
	uint64_t step;               /* what they grow by: a huge page where
	                              * a huge ring has them, else 64 KiB; a
	                              * small ring's (malloc's) whole */
	int64_t tid;
	clockid_t cpuclock;          /* the thread's CPU clock */
	bool have_cpuclock;
	_Atomic int dead;            /* the thread has exited */
	_Atomic int cpu_given;       /* its last CPU time: CPU_* below */
	int64_t cpu_ts, cpu_ns;      /* CPU_AT_STOP's: when, and the time */
	struct ist_ring *next;
};

struct ist_coll_opts {
	const char *path;            /* the stream file to create */
	const char *producer;
	uint64_t budget_bytes;       /* all rings together */
	uint64_t flush_interval_ms;  /* frame at least this often (1000) */
	uint64_t ring_bytes;         /* flight recorder: keep only the newest
	                              * this many bytes of frames, written at
	                              * stop; 0: stream to the file */
	bool rate_now;               /* ist_coll_duration_ticks will be
	                              * called at once (else the first drain
	                              * measures the tick rate) */
};

enum ist_status ist_coll_start(const struct ist_coll_opts *o,
    struct ist_error *err);
/* Drains everything, writes the loss records, closes the file. */
enum ist_status ist_coll_stop(struct ist_error *err);
/* Has the writer thread write everything recorded so far, and waits for
 * it (before an exec replaces the program). */
enum ist_status ist_coll_flush(void);
/* inferscope.dump(): asks every recorded process's flight recorder to
 * write its window, and waits until this one's has; false without a
 * ring (--ring, --dump-on) or a capture page. */
bool ist_coll_dump(void);
bool ist_coll_running(void);
/* The calling thread's CPU time, read now, at t (ist_ticks()) into its
 * ring r as a thread.cpu_ns sample; a no-op where is-record does not
 * sample /proc.  The in-process readings between the sampler's ticks, at
 * the edges of gaps of ist_coll_cpu_every_ticks or more */
void ist_coll_thread_cpu(struct ist_ring *r, int64_t t);
/* A gap between a thread's events that its CPU time is read after (1 ms,
 * in ticks), 0 when none is read (no sampler: no CPU time analysed) */
int64_t ist_coll_cpu_every_ticks(void);

/* The calling thread's ring, created on first use (NULL: not running). */
struct ist_ring *ist_coll_ring(void);

/* Interns a definition; returns its id (0 on failure).  Takes a lock:
 * call once per function or name, never per event. */
uint32_t ist_coll_define_func(const char *name, const char *file,
    int64_t line);
uint32_t ist_coll_define_name(const char *name);

/* Around a fork() of the program's: the writer thread stops (joined, its
 * work done; recording goes on into the rings), so that the process forks
 * with the threads it had without us (Python 3.12+ warns about a fork
 * with threads), and starts again after it in the parent.  Resuming a
 * collector that was not paused does nothing. */
void ist_coll_pause(void);
enum ist_status ist_coll_resume(struct ist_error *err);

/* In a child after fork(): forget the parent's rings and file, start a
 * new stream at path. */
enum ist_status ist_coll_after_fork(const char *path, struct ist_error *err);

static inline int64_t
ist_now_ns(void)
{
	return ist_capture_now_ns();
}

/*
 * Timestamps in rings are ticks: the TSC where it is invariant (about 10 ns
 * to read, against 25 for the vDSO clock here), else CLOCK_MONOTONIC ns.
 * The writer thread converts ticks to CLOCK_MONOTONIC ns with calibration
 * pairs it takes at every drain, so traces only ever hold nanoseconds.
 */
extern int ist_coll_use_tsc;

/* A duration of ns nanoseconds in ticks (after ist_coll_start with
 * rate_now). */
int64_t ist_coll_duration_ticks(int64_t ns);

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline int64_t
ist_ticks(void)
{
	if (ist_coll_use_tsc)
		return (int64_t)__rdtsc();
	return ist_now_ns();
}

/* The clock in *t where reading it calls nothing (the TSC), for a hook's
 * fast path that keeps nothing in a register; false: take the slow path */
static inline bool
ist_ticks_inline(int64_t *t)
{
	if (!ist_coll_use_tsc)
		return false;
	*t = (int64_t)__rdtsc();
	return true;
}
#else
static inline int64_t
ist_ticks(void)
{
	return ist_now_ns();
}

static inline bool
ist_ticks_inline(int64_t *t)
{
	(void)t;
	return false;
}
#endif

/* Ring r's producer past its limit, wanting len bytes: looks at the
 * consumer's line, and says the pages it is about to reach resident before
 * it touches them (a record of its own).  false: the ring is full; true:
 * look again. */
bool ist_coll_room(struct ist_ring *r, size_t len);

/* The fast part of ist_coll_reserve: len bytes (a multiple of 8, 65528 at
 * most) on ring r (not NULL, size not 0), or NULL where the producer is
 * past its limit (ist_coll_room's to look at). */
static inline void *
ist_coll_reserve_fast(struct ist_ring *r, size_t len)
{
	uint64_t head, off, room, need;

	head = atomic_load_explicit(&r->head, memory_order_relaxed);
	off = head & (r->size - 1);
	room = r->size - off;         /* contiguous bytes to the end */
	need = room < len ? room + len : len;   /* with the pad, if any */
	if (head + need > r->lim)
		return NULL;
	if (room < len) {
		/* pad to the end, then start at 0 */
		struct ist_rec *pad = (struct ist_rec *)(r->buf + off);
		pad->kind = IST_REC_PAD;
		pad->len = 0;
		pad->id = (uint32_t)room;
		head += room;
		atomic_store_explicit(&r->head, head, memory_order_release);
		off = 0;
	}
	return r->buf + off;
}

/* Reserves len bytes (a multiple of 8) on ring r; NULL when full. */
static inline void *
ist_coll_reserve(struct ist_ring *r, size_t len)
{
	void *h;

	if (r == NULL || r->size == 0 || len > 65528)
		goto drop;
	while ((h = ist_coll_reserve_fast(r, len)) == NULL)
		if (!ist_coll_room(r, len))
			goto drop;
	return h;
drop:
	if (r)
		atomic_store_explicit(&r->dropped, atomic_load_explicit(
		    &r->dropped, memory_order_relaxed) + 1,
		    memory_order_relaxed);
	return NULL;
}

static inline void
ist_coll_commit(struct ist_ring *r, size_t len)
{
	atomic_store_explicit(&r->head, atomic_load_explicit(&r->head,
	    memory_order_relaxed) + len, memory_order_release);
}

/*
 * The capture switch (capture_agent.h), seen from the rings: a switch's
 * time in ticks; a range clipped to the last capture window it overlaps,
 * with the IST_CUT_* bits of the edges it was cut at (false: it overlaps
 * none, and is not written).  A range that spans several windows is
 * written in the last.
 */
int64_t ist_coll_switch_ticks(const struct ist_capture_switch *s);
bool ist_coll_clip(int64_t *t0, int64_t *t1, int *cut);
/* fn runs in the writer thread when the capture switch has moved (within
 * 20 ms); NULL: none. */
void ist_coll_on_switch(void (*fn)(void));

/* A range another thread (tid) started, ended on this ring's thread: it is
 * written on that thread (IST_REC_NVTX_ON). */
static inline void
ist_coll_range_on(struct ist_ring *r, uint32_t id, int64_t t0, int64_t t1,
    int64_t tid)
{
	struct ist_rec *h = ist_coll_reserve(r, 32);
	int64_t *t;

	if (h == NULL)
		return;
	*h = (struct ist_rec){ IST_REC_NVTX_ON, 0, 32, id };
	t = (int64_t *)(h + 1);
	t[0] = t0;
	t[1] = t1;
	t[2] = tid;
	ist_coll_commit(r, 32);
}

/* a call's flags beside the IST_CUT_* bits: it ended by an exception; a
 * generator's run ended at a yield */
#define IST_REC_RAISED 4
#define IST_REC_YIELDED 8

/* ist_coll_rec past the ring's limit, or on no ring: not inlined, so that
 * a hook's fast path keeps no register across a call */
void ist_coll_rec_slow(struct ist_ring *r, int kind, int flags, uint32_t id,
    int64_t t0, int64_t t1);

/* The bytes of a timed record of kind: t0 alone for the mark kinds */
static inline size_t
ist_coll_rec_len(int kind)
{
	return kind == IST_REC_NVTX_MARK || kind == IST_REC_MARK ? 16 : 24;
}

/* A timed record's bytes at h, len of them (ist_coll_rec); also a
 * 24-byte record of a time and a value (IST_REC_THREAD_CPU,
 * IST_REC_RESIDENT) */
static inline void
ist_coll_rec_put(void *h, size_t len, int kind, int flags, uint32_t id,
    int64_t t0, int64_t t1)
{
	struct ist_rec *hd = h;
	int64_t *t = (int64_t *)(hd + 1);

	hd->kind = (uint8_t)kind;
	hd->flags = (uint8_t)flags;
	hd->len = (uint16_t)len;
	hd->id = id;
	t[0] = t0;
	if (len == 24)
		t[1] = t1;
}

/* A timed record: t0 and t1 for a range; t0 alone for the mark kinds
 * (IST_REC_NVTX_MARK, and IST_REC_MARK without metadata).  flags: the
 * IST_CUT_* bits of a range a capture window cut, IST_REC_RAISED and
 * IST_REC_YIELDED (ist_coll_cut); a record with any but IST_REC_YIELDED
 * alone takes the writer's long path. */
static inline void
ist_coll_rec(struct ist_ring *r, int kind, int flags, uint32_t id,
    int64_t t0, int64_t t1)
{
	size_t len = ist_coll_rec_len(kind);
	void *h;

	if (r == NULL || r->size == 0 ||
	    (h = ist_coll_reserve_fast(r, len)) == NULL) {
		ist_coll_rec_slow(r, kind, flags, id, t0, t1);
		return;
	}
	ist_coll_rec_put(h, len, kind, flags, id, t0, t1);
	ist_coll_commit(r, len);
}

static inline void
ist_coll_timed(struct ist_ring *r, int kind, uint32_t id, int64_t t0,
    int64_t t1)
{
	ist_coll_rec(r, kind, 0, id, t0, t1);
}

/* A range whose ends a capture window cut, or a call that raised:
 * written with its cut and raised fields */
static inline void
ist_coll_cut(struct ist_ring *r, int kind, uint32_t id, int64_t t0,
    int64_t t1, int cut)
{
	ist_coll_rec(r, kind, cut, id, t0, t1);
}

/* Names the ring's thread (names over 1000 bytes are not kept). */
static inline void
ist_coll_thread_name(struct ist_ring *r, const char *name)
{
	size_t n = strlen(name), len = (8 + n + 1 + 7) & ~(size_t)7;
	struct ist_rec *h;

	if (n > 1000 || (h = ist_coll_reserve(r, len)) == NULL)
		return;
	h->kind = IST_REC_THREAD_NAME;
	h->flags = 0;
	h->len = (uint16_t)len;
	h->id = 0;
	memset((char *)h + 8, 0, len - 8);
	memcpy((char *)h + 8, name, n);
	ist_coll_commit(r, len);
}

#endif
