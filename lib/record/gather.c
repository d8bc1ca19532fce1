/* gather.c - the collectors' streams into is-record's output: their
 * stored frames compressed, after the run and, beside it, while it runs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "record_int.h"

/*
 * The collectors store their live frames uncompressed (the CPU is the
 * traced program's); they are compressed here: at level 1, the level they
 * were written at before, each frame on its own, so that the cores share
 * them and a frame squeezed while the program runs comes out as it would
 * after: the same bytes however many cores there are and whenever it is
 * done.  A stored frame is one no smaller than its content.  Anything that
 * does not decompress whole goes out as it came: readers tell what is
 * wrong with it.
 */
#define SQUEEZERS 8

struct squeeze {
	ZSTD_CCtx *c;
	ZSTD_DCtx *d;
	struct ist_buf raw, out;
	const uint8_t *f;       /* the frame, k bytes */
	size_t k;
	size_t n;               /* its compressed size in out; 0: copy f */
	pthread_t t;
	bool threaded;          /* squeezed on thread t */
};

/* z->f compressed into z->out, z->n its size, or 0 to copy it. */
static void *
squeeze(void *arg)
{
	struct squeeze *z = arg;
	unsigned long long n = ZSTD_getFrameContentSize(z->f, z->k);
	size_t r;

	z->n = 0;
	if (n == ZSTD_CONTENTSIZE_UNKNOWN || n == ZSTD_CONTENTSIZE_ERROR ||
	    n > IST_MAX_FRAME || z->k < n)
		return NULL;
	if (z->c == NULL) {
		if ((z->c = ZSTD_createCCtx()) == NULL ||
		    (z->d = ZSTD_createDCtx()) == NULL)
			return NULL;
		ZSTD_CCtx_setParameter(z->c, ZSTD_c_compressionLevel, 1);
		ZSTD_CCtx_setParameter(z->c, ZSTD_c_checksumFlag, 1);
	}
	if (ist_buf_reserve(&z->raw, n ? n : 1) ||
	    ist_buf_reserve(&z->out, ZSTD_compressBound(n)))
		return NULL;
	r = ZSTD_decompressDCtx(z->d, z->raw.p, z->raw.cap, z->f, z->k);
	if (ZSTD_isError(r) || r != n)
		return NULL;
	r = ZSTD_compress2(z->c, z->out.p, z->out.cap, z->raw.p, n);
	if (!ZSTD_isError(r) && r < z->k)
		z->n = r;
	return NULL;
}

static void
squeeze_free(struct squeeze *z)
{
	ZSTD_freeCCtx(z->c);
	ZSTD_freeDCtx(z->d);
	ist_buf_release(&z->raw);
	ist_buf_release(&z->out);
}

/* ---- ahead: while the program runs ---- */

/*
 * A thread of is-record's own squeezes the frames the collectors have
 * finished into <stream>.sq beside each stream, while the program runs,
 * at the lowest priority there is (SCHED_IDLE: only on a core the program
 * and everything else leave idle).  After the run, gather() copies that
 * and squeezes only the frames it had not reached: the trace is written
 * soon after the program ends, however long it ran.
 *
 * While the streams grow it looks every 2 ms (a look is a few system
 * calls at the lowest priority): looking every 20 ms left the frames of
 * the last 20 ms to the end, 4.8 MB after fib(30), 12 of the 20 ms between
 * the program's end and the trace's.  inotify would wake it as a frame is
 * written, but closing it waits for the kernel's RCU grace period, 5 to
 * 25 ms here, even with its watch removed first, and is-record cannot
 * exit before.
 *
 * A stream is only ever appended to (stream.c), and only whole frames are
 * squeezed ahead; gather() checks the stream is the same file and, frame by
 * frame, that it is no shorter and ends each frame squeezed with the same
 * 4 bytes (with the content checksum every collector writes, a frame's
 * own): it copies the frames that hold, from the first, and squeezes the
 * rest from the stream.
 *
 * Each frame squeezed is noted in <stream>.sqi (where it ends in the stream
 * and in the copy, and its last 4 bytes), and then the stream's blocks
 * inside it are given back to the file system (a hole punched, its last
 * block kept for the check): the streams had taken about 13 bytes a call
 * of the temporary directory's disk for the whole run, four to eight times
 * the trace, and freeing them all at the end took 2.6 ms of fib(30)'s.  A
 * gathering without this thread (is-record --recover, after an is-record
 * that was killed) reads the notes from the .sqi.  Where the copy cannot
 * be used for a frame whose blocks were given back, that frame is lost,
 * and said.  The streams come first: where their file system has less
 * than AHEAD_ROOM left, no more copies are made, and those made are
 * deleted unless blocks were given back (then they take less than what
 * they freed).
 */
#define AHEAD_MS 2              /* between looks, while there is work */
#define AHEAD_IDLE_MS 500       /* at most, while there is none */
#define AHEAD_STREAMS 4096
#define AHEAD_ROOM (256u << 20)
#define AHEAD_CHUNK (8u << 20)  /* read at a time */
#define GATHER_FRAME ((1u << 20) + (64u << 10)) /* a collector's, stored */
#define GATHER_GROW (16u << 20) /* the window, grown to hold nz frames */

struct mark {                   /* a frame squeezed ahead */
	uint64_t end;           /* its end in the stream */
	uint64_t sq_end;        /* its end in <stream>.sq */
	uint8_t last[4];        /* its last bytes */
	uint8_t pad[4];         /* 0: a .sqi entry is a mark, 24 bytes */
};
_Static_assert(sizeof(struct mark) == 24, "a .sqi entry is 24 bytes");

struct early {                  /* a stream */
	char *name;
	dev_t dev;
	ino_t ino;
	uint64_t done;          /* stream bytes squeezed, whole frames */
	uint64_t sq_len;        /* their bytes in <name>.sq */
	struct mark *m;
	size_t nm, capm;
	bool broken;            /* squeezed ahead no further */
	bool no_punch;          /* its blocks cannot be given back */
	bool punched;           /* some were: its copy holds them alone */
};

struct rec_ahead {
	char *dir;
	pthread_t t;
	pthread_mutex_t mu;
	int wake;                       /* eventfd: stop asked (poll's
	                                 * timeouts are the monotonic
	                                 * clock's, unlike a condition
	                                 * variable's by default) */
	/* under mu: the thread changes what gather() reads (the streams'
	 * state) only under it and while stop is false; done, it has left
	 * its loop and touches nothing of this again; abandoned, it frees
	 * all as it ends */
	bool stop, done, abandoned;
	struct timespec dir_mtime;      /* the listing last read */
	unsigned passes;
	struct early *e;
	size_t ne, cape;
	struct squeeze z;
	struct ist_buf buf;             /* a stream's bytes, read */
};

static void ahead_release(struct rec_ahead *a);

static bool
stop_asked(struct rec_ahead *a)
{
	bool stop;

	pthread_mutex_lock(&a->mu);
	stop = a->stop;
	pthread_mutex_unlock(&a->mu);
	return stop;
}

static struct early *
early_of(struct rec_ahead *a, const char *name)
{
	struct early *e;

	for (size_t i = 0; i < a->ne; i++)
		if (strcmp(a->e[i].name, name) == 0)
			return &a->e[i];
	if (a->ne == AHEAD_STREAMS ||
	    ist_room((void **)&a->e, &a->cape, a->ne, sizeof(*a->e)))
		return NULL;
	e = &a->e[a->ne];
	*e = (struct early){ .name = strdup(name) };
	if (e->name == NULL)
		return NULL;
	a->ne++;
	return e;
}

/* The copy of the stream at path, <stream>.sq, or with notes its notes,
 * <stream>.sqi, into out */
static void
sq_path(char *out, size_t n, const char *path, bool notes)
{
	snprintf(out, n, "%s.sq%s", path, notes ? "i" : "");
}

/* Squeezing ahead of e ends: gather() does the rest.  Its copy goes,
 * and gather() does it all, unless blocks were given back: those frames
 * are only there (once stopped, gather() has what it needs: nothing
 * changes). */
static void
give_up(struct rec_ahead *a, struct early *e)
{
	char path[4400], copy[4404];

	pthread_mutex_lock(&a->mu);
	if (!a->stop && !e->punched) {
		snprintf(path, sizeof(path), "%s/%s", a->dir, e->name);
		sq_path(copy, sizeof(copy), path, false);
		unlink(copy);
		sq_path(copy, sizeof(copy), path, true);
		unlink(copy);
		e->nm = 0;
	}
	if (!a->stop)
		e->broken = true;
	pthread_mutex_unlock(&a->mu);
}

/* Gives back the blocks of the stream (open as fd) wholly inside the
 * frame [from, end), but its last, which holds the bytes gather()
 * checks: 1 when it did, 0 when there were none, -1 where the file
 * system cannot. */
static int
punch(int fd, uint64_t from, uint64_t end)
{
	uint64_t b = 4096, lo = (from + b - 1) / b * b, hi = (end - 4) / b * b;

	if (hi <= lo)
		return 0;
	return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	    (off_t)lo, (off_t)(hi - lo)) == 0 ? 1 : -1;
}

/* The frame at f (k bytes), squeezed, onto e's copy (open as fd) and
 * noted in its .sqi (open as fi), then its blocks in the stream (open as
 * st) given back: true when it is there for gather(), false when it could
 * not be written (e given up) or the thread was stopped meanwhile
 * (gather() reads no further than before it, and the stream keeps it). */
static bool
ahead_put(struct rec_ahead *a, struct early *e, int fd, int fi, int st,
    const uint8_t *f, size_t k)
{
	struct mark m = { .end = e->done + k };
	bool kept = false;

	a->z.f = f;
	a->z.k = k;
	squeeze(&a->z);
	m.sq_end = e->sq_len + (a->z.n ? a->z.n : k);
	memcpy(m.last, f + k - 4, 4);
	if ((a->z.n ? ist_fd_sink(&fd, a->z.out.p, a->z.n) :
	    ist_fd_sink(&fd, f, k)) || ist_fd_sink(&fi, &m, sizeof(m))) {
		/* the copy, or its notes, end with a frame not counted */
		give_up(a, e);
		return false;
	}
	pthread_mutex_lock(&a->mu);
	if (!a->stop && ist_room((void **)&e->m, &e->capm, e->nm,
	    sizeof(*e->m))) {
		pthread_mutex_unlock(&a->mu);
		give_up(a, e);
		return false;
	}
	if (!a->stop) {
		e->m[e->nm++] = m;
		e->sq_len = m.sq_end;
		e->done = m.end;
		kept = true;
	}
	pthread_mutex_unlock(&a->mu);
	/* counted: gather() copies it whatever the stream holds there */
	if (kept && !e->no_punch) {
		int p = st < 0 ? -1 : punch(st, m.end - k, m.end);
		if (p > 0) {
			pthread_mutex_lock(&a->mu);
			e->punched = true;
			pthread_mutex_unlock(&a->mu);
		}
		e->no_punch = p < 0;
	}
	return kept;
}

/* The length of the zstd frame at p (n bytes there) in *k: 1 when it is
 * whole, 0 when it runs past them, -1 when p holds no frame. */
static int
frame_len(const void *p, size_t n, size_t *k)
{
	*k = ZSTD_findFrameCompressedSize(p, n);
	if (!ZSTD_isError(*k))
		return 1;
	return ZSTD_getErrorCode(*k) == ZSTD_error_srcSize_wrong ? 0 : -1;
}

/* Up to want bytes of fd from at into b (b->n: how many), read rather
 * than mapped: a stream cut under a mapping would kill us (SIGBUS).
 * 0 or an errno value. */
static int
read_at(int fd, struct ist_buf *b, size_t want, uint64_t at)
{
	b->n = 0;
	if (ist_buf_reserve(b, want))
		return ENOMEM;
	while (b->n < want) {
		ssize_t k = pread(fd, b->p + b->n, want - b->n,
		    (off_t)(at + b->n));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? errno : 0;
		b->n += (size_t)k;
	}
	return 0;
}

/* The whole frames of stream e written since the last look; the number
 * squeezed. */
static int
ahead_stream(struct rec_ahead *a, struct early *e)
{
	char path[4400], copy[4404];
	struct statvfs vfs;
	struct stat st;
	size_t n, chunk = AHEAD_CHUNK;
	int fd, sq = -1, fi = -1, st_w = -1, got = 0;

	snprintf(path, sizeof(path), "%s/%s", a->dir, e->name);
	/* written to only to give its blocks back (ahead_put) */
	if (!e->no_punch && (fd = open(path, O_RDWR | O_CLOEXEC)) >= 0)
		st_w = fd;
	else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	if (fstat(fd, &st) != 0 || (e->nm > 0 && (st.st_dev != e->dev ||
	    st.st_ino != e->ino)) || (uint64_t)st.st_size < e->done) {
		close(fd);
		give_up(a, e);          /* replaced, or cut: after the run */
		return 0;
	}
	n = (size_t)st.st_size;
	if (n - e->done < 4096) {       /* nothing whole yet */
		close(fd);
		return 0;
	}
	if (fstatvfs(fd, &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < AHEAD_ROOM) {
		close(fd);
		give_up(a, e);
		return 0;
	}
	pthread_mutex_lock(&a->mu);
	if (!a->stop) {
		e->dev = st.st_dev;
		e->ino = st.st_ino;
	}
	pthread_mutex_unlock(&a->mu);
	sq_path(copy, sizeof(copy), path, false);
	sq = open(copy, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	sq_path(copy, sizeof(copy), path, true);
	if (sq < 0 || (fi = open(copy, O_WRONLY | O_CREAT | O_APPEND |
	    O_CLOEXEC, 0600)) < 0) {
		if (sq >= 0)
			close(sq);
		close(fd);
		give_up(a, e);
		return 0;
	}
	/* a chunk at a time; one that holds no whole frame is read again
	 * bigger, up to the largest frame there can be */
	while (e->done < n && !e->broken && !stop_asked(a)) {
		size_t want = n - e->done < chunk ? n - e->done : chunk, off = 0;
		if (read_at(fd, &a->buf, want, e->done) != 0)
			break;
		while (off < a->buf.n && !stop_asked(a)) {
			const uint8_t *f = (const uint8_t *)a->buf.p + off;
			size_t k;
			int whole = frame_len(f, a->buf.n - off, &k);
			if (whole < 0) {
				give_up(a, e);  /* not a frame: after */
				break;
			}
			if (whole == 0 || k < 4)
				break;          /* not whole yet */
			if (!ahead_put(a, e, sq, fi, st_w, f, k))
				break;
			off += k;
			got++;
		}
		if (off == 0) {         /* being written, or bigger */
			if (a->buf.n < want || want == n - e->done ||
			    chunk >= 2 * (size_t)IST_MAX_FRAME)
				break;
			chunk *= 2;
		}
	}
	close(fi);
	close(sq);
	close(fd);
	return got;
}

int
rec_is_stream(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return n > 4 && strcmp(d->d_name + n - 4, ".ist") == 0 &&
	    strcmp(d->d_name, "sampler.ist") != 0;
}

/* One look at every stream; the frames squeezed. */
static int
ahead_pass(struct rec_ahead *a)
{
	struct stat st;
	int got = 0;

	/* new streams: the directory's listing, when it changed, and every
	 * 16th look (a file made in the same tick as the last listing
	 * leaves the time as it was) */
	if (stat(a->dir, &st) == 0 && (a->passes++ % 16 == 0 ||
	    st.st_mtim.tv_sec != a->dir_mtime.tv_sec ||
	    st.st_mtim.tv_nsec != a->dir_mtime.tv_nsec)) {
		struct dirent **names = NULL;
		int nn = scandir(a->dir, &names, rec_is_stream, NULL);
		a->dir_mtime = st.st_mtim;
		pthread_mutex_lock(&a->mu);
		for (int i = 0; i < nn; i++) {
			if (!a->stop)
				(void)early_of(a, names[i]->d_name);
			free(names[i]);
		}
		pthread_mutex_unlock(&a->mu);
		free(names);
	}
	for (size_t i = 0; i < a->ne && !stop_asked(a); i++)
		if (!a->e[i].broken)
			got += ahead_stream(a, &a->e[i]);
	return got;
}

static void *
ahead_main(void *arg)
{
	struct rec_ahead *a = arg;
	struct sched_param sp = { 0 };
	struct pollfd pf = { .fd = a->wake, .events = POLLIN };
	long ms = AHEAD_MS;
	bool abandoned;

	(void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	pthread_mutex_lock(&a->mu);
	while (!a->stop) {
		pthread_mutex_unlock(&a->mu);
		(void)poll(&pf, 1, (int)ms);
		pthread_mutex_lock(&a->mu);
		if (a->stop)
			break;
		pthread_mutex_unlock(&a->mu);
		/* a program that writes little is looked at less often */
		ms = ahead_pass(a) ? AHEAD_MS : ms * 2 > AHEAD_IDLE_MS ?
		    AHEAD_IDLE_MS : ms * 2;
		pthread_mutex_lock(&a->mu);
	}
	a->done = true;
	abandoned = a->abandoned;
	pthread_mutex_unlock(&a->mu);
	if (abandoned)
		ahead_release(a);
	return NULL;
}

/* The quota at one level of a cgroup hierarchy: v2's cpu.max ("max
 * 100000", or "QUOTA PERIOD"), v1's cpu.cfs_quota_us (-1: none). */
static bool
quota_at(const char *path, bool v2)
{
	char buf[64] = "";
	FILE *f = fopen(path, "re");
	bool q;

	if (f == NULL)
		return false;
	q = fgets(buf, sizeof(buf), f) != NULL && (v2 ?
	    strncmp(buf, "max", 3) != 0 : atoll(buf) > 0);
	fclose(f);
	return q;
}

/* Whether a v1 hierarchy's comma-separated controllers name "cpu". */
static bool
has_cpu(const char *ctl)
{
	for (const char *p = ctl; *p; ) {
		size_t n = strcspn(p, ",");
		if (n == 3 && strncmp(p, "cpu", 3) == 0)
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

/*
 * Whether is-record's control group, the program's, or one above them
 * has a CPU quota (a container's limit): work beside the program would
 * come out of its share, so it is all done after the run.  The groups
 * are read under sysfs (/sys).
 */
static bool
cpu_quota(const char *sysfs, char *why, size_t nwhy)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096];
	bool q = false;

	while (f != NULL && !q && fgets(line, sizeof(line), f) != NULL) {
		char *ctl = strchr(line, ':'), *path, *end, file[8400];
		bool v2;
		if (ctl == NULL || (path = strchr(ctl + 1, ':')) == NULL)
			continue;
		*ctl++ = '\0';
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		v2 = strcmp(line, "0") == 0 && *ctl == '\0';
		/* v1: the hierarchy holding the cpu controller, mounted
		 * under its controllers' names ("cpu,cpuacct") */
		if (!v2 && !has_cpu(ctl))
			continue;
		/* the group, then each above it, the root last */
		if (strcmp(path, "/") == 0)
			*path = '\0';
		for (;;) {
			snprintf(file, sizeof(file), "%s/fs/cgroup%s%s%s/%s",
			    sysfs, v2 ? "" : "/", v2 ? "" : ctl, path, v2 ?
			    "cpu.max" : "cpu.cfs_quota_us");
			if ((q = quota_at(file, v2))) {
				snprintf(why, nwhy, "%s", file);
				break;
			}
			if (*path == '\0' || (end = strrchr(path, '/')) ==
			    NULL)
				break;
			*end = '\0';
		}
	}
	if (f)
		fclose(f);
	return q;
}

struct rec_ahead *
rec_ahead_start(const char *dir, struct sampler *s)
{
	struct rec_ahead *a;
	char why[8400];

	if (cpu_quota(s->sysfs, why, sizeof(why))) {
		rec_note(s, IST_NOTE_DEBUG, "the streams are compressed after "
		    "the run: a CPU quota (%s) would share it with the program",
		    why);
		return NULL;
	}
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	if ((a->dir = strdup(dir)) == NULL) {
		free(a);
		return NULL;
	}
	pthread_mutex_init(&a->mu, NULL);
	if ((a->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    pthread_create(&a->t, NULL, ahead_main, a) != 0) {
		a->t = 0;
		rec_ahead_free(a);
		return NULL;
	}
	return a;
}

/*
 * Stops the thread: what it has squeezed is what gather() uses.  It is not
 * waited for: a frame it is squeezing, at the lowest priority, on a
 * machine busy with other work, could take a second; and so could its
 * waking from its poll to leave, which needs a core as well.
 */
void
rec_ahead_stop(struct rec_ahead *a)
{
	if (a == NULL || a->t == 0)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	(void)!eventfd_write(a->wake, 1);
	pthread_mutex_unlock(&a->mu);
}

void
rec_ahead_free(struct rec_ahead *a)
{
	if (a == NULL)
		return;
	rec_ahead_stop(a);
	if (a->t != 0) {
		/* never joined: a thread at the lowest priority that has not
		 * left its loop yet (squeezing a frame, or not yet woken from
		 * its poll) may wait long for a core on a busy machine, and
		 * the trace with it (fib(30) under a make check: 92 ms after
		 * the rest was written); it frees all as it ends.  One that
		 * has left it touches nothing of a again. */
		pthread_t t = a->t;     /* a may be gone once let go */
		bool abandoned;
		pthread_mutex_lock(&a->mu);
		abandoned = a->abandoned = !a->done;
		pthread_mutex_unlock(&a->mu);
		pthread_detach(t);
		if (abandoned)
			return;
	}
	ahead_release(a);
}

static void
ahead_release(struct rec_ahead *a)
{
	for (size_t i = 0; i < a->ne; i++) {
		free(a->e[i].name);
		free(a->e[i].m);
	}
	free(a->e);
	squeeze_free(&a->z);
	ist_buf_release(&a->buf);
	pthread_mutex_destroy(&a->mu);
	if (a->wake >= 0)
		close(a->wake);
	free(a->dir);
	free(a);
}

/* The notes of <path>.sqi (a gathering without the thread that wrote
 * them) into *m: how many hold, from the first (each ends further on, in
 * the stream and in the copy). */
static size_t
marks_read(const char *path, struct mark **m)
{
	char p[4404];
	struct stat sb;
	size_t nm = 0;
	int fd;

	*m = NULL;
	sq_path(p, sizeof(p), path, true);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	if (fstat(fd, &sb) == 0 && sb.st_size >= (off_t)sizeof(**m) &&
	    (*m = malloc((size_t)sb.st_size)) != NULL) {
		ssize_t k = pread(fd, *m, (size_t)sb.st_size, 0);
		size_t all = k > 0 ? (size_t)k / sizeof(**m) : 0;
		for (; nm < all; nm++) {
			const struct mark *x = &(*m)[nm];
			uint64_t e0 = nm ? x[-1].end : 0;
			uint64_t s0 = nm ? x[-1].sq_end : 0;
			if (x->end <= e0 || x->end - e0 < 4 ||
			    x->sq_end <= s0 || memcmp(x->pad, "\0\0\0\0", 4))
				break;
		}
	}
	close(fd);
	return nm;
}

/* Whether the stream (open as fd) has a hole in [from, end): blocks
 * given back, once squeezed */
static bool
has_hole(int fd, uint64_t from, uint64_t end)
{
	off_t h = lseek(fd, (off_t)from, SEEK_HOLE);

	return h >= 0 && (uint64_t)h < end;
}

/*
 * What was squeezed ahead of the stream at path (its name's, open as fd,
 * n bytes, its file st) copied to out, from its first frame to the last
 * that holds (noted by a, else in the .sqi beside it; in the stream still
 * no shorter, and ending with the same 4 bytes; in the copy, whole): the
 * stream offset gather() goes on from, 0 when it must do it all, or
 * (size_t)-1 with *err set when out could not be written.  Where a frame
 * after those is one whose blocks were given back, the stream ends with
 * them, and a warning says so.
 */
static size_t
ahead_out(struct rec_ahead *a, const char *path, const char *name,
    const struct stat *st, int fd, size_t n, int out, int *err,
    struct sampler *s)
{
	struct early *e = NULL;
	struct mark *m = NULL, *own = NULL;
	char buf[65536], sqp[4404];
	uint64_t at = 0, sq_len = 0, from = 0;
	size_t nm = 0, good = 0;
	bool lost = false;
	struct stat sb;
	int sq;

	for (size_t i = 0; a && i < a->ne && e == NULL; i++)
		if (strcmp(a->e[i].name, name) == 0)
			e = &a->e[i];
	if (a == NULL) {
		nm = marks_read(path, &own);
		m = own;
	} else if (e != NULL && e->nm > 0 && e->dev == st->st_dev &&
	    e->ino == st->st_ino) {
		m = e->m;
		nm = e->nm;
	}
	sq_path(sqp, sizeof(sqp), path, false);
	if (nm == 0) {
		free(own);
		return 0;
	}
	/* a copy gone: none of it holds */
	if ((sq = open(sqp, O_RDONLY | O_CLOEXEC)) < 0 || fstat(sq, &sb) != 0)
		sb.st_size = 0;
	for (; good < nm; good++) {
		uint8_t last[4];
		if (m[good].end > n || m[good].sq_end > (uint64_t)sb.st_size ||
		    pread(fd, last, 4, (off_t)(m[good].end - 4)) != 4 ||
		    memcmp(last, m[good].last, 4) != 0)
			break;
	}
	if (good > 0) {
		sq_len = m[good - 1].sq_end;
		from = m[good - 1].end;
	}
	/* the frames after: in the stream as written, unless their blocks
	 * were given back; then the stream ends with those copied (the
	 * frames after would name strings and tracks the lost ones
	 * defined, or none) */
	for (size_t i = good; i < nm && m[i].end <= n && !lost; i++)
		lost = has_hole(fd, i ? m[i - 1].end : 0, m[i].end);
	if (lost) {
		rec_note(s, IST_NOTE_WARN, "the stream of process %.*s is cut "
		    "after %llu bytes: the %llu after, compressed while the "
		    "program ran, are lost (their copy, %s, is shorter than "
		    "noted)", (int)(strlen(name) - 4), name,
		    (unsigned long long)from, (unsigned long long)(n - from),
		    sqp);
		from = n;
	}
	free(own);
	/* in the kernel where it can (a file to a file): 64 KiB at a time
	 * through us took 6 ms of the 30 after fib(30)'s run; through a
	 * buffer where it cannot (a pipe, another file system, O_APPEND),
	 * from where it got to */
	while (at < sq_len) {
		off64_t o = (off64_t)at;
		ssize_t k = copy_file_range(sq, &o, out, NULL,
		    (size_t)(sq_len - at), 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		at += (uint64_t)k;
	}
	while (at < sq_len) {
		size_t want = sq_len - at < sizeof(buf) ?
		    (size_t)(sq_len - at) : sizeof(buf);
		ssize_t k = pread(sq, buf, want, (off_t)at);
		if (k <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			close(sq);
			if (at == 0 && !lost && !has_hole(fd, 0, from))
				return 0;       /* nothing out yet: all again */
			*err = k < 0 ? errno : EIO;
			return (size_t)-1;
		}
		if ((*err = ist_fd_sink(&out, buf, (size_t)k)) != 0) {
			close(sq);
			return (size_t)-1;
		}
		at += (uint64_t)k;
	}
	if (sq >= 0)
		close(sq);
	return (size_t)from;
}

/* ---- after the run ---- */

/*
 * The stream at path to out: the frames squeezed ahead, then the others,
 * nz at a time, each on a thread of its own (the first on this one).  The
 * stream is read, a window at a time, rather than mapped: a grandchild
 * still writing it may cut it (a write that fails half-way is undone),
 * and a mapping cut short kills the reader (SIGBUS) with the whole trace.
 * The window holds nz frames and one more (a collector's, or as big as
 * the biggest seen, up to GATHER_GROW), and is read on from the next frame
 * when fewer than nz are left in it: one of 2 MiB held one whole frame of
 * a collector's (1 MiB stored, and its headers), so that they were
 * squeezed one at a time, on one core (fib(30) on 3.12: 66 ms after the
 * run, 33 ms on two).
 */
enum ist_status
rec_gather(const char *path, int out, struct sampler *s, struct rec_ahead *a,
    struct ist_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct squeeze z[SQUEEZERS] = { 0 };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int nz = cpus < 1 ? 1 : cpus > SQUEEZERS ? SQUEEZERS : (int)cpus;
	const char *base = strrchr(path, '/');
	struct ist_buf w = { 0 };          /* a window on the stream */
	size_t wsize = ((size_t)nz + 1) * GATHER_FRAME, wbase = 0, fmax = 0;
	struct stat st;
	size_t off = 0, n;
	int e = 0;

	base = base ? base + 1 : path;
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		return IST_OK;
	}
	n = (size_t)st.st_size;
	/* the frames squeezed ahead, then the rest */
	if ((off = ahead_out(a, path, base, &st, fd, n, out, &e, s)) ==
	    (size_t)-1)
		off = n;
	else if (a != NULL && n > 0)
		rec_note(s, IST_NOTE_DEBUG, "%s: %zu of %zu bytes compressed "
		    "while the program ran", base, off, n);
	/* the window holds the stream's bytes from wbase; off is in it */
	while (off < n && e == 0) {
		size_t at = off - wbase, from, fk;
		int whole = 1, k = 0, i;

		if (at >= w.n || (at > 0 && w.n - at < (size_t)nz * fmax &&
		    wbase + w.n < n)) {
			size_t want = n - off < wsize ? n - off : wsize;
			if ((e = read_at(fd, &w, want, off)) != 0) {
				ist_seterr(err, IST_EIO, "cannot read '%s': %s",
				    path, strerror(e));
				e = -1;
				break;
			}
			wbase = off;
			at = 0;
			if (w.n == 0)
				break;  /* cut since */
		}
		from = at;
		for (; k < nz && at < w.n; k++) {
			if ((whole = frame_len(w.p + at, w.n - at, &fk)) < 1)
				break;
			if (fk > fmax && (fmax = fk) <= GATHER_GROW /
			    ((size_t)nz + 1) && (size_t)(nz + 1) * fmax > wsize)
				wsize = ((size_t)nz + 1) * fmax;
			z[k].f = (const uint8_t *)w.p + at;
			z[k].k = fk;
			at += fk;
			z[k].threaded = k > 0 && pthread_create(&z[k].t, NULL,
			    squeeze, &z[k]) == 0;
		}
		if (k == 0) {
			/* a frame that runs past the window: read again from
			 * it, the window twice as big if it started there;
			 * else one cut short (the stream was cut, or ended
			 * abruptly) */
			if (whole < 0 || wbase + w.n >= n)
				break;
			if (from == 0 && (wsize >= 2 * (size_t)IST_MAX_FRAME ||
			    w.n < wsize))
				break;
			if (from == 0)
				wsize *= 2;
			w.n = 0;
			continue;
		}
		squeeze(&z[0]);
		for (i = 1; i < k; i++) {
			if (z[i].threaded)
				pthread_join(z[i].t, NULL);
			else
				squeeze(&z[i]);   /* no thread: here */
		}
		/* each squeezed, or kept as it is with those beside it */
		for (i = 0; i < k && e == 0; i++) {
			size_t fa = (size_t)(z[i].f - (const uint8_t *)w.p);
			if (z[i].n == 0)
				continue;
			if (fa > from)
				e = ist_fd_sink(&out, w.p + from, fa - from);
			if (e == 0)
				e = ist_fd_sink(&out, z[i].out.p, z[i].n);
			from = fa + z[i].k;
		}
		if (e == 0 && at > from)
			e = ist_fd_sink(&out, w.p + from, at - from);
		off = wbase + at;
	}
	if (e == 0 && off < n)
		rec_note(s, IST_NOTE_WARN, "the stream of process %.*s ended "
		    "abruptly: its last %zu bytes (at most one second of "
		    "events) are lost", (int)(strlen(base) - 4), base,
		    n - off);
	close(fd);
	ist_buf_release(&w);
	for (int i = 0; i < nz; i++)
		squeeze_free(&z[i]);
	if (e == -1)
		return IST_EIO;
	if (e) {
		ist_seterr(err, IST_EIO, "cannot write the trace: %s",
		    strerror(e));
		err->sys_errno = e;
		err->where = IST_AT_OUTPUT;
		return IST_EIO;
	}
	return IST_OK;
}
