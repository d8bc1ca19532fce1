/* pack.c - events packed for the sort: varints behind a 16-byte index
 * entry, and the radix sort of the index. */
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

/* ---- packing ---- */

/*
 * An event in the sort buffer and the runs: its kind, the merge's track id,
 * the duration of a range (the start or time is the sort key, kept beside),
 * a bit per payload field present, then those fields: strings as the merge's
 * ids, integers zigzag, all as LEB128 varints; doubles as 8 bytes, blobs as
 * a length and their bytes.  About 15 bytes for a Python call.
 */
static inline uint8_t *
put_uv(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint8_t *
put_sv(uint8_t *p, int64_t v)
{
	return put_uv(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static inline const uint8_t *
get_uv(const uint8_t *p, uint64_t *v)
{
	uint64_t x = 0;
	int sh = 0;

	while (*p & 0x80) {
		x |= (uint64_t)(*p++ & 0x7f) << sh;
		sh += 7;
	}
	*v = x | (uint64_t)*p++ << sh;
	return p;
}

static inline const uint8_t *
get_sv(const uint8_t *p, int64_t *v)
{
	uint64_t u;

	p = get_uv(p, &u);
	*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return p;
}

/* The most bytes an event packs into, blobs aside. */
#define PACK_MAX (1 + 5 + 10 + 1 + 8 * 31)

/*
 * Each kind's payload fields come from the schema's plans (ist_plans), in
 * table order, packed with one presence byte: so at most 8 (the header,
 * which is never packed, has more; tests/unit/test_trace.c checks).
 */

/* The merge's id of the event's string field f; 0: out of memory. */
static uint32_t
gstr(struct merger *m, const struct ist_reader *r, struct ist_event *ev,
    enum ist_field f)
{
	uint32_t id = ist_reader_string_id(r, f), g;

	if (id >= m->map.nstr || (g = m->map.str[id]) == 0) {
		if ((g = mg_gstring(m, *ist_field_str(ev, f))) == 0 ||
		    ist_idmap_put(&m->map.str, &m->map.nstr, id, g) != 0)
			return 0;
	}
	return g;
}

#define F(x) ((uint64_t)1 << IST_F_##x)
#define TIMED (0x80)            /* a type byte's flag: the timed form */

/*
 * A timed record of a thread, which the writer writes from the bytes it
 * keeps for its name, file or domain and line (ist_writer_timed): a call,
 * scope or NVTX range with no other field (but a call's yielded, true: a
 * generator's run), and a line, where it has one, that ist_writer_timed
 * writes as ist_writer_write does (above 0).  It packs as [type | TIMED,
 * track, duration, function].
 */
static bool
timed_form(const struct ist_event *ev)
{
	uint64_t base = F(PID) | F(TID) | F(START) | F(END) | F(NAME), more;

	switch (ev->type) {
	case IST_CPU_CALL:
		more = F(FILE) | F(LINE) | (IST_HAS(ev, IST_F_YIELDED) &&
		    ev->yielded ? F(YIELDED) : 0);
		break;
	case IST_NVTX_RANGE:
		more = F(DOMAIN);
		break;
	case IST_SCOPE:
		more = 0;
		break;
	default:
		return false;
	}
	if ((ev->has & base) != base || (ev->has & ~(base | more)) != 0)
		return false;
	return !(ev->has & F(LINE)) || ev->line > 0;
}

/* Packs ev at p (room for PACK_MAX plus its blobs); NULL: out of memory. */
uint8_t *
mg_pack(struct merger *m, const struct ist_reader *r, const struct ist_event *cev,
    uint8_t *p)
{
	struct ist_event *ev = (struct ist_event *)cev; /* read only */
	const struct ist_typespec *ts = &ist_types[ev->type];
	uint32_t present = 0;
	uint8_t *bits;
	bool timed = timed_form(ev);

	*p++ = (uint8_t)ev->type | (timed ? TIMED : 0);
	if (ts->has_track) {
		uint32_t id = ist_reader_track_id(r), g;
		if (id >= m->map.ntrk || (g = m->map.trk[id]) == 0) {
			if ((g = mg_gtrack(m, ev)) == 0 ||
			    ist_idmap_put(&m->map.trk, &m->map.ntrk, id, g) != 0)
				return NULL;
		}
		p = put_uv(p, g);
	}
	if (timed) {
		enum ist_field mf = ev->type == IST_NVTX_RANGE ? IST_F_DOMAIN :
		    IST_F_FILE;
		uint32_t id = ist_reader_string_id(r, IST_F_NAME), more = 0, fn;
		uint32_t name = gstr(m, r, ev, IST_F_NAME);
		int64_t line = IST_HAS(ev, IST_F_LINE) ? ev->line : 0;
		bool y = IST_HAS(ev, IST_F_YIELDED);
		const struct gfn *f;
		if (name == 0 || (IST_HAS(ev, mf) &&
		    (more = gstr(m, r, ev, mf)) == 0))
			return NULL;
		/* most records of a name are one function: no hashing then */
		if (id >= m->map.nfn || (fn = m->map.fn[id]) == 0 ||
		    (f = &m->fns[fn - 1])->more != more || f->line != line ||
		    f->type != ev->type || f->wd.yielded != y) {
			if ((fn = mg_gfn(m, ev->type, name, more, line, y)) ==
			    0 ||
			    ist_idmap_put(&m->map.fn, &m->map.nfn, id, fn) != 0)
				return NULL;
		}
		p = put_sv(p, (int64_t)((uint64_t)ev->end_ns -
		    (uint64_t)ev->start_ns));
		return put_uv(p, fn);
	}
	if (ts->time == TS_RANGE)
		p = put_sv(p, (int64_t)((uint64_t)ev->end_ns -
		    (uint64_t)ev->start_ns));
	bits = p++;
	for (int i = 0; i < ist_plans[ev->type].npay; i++) {
		const struct ist_fieldspec *fs = ist_plans[ev->type].pay[i];
		if (!IST_HAS(ev, fs->id))
			continue;
		present |= 1u << i;
		switch (fs->ft) {
		case FT_STR: {
			uint32_t g = gstr(m, r, ev, fs->id);
			if (g == 0)
				return NULL;
			p = put_uv(p, g);
			break;
		}
		case FT_VALUE: case FT_OBJECT: {
			struct ist_blob *b = ist_field_blob(ev, fs->id);
			p = put_uv(p, b->n);
			memcpy(p, b->p, b->n);
			p += b->n;
			break;
		}
		case FT_IVEC3: {
			const int64_t *v = fs->id == IST_F_GRID ? ev->grid :
			    ev->block;
			for (int k = 0; k < 3; k++)
				p = put_sv(p, v[k]);
			break;
		}
		case FT_BOOL:
			*p++ = *ist_field_bool((struct ist_event *)ev, fs->id);
			break;
		case FT_DOUBLE:
			memcpy(p, &ev->pcie_gbps, 8);
			p += 8;
			break;
		case FT_NUMBER:
			*p++ = ev->value_is_int;
			if (ev->value_is_int) {
				p = put_sv(p, ev->ivalue);
			} else {
				memcpy(p, &ev->value, 8);
				p += 8;
			}
			break;
		case FT_INT:
			p = put_sv(p, *ist_field_int(ev, fs->id));
			break;
		}
	}
	*bits = (uint8_t)present;  /* at most 8 payload fields a kind */
	return p;
}

/* The upper bound mg_pack() needs for ev. */
size_t
mg_pack_bound(const struct ist_event *cev)
{
	struct ist_event *ev = (struct ist_event *)cev;
	const struct ist_plan *pl = &ist_plans[ev->type];
	size_t n = PACK_MAX;

	for (int i = 0; pl->blobs && i < pl->npay; i++) {
		const struct ist_fieldspec *fs = pl->pay[i];
		if ((fs->ft == FT_VALUE || fs->ft == FT_OBJECT) &&
		    IST_HAS(ev, fs->id))
			n += ist_field_blob(ev, fs->id)->n;
	}
	return n;
}

/* Unpacks into ev, whose members without a `has` bit are left as they
 * were: the writer reads only those it has (never the timed form: see
 * mg_emit). */
void
mg_unpack(const struct merger *m, const uint8_t *p, int64_t key,
    struct ist_event *ev)
{
	const struct ist_typespec *ts;
	uint32_t present;
	uint64_t u;
	int64_t v;

	ev->type = (enum ist_type)*p++;
	ev->has = 0;
	ts = &ist_types[ev->type];
	if (ts->has_track) {
		const struct gtrack *t;
		p = get_uv(p, &u);
		t = &m->tracks[u - 1];
		ev->has = t->mask;
		ev->pid = t->key[0];
		ev->tid = t->key[1];
		ev->device = t->key[2];
		ev->stream = t->key[3];
	}
	if (ts->time == TS_RANGE) {
		p = get_sv(p, &v);
		ev->start_ns = key;
		ev->end_ns = (int64_t)((uint64_t)key + (uint64_t)v);
		ev->has |= (uint64_t)1 << IST_F_START | (uint64_t)1 << IST_F_END;
	} else if (ts->time == TS_INSTANT) {
		ev->ts_ns = key;
		ev->has |= (uint64_t)1 << IST_F_TS;
	}
	present = *p++;
	for (int i = 0; i < ist_plans[ev->type].npay; i++) {
		const struct ist_fieldspec *fs = ist_plans[ev->type].pay[i];
		if (!(present & (1u << i)))
			continue;
		ev->has |= (uint64_t)1 << fs->id;
		switch (fs->ft) {
		case FT_STR: {
			const struct ist_strent *e;
			p = get_uv(p, &u);
			e = ist_strtab_get(&m->strs, (uint32_t)u);
			*ist_field_str(ev, fs->id) = (struct ist_str){ e->p,
			    e->n };
			break;
		}
		case FT_VALUE: case FT_OBJECT:
			p = get_uv(p, &u);
			*ist_field_blob(ev, fs->id) = (struct ist_blob){ p, u };
			p += u;
			break;
		case FT_IVEC3: {
			int64_t *d = fs->id == IST_F_GRID ? ev->grid :
			    ev->block;
			for (int k = 0; k < 3; k++)
				p = get_sv(p, &d[k]);
			break;
		}
		case FT_BOOL:
			*ist_field_bool(ev, fs->id) = *p++ != 0;
			break;
		case FT_DOUBLE:
			memcpy(&ev->pcie_gbps, p, 8);
			p += 8;
			break;
		case FT_NUMBER:
			ev->value_is_int = *p++ != 0;
			if (ev->value_is_int) {
				p = get_sv(p, &ev->ivalue);
				ev->value = (double)ev->ivalue;
			} else {
				memcpy(&ev->value, p, 8);
				p += 8;
			}
			break;
		case FT_INT:
			p = get_sv(p, ist_field_int(ev, fs->id));
			break;
		}
	}
}


void
mg_emit_init(struct emit *e, struct merger *m, struct ist_writer *w)
{
	e->m = m;
	e->w = w;
	e->n = 0;
	e->track = 0;
	ist_event_init(&e->ev, IST_CPU_CALL);
}

enum ist_status
mg_emit_end(struct emit *e, struct ist_error *err)
{
	const struct gtrack *t;
	enum ist_status st = IST_OK;
	size_t at = 0, done;

	if (e->n == 0)
		return IST_OK;
	t = &e->m->tracks[e->track - 1];
	/* a run stops after the record that fills a frame: the rest again */
	while (at < e->n && st == IST_OK) {
		st = ist_writer_timed_run(e->w, t->key[0], t->key[1],
		    e->run + at, e->n - at, &done, err);
		at += done;
	}
	e->n = 0;
	return st;
}

enum ist_status
mg_emit(struct emit *e, const uint8_t *p, int64_t key,
    struct ist_error *err)
{
	enum ist_status st;
	struct gfn *f;
	uint64_t u, g;
	int64_t d, end;

	if (!(*p & TIMED)) {
		if (e->n && (st = mg_emit_end(e, err)) != IST_OK)
			return st;
		mg_unpack(e->m, p, key, &e->ev);
		return ist_writer_write(e->w, &e->ev, err);
	}
	p++;
	p = get_uv(p, &g);
	p = get_sv(p, &d);
	get_uv(p, &u);
	f = &e->m->fns[u - 1];
	if (e->n && (g != e->track || e->n == EMIT_RUN) &&
	    (st = mg_emit_end(e, err)) != IST_OK)
		return st;
	end = (int64_t)((uint64_t)key + (uint64_t)d);
	if (e->n == 0 && g != e->track) {
		/* another thread's: runs of one are written at once (threads
		 * that take turns would make nothing but those; through the
		 * run they cost 0.8% more) */
		const struct gtrack *t = &e->m->tracks[g - 1];
		e->track = (uint32_t)g;
		return ist_writer_timed(e->w, (enum ist_type)f->type,
		    t->key[0], t->key[1], key, end, &f->wd, err);
	}
	e->run[e->n++] = (struct ist_timed){ &f->wd, key, end,
	    (enum ist_type)f->type };
	return IST_OK;
}

/*
 * Stable LSD radix sort by key, 16 bits a pass, skipping passes where every
 * key has the same digit (timestamps of one run share their high bits).
 * Entries are appended in input order, so stable means ties stay in it:
 * a buffer already in order (one thread's records, one process's stream)
 * is left as it is.  The four digits' counts are taken in one read.
 */
void
mg_sort_ents(struct merger *m, struct ent *ents, size_t n)
{
	uint32_t (*count)[65536] = m->count;
	struct ent *a = ents, *b = m->tmp;
	size_t i;

	for (i = 1; i < n && ents[i].key >= ents[i - 1].key; i++)
		;
	if (i >= n)
		return;
	memset(count, 0, 4 * sizeof(*count));
	for (i = 0; i < n; i++) {
		uint64_t k = (uint64_t)a[i].key ^ (1ull << 63);
		count[0][k & 0xffff]++;
		count[1][k >> 16 & 0xffff]++;
		count[2][k >> 32 & 0xffff]++;
		count[3][k >> 48]++;
	}
	for (int d = 0; d < 4; d++) {
		uint32_t *c = count[d], sum = 0;
		int shift = 16 * d;
		bool trivial = false;

		for (size_t v = 0; v < 65536; v++) {
			uint32_t k = c[v];
			if (k == n)
				trivial = true;
			c[v] = sum;
			sum += k;
		}
		if (trivial)
			continue;
		for (i = 0; i < n; i++)
			b[c[((uint64_t)a[i].key ^ (1ull << 63)) >> shift &
			    0xffff]++] = a[i];
		struct ent *t = a;
		a = b;
		b = t;
	}
	if (a != ents)
		memcpy(ents, a, n * sizeof(*a));
}
