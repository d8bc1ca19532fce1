/* is-analyze - bottleneck rules with evidence, a verdict, a CI gate. */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis_io.h"
#include "baseline.h"
#include "rules.h"
#include "output.h"
#include "steps.h"
#include "common.h"
#include "config.h"
#include "internal.h"
#include "ist.h"

#define EXIT_GATE 3

static const char usage[] =
    "usage: is-analyze [-q] [--json] [--summary] [--from s] [--to s] "
    "[--skip-warmup] [--step name] [--baseline file] [--fail-on spec] "
    "[--rules-file file] [--one-thread] [-o file] [file]\n";

static void
help(void)
{
	printf("%s", usage);
	printf("\n"
	    "Analyse a merged InferScope trace: GPU busy and idle time (with\n"
	    "the host activity behind each idle gap), scopes, NVTX ranges,\n"
	    "Python functions, kernels, copies, syncs, threads and memory;\n"
	    "then the rules gpu_idle, transfer, sync, launch_bound,\n"
	    "cpu_contention, memory_pressure, gpu_bound, gc_pause, startup\n"
	    "and step_wait, and a verdict.\n"
	    "Writes the trace back with an analysis record appended.  With\n"
	    "no file, or when file is -, read standard input.\n"
	    "\n"
	    "  -b, --baseline=FILE    compare with another trace or analysis\n"
	    "  -f, --fail-on=SPEC     exit 3 when SPEC holds, e.g.\n"
	    "                         'regression>5%%', 'step>5%%' or\n"
	    "                         'severity>=high'\n"
	    "      --from=S           analyse from S seconds after the trace's\n"
	    "                         start (ranges across it are cut there),\n"
	    "                         or from the start of step N (step:N;\n"
	    "                         step:N-M: to the end of step M)\n"
	    "  -h, --help             print this help and exit\n"
	    "  -j, --json             print the analysis as JSON instead\n"
	    "      --one-thread       one thread: no reading ahead, and the\n"
	    "                         steps measured by reading the trace\n"
	    "                         again after the first reading\n"
	    "  -o, --output=FILE      write to FILE instead of standard output\n"
	    "  -q, --quiet            no progress line on a terminal\n"
	    "  -r, --rules-file=FILE  rule thresholds (YAML)\n"
	    "  -s, --summary          keep only headers, processes, threads,\n"
	    "                         devices, loss and the analysis\n"
	    "      --skip-warmup      analyse from the first step whose time\n"
	    "                         has settled: imports, loading and the\n"
	    "                         slow first steps left out\n"
	    "      --step=NAME        the scope, NVTX range or function that is\n"
	    "                         a step (found when not given; also the\n"
	    "                         step setting, INFERSCOPE_STEP)\n"
	    "      --to=S             analyse up to S seconds after the start,\n"
	    "                         or to the end of step M (step:M)\n"
	    "  -V, --version          print the version and exit\n"
	    "\n"
	    "Thresholds also come from the rules: section of\n"
	    ".inferscope.yaml, and its rules_file setting.\n"
	    "Exit status: 0 on success, 1 on a bad or truncated input, 2 on a\n"
	    "usage error, 3 when a --fail-on condition holds.\n");
}

/* Says so when the analysis of a trace left records out because they were
 * not in time order (the trace was not merged). */
static void
warn_unordered(const json_t *an, const char *what, const char *path)
{
	json_int_t n = json_integer_value(json_object_get(json_object_get(an,
	    "data_quality"), "out_of_order"));

	if (n > 0)
		warnx("warning: %s'%s' is not in time order (%lld records "
		    "left out): run is-merge first", what, path, (long long)n);
}

struct args {
	const char *outpath, *baseline, *failon, *rules_file, *path;
	bool json, summary, skip_warmup, quiet, one_thread;
	int64_t window[2];       /* --from, --to in ns; -1: none */
	long step[2];            /* --from step:N, --to step:M; 0: none */
	const char *step_name;   /* --step */
};

/* --from/--to: S seconds, or step:N (1 the first); --from step:N-M is
 * --from step:N --to step:M */
static void
edge(const char *opt, const char *v, int64_t *ns, long *step, long *to)
{
	char *end;

	if (strncmp(v, "step:", 5) != 0) {
		*ns = tool_seconds(opt, v);
		return;
	}
	errno = 0;
	*step = strtol(v + 5, &end, 10);
	if (to && *end == '-' && end > v + 5) {
		const char *m = end + 1;
		*to = strtol(m, &end, 10);
		if (*m == '\0' || *to < 1)
			end = (char *)m;    /* not a number: refused below */
	}
	if (v[5] == '\0' || *end != '\0' || errno || *step < 1) {
		warnx("%s: '%s' is not step:N%s with N a step number from 1",
		    opt, v, to ? " or step:N-M" : "");
		exit(2);
	}
}

static void
parse_args(int argc, char **argv, struct args *o)
{
	static const struct option opts[] = {
		{ "baseline", required_argument, NULL, 'b' },
		{ "fail-on", required_argument, NULL, 'f' },
		{ "from", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "one-thread", no_argument, NULL, '1' },
		{ "output", required_argument, NULL, 'o' },
		{ "rules-file", required_argument, NULL, 'r' },
		{ "skip-warmup", no_argument, NULL, 'W' },
		{ "step", required_argument, NULL, 'S' },
		{ "summary", no_argument, NULL, 's' },
		{ "to", required_argument, NULL, 'T' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	*o = (struct args){ .path = "-", .window = { -1, -1 } };
	while ((c = getopt_long(argc, argv, "b:f:hjo:qr:sV", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			o->baseline = optarg;
			break;
		case 'f':
			o->failon = optarg;
			break;
		case 'F':
			edge("--from", optarg, &o->window[0], &o->step[0],
			    &o->step[1]);
			break;
		case 'T':
			edge("--to", optarg, &o->window[1], &o->step[1], NULL);
			break;
		case 'W':
			o->skip_warmup = true;
			break;
		case 'S':
			o->step_name = optarg;
			break;
		case 'h':
			help();
			exit(0);
		case 'j':
			o->json = true;
			break;
		case '1':
			o->one_thread = true;
			break;
		case 'o':
			o->outpath = optarg;
			break;
		case 'r':
			o->rules_file = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 's':
			o->summary = true;
			break;
		case 'V':
			tool_version();
			exit(0);
		default:
			fprintf(stderr, "%s", usage);
			exit(2);
		}
	}
	if ((o->step[0] || o->step[1] || o->skip_warmup) &&
	    (o->window[0] >= 0 || o->window[1] >= 0)) {
		warnx("a window by step (step:N, --skip-warmup) and one in "
		    "seconds cannot be combined");
		exit(2);
	}
	if (o->skip_warmup && o->step[0]) {
		warnx("--skip-warmup and --from step:N cannot be combined");
		exit(2);
	}
	if ((o->window[1] >= 0 && o->window[1] <= o->window[0]) ||
	    (o->step[1] && o->step[1] < o->step[0])) {
		warnx("--to must come after --from");
		exit(2);
	}
	if (argc - optind > 1) {
		warnx("one input at a time (merge several with is-merge)");
		fprintf(stderr, "%s", usage);
		exit(2);
	}
	if (optind < argc)
		o->path = argv[optind];
}

/* The analysis as JSON text (--json), or appended to the trace in w. */
static void
put_analysis(const struct args *o, json_t *an, struct ist_writer *w,
    struct ist_output *out)
{
	struct ist_error e = { 0 };

	if (o->json) {
		char *text = ist_analysis_dumps(an);
		size_t n = text ? strlen(text) : 0;
		if (text == NULL)
			errx(1, "out of memory");
		if (write(out->fd, text, n) != (ssize_t)n ||
		    write(out->fd, "\n", 1) != 1) {
			ist_output_abort(out);
			err(1, "cannot write '%s'", o->outpath ? o->outpath :
			    "<stdout>");
		}
		free(text);
		return;
	}
	if (ist_write_analysis(w, an, &e) != IST_OK ||
	    ist_writer_close(w, &e) != IST_OK)
		errx(1, "%s", ist_output_fail(out, &e));
}

/* A window by step: the steps found in the file, and the span of those
 * asked for (--from step:N, --to step:M, --skip-warmup). */
static void
step_window(const struct args *o, struct ist_window *w)
{
	const struct ist_step *st;
	struct ist_steps *s;
	struct ist_error e = { 0 };
	const char *name;
	enum ist_type type;
	size_t n, warm = 0;
	long from = o->step[0], to = o->step[1];

	if (strcmp(o->path, "-") == 0)
		errx(2, "a window by step reads the trace twice: give a file, "
		    "not standard input");
	if (ist_steps_scan(o->path, o->step_name, &s, &e) != IST_OK)
		errx(1, "%s", e.msg);
	st = ist_steps_get(s, &n, &name, &type);
	if (n == 0)
		errx(1, "'%s': %s", o->path, o->step_name ? "no step of that "
		    "name (a scope, NVTX range or Python function)" :
		    "no step found: no scope, NVTX range or Python function "
		    "recurs 3 times or more (name one with --step)");
	if ((size_t)from > n || (size_t)to > n) {
		char b[200];
		snprintf(b, sizeof(b), "%s", name);
		ist_terminal_safe(b);
		errx(1, "'%s' has %zu steps (%s): step:%ld is past them",
		    o->path, n, b, (size_t)from > n ? from : to);
	}
	if (o->skip_warmup) {
		warm = ist_steps_warmup(s);
		from = (long)warm + 1;
	}
	w->at = true;
	w->from = from ? st[from - 1].start : INT64_MIN;
	w->to = to ? st[to - 1].end : INT64_MAX;
	w->how = json_pack("{s:s,s:s,s:I,s:o,s:o,s:o}", "name", name,
	    "record", ist_type_name(type), "count", (json_int_t)n,
	    "from", from ? json_integer(from) : json_null(),
	    "to", to ? json_integer(to) : json_null(),
	    "warmup", o->skip_warmup ? json_integer((json_int_t)warm) :
	    json_null());
	ist_steps_free(s);
}

/* A --fail-on spec checked before any input is read: a bad condition is a
 * usage error, with nothing written and no trace read */
static void
check_failon(const struct args *o)
{
	struct ist_error e = { 0 };
	struct ist_buf why = { 0 };
	json_t *empty = o->baseline ? json_pack("{s:{s:[]}}", "baseline",
	    "deltas") : json_object();
	bool failed;

	if (empty == NULL)
		errx(1, "out of memory");
	if (ist_failon_check(o->failon, empty, &failed, &why, &e) != IST_OK)
		errx(2, "%s", e.msg);
	ist_buf_release(&why);
	json_decref(empty);
}

int
main(int argc, char **argv)
{
	static struct ist_config cfg;
	struct args o;
	const char *shown;
	bool failed = false;
	struct ist_rules *rules;
	struct ist_reader *r = NULL;
	struct ist_writer *w = NULL;
	/* the trace out is compressed while the analysis reads on */
	struct ist_writer_opts wo = { .background = true };
	struct ist_output out;
	struct ist_error e = { 0 };
	struct ist_buf why = { 0 };
	json_t *an = NULL, *base = NULL;
	struct ist_window win = { { -1, -1 }, false, 0, 0, NULL };
	struct tool_progress pg;
	struct tool_spool sp;
	struct ist_again again = { tool_spool_again, &sp, NULL,
	    tool_spool_follow, tool_spool_more, false };
	enum ist_status st;
	char m[600];
	int fd, status = 0;

	argv[0] = program_invocation_short_name;
	parse_args(argc, argv, &o);
	if (o.failon)
		check_failon(&o);
	win.rel[0] = o.window[0];
	win.rel[1] = o.window[1];
	ist_config_init(&cfg);
	tool_settings(&cfg, &rules, o.rules_file);
	if (o.step_name == NULL && *ist_config_str(&cfg, IST_K_STEP))
		o.step_name = ist_config_str(&cfg, IST_K_STEP);
	if (o.baseline && ist_analysis_load(o.baseline, o.step_name, rules,
	    &base, &e) !=
	    IST_OK)
		errx(1, "baseline: %s", e.msg);
	if (base)
		warn_unordered(base, "baseline ", o.baseline);

	if (o.step[0] || o.step[1] || o.skip_warmup)
		step_window(&o, &win);
	again.step = o.step_name;
	again.one_thread = o.one_thread;
	fd = tool_open_input(o.path);
	if (ist_output_open(&out, o.outpath, !o.json, &e) != IST_OK)
		errx(1, "%s", e.msg);
	tool_progress_start(&pg, fd, o.quiet);
	tool_spool_init(&sp, fd, true);
	pg.spool = &sp;
	/* through a pipe, stored: the next tool reads it at once */
	wo.store = ist_output_is_pipe(out.fd);
	if (ist_reader_new(&r, tool_progress_source, &pg, o.path, &e) !=
	    IST_OK || (!o.json && ist_writer_new(&w, ist_fd_sink, &out.fd,
	    &wo, &e) != IST_OK))
		errx(1, "%s", e.msg);
	pg.r = r;
	ist_reader_input_fd(r, fd);
	st = ist_analyze_trace(r, w, o.summary, rules, &win, &again, &an, &e);
	/* the reader's thread reads ahead (ist_analyze_trace), showing the
	 * progress as it reads: it is stopped before the line is cleared.
	 * From a pipe, once an error stopped the reading, it may be waiting
	 * on the writer for bytes that may not come soon: it gives up. */
	tool_spool_quit(&sp);
	ist_reader_free(r);
	tool_progress_end(&pg);
	if (an == NULL || (st != IST_OK &&
	    json_integer_value(json_object_get(json_object_get(an, "run"),
	    "segments")) == 0)) {
		errx(1, "%s", ist_output_fail(&out, &e));
	}
	if (st != IST_OK) {
		warnx("%s%s", st == IST_TRUNCATED ? "warning: " : "", e.msg);
		status = 1;
	}
	shown = strcmp(o.path, "-") ? o.path : "<stdin>";
	warn_unordered(an, "", shown);
	for (size_t i = 0; ist_analysis_damage_line(an, i, false, m,
	    sizeof(m)); i++) {
		warnx("warning: '%s' was %s", shown, m);
		status = 1;
	}
	if (base && ist_analysis_compare(an, base, &e) != IST_OK)
		errx(1, "%s", e.msg);
	if (o.failon && ist_failon_check(o.failon, an, &failed, &why, &e) !=
	    IST_OK) {
		ist_output_abort(&out);
		errx(2, "%s", e.msg);
	}
	put_analysis(&o, an, w, &out);
	if (ist_output_commit(&out, &e) != IST_OK)
		errx(1, "%s", e.msg);
	if (failed) {
		fprintf(stderr, "is-analyze: --fail-on '%s' holds:\n%.*s",
		    o.failon, (int)why.n, why.p);
		status = EXIT_GATE;
	}
	ist_buf_release(&why);
	json_decref(an);
	json_decref(base);
	json_decref(win.how);
	tool_spool_release(&sp);
	ist_rules_free(rules);
	ist_config_release(&cfg);
	if (fd != STDIN_FILENO)
		close(fd);
	return status;
}
