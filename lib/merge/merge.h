/*
 * merge.h - is-merge's engine: align the clocks of every segment of every
 * input and write one trace with all records in global time order.
 */
#ifndef IST_MERGE_H
#define IST_MERGE_H

#include "ist.h"

struct ist_merge_opts {
	size_t memory_bytes;     /* sort buffer; beyond it, sorted runs spill */
	int64_t margin_ns;       /* stated uncertainty of unaligned clocks */
	const char *tmpdir;      /* for spilled runs and spooled stdin */
	/* called every 65536 events read: the inputs' bytes read and their
	 * total (twice their size when a GPU trace is read a second time,
	 * from when that is known), for a progress line */
	void (*progress)(void *ctx, uint64_t at, uint64_t total,
	    uint64_t events);
	void *progress_ctx;
};

/*
 * Merges the inputs (paths; "-" is standard input) into out_fd.  A bad or
 * truncated input is reported through note and merged as far as it reads;
 * the result is then IST_EPARTIAL (err->where IST_AT_INPUT), after the
 * output was written and its header's sources said what was lost.  Other
 * errors (the output, memory, temporary files) stop with nothing usable
 * written; err->where tells the output's from the rest.
 */
enum ist_status ist_merge(char *const *paths, int n, int out_fd,
    const struct ist_merge_opts *o, ist_note_fn note, void *ctx,
    struct ist_error *err);

#endif
