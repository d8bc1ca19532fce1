/*
 * fuzz_reader.c - libFuzzer target: any bytes through the trace reader.
 *
 * The first byte picks the mode.  Even: the rest is the input as it is
 * (zstd framing, magic, truncation).  Odd: the rest is raw CBOR, cut into
 * up to three zstd frames here, so that mutations reach the record decoder
 * instead of dying on a frame checksum.  The input is read in chunks of
 * 1 to 97 bytes, as a pipe would hand it over.
 */
#include <stdint.h>
#include <stdlib.h>

#include <zstd.h>

#include "memsrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ist_reader *r;
	struct ist_error e;
	struct ist_buf json = { 0 }, framed = { 0 };
	const struct ist_event *ev;
	struct memsrc m;

	if (size < 2)
		return 0;
	if (data[0] & 1) {
		size_t cut[4] = { 1, 1 + (size - 1) / 3, 1 + 2 * (size - 1) / 3,
		    size };
		for (int i = 0; i < 3; i++) {
			size_t n = cut[i + 1] - cut[i];
			size_t bound = ZSTD_compressBound(n);
			if (n == 0 || ist_buf_reserve(&framed, bound))
				continue;
			size_t k = ZSTD_compress(framed.p + framed.n, bound,
			    data + cut[i], n, 1);
			if (!ZSTD_isError(k))
				framed.n += k;
		}
		m = (struct memsrc){ (const uint8_t *)framed.p, framed.n, 0,
		    1 + data[0] % 97 };
	} else {
		m = (struct memsrc){ data + 1, size - 1, 0, 1 + data[0] % 97 };
	}
	if (ist_reader_new(&r, mem_source, &m, "fuzz", &e) != IST_OK)
		abort();
	while (ist_reader_next(r, &ev, &e) == IST_OK) {
		json.n = 0;
		(void)ist_event_to_json(ev, &json, &e);
	}
	ist_reader_free(r);
	ist_buf_release(&json);
	ist_buf_release(&framed);
	return 0;
}
