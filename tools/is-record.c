/* is-record - run a command and record it into an InferScope trace. */
#include <err.h>
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output.h"
#include "common.h"
#include "config.h"
#include "ist.h"
#include "record.h"

static const char usage[] =
    "usage: is-record [--no-gpu] [--no-python] [--no-python-calls] "
    "[--no-sample] [--ring] [--dump-on when] [--capture-range range] "
    "[--delay s] [--duration s] [--log-level level] [--py-min-us n] [--sample-hz n] "
    "[--trace-size-mb n] [-o file] -- command [argument ...]\n"
    "       is-record --recover dir [-o file]\n";

static int log_level = 1; /* 0 debug, 1 info, 2 warn, 3 error */

static void
help(void)
{
	printf("%s", usage);
	printf("\n"
	    "Run command with InferScope's collectors and write its trace.\n"
	    "Python processes record every function call, C call, scope and\n"
	    "marker; /proc is sampled for threads, CPU and memory.  The exit\n"
	    "status is the command's (128+N when it dies of signal N).\n"
	    "\n"
	    "      --capture-range=R   record only inside ranges the program\n"
	    "                          marks: api (inferscope.start()/stop()\n"
	    "                          and cudaProfilerStart()/Stop(); also\n"
	    "                          named cudaProfilerApi), or\n"
	    "                          nvtx:NAME[:COUNT] (while an NVTX range\n"
	    "                          NAME is open; the first COUNT); repeatable\n"
	    "      --delay=S           start recording S seconds in\n"
	    "      --dump-on=WHEN      flight recorder (implies --ring) written\n"
	    "                          only when WHEN comes: SIGUSR1 (to\n"
	    "                          is-record), api (inferscope.dump()) or\n"
	    "                          exit; repeatable\n"
	    "      --duration=S        stop recording S seconds after it began;\n"
	    "                          the command runs on\n"
	    "      --log-level=LEVEL   debug, info, warn or error (info)\n"
	    "      --no-gpu            do not inject the CUDA collector\n"
	    "      --no-python         do not inject the Python collector\n"
	    "      --no-python-calls   record scopes and markers, not every call\n"
	    "      --no-sample         do not sample /proc\n"
	    "  -o, --output=FILE       write the trace to FILE (default stdout)\n"
	    "      --py-min-us=N       drop Python calls shorter than N us (0)\n"
	    "      --recover=DIR       write the trace an is-record that was\n"
	    "                          killed left in DIR (it names DIR)\n"
	    "      --ring              flight recorder: keep only the newest\n"
	    "                          trace-size-mb of each process, written\n"
	    "                          when it exits and at inferscope.dump()\n"
	    "      --sample-hz=N       /proc samples per second (100)\n"
	    "      --trace-size-mb=N   buffer bound per process in MiB (100)\n"
	    "  -h, --help              print this help and exit\n"
	    "  -V, --version           print the version and exit\n"
	    "\n"
	    "SIGUSR2 to is-record pauses or resumes recording in every\n"
	    "recorded process; the /proc sampler runs throughout.  With\n"
	    "--dump-on SIGUSR1, SIGUSR1 writes every flight recorder's window.\n"
	    "\n"
	    "Settings also come from INFERSCOPE_LOG_LEVEL,\n"
	    "INFERSCOPE_TRACE_SIZE_MB and ./.inferscope.yaml; the command line\n"
	    "wins over the environment, which wins over the file.\n");
}

static void
note(void *ctx, int level, const char *msg)
{
	(void)ctx;
	if ((level == IST_NOTE_DEBUG && log_level > 0) ||
	    (level == IST_NOTE_INFO && log_level > 1) ||
	    (level == IST_NOTE_WARN && log_level > 2))
		return;
	warnx("%s%s", level == IST_NOTE_WARN ? "warning: " : "", msg);
}

/* A file of ours: beside the build tree's tools, or installed. */
static char *
find_ours(const char *env, const char *const rel[2], const char *probe)
{
	char exe[PATH_MAX], cand[PATH_MAX + 64], *d;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat st;

	if (env && getenv(env))
		return strdup(getenv(env));
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	d = dirname(exe);
	for (size_t i = 0; i < 2; i++) {
		snprintf(cand, sizeof(cand), "%s/%s%s", d, rel[i], probe);
		if (stat(cand, &st) == 0) {
			snprintf(cand, sizeof(cand), "%s/%s", d, rel[i]);
			return realpath(cand, NULL);
		}
	}
	return NULL;
}

static char *
python_dir(void)
{
	static const char *const rel[2] = { "../python",
	    "../lib/inferscope/python" };
	return find_ours("INFERSCOPE_PYTHON_DIR", rel, "/sitecustomize.py");
}

static char *
nvtx_lib(void)
{
	static const char *const rel[2] = { "../lib/libinferscope-nvtx.so",
	    "../lib/inferscope/libinferscope-nvtx.so" };
	return find_ours(NULL, rel, "");
}

static char *
cupti_lib(void)
{
	static const char *const rel[2] = { "../lib/libinferscope-cupti.so",
	    "../lib/inferscope/libinferscope-cupti.so" };
	return find_ours(NULL, rel, "");
}

/* At debug level: each setting, its value and where it came from. */
static void
say_settings(const struct ist_config *cfg)
{
	for (int k = 0; k < IST_NKEYS; k++) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s = %s (%s%s%s)",
		    ist_config_key_name(k), ist_config_str(cfg, k),
		    ist_source_name(cfg->source[k]), cfg->where[k] ? " " : "",
		    cfg->where[k] ? cfg->where[k] : "");
		note(NULL, IST_NOTE_DEBUG, msg);
	}
}

/* Whether the CUDA driver could load the CUDA collector into the program:
 * loaded here first (it does nothing until InitializeInjection), so that
 * one that cannot load never reaches the program's driver, which would
 * fail cuInit over it. */
static bool
loads(const char *lib)
{
	void *so = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	char msg[1200];

	if (so != NULL && dlsym(so, "InitializeInjection") != NULL) {
		dlclose(so);
		return true;
	}
	snprintf(msg, sizeof(msg), "the CUDA collector cannot be loaded "
	    "(%s); recording without GPU activity", so ? "no "
	    "InitializeInjection in it" : dlerror());
	if (so)
		dlclose(so);
	note(NULL, IST_NOTE_WARN, msg);
	return false;
}

/* The collectors to inject, each left out with a word when it is not
 * installed or another tool holds its hook. */
static void
find_collectors(struct ist_record_opts *ro, bool no_python, bool no_gpu)
{
	if (!no_python && (ro->pydir = python_dir()) == NULL)
		note(NULL, IST_NOTE_WARN, "the Python collector is not "
		    "installed; recording without it");
	if (getenv("NVTX_INJECTION64_PATH") && *getenv("NVTX_INJECTION64_PATH"))
		note(NULL, IST_NOTE_WARN, "NVTX_INJECTION64_PATH is set "
		    "already: leaving it, NVTX ranges go to that tool");
	else if ((ro->nvtx_lib = nvtx_lib()) == NULL)
		note(NULL, IST_NOTE_INFO, "the NVTX collector is not "
		    "installed; recording without NVTX ranges");
	if (no_gpu)
		return;
	if (getenv("CUDA_INJECTION64_PATH") && *getenv("CUDA_INJECTION64_PATH"))
		note(NULL, IST_NOTE_WARN, "CUDA_INJECTION64_PATH is set "
		    "already (nsys, compute-sanitizer?): leaving it, no GPU "
		    "activity is recorded");
	else if ((ro->cupti_lib = cupti_lib()) == NULL)
		note(NULL, IST_NOTE_DEBUG, "the CUDA collector is not "
		    "installed (built without CUPTI); recording without GPU "
		    "activity");
	else if (!loads(ro->cupti_lib)) {
		free((char *)ro->cupti_lib);
		ro->cupti_lib = NULL;
	}
}

/* is-record --recover DIR [-o FILE] */
static int
recover_to(const char *dir, const char *outpath)
{
	struct ist_output out;
	struct ist_error e = { 0 };

	if (ist_output_open(&out, outpath, true, &e) != IST_OK)
		errx(1, "%s", e.msg);
	if (ist_record_recover(dir, out.fd, note, NULL, &e) != IST_OK)
		errx(1, "%s", ist_output_fail(&out, &e));
	if (ist_output_commit(&out, &e) != IST_OK)
		errx(1, "%s", e.msg);
	return 0;
}

struct later {
	struct ist_output *out;
	const char *path;
};

static int
open_out(void *ctx, struct ist_error *err)
{
	struct later *l = ctx;

	if (ist_output_open(l->out, l->path, true, err) != IST_OK)
		return -1;
	return l->out->fd;
}

static void
set(struct ist_config *c, const char *key, const char *val,
    enum ist_source src, const char *what)
{
	struct ist_error e;

	if (ist_config_set(c, key, val, src, NULL, &e) != IST_OK) {
		warnx("%s: %s", what, e.msg);
		exit(2);
	}
}

struct args {
	const char *outpath, *recover;
	bool no_python, no_sample, no_calls, no_gpu, ring;
};

/* --capture-range api | cudaProfilerApi | nvtx:NAME[:COUNT] */
static void
capture_range(struct ist_record_opts *ro, const char *v)
{
	const char *name, *colon;
	char *end;
	long count = -1;
	size_t n;

	if (strcmp(v, "api") == 0 || strcmp(v, "cudaProfilerApi") == 0) {
		ro->capture_api = true;
		return;
	}
	if (strncmp(v, "nvtx:", 5) != 0 || v[5] == '\0') {
		warnx("--capture-range: '%s' is not api, cudaProfilerApi or "
		    "nvtx:NAME[:COUNT]", v);
		exit(2);
	}
	name = v + 5;
	n = strlen(name);
	if ((colon = strrchr(name, ':')) != NULL && colon[1] != '\0') {
		errno = 0;
		count = strtol(colon + 1, &end, 10);
		if (*end == '\0' && !errno && count > 0 && count < INT32_MAX)
			n = (size_t)(colon - name);
		else
			count = -1;     /* a name with a colon in it */
	}
	if (ro->nnvtx == 8 || n >= 128 || n == 0) {
		warnx("--capture-range: %s", ro->nnvtx == 8 ? "at most 8 NVTX "
		    "ranges" : "an NVTX range name has 1 to 127 bytes");
		exit(2);
	}
	ro->nvtx[ro->nnvtx].name = strndup(name, n);
	ro->nvtx[ro->nnvtx++].count = (int)count;
}

/* --dump-on SIGUSR1 | api | exit */
static void
dump_on(struct ist_record_opts *ro, const char *v)
{
	if (strcmp(v, "SIGUSR1") == 0 || strcmp(v, "USR1") == 0)
		ro->dump_on |= IST_DUMP_ON_SIGNAL;
	else if (strcmp(v, "api") == 0)
		ro->dump_on |= IST_DUMP_ON_API;
	else if (strcmp(v, "exit") == 0)
		ro->dump_on |= IST_DUMP_ON_EXIT;
	else {
		warnx("--dump-on: '%s' is not SIGUSR1, api or exit", v);
		exit(2);
	}
}

/* The options, into o and (those with settings) into cfg from the CLI. */
static void
parse_args(int argc, char **argv, struct ist_config *cfg, struct args *o,
    struct ist_record_opts *ro)
{
	static const struct option opts[] = {
		{ "capture-range", required_argument, NULL, 'c' },
		{ "delay", required_argument, NULL, 'd' },
		{ "dump-on", required_argument, NULL, 'u' },
		{ "duration", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "no-gpu", no_argument, NULL, 'G' },
		{ "no-python", no_argument, NULL, 'P' },
		{ "no-python-calls", no_argument, NULL, 'C' },
		{ "no-sample", no_argument, NULL, 'S' },
		{ "output", required_argument, NULL, 'o' },
		{ "py-min-us", required_argument, NULL, 'm' },
		{ "recover", required_argument, NULL, 'r' },
		{ "ring", no_argument, NULL, 'R' },
		{ "sample-hz", required_argument, NULL, 'z' },
		{ "trace-size-mb", required_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	*o = (struct args){ 0 };
	while ((c = getopt_long(argc, argv, "+ho:V", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			help();
			exit(0);
		case 'c':
			capture_range(ro, optarg);
			break;
		case 'd':
			ro->delay_ns = tool_seconds("--delay", optarg);
			break;
		case 'D':
			ro->duration_ns = tool_seconds("--duration", optarg);
			if (ro->duration_ns == 0) {
				warnx("--duration: must be more than 0");
				exit(2);
			}
			break;
		case 'u':
			dump_on(ro, optarg);
			o->ring = true;
			break;
		case 'L':
			set(cfg, "log_level", optarg, IST_SRC_CLI,
			    "--log-level");
			break;
		case 'G':
			o->no_gpu = true;
			break;
		case 'P':
			o->no_python = true;
			break;
		case 'S':
			o->no_sample = true;
			break;
		case 'C':
			o->no_calls = true;
			break;
		case 'R':
			o->ring = true;
			break;
		case 'o':
			o->outpath = optarg;
			break;
		case 'r':
			o->recover = optarg;
			break;
		case 'm':
			set(cfg, "py_min_us", optarg, IST_SRC_CLI,
			    "--py-min-us");
			break;
		case 'z':
			set(cfg, "sample_hz", optarg, IST_SRC_CLI,
			    "--sample-hz");
			break;
		case 't':
			set(cfg, "trace_size_mb", optarg, IST_SRC_CLI,
			    "--trace-size-mb");
			break;
		case 'V':
			tool_version();
			exit(0);
		default:
			fprintf(stderr, "%s", usage);
			exit(2);
		}
	}
	if (o->recover && optind < argc) {
		warnx("--recover takes no command");
		fprintf(stderr, "%s", usage);
		exit(2);
	}
	if (ro->delay_ns && (ro->capture_api || ro->nnvtx)) {
		warnx("--delay and --capture-range cannot be combined: a "
		    "capture range starts recording itself");
		exit(2);
	}
	if (!o->recover && optind == argc) {
		warnx("no command to run");
		fprintf(stderr, "%s", usage);
		exit(2);
	}
}

int
main(int argc, char **argv)
{
	static struct ist_config cfg;   /* static: alive until exit */
	static struct ist_record_opts ro;
	struct ist_output out;
	struct later lat;
	struct ist_error e = { 0 };
	struct args o;
	const char *lv;
	int status;
	enum ist_status st;

	argv[0] = program_invocation_short_name;
	ist_config_init(&cfg);
	parse_args(argc, argv, &cfg, &o, &ro);
	if (o.recover)
		return recover_to(o.recover, o.outpath);
	tool_settings(&cfg, NULL, NULL);
	lv = ist_config_str(&cfg, IST_K_LOG_LEVEL);
	log_level = !strcmp(lv, "debug") ? 0 : !strcmp(lv, "info") ? 1 :
	    !strcmp(lv, "warn") ? 2 : 3;

	say_settings(&cfg);
	ro.argv = argv + optind;
	ro.ring = o.ring;
	ro.trace_size_mb = ist_config_int(&cfg, IST_K_TRACE_SIZE_MB);
	ro.py_min_us = ist_config_int(&cfg, IST_K_PY_MIN_US);
	ro.sample_hz = o.no_sample ? 0 : (int)ist_config_int(&cfg,
	    IST_K_SAMPLE_HZ);
	ro.log_level = lv;
	ro.py_calls = !o.no_calls;
	/* a machine's /sys stand-in, for the tests of NUMA sampling */
	ro.sysfs = getenv("INFERSCOPE_SYSFS_ROOT");
	find_collectors(&ro, o.no_python, o.no_gpu);

	/* a file is created once the command has ended (a recorder killed
	 * before leaves no empty one); that it can be is checked now */
	if (ist_output_open(&out, o.outpath, true, &e) != IST_OK)
		errx(1, "%s", e.msg);
	ro.out_name = o.outpath && strcmp(o.outpath, "-") != 0 ? o.outpath :
	    NULL;
	if (out.tmp) {
		ist_output_abort(&out);
		ro.open_out = open_out;
		lat = (struct later){ &out, o.outpath };
		ro.open_ctx = &lat;
	}
	st = ist_record_run(&ro, ro.open_out ? -1 : out.fd, &status, note,
	    NULL, &e);
	if (st != IST_OK) {
		warnx("%s", ist_output_fail(&out, &e));
		status = status ? status : 1;
	} else if (ist_output_commit(&out, &e) != IST_OK) {
		warnx("%s", e.msg);
		status = status ? status : 1;
	}
	ist_config_release(&cfg);
	free((char *)ro.pydir);
	free((char *)ro.nvtx_lib);
	free((char *)ro.cupti_lib);
	for (int i = 0; i < ro.nnvtx; i++)
		free((char *)ro.nvtx[i].name);
	return status;
}
