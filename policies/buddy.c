/*
 * buddy: a binary buddy allocator (Knowlton 1965; Knuth, TAOCP vol. 1,
 * section 2.5), the design of SQLite's mem5.c and of many GPU pools.
 *
 * - Device memory comes in arenas of arena_size_mb (a power of two).  A
 *   request takes a block of the smallest power of two >= max(size,
 *   min_block); blocks split in halves ("buddies") down to that order and
 *   a freed block merges with its buddy whenever both halves are free.
 * - Free blocks are kept in one ordered set per order (a treap: a binary
 *   search tree kept balanced by random heap priorities; Seidel and Aragon
 *   1996), keyed by (arena in creation order, offset): a request takes the
 *   smallest key among the orders that fit, so the first arena with room
 *   and, inside it, the lowest address, and splits it, putting the upper
 *   halves back; a free looks its buddy up in the set of its order and
 *   merges while the buddy is free.  Host memory follows the free and live
 *   blocks and the arenas, not the reserved bytes.
 * - When no arena has room a new arena is taken from the device; arenas
 *   are kept for reuse.  A request larger than an arena gets an arena of
 *   its own, of its power-of-two size, given back when it is freed.
 *
 * Cost: O(log(arena / min_block) * log(free blocks)) expected per request
 * (a lookup per order that fits, each set's smallest key kept at hand).
 * Pathology: power-of-two rounding wastes up to half of every block (a
 * 1.6 GB tensor takes 2 GiB), and one live block pins its whole arena.
 * Robson's bound applies: worst-case need is about log2(largest/smallest)
 * times the live bytes.  Statistics: one pool, MSIM_POOL_LARGE; allocated
 * bytes are the power-of-two blocks.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/kit.h"
#include "sim/grow.h"
#include "sim/policy.h"
#include "sim/error.h"

/* Orders of a block inside an arena: 0 .. 26 (bd_create()). */
#define BD_ORDERS 27

/* A free block: key = arena index << 32 | offset / min_block. */
typedef struct bd_free_s {
	uint64_t key;
	struct bd_free_s *l, *r; /* the treap's children; r: next spare */
	uint32_t prio;
} bd_free_t;

typedef struct bd_block_s {
	bool dedicated;     /* an arena of its own */
	msim_addr_t addr;
	uint64_t key;       /* in a shared arena */
	unsigned order;
	uint64_t size;      /* bytes of the block */
	uint64_t requested;
} bd_block_t;

typedef struct bd_state_s {
	msim_device_t *dev;
	uint64_t min_block;
	unsigned arena_order;
	msim_addr_t *arenas;  /* base addresses, in creation order */
	size_t narenas, arenas_cap;
	bd_free_t *set[BD_ORDERS]; /* free blocks of each order */
	bd_free_t *min[BD_ORDERS]; /* each set's smallest key, or NULL */
	bd_free_t *spare;     /* nodes to reuse, linked through r */
	size_t nspare;
	uint32_t seed;        /* of the priorities (xorshift), for determinism */
	uint64_t arena_bytes; /* bytes of shared arenas */
	uint64_t used;        /* bytes handed out from shared arenas */
	msim_live_t live;
	msim_stats_t st;
} bd_state_t;

enum { P_MIN_BLOCK, P_ARENA_MB };

static const msim_param_spec_t bd_params[] = {
	[P_MIN_BLOCK] = {"min_block", MSIM_PT_UINT, "512", 256, 1048576,
		MSIM_PF_POW2, "smallest block, bytes", NULL},
	[P_ARENA_MB] = {"arena_size_mb", MSIM_PT_UINT, "256", 1, 65536,
		MSIM_PF_POW2, "bytes of an arena taken from the device", NULL},
	{NULL, 0, NULL, 0, 0, 0, NULL, NULL},
};

/* ---- the treap of one order's free blocks ---- */

/* Joins a and b, every key of a below every key of b. */
static bd_free_t *
bd_join(bd_free_t *a, bd_free_t *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (a->prio > b->prio) {
		a->r = bd_join(a->r, b);
		return a;
	}
	b->l = bd_join(a, b->l);
	return b;
}

static bd_free_t *
bd_insert(bd_free_t *t, bd_free_t *n)
{
	if (!t)
		return n;
	if (n->prio > t->prio) {
		/* n becomes the root of this subtree: split t by n's key. */
		bd_free_t **lo = &n->l, **hi = &n->r;
		while (t) {
			if (t->key < n->key) {
				*lo = t;
				lo = &t->r;
				t = t->r;
			} else {
				*hi = t;
				hi = &t->l;
				t = t->l;
			}
		}
		*lo = *hi = NULL;
		return n;
	}
	if (n->key < t->key)
		t->l = bd_insert(t->l, n);
	else
		t->r = bd_insert(t->r, n);
	return t;
}

/* Takes the node of key out of the tree at *root; returns it or NULL. */
static bd_free_t *
bd_remove(bd_free_t **root, uint64_t key)
{
	bd_free_t **p = root;
	while (*p && (*p)->key != key)
		p = key < (*p)->key ? &(*p)->l : &(*p)->r;
	bd_free_t *n = *p;
	if (n)
		*p = bd_join(n->l, n->r);
	return n;
}

static bd_free_t *
bd_leftmost(bd_free_t *t)
{
	if (t)
		while (t->l)
			t = t->l;
	return t;
}

/* A node for key, from the spares (bd_reserve() made sure of one). */
static bd_free_t *
bd_node(bd_state_t *s, uint64_t key)
{
	bd_free_t *n = s->spare;
	s->spare = n->r;
	s->nspare--;
	s->seed ^= s->seed << 13;
	s->seed ^= s->seed >> 17;
	s->seed ^= s->seed << 5;
	n->key = key;
	n->l = n->r = NULL;
	n->prio = s->seed;
	return n;
}

static void
bd_unnode(bd_state_t *s, bd_free_t *n)
{
	n->r = s->spare;
	s->spare = n;
	s->nspare++;
}

/* Makes sure of k spare nodes.  Returns 0 or MSIM_ENOMEM. */
static int
bd_reserve(bd_state_t *s, size_t k)
{
	while (s->nspare < k) {
		bd_free_t *n = malloc(sizeof(*n));
		if (!n)
			return MSIM_ENOMEM;
		bd_unnode(s, n);
	}
	return 0;
}

/* Adds a free block of order o. */
static void
bd_put(bd_state_t *s, unsigned o, uint64_t key)
{
	bd_free_t *n = bd_node(s, key);
	s->set[o] = bd_insert(s->set[o], n);
	if (!s->min[o] || key < s->min[o]->key)
		s->min[o] = n;
}

/* Takes the free block of order o at key out; returns whether it was
 * there. */
static bool
bd_take(bd_state_t *s, unsigned o, uint64_t key)
{
	bd_free_t *n = bd_remove(&s->set[o], key);
	if (!n)
		return false;
	if (n == s->min[o])
		s->min[o] = bd_leftmost(s->set[o]);
	bd_unnode(s, n);
	return true;
}

/* ---- the allocator ---- */

/* A new arena, wholly free.  Returns 0 or an error. */
static int
bd_arena_new(bd_state_t *s)
{
	if (MSIM_GROW(s->arenas, s->arenas_cap, s->narenas + 1, 8))
		return MSIM_ENOMEM;
	msim_addr_t addr;
	if (msim_device_malloc(s->dev, s->min_block << s->arena_order,
			       MSIM_POOL_LARGE, &addr))
		return MSIM_EDEVOOM;
	s->arenas[s->narenas] = addr;
	bd_put(s, s->arena_order, (uint64_t)s->narenas << 32);
	s->narenas++;
	s->arena_bytes += s->min_block << s->arena_order;
	return 0;
}

static int
bd_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	bd_state_t *s = state;
	/* A split puts back at most arena_order halves; a new arena one. */
	bd_block_t *b = calloc(1, sizeof(*b));
	if (!b || bd_reserve(s, s->arena_order + 1) ||
	    msim_live_put(&s->live, req->id, NULL)) {
		free(b);
		return MSIM_ENOMEM;
	}
	uint64_t want = req->size < s->min_block ? s->min_block : req->size;
	b->size = msim_pow2_ceil(want);
	b->order = msim_log2_floor(b->size / s->min_block);
	b->requested = req->size;
	if (b->order > s->arena_order) {
		if (msim_device_malloc(s->dev, b->size, MSIM_POOL_LARGE,
				       &b->addr))
			goto oom;
		b->dedicated = true;
	} else {
		/* The smallest key of a free block that fits: the first
		 * arena with room, its lowest such address. */
		unsigned best = BD_ORDERS;
		for (unsigned o = b->order; o <= s->arena_order; o++)
			if (s->min[o] && (best == BD_ORDERS ||
					  s->min[o]->key < s->min[best]->key))
				best = o;
		if (best == BD_ORDERS) {
			int rc = bd_arena_new(s);
			if (rc == MSIM_ENOMEM) {
				free(b);
				return rc;
			}
			if (rc)
				goto oom;
			best = s->arena_order;
		}
		uint64_t key = s->min[best]->key;
		bd_take(s, best, key);
		/* Split: the upper halves go back, the lowest is ours. */
		for (unsigned o = best; o > b->order; o--)
			bd_put(s, o - 1, key + ((uint64_t)1 << (o - 1)));
		b->key = key;
		b->addr = s->arenas[key >> 32] +
			  (key & UINT32_MAX) * s->min_block;
		s->used += b->size;
	}
	s->live.v[req->id] = b;
	msim_kit_count_alloc(&s->st, MSIM_POOL_LARGE, b->size, b->requested);
	*addr_out = b->addr;
	return 0;
oom:
	free(b);
	s->st.num_ooms++;
	msim_device_log_oom(s->dev, msim_pow2_ceil(want));
	return MSIM_EDEVOOM;
}

static int
bd_free(void *state, const msim_req_t *req)
{
	bd_state_t *s = state;
	if (bd_reserve(s, 1))
		return MSIM_ENOMEM;
	bd_block_t *b = msim_live_take(&s->live, req->id);
	if (!b)
		return MSIM_ENOTFOUND;
	msim_kit_count_free(&s->st, MSIM_POOL_LARGE, b->size, b->requested);
	if (b->dedicated) {
		msim_device_free(s->dev, b->addr, b->size, MSIM_POOL_LARGE);
	} else {
		/* Merge with the buddy while it is free. */
		uint64_t key = b->key;
		unsigned o = b->order;
		while (o < s->arena_order &&
		       bd_take(s, o, key ^ ((uint64_t)1 << o))) {
			key &= ~((uint64_t)1 << o);
			o++;
		}
		bd_put(s, o, key);
		s->used -= b->size;
	}
	free(b);
	return 0;
}

static void
bd_stats(const void *state, msim_stats_t *out)
{
	*out = ((const bd_state_t *)state)->st;
}

static void
bd_free_info(const void *state, uint64_t *largest_out, uint64_t *total_out)
{
	const bd_state_t *s = state;
	*largest_out = 0;
	for (unsigned o = s->arena_order + 1; o-- > 0;)
		if (s->set[o]) {
			*largest_out = s->min_block << o;
			break;
		}
	*total_out = s->arena_bytes - s->used;
}

static void
bd_free_tree(bd_free_t *t)
{
	while (t) {
		bd_free_tree(t->l);
		bd_free_t *r = t->r;
		free(t);
		t = r;
	}
}

static void
bd_destroy(void *state)
{
	bd_state_t *s = state;
	if (!s)
		return;
	for (size_t i = 0; i < s->live.n; i++)
		free(s->live.v[i]);
	msim_live_clear(&s->live);
	for (unsigned o = 0; o < BD_ORDERS; o++)
		bd_free_tree(s->set[o]);
	while (s->spare) {
		bd_free_t *n = s->spare;
		s->spare = n->r;
		free(n);
	}
	free(s->arenas);
	free(s);
}

static int
bd_create(void **state_out, msim_device_t *dev, const msim_params_t *pv,
	  char *why, size_t whylen)
{
	const msim_param_value_t *v = pv->v;
	uint64_t arena = v[P_ARENA_MB].u * MSIM_MiB;
	uint64_t min = v[P_MIN_BLOCK].u;
	if (arena < min || msim_log2_floor(arena / min) > BD_ORDERS - 1) {
		snprintf(why, whylen, "arena_size_mb / min_block must be "
			 "between 1 and 2^26");
		return MSIM_EINVAL;
	}
	bd_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return MSIM_ENOMEM;
	s->dev = dev;
	s->min_block = min;
	s->arena_order = msim_log2_floor(arena / min);
	s->seed = 2463534242u;
	*state_out = s;
	return 0;
}

const msim_policy_ops_t msim_policy_buddy = {
	.name = "buddy",
	.summary = "binary buddy allocator over power-of-two arenas",
	.params = bd_params,
	.create = bd_create,
	.alloc = bd_alloc,
	.free = bd_free,
	.stats = bd_stats,
	.free_info = bd_free_info,
	.destroy = bd_destroy,
};
