/* is-report - Markdown, HTML, JSON or Perfetto from an analysed trace. */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis_io.h"
#include "rules.h"
#include "output.h"
#include "common.h"
#include "config.h"
#include "ist.h"
#include "report.h"

static const char usage[] =
    "usage: is-report [-f md|html|json|perfetto] [-o file] [file]\n";

static void
help(void)
{
	printf("%s", usage);
	printf("\n"
	    "Render the analysis of an InferScope trace (written by\n"
	    "is-analyze; made here when the trace has none) as a report:\n"
	    "Markdown for pull requests, one self-contained HTML page with\n"
	    "charts, JSON (formats/analysis.md), or Chrome trace-event JSON\n"
	    "that ui.perfetto.dev opens.  With no file, or when file is -,\n"
	    "read standard input.\n"
	    "\n"
	    "  -f, --format=FORMAT  md (default), html, json or perfetto\n"
	    "  -h, --help           print this help and exit\n"
	    "  -o, --output=FILE    write to FILE instead of standard output\n"
	    "  -V, --version        print the version and exit\n"
	    "\n"
	    "Exit status: 0 on success, 1 on a bad or truncated input, 2 on a\n"
	    "usage error.\n");
}

/*
 * A pipe cannot be read twice, and the analysis is-analyze promised may
 * have been cut off its end: what is read from a pipe is also kept in an
 * unlinked temporary file (the compressed trace, small beside the work of
 * analysing it again), so that the trace can be analysed here after all.
 */
struct spool {
	int in, keep;
};

static long
spool_source(void *ctx, void *buf, size_t n)
{
	struct spool *s = ctx;
	long k = ist_fd_source(&s->in, buf, n);
	int keep = s->keep;

	if (k > 0 && keep >= 0 && ist_fd_sink(&keep, buf, (size_t)k) != 0) {
		close(s->keep);     /* no room: no second reading */
		s->keep = -1;
	}
	return k;
}

/* A trace that promises no analysis is analysed here in one reading. */
static void
spool_needed(void *ctx, bool promised)
{
	struct spool *s = ctx;

	if (!promised && s->keep >= 0) {
		close(s->keep);
		s->keep = -1;
	}
}

static int
spool_open(void)
{
	const char *dir = getenv("TMPDIR");

	return open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR, 0600);
}

/* --format's value, or exit 2 */
static enum ist_report_format
format_named(const char *name)
{
	static const char *const formats[] = { "md", "html", "json",
	    "perfetto" };

	for (int i = 0; i < 4; i++)
		if (strcmp(name, formats[i]) == 0)
			return (enum ist_report_format)i;
	warnx("--format wants md, html, json or perfetto, not '%s'", name);
	exit(2);
}

static void
parse_args(int argc, char **argv, enum ist_report_format *fmt,
    const char **outpath, const char **path)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'o' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "f:ho:V", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			*fmt = format_named(optarg);
			break;
		case 'h':
			help();
			exit(0);
		case 'o':
			*outpath = optarg;
			break;
		case 'V':
			tool_version();
			exit(0);
		default:
			fprintf(stderr, "%s", usage);
			exit(2);
		}
	}
	if (argc - optind > 1) {
		warnx("one input at a time (merge several with is-merge)");
		fprintf(stderr, "%s", usage);
		exit(2);
	}
	if (optind < argc)
		*path = argv[optind];
}

/* What the report stands on that the user should know: true if damaged. */
static bool
warn_after(const char *shown, const struct ist_report_result *res)
{
	bool damaged = false;
	json_int_t unordered;
	char m[600];

	if (res->analysis_missing && res->wrote) {
		warnx("warning: '%s' ends without the analysis its header "
		    "promises: the export has no verdict", shown);
		damaged = true;
	}
	if ((unordered = json_integer_value(json_object_get(json_object_get(
	    res->analysis, "data_quality"), "out_of_order"))) > 0)
		warnx("warning: '%s' is not in time order (%lld records left "
		    "out): run is-merge first", shown, (long long)unordered);
	for (size_t i = 0; ist_analysis_damage_line(res->analysis, i,
	    res->from_trace, m, sizeof(m)); i++) {
		warnx("warning: '%s' was %s", shown, m);
		damaged = true;
	}
	return damaged;
}

int
main(int argc, char **argv)
{
	static struct ist_config cfg;
	enum ist_report_format fmt = IST_REPORT_MD;
	const char *outpath = NULL, *path = "-";
	struct ist_rules *rules;
	struct ist_reader *r = NULL;
	struct ist_output out;
	struct ist_error e = { 0 };
	enum ist_status st;
	struct ist_report_result res;
	struct ist_report_opts ro;
	struct spool sp;
	const char *shown;
	bool damaged;
	int fd;

	argv[0] = program_invocation_short_name;
	parse_args(argc, argv, &fmt, &outpath, &path);
	shown = strcmp(path, "-") == 0 ? "<stdin>" : path;

	/* the rules are used only when the trace carries no analysis */
	ist_config_init(&cfg);
	tool_settings(&cfg, &rules, NULL);
	fd = tool_open_input(path);
	if (ist_output_open(&out, outpath, false, &e) != IST_OK)
		errx(1, "%s", e.msg);
	sp.in = fd;
	/* kept from a pipe only where a second reading could serve: the
	 * Perfetto export never reads its input again */
	sp.keep = fmt != IST_REPORT_PERFETTO && lseek(fd, 0, SEEK_CUR) < 0 ?
	    spool_open() : -1;
	if (ist_reader_new(&r, spool_source, &sp, path, &e) != IST_OK)
		errx(1, "%s", e.msg);
	ro = (struct ist_report_opts){ .format = fmt, .rules = rules,
	    .on_header = spool_needed, .ctx = &sp };
	st = ist_report_trace(r, &ro, out.fd, &res, &e);
	if (!res.wrote && res.analysis_missing && (sp.keep >= 0 ?
	    lseek(sp.keep, 0, SEEK_SET) : lseek(fd, 0, SEEK_SET)) == 0) {
		/* is-analyze's analysis was cut off: make one here */
		ist_reader_free(r);
		if (sp.keep >= 0)
			sp.in = sp.keep;
		sp.keep = -1;
		if (ist_reader_new(&r, spool_source, &sp, path, &e) != IST_OK)
			errx(1, "%s", e.msg);
		ro.analyse = true;
		st = ist_report_trace(r, &ro, out.fd, &res, &e);
	}
	if (!res.wrote) {
		if (res.analysis_missing) {
			ist_output_abort(&out);
			errx(1, "'%s': %s; run is-analyze on it again", shown,
			    e.msg);
		}
		errx(1, "%s", ist_output_fail(&out, &e));
	}
	/* after an input's error, the report of what it held stands */
	if (st != IST_OK && e.where != IST_AT_INPUT)
		errx(1, "%s", ist_output_fail(&out, &e));
	if (ist_output_commit(&out, &e) != IST_OK)
		errx(1, "%s", e.msg);
	if (st != IST_OK)
		warnx("%s%s", st == IST_TRUNCATED ? "warning: " : "", e.msg);
	damaged = warn_after(shown, &res);
	json_decref(res.analysis);
	ist_reader_free(r);
	ist_rules_free(rules);
	ist_config_release(&cfg);
	if (fd != STDIN_FILENO)
		close(fd);
	return st == IST_OK && !damaged ? 0 : 1;
}
