/* analysis_io.h - analyses in and out of traces. */
#ifndef IST_ANALYSIS_IO_H
#define IST_ANALYSIS_IO_H

#include <jansson.h>
#include "ist.h"

struct ist_rules;
struct ist_analyzer;

/*
 * Reads r to its end, analysing every record and, when w is given, copying
 * them to w: frame by frame as they came (ist_writer_raw_frame), with each
 * header written anew with the promise of an analysis; with summary, only
 * headers, processes, threads, devices and loss records, encoded again.
 * Earlier analysis records are dropped; the caller appends
 * the new one with ist_write_analysis().  Returns IST_OK, IST_TRUNCATED (a warning in err),
 * or the reader's error; in all three cases *out is the analysis of what
 * was read.  Other errors (writer, memory) leave *out NULL.  window: NULL,
 * or the span analysed (ist_analyzer_window, ist_analyzer_window_at).
 */
struct ist_window {
	int64_t rel[2];     /* ns from the trace's start (-1: its start, end) */
	bool at;            /* or instead, in trace time: */
	int64_t from, to;   /* INT64_MIN, INT64_MAX: no bound */
	json_t *how;        /* with at: run.window.steps (borrowed) */
};
/* The trace once more, for the steps' second pass (ist_analyzer_again):
 * open gives a descriptor at the trace's start (closed after), or -1 when
 * it cannot be read again.  step: the step's name (--step), or NULL. */
struct ist_again {
	int (*open)(void *ctx);
	void *ctx;
	const char *step;
	/* Optional, so that the second pass may be made while the first
	 * reads (lib/analyze/ahead.c: the trace's start read again, then
	 * each event the first pass takes); NULL: only after it.  follow: a
	 * new descriptor to pread the trace from, its byte 0 at *base, or
	 * -1.  more: how many bytes from off may be read now (> 0), 0 when
	 * the trace ends at off, IST_AGAIN_LATER when more is yet to come,
	 * -1 when it cannot be read; NULL: the whole trace is there, to the
	 * end of the file. */
	int (*follow)(void *ctx, uint64_t *base);
	long (*more)(void *ctx, uint64_t off);
	/* one thread (is-analyze --one-thread): no reading ahead, and the
	 * second pass only after the first (follow unused) */
	bool one_thread;
};
#define IST_AGAIN_LATER (-2L)
/* again: NULL, or how to read the trace again (the steps' second pass).
 * When nothing has been read from r yet, r is read ahead, and so is the
 * second pass (ist_reader_ahead), unless again->one_thread: r's source
 * must then be one that another thread may call until ist_reader_free. */
enum ist_status ist_analyze_trace(struct ist_reader *r, struct ist_writer *w,
    bool summary, const struct ist_rules *rules,
    const struct ist_window *window, const struct ist_again *again,
    json_t **out, struct ist_error *err);
/* Before the first event: the step's name from again. */
enum ist_status ist_again_begin(struct ist_analyzer *a,
    const struct ist_again *again, struct ist_error *err);
/* After the last: the second pass when the steps want one and the trace
 * can be read again (a second reading that fails leaves the steps
 * unmeasured, not the analysis). */
enum ist_status ist_again_pass(struct ist_analyzer *a,
    const struct ist_again *again, struct ist_error *err);
/* An opener for a trace file: ctx its path; and its follow */
int ist_again_path(void *path);
int ist_again_path_follow(void *path, uint64_t *base);
/* The analysis an analysis record holds; NULL if it is not JSON-able. */
json_t *ist_analysis_of_event(const struct ist_event *ev);
/* Writes an analysis record holding an. */
enum ist_status ist_write_analysis(struct ist_writer *w, const json_t *an,
    struct ist_error *err);
/* The analysis as JSON text (two-space indent, keys in a fixed order). */
char *ist_analysis_dumps(const json_t *an);

/*
 * The i-th damage behind analysis an, as one line for a terminal in m
 * (control characters shown as '?'); false past the last.  The damage is
 * every input that is-merge could not read whole (data_quality's
 * damaged_inputs) and, with own, the analysed trace's own (an analysis
 * read from a trace, made by an is-analyze that read a damaged one).  A
 * tool warns with each and exits 1, as if it had read the damage itself.
 */
bool ist_analysis_damage_line(const json_t *an, size_t i, bool own, char *m,
    size_t n);

#endif
