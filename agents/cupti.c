/*
 * cupti.c - libinferscope-cupti.so, the CUDA collector.  is-record puts it
 * in CUDA_INJECTION64_PATH; the CUDA driver loads it when the program
 * initialises CUDA and calls InitializeInjection().  It subscribes to the
 * Activity API, hands CUPTI buffers from a preallocated pool, converts the
 * completed records (cupti_convert.c) on CUPTI's own thread, and
 * writes $INFERSCOPE_DIR/PID-cupti.ist: a segment whose times are all in
 * CUPTI's clock (header clocks ["cupti"]), with calibration pairs
 * (cuptiGetTimestamp against CLOCK_MONOTONIC) at start, every second and
 * at exit, from which is-merge fits offset and drift.  Dropped records
 * become loss records.  Nothing here runs on the application's threads
 * except the start and the final flush.
 *
 * Timestamps come from cuptiGetTimestamp(); the timestamp callback
 * (cuptiActivityRegisterTimestampCallback) is not used: CUDA 12.6u2 to 13.1
 * report zero kernel timestamps with it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture_agent.h"
#include "cupti_convert.h"
#include "cupti_load.h"
#include "internal.h"
#include "stream.h"
#include "term.h"

#define EXPORT __attribute__((visibility("default")))
/* Activity buffers: CUPTI asks for one per thread that uses CUDA (per-
 * thread buffers, CUDA 13's default, set here deliberately) and returns
 * each when full or flushed.  Each is its own aligned_alloc, never a
 * slab: a tool that takes CUPTI's callbacks over (Kineto) frees the
 * buffers it is handed with free().  Kept for reuse up to FREE_MAX; never
 * more than the trace budget (--trace-size-mb) at once: beyond it CUPTI
 * drops records and counts them, which become a loss record.
 *
 * Their pages are InferScope's memory in the process, said in
 * process.cuda_recorder_bytes beside the writer's buffers and a flight
 * recorder's frames, so that is-analyze leaves them out of the program's:
 * a C program that allocated nothing read 40 to 65 MB grown as 16 threads
 * filled buffers.  A buffer is faulted in whole as it is made (CUPTI fills
 * it a record at a time, and a flushed one part of the way), said before;
 * one returned beyond FREE_MAX gives its pages back (madvise), said after,
 * and is kept cold for reuse: freed, a 2 MiB block raises malloc's
 * threshold for mapping and the next ones come from a heap that keeps
 * what is freed. */
#define BUF_SIZE (2u << 20)
#define FREE_MAX 16
#define ALIGN 8
#define MEMQ 64                 /* changes to the buffers' memory, unsaid */

struct memsay {
	int64_t ts;                  /* from when, on CUPTI's clock */
	uint64_t bytes;              /* the buffers' resident bytes */
};

static struct ist_cupti_api K;  /* libcupti, opened at run time */

static struct {
	pthread_mutex_t lock;        /* the writer and the converter */
	struct ist_writer *w;
	struct ist_writer *spent;    /* w, finished as the process ends */
	struct ist_stream out;       /* the stream, by fd and by path */
	int64_t pid;
	struct ist_cupti_conv conv;
	/* buffers, under blk */
	pthread_mutex_t blk;
	uint8_t *free_bufs[FREE_MAX];
	uint8_t **cold;              /* maxbufs of room: their pages given
	                              * back, ncold of them */
	unsigned nfree, nbufs, maxbufs;  /* nbufs: allocated, any state */
	unsigned ncold;
	uint64_t handed, returned;   /* to CUPTI, and back to us */
	int64_t last_back_ns;        /* CLOCK_MONOTONIC of the last return */
	struct memsay memq[MEMQ];    /* to say, oldest first */
	unsigned nmemq;
	int64_t memq_ts;             /* the last one's ts */
	/* InferScope's memory as last said (process.cuda_recorder_bytes),
	 * under lock: the buffers', and the writer's and the flight
	 * recorder's kept frames */
	uint64_t bufs_said;
	struct ist_said said;
	pthread_t thread;
	_Atomic int stopping;
	bool started, flusher;       /* flusher: the thread was created */
	bool subscribed;
	CUpti_SubscriberHandle sub;
	/* flight recorder (--ring): frames kept, written at the end */
	bool ring;
	bool dying;                  /* of a signal: the ring is written */
	struct ist_flight flight;
	int64_t frame_t0;            /* the frame's oldest event's end */
	uint64_t dumps0;             /* dumps asked for before the flusher:
	                              * those after are its own to write */
	uint64_t bad_times_said;     /* conv.bad_times already in a loss */
	/* correlation ids of the stream and event queries, written by
	 * CUPTI's callback on the calling thread, read by the converter
	 * (S.conv.queries): a query that found the work done comes back as
	 * a sync record */
	_Atomic uint32_t queries[IST_CUPTI_QUERIES];
	uint64_t unwritten;          /* events after the writer failed */
	char werr[IST_ERROR_MAX];    /* why it failed */
} S = { .lock = PTHREAD_MUTEX_INITIALIZER, .blk = PTHREAD_MUTEX_INITIALIZER,
    .out.fd = -1, .frame_t0 = INT64_MAX };

static void
say(const char *what, CUptiResult r)
{
	const char *s = NULL;
	K.cuptiGetResultString(r, &s);
	fprintf(stderr, "inferscope: warning: %s: %s; no GPU activity is "
	    "recorded\n", what, s ? s : "CUPTI error");
}

static int64_t
mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Now on CUPTI's clock, the stream's */
static int64_t
gpu_now(void)
{
	uint64_t g = 0;

	K.cuptiGetTimestamp(&g);
	return (int64_t)g;
}

/* ---- names and link bandwidth for the converter ---- */

static const char *
api_name(void *ctx, bool driver, uint32_t cbid)
{
	const char *n = NULL;
	(void)ctx;
	if (K.cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API :
	    CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &n) != CUPTI_SUCCESS)
		return NULL;
	return n;
}

/* The PCIe link of a device, found by its UUID (the device record has no
 * PCI address; the driver's /proc lists both).  No call into CUDA: this
 * runs in CUPTI's completion callback. */
static double
pcie_gbps(void *ctx, const uint8_t uuid[16])
{
	(void)ctx;
	return ist_pcie_gbps_uuid("/proc/driver/nvidia/gpus", "/sys/bus/pci/"
	    "devices", uuid);
}

/* What is recorded.  Runtime API calls all but the noisy ones below;
 * driver API calls only for launches, copies, memsets, syncs and
 * allocations (cuptiActivityEnableDriverApi), where a program or library
 * (Triton, torch.compile) calls the driver directly.  Not GRAPH_TRACE:
 * it would give one range per graph launch instead of its kernels; a
 * graph's kernels and copies come each with their graph and node ids and
 * the correlation of the cudaGraphLaunch that ran them. */
static const CUpti_ActivityKind kinds[] = {
	CUPTI_ACTIVITY_KIND_DEVICE,
	CUPTI_ACTIVITY_KIND_CONTEXT,
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMCPY2,
	CUPTI_ACTIVITY_KIND_MEMSET,
	CUPTI_ACTIVITY_KIND_RUNTIME,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
	CUPTI_ACTIVITY_KIND_MEMORY2,
	CUPTI_ACTIVITY_KIND_OVERHEAD,
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* runtime calls left out, by name (Kineto leaves out the same): frequent,
 * cheap, and no part of an answer */
static const char *const quiet_runtime[] = {
	"cudaGetDevice", "cudaSetDevice", "cudaGetLastError",
	"cudaPeekAtLastError", "cudaGetDeviceCount", "cudaDeviceGetAttribute",
	"cudaEventCreate", "cudaEventCreateWithFlags", "cudaEventRecord",
	"cudaEventRecordWithFlags", "cudaEventDestroy", "cudaEventQuery",
	"cudaStreamQuery", "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo",
	"cudaFuncGetAttributes", "cudaPointerGetAttributes",
	"cudaGetDeviceProperties", "cudaDriverGetVersion",
	"cudaRuntimeGetVersion", "cudaGetFuncBySymbol", "cudaGetDriverEntryPoint",
	"cudaGetDriverEntryPointByVersion",
};
/* callback ids tried: beyond both domains' in CUDA 13.0, for newer CUPTIs */
#define CBID_MAX 2048
/* driver calls kept, by name prefix */
static const char *const kept_driver[] = {
	"cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset", "cuMemAlloc",
	"cuMemFree", "cuMemHostAlloc", "cuMemCreate", "cuStreamSynchronize",
	"cuCtxSynchronize", "cuEventSynchronize", "cuStreamWaitEvent",
};

/* A callback name is want, or (prefix) starts with it; the entry point's
 * version ("cudaGetDevice_v3020") is no part of the name. */
static bool
named(const char *name, const char *want, bool prefix)
{
	size_t n = strlen(want);

	if (name == NULL || strncmp(name, want, n) != 0)
		return false;
	return prefix || ist_cupti_call_len(name) == n;
}

static bool
in(const char *name, const char *const *set, size_t n, bool prefix)
{
	for (size_t i = 0; i < n; i++)
		if (named(name, set[i], prefix))
			return true;
	return false;
}

/* Which API calls make records (after RUNTIME is enabled: enabling a kind
 * overrides the finer settings made before it). */
static void
choose_api_calls(void)
{
	const char *nm;

	if (K.cuptiActivityEnableRuntimeApi != NULL)
		for (uint32_t id = 1; id < CBID_MAX; id++)
			if (K.cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API,
			    id, &nm) == CUPTI_SUCCESS && in(nm, quiet_runtime,
			    sizeof(quiet_runtime) / sizeof(*quiet_runtime),
			    false))
				K.cuptiActivityEnableRuntimeApi(id, 0);
	if (K.cuptiActivityEnableDriverApi == NULL) {
		/* an older CUPTI: every driver call, or none of the launches
		 * that bypass the runtime */
		K.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
		return;
	}
	for (uint32_t id = 1; id < CBID_MAX; id++)
		if (K.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id,
		    &nm) == CUPTI_SUCCESS && in(nm, kept_driver,
		    sizeof(kept_driver) / sizeof(*kept_driver), true))
			K.cuptiActivityEnableDriverApi(id, 1);
}

/* ---- writing (under S.lock) ---- */

/* The writer's sink: the stream, or with --ring the flight recorder. */
static int
sink(void *ctx, const void *buf, size_t n)
{
	struct ist_writer_stats st;

	int64_t t0 = S.frame_t0;

	S.frame_t0 = INT64_MAX;
	if (!S.ring)
		return ist_stream_sink(ctx, buf, n);
	ist_writer_stats(S.w, &st);
	ist_said_kept(&S.said, gpu_now());
	return ist_flight_keep(&S.flight, buf, n, st.events, t0);
}

static void
put(const struct ist_event *ev)
{
	struct ist_error e;

	if (S.w == NULL) {
		S.unwritten += S.started;
		return;
	}
	if (ist_writer_write(S.w, ev, &e) != IST_OK) {
		/* said at exit, beside the stream (ist_stream_lost) */
		snprintf(S.werr, sizeof(S.werr), "%s", e.msg);
		ist_writer_free(S.w);
		S.w = NULL;
		S.unwritten++;
	} else if (ist_event_done(ev) < S.frame_t0) {
		S.frame_t0 = ist_event_done(ev);
	}
}

/* A calibration pair: CUPTI's clock read between two reads of the host's,
 * put at their midpoint; the narrowest of PAIR_TRIES.  A thread preempted
 * within one (a loaded machine) puts it off by half the wait, and the fit
 * of a short run's two pairs with it: a kernel launched a microsecond
 * after cudaProfilerStop would be put before the stop. */
#define PAIR_TRIES 5

static void
clock_pair(void)
{
	uint64_t g = 0, bg = 0;
	int64_t h0, h1, width = INT64_MAX, ts = 0;
	struct ist_event ev;

	for (int i = 0; i < PAIR_TRIES; i++) {
		h0 = mono_ns();
		if (K.cuptiGetTimestamp(&g) != CUPTI_SUCCESS)
			return;
		h1 = mono_ns();
		if (h1 - h0 < width) {
			width = h1 - h0;
			ts = h0 + width / 2;
			bg = g;
		}
	}
	ist_event_init(&ev, IST_CLOCK);
	ev.pid = S.pid;
	ev.ts_ns = ts;
	ev.domain = (struct ist_str){ "cupti", 5 };
	ev.domain_ns = (int64_t)bg;
	IST_SET(&ev, IST_F_PID);
	IST_SET(&ev, IST_F_TS);
	IST_SET(&ev, IST_F_DOMAIN);
	IST_SET(&ev, IST_F_DOMAIN_NS);
	put(&ev);
}

static void
loss(uint64_t n, const char *why)
{
	struct ist_event ev;
	ist_event_init(&ev, IST_LOSS);
	ev.pid = S.pid;
	ev.events = (int64_t)n;
	ev.reason = (struct ist_str){ why, strlen(why) };
	IST_SET(&ev, IST_F_PID);
	IST_SET(&ev, IST_F_EVENTS);
	IST_SET(&ev, IST_F_REASON);
	put(&ev);
}

/* Records whose times were not times, since last said: one loss. */
static void
bad_times_loss(void)
{
	uint64_t n = S.conv.bad_times - S.bad_times_said;

	if (n == 0)
		return;
	loss(n, "CUPTI records without a valid time (zero, or ending before "
	    "they start)");
	S.bad_times_said = S.conv.bad_times;
}

/* InferScope's memory in the process as of ts, under lock: the buffers'
 * as last said, the writer's, the flight recorder's frames (mem_write) */
static void
mem_write_total(int64_t ts, uint64_t total)
{
	static const char name[] = "process.cuda_recorder_bytes";
	struct ist_event c;

	ist_counter_init(&c, S.pid, -1, (struct ist_str){ name,
	    sizeof(name) - 1 }, ts, (int64_t)total);
	S.flight.said = total;  /* kept with the frames that follow */
	put(&c);
}

static void
mem_write(int64_t ts)
{
	mem_write_total(ts, S.bufs_said + ist_said_bytes(&S.said));
}

/* What changed since the last say, said, under lock: the buffers' bytes
 * from when each change was made, then the writer's buffers grown (a
 * record past a frame's room) or a flight recorder's frames kept (as of
 * the first one's keeping since) or forgotten */
static void
mem_say(void)
{
	struct memsay q[MEMQ];
	unsigned n;
	uint64_t wb;

	pthread_mutex_lock(&S.blk);
	n = S.nmemq;
	memcpy(q, S.memq, n * sizeof(*q));
	S.nmemq = 0;
	pthread_mutex_unlock(&S.blk);
	for (unsigned i = 0; i < n; i++) {
		S.bufs_said = q[i].bytes;
		mem_write(q[i].ts);
	}
	wb = S.w != NULL ? ist_writer_bytes(S.w) : S.said.wbytes;
	if (ist_said_changed(&S.said, wb, &S.flight))
		mem_write(ist_said_take(&S.said, wb, &S.flight, gpu_now()));
}

/* ---- CUPTI's buffers ---- */

/*
 * The buffers' resident bytes changed, as of ts: to say, under blk.  The
 * time is read before the lock (CUPTI's own may be held by a thread that
 * waits for ours); one read before another thread's change, queued after
 * it, is said with it, still before its own buffer's pages are touched.
 */
static void
buffers_changed(int64_t ts)
{
	uint64_t bytes = (uint64_t)(S.nbufs - S.ncold) * BUF_SIZE;

	if (ts < S.memq_ts)
		ts = S.memq_ts;
	S.memq_ts = ts;
	if (S.nmemq == MEMQ)            /* the latest, said as of before */
		S.memq[MEMQ - 1].bytes = bytes;
	else
		S.memq[S.nmemq++] = (struct memsay){ ts, bytes };
}

static void CUPTIAPI
buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	uint8_t *b = NULL;
	bool fresh = true;
	int64_t ts = gpu_now();

	*max_records = 0;
	pthread_mutex_lock(&S.blk);
	if (S.nfree > 0) {
		b = S.free_bufs[--S.nfree];
		fresh = false;
	} else if (S.ncold > 0) {
		b = S.cold[--S.ncold];
	} else if (S.nbufs < S.maxbufs &&
	    (b = aligned_alloc(ALIGN, BUF_SIZE)) != NULL) {
		S.nbufs++;
	}
	if (b != NULL)
		S.handed++;
	if (b != NULL && fresh)
		buffers_changed(ts);
	pthread_mutex_unlock(&S.blk);
	/* its pages resident, as said, before CUPTI has it */
	if (b != NULL && fresh)
		memset(b, 0, BUF_SIZE);
	/* none: CUPTI drops this thread's records and counts them */
	*buf = b;
	*size = b ? BUF_SIZE : 0;
}

/* The whole pages of buffer b given back (its first holds malloc's
 * header); reading them reads zeros */
static void
give_back(uint8_t *b)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)b + page - 1) & ~(page - 1);
	uintptr_t hi = ((uintptr_t)b + BUF_SIZE) & ~(page - 1);

	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

static void
buffer_back(uint8_t *buf)
{
	bool cold;
	int64_t ts;

	pthread_mutex_lock(&S.blk);
	S.returned++;
	S.last_back_ns = mono_ns();
	cold = S.nfree == FREE_MAX && S.cold != NULL;
	if (S.nfree < FREE_MAX) {
		S.free_bufs[S.nfree++] = buf;
		buf = NULL;
	}
	pthread_mutex_unlock(&S.blk);
	if (buf == NULL)
		return;
	/* its pages given back before another thread may take it, and
	 * said after */
	if (cold)
		give_back(buf);
	else
		free(buf);
	ts = gpu_now();
	pthread_mutex_lock(&S.blk);
	if (cold)
		S.cold[S.ncold++] = buf;
	else
		S.nbufs--;
	buffers_changed(ts);
	pthread_mutex_unlock(&S.blk);
}

static void CUPTIAPI
buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
    size_t valid)
{
	CUpti_Activity *rec = NULL;
	struct ist_event ev[8];
	size_t dropped = 0;

	(void)size;
	pthread_mutex_lock(&S.lock);
	while (valid > 0 && K.cuptiActivityGetNextRecord(buf, valid, &rec) ==
	    CUPTI_SUCCESS) {
		int n = ist_cupti_convert(&S.conv, rec, ev, 8);
		for (int i = 0; i < n; i++)
			put(&ev[i]);
	}
	for (int n = 8; n == 8; ) {
		n = ist_cupti_flush_held(&S.conv, ev, 8);
		for (int i = 0; i < n; i++)
			put(&ev[i]);
	}
	bad_times_loss();
	if (S.w) {
		struct ist_error e;
		ist_writer_tick(S.w, &e);
	}
	mem_say();
	pthread_mutex_unlock(&S.lock);
	/* not under our lock: CUPTI takes its own (Kineto met a deadlock
	 * with exactly this call under its lock) */
	if (K.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) ==
	    CUPTI_SUCCESS && dropped > 0) {
		pthread_mutex_lock(&S.lock);
		loss(dropped, "CUPTI dropped activity records (buffers full, "
		    "or the --trace-size-mb budget of buffers in use)");
		pthread_mutex_unlock(&S.lock);
	}
	if (buf != NULL)
		buffer_back(buf);
}

static void finish_from(bool flusher_thread);
static void stop_cupti(void);

/* Every second: a clock pair and whatever CUPTI has completed.  A
 * terminating signal is written out here, then the process dies of it. */
static void dump_now(void);

static void *
flusher(void *arg)
{
	uint64_t dumps = S.dumps0;

	(void)arg;
	pthread_setname_np(pthread_self(), "inferscope-gpu");
	while (!atomic_load(&S.stopping)) {
		struct timespec ts = { 0, 50000000 };
		uint64_t d;
		int sig = 0;
		for (int i = 0; i < 20 && !atomic_load(&S.stopping) &&
		    (sig = ist_term_pending()) == 0 &&
		    ist_capture_dumps() == dumps; i++)
			nanosleep(&ts, NULL);
		if (sig) {
			S.dying = true;
			finish_from(true);
			ist_term_die(sig);
		}
		if (atomic_load(&S.stopping))
			break;
		/* a dump asked before this flush (one asked during it is
		 * the next round's, after a flush of its own) */
		d = ist_capture_dumps();
		pthread_mutex_lock(&S.lock);
		clock_pair();
		mem_say();
		pthread_mutex_unlock(&S.lock);
		K.cuptiActivityFlushAll(0);
		if (d != dumps) {
			dumps = d;
			dump_now();
		}
	}
	return NULL;
}

/* A counter of the CUDA stream's own, at CUPTI's time g. */
static void
counter(const char *name, uint64_t v, uint64_t g)
{
	struct ist_event c;

	ist_counter_init(&c, S.pid, -1, (struct ist_str){ name, strlen(name) },
	    (int64_t)g, (int64_t)v);
	put(&c);
}

/* Overhead by kind, as counters: CUPTI's own cost for the data-quality
 * section, the driver's (JIT, lazy loading) as what it is; and the
 * operations whose end was mended (cupti_convert.h, hold_ops). */
static void
overhead_counters(void)
{
	uint64_t g = 0;

	K.cuptiGetTimestamp(&g);
	for (int k = 0; k < IST_CUPTI_OVH_N; k++)
		if (S.conv.overhead_ns[k] != 0)
			counter(ist_cupti_overhead_names[k],
			    S.conv.overhead_ns[k], g);
	if (S.conv.clipped)
		counter("cupti.ops_clipped", S.conv.clipped, g);
}

/* Buffers handed to CUPTI that never came back, after the forced flush:
 * another CUPTI client (torch.profiler's Kineto) registered its own
 * callbacks, and they went to it with what they held. */
static void
taken_over_loss(void)
{
	uint64_t gone;
	int64_t last;
	char why[256];

	pthread_mutex_lock(&S.blk);
	gone = S.handed - S.returned;
	last = S.last_back_ns;
	pthread_mutex_unlock(&S.blk);
	if (gone == 0)
		return;
	snprintf(why, sizeof(why), "another CUPTI client (torch.profiler?) "
	    "took over the activity callbacks: %llu buffers of GPU activity "
	    "went to it%s", (unsigned long long)gone, last ? ", and what "
	    "followed the last one returned" : "");
	/* how many records they held is unknown */
	loss(0, why);
}

static void
capture_record(bool on, int64_t ts, const char *reason)
{
	struct ist_event ev;

	ist_capture_event(&ev, S.pid, ts, on, reason);
	put(&ev);
}

/*
 * The kept frames (--ring), then what the recorder overwrote and where
 * its window begins; mid-run (a dump at `at`), where it ends, and the
 * recorder keeps on.  At the end, only with --ring alone or --dump-on
 * exit, or when a signal kills the process.
 */
static void
ring_out(bool mid, int64_t at, int why)
{
	struct ist_error e;
	uint64_t written = 0, lost;
	int64_t from;
	int err;

	if (!S.ring || S.w == NULL || (!mid && !S.dying &&
	    !ist_capture_dump_exit()))
		return;
	if (ist_writer_flush(S.w, &e) != IST_OK) {
		snprintf(S.werr, sizeof(S.werr), "%s", e.msg);
		S.unwritten++;
	}
	/* the frame that flush kept said as of its keeping, and the frames
	 * forgotten as they are written said after: said together, as of
	 * the keeping, a sample read while they were written (30 ms here)
	 * held them beside a say without them, and the program's memory
	 * read 2.4 MiB more at the end */
	mem_say();
	S.ring = false;
	if ((err = ist_flight_write(&S.flight, &S.out, &written, &lost,
	    &from)) != 0) {
		snprintf(S.werr, sizeof(S.werr), "cannot write '%.300s': %s",
		    S.out.path, strerror(err));
		S.unwritten++;
	}
	mem_say();
	if (lost)
		loss(lost, "flight recorder: older events overwritten");
	if (from != INT64_MIN) {
		capture_record(true, from, "ring");
		/* what it held as the window began, as said with its oldest
		 * frame: said in frames overwritten */
		if (S.flight.said)
			mem_write_total(from, S.flight.said);
	}
	if (!mid)
		return;
	capture_record(false, at, ist_dump_reason(why));
	if (ist_writer_flush(S.w, &e) != IST_OK) {
		snprintf(S.werr, sizeof(S.werr), "%s", e.msg);
		S.unwritten++;
	}
	S.ring = true;
	ist_flight_resume(&S.flight, at);
}

/* In the flusher, right after its flush: a dump was asked for
 * (is-record's SIGUSR1, inferscope.dump()); the GPU activity completed so
 * far goes with it. */
static void
dump_now(void)
{
	uint64_t g = 0;
	int64_t at, h;
	int why;

	ist_capture_last_dump(&at, &why);
	/* the dump's time, on CUPTI's clock like the rest of the stream */
	h = mono_ns();
	if (K.cuptiGetTimestamp(&g) == CUPTI_SUCCESS)
		at += (int64_t)g - h;
	pthread_mutex_lock(&S.lock);
	ring_out(true, at, why);
	pthread_mutex_unlock(&S.lock);
}

static void
finish_from(bool flusher_thread)
{
	struct ist_event ev[IST_CUPTI_PENDING];
	struct ist_error e;
	char why[IST_ERROR_MAX + 64];
	int n;

	if (!S.started)
		return;
	atomic_store(&S.stopping, 1);
	if (S.flusher && !flusher_thread)
		pthread_join(S.thread, NULL);
	K.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	/* the program may run on after exit handlers: tracing stops here */
	stop_cupti();
	pthread_mutex_lock(&S.lock);
	do {
		n = ist_cupti_flush_pending(&S.conv, ev, IST_CUPTI_PENDING);
		for (int i = 0; i < n; i++)
			put(&ev[i]);
	} while (n == IST_CUPTI_PENDING);
	bad_times_loss();
	taken_over_loss();
	overhead_counters();
	clock_pair();
	ring_out(false, 0, 0);
	/* the buffers the forced flush gave back, and the kept frames
	 * written and forgotten: their pages had read as the program's
	 * memory lost (a page, at the last sample) */
	mem_say();
	/* its buffers kept as the process ends, as said: freed, 9.8 MB left
	 * its RSS unsaid, and a C program's last sample read a page */
	if (S.w && ist_writer_finish(S.w, &e) != IST_OK) {
		snprintf(S.werr, sizeof(S.werr), "%s", e.msg);
		S.unwritten++;
	}
	S.spent = S.w;
	S.w = NULL;
	S.started = false;
	if (S.unwritten) {
		snprintf(why, sizeof(why), "the CUDA collector's stream could "
		    "not be written: %s", S.werr);
		ist_stream_lost(&S.out, S.unwritten, why);
	}
	ist_stream_close(&S.out);
	ist_flight_release(&S.flight);
	ist_cupti_conv_release(&S.conv);
	pthread_mutex_unlock(&S.lock);
	ist_term_release();
	ist_term_stopped();
}

static void
finish(void)
{
	finish_from(false);
}

static void
after_fork_child(void)
{
	/* CUPTI does not follow a fork; the child records without it, and
	 * InferScope's memory copied into it, of no use there, is given
	 * back: a DataLoader's workers, forked from a CUDA program, each
	 * held the parent's buffers as their own memory.  Those kept for
	 * reuse, surely ours: one CUPTI holds may have gone to another
	 * client (Kineto), freed and reused by the program */
	S.started = false;
	ist_writer_free(S.w);
	S.w = NULL;
	for (unsigned i = 0; i < S.nfree; i++)
		give_back(S.free_bufs[i]);
	ist_flight_release(&S.flight);
	ist_stream_close(&S.out);
	pthread_mutex_unlock(&S.blk);
	pthread_mutex_unlock(&S.lock);
}

/* The locks are taken across fork, so that the child never inherits one
 * held by a thread (CUPTI's, converting) that the child does not have. */
static void
before_fork(void)
{
	pthread_mutex_lock(&S.lock);
	pthread_mutex_lock(&S.blk);
}

static void
after_fork_parent(void)
{
	pthread_mutex_unlock(&S.blk);
	pthread_mutex_unlock(&S.lock);
}

static int
open_stream(bool ring, uint64_t budget)
{
	const char *dir = getenv("INFERSCOPE_DIR");
	struct ist_writer_opts wo = { .flush_interval_ms = 1000,
	    .self_contained = ring };
	struct ist_event h;
	struct timespec rt, mt;
	struct ist_buf pids = { 0 };
	struct ist_error e;
	char host[256] = "", path[4200], prod[128];

	if (dir == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/%ld-cupti.ist", dir, (long)S.pid);
	/* appended to: after an exec the new program's stream follows the
	 * old one's (the same pid), which it must not wipe */
	if (ist_stream_open(&S.out, path, true) != 0)
		return -1;
	S.ring = ring;
	S.flight = (struct ist_flight){ .cap_bytes = budget };
	(void)ist_capture_attach();     /* dumps; at exit, whether to write */
	if (ist_writer_new(&S.w, sink, &S.out, &wo, &e) != IST_OK)
		return -1;
	gethostname(host, sizeof(host) - 1);
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	ist_event_init(&h, IST_HEADER);
	/* the CUPTI that recorded it, for a reader of the trace */
	snprintf(prod, sizeof(prod), "inferscope-cupti " IST_PACKAGE_VERSION
	    " (CUPTI API %u)", K.version);
	h.producer = (struct ist_str){ prod, strlen(prod) };
	h.host = (struct ist_str){ host, strlen(host) };
	h.realtime_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
	h.monotonic_ns = (int64_t)mt.tv_sec * 1000000000 + mt.tv_nsec;
	h.clocks = (struct ist_blob){ (const uint8_t *)"\x81\x65" "cupti", 7 };
	IST_SET(&h, IST_F_PRODUCER);
	IST_SET(&h, IST_F_HOST);
	IST_SET(&h, IST_F_REALTIME_NS);
	IST_SET(&h, IST_F_MONOTONIC_NS);
	IST_SET(&h, IST_F_CLOCKS);
	if (ist_cbor_ints(&S.pid, 1, &pids) == 0) {
		h.pids = (struct ist_blob){ (uint8_t *)pids.p, pids.n };
		IST_SET(&h, IST_F_PIDS);
	}
	if (ist_writer_header(S.w, &h, &e) != IST_OK) {
		ist_buf_release(&pids);
		return -1;
	}
	ist_buf_release(&pids);
	return 0;
}

/*
 * The writer's buffers whole (ist_writer_reserve), said as of before they
 * are made: grown as frames filled, 9.8 MB of them (4 MiB frames) read as
 * the program's memory growing.  In CUDA's start, which takes far longer.
 * Without memory for them, they grow as before, said as they do.
 */
static void
writer_reserve(void)
{
	int64_t t = gpu_now();
	struct ist_error e;

	if (S.w == NULL || ist_writer_reserve(S.w, &e) != IST_OK)
		return;
	S.said.wbytes = ist_writer_bytes(S.w);
	mem_write(t);
}

/* A callback of the subscriber's, by domain and id. */
struct cbid {
	CUpti_CallbackDomain d;
	CUpti_CallbackId id;
};

/* The stream and event queries, the runtime's and the driver's: CUDA 13
 * makes a sync record of one that found the work done. */
static const struct cbid query_cbs[] = {
	{ CUPTI_CB_DOMAIN_RUNTIME_API,
	  CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020 },
	{ CUPTI_CB_DOMAIN_RUNTIME_API,
	  CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020 },
	{ CUPTI_CB_DOMAIN_RUNTIME_API,
	  CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000 },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuEventQuery },
	{ CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamQuery },
	{ CUPTI_CB_DOMAIN_DRIVER_API,
	  CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz },
};
#define NQUERY_CBS (sizeof(query_cbs) / sizeof(*query_cbs))

static bool
is_query(CUpti_CallbackDomain d, CUpti_CallbackId id)
{
	for (size_t i = 0; i < NQUERY_CBS; i++)
		if (query_cbs[i].d == d && query_cbs[i].id == id)
			return true;
	return false;
}

/* cudaProfilerStart/Stop (and the driver's cuProfilerStart/Stop, which the
 * runtime's call): with --capture-range api or cudaProfilerApi, they switch
 * recording in every recorded process, on as the start returns, off as
 * the stop is entered.  Stream and event queries that found the work done:
 * their correlation ids, one store each, no lock. */
static void CUPTIAPI
on_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
    const void *data)
{
	const CUpti_CallbackData *cd = data;
	bool start;

	(void)u;
	if (d != CUPTI_CB_DOMAIN_RUNTIME_API && d != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	if (is_query(d, id)) {
		/* only those that found the work done (cudaSuccess and
		 * CUDA_SUCCESS are 0): a polling loop makes thousands that
		 * did not, which would push the one that did out of its slot
		 * before its record comes */
		if (cd->callbackSite == CUPTI_API_EXIT &&
		    (cd->functionReturnValue == NULL ||
		    *(const int *)cd->functionReturnValue == 0))
			atomic_store_explicit(&S.queries[cd->correlationId %
			    IST_CUPTI_QUERIES], cd->correlationId,
			    memory_order_relaxed);
		return;
	}
	if (d == CUPTI_CB_DOMAIN_RUNTIME_API)
		start = id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
	else
		start = id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
	if (cd->callbackSite == (start ? CUPTI_API_EXIT : CUPTI_API_ENTER))
		(void)ist_capture_switch(start, IST_CW_CUDA, 0, false);
}

/* Turns the subscriber's callbacks on: false when CUPTI refused one. */
static bool
enable_callbacks(const struct cbid *cb, size_t n)
{
	bool all = true;

	if (!S.subscribed || K.cuptiEnableCallback == NULL)
		return false;
	for (size_t i = 0; i < n; i++)
		all = K.cuptiEnableCallback(1, S.sub, cb[i].d, cb[i].id) ==
		    CUPTI_SUCCESS && all;
	return all;
}

/* The queries' callbacks: without them, their sync records stay (and
 * count as syncs of no length). */
static void
queries(void)
{
	if (enable_callbacks(query_cbs, NQUERY_CBS))
		S.conv.queries = S.queries;
}

static void
profiler_api(void)
{
	static const struct cbid cb[] = {
		{ CUPTI_CB_DOMAIN_RUNTIME_API,
		  CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 },
		{ CUPTI_CB_DOMAIN_RUNTIME_API,
		  CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000 },
		{ CUPTI_CB_DOMAIN_DRIVER_API,
		  CUPTI_DRIVER_TRACE_CBID_cuProfilerStart },
		{ CUPTI_CB_DOMAIN_DRIVER_API,
		  CUPTI_DRIVER_TRACE_CBID_cuProfilerStop },
	};

	if (!S.subscribed || K.cuptiEnableCallback == NULL ||
	    !ist_capture_attach() || !ist_cap->api)
		return;
	if (!enable_callbacks(cb, sizeof(cb) / sizeof(*cb)))
		fprintf(stderr, "inferscope: warning: cudaProfilerStart and "
		    "Stop cannot be followed: CUPTI refused their callbacks\n");
}

/* CUPTI takes one subscriber (before 13.2): taken first, another tool
 * (Nsight Systems, a second InferScope) is told apart from a free CUPTI.
 * A CUPTI without the call goes on unsubscribed. */
static int
subscribe(void)
{
	CUptiResult r;

	if (K.cuptiSubscribe == NULL)
		return 0;
	r = K.cuptiSubscribe(&S.sub, on_callback, NULL);
	if (r == CUPTI_SUCCESS) {
		S.subscribed = true;
		profiler_api();
		queries();
		return 0;
	}
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		fprintf(stderr, "inferscope: warning: another tool holds CUPTI "
		    "(Nsight Systems? a profiler in the program?); no GPU "
		    "activity is recorded\n");
		return -1;
	}
	say("cannot use CUPTI", r);
	return -1;
}

/* Buffers per thread, and how many at once: the trace budget. */
static void
set_buffers(uint64_t budget)
{
	uint8_t one = 1;
	size_t sz = sizeof(one);

	S.maxbufs = (unsigned)(budget / BUF_SIZE);
	if (S.maxbufs < 4)
		S.maxbufs = 4;
	/* without them, those past FREE_MAX are freed */
	S.cold = calloc(S.maxbufs, sizeof(*S.cold));
	if (K.cuptiActivitySetAttribute == NULL)
		return;
	K.cuptiActivitySetAttribute(
	    CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &sz, &one);
	/* The device's timestamp buffers (DEVICE_BUFFER_POOL_LIMIT) keep
	 * CUPTI's default of 250 of ~3 MB a context: CUDA graphs and many
	 * streams fill them, a lower limit loses kernels' times, and device
	 * memory is taken only as they fill. */
}

static int
start_cupti(uint64_t budget)
{
	CUptiResult r;

	if (subscribe() != 0)
		return -1;
	/* thread ids as the kernel has them (gettid), like the sampler's */
	K.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	set_buffers(budget);
	if ((r = K.cuptiActivityRegisterCallbacks(buffer_requested,
	    buffer_completed)) != CUPTI_SUCCESS) {
		say("cannot use CUPTI", r);
		return -1;
	}
	for (size_t i = 0; i < NKINDS; i++)
		if ((r = K.cuptiActivityEnable(kinds[i])) != CUPTI_SUCCESS &&
		    kinds[i] == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
			say("cannot enable CUPTI kernel records", r);
			return -1;
		}
	choose_api_calls();
	/* CUDA 13 records syncs that return an error (cudaEventQuery and
	 * cudaStreamQuery polls, which PyTorch issues all the time): those
	 * waited for nothing.  The converter drops any that still come. */
	if (K.cuptiActivityEnableAllSyncRecords)
		K.cuptiActivityEnableAllSyncRecords(0);
	return 0;
}

static void
stop_cupti(void)
{
	for (size_t i = 0; i < NKINDS; i++)
		K.cuptiActivityDisable(kinds[i]);
	K.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
	if (S.subscribed && K.cuptiUnsubscribe)
		K.cuptiUnsubscribe(S.sub);
	S.subscribed = false;
}

EXPORT int InitializeInjection(void);

EXPORT int
InitializeInjection(void)
{
	const char *en = getenv("INFERSCOPE_ENABLED");
	/* the trace budget: the activity buffers in use at once, and with
	 * --ring the frames kept */
	uint64_t budget = ist_env_budget();
	char why[1400];

	if (S.started || en == NULL || strcmp(en, "1") != 0)
		return 1;
	if (ist_cupti_load(&K, why, sizeof(why)) != 0) {
		fprintf(stderr, "inferscope: warning: %s; no GPU activity is "
		    "recorded\n", why);
		return 1;
	}
	S.pid = getpid();
	ist_cupti_conv_init(&S.conv, S.pid);
	S.conv.api_version = K.version;
	S.conv.api_name = api_name;
	S.conv.hold_ops = true;
	S.conv.pcie_gbps = pcie_gbps;
	if (start_cupti(budget) != 0) {
		stop_cupti();
		return 1;
	}
	/* the stream only once CUPTI works: no empty files */
	if (open_stream(ist_env_ring(), budget) != 0) {
		struct stat st;
		if (S.out.fd >= 0) {
			/* a file of our own making, not the stream of the
			 * program this process was before an exec */
			bool ours = fstat(S.out.fd, &st) == 0 &&
			    st.st_size == 0;
			ist_stream_close(&S.out);
			if (ours)
				unlink(S.out.path);
		}
		ist_writer_free(S.w);
		S.w = NULL;
		stop_cupti();
		return 1;
	}
	pthread_mutex_lock(&S.lock);
	clock_pair();
	writer_reserve();
	pthread_mutex_unlock(&S.lock);
	S.started = true;
	ist_term_reset();
	/* without the thread, records come at exit (and when CUPTI's
	 * buffers fill) and no clock pair is taken between */
	S.dumps0 = ist_capture_dumps();
	S.flusher = ist_term_thread(&S.thread, flusher) == 0;
	ist_term_catch();
	atexit(finish);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	return 1;
}
