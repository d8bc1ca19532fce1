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
 *   analysis_json(path) the analysis of the trace, as JSON text
 *   render(json, fmt)   an analysis as "markdown" or "html"
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
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

typedef struct {
	PyObject_HEAD
	struct ist_reader *r;
	struct scache *sc;
	int fd;
	PyObject *truncated;     /* the truncation warning, or None */
	struct ist_buf buf;
} Reader;

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
	ist_buf_release(&self->buf);
	if (self->sc) {
		for (size_t i = 0; i < SCACHE; i++)
			Py_XDECREF(self->sc[i].v);
		PyMem_Free(self->sc);
	}
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

static int
Reader_init(Reader *self, PyObject *args, PyObject *kw)
{
	const char *path;
	struct ist_error e = { 0 };

	if (!PyArg_ParseTuple(args, "s", &path))
		return -1;
	reader_close(self);
	Py_XDECREF(self->truncated);
	self->truncated = Py_None;
	Py_INCREF(Py_None);
	if ((self->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		PyErr_Format(PyExc_OSError, "cannot open '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	if (ist_reader_new(&self->r, ist_fd_source, &self->fd, path, &e) !=
	    IST_OK) {
		reader_close(self);
		PyErr_SetString(PyExc_ValueError, e.msg);
		return -1;
	}
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
str_value(Reader *self, struct ist_str s)
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
field_value(Reader *self, const struct ist_event *cev,
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

static PyObject *
event_dict(Reader *self, const struct ist_event *ev)
{
	const struct ist_typespec *ts = &ist_types[ev->type];
	PyObject *d = PyDict_New(), *v;

	if (d == NULL)
		return NULL;
	if (PyDict_SetItem(d, key_type, type_name[ev->type]) != 0)
		goto fail0;
	for (int i = 0; i < ts->nfields; i++) {
		const struct ist_fieldspec *fs = &ts->fields[i];
		if (!IST_HAS(ev, fs->id))
			continue;
		if ((v = field_value(self, ev, fs)) == NULL)
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
		return event_dict(self, ev);
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

/* analysis_json(path): the trace analysed, as JSON text */
static PyObject *
analysis_json(PyObject *mod, PyObject *args)
{
	const char *path;
	struct ist_reader *r = NULL;
	struct ist_rules *rules;
	struct ist_error e = { 0 };
	enum ist_status st = IST_OK;
	json_t *an = NULL;
	char *text;
	PyObject *out;
	int fd;

	(void)mod;
	if (!PyArg_ParseTuple(args, "s", &path))
		return NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return PyErr_Format(PyExc_OSError, "cannot open '%s': %s",
		    path, strerror(errno));
	if ((rules = ist_rules_new()) == NULL) {
		close(fd);
		return PyErr_NoMemory();
	}
	Py_BEGIN_ALLOW_THREADS
	if ((st = ist_reader_new(&r, ist_fd_source, &fd, path, &e)) == IST_OK)
		st = ist_analyze_trace(r, NULL, false, rules, NULL, &an, &e);
	Py_END_ALLOW_THREADS
	ist_reader_free(r);
	ist_rules_free(rules);
	close(fd);
	if (an == NULL || (st != IST_OK && st != IST_TRUNCATED)) {
		json_decref(an);
		PyErr_SetString(PyExc_ValueError, e.msg);
		return NULL;
	}
	text = ist_analysis_dumps(an);
	json_decref(an);
	if (text == NULL)
		return PyErr_NoMemory();
	out = Py_BuildValue("(si)", text, st == IST_TRUNCATED);
	free(text);
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

static PyMethodDef methods[] = {
	{ "analysis_json", analysis_json, METH_VARARGS,
	  "analysis_json(path): (the analysis as JSON text, truncated)" },
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

	if (PyType_Ready(&ReaderType) < 0 || keys_init() != 0)
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
