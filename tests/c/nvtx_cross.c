/*
 * nvtx_cross.c - NVTX as the spec has it, for tests: push/pop ranges nest
 * per thread and per domain; a start/end range may end on another thread
 * than it started on; range ids are the library's to check.  Prints
 * "main TID", "worker TID" and "levels L..." (what the pushes and pops
 * returned); the test reads the trace against them.
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MANY 10000

static nvtxRangeId_t handoff;

static void
sleep_ms(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };
	nanosleep(&ts, NULL);
}

/* ends the range main started, and starts one main will end */
static void *
worker(void *arg)
{
	nvtxRangeId_t *back = arg;

	printf("worker %ld\n", (long)syscall(SYS_gettid));
	sleep_ms(5);
	nvtxRangeEnd(handoff);
	*back = nvtxRangeStartA("worker-started");
	return NULL;
}

static nvtxEventAttributes_t
attr(const char *msg)
{
	nvtxEventAttributes_t a = { 0 };

	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = msg;
	return a;
}

/* "flood MS PER": push/pop "flood" PER times a millisecond for MS ms, then
 * "flood-last"; prints "flood N" */
static int
flood(int ms, int per)
{
	struct timespec t0, t;
	long n = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < per; i++, n++) {
			nvtxRangePushA("flood");
			nvtxRangePop();
		}
		sleep_ms(1);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) /
	    1000000 < ms);
	nvtxRangePushA("flood-last");
	nvtxRangePop();
	printf("flood %ld\n", n);
	return 0;
}

int
main(int argc, char **argv)
{
	static nvtxRangeId_t ids[MANY];
	nvtxDomainHandle_t d = nvtxDomainCreateA("other.domain");
	nvtxEventAttributes_t a = attr("in-domain");
	nvtxRangeId_t back = 0, old, reused;
	pthread_t th;
	int l[6];

	if (argc == 4 && strcmp(argv[1], "flood") == 0)
		return flood(atoi(argv[2]), atoi(argv[3]));
	printf("main %ld\n", (long)syscall(SYS_gettid));
	/* interleaved across domains: each pop ends its own domain's range */
	l[0] = nvtxRangePushA("default-outer");
	l[1] = nvtxDomainRangePushEx(d, &a);
	sleep_ms(2);
	l[2] = nvtxRangePushA("default-inner");
	l[3] = nvtxRangePop();              /* default-inner */
	l[4] = nvtxRangePop();              /* default-outer, not in-domain */
	sleep_ms(2);
	l[5] = nvtxDomainRangePop(d);       /* in-domain */
	printf("levels %d %d %d %d %d %d\n", l[0], l[1], l[2], l[3], l[4],
	    l[5]);

	/* across threads, both ways */
	handoff = nvtxRangeStartA("handoff");
	pthread_create(&th, NULL, worker, &back);
	pthread_join(th, NULL);
	nvtxRangeEnd(back);

	/* many open at once, ended oldest first */
	for (int i = 0; i < MANY; i++)
		ids[i] = nvtxRangeStartA("many");
	for (int i = 0; i < MANY; i++)
		nvtxRangeEnd(ids[i]);
	/* an id ended twice, one never given, and a stale id whose slot a
	 * new range took: each ends nothing */
	old = nvtxRangeStartA("first");
	nvtxRangeEnd(old);
	reused = nvtxRangeStartA("second");
	nvtxRangeEnd(old);
	nvtxRangeEnd(ids[0]);
	nvtxRangeEnd((nvtxRangeId_t)0x7777);
	sleep_ms(3);
	nvtxRangeEnd(reused);
	printf("ids %d\n", old != reused);
	fflush(stdout);
	return 0;
}
