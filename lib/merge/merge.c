/* merge.c - clock alignment and a bounded-memory global sort (is-merge). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cbor.h>
#include <jansson.h>
#include <zstd.h>

#include "merge_int.h"
#include "output.h"

void
mg_note(struct merger *m, int level, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	if (m->note == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	m->note(m->ctx, level, msg);
}

static char *
dupn(struct ist_str s)
{
	return strndup(s.p ? s.p : "", s.n);
}

static struct ist_blob
dupblob(struct ist_blob b)
{
	uint8_t *p;

	if (b.n == 0 || (p = malloc(b.n)) == NULL)
		return (struct ist_blob){ NULL, 0 };
	memcpy(p, b.p, b.n);
	return (struct ist_blob){ p, b.n };
}

static int
add_pair(struct segment *s, struct ist_str dom, int64_t host, int64_t d)
{
	struct ist_clock_fit *p = NULL;

	for (size_t i = 0; i < s->ndom; i++)
		if (strlen(s->dom[i].domain) == dom.n &&
		    memcmp(s->dom[i].domain, dom.p, dom.n) == 0)
			p = &s->dom[i];
	if (p == NULL) {
		struct ist_clock_fit *nd = realloc(s->dom, (s->ndom + 1) *
		    sizeof(*nd));
		if (nd == NULL)
			return -1;
		s->dom = nd;
		p = &s->dom[s->ndom++];
		memset(p, 0, sizeof(*p));
		if ((p->domain = dupn(dom)) == NULL)
			return -1;
	}
	return ist_clock_add(p, host, d);
}

/* The clock domain of a GPU-side event of segment s, if its stream
 * calibrated one (the fits of c, the segment s's clock is) */
static const struct ist_clock_fit *
domain_of(const struct segment *s, const struct segment *c,
    const struct ist_event *ev)
{
	char want[64];

	if (c->ndom == 0)
		return NULL;
	if (s->all_cupti) {
		/* the CUPTI collector's stream: API calls, syncs and
		 * allocations are in CUPTI's clock as much as GPU work */
		for (size_t i = 0; i < c->ndom; i++)
			if (strcmp(c->dom[i].domain, "cupti") == 0)
				return &c->dom[i];
		return NULL;
	}
	if (!IST_HAS(ev, IST_F_DEVICE))
		return NULL;
	switch (ev->type) {
	case IST_GPU_KERNEL: case IST_H2D_COPY: case IST_D2H_COPY:
	case IST_D2D_COPY: case IST_MEMSET:
		break;
	default:
		return NULL;
	}
	snprintf(want, sizeof(want), "cupti:%" PRId64, ev->device);
	for (size_t i = 0; i < c->ndom; i++)
		if (strcmp(c->dom[i].domain, want) == 0)
			return &c->dom[i];
	for (size_t i = 0; i < c->ndom; i++)
		if (strcmp(c->dom[i].domain, "cupti") == 0)
			return &c->dom[i];
	return NULL;
}

/* ---- strings and tracks, interned once for the whole merge ---- */

/*
 * Doubles an id table (slots hold ids 1..n, 0 empty; first: the first
 * size) over n items of stride bytes whose hash sits at byte off of each.
 */
static int
grow_ids(uint32_t **tab, size_t *cap, size_t first, const void *items,
    size_t stride, size_t off, size_t n)
{
	size_t nc = *cap ? *cap * 2 : first;
	uint32_t *t = calloc(nc, sizeof(*t));

	if (t == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		uint64_t h;
		size_t k;
		memcpy(&h, (const char *)items + i * stride + off, sizeof(h));
		for (k = h & (nc - 1); t[k]; k = (k + 1) & (nc - 1))
			;
		t[k] = (uint32_t)i + 1;
	}
	free(*tab);
	*tab = t;
	*cap = nc;
	return 0;
}

/* The merge's id of a string, 0 when out of memory. */
uint32_t
mg_gstring(struct merger *m, struct ist_str s)
{
	return ist_strtab_intern(&m->strs, s.p, s.n, NULL);
}

/* The merge's id of the event's track, 0 when out of memory. */
uint32_t
mg_gtrack(struct merger *m, const struct ist_event *ev)
{
	struct gtrack t = { (uint32_t)(ev->has & 15), 0,
	    { ev->pid, ev->tid, ev->device, ev->stream } };
	size_t k;

	for (int i = 0; i < 4; i++)
		if (!(t.mask & (1u << i)))
			t.key[i] = 0;
	t.hash = ist_hash_bytes((const char *)t.key, sizeof(t.key)) ^ t.mask;
	if ((m->ntrack + 1) * 2 > m->ttab_cap && grow_ids(&m->ttab,
	    &m->ttab_cap, 256, m->tracks, sizeof(*m->tracks),
	    offsetof(struct gtrack, hash), m->ntrack) != 0)
		return 0;
	for (k = t.hash & (m->ttab_cap - 1); m->ttab[k];
	    k = (k + 1) & (m->ttab_cap - 1)) {
		struct gtrack *o = &m->tracks[m->ttab[k] - 1];
		if (o->mask == t.mask && memcmp(o->key, t.key,
		    sizeof(t.key)) == 0)
			return m->ttab[k];
	}
	if (ist_room((void **)&m->tracks, &m->tracks_cap, m->ntrack,
	    sizeof(*m->tracks)) != 0)
		return 0;
	m->tracks[m->ntrack] = t;
	m->ttab[k] = (uint32_t)++m->ntrack;
	return (uint32_t)m->ntrack;
}

/* The merge's id of a timed record's constant part (yielded: a call's,
 * a generator's run that yielded), 0 when out of memory; its writer bytes
 * are made when first written. */
uint32_t
mg_gfn(struct merger *m, int type, uint32_t name, uint32_t more,
    int64_t line, bool yielded)
{
	uint64_t h = ist_hash_bytes((const char *)(uint64_t[]){ (uint64_t)type |
	    (uint64_t)yielded << 8, name, more, (uint64_t)line }, 32);
	size_t k;

	if ((m->nfn + 1) * 2 > m->ftab_cap && grow_ids(&m->ftab,
	    &m->ftab_cap, 256, m->fns, sizeof(*m->fns),
	    offsetof(struct gfn, hash), m->nfn) != 0)
		return 0;
	for (k = h & (m->ftab_cap - 1); m->ftab[k];
	    k = (k + 1) & (m->ftab_cap - 1)) {
		struct gfn *o = &m->fns[m->ftab[k] - 1];
		if (o->hash == h && o->name == name && o->more == more &&
		    o->line == line && o->type == type &&
		    o->wd.yielded == yielded)
			return m->ftab[k];
	}
	if (ist_room((void **)&m->fns, &m->fns_cap, m->nfn,
	    sizeof(*m->fns)) != 0)
		return 0;
	{
		const struct ist_strent *n = ist_strtab_get(&m->strs, name);
		const struct ist_strent *f = more ? ist_strtab_get(&m->strs,
		    more) : NULL;
		struct gfn *g = &m->fns[m->nfn];
		memset(g, 0, sizeof(*g));
		g->hash = h;
		g->name = name;
		g->more = more;
		g->line = line;
		g->type = (uint8_t)type;
		/* seg 0: made by the writer when first written */
		g->wd.name = (struct ist_str){ n->p, n->n };
		if (f)
			g->wd.more = (struct ist_str){ f->p, f->n };
		g->wd.line = line;
		g->wd.yielded = yielded;
	}
	m->ftab[k] = (uint32_t)++m->nfn;
	return (uint32_t)m->nfn;
}

/* ---- the passes ---- */

static int64_t
event_key(const struct ist_event *ev)
{
	if (ev->type == IST_ANALYSIS)
		return INT64_MAX;
	if (IST_HAS(ev, IST_F_START))
		return ev->start_ns;
	if (IST_HAS(ev, IST_F_TS))
		return ev->ts_ns;
	return INT64_MIN;    /* process, thread, device, loss: first */
}

/* The spiller's body: the job handed to it, into a run. */
static void *
spiller(void *arg)
{
	struct merger *m = arg;

	m->spill_st = mg_spill(m, &m->job, &m->spill_err);
	return NULL;
}

/* Waits for the spill under way, if any, and says how it went. */
static enum ist_status
spill_wait(struct merger *m, struct ist_error *err)
{
	if (!m->spilling)
		return IST_OK;
	pthread_join(m->spiller, NULL);
	m->spilling = false;
	if (m->spill_st != IST_OK && err)
		*err = m->spill_err;
	return m->spill_st;
}

/*
 * The full sort buffer to the spiller, which sorts it into a run while
 * the other one fills: reading and spilling take both cores (the spill
 * was a third of the merge's time).  Runs are spilled one at a time, in
 * the inputs' order, as the merge's ties need.
 */
static enum ist_status
spill_async(struct merger *m, struct ist_error *err)
{
	enum ist_status st;
	uint8_t *a = m->arena;
	struct ent *e = m->ents;

	if ((st = spill_wait(m, err)) != IST_OK)
		return st;
	m->job = (struct sortbuf){ m->arena, m->ents, m->ne };
	m->arena = m->arena2;
	m->ents = m->ents2;
	m->arena2 = a;
	m->ents2 = e;
	m->ne = m->an = 0;
	m->spill_st = IST_OK;
	if (pthread_create(&m->spiller, NULL, spiller, m) == 0) {
		m->spilling = true;
		return IST_OK;
	}
	return mg_spill(m, &m->job, err);     /* no thread: here, then */
}

static enum ist_status
add_event(struct merger *m, const struct ist_reader *r,
    const struct ist_event *ev, struct ist_error *err)
{
	size_t n = mg_pack_bound(ev);
	enum ist_status st;
	uint8_t *end;

	if (m->acap - m->an < n || m->ne == m->cape) {
		if ((st = spill_async(m, err)) != IST_OK)
			return st;
		if (n > m->acap) {
			ist_seterr(err, IST_ELIMIT, "a record of %zu bytes does "
			    "not fit in --memory-mb", n);
			return IST_ELIMIT;
		}
	}
	if ((end = mg_pack(m, r, ev, m->arena + m->an)) == NULL) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	m->ents[m->ne].key = event_key(ev);
	m->ents[m->ne].off = (uint32_t)m->an;
	m->ents[m->ne].len = (uint32_t)(end - (m->arena + m->an));
	m->an += m->ents[m->ne].len;
	m->ne++;
	return IST_OK;
}

static bool
same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Segment s continues the stream segment o began: its header is the same,
 * to the clock snapshot taken as the stream opened */
static bool
stream_of(const struct segment *o, const struct segment *s)
{
	return o->have_snap && !o->sources.n && o->realtime == s->realtime &&
	    o->monotonic == s->monotonic && same_str(o->producer,
	    s->producer) && same_str(o->host, s->host) &&
	    o->pids.n == s->pids.n && (s->pids.n == 0 ||
	    memcmp(o->pids.p, s->pids.p, s->pids.n) == 0);
}

/*
 * The first segment of the stream new segment s continues, or s.  A
 * flight recorder's frames each begin with the stream's header, standing
 * alone; the CUDA collector's clock pairs, every second, are in a few of
 * them, and a frame without one had kept CUPTI's times.
 */
static size_t
same_stream(const struct merger *m, const struct segment *s)
{
	size_t i = (size_t)(s - m->seg);

	if (!s->have_snap || s->sources.n)
		return i;
	/* the frame before's, mostly: a stream's frames come in a row */
	if (i > 0 && stream_of(&m->seg[m->seg[i - 1].clk], s))
		return m->seg[i - 1].clk;
	for (size_t j = 0; j < i; j++)
		if (m->seg[j].clk == j && stream_of(&m->seg[j], s))
			return j;
	return i;
}

/* A segment for the header ev of input in: what its header says. */
static struct segment *
new_segment(struct merger *m, struct input *in, const struct ist_event *ev)
{
	struct segment *ns = realloc(m->seg, (m->nseg + 1) * sizeof(*ns)), *s;

	if (ns == NULL)
		return NULL;
	m->seg = ns;
	s = &m->seg[m->nseg++];
	memset(s, 0, sizeof(*s));
	s->producer = IST_HAS(ev, IST_F_PRODUCER) ? dupn(ev->producer) : NULL;
	s->host = IST_HAS(ev, IST_F_HOST) ? dupn(ev->host) : NULL;
	if (IST_HAS(ev, IST_F_PIDS))
		s->pids = dupblob(ev->pids);
	if (IST_HAS(ev, IST_F_SOURCES)) {
		s->sources = dupblob(ev->sources);
		mg_carried_damage(m, in, ev->sources);
	}
	s->all_cupti = IST_HAS(ev, IST_F_CLOCKS) && ev->clocks.n == 7 &&
	    memcmp(ev->clocks.p, "\x81\x65" "cupti", 7) == 0;
	s->have_snap = IST_HAS(ev, IST_F_REALTIME_NS) &&
	    IST_HAS(ev, IST_F_MONOTONIC_NS);
	s->realtime = ev->realtime_ns;
	s->monotonic = ev->monotonic_ns;
	s->clk = same_stream(m, s);
	return s;
}

/*
 * Pass 2: an event's times onto the reference clock, in place (the
 * reader's own event: the next record overwrites it anyway).
 */
static inline void
move_times(const struct merger *m, const struct segment *s,
    struct ist_event *c)
{
	const struct ist_clock_fit *p = domain_of(s, &m->seg[s->clk], c);

	if (p) {
		if (IST_HAS(c, IST_F_START)) {
			c->start_ns = ist_clock_map(p, c->start_ns);
			c->end_ns = ist_clock_map(p, c->end_ns);
		}
		if (IST_HAS(c, IST_F_TS))
			c->ts_ns = ist_clock_map(p, c->ts_ns);
	}
	if (s->shift) {
		if (IST_HAS(c, IST_F_START)) {
			c->start_ns += s->shift;
			c->end_ns += s->shift;
		}
		if (IST_HAS(c, IST_F_TS))
			c->ts_ns += s->shift;
	}
}

/* Reads one input; pass 1 collects headers and clocks, pass 2 events. */
static enum ist_status
read_input(struct merger *m, struct input *in, int pass, size_t *segi,
    struct ist_error *err)
{
	int fd = open(in->path, O_RDONLY);
	struct ist_reader *r;
	const struct ist_event *ev;
	struct ist_error e = { 0 };
	enum ist_status st;
	struct segment *s = NULL;

	if (fd < 0) {
		if (pass == 1) {
			char why[600];
			snprintf(why, sizeof(why), "cannot open '%s': %s",
			    in->name, strerror(errno));
			mg_note(m, IST_NOTE_WARN, "%s", why);
			if (mg_add_damage(m, in, why, 0, -1) != 0) {
				ist_seterr(err, IST_ENOMEM, "out of memory");
				return IST_ENOMEM;
			}
		}
		m->damaged = true;
		return IST_OK;
	}
	if (ist_reader_new(&r, ist_fd_source, &fd, in->name, err) != IST_OK) {
		close(fd);
		return IST_ENOMEM;
	}
	if (m->ahead)
		ist_reader_ahead_fd(r, fd);
	while ((st = ist_reader_next(r, &ev, &e)) == IST_OK) {
		if (m->o->progress && (++m->nread & 0xffff) == 0) {
			struct ist_reader_stats rs;
			ist_reader_stats(r, &rs);
			m->o->progress(m->o->progress_ctx, m->done_bytes +
			    rs.at_bytes, m->total_bytes, m->nread);
		}
		if (ev->type == IST_HEADER) {
			if (pass == 1) {
				if ((s = new_segment(m, in, ev)) == NULL)
					goto nomem;
			} else {
				s = &m->seg[(*segi)++];
			}
			/* a new segment numbers its strings and tracks anew */
			if (m->map.nstr)
				memset(m->map.str, 0, m->map.nstr *
				    sizeof(*m->map.str));
			if (m->map.ntrk)
				memset(m->map.trk, 0, m->map.ntrk *
				    sizeof(*m->map.trk));
			if (m->map.nfn)
				memset(m->map.fn, 0, m->map.nfn *
				    sizeof(*m->map.fn));
			continue;
		}
		if (ev->type == IST_CLOCK) {
			if (pass == 1 && add_pair(&m->seg[s->clk], ev->domain,
			    ev->ts_ns, ev->domain_ns) != 0)
				goto nomem;
			m->moving = true;
			continue;    /* applied, then summarised in sources */
		}
		if (pass == 1 && m->moving)
			continue;    /* a GPU trace: sorted in pass 2 alone */
		/* pass 1 sorts too, in case nothing needs moving (until a
		 * clock record says something does) */
		if (pass == 2)
			move_times(m, s, (struct ist_event *)ev);
		if ((st = add_event(m, r, ev, err)) != IST_OK) {
			ist_reader_free(r);
			close(fd);
			return st;
		}
	}
	if (st != IST_END && pass == 1) {
		struct ist_reader_stats rs;
		mg_note(m, IST_NOTE_WARN, "%s%s; merging what was read",
		    st == IST_TRUNCATED ? "warning: " : "", e.msg);
		m->damaged = true;
		ist_reader_stats(r, &rs);
		if (mg_add_damage(m, in, st == IST_TRUNCATED ? NULL : e.msg,
		    (int64_t)rs.truncated_bytes, s ? (long)(s - m->seg) :
		    -1) != 0)
			goto nomem;
	}
	ist_reader_free(r);
	close(fd);
	return IST_OK;
nomem:
	ist_reader_free(r);
	close(fd);
	ist_seterr(err, IST_ENOMEM, "out of memory");
	return IST_ENOMEM;
}

static void
align(struct merger *m)
{
	struct segment *ref;

	m->ref = -1;
	for (size_t i = 0; i < m->nseg; i++)
		if (m->seg[i].have_snap) {
			m->ref = (int)i;
			break;
		}
	ref = m->ref >= 0 ? &m->seg[m->ref] : NULL;
	for (size_t i = 0; i < m->nseg; i++) {
		struct segment *s = &m->seg[i];
		bool same_host = ref && s->host && ref->host &&
		    strcmp(s->host, ref->host) == 0;
		if (s->sources.n) {
			/* an already merged trace: its clocks are aligned */
			s->aligned = true;
		} else if (ref == NULL || same_host) {
			s->aligned = ref != NULL || !s->have_snap;
			s->shift = 0;
			s->uncertainty = ref ? 0 : m->o->margin_ns;
		} else if (s->have_snap) {
			/* another host: through wall time, as well as NTP or
			 * PTP keep the two realtime clocks together */
			s->shift = (s->realtime - s->monotonic) -
			    (ref->realtime - ref->monotonic);
			s->uncertainty = m->o->margin_ns;
			s->aligned = false;
		} else {
			s->uncertainty = m->o->margin_ns;
			s->aligned = false;
		}
		for (size_t d = 0; d < s->ndom; d++)
			ist_clock_fit(&s->dom[d]);
	}
}

/* The sort buffers, once no longer needed. */
static void
free_sort(struct merger *m)
{
	ist_unmap_huge(m->arena, m->acap);
	ist_unmap_huge(m->arena2, m->acap);
	ist_unmap_huge(m->ents, m->cape * sizeof(*m->ents));
	ist_unmap_huge(m->ents2, m->cape * sizeof(*m->ents));
	ist_unmap_huge(m->tmp, m->cape * sizeof(*m->tmp));
	free(m->count);
	m->arena = m->arena2 = NULL;
	m->ents = m->ents2 = m->tmp = NULL;
	m->count = NULL;
}

/* The final merge's put: the record, unpacked, into the output. */
static enum ist_status
put_event(void *ctx, const struct run *r, struct ist_error *err)
{
	struct emit *e = ctx;

	return mg_emit(e, r->rec, r->key, err);
}

static enum ist_status
emit_sorted(struct merger *m, struct ist_writer *w, struct ist_error *err)
{
	struct emit *e = malloc(sizeof(*e));   /* 9 KiB */
	enum ist_status st = IST_OK;

	if (e == NULL) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	mg_emit_init(e, m, w);
	if ((st = spill_wait(m, err)) != IST_OK)
		goto out;
	if (m->nruns == 0) {
		/* everything fit in memory: no temporary files */
		mg_sort_ents(m, m->ents, m->ne);
		for (size_t i = 0; i < m->ne && st == IST_OK; i++)
			st = mg_emit(e, m->arena + m->ents[i].off,
			    m->ents[i].key, err);
		goto out;
	}
	/* the last buffer is sorted where it is and merged as the last run
	 * (its records are the inputs' last), never written; the other
	 * buffers are done with: the runs' readers take over */
	mg_sort_ents(m, m->ents, m->ne);
	ist_unmap_huge(m->arena2, m->acap);
	ist_unmap_huge(m->ents2, m->cape * sizeof(*m->ents2));
	ist_unmap_huge(m->tmp, m->cape * sizeof(*m->tmp));
	m->arena2 = NULL;
	m->ents2 = m->tmp = NULL;
	if ((st = mg_runs_final(m, 1, err)) != IST_OK)
		goto out;
	{
		struct run *nr = realloc(m->runs, (m->nruns + 1) *
		    sizeof(*nr));
		if (nr == NULL) {
			ist_seterr(err, IST_ENOMEM, "out of memory");
			st = IST_ENOMEM;
			goto out;
		}
		m->runs = nr;
		nr[m->nruns++] = (struct run){ .fd = -1, .mem = m->ents,
		    .mem_arena = m->arena, .mem_n = m->ne };
		st = mg_runs_merge_fed(m->runs, m->nruns, put_event, e, err);
	}
out:
	if (st == IST_OK)
		st = mg_emit_end(e, err);
	free(e);
	return st;
}

/* Files this process has open now. */
static long
open_files(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = 0;

	if (d == NULL)
		return 16;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n - 3;           /* ., .. and the directory's own */
}

/*
 * How many spilled runs are read at once: a third of the budget in
 * readers, and as the files this process may still open allow (the runs
 * left open are about fan-in - 1 per level, a few levels: a quarter of
 * them; inputs, the output and a spool take a few), 2 to 64.
 */
static size_t
fan_in(size_t budget)
{
	size_t f = budget / 3 / mg_run_reader_bytes();
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 4096) {
		long left = (long)rl.rlim_cur - open_files() - 8;
		size_t by_fd = left > 8 ? (size_t)left / 4 : 2;
		if (f > by_fd)
			f = by_fd;
	}
	return f > 64 ? 64 : f < 2 ? 2 : f;
}

/* Standard input, read twice, copied to a file of its own (in->path). */
static enum ist_status
spool_stdin(struct input *in, const char *tmpdir, struct ist_error *err)
{
	char tmpl[4200], buf[65536];
	ssize_t k;
	int fd;

	snprintf(tmpl, sizeof(tmpl), "%s/is-merge-stdin.XXXXXX", tmpdir);
	if ((fd = mkstemp(tmpl)) < 0) {
		ist_seterr(err, IST_EIO, "cannot create a temporary file in "
		    "'%s': %s", tmpdir, strerror(errno));
		return IST_EIO;
	}
	free(in->path);
	in->path = strdup(tmpl);
	in->name = "<stdin>";
	in->spooled = true;
	for (;;) {
		k = read(STDIN_FILENO, buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (mg_write_all(fd, buf, (size_t)k) != 0) {
			close(fd);
			ist_seterr(err, IST_EIO, "cannot copy standard input "
			    "to '%s': %s", tmpl, strerror(errno));
			return IST_EIO;
		}
	}
	close(fd);
	return IST_OK;
}

/*
 * The two sort buffers take 10% of the budget each and their indexes 10%
 * each, with a third 10% for the radix sort's other half: about as many
 * events each; the merge of the spilled runs a third (fan_in), the
 * inputs' readers, the strings and the writer the rest (of a budget less
 * what reading ahead takes).  -1 when out of
 * memory.
 */
static int
budget(struct merger *m, size_t memory_bytes)
{
	m->acap = memory_bytes / 10;
	if (m->acap > UINT32_MAX)
		m->acap = UINT32_MAX;
	m->cape = memory_bytes / 10 / sizeof(struct ent);
	if (m->cape > UINT32_MAX)       /* the sort's counts are 32-bit */
		m->cape = UINT32_MAX;
	m->fanin = fan_in(memory_bytes);
	if (m->acap < (1u << 20))
		m->acap = 1u << 20;
	if (m->cape < 1024)
		m->cape = 1024;
	/* The sort buffers, in huge pages (ist_map_huge: a page fault every
	 * 4 KiB had been a tenth of is-merge's time on a virtual machine)
	 * past their first MiB, so that a small merge touches little more
	 * memory than before (2 MiB: 17.7 -> 19.8 MB resident on a 0.24
	 * M-event trace).  The twins are touched only once a spill is under
	 * way: huge from their start */
	if ((m->arena = ist_map_huge(m->acap, 1u << 20)) == NULL ||
	    (m->arena2 = ist_map_huge(m->acap, 0)) == NULL ||
	    (m->ents = ist_map_huge(m->cape * sizeof(*m->ents), 1u << 20)) ==
	    NULL ||
	    (m->ents2 = ist_map_huge(m->cape * sizeof(*m->ents), 0)) == NULL ||
	    (m->tmp = ist_map_huge(m->cape * sizeof(*m->tmp), 1u << 20)) ==
	    NULL ||
	    (m->count = malloc(4 * sizeof(*m->count))) == NULL)
		return -1;
	return 0;
}

/* Pass 1 sorted what it read: true when pass 2 must move and re-sort. */
static bool
must_remap(struct merger *m)
{
	bool remap = false;

	for (size_t i = 0; i < m->nseg; i++)
		if (m->seg[i].shift != 0 || m->seg[i].ndom > 0)
			remap = true;
	if (!remap)
		return false;
	for (size_t i = 0; i < m->nruns; i++)
		mg_run_close(&m->runs[i]);
	free(m->runs);
	m->runs = NULL;
	m->nruns = 0;
	m->ne = m->an = 0;
	for (size_t i = 0; i < m->nseg; i++) {
		struct segment *s = &m->seg[i];
		if (!s->aligned && !s->sources.n)
			mg_note(m, IST_NOTE_WARN, "warning: segment %zu (%s on "
			    "%s) could not be aligned exactly: its times carry "
			    "+-%" PRId64 " us", i + 1, s->producer ? s->producer :
			    "?", s->host ? s->host : "?",
			    s->uncertainty / 1000);
	}
	return true;
}

static void
merger_release(struct merger *m)
{
	spill_wait(m, NULL);
	for (size_t i = 0; i < m->nruns; i++)
		mg_run_close(&m->runs[i]);
	free(m->runs);
	for (size_t i = 0; i < m->nseg; i++) {
		struct segment *s = &m->seg[i];
		free(s->producer);
		free(s->host);
		free((void *)s->pids.p);
		free((void *)s->sources.p);
		for (size_t d = 0; d < s->ndom; d++)
			ist_clock_release(&s->dom[d]);
		free(s->dom);
	}
	free(m->seg);
	for (size_t i = 0; i < m->ndmg; i++)
		free(m->dmg[i].error);
	free(m->dmg);
	ist_strtab_release(&m->strs);
	free(m->tracks);
	free(m->ttab);
	free(m->fns);
	free(m->ftab);
	free(m->map.str);
	free(m->map.trk);
	free(m->map.fn);
	free_sort(m);
}

/* The merged trace to out_fd, once everything is sorted. */
static enum ist_status
write_out(struct merger *m, int out_fd, struct ist_error *err)
{
	struct ist_writer *w = NULL;
	enum ist_status st;

	/* every string written lives in the merge's interner to the end:
	 * its blocks never move; a frame compressed while the next fills
	 * takes a second frame's memory (4 MiB), which a budget of 64 MiB
	 * has room for.  To a pipe at level 1, to a file at level 3: the
	 * tools after it keep what comes through a pipe in $TMPDIR (for a
	 * second reading), and stored frames, 7 times the bytes, cost them
	 * more to keep than level 1 costs here (the bench's 44.7 M-event
	 * pipeline: 19.1 s of CPU against 20.8, 11.65 s against 12.61 in
	 * nine interleaved rounds) */
	if ((st = ist_writer_new(&w, ist_fd_sink, &out_fd,
	    &(struct ist_writer_opts){ .stable_strings = true,
	    .level = ist_output_is_pipe(out_fd) ? 1 : 3,
	    .background = m->o->memory_bytes >= (64u << 20) }, err)) !=
	    IST_OK)
		return st;
	if ((st = mg_write_header(m, w, err)) == IST_OK &&
	    (st = emit_sorted(m, w, err)) == IST_OK) {
		st = ist_writer_close(w, err);
		w = NULL;
	}
	ist_writer_free(w);
	if (st == IST_OK && m->damaged) {
		st = IST_EPARTIAL;
		ist_seterr(err, st, "some inputs could not be read whole");
		err->where = IST_AT_INPUT;
	}
	return st;
}

enum ist_status
ist_merge(char *const *paths, int n, int out_fd,
    const struct ist_merge_opts *o, ist_note_fn notefn, void *ctx,
    struct ist_error *err)
{
	struct merger m = { .o = o, .note = notefn, .ctx = ctx };
	struct input *in = calloc((size_t)n, sizeof(*in));
	enum ist_status st = IST_OK;
	size_t segi = 0;

	ist_plans_init();
	/* an input read ahead holds a second frame and the tokens of 32
	 * chunks of records, 9 to 12 MiB more while the sort buffers (half
	 * the budget) fill: the budget they are cut from is 24 MiB less, so
	 * that the peak stays where it was with 8 chunks and 16 MiB less
	 * (the bench's 10 M events: 117 MB, 120 before) */
	m.ahead = o->memory_bytes >= (64u << 20);
	if (in == NULL || budget(&m, o->memory_bytes - (m.ahead ? 24u << 20 :
	    0)) != 0) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		st = IST_ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		in[i].name = paths[i];
		in[i].path = strdup(paths[i]);
		if (strcmp(paths[i], "-") == 0 &&
		    (st = spool_stdin(&in[i], o->tmpdir, err)) != IST_OK)
			goto out;
	}
	for (int i = 0; i < n; i++) {
		struct stat sb;
		in[i].size = stat(in[i].path, &sb) == 0 ? (uint64_t)sb.st_size :
		    0;
		m.total_bytes += in[i].size;
	}
	for (int i = 0; i < n; i++) {
		if ((st = read_input(&m, &in[i], 1, &segi, err)) != IST_OK)
			goto out;
		m.done_bytes += in[i].size;
	}
	if ((st = spill_wait(&m, err)) != IST_OK)
		goto out;
	align(&m);
	if (must_remap(&m)) {
		segi = 0;
		m.total_bytes *= 2;
		for (int i = 0; i < n; i++) {
			if ((st = read_input(&m, &in[i], 2, &segi, err)) !=
			    IST_OK)
				goto out;
			m.done_bytes += in[i].size;
		}
	}
	st = write_out(&m, out_fd, err);
out:
	for (int i = 0; i < n && in; i++) {
		if (in[i].spooled && in[i].path)
			unlink(in[i].path);
		free(in[i].path);
	}
	free(in);
	merger_release(&m);
	return st;
}
