/*
 * cupti_load.h - libcupti, found and opened at run time.  The CUDA
 * collector is linked to no libcupti: a program that brings its own (torch
 * loads the one in its nvidia wheels) must not get a second copy, and a
 * machine with no CUDA toolkit must still be able to load the collector.
 * Every entry point is called through struct ist_cupti_api.
 */
#ifndef IST_CUPTI_LOAD_H
#define IST_CUPTI_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

/* the entry points the collector cannot do without */
#define IST_CUPTI_REQUIRED(X) \
	X(cuptiGetVersion) \
	X(cuptiGetResultString) \
	X(cuptiGetCallbackName) \
	X(cuptiGetTimestamp) \
	X(cuptiSetThreadIdType) \
	X(cuptiActivityRegisterCallbacks) \
	X(cuptiActivityEnable) \
	X(cuptiActivityDisable) \
	X(cuptiActivityFlushAll) \
	X(cuptiActivityGetNextRecord) \
	X(cuptiActivityGetNumDroppedRecords)
/* and those a CUPTI may lack (NULL then): newer than 12.0, or not needed */
#define IST_CUPTI_OPTIONAL(X) \
	X(cuptiActivityEnableAllSyncRecords) \
	X(cuptiActivityEnableDriverApi) \
	X(cuptiActivityEnableRuntimeApi) \
	X(cuptiActivitySetAttribute) \
	X(cuptiSubscribe) \
	X(cuptiUnsubscribe) \
	X(cuptiEnableCallback)

struct ist_cupti_api {
#define IST_CUPTI_FN(n) __typeof__(n) *n;
	IST_CUPTI_REQUIRED(IST_CUPTI_FN)
	IST_CUPTI_OPTIONAL(IST_CUPTI_FN)
#undef IST_CUPTI_FN
	void *so;
	uint32_t version;        /* cuptiGetVersion: 19..28 12.x, 13xxyy */
	char path[4096];         /* where it came from */
};

/* The oldest CUPTI whose records the converter reads (CUDA 12.0). */
#define IST_CUPTI_MIN_VERSION 19

/*
 * Finds and opens libcupti, in this order: INFERSCOPE_CUPTI (a path) when
 * set; a copy the process has loaded already (torch's, say); the one
 * matching the loaded CUDA driver's major version by the library search
 * path; the nvidia wheels beside any loaded library from a site-packages
 * (nvidia/cuda_cupti/lib, nvidia/cu13/lib); CUDA_HOME, /usr/local/cuda;
 * the toolkit the collector was built against.  Returns 0, or -1 with why
 * (a line naming what was tried) in why.
 */
int ist_cupti_load(struct ist_cupti_api *a, char *why, size_t n);

/* The CUDA major version of a CUPTI API version (12 or 13, 0 if older). */
int ist_cupti_major(uint32_t version);

#endif
