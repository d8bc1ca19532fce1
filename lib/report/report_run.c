/* report_run.c - is-report's pass over a trace. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "analysis_io.h"
#include "rules.h"
#include "internal.h"
#include "report.h"
#include "report_int.h"

/* The report's own input was cut short: the analysis says so. */
static void
say_truncated(json_t *an, uint64_t bytes)
{
	json_t *q = json_object_get(an, "data_quality");
	char m[160];

	snprintf(m, sizeof(m), "the trace is truncated: its last %llu bytes, "
	    "a frame cut short, were not read whole", (unsigned long long)bytes);
	if (q && json_integer_value(json_object_get(q, "truncated_bytes")) ==
	    0) {
		json_object_set_new(q, "truncated_bytes",
		    json_integer((json_int_t)bytes));
		json_array_append_new(json_object_get(q, "notes"),
		    json_string(m));
	}
}

/* The analysis in format f: into out, or (Perfetto) straight to out_fd. */
static enum ist_status
render(const struct ist_report_opts *o, json_t *an, struct ist_timeline *tl,
    struct ist_perfetto **pf, int out_fd, struct ist_buf *out,
    struct ist_error *err)
{
	enum ist_status st;

	switch (o->format) {
	case IST_REPORT_TEXT:
		return ist_report_text(an, tl, &o->text, out, err);
	case IST_REPORT_MD:
		return ist_report_markdown(an, out, err);
	case IST_REPORT_HTML:
		return ist_report_html(an, tl, out, err);
	case IST_REPORT_JSON:
		return ist_report_json(an, out, err);
	case IST_REPORT_PERFETTO:
		if (*pf == NULL &&
		    (st = ist_perfetto_new(pf, out_fd, &o->perfetto, err)) !=
		    IST_OK)
			return st;
		return ist_perfetto_finish(*pf, an, err);
	}
	ist_seterr(err, IST_EINVAL, "unknown report format %d",
	    (int)o->format);
	return IST_EINVAL;
}

enum ist_status
ist_report_trace(struct ist_reader *r, const struct ist_report_opts *o,
    int out_fd, struct ist_report_result *res, struct ist_error *err)
{
	enum ist_report_format f = o->format;
	bool promised = false, seen_header = false;
	struct ist_analyzer *a = NULL;
	struct ist_timeline *tl = NULL;
	struct ist_perfetto *pf = NULL;
	struct ist_reader_stats rs;
	struct ist_buf out = { 0 };
	struct ist_error e2 = { 0 };
	const struct ist_event *ev;
	json_t *found = NULL, *an = NULL;
	enum ist_status st, rst;
	uint64_t nev = 0;
	int werr;

	*res = (struct ist_report_result){ 0 };
	if ((st = ist_analyzer_new(&a, o->rules, err)) != IST_OK ||
	    (st = ist_again_begin(a, o->again, err)) != IST_OK) {
		ist_analyzer_free(a);
		return st;
	}
	ist_analyzer_reader(a, r);
	if ((f == IST_REPORT_HTML || f == IST_REPORT_TEXT) && (tl = ist_timeline_new()) == NULL) {
		st = IST_ENOMEM;
		ist_seterr(err, st, "out of memory");
		goto out;
	}
	if (tl && f == IST_REPORT_HTML)
		tl->detail = true;
	while ((rst = ist_reader_next(r, &ev, err)) == IST_OK) {
		if (o->progress && (++nev & 0xffff) == 0) {
			ist_reader_stats(r, &rs);
			o->progress(o->progress_ctx, rs.at_bytes, nev,
			    ist_perfetto_bytes(pf));
		}
		if (ev->type == IST_ANALYSIS) {
			json_decref(found);
			found = ist_analysis_of_event(ev);
			continue;
		}
		if (ev->type == IST_HEADER && !seen_header) {
			seen_header = true;
			if (o->on_header)
				o->on_header(o->ctx, IST_HAS(ev,
				    IST_F_ANALYSIS_VERSION));
		}
		if (ev->type == IST_HEADER && !o->analyse &&
		    IST_HAS(ev, IST_F_ANALYSIS_VERSION)) {
			promised = true;
			/* only the analysis is wanted from here on */
			if (o->skim && tl == NULL && f != IST_REPORT_PERFETTO) {
				ist_reader_skim(r, true);
				res->skimmed = true;
			}
		}
		if (!promised && (st = ist_analyzer_add(a, ev, &e2)) != IST_OK)
			goto fail;
		if (tl && ist_timeline_add(tl, ev)) {
			st = IST_ENOMEM;
			ist_seterr(&e2, st, "out of memory");
			goto fail;
		}
		if (f == IST_REPORT_PERFETTO) {
			if (pf == NULL && (st = ist_perfetto_new(&pf, out_fd,
			    &o->perfetto, &e2)) != IST_OK)
				goto fail;
			res->wrote = true;
			if ((st = ist_perfetto_add(pf, ev, &e2)) != IST_OK)
				goto fail;
		}
	}
	ist_reader_stats(r, &rs);
	ist_analyzer_reader(a, NULL);
	if (rs.segments == 0) {
		st = rst;
		goto out;
	}
	if (found) {
		an = found;
		found = NULL;
		res->from_trace = true;
	} else if (promised) {
		res->analysis_missing = true;
		if (f != IST_REPORT_PERFETTO) {
			st = rst == IST_END ? IST_ECORRUPT : rst;
			ist_seterr(&e2, st, "the trace ends without the "
			    "analysis its header promises%s%s",
			    rst == IST_END ? "" : ": ",
			    rst == IST_END ? "" : err->msg);
			goto fail;
		}
	} else {
		if (rst != IST_END && rst != IST_TRUNCATED)
			ist_analyzer_read_error(a, err->msg);
		if ((st = ist_again_pass(a, o->again, &e2)) != IST_OK ||
		    (st = ist_analyzer_finish(a, &rs, &an, &e2)) != IST_OK)
			goto fail;
	}
	if (rs.truncated_bytes > 0 && an)
		say_truncated(an, rs.truncated_bytes);
	if ((st = render(o, an, tl, &pf, out_fd, &out, &e2)) != IST_OK)
		goto fail;
	res->wrote = true;
	if (out.n && (werr = ist_fd_sink(&out_fd, out.p, out.n)) != 0) {
		st = IST_EIO;
		ist_seterr(&e2, st, "cannot write: %s", strerror(werr));
		e2.sys_errno = werr;
		e2.where = IST_AT_OUTPUT;
		goto fail;
	}
	st = rst == IST_END ? IST_OK : rst;
	goto out;
fail:
	*err = e2;
out:
	json_decref(found);
	if (res->wrote)
		res->analysis = an;
	else
		json_decref(an);
	ist_buf_release(&out);
	ist_perfetto_free(pf);
	ist_timeline_free(tl);
	ist_analyzer_free(a);
	return st;
}
