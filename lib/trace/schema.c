/* schema.c - the record table shared by the CBOR and JSON Lines codecs. */
#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

/* a field's JSON key, as a JSON line writes it after the one before */
#define KEY(j) ",\"" j "\":", sizeof(j) + 3
#define TRK(f, j, req) { IST_F_##f, j, FT_INT, R_TRACK, req, KEY(j) }
#define PID TRK(PID, "pid", true)
#define TID TRK(TID, "tid", true)
#define DEV TRK(DEVICE, "device", true)
#define STREAM TRK(STREAM, "stream", true)
#define TIM(f, j) { IST_F_##f, j, FT_INT, R_TIME, true, KEY(j) }
#define START TIM(START, "start_ns")
#define END TIM(END, "end_ns")
#define TS TIM(TS, "ts_ns")
#define P(f, j, t, req) { IST_F_##f, j, FT_##t, R_PAYLOAD, req, KEY(j) }
#define NAME P(NAME, "name", STR, true)
#define CORR P(CORRELATION, "correlation", INT, false)
#define GRAPH P(GRAPH_ID, "graph_id", INT, false), \
	P(GRAPH_NODE, "graph_node_id", INT, false)
#define N(a) (int)(sizeof(a) / sizeof((a)[0])), a

static const struct ist_fieldspec f_header[] = {
	P(FORMAT, "format", STR, true),
	P(VERSION, "version", IVEC3, true), /* printed as [major, minor] */
	P(PRODUCER, "producer", STR, false),
	P(HOST, "host", STR, false),
	P(PIDS, "pids", VALUE, false),
	P(CLOCKS, "clocks", VALUE, false),
	P(REALTIME_NS, "realtime_ns", INT, false),
	P(MONOTONIC_NS, "monotonic_ns", INT, false),
	P(SOURCES, "sources", VALUE, false),
	P(ANALYSIS_VERSION, "analysis_version", INT, false),
};
static const struct ist_fieldspec f_process[] = {
	PID, P(NAME, "name", STR, false), P(CMDLINE, "cmdline", VALUE, false),
	P(HOST, "host", STR, false),
};
static const struct ist_fieldspec f_thread[] = {
	PID, TID, P(NAME, "name", STR, false),
};
static const struct ist_fieldspec f_device[] = {
	TRK(PID, "pid", false), DEV, P(NAME, "name", STR, false),
	P(SM_COUNT, "sm_count", INT, false),
	P(MEMORY_BYTES, "memory_bytes", INT, false),
	P(PCIE_GBPS, "pcie_gbps", DOUBLE, false), P(UUID, "uuid", STR, false),
};
#define CUT P(CUT, "cut", INT, false)
static const struct ist_fieldspec f_cpu_call[] = {
	PID, TID, NAME, P(FILE, "file", STR, false), P(LINE, "line", INT, false),
	START, END, CUT, P(RAISED, "raised", BOOL, false),
	P(YIELDED, "yielded", BOOL, false),
};
static const struct ist_fieldspec f_scope[] = {
	PID, TID, NAME, START, END, CUT,
};
static const struct ist_fieldspec f_instant[] = {
	PID, TID, NAME, TS, P(METADATA, "metadata", OBJECT, false),
};
static const struct ist_fieldspec f_nvtx_range[] = {
	PID, TID, NAME, P(DOMAIN, "domain", STR, false), START, END, CUT,
};
static const struct ist_fieldspec f_nvtx_mark[] = {
	PID, TID, NAME, P(DOMAIN, "domain", STR, false), TS,
};
static const struct ist_fieldspec f_cuda_api[] = {
	PID, TID, NAME, START, END, P(CORRELATION, "correlation", INT, true),
};
static const struct ist_fieldspec f_gpu_kernel[] = {
	PID, DEV, STREAM, NAME, START, END, CORR,
	P(GRID, "grid", IVEC3, false), P(BLOCK, "block", IVEC3, false), GRAPH,
};
static const struct ist_fieldspec f_copy[] = {
	PID, DEV, STREAM, P(BYTES, "bytes", INT, true),
	P(PAGEABLE, "pageable", BOOL, false), START, END, CORR, GRAPH,
};
static const struct ist_fieldspec f_memset[] = {
	PID, DEV, STREAM, P(BYTES, "bytes", INT, true), START, END, CORR,
	GRAPH,
};
static const struct ist_fieldspec f_sync[] = {
	PID, TID, P(KIND, "kind", STR, true), START, END,
};
static const struct ist_fieldspec f_memory[] = {
	PID, TRK(DEVICE, "device", false), P(BYTES, "bytes", INT, true), TS,
};
static const struct ist_fieldspec f_counter[] = {
	PID, TRK(TID, "tid", false), NAME, TS, P(VALUE, "value", NUMBER, true),
};
static const struct ist_fieldspec f_loss[] = {
	PID, P(EVENTS, "events", INT, true), P(REASON, "reason", STR, false),
};
static const struct ist_fieldspec f_clock[] = {
	PID, P(DOMAIN, "domain", STR, true), TS,
	P(DOMAIN_NS, "domain_ns", INT, true),
};
static const struct ist_fieldspec f_analysis[] = {
	P(DATA, "data", OBJECT, true),
};
static const struct ist_fieldspec f_capture[] = {
	PID, TS, P(ON, "on", BOOL, true), P(REASON, "reason", STR, false),
};

const struct ist_typespec ist_types[IST_NTYPES] = {
	[IST_HEADER] = { "header", 0, TS_NONE, false, N(f_header) },
	[IST_PROCESS] = { "process", 3, TS_NONE, true, N(f_process) },
	[IST_THREAD] = { "thread", 4, TS_NONE, true, N(f_thread) },
	[IST_DEVICE] = { "device", 5, TS_NONE, true, N(f_device) },
	[IST_CPU_CALL] = { "cpu_call", 6, TS_RANGE, true, N(f_cpu_call) },
	[IST_SCOPE] = { "scope", 7, TS_RANGE, true, N(f_scope) },
	[IST_INSTANT] = { "instant", 8, TS_INSTANT, true, N(f_instant) },
	[IST_NVTX_RANGE] = { "nvtx_range", 9, TS_RANGE, true, N(f_nvtx_range) },
	[IST_NVTX_MARK] = { "nvtx_mark", 10, TS_INSTANT, true, N(f_nvtx_mark) },
	[IST_CUDA_API] = { "cuda_api", 11, TS_RANGE, true, N(f_cuda_api) },
	[IST_GPU_KERNEL] = { "gpu_kernel", 12, TS_RANGE, true, N(f_gpu_kernel) },
	[IST_H2D_COPY] = { "h2d_copy", 13, TS_RANGE, true, N(f_copy) },
	[IST_D2H_COPY] = { "d2h_copy", 14, TS_RANGE, true, N(f_copy) },
	[IST_D2D_COPY] = { "d2d_copy", 15, TS_RANGE, true, N(f_copy) },
	[IST_MEMSET] = { "memset", 16, TS_RANGE, true, N(f_memset) },
	[IST_SYNC] = { "sync", 17, TS_RANGE, true, N(f_sync) },
	[IST_MEMORY_ALLOC] = { "memory_alloc", 18, TS_INSTANT, true, N(f_memory) },
	[IST_MEMORY_FREE] = { "memory_free", 19, TS_INSTANT, true, N(f_memory) },
	[IST_COUNTER] = { "counter", 20, TS_INSTANT, true, N(f_counter) },
	[IST_LOSS] = { "loss", 21, TS_NONE, true, N(f_loss) },
	[IST_CLOCK] = { "clock", 22, TS_INSTANT, true, N(f_clock) },
	[IST_ANALYSIS] = { "analysis", 23, TS_NONE, false, N(f_analysis) },
	[IST_CAPTURE] = { "capture", 24, TS_INSTANT, true, N(f_capture) },
};

int
ist_type_of_kind(uint64_t kind)
{
	if (kind >= K_FIRST_EVENT && kind <= K_MAX_KNOWN)
		return (int)kind - 2; /* kinds 3..24 are types 1..22 */
	return -1;
}

const char *
ist_type_name(enum ist_type type)
{
	if ((unsigned)type >= IST_NTYPES)
		return "unknown";
	return ist_types[type].name;
}

int
ist_type_from_name(const char *name, size_t n)
{
	for (int t = 0; t < IST_NTYPES; t++)
		if (strlen(ist_types[t].name) == n &&
		    memcmp(ist_types[t].name, name, n) == 0)
			return t;
	return -1;
}

#define AT(f, m) [IST_F_##f] = offsetof(struct ist_event, m)
const uint16_t ist_str_at[IST_NFIELDS] = {
	AT(NAME, name), AT(FILE, file), AT(HOST, host), AT(KIND, kind),
	AT(REASON, reason), AT(DOMAIN, domain), AT(FORMAT, format),
	AT(PRODUCER, producer), AT(UUID, uuid),
};
const uint16_t ist_int_at[IST_NFIELDS] = {
	AT(PID, pid), AT(TID, tid), AT(DEVICE, device), AT(STREAM, stream),
	AT(START, start_ns), AT(END, end_ns), AT(TS, ts_ns), AT(LINE, line),
	AT(SM_COUNT, sm_count), AT(MEMORY_BYTES, memory_bytes),
	AT(CORRELATION, correlation), AT(BYTES, bytes), AT(EVENTS, events),
	AT(DOMAIN_NS, domain_ns), AT(REALTIME_NS, realtime_ns),
	AT(MONOTONIC_NS, monotonic_ns), AT(ANALYSIS_VERSION, analysis_version),
	AT(GRAPH_ID, graph_id), AT(GRAPH_NODE, graph_node), AT(CUT, cut),
};
const uint16_t ist_blob_at[IST_NFIELDS] = {
	AT(CMDLINE, cmdline), AT(METADATA, metadata), AT(DATA, data),
	AT(PIDS, pids), AT(CLOCKS, clocks), AT(SOURCES, sources),
};
#undef AT

uint64_t
ist_hash_bytes(const char *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, x;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&x, p, 8);
		h = (h ^ x) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	x = 0;
	if (n)          /* an empty string may have no bytes at all */
		memcpy(&x, p, n);
	h = (h ^ x) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 29);
}

void
ist_event_init(struct ist_event *ev, enum ist_type type)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
}

void
ist_counter_init(struct ist_event *ev, int64_t pid, int64_t tid,
    struct ist_str name, int64_t ts, int64_t v)
{
	ist_event_init(ev, IST_COUNTER);
	ev->pid = pid;
	IST_SET(ev, IST_F_PID);
	if (tid >= 0) {
		ev->tid = tid;
		IST_SET(ev, IST_F_TID);
	}
	ev->name = name;
	ev->ts_ns = ts;
	ev->value_is_int = true;
	ev->ivalue = v;
	ev->value = (double)v;
	IST_SET(ev, IST_F_NAME);
	IST_SET(ev, IST_F_TS);
	IST_SET(ev, IST_F_VALUE);
}

const char *
ist_strerror(enum ist_status st)
{
	switch (st) {
	case IST_OK: return "success";
	case IST_END: return "end of trace";
	case IST_TRUNCATED: return "trace is truncated";
	case IST_EEMPTY: return "empty input";
	case IST_ENOTTRACE: return "not an InferScope trace";
	case IST_EVERSION: return "unsupported trace version";
	case IST_ECORRUPT: return "corrupt trace";
	case IST_EINVAL: return "invalid input";
	case IST_EIO: return "input/output error";
	case IST_ENOMEM: return "out of memory";
	case IST_ELIMIT: return "size limit exceeded";
	case IST_EPARTIAL: return "some inputs could not be read whole";
	}
	return "unknown status";
}

void
ist_seterr(struct ist_error *err, enum ist_status st, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return;
	err->status = st;
	err->where = IST_AT_SELF; /* a reader or writer says otherwise */
	err->sys_errno = 0;     /* a caller with an errno sets it after */
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

int
ist_room(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *q;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 16;
	if ((q = realloc(*p, c * size)) == NULL)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

void *
ist_map_huge(size_t n, size_t small)
{
	const uintptr_t huge = 2u << 20;
	uint8_t *p, *a;

	p = mmap(NULL, n + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE |
	    MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* on a 2 MiB boundary, the slack before and after given back */
	a = (uint8_t *)(((uintptr_t)p + huge - 1) & ~(huge - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + n < p + n + huge)
		munmap(a + n, (size_t)(p + n + huge - (a + n)));
#ifdef MADV_HUGEPAGE
	small = (small + huge - 1) & ~(huge - 1);
	if (small < n)
		(void)madvise(a + small, n - small, MADV_HUGEPAGE);
#endif
	return a;
}

void
ist_unmap_huge(void *p, size_t n)
{
	if (p)
		munmap(p, n);
}

int
ist_buf_reserve(struct ist_buf *b, size_t extra)
{
	size_t cap;
	char *p;

	if (b->cap - b->n >= extra)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap - b->n < extra) {
		if (cap > SIZE_MAX / 2)
			return ENOMEM;
		cap *= 2;
	}
	if ((p = realloc(b->p, cap)) == NULL)
		return ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int
ist_buf_append(struct ist_buf *b, const void *p, size_t n)
{
	if (ist_buf_reserve(b, n + 1))
		return ENOMEM;
	if (n)          /* an empty string may come without a pointer */
		memcpy(b->p + b->n, p, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

int
ist_buf_printf(struct ist_buf *b, const char *fmt, ...)
{
	size_t room = b->cap - b->n;
	va_list ap;
	int len;

	/* once into the room there is; again only when it did not fit */
	va_start(ap, fmt);
	len = vsnprintf(room ? b->p + b->n : NULL, room, fmt, ap);
	va_end(ap);
	if (len < 0)
		return ENOMEM;
	if ((size_t)len >= room) {
		if (ist_buf_reserve(b, (size_t)len + 1))
			return ENOMEM;
		va_start(ap, fmt);
		vsnprintf(b->p + b->n, (size_t)len + 1, fmt, ap);
		va_end(ap);
	}
	b->n += (size_t)len;
	return 0;
}

int
ist_buf_puts(struct ist_buf *b, const char *s)
{
	return ist_buf_append(b, s, strlen(s));
}

const char ist_digit_pairs[200] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

int
ist_buf_int(struct ist_buf *b, int64_t v)
{
	if (ist_buf_reserve(b, 21))      /* "-9223372036854775808" and NUL */
		return ENOMEM;
	b->n = (size_t)(ist_put_int(b->p + b->n, v) - b->p);
	b->p[b->n] = '\0';
	return 0;
}

void
ist_buf_release(struct ist_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->n = b->cap = 0;
}

void
ist_fmt_double(double d, char *out, size_t cap)
{
	char sci[40];
	int prec, exp;

	if (!isfinite(d)) {
		snprintf(out, cap, "null");
		return;
	}
	/* the shortest digits that read back exactly, then fixed notation
	 * for moderate exponents (as Python's repr does) */
	for (prec = 1; prec <= 17; prec++) {
		snprintf(sci, sizeof(sci), "%.*e", prec - 1, d);
		if (strtod(sci, NULL) == d)
			break;
	}
	exp = atoi(strchr(sci, 'e') + 1);
	if (exp >= -5 && exp < 17) {
		snprintf(out, cap, "%.*f", prec - 1 - exp > 0 ?
		    prec - 1 - exp : 0, d);
		if (strchr(out, '.') == NULL && strlen(out) + 3 <= cap)
			strcat(out, ".0");
	} else {
		snprintf(out, cap, "%s", sci);
	}
}

int
ist_gc_generation(const char *s, size_t n)
{
	static const char pre[] = "gc (generation ";
	size_t k = sizeof(pre) - 1, i;
	int g = 0;

	/* one or two digits: CPython has three generations */
	if (n < k + 2 || n > k + 3 || memcmp(s, pre, k) != 0 ||
	    s[n - 1] != ')')
		return -1;
	for (i = k; i < n - 1; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		g = g * 10 + (s[i] - '0');
	}
	return g;
}

struct ist_plan ist_plans[IST_NTYPES];
static pthread_once_t plans_once = PTHREAD_ONCE_INIT;

static void
make_plans(void)
{
	for (int t = 0; t < IST_NTYPES; t++) {
		const struct ist_typespec *ts = &ist_types[t];
		struct ist_plan *p = &ist_plans[t];

		p->base = 1 + (ts->has_track ? 1 : 0) +
		    (ts->time == TS_RANGE ? 2 : ts->time == TS_INSTANT ? 1 : 0);
		for (int i = 0; i < ts->nfields; i++) {
			const struct ist_fieldspec *fs = &ts->fields[i];
			if (fs->required)
				p->req |= (uint64_t)1 << fs->id;
			if (fs->role == R_TRACK)
				p->tmask |= (uint64_t)1 << fs->id;
			if (fs->role == R_TRACK && fs->required)
				p->treq |= 1u << fs->id;
			if (fs->role != R_PAYLOAD || p->npay == IST_MAX_PAYLOAD)
				continue;
			p->pay[p->npay++] = fs;
			if (fs->required)
				p->nreq = p->npay;
			if (fs->ft == FT_VALUE || fs->ft == FT_OBJECT)
				p->blobs = true;
		}
	}
}

void
ist_plans_init(void)
{
	pthread_once(&plans_once, make_plans);
}
