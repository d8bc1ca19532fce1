/* transfer - host-device copies: their share of GPU time, link saturation,
 * pageable source or destination memory, synchronous copies. */
#include <stdio.h>
#include <string.h>

#include "rules.h"

static const json_t *
dir(const json_t *an, const char *d)
{
	const json_t *c;
	size_t i;
	json_array_foreach(json_object_get(an, "copies"), i, c)
		if (strcmp(ist_jstr(c, "direction"), d) == 0)
			return c;
	return NULL;
}

static void
ranges(json_t *f, const json_t *c)
{
	const json_t *r;
	size_t i;
	json_array_foreach(json_object_get(c, "longest"), i, r)
		json_array_append(json_object_get(f, "ranges"), (json_t *)r);
}

static const char *
run(const json_t *an, const union ist_rule_params *u, json_t *out)
{
	const struct ist_transfer_params *p = &u->transfer;
	const json_t *h = dir(an, "h2d"), *d2 = dir(an, "d2h"), *dv;
	const json_t *sides[2] = { h, d2 };
	const char *names[2] = { "host-to-device", "device-to-host" };
	double busy = 0, link = 0, copy, pct, pcount = 0, pbytes = 0, sync = 0;
	char title[256];
	json_t *f, *ev;
	size_t i;

	if (h == NULL && d2 == NULL)
		return "no host-device copies";
	json_array_foreach(json_object_get(an, "devices"), i, dv) {
		busy += ist_jnum(dv, "busy_ns");
		if (ist_jnum(dv, "pcie_gbps") > link)
			link = ist_jnum(dv, "pcie_gbps");
	}
	copy = ist_jnum(h, "ns") + ist_jnum(d2, "ns");
	pct = busy > 0 ? 100 * copy / busy : 0;
	if (pct > p->copy_pct) {
		snprintf(title, sizeof(title), "host-device copies take %.1f%% "
		    "of GPU busy time (%.3f ms of %.3f ms)", pct, copy / 1e6,
		    busy / 1e6);
		f = ist_finding(out, "transfer", "time",
		    ist_severity(pct, p->copy_pct),
		    ist_margin_confidence(pct, p->copy_pct), title,
		    "move less data "
		    "between host and GPU: keep tensors on the GPU across "
		    "steps, send compact types (uint8 images, fp16), and "
		    "overlap copies with compute (pinned memory, "
		    "non_blocking=True, a separate stream)");
		ev = json_object_get(f, "evidence");
		json_object_set_new(ev, "copy_ns", json_integer(ist_d2i(
		    copy)));
		json_object_set_new(ev, "gpu_busy_ns", json_integer(
		    ist_d2i(busy)));
		json_object_set_new(ev, "copy_pct", json_real(ist_round(pct,
		    2)));
		json_object_set_new(ev, "h2d_bytes", json_integer(ist_jint(h, "bytes")));
		json_object_set_new(ev, "d2h_bytes", json_integer(ist_jint(d2, "bytes")));
		json_object_set_new(ev, "h2d_gbps", json_real(ist_jnum(h,
		    "gbps")));
		json_object_set_new(ev, "d2h_gbps", json_real(ist_jnum(d2,
		    "gbps")));
		ranges(f, h);
		ranges(f, d2);
	}
	for (int s = 0; s < 2; s++) {
		double gbps = ist_jnum(sides[s], "gbps");
		if (sides[s] == NULL || link <= 0 ||
		    100 * gbps / link < p->saturation_pct)
			continue;
		snprintf(title, sizeof(title), "%s copies run at %.1f GB/s, "
		    "%.0f%% of the link's %.1f GB/s", names[s], gbps,
		    100 * gbps / link, link);
		f = ist_finding(out, "transfer", "saturation", "medium", 0.8,
		    title, "the PCIe link is saturated: only sending less "
		    "data helps (compress or downcast inputs, decode on the "
		    "GPU, cache weights and constant tensors on the device)");
		ev = json_object_get(f, "evidence");
		json_object_set_new(ev, "direction", json_string(
		    ist_jstr(sides[s], "direction")));
		json_object_set_new(ev, "gbps", json_real(gbps));
		json_object_set_new(ev, "link_gbps", json_real(link));
		json_object_set_new(ev, "bytes", json_integer(ist_jint(sides[s], "bytes")));
		ranges(f, sides[s]);
	}
	for (int s = 0; s < 2; s++) {
		pcount += ist_jnum(sides[s], "pageable_count");
		pbytes += ist_jnum(sides[s], "pageable_bytes");
		sync += ist_jnum(sides[s], "sync_calls");
	}
	if (pcount > 0 && pbytes > p->pageable_min_bytes) {
		snprintf(title, sizeof(title), "%.0f copies (%.1f MiB) use "
		    "pageable host memory", pcount, pbytes / 1048576);
		f = ist_finding(out, "transfer", "pageable", pbytes >= 64e6 ?
		    "medium" : "low", 0.9, title, "pageable copies are staged "
		    "through a driver buffer and cannot overlap compute: pin "
		    "the host buffers (DataLoader(pin_memory=True), "
		    "tensor.pin_memory()) and copy with non_blocking=True");
		ev = json_object_get(f, "evidence");
		json_object_set_new(ev, "count", json_integer(ist_d2i(
		    pcount)));
		json_object_set_new(ev, "bytes", json_integer(ist_d2i(
		    pbytes)));
	}
	if (sync >= p->sync_copies_min && sync > 0) {
		snprintf(title, sizeof(title), "%.0f synchronous copy calls "
		    "block the host", sync);
		f = ist_finding(out, "transfer", "sync_copy", "low", 0.85,
		    title, "synchronous cudaMemcpy waits for all queued work; "
		    "use cudaMemcpyAsync (tensor.to(device, non_blocking=True) "
		    "from pinned memory) and synchronise once where the "
		    "result is needed");
		ev = json_object_get(f, "evidence");
		json_object_set_new(ev, "count", json_integer(ist_d2i(
		    sync)));
	}
	return NULL;
}

const struct ist_rule ist_rule_transfer = {
	"transfer",
	"host-device copies cost GPU time, saturate the link, or use "
	"pageable memory",
	{
		IST_PARAM(transfer, copy_pct, 20,
		    "fire when H2D+D2H time exceeds this share of GPU busy "
		    "time, percent"),
		IST_PARAM(transfer, saturation_pct, 80,
		    "bandwidth at or above this share of the link's peak is "
		    "saturation, percent"),
		IST_PARAM(transfer, pageable_min_bytes, 0,
		    "report pageable copies above this many bytes"),
		IST_PARAM(transfer, sync_copies_min, 1,
		    "report this many synchronous copy calls or more"),
	},
	run,
};
