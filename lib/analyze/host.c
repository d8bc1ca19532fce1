/* host.c - per thread, the stack of open ranges swept forward in time:
 * calls, scopes, NVTX ranges, CUDA calls and syncs; imports and GC; the
 * /proc counters. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>

#include "analyze_int.h"

/* ---- per record kind ---- */

static bool
name_starts(const struct ist_event *ev, const char *s)
{
	size_t n = strlen(s);
	return ev->name.n >= n && memcmp(ev->name.p, s, n) == 0;
}

bool
an_name_has(const struct ist_event *ev, const char *s)
{
	size_t n = strlen(s);
	for (size_t i = 0; i + n <= ev->name.n; i++)
		if (memcmp(ev->name.p + i, s, n) == 0)
			return true;
	return false;
}

bool
an_is_launch(const struct ist_event *ev)
{
	return an_name_has(ev, "Launch") || an_name_has(ev, "launch") ||
	    an_name_has(ev, "Memcpy") || an_name_has(ev, "Memset");
}

/* A CUDA call that blocks the host until the GPU catches up: synchronous
 * copies (cudaMemcpy, cuMemcpyDtoH...) and cudaFree. */
const char *
an_implicit_sync(const struct ist_event *ev)
{
	if ((name_starts(ev, "cudaMemcpy") || name_starts(ev, "cuMemcpy")) &&
	    !an_name_has(ev, "Async") && !an_name_has(ev, "ToSymbol") &&
	    !an_name_has(ev, "FromSymbol"))
		return "memcpy";
	if (an_name_is(ev, "cudaFree") || name_starts(ev, "cuMemFree"))
		return "free";
	return NULL;
}

/* The call site of a sync: the innermost function, and the innermost
 * Python function with its file and line when that is another one. */
static int64_t
site_of(struct ist_analyzer *a, const struct thr *t)
{
	const struct frame *in = NULL, *py = NULL;
	char buf[1024];
	int n;

	for (uint32_t i = t->n; i-- > 0;) {
		const struct frame *f = &t->st[i];
		if (f->kind != F_CALL)
			continue;
		if (in == NULL)
			in = f;
		if (f->py) {
			py = f;
			break;
		}
	}
	if (in == NULL) {
		for (uint32_t i = t->n; i-- > 0;)
			if (t->st[i].kind == F_SCOPE || t->st[i].kind == F_NVTX) {
				n = snprintf(buf, sizeof(buf), "%s '%s'",
				    frame_kind[t->st[i].kind],
				    a->nm.str.e[t->st[i].name].p);
				return an_intern(&a->nm.str, buf, (size_t)n <
				    sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
			}
		return an_intern(&a->nm.str, "(no recorded caller)", 20);
	}
	if (py == NULL || py == in) {
		const struct fstat *fs = &a->fn[in->stat];
		if (py)
			n = snprintf(buf, sizeof(buf), "%s (%s:%lld)",
			    a->nm.str.e[in->name].p, a->nm.str.e[fs->file].p,
			    (long long)fs->line);
		else
			n = snprintf(buf, sizeof(buf), "%s",
			    a->nm.str.e[in->name].p);
	} else {
		const struct fstat *fs = &a->fn[py->stat];
		n = snprintf(buf, sizeof(buf), "%s in %s (%s:%lld)",
		    a->nm.str.e[in->name].p, a->nm.str.e[py->name].p,
		    a->nm.str.e[fs->file].p, (long long)fs->line);
	}
	if (n < 0)
		n = 0;
	return an_intern(&a->nm.str, buf, (size_t)n < sizeof(buf) ? (size_t)n :
	    sizeof(buf) - 1);
}

static int
add_sync(struct ist_analyzer *a, struct thr *t, const char *kind,
    size_t kn, int64_t s, int64_t e)
{
	int64_t k = an_intern(&a->nm.str, kind, kn), site, i;
	bool created;

	if (k < 0 || (site = site_of(a, t)) < 0)
		return -1;
	for (int pass = 0; pass < 2; pass++) {
		uint64_t key = (uint64_t)k << 32 | (pass ? (uint64_t)site + 1 : 0);
		if ((i = an_stat_of(&a->symap, (void **)&a->sy, &a->nsy, &a->capsy,
		    sizeof(*a->sy), key, &created)) < 0)
			return -1;
		a->sy[i].kind = (uint32_t)k;
		a->sy[i].site = pass ? (uint32_t)site + 1 : 0;
		a->sy[i].count++;
		a->sy[i].ns += e - s;
		an_topk_add(&a->sy[i].longest, s, e);
	}
	return 0;
}

/* How many frames of function stat are open on t's stack, plus delta. */
int64_t
an_open_count(struct thr *t, uint32_t stat, int delta)
{
	uint32_t j;

	if (t->oused * 2 >= t->omask) {
		/* rebuild, dropping functions no longer open: sized for
		 * those still open, so that it shrinks back after a deep
		 * stack (a large table is slow to probe: cache misses) */
		uint32_t cap = 64, n = 0;
		uint32_t *nk, *nc;
		for (uint32_t i = 0; t->omask && i <= t->omask; i++)
			n += t->ocnt[i] > 0;
		while (n * 4 >= cap)
			cap *= 2;
		nk = calloc(cap, sizeof(*nk));
		nc = calloc(cap, sizeof(*nc));
		if (nk == NULL || nc == NULL) {
			free(nk);
			free(nc);
			return -1;
		}
		for (uint32_t i = 0; t->omask && i <= t->omask; i++) {
			if (t->ocnt[i] == 0)
				continue;
			/* placed where the lookup below probes: by stat,
			 * the key less one */
			for (j = (uint32_t)an_mix64(t->okey[i] - 1) & (cap - 1);
			    nc[j]; j = (j + 1) & (cap - 1))
				;
			nk[j] = t->okey[i];
			nc[j] = t->ocnt[i];
		}
		free(t->okey);
		free(t->ocnt);
		t->okey = nk;
		t->ocnt = nc;
		t->omask = cap - 1;
		t->oused = n;
	}
	for (j = (uint32_t)an_mix64(stat) & t->omask;; j = (j + 1) & t->omask) {
		if (t->okey[j] == stat + 1)
			break;
		if (t->okey[j] == 0) {
			t->okey[j] = stat + 1;
			t->oused++;
			break;
		}
	}
	t->ocnt[j] += (uint32_t)delta;
	return t->ocnt[j] - (uint32_t)(delta > 0 ? delta : 0);
}

/* Pushes a range onto its thread's stack, keeping ends non-increasing from
 * the bottom (ties in start time arrive child first). */
static struct frame *
push_frame(struct thr *t, const struct ist_event *ev)
{
	uint32_t i;
	if (t->n == t->cap) {
		uint32_t c = t->cap ? t->cap * 2 : 32;
		struct frame *nf = realloc(t->st, c * sizeof(*nf));
		if (nf == NULL)
			return NULL;
		t->st = nf;
		t->cap = c;
	}
	/* ranges that overlap without nesting (not from one call stack)
	 * are kept in order only among the top 64 */
	for (i = t->n; i > 0 && t->n - i < 64 && t->st[i - 1].end <
	    ev->end_ns; i--)
		;
	memmove(t->st + i + 1, t->st + i, (t->n - i) * sizeof(*t->st));
	t->n++;
	memset(&t->st[i], 0, sizeof(t->st[i]));
	t->st[i].start = ev->start_ns;
	t->st[i].end = ev->end_ns;
	return &t->st[i];
}

/* Frame f, just pushed on t, is an import or a module's body (role, of
 * function fn): an import counts, first-hand, in the one that encloses it;
 * a body names the module of the nearest import around it, the one that
 * ran it (__main__ and bodies run by exec have none). */
static void
import_frame(struct thr *t, struct frame *f, int role, uint32_t fn)
{
	struct frame *up = NULL;

	for (struct frame *g = f; g > t->st; g--)
		if (g[-1].imp && g[-1].end >= f->end) {
			up = &g[-1];
			break;
		}
	if (role == FN_IMPORT) {
		f->imp = true;
		f->imp_nested_in = up != NULL;
		if (up)
			up->imp_nested += f->end - f->start;
	} else if (up && up->imp_mod == 0) {
		up->imp_mod = fn + 1;
	}
}

bool
an_is_import(const char *p, size_t n)
{
	static const char a[] = "_frozen_importlib._find_and_load",
	    b[] = "importlib._bootstrap._find_and_load";

	return (n == sizeof(a) - 1 && memcmp(p, a, n) == 0) ||
	    (n == sizeof(b) - 1 && memcmp(p, b, n) == 0);
}

/* What a function is to the import checks: CPython's import entry point
 * (every `import` of a module not yet loaded runs it), a module's body
 * (`numpy.<module>`), or neither (a collection: its gc_gen). */
static uint8_t
fn_role(const char *s)
{
	static const char body[] = ".<module>";
	size_t n = strlen(s), k = sizeof(body) - 1;

	if (an_is_import(s, n))
		return FN_IMPORT;
	if (n > k && memcmp(s + n - k, body, k) == 0 &&
	    strcmp(s, "__main__.<module>") != 0)
		return FN_MODULE;
	return FN_PLAIN;
}

/*
 * The C calls whose purpose is to wait, named as the collector names them
 * on every Python (3.8 to 3.13; tests/py/waits_app.py makes each): sleeping,
 * a lock or semaphore taken, a thread joined (3.13's handle), a queue
 * read, select and poll, a child or a signal waited for, a pipe's or
 * socket's read, an accept, a connect, a name looked up, and a TLS
 * socket's read and handshake (an HTTPS client's wait for its server).  A
 * socket.socket's methods are named by its class, `socket.recv`; a bare
 * _socket.socket's by its type's full name.
 * The steps' wait segments are these (stepwork.c); within a window of a
 * thread's CPU samples they are costed last (cpu_window).
 */
#define WAITS(X) X("time.sleep") X("select.select") X("select.poll.poll") \
	X("select.epoll.poll") X("select.devpoll.poll") \
	X("select.kqueue.control") X("_thread.lock.acquire") \
	X("_thread.lock.acquire_lock") X("_thread.lock.__enter__") \
	X("_thread.RLock.acquire") X("_thread.RLock.__enter__") \
	X("_imp.acquire_lock") X("_queue.SimpleQueue.get") \
	X("_multiprocessing.SemLock.acquire") \
	X("_multiprocessing.SemLock.__enter__") X("posix.waitpid") \
	X("posix.wait") X("posix.waitid") X("posix.wait3") X("posix.wait4") \
	X("posix.read") X("signal.pause") X("signal.sigwait") \
	X("signal.sigwaitinfo") X("signal.sigtimedwait") \
	X("_socket.socket.recv") X("_socket.socket.recv_into") \
	X("_socket.socket.recvfrom") X("_socket.socket.recvfrom_into") \
	X("_socket.socket._accept") X("socket.recv") X("socket.recv_into") \
	X("socket.recvfrom") X("socket.recvfrom_into") X("socket._accept") \
	X("_thread._ThreadHandle.join") X("_socket.socket.connect") \
	X("_socket.socket.connect_ex") X("socket.connect") \
	X("socket.connect_ex") X("_socket.getaddrinfo") \
	X("_socket.gethostbyname") X("_socket.gethostbyname_ex") \
	X("_socket.gethostbyaddr") X("_socket.getnameinfo") \
	X("_ssl._SSLSocket.read") X("_ssl._SSLSocket.do_handshake")
bool
an_is_wait(const char *p, size_t n)
{
#define W(s) { s, sizeof(s) - 1 },
#define LEN(s) | 1ull << (sizeof(s) - 1)
#define SHORT(s) _Static_assert(sizeof(s) - 1 < 64, "a wait's name: < 64");
	WAITS(SHORT)
	static const struct { const char *s; size_t n; } w[] = { WAITS(W) };
	/* their lengths, looked at first: most names have none of them */
	const uint64_t lens = 0 WAITS(LEN);
#undef W
#undef LEN
#undef SHORT

	if (n >= 64 || !(lens >> n & 1))
		return false;
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (n == w[i].n && memcmp(p, w[i].s, n) == 0)
			return true;
	return false;
}

bool
an_is_wait_id(uint8_t **cache, size_t *n, uint32_t id, const char *p,
    size_t len)
{
	if (id >= *n) {
		size_t m = *n ? *n : 256;
		uint8_t *q;
		while (m <= id)
			m *= 2;
		if ((q = realloc(*cache, m)) == NULL)
			return an_is_wait(p, len);
		memset(q + *n, 0, m - *n);
		*cache = q;
		*n = m;
	}
	if ((*cache)[id] == 0)
		(*cache)[id] = an_is_wait(p, len) ? 1 : 2;
	return (*cache)[id] == 1;
}

/* An outermost import of thread t, in its process's start-up spans: calls
 * come by start, so one that starts before the last span ends joins it. */
static int
proc_import(struct ist_analyzer *a, struct thr *t, const struct ist_event *ev)
{
	struct proc *p = an_thr_proc(a, t);
	struct ispan *l;

	if (p == NULL)
		return -1;
	l = p->nimps ? &p->imps[p->nimps - 1] : NULL;
	if (l && ev->start_ns <= l->e) {
		if (ev->end_ns > l->e)
			l->e = ev->end_ns;
		return 0;
	}
	if ((l = an_push((void **)&p->imps, &p->nimps, &p->capimps,
	    sizeof(*l))) == NULL)
		return -1;
	*l = (struct ispan){ ev->start_ns, ev->end_ns };
	return 0;
}

/* A call's share in its thread's imports (and its process's start-up)
 * and garbage collections; -1 when out of memory. */
static int
call_roles(struct ist_analyzer *a, struct thr *t, const struct frame *f,
    const struct fstat *fs, const struct ist_event *ev, int64_t dur)
{
	/* calls start in order: one that starts before the current
	 * outermost one ends is nested in it */
	if (fs->role == FN_IMPORT && ev->start_ns >= t->imp_end) {
		if (proc_import(a, t, ev) != 0)
			return -1;
		if (t->imp_n++ == 0)
			t->imp_first = ev->start_ns;
		t->imp_ns += dur;
		t->imp_end = ev->end_ns;
		if (ev->end_ns > t->imp_last)
			t->imp_last = ev->end_ns;
	} else if (fs->role == FN_GC && t->imp_n &&
	    ev->start_ns < t->imp_end) {
		t->gc_imp_n++;
		t->gc_imp_ns += dur;
	} else if (fs->role == FN_GC) {
		t->gc_n++;
		t->gc_ns += dur;
		an_topk_add(&t->gc_long, ev->start_ns, ev->end_ns);
		if (t->gc_n == 1 || dur > t->gc_max) {
			/* the scope or NVTX range it lengthened */
			t->gc_max = dur;
			t->gc_scope = 0;
			for (uint32_t i = t->n; i-- > 0;) {
				const struct frame *p = &t->st[i];
				if (p != f && (p->kind == F_SCOPE ||
				    p->kind == F_NVTX) && p->start <=
				    ev->start_ns && p->end >= ev->end_ns) {
					t->gc_scope = p->name + 1;
					break;
				}
			}
		}
	}
	return 0;
}

/* A Python function's call: the thread's Python window and the CPU
 * samples that bound it. */
static int
python_call(struct ist_analyzer *a, struct thr *t,
    const struct ist_event *ev, int64_t dur)
{
	if (!t->have_py) {
		t->have_py = true;
		t->py_first = ev->start_ns;
		t->cpu_at_py = t->cpu1;
		t->cpu_at_py_ts = t->cpu1_ts;
		t->have_cpu_at_py = t->have_cpu;
		t->wait_at_py = t->wait1;
		t->have_wait_at_py = t->have_wait;
	}
	if (ev->end_ns > t->py_last) {
		t->py_last = ev->end_ns;
		if (an_proc_call_end(a, t, t->py_last) != 0)
			return -1;
	}
	/* every sample so far is before this call starts */
	if (t->have_cpu_at_py) {
		t->cpu_py_end = t->cpu1;
		t->cpu_py_end_ts = t->cpu1_ts;
	}
	if (t->have_wait_at_py)
		t->wait_py_end = t->wait1;
	t->py_self += dur;
	return 0;
}

/*
 * The function (name, file, line): its fn index, or -1 when there is none
 * yet (*slot then takes the one made; NULL when another function holds
 * its key, which keeps it), -2 out of memory.  The one of that
 * name made last is found by the name's id (dense, no hashing: most names
 * have one function); another, by the three in a hash, so that a trace
 * with a name at many lines costs no walk along them.
 */
static int64_t
fn_find(struct ist_analyzer *a, int64_t name, int64_t file, int64_t line,
    uint32_t **slot)
{
	int64_t k = (size_t)name < a->nfn_of_name ?
	    (int64_t)a->fn_of_name[name] - 1 : -1;
	uint64_t key;
	bool found;

	*slot = NULL;
	if (k >= 0 && a->fn[k].file == (uint32_t)file && a->fn[k].line == line)
		return k;
	key = an_mix64(((uint64_t)name << 32 | (uint32_t)file) ^
	    an_mix64((uint64_t)line));
	if ((*slot = an_u64map_slot(&a->fnmap, key, &found)) == NULL)
		return -2;
	if (!found)
		return -1;
	k = (int64_t)**slot - 1;
	if (a->fn[k].name == (uint32_t)name && a->fn[k].file ==
	    (uint32_t)file && a->fn[k].line == line)
		return k;
	/* two keys alike: along the name's list, as a last resort */
	*slot = NULL;
	for (k = a->fn_of_name[name] - 1; k >= 0; k = (int64_t)a->fn[k].same -
	    1)
		if (a->fn[k].file == (uint32_t)file && a->fn[k].line == line)
			return k;
	return -1;
}

static int
cpu_call(struct ist_analyzer *a, struct thr *t, struct frame *f,
    const struct ist_event *ev, int64_t name)
{
	int64_t dur = ev->end_ns - ev->start_ns, k, oc, file, line;
	struct fstat *fs;
	uint32_t *slot;
	bool created, rec = false;

	f->kind = F_CALL;
	f->py = IST_HAS(ev, IST_F_FILE);
	/* a function is its name, file and line, as cProfile has it: two
	 * lambdas or comprehensions of a module, a property's getter and
	 * setter, share a name */
	file = an_name_id(a, ev, IST_F_FILE);
	line = IST_HAS(ev, IST_F_LINE) ? ev->line : 0;
	if (file < 0 || (k = fn_find(a, name, file, line, &slot)) == -2)
		return -1;
	if ((created = k < 0)) {
		uint32_t head = (size_t)name < a->nfn_of_name ?
		    a->fn_of_name[name] : 0;
		if (an_push((void **)&a->fn, &a->nfn, &a->capfn,
		    sizeof(*a->fn)) == NULL || ist_idmap_put(&a->fn_of_name,
		    &a->nfn_of_name, (uint32_t)name, a->nfn) != 0)
			return -1;
		k = (int64_t)a->nfn - 1;
		a->fn[k].same = head;    /* the list's head from now */
		if (slot != NULL) {      /* in the hash too */
			*slot = a->nfn;
			a->fnmap.n++;
		}
	}
	f->stat = (uint32_t)k;
	fs = &a->fn[k];
	if (created) {
		fs->name = (uint32_t)name;
		fs->file = (uint32_t)file;
		fs->line = line;
		fs->gc_gen = (int8_t)ist_gc_generation(a->nm.str.e[name].p,
		    a->nm.str.e[name].n);
		fs->role = fs->gc_gen >= 0 ? FN_GC : fn_role(a->nm.str.e[name].p);
		fs->wait = file == 0 && an_is_wait(a->nm.str.e[name].p,
		    a->nm.str.e[name].n);
	}
	fs->count++;
	if (fs->role == FN_IMPORT || fs->role == FN_MODULE)
		import_frame(t, f, fs->role, (uint32_t)k);
	if (call_roles(a, t, f, fs, ev, dur) != 0)
		return -1;
	fs->self += dur;
	if (dur > fs->max)
		fs->max = dur;
	/* the enclosing call loses this much self time; recursion counts
	 * once in inclusive time */
	for (uint32_t i = t->n; i-- > 0;) {
		struct frame *p = &t->st[i];
		if (p == f || p->kind != F_CALL)
			continue;
		if (p->start <= ev->start_ns && p->end >= ev->end_ns) {
			a->fn[p->stat].self -= dur;
			if (p->py)
				t->py_self -= dur;
		}
		break;
	}
	if ((oc = an_open_count(t, (uint32_t)k, 1)) < 0)
		return -1;
	for (uint32_t i = 0; oc > 0 && i < t->n; i++)
		if (&t->st[i] != f && t->st[i].kind == F_CALL &&
		    t->st[i].name == name && t->st[i].start <= ev->start_ns &&
		    t->st[i].end >= ev->end_ns)
			rec = true;
	if (!rec)
		fs->incl += dur;
	return f->py ? python_call(a, t, ev, dur) :
	    an_proc_call_end(a, t, ev->end_ns);
}

/* A scope or an NVTX range: its distribution. */
static int
range_stat(struct ist_analyzer *a, struct frame *f,
    const struct ist_event *ev, int64_t name)
{
	int64_t dur = ev->end_ns - ev->start_ns, k;
	struct sstat *ss;
	bool created;

	f->kind = ev->type == IST_SCOPE ? F_SCOPE : F_NVTX;
	k = an_stat_of(&a->scmap, (void **)&a->sc, &a->nsc, &a->capsc,
	    sizeof(*a->sc), (uint64_t)f->kind << 32 | (uint64_t)name,
	    &created);
	if (k < 0)
		return -1;
	f->stat = (uint32_t)k;
	ss = &a->sc[k];
	ss->kind = f->kind;
	ss->name = (uint32_t)name;
	ss->total += dur;
	if (dur > ss->max)
		ss->max = dur;
	return an_dist_add(&ss->d, dur) ? -1 : 0;
}

/* A CUDA API call: a sync it implies, a launch to correlate with the GPU
 * work it starts (below: the frames open under it). */
static int
cuda_call(struct ist_analyzer *a, struct thr *t, struct frame *f,
    const struct ist_event *ev, uint32_t below)
{
	/* a driver call made by a runtime call is the same launch or the
	 * same sync: counted once, by the outer call */
	int64_t dur = ev->end_ns - ev->start_ns;
	uint32_t fi = (uint32_t)(f - t->st);
	bool nested = fi > 0 && t->st[fi - 1].kind == F_CUDA &&
	    t->st[fi - 1].end >= ev->end_ns;
	const char *is = nested ? NULL : an_implicit_sync(ev);
	struct corr *c;
	int sn = 0;

	f->kind = F_CUDA;
	if (is && add_sync(a, t, is, strlen(is), ev->start_ns, ev->end_ns))
		return -1;
	if (!an_is_launch(ev))
		return 0;
	if (!nested) {
		t->launches++;
		a->launches++;
		if (an_dist_add(&a->launch_d, dur))
			return -1;
		if (dur > a->slow_launch_ns)
			a->slow_launches++;
		if (dur > a->launch_max)
			a->launch_max = dur;
	}
	c = &a->corr[(uint64_t)ev->correlation & (CORR_SLOTS - 1)];
	/* a driver call inside the runtime call that shares its correlation
	 * leaves the outer call's slot as it was: its start, and whether the
	 * copy it starts is synchronous (the driver's cuMemcpyAsync inside a
	 * cudaMemcpy would otherwise hide that) */
	if (nested && c->thr && c->pid == ev->pid &&
	    c->corr == ev->correlation)
		return 0;
	memset(c, 0, sizeof(*c));
	c->pid = ev->pid;
	c->corr = ev->correlation;
	c->api_start = ev->start_ns;
	c->api_end = ev->end_ns;
	c->thr = (uint32_t)(t - a->thr) + 1;
	/* the copy it starts, when it comes, is synchronous */
	c->sync_copy = is && strcmp(is, "memcpy") == 0;
	for (uint32_t i = below; i-- > 0 && sn < 4;)
		if (t->st[i].kind == F_SCOPE || t->st[i].kind == F_NVTX)
			c->scopes[sn++] = t->st[i].stat + 1;
	for (uint32_t i = below; i-- > 0;)
		if (t->st[i].kind == F_CALL && t->st[i].py) {
			c->pyfn = t->st[i].stat + 1;
			break;
		}
	return 0;
}

/* ---- CPU time by function ---- */

int
an_cpu_credit(struct ist_analyzer *a, struct thr *t, int64_t s, int64_t e)
{
	const struct frame *f = NULL;

	if (!a->cpu_samples || e <= s)
		return 0;
	for (uint32_t i = t->n; i-- > 0;)
		if (t->st[i].kind == F_CALL) {
			f = &t->st[i];
			break;
		}
	if (f == NULL)
		return 0;
	if (!t->have_win) {
		/* before the thread's first sample: from its first call,
		 * which is close to its start, with no CPU time used yet */
		t->have_win = true;
		t->win_t = s;
		t->win_v = 0;
	}
	if (t->wlast == 0 || t->w[t->wlast - 1].fn != f->stat) {
		bool created;
		int64_t k = an_stat_of(&t->wmap, (void **)&t->w, &t->wn,
		    &t->wcap, sizeof(*t->w), f->stat, &created);
		if (k < 0)
			return -1;
		t->w[k].fn = f->stat;
		t->wlast = (uint32_t)k + 1;
	}
	t->w[t->wlast - 1].ns += e - s;
	return 0;
}

/*
 * The CPU time the kernel shows for a thread (schedstat's run time, its
 * ticks in stat) is brought up to date at the scheduler's tick and at
 * context switches: a running thread's lags by up to a tick.  A window
 * whose CPU time exceeds its length holds some of the window before; what
 * is beyond a full core (a tick at most: 10 ms, HZ=100's) goes back to
 * the window before's calls, as far as they had time for it, and the rest
 * is carried into the next window, rather than dropped.  Dropped, it had
 * cost a busy C call 10% of its CPU time on a 250 Hz kernel (builtins.sum:
 * 247 ms against thread_time's 274); carried forward only, a busy call
 * turn about with a blocked stretch, read in between by Python's
 * collector, lost 14% to the stretch.
 */
#define CPU_CARRY_MAX 10000000

/* The window just costed, for what the next one holds beyond a core:
 * its calls not made to wait, their time nb and the CPU they had. */
static int
keep_window(struct ist_analyzer *a, struct thr *t, int64_t nb, int64_t cpu)
{
	if (t->pwcap < t->wn) {
		struct wcost *n = realloc(t->pw, t->wn * sizeof(*n));
		if (n == NULL)
			return -1;
		t->pw = n;
		t->pwcap = t->wn;
	}
	t->pwn = 0;
	for (uint32_t i = 0; i < t->wn; i++)
		if (!a->fn[t->w[i].fn].wait)
			t->pw[t->pwn++] = t->w[i];
	t->pnb = t->pwn ? nb : 0;
	t->pcpu = cpu;
	return 0;
}

/*
 * Thread t's CPU time read v at ts: the window since its last sample
 * closes, and its functions are costed.  The samples say how much CPU the
 * window used, not when: the time in calls made to wait (an_is_wait) is
 * taken as off CPU as far as the rest of the window can hold the CPU time
 * used, at most a core: what is beyond is the lag of the window before
 * (above), given back to it or carried into the next, and only what is
 * beyond that goes to the waits.  The rest share theirs at one rate.  (At one rate for all,
 * an asyncio loop's epoll.poll, 6 ms of CPU by thread_time around it, was
 * costed 110 ms of its 175.)
 */
static int
cpu_window(struct ist_analyzer *a, struct thr *t, int64_t ts, int64_t v)
{
	int64_t carry = 0;

	a->cpu_samples = true;
	if (an_advance(a, t, ts))
		return -1;
	if (t->have_win && ts > t->win_t) {
		int64_t dv = v - t->win_v, dt = ts - t->win_t, wt = 0, nb;
		double rate, wrate = 0;
		for (uint32_t i = 0; i < t->wn; i++)
			if (a->fn[t->w[i].fn].wait)
				wt += t->w[i].ns;
		if (wt > dt)
			wt = dt;
		nb = dt - wt;            /* the window's time not waiting */
		/* beyond it: the window before's, carried (not after the
		 * first window, whose start was assumed); only what is
		 * beyond a tick more goes to the waits */
		if (dv > nb && t->win_read) {
			carry = dv - nb < CPU_CARRY_MAX ? dv - nb :
			    CPU_CARRY_MAX;
			dv -= carry;
			/* back to the window before, whose closing reading
			 * lagged, as far as its calls had time for it */
			if (t->pnb > t->pcpu && carry > 0) {
				int64_t back = t->pnb - t->pcpu < carry ?
				    t->pnb - t->pcpu : carry;
				for (uint32_t i = 0; i < t->pwn; i++)
					a->fn[t->pw[i].fn].cpu +=
					    (double)t->pw[i].ns *
					    (double)back / (double)t->pnb;
				t->pcpu += back;
				carry -= back;
			}
		}
		if (dv > dt)
			dv = dt;
		rate = dv <= 0 ? 0 : dv >= nb ? 1 : (double)dv / (double)nb;
		if (wt > 0 && dv > nb)
			wrate = (double)(dv - nb) / (double)wt;
		for (uint32_t i = 0; i < t->wn; i++)
			a->fn[t->w[i].fn].cpu += (double)t->w[i].ns *
			    (a->fn[t->w[i].fn].wait ? wrate : rate);
		if (keep_window(a, t, nb, dv < nb ? dv : nb))
			return -1;
	}
	if (t->wn) {
		an_u64map_clear(&t->wmap);
		t->wn = 0;
		t->wlast = 0;
	}
	t->have_win = true;
	t->win_read = true;
	t->win_t = ts;
	t->win_v = v - carry;
	return 0;
}

int
an_host_range(struct ist_analyzer *a, const struct ist_event *ev,
    int64_t name)
{
	struct thr *t = an_thread_of(a, ev->pid, IST_HAS(ev, IST_F_TID) ?
	    ev->tid : ev->pid);
	struct frame *f;
	uint32_t below;

	if (t == NULL)
		return -1;
	if (an_advance(a, t, ev->start_ns))
		return -1;
	if (!t->own) {
		t->own = true;
		t->own_first = ev->start_ns;
	}
	below = t->n;
	if ((f = push_frame(t, ev)) == NULL)
		return -1;
	f->name = (uint32_t)name;
	switch (ev->type) {
	case IST_CPU_CALL:
		return cpu_call(a, t, f, ev, name);
	case IST_SCOPE:
	case IST_NVTX_RANGE:
		return range_stat(a, f, ev, name);
	case IST_CUDA_API:
		return cuda_call(a, t, f, ev, below);
	case IST_SYNC:
		f->kind = F_SYNC;
		return add_sync(a, t, ev->kind.p, ev->kind.n, ev->start_ns,
		    ev->end_ns) ? -1 : 0;
	default:
		return 0;
	}
}

/* How late the sampler may read a clock after stamping its reading (it
 * stamps each process's as it starts on it, then reads its threads in
 * turn; older traces, the tick's start for all): a child busy from its
 * fork just after a tick read 10.12 ms of CPU at a tick 10.04 ms after
 * that one */
#define TICK_LATE 2000000

/* A sample this soon after a thread's last Python call ends is its
 * Python window's end: a pool thread's exit sample, its exit tens of us
 * after its last call when it is not kept from a core (not an
 * interpreter's teardown, which takes ms) */
#define PY_END_SLACK 1000000

int
an_counter(struct ist_analyzer *a, const struct ist_event *ev)
{
	int64_t v = ev->value_is_int ? ev->ivalue : ist_d2i(ev->value);
	struct proc *p;
	struct thr *t;
	int64_t before = 0, birth;
	bool born = false;

	if (ev->pid == 0 && !IST_HAS(ev, IST_F_TID)) {
		if (an_name_is(ev, "system.cpu_cores")) {
			/* the sampler's first reading of the machine: since
			 * 2026-11 before it started the command, the tick
			 * before the first of every process of the run */
			a->cores = v;
			if (a->sys_tick == 0)
				a->sys_tick = ev->ts_ns;
		}
		else if (an_name_is(ev, "system.memory_bytes"))
			a->memory = v;
		else if (an_name_is(ev, "system.runnable")) {
			a->sys_tick = ev->ts_ns;
			a->run_samples++;
			/* procs_running counts the sampler reading it */
			a->tick_run = v - 1;
			if (a->cores && v - 1 > a->cores)
				a->oversub++;
		} else if (an_name_is(ev, "system.program_runnable")) {
			a->prog_samples++;
			if (a->cores && v > a->cores)
				a->prog_oversub++;
		} else if (an_name_is(ev, "system.recorder_runnable")) {
			/* written after the tick's system.runnable */
			a->rec_samples++;
			if (a->cores && a->tick_run > a->cores &&
			    a->tick_run - v <= a->cores)
				a->rec_oversub++;
		} else if (an_name_is(ev, "system.cpu_utilization")) {
			a->util_sum += ev->value_is_int ? (double)ev->ivalue :
			    ev->value;
			a->util_n++;
		}
		return 0;
	}
	if (name_starts(ev, "process.")) {
		if ((p = an_proc_of(a, ev->pid)) == NULL)
			return -1;
		/* written as it ended, after its last sample: no sample */
		if (an_name_is(ev, "process.exit_code") ||
		    an_name_is(ev, "process.exit_signal")) {
			p->exit_kind = an_name_is(ev, "process.exit_code") ? 1 :
			    2;
			p->exit_v = v;
			return 0;
		}
		/* written by its collectors, not the sampler: no sample */
		bool py = an_name_is(ev, "process.recorder_bytes");
		if (py || an_name_is(ev, "process.cuda_recorder_bytes")) {
			*(py ? &p->rec_py : &p->rec_cuda) = v > 0 ? v : 0;
			*(py ? &p->rec_py_ts : &p->rec_cuda_ts) = ev->ts_ns;
			p->rec_bytes = p->rec_py + p->rec_cuda;
			if (p->rec_bytes > p->rec_peak)
				p->rec_peak = p->rec_bytes;
			/* the Python collector's first, as it starts (the
			 * writer's buffers made at once, a forked child's
			 * ring resident already), and what was freed: held
			 * at once.  The CUDA collector's come as CUDA starts,
			 * each said before it is faulted in */
			if ((py && !p->rec_said) || p->rec_bytes < p->rec_held)
				p->rec_held = p->rec_bytes;
			p->rec_said |= py;
			return 0;
		}
		int64_t prev = p->last_sample;
		p->last_sample = ev->ts_ns;
		if (an_name_is(ev, "process.execs")) {
			/* it runs another program from here: its memory
			 * figures are that program's, the one it is named
			 * for (a subprocess's until its exec were its
			 * parent's, whose copy it was; a launcher's, its
			 * own) */
			an_proc_rss_restart(p);
			p->threads_peak = 0;
			/* InferScope's memory in it went with the program
			 * before (a CUDA program's 14 MB, kept, had read the
			 * shell it ran next as a page): what a collector said
			 * up to the sample before, which saw that program
			 * still.  One said since may be the new program's
			 * (a shim's python, its collector quicker than the
			 * sampler on a busy machine), and stays */
			if (p->rec_py_ts <= prev) {
				p->rec_py = 0;
				p->rec_said = false;
			}
			if (p->rec_cuda_ts <= prev)
				p->rec_cuda = 0;
			p->rec_bytes = p->rec_py + p->rec_cuda;
			if (p->rec_held > p->rec_bytes)
				p->rec_held = p->rec_bytes;
			p->rec_peak = p->rec_bytes;
			return 0;
		}
		if (an_name_is(ev, "process.rss_bytes") && v > 0) {
			/* 0: read as the process exited (a zombie has none);
			 * the program's memory, InferScope's buffers left out
			 * (they grow as recording goes on: a creep of its
			 * own), never below a page.  Those said and not yet
			 * held are held as the RSS rises: a writer kept from
			 * a core between its saying 2 MiB of ring and its
			 * faulting them in had the program 2 MiB short for
			 * 159 ms, a steady state from there 2 MiB grown */
			int64_t rise = v - p->rss_raw;
			int64_t owed = p->rec_bytes - p->rec_held;
			if (rise > 0 && owed > 0)
				p->rec_held += rise < owed ? rise : owed;
			p->rss_raw = v;
			v = v - p->rec_held > 4096 ? v - p->rec_held : 4096;
			if (!p->have_rss) {
				p->have_rss = true;
				p->rss0 = v;
				p->rss0_ts = ev->ts_ns;
			}
			if (v > p->rss_peak) {
				p->rss_peak = v;
				p->rss_peak_ts = ev->ts_ns;
			}
			p->rss1 = v;
			p->rss1_ts = ev->ts_ns;
			if (ev->ts_ns <= p->call_end) {
				p->rss_pre = v;
				p->rss_pre_ts = ev->ts_ns;
			}
			if (p->rts == NULL && ((p->rts = malloc(RSS_MAX *
			    sizeof(int64_t))) == NULL || (p->rv = malloc(
			    RSS_MAX * sizeof(int64_t))) == NULL))
				return -1;
			if (p->rskip++ % (p->rstride ? p->rstride : 1) == 0) {
				if (p->nr == RSS_MAX) {
					for (uint32_t i = 0; i < RSS_MAX / 2; i++) {
						p->rts[i] = p->rts[2 * i];
						p->rv[i] = p->rv[2 * i];
					}
					p->nr = RSS_MAX / 2;
					p->rstride = p->rstride ? p->rstride * 2 :
					    2;
				}
				p->rts[p->nr] = ev->ts_ns;
				p->rv[p->nr++] = v;
			}
		} else if (an_name_is(ev, "process.major_faults")) {
			if (!p->have_flt)
				p->flt0 = v;
			p->have_flt = true;
			p->flt1 = v;
		} else if (an_name_is(ev, "process.children_cpu_ns")) {
			if (!p->have_ccpu)
				p->ccpu0 = v;
			p->have_ccpu = true;
			p->ccpu1 = v;
		} else if (an_name_is(ev, "process.threads") &&
		    v > p->threads_peak) {
			p->threads_peak = v;
		} else if (an_name_is(ev, "process.ppid") && v > 0 &&
		    !p->have_ppid) {
			/* the process that started it: not the one it was
			 * handed to when that ended (init, a subreaper), nor
			 * the 0 of one read as the kernel released it */
			p->have_ppid = true;
			p->ppid = v;
		}
		return 0;
	}
	if (!name_starts(ev, "thread.") || !IST_HAS(ev, IST_F_TID))
		return 0;
	if ((t = an_thread_of(a, ev->pid, ev->tid)) == NULL ||
	    (p = an_proc_of(a, ev->pid)) == NULL)
		return -1;
	p->last_sample = ev->ts_ns;
	/*
	 * A thread's first sample, when the sampler's tick before it, which
	 * reads every thread of the process, found none of this one (or the
	 * tick before that: a thread on its way out at the last is listed,
	 * but gone when its clocks are read) and its CPU time fits in the
	 * time since (TICK_LATE over it at most): the thread was born since,
	 * its clocks at 0 then (a thread of a pool, one shorter than a tick,
	 * whose one sample is its exit's), and what they count is all of
	 * it.  Its birth: its first call or earlier, as early as its CPU
	 * time says, not before that tick.  At a process's first tick, the
	 * tick before is the sampler's last reading of the system, which it
	 * makes after the processes of a tick, and once before it starts the
	 * command: a process it finds since was started since (the command,
	 * a worker forked mid-run, a subprocess), its threads' clocks at 0
	 * then, when their CPU time fits, however late the first tick that
	 * found it.  (A thread found at the first tick of an older trace,
	 * with no reading before it, counts from its first sample.)
	 */
	for (int k = 0; k < 3; k++) {
		/* none yet: the process's first tick, this thread not the
		 * first read at it */
		before = p->tick[k] == 0 ? a->sys_tick : p->tick[k];
		if (before < ev->ts_ns && (born = before > 0 && v >= 0 &&
		    v <= ev->ts_ns - before + TICK_LATE))
			break;
	}
	birth = ev->ts_ns - v;
	if (t->have_py && t->py_first < birth)
		birth = t->py_first;
	if (birth < before)
		birth = before;
	if (an_name_is(ev, "thread.wait_ns") && ev->ts_ns > p->tick[0]) {
		p->tick[2] = p->tick[1];        /* the sampler's ticks alone */
		p->tick[1] = p->tick[0];
		p->tick[0] = ev->ts_ns;
	}
	if (an_name_is(ev, "thread.cpu_ns")) {
		/* less than it had read: not its clock (an older is-record's
		 * reading of a thread as it exited, from stat's ticks, each
		 * cut to a whole one); its last reading stands */
		if (t->have_cpu && v < t->cpu1)
			return 0;
		if (cpu_window(a, t, ev->ts_ns, v))
			return -1;
		if (!t->have_cpu && born) {
			t->cpu0 = 0;
			t->cpu0_ts = birth;
			if (t->have_py) {
				t->cpu_at_py = 0;
				t->cpu_at_py_ts = birth;
				t->have_cpu_at_py = true;
			}
		} else if (!t->have_cpu) {
			t->cpu0 = v;
			t->cpu0_ts = ev->ts_ns;
		}
		if (t->have_py && !t->have_cpu_at_py && t->have_cpu &&
		    t->cpu1_ts < t->py_first && ev->ts_ns > t->py_first) {
			/* its Python window starts between two samples: its
			 * CPU time then, at least the first's, and no less
			 * than the second's less all the time between */
			int64_t at = v - (ev->ts_ns - t->py_first);
			t->cpu_at_py = at > t->cpu1 ? at : t->cpu1;
			t->cpu_at_py_ts = t->py_first;
			t->have_cpu_at_py = true;
		}
		t->have_cpu = true;
		t->cpu1 = v;
		t->cpu1_ts = ev->ts_ns;
		if (t->have_py && !t->have_cpu_at_py) {
			t->cpu_at_py = v;
			t->cpu_at_py_ts = ev->ts_ns;
			t->have_cpu_at_py = true;
		}
		if (t->have_py && ev->ts_ns <= t->py_last + PY_END_SLACK) {
			t->cpu_py_end = v;
			t->cpu_py_end_ts = ev->ts_ns;
		} else if (t->have_cpu_at_py) {
			/* the first sample after the Python window ends: what
			 * the thread used since the last one inside, when it
			 * fits in the window's rest (and a ms; a thread's
			 * exit, however long it was kept from a core), else
			 * as much as fits (not a native thread working on,
			 * nor a long teardown) */
			bool in = t->cpu_py_end_ts > t->cpu_at_py_ts;
			int64_t bv = in ? t->cpu_py_end : t->cpu_at_py;
			int64_t bt = in ? t->cpu_py_end_ts : t->cpu_at_py_ts;
			if (bt < t->py_last && v - bv <= t->py_last - bt +
			    PY_END_SLACK) {
				t->cpu_py_end = v;
				t->cpu_py_end_ts = ev->ts_ns;
			} else if (bt < t->py_last && v > bv) {
				t->cpu_py_end = bv + t->py_last - bt;
				t->cpu_py_end_ts = t->py_last;
			}
		}
	} else if (an_name_is(ev, "thread.wait_ns")) {
		if (!t->have_wait && born) {
			t->wait0 = 0;
			if (t->have_py) {
				t->wait_at_py = 0;
				t->have_wait_at_py = true;
			}
		} else if (!t->have_wait) {
			t->wait0 = v;
		}
		t->have_wait = true;
		t->wait1 = v;
		if (t->have_py && !t->have_wait_at_py) {
			t->wait_at_py = v;
			t->have_wait_at_py = true;
		}
		if (t->have_py && ev->ts_ns <= t->py_last + PY_END_SLACK)
			t->wait_py_end = v;
	} else if (an_name_is(ev, "thread.ctx_involuntary")) {
		if (!t->have_inv)
			t->inv0 = v;
		t->have_inv = true;
		t->inv1 = v;
	}
	return 0;
}
