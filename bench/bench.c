/*
 * bench.c - trace format benchmark (make bench).
 *
 * Generates deterministic synthetic event streams, encodes them with the
 * library (in memory), decodes them back, and writes the same events as
 * Chrome trace-event JSON, raw and through zstd -3, as the peer.  Prints
 * bytes/event and events/s (one core: this program is single-threaded).
 *
 * usage: bench [-J] [-n EVENTS] [-m MIX] [-o FILE]
 *        bench -F TRACE
 *   -m  one mix: realistic, calls, kernels, counters, unique (default: all;
 *       the others get a tenth of the events)
 *   -J  skip the JSON peer;  -o  save the realistic trace to FILE
 *   -F  the floor libcbor sets for any reader of TRACE: its streaming
 *       decoder alone over the trace's records (decompressed beforehand),
 *       callbacks that keep one value, beside our reader on one core
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fcntl.h>
#include <unistd.h>

#include <cbor.h>
#include <zstd.h>

#include "ist.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int64_t pid_base = 4242;     /* -s: another process, another seed */

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double
unif(void)
{
	return (double)(next() >> 11) / 9007199254740992.0;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum mix { MIX_REALISTIC, MIX_CALLS, MIX_KERNELS, MIX_COUNTERS, MIX_UNIQUE };
static const char *mix_names[] = {
	"realistic", "calls", "kernels", "counters", "unique"
};

#define NPYNAMES 2000
#define NKNAMES 300
static char pynames[NPYNAMES][64], pyfiles[64][64], knames[NKNAMES][96];
static char uniq[96];

struct gen {
	enum mix mix;
	uint64_t i;
	int64_t tcpu[4], tgpu[4], counter_t;
	int64_t corr;
	struct ist_event ev;
};

static void
setup_names(void)
{
	static const char *mods[] = { "torch.nn.modules", "transformers.models",
	    "numpy.core", "app.tokenizer", "app.server", "tokenizers" };
	for (int i = 0; i < NPYNAMES; i++)
		snprintf(pynames[i], sizeof(pynames[i]), "%s.%s_%d.%s",
		    mods[i % 6], i % 3 ? "Layer" : "util", i / 6,
		    i % 5 ? "forward" : "__call__");
	for (int i = 0; i < 64; i++)
		snprintf(pyfiles[i], sizeof(pyfiles[i]),
		    "/usr/lib/python3/dist-packages/pkg/mod_%d.py", i);
	for (int i = 0; i < NKNAMES; i++)
		snprintf(knames[i], sizeof(knames[i]),
		    "void at::native::elementwise_kernel<%d, %d>(int, "
		    "at::native::Op_%d)", 128 << (i % 3), i % 7, i);
}

/* a skewed pick: a few names are hot, most are rare */
static int
zipf(int n)
{
	double u = unif();
	return (int)((double)n * u * u * u) % n;
}

static const struct ist_event *
gen_next(struct gen *g)
{
	struct ist_event *ev = &g->ev;
	double u = unif();
	int th = (int)(next() % 4), st = (int)(next() % 4);
	int kind;

	switch (g->mix) {
	case MIX_CALLS: kind = 0; break;
	case MIX_KERNELS: kind = 1; break;
	case MIX_COUNTERS: kind = 4; break;
	case MIX_UNIQUE: kind = 5; break;
	default:
		kind = u < 0.70 ? 0 : u < 0.82 ? 1 : u < 0.90 ? 2 :
		    u < 0.94 ? 3 : u < 0.98 ? 4 : 6;
	}
	ist_event_init(ev, IST_CPU_CALL);
	ev->has = 0;
	IST_SET(ev, IST_F_PID);
	ev->pid = pid_base;
	switch (kind) {
	case 0:   /* python call */
	case 5: { /* python call, every name new */
		int n = zipf(NPYNAMES);
		int64_t dur = (int64_t)exp(4.0 + 8.0 * unif());
		ev->type = IST_CPU_CALL;
		ev->tid = pid_base + th;
		IST_SET(ev, IST_F_TID);
		if (kind == 5) {
			snprintf(uniq, sizeof(uniq), "fn_%" PRIu64 "_%08"
			    PRIx64, g->i, next());
			ev->name = (struct ist_str){ uniq, strlen(uniq) };
		} else {
			ev->name = (struct ist_str){ pynames[n],
			    strlen(pynames[n]) };
		}
		ev->file = (struct ist_str){ pyfiles[n % 64],
		    strlen(pyfiles[n % 64]) };
		ev->line = 10 + n % 900;
		g->tcpu[th] += 200 + (int64_t)(next() % 3000);
		ev->start_ns = g->tcpu[th];
		ev->end_ns = ev->start_ns + dur;
		IST_SET(ev, IST_F_NAME);
		IST_SET(ev, IST_F_FILE);
		IST_SET(ev, IST_F_LINE);
		IST_SET(ev, IST_F_START);
		IST_SET(ev, IST_F_END);
		break;
	}
	case 1: { /* kernel */
		int n = zipf(NKNAMES);
		ev->type = IST_GPU_KERNEL;
		ev->device = 0;
		ev->stream = 7 + st;
		g->tgpu[st] += 1000 + (int64_t)(next() % 20000);
		ev->start_ns = g->tgpu[st];
		ev->end_ns = ev->start_ns + 2000 + (int64_t)(next() % 200000);
		ev->name = (struct ist_str){ knames[n], strlen(knames[n]) };
		ev->correlation = ++g->corr;
		ev->grid[0] = 1 << (n % 12); ev->grid[1] = 1; ev->grid[2] = 1;
		ev->block[0] = 128 << (n % 3); ev->block[1] = 1;
		ev->block[2] = 1;
		ev->has |= 1u << IST_F_DEVICE | 1u << IST_F_STREAM |
		    1u << IST_F_START | 1u << IST_F_END | 1u << IST_F_NAME |
		    1u << IST_F_CORRELATION | 1u << IST_F_GRID |
		    1u << IST_F_BLOCK;
		break;
	}
	case 2: /* launch call */
		ev->type = IST_CUDA_API;
		ev->tid = pid_base + th;
		g->tcpu[th] += 300 + (int64_t)(next() % 2000);
		ev->start_ns = g->tcpu[th];
		ev->end_ns = ev->start_ns + 2000 + (int64_t)(next() % 5000);
		ev->name = (struct ist_str){ "cudaLaunchKernel", 16 };
		ev->correlation = ++g->corr;
		ev->has |= 1u << IST_F_TID | 1u << IST_F_START | 1u << IST_F_END |
		    1u << IST_F_NAME | 1u << IST_F_CORRELATION;
		break;
	case 3: /* copy */
		ev->type = next() % 2 ? IST_H2D_COPY : IST_D2H_COPY;
		ev->device = 0;
		ev->stream = 7 + st;
		g->tgpu[st] += 1000 + (int64_t)(next() % 20000);
		ev->start_ns = g->tgpu[st];
		ev->end_ns = ev->start_ns + 5000 + (int64_t)(next() % 500000);
		ev->bytes = (int64_t)(4096u << (next() % 12));
		ev->pageable = next() % 3 == 0;
		ev->correlation = ++g->corr;
		ev->has |= 1u << IST_F_DEVICE | 1u << IST_F_STREAM |
		    1u << IST_F_START | 1u << IST_F_END | 1u << IST_F_BYTES |
		    1u << IST_F_PAGEABLE | 1u << IST_F_CORRELATION;
		break;
	case 4: { /* counter */
		static const char *cn[] = { "rss_bytes", "cpu_time_ns",
		    "ctx_switches", "gpu_mem_bytes" };
		int c = (int)(next() % 4);
		ev->type = IST_COUNTER;
		g->counter_t += 10000000 / 4;
		ev->ts_ns = g->counter_t;
		ev->name = (struct ist_str){ cn[c], strlen(cn[c]) };
		ev->value_is_int = true;
		ev->ivalue = (int64_t)(1000000000 + (next() % 1000000));
		ev->has |= 1u << IST_F_TS | 1u << IST_F_NAME |
		    1u << IST_F_VALUE;
		break;
	}
	default: /* scope */
		ev->type = IST_SCOPE;
		ev->tid = pid_base + th;
		g->tcpu[th] += 1000;
		ev->start_ns = g->tcpu[th];
		ev->end_ns = ev->start_ns + 1000000 + (int64_t)(next() % 9000000);
		ev->name = (struct ist_str){ "inference", 9 };
		ev->has |= 1u << IST_F_TID | 1u << IST_F_START | 1u << IST_F_END |
		    1u << IST_F_NAME;
		break;
	}
	g->i++;
	return ev;
}

static void
json_event(struct ist_buf *b, const struct ist_event *ev)
{
	double ts = (double)(ev->type == IST_COUNTER ? ev->ts_ns :
	    ev->start_ns) / 1000.0;
	double dur = (double)(ev->end_ns - ev->start_ns) / 1000.0;

	switch (ev->type) {
	case IST_CPU_CALL:
		ist_buf_printf(b, "{\"name\":\"%.*s\",\"cat\":\"python\","
		    "\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%" PRId64
		    ",\"tid\":%" PRId64 ",\"args\":{\"file\":\"%.*s\","
		    "\"line\":%" PRId64 "}},\n", (int)ev->name.n, ev->name.p,
		    ts, dur, ev->pid, ev->tid, (int)ev->file.n, ev->file.p,
		    ev->line);
		break;
	case IST_GPU_KERNEL:
		ist_buf_printf(b, "{\"name\":\"%.*s\",\"cat\":\"kernel\","
		    "\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%" PRId64
		    ",\"tid\":\"stream %" PRId64 "\",\"args\":{\"correlation\":%"
		    PRId64 ",\"grid\":[%" PRId64 ",%" PRId64 ",%" PRId64 "],"
		    "\"block\":[%" PRId64 ",%" PRId64 ",%" PRId64 "]}},\n",
		    (int)ev->name.n, ev->name.p, ts, dur, ev->pid, ev->stream,
		    ev->correlation, ev->grid[0], ev->grid[1], ev->grid[2],
		    ev->block[0], ev->block[1], ev->block[2]);
		break;
	case IST_CUDA_API:
		ist_buf_printf(b, "{\"name\":\"%.*s\",\"cat\":\"cuda_runtime\","
		    "\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%" PRId64
		    ",\"tid\":%" PRId64 ",\"args\":{\"correlation\":%" PRId64
		    "}},\n", (int)ev->name.n, ev->name.p, ts, dur, ev->pid,
		    ev->tid, ev->correlation);
		break;
	case IST_H2D_COPY:
	case IST_D2H_COPY:
		ist_buf_printf(b, "{\"name\":\"%s\",\"cat\":\"gpu_memcpy\","
		    "\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%" PRId64
		    ",\"tid\":\"stream %" PRId64 "\",\"args\":{\"bytes\":%" PRId64
		    ",\"pageable\":%s,\"correlation\":%" PRId64 "}},\n",
		    ev->type == IST_H2D_COPY ? "Memcpy HtoD" : "Memcpy DtoH",
		    ts, dur, ev->pid, ev->stream, ev->bytes,
		    ev->pageable ? "true" : "false", ev->correlation);
		break;
	case IST_COUNTER:
		ist_buf_printf(b, "{\"name\":\"%.*s\",\"ph\":\"C\",\"ts\":%.3f,"
		    "\"pid\":%" PRId64 ",\"args\":{\"value\":%" PRId64 "}},\n",
		    (int)ev->name.n, ev->name.p, ts, ev->pid, ev->ivalue);
		break;
	default:
		ist_buf_printf(b, "{\"name\":\"%.*s\",\"cat\":\"scope\","
		    "\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%" PRId64
		    ",\"tid\":%" PRId64 "},\n", (int)ev->name.n, ev->name.p,
		    ts, dur, ev->pid, ev->tid);
		break;
	}
}

static int
mem_sink(void *ctx, const void *buf, size_t n)
{
	return ist_buf_append(ctx, buf, n) ? 12 : 0;
}

struct memsrc {
	const char *p;
	size_t n, pos;
};

static long
mem_source(void *ctx, void *buf, size_t n)
{
	struct memsrc *m = ctx;
	size_t k = m->n - m->pos < n ? m->n - m->pos : n;

	memcpy(buf, m->p + m->pos, k);
	m->pos += k;
	return (long)k;
}

static int skip_peer;
static const char *save_path;

static void
run(enum mix mix, uint64_t nev)
{
	struct gen g = { .mix = mix };
	struct ist_buf trace = { 0 }, json = { 0 };
	struct ist_writer *w;
	struct ist_reader *r;
	struct ist_error e;
	struct ist_event hdr;
	const struct ist_event *ev;
	ZSTD_CCtx *z = ZSTD_createCCtx();
	uint64_t jraw = 0, jz = 0, n = 0;
	static char zout[1 << 17];
	double t0, tenc, tdec, tgen;

	/* generation alone, subtracted from the encode time */
	rng = 0x9e3779b97f4a7c15ull;
	t0 = now();
	for (uint64_t i = 0; i < nev; i++)
		gen_next(&g);
	tgen = now() - t0;
	rng = 0x9e3779b97f4a7c15ull;
	g = (struct gen){ .mix = mix };
	ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, 3);
	ist_event_init(&hdr, IST_HEADER);
	if (ist_writer_new(&w, mem_sink, &trace, NULL, &e) != IST_OK ||
	    ist_writer_header(w, &hdr, &e) != IST_OK)
		abort();
	/* encode (timed: generation is cheap next to it, and included) */
	t0 = now();
	for (uint64_t i = 0; i < nev; i++)
		if (ist_writer_write(w, gen_next(&g), &e) != IST_OK) {
			fprintf(stderr, "bench: %s\n", e.msg);
			exit(1);
		}
	if (ist_writer_close(w, &e) != IST_OK)
		abort();
	tenc = now() - t0 - tgen;
	/* decode */
	struct memsrc m = { trace.p, trace.n, 0 };
	if (ist_reader_new(&r, mem_source, &m, "bench", &e) != IST_OK)
		abort();
	t0 = now();
	while (ist_reader_next(r, &ev, &e) == IST_OK)
		n++;
	tdec = now() - t0;
	ist_reader_free(r);
	if (save_path && mix == MIX_REALISTIC) {
		FILE *f = fopen(save_path, "wb");
		if (f == NULL || fwrite(trace.p, 1, trace.n, f) != trace.n ||
		    fclose(f) != 0) {
			perror(save_path);
			exit(1);
		}
	}
	if (n != nev + 1) {
		fprintf(stderr, "bench: decoded %" PRIu64 " of %" PRIu64 "\n",
		    n, nev + 1);
		exit(1);
	}
	/* the peer: Chrome trace-event JSON, raw and zstd -3 */
	rng = 0x9e3779b97f4a7c15ull;
	g = (struct gen){ .mix = mix };
	ist_buf_printf(&json, "{\"traceEvents\":[\n");
	for (uint64_t i = 0; i <= nev && !skip_peer; i++) {
		if (i < nev)
			json_event(&json, gen_next(&g));
		else
			ist_buf_printf(&json, "{}]}\n");
		if (json.n >= (1u << 20) || i == nev) {
			ZSTD_inBuffer in = { json.p, json.n, 0 };
			ZSTD_EndDirective end = i == nev ? ZSTD_e_end :
			    ZSTD_e_continue;
			size_t left;
			do {
				ZSTD_outBuffer out = { zout, sizeof(zout), 0 };
				left = ZSTD_compressStream2(z, &out, &in, end);
				jz += out.pos;
			} while (in.pos < in.size || (end == ZSTD_e_end &&
			    left != 0));
			jraw += json.n;
			json.n = 0;
		}
	}
	printf("%-10s %10" PRIu64 " %8.2f %9.2f %9.2f %6.2f %9.2f %9.2f\n",
	    mix_names[mix], nev, (double)trace.n / (double)nev,
	    (double)jraw / (double)nev, (double)jz / (double)nev,
	    (double)trace.n / (double)jz, (double)nev / tenc / 1e6,
	    (double)nev / tdec / 1e6);
	fflush(stdout);
	ZSTD_freeCCtx(z);
	ist_buf_release(&trace);
	ist_buf_release(&json);
}

/* ---- -F: what libcbor's streaming decoder alone costs ---- */

struct frames {
	uint8_t *p;
	size_t n, cap;
};

static void
keep_frame(void *ctx, const uint8_t *p, size_t n)
{
	struct frames *f = ctx;

	if (f->n + n > f->cap) {
		f->cap = (f->n + n) * 2;
		if ((f->p = realloc(f->p, f->cap)) == NULL) {
			perror("bench");
			exit(1);
		}
	}
	memcpy(f->p + f->n, p, n);
	f->n += n;
}

/* the least a decoder's callbacks can do: keep the item's value */
static void fl_u8(void *c, uint8_t v) { *(uint64_t *)c = v; }
static void fl_u16(void *c, uint16_t v) { *(uint64_t *)c = v; }
static void fl_u32(void *c, uint32_t v) { *(uint64_t *)c = v; }
static void fl_u64(void *c, uint64_t v) { *(uint64_t *)c = v; }
static void
fl_str(void *c, cbor_data p, uint64_t n)
{
	(void)p;
	*(uint64_t *)c = n;
}
static void fl_len(void *c, uint64_t n) { *(uint64_t *)c = n; }
static void fl_f4(void *c, float d) { *(uint64_t *)c = (uint64_t)d; }
static void fl_f8(void *c, double d) { *(uint64_t *)c = (uint64_t)d; }
static void fl_none(void *c) { *(uint64_t *)c = 0; }
static void fl_bool(void *c, bool b) { *(uint64_t *)c = b; }

static const struct cbor_callbacks floor_cb = {
	.uint8 = fl_u8, .uint16 = fl_u16, .uint32 = fl_u32, .uint64 = fl_u64,
	.negint8 = fl_u8, .negint16 = fl_u16, .negint32 = fl_u32,
	.negint64 = fl_u64, .byte_string = fl_str, .string = fl_str,
	.array_start = fl_len, .map_start = fl_len, .tag = fl_u64,
	.float2 = fl_f4, .float4 = fl_f4, .float8 = fl_f8, .null = fl_none,
	.undefined = fl_none, .boolean = fl_bool,
	.byte_string_start = fl_none, .string_start = fl_none,
	.indef_array_start = fl_none, .indef_map_start = fl_none,
	.indef_break = fl_none,
};

static int
cbor_floor(const char *path)
{
	struct frames f = { 0 };
	struct ist_reader *r;
	struct ist_error e = { 0 };
	const struct ist_event *ev;
	enum ist_status st;
	uint64_t records = 0, items = 0;
	volatile uint64_t sink = 0;
	double best = 0, ours = 0;
	int fd;

	for (int round = 0; round < 3; round++) {
		uint64_t n = 0;
		double t;
		if ((fd = open(path, O_RDONLY)) < 0 ||
		    ist_reader_new(&r, ist_fd_source, &fd, path, &e) !=
		    IST_OK) {
			perror(path);
			return 1;
		}
		if (round == 0)
			ist_reader_on_frame(r, keep_frame, &f);
		t = now();
		while ((st = ist_reader_next(r, &ev, &e)) == IST_OK)
			n += ev->type != IST_HEADER;
		t = now() - t;
		ist_reader_free(r);
		close(fd);
		if (st != IST_END) {
			fprintf(stderr, "bench: %s\n", e.msg);
			return 1;
		}
		if (round == 0 || t < ours)
			ours = t;
		records = n;
	}
	for (int round = 0; round < 3; round++) {
		size_t pos = 0;
		uint64_t k = 0, v = 0;
		double t = now();
		while (pos < f.n) {
			struct cbor_decoder_result d = cbor_stream_decode(
			    f.p + pos, f.n - pos, &floor_cb, &v);
			if (d.status != CBOR_DECODER_FINISHED)
				break;
			pos += d.read;
			sink += v;
			k++;
		}
		t = now() - t;
		if (round == 0 || t < best)
			best = t;
		items = k;
	}
	printf("libcbor's streaming decoder alone over the %" PRIu64
	    " events (%zu bytes decompressed): %.1f items an event (string "
	    "definitions included), %.1f ns an item, %.2f M events/s on one "
	    "core (our reader, on one core, decompressing and decoding: %.2f M "
	    "events/s)\n", records, f.n,
	    (double)items / (double)records, best * 1e9 / (double)items,
	    (double)records / best / 1e6, (double)records / ours / 1e6);
	free(f.p);
	return 0;
}

int
main(int argc, char **argv)
{
	uint64_t nev = 10000000;
	int c, only = -1;

	while ((c = getopt(argc, argv, "F:Jn:m:o:s:")) != -1) {
		switch (c) {
		case 'F':
			return cbor_floor(optarg);
		case 's':
			pid_base = 4242 + strtoll(optarg, NULL, 10);
			rng ^= (uint64_t)(pid_base - 4242) *
			    0xbf58476d1ce4e5b9ull;
			if (rng == 0)
				rng = 1;
			break;
		case 'J':
			skip_peer = 1;
			break;
		case 'o':
			save_path = optarg;
			break;
		case 'n':
			nev = strtoull(optarg, NULL, 10);
			break;
		case 'm':
			for (int i = 0; i <= MIX_UNIQUE; i++)
				if (strcmp(optarg, mix_names[i]) == 0)
					only = i;
			break;
		default:
			fprintf(stderr, "usage: bench [-J] [-n events] [-m mix] "
			    "[-o file] [-s stream]\n       bench -F trace\n");
			return 2;
		}
	}
	setup_names();
	printf("trace format benchmark: %" PRIu64 " events per mix, one core\n"
	    "peer: the same events as Chrome trace-event JSON (raw; zstd -3)\n"
	    "targets: ours <= JSON+zstd-3 on every mix, <= 0.5x on realistic;"
	    " decode >= 5 M/s, encode >= 3 M/s\n\n", nev);
	printf("%-10s %10s %8s %9s %9s %6s %9s %9s\n", "mix", "events",
	    "ours B/ev", "json B/ev", "json.zst", "ratio", "enc M/s",
	    "dec M/s");
	for (int i = 0; i <= MIX_UNIQUE; i++)
		if (only < 0 || only == i)
			run((enum mix)i, i == MIX_REALISTIC || only == i ? nev :
			    nev / 10);
	return 0;
}
