/* launch_bound - many short kernels with launch gaps between them, launch
 * delays and slow launch calls. */
#include <stdio.h>

#include "rules.h"

static const char *
run(const json_t *an, const union ist_rule_params *u, json_t *out)
{
	const struct ist_launch_bound_params *p = &u->launch_bound;
	const json_t *d, *l = json_object_get(an, "launches");
	double launches = ist_jnum(l, "count"), slow = ist_jnum(l,
	    "slow_count");
	char title[256], lb[48];
	json_t *f, *ev;
	size_t i;
	bool any = false;

	json_array_foreach(json_object_get(an, "devices"), i, d) {
		double k = ist_jnum(d, "kernels"), med = ist_jnum(d,
		    "kernel_p50_ns") / 1e3, idle = ist_jnum(d, "idle_pct");
		if (k == 0)
			continue;
		any = true;
		if (k < p->min_kernels || med >= p->kernel_median_us ||
		    idle < p->min_idle_pct)
			continue;
		snprintf(title, sizeof(title), "GPU %s runs %.0f short kernels "
		    "(median %.1f us) with launch gaps: idle %.1f%%",
		    ist_dev_label(d, lb, sizeof(lb)), k, med, idle);
		f = ist_finding(out, "launch_bound", "short_kernels",
		    ist_severity(p->kernel_median_us / (med > 0.001 ? med :
		    0.001), 1), ist_margin_confidence(p->kernel_median_us,
		    med > 0.001 ? med : 0.001), title,
		    /* kernels a graph replays: a graph is not the cure */
		    2 * ist_jnum(d, "graph_ops") >= ist_jnum(d, "ops") ?
		    "each kernel costs less than its share of the graph "
		    "replay: most already run in CUDA graphs, so fuse "
		    "elementwise ops (torch.compile) or give each kernel more "
		    "work (larger batches)" :
		    "each kernel costs less than launching it: capture "
		    "the loop in a CUDA graph (torch.cuda.CUDAGraph, "
		    "torch.compile(mode=\"reduce-overhead\")), fuse elementwise "
		    "ops (torch.compile), or give each launch more work "
		    "(larger batches)");
		ev = json_object_get(f, "evidence");
		json_object_set_new(ev, "device", json_integer((json_int_t)ist_jint(d, "device")));
		json_object_set(ev, "kernels", json_object_get(d, "kernels"));
		json_object_set(ev, "kernel_p50_ns", json_object_get(d,
		    "kernel_p50_ns"));
		json_object_set(ev, "gaps", json_object_get(d, "gaps"));
		json_object_set(ev, "idle_pct", json_object_get(d, "idle_pct"));
		json_object_set(ev, "launch_delay_p50_ns", json_object_get(d,
		    "launch_delay_p50_ns"));
		json_object_set(ev, "launch_delay_outliers", json_object_get(d,
		    "launch_delay_outliers"));
		json_object_set(ev, "launch_p50_ns", json_object_get(l,
		    "p50_ns"));
		json_object_set(ev, "slow_launches", json_object_get(l,
		    "slow_count"));
	}
	if (launches > 0 && slow >= 1 &&
	    100 * slow / launches >= p->slow_launch_pct) {
		snprintf(title, sizeof(title), "%.0f of %.0f launch calls took "
		    "longer than %.0f us (longest %.1f us)", slow, launches,
		    p->slow_launch_us, ist_jnum(l, "max_ns") / 1e3);
		f = ist_finding(out, "launch_bound", "slow_launch", "low", 0.7,
		    title, "slow launch calls point at host-side work inside "
		    "the launch (lazy module loading, argument packing, "
		    "allocator calls): warm up before timing, and use CUDA "
		    "graphs to replay launches");
		ev = json_object_get(f, "evidence");
		json_object_set(ev, "launches", json_object_get(l, "count"));
		json_object_set(ev, "slow_launches", json_object_get(l,
		    "slow_count"));
		json_object_set(ev, "max_ns", json_object_get(l, "max_ns"));
	}
	return any ? NULL : "no kernels";
}

const struct ist_rule ist_rule_launch_bound = {
	"launch_bound",
	"many short kernels separated by launch gaps; slow launches",
	{
		IST_PARAM(launch_bound, kernel_median_us, 10,
		    "kernels shorter than this (median) are short"),
		IST_PARAM(launch_bound, min_kernels, 100,
		    "at least this many kernels"),
		IST_PARAM(launch_bound, launch_delay_us, 100,
		    "a kernel starting this long after its launch on an idle "
		    "GPU is a launch-delay outlier"),
		IST_PARAM(launch_bound, slow_launch_us, 50,
		    "a launch call longer than this is slow"),
		IST_PARAM(launch_bound, min_idle_pct, 10,
		    "and the GPU idle at least this share, percent"),
		IST_PARAM(launch_bound, slow_launch_pct, 5,
		    "report slow launches above this share of launches, "
		    "percent"),
	},
	run,
};
