/*
 * _inferscope_io.c - traces read from Python through libinferscope's own
 * reader and analyzer (not a Python re-implementation of the format):
 * inferscope.read(), inferscope.analysis() and the reports an analysis
 * renders as.  A module apart from _inferscope, the collector, which every
 * recorded process loads and which stays without these.
 *
 *   _Reader(path)       an iterator of records, each a dict with is-cat's
 *                       JSON Lines names and values (formats/jsonl.md);
 *                       truncation: .truncated holds the warning
 *   columns(path, type) one record type as columns (inferscope.dataframe)
 *   report(path, fmt)   is-report's report of a trace, and its analysis
 *   render(json, fmt)   an analysis as "markdown" or "html"
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "analysis_io.h"
#include "internal.h"
#include "ist.h"
#include "report.h"
#include "rules.h"

static PyObject *py_loads;       /* json.loads, for CBOR-valued fields */
/* the dicts' keys and type names, made once: interned strings */
static PyObject *key_type, *type_name[IST_NTYPES];
static PyObject **field_key[IST_NTYPES];

#define SCACHE 4096

/* strings decoded lately, by where the reader keeps them: a trace names
 * the same functions and threads over and over */
struct scache {
	const char *p;
	size_t n;
	PyObject *v;
};

/* what turning fields into Python values keeps between records */
struct conv {
	struct scache *sc;
	struct ist_buf buf;
	/* read()'s strings by the segment's string id: no text compared */
	PyObject **sidv;
	size_t nsidv;
};

typedef struct {
	PyObject_HEAD
	struct ist_reader *r;
	struct conv c;
	int fd;
	PyObject *truncated;     /* the truncation warning, or None */
} Reader;

/* a new segment numbers its strings afresh */
static void
conv_new_segment(struct conv *c)
{
	for (size_t i = 0; i < c->nsidv; i++)
		Py_CLEAR(c->sidv[i]);
}

static void
conv_release(struct conv *c)
{
	conv_new_segment(c);
	PyMem_Free(c->sidv);
	c->sidv = NULL;
	c->nsidv = 0;
	ist_buf_release(&c->buf);
	if (c->sc) {
		for (size_t i = 0; i < SCACHE; i++)
			Py_XDECREF(c->sc[i].v);
		PyMem_Free(c->sc);
	}
	c->sc = NULL;
}

static void
reader_close(Reader *self)
{
	if (self->r)
		ist_reader_free(self->r);
	self->r = NULL;
	if (self->fd >= 0)
		close(self->fd);
	self->fd = -1;
}

static void
Reader_dealloc(Reader *self)
{
	reader_close(self);
	conv_release(&self->c);
	Py_XDECREF(self->truncated);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Reader_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	Reader *self = (Reader *)PyType_GenericNew(type, args, kw);

	if (self != NULL)
		self->fd = -1;
	return (PyObject *)self;
}

/* A reader on path, through *fd (which must outlive it): 0, or -1 with
 * the Python error the tools' message makes (*fd left for the caller to
 * close when it was opened) */
static int
open_trace(const char *path, int *fd, struct ist_reader **r)
{
	struct ist_error e = { 0 };

	if ((*fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		PyErr_Format(PyExc_OSError, "cannot open '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	if (ist_reader_new(r, ist_fd_source, fd, path, &e) != IST_OK) {
		PyErr_SetString(PyExc_ValueError, e.msg);
		return -1;
	}
	return 0;
}

static int
Reader_init(Reader *self, PyObject *args, PyObject *kw)
{
	const char *path;

	if (!PyArg_ParseTuple(args, "s", &path))
		return -1;
	reader_close(self);
	Py_XDECREF(self->truncated);
	self->truncated = Py_None;
	Py_INCREF(Py_None);
	if (open_trace(path, &self->fd, &self->r) != 0) {
		reader_close(self);
		return -1;
	}
	/* read ahead on a thread of its own; in a child forked while it is
	 * open, reading on raises (the thread stayed in the parent) */
	ist_reader_ahead_fd(self->r, self->fd);
	return 0;
}

/* A JSON text (the tools' rendering of a value) as Python */
static PyObject *
from_json(struct ist_buf *b)
{
	return PyObject_CallFunction(py_loads, "s#", b->p, (Py_ssize_t)b->n);
}

/* A string as is-cat writes it: invalid UTF-8 bytes are U+FFFD there,
 * which its JSON rendering decides. */
static PyObject *
str_value(struct conv *self, struct ist_str s)
{
	struct scache *c = NULL;
	PyObject *v;

	if (self->sc == NULL && (self->sc = PyMem_Calloc(SCACHE,
	    sizeof(*self->sc))) == NULL)
		return PyErr_NoMemory();
	c = &self->sc[((uintptr_t)s.p >> 3) & (SCACHE - 1)];
	if (c->v && c->p == s.p && c->n == s.n) {
		/* the same place may hold another string later: compared */
		Py_ssize_t n;
		const char *u = PyUnicode_AsUTF8AndSize(c->v, &n);
		if (u && (size_t)n == s.n && memcmp(u, s.p, s.n) == 0) {
			Py_INCREF(c->v);
			return c->v;
		}
		PyErr_Clear();
	}
	v = PyUnicode_DecodeUTF8(s.p, (Py_ssize_t)s.n, NULL);
	if (v != NULL) {
		Py_XDECREF(c->v);
		c->p = s.p;
		c->n = s.n;
		c->v = v;
		Py_INCREF(v);
		return v;
	}
	if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
		return NULL;
	PyErr_Clear();
	self->buf.n = 0;
	if (ist_buf_json_string(&self->buf, s.p, s.n))
		return PyErr_NoMemory();
	return from_json(&self->buf);
}

static PyObject *
field_value(struct conv *self, const struct ist_event *cev,
    const struct ist_fieldspec *fs)
{
	struct ist_event *ev = (struct ist_event *)cev;  /* read only */
	struct ist_error e = { 0 };

	if (fs->id == IST_F_VERSION)
		return Py_BuildValue("[LL]", (long long)ev->version_major,
		    (long long)ev->version_minor);
	switch (fs->ft) {
	case FT_INT:
		return PyLong_FromLongLong(*ist_field_int(ev, fs->id));
	case FT_STR:
		return str_value(self, *ist_field_str(ev, fs->id));
	case FT_BOOL:
		return PyBool_FromLong(*ist_field_bool(ev, fs->id));
	case FT_DOUBLE:
		return PyFloat_FromDouble(ev->pcie_gbps);
	case FT_NUMBER:
		return ev->value_is_int ? PyLong_FromLongLong(ev->ivalue) :
		    PyFloat_FromDouble(ev->value);
	case FT_IVEC3: {
		const int64_t *v = fs->id == IST_F_GRID ? ev->grid : ev->block;
		return Py_BuildValue("[LLL]", (long long)v[0],
		    (long long)v[1], (long long)v[2]);
	}
	case FT_VALUE:
	case FT_OBJECT:
		self->buf.n = 0;
		if (ist_cbor_to_json(*ist_field_blob(ev, fs->id), &self->buf,
		    &e) != IST_OK) {
			PyErr_SetString(PyExc_ValueError, e.msg);
			return NULL;
		}
		return from_json(&self->buf);
	}
	PyErr_SetString(PyExc_ValueError, "a field of an unknown kind");
	return NULL;
}

static int
keys_init(void)
{
	if ((key_type = PyUnicode_InternFromString("type")) == NULL)
		return -1;
	for (int t = 0; t < IST_NTYPES; t++) {
		const struct ist_typespec *ts = &ist_types[t];
		if (ts->name == NULL)
			continue;
		if ((type_name[t] = PyUnicode_InternFromString(ts->name)) ==
		    NULL || (field_key[t] = calloc((size_t)ts->nfields + 1,
		    sizeof(PyObject *))) == NULL)
			return -1;
		for (int i = 0; i < ts->nfields; i++)
			if ((field_key[t][i] = PyUnicode_InternFromString(
			    ts->fields[i].json)) == NULL)
				return -1;
	}
	return 0;
}

/* string field f of r's event ev, by its string id when it has one */
static PyObject *
sid_value(struct conv *self, const struct ist_reader *r,
    const struct ist_event *ev, const struct ist_fieldspec *fs)
{
	uint32_t sid = ist_reader_string_id(r, fs->id);
	PyObject *v;

	if (sid == 0)
		return field_value(self, ev, fs);
	if (sid < self->nsidv && self->sidv[sid]) {
		Py_INCREF(self->sidv[sid]);
		return self->sidv[sid];
	}
	if (sid >= self->nsidv) {
		size_t n = self->nsidv ? self->nsidv : 256;
		PyObject **nv;
		while (n <= sid)
			n *= 2;
		if ((nv = PyMem_Realloc(self->sidv, n * sizeof(*nv))) == NULL)
			return PyErr_NoMemory();
		memset(nv + self->nsidv, 0, (n - self->nsidv) * sizeof(*nv));
		self->sidv = nv;
		self->nsidv = n;
	}
	if ((v = field_value(self, ev, fs)) != NULL) {
		Py_INCREF(v);
		self->sidv[sid] = v;
	}
	return v;
}

/* ev as is-cat's record; r: the reader it came from, for its string ids
 * (NULL: none) */
static PyObject *
event_dict(struct conv *self, const struct ist_reader *r,
    const struct ist_event *ev)
{
	const struct ist_typespec *ts = &ist_types[ev->type];
	PyObject *d = PyDict_New(), *v;

	if (d == NULL)
		return NULL;
	if (ev->type == IST_HEADER)
		conv_new_segment(self);
	else if (ev->type == IST_ANALYSIS)
		r = NULL;
	if (PyDict_SetItem(d, key_type, type_name[ev->type]) != 0)
		goto fail0;
	for (int i = 0; i < ts->nfields; i++) {
		const struct ist_fieldspec *fs = &ts->fields[i];
		if (!IST_HAS(ev, fs->id))
			continue;
		if ((v = r && ev->type != IST_HEADER && fs->ft == FT_STR ?
		    sid_value(self, r, ev, fs) : field_value(self, ev, fs)) ==
		    NULL)
			goto fail0;
		if (PyDict_SetItem(d, field_key[ev->type][i], v) != 0) {
			Py_DECREF(v);
			goto fail0;
		}
		Py_DECREF(v);
	}
	return d;
fail0:
	Py_DECREF(d);
	return NULL;
}

static PyObject *
Reader_next(Reader *self)
{
	const struct ist_event *ev;
	struct ist_error e = { 0 };
	enum ist_status st;

	if (self->r == NULL)
		return NULL;
	st = ist_reader_next(self->r, &ev, &e);
	if (st == IST_OK)
		return event_dict(&self->c, self->r, ev);
	reader_close(self);
	if (st == IST_TRUNCATED) {
		Py_DECREF(self->truncated);
		self->truncated = PyUnicode_FromString(e.msg);
		return NULL;
	}
	if (st != IST_END)
		PyErr_SetString(PyExc_ValueError, e.msg);
	return NULL;
}

static PyMemberDef Reader_members[] = {
	{ "truncated", T_OBJECT, offsetof(Reader, truncated), READONLY,
	  "the truncation warning once the records ran out, else None" },
	{ NULL, 0, 0, 0, NULL }
};

static PyTypeObject ReaderType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "_inferscope_io._Reader",
	.tp_basicsize = sizeof(Reader),
	.tp_dealloc = (destructor)Reader_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "_Reader(path): the records of a trace file, as dicts",
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = (iternextfunc)Reader_next,
	.tp_members = Reader_members,
	.tp_init = (initproc)Reader_init,
	.tp_new = Reader_new,
};

/*
 * report(path, fmt, step=None): is-report's report of a trace
 * ("markdown", "html", with its timeline charts, or "json", which holds
 * the analysis: the trace's own when it carries one, else made here with
 * the default rules, the step named step or found), written to a memory
 * file and read back: (report text, truncation warning or None).
 */
static PyObject *
report(PyObject *mod, PyObject *args)
{
	const char *path, *fmt, *step = NULL;
	struct ist_reader *r = NULL;
	struct ist_rules *rules = NULL;
	struct ist_report_opts o = { 0 };
	struct ist_report_result res = { 0 };
	struct ist_error e = { 0 };
	enum ist_status st = IST_OK;
	PyObject *out = NULL, *text = NULL;
	int fd = -1, mfd = -1;
	off_t len;

	(void)mod;
	if (!PyArg_ParseTuple(args, "ss|z", &path, &fmt, &step))
		return NULL;
	o.format = strcmp(fmt, "html") == 0 ? IST_REPORT_HTML :
	    strcmp(fmt, "json") == 0 ? IST_REPORT_JSON : IST_REPORT_MD;
	if (open_trace(path, &fd, &r) != 0)
		goto done;
	if ((mfd = memfd_create("inferscope-report", MFD_CLOEXEC)) < 0) {
		PyErr_SetFromErrno(PyExc_OSError);
		goto done;
	}
	if ((o.rules = rules = ist_rules_new()) == NULL) {
		PyErr_NoMemory();
		goto done;
	}
	/* the steps read the file a second time, as is-analyze does; an
	 * analysis made here reads the file ahead on a second core (within
	 * this call: no fork can find the thread) */
	o.again = &(struct ist_again){ ist_again_path, (void *)path, step,
	    ist_again_path_follow, NULL, false };
	/* json and md of a trace that promises its analysis skim to it (of
	 * each frame only its first record decompressed), as is-report
	 * does: json.tool's analysed 44.7 M-event trace, whose events were
	 * all decoded, in 0.05 s instead of 4 */
	o.skim = o.format != IST_REPORT_HTML;
	if (!ist_file_promises_analysis(fd))
		ist_reader_ahead_fd(r, fd);
	else if (o.skim)
		ist_reader_skim(r, true);
	Py_BEGIN_ALLOW_THREADS
	st = ist_report_trace(r, &o, mfd, &res, &e);
	Py_END_ALLOW_THREADS
	while (!res.wrote && res.analysis_missing && !o.analyse) {
		/* not at a frame's start: read whole; not there either (the
		 * trace was cut before it): made here, as is-report does */
		ist_reader_free(r);
		r = NULL;
		close(fd);
		if (open_trace(path, &fd, &r) != 0)
			goto done;
		if (res.skimmed)
			o.skim = false;
		else
			o.analyse = true;
		Py_BEGIN_ALLOW_THREADS
		st = ist_report_trace(r, &o, mfd, &res, &e);
		Py_END_ALLOW_THREADS
	}
	if (res.analysis == NULL || (st != IST_OK && st != IST_TRUNCATED)) {
		PyErr_SetString(PyExc_ValueError, e.msg[0] ? e.msg :
		    "no analysis");
		goto done;
	}
	if ((len = lseek(mfd, 0, SEEK_END)) < 0 ||
	    (text = PyBytes_FromStringAndSize(NULL, len)) == NULL)
		goto done_errno;
	if (pread(mfd, PyBytes_AS_STRING(text), (size_t)len, 0) != len)
		goto done_errno;
	out = Py_BuildValue("(Ns)", PyUnicode_FromEncodedObject(text,
	    "utf-8", "replace"), st == IST_TRUNCATED ? e.msg : NULL);
	goto done;
done_errno:
	if (!PyErr_Occurred())
		PyErr_SetFromErrno(PyExc_OSError);
done:
	Py_XDECREF(text);
	json_decref(res.analysis);
	ist_reader_free(r);
	ist_rules_free(rules);
	if (fd >= 0)
		close(fd);
	if (mfd >= 0)
		close(mfd);
	return out;
}

/* render(json_text, "markdown" | "html"): the report of an analysis */
static PyObject *
render(PyObject *mod, PyObject *args)
{
	const char *text, *fmt;
	struct ist_buf b = { 0 };
	struct ist_error e = { 0 };
	enum ist_status st;
	json_error_t je;
	json_t *an;
	PyObject *out;

	(void)mod;
	if (!PyArg_ParseTuple(args, "ss", &text, &fmt))
		return NULL;
	if ((an = json_loads(text, 0, &je)) == NULL)
		return PyErr_Format(PyExc_ValueError, "not an analysis: %s",
		    je.text);
	if (strcmp(fmt, "html") == 0)
		st = ist_report_html(an, NULL, &b, &e);
	else
		st = ist_report_markdown(an, &b, &e);
	json_decref(an);
	if (st != IST_OK) {
		ist_buf_release(&b);
		PyErr_SetString(PyExc_ValueError, e.msg);
		return NULL;
	}
	out = PyUnicode_DecodeUTF8(b.p ? b.p : "", (Py_ssize_t)b.n, "replace");
	ist_buf_release(&b);
	return out;
}

/* ---- one record type as columns, for inferscope.dataframe() ---- */

/* Memory handed to Python as a writable buffer (numpy.frombuffer keeps it
 * alive): a column's values, or its absent-row mask. */
typedef struct {
	PyObject_HEAD
	void *p;                 /* mapped (grow_mem), size bytes */
	Py_ssize_t n;
	size_t size;
} Block;

static int
Block_getbuffer(Block *self, Py_buffer *view, int flags)
{
	return PyBuffer_FillInfo(view, (PyObject *)self, self->p, self->n, 0,
	    flags);
}

static void
Block_dealloc(Block *self)
{
	if (self->p)
		munmap(self->p, self->size);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyBufferProcs Block_as_buffer = {
	(getbufferproc)Block_getbuffer, NULL
};

static PyTypeObject BlockType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "_inferscope_io._Block",
	.tp_basicsize = sizeof(Block),
	.tp_dealloc = (destructor)Block_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "a column's memory, read through the buffer protocol",
	.tp_as_buffer = &Block_as_buffer,
};

/* n bytes at p (grow_mem's, size bytes mapped) as a Block, which unmaps
 * them; unmapped on failure */
static PyObject *
block_of(void *p, size_t n, size_t size)
{
	Block *b = PyObject_New(Block, &BlockType);

	if (b == NULL) {
		if (p)
			munmap(p, size);
		return NULL;
	}
	b->p = p;
	b->n = (Py_ssize_t)n;
	b->size = size;
	return (PyObject *)b;
}

/*
 * A column: 'i' int64, 'f' double (NaN where absent), 'b' bool (a byte),
 * 's' strings as codes (int32, -1 where absent) into the column's own
 * table, numbered as first seen, 'o' Python objects (the JSON-valued
 * fields, grid and block).  A counter's value starts as 'i' and becomes
 * 'f' at its first float, as pandas would have it.
 */
struct col {
	const struct ist_fieldspec *fs;
	char kind;
	void *v;
	uint8_t *mask;           /* 1: absent; NULL while no row is */
	PyObject *objs;          /* 'o' */
	struct ist_strtab st;    /* 's' */
	uint32_t *sid_code;      /* 's': this segment's string id -> code + 1 */
	size_t nsid;
};

static size_t
col_width(char kind)
{
	return kind == 'b' ? 1 : kind == 's' ? 4 : 8;
}

static char
col_kind(const struct ist_fieldspec *fs)
{
	if (fs->id == IST_F_VERSION)
		return 'o';
	switch (fs->ft) {
	case FT_INT:
	case FT_NUMBER:
		return 'i';
	case FT_DOUBLE:
		return 'f';
	case FT_BOOL:
		return 'b';
	case FT_STR:
		return 's';
	default:
		return 'o';
	}
}

/* Column memory is mapped apart and grown with mremap, which moves the
 * pages already written without copying or faulting them again, and the
 * kernel is asked for huge pages there: a column of millions of rows
 * otherwise costs a page fault per 4 KiB, in a VM as much as reading it. */
static void *
grow_mem(void *p, size_t old, size_t size)
{
	void *q = p == NULL ? mmap(NULL, size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) :
	    mremap(p, old, size, MREMAP_MAYMOVE);

	if (q == MAP_FAILED)
		return NULL;
	(void)madvise(q, size, MADV_HUGEPAGE);
	return q;
}

static int
cols_grow(struct col *c, int nc, size_t n, size_t *cap)
{
	size_t ncap = *cap ? *cap * 2 : 65536;

	if (n < *cap)
		return 0;
	for (int i = 0; i < nc; i++) {
		size_t w = col_width(c[i].kind);
		void *v;
		if (c[i].kind == 'o')
			continue;
		if ((v = grow_mem(c[i].v, *cap * w, ncap * w)) == NULL)
			return -1;
		c[i].v = v;
		if (c[i].mask) {
			if ((v = grow_mem(c[i].mask, *cap, ncap)) == NULL)
				return -1;
			c[i].mask = v;
		}
	}
	*cap = ncap;
	return 0;
}

/* row n of c absent: the mask made on the first, every earlier row there.
 * An integer's or a flag's value there stays as the fresh mapping has it,
 * 0, unwritten: a field no row has (a call's cut) costs its mask alone,
 * not a column of pages the kernel zeroes for the reader to write zeros
 * into */
static int
col_absent(struct col *c, size_t n, size_t cap)
{
	/* a call's raised and yielded, absent, are false
	 * (formats/trace-format.md): the byte the fresh mapping holds, no
	 * mask, nothing written */
	if (c->fs->id == IST_F_RAISED || c->fs->id == IST_F_YIELDED)
		return 0;
	if (c->mask == NULL && (c->mask = grow_mem(NULL, 0, cap)) == NULL)
		return -1;
	c->mask[n] = 1;
	switch (c->kind) {
	case 'f':
		((double *)c->v)[n] = NAN;
		break;
	case 's':
		((int32_t *)c->v)[n] = -1;
		break;
	}
	return 0;
}

/* the code of a string: by the segment's string id, else interned */
static int
str_code(struct col *c, struct ist_reader *r, const struct ist_event *ev,
    int32_t *code)
{
	struct ist_str s = *ist_field_str((struct ist_event *)ev, c->fs->id);
	uint32_t sid = ev->type == IST_HEADER ? 0 :
	    ist_reader_string_id(r, c->fs->id), id;

	if (sid && sid < c->nsid && c->sid_code[sid]) {
		*code = (int32_t)c->sid_code[sid] - 1;
		return 0;
	}
	if ((id = ist_strtab_intern(&c->st, s.p, s.n, NULL)) == 0 ||
	    id > INT32_MAX)
		return -1;
	if (sid && ist_idmap_put(&c->sid_code, &c->nsid, sid, id) != 0)
		return -1;
	*code = (int32_t)id - 1;
	return 0;
}

/* Row n of every column from ev: 0, -1 out of memory, -2 a Python error */
static int
cols_row(struct col *c, int nc, struct ist_reader *r,
    const struct ist_event *cev, size_t n, size_t cap, struct conv *cv)
{
	struct ist_event *ev = (struct ist_event *)cev;  /* read only */

	for (int i = 0; i < nc; i++) {
		const struct ist_fieldspec *fs = c[i].fs;
		if (c[i].kind == 'o') {
			PyObject *o;
			int rc;
			if (!IST_HAS(ev, fs->id)) {
				o = Py_None;
				Py_INCREF(o);
			} else if ((o = field_value(cv, ev, fs)) == NULL)
				return -2;
			rc = PyList_Append(c[i].objs, o);
			Py_DECREF(o);
			if (rc != 0)
				return -2;
			continue;
		}
		if (!IST_HAS(ev, fs->id)) {
			if (col_absent(&c[i], n, cap) != 0)
				return -1;
			continue;
		}
		if (c[i].mask)
			c[i].mask[n] = 0;
		switch (c[i].kind) {
		case 'i':
			if (fs->ft == FT_NUMBER && !ev->value_is_int) {
				/* the first float: the column becomes one */
				int64_t *iv = c[i].v;
				double *dv = c[i].v;
				for (size_t j = 0; j < n; j++)
					dv[j] = c[i].mask && c[i].mask[j] ?
					    NAN : (double)iv[j];
				c[i].kind = 'f';
				dv[n] = ev->value;
				break;
			}
			((int64_t *)c[i].v)[n] = fs->ft == FT_NUMBER ?
			    ev->ivalue : *ist_field_int(ev, fs->id);
			break;
		case 'f':
			((double *)c[i].v)[n] = fs->ft == FT_NUMBER ?
			    (ev->value_is_int ? (double)ev->ivalue :
			    ev->value) : ev->pcie_gbps;
			break;
		case 'b':
			((uint8_t *)c[i].v)[n] = *ist_field_bool(ev, fs->id);
			break;
		case 's':
			if (str_code(&c[i], r, ev, &((int32_t *)c[i].v)[n]))
				return -1;
			break;
		}
	}
	return 0;
}

static void
cols_free(struct col *c, int nc, size_t cap)
{
	for (int i = 0; c && i < nc; i++) {
		if (c[i].v)
			munmap(c[i].v, cap * col_width(c[i].kind));
		if (c[i].mask)
			munmap(c[i].mask, cap);
		free(c[i].sid_code);
		Py_XDECREF(c[i].objs);
		ist_strtab_release(&c[i].st);
	}
	free(c);
}

/* column i as (name, kind, values, mask or None, strings or objects or
 * None); frees what it hands over */
static PyObject *
col_tuple(struct col *c, size_t n, size_t cap, struct conv *cv)
{
	PyObject *vals = Py_None, *mask = Py_None, *extra = Py_None, *t;

	Py_INCREF(Py_None);
	Py_INCREF(Py_None);
	Py_INCREF(Py_None);
	if (c->kind == 'o') {
		Py_DECREF(extra);
		extra = c->objs;
		c->objs = NULL;
	} else {
		Py_DECREF(vals);
		vals = block_of(c->v, n * col_width(c->kind),
		    cap * col_width(c->kind));
		c->v = NULL;
		if (vals == NULL)
			goto fail;
		if (c->mask && c->kind != 'f') {
			Py_DECREF(mask);
			mask = block_of(c->mask, n, cap);
			c->mask = NULL;
			if (mask == NULL)
				goto fail;
		}
	}
	if (c->kind == 's') {
		Py_DECREF(extra);
		if ((extra = PyList_New((Py_ssize_t)c->st.n)) == NULL)
			goto fail;
		for (uint32_t i = 0; i < c->st.n; i++) {
			const struct ist_strent *e = ist_strtab_get(&c->st,
			    i + 1);
			PyObject *s = str_value(cv, (struct ist_str){ e->p,
			    e->n });
			if (s == NULL)
				goto fail;
			PyList_SET_ITEM(extra, i, s);
		}
	}
	t = Py_BuildValue("(sCOOO)", c->fs->json, c->kind, vals, mask, extra);
	Py_DECREF(vals);
	Py_DECREF(mask);
	Py_DECREF(extra);
	return t;
fail:
	Py_XDECREF(vals);
	Py_XDECREF(mask);
	Py_XDECREF(extra);
	return NULL;
}

#define CHUNK (1u << 18)   /* records read between looks at signals */

/*
 * columns(path, type): the records of one type as columns, without a
 * Python object per record: ([column tuple, ...], rows, truncation warning
 * or None).  The reader runs without the GIL unless a column holds Python
 * objects.
 */
static PyObject *
columns(PyObject *mod, PyObject *args)
{
	const char *path, *tname;
	struct ist_reader *r = NULL;
	struct ist_error e = { 0 };
	enum ist_status st = IST_OK;
	const struct ist_typespec *ts;
	struct col *c = NULL;
	struct conv cv = { 0 };
	size_t n = 0, cap = 0;
	PyObject *out = NULL, *list = NULL;
	bool objs = false;
	int type, fd = -1, rc = 0;

	(void)mod;
	if (!PyArg_ParseTuple(args, "ss", &path, &tname))
		return NULL;
	if ((type = ist_type_from_name(tname, strlen(tname))) < 0)
		return PyErr_Format(PyExc_ValueError, "inferscope: no record "
		    "type '%s' (formats/jsonl.md lists them)", tname);
	ts = &ist_types[type];
	if ((c = calloc((size_t)ts->nfields + 1, sizeof(*c))) == NULL)
		return PyErr_NoMemory();
	for (int i = 0; i < ts->nfields; i++) {
		c[i].fs = &ts->fields[i];
		c[i].kind = col_kind(c[i].fs);
		if (c[i].kind == 'o') {
			objs = true;
			if ((c[i].objs = PyList_New(0)) == NULL)
				goto done;
		}
	}
	if (open_trace(path, &fd, &r) != 0)
		goto done;
	/* the whole file within this call: no fork can find the thread */
	ist_reader_ahead_fd(r, fd);
	while (st == IST_OK && rc == 0) {
		PyThreadState *ts_save = objs ? NULL : PyEval_SaveThread();
		for (unsigned k = 0; k < CHUNK; k++) {
			const struct ist_event *ev;
			if ((st = ist_reader_next(r, &ev, &e)) != IST_OK)
				break;
			if (ev->type == IST_HEADER) {
				/* a new segment numbers its strings afresh */
				for (int i = 0; i < ts->nfields; i++)
					if (c[i].sid_code)
						memset(c[i].sid_code, 0,
						    c[i].nsid * sizeof(uint32_t));
			}
			if (ev->type != (enum ist_type)type)
				continue;
			if ((rc = cols_grow(c, ts->nfields, n, &cap)) != 0 ||
			    (rc = cols_row(c, ts->nfields, r, ev, n, cap,
			    &cv)) != 0)
				break;
			n++;
		}
		if (ts_save)
			PyEval_RestoreThread(ts_save);
		if (rc == 0 && st == IST_OK && PyErr_CheckSignals() != 0)
			rc = -2;
	}
	if (rc == -1) {
		PyErr_NoMemory();
		goto done;
	}
	if (rc == -2)
		goto done;
	if (st != IST_END && st != IST_TRUNCATED) {
		PyErr_SetString(PyExc_ValueError, e.msg);
		goto done;
	}
	if ((list = PyList_New(ts->nfields)) == NULL)
		goto done;
	for (int i = 0; i < ts->nfields; i++) {
		PyObject *t = col_tuple(&c[i], n, cap, &cv);
		if (t == NULL)
			goto done;
		PyList_SET_ITEM(list, i, t);
	}
	if (st == IST_TRUNCATED)
		out = Py_BuildValue("(Ons)", list, (Py_ssize_t)n, e.msg);
	else
		out = Py_BuildValue("(OnO)", list, (Py_ssize_t)n, Py_None);
done:
	Py_XDECREF(list);
	cols_free(c, ts->nfields, cap);
	conv_release(&cv);
	ist_reader_free(r);
	if (fd >= 0)
		close(fd);
	return out;
}

/*
 * recode(codes, table, width): a string column's codes (int32, -1 where
 * absent) put through table (int32; entry 0 for -1, entry c + 1 for code
 * c) and written over the column's start as width-byte integers, the
 * width pandas keeps a category's codes in: the categories renumbered
 * into sorted order without a second column.  The pages the narrower
 * codes no longer use are given back.
 */
static PyObject *
recode(PyObject *mod, PyObject *args)
{
	Py_buffer b, t;
	int width;
	size_t n, nt, page = (size_t)sysconf(_SC_PAGESIZE);
	int32_t *c;
	const int32_t *tab;

	(void)mod;
	if (!PyArg_ParseTuple(args, "w*y*i", &b, &t, &width))
		return NULL;
	if (width != 1 && width != 2 && width != 4) {
		PyBuffer_Release(&b);
		PyBuffer_Release(&t);
		return PyErr_Format(PyExc_ValueError, "width %d", width);
	}
	c = b.buf;
	n = (size_t)b.len / 4;
	tab = t.buf;
	nt = (size_t)t.len / 4;
	/* in place: row i's code is written at byte i * width, never past
	 * a code still to be read (at 4 * j, j > i) */
	for (size_t i = 0; i < n; i++) {
		uint32_t k = (uint32_t)c[i] + 1;
		int32_t v = k < nt ? tab[k] : -1;
		if (width == 1)
			((int8_t *)c)[i] = (int8_t)v;
		else if (width == 2)
			((int16_t *)c)[i] = (int16_t)v;
		else
			c[i] = v;
	}
	if (width < 4 && ((uintptr_t)c & (page - 1)) == 0) {
		size_t lo = (n * (size_t)width + page - 1) & ~(page - 1);
		size_t hi = (n * 4 + page - 1) & ~(page - 1);
		if (hi > lo)
			(void)madvise((char *)c + lo, hi - lo, MADV_DONTNEED);
	}
	PyBuffer_Release(&b);
	PyBuffer_Release(&t);
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
	{ "report", report, METH_VARARGS,
	  "report(path, fmt): (the report, truncation or None)" },
	{ "columns", columns, METH_VARARGS,
	  "columns(path, type): (column tuples, rows, truncation or None)" },
	{ "recode", recode, METH_VARARGS,
	  "recode(codes, table, width): a string column's codes renumbered" },
	{ "render", render, METH_VARARGS,
	  "render(json_text, fmt): the report, markdown or html" },
	{ NULL, NULL, 0, NULL }
};

static struct PyModuleDef moddef = {
	PyModuleDef_HEAD_INIT, "_inferscope_io",
	"InferScope traces read through libinferscope", -1, methods,
	NULL, NULL, NULL, NULL
};

__attribute__((visibility("default"))) PyMODINIT_FUNC
PyInit__inferscope_io(void)
{
	PyObject *m, *json;

	if (PyType_Ready(&ReaderType) < 0 || PyType_Ready(&BlockType) < 0 ||
	    keys_init() != 0)
		return NULL;
	if ((json = PyImport_ImportModule("json")) == NULL)
		return NULL;
	py_loads = PyObject_GetAttrString(json, "loads");
	Py_DECREF(json);
	if (py_loads == NULL || (m = PyModule_Create(&moddef)) == NULL)
		return NULL;
	Py_INCREF(&ReaderType);
	if (PyModule_AddObject(m, "_Reader", (PyObject *)&ReaderType) < 0) {
		Py_DECREF(&ReaderType);
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
