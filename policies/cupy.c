/*
 * cupy: CuPy's default device memory pool (cupy.cuda.MemoryPool, one
 * SingleDeviceMemoryPool per device), rule by rule:
 *
 * - Sizes round up to 512 B (_round_size, ALLOCATION_UNIT_SIZE); a size of
 *   0 never reaches the pool.
 * - Free chunks live in one arena per stream (_Arena, keyed by the stream a
 *   chunk was allocated on): a malloc looks only in the arena of its own
 *   stream and takes the smallest free chunk that fits (_Arena.get_chunk:
 *   lower_bound on the arena's index).
 * - The index is a std::set of (size, address of the Python _Chunk
 *   object): among free chunks of equal size CuPy takes the one whose
 *   _Chunk object sits lowest in the interpreter's memory (_Arena.index,
 *   _Arena.insert_chunk).  memsim models where CPython puts those objects:
 *   a _Chunk (72 B) and a PooledMemory (80 B) share one size class of
 *   CPython's small-object allocator, which hands out the block freed last
 *   first and otherwise one above all blocks made so far.  The objects are
 *   made and freed in CuPy's order: at a malloc the split's remainder or
 *   the new cudaMalloc's chunk (_Chunk.split, SingleDeviceMemoryPool.
 *   _malloc), then the PooledMemory; at a free, a free next neighbour
 *   merged in (_Chunk.merge_next), then the freed chunk itself if it merged
 *   into its previous neighbour (_Arena.try_merge_chunk), then the
 *   PooledMemory; free_all_blocks() frees chunks in index order, arena by
 *   arena.  docs/validation.md, "The cupy policy", gives the
 *   measurements.
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
 * Cost: per arena, binary search and memmove over the free chunks.
 * Pathology: a chunk that was ever split can never go back to the device
 * until all its pieces are free again, so long runs with varying sizes
 * keep their high-water mark.  Statistics: one pool, MSIM_POOL_LARGE.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "policies/kit.h"
#include "sim/error.h"
#include "sim/grow.h"
#include "sim/policy.h"

#define CP_UNIT 512 /* ALLOCATION_UNIT_SIZE */

/* A chunk (_Chunk): an extent with the place of its Python objects. */
typedef struct cp_chunk_s {
	msim_ext_t ext;  /* first: a cp_chunk_t is an msim_ext_t */
	uint64_t obj;    /* its _Chunk object's place, in blocks */
	uint64_t pmem;   /* while handed out: its PooledMemory's place */
} cp_chunk_t;

/* One entry of an arena's index, ordered by (size, obj). */
typedef struct cp_ent_s {
	uint64_t size;
	uint64_t obj;
	cp_chunk_t *c;
} cp_ent_t;

/* The free chunks of one stream (_Arena.index). */
typedef struct cp_arena_s {
	msim_stream_t stream;
	cp_ent_t *v;
	size_t n, cap;
	uint64_t bytes; /* sum of the free chunks' sizes */
} cp_arena_t;

/*
 * The size class of CPython's small-object allocator that holds _Chunk and
 * PooledMemory objects, as places counted in blocks: a freed block is
 * handed out again first, the last freed first; otherwise the block above
 * all blocks made so far.
 */
typedef struct cp_heap_s {
	uint64_t *freed; /* a stack, last freed on top */
	size_t n, cap;
	uint64_t top;    /* blocks made so far; freed never holds more */
} cp_heap_t;

typedef struct cp_state_s {
	msim_device_t *dev;
	uint64_t limit;    /* set_limit(size=...): bytes, 0 = none */
	uint64_t total;    /* total_bytes(): bytes held from the device */
	cp_arena_t **arenas; /* in the order of first use (_arenas) */
	size_t narenas;
	cp_heap_t heap;
	cp_chunk_t *spare; /* the next chunk's memory, taken ahead */
	bool hints;        /* recorded addresses decide ties */
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

/* Room for k more objects, so that neither cp_obj_new() nor cp_obj_free()
 * can fail after it.  Returns 0 or MSIM_ENOMEM. */
static int
cp_obj_reserve(cp_heap_t *h, size_t k)
{
	return MSIM_GROW(h->freed, h->cap, h->top + k, 64);
}

/* A new object's place: the block freed last, else a new one above. */
static uint64_t
cp_obj_new(cp_heap_t *h)
{
	return h->n ? h->freed[--h->n] : h->top++;
}

static void
cp_obj_free(cp_heap_t *h, uint64_t place)
{
	h->freed[h->n++] = place;
}

/* The first entry of a not before (size, obj). */
static size_t
cp_lower_bound(const cp_arena_t *a, uint64_t size, uint64_t obj)
{
	size_t lo = 0, hi = a->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const cp_ent_t *e = &a->v[mid];
		if (e->size < size || (e->size == size && e->obj < obj))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Room in a's index for k more chunks.  Returns 0 or MSIM_ENOMEM. */
static int
cp_index_reserve(cp_arena_t *a, size_t k)
{
	return MSIM_GROW(a->v, a->cap, a->n + k, 16);
}

/* _Arena.insert_chunk without the merge, into reserved room. */
static void
cp_index_insert(cp_arena_t *a, cp_chunk_t *c)
{
	size_t i = cp_lower_bound(a, c->ext.size, c->obj);
	memmove(&a->v[i + 1], &a->v[i], (a->n - i) * sizeof(*a->v));
	a->v[i] = (cp_ent_t){c->ext.size, c->obj, c};
	a->n++;
	a->bytes += c->ext.size;
	c->ext.indexed = true;
}

static void
cp_index_remove_at(cp_arena_t *a, size_t i)
{
	a->bytes -= a->v[i].size;
	a->v[i].c->ext.indexed = false;
	memmove(&a->v[i], &a->v[i + 1], (a->n - i - 1) * sizeof(*a->v));
	a->n--;
}

/* _Arena.try_remove_chunk for a chunk known to be in the index. */
static void
cp_index_remove(cp_arena_t *a, cp_chunk_t *c)
{
	cp_index_remove_at(a, cp_lower_bound(a, c->ext.size, c->obj));
}

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
 * to the device, its _Chunk object freed, in index order
 * (_Arena.free_all).  Returns whether any did. */
static bool
cp_free_all_blocks(cp_state_t *s)
{
	bool freed = false;
	for (size_t i = 0; i < s->narenas; i++) {
		cp_arena_t *a = s->arenas[i];
		size_t k = 0;
		for (size_t j = 0; j < a->n; j++) {
			cp_chunk_t *c = a->v[j].c;
			if (c->ext.prev || c->ext.next) {
				a->v[k++] = a->v[j];
				continue;
			}
			a->bytes -= c->ext.size;
			msim_device_free(s->dev, c->ext.addr, c->ext.size,
					 MSIM_POOL_LARGE);
			s->total -= c->ext.size;
			cp_obj_free(&s->heap, c->obj);
			free(c);
			freed = true;
		}
		a->n = k;
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

/* The memory of a new chunk (its fields zeroed), or NULL. */
static cp_chunk_t *
cp_chunk_take(cp_state_t *s)
{
	cp_chunk_t *c = s->spare ? s->spare : malloc(sizeof(*c));
	s->spare = NULL;
	if (c)
		*c = (cp_chunk_t){0};
	return c;
}

/* _Arena.get_chunk: the first chunk of at least size bytes in index order,
 * out of the index and split (_Chunk.split: the remainder, a new _Chunk,
 * goes back unmerged); NULL when none fits.  With s->hints, of the chunks
 * of that first chunk's size, the one starting at want (the recorded
 * address; 0: none), if any.  The caller reserved room for an object and
 * an index entry, and s->spare. */
static cp_chunk_t *
cp_get_chunk(cp_state_t *s, cp_arena_t *a, uint64_t size, msim_addr_t want)
{
	size_t i = cp_lower_bound(a, size, 0);
	if (i == a->n)
		return NULL;
	if (s->hints && want) {
		for (size_t j = i; j < a->n && a->v[j].size == a->v[i].size;
		     j++) {
			if (a->v[j].c->ext.addr == want) {
				i = j;
				break;
			}
		}
	}
	cp_chunk_t *c = a->v[i].c;
	cp_index_remove_at(a, i);
	if (c->ext.size == size)
		return c;
	cp_chunk_t *r = cp_chunk_take(s);
	r->obj = cp_obj_new(&s->heap);
	r->ext.addr = c->ext.addr + size;
	r->ext.size = c->ext.size - size;
	r->ext.owner = a;
	r->ext.prev = &c->ext;
	r->ext.next = c->ext.next;
	if (c->ext.next)
		c->ext.next->prev = &r->ext;
	c->ext.next = &r->ext;
	c->ext.size = size;
	cp_index_insert(a, r);
	return c;
}

static int
cp_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	cp_state_t *s = state;
	if (req->size > UINT64_MAX - CP_UNIT)
		return MSIM_EDEVOOM;
	uint64_t size = msim_ceil_to(req->size, CP_UNIT);
	cp_arena_t *a = cp_arena(s, req->stream);
	/* Everything that can run out of host memory, before any change. */
	if (!a || msim_live_put(&s->live, req->id, NULL) ||
	    cp_obj_reserve(&s->heap, 2) || cp_index_reserve(a, 1) ||
	    (!s->spare && !(s->spare = malloc(sizeof(*s->spare)))))
		return MSIM_ENOMEM;
	cp_chunk_t *c = cp_get_chunk(s, a, size, req->addr);
	if (!c) {
		msim_addr_t addr;
		if (cp_try_malloc(s, size, &addr)) {
			s->st.num_ooms++;
			msim_device_log_oom(s->dev, size);
			return MSIM_EDEVOOM;
		}
		c = cp_chunk_take(s);
		c->obj = cp_obj_new(&s->heap);
		c->ext.addr = addr;
		c->ext.size = size;
		c->ext.owner = a;
	}
	c->pmem = cp_obj_new(&s->heap); /* PooledMemory.__new__ */
	*addr_out = msim_kit_hand_out(&s->live, &s->st, MSIM_POOL_LARGE,
				      &c->ext, req);
	return 0;
}

/* SingleDeviceMemoryPool.free, then the PooledMemory's end: the chunk
 * merges (_Arena.try_merge_chunk) and goes back to its arena; the objects
 * freed on the way are freed in CuPy's order. */
static int
cp_free(void *state, const msim_req_t *req)
{
	cp_state_t *s = state;
	cp_chunk_t *c = msim_live_get(&s->live, req->id);
	if (!c)
		return MSIM_ENOTFOUND;
	cp_arena_t *a = c->ext.owner;
	if (cp_index_reserve(a, 1))
		return MSIM_ENOMEM;
	msim_live_take(&s->live, req->id);
	msim_kit_count_free(&s->st, MSIM_POOL_LARGE, c->ext.size,
			    c->ext.requested);
	c->ext.used = false;
	cp_chunk_t *n = (cp_chunk_t *)c->ext.next;
	if (n && n->ext.indexed) { /* merge_next: n's _Chunk dies now */
		cp_index_remove(a, n);
		c->ext.size += n->ext.size;
		c->ext.next = n->ext.next;
		if (c->ext.next)
			c->ext.next->prev = &c->ext;
		cp_obj_free(&s->heap, n->obj);
		free(n);
	}
	uint64_t pmem = c->pmem;
	cp_chunk_t *p = (cp_chunk_t *)c->ext.prev;
	if (p && p->ext.indexed) { /* into prev: c's _Chunk dies last */
		cp_index_remove(a, p);
		p->ext.size += c->ext.size;
		p->ext.next = c->ext.next;
		if (p->ext.next)
			p->ext.next->prev = &p->ext;
		cp_index_insert(a, p);
		cp_obj_free(&s->heap, c->obj);
		free(c);
	} else {
		cp_index_insert(a, c);
	}
	cp_obj_free(&s->heap, pmem); /* the PooledMemory itself */
	return 0;
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
		const cp_arena_t *a = s->arenas[i];
		for (size_t j = 0; j < a->n; j++)
			if (a->v[j].size > *largest_out)
				*largest_out = a->v[j].size;
		*total_out += a->bytes;
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
		cp_arena_t *a = s->arenas[i];
		for (size_t j = 0; j < a->n; j++)
			free(a->v[j].c);
		free(a->v);
		free(a);
	}
	free(s->arenas);
	free(s->heap.freed);
	free(s->spare);
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
	s->hints = msim_device_uses_hints(dev);
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
