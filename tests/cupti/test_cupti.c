/*
 * test_cupti.c - CUPTI activity records, built in memory for every kind
 * the collector enables, through the conversion, checked field by field;
 * then the converted events through the trace writer and reader.
 */
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <cupti_activity.h>

#include "cupti_convert.h"
#include "tap.h"

#define PID 4242

static const char *
names(void *ctx, bool driver, uint32_t cbid)
{
	(void)ctx;
	if (!driver && cbid == 211)
		return "cudaLaunchKernel_v7000";
	if (driver && cbid == 307)
		return "cuLaunchKernel";
	if (driver && cbid == 276)
		return "cuMemcpyHtoD_v2";
	if (!driver && cbid == 131)
		return "cudaStreamSynchronize_v3020";
	return NULL;
}

static double
link_gbps(void *ctx, const uint8_t uuid[16])
{
	(void)ctx;
	return uuid[0] == 0xaa ? 63.015 : 0;
}

static int
str_is(struct ist_str s, const char *want)
{
	return s.n == strlen(want) && memcmp(s.p, want, s.n) == 0;
}

static void
kernel(struct ist_cupti_conv *c)
{
	CUpti_ActivityKernel10 k;
	struct ist_event ev[4];
	int n;

	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 1000;
	k.end = 5000;
	k.deviceId = 1;
	k.streamId = 7;
	k.gridX = 96; k.gridY = 2; k.gridZ = 1;
	k.blockX = 256; k.blockY = 1; k.blockZ = 1;
	k.correlationId = 42;
	k.name = "ampere_sgemm_128x64_tn";
	n = ist_cupti_convert(c, (CUpti_Activity *)&k, ev, 4);
	ok(n == 1 && ev[0].type == IST_GPU_KERNEL, "kernel: one gpu_kernel");
	ok(ev[0].pid == PID && ev[0].device == 1 && ev[0].stream == 7,
	    "kernel: pid, device, stream");
	ok(ev[0].start_ns == 1000 && ev[0].end_ns == 5000, "kernel: times");
	ok(ev[0].correlation == 42 && IST_HAS(&ev[0], IST_F_CORRELATION),
	    "kernel: correlation");
	ok(str_is(ev[0].name, "ampere_sgemm_128x64_tn"), "kernel: name");
	ok(ev[0].grid[0] == 96 && ev[0].grid[1] == 2 && ev[0].grid[2] == 1 &&
	    ev[0].block[0] == 256 && IST_HAS(&ev[0], IST_F_GRID) &&
	    IST_HAS(&ev[0], IST_F_BLOCK), "kernel: grid and block");
	ok(!IST_HAS(&ev[0], IST_F_GRAPH_ID) &&
	    !IST_HAS(&ev[0], IST_F_GRAPH_NODE), "kernel: no graph, no ids");
	k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
	k.name = NULL;
	n = ist_cupti_convert(c, (CUpti_Activity *)&k, ev, 4);
	ok(n == 1 && str_is(ev[0].name, "(unnamed kernel)"),
	    "serial kernel record, no name");
	/* a graph replay: each node's kernel, with the graph launch's
	 * correlation, its graph and its node */
	k.graphId = 12;
	k.graphNodeId = 0x100000007ull;
	k.correlationId = 600;
	n = ist_cupti_convert(c, (CUpti_Activity *)&k, ev, 4);
	ok(n == 1 && ev[0].graph_id == 12 &&
	    ev[0].graph_node == 0x100000007ll && ev[0].correlation == 600 &&
	    IST_HAS(&ev[0], IST_F_GRAPH_NODE), "kernel: graph and node ids");
}

static void
copies(struct ist_cupti_conv *c)
{
	static const struct {
		uint8_t kind, src, dst;
		enum ist_type type;
		int has_pageable, pageable;
		const char *what;
	} cases[] = {
		{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
		  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, IST_H2D_COPY, 1, 1,
		  "H2D from pageable memory" },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
		  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, IST_H2D_COPY, 1, 0,
		  "H2D from pinned memory" },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
		  CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, IST_D2H_COPY, 1, 1,
		  "D2H to pageable memory" },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
		  CUPTI_ACTIVITY_MEMORY_KIND_PINNED, IST_D2H_COPY, 1, 0,
		  "D2H to pinned memory" },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
		  CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, IST_D2D_COPY, 0, 0,
		  "D2D" },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
		  CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, IST_H2D_COPY, 1, 1,
		  "H2A counts as H2D" },
	};
	CUpti_ActivityMemcpy6 m;
	CUpti_ActivityMemcpyPtoP4 p;
	CUpti_ActivityMemset4 s;
	struct ist_event ev[4];
	int n;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&m, 0, sizeof(m));
		m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
		m.copyKind = cases[i].kind;
		m.srcKind = cases[i].src;
		m.dstKind = cases[i].dst;
		m.bytes = 4194304;
		m.start = 100;
		m.end = 400;
		m.deviceId = 0;
		m.streamId = 13;
		m.correlationId = 7 + (uint32_t)i;
		n = ist_cupti_convert(c, (CUpti_Activity *)&m, ev, 4);
		ok(n == 1 && ev[0].type == cases[i].type &&
		    ev[0].bytes == 4194304 && ev[0].stream == 13 &&
		    ev[0].correlation == 7 + (int64_t)i &&
		    ev[0].start_ns == 100 && ev[0].end_ns == 400 &&
		    (int)IST_HAS(&ev[0], IST_F_PAGEABLE) ==
		    cases[i].has_pageable && (!cases[i].has_pageable ||
		    (int)ev[0].pageable == cases[i].pageable),
		    "memcpy: %s", cases[i].what);
	}
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
	ok(ist_cupti_convert(c, (CUpti_Activity *)&m, ev, 4) == 0 &&
	    c->skipped == 1, "memcpy: host to host is skipped, counted");

	memset(&p, 0, sizeof(p));
	p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
	p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
	p.bytes = 1 << 20;
	p.start = 10;
	p.end = 30;
	p.deviceId = 1;
	p.srcDeviceId = 0;
	p.dstDeviceId = 1;
	p.streamId = 3;
	p.correlationId = 99;
	n = ist_cupti_convert(c, (CUpti_Activity *)&p, ev, 4);
	ok(n == 1 && ev[0].type == IST_D2D_COPY && ev[0].bytes == 1 << 20 &&
	    ev[0].device == 1 && ev[0].correlation == 99,
	    "memcpy2: peer copy as d2d on the executing device");

	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	s.bytes = 65536;
	s.start = 50;
	s.end = 60;
	s.deviceId = 0;
	s.streamId = 7;
	s.correlationId = 5;
	n = ist_cupti_convert(c, (CUpti_Activity *)&s, ev, 4);
	ok(n == 1 && ev[0].type == IST_MEMSET && ev[0].bytes == 65536 &&
	    ev[0].correlation == 5 && ev[0].stream == 7 &&
	    !IST_HAS(&ev[0], IST_F_GRAPH_ID), "memset");
	s.graphId = 3;
	s.graphNodeId = 9;
	p.graphId = 3;
	p.graphNodeId = 10;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.graphId = 3;
	m.graphNodeId = 11;
	ok(ist_cupti_convert(c, (CUpti_Activity *)&s, ev, 4) == 1 &&
	    ist_cupti_convert(c, (CUpti_Activity *)&p, ev + 1, 3) == 1 &&
	    ist_cupti_convert(c, (CUpti_Activity *)&m, ev + 2, 2) == 1 &&
	    ev[0].graph_id == 3 && ev[0].graph_node == 9 &&
	    ev[1].graph_id == 3 && ev[1].graph_node == 10 &&
	    ev[2].graph_id == 3 && ev[2].graph_node == 11,
	    "memset, peer copy and memcpy in a graph: graph and node ids");
}

static void
api_and_sync(struct ist_cupti_conv *c)
{
	CUpti_ActivityAPI a;
	CUpti_ActivitySynchronization2 s;
	struct ist_event ev[4];
	int n;

	memset(&a, 0, sizeof(a));
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = 211;
	a.start = 900;
	a.end = 950;
	a.processId = PID;
	a.threadId = 4243;
	a.correlationId = 42;
	n = ist_cupti_convert(c, (CUpti_Activity *)&a, ev, 4);
	ok(n == 1 && ev[0].type == IST_CUDA_API && ev[0].tid == 4243 &&
	    ev[0].pid == PID && ev[0].correlation == 42 &&
	    str_is(ev[0].name, "cudaLaunchKernel"),
	    "runtime API: name (CUPTI's without its _v7000), thread, "
	    "correlation");
	a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	a.cbid = 307;
	a.correlationId = 43;
	n = ist_cupti_convert(c, (CUpti_Activity *)&a, ev, 4);
	ok(n == 1 && str_is(ev[0].name, "cuLaunchKernel") &&
	    ev[0].correlation == 43, "driver API (Triton launches this way)");
	a.cbid = 276;
	n = ist_cupti_convert(c, (CUpti_Activity *)&a, ev, 4);
	ok(n == 1 && str_is(ev[0].name, "cuMemcpyHtoD"), "a driver call "
	    "without its ABI version (cuMemcpyHtoD_v2)");
	a.cbid = 9999;
	n = ist_cupti_convert(c, (CUpti_Activity *)&a, ev, 4);
	ok(n == 1 && str_is(ev[0].name, "cuda_driver_9999"),
	    "an unknown callback id gets a stable name");

	/* a sync whose API record came first: its thread is known */
	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	s.start = 960;
	s.end = 5100;
	s.correlationId = 42;
	n = ist_cupti_convert(c, (CUpti_Activity *)&s, ev, 4);
	ok(n == 1 && ev[0].type == IST_SYNC && str_is(ev[0].kind, "stream") &&
	    ev[0].tid == 4243 && ev[0].start_ns == 960 &&
	    ev[0].end_ns == 5100, "stream sync after its API call");

	/* one that arrives first waits for its API call */
	s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
	s.correlationId = 77;
	n = ist_cupti_convert(c, (CUpti_Activity *)&s, ev, 4);
	ok(n == 0 && c->npending == 1, "context sync before its API call waits");
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = 131;
	a.threadId = 4250;
	a.correlationId = 77;
	n = ist_cupti_convert(c, (CUpti_Activity *)&a, ev, 4);
	ok(n == 2 && ev[0].type == IST_CUDA_API && ev[1].type == IST_SYNC &&
	    str_is(ev[1].kind, "context") && ev[1].tid == 4250 &&
	    c->npending == 0, "... and comes out with it, on its thread");

	s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
	s.correlationId = 500;
	ist_cupti_convert(c, (CUpti_Activity *)&s, ev, 4);
	s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
	s.correlationId = 501;
	ist_cupti_convert(c, (CUpti_Activity *)&s, ev, 4);
	n = ist_cupti_flush_pending(c, ev, 4);
	ok(n == 2 && ev[0].tid == PID && ev[1].tid == PID &&
	    str_is(ev[0].kind, "event") &&
	    str_is(ev[1].kind, "stream_wait_event"),
	    "syncs never matched are flushed at the end on the process, "
	    "oldest first");
}

static void
memory_device_graph(struct ist_cupti_conv *c)
{
	CUpti_ActivityMemory4 m;
	CUpti_ActivityDevice5 d;
	CUpti_ActivityGraphTrace2 g;
	CUpti_ActivityOverhead3 o;
	CUpti_Activity ctx;
	struct ist_event ev[4];
	int n;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.bytes = 2097152;
	m.timestamp = 1234;
	m.processId = PID;
	m.deviceId = 0;
	n = ist_cupti_convert(c, (CUpti_Activity *)&m, ev, 4);
	ok(n == 1 && ev[0].type == IST_MEMORY_ALLOC && ev[0].bytes == 2097152 &&
	    ev[0].ts_ns == 1234 && ev[0].device == 0 &&
	    IST_HAS(&ev[0], IST_F_DEVICE), "memory2: allocation");
	m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
	n = ist_cupti_convert(c, (CUpti_Activity *)&m, ev, 4);
	ok(n == 1 && ev[0].type == IST_MEMORY_FREE, "memory2: release");

	memset(&d, 0, sizeof(d));
	d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
	d.id = 0;
	d.name = "NVIDIA H100 80GB HBM3";
	d.numMultiprocessors = 132;
	d.globalMemorySize = 85520809984ull;
	d.uuid.bytes[0] = (char)0xaa;
	n = ist_cupti_convert(c, (CUpti_Activity *)&d, ev, 4);
	ok(n == 1 && ev[0].type == IST_DEVICE && ev[0].sm_count == 132 &&
	    ev[0].memory_bytes == 85520809984ll &&
	    str_is(ev[0].name, "NVIDIA H100 80GB HBM3") &&
	    ev[0].pcie_gbps == 63.015, "device: name, SMs, memory, link");
	/* its number is the process's own (CUDA_VISIBLE_DEVICES): the
	 * process and the UUID say which GPU it is */
	ok(ev[0].pid == PID && IST_HAS(&ev[0], IST_F_PID) &&
	    str_is(ev[0].uuid, "GPU-aa000000-0000-0000-0000-000000000000"),
	    "device: its process and its UUID as nvidia-smi writes it");
	d.id = 3;
	d.uuid.bytes[0] = 0;
	n = ist_cupti_convert(c, (CUpti_Activity *)&d, ev, 4);
	ok(n == 1 && !IST_HAS(&ev[0], IST_F_PCIE_GBPS),
	    "device: an unknown link is left out");

	/* never enabled: it would replace the kernels of every graph by
	 * one range (see cupti.c) */
	memset(&g, 0, sizeof(g));
	g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
	g.start = 10;
	g.end = 90;
	n = ist_cupti_convert(c, (CUpti_Activity *)&g, ev, 4);
	ok(n == 0, "graph trace records make no event");

	memset(&o, 0, sizeof(o));
	o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	o.start = 100;
	o.end = 350;
	ok(ist_cupti_convert(c, (CUpti_Activity *)&o, ev, 4) == 0 &&
	    c->overhead_ns[IST_CUPTI_OVH_CUPTI] == 250,
	    "overhead: summed, no event");
	/* the driver's costs are not CUPTI's: each kind as what it is */
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER;
	ist_cupti_convert(c, (CUpti_Activity *)&o, ev, 4);
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING;
	ist_cupti_convert(c, (CUpti_Activity *)&o, ev, 4);
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING;
	ist_cupti_convert(c, (CUpti_Activity *)&o, ev, 4);
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL;
	o.end = 1100;
	ist_cupti_convert(c, (CUpti_Activity *)&o, ev, 4);
	ok(c->overhead_ns[IST_CUPTI_OVH_CUPTI] == 250 &&
	    c->overhead_ns[IST_CUPTI_OVH_JIT] == 250 &&
	    c->overhead_ns[IST_CUPTI_OVH_LOADING] == 500 &&
	    c->overhead_ns[IST_CUPTI_OVH_CMDBUF] == 1000 &&
	    strcmp(ist_cupti_overhead_names[IST_CUPTI_OVH_JIT],
	    "cuda.jit_compile_ns") == 0, "overhead by kind: CUPTI 250, JIT "
	    "250, lazy loading 500, command buffer full 1000 ns");
	memset(&ctx, 0, sizeof(ctx));
	ctx.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
	ok(ist_cupti_convert(c, &ctx, ev, 4) == 0, "context: no event");
}

/* What a real driver sends that the first records did not show. */
static void
hardening(struct ist_cupti_conv *c)
{
	CUpti_ActivityKernel10 k;
	CUpti_ActivityAPI a;
	CUpti_ActivitySynchronization2 s;
	CUpti_ActivityMemory4 m;
	struct ist_event ev[4];
	uint64_t bad = c->bad_times;
	int n, order = 1;

	/* zero and backwards times: no event lands 55 years before the run */
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 0;
	k.end = 5000;
	k.name = "k";
	n = ist_cupti_convert(c, (CUpti_Activity *)&k, ev, 4);
	k.start = 6000;
	n += ist_cupti_convert(c, (CUpti_Activity *)&k, ev, 4);
	k.start = 1000;
	k.end = 0;
	n += ist_cupti_convert(c, (CUpti_Activity *)&k, ev, 4);
	memset(&a, 0, sizeof(a));
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = 211;
	a.correlationId = 900;
	a.threadId = 4300;
	n += ist_cupti_convert(c, (CUpti_Activity *)&a, ev, 4);
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	n += ist_cupti_convert(c, (CUpti_Activity *)&m, ev, 4);
	ok(n == 0 && c->bad_times == bad + 5, "records with a zero or "
	    "backwards time make no event and are counted (%llu)",
	    (unsigned long long)(c->bad_times - bad));

	/* a sync that failed (a query that found the work not done) did
	 * not wait */
	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
	s.start = 100;
	s.end = 200;
	s.correlationId = 900;
	s.returnValue = 600;     /* CUDA_ERROR_NOT_READY */
	ok(ist_cupti_convert(c, (CUpti_Activity *)&s, ev, 4) == 0 &&
	    c->failed_syncs == 1 && c->npending == 0,
	    "a sync that returned an error is dropped, not kept waiting");

	/* pinned host memory is the host's: no device */
	m.timestamp = 77;
	m.bytes = 4096;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	n = ist_cupti_convert(c, (CUpti_Activity *)&m, ev, 4);
	ok(n == 1 && ev[0].type == IST_MEMORY_ALLOC &&
	    !IST_HAS(&ev[0], IST_F_DEVICE), "pinned memory (pin_memory, "
	    "cudaHostAlloc) is written without a device");
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
	n = ist_cupti_convert(c, (CUpti_Activity *)&m, ev, 4);
	ok(n == 1 && IST_HAS(&ev[0], IST_F_DEVICE), "managed memory keeps "
	    "its device");

	/* the pending syncs are a queue: overflowing, the oldest leaves */
	s.returnValue = 0;
	for (int i = 0; i < IST_CUPTI_PENDING; i++) {
		s.correlationId = 5000 + i;
		ist_cupti_convert(c, (CUpti_Activity *)&s, ev, 4);
	}
	s.correlationId = 9999;
	n = ist_cupti_convert(c, (CUpti_Activity *)&s, ev, 4);
	ok(n == 1 && c->npending == IST_CUPTI_PENDING && ev[0].tid == PID,
	    "a full queue of waiting syncs lets its oldest go, on the process");
	a.start = 10;
	a.end = 20;
	a.correlationId = 5001;
	n = ist_cupti_convert(c, (CUpti_Activity *)&a, ev, 4);
	ok(n == 2 && ev[1].type == IST_SYNC && ev[1].tid == 4300 &&
	    c->npending == IST_CUPTI_PENDING - 1, "the second oldest still "
	    "finds its API call");
	n = ist_cupti_flush_pending(c, ev, 4);
	for (int i = 0; i < n; i++)
		order &= ev[i].tid == PID;
	ok(n == 4 && order && c->npending == IST_CUPTI_PENDING - 5,
	    "the rest flush oldest first, four at a time");
	while (ist_cupti_flush_pending(c, ev, 4) > 0)
		;

	/* internal launches (cuBLAS's) are API calls: their kernels keep
	 * their launch */
	a.kind = CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API;
	a.correlationId = 901;
	n = ist_cupti_convert(c, (CUpti_Activity *)&a, ev, 4);
	ok(n == 1 && ev[0].type == IST_CUDA_API && ev[0].correlation == 901 &&
	    str_is(ev[0].name, "cudaLaunchKernel"),
	    "an internal launch record is a cuda_api call");

	/* kernel names as the source spells them */
	k.start = 1000;
	k.end = 2000;
	k.name = "_Z10add_kernelPfPKfS1_i";
	n = ist_cupti_convert(c, (CUpti_Activity *)&k, ev, 4);
	ok(n == 1 && str_is(ev[0].name,
	    "add_kernel(float*, float const*, float const*, int)"),
	    "a mangled kernel name is demangled: %.*s", (int)ev[0].name.n,
	    ev[0].name.p);
	k.name = "_Znot a name";
	n = ist_cupti_convert(c, (CUpti_Activity *)&k, ev, 4);
	ok(n == 1 && str_is(ev[0].name, "_Znot a name"),
	    "a name that does not demangle stays as it is");
}

/* Converted events go through the writer and come back the same. */
static void
roundtrip(struct ist_cupti_conv *c)
{
	CUpti_ActivityKernel10 k;
	struct ist_event ev[2], hdr;
	struct ist_buf out = { 0 };
	struct ist_writer *w;
	struct ist_reader *r;
	const struct ist_event *back;
	struct ist_error e;
	int fds[2];
	long got = 0;

	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 77;
	k.end = 99;
	k.deviceId = 0;
	k.streamId = 7;
	k.correlationId = 3;
	k.name = "k";
	ist_cupti_convert(c, (CUpti_Activity *)&k, ev, 2);
	ist_event_init(&hdr, IST_HEADER);
	if (pipe(fds) != 0)
		return;
	ist_writer_new(&w, ist_fd_sink, &fds[1], NULL, &e);
	ist_writer_header(w, &hdr, &e);
	ist_writer_write(w, &ev[0], &e);
	ist_writer_close(w, &e);
	close(fds[1]);
	ist_reader_new(&r, ist_fd_source, &fds[0], "pipe", &e);
	while (ist_reader_next(r, &back, &e) == IST_OK) {
		if (back->type != IST_GPU_KERNEL)
			continue;
		ist_event_to_json(back, &out, &e);
		got++;
	}
	ist_reader_free(r);
	close(fds[0]);
	ist_buf_append(&out, "", 1);
	ok(got == 1 && strcmp(out.p, "{\"type\":\"gpu_kernel\",\"pid\":4242,"
	    "\"device\":0,\"stream\":7,\"name\":\"k\",\"start_ns\":77,"
	    "\"end_ns\":99,\"correlation\":3,\"grid\":[0,0,0],"
	    "\"block\":[0,0,0]}\n") == 0, "a converted kernel, written and "
	    "read back: %s", out.p ? out.p : "");
	ist_buf_release(&out);
}

/* A CUPTI of CUDA 12.0-12.7 hands Synchronization, 40 bytes, without
 * returnValue: nothing past them is read (ASan watches the exact size). */
static void
cupti12_sync(void)
{
	struct ist_cupti_conv c;
	size_t n12 = offsetof(ist_sync_rec, cudaEventId) + 4;
	uint8_t *rec = malloc(n12);
	ist_sync_rec s;
	CUpti_ActivityAPI a;
	struct ist_event ev[4];
	int n;

	ok(n12 == 40, "CUDA 12's Synchronization record is 40 bytes");
	ist_cupti_conv_init(&c, PID);
	c.api_version = 24;      /* CUDA 12.6 */
	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	s.start = 100;
	s.end = 200;
	s.correlationId = 31;
	memcpy(rec, &s, n12);
	n = ist_cupti_convert(&c, (CUpti_Activity *)(void *)rec, ev, 4);
	free(rec);
	memset(&a, 0, sizeof(a));
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = 131;
	a.start = 90;
	a.end = 210;
	a.threadId = 77;
	a.correlationId = 31;
	n += ist_cupti_convert(&c, (CUpti_Activity *)&a, ev, 4);
	ok(n == 2 && ev[1].type == IST_SYNC && ev[1].tid == 77 &&
	    ev[1].start_ns == 100 && c.failed_syncs == 0, "a CUDA 12.6 "
	    "sync record waits for its call and meets it");
	ist_cupti_conv_release(&c);
}

/* The link found by the GPU's UUID through the driver's /proc and sysfs,
 * here a tree laid out as they are. */
static void
pcie_by_uuid(void)
{
	char root[] = "/tmp/ist-pcie-XXXXXX", p[512];
	static const uint8_t uuid[16] = { 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45,
	    0x67, 0x89, 0, 1, 2, 3, 4, 5, 6, 7 };
	uint8_t other[16] = { 0 };
	FILE *f;

	if (mkdtemp(root) == NULL)
		return;
	snprintf(p, sizeof(p), "mkdir -p %s/proc/0000:1A:00.0 "
	    "%s/proc/0000:3b:00.0 %s/sys/0000:1a:00.0 %s/sys/0000:3b:00.0",
	    root, root, root, root);
	ok(system(p) == 0, "a /proc and sysfs tree");
	snprintf(p, sizeof(p), "%s/proc/0000:3b:00.0/information", root);
	f = fopen(p, "w");
	fprintf(f, "Model: \t\t NVIDIA A100\nGPU UUID: \t\t "
	    "GPU-00000000-1111-2222-3333-444444444444\n");
	fclose(f);
	snprintf(p, sizeof(p), "%s/proc/0000:1A:00.0/information", root);
	f = fopen(p, "w");
	fprintf(f, "Model: \t\t NVIDIA H100\nIRQ: 33\nGPU UUID: \t\t "
	    "GPU-ABCDEF01-2345-6789-0001-020304050607\nVideo BIOS: 1\n");
	fclose(f);
	snprintf(p, sizeof(p), "%s/sys/0000:1a:00.0/max_link_speed", root);
	f = fopen(p, "w");
	fprintf(f, "32.0 GT/s PCIe\n");
	fclose(f);
	snprintf(p, sizeof(p), "%s/sys/0000:1a:00.0/max_link_width", root);
	f = fopen(p, "w");
	fprintf(f, "16\n");
	fclose(f);
	{
		char proc[300], sys[300];
		double g;
		snprintf(proc, sizeof(proc), "%s/proc", root);
		snprintf(sys, sizeof(sys), "%s/sys", root);
		g = ist_pcie_gbps_uuid(proc, sys, uuid);
		ok(g > 63.0 && g < 63.1, "the link of the GPU with this UUID, "
		    "through its PCI address: %.3f GB/s", g);
		ok(ist_pcie_gbps_uuid(proc, sys, other) == 0, "a UUID the "
		    "driver does not list: no link");
		ok(ist_pcie_gbps_uuid("/nonexistent", sys, uuid) == 0,
		    "no NVIDIA driver: no link");
	}
	snprintf(p, sizeof(p), "rm -rf %s", root);
	ok(system(p) == 0, "tree removed");
}

static void
kernel_rec(ist_kernel_rec *k, uint32_t stream, uint64_t s, uint64_t e,
    const char *name)
{
	memset(k, 0, sizeof(*k));
	k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k->start = s;
	k->end = e;
	k->streamId = stream;
	k->correlationId = (uint32_t)s;
	k->name = name;
}

/* Seen on an H200 (CUDA 13.0, torch 2.11): a process's first 8-byte
 * device-to-device copy reported as 225-415 ms long, outlasting the
 * kernels after it on its stream, and CUDA 13's successful queries as
 * syncs. */
static void
held_and_queries(void)
{
	static _Atomic uint32_t q[IST_CUPTI_QUERIES];
	struct ist_cupti_conv c;
	struct ist_event ev[8];
	ist_kernel_rec k;
	ist_memcpy_rec m;
	ist_sync_rec s;
	int n;

	ist_cupti_conv_init(&c, PID);
	c.api_version = 130001;
	c.hold_ops = true;
	kernel_rec(&k, 7, 1000, 2000, "k1");
	ok(ist_cupti_convert(&c, (CUpti_Activity *)&k, ev, 8) == 0,
	    "held: a stream's operation waits for the next");
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
	m.bytes = 8;
	m.start = 3000;
	m.end = 275563000;
	m.streamId = 7;
	m.correlationId = 3552;
	n = ist_cupti_convert(&c, (CUpti_Activity *)&m, ev, 8);
	ok(n == 1 && str_is(ev[0].name, "k1") && ev[0].end_ns == 2000,
	    "held: the one before comes out as it was");
	kernel_rec(&k, 7, 3100, 3200, "k2");
	n = ist_cupti_convert(&c, (CUpti_Activity *)&k, ev, 8);
	ok(n == 1 && ev[0].type == IST_D2D_COPY && ev[0].start_ns == 3000 &&
	    ev[0].end_ns == 3100 && c.clipped == 1, "held: a copy that "
	    "outlasts the next kernel on its stream ends where it starts");
	kernel_rec(&k, 9, 3150, 3300, "k3");
	ok(ist_cupti_convert(&c, (CUpti_Activity *)&k, ev, 8) == 0,
	    "held: another stream has its own");
	kernel_rec(&k, 7, 3300, 3400, "graph node");
	k.graphId = 5;
	n = ist_cupti_convert(&c, (CUpti_Activity *)&k, ev, 8);
	ok(n == 2 && str_is(ev[0].name, "k2") && ev[0].end_ns == 3200 &&
	    str_is(ev[1].name, "graph node"), "held: a graph's kernel checks "
	    "what came before it and passes at once");
	/* overlapping, not containing (programmatic dependent launch):
	 * no lie shown */
	kernel_rec(&k, 7, 4000, 5000, "primary");
	(void)ist_cupti_convert(&c, (CUpti_Activity *)&k, ev, 8);
	kernel_rec(&k, 7, 4500, 6000, "secondary");
	n = ist_cupti_convert(&c, (CUpti_Activity *)&k, ev, 8);
	ok(n == 1 && ev[0].end_ns == 5000 && c.clipped == 1,
	    "held: an overlap that does not contain the next stays");
	n = ist_cupti_flush_held(&c, ev, 8);
	ok(n == 2 && ((str_is(ev[0].name, "k3") &&
	    str_is(ev[1].name, "secondary")) || (str_is(ev[1].name, "k3") &&
	    str_is(ev[0].name, "secondary"))), "held: the end of a buffer "
	    "gives out every stream's last");
	ok(ist_cupti_flush_held(&c, ev, 8) == 0, "held: then none");

	/* a query that found the work done: a sync record that returned
	 * success, known by its correlation id */
	c.queries = q;
	q[901 % IST_CUPTI_QUERIES] = 901;
	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	s.start = 100;
	s.end = 200;
	s.correlationId = 901;
	ok(ist_cupti_convert(&c, (CUpti_Activity *)&s, ev, 8) == 0 &&
	    c.query_syncs == 1 && c.npending == 0, "a query's sync record "
	    "is no sync");
	s.correlationId = 901 + IST_CUPTI_QUERIES;
	(void)ist_cupti_convert(&c, (CUpti_Activity *)&s, ev, 8);
	ok(c.query_syncs == 1 && c.npending == 1, "a sync in a query's "
	    "slot, not a query's, is kept");
	ist_cupti_conv_release(&c);
}

int
main(void)
{
	struct ist_cupti_conv c;

	ist_cupti_conv_init(&c, PID);
	c.api_version = 130001;
	c.api_name = names;
	c.pcie_gbps = link_gbps;
	kernel(&c);
	copies(&c);
	api_and_sync(&c);
	memory_device_graph(&c);
	hardening(&c);
	roundtrip(&c);
	ok(ist_pcie_gbps("16.0 GT/s PCIe", 16) > 31.50 &&
	    ist_pcie_gbps("16.0 GT/s PCIe", 16) < 31.52,
	    "PCIe 4.0 x16: 31.5 GB/s");
	ok(ist_pcie_gbps("32.0 GT/s PCIe", 16) > 63.0 &&
	    ist_pcie_gbps("32.0 GT/s PCIe", 16) < 63.1,
	    "PCIe 5.0 x16: 63.0 GB/s");
	ok(ist_pcie_gbps("2.5 GT/s PCIe", 1) == 0.25, "PCIe 1.0 x1: 0.25 GB/s");
	ok(ist_pcie_gbps("Unknown", 16) == 0 && ist_pcie_gbps("8.0 GT/s", 0) ==
	    0, "an unknown link: 0");
	ist_cupti_conv_release(&c);
	cupti12_sync();
	pcie_by_uuid();
	held_and_queries();
	return done();
}
