/*
 * cbor.c - the CBOR tokenizer over libcbor's streaming decoder, and the
 * checks every value a record holds must pass.  The reader decodes with
 * it; the writer checks the values it is handed (so the agents, which
 * link the writer, need none of the reader).
 */
#include <stdlib.h>

#include <cbor.h>

#include "internal.h"

/* the callbacks' context is the token they fill */
#define TZ(ctx) ((struct tok *)(ctx))
static void cb_u8(void *c, uint8_t v) { TZ(c)->t = TK_UINT; TZ(c)->v = v; }
static void cb_u16(void *c, uint16_t v) { TZ(c)->t = TK_UINT; TZ(c)->v = v; }
static void cb_u32(void *c, uint32_t v) { TZ(c)->t = TK_UINT; TZ(c)->v = v; }
static void cb_u64(void *c, uint64_t v) { TZ(c)->t = TK_UINT; TZ(c)->v = v; }
static void cb_n8(void *c, uint8_t v) { TZ(c)->t = TK_NEG; TZ(c)->v = v; }
static void cb_n16(void *c, uint16_t v) { TZ(c)->t = TK_NEG; TZ(c)->v = v; }
static void cb_n32(void *c, uint32_t v) { TZ(c)->t = TK_NEG; TZ(c)->v = v; }
static void cb_n64(void *c, uint64_t v) { TZ(c)->t = TK_NEG; TZ(c)->v = v; }
static void cb_indef(void *c) { TZ(c)->t = TK_INDEF; }
static void
cb_bytes(void *c, cbor_data p, size_t n)
{
	TZ(c)->t = TK_BYTES; TZ(c)->p = p; TZ(c)->v = n;
}
static void
cb_text(void *c, cbor_data p, size_t n)
{
	TZ(c)->t = TK_TEXT; TZ(c)->p = p; TZ(c)->v = n;
}
static void cb_array(void *c, size_t n) { TZ(c)->t = TK_ARRAY; TZ(c)->v = n; }
static void cb_map(void *c, size_t n) { TZ(c)->t = TK_MAP; TZ(c)->v = n; }
static void cb_tag(void *c, uint64_t v) { TZ(c)->t = TK_TAG; TZ(c)->v = v; }
static void cb_f4(void *c, float d) { TZ(c)->t = TK_FLOAT; TZ(c)->d = d; }
static void cb_f8(void *c, double d) { TZ(c)->t = TK_FLOAT; TZ(c)->d = d; }
static void cb_null(void *c) { TZ(c)->t = TK_NULL; }
static void cb_undef(void *c) { TZ(c)->t = TK_UNDEF; }
static void cb_bool(void *c, bool b) { TZ(c)->t = TK_BOOL; TZ(c)->b = b; }

static const struct cbor_callbacks callbacks = {
	.uint8 = cb_u8, .uint16 = cb_u16, .uint32 = cb_u32, .uint64 = cb_u64,
	.negint8 = cb_n8, .negint16 = cb_n16, .negint32 = cb_n32,
	.negint64 = cb_n64,
	.byte_string_start = cb_indef, .byte_string = cb_bytes,
	.string = cb_text, .string_start = cb_indef,
	.indef_array_start = cb_indef, .array_start = cb_array,
	.indef_map_start = cb_indef, .map_start = cb_map,
	.tag = cb_tag, .float2 = cb_f4, .float4 = cb_f4, .float8 = cb_f8,
	.undefined = cb_undef, .null = cb_null, .boolean = cb_bool,
	.indef_break = cb_indef,
};

const char ist_past_end[] =
    "a declared length runs past the end of the frame";

/*
 * Splits the one CBOR item at p into tokens (tz->toks, when store) and
 * returns its length in *used.  Errors: IST_ECORRUPT with a reason in why.
 * Inlined twice, so that each copy knows whether it stores.
 */
static inline __attribute__((always_inline)) enum ist_status
tokenize(struct tokenizer *tz, const bool store, size_t base,
    const uint8_t *p, size_t n, size_t *used, const char **why)
{
	/* the open levels outside the innermost, which lives in left/idx */
	struct { uint64_t left; uint32_t idx; } stack[IST_MAX_DEPTH];
	uint64_t left = 1;      /* items still to come at this level */
	uint32_t idx = 0;       /* the token that opened it */
	int depth = 0;
	size_t pos = 0, ntok = 0;
	struct tok *toks = tz->toks + base;
	/* the stored tokens' room: a token past it grows tz->toks */
	size_t room = store ? tz->cap - base : SIZE_MAX;

	if (n > UINT32_MAX)      /* spans are 32-bit (struct tok) */
		n = UINT32_MAX;

	/* what lives across the decoder's call is kept few, for registers:
	 * the byte and token counts, the level, and the token being filled
	 * (libcbor answers an item past n, pos == n included, with NEDATA) */
	for (;;) {
		struct cbor_decoder_result r;
		struct tok *t;

		if (!store) {
			t = &tz->cur;
		} else {
			if (ntok == room) {
				size_t cap = tz->cap ? tz->cap * 2 : 64;
				struct tok *nt = realloc(tz->toks, cap *
				    sizeof(*nt));
				if (nt == NULL) {
					*why = "out of memory";
					tz->ntok = ntok;
					return IST_ENOMEM;
				}
				tz->toks = nt;
				toks = nt + base;
				tz->cap = cap;
				room = cap - base;
			}
			t = &toks[ntok];
		}
		r = cbor_stream_decode(p + pos, n - pos, &callbacks, t);
		if (r.status != CBOR_DECODER_FINISHED) {
			*why = r.status == CBOR_DECODER_NEDATA ? ist_past_end :
			    "malformed CBOR";
			goto fail;
		}
		t->off = (uint32_t)pos;
		pos += r.read;
		ntok++;
		if (__builtin_expect(t->t >= TK_ARRAY, 0)) {
			if (t->t == TK_INDEF) {
				*why = "indefinite-length item";
				goto fail;
			}
			/* arrays and maps with items, and tags, open a level */
			if (t->t == TK_TAG || ((t->t == TK_ARRAY ||
			    t->t == TK_MAP) && t->v != 0)) {
				if (depth == IST_MAX_DEPTH) {
					*why = "nesting too deep";
					tz->ntok = ntok;
					return IST_ELIMIT;
				}
				if (t->t == TK_MAP && t->v > UINT64_MAX / 2) {
					*why = "absurd map length";
					goto fail;
				}
				stack[depth].left = left;
				stack[depth].idx = idx;
				depth++;
				left = t->t == TK_MAP ? t->v * 2 :
				    t->t == TK_TAG ? 1 : t->v;
				idx = (uint32_t)(ntok - 1);
				continue;
			}
		}
		t->next = (uint32_t)ntok;
		t->end = (uint32_t)pos;
		/* the levels this item completes close */
		while (--left == 0) {
			if (depth == 0)
				goto done;
			if (store) {
				toks[idx].next = (uint32_t)ntok;
				toks[idx].end = (uint32_t)pos;
			}
			depth--;
			left = stack[depth].left;
			idx = stack[depth].idx;
		}
	}
done:
	tz->ntok = ntok;
	*used = pos;
	return IST_OK;
fail:
	tz->ntok = ntok;
	return IST_ECORRUPT;
}

enum ist_status
ist_tokenize(struct tokenizer *tz, bool store, const uint8_t *p, size_t n,
    size_t *used, const char **why)
{
	return store ? tokenize(tz, true, 0, p, n, used, why) :
	    tokenize(tz, false, 0, p, n, used, why);
}

enum ist_status
ist_tokenize_at(struct tokenizer *tz, size_t base, const uint8_t *p,
    size_t n, size_t *used, const char **why)
{
	return tokenize(tz, true, base, p, n, used, why);
}

enum ist_status
ist_cbor_check(const uint8_t *p, size_t n, size_t *used,
    struct ist_error *err)
{
	struct tokenizer tz = { 0 };
	const char *why = NULL;
	enum ist_status st;

	if (p == NULL || n == 0) {
		ist_seterr(err, IST_EINVAL, "empty CBOR item");
		return IST_EINVAL;
	}
	st = ist_tokenize(&tz, true, p, n, used, &why);
	if (st == IST_OK && (why = ist_tok_json_shaped(tz.toks, 0)) != NULL) {
		ist_seterr(err, IST_EINVAL, "it holds %s, which JSON cannot",
		    why);
		st = IST_EINVAL;
	} else if (st != IST_OK) {
		ist_seterr(err, st, "%s", why);
	}
	free(tz.toks);
	return st;
}

/*
 * A value a record holds (metadata, the analysis, the header's lists) is
 * one that JSON can say, so that every reader and is-cat's JSON Lines
 * agree on it: maps with text keys at every depth, and no byte strings.
 * NULL when the subtree at tk[i] is, else what it holds that JSON cannot.
 */
const char *
ist_tok_json_shaped(const struct tok *tk, uint32_t i)
{
	for (uint32_t j = i, end = tk[i].next; j < end; j++) {
		if (tk[j].t == TK_BYTES)
			return "a byte string";
		if (tk[j].t == TK_MAP) {
			uint32_t k = j + 1;
			for (uint64_t m = 0; m < tk[j].v; m++) {
				if (tk[k].t != TK_TEXT)
					return "a map key that is not text";
				k = tk[tk[k].next].next;
			}
		}
	}
	return NULL;
}

