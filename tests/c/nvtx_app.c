/* nvtx_app.c - a CPU-only C program annotated with NVTX, for tests. */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void lib_work(void);    /* from nvtx_lib.c: a library embedding NVTX too */

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static void *
worker(void *arg)
{
	(void)arg;
	nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-worker");
	nvtxRangePushA("in-thread");
	sleep_ms(40);
	nvtxRangePop();
	return NULL;
}

int
main(void)
{
	pthread_t t;
	nvtxDomainHandle_t d;
	nvtxEventAttributes_t a = { 0 };
	nvtxRangeId_t id;

	nvtxRangePushA("outer");
	sleep_ms(50);
	nvtxRangePushA("inner");
	sleep_ms(20);
	nvtxRangePop();
	nvtxRangePop();
	nvtxMarkA("checkpoint");
	id = nvtxRangeStartA("start-end");
	sleep_ms(30);
	nvtxRangeEnd(id);
	d = nvtxDomainCreateA("my.domain");
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = nvtxDomainRegisterStringA(d, "registered");
	nvtxDomainRangePushEx(d, &a);
	sleep_ms(10);
	nvtxDomainRangePop(d);
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	lib_work();
	return 3;
}
