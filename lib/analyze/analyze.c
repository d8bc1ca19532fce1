/*
 * analyze.c - one streaming pass over a merged trace (records in start-time
 * order) computing the metrics of formats/analysis.md; the rules and the
 * verdict follow in ist_analyzer_finish().
 *
 * Per thread, a stack of the open ranges (Python calls, scopes, NVTX ranges,
 * CUDA calls, syncs) is kept by sweeping time forward: a range is pushed
 * when it starts and popped when the sweep passes its end.  Per device, the
 * union of GPU work (kernels, copies, memsets) is kept as its latest merged
 * interval; a gap opens when the sweep passes that interval's end and closes
 * when the next GPU operation starts.  While a gap is open, the time of the
 * launching threads is credited to what is on top of their stacks, which is
 * how idle GPU time gets attributed to host activity.
 *
 * This file holds the lookups and the dispatch per record kind; the sweep
 * over host ranges is in host.c, GPU work and idle attribution in gpu.c,
 * the containers in containers.c and the JSON in analysis_json.c, sharing
 * analyze_int.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>

#include "analyze_int.h"
#include "steps.h"

/* ---- lookups ---- */

struct thr *
an_thread_of(struct ist_analyzer *a, int64_t pid, int64_t tid)
{
	bool found;
	uint64_t key;
	uint32_t *v;
	struct thr *t;

	/* consecutive events are mostly one thread's */
	if (a->thr_last < a->nthr && a->thr[a->thr_last].pid == pid &&
	    a->thr[a->thr_last].tid == tid)
		return &a->thr[a->thr_last];
	key = (uint64_t)pid << 32 ^ (uint64_t)tid;
	if ((v = an_u64map_slot(&a->thrmap, key, &found)) == NULL)
		return NULL;
	if (found) {
		a->thr_last = *v - 1;
		return &a->thr[*v - 1];
	}
	if ((t = an_push((void **)&a->thr, &a->nthr, &a->capthr,
	    sizeof(*t))) == NULL)
		return NULL;
	a->thrmap.n++;
	*v = a->nthr;
	a->thr_last = a->nthr - 1;
	t->pid = pid;
	t->tid = tid;
	t->last_t = INT64_MIN;
	t->imp_end = INT64_MIN;
	return t;
}

struct proc *
an_proc_of(struct ist_analyzer *a, int64_t pid)
{
	bool found;
	uint32_t *v = an_u64map_slot(&a->procmap, (uint64_t)pid, &found);
	struct proc *p;

	if (v == NULL)
		return NULL;
	if (found)
		return &a->proc[*v - 1];
	if ((p = an_push((void **)&a->proc, &a->nproc, &a->capproc,
	    sizeof(*p))) == NULL)
		return NULL;
	a->procmap.n++;
	*v = a->nproc;
	p->pid = pid;
	return p;
}

/* Thread t's process, found once; NULL when out of memory. */
struct proc *
an_thr_proc(struct ist_analyzer *a, struct thr *t)
{
	struct proc *p;

	if (t->proc1 == 0) {
		if ((p = an_proc_of(a, t->pid)) == NULL)
			return NULL;
		t->proc1 = (uint32_t)(p - a->proc) + 1;
	}
	return &a->proc[t->proc1 - 1];
}

/* Process p's RSS figures start again from its next sample */
void
an_proc_rss_restart(struct proc *p)
{
	p->have_rss = false;
	p->rss_peak = p->rss_pre = 0;
	p->rss_pre_ts = 0;
	p->nr = p->rstride = p->rskip = 0;
}

/* Index of the stat for key in (arr, n, cap), created zeroed; -1 ENOMEM. */
int64_t
an_stat_of(struct u64map *m, void **arr, uint32_t *n, uint32_t *cap,
    size_t size, uint64_t key, bool *created)
{
	bool found;
	uint32_t *v = an_u64map_slot(m, key, &found);
	if (v == NULL)
		return -1;
	*created = !found;
	if (found)
		return *v - 1;
	if (an_push(arr, n, cap, size) == NULL)
		return -1;
	m->n++;
	*v = *n;
	return *n - 1;
}

int64_t
an_names_id_slow(struct an_names *nm, const struct ist_event *ev,
    enum ist_field f)
{
	const struct ist_str *s;
	uint32_t sid;
	int64_t id;

	if (!IST_HAS(ev, f))
		return 0;
	s = ist_field_str((struct ist_event *)ev, f);   /* read only */
	/* the reader's own event (not a copy): its string ids name its
	 * strings in this segment (a header's come from no id) */
	if (ev != nm->src_ev || ev->type == IST_HEADER ||
	    (sid = ist_reader_string_id(nm->src, (int)f)) == 0)
		return an_intern(&nm->str, s->p, s->n);
	if (sid < nm->nsid && nm->sidmap[sid])
		return (int64_t)nm->sidmap[sid] - 1;
	if ((id = an_intern(&nm->str, s->p, s->n)) >= 0)
		/* out of memory: uncached, hashed again next time */
		(void)ist_idmap_put(&nm->sidmap, &nm->nsid, sid,
		    (uint32_t)id + 1);
	return id;
}

/* A segment or a reader starts: its string ids are new. */
static void
new_ids(struct an_names *nm)
{
	if (nm->nsid)
		memset(nm->sidmap, 0, nm->nsid * sizeof(*nm->sidmap));
}

void
an_names_event(struct an_names *nm, const struct ist_event *ev)
{
	nm->src_ev = nm->src ? ev : NULL;
	if (ev->type == IST_HEADER)
		new_ids(nm);
}

void
an_names_reader(struct an_names *nm, const struct ist_reader *r)
{
	nm->src = r;
	nm->src_sid = r ? ist_reader_string_ids(r) : NULL;
	nm->src_ev = NULL;
	new_ids(nm);
}

void
an_names_release(struct an_names *nm)
{
	free(nm->sidmap);
	ist_strtab_release(&nm->str);
	memset(nm, 0, sizeof(*nm));
}

void
ist_analyzer_reader(struct ist_analyzer *a, const struct ist_reader *r)
{
	an_names_reader(&a->nm, r);
	if (a->sw)
		an_stepwork_reader(a->sw, r);
	if (a->ride)
		an_stepwork_reader(a->ride, r);
}


void
ist_analyzer_read_error(struct ist_analyzer *a, const char *msg)
{
	snprintf(a->read_error, sizeof(a->read_error), "%s", msg);
}

/* A source is-merge could not read whole (formats/trace-format.md). */
static void
source_damage(struct ist_analyzer *a, const json_t *s)
{
	const char *why = ist_jstr(s, "error");
	int64_t cut = ist_jint(s, "truncated_bytes");
	json_t *d;

	if (cut < 0)
		cut = 0;
	if ((*why == 0 && cut == 0) || (d = json_pack("{s:s,s:I}", "input",
	    ist_jstr(s, "input"), "truncated_bytes", (json_int_t)cut)) == NULL)
		return;
	if (*why)
		json_object_set_new(d, "error", json_string(why));
	json_array_append_new(a->damaged, d);
	a->damaged_bytes += cut;
}

static int
header(struct ist_analyzer *a, const struct ist_event *ev)
{
	a->segments++;
	if (IST_HAS(ev, IST_F_PRODUCER) && !IST_HAS(ev, IST_F_SOURCES))
		json_array_append_new(a->producers, json_stringn(
		    ev->producer.p, ev->producer.n));
	if (IST_HAS(ev, IST_F_HOST) && a->host == 0) {
		int64_t h = an_name_id(a, ev, IST_F_HOST);
		if (h < 0)
			return -1;
		a->host = (uint32_t)h;
	}
	if (IST_HAS(ev, IST_F_PIDS)) {
		/* the processes whose stream this is (a merge's: all) */
		int64_t *pids = NULL;
		size_t n = 0;
		int r = ist_pids(ev->pids, &pids, &n);
		for (size_t i = 0; i < n && r == 0; i++) {
			bool found;
			uint32_t *v = an_u64map_slot(&a->streamed,
			    (uint64_t)pids[i], &found);
			if (v == NULL)
				r = -1;
			else if (!found) {
				*v = 1;
				a->streamed.n++;
			}
		}
		free(pids);
		if (r != 0)
			return -1;
	}
	if (IST_HAS(ev, IST_F_SOURCES)) {
		struct ist_buf b = { 0 };
		struct ist_error e;
		json_t *src, *s;
		size_t i;
		a->merged = true;
		if (ist_cbor_to_json(ev->sources, &b, &e) == IST_OK &&
		    (src = json_loadb(b.p, b.n, 0, NULL)) != NULL) {
			json_array_foreach(src, i, s) {
				json_t *d;
				size_t j;
				double u = ist_jnum(s, "uncertainty_ns");
				const char *ps = ist_jstr(s, "producer");
				const char *hs = ist_jstr(s, "host");
				if (*ps)
					json_array_append_new(a->producers,
					    json_string(ps));
				if (*hs && a->host == 0) {
					int64_t h = an_intern(&a->nm.str, hs,
					    strlen(hs));
					if (h > 0)
						a->host = (uint32_t)h;
				}
				if (json_is_false(json_object_get(s,
				    "aligned")))
					a->unaligned++;
				source_damage(a, s);
				if (u > a->clock_unc)
					a->clock_unc = ist_d2i(u);
				json_array_foreach(json_object_get(s,
				    "domains"), j, d)
					if (ist_jnum(d, "uncertainty_ns") >
					    a->clock_unc)
						a->clock_unc = ist_jint(d,
						    "uncertainty_ns");
			}
			json_decref(src);
		}
		ist_buf_release(&b);
	}
	return 0;
}

/*
 * Places an event on the timeline: false when it is left out (a time
 * that is not one, out of order, a negative range), counted where it is.
 */
static bool
place(struct ist_analyzer *a, const struct ist_event *ev)
{
	int64_t key, end;

	/* times beyond +-2^61 ns (73 years) are not times: left out, so
	 * that no difference or bucket index overflows */
	if ((IST_HAS(ev, IST_F_START) && (ev->start_ns > IST_TIME_MAX ||
	    ev->start_ns < -IST_TIME_MAX || ev->end_ns > IST_TIME_MAX ||
	    ev->end_ns < -IST_TIME_MAX)) || (IST_HAS(ev, IST_F_TS) &&
	    (ev->ts_ns > IST_TIME_MAX || ev->ts_ns < -IST_TIME_MAX))) {
		a->bad_times++;
		return false;
	}
	key = IST_HAS(ev, IST_F_START) ? ev->start_ns :
	    IST_HAS(ev, IST_F_TS) ? ev->ts_ns : INT64_MIN;
	if (key == INT64_MIN)
		return true;
	end = IST_HAS(ev, IST_F_END) ? ev->end_ns : key;
	if (key < a->last_key) {
		a->out_of_order++;
		return false;    /* not merged: cannot be placed */
	}
	a->last_key = key;
	if (!a->have_t) {
		a->t0 = key;
		a->t1 = end;
		a->have_t = true;
		/* the window, from the trace's start */
		if (!a->win_at) {
			a->win[0] = a->win_rel[0] >= 0 ? key + a->win_rel[0] :
			    INT64_MIN;
			a->win[1] = a->win_rel[1] >= 0 ? key + a->win_rel[1] :
			    INT64_MAX;
		}
	}
	if (end > a->t1)
		a->t1 = end;
	/* a negative range: ignored */
	return !(IST_HAS(ev, IST_F_END) && end < key);
}

/* ---- windows: --from/--to and the capture's pauses ---- */

void
ist_analyzer_window(struct ist_analyzer *a, int64_t from_ns, int64_t to_ns)
{
	a->win_rel[0] = from_ns;
	a->win_rel[1] = to_ns;
	a->windowed = from_ns >= 0 || to_ns >= 0;
}

void
ist_analyzer_window_at(struct ist_analyzer *a, int64_t from, int64_t to,
    json_t *how)
{
	a->win[0] = from;
	a->win[1] = to;
	a->windowed = a->win_at = true;
	json_decref(a->win_how);
	a->win_how = how;
}

/* The pauses' time up to t */
static int64_t
paused_to(const struct ist_analyzer *a, int64_t t)
{
	uint32_t lo = 0, hi = a->npz;
	int64_t sum;

	/* the first pause that ends after t */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (a->pz[mid].e <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	sum = lo ? a->pz[lo - 1].sum : 0;
	if (lo < a->npz && t > a->pz[lo].s)
		sum += t - a->pz[lo].s;
	else if (lo == a->npz && a->cap_off && t > a->cap_off_at)
		sum += t - a->cap_off_at;     /* the pause under way */
	return sum;
}

int64_t
an_paused(const struct ist_analyzer *a, int64_t x, int64_t y)
{
	if ((a->npz == 0 && !a->cap_off) || y <= x)
		return 0;
	return paused_to(a, y) - paused_to(a, x);
}

/* A capture record: recording paused or resumed at its time */
static int
capture(struct ist_analyzer *a, const struct ist_event *ev)
{
	struct proc *p;

	/* a process whose recording begins here (its first capture record
	 * switches on: a flight recorder's window): its memory from here,
	 * where what InferScope holds in it is said; before, all of it
	 * read as the program's (a flat program grew 20 MiB into its
	 * window) */
	if (IST_HAS(ev, IST_F_PID)) {
		if ((p = an_proc_of(a, ev->pid)) == NULL)
			return -1;
		if (!p->captured && ev->on)
			an_proc_rss_restart(p);
		p->captured = true;
	}
	/* a first record that switches on: nothing was recorded before it
	 * (a flight recorder's window, whose older events it overwrote) */
	if (a->captures++ == 0 && ev->on && ev->ts_ns > a->t0) {
		a->cap_off = true;
		a->cap_off_at = a->t0;
	}
	if (!ev->on && !a->cap_off) {
		a->cap_off = true;
		a->cap_off_at = ev->ts_ns;
	} else if (ev->on && a->cap_off && ev->ts_ns <= a->cap_off_at) {
		a->cap_off = false;     /* back on at once: no pause */
	} else if (ev->on && a->cap_off) {
		int64_t before = a->npz ? a->pz[a->npz - 1].sum : 0;
		struct pause *pz = an_push((void **)&a->pz, &a->npz,
		    &a->cappz, sizeof(*a->pz));
		if (pz == NULL)
			return -1;
		*pz = (struct pause){ a->cap_off_at, ev->ts_ns,
		    before + ev->ts_ns - a->cap_off_at };
		a->cap_off = false;
	}
	return 0;
}

/* CUDA's records, which the CUDA collector writes through a pause (GPU
 * work under way, the driver's own buffers): in a pause, left out.  The
 * host's collectors write nothing there, and the /proc samples stay, the
 * machine around the windows. */
static bool
cuda_record(enum ist_type t)
{
	return t == IST_CUDA_API || t == IST_GPU_KERNEL || t == IST_SYNC ||
	    t == IST_H2D_COPY || t == IST_D2H_COPY || t == IST_D2D_COPY ||
	    t == IST_MEMSET;
}

/* GPU work whose launch was analysed (in a window of the capture): kept
 * where it runs on into a pause, as the window's own work. */
static bool
launched_inside(const struct ist_analyzer *a, const struct ist_event *ev)
{
	const struct corr *c;

	if (ev->type == IST_CUDA_API || ev->type == IST_SYNC ||
	    !IST_HAS(ev, IST_F_CORRELATION))
		return false;
	c = &a->corr[(uint64_t)ev->correlation & (CORR_SLOTS - 1)];
	return c->corr == ev->correlation && c->pid == ev->pid;
}

/*
 * Whether ev is analysed, and as what (*out: ev, or ev cut at the
 * window's edges in *copy): CUDA's records in a pause of the capture are
 * left out (but for GPU work launched before it), and with --from/--to
 * everything outside.
 */
static bool
in_window(struct ist_analyzer *a, const struct ist_event *ev,
    struct ist_event *copy, const struct ist_event **out)
{
	bool range = IST_HAS(ev, IST_F_START) && IST_HAS(ev, IST_F_END);
	int64_t key = range ? ev->start_ns : ev->ts_ns;
	int64_t end = range ? ev->end_ns : key;

	*out = ev;
	if (!IST_HAS(ev, IST_F_START) && !IST_HAS(ev, IST_F_TS))
		return true;
	if (a->cap_off && cuda_record(ev->type) && !launched_inside(a, ev))
		return false;
	if (!a->windowed)
		return true;
	if (key >= a->win[1] || end < a->win[0] || (!range &&
	    key < a->win[0]))
		return false;
	if (range && (key < a->win[0] || end > a->win[1])) {
		*copy = *ev;
		if (key < a->win[0])
			copy->start_ns = a->win[0];
		if (end > a->win[1])
			copy->end_ns = a->win[1];
		*out = copy;
	}
	return true;
}

/* The dev index for device number devno with no UUID known; a new one for
 * a UUID (uuid != 0) not seen before */
static int
dev_slot(struct ist_analyzer *a, int64_t devno, uint32_t uuid)
{
	for (int i = 0; i < a->ndev; i++)
		if (a->dev[i].uuid == uuid && (uuid || a->dev[i].devno == devno))
			return i;
	if (a->ndev == MAXDEV)
		return MAXDEV - 1;
	a->dev[a->ndev].devno = devno;
	a->dev[a->ndev].uuid = uuid;
	return a->ndev++;
}

/* The binding of process pid's device devno to a GPU by UUID, if any */
static struct devbind *
bind_of(struct ist_analyzer *a, int64_t pid, int64_t devno)
{
	for (int i = 0; i < a->nbind; i++)
		if (a->dbind[i].pid == pid && a->dbind[i].devno == devno)
			return &a->dbind[i];
	return NULL;
}

int
an_dev_of(struct ist_analyzer *a, const struct ist_event *ev)
{
	int64_t devno = IST_HAS(ev, IST_F_DEVICE) ? ev->device : 0;
	struct devbind *b;

	if (IST_HAS(ev, IST_F_PID) && (b = bind_of(a, ev->pid, devno)))
		return b->slot;
	return dev_slot(a, devno, 0);
}

/* A device record: with its process and UUID, the GPU it names is one
 * across processes (CUDA_VISIBLE_DEVICES numbers each process's from 0) */
static struct dev *
device_of(struct ist_analyzer *a, const struct ist_event *ev)
{
	struct devbind *b;
	int64_t u;
	int slot;

	if (!IST_HAS(ev, IST_F_UUID) || !IST_HAS(ev, IST_F_PID) ||
	    ev->uuid.n == 0)
		return &a->dev[an_dev_of(a, ev)];
	if ((u = an_name_id(a, ev, IST_F_UUID)) < 0)
		return NULL;
	slot = dev_slot(a, ev->device, (uint32_t)u);
	if ((b = bind_of(a, ev->pid, ev->device)) != NULL)
		b->slot = slot;
	else if (a->nbind < (int)(sizeof(a->dbind) / sizeof(a->dbind[0])))
		a->dbind[a->nbind++] = (struct devbind){ ev->pid, ev->device,
		    slot };
	return &a->dev[slot];
}

/* A process, thread or device record: names and what they say. */
static int
naming(struct ist_analyzer *a, const struct ist_event *ev)
{
	struct proc *p;
	struct thr *t;
	struct dev *d;
	int64_t n;

	if (ev->type == IST_DEVICE && ev->device < 0)
		return 0;
	if ((n = an_name_id(a, ev, IST_F_NAME)) < 0)
		return -1;
	switch (ev->type) {
	case IST_PROCESS:
		if ((p = an_proc_of(a, ev->pid)) == NULL)
			return -1;
		p->name = (uint32_t)n;
		/* the last command line: a process that exec'd (a wrapper,
		 * a pyenv shim) is named again, and its own stream, after
		 * the sampler's, knows its command line best */
		if (IST_HAS(ev, IST_F_CMDLINE)) {
			uint8_t *c = malloc(ev->cmdline.n);
			if (c != NULL) {
				memcpy(c, ev->cmdline.p, ev->cmdline.n);
				free(p->cmdline.p);
				p->cmdline.p = c;
				p->cmdline.n = ev->cmdline.n;
			}
		}
		return 0;
	case IST_THREAD:
		if ((t = an_thread_of(a, ev->pid, ev->tid)) == NULL)
			return -1;
		t->name = (uint32_t)n;
		return 0;
	default:
		if ((d = device_of(a, ev)) == NULL)
			return -1;
		d->info = true;
		d->name = (uint32_t)n;
		d->sm = IST_HAS(ev, IST_F_SM_COUNT) ? ev->sm_count : 0;
		d->mem = IST_HAS(ev, IST_F_MEMORY_BYTES) ? ev->memory_bytes :
		    0;
		d->pcie = IST_HAS(ev, IST_F_PCIE_GBPS) ? ev->pcie_gbps : 0;
		return 0;
	}
}

enum ist_status
ist_analyzer_add(struct ist_analyzer *a, const struct ist_event *ev,
    struct ist_error *err)
{
	struct ist_event copy;
	int64_t name = 0;
	int r = 0;

	an_names_event(&a->nm, ev);
	if (ev->type == IST_ANALYSIS)
		return IST_OK;
	if (ev->type != IST_HEADER && ++a->events == a->look_at)
		an_ahead_look(a);
	if (a->ride)
		an_ahead_ride(a, ev);
	if (ev->type == IST_HEADER) {
		r = header(a, ev);
		goto out;
	}
	if (!place(a, ev))
		return IST_OK;
	if (ev->type == IST_CAPTURE) {
		r = capture(a, ev);
		goto out;
	}
	if (!in_window(a, ev, &copy, &ev)) {
		a->left_out++;
		return IST_OK;
	}
	if (ev->type == IST_CPU_CALL || ev->type == IST_SCOPE ||
	    ev->type == IST_NVTX_RANGE || ev->type == IST_CUDA_API ||
	    ev->type == IST_SYNC) {
		/* the name interned once, for the steps and the stacks */
		if ((name = an_name_id(a, ev, ev->type == IST_SYNC ?
		    IST_F_KIND : IST_F_NAME)) < 0) {
			ist_seterr(err, IST_ENOMEM, "out of memory");
			return IST_ENOMEM;
		}
		if (ev->type != IST_SYNC && ist_steps_add_id(a->steps, ev,
		    (uint64_t)name, err) != IST_OK)
			return IST_ENOMEM;
	} else if (ev->type == IST_COUNTER && (an_name_is(ev, "process.ppid") ||
	    an_name_is(ev, "thread.cpu_ns")) && ist_steps_add_id(a->steps, ev,
	    0, err) != IST_OK) {
		return IST_ENOMEM;    /* whose child a process is; a thread's
		                       * CPU time: its time off a CPU */
	}
	switch (ev->type) {
	case IST_PROCESS:
	case IST_THREAD:
	case IST_DEVICE:
		r = naming(a, ev);
		break;
	case IST_CPU_CALL:
	case IST_SCOPE:
	case IST_NVTX_RANGE:
	case IST_CUDA_API:
	case IST_SYNC:
		r = an_host_range(a, ev, name);
		break;
	case IST_GPU_KERNEL:
		r = an_kernel(a, ev);
		break;
	case IST_H2D_COPY:
	case IST_D2H_COPY:
	case IST_D2D_COPY:
	case IST_MEMSET:
		r = an_copy_op(a, ev);
		break;
	case IST_MEMORY_ALLOC:
	case IST_MEMORY_FREE:
		if (IST_HAS(ev, IST_F_DEVICE) && ev->device >= 0) {
			struct dev *d = &a->dev[an_dev_of(a, ev)];
			d->mem_cur += ev->type == IST_MEMORY_ALLOC ? ev->bytes :
			    -ev->bytes;
			if (d->mem_cur > d->mem_peak)
				d->mem_peak = d->mem_cur;
		}
		break;
	case IST_COUNTER:
		r = an_counter(a, ev);
		break;
	case IST_LOSS:
		a->lost += (uint64_t)ev->events;
		break;
	case IST_INSTANT:
	case IST_NVTX_MARK:
		a->instants++;
		break;
	default:
		break;
	}
out:
	if (r) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	return IST_OK;
}

/* ---- the second pass: steps ---- */

enum ist_status
ist_analyzer_step(struct ist_analyzer *a, const char *name,
    struct ist_error *err)
{
	ist_steps_free(a->steps);
	a->steps = NULL;
	return ist_steps_new(&a->steps, name, err);
}

bool
ist_analyzer_wants_again(struct ist_analyzer *a)
{
	struct ist_error e;
	const char *name;
	int64_t pid, tid, line;
	enum ist_type type;
	bool again;
	int loop;

	if (a->sw || (name = ist_steps_choose(a->steps)) == NULL) {
		an_ahead_free(a);
		return false;
	}
	ist_steps_chosen(a->steps, &pid, &tid, &type, &line, &loop);
	/* read already, while the first pass went on? */
	a->sw = an_ahead_take(a, name, pid, tid, type, line, loop);
	an_ahead_free(a);
	again = a->sw == NULL;
	if (again && an_stepwork_new(&a->sw, a, name, pid, tid, type, line,
	    loop, &e) != IST_OK)
		return false;
	an_stepwork_bases(a->sw);
	return again;
}

enum ist_status
ist_analyzer_again(struct ist_analyzer *a, const struct ist_event *ev,
    struct ist_error *err)
{
	bool w = a->windowed;

	return an_stepwork_event(a->sw, ev, w ? a->win[0] : INT64_MIN,
	    w ? a->win[1] : INT64_MAX, err);
}

/* ---- lifecycle ---- */

enum ist_status
ist_analyzer_new(struct ist_analyzer **out, const struct ist_rules *rules,
    struct ist_error *err)
{
	struct ist_analyzer *a = calloc(1, sizeof(*a));

	*out = NULL;
	if (a == NULL || (a->corr = calloc(CORR_SLOTS, sizeof(*a->corr))) ==
	    NULL || an_intern(&a->nm.str, "", 0) != 0 ||
	    (a->producers = json_array()) == NULL ||
	    ist_steps_new(&a->steps, NULL, err) != IST_OK ||
	    (a->damaged = json_array()) == NULL) {
		ist_analyzer_free(a);
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	a->rules = rules;
	a->last_key = INT64_MIN;
	a->win_rel[0] = a->win_rel[1] = -1;
	a->slow_launch_ns = ist_rules_params(rules, IST_RULE_LAUNCH_BOUND)->
	    launch_bound.slow_launch_us * 1000;
	a->launch_delay_ns = ist_rules_params(rules, IST_RULE_LAUNCH_BOUND)->
	    launch_bound.launch_delay_us * 1000;
	a->kernel_wait_ns = ist_rules_params(rules, IST_RULE_GPU_IDLE)->
	    gpu_idle.kernel_wait_us * 1000;
	*out = a;
	return IST_OK;
}

void
ist_analyzer_free(struct ist_analyzer *a)
{
	if (a == NULL)
		return;
	an_names_release(&a->nm);
	for (uint32_t i = 0; i < a->nthr; i++) {
		free(a->thr[i].st);
		free(a->thr[i].okey);
		free(a->thr[i].wmap.key);
		free(a->thr[i].wmap.val);
		free(a->thr[i].w);
		free(a->thr[i].pw);
		free(a->thr[i].ocnt);
	}
	free(a->thr);
	an_u64map_release(&a->thrmap);
	for (uint32_t i = 0; i < a->nproc; i++) {
		free(a->proc[i].cmdline.p);
		free(a->proc[i].rts);
		free(a->proc[i].rv);
		free(a->proc[i].imps);
	}
	free(a->proc);
	an_u64map_release(&a->procmap);
	an_u64map_release(&a->streamed);
	for (int i = 0; i < MAXDEV; i++) {
		an_dist_release(&a->dev[i].kdur);
		an_dist_release(&a->dev[i].gapd);
		an_dist_release(&a->dev[i].ldelay);
		free(a->dev[i].conc.h);
	}
	for (uint32_t i = 0; i < a->nsc; i++)
		an_dist_release(&a->sc[i].d);
	free(a->sc);
	an_u64map_release(&a->scmap);
	free(a->fn);
	free(a->fn_of_name);
	an_u64map_release(&a->fnmap);
	free(a->kn);
	an_u64map_release(&a->knmap);
	free(a->kf);
	an_u64map_release(&a->kfmap);
	free(a->sy);
	an_u64map_release(&a->symap);
	free(a->idle);
	an_u64map_release(&a->idlemap);
	free(a->corr);
	json_decref(a->win_how);
	free(a->pz);
	an_dist_release(&a->launch_d);
	json_decref(a->producers);
	json_decref(a->damaged);
	an_ahead_free(a);
	ist_steps_free(a->steps);
	an_stepwork_free(a->sw);
	free(a);
}
