/* gpu_idle - the GPU waits for the host: idle time attributed to what the
 * launching thread was doing during the gaps. */
#include <stdio.h>
#include <string.h>

#include "rules.h"

static const char *
run(const json_t *an, const union ist_rule_params *u, json_t *out)
{
	const struct ist_gpu_idle_params *p = &u->gpu_idle;
	const json_t *d;
	size_t i;
	bool any = false;

	json_array_foreach(json_object_get(an, "devices"), i, d) {
		const json_t *att = json_object_get(d, "idle_attribution"),
		    *bd = json_object_get(d, "idle_breakdown"), *top, *t0;
		double idle = ist_jnum(d, "idle_pct"), hw, kw, ot;
		char title[256], sug[768], l[48];
		json_t *f, *ev;

		if (ist_jnum(d, "ops") == 0)
			continue;
		any = true;
		if (idle <= p->idle_pct ||
		    ist_jnum(d, "active_ns") < p->min_active_ms * 1e6)
			continue;
		top = json_object_get(att, "top");
		t0 = json_array_get(top, 0);
		hw = ist_jnum(bd, "host_wait_ns");
		kw = ist_jnum(bd, "kernel_wait_ns");
		ot = ist_jnum(bd, "other_ns");
		snprintf(title, sizeof(title), "GPU %s is idle %.1f%% of its "
		    "active window (%.3f ms of %.3f ms)",
		    ist_dev_label(d, l, sizeof(l)), idle,
		    ist_jnum(d, "idle_ns") / 1e6,
		    ist_jnum(d, "active_ns") / 1e6);
		if (kw > hw && kw > ot)
			snprintf(sug, sizeof(sug), "most idle time is launch "
			    "latency between queued kernels: capture the "
			    "steady-state loop in a CUDA graph "
			    "(torch.cuda.graphs, torch.compile "
			    "mode=\"reduce-overhead\") or fuse small kernels");
		else if (t0 && strcmp(ist_jstr(t0, "kind"), "none"))
			snprintf(sug, sizeof(sug), "the launching thread spent "
			    "%.0f%% of the idle time in %s '%s': take it off "
			    "the launch path (prefetch or preprocess in a "
			    "DataLoader worker or another thread, overlap it "
			    "with the previous step's GPU work) or give the "
			    "GPU more work per launch (larger batches)",
			    100 * ist_jnum(t0, "share"), ist_jstr(t0, "kind"),
			    ist_jstr(t0, "what"));
		else
			snprintf(sug, sizeof(sug), "the host is not feeding the "
			    "GPU: profile the code between launches (add "
			    "inferscope.scope() around steps) and overlap "
			    "host work with GPU work, or batch requests");
		f = ist_finding(out, "gpu_idle", "idle",
		    ist_severity(idle, p->idle_pct),
		    ist_margin_confidence(idle, p->idle_pct), title, sug);
		ev = json_object_get(f, "evidence");
		json_object_set_new(ev, "device", json_integer(ist_jint(d, "device")));
		json_object_set(ev, "active_ns", json_object_get(d,
		    "active_ns"));
		json_object_set(ev, "busy_ns", json_object_get(d, "busy_ns"));
		json_object_set(ev, "idle_ns", json_object_get(d, "idle_ns"));
		json_object_set(ev, "idle_pct", json_object_get(d, "idle_pct"));
		json_object_set(ev, "gaps", json_object_get(d, "gaps"));
		json_object_set_new(ev, "host_wait_ns", json_integer(
		    ist_d2i(hw)));
		json_object_set_new(ev, "kernel_wait_ns", json_integer(
		    ist_d2i(kw)));
		json_object_set_new(ev, "other_ns", json_integer(
		    ist_d2i(ot)));
		if (att && json_is_object(att)) {
			json_t *t = json_array();
			const json_t *x;
			size_t k;
			json_array_foreach(top, k, x)
				if (k < (size_t)p->top)
					json_array_append(t, (json_t *)x);
			json_object_set_new(ev, "thread", json_string(
			    ist_jstr(att, "thread")));
			json_object_set_new(ev, "tid", json_integer(
			    ist_jint(att, "tid")));
			json_object_set_new(ev, "top", t);
		}
		json_object_set(f, "ranges", json_object_get(d, "idle_gaps"));
	}
	return any ? NULL : "no GPU activity";
}

const struct ist_rule ist_rule_gpu_idle = {
	"gpu_idle",
	"the GPU is idle for a share of its active window",
	{
		IST_PARAM(gpu_idle, idle_pct, 10,
		    "fire above this idle share, percent"),
		IST_PARAM(gpu_idle, min_active_ms, 1,
		    "ignore devices active less than this"),
		IST_PARAM(gpu_idle, top, 5,
		    "contributors listed"),
		IST_PARAM(gpu_idle, kernel_wait_us, 30,
		    "gaps up to this long between queued operations count as "
		    "kernel wait"),
	},
	run,
};
