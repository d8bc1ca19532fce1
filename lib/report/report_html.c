/*
 * report_html.c - the HTML report: the Markdown rendered by cmark-gfm (with
 * its table extension), styles inline, and three inline SVG charts: a
 * timeline with a lane per thread and per GPU stream, GPU utilisation over
 * time, and the scopes by total time; then the page's own script
 * (viewer.js, inlined) draws a timeline that zooms and pans and a flame
 * graph from the detail report_detail.c keeps.  No network.
 *
 * The timeline (report_int.h) is binned while the trace streams past; the
 * terminal report (report_text.c) draws the same lanes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmark-gfm.h>
#include <cmark-gfm-core-extensions.h>

#include "internal.h"
#include "report.h"
#include "report_int.h"
#include "rules/rules.h"

static const char *const cat_name[NCAT] = { "scope", "NVTX range",
    "Python call", "CUDA call", "sync", "kernel", "copy H2D", "copy D2H",
    "copy D2D", "memset" };
static const char *const cat_color[NCAT] = { "#6a4c93", "#8a6fb3",
    "#4c8bd6", "#f0a030", "#d64c4c", "#2e9e5b", "#c0607f", "#8f5bb8",
    "#a07040", "#7a7a7a" };

struct ist_timeline *
ist_timeline_new(void)
{
	return calloc(1, sizeof(struct ist_timeline));
}

void
ist_timeline_free(struct ist_timeline *tl)
{
	if (tl == NULL)
		return;
	ist_detail_free(tl);
	for (int i = 0; i < tl->nlanes; i++)
		free(tl->lane[i]);
	free(tl->names);
	free(tl);
}

static struct lane *
lane_of(struct ist_timeline *tl, bool gpu, int64_t pid, int64_t tid)
{
	struct lane *l;
	for (int i = 0; i < tl->nlanes; i++)
		if (tl->lane[i]->gpu == gpu && tl->lane[i]->pid == pid &&
		    tl->lane[i]->tid == tid)
			return tl->lane[i];
	if (tl->nlanes == MAXLANES || (l = calloc(1, sizeof(*l))) == NULL)
		return NULL;
	l->gpu = gpu;
	l->idx = tl->nlanes;
	l->pid = pid;
	l->tid = tid;
	if (gpu) {
		snprintf(l->name, sizeof(l->name), "GPU %lld stream %lld",
		    (long long)pid, (long long)tid);
	} else {
		snprintf(l->name, sizeof(l->name), "%lld/%lld", (long long)pid,
		    (long long)tid);
		for (size_t i = 0; i < tl->nnames; i++)
			if (tl->names[i].pid == pid && tl->names[i].tid == tid)
				snprintf(l->name, sizeof(l->name), "%s %lld",
				    tl->names[i].name, (long long)tid);
	}
	tl->lane[tl->nlanes++] = l;
	return l;
}

static void
widen(struct ist_timeline *tl, int64_t end)
{
	while (end > tl->t0 + tl->w * COLS) {
		for (int i = 0; i < tl->nlanes; i++)
			for (int c = 0; c < NCAT; c++) {
				int64_t *v = tl->lane[i]->cov[c];
				for (int k = 0; k < COLS / 2; k++)
					v[k] = v[2 * k] + v[2 * k + 1];
				memset(v + COLS / 2, 0, COLS / 2 * sizeof(*v));
			}
		tl->w *= 2;
	}
}

int
ist_timeline_add(struct ist_timeline *tl, const struct ist_event *ev)
{
	enum cat c;
	bool gpu = false;
	struct lane *l;
	int64_t s, e;

	switch (ev->type) {
	case IST_THREAD:
		if (ist_room((void **)&tl->names, &tl->capnames, tl->nnames,
		    sizeof(*tl->names)))
			return -1;
		tl->names[tl->nnames].pid = ev->pid;
		tl->names[tl->nnames].tid = ev->tid;
		snprintf(tl->names[tl->nnames].name,
		    sizeof(tl->names[0].name), "%.*s",
		    (int)(ev->name.n < 79 ? ev->name.n : 79), ev->name.p);
		tl->nnames++;
		return 0;
	case IST_SCOPE: c = C_SCOPE; break;
	case IST_NVTX_RANGE: c = C_NVTX; break;
	case IST_CPU_CALL: c = C_PY; break;
	case IST_CUDA_API: c = C_CUDA; break;
	case IST_SYNC: c = C_SYNC; break;
	case IST_GPU_KERNEL: c = C_KERNEL; gpu = true; break;
	case IST_H2D_COPY: c = C_H2D; gpu = true; break;
	case IST_D2H_COPY: c = C_D2H; gpu = true; break;
	case IST_D2D_COPY: c = C_D2D; gpu = true; break;
	case IST_MEMSET: c = C_MEMSET; gpu = true; break;
	default:
		return 0;
	}
	s = ev->start_ns;
	e = ev->end_ns;
	/* not times (see analyze.c), or a negative range: not drawn */
	if (e < s || s < -IST_TIME_MAX || e > IST_TIME_MAX)
		return 0;
	l = gpu ? lane_of(tl, true, IST_HAS(ev, IST_F_DEVICE) ? ev->device : 0,
	    IST_HAS(ev, IST_F_STREAM) ? ev->stream : 0) : lane_of(tl, false,
	    ev->pid, IST_HAS(ev, IST_F_TID) ? ev->tid : ev->pid);
	if (l == NULL) {
		tl->undrawn++;
		return 0;
	}
	if (!tl->have_t) {
		tl->have_t = true;
		tl->t0 = s;
		tl->w = 1000;
	}
	if (tl->detail && ist_detail_add(tl, l, l->idx, c, ev))
		return -1;
	if (s < tl->t0)
		s = tl->t0;
	if (e < s)
		e = s;
	widen(tl, e + 1);
	while (s < e) {
		int64_t k = (s - tl->t0) / tl->w;
		int64_t ke = tl->t0 + (k + 1) * tl->w, x = e < ke ? e : ke;
		l->cov[c][k] += x - s;
		s = x;
	}
	return 0;
}

/* ---- SVG ---- */

static void
esc(struct ist_buf *o, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '&': ist_buf_printf(o, "&amp;"); break;
		case '<': ist_buf_printf(o, "&lt;"); break;
		case '>': ist_buf_printf(o, "&gt;"); break;
		case '"': ist_buf_printf(o, "&quot;"); break;
		default: ist_buf_append(o, s, 1);
		}
}

int
ist_lane_cmp(const void *x, const void *y)
{
	const struct lane *a = *(struct lane *const *)x,
	    *b = *(struct lane *const *)y;
	if (a->gpu != b->gpu)
		return a->gpu ? 1 : -1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

int
ist_timeline_used(const struct ist_timeline *tl, bool used[NCAT])
{
	int n = 0;

	for (int c = 0; c < NCAT; c++)
		used[c] = false;
	for (int i = 0; i < tl->nlanes; i++)
		for (int c = 0; c < NCAT; c++)
			for (int k = COLS - 1; k >= 0; k--)
				if (tl->lane[i]->cov[c][k]) {
					used[c] = true;
					if (k + 1 > n)
						n = k + 1;
					break;
				}
	return n;
}

#define LABEL 190
#define ROW 10

/* One row of a lane: runs of columns with the same colour and shade. */
static void
row(struct ist_buf *o, const struct ist_timeline *tl, const struct lane *l,
    const enum cat *cats, int ncats, double y, int ncols)
{
	int start = 0, prev_c = -1, prev_a = 0;

	for (int k = 0; k <= ncols; k++) {
		int best = -1, alpha = 0;
		if (k < ncols) {
			int64_t tot = 0, bestv = 0;
			for (int i = 0; i < ncats; i++) {
				int64_t v = l->cov[cats[i]][k];
				/* short, telling activity wins over calls */
				int64_t wv = cats[i] == C_SYNC ? v * 4 :
				    cats[i] == C_CUDA ? v * 2 : v;
				tot += v;
				if (v > 0 && wv > bestv) {
					bestv = wv;
					best = cats[i];
				}
			}
			if (best >= 0) {
				double f = (double)tot / (double)tl->w;
				alpha = f >= 0.75 ? 4 : f >= 0.5 ? 3 : f >= 0.2 ?
				    2 : 1;
			}
		}
		if (k == ncols || best != prev_c || alpha != prev_a) {
			/* the used columns are stretched over the width */
			double sc = (double)COLS / ncols;
			if (prev_c >= 0)
				ist_buf_printf(o, "<rect x=\"%.1f\" y=\"%.0f\" "
				    "width=\"%.1f\" height=\"%d\" fill=\"%s\" "
				    "fill-opacity=\"%.2f\"/>\n", LABEL + start * sc,
				    y, (k - start) * sc, ROW - 1,
				    cat_color[prev_c], 0.25 * prev_a);
			start = k;
			prev_c = best;
			prev_a = alpha;
		}
	}
}

static void
axis(struct ist_buf *o, double span, double y, int width)
{
	char b[32];
	for (int i = 0; i <= 4; i++) {
		double x = LABEL + width * i / 4.0;
		ist_buf_printf(o, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" "
		    "y2=\"%.0f\" class=\"tick\"/>\n<text x=\"%.1f\" y=\"%.0f\" "
		    "class=\"ax\" text-anchor=\"%s\">%s</text>\n", x, y, x, y + 4,
		    x, y + 16, i == 0 ? "start" : i == 4 ? "end" : "middle",
		    dur_tick(b, sizeof(b), span * i / 4.0));
	}
}

static void
timeline_svg(struct ist_buf *o, const struct ist_timeline *tl)
{
	const struct lane *sorted[MAXLANES];
	int ncols, h;
	double y = 8;
	bool used[NCAT];
	static const enum cat host_top[] = { C_SCOPE, C_NVTX };
	static const enum cat host_act[] = { C_PY, C_CUDA, C_SYNC };
	static const enum cat gpu_act[] = { C_KERNEL, C_H2D, C_D2H, C_D2D,
	    C_MEMSET };

	if (tl == NULL || tl->nlanes == 0)
		return;
	ncols = ist_timeline_used(tl, used);
	for (int i = 0; i < tl->nlanes; i++)
		sorted[i] = tl->lane[i];
	qsort(sorted, (size_t)tl->nlanes, sizeof(sorted[0]), ist_lane_cmp);
	h = 8;
	for (int i = 0; i < tl->nlanes; i++)
		h += sorted[i]->gpu ? ROW + 6 : 2 * ROW + 6;
	{
		char bw[32];
		ist_buf_printf(o, "<figure id=\"is-static\"><figcaption>"
		    "Timeline: a lane per thread (scopes and NVTX ranges above, calls below) and per "
		    "GPU stream, in %d columns of %s; darker means busier."
		    "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
		    "class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
		    "aria-label=\"timeline\">\n", ncols, dur_tick(bw, sizeof(bw),
		    (double)tl->w), LABEL + COLS + 10, h + 44);
	}
	for (int i = 0; i < tl->nlanes; i++) {
		const struct lane *l = sorted[i];
		ist_buf_printf(o, "<text x=\"%d\" y=\"%.0f\" class=\"lane\" "
		    "text-anchor=\"end\">", LABEL - 6, y + (l->gpu ? ROW - 1 :
		    2 * ROW - 2));
		esc(o, l->name);
		ist_buf_printf(o, "</text>\n");
		if (l->gpu) {
			row(o, tl, l, gpu_act, 5, y, ncols);
			y += ROW + 6;
		} else {
			row(o, tl, l, host_top, 2, y, ncols);
			row(o, tl, l, host_act, 3, y + ROW, ncols);
			y += 2 * ROW + 6;
		}
	}
	axis(o, (double)tl->w * ncols, y, COLS);
	y += 30;
	for (int c = 0, x = LABEL; c < NCAT; c++) {
		if (!used[c])
			continue;
		ist_buf_printf(o, "<rect x=\"%d\" y=\"%.0f\" width=\"10\" "
		    "height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%.0f\" "
		    "class=\"ax\">%s</text>\n", x, y - 9, cat_color[c], x + 14,
		    y, cat_name[c]);
		x += 24 + 7 * (int)strlen(cat_name[c]);
	}
	ist_buf_printf(o, "</svg>");
	if (tl->undrawn)
		ist_buf_printf(o, "<p class=\"note\">%llu events on threads "
		    "or streams past the first %d lanes are not drawn.</p>",
		    (unsigned long long)tl->undrawn, MAXLANES);
	ist_buf_printf(o, "</figure>\n");
}

/* The viewer's source (viewer.js), as a C string */
static const char viewer_js[] =
#include "viewer_js.h"
    ;

/*
 * The zoomable timeline and the flame graph: shown by the page's own
 * script (viewer.js), which hides the static timeline above; without
 * scripts the page is the same as before.
 */
static int
viewer(struct ist_buf *o, const struct ist_timeline *tl)
{
	struct lane *sorted[MAXLANES];

	if (tl == NULL || tl->nlanes == 0 || !tl->detail)
		return 0;
	for (int i = 0; i < tl->nlanes; i++)
		sorted[i] = tl->lane[i];
	qsort(sorted, (size_t)tl->nlanes, sizeof(sorted[0]), ist_lane_cmp);
	ist_buf_printf(o, "<div id=\"is-viewer\" style=\"display:none\">\n"
	    "<figure><figcaption>Timeline: the wheel zooms, dragging pans, a "
	    "double-click fits a range; hover for details (a launch and its "
	    "GPU work are linked). GC pauses in red with a mark, import "
	    "phases shaded. <button id=\"is-in\">+</button> <button "
	    "id=\"is-out\">&minus;</button> <button id=\"is-reset\">reset"
	    "</button> <span id=\"is-range\"></span></figcaption>\n"
	    "<div><canvas id=\"is-timeline\"></canvas></div></figure>\n"
	    "<figure id=\"is-flamefig\"><figcaption>Flame graph of the "
	    "Python calls of thread <select id=\"is-thread\"></select>: "
	    "calls merged by call path, width their inclusive time; hover "
	    "for self time, click to zoom into a call, click the top bar to "
	    "zoom out. Calls under a 2000th of the thread's time are in "
	    "their caller's self time.</figcaption>\n<div><canvas "
	    "id=\"is-flame\"></canvas></div></figure>\n</div>\n"
	    "<div id=\"is-tip\"></div>\n"
	    "<script type=\"application/json\" id=\"is-data\">");
	if (ist_detail_json(tl, sorted, o))
		return -1;
	ist_buf_printf(o, "</script>\n<script>\n%s</script>\n", viewer_js);
	return 0;
}

static void
util_svg(struct ist_buf *o, const json_t *an)
{
	const json_t *d, *v;
	size_t i, j;

	json_array_foreach(json_object_get(an, "devices"), i, d) {
		const json_t *u = json_object_get(d, "utilization"),
		    *vals = json_object_get(u, "values");
		size_t n = json_array_size(vals);
		double bw = ist_jnum(u, "bucket_ns"), x0 = LABEL, w = COLS;
		char b[32], l[48];

		if (n == 0)
			continue;
		ist_buf_printf(o, "<figure><figcaption>GPU %s utilisation from its "
		    "first operation (%s buckets)</figcaption>\n<svg xmlns=\"http://www.w3"
		    ".org/2000/svg\" class=\"chart\" viewBox=\"0 0 %d 150\" "
		    "role=\"img\" aria-label=\"GPU utilisation\">\n",
		    ist_dev_label(d, l, sizeof(l)), dur_tick(b, sizeof(b), bw),
		    LABEL + COLS + 10);
		ist_buf_printf(o, "<text x=\"%d\" y=\"14\" class=\"ax\" "
		    "text-anchor=\"end\">100%%</text><text x=\"%d\" y=\"110\" "
		    "class=\"ax\" text-anchor=\"end\">0%%</text>\n<line x1=\"%d\" "
		    "y1=\"10\" x2=\"%d\" y2=\"10\" class=\"grid\"/><line x1=\"%d\" "
		    "y1=\"106\" x2=\"%d\" y2=\"106\" class=\"grid\"/>\n",
		    LABEL - 6, LABEL - 6, LABEL, LABEL + COLS, LABEL,
		    LABEL + COLS);
		ist_buf_printf(o, "<path class=\"util\" d=\"M%.1f 106", x0);
		json_array_foreach(vals, j, v) {
			double f = json_number_value(v);
			double xa = x0 + w * (double)j / (double)n;
			double xb = x0 + w * (double)(j + 1) / (double)n;
			double y = 106 - 96 * (f > 1 ? 1 : f);
			ist_buf_printf(o, " L%.1f %.1f L%.1f %.1f", xa, y, xb, y);
		}
		ist_buf_printf(o, " L%.1f 106 Z\"/>\n", x0 + w);
		axis(o, bw * (double)n, 110, COLS);
		ist_buf_printf(o, "</svg></figure>\n");
	}
}

static void
scopes_svg(struct ist_buf *o, const json_t *an)
{
	const json_t *arr = json_object_get(an, "scopes"), *x;
	size_t n = json_array_size(arr), i;
	double max;
	char b[32];

	if (n == 0)
		return;
	if (n > 12)
		n = 12;
	max = ist_jnum(json_array_get(arr, 0), "total_ns");
	ist_buf_printf(o, "<figure><figcaption>Scopes and NVTX ranges by total "
	    "time (host time; the GPU time launched inside in green)"
	    "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
	    "class=\"chart\" viewBox=\"0 0 %d %zu\" role=\"img\" "
	    "aria-label=\"scopes\">\n", LABEL + COLS + 10, 20 * n + 10);
	json_array_foreach(arr, i, x) {
		double t = ist_jnum(x, "total_ns"), g = ist_jnum(x, "gpu_ns");
		double wt = max > 0 ? COLS * 0.8 * t / max : 0;
		double wg = max > 0 ? COLS * 0.8 * (g < t ? g : t) / max : 0;
		if (i >= n)
			break;
		ist_buf_printf(o, "<text x=\"%d\" y=\"%zu\" class=\"lane\" "
		    "text-anchor=\"end\">", LABEL - 6, 20 * i + 19);
		esc(o, ist_jstr(x, "name"));
		ist_buf_printf(o, "</text><rect x=\"%d\" y=\"%zu\" width=\"%.1f\" "
		    "height=\"14\" fill=\"%s\"/>", LABEL, 20 * i + 7, wt,
		    cat_color[strcmp(ist_jstr(x, "kind"), "nvtx") ? C_SCOPE :
		    C_NVTX]);
		if (wg > 0)
			ist_buf_printf(o, "<rect x=\"%d\" y=\"%zu\" width=\"%.1f\" "
			    "height=\"5\" fill=\"%s\"/>", LABEL, 20 * i + 16, wg,
			    cat_color[C_KERNEL]);
		ist_buf_printf(o, "<text x=\"%.1f\" y=\"%zu\" class=\"ax\">%s "
		    "(%lld)</text>\n", LABEL + wt + 6, 20 * i + 19,
		    dur_tick(b, sizeof(b), t), (long long)ist_jint(x, "count"));
	}
	ist_buf_printf(o, "</svg></figure>\n");
}

/* The critical path of a step as one stacked bar, by category */
static void
critical_svg(struct ist_buf *o, const json_t *an)
{
	static const struct { const char *key, *label, *color; } c[] = {
		{ "host", "host work", "#2e6fdb" },
		{ "cuda_api", "CUDA calls, launch latency", "#e0a030" },
		{ "sync", "sync return", "#d64545" },
		{ "gc", "garbage collection", "#a0306e" },
		{ "import", "imports", "#7a7f8a" },
		{ "wait", "sleeps and waits", "#b8bec8" },
		{ "kernel", "kernels", "#2e9e5b" },
		{ "copy", "copies", "#1a9fb5" },
	};
	const json_t *cp = json_object_get(json_object_get(an, "steps"),
	    "critical_path"), *sh = json_object_get(cp, "share");
	double x = LABEL, lx = LABEL;
	char b[32];

	if (!json_is_object(sh))
		return;
	ist_buf_printf(o, "<figure><figcaption>The critical path of a step, "
	    "%s: what the step's end waited on, by kind</figcaption>\n<svg "
	    "xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 "
	    "0 %d 62\" role=\"img\" aria-label=\"critical path\">\n",
	    dur_tick(b, sizeof(b), ist_jnum(cp, "length_ns")), LABEL + COLS +
	    10);
	ist_buf_printf(o, "<text x=\"%d\" y=\"22\" class=\"lane\" "
	    "text-anchor=\"end\">critical path</text>\n", LABEL - 6);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		double v = ist_jnum(sh, c[i].key), wd = COLS * v;
		if (v <= 0)
			continue;
		ist_buf_printf(o, "<rect x=\"%.1f\" y=\"10\" width=\"%.1f\" "
		    "height=\"18\" fill=\"%s\"><title>%s %.1f%%</title>"
		    "</rect>\n", x, wd, c[i].color, c[i].label, 100 * v);
		x += wd;
		ist_buf_printf(o, "<rect x=\"%.1f\" y=\"40\" width=\"10\" "
		    "height=\"10\" fill=\"%s\"/><text x=\"%.1f\" y=\"49\" "
		    "class=\"ax\">%s %.1f%%</text>\n", lx, c[i].color, lx + 14,
		    c[i].label, 100 * v);
		lx += 14 + 7.0 * (double)(strlen(c[i].label) + 7);
	}
	ist_buf_printf(o, "</svg></figure>\n");
}

static const char style[] =
    "body{margin:0;background:#f6f7f9;color:#1d2330;font:15px/1.5 "
    "system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}\n"
    "main{max-width:1240px;margin:0 auto;padding:24px 32px;background:#fff}\n"
    "h1{font-size:26px;margin:0 0 8px}h2{font-size:20px;margin-top:32px;"
    "border-bottom:1px solid #e3e6eb;padding-bottom:4px}h3{font-size:16px;"
    "margin-bottom:4px}\n"
    "table{border-collapse:collapse;margin:8px 0 16px;font-size:14px}\n"
    "th,td{border:1px solid #e3e6eb;padding:4px 10px;vertical-align:top}\n"
    "th{background:#f0f2f5;text-align:left}tr:nth-child(even) td"
    "{background:#fafbfc}\n"
    "code{font:13px ui-monospace,SFMono-Regular,Menlo,monospace;"
    "background:#f0f2f5;padding:1px 4px;border-radius:3px;"
    "overflow-wrap:anywhere}\n"
    "figure{margin:16px 0}figcaption{font-size:13px;color:#5a6270}\n"
    "svg.chart{width:100%;height:auto;background:#fff;border:1px solid "
    "#e3e6eb}\n"
    "svg .lane{font:11px system-ui,sans-serif;fill:#1d2330}svg .ax{font:11px "
    "system-ui,sans-serif;fill:#5a6270}\n"
    "svg .tick,svg .grid{stroke:#c8ccd3;stroke-width:1}svg .util{fill:"
    "#2e9e5b;fill-opacity:.35;stroke:#2e9e5b;stroke-width:1}\n"
    ".note{font-size:13px;color:#5a6270}\n"
    "#is-viewer canvas{display:block;border:1px solid #e3e6eb;cursor:grab}"
    "#is-viewer button{font:12px system-ui,sans-serif;padding:0 8px}\n"
    "#is-tip{position:absolute;display:none;white-space:pre-wrap;"
    "max-width:640px;overflow-wrap:anywhere;background:#1d2330;color:#fff;"
    "font:12px/1.4 system-ui,sans-serif;padding:6px 8px;border-radius:4px;"
    "pointer-events:none}\n";

enum ist_status
ist_report_html(const json_t *an, const struct ist_timeline *tl,
    struct ist_buf *out, struct ist_error *err)
{
	struct ist_buf md = { 0 }, charts = { 0 };
	cmark_parser *p;
	cmark_node *doc;
	cmark_syntax_extension *table;
	char *html = NULL, *at;
	enum ist_status st;

	if ((st = ist_report_markdown(an, &md, err)) != IST_OK)
		goto out;
	cmark_gfm_core_extensions_ensure_registered();
	p = cmark_parser_new(CMARK_OPT_DEFAULT);
	if ((table = cmark_find_syntax_extension("table")) != NULL)
		cmark_parser_attach_syntax_extension(p, table);
	cmark_parser_feed(p, md.p, md.n);
	doc = cmark_parser_finish(p);
	html = cmark_render_html(doc, CMARK_OPT_DEFAULT,
	    cmark_parser_get_syntax_extensions(p));
	cmark_node_free(doc);
	cmark_parser_free(p);
	if (html == NULL) {
		st = IST_ENOMEM;
		ist_seterr(err, st, "out of memory");
		goto out;
	}
	ist_buf_printf(&charts, "<h2>Charts</h2>\n");
	{
		size_t h = charts.n;
		timeline_svg(&charts, tl);
		if (viewer(&charts, tl)) {
			st = IST_ENOMEM;
			ist_seterr(err, st, "out of memory");
			goto out;
		}
		util_svg(&charts, an);
		scopes_svg(&charts, an);
		critical_svg(&charts, an);
		if (charts.n == h)      /* no empty heading */
			charts.n = 0;
	}
	ist_buf_printf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
	    "<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\""
	    "width=device-width, initial-scale=1\">\n<meta name=\"generator\" "
	    "content=\"is-report %s\">\n<title>InferScope report: %s</title>\n"
	    "<style>\n%s</style>\n</head>\n<body>\n<main>\n",
	    IST_PACKAGE_VERSION, ist_jstr(json_object_get(an, "verdict"),
	    "classification"), style);
	/* the charts go first, after the verdict and the run */
	at = strstr(html, "<h2>Findings</h2>");
	if (at) {
		ist_buf_append(out, html, (size_t)(at - html));
		ist_buf_append(out, charts.p, charts.n);
		ist_buf_printf(out, "%s", at);
	} else {
		ist_buf_printf(out, "%s", html);
		ist_buf_append(out, charts.p, charts.n);
	}
	if (ist_buf_printf(out, "</main>\n</body>\n</html>\n")) {
		st = IST_ENOMEM;
		ist_seterr(err, st, "out of memory");
	}
out:
	free(html);
	ist_buf_release(&md);
	ist_buf_release(&charts);
	return st;
}
