/*
 * rules.h - the bottleneck rules: one small file per rule, one static table
 * (rules.c).  A rule reads the metrics of the analysis (the JSON tree
 * documented in formats/analysis.md) and appends findings.
 */
#ifndef IST_RULES_H
#define IST_RULES_H

#include <stdbool.h>

#include <jansson.h>

#define IST_RULE_MAXP 8

struct ist_param {
	const char *name;
	double def;
	const char *doc;
};

struct ist_rule {
	const char *name;
	const char *doc;
	const struct ist_param params[IST_RULE_MAXP];   /* name NULL ends */
	/* Returns NULL when the rule fired or did not, else why it was
	 * skipped ("no GPU activity"). */
	const char *(*run)(const json_t *an, const double *p, json_t *findings);
};

extern const struct ist_rule ist_rule_gpu_idle, ist_rule_transfer,
    ist_rule_sync, ist_rule_launch_bound, ist_rule_cpu_contention,
    ist_rule_memory_pressure, ist_rule_gpu_bound, ist_rule_gc_pause,
    ist_rule_startup;
extern const struct ist_rule *const ist_rule_table[];
extern const size_t ist_nrules;

/* ---- helpers for rules ---- */
double ist_jnum(const json_t *o, const char *key);     /* 0 if absent */
/* An integer: exact for JSON integers, reals clamped to the int64 range
 * (a cast of an out-of-range double is undefined), 0 if absent. */
long long ist_jint(const json_t *o, const char *key);
/* A double as an integer, clamped (NaN: 0). */
long long ist_d2i(double d);
const char *ist_jstr(const json_t *o, const char *key); /* "" if absent */
double ist_round(double v, int digits);
/* A new finding appended to findings; returns it for more evidence. */
json_t *ist_finding(json_t *findings, const char *rule, const char *kind,
    const char *severity, double confidence, const char *title,
    const char *suggestion);
/* "high" past 3x the threshold, "medium" past 1.5x, else "low". */
const char *ist_severity(double value, double threshold);
/* confidence from how far value is past threshold: 0.6 at it, 0.95 far */
double ist_margin_confidence(double value, double threshold);
/* The thread with Python calls whose `python` map has the largest key (the
 * first of equals); NULL when no thread has Python calls. */
const json_t *ist_python_thread_max(const json_t *an, const char *key);
/* pid, tid and thread (its name) of thread t, as evidence. */
void ist_thread_evidence(json_t *ev, const json_t *t);

#endif
