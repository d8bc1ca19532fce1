/*
 * fuzz_reader.c - libFuzzer target: any bytes through the trace reader.
 *
 * The first byte picks the mode.  Even: the rest is the input as it is
 * (zstd framing, magic, truncation).  Odd: the rest is raw CBOR, cut into
 * up to three zstd frames here, so that mutations reach the record decoder
 * instead of dying on a frame checksum.  The input is read in chunks of
 * 1 to 97 bytes, as a pipe would hand it over.
 *
 * Every input is read twice, on this thread and reading ahead
 * (ist_reader_ahead): the records' JSON, the status, the message and the
 * stats must be the same, or it aborts.  It is then skimmed
 * (ist_reader_skim, which walks a frame's blocks to pass over it), for
 * the sanitizers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "memsrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One reading: every record's JSON into out, then the status, message
 * and stats. */
static void
read_all(struct memsrc m, bool ahead, bool skim, struct ist_buf *out)
{
	struct ist_reader *r;
	struct ist_reader_stats st;
	struct ist_error e = { 0 };
	const struct ist_event *ev;
	enum ist_status s;

	if (ist_reader_new(&r, mem_source, &m, "fuzz", &e) != IST_OK)
		abort();
	if (ahead && !ist_reader_ahead(r))
		abort();
	ist_reader_skim(r, skim);
	while ((s = ist_reader_next(r, &ev, &e)) == IST_OK)
		(void)ist_event_to_json(ev, out, &e);
	ist_reader_stats(r, &st);
	ist_buf_printf(out, "status %d where %d record %llu: %s\n"
	    "records %llu events %llu frames %llu segments %llu raw %llu "
	    "skipped %llu truncated %llu kept %llu\n", (int)s, (int)e.where,
	    (unsigned long long)e.record, e.msg,
	    (unsigned long long)st.records, (unsigned long long)st.events,
	    (unsigned long long)st.frames, (unsigned long long)st.segments,
	    (unsigned long long)st.raw_bytes, (unsigned long long)st.skipped,
	    (unsigned long long)st.truncated_bytes,
	    (unsigned long long)st.truncated_kept);
	/* the input read whole, both ways */
	if (s == IST_END)
		ist_buf_printf(out, "in %llu\n",
		    (unsigned long long)st.in_bytes);
	ist_reader_free(r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ist_buf framed = { 0 }, here = { 0 }, ahead = { 0 };
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
	read_all(m, false, false, &here);
	read_all(m, true, false, &ahead);
	if (here.n != ahead.n || memcmp(here.p, ahead.p, here.n) != 0)
		abort();
	ahead.n = 0;
	read_all(m, false, true, &ahead);
	ist_buf_release(&here);
	ist_buf_release(&ahead);
	ist_buf_release(&framed);
	return 0;
}
