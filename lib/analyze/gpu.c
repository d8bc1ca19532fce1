/* gpu.c - GPU work per device and the attribution of its idle time to
 * what the launching threads were doing. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>

#include "analyze_int.h"

/* ---- idle attribution ---- */

static void
pend_add(struct dev *d, uint64_t key, int64_t ns)
{
	for (int i = 0; i < d->npend; i++)
		if (d->pend[i].key == key) {
			d->pend[i].ns += ns;
			return;
		}
	if (d->npend == PENDING_MAX) {
		/* too many labels in one gap: the rest count as untracked */
		key = key & ~(((uint64_t)1 << 40) - 1);
		key |= (uint64_t)7 << 32;
		for (int i = 0; i < d->npend; i++)
			if (d->pend[i].key == key) {
				d->pend[i].ns += ns;
				return;
			}
		d->pend[d->npend - 1].ns += ns;
		return;
	}
	d->pend[d->npend].key = key;
	d->pend[d->npend++].ns = ns;
}

/* Thread t spent [s, e) under its current top frame: credit the part of
 * it during which a device was idle (within its active window). */
static void
credit(struct ist_analyzer *a, struct thr *t, int64_t s, int64_t e)
{
	uint64_t label;

	if (t->launches == 0 || e <= s)
		return;
	if (t->n == 0)
		label = (uint64_t)6 << 32;
	else
		label = (uint64_t)t->st[t->n - 1].kind << 32 |
		    t->st[t->n - 1].name;
	label |= (uint64_t)(t - a->thr) << 40;
	for (int i = 0; i < MAXDEV; i++) {
		struct dev *d = &a->dev[i];
		int64_t from, ns;
		if (!d->seen || d->ce >= e)
			continue;
		from = s > d->ce ? s : d->ce;
		if ((ns = e - from - an_paused(a, from, e)) > 0)
			pend_add(d, label, ns);
	}
}


/* An import that ended: its module's cumulative and self time. */
void
an_import_done(struct ist_analyzer *a, const struct frame *f)
{
	struct fstat *m;

	if (!f->imp || f->imp_mod == 0)
		return;
	m = &a->fn[f->imp_mod - 1];
	m->imp_count++;
	m->imp_first_hand += !f->imp_nested_in;
	m->imp_cum += f->end - f->start;
	m->imp_self += f->end - f->start - f->imp_nested;
}

/* Moves thread t's sweep to time now, popping the ranges that ended;
 * -1 out of memory. */
int
an_advance(struct ist_analyzer *a, struct thr *t, int64_t now)
{
	if (t->last_t == INT64_MIN)
		t->last_t = now;
	while (t->n > 0 && t->st[t->n - 1].end <= now) {
		int64_t end = t->st[t->n - 1].end;
		if (end > t->last_t) {
			credit(a, t, t->last_t, end);
			if (an_cpu_credit(a, t, t->last_t, end))
				return -1;
			t->last_t = end;
		}
		t->n--;
		if (t->st[t->n].kind == F_CALL) {
			an_open_count(t, t->st[t->n].stat, -1);
			an_import_done(a, &t->st[t->n]);
		}
	}
	if (now > t->last_t) {
		credit(a, t, t->last_t, now);
		if (an_cpu_credit(a, t, t->last_t, now))
			return -1;
		t->last_t = now;
	}
	return 0;
}

static int
commit_gap(struct ist_analyzer *a, struct dev *d, int devno, uint32_t thr)
{
	for (int i = 0; i < d->npend; i++) {
		struct pend *p;
		bool created;
		int64_t k;
		uint64_t key = d->pend[i].key | (uint64_t)devno << 59;
		if (thr && (uint32_t)(d->pend[i].key >> 40) != thr - 1)
			continue;
		k = an_stat_of(&a->idlemap, (void **)&a->idle, &a->nidle,
		    &a->capidle, sizeof(*a->idle), key, &created);
		if (k < 0)
			return -1;
		p = &a->idle[k];
		p->key = key;
		p->ns += d->pend[i].ns;
	}
	d->npend = 0;
	return 0;
}

/* ---- GPU work ---- */

void
an_util_add(struct dev *d, int64_t s, int64_t e)
{
	if (d->utw == 0) {
		d->ut0 = s;
		d->utw = 1000000;    /* 1 ms, doubled as the run grows */
	}
	while (e > d->ut0 + d->utw * NBUCKETS) {
		for (int i = 0; i < NBUCKETS / 2; i++)
			d->ub[i] = d->ub[2 * i] + d->ub[2 * i + 1];
		memset(d->ub + NBUCKETS / 2, 0,
		    NBUCKETS / 2 * sizeof(d->ub[0]));
		d->utw *= 2;
	}
	while (s < e) {
		int64_t b = (s - d->ut0) / d->utw;
		int64_t be = d->ut0 + (b + 1) * d->utw;
		int64_t x = e < be ? e : be;
		d->ub[b] += x - s;
		s = x;
	}
}

/* The launch call of GPU work ev (by correlation), or NULL when it was not
 * recorded or its slot went to a later launch */
static struct corr *
launch_of(struct ist_analyzer *a, const struct ist_event *ev)
{
	struct corr *c;

	if (!IST_HAS(ev, IST_F_CORRELATION))
		return NULL;
	c = &a->corr[(uint64_t)ev->correlation & (CORR_SLOTS - 1)];
	return c->thr && c->corr == ev->correlation && c->pid == ev->pid ?
	    c : NULL;
}

/* ---- concurrency ---- */

/* The sweep moves to t: the time since, credited to what ran */
static void
conc_to(struct conc *c, int64_t t)
{
	int64_t dt = t - c->t;

	if (dt <= 0)
		return;
	c->t = t;
	if (c->nk == 0 && c->nc == 0)
		return;
	c->kernel_ns += c->nk ? dt : 0;
	c->copy_ns += c->nc ? dt : 0;
	c->both_ns += c->nk && c->nc ? dt : 0;
	c->multi_kernel_ns += c->nk > 1 ? dt : 0;
	c->multi_stream_ns += c->nsa > 1 ? dt : 0;
	for (int i = 0; i < c->nst; i++)
		if (c->st[i].act) {
			c->st[i].busy += dt;
			c->st[i].overlap += c->nsa > 1 ? dt : 0;
		}
}

/* Ends the operations that end by t, in the order they end */
static void
conc_until(struct conc *c, int64_t t)
{
	while (c->hn && c->h[0].e <= t) {
		struct run_op o = c->h[0];
		uint32_t i = 0;
		conc_to(c, o.e);
		c->h[0] = c->h[--c->hn];
		for (;;) {      /* sift down */
			uint32_t l = 2 * i + 1, m = i;
			if (l < c->hn && c->h[l].e < c->h[m].e)
				m = l;
			if (l + 1 < c->hn && c->h[l + 1].e < c->h[m].e)
				m = l + 1;
			if (m == i)
				break;
			struct run_op x = c->h[i];
			c->h[i] = c->h[m];
			c->h[m] = x;
			i = m;
		}
		if (o.copy)
			c->nc--;
		else
			c->nk--;
		if (--c->st[o.si].act == 0)
			c->nsa--;
	}
	conc_to(c, t);
}

void
an_conc_drain(struct conc *c)
{
	while (c->hn)
		conc_until(c, c->h[0].e);
}

/* An operation [s, e) on a stream starts: -1 out of memory */
static int
conc_add(struct conc *c, int64_t s, int64_t e, bool copy, int64_t pid,
    int64_t stream)
{
	struct cstream *cs;
	uint32_t i;
	int si;

	if (s < c->t)           /* out of time order: from where we are */
		s = c->t;
	if (e < s)
		e = s;
	conc_until(c, s);
	for (si = 0; si < c->nst && (c->st[si].id != stream ||
	    c->st[si].pid != pid); si++)
		;
	if (si == c->nst) {
		if (c->nst == STREAM_MAX) {
			si = STREAM_MAX - 1;
			c->st[si].others = true;
		} else {
			c->st[c->nst].pid = pid;
			c->st[c->nst++].id = stream;
		}
	}
	if (c->hn == c->hcap) {
		uint32_t cap = c->hcap ? 2 * c->hcap : 64;
		struct run_op *h = realloc(c->h, cap * sizeof(*h));
		if (h == NULL)
			return -1;
		c->h = h;
		c->hcap = cap;
	}
	for (i = c->hn++; i > 0 && c->h[(i - 1) / 2].e > e; i = (i - 1) / 2)
		c->h[i] = c->h[(i - 1) / 2];
	c->h[i] = (struct run_op){ e, copy, (uint8_t)si };
	cs = &c->st[si];
	cs->ops++;
	cs->kernels += !copy;
	if (cs->act++ == 0)
		c->nsa++;
	if (copy)
		c->nc++;
	else if (++c->nk > c->maxk && e > s)   /* one of no length runs at
	                                         * no instant */
		c->maxk = c->nk;
	return 0;
}

static int
gpu_op(struct ist_analyzer *a, const struct ist_event *ev)
{
	struct dev *d;
	struct corr *c;
	int devno = an_dev_of(a, ev);
	int64_t s = ev->start_ns, e = ev->end_ns, paused;
	uint32_t launcher = 0;

	d = &a->dev[devno];
	if (conc_add(&d->conc, s, e, ev->type != IST_GPU_KERNEL, ev->pid,
	    IST_HAS(ev, IST_F_STREAM) ? ev->stream : 0))
		return -1;
	c = launch_of(a, ev);
	/* every launching thread's sweep reaches s before the union moves */
	for (uint32_t i = 0; i < a->nthr; i++)
		if (a->thr[i].launches && an_advance(a, &a->thr[i], s))
			return -1;
	if (c) {
		launcher = c->thr;
		for (int i = 0; i < 4 && c->scopes[i]; i++) {
			a->sc[c->scopes[i] - 1].gpu_ns += e - s;
			a->sc[c->scopes[i] - 1].gpu_ops++;
		}
	}
	d->ops++;
	d->graph_ops += IST_HAS(ev, IST_F_GRAPH_ID);
	if (!d->seen) {
		d->seen = true;
		d->first = d->cs = s;
		d->ce = e;
		d->npend = 0;
		return 0;
	}
	if (s > d->ce && (paused = an_paused(a, d->ce, s)) > 0) {
		/* a pause of the capture between: not idle, not a gap */
		d->paused += paused;
		d->busy += d->ce - d->cs;
		an_util_add(d, d->cs, d->ce);
		d->cs = s;
		d->ce = e;
		d->npend = 0;
		return 0;
	} else if (s > d->ce) {
		int64_t gap = s - d->ce;
		d->ngaps++;
		if (c && c->api_start >= d->ce) {
			int64_t as = c->api_start < s ? c->api_start : s;
			d->host_wait += as - d->ce;
			d->kernel_wait += s - as;
			if (an_dist_add(&d->ldelay, s - c->api_start))
				return -1;
			if (s - c->api_start > a->launch_delay_ns)
				d->ldelay_out++;
		} else if (c && gap <= a->kernel_wait_ns) {
			d->kernel_wait += gap;
		} else {
			d->other += gap;
		}
		if (an_dist_add(&d->gapd, gap))
			return -1;
		an_topk_add(&d->gaps, d->ce, s);
		if (!launcher) {
			uint64_t best = 0;
			for (uint32_t i = 0; i < a->nthr; i++)
				if (a->thr[i].launches > best) {
					best = a->thr[i].launches;
					launcher = i + 1;
				}
		}
		if (commit_gap(a, d, devno, launcher))
			return -1;
		d->busy += d->ce - d->cs;
		an_util_add(d, d->cs, d->ce);
		d->cs = s;
		d->ce = e;
	} else {
		d->npend = 0;
		if (e > d->ce)
			d->ce = e;
		if (an_dist_add(&d->gapd, 0))
			return -1;
	}
	return 0;
}


int
an_copy_op(struct ist_analyzer *a, const struct ist_event *ev)
{
	int x = ev->type == IST_H2D_COPY ? 0 : ev->type == IST_D2H_COPY ? 1 :
	    ev->type == IST_D2D_COPY ? 2 : 3;
	struct xstat *s = &a->xs[x];
	const struct corr *c;

	s->count++;
	s->bytes += ev->bytes;
	s->ns += ev->end_ns - ev->start_ns;
	if (IST_HAS(ev, IST_F_PAGEABLE) && ev->pageable) {
		s->pageable_count++;
		s->pageable_bytes += ev->bytes;
		s->pageable_ns += ev->end_ns - ev->start_ns;
	}
	an_topk_add(&s->longest, ev->start_ns, ev->end_ns);
	if ((c = launch_of(a, ev)) != NULL && c->sync_copy)
		s->sync_calls++;
	return gpu_op(a, ev);
}

int
an_kernel(struct ist_analyzer *a, const struct ist_event *ev)
{
	int64_t name = an_name_id(a, ev, IST_F_NAME), k, dur;
	int devno = an_dev_of(a, ev);
	bool created;
	struct kstat *ks;
	const struct corr *c;

	if (name < 0)
		return -1;
	k = an_stat_of(&a->knmap, (void **)&a->kn, &a->nkn, &a->capkn,
	    sizeof(*a->kn), (uint64_t)name, &created);
	if (k < 0)
		return -1;
	ks = &a->kn[k];
	dur = ev->end_ns - ev->start_ns;
	if ((c = launch_of(a, ev)) != NULL && c->pyfn) {
		int64_t j = an_stat_of(&a->kfmap, (void **)&a->kf, &a->nkf,
		    &a->capkf, sizeof(*a->kf), (uint64_t)k << 32 | c->pyfn,
		    &created);
		if (j < 0)
			return -1;
		a->kf[j].ns += dur;
		if (a->kf[j].ns > ks->from_ns) {
			ks->from_ns = a->kf[j].ns;
			ks->from = c->pyfn;
		}
	}
	ks->name = (uint32_t)name;
	ks->count++;
	ks->total += dur;
	if (dur > ks->max)
		ks->max = dur;
	a->dev[devno].kernels++;
	if (an_dist_add(&a->dev[devno].kdur, dur))
		return -1;
	return gpu_op(a, ev);
}
