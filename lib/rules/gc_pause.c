/* gc_pause - Python's garbage collector pausing a thread: much of its time,
 * or once for long (a request that takes a full collection with it). */
#include <stdio.h>

#include "rules.h"

static const char *const fix = "after loading the model and warming up, "
    "call gc.freeze() so that long-lived objects are no longer scanned; "
    "raise the thresholds (gc.set_threshold) or turn automatic collection "
    "off around the hot loop (gc.disable()) and collect between requests; "
    "break reference cycles in per-request objects so that reference "
    "counting frees them";

/* The thread's figures as evidence. */
static json_t *
evidence(json_t *f, const json_t *t)
{
	const json_t *py = json_object_get(t, "python");
	json_t *ev = json_object_get(f, "evidence");

	ist_thread_evidence(ev, t);
	json_object_set(ev, "collections", json_object_get(py,
	    "gc_collections"));
	json_object_set(ev, "gc_ns", json_object_get(py, "gc_ns"));
	json_object_set(ev, "max_pause_ns", json_object_get(py, "gc_max_ns"));
	json_array_extend(json_object_get(f, "ranges"), json_object_get(py,
	    "gc_longest"));
	return ev;
}

static const char *
run(const json_t *an, const union ist_rule_params *u, json_t *out)
{
	const struct ist_gc_pause_params *p = &u->gc_pause;
	const json_t *t, *most = NULL, *py;
	const json_t *longest = ist_python_thread_max(an, "gc_max_ns");
	double most_pct = 0, ns, win, pct, max;
	char title[256];
	json_t *f, *ev;
	size_t i;

	if (longest == NULL)
		return "no Python calls recorded";
	json_array_foreach(json_object_get(an, "threads"), i, t) {
		if ((py = json_object_get(t, "python")) == NULL)
			continue;
		ns = ist_jnum(py, "gc_ns");
		win = ist_jnum(py, "last_ns") - ist_jnum(py, "first_ns");
		pct = win > 0 ? 100 * ns / win : 0;
		if (ns >= p->min_ms * 1e6 && pct > most_pct) {
			most = t;
			most_pct = pct;
		}
	}
	if (most && most_pct >= p->time_pct) {
		py = json_object_get(most, "python");
		snprintf(title, sizeof(title), "garbage collection paused "
		    "thread %s (%lld/%lld) %lld times for %.1f ms, %.0f%% of its "
		    "Python time", ist_jstr(most, "name"), (long long)ist_jint(
		    most, "pid"), (long long)ist_jint(most, "tid"),
		    (long long)ist_jint(py, "gc_collections"),
		    ist_jnum(py, "gc_ns") / 1e6, most_pct);
		f = ist_finding(out, "gc_pause", "time",
		    ist_severity(most_pct, p->time_pct),
		    ist_margin_confidence(most_pct, p->time_pct), title, fix);
		ev = evidence(f, most);
		json_object_set_new(ev, "gc_pct", json_real(ist_round(most_pct,
		    1)));
	}
	py = json_object_get(longest, "python");
	max = ist_jnum(py, "gc_max_ns");
	if (ist_jnum(py, "gc_collections") == 0 || max < p->pause_ms * 1e6)
		return NULL;
	{
		const char *in = ist_jstr(py, "gc_max_scope");
		snprintf(title, sizeof(title), "one garbage collection paused "
		    "thread %s (%lld/%lld) for %.1f ms%s%s%s",
		    ist_jstr(longest, "name"), (long long)ist_jint(longest,
		    "pid"), (long long)ist_jint(longest, "tid"), max / 1e6,
		    *in ? ", inside '" : "", in, *in ? "'" : "");
	}
	f = ist_finding(out, "gc_pause", "pause",
	    ist_severity(max, p->pause_ms * 1e6),
	    ist_margin_confidence(max, p->pause_ms * 1e6), title, fix);
	ev = evidence(f, longest);
	if (json_is_string(json_object_get(py, "gc_max_scope")))
		json_object_set(ev, "scope", json_object_get(py,
		    "gc_max_scope"));
	return NULL;
}

const struct ist_rule ist_rule_gc_pause = {
	"gc_pause",
	"Python's garbage collector pauses a thread for long",
	{
		IST_PARAM(gc_pause, time_pct, 5,
		    "collection time as a share of the thread's Python time "
		    "(first to last call), percent"),
		IST_PARAM(gc_pause, min_ms, 10,
		    "and at least this many milliseconds"),
		IST_PARAM(gc_pause, pause_ms, 20,
		    "one collection at least this long"),
	},
	run,
};
