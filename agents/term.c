/* term.c - a terminating signal, written out first (term.h). */
#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "term.h"

static volatile sig_atomic_t term_sig;
static volatile sig_atomic_t term_done;  /* stopped: all is written */
static const int term_sigs[] = { SIGTERM, SIGHUP, SIGINT };
#define NSIGS (sizeof(term_sigs) / sizeof(*term_sigs))
static void (*term_prev[NSIGS])(int);   /* another collector's handler */

__attribute__((visibility("default"))) const char ist_coll_term_tag[] =
    "inferscope collector";

static void
set_action(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(sig, &sa, NULL);
}

static void
on_term(int sig)
{
	if (term_done) {
		/* stopped, and another collector handed the signal on: the
		 * default action, now */
		set_action(sig, SIG_DFL);
		raise(sig);
		return;
	}
	term_sig = sig;
}

/* Whether handler h lives in another object that holds a collector. */
static bool
collector_handler(void (*h)(int))
{
	Dl_info di;
	void *so;
	bool yes = false;

	if (h == SIG_DFL || h == SIG_IGN || h == on_term ||
	    dladdr((void *)(uintptr_t)h, &di) == 0 || di.dli_fname == NULL)
		return false;
	if ((so = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) != NULL) {
		yes = dlsym(so, "ist_coll_term_tag") != NULL;
		dlclose(so);
	}
	return yes;
}

void
ist_term_catch(void)
{
	for (size_t i = 0; i < NSIGS; i++) {
		struct sigaction old;
		if (sigaction(term_sigs[i], NULL, &old) != 0 ||
		    (old.sa_flags & SA_SIGINFO))
			continue;
		if (old.sa_handler == SIG_DFL || old.sa_handler == on_term) {
			set_action(term_sigs[i], on_term);
		} else if (collector_handler(old.sa_handler)) {
			term_prev[i] = old.sa_handler;
			set_action(term_sigs[i], on_term);
		}
	}
}

void
ist_term_release(void)
{
	for (size_t i = 0; i < NSIGS; i++) {
		struct sigaction cur;
		if (sigaction(term_sigs[i], NULL, &cur) == 0 &&
		    !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == on_term)
			set_action(term_sigs[i], term_prev[i] ? term_prev[i] :
			    SIG_DFL);
	}
}

int
ist_term_pending(void)
{
	return term_sig;
}

void
ist_term_reset(void)
{
	term_sig = 0;
	term_done = 0;
}

void
ist_term_stopped(void)
{
	term_done = 1;
}

int
ist_term_thread(pthread_t *t, void *(*fn)(void *))
{
	sigset_t all, was;
	int e;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &was);
	e = pthread_create(t, NULL, fn, NULL);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	return e;
}

void
ist_term_die(int sig)
{
	void (*prev)(int) = NULL;

	for (size_t i = 0; i < NSIGS; i++)
		if (term_sigs[i] == sig)
			prev = term_prev[i];
	if (prev) {
		/* the other collector writes its own and ends the process
		 * (at once when it has stopped); the wait is a safety net */
		prev(sig);
		sleep(3);
	}
	set_action(sig, SIG_DFL);
	kill(getpid(), sig);
	sleep(1);          /* the signal is on its way; if every thread */
	_exit(128 + sig);  /* blocks it now, leave as a shell would say */
}
