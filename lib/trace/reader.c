/* reader.c - a source -> zstd frames -> CBOR records -> events. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cbor.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "internal.h"

struct rtrack {
	int64_t key[4];
	uint32_t mask;
	uint64_t gen;
	int64_t last;
};

/* a string's length with this bit: its text needs no escaping in JSON
 * (strings are at most IST_MAX_STRING bytes, so the bit is free) */
#define SPLAIN 0x80000000u

/*
 * Reading ahead (ist_reader_ahead): a second reader, the producer, reads
 * and decompresses frames into one of two frame buffers and splits their
 * records into tokens, chunk by chunk; the reader decodes them in order.
 * A frame's buffer goes back to the producer when the reader leaves it.
 */
#define AH_RECS 512             /* records in a chunk, at most */
/* Chunks in flight: the reader's store while the producer decompresses.
 * With each next frame decompressed whole after the last chunk of the
 * one before (before ah_early), 8 (4096 records, 0.4 ms of the reader's
 * work) ran dry inside a 1 MiB frame's 1 ms, 32 did not: is-info 8%,
 * is-merge 5% faster.  Since, 16 read as fast as 32 within the noise (a
 * chunk's tokens are about 150 KiB: 4.7 MiB in all) */
#define AH_CHUNKS 32
/* A producer that finds every chunk full waits until this many are free
 * again, and the reader wakes it only then: one wakeup for several
 * chunks, not one a chunk (on two cores shared with the rest of a
 * pipeline each wakeup had been a context switch, or two) */
#define AH_REFILL (AH_CHUNKS / 2)
/* and a reader that finds none waits until this many are ready, or its
 * frame's last, or the producer's last word (within a frame the producer
 * only splits: it never waits for input there) */
#define AH_READY (AH_CHUNKS / 2)
#define AH_FRAMES 2
/* frame_step's nowait: the input read as it comes (a regular file's, or
 * for a frame decompressed now), or only bytes there already: those read
 * (IN_BUFFERED: a source we know nothing of), or those poll says a
 * descriptor holds.  Decompressing early never waits for a pipe's writer
 * while the frame being split, all there, waits. */
#define IN_WAITS (-2)
#define IN_BUFFERED (-1)

struct ah_chunk {
	struct tokenizer tz;     /* its records' tokens, one after another */
	uint32_t tok[AH_RECS];   /* where each record's start */
	uint32_t used[AH_RECS];  /* each record's bytes */
	size_t nrec, ntok;       /* records, and their tokens */
	/* the record after the last could not be split: why */
	enum ist_status tst;
	const char *why;
	int frame;               /* its frame's buffer */
	bool enter, leave;       /* the first chunk of its frame, the last */
	/* the rest of its frame left unsplit, from where the chunk before
	 * ended: the reader splits it (ah_give_rest, ah_record) */
	bool raw;
	/* no frame (enter false): what reading one said, and its error */
	enum ist_status est;
	struct ist_error eerr;
	/* the producer's, as it read the frame */
	struct ist_reader_stats st;
	size_t fn;
	bool cut;
	uint64_t cut_in, cut_off, fr_in0, fr_in1;
};

struct ahead {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ist_reader *p;    /* the producer */
	struct {
		uint8_t *buf;
		size_t cap;
		bool busy;       /* the producer's, or the reader's */
		struct ist_buf z;    /* p->keep_z: the frame as it came */
		bool z_whole;        /* z is all of it (ist_reader_frame_z) */
	} fr[AH_FRAMES];
	struct ah_chunk ch[AH_CHUNKS];
	/* chunks handed over (the producer's to write), and given back (the
	 * reader's): each thread counts its own without the lock, which it
	 * takes only to wait, or to wake the other when it waits (a flag
	 * raised under the lock before it looks at the counts again) */
	_Atomic uint64_t made, taken;
	_Atomic bool pwait;      /* the producer waits for AH_REFILL chunks */
	_Atomic bool rwait;      /* the reader waits for AH_READY chunks */
	_Atomic bool steal;      /* it waits in a frame: it would split the
				  * frame's rest itself */
	_Atomic uint64_t given;  /* frames' rests given it */
	_Atomic bool stop;       /* written under the lock */
	pid_t pid;               /* the process whose thread the producer is */
	/* the reader's: its chunk (taken - 1's), the next record in it */
	struct ah_chunk *cur;
	size_t ci;
	int frame;               /* the frame it is in, -1 none */
	/* the producer's: the next frame's buffer, decompressed early (a
	 * slice at a time as the one before is split: ah_early), -1 none;
	 * once done, what decompressing it said */
	int nf;
	int in;                  /* frame_step's nowait, for early frames */
	bool nf_done;
	enum ist_status nf_st;
	struct ist_error nf_err;
};

struct ist_reader {
	ist_source_fn src;
	void *ctx;
	char *name;
	ZSTD_DCtx *dctx;
	uint8_t *in;
	size_t in_pos, in_end, in_cap;
	bool eof;
	uint64_t in_off;        /* compressed bytes consumed before in_pos */
	uint8_t *fbuf;
	size_t fn, fcap, fpos;
	bool frame_start;       /* next record is the first of its frame */
	bool cut;               /* fbuf is the complete blocks of a frame the
				 * input stopped inside */
	uint64_t cut_in, cut_off;    /* that frame's bytes read, its offset */
	uint64_t fr_in0, fr_in1;     /* the current frame's compressed span */
	/* frame_step: a frame begun and not yet whole, its offset, its
	 * compressed bytes so far and its declared size */
	bool fs_open;
	uint64_t fs_off, fs_in;
	size_t fs_decl;
	int in_fd;              /* ist_reader_input_fd, or -1 */
	uint64_t frame_records; /* records read from fbuf */
	uint64_t gen;
	enum ist_status sticky;
	struct ist_error sticky_err;
	bool in_segment;
	ist_frame_fn on_frame;  /* called as each frame is left */
	void *on_frame_ctx;
	struct ist_buf zf;      /* with keep_z: the frame as it came */
	bool zf_whole;          /* zf is all of the current frame */
	bool zf_lost;           /* zf could not grow: no copy of this one */
	bool keep_z;            /* zf kept: an on_frame is set, or this is the
				 * producer reading ahead for a reader with one */
	bool frame_left;        /* on_frame has seen the current frame */
	size_t rec_pos;         /* where the current record starts in fbuf */
	bool skim;              /* only each frame's first record, when it is
				 * a header or an analysis (ist_reader_skim) */
	struct tokenizer tz;
	/* segment */
	size_t *soff;
	uint32_t *slen;         /* | SPLAIN: the text needs no JSON escape */
	size_t nstr, scap;
	struct ist_buf sdata;
	struct rtrack *tracks;
	size_t ntrack, tcap;
	struct ist_event ev;
	uint32_t ev_track;           /* the current event's ids, for is-merge */
	uint32_t ev_sid[IST_NFIELDS];
	struct ist_reader_stats st;
	struct ahead *ah;       /* reading ahead, or NULL */
	/* ist_reader_progress: where the reading is, as each frame is
	 * entered, for a source that may run on the producer's thread */
	_Atomic uint64_t prog_at, prog_events;
};

static void ah_stop(struct ist_reader *r);

long
ist_fd_source(void *ctx, void *buf, size_t n)
{
	int fd = *(int *)ctx;
	ssize_t k;

	do
		k = read(fd, buf, n);
	while (k < 0 && errno == EINTR);
	return (long)k;
}

long
ist_pread_source(void *ctx, void *buf, size_t n)
{
	struct ist_pread *s = ctx;
	ssize_t k;

	do
		k = pread(s->fd, buf, n, (off_t)s->off);
	while (k < 0 && errno == EINTR);
	if (k > 0)
		s->off += (uint64_t)k;
	return (long)k;
}

/* ---- reader ---- */

enum ist_status
ist_reader_new(struct ist_reader **out, ist_source_fn src, void *ctx,
    const char *name, struct ist_error *err)
{
	struct ist_reader *r;

	*out = NULL;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		goto nomem;
	r->src = src;
	r->ctx = ctx;
	r->in_fd = -1;
	r->name = strdup(strcmp(name, "-") == 0 ? "<stdin>" : name);
	r->in_cap = ZSTD_DStreamInSize();
	r->in = malloc(r->in_cap);
	r->dctx = ZSTD_createDCtx();
	if (r->name == NULL || r->in == NULL || r->dctx == NULL)
		goto nomem;
	ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, 27);
	ist_plans_init();
	*out = r;
	return IST_OK;
nomem:
	ist_reader_free(r);
	ist_seterr(err, IST_ENOMEM, "cannot create trace reader: %s",
	    strerror(ENOMEM));
	return IST_ENOMEM;
}

void
ist_reader_free(struct ist_reader *r)
{
	if (r == NULL)
		return;
	ah_stop(r);
	free(r->name);
	ZSTD_freeDCtx(r->dctx);
	free(r->in);
	free(r->fbuf);
	ist_buf_release(&r->zf);
	free(r->tz.toks);
	free(r->soff);
	free(r->slen);
	ist_buf_release(&r->sdata);
	free(r->tracks);
	free(r);
}

void
ist_reader_progress(struct ist_reader *r, uint64_t *at, uint64_t *events)
{
	*at = atomic_load_explicit(&r->prog_at, memory_order_relaxed);
	*events = atomic_load_explicit(&r->prog_events, memory_order_relaxed);
}

void
ist_reader_stats(const struct ist_reader *r, struct ist_reader_stats *st)
{
	*st = r->st;
	st->at_bytes = r->fn > 0 ? r->fr_in0 + (uint64_t)((double)(r->fr_in1 -
	    r->fr_in0) * (double)r->fpos / (double)r->fn) : r->st.in_bytes;
}

static enum ist_status
stick(struct ist_reader *r, struct ist_error *err, enum ist_status st)
{
	r->sticky = st;
	if (err) {
		/* reading ahead, the input is read to the current frame's
		 * end as it would be here */
		err->offset = r->ah ? r->fr_in1 : r->in_off + r->in_pos;
		r->sticky_err = *err;
	}
	return st;
}

static enum ist_status
bad_record(struct ist_reader *r, struct ist_error *err, enum ist_status st,
    const char *why)
{
	ist_seterr(err, st, "cannot decode record %llu in '%s': %s",
	    (unsigned long long)r->st.records, r->name, why);
	if (err)
		err->record = r->st.records;
	return stick(r, err, st);
}

/* Reads more of the input into r->in, after in_end, the bytes before
 * in_pos dropped first: the bytes read, 0 at its end, or -1 with the
 * error stuck. */
static long
fill_more(struct ist_reader *r, struct ist_error *err)
{
	size_t avail = r->in_end - r->in_pos;
	long k;

	if (r->in_pos > 0) {
		memmove(r->in, r->in + r->in_pos, avail);
		r->in_off += r->in_pos;
		r->in_end = avail;
		r->in_pos = 0;
	}
	k = r->src(r->ctx, r->in + r->in_end, r->in_cap - r->in_end);
	if (k < 0) {
		int e = errno;
		ist_seterr(err, IST_EIO, "cannot read '%s': %s", r->name,
		    strerror(e));
		if (err)
			err->sys_errno = e;
		(void)stick(r, err, IST_EIO);
		return -1;
	}
	if (k == 0)
		r->eof = true;
	r->in_end += (size_t)k;
	r->st.in_bytes += (uint64_t)k;
	return k;
}

/* Fills r->in once it is all read: bytes available, 0 at EOF, -1 on
 * error (stuck). */
static long
fill(struct ist_reader *r, struct ist_error *err)
{
	if (r->in_pos < r->in_end)
		return (long)(r->in_end - r->in_pos);
	if (r->eof)
		return 0;
	return fill_more(r, err);
}

/* Reads the first bytes of the input to say what it is, when it is not zstd. */
static enum ist_status
sniff(struct ist_reader *r, struct ist_error *err)
{
	const uint8_t *p;
	size_t avail;

	/* gather at least 4 bytes (a pipe may hand them one by one) */
	for (;;) {
		avail = r->in_end - r->in_pos;
		if (avail >= 4 || r->eof)
			break;
		if (fill_more(r, err) < 0)
			return IST_EIO;
	}
	avail = r->in_end - r->in_pos;
	p = r->in + r->in_pos;
	if (avail > 0 && avail < 4 && memcmp(p, "\x28\xb5\x2f\xfd", avail) == 0) {
		r->st.truncated_bytes = avail;
		ist_seterr(err, IST_TRUNCATED, "trace '%s' is truncated: last "
		    "%zu bytes dropped", r->name, avail);
		r->sticky = IST_END;
		return IST_TRUNCATED;
	}
	if (avail == 0) {
		ist_seterr(err, IST_EEMPTY, "'%s' is empty", r->name);
		return stick(r, err, IST_EEMPTY);
	}
	/* a zstd frame (28 b5 2f fd) or a skippable frame (5? 2a 4d 18) */
	if (avail >= 4 && ((p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f &&
	    p[3] == 0xfd) || ((p[0] & 0xf0) == 0x50 && p[1] == 0x2a &&
	    p[2] == 0x4d && p[3] == 0x18)))
		return IST_OK;
	while (avail > 0 && (*p == ' ' || *p == '\n' || *p == '\t' ||
	    *p == '\r')) {
		p++;
		avail--;
	}
	ist_seterr(err, IST_ENOTTRACE, "'%s' is not an InferScope trace%s",
	    r->name, avail > 0 && (*p == '{' || *p == '[') ?
	    " (it looks like JSON; see is-cat --encode)" :
	    " (no zstd frame magic)");
	return stick(r, err, IST_ENOTTRACE);
}

/* The current frame is left: on_frame gets its first n bytes, the whole
 * records read from it. */
static void
leave_frame(struct ist_reader *r, size_t n)
{
	if (!r->frame_left && r->on_frame && n > 0)
		r->on_frame(r->on_frame_ctx, r->fbuf, n);
	r->frame_left = true;
}

/*
 * What the frame at in_pos says its content is, 0 when it does not say:
 * it only ever makes a buffer smaller than doubling would (frames of
 * 4 MiB and a record had taken 8), never bigger.
 */
static size_t
declared_size(const struct ist_reader *r)
{
	unsigned long long n = ZSTD_getFrameContentSize(r->in + r->in_pos,
	    r->in_end - r->in_pos);

	return n == ZSTD_CONTENTSIZE_UNKNOWN || n == ZSTD_CONTENTSIZE_ERROR ||
	    n > IST_MAX_FRAME ? 0 : (size_t)n;
}

/* A frame read into fbuf, raw bytes of content, is the one records come
 * from now: counted, its compressed span [in0, in1) noted; zf_whole, its
 * compressed copy is whole. */
static void
enter_frame(struct ist_reader *r, size_t raw, bool zf_whole, uint64_t in0,
    uint64_t in1)
{
	r->st.frames++;
	r->st.raw_bytes += raw;
	r->zf_whole = zf_whole;
	r->fr_in0 = in0;
	r->fr_in1 = in1;
	r->gen++;
	r->frame_start = true;
	r->frame_left = false;
	r->frame_records = 0;
}

/*
 * Decompresses the next frame into fbuf, up to limit bytes more of it a
 * call (SIZE_MAX: whole); *more when it is not whole yet, the next call
 * going on with it (the producer reading ahead decompresses the next frame
 * a slice at a time as it splits the one before).  nowait: IN_WAITS, the
 * input is read as it comes; else it is read only when it is there
 * already (IN_BUFFERED: only what was read; a descriptor: what poll says
 * it holds), *more set when it is not.  IST_OK, IST_END at a clean end,
 * IST_TRUNCATED when the input stops inside a frame.
 */
static enum ist_status
frame_step(struct ist_reader *r, size_t limit, int nowait, bool *more,
    struct ist_error *err)
{
	size_t stop = limit == SIZE_MAX ? SIZE_MAX : r->fn + limit;
	long k;

	*more = false;
	for (;;) { /* skippable frames decode to nothing: loop past them */
		if (!r->fs_open) {
			r->zf_whole = false;
			r->fs_off = r->in_off + r->in_pos;
			r->fs_in = 0;
			r->fs_decl = 0;
			r->fn = r->fpos = 0;
			r->zf.n = 0;
			r->zf_lost = false;
			ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
			r->fs_open = true;
			stop = limit == SIZE_MAX ? SIZE_MAX : limit;
		}
		for (;;) {
			ZSTD_inBuffer in;
			ZSTD_outBuffer out;
			size_t ret;

			if (r->fn >= stop || (nowait != IN_WAITS &&
			    r->in_pos >= r->in_end && !r->eof && (nowait ==
			    IN_BUFFERED || poll(&(struct pollfd){ nowait,
			    POLLIN, 0 }, 1, 0) != 1))) {
				*more = true;
				return IST_OK;
			}
			if ((k = fill(r, err)) < 0) {
				r->fs_open = false;
				return IST_EIO;         /* stuck by fill */
			}
			if (k == 0) {
				r->fs_open = false;
				if (r->fs_in == 0)
					return IST_END;
				if (r->fn > 0) {
					/* its complete blocks decoded: their
					 * whole records are read, then the
					 * cut is said (cut_frame) */
					r->cut = true;
					r->cut_in = r->fs_in;
					r->cut_off = r->fs_off;
					break;
				}
				r->st.truncated_bytes = r->fs_in;
				ist_seterr(err, IST_TRUNCATED, "trace '%s' is "
				    "truncated: last %llu bytes dropped",
				    r->name, (unsigned long long)r->fs_in);
				if (err)
					err->offset = r->fs_off;
				r->sticky = IST_END;
				return IST_TRUNCATED;
			}
			if (r->fn == 0 && r->fs_in == 0)
				r->fs_decl = declared_size(r);
			if (r->fcap - r->fn < (64u << 10)) {
				size_t cap = r->fcap ? r->fcap * 2 : 1u << 20;
				size_t fit = (r->fs_decl + (128u << 10)) &
				    ~(size_t)0xffff;
				uint8_t *p;
				if (r->fs_decl && fit < cap && fit > r->fcap &&
				    fit - r->fn >= (64u << 10))
					cap = fit;
				if (r->fcap >= IST_MAX_FRAME) {
					ist_seterr(err, IST_ELIMIT, "'%s': frame "
					    "at byte %llu is larger than %u MiB",
					    r->name,
					    (unsigned long long)r->fs_off,
					    IST_MAX_FRAME >> 20);
					r->fs_open = false;
					return stick(r, err, IST_ELIMIT);
				}
				if ((p = realloc(r->fbuf, cap)) == NULL) {
					ist_seterr(err, IST_ENOMEM, "'%s': %s",
					    r->name, strerror(ENOMEM));
					r->fs_open = false;
					return stick(r, err, IST_ENOMEM);
				}
				r->fbuf = p;
				r->fcap = cap;
			}
			in = (ZSTD_inBuffer){ r->in, r->in_end, r->in_pos };
			out = (ZSTD_outBuffer){ r->fbuf, r->fcap < stop ?
			    r->fcap : stop, r->fn };
			ret = ZSTD_decompressStream(r->dctx, &out, &in);
			/* the bytes it took, for a copy of the frame as it
			 * came (ist_reader_frame_z); a buffer that cannot grow
			 * only means no such copy */
			if (r->keep_z && !r->zf_lost &&
			    ist_buf_append(&r->zf, r->in + r->in_pos,
			    in.pos - r->in_pos) != 0)
				r->zf_lost = true;
			r->fs_in += in.pos - r->in_pos;
			r->in_pos = in.pos;
			r->fn = out.pos;
			if (ZSTD_isError(ret)) {
				ist_seterr(err, IST_ECORRUPT, "'%s' is corrupt: "
				    "frame at byte %llu: %s", r->name,
				    (unsigned long long)r->fs_off,
				    ZSTD_getErrorName(ret));
				if (err)
					err->offset = r->fs_off;
				r->sticky = IST_ECORRUPT;
				if (err)
					r->sticky_err = *err;
				r->fs_open = false;
				return IST_ECORRUPT;
			}
			if (ret == 0)
				break;
		}
		r->fs_open = false;
		if (r->fn > 0)
			break;
	}
	enter_frame(r, r->fn, r->keep_z && !r->cut && !r->zf_lost, r->fs_off,
	    r->in_off + r->in_pos);
	return IST_OK;
}

static enum ist_status
read_frame(struct ist_reader *r, struct ist_error *err)
{
	bool more;

	return frame_step(r, SIZE_MAX, IN_WAITS, &more, err);
}

/*
 * The compressed size of the frame at in_pos, once all of it is in r->in
 * (read into it, the buffer grown as it must be); 0 when it cannot be
 * told that way (the input ends inside it, its header or a block header
 * is damaged, it is larger than a frame may be): the frame is then read
 * as any other, which says what is wrong with it.
 */
static size_t
frame_in_buffer(struct ist_reader *r, struct ist_error *err)
{
	for (;;) {
		size_t avail = r->in_end - r->in_pos, zn;

		zn = ZSTD_findFrameCompressedSize(r->in + r->in_pos, avail);
		if (!ZSTD_isError(zn))
			return zn;
		if (r->eof || ZSTD_getErrorCode(zn) != ZSTD_error_srcSize_wrong)
			return 0;
		if (avail == r->in_cap) {       /* all of r->in: larger */
			uint8_t *p;
			if (r->in_cap >= ZSTD_compressBound(IST_MAX_FRAME) ||
			    (p = realloc(r->in, r->in_cap * 2)) == NULL)
				return 0;
			r->in = p;
			r->in_cap *= 2;
		}
		if (fill_more(r, err) < 0)
			return 0;
	}
}

/*
 * Skimming (ist_reader_skim): of the next frame, only as much is
 * decompressed as its first record takes, and the input is moved past
 * the rest by its block sizes (zstd's findFrameCompressedSize), never
 * decompressed: a report of a trace that promises its analysis takes a
 * tenth of the time it took to decompress every frame.  Such a frame's
 * checksum is not checked; one the input cut, or whose blocks cannot be
 * walked, is read whole (read_frame), as it was.
 */
static enum ist_status
skim_frame(struct ist_reader *r, struct ist_error *err)
{
	for (;;) {
		size_t zn = frame_in_buffer(r, err), ret = 1;
		uint64_t off = r->in_off + r->in_pos;
		unsigned long long decl;
		ZSTD_inBuffer in;
		size_t fn = 0, used;
		const char *why;

		if (r->sticky != IST_OK)
			return r->sticky;
		if (zn == 0)
			return read_frame(r, err);
		in = (ZSTD_inBuffer){ r->in, r->in_pos + zn, r->in_pos };
		ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
		for (;;) {
			ZSTD_outBuffer out;

			if (fn > 0 && ist_tokenize(&r->tz, false, r->fbuf, fn,
			    &used, &why) == IST_OK)
				break;
			if (ret == 0 || in.pos == in.size)
				break;
			if (r->fcap - fn < (64u << 10)) {
				size_t cap = r->fcap ? r->fcap * 2 : 1u << 20;
				uint8_t *p;
				if (r->fcap >= IST_MAX_FRAME ||
				    (p = realloc(r->fbuf, cap)) == NULL)
					return read_frame(r, err);
				r->fbuf = p;
				r->fcap = cap;
			}
			out = (ZSTD_outBuffer){ r->fbuf, fn + (64u << 10), fn };
			ret = ZSTD_decompressStream(r->dctx, &out, &in);
			if (ZSTD_isError(ret))
				return read_frame(r, err);
			fn = out.pos;
		}
		r->in_pos += zn;
		if (fn == 0)            /* a skippable frame: the next */
			continue;
		decl = ZSTD_getFrameContentSize(r->in + r->in_pos - zn, zn);
		r->fn = fn;
		r->fpos = 0;
		enter_frame(r, decl == ZSTD_CONTENTSIZE_UNKNOWN || decl ==
		    ZSTD_CONTENTSIZE_ERROR ? fn : (size_t)decl, false, off,
		    off + zn);
		return IST_OK;
	}
}

/* The end of a frame the input stopped inside: what it lost is said, what
 * its complete blocks held was read. */
static enum ist_status
cut_frame(struct ist_reader *r, struct ist_error *err)
{
	leave_frame(r, r->fpos);
	r->st.truncated_bytes = r->cut_in;
	r->st.truncated_kept = r->frame_records;
	ist_seterr(err, IST_TRUNCATED, "trace '%s' is truncated: its last "
	    "frame (%llu bytes) is cut; its first %llu records are kept, "
	    "the rest is lost", r->name, (unsigned long long)r->cut_in,
	    (unsigned long long)r->frame_records);
	if (err)
		err->offset = r->cut_off;
	r->cut = false;
	r->fn = r->fpos = 0;
	r->sticky = IST_END;
	return IST_TRUNCATED;
}

/* ---- reading ahead ---- */

/* The producer's next chunk to fill, once the reader has given it back;
 * NULL when told to stop. */
static struct ah_chunk *
ah_chunk_get(struct ahead *a)
{
	uint64_t made = atomic_load_explicit(&a->made, memory_order_relaxed);
	struct ah_chunk *c;

	if (made - atomic_load(&a->taken) >= AH_CHUNKS) {
		pthread_mutex_lock(&a->mu);
		atomic_store(&a->pwait, true);
		while (!a->stop && made - atomic_load(&a->taken) > AH_CHUNKS -
		    AH_REFILL)
			pthread_cond_wait(&a->cv, &a->mu);
		atomic_store(&a->pwait, false);
		pthread_mutex_unlock(&a->mu);
	}
	if (atomic_load_explicit(&a->stop, memory_order_relaxed))
		return NULL;
	c = &a->ch[made % AH_CHUNKS];
	c->nrec = c->ntok = 0;
	c->tz.ntok = 0;
	c->tst = IST_OK;
	c->why = NULL;
	c->enter = c->leave = c->raw = false;
	c->est = IST_OK;
	return c;
}

/* Wakes the other thread, which raised its flag and is waiting, or is
 * about to (holding the lock until it waits): woken after the lock is let
 * go, so that it does not wake only to wait for the lock */
static void
ah_wake(struct ahead *a)
{
	pthread_mutex_lock(&a->mu);
	pthread_mutex_unlock(&a->mu);
	pthread_cond_broadcast(&a->cv);
}

/* c handed over; last: its frame's last, or the producer's last word */
static void
ah_chunk_put(struct ahead *a, bool last)
{
	uint64_t made = atomic_load_explicit(&a->made, memory_order_relaxed) +
	    1;

	atomic_store(&a->made, made);
	if (atomic_load(&a->rwait) && (last || made - atomic_load(&a->taken) >=
	    AH_READY))
		ah_wake(a);
}

/* The producer's facts, as the reader takes them with the chunk. */
static void
ah_facts(struct ah_chunk *c, const struct ist_reader *p)
{
	c->st = p->st;
	c->fn = p->fn;
	c->cut = p->cut;
	c->cut_in = p->cut_in;
	c->cut_off = p->cut_off;
	c->fr_in0 = p->fr_in0;
	c->fr_in1 = p->fr_in1;
}

/*
 * The next frame is decompressed as the one before is split, AH_SLICE
 * bytes at a time into a buffer the reader has left, keeping pace with
 * the split (as many bytes of it as of the frame split, pos), and more
 * while every chunk is full (the reader has work for a while).
 * Decompressed whole only once the last chunk of the frame before was
 * made, as it was, a 4 MiB frame (is-merge writes them) took 3 to 4 ms,
 * and the reader, its 32 chunks read in 1.6, waited for the rest.  What
 * it says (an error, the end) is said in its turn, after that frame.
 */
#define AH_SLICE (256u << 10)

/* A frame buffer the reader is not in, or -1 when it is in both (under
 * a->mu). */
static int
ah_free_frame(const struct ahead *a)
{
	for (int i = 0; i < AH_FRAMES; i++)
		if (!a->fr[i].busy)
			return i;
	return -1;
}

static void
ah_early(struct ahead *a, size_t pos)
{
	struct ist_reader *p = a->p;
	bool more;

	while (!a->nf_done && !atomic_load_explicit(&a->stop,
	    memory_order_relaxed) && ((a->nf >= 0 ? p->fn : 0) < pos ||
	    atomic_load_explicit(&a->made, memory_order_relaxed) -
	    atomic_load(&a->taken) >= AH_CHUNKS)) {
		if (a->nf < 0) {
			if (p->sticky != IST_OK)
				return;         /* said after this frame */
			pthread_mutex_lock(&a->mu);
			if ((a->nf = ah_free_frame(a)) >= 0)
				a->fr[a->nf].busy = true;
			pthread_mutex_unlock(&a->mu);
			if (a->nf < 0)
				return;         /* the reader is in both */
			p->fbuf = a->fr[a->nf].buf;
			p->fcap = a->fr[a->nf].cap;
		}
		a->nf_err = (struct ist_error){ 0 };
		a->nf_st = frame_step(p, AH_SLICE, a->in, &more,
		    &a->nf_err);
		a->fr[a->nf].buf = p->fbuf;
		a->fr[a->nf].cap = p->fcap;
		a->nf_done = a->nf_st != IST_OK || !more;
		if (!a->nf_done && p->in_pos >= p->in_end)
			return;         /* the input is not there yet */
	}
}

/* every frame's rest given after its first chunk, for tests
 * (ist_reader_ahead_give_rests) */
static _Atomic bool give_all;

/*
 * A reader waiting inside the frame (it decodes faster than this thread
 * decompresses and splits) is given the frame's rest, from pos, to split
 * itself while this thread goes on to the next frame: both cores split.
 * Only a rest of as many records, at the frame's bytes a record so far
 * (nrec in pos), as the chunks hold, which this thread fills meanwhile:
 * given any rest, it waited, its chunks full, and is-analyze (whose
 * reader waits only now and then) ran 11% slower.  json.tool's 44.7
 * M-event recording, in interleaved rounds: is-info 8%, is-merge 9%,
 * is-analyze of the merged trace 7% faster.  False when told to stop.
 */
#define AH_REST_RECS ((uint64_t)AH_CHUNKS * AH_RECS)

static bool
ah_give_rest(struct ahead *a, int f, size_t pos, size_t fn, size_t nrec,
    bool *given)
{
	struct ah_chunk *c;

	*given = false;
	if (!atomic_load_explicit(&give_all, memory_order_relaxed) &&
	    (!atomic_load_explicit(&a->steal, memory_order_relaxed) ||
	    (uint64_t)(fn - pos) * nrec > (uint64_t)pos * AH_REST_RECS))
		return true;
	if ((c = ah_chunk_get(a)) == NULL)
		return false;
	c->frame = f;
	c->raw = true;
	c->leave = true;
	atomic_store_explicit(&a->steal, false, memory_order_relaxed);
	atomic_fetch_add_explicit(&a->given, 1, memory_order_relaxed);
	ah_chunk_put(a, true);
	*given = true;
	return true;
}

/* Splits frame f's records into chunks; false when told to stop. */
static bool
ah_split(struct ahead *a, struct ah_chunk *c, int f)
{
	const struct ist_reader *p = a->p;
	/* the frame's own: p's go on to the next frame (ah_early) */
	const uint8_t *buf = p->fbuf;
	size_t fn = p->fn, pos = 0, ntok = 0, used, nrec = 0;
	bool given;

	/* the reader takes the frame's facts from its first chunk */
	c->enter = true;
	c->frame = f;
	ah_facts(c, p);
	for (;;) {
		while (c->nrec < AH_RECS && pos < fn) {
			const char *why = NULL;
			enum ist_status st = ist_tokenize_at(&c->tz, ntok,
			    buf + pos, fn - pos, &used, &why);
			if (st != IST_OK) {
				c->tst = st;
				c->why = why;
				break;
			}
			c->tok[c->nrec] = (uint32_t)ntok;
			c->used[c->nrec++] = (uint32_t)used;
			ntok += c->tz.ntok;
			pos += used;
		}
		c->ntok = ntok;
		c->leave = pos >= fn || c->tst != IST_OK;
		nrec += c->nrec;
		ah_chunk_put(a, c->leave);
		if (c->leave)
			return true;
		if (!ah_give_rest(a, f, pos, fn, nrec, &given))
			return false;
		if (given)
			return true;
		ah_early(a, pos);
		if ((c = ah_chunk_get(a)) == NULL)
			return false;
		ntok = 0;
	}
}

static void *
ah_main(void *arg)
{
	struct ahead *a = arg;
	struct ist_reader *p = a->p;

	for (;;) {
		struct ist_error e = { 0 };
		enum ist_status st = IST_OK;
		struct ah_chunk *c;
		bool stop;
		int f = -1;

		pthread_mutex_lock(&a->mu);
		while (!a->stop && (f = a->nf) < 0 &&
		    (f = ah_free_frame(a)) < 0)
			pthread_cond_wait(&a->cv, &a->mu);
		if (!(stop = a->stop))
			a->fr[f].busy = true;
		pthread_mutex_unlock(&a->mu);
		if (stop || (c = ah_chunk_get(a)) == NULL)
			break;
		if (a->nf >= 0) {
			/* begun early: the rest of it, or what it said */
			if (a->nf_done) {
				st = a->nf_st;
				e = a->nf_err;
			} else {
				st = read_frame(p, &e);
			}
			a->nf = -1;
			a->nf_done = false;
		} else {
			p->fbuf = a->fr[f].buf;
			p->fcap = a->fr[f].cap;
			if (p->st.frames == 0 && p->st.in_bytes == 0)
				st = sniff(p, &e);
			if (st == IST_OK && p->sticky == IST_OK)
				st = read_frame(p, &e);
			else if (st == IST_OK)
				st = p->sticky;
		}
		a->fr[f].buf = p->fbuf;
		a->fr[f].cap = p->fcap;
		if (p->keep_z) {
			/* the copy goes with the frame; its buffer is reused */
			struct ist_buf z = a->fr[f].z;
			a->fr[f].z = p->zf;
			a->fr[f].z_whole = st == IST_OK && p->zf_whole;
			p->zf = z;
		}
		if (st != IST_OK) {
			/* what reading said, once: it sticks there */
			c->est = st;
			c->eerr = e;
			c->frame = -1;
			ah_facts(c, p);
			pthread_mutex_lock(&a->mu);
			a->fr[f].busy = false;
			pthread_mutex_unlock(&a->mu);
			ah_chunk_put(a, true);
			break;
		}
		if (!ah_split(a, c, f))
			break;
	}
	/* p->fbuf is one of the frames, which ah_stop frees */
	return NULL;
}

/* How the producer may read its input early (frame_step's nowait). */
static int
input_kind(const struct ist_reader *r)
{
	int fd = r->in_fd;
	struct stat sb;

	if (r->src == ist_pread_source)
		return IN_WAITS;
	if (fd < 0 && r->src == ist_fd_source)
		fd = *(const int *)r->ctx;
	if (fd < 0)
		return IN_BUFFERED;
	return fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? IN_WAITS : fd;
}

void
ist_reader_input_fd(struct ist_reader *r, int fd)
{
	r->in_fd = fd;
}

bool
ist_reader_ahead(struct ist_reader *r)
{
	struct ahead *a;
	sigset_t all, old;
	int e;

	if (r->ah || r->st.in_bytes || r->st.frames || r->sticky != IST_OK)
		return r->ah != NULL;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return false;
	if (ist_reader_new(&a->p, r->src, r->ctx, r->name, NULL) != IST_OK) {
		free(a);
		return false;
	}
	a->frame = -1;
	a->nf = -1;
	a->in = input_kind(r);
	a->pid = getpid();
	/* an on_frame set already: each frame's compressed bytes are kept
	 * with it, as read_frame keeps them (ist_reader_frame_z) */
	a->p->keep_z = r->keep_z;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	/* signals stay the program's thread's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&a->th, NULL, ah_main, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		pthread_cond_destroy(&a->cv);
		pthread_mutex_destroy(&a->mu);
		ist_reader_free(a->p);
		free(a);
		return false;
	}
	free(r->fbuf);
	r->fbuf = NULL;
	r->fcap = 0;
	r->ah = a;
	return true;
}

bool
ist_reader_ahead_fd(struct ist_reader *r, int fd)
{
	struct stat sb;

	return fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    ist_reader_ahead(r);
}

bool
ist_file_promises_analysis(int fd)
{
	off_t at = lseek(fd, 0, SEEK_CUR);
	struct ist_pread s = { fd, (uint64_t)at };
	const struct ist_event *ev;
	struct ist_reader *r;
	struct stat sb;
	bool yes = false;

	if (at < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
	    ist_reader_new(&r, ist_pread_source, &s, "", NULL) != IST_OK)
		return false;
	ist_reader_skim(r, true);       /* the header alone decompressed */
	if (ist_reader_next(r, &ev, NULL) == IST_OK && ev->type == IST_HEADER)
		yes = IST_HAS(ev, IST_F_ANALYSIS_VERSION);
	ist_reader_free(r);
	return yes;
}

static void
ah_stop(struct ist_reader *r)
{
	struct ahead *a = r->ah;

	if (a == NULL)
		return;
	/* In a child forked since, no producer runs, its lock may be held
	 * for ever, and its memory is as the fork found the producer, in the
	 * middle of a change maybe (a buffer it had just grown, a frame's or
	 * a chunk's tokens', its new address not yet stored where the frame
	 * or the chunk keeps it: freeing the old one again aborted such a
	 * child): it is left as it is. */
	if (getpid() != a->pid) {
		r->ah = NULL;
		r->fbuf = NULL;
		r->fn = r->fpos = 0;
		return;
	}
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->th, NULL);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	a->p->fbuf = NULL;   /* one of the frames, or none */
	ist_reader_free(a->p);
	for (int i = 0; i < AH_FRAMES; i++) {
		free(a->fr[i].buf);
		ist_buf_release(&a->fr[i].z);
	}
	for (int i = 0; i < AH_CHUNKS; i++)
		free(a->ch[i].tz.toks);
	free(a);
	r->ah = NULL;
	r->fbuf = NULL;      /* one of the frames */
	r->fn = r->fpos = 0;
}

void
ist_reader_ahead_give_rests(bool all)
{
	atomic_store(&give_all, all);
}

uint64_t
ist_reader_ahead_rests(const struct ist_reader *r)
{
	return r->ah ? atomic_load(&r->ah->given) : 0;
}

static const char ist_ahead_forked[] = "it was opened before a fork, in the "
    "parent process, whose thread read it ahead";

/* The chunk the reader has done with goes back; the next, when it comes.
 * NULL in a child forked since: nothing comes. */
static struct ah_chunk *
ah_next_chunk(struct ahead *a, bool in_frame)
{
	uint64_t taken = atomic_load_explicit(&a->taken, memory_order_relaxed);

	if (getpid() != a->pid)
		return NULL;
	if (a->cur) {
		a->cur = NULL;
		atomic_store(&a->taken, ++taken);
		if (atomic_load(&a->pwait) && atomic_load(&a->made) - taken <=
		    AH_CHUNKS - AH_REFILL)
			ah_wake(a);
	}
	if (atomic_load(&a->made) == taken) {
		/* inside a frame, it would split the rest itself */
		if (in_frame)
			atomic_store_explicit(&a->steal, true,
			    memory_order_relaxed);
		pthread_mutex_lock(&a->mu);
		atomic_store(&a->rwait, true);
		while (atomic_load(&a->made) == taken)
			pthread_cond_wait(&a->cv, &a->mu);
		atomic_store(&a->rwait, false);
		pthread_mutex_unlock(&a->mu);
		atomic_store_explicit(&a->steal, false, memory_order_relaxed);
	}
	a->cur = &a->ch[taken % AH_CHUNKS];
	a->ci = 0;
	return a->cur;
}

/*
 * read_frame, reading ahead: the frame left (the rest of its chunks passed
 * over) goes back to the producer, and the next one is entered, or what
 * reading said instead is said here.
 */
static enum ist_status
ah_frame(struct ist_reader *r, struct ist_error *err)
{
	struct ahead *a = r->ah;
	struct ah_chunk *c;

	while (a->frame >= 0 && !a->cur->leave)
		if (ah_next_chunk(a, false) == NULL)
			goto forked;
	if (a->frame >= 0) {
		pthread_mutex_lock(&a->mu);
		a->fr[a->frame].busy = false;
		pthread_cond_broadcast(&a->cv);
		pthread_mutex_unlock(&a->mu);
		a->frame = -1;
	}
	r->fbuf = NULL;
	r->fn = r->fpos = 0;
	r->zf_whole = false;
	if ((c = ah_next_chunk(a, false)) == NULL)
		goto forked;
	r->st.in_bytes = c->st.in_bytes;
	r->st.frames = c->st.frames;
	r->st.raw_bytes = c->st.raw_bytes;
	if (!c->enter) {
		if (c->est == IST_TRUNCATED)
			r->st.truncated_bytes = c->st.truncated_bytes;
		if (err)
			*err = c->eerr;
		if (c->est == IST_END || c->est == IST_TRUNCATED) {
			r->sticky = IST_END;
		} else {
			r->sticky = c->est;
			r->sticky_err = c->eerr;
		}
		/* the producer stopped there: this chunk is the last */
		return c->est;
	}
	a->frame = c->frame;
	r->fbuf = a->fr[c->frame].buf;
	r->zf_whole = r->keep_z && a->fr[c->frame].z_whole;
	r->fn = c->fn;
	r->cut = c->cut;
	r->cut_in = c->cut_in;
	r->cut_off = c->cut_off;
	r->fr_in0 = c->fr_in0;
	r->fr_in1 = c->fr_in1;
	r->gen++;
	r->frame_start = true;
	r->frame_left = false;
	r->frame_records = 0;
	return IST_OK;
forked:
	r->fbuf = NULL;
	r->fn = r->fpos = 0;
	ist_seterr(err, IST_EIO, "cannot read '%s': %s", r->name,
	    ist_ahead_forked);
	return stick(r, err, IST_EIO);
}

/* The record at r->fpos split here, into r->tz. */
static enum ist_status
split_here(struct ist_reader *r, struct tok **tk, size_t *nt, size_t *used,
    const char **why)
{
	enum ist_status st = ist_tokenize(&r->tz, true, r->fbuf + r->fpos,
	    r->fn - r->fpos, used, why);

	*tk = r->tz.toks;
	*nt = r->tz.ntok;
	return st;
}

/* ist_tokenize, reading ahead: the record at r->fpos, split already (or,
 * in a frame's rest given to the reader, split here). */
/* how many records ahead ah_record fetches tokens (8: the same) */
#define PF_AHEAD 4
static enum ist_status
ah_record(struct ist_reader *r, struct tok **tk, size_t *nt, size_t *used,
    const char **why)
{
	struct ahead *a = r->ah;
	struct ah_chunk *c = a->cur;

	if (a->ci == c->nrec && c->tst == IST_OK && !c->leave &&
	    (c = ah_next_chunk(a, true)) == NULL) {
		*why = ist_ahead_forked;
		return IST_EIO;
	}
	if (c->raw)
		return split_here(r, tk, nt, used, why);
	if (a->ci == c->nrec) {
		*why = c->why ? c->why : ist_past_end;
		return c->tst != IST_OK ? c->tst : IST_ECORRUPT;
	}
	*tk = c->tz.toks + c->tok[a->ci];
	*nt = (a->ci + 1 < c->nrec ? c->tok[a->ci + 1] : c->ntok) -
	    c->tok[a->ci];
	/* the tokens of the record PF_AHEAD on, which the other core wrote,
	 * asked for now: in this core's cache by the time they are decoded
	 * (three lines, a record's six tokens or so): is-analyze, whose
	 * thread decodes and analyses, took 6.48 s of the 44.7 M-event
	 * trace against 6.92 (0.93-0.94x in each of five rounds), is-merge
	 * and is-info, which wait on the other core, about as long */
	if (a->ci + PF_AHEAD < c->nrec) {
		/* an address, never read: one past the tokens fetches a
		 * line that may hold nothing of them, harmlessly */
		uintptr_t u = (uintptr_t)(c->tz.toks + c->tok[a->ci +
		    PF_AHEAD]);
		__builtin_prefetch((const void *)u);
		__builtin_prefetch((const void *)(u + 64));
		__builtin_prefetch((const void *)(u + 128));
	}
	*used = c->used[a->ci++];
	return IST_OK;
}

/* ---- record decoding ---- */

static bool
tok_int(const struct tok *t, int64_t *v)
{
	if (t->t == TK_UINT && t->v <= INT64_MAX) {
		*v = (int64_t)t->v;
		return true;
	}
	if (t->t == TK_NEG && t->v <= INT64_MAX) {
		*v = -1 - (int64_t)t->v;
		return true;
	}
	return false;
}

static bool
tok_is(const struct tok *t, const char *s)
{
	size_t n = strlen(s);
	return t->t == TK_TEXT && t->v == n && memcmp(t->p, s, n) == 0;
}

static struct ist_blob
tok_blob(struct ist_reader *r, const struct tok *t)
{
	return (struct ist_blob){ r->fbuf + r->fpos + t->off, t->end - t->off };
}

static enum ist_status
decode_header(struct ist_reader *r, struct tok *tk, size_t nt,
    struct ist_error *err)
{
	struct ist_event *ev = &r->ev;
	bool have_format = false;
	char why[160];

	ist_event_init(ev, IST_HEADER);
	if (nt < 2 || tk[1].t != TK_MAP) {
		ist_seterr(err, IST_ENOTTRACE, "'%s' is not an InferScope "
		    "trace (the header is not a map)", r->name);
		return stick(r, err, IST_ENOTTRACE);
	}
	for (uint32_t i = 2; i < nt; ) {
		struct tok *k = &tk[i], *v;
		int64_t iv;
		uint32_t after;

		if (k->next >= nt)
			break;
		v = &tk[k->next];
		after = v->next;
		if (tok_is(k, "format")) {
			if (!tok_is(v, IST_FORMAT_NAME)) {
				ist_seterr(err, IST_ENOTTRACE, "'%s' is not an "
				    "InferScope trace (format is not '%s')",
				    r->name, IST_FORMAT_NAME);
				return stick(r, err, IST_ENOTTRACE);
			}
			have_format = true;
			ev->format = (struct ist_str){ (const char *)v->p,
			    v->v };
			IST_SET(ev, IST_F_FORMAT);
		} else if (tok_is(k, "version")) {
			int64_t maj, min;
			if (v->t != TK_ARRAY || v->v < 2 ||
			    !tok_int(&tk[k->next + 1], &maj) ||
			    !tok_int(&tk[tk[k->next + 1].next], &min) ||
			    maj < 0 || min < 0) {
				return bad_record(r, err, IST_ECORRUPT,
				    "header version is not [major, minor]");
			}
			if (maj != IST_VERSION_MAJOR) {
				ist_seterr(err, IST_EVERSION, "'%s' has trace "
				    "format version %lld.%lld; this reader "
				    "reads %d.x", r->name, (long long)maj,
				    (long long)min, IST_VERSION_MAJOR);
				return stick(r, err, IST_EVERSION);
			}
			ev->version_major = maj;
			ev->version_minor = min;
			IST_SET(ev, IST_F_VERSION);
		} else if (tok_is(k, "producer") && v->t == TK_TEXT) {
			ev->producer = (struct ist_str){ (const char *)v->p,
			    v->v };
			IST_SET(ev, IST_F_PRODUCER);
		} else if (tok_is(k, "host") && v->t == TK_TEXT) {
			ev->host = (struct ist_str){ (const char *)v->p, v->v };
			IST_SET(ev, IST_F_HOST);
		} else if (tok_is(k, "pids")) {
			ev->pids = tok_blob(r, v);
			IST_SET(ev, IST_F_PIDS);
		} else if (tok_is(k, "clocks")) {
			ev->clocks = tok_blob(r, v);
			IST_SET(ev, IST_F_CLOCKS);
		} else if (tok_is(k, "realtime_ns") && tok_int(v, &iv)) {
			ev->realtime_ns = iv;
			IST_SET(ev, IST_F_REALTIME_NS);
		} else if (tok_is(k, "sources") && v->t == TK_ARRAY) {
			ev->sources = tok_blob(r, v);
			IST_SET(ev, IST_F_SOURCES);
		} else if (tok_is(k, "monotonic_ns") && tok_int(v, &iv)) {
			ev->monotonic_ns = iv;
			IST_SET(ev, IST_F_MONOTONIC_NS);
		} else if (tok_is(k, "analysis_version") && tok_int(v, &iv)) {
			ev->analysis_version = iv;
			IST_SET(ev, IST_F_ANALYSIS_VERSION);
		}
		i = after;
	}
	if (!have_format || !IST_HAS(ev, IST_F_VERSION)) {
		snprintf(why, sizeof(why), "header lacks '%s'",
		    have_format ? "version" : "format");
		return bad_record(r, err, IST_ECORRUPT, why);
	}
	/* a new segment: forget the previous one's strings and tracks */
	r->nstr = 0;
	r->sdata.n = 0;
	r->ntrack = 0;
	r->in_segment = true;
	r->st.segments++;
	return IST_OK;
}

static enum ist_status
def_string(struct ist_reader *r, struct tok *tk, size_t nt,
    struct ist_error *err)
{
	int64_t id;
	struct tok *t;

	if (tk[0].v < 3 || !tok_int(&tk[tk[1].next], &id) ||
	    tk[tk[1].next].next >= nt)
		return bad_record(r, err, IST_ECORRUPT, "bad string record");
	t = &tk[tk[tk[1].next].next];
	if (t->t != TK_TEXT)
		return bad_record(r, err, IST_ECORRUPT,
		    "string record without text");
	if ((uint64_t)id != r->nstr + 1)
		return bad_record(r, err, IST_ECORRUPT,
		    "string id out of sequence");
	if (t->v > IST_MAX_STRING)
		return bad_record(r, err, IST_ELIMIT,
		    "string longer than 1 MiB");
	if (r->nstr >= IST_MAX_STRINGS)
		return bad_record(r, err, IST_ELIMIT, "too many strings");
	if (r->nstr == r->scap) {
		size_t cap = r->scap ? r->scap * 2 : 1024;
		size_t *no = realloc(r->soff, cap * sizeof(*no));
		uint32_t *nl;
		if (no == NULL)
			return bad_record(r, err, IST_ENOMEM, "out of memory");
		r->soff = no;
		if ((nl = realloc(r->slen, cap * sizeof(*nl))) == NULL)
			return bad_record(r, err, IST_ENOMEM, "out of memory");
		r->slen = nl;
		r->scap = cap;
	}
	r->soff[r->nstr] = r->sdata.n;
	r->slen[r->nstr] = (uint32_t)t->v | (ist_json_plain((const char *)t->p,
	    t->v) ? SPLAIN : 0);
	if (ist_buf_append(&r->sdata, t->p, t->v))
		return bad_record(r, err, IST_ENOMEM, "out of memory");
	r->nstr++;
	return IST_OK;
}

static enum ist_status
def_track(struct ist_reader *r, struct tok *tk, size_t nt,
    struct ist_error *err)
{
	struct rtrack tr = { { 0 }, 0, 0, 0 };
	uint32_t i = tk[1].next;
	int64_t id;

	if (tk[0].v < 6 || !tok_int(&tk[i], &id))
		return bad_record(r, err, IST_ECORRUPT, "bad track record");
	if ((uint64_t)id != r->ntrack + 1)
		return bad_record(r, err, IST_ECORRUPT,
		    "track id out of sequence");
	i = tk[i].next;
	for (int k = 0; k < 4 && i < nt; k++, i = tk[i].next) {
		if (tk[i].t == TK_NULL)
			continue;
		if (!tok_int(&tk[i], &tr.key[k]))
			return bad_record(r, err, IST_ECORRUPT,
			    "track key is not an integer");
		tr.mask |= 1u << k;
	}
	if (r->ntrack >= IST_MAX_TRACKS)
		return bad_record(r, err, IST_ELIMIT, "too many tracks");
	if (r->ntrack == r->tcap) {
		size_t cap = r->tcap ? r->tcap * 2 : 64;
		struct rtrack *nt2 = realloc(r->tracks, cap * sizeof(*nt2));
		if (nt2 == NULL)
			return bad_record(r, err, IST_ENOMEM, "out of memory");
		r->tracks = nt2;
		r->tcap = cap;
	}
	r->tracks[r->ntrack++] = tr;
	return IST_OK;
}

/*
 * The track, timestamp and duration that open a record of a type with a
 * track; *i and *left advance past them.
 */
static inline enum ist_status
decode_track(struct ist_reader *r, const struct ist_typespec *ts, int type,
    const struct tok *tk, uint32_t *i, uint64_t *left, struct ist_error *err)
{
	struct ist_event *ev = &r->ev;
	struct rtrack *tr;
	char why[160];
	int64_t v, dur;

	if (*left == 0 || !tok_int(&tk[*i], &v) || v < 1 ||
	    (uint64_t)v > r->ntrack)
		return bad_record(r, err, IST_ECORRUPT, "undefined track");
	tr = &r->tracks[v - 1];
	r->ev_track = (uint32_t)v;
	ev->has |= tr->mask;
	ev->pid = tr->key[0];
	ev->tid = tr->key[1];
	ev->device = tr->key[2];
	ev->stream = tr->key[3];
	*i = tk[*i].next;
	--*left;
	if (ts->time != TS_NONE) {
		int64_t base = tr->gen == r->gen ? tr->last : 0;

		if (*left == 0 || !tok_int(&tk[*i], &v))
			return bad_record(r, err, IST_ECORRUPT,
			    "missing timestamp");
		v = (int64_t)((uint64_t)base + (uint64_t)v);
		tr->gen = r->gen;
		tr->last = v;
		*i = tk[*i].next;
		--*left;
		if (ts->time == TS_RANGE) {
			if (*left == 0 || !tok_int(&tk[*i], &dur))
				return bad_record(r, err, IST_ECORRUPT,
				    "missing duration");
			*i = tk[*i].next;
			--*left;
			ev->start_ns = v;
			ev->end_ns = (int64_t)((uint64_t)v + (uint64_t)dur);
			IST_SET(ev, IST_F_START);
			IST_SET(ev, IST_F_END);
		} else {
			ev->ts_ns = v;
			IST_SET(ev, IST_F_TS);
		}
	}
	/* a track that lacks a field this type requires: name it */
	if ((tr->mask & ist_plans[type].treq) != ist_plans[type].treq)
		for (int f = 0; f < ts->nfields; f++)
			if (ts->fields[f].role == R_TRACK &&
			    (ist_plans[type].treq & ~tr->mask &
			    1u << ts->fields[f].id)) {
				snprintf(why, sizeof(why), "%s record on a "
				    "track without '%s'", ts->name,
				    ts->fields[f].json);
				return bad_record(r, err, IST_ECORRUPT, why);
			}
	return IST_OK;
}

/* One payload field's token tk[i] into the event: false when it is bad. */
static inline bool
decode_field(struct ist_reader *r, const struct ist_fieldspec *fs,
    const struct tok *tk, uint32_t i)
{
	const struct tok *t = &tk[i];
	struct ist_event *ev = &r->ev;
	uint32_t len;
	int64_t v;

	switch (fs->ft) {
	case FT_STR:
		if (!tok_int(t, &v) || v < 1 || (uint64_t)v > r->nstr)
			return false;
		len = r->slen[v - 1];
		*ist_field_str(ev, fs->id) = (struct ist_str){
		    r->sdata.p + r->soff[v - 1], len & ~SPLAIN };
		ev->plain |= (uint64_t)((len & SPLAIN) != 0) << fs->id;
		r->ev_sid[fs->id] = (uint32_t)v;
		return true;
	case FT_INT:
		return tok_int(t, ist_field_int(ev, fs->id));
	case FT_BOOL:
		if (t->t != TK_BOOL)
			return false;
		*ist_field_bool(ev, fs->id) = t->b;
		return true;
	case FT_DOUBLE:
		if (t->t == TK_FLOAT) {
			ev->pcie_gbps = t->d;
			return true;
		}
		if (!tok_int(t, &v))
			return false;
		ev->pcie_gbps = (double)v;
		return true;
	case FT_NUMBER:
		if (t->t == TK_FLOAT) {
			ev->value = t->d;
			return true;
		}
		if (!tok_int(t, &v))
			return false;
		ev->value_is_int = true;
		ev->ivalue = v;
		ev->value = (double)v;
		return true;
	case FT_IVEC3: {
		int64_t *dst = fs->id == IST_F_GRID ? ev->grid : ev->block;
		uint32_t j = i + 1;

		if (t->t != TK_ARRAY || t->v != 3)
			return false;
		for (int k = 0; k < 3; k++, j = tk[j].next)
			if (!tok_int(&tk[j], &dst[k]))
				return false;
		return true;
	}
	case FT_VALUE:
	case FT_OBJECT:
		if (fs->ft == FT_OBJECT && t->t != TK_MAP)
			return false;
		*ist_field_blob(ev, fs->id) = tok_blob(r, t);
		return true;
	}
	return true;
}

static enum ist_status
decode_event(struct ist_reader *r, int type, struct tok *tk, size_t nt,
    struct ist_error *err)
{
	const struct ist_typespec *ts = &ist_types[type];
	const struct ist_plan *pl = &ist_plans[type];
	struct ist_event *ev = &r->ev;
	uint32_t i = tk[1].next;     /* element after the kind */
	uint64_t left = tk[0].v - 1; /* elements after the kind */
	char why[160];
	enum ist_status st;

	/* members whose `has` bit is clear are unspecified (ist.h): resetting
	 * the whole event costs more than decoding it */
	ev->type = (enum ist_type)type;
	ev->has = 0;
	ev->plain = 0;
	ev->value_is_int = false;
	if (ts->has_track &&
	    (st = decode_track(r, ts, type, tk, &i, &left, err)) != IST_OK)
		return st;
	for (int f = 0; f < pl->npay; f++) {
		const struct ist_fieldspec *fs = pl->pay[f];
		const char *no;

		if (left == 0 && f >= pl->nreq)
			break;          /* the rest absent, none required */
		if (left == 0 || tk[i].t == TK_NULL) {
			if (fs->required) {
				snprintf(why, sizeof(why), "%s record lacks "
				    "'%s'", ts->name, fs->json);
				return bad_record(r, err, IST_ECORRUPT, why);
			}
			if (left) {
				i = tk[i].next;
				left--;
			}
			continue;
		}
		if (!decode_field(r, fs, tk, i)) {
			if (fs->ft == FT_STR)
				snprintf(why, sizeof(why), "'%s' names an "
				    "undefined string", fs->json);
			else
				snprintf(why, sizeof(why), "%s record has a "
				    "bad '%s'", ts->name, fs->json);
			return bad_record(r, err, IST_ECORRUPT, why);
		}
		if (pl->blobs && (fs->ft == FT_VALUE || fs->ft == FT_OBJECT) &&
		    (no = ist_tok_json_shaped(tk, i)) != NULL) {
			snprintf(why, sizeof(why), "%s record's '%s' holds "
			    "%s, which JSON cannot", ts->name, fs->json, no);
			return bad_record(r, err, IST_ECORRUPT, why);
		}
		IST_SET(ev, fs->id);
		i = tk[i].next;
		left--;
	}
	(void)nt;
	return IST_OK;
}

void
ist_reader_on_frame(struct ist_reader *r, ist_frame_fn fn, void *ctx)
{
	r->on_frame = fn;
	r->on_frame_ctx = ctx;
	r->keep_z = fn != NULL;
}

bool
ist_reader_frame_z(const struct ist_reader *r, const void **p, size_t *n)
{
	/* reading ahead, the copy came with the frame's buffer */
	const struct ist_buf *z = r->ah && r->ah->frame >= 0 ?
	    &r->ah->fr[r->ah->frame].z : &r->zf;

	/* whole, and every record of it read: on_frame is handed r->fn */
	if (!r->zf_whole || r->fpos != r->fn)
		return false;
	*p = z->p;
	*n = z->n;
	return true;
}

void
ist_reader_span(const struct ist_reader *r, size_t *off, size_t *len)
{
	*off = r->rec_pos;
	*len = r->fpos - r->rec_pos;
}

uint32_t
ist_reader_track_id(const struct ist_reader *r)
{
	return r->ev_track;
}

uint32_t
ist_reader_string_id(const struct ist_reader *r, int field)
{
	return r->ev_sid[field];
}

const uint32_t *
ist_reader_string_ids(const struct ist_reader *r)
{
	return r->ev_sid;
}

void
ist_reader_skim(struct ist_reader *r, bool on)
{
	r->skim = on;
}

/* Skimming: the rest of the frame is passed over.  A frame the input cut
 * is still split into its records (not decoded), so that what it lost is
 * said as when it is read. */
static enum ist_status
skip_frame(struct ist_reader *r, struct ist_error *err)
{
	size_t used;
	const char *why;

	if (!r->cut) {
		r->fpos = r->fn;
		return IST_OK;
	}
	while (r->fpos < r->fn && ist_tokenize(&r->tz, false, r->fbuf +
	    r->fpos, r->fn - r->fpos, &used, &why) == IST_OK) {
		r->fpos += used;
		r->frame_records++;
		r->st.records++;
	}
	return cut_frame(r, err);
}

static enum ist_status
next_record(struct ist_reader *r, const struct ist_event **out,
    struct ist_error *err)
{
	enum ist_status st;

	*out = NULL;
	if (r->sticky != IST_OK) {
		if (err && r->sticky != IST_END)
			*err = r->sticky_err;
		return r->sticky;
	}
	for (;;) {
		struct tok *tk;
		const char *why = NULL;
		size_t used, nt;
		uint64_t kind;
		bool first;
		int type;

		if (r->fpos >= r->fn && r->cut)
			return cut_frame(r, err);
		if (r->fpos >= r->fn) {
			if (r->ah == NULL && r->st.frames == 0 &&
			    r->st.in_bytes == 0 && (st = sniff(r, err)) != IST_OK)
				return st;
			leave_frame(r, r->fn);
			st = r->ah ? ah_frame(r, err) : r->skim && !r->keep_z ?
			    skim_frame(r, err) : read_frame(r, err);
			if (st == IST_OK) {
				atomic_store_explicit(&r->prog_at, r->fr_in0,
				    memory_order_relaxed);
				atomic_store_explicit(&r->prog_events,
				    r->st.events, memory_order_relaxed);
			}
			if (st == IST_END && r->st.frames == 0) {
				ist_seterr(err, IST_ENOTTRACE, "'%s' is not an "
				    "InferScope trace (no data)", r->name);
				return stick(r, err, IST_ENOTTRACE);
			}
			if (st == IST_END)
				r->sticky = IST_END;
			if (st != IST_OK)
				return st;
		}
		first = r->frame_start;
		r->rec_pos = r->fpos;
		if (r->skim && !first) {
			if ((st = skip_frame(r, err)) != IST_OK)
				return st;
			continue;
		}
		r->st.records++;
		r->frame_start = false;
		st = r->ah ? ah_record(r, &tk, &nt, &used, &why) :
		    split_here(r, &tk, &nt, &used, &why);
		if (st == IST_EIO && why == ist_ahead_forked) {
			r->st.records--;
			ist_seterr(err, st, "cannot read '%s': %s", r->name,
			    why);
			return stick(r, err, st);
		}
		if (st != IST_OK && r->cut && why == ist_past_end) {
			r->st.records--;     /* the record the cut split */
			return cut_frame(r, err);
		}
		if (st != IST_OK) {
			if (r->st.frames == 1 && first && st == IST_ECORRUPT) {
				ist_seterr(err, IST_ENOTTRACE, "'%s' is not an "
				    "InferScope trace (not CBOR)", r->name);
				return stick(r, err, IST_ENOTTRACE);
			}
			return bad_record(r, err, st, why);
		}
		r->frame_records++;
		if (tk[0].t == TK_TAG && tk[0].v == IST_SELF_DESCRIBE_TAG) {
			if (!first)
				return bad_record(r, err, IST_ECORRUPT,
				    "header in the middle of a frame");
			st = decode_header(r, tk, nt, err);
			r->fpos += used;
			if (st != IST_OK)
				return st;
			*out = &r->ev;
			return IST_OK;
		}
		if (!r->in_segment) {
			ist_seterr(err, IST_ENOTTRACE, "'%s' is not an "
			    "InferScope trace (it does not start with a trace header)", r->name);
			return stick(r, err, IST_ENOTTRACE);
		}
		if (tk[0].t != TK_ARRAY || tk[0].v == 0 ||
		    tk[1].t != TK_UINT)
			return bad_record(r, err, IST_ECORRUPT,
			    "record is not an array with a kind");
		kind = tk[1].v;
		if (r->skim && kind != (uint64_t)ist_types[IST_ANALYSIS].kind) {
			/* uncounted: skip_frame counts a cut frame's records
			 * from this one */
			r->st.records--;
			r->frame_records--;
			if ((st = skip_frame(r, err)) != IST_OK)
				return st;
			continue;
		}
		if (kind == K_STRING)
			st = def_string(r, tk, nt, err);
		else if (kind == K_TRACK)
			st = def_track(r, tk, nt, err);
		else if ((type = ist_type_of_kind(kind)) > 0) {
			st = decode_event(r, type, tk, nt, err);
			if (st == IST_OK) {
				r->fpos += used;
				r->st.events++;
				*out = &r->ev;
				return IST_OK;
			}
		} else {
			r->st.skipped++;
		}
		r->fpos += used;
		if (st != IST_OK)
			return st;
	}
}

size_t
ist_control_len(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	if (n == 0)
		return 0;
	if (u[0] < 0x20 || u[0] == 0x7f)
		return 1;
	return u[0] == 0xc2 && n > 1 && u[1] >= 0x80 && u[1] <= 0x9f ? 2 : 0;
}

void
ist_terminal_safe_n(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = ist_control_len(s + i, n - i); k > 0; k--)
			s[i + k - 1] = '?';
}

void
ist_terminal_safe(char *s)
{
	ist_terminal_safe_n(s, strlen(s));
}

void
ist_damage_text(char *m, size_t n, const char *input, const char *error,
    long long cut)
{
	if (n == 0)
		return;
	if (error && *error)
		snprintf(m, n, "merged from a damaged input: %s", error);
	else
		snprintf(m, n, "merged from a truncated input: the last %lld "
		    "bytes of '%s' were not read whole", cut, input ? input :
		    "?");
	ist_terminal_safe(m);
}

enum ist_status
ist_reader_next(struct ist_reader *r, const struct ist_event **out,
    struct ist_error *err)
{
	enum ist_status st = next_record(r, out, err);

	/* an error: the frame is left at the record it stopped at */
	if (st != IST_OK && st != IST_END && st != IST_TRUNCATED &&
	    !r->frame_left && r->fn > 0)
		leave_frame(r, r->rec_pos);
	if (st != IST_OK && st != IST_END && err)
		err->where = st == IST_ENOMEM ? IST_AT_SELF : IST_AT_INPUT;
	return st;
}
