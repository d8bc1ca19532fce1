/*
 * ahead.c - the steps' second pass, made during the first.
 *
 * The steps' measure (stepwork.c) needs the step, which only the whole
 * first pass names, and then reads the trace again.  That second reading
 * waits for nothing but the name: so while the first pass goes on, the
 * step it would choose so far is looked at when its event count doubles,
 * and once the same one leads at two of these looks, the events before
 * the look are read again from the trace's start (the file, or the copy
 * the first pass keeps of a pipe, which holds them by then), and from
 * there on the first pass hands each event it is given to that step's
 * measure as well: the trace is decoded once, and its start twice.  At
 * the first pass's end, when the step chosen is that one, the measure
 * made is the second pass, event for event: nothing is read again.  When
 * it is not (another step led by then), or when a step was replayed with
 * GPU work (the replays of pinned copies and CUDA graphs take their bases
 * from the whole first pass), it is dropped and the trace is read again
 * as before.  A new leader starts another, three times at most.
 *
 * It relies on the first pass being handed every event its reader returns
 * (analysis records aside, which the measure ignores), in order: so do
 * is-analyze, is-report and the baseline; a caller that stops short of
 * that (is-report once a header promises an analysis) does not use the
 * first pass's analysis either.  The measure keeps names of its own (an
 * an_names): the first pass's tables are not touched.
 */
#include <errno.h>
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
};

/* the measure made along the first pass */
struct follower {
	struct who who;
	struct stepwork *sw;
	bool failed;             /* could not read the start, or keep up */
};

struct an_ahead {
	const struct ist_again *again;
	int starts;
	struct who last;         /* the leader at the last look */
	struct follower *f;      /* measuring, or NULL */
};

static bool
who_is(const struct who *w, const char *name, int64_t pid, int64_t tid,
    enum ist_type type)
{
	return w->name && name && strcmp(w->name, name) == 0 &&
	    w->pid == pid && w->tid == tid && w->type == type;
}

/* The trace's start as the first pass has it, for the reading that
 * catches up with it. */
struct catchup {
	const struct ist_again *g;
	int fd;
	uint64_t base, off;
	bool failed;
};

/* An ist_source_fn over struct catchup.  What it needs the first pass has
 * read already (its whole frame: the reader decompresses a frame before
 * it returns the frame's first record), so that nothing is waited for:
 * more to come is a failure here, never a wait. */
static long
catchup_source(void *ctx, void *buf, size_t n)
{
	struct catchup *c = ctx;
	const struct ist_again *g = c->g;

	for (;;) {
		long avail = g->more ? g->more(g->ctx, c->off) : (long)n;
		ssize_t k;

		if (avail == 0)
			return 0;
		if (avail < 0)
			break;
		if ((size_t)avail < n)
			n = (size_t)avail;
		k = pread(c->fd, buf, n, (off_t)(c->base + c->off));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			break;
		c->off += (uint64_t)k;
		return k;
	}
	c->failed = true;
	return -1;
}

static void
follower_free(struct follower *f)
{
	if (f == NULL)
		return;
	an_stepwork_free(f->sw);
	free(f->who.name);
	free(f);
}

/*
 * A measure of the step (name, pid, tid, type) over the first upto events
 * the first pass was handed, read again from the trace's start; then
 * along the first pass, on r's events.  NULL when it cannot be made.
 */
static struct follower *
follower_start(struct ist_analyzer *a, const struct ist_again *g,
    const char *name, int64_t pid, int64_t tid, enum ist_type type,
    uint64_t upto)
{
	struct follower *f = calloc(1, sizeof(*f));
	struct catchup c = { g, -1, 0, 0, false };
	struct ist_reader *r = NULL;
	const struct ist_event *ev;
	struct ist_error e = { 0 };
	uint64_t n = 0;

	if (f == NULL)
		return NULL;
	f->who = (struct who){ strdup(name), pid, tid, type };
	if (f->who.name == NULL || (c.fd = g->follow(g->ctx, &c.base)) < 0 ||
	    an_stepwork_new(&f->sw, a, name, pid, tid, type, &e) != IST_OK ||
	    ist_reader_new(&r, catchup_source, &c, "", &e) != IST_OK)
		goto fail;
	an_stepwork_reader(f->sw, r);
	while (n < upto && ist_reader_next(r, &ev, &e) == IST_OK) {
		if (ev->type == IST_ANALYSIS)
			continue;
		n++;
		if (an_stepwork_event(f->sw, ev, INT64_MIN, INT64_MAX, &e) !=
		    IST_OK)
			break;
	}
	an_stepwork_reader(f->sw, a->nm.src);
	ist_reader_free(r);
	close(c.fd);
	if (n < upto || c.failed) {
		follower_free(f);
		return NULL;
	}
	return f;
fail:
	if (c.fd >= 0)
		close(c.fd);
	ist_reader_free(r);
	follower_free(f);
	return NULL;
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
an_ahead_event(struct ist_analyzer *a, const struct ist_event *ev)
{
	struct follower *f = a->ahead->f;
	struct ist_error e;

	if (!f->failed && an_stepwork_event(f->sw, ev, INT64_MIN, INT64_MAX,
	    &e) != IST_OK)
		f->failed = true;
}

void
an_ahead_reader(struct ist_analyzer *a, const struct ist_reader *r)
{
	if (a->ahead && a->ahead->f)
		an_stepwork_reader(a->ahead->f->sw, r);
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
		follower_free(h->f);
		h->f = NULL;
		if (h->starts < MAX_STARTS) {
			h->starts++;
			h->f = follower_start(a, h->again, name, pid, tid,
			    type, a->handed);
		}
		a->ahead_on = h->f != NULL;
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
	a->ahead_on = false;
	if (who_is(&f->who, name, pid, tid, type) && !f->failed &&
	    !an_stepwork_needs_bases(f->sw)) {
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
	follower_free(h->f);
	free(h->last.name);
	free(h);
	a->ahead = NULL;
	a->ahead_on = false;
	a->look_at = 0;
}
