/* test_gather.c - is-record's gathering of the streams (lib/record/gather.c):
 * what it compresses while the program runs comes out as the same bytes
 * as gathering the stream as written after the run (a copy of it kept in
 * ref/, which no thread touches), with the stream's blocks given back as
 * they are squeezed, and from its notes alone (is-record --recover); it
 * is thrown away where the stream changed under it. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record_int.h"
#include "tap.h"

static char dir[256], ref[300];

static void append_in(const char *in, const char *name, int from, int n);

/* Appends a live stream's frames (stored, as the collectors write them)
 * of n calls, from call `from`, to dir/name and its copy ref/name; header
 * first when from is 0. */
static void
append(const char *name, int from, int n)
{
	append_in(dir, name, from, n);
	append_in(ref, name, from, n);
}

/* name cut to len bytes (-k: k shorter), or with len -1 unlinked, in dir
 * and in ref */
static void
both(const char *name, off_t len)
{
	const char *in[] = { dir, ref };
	char path[600];
	struct stat st;

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", in[i], name);
		if (len == -1)
			unlink(path);
		else if (stat(path, &st) == 0)
			(void)!truncate(path, len < 0 ? st.st_size + len : len);
	}
}

static void
append_in(const char *in, const char *name, int from, int n)
{
	char path[600];
	struct ist_writer_opts o = { .store = true, .frame_bytes = 64 << 10 };
	struct ist_writer *w;
	struct ist_error e;
	struct ist_event ev;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", in, name);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
	ist_writer_new(&w, ist_fd_sink, &fd, &o, &e);
	ist_event_init(&ev, IST_HEADER);
	ist_writer_header(w, &ev, &e);
	for (int i = from; i < from + n; i++) {
		char fn[32];
		snprintf(fn, sizeof(fn), "f%d", i % 97);
		ist_event_init(&ev, IST_CPU_CALL);
		ev.pid = 7;
		ev.tid = 7 + i % 3;
		ev.name = (struct ist_str){ fn, strlen(fn) };
		ev.start_ns = 1000000 + (int64_t)i * 1013;
		ev.end_ns = ev.start_ns + 500 + i % 1000;
		IST_SET(&ev, IST_F_PID);
		IST_SET(&ev, IST_F_TID);
		IST_SET(&ev, IST_F_NAME);
		IST_SET(&ev, IST_F_START);
		IST_SET(&ev, IST_F_END);
		ist_writer_write(w, &ev, &e);
	}
	ist_writer_close(w, &e);
	close(fd);
}

static off_t
size_of(const char *name)
{
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* the bytes dir/name takes on disk */
static off_t
disk_of(const char *name)
{
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 ? st.st_blocks * 512 : -1;
}

/* The file at path, *n bytes, or NULL */
static char *
slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *p;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	rewind(f);
	p = malloc(*n + 1);
	*n = fread(p, 1, *n, f);
	fclose(f);
	return p;
}

/* Whether dir/a's bytes are the first of dir/b's */
static bool
prefix_of(const char *a, const char *b)
{
	char pa[600], pb[600], *x, *y;
	size_t na = 0, nb = 0;
	bool same;

	snprintf(pa, sizeof(pa), "%s/%s", dir, a);
	snprintf(pb, sizeof(pb), "%s/%s", dir, b);
	x = slurp(pa, &na);
	y = slurp(pb, &nb);
	same = x && y && na <= nb && memcmp(x, y, na) == 0;
	free(x);
	free(y);
	return same;
}

/* Waits until the thread has squeezed some of name, and no more for
 * 200 ms: false after a minute (it runs only on an idle core: on a busy
 * machine it gets little, not nothing). */
static bool
caught_up(const char *name)
{
	struct timespec ts = { 0, 200000000 };
	char sq[300];

	snprintf(sq, sizeof(sq), "%s.sq", name);
	for (int i = 0; i < 300; i++) {
		off_t a = size_of(sq);
		nanosleep(&ts, NULL);
		if (a > 0 && a == size_of(sq))
			return true;
	}
	return false;
}

static int warned;

static void
note(void *ctx, int level, const char *msg)
{
	(void)ctx;
	if (level == IST_NOTE_WARN) {
		warned++;
		printf("# %s\n", msg);
	}
}

/* in/name gathered (with a's work, or none) into a buffer of *n bytes. */
static char *
gathered(const char *in, const char *name, struct rec_ahead *a, size_t *n)
{
	char path[600], out[600];
	struct sampler s = { .fd = -1, .note = note };
	struct ist_error e;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", in, name);
	snprintf(out, sizeof(out), "%s/out", dir);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (rec_gather(path, fd, &s, a, &e) != IST_OK)
		return NULL;
	close(fd);
	return slurp(out, n);
}

/* name gathered with a's work, and from the notes alone, as the stream
 * written (ref/name) is gathered after the run */
static bool
same(const char *name, struct rec_ahead *a, const char *what)
{
	size_t n0, n1, n2;
	char *x = gathered(ref, name, NULL, &n0);
	char *y = gathered(dir, name, a, &n1);
	char *z = gathered(dir, name, NULL, &n2);
	bool eq = x && y && z && n0 == n1 && n0 == n2 &&
	    memcmp(x, y, n0) == 0 && memcmp(x, z, n0) == 0;

	ok(eq, "%s: %zu bytes, and %zu from the notes alone, the same as "
	    "the stream written gathered after the run (%zu)", what, n1, n2,
	    n0);
	free(x);
	free(y);
	free(z);
	return eq;
}

/*
 * A stream cut to nothing while it is gathered (a grandchild still writing
 * it undoes a write that failed half-way): gathering goes on with what it
 * can read, the frames squeezed ahead, where a mapping of the stream had
 * killed is-record (SIGBUS) and the whole trace with it.  The trace goes
 * into a pipe; its reader cuts the stream once gathering is writing, and
 * the pipe, full, holds gathering there until then.
 */
static void
cut_while_read(void)
{
	char path[600], out[600];
	struct sampler s = { .fd = -1 };
	struct rec_ahead *a;
	struct ist_error e;
	enum ist_status st;
	off_t sq;
	int p[2], status = 0;
	pid_t pid;

	append("4.ist", 0, 200000);
	a = rec_ahead_start(dir, &(struct sampler){ .fd = -1,
	    .sysfs = "/nonexistent" });
	/* more squeezed than the pipe holds, however busy the machine: its
	 * copy stopped growing for 200 ms at 32 KiB under three busy loops */
	for (int i = 0; i < 6000 && size_of("4.ist.sq") <= 256 << 10; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	caught_up("4.ist");
	rec_ahead_stop(a);
	sq = size_of("4.ist.sq");
	append("4.ist", 200000, 20000);         /* left for after the run */
	snprintf(path, sizeof(path), "%s/4.ist", dir);
	snprintf(out, sizeof(out), "%s/out4", dir);
	if (pipe(p) != 0 || (pid = fork()) < 0)
		return;
	if (pid == 0) {
		char buf[65536];
		ssize_t k;
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		bool cut = false;
		close(p[1]);
		while ((k = read(p[0], buf, sizeof(buf))) > 0) {
			if (!cut)
				cut = truncate(path, 0) == 0;
			if (write(fd, buf, (size_t)k) != k)
				_exit(1);
		}
		_exit(cut ? 0 : 1);
	}
	close(p[0]);
	st = rec_gather(path, p[1], &s, a, &e);
	close(p[1]);
	waitpid(pid, &status, 0);
	/* the frames counted as squeezed: the copy's first bytes (the
	 * thread, stopped, may have written one more it does not count) */
	ok(sq > 256 << 10 && st == IST_OK && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0 && size_of("out4") > 256 << 10 &&
	    prefix_of("out4", "4.ist.sq"),
	    "a stream cut to nothing as it is gathered: %lld bytes out, the "
	    "%lld squeezed ahead", (long long)size_of("out4"), (long long)sq);
	rec_ahead_free(a);
}

static atomic_bool spinning;

/* this process's threads */
static int
threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static void *
spin(void *arg)
{
	(void)arg;
	while (atomic_load_explicit(&spinning, memory_order_relaxed))
		;
	return NULL;
}

/*
 * Freeing the thread never waits for it: on a machine busy with other
 * work, a thread at the lowest priority may wait long for a core, even
 * to wake from its poll and leave, and is-record's trace with it (joined,
 * it had held fib(30)'s trace 92 ms under a make check).  The process is
 * put on one core with a busy thread of its own at the normal priority.
 */
static void
free_while_starved(void)
{
	cpu_set_t one, all;
	struct rec_ahead *a;
	struct timespec t0, t1;
	pthread_t t;
	double ms;
	int before, after;

	if (sched_getaffinity(0, sizeof(all), &all) != 0)
		return;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	(void)sched_setaffinity(0, sizeof(one), &one);
	/* its thread (on that core too) waits in its poll: no streams */
	a = rec_ahead_start(dir, &(struct sampler){ .fd = -1,
	    .sysfs = "/nonexistent" });
	nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
	atomic_store(&spinning, true);
	if (a == NULL || pthread_create(&t, NULL, spin, NULL) != 0) {
		ok(0, "the threads start");
		rec_ahead_free(a);
		(void)sched_setaffinity(0, sizeof(all), &all);
		return;
	}
	nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
	before = threads();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rec_ahead_free(a);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	after = threads();
	atomic_store(&spinning, false);
	pthread_join(t, NULL);
	(void)sched_setaffinity(0, sizeof(all), &all);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	/* it takes the lock and lets go, the thread still there (a core
	 * to leave on is what it waits for, for 10 ms here with one busy
	 * thread beside it, 92 ms under a make check); joined, it was gone */
	ok(after == before && before >= 3, "freed at once, its starved thread "
	    "left to end on its own: %d threads before, %d after, %.3f ms",
	    before, after, ms);
}

int
main(void)
{
	struct rec_ahead *a;
	char path[600];
	off_t sq;
	bool up;
	size_t n0, n1;
	char *x;

	snprintf(dir, sizeof(dir), "%s/gather.XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(ref, sizeof(ref), "%s/ref", dir);
	if (mkdir(ref, 0700) != 0)
		return 1;
	/* a stream being written: squeezed ahead, then more after the
	 * thread stopped, a frame cut short at its end */
	append("1.ist", 0, 20000);
	a = rec_ahead_start(dir, &(struct sampler){ .fd = -1,
	    .sysfs = "/nonexistent" });
	ok(a != NULL, "the thread starts");
	append("1.ist", 20000, 20000);
	up = caught_up("1.ist");
	ok(up, "it squeezed the stream as it grew: %lld bytes of .sq for "
	    "%lld", (long long)size_of("1.ist.sq"),
	    (long long)size_of("1.ist"));
	/* each frame squeezed (in its notes) gave back its blocks but its
	 * first and last, each shared with the frame beside it */
	{
		struct { uint64_t end, sq_end; uint8_t last[4], pad[4]; } m;
		long long nm = size_of("1.ist.sqi") / 24, keep;
		FILE *f;
		snprintf(path, sizeof(path), "%s/1.ist.sqi", dir);
		m.end = 0;
		if (nm > 0 && (f = fopen(path, "rb")) != NULL) {
			fseek(f, (nm - 1) * 24, SEEK_SET);
			if (fread(&m, 24, 1, f) != 1)
				m.end = 0;
			fclose(f);
		}
		keep = (long long)(size_of("1.ist") - (off_t)m.end) +
		    (nm + 2) * 4096;
		ok(nm > 0 && m.end > 0 && disk_of("1.ist") <= keep,
		    "the stream's blocks given back as it was squeezed: %lld "
		    "bytes on disk of %lld, at most %lld (%lld frames, %llu "
		    "bytes, squeezed)", (long long)disk_of("1.ist"),
		    (long long)size_of("1.ist"), keep, nm,
		    (unsigned long long)m.end);
	}
	append("2.ist", 0, 5000);
	caught_up("2.ist");
	rec_ahead_stop(a);
	sq = size_of("1.ist.sq");
	append("1.ist", 40000, 12000);
	both("1.ist", -10);
	ok(sq > 0 && sq < size_of("1.ist") / 2, "stored frames compressed "
	    "ahead: %lld bytes for %lld", (long long)sq,
	    (long long)size_of("1.ist"));
	same("1.ist", a, "a stream grown after the thread stopped, cut");
	same("2.ist", a, "a stream squeezed whole");
	/* the stream cut back and written again in place: the frames'
	 * ends differ, all is done again */
	both("1.ist", 0);
	append("1.ist", 100, 43000);
	ok(size_of("1.ist") > sq, "rewritten longer than what was squeezed");
	same("1.ist", a, "a stream rewritten in place");
	/* another file by that name: not the stream squeezed */
	both("1.ist", -1);
	append("1.ist", 5, 41000);
	same("1.ist", a, "a stream replaced by another file");
	/* the copy lost, of frames whose blocks were given back: the stream
	 * ends before them, said; not garbage, nor what they defined
	 * missing under the frames after */
	snprintf(path, sizeof(path), "%s/2.ist.sq", dir);
	(void)!truncate(path, 0);
	warned = 0;
	x = gathered(dir, "2.ist", a, &n0);
	free(x);
	x = gathered(dir, "2.ist", NULL, &n1);
	free(x);
	ok(n0 == 0 && n1 == 0 && warned == 2, "an empty .sq of a stream "
	    "given back: the stream ends there (%zu bytes, %zu from the "
	    "notes), and a warning each time (%d)", n0, n1, warned);
	rec_ahead_free(a);
	/* stopped as it squeezes a long stream: the frames it had finished
	 * are used, the one it was on is not waited for, and the thread,
	 * let go, frees what it holds as it ends */
	append("3.ist", 0, 400000);
	a = rec_ahead_start(dir, &(struct sampler){ .fd = -1,
	    .sysfs = "/nonexistent" });
	for (int i = 0; i < 6000 && size_of("3.ist.sq") <= 0; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	rec_ahead_stop(a);
	ok(size_of("3.ist.sq") > 0, "stopped while at work, %lld bytes in",
	    (long long)size_of("3.ist.sq"));
	same("3.ist", a, "a stream stopped at mid-work");
	rec_ahead_free(a);
	cut_while_read();
	free_while_starved();
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path) != 0)
		return 1;
	return done();
}
