/*
 * report_int.h - shared by is-report's renderers (lib/report/); not
 * installed.
 */
#ifndef IST_REPORT_INT_H
#define IST_REPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/*
 * Room for the figures of one line of a report: each call of dur(),
 * bytes() and span() takes the next slot, so that a line may print eight
 * figures at once.  Declare one with `struct nums u = { 0 };`.
 */
struct nums {
	char b[8][64];
	unsigned i;
};

/* A duration in ns, as "812 ns", "3.4 µs", "12.50 ms", "1.204 s". */
const char *dur(struct nums *u, double ns);
/* A size, as "512 B", "3.0 KiB", "1.5 MiB", "2.00 GiB". */
const char *bytes(struct nums *u, double v);
/* A range from start s to end e, both in ns, from the run's start t0. */
const char *span(struct nums *u, double s, double e, double t0);
/* A duration for an axis tick, one digit less: "3 µs", "12.5 ms". */
const char *dur_tick(char *b, size_t n, double ns);

/*
 * The timeline of a trace: a lane per thread and per GPU stream, each
 * keeping the time covered per category in COLS columns whose width (w)
 * doubles whenever the run outgrows them, so memory is bounded whatever the
 * trace's length.  Filled by ist_timeline_add() (report_html.c), drawn by
 * the HTML and the terminal reports.
 */
#define COLS 1000
#define MAXLANES 48

enum cat { C_SCOPE, C_NVTX, C_PY, C_CUDA, C_SYNC, C_KERNEL, C_H2D, C_D2H,
    C_D2D, C_MEMSET, NCAT };

/* A thread's Python calls merged by call path (the flame graph), and the
 * calls open on it as the trace streams past (report_detail.c). */
struct fnode {
	uint32_t name, parent;   /* parent: node index; the root is 0 */
	int64_t incl, self;
};
struct flame {
	struct fnode *n;
	size_t nn, cap;
	struct fopen { int64_t end; uint32_t node; } *st;
	size_t depth, capst;
	int64_t imp_end;         /* the outermost import open till here */
};

struct lane {
	bool gpu;
	int idx;                 /* in the timeline's lanes */
	int64_t pid, tid;        /* GPU: device, stream */
	char name[96];
	struct flame fl;
	int64_t cov[NCAT][COLS];
};

/* A range kept for the zoomable timeline: times from the timeline's t0. */
struct slice {
	int64_t s, d, corr;      /* corr: -1 none */
	uint32_t name;           /* in the timeline's names */
	uint8_t lane, cat, gc;
};

struct ist_timeline {
	struct lane *lane[MAXLANES];
	int nlanes;
	uint64_t undrawn;        /* events on lanes past MAXLANES */
	int64_t t0, w;           /* origin and column width, ns */
	bool have_t;
	struct names { int64_t pid, tid; char name[80]; } *names;
	size_t nnames, capnames;
	/* the HTML's detail (report_detail.c): ranges down to min_dur (it
	 * doubles whenever they pass a budget), import phases, and per thread
	 * the flame graph of its Python calls */
	bool detail;
	struct slice *sl;
	size_t nsl, capsl;
	int64_t min_dur;
	uint64_t sl_dropped;
	struct phase { int64_t s, e; uint8_t lane; } *ph;
	size_t nph, capph;
	struct ist_strtab *dnames;
	struct fkey { uint64_t key; uint32_t node; } *fmap;
	uint32_t fmask, fused, fnodes;
	uint64_t fmerged;        /* calls past the node budget: in the parent */
};

/* The detail of event ev, on lane l (index li) in category c, when
 * tl->detail: -1 out of memory. */
int ist_detail_add(struct ist_timeline *tl, struct lane *l, int li,
    enum cat c, const struct ist_event *ev);
/* The detail as the JSON the HTML's viewer reads, lanes in the order of
 * sorted (their drawing order). */
int ist_detail_json(const struct ist_timeline *tl, struct lane *const *sorted,
    struct ist_buf *o);
void ist_detail_free(struct ist_timeline *tl);

/* Lanes in drawing order: threads by pid and tid, then GPU streams. */
int ist_lane_cmp(const void *x, const void *y);
/* The columns holding anything: 1 + the last one used, 0 when none; and
 * in used, the categories drawn at all. */
int ist_timeline_used(const struct ist_timeline *tl, bool used[NCAT]);

#endif
