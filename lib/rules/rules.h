/*
 * rules.h - the bottleneck rules: one small file per rule, one static table
 * (rules.c).  A rule reads the metrics of the analysis (the JSON tree
 * documented in formats/analysis.md) and appends findings.
 */
#ifndef IST_RULES_H
#define IST_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "config.h"
#include "ist.h"

#define IST_RULE_MAXP 8

/* The rules, in the order they run and are listed. */
enum ist_rule_id {
	IST_RULE_GPU_IDLE, IST_RULE_TRANSFER, IST_RULE_SYNC,
	IST_RULE_LAUNCH_BOUND, IST_RULE_CPU_CONTENTION,
	IST_RULE_MEMORY_PRESSURE, IST_RULE_GPU_BOUND, IST_RULE_GC_PAUSE,
	IST_RULE_STARTUP, IST_RULE_STEP_WAIT,
	IST_NRULES
};

/* Each rule's thresholds, by name (formats/analysis.md, `thresholds`). */
struct ist_gpu_idle_params {
	double idle_pct, min_active_ms, top, kernel_wait_us;
};
struct ist_transfer_params {
	double copy_pct, saturation_pct, pageable_min_bytes, sync_copies_min;
};
struct ist_sync_params {
	double blocked_pct, min_count;
};
struct ist_launch_bound_params {
	double kernel_median_us, min_kernels, launch_delay_us, slow_launch_us,
	    min_idle_pct, slow_launch_pct;
};
struct ist_cpu_contention_params {
	double wait_pct, oversubscribed_pct, gil_cores, gil_min_ms,
	    min_wait_pct, gil_wait_threads;
};
struct ist_memory_pressure_params {
	double growth_pct, growth_min_mb, peak_pct, major_faults, gpu_peak_pct;
};
struct ist_gpu_bound_params {
	double busy_pct, top;
};
struct ist_gc_pause_params {
	double time_pct, min_ms, pause_ms;
};
struct ist_startup_params {
	double import_pct, import_min_ms;
};
struct ist_step_wait_params {
	double wait_pct, min_threads;
};

union ist_rule_params {
	struct ist_gpu_idle_params gpu_idle;
	struct ist_transfer_params transfer;
	struct ist_sync_params sync;
	struct ist_launch_bound_params launch_bound;
	struct ist_cpu_contention_params cpu_contention;
	struct ist_memory_pressure_params memory_pressure;
	struct ist_gpu_bound_params gpu_bound;
	struct ist_gc_pause_params gc_pause;
	struct ist_startup_params startup;
	struct ist_step_wait_params step_wait;
	double slot[IST_RULE_MAXP];
};
_Static_assert(sizeof(union ist_rule_params) == IST_RULE_MAXP *
    sizeof(double), "a rule has more than IST_RULE_MAXP thresholds");

struct ist_param {
	const char *name;
	size_t off;              /* in union ist_rule_params */
	double def;
	const char *doc;
};
/* One threshold: its name is its member's, so that a rule reads it typed
 * (p->idle_pct) and a misspelling does not compile. */
#define IST_PARAM(rule, member, def, doc) \
	{ #member, offsetof(union ist_rule_params, rule.member), def, doc }

struct ist_rule {
	const char *name;
	const char *doc;
	const struct ist_param params[IST_RULE_MAXP];   /* name NULL ends */
	/* Returns NULL when the rule fired or did not, else why it was
	 * skipped ("no GPU activity"). */
	const char *(*run)(const json_t *an, const union ist_rule_params *p,
	    json_t *findings);
};

extern const struct ist_rule ist_rule_gpu_idle, ist_rule_transfer,
    ist_rule_sync, ist_rule_launch_bound, ist_rule_cpu_contention,
    ist_rule_memory_pressure, ist_rule_gpu_bound, ist_rule_gc_pause,
    ist_rule_startup, ist_rule_step_wait;
extern const struct ist_rule *const ist_rule_table[IST_NRULES];

struct ist_rules;

/* ---- the thresholds in effect ---- */

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

/* The thresholds of rule id in r. */
const union ist_rule_params *ist_rules_params(const struct ist_rules *r,
    enum ist_rule_id id);
/* Runs every enabled rule over the analysis an and adds thresholds, rules,
 * verdict and findings to it; NULL when out of memory. */
json_t *ist_rules_run(const struct ist_rules *r, json_t *an);

/* ---- helpers for rules ---- */
/* When set (by a test), called with each key ist_jnum, ist_jint or
 * ist_jstr found absent from an object. */
extern void (*ist_rules_absent)(const char *key);
double ist_jnum(const json_t *o, const char *key);     /* 0 if absent */
/* An integer: exact for JSON integers, reals clamped to the int64 range
 * (a cast of an out-of-range double is undefined), 0 if absent. */
long long ist_jint(const json_t *o, const char *key);
/* A double as an integer, clamped (NaN: 0). */
long long ist_d2i(double d);
const char *ist_jstr(const json_t *o, const char *key); /* "" if absent */
/* What follows "GPU " for device d of the analysis: its "label" (letters,
 * digits, dashes, spaces and brackets only), else its number; in buf. */
const char *ist_dev_label(const json_t *d, char *buf, size_t n);
/* How a command ended, an entry of the analysis' run.exits: "exited with
 * status 1", "killed by SIGSEGV (signal 11)", "stopped by SIGINT"; in
 * buf. */
const char *ist_exit_text(const json_t *x, char *buf, size_t n);
/* The same as a sentence's predicate, "the program ... ": "exited with
 * status 1", "was killed by SIGSEGV (signal 11)"; in buf. */
const char *ist_exit_clause(const json_t *x, char *buf, size_t n);
/* Whether that end was a stop asked for (SIGHUP, SIGINT, SIGTERM: from a
 * terminal or a supervisor), as good as a run that ended. */
bool ist_exit_stopped(const json_t *x);
/* Whether it was an exit with status 0: the end no report need mention. */
bool ist_exit_clean(const json_t *x);
double ist_round(double v, int digits);
/* A new finding appended to findings; returns it for more evidence. */
json_t *ist_finding(json_t *findings, const char *rule, const char *kind,
    const char *severity, double confidence, const char *title,
    const char *suggestion);
/* "high" past 3x the threshold, "medium" past 1.5x, else "low". */
const char *ist_severity(double value, double threshold);
/* confidence from how far value is past threshold: 0.6 at it, 0.95 far */
double ist_margin_confidence(double value, double threshold);
/* The steps measured that a rule needs to judge by the steps */
#define IST_STEPS_MIN 3

/* cpu_contention's runqueue source when InferScope's own threads made
 * the queue: the verdict leaves such a finding out */
#define IST_SOURCE_RECORDER "InferScope's recording"
/* The median step's GPU busy share (0-1) where steps repeat, three or more
 * measured with GPU work, and *n how many; else -1.  A model's loading
 * keeps the GPU idle before the first step: the steady state is the
 * steps'. */
double ist_step_busy(const json_t *an, long long *n);
/* While the steps waited (waited_on: steps.critical_path.waited_on), the
 * other threads in Python calls on no core, queued for none and not
 * inside a C call: how many on average, the GIL's part (gil_waiting); -1
 * without their CPU and run-queue samples. */
double ist_waited_gil(const json_t *waited_on);
/* How many of those threads worked on average: on a core, queued for one
 * or waiting for the GIL (the rest of their time in calls they were
 * blocked where the collector saw no wait); their time in calls without
 * the samples. */
double ist_waited_working(const json_t *waited_on);
/* The thread with Python calls whose `python` map has the largest key (the
 * first of equals); NULL when no thread has Python calls. */
const json_t *ist_python_thread_max(const json_t *an, const char *key);
/* pid, tid and thread (its name) of thread t, as evidence. */
void ist_thread_evidence(json_t *ev, const json_t *t);

#endif
