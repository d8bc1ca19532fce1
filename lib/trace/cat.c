/* cat.c - the loops behind is-cat: trace -> JSON Lines, JSON Lines -> trace. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "cat.h"

enum ist_status
ist_cat_decode(struct ist_reader *r, FILE *out, struct ist_error *err)
{
	struct ist_buf b = { 0 };
	const struct ist_event *ev;
	enum ist_status st;

	for (;;) {
		st = ist_reader_next(r, &ev, err);
		if (st != IST_OK)
			break;
		b.n = 0;
		if ((st = ist_event_to_json(ev, &b, err)) != IST_OK)
			break;
		if (fwrite(b.p, 1, b.n, out) != b.n) {
			ist_seterr(err, IST_EIO, "cannot write output: %s",
			    strerror(errno));
			ist_at(err, IST_AT_OUTPUT);
			st = IST_EIO;
			break;
		}
	}
	ist_buf_release(&b);
	return st == IST_END ? IST_OK : st;
}

static bool
blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
			return false;
	return true;
}

enum ist_status
ist_cat_encode(FILE *in, const char *name, struct ist_writer *w,
    bool *have_header, ist_report_fn report, void *ctx,
    struct ist_error *err)
{
	struct ist_json_scratch *s = ist_json_scratch_new();
	enum ist_status st = IST_OK, worst = IST_OK;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned long lineno = 0;

	if (s == NULL) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	while ((n = getline(&line, &cap, in)) >= 0) {
		struct ist_event ev;
		struct ist_error e = { 0 };

		lineno++;
		if (blank(line, (size_t)n))
			continue;
		st = ist_event_from_json(line, (size_t)n, &ev, s, &e);
		if (st == IST_OK && ev.type != IST_HEADER && !*have_header) {
			struct ist_event hdr;
			ist_event_init(&hdr, IST_HEADER);
			hdr.producer = (struct ist_str){ "is-cat", 6 };
			IST_SET(&hdr, IST_F_PRODUCER);
			if ((st = ist_writer_header(w, &hdr, err)) != IST_OK)
				goto out;
			*have_header = true;
		}
		if (st == IST_OK) {
			if (ev.type == IST_HEADER)
				*have_header = true;
			st = ist_writer_write(w, &ev, &e);
			if (st == IST_EIO || st == IST_ENOMEM) {
				*err = e;
				goto out;
			}
		}
		if (st != IST_OK) {
			struct ist_error shown = e;
			snprintf(shown.msg, sizeof(shown.msg), "'%.200s':%lu: %.280s",
			    name, lineno, e.msg);
			shown.record = lineno;
			report(ctx, &shown);
			worst = IST_EINVAL;
			st = IST_OK;
		}
	}
	if (ferror(in)) {
		ist_seterr(err, IST_EIO, "cannot read '%s': %s", name,
		    strerror(errno));
		ist_at(err, IST_AT_INPUT);
		st = IST_EIO;
		goto out;
	}
	st = worst;
	if (st != IST_OK) {
		ist_seterr(err, st, "'%s': some lines were rejected", name);
		ist_at(err, IST_AT_INPUT);
	}
out:
	free(line);
	ist_json_scratch_free(s);
	return st;
}
