/* common.c - what every tool's main() does alike (common.h). */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis_io.h"
#include "rules.h"
#include "common.h"
#include "ist.h"

void
tool_version(void)
{
	printf("%s %s (trace format %d.%d)\n", program_invocation_short_name,
	    IST_PACKAGE_VERSION, IST_VERSION_MAJOR, IST_VERSION_MINOR);
}

void
tool_settings(struct ist_config *cfg, struct ist_rules **rules,
    const char *rules_file)
{
	struct ist_error e;

	for (int k = 0; k < IST_NKEYS; k++) {
		const char *env = ist_config_env_name(k), *v;
		if (env && (v = getenv(env)) != NULL && *v &&
		    ist_config_set(cfg, ist_config_key_name(k), v,
		    IST_SRC_ENV, NULL, &e) != IST_OK)
			errx(2, "%s: %s", env, e.msg);
	}
	if (ist_config_load_file(cfg, ".inferscope.yaml", true, &e) != IST_OK)
		errx(2, "%s", e.msg);
	if (rules == NULL)
		return;
	if ((*rules = ist_rules_new()) == NULL)
		errx(1, "out of memory");
	if (ist_rules_configure(*rules, cfg, rules_file, &e) != IST_OK)
		errx(2, "%s", e.msg);
}

int
tool_open_input(const char *path)
{
	int fd;

	if (strcmp(path, "-") == 0)
		return STDIN_FILENO;
	if ((fd = open(path, O_RDONLY)) < 0)
		err(1, "cannot open '%s'", path);
	return fd;
}

int64_t
tool_seconds(const char *opt, const char *v)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (end == v || *end != '\0' || errno || !(d >= 0) || d > 1e9) {
		warnx("%s: '%s' is not a number of seconds", opt, v);
		exit(2);
	}
	/* rounded: 1.001 s is 1001000000 ns, though 1.001 * 1e9 is a hair
	 * under it in binary (as for 2% of millisecond values) */
	return llround(d * 1e9);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void
tool_progress_start(struct tool_progress *p, int fd, bool quiet)
{
	struct stat sb;

	*p = (struct tool_progress){ 0 };
	p->fd = fd;
	p->on = !quiet && isatty(STDERR_FILENO);
	if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode))
		p->total = (uint64_t)sb.st_size;
	p->t0 = now();
}

#define PROGRESS_MIN (4u << 20)

void
tool_progress_show(struct tool_progress *p, uint64_t at, uint64_t total,
    uint64_t events)
{
	double t, rate, left;
	char line[160];
	int n;

	if (!p->on)
		return;
	if (total == 0)
		total = p->total;
	if (at == 0 || (total ? total : at) < PROGRESS_MIN)
		return;
	t = now();
	if (p->shown && t - p->last < 0.25)
		return;
	p->last = t;
	p->shown = true;
	rate = t > p->t0 ? (double)events / (t - p->t0) : 0;
	if (total && at <= total) {
		left = at > 0 ? (t - p->t0) * (double)(total - at) / (double)at :
		    0;
		n = snprintf(line, sizeof(line), "%s: %3.0f%% %.1f of %.1f MiB, "
		    "%.2f M events/s, %.0f s left", program_invocation_short_name,
		    100.0 * (double)at / (double)total, (double)at / 1048576.0,
		    (double)total / 1048576.0, rate / 1e6, left);
	} else {
		n = snprintf(line, sizeof(line), "%s: %.1f MiB read, %.2f M "
		    "events/s", program_invocation_short_name,
		    (double)at / 1048576.0, rate / 1e6);
	}
	/* the line redrawn in place, what was longer erased */
	fprintf(stderr, "\r%.*s\033[K", n, line);
	fflush(stderr);
}

void
tool_progress_end(struct tool_progress *p)
{
	if (p->shown) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
		p->shown = false;
	}
}

long
tool_progress_source(void *ctx, void *buf, size_t n)
{
	struct tool_progress *p = ctx;
	long k = p->spool ? tool_spool_source(p->spool, buf, n) :
	    ist_fd_source(&p->fd, buf, n);

	/* read ahead, this runs on the reader's other thread: the figures
	 * any thread may ask for (where the frame being decoded starts) */
	if (p->r && p->on) {
		uint64_t at, events;
		ist_reader_progress(p->r, &at, &events);
		tool_progress_show(p, at, 0, events);
	}
	return k;
}

void
tool_spool_init(struct tool_spool *s, int fd, bool keep)
{
	const char *dir = getenv("TMPDIR");
	off_t at = lseek(fd, 0, SEEK_CUR);

	s->in = fd;
	s->start = at;
	s->keep = at < 0 && keep ? open(dir && *dir ? dir : "/tmp",
	    O_TMPFILE | O_RDWR | O_CLOEXEC, 0600) : -1;
	atomic_init(&s->written, 0);
	atomic_init(&s->ended, false);
	atomic_init(&s->broken, false);
	atomic_init(&s->quit, false);
}

void
tool_spool_quit(struct tool_spool *s)
{
	atomic_store(&s->quit, true);
}

long
tool_spool_source(void *ctx, void *buf, size_t n)
{
	struct tool_spool *s = ctx;
	int keep = s->keep;
	long k;

	/* a pipe: waited on a tenth of a second at a time, for quit */
	while (s->start < 0) {
		struct pollfd p = { s->in, POLLIN, 0 };
		if (atomic_load(&s->quit)) {
			errno = ECANCELED;
			return -1;
		}
		if (poll(&p, 1, 100) != 0)
			break;       /* bytes, an end or an error: read says */
	}
	k = ist_fd_source(&s->in, buf, n);

	if (k > 0 && keep >= 0 && !atomic_load(&s->broken)) {
		if (ist_fd_sink(&keep, buf, (size_t)k) != 0)
			/* no room: no second reading (the copy stays open
			 * for a reader that may be at it) */
			atomic_store(&s->broken, true);
		else
			atomic_fetch_add_explicit(&s->written, (uint64_t)k,
			    memory_order_release);
	}
	if (k <= 0)
		atomic_store_explicit(&s->ended, true, memory_order_release);
	return k;
}

int
tool_spool_again(void *ctx)
{
	struct tool_spool *s = ctx;

	if (s->keep >= 0)
		return !atomic_load(&s->broken) && lseek(s->keep, 0,
		    SEEK_SET) == 0 ? dup(s->keep) : -1;
	if (s->start >= 0 && lseek(s->in, (off_t)s->start, SEEK_SET) ==
	    (off_t)s->start)
		return dup(s->in);
	return -1;
}

int
tool_spool_follow(void *ctx, uint64_t *base)
{
	struct tool_spool *s = ctx;

	*base = s->keep >= 0 ? 0 : (uint64_t)s->start;
	if (s->keep < 0 && s->start < 0)
		return -1;
	return fcntl(s->keep >= 0 ? s->keep : s->in, F_DUPFD_CLOEXEC, 0);
}

long
tool_spool_more(void *ctx, uint64_t off)
{
	struct tool_spool *s = ctx;
	bool ended;
	uint64_t w;

	if (s->keep < 0)         /* a file: all there */
		return s->start >= 0 ? LONG_MAX : -1;
	ended = atomic_load_explicit(&s->ended, memory_order_acquire);
	w = atomic_load_explicit(&s->written, memory_order_acquire);
	if (atomic_load(&s->broken))
		return -1;
	if (w > off)
		return w - off > LONG_MAX ? LONG_MAX : (long)(w - off);
	return ended ? 0 : IST_AGAIN_LATER;
}

void
tool_spool_release(struct tool_spool *s)
{
	if (s->keep >= 0)
		close(s->keep);
	s->keep = -1;
}
