/* gpu_bound - the GPU is (nearly) always busy: the kernels that dominate. */
#include <stdio.h>

#include "rules.h"

static const char *
run(const json_t *an, const union ist_rule_params *u, json_t *out)
{
	const struct ist_gpu_bound_params *p = &u->gpu_bound;
	const json_t *d, *k;
	size_t i, j, ngpu = 0;
	bool any = false;
	double ktotal = 0, step;

	json_array_foreach(json_object_get(an, "kernels"), j, k)
		ktotal += ist_jnum(k, "total_ns");
	json_array_foreach(json_object_get(an, "devices"), i, d)
		ngpu += ist_jnum(d, "ops") > 0;
	/* the median step's share, where one GPU ran the steps' work: the
	 * loading before the first step is no part of it */
	step = ngpu == 1 ? 100 * ist_step_busy(an, NULL) : -1;
	json_array_foreach(json_object_get(an, "devices"), i, d) {
		double busy = ist_jnum(d, "busy_pct"), m;
		char title[256], sug[512], l[48];
		json_t *f, *ev, *top;

		if (ist_jnum(d, "ops") == 0)
			continue;
		any = true;
		if (busy < p->busy_pct && step < p->busy_pct)
			continue;
		m = busy > step ? busy : step;
		top = json_array();
		json_array_foreach(json_object_get(an, "kernels"), j, k) {
			if (j >= (size_t)p->top)
				break;
			json_array_append_new(top, json_pack("{s:s,s:I,s:f}",
			    "name", ist_jstr(k, "name"), "total_ns",
			    (json_int_t)ist_jint(k, "total_ns"), "share",
			    ist_round(ktotal > 0 ? ist_jnum(k, "total_ns") /
			    ktotal : 0, 4)));
		}
		if (busy >= p->busy_pct)
			snprintf(title, sizeof(title), "GPU %s is busy %.1f%% "
			    "of its active window", ist_dev_label(d, l,
			    sizeof(l)), busy);
		else
			snprintf(title, sizeof(title), "GPU %s is busy %.1f%% "
			    "of the median step (%.1f%% of its active window, "
			    "with what came before the first)",
			    ist_dev_label(d, l, sizeof(l)), step, busy);
		snprintf(sug, sizeof(sug), "the GPU is the bottleneck: speed "
		    "up the dominant kernels%s%s%s (lower precision with tensor "
		    "cores: bf16/fp8, fused attention such as "
		    "scaled_dot_product_attention, torch.compile for fusion), "
		    "or spread the work over more GPUs",
		    json_array_size(top) ? " (first: '" : "",
		    json_array_size(top) ? ist_jstr(json_array_get(top, 0),
		    "name") : "", json_array_size(top) ? "')" : "");
		f = ist_finding(out, "gpu_bound", "busy", m >= 97 ? "medium" :
		    "low", 0.6 + 3.5 * (m / 100 - 0.9 > 0 ? (m > 100 ? 0.1 :
		    m / 100 - 0.9) : 0), title, sug);
		ev = json_object_get(f, "evidence");
		json_object_set_new(ev, "device", json_integer((json_int_t)ist_jint(d, "device")));
		json_object_set(ev, "busy_pct", json_object_get(d, "busy_pct"));
		json_object_set(ev, "busy_ns", json_object_get(d, "busy_ns"));
		json_object_set(ev, "active_ns", json_object_get(d,
		    "active_ns"));
		json_object_set_new(ev, "step_busy_pct", step < 0 ?
		    json_null() : json_real(ist_round(step, 2)));
		json_object_set_new(ev, "top_kernels", top);
		json_array_append_new(json_object_get(f, "ranges"), json_pack(
		    "[O,O]", json_object_get(d, "active_start_ns"),
		    json_object_get(d, "active_end_ns")));
	}
	return any ? NULL : "no GPU activity";
}

const struct ist_rule ist_rule_gpu_bound = {
	"gpu_bound",
	"the GPU is busy almost all of its active window, or of the median "
	    "step",
	{
		IST_PARAM(gpu_bound, busy_pct, 90,
		    "fire at or above this busy share, percent"),
		IST_PARAM(gpu_bound, top, 3,
		    "kernels listed"),
	},
	run,
};
