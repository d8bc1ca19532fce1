/* cat.h - is-cat's loops, in the library so that the tool stays thin. */
#ifndef IST_CAT_H
#define IST_CAT_H

#include <stdio.h>
#include "ist.h"

/* Writes every record of r as JSON Lines; IST_OK at the end of input. */
enum ist_status ist_cat_decode(struct ist_reader *r, FILE *out,
    struct ist_error *err);

/*
 * Encodes JSON Lines from in.  A bad line is reported through note, at
 * IST_NOTE_ERROR ("'name':LINE: reason"), skipped, and makes the result
 * IST_EINVAL; an output error stops at once.  *have_header tracks whether a header was
 * written (a default one is written before the first event otherwise).
 */
enum ist_status ist_cat_encode(FILE *in, const char *name,
    struct ist_writer *w, bool *have_header, ist_note_fn note, void *ctx,
    struct ist_error *err);

#endif
