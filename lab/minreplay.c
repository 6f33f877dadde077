/* The minimal replay of minreplay.h. */
#include <config.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lab/minreplay.h"
#include "sim/device.h"
#include "sim/error.h"
#include "sim/grow.h"
#include "sim/units.h"

/* PyTorch's constants (docs/pytorch-allocator.md). */
#define MR_MIN_BLOCK 512                 /* kMinBlockSize */
#define MR_SMALL_SIZE MSIM_MiB           /* kSmallSize */
#define MR_SMALL_BUFFER (2 * MSIM_MiB)   /* kSmallBuffer */
#define MR_LARGE_BUFFER (20 * MSIM_MiB)  /* kLargeBuffer */
#define MR_MIN_LARGE_ALLOC (10 * MSIM_MiB) /* kMinLargeAlloc */
#define MR_ROUND_LARGE (2 * MSIM_MiB)    /* kRoundLarge */

enum { MR_SMALL = 0, MR_LARGE = 1 };
enum { MR_FREE = 0, MR_ALLOC, MR_PENDING };

/* Size classes: exact below 64 KiB, then 32 a power of two. */
#define MR_NBINS (128 + 47 * 32)
#define MR_NWORDS ((MR_NBINS + 63) / 64)

typedef struct mr_block_s {
	uint64_t addr, size, requested;
	struct mr_block_s *prev, *next;   /* neighbours in the segment */
	struct mr_block_s *fprev, *fnext; /* in the bin, (size, addr) order */
	uint16_t bin;
	uint8_t pool, state;
} mr_block_t;

typedef struct mr_set_s {
	mr_block_t *head[MR_NBINS];
	uint64_t words[MR_NWORDS]; /* non-empty bins */
	uint64_t summary;          /* non-zero words */
} mr_set_t;

#define MR_SLAB 4096
struct msim_minreplay_s {
	mr_set_t fs[2];
	mr_block_t **live; /* by request id */
	size_t nlive;
	mr_block_t *spare; /* unused block structs, through fnext */
	mr_block_t **slabs;
	size_t nslabs;
	msim_device_t *dev;
	uint64_t max_split; /* max_split_size: unlimited by default */
	msim_stream_t stream;
	bool have_stream;
	msim_minreplay_stats_t st;
};

static inline void
st_add(msim_minstat_t *s, int64_t d)
{
	s->cur += d;
	if (s->cur > s->peak)
		s->peak = s->cur;
}

static inline unsigned
log2_floor(uint64_t x)
{
	return 63u - (unsigned)__builtin_clzll(x);
}

/* round_size() with roundup_power2_divisions unset. */
static inline uint64_t
mr_round(uint64_t req)
{
	if (req < MR_MIN_BLOCK)
		return MR_MIN_BLOCK;
	return (req + MR_MIN_BLOCK - 1) / MR_MIN_BLOCK * MR_MIN_BLOCK;
}

/* get_allocation_size(). */
static inline uint64_t
mr_segment_size(uint64_t size)
{
	if (size <= MR_SMALL_SIZE)
		return MR_SMALL_BUFFER;
	if (size < MR_MIN_LARGE_ALLOC)
		return MR_LARGE_BUFFER;
	return (size + MR_ROUND_LARGE - 1) / MR_ROUND_LARGE * MR_ROUND_LARGE;
}

static inline unsigned
mr_bin(uint64_t size)
{
	uint64_t u = size >> 9;
	if (u < 128)
		return (unsigned)u;
	unsigned fl = log2_floor(u);
	unsigned sl = (unsigned)(u >> (fl - 5)) & 31;
	return 128 + (fl - 7) * 32 + sl;
}

static inline bool
mr_less(const mr_block_t *a, const mr_block_t *b)
{
	return a->size != b->size ? a->size < b->size : a->addr < b->addr;
}

static inline void
set_insert(mr_set_t *fs, mr_block_t *b)
{
	unsigned bin = mr_bin(b->size);
	b->bin = (uint16_t)bin;
	mr_block_t **pp = &fs->head[bin], *prev = NULL;
	while (*pp && mr_less(*pp, b)) {
		prev = *pp;
		pp = &(*pp)->fnext;
	}
	b->fnext = *pp;
	b->fprev = prev;
	if (*pp)
		(*pp)->fprev = b;
	*pp = b;
	fs->words[bin >> 6] |= UINT64_C(1) << (bin & 63);
	fs->summary |= UINT64_C(1) << (bin >> 6);
}

static inline void
set_remove(mr_set_t *fs, mr_block_t *b)
{
	unsigned bin = b->bin;
	if (b->fprev)
		b->fprev->fnext = b->fnext;
	else
		fs->head[bin] = b->fnext;
	if (b->fnext)
		b->fnext->fprev = b->fprev;
	if (!fs->head[bin]) {
		fs->words[bin >> 6] &= ~(UINT64_C(1) << (bin & 63));
		if (!fs->words[bin >> 6])
			fs->summary &= ~(UINT64_C(1) << (bin >> 6));
	}
}

/* The first block of (size, address) >= (size, 0): the lower_bound of
 * get_free_block. */
static inline mr_block_t *
set_lower_bound(const mr_set_t *fs, uint64_t size)
{
	unsigned bin = mr_bin(size);
	for (mr_block_t *b = fs->head[bin]; b; b = b->fnext)
		if (b->size >= size)
			return b;
	unsigned from = bin + 1, w = from >> 6;
	if (w < MR_NWORDS) {
		uint64_t bits = (from & 63) ? fs->words[w] &
			(~UINT64_C(0) << (from & 63)) : fs->words[w];
		if (bits)
			return fs->head[(w << 6) + (unsigned)__builtin_ctzll(bits)];
		uint64_t sw = w + 1 < 64 ? fs->summary &
			(~UINT64_C(0) << (w + 1)) : 0;
		if (sw) {
			unsigned w2 = (unsigned)__builtin_ctzll(sw);
			return fs->head[(w2 << 6) +
				(unsigned)__builtin_ctzll(fs->words[w2])];
		}
	}
	return NULL;
}

static mr_block_t *
blk_new(msim_minreplay_t *m)
{
	if (!m->spare) {
		mr_block_t **v = realloc(m->slabs,
					 (m->nslabs + 1) * sizeof(*v));
		if (!v)
			return NULL;
		m->slabs = v;
		mr_block_t *s = malloc(MR_SLAB * sizeof(*s));
		if (!s)
			return NULL;
		m->slabs[m->nslabs++] = s;
		for (size_t i = 0; i < MR_SLAB; i++) {
			s[i].fnext = m->spare;
			m->spare = &s[i];
		}
	}
	mr_block_t *b = m->spare;
	m->spare = b->fnext;
	return b;
}

static inline void
blk_put(msim_minreplay_t *m, mr_block_t *b)
{
	b->fnext = m->spare;
	m->spare = b;
}

int
msim_minreplay_new(msim_minreplay_t **out)
{
	msim_minreplay_t *m = calloc(1, sizeof(*m));
	msim_device_config_t cfg = {0};
	if (!m || !(m->dev = msim_device_new(&cfg))) {
		free(m);
		return MSIM_ENOMEM;
	}
	m->max_split = UINT64_MAX;
	*out = m;
	return 0;
}

void
msim_minreplay_destroy(msim_minreplay_t *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nslabs; i++)
		free(m->slabs[i]);
	free(m->slabs);
	free(m->live);
	msim_device_destroy(m->dev);
	free(m);
}

void
msim_minreplay_stats(const msim_minreplay_t *m, msim_minreplay_stats_t *out)
{
	*out = m->st;
}

static int
live_grow(msim_minreplay_t *m, uint32_t id)
{
	return MSIM_GROW_ZERO(m->live, m->nlive, (size_t)id + 1, 1024);
}

/* malloc(): get_free_block, else a new segment; then
 * alloc_found_block. */
static inline int
mr_alloc(msim_minreplay_t *m, uint32_t id, uint64_t req)
{
	if (id >= m->nlive && live_grow(m, id))
		return MSIM_ENOMEM;
	if (m->live[id])
		return MSIM_EINVAL;
	uint64_t size = mr_round(req);
	int pool = size <= MR_SMALL_SIZE ? MR_SMALL : MR_LARGE;
	mr_set_t *fs = &m->fs[pool];
	mr_block_t *b = set_lower_bound(fs, size);
	/* get_free_block's max_split_size checks. */
	if (b && ((size < m->max_split && b->size >= m->max_split) ||
		  (size >= m->max_split &&
		   b->size >= size + MR_LARGE_BUFFER)))
		b = NULL;
	if (b) {
		set_remove(fs, b);
	} else {
		uint64_t seg = mr_segment_size(size);
		msim_addr_t addr;
		/* A full device: PyTorch would free cached blocks and
		 * retry, which this path does not model. */
		if (msim_device_malloc(m->dev, seg, pool == MR_SMALL ?
				       MSIM_POOL_SMALL : MSIM_POOL_LARGE,
				       &addr))
			return MSIM_ENOTSUP;
		if (!(b = blk_new(m)))
			return MSIM_ENOMEM;
		*b = (mr_block_t){.addr = addr, .size = seg,
				  .pool = (uint8_t)pool};
		st_add(&m->st.reserved, (int64_t)seg);
		st_add(&m->st.segment, 1);
	}
	uint64_t remaining = b->size - size;
	bool split = pool == MR_SMALL ? remaining >= MR_MIN_BLOCK
		     : size < m->max_split && remaining > MR_SMALL_SIZE;
	bool already_split = b->prev || b->next;
	if (split) {
		mr_block_t *rest = b;
		if (!(b = blk_new(m)))
			return MSIM_ENOMEM;
		b->addr = rest->addr;
		b->size = size;
		b->pool = rest->pool;
		b->prev = rest->prev;
		b->next = rest;
		if (b->prev)
			b->prev->next = b;
		rest->prev = b;
		rest->addr += size;
		rest->size -= size;
		set_insert(fs, rest);
		if (already_split) {
			st_add(&m->st.inactive_split_bytes, -(int64_t)size);
		} else {
			st_add(&m->st.inactive_split_bytes,
			       (int64_t)rest->size);
			st_add(&m->st.inactive_split, 1);
		}
	} else if (already_split) {
		st_add(&m->st.inactive_split_bytes, -(int64_t)b->size);
		st_add(&m->st.inactive_split, -1);
	}
	b->state = MR_ALLOC;
	b->requested = req;
	st_add(&m->st.allocated, (int64_t)b->size);
	st_add(&m->st.active, (int64_t)b->size);
	st_add(&m->st.requested, (int64_t)req);
	m->live[id] = b;
	return 0;
}

/* Merges the free neighbour src into b (free_block's try_merge_blocks);
 * the bytes absorbed. */
static inline uint64_t
mr_merge(msim_minreplay_t *m, mr_block_t *b, mr_block_t *src)
{
	if (!src || src->state != MR_FREE)
		return 0;
	set_remove(&m->fs[src->pool], src);
	if (b->prev == src) {
		b->addr = src->addr;
		b->prev = src->prev;
		if (b->prev)
			b->prev->next = b;
	} else {
		b->next = src->next;
		if (b->next)
			b->next->prev = b;
	}
	b->size += src->size;
	uint64_t n = src->size;
	blk_put(m, src);
	return n;
}

/* free(): the caller's part (allocated bytes drop). */
static inline int
mr_free_requested(msim_minreplay_t *m, uint32_t id)
{
	mr_block_t *b = id < m->nlive ? m->live[id] : NULL;
	if (!b || b->state != MR_ALLOC)
		return MSIM_ENOTFOUND;
	b->state = MR_PENDING;
	st_add(&m->st.allocated, -(int64_t)b->size);
	return 0;
}

/* free_block(): merge with free neighbours, back into the pool. */
static inline int
mr_free(msim_minreplay_t *m, uint32_t id)
{
	mr_block_t *b = id < m->nlive ? m->live[id] : NULL;
	if (!b)
		return MSIM_ENOTFOUND;
	if (b->state == MR_ALLOC)
		st_add(&m->st.allocated, -(int64_t)b->size);
	m->live[id] = NULL;
	uint64_t original = b->size, n;
	int64_t net_blocks = 0, net_bytes = 0;
	if ((n = mr_merge(m, b, b->prev))) {
		net_blocks--;
		net_bytes -= (int64_t)n;
	}
	if ((n = mr_merge(m, b, b->next))) {
		net_blocks--;
		net_bytes -= (int64_t)n;
	}
	b->state = MR_FREE;
	set_insert(&m->fs[b->pool], b);
	if (b->prev || b->next) {
		net_blocks++;
		net_bytes += (int64_t)b->size;
	}
	st_add(&m->st.inactive_split, net_blocks);
	st_add(&m->st.inactive_split_bytes, net_bytes);
	st_add(&m->st.active, -(int64_t)original);
	st_add(&m->st.requested, -(int64_t)b->requested);
	return 0;
}

/* empty_cache(): release_cached_blocks frees every unsplit free block. */
static void
mr_empty_cache(msim_minreplay_t *m)
{
	for (int pool = 0; pool < 2; pool++) {
		mr_set_t *fs = &m->fs[pool];
		for (unsigned bin = 0; bin < MR_NBINS; bin++) {
			mr_block_t *next;
			for (mr_block_t *b = fs->head[bin]; b; b = next) {
				next = b->fnext;
				if (b->prev || b->next)
					continue;
				set_remove(fs, b);
				msim_device_free(m->dev, b->addr, b->size,
						 pool == MR_SMALL ?
						 MSIM_POOL_SMALL :
						 MSIM_POOL_LARGE);
				st_add(&m->st.reserved, -(int64_t)b->size);
				st_add(&m->st.segment, -1);
				blk_put(m, b);
			}
		}
	}
}

static void
mr_reset_peaks(msim_minreplay_t *m)
{
	msim_minstat_t *v[] = {&m->st.allocated, &m->st.reserved,
		&m->st.requested, &m->st.active, &m->st.inactive_split,
		&m->st.inactive_split_bytes, &m->st.segment};
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++)
		v[i]->peak = v[i]->cur;
}

int
msim_minreplay_apply(msim_minreplay_t *m, const msim_req_t *v, size_t n,
		     size_t *at_out)
{
	int rc = 0;
	size_t i;
	for (i = 0; i < n; i++) {
		const msim_req_t *r = &v[i];
		if (r->flags) {
			rc = MSIM_ENOTSUP;
			break;
		}
		switch (r->kind) {
		case MSIM_REQ_ALLOC:
			if (r->stream != m->stream) {
				if (m->have_stream) {
					rc = MSIM_ENOTSUP;
					break;
				}
				m->stream = r->stream;
			}
			m->have_stream = true;
			rc = mr_alloc(m, r->id, r->size);
			m->st.requests++;
			break;
		case MSIM_REQ_FREE:
			rc = mr_free(m, r->id);
			m->st.requests++;
			break;
		case MSIM_REQ_FREE_REQUESTED:
			rc = mr_free_requested(m, r->id);
			break;
		case MSIM_REQ_SEGMENT_HINT:
			break; /* recorded addresses are not used */
		case MSIM_REQ_EMPTY_CACHE:
			mr_empty_cache(m);
			break;
		case MSIM_REQ_RESET_PEAKS:
			mr_reset_peaks(m);
			break;
		default:
			rc = MSIM_ENOTSUP;
			break;
		}
		if (rc)
			break;
	}
	if (at_out)
		*at_out = i;
	return rc;
}
