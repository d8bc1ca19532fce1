/*
 * strtab.c - the interner every stage shares: strings numbered 1, 2, ...
 * in the order first seen, found again by hash (open addressing), their
 * bytes kept NUL-terminated in blocks that never move.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define BLOCK (256u << 10)

static int
grow_slots(struct ist_strtab *t)
{
	uint32_t ncap = t->mask ? (t->mask + 1) * 2 : 1024;
	uint32_t *ns = calloc(ncap, sizeof(*ns));

	if (ns == NULL)
		return -1;
	for (uint32_t i = 0; i < t->n; i++) {
		uint32_t j = (uint32_t)t->e[i].hash & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = i + 1;
	}
	free(t->slot);
	t->slot = ns;
	t->mask = ncap - 1;
	return 0;
}

/* n + 1 bytes that never move; NULL when out of memory */
static char *
room(struct ist_strtab *t, size_t n)
{
	char *p;

	if (t->bleft < n + 1) {
		size_t bs = n + 1 > BLOCK ? n + 1 : BLOCK;
		char **nb;
		if (t->nblocks == t->bcap) {
			size_t cap = t->bcap ? t->bcap * 2 : 8;
			if ((nb = realloc(t->blocks, cap * sizeof(*nb))) ==
			    NULL)
				return NULL;
			t->blocks = nb;
			t->bcap = cap;
		}
		if ((t->blocks[t->nblocks] = malloc(bs)) == NULL)
			return NULL;
		t->bp = t->blocks[t->nblocks++];
		t->bleft = bs;
	}
	p = t->bp;
	t->bp += n + 1;
	t->bleft -= n + 1;
	return p;
}

/* The id of (p, n) with hash h, 0 when absent: the found path of every
 * intern, kept in line. */
static inline uint32_t
lookup(const struct ist_strtab *t, const char *p, size_t n, uint64_t h)
{
	if (t->slot == NULL)
		return 0;
	for (uint32_t j = (uint32_t)h & t->mask; t->slot[j];
	    j = (j + 1) & t->mask) {
		const struct ist_strent *e = &t->e[t->slot[j] - 1];
		if (e->hash == h && e->n == n && (n == 0 ||
		    memcmp(e->p, p, n) == 0))
			return t->slot[j];
	}
	return 0;
}

uint32_t
ist_strtab_find(const struct ist_strtab *t, const char *p, size_t n,
    uint64_t h)
{
	return lookup(t, p, n, h);
}

uint32_t
ist_strtab_intern(struct ist_strtab *t, const char *p, size_t n,
    bool *added)
{
	uint64_t h = ist_hash_bytes(p, n);
	uint32_t id, j;
	char *c;

	if (added)
		*added = false;
	if ((id = lookup(t, p, n, h)) != 0)
		return id;
	if (n > UINT32_MAX || t->n == UINT32_MAX - 1 ||
	    ((t->n + 1) * 2 > t->mask + 1 && grow_slots(t)))
		return 0;
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 1024;
		struct ist_strent *ne = realloc(t->e, cap * sizeof(*ne));
		if (ne == NULL)
			return 0;
		t->e = ne;
		t->cap = cap;
	}
	if ((c = room(t, n)) == NULL)
		return 0;
	if (n)
		memcpy(c, p, n);
	c[n] = '\0';
	t->e[t->n] = (struct ist_strent){ c, (uint32_t)n, h };
	for (j = (uint32_t)h & t->mask; t->slot[j]; j = (j + 1) & t->mask)
		;
	t->slot[j] = ++t->n;
	if (added)
		*added = true;
	return t->n;
}

void
ist_strtab_clear(struct ist_strtab *t)
{
	if (t->slot)
		memset(t->slot, 0, ((size_t)t->mask + 1) * sizeof(*t->slot));
	t->n = 0;
	/* the first block is used again; the others go */
	for (size_t i = 1; i < t->nblocks; i++)
		free(t->blocks[i]);
	if (t->nblocks) {
		t->nblocks = 1;
		t->bp = t->blocks[0];
		t->bleft = BLOCK;
	}
}

void
ist_strtab_release(struct ist_strtab *t)
{
	for (size_t i = 0; i < t->nblocks; i++)
		free(t->blocks[i]);
	free(t->blocks);
	free(t->e);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

int
ist_idmap_put(uint32_t **map, size_t *n, uint32_t id, uint32_t val)
{
	if (id >= *n) {
		size_t cap = *n ? *n : 256;
		uint32_t *nm;
		while (cap <= id)
			cap *= 2;
		if ((nm = realloc(*map, cap * sizeof(*nm))) == NULL)
			return -1;
		memset(nm + *n, 0, (cap - *n) * sizeof(*nm));
		*map = nm;
		*n = cap;
	}
	(*map)[id] = val;
	return 0;
}
