/*
 * common.h - what every tool's main() does alike, in one place (as jq's
 * util.c serves its main): the version line, the settings in their order
 * of precedence, and opening an input.  Tools may print and exit; these
 * do, with the tool's name first.
 */
#ifndef IST_TOOLS_COMMON_H
#define IST_TOOLS_COMMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct ist_rules;

/* "is-merge 0.1.0 (trace format 1.0)" on standard output. */
void tool_version(void);

/*
 * The settings in effect, for every tool alike: what the command line set
 * in cfg (IST_SRC_CLI), over the INFERSCOPE_* environment, over
 * ./.inferscope.yaml (parsed once), over the defaults.  With rules, also
 * the thresholds: defaults, the file's rules: section, then the rules file
 * (rules_file, the command line's, else the rules_file setting).  A bad
 * setting exits 2 with one line naming where it came from.
 */
void tool_settings(struct ist_config *cfg, struct ist_rules **rules,
    const char *rules_file);

/* A number of seconds >= 0 given to option opt (--delay, --from), in ns;
 * exits 2 naming opt when v is not one. */
int64_t tool_seconds(const char *opt, const char *v);

/* An input by name ("-": standard input); exits 1 naming it when it
 * cannot be opened. */
int tool_open_input(const char *path);

/*
 * Progress on standard error, as zstd shows it: only when stderr is a
 * terminal, not when quiet, and only for an input of 4 MiB or more (one of
 * unknown size: once 4 MiB are read).  A line, redrawn at most 4 times a
 * second: the share read of total where known, events/s, the time left;
 * tool_progress_end() erases it.
 */
struct tool_progress {
	bool on, shown;
	uint64_t total;          /* the input's bytes; 0: unknown */
	double t0, last;
	/* tool_progress_source: the input and its reader */
	int fd;
	struct ist_reader *r;
	struct tool_spool *spool;    /* read through it, when set */
};
void tool_progress_start(struct tool_progress *p, int fd, bool quiet);
/* at: bytes of the input read (the reader's at_bytes); total: when the
 * caller knows it better (0: the input's size) */
void tool_progress_show(struct tool_progress *p, uint64_t at, uint64_t total,
    uint64_t events);
void tool_progress_end(struct tool_progress *p);
/* An ist_source_fn reading p->fd that shows the progress of p->r (set once
 * the reader exists; ist_reader_progress, so it may run on the thread
 * that reads p->r ahead). */
long tool_progress_source(void *p, void *buf, size_t n);

/*
 * A trace read twice (the steps' second pass, an analysis cut off a
 * trace): from a file, read again from where it started; from a pipe,
 * what the first reading read is also kept in an unlinked temporary file
 * in $TMPDIR (the compressed trace).  Without room there, no second
 * reading (the analysis then says so).
 */
struct tool_spool {
	int in, keep;            /* keep: the copy, -1 none */
	long long start;         /* a file's offset at the start; -1 a pipe */
	/* the copy as a second reader may read it while the first reads
	 * (tool_spool_more): its bytes written, whether the input has
	 * ended, and whether the copy failed (no room) */
	_Atomic uint64_t written;
	atomic_bool ended, broken;
	atomic_bool quit;        /* tool_spool_quit: reading gives up */
};
/* keep: whether to copy a pipe at all */
void tool_spool_init(struct tool_spool *s, int fd, bool keep);
long tool_spool_source(void *s, void *buf, size_t n);
/* An ist_again opener (analysis_io.h): a descriptor at the trace's start,
 * -1 when it cannot be read again. */
int tool_spool_again(void *s);
/* ist_again's follow and more: the trace read from another thread while
 * tool_spool_source still reads it */
int tool_spool_follow(void *s, uint64_t *base);
long tool_spool_more(void *s, uint64_t off);
/* From any thread: a read of a pipe waiting for its writer gives up
 * (within 0.1 s: -1, ECANCELED), and every later one; for a reader read
 * ahead (its thread reads through tool_spool_source) before it is freed,
 * which would otherwise wait for the writer's next bytes. */
void tool_spool_quit(struct tool_spool *s);
void tool_spool_release(struct tool_spool *s);

#endif
