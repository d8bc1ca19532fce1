/*
 * nvtx_pipeline.c - a C program annotated with NVTX ranges, no CUDA
 * needed: InferScope records its ranges like any GPU program's.
 *
 *   make                      # builds build/examples/nvtx_pipeline
 *   inferscope run --report nvtx.md -- build/examples/nvtx_pipeline
 */
#include <time.h>

#include <nvtx3/nvToolsExt.h>

static void
work(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

int
main(void)
{
	nvtxRangePushA("load model");
	work(30);
	nvtxRangePop();
	for (int i = 0; i < 5; i++) {
		nvtxRangePushA("request");
		nvtxRangePushA("preprocess");
		work(4);
		nvtxRangePop();
		nvtxRangePushA("infer");
		work(10);
		nvtxRangePop();
		nvtxMarkA("response sent");
		nvtxRangePop();
	}
	return 0;
}
