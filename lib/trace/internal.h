/* internal.h - shared between the library's files; not installed. */
#ifndef IST_INTERNAL_H
#define IST_INTERNAL_H

#include <stdarg.h>
#include <string.h>
#include "ist.h"

/* CBOR record kinds (formats/trace-format.md, "Record kinds"). */
enum {
	K_STRING = 1,
	K_TRACK = 2,
	K_FIRST_EVENT = 3,
	K_MAX_KNOWN = 24
};

#define IST_SELF_DESCRIBE_TAG 55799u

/* Limits (formats/trace-format.md, "Limits"). */
#define IST_MAX_FRAME (64u << 20)
/* a record's blobs: a frame closes past IST_MAX_FRAME / 2 of CBOR, so a
 * frame holding a record this large, and its strings, stays under the
 * limit */
#define IST_MAX_RECORD (IST_MAX_FRAME / 4)
#define IST_MAX_STRING (1u << 20)
#define IST_MAX_STRINGS (16u << 20)
#define IST_MAX_TRACKS (1u << 20)
#define IST_MAX_DEPTH 64
/* JSON Lines: a line, and the values in it (each costs jansson about 50
 * bytes: 2 Mi of them about 100 MiB), so that encoding one line costs
 * memory in proportion to these limits, not to the line */
#define IST_MAX_JSON_LINE IST_MAX_FRAME
#define IST_MAX_JSON_VALUES (2u << 20)

enum ist_ftype {
	FT_INT,     /* int64 */
	FT_STR,     /* interned string */
	FT_BOOL,
	FT_DOUBLE,
	FT_NUMBER,  /* int or double (counter value) */
	FT_IVEC3,   /* [x, y, z] */
	FT_VALUE,   /* any JSON value, a CBOR blob */
	FT_OBJECT   /* a JSON object, a CBOR blob holding a map */
};

enum ist_role { R_TRACK, R_TIME, R_PAYLOAD };

struct ist_fieldspec {
	enum ist_field id;
	const char *json;
	enum ist_ftype ft;
	enum ist_role role;
	bool required;
	const char *key;        /* ,"json": as a JSON line has it */
	unsigned keylen;
};

enum ist_timeshape { TS_NONE, TS_INSTANT, TS_RANGE };

struct ist_typespec {
	const char *name;
	int kind;                   /* CBOR record kind */
	enum ist_timeshape time;
	bool has_track;
	int nfields;
	const struct ist_fieldspec *fields;
};

extern const struct ist_typespec ist_types[IST_NTYPES];

/*
 * The interner every stage shares (strtab.c): strings numbered 1, 2, ...
 * as first seen, their bytes NUL-terminated in blocks that never move (so
 * a writer may take them as stable strings).  Zero it to start.
 */
struct ist_strent {
	const char *p;
	uint32_t n;
	uint64_t hash;
};
struct ist_strtab {
	struct ist_strent *e;         /* by id - 1 */
	uint32_t n, cap;
	uint32_t *slot;               /* open addressing: id, 0 empty */
	uint32_t mask;
	char **blocks, *bp;
	size_t nblocks, bcap, bleft;
};
/* The id of (p, n), added when new (*added says, when not NULL); 0 when
 * out of memory. */
uint32_t ist_strtab_intern(struct ist_strtab *t, const char *p, size_t n,
    bool *added);
/* The id of (p, n) with hash h (ist_hash_bytes), 0 when absent. */
uint32_t ist_strtab_find(const struct ist_strtab *t, const char *p,
    size_t n, uint64_t h);
/* Forgets every string, keeping the memory for the next ones. */
void ist_strtab_clear(struct ist_strtab *t);
void ist_strtab_release(struct ist_strtab *t);
/* (*map)[id] = val in a map of ids from another numbering (a segment's
 * strings or tracks) to ours, grown, its new slots 0; -1 when out of
 * memory. */
int ist_idmap_put(uint32_t **map, size_t *n, uint32_t id, uint32_t val);

/* Room in the array *p (cap elements of size, n used) for one more,
 * doubled when full; -1 out of memory (*p as it was). */
int ist_room(void **p, size_t *cap, size_t n, size_t size);

/* n bytes of zeroed memory mapped on their own, on a 2 MiB boundary and,
 * past their first `small` bytes (rounded up to 2 MiB), in transparent
 * huge pages where the kernel gives them on request ("madvise", Debian's
 * default): filling them takes a page fault every 2 MiB rather than every
 * 4 KiB.  NULL when out of memory; given back with ist_unmap_huge (p may
 * be NULL). */
void *ist_map_huge(size_t n, size_t small);
void ist_unmap_huge(void *p, size_t n);

static inline const struct ist_strent *
ist_strtab_get(const struct ist_strtab *t, uint32_t id)
{
	return &t->e[id - 1];
}

/*
 * Per type, what the writer, the reader and is-merge's packing need of the
 * table, worked out once (ist_plans_init, thread-safe; the reader's and
 * writer's constructors and is-merge call it).
 */
#define IST_MAX_PAYLOAD 12
struct ist_plan {
	uint64_t req;                 /* required fields */
	uint64_t tmask;               /* track fields */
	uint32_t treq;                /* required track fields */
	int base;                     /* elements before the payload: kind,
	                               * track, times */
	int npay;                     /* payload fields, in table order */
	int nreq;                     /* those up to the last required one:
	                               * a record may end after them */
	bool blobs;                   /* one of them is a value or object */
	const struct ist_fieldspec *pay[IST_MAX_PAYLOAD];
};
extern struct ist_plan ist_plans[IST_NTYPES];
void ist_plans_init(void);

/* The member behind a field id, or NULL when the field is not of that kind:
 * the one map from the type table to struct ist_event. */
extern const uint16_t ist_str_at[IST_NFIELDS], ist_int_at[IST_NFIELDS],
    ist_blob_at[IST_NFIELDS];     /* offsets; 0: not a field of that kind */

static inline struct ist_str *
ist_field_str(struct ist_event *ev, enum ist_field f)
{
	return ist_str_at[f] ? (struct ist_str *)((char *)ev + ist_str_at[f]) :
	    NULL;
}

static inline int64_t *
ist_field_int(struct ist_event *ev, enum ist_field f)
{
	return ist_int_at[f] ? (int64_t *)((char *)ev + ist_int_at[f]) : NULL;
}

/*
 * A thread of InferScope's own inside a recorded program: the collectors'
 * writer ("inferscope") and the CUDA collector's ("inferscope-gpu") name
 * themselves so.  None of the program's: their CPU is the recorder's
 * overhead, and they are not the program's threads wanting a core.
 */
static inline bool
ist_recorder_thread(const char *name, size_t n)
{
	return (n == 10 && memcmp(name, "inferscope", 10) == 0) ||
	    (n == 14 && memcmp(name, "inferscope-gpu", 14) == 0);
}

/* the bool fields: a copy's pageable, a capture's on, a call's raised
 * and yielded */
static inline bool *
ist_field_bool(struct ist_event *ev, enum ist_field f)
{
	return f == IST_F_ON ? &ev->on : f == IST_F_RAISED ? &ev->raised :
	    f == IST_F_YIELDED ? &ev->yielded : &ev->pageable;
}

static inline struct ist_blob *
ist_field_blob(struct ist_event *ev, enum ist_field f)
{
	return ist_blob_at[f] ? (struct ist_blob *)((char *)ev +
	    ist_blob_at[f]) : NULL;
}
int ist_type_of_kind(uint64_t kind); /* -1 if unknown */

/* For is-merge: the segment's ids of the event ist_reader_next() returned
 * last, its track (events with a track) and the string in a field (a string
 * field it has); valid until the next header. */
uint32_t ist_reader_track_id(const struct ist_reader *r);
uint32_t ist_reader_string_id(const struct ist_reader *r, int field);
/* All of them, by field (IST_NFIELDS; a field's is stale when the event
 * lacks it). */
const uint32_t *ist_reader_string_ids(const struct ist_reader *r);

/* a zstd context set to store (writer.c): the writer's store mode, and
 * is-merge's spilled runs */
struct ZSTD_CCtx_s;
void ist_zstd_store(struct ZSTD_CCtx_s *z);

/*
 * ist_writer_write, for an event a reader handed on as it is: src[f] is
 * the reader's id of string field f (ist_reader_string_ids), so that a
 * string met before is found by its id rather than hashed.  The ids must
 * name the same strings until the next ist_writer_header.
 */
enum ist_status ist_writer_write_from(struct ist_writer *w,
    const struct ist_event *ev, const uint32_t *src, struct ist_error *err);

void ist_seterr(struct ist_error *err, enum ist_status st, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));
/* Says where the error in err happened (ist_seterr says IST_AT_SELF). */
static inline void
ist_at(struct ist_error *err, enum ist_where where)
{
	if (err)
		err->where = where;
}

/*
 * For the collector's writer thread, which writes millions of timed records
 * a second from a few thousand definitions: a cpu_call, scope or
 * nvtx_range on the (pid, tid) track, written as ist_writer_write() would
 * write the same event, byte for byte, without building the event.
 * `more` is a cpu_call's file or an nvtx_range's domain (p == NULL:
 * absent); line > 0 is a cpu_call's line.  The writer keeps the
 * definition's string ids and the record's constant bytes in the other
 * members: zero them once, then leave them to the writer.  A definition
 * does not change once written (zero seg to change it).
 */
struct ist_wdef {
	struct ist_str name, more;
	int64_t line;
	uint32_t name_id, more_id;
	uint32_t seg;           /* the writer's segment they belong to */
	uint8_t type;           /* the record type they were made for */
	bool yielded;           /* a call's: a generator's run that yielded */
	uint8_t nhead, ntail;
	uint8_t head[2];        /* the record's array head and kind */
	uint8_t tail[24];       /* after its times: name, file/domain, line
	                         * (and null, null, true: cut and raised
	                         * absent, yielded) */
};
enum ist_status ist_writer_timed(struct ist_writer *w, enum ist_type type,
    int64_t pid, int64_t tid, int64_t start_ns, int64_t end_ns,
    struct ist_wdef *d, struct ist_error *err);
/*
 * A run of timed records of one (pid, tid) track, in order, as n calls of
 * ist_writer_timed would write them.  It stops after the record that
 * closes a frame, so that the caller knows which frame each went to:
 * *done counts the records handed to the writer (its events), the one an
 * error stopped at included when it failed in writing its frame out.
 */
struct ist_timed {
	struct ist_wdef *d;
	int64_t start_ns, end_ns;
	enum ist_type type;
};
enum ist_status ist_writer_timed_run(struct ist_writer *w, int64_t pid,
    int64_t tid, const struct ist_timed *ev, size_t n, size_t *done,
    struct ist_error *err);


/* Text from a trace, made fit for a terminal: control characters (C0,
 * DEL, and C1 in UTF-8, whose U+009B a terminal takes as CSI) become '?'. */
void ist_terminal_safe(char *s);
void ist_terminal_safe_n(char *s, size_t n);
/* The bytes of the control character s starts with (1 for C0 and DEL, 2
 * for a C1 in UTF-8), 0 when it starts with none; n bounds s. */
size_t ist_control_len(const char *s, size_t n);

/* An input is-merge could not read whole, as said by every later stage
 * (formats/trace-format.md, sources): "merged from a damaged input: ERROR"
 * or, with no error, "merged from a truncated input: the last CUT bytes of
 * 'INPUT' were not read whole"; terminal-safe. */
void ist_damage_text(char *m, size_t n, const char *input, const char *error,
    long long cut);

/* A 64-bit hash of n bytes, for the string tables. */
uint64_t ist_hash_bytes(const char *p, size_t n);

/* Formats a double so that strtod() gives it back, with a '.' or 'e'. */
void ist_fmt_double(double d, char *out, size_t cap);

/* Times beyond +-2^61 ns (73 years) in a trace are not times: consumers
 * leave them out, so that no difference of two overflows. */
#define IST_TIME_MAX ((int64_t)1 << 61)

/* ist_buf_append's fast path, inlined where output is made in many small
 * pieces (JSON Lines, Perfetto): n bytes, the NUL kept after them. */
static inline int
ist_buf_add(struct ist_buf *b, const void *p, size_t n)
{
	if (b->cap - b->n <= n)
		return ist_buf_append(b, p, n);
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}
/* a string literal, its length known at compile time */
#define IST_BUF_LIT(b, s) ist_buf_add((b), "" s, sizeof(s) - 1)

/* the decimal digits of u: from its bits (1233/4096 ~ log10 2), then
 * one look at a power of ten */
static inline int
ist_digits(uint64_t u)
{
	static const uint64_t p10[20] = { 1, 10, 100, 1000, 10000, 100000,
	    1000000, 10000000, 100000000, 1000000000, 10000000000ull,
	    100000000000ull, 1000000000000ull, 10000000000000ull,
	    100000000000000ull, 1000000000000000ull, 10000000000000000ull,
	    100000000000000000ull, 1000000000000000000ull,
	    10000000000000000000ull };
	int t = ((64 - __builtin_clzll(u | 1)) * 1233) >> 12;

	return u == 0 ? 1 : t + (u >= p10[t]);
}

/* "00" to "99", for two digits a division */
extern const char ist_digit_pairs[200];

/* u's n digits (ist_digits) at o, written back from o + n */
static inline void
ist_put_digits(char *o, uint64_t u, int n)
{
	o += n;
	while (u >= 100) {
		o -= 2;
		memcpy(o, ist_digit_pairs + u % 100 * 2, 2);
		u /= 100;
	}
	if (u >= 10)
		memcpy(o - 2, ist_digit_pairs + u * 2, 2);
	else
		o[-1] = (char)('0' + u);
}

/* v in decimal at o (at most 20 bytes); the end */
static inline char *
ist_put_int(char *o, int64_t v)
{
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	int n = ist_digits(u);

	if (v < 0)
		*o++ = '-';
	ist_put_digits(o, u, n);
	return o + n;
}

/* CBOR arrays for headers and process records, appended to out (0 or
 * ENOMEM): integers; and NUL-terminated arguments as in /proc/PID/cmdline,
 * as text. */
int ist_cbor_ints(const int64_t *v, size_t n, struct ist_buf *out);
/* Appends (s, n) as a JSON string (jsonl.c); invalid UTF-8 bytes become
 * U+FFFD.  With script, fit to stand in an HTML <script> element: "<",
 * ">", "&", U+2028 and U+2029 escaped too.  0 or ENOMEM. */
int ist_json_str(struct ist_buf *b, const char *s, size_t n, bool script);
int ist_cbor_args(const char *args, size_t n, struct ist_buf *out);

/* Validates that [p, p+n) starts with one well-formed CBOR item (*used
 * its length) that JSON can say (ist_tok_json_shaped). */
enum ist_status ist_cbor_check(const uint8_t *p, size_t n, size_t *used,
    struct ist_error *err);

enum tk {
	TK_UINT, TK_NEG, TK_BYTES, TK_TEXT, TK_ARRAY, TK_MAP, TK_TAG,
	TK_FLOAT, TK_BOOL, TK_NULL, TK_UNDEF, TK_INDEF
};

struct tok {              /* 32 bytes: a record is about nine */
	uint8_t t;
	bool b;
	uint32_t next;          /* index of the token after this subtree */
	union {
		uint64_t v;     /* int value, length or count */
		double d;       /* TK_FLOAT's value */
	};
	const uint8_t *p;       /* string data */
	uint32_t off, end;      /* byte span of the subtree (an item is
	                         * at most IST_MAX_FRAME bytes) */
};

struct tokenizer {
	struct tok *toks;
	size_t ntok, cap;
	struct tok cur;         /* the one token, when not stored */
};

/* NULL when the value at tk[i] is one JSON can say (text map keys, no
 * byte strings), else what it holds that JSON cannot. */
const char *ist_tok_json_shaped(const struct tok *tk, uint32_t i);

/*
 * Splits the one CBOR item at p into tokens (tz->toks when store) with
 * libcbor's streaming decoder; *used is its length.  On error, *why says.
 */
enum ist_status ist_tokenize(struct tokenizer *tz, bool store,
    const uint8_t *p, size_t n, size_t *used, const char **why);
/* The same, stored after the first base tokens (tz->toks + base, which
 * may move): tz->ntok counts the item's, whose indices start at 0 there */
enum ist_status ist_tokenize_at(struct tokenizer *tz, size_t base,
    const uint8_t *p, size_t n, size_t *used, const char **why);
/* the *why of an item that runs past n: a frame cut short may hold it */
extern const char ist_past_end[];

/* Reading ahead (for tests): every frame's rest given to the reader to
 * split after the frame's first chunk, not only when the reader waits
 * (every reader's, from now on); and how many rests r was given. */
void ist_reader_ahead_give_rests(bool all);
uint64_t ist_reader_ahead_rests(const struct ist_reader *r);

#endif
