/*
 * sampler.c - /proc and /sys samples of the recorded processes, their
 * threads and the machine, as counter records (is-record's engine).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "record_int.h"

static const char *thread_counters[6] = {
	"thread.cpu_ns", "thread.wait_ns", "thread.state",
	"thread.ctx_voluntary", "thread.ctx_involuntary", "thread.timeslices"
};

void
rec_note(struct sampler *s, int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (s->note == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->note(s->ctx, level, msg);
}

void
rec_swrite(struct sampler *s, const struct ist_event *ev)
{
	struct ist_error e;

	if (!s->failed && ist_writer_write(s->w, ev, &e) != IST_OK) {
		s->failed = true;
		s->err = e;
	}
}

static void
counter(struct sampler *s, int64_t pid, int64_t tid, const char *name,
    int64_t ts, int64_t iv, double dv, bool isint)
{
	struct ist_event ev;

	ist_counter_init(&ev, pid, tid, (struct ist_str){ name, strlen(name) },
	    ts, iv);
	if (!isint) {
		ev.value_is_int = false;
		ev.value = dv;
	}
	rec_swrite(s, &ev);
}

void
rec_exit(struct sampler *s, pid_t pid, int status)
{
	int64_t ts = ist_capture_now_ns();

	if (WIFEXITED(status))
		counter(s, pid, -1, "process.exit_code", ts,
		    WEXITSTATUS(status), 0, true);
	else if (WIFSIGNALED(status))
		counter(s, pid, -1, "process.exit_signal", ts,
		    WTERMSIG(status), 0, true);
}

static ssize_t
read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* Fields of /proc/.../stat after the ")" of comm: index 0 is the state. */
static int
stat_fields(char *buf, char **comm, char **f, int max)
{
	char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	int n = 0;

	if (open == NULL || close == NULL)
		return 0;
	*close = '\0';
	*comm = open + 1;
	for (char *p = close + 2, *tok; n < max &&
	    (tok = strsep(&p, " ")) != NULL; )
		f[n++] = tok;
	return n;
}

struct psample *
rec_proc_find(struct sampler *s, int64_t pid)
{
	for (size_t i = 0; i < s->np; i++)
		if (s->p[i].pid == pid)
			return &s->p[i];
	return NULL;
}

static struct psample *
proc_get(struct sampler *s, int64_t pid)
{
	struct psample *p = rec_proc_find(s, pid);

	if (p != NULL)
		return p;
	if (s->np == s->capp) {
		size_t cap = s->capp ? s->capp * 2 : 16;
		struct psample *np = realloc(s->p, cap * sizeof(*np));
		if (np == NULL)
			return NULL;
		s->p = np;
		s->capp = cap;
	}
	memset(&s->p[s->np], 0, sizeof(s->p[0]));
	s->p[s->np].pid = pid;
	s->p[s->np].rss = s->p[s->np].majflt = s->p[s->np].nthreads =
	    s->p[s->np].ppid = s->p[s->np].ccpu = -1;
	return &s->p[s->np++];
}

/* python, python3, python3.12: a CPython that should load our bootstrap */
static bool
is_python(const char *name)
{
	if (strncmp(name, "python", 6) != 0)
		return false;
	for (name += 6; *name; name++)
		if (!(*name >= '0' && *name <= '9') && *name != '.')
			return false;
	return true;
}

/* Names the process in a record; with !force, only once its command line
 * reads (it reads empty for a moment during an exec). */
static void
name_process(struct sampler *s, struct psample *p, const char *comm,
    bool force)
{
	struct ist_event ev;
	char path[64], cmd[8192];
	struct ist_buf blob = { 0 };
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%lld/cmdline", (long long)p->pid);
	n = read_file(path, cmd, sizeof(cmd));
	if (!force && n <= 0)
		return;
	p->named = true;
	p->have_cmd = n > 0;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	ist_event_init(&ev, IST_PROCESS);
	ev.pid = p->pid;
	ev.name = (struct ist_str){ comm, strlen(comm) };
	ev.host = (struct ist_str){ s->host, strlen(s->host) };
	IST_SET(&ev, IST_F_PID);
	IST_SET(&ev, IST_F_NAME);
	IST_SET(&ev, IST_F_HOST);
	/* read_file ends the text with a NUL: a cut last argument counts */
	if (n > 0 && ist_cbor_args(cmd, (size_t)n + (cmd[n - 1] != '\0'),
	    &blob) == 0) {
		ev.cmdline = (struct ist_blob){ (uint8_t *)blob.p, blob.n };
		IST_SET(&ev, IST_F_CMDLINE);
	}
	{
		const char *a0 = n > 0 ? cmd : "", *b = strrchr(a0, '/');
		p->python = is_python(comm) || is_python(b ? b + 1 : a0);
		for (ssize_t i = 0; i < n && i < (ssize_t)sizeof(p->cmd) - 1;
		    i++)
			p->cmd[i] = cmd[i] ? cmd[i] : ' ';
		p->cmd[n > 0 ? (n < (ssize_t)sizeof(p->cmd) ? n :
		    (ssize_t)sizeof(p->cmd)) - 1 : 0] = '\0';
	}
	rec_swrite(s, &ev);
	ist_buf_release(&blob);
}

static struct tsample *
thread_get(struct psample *p, int64_t tid)
{
	for (size_t i = 0; i < p->nt; i++)
		if (p->t[i].tid == tid)
			return &p->t[i];
	if (p->nt == p->capt) {
		size_t cap = p->capt ? p->capt * 2 : 16;
		struct tsample *nt = realloc(p->t, cap * sizeof(*nt));
		if (nt == NULL)
			return NULL;
		p->t = nt;
		p->capt = cap;
	}
	memset(&p->t[p->nt], 0, sizeof(p->t[0]));
	p->t[p->nt].tid = tid;
	return &p->t[p->nt++];
}

static int
state_code(char c)
{
	switch (c) {
	case 'R': return 1;
	case 'S': return 2;
	case 'D': return 3;
	case 'Z': return 4;
	case 'T': case 't': return 5;
	case 'I': return 6;
	default: return 0;
	}
}

/* Thread t of p named comm: a thread record when that is a new name, or
 * first. */
static void
name_thread(struct sampler *s, struct psample *p, struct tsample *t,
    const char *comm, bool first)
{
	struct ist_event ev;

	if (!first && strncmp(t->comm, comm, sizeof(t->comm)) == 0)
		return;
	snprintf(t->comm, sizeof(t->comm), "%s", comm);
	ist_event_init(&ev, IST_THREAD);
	ev.pid = p->pid;
	ev.tid = t->tid;
	ev.name = (struct ist_str){ comm, strlen(comm) };
	IST_SET(&ev, IST_F_PID);
	IST_SET(&ev, IST_F_TID);
	IST_SET(&ev, IST_F_NAME);
	rec_swrite(s, &ev);
}

static void
sample_thread(struct sampler *s, struct psample *p, int64_t tid, int64_t ts)
{
	char path[96], buf[4096], *comm, *f[48];
	struct tsample *t;
	int64_t v[6] = { 0 };
	int nf;

	snprintf(path, sizeof(path), "/proc/%lld/task/%lld/stat",
	    (long long)p->pid, (long long)tid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return;
	if ((nf = stat_fields(buf, &comm, f, 48)) < 14)
		return;
	/* run and wait time in ns from schedstat, where the kernel shows
	 * it; else utime+stime ticks.  Where it does, a thread whose stat
	 * was read but whose schedstat is gone was released as it exited:
	 * its last reading stands (its ticks, each of utime and stime cut
	 * down to a whole tick, had read as up to 20 ms less CPU than the
	 * reading before, and a thread's last reading is its CPU time) */
	snprintf(path, sizeof(path), "/proc/%lld/task/%lld/schedstat",
	    (long long)p->pid, (long long)tid);
	{
		char sb[256];
		unsigned long long run, wait, slices;
		if (read_file(path, sb, sizeof(sb)) > 0 &&
		    sscanf(sb, "%llu %llu %llu", &run, &wait, &slices) == 3) {
			v[0] = (int64_t)run;
			v[1] = (int64_t)wait;
			v[5] = (int64_t)slices;
		} else if (s->schedstat) {
			return;
		} else {
			v[0] = (strtoll(f[11], NULL, 10) + strtoll(f[12], NULL,
			    10)) * (1000000000 / s->ticks);
			v[1] = -1;
			v[5] = -1;
		}
	}
	if ((t = thread_get(p, tid)) == NULL)
		return;
	t->gen = s->gen;
	/* named when first read, and again when it renames itself (is-record's
	 * own thread in the program: read before it took its name, it had
	 * been taken for one of the program's threads, its CPU the
	 * program's) */
	name_thread(s, p, t, comm, !t->seen);
	v[2] = state_code(f[0][0]);
	if (v[2] == 1 && ist_recorder_thread(comm, strlen(comm)))
		s->rec_run++;
	else if (v[2] == 1)
		s->prog_run++;
	snprintf(path, sizeof(path), "/proc/%lld/task/%lld/status",
	    (long long)p->pid, (long long)tid);
	if (read_file(path, buf, sizeof(buf)) > 0) {
		char *a = strstr(buf, "\nvoluntary_ctxt_switches:");
		char *b = strstr(buf, "\nnonvoluntary_ctxt_switches:");
		v[3] = a ? strtoll(a + 26, NULL, 10) : -1;
		v[4] = b ? strtoll(b + 29, NULL, 10) : -1;
	}
	/* the CPU time at every sample, changed or not: its samples are the
	 * thread's ticks, which cost the calls between them (is-analyze) */
	for (int i = 0; i < 6; i++) {
		if (v[i] < 0 || (i > 0 && t->seen && t->v[i] == v[i]))
			continue;
		counter(s, p->pid, tid, thread_counters[i], ts, v[i], 0, true);
		t->v[i] = v[i];
	}
	t->seen = true;
}

static void
sample_process(struct sampler *s, int64_t pid, int64_t ts)
{
	char path[320], buf[4096], *comm, *f[48];
	struct psample *p;
	DIR *d;
	struct dirent *de;
	int64_t nthreads, ppid;
	int nf;

	snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return;
	if ((nf = stat_fields(buf, &comm, f, 48)) < 22)
		return;
	nthreads = strtoll(f[17], NULL, 10);
	ppid = strtoll(f[1], NULL, 10);
	/* an exited process: a zombie, or one read as the kernel released
	 * it (no threads, no parent, no memory; a helper's one reading had
	 * been a row of its own, its parent unknown, and a process's last
	 * reading its RSS at 0); its last reading stands */
	if (f[0][0] == 'Z' || f[0][0] == 'X' || nthreads <= 0 || ppid <= 0)
		return;
	if ((p = proc_get(s, pid)) == NULL)
		return;
	p->gen = s->gen;
	/* named again after an exec (a wrapper script, a pyenv shim, env):
	 * the command line readers keep is the last one; and once more if
	 * it was named in the middle of an exec, without one */
	{
		bool renamed = p->named && strncmp(p->comm, comm,
		    sizeof(p->comm) - 1) != 0;
		if (!p->named || renamed || !p->have_cmd)
			name_process(s, p, comm, !p->named || renamed);
		/* the program it runs from here: its memory is that
		 * program's (before, a subprocess's was its parent's, whose
		 * copy it was), written before this reading's */
		if (renamed) {
			struct tsample *t = thread_get(p, pid);
			counter(s, pid, -1, "process.execs", ts, ++p->execs,
			    0, true);
			p->rss = p->nthreads = p->ccpu = -1; /* written anew */
			/* its one thread now, the one that exec'd, is named
			 * for the program (even when it is not read again) */
			if (t != NULL && t->seen)
				name_thread(s, p, t, comm, false);
		}
	}
	{
		int64_t majflt = strtoll(f[9], NULL, 10);
		int64_t rss = strtoll(f[21], NULL, 10) * s->page;
		/* the CPU of the children it waited for (cutime, cstime):
		 * a child shorter than a tick has no sample of its own */
		int64_t ccpu = (strtoll(f[13], NULL, 10) + strtoll(f[14],
		    NULL, 10)) * (1000000000 / s->ticks);
		/* its parent: a launcher's helpers (a pyenv shim's bash and
		 * readlink) fold into the program they started */
		if (ppid != p->ppid) {
			counter(s, pid, -1, "process.ppid", ts, ppid, 0, true);
			p->ppid = ppid;
		}
		if (rss != p->rss)
			counter(s, pid, -1, "process.rss_bytes", ts, rss, 0,
			    true);
		if (majflt != p->majflt)
			counter(s, pid, -1, "process.major_faults", ts, majflt,
			    0, true);
		if (nthreads != p->nthreads)
			counter(s, pid, -1, "process.threads", ts, nthreads, 0,
			    true);
		if (ccpu != p->ccpu)
			counter(s, pid, -1, "process.children_cpu_ns", ts, ccpu,
			    0, true);
		p->ccpu = ccpu;
		p->rss = rss;
		p->majflt = majflt;
		p->nthreads = nthreads;
	}
	snprintf(path, sizeof(path), "/proc/%lld/task", (long long)pid);
	if ((d = opendir(path)) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			sample_thread(s, p, strtoll(de->d_name, NULL, 10), ts);
	closedir(d);
}

/* is-record's own threads in state R but the one reading (gathering and
 * compressing the collectors' streams while the program runs): the
 * recorder's, beside its collectors' threads in the program */
static int64_t
own_runnable(void)
{
	char path[300], buf[1024], *comm, *f[4];
	long me = (long)gettid();
	struct dirent *de;
	int64_t n = 0;
	DIR *d;

	if ((d = opendir("/proc/self/task")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9' ||
		    strtol(de->d_name, NULL, 10) == me)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat",
		    de->d_name);
		if (read_file(path, buf, sizeof(buf)) > 0 &&
		    stat_fields(buf, &comm, f, 4) >= 1 && f[0][0] == 'R')
			n++;
	}
	closedir(d);
	return n;
}

/* The machine's own record, its cores and memory: once, at the sampler's
 * first reading of it */
static void
system_record(struct sampler *s, int64_t ts)
{
	struct ist_event ev;

	if (s->have_sys)
		return;
	s->have_sys = true;
	ist_event_init(&ev, IST_PROCESS);
	ev.pid = 0;
	ev.name = (struct ist_str){ "system", 6 };
	ev.host = (struct ist_str){ s->host, strlen(s->host) };
	IST_SET(&ev, IST_F_PID);
	IST_SET(&ev, IST_F_NAME);
	IST_SET(&ev, IST_F_HOST);
	rec_swrite(s, &ev);
	counter(s, 0, -1, "system.cpu_cores", ts,
	    sysconf(_SC_NPROCESSORS_ONLN), 0, true);
	counter(s, 0, -1, "system.memory_bytes", ts,
	    (int64_t)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE), 0, true);
}

static void
sample_system(struct sampler *s, int64_t ts)
{
	char buf[8192];
	unsigned long long v[10] = { 0 }, busy, total;
	char *r;

	if (read_file("/proc/stat", buf, sizeof(buf)) <= 0)
		return;
	if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
	    &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) < 4)
		return;
	total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	busy = total - v[3] - v[4];
	system_record(s, ts);
	if (s->have_cpu && total > s->last_total)
		counter(s, 0, -1, "system.cpu_utilization", ts, 0,
		    (double)(busy - s->last_busy) /
		    (double)(total - s->last_total), false);
	s->last_busy = busy;
	s->last_total = total;
	s->have_cpu = true;
	if ((r = strstr(buf, "\nprocs_running ")) != NULL) {
		counter(s, 0, -1, "system.runnable", ts,
		    strtoll(r + 15, NULL, 10), 0, true);
		/* of them the program's own: whether it alone wanted more
		 * cores than there are, or others' load queued it; and
		 * InferScope's own threads in its processes, which a run
		 * without recording does not have */
		counter(s, 0, -1, "system.program_runnable", ts, s->prog_run,
		    0, true);
		counter(s, 0, -1, "system.recorder_runnable", ts, s->rec_run +
		    own_runnable(), 0, true);
	}
}

/* Nodes of the machine, found once; none kept when there is only one. */
static void
numa_probe(struct sampler *s)
{
	char path[4200];
	DIR *d;
	struct dirent *de;

	s->numa_probed = true;
	snprintf(path, sizeof(path), "%s/devices/system/node", s->sysfs);
	if ((d = opendir(path)) == NULL)
		return;
	while ((de = readdir(d)) != NULL && s->nnodes < MAX_NODES) {
		char *end;
		long id;
		if (strncmp(de->d_name, "node", 4) != 0 ||
		    !isdigit((unsigned char)de->d_name[4]))
			continue;
		id = strtol(de->d_name + 4, &end, 10);
		if (*end == '\0' && id >= 0 && id < 1 << 20) {
			s->node[s->nnodes] = (int)id;
			s->nlast[s->nnodes][0] = s->nlast[s->nnodes][1] =
			    s->nlast[s->nnodes][2] = -1;
			s->nnodes++;
		}
	}
	closedir(d);
	for (int i = 1; i < s->nnodes; i++)      /* in node order */
		for (int j = i; j > 0 && s->node[j - 1] > s->node[j]; j--) {
			int t = s->node[j];
			s->node[j] = s->node[j - 1];
			s->node[j - 1] = t;
		}
	if (s->nnodes < 2)
		s->nnodes = 0;
}

/* Per node: free memory, and allocations that missed it (numa_miss: meant
 * for this node, placed elsewhere; other_node: placed here for a process
 * running on another), written when they change. */
static void
sample_numa(struct sampler *s, int64_t ts)
{
	static const char *what[3] = {
		"memory_free_bytes", "numa_miss", "other_node"
	};
	char path[4200], buf[8192], name[64], *r;

	if (!s->numa_probed)
		numa_probe(s);
	for (int i = 0; i < s->nnodes; i++) {
		int64_t v[3] = { -1, -1, -1 };
		snprintf(path, sizeof(path), "%s/devices/system/node/node%d/"
		    "meminfo", s->sysfs, s->node[i]);
		if (read_file(path, buf, sizeof(buf)) > 0 &&
		    (r = strstr(buf, "MemFree:")) != NULL)
			v[0] = strtoll(r + 8, NULL, 10) * 1024;
		snprintf(path, sizeof(path), "%s/devices/system/node/node%d/"
		    "numastat", s->sysfs, s->node[i]);
		if (read_file(path, buf, sizeof(buf)) > 0) {
			if ((r = strstr(buf, "numa_miss ")) != NULL)
				v[1] = strtoll(r + 10, NULL, 10);
			if ((r = strstr(buf, "other_node ")) != NULL)
				v[2] = strtoll(r + 11, NULL, 10);
		}
		for (int k = 0; k < 3; k++) {
			if (v[k] < 0 || v[k] == s->nlast[i][k])
				continue;
			s->nlast[i][k] = v[k];
			snprintf(name, sizeof(name), "numa.node%d.%s",
			    s->node[i], what[k]);
			counter(s, 0, -1, name, ts, v[k], 0, true);
		}
	}
}

/* The root and every descendant of it, from the ppid in /proc/N/stat. */
static size_t
descendants(pid_t root, int64_t *out, size_t max)
{
	static int64_t pid[MAX_PROCS * 4], ppid[MAX_PROCS * 4];
	size_t n = 0, nout = 0;
	DIR *d = opendir("/proc");
	struct dirent *de;
	char path[320], buf[1024], *comm, *f[8];

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL && n < MAX_PROCS * 4) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		if (read_file(path, buf, sizeof(buf)) <= 0 ||
		    stat_fields(buf, &comm, f, 8) < 2)
			continue;
		pid[n] = strtoll(de->d_name, NULL, 10);
		ppid[n++] = strtoll(f[1], NULL, 10);
	}
	closedir(d);
	out[nout++] = root;
	for (size_t i = 0; i < nout && nout < max; i++)
		for (size_t j = 0; j < n && nout < max; j++)
			if (ppid[j] == out[i])
				out[nout++] = pid[j];
	return nout;
}

/*
 * The children pid's main thread started, not yet in pids: a worker
 * forked or spawned is sampled in the tick it is found, right after its
 * parent, not up to 100 ms later at the full scan of /proc (a tenth of
 * the ticks: they read every process of the machine; a Pool's or a
 * DataLoader's workers are started by the main thread; a child of another
 * thread waits for the scan).  Read after the parent's reading, so that a
 * child it forked before that reading's stamp is there: read before the
 * tick's readings, a child forked in between was missed by that tick.
 * Appended to pids; returns their number.
 */
static size_t
new_children(int64_t *pids, size_t n, size_t max, int64_t pid)
{
	char path[96], buf[4096], *p = buf, *end;

	snprintf(path, sizeof(path), "/proc/%lld/task/%lld/children",
	    (long long)pid, (long long)pid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return n;
	for (;;) {
		long long c = strtoll(p, &end, 10);
		size_t j;
		if (end == p)
			break;
		p = end;
		for (j = 0; j < n && pids[j] != c; j++)
			;
		if (j == n && n < max && c > 0)
			pids[n++] = c;
	}
	return n;
}

void
rec_sample_begin(struct sampler *s)
{
	system_record(s, ist_capture_now_ns());
}

void
rec_sample(struct sampler *s, bool rescan)
{
	static int64_t pids[MAX_PROCS];
	static size_t npids;

	s->gen++;
	s->prog_run = 0;
	s->rec_run = 0;
	if (rescan || npids == 0)
		npids = descendants(s->root, pids, MAX_PROCS);
	/* each reading at its own time, not the tick's: a scan of /proc or
	 * a wait for a core between them does not age it; then the
	 * process's new children, read after it */
	for (size_t i = 0; i < npids; i++) {
		sample_process(s, pids[i], ist_capture_now_ns());
		npids = new_children(pids, npids, MAX_PROCS, pids[i]);
	}
	sample_system(s, ist_capture_now_ns());
	if (rescan)
		sample_numa(s, ist_capture_now_ns());     /* a tenth as often */
}
