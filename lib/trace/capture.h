/*
 * capture.h - the capture switch of a recording: whether its collectors
 * record now, shared by is-record and every collector of every recorded
 * process through one page, $INFERSCOPE_DIR/capture, mapped shared.
 *
 * Anyone switches (is-record's timers and SIGUSR2, inferscope.start() and
 * stop(), cudaProfilerStart/Stop, an NVTX capture range); every switch is
 * kept in a history of IST_CAPTURE_HIST, which the collectors read to close
 * the calls open at an edge there (IST_CUT_*), and is-record to write one
 * `capture` record per switch.  Collectors read `on` and `n` on their hot
 * path: two loads of a line that changes only at a switch.
 */
#ifndef IST_CAPTURE_H
#define IST_CAPTURE_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "ist.h"

#define IST_CAPTURE_FILE "capture"
#define IST_CAPTURE_MAGIC 0x50435349u     /* "ISCP" */
#define IST_CAPTURE_HIST 4096
#define IST_CAPTURE_NVTX 8                /* --capture-range nvtx: names */
#define IST_CAPTURE_NAME 128

/* why a switch happened: the capture record's reason */
enum ist_capture_why {
	IST_CW_START,        /* the state the recording began in */
	IST_CW_DELAY,        /* --delay ran out */
	IST_CW_DURATION,     /* --duration ran out: closed for good */
	IST_CW_API,          /* inferscope.start()/stop() */
	IST_CW_CUDA,         /* cudaProfilerStart/Stop */
	IST_CW_NVTX,         /* an NVTX capture range (arg: which) */
	IST_CW_SIGNAL,       /* SIGUSR2 to is-record */
	IST_CW_NWHY
};

/* why the flight recorder (--ring) wrote its window mid-run */
enum ist_dump_why {
	IST_DW_SIGNAL,       /* SIGUSR1 to is-record (--dump-on SIGUSR1) */
	IST_DW_API,          /* inferscope.dump() */
	IST_DW_NWHY
};

struct ist_capture_switch {
	int64_t ns;          /* CLOCK_MONOTONIC */
	int64_t tsc;         /* the TSC then (0 where there is none) */
	int32_t pid;         /* who switched */
	uint8_t on, why;
	uint16_t arg;
};

struct ist_capture {
	uint32_t magic, size;
	_Atomic uint32_t lock;
	_Atomic uint32_t on;             /* recording now */
	_Atomic uint32_t closed;         /* no switch on again, ever */
	uint32_t api;                    /* cudaProfilerStart/Stop switch */
	_Atomic uint64_t n;              /* switches so far, the first the
	                                  * state the recording began in */
	/* NVTX capture ranges: a range of one of these names (any domain)
	 * records while it is open; count: how many more (-1: all) */
	uint32_t nvtx_n;
	_Atomic int32_t nvtx_count[IST_CAPTURE_NVTX];
	_Atomic int32_t nvtx_open;       /* capture ranges open now */
	char nvtx[IST_CAPTURE_NVTX][IST_CAPTURE_NAME];
	/* the flight recorder: each collector with a ring writes its window
	 * when dumps moves (dump_ns, dump_why: the last one's, under lock);
	 * at exit only when dump_exit (--ring alone, --dump-on exit) */
	uint32_t dump_exit;
	uint32_t dump_why;
	int64_t dump_ns;
	_Atomic uint64_t dumps;
	struct ist_capture_switch hist[IST_CAPTURE_HIST];
};

static inline int64_t
ist_capture_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t
ist_capture_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return (int64_t)__rdtsc();
#else
	return 0;
#endif
}

/* The reason a capture record gives for a switch. */
static inline const char *
ist_capture_reason(int why)
{
	static const char *const r[IST_CW_NWHY] = { "start", "delay",
	    "duration", "api", "cudaProfilerApi", "nvtx", "signal" };
	return why >= 0 && why < IST_CW_NWHY ? r[why] : "unknown";
}

/* A capture record: recording on or off at ts (the stream's clock), as
 * process pid saw it, for reason (borrowed). */
static inline void
ist_capture_event(struct ist_event *ev, int64_t pid, int64_t ts, bool on,
    const char *reason)
{
	ist_event_init(ev, IST_CAPTURE);
	ev->pid = pid;
	ev->ts_ns = ts;
	ev->on = on;
	ev->reason = (struct ist_str){ reason, strlen(reason) };
	IST_SET(ev, IST_F_PID);
	IST_SET(ev, IST_F_TS);
	IST_SET(ev, IST_F_ON);
	IST_SET(ev, IST_F_REASON);
}

/* The reason of a capture record closing a window the flight recorder
 * wrote mid-run. */
static inline const char *
ist_dump_reason(int why)
{
	return why == IST_DW_API ? "dump:api" : "dump:signal";
}

static inline void
ist_capture_lock(struct ist_capture *c)
{
	while (atomic_exchange_explicit(&c->lock, 1, memory_order_acquire))
		sched_yield();
}

static inline void
ist_capture_unlock(struct ist_capture *c)
{
	atomic_store_explicit(&c->lock, 0, memory_order_release);
}

/* Asks every flight recorder to write its window now. */
static inline void
ist_capture_dump(struct ist_capture *c, int why)
{
	ist_capture_lock(c);
	c->dump_ns = ist_capture_now_ns();
	c->dump_why = (uint32_t)why;
	atomic_fetch_add_explicit(&c->dumps, 1, memory_order_release);
	ist_capture_unlock(c);
}

/*
 * Switches recording on or off, now; false when it was so already or the
 * capture is closed.  close: after this switch, none (--duration, the last
 * NVTX range of a count).  Takes a spin lock held for a few stores.
 */
static inline bool
ist_capture_set(struct ist_capture *c, bool on, int why, int arg, bool close)
{
	struct ist_capture_switch *s;
	uint64_t n;
	bool done = false;

	ist_capture_lock(c);
	if (!atomic_load_explicit(&c->closed, memory_order_relaxed) &&
	    atomic_load_explicit(&c->on, memory_order_relaxed) != (uint32_t)on) {
		n = atomic_load_explicit(&c->n, memory_order_relaxed);
		s = &c->hist[n % IST_CAPTURE_HIST];
		s->tsc = ist_capture_tsc();
		s->ns = ist_capture_now_ns();
		s->pid = (int32_t)getpid();
		s->on = on;
		s->why = (uint8_t)why;
		s->arg = (uint16_t)arg;
		atomic_store_explicit(&c->on, on, memory_order_relaxed);
		atomic_store_explicit(&c->n, n + 1, memory_order_release);
		done = true;
	}
	if (close)
		atomic_store_explicit(&c->closed, 1, memory_order_relaxed);
	ist_capture_unlock(c);
	return done;
}

#endif
