/* step_wait - the steps wait for work that other threads and processes do
 * for them (a DataLoader's workers, a pool): they are fed too slowly. */
#include <stdio.h>
#include <string.h>

#include "rules.h"

/* the functions the others ran while the steps waited, as "a (50%), b
 * (42%)": the first max of waited_on.by, those of 5% or more */
static void
by_text(char *b, size_t n, const json_t *by, size_t max)
{
	const json_t *e;
	size_t i, k = 0;
	int w;

	*b = '\0';
	json_array_foreach(by, i, e) {
		if (k == max || !json_is_string(json_object_get(e, "call")) ||
		    ist_jnum(e, "share") < 0.05)
			break;
		w = snprintf(b, n, "%s%s (%.0f%%)", k ? ", " : "",
		    ist_jstr(e, "call"), 100 * ist_jnum(e, "share"));
		if (w < 0 || (size_t)w >= n)
			break;
		b += w;
		n -= (size_t)w;
		k++;
	}
}

static const char *
run(const json_t *an, const union ist_rule_params *u, json_t *out)
{
	const struct ist_step_wait_params *p = &u->step_wait;
	const json_t *st = json_object_get(an, "steps"), *cp, *w;
	double share, threads, cores, queued, machine, pct, rec, working;
	char title[512], by[400], top[400], fix[1200];
	bool full;
	json_t *f, *ev;

	if (!json_is_object(st) || ist_jnum(st, "measured") < IST_STEPS_MIN)
		return "fewer than 3 steps measured";
	cp = json_object_get(st, "critical_path");
	w = json_object_get(cp, "waited_on");
	share = ist_jnum(json_object_get(cp, "share"), "wait");
	threads = ist_jnum(w, "threads");
	working = ist_waited_working(w);
	cores = ist_jnum(w, "cores");
	queued = ist_jnum(w, "queued");
	rec = ist_jnum(w, "recorder_cores");
	machine = ist_jnum(json_object_get(an, "system"), "cpu_cores");
	pct = 100 * share;
	/* waiting for a sleep, a socket, a disk is not waiting for work the
	 * program does, nor are threads blocked; threads in Python calls
	 * that are neither on a core nor queued for one wait for the GIL
	 * (cpu_contention's) */
	if (pct < p->wait_pct || working < p->min_threads ||
	    cores + queued < 0.5 * working)
		return NULL;
	/* the cores that do it are full: they queue for a core a quarter of
	 * their time, or use every core the machine has; InferScope's own
	 * threads (rec, on that many cores meanwhile) took cores a run
	 * without recording leaves to them, and made them queue as long */
	full = queued - rec >= 0.25 * working || (machine > 0 && cores + rec >=
	    machine - 0.25);
	by_text(by, sizeof(by), json_object_get(w, "by"), 3);
	snprintf(title, sizeof(title), "each step waits %.0f%% of its time "
	    "while %.2f other threads work%s%s", pct, working, *by ?
	    ", in " : "", by);
	by_text(top, sizeof(top), json_object_get(w, "by"), 1);
	snprintf(fix, sizeof(fix), full ? "the steps wait for work done "
	    "elsewhere, on cores that are full (it ran on %.2f cores and "
	    "queued for %.2f more): make that work cheaper%s%s%s, cache or "
	    "precompute it, or give it cores (fewer other processes, a larger "
	    "machine); more workers would only queue" : "the steps wait for "
	    "work done elsewhere, on cores with room (it ran on %.2f cores and "
	    "queued for %.2f more): run more of it at once (DataLoader "
	    "num_workers, a larger pool), prefetch further ahead "
	    "(DataLoader prefetch_factor, a queue filled ahead), or make it "
	    "cheaper%s%s%s", cores, queued, *top ? " (" : "", top, *top ? ")" :
	    "");
	if (rec >= 0.25) {
		size_t k = strlen(fix);
		snprintf(fix + k, sizeof(fix) - k, "; InferScope's own "
		    "recording threads ran on %.2f cores meanwhile, which a run "
		    "without recording leaves to that work", rec);
	}
	f = ist_finding(out, "step_wait", "others", ist_severity(pct,
	    p->wait_pct), ist_margin_confidence(pct, p->wait_pct), title,
	    fix);
	ev = json_object_get(f, "evidence");
	json_object_set_new(ev, "step", json_string(ist_jstr(st, "name")));
	json_object_set_new(ev, "wait_share", json_real(share));
	json_object_set_new(ev, "wait_ns", json_integer(ist_d2i(share *
	    ist_jnum(st, "mean_ns"))));
	json_object_set_new(ev, "threads", json_real(threads));
	json_object_set_new(ev, "working", json_real(working));
	json_object_set_new(ev, "cores", json_real(cores));
	json_object_set_new(ev, "queued", json_real(queued));
	json_object_set_new(ev, "recorder_cores", json_real(rec));
	json_object_set_new(ev, "cores_full", json_boolean(full));
	json_object_set(ev, "by", json_object_get(w, "by"));
	return NULL;
}

const struct ist_rule ist_rule_step_wait = {
	"step_wait",
	"the steps wait for work other threads and processes do for them",
	{
		IST_PARAM(step_wait, wait_pct, 50,
		    "the steps' critical path waiting, percent"),
		IST_PARAM(step_wait, min_threads, 0.5,
		    "while other threads worked, on average"),
	},
	run,
};
