/* cat.h - is-cat's loops, in the library so that the tool stays thin. */
#ifndef IST_CAT_H
#define IST_CAT_H

#include <stdio.h>
#include "ist.h"

typedef void (*ist_report_fn)(void *ctx, const struct ist_error *err);

/* Writes every record of r as JSON Lines; IST_OK at the end of input. */
enum ist_status ist_cat_decode(struct ist_reader *r, FILE *out,
    struct ist_error *err);

/*
 * Encodes JSON Lines from in.  A bad line is reported through report
 * ("'name':LINE: reason"), skipped, and makes the result IST_EINVAL; an
 * output error stops at once.  *have_header tracks whether a header was
 * written (a default one is written before the first event otherwise).
 */
enum ist_status ist_cat_encode(FILE *in, const char *name,
    struct ist_writer *w, bool *have_header, ist_report_fn report, void *ctx,
    struct ist_error *err);

/*
 * Output files: written to a temporary file beside the target and renamed
 * over it by ist_output_commit(), so that a failed run never leaves a
 * half-written file that looks good.  path NULL or "-" means stdout.  A
 * binary output (a trace) is created 0600, a text output as the umask
 * says.
 */
struct ist_output {
	int fd;
	char *path, *tmp;
};
enum ist_status ist_output_open(struct ist_output *o, const char *path,
    bool binary, struct ist_error *err);
enum ist_status ist_output_commit(struct ist_output *o, struct ist_error *err);
void ist_output_abort(struct ist_output *o);
/* Abandons the output after err, naming it in err when writing it was what
 * failed ("cannot write 'F': No space left on device"); returns err->msg. */
const char *ist_output_fail(struct ist_output *o, struct ist_error *err);

#endif
