/* test_trace.c - unit tests of the trace library (TAP). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <zstd.h>

#include "internal.h"
#include "ist.h"
#include "tap.h"

struct mem {
	struct ist_buf b;
	size_t frames[4096];    /* end offset of each frame */
	int nframes;
	int fail_errno;
};

static int
sink(void *ctx, const void *p, size_t n)
{
	struct mem *m = ctx;

	if (m->fail_errno)
		return m->fail_errno;
	if (ist_buf_append(&m->b, p, n))
		return ENOMEM;
	if (m->nframes < 4096)
		m->frames[m->nframes++] = m->b.n;
	return 0;
}

struct src {
	const char *p;
	size_t n, pos, chunk;
};

static long
source(void *ctx, void *buf, size_t n)
{
	struct src *s = ctx;
	size_t k = s->n - s->pos;

	if (k > n)
		k = n;
	if (s->chunk && k > s->chunk)
		k = s->chunk;
	memcpy(buf, s->p + s->pos, k);
	s->pos += k;
	return (long)k;
}

/* Decodes p[0..n) in chunks to JSON Lines; returns the final status. */
static enum ist_status
decode(const char *p, size_t n, size_t chunk, struct ist_buf *out,
    struct ist_error *e, int *events)
{
	struct src s = { p, n, 0, chunk };
	struct ist_reader *r;
	const struct ist_event *ev;
	enum ist_status st;

	*events = 0;
	if (ist_reader_new(&r, source, &s, "mem", e) != IST_OK)
		return IST_ENOMEM;
	while ((st = ist_reader_next(r, &ev, e)) == IST_OK) {
		ist_event_to_json(ev, out, e);
		(*events)++;
	}
	ist_reader_free(r);
	return st;
}

static struct ist_str
S(const char *s)
{
	return (struct ist_str){ s, strlen(s) };
}

#define SET(ev, f) IST_SET(ev, IST_F_##f)

/* n events, by ist_writer_write; or, shift >= 0, by ist_writer_write_from
 * with the source ids a reader would give (shift: which id each name has,
 * as another segment numbers them) */
static void
write_sample_from(struct ist_writer *w, int n, int shift)
{
	struct ist_error e;
	struct ist_event ev;
	uint32_t src[IST_NFIELDS] = { 0 };
	char name[32];

	for (int i = 0; i < n; i++) {
		ist_event_init(&ev, IST_CPU_CALL);
		ev.pid = 10;
		ev.tid = 10 + i % 3;
		snprintf(name, sizeof(name), "fn_%d", i % 17);
		ev.name = S(name);
		src[IST_F_NAME] = (uint32_t)((i + shift) % 17) + 1;
		ev.start_ns = 1000000 + i * 1000;
		ev.end_ns = ev.start_ns + 500 + i;
		SET(&ev, PID); SET(&ev, TID); SET(&ev, NAME);
		SET(&ev, START); SET(&ev, END);
		if ((shift < 0 ? ist_writer_write(w, &ev, &e) :
		    ist_writer_write_from(w, &ev, src, &e)) != IST_OK)
			abort();
	}
}

static void
write_sample(struct ist_writer *w, int n)
{
	write_sample_from(w, n, -1);
}

static void
test_fields(void)
{
	struct mem m = { 0 };
	struct ist_writer *w;
	struct ist_reader *r;
	struct ist_error e;
	struct ist_event h, ev;
	const struct ist_event *got;
	struct src s;
	static const uint8_t meta[] = { 0xa1, 0x61, 'k', 0x18, 42 };

	ist_writer_new(&w, sink, &m, NULL, &e);
	ist_event_init(&h, IST_HEADER);
	h.host = S("box");
	SET(&h, HOST);
	ok(ist_writer_header(w, &h, &e) == IST_OK, "header written");

	ist_event_init(&ev, IST_GPU_KERNEL);
	ev.pid = 5; ev.device = 1; ev.stream = 13;
	ev.name = S("gemm"); ev.start_ns = 100; ev.end_ns = 350;
	ev.correlation = 99;
	ev.grid[0] = 4; ev.grid[1] = 2; ev.grid[2] = 1;
	ev.block[0] = 256; ev.block[1] = 1; ev.block[2] = 1;
	SET(&ev, PID); SET(&ev, DEVICE); SET(&ev, STREAM); SET(&ev, NAME);
	SET(&ev, START); SET(&ev, END); SET(&ev, CORRELATION);
	SET(&ev, GRID); SET(&ev, BLOCK);
	ok(ist_writer_write(w, &ev, &e) == IST_OK, "kernel written");

	ist_event_init(&ev, IST_H2D_COPY);
	ev.pid = 5; ev.device = 1; ev.stream = 13; ev.bytes = 1 << 20;
	ev.pageable = true; ev.start_ns = 400; ev.end_ns = 900;
	SET(&ev, PID); SET(&ev, DEVICE); SET(&ev, STREAM); SET(&ev, BYTES);
	SET(&ev, PAGEABLE); SET(&ev, START); SET(&ev, END);
	ok(ist_writer_write(w, &ev, &e) == IST_OK, "pageable copy written");

	ist_event_init(&ev, IST_INSTANT);
	ev.pid = 5; ev.tid = 6; ev.name = S("mark"); ev.ts_ns = -3;
	ev.metadata = (struct ist_blob){ meta, sizeof(meta) };
	SET(&ev, PID); SET(&ev, TID); SET(&ev, NAME); SET(&ev, TS);
	SET(&ev, METADATA);
	ok(ist_writer_write(w, &ev, &e) == IST_OK, "instant written");

	ist_event_init(&ev, IST_COUNTER);
	ev.pid = 5; ev.name = S("util"); ev.ts_ns = 7; ev.value = 0.75;
	SET(&ev, PID); SET(&ev, NAME); SET(&ev, TS); SET(&ev, VALUE);
	ok(ist_writer_write(w, &ev, &e) == IST_OK, "counter written");
	ok(ist_writer_close(w, &e) == IST_OK, "writer closed");
	ok(m.nframes == 1, "one frame (got %d)", m.nframes);

	s = (struct src){ m.b.p, m.b.n, 0, 0 };
	ist_reader_new(&r, source, &s, "mem", &e);
	ok(ist_reader_next(r, &got, &e) == IST_OK && got->type == IST_HEADER &&
	    got->version_major == 1 && got->host.n == 3 &&
	    memcmp(got->host.p, "box", 3) == 0, "header read back");
	ok(ist_reader_next(r, &got, &e) == IST_OK &&
	    got->type == IST_GPU_KERNEL && got->pid == 5 && got->device == 1 &&
	    got->stream == 13 && got->start_ns == 100 && got->end_ns == 350 &&
	    got->correlation == 99 && got->grid[0] == 4 && got->grid[1] == 2 &&
	    got->block[0] == 256 && !IST_HAS(got, IST_F_TID) &&
	    got->name.n == 4 && memcmp(got->name.p, "gemm", 4) == 0,
	    "kernel fields read back");
	ok(ist_reader_next(r, &got, &e) == IST_OK &&
	    got->type == IST_H2D_COPY && got->bytes == 1 << 20 &&
	    got->pageable && IST_HAS(got, IST_F_PAGEABLE) &&
	    !IST_HAS(got, IST_F_CORRELATION) && got->start_ns == 400 &&
	    got->end_ns == 900, "copy fields read back, absent correlation");
	ok(ist_reader_next(r, &got, &e) == IST_OK &&
	    got->type == IST_INSTANT && got->ts_ns == -3 &&
	    got->metadata.n == sizeof(meta) &&
	    memcmp(got->metadata.p, meta, sizeof(meta)) == 0,
	    "instant metadata read back byte for byte");
	ok(ist_reader_next(r, &got, &e) == IST_OK &&
	    got->type == IST_COUNTER && !got->value_is_int &&
	    got->value == 0.75 && !IST_HAS(got, IST_F_TID),
	    "counter value read back");
	ok(ist_reader_next(r, &got, &e) == IST_END, "then the end");
	ok(ist_reader_next(r, &got, &e) == IST_END, "and the end again");
	ist_reader_free(r);
	ist_buf_release(&m.b);
}

static void
test_chunks_and_truncation(void)
{
	struct mem m = { 0 };
	struct ist_writer *w;
	struct ist_writer_opts o = { .frame_bytes = 300 };
	struct ist_error e;
	struct ist_event h;
	struct ist_buf full = { 0 };
	int nfull, bad = 0, lost_too_much = 0;
	enum ist_status st0;
	static const size_t chunks[] = { 1, 2, 3, 7, 64, 4096 };

	ist_writer_new(&w, sink, &m, &o, &e);
	ist_event_init(&h, IST_HEADER);
	ist_writer_header(w, &h, &e);
	write_sample(w, 200);
	ist_writer_close(w, &e);
	ok(m.nframes > 5, "small frames: %d frames", m.nframes);
	st0 = decode(m.b.p, m.b.n, 0, &full, &e, &nfull);
	ok(st0 == IST_END && nfull == 201, "all 200 events and the header decoded (%d)", nfull);
	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		struct ist_buf out = { 0 };
		int n;
		enum ist_status st = decode(m.b.p, m.b.n, chunks[c], &out, &e,
		    &n);
		ok(st == IST_END && out.n == full.n &&
		    memcmp(out.p, full.p, full.n) == 0,
		    "read %zu bytes at a time: same records", chunks[c]);
		ist_buf_release(&out);
	}
	/* cut the trace at every byte: at most the last frame is lost */
	for (size_t cut = 1; cut < m.b.n; cut++) {
		struct ist_buf out = { 0 };
		int n, f = 0;
		enum ist_status st = decode(m.b.p, cut, 0, &out, &e, &n);
		bool boundary = false;
		size_t whole = 0;

		for (f = 0; f < m.nframes; f++) {
			if (m.frames[f] == cut)
				boundary = true;
			if (m.frames[f] <= cut)
				whole = m.frames[f];
		}
		if (boundary ? st != IST_END : st != IST_TRUNCATED) {
			if (bad++ == 0)
				printf("# cut %zu: status %d: %s\n", cut, st,
				    e.msg);
		}
		/* what was decoded is a prefix of the full output */
		if (out.n > full.n || (out.n && memcmp(out.p, full.p, out.n))) {
			if (bad++ == 0)
				printf("# cut %zu: not a prefix\n", cut);
		}
		/* every whole frame before the cut was decoded */
		{
			struct ist_buf pre = { 0 };
			struct ist_error pe;
			int np;
			decode(m.b.p, whole, 0, &pre, &pe, &np);
			if (n < np)
				lost_too_much++;
			ist_buf_release(&pre);
		}
		/* nothing of the cut frame, or its whole blocks' records */
		if (!boundary && st == IST_TRUNCATED &&
		    strstr(e.msg, "truncated: last") == NULL &&
		    strstr(e.msg, "truncated: its last frame") == NULL) {
			if (bad++ == 0)
				printf("# cut %zu: %s\n", cut, e.msg);
		}
		ist_buf_release(&out);
	}
	ok(bad == 0, "every cut: truncation reported, records a prefix");
	ok(lost_too_much == 0, "every cut: no whole frame lost");
	ist_buf_release(&full);
	ist_buf_release(&m.b);
}

/*
 * A writer that compresses in the background writes the bytes a plain one
 * does, frame for frame, and tells a write error by its next flush or its
 * close.
 */
static void
test_writer_background(void)
{
	struct mem a = { 0 }, b = { 0 }, f = { 0 };
	struct ist_writer *w;
	struct ist_writer_opts o = { .frame_bytes = 300 };
	struct ist_error e = { 0 };
	struct ist_event h;
	enum ist_status st;

	ist_event_init(&h, IST_HEADER);
	ist_writer_new(&w, sink, &a, &o, &e);
	ist_writer_header(w, &h, &e);
	write_sample(w, 3000);
	ist_writer_close(w, &e);
	o.background = true;
	ist_writer_new(&w, sink, &b, &o, &e);
	ist_writer_header(w, &h, &e);
	write_sample(w, 3000);
	st = ist_writer_close(w, &e);
	ok(st == IST_OK && a.nframes > 100 && b.nframes == a.nframes &&
	    b.b.n == a.b.n && memcmp(a.b.p, b.b.p, a.b.n) == 0 &&
	    memcmp(a.frames, b.frames, sizeof(a.frames[0]) * a.nframes) == 0,
	    "in the background: the same %d frames, byte for byte", b.nframes);
	f.fail_errno = ENOSPC;
	ist_writer_new(&w, sink, &f, &o, &e);
	ist_writer_header(w, &h, &e);
	write_sample(w, 10);
	ist_writer_flush(w, &e);     /* handed on: its error comes later */
	st = ist_writer_close(w, &e);
	ok(st == IST_EIO && e.sys_errno == ENOSPC && strstr(e.msg,
	    "No space left") && e.where == IST_AT_OUTPUT,
	    "in the background, a full disk is told by close: %s", e.msg);
	ist_writer_new(&w, sink, &f, &o, &e);
	ist_writer_header(w, &h, &e);
	ist_writer_flush(w, &e);
	write_sample(w, 10);
	ok(ist_writer_flush(w, &e) == IST_EIO && e.sys_errno == ENOSPC,
	    "or by the next flush");
	ist_writer_free(w);
	/* finished (its buffers kept, as a collector ending with its
	 * process keeps them), the bytes a close writes, its last frame
	 * waited for; its memory freed only after */
	ist_buf_release(&b.b);
	memset(&b, 0, sizeof(b));
	ist_writer_new(&w, sink, &b, &o, &e);
	ist_writer_header(w, &h, &e);
	write_sample(w, 3000);
	st = ist_writer_finish(w, &e);
	ok(st == IST_OK && b.nframes == a.nframes && b.b.n == a.b.n &&
	    memcmp(a.b.p, b.b.p, a.b.n) == 0 && ist_writer_bytes(w) >= 300,
	    "finished: the same %d frames, its buffers kept (%zu bytes)",
	    b.nframes, ist_writer_bytes(w));
	ist_writer_free(w);
	ist_buf_release(&a.b);
	ist_buf_release(&b.b);
}


/* Strings found by the source's ids write the bytes hashing them does,
 * and a header starts the ids anew. */
static void
test_writer_from(void)
{
	struct mem a = { 0 }, b = { 0 };
	struct ist_writer *w;
	struct ist_error e;
	struct ist_event h;

	ist_event_init(&h, IST_HEADER);
	ist_writer_new(&w, sink, &a, NULL, &e);
	ist_writer_header(w, &h, &e);
	write_sample(w, 500);
	ist_writer_header(w, &h, &e);
	write_sample(w, 500);
	ist_writer_close(w, &e);
	ist_writer_new(&w, sink, &b, NULL, &e);
	ist_writer_header(w, &h, &e);
	write_sample_from(w, 500, 0);
	ist_writer_header(w, &h, &e);
	write_sample_from(w, 500, 5);    /* id 1 now names fn_12 */
	ist_writer_close(w, &e);
	ok(a.b.n == b.b.n && memcmp(a.b.p, b.b.p, a.b.n) == 0,
	    "strings by the source's ids: the same bytes, ids renewed at a "
	    "header");
	ist_buf_release(&a.b);
	ist_buf_release(&b.b);
}

static void
test_concat(void)
{
	struct mem a = { 0 }, b = { 0 };
	struct ist_writer *w;
	struct ist_error e;
	struct ist_event h;
	struct ist_buf out = { 0 };
	enum ist_status st;
	int n;

	ist_event_init(&h, IST_HEADER);
	ist_writer_new(&w, sink, &a, NULL, &e);
	ist_writer_header(w, &h, &e);
	write_sample(w, 30);
	ist_writer_close(w, &e);
	ist_writer_new(&w, sink, &b, NULL, &e);
	ist_writer_header(w, &h, &e);
	write_sample(w, 12);
	ist_writer_close(w, &e);
	ist_buf_append(&a.b, b.b.p, b.b.n);
	st = decode(a.b.p, a.b.n, 5, &out, &e, &n);
	ok(st == IST_END && n == 44,
	    "concatenated traces: 2 headers and 42 events (%d)", n);
	ist_buf_release(&out);
	ist_buf_release(&a.b);
	ist_buf_release(&b.b);
}

static void
test_writer_errors(void)
{
	struct mem m = { 0 };
	struct ist_writer *w;
	struct ist_error e = { 0 };
	struct ist_event ev, h;
	static const uint8_t notmap[] = { 0x01 }, broken[] = { 0x82, 0x01 };
	/* {"a": [{7: 1}]} and {"a": h'00'} */
	static const uint8_t intkey[] = { 0xa1, 0x61, 'a', 0x81, 0xa1, 0x07,
	    0x01 }, bytes[] = { 0xa1, 0x61, 'a', 0x41, 0x00 };
	char *big;

	ist_writer_new(&w, sink, &m, NULL, &e);
	ist_event_init(&ev, IST_SCOPE);
	ev.pid = 1; ev.tid = 1; ev.name = S("x");
	SET(&ev, PID); SET(&ev, TID); SET(&ev, NAME); SET(&ev, START);
	SET(&ev, END);
	ok(ist_writer_write(w, &ev, &e) == IST_EINVAL &&
	    strstr(e.msg, "header") && e.where == IST_AT_SELF,
	    "an event before a header is refused, the caller's fault");
	ist_event_init(&h, IST_HEADER);
	ist_writer_header(w, &h, &e);
	ev.has &= ~((uint64_t)1 << IST_F_TID);
	ok(ist_writer_write(w, &ev, &e) == IST_EINVAL &&
	    strcmp(e.msg, "scope event lacks required field 'tid'") == 0,
	    "missing field: %s", e.msg);
	ist_event_init(&ev, IST_INSTANT);
	ev.pid = 1; ev.tid = 1; ev.name = S("x");
	SET(&ev, PID); SET(&ev, TID); SET(&ev, NAME); SET(&ev, TS);
	SET(&ev, METADATA);
	ev.metadata = (struct ist_blob){ notmap, 1 };
	ok(ist_writer_write(w, &ev, &e) == IST_EINVAL,
	    "metadata that is not a map is refused: %s", e.msg);
	ev.metadata = (struct ist_blob){ broken, 2 };
	ok(ist_writer_write(w, &ev, &e) == IST_EINVAL,
	    "metadata that is not whole CBOR is refused: %s", e.msg);
	/* what JSON cannot say, which every reader refuses: never written */
	ev.metadata = (struct ist_blob){ intkey, sizeof(intkey) };
	ok(ist_writer_write(w, &ev, &e) == IST_EINVAL && strcmp(e.msg,
	    "field 'metadata': it holds a map key that is not text, which "
	    "JSON cannot") == 0, "metadata with an integer key (nested) is "
	    "refused: %s", e.msg);
	ev.metadata = (struct ist_blob){ bytes, sizeof(bytes) };
	ok(ist_writer_write(w, &ev, &e) == IST_EINVAL && strstr(e.msg,
	    "a byte string"), "metadata with a byte string is refused: %s",
	    e.msg);
	big = malloc((2u << 20) + 1);
	memset(big, 'a', 2u << 20);
	ev.has &= ~((uint64_t)1 << IST_F_METADATA);
	ev.name = (struct ist_str){ big, 2u << 20 };
	ok(ist_writer_write(w, &ev, &e) != IST_OK,
	    "a 2 MiB name is over the string limit");
	free(big);
	ist_writer_free(w);

	m.fail_errno = ENOSPC;
	ist_writer_new(&w, sink, &m, NULL, &e);
	ist_writer_header(w, &h, &e);
	ok(ist_writer_flush(w, &e) == IST_EIO && e.sys_errno == ENOSPC &&
	    strstr(e.msg, "No space left") && e.where == IST_AT_OUTPUT,
	    "a full disk, in the output: %s", e.msg);
	ok((ist_writer_write(w, &h, &e) == IST_EIO ||
	    ist_writer_flush(w, &e) == IST_EIO) && e.where == IST_AT_OUTPUT,
	    "and the error sticks");
	ok(ist_writer_close(w, &e) == IST_EIO, "close reports it too");
	ist_writer_free(NULL);
	ist_reader_free(NULL);
	ist_info_free(NULL);
	ist_json_scratch_free(NULL);
	ok(1, "every _free(NULL) is a no-op");
	ist_buf_release(&m.b);
}

/* A reader's errors are the input's, whatever they are. */
static void
test_reader_where(void)
{
	static const char junk[] = "not a trace at all, just text\n";
	struct mem m = { 0 };
	struct ist_writer *w;
	struct ist_reader *r;
	struct ist_error e = { 0 };
	struct ist_event h;
	const struct ist_event *got;
	struct src s = { junk, sizeof(junk) - 1, 0, 0 };
	enum ist_status st;

	ist_reader_new(&r, source, &s, "junk", &e);
	st = ist_reader_next(r, &got, &e);
	ok(st == IST_ENOTTRACE && e.where == IST_AT_INPUT,
	    "bytes that are not a trace: the input's error (%d, %d)", st,
	    e.where);
	e.where = IST_AT_SELF;
	ok(ist_reader_next(r, &got, &e) == IST_ENOTTRACE &&
	    e.where == IST_AT_INPUT, "and again");
	ist_reader_free(r);

	ist_event_init(&h, IST_HEADER);
	ist_writer_new(&w, sink, &m, NULL, &e);
	ist_writer_header(w, &h, &e);
	write_sample(w, 30);
	ist_writer_close(w, &e);
	s = (struct src){ m.b.p, m.b.n - 5, 0, 0 };
	ist_reader_new(&r, source, &s, "cut", &e);
	while ((st = ist_reader_next(r, &got, &e)) == IST_OK)
		;
	ok(st == IST_TRUNCATED && e.where == IST_AT_INPUT,
	    "a cut trace: the input's warning (%d)", st);
	ist_reader_free(r);
	ist_buf_release(&m.b);
}

/*
 * Integers at every edge of CBOR's head widths (1, 2, 3, 5 and 9 bytes),
 * positive and negative, as time deltas, durations and lines, written by
 * both paths and read back: the writer picks libcbor's encoder of each
 * width itself (enc_head), so a wrong edge would change a value.
 */
static void
test_int_widths(void)
{
	static const int64_t edge[] = { 0, 1, 23, 24, 255, 256, 65535, 65536,
	    4294967295LL, 4294967296LL, INT64_C(1) << 40 };
	struct ist_wdef d = { .name = S("f"), .more = S("/f.py") };
	struct mem m = { 0 };
	struct ist_writer *w;
	struct ist_error e;
	struct ist_event h, ev;
	struct ist_reader *r;
	const struct ist_event *got;
	struct src s;
	int64_t t = INT64_C(1) << 50, want[64][3];
	int n = 0, k = 0, bad = 0;

	ist_writer_new(&w, sink, &m, NULL, &e);
	ist_event_init(&h, IST_HEADER);
	ist_writer_header(w, &h, &e);
	for (size_t i = 0; i < sizeof(edge) / sizeof(*edge); i++) {
		for (int sign = 1; sign >= -1; sign -= 2) {
			/* the start moves by the edge, forwards and back
			 * (-edge - 1 at the negative widths' own edges) */
			t += sign > 0 ? edge[i] : -edge[i] - 1;
			want[n][0] = t;
			want[n][1] = t + edge[i];
			want[n][2] = edge[i] + 1;
			d.line = edge[i] + 1;
			if (n % 2) {
				d.seg = 0;      /* its line changed */
				bad += ist_writer_timed(w, IST_CPU_CALL, 1, 1, t,
				    t + edge[i], &d, &e) != IST_OK;
			} else {
				ist_event_init(&ev, IST_CPU_CALL);
				ev.pid = ev.tid = 1;
				ev.name = d.name;
				ev.file = d.more;
				ev.start_ns = t;
				ev.end_ns = t + edge[i];
				ev.line = d.line;
				SET(&ev, PID); SET(&ev, TID); SET(&ev, NAME);
				SET(&ev, FILE); SET(&ev, LINE); SET(&ev, START);
				SET(&ev, END);
				bad += ist_writer_write(w, &ev, &e) != IST_OK;
			}
			n++;
		}
	}
	ist_writer_close(w, &e);
	s = (struct src){ m.b.p, m.b.n, 0, 0 };
	ist_reader_new(&r, source, &s, "mem", &e);
	while (ist_reader_next(r, &got, &e) == IST_OK) {
		if (got->type != IST_CPU_CALL)
			continue;
		if (k >= n || got->start_ns != want[k][0] ||
		    got->end_ns != want[k][1] || got->line != want[k][2])
			bad++;
		k++;
	}
	ist_reader_free(r);
	ok(bad == 0 && k == n, "integers at every CBOR width's edge, both "
	    "signs, read back as written (%d of %d, %d bad)", k, n, bad);
	ist_buf_release(&m.b);
}

/* Many strings and tracks: the tables grow (and are rebuilt) many times. */
static void
test_many_names(void)
{
	struct mem m = { 0 };
	struct ist_writer *w;
	struct ist_writer_opts o = { .frame_bytes = 65536 };
	struct ist_error e;
	struct ist_event h, ev;
	struct ist_reader *r;
	const struct ist_event *got;
	struct src s;
	char name[32];
	int bad = 0, n = 0;

	ist_writer_new(&w, sink, &m, &o, &e);
	ist_event_init(&h, IST_HEADER);
	ist_writer_header(w, &h, &e);
	for (int i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "name-%d", i);
		ist_event_init(&ev, IST_SCOPE);
		ev.pid = 1;
		ev.tid = i % 3000;           /* 3000 tracks */
		ev.name = S(name);
		ev.start_ns = i;
		ev.end_ns = i + 1;
		SET(&ev, PID); SET(&ev, TID); SET(&ev, NAME); SET(&ev, START);
		SET(&ev, END);
		if (ist_writer_write(w, &ev, &e) != IST_OK)
			bad++;
	}
	ist_writer_close(w, &e);
	s = (struct src){ m.b.p, m.b.n, 0, 0 };
	ist_reader_new(&r, source, &s, "mem", &e);
	ist_reader_next(r, &got, &e);
	while (ist_reader_next(r, &got, &e) == IST_OK) {
		snprintf(name, sizeof(name), "name-%d", n);
		if (got->name.n != strlen(name) || memcmp(got->name.p, name,
		    got->name.n) || got->tid != n % 3000 || got->start_ns != n)
			bad++;
		n++;
	}
	ist_reader_free(r);
	ok(bad == 0 && n == 20000, "20000 names on 3000 tracks read back "
	    "(%d, %d bad)", n, bad);
	ist_buf_release(&m.b);
}

/* A run through ist_writer_timed_run, which stops at each frame it
 * closes; the errors. */
static int
write_runs(struct ist_writer *w, const struct ist_timed *run, size_t n,
    int64_t tid)
{
	struct ist_error e;
	size_t i = 0, done;

	while (i < n) {
		if (ist_writer_timed_run(w, 9, tid, run + i, n - i, &done,
		    &e) != IST_OK || done == 0)
			return 1;
		i += done;
	}
	return 0;
}

/*
 * The collector's short path (ist_writer_timed) writes the bytes that
 * ist_writer_write writes for the same events: every type it takes, with
 * and without file, line and domain, across tracks, frames, self-contained
 * frames (which define strings again), definitions used for several types,
 * definitions whose cached ids belong to another writer, and a generator's
 * runs that yielded (with and without file and line: the fields between
 * written null).
 */
static void
test_writer_timed(void)
{
	struct ist_wdef defs[8] = {
		{ .name = S("mod.fn"), .more = S("/a.py"), .line = 12 },
		{ .name = S("mod.g"), .more = S("/a.py") },
		{ .name = S("mod.h"), .line = 7 },
		{ .name = S("step") },
		{ .name = S("nv"), .more = S("dom") },
		{ .name = S("") },
		{ .name = S("mod.gen"), .more = S("/a.py"), .line = 3,
		    .yielded = true },
		{ .name = S("gen"), .yielded = true },
	};
	static const enum ist_type types[6] = {
		IST_CPU_CALL, IST_CPU_CALL, IST_CPU_CALL, IST_SCOPE,
		IST_NVTX_RANGE, IST_NVTX_RANGE,
	};
	struct ist_error e;
	struct ist_event h, ev;
	int same = 0, rounds = 0;

	for (int selfc = 0; selfc < 2; selfc++) {
		for (int round = 0; round < 2; round++, rounds++) {
			/* the second round counts records for the clock
			 * (an hour: never due) */
			struct ist_writer_opts o = { .frame_bytes = 4096,
			    .self_contained = selfc, .stable_strings = true,
			    .flush_interval_ms = round ? 3600000 : 0 };
			struct mem a = { 0 }, b = { 0 }, c = { 0 };
			struct ist_writer *wa, *wb, *wc;
			struct ist_timed run[64];
			size_t nrun = 0;
			int64_t run_tid = 0;
			int bad = 0;

			ist_writer_new(&wa, sink, &a, &o, &e);
			ist_writer_new(&wb, sink, &b, &o, &e);
			ist_writer_new(&wc, sink, &c, &o, &e);
			ist_event_init(&h, IST_HEADER);
			ist_writer_header(wa, &h, &e);
			ist_writer_header(wb, &h, &e);
			ist_writer_header(wc, &h, &e);
			for (int i = 0; i < 5000; i++) {
				/* a definition serves several types */
				struct ist_wdef *d = &defs[i * 7 % 8];
				enum ist_type t = types[(i * 5 + i / 97) % 6];
				int64_t tid = 100 + i % 4 / 3, t0 = i * 97 -
				    (i % 5) * 300;

				ist_event_init(&ev, t);
				ev.pid = 9;
				ev.tid = tid;
				ev.name = d->name;
				ev.start_ns = t0;
				ev.end_ns = t0 + i % 11;
				SET(&ev, PID); SET(&ev, TID); SET(&ev, NAME);
				SET(&ev, START); SET(&ev, END);
				if (t == IST_CPU_CALL && d->more.p) {
					ev.file = d->more;
					SET(&ev, FILE);
				}
				if (t == IST_CPU_CALL && d->line) {
					ev.line = d->line;
					SET(&ev, LINE);
				}
				if (t == IST_NVTX_RANGE && d->more.p) {
					ev.domain = d->more;
					SET(&ev, DOMAIN);
				}
				if (t == IST_CPU_CALL && d->yielded) {
					ev.yielded = true;
					SET(&ev, YIELDED);
				}
				bad += ist_writer_write(wa, &ev, &e) != IST_OK;
				bad += ist_writer_timed(wb, t, 9, tid, t0,
				    t0 + i % 11, d, &e) != IST_OK;
				/* in runs of one thread's, up to 64 (i % 64
				 * of them), as the collector hands them */
				if (nrun && (tid != run_tid || nrun ==
				    (size_t)(i % 64) + 1)) {
					bad += write_runs(wc, run, nrun,
					    run_tid);
					nrun = 0;
				}
				run_tid = tid;
				run[nrun++] = (struct ist_timed){ d, t0,
				    t0 + i % 11, t };
			}
			bad += write_runs(wc, run, nrun, run_tid);
			ist_writer_close(wa, &e);
			ist_writer_close(wb, &e);
			ist_writer_close(wc, &e);
			same += bad == 0 && a.b.n == b.b.n && a.nframes > 3 &&
			    memcmp(a.b.p, b.b.p, a.b.n) == 0 &&
			    a.b.n == c.b.n && memcmp(a.b.p, c.b.p, a.b.n) == 0;
			ist_buf_release(&a.b);
			ist_buf_release(&b.b);
			ist_buf_release(&c.b);
		}
	}
	ok(same == rounds, "the short path, one record at a time and in "
	    "runs, writes the same bytes as ist_writer_write (%d of %d "
	    "writers, ids cached by an earlier writer not reused)", same,
	    rounds);
	{
		struct mem m = { 0 };
		struct ist_writer *w;

		ist_writer_new(&w, sink, &m, NULL, &e);
		ist_writer_header(w, &h, &e);
		ok(ist_writer_timed(w, IST_COUNTER, 1, 1, 0, 0, &defs[0], &e) ==
		    IST_EINVAL, "a type it does not take is refused: %s",
		    e.msg);
		ist_writer_free(w);
	}
}

static void
test_flush_interval(void)
{
	struct mem m = { 0 };
	struct ist_writer *w;
	struct ist_writer_opts o = { .flush_interval_ms = 20 };
	struct ist_error e;
	struct ist_event h;
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	ist_writer_new(&w, sink, &m, &o, &e);
	ist_event_init(&h, IST_HEADER);
	ist_writer_header(w, &h, &e);
	for (int i = 0; i < 20; i++) {
		write_sample(w, 64);
		nanosleep(&ts, NULL);
	}
	ok(m.nframes >= 2, "a frame closes every 20 ms: %d frames in "
	    ">= 100 ms", m.nframes);
	ist_writer_close(w, &e);
	ist_buf_release(&m.b);
}

static void
test_json(void)
{
	struct ist_json_scratch *s = ist_json_scratch_new();
	struct ist_event ev;
	struct ist_error e;
	struct ist_buf out = { 0 };
	static const struct { const char *in, *msg; } bad[] = {
		{ "{", "invalid JSON at column 1" },
		{ "[1]", "a record must be a JSON object, not an array" },
		{ "{\"pid\":1}", "record lacks a string 'type'" },
		{ "{\"type\":\"nope\"}", "unknown type 'nope'" },
		{ "{\"type\":\"scope\",\"pid\":1,\"tid\":1,\"name\":\"x\","
		  "\"start_ns\":1}", "missing required field 'end_ns' for "
		  "type 'scope'" },
		{ "{\"type\":\"scope\",\"pid\":\"1\"}", "field 'pid' must be "
		  "an integer, not a string" },
		{ "{\"type\":\"scope\",\"colour\":1}", "unknown field "
		  "'colour' for type 'scope'" },
		{ "{\"type\":\"thread\",\"pid\":1,\"pid\":2,\"tid\":1}",
		  "duplicate object key" },
		{ "{\"type\":\"header\",\"format\":\"inferscope-trace\","
		  "\"version\":[2,0]}", "header version 2.0 is not 1.x" },
		{ "{\"type\":\"instant\",\"pid\":1,\"tid\":1,\"name\":\"x\","
		  "\"ts_ns\":1,\"metadata\":[1]}", "field 'metadata' must be "
		  "an object, not an array" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum ist_status st = ist_event_from_json(bad[i].in,
		    strlen(bad[i].in), &ev, s, &e);
		ok(st != IST_OK && strstr(e.msg, bad[i].msg) != NULL,
		    "rejects %s: %s", bad[i].in, e.msg);
	}
	{
		const char *in = "{\"type\":\"counter\",\"pid\":3,\"name\":"
		    "\"q\",\"ts_ns\":9,\"value\":1e3}";
		int good = ist_event_from_json(in, strlen(in), &ev, s, &e) ==
		    IST_OK && ist_event_to_json(&ev, &out, &e) == IST_OK;
		ok(good && strcmp(out.p, "{\"type\":\"counter\",\"pid\":3,\"name\":"
		    "\"q\",\"ts_ns\":9,\"value\":1000.0}\n") == 0,
		    "a float counter stays a float: %s", out.p);
	}
	ist_buf_release(&out);
	ist_json_scratch_free(s);
}

/*
 * JSON strings against jansson, an outside reader: random strings of
 * pieces that need escaping (quotes, controls, NUL, < > &, U+2028) among
 * plain ASCII and 2-, 3- and 4-byte UTF-8 read back byte for byte, in a
 * script with no raw < > & or U+2028/9 left; invalid UTF-8 becomes one
 * U+FFFD a byte.
 */
static void
test_json_str(void)
{
	static const char *const piece[] = { "a", "Zq9", "\"", "\\", "<", ">",
	    "&", "\x01", "\x1f", "\n", "\t", "\x7f", "/", "\xc3\xa9",
	    "\xe2\x82\xac", "\xe2\x80\xa8", "\xe2\x80\xa9",
	    "\xf0\x9d\x84\x9e", "" };
#define R "\xef\xbf\xbd"        /* U+FFFD */
#define R3 R R R
	static const struct { const char *in; size_t n; const char *out; }
	    bad[] = {
		{ "\xff", 1, "\"\xef\xbf\xbd\"" },
		{ "a\xc3", 2, "\"a\xef\xbf\xbd\"" },
		{ "\xe0\x80\x80", 3, "\"" R3 "\"" },
		{ "\xed\xa0\x80x", 4, "\"" R3 "x\"" },
		{ "\xf4\x90\x80\x80", 4, "\"" R3 R "\"" },
		{ "\0\x1b", 2, "\"\\u0000\\u001b\"" },
	};
	uint64_t seed = 42;
	int same = 0, safe = 0, runs = 3000, plain = 0, nplain = 0;
	struct ist_buf t = { 0 };
	struct ist_buf b = { 0 };
	char in[400];

	for (int k = 0; k < runs; k++) {
		size_t n = 0, np = 0;
		bool pl;
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		np = (size_t)(seed >> 59);            /* 0 to 31 pieces */
		for (size_t i = 0; i < np; i++) {
			size_t j;
			seed = seed * 6364136223846793005ull +
			    1442695040888963407ull;
			j = (size_t)(seed >> 33) % (sizeof(piece) /
			    sizeof(*piece));
			if (j == sizeof(piece) / sizeof(*piece) - 1)
				in[n++] = '\0';        /* NUL, in the middle */
			else {
				memcpy(in + n, piece[j], strlen(piece[j]));
				n += strlen(piece[j]);
			}
		}
		/* plain: JSON copies it as it is (so may valid UTF-8, which
		 * is not plain); a plain text is copied without a look, any
		 * other escaped as ist_json_str does */
		pl = ist_json_plain(in, n);
		b.n = t.n = 0;
		if (ist_json_str(&b, in, n, false) == 0 &&
		    ist_buf_json_text(&t, (struct ist_str){ in, n }, pl) == 0 &&
		    t.n == b.n && memcmp(t.p, b.p, b.n + 1) == 0 && (!pl ||
		    (b.n == n + 2 && memcmp(b.p + 1, in, n) == 0)))
			plain++;
		nplain += pl;
		for (int script = 0; script < 2; script++) {
			json_error_t je;
			json_t *j;
			b.n = 0;
			if (ist_json_str(&b, in, n, script) != 0 ||
			    b.p[b.n] != '\0')
				continue;
			j = json_loadb(b.p, b.n, JSON_DECODE_ANY |
			    JSON_ALLOW_NUL, &je);
			if (j && json_is_string(j) &&
			    json_string_length(j) == n &&
			    memcmp(json_string_value(j), in, n) == 0)
				same++;
			if (script && !memchr(b.p, '<', b.n) &&
			    !memchr(b.p, '>', b.n) && !memchr(b.p, '&', b.n) &&
			    !memmem(b.p, b.n, "\xe2\x80\xa8", 3) &&
			    !memmem(b.p, b.n, "\xe2\x80\xa9", 3))
				safe++;
			json_decref(j);
		}
	}
	ok(same == 2 * runs, "ist_json_str: %d of %d random strings read "
	    "back by jansson byte for byte", same, 2 * runs);
	ok(safe == runs, "ist_json_str in a script: %d of %d with no raw < > "
	    "& U+2028 U+2029", safe, runs);
	ok(plain == runs && nplain > 10 && nplain < runs / 2, "ist_json_plain "
	    "is true of %d of %d strings, each copied as it is, and "
	    "ist_buf_json_text writes what ist_json_str does (%d of %d)",
	    nplain, runs, plain, runs);
	ist_buf_release(&t);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		b.n = 0;
		ok(ist_json_str(&b, bad[i].in, bad[i].n, false) == 0 &&
		    strcmp(b.p, bad[i].out) == 0, "ist_json_str: bad input %zu "
		    "gives %s", i, b.p);
	}
	ist_buf_release(&b);
#undef R
#undef R3
}

/* The reader marks a string field plain exactly when its text needs no
 * escaping in JSON: tested once, when the string is defined */
static void
test_plain(void)
{
	static const char *const name[] = { "mod.f", "<module>", "a\"b",
	    "back\\slash", "tab\t", "caf\xc3\xa9", "", "del\x7f" };
	struct mem m = { 0 };
	struct ist_writer *w;
	struct ist_reader *r;
	struct ist_error e;
	struct ist_event h, ev;
	const struct ist_event *got;
	struct src s;
	int right = 0, n = (int)(sizeof(name) / sizeof(*name));

	ist_writer_new(&w, sink, &m, NULL, &e);
	ist_event_init(&h, IST_HEADER);
	ist_writer_header(w, &h, &e);
	for (int i = 0; i < 2 * n; i++) {       /* each name twice */
		ist_event_init(&ev, IST_CPU_CALL);
		ev.pid = ev.tid = 1;
		ev.name = S(name[i % n]);
		ev.file = S(name[(i + 1) % n]);
		ev.start_ns = i;
		ev.end_ns = i + 1;
		SET(&ev, PID); SET(&ev, TID); SET(&ev, NAME); SET(&ev, FILE);
		SET(&ev, START); SET(&ev, END);
		if (ist_writer_write(w, &ev, &e) != IST_OK)
			abort();
	}
	ist_writer_close(w, &e);
	s = (struct src){ m.b.p, m.b.n, 0, 0 };
	ist_reader_new(&r, source, &s, "mem", &e);
	while (ist_reader_next(r, &got, &e) == IST_OK) {
		bool pn = ist_json_plain(got->name.p, got->name.n),
		    pf = ist_json_plain(got->file.p, got->file.n);
		if (got->type == IST_CPU_CALL &&
		    IST_PLAIN(got, IST_F_NAME) == pn &&
		    IST_PLAIN(got, IST_F_FILE) == pf &&
		    !IST_PLAIN(got, IST_F_HOST) && !IST_PLAIN(got, IST_F_PID))
			right++;
	}
	ok(right == 2 * n, "the reader marks name and file plain exactly "
	    "when ist_json_plain is true of them (%d of %d events)", right,
	    2 * n);
	ok(ist_json_plain("<module>", 8) && !ist_json_plain("a\"", 2) &&
	    !ist_json_plain("\xc3\xa9", 2) && ist_json_plain("\x7f", 1) &&
	    !ist_json_plain("\x1f", 1), "plain: bytes 0x20 to 0x7f but the "
	    "quote and the backslash (JSON copies DEL, escapes controls)");
	ist_reader_free(r);
	ist_buf_release(&m.b);
}

/* The text buffer: integers in decimal at both ends of the range, and
 * printf into the room left or, when it does not fit, after growing. */
static void
test_buf(void)
{
	static const int64_t v[] = { 0, 7, -7, 1234567890123, INT64_MAX,
	    INT64_MIN };
	struct ist_buf b = { 0 };
	char want[64], big[300];
	bool good = true;

	int64_t p10 = 1;

	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		b.n = 0;
		snprintf(want, sizeof(want), "%" PRId64, v[i]);
		good = good && ist_buf_int(&b, v[i]) == 0 &&
		    strcmp(b.p, want) == 0 && b.n == strlen(want);
	}
	/* where the count of digits changes: each power of ten, either side */
	for (int k = 0; k < 19; k++, p10 *= 10)
		for (int64_t d = -1; d <= 1; d++)
			for (int sign = -1; sign <= 1; sign += 2) {
				int64_t x = sign * (p10 + d);
				b.n = 0;
				snprintf(want, sizeof(want), "%" PRId64, x);
				good = good && ist_buf_int(&b, x) == 0 &&
				    strcmp(b.p, want) == 0 &&
				    b.n == strlen(want);
			}
	ok(good, "ist_buf_int writes what printf %%" PRId64 " does, "
	    "INT64_MIN and INT64_MAX included, and either side of every "
	    "power of ten");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	b.n = 0;
	good = ist_buf_puts(&b, "a") == 0;
	for (int k = 0; k < 2000 && good; k++)      /* grows many times */
		good = ist_buf_printf(&b, "%d%s", k % 10, k % 7 ? "" : big) ==
		    0 && b.p[b.n] == '\0';
	ok(good && b.n == 1 + 2000 + 286 * (sizeof(big) - 1) &&
	    b.p[0] == 'a' && b.p[1] == '0' && b.p[2] == 'x' &&
	    b.p[b.n - 1] == '9', "ist_buf_printf appends in place and "
	    "after growing, NUL-terminated (%zu bytes)", b.n);
	ist_buf_release(&b);
}

/* The one spelling of a collection's name, written and read back. */
static void
test_gc_name(void)
{
	static const struct { const char *s; int g; } cases[] = {
		{ "gc (generation 0)", 0 }, { "gc (generation 2)", 2 },
		{ "gc (generation 12)", 12 }, { "gc (generation )", -1 },
		{ "gc (generation 2", -1 }, { "gc (generation x)", -1 },
		{ "gc (generation 2) ", -1 }, { "gc (generation 123)", -1 },
		{ "gc (generation -1)", -1 }, { "gc", -1 }, { "", -1 },
	};
	char name[32];
	bool good = true;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		good &= ist_gc_generation(cases[i].s, strlen(cases[i].s)) ==
		    cases[i].g;
	ok(good, "ist_gc_generation reads 'gc (generation N)' and nothing "
	    "else (%zu names)", sizeof(cases) / sizeof(cases[0]));
	snprintf(name, sizeof(name), IST_GC_NAME_FMT, 1);
	ok(ist_gc_generation(name, strlen(name)) == 1, "the name the "
	    "collector writes (IST_GC_NAME_FMT) reads back: '%s'", name);
}

/* What the writer, the reader and is-merge's packing take from the plans. */
static void
test_plans(void)
{
	bool pack_fits = true;
	int npay = -1;

	ist_plans_init();
	for (int t = 0; t < IST_NTYPES; t++) {
		int n = 0;
		for (int i = 0; i < ist_types[t].nfields; i++)
			n += ist_types[t].fields[i].role == R_PAYLOAD;
		if (ist_plans[t].npay != n && npay < 0)
			npay = t;
		if (t != IST_HEADER && n > 8)
			pack_fits = false;
	}
	ok(npay < 0, "every type's payload fields are in its plan (the "
	    "first that is not: %d)", npay);
	ok(pack_fits, "no type is-merge packs has over 8 payload fields (its "
	    "one presence byte)");
	ok(ist_plans[IST_GPU_KERNEL].base == 4 && ist_plans[IST_COUNTER].base
	    == 3 && ist_plans[IST_PROCESS].base == 2, "elements before the "
	    "payload: kind, track and times (range 4, instant 3, none 2)");
}

/* Reads p[0..n) skimming from the start: each record's kind in kinds, and
 * the final status and message. */
static enum ist_status
skim(const char *p, size_t n, bool on, struct ist_buf *kinds,
    struct ist_error *e, struct ist_reader_stats *rs)
{
	struct src s = { p, n, 0, 0 };
	struct ist_reader *r;
	const struct ist_event *ev;
	enum ist_status st;

	if (ist_reader_new(&r, source, &s, "mem", e) != IST_OK)
		abort();
	ist_reader_skim(r, on);
	while ((st = ist_reader_next(r, &ev, e)) == IST_OK)
		ist_buf_printf(kinds, "%c", ev->type == IST_HEADER ? 'H' :
		    ev->type == IST_ANALYSIS ? 'A' : 'e');
	ist_reader_stats(r, rs);
	ist_reader_free(r);
	return st;
}

/*
 * Skimming returns the headers and the analyses that start a frame, and
 * passes over the rest; a cut trace is said as when it is read whole.
 */
static void
test_skim(void)
{
	struct mem m = { 0 };
	struct ist_writer *w;
	struct ist_writer_opts o = { .frame_bytes = 300 };
	struct ist_error e;
	struct ist_event h, an;
	struct ist_buf k = { 0 };
	struct ist_reader_stats rs;
	enum ist_status st;
	int bad = 0;

	ist_writer_new(&w, sink, &m, &o, &e);
	ist_event_init(&h, IST_HEADER);
	ist_event_init(&an, IST_ANALYSIS);
	an.data = (struct ist_blob){ (const uint8_t *)"\xa0", 1 };
	IST_SET(&an, IST_F_DATA);
	ist_writer_header(w, &h, &e);
	write_sample(w, 200);
	ist_writer_flush(w, &e);
	ist_writer_write(w, &an, &e);       /* first in its frame: found */
	ist_writer_header(w, &h, &e);
	write_sample(w, 5);
	ist_writer_write(w, &an, &e);       /* after events: passed over */
	ist_writer_close(w, &e);
	st = skim(m.b.p, m.b.n, true, &k, &e, &rs);
	ok(st == IST_END && k.n == 3 && memcmp(k.p, "HAH", 3) == 0 &&
	    rs.records == 3 && rs.segments == 2 && rs.frames == (uint64_t)m.nframes,
	    "skimming: the headers and the analysis at a frame's start "
	    "(%.*s, %llu records, %llu of %d frames)", (int)k.n, k.p,
	    (unsigned long long)rs.records, (unsigned long long)rs.frames,
	    m.nframes);
	k.n = 0;
	st = skim(m.b.p, m.b.n, false, &k, &e, &rs);
	ok(st == IST_END && k.n == 209 && k.p[201] == 'A' && k.p[208] == 'A',
	    "read whole: every record (%zu)", k.n);
	/* cut anywhere: the same status and message as reading it whole */
	for (size_t cut = 1; cut < m.b.n; cut++) {
		struct ist_error e1 = { 0 }, e2 = { 0 };
		struct ist_reader_stats r1, r2;
		enum ist_status s1, s2;

		k.n = 0;
		s1 = skim(m.b.p, cut, true, &k, &e1, &r1);
		s2 = skim(m.b.p, cut, false, &k, &e2, &r2);
		if ((s1 != s2 || strcmp(e1.msg, e2.msg) != 0 ||
		    r1.truncated_bytes != r2.truncated_bytes ||
		    r1.truncated_kept != r2.truncated_kept) && bad++ == 0)
			printf("# cut %zu: %d '%s' skimming, %d '%s' whole\n",
			    cut, s1, e1.msg, s2, e2.msg);
	}
	ok(bad == 0, "every cut: skimming says what reading whole says");
	ist_buf_release(&m.b);

	/* an analysis of 200 KB first in a frame of 600 KB: decompressed a
	 * slice at a time until its record is whole, and found whole; the
	 * events after it, and the frame of events before it, are passed
	 * over undecompressed, their checksums unchecked (the last byte of
	 * the trace is the last frame's checksum's: reading whole says it) */
	{
		static uint8_t big[200 << 10];
		const struct ist_event *ev;
		struct ist_reader *r;
		struct src s;
		size_t n = sizeof(big);

		memset(&m, 0, sizeof(m));
		o.frame_bytes = 1u << 20;
		ist_writer_new(&w, sink, &m, &o, &e);
		big[0] = 0xa1;                  /* {"k": "xxx..."} */
		big[1] = 0x61;
		big[2] = 'k';
		big[3] = 0x7a;
		big[4] = (uint8_t)((n - 8) >> 24);
		big[5] = (uint8_t)((n - 8) >> 16);
		big[6] = (uint8_t)((n - 8) >> 8);
		big[7] = (uint8_t)(n - 8);
		memset(big + 8, 'x', n - 8);
		an.data = (struct ist_blob){ big, n };
		ist_writer_header(w, &h, &e);
		write_sample(w, 30000);
		ist_writer_flush(w, &e);
		ist_writer_write(w, &an, &e);
		write_sample(w, 30000);
		ist_writer_close(w, &e);
		m.b.p[m.b.n - 1] ^= 1;
		k.n = 0;
		st = skim(m.b.p, m.b.n, true, &k, &e, &rs);
		ok(st == IST_END && k.n == 2 && memcmp(k.p, "HA", 2) == 0 &&
		    rs.frames == 2 && m.nframes == 2, "skimming: a 200 KB "
		    "analysis found whole in a 600 KB frame, the rest passed "
		    "over (%.*s, %d)", (int)k.n, k.p, (int)st);
		k.n = 0;
		st = skim(m.b.p, m.b.n, false, &k, &e, &rs);
		ok(st == IST_ECORRUPT && strstr(e.msg, "checksum") != NULL,
		    "read whole, the last frame's checksum fails: %s", e.msg);
		s = (struct src){ (const char *)m.b.p, m.b.n, 0, 0 };
		ist_reader_new(&r, source, &s, "mem", &e);
		ist_reader_skim(r, true);
		while ((st = ist_reader_next(r, &ev, &e)) == IST_OK &&
		    ev->type != IST_ANALYSIS)
			;
		ok(st == IST_OK && ev->data.n == n &&
		    memcmp(ev->data.p, big, n) == 0,
		    "the skimmed analysis's bytes are the ones written");
		ist_reader_free(r);
	}
	ist_buf_release(&k);
	ist_buf_release(&m.b);
}

/* A file holding p[0..n) at offset 5 (after 5 bytes of something
 * else), its descriptor left there; -1 on failure. */
static int
file_at5(const void *p, size_t n)
{
	char path[] = "/tmp/test_trace_XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	unlink(path);
	if (write(fd, "junk!", 5) != 5 || write(fd, p, n) != (ssize_t)n ||
	    lseek(fd, 5, SEEK_SET) != 5) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ist_file_promises_analysis: the first header's promise, read from the
 * descriptor's offset, which stays where it was. */
static void
test_promises(void)
{
	struct ist_writer *w;
	struct ist_error e;
	struct ist_event h;
	bool yes[2] = { false, false };
	bool kept = true;
	int pfd[2];

	for (int promise = 0; promise < 2; promise++) {
		struct mem m = { 0 };
		int fd;
		ist_writer_new(&w, sink, &m, NULL, &e);
		ist_event_init(&h, IST_HEADER);
		if (promise) {
			h.analysis_version = 1;
			IST_SET(&h, IST_F_ANALYSIS_VERSION);
		}
		ist_writer_header(w, &h, &e);
		write_sample(w, 50);
		ist_writer_close(w, &e);
		if ((fd = file_at5(m.b.p, m.b.n)) >= 0) {
			yes[promise] = ist_file_promises_analysis(fd);
			kept = kept && lseek(fd, 0, SEEK_CUR) == 5;
			close(fd);
		}
		ist_buf_release(&m.b);
	}
	ok(!yes[0] && yes[1] && kept, "ist_file_promises_analysis: false "
	    "without analysis_version, true with it (%d %d), the offset kept",
	    yes[0], yes[1]);
	/* no trace, or no file: no promise */
	{
		int fd = file_at5("not a trace at all", 18);
		bool any = fd < 0 || ist_file_promises_analysis(fd);
		if (fd >= 0)
			close(fd);
		if (pipe(pfd) == 0) {
			any = any || ist_file_promises_analysis(pfd[0]);
			close(pfd[0]);
			close(pfd[1]);
		}
		ok(!any, "ist_file_promises_analysis: false for what is not "
		    "a trace, and for a pipe");
	}
}

/* ---- reading ahead ---- */

static void
count_frame(void *ctx, const uint8_t *p, size_t n)
{
	struct ist_buf *b = ctx;

	ist_buf_printf(b, "frame %zu %02x%02x\n", n, p[0], p[n - 1]);
}

/* One reading of p[0..n) in chunks of chunk bytes, here or ahead (2:
 * every frame's rest split here, after its first chunk): every record's
 * JSON and span, each frame left, the status, message and stats, into
 * out.  Stops after stop records when stop > 0 (then freed early). */
static bool ahead_file;  /* read ahead from a file, not from memory */
static uint64_t rests;   /* the frames' rests split here, all told (2) */

static void
read_way(const char *p, size_t n, size_t chunk, int ahead, bool sk,
    long stop, struct ist_buf *out)
{
	struct src s = { p, n, 0, chunk };
	struct ist_reader *r;
	struct ist_reader_stats st;
	struct ist_error e = { 0 };
	const struct ist_event *ev;
	enum ist_status rs;
	long k = 0;
	int fd = -1;

	if (ahead && ahead_file) {
		/* a file: its next frame decompressed early reads on */
		FILE *f = tmpfile();
		if (f == NULL || fwrite(p, 1, n, f) != n || fflush(f) != 0 ||
		    (fd = dup(fileno(f))) < 0 || lseek(fd, 0, SEEK_SET) != 0)
			abort();
		fclose(f);
	}
	if ((fd >= 0 ? ist_reader_new(&r, ist_fd_source, &fd, "mem", &e) :
	    ist_reader_new(&r, source, &s, "mem", &e)) != IST_OK)
		abort();
	ist_reader_ahead_give_rests(ahead == 2);
	if (ahead && !ist_reader_ahead(r))
		abort();
	ist_reader_skim(r, sk);
	ist_reader_on_frame(r, count_frame, out);
	while ((rs = ist_reader_next(r, &ev, &e)) == IST_OK) {
		size_t off, len;
		ist_event_to_json(ev, out, &e);
		ist_reader_span(r, &off, &len);
		ist_buf_printf(out, "at %zu %zu\n", off, len);
		if (stop > 0 && ++k == stop)
			break;
	}
	ist_reader_stats(r, &st);
	if (ahead == 2)
		rests += ist_reader_ahead_rests(r);
	ist_reader_ahead_give_rests(false);
	ist_buf_printf(out, "status %d where %d record %llu: %s\n"
	    "records %llu events %llu frames %llu segments %llu raw %llu "
	    "skipped %llu truncated %llu kept %llu\n", (int)rs, (int)e.where,
	    (unsigned long long)e.record, e.msg,
	    (unsigned long long)st.records, (unsigned long long)st.events,
	    (unsigned long long)st.frames, (unsigned long long)st.segments,
	    (unsigned long long)st.raw_bytes, (unsigned long long)st.skipped,
	    (unsigned long long)st.truncated_bytes,
	    (unsigned long long)st.truncated_kept);
	if (rs == IST_END)
		ist_buf_printf(out, "in %llu\n", (unsigned long long)st.in_bytes);
	ist_reader_free(r);
	if (fd >= 0)
		close(fd);
}

/* Whether both ways read p[0..n) alike; the first difference said once.
 * kept, unless NULL, counts the readings of a frame cut inside its whole
 * blocks. */
static bool
alike(const char *what, const char *p, size_t n, size_t chunk, bool sk,
    long stop, int *bad, int *kept)
{
	struct ist_buf a = { 0 }, b = { 0 };
	bool same;
	int way;

	read_way(p, n, chunk, 0, sk, stop, &a);
	for (way = 1; way <= 2; way++) {
		b.n = 0;
		read_way(p, n, chunk, way, sk, stop, &b);
		if (!(same = a.n == b.n && memcmp(a.p, b.p, a.n) == 0))
			break;
	}
	if (kept && strstr(b.p, "records are kept") != NULL)
		(*kept)++;
	if (!same && (*bad)++ == 0) {
		size_t i = 0;
		while (i < a.n && i < b.n && a.p[i] == b.p[i])
			i++;
		printf("# %s: differ at byte %zu of %zu/%zu: '%.60s' here, "
		    "'%.60s' ahead%s\n", what, i, a.n, b.n, a.p + i, b.p + i,
		    way == 2 ? ", every frame's rest split by the reader" : "");
	}
	ist_buf_release(&a);
	ist_buf_release(&b);
	return same;
}

/* The CBOR bytes frame f of m holds (frame 0 is the first). */
static size_t
frame_raw(const struct mem *m, int f)
{
	size_t a = f ? m->frames[f - 1] : 0;

	return (size_t)ZSTD_getFrameContentSize(m->b.p + a, m->frames[f] - a);
}

/* m's trace into t, with frame f's CBOR byte at set to v (-1: its 0x40
 * bit flipped) and the frame compressed again; that frame's compressed
 * size. */
static size_t
with_byte(const struct mem *m, int f, size_t at, int v, struct ist_buf *t)
{
	size_t a = f ? m->frames[f - 1] : 0, z = m->frames[f];
	size_t raw = frame_raw(m, f), k;
	uint8_t *cb = malloc(raw), *zb = malloc(ZSTD_compressBound(raw));

	if (cb == NULL || zb == NULL ||
	    ZSTD_decompress(cb, raw, m->b.p + a, z - a) != raw)
		abort();
	cb[at] = (uint8_t)(v < 0 ? cb[at] ^ 0x40 : v);
	k = ZSTD_compress(zb, ZSTD_compressBound(raw), cb, raw, 1);
	t->n = 0;
	ist_buf_append(t, m->b.p, a);
	ist_buf_append(t, zb, k);
	ist_buf_append(t, m->b.p + z, m->b.n - z);
	free(cb);
	free(zb);
	return k;
}

/*
 * Reading ahead reads what reading here does: frames of a few thousand
 * records (several chunks each), two segments; cut anywhere; a record
 * broken in any frame's middle; skimming; freed half-way.
 */
static void
test_ahead(void)
{
	struct mem m = { 0 };
	struct ist_writer *w;
	/* frames of more than one zstd block (128 KiB), so that a cut may
	 * leave whole blocks of one */
	struct ist_writer_opts o = { .frame_bytes = 200000 };
	struct ist_error e;
	struct ist_event h, an;
	struct ist_buf x = { 0 };
	int bad = 0, cuts = 0, broken = 0, kept = 0;

	ist_writer_new(&w, sink, &m, &o, &e);
	ist_event_init(&h, IST_HEADER);
	ist_event_init(&an, IST_ANALYSIS);
	an.data = (struct ist_blob){ (const uint8_t *)"\xa0", 1 };
	IST_SET(&an, IST_F_DATA);
	ist_writer_header(w, &h, &e);
	write_sample(w, 30000);
	ist_writer_flush(w, &e);
	ist_writer_write(w, &an, &e);
	ist_writer_header(w, &h, &e);
	write_sample(w, 12000);
	ist_writer_close(w, &e);
	read_way(m.b.p, m.b.n, 0, true, false, 0, &x);
	ok(m.nframes >= 4 && strstr(x.p, "status 1 ") != NULL &&
	    strstr(x.p, "events 42001 ") != NULL,
	    "a trace of %d frames, 42001 events, read ahead", m.nframes);
	ok(alike("whole", m.b.p, m.b.n, 0, false, 0, &bad, NULL) &&
	    alike("by 777 bytes", m.b.p, m.b.n, 777, false, 0, &bad, NULL) &&
	    alike("skimming", m.b.p, m.b.n, 0, true, 0, &bad, NULL),
	    "read ahead: the same records, spans, frames, status and stats, "
	    "skimming too");
	for (size_t cut = 1; cut < m.b.n; cut += 1 + cut / 7, cuts++)
		alike("cut", m.b.p, cut, 4096, cut % 2, 0, &bad, &kept);
	for (int f = 1; f < m.nframes; f++)
		for (int i = 1; i < 8; i++, cuts++) {
			size_t cut = m.frames[f - 1] + (m.frames[f] -
			    m.frames[f - 1]) * i / 8;
			alike("cut in a frame", m.b.p, cut, 0, i == 7, 0, &bad,
			    &kept);
		}
	for (int f = 0; f < m.nframes; f++, cuts += 2) {
		alike("cut at a frame's end", m.b.p, m.frames[f], 0, false, 0,
		    &bad, NULL);
		alike("cut after a frame's end", m.b.p, m.frames[f] + 1, 0,
		    false, 0, &bad, NULL);
	}
	ok(bad == 0 && kept > 0, "cut at %d places (%d inside a frame's "
	    "whole blocks): the same as reading here", cuts, kept);
	/* a byte of a frame's CBOR changed: the frame compressed again */
	for (int f = 1; f < m.nframes; f++) {
		size_t raw = frame_raw(&m, f);
		struct ist_buf t = { 0 };
		for (size_t at = raw / 9; at < raw; at += raw / 9 + 1) {
			with_byte(&m, f, at, at % 3 == 0 ? 0xff : at % 3 == 1 ?
			    0x9f : -1, &t);
			alike("a byte changed", t.p, t.n, 0, false, 0, &bad,
			    NULL);
			broken++;
		}
		ist_buf_release(&t);
	}
	ok(bad == 0, "a byte changed in %d places: the same errors", broken);
	for (long stop = 1; stop < 42000; stop *= 3)
		alike("freed early", m.b.p, m.b.n, 0, false, stop, &bad, NULL);
	ok(bad == 0, "a reader freed half-way, ahead: no wait, no leak");
	ist_buf_release(&x);
	ist_buf_release(&m.b);
}

/*
 * Frames of many chunks (1 MB, about 75,000 records, 150 chunks): the
 * producer decompresses each next frame a slice (256 KiB) at a time as it
 * splits the one before, and says what it found there only after that
 * one.  Cut, broken and damaged in each frame: what reading here says,
 * where it says it.
 */
static void
test_ahead_early(void)
{
	struct mem m = { 0 };
	struct ist_writer *w;
	struct ist_writer_opts o = { .frame_bytes = 1000000 };
	struct ist_error e;
	struct ist_event h;
	int bad = 0, n = 0;
	bool same;

	ist_writer_new(&w, sink, &m, &o, &e);
	ist_event_init(&h, IST_HEADER);
	ist_writer_header(w, &h, &e);
	write_sample(w, 300000);
	ist_writer_close(w, &e);
	rests = 0;
	same = alike("whole", m.b.p, m.b.n, 0, false, 0, &bad, NULL) &&
	    alike("by 777 bytes", m.b.p, m.b.n, 777, false, 0, &bad, NULL);
	ok(m.nframes >= 4 && same && rests == 2 * (uint64_t)m.nframes,
	    "%d frames of 1 MB "
	    "read ahead: the same records, spans, frames, status and stats, "
	    "the frames' rests split by the reader too (%llu)", m.nframes,
	    (unsigned long long)rests);
	for (int f = 1; f < m.nframes; f++)
		for (int i = 1; i < 4; i++, n++) {
			size_t cut = m.frames[f - 1] + (m.frames[f] -
			    m.frames[f - 1]) * i / 4;
			alike("cut in a big frame", m.b.p, cut, 0, false, 0,
			    &bad, NULL);
		}
	for (int f = 1; f < m.nframes; f++, n++) {
		struct ist_buf t = { 0 };
		/* a record broken two thirds in, its frame compressed again */
		size_t k = with_byte(&m, f, frame_raw(&m, f) / 3 * 2, 0xff,
		    &t);

		alike("a big frame broken", t.p, t.n, 0, false, 0, &bad, NULL);
		/* and its compressed bytes damaged half-way: zstd says so */
		memcpy(t.p + m.frames[f - 1] + k / 2, "\377\377\377\377", 4);
		alike("a big frame damaged", t.p, t.n, 0, false, 0, &bad, NULL);
		ist_buf_release(&t);
	}
	ok(bad == 0, "cut, broken and damaged in %d places of big frames: the "
	    "same as reading here, the frames' rests split by the reader or "
	    "not (%s)", n, ahead_file ? "a file" :
	    "from memory, the next frame decompressed early from bytes "
	    "read already");
	ist_buf_release(&m.b);
}

struct copy {
	struct ist_writer *w;
	int frames;
	size_t skip;            /* the header at the frame's start */
};

static void
copy_frame(void *ctx, const uint8_t *p, size_t n)
{
	struct copy *c = ctx;
	struct ist_error e;

	if (ist_writer_raw_frame(c->w, p + c->skip, n - c->skip, &e) !=
	    IST_OK)
		abort();
	c->skip = 0;
	c->frames++;
}

/*
 * A trace copied frame by frame (ist_reader_on_frame to
 * ist_writer_raw_frame) decodes as the original; after a copied frame
 * only records without strings or tracks may be written.
 */
static void
test_raw_frames(void)
{
	struct mem m = { 0 }, c = { 0 };
	struct ist_writer *w;
	struct ist_writer_opts o = { .frame_bytes = 300 }, sc = {
	    .self_contained = true };
	struct ist_error e;
	struct ist_event h, an, ev;
	struct ist_buf a = { 0 }, b = { 0 };
	struct src s;
	struct ist_reader *r;
	const struct ist_event *rev;
	struct copy cp = { NULL, 0, 0 };
	size_t off;
	enum ist_status st;
	int n;

	ist_writer_new(&w, sink, &m, &o, &e);
	ist_event_init(&h, IST_HEADER);
	ist_writer_header(w, &h, &e);
	write_sample(w, 200);
	ist_writer_close(w, &e);

	ist_writer_new(&cp.w, sink, &c, NULL, &e);
	s = (struct src){ m.b.p, m.b.n, 0, 0 };
	ist_reader_new(&r, source, &s, "mem", &e);
	ist_reader_on_frame(r, copy_frame, &cp);
	while ((st = ist_reader_next(r, &rev, &e)) == IST_OK) {
		if (rev->type != IST_HEADER)
			continue;
		if (ist_writer_header(cp.w, rev, &e))
			abort();
		ist_reader_span(r, &off, &cp.skip);
		cp.skip += off;
	}
	ist_reader_free(r);
	ist_event_init(&an, IST_ANALYSIS);
	an.data = (struct ist_blob){ (const uint8_t *)"\xa0", 1 };
	IST_SET(&an, IST_F_DATA);
	ok(ist_writer_write(cp.w, &an, &e) == IST_OK,
	    "after a copied frame: an analysis may be written");
	ist_event_init(&ev, IST_CPU_CALL);
	ev.pid = ev.tid = 1;
	ev.name = S("f");
	ev.start_ns = 1;
	ev.end_ns = 2;
	SET(&ev, PID); SET(&ev, TID); SET(&ev, NAME); SET(&ev, START);
	SET(&ev, END);
	ok(ist_writer_write(cp.w, &ev, &e) == IST_EINVAL &&
	    strstr(e.msg, "copied through") != NULL,
	    "but not a record with a track and a string: %s", e.msg);
	ist_writer_close(cp.w, &e);
	ok(st == IST_END && cp.frames == m.nframes && c.nframes ==
	    m.nframes + 1, "every frame copied as one (%d of %d; %d written)",
	    cp.frames, m.nframes, c.nframes);
	decode(m.b.p, m.b.n, 0, &a, &e, &n);
	decode(c.b.p, c.b.n, 0, &b, &e, &n);
	ok(b.n > a.n && memcmp(a.p, b.p, a.n) == 0 &&
	    strcmp(b.p + a.n, "{\"type\":\"analysis\",\"data\":{}}\n") == 0,
	    "the copy decodes as the original, then the analysis");
	ist_writer_new(&w, sink, &c, &sc, &e);
	ist_writer_header(w, &h, &e);
	ok(ist_writer_raw_frame(w, "\x80", 1, &e) == IST_EINVAL,
	    "a self-contained writer copies no frame: %s", e.msg);
	ist_writer_free(w);
	ist_buf_release(&a);
	ist_buf_release(&b);
	ist_buf_release(&m.b);
	ist_buf_release(&c.b);
}

struct copyz {
	struct ist_reader *r;
	struct ist_writer *w;
	size_t skip;            /* the header at the frame's start */
	int frames, as_they_came;
};

static void
copy_frame_z(void *ctx, const uint8_t *p, size_t n)
{
	struct copyz *c = ctx;
	struct ist_error e;
	const void *z;
	size_t zn;
	enum ist_status st;

	if (c->skip == 0 && ist_reader_frame_z(c->r, &z, &zn)) {
		struct ist_writer_stats a, b;
		ist_writer_stats(c->w, &a);
		st = ist_writer_raw_frame_z(c->w, p, n, z, zn, &e);
		ist_writer_stats(c->w, &b);
		c->as_they_came += b.out_bytes - a.out_bytes == zn;
	} else {
		st = ist_writer_raw_frame(c->w, p + c->skip, n - c->skip, &e);
	}
	if (st != IST_OK)
		abort();
	c->skip = 0;
	c->frames++;
}

/* n bytes of m copied by a reader fed 7 bytes at a time (a frame's bytes
 * come in many reads) into c, each frame as it came where it may */
static int
copy_z(const struct mem *m, size_t n, struct mem *c, struct copyz *cz)
{
	struct ist_error e;
	struct src s = { m->b.p, n, 0, 7 };
	const struct ist_event *ev;
	enum ist_status st;
	size_t off;

	*cz = (struct copyz){ 0 };
	ist_writer_new(&cz->w, sink, c, NULL, &e);
	ist_reader_new(&cz->r, source, &s, "mem", &e);
	ist_reader_on_frame(cz->r, copy_frame_z, cz);
	while ((st = ist_reader_next(cz->r, &ev, &e)) == IST_OK) {
		if (ev->type != IST_HEADER)
			continue;
		if (ist_writer_header(cz->w, ev, &e))
			abort();
		ist_reader_span(cz->r, &off, &cz->skip);
		cz->skip += off;
	}
	ist_reader_free(cz->r);
	ist_writer_close(cz->w, &e);
	return st;
}

/*
 * Frames copied as they came (ist_reader_frame_z to ist_writer_raw_frame_z,
 * is-analyze's way): every frame but the header's goes out as it came, so
 * the copy of a trace the reference writer wrote is the same bytes; a
 * frame cut short, or stored rather than compressed, is compressed anew.
 */
static void
test_raw_frames_z(void)
{
	struct mem m = { 0 }, c = { 0 }, st = { 0 };
	struct ist_writer *w;
	struct ist_writer_opts o = { .frame_bytes = 300 }, so = {
	    .frame_bytes = 300, .store = true };
	struct ist_error e;
	struct ist_event h;
	struct ist_buf a = { 0 }, b = { 0 };
	struct copyz cz;
	size_t cut;
	int n, k;

	ist_writer_new(&w, sink, &m, &o, &e);
	ist_event_init(&h, IST_HEADER);
	ist_writer_header(w, &h, &e);
	write_sample(w, 200);
	ist_writer_close(w, &e);

	k = copy_z(&m, m.b.n, &c, &cz);
	ok(k == IST_END && cz.frames == m.nframes &&
	    cz.as_they_came == m.nframes - 1 && m.nframes > 5 &&
	    c.b.n == m.b.n && memcmp(c.b.p, m.b.p, m.b.n) == 0,
	    "copied as they came: %d of %d frames (all but the header's), "
	    "the same bytes", cz.as_they_came, m.nframes);
	/* cut inside the last frame, which has blocks before the cut: its
	 * whole records are compressed anew */
	ist_buf_release(&m.b);
	m = (struct mem){ 0 };
	o.frame_bytes = 256 << 10;
	ist_writer_new(&w, sink, &m, &o, &e);
	ist_writer_header(w, &h, &e);
	write_sample(w, 150000);
	ist_writer_close(w, &e);
	c.b.n = 0;
	c.nframes = 0;
	k = m.nframes - 2;      /* a whole frame of 256 KiB: blocks of 128 */
	cut = m.frames[k - 1] + (m.frames[k] - m.frames[k - 1]) * 3 / 4;
	copy_z(&m, cut, &c, &cz);
	decode(m.b.p, cut, 0, &a, &e, &n);
	decode(c.b.p, c.b.n, 0, &b, &e, &n);
	ok(cz.frames == k + 1 && cz.as_they_came == k - 1 && k >= 3 &&
	    a.n == b.n && memcmp(a.p, b.p, a.n) == 0 &&
	    memcmp(c.b.p, m.b.p, m.frames[k - 1]) == 0,
	    "a frame cut short is not copied as it came (%d of %d were): "
	    "its whole records, compressed anew, read as the cut original's "
	    "(%d events)", cz.as_they_came, cz.frames, n);
	/* stored frames: compressed anew */
	ist_writer_new(&w, sink, &st, &so, &e);
	ist_writer_header(w, &h, &e);
	write_sample(w, 200);
	ist_writer_close(w, &e);
	c.b.n = 0;
	c.nframes = 0;
	copy_z(&st, st.b.n, &c, &cz);
	decode(st.b.p, st.b.n, 0, &a, &e, &n);
	decode(c.b.p, c.b.n, 0, &b, &e, &n);
	ok(cz.as_they_came == 0 && cz.frames == st.nframes &&
	    c.b.n < st.b.n && a.n == b.n && memcmp(a.p, b.p, a.n) == 0,
	    "stored frames are compressed anew (%zu bytes of %zu), and read "
	    "as before", c.b.n, st.b.n);
	ist_buf_release(&a);
	ist_buf_release(&b);
	ist_buf_release(&m.b);
	ist_buf_release(&c.b);
	ist_buf_release(&st.b);
}

/* ist_writer_reserve: a frame's buffers whole and resident at once; the
 * writer's bytes then hold as it writes, the same bytes out */
static void
test_writer_reserve(void)
{
	struct mem a = { 0 }, b = { 0 };
	struct ist_writer *w, *v;
	struct ist_writer_opts o = { .frame_bytes = 1u << 20, .store = true };
	struct ist_error e;
	struct ist_event h, big;
	size_t b0, b1, b2;
	enum ist_status k, kb;
	static char s[(1 << 20) + 1];

	ist_event_init(&h, IST_HEADER);
	ist_writer_new(&w, sink, &a, &o, &e);
	ist_writer_new(&v, sink, &b, &o, &e);
	/* the CBOR and its stored copy, 1 MiB + 64 KiB each, and zstd's
	 * workspace for such frames (made resident: the real runs'
	 * tests, analyze-real.bats) */
	k = ist_writer_reserve(w, &e);
	b0 = ist_writer_bytes(w);
	ok(k == IST_OK && b0 >= 2 * ((1u << 20) + (64u << 10)) &&
	    b0 < (3u << 20), "reserved: %zu bytes", b0);
	ist_writer_header(w, &h, &e);
	ist_writer_header(v, &h, &e);
	write_sample(w, 500000);
	write_sample(v, 500000);
	b1 = ist_writer_bytes(w);
	/* a name of 1 MiB, the most a string may be, once the frame holds
	 * more than its room past 1 MiB */
	write_sample(w, 20000);
	write_sample(v, 20000);
	memset(s, 'x', sizeof(s) - 1);
	ist_counter_init(&big, 10, -1, S(s), 1, 1);
	kb = ist_writer_write(w, &big, &e);
	ist_writer_write(v, &big, &e);
	b2 = ist_writer_bytes(w);
	ist_writer_close(w, &e);
	ist_writer_close(v, &e);
	ok(b1 == b0 && a.nframes > 4 && a.b.n == b.b.n &&
	    memcmp(a.b.p, b.b.p, a.b.n) == 0,
	    "%d frames written: its bytes as reserved, the same bytes out as "
	    "a writer's that grew its buffers", a.nframes);
	ok(kb == IST_OK && b2 > b0,
	    "a record past a frame's room grows them: %zu bytes", b2);
	ist_buf_release(&a.b);
	ist_buf_release(&b.b);
}

int
main(void)
{
	test_plans();
	test_gc_name();
	test_buf();
	test_fields();
	test_chunks_and_truncation();
	test_concat();
	test_skim();
	test_promises();
	test_ahead();
	test_ahead_early();
	ahead_file = true;
	test_ahead_early();
	ahead_file = false;
	test_raw_frames();
	test_raw_frames_z();
	test_writer_errors();
	test_writer_background();
	test_writer_reserve();
	test_writer_from();
	test_reader_where();
	test_many_names();
	test_int_widths();
	test_writer_timed();
	test_flush_interval();
	test_json();
	test_json_str();
	test_plain();
	return done();
}
