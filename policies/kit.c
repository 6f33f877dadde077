/* The policies' shared parts of kit.h. */
#include <config.h>

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "policies/kit.h"
#include "sim/error.h"
#include "sim/grow.h"

int
msim_live_put(msim_live_t *l, uint32_t id, void *p)
{
	if (MSIM_GROW_ZERO(l->v, l->n, (size_t)id + 1, 1024))
		return MSIM_ENOMEM;
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

/* The treap's order: (size, address), then the extent's own address. */
static inline bool
ext_before(const msim_ext_t *a, const msim_ext_t *b)
{
	if (a->size != b->size)
		return a->size < b->size;
	if (a->addr != b->addr)
		return a->addr < b->addr;
	return (uintptr_t)a < (uintptr_t)b;
}

static msim_ext_t *
treap_insert(msim_ext_t *t, msim_ext_t *e)
{
	if (!t)
		return e;
	if (ext_before(e, t)) {
		t->tl = treap_insert(t->tl, e);
		if (t->tl->prio > t->prio) { /* rotate right */
			msim_ext_t *l = t->tl;
			t->tl = l->tr;
			l->tr = t;
			return l;
		}
	} else {
		t->tr = treap_insert(t->tr, e);
		if (t->tr->prio > t->prio) { /* rotate left */
			msim_ext_t *r = t->tr;
			t->tr = r->tl;
			r->tl = t;
			return r;
		}
	}
	return t;
}

/* Joins two treaps, every key of a before every key of b. */
static msim_ext_t *
treap_join(msim_ext_t *a, msim_ext_t *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (a->prio > b->prio) {
		a->tr = treap_join(a->tr, b);
		return a;
	}
	b->tl = treap_join(a, b->tl);
	return b;
}

static msim_ext_t *
treap_remove(msim_ext_t *t, msim_ext_t *e)
{
	assert(t); /* e is indexed, so it is in the tree */
	if (t == e)
		return treap_join(t->tl, t->tr);
	if (ext_before(e, t))
		t->tl = treap_remove(t->tl, e);
	else
		t->tr = treap_remove(t->tr, e);
	return t;
}

int
msim_extidx_insert(msim_extidx_t *x, msim_ext_t *e)
{
	assert(!e->indexed && !e->used);
	uint32_t r = x->seed ? x->seed : 2463534242u; /* xorshift32 */
	r ^= r << 13;
	r ^= r >> 17;
	r ^= r << 5;
	x->seed = r;
	e->prio = r;
	e->tl = e->tr = NULL;
	x->root = treap_insert(x->root, e);
	x->n++;
	x->bytes += e->size;
	e->indexed = true;
	return 0;
}

void
msim_extidx_remove(msim_extidx_t *x, msim_ext_t *e)
{
	assert(e->indexed);
	x->root = treap_remove(x->root, e);
	e->tl = e->tr = NULL;
	x->n--;
	x->bytes -= e->size;
	e->indexed = false;
}

msim_ext_t *
msim_extidx_best(const msim_extidx_t *x, uint64_t size)
{
	msim_ext_t *best = NULL;
	for (msim_ext_t *t = x->root; t;) {
		if (t->size >= size) {
			best = t; /* fits; something smaller may, leftwards */
			t = t->tl;
		} else {
			t = t->tr;
		}
	}
	return best;
}

msim_ext_t *
msim_extidx_first(const msim_extidx_t *x)
{
	msim_ext_t *t = x->root;
	while (t && t->tl)
		t = t->tl;
	return t;
}

msim_ext_t *
msim_extidx_next(const msim_extidx_t *x, const msim_ext_t *e)
{
	if (e->tr) {
		msim_ext_t *t = e->tr;
		while (t->tl)
			t = t->tl;
		return t;
	}
	msim_ext_t *next = NULL;
	for (msim_ext_t *t = x->root; t && t != e;) {
		if (ext_before(e, t)) {
			next = t;
			t = t->tl;
		} else {
			t = t->tr;
		}
	}
	return next;
}

msim_ext_t *
msim_extidx_largest(const msim_extidx_t *x)
{
	msim_ext_t *t = x->root;
	while (t && t->tr)
		t = t->tr;
	return t;
}

void
msim_extidx_clear(msim_extidx_t *x)
{
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

msim_addr_t
msim_kit_hand_out(msim_live_t *live, msim_stats_t *st, int pool,
		  msim_ext_t *e, const msim_req_t *req)
{
	e->used = true;
	e->requested = req->size;
	live->v[req->id] = e;
	msim_kit_count_alloc(st, pool, e->size, e->requested);
	return e->addr;
}

int
msim_extidx_split(msim_extidx_t *x, msim_ext_t *e, uint64_t size)
{
	msim_ext_t *rest = msim_ext_split(e, size);
	if (rest && !msim_extidx_insert(x, rest))
		return 0;
	if (rest)
		msim_ext_coalesce(x, rest);
	msim_extidx_insert(x, e);
	return MSIM_ENOMEM;
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
