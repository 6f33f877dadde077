/*
 * The vocabulary every module shares: simulated time, addresses, requests
 * and the statistics a policy reports.  Statistics carry the names and
 * meanings of torch.cuda.memory_stats(), so one set of figures compares
 * every policy with the real allocator and with the others.
 */
#ifndef MSIM_SIM_TYPES_H
#define MSIM_SIM_TYPES_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t msim_time_t;   /* simulated nanoseconds */
typedef uint64_t msim_addr_t;   /* simulated device address */
typedef uint64_t msim_stream_t; /* CUDA stream handle; 0 = default stream */

#define MSIM_MiB ((uint64_t)1 << 20)

/*
 * The largest size a request, a segment or a device may have: 2^62 bytes.
 * Rounding a size up (to a power of two at most doubles it) and adding two
 * sizes then never wrap around 2^64, and a byte count fits the int64_t
 * figures of msim_stat_t.  Readers and options reject anything larger.
 */
#define MSIM_SIZE_MAX ((uint64_t)1 << 62)

/* What a request asks of a policy. */
typedef enum msim_req_kind_e {
	MSIM_REQ_ALLOC = 0,     /* malloc(size) on stream; result named id */
	MSIM_REQ_FREE,          /* the block named id is back in the pool */
	MSIM_REQ_FREE_REQUESTED, /* the program freed id; completes later */
	MSIM_REQ_EMPTY_CACHE,   /* torch.cuda.empty_cache() */
	MSIM_REQ_SEGMENT_HINT,  /* a recorded segment address (not a request) */
	MSIM_REQ_RESET_PEAKS,   /* torch.cuda.reset_peak_memory_stats() */
	/* Private pools (CUDA graphs, torch.cuda.MemPool); addr = the
	 * pool's id (non-zero), as PyTorch's createOrIncrefPool,
	 * beginAllocateToPool (allocations on stream go to the pool),
	 * endAllocateToPool and releasePool; POOL_RESTORE is
	 * setCheckpointPoolState: the next size ALLOCs are the blocks of the
	 * pool's checkpointed segments, each placed at its addr. */
	MSIM_REQ_POOL_CREATE,
	MSIM_REQ_POOL_BEGIN,
	MSIM_REQ_POOL_END,
	MSIM_REQ_POOL_RELEASE,
	MSIM_REQ_POOL_RESTORE,
} msim_req_kind_t;

/* Flags of a request. */
#define MSIM_REQF_EXPECT_OOM 0x1 /* a recorded malloc that raised OOM */
/*
 * ALLOC only: the recording shows segments freed just before this malloc.
 * They were the malloc's own doing if the policy, in its current state,
 * would have to free memory to serve it (msim_policy_would_release());
 * otherwise the program called empty_cache() first, and the engine replays
 * that call before the malloc (docs/pytorch-allocator.md §11.2 b).
 */
#define MSIM_REQF_MAYBE_EMPTY_CACHE 0x2
/* Requests that rebuild the allocator state a partial history began in
 * (traces/trace.h, msim_trace_seeding()): a block allocated before the
 * history began, and a stand-in for a block that was free then. */
#define MSIM_REQF_SEED 0x4
#define MSIM_REQF_FILLER 0x8
/* POOL_CREATE only: the pool has an allocator of its own
 * (torch.cuda.MemPool(allocator)), which its segments come from instead of
 * cudaMalloc (docs/pytorch-allocator.md §1.4). */
#define MSIM_REQF_OWN_ALLOC 0x10
/* POOL_RELEASE only: ~MemPool's, which empties the pool's cache
 * (emptyCache(pool)) once its use count is 0. */
#define MSIM_REQF_EMPTY_POOL 0x20
/* POOL_CREATE only: MemPool(use_on_oom=True) (setUseOnOOM: a default-pool
 * malloc about to fail takes a cached block of the pool), and
 * MemPool(no_split=True) (setNoSplit: the pool's blocks are never split). */
#define MSIM_REQF_USE_ON_OOM 0x40
#define MSIM_REQF_NO_SPLIT 0x80

/*
 * One request.  Ids are dense slot numbers chosen by the source: an id is
 * live from its ALLOC to its FREE and may be reused afterwards, so a policy
 * can keep its live blocks in an array indexed by id.
 */
typedef struct msim_req_s {
	msim_time_t time;     /* when it happens */
	uint64_t size;        /* bytes asked for (ALLOC), 0 otherwise */
	msim_stream_t stream; /* stream of the request */
	msim_addr_t addr;     /* recorded address, 0 if none */
	uint32_t id;          /* slot of the block (ALLOC, FREE*) */
	uint8_t kind;         /* msim_req_kind_t */
	uint8_t flags;        /* MSIM_REQF_* */
	uint16_t tag;         /* ALLOC: what the block holds and where it was
			       * allocated, a tag of the source's table
			       * (msim_trace_tag()); 0 = untagged */
} msim_req_t;

/* One block of device memory as a policy holds it (a snapshot entry). */
enum { MSIM_BLOCK_ALLOCATED = 0, MSIM_BLOCK_FREE, MSIM_BLOCK_PENDING };
typedef struct msim_block_s {
	msim_addr_t addr;
	uint64_t size;  /* bytes */
	int state;      /* MSIM_BLOCK_* */
} msim_block_t;

/*
 * Where requests come from: a trace reader, a generator, a transform of
 * another source.  next returns 1, 0 at the end, or an error described by
 * errmsg.  The engine takes any source.
 */
typedef struct msim_source_s {
	int (*next)(void *ctx, msim_req_t *req_out);
	const char *(*errmsg)(void *ctx);
	void *ctx;
	/* May be NULL.  Else the next requests in bulk: 1 with *reqs_out
	 * pointing at n_out of them (valid until the next call), 0 at the
	 * end, or an error.  A source is read through one of next and batch,
	 * not both. */
	int (*batch)(void *ctx, const msim_req_t **reqs_out, size_t *n_out);
	/* May be NULL.  Else up to cap (>= 2) requests copied into v, *n_out
	 * of them in every case; returns 1 (more to come), 0 at the end, or
	 * an error.  Read-ahead fills its batches with it. */
	int (*fill)(void *ctx, msim_req_t *v, size_t cap, size_t *n_out);
} msim_source_t;

/*
 * One statistic as PyTorch keeps it: Stat {current, peak, allocated,
 * freed}.  On the hot path only current, peak and freed move: allocated is
 * always current + freed, so msim_stats_finish() fills it in when the
 * statistics are read.
 */
typedef struct msim_stat_s {
	int64_t current;   /* now */
	int64_t peak;      /* highest current since the start */
	int64_t allocated; /* sum of increases (see msim_stats_finish()) */
	int64_t freed;     /* sum of decreases */
} msim_stat_t;

/* Index of the pool-typed copies of a statistic (PyTorch's StatType). */
enum { MSIM_POOL_ALL = 0, MSIM_POOL_SMALL = 1, MSIM_POOL_LARGE = 2,
       MSIM_NPOOL = 3 };

/*
 * Every figure of torch.cuda.memory_stats() memsim models.  Arrays are
 * indexed by MSIM_POOL_*.  The X-macros list each field once with its
 * memory_stats name, for printing, JSON and the results database.
 */
#define MSIM_STAT_ARRAYS(XX)                                               \
	XX(allocation)                                                     \
	XX(allocated_bytes)                                                \
	XX(active)                                                         \
	XX(active_bytes)                                                   \
	XX(requested_bytes)                                                \
	XX(segment)                                                        \
	XX(reserved_bytes)                                                 \
	XX(inactive_split)                                                 \
	XX(inactive_split_bytes)
#define MSIM_STAT_SINGLES(XX)                                              \
	XX(oversize_allocations)                                           \
	XX(oversize_segments)
#define MSIM_STAT_COUNTERS(XX)                                             \
	XX(num_alloc_retries)                                              \
	XX(num_ooms)                                                       \
	XX(num_sync_all_streams)                                           \
	XX(num_device_alloc)                                               \
	XX(num_device_free)

typedef struct msim_stats_s {
#define XX(name) msim_stat_t name[MSIM_NPOOL];
	MSIM_STAT_ARRAYS(XX)
#undef XX
#define XX(name) msim_stat_t name;
	MSIM_STAT_SINGLES(XX)
#undef XX
#define XX(name) int64_t name;
	MSIM_STAT_COUNTERS(XX)
#undef XX
	int64_t max_split_size; /* bytes; -1 when unlimited */
} msim_stats_t;

/* current += n and peak follows. */
static inline void
msim_stat_inc(msim_stat_t *s, int64_t n)
{
	s->current += n;
	if (s->current > s->peak)
		s->peak = s->current;
}

/* current -= n. */
static inline void
msim_stat_dec(msim_stat_t *s, int64_t n)
{
	s->current -= n;
	s->freed += n;
}

/* Applies a signed change: an increase or a decrease, as PyTorch does. */
static inline void
msim_stat_add(msim_stat_t *s, int64_t n)
{
	if (n > 0)
		msim_stat_inc(s, n);
	else if (n < 0)
		msim_stat_dec(s, -n);
}

/* Updates the "all" copy and the copy of pool (MSIM_POOL_SMALL or _LARGE). */
static inline void
msim_stat2_inc(msim_stat_t *s, int pool, int64_t n)
{
	msim_stat_inc(&s[MSIM_POOL_ALL], n);
	msim_stat_inc(&s[pool], n);
}

static inline void
msim_stat2_dec(msim_stat_t *s, int pool, int64_t n)
{
	msim_stat_dec(&s[MSIM_POOL_ALL], n);
	msim_stat_dec(&s[pool], n);
}

static inline void
msim_stat2_add(msim_stat_t *s, int pool, int64_t n)
{
	msim_stat_add(&s[MSIM_POOL_ALL], n);
	msim_stat_add(&s[pool], n);
}

static_assert(offsetof(msim_stats_t, num_alloc_retries) %
		      sizeof(msim_stat_t) == 0,
	      "msim_stats_t starts with its msim_stat_t fields");

/* Sets every allocated field to current + freed (see msim_stat_t). */
static inline void
msim_stats_finish(msim_stats_t *st)
{
	msim_stat_t *s = (msim_stat_t *)st;
	size_t n = offsetof(msim_stats_t, num_alloc_retries) /
		   sizeof(msim_stat_t);
	for (size_t i = 0; i < n; i++)
		s[i].allocated = s[i].current + s[i].freed;
}

#endif
