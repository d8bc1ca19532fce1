/*
 * ahead.c - the steps' second pass, made during the first.
 *
 * The steps' measure (stepwork.c) needs the step, which only the whole
 * first pass names, and then reads the trace again.  That second reading
 * waits for nothing but the name: so while the first pass goes on, the
 * step it would choose so far is looked at when its event count doubles,
 * and once the same one leads at two of these looks, the step's measure
 * starts: it reads the trace's start again, as far as the first pass has
 * read (the file, or the copy the first pass keeps of a pipe), and from
 * then on rides along, taking each event the first pass takes.  At the
 * first pass's end, when the step chosen is that one, the pass it made is
 * the second pass, event for event, and the trace was decoded once and a
 * little more.  When it is not (another step led by then), or when a step
 * was replayed with GPU work (the replays of pinned copies and CUDA graphs
 * take their bases from the whole first pass), it is dropped and the trace
 * is read again as before.  A new leader drops it and starts another,
 * three times at most.
 *
 * Riding along needs the first pass to take every event from the trace's
 * start (ist_analyzer_add: every one but the analyses); a caller that
 * stops taking them (an analysis found, or promised) reads no second pass.
 * The measure keeps its own names (an_names): it shares nothing with the
 * first pass but the event in hand and the reader's string ids.
 */
#include <stdlib.h>
#include <string.h>
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
	int64_t line;            /* a function's (ist_steps_chosen) */
	int loop;                /* enum ist_step_loop */
};

struct an_ahead {
	const struct ist_again *again;
	int starts;
	struct who last;         /* the leader at the last look */
	struct who who;          /* the step a->ride measures */
};

static bool
who_is(const struct who *w, const char *name, int64_t pid, int64_t tid,
    enum ist_type type, int64_t line, int loop)
{
	return w->name && name && strcmp(w->name, name) == 0 &&
	    w->pid == pid && w->tid == tid && w->type == type &&
	    w->line == line && w->loop == loop;
}

/* The trace's start again: as far as the first pass has read it, all of
 * which is there (the copy of a pipe is written before it is read) */
struct again_src {
	const struct ist_again *g;
	struct ist_pread p;      /* p.off: base + where it is */
	uint64_t base;
};

/* An ist_source_fn over again_src */
static long
again_source(void *ctx, void *buf, size_t n)
{
	struct again_src *s = ctx;
	const struct ist_again *g = s->g;
	long avail = g->more ? g->more(g->ctx, s->p.off - s->base) : (long)n;

	if (avail == 0 || avail == IST_AGAIN_LATER)
		return 0;
	if (avail < 0)
		return -1;
	return ist_pread_source(&s->p, buf, (size_t)avail < n ?
	    (size_t)avail : n);
}

static void
ride_drop(struct ist_analyzer *a)
{
	an_stepwork_free(a->ride);
	a->ride = NULL;
	if (a->ahead) {
		free(a->ahead->who.name);
		a->ahead->who.name = NULL;
	}
}

/*
 * The measure of step w, made of the trace's first n events (the analyses
 * not counted) read again; NULL when they cannot be read (then the trace
 * is read again after the first pass).
 */
static struct stepwork *
catch_up(struct ist_analyzer *a, const struct ist_again *g,
    const struct who *w, uint64_t n)
{
	struct again_src s = { g, { -1, 0 }, 0 };
	struct ist_reader *r = NULL;
	struct stepwork *sw = NULL;
	const struct ist_event *ev;
	struct ist_error e = { 0 };
	uint64_t k = 0;

	if ((s.p.fd = g->follow(g->ctx, &s.base)) < 0)
		return NULL;
	s.p.off = s.base;
	if (ist_reader_new(&r, again_source, &s, "", &e) != IST_OK ||
	    an_stepwork_new(&sw, a, w->name, w->pid, w->tid, w->type, w->line,
	    w->loop, &e) != IST_OK)
		goto fail;
	an_stepwork_reader(sw, r);
	while (k < n && ist_reader_next(r, &ev, &e) == IST_OK) {
		if (ev->type == IST_ANALYSIS)
			continue;
		k++;
		if (an_stepwork_event(sw, ev, INT64_MIN, INT64_MAX, &e) !=
		    IST_OK)
			goto fail;
	}
	if (k < n)
		goto fail;
	/* from here on the first pass's events, by its reader's ids */
	an_stepwork_reader(sw, a->nm.src);
	ist_reader_free(r);
	close(s.p.fd);
	return sw;
fail:
	an_stepwork_free(sw);
	ist_reader_free(r);
	close(s.p.fd);
	return NULL;
}

void
an_ahead_begin(struct ist_analyzer *a, const struct ist_again *again)
{
	if (again == NULL || again->follow == NULL || again->one_thread ||
	    a->ahead)
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
	int64_t pid, tid, line;
	enum ist_type type;
	bool stable;
	int loop = IST_LOOP_NONE;

	a->look_at *= 2;
	if (h == NULL || a->windowed || a->nm.src == NULL) {
		a->look_at = 0;      /* windows are placed at the end */
		return;
	}
	name = ist_steps_peek(a->steps, &pid, &tid, &type, &line, &loop);
	stable = who_is(&h->last, name, pid, tid, type, line, loop);
	if (stable && (a->ride == NULL || !who_is(&h->who, name, pid, tid,
	    type, line, loop))) {
		ride_drop(a);
		if (h->starts < MAX_STARTS) {
			h->starts++;
			/* the event in hand is the first to ride along: before
			 * it, every header and the other events */
			h->who = (struct who){ strdup(name), pid, tid, type,
			    line, loop };
			if (h->who.name == NULL || (a->ride = catch_up(a,
			    h->again, &h->who, a->segments + a->events - 1)) ==
			    NULL)
				ride_drop(a);
		}
	}
	if (a->ride == NULL && h->starts >= MAX_STARTS) {
		a->look_at = 0;
		return;
	}
	if (!stable) {
		free(h->last.name);
		h->last = (struct who){ name ? strdup(name) : NULL, pid, tid,
		    type, line, loop };
	}
}

void
an_ahead_ride(struct ist_analyzer *a, const struct ist_event *ev)
{
	struct ist_error e;

	/* read again after the first pass: on an error, and once a step
	 * replayed GPU work (its replays take their bases from the whole
	 * first pass: the measure would be dropped at its end, after riding
	 * along for nothing) */
	if (an_stepwork_event(a->ride, ev, INT64_MIN, INT64_MAX, &e) !=
	    IST_OK || an_stepwork_needs_bases(a->ride)) {
		ride_drop(a);
		a->look_at = 0;
	}
}

struct stepwork *
an_ahead_take(struct ist_analyzer *a, const char *name, int64_t pid,
    int64_t tid, enum ist_type type, int64_t line, int loop)
{
	struct an_ahead *h = a->ahead;
	struct stepwork *sw = NULL;

	if (h == NULL || a->ride == NULL)
		return NULL;
	if (who_is(&h->who, name, pid, tid, type, line, loop) &&
	    !an_stepwork_needs_bases(a->ride)) {
		sw = a->ride;
		a->ride = NULL;
	}
	ride_drop(a);
	return sw;
}

void
an_ahead_free(struct ist_analyzer *a)
{
	struct an_ahead *h = a->ahead;

	ride_drop(a);
	if (h == NULL)
		return;
	free(h->last.name);
	free(h->who.name);
	free(h);
	a->ahead = NULL;
	a->look_at = 0;
}
