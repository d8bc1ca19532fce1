/* nvtx_late.c - NVTX work, then an exit handler that outlives the NVTX
 * collector's (registered later, so run first): a signal that comes then
 * must still end the program. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void
late(void)
{
	printf("ready\n");
	fflush(stdout);
	sleep(10);
}

int
main(void)
{
	atexit(late);
	nvtxRangePushA("work");
	usleep(10000);
	nvtxRangePop();
	return 0;
}
