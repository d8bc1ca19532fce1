/* runs.c - sorted runs spilled to zstd-compressed temporary files, and the
 * heap that merges them back. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
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

enum ist_status
mg_spill(struct merger *m, struct ist_error *err)
{
	struct run *r, *nr;
	ZSTD_CCtx *z = NULL;
	uint8_t *stage = NULL, *zout = NULL;
	size_t sn = 0, scap = 1u << 20, zcap = ZSTD_CStreamOutSize();
	enum ist_status st = IST_OK;
	int e = 0;

	if (m->ne == 0)
		return IST_OK;
	mg_sort_ents(m);
	if ((nr = realloc(m->runs, (m->nruns + 1) * sizeof(*nr))) == NULL)
		goto nomem;
	m->runs = nr;
	r = &m->runs[m->nruns];
	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s/is-merge-run.XXXXXX",
	    m->o->tmpdir);
	if ((r->fd = mkstemp(r->path)) < 0) {
		ist_seterr(err, IST_EIO, "cannot create a temporary file in "
		    "'%s': %s", m->o->tmpdir, strerror(errno));
		return IST_EIO;
	}
	unlink(r->path);     /* gone when closed, whatever happens */
	m->nruns++;
	if ((z = ZSTD_createCCtx()) == NULL || (stage = malloc(scap)) == NULL ||
	    (zout = malloc(zcap)) == NULL)
		goto nomem;
	/* fast: a run is read once, soon */
	ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, -5);
	/* a small window: every run is read back at once at merge time */
	ZSTD_CCtx_setParameter(z, ZSTD_c_windowLog, 17);
	for (size_t i = 0; i < m->ne && e == 0; i++) {
		struct ent *en = &m->ents[i];
		uint32_t len = (uint32_t)en->len;
		size_t need = 12 + (size_t)len;

		if (sn + need > scap && sn > 0 &&
		    (e = zflush(z, r->fd, stage, &sn, zout, zcap, false)) != 0)
			break;
		if (need > scap) {
			uint8_t *ns = realloc(stage, need);
			if (ns == NULL)
				goto nomem;
			stage = ns;
			scap = need;
		}
		memcpy(stage + sn, &len, 4);
		memcpy(stage + sn + 4, &en->key, 8);
		memcpy(stage + sn + 12, m->arena + en->off, len);
		sn += need;
	}
	if (e == 0)
		e = zflush(z, r->fd, stage, &sn, zout, zcap, true);
	if (e) {
		ist_seterr(err, IST_EIO, "cannot write a temporary file in "
		    "'%s': %s", m->o->tmpdir, strerror(e));
		st = IST_EIO;
	}
	m->ne = 0;
	m->an = 0;
	ZSTD_freeCCtx(z);
	free(stage);
	free(zout);
	return st;
nomem:
	ZSTD_freeCCtx(z);
	free(stage);
	free(zout);
	ist_seterr(err, IST_ENOMEM, "out of memory");
	return IST_ENOMEM;
}

/* Makes the next record of run r current; false at its end. */
bool
mg_run_next(struct run *r)
{
	uint32_t len;

	for (;;) {
		size_t avail = r->out_n - r->out_pos;
		if (avail >= 12) {
			memcpy(&len, r->out + r->out_pos, 4);
			if (avail >= 12 + (size_t)len) {
				memcpy(&r->key, r->out + r->out_pos + 4, 8);
				r->rec = r->out + r->out_pos + 12;
				r->rec_n = len;
				r->out_pos += 12 + len;
				r->idx++;
				return true;
			}
			if (12 + (size_t)len + (64u << 10) > r->out_cap) {
				size_t cap = 12 + (size_t)len + (128u << 10);
				uint8_t *no = realloc(r->out, cap);
				if (no == NULL)
					return false;
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
			if (r->eof)
				return false;
			k = read(r->fd, r->in, ZSTD_DStreamInSize());
			if (k <= 0) {
				r->eof = true;
				if (k < 0)
					return false;
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
				return false;
			r->in_pos = in.pos;
			r->out_n = out.pos;
		}
	}
}

int
mg_run_open(struct run *r)
{
	if (lseek(r->fd, 0, SEEK_SET) != 0)
		return -1;
	r->z = ZSTD_createDCtx();
	r->in = malloc(ZSTD_DStreamInSize());
	r->out_cap = 256u << 10;
	r->out = malloc(r->out_cap);
	if (r->z == NULL || r->in == NULL || r->out == NULL)
		return -1;
	r->done = !mg_run_next(r);
	return 0;
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
