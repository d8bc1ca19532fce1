/*
 * perfetto.c - export as Chrome trace-event JSON (the "JSON Object Format"),
 * which ui.perfetto.dev and chrome://tracing open: a track per process and
 * thread, a process per GPU with a track per stream, flow arrows from each
 * launch call to the GPU work it launched (by correlation), counter tracks,
 * instants with their metadata.  Written event by event: memory does not
 * grow with the trace (only with its processes and threads, whose names are
 * written at the end, each once: a thread's own name, MainThread, over the
 * process's that the sampler saw first).
 *
 * A window (from, to: ns after the first event with a time) keeps the
 * events that overlap it, whole; a minimum duration drops shorter ranges,
 * and the flow arrow of a launch or GPU slice dropped goes with it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "report.h"
#include "report_int.h"
#include "rules/rules.h"

/* GPUs are shown as processes of their own, out of the way of real pids. */
#define GPU_PID_BASE 1000000000LL

struct name {
	int64_t pid, tid;        /* tid -1: the process */
	char *name;
	size_t n;
};

struct ist_perfetto {
	int fd;
	struct ist_buf b;
	bool first;
	struct ist_perfetto_opts o;
	bool have_t0;
	int64_t t0;
	uint64_t written;
	struct name *names;
	size_t nnames, capnames;
	uint64_t seen_gpu;       /* bit per device named */
	struct { int64_t dev, stream; } *streams;
	size_t nstreams, capstreams;
	int64_t gpu_mem[64];
};

static enum ist_status
flush(struct ist_perfetto *p, bool force, struct ist_error *err)
{
	int e;
	if (!force && p->b.n < (1u << 16))
		return IST_OK;
	if (p->b.n && (e = ist_fd_sink(&p->fd, p->b.p, p->b.n)) != 0) {
		ist_seterr(err, IST_EIO, "cannot write: %s", strerror(e));
		ist_at(err, IST_AT_OUTPUT);
		err->sys_errno = e;
		return IST_EIO;
	}
	p->written += p->b.n;
	p->b.n = 0;
	return IST_OK;
}

enum ist_status
ist_perfetto_new(struct ist_perfetto **out, int fd,
    const struct ist_perfetto_opts *po, struct ist_error *err)
{
	struct ist_perfetto *p = calloc(1, sizeof(*p));
	if (p == NULL) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	p->fd = fd;
	p->first = true;
	if (po)
		p->o = *po;
	ist_buf_printf(&p->b, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
	*out = p;
	return IST_OK;
}

void
ist_perfetto_free(struct ist_perfetto *p)
{
	if (p == NULL)
		return;
	ist_buf_release(&p->b);
	free(p->streams);
	for (size_t i = 0; i < p->nnames; i++)
		free(p->names[i].name);
	free(p->names);
	free(p);
}

uint64_t
ist_perfetto_bytes(const struct ist_perfetto *p)
{
	return p ? p->written + p->b.n : 0;
}

static struct name *
name_slot(struct ist_perfetto *p, int64_t pid, int64_t tid)
{
	for (size_t i = 0; i < p->nnames; i++)
		if (p->names[i].pid == pid && p->names[i].tid == tid)
			return &p->names[i];
	return NULL;
}

/*
 * The name of a process (tid -1) or thread, kept to be written at the end:
 * the last one given, except that a thread is not renamed to its process's
 * name (the sampler's comm) once it has a name of its own.  -1: no memory.
 */
static int
keep_name(struct ist_perfetto *p, int64_t pid, int64_t tid, struct ist_str s)
{
	struct name *x = name_slot(p, pid, tid), *proc;
	char *c;

	if (x && tid >= 0 && (proc = name_slot(p, pid, -1)) != NULL &&
	    proc->n == s.n && memcmp(proc->name, s.p, s.n) == 0)
		return 0;
	if ((c = malloc(s.n + 1)) == NULL)
		return -1;
	memcpy(c, s.p, s.n);
	c[s.n] = '\0';
	if (x == NULL) {
		if (ist_room((void **)&p->names, &p->capnames, p->nnames,
		    sizeof(*p->names))) {
			free(c);
			return -1;
		}
		x = &p->names[p->nnames++];
		x->pid = pid;
		x->tid = tid;
		x->name = NULL;
	}
	free(x->name);
	x->name = c;
	x->n = s.n;
	return 0;
}

/* Outside the window, or shorter than the minimum: not exported. */
static bool
left_out(struct ist_perfetto *p, const struct ist_event *ev)
{
	bool range = IST_HAS(ev, IST_F_START) && IST_HAS(ev, IST_F_END);
	int64_t key = IST_HAS(ev, IST_F_START) ? ev->start_ns :
	    IST_HAS(ev, IST_F_TS) ? ev->ts_ns : INT64_MIN;
	int64_t end = range ? ev->end_ns : key;

	if (key == INT64_MIN)
		return false;
	if (!p->have_t0) {
		p->have_t0 = true;
		p->t0 = key;
	}
	if (range && p->o.min_dur_ns > 0 && end - key < p->o.min_dur_ns)
		return true;
	if (p->o.from_ns > 0 && (range ? end : key) < p->t0 + p->o.from_ns)
		return true;
	if (p->o.to_ns > 0 && key >= p->t0 + p->o.to_ns)
		return true;
	return false;
}

/* Microseconds with nanosecond digits, exactly, at o (at most 25 bytes);
 * the end */
static char *
put_us(char *o, int64_t ns)
{
	uint64_t u = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
	uint64_t whole = u / 1000;       /* under 2^54: 17 digits */
	unsigned frac = (unsigned)(u - whole * 1000);
	int n = ist_digits(whole);

	if (ns < 0)
		*o++ = '-';
	ist_put_digits(o, whole, n);
	o += n;
	*o++ = '.';
	*o++ = (char)('0' + frac / 100);
	memcpy(o, ist_digit_pairs + frac % 100 * 2, 2);
	return o + 2;
}

static void
us(struct ist_buf *b, int64_t ns)
{
	if (ist_buf_reserve(b, 26))      /* and the NUL */
		return;
	b->n = (size_t)(put_us(b->p + b->n, ns) - b->p);
	b->p[b->n] = '\0';
}

/* a string literal at o; the end */
#define PUT_LIT(o, s) (memcpy((o), "" s, sizeof(s) - 1), (o) + sizeof(s) - 1)

/* a kernel's grid or block, [x,y,z], */
static void
dim3(struct ist_buf *b, const int64_t v[3])
{
	IST_BUF_LIT(b, "[");
	ist_buf_int(b, v[0]);
	IST_BUF_LIT(b, ",");
	ist_buf_int(b, v[1]);
	IST_BUF_LIT(b, ",");
	ist_buf_int(b, v[2]);
	IST_BUF_LIT(b, "],");
}

/* An argument of a complete event: "key":v, (key a literal) */
#define ARG_INT(b, key, v) \
	(IST_BUF_LIT(b, key), ist_buf_int(b, v), IST_BUF_LIT(b, ","))

static void
begin(struct ist_perfetto *p)
{
	if (p->first)
		IST_BUF_LIT(&p->b, "{");
	else
		IST_BUF_LIT(&p->b, ",\n{");
	p->first = false;
}

/* string field f of ev, copied as it is when the reader found it plain */
#define STR(b, ev, field, f) \
	ist_buf_json_text(b, (ev)->field, IST_PLAIN(ev, f))

static void
meta_name(struct ist_perfetto *p, const char *what, int64_t pid, int64_t tid,
    const char *name, size_t n)
{
	begin(p);
	ist_buf_printf(&p->b, "\"ph\":\"M\",\"name\":\"%s\",\"pid\":%lld,"
	    "\"tid\":%lld,\"args\":{\"name\":", what, (long long)pid,
	    (long long)tid);
	ist_buf_json_string(&p->b, name, n);
	ist_buf_printf(&p->b, "}}");
}

/* The GPU track of (device, stream), named the first time it is used. */
static void
gpu_track(struct ist_perfetto *p, int64_t dev, int64_t stream)
{
	char name[64];
	for (size_t i = 0; i < p->nstreams; i++)
		if (p->streams[i].dev == dev && p->streams[i].stream == stream)
			return;
	if (ist_room((void **)&p->streams, &p->capstreams, p->nstreams,
	    sizeof(*p->streams)))
		return;
	p->streams[p->nstreams].dev = dev;
	p->streams[p->nstreams++].stream = stream;
	if (dev >= 0 && dev < 64 && !(p->seen_gpu >> dev & 1)) {
		p->seen_gpu |= 1ull << dev;
		snprintf(name, sizeof(name), "GPU %lld", (long long)dev);
		meta_name(p, "process_name", GPU_PID_BASE + dev, 0, name,
		    strlen(name));
	}
	snprintf(name, sizeof(name), "stream %lld", (long long)stream);
	meta_name(p, "thread_name", GPU_PID_BASE + dev, stream, name,
	    strlen(name));
}

static bool
launches(const struct ist_event *ev)
{
	static const char *const pat[] = { "Launch", "launch", "Memcpy",
	    "Memset" };
	for (size_t k = 0; k < 4; k++) {
		size_t n = strlen(pat[k]);
		for (size_t i = 0; i + n <= ev->name.n; i++)
			if (memcmp(ev->name.p + i, pat[k], n) == 0)
				return true;
	}
	return false;
}

static void
complete(struct ist_perfetto *p, const struct ist_event *ev, int64_t pid,
    int64_t tid, const char *cat)
{
	begin(p);
	IST_BUF_LIT(&p->b, "\"ph\":\"X\",\"cat\":\"");
	ist_buf_add(&p->b, cat, strlen(cat));
	IST_BUF_LIT(&p->b, "\",\"name\":");
	if (ev->type == IST_SYNC) {
		char nm[128];
		int n = snprintf(nm, sizeof(nm), "sync %.*s",
		    (int)(ev->kind.n < 100 ? ev->kind.n : 100), ev->kind.p);
		ist_buf_json_string(&p->b, nm, (size_t)n);
	} else if (IST_HAS(ev, IST_F_NAME)) {
		STR(&p->b, ev, name, IST_F_NAME);
	} else {
		ist_buf_printf(&p->b, "\"%s\"", ist_type_name(ev->type));
	}
	/* the numbers every slice has, in room made once */
	if (ist_buf_reserve(&p->b, 2 * 21 + 2 * 25 + 40) == 0) {
		char *o = p->b.p + p->b.n;
		o = PUT_LIT(o, ",\"pid\":");
		o = ist_put_int(o, pid);
		o = PUT_LIT(o, ",\"tid\":");
		o = ist_put_int(o, tid);
		o = PUT_LIT(o, ",\"ts\":");
		o = put_us(o, ev->start_ns);
		o = PUT_LIT(o, ",\"dur\":");
		o = put_us(o, (int64_t)((uint64_t)ev->end_ns -
		    (uint64_t)ev->start_ns));
		o = PUT_LIT(o, ",\"args\":{");
		*o = '\0';
		p->b.n = (size_t)(o - p->b.p);
	}
	if (IST_HAS(ev, IST_F_FILE)) {
		IST_BUF_LIT(&p->b, "\"file\":");
		STR(&p->b, ev, file, IST_F_FILE);
		IST_BUF_LIT(&p->b, ",");
		ARG_INT(&p->b, "\"line\":", ev->line);
	}
	if (IST_HAS(ev, IST_F_DOMAIN)) {
		IST_BUF_LIT(&p->b, "\"domain\":");
		STR(&p->b, ev, domain, IST_F_DOMAIN);
		IST_BUF_LIT(&p->b, ",");
	}
	if (IST_HAS(ev, IST_F_BYTES))
		ARG_INT(&p->b, "\"bytes\":", ev->bytes);
	if (IST_HAS(ev, IST_F_RAISED) && ev->raised)
		IST_BUF_LIT(&p->b, "\"raised\":true,");
	if (IST_HAS(ev, IST_F_YIELDED) && ev->yielded)
		IST_BUF_LIT(&p->b, "\"yielded\":true,");
	if (IST_HAS(ev, IST_F_PAGEABLE)) {
		if (ev->pageable)
			IST_BUF_LIT(&p->b, "\"pageable\":true,");
		else
			IST_BUF_LIT(&p->b, "\"pageable\":false,");
	}
	if (IST_HAS(ev, IST_F_GRID)) {
		IST_BUF_LIT(&p->b, "\"grid\":");
		dim3(&p->b, ev->grid);
	}
	if (IST_HAS(ev, IST_F_BLOCK)) {
		IST_BUF_LIT(&p->b, "\"block\":");
		dim3(&p->b, ev->block);
	}
	if (IST_HAS(ev, IST_F_CORRELATION))
		ARG_INT(&p->b, "\"correlation\":", ev->correlation);
	if (p->b.p[p->b.n - 1] == ',')
		p->b.n--;
	IST_BUF_LIT(&p->b, "}}");
}

/* A flow arrow end: "s" inside the launch call, "f" at the GPU work. */
static void
flow(struct ist_perfetto *p, const struct ist_event *ev, int64_t pid,
    int64_t tid, bool start)
{
	begin(p);
	if (start)
		IST_BUF_LIT(&p->b, "\"ph\":\"s\"");
	else
		IST_BUF_LIT(&p->b, "\"ph\":\"f\"");
	IST_BUF_LIT(&p->b, ",\"cat\":\"launch\",\"name\":\"launch\",\"id\":\"");
	ist_buf_int(&p->b, ev->pid);
	IST_BUF_LIT(&p->b, ":");
	ist_buf_int(&p->b, ev->correlation);
	IST_BUF_LIT(&p->b, "\",\"pid\":");
	ist_buf_int(&p->b, pid);
	IST_BUF_LIT(&p->b, ",\"tid\":");
	ist_buf_int(&p->b, tid);
	IST_BUF_LIT(&p->b, ",\"ts\":");
	us(&p->b, ev->start_ns);
	if (!start)
		IST_BUF_LIT(&p->b, ",\"bp\":\"e\"");
	IST_BUF_LIT(&p->b, "}");
}

static void
counter(struct ist_perfetto *p, const char *name, size_t n, int64_t pid,
    int64_t ts, const struct ist_event *ev, double v, bool is_int)
{
	begin(p);
	IST_BUF_LIT(&p->b, "\"ph\":\"C\",\"name\":");
	ist_buf_json_string(&p->b, name, n);
	IST_BUF_LIT(&p->b, ",\"pid\":");
	ist_buf_int(&p->b, pid);
	IST_BUF_LIT(&p->b, ",\"ts\":");
	us(&p->b, ts);
	if (ev && ev->value_is_int) {
		IST_BUF_LIT(&p->b, ",\"args\":{\"value\":");
		ist_buf_int(&p->b, ev->ivalue);
		IST_BUF_LIT(&p->b, "}}");
	} else if (is_int)
		ist_buf_printf(&p->b, ",\"args\":{\"value\":%.0f}}", v);
	else {
		char num[40];
		ist_fmt_double(v, num, sizeof(num));
		ist_buf_printf(&p->b, ",\"args\":{\"value\":%s}}", num);
	}
}

enum ist_status
ist_perfetto_add(struct ist_perfetto *p, const struct ist_event *ev,
    struct ist_error *err)
{
	int64_t tid = IST_HAS(ev, IST_F_TID) ? ev->tid : ev->pid;
	int64_t dev = IST_HAS(ev, IST_F_DEVICE) ? ev->device : 0;
	int64_t stream = IST_HAS(ev, IST_F_STREAM) ? ev->stream : 0;

	if (left_out(p, ev)) {
		/* the GPU memory counter keeps counting */
		if ((ev->type == IST_MEMORY_ALLOC || ev->type ==
		    IST_MEMORY_FREE) && IST_HAS(ev, IST_F_DEVICE) && dev >= 0 &&
		    dev < 64)
			p->gpu_mem[dev] += ev->type == IST_MEMORY_ALLOC ?
			    ev->bytes : -ev->bytes;
		return IST_OK;
	}
	switch (ev->type) {
	case IST_PROCESS:
	case IST_THREAD:
		if (keep_name(p, ev->pid, ev->type == IST_PROCESS ? -1 :
		    ev->tid, ev->name) != 0) {
			ist_seterr(err, IST_ENOMEM, "out of memory");
			return IST_ENOMEM;
		}
		break;
	case IST_DEVICE:
		if (dev >= 0 && dev < 64) {
			char name[200];
			int n = snprintf(name, sizeof(name), "GPU %lld: %.*s",
			    (long long)dev, (int)(ev->name.n < 150 ?
			    ev->name.n : 150), ev->name.p);
			p->seen_gpu |= 1ull << dev;
			meta_name(p, "process_name", GPU_PID_BASE + dev, 0,
			    name, (size_t)n);
		}
		break;
	case IST_CPU_CALL:
		complete(p, ev, ev->pid, tid, IST_HAS(ev, IST_F_FILE) ?
		    "python" : "c");
		break;
	case IST_SCOPE:
		complete(p, ev, ev->pid, tid, "scope");
		break;
	case IST_NVTX_RANGE:
		complete(p, ev, ev->pid, tid, "nvtx");
		break;
	case IST_SYNC:
		complete(p, ev, ev->pid, tid, "sync");
		break;
	case IST_CUDA_API:
		complete(p, ev, ev->pid, tid, "cuda");
		if (IST_HAS(ev, IST_F_CORRELATION) && launches(ev))
			flow(p, ev, ev->pid, tid, true);
		break;
	case IST_GPU_KERNEL:
	case IST_H2D_COPY:
	case IST_D2H_COPY:
	case IST_D2D_COPY:
	case IST_MEMSET:
		gpu_track(p, dev, stream);
		complete(p, ev, GPU_PID_BASE + dev, stream,
		    ev->type == IST_GPU_KERNEL ? "kernel" : ev->type ==
		    IST_MEMSET ? "memset" : "copy");
		if (IST_HAS(ev, IST_F_CORRELATION))
			flow(p, ev, GPU_PID_BASE + dev, stream, false);
		break;
	case IST_INSTANT:
	case IST_NVTX_MARK:
		begin(p);
		ist_buf_printf(&p->b, "\"ph\":\"i\",\"s\":\"t\",\"cat\":\"%s\","
		    "\"name\":", ev->type == IST_INSTANT ? "mark" : "nvtx");
		STR(&p->b, ev, name, IST_F_NAME);
		ist_buf_printf(&p->b, ",\"pid\":%lld,\"tid\":%lld,\"ts\":",
		    (long long)ev->pid, (long long)tid);
		us(&p->b, ev->ts_ns);
		if (IST_HAS(ev, IST_F_METADATA)) {
			struct ist_error e;
			ist_buf_printf(&p->b, ",\"args\":");
			if (ist_cbor_to_json(ev->metadata, &p->b, &e) != IST_OK)
				ist_buf_printf(&p->b, "{}");
		}
		ist_buf_printf(&p->b, "}");
		break;
	case IST_COUNTER:
		counter(p, ev->name.p, ev->name.n, ev->pid, ev->ts_ns, ev,
		    ev->value, false);
		break;
	case IST_MEMORY_ALLOC:
	case IST_MEMORY_FREE:
		if (IST_HAS(ev, IST_F_DEVICE) && dev >= 0 && dev < 64) {
			p->gpu_mem[dev] += ev->type == IST_MEMORY_ALLOC ?
			    ev->bytes : -ev->bytes;
			counter(p, "GPU memory (bytes)", 18, GPU_PID_BASE + dev,
			    ev->ts_ns, NULL, (double)p->gpu_mem[dev], true);
		}
		break;
	case IST_LOSS:
		begin(p);
		ist_buf_printf(&p->b, "\"ph\":\"i\",\"s\":\"p\",\"name\":\"%lld "
		    "events lost\",\"pid\":%lld,\"tid\":%lld,\"ts\":0",
		    (long long)ev->events, (long long)ev->pid,
		    (long long)ev->pid);
		if (IST_HAS(ev, IST_F_REASON)) {
			ist_buf_printf(&p->b, ",\"args\":{\"reason\":");
			STR(&p->b, ev, reason, IST_F_REASON);
			ist_buf_printf(&p->b, "}");
		}
		ist_buf_printf(&p->b, "}");
		break;
	default:
		break;
	}
	return flush(p, false, err);
}

enum ist_status
ist_perfetto_finish(struct ist_perfetto *p, const json_t *an,
    struct ist_error *err)
{
	const json_t *q = json_object_get(an, "data_quality"),
	    *v = json_object_get(an, "verdict");

	for (size_t i = 0; i < p->nnames; i++) {
		struct name *x = &p->names[i];
		meta_name(p, x->tid < 0 ? "process_name" : "thread_name",
		    x->pid, x->tid < 0 ? 0 : x->tid, x->name, x->n);
	}
	ist_buf_printf(&p->b, "\n],\"otherData\":{\"producer\":\"is-report %s\"",
	    IST_PACKAGE_VERSION);
	if (an) {
		ist_buf_printf(&p->b, ",\"verdict\":");
		ist_buf_json_string(&p->b, ist_jstr(v, "classification"),
		    strlen(ist_jstr(v, "classification")));
		ist_buf_printf(&p->b, ",\"clock_uncertainty_ns\":%lld,"
		    "\"unaligned_sources\":%lld,\"lost_events\":%lld,"
		    "\"truncated_bytes\":%lld", (long long)ist_jint(q,
		    "clock_uncertainty_ns"), (long long)ist_jint(q,
		    "unaligned_sources"), (long long)ist_jint(q,
		    "lost_events"), (long long)ist_jint(q, "truncated_bytes"));
	}
	ist_buf_printf(&p->b, "}}\n");
	return flush(p, true, err);
}
