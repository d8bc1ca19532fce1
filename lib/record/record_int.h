/*
 * record_int.h - shared by is-record's engine (lib/record/); not installed.
 */
#ifndef IST_RECORD_INT_H
#define IST_RECORD_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"
#include "record.h"

#define MAX_PROCS 4096
#define MAX_NODES 64

/* ---- the /proc sampler (sampler.c) ---- */

struct tsample {
	int64_t tid;
	int64_t v[6];            /* last values written */
	bool seen;
	uint64_t gen;
	char comm[16];           /* as named: a thread that names itself
	                          * after it was first read is named again */
};

struct psample {
	int64_t pid;
	bool named;
	char comm[32];          /* as named: a new one means an exec */
	bool have_cmd;          /* named with its command line */
	bool python;            /* named python*: should have a stream */
	char cmd[120];          /* its command line, for a warning */
	int64_t rss, majflt, nthreads, ppid;
	int64_t ccpu;           /* its waited-for children's CPU, ns */
	int64_t execs;          /* new names seen: execs */
	struct tsample *t;
	size_t nt, capt;
	uint64_t gen;
};

struct sampler {
	struct ist_writer *w;
	int fd;
	pid_t root;
	struct psample *p;
	size_t np, capp;
	uint64_t gen;
	unsigned long long last_busy, last_total;
	bool have_cpu;
	bool have_sys;             /* the machine's record written */
	int64_t prog_run;            /* the program's threads found in state R
	                              * this tick (running or queued) */
	int64_t rec_run;             /* and InferScope's own among them (not
	                              * counted in prog_run) */
	long page, ticks;
	bool schedstat;          /* this kernel shows it (its run time in ns) */
	char host[256];
	ist_note_fn note;
	void *ctx;
	bool failed;
	struct ist_error err;
	/* NUMA nodes, sampled when there is more than one */
	const char *sysfs;
	bool numa_probed;
	int nnodes;
	int node[MAX_NODES];
	int64_t nlast[MAX_NODES][3];
	/* the capture switch (capture.c) */
	struct ist_capture *cap;
	uint64_t cap_written;        /* switches written as records */
	int64_t cap_delay_at, cap_end_at;   /* 0: none (or done) */
	unsigned dump_on;            /* IST_DUMP_ON_* (with --ring) */
};

/* ---- the streams into the output (gather.c) ---- */

/* Compresses the streams in dir as the collectors finish their frames,
 * on a thread of its own at the lowest priority; NULL when it cannot, or
 * must not: under a CPU quota (s->sysfs's control groups), where the
 * program would pay for it. */
struct rec_ahead *rec_ahead_start(const char *dir, struct sampler *s);
void rec_ahead_stop(struct rec_ahead *a);       /* its work as it is */
void rec_ahead_free(struct rec_ahead *a);       /* joins it; a may be NULL */
/* scandir's filter of a process's stream (<pid>.ist, <pid>-cupti.ist),
 * not the sampler's */
struct dirent;
int rec_is_stream(const struct dirent *d);
/* Copies the whole zstd frames of the stream at path to out, stored ones
 * compressed (a's work where it holds; a may be NULL); warns about a cut
 * tail. */
enum ist_status rec_gather(const char *path, int out, struct sampler *s,
    struct rec_ahead *a, struct ist_error *err);

/* a note to the tool's callback, formatted */
void rec_note(struct sampler *s, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* an event into the sampler's stream; the first error is kept in s->err */
void rec_swrite(struct sampler *s, const struct ist_event *ev);
/* The capture page in dir, its first switch the state the recording
 * begins in; 0 or an errno (then the recording is always on). */
int rec_capture_start(struct sampler *s, const struct ist_record_opts *o,
    const char *dir);
/* When the next timer of the capture runs out (CLOCK_MONOTONIC ns), or
 * INT64_MAX. */
int64_t rec_capture_next(const struct sampler *s);
/* Runs the timers due at now and writes the switches not yet written as
 * capture records; toggle: SIGUSR2 came; dump: SIGUSR1 (--dump-on). */
void rec_capture_tick(struct sampler *s, int64_t now, bool toggle,
    bool dump);
/* The last switches written; the page unmapped. */
void rec_capture_end(struct sampler *s);
/* The machine's record, before the command is started: the reading
 * every process of the run comes after (is-analyze: their clocks count
 * from their birth) */
void rec_sample_begin(struct sampler *s);
/* one sample of the recorded processes and the machine; rescan: look for
 * new processes and sample the NUMA nodes too */
void rec_sample(struct sampler *s, bool rescan);
/* The process pid as sampled so far, or NULL */
struct psample *rec_proc_find(struct sampler *s, int64_t pid);
/* The command's end, its wait status: process.exit_code or exit_signal. */
void rec_exit(struct sampler *s, pid_t pid, int status);

#endif
