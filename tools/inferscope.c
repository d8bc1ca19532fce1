/*
 * inferscope - one command for the whole pipeline:
 *   run:     is-record -- python3 SCRIPT | is-merge | is-analyze | is-report
 *   analyze: is-merge TRACE | is-analyze | is-report
 *   config show: the effective settings and where each came from.
 */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "config.h"
#include "ist.h"
#include "pipeline.h"
#include "rules.h"

static const char usage[] =
    "usage: inferscope run [--format fmt] [--log-level level] [--report file] "
    "[--rules-file file] [--trace file] [--trace-size-mb n] script "
    "[arg ...]\n"
    "       inferscope run [options] -- command [arg ...]\n"
    "       inferscope analyze [--format fmt] [--output file] "
    "[--rules-file file] trace\n"
    "       inferscope config show [--rules-file file]\n";

static void
help(void)
{
	printf("%s", usage);
	printf("\n"
	    "run      run python3 SCRIPT (or any command after --) under\n"
	    "         is-record, then merge, analyse and write the report;\n"
	    "         exit with the script's status\n"
	    "analyze  merge, analyse and report an existing trace\n"
	    "config   show the settings in effect and where each came from\n"
	    "\n"
	    "  -f, --format=FMT       md, html, json or text (perfetto for\n"
	    "                         analyze); default: from the report's\n"
	    "                         extension (.html .json .txt), else md\n"
	    "  -h, --help             print this help and exit\n"
	    "  -l, --log-level=LEVEL  debug, info, warn or error\n"
	    "  -o, --output=FILE      the report (analyze; default report.md)\n"
	    "  -r, --report=FILE      the report (run; default report.md)\n"
	    "  -R, --rules-file=FILE  rule thresholds (YAML)\n"
	    "  -t, --trace=FILE       keep the merged trace, with its analysis,\n"
	    "                         in FILE\n"
	    "  -s, --trace-size-mb=N  buffer bound per process\n"
	    "  -V, --version          print the version and exit\n"
	    "\n"
	    "Settings: command line > INFERSCOPE_* environment > "
	    ".inferscope.yaml >\ndefaults.  INFERSCOPE_PYTHON names the Python "
	    "for SCRIPT (python3).\nINFERSCOPE_ENABLED=0 runs the script "
	    "without tracing.\n");
}

static struct ist_config cfg;
static const char *format, *report, *trace_path, *rules_cli;

static void
set(const char *key, const char *val, const char *what)
{
	struct ist_error e;
	if (ist_config_set(&cfg, key, val, IST_SRC_CLI, NULL, &e) != IST_OK)
		errx(2, "%s: %s", what, e.msg);
}


static const char *
rules_file(void)
{
	if (rules_cli)
		return rules_cli;
	return *ist_config_str(&cfg, IST_K_RULES_FILE) ?
	    ist_config_str(&cfg, IST_K_RULES_FILE) : NULL;
}

/* log level warn or error: no word but warnings */
static bool
quiet(void)
{
	return strcmp(ist_config_str(&cfg, IST_K_LOG_LEVEL), "warn") == 0 ||
	    strcmp(ist_config_str(&cfg, IST_K_LOG_LEVEL), "error") == 0;
}

static const char *
report_format(const char *path)
{
	const char *dot = strrchr(path, '.');
	if (format)
		return format;
	if (dot && strcmp(dot, ".html") == 0)
		return "html";
	if (dot && strcmp(dot, ".json") == 0)
		return "json";
	if (dot && strcmp(dot, ".txt") == 0)
		return "text";
	return "md";
}

/*
 * is-merge TRACE | is-analyze [--rules-file F] | is-report -f FMT -o OUT;
 * with keep, is-merge TRACE | is-analyze -o KEEP, then is-report KEEP: the
 * kept trace is the merged one, with its analysis.
 */
static int
analyse(const char *trace, const char *out, const char *keep)
{
	char *merge = ist_tool_path("is-merge"), *an = ist_tool_path(
	    "is-analyze"), *rep = ist_tool_path("is-report");
	const char *rf = rules_file();
	char *a1[] = { merge, (char *)trace, NULL };
	char *a2[6] = { an };
	char *a3[8] = { rep, "-f", (char *)report_format(out), "-o",
	    (char *)out };
	char *const *argv[] = { a1, a2, a3 };
	int status[3] = { 0 }, bad = 0;
	struct ist_error e;
	int k = 1, k3 = 5;

	/* the verdict and the top findings on stderr, as the run ends */
	if (!quiet())
		a3[k3++] = "--summary";
	a3[k3] = (char *)keep;
	if (keep) {
		a2[k++] = "-o";
		a2[k++] = (char *)keep;
	}
	if (rf) {
		a2[k++] = "--rules-file";
		a2[k++] = (char *)rf;
	}
	if (keep == NULL) {     /* no -o: the analysis goes down the pipe */
		if (ist_spawn_pipeline(argv, 3, -1, -1, status, &e) != IST_OK) {
			warnx("%s", e.msg);
			bad = 1;
		}
	} else if (ist_spawn_pipeline(argv, 2, -1, -1, status, &e) !=
	    IST_OK || ist_spawn_pipeline(argv + 2, 1, -1, -1, status + 2,
	    &e) != IST_OK) {
		warnx("%s", e.msg);
		bad = 1;
	}
	for (int i = 0; i < 3; i++)
		if (status[i] != 0)
			bad = 1;
	free(merge);
	free(an);
	free(rep);
	return bad;
}

static int
run(int argc, char **argv, bool dashdash)
{
	char tmp[4096] = "/tmp/inferscope-XXXXXX", tpath[4200];
	char *rec;
	const char *py = getenv("INFERSCOPE_PYTHON");
	const char *out = report ? report : "report.md";
	char **cmd;
	int n = 0, status[1] = { 0 }, script;
	struct ist_error e;
	struct stat st;
	const char *en = getenv("INFERSCOPE_ENABLED");

	if (argc < 1) {
		warnx("run: no script to run");
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if ((cmd = calloc((size_t)argc + 16, sizeof(*cmd))) == NULL ||
	    (rec = ist_tool_path("is-record")) == NULL)
		errx(1, "out of memory");
	if (en && strcmp(en, "0") == 0) {
		/* tracing off: just the script */
		char **c2 = cmd;
		if (!dashdash)
			*c2++ = (char *)(py && *py ? py : "python3");
		for (int i = 0; i < argc; i++)
			*c2++ = argv[i];
		warnx("INFERSCOPE_ENABLED=0: running without tracing");
		if (ist_spawn_pipeline((char *const *const *)&cmd, 1, -1, -1,
		    status, &e) != IST_OK)
			warnx("%s", e.msg);
		free(rec);
		free(cmd);
		return status[0];
	}
	/* the recording waits here; --trace keeps the merged trace */
	{
		const char *td = getenv("TMPDIR");
		if (td && *td && strlen(td) < 4000)
			snprintf(tmp, sizeof(tmp), "%s/inferscope-XXXXXX", td);
		if (mkdtemp(tmp) == NULL)
			err(1, "cannot make a temporary directory");
		snprintf(tpath, sizeof(tpath), "%s/run.ist", tmp);
	}
	cmd[n++] = rec;
	cmd[n++] = "-o";
	cmd[n++] = tpath;
	if (cfg.source[IST_K_LOG_LEVEL] == IST_SRC_CLI) {
		cmd[n++] = "--log-level";
		cmd[n++] = (char *)ist_config_str(&cfg, IST_K_LOG_LEVEL);
	}
	if (cfg.source[IST_K_TRACE_SIZE_MB] == IST_SRC_CLI) {
		cmd[n++] = "--trace-size-mb";
		cmd[n++] = (char *)ist_config_str(&cfg, IST_K_TRACE_SIZE_MB);
	}
	cmd[n++] = "--";
	if (!dashdash)
		cmd[n++] = (char *)(py && *py ? py : "python3");
	for (int i = 0; i < argc; i++)
		cmd[n++] = argv[i];
	if (ist_spawn_pipeline((char *const *const *)&cmd, 1, -1, -1, status,
	    &e) != IST_OK)
		warnx("%s", e.msg);
	script = status[0];
	/* is-record writes the trace whatever the script did */
	if (stat(tpath, &st) != 0 || st.st_size == 0) {
		warnx("no trace was written; no report");
		script = script ? script : 1;
	} else if (analyse(tpath, out, trace_path) != 0) {
		warnx("the report could not be made");
		script = script ? script : 1;
	} else if (!quiet()) {
		fprintf(stderr, "inferscope: report in %s%s%s\n", out,
		    trace_path ? ", trace in " : "",
		    trace_path ? trace_path : "");
	}
	unlink(tpath);
	rmdir(tmp);
	free(rec);
	free(cmd);
	return script;
}

static int
config_show(void)
{
	struct ist_rules *r = ist_rules_new();
	struct ist_error e;
	json_t *j;
	const char *k;
	json_t *v;

	/* the rules first: an unknown one is a usage error, as in is-analyze,
	 * with nothing printed */
	if (r == NULL)
		errx(1, "out of memory");
	if (ist_rules_configure(r, &cfg, rules_cli, &e) != IST_OK)
		errx(2, "%s", e.msg);
	for (int i = 0; i < IST_NKEYS; i++)
		printf("%-22s %-12s %s%s%s\n", ist_config_key_name(i),
		    *ist_config_str(&cfg, i) ? ist_config_str(&cfg, i) :
		    "(none)", ist_source_name(cfg.source[i]),
		    cfg.where[i] ? " " : "", cfg.where[i] ? cfg.where[i] : "");
	printf("rules (defaults, then .inferscope.yaml rules:, then %s):\n",
	    rules_file() ? rules_file() : "no rules file");
	j = ist_rules_json(r);
	json_object_foreach(j, k, v) {
		const char *p;
		json_t *x;
		printf("  %s:", k);
		json_object_foreach(v, p, x) {
			if (json_is_boolean(x))
				printf(" %s=%s", p, json_is_true(x) ? "on" :
				    "off");
			else
				printf(" %s=%g", p, json_number_value(x));
		}
		printf("\n");
	}
	json_decref(j);
	ist_rules_free(r);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "output", required_argument, NULL, 'o' },
		{ "report", required_argument, NULL, 'r' },
		{ "rules-file", required_argument, NULL, 'R' },
		{ "trace", required_argument, NULL, 't' },
		{ "trace-size-mb", required_argument, NULL, 's' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *sub;
	int c, status;

	argv[0] = program_invocation_short_name;
	if (argc < 2) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		help();
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		tool_version();
		return 0;
	}
	sub = argv[1];
	if (strcmp(sub, "run") && strcmp(sub, "analyze") &&
	    strcmp(sub, "config")) {
		warnx("unknown command '%s'", sub);
		fprintf(stderr, "%s", usage);
		return 2;
	}
	ist_config_init(&cfg);
	argv++;
	argc--;
	/* run stops at the script; the others take options anywhere */
	while ((c = getopt_long(argc, argv, strcmp(sub, "run") ? "f:hl:o:r:R:t:s:V"
	    : "+f:hl:o:r:R:t:s:V", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "md") && strcmp(optarg, "html") &&
			    strcmp(optarg, "json") && strcmp(optarg, "text") &&
			    (strcmp(sub, "analyze") ||
			    strcmp(optarg, "perfetto")))
				errx(2, "--format wants md, html, json or text%s, "
				    "not '%s'", strcmp(sub, "analyze") ? "" :
				    " (or perfetto)", optarg);
			format = optarg;
			break;
		case 'h':
			help();
			return 0;
		case 'l':
			set("log_level", optarg, "--log-level");
			break;
		case 'o':
		case 'r':
			report = optarg;
			break;
		case 'R':
			rules_cli = optarg;
			set("rules_file", optarg, "--rules-file");
			break;
		case 't':
			trace_path = optarg;
			break;
		case 's':
			set("trace_size_mb", optarg, "--trace-size-mb");
			break;
		case 'V':
			tool_version();
			return 0;
		default:
			fprintf(stderr, "%s", usage);
			return 2;
		}
	}
	tool_settings(&cfg, NULL, NULL);
	if (strcmp(sub, "run") == 0) {
		status = run(argc - optind, argv + optind, optind > 1 &&
		    strcmp(argv[optind - 1], "--") == 0);
	} else if (strcmp(sub, "analyze") == 0) {
		if (argc - optind != 1) {
			warnx("analyze: one trace, please");
			fprintf(stderr, "%s", usage);
			return 2;
		}
		if (access(argv[optind], R_OK) != 0)
			err(1, "cannot open '%s'", argv[optind]);
		status = analyse(argv[optind], report ? report : "report.md",
		    NULL);
		if (status == 0 && !quiet())
			fprintf(stderr, "inferscope: report in %s\n", report ?
			    report : "report.md");
	} else {
		if (argc - optind != 1 || strcmp(argv[optind], "show")) {
			warnx("config: the only command is 'config show'");
			return 2;
		}
		status = config_show();
	}
	ist_config_release(&cfg);
	if (fclose(stdout) != 0)
		err(1, "cannot write standard output");
	return status;
}
