/*
 * fuzz_merge.c - libFuzzer target: any bytes through is-merge's engine.
 *
 * The first byte picks the mode, as in fuzz_reader.c: even, the rest is the
 * input as it is; odd, the rest is raw CBOR put in zstd frames here.  The
 * merge sorts in a tiny budget, so that sorted runs spill and merge back.
 * Whatever the input, the output must read back whole, and merging it again
 * must give the same bytes (is-merge is idempotent).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <zstd.h>

#include "merge.h"
#include "memsrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
memfd_with(const void *p, size_t n)
{
	int fd = memfd_create("fuzz", 0);

	if (fd < 0 || (n && write(fd, p, n) != (ssize_t)n))
		abort();
	return fd;
}

/* The whole content of fd, from its start. */
static uint8_t *
slurp(int fd, size_t *n)
{
	off_t end = lseek(fd, 0, SEEK_END);
	uint8_t *p = malloc(end > 0 ? (size_t)end : 1);

	if (p == NULL || end < 0 || pread(fd, p, (size_t)end, 0) != end)
		abort();
	*n = (size_t)end;
	return p;
}

/* Merges fd's content into a new memfd; returns it, or -1 after a fatal
 * error (which a hostile input may cause: a record over the budget). */
static int
merge(int in, enum ist_status *st)
{
	char path[64];
	char *paths[1] = { path };
	struct ist_merge_opts o = { .memory_bytes = 1u << 20,
	    .margin_ns = 1000000, .tmpdir = "/tmp" };
	struct ist_error e;
	int out = memfd_create("out", 0);

	snprintf(path, sizeof(path), "/proc/self/fd/%d", in);
	*st = ist_merge(paths, 1, out, &o, NULL, NULL, &e);
	return out;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ist_buf framed = { 0 };
	enum ist_status st, st2;
	const struct ist_event *ev;
	struct ist_reader *r;
	struct ist_error e;
	struct memsrc m;
	uint8_t *a, *b;
	size_t na, nb;
	int in, out, out2;

	if (size < 2)
		return 0;
	if (data[0] & 1) {
		size_t bound = ZSTD_compressBound(size - 1), k;
		if (ist_buf_reserve(&framed, bound))
			abort();
		k = ZSTD_compress(framed.p, bound, data + 1, size - 1, 1);
		if (ZSTD_isError(k))
			abort();
		framed.n = k;
		in = memfd_with(framed.p, framed.n);
	} else {
		in = memfd_with(data + 1, size - 1);
	}
	out = merge(in, &st);
	a = slurp(out, &na);
	if (na > 0) {
		/* what was written reads back whole */
		m = (struct memsrc){ a, na, 0, 0 };
		if (ist_reader_new(&r, mem_source, &m, "merged", &e) != IST_OK)
			abort();
		while ((st2 = ist_reader_next(r, &ev, &e)) == IST_OK)
			;
		if (st2 != IST_END && st != IST_ENOMEM && st != IST_ELIMIT &&
		    st != IST_EIO) {
			fprintf(stderr, "merged output does not read: %s\n",
			    e.msg);
			abort();
		}
		ist_reader_free(r);
		/* and merges to itself */
		if (st2 == IST_END) {
			out2 = merge(out, &st2);
			b = slurp(out2, &nb);
			/* the same bytes, and damage carried is said
			 * again: a merge that failed fails once more */
			if ((st2 == IST_OK) != (st == IST_OK) || na != nb ||
			    memcmp(a, b, na) != 0) {
				fprintf(stderr, "merging the merged trace "
				    "changed it (%zu -> %zu bytes)\n", na, nb);
				abort();
			}
			free(b);
			close(out2);
		}
	}
	free(a);
	close(out);
	close(in);
	ist_buf_release(&framed);
	return 0;
}
