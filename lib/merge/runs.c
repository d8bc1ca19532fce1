/* runs.c - sorted runs spilled to temporary files (zstd frames, stored),
 * and the heap that merges them back. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cbor.h>
#include <jansson.h>
#include <zstd.h>

#include "merge_int.h"

/* ---- runs: sorted, [u32 len][i64 key][packed] records, zstd ---- */

/* A run's record: [u32 len][i64 key][len bytes packed]; spilled runs and
 * the final merge's batches hold the same. */
#define REC_HEAD 12

static inline void
rec_put(uint8_t *p, int64_t key, const uint8_t *rec, uint32_t len)
{
	memcpy(p, &len, 4);
	memcpy(p + 4, &key, 8);
	memcpy(p + REC_HEAD, rec, len);
}

/* a run reader's buffers: small, fan-in of them are read at once */
#define RUN_IN (32u << 10)
#define RUN_OUT (64u << 10)

int
mg_write_all(int fd, const void *p, size_t n)
{
	return ist_fd_sink(&fd, p, n);
}

/* Compresses the staged bytes into fd; end closes the zstd frame. */
static int
zflush(ZSTD_CCtx *z, int fd, const uint8_t *stage, size_t *sn, uint8_t *zout,
    size_t zcap, bool end)
{
	ZSTD_inBuffer in = { stage, *sn, 0 };
	size_t left;
	int e = 0;

	do {
		ZSTD_outBuffer out = { zout, zcap, 0 };
		left = ZSTD_compressStream2(z, &out, &in, end ? ZSTD_e_end :
		    ZSTD_e_continue);
		if (ZSTD_isError(left))
			return EIO;
		if (out.pos && (e = mg_write_all(fd, zout, out.pos)) != 0)
			return e;
	} while (in.pos < in.size || (end && left != 0));
	*sn = 0;
	return 0;
}

/* A run being written: records staged, then compressed into its file. */
struct rwriter {
	ZSTD_CCtx *z;
	uint8_t *stage, *zout;
	size_t sn, scap, zcap;
	int fd, e;
};

#define STAGE (256u << 10)

/* Appends a new run to m->runs and opens it for writing. */
static enum ist_status
rw_open(struct merger *m, struct rwriter *w, int level, struct ist_error *err)
{
	struct run *r, *nr;

	memset(w, 0, sizeof(*w));
	w->fd = -1;
	if ((nr = realloc(m->runs, (m->nruns + 1) * sizeof(*nr))) == NULL)
		goto nomem;
	m->runs = nr;
	r = &m->runs[m->nruns];
	memset(r, 0, sizeof(*r));
	r->level = level;
	snprintf(r->path, sizeof(r->path), "%s/is-merge-run.XXXXXX",
	    m->o->tmpdir);
	if ((r->fd = mkstemp(r->path)) < 0) {
		ist_seterr(err, IST_EIO, "cannot create a temporary file in "
		    "'%s': %s", m->o->tmpdir, strerror(errno));
		return IST_EIO;
	}
	unlink(r->path);     /* gone when closed, whatever happens */
	m->nruns++;
	w->fd = r->fd;
	w->scap = STAGE;
	w->zcap = ZSTD_CStreamOutSize();
	if ((w->z = ZSTD_createCCtx()) == NULL ||
	    (w->stage = malloc(w->scap)) == NULL ||
	    (w->zout = malloc(w->zcap)) == NULL)
		goto nomem;
	/* fast: a run is read once, soon.  Stored, not compressed: level -20
	 * found so little in packed records (the 10 M-event bench's runs 7%
	 * smaller on disk) that it was not worth its time: stored, 3.4% fewer
	 * instructions for the whole merge (callgrind, 1M events in 16 MiB),
	 * 6% less wall time on the bench */
	ist_zstd_store(w->z);
	/* a small window: every run of a merge pass is read back at once */
	ZSTD_CCtx_setParameter(w->z, ZSTD_c_windowLog, 17);
	return IST_OK;
nomem:
	ist_seterr(err, IST_ENOMEM, "out of memory");
	return IST_ENOMEM;
}

static int
rw_put(struct rwriter *w, int64_t key, const uint8_t *rec, uint32_t len)
{
	size_t need = REC_HEAD + (size_t)len;

	if (w->e)
		return w->e;
	if (w->sn + need > w->scap && w->sn > 0 && (w->e = zflush(w->z, w->fd,
	    w->stage, &w->sn, w->zout, w->zcap, false)) != 0)
		return w->e;
	if (need > w->scap) {
		uint8_t *ns = realloc(w->stage, need);
		if (ns == NULL)
			return w->e = ENOMEM;
		w->stage = ns;
		w->scap = need;
	}
	rec_put(w->stage + w->sn, key, rec, len);
	w->sn += need;
	return 0;
}

/* Ends the run's zstd frame and frees the writer (the run keeps its fd). */
static enum ist_status
rw_close(struct merger *m, struct rwriter *w, struct ist_error *err)
{
	enum ist_status st = IST_OK;

	if (w->e == 0 && w->z)
		w->e = zflush(w->z, w->fd, w->stage, &w->sn, w->zout, w->zcap,
		    true);
	if (w->e == ENOMEM) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		st = IST_ENOMEM;
	} else if (w->e) {
		ist_seterr(err, IST_EIO, "cannot write a temporary file in "
		    "'%s': %s", m->o->tmpdir, strerror(w->e));
		st = IST_EIO;
	}
	ZSTD_freeCCtx(w->z);
	free(w->stage);
	free(w->zout);
	memset(w, 0, sizeof(*w));
	return st;
}

/*
 * Reads runs[0..k) back in one order, by key and then by run (the inputs'
 * order, for equal keys), handing each record to put; stops at put's
 * first error.  The caller closes the runs.
 */
enum ist_status
mg_runs_merge(struct run *runs, size_t k, mg_put_fn put, void *ctx,
    struct ist_error *err)
{
	size_t *heap = calloc(k ? k : 1, sizeof(*heap)), n = 0;
	enum ist_status st = IST_OK;

	if (heap == NULL) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	for (size_t i = 0; i < k; i++) {
		if (mg_run_open(&runs[i]) != 0) {
			free(heap);
			ist_seterr(err, IST_EIO, "cannot read back a "
			    "temporary file");
			return IST_EIO;
		}
		if (!runs[i].done)
			heap[n++] = i;
	}
	for (size_t i = n / 2; i-- > 0; )
		mg_sift(runs, heap, n, i);
	while (n > 0 && st == IST_OK) {
		struct run *r = &runs[heap[0]];
		st = put(ctx, r, err);
		if (!mg_run_next(r)) {
			if (r->bad && st == IST_OK) {
				/* never a merge that silently lacks a run's
				 * end */
				ist_seterr(err, IST_EIO, "cannot read back a "
				    "temporary file");
				st = IST_EIO;
			}
			heap[0] = heap[--n];
		}
		mg_sift(runs, heap, n, 0);
	}
	free(heap);
	return st;
}

/*
 * The final merge on two cores: a thread merges the runs (reading and
 * decompressing them, and the heap) into batches of records while the
 * caller's thread unpacks and encodes the batch before; two batches, in
 * turn, so that each side waits only when the other is behind.
 */
#define FEED_BATCH (256u << 10)

struct feed {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct fbatch {
		uint8_t *p;
		size_t n, cap;
		bool full;
	} b[2];
	int fill;                /* the producer's batch */
	bool done, stop;
	struct run *runs;
	size_t k;
	enum ist_status pst;     /* how the producer's merge went */
	struct ist_error perr;
};

/* The producer's put: the record into its batch, handed on when full. */
static enum ist_status
feed_put(void *ctx, const struct run *r, struct ist_error *err)
{
	struct feed *f = ctx;
	struct fbatch *b = &f->b[f->fill];
	size_t need = REC_HEAD + r->rec_n;
	uint32_t len = (uint32_t)r->rec_n;

	if (b->cap - b->n < need) {
		size_t cap = b->cap ? b->cap : FEED_BATCH + 4096;
		uint8_t *np;
		while (cap - b->n < need)
			cap *= 2;
		if ((np = realloc(b->p, cap)) == NULL) {
			ist_seterr(err, IST_ENOMEM, "out of memory");
			return IST_ENOMEM;
		}
		b->p = np;
		b->cap = cap;
	}
	rec_put(b->p + b->n, r->key, r->rec, len);
	b->n += need;
	if (b->n < FEED_BATCH)
		return IST_OK;
	pthread_mutex_lock(&f->mu);
	b->full = true;
	pthread_cond_broadcast(&f->cv);
	f->fill ^= 1;
	while (f->b[f->fill].full && !f->stop)
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
	if (f->stop) {
		ist_seterr(err, IST_EIO, "the merge's output stopped");
		return IST_EIO;
	}
	return IST_OK;
}

static void *
feed_main(void *arg)
{
	struct feed *f = arg;
	enum ist_status st = mg_runs_merge(f->runs, f->k, feed_put, f,
	    &f->perr);

	pthread_mutex_lock(&f->mu);
	if (f->b[f->fill].n > 0)
		f->b[f->fill].full = true;
	f->pst = st;
	f->done = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* mg_runs_merge's records, in the same order, through a merging thread. */
enum ist_status
mg_runs_merge_fed(struct run *runs, size_t k, mg_put_fn put, void *ctx,
    struct ist_error *err)
{
	struct feed f = { .runs = runs, .k = k };
	enum ist_status st = IST_OK;
	pthread_t t;
	int slot = 0;

	pthread_mutex_init(&f.mu, NULL);
	pthread_cond_init(&f.cv, NULL);
	if (pthread_create(&t, NULL, feed_main, &f) != 0) {
		pthread_cond_destroy(&f.cv);
		pthread_mutex_destroy(&f.mu);
		return mg_runs_merge(runs, k, put, ctx, err);
	}
	for (;;) {
		struct fbatch *b = &f.b[slot];
		struct run one = { .fd = -1 };
		bool more;

		pthread_mutex_lock(&f.mu);
		while (!b->full && !f.done)
			pthread_cond_wait(&f.cv, &f.mu);
		more = b->full;
		pthread_mutex_unlock(&f.mu);
		if (!more)
			break;
		for (size_t at = 0; at < b->n && st == IST_OK; ) {
			uint32_t len;
			memcpy(&len, b->p + at, 4);
			memcpy(&one.key, b->p + at + 4, 8);
			one.rec = b->p + at + REC_HEAD;
			one.rec_n = len;
			at += REC_HEAD + (size_t)len;
			st = put(ctx, &one, err);
		}
		pthread_mutex_lock(&f.mu);
		b->n = 0;
		b->full = false;
		if (st != IST_OK)
			f.stop = true;
		pthread_cond_broadcast(&f.cv);
		pthread_mutex_unlock(&f.mu);
		if (st != IST_OK)
			break;
		slot ^= 1;
	}
	pthread_join(t, NULL);
	if (st == IST_OK && f.pst != IST_OK) {
		st = f.pst;
		if (err)
			*err = f.perr;
	}
	free(f.b[0].p);
	free(f.b[1].p);
	pthread_cond_destroy(&f.cv);
	pthread_mutex_destroy(&f.mu);
	return st;
}

/* A merge pass's put: the record, as it is, into the new run. */
static enum ist_status
put_run(void *ctx, const struct run *r, struct ist_error *err)
{
	(void)err;
	/* a writer's error stays in it, for rw_close to say */
	rw_put(ctx, r->key, r->rec, (uint32_t)r->rec_n);
	return ((struct rwriter *)ctx)->e ? IST_EIO : IST_OK;
}

/*
 * Merges the last k runs into one, a level above theirs, in its place:
 * their order (the inputs') is kept for equal keys, as the final merge
 * keeps it.
 */
static enum ist_status
merge_tail(struct merger *m, size_t k, struct ist_error *err)
{
	size_t first = m->nruns - k;
	struct rwriter w;
	enum ist_status st;
	int level = m->runs[first].level + 1;
	struct run *in;

	if ((in = malloc(k * sizeof(*in))) == NULL) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	/* the inputs leave the array: the output takes their place */
	memcpy(in, m->runs + first, k * sizeof(*in));
	m->nruns = first;
	if ((st = rw_open(m, &w, level, err)) == IST_OK)
		st = mg_runs_merge(in, k, put_run, &w, err);
	for (size_t i = 0; i < k; i++)
		mg_run_close(&in[i]);
	free(in);
	if (st == IST_OK || w.e)
		return rw_close(m, &w, err);    /* says a writer's error */
	rw_close(m, &w, NULL);
	return st;
}

/*
 * At most fan-in runs are read at once, each with a zstd reader: after a
 * spill, fan-in runs of one level become one of the next, so that the
 * runs (and the files held open) stay about fan-in per level, a few
 * levels for any size; before the last merge, the tail is merged until
 * f runs are left (f: the fan-in, less what the last merge adds).
 */
static enum ist_status
tiers(struct merger *m, size_t f, bool last, struct ist_error *err)
{
	enum ist_status st = IST_OK;

	while (st == IST_OK && m->nruns >= f &&
	    m->runs[m->nruns - f].level == m->runs[m->nruns - 1].level)
		st = merge_tail(m, f, err);
	while (st == IST_OK && last && m->nruns > f) {
		size_t k = m->nruns - f + 1;
		st = merge_tail(m, k < f ? k : f, err);
	}
	return st;
}

/* Sorts b's records into a new run (and merges runs as tiers says). */
enum ist_status
mg_spill(struct merger *m, const struct sortbuf *b, struct ist_error *err)
{
	struct rwriter w;
	enum ist_status st;

	if (b->ne == 0)
		return IST_OK;
	mg_sort_ents(m, b->ents, b->ne);
	if ((st = rw_open(m, &w, 0, err)) != IST_OK) {
		rw_close(m, &w, NULL);
		return st;
	}
	for (size_t i = 0; i < b->ne; i++) {
		struct ent *en = &b->ents[i];
		if (rw_put(&w, en->key, b->arena + en->off,
		    (uint32_t)en->len) != 0)
			break;
	}
	if ((st = rw_close(m, &w, err)) != IST_OK)
		return st;
	return tiers(m, m->fanin, false, err);
}

/* Merges runs until at most fan-in minus room are left (room: for runs
 * the final merge adds). */
enum ist_status
mg_runs_final(struct merger *m, size_t room, struct ist_error *err)
{
	size_t f = m->fanin;

	return tiers(m, f > room + 1 ? f - room : 2, true, err);
}

/* A run reader's memory: zstd's context (about 40 KiB) and window (the
 * runs are written with a 128 KiB one), and the buffers. */
size_t
mg_run_reader_bytes(void)
{
	return (40u << 10) + (1u << 17) + RUN_IN + RUN_OUT;
}

/* Makes the next record of run r current; false at its end. */
bool
mg_run_next(struct run *r)
{
	uint32_t len;

	if (r->mem) {
		if (r->idx == r->mem_n)
			return false;
		r->key = r->mem[r->idx].key;
		r->rec = (uint8_t *)r->mem_arena + r->mem[r->idx].off;
		r->rec_n = r->mem[r->idx].len;
		r->idx++;
		return true;
	}

	for (;;) {
		size_t avail = r->out_n - r->out_pos;
		if (avail >= REC_HEAD) {
			memcpy(&len, r->out + r->out_pos, 4);
			if (avail >= REC_HEAD + (size_t)len) {
				memcpy(&r->key, r->out + r->out_pos + 4, 8);
				r->rec = r->out + r->out_pos + REC_HEAD;
				r->rec_n = len;
				r->out_pos += REC_HEAD + len;
				r->idx++;
				return true;
			}
			if (REC_HEAD + (size_t)len + (16u << 10) > r->out_cap) {
				size_t cap = REC_HEAD + (size_t)len + (32u << 10);
				uint8_t *no = realloc(r->out, cap);
				if (no == NULL)
					return !(r->bad = true);
				r->out = no;
				r->out_cap = cap;
			}
		}
		/* compact, then decompress more */
		memmove(r->out, r->out + r->out_pos, avail);
		r->out_n = avail;
		r->out_pos = 0;
		if (r->in_pos == r->in_n) {
			ssize_t k;
			if (r->eof) {
				/* a record cut short: the run is damaged */
				r->bad = avail > 0;
				return false;
			}
			k = read(r->fd, r->in, RUN_IN);
			if (k <= 0) {
				r->eof = true;
				if (k < 0)
					return !(r->bad = true);
				continue;
			}
			r->in_n = (size_t)k;
			r->in_pos = 0;
		}
		{
			ZSTD_inBuffer in = { r->in, r->in_n, r->in_pos };
			ZSTD_outBuffer out = { r->out, r->out_cap, r->out_n };
			size_t ret = ZSTD_decompressStream(r->z, &out, &in);
			if (ZSTD_isError(ret))
				return !(r->bad = true);
			r->in_pos = in.pos;
			r->out_n = out.pos;
		}
	}
}

int
mg_run_open(struct run *r)
{
	if (r->mem) {
		r->idx = 0;
		r->done = !mg_run_next(r);
		return 0;
	}
	if (lseek(r->fd, 0, SEEK_SET) != 0)
		return -1;
	r->z = ZSTD_createDCtx();
	r->in = malloc(RUN_IN);
	r->out_cap = RUN_OUT;
	r->out = malloc(r->out_cap);
	if (r->z == NULL || r->in == NULL || r->out == NULL)
		return -1;
	r->done = !mg_run_next(r);
	return r->bad ? -1 : 0;
}

void
mg_run_close(struct run *r)
{
	ZSTD_freeDCtx(r->z);
	free(r->in);
	free(r->out);
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

/* heap of runs by (key, run index): the run index is the input order */
static bool
run_less(struct run *runs, size_t a, size_t b)
{
	if (runs[a].key != runs[b].key)
		return runs[a].key < runs[b].key;
	return a < b;
}

void
mg_sift(struct run *runs, size_t *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, s = i;
		if (l < n && run_less(runs, h[l], h[s]))
			s = l;
		if (r < n && run_less(runs, h[r], h[s]))
			s = r;
		if (s == i)
			return;
		size_t t = h[i];
		h[i] = h[s];
		h[s] = t;
		i = s;
	}
}
