/*
 * merge_int.h - shared by is-merge's files (lib/merge/); not installed.
 */
#ifndef IST_MERGE_INT_H
#define IST_MERGE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zstd.h>

#include "clock.h"
#include "internal.h"
#include "merge.h"

/* ---- segments and their clocks ---- */

struct segment {
	char *producer, *host;
	struct ist_blob pids, sources;   /* owned copies */
	bool have_snap;
	int64_t realtime, monotonic;
	int64_t shift;                   /* to the reference host's clock */
	int64_t uncertainty;
	bool aligned;
	bool all_cupti;                  /* every time is in CUPTI's clock */
	struct ist_clock_fit *dom;
	size_t ndom;
	/* the segment whose clock pairs and fits this one's are: itself,
	 * or the first of the same stream (a flight recorder's frames,
	 * each beginning with the stream's header again, the pairs in a
	 * few of them) */
	size_t clk;
};

struct input {
	char *path;          /* the file read (stdin spooled to a file) */
	char *name;          /* as given */
	bool spooled;
	uint64_t size;       /* bytes, for the progress line */
};

/* An input that could not be read whole: carried into the merged header
 * (its source's "input", "error", "truncated_bytes"), so that every later
 * stage says so. */
struct damage {
	const char *input;   /* the input's name, as given */
	char *error;         /* the reader's message; NULL when only cut */
	int64_t truncated;   /* bytes dropped at its end */
	long seg;            /* the segment it cut short, -1 for none */
};

/* ---- packed events ---- */

struct ent {             /* the sort index: 16 bytes an event */
	int64_t key;
	uint32_t off, len;   /* in the sort buffer (at most 4 GiB) */
};

/* A sort buffer's records and their index, as handed to a spill. */
struct sortbuf {
	uint8_t *arena;
	struct ent *ents;
	size_t ne;
};

struct gtrack {
	uint32_t mask;       /* pid, tid, device, stream present */
	uint64_t hash;
	int64_t key[4];
};

/* A timed record's constant part (pack.c): a call, scope or NVTX range of
 * a thread with only its name, file or domain and line; written from the
 * bytes the writer keeps for it (ist_writer_timed) */
struct gfn {
	uint64_t hash;
	uint32_t name, more;     /* the merge's string ids; more 0: none */
	int64_t line;            /* 0: none */
	uint8_t type;
	struct ist_wdef wd;
};

struct segmap {          /* the current segment's ids to the merge's */
	uint32_t *str, *trk;
	size_t nstr, ntrk;
	uint32_t *fn;            /* by name id: the timed record last seen
	                          * of that name (checked: a name may have
	                          * several files and lines) */
	size_t nfn;
};

struct run {
	int fd;
	char path[4200];
	ZSTD_DCtx *z;
	uint8_t *in, *out;
	size_t in_pos, in_n, out_pos, out_n, out_cap;
	bool eof;
	/* the current record */
	int64_t key;
	uint8_t *rec;
	size_t rec_n;
	size_t idx;
	bool done;
	bool bad;                /* it could not be read to its end */
	/* a run still in memory (the last sort buffer, sorted): no file */
	const struct ent *mem;
	const uint8_t *mem_arena;
	size_t mem_n;
	int level;               /* 0 spilled; n+1 merged from level n */
};

struct merger {
	const struct ist_merge_opts *o;
	ist_note_fn note;
	void *ctx;
	struct segment *seg;
	size_t nseg, capseg;
	int ref;                 /* reference segment, -1 if none */
	/* the sort buffer being filled, and its twin: while one fills, the
	 * other is sorted and spilled by a thread of its own */
	uint8_t *arena, *arena2;
	size_t an, acap;
	struct ent *ents, *ents2;
	size_t ne, cape;
	struct ent *tmp;         /* the radix sort's other half */
	uint32_t (*count)[65536]; /* and its counts, four digits' */
	pthread_t spiller;
	bool spilling;           /* spiller runs (join it before the runs) */
	struct sortbuf job;      /* what it spills */
	enum ist_status spill_st;
	struct ist_error spill_err;
	struct run *runs;
	size_t nruns;
	size_t fanin;            /* runs read at once (tiers in runs.c) */
	bool damaged;            /* some input was not read whole */
	struct damage *dmg;
	size_t ndmg;
	bool ahead;              /* inputs read ahead (ist_reader_ahead) */
	bool moving;             /* pass 1 met a clock record: pass 2 will
	                          * sort, pass 1 need not */
	/* strings and tracks of all inputs, numbered 1, 2, ... */
	struct ist_strtab strs;  /* blocks that never move: an unpacked
	                          * event's strings stay where they are, so
	                          * the writer takes them as stable */
	struct gtrack *tracks;
	size_t ntrack, tracks_cap;
	uint32_t *ttab;
	size_t ttab_cap;
	struct gfn *fns;
	size_t nfn, fns_cap;
	uint32_t *ftab;
	size_t ftab_cap;
	struct segmap map;
	/* progress: bytes of the inputs read before this one, in all */
	uint64_t done_bytes, total_bytes, nread;
};

/* ---- across the merge's files ---- */

uint32_t mg_gstring(struct merger *m, struct ist_str s);
uint32_t mg_gtrack(struct merger *m, const struct ist_event *ev);
uint32_t mg_gfn(struct merger *m, int type, uint32_t name, uint32_t more,
    int64_t line, bool yielded);
uint8_t *mg_pack(struct merger *m, const struct ist_reader *r,
    const struct ist_event *cev, uint8_t *p);
size_t mg_pack_bound(const struct ist_event *cev);
void mg_sort_ents(struct merger *m, struct ent *ents, size_t n);
void mg_unpack(const struct merger *m, const uint8_t *p, int64_t key,
    struct ist_event *ev);
/* The merged records into the writer (pack.c): timed records of one
 * thread in a row go as one run (ist_writer_timed_run), the others
 * unpacked into ev */
#define EMIT_RUN 256
struct emit {
	struct merger *m;
	struct ist_writer *w;
	struct ist_event ev;
	struct ist_timed run[EMIT_RUN];
	size_t n;
	uint32_t track;          /* the run's */
};
void mg_emit_init(struct emit *e, struct merger *m, struct ist_writer *w);
enum ist_status mg_emit(struct emit *e, const uint8_t *p, int64_t key,
    struct ist_error *err);
/* The run held back, written */
enum ist_status mg_emit_end(struct emit *e, struct ist_error *err);
void mg_run_close(struct run *r);
bool mg_run_next(struct run *r);
int mg_run_open(struct run *r);
void mg_sift(struct run *runs, size_t *h, size_t n, size_t i);
enum ist_status mg_spill(struct merger *m, const struct sortbuf *b,
    struct ist_error *err);
enum ist_status mg_runs_final(struct merger *m, size_t room,
    struct ist_error *err);
/* One record of a merge of runs, handed on (mg_runs_merge). */
typedef enum ist_status (*mg_put_fn)(void *ctx, const struct run *r,
    struct ist_error *err);
enum ist_status mg_runs_merge(struct run *runs, size_t k, mg_put_fn put,
    void *ctx, struct ist_error *err);
/* The same, with the runs read and merged by a thread of their own. */
enum ist_status mg_runs_merge_fed(struct run *runs, size_t k, mg_put_fn put,
    void *ctx, struct ist_error *err);
size_t mg_run_reader_bytes(void);
int mg_write_all(int fd, const void *p, size_t n);
/* a note to the tool's callback, formatted */
void mg_note(struct merger *m, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* sources.c: the merged header and the damage it carries on */
int mg_add_damage(struct merger *m, const struct input *in,
    const char *error, int64_t truncated, long seg);
void mg_carried_damage(struct merger *m, const struct input *in,
    struct ist_blob sources);
enum ist_status mg_write_header(struct merger *m, struct ist_writer *w,
    struct ist_error *err);

#endif
