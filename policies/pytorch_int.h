/*
 * For the files of the pytorch policy (policies/pytorch.c: the hot path,
 * alloc, free and release; pytorch_conf.c: the parameters and the state's
 * creation; pytorch_pools.c: private pools and CUDA graph captures;
 * pytorch_stats.c: what the engine reads of the state): the state, its
 * blocks, the sizes and the free sets, which every one of them walks.
 * The free-set functions are inline so that the hot path keeps them in
 * line.  Users include policies/pytorch.h only.
 */
#ifndef MSIM_POLICIES_PYTORCH_INT_H
#define MSIM_POLICIES_PYTORCH_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/policy.h"
#include "policies/pytorch.h"

#include "sim/grow.h"

#define PT_MIN_BLOCK 512
#define PT_SMALL_SIZE MSIM_MiB           /* small pool: rounded <= 1 MiB */
#define PT_SMALL_BUFFER (2 * MSIM_MiB)   /* small-pool segment size */
#define PT_MIN_LARGE_ALLOC (10 * MSIM_MiB) /* below: a large_segment */
#define PT_ROUND_LARGE (2 * MSIM_MiB)    /* larger segments: 2 MiB steps */
#define PT_UNLIMITED UINT64_MAX

#define PT_NBINS 1664 /* pt_bin() of the largest 64-bit size, rounded up */
#define PT_NWORDS (PT_NBINS / 64)

enum { PT_SMALL = 0, PT_LARGE = 1 };          /* pool index */
enum { B_FREE = 0, B_ALLOC = 1, B_PENDING = 2 }; /* block state */

/* The statistics pool of a pool index. */
#define PT_STATPOOL(pool) ((pool) + 1)

typedef struct pt_stream_s pt_stream_t;
typedef struct pt_block_s pt_block_t;
typedef struct pt_ppool_s pt_ppool_t;

/* One expandable segment: a virtual reservation mapped page by page. */
typedef struct pt_xseg_s {
	msim_addr_t base;
	uint64_t size; /* bytes reserved: a whole number of pages */
	uint64_t page; /* 2 MiB (small pool) or large_segment_size */
	struct pt_xseg_s *next; /* all live reservations */
} pt_xseg_t;

/* The fields the free-set walk (fs_insert(), fs_lower_bound()) and the
 * merge checks read come first: with blocks 32-byte aligned they share
 * one cache line. */
struct pt_block_s {
	uint64_t size;            /* bytes */
	msim_addr_t ptr;
	pt_block_t *fnext;        /* free-set bin list; spare-list link */
	uint16_t bin;
	uint8_t pool;   /* PT_SMALL or PT_LARGE */
	uint8_t state;  /* B_FREE, B_ALLOC, B_PENDING */
	uint8_t mapped; /* 0 only for unmapped ranges of expandable segments */
	uint8_t deferred; /* freed with record_stream uses during a capture */
	pt_block_t *fprev;
	pt_block_t *prev, *next;  /* address neighbours in the segment */
	pt_stream_t *st;
	pt_xseg_t *xseg;  /* expandable segment, or NULL */
	uint64_t gc_base; /* pool's lookup count when inserted */
	uint64_t requested;       /* bytes the caller asked for */
} __attribute__((aligned(32)));

typedef struct pt_freeset_s {
	pt_block_t *head[PT_NBINS];
	uint64_t map[PT_NWORDS]; /* bit: bin non-empty */
	uint32_t summary;        /* bit w: map[w] != 0 */
} pt_freeset_t;

static_assert(PT_NWORDS <= 32, "summary bitmap is 32 bits");

struct pt_stream_s {
	msim_stream_t handle;
	pt_freeset_t fs[2];       /* PT_SMALL, PT_LARGE */
	pt_block_t *unmapped[2];  /* unmapped ranges, by address (fnext) */
	pt_ppool_t *pp;           /* its private pool; NULL: the default */
};

/* A private pool (PyTorch's PrivatePool) and its free sets. */
struct pt_ppool_s {
	uint64_t id;          /* MempoolId, non-zero */
	int64_t use_count;    /* create_or_incref_pool() minus releasePool() */
	int64_t nmalloc;      /* cudaMalloc_count: segments obtained less
			       * released */
	int64_t nlive;        /* blocks handed out and not yet back */
	bool freeable;        /* in graph_pools_freeable */
	bool own_alloc;       /* segments from the pool's own allocator */
	bool use_on_oom;      /* in use_on_oom_pools (setUseOnOOM) */
	bool no_split;        /* in no_split_pools (setNoSplit) */
	pt_stream_t **streams; /* sorted by handle */
	size_t nstreams;
};

/* One entry of captures_underway: allocations on stream go to pool. */
typedef struct pt_capture_s {
	uint64_t pool;
	msim_stream_t stream;
} pt_capture_t;

typedef struct pt_slab_s {
	struct pt_slab_s *next;
	pt_block_t blocks[256];
} pt_slab_t;

typedef struct pt_state_s {
	msim_device_t *dev;
	/* configuration */
	uint64_t max_split;     /* M: bytes, PT_UNLIMITED when off */
	uint64_t nonsplit_tol;  /* R: bytes */
	uint64_t large_segment; /* bytes */
	double gc_threshold;    /* 0 = off */
	uint64_t cap;           /* allowed_memory_maximum; 0 = none */
	bool gc_enabled;
	bool expandable;        /* expandable_segments:True */
	bool graph_reuse;       /* graph_capture_record_stream_reuse:True */
	uint8_t rp2[16]; /* roundup_power2_divisions per size interval */
	bool rp2_any;    /* some interval has divisions (> 1) */
	/* state */
	uint64_t total_allocated; /* bytes obtained from the device */
	uint64_t free_bytes;      /* bytes in free sets */
	uint64_t gc_calls[2];     /* get_free_block calls per pool */
	pt_stream_t **streams;    /* sorted by handle */
	size_t nstreams;
	pt_stream_t *last_stream;
	pt_block_t **live; /* by request id */
	size_t nlive;
	pt_block_t *spare; /* unused block structs */
	size_t nspare;
	pt_slab_t *slabs;
	pt_xseg_t *xsegs;  /* expandable segments */
	pt_ppool_t **ppools; /* graph_pools, in creation order */
	size_t nppools;
	pt_capture_t *captures; /* captures_underway, in order */
	size_t ncaptures, capcaptures;
	/* Deferred blocks whose free_completed came while a capture was
	 * underway (graph_capture_record_stream_reuse off): still pending,
	 * back to their pools once no capture is. */
	pt_block_t **held;
	size_t nheld, capheld;
	/* The block of the last free_requested, while no other request has
	 * come since: a free_completed of it now is a plain free()'s. */
	pt_block_t *fr_last;
	/* setCheckpointPoolState underway: the next restore_left allocs are
	 * placed in restore_pp at their recorded addresses. */
	pt_ppool_t *restore_pp;
	uint64_t restore_left;
	uint64_t restore_delta; /* placed address less recorded address */
	bool restore_have_delta;
	msim_stats_t st; /* the policy's part of the statistics */
	/* Blocks freed by the caller whose free_block() has not come yet
	 * (B_PENDING): count and bytes by statistics pool.  active and
	 * active_bytes are allocation and allocated_bytes plus these, derived
	 * in msim_pt_stats() rather than kept at every request
	 * (pt_active_peak()). */
	int64_t pend_n[MSIM_NPOOL], pend_bytes[MSIM_NPOOL];
} pt_state_t;

/*
 * Whether s is in the plain configuration, PyTorch's defaults: no
 * roundup_power2_divisions, no garbage collection, no expandable segments,
 * no max_split_size, no capture underway, no private pool (so no block in
 * one) and no deferred block held (hold()).  The request functions take it
 * as a constant (plain), for which the compiler drops the checks of those
 * features: pt_serve() runs a copy of the lean loop for each case.  A batch
 * cannot leave the configuration: captures and pools begin and end with
 * requests the lean loop leaves to the engine.
 */
static inline bool
pt_plain(const pt_state_t *s)
{
	return !s->rp2_any && !s->gc_enabled && !s->expandable &&
	       s->max_split == PT_UNLIMITED && !s->ncaptures && !s->nppools &&
	       !s->nheld;
}

/* Whether a block of size bytes is oversize (size >= max_split_size):
 * never when plain (no max_split_size). */
static inline bool
pt_oversize(const pt_state_t *s, uint64_t size, const bool plain)
{
	return !plain && size >= s->max_split;
}

/* ---------------------------------------------------------------- */
/* Sizes                                                             */

static inline uint64_t
ceil_to(uint64_t x, uint64_t m)
{
	return (x + m - 1) / m * m;
}

static inline unsigned
log2_floor(uint64_t x)
{
	return 63u - (unsigned)__builtin_clzll(x);
}

/* round_size(): the block size a request of req bytes asks for (plain:
 * see pt_plain()). */
static inline uint64_t
pt_round(const pt_state_t *s, uint64_t req, const bool plain)
{
	if (req < PT_MIN_BLOCK)
		return PT_MIN_BLOCK;
	if (plain || !s->rp2_any)
		return ceil_to(req, PT_MIN_BLOCK);
	int ix = (int)log2_floor(req) - 20;
	ix = ix < 0 ? 0 : ix > 15 ? 15 : ix;
	uint64_t d = s->rp2[ix];
	if (d > 1 && req > PT_MIN_BLOCK * d) {
		if ((req & (req - 1)) == 0)
			return req;
		uint64_t floor2 = (uint64_t)1 << log2_floor(req);
		uint64_t step = floor2 >> log2_floor(d);
		if (step == 0)
			return floor2 << 1;
		uint64_t r = req & ~(step - 1);
		return r == req ? req : r + step;
	}
	return ceil_to(req, PT_MIN_BLOCK);
}

static inline uint64_t
pt_segment_size(const pt_state_t *s, uint64_t size)
{
	return msim_pytorch_segment_size(size, s->large_segment);
}

/* ---------------------------------------------------------------- */
/* Free sets                                                         */

/* The walks over a free set (in order, backwards, the first, the last):
 * static but not inline, as when they were pytorch.c's own, so that GCC
 * decides as it did how much of them to put in line in the hot path
 * (fs_next() partly); unused where a file does not walk. */
#define PT_WALK static __attribute__((unused))

static inline unsigned
pt_bin(uint64_t size)
{
	uint64_t u = size >> 9;
	if (u < 128)
		return (unsigned)u;
	unsigned fl = log2_floor(u);
	unsigned sl = (unsigned)(u >> (fl - 5)) & 31;
	return 128 + (fl - 7) * 32 + sl;
}

static inline bool
blk_less(const pt_block_t *a, const pt_block_t *b)
{
	return a->size < b->size || (a->size == b->size && a->ptr < b->ptr);
}

/* First non-empty bin >= from, or PT_NBINS. */
static inline unsigned
fs_next_bin(const pt_freeset_t *fs, unsigned from)
{
	unsigned w = from / 64;
	if (w >= PT_NWORDS)
		return PT_NBINS;
	uint64_t m = fs->map[w] & (~UINT64_C(0) << (from % 64));
	if (m)
		return w * 64 + (unsigned)__builtin_ctzll(m);
	uint32_t sm = fs->summary & ~((UINT32_C(2) << w) - 1);
	if (!sm)
		return PT_NBINS;
	w = (unsigned)__builtin_ctz(sm);
	return w * 64 + (unsigned)__builtin_ctzll(fs->map[w]);
}

/* Last non-empty bin <= from (from < PT_NBINS), or PT_NBINS. */
PT_WALK unsigned
fs_prev_bin(const pt_freeset_t *fs, unsigned from)
{
	unsigned w = from / 64;
	uint64_t m = fs->map[w] & (~UINT64_C(0) >> (63 - from % 64));
	if (m)
		return w * 64 + log2_floor(m);
	uint32_t sm = fs->summary & ((UINT32_C(1) << w) - 1);
	if (!sm)
		return PT_NBINS;
	w = 31u - (unsigned)__builtin_clz(sm);
	return w * 64 + log2_floor(fs->map[w]);
}

/* Links b into the sorted list at *pp, before the first element that is
 * not less than it (fnext/fprev links). */
static inline void
list_insert(pt_block_t **pp, pt_block_t *b,
	    bool (*less)(const pt_block_t *, const pt_block_t *))
{
	pt_block_t *prev = NULL;
	while (*pp && less(*pp, b)) {
		prev = *pp;
		pp = &prev->fnext;
	}
	b->fnext = *pp;
	b->fprev = prev;
	if (*pp)
		(*pp)->fprev = b;
	*pp = b;
}

/* Unlinks b from the list whose first element is *head. */
static inline void
list_remove(pt_block_t **head, pt_block_t *b)
{
	if (b->fprev)
		b->fprev->fnext = b->fnext;
	else
		*head = b->fnext;
	if (b->fnext)
		b->fnext->fprev = b->fprev;
}

static inline void
fs_insert(pt_state_t *s, pt_freeset_t *fs, pt_block_t *b)
{
	unsigned bin = pt_bin(b->size);
	list_insert(&fs->head[bin], b, blk_less);
	b->bin = (uint16_t)bin;
	b->gc_base = s->gc_calls[b->pool];
	fs->map[bin / 64] |= UINT64_C(1) << (bin % 64);
	fs->summary |= UINT32_C(1) << (bin / 64);
	s->free_bytes += b->size;
}

static inline void
fs_remove(pt_state_t *s, pt_freeset_t *fs, pt_block_t *b)
{
	list_remove(&fs->head[b->bin], b);
	if (!fs->head[b->bin]) {
		unsigned w = b->bin / 64;
		fs->map[w] &= ~(UINT64_C(1) << (b->bin % 64));
		if (!fs->map[w])
			fs->summary &= ~(UINT32_C(1) << w);
	}
	s->free_bytes -= b->size;
}

/* The smallest free block of size >= size, ties to the lowest address. */
static inline pt_block_t *
fs_lower_bound(const pt_freeset_t *fs, uint64_t size)
{
	unsigned bin = pt_bin(size);
	for (pt_block_t *b = fs->head[bin]; b; b = b->fnext)
		if (b->size >= size)
			return b;
	bin = fs_next_bin(fs, bin + 1);
	return bin < PT_NBINS ? fs->head[bin] : NULL;
}

PT_WALK pt_block_t *
fs_first(const pt_freeset_t *fs)
{
	unsigned bin = fs_next_bin(fs, 0);
	return bin < PT_NBINS ? fs->head[bin] : NULL;
}

PT_WALK pt_block_t *
fs_next(const pt_freeset_t *fs, const pt_block_t *b)
{
	if (b->fnext)
		return b->fnext;
	unsigned bin = fs_next_bin(fs, b->bin + 1u);
	return bin < PT_NBINS ? fs->head[bin] : NULL;
}

PT_WALK pt_block_t *
bin_tail(const pt_freeset_t *fs, unsigned bin)
{
	pt_block_t *b = fs->head[bin];
	while (b->fnext)
		b = b->fnext;
	return b;
}

/* The block before b in set order; b == NULL gives the last block. */
PT_WALK pt_block_t *
fs_prev(const pt_freeset_t *fs, const pt_block_t *b)
{
	if (b && b->fprev)
		return b->fprev;
	if (b && b->bin == 0)
		return NULL;
	unsigned bin = fs_prev_bin(fs, b ? b->bin - 1u : PT_NBINS - 1u);
	return bin < PT_NBINS ? bin_tail(fs, bin) : NULL;
}

/* ---------------------------------------------------------------- */
/* Blocks and private pools                                          */

static inline bool
blk_is_split(const pt_block_t *b)
{
	return b->prev || b->next;
}

static inline pt_ppool_t *
ppool_find(const pt_state_t *s, uint64_t id)
{
	for (size_t i = 0; i < s->nppools; i++)
		if (s->ppools[i]->id == id)
			return s->ppools[i];
	return NULL;
}

/* The capture a request on stream handle allocates for (get_pool()), or
 * NULL: the default pool. */
static inline const pt_capture_t *
capture_of(const pt_state_t *s, msim_stream_t handle)
{
	for (size_t i = 0; i < s->ncaptures; i++)
		if (s->captures[i].stream == handle)
			return &s->captures[i];
	return NULL;
}

/* Whether a pool takes part in try_mempool_fallback(): in
 * use_on_oom_pools and still in use (create_or_incref_pool() refuses a
 * pool whose use count is 0). */
static inline bool
fallback_pool(const pt_ppool_t *pp)
{
	return pp->use_on_oom && pp->use_count > 0;
}

/* ---------------------------------------------------------------- */
/* Shared between the files                                          */

/* pytorch_conf.c: the parameters (PyTorch's alloc-conf keys) and the
 * state they make (ops->create). */
extern const msim_param_spec_t msim_pt_params[];
int msim_pt_create(void **state_out, msim_device_t *dev,
		   const msim_params_t *pv, char *why, size_t whylen);

/* pytorch.c: release_blocks() of one pool over the streams v[0..nv), in
 * set order; the held deferred blocks back to their pools.  Return 0 or
 * MSIM_ENOMEM. */
int msim_pt_release_streams(pt_state_t *s, pt_stream_t **v, size_t nv,
			    int pool);
void msim_pt_release_held(pt_state_t *s);

/* pytorch_pools.c: release_cached_blocks() (empty_cache, the OOM retry);
 * ops->pool (create, begin, end, release, restore of a private pool);
 * a private pool's memory. */
int msim_pt_release_cached(pt_state_t *s);
int msim_pt_pool(void *state, const msim_req_t *req);
void msim_pt_ppool_destroy(pt_ppool_t *pp);

/* pytorch_stats.c: ops->would_release, ->stats, ->sample, ->free_info,
 * ->blocks. */
bool msim_pt_would_release(const void *state, const msim_req_t *req);
void msim_pt_stats(const void *state, msim_stats_t *out);
void msim_pt_sample(const void *state, int64_t *allocated_out,
		    int64_t *active_out, int64_t *requested_out);
void msim_pt_free_info(const void *state, uint64_t *largest_out,
		       uint64_t *total_out);
void msim_pt_blocks(const void *state,
		    void (*fn)(void *ctx, const msim_block_t *b), void *ctx);

#endif
