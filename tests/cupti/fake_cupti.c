/*
 * fake_cupti.c - a stand-in libcupti (soname libcupti.so.13) for the tests
 * of the CUDA collector on a machine without a GPU: the entry points the
 * collector calls, behaving as CUPTI documents them (per-thread activity
 * buffers asked of the client and handed back full or flushed, kinds and
 * API calls enabled one by one, one subscriber), with the activity itself
 * made by the test program through the fake_cupti_* calls.  Records are
 * laid out in the CUDA 13 structs, or in CUDA 12's shorter
 * Synchronization when FAKE_CUPTI_VERSION is below 26.
 *
 * FAKE_CUPTI_LOG names a file that gets one line per call that changes
 * what is recorded ("enable 10", "runtime_api cudaGetDevice 0", ...), and
 * "loaded PATH" first; FAKE_CUPTI_SUBSCRIBER=1 plays another tool that
 * holds CUPTI.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#define API __attribute__((visibility("default")))

/* the test program's side (fake_driver.c finds them by dlsym) */
API uint64_t fake_cupti_now(void);
API void fake_cupti_kernel(const char *name, uint64_t s, uint64_t e,
    uint32_t corr, uint32_t stream);
API void fake_cupti_api(const char *name, uint64_t s, uint64_t e,
    uint32_t corr);
API void fake_cupti_memcpy(int copy_kind, int pageable, uint64_t bytes,
    uint64_t s, uint64_t e, uint32_t corr);
API void fake_cupti_sync(int type, uint64_t s, uint64_t e, uint32_t corr,
    int ret);
API void fake_cupti_device(uint32_t id, const char *name,
    const uint8_t uuid[16]);
API void fake_cupti_take_over(void);
API void fake_cupti_return(int rv);
API void fake_cupti_clock_step(int64_t ns);
#define NTHREADS 256
#define NCBID 2048

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc req;
static CUpti_BuffersCallbackCompleteFunc done;
static bool kind_on[64];
static bool runtime_off[NCBID], driver_on[NCBID];
static int subscribers;
static CUpti_CallbackFunc sub_fn;      /* the subscriber's callback */
static void *sub_arg;
static bool cb_on[2][NCBID];          /* enabled: [driver][cbid] */
static _Atomic size_t dropped;
static _Atomic int64_t clock_step;
static struct tbuf { uint8_t *buf; size_t size, used; } tb[NTHREADS];
static int ntb;
static __thread int my_tb = -1;

static const struct { int driver; uint32_t id; const char *name; } names[] = {
#define RT(n) { 0, CUPTI_RUNTIME_TRACE_CBID_##n, #n }
#define DR(n) { 1, CUPTI_DRIVER_TRACE_CBID_##n, #n }
	RT(cudaLaunchKernel_v7000), RT(cudaGetDevice_v3020),
	RT(cudaMemcpyAsync_v3020), RT(cudaStreamSynchronize_v3020),
	RT(cudaEventQuery_v3020), RT(cudaGraphLaunch_v10000),
	RT(cudaStreamQuery_v3020),
	DR(cuLaunchKernel), DR(cuCtxGetCurrent), DR(cuMemcpyHtoD_v2),
	DR(cuStreamSynchronize), RT(cudaProfilerStart_v4000),
	RT(cudaProfilerStop_v4000), DR(cuProfilerStart), DR(cuProfilerStop),
};
#define NNAMES (sizeof(names) / sizeof(*names))

static void
say(const char *fmt, ...)
{
	const char *path = getenv("FAKE_CUPTI_LOG");
	static bool first = true;
	va_list ap;
	FILE *f;

	if (path == NULL || (f = fopen(path, "a")) == NULL)
		return;
	if (first) {
		Dl_info di;
		first = false;
		if (dladdr((void *)say, &di) && di.dli_fname)
			fprintf(f, "loaded %s\n", di.dli_fname);
	}
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static uint32_t
version(void)
{
	const char *v = getenv("FAKE_CUPTI_VERSION");
	return v ? (uint32_t)atol(v) : 130001;
}

static size_t
rec_size(CUpti_ActivityKind k)
{
	switch (k) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		return version() >= 26 ? sizeof(CUpti_ActivitySynchronization2) :
		    offsetof(CUpti_ActivitySynchronization2, cudaEventId) + 4;
	case CUPTI_ACTIVITY_KIND_DEVICE:
		return sizeof(CUpti_ActivityDevice5);
	default:
		return sizeof(CUpti_ActivityAPI);
	}
}

/* ---- the entry points ---- */

API CUptiResult
cuptiGetVersion(uint32_t *v)
{
	*v = version();
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiGetResultString(CUptiResult r, const char **s)
{
	*s = r == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR (fake)";
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t id, const char **name)
{
	for (size_t i = 0; i < NNAMES; i++)
		if (names[i].id == id && names[i].driver ==
		    (d == CUPTI_CB_DOMAIN_DRIVER_API)) {
			*name = names[i].name;
			return CUPTI_SUCCESS;
		}
	return CUPTI_ERROR_INVALID_PARAMETER;
}

/* FAKE_CUPTI_TS_STALL=N: the Nth read (from 1) of the clock stalls 2 ms
 * once it has read it, as a thread preempted on a loaded machine does */
API CUptiResult
cuptiGetTimestamp(uint64_t *t)
{
	static _Atomic long reads;
	const char *stall = getenv("FAKE_CUPTI_TS_STALL");
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	*t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
	    (uint64_t)atomic_load(&clock_step);
	if (stall && atomic_fetch_add(&reads, 1) + 1 == atol(stall))
		usleep(2000);
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiSetThreadIdType(CUpti_ActivityThreadIdType t)
{
	say("thread_id_type %d", (int)t);
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiSubscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc f, void *u)
{
	if (subscribers > 0 || (getenv("FAKE_CUPTI_SUBSCRIBER") &&
	    strcmp(getenv("FAKE_CUPTI_SUBSCRIBER"), "1") == 0))
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	subscribers++;
	sub_fn = f;
	sub_arg = u;
	*h = (CUpti_SubscriberHandle)&subscribers;
	say("subscribe");
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle h,
    CUpti_CallbackDomain d, CUpti_CallbackId id)
{
	(void)h;
	if ((d != CUPTI_CB_DOMAIN_RUNTIME_API &&
	    d != CUPTI_CB_DOMAIN_DRIVER_API) || id >= NCBID)
		return CUPTI_ERROR_INVALID_PARAMETER;
	cb_on[d == CUPTI_CB_DOMAIN_DRIVER_API][id] = enable != 0;
	say("callback %s %u %s", d == CUPTI_CB_DOMAIN_DRIVER_API ? "driver" :
	    "runtime", (unsigned)id, enable ? "on" : "off");
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiUnsubscribe(CUpti_SubscriberHandle h)
{
	(void)h;
	subscribers--;
	sub_fn = NULL;
	say("unsubscribe");
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
    CUpti_BuffersCallbackCompleteFunc c)
{
	req = r;
	done = c;
	say("register");
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiActivitySetAttribute(CUpti_ActivityAttribute a, size_t *sz, void *v)
{
	uint64_t x = 0;
	memcpy(&x, v, *sz < sizeof(x) ? *sz : sizeof(x));
	say("attr %d %llu", (int)a, (unsigned long long)x);
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiActivityEnable(CUpti_ActivityKind k)
{
	kind_on[k] = true;
	/* a kind overrides the finer settings made before it */
	if (k == CUPTI_ACTIVITY_KIND_RUNTIME)
		memset(runtime_off, 0, sizeof(runtime_off));
	if (k == CUPTI_ACTIVITY_KIND_DRIVER)
		memset(driver_on, 1, sizeof(driver_on));
	say("enable %d", (int)k);
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiActivityDisable(CUpti_ActivityKind k)
{
	kind_on[k] = false;
	if (k == CUPTI_ACTIVITY_KIND_DRIVER)
		memset(driver_on, 0, sizeof(driver_on));
	say("disable %d", (int)k);
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiActivityEnableRuntimeApi(CUpti_CallbackId id, uint8_t on)
{
	const char *n = "?";
	cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, id, &n);
	runtime_off[id % NCBID] = !on;
	say("runtime_api %s %d", n, on);
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiActivityEnableDriverApi(CUpti_CallbackId id, uint8_t on)
{
	const char *n = "?";
	cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &n);
	driver_on[id % NCBID] = on;
	say("driver_api %s %d", n, on);
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiActivityEnableAllSyncRecords(uint8_t on)
{
	say("all_sync_records %d", on);
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	uint8_t *p = *rec ? (uint8_t *)*rec + ((rec_size((*rec)->kind) + 7) &
	    ~(size_t)7) : buf;

	if (p >= buf + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)p;
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *n)
{
	(void)c, (void)s;
	*n = atomic_exchange(&dropped, 0);
	return CUPTI_SUCCESS;
}

/* Hands back every buffer holding records (forced: every buffer). */
API CUptiResult
cuptiActivityFlushAll(uint32_t flags)
{
	struct tbuf out[NTHREADS];
	int n = 0;
	CUpti_BuffersCallbackCompleteFunc to;

	pthread_mutex_lock(&mu);
	for (int i = 0; i < ntb; i++)
		if (tb[i].buf && (tb[i].used > 0 ||
		    (flags & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED))) {
			out[n++] = tb[i];
			tb[i].buf = NULL;
			tb[i].used = 0;
		}
	to = done;
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < n; i++)
		to(NULL, 0, out[i].buf, out[i].size, out[i].used);
	return CUPTI_SUCCESS;
}

/* ---- activity, made by the test program ---- */

static void
emit(const void *rec, size_t n)
{
	CUpti_ActivityKind k = ((const CUpti_Activity *)rec)->kind;
	size_t step = (n + 7) & ~(size_t)7;
	struct tbuf full = { 0 };
	struct tbuf *t;

	if (!kind_on[k] || req == NULL)
		return;
	pthread_mutex_lock(&mu);
	if (my_tb < 0 && ntb < NTHREADS)
		my_tb = ntb++;
	if (my_tb < 0) {
		pthread_mutex_unlock(&mu);
		return;
	}
	t = &tb[my_tb];
	if (t->buf && t->used + step > t->size) {
		full = *t;
		t->buf = NULL;
	}
	if (t->buf == NULL) {
		size_t maxr = 0;
		t->size = 0;
		t->used = 0;
		req(&t->buf, &t->size, &maxr);
		if (t->buf == NULL || t->size < step) {
			t->buf = NULL;
			atomic_fetch_add(&dropped, 1);
		}
	}
	if (t->buf) {
		memcpy(t->buf + t->used, rec, n);
		t->used += step;
	}
	pthread_mutex_unlock(&mu);
	if (full.buf)
		done(NULL, 0, full.buf, full.size, full.used);
}

API uint64_t
fake_cupti_now(void)
{
	uint64_t t;
	cuptiGetTimestamp(&t);
	return t;
}

API void
fake_cupti_kernel(const char *name, uint64_t s, uint64_t e, uint32_t corr,
    uint32_t stream)
{
	CUpti_ActivityKernel10 k;

	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = s;
	k.end = e;
	k.deviceId = 0;
	k.streamId = stream;
	k.correlationId = corr;
	k.name = name;
	k.gridX = k.gridY = k.gridZ = 1;
	k.blockX = 128;
	k.blockY = k.blockZ = 1;
	emit(&k, sizeof(k));
}

/* What the API calls after it return, as their exit callbacks see it
 * (0, success, until told otherwise). */
static int call_rv;

API void
fake_cupti_return(int rv)
{
	call_rv = rv;
}

/* An API call by its callback name ("cudaLaunchKernel_v7000"). */
API void
fake_cupti_api(const char *name, uint64_t s, uint64_t e, uint32_t corr)
{
	CUpti_ActivityAPI a;
	size_t i;

	for (i = 0; i < NNAMES && strcmp(names[i].name, name) != 0; i++)
		;
	if (i == NNAMES)
		abort();
	/* the subscriber's callback, at the call's entry and exit */
	if (sub_fn && cb_on[names[i].driver][names[i].id]) {
		CUpti_CallbackData cd;
		memset(&cd, 0, sizeof(cd));
		cd.functionName = name;
		cd.correlationId = corr;
		cd.callbackSite = CUPTI_API_ENTER;
		sub_fn(sub_arg, names[i].driver ? CUPTI_CB_DOMAIN_DRIVER_API :
		    CUPTI_CB_DOMAIN_RUNTIME_API, names[i].id, &cd);
		cd.callbackSite = CUPTI_API_EXIT;
		cd.functionReturnValue = &call_rv;
		sub_fn(sub_arg, names[i].driver ? CUPTI_CB_DOMAIN_DRIVER_API :
		    CUPTI_CB_DOMAIN_RUNTIME_API, names[i].id, &cd);
	}
	if (names[i].driver ? !driver_on[names[i].id] :
	    (!kind_on[CUPTI_ACTIVITY_KIND_RUNTIME] || runtime_off[names[i].id]))
		return;
	memset(&a, 0, sizeof(a));
	a.kind = names[i].driver ? CUPTI_ACTIVITY_KIND_DRIVER :
	    CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = names[i].id;
	a.start = s;
	a.end = e;
	a.processId = (uint32_t)getpid();
	a.threadId = (uint32_t)syscall(SYS_gettid);
	a.correlationId = corr;
	/* driver records pass the kind check with fine-grained tracing */
	if (names[i].driver && !kind_on[CUPTI_ACTIVITY_KIND_DRIVER]) {
		kind_on[CUPTI_ACTIVITY_KIND_DRIVER] = true;
		emit(&a, sizeof(a));
		kind_on[CUPTI_ACTIVITY_KIND_DRIVER] = false;
		return;
	}
	emit(&a, sizeof(a));
}

/* copy_kind: CUPTI_ACTIVITY_MEMCPY_KIND_*; pageable: the host side's */
API void
fake_cupti_memcpy(int copy_kind, int pageable, uint64_t bytes, uint64_t s,
    uint64_t e, uint32_t corr)
{
	CUpti_ActivityMemcpy6 m;
	uint8_t host = pageable ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE :
	    CUPTI_ACTIVITY_MEMORY_KIND_PINNED;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = (uint8_t)copy_kind;
	m.srcKind = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD ? host :
	    CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.dstKind = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? host :
	    CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.bytes = bytes;
	m.start = s;
	m.end = e;
	m.streamId = 7;
	m.correlationId = corr;
	emit(&m, sizeof(m));
}

API void
fake_cupti_sync(int type, uint64_t s, uint64_t e, uint32_t corr, int ret)
{
	CUpti_ActivitySynchronization2 y;

	memset(&y, 0, sizeof(y));
	y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	y.type = (CUpti_ActivitySynchronizationType)type;
	y.start = s;
	y.end = e;
	y.correlationId = corr;
	y.streamId = 7;
	y.returnValue = (CUresult)ret;
	emit(&y, rec_size(y.kind));
}

API void
fake_cupti_device(uint32_t id, const char *name, const uint8_t uuid[16])
{
	CUpti_ActivityDevice5 d;

	memset(&d, 0, sizeof(d));
	d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
	d.id = id;
	d.name = name;
	d.numMultiprocessors = 132;
	d.globalMemorySize = 80ull << 30;
	memcpy(d.uuid.bytes, uuid, 16);
	emit(&d, sizeof(d));
}

/* What torch.profiler's Kineto does: its own callbacks, which keep
 * nothing and free what they are handed. */
static void CUPTIAPI
thief_request(uint8_t **b, size_t *size, size_t *maxr)
{
	*b = aligned_alloc(8, 1u << 20);
	*size = 1u << 20;
	*maxr = 0;
}

static void CUPTIAPI
thief_done(CUcontext c, uint32_t s, uint8_t *b, size_t size, size_t valid)
{
	(void)c, (void)s, (void)size, (void)valid;
	free(b);
}

API void
fake_cupti_take_over(void)
{
	cuptiActivityRegisterCallbacks(thief_request, thief_done);
}

/* CUPTI's clock jumps (it follows CLOCK_REALTIME, or a tool switched it) */
API void
fake_cupti_clock_step(int64_t ns)
{
	atomic_fetch_add(&clock_step, ns);
}
