/*
 * nvtx_app.c - a CPU-only C program annotated with NVTX, for tests.  For
 * each range it prints "NAME INSIDE_NS AROUND_NS": the time it measured
 * just inside the range's push and pop, and just around them, which the
 * recorded duration must lie between whatever the machine's load.
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int64_t lib_work(void); /* from nvtx_lib.c: a library embedding NVTX too */

static int64_t
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static void
say(const char *name, int64_t around0, int64_t in0, int64_t in1,
    int64_t around1)
{
	printf("%s %lld %lld\n", name, (long long)(in1 - in0),
	    (long long)(around1 - around0));
}

static void *
worker(void *arg)
{
	int64_t t[4];

	(void)arg;
	nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-worker");
	t[0] = now();
	nvtxRangePushA("in-thread");
	t[1] = now();
	sleep_ms(40);
	t[2] = now();
	nvtxRangePop();
	t[3] = now();
	say("in-thread", t[0], t[1], t[2], t[3]);
	return NULL;
}

int
main(void)
{
	pthread_t th;
	nvtxDomainHandle_t d;
	nvtxEventAttributes_t a = { 0 };
	nvtxRangeId_t id;
	int64_t o[4], i[4], t[4], lib;

	o[0] = now();
	nvtxRangePushA("outer");
	o[1] = now();
	sleep_ms(50);
	i[0] = now();
	nvtxRangePushA("inner");
	i[1] = now();
	sleep_ms(20);
	i[2] = now();
	nvtxRangePop();
	i[3] = now();
	o[2] = now();
	nvtxRangePop();
	o[3] = now();
	say("outer", o[0], o[1], o[2], o[3]);
	say("inner", i[0], i[1], i[2], i[3]);
	nvtxMarkA("checkpoint");
	t[0] = now();
	id = nvtxRangeStartA("start-end");
	t[1] = now();
	sleep_ms(30);
	t[2] = now();
	nvtxRangeEnd(id);
	t[3] = now();
	say("start-end", t[0], t[1], t[2], t[3]);
	d = nvtxDomainCreateA("my.domain");
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = nvtxDomainRegisterStringA(d, "registered");
	t[0] = now();
	nvtxDomainRangePushEx(d, &a);
	t[1] = now();
	sleep_ms(10);
	t[2] = now();
	nvtxDomainRangePop(d);
	t[3] = now();
	say("registered", t[0], t[1], t[2], t[3]);
	fflush(stdout);
	pthread_create(&th, NULL, worker, NULL);
	pthread_join(th, NULL);
	t[0] = now();
	lib = lib_work();
	t[3] = now();
	say("from-library", t[0], 0, lib, t[3]);
	return 3;
}
