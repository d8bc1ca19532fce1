/*
 * ahead.c - the steps' second pass, read while the first still reads.
 *
 * The steps' measure (stepwork.c) needs the step, which only the whole
 * first pass names, and then reads the trace again.  That second reading
 * waits for nothing but the name: so while the first pass goes on, the
 * step it would choose so far is looked at when its event count doubles,
 * and once the same one leads at two of these looks, a thread of its own
 * reads the trace from its start (the file, or the copy the first pass
 * keeps of a pipe, as far as it is written) and measures that step.  At
 * the first pass's end, when the step chosen is that one, the pass it made
 * is the second pass, event for event: nothing is read again.  When it is
 * not (another step led by then), or when a step was replayed with GPU
 * work (the replays of pinned copies and CUDA graphs take their bases from
 * the whole first pass), it is dropped and the trace is read again as
 * before.  A new leader stops it and starts another, three times at most.
 *
 * It shares nothing with the first pass while it runs: its own reader,
 * its own names (an_names), its own stepwork; the first pass reads its
 * stop flag only.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyze_int.h"
#include "analysis_io.h"
#include "steps.h"

#define FIRST_LOOK (1u << 14)    /* events before the first look */
#define MAX_STARTS 3

struct who {
	char *name;              /* NULL: none */
	int64_t pid, tid;
	enum ist_type type;
};

struct follower {
	pthread_t th;
	atomic_bool stop;        /* set by the first pass: give up */
	atomic_bool final;       /* set by the first pass: it has read all
	                          * there is, so what is written is all */
	bool failed;             /* stopped, or could not read what the
	                          * first pass read */
	const struct ist_again *again;
	int fd;
	uint64_t base, off;
	struct who who;
	struct stepwork *sw;
};

struct an_ahead {
	const struct ist_again *again;
	int starts;
	struct who last;         /* the leader at the last look */
	struct follower *f;      /* reading, or NULL */
};

static bool
who_is(const struct who *w, const char *name, int64_t pid, int64_t tid,
    enum ist_type type)
{
	return w->name && name && strcmp(w->name, name) == 0 &&
	    w->pid == pid && w->tid == tid && w->type == type;
}

/* An ist_source_fn: the trace's bytes as the first pass has them */
static long
follow_source(void *ctx, void *buf, size_t n)
{
	struct follower *f = ctx;
	const struct ist_again *g = f->again;

	for (;;) {
		long avail;
		ssize_t k;
		if (atomic_load_explicit(&f->stop, memory_order_relaxed))
			goto fail;
		avail = g->more ? g->more(g->ctx, f->off) : (long)n;
		if (avail == IST_AGAIN_LATER) {
			struct timespec ts = { 0, 200000 };
			if (atomic_load_explicit(&f->final,
			    memory_order_acquire)) {
				/* nothing came since the first pass ended */
				if ((avail = g->more(g->ctx, f->off)) ==
				    IST_AGAIN_LATER)
					return 0;
			} else {
				nanosleep(&ts, NULL);
				continue;
			}
		}
		if (avail == 0)
			return 0;
		if (avail < 0)
			goto fail;
		if ((size_t)avail < n)
			n = (size_t)avail;
		k = pread(f->fd, buf, n, (off_t)(f->base + f->off));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			goto fail;
		f->off += (uint64_t)k;
		return k;
	}
fail:
	f->failed = true;
	return -1;
}

static void *
follow_main(void *arg)
{
	struct follower *f = arg;
	struct ist_reader *r = NULL;
	const struct ist_event *ev;
	struct ist_error e = { 0 };

	if (ist_reader_new(&r, follow_source, f, "", &e) != IST_OK) {
		f->failed = true;
		return NULL;
	}
	an_stepwork_reader(f->sw, r);
	/* as ist_again_pass reads: to the end, or to what cannot be read */
	while (ist_reader_next(r, &ev, &e) == IST_OK)
		if (atomic_load_explicit(&f->stop, memory_order_relaxed) ||
		    an_stepwork_event(f->sw, ev, INT64_MIN, INT64_MAX, &e) !=
		    IST_OK) {
			f->failed = true;
			break;
		}
	an_stepwork_reader(f->sw, NULL);
	ist_reader_free(r);
	return NULL;
}

static void
follower_free(struct follower *f)
{
	if (f == NULL)
		return;
	an_stepwork_free(f->sw);
	free(f->who.name);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

static void
follower_stop(struct follower *f)
{
	if (f == NULL)
		return;
	atomic_store(&f->stop, true);
	pthread_join(f->th, NULL);
	follower_free(f);
}

static struct follower *
follower_start(struct ist_analyzer *a, const struct ist_again *g,
    const char *name, int64_t pid, int64_t tid, enum ist_type type)
{
	struct follower *f = calloc(1, sizeof(*f));
	struct ist_error e;
	sigset_t all, old;
	int rc;

	if (f == NULL)
		return NULL;
	f->fd = -1;
	f->again = g;
	f->who = (struct who){ strdup(name), pid, tid, type };
	atomic_init(&f->stop, false);
	atomic_init(&f->final, false);
	if (f->who.name == NULL || (f->fd = g->follow(g->ctx, &f->base)) < 0 ||
	    an_stepwork_new(&f->sw, a, name, pid, tid, type, &e) !=
	    IST_OK) {
		follower_free(f);
		return NULL;
	}
	/* signals are the first pass's to take */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&f->th, NULL, follow_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		follower_free(f);
		return NULL;
	}
	return f;
}

void
an_ahead_begin(struct ist_analyzer *a, const struct ist_again *again)
{
	if (again == NULL || again->follow == NULL || a->ahead)
		return;
	if ((a->ahead = calloc(1, sizeof(*a->ahead))) == NULL)
		return;              /* then only after the first pass */
	a->ahead->again = again;
	a->look_at = FIRST_LOOK;
}

void
an_ahead_look(struct ist_analyzer *a)
{
	struct an_ahead *h = a->ahead;
	const char *name;
	int64_t pid, tid;
	enum ist_type type;
	bool stable;

	a->look_at *= 2;
	if (h == NULL || a->windowed) {
		a->look_at = 0;      /* windows are placed at the end */
		return;
	}
	name = ist_steps_peek(a->steps, &pid, &tid, &type);
	stable = who_is(&h->last, name, pid, tid, type);
	if (stable && (h->f == NULL || !who_is(&h->f->who, name, pid, tid,
	    type))) {
		follower_stop(h->f);
		h->f = NULL;
		if (h->starts < MAX_STARTS) {
			h->starts++;
			h->f = follower_start(a, h->again, name, pid, tid,
			    type);
		}
	}
	if (h->f == NULL && h->starts >= MAX_STARTS) {
		a->look_at = 0;
		return;
	}
	if (!stable) {
		free(h->last.name);
		h->last = (struct who){ name ? strdup(name) : NULL, pid, tid,
		    type };
	}
}

struct stepwork *
an_ahead_take(struct ist_analyzer *a, const char *name, int64_t pid,
    int64_t tid, enum ist_type type)
{
	struct an_ahead *h = a->ahead;
	struct follower *f = h ? h->f : NULL;
	struct stepwork *sw = NULL;

	if (f == NULL)
		return NULL;
	h->f = NULL;
	if (!who_is(&f->who, name, pid, tid, type)) {
		follower_stop(f);
		return NULL;
	}
	atomic_store_explicit(&f->final, true, memory_order_release);
	pthread_join(f->th, NULL);
	if (!f->failed && !an_stepwork_needs_bases(f->sw)) {
		sw = f->sw;
		f->sw = NULL;
	}
	follower_free(f);
	return sw;
}

void
an_ahead_free(struct ist_analyzer *a)
{
	struct an_ahead *h = a->ahead;

	if (h == NULL)
		return;
	follower_stop(h->f);
	free(h->last.name);
	free(h);
	a->ahead = NULL;
	a->look_at = 0;
}
