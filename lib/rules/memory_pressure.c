/* memory_pressure - host RSS that grows or nears physical memory, major
 * page faults, GPU memory near the device's capacity. */
#include <stdbool.h>
#include <stdio.h>

#include "rules.h"

/* A process whose resident memory creeps up through the steady state. */
static void
growth_finding(const json_t *pr, const struct ist_memory_pressure_params *p,
    json_t *out)
{
	double first = ist_jnum(pr, "rss_steady_from_bytes");
	double last = ist_jnum(pr, "rss_steady_to_bytes");
	double mid = ist_jnum(pr, "rss_steady_mid_bytes");
	double growth = last - first, pct, secs;
	char title[256];
	json_t *f, *ev;

	secs = (ist_jnum(pr, "rss_steady_to_ns") - ist_jnum(pr,
	    "rss_steady_from_ns")) / 1e9;
	pct = first > 0 ? 100 * growth / first : 0;
	/* creeping: both halves of the window grow, not one step (a model
	 * loaded once) */
	if (growth < p->growth_min_mb * 1048576 || pct < p->growth_pct ||
	    mid - first < 0.25 * growth || last - mid < 0.25 * growth)
		return;
	snprintf(title, sizeof(title), "process %lld grew in steady state "
	    "from %.1f MiB to %.1f MiB (+%.0f%%, %.1f MiB/s)",
	    (long long)ist_jint(pr, "pid"), first / 1048576, last / 1048576,
	    pct, secs > 0 ? growth / 1048576 / secs : 0);
	f = ist_finding(out, "memory_pressure", "growth",
	    ist_severity(growth, p->growth_min_mb * 1048576),
	    ist_margin_confidence(pct, p->growth_pct), title,
	    "resident memory keeps growing: look for per-request state that "
	    "is kept (outputs appended to lists, caches without a bound, "
	    "tensors that keep their autograd graph: use torch.no_grad() or "
	    "inference_mode()); tracemalloc snapshots show where Python "
	    "memory grows");
	ev = json_object_get(f, "evidence");
	json_object_set(ev, "pid", json_object_get(pr, "pid"));
	json_object_set(ev, "rss_from_bytes",
	    json_object_get(pr, "rss_steady_from_bytes"));
	json_object_set(ev, "rss_mid_bytes",
	    json_object_get(pr, "rss_steady_mid_bytes"));
	json_object_set(ev, "rss_to_bytes",
	    json_object_get(pr, "rss_steady_to_bytes"));
	json_object_set(ev, "rss_peak_bytes",
	    json_object_get(pr, "rss_peak_bytes"));
	json_object_set_new(ev, "growth_bytes", json_integer(ist_d2i(growth)));
	json_object_set_new(ev, "growth_pct", json_real(ist_round(pct, 1)));
	json_object_set_new(ev, "growth_bytes_per_s", json_integer(
	    ist_d2i(secs > 0 ? growth / secs : 0)));
	json_array_append_new(json_object_get(f, "ranges"), json_pack("[O,O]",
	    json_object_get(pr, "rss_steady_from_ns"), json_object_get(pr,
	    "rss_steady_to_ns")));
}

static const char *
run(const json_t *an, const union ist_rule_params *u, json_t *out)
{
	const struct ist_memory_pressure_params *p = &u->memory_pressure;
	const json_t *pr, *d;
	double phys = ist_jnum(json_object_get(an, "system"), "memory_bytes");
	bool any = false;
	char title[256], l[48];
	json_t *f, *ev;
	size_t i;

	json_array_foreach(json_object_get(an, "processes"), i, pr) {
		double peak, faults;

		/* the RSS figures are there when it was sampled */
		if (json_object_get(pr, "rss_peak_bytes") == NULL)
			continue;
		peak = ist_jnum(pr, "rss_peak_bytes");
		faults = ist_jnum(pr, "major_faults");
		any = true;
		growth_finding(pr, p, out);
		if (phys > 0 && 100 * peak / phys >= p->peak_pct) {
			snprintf(title, sizeof(title), "process %lld peaked at "
			    "%.0f%% of physical memory (%.1f of %.1f GiB)",
			    (long long)ist_jint(pr, "pid"), 100 * peak / phys,
			    peak / 1073741824, phys / 1073741824);
			f = ist_finding(out, "memory_pressure", "peak", "high",
			    0.85, title, "the host is close to swapping: load "
			    "weights with mmap (safetensors), free "
			    "intermediates, lower the batch or worker count");
			ev = json_object_get(f, "evidence");
			json_object_set(ev, "pid", json_object_get(pr, "pid"));
			json_object_set(ev, "rss_peak_bytes",
			    json_object_get(pr, "rss_peak_bytes"));
			json_object_set_new(ev, "memory_bytes", json_integer(
			    ist_d2i(phys)));
		}
		if (faults >= p->major_faults && p->major_faults > 0) {
			snprintf(title, sizeof(title), "process %lld took %.0f "
			    "major page faults", (long long)ist_jint(pr, "pid"),
			    faults);
			f = ist_finding(out, "memory_pressure", "faults",
			    ist_severity(faults, p->major_faults), 0.8, title,
			    "major "
			    "faults read pages from disk: memory is short or "
			    "weights are paged in lazily (mmap): preload them "
			    "or add memory");
			ev = json_object_get(f, "evidence");
			json_object_set(ev, "pid", json_object_get(pr, "pid"));
			json_object_set(ev, "major_faults",
			    json_object_get(pr, "major_faults"));
		}
	}
	json_array_foreach(json_object_get(an, "devices"), i, d) {
		double peak = ist_jnum(d, "memory_peak_bytes"), mem =
		    ist_jnum(d, "memory_bytes");
		if (peak <= 0)
			continue;
		any = true;
		if (mem <= 0 || 100 * peak / mem < p->gpu_peak_pct)
			continue;
		snprintf(title, sizeof(title), "GPU %s memory peaked at %.0f%% "
		    "of its %.1f GiB", ist_dev_label(d, l, sizeof(l)), 100 * peak /
		    mem, mem / 1073741824);
		f = ist_finding(out, "memory_pressure", "gpu_peak", "medium",
		    0.8, title, "GPU memory is nearly full: the caching "
		    "allocator will fragment and may fail; lower the batch, "
		    "use lower precision, or free cached blocks between "
		    "phases");
		ev = json_object_get(f, "evidence");
		json_object_set_new(ev, "device", json_integer(ist_jint(d, "device")));
		json_object_set(ev, "memory_peak_bytes", json_object_get(d,
		    "memory_peak_bytes"));
		json_object_set(ev, "memory_bytes", json_object_get(d,
		    "memory_bytes"));
	}
	return any ? NULL : "no memory samples";
}

const struct ist_rule ist_rule_memory_pressure = {
	"memory_pressure",
	"host memory grows or nears physical memory; GPU memory nears full",
	{
		IST_PARAM(memory_pressure, growth_pct, 50,
		    "RSS growth in the steady state (a quarter, or the end "
		    "of start-up's imports, to nine tenths of the process's "
		    "life), percent"),
		IST_PARAM(memory_pressure, growth_min_mb, 16,
		    "and at least this many MiB"),
		IST_PARAM(memory_pressure, peak_pct, 80,
		    "RSS peak as a share of physical memory, percent"),
		IST_PARAM(memory_pressure, major_faults, 1000,
		    "major page faults"),
		IST_PARAM(memory_pressure, gpu_peak_pct, 90,
		    "GPU memory peak as a share of the device's, percent"),
	},
	run,
};
