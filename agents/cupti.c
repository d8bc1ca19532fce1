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
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "cupti_convert.h"
#include "internal.h"
#include "stream.h"

#define EXPORT __attribute__((visibility("default")))
#define NBUF 8
#define BUF_SIZE (4u << 20)
#define ALIGN 8

static struct {
	pthread_mutex_t lock;        /* the writer and the converter */
	struct ist_writer *w;
	struct ist_stream out;       /* the stream, by fd and by path */
	int64_t pid;
	struct ist_cupti_conv conv;
	uint8_t *pool[NBUF];
	_Atomic unsigned used;       /* bit i: pool[i] is with CUPTI */
	pthread_t thread;
	_Atomic int stopping;
	bool started, flusher;       /* flusher: the thread was created */
	uint64_t bad_times_said;     /* conv.bad_times already in a loss */
	uint64_t unwritten;          /* events after the writer failed */
	char werr[IST_ERROR_MAX];    /* why it failed */
} S = { .lock = PTHREAD_MUTEX_INITIALIZER, .out.fd = -1 };

static void
say(const char *what, CUptiResult r)
{
	const char *s = NULL;
	cuptiGetResultString(r, &s);
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

/* ---- names and link bandwidth for the converter ---- */

static const char *
api_name(void *ctx, bool driver, uint32_t cbid)
{
	const char *n = NULL;
	(void)ctx;
	if (cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API :
	    CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &n) != CUPTI_SUCCESS)
		return NULL;
	return n;
}

/* The PCIe link of a device, from sysfs through its PCI bus id. */
static double
pcie_gbps(void *ctx, uint32_t device)
{
	typedef int (*getbus_fn)(char *, int, int);
	getbus_fn getbus = (getbus_fn)dlsym(RTLD_DEFAULT,
	    "cuDeviceGetPCIBusId");
	char bus[64] = "", path[256], speed[64] = "", width[16] = "";
	int fd;
	ssize_t n;

	(void)ctx;
	if (getbus == NULL || getbus(bus, sizeof(bus), (int)device) != 0)
		return 0;
	for (char *p = bus; *p; p++)
		if (*p >= 'A' && *p <= 'F')
			*p = (char)(*p - 'A' + 'a');
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/max_link_speed",
	    bus);
	if ((fd = open(path, O_RDONLY)) >= 0) {
		n = read(fd, speed, sizeof(speed) - 1);
		speed[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/max_link_width",
	    bus);
	if ((fd = open(path, O_RDONLY)) >= 0) {
		n = read(fd, width, sizeof(width) - 1);
		width[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	return ist_pcie_gbps(speed, atoi(width));
}

/* what is recorded; RUNTIME brings INTERNAL_LAUNCH_API records too */
static const CUpti_ActivityKind kinds[] = {
	CUPTI_ACTIVITY_KIND_DEVICE,
	CUPTI_ACTIVITY_KIND_CONTEXT,
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMCPY2,
	CUPTI_ACTIVITY_KIND_MEMSET,
	CUPTI_ACTIVITY_KIND_RUNTIME,
	CUPTI_ACTIVITY_KIND_DRIVER,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
	CUPTI_ACTIVITY_KIND_MEMORY2,
	CUPTI_ACTIVITY_KIND_OVERHEAD,
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* ---- writing (under S.lock) ---- */

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
	}
}

static void
clock_pair(void)
{
	uint64_t g = 0;
	int64_t h0 = mono_ns(), h1;
	struct ist_event ev;

	if (cuptiGetTimestamp(&g) != CUPTI_SUCCESS)
		return;
	h1 = mono_ns();
	ist_event_init(&ev, IST_CLOCK);
	ev.pid = S.pid;
	ev.ts_ns = h0 + (h1 - h0) / 2;
	ev.domain = (struct ist_str){ "cupti", 5 };
	ev.domain_ns = (int64_t)g;
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

/* ---- CUPTI's buffers ---- */

static void CUPTIAPI
buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	unsigned u = atomic_load(&S.used);

	*max_records = 0;
	for (int i = 0; i < NBUF; i++) {
		if (u & (1u << i))
			continue;
		if (atomic_compare_exchange_strong(&S.used, &u, u | (1u << i))) {
			*buf = S.pool[i];
			*size = BUF_SIZE;
			return;
		}
		i = -1;   /* u was reloaded: look again */
	}
	/* every pooled buffer is in flight: one more, freed on return */
	*buf = aligned_alloc(ALIGN, BUF_SIZE);
	*size = *buf ? BUF_SIZE : 0;
}

static void CUPTIAPI
buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
    size_t valid)
{
	CUpti_Activity *rec = NULL;
	struct ist_event ev[8];
	size_t dropped = 0;
	int pooled = -1;

	(void)size;
	pthread_mutex_lock(&S.lock);
	while (valid > 0 && cuptiActivityGetNextRecord(buf, valid, &rec) ==
	    CUPTI_SUCCESS) {
		int n = ist_cupti_convert(&S.conv, rec, ev, 8);
		for (int i = 0; i < n; i++)
			put(&ev[i]);
	}
	bad_times_loss();
	if (S.w) {
		struct ist_error e;
		ist_writer_tick(S.w, &e);
	}
	pthread_mutex_unlock(&S.lock);
	/* not under our lock: CUPTI takes its own (Kineto met a deadlock
	 * with exactly this call under its lock) */
	if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) ==
	    CUPTI_SUCCESS && dropped > 0) {
		pthread_mutex_lock(&S.lock);
		loss(dropped, "CUPTI dropped activity records (buffers full)");
		pthread_mutex_unlock(&S.lock);
	}
	for (int i = 0; i < NBUF; i++)
		if (S.pool[i] == buf)
			pooled = i;
	if (pooled >= 0)
		atomic_fetch_and(&S.used, ~(1u << pooled));
	else
		free(buf);
}

/* Every second: a clock pair and whatever CUPTI has completed. */
static void *
flusher(void *arg)
{
	(void)arg;
	while (!atomic_load(&S.stopping)) {
		struct timespec ts = { 0, 250000000 };
		for (int i = 0; i < 4 && !atomic_load(&S.stopping); i++)
			nanosleep(&ts, NULL);
		if (atomic_load(&S.stopping))
			break;
		pthread_mutex_lock(&S.lock);
		clock_pair();
		pthread_mutex_unlock(&S.lock);
		cuptiActivityFlushAll(0);
	}
	return NULL;
}

/* Overhead by kind, as counters: CUPTI's own cost for the data-quality
 * section, the driver's (JIT, lazy loading) as what it is. */
static void
overhead_counters(void)
{
	uint64_t g = 0;

	cuptiGetTimestamp(&g);
	for (int k = 0; k < IST_CUPTI_OVH_N; k++) {
		struct ist_event c;
		if (S.conv.overhead_ns[k] == 0)
			continue;
		ist_event_init(&c, IST_COUNTER);
		c.pid = S.pid;
		c.name = (struct ist_str){ ist_cupti_overhead_names[k],
		    strlen(ist_cupti_overhead_names[k]) };
		c.ts_ns = (int64_t)g;
		c.value_is_int = true;
		c.ivalue = (int64_t)S.conv.overhead_ns[k];
		IST_SET(&c, IST_F_PID);
		IST_SET(&c, IST_F_NAME);
		IST_SET(&c, IST_F_TS);
		IST_SET(&c, IST_F_VALUE);
		put(&c);
	}
}

static void
finish(void)
{
	struct ist_event ev[IST_CUPTI_PENDING];
	struct ist_error e;
	char why[IST_ERROR_MAX + 64];
	int n;

	if (!S.started)
		return;
	atomic_store(&S.stopping, 1);
	if (S.flusher)
		pthread_join(S.thread, NULL);
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	/* the program may run on after exit handlers: tracing stops here */
	for (size_t i = 0; i < NKINDS; i++)
		cuptiActivityDisable(kinds[i]);
	pthread_mutex_lock(&S.lock);
	n = ist_cupti_flush_pending(&S.conv, ev, IST_CUPTI_PENDING);
	for (int i = 0; i < n; i++)
		put(&ev[i]);
	bad_times_loss();
	overhead_counters();
	clock_pair();
	if (S.w && ist_writer_close(S.w, &e) != IST_OK) {
		snprintf(S.werr, sizeof(S.werr), "%s", e.msg);
		S.unwritten++;
	}
	S.w = NULL;
	S.started = false;
	if (S.unwritten) {
		snprintf(why, sizeof(why), "the CUDA collector's stream could "
		    "not be written: %s", S.werr);
		ist_stream_lost(&S.out, S.unwritten, why);
	}
	ist_stream_close(&S.out);
	ist_cupti_conv_release(&S.conv);
	pthread_mutex_unlock(&S.lock);
}

static void
after_fork_child(void)
{
	/* CUPTI does not follow a fork; the child records without it */
	S.started = false;
	S.w = NULL;
	ist_stream_close(&S.out);
	pthread_mutex_unlock(&S.lock);
}

/* The lock is taken across fork, so that the child never inherits it held
 * by a thread (CUPTI's, converting) that the child does not have. */
static void
before_fork(void)
{
	pthread_mutex_lock(&S.lock);
}

static void
after_fork_parent(void)
{
	pthread_mutex_unlock(&S.lock);
}

static int
open_stream(void)
{
	const char *dir = getenv("INFERSCOPE_DIR");
	struct ist_writer_opts wo = { .flush_interval_ms = 1000 };
	struct ist_event h;
	struct timespec rt, mt;
	struct ist_buf pids = { 0 };
	struct ist_error e;
	char host[256] = "", path[4200];

	if (dir == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/%ld-cupti.ist", dir, (long)S.pid);
	if (ist_stream_open(&S.out, path, false) != 0)
		return -1;
	if (ist_writer_new(&S.w, ist_stream_sink, &S.out, &wo, &e) != IST_OK)
		return -1;
	gethostname(host, sizeof(host) - 1);
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	ist_event_init(&h, IST_HEADER);
	h.producer = (struct ist_str){ "inferscope-cupti " IST_PACKAGE_VERSION,
	    strlen("inferscope-cupti " IST_PACKAGE_VERSION) };
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

EXPORT int InitializeInjection(void);

EXPORT int
InitializeInjection(void)
{
	CUptiResult r;
	const char *en = getenv("INFERSCOPE_ENABLED");

	if (S.started || en == NULL || strcmp(en, "1") != 0)
		return 1;
	for (int i = 0; i < NBUF; i++)
		if ((S.pool[i] = aligned_alloc(ALIGN, BUF_SIZE)) == NULL)
			return 1;
	S.pid = getpid();
	ist_cupti_conv_init(&S.conv, S.pid);
	S.conv.api_name = api_name;
	S.conv.pcie_gbps = pcie_gbps;
	/* thread ids as the kernel has them (gettid), like the sampler's */
	cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	if ((r = cuptiActivityRegisterCallbacks(buffer_requested,
	    buffer_completed)) != CUPTI_SUCCESS) {
		say("cannot use CUPTI", r);
		return 1;
	}
	for (size_t i = 0; i < NKINDS; i++)
		if ((r = cuptiActivityEnable(kinds[i])) != CUPTI_SUCCESS &&
		    kinds[i] == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
			say("cannot enable CUPTI kernel records", r);
			goto off;
		}
#if CUPTI_API_VERSION >= 130000
	/* CUDA 13 records syncs that return an error (cudaEventQuery and
	 * cudaStreamQuery polls, which PyTorch issues all the time): those
	 * waited for nothing.  The converter drops any that still come. */
	cuptiActivityEnableAllSyncRecords(0);
#endif
	/* the stream only once CUPTI works: no empty files */
	if (open_stream() != 0) {
		if (S.out.fd >= 0) {
			ist_stream_close(&S.out);
			unlink(S.out.path);
		}
		ist_writer_free(S.w);
		S.w = NULL;
		goto off;
	}
	pthread_mutex_lock(&S.lock);
	clock_pair();
	pthread_mutex_unlock(&S.lock);
	S.started = true;
	/* without the thread, records come at exit (and when CUPTI's
	 * buffers fill) and no clock pair is taken between */
	S.flusher = pthread_create(&S.thread, NULL, flusher, NULL) == 0;
	atexit(finish);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	return 1;
off:
	for (size_t i = 0; i < NKINDS; i++)
		cuptiActivityDisable(kinds[i]);
	return 1;
}
