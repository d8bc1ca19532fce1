/* jsonl.c - the JSON Lines face of the trace format (formats/jsonl.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>
#include <jansson.h>

#include "internal.h"

/* ---- output ---- */

/* A byte copied as it is into a JSON string: printable ASCII but the quote
 * and the backslash, and in a script not < > & either. */
static inline bool
plain_byte(uint8_t c, bool script)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' &&
	    !(script && (c == '<' || c == '>' || c == '&'));
}

static char *
put_u4(char *o, unsigned c)
{
	static const char hex[] = "0123456789abcdef";

	memcpy(o, "\\u", 2);
	o[2] = hex[c >> 12 & 15];
	o[3] = hex[c >> 8 & 15];
	o[4] = hex[c >> 4 & 15];
	o[5] = hex[c & 15];
	return o + 6;
}

/*
 * s as a JSON string.  Room is made once (no byte in becomes more than 6
 * out), and a run of plain bytes is copied in one go: names and paths are
 * mostly nothing else.
 */
int
ist_json_str(struct ist_buf *b, const char *s, size_t n, bool script)
{
	const uint8_t *p = (const uint8_t *)s, *e = p + n;
	char *o;

	if (n > (SIZE_MAX - 4) / 6 || ist_buf_reserve(b, n * 6 + 3))
		return ENOMEM;
	o = b->p + b->n;
	*o++ = '"';
	while (p < e) {
		const uint8_t *q = p;
		uint8_t c;
		size_t len = 0;

		while (q < e && plain_byte(*q, script))
			q++;
		if (q > p) {
			memcpy(o, p, (size_t)(q - p));
			o += q - p;
			p = q;
			if (p == e)
				break;
		}
		c = *p;
		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = (char)c;
			p++;
			continue;
		}
		if (c < 0x80 && c >= 0x20) {        /* < > & in a script */
			o = put_u4(o, c);
			p++;
			continue;
		}
		if (c < 0x20) {
			const char *esc = c == '\n' ? "\\n" : c == '\t' ?
			    "\\t" : c == '\r' ? "\\r" : c == '\b' ? "\\b" :
			    c == '\f' ? "\\f" : NULL;
			if (esc) {
				memcpy(o, esc, 2);
				o += 2;
			} else {
				o = put_u4(o, c);
			}
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			len = 2;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4;
		if (len > 1) {
			if ((size_t)(e - p) < len)
				len = 0;
			for (size_t k = 1; k < len; k++)
				if ((p[k] & 0xc0) != 0x80)
					len = 0;
			/* overlong, surrogates and > U+10FFFF */
			if (len == 3 && ((c == 0xe0 && p[1] < 0xa0) ||
			    (c == 0xed && p[1] >= 0xa0)))
				len = 0;
			if (len == 4 && ((c == 0xf0 && p[1] < 0x90) ||
			    (c == 0xf4 && p[1] >= 0x90)))
				len = 0;
		}
		if (len == 0) {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
			continue;
		}
		if (script && len == 3 && c == 0xe2 && p[1] == 0x80 &&
		    (p[2] == 0xa8 || p[2] == 0xa9)) {
			/* U+2028, U+2029: line ends to older JavaScript */
			o = put_u4(o, 0x2000 + (p[2] - 0x80));
			p += 3;
			continue;
		}
		memcpy(o, p, len);
		o += len;
		p += len;
	}
	*o++ = '"';
	*o = '\0';
	b->n = (size_t)(o - b->p);
	return 0;
}

static enum ist_status
tok_to_json(const struct tok *tk, uint32_t i, struct ist_buf *b,
    struct ist_error *err)
{
	const struct tok *t = &tk[i];
	char num[40];
	int e = 0;

	switch (t->t) {
	case TK_UINT:
		e = ist_buf_printf(b, "%" PRIu64, t->v);
		break;
	case TK_NEG:
		if (t->v == UINT64_MAX)
			e = ist_buf_printf(b, "-18446744073709551616");
		else
			e = ist_buf_printf(b, "-%" PRIu64, t->v + 1);
		break;
	case TK_TEXT:
		e = ist_json_str(b, (const char *)t->p, t->v, false);
		break;
	case TK_FLOAT:
		ist_fmt_double(t->d, num, sizeof(num));
		e = ist_buf_printf(b, "%s", num);
		break;
	case TK_BOOL:
		e = ist_buf_printf(b, t->b ? "true" : "false");
		break;
	case TK_NULL:
	case TK_UNDEF:
		e = ist_buf_printf(b, "null");
		break;
	case TK_TAG:
		return tok_to_json(tk, i + 1, b, err);
	case TK_ARRAY: {
		uint32_t j = i + 1;
		e = ist_buf_printf(b, "[");
		for (uint64_t k = 0; k < t->v && !e; k++, j = tk[j].next) {
			enum ist_status st;
			if (k && (e = ist_buf_printf(b, ",")))
				break;
			if ((st = tok_to_json(tk, j, b, err)) != IST_OK)
				return st;
		}
		if (!e)
			e = ist_buf_printf(b, "]");
		break;
	}
	case TK_MAP: {
		uint32_t j = i + 1;
		e = ist_buf_printf(b, "{");
		for (uint64_t k = 0; k < t->v && !e; k++) {
			enum ist_status st;
			if (tk[j].t != TK_TEXT) {
				ist_seterr(err, IST_ECORRUPT, "map key is not "
				    "a string");
				return IST_ECORRUPT;
			}
			if (k && (e = ist_buf_printf(b, ",")))
				break;
			if ((e = ist_json_str(b, (const char *)tk[j].p, tk[j].v,
			    false)) ||
			    (e = ist_buf_printf(b, ":")))
				break;
			j = tk[j].next;
			if ((st = tok_to_json(tk, j, b, err)) != IST_OK)
				return st;
			j = tk[j].next;
		}
		if (!e)
			e = ist_buf_printf(b, "}");
		break;
	}
	default:
		ist_seterr(err, IST_ECORRUPT, "byte strings have no JSON form");
		return IST_ECORRUPT;
	}
	if (e) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	return IST_OK;
}

int
ist_pids(struct ist_blob pids, int64_t **all, size_t *np)
{
	struct tokenizer tz = { 0 };
	const char *why;
	size_t used;
	int r = 0;

	if (pids.n == 0 || ist_tokenize(&tz, true, pids.p, pids.n, &used,
	    &why) != IST_OK || tz.toks[0].t != TK_ARRAY) {
		free(tz.toks);
		return 0;
	}
	for (size_t k = 1; k < tz.ntok; k = tz.toks[k].next) {
		int64_t *na;

		if (tz.toks[k].t != TK_UINT || tz.toks[k].v > INT64_MAX)
			continue;
		if ((na = realloc(*all, (*np + 1) * sizeof(*na))) == NULL) {
			r = -1;
			break;
		}
		*all = na;
		(*all)[(*np)++] = (int64_t)tz.toks[k].v;
	}
	free(tz.toks);
	return r;
}

enum ist_status
ist_cbor_to_json(struct ist_blob blob, struct ist_buf *out,
    struct ist_error *err)
{
	struct tokenizer tz = { 0 };
	const char *why = "empty item";
	enum ist_status st = IST_ECORRUPT;
	size_t used;

	if (blob.n == 0 ||
	    (st = ist_tokenize(&tz, true, blob.p, blob.n, &used, &why)) !=
	    IST_OK) {
		ist_seterr(err, st, "%s", why);
	} else {
		st = tok_to_json(tz.toks, 0, out, err);
	}
	free(tz.toks);
	return st;
}

enum ist_status
ist_event_to_json(const struct ist_event *cev, struct ist_buf *b,
    struct ist_error *err)
{
	struct ist_event *ev = (struct ist_event *)cev; /* read only */
	const struct ist_typespec *ts;
	char num[40];
	int e;

	if ((unsigned)ev->type >= IST_NTYPES) {
		ist_seterr(err, IST_EINVAL, "unknown event type");
		return IST_EINVAL;
	}
	ts = &ist_types[ev->type];
	e = IST_BUF_LIT(b, "{\"type\":\"") || ist_buf_puts(b, ts->name) ||
	    IST_BUF_LIT(b, "\"");
	for (int i = 0; i < ts->nfields && !e; i++) {
		const struct ist_fieldspec *fs = &ts->fields[i];
		struct ist_str s;
		enum ist_status st;

		if (!IST_HAS(ev, fs->id))
			continue;
		if (fs->ft == FT_INT) {
			/* the key and its value in room made once */
			char *o;
			if ((e = ist_buf_reserve(b, fs->keylen + 22)))
				break;
			o = b->p + b->n;
			memcpy(o, fs->key, fs->keylen);
			o = ist_put_int(o + fs->keylen,
			    *ist_field_int(ev, fs->id));
			*o = '\0';
			b->n = (size_t)(o - b->p);
			continue;
		}
		if ((e = ist_buf_add(b, fs->key, fs->keylen)))
			break;
		if (fs->id == IST_F_VERSION) {
			e = ist_buf_printf(b, "[%" PRId64 ",%" PRId64 "]",
			    ev->version_major, ev->version_minor);
			continue;
		}
		switch (fs->ft) {
		case FT_INT:
			e = ist_buf_int(b, *ist_field_int(ev, fs->id));
			break;
		case FT_STR:
			s = *ist_field_str(ev, fs->id);
			e = ist_buf_json_text(b, s, IST_PLAIN(ev, fs->id));
			break;
		case FT_BOOL:
			e = ist_buf_printf(b, *ist_field_bool(ev, fs->id) ? "true" :
			    "false");
			break;
		case FT_DOUBLE:
			ist_fmt_double(ev->pcie_gbps, num, sizeof(num));
			e = ist_buf_printf(b, "%s", num);
			break;
		case FT_NUMBER:
			if (ev->value_is_int)
				e = ist_buf_int(b, ev->ivalue);
			else {
				ist_fmt_double(ev->value, num, sizeof(num));
				e = ist_buf_printf(b, "%s", num);
			}
			break;
		case FT_IVEC3: {
			const int64_t *v = fs->id == IST_F_GRID ? ev->grid :
			    ev->block;
			e = ist_buf_printf(b, "[%" PRId64 ",%" PRId64 ",%"
			    PRId64 "]", v[0], v[1], v[2]);
			break;
		}
		case FT_VALUE:
		case FT_OBJECT:
			st = ist_cbor_to_json(*ist_field_blob(ev, fs->id), b, err);
			if (st != IST_OK)
				return st;
			break;
		}
	}
	if (!e)
		e = IST_BUF_LIT(b, "}\n");
	if (e) {
		ist_seterr(err, IST_ENOMEM, "out of memory");
		return IST_ENOMEM;
	}
	return IST_OK;
}

int
ist_buf_json_string(struct ist_buf *b, const char *s, size_t n)
{
	return ist_json_str(b, s, n, false);
}

bool
ist_json_plain(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!plain_byte((uint8_t)s[i], false))
			return false;
	return true;
}

/* Names and paths repeat in every event: the reader tests each text once,
 * when it is defined, and a plain one is copied here in one go. */
int
ist_buf_json_text(struct ist_buf *b, struct ist_str s, bool plain)
{
	char *o;

	if (!plain)
		return ist_json_str(b, s.p, s.n, false);
	if (s.n > SIZE_MAX - 3 || ist_buf_reserve(b, s.n + 3))
		return ENOMEM;
	o = b->p + b->n;
	*o++ = '"';
	memcpy(o, s.p, s.n);
	o += s.n;
	*o++ = '"';
	*o = '\0';
	b->n = (size_t)(o - b->p);
	return 0;
}

/* ---- input ---- */

struct ist_json_scratch {
	json_t *root;
	struct ist_buf cbor;
};

struct ist_json_scratch *
ist_json_scratch_new(void)
{
	return calloc(1, sizeof(struct ist_json_scratch));
}

void
ist_json_scratch_free(struct ist_json_scratch *s)
{
	if (s == NULL)
		return;
	json_decref(s->root);
	ist_buf_release(&s->cbor);
	free(s);
}

static int
cbor_head(struct ist_buf *b, size_t (*enc)(uint64_t, unsigned char *, size_t),
    uint64_t v)
{
	if (ist_buf_reserve(b, 9))
		return ENOMEM;
	b->n += enc(v, (unsigned char *)b->p + b->n, 9);
	return 0;
}

static size_t
enc_uint(uint64_t v, unsigned char *p, size_t n)
{
	return cbor_encode_uint(v, p, n);
}
static size_t
enc_neg(uint64_t v, unsigned char *p, size_t n)
{
	return cbor_encode_negint(v, p, n);
}
static size_t
enc_text(uint64_t v, unsigned char *p, size_t n)
{
	return cbor_encode_string_start((size_t)v, p, n);
}
static size_t
enc_array(uint64_t v, unsigned char *p, size_t n)
{
	return cbor_encode_array_start((size_t)v, p, n);
}
static size_t
enc_map(uint64_t v, unsigned char *p, size_t n)
{
	return cbor_encode_map_start((size_t)v, p, n);
}

static int
json_to_cbor(json_t *j, struct ist_buf *b, int depth)
{
	const char *key;
	json_t *v;
	size_t i;
	int e = 0;

	if (depth > IST_MAX_DEPTH - 4)
		return ELOOP;
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		e = cbor_head(b, enc_map, json_object_size(j));
		json_object_foreach(j, key, v) {
			size_t n = strlen(key);
			if (e || (e = cbor_head(b, enc_text, n)) ||
			    (e = ist_buf_append(b, key, n)) ||
			    (e = json_to_cbor(v, b, depth + 1)))
				break;
		}
		return e;
	case JSON_ARRAY:
		e = cbor_head(b, enc_array, json_array_size(j));
		json_array_foreach(j, i, v)
			if (e || (e = json_to_cbor(v, b, depth + 1)))
				break;
		return e;
	case JSON_STRING:
		if ((e = cbor_head(b, enc_text, json_string_length(j))))
			return e;
		return ist_buf_append(b, json_string_value(j),
		    json_string_length(j));
	case JSON_INTEGER: {
		json_int_t x = json_integer_value(j);
		return x >= 0 ? cbor_head(b, enc_uint, (uint64_t)x) :
		    cbor_head(b, enc_neg, (uint64_t)(-(x + 1)));
	}
	case JSON_REAL:
		if (ist_buf_reserve(b, 9))
			return ENOMEM;
		b->n += cbor_encode_double(json_real_value(j),
		    (unsigned char *)b->p + b->n, 9);
		return 0;
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		if (ist_buf_reserve(b, 1))
			return ENOMEM;
		b->p[b->n++] = json_is_true(j) ? (char)0xf5 :
		    json_is_false(j) ? (char)0xf4 : (char)0xf6;
		return 0;
	}
	return EINVAL;
}

static const char *
jtype(json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE: case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

/* An upper bound on the values in JSON text, without parsing it: one
 * more than its separators (',' and ':') outside strings. */
static size_t
json_values(const char *p, size_t n)
{
	size_t k = 1;
	bool in_str = false;

	for (size_t i = 0; i < n; i++) {
		if (in_str) {
			if (p[i] == '\\')
				i++;
			else if (p[i] == '"')
				in_str = false;
		} else if (p[i] == '"') {
			in_str = true;
		} else if (p[i] == ',' || p[i] == ':') {
			k++;
		}
	}
	return k;
}

struct pending_blob {
	size_t off, n;
	struct ist_blob *dst;
};

/*
 * One field's JSON value into the event.  Returns NULL when it fitted, or
 * what the field must be; a value that cannot become CBOR sets *st and err.
 * Blob fields are kept as offsets into s->cbor, which may still move.
 */
static const char *
json_field(const struct ist_fieldspec *fs, json_t *v, struct ist_event *ev,
    struct ist_json_scratch *s, struct pending_blob *blob, int *st,
    struct ist_error *err)
{
	if (fs->id == IST_F_VERSION) {
		json_t *a = json_array_get(v, 0), *b = json_array_get(v, 1);

		if (!json_is_array(v) || json_array_size(v) != 2 ||
		    !json_is_integer(a) || !json_is_integer(b))
			return "[major, minor]";
		ev->version_major = json_integer_value(a);
		ev->version_minor = json_integer_value(b);
		return NULL;
	}
	switch (fs->ft) {
	case FT_INT:
		if (!json_is_integer(v))
			return "an integer";
		*ist_field_int(ev, fs->id) = json_integer_value(v);
		return NULL;
	case FT_STR:
		if (!json_is_string(v))
			return "a string";
		*ist_field_str(ev, fs->id) = (struct ist_str){
		    json_string_value(v), json_string_length(v) };
		return NULL;
	case FT_BOOL:
		if (!json_is_boolean(v))
			return "a boolean";
		*ist_field_bool(ev, fs->id) = json_is_true(v);
		return NULL;
	case FT_DOUBLE:
		if (!json_is_number(v))
			return "a number";
		ev->pcie_gbps = json_number_value(v);
		return NULL;
	case FT_NUMBER:
		if (json_is_integer(v)) {
			ev->value_is_int = true;
			ev->ivalue = json_integer_value(v);
			ev->value = (double)ev->ivalue;
		} else if (json_is_real(v)) {
			ev->value = json_real_value(v);
		} else {
			return "a number";
		}
		return NULL;
	case FT_IVEC3: {
		int64_t *dst = fs->id == IST_F_GRID ? ev->grid : ev->block;

		if (!json_is_array(v) || json_array_size(v) != 3)
			return "an array of 3 integers";
		for (size_t k = 0; k < 3; k++) {
			json_t *x = json_array_get(v, k);
			if (!json_is_integer(x))
				return "an array of 3 integers";
			dst[k] = json_integer_value(x);
		}
		return NULL;
	}
	case FT_OBJECT:
	case FT_VALUE: {
		size_t off = s->cbor.n;
		int e;

		if (fs->ft == FT_OBJECT && !json_is_object(v))
			return "an object";
		if ((e = json_to_cbor(v, &s->cbor, 0))) {
			*st = e == ELOOP ? IST_ELIMIT : IST_ENOMEM;
			ist_seterr(err, *st, "field '%s' %s", fs->json,
			    e == ELOOP ? "is nested too deeply" :
			    "is too large");
			return NULL;
		}
		*blob = (struct pending_blob){ off, s->cbor.n - off,
		    ist_field_blob(ev, fs->id) };
		return NULL;
	}
	}
	return NULL;
}

/* What a header must say beyond its fields' types. */
static enum ist_status
check_header(const struct ist_event *ev, struct ist_error *err)
{
	if (ev->format.n != strlen(IST_FORMAT_NAME) ||
	    memcmp(ev->format.p, IST_FORMAT_NAME, ev->format.n)) {
		ist_seterr(err, IST_EINVAL, "header format must be '%s'",
		    IST_FORMAT_NAME);
		return IST_EINVAL;
	}
	if (ev->version_major != IST_VERSION_MAJOR ||
	    ev->version_minor < 0) {
		ist_seterr(err, IST_EVERSION, "header version %lld.%lld is "
		    "not %d.x", (long long)ev->version_major,
		    (long long)ev->version_minor, IST_VERSION_MAJOR);
		return IST_EVERSION;
	}
	return IST_OK;
}

/* The root object of a line, or an error; s->root owns it. */
static enum ist_status
parse_root(const char *line, size_t n, struct ist_json_scratch *s,
    struct ist_error *err)
{
	json_error_t jerr;

	json_decref(s->root);
	s->root = NULL;
	s->cbor.n = 0;
	if (json_values(line, n) > IST_MAX_JSON_VALUES) {
		ist_seterr(err, IST_ELIMIT, "the line holds over %u JSON "
		    "values, more than a record may", IST_MAX_JSON_VALUES);
		return IST_ELIMIT;
	}
	s->root = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
	if (s->root == NULL) {
		ist_seterr(err, IST_EINVAL, "invalid JSON at column %d: %s",
		    jerr.column, jerr.text);
		return IST_EINVAL;
	}
	if (!json_is_object(s->root)) {
		ist_seterr(err, IST_EINVAL, "a record must be a JSON object, "
		    "not %s", jtype(s->root));
		return IST_EINVAL;
	}
	return IST_OK;
}

enum ist_status
ist_event_from_json(const char *line, size_t n, struct ist_event *ev,
    struct ist_json_scratch *s, struct ist_error *err)
{
	const struct ist_typespec *ts;
	struct pending_blob blobs[8];
	int nblobs = 0, type, st;
	json_t *t, *v;
	const char *key;

	if ((st = parse_root(line, n, s, err)) != IST_OK)
		return st;
	t = json_object_get(s->root, "type");
	if (t == NULL || !json_is_string(t)) {
		ist_seterr(err, IST_EINVAL, "record lacks a string 'type'");
		return IST_EINVAL;
	}
	type = ist_type_from_name(json_string_value(t), json_string_length(t));
	if (type < 0) {
		ist_seterr(err, IST_EINVAL, "unknown type '%s'",
		    json_string_value(t));
		return IST_EINVAL;
	}
	ts = &ist_types[type];
	ist_event_init(ev, (enum ist_type)type);
	json_object_foreach(s->root, key, v) {
		const struct ist_fieldspec *fs = NULL;
		const char *want;

		if (strcmp(key, "type") == 0)
			continue;
		for (int i = 0; i < ts->nfields; i++)
			if (strcmp(ts->fields[i].json, key) == 0)
				fs = &ts->fields[i];
		if (fs == NULL) {
			ist_seterr(err, IST_EINVAL, "unknown field '%s' for "
			    "type '%s'", key, ts->name);
			return IST_EINVAL;
		}
		if (json_is_null(v) && !fs->required)
			continue;
		blobs[nblobs].dst = NULL;
		st = IST_OK;
		want = json_field(fs, v, ev, s, &blobs[nblobs], &st, err);
		if (st != IST_OK)
			return st;
		if (want) {
			ist_seterr(err, IST_EINVAL, "field '%s' must be %s, "
			    "not %s", key, want, jtype(v));
			return IST_EINVAL;
		}
		if (blobs[nblobs].dst != NULL)
			nblobs++;
		IST_SET(ev, fs->id);
	}
	for (int i = 0; i < nblobs; i++)
		*blobs[i].dst = (struct ist_blob){
		    (const uint8_t *)s->cbor.p + blobs[i].off, blobs[i].n };
	for (int i = 0; i < ts->nfields; i++)
		if (ts->fields[i].required && !IST_HAS(ev, ts->fields[i].id)) {
			ist_seterr(err, IST_EINVAL, "missing required field "
			    "'%s' for type '%s'", ts->fields[i].json, ts->name);
			return IST_EINVAL;
		}
	return type == IST_HEADER ? check_header(ev, err) : IST_OK;
}

enum ist_status
ist_json_text_to_cbor(const char *json, size_t n, struct ist_buf *out,
    struct ist_error *err)
{
	json_error_t jerr;
	json_t *j = json_loadb(json, n, JSON_REJECT_DUPLICATES, &jerr);
	int e;

	if (j == NULL) {
		ist_seterr(err, IST_EINVAL, "invalid JSON at column %d: %s",
		    jerr.column, jerr.text);
		return IST_EINVAL;
	}
	e = json_to_cbor(j, out, 0);
	json_decref(j);
	if (e) {
		ist_seterr(err, IST_EINVAL, "JSON value cannot be encoded");
		return IST_EINVAL;
	}
	return IST_OK;
}
