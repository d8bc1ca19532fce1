/*
 * rules.c - the rule table, thresholds from YAML, running the rules and the
 * overall verdict.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "internal.h"
#include "rules/rules.h"

const struct ist_rule *const ist_rule_table[IST_NRULES] = {
	[IST_RULE_GPU_IDLE] = &ist_rule_gpu_idle,
	[IST_RULE_TRANSFER] = &ist_rule_transfer,
	[IST_RULE_SYNC] = &ist_rule_sync,
	[IST_RULE_LAUNCH_BOUND] = &ist_rule_launch_bound,
	[IST_RULE_CPU_CONTENTION] = &ist_rule_cpu_contention,
	[IST_RULE_MEMORY_PRESSURE] = &ist_rule_memory_pressure,
	[IST_RULE_GPU_BOUND] = &ist_rule_gpu_bound,
	[IST_RULE_GC_PAUSE] = &ist_rule_gc_pause,
	[IST_RULE_STARTUP] = &ist_rule_startup,
	[IST_RULE_STEP_WAIT] = &ist_rule_step_wait,
};

struct ist_rules {
	bool enabled[IST_NRULES];
	union ist_rule_params p[IST_NRULES];
};

/* Threshold k of rule i, where the rule reads it. */
static double *
slot(struct ist_rules *r, size_t i, int k)
{
	return (double *)((char *)&r->p[i] + ist_rule_table[i]->params[k].off);
}

static double
value(const struct ist_rules *r, size_t i, int k)
{
	double v;

	memcpy(&v, (const char *)&r->p[i] + ist_rule_table[i]->params[k].off,
	    sizeof(v));
	return v;
}

struct ist_rules *
ist_rules_new(void)
{
	struct ist_rules *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	for (size_t i = 0; i < IST_NRULES; i++) {
		r->enabled[i] = true;
		for (int k = 0; ist_rule_table[i]->params[k].name; k++)
			*slot(r, i, k) = ist_rule_table[i]->params[k].def;
	}
	return r;
}

void
ist_rules_free(struct ist_rules *r)
{
	free(r);
}

static int
rule_index(const char *name)
{
	for (size_t i = 0; i < IST_NRULES; i++)
		if (strcmp(ist_rule_table[i]->name, name) == 0)
			return (int)i;
	return -1;
}

static int
param_index(int rule, const char *name)
{
	for (int k = 0; ist_rule_table[rule]->params[k].name; k++)
		if (strcmp(ist_rule_table[rule]->params[k].name, name) == 0)
			return k;
	return -1;
}

const union ist_rule_params *
ist_rules_params(const struct ist_rules *r, enum ist_rule_id id)
{
	return &r->p[id];
}

json_t *
ist_rules_json(const struct ist_rules *r)
{
	json_t *o = json_object();
	for (size_t i = 0; i < IST_NRULES; i++) {
		json_t *p = json_pack("{s:b}", "enabled", r->enabled[i]);
		for (int k = 0; ist_rule_table[i]->params[k].name; k++)
			json_object_set_new(p,
			    ist_rule_table[i]->params[k].name,
			    json_real(value(r, i, k)));
		json_object_set_new(o, ist_rule_table[i]->name, p);
	}
	return o;
}

/* One threshold or `enabled` of rule i, from scalar node v. */
static enum ist_status
set_param(struct ist_rules *r, int i, const char *name, const yaml_node_t *v,
    const char *path, struct ist_error *err)
{
	const char *s = (const char *)v->data.scalar.value;
	int k;
	char *end;
	double d;

	if (strcmp(name, "enabled") == 0) {
		if (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on"))
			r->enabled[i] = true;
		else if (!strcmp(s, "false") || !strcmp(s, "no") ||
		    !strcmp(s, "off"))
			r->enabled[i] = false;
		else
			return ist_yaml_error(err, path, v, "enabled must be "
			    "true or false, not '%s'", s);
		return IST_OK;
	}
	if ((k = param_index(i, name)) < 0)
		return ist_yaml_error(err, path, v, "rule %s has no "
		    "threshold '%s'", ist_rule_table[i]->name, name);
	errno = 0;
	d = strtod(s, &end);
	if (errno || *end || end == s || !isfinite(d) || d < 0 || d > 1e12)
		return ist_yaml_error(err, path, v, "%s.%s must be a number "
		    "from 0 to 1e12, not '%s'", ist_rule_table[i]->name, name,
		    s);
	*slot(r, (size_t)i, k) = d;
	return IST_OK;
}

/*
 * Thresholds from node n of document d: rule -> { param: number, enabled:
 * bool }.  what names n in errors when it is not a mapping (the key it is
 * the value of, or NULL for a whole file).
 */
static enum ist_status
apply(struct ist_rules *r, yaml_document_t *d, yaml_node_t *n,
    const char *what, const char *path, struct ist_error *err)
{
	static const char *const shape = "rules must be a mapping of rule "
	    "names to mappings of thresholds";
	yaml_node_pair_t *rp, *pp;
	enum ist_status st;

	if (n->type != YAML_MAPPING_NODE)
		return what && n->type == YAML_SCALAR_NODE ?
		    ist_yaml_error(err, path, n, "'%s' wants a mapping of "
		    "thresholds", what) : ist_yaml_error(err, path, n, "%s",
		    shape);
	for (rp = n->data.mapping.pairs.start; rp < n->data.mapping.pairs.top;
	    rp++) {
		yaml_node_t *k = yaml_document_get_node(d, rp->key);
		yaml_node_t *v = yaml_document_get_node(d, rp->value);
		const char *name = (const char *)k->data.scalar.value;
		int i;

		if (k->type != YAML_SCALAR_NODE)
			return ist_yaml_error(err, path, k, "a mapping cannot "
			    "be a key");
		if ((i = rule_index(name)) < 0)
			return ist_yaml_error(err, path, k, "unknown rule "
			    "'%s'", name);
		if (v->type == YAML_SCALAR_NODE)
			return ist_yaml_error(err, path, v, "'%s' wants a "
			    "mapping of thresholds", name);
		if (v->type != YAML_MAPPING_NODE)
			return ist_yaml_error(err, path, v, "%s", shape);
		for (pp = v->data.mapping.pairs.start;
		    pp < v->data.mapping.pairs.top; pp++) {
			yaml_node_t *pk = yaml_document_get_node(d, pp->key);
			yaml_node_t *pv = yaml_document_get_node(d, pp->value);

			if (pk->type != YAML_SCALAR_NODE)
				return ist_yaml_error(err, path, pk,
				    "a mapping cannot be a key");
			if (pv->type == YAML_MAPPING_NODE)
				return ist_yaml_error(err, path, pv,
				    "'%s' wants a number",
				    (const char *)pk->data.scalar.value);
			if (pv->type != YAML_SCALAR_NODE)
				return ist_yaml_error(err, path, pv, "%s",
				    shape);
			if ((st = set_param(r, i, (const char *)
			    pk->data.scalar.value, pv, path, err)) != IST_OK)
				return st;
		}
	}
	return IST_OK;
}

enum ist_status
ist_rules_load(struct ist_rules *r, const char *path, bool optional,
    const char *under_key, struct ist_error *err)
{
	yaml_document_t *d;
	yaml_node_t *root, *n = NULL;
	yaml_node_pair_t *pr;
	enum ist_status st;

	if ((st = ist_yaml_load(path, optional, &d, err)) != IST_OK ||
	    d == NULL)
		return st;
	root = yaml_document_get_root_node(d);
	if (root && under_key && root->type == YAML_MAPPING_NODE) {
		for (pr = root->data.mapping.pairs.start;
		    pr < root->data.mapping.pairs.top; pr++) {
			yaml_node_t *k = yaml_document_get_node(d, pr->key);
			if (k->type == YAML_SCALAR_NODE && strcmp((const char *)
			    k->data.scalar.value, under_key) == 0)
				n = yaml_document_get_node(d, pr->value);
		}
	} else if (root && under_key) {
		st = ist_yaml_error(err, path, root, "expected a mapping");
	} else {
		n = root;
	}
	if (st == IST_OK && n)
		st = apply(r, d, n, under_key, path, err);
	ist_yaml_free(d);
	return st;
}

enum ist_status
ist_rules_configure(struct ist_rules *r, const struct ist_config *cfg,
    const char *rules_file, struct ist_error *err)
{
	enum ist_status st;

	if (cfg->yaml && (st = apply(r, cfg->yaml, yaml_document_get_node(
	    cfg->yaml, cfg->rules_node), "rules", cfg->yaml_path, err)) !=
	    IST_OK)
		return st;
	if (rules_file == NULL && *ist_config_str(cfg, IST_K_RULES_FILE))
		rules_file = ist_config_str(cfg, IST_K_RULES_FILE);
	return rules_file ? ist_rules_load(r, rules_file, false, NULL, err) :
	    IST_OK;
}

/* ---- helpers ---- */

void (*ist_rules_absent)(const char *key);

/* A key a rule reads that the analysis lacks: told to the hook (a test's),
 * which catches a rule reading a key the analyzer does not write. */
static json_t *
get(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL && o != NULL && ist_rules_absent)
		ist_rules_absent(key);
	return v;
}

double
ist_jnum(const json_t *o, const char *key)
{
	json_t *v = get(o, key);
	return json_is_number(v) ? json_number_value(v) : 0;
}

long long
ist_d2i(double d)
{
	if (d != d)
		return 0;
	if (d < -9.2e18)
		return INT64_MIN;
	if (d > 9.2e18)
		return INT64_MAX;
	return (long long)d;
}

long long
ist_jint(const json_t *o, const char *key)
{
	json_t *v = get(o, key);
	if (json_is_integer(v))
		return json_integer_value(v);
	return json_is_real(v) ? ist_d2i(json_real_value(v)) : 0;
}

const char *
ist_jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(get(o, key));
	return s ? s : "";
}

const char *
ist_dev_label(const json_t *d, char *buf, size_t n)
{
	const char *l = json_string_value(json_object_get(d, "label"));

	if (l != NULL && *l && strlen(l) < n &&
	    strspn(l, "0123456789abcdefABCDEF-GPU ()") == strlen(l))
		snprintf(buf, n, "%s", l);
	else
		snprintf(buf, n, "%lld", ist_jint(d, "device"));
	return buf;
}

bool
ist_exit_stopped(const json_t *x)
{
	long long sig = ist_jint(x, "signal");

	return sig == SIGHUP || sig == SIGINT || sig == SIGTERM;
}

bool
ist_exit_clean(const json_t *x)
{
	return !json_is_integer(json_object_get(x, "signal")) &&
	    ist_jint(x, "code") == 0;
}

const char *
ist_exit_text(const json_t *x, char *buf, size_t n)
{
	const char *sn = ist_jstr(x, "signal_name");
	long long sig = ist_jint(x, "signal");
	char num[32];

	if (!json_is_integer(json_object_get(x, "signal"))) {
		snprintf(buf, n, "exited with status %lld", ist_jint(x,
		    "code"));
		return buf;
	}
	/* a name from the trace: said only when it is a signal's */
	if (strncmp(sn, "SIG", 3) != 0 || strlen(sn) > 12 || strspn(sn,
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+") != strlen(sn))
		sn = "";
	snprintf(num, sizeof(num), "signal %lld", sig);
	if (ist_exit_stopped(x))
		snprintf(buf, n, "stopped by %s", *sn ? sn : num);
	else if (*sn)
		snprintf(buf, n, "killed by %s (%s)", sn, num);
	else
		snprintf(buf, n, "killed by %s", num);
	return buf;
}

const char *
ist_exit_clause(const json_t *x, char *buf, size_t n)
{
	char how[48];

	snprintf(buf, n, "%s%s", json_is_integer(json_object_get(x,
	    "signal")) ? "was " : "", ist_exit_text(x, how, sizeof(how)));
	return buf;
}

double
ist_waited_working(const json_t *w)
{
	const json_t *x = json_object_get(w, "working");

	return json_is_number(x) ? json_number_value(x) : ist_jnum(w,
	    "threads");
}

double
ist_waited_gil(const json_t *w)
{
	double n = ist_jnum(w, "threads"), g;
	const json_t *gw = json_object_get(w, "gil_waiting");

	if (json_is_number(gw))
		return json_number_value(gw);
	if (!json_is_number(json_object_get(w, "cores")) ||
	    !json_is_number(json_object_get(w, "queued")))
		return -1;
	g = n - ist_jnum(w, "cores") - ist_jnum(w, "queued");
	/* in Python code: a thread blocked in a C call that is no known
	 * wait (a file lock, a blocking write) holds no GIL's turn */
	if (g > n - ist_jnum(w, "in_c_calls"))
		g = n - ist_jnum(w, "in_c_calls");
	return g;
}

double
ist_step_busy(const json_t *an, long long *n)
{
	const json_t *t = json_object_get(an, "steps"), *b, *w;

	if (n)
		*n = 0;
	if (!json_is_object(t) || ist_jnum(t, "measured") < IST_STEPS_MIN)
		return -1;
	b = json_object_get(t, "gpu_busy");
	w = json_object_get(t, "wall");
	if (!json_is_object(b) || !json_is_object(w) ||
	    ist_jnum(w, "p50_ns") <= 0)
		return -1;
	if (n)
		*n = ist_jint(t, "measured");
	return ist_jnum(b, "p50_ns") / ist_jnum(w, "p50_ns");
}

double
ist_round(double v, int digits)
{
	double m = pow(10, digits);
	double r = round(v * m) / m;
	return r == 0 ? 0 : r;   /* no -0 */
}

json_t *
ist_finding(json_t *findings, const char *rule, const char *kind,
    const char *severity, double confidence, const char *title,
    const char *suggestion)
{
	json_t *f = json_pack("{s:s,s:s,s:s,s:f,s:s,s:s,s:{},s:[]}", "rule",
	    rule, "kind", kind, "severity", severity, "confidence",
	    ist_round(confidence, 2), "title", title, "suggestion",
	    suggestion, "evidence", "ranges");
	json_array_append_new(findings, f);
	return f;
}

const char *
ist_severity(double value, double threshold)
{
	if (threshold <= 0)
		return value > 0 ? "medium" : "low";
	return value >= 3 * threshold ? "high" : value >= 1.5 * threshold ?
	    "medium" : "low";
}

double
ist_margin_confidence(double value, double threshold)
{
	double x;
	if (threshold <= 0)
		return 0.9;
	x = value / threshold - 1;   /* 0 at the threshold */
	if (x < 0)
		x = 0;
	return 0.6 + 0.35 * (1 - exp(-2 * x));
}

const json_t *
ist_python_thread_max(const json_t *an, const char *key)
{
	const json_t *t, *best = NULL;
	size_t i;

	json_array_foreach(json_object_get(an, "threads"), i, t) {
		const json_t *py = json_object_get(t, "python");
		if (py != NULL && (best == NULL || ist_jnum(py, key) >
		    ist_jnum(json_object_get(best, "python"), key)))
			best = t;
	}
	return best;
}

void
ist_thread_evidence(json_t *ev, const json_t *t)
{
	json_object_set(ev, "pid", json_object_get(t, "pid"));
	json_object_set(ev, "tid", json_object_get(t, "tid"));
	json_object_set(ev, "thread", json_object_get(t, "name"));
}

/* ---- running them ---- */

static int
sev_rank(const char *s)
{
	return !strcmp(s, "high") ? 3 : !strcmp(s, "medium") ? 2 : 1;
}

/* By saving (what the steps' replay says fixing it buys), then the most
 * severe, then the most confident */
static int
by_severity(const void *x, const void *y)
{
	const json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
	json_t *sa = json_object_get(a, "saves_ns");
	json_t *sb = json_object_get(b, "saves_ns");
	json_int_t va = sa ? json_integer_value(sa) : -1;
	json_int_t vb = sb ? json_integer_value(sb) : -1;
	int d;

	if (va != vb)
		return va > vb ? -1 : 1;
	d = sev_rank(ist_jstr(b, "severity")) -
	    sev_rank(ist_jstr(a, "severity"));
	if (d)
		return d;
	if (ist_jnum(a, "confidence") != ist_jnum(b, "confidence"))
		return ist_jnum(a, "confidence") < ist_jnum(b, "confidence") ?
		    1 : -1;
	return strcmp(ist_jstr(a, "rule"), ist_jstr(b, "rule"));
}

/* What the verdict weighs, gathered from the analysis and the findings. */
struct facts {
	double busy, active, copy, kern, best_util, imp, wall;
	/* the median step's GPU busy share, -1 without steps */
	double step_busy;
	long long steps;
	double best_run, run_wait, cpu_all;
	double unseen;           /* of cpu_all, children no sample saw */
	const json_t *gil, *rq;
	const json_t *sw;        /* the step_wait finding: how to wait less */
	bool idle, xfer, gpu;
};

static bool
is_finding(const json_t *f, const char *rule, const char *kind)
{
	return !strcmp(ist_jstr(f, "rule"), rule) &&
	    (kind == NULL || !strcmp(ist_jstr(f, "kind"), kind));
}

static void
gather(const json_t *an, const json_t *findings, struct facts *x)
{
	const json_t *d, *f, *t;
	size_t i;

	memset(x, 0, sizeof(*x));
	x->wall = ist_jnum(json_object_get(an, "run"), "wall_ns");
	x->step_busy = ist_step_busy(an, &x->steps);
	json_array_foreach(json_object_get(an, "devices"), i, d) {
		if (ist_jnum(d, "ops") == 0)
			continue;
		x->gpu = true;
		x->busy += ist_jnum(d, "busy_ns");
		x->active += ist_jnum(d, "active_ns");
	}
	json_array_foreach(findings, i, f) {
		x->idle |= is_finding(f, "gpu_idle", NULL);
		x->xfer |= is_finding(f, "transfer", "time");
		if (is_finding(f, "cpu_contention", "gil"))
			x->gil = f;
		if (is_finding(f, "cpu_contention", "runqueue"))
			x->rq = f;
		if (is_finding(f, "step_wait", "others"))
			x->sw = f;
	}
	json_array_foreach(json_object_get(an, "copies"), i, f)
		if (strcmp(ist_jstr(f, "direction"), "memset"))
			x->copy += ist_jnum(f, "ns");
	json_array_foreach(json_object_get(an, "kernels"), i, f)
		x->kern += ist_jnum(f, "total_ns");
	/* the CPU of children too short for a sample of their own (a
	 * program that runs a command per item waits while they work);
	 * absent from a trace without the sampler's count of them */
	json_array_foreach(json_object_get(an, "processes"), i, t)
		x->unseen += json_number_value(json_object_get(t,
		    "children_unseen_cpu_ns"));
	x->cpu_all = x->unseen;
	json_array_foreach(json_object_get(an, "threads"), i, t) {
		double tn = ist_jnum(json_object_get(t, "python"), "import_ns");
		double win = ist_jnum(t, "window_ns");
		/* shares of the run, not of each thread's life: a thread
		 * busy for the first second of an idle minute makes no
		 * CPU-bound run (its cpu_util, over its life, is 100%) */
		double wall = x->wall > 0 ? x->wall : win > 0 ? win : 1;
		double run = (ist_jnum(t, "cpu_ns") + ist_jnum(t, "wait_ns")) /
		    wall;
		double util = ist_jnum(t, "cpu_ns") / wall;
		if (util > x->best_util && win > 0)
			x->best_util = util;
		/* runnable: on a CPU or in the run queue, waiting for one;
		 * of the threads runnable half the run or more, the one
		 * that waited most (a thread of the program that other
		 * processes starved, not its busy main thread that had a
		 * core to itself and waited 1%) */
		if (run > 1)
			run = 1;
		if (win > 0 && (run >= 0.5 ? x->best_run < 0.5 ||
		    ist_jnum(t, "wait_share") > x->run_wait :
		    run > x->best_run)) {
			x->best_run = run;
			x->run_wait = ist_jnum(t, "wait_share");
		}
		x->cpu_all += ist_jnum(t, "cpu_ns");
		if (tn > x->imp)
			x->imp = tn;
	}
}

/* A run with GPU activity: which side held the other up.  Busy is the
 * median step's where the run has steps (loading a model keeps the GPU
 * idle for seconds before the first), else the active window's. */
static const char *
gpu_class(const struct facts *x, double *conf, char *reason, size_t rn)
{
	double b = x->active > 0 ? x->busy / x->active : 0;
	double sb = x->step_busy;

	if (x->xfer && x->copy >= x->kern) {
		*conf = 0.6 + 0.3 * (x->copy / (x->copy + x->kern + 1));
		snprintf(reason, rn, "host-device copies take %.0f%% of GPU "
		    "busy time", 100 * x->copy / (x->busy > 0 ? x->busy : 1));
		return "transfer-bound";
	}
	if (sb >= 0.9) {
		*conf = 0.6 + 3.5 * (sb > 1 ? 0.1 : sb - 0.9);
		snprintf(reason, rn, "the GPU is busy %.1f%% of the median "
		    "step (%lld steps; %.1f%% of the active window, with what "
		    "came before the first)", 100 * sb, (long long)x->steps,
		    100 * b);
		return "GPU-bound";
	}
	if (b >= 0.9 && sb < 0) {
		*conf = 0.6 + 3.5 * (b - 0.9);
		snprintf(reason, rn, "the GPU is busy %.1f%% of the active "
		    "window", 100 * b);
		return "GPU-bound";
	}
	if (x->idle) {
		*conf = 0.6 + 0.35 * (1 - b);
		snprintf(reason, rn, "the GPU is idle %.1f%% of the active "
		    "window, waiting for the host", 100 * (1 - b));
		return "CPU-bound";
	}
	*conf = 0.6;
	snprintf(reason, rn, "the GPU is busy %.1f%% of the active window "
	    "and no rule points at one side", 100 * b);
	return "balanced";
}

/* A run with no GPU activity: the GIL, the cores, the CPU or waiting. */
static const char *
host_class(const struct facts *x, double *conf, char *reason, size_t rn)
{
	if (x->gil) {
		/* threads that wait for the GIL sleep: neither CPU nor queue */
		const json_t *ev = json_object_get(x->gil, "evidence");
		*conf = ist_jnum(x->gil, "confidence");
		if (json_object_get(ev, "threads_in_calls"))
			snprintf(reason, rn, "no GPU activity; while the step "
			    "waited, %.2f other threads were in Python calls "
			    "but ran on %.2f cores: they take turns holding "
			    "the GIL", ist_jnum(ev, "threads_in_calls"),
			    ist_jnum(ev, "cores"));
		else
			snprintf(reason, rn, "no GPU activity; %zu Python "
			    "threads of process %lld ran at once but used "
			    "%.2f cores between them: they take turns holding "
			    "the GIL", json_array_size(json_object_get(ev,
			    "threads")), (long long)ist_jint(ev, "pid"),
			    ist_jnum(ev, "combined_cores"));
		return "GIL-bound";
	}
	/* the thread cited waited a fifth of its runnable time or more:
	 * the wait bounds it, not its work (one that ran 95% and waited 5%
	 * on a machine loaded by other work, the torch demo's, is CPU-bound,
	 * the run-queue finding beside it); not where InferScope's own
	 * recording threads made the queue (a run without them has none) */
	if (x->best_run >= 0.5 && x->run_wait >= 0.2 && !(x->rq &&
	    !strcmp(ist_jstr(json_object_get(x->rq, "evidence"), "source"),
	    IST_SOURCE_RECORDER))) {
		const json_t *ev = x->rq ? json_object_get(x->rq, "evidence") :
		    NULL;
		*conf = 0.5 + 0.4 * (x->run_wait > 1 ? 1 : x->run_wait);
		snprintf(reason, rn, "no GPU activity; a thread runnable "
		    "%.0f%% of the run waited for a CPU %.0f%% of that%s",
		    100 * x->best_run, 100 * x->run_wait,
		    ev == NULL ? "" : !strcmp(ist_jstr(ev, "source"),
		    "other processes") ? ": the machine was busy with other "
		    "processes" : ": the program runs more threads than "
		    "there are cores");
		return "CPU-oversubscribed";
	}
	if (x->best_util >= 0.5 ||
	    (x->wall > 0 && x->cpu_all / x->wall >= 0.5)) {
		*conf = 0.5 + 0.4 * (x->best_util > 1 ? 1 : x->best_util);
		if (x->best_util >= 0.5)
			snprintf(reason, rn, "no GPU activity; the busiest "
			    "thread used %.0f%% of a core over the run",
			    100 * x->best_util);
		else if (x->unseen >= x->cpu_all / 4)
			snprintf(reason, rn, "no GPU activity; its threads "
			    "and its child processes used %.2f cores together "
			    "(%.2f of them in children no sample saw), no "
			    "thread half of one",
			    x->cpu_all / x->wall, x->unseen / x->wall);
		else
			snprintf(reason, rn, "no GPU activity; its threads "
			    "used %.2f cores together, none of them half of "
			    "one", x->cpu_all / x->wall);
		return "CPU-bound";
	}
	*conf = 0.3;
	/* 0.4%, not "0%": a figure the reader can check; a decimal only
	 * under 10% as printed (9.96% is "10%", not "10.0%") */
	if (x->best_util > 0)
		snprintf(reason, rn, "no GPU activity, and the busiest thread "
		    "used only %.*f%% of a core over the run: the run mostly "
		    "waited (I/O, sleep, locks)", 100 * x->best_util < 9.95 ?
		    1 : 0,
		    100 * x->best_util);
	else
		snprintf(reason, rn, "no GPU activity and no CPU samples");
	return "unknown";
}

/* ns as a reader wants it: "3.1 ms", "250 µs" */
static void
span(char *b, size_t n, double ns)
{
	if (ns >= 1e9)
		snprintf(b, n, "%.2f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(b, n, "%.1f ms", ns / 1e6);
	else
		snprintf(b, n, "%.0f µs", ns / 1e3);
}

/* The what-if entry (steps.what_if) a finding's fix is, by rule and kind:
 * the largest of that id */
static const json_t *
what_if_of(const json_t *an, const json_t *f)
{
	static const struct { const char *rule, *kind, *id; } m[] = {
		{ "gpu_idle", NULL, "overlap" },
		{ "gpu_idle", NULL, "sync" },
		{ "transfer", "pageable", "pinned" },
		{ "sync", NULL, "sync" },
		{ "launch_bound", NULL, "graph" },
		{ "gc_pause", NULL, "gc" },
		{ "startup", NULL, "import" },
		{ "step_wait", NULL, "wait" },
	};
	const json_t *wi = json_object_get(json_object_get(an, "steps"),
	    "what_if"), *e, *best = NULL;
	size_t i;

	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
		if (!is_finding(f, m[k].rule, m[k].kind))
			continue;
		json_array_foreach(wi, i, e)
			if (strcmp(ist_jstr(e, "id"), m[k].id) == 0 &&
			    (best == NULL || ist_jint(e, "saves_ns") >
			    ist_jint(best, "saves_ns")))
				best = e;
	}
	/* a saving under 1% of the step is not worth quoting */
	return best && ist_jnum(best, "saves_pct") >= 1 ? best : NULL;
}

/* A finding whose fix the steps' replay prices: the saving, in the
 * finding and quoted in its suggestion. */
static void
price(const json_t *an, json_t *f)
{
	const json_t *e = what_if_of(an, f);
	char b[32], *sg;
	int n;

	if (e == NULL)
		return;
	span(b, sizeof(b), (double)ist_jint(e, "saves_ns"));
	/* every wait gone is the most a faster feed buys */
	n = asprintf(&sg, "%s; replayed on the recorded steps, this saves "
	    "%s %s per step (%.1f%%)", ist_jstr(f, "suggestion"),
	    strcmp(ist_jstr(e, "id"), "wait") ? "about" : "at most", b,
	    ist_jnum(e, "saves_pct"));
	if (n < 0)
		return;
	json_object_set_new(f, "saves_ns", json_integer(ist_jint(e,
	    "saves_ns")));
	json_object_set_new(f, "saves_pct", json_real(ist_jnum(e,
	    "saves_pct")));
	json_object_set_new(f, "suggestion", json_string(sg));
	free(sg);
}

/* The overall classification, from the findings and the busy figures. */
static json_t *
verdict(const json_t *an, const json_t *findings, double factor)
{
	struct facts x;
	const char *cls;
	const json_t *best = json_array_get(json_object_get(json_object_get(
	    an, "steps"), "what_if"), 0);
	char reason[640];
	double conf;

	gather(an, findings, &x);
	cls = x.gpu ? gpu_class(&x, &conf, reason, sizeof(reason)) :
	    host_class(&x, &conf, reason, sizeof(reason));
	if (x.wall > 0 && x.imp >= x.wall / 2) {
		/* whatever the class, the run is mostly its own start-up */
		size_t n = strlen(reason);
		snprintf(reason + n, sizeof(reason) - n, "; start-up "
		    "dominates: Python imports took %.0f%% of the run",
		    100 * x.imp / x.wall);
	}
	if (best && ist_jnum(best, "saves_pct") >= 1) {
		/* what fixing it buys first */
		size_t n = strlen(reason);
		char b[32];
		span(b, sizeof(b), (double)ist_jint(best, "saves_ns"));
		/* the steps' waits removed: how, where the steps wait for
		 * the program's other threads, as step_wait says it (more
		 * workers would only queue on cores that are full) */
		const char *how = strcmp(ist_jstr(best, "id"), "wait") ||
		    x.sw == NULL ? "" : json_is_true(json_object_get(
		    json_object_get(x.sw, "evidence"), "cores_full")) ?
		    " (the work it waits for runs on full cores: make it "
		    "cheaper, or give it cores)" : " (more workers, "
		    "prefetching ahead)";
		snprintf(reason + n, sizeof(reason) - n, "; the largest saving: "
		    "%.300s%s, about %s per step (%.1f%%)", ist_jstr(best,
		    "change"), how, b, ist_jnum(best, "saves_pct"));
	}
	if (conf > 0.95)
		conf = 0.95;
	return json_pack("{s:s,s:f,s:s}", "classification", cls,
	    "confidence", ist_round(conf * factor, 2), "reason", reason);
}

json_t *
ist_rules_run(const struct ist_rules *r, json_t *an)
{
	json_t *findings = json_array(), *ran = json_array(), *f;
	double factor = ist_jnum(json_object_get(an, "data_quality"),
	    "confidence_factor");
	json_t **v;
	size_t i, n;

	if (findings == NULL || ran == NULL)
		return NULL;
	for (i = 0; i < IST_NRULES; i++) {
		const struct ist_rule *rule = ist_rule_table[i];
		size_t before = json_array_size(findings);
		const char *skipped = NULL;
		if (r->enabled[i])
			skipped = rule->run(an, &r->p[i], findings);
		json_array_append_new(ran, json_pack("{s:s,s:b,s:I,s:s?}",
		    "rule", rule->name, "enabled", r->enabled[i], "findings",
		    (json_int_t)(json_array_size(findings) - before),
		    "skipped", r->enabled[i] ? skipped : "disabled"));
	}
	/* data quality scales every confidence; then most severe first */
	n = json_array_size(findings);
	v = malloc((n ? n : 1) * sizeof(*v));
	if (v == NULL)
		return NULL;
	json_array_foreach(findings, i, f) {
		json_object_set_new(f, "confidence", json_real(ist_round(
		    ist_jnum(f, "confidence") * factor, 2)));
		price(an, f);
		v[i] = json_incref(f);
	}
	qsort(v, n, sizeof(*v), by_severity);
	json_array_clear(findings);
	for (i = 0; i < n; i++)
		json_array_append_new(findings, v[i]);
	free(v);
	json_object_set_new(an, "thresholds", ist_rules_json(r));
	json_object_set_new(an, "rules", ran);
	json_object_set_new(an, "verdict", verdict(an, findings, factor));
	json_object_set_new(an, "findings", findings);
	return an;
}
