/* stream.c - an agent's output file, kept whatever the program does to
 * its file descriptors (stream.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ist.h"
#include "stream.h"

/*
 * Our descriptor is put high, away from 0..2 and the low numbers a
 * program opens and expects (a daemon that closed everything and opens
 * /dev/null as its stdin); where the limit is lower, anywhere above 2.
 */
static int
move_high(int fd)
{
	static const int floor[] = { 512, 3 };

	if (fd >= floor[0])
		return fd;
	for (size_t i = 0; i < sizeof(floor) / sizeof(floor[0]); i++) {
		int h = fcntl(fd, F_DUPFD_CLOEXEC, floor[i]);
		if (h >= 0) {
			close(fd);
			return h;
		}
	}
	return fd;
}

static bool
same_file(int fd, struct ist_stream *s)
{
	struct stat st;

	/* unlinked, it is no longer where is-record reads */
	if (fstat(fd, &st) != 0 || st.st_dev != s->dev ||
	    st.st_ino != s->ino || st.st_nlink == 0)
		return false;
	s->size = st.st_size;
	return true;
}

int
ist_stream_open(struct ist_stream *s, const char *path, bool append)
{
	struct stat st;
	int fd;

	s->fd = -1;
	s->reopened = 0;
	snprintf(s->path, sizeof(s->path), "%s", path);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC |
	    (append ? O_APPEND : O_TRUNC), 0600);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return e;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->fd = move_high(fd);
	return 0;
}

/* The stream's descriptor, opened again by its path when the program
 * took ours; -1 (errno set) when the file is gone or was replaced. */
static int
stream_fd(struct ist_stream *s)
{
	int fd;

	if (s->fd >= 0 && same_file(s->fd, s))
		return s->fd;
	s->fd = -1;             /* closed, or someone else's now */
	/* appended to: what was written stays, later frames follow it; no
	 * O_CREAT, a stream deleted under us is not started headless */
	if ((fd = open(s->path, O_WRONLY | O_APPEND | O_CLOEXEC)) < 0)
		return -1;
	if (!same_file(fd, s)) {
		close(fd);
		errno = ESTALE;
		return -1;
	}
	s->fd = move_high(fd);
	s->reopened++;
	return s->fd;
}

int
ist_stream_sink(void *ctx, const void *buf, size_t n)
{
	struct ist_stream *s = ctx;
	const char *p = buf;
	int fd = stream_fd(s), again = 0;

	off_t was = s->size;

	while (n > 0) {
		ssize_t k;
		int e;
		if (fd < 0)
			return errno ? errno : EBADF;
		if ((k = write(fd, p, n)) >= 0) {
			p += k;
			n -= (size_t)k;
			continue;
		}
		if ((e = errno) == EINTR)
			continue;
		/* taken between the check and the write: once more, from
		 * where it stopped */
		if (e == EBADF && !again++) {
			fd = stream_fd(s);
			continue;
		}
		if (p != buf && fd >= 0)
			(void)!ftruncate(fd, was);   /* no half frame */
		return e;
	}
	return 0;
}

int
ist_stream_close(struct ist_stream *s)
{
	int e = 0;

	if (s->fd >= 0 && same_file(s->fd, s) && close(s->fd) != 0)
		e = errno;
	s->fd = -1;
	return e;
}

/*
 * Events that could not be written, said where is-record looks: a line
 * "EVENTS REASON" in <pid>.lost beside the stream, which it turns into a
 * loss record and a warning, so that the loss is stated even when the
 * program closed its stderr too.
 */
void
ist_stream_lost(const struct ist_stream *s, uint64_t n, const char *why)
{
	char path[sizeof(s->path) + 8], line[600];
	size_t k = strlen(s->path);
	int fd, len;

	if (k < 4 || strcmp(s->path + k - 4, ".ist") != 0)
		return;
	snprintf(path, sizeof(path), "%.*s.lost", (int)(k - 4), s->path);
	len = snprintf(line, sizeof(line), "%llu %s\n", (unsigned long long)n,
	    why);
	if (len >= (int)sizeof(line)) {
		len = (int)sizeof(line) - 1;
		line[len - 1] = '\n';
	}
	if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0600)) >= 0) {
		ist_fd_sink(&fd, line, (size_t)len);
		close(fd);
	}
}

uint64_t
ist_env_budget(void)
{
	const char *mb = getenv("INFERSCOPE_TRACE_SIZE_MB");
	long long v = mb ? atoll(mb) : 0;

	return (uint64_t)(v > 0 && v < (1ll << 40) ? v : 100) << 20;
}

bool
ist_env_sample(void)
{
	const char *r = getenv("INFERSCOPE_SAMPLE");

	return r != NULL && strcmp(r, "1") == 0;
}

bool
ist_env_ring(void)
{
	const char *r = getenv("INFERSCOPE_RING");

	return r != NULL && strcmp(r, "1") == 0;
}

struct ist_frame {
	size_t n;
	uint64_t said;
	uint64_t events;
	int64_t t0;
	uint8_t data[];
};

/*
 * A kept frame's pages: mapped for it, and unmapped when it is forgotten,
 * so that its memory is the process's exactly while it is kept (held):
 * malloc's threshold for mapping rises to the size of a block freed, and
 * frames of the same size were then carved from a heap that kept what was
 * freed.
 */
static size_t
frame_size(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct ist_frame) + n + page - 1) & ~(page - 1);
}

static void
frame_free(struct ist_flight *fl, struct ist_frame *f)
{
	size_t size = frame_size(f->n);

	fl->held -= size;
	munmap(f, size);
}

int
ist_flight_keep(struct ist_flight *fl, const void *buf, size_t n,
    uint64_t events, int64_t t0)
{
	struct ist_frame *f = mmap(NULL, frame_size(n), PROT_READ |
	    PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (f == MAP_FAILED)
		return ENOMEM;
	fl->held += frame_size(n);
	f->n = n;
	f->said = fl->said;
	f->t0 = t0;
	f->events = events - fl->events_seen;
	fl->events_seen = events;
	memcpy(f->data, buf, n);
	if (fl->first + fl->n == fl->cap) {
		if (fl->first > 0) {
			memmove(fl->f, fl->f + fl->first, fl->n * sizeof(*fl->f));
			fl->first = 0;
		} else {
			size_t cap = fl->cap ? fl->cap * 2 : 64;
			struct ist_frame **nf = realloc(fl->f,
			    cap * sizeof(*nf));
			if (nf == NULL) {
				frame_free(fl, f);
				return ENOMEM;
			}
			fl->f = nf;
			fl->cap = cap;
		}
	}
	fl->f[fl->first + fl->n++] = f;
	fl->bytes += n;
	while (fl->bytes > fl->cap_bytes && fl->n > 1) {
		struct ist_frame *old = fl->f[fl->first++];
		fl->n--;
		fl->bytes -= old->n;
		fl->lost += old->events;
		frame_free(fl, old);
	}
	return 0;
}

int
ist_flight_write(struct ist_flight *fl, struct ist_stream *s,
    uint64_t *events, uint64_t *lost, int64_t *from)
{
	int64_t t0 = INT64_MAX;
	int e = 0;

	/* the window: from its oldest event, never before the last dump */
	for (size_t i = 0; i < fl->n; i++)
		if (fl->f[fl->first + i]->t0 < t0)
			t0 = fl->f[fl->first + i]->t0;
	if (fl->dumped && (t0 == INT64_MAX || t0 < fl->dump_at))
		t0 = fl->dump_at;
	*lost = fl->lost;
	*from = (fl->lost && t0 != INT64_MAX) ? t0 : fl->dumped ?
	    fl->dump_at : INT64_MIN;
	fl->lost = 0;
	fl->said = fl->n ? fl->f[fl->first]->said : 0;
	for (size_t i = 0; i < fl->n; i++) {
		struct ist_frame *f = fl->f[fl->first + i];
		if (e == 0 && (e = ist_stream_sink(s, f->data, f->n)) == 0)
			*events += f->events;
	}
	ist_flight_release(fl);
	return e;
}

void
ist_flight_resume(struct ist_flight *fl, int64_t at)
{
	fl->dumped = true;
	fl->dump_at = at;
}

void
ist_flight_release(struct ist_flight *fl)
{
	for (size_t i = 0; i < fl->n; i++)
		frame_free(fl, fl->f[fl->first + i]);
	free(fl->f);
	fl->f = NULL;
	fl->n = fl->first = fl->cap = 0;
	fl->bytes = 0;
}
