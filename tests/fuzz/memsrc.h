/* memsrc.h - a memory source and sink for the fuzz targets. */
#ifndef MEMSRC_H
#define MEMSRC_H

#include <stdlib.h>
#include <string.h>
#include "ist.h"

struct memsrc {
	const uint8_t *p;
	size_t n, pos, chunk;
};

static inline long
mem_source(void *ctx, void *buf, size_t n)
{
	struct memsrc *m = ctx;
	size_t k = m->n - m->pos;

	if (k > n)
		k = n;
	if (m->chunk && k > m->chunk)
		k = m->chunk;   /* odd chunk boundaries, like a pipe */
	memcpy(buf, m->p + m->pos, k);
	m->pos += k;
	return (long)k;
}

static inline int
mem_sink(void *ctx, const void *buf, size_t n)
{
	return ist_buf_append(ctx, buf, n) ? 12 : 0;
}


#endif
