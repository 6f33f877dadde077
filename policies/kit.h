/*
 * What the policies other than pytorch share, so each policy file holds
 * only its algorithm: a table of live blocks by request id, the statistics
 * a block's life changes, and extents (address ranges inside a segment,
 * linked to their address neighbours) with an index of free extents ordered
 * by (size, address) for best fit.
 *
 * The index is a treap (a binary search tree kept balanced by random
 * heap priorities; Seidel and Aragon 1996) threaded through the extents
 * themselves: insert, remove and best fit are O(log holes) expected,
 * however many free holes a trace leaves, and the index allocates
 * nothing.  Extents of equal (size, address), which segments placed at a
 * trace's recorded addresses can produce, are told apart by their own
 * address in memory.
 */
#ifndef MSIM_POLICIES_KIT_H
#define MSIM_POLICIES_KIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/types.h"

/* x rounded up to a multiple of m (m > 0).  Sizes reach policies only up
 * to MSIM_SIZE_MAX (msim_policy_alloc() refuses larger ones), and m is at
 * most 2^62 (a parameter's range), so the sum never wraps. */
static inline uint64_t
msim_ceil_to(uint64_t x, uint64_t m)
{
	return (x + m - 1) / m * m;
}

/* The smallest power of two >= x (0 < x <= 2^63; sizes are at most
 * MSIM_SIZE_MAX = 2^62, so it never shifts by 64). */
static inline uint64_t
msim_pow2_ceil(uint64_t x)
{
	return x <= 1 ? 1 : UINT64_C(1) << (64 - __builtin_clzll(x - 1));
}

/* floor(log2(x)) for x > 0. */
static inline unsigned
msim_log2_floor(uint64_t x)
{
	return 63u - (unsigned)__builtin_clzll(x);
}

/* Live blocks by request id: ids are dense, so an array. */
typedef struct msim_live_s {
	void **v;
	size_t n;
} msim_live_t;

/* Stores p under id, growing the table.  Returns 0 or MSIM_ENOMEM. */
int msim_live_put(msim_live_t *l, uint32_t id, void *p);

/* The block under id, or NULL. */
static inline void *
msim_live_get(const msim_live_t *l, uint32_t id)
{
	return id < l->n ? l->v[id] : NULL;
}

/* Removes and returns the block under id, or NULL. */
void *msim_live_take(msim_live_t *l, uint32_t id);

void msim_live_clear(msim_live_t *l);

/* A block of size bytes (asked: requested) was handed out from pool. */
void msim_kit_count_alloc(msim_stats_t *st, int pool, uint64_t size,
			  uint64_t requested);

/* That block came back. */
void msim_kit_count_free(msim_stats_t *st, int pool, uint64_t size,
			 uint64_t requested);

/* An address range inside one segment. */
typedef struct msim_ext_s msim_ext_t;
struct msim_ext_s {
	msim_addr_t addr;
	uint64_t size;        /* bytes */
	uint64_t requested;   /* bytes asked for, when used */
	msim_ext_t *prev;     /* address neighbour in the same segment */
	msim_ext_t *next;
	void *owner;          /* the policy's segment (or superblock) */
	msim_ext_t *tl, *tr;  /* children in the free index's treap */
	uint32_t prio;        /* the treap's heap priority */
	bool used;            /* handed out */
	bool indexed;         /* in a free index */
};

/* Free extents ordered by (size, address). */
typedef struct msim_extidx_s {
	msim_ext_t *root;
	size_t n;       /* extents */
	uint64_t bytes; /* sum of sizes */
	uint32_t seed;  /* of the priorities (xorshift), for determinism */
} msim_extidx_t;

/* Returns 0 (the index allocates nothing; the int is for callers that
 * check). */
int msim_extidx_insert(msim_extidx_t *x, msim_ext_t *e);
void msim_extidx_remove(msim_extidx_t *x, msim_ext_t *e);

/* The smallest free extent of at least size bytes, lowest address first
 * among equals; NULL if none. */
msim_ext_t *msim_extidx_best(const msim_extidx_t *x, uint64_t size);

/* The smallest extent in (size, address) order, or NULL; then the one
 * after e (which is in x), or NULL.  O(log n) each. */
msim_ext_t *msim_extidx_first(const msim_extidx_t *x);
msim_ext_t *msim_extidx_next(const msim_extidx_t *x, const msim_ext_t *e);

/* The largest free extent, or NULL. */
msim_ext_t *msim_extidx_largest(const msim_extidx_t *x);

/* Forgets the extents (they belong to the caller). */
void msim_extidx_clear(msim_extidx_t *x);

/* A new extent (zeroed but for the fields given), or NULL. */
msim_ext_t *msim_ext_new(msim_addr_t addr, uint64_t size, void *owner);

/*
 * Splits the free extent e (not indexed) so that it keeps its first size
 * bytes; returns the new extent holding the rest (not indexed), or NULL
 * when out of host memory.
 */
msim_ext_t *msim_ext_split(msim_ext_t *e, uint64_t size);

/*
 * Hands the extent e out as req's block of pool: marks it used, keeps the
 * bytes asked for, stores it under req->id in live (already grown by
 * msim_live_put()) and counts it in st.  Returns its address.
 */
msim_addr_t msim_kit_hand_out(msim_live_t *live, msim_stats_t *st, int pool,
			      msim_ext_t *e, const msim_req_t *req);

/*
 * Splits the free extent e (not indexed) so that it keeps its first size
 * bytes, and puts the rest into x (the best-fit allocators' split).
 * Returns 0, or MSIM_ENOMEM with e back in x whole.
 */
int msim_extidx_split(msim_extidx_t *x, msim_ext_t *e, uint64_t size);

/*
 * Merges the free extent e (not indexed) with its free neighbours, taking
 * them out of x; returns the merged extent (e or its left neighbour).
 */
msim_ext_t *msim_ext_coalesce(msim_extidx_t *x, msim_ext_t *e);

#endif
