/*
 * term.h - a terminating signal, written out before the process dies of
 * it.  Every collector (Python's, NVTX's, CUDA's: each a shared object
 * with its own copy of term.c) follows one protocol, so that two or three
 * in one process each write what they hold and the process still dies of
 * the signal.
 *
 * A terminating signal (SIGTERM, SIGHUP, SIGINT) whose action was the
 * default: multiprocessing's Pool.terminate(), `kill`, a C program's
 * Ctrl-C.  The handler only notes it; the collector's own thread, which
 * polls ist_term_pending(), writes everything recorded and calls
 * ist_term_die(), which hands the signal to the collector whose handler
 * ours replaced (it writes its own and ends the process) or restores the
 * default and sends the signal again.  A handler of the program's own,
 * set before or after, is left alone or wins.  Each object exports
 * ist_coll_term_tag so that another can tell its handler by dladdr.
 */
#ifndef IST_TERM_H
#define IST_TERM_H

#include <pthread.h>

/* Takes the signals whose action is the default or another collector's. */
void ist_term_catch(void);
/* Gives back the actions ours replaced, where ours still holds. */
void ist_term_release(void);
/* The signal caught and not yet handled, or 0. */
int ist_term_pending(void);
/* Starts again: nothing caught, not stopped (after a fork, a restart). */
void ist_term_reset(void);
/* All is written and released: a signal handed to us by another collector
 * now takes its default action at once. */
void ist_term_stopped(void);
/* Starts fn in a collector's own thread, which takes no signals: they go
 * to the program's threads, as they did before it existed.  0 or an
 * errno from pthread_create. */
int ist_term_thread(pthread_t *t, void *(*fn)(void *));
/* After writing everything: hand the signal on, or die of it. */
_Noreturn void ist_term_die(int sig);

#endif
