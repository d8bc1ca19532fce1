/*
 * report.h - is-report's renderers: Markdown and JSON from an analysis
 * (formats/analysis.md), HTML from the Markdown (cmark-gfm) with inline SVG
 * charts drawn from the trace's events, and a Chrome trace-event JSON
 * export that Perfetto opens.  Everything is streaming and reproducible:
 * the same input gives the same bytes.
 */
#ifndef IST_REPORT_H
#define IST_REPORT_H

#include <jansson.h>
#include "ist.h"

#define IST_REPORT_VERSION 1

/* Markdown (GitHub-flavoured) for an analysis, appended to out. */
enum ist_status ist_report_markdown(const json_t *an, struct ist_buf *out,
    struct ist_error *err);

/* {"report_version": 1, "producer": ..., "analysis": an}, indented. */
enum ist_status ist_report_json(const json_t *an, struct ist_buf *out,
    struct ist_error *err);

/* The timeline of a trace, binned for charts in bounded memory. */
struct ist_timeline;
struct ist_timeline *ist_timeline_new(void);
void ist_timeline_free(struct ist_timeline *tl);
int ist_timeline_add(struct ist_timeline *tl, const struct ist_event *ev);

/* One self-contained HTML page: styles, the Markdown rendered, and SVG
 * charts (timeline lanes, GPU utilisation, scopes). */
enum ist_status ist_report_html(const json_t *an,
    const struct ist_timeline *tl, struct ist_buf *out, struct ist_error *err);

/* The terminal report: the verdict, the findings, a timeline strip per
 * thread and GPU stream, the top scopes, functions and kernels. */
struct ist_text_opts {
	int width;           /* columns; 0: 80 */
	bool color;          /* SGR colour escapes */
	bool ascii;          /* plain ASCII, not UTF-8 */
};
enum ist_status ist_report_text(const json_t *an,
    const struct ist_timeline *tl, const struct ist_text_opts *to,
    struct ist_buf *out, struct ist_error *err);
/* The verdict and the first nfindings findings, a line each (each cut at
 * to->width when it is not 0): what inferscope run prints when it ends. */
enum ist_status ist_report_brief(const json_t *an, int nfindings,
    const struct ist_text_opts *to, struct ist_buf *out);

/* Chrome trace-event JSON, written as events are read: the events that
 * overlap [from_ns, to_ns) after the first timed event (0: no bound), and
 * of the ranges those of min_dur_ns or longer (0: all).  Zeroed options
 * export everything. */
struct ist_perfetto;
struct ist_perfetto_opts {
	int64_t from_ns, to_ns;
	int64_t min_dur_ns;
};
enum ist_status ist_perfetto_new(struct ist_perfetto **out, int fd,
    const struct ist_perfetto_opts *po, struct ist_error *err);
/* Bytes of JSON written so far (those still buffered included). */
uint64_t ist_perfetto_bytes(const struct ist_perfetto *p);
enum ist_status ist_perfetto_add(struct ist_perfetto *p,
    const struct ist_event *ev, struct ist_error *err);
/* Closes the event array and writes otherData (the verdict, clock
 * uncertainty, loss) from an, which may be NULL. */
enum ist_status ist_perfetto_finish(struct ist_perfetto *p, const json_t *an,
    struct ist_error *err);
void ist_perfetto_free(struct ist_perfetto *p);

/* ---- the whole pass (report_run.c) ---- */

enum ist_report_format {
	IST_REPORT_MD, IST_REPORT_HTML, IST_REPORT_JSON, IST_REPORT_PERFETTO,
	IST_REPORT_TEXT
};
struct ist_rules;

/*
 * Reads r to its end and writes the report to out_fd.  The analysis is the
 * trace's last analysis record or, without one, made here with o->rules.
 * A segment whose header promises an analysis (analysis_version, written
 * by is-analyze) is not analysed again unless o->analyse: its records only
 * feed the charts and the export.  When that promise is broken (the
 * analysis was cut off), res->analysis_missing is set and md, html and json
 * write nothing and fail (read the trace again with o->analyse), while
 * perfetto ends its export without the analysis's summary.
 *
 * Returns IST_OK; IST_TRUNCATED or a reader error after what was read was
 * reported (err holds the message); or an error with nothing written when
 * no segment could be read or the output failed.  res says whether
 * anything was written and holds the analysis reported, for the caller's
 * warnings (its data_quality: records out of order, damage), which the
 * caller releases.
 */
struct ist_report_opts {
	enum ist_report_format format;
	struct ist_text_opts text;   /* for IST_REPORT_TEXT */
	struct ist_perfetto_opts perfetto; /* for IST_REPORT_PERFETTO */
	/* called every 65536 events: where the reading is in the input
	 * (ist_reader_stats's at_bytes) and what has been written
	 * (perfetto), for a progress line or a warning */
	void (*progress)(void *ctx, uint64_t in_bytes, uint64_t events,
	    uint64_t out_bytes);
	void *progress_ctx;
	const struct ist_rules *rules;
	const struct ist_again *again;   /* the steps' second reading, or NULL */
	bool analyse;        /* analyse even a trace that carries its own */
	/* a report that needs only the analysis a header promises looks for
	 * it at frame starts only (ist_reader_skim), where is-analyze puts it;
	 * res->skimmed says so, and a second reading without it may find an
	 * analysis another writer put elsewhere */
	bool skim;
	/* called at the first header with whether it promises an analysis
	 * (is-report keeps a pipe's bytes for a second reading only then) */
	void (*on_header)(void *ctx, bool promised);
	void *ctx;
};
struct ist_report_result {
	bool wrote;
	bool from_trace;     /* the analysis was the trace's own */
	bool analysis_missing; /* promised by a header, not found */
	bool skimmed;        /* looked for it by skimming (opts.skim) */
	json_t *analysis;    /* NULL when nothing was reported */
};
enum ist_status ist_report_trace(struct ist_reader *r,
    const struct ist_report_opts *o, int out_fd,
    struct ist_report_result *res, struct ist_error *err);

#endif
