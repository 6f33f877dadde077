/*
 * arena: size-class arenas over a global pool, after RAPIDS RMM's
 * arena_memory_resource (rmm/mr/device/arena_memory_resource.hpp and
 * detail/arena.hpp), where per-thread arenas hold superblocks carved from a
 * global arena.  memsim's traces have no threads, so the arenas here are
 * per size class instead, which keeps sizes that live differently apart.
 *
 * - Sizes round up to 256 B.  A request of at most max_small_kb goes to
 *   the arena of its power-of-two class; larger ones go to the global pool.
 * - An arena is a list of superblocks of superblock_mb, each a coalescing
 *   free list searched first fit by address (as RMM's superblocks are);
 *   a new superblock is taken from the global pool when none has room, and
 *   a superblock that becomes empty goes back to it.
 * - The global pool is coalescing best fit over device segments of
 *   max(size rounded to 2 MiB, grow_mb); segments are never released.
 *
 * Cost: small requests scan the superblocks of one class and the blocks of
 * each (first fit), large ones a binary search and a memmove (kit.h).
 * Pathology: a long-lived small block pins its whole superblock; the
 * global pool never shrinks.  Statistics: one pool, MSIM_POOL_LARGE.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "policies/kit.h"
#include "sim/policy.h"
#include "sim/error.h"

#define AR_ALIGN 256
#define AR_PAGE (2 * MSIM_MiB)
#define AR_NCLASS 40

enum { AR_SEG = 1, AR_SB = 2 }; /* what an extent's owner is */

typedef struct ar_seg_s {
	int kind; /* AR_SEG */
	msim_addr_t addr;
	uint64_t size;
	msim_ext_t *first;
	struct ar_seg_s *next;
} ar_seg_t;

typedef struct ar_sb_s {
	int kind;            /* AR_SB */
	msim_ext_t *gext;    /* its extent in the global pool */
	msim_ext_t *first;   /* its own blocks, by address */
	size_t live;         /* blocks in use */
	int cls;
	struct ar_sb_s *prev, *next; /* in its class */
} ar_sb_t;

typedef struct ar_state_s {
	msim_device_t *dev;
	uint64_t max_small; /* bytes */
	uint64_t sb_size;   /* bytes */
	uint64_t grow;      /* bytes */
	ar_seg_t *segs;
	msim_extidx_t gfree;
	ar_sb_t *classes[AR_NCLASS];
	uint64_t sb_free;   /* free bytes inside superblocks */
	msim_live_t live;
	msim_stats_t st;
} ar_state_t;

enum { P_MAX_SMALL_KB, P_SB_MB, P_GROW_MB };

static const msim_param_spec_t ar_params[] = {
	[P_MAX_SMALL_KB] = {"max_small_kb", MSIM_PT_UINT, "1024", 1, 1048576,
		0, "requests up to this size go to a size-class arena; must be "
		"at most half a superblock", NULL},
	[P_SB_MB] = {"superblock_mb", MSIM_PT_UINT, "2", 1, 1024, 0,
		"bytes an arena takes from the global pool at once", NULL},
	[P_GROW_MB] = {"grow_mb", MSIM_PT_UINT, "64", 2, 1e6, 0,
		"the global pool grows by at least this much", NULL},
	{NULL, 0, NULL, 0, 0, 0, NULL, NULL},
};

/* Best fit from the global pool, growing it if needed; split exactly.
 * Returns the extent (used, not indexed), or NULL with *rc set. */
static msim_ext_t *
ar_global_take(ar_state_t *s, uint64_t size, int *rc)
{
	msim_ext_t *e = msim_extidx_best(&s->gfree, size);
	if (!e) {
		uint64_t bytes = msim_ceil_to(size, AR_PAGE);
		if (bytes < s->grow)
			bytes = s->grow;
		msim_addr_t addr;
		if (msim_device_malloc(s->dev, bytes, MSIM_POOL_LARGE, &addr)) {
			*rc = MSIM_EDEVOOM;
			return NULL;
		}
		ar_seg_t *g = calloc(1, sizeof(*g));
		e = g ? msim_ext_new(addr, bytes, g) : NULL;
		if (!e) {
			free(g);
			msim_device_free(s->dev, addr, bytes, MSIM_POOL_LARGE);
			*rc = MSIM_ENOMEM;
			return NULL;
		}
		*g = (ar_seg_t){AR_SEG, addr, bytes, e, s->segs};
		s->segs = g;
	} else {
		msim_extidx_remove(&s->gfree, e);
	}
	if (e->size > size && msim_extidx_split(&s->gfree, e, size)) {
		*rc = MSIM_ENOMEM;
		return NULL;
	}
	e->used = true;
	return e;
}

static int
ar_global_give(ar_state_t *s, msim_ext_t *e)
{
	e->used = false;
	ar_seg_t *g = e->owner;
	e = msim_ext_coalesce(&s->gfree, e);
	if (!e->prev)
		g->first = e;
	return msim_extidx_insert(&s->gfree, e);
}

/* First fit inside one superblock; splits exactly.  NULL if no room. */
static msim_ext_t *
ar_sb_take(ar_state_t *s, ar_sb_t *sb, uint64_t size, int *rc)
{
	for (msim_ext_t *e = sb->first; e; e = e->next) {
		if (e->used || e->size < size)
			continue;
		if (e->size > size && !msim_ext_split(e, size)) {
			*rc = MSIM_ENOMEM;
			return NULL;
		}
		e->used = true;
		sb->live++;
		s->sb_free -= size;
		return e;
	}
	return NULL;
}

static int
ar_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	ar_state_t *s = state;
	uint64_t size = msim_ceil_to(req->size, AR_ALIGN);
	int rc = 0;
	msim_ext_t *e = NULL;
	if (msim_live_put(&s->live, req->id, NULL))
		return MSIM_ENOMEM;
	if (size <= s->max_small) {
		int cls = (int)msim_log2_floor(msim_pow2_ceil(size));
		ar_sb_t *sb;
		for (sb = s->classes[cls]; sb && !e && !rc; sb = sb->next)
			e = ar_sb_take(s, sb, size, &rc);
		if (!e && !rc) {
			msim_ext_t *g = ar_global_take(s, s->sb_size, &rc);
			sb = g ? calloc(1, sizeof(*sb)) : NULL;
			msim_ext_t *all = sb ? msim_ext_new(g->addr, g->size,
							    sb) : NULL;
			if (g && !all) {
				free(sb);
				ar_global_give(s, g);
				rc = MSIM_ENOMEM;
			} else if (g) {
				*sb = (ar_sb_t){.kind = AR_SB, .gext = g,
						.first = all, .cls = cls,
						.next = s->classes[cls]};
				if (sb->next)
					sb->next->prev = sb;
				s->classes[cls] = sb;
				s->sb_free += g->size;
				e = ar_sb_take(s, sb, size, &rc);
			}
		}
	} else {
		e = ar_global_take(s, size, &rc);
	}
	if (!e) {
		if (rc == MSIM_EDEVOOM) {
			s->st.num_ooms++;
			msim_device_log_oom(s->dev, size);
		}
		return rc;
	}
	*addr_out = msim_kit_hand_out(&s->live, &s->st, MSIM_POOL_LARGE, e,
				      req);
	return 0;
}

static int
ar_free(void *state, const msim_req_t *req)
{
	ar_state_t *s = state;
	msim_ext_t *e = msim_live_take(&s->live, req->id);
	if (!e)
		return MSIM_ENOTFOUND;
	msim_kit_count_free(&s->st, MSIM_POOL_LARGE, e->size, e->requested);
	if (*(int *)e->owner == AR_SEG)
		return ar_global_give(s, e);
	ar_sb_t *sb = e->owner;
	e->used = false;
	s->sb_free += e->size;
	e = msim_ext_coalesce(NULL, e);
	if (!e->prev)
		sb->first = e;
	if (--sb->live > 0)
		return 0;
	/* Empty: back to the global pool. */
	s->sb_free -= sb->gext->size;
	free(sb->first);
	if (sb->prev)
		sb->prev->next = sb->next;
	else
		s->classes[sb->cls] = sb->next;
	if (sb->next)
		sb->next->prev = sb->prev;
	msim_ext_t *g = sb->gext;
	free(sb);
	return ar_global_give(s, g);
}

static void
ar_stats(const void *state, msim_stats_t *out)
{
	*out = ((const ar_state_t *)state)->st;
}

static void
ar_free_info(const void *state, uint64_t *largest_out, uint64_t *total_out)
{
	const ar_state_t *s = state;
	const msim_ext_t *g = msim_extidx_largest(&s->gfree);
	uint64_t largest = g ? g->size : 0;
	for (int c = 0; c < AR_NCLASS; c++)
		for (const ar_sb_t *sb = s->classes[c]; sb; sb = sb->next)
			for (const msim_ext_t *e = sb->first; e; e = e->next)
				if (!e->used && e->size > largest)
					largest = e->size;
	*largest_out = largest;
	*total_out = s->gfree.bytes + s->sb_free;
}

static void
ar_destroy(void *state)
{
	ar_state_t *s = state;
	if (!s)
		return;
	for (int c = 0; c < AR_NCLASS; c++) {
		while (s->classes[c]) {
			ar_sb_t *sb = s->classes[c];
			for (msim_ext_t *e = sb->first, *n; e; e = n) {
				n = e->next;
				free(e);
			}
			s->classes[c] = sb->next;
			free(sb);
		}
	}
	while (s->segs) {
		ar_seg_t *g = s->segs;
		for (msim_ext_t *e = g->first, *n; e; e = n) {
			n = e->next;
			free(e);
		}
		s->segs = g->next;
		free(g);
	}
	msim_extidx_clear(&s->gfree);
	msim_live_clear(&s->live);
	free(s);
}

static int
ar_create(void **state_out, msim_device_t *dev, const msim_params_t *pv,
	  char *why, size_t whylen)
{
	const msim_param_value_t *v = pv->v;
	uint64_t max_small = v[P_MAX_SMALL_KB].u * 1024;
	uint64_t sb = v[P_SB_MB].u * MSIM_MiB;
	if (max_small > sb / 2) {
		snprintf(why, whylen, "max_small_kb must be at most half of "
			 "superblock_mb");
		return MSIM_EINVAL;
	}
	ar_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return MSIM_ENOMEM;
	s->dev = dev;
	s->max_small = max_small;
	s->sb_size = sb;
	s->grow = v[P_GROW_MB].u * MSIM_MiB;
	*state_out = s;
	return 0;
}

const msim_policy_ops_t msim_policy_arena = {
	.name = "arena",
	.summary = "size-class arenas of superblocks over a global pool (after "
		   "RMM's arena)",
	.params = ar_params,
	.create = ar_create,
	.alloc = ar_alloc,
	.free = ar_free,
	.stats = ar_stats,
	.free_info = ar_free_info,
	.destroy = ar_destroy,
};
