/*
 * fuzz_jsonl.c - libFuzzer target: JSON Lines through the encoder.  Every
 * line the parser accepts must come back out of a trace as the same JSON
 * as it printed before encoding (the round trip is exact).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memsrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ist_json_scratch *s = ist_json_scratch_new();
	struct ist_buf enc = { 0 }, a = { 0 }, b = { 0 };
	struct ist_writer *w = NULL;
	struct ist_reader *r = NULL;
	struct ist_error e;
	struct ist_event hdr;
	const struct ist_event *ev;
	const char *p = (const char *)data, *end = p + size;
	struct memsrc m;

	ist_event_init(&hdr, IST_HEADER);
	if (ist_writer_new(&w, mem_sink, &enc, NULL, &e) != IST_OK ||
	    ist_writer_header(w, &hdr, &e) != IST_OK)
		abort();
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct ist_event ev2;

		if (ist_event_from_json(p, n, &ev2, s, &e) == IST_OK &&
		    ist_writer_write(w, &ev2, &e) == IST_OK &&
		    ev2.type != IST_HEADER)
			ist_event_to_json(&ev2, &a, &e);
		p += n + 1;
	}
	if (ist_writer_close(w, &e) != IST_OK)
		abort();
	m = (struct memsrc){ (const uint8_t *)enc.p, enc.n, 0, 0 };
	if (ist_reader_new(&r, mem_source, &m, "fuzz", &e) != IST_OK)
		abort();
	while (ist_reader_next(r, &ev, &e) == IST_OK)
		if (ev->type != IST_HEADER)
			ist_event_to_json(ev, &b, &e);
	if (a.n != b.n || (a.n && memcmp(a.p, b.p, a.n) != 0)) {
		fprintf(stderr, "round trip differs:\n%.*s---\n%.*s",
		    (int)a.n, a.p ? a.p : "", (int)b.n, b.p ? b.p : "");
		abort();
	}
	ist_reader_free(r);
	ist_json_scratch_free(s);
	ist_buf_release(&enc);
	ist_buf_release(&a);
	ist_buf_release(&b);
	return 0;
}
