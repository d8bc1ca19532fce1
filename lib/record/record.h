/*
 * record.h - is-record's engine: run a command with the collectors
 * injected, sample /proc while it runs, and gather every process's stream
 * into one trace.
 */
#ifndef IST_RECORD_H
#define IST_RECORD_H

#include <stdbool.h>
#include "ist.h"

#define IST_DUMP_ON_SIGNAL 1u      /* SIGUSR1 to is-record */
#define IST_DUMP_ON_API 2u         /* inferscope.dump() */
#define IST_DUMP_ON_EXIT 4u        /* the process's end */

struct ist_record_opts {
	char *const *argv;          /* the command */
	const char *pydir;          /* bootstrap dir for PYTHONPATH; NULL: none */
	const char *nvtx_lib;       /* NVTX injection library; NULL: none */
	const char *cupti_lib;      /* CUDA injection library; NULL: none */
	bool py_calls;              /* record every Python call (not only scopes) */
	bool ring;                  /* flight recorder: keep the newest events */
	long long trace_size_mb;    /* ring budget of each process */
	long long py_min_us;
	int sample_hz;              /* 0: no /proc sampling */
	const char *log_level;
	const char *tmpdir;         /* where streams wait; NULL: $TMPDIR or /tmp */
	const char *sysfs;          /* where NUMA nodes and cgroup quotas
	                             * are read; NULL: /sys */
	/* with out_fd -1: opens the output once the command has ended, so
	 * that a recorder killed before leaves no empty output behind */
	int (*open_out)(void *ctx, struct ist_error *err);
	void *open_ctx;
	const char *out_name;       /* the output, in messages; NULL: stdout */
	/* capture ranges (lib/trace/capture.h): recording from delay_ns
	 * after the start, for duration_ns (0: to the end); with
	 * capture_api, from inferscope.start() or cudaProfilerStart();
	 * with nvtx names, while a range of one is open (count: the first
	 * count ranges, -1 all).  SIGUSR2 to is-record switches it. */
	int64_t delay_ns, duration_ns;
	bool capture_api;
	/* with ring: the flight recorder writes its window at these
	 * (IST_DUMP_ON_*); none: at exit and at inferscope.dump() */
	unsigned dump_on;
	int nnvtx;
	struct { const char *name; int count; } nvtx[8];
};


/*
 * Runs the command and writes the trace to out_fd.  *exit_status is the
 * command's status as a shell reports it: its exit code, 128+N after
 * signal N, 127 when it cannot be found, 126 when it cannot be run.
 * Returns IST_OK when the trace was written (whatever the command did).
 */
enum ist_status ist_record_run(const struct ist_record_opts *o, int out_fd,
    int *exit_status, ist_note_fn note, void *ctx, struct ist_error *err);

/*
 * Writes to out_fd the trace a killed is-record left in dir (its streams,
 * as far as they go), then removes dir.  Refuses a dir that is not one of
 * is-record's, or whose is-record still runs.
 */
enum ist_status ist_record_recover(const char *dir, int out_fd,
    ist_note_fn note, void *ctx, struct ist_error *err);

#endif
