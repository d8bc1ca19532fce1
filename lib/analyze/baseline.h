/* baseline.h - the regression gate: an analysis against a baseline, and
 * --fail-on. */
#ifndef IST_BASELINE_H
#define IST_BASELINE_H

#include <jansson.h>
#include "ist.h"

struct ist_rules;

/* Adds a "baseline" section to now: overall, per-scope and per-kernel
 * deltas against base (another analysis). */
enum ist_status ist_analysis_compare(json_t *now, const json_t *base,
    struct ist_error *err);

/*
 * --fail-on SPEC: comma-separated conditions, any of which fails the run:
 *   regression>P%        any compared metric (wall time, a scope's mean,
 *                        a kernel's total) grew by more than P percent
 *   wall>P%  scope:NAME>P%  kernel:NAME>P%  gpu_busy<P%
 *   severity>=LEVEL      a finding of at least LEVEL (low, medium, high)
 *   rule:NAME            that rule fired
 * Returns IST_OK and sets *failed (with the reasons in why, one per line),
 * or IST_EINVAL for a bad spec.
 */
enum ist_status ist_failon_check(const char *spec, const json_t *analysis,
    bool *failed, struct ist_buf *why, struct ist_error *err);

/* The analysis of a trace or of an analysis JSON file (--baseline): the
 * trace's last analysis record (skimmed to, when the trace promises it
 * and is-analyze put it at a frame's start: ist_reader_skim), else the
 * trace analysed with rules and step (the step's name, as --step; NULL:
 * found). */
enum ist_status ist_analysis_load(const char *path, const char *step,
    const struct ist_rules *rules, json_t **out, struct ist_error *err);

#endif
