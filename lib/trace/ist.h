/*
 * ist.h - libinferscope: the InferScope trace format (formats/trace-format.md).
 *
 * The library is silent: it never prints, never exits and never reads the
 * environment.  Every function that can fail returns an enum ist_status and,
 * when given one, fills a struct ist_error whose message names the input, the
 * record index and the reason, and which says where it went wrong: in an
 * input (a tool warns and goes on to the next), in the output (a tool
 * stops), or in the tool itself.
 *
 * Ownership, stated once: an event returned by ist_reader_next(), and every
 * string or CBOR blob it points to, belongs to the reader and stays valid
 * until the next call to ist_reader_next() or ist_reader_free().  Events given
 * to ist_writer_write() are copied before the call returns.
 */
#ifndef IST_H
#define IST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IST_FORMAT_NAME "inferscope-trace"
#define IST_VERSION_MAJOR 1
#define IST_VERSION_MINOR 4
#define IST_PACKAGE_VERSION "0.1.0"
/* A garbage collection, as the Python collector records it: a cpu_call
 * named "gc (generation 2)" (formats/trace-format.md). */
#define IST_GC_NAME_FMT "gc (generation %d)"

enum ist_status {
	IST_OK = 0,
	IST_END,        /* no more records (not an error) */
	IST_TRUNCATED,  /* input ends inside a frame: a warning, then IST_END */
	IST_EEMPTY,     /* input holds no bytes at all */
	IST_ENOTTRACE,  /* input is not an InferScope trace */
	IST_EVERSION,   /* a major version this library cannot read */
	IST_ECORRUPT,   /* a frame or record is malformed */
	IST_EINVAL,     /* a caller or JSON input error */
	IST_EIO,        /* read or write failed (errno in ist_error.sys_errno) */
	IST_ENOMEM,
	IST_ELIMIT,     /* a declared size exceeds a documented limit */
	IST_EPARTIAL    /* some inputs could not be read whole: the output
	                 * holds the rest and says what was lost */
};

/* Where an error happened, which decides what a tool does next. */
enum ist_where {
	IST_AT_SELF = 0,  /* the caller or the library: memory, a bad argument */
	IST_AT_INPUT,     /* reading or decoding an input */
	IST_AT_OUTPUT     /* writing the output */
};

#define IST_ERROR_MAX 512

struct ist_error {
	enum ist_status status;
	enum ist_where where;   /* IST_AT_SELF unless said otherwise */
	int sys_errno;          /* for IST_EIO, else 0 */
	uint64_t record;        /* 1-based record index in the input, 0 if none */
	uint64_t offset;        /* byte offset in the (compressed) input */
	char msg[IST_ERROR_MAX];
};

const char *ist_strerror(enum ist_status status);

/* What a long task says on the way (the tool prints it): one callback for
 * every layer; IST_NOTE_ERROR is a part of the input left out (a bad
 * line), the run going on. */
enum { IST_NOTE_DEBUG, IST_NOTE_INFO, IST_NOTE_WARN, IST_NOTE_ERROR };
typedef void (*ist_note_fn)(void *ctx, int level, const char *msg);

/* A string that is not NUL-terminated. */
struct ist_str {
	const char *p;
	size_t n;
};

/* A single CBOR data item, encoded: metadata, cmdline and analysis data. */
struct ist_blob {
	const uint8_t *p;
	size_t n;
};

enum ist_type {
	IST_HEADER = 0,
	IST_PROCESS,
	IST_THREAD,
	IST_DEVICE,
	IST_CPU_CALL,
	IST_SCOPE,
	IST_INSTANT,
	IST_NVTX_RANGE,
	IST_NVTX_MARK,
	IST_CUDA_API,
	IST_GPU_KERNEL,
	IST_H2D_COPY,
	IST_D2H_COPY,
	IST_D2D_COPY,
	IST_MEMSET,
	IST_SYNC,
	IST_MEMORY_ALLOC,
	IST_MEMORY_FREE,
	IST_COUNTER,
	IST_LOSS,
	IST_CLOCK,
	IST_ANALYSIS,
	IST_CAPTURE,            /* 1.2 */
	IST_NTYPES
};

/* Field identifiers; bit (1 << id) of ist_event.has says the field is set. */
enum ist_field {
	IST_F_PID = 0, IST_F_TID, IST_F_DEVICE, IST_F_STREAM,
	IST_F_NAME, IST_F_FILE, IST_F_LINE, IST_F_CMDLINE, IST_F_HOST,
	IST_F_SM_COUNT, IST_F_MEMORY_BYTES, IST_F_PCIE_GBPS,
	IST_F_CORRELATION, IST_F_GRID, IST_F_BLOCK, IST_F_BYTES,
	IST_F_PAGEABLE, IST_F_KIND, IST_F_VALUE, IST_F_EVENTS, IST_F_REASON,
	IST_F_METADATA, IST_F_DOMAIN, IST_F_DOMAIN_NS, IST_F_DATA,
	IST_F_START, IST_F_END, IST_F_TS,
	IST_F_UUID, IST_F_GRAPH_ID, IST_F_GRAPH_NODE,          /* 1.1 */
	IST_F_CUT, IST_F_ON,                                   /* 1.2 */
	IST_F_RAISED,                                          /* 1.3 */
	IST_F_YIELDED,                                         /* 1.4 */
	/* header only */
	IST_F_FORMAT, IST_F_VERSION, IST_F_PRODUCER, IST_F_PIDS, IST_F_CLOCKS,
	IST_F_REALTIME_NS, IST_F_MONOTONIC_NS, IST_F_SOURCES,
	IST_F_ANALYSIS_VERSION,
	IST_NFIELDS
};

/* The generation a call's name says it collected (IST_GC_NAME_FMT), -1
 * when it names no collection. */
int ist_gc_generation(const char *s, size_t n);

/* cut: a range open across a capture window's edge, closed there */
#define IST_CUT_START 1   /* began before the window: starts at its start */
#define IST_CUT_END 2     /* ran on past the window: ends at its end */

#define IST_HAS(ev, f) (((ev)->has >> (f)) & 1u)
#define IST_SET(ev, f) ((ev)->has |= (uint64_t)1 << (f))
#define IST_PLAIN(ev, f) (((ev)->plain >> (f)) & 1u)

/*
 * One record, decoded.  Which members are meaningful depends on the type
 * (the table in formats/trace-format.md); `has` says which are present.
 * In events from ist_reader_next(), members whose bit is clear hold
 * unspecified values: test IST_HAS() first.
 */
struct ist_event {
	enum ist_type type;
	uint64_t has;
	/* a bit per string field, as `has`: its text needs no escaping in
	 * JSON (bytes 0x20-0x7f but the quote and the backslash).  The reader
	 * sets it, from a test made once per string it defines; clear, the
	 * text is escaped as ever, so an event made elsewhere needs none. */
	uint64_t plain;
	int64_t pid, tid, device, stream;
	int64_t start_ns, end_ns, ts_ns;
	struct ist_str name, file, host, kind, reason, domain, uuid;
	int64_t line;
	int64_t sm_count, memory_bytes;
	double pcie_gbps;
	int64_t correlation, bytes, events, domain_ns;
	int64_t grid[3], block[3];
	int64_t graph_id, graph_node;  /* GPU work a CUDA graph ran */
	bool pageable;
	bool on;                   /* capture: recording from here */
	bool raised;               /* a call that ended by an exception */
	bool yielded;              /* a generator's run that ended at a
	                            * yield: it is resumed later */
	int64_t cut;               /* IST_CUT_* bits of a range the capture
	                            * window cut */
	bool value_is_int;         /* counter: integer or float value */
	int64_t ivalue;
	double value;
	struct ist_blob cmdline, metadata, data;
	/* header */
	struct ist_str format, producer;
	int64_t version_major, version_minor;
	struct ist_blob pids, clocks, sources;
	int64_t realtime_ns, monotonic_ns;
	int64_t analysis_version;  /* the segment ends with an analysis */
};

void ist_event_init(struct ist_event *ev, enum ist_type type);
/* A counter sample: name's integer value v at ts, of process pid and, when
 * tid >= 0, of that thread (a double's: set value and value_is_int after) */
void ist_counter_init(struct ist_event *ev, int64_t pid, int64_t tid,
    struct ist_str name, int64_t ts, int64_t v);

/* Type names as in the JSON Lines face ("cpu_call", ...). */
const char *ist_type_name(enum ist_type type);
int ist_type_from_name(const char *name, size_t n); /* -1 if unknown */

/* ---- writer ---- */

/* Where encoded bytes go; returns 0 or an errno value. */
typedef int (*ist_sink_fn)(void *ctx, const void *buf, size_t n);

struct ist_writer_opts {
	int level;                 /* zstd level; 0 means the default (3) */
	bool store;                /* frames stored, not compressed (zstd's
	                            * fastest level, which keeps the bytes
	                            * as they are): a live stream, whose
	                            * CPU is the traced program's; is-record
	                            * compresses such frames as it gathers
	                            * the streams into its output) */
	size_t frame_bytes;        /* close a frame past this much CBOR; 0: 4 MiB */
	uint64_t flush_interval_ms;/* also close a frame this often; 0: never */
	bool self_contained;       /* every frame starts with the header and
	                            * defines its own strings: any frame can be
	                            * dropped (flight-recorder rings) */
	bool stable_strings;       /* a string given twice at the same address
	                            * with the same length is the same string
	                            * (lets the writer skip hashing it) */
	bool background;           /* compress and write each frame in a
	                            * thread while the next one fills (the
	                            * same bytes; the sink must take calls
	                            * from that thread; a write error is told
	                            * by the next flush or close; raw_bytes and
	                            * out_bytes count a frame once the next
	                            * flush or close has waited for it) */
};

struct ist_writer;

/* A sink that writes to a file descriptor (ctx is a pointer to the int). */
int ist_fd_sink(void *ctx, const void *buf, size_t n);

enum ist_status ist_writer_new(struct ist_writer **out, ist_sink_fn sink,
    void *ctx, const struct ist_writer_opts *opts, struct ist_error *err);
/*
 * Allocates now, whole and faulted in, the buffers a frame takes (its
 * CBOR, the frame compressed, zstd's workspace; with background, the
 * second frame's CBOR too), which would otherwise grow as it is written:
 * a recorder's memory then holds still, and can be told apart from the
 * program's.  A record larger than the room left past frame_bytes (64
 * KiB) still grows them.
 */
enum ist_status ist_writer_reserve(struct ist_writer *w,
    struct ist_error *err);
/* The bytes its buffers hold (ist_writer_reserve's; not its string and
 * track tables); not while a background frame is being compressed. */
size_t ist_writer_bytes(const struct ist_writer *w);
/* Starts a segment; ev->type must be IST_HEADER.  Required before events. */
enum ist_status ist_writer_header(struct ist_writer *w,
    const struct ist_event *hdr, struct ist_error *err);
enum ist_status ist_writer_write(struct ist_writer *w,
    const struct ist_event *ev, struct ist_error *err);
/*
 * A frame copied through from another trace: p[0..n) are its whole records
 * as a reader decompressed them (ist_reader_on_frame), strings and tracks
 * numbered as its segment numbers them.  They go out as one frame, after
 * the header when that is all the open frame holds (the copy's time deltas
 * start at its frame's start).  The segment's strings and tracks are then
 * not the writer's: until the next header, only records that use none (an
 * analysis) may be written after it (others: IST_EINVAL).
 */
enum ist_status ist_writer_raw_frame(struct ist_writer *w, const void *p,
    size_t n, struct ist_error *err);
/* The same, with z[0..zn) the frame as it came (ist_reader_frame_z): it
 * goes out as it is when it compresses, its header says its content size
 * (n) and the writer holds nothing before it; else as ist_writer_raw_frame
 * (z NULL: always). */
enum ist_status ist_writer_raw_frame_z(struct ist_writer *w, const void *p,
    size_t n, const void *z, size_t zn, struct ist_error *err);
/* Closes the current frame (if it holds anything) and hands it to the sink. */
enum ist_status ist_writer_flush(struct ist_writer *w, struct ist_error *err);
/* Closes the frame if flush_interval_ms has passed since the last one:
 * for writers fed in bursts, called from a timer. */
enum ist_status ist_writer_tick(struct ist_writer *w, struct ist_error *err);
/* Flushes, and waits for the last frame to reach the sink: nothing more is
 * written, its buffers kept (a collector ending with its process, whose
 * memory is said to hold them). */
enum ist_status ist_writer_finish(struct ist_writer *w, struct ist_error *err);
/* Finishes; then frees.  ist_writer_free(NULL) is a no-op. */
enum ist_status ist_writer_close(struct ist_writer *w, struct ist_error *err);
void ist_writer_free(struct ist_writer *w);

struct ist_writer_stats {
	uint64_t records, events, frames, raw_bytes, out_bytes;
};
void ist_writer_stats(const struct ist_writer *w, struct ist_writer_stats *st);

/* ---- reader ---- */

/* Reads up to n bytes; returns the count, 0 at end, -1 with errno set. */
typedef long (*ist_source_fn)(void *ctx, void *buf, size_t n);
long ist_fd_source(void *ctx, void *buf, size_t n);
/* Reads with pread from off, which it advances, leaving the descriptor's
 * own offset be. */
struct ist_pread {
	int fd;
	uint64_t off;
};
long ist_pread_source(void *ctx, void *buf, size_t n);

struct ist_reader;

/* `name` is used in messages ("-" is shown as "<stdin>"). */
enum ist_status ist_reader_new(struct ist_reader **out, ist_source_fn src,
    void *ctx, const char *name, struct ist_error *err);
/*
 * The next record: IST_OK with *ev set, IST_END, IST_TRUNCATED (a warning
 * in err; the next call returns IST_END) or an error.  A header event starts
 * every segment (a trace may be several traces concatenated).
 */
enum ist_status ist_reader_next(struct ist_reader *r,
    const struct ist_event **ev, struct ist_error *err);
void ist_reader_free(struct ist_reader *r);
/*
 * Skimming, for a reader that wants only a segment's analysis: of each
 * frame, only its first record is looked at, and returned when it is a
 * header or an analysis (is-analyze writes the analysis first in a frame
 * of its own); every other record is passed over undecoded, its strings
 * and tracks too.  So turn it on at a header only, and off (or keep it on)
 * at the next, or before the first record, where the first header is
 * known to promise the analysis (ist_file_promises_analysis).  Of each
 * frame only as much is decompressed as its first record takes; the rest
 * is passed over by its blocks' sizes, never decompressed, so its
 * checksum is not checked (a frame whose blocks cannot be walked is read
 * whole, and says what is wrong with it).  A cut frame is still said as
 * when it is read.  Stats count only the records looked at.
 */
void ist_reader_skim(struct ist_reader *r, bool on);
/*
 * Reads ahead on a thread of its own: the next frame decompressed and its
 * records split into CBOR tokens (libcbor's decoder, two thirds of a
 * reading) while this thread decodes the ones before, on a second core.
 * The same records, errors and stats (in_bytes runs up to two frames
 * ahead), for a few MiB more: two frames held rather than one.  Call it
 * before the first record, only where the source may be read from
 * another thread at any time until ist_reader_free (a regular file, or a
 * pipe read by a source that gives up when told: a pipe could otherwise
 * keep ist_reader_free waiting for its writer).  False: the reader
 * stays on this thread (no thread could be made, or records were read).
 */
bool ist_reader_ahead(struct ist_reader *r);
/* The same for a reader of ist_fd_source on fd, when fd is a regular
 * file; false otherwise. */
bool ist_reader_ahead_fd(struct ist_reader *r, int fd);
/* The descriptor r's source reads (for a source other than ist_fd_source
 * and ist_pread_source), told before ist_reader_ahead: reading ahead, the
 * next frame is decompressed as the one before is split only from bytes
 * already there (poll), never waiting for a pipe's writer meanwhile;
 * not told, only from bytes read already. */
void ist_reader_input_fd(struct ist_reader *r, int fd);
/* Whether the regular file fd holds a trace whose first header promises
 * an analysis (analysis_version): a report skims such a trace to its
 * analysis, which reading ahead would not; it reads any other whole.  Read
 * with pread from fd's offset, which stays where it is, skimming: the
 * first record alone decompressed. */
bool ist_file_promises_analysis(int fd);
/*
 * For a reader that copies a trace through (is-analyze's trace out,
 * ist_writer_raw_frame): fn gets each frame's decompressed bytes as the
 * reader leaves it, p[0..n) the whole records read from it (up to the
 * record an error or a cut stopped at), before the next frame's first
 * record is returned.  ist_reader_span says where the record last
 * returned lies in them.
 */
typedef void (*ist_frame_fn)(void *ctx, const uint8_t *p, size_t n);
void ist_reader_on_frame(struct ist_reader *r, ist_frame_fn fn, void *ctx);
/* Inside fn: the frame as it came, compressed, when the reader has all of
 * it and fn's bytes are all its records (not a frame cut short, or one an
 * error stopped in); false otherwise.  Kept only while an on_frame is set
 * (reading ahead: one set before ist_reader_ahead, whose thread then keeps
 * each frame's copy with it): ist_writer_raw_frame_z may copy it as it
 * is. */
bool ist_reader_frame_z(const struct ist_reader *r, const void **p,
    size_t *n);
void ist_reader_span(const struct ist_reader *r, size_t *off, size_t *len);

struct ist_reader_stats {
	uint64_t records;        /* CBOR records, strings and tracks included */
	uint64_t events;         /* records returned, headers excluded */
	uint64_t frames;
	uint64_t segments;
	uint64_t in_bytes;       /* compressed bytes read */
	uint64_t raw_bytes;      /* decompressed CBOR bytes */
	uint64_t skipped;        /* records of unknown kinds, skipped */
	uint64_t truncated_bytes;  /* bytes of the frame the input stopped
				    * inside */
	uint64_t truncated_kept;   /* records read from that frame's
				    * complete blocks */
	uint64_t at_bytes;       /* where the reading is in the input: the
				  * compressed bytes before the current frame
				  * and the share of it read (a progress
				  * figure; in_bytes runs a frame ahead) */
};
void ist_reader_stats(const struct ist_reader *r, struct ist_reader_stats *st);
/* A progress figure that any thread may ask for (the source's, which runs
 * on the producer's thread when reading ahead): the compressed bytes
 * before the frame being read, and the events returned before it. */
void ist_reader_progress(struct ist_reader *r, uint64_t *at,
    uint64_t *events);

/* ---- the JSON Lines face (formats/jsonl.md) ---- */

struct ist_buf {
	char *p;
	size_t n, cap;
};
void ist_buf_release(struct ist_buf *b);
int ist_buf_reserve(struct ist_buf *b, size_t extra);   /* 0 or ENOMEM */
int ist_buf_append(struct ist_buf *b, const void *p, size_t n);
int ist_buf_printf(struct ist_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int ist_buf_puts(struct ist_buf *b, const char *s);
int ist_buf_int(struct ist_buf *b, int64_t v);          /* in decimal */

/* Appends one JSON line (with '\n') for ev to out. */
enum ist_status ist_event_to_json(const struct ist_event *ev,
    struct ist_buf *out, struct ist_error *err);

/*
 * Parses one JSON line into ev.  Strings and blobs point into scratch,
 * which the caller keeps until it is done with ev (reset it per line).
 */
struct ist_json_scratch;
struct ist_json_scratch *ist_json_scratch_new(void);
void ist_json_scratch_free(struct ist_json_scratch *s);
enum ist_status ist_event_from_json(const char *line, size_t n,
    struct ist_event *ev, struct ist_json_scratch *s, struct ist_error *err);

/* Appends s as a JSON string (escaped; invalid UTF-8 becomes U+FFFD). */
int ist_buf_json_string(struct ist_buf *b, const char *s, size_t n);
/* The same for a string field of an event, given its IST_PLAIN bit: a
 * plain text is copied as it is, without looking at its bytes again. */
int ist_buf_json_text(struct ist_buf *b, struct ist_str s, bool plain);
/* true when s needs no escaping in a JSON string (what IST_PLAIN says) */
bool ist_json_plain(const char *s, size_t n);
/* JSON text -> one CBOR data item (appended to out). */
enum ist_status ist_json_text_to_cbor(const char *json, size_t n,
    struct ist_buf *out, struct ist_error *err);

/* A header's pids (IST_F_PIDS): the integers from 0 to INT64_MAX it
 * lists, appended to *all (*np of them); none from a blob that is no
 * array.  -1 when out of memory (those appended so far kept). */
int ist_pids(struct ist_blob pids, int64_t **all, size_t *np);

/* CBOR data item -> JSON text (appended), for metadata and friends. */
enum ist_status ist_cbor_to_json(struct ist_blob blob, struct ist_buf *out,
    struct ist_error *err);

/* ---- summary (is-info) ---- */

struct ist_info;
struct ist_info *ist_info_new(void);
void ist_info_free(struct ist_info *info);
void ist_info_add(struct ist_info *info, const struct ist_event *ev);
void ist_info_finish(struct ist_info *info, const struct ist_reader_stats *st,
    const char *name);
enum ist_status ist_info_render(const struct ist_info *info, bool json,
    struct ist_buf *out);

#endif
