/*
 * analyze.h - is-analyze's engine: metrics from one pass over a merged
 * trace, a static table of bottleneck rules, a verdict, and the regression
 * gate.  The analysis is a JSON tree (jansson), stored in the trace as the
 * CBOR `data` of an `analysis` record; formats/analysis.md documents it.
 *
 * Memory is bounded by the number of distinct names, threads and devices,
 * never by the number of events.
 */
#ifndef IST_ANALYZE_H
#define IST_ANALYZE_H

#include <jansson.h>
#include "config.h"
#include "ist.h"

#define IST_ANALYSIS_VERSION 1

/* ---- rules and their thresholds (lib/rules/rules.c) ---- */

struct ist_rules;
struct ist_rules *ist_rules_new(void);          /* the defaults */
void ist_rules_free(struct ist_rules *r);
/*
 * Loads thresholds from YAML: a mapping of rule names to mappings of
 * parameter names to numbers (`gpu_idle: {idle_pct: 5}`), or `enabled:
 * false`.  With under_key, the mapping is the value of that top-level key
 * (`rules:` in .inferscope.yaml) and other keys are ignored.  A missing
 * file is not an error when optional.  Errors name file, line and column.
 */
enum ist_status ist_rules_load(struct ist_rules *r, const char *path,
    bool optional, const char *under_key, struct ist_error *err);
/*
 * The thresholds in effect, as every tool takes them: defaults, then the
 * rules: section of the settings file cfg loaded (ist_config_load_file
 * keeps it: the file is parsed once), then the rules file (rules_file if
 * not NULL, else cfg's rules_file setting), each over the one before.
 */
enum ist_status ist_rules_configure(struct ist_rules *r,
    const struct ist_config *cfg, const char *rules_file,
    struct ist_error *err);
/* {"gpu_idle": {"enabled": true, "idle_pct": 10, ...}, ...} */
json_t *ist_rules_json(const struct ist_rules *r);

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
void ist_analyzer_free(struct ist_analyzer *a);

/* ---- trace in, trace out (analysis_io.c) ---- */

/*
 * Reads r to its end, analysing every record and, when w is given, copying
 * them to w (only headers, processes, threads, devices and loss records
 * with summary; earlier analysis records are dropped); the caller appends
 * the new one with ist_write_analysis().  Returns IST_OK, IST_TRUNCATED (a warning in err),
 * or the reader's error; in all three cases *out is the analysis of what
 * was read.  Other errors (writer, memory) leave *out NULL.
 */
enum ist_status ist_analyze_trace(struct ist_reader *r, struct ist_writer *w,
    bool summary, const struct ist_rules *rules, json_t **out,
    struct ist_error *err);
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

/* ---- the regression gate (baseline.c) ---- */

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
 * trace's last analysis record, else the trace analysed with rules. */
enum ist_status ist_analysis_load(const char *path,
    const struct ist_rules *rules, json_t **out, struct ist_error *err);

#endif
