/*
 * analyze.h - is-analyze's engine: metrics from one pass over a merged
 * trace, then the rules (rules.h) and a verdict.  Reading and writing
 * analyses is analysis_io.h's, the regression gate baseline.h's.  The analysis is a JSON tree (jansson), stored in the trace as the
 * CBOR `data` of an `analysis` record; formats/analysis.md documents it.
 *
 * Memory is bounded by the number of distinct names, threads and devices,
 * never by the number of events.
 */
#ifndef IST_ANALYZE_H
#define IST_ANALYZE_H

#include <stdbool.h>

#include <jansson.h>
#include "ist.h"

struct ist_rules;               /* rules.h */

#define IST_ANALYSIS_VERSION 1

/* ---- the analyzer ---- */

struct ist_analyzer;
enum ist_status ist_analyzer_new(struct ist_analyzer **out,
    const struct ist_rules *rules, struct ist_error *err);
/* Events in time order (a merged trace); analysis records are ignored. */
enum ist_status ist_analyzer_add(struct ist_analyzer *a,
    const struct ist_event *ev, struct ist_error *err);
/* Metrics, findings and verdict; st describes the input (loss, truncation).
 * The caller owns the returned tree. */
enum ist_status ist_analyzer_finish(struct ist_analyzer *a,
    const struct ist_reader_stats *st, json_t **out, struct ist_error *err);
/* The input could not be read to its end for a reason other than
 * truncation (msg, the reader's error): stated in data_quality's
 * read_error, and every confidence lowered. */
void ist_analyzer_read_error(struct ist_analyzer *a, const char *msg);
/* Analyses only [from_ns, to_ns) after the trace's first event (-1: its
 * start, its end): events outside are left out, ranges across an edge
 * cut at it.  Call before the first event. */
void ist_analyzer_window(struct ist_analyzer *a, int64_t from_ns,
    int64_t to_ns);
/* Analyses only [from, to) in trace time (INT64_MIN, INT64_MAX: no
 * bound): a window by step; how (taken) says how it was chosen, in the
 * analysis as run.window.steps. */
void ist_analyzer_window_at(struct ist_analyzer *a, int64_t from,
    int64_t to, json_t *how);
/* The step is the scope, NVTX range or function of this name (--step);
 * else the analyzer finds it.  Call before the first event. */
enum ist_status ist_analyzer_step(struct ist_analyzer *a, const char *name,
    struct ist_error *err);
/* After the last event: whether the steps section needs the trace once
 * more (a step was found, and no second reading made beside the first
 * measured it: ist_again_begin, lib/analyze/ahead.c).  If so, every event
 * again through ist_analyzer_again(), then ist_analyzer_finish(); if not,
 * or when the trace cannot be read again, ist_analyzer_finish() directly
 * (the section then says only which step it is, unless it was measured
 * beside). */
bool ist_analyzer_wants_again(struct ist_analyzer *a);
enum ist_status ist_analyzer_again(struct ist_analyzer *a,
    const struct ist_event *ev, struct ist_error *err);
/* The events handed to ist_analyzer_add() and ist_analyzer_again() from
 * now on are r's, each as ist_reader_next() returned it (NULL: no
 * longer): their names are then taken by r's string ids, without hashing
 * them.  A new reader (the second pass) is declared anew. */
void ist_analyzer_reader(struct ist_analyzer *a, const struct ist_reader *r);
void ist_analyzer_free(struct ist_analyzer *a);

#endif
