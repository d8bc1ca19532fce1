/*
 * report.c - the Markdown report (GitHub-flavoured) and the JSON report,
 * from an analysis alone.  Numbers get units a person reads at a glance.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "report.h"
#include "report_int.h"
#include "rules/rules.h"

/* ---- Markdown text ---- */

/*
 * A control character in a name from a trace: a newline reads as a space;
 * any other (a carriage return ends a Markdown line as a newline does, and
 * would let a name write links and images into the report; a C1 control,
 * U+0080 to U+009F, is an escape to some terminals) as U+FFFD.  Returns
 * the bytes of s it took, 0 when s starts with no control character.
 */
static size_t
control(struct ist_buf *o, const char *s)
{
	size_t n = ist_control_len(s, strnlen(s, 2));

	if (n == 0)
		return 0;
	if (*s == '\n')
		ist_buf_append(o, " ", 1);
	else
		ist_buf_append(o, "\xef\xbf\xbd", 3);
	return n;
}

/* Text in a table cell or a paragraph: Markdown's punctuation escaped. */
static void
text(struct ist_buf *o, const char *s)
{
	for (size_t k; *s; s++) {
		if ((k = control(o, s)) > 0) {
			s += k - 1;
			continue;
		}
		if (strchr("\\`*_[]<>|#!&~", *s))
			ist_buf_append(o, "\\", 1);
		ist_buf_append(o, s, 1);
	}
}

static void code(struct ist_buf *o, const char *s);

/*
 * A sentence of the analysis (a title, a reason, a suggestion): text() with
 * its first letter capitalised, and what the rules wrote between backticks
 * (`python -X importtime`) as code spans, through code(), so that whatever
 * a span holds stays inside it.
 */
static void
sentence(struct ist_buf *o, const char *s)
{
	struct ist_buf b = { 0 };
	const char *q;

	if (*s >= 'a' && *s <= 'z') {
		char c = (char)(*s - 'a' + 'A');
		ist_buf_append(o, &c, 1);
		s++;
	}
	while (*s) {
		const char *p = strchr(s, '`');
		if (p == NULL || (q = strchr(p + 1, '`')) == NULL || q == p + 1) {
			text(o, s);
			break;
		}
		b.n = 0;
		ist_buf_append(&b, s, (size_t)(p - s));
		ist_buf_append(&b, "", 1);
		text(o, b.p);
		b.n = 0;
		ist_buf_append(&b, p + 1, (size_t)(q - p - 1));
		ist_buf_append(&b, "", 1);
		code(o, b.p);
		s = q + 1;
	}
	ist_buf_release(&b);
}

static void code(struct ist_buf *o, const char *s);

/* A Python function's place, file:line, as inline code */
static void
code_where(struct ist_buf *o, const json_t *x)
{
	char w[4200];

	snprintf(w, sizeof(w), "%s:%lld", ist_jstr(x, "file"),
	    (long long)ist_jint(x, "line"));
	code(o, w);
}

/* A thread as the analysis names it, "name (pid/tid)", as inline code */
static void
code_thread(struct ist_buf *o, const json_t *t)
{
	char nm[300];

	snprintf(nm, sizeof(nm), "%s (%lld/%lld)", ist_jstr(t, "name"),
	    (long long)ist_jint(t, "pid"), (long long)ist_jint(t, "tid"));
	code(o, nm);
}

/* A process, "name (pid)", as inline code */
static void
code_process(struct ist_buf *o, const json_t *p)
{
	char nm[300];

	snprintf(nm, sizeof(nm), "%s (%lld)", ist_jstr(p, "name"),
	    (long long)ist_jint(p, "pid"));
	code(o, nm);
}

/* [{call, share}] as "`call` 12.3%, ...", a null call as its own code */
static void
call_shares(struct ist_buf *o, const json_t *arr)
{
	const json_t *c;
	size_t i;

	json_array_foreach(arr, i, c) {
		ist_buf_printf(o, "%s", i ? ", " : "");
		if (json_is_string(json_object_get(c, "call")))
			code(o, ist_jstr(c, "call"));
		else
			ist_buf_printf(o, "its own code");
		ist_buf_printf(o, " %.1f%%", 100 * ist_jnum(c, "share"));
	}
}

/* A name as inline code; pipes escaped (a table cell ends at one). */
static void
code(struct ist_buf *o, const char *s)
{
	int fence = 1, run = 0;
	for (const char *p = s; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		if (run >= fence)
			fence = run + 1;
	}
	/* a fence of two or more is padded on both sides, which CommonMark
	 * strips: a name that starts or ends with a backtick stays whole */
	for (int i = 0; i < fence; i++)
		ist_buf_append(o, "`", 1);
	if (fence > 1)
		ist_buf_append(o, " ", 1);
	for (size_t k; *s; s++) {
		if (*s == '|')
			ist_buf_append(o, "\\|", 2);
		else if ((k = control(o, s)) > 0)
			s += k - 1;
		else
			ist_buf_append(o, s, 1);
	}
	if (fence > 1)
		ist_buf_append(o, " ", 1);
	for (int i = 0; i < fence; i++)
		ist_buf_append(o, "`", 1);
}

static void
command(struct ist_buf *o, const json_t *cmd)
{
	struct ist_buf b = { 0 };
	const json_t *x;
	size_t i;

	if (json_is_string(cmd)) {
		code(o, json_string_value(cmd));
		return;
	}
	json_array_foreach(cmd, i, x) {
		if (i)
			ist_buf_append(&b, " ", 1);
		if (json_is_string(x))
			ist_buf_printf(&b, "%s", json_string_value(x));
	}
	ist_buf_append(&b, "", 1);
	code(o, b.n ? b.p : "");
	ist_buf_release(&b);
}

/* Evidence values: by the key's suffix. */
static void
evidence_value(struct ist_buf *o, const char *key, const json_t *v)
{
	struct nums u = { 0 };
	size_t n = strlen(key);
#define ENDS(s) (n >= strlen(s) && strcmp(key + n - strlen(s), s) == 0)
	if (json_is_number(v)) {
		double d = json_number_value(v);
		if (ENDS("_ns") || strcmp(key, "ns") == 0)
			ist_buf_printf(o, "%s", dur(&u, d));
		else if (ENDS("_bytes_per_s"))
			ist_buf_printf(o, "%s/s", bytes(&u, d));
		else if (ENDS("_bytes") || strcmp(key, "bytes") == 0)
			ist_buf_printf(o, "%s", bytes(&u, d));
		else if (ENDS("_pct"))
			ist_buf_printf(o, "%.2f%%", d);
		else if (ENDS("gbps"))
			ist_buf_printf(o, "%.2f GB/s", d);
		else if (strcmp(key, "share") == 0 || ENDS("_util"))
			ist_buf_printf(o, "%.1f%%", 100 * d);
		else if (json_is_integer(v))
			ist_buf_printf(o, "%lld", (long long)json_integer_value(v));
		else
			ist_buf_printf(o, "%g", d);
	} else if (json_is_string(v)) {
		code(o, json_string_value(v));
	} else if (json_is_array(v)) {
		const json_t *x;
		size_t i;
		json_array_foreach(v, i, x) {
			ist_buf_printf(o, "%s", i ? "; " : "");
			if (json_is_object(x) && json_object_get(x, "what")) {
				/* an attribution: what (kind) time, share */
				if (ist_jstr(x, "what")[0] == '(')
					text(o, ist_jstr(x, "what"));
				else
					code(o, ist_jstr(x, "what"));
				ist_buf_printf(o, " (%s) %s, %.1f%%",
				    ist_jstr(x, "kind"), dur(&u, ist_jnum(x, "ns")),
				    100 * ist_jnum(x, "share"));
			} else if (json_is_object(x) &&
			    json_object_get(x, "module")) {
				/* an import: cumulative (self) time */
				code(o, ist_jstr(x, "module"));
				ist_buf_printf(o, " %s", dur(&u, ist_jnum(x,
				    "cumulative_ns")));
				ist_buf_printf(o, " (self %s)", dur(&u, ist_jnum(x,
				    "self_ns")));
			} else if (json_is_object(x) &&
			    json_object_get(x, "where")) {
				code(o, ist_jstr(x, "where"));
				ist_buf_printf(o, " %lld× %s", (long long)ist_jint(x, "count"), dur(&u, ist_jnum(x,
				    "blocked_ns")));
			} else if (json_is_object(x)) {
				const char *k;
				const json_t *y;
				bool first = true;
				json_object_foreach((json_t *)x, k, y) {
					ist_buf_printf(o, "%s%s ", first ? "" :
					    ", ", k);
					evidence_value(o, k, y);
					first = false;
				}
			} else {
				evidence_value(o, key, x);
			}
		}
	} else if (json_is_boolean(v)) {
		ist_buf_printf(o, "%s", json_is_true(v) ? "yes" : "no");
	}
#undef ENDS
}

/* Under the functions: what of them was importing, and garbage
 * collection, when the run had any. */
static void
runtime_lines(struct ist_buf *o, const json_t *an)
{
	const json_t *imp = json_object_get(an, "imports"), *gc =
	    json_object_get(an, "gc"), *m;
	struct nums u = { 0 };
	size_t i, n;

	if (ist_jnum(imp, "count") > 0) {
		ist_buf_printf(o, "Imports took %s in %lld import%s (the import "
		    "system's functions above are theirs)",
		    dur(&u, ist_jnum(imp, "ns")), (long long)ist_jint(imp, "count"),
		    ist_jint(imp, "count") == 1 ? "" : "s");
		n = 0;
		json_array_foreach(json_object_get(imp, "modules"), i, m) {
			if (n == 3)
				break;
			if (ist_jint(m, "first_hand") == 0)
				continue;
			ist_buf_printf(o, "%s", n++ ? ", " : "; slowest "
			    "(cumulative, as -X importtime): ");
			code(o, ist_jstr(m, "module"));
			ist_buf_printf(o, " %s", dur(&u, ist_jnum(m,
			    "cumulative_ns")));
		}
		ist_buf_printf(o, ".\n\n");
	}
	if (ist_jnum(gc, "collections") > 0) {
		ist_buf_printf(o, "Garbage collection: %lld collection%s, %s in "
		    "all", (long long)ist_jint(gc, "collections"),
		    ist_jint(gc, "collections") == 1 ? "" : "s",
		    dur(&u, ist_jnum(gc, "ns")));
		if (ist_jnum(gc, "in_imports") > 0)
			ist_buf_printf(o, " (%lld while importing, %s)",
			    (long long)ist_jint(gc, "in_imports"),
			    dur(&u, ist_jnum(gc, "in_imports_ns")));
		ist_buf_printf(o, ", the longest %s.\n\n",
		    dur(&u, ist_jnum(gc, "max_ns")));
	}
}

static void
findings(struct ist_buf *o, const json_t *an, double t0)
{
	const json_t *f, *fs = json_object_get(an, "findings");
	size_t i;

	ist_buf_printf(o, "## Findings\n\n");
	if (json_array_size(fs) == 0) {
		ist_buf_printf(o, "No rule fired: nothing in this run crossed a "
		    "threshold (see *Rules* below for what was checked).\n\n");
		return;
	}
	json_array_foreach(fs, i, f) {
		const json_t *ev = json_object_get(f, "evidence"), *v, *r;
		const char *k;
		size_t j;
		struct nums u = { 0 };

		ist_buf_printf(o, "### %zu. ", i + 1);
		sentence(o, ist_jstr(f, "title"));
		ist_buf_printf(o, "\n\n**%s** · `%s.%s` · confidence %.2f\n\n",
		    ist_jstr(f, "severity"), ist_jstr(f, "rule"),
		    ist_jstr(f, "kind"), ist_jnum(f, "confidence"));
		ist_buf_printf(o, "**Suggestion:** ");
		sentence(o, ist_jstr(f, "suggestion"));
		ist_buf_printf(o, ".\n\n");
		json_object_foreach((json_t *)ev, k, v) {
			/* active_ns -> active, idle_pct -> idle %, gil_cores
			 * -> gil cores */
			size_t kn = strlen(k);
			ist_buf_printf(o, "- ");
			if (kn > 3 && strcmp(k + kn - 3, "_ns") == 0)
				kn -= 3;
			else if (kn > 6 && strcmp(k + kn - 6, "_bytes") == 0)
				kn -= 6;
			for (size_t c = 0; c < kn; c++) {
				if (strcmp(k + c, "_pct") == 0) {
					ist_buf_printf(o, " %%");
					break;
				}
				ist_buf_append(o, k[c] == '_' ? " " : k + c, 1);
			}
			ist_buf_printf(o, ": ");
			evidence_value(o, k, v);
			ist_buf_printf(o, "\n");
		}
		if (json_array_size(json_object_get(f, "ranges"))) {
			ist_buf_printf(o, "- at: ");
			json_array_foreach(json_object_get(f, "ranges"), j, r)
				ist_buf_printf(o, "%s%s", j ? ", " : "",
				    span(&u, json_number_value(
				    json_array_get(r, 0)), json_number_value(
				    json_array_get(r, 1)), t0));
			ist_buf_printf(o, " (from the start of the run)\n");
		}
		ist_buf_printf(o, "\n");
	}
}

/* What the analysis covers when it is not the whole trace: the window
 * asked for (--from/--to), the capture's pauses, what was left out. */
static void
window_rows(struct ist_buf *o, const json_t *run)
{
	const json_t *w = json_object_get(run, "window");
	double t0 = ist_jnum(w, "trace_start_ns");
	struct nums u = { 0 };

	const json_t *st = json_object_get(w, "steps");

	if (json_is_true(json_object_get(w, "windowed"))) {
		ist_buf_printf(o, "| Window | ");
		if (json_is_object(st)) {
			double n = ist_jnum(st, "count");
			double f = json_is_integer(json_object_get(st,
			    "from")) ? ist_jnum(st, "from") : 1;
			double to = json_is_integer(json_object_get(st, "to")) ?
			    ist_jnum(st, "to") : n;
			if (json_is_integer(json_object_get(st, "warmup")))
				ist_buf_printf(o, "after warm-up (start-up and "
				    "the first %.0f steps left out): ",
				    ist_jnum(st, "warmup"));
			if (!json_is_integer(json_object_get(st, "from")) &&
			    !json_is_integer(json_object_get(st, "warmup")))
				ist_buf_printf(o, "up to the end of step %.0f of "
				    "%.0f (", to, n);
			else if (f == to)
				ist_buf_printf(o, "step %.0f of %.0f (", f, n);
			else
				ist_buf_printf(o, "steps %.0f to %.0f of %.0f (",
				    f, to, n);
			code(o, ist_jstr(st, "name"));
			ist_buf_printf(o, "), ");
		}
		ist_buf_printf(o, "%.3f s to %.3f s of the trace (%s) |\n",
		    (ist_jnum(run, "start_ns") - t0) / 1e9,
		    (ist_jnum(run, "end_ns") - t0) / 1e9,
		    dur(&u, ist_jnum(w, "trace_end_ns") - t0));
	}
	if (ist_jnum(w, "pauses") > 0)
		ist_buf_printf(o, "| Paused | %s in %.0f pause(s) of the "
		    "capture, not analysed |\n", dur(&u, ist_jnum(w,
		    "paused_ns")), ist_jnum(w, "pauses"));
	if (ist_jnum(w, "left_out_events") > 0)
		ist_buf_printf(o, "| Left out | %.0f events outside the "
		    "window or in a pause |\n", ist_jnum(w,
		    "left_out_events"));
}

static void
summary(struct ist_buf *o, const json_t *an)
{
	const json_t *run = json_object_get(an, "run"), *v = json_object_get(an,
	    "verdict"), *d, *p, *ex;
	struct nums u = { 0 };
	char l[48];
	size_t i;
	bool py = false;

	ist_buf_printf(o, "# InferScope report\n\n**Verdict: %s** "
	    "(confidence %.2f). ", ist_jstr(v, "classification"),
	    ist_jnum(v, "confidence"));
	sentence(o, ist_jstr(v, "reason"));
	ist_buf_printf(o, ".\n\n| Run | |\n|---|---|\n");
	if (!json_is_null(json_object_get(run, "command")) &&
	    json_object_get(run, "command")) {
		ist_buf_printf(o, "| Command | ");
		command(o, json_object_get(run, "command"));
		ist_buf_printf(o, " |\n");
	}
	ist_buf_printf(o, "| Host | ");
	text(o, *ist_jstr(run, "host") ? ist_jstr(run, "host") : "unknown");
	ist_buf_printf(o, " |\n| Duration | %s |\n",
	    dur(&u, ist_jnum(run, "wall_ns")));
	ex = json_object_get(run, "exits");
	json_array_foreach(ex, i, p) {
		ist_buf_printf(o, i ? "; " : "| Exit | ");
		if (json_array_size(ex) > 1)
			ist_buf_printf(o, "pid %lld: ", ist_jint(p, "pid"));
		ist_buf_printf(o, "%s", ist_exit_text(p, l, sizeof(l)));
	}
	if (json_array_size(ex))
		ist_buf_printf(o, " |\n");
	window_rows(o, run);
	json_array_foreach(json_object_get(run, "producers"), i, p) {
		const char *s = json_string_value(p), *c;
		if (s && (c = strstr(s, "(CPython")) != NULL && !py) {
			py = true;
			ist_buf_printf(o, "| Python | ");
			text(o, c + 1);
			if (o->n && o->p[o->n - 1] == ')')
				o->n--;
			ist_buf_printf(o, " |\n");
		}
	}
	json_array_foreach(json_object_get(an, "devices"), i, d) {
		ist_buf_printf(o, "| GPU %s | ", ist_dev_label(d, l, sizeof(l)));
		text(o, ist_jstr(d, "name"));
		ist_buf_printf(o, " (%d SMs, %s, link %.1f GB/s) |\n",
		    (int)ist_jint(d, "sm_count"), bytes(&u, ist_jnum(d,
		    "memory_bytes")), ist_jnum(d, "pcie_gbps"));
	}
	if (json_array_size(json_object_get(an, "devices")) == 0)
		ist_buf_printf(o, "| GPU | none recorded |\n");
	ist_buf_printf(o, "| Events | %lld |\n\n", (long long)ist_jint(run,
	    "events"));
}

/* What ran at once on a GPU: said when it has copies or more than one
 * stream (a single stream of kernels runs one at a time) */
static void
concurrency(struct ist_buf *o, const json_t *d)
{
	const json_t *c = json_object_get(d, "concurrency"), *x,
	    *st = json_object_get(c, "streams");
	struct nums u = { 0 };
	char l[48];
	size_t i;
	bool procs = false;

	if (!json_is_object(c) || (json_array_size(st) < 2 &&
	    ist_jnum(c, "copy_ns") == 0))
		return;
	ist_buf_printf(o, "GPU %s ran kernels for %s", ist_dev_label(d, l,
	    sizeof(l)), dur(&u, ist_jnum(c, "kernel_ns")));
	if (ist_jnum(c, "copy_ns") > 0)
		ist_buf_printf(o, " and copies for %s, %.1f%% of the copy time "
		    "under kernels", dur(&u, ist_jnum(c, "copy_ns")),
		    ist_jnum(c, "copy_under_kernels_pct"));
	ist_buf_printf(o, "; at most %d kernel%s at once",
	    (int)ist_jint(c, "max_concurrent_kernels"),
	    ist_jint(c, "max_concurrent_kernels") == 1 ? "" : "s");
	if (ist_jnum(c, "concurrent_kernels_ns") > 0)
		ist_buf_printf(o, " (two or more for %s)", dur(&u, ist_jnum(c,
		    "concurrent_kernels_ns")));
	if (json_array_size(st) < 2) {
		ist_buf_printf(o, ".\n\n");
		return;
	}
	ist_buf_printf(o, "; %zu streams, two or more busy for %s.\n\n"
	    "| Stream | Ops | Kernels | Busy | Beside another stream |\n"
	    "|---|---:|---:|---:|---:|\n", json_array_size(st), dur(&u,
	    ist_jnum(c, "multi_stream_ns")));
	json_array_foreach(st, i, x)
		procs |= ist_jint(x, "pid") != ist_jint(json_array_get(st, 0),
		    "pid") && !json_is_null(json_object_get(x, "pid"));
	json_array_foreach(st, i, x) {
		if (i >= 8)
			break;
		if (json_is_null(json_object_get(x, "stream")))
			ist_buf_printf(o, "| (others) ");
		else if (procs)    /* streams of several processes */
			ist_buf_printf(o, "| %lld (pid %lld) ", (long long)
			    ist_jint(x, "stream"), (long long)ist_jint(x,
			    "pid"));
		else
			ist_buf_printf(o, "| %lld ", (long long)ist_jint(x,
			    "stream"));
		ist_buf_printf(o, "| %lld | %lld | %s (%.1f%%) | %s |\n",
		    (long long)ist_jint(x, "ops"), (long long)ist_jint(x,
		    "kernels"), dur(&u, ist_jnum(x, "busy_ns")), ist_jnum(x,
		    "busy_pct"), dur(&u, ist_jnum(x, "overlap_ns")));
	}
	ist_buf_printf(o, "\n");
}

static void
breakdown(struct ist_buf *o, const json_t *an)
{
	const json_t *d, *x, *devs = json_object_get(an, "devices");
	struct nums u = { 0 };
	char l[48];
	size_t i, j;

	ist_buf_printf(o, "## Time breakdown\n\n");
	if (json_array_size(devs) == 0) {
		ist_buf_printf(o, "No GPU activity was recorded: the run is "
		    "judged on its CPU threads.\n\n");
		return;
	}
	ist_buf_printf(o, "| GPU | Active | Busy | Idle | Host wait | "
	    "Kernel wait | Other |\n|---|---:|---:|---:|---:|---:|---:|\n");
	json_array_foreach(devs, i, d) {
		const json_t *b = json_object_get(d, "idle_breakdown");
		ist_buf_printf(o, "| %s | %s | %s (%.1f%%) | %s (%.1f%%) | %s | "
		    "%s | %s |\n", ist_dev_label(d, l, sizeof(l)),
		    dur(&u, ist_jnum(d, "active_ns")), dur(&u, ist_jnum(d, "busy_ns")),
		    ist_jnum(d, "busy_pct"), dur(&u, ist_jnum(d, "idle_ns")),
		    ist_jnum(d, "idle_pct"), dur(&u, ist_jnum(b, "host_wait_ns")),
		    dur(&u, ist_jnum(b, "kernel_wait_ns")), dur(&u, ist_jnum(b,
		    "other_ns")));
	}
	ist_buf_printf(o, "\n");
	json_array_foreach(devs, i, d)
		concurrency(o, d);
	json_array_foreach(devs, i, d) {
		const json_t *at = json_object_get(d, "idle_attribution");
		if (!json_is_object(at) || json_array_size(json_object_get(at,
		    "top")) == 0)
			continue;
		ist_buf_printf(o, "While GPU %s was idle, thread ",
		    ist_dev_label(d, l, sizeof(l)));
		code(o, ist_jstr(at, "thread"));
		ist_buf_printf(o, " (%lld) was in:\n\n| What | Kind | Idle time "
		    "| Share |\n|---|---|---:|---:|\n", (long long)ist_jint(at,
		    "tid"));
		json_array_foreach(json_object_get(at, "top"), j, x) {
			ist_buf_printf(o, "| ");
			if (ist_jstr(x, "what")[0] == '(')
				text(o, ist_jstr(x, "what"));
			else
				code(o, ist_jstr(x, "what"));
			ist_buf_printf(o, " | %s | %s | %.1f%% |\n",
			    ist_jstr(x, "kind"), dur(&u, ist_jnum(x, "ns")),
			    100 * ist_jnum(x, "share"));
		}
		ist_buf_printf(o, "\n");
	}
}

/* The steps: what each is made of, its critical path, what a change would
 * save, the slowest. */
static const char *const cp_label[][2] = {
	{ "host", "host work" }, { "cuda_api", "CUDA calls and launch latency" },
	{ "sync", "sync return" }, { "gc", "garbage collection" },
	{ "import", "imports" }, { "wait", "sleeps and waits" },
	{ "kernel", "kernels" }, { "copy", "copies" },
};

static void
steps_section(struct ist_buf *o, const json_t *an, double t0)
{
	static const char *const rows[][2] = {
		{ "wall", "Wall" }, { "host_busy", "Host busy" },
		{ "gpu_busy", "GPU busy" }, { "gpu_idle", "GPU idle" },
		{ "copies", "Copies" }, { "sync", "Sync" },
	};
	const json_t *st = json_object_get(an, "steps"), *cp, *x;
	struct nums u = { 0 };
	size_t i;
	bool first = true, iter;

	if (json_is_null(st)) {
		/* none recurs: say how to have one (not for an analysis
		 * older than the steps, which has no key) */
		ist_buf_printf(o, "## Steps\n\nNo step found: no scope, NVTX "
		    "range or function recurs three times on one thread as "
		    "the program's unit of work. Mark it with "
		    "`inferscope.scope(\"step\")`, or name it with `--step`, "
		    "to have each step measured, its critical path and what a "
		    "change would save.\n\n");
		return;
	}
	if (!json_is_object(st))
		return;
	iter = json_is_true(json_object_get(st, "iteration"));
	ist_buf_printf(o, "## Steps\n\nThe step is %s",
	    iter ? "an iteration of the loop over " : "");
	code(o, ist_jstr(st, "name"));
	ist_buf_printf(o, " (%s", ist_jstr(st, "record"));
	if (json_is_string(json_object_get(st, "file"))) {
		/* a function: others may share its name */
		ist_buf_printf(o, " at ");
		code_where(o, st);
	}
	ist_buf_printf(o, "%s), found %lld times", iter ? "; each from one "
	    "call to the next, its body included" : "",
	    (long long)ist_jint(st, "count"));
	/* a step is one thread's: where there are others (a pool's
	 * workers, each with its share of the tasks), which one */
	x = json_object_get(an, "threads");
	if (json_array_size(x) > 1 && json_object_get(st, "tid")) {
		const json_t *t;
		json_array_foreach(x, i, t)
			if (ist_jint(t, "pid") == ist_jint(st, "pid") &&
			    ist_jint(t, "tid") == ist_jint(st, "tid")) {
				ist_buf_printf(o, " on ");
				code_thread(o, t);
				ist_buf_printf(o, " (a step is one thread's)");
				break;
			}
	}
	if (ist_jint(st, "overlapped") > 0)
		ist_buf_printf(o, ", and %lld more began while one of those "
		    "was open on its thread (concurrent requests of one event "
		    "loop, or nested): they are no steps of their own, and "
		    "what they ran inside one is that one's",
		    (long long)ist_jint(st, "overlapped"));
	if (ist_jint(st, "measured") == 0) {
		ist_buf_printf(o, "; none was measured (none lies wholly in "
		    "the analysis, or the trace could not be read a second "
		    "time).\n\n");
		return;
	}
	ist_buf_printf(o, "; %lld measured, %s each on average.",
	    (long long)ist_jint(st, "measured"), dur(&u, ist_jnum(st,
	    "mean_ns")));
	x = json_object_get(st, "coverage");
	if (json_is_number(x) && json_number_value(x) < 0.5)
		ist_buf_printf(o, " They hold only %.0f%% of the time from "
		    "the first one's start to the last one's end: the step "
		    "found is a part of what the program repeats (the body of "
		    "a loop that no function wraps?). Mark the whole with "
		    "`inferscope.scope(\"step\")`, or name it with `--step`, "
		    "to measure it.", 100 * json_number_value(x));
	ist_buf_printf(o, "\n\n| Per step | p50 | p95 | Max |\n"
	    "|---|---:|---:|---:|\n");
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		x = json_object_get(st, rows[i][0]);
		/* copies and syncs are the GPU's */
		if (!json_is_object(x) || (i >= 4 && !json_is_object(
		    json_object_get(st, "gpu_busy"))))
			continue;
		ist_buf_printf(o, "| %s | %s | %s | %s |\n", rows[i][1],
		    dur(&u, ist_jnum(x, "p50_ns")), dur(&u, ist_jnum(x,
		    "p95_ns")), dur(&u, ist_jnum(x, "max_ns")));
	}
	cp = json_object_get(st, "critical_path");
	ist_buf_printf(o, "\nCritical path of a step: %s (the replay is within "
	    "%.1f%% of the recorded steps):", dur(&u, ist_jnum(cp,
	    "length_ns")), ist_jnum(cp, "replay_error_pct"));
	for (i = 0; i < sizeof(cp_label) / sizeof(cp_label[0]); i++) {
		double sh = ist_jnum(json_object_get(cp, "share"),
		    cp_label[i][0]);
		if (sh <= 0)
			continue;
		ist_buf_printf(o, "%s %s %.1f%%", first ? "" : ",",
		    cp_label[i][1], 100 * sh);
		first = false;
	}
	ist_buf_printf(o, ".");
	x = json_object_get(cp, "host_by");
	if (json_array_size(x)) {
		const json_t *c0 = json_array_get(x, 0);
		ist_buf_printf(o, " Host work on the path, by the step's call "
		    "it ran in: ");
		call_shares(o, x);
		ist_buf_printf(o, ".");
		/* the largest is the step's own code: what no call records */
		if (json_is_null(json_object_get(c0, "call")) &&
		    ist_jnum(c0, "share") >= 0.5)
			ist_buf_printf(o, " Its own code is its bytecode and what "
			    "runs without a call a profiler records: operators "
			    "(an array's or a tensor's `@` and `+`) and objects "
			    "called that are not functions (numpy's ufuncs: "
			    "`np.matmul`, `np.exp`), which cProfile does not see "
			    "either.");
	}
	x = json_object_get(cp, "waited_on");
	if (json_is_object(x) && json_array_size(json_object_get(x, "by"))) {
		double n = ist_waited_working(x), c = ist_jnum(x, "cores"),
		    q = ist_jnum(x, "queued"), g = ist_waited_gil(x);
		bool hc = json_is_number(json_object_get(x, "cores")),
		    hq = json_is_number(json_object_get(x, "queued"));
		ist_buf_printf(o, " While it waited, other threads (its "
		    "process's and others') worked (%.2f of them on average",
		    n);
		if (hc)
			ist_buf_printf(o, ", running on %.2f cores", c);
		if (hc && hq && q >= 0.01)
			ist_buf_printf(o, " and waiting %.2f for one", q);
		ist_buf_printf(o, "), in: ");
		call_shares(o, json_object_get(x, "by"));
		ist_buf_printf(o, ".");
		/* in Python code, yet neither on a core nor queued for one
		 * (g is -1 without the samples) */
		if (g >= 0.25 && g >= 0.2 * n)
			ist_buf_printf(o, " %.2f of those threads neither ran "
			    "nor waited for a core, in Python code: threads "
			    "waiting for the GIL.", g);
	}
	ist_buf_printf(o, "\n\n");
	x = json_object_get(st, "what_if");
	if (json_array_size(x)) {
		const json_t *e;
		ist_buf_printf(o, "What a change would save, from a replay of "
		    "every step with that change:\n\n| Change | Saves per step "
		    "| Share | Basis |\n|---|---:|---:|---|\n");
		json_array_foreach(x, i, e) {
			ist_buf_printf(o, "| ");
			text(o, ist_jstr(e, "change"));
			ist_buf_printf(o, " | %s | %.1f%% | ", dur(&u, ist_jnum(e,
			    "saves_ns")), ist_jnum(e, "saves_pct"));
			text(o, ist_jstr(e, "basis"));
			ist_buf_printf(o, " |\n");
		}
		ist_buf_printf(o, "\n");
	}
	x = json_object_get(st, "slowest");
	/* only steps something made slower than the median */
	if (json_is_string(json_object_get(json_array_get(x, 0), "cause"))) {
		const json_t *e;
		ist_buf_printf(o, "Slowest steps, and what made them slower "
		    "than the median step:\n\n| Step | At | Wall | Cause | "
		    "Beyond its median | Detail |\n|---:|---:|---:|---|---:|---|\n");
		json_array_foreach(x, i, e) {
			if (!json_is_string(json_object_get(e, "cause")))
				continue;
			ist_buf_printf(o, "| %lld | %s | %s | %s | %s | ",
			    (long long)ist_jint(e, "step"), dur(&u, ist_jnum(e,
			    "start_ns") - t0), dur(&u, ist_jnum(e, "wall_ns")),
			    *ist_jstr(e, "cause") ? ist_jstr(e, "cause") : "—",
			    dur(&u, ist_jnum(e, "excess_ns")));
			if (*ist_jstr(e, "detail"))
				code(o, ist_jstr(e, "detail"));
			ist_buf_printf(o, " |\n");
		}
		ist_buf_printf(o, "\n");
	}
}

/* Scopes and NVTX ranges: count, total and percentiles, GPU time. */
static void
scopes_table(struct ist_buf *o, const json_t *an)
{
	const json_t *x, *arr;
	struct nums u = { 0 };
	size_t i;

	arr = json_object_get(an, "scopes");
	ist_buf_printf(o, "## Scopes and NVTX ranges\n\n");
	if (json_array_size(arr) == 0)
		ist_buf_printf(o, "None recorded: mark the steps of your "
		    "program with `inferscope.scope(\"name\")` or NVTX "
		    "ranges.\n\n");
	else
		ist_buf_printf(o, "| Name | Kind | Count | Total | Mean | p50 "
		    "| p95 | Max | GPU time |\n|---|---|---:|---:|---:|---:|"
		    "---:|---:|---:|\n");
	json_array_foreach(arr, i, x) {
		ist_buf_printf(o, "| ");
		code(o, ist_jstr(x, "name"));
		ist_buf_printf(o, " | %s | %lld | %s | %s | %s | %s | %s | %s |\n",
		    ist_jstr(x, "kind"), (long long)ist_jint(x, "count"),
		    dur(&u, ist_jnum(x, "total_ns")), dur(&u, ist_jnum(x, "mean_ns")),
		    dur(&u, ist_jnum(x, "p50_ns")), dur(&u, ist_jnum(x, "p95_ns")),
		    dur(&u, ist_jnum(x, "max_ns")), dur(&u, ist_jnum(x, "gpu_ns")));
	}
	if (json_array_size(arr))
		ist_buf_printf(o, "\n");
}

/* Python functions by self time, and the runtime lines under them. */
static void
functions_table(struct ist_buf *o, const json_t *an)
{
	const json_t *x, *arr;
	struct nums u = { 0 };
	size_t i, n;

	arr = json_object_get(an, "functions");
	n = (size_t)ist_jint(an, "functions_distinct");
	ist_buf_printf(o, "## Python functions\n\n");
	if (json_array_size(arr) == 0) {
		ist_buf_printf(o, "None recorded.\n\n");
	} else {
		bool cpu = json_object_get(json_array_get(arr, 0), "cpu_ns");
		ist_buf_printf(o, "By self time; %zu of %zu shown.%s\n\n| "
		    "Function | Calls | Self |%s Inclusive | Where |\n|---|---:|"
		    "---:|%s---:|---|\n", json_array_size(arr), n, cpu ?
		    " Self CPU is the CPU time its thread used while it was "
		    "the innermost call (from the samples of /proc); self time "
		    "beyond it was spent waiting: for the GIL, a lock, I/O or "
		    "a core." : "", cpu ? " Self CPU |" : "", cpu ? "---:|" :
		    "");
		json_array_foreach(arr, i, x) {
			ist_buf_printf(o, "| ");
			code(o, ist_jstr(x, "name"));
			ist_buf_printf(o, " | %lld | %s |",
			    (long long)ist_jint(x, "count"), dur(&u, ist_jnum(x,
			    "self_ns")));
			if (cpu)
				ist_buf_printf(o, " %s |", dur(&u, ist_jnum(x,
				    "cpu_ns")));
			ist_buf_printf(o, " %s | ", dur(&u, ist_jnum(x,
			    "incl_ns")));
			if (*ist_jstr(x, "file")) {
				code_where(o, x);
			} else {
				ist_buf_printf(o, "(C)");
			}
			ist_buf_printf(o, " |\n");
		}
		ist_buf_printf(o, "\n");
	}
	runtime_lines(o, an);
}

/* Kernels by total time. */
static void
kernels_table(struct ist_buf *o, const json_t *an)
{
	const json_t *x, *arr;
	struct nums u = { 0 };
	size_t i;
	bool from = false;

	arr = json_object_get(an, "kernels");
	json_array_foreach(arr, i, x)
		from |= json_is_object(json_object_get(x, "launched_from"));
	if (json_array_size(arr)) {
		ist_buf_printf(o, "## Kernels\n\nBy total time; %zu of %lld "
		    "shown.%s\n\n| Kernel | Calls | Total | Mean | Max |%s\n"
		    "|---|---:|---:|---:|---:|%s\n", json_array_size(arr),
		    (long long)ist_jint(an, "kernels_distinct"), from ? " Launched "
		    "from: the Python function whose launches ran the most of "
		    "the kernel's GPU time, and its share." : "", from ?
		    " Launched from |" : "", from ? "---|" : "");
		json_array_foreach(arr, i, x) {
			const json_t *f = json_object_get(x, "launched_from");
			ist_buf_printf(o, "| ");
			code(o, ist_jstr(x, "name"));
			ist_buf_printf(o, " | %lld | %s | %s | %s |",
			    (long long)ist_jint(x, "count"), dur(&u, ist_jnum(x,
			    "total_ns")), dur(&u, ist_jnum(x, "mean_ns")),
			    dur(&u, ist_jnum(x, "max_ns")));
			if (from && json_is_object(f)) {
				char where[64];
				ist_buf_printf(o, " ");
				code(o, ist_jstr(f, "function"));
				ist_buf_printf(o, " (");
				text(o, ist_jstr(f, "file"));
				snprintf(where, sizeof(where), ":%lld) %.1f%% |",
				    (long long)ist_jint(f, "line"), 100 *
				    ist_jnum(f, "share"));
				ist_buf_printf(o, "%s", where);
			} else if (from) {
				ist_buf_printf(o, " |");
			}
			ist_buf_printf(o, "\n");
		}
		ist_buf_printf(o, "\n");
	}
}

/* Copies by direction: bytes, bandwidth, pageable, synchronous. */
static void
copies_table(struct ist_buf *o, const json_t *an)
{
	const json_t *x, *arr;
	struct nums u = { 0 };
	size_t i;

	arr = json_object_get(an, "copies");
	if (json_array_size(arr)) {
		ist_buf_printf(o, "## Copies\n\n| Direction | Count | Bytes | "
		    "Time | Bandwidth | Pageable | Synchronous calls |\n|---|"
		    "---:|---:|---:|---:|---:|---:|\n");
		json_array_foreach(arr, i, x)
			ist_buf_printf(o, "| %s | %lld | %s | %s | %.2f GB/s | "
			    "%lld (%s) | %lld |\n", ist_jstr(x, "direction"),
			    (long long)ist_jint(x, "count"), bytes(&u, ist_jnum(x,
			    "bytes")), dur(&u, ist_jnum(x, "ns")), ist_jnum(x,
			    "gbps"), (long long)ist_jint(x, "pageable_count"),
			    bytes(&u, ist_jnum(x,
			    "pageable_bytes")), (long long)ist_jint(x,
			    "sync_calls"));
		ist_buf_printf(o, "\n");
	}
}

/* Synchronisation by kind, with its top call site. */
static void
syncs_table(struct ist_buf *o, const json_t *an)
{
	const json_t *x, *arr;
	struct nums u = { 0 };
	size_t i;

	arr = json_object_get(an, "syncs");
	if (json_array_size(arr)) {
		ist_buf_printf(o, "## Synchronisation\n\n| Kind | Count | "
		    "Blocked | Top call site |\n|---|---:|---:|---|\n");
		json_array_foreach(arr, i, x) {
			const json_t *s = json_array_get(json_object_get(x,
			    "sites"), 0);
			ist_buf_printf(o, "| %s | %lld | %s | ", ist_jstr(x,
			    "kind"), (long long)ist_jint(x, "count"),
			    dur(&u, ist_jnum(x, "blocked_ns")));
			if (s)
				code(o, ist_jstr(s, "where"));
			ist_buf_printf(o, " |\n");
		}
		ist_buf_printf(o, "\n");
	}
}

/* A table's rows at most: a program that runs a command per item (hundreds
 * of processes) keeps its report readable */
#define ROWS_MAX 25

static int
by_key_desc(const void *a, const void *b)
{
	const double *x = a, *y = b;

	/* [value, index]: the larger first, then in the array's order */
	return x[0] != y[0] ? (x[0] < y[0] ? 1 : -1) : (x[1] > y[1]) -
	    (x[1] < y[1]);
}

/*
 * Which of arr's rows a table shows: all when there are ROWS_MAX or fewer
 * (among those with key present, when need), else the ROWS_MAX with the
 * most of key, in the array's order.  A mask (NULL: all, or no memory).
 */
static bool *
top_rows(const json_t *arr, const char *key, bool need)
{
	size_t n = json_array_size(arr), m = 0, i;
	double (*v)[2];
	bool *show;
	const json_t *x;

	json_array_foreach(arr, i, x)
		m += !need || json_object_get(x, key) != NULL;
	if (m <= ROWS_MAX || (v = calloc(n, sizeof(*v))) == NULL)
		return NULL;
	if ((show = calloc(n, sizeof(*show))) == NULL) {
		free(v);
		return NULL;
	}
	json_array_foreach(arr, i, x) {
		v[i][0] = need && json_object_get(x, key) == NULL ? -1 :
		    ist_jnum(x, key);
		v[i][1] = (double)i;
	}
	qsort(v, n, sizeof(*v), by_key_desc);
	for (i = 0; i < ROWS_MAX; i++)
		show[(size_t)v[i][1]] = true;
	free(v);
	return show;
}

/* Threads: CPU, utilisation, run-queue wait, switches, launches. */
static void
threads_table(struct ist_buf *o, const json_t *an)
{
	const json_t *x, *arr;
	struct nums u = { 0 };
	size_t i;

	arr = json_object_get(an, "threads");
	if (json_array_size(arr)) {
		bool *show = top_rows(arr, "cpu_ns", false);
		size_t more = 0;
		double more_cpu = 0;
		ist_buf_printf(o, "## Threads\n\n| Thread | CPU | Utilisation | "
		    "Run-queue wait | Involuntary switches | CUDA launches |\n"
		    "|---|---:|---:|---:|---:|---:|\n");
		json_array_foreach(arr, i, x) {
			if (show && !show[i]) {
				more++;
				more_cpu += ist_jnum(x, "cpu_ns");
				continue;
			}
			ist_buf_printf(o, "| ");
			code_thread(o, x);
			if (ist_jnum(x, "window_ns") > 0)
				ist_buf_printf(o, " | %s | %.1f%% | %s (%.1f%%) | "
				    "%lld | %lld |\n", dur(&u, ist_jnum(x, "cpu_ns")),
				    100 * ist_jnum(x, "cpu_util"), dur(&u, ist_jnum(x,
				    "wait_ns")), 100 * ist_jnum(x, "wait_share"),
				    (long long)ist_jint(x, "ctx_involuntary"),
				    (long long)ist_jint(x, "launches"));
			else
				ist_buf_printf(o, " | – | – | – | – | %lld |\n",
				    (long long)ist_jint(x, "launches"));
		}
		ist_buf_printf(o, "\n");
		if (more)
			ist_buf_printf(o, "The %d threads of most CPU are shown; "
			    "%zu more used %s of CPU in all (`is-report -f "
			    "json` lists every one).\n\n", ROWS_MAX, more,
			    dur(&u, more_cpu));
		free(show);
	}
	/* a launcher's helpers (a pyenv shim's bash), and copies of it seen
	 * before their exec, folded into it */
	json_array_foreach(json_object_get(an, "processes"), i, x) {
		const json_t *h = json_object_get(x, "helpers"), *nm;
		size_t k;
		if (h == NULL)
			continue;
		ist_buf_printf(o, "Folded into ");
		code_process(o, x);
		ist_buf_printf(o, ": %lld helper process%s (",
		    (long long)ist_jint(h, "processes"),
		    ist_jint(h, "processes") == 1 ? "" : "es");
		json_array_foreach(json_object_get(h, "names"), k, nm) {
			if (k)
				ist_buf_printf(o, ", ");
			code(o, json_string_value(nm));
		}
		ist_buf_printf(o, ") that started it, that it started before "
		    "its first recorded call, or that were copies of it seen "
		    "only before their exec, %s of CPU.\n\n", dur(&u,
		    ist_jnum(h, "cpu_ns")));
	}
	/* children no sample saw (a command run per item, shorter than
	 * the sampler's tick): the kernel counts them as they end */
	json_array_foreach(json_object_get(an, "processes"), i, x) {
		if (ist_jnum(x, "children_unseen_cpu_ns") < 1e6)
			continue;
		ist_buf_printf(o, "The child processes of ");
		code_process(o, x);
		ist_buf_printf(o, " used %s of CPU that no sample of theirs "
		    "shows (the kernel's count of the children it waited for, "
		    "in 10 ms ticks: children shorter than a sample's "
		    "interval, and the last moments of others).\n\n", dur(&u,
		    ist_jnum(x, "children_unseen_cpu_ns")));
	}
}

/* What the RSS figures leave out: InferScope's own buffers, the most in
 * any one process (its collectors' activity buffers, rings and writers:
 * 73 MiB in a CUDA program whose own was 4) */
static void
rec_note(struct ist_buf *o, const json_t *arr)
{
	const json_t *x, *top = NULL;
	struct nums u = { 0 };
	size_t i;

	json_array_foreach(arr, i, x)
		if (ist_jnum(x, "recorder_peak_bytes") > 0 && (top == NULL ||
		    ist_jnum(x, "recorder_peak_bytes") >
		    ist_jnum(top, "recorder_peak_bytes")))
			top = x;
	if (top == NULL)
		return;
	ist_buf_printf(o, "The figures are the program's: InferScope's own "
	    "buffers are left out (at most %s, in ", bytes(&u, ist_jnum(top,
	    "recorder_peak_bytes")));
	code_process(o, top);
	ist_buf_printf(o, ").\n\n");
}

/* Memory: RSS per sampled process, GPU memory peaks. */
static void
memory_table(struct ist_buf *o, const json_t *an)
{
	const json_t *x, *arr;
	struct nums u = { 0 };
	char l[48];
	size_t i, n;

	ist_buf_printf(o, "## Memory\n\n");
	arr = json_object_get(an, "processes");
	n = 0;
	json_array_foreach(arr, i, x)
		n += json_object_get(x, "rss_peak_bytes") != NULL;
	if (n) {
		bool *show = top_rows(arr, "rss_peak_bytes", true);
		size_t more = 0;
		double more_peak = 0;
		ist_buf_printf(o, "| Process | RSS first | RSS peak | RSS last | "
		    "Major faults |\n|---|---:|---:|---:|---:|\n");
		json_array_foreach(arr, i, x) {
			if (json_object_get(x, "rss_peak_bytes") == NULL)
				continue;
			if (show && !show[i]) {
				more++;
				if (ist_jnum(x, "rss_peak_bytes") > more_peak)
					more_peak = ist_jnum(x,
					    "rss_peak_bytes");
				continue;
			}
			ist_buf_printf(o, "| ");
			code_process(o, x);
			ist_buf_printf(o, " | %s | %s | %s | %lld |\n",
			    bytes(&u, ist_jnum(x, "rss_first_bytes")), bytes(&u, ist_jnum(x,
			    "rss_peak_bytes")), bytes(&u, ist_jnum(x,
			    "rss_last_bytes")), (long long)ist_jint(x,
			    "major_faults"));
		}
		ist_buf_printf(o, "\n");
		if (more)
			ist_buf_printf(o, "The %d processes of highest RSS peak "
			    "are shown; %zu more peaked at %s or less.\n\n",
			    ROWS_MAX, more, bytes(&u, more_peak));
		free(show);
		rec_note(o, arr);
	}
	json_array_foreach(json_object_get(an, "devices"), i, x)
		if (ist_jnum(x, "memory_peak_bytes") > 0) {
			n++;
			ist_buf_printf(o, "GPU %s memory peak: %s of %s.\n\n",
			    ist_dev_label(x, l, sizeof(l)), bytes(&u, ist_jnum(x,
			    "memory_peak_bytes")), bytes(&u, ist_jnum(x,
			    "memory_bytes")));
		}
	if (n == 0)
		ist_buf_printf(o, "No memory samples.\n\n");
}

/* The tables, one section each. */
static void
tables(struct ist_buf *o, const json_t *an)
{
	scopes_table(o, an);
	functions_table(o, an);
	kernels_table(o, an);
	copies_table(o, an);
	syncs_table(o, an);
	threads_table(o, an);
	memory_table(o, an);
}

static void
quality(struct ist_buf *o, const json_t *an)
{
	const json_t *q = json_object_get(an, "data_quality"), *x;
	struct nums u = { 0 };
	size_t i;

	ist_buf_printf(o, "## Data quality\n\n"
	    "- events: %lld; lost while recording: %lld (%.2f%%)\n"
	    "- truncated: %s\n"
	    "- merged by is-merge: %s; clock uncertainty: %s%s\n"
	    "- InferScope's own collector threads used %s of CPU\n"
	    "- every confidence above is multiplied by %.2f\n",
	    (long long)ist_jint(q, "events"), (long long)ist_jint(q,
	    "lost_events"), 100 * ist_jnum(q, "lost_share"),
	    ist_jnum(q, "truncated_bytes") > 0 ? "yes" : "no",
	    json_is_true(json_object_get(q, "merged")) ? "yes" : "no",
	    dur(&u, ist_jnum(q, "clock_uncertainty_ns")),
	    ist_jnum(q, "unaligned_sources") > 0 ?
	    " (some sources could not be aligned exactly)" : "",
	    dur(&u, ist_jnum(q, "profiler_cpu_ns")),
	    ist_jnum(q, "confidence_factor"));
	json_array_foreach(json_object_get(q, "notes"), i, x) {
		ist_buf_printf(o, "- ");
		text(o, json_string_value(x));
		ist_buf_printf(o, "\n");
	}
	ist_buf_printf(o, "\n");
}

static void
rules(struct ist_buf *o, const json_t *an)
{
	const json_t *x;
	size_t i;

	ist_buf_printf(o, "## Rules\n\n| Rule | Result |\n|---|---|\n");
	json_array_foreach(json_object_get(an, "rules"), i, x) {
		const char *sk = ist_jstr(x, "skipped");
		ist_buf_printf(o, "| `%s` | ", ist_jstr(x, "rule"));
		if (*sk) {
			ist_buf_printf(o, "not applied: ");
			text(o, sk);
		} else if (ist_jnum(x, "findings") > 0) {
			ist_buf_printf(o, "**%lld finding%s**", (long long)ist_jint(x, "findings"), ist_jnum(x, "findings") >
			    1 ? "s" : "");
		} else {
			ist_buf_printf(o, "passed");
		}
		ist_buf_printf(o, " |\n");
	}
	ist_buf_printf(o, "\n");
}

static void
baseline(struct ist_buf *o, const json_t *an)
{
	const json_t *b = json_object_get(an, "baseline"), *x;
	struct nums u = { 0 };
	size_t i;

	if (b == NULL)
		return;
	ist_buf_printf(o, "## Compared with the baseline\n\nBaseline verdict: "
	    "%s. Largest changes first: the run's wall time, the steps' "
	    "medians, and the mean per call of scopes, functions and "
	    "kernels.\n\n| What | Name | Calls | Baseline | Now | Change |\n"
	    "|---|---|---:|---:|---:|---:|\n", ist_jstr(json_object_get(b,
	    "verdict"), "classification"));
	json_array_foreach(json_object_get(b, "deltas"), i, x) {
		const char *w = ist_jstr(x, "what");
		if (i >= 30)
			break;
		ist_buf_printf(o, "| %s%s | ", w, strcmp(w, "step") == 0 ?
		    " median" : "");
		if (*ist_jstr(x, "name"))
			code(o, ist_jstr(x, "name"));
		ist_buf_printf(o, " | ");
		if (json_is_integer(json_object_get(x, "count_now")))
			ist_buf_printf(o, "%lld → %lld", (long long)ist_jint(x,
			    "count_base"), (long long)ist_jint(x, "count_now"));
		ist_buf_printf(o, " | %s | %s | %+.1f%% |\n", dur(&u, ist_jnum(x,
		    "base")), dur(&u, ist_jnum(x, "now")), ist_jnum(x, "delta_pct"));
	}
	ist_buf_printf(o, "\n");
}

enum ist_status
ist_report_markdown(const json_t *an, struct ist_buf *out,
    struct ist_error *err)
{
	double t0 = ist_jnum(json_object_get(an, "run"), "start_ns");
	size_t before = out->n;

	summary(out, an);
	findings(out, an, t0);
	breakdown(out, an);
	steps_section(out, an, t0);
	tables(out, an);
	baseline(out, an);
	quality(out, an);
	rules(out, an);
	ist_buf_printf(out, "---\n*%s, analysis version %d, from a trace "
	    "made by %s.*\n", "is-report " IST_PACKAGE_VERSION,
	    (int)ist_jint(an, "analysis_version"), ist_jstr(an, "producer"));
	if (out->n < before || (out->cap && out->p == NULL)) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	return IST_OK;
}

enum ist_status
ist_report_json(const json_t *an, struct ist_buf *out, struct ist_error *err)
{
	json_t *r = json_pack("{s:i,s:s,s:O}", "report_version",
	    IST_REPORT_VERSION, "producer", "is-report " IST_PACKAGE_VERSION,
	    "analysis", an);
	char *s = r ? json_dumps(r, JSON_INDENT(2) | JSON_REAL_PRECISION(12))
	    : NULL;

	json_decref(r);
	if (s == NULL || ist_buf_printf(out, "%s\n", s)) {
		free(s);
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	free(s);
	return IST_OK;
}
