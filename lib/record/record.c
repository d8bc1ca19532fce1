/* record.c - run, sample and gather (is-record's engine). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "capture.h"
#include "record_int.h"

/* ---- gathering the streams ---- */

#define OWNER "is-record.pid"   /* in the directory: whose recording */

static void left_behind(struct sampler *s, const char *tmp);
static enum ist_status gather_all(struct sampler *s, const char *dir,
    struct rec_ahead *ahead, int out_fd, struct dirent ***names,
    int *nnames, struct ist_error *err);

static int
by_name(const struct dirent **a, const struct dirent **b)
{
	/* pids in numeric order, so that the output is reproducible */
	long x = atol((*a)->d_name), y = atol((*b)->d_name);
	/* a process's own streams (<pid>.ist, <pid>-cupti.ist) by name:
	 * scandir's order is the directory's */
	return x < y ? -1 : x > y ? 1 : strcmp((*a)->d_name, (*b)->d_name);
}

/* Whether process pid wrote a stream (<pid>.ist), or said why not:
 * <pid>.nopy, its bootstrap warned already (no collector for that
 * Python); <pid>.lost, its stream could not be written, which add_lost
 * says. */
static bool
accounted(const char *dir, struct dirent **names, int n, int64_t pid)
{
	char want[4400];

	snprintf(want, sizeof(want), "%lld.ist", (long long)pid);
	for (int k = 0; k < n; k++)
		if (strcmp(names[k]->d_name, want) == 0)
			return true;
	snprintf(want, sizeof(want), "%s/%lld.nopy", dir, (long long)pid);
	if (access(want, F_OK) == 0)
		return true;
	snprintf(want, sizeof(want), "%s/%lld.lost", dir, (long long)pid);
	return access(want, F_OK) == 0;
}

/*
 * A Python process the sampler saw that wrote no stream ran without our
 * bootstrap: say so, or its calls are missing without a word.  But not a
 * copy of a recorded Python, seen between its fork and its exec (a
 * subprocess it started): a fork that ran Python would have written a
 * stream of its own; nor one of its name whose command line never read
 * (read in the middle of its exec, the new program's not yet there, and
 * gone before the next tick: one of 20 quick subprocesses sampled at
 * 1000 Hz, once in a full check).
 */
static void
warn_silent_pythons(struct sampler *s, const char *dir,
    struct dirent **names, int n)
{
	for (size_t i = 0; i < s->np; i++) {
		const struct psample *p = &s->p[i], *q;

		if (!p->python || accounted(dir, names, n, p->pid))
			continue;
		q = rec_proc_find(s, p->ppid);
		if (q != NULL && q->python && strcmp(q->comm, p->comm) == 0 &&
		    (strcmp(q->cmd, p->cmd) == 0 || !p->have_cmd) &&
		    accounted(dir, names, n, q->pid))
			continue;
		rec_note(s, IST_NOTE_WARN, "Python process %lld (%s) recorded "
		    "no Python calls: it did not load InferScope's bootstrap "
		    "(python -I, -E or -S, or PYTHONPATH cleared for it)",
		    (long long)p->pid, p->cmd);
	}
}

static int
is_lost(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return n > 5 && strcmp(d->d_name + n - 5, ".lost") == 0;
}

/*
 * A process whose stream could not be written (its file deleted under it,
 * a full disk) left "EVENTS REASON" lines in <pid>.lost: each becomes a
 * loss record of that process in the sampler's stream, and a warning.
 */
static void
add_lost(struct sampler *s, const char *dir)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, is_lost, by_name);

	for (int i = 0; i < n; i++) {
		char path[4400], line[640];
		long long pid = atoll(names[i]->d_name);
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if ((f = fopen(path, "re")) != NULL) {
			while (fgets(line, sizeof(line), f)) {
				struct ist_event ev;
				char *why = NULL;
				unsigned long long k = strtoull(line, &why,
				    10);
				line[strcspn(line, "\n")] = '\0';
				why += *why == ' ';
				ist_event_init(&ev, IST_LOSS);
				ev.pid = pid;
				ev.events = (int64_t)(k > INT64_MAX ?
				    INT64_MAX : k);
				ev.reason = (struct ist_str){ why,
				    strlen(why) };
				IST_SET(&ev, IST_F_PID);
				IST_SET(&ev, IST_F_EVENTS);
				IST_SET(&ev, IST_F_REASON);
				rec_swrite(s, &ev);
				rec_note(s, IST_NOTE_WARN, "process %lld: %llu "
				    "events are lost: %s", pid, k, why);
			}
			fclose(f);
		}
		free(names[i]);
	}
	free(names);
}

static void
remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4400];

	if (d) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

/* ---- running ---- */

static char *
join_path(const char *a, const char *b)
{
	char *s;

	if (b == NULL || *b == '\0')
		return strdup(a);
	if (asprintf(&s, "%s:%s", a, b) < 0)
		return NULL;
	return s;
}

/* The trace goes where stdout goes (a pipe, -o /dev/stdout): what the
 * command prints must not land in it. */
static bool
trace_is_stdout(int out_fd)
{
	struct stat a, b;

	if (out_fd == STDOUT_FILENO)
		return true;
	return fstat(out_fd, &a) == 0 && fstat(STDOUT_FILENO, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
	    !S_ISCHR(a.st_mode);
}

static void
child(const struct ist_record_opts *o, const char *dir, int errfd,
    int out_fd, const sigset_t *oldmask, pid_t parent)
{
	char buf[64];
	int e;

	/* the command dies with its recorder (SIGTERM, which the collectors
	 * catch to write what they hold), not on as an orphan; a recorder
	 * gone before this line is caught by the check after it */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
		_exit(126);

	/* the command's stdout goes to our stderr, which the user sees */
	if (trace_is_stdout(out_fd) && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		_exit(126);
	if (out_fd > STDERR_FILENO)
		close(out_fd);

	setenv("INFERSCOPE_ENABLED", "1", 1);
	setenv("INFERSCOPE_DIR", dir, 1);
	snprintf(buf, sizeof(buf), "%lld", o->trace_size_mb);
	setenv("INFERSCOPE_TRACE_SIZE_MB", buf, 1);
	snprintf(buf, sizeof(buf), "%lld", o->py_min_us);
	setenv("INFERSCOPE_PY_MIN_US", buf, 1);
	setenv("INFERSCOPE_PY_CALLS", o->py_calls ? "1" : "0", 1);
	setenv("INFERSCOPE_RING", o->ring ? "1" : "0", 1);
	/* the agents add a thread's CPU time as it exits to the samples */
	setenv("INFERSCOPE_SAMPLE", o->sample_hz > 0 ? "1" : "0", 1);
	if (o->log_level)
		setenv("INFERSCOPE_LOG_LEVEL", o->log_level, 1);
	if (o->nvtx_lib)
		setenv("NVTX_INJECTION64_PATH", o->nvtx_lib, 1);
	if (o->cupti_lib)
		setenv("CUDA_INJECTION64_PATH", o->cupti_lib, 1);
	if (o->pydir) {
		char *pp = join_path(o->pydir, getenv("PYTHONPATH"));
		if (pp)
			setenv("PYTHONPATH", pp, 1);
	}
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, oldmask, NULL);
	execvp(o->argv[0], o->argv);
	e = errno;
	if (write(errfd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/*
 * The recording's directory in tmp (dir; empty when none could be made),
 * named for its is-record (a recorder killed before its end is found by
 * the next one, left_behind), and the sampler's stream in it, its header
 * written.
 */
static enum ist_status
start_dir(struct sampler *s, const char *tmp, char *dir, size_t n,
    struct ist_error *err)
{
	char path[4400];
	struct ist_event h;
	struct timespec rt, mt;
	FILE *f;

	snprintf(dir, n, "%s/inferscope.XXXXXX", tmp);
	if (mkdtemp(dir) == NULL) {
		ist_seterr(err, IST_EIO, "cannot create a directory in '%s': %s",
		    tmp, strerror(errno));
		*dir = '\0';           /* none made */
		return IST_EIO;
	}
	snprintf(path, sizeof(path), "%s/" OWNER, dir);
	if ((f = fopen(path, "we")) != NULL) {
		fprintf(f, "%ld\n", (long)getpid());
		fclose(f);
	}
	s->page = sysconf(_SC_PAGESIZE);
	s->ticks = sysconf(_SC_CLK_TCK);
	s->schedstat = access("/proc/self/schedstat", R_OK) == 0;
	gethostname(s->host, sizeof(s->host) - 1);
	snprintf(path, sizeof(path), "%s/sampler.ist", dir);
	s->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (s->fd < 0) {
		ist_seterr(err, IST_EIO, "cannot create '%s': %s", path,
		    strerror(errno));
		return IST_EIO;
	}
	if (ist_writer_new(&s->w, ist_fd_sink, &s->fd,
	    &(struct ist_writer_opts){ .flush_interval_ms = 1000 }, err) !=
	    IST_OK)
		return IST_EIO;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	ist_event_init(&h, IST_HEADER);
	h.producer = (struct ist_str){ "is-record " IST_PACKAGE_VERSION,
	    strlen("is-record " IST_PACKAGE_VERSION) };
	h.host = (struct ist_str){ s->host, strlen(s->host) };
	h.realtime_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
	h.monotonic_ns = (int64_t)mt.tv_sec * 1000000000 + mt.tv_nsec;
	h.clocks = (struct ist_blob){ (const uint8_t *)"\x81\x69monotonic", 11 };
	IST_SET(&h, IST_F_PRODUCER);
	IST_SET(&h, IST_F_HOST);
	IST_SET(&h, IST_F_REALTIME_NS);
	IST_SET(&h, IST_F_MONOTONIC_NS);
	IST_SET(&h, IST_F_CLOCKS);
	return ist_writer_header(s->w, &h, err);
}

/*
 * Samples /proc at its rate until the command (pid) exits, passing on the
 * signals sent to us alone, running the capture's timers and writing its
 * switches (within 100 ms); the signals in set are blocked.  Returns the
 * command's wait status.
 */
static int
watch(struct sampler *s, const struct ist_record_opts *o, pid_t pid,
    const sigset_t *set)
{
	int64_t every = o->sample_hz > 0 ? 1000000000L / o->sample_hz : 0;
	int64_t next = ist_capture_now_ns() + every, now;
	uint64_t ticks = 1;
	int status = 0;

	if (o->sample_hz > 0)
		rec_sample(s, true);
	for (;;) {
		int64_t wake, left;
		struct timespec period;
		siginfo_t si;
		int sig;

		now = ist_capture_now_ns();
		wake = now + (s->cap ? 100000000 : 1000000000);
		if (every && next < wake)
			wake = next;
		if (rec_capture_next(s) < wake)
			wake = rec_capture_next(s);
		left = wake > now ? wake - now : 0;
		period = (struct timespec){ left / 1000000000,
		    left % 1000000000 };
		sig = sigtimedwait(set, &si, &period);
		if (sig == SIGCHLD) {
			pid_t w;
			int ws;
			bool done = false;
			while ((w = waitpid(-1, &ws, WNOHANG)) > 0)
				if (w == pid) {
					status = ws;
					done = true;
				}
			if (done)
				return status;
		} else if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
			/* a signal from the terminal reached the child too;
			 * one sent to us alone is passed on */
			if (si.si_code == SI_USER || si.si_code == SI_QUEUE)
				kill(pid, sig);
			rec_note(s, IST_NOTE_INFO, "%s: finishing the trace",
			    strsignal(sig));
		}
		now = ist_capture_now_ns();
		rec_capture_tick(s, now, sig == SIGUSR2, sig == SIGUSR1);
		if (every && now >= next) {
			rec_sample(s, ticks++ % 10 == 0);
			next += every;
			if (next <= now)
				next = now + every;
		}
	}
}

/* The output could not be written: what was recorded stays in dir, named
 * in err. */
static void
kept(const struct ist_record_opts *o, const char *dir, enum ist_status st,
    struct ist_error *err)
{
	char m[sizeof(err->msg) + 512], what[300];

	if (err->sys_errno && err->where == IST_AT_OUTPUT)
		snprintf(what, sizeof(what), "cannot write %s%.200s%s: %s",
		    o->out_name ? "'" : "", o->out_name ? o->out_name :
		    "standard output", o->out_name ? "'" : "",
		    strerror(err->sys_errno));
	else
		snprintf(what, sizeof(what), "%.250s", err->msg);
	snprintf(m, sizeof(m), "%s; the recording is kept: is-record --recover "
	    "%.180s -o FILE writes it", what, dir);
	ist_seterr(err, st, "%s", m);
	err->where = IST_AT_OUTPUT;
	err->sys_errno = 0;     /* the message is whole */
}

/* Starts the command with the collectors' environment; its pid, or -1 with
 * err and *exit_status set as a shell would. */
static pid_t
launch(const struct ist_record_opts *o, const char *dir, int out_fd,
    struct sampler *s, const sigset_t *old, int *exit_status,
    struct ist_error *err)
{
	pid_t self = getpid(), pid;
	int pfd[2], e = 0;
	ssize_t k;

	if (pipe2(pfd, O_CLOEXEC) != 0) {
		ist_seterr(err, IST_EIO, "cannot make a pipe: %s",
		    strerror(errno));
		return -1;
	}
	if ((pid = fork()) < 0) {
		ist_seterr(err, IST_EIO, "cannot fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		close(pfd[0]);
		if (s->fd >= 0)
			close(s->fd);
		child(o, dir, pfd[1], out_fd, old, self);
	}
	close(pfd[1]);
	do
		k = read(pfd[0], &e, sizeof(e));
	while (k < 0 && errno == EINTR);
	close(pfd[0]);
	if (k == (ssize_t)sizeof(e)) {
		/* exec failed: report it as a shell would */
		waitpid(pid, NULL, 0);
		ist_seterr(err, IST_EINVAL, "cannot run '%s': %s", o->argv[0],
		    strerror(e));
		*exit_status = e == ENOENT ? 127 : 126;
		return -1;
	}
	return pid;
}

enum ist_status
ist_record_run(const struct ist_record_opts *o, int out_fd, int *exit_status,
    ist_note_fn notefn, void *ctx, struct ist_error *err)
{
	struct sampler s = { .fd = -1, .note = notefn, .ctx = ctx,
	    .sysfs = o->sysfs ? o->sysfs : "/sys" };
	char dir[4096];
	const char *tmp = o->tmpdir ? o->tmpdir : getenv("TMPDIR");
	sigset_t set, old;
	pid_t pid;
	enum ist_status st;
	struct dirent **names = NULL;
	struct rec_ahead *ahead = NULL;
	int nnames = 0, e;
	bool keep = false;

	*exit_status = 1;
	if (!tmp || !*tmp)
		tmp = "/tmp";
	left_behind(&s, tmp);
	if ((st = start_dir(&s, tmp, dir, sizeof(dir), err)) != IST_OK) {
		if (*dir == '\0')
			return st;
		goto out;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGUSR2);
	if (o->ring && (o->dump_on & IST_DUMP_ON_SIGNAL))
		sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, &old);
	if ((e = rec_capture_start(&s, o, dir)) != 0)
		rec_note(&s, IST_NOTE_WARN, "cannot make the capture switch "
		    "in %s (%s): recording all of the run", dir, strerror(e));
	if (o->sample_hz > 0)
		rec_sample_begin(&s);
	if ((pid = launch(o, dir, out_fd, &s, &old, exit_status, err)) < 0) {
		st = err->status;
	} else {
		int status;
		s.root = pid;
		rec_note(&s, IST_NOTE_DEBUG, "recording pid %ld into %s",
		    (long)pid, dir);
		/* the streams compressed as they are written (the thread
		 * runs with our signals blocked) */
		ahead = rec_ahead_start(dir, &s);
		status = watch(&s, o, pid, &set);
		rec_ahead_stop(ahead);
		rec_exit(&s, pid, status);
		if (WIFEXITED(status))
			*exit_status = WEXITSTATUS(status);
		else if (WIFSIGNALED(status))
			*exit_status = 128 + WTERMSIG(status);
		/* grandchildren may still run; their streams end where
		 * they are */
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	rec_capture_end(&s);
	add_lost(&s, dir);
	{
		struct ist_error ce;
		if (ist_writer_close(s.w, &ce) != IST_OK && st == IST_OK) {
			*err = ce;
			st = ce.status;
		}
		s.w = NULL;
		if (s.failed && st == IST_OK) {
			*err = s.err;
			st = s.err.status;
		}
	}
	close(s.fd);
	s.fd = -1;
	if (st != IST_OK)
		goto out;
	if (out_fd < 0 && (out_fd = o->open_out(o->open_ctx, err)) < 0) {
		st = err->status;
		keep = true;
		goto out;
	}
	/* the trace: the sampler's stream, then each process's, by pid */
	st = gather_all(&s, dir, ahead, out_fd, &names, &nnames, err);
	keep = st != IST_OK && err->where == IST_AT_OUTPUT;
	if (o->pydir)    /* --no-python: none expected */
		warn_silent_pythons(&s, dir, names, nnames);
out:
	rec_ahead_free(ahead);
	ist_writer_free(s.w);
	if (s.fd >= 0)
		close(s.fd);
	for (size_t i = 0; i < s.np; i++)
		free(s.p[i].t);
	free(s.p);
	for (int i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	if (keep)
		kept(o, dir, st, err);
	else
		remove_dir(dir);
	return st;
}

/* The sampler's stream, then each process's, by pid, to out_fd. */
static enum ist_status
gather_all(struct sampler *s, const char *dir, struct rec_ahead *ahead,
    int out_fd, struct dirent ***names, int *nnames, struct ist_error *err)
{
	enum ist_status st;
	char path[4400];

	snprintf(path, sizeof(path), "%s/sampler.ist", dir);
	st = rec_gather(path, out_fd, s, NULL, err);
	*nnames = scandir(dir, names, rec_is_stream, by_name);
	for (int i = 0; i < *nnames && st == IST_OK; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, (*names)[i]->d_name);
		st = rec_gather(path, out_fd, s, ahead, err);
	}
	if (*nnames < 0)
		*nnames = 0;
	return st;
}

/* The pid of the is-record that made dir, or 0 when it is none of its. */
static long
owner_of(const char *dir)
{
	char path[4400];
	long pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/" OWNER, dir);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1 || pid <= 0)
		pid = 0;
	fclose(f);
	return pid;
}

static bool
alive(long pid)
{
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/*
 * A recording an is-record killed before its end left in tmp (SIGKILL,
 * the OOM killer): named, with the command that writes it, once per run.
 */
static void
left_behind(struct sampler *s, const char *tmp)
{
	DIR *d = opendir(tmp);
	struct dirent *de;
	char dir[4400];
	struct stat st;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		long pid;
		if (strncmp(de->d_name, "inferscope.", 11) != 0)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", tmp, de->d_name);
		if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
		    st.st_uid != getuid() || (pid = owner_of(dir)) == 0 ||
		    alive(pid))
			continue;
		rec_note(s, IST_NOTE_WARN, "an is-record that was killed (pid %ld) "
		    "left its recording in %s: is-record --recover %s -o FILE "
		    "writes it as a trace", pid, dir, dir);
	}
	closedir(d);
}

/* The losses the processes noted (add_lost), in a segment of their own
 * after the streams: the sampler that would have written them is gone. */
static enum ist_status
recover_lost(struct sampler *s, const char *dir, int out_fd,
    struct ist_error *err)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, is_lost, by_name);
	struct ist_event h;
	enum ist_status st;

	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (n <= 0)
		return IST_OK;
	if ((st = ist_writer_new(&s->w, ist_fd_sink, &out_fd, NULL, err)) !=
	    IST_OK)
		return st;
	gethostname(s->host, sizeof(s->host) - 1);
	ist_event_init(&h, IST_HEADER);
	h.producer = (struct ist_str){ "is-record --recover",
	    strlen("is-record --recover") };
	h.host = (struct ist_str){ s->host, strlen(s->host) };
	IST_SET(&h, IST_F_PRODUCER);
	IST_SET(&h, IST_F_HOST);
	if ((st = ist_writer_header(s->w, &h, err)) == IST_OK) {
		add_lost(s, dir);
		st = s->failed ? s->err.status : IST_OK;
		if (s->failed)
			*err = s->err;
	}
	if (st == IST_OK)
		st = ist_writer_close(s->w, err);
	else
		ist_writer_free(s->w);
	s->w = NULL;
	return st;
}

enum ist_status
ist_record_recover(const char *dir, int out_fd, ist_note_fn notefn,
    void *ctx, struct ist_error *err)
{
	struct sampler s = { .fd = -1, .note = notefn, .ctx = ctx };
	struct dirent **names = NULL;
	int nnames = 0;
	enum ist_status st;
	long pid = owner_of(dir);

	if (pid == 0) {
		ist_seterr(err, IST_EINVAL, "'%s' is not a recording left by "
		    "is-record", dir);
		return IST_EINVAL;
	}
	if (alive(pid)) {
		ist_seterr(err, IST_EINVAL, "'%s' is the recording of an "
		    "is-record still running (pid %ld)", dir, pid);
		return IST_EINVAL;
	}
	st = gather_all(&s, dir, NULL, out_fd, &names, &nnames, err);
	for (int i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	if (st == IST_OK)
		st = recover_lost(&s, dir, out_fd, err);
	if (st == IST_OK)
		remove_dir(dir);
	return st;
}
