/*
 * report_text.c - the terminal report (is-report -f text) and the summary
 * inferscope run prints when it ends: the verdict, the findings, the top
 * scopes, functions and kernels, and a timeline strip per thread and GPU
 * stream, fitted to the terminal's width.
 *
 * Everything is written in UTF-8 and measured in columns (one per code
 * point: the report's own text has no wide characters).  Names from the
 * trace never reach the terminal raw: a control character (C0, DEL, C1)
 * becomes '?'.  ASCII output is the same text transliterated one column for
 * one column at the end, so the layout is the same; colour is SGR escapes
 * that take no column.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "report.h"
#include "report_int.h"
#include "rules/rules.h"

struct tx {
	struct ist_buf *o;
	const struct ist_text_opts *to;
	int w;                   /* columns */
};

enum sgr { BOLD, DIM, RED, YELLOW, GREEN, BLUE, MAGENTA, CYAN };
static const char *const sgr_code[] = { "1", "2", "31", "33", "32", "34",
    "35", "36" };

static void
on(struct tx *t, enum sgr c)
{
	if (t->to->color)
		ist_buf_printf(t->o, "\033[%sm", sgr_code[c]);
}

static void
off(struct tx *t)
{
	if (t->to->color)
		ist_buf_printf(t->o, "\033[0m");
}

/* Columns a UTF-8 string takes: its code points. */
static int
cols(const char *s, size_t n)
{
	int c = 0;

	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			c++;
	return c;
}

/*
 * s, at most max columns of it: a longer one loses its start (keep_end, for
 * dotted names, whose end says most) or its end, marked by an ellipsis.
 * Control characters become '?'.  Returns the columns written.
 */
static int
put_n(struct tx *t, const char *s, size_t n, int max, bool keep_end)
{
	size_t from = 0, to = n;
	int c = cols(s, n), used;

	if (max <= 0)
		return 0;
	if (c > max) {
		int drop = c - (max - 1);
		if (keep_end) {
			while (drop > 0 && from < n) {
				from++;
				while (from < n &&
				    ((unsigned char)s[from] & 0xc0) == 0x80)
					from++;
				drop--;
			}
		} else {
			while (drop > 0 && to > 0) {
				to--;
				while (to > 0 &&
				    ((unsigned char)s[to] & 0xc0) == 0x80)
					to--;
				drop--;
			}
		}
		if (keep_end)
			ist_buf_printf(t->o, "…");
	}
	for (size_t i = from, k; i < to; i += k) {
		/* a control character (C1's two bytes too): one '?' */
		if ((k = ist_control_len(s + i, to - i)) > 0) {
			ist_buf_append(t->o, "?", 1);
			continue;
		}
		k = 1;
		ist_buf_append(t->o, s + i, 1);
	}
	if (c > max && !keep_end)
		ist_buf_printf(t->o, "…");
	used = c > max ? max : c;
	return used;
}

static int
put(struct tx *t, const char *s, int max, bool keep_end)
{
	return put_n(t, s, strlen(s), max, keep_end);
}

/* put() with the first letter capitalised: a sentence of the analysis */
static int
put_sentence(struct tx *t, const char *s, int max)
{
	if (*s >= 'a' && *s <= 'z' && max > 1) {
		ist_buf_printf(t->o, "%c", *s - 'a' + 'A');
		return 1 + put(t, s + 1, max - 1, false);
	}
	return put(t, s, max, false);
}

static void
pad(struct tx *t, int n)
{
	for (; n > 0; n--)
		ist_buf_append(t->o, " ", 1);
}

/* The length of the word at s; a figure and its unit ("3.1 ms") are one. */
static size_t
word(const char *s)
{
	static const char *const units[] = { "ns", "µs", "ms", "s", "B",
	    "KiB", "MiB", "GiB", "GB/s" };
	size_t n = strcspn(s, " "), m, k;
	const char *u = s + n;

	if (n == 0 || !(s[n - 1] >= '0' && s[n - 1] <= '9') || *u != ' ')
		return n;
	u++;
	m = strcspn(u, " ");
	for (k = m; k > 0 && strchr(").,;:", u[k - 1]); k--)
		;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i]) == k && memcmp(u, units[i], k) == 0)
			return (size_t)(u - s) + m;
	return n;
}

/* s as a paragraph: words wrapped at the width, every line after the
 * first indented by indent columns (the first starts at column at, after a
 * space when lead and it stays on that line); no newline at its end. */
static void
wrap(struct tx *t, const char *s, int at, int indent, bool lead)
{
	const char *start = s;
	int col = at;
	bool first = !lead;

	while (*start == ' ')
		start++;

	for (;;) {
		size_t n;
		int c;

		while (*s == ' ')
			s++;
		if (*s == '\0')
			break;
		n = word(s);
		c = cols(s, n);
		if (col + !first + c > t->w && col > indent) {
			ist_buf_printf(t->o, "\n");
			pad(t, indent);
			col = indent;
		} else if (!first) {
			ist_buf_printf(t->o, " ");
			col++;
		}
		if (s == start && *s >= 'a' && *s <= 'z') {
			/* a sentence: its first letter capitalised */
			ist_buf_printf(t->o, "%c", *s - 'a' + 'A');
			col += 1 + put_n(t, s + 1, n - 1, t->w - col - 1, false);
		} else {
			col += put_n(t, s, n, t->w - col, false);
		}
		first = false;
		s += n;
	}
}

/* A sentence of the analysis, wrapped, with its full stop. */
static void
wrap_sentence(struct tx *t, const char *s, int at, int indent, bool lead)
{
	struct ist_buf b = { 0 };
	size_t n = strlen(s);

	ist_buf_printf(&b, "%s%s", s, n && s[n - 1] != '.' ? "." : "");
	wrap(t, b.p ? b.p : "", at, indent, lead);
	ist_buf_release(&b);
}

/* A heading, bold, and what it shows, wrapped */
static void
heading(struct tx *t, const char *s, const char *what)
{
	ist_buf_printf(t->o, "\n");
	on(t, BOLD);
	ist_buf_printf(t->o, "%s", s);
	off(t);
	if (what)
		wrap(t, what, cols(s, strlen(s)), 2, true);
	ist_buf_printf(t->o, "\n");
}

/* ---- the report ---- */

/* "Verdict: CLASS (confidence 0.87)", the class bold and cut at class_max
 * columns, all of it at max: the columns written. */
static int
verdict_head(struct tx *t, const json_t *v, int class_max, int max)
{
	char conf[32];
	int n;

	on(t, BOLD);
	n = put(t, "Verdict: ", max, false);
	n += put(t, ist_jstr(v, "classification"), class_max < max - n ?
	    class_max : max - n, false);
	off(t);
	snprintf(conf, sizeof(conf), " (confidence %.2f)", ist_jnum(v,
	    "confidence"));
	return n + put(t, conf, max - n, false);
}

static void
verdict(struct tx *t, const json_t *an)
{
	const json_t *v = json_object_get(an, "verdict"),
	    *run = json_object_get(an, "run"), *cmd, *x;
	struct nums u = { 0 };
	struct ist_buf line = { 0 };
	char l[48];
	size_t i;
	int n;

	n = verdict_head(t, v, 40, t->w + 40);
	ist_buf_printf(t->o, ".");
	n++;
	if (*ist_jstr(v, "reason"))
		wrap_sentence(t, ist_jstr(v, "reason"), n, 0, true);
	ist_buf_printf(t->o, "\n");
	/* the run: its command, then its figures */
	cmd = json_object_get(run, "command");
	if (json_is_string(cmd))
		ist_buf_printf(&line, "%s", json_string_value(cmd));
	json_array_foreach(json_is_array(cmd) ? cmd : NULL, i, x)
		ist_buf_printf(&line, "%s%s", i ? " " : "",
		    json_is_string(x) ? json_string_value(x) : "");
	if (line.n) {
		ist_buf_append(&line, "", 1);
		ist_buf_printf(t->o, "Run: ");
		on(t, DIM);
		put(t, line.p, t->w - 5, false);
		off(t);
		ist_buf_printf(t->o, "\n");
	}
	line.n = 0;
	ist_buf_printf(&line, "%s", dur(&u, ist_jnum(run, "wall_ns")));
	/* an end that was not a clean one, said beside the time */
	json_array_foreach(json_object_get(run, "exits"), i, x)
		if (!ist_exit_clean(x))
			ist_buf_printf(&line, " · %s", ist_exit_text(x, l,
			    sizeof(l)));
	json_array_foreach(json_object_get(run, "producers"), i, x) {
		const char *s = json_string_value(x), *c;
		if (s && (c = strstr(s, "(CPython")) != NULL) {
			size_t k = strcspn(c + 1, ")");
			ist_buf_printf(&line, " · %.*s", (int)k, c + 1);
			break;
		}
	}
	json_array_foreach(json_object_get(an, "devices"), i, x)
		ist_buf_printf(&line, " · GPU %s%s%s", ist_dev_label(x, l,
		    sizeof(l)), *ist_jstr(x, "name") ? " " : "",
		    ist_jstr(x, "name"));
	if (json_array_size(json_object_get(an, "devices")) == 0)
		ist_buf_printf(&line, " · no GPU recorded");
	ist_buf_printf(&line, " · %lld events", (long long)ist_jint(run,
	    "events"));
	ist_buf_append(&line, "", 1);
	pad(t, 5);
	put(t, line.p ? line.p : "", t->w - 5, false);
	ist_buf_printf(t->o, "\n");
	ist_buf_release(&line);
}

static enum sgr
severity_colour(const char *sev)
{
	return strcmp(sev, "high") == 0 ? RED : strcmp(sev, "medium") == 0 ?
	    YELLOW : CYAN;
}

static void
findings(struct tx *t, const json_t *an)
{
	const json_t *fs = json_object_get(an, "findings"), *f;
	size_t i;

	heading(t, "Findings", NULL);
	if (json_array_size(fs) == 0) {
		ist_buf_printf(t->o, "  No rule fired: nothing in this run "
		    "crossed a threshold.\n");
		return;
	}
	json_array_foreach(fs, i, f) {
		const char *sev = ist_jstr(f, "severity");
		char num[16];
		int n = snprintf(num, sizeof(num), "%2zu ", i + 1);

		ist_buf_printf(t->o, "%s", num);
		on(t, severity_colour(sev));
		n += put(t, sev, 6, false);
		off(t);
		pad(t, 11 - n);
		wrap(t, ist_jstr(f, "title"), 11, 11, false);
		ist_buf_printf(t->o, "\n");
		pad(t, 11);
		on(t, DIM);
		ist_buf_printf(t->o, "→ ");
		wrap_sentence(t, ist_jstr(f, "suggestion"), 13, 13, false);
		off(t);
		ist_buf_printf(t->o, "\n");
	}
}

/* A table row: the name in the columns left by the figures. */
static void
row(struct tx *t, const char *name, bool keep_end, const char *figs,
    int figw)
{
	int namew = t->w - 2 - figw, n;

	pad(t, 2);
	if (namew < 12) {
		/* too narrow for both: the name, then its figures */
		if (*name) {
			put(t, name, t->w - 2, keep_end);
			ist_buf_printf(t->o, "\n");
		}
		while (*figs == ' ' && 2 + cols(figs, strlen(figs)) > t->w)
			figs++;
		ist_buf_printf(t->o, "%s\n", figs);
		return;
	}
	n = put(t, name, namew, keep_end);
	pad(t, namew - n);
	ist_buf_printf(t->o, "%s\n", figs);
}

#define TOP 5

/* The top rows of the analysis's tables: a count, then durations; a
 * duration the analysis lacks (CPU time, without the sampler) is left out
 * with its heading. */
static const struct top {
	const char *key, *title, *order, *count;
	bool keep_end;           /* dotted names: their end says most */
	const char *durs[4], *heads[4];
} tops[] = {
	{ "scopes", "Scopes and NVTX ranges", "(by total time)", "count",
	  false, { "total_ns", "mean_ns", "p95_ns" },
	  { "total", "mean", "p95" } },
	{ "functions", "Python functions", "(by self time)", "calls", true,
	  { "self_ns", "cpu_ns", "incl_ns" },
	  { "self", "self CPU", "inclusive" } },
	{ "kernels", "Kernels", "(by total time)", "calls", false,
	  { "total_ns", "mean_ns" }, { "total", "mean" } },
};

static void
tables(struct tx *t, const json_t *an)
{
	for (size_t k = 0; k < sizeof(tops) / sizeof(tops[0]); k++) {
		const struct top *tp = &tops[k];
		const json_t *x, *arr = json_object_get(an, tp->key);
		bool has[4];
		char head[160];
		int hn;
		size_t i;

		if (json_array_size(arr) == 0)
			continue;
		hn = snprintf(head, sizeof(head), "%7s", tp->count);
		for (int d = 0; tp->durs[d]; d++) {
			has[d] = json_object_get(json_array_get(arr, 0),
			    tp->durs[d]) != NULL;
			if (has[d])
				hn += snprintf(head + hn, sizeof(head) -
				    (size_t)hn, " %10s", tp->heads[d]);
		}
		heading(t, tp->title, tp->order);
		row(t, "", false, head, hn);
		json_array_foreach(arr, i, x) {
			struct nums u = { 0 };
			char figs[160];
			int n;

			if (i == TOP)
				break;
			n = snprintf(figs, sizeof(figs), "%7lld",
			    (long long)ist_jint(x, "count"));
			for (int d = 0; tp->durs[d]; d++)
				if (has[d])
					n += snprintf(figs + n, sizeof(figs) -
					    (size_t)n, " %10s", dur(&u,
					    ist_jnum(x, tp->durs[d])));
			row(t, ist_jstr(x, "name"), tp->keep_end, figs, hn);
		}
	}
}

/* The critical path of a step as a bar of letters, one per kind (in
 * colour on a terminal), and its legend wrapped under it */
static const struct {
	const char *key, *label;
	char c;
	enum sgr sgr;
} cp_kind[] = {
	{ "host", "host work", 'h', MAGENTA },
	{ "cuda_api", "CUDA calls", 'c', BLUE },
	{ "sync", "sync return", 's', RED },
	{ "gc", "gc", 'g', YELLOW },
	{ "import", "imports", 'i', YELLOW },
	{ "wait", "waits", 'w', DIM },
	{ "kernel", "kernels", 'k', GREEN },
	{ "copy", "copies", 'x', CYAN },
};
#define NCP (sizeof(cp_kind) / sizeof(cp_kind[0]))

static void
critical_path(struct tx *t, const json_t *cp)
{
	const json_t *sh = json_object_get(cp, "share");
	struct nums u = { 0 };
	struct ist_buf leg = { 0 };
	char head[64];
	double cum = 0;
	int hn, bw, at = 0;

	if (!json_is_object(sh) || ist_jnum(cp, "length_ns") <= 0)
		return;
	hn = snprintf(head, sizeof(head), "critical path %s ", dur(&u,
	    ist_jnum(cp, "length_ns")));
	bw = t->w - 4 - hn;
	if (bw > 60)
		bw = 60;
	if (bw < 10)
		return;
	pad(t, 2);
	ist_buf_printf(t->o, "%s", head);
	for (size_t i = 0; i < NCP; i++) {
		double v = ist_jnum(sh, cp_kind[i].key);
		int to;
		if (v <= 0)
			continue;
		cum += v;
		to = (int)(cum * bw + 0.5);
		if (to > bw)
			to = bw;
		if (to > at) {
			on(t, cp_kind[i].sgr);
			for (; at < to; at++)
				ist_buf_append(t->o, &cp_kind[i].c, 1);
			off(t);
		}
		if (v >= 0.001)
			ist_buf_printf(&leg, "%s[%c] %s %.1f%%", leg.n ? " · " :
			    "", cp_kind[i].c, cp_kind[i].label, 100 * v);
	}
	ist_buf_printf(t->o, "\n");
	pad(t, 2 + hn);
	wrap(t, leg.p ? leg.p : "", 2 + hn, 2 + hn, false);
	ist_buf_printf(t->o, "\n");
	ist_buf_release(&leg);
	/* what the other threads ran meanwhile, the top three */
	sh = json_object_get(cp, "waited_on");
	if (json_array_size(json_object_get(sh, "by"))) {
		const json_t *e;
		size_t i;
		ist_buf_printf(&leg, "while it waited, %.2f other threads "
		    "worked", ist_waited_working(sh));
		if (json_is_number(json_object_get(sh, "cores")))
			ist_buf_printf(&leg, " (on %.2f cores)", ist_jnum(sh,
			    "cores"));
		ist_buf_printf(&leg, ", in");
		json_array_foreach(json_object_get(sh, "by"), i, e) {
			if (i == 3)
				break;
			ist_buf_printf(&leg, "%s %s %.1f%%", i ? "," : "",
			    ist_jstr(e, "call"), 100 * ist_jnum(e, "share"));
		}
		pad(t, 2 + hn);
		wrap(t, leg.p ? leg.p : "", 2 + hn, 2 + hn, false);
		ist_buf_printf(t->o, "\n");
		ist_buf_release(&leg);
	}
}

/* The steps: their time, and what a change would save (the top three) */
static void
steps(struct tx *t, const json_t *an)
{
	const json_t *st = json_object_get(an, "steps"), *e;
	const json_t *w = json_object_get(st, "wall");
	const json_t *cov = json_object_get(st, "coverage");
	struct nums u = { 0 };
	char head[300], figs[160];
	size_t i;
	int hn;

	if (!json_is_object(st) || ist_jint(st, "measured") == 0)
		return;
	if (json_is_number(cov) && json_number_value(cov) < 0.5)
		/* as the Markdown report says it */
		snprintf(head, sizeof(head), "(%lld measured, only %.0f%% of "
		    "the time from the first to the last: a part of what the "
		    "program repeats; mark the whole with "
		    "inferscope.scope(\"step\"); the saving per step from a "
		    "replay of each)", (long long)ist_jint(st, "measured"),
		    100 * json_number_value(cov));
	else if (ist_jint(st, "overlapped") > 0)
		/* as the Markdown report says it */
		snprintf(head, sizeof(head), "(%lld measured; %lld more began "
		    "inside them, concurrent or nested, and are theirs; the "
		    "saving per step from a replay of each)",
		    (long long)ist_jint(st, "measured"),
		    (long long)ist_jint(st, "overlapped"));
	else
		snprintf(head, sizeof(head), "(%lld measured; the saving per "
		    "step from a replay of each)",
		    (long long)ist_jint(st, "measured"));
	heading(t, "Steps", head);
	hn = snprintf(head, sizeof(head), "%10s %10s %10s", "p50", "p95",
	    "max");
	row(t, "", false, head, hn);
	snprintf(figs, sizeof(figs), "%10s %10s %10s", dur(&u, ist_jnum(w,
	    "p50_ns")), dur(&u, ist_jnum(w, "p95_ns")), dur(&u, ist_jnum(w,
	    "max_ns")));
	row(t, ist_jstr(st, "name"), true, figs, hn);
	critical_path(t, json_object_get(st, "critical_path"));
	json_array_foreach(json_object_get(st, "what_if"), i, e) {
		if (i == 3 || ist_jnum(e, "saves_pct") < 1)
			break;
		hn = snprintf(figs, sizeof(figs), "%10s %5.1f%%", dur(&u,
		    ist_jnum(e, "saves_ns")), ist_jnum(e, "saves_pct"));
		row(t, ist_jstr(e, "change"), false, figs, hn);
	}
}

/* ---- the timeline strips ---- */

static const char *const level[9] = { " ", "▁", "▂", "▃", "▄", "▅", "▆",
    "▇", "█" };
static const enum sgr cat_sgr[NCAT] = { MAGENTA, MAGENTA, BLUE, YELLOW, RED,
    GREEN, CYAN, CYAN, CYAN, CYAN };

/* The time lane l covers per category in [a, b) (column units). */
static void
cover(const struct lane *l, double a, double b, double *v)
{
	for (int c = 0; c < NCAT; c++)
		v[c] = 0;
	for (int k = (int)a; k < COLS && k < b; k++) {
		double lo = k < a ? a : k, hi = k + 1 > b ? b : k + 1;
		if (hi <= lo)
			continue;
		for (int c = 0; c < NCAT; c++)
			v[c] += (double)l->cov[c][k] * (hi - lo);
	}
}

static void
strip(struct tx *t, const struct ist_timeline *tl, const struct lane *l,
    int ncols, int width)
{
	int prev = -1;

	for (int j = 0; j < width; j++) {
		double a = (double)ncols * j / width,
		    b = (double)ncols * (j + 1) / width, v[NCAT], span, f = 0,
		    best = 0;
		int dom = -1, lv;

		cover(l, a, b, v);
		span = (b - a) * (double)tl->w;
		for (int c = 0; c < NCAT; c++) {
			/* a GPU stream runs one thing at a time: its share is
			 * the sum; a thread's calls nest: the largest */
			double s = v[c] / span;
			f = l->gpu ? f + s : s > f ? s : f;
			/* short, telling activity wins over calls, as in the
			 * HTML timeline; scopes only where nothing else ran */
			double wv = c == C_SYNC ? v[c] * 4 : c == C_CUDA ?
			    v[c] * 2 : c <= C_NVTX ? v[c] * 1e-6 : v[c];
			if (v[c] > 0 && wv > best) {
				best = wv;
				dom = c;
			}
		}
		f = f > 1 ? 1 : f;
		lv = f <= 0 ? 0 : (int)ceil(f * 8);
		lv = lv > 8 ? 8 : lv;
		if (t->to->color && lv > 0 && dom != prev) {
			ist_buf_printf(t->o, "\033[%sm", sgr_code[cat_sgr[dom]]);
			prev = dom;
		}
		ist_buf_printf(t->o, "%s", level[lv]);
	}
	if (prev >= 0)
		off(t);
	ist_buf_printf(t->o, "\n");
}

static void
timeline(struct tx *t, const struct ist_timeline *tl, const json_t *an)
{
	double t0 = ist_jnum(json_object_get(an, "run"), "start_ns");
	struct nums u = { 0 };
	const struct lane *sorted[MAXLANES];
	int ncols, label, width, shown;
	bool used[NCAT];
	char per[32], what[200];

	if (tl == NULL || tl->nlanes == 0 ||
	    (ncols = ist_timeline_used(tl, used)) == 0)
		return;
	for (int i = 0; i < tl->nlanes; i++)
		sorted[i] = tl->lane[i];
	qsort(sorted, (size_t)tl->nlanes, sizeof(sorted[0]), ist_lane_cmp);
	label = t->w / 4 > 24 ? 24 : t->w / 4;
	width = t->w - 2 - label - 1;
	snprintf(what, sizeof(what), "(%s of the run, %s a column; height: "
	    "how busy)", span(&u, (double)tl->t0, (double)tl->t0 +
	    (double)tl->w * ncols, t0), dur_tick(per, sizeof(per),
	    (double)tl->w * ncols / width));
	heading(t, "Timeline", what);
	shown = tl->nlanes < 24 ? tl->nlanes : 24;
	for (int i = 0; i < shown; i++) {
		int n;
		pad(t, 2);
		n = put(t, sorted[i]->name, label, false);
		pad(t, label - n + 1);
		strip(t, tl, sorted[i], ncols, width);
	}
	if (tl->nlanes > shown || tl->undrawn)
		ist_buf_printf(t->o, "  (%d more lanes not drawn)\n",
		    tl->nlanes - shown + (tl->undrawn ? 1 : 0));
	if (t->to->color) {
		static const char *const legend[NCAT] = { "scope", "NVTX",
		    "Python", "CUDA call", "sync", "kernel", "copy", "copy",
		    "copy", "copy" };
		bool copy = false;
		pad(t, 2 + label + 1);
		for (int c = 0; c < NCAT; c++) {
			if (!used[c] || c == C_NVTX || (c >= C_H2D && copy))
				continue;
			copy = copy || c >= C_H2D;
			on(t, cat_sgr[c]);
			ist_buf_printf(t->o, "█");
			off(t);
			ist_buf_printf(t->o, " %s  ", legend[c]);
		}
		ist_buf_printf(t->o, "\n");
	}
}

static void
quality(struct tx *t, const json_t *an)
{
	const json_t *q = json_object_get(an, "data_quality");
	long long lost = ist_jint(q, "lost_events");

	if (lost > 0 || ist_jnum(q, "truncated_bytes") > 0) {
		ist_buf_printf(t->o, "\n");
		on(t, YELLOW);
		ist_buf_printf(t->o, "Data quality: ");
		off(t);
		if (lost > 0)
			ist_buf_printf(t->o, "%lld events lost while recording "
			    "(%.2f%%)%s", lost, 100 * ist_jnum(q, "lost_share"),
			    ist_jnum(q, "truncated_bytes") > 0 ? "; " : "");
		if (ist_jnum(q, "truncated_bytes") > 0)
			ist_buf_printf(t->o, "the trace is truncated");
		ist_buf_printf(t->o, ".\n");
	}
}

/* One column for one column: what a terminal without UTF-8 shows. */
static void
ascii(struct ist_buf *o, size_t from)
{
	static const struct { const char *u, *a; } map[] = {
		{ "µ", "u" }, { "–", "-" }, { "·", "|" }, { "→", ">" },
		{ "…", "~" }, { "▁", "." }, { "▂", "." }, { "▃", ":" },
		{ "▄", ":" }, { "▅", "=" }, { "▆", "=" }, { "▇", "#" },
		{ "█", "#" },
	};
	size_t w = from;

	for (size_t i = from; i < o->n; ) {
		unsigned char c = (unsigned char)o->p[i];
		size_t n = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 :
		    c >= 0xc0 ? 2 : 1;
		const char *a = "?";

		if (n == 1 && c < 0x80) {
			o->p[w++] = (char)c;
			i++;
			continue;
		}
		if (i + n > o->n)
			n = o->n - i;
		for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++)
			if (strlen(map[k].u) == n &&
			    memcmp(o->p + i, map[k].u, n) == 0)
				a = map[k].a;
		o->p[w++] = *a;
		i += n;
		/* continuation bytes of a bad sequence: one '?' in all */
		while (i < o->n && ((unsigned char)o->p[i] & 0xc0) == 0x80)
			i++;
	}
	o->n = w;
}

static int
width_of(const struct ist_text_opts *to)
{
	int w = to->width > 0 ? to->width : 80;

	return w < 40 ? 40 : w > 400 ? 400 : w;
}

enum ist_status
ist_report_text(const json_t *an, const struct ist_timeline *tl,
    const struct ist_text_opts *to, struct ist_buf *out,
    struct ist_error *err)
{
	struct tx t = { out, to, width_of(to) };
	size_t before = out->n;

	verdict(&t, an);
	findings(&t, an);
	timeline(&t, tl, an);
	steps(&t, an);
	tables(&t, an);
	quality(&t, an);
	if (out->n < before || (out->cap && out->p == NULL)) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	if (to->ascii)
		ascii(out, before);
	return IST_OK;
}

enum ist_status
ist_report_brief(const json_t *an, int nfindings,
    const struct ist_text_opts *to, struct ist_buf *out)
{
	const json_t *v = json_object_get(an, "verdict"), *f;
	struct tx t = { out, to, to->width > 0 ? width_of(to) : 100000 };
	size_t before = out->n, i;
	int n;

	n = verdict_head(&t, v, t.w, t.w);
	if (*ist_jstr(v, "reason")) {
		const char *r = ist_jstr(v, "reason");
		n += put(&t, ". ", t.w - n, false);
		n += put_sentence(&t, r, t.w - n);
		if (r[strlen(r) - 1] != '.')
			put(&t, ".", t.w - n, false);
	}
	ist_buf_printf(out, "\n");
	/* a program that failed or was stopped: said before what it did */
	json_array_foreach(json_object_get(json_object_get(an, "run"), "exits"),
	    i, f) {
		char how[64], line[112];
		if (ist_exit_clean(f))
			continue;
		snprintf(line, sizeof(line), "The program (pid %lld) %s.",
		    ist_jint(f, "pid"), ist_exit_clause(f, how, sizeof(how)));
		on(&t, YELLOW);
		put(&t, line, t.w, false);
		off(&t);
		ist_buf_printf(out, "\n");
	}
	json_array_foreach(json_object_get(an, "findings"), i, f) {
		const char *sev = ist_jstr(f, "severity");
		if ((int)i == nfindings)
			break;
		n = put(&t, "  ", t.w, false);
		on(&t, severity_colour(sev));
		n += put(&t, sev, 6, false);
		off(&t);
		pad(&t, 9 - n);
		put_sentence(&t, ist_jstr(f, "title"), t.w - 9);
		ist_buf_printf(out, "\n");
	}
	if (to->ascii)
		ascii(out, before);
	return out->cap && out->p == NULL ? IST_ENOMEM : IST_OK;
}
