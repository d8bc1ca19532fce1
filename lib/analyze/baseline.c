/*
 * baseline.c - the regression gate: compare an analysis with a baseline
 * (another trace or analysis) and check --fail-on conditions.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "analysis_io.h"
#include "baseline.h"
#include "rules.h"
#include "internal.h"
#include "rules/rules.h"

/* One compared figure: base and now (a mean per call, a step's median, the
 * run's wall time), and, for what is counted, the counts and totals */
static json_t *
delta(const char *what, const char *name, double base, double now,
    const json_t *cb, const json_t *cn, const json_t *tb, const json_t *tn)
{
	double pct = base > 0 ? 100 * (now - base) / base : now > 0 ? 100 : 0;
	json_t *o = json_pack("{s:s,s:I,s:I,s:f}", "what", what, "base",
	    ist_d2i(base), "now", ist_d2i(now), "delta_pct",
	    ist_round(pct, 2));
	json_object_set_new(o, "name", json_string(name ? name : ""));
	json_object_set_new(o, "count_base", cb ? json_copy((json_t *)cb) :
	    json_null());
	json_object_set_new(o, "count_now", cn ? json_copy((json_t *)cn) :
	    json_null());
	json_object_set_new(o, "total_base", tb ? json_copy((json_t *)tb) :
	    json_null());
	json_object_set_new(o, "total_now", tn ? json_copy((json_t *)tn) :
	    json_null());
	return o;
}

/* A scope, NVTX range or kernel: mean per call, with counts and totals */
static json_t *
delta_of(const char *what, const json_t *b, const json_t *x,
    const char *total)
{
	return delta(what, ist_jstr(x, "name"), ist_jnum(b, "mean_ns"),
	    ist_jnum(x, "mean_ns"), json_object_get(b, "count"),
	    json_object_get(x, "count"), json_object_get(b, total),
	    json_object_get(x, total));
}

static const char *const step_metric[] = { "wall", "host_busy", "gpu_busy",
    "gpu_idle", "copies", "sync" };

/* The steps' medians, when both runs measured steps of the same name */
static void
step_deltas(json_t *deltas, const json_t *now, const json_t *base)
{
	const json_t *sn = json_object_get(now, "steps"), *sb =
	    json_object_get(base, "steps");

	if (!json_is_object(sn) || !json_is_object(sb) || ist_jnum(sn,
	    "measured") == 0 || ist_jnum(sb, "measured") == 0 ||
	    strcmp(ist_jstr(sn, "name"), ist_jstr(sb, "name")) != 0)
		return;
	for (size_t i = 0; i < sizeof(step_metric) / sizeof(*step_metric);
	    i++) {
		const json_t *b = json_object_get(sb, step_metric[i]),
		    *x = json_object_get(sn, step_metric[i]);
		if (!json_is_object(b) || !json_is_object(x) || (ist_jnum(b,
		    "p50_ns") == 0 && ist_jnum(x, "p50_ns") == 0 && i > 0))
			continue;
		json_array_append_new(deltas, delta("step", step_metric[i],
		    ist_jnum(b, "p50_ns"), ist_jnum(x, "p50_ns"),
		    json_object_get(sb, "measured"), json_object_get(sn,
		    "measured"), NULL, NULL));
	}
}

/* Functions: mean inclusive time per call, for those that took 1% of
 * either run's wall time or more (below that, a mean moves with noise) */
static void
function_deltas(json_t *deltas, const json_t *now, const json_t *base)
{
	double wb = ist_jnum(json_object_get(base, "run"), "wall_ns"),
	    wn = ist_jnum(json_object_get(now, "run"), "wall_ns");
	const json_t *x, *b, *y, *fb = json_object_get(base, "functions");
	size_t i, j;

	json_array_foreach(json_object_get(now, "functions"), i, x) {
		/* the same name and file, at the same line if one is (two
		 * functions may share a name; an edit moves lines) */
		b = NULL;
		json_array_foreach(fb, j, y)
			if (strcmp(ist_jstr(y, "name"), ist_jstr(x, "name")) ==
			    0 && strcmp(ist_jstr(y, "file"), ist_jstr(x,
			    "file")) == 0 && (b == NULL || ist_jint(y, "line") ==
			    ist_jint(x, "line"))) {
				b = y;
				if (ist_jint(y, "line") == ist_jint(x, "line"))
					break;
			}
		if (b == NULL || ist_jnum(b, "count") == 0 ||
		    ist_jnum(x, "count") == 0 || (ist_jnum(b, "incl_ns") <
		    wb / 100 && ist_jnum(x, "incl_ns") < wn / 100))
			continue;
		json_array_append_new(deltas, delta("function", ist_jstr(x,
		    "name"), ist_jnum(b, "incl_ns") / ist_jnum(b, "count"),
		    ist_jnum(x, "incl_ns") / ist_jnum(x, "count"),
		    json_object_get(b, "count"), json_object_get(x, "count"),
		    json_object_get(b, "incl_ns"), json_object_get(x,
		    "incl_ns")));
	}
}

static const json_t *
find(const json_t *arr, const char *kind, const char *name)
{
	const json_t *x;
	size_t i;
	json_array_foreach(arr, i, x)
		if (strcmp(ist_jstr(x, "name"), name) == 0 && (kind == NULL ||
		    strcmp(ist_jstr(x, "kind"), kind) == 0))
			return x;
	return NULL;
}

static int
by_delta(const void *x, const void *y)
{
	const json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
	double p = ist_jnum(a, "delta_pct"), q = ist_jnum(b, "delta_pct");
	if (p != q)
		return p < q ? 1 : -1;
	if (strcmp(ist_jstr(a, "what"), ist_jstr(b, "what")))
		return strcmp(ist_jstr(a, "what"), ist_jstr(b, "what"));
	return strcmp(ist_jstr(a, "name"), ist_jstr(b, "name"));
}

enum ist_status
ist_analysis_compare(json_t *now, const json_t *base, struct ist_error *err)
{
	json_t *deltas = json_array(), *x, **v, *sorted;
	const json_t *b;
	size_t i, n;

	if (deltas == NULL)
		goto nomem;
	json_array_append_new(deltas, delta("wall", NULL,
	    ist_jnum(json_object_get(base, "run"), "wall_ns"),
	    ist_jnum(json_object_get(now, "run"), "wall_ns"), NULL, NULL, NULL,
	    NULL));
	step_deltas(deltas, now, base);
	json_array_foreach(json_object_get(now, "scopes"), i, x)
		if ((b = find(json_object_get(base, "scopes"), ist_jstr(x,
		    "kind"), ist_jstr(x, "name"))) != NULL)
			json_array_append_new(deltas, delta_of(strcmp(ist_jstr(x,
			    "kind"), "nvtx") ? "scope" : "nvtx", b, x,
			    "total_ns"));
	function_deltas(deltas, now, base);
	json_array_foreach(json_object_get(now, "kernels"), i, x)
		if ((b = find(json_object_get(base, "kernels"), NULL,
		    ist_jstr(x, "name"))) != NULL)
			json_array_append_new(deltas, delta_of("kernel", b, x,
			    "total_ns"));
	n = json_array_size(deltas);
	if ((v = malloc(n * sizeof(*v))) == NULL)
		goto nomem;
	json_array_foreach(deltas, i, x)
		v[i] = x;
	qsort(v, n, sizeof(*v), by_delta);
	sorted = json_array();
	for (i = 0; i < n; i++)
		json_array_append(sorted, v[i]);
	free(v);
	json_decref(deltas);
	json_object_set_new(now, "baseline", json_pack("{s:O,s:O,s:o,s:o}",
	    "run", json_object_get(base, "run") ? json_object_get(base, "run")
	    : json_null(), "verdict", json_object_get(base, "verdict") ?
	    json_object_get(base, "verdict") : json_null(), "steps",
	    json_is_object(json_object_get(base, "steps")) ? json_pack(
	    "{s:s,s:O}", "name", ist_jstr(json_object_get(base, "steps"),
	    "name"), "measured", json_object_get(json_object_get(base,
	    "steps"), "measured")) : json_null(), "deltas", sorted));
	return IST_OK;
nomem:
	json_decref(deltas);
	ist_seterr(err, IST_ENOMEM, "out of memory");
	return IST_ENOMEM;
}

static int
sev_rank(const char *s)
{
	return !strcmp(s, "high") ? 3 : !strcmp(s, "medium") ? 2 :
	    !strcmp(s, "low") ? 1 : 0;
}

/* "N%" or "N" -> N; false if not a number */
static bool
parse_pct(const char *s, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	if (end == s || errno || !isfinite(*out))
		return false;
	if (*end == '%')
		end++;
	return *end == '\0';
}

static bool
has_step(const json_t *deltas)
{
	const json_t *x;
	size_t i;

	json_array_foreach(deltas, i, x)
		if (strcmp(ist_jstr(x, "what"), "step") == 0)
			return true;
	return false;
}

static bool
is_step_metric(const char *key)
{
	if (strncmp(key, "step:", 5) != 0)
		return false;
	for (size_t i = 0; i < sizeof(step_metric) / sizeof(*step_metric);
	    i++)
		if (strcmp(key + 5, step_metric[i]) == 0)
			return true;
	return false;
}

static enum ist_status
check_one(const char *c, const json_t *an, bool *failed, struct ist_buf *why,
    struct ist_error *err)
{
	const json_t *deltas = json_object_get(json_object_get(an, "baseline"),
	    "deltas"), *x;
	const char *op = strpbrk(c, "<>");
	char key[256], l[48];
	double lim;
	size_t i, kn;

	if (strncmp(c, "rule:", 5) == 0) {
		json_array_foreach(json_object_get(an, "findings"), i, x)
			if (strcmp(ist_jstr(x, "rule"), c + 5) == 0) {
				*failed = true;
				ist_buf_printf(why, "rule %s fired: %s\n", c + 5,
				    ist_jstr(x, "title"));
				break;
			}
		return IST_OK;
	}
	if (strncmp(c, "severity>=", 10) == 0) {
		int want = sev_rank(c + 10);
		if (want == 0)
			goto bad;
		json_array_foreach(json_object_get(an, "findings"), i, x)
			if (sev_rank(ist_jstr(x, "severity")) >= want) {
				*failed = true;
				ist_buf_printf(why, "a %s finding: %s\n",
				    ist_jstr(x, "severity"), ist_jstr(x,
				    "title"));
				break;
			}
		return IST_OK;
	}
	/* a share below zero (regression>-5%) holds for nearly every run,
	 * and a GPU busy share outside 0..100 for every run or none: a gate
	 * that cannot mean what it says */
	if (op == NULL || (kn = (size_t)(op - c)) >= sizeof(key) ||
	    !parse_pct(op + 1, &lim) || lim < 0 || (*op == '<' && lim > 100))
		goto bad;
	memcpy(key, c, kn);
	key[kn] = '\0';
	if (strcmp(key, "gpu_busy") == 0 && *op == '<') {
		json_array_foreach(json_object_get(an, "devices"), i, x)
			if (ist_jnum(x, "ops") > 0 &&
			    ist_jnum(x, "busy_pct") < lim) {
				*failed = true;
				ist_buf_printf(why, "GPU %s busy %.1f%% < %g%%\n",
				    ist_dev_label(x, l, sizeof(l)),
				    ist_jnum(x, "busy_pct"), lim);
			}
		return IST_OK;
	}
	/* step is the steps' median wall time; step:METRIC another median */
	if (strcmp(key, "step") == 0)
		strcpy(key, "step:wall");
	if (*op != '>' || !(strcmp(key, "regression") == 0 ||
	    strcmp(key, "wall") == 0 || strncmp(key, "scope:", 6) == 0 ||
	    strncmp(key, "nvtx:", 5) == 0 || strncmp(key, "kernel:", 7) == 0 ||
	    strncmp(key, "function:", 9) == 0 || is_step_metric(key)))
		goto bad;
	if (deltas == NULL) {
		ist_seterr(err, IST_EINVAL, "--fail-on '%s' needs --baseline",
		    c);
		return IST_EINVAL;
	}
	if (strncmp(key, "step:", 5) == 0 && !has_step(deltas) &&
	    json_object_get(json_object_get(an, "baseline"), "steps")) {
		const json_t *sb = json_object_get(json_object_get(an,
		    "baseline"), "steps"), *sn = json_object_get(an, "steps");
		ist_seterr(err, IST_EINVAL, "--fail-on '%s': no steps to "
		    "compare (the baseline's: %s%s%s, this run's: %s%s%s; "
		    "--step names them)", c, json_is_object(sb) ? "'" : "",
		    json_is_object(sb) ? ist_jstr(sb, "name") : "none",
		    json_is_object(sb) ? "'" : "", json_is_object(sn) ? "'" :
		    "", json_is_object(sn) ? ist_jstr(sn, "name") : "none",
		    json_is_object(sn) ? "'" : "");
		return IST_EINVAL;
	}
	json_array_foreach(deltas, i, x) {
		const char *w = ist_jstr(x, "what"), *nm = ist_jstr(x, "name");
		/* regression: what the program's author named, and the run;
		 * functions only by name (their means move with noise) */
		bool match = (strcmp(key, "regression") == 0 && strcmp(w,
		    "function") != 0) ||
		    (strcmp(key, "wall") == 0 && strcmp(w, "wall") == 0);
		if (!match) {
			const char *colon = strchr(key, ':');
			match = colon && strncmp(key, w, (size_t)(colon - key))
			    == 0 && strlen(w) == (size_t)(colon - key) &&
			    strcmp(colon + 1, nm) == 0;
		}
		if (match && ist_jnum(x, "delta_pct") > lim) {
			*failed = true;
			ist_buf_printf(why, "%s%s%s: %.3f ms -> %.3f ms "
			    "(%+.1f%% > %g%%)\n", w, *nm ? " " : "", nm,
			    ist_jnum(x, "base") / 1e6, ist_jnum(x, "now") / 1e6,
			    ist_jnum(x, "delta_pct"), lim);
		}
	}
	return IST_OK;
bad:
	ist_seterr(err, IST_EINVAL, "bad --fail-on condition '%s' (want "
	    "regression>P%%, wall>P%%, step>P%%, step:METRIC>P%%, "
	    "scope:NAME>P%%, nvtx:NAME>P%%, function:NAME>P%%, "
	    "kernel:NAME>P%%, gpu_busy<P%%, severity>=low|medium|high or "
	    "rule:NAME; P is 0 or more, at most 100 for gpu_busy)", c);
	return IST_EINVAL;
}

enum ist_status
ist_failon_check(const char *spec, const json_t *an, bool *failed,
    struct ist_buf *why, struct ist_error *err)
{
	char *copy = strdup(spec), *tok;
	enum ist_status st = IST_OK;

	*failed = false;
	if (copy == NULL) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	/* strsep, not strtok: an empty condition ("", "a,,b", "a,") is an
	 * error, not a gate silently left open */
	for (char *rest = copy; (tok = strsep(&rest, ",")) != NULL &&
	    st == IST_OK; ) {
		while (*tok == ' ')
			tok++;
		for (char *e = tok + strlen(tok); e > tok && e[-1] == ' ';)
			*--e = '\0';
		if (*tok == '\0') {
			ist_seterr(err, IST_EINVAL, "--fail-on '%s' has an "
			    "empty condition", spec);
			st = IST_EINVAL;
		} else {
			st = check_one(tok, an, failed, why, err);
		}
	}
	free(copy);
	return st;
}

/*
 * The last analysis a trace that promises one (is-analyze's) carries at
 * a frame's start, where is-analyze puts it: skimmed to, the events never
 * decoded nor decompressed (a baseline of json.tool's 44.7 M events had
 * been analysed whole again, 7 s, to be dropped for the record at its
 * end).  NULL when it is not there, or the reading stopped on an error
 * (the whole reading after it says what is wrong); fd is left at 0.
 */
static json_t *
skimmed_analysis(int fd, const char *path)
{
	struct ist_reader *r;
	const struct ist_event *ev;
	json_t *found = NULL;
	enum ist_status st;

	if (!ist_file_promises_analysis(fd) ||
	    ist_reader_new(&r, ist_fd_source, &fd, path, NULL) != IST_OK)
		return NULL;
	ist_reader_skim(r, true);
	while ((st = ist_reader_next(r, &ev, NULL)) == IST_OK)
		if (ev->type == IST_ANALYSIS) {
			json_decref(found);
			found = ist_analysis_of_event(ev);
		}
	ist_reader_free(r);
	if (st != IST_END && st != IST_TRUNCATED) {
		json_decref(found);
		found = NULL;
	}
	lseek(fd, 0, SEEK_SET);
	return found;
}

enum ist_status
ist_analysis_load(const char *path, const char *step,
    const struct ist_rules *rules,
    json_t **out, struct ist_error *err)
{
	int fd = open(path, O_RDONLY);
	char c = 0;
	struct ist_reader *r = NULL;
	struct ist_analyzer *a = NULL;
	const struct ist_event *ev;
	struct ist_reader_stats rs;
	struct ist_again again;
	json_t *found = NULL;
	enum ist_status st;

	*out = NULL;
	if (fd < 0) {
		ist_seterr(err, IST_EIO, "cannot open '%s': %s", path,
		    strerror(errno));
		return IST_EIO;
	}
	if (read(fd, &c, 1) == 1 && c == '{') {
		json_error_t je;
		close(fd);
		if ((*out = json_load_file(path, 0, &je)) == NULL) {
			ist_seterr(err, IST_EINVAL, "'%s':%d:%d: %s", path,
			    je.line, je.column, je.text);
			return IST_EINVAL;
		}
		if (json_object_get(*out, "analysis_version") == NULL) {
			json_decref(*out);
			*out = NULL;
			ist_seterr(err, IST_EINVAL, "'%s' is JSON but not an "
			    "analysis (no analysis_version)", path);
			return IST_EINVAL;
		}
		return IST_OK;
	}
	lseek(fd, 0, SEEK_SET);
	if ((*out = skimmed_analysis(fd, path)) != NULL) {
		close(fd);
		return IST_OK;
	}
	again = (struct ist_again){ ist_again_path, (void *)path, step,
	    ist_again_path_follow, NULL, false };
	if ((st = ist_reader_new(&r, ist_fd_source, &fd, path, err)) != IST_OK ||
	    (st = ist_analyzer_new(&a, rules, err)) != IST_OK ||
	    (st = ist_again_begin(a, &again, err)) != IST_OK)
		goto out;
	ist_analyzer_reader(a, r);
	while ((st = ist_reader_next(r, &ev, err)) == IST_OK) {
		if (ev->type == IST_ANALYSIS) {
			json_decref(found);
			found = ist_analysis_of_event(ev);
			continue;
		}
		if (found == NULL && (st = ist_analyzer_add(a, ev, err)) !=
		    IST_OK)
			goto out;
	}
	if (st != IST_END && st != IST_TRUNCATED)
		goto out;
	if (found) {
		*out = found;
		found = NULL;
		st = IST_OK;
		goto out;
	}
	ist_reader_stats(r, &rs);
	ist_analyzer_reader(a, NULL);
	if ((st = ist_again_pass(a, &again, err)) == IST_OK)
		st = ist_analyzer_finish(a, &rs, out, err);
out:
	json_decref(found);
	ist_analyzer_free(a);
	ist_reader_free(r);
	close(fd);
	return st;
}
