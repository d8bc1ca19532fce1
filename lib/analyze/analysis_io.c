/* analysis_io.c - is-analyze's pass: trace in, trace and analysis out. */
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "analyze_int.h"
#include "analysis_io.h"
#include "rules.h"
#include "internal.h"
#include "rules/rules.h"

bool
ist_analysis_damage_line(const json_t *an, size_t i, bool own, char *m,
    size_t n)
{
	const json_t *q = json_object_get(an, "data_quality"), *d, *v;
	const json_t *dmg = json_object_get(q, "damaged_inputs");
	long long cut = ist_jint(q, "truncated_bytes");
	size_t k;

	if (n == 0)
		return false;
	json_array_foreach(dmg, k, v)
		cut -= ist_jint(v, "truncated_bytes");
	if ((d = json_array_get(dmg, i)) == NULL) {
		i -= json_array_size(dmg);
		if (own && cut > 0 && i-- == 0)
			snprintf(m, n, "analysed from a truncated trace: its "
			    "last %lld bytes were not read whole", cut);
		else if (own && *ist_jstr(q, "read_error") && i == 0)
			snprintf(m, n, "analysed from a damaged trace: %s",
			    ist_jstr(q, "read_error"));
		else
			return false;
		ist_terminal_safe(m);
	} else {
		ist_damage_text(m, n, ist_jstr(d, "input"), ist_jstr(d,
		    "error"), ist_jint(d, "truncated_bytes"));
	}
	return true;
}

char *
ist_analysis_dumps(const json_t *an)
{
	return json_dumps(an, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
}

enum ist_status
ist_write_analysis(struct ist_writer *w, const json_t *an,
    struct ist_error *err)
{
	char *text = json_dumps(an, JSON_COMPACT | JSON_REAL_PRECISION(17));
	struct ist_buf cbor = { 0 };
	struct ist_event ev;
	enum ist_status st;

	if (text == NULL) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	st = ist_json_text_to_cbor(text, strlen(text), &cbor, err);
	free(text);
	/* first in a frame of its own, where a skimming reader looks */
	if (st == IST_OK)
		st = ist_writer_flush(w, err);
	if (st == IST_OK) {
		ist_event_init(&ev, IST_ANALYSIS);
		ev.data = (struct ist_blob){ (const uint8_t *)cbor.p, cbor.n };
		IST_SET(&ev, IST_F_DATA);
		st = ist_writer_write(w, &ev, err);
	}
	ist_buf_release(&cbor);
	return st;
}

json_t *
ist_analysis_of_event(const struct ist_event *ev)
{
	struct ist_buf b = { 0 };
	struct ist_error e;
	json_t *j = NULL;

	if (ist_cbor_to_json(ev->data, &b, &e) == IST_OK)
		j = json_loadb(b.p, b.n, 0, NULL);
	ist_buf_release(&b);
	return j;
}

enum ist_status
ist_again_begin(struct ist_analyzer *a, const struct ist_again *again,
    struct ist_error *err)
{
	enum ist_status st = again && again->step ?
	    ist_analyzer_step(a, again->step, err) : IST_OK;

	if (st == IST_OK)
		an_ahead_begin(a, again);
	return st;
}

enum ist_status
ist_again_pass(struct ist_analyzer *a, const struct ist_again *again,
    struct ist_error *err)
{
	struct ist_reader *r = NULL;
	const struct ist_event *ev;
	struct ist_error e = { 0 };
	enum ist_status st = IST_OK;
	int fd;

	if (again == NULL || again->open == NULL ||
	    !ist_analyzer_wants_again(a) || (fd = again->open(again->ctx)) < 0)
		return IST_OK;
	if (ist_reader_new(&r, ist_fd_source, &fd, "", &e) == IST_OK) {
		/* read ahead too: the descriptor is this call's alone */
		if (!again->one_thread)
			ist_reader_ahead(r);
		ist_analyzer_reader(a, r);
		while (ist_reader_next(r, &ev, &e) == IST_OK)
			if ((st = ist_analyzer_again(a, ev, err)) != IST_OK)
				break;
		ist_analyzer_reader(a, NULL);
		ist_reader_free(r);
	}
	close(fd);
	return st;
}

int
ist_again_path(void *path)
{
	return open(path, O_RDONLY | O_CLOEXEC);
}

int
ist_again_path_follow(void *path, uint64_t *base)
{
	*base = 0;
	return open(path, O_RDONLY | O_CLOEXEC);
}

static bool
kept_in_summary(enum ist_type t)
{
	return t == IST_HEADER || t == IST_PROCESS || t == IST_THREAD ||
	    t == IST_DEVICE || t == IST_LOSS;
}

/*
 * The trace out, but for --summary: each frame's records go out as they
 * came (ist_writer_raw_frame), not decoded and encoded again, but for its
 * header, written anew with the promise of an analysis, and any earlier
 * analysis, dropped.  A frame is handed over as the reader leaves it.
 */
struct through {
	struct ist_writer *w;
	struct ist_reader *r;
	struct ist_event h;     /* the frame's header, with the promise */
	size_t hdr_len;         /* its bytes at the frame's start; 0: none */
	struct span { size_t off, len; } *drop;  /* earlier analyses */
	uint32_t ndrop, dcap;
	struct ist_buf keep;
	enum ist_status st;
	struct ist_error err;
};

static void
through_frame(void *ctx, const uint8_t *p, size_t n)
{
	struct through *t = ctx;
	const uint8_t *q = p + t->hdr_len;
	size_t len = n - t->hdr_len, at = t->hdr_len, zn;
	const void *z;

	if (t->st != IST_OK)
		goto out;
	if (t->hdr_len && (t->st = ist_writer_header(t->w, &t->h, &t->err)) !=
	    IST_OK)
		goto out;
	if (t->ndrop) {
		t->keep.n = 0;
		for (uint32_t i = 0; i < t->ndrop; i++) {
			if (ist_buf_append(&t->keep, p + at, t->drop[i].off - at))
				goto nomem;
			at = t->drop[i].off + t->drop[i].len;
		}
		if (ist_buf_append(&t->keep, p + at, n - at))
			goto nomem;
		q = (const uint8_t *)t->keep.p;
		len = t->keep.n;
	}
	if (len > 0 && !t->hdr_len && !t->ndrop &&
	    ist_reader_frame_z(t->r, &z, &zn))
		/* unchanged: its compressed bytes as they came */
		t->st = ist_writer_raw_frame_z(t->w, q, len, z, zn, &t->err);
	else if (len > 0)
		t->st = ist_writer_raw_frame(t->w, q, len, &t->err);
	goto out;
nomem:
	t->st = IST_ENOMEM;
	ist_seterr(&t->err, IST_ENOMEM, "out of memory");
out:
	t->hdr_len = 0;
	t->ndrop = 0;
}

/* What the frame being read holds that does not go out as it came. */
static enum ist_status
through_event(struct through *t, struct ist_reader *r,
    const struct ist_event *ev)
{
	size_t off, len;

	ist_reader_span(r, &off, &len);
	if (ev->type == IST_HEADER) {
		t->h = *ev;
		t->h.analysis_version = IST_ANALYSIS_VERSION;
		IST_SET(&t->h, IST_F_ANALYSIS_VERSION);
		t->hdr_len = off + len;
	} else if (ev->type == IST_ANALYSIS) {
		struct span *d = an_push((void **)&t->drop, &t->ndrop,
		    &t->dcap, sizeof(*d));
		if (d == NULL) {
			ist_seterr(&t->err, IST_ENOMEM, "out of memory");
			return t->st = IST_ENOMEM;
		}
		*d = (struct span){ off, len };
	}
	return t->st;
}

enum ist_status
ist_analyze_trace(struct ist_reader *r, struct ist_writer *w, bool summary,
    const struct ist_rules *rules, const struct ist_window *window,
    const struct ist_again *again, json_t **out, struct ist_error *err)
{
	struct ist_analyzer *a = NULL;
	const struct ist_event *ev;
	struct ist_reader_stats rs;
	struct ist_error we = { 0 };
	enum ist_status st, rst;
	json_t *found = NULL;
	struct through t = { 0 };

	*out = NULL;
	if ((st = ist_analyzer_new(&a, rules, err)) != IST_OK)
		return st;
	ist_analyzer_reader(a, r);
	if ((st = ist_again_begin(a, again, err)) != IST_OK)
		goto fail;
	if (w && !summary) {
		t.w = w;
		t.r = r;
		ist_reader_on_frame(r, through_frame, &t);
	}
	/* the records split into tokens on a thread of their own, while this
	 * one decodes and analyses (after on_frame: each frame's compressed
	 * copy comes with it); nothing, once records were read */
	if (again == NULL || !again->one_thread)
		ist_reader_ahead(r);
	if (window && window->at)
		ist_analyzer_window_at(a, window->from, window->to,
		    json_incref(window->how));
	else if (window)
		ist_analyzer_window(a, window->rel[0], window->rel[1]);
	while ((rst = ist_reader_next(r, &ev, err)) == IST_OK) {
		if (t.w && through_event(&t, r, ev) != IST_OK)
			goto through_fail;
		if (ev->type == IST_ANALYSIS) {
			/* kept in case there is nothing to analyse again (a
			 * --summary trace) */
			json_decref(found);
			found = ist_analysis_of_event(ev);
			continue;
		}
		if ((st = ist_analyzer_add(a, ev, err)) != IST_OK)
			goto fail;
		if (w == NULL || t.w || ev->type == IST_ANALYSIS ||
		    (summary && !kept_in_summary(ev->type)))
			continue;
		if (ev->type == IST_HEADER) {
			/* the promise is-report relies on to skip analysing:
			 * this segment ends with the analysis */
			struct ist_event h = *ev;
			h.analysis_version = IST_ANALYSIS_VERSION;
			IST_SET(&h, IST_F_ANALYSIS_VERSION);
			st = ist_writer_header(w, &h, &we);
		} else {
			st = ist_writer_write_from(w, ev,
			    ist_reader_string_ids(r), &we);
		}
		if (st != IST_OK)
			goto wfail;
	}
	ist_reader_on_frame(r, NULL, NULL);
	if (t.st != IST_OK)
		goto through_fail;
	ist_reader_stats(r, &rs);
	ist_analyzer_reader(a, NULL);
	if (rst != IST_END && rst != IST_TRUNCATED)
		ist_analyzer_read_error(a, err->msg);
	if ((st = ist_again_pass(a, again, &we)) != IST_OK ||
	    (st = ist_analyzer_finish(a, &rs, out, &we)) != IST_OK)
		goto wfail;
	if (found && json_integer_value(json_object_get(json_object_get(*out,
	    "run"), "wall_ns")) == 0) {
		json_decref(*out);
		*out = found;
		found = NULL;
	}
	json_decref(found);
	ist_analyzer_free(a);
	free(t.drop);
	ist_buf_release(&t.keep);
	return rst == IST_END ? IST_OK : rst;
through_fail:
	st = t.st;
	we = t.err;
wfail:
	*err = we;
fail:
	ist_reader_on_frame(r, NULL, NULL);
	free(t.drop);
	ist_buf_release(&t.keep);
	json_decref(found);
	json_decref(*out);
	*out = NULL;
	ist_analyzer_free(a);
	return st;
}
