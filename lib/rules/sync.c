/* sync - the host blocks on the GPU: explicit synchronisation and implicit
 * syncs (synchronous copies, cudaFree), with their call sites. */
#include <stdio.h>
#include <string.h>

#include "rules.h"

static const char *
run(const json_t *an, const union ist_rule_params *u, json_t *out)
{
	const struct ist_sync_params *p = &u->sync;
	const json_t *s, *x, *syncs = json_object_get(an, "syncs");
	double wall = ist_jnum(json_object_get(an, "run"), "wall_ns");
	double count = 0, blocked = 0, pct;
	char title[256], sug[768];
	const char *site = NULL;
	double site_ns = -1;
	json_t *f, *ev, *kinds, *sites;
	size_t i, j;

	if (json_array_size(syncs) == 0)
		return "no synchronisation recorded";
	kinds = json_array();
	sites = json_array();
	json_array_foreach(syncs, i, s) {
		/* cudaStreamWaitEvent makes a stream wait on the GPU: the
		 * host goes on */
		if (!strcmp(ist_jstr(s, "kind"), "stream_wait_event"))
			continue;
		count += ist_jnum(s, "count");
		blocked += ist_jnum(s, "blocked_ns");
		json_array_append_new(kinds, json_pack("{s:s,s:I,s:I}", "kind",
		    ist_jstr(s, "kind"), "count", ist_jint(s,
		    "count"), "blocked_ns", ist_jint(s,
		    "blocked_ns")));
		json_array_foreach(json_object_get(s, "sites"), j, x) {
			json_t *c = json_deep_copy(x);
			json_object_set_new(c, "kind", json_string(
			    ist_jstr(s, "kind")));
			json_array_append_new(sites, c);
			if (ist_jnum(x, "blocked_ns") > site_ns &&
			    ist_jstr(x, "where")[0] != '(') {
				site_ns = ist_jnum(x, "blocked_ns");
				site = ist_jstr(x, "where");
			}
		}
	}
	pct = wall > 0 ? 100 * blocked / wall : 0;
	if (pct <= p->blocked_pct || count < p->min_count) {
		json_decref(kinds);
		json_decref(sites);
		return NULL;
	}
	snprintf(title, sizeof(title), "the host is blocked in %.0f "
	    "synchronisation%s for %.1f%% of the run (%.3f ms)", count,
	    count == 1 ? "" : "s", pct, blocked / 1e6);
	if (site && (strstr(site, "item") || strstr(site, "tolist") ||
	    strstr(site, ".cpu") || strstr(site, "numpy")))
		snprintf(sug, sizeof(sug), "'%s' reads a GPU value on the host "
		    "and waits for all queued work each time: keep the value on "
		    "the GPU (accumulate losses/metrics as tensors) and read it "
		    "once every N steps", site);
	else
		snprintf(sug, sizeof(sug), "remove synchronisation from the "
		    "hot loop%s%s%s: wait on CUDA events for the one result you "
		    "need, copy with non_blocking=True, and read results on the "
		    "host less often", site ? " (most blocked time: '" : "",
		    site ? site : "", site ? "')" : "");
	f = ist_finding(out, "sync", "blocked",
	    ist_severity(pct, p->blocked_pct),
	    ist_margin_confidence(pct, p->blocked_pct), title, sug);
	ev = json_object_get(f, "evidence");
	json_object_set_new(ev, "count", json_integer(ist_d2i(count)));
	json_object_set_new(ev, "blocked_ns", json_integer(ist_d2i(
	    blocked)));
	json_object_set_new(ev, "blocked_pct", json_real(ist_round(pct, 2)));
	json_object_set_new(ev, "kinds", kinds);
	json_object_set_new(ev, "sites", sites);
	json_array_foreach(syncs, i, s)
		json_array_foreach(json_object_get(s, "longest"), j, x)
			if (json_array_size(json_object_get(f, "ranges")) < 5)
				json_array_append(json_object_get(f,
				    "ranges"), (json_t *)x);
	return NULL;
}

const struct ist_rule ist_rule_sync = {
	"sync",
	"the host spends time blocked in synchronisation",
	{
		IST_PARAM(sync, blocked_pct, 5,
		    "fire above this share of the run, percent"),
		IST_PARAM(sync, min_count, 1,
		    "and at least this many syncs"),
	},
	run,
};
