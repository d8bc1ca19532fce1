/* startup - Python imports that take a large share of the run: the cost of
 * starting a process, paid again by every process that starts. */
#include <stdio.h>

#include "rules.h"

static const char *
run(const json_t *an, const union ist_rule_params *u, json_t *out)
{
	const struct ist_startup_params *p = &u->startup;
	const json_t *best = ist_python_thread_max(an, "import_ns"), *py, *m;
	double wall = ist_jnum(json_object_get(an, "run"), "wall_ns");
	double ns, pct;
	char title[256];
	json_t *f, *ev, *mods;
	size_t i;

	if (best == NULL)
		return "no Python calls recorded";
	py = json_object_get(best, "python");
	ns = ist_jnum(py, "import_ns");
	pct = wall > 0 ? 100 * ns / wall : 0;
	if (ns < p->import_min_ms * 1e6 || pct < p->import_pct)
		return NULL;
	snprintf(title, sizeof(title), "Python imports took %.1f ms, %.0f%% "
	    "of the run, on thread %s (%lld/%lld)", ns / 1e6, pct,
	    ist_jstr(best, "name"), (long long)ist_jint(best, "pid"),
	    (long long)ist_jint(best, "tid"));
	f = ist_finding(out, "startup", "imports",
	    ist_severity(pct, p->import_pct),
	    ist_margin_confidence(pct, p->import_pct), title,
	    "imports are paid once "
	    "per process: serve many requests from one long-lived process "
	    "or a warm worker pool rather than a Python start per request; "
	    "import what the hot path does not need lazily; when "
	    "benchmarking, start the clock after start-up. `python -X "
	    "importtime` itemises every module");
	ev = json_object_get(f, "evidence");
	ist_thread_evidence(ev, best);
	json_object_set(ev, "import_calls", json_object_get(py, "imports"));
	json_object_set(ev, "import_time_ns", json_object_get(py,
	    "import_ns"));
	json_object_set_new(ev, "import_pct", json_real(ist_round(pct, 1)));
	json_object_set_new(ev, "wall_ns", json_integer(ist_d2i(wall)));
	mods = json_array();
	/* what the program imported itself (numpy, not numpy.core) */
	json_array_foreach(json_object_get(json_object_get(an, "imports"),
	    "modules"), i, m) {
		if (json_array_size(mods) == 5)
			break;
		if (ist_jint(m, "first_hand") > 0)
			json_array_append_new(mods, json_pack("{s:O,s:O,s:O}",
			    "module", json_object_get(m, "module"), "self_ns",
			    json_object_get(m, "self_ns"), "cumulative_ns",
			    json_object_get(m, "cumulative_ns")));
	}
	json_object_set_new(ev, "slowest", mods);
	json_array_append_new(json_object_get(f, "ranges"), json_pack("[O,O]",
	    json_object_get(py, "import_first_ns"), json_object_get(py,
	    "import_last_ns")));
	return NULL;
}

const struct ist_rule ist_rule_startup = {
	"startup",
	"Python imports take a large share of the run",
	{
		IST_PARAM(startup, import_pct, 20,
		    "a thread's import time as a share of the run's wall "
		    "time, percent"),
		IST_PARAM(startup, import_min_ms, 100,
		    "and at least this many milliseconds"),
	},
	run,
};
