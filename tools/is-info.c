/* is-info - a quick human (or JSON) summary of traces. */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ist.h"

static const char usage[] = "usage: is-info [--json] [file ...]\n";

static void
help(void)
{
	printf("%s", usage);
	printf("\n"
	    "Summarise InferScope traces: header, duration, event counts per\n"
	    "type, processes, threads, devices, size per event, frames, loss\n"
	    "and truncation.  With no file, or when file is -, read standard\n"
	    "input.\n"
	    "\n"
	    "  -h, --help     print this help and exit\n"
	    "  -j, --json     print one JSON object per trace\n"
	    "  -V, --version  print the version and exit\n"
	    "\n"
	    "Exit status: 0 on success, 1 on a bad or truncated input, 2 on a\n"
	    "usage error.\n");
}

static int
info(const char *path, bool json, bool first)
{
	bool is_stdin = strcmp(path, "-") == 0;
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY);
	struct ist_reader *r = NULL;
	struct ist_info *in = NULL;
	struct ist_reader_stats st;
	struct ist_error e = { 0 };
	struct ist_buf out = { 0 };
	const struct ist_event *ev;
	enum ist_status s;
	int status = 0;

	if (fd < 0) {
		warn("cannot open '%s'", path);
		return 1;
	}
	if (ist_reader_new(&r, ist_fd_source, &fd, path, &e) != IST_OK ||
	    (in = ist_info_new()) == NULL)
		errx(1, "out of memory");
	ist_reader_ahead_fd(r, fd);
	while ((s = ist_reader_next(r, &ev, &e)) == IST_OK)
		ist_info_add(in, ev);
	if (s == IST_TRUNCATED) {
		warnx("warning: %s", e.msg);
		status = 1;
	} else if (s != IST_END) {
		warnx("%s", e.msg);
		status = 1;
		if (ist_reader_stats(r, &st), st.events == 0 &&
		    st.segments == 0)
			goto out;
	}
	ist_reader_stats(r, &st);
	ist_info_finish(in, &st, path);
	if (ist_info_render(in, json, &out) != IST_OK)
		errx(1, "out of memory");
	if (!first && !json)
		putchar('\n');
	fwrite(out.p, 1, out.n, stdout);
out:
	ist_buf_release(&out);
	ist_info_free(in);
	ist_reader_free(r);
	if (!is_stdin)
		close(fd);
	return status;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	bool json = false;
	int c, status = 0;

	argv[0] = program_invocation_short_name;
	while ((c = getopt_long(argc, argv, "hjV", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			help();
			return 0;
		case 'j':
			json = true;
			break;
		case 'V':
			tool_version();
			return 0;
		default:
			fprintf(stderr, "%s", usage);
			return 2;
		}
	}
	if (optind == argc)
		status = info("-", json, true);
	for (int i = optind; i < argc; i++)
		status |= info(argv[i], json, i == optind);
	if (fclose(stdout) != 0)
		err(1, "cannot write standard output");
	return status;
}
