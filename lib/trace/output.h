/* output.h - output files that appear whole or not at all. */
#ifndef IST_OUTPUT_H
#define IST_OUTPUT_H

#include <stdbool.h>
#include "ist.h"

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
/* Whether fd is a pipe: what is written there is read at once by the next
 * tool, on this machine, and a trace is stored there rather than
 * compressed (ist_writer_opts.store): compressing it cost the pipeline
 * is-merge | is-analyze | is-report two compressions and two
 * decompressions */
bool ist_output_is_pipe(int fd);

#endif
