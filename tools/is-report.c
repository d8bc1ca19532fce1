/* is-report - Markdown, HTML, JSON or Perfetto from an analysed trace. */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "analysis_io.h"
#include "rules.h"
#include "output.h"
#include "common.h"
#include "config.h"
#include "ist.h"
#include "report.h"

static const char usage[] =
    "usage: is-report [-qs] [-f md|html|json|perfetto|text] [-o file] "
    "[--color[=when]] [--ascii] [--from s] [--to s] [--min-dur-us n] [file]\n";

static void
help(void)
{
	printf("%s", usage);
	printf("\n"
	    "Render the analysis of an InferScope trace (written by\n"
	    "is-analyze; made here when the trace has none) as a report:\n"
	    "Markdown for pull requests, one self-contained HTML page with\n"
	    "charts, JSON (formats/analysis.md), or Chrome trace-event JSON\n"
	    "that ui.perfetto.dev opens, or text for a terminal.  With no\n"
	    "file, or when file is -, read standard input.\n"
	    "\n"
	    "  -f, --format=FORMAT  md (default), html, json, perfetto or text\n"
	    "      --from=S         perfetto: from S seconds after the start\n"
	    "      --min-dur-us=N   perfetto: only ranges of N us or longer\n"
	    "      --to=S           perfetto: up to S seconds after the start\n"
	    "      --ascii          text: plain ASCII, not UTF-8 blocks\n"
	    "      --color[=WHEN]   text and --summary: colour always, never\n"
	    "                       or auto (default: on a terminal, unless\n"
	    "                       NO_COLOR is set)\n"
	    "  -h, --help           print this help and exit\n"
	    "  -o, --output=FILE    write to FILE instead of standard output\n"
	    "  -q, --quiet          no progress line on a terminal\n"
	    "  -s, --summary        also print the verdict, how the program\n"
	    "                       ended if it failed or was stopped, and the\n"
	    "                       top three findings on standard error, a\n"
	    "                       line each\n"
	    "  -V, --version        print the version and exit\n"
	    "\n"
	    "Exit status: 0 on success, 1 on a bad or truncated input, 2 on a\n"
	    "usage error.\n");
}

/* --format's value, or exit 2 */
static enum ist_report_format
format_named(const char *name)
{
	static const char *const formats[] = { "md", "html", "json",
	    "perfetto", "text" };

	for (int i = 0; i < 5; i++)
		if (strcmp(name, formats[i]) == 0)
			return (enum ist_report_format)i;
	warnx("--format wants md, html, json, perfetto or text, not '%s'",
	    name);
	exit(2);
}

struct args {
	enum ist_report_format fmt;
	const char *outpath, *path;
	int color;           /* -1 auto, 0 never, 1 always */
	bool ascii, summary, quiet;
	struct ist_perfetto_opts pf;
};

/* Colour on fd: --color, else a terminal that is not dumb, without
 * NO_COLOR (https://no-color.org). */
static bool
colour_on(int color, int fd)
{
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");

	if (color >= 0)
		return color == 1;
	return isatty(fd) && (nc == NULL || *nc == '\0') &&
	    !(term && strcmp(term, "dumb") == 0);
}

/* Columns: COLUMNS when set, else the terminal's, else 0 (the default). */
static int
columns_of(int fd)
{
	const char *c = getenv("COLUMNS");
	struct winsize ws;

	if (c && atoi(c) > 0)
		return atoi(c);
	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 0;
}

static void
parse_args(int argc, char **argv, struct args *a)
{
	enum { O_ASCII = 256, O_COLOR, O_FROM, O_TO, O_MINDUR };
	bool from = false, to = false;
	static const struct option opts[] = {
		{ "ascii", no_argument, NULL, O_ASCII },
		{ "color", optional_argument, NULL, O_COLOR },
		{ "colour", optional_argument, NULL, O_COLOR },
		{ "format", required_argument, NULL, 'f' },
		{ "from", required_argument, NULL, O_FROM },
		{ "min-dur-us", required_argument, NULL, O_MINDUR },
		{ "to", required_argument, NULL, O_TO },
		{ "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "summary", no_argument, NULL, 's' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "f:ho:qsV", opts, NULL)) != -1) {
		switch (c) {
		case O_ASCII:
			a->ascii = true;
			break;
		case O_FROM:
			a->pf.from_ns = tool_seconds("--from", optarg);
			from = true;
			break;
		case O_TO:
			a->pf.to_ns = tool_seconds("--to", optarg);
			to = true;
			break;
		case O_MINDUR: {
			char *end;
			double us;
			errno = 0;
			us = strtod(optarg, &end);
			if (end == optarg || *end || errno || !(us >= 0) ||
			    us > 1e12) {
				warnx("--min-dur-us: '%s' is not a number of "
				    "microseconds", optarg);
				exit(2);
			}
			a->pf.min_dur_ns = (int64_t)(us * 1e3);
			break;
		}
		case O_COLOR:
			if (optarg == NULL || strcmp(optarg, "always") == 0)
				a->color = 1;
			else if (strcmp(optarg, "never") == 0)
				a->color = 0;
			else if (strcmp(optarg, "auto") == 0)
				a->color = -1;
			else {
				warnx("--color wants always, never or auto, "
				    "not '%s'", optarg);
				exit(2);
			}
			break;
		case 'f':
			a->fmt = format_named(optarg);
			break;
		case 'h':
			help();
			exit(0);
		case 'o':
			a->outpath = optarg;
			break;
		case 'q':
			a->quiet = true;
			break;
		case 's':
			a->summary = true;
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
		a->path = argv[optind];
	if (a->fmt != IST_REPORT_PERFETTO && (from || to ||
	    a->pf.min_dur_ns > 0)) {
		warnx("--from, --to and --min-dur-us shape the perfetto export "
		    "(an analysis of a window: is-analyze --from/--to)");
		exit(2);
	}
	if (to && a->pf.to_ns <= a->pf.from_ns) {
		warnx("--to must come after --from");
		exit(2);
	}
}

/* The Perfetto export's size, foreseen from the share of the input read:
 * past 1 GB, the Perfetto UI in a browser struggles; say so once, early. */
struct foresee {
	const char *shown;
	bool perfetto, warned;
	struct tool_progress pg;     /* pg.total: the input's size, 0: a pipe */
};

#define BIG_EXPORT 1000000000ull

static void
foresee_size(void *ctx, uint64_t in_bytes, uint64_t events, uint64_t out)
{
	struct foresee *f = ctx;
	uint64_t size = f->pg.total;
	double est;

	tool_progress_show(&f->pg, in_bytes, 0, events);
	if (!f->perfetto || f->warned || in_bytes == 0)
		return;
	if (size == 0) {
		if (out <= BIG_EXPORT)
			return;
		/* a warning on a line of its own, not in the progress line */
		tool_progress_end(&f->pg);
		warnx("warning: the Perfetto export of '%s' is past 1 GB "
		    "already; narrow it with --from/--to or --min-dur-us",
		    f->shown);
		f->warned = true;
		return;
	}
	/* from 2% of the input read, or 64 MB written */
	if (in_bytes * 50 < size && out < (64u << 20))
		return;
	est = (double)out * (double)size / (double)in_bytes;
	if (est > BIG_EXPORT) {
		tool_progress_end(&f->pg);
		warnx("warning: the Perfetto export of '%s' will be about "
		    "%.1f GB (foreseen from the first %.0f%% of the trace), more "
		    "than the Perfetto UI opens comfortably; narrow it with "
		    "--from/--to or --min-dur-us", f->shown, est / 1e9,
		    100.0 * (double)in_bytes / (double)size);
	}
	f->warned = true;    /* foreseen once */
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
	struct args a = { IST_REPORT_MD, NULL, "-", -1, false, false, false,
	    { 0, 0, 0 } };
	struct foresee fs = { 0 };
	struct ist_rules *rules;
	struct ist_reader *r = NULL;
	struct ist_output out;
	struct ist_error e = { 0 };
	enum ist_status st;
	struct ist_report_result res;
	struct ist_report_opts ro;
	struct tool_spool sp, sp2 = { .in = -1, .keep = -1, .start = -1 };
	struct ist_again again = { tool_spool_again, &sp, NULL,
	    tool_spool_follow, tool_spool_more, false };
	const char *shown;
	bool damaged;
	int fd;

	argv[0] = program_invocation_short_name;
	parse_args(argc, argv, &a);
	shown = strcmp(a.path, "-") == 0 ? "<stdin>" : a.path;

	/* the rules are used only when the trace carries no analysis */
	ist_config_init(&cfg);
	tool_settings(&cfg, &rules, NULL);
	if (*ist_config_str(&cfg, IST_K_STEP))
		again.step = ist_config_str(&cfg, IST_K_STEP);
	fd = tool_open_input(a.path);
	if (ist_output_open(&out, a.outpath, false, &e) != IST_OK)
		errx(1, "%s", e.msg);
	/* a pipe is kept where a second reading could serve (the steps of
	 * an analysis made here, an analysis cut off the trace): the
	 * Perfetto export never reads its input again */
	tool_spool_init(&sp, fd, a.fmt != IST_REPORT_PERFETTO);
	if (ist_reader_new(&r, tool_spool_source, &sp, a.path, &e) != IST_OK)
		errx(1, "%s", e.msg);
	/* the reports that read every event (a timeline, the export, an
	 * analysis made here), from a file, read it ahead on a second core;
	 * md and json of a trace that promises its analysis skim to it,
	 * which reading ahead would not */
	/* skimming for the analysis only where the input can be read again
	 * should it be elsewhere */
	ro = (struct ist_report_opts){ .format = a.fmt, .rules = rules,
	    .again = &again, .skim = sp.keep >= 0 || sp.start >= 0 };
	if (a.fmt == IST_REPORT_PERFETTO || a.fmt == IST_REPORT_HTML ||
	    a.fmt == IST_REPORT_TEXT || !ist_file_promises_analysis(fd))
		ist_reader_ahead_fd(r, fd);
	else if (ro.skim)
		/* from the first frame on, which its header's promise would
		 * otherwise find decompressed whole (ist_report_trace skims
		 * from a header that promises the analysis) */
		ist_reader_skim(r, true);
	/* the terminal report fits the terminal it goes to */
	ro.text.width = columns_of(a.outpath ? -1 : STDOUT_FILENO);
	ro.text.color = colour_on(a.color, a.outpath ? -1 : STDOUT_FILENO);
	ro.text.ascii = a.ascii;
	ro.perfetto = a.pf;
	fs.shown = shown;
	fs.perfetto = a.fmt == IST_REPORT_PERFETTO;
	tool_progress_start(&fs.pg, fd, a.quiet);
	ro.progress = foresee_size;
	ro.progress_ctx = &fs;
	st = ist_report_trace(r, &ro, out.fd, &res, &e);
	while (!res.wrote && res.analysis_missing && !ro.analyse) {
		/* not at a frame's start: read it whole; not there either
		 * (is-analyze's analysis was cut off): make one here */
		/* the reader first: reading ahead, its thread may still
		 * read the file whose offset the second reading sets */
		ist_reader_free(r);
		r = NULL;
		if (sp2.in >= 0)
			close(sp2.in);
		if ((sp2.in = tool_spool_again(&sp)) < 0)
			break;
		sp2.keep = -1;
		sp2.start = -1;
		if (ist_reader_new(&r, tool_spool_source, &sp2, a.path, &e) !=
		    IST_OK)
			errx(1, "%s", e.msg);
		if (res.skimmed)
			ro.skim = false;
		else
			ro.analyse = true;
		st = ist_report_trace(r, &ro, out.fd, &res, &e);
	}
	tool_progress_end(&fs.pg);
	if (!res.wrote) {
		if (res.analysis_missing && res.skimmed) {
			/* the copy of a pipe stopped (no room left) */
			ist_output_abort(&out);
			errx(1, "'%s': no analysis at the start of a frame, "
			    "where is-analyze puts it, and the input cannot "
			    "be read again to look further; give it as a "
			    "file", shown);
		}
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
	if (a.summary && res.analysis) {
		/* the verdict where the user looks, as pytest's last lines:
		 * cut to the terminal's width there, whole in a log */
		struct ist_text_opts to = { isatty(STDERR_FILENO) ?
		    columns_of(STDERR_FILENO) : 0, colour_on(a.color,
		    STDERR_FILENO), a.ascii };
		struct ist_buf b = { 0 };
		int two = STDERR_FILENO;

		if (isatty(STDERR_FILENO) && to.width == 0)
			to.width = 80;
		if (ist_report_brief(res.analysis, 3, &to, &b) == IST_OK)
			(void)ist_fd_sink(&two, b.p, b.n);
		ist_buf_release(&b);
	}
	json_decref(res.analysis);
	ist_reader_free(r);
	ist_rules_free(rules);
	ist_config_release(&cfg);
	if (fd != STDIN_FILENO)
		close(fd);
	return st == IST_OK && !damaged ? 0 : 1;
}
