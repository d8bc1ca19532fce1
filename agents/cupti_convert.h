/*
 * cupti_convert.h - CUPTI activity records to trace events.  Pure: no CUPTI
 * call, so that it is tested on records built in memory (tests/unit), and
 * compiled against the newest headers: it switches on the record's kind and
 * reads each kind through its own struct, never assuming another's layout.
 */
#ifndef IST_CUPTI_CONVERT_H
#define IST_CUPTI_CONVERT_H

#include <stdatomic.h>

#include <cupti_activity.h>
#include <cupti_version.h>

#include "ist.h"

#define IST_CUPTI_PENDING 256

/*
 * Record layouts.  A CUPTI hands each kind in the newest struct version it
 * knows: Kernel9 (12.x) or Kernel10 (13.x), Memcpy5 or Memcpy6 and
 * Synchronization or Synchronization2 (12.8 on).  Every field read here
 * sits at the same offset in all of them, from CUDA 12.0 to 13.0
 * (Kernel4-10, Memcpy4-6, MemcpyPtoP2-4, Memset2-4, Memory2-4, Device2-5,
 * Overhead1-3, Synchronization1-2; checked by compiling the offsets
 * against CUDA 12.9's and 13.0's headers), so one build reads them all;
 * a field a version lacks (a sync's returnValue before 12.8) is read only
 * from a CUPTI that has it (api_version).
 */
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 ist_kernel_rec;
#elif CUPTI_API_VERSION >= 19
typedef CUpti_ActivityKernel9 ist_kernel_rec;
#else
#error "CUPTI older than CUDA 12.0's (CUPTI_API_VERSION 19)"
#endif
#if CUPTI_API_VERSION >= 26
typedef CUpti_ActivityMemcpy6 ist_memcpy_rec;
typedef CUpti_ActivitySynchronization2 ist_sync_rec;
#else
typedef CUpti_ActivityMemcpy5 ist_memcpy_rec;
typedef CUpti_ActivitySynchronization ist_sync_rec;
#endif
/* the first CUPTI whose sync records carry returnValue (CUDA 12.8) */
#define IST_CUPTI_SYNC2_VERSION 26

/* Overhead CUPTI reports, by what it is: CUPTI's own (buffers, flushes,
 * instrumentation), the driver's JIT compiler, lazy module and function
 * loading, a full command buffer, and anything else. */
enum {
	IST_CUPTI_OVH_CUPTI, IST_CUPTI_OVH_JIT, IST_CUPTI_OVH_LOADING,
	IST_CUPTI_OVH_CMDBUF, IST_CUPTI_OVH_OTHER, IST_CUPTI_OVH_N
};
/* the counter each is written as: "cupti.overhead_ns", "cuda.jit_compile_ns",
 * "cuda.lazy_loading_ns", "cuda.command_buffer_full_ns",
 * "cuda.other_overhead_ns" */
extern const char *const ist_cupti_overhead_names[IST_CUPTI_OVH_N];

/* a GPU's UUID as nvidia-smi writes it: "GPU-", 8-4-4-4-12 hex digits */
#define IST_GPU_UUID_LEN 41
void ist_gpu_uuid(char out[IST_GPU_UUID_LEN], const uint8_t u[16]);

/* The size of the queries table (a power of two). */
#define IST_CUPTI_QUERIES 4096
/* Streams whose last operation is held (hold_ops); others pass at once. */
#define IST_CUPTI_HELD 64

struct ist_cupti_conv {
	int64_t pid;
	/* the loaded CUPTI's cuptiGetVersion(): what its records hold */
	uint32_t api_version;
	/* names of runtime (driver false) and driver API calls by callback
	 * id; NULL gives "cuda_api_<cbid>" */
	const char *(*api_name)(void *ctx, bool driver, uint32_t cbid);
	/* peak host-device bandwidth of a device by its UUID, GB/s (0:
	 * unknown) */
	double (*pcie_gbps)(void *ctx, const uint8_t uuid[16]);
	void *ctx;
	/* threads of recent API calls by correlation id: sync records carry
	 * none of their own */
	struct { uint32_t corr; int64_t tid; } recent[1024];
	/* sync records waiting for their API call: a ring, oldest at phead */
	ist_sync_rec pending[IST_CUPTI_PENDING];
	int npending, phead;
	/* overhead by kind (ist_cupti_overhead_names) */
	uint64_t overhead_ns[IST_CUPTI_OVH_N];
	uint64_t skipped;        /* kinds and copies that make no event */
	uint64_t bad_times;      /* records with a zero or backwards time */
	uint64_t failed_syncs;   /* syncs that returned an error: polls */
	char name_buf[64];
	char uuid_buf[IST_GPU_UUID_LEN];
	char *demangled;         /* the last kernel name demangled */
	size_t demangled_cap;
	/* libstdc++'s __cxa_demangle, found at init (NULL: names stay
	 * mangled) */
	char *(*demangle)(const char *, char *, size_t *, int *);
	/* correlation ids of cudaEventQuery/cudaStreamQuery calls (and the
	 * driver's), by id modulo IST_CUPTI_QUERIES, or NULL: CUDA 13
	 * reports a query that found the work done as a sync record, which
	 * waited for nothing */
	const _Atomic uint32_t *queries;
	uint64_t query_syncs;    /* sync records of queries, left out */
	/* hold_ops: each stream's last operation is held back until the
	 * next on that stream comes (ist_cupti_flush_pending gives the
	 * rest), so that an end that lies can be seen and mended */
	bool hold_ops;
	struct ist_cupti_held {
		bool used;
		struct ist_event ev;
		char *name;
		size_t cap;
	} held[IST_CUPTI_HELD];
	char *out_name;          /* the name of the event given out */
	size_t out_cap;
	uint64_t clipped;        /* operations whose end was mended */
};

void ist_cupti_conv_init(struct ist_cupti_conv *c, int64_t pid);
void ist_cupti_conv_release(struct ist_cupti_conv *c);

/*
 * Converts one record into up to max events (out), returning how many
 * (0 for kinds that make no event, a record whose times are not times,
 * counted in bad_times, a sync that failed, or a sync record kept until
 * its API call is seen).  Strings in the events point into the record or into c
 * and stay valid until the next call.
 */
int ist_cupti_convert(struct ist_cupti_conv *c, const CUpti_Activity *rec,
    struct ist_event *out, int max);

/*
 * With hold_ops, a stream's operations come out one behind, within one
 * buffer of records (CUPTI delivers a stream's in order): an operation
 * (not a CUDA graph's) that outlasts the whole of the next one on its
 * stream, which a stream runs in order, has an end that lies (CUPTI 13.0
 * gave a process's first device-to-device copy, 8 bytes, 225-415 ms on an
 * H200): it ends where the next one starts, counted in clipped.
 *
 * Sync records still waiting, with the thread unknown (the process's), and
 * with hold_ops the operations held: call it at the end until it gives
 * fewer than max.
 */
int ist_cupti_flush_pending(struct ist_cupti_conv *c, struct ist_event *out,
    int max);

/* The operations held (hold_ops) alone, at the end of a buffer: none is
 * held across buffers, so an exec or a kill loses none. */
int ist_cupti_flush_held(struct ist_cupti_conv *c, struct ist_event *out,
    int max);

/* The length of an API call's name without the entry point's version that
 * CUPTI's callback names carry ("cudaFree_v3020", "cuMemcpyHtoD_v2"): the
 * call as the user wrote it. */
size_t ist_cupti_call_len(const char *name);

/* Peak bandwidth of a PCIe link from sysfs's link speed ("16.0 GT/s PCIe")
 * and width, GB/s after line encoding; 0 if not understood. */
double ist_pcie_gbps(const char *speed, int width);

/* The link of the GPU whose UUID is uuid: the NVIDIA driver's proc
 * directory (proc: /proc/driver/nvidia/gpus, one directory per PCI
 * address, its "information" naming the "GPU UUID") gives the address,
 * sysfs (sys: /sys/bus/pci/devices) the link.  0 if not found. */
double ist_pcie_gbps_uuid(const char *proc, const char *sys,
    const uint8_t uuid[16]);

#endif
