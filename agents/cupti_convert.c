/* cupti_convert.c - CUPTI activity records to trace events (see .h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_convert.h"
#include "internal.h"

void
ist_cupti_conv_init(struct ist_cupti_conv *c, int64_t pid)
{
	memset(c, 0, sizeof(*c));
	c->pid = pid;
}

static void
range(struct ist_event *ev, enum ist_type t, int64_t pid, uint64_t s,
    uint64_t e)
{
	ist_event_init(ev, t);
	ev->pid = pid;
	ev->start_ns = (int64_t)s;
	ev->end_ns = (int64_t)(e >= s ? e : s);
	IST_SET(ev, IST_F_PID);
	IST_SET(ev, IST_F_START);
	IST_SET(ev, IST_F_END);
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

static void
sync_event(struct ist_cupti_conv *c, const CUpti_ActivitySynchronization2 *s,
    int64_t tid, struct ist_event *ev)
{
	const char *k = sync_kind(s->type);
	range(ev, IST_SYNC, c->pid, s->start, s->end);
	ev->tid = tid;
	IST_SET(ev, IST_F_TID);
	ev->kind = (struct ist_str){ k, strlen(k) };
	IST_SET(ev, IST_F_KIND);
}

/* The host side of a copy is pageable: source of H2D, destination of D2H. */
static bool
pageable(uint8_t kind)
{
	return kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
}

static int
memcpy_event(const CUpti_ActivityMemcpy6 *m, int64_t pid,
    struct ist_event *ev, uint64_t *skipped)
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
		(*skipped)++;
		return 0;
	}
	range(ev, t, pid, m->start, m->end);
	gpu_track(ev, m->deviceId, m->streamId, m->correlationId);
	ev->bytes = (int64_t)m->bytes;
	IST_SET(ev, IST_F_BYTES);
	if (t != IST_D2D_COPY) {
		ev->pageable = pg;
		IST_SET(ev, IST_F_PAGEABLE);
	}
	return 1;
}

int
ist_cupti_convert(struct ist_cupti_conv *c, const CUpti_Activity *rec,
    struct ist_event *out, int max)
{
	int n = 0;

	if (max < 1)
		return 0;
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = (const void *)rec;
		range(out, IST_GPU_KERNEL, c->pid, k->start, k->end);
		gpu_track(out, k->deviceId, k->streamId, k->correlationId);
		set_name(out, k->name ? k->name : "(unnamed kernel)");
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
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return memcpy_event((const void *)rec, c->pid, out, &c->skipped);
	case CUPTI_ACTIVITY_KIND_MEMCPY2: {
		const CUpti_ActivityMemcpyPtoP4 *m = (const void *)rec;
		range(out, IST_D2D_COPY, c->pid, m->start, m->end);
		gpu_track(out, m->deviceId, m->streamId, m->correlationId);
		out->bytes = (int64_t)m->bytes;
		IST_SET(out, IST_F_BYTES);
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)rec;
		range(out, IST_MEMSET, c->pid, m->start, m->end);
		gpu_track(out, m->deviceId, m->streamId, m->correlationId);
		out->bytes = (int64_t)m->bytes;
		IST_SET(out, IST_F_BYTES);
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *a = (const void *)rec;
		bool drv = rec->kind == CUPTI_ACTIVITY_KIND_DRIVER;
		const char *nm = c->api_name ? c->api_name(c->ctx, drv, a->cbid) :
		    NULL;
		if (nm == NULL) {
			snprintf(c->name_buf, sizeof(c->name_buf), "%s_%u",
			    drv ? "cuda_driver" : "cuda_runtime", a->cbid);
			nm = c->name_buf;
		}
		range(out, IST_CUDA_API, a->processId ? a->processId : c->pid,
		    a->start, a->end);
		out->tid = a->threadId;
		IST_SET(out, IST_F_TID);
		set_name(out, nm);
		out->correlation = a->correlationId;
		IST_SET(out, IST_F_CORRELATION);
		c->recent[a->correlationId % 1024].corr = a->correlationId;
		c->recent[a->correlationId % 1024].tid = a->threadId;
		n = 1;
		/* syncs that were waiting for this call */
		for (int i = 0; i < c->npending && n < max; i++)
			if (c->pending[i].correlationId == a->correlationId) {
				sync_event(c, &c->pending[i], a->threadId,
				    &out[n++]);
				c->pending[i] = c->pending[--c->npending];
				i--;
			}
		return n;
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		const CUpti_ActivitySynchronization2 *s = (const void *)rec;
		uint32_t slot = s->correlationId % 1024;
		if (c->recent[slot].corr == s->correlationId &&
		    s->correlationId != 0) {
			sync_event(c, s, c->recent[slot].tid, out);
			return 1;
		}
		if (c->npending == IST_CUPTI_PENDING) {
			/* the oldest waits no longer */
			sync_event(c, &c->pending[0], c->pid, out);
			c->pending[0] = *s;
			return 1;
		}
		c->pending[c->npending++] = *s;
		return 0;
	}
	case CUPTI_ACTIVITY_KIND_MEMORY2: {
		const CUpti_ActivityMemory4 *m = (const void *)rec;
		if (m->memoryOperationType !=
		    CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
		    m->memoryOperationType !=
		    CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
			return 0;
		ist_event_init(out, m->memoryOperationType ==
		    CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ?
		    IST_MEMORY_ALLOC : IST_MEMORY_FREE);
		out->pid = m->processId ? m->processId : c->pid;
		out->device = m->deviceId;
		out->bytes = (int64_t)m->bytes;
		out->ts_ns = (int64_t)m->timestamp;
		IST_SET(out, IST_F_PID);
		IST_SET(out, IST_F_DEVICE);
		IST_SET(out, IST_F_BYTES);
		IST_SET(out, IST_F_TS);
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_DEVICE: {
		const CUpti_ActivityDevice5 *d = (const void *)rec;
		ist_event_init(out, IST_DEVICE);
		out->device = d->id;
		IST_SET(out, IST_F_DEVICE);
		set_name(out, d->name ? d->name : "(unnamed GPU)");
		out->sm_count = d->numMultiprocessors;
		out->memory_bytes = (int64_t)d->globalMemorySize;
		IST_SET(out, IST_F_SM_COUNT);
		IST_SET(out, IST_F_MEMORY_BYTES);
		if (c->pcie_gbps && (out->pcie_gbps = c->pcie_gbps(c->ctx,
		    d->id)) > 0)
			IST_SET(out, IST_F_PCIE_GBPS);
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
		const CUpti_ActivityGraphTrace2 *g = (const void *)rec;
		snprintf(c->name_buf, sizeof(c->name_buf), "cudaGraph %u",
		    g->graphId);
		range(out, IST_GPU_KERNEL, c->pid, g->start, g->end);
		gpu_track(out, g->deviceId, g->streamId, g->correlationId);
		set_name(out, c->name_buf);
		return 1;
	}
	case CUPTI_ACTIVITY_KIND_OVERHEAD: {
		const CUpti_ActivityOverhead3 *o = (const void *)rec;
		if (o->end > o->start)
			c->overhead_ns += o->end - o->start;
		return 0;
	}
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
		sync_event(c, &c->pending[c->npending - 1], c->pid, &out[n++]);
		c->npending--;
	}
	return n;
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
