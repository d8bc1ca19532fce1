/* is-cat - decode a trace to JSON Lines, or encode JSON Lines to a trace. */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cat.h"
#include "output.h"
#include "common.h"
#include "ist.h"

static const char usage[] =
    "usage: is-cat [--encode] [--frame-bytes n] [-o file] [file ...]\n";

static void
help(void)
{
	printf("%s", usage);
	printf("\n"
	    "Decode InferScope traces to JSON Lines, one record per line, or\n"
	    "with --encode turn JSON Lines back into a trace.  With no file,\n"
	    "or when file is -, read standard input.\n"
	    "\n"
	    "  -e, --encode         read JSON Lines, write a trace\n"
	    "      --frame-bytes=N  with --encode, close a frame past N bytes\n"
	    "                       of CBOR (default 4194304)\n"
	    "  -h, --help           print this help and exit\n"
	    "  -o, --output=FILE    write to FILE instead of standard output\n"
	    "  -V, --version        print the version and exit\n"
	    "\n"
	    "Exit status: 0 on success, 1 on a bad or truncated input, 2 on a\n"
	    "usage error.\n");
}

static void
report(void *ctx, int level, const char *msg)
{
	(void)ctx;
	(void)level;
	warnx("%s", msg);
}

/* frames compressed in the background while the next is parsed */
static struct ist_writer_opts wopts = { .background = true };

static int
encode(char **files, int nfiles, const char *outpath)
{
	static char *stdin_only[] = { "-" };
	struct ist_output o;
	struct ist_writer *w = NULL;
	struct ist_error e = { 0 };
	bool have_header = false;
	int status = 0;

	if (nfiles == 0) {
		files = stdin_only;
		nfiles = 1;
	}
	if (ist_output_open(&o, outpath, true, &e) != IST_OK)
		errx(1, "%s", e.msg);
	if (ist_writer_new(&w, ist_fd_sink, &o.fd, &wopts, &e) != IST_OK)
		goto fatal;
	for (int i = 0; i < nfiles; i++) {
		bool is_stdin = strcmp(files[i], "-") == 0;
		FILE *in = is_stdin ? stdin : fopen(files[i], "r");
		enum ist_status st;

		if (in == NULL) {
			warn("cannot open '%s'", files[i]);
			status = 1;
			continue;
		}
		st = ist_cat_encode(in, is_stdin ? "<stdin>" : files[i], w,
		    &have_header, report, NULL, &e);
		if (!is_stdin)
			fclose(in);
		if (st == IST_EINVAL) {         /* lines reported, skipped */
			status = 1;
		} else if (st != IST_OK) {
			if (e.where != IST_AT_INPUT)
				goto fatal;
			warnx("%s", e.msg);     /* the next input may read */
			status = 1;
		}
	}
	if (!have_header) {
		struct ist_event hdr;
		ist_event_init(&hdr, IST_HEADER);
		hdr.producer = (struct ist_str){ "is-cat", 6 };
		IST_SET(&hdr, IST_F_PRODUCER);
		if (ist_writer_header(w, &hdr, &e) != IST_OK)
			goto fatal;
	}
	if (ist_writer_close(w, &e) != IST_OK) {
		w = NULL;
		goto fatal;
	}
	if (ist_output_commit(&o, &e) != IST_OK)
		errx(1, "%s", e.msg);
	return status;
fatal:
	ist_writer_free(w);
	errx(1, "%s", ist_output_fail(&o, &e));
}

static int
decode(char **files, int nfiles, const char *outpath)
{
	static char *stdin_only[] = { "-" };
	struct ist_output o;
	struct ist_error e = { 0 };
	FILE *out;
	int status = 0;

	if (nfiles == 0) {
		files = stdin_only;
		nfiles = 1;
	}
	if (ist_output_open(&o, outpath, false, &e) != IST_OK)
		errx(1, "%s", e.msg);
	out = o.fd == STDOUT_FILENO ? stdout : fdopen(o.fd, "w");
	if (out == NULL)
		err(1, "cannot open output");
	for (int i = 0; i < nfiles; i++) {
		bool is_stdin = strcmp(files[i], "-") == 0;
		int fd = is_stdin ? STDIN_FILENO : open(files[i], O_RDONLY);
		struct ist_reader *r;
		enum ist_status st;

		if (fd < 0) {
			warn("cannot open '%s'", files[i]);
			status = 1;
			continue;
		}
		if (ist_reader_new(&r, ist_fd_source, &fd, files[i], &e) !=
		    IST_OK)
			errx(1, "%s", e.msg);
		ist_reader_ahead_fd(r, fd);
		st = ist_cat_decode(r, out, &e);
		ist_reader_free(r);
		if (!is_stdin)
			close(fd);
		if (st == IST_TRUNCATED) {
			warnx("warning: %s", e.msg);
			status = 1;
		} else if (st != IST_OK && e.where != IST_AT_INPUT) {
			/* writing failed: no point reading further */
			errx(1, "%s", ist_output_fail(&o, &e));
		} else if (st != IST_OK) {
			warnx("%s", e.msg);
			status = 1;
		}
	}
	if (out != stdout) {
		o.fd = -1;
		if (fflush(out) != 0 || ferror(out)) {
			fclose(out);
			ist_output_abort(&o);
			errx(1, "cannot write '%s'", outpath);
		}
		o.fd = dup(fileno(out));
		fclose(out);
		if (ist_output_commit(&o, &e) != IST_OK)
			errx(1, "%s", e.msg);
	}
	return status;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "encode", no_argument, NULL, 'e' },
		{ "frame-bytes", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'o' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char *outpath = NULL;

	bool enc = false;
	int c, status;

	argv[0] = program_invocation_short_name;
	while ((c = getopt_long(argc, argv, "eho:V", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			enc = true;
			break;
		case 'F': {
			char *end;
			unsigned long long v;
			errno = 0;
			v = strtoull(optarg, &end, 10);
			if (errno || *end || end == optarg || v == 0 ||
			    optarg[0] == '-') {
				warnx("--frame-bytes wants a positive number, "
				    "not '%s'", optarg);
				return 2;
			}
			wopts.frame_bytes = (size_t)v;
			break;
		}
		case 'h':
			help();
			return 0;
		case 'o':
			outpath = optarg;
			break;
		case 'V':
			tool_version();
			return 0;
		default:
			fprintf(stderr, "%s", usage);
			return 2;
		}
	}
	argc -= optind;
	argv += optind;
	status = enc ? encode(argv, argc, outpath) :
	    decode(argv, argc, outpath);
	if (fclose(stdout) != 0)
		err(1, "cannot write standard output");
	return status;
}
