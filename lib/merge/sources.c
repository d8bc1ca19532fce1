/*
 * sources.c - the merged header (is-merge): every input's source, its
 * clock alignment and any damage, and the union of the pids.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>
#include <jansson.h>

#include "merge_int.h"

int
mg_add_damage(struct merger *m, const struct input *in, const char *error,
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
void
mg_carried_damage(struct merger *m, const struct input *in,
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
		mg_note(m, IST_NOTE_WARN, "warning: '%s' was %s", in->name, msg);
		m->damaged = true;
	}
	json_decref(src);
	ist_buf_release(&b);
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

/* The source entry (formats/spec.md, header) of segment i, as JSON. */
static void
source_json(struct merger *m, size_t i, struct ist_buf *js)
{
	struct segment *s = &m->seg[i];
	char num[40];

	js->n = 0;
	ist_buf_printf(js, "{\"producer\":");
	if (s->producer)
		ist_buf_json_string(js, s->producer, strlen(s->producer));
	else
		ist_buf_printf(js, "null");
	ist_buf_printf(js, ",\"host\":");
	if (s->host)
		ist_buf_json_string(js, s->host, strlen(s->host));
	else
		ist_buf_printf(js, "null");
	ist_buf_printf(js, ",\"offset_ns\":%" PRId64 ",\"aligned\":%s,"
	    "\"uncertainty_ns\":%" PRId64 ",\"domains\":[", s->shift,
	    s->aligned ? "true" : "false", s->uncertainty);
	/* its stream's fits: a flight recorder's frames share them */
	for (size_t d = 0; d < m->seg[s->clk].ndom; d++) {
		struct ist_clock_fit *p = &m->seg[s->clk].dom[d];
		int64_t unc = p->n >= 2 ? (int64_t)llround(p->unc) :
		    m->o->margin_ns;
		ist_fmt_double((p->b - 1.0) * 1e6, num, sizeof(num));
		ist_buf_printf(js, "%s{\"domain\":", d ? "," : "");
		ist_buf_json_string(js, p->domain, strlen(p->domain));
		ist_buf_printf(js, ",\"pairs\":%zu,\"offset_ns\":%" PRId64
		    ",\"drift_ppm\":%s,\"residual_ns\":%" PRId64
		    ",\"uncertainty_ns\":%" PRId64 "}", p->n,
		    ist_clock_offset(p), num, (int64_t)llround(p->resid), unc);
		/* said when there were: the keys are absent otherwise */
		if (p->steps || p->outliers) {
			js->n--;    /* the map's closing brace */
			ist_buf_printf(js, ",\"steps\":%zu,\"outliers\":%zu}",
			    p->steps, p->outliers);
		}
	}
	ist_buf_printf(js, "]");
	for (size_t k = 0; k < m->ndmg; k++)
		if (m->dmg[k].seg == (long)i)
			damage_keys(m, k, js);
	ist_buf_printf(js, "}");
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* pids sorted and unique into a CBOR array; false when there are none */
static bool
pids_cbor(int64_t *allp, size_t np, struct ist_buf *out)
{
	size_t u = 0;

	if (np == 0)
		return false;
	qsort(allp, np, sizeof(*allp), cmp_i64);
	for (size_t i = 0; i < np; i++)
		if (i == 0 || allp[i] != allp[i - 1])
			allp[u++] = allp[i];
	return u && ist_cbor_ints(allp, u, out) == 0;
}

/* The merged header: every source, its alignment and its clock fits. */
enum ist_status
mg_write_header(struct merger *m, struct ist_writer *w, struct ist_error *err)
{
	struct ist_buf items = { 0 }, js = { 0 }, src = { 0 }, pids = { 0 };
	struct ist_event h;
	struct segment *ref = m->ref >= 0 ? &m->seg[m->ref] : NULL;
	size_t nitems = 0, np = 0, k;
	enum ist_status st;
	uint8_t head[9];
	int64_t *allp = NULL;

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
		(void)ist_pids(m->seg[i].pids, &allp, &np);
		if (m->seg[i].sources.n) {
			nitems += array_items(m->seg[i].sources, &items);
			continue;
		}
		source_json(m, i, &js);
		add_source(&items, &nitems, &js);
	}
	/* inputs cut short with no segment of their own to carry it (or
	 * an already merged one, whose sources are copied): a source of
	 * their own, holding nothing */
	for (k = 0; k < m->ndmg; k++) {
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
	if (pids_cbor(allp, np, &pids)) {
		h.pids = (struct ist_blob){ (uint8_t *)pids.p, pids.n };
		IST_SET(&h, IST_F_PIDS);
	}
	k = cbor_encode_array_start(nitems, head, sizeof(head));
	ist_buf_append(&src, head, k);
	ist_buf_append(&src, items.p ? items.p : "", items.n);
	h.sources = (struct ist_blob){ (uint8_t *)src.p, src.n };
	IST_SET(&h, IST_F_SOURCES);
	st = ist_writer_header(w, &h, err);
	ist_buf_release(&items);
	ist_buf_release(&js);
	ist_buf_release(&src);
	ist_buf_release(&pids);
	free(allp);
	return st;
}

