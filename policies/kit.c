/* The policies' shared parts of kit.h. */
#include <config.h>

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "policies/kit.h"
#include "sim/error.h"

int
msim_live_put(msim_live_t *l, uint32_t id, void *p)
{
	if (id >= l->n) {
		size_t n = l->n ? l->n : 1024;
		while (n <= id)
			n *= 2;
		void **v = realloc(l->v, n * sizeof(*v));
		if (!v)
			return MSIM_ENOMEM;
		memset(v + l->n, 0, (n - l->n) * sizeof(*v));
		l->v = v;
		l->n = n;
	}
	l->v[id] = p;
	return 0;
}

void *
msim_live_take(msim_live_t *l, uint32_t id)
{
	if (id >= l->n)
		return NULL;
	void *p = l->v[id];
	l->v[id] = NULL;
	return p;
}

void
msim_live_clear(msim_live_t *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void
msim_kit_count_alloc(msim_stats_t *st, int pool, uint64_t size,
		     uint64_t requested)
{
	msim_stat2_inc(st->allocation, pool, 1);
	msim_stat2_inc(st->allocated_bytes, pool, (int64_t)size);
	msim_stat2_inc(st->active, pool, 1);
	msim_stat2_inc(st->active_bytes, pool, (int64_t)size);
	msim_stat2_inc(st->requested_bytes, pool, (int64_t)requested);
}

void
msim_kit_count_free(msim_stats_t *st, int pool, uint64_t size,
		    uint64_t requested)
{
	msim_stat2_dec(st->allocation, pool, 1);
	msim_stat2_dec(st->allocated_bytes, pool, (int64_t)size);
	msim_stat2_dec(st->active, pool, 1);
	msim_stat2_dec(st->active_bytes, pool, (int64_t)size);
	msim_stat2_dec(st->requested_bytes, pool, (int64_t)requested);
}

static inline bool
ext_less(const msim_ext_t *a, uint64_t size, msim_addr_t addr)
{
	return a->size < size || (a->size == size && a->addr < addr);
}

/* Index of the first extent not less than (size, addr). */
static size_t
extidx_lower(const msim_extidx_t *x, uint64_t size, msim_addr_t addr)
{
	size_t lo = 0, hi = x->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ext_less(x->v[mid], size, addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int
msim_extidx_insert(msim_extidx_t *x, msim_ext_t *e)
{
	assert(!e->indexed && !e->used);
	if (x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 64;
		msim_ext_t **v = realloc(x->v, cap * sizeof(*v));
		if (!v)
			return MSIM_ENOMEM;
		x->v = v;
		x->cap = cap;
	}
	size_t at = extidx_lower(x, e->size, e->addr);
	memmove(&x->v[at + 1], &x->v[at], (x->n - at) * sizeof(*x->v));
	x->v[at] = e;
	x->n++;
	x->bytes += e->size;
	e->indexed = true;
	return 0;
}

void
msim_extidx_remove(msim_extidx_t *x, msim_ext_t *e)
{
	assert(e->indexed);
	size_t at = extidx_lower(x, e->size, e->addr);
	assert(at < x->n && x->v[at] == e);
	memmove(&x->v[at], &x->v[at + 1], (x->n - at - 1) * sizeof(*x->v));
	x->n--;
	x->bytes -= e->size;
	e->indexed = false;
}

msim_ext_t *
msim_extidx_best(const msim_extidx_t *x, uint64_t size)
{
	size_t at = extidx_lower(x, size, 0);
	return at < x->n ? x->v[at] : NULL;
}

msim_ext_t *
msim_extidx_largest(const msim_extidx_t *x)
{
	return x->n ? x->v[x->n - 1] : NULL;
}

void
msim_extidx_clear(msim_extidx_t *x)
{
	free(x->v);
	memset(x, 0, sizeof(*x));
}

msim_ext_t *
msim_ext_new(msim_addr_t addr, uint64_t size, void *owner)
{
	msim_ext_t *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->addr = addr;
	e->size = size;
	e->owner = owner;
	return e;
}

msim_ext_t *
msim_ext_split(msim_ext_t *e, uint64_t size)
{
	assert(!e->indexed && size < e->size);
	msim_ext_t *rest = msim_ext_new(e->addr + size, e->size - size,
					e->owner);
	if (!rest)
		return NULL;
	rest->prev = e;
	rest->next = e->next;
	if (e->next)
		e->next->prev = rest;
	e->next = rest;
	e->size = size;
	return rest;
}

msim_ext_t *
msim_ext_coalesce(msim_extidx_t *x, msim_ext_t *e)
{
	msim_ext_t *n = e->next;
	if (n && !n->used) {
		if (n->indexed)
			msim_extidx_remove(x, n);
		e->size += n->size;
		e->next = n->next;
		if (e->next)
			e->next->prev = e;
		free(n);
	}
	msim_ext_t *p = e->prev;
	if (p && !p->used) {
		if (p->indexed)
			msim_extidx_remove(x, p);
		p->size += e->size;
		p->next = e->next;
		if (p->next)
			p->next->prev = p;
		free(e);
		e = p;
	}
	return e;
}
