/* merge.c - clock alignment and a bounded-memory global sort (is-merge). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cbor.h>
#include <jansson.h>
#include <zstd.h>

#include "merge_int.h"

static void
note(struct merger *m, int level, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	if (m->note == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	m->note(m->ctx, level, msg);
}

static char *
dupn(struct ist_str s)
{
	return strndup(s.p ? s.p : "", s.n);
}

static struct ist_blob
dupblob(struct ist_blob b)
{
	uint8_t *p;

	if (b.n == 0 || (p = malloc(b.n)) == NULL)
		return (struct ist_blob){ NULL, 0 };
	memcpy(p, b.p, b.n);
	return (struct ist_blob){ p, b.n };
}

static int
add_pair(struct segment *s, struct ist_str dom, int64_t host, int64_t d)
{
	struct ist_clock_fit *p = NULL;

	for (size_t i = 0; i < s->ndom; i++)
		if (strlen(s->dom[i].domain) == dom.n &&
		    memcmp(s->dom[i].domain, dom.p, dom.n) == 0)
			p = &s->dom[i];
	if (p == NULL) {
		struct ist_clock_fit *nd = realloc(s->dom, (s->ndom + 1) *
		    sizeof(*nd));
		if (nd == NULL)
			return -1;
		s->dom = nd;
		p = &s->dom[s->ndom++];
		memset(p, 0, sizeof(*p));
		if ((p->domain = dupn(dom)) == NULL)
			return -1;
	}
	return ist_clock_add(p, host, d);
}

/* The clock domain of a GPU-side event, if its segment calibrated one. */
static const struct ist_clock_fit *
domain_of(const struct segment *s, const struct ist_event *ev)
{
	char want[64];

	if (s->ndom == 0)
		return NULL;
	if (s->all_cupti) {
		/* the CUPTI collector's stream: API calls, syncs and
		 * allocations are in CUPTI's clock as much as GPU work */
		for (size_t i = 0; i < s->ndom; i++)
			if (strcmp(s->dom[i].domain, "cupti") == 0)
				return &s->dom[i];
		return NULL;
	}
	if (!IST_HAS(ev, IST_F_DEVICE))
		return NULL;
	switch (ev->type) {
	case IST_GPU_KERNEL: case IST_H2D_COPY: case IST_D2H_COPY:
	case IST_D2D_COPY: case IST_MEMSET:
		break;
	default:
		return NULL;
	}
	snprintf(want, sizeof(want), "cupti:%" PRId64, ev->device);
	for (size_t i = 0; i < s->ndom; i++)
		if (strcmp(s->dom[i].domain, want) == 0)
			return &s->dom[i];
	for (size_t i = 0; i < s->ndom; i++)
		if (strcmp(s->dom[i].domain, "cupti") == 0)
			return &s->dom[i];
	return NULL;
}

/* ---- strings and tracks, interned once for the whole merge ---- */

/* Strings live in blocks that never move: an unpacked event's strings stay
 * where they are, so the writer can take them as stable. */
#define SBLOCK (256u << 10)

/*
 * Doubles an id table (slots hold ids 1..n, 0 empty; first: the first
 * size) over n items of stride bytes whose hash sits at byte off of each.
 */
static int
grow_ids(uint32_t **tab, size_t *cap, size_t first, const void *items,
    size_t stride, size_t off, size_t n)
{
	size_t nc = *cap ? *cap * 2 : first;
	uint32_t *t = calloc(nc, sizeof(*t));

	if (t == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		uint64_t h;
		size_t k;
		memcpy(&h, (const char *)items + i * stride + off, sizeof(h));
		for (k = h & (nc - 1); t[k]; k = (k + 1) & (nc - 1))
			;
		t[k] = (uint32_t)i + 1;
	}
	free(*tab);
	*tab = t;
	*cap = nc;
	return 0;
}

/* The merge's id of a string, 0 when out of memory. */
uint32_t
mg_gstring(struct merger *m, struct ist_str s)
{
	uint64_t h = ist_hash_bytes(s.p, s.n);
	size_t k;
	struct gstr *g;
	char *p;

	if ((m->nstr + 1) * 2 > m->stab_cap && grow_ids(&m->stab,
	    &m->stab_cap, 4096, m->strs, sizeof(*m->strs),
	    offsetof(struct gstr, hash), m->nstr) != 0)
		return 0;
	for (k = h & (m->stab_cap - 1); m->stab[k];
	    k = (k + 1) & (m->stab_cap - 1)) {
		g = &m->strs[m->stab[k] - 1];
		if (g->hash == h && g->s.n == s.n && (s.n == 0 ||
		    memcmp(g->s.p, s.p, s.n) == 0))
			return m->stab[k];
	}
	if (m->nstr == m->strs_cap) {
		size_t cap = m->strs_cap ? m->strs_cap * 2 : 1024;
		struct gstr *ns = realloc(m->strs, cap * sizeof(*ns));
		if (ns == NULL)
			return 0;
		m->strs = ns;
		m->strs_cap = cap;
	}
	if (s.n > m->bleft || m->bp == NULL) {
		size_t bs = s.n > SBLOCK ? s.n : SBLOCK;
		char **nb = realloc(m->blocks, (m->nblocks + 1) *
		    sizeof(*nb));
		if (nb == NULL)
			return 0;
		m->blocks = nb;
		if ((m->blocks[m->nblocks] = malloc(bs ? bs : 1)) == NULL)
			return 0;
		m->bp = m->blocks[m->nblocks++];
		m->bleft = bs;
	}
	p = m->bp;
	if (s.n)
		memcpy(p, s.p, s.n);
	m->bp += s.n;
	m->bleft -= s.n;
	m->strs[m->nstr] = (struct gstr){ { p, s.n }, h };
	m->stab[k] = (uint32_t)++m->nstr;
	return (uint32_t)m->nstr;
}

/* The merge's id of the event's track, 0 when out of memory. */
uint32_t
mg_gtrack(struct merger *m, const struct ist_event *ev)
{
	struct gtrack t = { (uint32_t)(ev->has & 15), 0,
	    { ev->pid, ev->tid, ev->device, ev->stream } };
	size_t k;

	for (int i = 0; i < 4; i++)
		if (!(t.mask & (1u << i)))
			t.key[i] = 0;
	t.hash = ist_hash_bytes((const char *)t.key, sizeof(t.key)) ^ t.mask;
	if ((m->ntrack + 1) * 2 > m->ttab_cap && grow_ids(&m->ttab,
	    &m->ttab_cap, 256, m->tracks, sizeof(*m->tracks),
	    offsetof(struct gtrack, hash), m->ntrack) != 0)
		return 0;
	for (k = t.hash & (m->ttab_cap - 1); m->ttab[k];
	    k = (k + 1) & (m->ttab_cap - 1)) {
		struct gtrack *o = &m->tracks[m->ttab[k] - 1];
		if (o->mask == t.mask && memcmp(o->key, t.key,
		    sizeof(t.key)) == 0)
			return m->ttab[k];
	}
	if (m->ntrack == m->tracks_cap) {
		size_t cap = m->tracks_cap ? m->tracks_cap * 2 : 256;
		struct gtrack *nt = realloc(m->tracks, cap * sizeof(*nt));
		if (nt == NULL)
			return 0;
		m->tracks = nt;
		m->tracks_cap = cap;
	}
	m->tracks[m->ntrack] = t;
	m->ttab[k] = (uint32_t)++m->ntrack;
	return (uint32_t)m->ntrack;
}

/* A segment's id, looked up in its map to the merge's ids (0: not yet). */
int
mg_map_put(uint32_t **map, size_t *n, uint32_t id, uint32_t gid)
{
	if (id >= *n) {
		size_t cap = *n ? *n : 256;
		uint32_t *nm;
		while (cap <= id)
			cap *= 2;
		if ((nm = realloc(*map, cap * sizeof(*nm))) == NULL)
			return -1;
		memset(nm + *n, 0, (cap - *n) * sizeof(*nm));
		*map = nm;
		*n = cap;
	}
	(*map)[id] = gid;
	return 0;
}

/* ---- the passes ---- */

static int64_t
event_key(const struct ist_event *ev)
{
	if (ev->type == IST_ANALYSIS)
		return INT64_MAX;
	if (IST_HAS(ev, IST_F_START))
		return ev->start_ns;
	if (IST_HAS(ev, IST_F_TS))
		return ev->ts_ns;
	return INT64_MIN;    /* process, thread, device, loss: first */
}

static enum ist_status
add_event(struct merger *m, const struct ist_reader *r,
    const struct ist_event *ev, struct ist_error *err)
{
	size_t n = mg_pack_bound(ev);
	enum ist_status st;
	uint8_t *end;

	if (m->acap - m->an < n || m->ne == m->cape) {
		if ((st = mg_spill(m, err)) != IST_OK)
			return st;
		if (n > m->acap) {
			ist_seterr(err, IST_ELIMIT, "a record of %zu bytes does "
			    "not fit in --memory-mb", n);
			return IST_ELIMIT;
		}
	}
	if ((end = mg_pack(m, r, ev, m->arena + m->an)) == NULL) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	m->ents[m->ne].key = event_key(ev);
	m->ents[m->ne].off = (uint32_t)m->an;
	m->ents[m->ne].len = (uint32_t)(end - (m->arena + m->an));
	m->an += m->ents[m->ne].len;
	m->ne++;
	return IST_OK;
}

static const char *
shown(const struct input *in)
{
	return in->name;
}

static int
add_damage(struct merger *m, const struct input *in, const char *error,
    int64_t truncated, long seg)
{
	struct damage *nd = realloc(m->dmg, (m->ndmg + 1) * sizeof(*nd));

	if (nd == NULL)
		return -1;
	m->dmg = nd;
	nd[m->ndmg] = (struct damage){ in->name, NULL, truncated, seg };
	if (error && (nd[m->ndmg].error = strdup(error)) == NULL)
		return -1;
	m->ndmg++;
	return 0;
}

/* The keys of damage i, appended to the JSON object text in js. */
static void
damage_keys(const struct merger *m, size_t i, struct ist_buf *js)
{
	const struct damage *d = &m->dmg[i];

	ist_buf_printf(js, ",\"input\":");
	ist_buf_json_string(js, d->input, strlen(d->input));
	if (d->truncated)
		ist_buf_printf(js, ",\"truncated_bytes\":%" PRId64,
		    d->truncated);
	if (d->error) {
		ist_buf_printf(js, ",\"error\":");
		ist_buf_json_string(js, d->error, strlen(d->error));
	}
}

/* Appends JSON object text js, as CBOR, to the array items. */
static void
add_source(struct ist_buf *items, size_t *nitems, const struct ist_buf *js)
{
	struct ist_buf cb = { 0 };
	struct ist_error e;

	if (ist_json_text_to_cbor(js->p, js->n, &cb, &e) == IST_OK &&
	    ist_buf_append(items, cb.p, cb.n) == 0)
		(*nitems)++;
	ist_buf_release(&cb);
}

/* A merged input made from damaged ones: said again, and the merge fails
 * as if it had met the damage itself (the sources carry it on). */
static void
carried_damage(struct merger *m, const struct input *in,
    struct ist_blob sources)
{
	struct ist_buf b = { 0 };
	struct ist_error e;
	json_t *src, *s;
	size_t i;

	if (ist_cbor_to_json(sources, &b, &e) != IST_OK ||
	    (src = json_loadb(b.p, b.n, 0, NULL)) == NULL) {
		ist_buf_release(&b);
		return;
	}
	json_array_foreach(src, i, s) {
		const char *why = json_string_value(json_object_get(s,
		    "error"));
		json_int_t cut = json_integer_value(json_object_get(s,
		    "truncated_bytes"));
		char msg[400];
		if (why == NULL && cut <= 0)
			continue;
		ist_damage_text(msg, sizeof(msg), json_string_value(
		    json_object_get(s, "input")), why, (long long)cut);
		note(m, IST_NOTE_WARN, "warning: '%s' was %s", shown(in), msg);
		m->damaged = true;
	}
	json_decref(src);
	ist_buf_release(&b);
}

/* Reads one input; pass 1 collects headers and clocks, pass 2 events. */
static enum ist_status
read_input(struct merger *m, struct input *in, int pass, size_t *segi,
    struct ist_error *err)
{
	int fd = open(in->path, O_RDONLY);
	struct ist_reader *r;
	const struct ist_event *ev;
	struct ist_error e = { 0 };
	enum ist_status st;
	struct segment *s = NULL;

	if (fd < 0) {
		if (pass == 1) {
			char why[600];
			snprintf(why, sizeof(why), "cannot open '%s': %s",
			    shown(in), strerror(errno));
			note(m, IST_NOTE_WARN, "%s", why);
			if (add_damage(m, in, why, 0, -1) != 0) {
				ist_seterr(err, IST_ENOMEM, "out of memory");
				return IST_ENOMEM;
			}
		}
		m->damaged = true;
		return IST_OK;
	}
	if (ist_reader_new(&r, ist_fd_source, &fd, in->name, err) != IST_OK) {
		close(fd);
		return IST_ENOMEM;
	}
	while ((st = ist_reader_next(r, &ev, &e)) == IST_OK) {
		if (ev->type == IST_HEADER) {
			if (pass == 1) {
				struct segment *ns = realloc(m->seg,
				    (m->nseg + 1) * sizeof(*ns));
				if (ns == NULL)
					goto nomem;
				m->seg = ns;
				s = &m->seg[m->nseg++];
				memset(s, 0, sizeof(*s));
				s->producer = IST_HAS(ev, IST_F_PRODUCER) ?
				    dupn(ev->producer) : NULL;
				s->host = IST_HAS(ev, IST_F_HOST) ?
				    dupn(ev->host) : NULL;
				if (IST_HAS(ev, IST_F_PIDS))
					s->pids = dupblob(ev->pids);
				if (IST_HAS(ev, IST_F_SOURCES)) {
					s->sources = dupblob(ev->sources);
					carried_damage(m, in, ev->sources);
				}
				s->all_cupti = IST_HAS(ev, IST_F_CLOCKS) &&
				    ev->clocks.n == 7 && memcmp(ev->clocks.p,
				    "\x81\x65" "cupti", 7) == 0;
				s->have_snap = IST_HAS(ev, IST_F_REALTIME_NS) &&
				    IST_HAS(ev, IST_F_MONOTONIC_NS);
				s->realtime = ev->realtime_ns;
				s->monotonic = ev->monotonic_ns;
			} else {
				s = &m->seg[(*segi)++];
			}
			/* a new segment numbers its strings and tracks anew */
			if (m->map.nstr)
				memset(m->map.str, 0, m->map.nstr *
				    sizeof(*m->map.str));
			if (m->map.ntrk)
				memset(m->map.trk, 0, m->map.ntrk *
				    sizeof(*m->map.trk));
			continue;
		}
		if (ev->type == IST_CLOCK) {
			if (pass == 1 && add_pair(s, ev->domain, ev->ts_ns,
			    ev->domain_ns) != 0)
				goto nomem;
			m->moving = true;
			continue;    /* applied, then summarised in sources */
		}
		if (pass == 1 && m->moving)
			continue;    /* a GPU trace: sorted in pass 2 alone */
		{
			/* the reader's own event: its times may be moved in
			 * place, the next record overwrites them anyway */
			struct ist_event *c = (struct ist_event *)ev;
			const struct ist_clock_fit *p = pass == 2 ? domain_of(s, ev) :
			    NULL;
			if (p) {
				if (IST_HAS(c, IST_F_START)) {
					c->start_ns = ist_clock_map(p, c->start_ns);
					c->end_ns = ist_clock_map(p, c->end_ns);
				}
				if (IST_HAS(c, IST_F_TS))
					c->ts_ns = ist_clock_map(p, c->ts_ns);
			}
			if (pass == 2 && s->shift) {
				if (IST_HAS(c, IST_F_START)) {
					c->start_ns += s->shift;
					c->end_ns += s->shift;
				}
				if (IST_HAS(c, IST_F_TS))
					c->ts_ns += s->shift;
			}
			/* pass 1 sorts too, in case nothing needs moving
			 * (until a clock record says something does) */
			if ((st = add_event(m, r, c, err)) != IST_OK) {
				ist_reader_free(r);
				close(fd);
				return st;
			}
		}
	}
	if (st != IST_END && pass == 1) {
		struct ist_reader_stats rs;
		note(m, IST_NOTE_WARN, "%s%s; merging what was read",
		    st == IST_TRUNCATED ? "warning: " : "", e.msg);
		m->damaged = true;
		ist_reader_stats(r, &rs);
		if (add_damage(m, in, st == IST_TRUNCATED ? NULL : e.msg,
		    (int64_t)rs.truncated_bytes, s ? (long)(s - m->seg) :
		    -1) != 0)
			goto nomem;
	}
	ist_reader_free(r);
	close(fd);
	return IST_OK;
nomem:
	ist_reader_free(r);
	close(fd);
	ist_seterr(err, IST_ENOMEM, "out of memory");
	return IST_ENOMEM;
}

static void
align(struct merger *m)
{
	struct segment *ref;

	m->ref = -1;
	for (size_t i = 0; i < m->nseg; i++)
		if (m->seg[i].have_snap) {
			m->ref = (int)i;
			break;
		}
	ref = m->ref >= 0 ? &m->seg[m->ref] : NULL;
	for (size_t i = 0; i < m->nseg; i++) {
		struct segment *s = &m->seg[i];
		bool same_host = ref && s->host && ref->host &&
		    strcmp(s->host, ref->host) == 0;
		if (s->sources.n) {
			/* an already merged trace: its clocks are aligned */
			s->aligned = true;
		} else if (ref == NULL || same_host) {
			s->aligned = ref != NULL || !s->have_snap;
			s->shift = 0;
			s->uncertainty = ref ? 0 : m->o->margin_ns;
		} else if (s->have_snap) {
			/* another host: through wall time, as well as NTP or
			 * PTP keep the two realtime clocks together */
			s->shift = (s->realtime - s->monotonic) -
			    (ref->realtime - ref->monotonic);
			s->uncertainty = m->o->margin_ns;
			s->aligned = false;
		} else {
			s->uncertainty = m->o->margin_ns;
			s->aligned = false;
		}
		for (size_t d = 0; d < s->ndom; d++)
			ist_clock_fit(&s->dom[d]);
	}
}

/* Appends the CBOR items of array blob b (without its head) to out. */
static size_t
array_items(struct ist_blob b, struct ist_buf *out)
{
	struct tokenizer tz = { 0 };
	const char *why;
	size_t used, n = 0;

	if (b.n && ist_tokenize(&tz, true, b.p, b.n, &used, &why) == IST_OK &&
	    tz.toks[0].t == TK_ARRAY && tz.ntok > 0) {
		size_t head = tz.ntok > 1 ? tz.toks[1].off : used;
		n = (size_t)tz.toks[0].v;
		ist_buf_append(out, b.p + head, used - head);
	}
	free(tz.toks);
	return n;
}

/* The merged header: every source, its alignment and its clock fits. */
static enum ist_status
write_header(struct merger *m, struct ist_writer *w, struct ist_error *err)
{
	struct ist_buf items = { 0 }, js = { 0 }, src = { 0 }, pids = { 0 };
	struct ist_event h;
	struct segment *ref = m->ref >= 0 ? &m->seg[m->ref] : NULL;
	size_t nitems = 0;
	enum ist_status st;
	uint8_t head[9];
	int64_t *allp = NULL;
	size_t np = 0;

	ist_event_init(&h, IST_HEADER);
	h.producer = (struct ist_str){ "is-merge " IST_PACKAGE_VERSION,
	    strlen("is-merge " IST_PACKAGE_VERSION) };
	IST_SET(&h, IST_F_PRODUCER);
	if (ref && ref->host) {
		h.host = (struct ist_str){ ref->host, strlen(ref->host) };
		IST_SET(&h, IST_F_HOST);
	}
	if (ref) {
		h.realtime_ns = ref->realtime;
		h.monotonic_ns = ref->monotonic;
		IST_SET(&h, IST_F_REALTIME_NS);
		IST_SET(&h, IST_F_MONOTONIC_NS);
	}
	h.clocks = (struct ist_blob){ (const uint8_t *)"\x81\x69monotonic",
	    11 };
	IST_SET(&h, IST_F_CLOCKS);
	for (size_t i = 0; i < m->nseg; i++) {
		struct segment *s = &m->seg[i];
		char num[40];

		/* pids: the union, sorted */
		if (s->pids.n) {
			struct tokenizer tz = { 0 };
			const char *why;
			size_t used;
			if (ist_tokenize(&tz, true, s->pids.p, s->pids.n, &used,
			    &why) == IST_OK) {
				/* the array's own items that are pids:
				 * integers from 0 to INT64_MAX */
				for (size_t k = 1; tz.toks[0].t == TK_ARRAY &&
				    k < tz.ntok; k = tz.toks[k].next) {
					int64_t v;
					if (tz.toks[k].t == TK_UINT &&
					    tz.toks[k].v <= INT64_MAX)
						v = (int64_t)tz.toks[k].v;
					else
						continue;
					int64_t *na = realloc(allp,
					    (np + 1) * sizeof(*na));
					if (na == NULL)
						break;
					allp = na;
					allp[np++] = v;
				}
			}
			free(tz.toks);
		}
		if (s->sources.n) {
			nitems += array_items(s->sources, &items);
			continue;
		}
		js.n = 0;
		ist_buf_printf(&js, "{\"producer\":");
		if (s->producer)
			ist_buf_json_string(&js, s->producer,
			    strlen(s->producer));
		else
			ist_buf_printf(&js, "null");
		ist_buf_printf(&js, ",\"host\":");
		if (s->host)
			ist_buf_json_string(&js, s->host, strlen(s->host));
		else
			ist_buf_printf(&js, "null");
		ist_buf_printf(&js, ",\"offset_ns\":%" PRId64 ",\"aligned\":%s,"
		    "\"uncertainty_ns\":%" PRId64 ",\"domains\":[", s->shift,
		    s->aligned ? "true" : "false", s->uncertainty);
		for (size_t d = 0; d < s->ndom; d++) {
			struct ist_clock_fit *p = &s->dom[d];
			int64_t unc = p->n >= 2 ? (int64_t)llround(p->resid) :
			    m->o->margin_ns;
			ist_fmt_double((p->b - 1.0) * 1e6, num, sizeof(num));
			ist_buf_printf(&js, "%s{\"domain\":", d ? "," : "");
			ist_buf_json_string(&js, p->domain, strlen(p->domain));
			ist_buf_printf(&js, ",\"pairs\":%zu,"
			    "\"offset_ns\":%" PRId64 ",\"drift_ppm\":%s,"
			    "\"residual_ns\":%" PRId64 ",\"uncertainty_ns\":%"
			    PRId64 "}", p->n,
			    ist_clock_offset(p), num,
			    (int64_t)llround(p->resid), unc);
		}
		ist_buf_printf(&js, "]");
		for (size_t k = 0; k < m->ndmg; k++)
			if (m->dmg[k].seg == (long)i)
				damage_keys(m, k, &js);
		ist_buf_printf(&js, "}");
		add_source(&items, &nitems, &js);
	}
	/* inputs cut short with no segment of their own to carry it (or
	 * an already merged one, whose sources are copied): a source of
	 * their own, holding nothing */
	for (size_t k = 0; k < m->ndmg; k++) {
		long sg = m->dmg[k].seg;
		if (sg >= 0 && !m->seg[sg].sources.n)
			continue;
		js.n = 0;
		ist_buf_printf(&js, "{\"producer\":null,\"host\":null,"
		    "\"offset_ns\":0,\"aligned\":true,\"uncertainty_ns\":0,"
		    "\"domains\":[]");
		damage_keys(m, k, &js);
		ist_buf_printf(&js, "}");
		add_source(&items, &nitems, &js);
	}
	/* sorted unique pids */
	for (size_t i = 1; i < np; i++)
		for (size_t j = i; j > 0 && allp[j - 1] > allp[j]; j--) {
			int64_t t = allp[j];
			allp[j] = allp[j - 1];
			allp[j - 1] = t;
		}
	{
		size_t u = 0;
		for (size_t i = 0; i < np; i++)
			if (i == 0 || allp[i] != allp[i - 1])
				allp[u++] = allp[i];
		if (u && ist_cbor_ints(allp, u, &pids) == 0) {
			h.pids = (struct ist_blob){ (uint8_t *)pids.p, pids.n };
			IST_SET(&h, IST_F_PIDS);
		}
	}
	{
		size_t k = cbor_encode_array_start(nitems, head, sizeof(head));
		src.n = 0;
		ist_buf_append(&src, head, k);
		ist_buf_append(&src, items.p ? items.p : "", items.n);
		h.sources = (struct ist_blob){ (uint8_t *)src.p, src.n };
		IST_SET(&h, IST_F_SOURCES);
	}
	st = ist_writer_header(w, &h, err);
	ist_buf_release(&items);
	ist_buf_release(&js);
	ist_buf_release(&src);
	ist_buf_release(&pids);
	free(allp);
	return st;
}

struct emit {
	struct merger *m;
	struct ist_writer *w;
	struct ist_event *ev;
};

/* The final merge's put: the record, unpacked, into the output. */
static enum ist_status
put_event(void *ctx, const struct run *r, struct ist_error *err)
{
	struct emit *e = ctx;

	mg_unpack(e->m, r->rec, r->key, e->ev);
	return ist_writer_write(e->w, e->ev, err);
}

static enum ist_status
emit_sorted(struct merger *m, struct ist_writer *w, struct ist_error *err)
{
	struct ist_event ev;
	enum ist_status st = IST_OK;

	ist_event_init(&ev, IST_CPU_CALL);
	if (m->nruns == 0) {
		/* everything fit in memory: no temporary files */
		mg_sort_ents(m);
		for (size_t i = 0; i < m->ne && st == IST_OK; i++) {
			mg_unpack(m, m->arena + m->ents[i].off, m->ents[i].key,
			    &ev);
			st = ist_writer_write(w, &ev, err);
		}
		return st;
	}
	if ((st = mg_spill(m, err)) != IST_OK)
		return st;
	/* the sort buffers are done with: the runs' readers take over */
	free(m->arena);
	free(m->ents);
	free(m->tmp);
	m->arena = NULL;
	m->ents = m->tmp = NULL;
	if ((st = mg_runs_final(m, err)) != IST_OK)
		return st;
	{
		struct emit e = { m, w, &ev };
		st = mg_runs_merge(m->runs, m->nruns, put_event, &e, err);
	}
	return st;
}

/* Files this process has open now. */
static long
open_files(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = 0;

	if (d == NULL)
		return 16;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n - 3;           /* ., .. and the directory's own */
}

/*
 * How many spilled runs are read at once: a third of the budget in
 * readers, and as the files this process may still open allow (the runs
 * left open are about fan-in - 1 per level, a few levels: a quarter of
 * them; inputs, the output and a spool take a few), 2 to 64.
 */
static size_t
fan_in(size_t budget)
{
	size_t f = budget / 3 / mg_run_reader_bytes();
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 4096) {
		long left = (long)rl.rlim_cur - open_files() - 8;
		size_t by_fd = left > 8 ? (size_t)left / 4 : 2;
		if (f > by_fd)
			f = by_fd;
	}
	return f > 64 ? 64 : f < 2 ? 2 : f;
}

enum ist_status
ist_merge(char *const *paths, int n, int out_fd,
    const struct ist_merge_opts *o, ist_note_fn notefn, void *ctx,
    struct ist_error *err)
{
	struct merger m = { .o = o, .note = notefn, .ctx = ctx };
	struct input *in = calloc((size_t)n, sizeof(*in));
	struct ist_writer *w = NULL;
	enum ist_status st = IST_OK;
	size_t segi = 0;

	if (in == NULL)
		goto nomem;
	mg_pays_init();
	/* the sort buffer takes 20% of the budget and its index (twice, for
	 * the radix sort) 40%: about as many events each; the merge of the
	 * spilled runs a third (fan_in), the inputs' readers, the strings
	 * and the writer the rest */
	m.acap = o->memory_bytes / 10 * 2;
	if (m.acap > UINT32_MAX)
		m.acap = UINT32_MAX;
	m.cape = o->memory_bytes / 10 * 2 / sizeof(struct ent);
	m.fanin = fan_in(o->memory_bytes);
	if (m.acap < (1u << 20))
		m.acap = 1u << 20;
	if (m.cape < 1024)
		m.cape = 1024;
	if ((m.arena = malloc(m.acap)) == NULL ||
	    (m.ents = malloc(m.cape * sizeof(*m.ents))) == NULL ||
	    (m.tmp = malloc(m.cape * sizeof(*m.tmp))) == NULL)
		goto nomem;
	/* standard input is read twice: keep a copy */
	for (int i = 0; i < n; i++) {
		in[i].name = paths[i];
		in[i].path = strdup(paths[i]);
		if (strcmp(paths[i], "-") == 0) {
			char tmpl[4200];
			int fd;
			snprintf(tmpl, sizeof(tmpl), "%s/is-merge-stdin.XXXXXX",
			    o->tmpdir);
			if ((fd = mkstemp(tmpl)) < 0) {
				ist_seterr(err, IST_EIO, "cannot create a "
				    "temporary file in '%s': %s", o->tmpdir,
				    strerror(errno));
				st = IST_EIO;
				goto out;
			}
			free(in[i].path);
			in[i].path = strdup(tmpl);
			in[i].name = "<stdin>";
			in[i].spooled = true;
			for (;;) {
				char buf[65536];
				ssize_t k = read(STDIN_FILENO, buf, sizeof(buf));
				if (k < 0 && errno == EINTR)
					continue;
				if (k <= 0)
					break;
				if (mg_write_all(fd, buf, (size_t)k) != 0) {
					close(fd);
					ist_seterr(err, IST_EIO, "cannot copy "
					    "standard input to '%s': %s", tmpl,
					    strerror(errno));
					st = IST_EIO;
					goto out;
				}
			}
			close(fd);
		}
	}
	for (int i = 0; i < n; i++)
		if ((st = read_input(&m, &in[i], 1, &segi, err)) != IST_OK)
			goto out;
	align(&m);
	{
		/* nothing to move: the events sorted in pass 1 are final */
		bool remap = false;
		for (size_t i = 0; i < m.nseg; i++)
			if (m.seg[i].shift != 0 || m.seg[i].ndom > 0)
				remap = true;
		if (!remap)
			goto write;
		for (size_t i = 0; i < m.nruns; i++)
			mg_run_close(&m.runs[i]);
		free(m.runs);
		m.runs = NULL;
		m.nruns = 0;
		m.ne = m.an = 0;
	}
	for (size_t i = 0; i < m.nseg; i++) {
		struct segment *s = &m.seg[i];
		if (!s->aligned && !s->sources.n)
			note(&m, IST_NOTE_WARN, "warning: segment %zu (%s on "
			    "%s) could not be aligned exactly: its times carry "
			    "+-%" PRId64 " us", i + 1, s->producer ? s->producer :
			    "?", s->host ? s->host : "?",
			    s->uncertainty / 1000);
	}
	segi = 0;
	for (int i = 0; i < n; i++)
		if ((st = read_input(&m, &in[i], 2, &segi, err)) != IST_OK)
			goto out;
write:
	/* every string written lives in the merge's blocks to the end */
	if ((st = ist_writer_new(&w, ist_fd_sink, &out_fd,
	    &(struct ist_writer_opts){ .stable_strings = true }, err)) !=
	    IST_OK)
		goto out;
	if ((st = write_header(&m, w, err)) != IST_OK)
		goto out;
	if ((st = emit_sorted(&m, w, err)) != IST_OK)
		goto out;
	st = ist_writer_close(w, err);
	w = NULL;
	if (st == IST_OK && m.damaged) {
		st = IST_EPARTIAL;
		ist_seterr(err, st, "some inputs could not be read whole");
		err->where = IST_AT_INPUT;
	}
out:
	ist_writer_free(w);
	for (int i = 0; i < n && in; i++) {
		if (in[i].spooled && in[i].path)
			unlink(in[i].path);
		free(in[i].path);
	}
	free(in);
	for (size_t i = 0; i < m.nruns; i++)
		mg_run_close(&m.runs[i]);
	free(m.runs);
	for (size_t i = 0; i < m.nseg; i++) {
		struct segment *s = &m.seg[i];
		free(s->producer);
		free(s->host);
		free((void *)s->pids.p);
		free((void *)s->sources.p);
		for (size_t d = 0; d < s->ndom; d++)
			ist_clock_release(&s->dom[d]);
		free(s->dom);
	}
	free(m.seg);
	for (size_t i = 0; i < m.ndmg; i++)
		free(m.dmg[i].error);
	free(m.dmg);
	for (size_t i = 0; i < m.nblocks; i++)
		free(m.blocks[i]);
	free(m.blocks);
	free(m.strs);
	free(m.stab);
	free(m.tracks);
	free(m.ttab);
	free(m.map.str);
	free(m.map.trk);
	free(m.arena);
	free(m.ents);
	free(m.tmp);
	return st;
nomem:
	ist_seterr(err, IST_ENOMEM, "out of memory");
	st = IST_ENOMEM;
	goto out;
}
