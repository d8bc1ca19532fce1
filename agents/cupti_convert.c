/* cupti_convert.c - CUPTI activity records to trace events (see .h). */
#include <dirent.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cupti_convert.h"
#include "internal.h"

void
ist_cupti_conv_init(struct ist_cupti_conv *c, int64_t pid)
{
	void *so;

	memset(c, 0, sizeof(*c));
	c->pid = pid;
	/* the program's libstdc++ (a CUDA program has it, loaded local to
	 * the library that needed it, out of a weak symbol's reach), else
	 * one of the system's */
	if ((so = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD)) == NULL)
		so = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (so != NULL)
		*(void **)&c->demangle = dlsym(so, "__cxa_demangle");
}

/*
 * A range from CUPTI: false when its times are not times.  CONCURRENT_KERNEL
 * may carry 0 (the header says so), API and sync records use 0 for "not
 * collected", and the forced flush at exit delivers records not yet
 * complete: any of them would land about 55 years before the run.
 */
static bool
range(struct ist_cupti_conv *c, struct ist_event *ev, enum ist_type t,
    int64_t pid, uint64_t s, uint64_t e)
{
	if (s == 0 || e == 0 || e < s || s > INT64_MAX || e > INT64_MAX) {
		c->bad_times++;
		return false;
	}
	ist_event_init(ev, t);
	ev->pid = pid;
	ev->start_ns = (int64_t)s;
	ev->end_ns = (int64_t)e;
	IST_SET(ev, IST_F_PID);
	IST_SET(ev, IST_F_START);
	IST_SET(ev, IST_F_END);
	return true;
}

static void
gpu_track(struct ist_event *ev, uint32_t device, uint32_t stream,
    uint32_t corr)
{
	ev->device = device;
	ev->stream = stream;
	IST_SET(ev, IST_F_DEVICE);
	IST_SET(ev, IST_F_STREAM);
	if (corr) {
		ev->correlation = corr;
		IST_SET(ev, IST_F_CORRELATION);
	}
}

/* GPU work a CUDA graph ran: its graph and node (0: none) */
static void
graph_ids(struct ist_event *ev, uint32_t graph, uint64_t node)
{
	if (graph == 0)
		return;
	ev->graph_id = graph;
	IST_SET(ev, IST_F_GRAPH_ID);
	if (node != 0 && node <= INT64_MAX) {
		ev->graph_node = (int64_t)node;
		IST_SET(ev, IST_F_GRAPH_NODE);
	}
}

static void
set_name(struct ist_event *ev, const char *s)
{
	ev->name = (struct ist_str){ s, strlen(s) };
	IST_SET(ev, IST_F_NAME);
}

static const char *
sync_kind(uint32_t type)
{
	switch (type) {
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
		return "event";
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
		return "stream_wait_event";
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
		return "stream";
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
		return "context";
	default:
		return "unknown";
	}
}

static bool
sync_event(struct ist_cupti_conv *c, const ist_sync_rec *s,
    int64_t tid, struct ist_event *ev)
{
	const char *k = sync_kind(s->type);

	if (!range(c, ev, IST_SYNC, c->pid, s->start, s->end))
		return false;
	ev->tid = tid;
	IST_SET(ev, IST_F_TID);
	ev->kind = (struct ist_str){ k, strlen(k) };
	IST_SET(ev, IST_F_KIND);
	return true;
}

/* The host side of a copy is pageable: source of H2D, destination of D2H. */
static bool
pageable(uint8_t kind)
{
	return kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
}

static int
memcpy_event(struct ist_cupti_conv *c, const ist_memcpy_rec *m,
    struct ist_event *ev)
{
	enum ist_type t;
	bool pg = false;

	switch (m->copyKind) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
		t = IST_H2D_COPY;
		pg = pageable(m->srcKind);
		break;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
		t = IST_D2H_COPY;
		pg = pageable(m->dstKind);
		break;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
		t = IST_D2D_COPY;
		break;
	default:   /* host to host, unknown: no GPU work to show */
		c->skipped++;
		return 0;
	}
	if (!range(c, ev, t, c->pid, m->start, m->end))
		return 0;
	gpu_track(ev, m->deviceId, m->streamId, m->correlationId);
	graph_ids(ev, m->graphId, m->graphNodeId);
	ev->bytes = (int64_t)m->bytes;
	IST_SET(ev, IST_F_BYTES);
	if (t != IST_D2D_COPY) {
		ev->pageable = pg;
		IST_SET(ev, IST_F_PAGEABLE);
	}
	return 1;
}

/* ---- one function per kind of record ---- */

/* A kernel's name as its source spells it ("void gemm<float>(...)"). */
static const char *
kernel_name(struct ist_cupti_conv *c, const char *name)
{
	char *d;
	int st = -1;

	if (name == NULL)
		return "(unnamed kernel)";
	if (name[0] != '_' || name[1] != 'Z' || c->demangle == NULL)
		return name;
	d = c->demangle(name, c->demangled, &c->demangled_cap, &st);
	if (d == NULL || st != 0)
		return name;
	c->demangled = d;
	return d;
}

static int
kernel(struct ist_cupti_conv *c, const ist_kernel_rec *k,
    struct ist_event *out)
{
	if (!range(c, out, IST_GPU_KERNEL, c->pid, k->start, k->end))
		return 0;
	gpu_track(out, k->deviceId, k->streamId, k->correlationId);
	graph_ids(out, k->graphId, k->graphNodeId);
	set_name(out, kernel_name(c, k->name));
	out->grid[0] = k->gridX;
	out->grid[1] = k->gridY;
	out->grid[2] = k->gridZ;
	out->block[0] = k->blockX;
	out->block[1] = k->blockY;
	out->block[2] = k->blockZ;
	IST_SET(out, IST_F_GRID);
	IST_SET(out, IST_F_BLOCK);
	return 1;
}

/* A peer copy or a memset (the fields they share, read from either) */
#define GPU_BYTES(c, t, m, out) gpu_bytes(c, t, (m)->start, (m)->end, \
	(m)->deviceId, (m)->streamId, (m)->correlationId, (m)->bytes, \
	(m)->graphId, (m)->graphNodeId, out)

static int
gpu_bytes(struct ist_cupti_conv *c, enum ist_type t, uint64_t s, uint64_t e,
    uint32_t dev, uint32_t stream, uint32_t corr, uint64_t bytes,
    uint32_t graph, uint64_t node, struct ist_event *out)
{
	if (!range(c, out, t, c->pid, s, e))
		return 0;
	gpu_track(out, dev, stream, corr);
	graph_ids(out, graph, node);
	out->bytes = (int64_t)bytes;
	IST_SET(out, IST_F_BYTES);
	return 1;
}

/* The sync records waiting for their API call, oldest first. */
#define PENDING(c, i) ((c)->pending[((c)->phead + (i)) % IST_CUPTI_PENDING])

/*
 * A runtime, driver or internal launch call; then the sync records that
 * waited for it, in the order they came.
 */
size_t
ist_cupti_call_len(const char *nm)
{
	size_t n = strlen(nm), i = n;

	while (i > 0 && nm[i - 1] >= '0' && nm[i - 1] <= '9')
		i--;
	if (i < n && i >= 3 && nm[i - 1] == 'v' && nm[i - 2] == '_')
		return i - 2;
	return n;
}

static int
api_call(struct ist_cupti_conv *c, const CUpti_ActivityAPI *a, bool drv,
    struct ist_event *out, int max)
{
	const char *nm = c->api_name ? c->api_name(c->ctx, drv, a->cbid) :
	    NULL;
	int n = 0, kept = 0;

	if (nm == NULL) {
		snprintf(c->name_buf, sizeof(c->name_buf), "%s_%u",
		    drv ? "cuda_driver" : "cuda_runtime", a->cbid);
		nm = c->name_buf;
	}
	c->recent[a->correlationId % 1024].corr = a->correlationId;
	c->recent[a->correlationId % 1024].tid = a->threadId;
	if (range(c, out, IST_CUDA_API, a->processId ? a->processId : c->pid,
	    a->start, a->end)) {
		out->tid = a->threadId;
		IST_SET(out, IST_F_TID);
		set_name(out, nm);
		/* as the user wrote it, and the rules match it */
		out->name.n = ist_cupti_call_len(nm);
		out->correlation = a->correlationId;
		IST_SET(out, IST_F_CORRELATION);
		n = 1;
	}
	for (int i = 0; i < c->npending; i++) {
		ist_sync_rec *s = &PENDING(c, i);
		if (s->correlationId == a->correlationId && n < max) {
			n += sync_event(c, s, a->threadId, &out[n]);
			continue;
		}
		if (kept != i)
			PENDING(c, kept) = *s;
		kept++;
	}
	c->npending = kept;
	return n;
}

static size_t
sync_size(const struct ist_cupti_conv *c)
{
	if (c->api_version >= IST_CUPTI_SYNC2_VERSION)
		return sizeof(ist_sync_rec);
	return offsetof(ist_sync_rec, cudaEventId) + sizeof(uint32_t);
}

static int
sync_record(struct ist_cupti_conv *c, const ist_sync_rec *s,
    struct ist_event *out)
{
	uint32_t slot = s->correlationId % 1024;
	int n = 0;

	/* a sync that failed did not wait: cudaEventQuery and
	 * cudaStreamQuery polled before the work was done (a CUPTI before
	 * 12.8 says nothing of it, nor reports polls as syncs) */
#if CUPTI_API_VERSION >= IST_CUPTI_SYNC2_VERSION
	if (c->api_version >= IST_CUPTI_SYNC2_VERSION && s->returnValue != 0) {
		c->failed_syncs++;
		return 0;
	}
#endif
	if (c->queries != NULL && s->correlationId != 0 &&
	    atomic_load_explicit(&c->queries[s->correlationId %
	    IST_CUPTI_QUERIES], memory_order_relaxed) == s->correlationId) {
		c->query_syncs++;
		return 0;
	}
	if (c->recent[slot].corr == s->correlationId && s->correlationId != 0)
		return sync_event(c, s, c->recent[slot].tid, out);
	if (c->npending == IST_CUPTI_PENDING) {
		/* the oldest waits no longer: on the process */
		n = sync_event(c, &PENDING(c, 0), c->pid, out);
		c->phead = (c->phead + 1) % IST_CUPTI_PENDING;
		c->npending--;
	}
	/* only the bytes this CUPTI's record has: Synchronization (before
	 * 12.8) ends where Synchronization2's returnValue begins */
	memset(&PENDING(c, c->npending), 0, sizeof(ist_sync_rec));
	memcpy(&PENDING(c, c->npending), s, sync_size(c));
	c->npending++;
	return n;
}

/*
 * Only device memory (device, static, managed, arrays) is a device's:
 * pinned and pageable host memory (pin_memory, cudaHostAlloc) is the
 * host's, written with no device.
 */
static int
memory(struct ist_cupti_conv *c, const CUpti_ActivityMemory4 *m,
    struct ist_event *out)
{
	bool dev;

	if (m->memoryOperationType !=
	    CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
	    m->memoryOperationType !=
	    CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
		return 0;
	if (m->timestamp == 0 || m->timestamp > INT64_MAX) {
		c->bad_times++;
		return 0;
	}
	dev = m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE ||
	    m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC ||
	    m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED ||
	    m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC ||
	    m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
	ist_event_init(out, m->memoryOperationType ==
	    CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ?
	    IST_MEMORY_ALLOC : IST_MEMORY_FREE);
	out->pid = m->processId ? m->processId : c->pid;
	out->bytes = (int64_t)m->bytes;
	out->ts_ns = (int64_t)m->timestamp;
	IST_SET(out, IST_F_PID);
	IST_SET(out, IST_F_BYTES);
	IST_SET(out, IST_F_TS);
	if (dev) {
		out->device = m->deviceId;
		IST_SET(out, IST_F_DEVICE);
	}
	return 1;
}

static int
device(struct ist_cupti_conv *c, const CUpti_ActivityDevice5 *d,
    struct ist_event *out)
{
	ist_event_init(out, IST_DEVICE);
	/* device numbers are the process's own (CUDA_VISIBLE_DEVICES): the
	 * UUID names the GPU across processes */
	out->pid = c->pid;
	out->device = d->id;
	IST_SET(out, IST_F_PID);
	IST_SET(out, IST_F_DEVICE);
	ist_gpu_uuid(c->uuid_buf, (const uint8_t *)d->uuid.bytes);
	out->uuid = (struct ist_str){ c->uuid_buf, strlen(c->uuid_buf) };
	IST_SET(out, IST_F_UUID);
	set_name(out, d->name ? d->name : "(unnamed GPU)");
	out->sm_count = d->numMultiprocessors;
	out->memory_bytes = (int64_t)d->globalMemorySize;
	IST_SET(out, IST_F_SM_COUNT);
	IST_SET(out, IST_F_MEMORY_BYTES);
	if (c->pcie_gbps && (out->pcie_gbps = c->pcie_gbps(c->ctx,
	    (const uint8_t *)d->uuid.bytes)) > 0)
		IST_SET(out, IST_F_PCIE_GBPS);
	return 1;
}

const char *const ist_cupti_overhead_names[IST_CUPTI_OVH_N] = {
	"cupti.overhead_ns", "cuda.jit_compile_ns", "cuda.lazy_loading_ns",
	"cuda.command_buffer_full_ns", "cuda.other_overhead_ns",
};

/* Each kind of overhead as what it is: CUPTI's own, or the driver's. */
static void
overhead(struct ist_cupti_conv *c, const CUpti_ActivityOverhead3 *o)
{
	int k;

	if (o->end <= o->start || o->start == 0)
		return;
	switch ((int)o->overheadKind) {
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
	case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
		k = IST_CUPTI_OVH_CUPTI;
		break;
	case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
		k = IST_CUPTI_OVH_JIT;
		break;
	case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
	case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
		k = IST_CUPTI_OVH_LOADING;
		break;
	case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
		k = IST_CUPTI_OVH_CMDBUF;
		break;
	default:
		k = IST_CUPTI_OVH_OTHER;
		break;
	}
	c->overhead_ns[k] += o->end - o->start;
}

/* ---- each stream's last operation, held (hold_ops) ---- */

/* Keeps a copy of name in *buf (grown as needed); false without memory. */
static bool
keep_name(char **buf, size_t *cap, struct ist_str *name)
{
	if (name->n + 1 > *cap) {
		size_t want = name->n + 1 < 256 ? 256 : 2 * (name->n + 1);
		char *p = realloc(*buf, want);
		if (p == NULL)
			return false;
		*buf = p;
		*cap = want;
	}
	if (name->n)
		memcpy(*buf, name->p, name->n);
	(*buf)[name->n] = '\0';
	name->p = *buf;
	return true;
}

/*
 * The n (0 or 1) operations in out[0] go through the stream's slot: the
 * one held before comes out, mended if the new one shows its end lies,
 * and the new one is held, unless a CUDA graph ran it (a graph's nodes
 * may overlap: only what comes before one is checked against it).
 */
static int
held_op(struct ist_cupti_conv *c, int n, struct ist_event *out, int max)
{
	struct ist_cupti_held *h = NULL, *fr = NULL;
	struct ist_event e;
	bool graph;
	int k = 0;

	if (!c->hold_ops || n != 1 || max < 2)
		return n;
	e = out[0];
	graph = IST_HAS(&e, IST_F_GRAPH_ID);
	for (int i = 0; i < IST_CUPTI_HELD; i++) {
		if (!c->held[i].used) {
			if (fr == NULL)
				fr = &c->held[i];
		} else if (c->held[i].ev.device == e.device &&
		    c->held[i].ev.stream == e.stream) {
			h = &c->held[i];
			break;
		}
	}
	if (h != NULL) {
		struct ist_event *p = &h->ev;
		/* a stream runs in order: what outlasts all of the next
		 * operation did not run that long */
		if (p->end_ns > e.start_ns && p->end_ns > e.end_ns &&
		    e.start_ns >= p->start_ns) {
			p->end_ns = e.start_ns;
			c->clipped++;
		}
		out[k] = *p;
		if (p->name.n && !keep_name(&c->out_name, &c->out_cap,
		    &out[k].name))
			out[k].name.n = 0;
		k++;
		h->used = false;
		fr = h;
	}
	if (graph || fr == NULL) {
		out[k++] = e;
		return k;
	}
	fr->ev = e;
	if (e.name.n && !keep_name(&fr->name, &fr->cap, &fr->ev.name)) {
		out[k++] = e;          /* no memory: it passes unchecked */
		return k;
	}
	fr->used = true;
	return k;
}

int
ist_cupti_convert(struct ist_cupti_conv *c, const CUpti_Activity *rec,
    struct ist_event *out, int max)
{
	const void *r = rec;

	if (max < 1)
		return 0;
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return held_op(c, kernel(c, r, out), out, max);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return held_op(c, memcpy_event(c, r, out), out, max);
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		return held_op(c, GPU_BYTES(c, IST_D2D_COPY,
		    (const CUpti_ActivityMemcpyPtoP4 *)r, out), out, max);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return held_op(c, GPU_BYTES(c, IST_MEMSET,
		    (const CUpti_ActivityMemset4 *)r, out), out, max);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API:
		/* internal launches (cuBLAS, cuDNN) are runtime calls too:
		 * without them their kernels lose their launch */
		return api_call(c, r, false, out, max);
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return api_call(c, r, true, out, max);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		return sync_record(c, r, out);
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		return memory(c, r, out);
	case CUPTI_ACTIVITY_KIND_DEVICE:
		return device(c, r, out);
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		overhead(c, r);
		return 0;
	default:   /* context records and kinds we did not enable */
		c->skipped++;
		return 0;
	}
}

int
ist_cupti_flush_pending(struct ist_cupti_conv *c, struct ist_event *out,
    int max)
{
	int n = 0;

	while (c->npending > 0 && n < max) {
		n += sync_event(c, &PENDING(c, 0), c->pid, &out[n]);
		c->phead = (c->phead + 1) % IST_CUPTI_PENDING;
		c->npending--;
	}
	return n + ist_cupti_flush_held(c, out + n, max - n);
}

int
ist_cupti_flush_held(struct ist_cupti_conv *c, struct ist_event *out,
    int max)
{
	int n = 0;

	/* each held name stays in its slot, valid until the next call */
	for (int i = 0; i < IST_CUPTI_HELD && n < max; i++)
		if (c->held[i].used) {
			out[n++] = c->held[i].ev;
			c->held[i].used = false;
		}
	return n;
}

void
ist_cupti_conv_release(struct ist_cupti_conv *c)
{
	free(c->demangled);
	c->demangled = NULL;
	c->demangled_cap = 0;
	for (int i = 0; i < IST_CUPTI_HELD; i++) {
		free(c->held[i].name);
		c->held[i] = (struct ist_cupti_held){ 0 };
	}
	free(c->out_name);
	c->out_name = NULL;
	c->out_cap = 0;
}

double
ist_pcie_gbps(const char *speed, int width)
{
	double gt = strtod(speed ? speed : "", NULL), lane;

	if (width <= 0)
		return 0;
	/* GT/s per lane to GB/s after encoding: 8b/10b up to 5 GT/s,
	 * 128b/130b for 8 to 32 GT/s, FLIT mode (242/256) at 64 GT/s */
	if (gt <= 0)
		return 0;
	if (gt <= 5.0)
		lane = gt * 0.8 / 8;
	else if (gt <= 32.0)
		lane = gt * 128.0 / 130.0 / 8;
	else
		lane = gt * 242.0 / 256.0 / 8;
	return lane * width;
}

/* A small text file, NUL-terminated; false if it cannot be read. */
static bool
slurp(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	size_t got;

	if (f == NULL)
		return false;
	got = fread(buf, 1, n - 1, f);
	buf[got] = '\0';
	fclose(f);
	return true;
}

void
ist_gpu_uuid(char out[IST_GPU_UUID_LEN], const uint8_t u[16])
{
	/* as nvidia-smi and the driver write it */
	snprintf(out, IST_GPU_UUID_LEN, "GPU-%02x%02x%02x%02x-%02x%02x-"
	    "%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
	    u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
	    u[13], u[14], u[15]);
}

double
ist_pcie_gbps_uuid(const char *proc, const char *sys, const uint8_t uuid[16])
{
	char want[64], path[4200], info[4096], speed[64], width[16];
	const uint8_t *u = uuid;
	struct dirent *de;
	DIR *d;
	double gbps = 0;

	ist_gpu_uuid(want, u);
	if ((d = opendir(proc)) == NULL)
		return 0;
	while (gbps == 0 && (de = readdir(d)) != NULL) {
		const char *line;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/information", proc,
		    de->d_name);
		if (!slurp(path, info, sizeof(info)) ||
		    (line = strstr(info, "GPU UUID:")) == NULL ||
		    strncasecmp(line + 9 + strspn(line + 9, " \t"), want,
		    strlen(want)) != 0)
			continue;
		/* the directory is the PCI address; sysfs has it lower case */
		snprintf(path, sizeof(path), "%s/%s/max_link_speed", sys,
		    de->d_name);
		for (char *p = path + strlen(sys); *p; p++)
			if (*p >= 'A' && *p <= 'F')
				*p = (char)(*p - 'A' + 'a');
		if (!slurp(path, speed, sizeof(speed)))
			continue;
		memcpy(path + strlen(path) - strlen("speed"), "width", 6);
		if (slurp(path, width, sizeof(width)))
			gbps = ist_pcie_gbps(speed, atoi(width));
	}
	closedir(d);
	return gbps;
}
