/* nvtx_lib.c - a shared library with its own copy of the NVTX headers. */
#include <nvtx3/nvToolsExt.h>
#include <time.h>

void lib_work(void);

void
lib_work(void)
{
	struct timespec ts = { 0, 25 * 1000000L };

	nvtxRangePushA("from-library");
	nanosleep(&ts, NULL);
	nvtxRangePop();
}
