/* writer.c - events -> CBOR records -> zstd frames -> a sink. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cbor.h>
#include <zstd.h>

#include "internal.h"

struct wtrack {
	int64_t key[4];
	uint32_t mask;      /* which of pid, tid, device, stream are set */
	uint32_t id;        /* 0: empty slot */
	uint64_t gen;       /* frame generation of `last` */
	int64_t last;
	uint8_t enc[8];     /* id, encoded (at most 5 bytes) */
	uint8_t nenc;
};

#define PCACHE 4096

struct pcache {         /* address -> id, for stable strings */
	const char *p;
	size_t n;
	uint32_t id;
	uint32_t seg;
};

struct ist_writer {
	struct pcache *pc;
	uint32_t seg;           /* segment number, unique in the process:
	                         * ids cached under another are stale */
	ist_sink_fn sink;
	void *ctx;
	struct ist_writer_opts opts;
	ZSTD_CCtx *cctx;
	uint8_t *buf;
	size_t n, cap;
	uint8_t *out;
	size_t outcap;
	bool have_header;
	bool failed;
	uint8_t *hdr;           /* the encoded header, for self-contained frames */
	size_t hdr_n;
	/* segment state */
	struct ist_strtab strs;
	struct wtrack *ttab;
	struct wtrack *last_track;  /* into ttab; NULL after a rehash */
	size_t ttab_cap;
	uint32_t ntracks;
	uint64_t gen;
	uint64_t last_flush_ms;
	uint32_t since_clock;
	struct ist_writer_stats st;
	/* ist_writer_write_from: the source's string ids to ours (0: not
	 * yet), for this segment */
	uint32_t *smap;
	size_t nsmap;
	size_t hdr_end;         /* the open frame's header ends here (0: none) */
	bool foreign;           /* a frame was copied in (ist_writer_raw_frame):
				 * this segment's strings and tracks are not
				 * ours */
	/* background: the frame being compressed and written by zt */
	pthread_t zt;
	bool zbusy;
	uint8_t *zbuf;
	size_t zn, zcap;
	enum ist_status zst;     /* how zt's frame went */
	struct ist_error zerr;
	uint64_t zraw, zout;     /* its bytes, counted when it is joined */
};

int
ist_fd_sink(void *ctx, const void *buf, size_t n)
{
	int fd = *(int *)ctx;
	const char *p = buf;

	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
reserve(struct ist_writer *w, size_t extra)
{
	size_t cap;
	uint8_t *p;

	if (w->cap - w->n >= extra)
		return 0;
	cap = w->cap ? w->cap : 65536;
	while (cap - w->n < extra)
		cap *= 2;
	if ((p = realloc(w->buf, cap)) == NULL)
		return -1;
	w->buf = p;
	w->cap = cap;
	return 0;
}

/*
 * Encoders; callers reserve room first (9 bytes per head).  libcbor's
 * encoders of one width, chosen here as cbor_encode_uint and _negint
 * choose them: the same bytes, without their dispatch (two calls through
 * the PLT per value, a tenth of a traced call's cost in the writer).
 */
static inline size_t
enc_head(bool neg, uint64_t v, uint8_t *p, size_t n)
{
	if (v <= UINT8_MAX)
		return neg ? cbor_encode_negint8((uint8_t)v, p, n) :
		    cbor_encode_uint8((uint8_t)v, p, n);
	if (v <= UINT16_MAX)
		return neg ? cbor_encode_negint16((uint16_t)v, p, n) :
		    cbor_encode_uint16((uint16_t)v, p, n);
	if (v <= UINT32_MAX)
		return neg ? cbor_encode_negint32((uint32_t)v, p, n) :
		    cbor_encode_uint32((uint32_t)v, p, n);
	return neg ? cbor_encode_negint64(v, p, n) :
	    cbor_encode_uint64(v, p, n);
}

/* v at p, which has room for 9 bytes (reserved); its length */
static inline size_t
enc_int(int64_t v, uint8_t *p)
{
	return v >= 0 ? enc_head(false, (uint64_t)v, p, 9) :
	    enc_head(true, (uint64_t)(-(v + 1)), p, 9);
}

static inline void
put_uint(struct ist_writer *w, uint64_t v)
{
	w->n += enc_head(false, v, w->buf + w->n, w->cap - w->n);
}

static inline void
put_int(struct ist_writer *w, int64_t v)
{
	w->n += enc_int(v, w->buf + w->n);
}

static inline void
put_null(struct ist_writer *w)
{
	w->buf[w->n++] = 0xf6;
}

static void
put_text(struct ist_writer *w, const char *s, size_t len)
{
	w->n += cbor_encode_string_start(len, w->buf + w->n, w->cap - w->n);
	if (len)
		memcpy(w->buf + w->n, s, len);
	w->n += len;
}

/* Segment numbers: never 0 (a zeroed cache), never the same twice in a
 * process, so that a cache outliving its writer (ist_wdef) is stale. */
static uint32_t
new_seg(void)
{
	static _Atomic uint32_t last;
	uint32_t s;

	while ((s = atomic_fetch_add(&last, 1) + 1) == 0)
		;
	return s;
}

static enum ist_status join_frame(struct ist_writer *w,
    struct ist_error *err);

static void
reset_segment(struct ist_writer *w)
{
	w->seg = new_seg();
	w->last_track = NULL;
	ist_strtab_clear(&w->strs);
	if (w->ttab)
		memset(w->ttab, 0, w->ttab_cap * sizeof(*w->ttab));
	w->ntracks = 0;
	w->foreign = false;
	if (w->nsmap)
		memset(w->smap, 0, w->nsmap * sizeof(*w->smap));
}

/* z stores: zstd's fastest level, and, as it finds no matches, the
 * smallest match table (none to clear for each frame) */
void
ist_zstd_store(ZSTD_CCtx *z)
{
	ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, ZSTD_minCLevel());
	ZSTD_CCtx_setParameter(z, ZSTD_c_hashLog,
	    ZSTD_cParam_getBounds(ZSTD_c_hashLog).lowerBound);
}

enum ist_status
ist_writer_new(struct ist_writer **out, ist_sink_fn sink, void *ctx,
    const struct ist_writer_opts *opts, struct ist_error *err)
{
	struct ist_writer *w;

	*out = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		goto nomem;
	ist_plans_init();
	w->sink = sink;
	w->ctx = ctx;
	if (opts)
		w->opts = *opts;
	if (w->opts.level == 0)
		w->opts.level = 3;
	if (w->opts.frame_bytes == 0)
		w->opts.frame_bytes = 4u << 20;
	if (w->opts.frame_bytes > IST_MAX_FRAME / 2)
		w->opts.frame_bytes = IST_MAX_FRAME / 2;
	if ((w->cctx = ZSTD_createCCtx()) == NULL)
		goto nomem;
	if (w->opts.store)
		ist_zstd_store(w->cctx);
	else
		ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel,
		    w->opts.level);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
	if (w->opts.stable_strings &&
	    (w->pc = calloc(PCACHE, sizeof(*w->pc))) == NULL)
		goto nomem;
	w->seg = new_seg();
	w->ttab_cap = 256;
	w->ttab = calloc(w->ttab_cap, sizeof(*w->ttab));
	if (w->ttab == NULL)
		goto nomem;
	w->gen = 1;
	w->last_flush_ms = now_ms();
	*out = w;
	return IST_OK;
nomem:
	ist_writer_free(w);
	ist_seterr(err, IST_ENOMEM, "cannot create trace writer: %s",
	    strerror(ENOMEM));
	return IST_ENOMEM;
}

void
ist_writer_free(struct ist_writer *w)
{
	if (w == NULL)
		return;
	join_frame(w, NULL);
	ZSTD_freeCCtx(w->cctx);
	free(w->zbuf);
	free(w->hdr);
	free(w->pc);
	free(w->buf);
	free(w->out);
	free(w->ttab);
	free(w->smap);
	ist_strtab_release(&w->strs);
	free(w);
}

/* room past frame_bytes: the record that closes a frame (reserve) */
#define RESERVE_PAST (64u << 10)

/* *p (of *cap bytes) made want bytes at least, its bytes kept; -1: ENOMEM */
static int
grow_to(uint8_t **p, size_t *cap, size_t want)
{
	uint8_t *q;

	if (*cap >= want)
		return 0;
	if ((q = realloc(*p, want)) == NULL)
		return -1;
	*p = q;
	*cap = want;
	return 0;
}

enum ist_status
ist_writer_reserve(struct ist_writer *w, struct ist_error *err)
{
	size_t want = w->opts.frame_bytes + RESERVE_PAST;
	enum ist_status st;

	if ((st = join_frame(w, err)) != IST_OK)
		return st;
	if (grow_to(&w->buf, &w->cap, want) != 0 ||
	    grow_to(&w->out, &w->outcap, ZSTD_compressBound(want)) != 0 ||
	    (w->opts.background && grow_to(&w->zbuf, &w->zcap, want) != 0)) {
		ist_seterr(err, IST_ENOMEM, "cannot reserve a frame's buffers: "
		    "%s", strerror(ENOMEM));
		return IST_ENOMEM;
	}
	/* faulted in past what they hold; zstd's workspace made by a
	 * frame's worth of zeros (sized for frames of that size) */
	memset(w->buf + w->n, 0, w->cap - w->n);
	memset(w->out, 0, w->outcap);
	if (w->zbuf)
		memset(w->zbuf, 0, w->zcap);
	ZSTD_compress2(w->cctx, w->out, w->outcap, w->buf + w->n,
	    w->opts.frame_bytes < w->cap - w->n ? w->opts.frame_bytes :
	    w->cap - w->n);
	return IST_OK;
}

size_t
ist_writer_bytes(const struct ist_writer *w)
{
	return w->cap + w->zcap + w->outcap + ZSTD_sizeof_CCtx(w->cctx);
}

void
ist_writer_stats(const struct ist_writer *w, struct ist_writer_stats *st)
{
	*st = w->st;
}

/* A frame's k bytes, compressed, to the sink. */
static enum ist_status
sink_out(struct ist_writer *w, const void *p, size_t k, struct ist_error *err)
{
	int e;

	if ((e = w->sink(w->ctx, p, k)) != 0) {
		ist_seterr(err, IST_EIO, "cannot write trace: %s",
		    strerror(e));
		ist_at(err, IST_AT_OUTPUT);
		if (err)
			err->sys_errno = e;
		return IST_EIO;
	}
	return IST_OK;
}

/* Compresses src's n bytes of CBOR into one frame and hands it to the
 * sink; *raw and *out count its bytes. */
static enum ist_status
compress_out(struct ist_writer *w, const uint8_t *src, size_t n,
    uint64_t *raw, uint64_t *out, struct ist_error *err)
{
	size_t k;
	enum ist_status st;

	if (grow_to(&w->out, &w->outcap, ZSTD_compressBound(n)) != 0) {
		ist_seterr(err, IST_ENOMEM, "cannot compress frame: %s",
		    strerror(ENOMEM));
		return IST_ENOMEM;
	}
	k = ZSTD_compress2(w->cctx, w->out, w->outcap, src, n);
	if (ZSTD_isError(k)) {
		ist_seterr(err, IST_EIO, "cannot compress frame: %s",
		    ZSTD_getErrorName(k));
		return IST_EIO;
	}
	if ((st = sink_out(w, w->out, k, err)) != IST_OK)
		return st;
	*raw += n;
	*out += k;
	return IST_OK;
}

static void *
compressor(void *arg)
{
	struct ist_writer *w = arg;

	w->zst = compress_out(w, w->zbuf, w->zn, &w->zraw, &w->zout,
	    &w->zerr);
	return NULL;
}

/* Waits for the background frame, if any; its error becomes the writer's. */
static enum ist_status
join_frame(struct ist_writer *w, struct ist_error *err)
{
	if (!w->zbusy)
		return IST_OK;
	pthread_join(w->zt, NULL);
	w->zbusy = false;
	w->st.raw_bytes += w->zraw;
	w->st.out_bytes += w->zout;
	w->zraw = w->zout = 0;
	if (w->zst != IST_OK) {
		w->failed = true;
		if (err)
			*err = w->zerr;
	}
	return w->zst;
}

/*
 * The frame to the compressor thread, which compresses and writes it
 * while the next one fills (after the one before it is written: frames
 * stay in order).
 */
static enum ist_status
flush_background(struct ist_writer *w, struct ist_error *err)
{
	enum ist_status st;
	uint8_t *b = w->buf;
	size_t cap = w->cap;

	if ((st = join_frame(w, err)) != IST_OK)
		return st;
	w->buf = w->zbuf;
	w->cap = w->zcap;
	w->zbuf = b;
	w->zcap = cap;
	w->zn = w->n;
	w->zst = IST_OK;
	if (pthread_create(&w->zt, NULL, compressor, w) == 0) {
		w->zbusy = true;
		return IST_OK;
	}
	/* no thread: here, then */
	return compress_out(w, w->zbuf, w->zn, &w->st.raw_bytes,
	    &w->st.out_bytes, err);
}

enum ist_status
ist_writer_flush(struct ist_writer *w, struct ist_error *err)
{
	enum ist_status st;

	if (w->failed) {
		ist_seterr(err, IST_EIO, "trace writer failed earlier");
		ist_at(err, IST_AT_OUTPUT);
		return IST_EIO;
	}
	w->last_flush_ms = now_ms();
	if (w->n == 0 || (w->opts.self_contained && w->n <= w->hdr_n &&
	    w->st.frames > 0))
		return IST_OK;
	st = w->opts.background ? flush_background(w, err) :
	    compress_out(w, w->buf, w->n, &w->st.raw_bytes, &w->st.out_bytes,
	    err);
	if (st != IST_OK) {
		w->failed = true;
		return st;
	}
	w->st.frames++;
	w->n = 0;
	w->hdr_end = 0;
	w->gen++;
	if (w->opts.self_contained && w->hdr) {
		/* the next frame stands alone: header, then its own strings */
		reset_segment(w);
		if (reserve(w, w->hdr_n) != 0) {
			w->failed = true;
			ist_seterr(err, IST_ENOMEM, "cannot start a frame: %s",
			    strerror(ENOMEM));
			return IST_ENOMEM;
		}
		memcpy(w->buf, w->hdr, w->hdr_n);
		w->n = w->hdr_n;
	}
	return IST_OK;
}

enum ist_status
ist_writer_tick(struct ist_writer *w, struct ist_error *err)
{
	if (w->opts.flush_interval_ms == 0 || w->n == 0 ||
	    now_ms() - w->last_flush_ms < w->opts.flush_interval_ms)
		return IST_OK;
	return ist_writer_flush(w, err);
}

enum ist_status
ist_writer_finish(struct ist_writer *w, struct ist_error *err)
{
	enum ist_status st;

	if ((st = ist_writer_flush(w, err)) == IST_OK)
		st = join_frame(w, err);
	return st;
}

enum ist_status
ist_writer_close(struct ist_writer *w, struct ist_error *err)
{
	enum ist_status st;

	if (w == NULL)
		return IST_OK;
	st = ist_writer_finish(w, err);
	ist_writer_free(w);
	return st;
}

/* Returns the string's id, emitting a STRING record first if new; 0: error. */
static uint32_t intern_slow(struct ist_writer *w, struct ist_str s);

static inline uint32_t
intern(struct ist_writer *w, struct ist_str s)
{
	struct pcache *c;
	uint32_t id;

	if (w->pc == NULL)
		return intern_slow(w, s);
	c = &w->pc[(((uintptr_t)s.p >> 3) ^ s.n) & (PCACHE - 1)];
	if (c->p == s.p && c->n == s.n && c->seg == w->seg)
		return c->id;
	if ((id = intern_slow(w, s)) != 0) {
		c->p = s.p;
		c->n = s.n;
		c->id = id;
		c->seg = w->seg;
	}
	return id;
}

static uint32_t
intern_slow(struct ist_writer *w, struct ist_str s)
{
	uint32_t id;
	bool added;

	if (s.n > IST_MAX_STRING || (w->strs.n >= IST_MAX_STRINGS &&
	    ist_strtab_find(&w->strs, s.p, s.n, ist_hash_bytes(s.p, s.n)) ==
	    0))
		return 0;
	id = ist_strtab_intern(&w->strs, s.p, s.n, &added);
	if (id == 0 || !added)
		return id;
	if (reserve(w, s.n + 32))
		return 0;
	w->buf[w->n++] = 0x83; /* [1, id, text] */
	put_uint(w, K_STRING);
	put_uint(w, id);
	put_text(w, s.p, s.n);
	w->st.records++;
	return id;
}

/* s, which the source calls id k (0: no id): by k when met before. */
static inline uint32_t
intern_from(struct ist_writer *w, struct ist_str s, uint32_t k)
{
	uint32_t id;

	if (k == 0)
		return intern(w, s);
	if (k < w->nsmap && w->smap[k])
		return w->smap[k];
	if ((id = intern(w, s)) != 0)
		/* out of memory: not remembered, hashed next time */
		(void)ist_idmap_put(&w->smap, &w->nsmap, k, id);
	return id;
}

static struct wtrack *track_slow(struct ist_writer *w, const int64_t key[4],
    uint32_t mask);

/* Consecutive events mostly share a track: remember the last one.  key
 * holds pid, tid, device, stream, 0 where mask lacks them. */
static inline struct wtrack *
track(struct ist_writer *w, const int64_t key[4], uint32_t mask)
{
	struct wtrack *t = w->last_track;

	if (t && t->mask == mask && t->key[0] == key[0] &&
	    t->key[1] == key[1] && t->key[2] == key[2] && t->key[3] == key[3])
		return t;
	return w->last_track = track_slow(w, key, mask);
}

/* A record's start on its track, as the delta from the track's last one
 * in this frame. */
static inline void
put_time(struct ist_writer *w, struct wtrack *tr, int64_t t0)
{
	put_int(w, (int64_t)((uint64_t)t0 - (uint64_t)(tr->gen == w->gen ?
	    tr->last : 0)));
	tr->gen = w->gen;
	tr->last = t0;
}

/* Merged output switches tracks nearly every event: hash them cheaply. */
static inline uint64_t
track_hash(const int64_t key[4], uint32_t mask)
{
	uint64_t h = mask;

	for (int k = 0; k < 4; k++)
		h = (h ^ (uint64_t)key[k]) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static struct wtrack *
track_slow(struct ist_writer *w, const int64_t key[4], uint32_t mask)
{
	uint64_t h = track_hash(key, mask);
	size_t i = h & (w->ttab_cap - 1);
	struct wtrack *e;

	while ((e = &w->ttab[i])->id) {
		if (e->mask == mask && memcmp(e->key, key, sizeof(e->key)) == 0)
			return e;
		i = (i + 1) & (w->ttab_cap - 1);
	}
	if (w->ntracks >= IST_MAX_TRACKS || reserve(w, 64))
		return NULL;
	memcpy(e->key, key, sizeof(e->key));
	e->mask = mask;
	e->id = ++w->ntracks;
	e->gen = 0;
	e->nenc = (uint8_t)enc_head(false, e->id, e->enc, sizeof(e->enc));
	w->buf[w->n++] = 0x86; /* [2, id, pid, tid, device, stream] */
	put_uint(w, K_TRACK);
	put_uint(w, e->id);
	for (int k = 0; k < 4; k++) {
		if (mask >> k & 1)
			put_int(w, key[k]);
		else
			put_null(w);
	}
	w->st.records++;
	if ((w->ntracks + 1) * 2 > w->ttab_cap) {
		size_t ncap = w->ttab_cap * 2;
		struct wtrack *nt = calloc(ncap, sizeof(*nt));
		uint32_t id = e->id;
		if (nt == NULL)
			return NULL;
		for (size_t j = 0; j < w->ttab_cap; j++) {
			struct wtrack *o = &w->ttab[j];
			if (o->id == 0)
				continue;
			uint64_t oh = track_hash(o->key, o->mask);
			size_t k = oh & (ncap - 1);
			while (nt[k].id)
				k = (k + 1) & (ncap - 1);
			nt[k] = *o;
		}
		free(w->ttab);
		w->ttab = nt;
		w->ttab_cap = ncap;
		w->last_track = NULL;
		for (size_t j = 0; j < ncap; j++)
			if (nt[j].id == id)
				return &nt[j];
	}
	return e;
}

static enum ist_status
check_blob(struct ist_blob b, const char *what, struct ist_error *err)
{
	size_t used = SIZE_MAX;
	enum ist_status st = ist_cbor_check(b.p, b.n, &used, err);

	if (st == IST_EINVAL && used == b.n && err) {
		/* well-formed, but not what JSON can say: say what */
		char m[sizeof(err->msg)];
		snprintf(m, sizeof(m), "%s", err->msg);
		ist_seterr(err, IST_EINVAL, "field '%s': %s", what, m);
		return IST_EINVAL;
	}
	if (st == IST_OK && used != b.n)
		st = IST_EINVAL;
	if (st != IST_OK) {
		ist_seterr(err, IST_EINVAL, "field '%s' is not one CBOR item",
		    what);
		return IST_EINVAL;
	}
	return IST_OK;
}

/* The writer only reads events: these drop the const for the accessors. */
static struct ist_str
str_field(const struct ist_event *ev, enum ist_field f)
{
	struct ist_str *s = ist_field_str((struct ist_event *)ev, f);
	return s ? *s : (struct ist_str){ "", 0 };
}

static int64_t
int_field(const struct ist_event *ev, enum ist_field f)
{
	int64_t *v = ist_field_int((struct ist_event *)ev, f);
	return v ? *v : 0;
}

static struct ist_blob
blob_field(const struct ist_event *ev, enum ist_field f)
{
	struct ist_blob *b = ist_field_blob((struct ist_event *)ev, f);
	return b ? *b : (struct ist_blob){ NULL, 0 };
}

static enum ist_status
fail(struct ist_writer *w, struct ist_error *err)
{
	(void)w;
	ist_seterr(err, IST_ENOMEM, "cannot encode record: out of memory or "
	    "over a string or track limit");
	return IST_ENOMEM;
}

enum ist_status
ist_writer_header(struct ist_writer *w, const struct ist_event *hdr,
    struct ist_error *err)
{
	const struct ist_typespec *ts = &ist_types[IST_HEADER];
	enum ist_status st;
	size_t nkeys = 0, need = 64;

	if (hdr->type != IST_HEADER) {
		ist_seterr(err, IST_EINVAL, "a trace must start with a header");
		return IST_EINVAL;
	}
	if ((st = ist_writer_flush(w, err)) != IST_OK)
		return st;
	w->n = 0;       /* a self-contained writer re-copied the old header */
	reset_segment(w);
	for (int i = 0; i < ts->nfields; i++) {
		enum ist_field f = ts->fields[i].id;
		if (f == IST_F_FORMAT || f == IST_F_VERSION || IST_HAS(hdr, f))
			nkeys++;
		if (IST_HAS(hdr, f) && ts->fields[i].ft == FT_VALUE) {
			if ((st = check_blob(blob_field(hdr, f),
			    ts->fields[i].json, err)) != IST_OK)
				return st;
			need += blob_field(hdr, f).n;
		}
		need += str_field(hdr, f).n + 32;
	}
	if (reserve(w, need))
		return fail(w, err);
	w->n += cbor_encode_tag(IST_SELF_DESCRIBE_TAG, w->buf + w->n,
	    w->cap - w->n);
	w->n += cbor_encode_map_start(nkeys, w->buf + w->n, w->cap - w->n);
	for (int i = 0; i < ts->nfields; i++) {
		const struct ist_fieldspec *fs = &ts->fields[i];
		enum ist_field f = fs->id;
		struct ist_blob b;
		struct ist_str s;

		if (f == IST_F_FORMAT) {
			put_text(w, "format", 6);
			put_text(w, IST_FORMAT_NAME, strlen(IST_FORMAT_NAME));
			continue;
		}
		if (f == IST_F_VERSION) {
			put_text(w, "version", 7);
			w->buf[w->n++] = 0x82;
			put_uint(w, IST_VERSION_MAJOR);
			put_uint(w, IST_VERSION_MINOR);
			continue;
		}
		if (!IST_HAS(hdr, f))
			continue;
		put_text(w, fs->json, strlen(fs->json));
		switch (fs->ft) {
		case FT_STR:
			s = str_field(hdr, f);
			put_text(w, s.p, s.n);
			break;
		case FT_INT:
			put_int(w, int_field(hdr, f));
			break;
		default:
			b = blob_field(hdr, f);
			memcpy(w->buf + w->n, b.p, b.n);
			w->n += b.n;
			break;
		}
	}
	w->st.records++;
	w->have_header = true;
	w->hdr_end = w->n;
	if (w->opts.self_contained) {
		uint8_t *h = realloc(w->hdr, w->n);
		if (h == NULL)
			return fail(w, err);
		memcpy(h, w->buf, w->n);   /* the frame holds only the header */
		w->hdr = h;
		w->hdr_n = w->n;
	}
	return IST_OK;
}

/* Whether w takes records now. */
static enum ist_status
usable(const struct ist_writer *w, struct ist_error *err)
{
	if (w->failed) {
		ist_seterr(err, IST_EIO, "trace writer failed earlier");
		ist_at(err, IST_AT_OUTPUT);
		return IST_EIO;
	}
	if (!w->have_header) {
		ist_seterr(err, IST_EINVAL, "a trace must start with a header");
		return IST_EINVAL;
	}
	return IST_OK;
}

static enum ist_status written_slow(struct ist_writer *w,
    struct ist_error *err);

/* After an event: count it, and close the frame when full or due. */
static inline enum ist_status
written(struct ist_writer *w, struct ist_error *err)
{
	w->st.records++;
	w->st.events++;
	if (w->n < w->opts.frame_bytes && (w->opts.flush_interval_ms == 0 ||
	    ++w->since_clock < 64))
		return IST_OK;
	return written_slow(w, err);
}

static enum ist_status
written_slow(struct ist_writer *w, struct ist_error *err)
{
	if (w->n >= w->opts.frame_bytes)
		return ist_writer_flush(w, err);
	w->since_clock = 0;
	if (now_ms() - w->last_flush_ms >= w->opts.flush_interval_ms)
		return ist_writer_flush(w, err);
	return IST_OK;
}

/*
 * Interns the event's strings (ids into sid) and checks its blobs: the
 * index of its last present payload field in *last, the bytes its blobs
 * add in *need.
 */
static enum ist_status
prepare(struct ist_writer *w, const struct ist_plan *pl,
    const struct ist_event *ev, const uint32_t *src, uint32_t *sid,
    int *last, size_t *need, struct ist_error *err)
{
	enum ist_status st;

	for (int k = 0; k < pl->npay; k++) {
		const struct ist_fieldspec *fs = pl->pay[k];

		if (!IST_HAS(ev, fs->id))
			continue;
		*last = k;
		if (fs->ft == FT_STR) {
			struct ist_str sv = str_field(ev, fs->id);
			if (sv.n > IST_MAX_STRING) {
				ist_seterr(err, IST_ELIMIT, "field '%s' holds "
				    "%zu bytes, over the 1 MiB limit", fs->json,
				    sv.n);
				return IST_ELIMIT;
			}
			if ((sid[fs->id] = src ? intern_from(w, sv,
			    src[fs->id]) : intern(w, sv)) == 0)
				return fail(w, err);
		} else if (fs->ft == FT_VALUE || fs->ft == FT_OBJECT) {
			struct ist_blob b = blob_field(ev, fs->id);
			if ((st = check_blob(b, fs->json, err)) != IST_OK)
				return st;
			if (fs->ft == FT_OBJECT && (b.p[0] & 0xe0) != 0xa0) {
				ist_seterr(err, IST_EINVAL, "field '%s' must be "
				    "an object", fs->json);
				return IST_EINVAL;
			}
			*need += b.n;
		}
	}
	return IST_OK;
}

/* One present payload field, into room reserve() has made. */
static inline void
put_field(struct ist_writer *w, const struct ist_fieldspec *fs,
    const struct ist_event *ev, const uint32_t *sid)
{
	struct ist_blob b;

	switch (fs->ft) {
	case FT_STR:
		put_uint(w, sid[fs->id]);
		break;
	case FT_INT:
		put_int(w, int_field(ev, fs->id));
		break;
	case FT_BOOL:
		w->buf[w->n++] = *ist_field_bool((struct ist_event *)ev,
		    fs->id) ? 0xf5 : 0xf4;
		break;
	case FT_DOUBLE:
		w->n += cbor_encode_double(ev->pcie_gbps, w->buf + w->n,
		    w->cap - w->n);
		break;
	case FT_NUMBER:
		if (ev->value_is_int)
			put_int(w, ev->ivalue);
		else
			w->n += cbor_encode_double(ev->value, w->buf + w->n,
			    w->cap - w->n);
		break;
	case FT_IVEC3: {
		const int64_t *v = fs->id == IST_F_GRID ? ev->grid : ev->block;
		w->buf[w->n++] = 0x83;
		for (int j = 0; j < 3; j++)
			put_int(w, v[j]);
		break;
	}
	case FT_VALUE:
	case FT_OBJECT:
		b = blob_field(ev, fs->id);
		memcpy(w->buf + w->n, b.p, b.n);
		w->n += b.n;
		break;
	}
}

static enum ist_status
lacks_required(const struct ist_typespec *ts, const struct ist_event *ev,
    struct ist_error *err)
{
	for (int i = 0; i < ts->nfields; i++)
		if (ts->fields[i].required && !IST_HAS(ev, ts->fields[i].id)) {
			ist_seterr(err, IST_EINVAL, "%s event lacks required "
			    "field '%s'", ts->name, ts->fields[i].json);
			break;
		}
	return IST_EINVAL;
}

/* After a frame copied in: a record that would define a string or a
 * track in our numbering, which is not the segment's, is refused. */
static enum ist_status
tables_foreign(const struct ist_typespec *ts, const struct ist_event *ev,
    struct ist_error *err)
{
	bool uses = ts->has_track;

	for (int i = 0; i < ts->nfields && !uses; i++)
		uses = ts->fields[i].ft == FT_STR && IST_HAS(ev, ts->fields[i].id);
	if (!uses)
		return IST_OK;
	ist_seterr(err, IST_EINVAL, "a %s record cannot follow a frame copied "
	    "through in its segment", ts->name);
	return IST_EINVAL;
}

enum ist_status
ist_writer_raw_frame(struct ist_writer *w, const void *p, size_t n,
    struct ist_error *err)
{
	enum ist_status st;

	if ((st = usable(w, err)) != IST_OK)
		return st;
	if (w->opts.self_contained) {
		ist_seterr(err, IST_EINVAL, "a self-contained writer cannot "
		    "copy a frame through");
		return IST_EINVAL;
	}
	/* its time deltas start at the frame's start: nothing of ours but a
	 * header may precede them */
	if (w->n > w->hdr_end && (st = ist_writer_flush(w, err)) != IST_OK)
		return st;
	if (reserve(w, n))
		return fail(w, err);
	memcpy(w->buf + w->n, p, n);
	w->n += n;
	w->foreign = true;
	return ist_writer_flush(w, err);
}

/*
 * A frame that compresses, whose header says its content size, and before
 * which the writer holds nothing (not even a header) is handed to the sink
 * as it came: the same records, compressed once.  Any other goes through
 * ist_writer_raw_frame.
 */
enum ist_status
ist_writer_raw_frame_z(struct ist_writer *w, const void *p, size_t n,
    const void *z, size_t zn, struct ist_error *err)
{
	enum ist_status st;

	if (z == NULL || zn >= n || w->n != 0 || w->opts.self_contained ||
	    ZSTD_getFrameContentSize(z, zn) != n)
		return ist_writer_raw_frame(w, p, n, err);
	if ((st = usable(w, err)) != IST_OK)
		return st;
	/* after the frame being compressed, if any: frames stay in order */
	if ((st = join_frame(w, err)) != IST_OK ||
	    (st = sink_out(w, z, zn, err)) != IST_OK) {
		w->failed = true;
		return st;
	}
	w->last_flush_ms = now_ms();
	w->st.raw_bytes += n;
	w->st.out_bytes += zn;
	w->st.frames++;
	w->hdr_end = 0;
	w->gen++;
	w->foreign = true;
	return IST_OK;
}

enum ist_status
ist_writer_write(struct ist_writer *w, const struct ist_event *ev,
    struct ist_error *err)
{
	return ist_writer_write_from(w, ev, NULL, err);
}

enum ist_status
ist_writer_write_from(struct ist_writer *w, const struct ist_event *ev,
    const uint32_t *src, struct ist_error *err)
{
	const struct ist_typespec *ts;
	const struct ist_plan *pl;
	uint32_t sid[IST_NFIELDS];
	struct wtrack *tr = NULL;
	enum ist_status st;
	size_t need = 32, nel;
	int last = -1;
	uint32_t tmask;

	if (ev->type == IST_HEADER)
		return ist_writer_header(w, ev, err);
	if ((unsigned)ev->type >= IST_NTYPES) {
		ist_seterr(err, IST_EINVAL, "unknown event type %d", ev->type);
		return IST_EINVAL;
	}
	if ((st = usable(w, err)) != IST_OK)
		return st;
	ts = &ist_types[ev->type];
	pl = &ist_plans[ev->type];
	if (w->foreign && (st = tables_foreign(ts, ev, err)) != IST_OK)
		return st;
	if ((ev->has & pl->req) != pl->req)
		return lacks_required(ts, ev, err);
	if ((st = prepare(w, pl, ev, src, sid, &last, &need, err)) != IST_OK)
		return st;
	if (need > IST_MAX_RECORD) {
		/* with the frame it joins and its strings, it would make a
		 * frame that no reader takes */
		ist_seterr(err, IST_ELIMIT, "the %s record holds %zu bytes, over "
		    "the %u MiB a record may hold", ts->name, need,
		    IST_MAX_RECORD >> 20);
		return IST_ELIMIT;
	}
	tmask = (uint32_t)(ev->has & pl->tmask);
	if (ts->has_track) {
		int64_t key[4] = {
			(tmask & 1) ? ev->pid : 0, (tmask & 2) ? ev->tid : 0,
			(tmask & 4) ? ev->device : 0,
			(tmask & 8) ? ev->stream : 0,
		};
		if ((tr = track(w, key, tmask)) == NULL)
			return fail(w, err);
	}
	nel = (size_t)pl->base + (size_t)(last + 1);
	if (reserve(w, need + nel * 9 + 64))
		return fail(w, err);
	w->n += cbor_encode_array_start(nel, w->buf + w->n, w->cap - w->n);
	put_uint(w, (uint64_t)ts->kind);
	if (tr) {
		memcpy(w->buf + w->n, tr->enc, sizeof(tr->enc));
		w->n += tr->nenc;
		if (ts->time != TS_NONE)
			put_time(w, tr, ts->time == TS_RANGE ? ev->start_ns :
			    ev->ts_ns);
		if (ts->time == TS_RANGE)
			put_int(w, (int64_t)((uint64_t)ev->end_ns -
			    (uint64_t)ev->start_ns));
	}
	for (int k = 0; k <= last; k++) {
		if (IST_HAS(ev, pl->pay[k]->id))
			put_field(w, pl->pay[k], ev, sid);
		else
			put_null(w);
	}
	return written(w, err);
}

static enum ist_status
timed_id(struct ist_writer *w, struct ist_str s, uint32_t *id,
    struct ist_error *err)
{
	if (s.n > IST_MAX_STRING) {
		ist_seterr(err, IST_ELIMIT, "a name of %zu bytes is over the "
		    "1 MiB limit", s.n);
		return IST_ELIMIT;
	}
	if ((*id = intern_slow(w, s)) == 0)
		return fail(w, err);
	return IST_OK;
}

/* The ids of d's strings in this segment, defined as ist_writer_write
 * would define them (the name, then the file or domain where the record
 * carries it), and the record's constant bytes. */
static enum ist_status
timed_def(struct ist_writer *w, enum ist_type type, struct ist_wdef *d,
    struct ist_error *err)
{
	enum ist_status st;
	uint8_t *t = d->tail;
	int extra;       /* payload after the name: file/domain, line */

	if (type == IST_CPU_CALL && d->yielded)
		extra = 5;       /* file, line, cut, raised, yielded */
	else if (type == IST_CPU_CALL)
		extra = d->line > 0 ? 2 : d->more.p ? 1 : 0;
	else if (type == IST_NVTX_RANGE)
		extra = d->more.p ? 1 : 0;
	else if (type == IST_SCOPE)
		extra = 0;
	else {
		ist_seterr(err, IST_EINVAL, "event type %d is not a timed "
		    "record of a thread", type);
		return IST_EINVAL;
	}
	if ((st = timed_id(w, d->name, &d->name_id, err)) != IST_OK)
		return st;
	if (extra && d->more.p &&
	    (st = timed_id(w, d->more, &d->more_id, err)) != IST_OK)
		return st;
	d->nhead = (uint8_t)cbor_encode_array_start(5 + (size_t)extra,
	    d->head, 2);
	d->nhead += (uint8_t)enc_head(false, ist_types[type].kind,
	    d->head + d->nhead, 2u - d->nhead);
	t += enc_head(false, d->name_id, t, 9);
	if (extra >= 1) {
		if (d->more.p)
			t += enc_head(false, d->more_id, t, 9);
		else
			*t++ = 0xf6;
	}
	if (extra >= 2) {
		if (d->line > 0)
			t += enc_head(false, (uint64_t)d->line, t, 9);
		else
			*t++ = 0xf6;
	}
	if (extra == 5) {
		*t++ = 0xf6;     /* cut */
		*t++ = 0xf6;     /* raised */
		*t++ = 0xf5;     /* yielded: true */
	}
	d->ntail = (uint8_t)(t - d->tail);
	d->seg = w->seg;
	d->type = (uint8_t)type;
	return IST_OK;
}

/* Whether d's ids and bytes are not yet made for this segment and type. */
static inline bool
timed_stale(const struct ist_writer *w, const struct ist_timed *e)
{
	return e->d->seg != w->seg || e->d->type != e->type;
}

enum ist_status
ist_writer_timed_run(struct ist_writer *w, int64_t pid, int64_t tid,
    const struct ist_timed *ev, size_t n, size_t *done,
    struct ist_error *err)
{
	const int64_t key[4] = { pid, tid, 0, 0 };
	const uint64_t gen = w->gen;
	const size_t frame_bytes = w->opts.frame_bytes;
	const bool clocked = w->opts.flush_interval_ms != 0;
	struct wtrack *tr;
	enum ist_status st = IST_OK;
	int64_t last;
	uint8_t *buf;
	size_t i, at, k = 0;
	uint32_t since;

	*done = 0;
	if ((st = usable(w, err)) != IST_OK)
		return st;
	/* the first record's strings before its track, as ist_writer_write
	 * defines them; a string defined below never moves the track; a
	 * flush (the frame full or due) may, and ends the run */
	if (n > 0 && timed_stale(w, ev) &&
	    (st = timed_def(w, ev->type, ev->d, err)) != IST_OK)
		return st;
	if ((tr = track(w, key, 3)) == NULL)    /* pid and tid */
		return fail(w, err);
	/* room for the rest of the run, again after a definition, which
	 * takes room of its own: a record takes at most 64 bytes */
	if (reserve(w, 64 * n))
		return fail(w, err);
	/* the track's last start, the frame's end, its clock count and the
	 * records written in locals for the run: a byte stored through
	 * w->buf could be any of w's members, to the compiler, which then
	 * loads and stores them all for every record.  w's own are made
	 * whole again (sync) before anything of w's runs, and at the end */
	last = tr->gen == gen ? tr->last : 0;
	buf = w->buf;
	at = w->n;
	since = w->since_clock;
#define SYNC() do { w->n = at; w->since_clock = since; if (k) { \
	w->st.records += k; w->st.events += k; tr->gen = gen; \
	tr->last = last; k = 0; } } while (0)
	for (i = 0; i < n; ) {
		const struct ist_timed *e = &ev[i];
		struct ist_wdef *d = e->d;
		uint8_t *o;

		if (timed_stale(w, e)) {
			SYNC();
			if ((st = timed_def(w, e->type, d, err)) == IST_OK &&
			    reserve(w, 64 * (n - i)))
				st = fail(w, err);
			buf = w->buf;
			at = w->n;
			if (st != IST_OK)
				break;
		}
		/* the constant bytes copied whole (the room is reserved) */
		o = buf + at;
		memcpy(o, d->head, sizeof(d->head));
		o += d->nhead;
		memcpy(o, tr->enc, sizeof(tr->enc));
		o += tr->nenc;
		o += enc_int((int64_t)((uint64_t)e->start_ns - (uint64_t)last),
		    o);
		o += enc_int((int64_t)((uint64_t)e->end_ns -
		    (uint64_t)e->start_ns), o);
		memcpy(o, d->tail, sizeof(d->tail));
		o += d->ntail;
		at = (size_t)(o - buf);
		last = e->start_ns;
		i++;
		k++;
		/* written(): the frame closed when full or due */
		if (at >= frame_bytes || (clocked && ++since >= 64)) {
			SYNC();
			st = written_slow(w, err);
			buf = w->buf;
			at = w->n;
			since = w->since_clock;
			if (st != IST_OK || w->gen != gen)
				break;
		}
	}
	SYNC();
#undef SYNC
	*done = i;
	return st;
}

enum ist_status
ist_writer_timed(struct ist_writer *w, enum ist_type type, int64_t pid,
    int64_t tid, int64_t start_ns, int64_t end_ns, struct ist_wdef *d,
    struct ist_error *err)
{
	struct ist_timed ev = { d, start_ns, end_ns, type };
	size_t done;

	return ist_writer_timed_run(w, pid, tid, &ev, 1, &done, err);
}

int
ist_cbor_ints(const int64_t *v, size_t n, struct ist_buf *out)
{
	unsigned char h[9];

	if (ist_buf_append(out, h, cbor_encode_array_start(n, h, 9)))
		return ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t k = v[i] >= 0 ? cbor_encode_uint((uint64_t)v[i], h, 9) :
		    cbor_encode_negint((uint64_t)(-(v[i] + 1)), h, 9);
		if (ist_buf_append(out, h, k))
			return ENOMEM;
	}
	return 0;
}

int
ist_cbor_args(const char *args, size_t n, struct ist_buf *out)
{
	unsigned char h[9];
	size_t nargs = 0;

	for (size_t i = 0; i < n; i++)
		if (args[i] == '\0')
			nargs++;
	if (ist_buf_append(out, h, cbor_encode_array_start(nargs, h, 9)))
		return ENOMEM;
	for (const char *a = args; nargs-- > 0; a += strlen(a) + 1) {
		size_t len = strlen(a);
		if (ist_buf_append(out, h, cbor_encode_string_start(len, h, 9)) ||
		    ist_buf_append(out, a, len))
			return ENOMEM;
	}
	return 0;
}
