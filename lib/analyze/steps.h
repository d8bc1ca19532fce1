/*
 * steps.h - a program's steps: the unit of work it repeats, found in a
 * merged trace (steps.c), for analysis windows by step (is-analyze --from
 * step:N) and --skip-warmup.
 */
#ifndef IST_STEPS_H
#define IST_STEPS_H

#include <stdbool.h>
#include <stddef.h>
#include "ist.h"

struct ist_step {
	int64_t start, end;
};

struct ist_steps;

/*
 * How a step's occurrences make its steps.  A function that a loop calls
 * for each of its items, an iterator's __next__ (by its name) or a
 * generator (its runs yield: the trace's `yielded`), makes the loop's
 * iterations its steps, from one call to the next (what the loop's body
 * runs included); a call that ends the loop (ist_steps_loop_end) begins
 * none, and the last call of a trace, whose iteration has no end in it, is
 * none either.  A call made by builtins.next (next(it)), not by a loop, is
 * passed over.
 */
enum ist_step_loop {
	IST_LOOP_NONE,           /* each occurrence is a step */
	IST_LOOP_NEXT,           /* an iterator's __next__ */
	IST_LOOP_GEN,            /* a generator's runs */
};
bool ist_steps_iterator(const char *name, size_t n);
/* ev is a call of builtins.next: an iterator's call inside is no loop's */
bool ist_steps_next_call(const struct ist_event *ev);
/* ev, a loop's call, ends it, no iteration beginning: an iterator's
 * __next__ that raised (StopIteration), a generator's run that did not
 * yield (it returned or raised) */
bool ist_steps_loop_end(const struct ist_event *ev, int loop);

/* name: the step's name (--step), or NULL to find it. */
enum ist_status ist_steps_new(struct ist_steps **out, const char *name,
    struct ist_error *err);
/* The first pass: every event, in time order. */
enum ist_status ist_steps_add(struct ist_steps *s, const struct ist_event *ev,
    struct ist_error *err);
/* The same, the name's id given by the caller's own interner (one id for
 * each distinct name), so that the name is not hashed twice; an
 * ist_steps takes every name by one of the two. */
enum ist_status ist_steps_add_id(struct ist_steps *s,
    const struct ist_event *ev, uint64_t name_id, struct ist_error *err);
/* After the first pass: the step's name, or NULL when nothing recurs. */
const char *ist_steps_choose(struct ist_steps *s);
/* While the first pass goes on: the step ist_steps_choose() would choose
 * if it ended now, its process, thread and record type (NULL: none yet).
 * It chooses nothing; the name lasts until the next ist_steps_add. */
const char *ist_steps_peek(const struct ist_steps *s, int64_t *pid,
    int64_t *tid, enum ist_type *type, int64_t *line, int *loop);
/* The second pass: every event again, collecting the steps. */
enum ist_status ist_steps_collect(struct ist_steps *s,
    const struct ist_event *ev, struct ist_error *err);
/* The steps (*n of them, in time order), their name and record type. */
const struct ist_step *ist_steps_get(const struct ist_steps *s, size_t *n,
    const char **name, enum ist_type *type);
/* The chosen step's process, thread, record type, line (a function's,
 * which tells it from others of its name; 0 for a scope or range) and
 * loop (enum ist_step_loop) */
void ist_steps_chosen(const struct ist_steps *s, int64_t *pid, int64_t *tid,
    enum ist_type *type, int64_t *line, int *loop);
/* The chosen function's file (NULL: a scope or range, or none chosen) */
const char *ist_steps_file(const struct ist_steps *s);
/* How many times the chosen step occurs (the first pass's count) */
uint64_t ist_steps_found(const struct ist_steps *s);
/* How many more of a scope's or range's occurrences began while one of
 * those was open on its thread, and are no steps of their own */
uint64_t ist_steps_overlapped(const struct ist_steps *s);
/* How many steps are warm-up: the first ones, until one takes at most 1.5
 * times the median step (never all of them). */
size_t ist_steps_warmup(const struct ist_steps *s);
/* Both passes over the trace file at path (read twice: a file, not a
 * pipe). */
enum ist_status ist_steps_scan(const char *path, const char *name,
    struct ist_steps **out, struct ist_error *err);
void ist_steps_free(struct ist_steps *s);

#endif
