/* info.c - the summary behind is-info. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

#define LIST_SHOWN 20

struct ent {
	int64_t a, b;
	char *name;
};

struct list {
	struct ent *v;
	size_t n, cap;
	size_t *slot;           /* open addressing: index + 1, or 0 */
	size_t nslot;           /* a power of two, at least 2 n */
};

struct ist_info {
	char *file;
	bool have_header;
	char *producer, *host;
	int64_t vmaj, vmin;
	uint64_t counts[IST_NTYPES];
	int64_t t0, t1;
	bool have_time;
	struct list procs, threads, devices;
	uint64_t loss_records, lost_events;
	struct ist_reader_stats st;
};

struct ist_info *
ist_info_new(void)
{
	return calloc(1, sizeof(struct ist_info));
}

static void
list_free(struct list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	free(l->slot);
}

void
ist_info_free(struct ist_info *info)
{
	if (info == NULL)
		return;
	free(info->file);
	free(info->producer);
	free(info->host);
	list_free(&info->procs);
	list_free(&info->threads);
	list_free(&info->devices);
	free(info);
}

static char *
dupstr(struct ist_str s)
{
	return strndup(s.p ? s.p : "", s.n);
}

static size_t
hash2(int64_t a, int64_t b)
{
	uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15u ^
	    ((uint64_t)b + 0x632be59bd9b4e019u) * 0xbf58476d1ce4e5b9u;

	return (size_t)(h ^ h >> 31);
}

/* The slot of (a, b): its entity's, or the empty one it would take. */
static size_t *
find(const struct list *l, int64_t a, int64_t b)
{
	size_t m = l->nslot - 1, i = hash2(a, b) & m;

	while (l->slot[i] && (l->v[l->slot[i] - 1].a != a ||
	    l->v[l->slot[i] - 1].b != b))
		i = (i + 1) & m;
	return &l->slot[i];
}

static bool
grow(struct list *l)
{
	size_t ns = 64;
	size_t *slot;

	while (ns < 2 * (l->n + 1))
		ns *= 2;
	if ((slot = calloc(ns, sizeof(*slot))) == NULL)
		return false;
	free(l->slot);
	l->slot = slot;
	l->nslot = ns;
	for (size_t i = 0; i < l->n; i++)
		*find(l, l->v[i].a, l->v[i].b) = i + 1;
	return true;
}

/* Adds or renames (a later record with a name wins) an entity: a hash
 * lookup, so that 200,000 threads take as long as their records. */
static void
list_put(struct list *l, int64_t a, int64_t b, const struct ist_event *ev)
{
	struct ent *e;
	size_t *slot;

	if (2 * (l->n + 1) > l->nslot && !grow(l))
		return;
	slot = find(l, a, b);
	if (*slot) {
		e = &l->v[*slot - 1];
	} else {
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 16;
			struct ent *nv = realloc(l->v, cap * sizeof(*nv));
			if (nv == NULL)
				return;
			l->v = nv;
			l->cap = cap;
		}
		e = &l->v[l->n++];
		*e = (struct ent){ a, b, NULL };
		*slot = l->n;
	}
	if (ev && IST_HAS(ev, IST_F_NAME)) {
		free(e->name);
		e->name = dupstr(ev->name);
	}
}

static void
span(struct ist_info *in, int64_t a, int64_t b)
{
	if (!in->have_time) {
		in->t0 = a;
		in->t1 = b;
		in->have_time = true;
		return;
	}
	if (a < in->t0)
		in->t0 = a;
	if (b > in->t1)
		in->t1 = b;
}

void
ist_info_add(struct ist_info *in, const struct ist_event *ev)
{
	if ((unsigned)ev->type >= IST_NTYPES)
		return;
	if (ev->type == IST_HEADER) {
		if (!in->have_header) {
			in->have_header = true;
			in->vmaj = ev->version_major;
			in->vmin = ev->version_minor;
			if (IST_HAS(ev, IST_F_PRODUCER))
				in->producer = dupstr(ev->producer);
			if (IST_HAS(ev, IST_F_HOST))
				in->host = dupstr(ev->host);
		}
		return;
	}
	in->counts[ev->type]++;
	if (IST_HAS(ev, IST_F_START))
		span(in, ev->start_ns, ev->end_ns);
	else if (IST_HAS(ev, IST_F_TS) && ev->type != IST_CLOCK)
		span(in, ev->ts_ns, ev->ts_ns);
	switch (ev->type) {
	case IST_PROCESS:
		list_put(&in->procs, ev->pid, 0, ev);
		break;
	case IST_THREAD:
		list_put(&in->threads, ev->pid, ev->tid, ev);
		break;
	case IST_DEVICE:
		list_put(&in->devices, ev->device, 0, ev);
		break;
	case IST_LOSS:
		list_put(&in->procs, ev->pid, 0, NULL);
		in->loss_records++;
		in->lost_events += (uint64_t)ev->events;
		break;
	default:
		if (IST_HAS(ev, IST_F_PID))
			list_put(&in->procs, ev->pid, 0, NULL);
		if (IST_HAS(ev, IST_F_TID))
			list_put(&in->threads, ev->pid, ev->tid, NULL);
		if (IST_HAS(ev, IST_F_DEVICE))
			list_put(&in->devices, ev->device, 0, NULL);
		break;
	}
}

static int
ent_cmp(const void *x, const void *y)
{
	const struct ent *a = x, *b = y;

	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	return 0;
}

void
ist_info_finish(struct ist_info *in, const struct ist_reader_stats *st,
    const char *name)
{
	struct list *ls[] = { &in->procs, &in->threads, &in->devices };

	in->st = *st;
	free(in->file);
	in->file = strdup(strcmp(name, "-") == 0 ? "<stdin>" : name);
	/* sorted, the entities leave their slots: a later list_put
	 * indexes them afresh */
	for (size_t i = 0; i < 3; i++) {
		free(ls[i]->slot);
		ls[i]->slot = NULL;
		ls[i]->nslot = 0;
	}
	if (in->procs.n > 1)
		qsort(in->procs.v, in->procs.n, sizeof(struct ent), ent_cmp);
	if (in->threads.n > 1)
		qsort(in->threads.v, in->threads.n, sizeof(struct ent),
		    ent_cmp);
	if (in->devices.n > 1)
		qsort(in->devices.v, in->devices.n, sizeof(struct ent),
		    ent_cmp);
}

static uint64_t
total_events(const struct ist_info *in)
{
	uint64_t n = 0;

	for (int t = 1; t < IST_NTYPES; t++)
		n += in->counts[t];
	return n;
}

static json_t *
list_json(const struct list *l, const char *ka, const char *kb)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->n; i++) {
		json_t *o = json_object();
		json_object_set_new(o, ka, json_integer(l->v[i].a));
		if (kb)
			json_object_set_new(o, kb, json_integer(l->v[i].b));
		json_object_set_new(o, "name", l->v[i].name ?
		    json_string(l->v[i].name) : json_null());
		json_array_append_new(a, o);
	}
	return a;
}

static enum ist_status
render_json(const struct ist_info *in, struct ist_buf *out)
{
	json_t *o = json_object(), *counts = json_object();
	uint64_t n = total_events(in);
	char *s;
	int e;

	json_object_set_new(o, "file", json_string(in->file));
	json_object_set_new(o, "format", json_string(IST_FORMAT_NAME));
	json_object_set_new(o, "version", json_pack("[II]",
	    (json_int_t)in->vmaj, (json_int_t)in->vmin));
	json_object_set_new(o, "producer", in->producer ?
	    json_string(in->producer) : json_null());
	json_object_set_new(o, "host", in->host ? json_string(in->host) :
	    json_null());
	json_object_set_new(o, "segments", json_integer(
	    (json_int_t)in->st.segments));
	json_object_set_new(o, "start_ns", in->have_time ?
	    json_integer(in->t0) : json_null());
	json_object_set_new(o, "end_ns", in->have_time ?
	    json_integer(in->t1) : json_null());
	json_object_set_new(o, "duration_ns", json_integer(in->have_time ?
	    in->t1 - in->t0 : 0));
	json_object_set_new(o, "events", json_integer((json_int_t)n));
	for (int t = 1; t < IST_NTYPES; t++)
		if (in->counts[t])
			json_object_set_new(counts, ist_types[t].name,
			    json_integer((json_int_t)in->counts[t]));
	json_object_set_new(o, "counts", counts);
	json_object_set_new(o, "frames", json_integer(
	    (json_int_t)in->st.frames));
	json_object_set_new(o, "bytes", json_integer(
	    (json_int_t)in->st.in_bytes));
	json_object_set_new(o, "raw_bytes", json_integer(
	    (json_int_t)in->st.raw_bytes));
	json_object_set_new(o, "bytes_per_event", n ? json_real(
	    (double)(int64_t)((double)in->st.in_bytes / (double)n * 100 +
	    0.5) / 100) : json_null());
	json_object_set_new(o, "processes", list_json(&in->procs, "pid",
	    NULL));
	json_object_set_new(o, "threads", list_json(&in->threads, "pid",
	    "tid"));
	json_object_set_new(o, "devices", list_json(&in->devices, "device",
	    NULL));
	json_object_set_new(o, "loss_records", json_integer(
	    (json_int_t)in->loss_records));
	json_object_set_new(o, "lost_events", json_integer(
	    (json_int_t)in->lost_events));
	json_object_set_new(o, "skipped_records", json_integer(
	    (json_int_t)in->st.skipped));
	json_object_set_new(o, "truncated_bytes", json_integer(
	    (json_int_t)in->st.truncated_bytes));
	json_object_set_new(o, "truncated_kept", json_integer(
	    (json_int_t)in->st.truncated_kept));
	s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(10));
	json_decref(o);
	if (s == NULL)
		return IST_ENOMEM;
	e = ist_buf_printf(out, "%s\n", s);
	free(s);
	return e ? IST_ENOMEM : IST_OK;
}

/* Text from the trace (or a file name) with no terminal escapes in it. */
static int
put_safe(struct ist_buf *out, const char *s)
{
	size_t at = out->n;
	int e = ist_buf_puts(out, s);

	if (!e)
		ist_terminal_safe_n(out->p + at, out->n - at);
	return e;
}

static int
render_list(struct ist_buf *out, const char *title, const struct list *l,
    bool pair)
{
	int e = ist_buf_printf(out, "%-12s %zu\n", title, l->n);

	for (size_t i = 0; i < l->n && i < LIST_SHOWN && !e; i++) {
		if (pair)
			e = ist_buf_printf(out, "  %" PRId64 "/%" PRId64,
			    l->v[i].a, l->v[i].b);
		else
			e = ist_buf_printf(out, "  %" PRId64, l->v[i].a);
		if (!e)
			e = ist_buf_puts(out, "  ");
		if (!e)
			e = put_safe(out, l->v[i].name ? l->v[i].name : "-");
		if (!e)
			e = ist_buf_puts(out, "\n");
	}
	if (!e && l->n > LIST_SHOWN)
		e = ist_buf_printf(out, "  ... and %zu more\n",
		    l->n - LIST_SHOWN);
	return e;
}

enum ist_status
ist_info_render(const struct ist_info *in, bool json, struct ist_buf *out)
{
	uint64_t n = total_events(in);
	int e;

	if (json)
		return render_json(in, out);
	e = ist_buf_printf(out, "%-12s ", "trace:");
	if (!e)
		e = put_safe(out, in->file);
	if (!e)
		e = ist_buf_printf(out, "\n%-12s %s %" PRId64 ".%" PRId64,
		    "format:", IST_FORMAT_NAME, in->vmaj, in->vmin);
	if (!e && in->producer)
		e = ist_buf_puts(out, ", producer ");
	if (!e && in->producer)
		e = put_safe(out, in->producer);
	if (!e && in->host)
		e = ist_buf_puts(out, ", host ");
	if (!e && in->host)
		e = put_safe(out, in->host);
	if (!e)
		e = ist_buf_puts(out, "\n");
	if (!e)
		e = ist_buf_printf(out, "%-12s %" PRIu64 "\n", "segments:",
		    in->st.segments);
	if (!e && in->have_time)
		e = ist_buf_printf(out, "%-12s %.6f s (%" PRId64 " .. %"
		    PRId64 " ns)\n", "duration:",
		    (double)(in->t1 - in->t0) / 1e9, in->t0, in->t1);
	else if (!e)
		e = ist_buf_printf(out, "%-12s -\n", "duration:");
	if (!e)
		e = ist_buf_printf(out, "%-12s %" PRIu64 " in %" PRIu64
		    " frames, %" PRIu64 " bytes (%.2f bytes/event, %" PRIu64
		    " bytes uncompressed)\n", "events:", n, in->st.frames,
		    in->st.in_bytes, n ? (double)in->st.in_bytes / (double)n :
		    0.0, in->st.raw_bytes);
	for (int t = 1; t < IST_NTYPES && !e; t++)
		if (in->counts[t])
			e = ist_buf_printf(out, "  %-14s %" PRIu64 "\n",
			    ist_types[t].name, in->counts[t]);
	if (!e)
		e = render_list(out, "processes:", &in->procs, false);
	if (!e)
		e = render_list(out, "threads:", &in->threads, true);
	if (!e)
		e = render_list(out, "devices:", &in->devices, false);
	if (!e)
		e = ist_buf_printf(out, "%-12s %" PRIu64 " records, %" PRIu64
		    " events lost\n", "loss:", in->loss_records,
		    in->lost_events);
	if (!e && in->st.skipped)
		e = ist_buf_printf(out, "%-12s %" PRIu64 " records of unknown "
		    "kinds\n", "skipped:", in->st.skipped);
	if (!e && in->st.truncated_kept)
		e = ist_buf_printf(out, "%-12s yes, its last frame (%" PRIu64
		    " bytes) is cut, its first %" PRIu64 " records kept\n",
		    "truncated:", in->st.truncated_bytes,
		    in->st.truncated_kept);
	else if (!e && in->st.truncated_bytes)
		e = ist_buf_printf(out, "%-12s yes, last %" PRIu64
		    " bytes dropped\n", "truncated:", in->st.truncated_bytes);
	else if (!e)
		e = ist_buf_printf(out, "%-12s no\n", "truncated:");
	return e ? IST_ENOMEM : IST_OK;
}
