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
#include "common.h"
#include "config.h"
#include "ist.h"

#define EXIT_GATE 3

static const char usage[] =
    "usage: is-analyze [--json] [--summary] [--from s] [--to s] "
    "[--baseline file] [--fail-on spec] [--rules-file file] [-o file] "
    "[file]\n";

static void
help(void)
{
	printf("%s", usage);
	printf("\n"
	    "Analyse a merged InferScope trace: GPU busy and idle time (with\n"
	    "the host activity behind each idle gap), scopes, NVTX ranges,\n"
	    "Python functions, kernels, copies, syncs, threads and memory;\n"
	    "then the rules gpu_idle, transfer, sync, launch_bound,\n"
	    "cpu_contention, memory_pressure, gpu_bound, gc_pause and\n"
	    "startup, and a verdict.\n"
	    "Writes the trace back with an analysis record appended.  With\n"
	    "no file, or when file is -, read standard input.\n"
	    "\n"
	    "  -b, --baseline=FILE    compare with another trace or analysis\n"
	    "  -f, --fail-on=SPEC     exit 3 when SPEC holds, e.g.\n"
	    "                         'regression>5%%' or 'severity>=high'\n"
	    "      --from=S           analyse from S seconds after the trace's\n"
	    "                         start (ranges across it are cut there)\n"
	    "  -h, --help             print this help and exit\n"
	    "  -j, --json             print the analysis as JSON instead\n"
	    "  -o, --output=FILE      write to FILE instead of standard output\n"
	    "  -r, --rules-file=FILE  rule thresholds (YAML)\n"
	    "  -s, --summary          keep only headers, processes, threads,\n"
	    "                         devices, loss and the analysis\n"
	    "      --to=S             analyse up to S seconds after the start\n"
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
	bool json, summary;
	int64_t window[2];       /* --from, --to in ns; -1: none */
};

static void
parse_args(int argc, char **argv, struct args *o)
{
	static const struct option opts[] = {
		{ "baseline", required_argument, NULL, 'b' },
		{ "fail-on", required_argument, NULL, 'f' },
		{ "from", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "rules-file", required_argument, NULL, 'r' },
		{ "summary", no_argument, NULL, 's' },
		{ "to", required_argument, NULL, 'T' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	*o = (struct args){ .path = "-", .window = { -1, -1 } };
	while ((c = getopt_long(argc, argv, "b:f:hjo:r:sV", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			o->baseline = optarg;
			break;
		case 'f':
			o->failon = optarg;
			break;
		case 'F':
			o->window[0] = tool_seconds("--from", optarg);
			break;
		case 'T':
			o->window[1] = tool_seconds("--to", optarg);
			break;
		case 'h':
			help();
			exit(0);
		case 'j':
			o->json = true;
			break;
		case 'o':
			o->outpath = optarg;
			break;
		case 'r':
			o->rules_file = optarg;
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
	if (o->window[1] >= 0 && o->window[1] <= o->window[0]) {
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
	struct ist_writer_opts wo = { 0 };
	struct ist_output out;
	struct ist_error e = { 0 };
	struct ist_buf why = { 0 };
	json_t *an = NULL, *base = NULL;
	enum ist_status st;
	char m[600];
	int fd, status = 0;

	argv[0] = program_invocation_short_name;
	parse_args(argc, argv, &o);
	ist_config_init(&cfg);
	tool_settings(&cfg, &rules, o.rules_file);
	if (o.baseline && ist_analysis_load(o.baseline, rules, &base, &e) !=
	    IST_OK)
		errx(1, "baseline: %s", e.msg);
	if (base)
		warn_unordered(base, "baseline ", o.baseline);

	fd = tool_open_input(o.path);
	if (ist_output_open(&out, o.outpath, !o.json, &e) != IST_OK)
		errx(1, "%s", e.msg);
	if (ist_reader_new(&r, ist_fd_source, &fd, o.path, &e) != IST_OK ||
	    (!o.json && ist_writer_new(&w, ist_fd_sink, &out.fd, &wo, &e) !=
	    IST_OK))
		errx(1, "%s", e.msg);
	st = ist_analyze_trace(r, w, o.summary, rules, o.window, &an, &e);
	if (an == NULL || (st != IST_OK && st != IST_TRUNCATED &&
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
	ist_reader_free(r);
	ist_rules_free(rules);
	ist_config_release(&cfg);
	if (fd != STDIN_FILENO)
		close(fd);
	return status;
}
