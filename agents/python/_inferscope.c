/*
 * _inferscope.c - the Python collector: a C profile hook that records every
 * Python function call and every call into a C function (numpy, torch ops)
 * into a per-thread ring, plus the user API (scope, mark_event).
 *
 * The hook allocates nothing and takes no lock: a timestamp, a push or a pop
 * on a per-thread stack, and on return one 24-byte record in the thread's
 * ring (agents/collector.h).  Names are interned once per code object, in the
 * code object's co_extra slot.  A background thread (agents/collector.c)
 * encodes, compresses and writes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "ist.h"

#define MAX_DEPTH 1024
#define MAX_SCOPES 256
#define MAX_META 60000

#if PY_VERSION_HEX < 0x03080000
#error "InferScope needs Python 3.8 or later"
#endif
#if PY_VERSION_HEX < 0x03090000
/* 3.8: the accessors 3.9 added, on the fields they read */
static inline PyCodeObject *
PyFrame_GetCode(PyFrameObject *f)
{
	Py_INCREF(f->f_code);
	return f->f_code;
}

static inline PyFrameObject *
PyFrame_GetBack(PyFrameObject *f)
{
	Py_XINCREF(f->f_back);
	return f->f_back;
}

static inline PyFrameObject *
PyThreadState_GetFrame(PyThreadState *t)
{
	Py_XINCREF(t->frame);
	return t->frame;
}
#define PyInterpreterState_Get _PyInterpreterState_Get

/* another thread's profile hook, as 3.8's PyEval_SetProfile sets its own */
static int
_PyEval_SetProfile(PyThreadState *ts, Py_tracefunc func, PyObject *arg)
{
	PyObject *old = ts->c_profileobj;

	Py_XINCREF(arg);
	ts->c_profilefunc = NULL;
	ts->c_profileobj = NULL;
	ts->use_tracing = ts->c_tracefunc != NULL;
	Py_XDECREF(old);
	ts->c_profilefunc = func;
	ts->c_profileobj = arg;
	ts->use_tracing = func != NULL || ts->c_tracefunc != NULL;
	return 0;
}
#endif
#if PY_VERSION_HEX >= 0x030C0000
#define code_get_extra PyUnstable_Code_GetExtra
#define code_set_extra PyUnstable_Code_SetExtra
#define request_extra_index PyUnstable_Eval_RequestCodeExtraIndex
#else
#define code_get_extra _PyCode_GetExtra
#define code_set_extra _PyCode_SetExtra
#define request_extra_index _PyEval_RequestCodeExtraIndex
#endif

/*
 * The function id a code object keeps in its extra slot, 0 for none, as
 * code_get_extra reads it (Objects/codeobject.c: co_extra points to a
 * size and the slots, 3.8 to 3.13), without the call and its type check:
 * once for every Python call recorded.  Later Pythons go through the API.
 */
struct code_extra {
	Py_ssize_t ce_size;
	void *ce_extras[1];
};

static inline uint32_t
code_extra_id(PyObject *code, Py_ssize_t index)
{
	void *extra = NULL;

#if PY_VERSION_HEX < 0x030E0000
	const struct code_extra *ce = ((PyCodeObject *)code)->co_extra;

	if (ce != NULL && index >= 0 && index < ce->ce_size)
		extra = ce->ce_extras[index];
#else
	if (code_get_extra(code, index, &extra) != 0)
		PyErr_Clear();
#endif
	return (uint32_t)(uintptr_t)extra;
}

struct frame {
	int64_t t0;
	uint32_t id;
	uint8_t cfn;            /* a C function's (pushed by a C call event) */
	uint8_t cut;            /* IST_CUT_START: opened at a window's start */
	uint8_t dead;           /* a scope written already, at a pause */
	uint8_t gen;            /* a generator's run (the profile hook's:
	                         * whether it yielded is asked at its end) */
};

struct pstate {
	struct ist_ring *ring;
	int64_t gc_t0;          /* a collection under way on this thread */
	uint32_t gc_id;
	int depth;              /* may exceed MAX_DEPTH: those are not kept */
	int sdepth;
	uint64_t seen;          /* capture switches this thread has seen */
	bool rec;               /* recording, as this thread last saw */
	int64_t last_t;         /* its last event recorded on the hot way */
	struct frame stack[MAX_DEPTH];
	struct frame scopes[MAX_SCOPES];
};

/* initial-exec: no __tls_get_addr call on the hot path (8 bytes of the
 * static TLS surplus that glibc keeps for dlopen) */
static __thread struct pstate *me __attribute__((tls_model("initial-exec")));
static Py_ssize_t extra_index = -1;
static int64_t min_ticks;      /* --py-min-us, in ist_ticks() */
static int active;
static int calls_on;            /* record every call, not only scopes */
static PyObject *name_ids;      /* str -> int */
static char *stream_dir;
static int64_t budget;

/* builtin functions: (method def, self type) -> id */
struct centry {
	void *ml, *owner;
	uint32_t id;
};
static struct centry *ctab;
static size_t ctab_cap, ctab_n;

static struct pstate *
pstate(void)
{
	struct pstate *p = me;

	if (p == NULL) {
		if ((p = calloc(1, sizeof(*p))) == NULL)
			return NULL;
		p->ring = ist_coll_ring();
		p->seen = ist_capture_n();
		p->rec = ist_capture_recording();
		me = p;
	}
	return p;
}

static void
thread_name_record(struct pstate *p, const char *name)
{
	ist_coll_thread_name(p->ring, name);
}

/* The same, of a Python str (anything else names nothing). */
static void
name_thread(struct pstate *p, PyObject *name)
{
	const char *s;

	if (name && PyUnicode_Check(name) &&
	    (s = PyUnicode_AsUTF8(name)) != NULL)
		thread_name_record(p, s);
	PyErr_Clear();
}

/* A call or scope, written as it ends (cut: the IST_CUT_* bits of a
 * capture window's edge, IST_REC_RAISED for a call that raised and
 * IST_REC_YIELDED for a generator's run that yielded) */
static inline __attribute__((always_inline)) void
write_frame(struct pstate *p, int kind, const struct frame *f, int64_t t,
    int cut)
{
	cut |= f->cut;
	/* one record written, inlined once: a cut range ends no earlier
	 * than it began */
	ist_coll_rec(p->ring, kind, cut, f->id, f->t0, cut && t < f->t0 ?
	    f->t0 : t);
}

/* Stack of open calls: records the call when it returns.  The frame
 * pushed, or NULL past MAX_DEPTH (counted as dropped, not kept). */
static inline struct frame *
push(struct pstate *p, uint32_t id, int64_t t, int cfn)
{
	struct frame *f = NULL;

	if (p->depth < MAX_DEPTH) {
		f = &p->stack[p->depth];
		*f = (struct frame){ t, id, (uint8_t)cfn, 0, 0, 0 };
	} else if (p->ring) {
		atomic_fetch_add_explicit(&p->ring->dropped, 1,
		    memory_order_relaxed);
	}
	p->depth++;
	return f;
}

/* raised: IST_REC_RAISED, the call ended by an exception,
 * IST_REC_YIELDED, a generator's run at a yield, or 0 */
static inline void
pop(struct pstate *p, int64_t t, int raised)
{
	if (p->depth == 0)
		return;      /* entered before recording started */
	p->depth--;
	if (p->depth < MAX_DEPTH) {
		struct frame *f = &p->stack[p->depth];
		if (f->id && t - f->t0 >= min_ticks)
			write_frame(p, IST_REC_CALL, f, t, raised);
	}
}

/*
 * The return of a Python function pops the C calls above it first, and
 * that of a C function pops only a C call: a stack rebuilt at a capture
 * window's start holds the Python frames alone, and a C call under way
 * then may or may not say that it returns.  In a run that is never paused
 * the top is always the right kind.
 */
static __attribute__((noinline)) void
pop_py_under(struct pstate *p, int64_t t, int raised)
{
	while (p->depth > 0 && p->depth <= MAX_DEPTH &&
	    p->stack[p->depth - 1].cfn)
		pop(p, t, 0);
	pop(p, t, raised);
}

/* The Python frame on top of the stack kept; NULL when the top is a C
 * call's, or none is kept (pop_py_under's cases) */
static inline const struct frame *
py_top(const struct pstate *p)
{
	unsigned d = (unsigned)p->depth - 1;

	return d < MAX_DEPTH && !p->stack[d].cfn ? &p->stack[d] : NULL;
}

/* The C call on top of the stack kept; NULL when the top is a Python
 * frame's, or none is kept */
static inline const struct frame *
c_top(const struct pstate *p)
{
	unsigned d = (unsigned)p->depth - 1;

	return d < MAX_DEPTH && p->stack[d].cfn ? &p->stack[d] : NULL;
}

/* Pops f, the frame on top, and writes it (inlined: the hooks' short
 * ways call nothing) */
static inline __attribute__((always_inline)) void
pop_top(struct pstate *p, const struct frame *f, int64_t t, int raised)
{
	p->depth--;
	if (f->id && t - f->t0 >= min_ticks)
		write_frame(p, IST_REC_CALL, f, t, raised);
}

static inline void
pop_py(struct pstate *p, int64_t t, int raised)
{
	const struct frame *f = py_top(p);

	if (f != NULL)          /* nearly always */
		pop_top(p, f, t, raised);
	else
		pop_py_under(p, t, raised);
}

static inline void
pop_c(struct pstate *p, int64_t t, int raised)
{
	if (p->depth > 0 && p->depth <= MAX_DEPTH &&
	    !p->stack[p->depth - 1].cfn)
		return;
	pop(p, t, raised);
}

/* ---- interning ---- */

static uint32_t
code_id(PyCodeObject *code, PyFrameObject *frame)
{
	PyObject *qual, *globals, *mod = NULL;
	const char *q, *file, *m = NULL;
	char buf[1024];
	uint32_t id;

	if ((id = code_extra_id((PyObject *)code, extra_index)) != 0)
		return id;
#if PY_VERSION_HEX >= 0x030B0000
	qual = code->co_qualname;
	globals = PyFrame_GetGlobals(frame);
#else
	qual = code->co_name;
	globals = frame->f_globals;
	Py_XINCREF(globals);
#endif
	if (globals && PyDict_Check(globals)) {
		mod = PyDict_GetItemString(globals, "__name__");
		if (mod && PyUnicode_Check(mod))
			m = PyUnicode_AsUTF8(mod);
	}
	q = PyUnicode_AsUTF8(qual);
	file = PyUnicode_AsUTF8(code->co_filename);
	if (q == NULL || file == NULL) {
		PyErr_Clear();
		Py_XDECREF(globals);
		return 0;
	}
	if (m)
		snprintf(buf, sizeof(buf), "%s.%s", m, q);
	else
		snprintf(buf, sizeof(buf), "%s", q);
	if (m == NULL)
		PyErr_Clear();
	Py_XDECREF(globals);
	id = ist_coll_define_func(buf, file, code->co_firstlineno);
	if (id)
		code_set_extra((PyObject *)code, extra_index,
		    (void *)(uintptr_t)id);
	return id;
}

static inline size_t
ctab_slot(const void *ml, const void *owner)
{
	return (((uintptr_t)ml >> 4) ^ ((uintptr_t)owner >> 4)) &
	    (ctab_cap - 1);
}

static inline uint32_t
ctab_find(const void *ml, const void *owner)
{
	if (ctab_cap)
		for (size_t i = ctab_slot(ml, owner); ctab[i].ml;
		    i = (i + 1) & (ctab_cap - 1))
			if (ctab[i].ml == ml && ctab[i].owner == owner)
				return ctab[i].id;
	return 0;
}

/* Names a new (method def, owner) "prefix.name" and remembers it. */
static uint32_t
ctab_add(PyMethodDef *ml, void *owner, const char *prefix)
{
	char buf[512];
	size_t i;
	uint32_t id;

	snprintf(buf, sizeof(buf), "%s%s%s", prefix ? prefix : "",
	    prefix ? "." : "", ml->ml_name);
	if ((id = ist_coll_define_func(buf, NULL, 0)) == 0)
		return 0;
	if ((ctab_n + 1) * 2 > ctab_cap) {
		size_t ncap = ctab_cap ? ctab_cap * 2 : 1024, ocap = ctab_cap;
		struct centry *nt = calloc(ncap, sizeof(*nt)), *ot = ctab;
		if (nt == NULL)
			return id;
		ctab = nt;
		ctab_cap = ncap;
		for (size_t k = 0; k < ocap; k++) {
			if (!ot[k].ml)
				continue;
			for (i = ctab_slot(ot[k].ml, ot[k].owner); ctab[i].ml;
			    i = (i + 1) & (ctab_cap - 1))
				;
			ctab[i] = ot[k];
		}
		free(ot);
	}
	for (i = ctab_slot(ml, owner); ctab[i].ml; i = (i + 1) & (ctab_cap - 1))
		;
	ctab[i].ml = ml;
	ctab[i].owner = owner;
	ctab[i].id = id;
	ctab_n++;
	/* keep the owner alive so that its address names it for good */
	Py_XINCREF((PyObject *)owner);
	return id;
}

/* Whether fn is a builtin function or bound method */
static inline bool
is_cfunction(PyObject *fn)
{
	/* the exact types before PyCFunction_Check's PyType_IsSubtype: a
	 * bound method of a type with a defining class is a PyCMethod */
	if (Py_TYPE(fn) == &PyCFunction_Type)
		return true;
#if PY_VERSION_HEX >= 0x03090000
	if (Py_TYPE(fn) == &PyCMethod_Type)
		return true;
#endif
	return PyCFunction_Check(fn);
}

/*
 * A builtin function (module.name), method (type of self.name), or a
 * class's static or class method, bound to the class: by the module it
 * says it is of, as cProfile names it (torch.add, torch.tensor: torch
 * sets it; they had read type.add), else by its class (str.maketrans,
 * datetime.datetime.now).
 *
 * cfunc_id's first lookup missed: the owner told whatever self is, looked
 * up again, else named and kept.
 */
static __attribute__((noinline)) uint32_t
cfunc_id_slow(PyCFunctionObject *f)
{
	const char *prefix = NULL;
	bool cls = f->m_self && PyType_Check(f->m_self);
	void *owner = cls ? (void *)f->m_self : f->m_self &&
	    !PyModule_Check(f->m_self) ? (void *)Py_TYPE(f->m_self) :
	    (void *)f->m_module;
	uint32_t id;

	if ((id = ctab_find(f->m_ml, owner)) != 0)
		return id;
	if (cls)
		prefix = f->m_module && PyUnicode_Check(f->m_module) ?
		    PyUnicode_AsUTF8(f->m_module) :
		    ((PyTypeObject *)f->m_self)->tp_name;
	else if (f->m_self && !PyModule_Check(f->m_self))
		prefix = Py_TYPE(f->m_self)->tp_name;
	else if (f->m_module && PyUnicode_Check(f->m_module))
		prefix = PyUnicode_AsUTF8(f->m_module);
	else if (f->m_self && PyModule_Check(f->m_self))
		prefix = PyModule_GetName(f->m_self);
	if (prefix == NULL)
		PyErr_Clear();
	return ctab_add(f->m_ml, owner, prefix);
}

/*
 * The id of builtin function f (is_cfunction).  Looked up first (inlined
 * in the hooks) by what its owner is in every case but a function of an
 * instance of a module's subclass, which cfunc_id_slow finds: a class, a
 * module's name, or the type of self, told without PyModule_Check, whose
 * PyType_IsSubtype, called for every method (self a str, a list), had
 * made the lookup 0.09x of the MLP bench's 1.70x on 3.11.
 */
static inline uint32_t
cfunc_id_of(PyCFunctionObject *f)
{
	PyObject *self;
	void *owner;
	uint32_t id;

	if ((self = f->m_self) == NULL)
		owner = f->m_module;
	else if (PyType_Check(self))
		owner = self;
	else if (Py_TYPE(self) == &PyModule_Type)
		owner = f->m_module;
	else
		owner = Py_TYPE(self);
	if ((id = ctab_find(f->m_ml, owner)) != 0)
		return id;
	return cfunc_id_slow(f);
}

/* The id of fn, or 0 when it is no builtin function */
static inline uint32_t
cfunc_id(PyObject *fn)
{
	return is_cfunction(fn) ? cfunc_id_of((PyCFunctionObject *)fn) : 0;
}

#if PY_VERSION_HEX >= 0x030C0000
/* A method descriptor called on an object of type tp: the same id as the
 * bound method cfunc_id() sees on 3.11 and earlier. */
static uint32_t
cdescr_id(PyMethodDef *ml, PyTypeObject *tp)
{
	uint32_t id = ctab_find(ml, tp);

	return id ? id : ctab_add(ml, tp, tp->tp_name);
}
#endif

static uint32_t
name_id(PyObject *name)
{
	PyObject *v;
	const char *s;
	uint32_t id;

	if (name_ids == NULL && (name_ids = PyDict_New()) == NULL)
		return 0;
	if ((v = PyDict_GetItemWithError(name_ids, name)) != NULL)
		return (uint32_t)PyLong_AsUnsignedLong(v);
	if (PyErr_Occurred() || (s = PyUnicode_AsUTF8(name)) == NULL)
		return 0;
	if ((id = ist_coll_define_name(s)) == 0)
		return 0;
	v = PyLong_FromUnsignedLong(id);
	if (v == NULL || PyDict_SetItem(name_ids, name, v) != 0) {
		Py_XDECREF(v);
		PyErr_Clear();
		return id;
	}
	Py_DECREF(v);
	return id;
}

/* ---- the writer's restart after a fork (3.13+) ---- */

#if PY_VERSION_HEX >= 0x030D0000
static int resume_pending;      /* under the GIL */

static int
resume_now(void *arg)
{
	struct ist_error e = { 0 };

	(void)arg;
	if (resume_pending) {
		resume_pending = 0;
		if (ist_coll_resume(&e) != IST_OK)
			fprintf(stderr, "inferscope: error: %s\n", e.msg);
	}
	return 0;
}
#define RESUME_PENDING resume_pending
#else
#define RESUME_PENDING 0
#endif

/* ---- the capture switch (capture_agent.h) ---- */

/* the event that finds the switch moved: one entering a function (whose
 * frame the event pushes), one in a function under way (its return, a C
 * call from it), or a C function's return */
enum { AT_ENTER, AT_IN, AT_C_LEAVE };

/* A window ended at t: the calls and scopes open on p's stacks end there */
static void
close_all(struct pstate *p, int64_t t)
{
	for (int i = p->depth < MAX_DEPTH ? p->depth : MAX_DEPTH; i-- > 0; )
		if (p->stack[i].id)
			write_frame(p, IST_REC_CALL, &p->stack[i], t,
			    IST_CUT_END);
	p->depth = 0;
	for (int i = p->sdepth < MAX_SCOPES ? p->sdepth : MAX_SCOPES; i-- > 0; )
		if (!p->scopes[i].dead) {
			write_frame(p, IST_REC_SCOPE, &p->scopes[i], t,
			    IST_CUT_END);
			p->scopes[i].dead = 1;
		}
	p->gc_id = 0;
}

/*
 * A window started at t: p's stacks open again with what is under way,
 * the Python frames from f out (from its caller at AT_ENTER, whose event
 * pushes f) and the scopes entered, each cut at the window's start; at
 * AT_C_LEAVE, a nameless C call that the event pops.
 */
static void
reopen(struct pstate *p, PyFrameObject *f, int at, int64_t t)
{
	PyFrameObject *fr[MAX_DEPTH], *cur = f;
	int n = 0;

	Py_XINCREF(cur);
	if (at == AT_ENTER && cur) {
		PyFrameObject *b = PyFrame_GetBack(cur);
		Py_DECREF(cur);
		cur = b;
	}
	while (cur && n < MAX_DEPTH - 1) {
		fr[n++] = cur;
		cur = PyFrame_GetBack(cur);
	}
	Py_XDECREF(cur);
	p->depth = 0;
	while (n-- > 0) {
		PyCodeObject *code = PyFrame_GetCode(fr[n]);
		push(p, code_id(code, fr[n]), t, 0);
		p->stack[p->depth - 1].cut = IST_CUT_START;
		Py_DECREF(code);
		Py_DECREF(fr[n]);
	}
	if (at == AT_C_LEAVE)
		push(p, 0, t, 1);
	for (int i = 0; i < p->sdepth && i < MAX_SCOPES; i++) {
		p->scopes[i].t0 = t;
		p->scopes[i].cut = IST_CUT_START;
		p->scopes[i].dead = 0;
	}
}

/*
 * The capture switch has moved since p last looked: at the first pause
 * since then what was open ends, cut; if recording is on now, what is
 * under way starts again at the last window's start, cut.  A thread that
 * slept through several windows is recorded in none between.  f: the
 * event's frame, NULL for the current one.
 */
static void
capture_sync(struct pstate *p, PyFrameObject *f, int at)
{
	struct ist_capture *c = ist_cap;
	uint64_t n = ist_capture_n(), k;
	bool on = ist_capture_recording(), closed = false;

	if (p->rec)
		for (k = n - p->seen > IST_CAPTURE_HIST ? n - IST_CAPTURE_HIST :
		    p->seen; k < n && !closed; k++)
			if (!c->hist[k % IST_CAPTURE_HIST].on) {
				close_all(p, ist_coll_switch_ticks(
				    &c->hist[k % IST_CAPTURE_HIST]));
				closed = true;
			}
	p->seen = n;
	if (on && (!p->rec || closed)) {
		int64_t t = ist_ticks();
		for (k = n; k-- > 0 && n - k <= IST_CAPTURE_HIST; )
			if (c->hist[k % IST_CAPTURE_HIST].on) {
				t = ist_coll_switch_ticks(
				    &c->hist[k % IST_CAPTURE_HIST]);
				break;
			}
		reopen(p, f ? f : PyEval_GetFrame(), at, t);
	}
	p->rec = on;
}

/* Whether p records this event, having looked at the switch first */
#define RECORDING(p, f, at) (((ist_cap == NULL || ist_capture_n() == \
	(p)->seen) || (capture_sync((p), (f), (at)), 1)) && (p)->rec)

/*
 * The thread's CPU time, read at t, an event that comes a millisecond or
 * more after the thread's last (ist_coll_thread_cpu): the end of a long
 * call, of a stretch the program ran unrecorded (a C library's wait, a
 * ctypes call), or of a preemption.  The sampler reads it every 10 ms,
 * and a window's CPU time is shared among the calls in it at one rate,
 * so that a 4 ms preemption inside a cheap call after a busy one had
 * taken half of the busy one's CPU time; read at such edges, what lasts a
 * millisecond or more has its own.  Gaps, not a clock: a run under
 * valgrind, 50 times slower, reads no more often than a native one.  One
 * clock_gettime a millisecond at most (none where is-record does not
 * sample: cpu_gap INT64_MAX)
 */
static int64_t cpu_gap;         /* ticks: 0 until the first event */

static __attribute__((noinline, cold)) void
cpu_read(struct pstate *p, int64_t t)
{
	int64_t every = ist_coll_cpu_every_ticks();

	cpu_gap = every > 0 ? every : INT64_MAX;
	ist_coll_thread_cpu(p->ring, t);        /* none without the sampler */
}

/*
 * The hooks' short way, taken by nearly every event: the clock read with
 * no call (the TSC) into *t, p set up, recording, and the capture switch
 * where p last saw it, and no gap since its last event (cpu_edge).  What
 * it then does calls nothing, so that nothing is saved around a call; any
 * other case takes the hook's slow way.
 */
static inline bool
hot(struct pstate *p, int64_t *t)
{
	if (!(ist_ticks_inline(t) && p != NULL &&
	    ist_capture_n() == p->seen && p->rec) ||
	    __builtin_expect(*t - p->last_t >= cpu_gap, 0))
		return false;
	p->last_t = *t;
	return true;
}

/* The slow ways' look at the gap since the thread's last event */
static inline void
cpu_edge(struct pstate *p, int64_t t)
{
	if (p->rec && t - p->last_t >= cpu_gap)
		cpu_read(p, t);
	p->last_t = t;
}

/* ---- the profile hook ---- */

/*
 * How the Python frame that returns to its caller ended (the profile
 * hook's PyTrace_RETURN, arg the value it gave): IST_REC_RAISED when an
 * exception ended it (no value), IST_REC_YIELDED when it is a generator's
 * run that stopped at a yield (or a yield from) to be resumed, 0 when it
 * returned.  A coroutine's or an async generator's awaits are not asked:
 * their runs are no loop's iterations.
 */
static inline int
py_ended(const struct pstate *p, PyFrameObject *frame, PyObject *arg)
{
	uint32_t d = p->depth;

	if (arg == NULL)
		return IST_REC_RAISED;
	while (d > 0 && d <= MAX_DEPTH && p->stack[d - 1].cfn)
		d--;
	if (d == 0 || d > MAX_DEPTH || !p->stack[d - 1].gen)
		return 0;
#if PY_VERSION_HEX >= 0x030B0000
	{
		/* 3.11: YIELD_VALUE marks the generator suspended (pycore_frame.h's
		 * FRAME_SUSPENDED, -1) before it tells the profiler; a return
		 * leaves it executing */
		PyObject *g = PyFrame_GetGenerator(frame);
		int y = g && ((PyGenObject *)g)->gi_frame_state == -1;
		Py_XDECREF(g);
		return y ? IST_REC_YIELDED : 0;
	}
#elif PY_VERSION_HEX >= 0x030A0000
	return frame->f_state == FRAME_SUSPENDED ? IST_REC_YIELDED : 0;
#else
	/* 3.8, 3.9: a yield keeps the frame's stack (f_stacktop), a return
	 * leaves it NULL */
	return frame->f_stacktop != NULL ? IST_REC_YIELDED : 0;
#endif
}

static __attribute__((noinline)) int
profile_slow(PyFrameObject *frame, int what, PyObject *arg)
{
	struct pstate *p = me;
	int64_t t = ist_ticks();
	struct frame *f;

	if (p == NULL && (p = pstate()) == NULL)
		return 0;
	cpu_edge(p, t);
	switch (what) {
	case PyTrace_CALL: {
		PyCodeObject *code;
		if (!RECORDING(p, frame, AT_ENTER))
			break;
		code = PyFrame_GetCode(frame);
		if ((f = push(p, code_id(code, frame), t, 0)) != NULL)
			f->gen = (code->co_flags & CO_GENERATOR) != 0;
		Py_DECREF(code);
		break;
	}
	case PyTrace_C_CALL:
		if (RECORDING(p, frame, AT_IN))
			push(p, cfunc_id(arg), t, 1);
		break;
	case PyTrace_RETURN:
		/* arg: the value returned or yielded, NULL when an
		 * exception ends the call */
		if (RECORDING(p, frame, AT_IN))
			pop_py(p, t, py_ended(p, frame, arg));
		break;
	case PyTrace_C_RETURN:
	case PyTrace_C_EXCEPTION:
		if (RECORDING(p, frame, AT_C_LEAVE))
			pop_c(p, t, what == PyTrace_C_EXCEPTION ?
			    IST_REC_RAISED : 0);
		break;
	}
	return 0;
}

/* The return of a Python function that is no generator's (hot) */
static __attribute__((noinline)) int
profile_return(PyFrameObject *frame, PyObject *arg)
{
	struct pstate *p = me;
	const struct frame *f;
	int64_t t;

	if (arg != NULL && hot(p, &t) && (f = py_top(p)) != NULL && !f->gen) {
		pop_top(p, f, t, 0);
		return 0;
	}
	return profile_slow(frame, PyTrace_RETURN, arg);
}

/* A call of a code named already (hot, but for PyFrame_GetCode) */
static __attribute__((noinline)) int
profile_call(PyFrameObject *frame)
{
	PyCodeObject *code = PyFrame_GetCode(frame);
	uint8_t gen = (code->co_flags & CO_GENERATOR) != 0;
	uint32_t id = code_extra_id((PyObject *)code, extra_index);
	struct pstate *p;
	struct frame *f;
	int64_t t;

	Py_DECREF(code);        /* the frame holds it */
	p = me;
	if (id != 0 && hot(p, &t)) {
		if ((f = push(p, id, t, 0)) != NULL)
			f->gen = gen;
		return 0;
	}
	return profile_slow(frame, PyTrace_CALL, NULL);
}

/* A C function's call, named already (hot, but for cfunc_id) */
static __attribute__((noinline)) int
profile_ccall(PyFrameObject *frame, PyObject *arg)
{
	uint32_t id = cfunc_id(arg);
	struct pstate *p = me;
	int64_t t;

	if (id != 0 && hot(p, &t)) {
		push(p, id, t, 1);
		return 0;
	}
	return profile_slow(frame, PyTrace_C_CALL, arg);
}

/* A C function's return, its call on top (hot) */
static __attribute__((noinline)) int
profile_creturn(PyFrameObject *frame, PyObject *arg)
{
	struct pstate *p = me;
	const struct frame *f;
	int64_t t;

	if (hot(p, &t) && (f = c_top(p)) != NULL) {
		pop_top(p, f, t, 0);
		return 0;
	}
	return profile_slow(frame, PyTrace_C_RETURN, arg);
}

/*
 * make bench's floors, what recording costs where part of it costs nothing
 * (the Makefile's floors, never installed): IST_FLOOR 1, callbacks that
 * return at once (CPython's dispatch of each event alone); 2, that read
 * the clock and return.
 */
#ifndef IST_FLOOR
#define IST_FLOOR 0
#endif
static volatile int64_t floor_sink;
#define FLOOR_THEN(leave) do {						\
	if (IST_FLOOR == 2)						\
		floor_sink = ist_ticks();				\
	if (IST_FLOOR)							\
		leave;							\
} while (0)
#define FLOOR() FLOOR_THEN(Py_RETURN_NONE)

/* The profile hook (3.11 and earlier; 3.12+ where sys.monitoring has no
 * tool id free): calls and returns, nearly every event, take their short
 * ways; the rest (an exception, a generator's run, a paused thread, a
 * moved switch), profile_slow.  A floor's returns at once: CPython's
 * dispatch of each event to a profile function alone, which cProfile
 * pays too (the frame object it makes for each Python call among it). */
static int
profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	(void)obj;
	FLOOR_THEN(return 0);
	switch (what) {
	case PyTrace_RETURN:
		return profile_return(frame, arg);
	case PyTrace_CALL:
		return profile_call(frame);
	case PyTrace_C_CALL:
		return profile_ccall(frame, arg);
	case PyTrace_C_RETURN:
		return profile_creturn(frame, arg);
	}
	return profile_slow(frame, what, arg);
}

/* ---- sys.monitoring (3.12+): C callbacks, about 3x cheaper ---- */

#if PY_VERSION_HEX >= 0x030C0000
/* Not PROFILER_ID (2): cProfile takes that one on 3.12+, and a program
 * that profiles itself under is-record must still run.  3 and 4 are the
 * ids PEP 669 leaves unassigned. */
static const int tool_ids[] = { 4, 3 };
static int tool_id = -1;
static int monitoring;
static long mon_mask;           /* the events we registered */
static PyObject *mon_missing;   /* sys.monitoring.MISSING: no arg0 */

/* mon_enter's every case: the switch looked at, a code named, a stack
 * past MAX_DEPTH, a clock read with a call */
static __attribute__((noinline)) PyObject *
mon_enter_slow(PyObject *const *args, size_t nargsf)
{
	Py_ssize_t n = PyVectorcall_NARGS(nargsf);
	int64_t t;
	struct pstate *p = me;
	uint32_t id;

	t = ist_ticks();
	if (p == NULL && (p = pstate()) == NULL)
		Py_RETURN_NONE;
	cpu_edge(p, t);
	if (n < 1 || !PyCode_Check(args[0]) || !RECORDING(p, NULL, AT_ENTER))
		Py_RETURN_NONE;
	if ((id = code_extra_id(args[0], extra_index)) == 0) {
		PyFrameObject *f = PyEval_GetFrame();
		id = f ? code_id((PyCodeObject *)args[0], f) : 0;
	}
	push(p, id, t, 0);
	Py_RETURN_NONE;
}

/* PY_START, PY_RESUME, PY_THROW: (code, offset[, exc]).  A code named
 * already (hot); the rest, mon_enter_slow */
static PyObject *
mon_enter(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
	struct pstate *p = me;
	int64_t t;
	uint32_t id;

	(void)self;
	(void)kw;
	FLOOR();
	if (hot(p, &t) && PyVectorcall_NARGS(nargsf) >= 1 &&
	    PyCode_Check(args[0]) &&
	    (id = code_extra_id(args[0], extra_index)) != 0) {
		push(p, id, t, 0);
		Py_RETURN_NONE;
	}
	return mon_enter_slow(args, nargsf);
}

/* PY_RETURN (0), PY_YIELD (IST_REC_YIELDED: a generator's run ends at a
 * yield) and PY_UNWIND (IST_REC_RAISED: an exception ends the call) */
static __attribute__((noinline)) PyObject *
py_leave_slow(int raised)
{
	int64_t t = ist_ticks();
	struct pstate *p = me;

	if (p != NULL)
		cpu_edge(p, t);
	if (p != NULL && RECORDING(p, NULL, AT_IN))
		pop_py(p, t, raised);
	Py_RETURN_NONE;
}

/* A Python frame on top (hot); the rest, py_leave_slow */
static inline PyObject *
py_leave(int raised)
{
	struct pstate *p = me;
	const struct frame *f;
	int64_t t;

	FLOOR();
	if (hot(p, &t) && (f = py_top(p)) != NULL) {
		pop_top(p, f, t, raised);
		Py_RETURN_NONE;
	}
	return py_leave_slow(raised);
}

static PyObject *
mon_leave(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
	(void)self;
	(void)args;
	(void)nargsf;
	(void)kw;
	return py_leave(0);
}

/* PY_YIELD: (code, offset, value); a coroutine's or an async generator's
 * await is a plain end (their runs are no loop's iterations) */
static PyObject *
mon_yield(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
	(void)self;
	(void)kw;
	return py_leave(PyVectorcall_NARGS(nargsf) >= 1 &&
	    PyCode_Check(args[0]) && (((PyCodeObject *)args[0])->co_flags &
	    CO_GENERATOR) ? IST_REC_YIELDED : 0);
}

static PyObject *
mon_unwind(PyObject *self, PyObject *const *args, size_t nargsf,
    PyObject *kw)
{
	(void)self;
	(void)args;
	(void)nargsf;
	(void)kw;
	return py_leave(IST_REC_RAISED);
}

/*
 * Whether a CALL event calls a C function, as cProfile's get_cfunc_from_callable
 * (Modules/_lsprof.c) finds it, so that both count the same calls: a
 * builtin function or method, or a method descriptor called with its self
 * (list.append(l, x), and l.append(x) on 3.12+, where the call site holds
 * the unbound descriptor).  The descriptor is named as the bound method
 * that 3.11 and earlier report: its method def and the type of its self,
 * without making the bound method (cdescr_id).
 */
/* mon_is_ccall's answer where the callable's type is exactly a builtin
 * function's or a method descriptor's: no walk of a type's bases */
static inline int
mon_is_ccall_exact(Py_ssize_t n, PyObject *const *args)
{
	return Py_IS_TYPE(args[2], &PyCFunction_Type) ||
	    (Py_IS_TYPE(args[2], &PyMethodDescr_Type) && n >= 4 &&
	    args[3] != mon_missing);
}

/* A class called (an instance made) or a bound method: the most common
 * callables after functions and builtins, neither ever a builtin
 * function's subclass, told without PyCFunction_Check's walk of the
 * type's bases */
static inline int
mon_is_other(PyObject *c)
{
	return PyType_Check(c) || Py_IS_TYPE(c, &PyMethod_Type);
}

static inline int
mon_is_ccall(Py_ssize_t n, PyObject *const *args)
{
	/* most calls are of Python functions: said before PyCFunction_Check,
	 * which walks the type's bases (PyType_IsSubtype) when it fails */
	if (Py_IS_TYPE(args[2], &PyFunction_Type))
		return 0;
	if (mon_is_ccall_exact(n, args))
		return 1;
	return !mon_is_other(args[2]) && is_cfunction(args[2]);
}

/*
 * CALL: (code, offset, callable, arg0).  Every call site stays on: a site
 * may call a Python function once and a C function the next time (h =
 * f if x else len; h()), and sys.monitoring's DISABLE would switch it off
 * for good, losing the C calls (cProfile never disables one either).
 * A C call is pushed here and popped by its C_RETURN or C_RAISE, which
 * CPython sends with the same callable and arg0, so both sides decide
 * alike and the stack stays balanced.
 */
static __attribute__((noinline)) PyObject *
mon_ccall(PyObject *const *args, Py_ssize_t n)
{
	struct pstate *p = me;
	PyObject *c;
	int64_t t;

	if (!mon_is_ccall(n, args))
		Py_RETURN_NONE;
	/* the clock is read only for a C call, a few instructions late */
	t = ist_ticks();
	if (p == NULL && (p = pstate()) == NULL)
		Py_RETURN_NONE;
	if (!RECORDING(p, NULL, AT_IN))
		Py_RETURN_NONE;
	cpu_edge(p, t);
	c = args[2];
	push(p, is_cfunction(c) ? cfunc_id_of((PyCFunctionObject *)c) :
	    cdescr_id(((PyMethodDescrObject *)c)->d_method, Py_TYPE(args[3])),
	    t, 1);
	Py_RETURN_NONE;
}

/* A call of a Python function, most of them, returns before anything is
 * kept in a register: the rest is mon_ccall's, a call of its own */
static PyObject *
mon_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
	Py_ssize_t n = PyVectorcall_NARGS(nargsf);

	(void)self;
	(void)kw;
	if (IST_FLOOR || n < 3 || Py_IS_TYPE(args[2], &PyFunction_Type))
		Py_RETURN_NONE;
	return mon_ccall(args, n);
}

/* C_RETURN, C_RAISE: (code, offset, callable, arg0) */
static __attribute__((noinline)) PyObject *
c_leave_slow(PyObject *const *args, size_t nargsf, int raised)
{
	Py_ssize_t n = PyVectorcall_NARGS(nargsf);
	int c = n >= 3 && mon_is_ccall(n, args);
	int64_t t;
	struct pstate *p = me;

	/* the return of no builtin (a class called, a bound method, an
	 * object's __call__: a torch module's) ends no call of ours: no
	 * clock read for it */
	if (!c && !RESUME_PENDING)
		Py_RETURN_NONE;
	t = ist_ticks();
	if (p != NULL)
		cpu_edge(p, t);
	if (c && p != NULL && RECORDING(p, NULL, AT_C_LEAVE))
		pop_c(p, t, raised);
#if PY_VERSION_HEX >= 0x030D0000
	if (resume_pending)        /* os.fork() has returned */
		resume_now(NULL);
#endif
	Py_RETURN_NONE;
}

/* The return of a builtin function or of a method descriptor called
 * with its self (mon_is_ccall_exact), its call on top (hot), no fork's
 * resumption pending; the rest, c_leave_slow */
static PyObject *
mon_c_leave(PyObject *self, PyObject *const *args, size_t nargsf,
    PyObject *kw)
{
	Py_ssize_t n = PyVectorcall_NARGS(nargsf);
	struct pstate *p = me;
	const struct frame *f;
	int64_t t;

	(void)self;
	(void)kw;
	FLOOR();
	if (!RESUME_PENDING && n >= 3 && mon_is_ccall_exact(n, args) &&
	    hot(p, &t) && (f = c_top(p)) != NULL) {
		pop_top(p, f, t, 0);
		Py_RETURN_NONE;
	}
	return c_leave_slow(args, nargsf, 0);
}

static PyObject *
mon_c_raise(PyObject *self, PyObject *const *args, size_t nargsf,
    PyObject *kw)
{
	(void)self;
	(void)kw;
	FLOOR();
	return c_leave_slow(args, nargsf, IST_REC_RAISED);
}

/*
 * The callbacks are objects of their own type, called through their
 * vectorcall slot: CPython then calls them directly, without a builtin
 * function's checks around the call (tens of instructions an event).
 */
typedef struct {
	PyObject_HEAD
	vectorcallfunc vectorcall;
} HookObject;

static PyTypeObject HookType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "_inferscope._Hook",
	.tp_basicsize = sizeof(HookObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
	.tp_vectorcall_offset = offsetof(HookObject, vectorcall),
	.tp_call = PyVectorcall_Call,
};

static const vectorcallfunc mon_fns[] = {
	mon_enter, mon_leave, mon_call, mon_c_leave, mon_unwind, mon_c_raise,
	mon_yield,
};

static PyObject *
hook_new(vectorcallfunc f)
{
	HookObject *h;

	if (PyType_Ready(&HookType) < 0 ||
	    (h = PyObject_New(HookObject, &HookType)) == NULL)
		return NULL;
	h->vectorcall = f;
	return (PyObject *)h;
}

/* Registers the callbacks; 0 when sys.monitoring is not ours to use. */
static int
monitoring_start(void)
{
	static const struct { const char *event; int def; } ev[] = {
		{ "PY_START", 0 }, { "PY_RESUME", 0 }, { "PY_THROW", 0 },
		{ "PY_RETURN", 1 }, { "PY_YIELD", 6 }, { "PY_UNWIND", 4 },
		{ "CALL", 2 }, { "C_RETURN", 3 }, { "C_RAISE", 5 },
	};
	PyObject *sys = NULL, *mon = NULL, *events = NULL, *r;
	long mask = 0;
	int ok = 0;

	if ((sys = PyImport_ImportModule("sys")) == NULL ||
	    (mon = PyObject_GetAttrString(sys, "monitoring")) == NULL ||
	    (events = PyObject_GetAttrString(mon, "events")) == NULL)
		goto out;
	if (mon_missing == NULL &&
	    (mon_missing = PyObject_GetAttrString(mon, "MISSING")) == NULL)
		goto out;
	for (size_t i = 0; tool_id < 0 && i < sizeof(tool_ids) /
	    sizeof(tool_ids[0]); i++) {
		r = PyObject_CallMethod(mon, "use_tool_id", "is", tool_ids[i],
		    "inferscope");
		if (r == NULL)
			PyErr_Clear();      /* another tool holds it */
		else {
			Py_DECREF(r);
			tool_id = tool_ids[i];
		}
	}
	if (tool_id < 0)
		goto out;
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		PyObject *e = PyObject_GetAttrString(events, ev[i].event), *fn;
		long bit;
		if (e == NULL)
			goto out;
		bit = PyLong_AsLong(e);
		fn = hook_new(mon_fns[ev[i].def]);
		r = fn ? PyObject_CallMethod(mon, "register_callback", "iOO",
		    tool_id, e, fn) : NULL;
		Py_XDECREF(fn);
		Py_DECREF(e);
		if (r == NULL)
			goto out;
		Py_DECREF(r);
		mask |= bit;
	}
	r = PyObject_CallMethod(mon, "set_events", "il", tool_id, mask);
	if (r == NULL)
		goto out;
	Py_DECREF(r);
	ok = 1;
	monitoring = 1;
	mon_mask = mask;
out:
	if (!ok) {
		PyErr_Clear();
		if (tool_id >= 0) {         /* half set up: give it back */
			r = PyObject_CallMethod(mon, "free_tool_id", "i",
			    tool_id);
			Py_XDECREF(r);
			PyErr_Clear();
			tool_id = -1;
		}
	}
	Py_XDECREF(events);
	Py_XDECREF(mon);
	Py_XDECREF(sys);
	return ok;
}

static void
monitoring_stop(void)
{
	PyObject *sys, *mon;

	if (!monitoring)
		return;
	monitoring = 0;
	if ((sys = PyImport_ImportModule("sys")) != NULL &&
	    (mon = PyObject_GetAttrString(sys, "monitoring")) != NULL) {
		PyObject *r = PyObject_CallMethod(mon, "set_events", "ii",
		    tool_id, 0);
		Py_XDECREF(r);
		r = PyObject_CallMethod(mon, "free_tool_id", "i", tool_id);
		Py_XDECREF(r);
		tool_id = -1;
		Py_DECREF(mon);
	}
	Py_XDECREF(sys);
	PyErr_Clear();
}
#else
static int monitoring;
static int monitoring_start(void) { return 0; }
static void monitoring_stop(void) { }
#endif

/* ---- the hooks, on and off with the capture switch ---- */

static bool hooks_live;         /* the call hooks are installed */

/*
 * Installs or removes the call hooks of every thread, under the GIL: off,
 * recording costs nothing beyond a paused program's own work (CPython
 * calls no hook); on, every thread's first event reopens its stack.
 */
static void
hooks_set(bool on)
{
	if (!active || !calls_on || on == hooks_live)
		return;
	hooks_live = on;
#if PY_VERSION_HEX >= 0x030C0000
	if (monitoring) {
		PyObject *sys = PyImport_ImportModule("sys"), *mon, *r = NULL;
		mon = sys ? PyObject_GetAttrString(sys, "monitoring") : NULL;
		if (mon)
			r = PyObject_CallMethod(mon, "set_events", "il",
			    tool_id, on ? mon_mask : 0L);
		Py_XDECREF(r);
		Py_XDECREF(mon);
		Py_XDECREF(sys);
		PyErr_Clear();
		return;
	}
	PyEval_SetProfileAllThreads(on ? profile : NULL, NULL);
#else
	for (PyThreadState *ts = PyInterpreterState_ThreadHead(
	    PyInterpreterState_Get()); ts; ts = PyThreadState_Next(ts))
		_PyEval_SetProfile(ts, on ? profile : NULL, NULL);
#endif
	PyErr_Clear();
}

static int
hooks_follow(void *arg)
{
	(void)arg;
	hooks_set(ist_capture_recording());
	return 0;
}

/* In the writer thread: the switch moved (is-record's timers or signal,
 * another process): the main thread follows at its next check. */
static void
capture_moved(void)
{
	Py_AddPendingCall(hooks_follow, NULL);
}

/* inferscope.start() and stop(): whether recording switched */
static PyObject *
py_capture(PyObject *self, PyObject *on)
{
	int want = PyObject_IsTrue(on);
	bool done;

	(void)self;
	if (want < 0)
		return NULL;
	if (!active || ist_cap == NULL)
		Py_RETURN_FALSE;
	done = ist_capture_switch(want, IST_CW_API, 0, false);
	hooks_set(ist_capture_recording());
	return PyBool_FromLong(done);
}

/* inferscope.dump(): whether the flight recorders were asked to write;
 * this process's is written when it returns */
static PyObject *
py_dump(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	bool done = false;

	if (active) {
		Py_BEGIN_ALLOW_THREADS
		done = ist_coll_dump();
		Py_END_ALLOW_THREADS
	}
	return PyBool_FromLong(done);
}

/* ---- module functions ---- */

static PyObject *
start_profiling_here(void)
{
	struct pstate *p = pstate();

	if (p == NULL)
		return PyErr_NoMemory();
	PyEval_SetProfile(profile, NULL);
	Py_RETURN_NONE;
}

/*
 * threading.setprofile(_thread_hook): the first event of every new thread
 * names the thread and hands over to the C hook.
 */
static PyObject *
thread_hook(PyObject *self, PyObject *args)
{
	PyObject *threading, *cur, *name;
	struct pstate *p;

	(void)self;
	(void)args;
	if (!active)
		Py_RETURN_NONE;
	if ((p = pstate()) == NULL)
		return PyErr_NoMemory();
	threading = PyImport_ImportModule("threading");
	cur = threading ? PyObject_CallMethod(threading, "current_thread",
	    NULL) : NULL;
	name = cur ? PyObject_GetAttrString(cur, "name") : NULL;
	name_thread(p, name);
	Py_XDECREF(name);
	Py_XDECREF(cur);
	Py_XDECREF(threading);
	if (monitoring || !calls_on || !hooks_live) {
		/* named; sys.monitoring already sees every thread, and
		 * hooks_set() every thread when recording resumes */
		PyEval_SetProfile(NULL, NULL);
		Py_RETURN_NONE;
	}
	return start_profiling_here();
}

/*
 * _thread.start_new_thread's threads (started by the program or a library
 * directly, not through threading, whose hook names the thread): up to
 * 3.11 a profile hook is per thread, and the bootstrap's wrapper calls this
 * first on each.  sys.monitoring (3.12+) sees every thread already.
 */
static PyObject *
py_raw_thread(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	if (!active || monitoring || !calls_on || !hooks_live)
		Py_RETURN_NONE;
	return start_profiling_here();
}

static PyObject *
py_start(PyObject *self, PyObject *args)
{
	const char *dir, *producer;
	long long mb, min_us;
	int calls;
	char path[4096];
	struct ist_coll_opts o = { 0 };
	struct ist_error e = { 0 };

	(void)self;
	int ring = 0;

	if (!PyArg_ParseTuple(args, "sLLps|p", &dir, &mb, &min_us, &calls,
	    &producer, &ring))
		return NULL;
	if (active)
		Py_RETURN_NONE;
	if (extra_index < 0)
		extra_index = request_extra_index(NULL);
	free(stream_dir);
	stream_dir = strdup(dir);
	budget = mb << 20;
	snprintf(path, sizeof(path), "%s/%ld.ist", dir, (long)getpid());
	o.path = path;
	o.producer = producer;
	o.budget_bytes = (uint64_t)budget;
	o.flush_interval_ms = 250;
	o.ring_bytes = ring ? (uint64_t)budget : 0;
	o.rate_now = min_us > 0;
	if (ist_coll_start(&o, &e) != IST_OK)
		return PyErr_Format(PyExc_OSError, "%s", e.msg);
	min_ticks = ist_coll_duration_ticks(min_us * 1000);
	calls_on = calls;
	active = 1;
	{
		struct pstate *p = pstate();
		if (p)
			thread_name_record(p, "MainThread");
	}
	ist_coll_on_switch(capture_moved);
	if (calls) {
		PyObject *r = Py_None;
		hooks_live = true;
		if ((getenv("INFERSCOPE_PY_HOOK") == NULL ||
		    strcmp(getenv("INFERSCOPE_PY_HOOK"), "setprofile") != 0) &&
		    monitoring_start())
			Py_INCREF(r);
		else if ((r = start_profiling_here()) == NULL)
			return NULL;
		hooks_set(ist_capture_recording());
		return r;
	}
	Py_RETURN_NONE;
}

static PyObject *
py_stop(PyObject *self, PyObject *args)
{
	struct ist_error e = { 0 };

	(void)self;
	(void)args;
	if (!active)
		Py_RETURN_NONE;
	ist_coll_on_switch(NULL);
	if (me != NULL && ist_cap != NULL && ist_capture_n() != me->seen)
		capture_sync(me, NULL, AT_IN);  /* a pause's cut calls */
	PyEval_SetProfile(NULL, NULL);
	monitoring_stop();
	active = 0;
	if (ist_coll_stop(&e) != IST_OK)
		return PyErr_Format(PyExc_OSError, "%s", e.msg);
	Py_RETURN_NONE;
}

/*
 * gc.callbacks: a collection is recorded as a call named for its
 * generation, "gc (generation 2)", on the thread it paused (the thread
 * whose allocation set it off, or that called gc.collect()).  The callback
 * runs only when the collector does.
 */
static PyObject *
py_gc(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	static uint32_t ids[8];
	struct pstate *p;
	PyObject *gen;
	const char *phase;
	long g;

	(void)self;
	if (!active || nargs != 2 || (p = pstate()) == NULL ||
	    (phase = PyUnicode_AsUTF8(args[0])) == NULL) {
		PyErr_Clear();
		Py_RETURN_NONE;
	}
	if (strcmp(phase, "start") == 0) {
		if (!RECORDING(p, NULL, AT_IN))
			Py_RETURN_NONE;
		gen = PyDict_Check(args[1]) ? PyDict_GetItemString(args[1],
		    "generation") : NULL;
		g = gen ? PyLong_AsLong(gen) : -1;
		PyErr_Clear();
		if (g < 0 || g > 7) {
			p->gc_id = 0;
			Py_RETURN_NONE;
		}
		if (ids[g] == 0) {
			char name[32];
			snprintf(name, sizeof(name), IST_GC_NAME_FMT, (int)g);
			ids[g] = ist_coll_define_func(name, NULL, 0);
		}
		p->gc_id = ids[g];
		p->gc_t0 = ist_ticks();
	} else if (p->gc_id) {
		int64_t t = ist_ticks();
		if (t - p->gc_t0 >= min_ticks)
			ist_coll_timed(p->ring, IST_REC_CALL, p->gc_id,
			    p->gc_t0, t);
		p->gc_id = 0;
	}
	Py_RETURN_NONE;
}

/* The calling thread was renamed: record its new name. */
static PyObject *
py_name_thread(PyObject *self, PyObject *name)
{
	struct pstate *p;

	(void)self;
	if (active && (p = pstate()) != NULL)
		name_thread(p, name);
	Py_RETURN_NONE;
}

static PyObject *
py_flush(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	if (active)
		(void)ist_coll_flush();   /* a failure is told at stop */
	Py_RETURN_NONE;
}

/* os.register_at_fork(before=..., after_in_parent=...): the program forks
 * with its own threads only, not our writer (3.12+ warns of a fork() in a
 * multi-threaded process, counting threads in /proc/self/stat). */
static PyObject *
py_fork_before(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	if (active) {
		Py_BEGIN_ALLOW_THREADS
		ist_coll_pause();
		Py_END_ALLOW_THREADS
	}
	Py_RETURN_NONE;
}

static PyObject *
py_fork_parent(PyObject *self, PyObject *args)
{
	struct ist_error e = { 0 };

	(void)self;
	(void)args;
#if PY_VERSION_HEX >= 0x030D0000
	/* 3.13 warns after these hooks: resume once os.fork() returns (its
	 * C_RETURN event, or the next pending call, whichever comes first) */
	resume_pending = 1;
	if (Py_AddPendingCall(resume_now, NULL) == 0)
		Py_RETURN_NONE;
#endif
	if (ist_coll_resume(&e) != IST_OK)
		return PyErr_Format(PyExc_OSError, "%s", e.msg);
	Py_RETURN_NONE;
}

static PyObject *
py_after_fork(PyObject *self, PyObject *args)
{
	char path[4096];
	struct ist_error e = { 0 };
	struct pstate *p = me;

	(void)self;
	(void)args;
	if (!active || stream_dir == NULL)
		Py_RETURN_NONE;
	snprintf(path, sizeof(path), "%s/%ld.ist", stream_dir,
	    (long)getpid());
	if (ist_coll_after_fork(path, &e) != IST_OK) {
		active = 0;
		PyEval_SetProfile(NULL, NULL);
		return PyErr_Format(PyExc_OSError, "%s", e.msg);
	}
	if (p) {
		/* the frames on our stack belong to the parent's records */
		p->depth = 0;
		p->sdepth = 0;
		p->gc_id = 0;
		p->ring = ist_coll_ring();
		thread_name_record(p, "MainThread");
	}
	Py_RETURN_NONE;
}

static PyObject *
py_enabled(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyBool_FromLong(active);
}

static PyObject *
py_hook(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	return PyUnicode_FromString(!active ? "none" : monitoring ?
	    "sys.monitoring" : "setprofile");
}

/* ---- metadata -> CBOR ---- */

struct cbuf {
	uint8_t *p;
	size_t n, cap;
};

static int
put(struct cbuf *b, const void *s, size_t n)
{
	if (b->cap - b->n < n) {
		PyErr_SetString(PyExc_ValueError, "mark_event: metadata is "
		    "larger than 60000 bytes");
		return -1;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	return 0;
}

static int
put_head(struct cbuf *b, int major, uint64_t v)
{
	uint8_t h[9];
	size_t n;

	if (v < 24) {
		h[0] = (uint8_t)(major << 5 | v);
		n = 1;
	} else if (v < 0x100) {
		h[0] = (uint8_t)(major << 5 | 24);
		h[1] = (uint8_t)v;
		n = 2;
	} else if (v < 0x10000) {
		h[0] = (uint8_t)(major << 5 | 25);
		h[1] = (uint8_t)(v >> 8);
		h[2] = (uint8_t)v;
		n = 3;
	} else if (v < 0x100000000ull) {
		h[0] = (uint8_t)(major << 5 | 26);
		for (int i = 0; i < 4; i++)
			h[1 + i] = (uint8_t)(v >> (24 - 8 * i));
		n = 5;
	} else {
		h[0] = (uint8_t)(major << 5 | 27);
		for (int i = 0; i < 8; i++)
			h[1 + i] = (uint8_t)(v >> (56 - 8 * i));
		n = 9;
	}
	return put(b, h, n);
}

static int
put_str(struct cbuf *b, PyObject *s)
{
	Py_ssize_t n;
	const char *u = PyUnicode_AsUTF8AndSize(s, &n);

	if (u == NULL)
		return -1;
	if (put_head(b, 3, (uint64_t)n))
		return -1;
	return put(b, u, (size_t)n);
}

static int
to_cbor(struct cbuf *b, PyObject *o, int depth)
{
	if (depth > 32) {
		PyErr_SetString(PyExc_ValueError, "mark_event: metadata is "
		    "nested more than 32 deep");
		return -1;
	}
	if (o == Py_None)
		return put(b, "\xf6", 1);
	if (o == Py_True)
		return put(b, "\xf5", 1);
	if (o == Py_False)
		return put(b, "\xf4", 1);
	if (PyLong_Check(o)) {
		int overflow;
		long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
		if (overflow) {
			PyErr_SetString(PyExc_OverflowError, "mark_event: "
			    "metadata integer does not fit in 64 bits");
			return -1;
		}
		return v >= 0 ? put_head(b, 0, (uint64_t)v) :
		    put_head(b, 1, (uint64_t)(-(v + 1)));
	}
	if (PyFloat_Check(o)) {
		double d = PyFloat_AS_DOUBLE(o);
		uint64_t u;
		uint8_t h[9];
		memcpy(&u, &d, 8);
		h[0] = 0xfb;
		for (int i = 0; i < 8; i++)
			h[1 + i] = (uint8_t)(u >> (56 - 8 * i));
		return put(b, h, 9);
	}
	if (PyUnicode_Check(o))
		return put_str(b, o);
	if (PyList_Check(o) || PyTuple_Check(o)) {
		PyObject *seq = PySequence_Fast(o, "");
		Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
		int rc = put_head(b, 4, (uint64_t)n);
		for (Py_ssize_t i = 0; i < n && rc == 0; i++)
			rc = to_cbor(b, PySequence_Fast_GET_ITEM(seq, i),
			    depth + 1);
		Py_DECREF(seq);
		return rc;
	}
	if (PyDict_Check(o)) {
		PyObject *k, *v;
		Py_ssize_t pos = 0;
		if (put_head(b, 5, (uint64_t)PyDict_Size(o)))
			return -1;
		while (PyDict_Next(o, &pos, &k, &v)) {
			if (!PyUnicode_Check(k)) {
				PyErr_Format(PyExc_TypeError, "mark_event: "
				    "metadata keys must be str, not %.100s",
				    Py_TYPE(k)->tp_name);
				return -1;
			}
			if (put_str(b, k) || to_cbor(b, v, depth + 1))
				return -1;
		}
		return 0;
	}
	PyErr_Format(PyExc_TypeError, "mark_event: metadata values must be "
	    "str, int, float, bool, None, list or dict, not %.100s",
	    Py_TYPE(o)->tp_name);
	return -1;
}

static PyObject *
py_mark_event(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "name", "metadata", NULL };
	static uint8_t meta[MAX_META];
	PyObject *name, *md = Py_None;
	struct cbuf b = { meta, 0, sizeof(meta) };
	struct pstate *p;
	struct ist_rec *h;
	int64_t t = ist_ticks();
	uint32_t id;
	size_t len, pad;

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|O:mark_event", kwlist,
	    &name, &md))
		return NULL;
	if (md != Py_None && !PyDict_Check(md))
		return PyErr_Format(PyExc_TypeError, "mark_event: metadata "
		    "must be a dict or None, not %.100s", Py_TYPE(md)->tp_name);
	if (!active)
		Py_RETURN_NONE;
	if (md != Py_None && to_cbor(&b, md, 0))
		return NULL;
	if ((p = pstate()) == NULL || !RECORDING(p, NULL, AT_IN) ||
	    (id = name_id(name)) == 0)
		Py_RETURN_NONE;
	len = (16 + b.n + 7) & ~(size_t)7;
	pad = len - 16 - b.n;
	if ((h = ist_coll_reserve(p->ring, len)) == NULL)
		Py_RETURN_NONE;
	h->kind = IST_REC_MARK;
	h->flags = (uint8_t)pad;
	h->len = (uint16_t)len;
	h->id = id;
	memcpy(h + 1, &t, 8);
	memcpy((uint8_t *)h + 16, meta, b.n);
	ist_coll_commit(p->ring, len);
	Py_RETURN_NONE;
}

/* ---- Scope ---- */

typedef struct {
	PyObject_HEAD
	PyObject *name;
	uint32_t id;
} ScopeObject;

static int
scope_init(ScopeObject *s, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "name", NULL };
	PyObject *name;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "U:scope", kwlist, &name))
		return -1;
	Py_INCREF(name);
	Py_XSETREF(s->name, name);
	s->id = 0;
	return 0;
}

static void
scope_dealloc(ScopeObject *s)
{
	Py_XDECREF(s->name);
	Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *
scope_enter(ScopeObject *s, PyObject *unused)
{
	struct pstate *p;

	(void)unused;
	if (!active)
		goto out;
	if (s->id == 0 && (s->id = name_id(s->name)) == 0)
		goto out;
	if ((p = pstate()) == NULL)
		goto out;
	if (p->sdepth < MAX_SCOPES) {
		/* entered in a pause: on the stack, written only if a window
		 * opens before it ends */
		bool rec = RECORDING(p, NULL, AT_IN);
		p->scopes[p->sdepth] = (struct frame){ ist_ticks(), s->id, 0,
		    0, !rec };
	}
	p->sdepth++;
out:
	Py_INCREF(s);
	return (PyObject *)s;
}

static PyObject *
scope_exit(ScopeObject *s, PyObject *const *args, Py_ssize_t n)
{
	struct pstate *p = me;
	int64_t t = ist_ticks();

	(void)s;
	(void)args;
	(void)n;
	if (!active || p == NULL || p->sdepth == 0)
		Py_RETURN_FALSE;
	(void)RECORDING(p, NULL, AT_IN);    /* a pause ends what is open */
	p->sdepth--;
	if (p->sdepth < MAX_SCOPES && !p->scopes[p->sdepth].dead)
		write_frame(p, IST_REC_SCOPE, &p->scopes[p->sdepth], t, 0);
	Py_RETURN_FALSE;
}

/* @scope("name") on a function: inferscope._decorate does the wrapping. */
static PyObject *
scope_call(ScopeObject *s, PyObject *args, PyObject *kw)
{
	PyObject *mod, *dec, *fn, *r;

	if (kw && PyDict_Size(kw)) {
		PyErr_SetString(PyExc_TypeError, "scope: a decorator takes "
		    "one function");
		return NULL;
	}
	if (!PyArg_ParseTuple(args, "O:scope", &fn))
		return NULL;
	if ((mod = PyImport_ImportModule("inferscope")) == NULL)
		return NULL;
	dec = PyObject_GetAttrString(mod, "_decorate");
	Py_DECREF(mod);
	if (dec == NULL)
		return NULL;
	r = PyObject_CallFunctionObjArgs(dec, (PyObject *)s, fn, NULL);
	Py_DECREF(dec);
	return r;
}

static PyObject *
scope_get_name(ScopeObject *s, void *c)
{
	(void)c;
	Py_INCREF(s->name);
	return s->name;
}

static PyObject *
scope_repr(ScopeObject *s)
{
	return PyUnicode_FromFormat("scope(%R)", s->name);
}

static PyMethodDef scope_methods[] = {
	{ "__enter__", (PyCFunction)scope_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)(void (*)(void))scope_exit, METH_FASTCALL,
	  NULL },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef scope_getset[] = {
	{ "name", (getter)scope_get_name, NULL, "the scope's name", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyTypeObject ScopeType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "_inferscope.Scope",
	.tp_basicsize = sizeof(ScopeObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "A timed region: with Scope(name): ...",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)scope_init,
	.tp_dealloc = (destructor)scope_dealloc,
	.tp_methods = scope_methods,
	.tp_getset = scope_getset,
	.tp_repr = (reprfunc)scope_repr,
	.tp_call = (ternaryfunc)scope_call,
};

/*
 * scope(name): the Scope for name, made once and kept (up to 4096 names),
 * so that `with scope("step"):` costs a call and a dict lookup.
 */
static PyObject *scope_cache;

static PyObject *
py_scope(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
	ScopeObject *s;
	PyObject *name;

	(void)self;
	if (n != 1 || !PyUnicode_Check(args[0])) {
		PyErr_SetString(PyExc_TypeError, "scope(name): name must be "
		    "one str");
		return NULL;
	}
	name = args[0];
	if (scope_cache == NULL && (scope_cache = PyDict_New()) == NULL)
		return NULL;
	if ((s = (ScopeObject *)PyDict_GetItemWithError(scope_cache, name)) !=
	    NULL) {
		Py_INCREF(s);
		return (PyObject *)s;
	}
	if (PyErr_Occurred())
		return NULL;
	if ((s = PyObject_New(ScopeObject, &ScopeType)) == NULL)
		return NULL;
	Py_INCREF(name);
	s->name = name;
	s->id = 0;
	if (PyDict_Size(scope_cache) < 4096 &&
	    PyDict_SetItem(scope_cache, name, (PyObject *)s) != 0)
		PyErr_Clear();
	return (PyObject *)s;
}

static PyMethodDef methods[] = {
	{ "_start", py_start, METH_VARARGS,
	  "_start(dir, trace_size_mb, py_min_us, calls, producer)" },
	{ "_stop", py_stop, METH_NOARGS, "stop recording and close" },
	{ "_flush", py_flush, METH_NOARGS, "write all recorded so far" },
	{ "_name_thread", py_name_thread, METH_O, "the thread's new name" },
	{ "_gc", (PyCFunction)(void (*)(void))py_gc, METH_FASTCALL,
	  "gc.callbacks: a collection's start and stop" },
	{ "_after_fork", py_after_fork, METH_NOARGS, "at-fork child hook" },
	{ "_fork_before", py_fork_before, METH_NOARGS, "at-fork before hook" },
	{ "_fork_parent", py_fork_parent, METH_NOARGS, "at-fork parent hook" },
	{ "_thread_hook", thread_hook, METH_VARARGS, "threading.setprofile" },
	{ "_raw_thread", py_raw_thread, METH_NOARGS,
	  "record this thread, started by _thread.start_new_thread" },
	{ "enabled", py_enabled, METH_NOARGS, "whether recording is on" },
	{ "_capture", py_capture, METH_O,
	  "_capture(on): switch recording on or off in every process" },
	{ "_dump", py_dump, METH_NOARGS,
	  "_dump(): the flight recorders write their windows" },
	{ "scope", (PyCFunction)(void (*)(void))py_scope, METH_FASTCALL,
	  "scope(name): a timed region, as a context manager or decorator" },
	{ "_hook", py_hook, METH_NOARGS, "which hook records calls" },
	{ "mark_event", (PyCFunction)(void (*)(void))py_mark_event,
	  METH_VARARGS | METH_KEYWORDS,
	  "mark_event(name, metadata=None): an instant with metadata" },
	{ NULL, NULL, 0, NULL }
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_inferscope",
	"InferScope's Python collector (C).", -1, methods,
	NULL, NULL, NULL, NULL
};

/* exported whatever -fvisibility: 3.8's PyMODINIT_FUNC does not say so */
__attribute__((visibility("default"))) PyMODINIT_FUNC
PyInit__inferscope(void)
{
	PyObject *m;

	if (PyType_Ready(&ScopeType) < 0)
		return NULL;
	if ((m = PyModule_Create(&module)) == NULL)
		return NULL;
	Py_INCREF(&ScopeType);
	if (PyModule_AddObject(m, "Scope", (PyObject *)&ScopeType) < 0) {
		Py_DECREF(&ScopeType);
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
