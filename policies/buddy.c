/*
 * buddy: a binary buddy allocator (Knowlton 1965; Knuth, TAOCP vol. 1,
 * section 2.5), the design of SQLite's mem5.c and of many GPU pools.
 *
 * - Device memory comes in arenas of arena_size_mb (a power of two).  A
 *   request takes a block of the smallest power of two >= max(size,
 *   min_block); blocks split in halves ("buddies") down to that order and
 *   a freed block merges with its buddy whenever both halves are free.
 * - Each arena is a complete binary tree stored as an array: a node holds
 *   the order of the largest free block below it, so a lookup walks from
 *   the root, left child first (the lowest address that fits), in
 *   O(log(arena / min_block)); a free walks back up, merging.
 * - When no arena has room a new arena is taken from the device; arenas
 *   are kept for reuse.  A request larger than an arena gets an arena of
 *   its own, of its power-of-two size, given back when it is freed.
 *
 * Cost: O(log(arena / min_block)) per request, plus a scan of the arenas.
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
#include "sim/policy.h"
#include "sim/error.h"

typedef struct bd_arena_s {
	msim_addr_t addr;
	unsigned order;        /* arena = min_block << order */
	uint8_t *longest;      /* per node: largest free order + 1, 0: none */
	uint64_t used;         /* bytes handed out */
	struct bd_arena_s *next;
} bd_arena_t;

typedef struct bd_block_s {
	bd_arena_t *arena;  /* NULL: a dedicated arena */
	msim_addr_t addr;
	size_t node;
	unsigned order;
	uint64_t size;      /* bytes of the block */
	uint64_t requested;
} bd_block_t;

typedef struct bd_state_s {
	msim_device_t *dev;
	uint64_t min_block;
	unsigned arena_order;
	bd_arena_t *arenas;  /* in creation order */
	bd_arena_t **tail;
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

/* The order of a node at depth d in an arena of order o is o - d. */
static unsigned
bd_depth(size_t node)
{
	return msim_log2_floor(node + 1);
}

static bd_arena_t *
bd_arena_new(bd_state_t *s)
{
	size_t nodes = ((size_t)2 << s->arena_order) - 1;
	bd_arena_t *a = calloc(1, sizeof(*a));
	uint8_t *t = malloc(nodes);
	if (!a || !t) {
		free(a);
		free(t);
		return NULL;
	}
	for (size_t i = 0; i < nodes; i++)
		t[i] = (uint8_t)(s->arena_order - bd_depth(i) + 1);
	if (msim_device_malloc(s->dev, s->min_block << s->arena_order,
			       MSIM_POOL_LARGE, &a->addr)) {
		free(a);
		free(t);
		return NULL;
	}
	a->order = s->arena_order;
	a->longest = t;
	*s->tail = a;
	s->tail = &a->next;
	s->arena_bytes += s->min_block << s->arena_order;
	return a;
}

/* Gives the block at node (order k) back, merging buddies upwards. */
static void
bd_give(bd_arena_t *a, size_t node, unsigned k)
{
	a->longest[node] = (uint8_t)(k + 1);
	unsigned o = k;
	while (node > 0) {
		node = (node - 1) / 2;
		o++;
		uint8_t l = a->longest[2 * node + 1];
		uint8_t r = a->longest[2 * node + 2];
		a->longest[node] = (l == o && r == o) ? (uint8_t)(o + 1)
			: l > r ? l : r;
	}
}

static int
bd_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	bd_state_t *s = state;
	bd_block_t *b = calloc(1, sizeof(*b));
	if (!b || msim_live_put(&s->live, req->id, NULL)) {
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
	} else {
		bd_arena_t *a;
		for (a = s->arenas; a; a = a->next)
			if (a->longest[0] > b->order)
				break;
		if (!a && !(a = bd_arena_new(s)))
			goto oom;
		/* Walk down, remembering the node to find its offset. */
		size_t i = 0;
		unsigned o = a->order;
		while (o > b->order) {
			size_t l = 2 * i + 1;
			i = a->longest[l] >= b->order + 1 ? l : l + 1;
			o--;
		}
		size_t first = ((size_t)1 << bd_depth(i)) - 1;
		b->node = i;
		b->arena = a;
		b->addr = a->addr + (i - first) * b->size;
		a->longest[i] = 0;
		while (i > 0) {
			i = (i - 1) / 2;
			uint8_t l = a->longest[2 * i + 1];
			uint8_t r = a->longest[2 * i + 2];
			a->longest[i] = l > r ? l : r;
		}
		a->used += b->size;
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
	bd_block_t *b = msim_live_take(&s->live, req->id);
	if (!b)
		return MSIM_ENOTFOUND;
	msim_kit_count_free(&s->st, MSIM_POOL_LARGE, b->size, b->requested);
	if (!b->arena) {
		msim_device_free(s->dev, b->addr, b->size, MSIM_POOL_LARGE);
	} else {
		bd_give(b->arena, b->node, b->order);
		b->arena->used -= b->size;
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
	unsigned best = 0;
	for (const bd_arena_t *a = s->arenas; a; a = a->next)
		if (a->longest[0] > best)
			best = a->longest[0];
	*largest_out = best ? s->min_block << (best - 1) : 0;
	*total_out = s->arena_bytes - s->used;
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
	while (s->arenas) {
		bd_arena_t *a = s->arenas;
		s->arenas = a->next;
		free(a->longest);
		free(a);
	}
	free(s);
}

static int
bd_create(void **state_out, msim_device_t *dev, const msim_params_t *pv,
	  char *why, size_t whylen)
{
	const msim_param_value_t *v = pv->v;
	uint64_t arena = v[P_ARENA_MB].u * MSIM_MiB;
	uint64_t min = v[P_MIN_BLOCK].u;
	if (arena < min || msim_log2_floor(arena / min) > 26) {
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
	s->tail = &s->arenas;
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
