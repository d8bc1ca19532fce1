/* cpu_contention - threads wait for a CPU (more runnable threads than
 * cores), and Python threads that overlap in time but share one core's
 * worth of CPU between them (the GIL). */
#include <stdio.h>

#include "rules.h"

static const char gil_fix[] = "Python threads serialise on the GIL: move "
    "CPU-heavy Python work to processes (multiprocessing, DataLoader "
    "num_workers), into code that releases the GIL (numpy, torch ops, "
    "tokenizers' batch APIs), or onto a free-threaded Python 3.13t";

/* A thread's run-queue time over its Python window: how much of a core
 * it waited for while it ran Python */
static double
queue_share(const json_t *t)
{
	return ist_jnum(json_object_get(t, "python"), "wait_util");
}

static bool
gil(const json_t *an, const struct ist_cpu_contention_params *p,
    json_t *out)
{
	bool fired = false;
	const json_t *threads = json_object_get(an, "threads"), *t, *u;
	double cores = ist_jnum(json_object_get(an, "system"), "cpu_cores");
	size_t i, j;

	/* per process: its Python-busy threads whose Python windows overlap
	 * the busiest one's */
	json_array_foreach(threads, i, t) {
		const json_t *py = json_object_get(t, "python"), *q;
		double s0, e0, util, queued, lo, hi, n = 1;
		json_t *list, *f, *ev;
		char title[256];
		bool first = true;

		if (py == NULL || ist_jnum(py, "last_ns") - ist_jnum(py,
		    "first_ns") < p->gil_min_ms * 1e6)
			continue;
		s0 = ist_jnum(py, "first_ns");
		e0 = ist_jnum(py, "last_ns");
		if (ist_jnum(py, "self_ns") < 0.5 * (e0 - s0))
			continue;
		/* only the first such thread of each process leads */
		json_array_foreach(threads, j, u) {
			if (j >= i)
				break;
			q = json_object_get(u, "python");
			double qw = ist_jnum(q, "last_ns") -
			    ist_jnum(q, "first_ns");
			if (q && ist_jnum(u, "pid") == ist_jnum(t, "pid") &&
			    qw >= p->gil_min_ms * 1e6 &&
			    ist_jnum(q, "self_ns") >= 0.5 * qw)
				first = false;
		}
		if (!first)
			continue;
		util = ist_jnum(py, "cpu_util");
		queued = queue_share(t);
		list = json_array();
		json_array_append_new(list, json_pack("{s:I,s:s,s:f}", "tid",
		    ist_jint(t, "tid"), "name", ist_jstr(t, "name"),
		    "cpu_util", ist_jnum(py, "cpu_util")));
		lo = s0;
		hi = e0;
		/* the others mostly inside its window, however short their
		 * own: each adds its cores over the part of the window it
		 * shares (a pool of four numpy threads, two of them 213 ms
		 * and two 198 ms, read "2 threads share 0.91 cores" when the
		 * four ran on 1.81) */
		json_array_foreach(threads, j, u) {
			double s1, e1, ov, part;
			q = json_object_get(u, "python");
			if (j == i || q == NULL || ist_jnum(u, "pid") !=
			    ist_jnum(t, "pid"))
				continue;
			s1 = ist_jnum(q, "first_ns");
			e1 = ist_jnum(q, "last_ns");
			ov = (e1 < e0 ? e1 : e0) - (s1 > s0 ? s1 : s0);
			if (e1 <= s1 || ist_jnum(q, "self_ns") < 0.5 *
			    (e1 - s1) || ov < 0.5 * (e1 - s1))
				continue;
			part = ov / (e0 - s0);
			n++;
			util += ist_jnum(q, "cpu_util") * part;
			queued += queue_share(u) * part;
			if (s1 > lo)
				lo = s1;
			if (e1 < hi)
				hi = e1;
			json_array_append_new(list, json_pack("{s:I,s:s,s:f}",
			    "tid", ist_jint(u, "tid"), "name",
			    ist_jstr(u, "name"), "cpu_util", ist_jnum(q,
			    "cpu_util")));
		}
		/* threads that wait for the GIL sleep, on no core and
		 * queued for none, but for the one just handed it on a busy
		 * machine (two such threads beside three busy loops: 0.53
		 * cores and 0.80 queued, four 0.68 and 0.82); threads a busy
		 * machine starves are queued (four numpy threads, which let
		 * the GIL go, 0.92 cores and 2.72 queued) */
		if (n < 2 || util > p->gil_cores || util + queued >
		    p->gil_cores + 0.5 || (cores > 0 && cores < 2)) {
			json_decref(list);
			continue;
		}
		snprintf(title, sizeof(title), "%.0f Python threads of process "
		    "%lld run at once but share %.2f cores between them (the "
		    "GIL)", n, (long long)ist_jint(t, "pid"), util);
		f = ist_finding(out, "cpu_contention", "gil", n >= 4 ? "high" :
		    "medium", 0.6 + 0.3 * (1 - (util - 1 > 0 ? util - 1 : 0) /
		    (p->gil_cores - 1 > 0.01 ? p->gil_cores - 1 : 0.01)), title,
		    gil_fix);
		ev = json_object_get(f, "evidence");
		json_object_set_new(ev, "pid", json_integer(ist_jint(t, "pid")));
		json_object_set_new(ev, "threads", list);
		json_object_set_new(ev, "combined_cores", json_real(ist_round(
		    util, 3)));
		json_object_set_new(ev, "queued_cores", json_real(ist_round(
		    queued, 3)));
		json_object_set_new(ev, "overlap_ns", json_integer(
		    ist_d2i(hi > lo ? hi - lo : 0)));
		json_array_append_new(json_object_get(f, "ranges"), json_pack(
		    "[I,I]", ist_d2i(lo), ist_d2i(hi > lo ? hi : lo)));
		fired = true;
	}
	return fired;
}

/*
 * The same seen from the steps (steps.critical_path.waited_on): while
 * they waited, other threads were in Python calls, neither on a core nor
 * queued for one nor inside a C call, while other threads of their
 * process were in calls (gil_waiting), gil_wait_threads of them or more
 * on average and a quarter of those in calls.  Threads that live a few ms
 * (a pool made per request) never have the windows the check above
 * needs.
 */
static void
step_gil(const json_t *an, const struct ist_cpu_contention_params *p,
    json_t *out)
{
	const json_t *st = json_object_get(an, "steps"), *w, *cp;
	double n, c, q, g, wait;
	char title[256];
	json_t *f, *ev;

	cp = json_object_get(st, "critical_path");
	w = json_object_get(cp, "waited_on");
	n = ist_jnum(w, "threads");
	c = ist_jnum(w, "cores");
	q = ist_jnum(w, "queued");
	g = ist_waited_gil(w);
	wait = ist_jnum(json_object_get(cp, "share"), "wait");
	if (g < 0 || g < p->gil_wait_threads || g < 0.25 * n)
		return;
	snprintf(title, sizeof(title), "While the step waited, %.2f other "
	    "threads were in Python calls but ran on %.2f cores (the GIL)",
	    n, c);
	f = ist_finding(out, "cpu_contention", "gil", g >= 1 ? "high" :
	    "medium", 0.6 + 0.3 * (g / n >= 0.5 ? 1 : g / n / 0.5), title,
	    gil_fix);
	ev = json_object_get(f, "evidence");
	json_object_set_new(ev, "step", json_string(ist_jstr(st, "name")));
	json_object_set_new(ev, "step_wait_share", json_real(wait));
	json_object_set_new(ev, "threads_in_calls", json_real(n));
	json_object_set_new(ev, "cores", json_real(c));
	json_object_set_new(ev, "queued", json_real(q));
	json_object_set_new(ev, "on_no_core", json_real(ist_round(g, 2)));
}

static const char *
run(const json_t *an, const union ist_rule_params *u, json_t *out)
{
	const struct ist_cpu_contention_params *p = &u->cpu_contention;
	const json_t *sys = json_object_get(an, "system"), *t;
	double cpu = 0, wait = 0, inv = 0, share, over = 0, samples;
	double cores, demand, lim, progs, over_n;
	bool others, rec, in_one;
	char fixbuf[600];
	const char *source, *fix;
	double wall = ist_jnum(json_object_get(an, "run"), "wall_ns");
	size_t i, n = 0;
	char title[256];
	json_t *f, *ev;
	/* the process whose threads ran the most: whether to run fewer
	 * threads in it or fewer processes.  By CPU time, which others'
	 * load leaves as it is, not runnable time, which it swells where
	 * a thread's work has no deadline: a Pool's parent, queued behind
	 * other programs through its imports, was runnable longer than
	 * each of its workers spinning a second, and was named */
	struct bproc { long long pid; double rt, cpu; int n; } bp[64],
	    *top = NULL;
	size_t nbp = 0;

	json_array_foreach(json_object_get(an, "threads"), i, t) {
		long long pid = ist_jint(t, "pid");
		double tc = ist_jnum(t, "cpu_ns"), tw = ist_jnum(t, "wait_ns");
		size_t k;
		if (ist_jnum(t, "window_ns") <= 0)
			continue;
		n++;
		cpu += tc;
		wait += tw;
		inv += ist_jnum(t, "ctx_involuntary");
		for (k = 0; k < nbp && bp[k].pid != pid; k++)
			;
		if (k == nbp && nbp < sizeof(bp) / sizeof(bp[0]))
			bp[nbp++] = (struct bproc){ pid, 0, 0, 0 };
		if (k < nbp) {
			bp[k].rt += tc + tw;
			bp[k].cpu += tc;
			bp[k].n++;
			if (top == NULL || bp[k].cpu > top->cpu)
				top = &bp[k];
		}
	}
	cores = ist_jnum(sys, "cpu_cores");
	/* how many of the program's own threads wanted a CPU at once, on
	 * average: runnable time (on a CPU or queued) over the run */
	demand = wall > 0 ? (cpu + wait) / wall : 0;
	samples = ist_jnum(sys, "runnable_samples");
	if (samples > 0)
		over = 100 * ist_jnum(sys, "oversubscribed_samples") / samples;
	if (n == 0 && samples == 0)
		return "no CPU samples";
	share = cpu + wait > 0 ? 100 * wait / (cpu + wait) : 0;
	/* procs_running counts every process of the machine: oversubscribed
	 * samples alone say little when the threads measured hardly wait
	 * (schedstat); they stand alone only where no wait was measured */
	if (wait > 0 && share < p->min_wait_pct)
		over = 0;
	if (share >= p->wait_pct || over >= p->oversubscribed_pct) {
		/* the program alone fits the cores: others' load queued it.
		 * Where the sampler counted the program's own runnable
		 * threads at each tick: they outnumbered the cores in under
		 * a tenth of them (two busy processes on two cores, one
		 * starved by others' loops, averaged 1.7 runnable, which the
		 * average alone blamed on the program); else by that
		 * average, half a core below the cores */
		progs = ist_jnum(sys, "program_runnable_samples");
		others = cores > 0 && (progs > 0 ? ist_jnum(sys,
		    "program_oversubscribed_samples") < 0.1 * progs :
		    demand <= cores - 0.5);
		/* of the others, InferScope's own threads in the program's
		 * processes (a writer encoding a busy process's calls):
		 * the machine was oversubscribed only with them at half
		 * the ticks it was, or more */
		over_n = ist_jnum(sys, "oversubscribed_samples");
		rec = others && over_n > 0 && ist_jnum(sys,
		    "recorder_oversubscribed_samples") >= 0.5 * over_n;
		source = !others ? "the program" : rec ?
		    IST_SOURCE_RECORDER : "other processes";
		/* most of the demand in one process's threads (a thread
		 * pool, intra-op threads): fewer threads there */
		in_one = top != NULL && top->n >= 2 && wall > 0 &&
		    top->rt >= 0.6 * (cpu + wait) && top->rt / wall >= 1.5;
		if (!others && in_one)
			snprintf(fixbuf, sizeof(fixbuf), "more threads want to "
			    "run than there are cores, most of them in process "
			    "%lld (%.2f of its %d threads runnable on average): "
			    "run fewer threads there (a thread pool's "
			    "max_workers; intra-op threads: torch.set_num_"
			    "threads, OMP_NUM_THREADS, MKL_NUM_THREADS) so that "
			    "workers x threads <= cores, or run on more cores",
			    top->pid, top->rt / wall, top->n);
		fix = !others && in_one ? fixbuf : !others ? "more threads "
		    "want to run than there are cores, in several processes: "
		    "use fewer worker processes, cap each one's intra-op "
		    "threads (torch.set_num_threads, OMP_NUM_THREADS, "
		    "MKL_NUM_THREADS) so that workers x threads <= cores, or "
		    "run on more cores" : rec ? "the program's own threads wanted "
		    "no more CPUs than the machine has: InferScope's own "
		    "threads in its processes, encoding what they recorded, "
		    "took the rest (data_quality.profiler_cpu_ns), which a run "
		    "without recording leaves to the program; record fewer "
		    "calls (is-record --py-min-us, --capture-range, "
		    "--no-python-calls) or on a machine with a core to spare "
		    "before tuning threads" : "the program's own threads "
		    "wanted fewer CPUs than the machine has: the wait comes "
		    "from other processes, and there is nothing to tune in "
		    "the program; measure on an idle machine, or reserve cores "
		    "for it (taskset, a cgroup cpuset)";
		snprintf(title, sizeof(title), "threads wait for a CPU: %.1f%% "
		    "of their runnable time was spent in the run queue "
		    "(%.0f cores, %s)", share, cores, !others ? "the program's "
		    "own threads" : rec ? "busy with InferScope's own "
		    "recording threads" : "busy with other processes");
		lim = share >= p->wait_pct ? p->wait_pct :
		    p->oversubscribed_pct;
		f = ist_finding(out, "cpu_contention", "runqueue",
		    ist_severity(share > over ? share : over, lim),
		    ist_margin_confidence(share >= p->wait_pct ? share : over,
		    lim), title, fix);
		ev = json_object_get(f, "evidence");
		json_object_set_new(ev, "source", json_string(source));
		json_object_set_new(ev, "program_runnable_threads", json_real(
		    ist_round(demand, 2)));
		json_object_set_new(ev, "busiest_process", top == NULL ||
		    wall <= 0 ? json_null() : json_pack("{s:I,s:f,s:i}", "pid",
		    top->pid, "runnable_threads", ist_round(top->rt / wall, 2),
		    "threads", top->n));
		json_object_set_new(ev, "wait_ns", json_integer(ist_d2i(
		    wait)));
		json_object_set_new(ev, "cpu_ns", json_integer(ist_d2i(
		    cpu)));
		json_object_set_new(ev, "wait_pct", json_real(ist_round(share,
		    2)));
		json_object_set(ev, "cpu_cores", json_object_get(sys,
		    "cpu_cores"));
		json_object_set(ev, "runnable_samples", json_object_get(sys,
		    "runnable_samples"));
		json_object_set(ev, "oversubscribed_samples",
		    json_object_get(sys, "oversubscribed_samples"));
		json_object_set(ev, "program_oversubscribed_samples",
		    json_object_get(sys, "program_oversubscribed_samples"));
		json_object_set(ev, "recorder_oversubscribed_samples",
		    json_object_get(sys, "recorder_oversubscribed_samples"));
		json_object_set_new(ev, "ctx_involuntary", json_integer(
		    ist_d2i(inv)));
		json_object_set_new(ev, "ctx_involuntary_per_s", json_real(
		    ist_round(wall > 0 ? inv / (wall / 1e9) : 0, 1)));
		json_array_append_new(json_object_get(f, "ranges"), json_pack(
		    "[O,O]", json_object_get(json_object_get(an, "run"),
		    "start_ns"), json_object_get(json_object_get(an, "run"),
		    "end_ns")));
	}
	if (!gil(an, p, out))
		step_gil(an, p, out);
	return NULL;
}

const struct ist_rule ist_rule_cpu_contention = {
	"cpu_contention",
	"threads wait for CPUs, or Python threads share one core (GIL)",
	{
		IST_PARAM(cpu_contention, wait_pct, 20,
		    "fire when threads spend this share of their runnable "
		    "time waiting for a CPU, percent"),
		IST_PARAM(cpu_contention, oversubscribed_pct, 25,
		    "or when this share of samples sees more runnable "
		    "threads than cores, percent"),
		IST_PARAM(cpu_contention, gil_cores, 1.3,
		    "Python threads together using at most this many cores "
		    "are serialised"),
		IST_PARAM(cpu_contention, gil_min_ms, 200,
		    "Python threads active at least this long are considered"),
		IST_PARAM(cpu_contention, min_wait_pct, 5,
		    "oversubscribed samples count only when threads wait at "
		    "least this share, percent (unless no wait was measured)"),
		IST_PARAM(cpu_contention, gil_wait_threads, 0.4,
		    "or when, while the steps waited, this many other threads "
		    "on average were in Python calls on no core and queued "
		    "for none"),
	},
	run,
};
