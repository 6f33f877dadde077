/*
 * cupy: CuPy's default device memory pool (cupy.cuda.MemoryPool, one
 * SingleDeviceMemoryPool per device), rule by rule:
 *
 * - Sizes round up to 512 B (_round_size, ALLOCATION_UNIT_SIZE); a size of
 *   0 never reaches the pool.
 * - Free chunks live in one arena per stream (_Arena, keyed by the stream a
 *   chunk was allocated on): a malloc looks only in the arena of its own
 *   stream and takes the smallest free chunk that fits (_Arena.get_chunk:
 *   lower_bound on the size).  Among chunks of equal size CuPy's order is
 *   that of its Python chunk objects, which nothing outside the process
 *   can see; memsim takes the lowest address.
 * - A larger chunk is split (_Chunk.split): the front is handed out and the
 *   rest goes back to the arena without merging.
 * - When no chunk fits, exactly the rounded size is allocated with
 *   cudaMalloc (_try_malloc); the pool never allocates ahead.
 * - A freed chunk merges with its free neighbours of the same cudaMalloc,
 *   next first, then previous (_Arena.try_merge_chunk), and returns to its
 *   arena.
 * - free_all_blocks() gives back every free chunk that is a whole
 *   cudaMalloc (never split, or merged back whole); split chunks stay.
 *   memsim calls it for empty_cache() requests and where CuPy does.
 * - Out of memory: when the pool's limit (set_limit(size=...), or
 *   CUPY_GPU_MEMORY_LIMIT) would be passed, or cudaMalloc fails, CuPy
 *   calls free_all_blocks() and tries again (then once more after
 *   gc.collect(), which frees nothing here), then raises
 *   OutOfMemoryError.
 *
 * Cost: per arena, binary search and memmove over the free chunks
 * (kit.h).  Pathology: a chunk that was ever split can never go back to the
 * device until all its pieces are free again, so long runs with varying
 * sizes keep their high-water mark.  Statistics: one pool, MSIM_POOL_LARGE.
 */
#include <config.h>

#include <stdlib.h>

#include "policies/kit.h"
#include "sim/error.h"
#include "sim/policy.h"

#define CP_UNIT 512 /* ALLOCATION_UNIT_SIZE */

/* The free chunks of one stream. */
typedef struct cp_arena_s {
	msim_stream_t stream;
	msim_extidx_t free;
} cp_arena_t;

typedef struct cp_state_s {
	msim_device_t *dev;
	uint64_t limit;    /* set_limit(size=...): bytes, 0 = none */
	uint64_t total;    /* total_bytes(): bytes held from the device */
	cp_arena_t **arenas;
	size_t narenas;
	msim_live_t live;
	msim_stats_t st;
} cp_state_t;

enum { P_LIMIT };

static const msim_param_spec_t cp_params[] = {
	[P_LIMIT] = {"limit", MSIM_PT_UINT, "none", 1, 1.8e19,
		MSIM_PF_NONE_OK, "MemoryPool.set_limit(size=...): bytes the "
		"pool may hold (none: until the device is full)", NULL},
	{NULL, 0, NULL, 0, 0, 0, NULL, NULL},
};

/* _arena(stream_ident): the arena of stream, made on first use; NULL when
 * out of host memory. */
static cp_arena_t *
cp_arena(cp_state_t *s, msim_stream_t stream)
{
	for (size_t i = 0; i < s->narenas; i++)
		if (s->arenas[i]->stream == stream)
			return s->arenas[i];
	cp_arena_t **v = realloc(s->arenas, (s->narenas + 1) * sizeof(*v));
	if (!v)
		return NULL;
	s->arenas = v;
	cp_arena_t *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->stream = stream;
	s->arenas[s->narenas++] = a;
	return a;
}

/* free_all_blocks(): every free chunk that is a whole cudaMalloc goes back
 * to the device.  Returns whether any did. */
static bool
cp_free_all_blocks(cp_state_t *s)
{
	bool freed = false;
	for (size_t i = 0; i < s->narenas; i++) {
		msim_extidx_t *x = &s->arenas[i]->free;
		for (msim_ext_t *e = msim_extidx_first(x), *nx; e; e = nx) {
			nx = msim_extidx_next(x, e);
			if (e->prev || e->next)
				continue;
			msim_extidx_remove(x, e);
			msim_device_free(s->dev, e->addr, e->size,
					 MSIM_POOL_LARGE);
			s->total -= e->size;
			free(e);
			freed = true;
		}
	}
	return freed;
}

/* Whether size more bytes stay within the pool's limit
 * (_try_block_total_bytes). */
static bool
cp_within_limit(const cp_state_t *s, uint64_t size)
{
	return !s->limit || (size <= s->limit && s->total <= s->limit - size);
}

/* _try_malloc(): a new cudaMalloc of size bytes, after giving cached
 * chunks back when the limit or the device says no.  Returns 0 with
 * *addr_out, or MSIM_EDEVOOM. */
static int
cp_try_malloc(cp_state_t *s, uint64_t size, msim_addr_t *addr_out)
{
	if (!cp_within_limit(s, size)) {
		cp_free_all_blocks(s);
		if (!cp_within_limit(s, size))
			return MSIM_EDEVOOM;
	}
	if (msim_device_malloc(s->dev, size, MSIM_POOL_LARGE, addr_out)) {
		if (!cp_free_all_blocks(s) ||
		    msim_device_malloc(s->dev, size, MSIM_POOL_LARGE,
				       addr_out))
			return MSIM_EDEVOOM;
	}
	s->total += size;
	return 0;
}

static int
cp_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	cp_state_t *s = state;
	if (req->size > UINT64_MAX - CP_UNIT)
		return MSIM_EDEVOOM;
	uint64_t size = msim_ceil_to(req->size, CP_UNIT);
	cp_arena_t *a = cp_arena(s, req->stream);
	if (!a || msim_live_put(&s->live, req->id, NULL))
		return MSIM_ENOMEM;
	msim_ext_t *b = msim_extidx_best(&a->free, size);
	if (b) {
		msim_extidx_remove(&a->free, b);
		if (b->size > size && msim_extidx_split(&a->free, b, size))
			return MSIM_ENOMEM;
	} else {
		msim_addr_t addr;
		if (cp_try_malloc(s, size, &addr)) {
			s->st.num_ooms++;
			msim_device_log_oom(s->dev, size);
			return MSIM_EDEVOOM;
		}
		if (!(b = msim_ext_new(addr, size, a))) {
			msim_device_free(s->dev, addr, size, MSIM_POOL_LARGE);
			s->total -= size;
			return MSIM_ENOMEM;
		}
	}
	*addr_out = msim_kit_hand_out(&s->live, &s->st, MSIM_POOL_LARGE, b,
				      req);
	return 0;
}

static int
cp_free(void *state, const msim_req_t *req)
{
	cp_state_t *s = state;
	msim_ext_t *b = msim_live_take(&s->live, req->id);
	if (!b)
		return MSIM_ENOTFOUND;
	msim_kit_count_free(&s->st, MSIM_POOL_LARGE, b->size, b->requested);
	b->used = false;
	cp_arena_t *a = b->owner;
	b = msim_ext_coalesce(&a->free, b);
	return msim_extidx_insert(&a->free, b);
}

static int
cp_empty_cache(void *state)
{
	cp_free_all_blocks(state);
	return 0;
}

static void
cp_stats(const void *state, msim_stats_t *out)
{
	*out = ((const cp_state_t *)state)->st;
}

static void
cp_free_info(const void *state, uint64_t *largest_out, uint64_t *total_out)
{
	const cp_state_t *s = state;
	*largest_out = *total_out = 0;
	for (size_t i = 0; i < s->narenas; i++) {
		const msim_extidx_t *x = &s->arenas[i]->free;
		const msim_ext_t *e = msim_extidx_largest(x);
		if (e && e->size > *largest_out)
			*largest_out = e->size;
		*total_out += x->bytes;
	}
}

static void
cp_destroy(void *state)
{
	cp_state_t *s = state;
	if (!s)
		return;
	for (size_t i = 0; i < s->live.n; i++)
		free(s->live.v[i]);
	for (size_t i = 0; i < s->narenas; i++) {
		msim_extidx_t *x = &s->arenas[i]->free;
		for (msim_ext_t *e; (e = msim_extidx_first(x));) {
			msim_extidx_remove(x, e);
			free(e);
		}
		msim_extidx_clear(x);
		free(s->arenas[i]);
	}
	free(s->arenas);
	msim_live_clear(&s->live);
	free(s);
}

static int
cp_create(void **state_out, msim_device_t *dev, const msim_params_t *pv,
	  char *why, size_t whylen)
{
	(void)why;
	(void)whylen;
	cp_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return MSIM_ENOMEM;
	s->dev = dev;
	s->limit = pv->v[P_LIMIT].none ? 0 : pv->v[P_LIMIT].u;
	*state_out = s;
	return 0;
}

const msim_policy_ops_t msim_policy_cupy = {
	.name = "cupy",
	.summary = "CuPy's MemoryPool: 512 B units, best fit per stream arena, "
		   "split and merge, free_all_blocks on OOM",
	.params = cp_params,
	.create = cp_create,
	.alloc = cp_alloc,
	.free = cp_free,
	.empty_cache = cp_empty_cache,
	.stats = cp_stats,
	.free_info = cp_free_info,
	.destroy = cp_destroy,
};
