/* is-merge - one timeline from many streams: align clocks, sort globally. */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output.h"
#include "common.h"
#include "config.h"
#include "ist.h"
#include "merge.h"

static const char usage[] =
    "usage: is-merge [-q] [--memory-mb n] [-o file] [file ...]\n";

static void
help(void)
{
	printf("%s", usage);
	printf("\n"
	    "Merge InferScope traces (and the segments of concatenated ones)\n"
	    "into one trace: GPU clock domains mapped onto the host clock by a\n"
	    "least-squares fit of their calibration pairs, other hosts aligned\n"
	    "through their wall-clock snapshots, every record in global time\n"
	    "order.  With no file, or when file is -, read standard input.\n"
	    "\n"
	    "  -h, --help           print this help and exit\n"
	    "  -m, --memory-mb=N    sort in N MiB, spilling sorted runs to\n"
	    "                       temporary files beyond it (256)\n"
	    "  -o, --output=FILE    write to FILE instead of standard output\n"
	    "  -q, --quiet          no progress line on a terminal\n"
	    "  -V, --version        print the version and exit\n"
	    "\n"
	    "INFERSCOPE_SYNC_ERROR_MARGIN_US (1000) is the uncertainty stated\n"
	    "for clocks that cannot be aligned exactly.\n");
}

static void
note(void *ctx, int level, const char *msg)
{
	(void)level;
	tool_progress_end(ctx);      /* a note on a line of its own */
	warnx("%s", msg);
}

static void
progress(void *ctx, uint64_t at, uint64_t total, uint64_t events)
{
	tool_progress_show(ctx, at, total, events);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "memory-mb", required_argument, NULL, 'm' },
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	static char *stdin_only[] = { "-" };
	static struct ist_config cfg;
	struct ist_merge_opts mo = { 0 };
	struct ist_output out;
	struct ist_error e = { 0 };
	const char *outpath = NULL;
	long long mb = 256;
	bool quiet = false;
	struct tool_progress pg;
	char *end;
	int c;
	enum ist_status st;

	argv[0] = program_invocation_short_name;
	while ((c = getopt_long(argc, argv, "hm:o:qV", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			help();
			return 0;
		case 'm':
			errno = 0;
			mb = strtoll(optarg, &end, 10);
			if (errno || *end || mb < 4 || mb > 1 << 20) {
				warnx("--memory-mb wants a number from 4 to "
				    "1048576, not '%s'", optarg);
				return 2;
			}
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'V':
			tool_version();
			return 0;
		default:
			fprintf(stderr, "%s", usage);
			return 2;
		}
	}
	ist_config_init(&cfg);
	tool_settings(&cfg, NULL, NULL);
	mo.memory_bytes = (size_t)mb << 20;
	mo.margin_ns = ist_config_int(&cfg, IST_K_SYNC_ERROR_MARGIN_US) * 1000;
	mo.tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") :
	    "/tmp";
	if (ist_output_open(&out, outpath, true, &e) != IST_OK)
		errx(1, "%s", e.msg);
	tool_progress_start(&pg, -1, quiet);
	mo.progress = progress;
	mo.progress_ctx = &pg;
	st = optind < argc ? ist_merge(argv + optind, argc - optind, out.fd,
	    &mo, note, &pg, &e) : ist_merge(stdin_only, 1, out.fd, &mo, note,
	    &pg, &e);
	tool_progress_end(&pg);
	if (st != IST_OK && st != IST_EPARTIAL)
		errx(1, "%s", ist_output_fail(&out, &e));
	if (ist_output_commit(&out, &e) != IST_OK)
		errx(1, "%s", e.msg);
	ist_config_release(&cfg);
	return st == IST_OK ? 0 : 1;
}
