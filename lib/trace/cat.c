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

/*
 * The next line of in into b (its newline kept, NUL bytes too): 0, -1 at
 * the end, -2 out of memory.  A line over IST_MAX_JSON_LINE is read to
 * its end but not kept: *toolong.
 */
static int
next_line(FILE *in, struct ist_buf *b, bool *toolong)
{
	int c = EOF;

	b->n = 0;
	*toolong = false;
	while ((c = getc_unlocked(in)) != EOF) {
		if (b->n == b->cap && !*toolong &&
		    ist_buf_reserve(b, b->cap ? b->cap : 4096) != 0)
			return -2;
		if (!*toolong)
			b->p[b->n++] = (char)c;
		if (b->n >= IST_MAX_JSON_LINE && !*toolong) {
			*toolong = true;
			b->n = 0;
		}
		if (c == '\n')
			break;
	}
	return c == EOF && b->n == 0 && !*toolong ? -1 : 0;
}

enum ist_status
ist_cat_encode(FILE *in, const char *name, struct ist_writer *w,
    bool *have_header, ist_note_fn note, void *ctx,
    struct ist_error *err)
{
	struct ist_json_scratch *s = ist_json_scratch_new();
	enum ist_status st = IST_OK, worst = IST_OK;
	struct ist_buf lb = { 0 };
	bool toolong;
	int k;
	unsigned long lineno = 0;

	if (s == NULL) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	while ((k = next_line(in, &lb, &toolong)) == 0) {
		struct ist_event ev;
		struct ist_error e = { 0 };

		lineno++;
		if (toolong) {
			ist_seterr(&e, IST_ELIMIT, "the line is over the %u MiB "
			    "a line may take", IST_MAX_JSON_LINE >> 20);
			st = IST_ELIMIT;
		} else if (blank(lb.p, lb.n)) {
			continue;
		} else {
			st = ist_event_from_json(lb.p, lb.n, &ev, s, &e);
		}
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
			char shown[IST_ERROR_MAX];
			snprintf(shown, sizeof(shown), "'%.200s':%lu: %.280s",
			    name, lineno, e.msg);
			note(ctx, IST_NOTE_ERROR, shown);
			worst = IST_EINVAL;
			st = IST_OK;
		}
	}
	if (k == -2) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		st = IST_ENOMEM;
		goto out;
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
	ist_buf_release(&lb);
	ist_json_scratch_free(s);
	return st;
}
