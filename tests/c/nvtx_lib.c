/* nvtx_lib.c - a shared library with its own copy of the NVTX headers. */
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <time.h>

int64_t lib_work(void);

static int64_t
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Returns the time inside its range, as the library measures it. */
int64_t
lib_work(void)
{
	struct timespec ts = { 0, 25 * 1000000L };
	int64_t a, b;

	nvtxRangePushA("from-library");
	a = now();
	nanosleep(&ts, NULL);
	b = now();
	nvtxRangePop();
	return b - a;
}
