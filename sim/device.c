/*
 * The device model: counting, capacity and cap, the event log, and the
 * default placement backend.
 *
 * Placement (docs/pytorch-allocator.md §13; CUDA 13.0 / driver 580 on the
 * H200): virtual address space is carved in chunks of ceil_to(size, 32 MiB),
 * 32 MiB aligned.  A segment that opens a chunk sits at its start and leaves
 * the rest as a hole.  A cudaMalloc first tries holes, newest chunk first and
 * inside a chunk the lowest hole that fits; otherwise a new chunk goes at the
 * top of the highest free gap strictly larger than the chunk (the space below
 * every chunk always qualifies).  A cudaFree gives the range back to its
 * chunk; a chunk whose last segment is freed becomes free gap at once.  The
 * CUDA context holds the 512 MiB directly above the first chunk, with two
 * holes: 2 MiB at +414 MiB and one at +488 MiB measured to be 22 to 26 MiB
 * wide (a 20 MiB and a 14 MiB segment fitted, a 26 MiB one did not; we take
 * 24 MiB).  Only the order of addresses matters to the policies, so the
 * base is arbitrary.  Chunks and holes are few (hundreds), so plain arrays
 * and linear scans are the right tools; cudaMalloc is rare next to malloc.
 *
 * In a JAX (XLA) process the same driver places differently (docs/bfc.md
 * §2, measured with JAX 0.11.2): the runtime leaves one 16 MiB hole above
 * everything, which the first allocations fill, and a new chunk goes at the
 * lowest free address at or above 0x302000000 that it fits, so chunks go up
 * in address (msim_device_set_layout()).
 */
#include <config.h>

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim/device.h"
#include "sim/error.h"
#include "sim/grow.h"
#include "sim/timemodel.h"

#define VA_CHUNK (32 * MSIM_MiB)
#define VA_BASE UINT64_C(0x600000000000) /* top of the first chunk */
#define VA_CONTEXT_SIZE (512 * MSIM_MiB)
/* The lowest address the driver hands out: expandable reservations
 * (docs/pytorch-allocator.md §13 f) and new chunks in a JAX process. */
#define VA_RESERVE_BASE UINT64_C(0x302000000)
#define VA_JAX_HOLE (16 * MSIM_MiB)

typedef struct va_range_s {
	msim_addr_t base;
	uint64_t size;
} va_range_t;

typedef struct va_chunk_s {
	msim_addr_t base;
	uint64_t size;
	uint64_t seq;      /* creation order; 0 = the CUDA context */
	size_t live;       /* segments inside */
	va_range_t *holes; /* free ranges, sorted by address */
	size_t nholes, capholes;
	uint64_t maxhole;  /* the largest hole's size (va_maxhole()) */
} va_chunk_t;

typedef struct va_s {
	/* Sorted by base, highest first: new chunks go at the bottom of the
	 * space, the end of the array (no move of the others). */
	va_chunk_t *chunks;
	size_t n, cap;
	uint64_t seq;
	uint64_t gapmax; /* no gap between two chunks is larger (a bound) */
	/* 0: new chunks at the top of the highest gap (a PyTorch process);
	 * else at the lowest gap at or above floor (a JAX process). */
	msim_addr_t floor;
} va_t;

/* c->maxhole after its holes changed. */
static void
va_maxhole(va_chunk_t *c)
{
	uint64_t m = 0;
	for (size_t h = 0; h < c->nholes; h++)
		if (c->holes[h].size > m)
			m = c->holes[h].size;
	c->maxhole = m;
}

static int
va_hole_insert(va_chunk_t *c, size_t at, msim_addr_t base, uint64_t size)
{
	if (MSIM_GROW(c->holes, c->capholes, c->nholes + 1, 4))
		return MSIM_ENOMEM;
	memmove(&c->holes[at + 1], &c->holes[at],
		(c->nholes - at) * sizeof(*c->holes));
	c->holes[at] = (va_range_t){base, size};
	c->nholes++;
	if (size > c->maxhole)
		c->maxhole = size;
	return 0;
}

static void
va_hole_remove(va_chunk_t *c, size_t at)
{
	memmove(&c->holes[at], &c->holes[at + 1],
		(c->nholes - at - 1) * sizeof(*c->holes));
	c->nholes--;
}

/* Inserts a chunk keeping the array sorted; returns its index or < 0. */
static long
va_chunk_insert(va_t *va, msim_addr_t base, uint64_t size)
{
	if (MSIM_GROW(va->chunks, va->cap, va->n + 1, 16))
		return MSIM_ENOMEM;
	size_t at = va->n;
	while (at > 0 && va->chunks[at - 1].base < base)
		at--;
	memmove(&va->chunks[at + 1], &va->chunks[at],
		(va->n - at) * sizeof(*va->chunks));
	va->chunks[at] = (va_chunk_t){.base = base, .size = size,
				      .seq = va->seq++};
	va->n++;
	return (long)at;
}

static void
va_destroy(void *ctx)
{
	va_t *va = ctx;
	if (!va)
		return;
	for (size_t i = 0; i < va->n; i++)
		free(va->chunks[i].holes);
	free(va->chunks);
	free(va);
}

static int
va_create(void **ctx_out)
{
	va_t *va = calloc(1, sizeof(*va));
	if (!va)
		return MSIM_ENOMEM;
	long at = va_chunk_insert(va, VA_BASE, VA_CONTEXT_SIZE);
	if (at < 0)
		goto fail;
	va_chunk_t *ctx = &va->chunks[at];
	ctx->live = 1; /* the context itself: never released */
	if (va_hole_insert(ctx, 0, VA_BASE + 414 * MSIM_MiB, 2 * MSIM_MiB) ||
	    va_hole_insert(ctx, 1, VA_BASE + 488 * MSIM_MiB, 24 * MSIM_MiB))
		goto fail;
	*ctx_out = va;
	return 0;
fail:
	va_destroy(va);
	return MSIM_ENOMEM;
}

/* The JAX process's space (docs/bfc.md §2): the context chunk on top with
 * one 16 MiB hole, new chunks upwards from VA_RESERVE_BASE. */
static int
va_create_jax(void **ctx_out)
{
	va_t *va = calloc(1, sizeof(*va));
	if (!va)
		return MSIM_ENOMEM;
	va->floor = VA_RESERVE_BASE;
	long at = va_chunk_insert(va, VA_BASE, VA_CONTEXT_SIZE);
	if (at < 0)
		goto fail;
	va->chunks[at].live = 1; /* the context itself: never released */
	if (va_hole_insert(&va->chunks[at], 0, VA_BASE, VA_JAX_HOLE))
		goto fail;
	*ctx_out = va;
	return 0;
fail:
	va_destroy(va);
	return MSIM_ENOMEM;
}

/* The lowest base at or above va->floor where csize bytes overlap no
 * chunk. */
static msim_addr_t
va_lowest_gap(const va_t *va, uint64_t csize)
{
	msim_addr_t at = va->floor;
	for (size_t i = va->n; i-- > 0;) { /* lowest chunk first */
		const va_chunk_t *c = &va->chunks[i];
		if (c->base + c->size <= at)
			continue;
		if (c->base >= at + csize)
			break;
		at = c->base + c->size;
	}
	return at;
}

static int
va_malloc(void *ctx, uint64_t size, msim_addr_t *addr_out)
{
	va_t *va = ctx;
	/* Holes first: the newest chunk with a hole that fits (its largest
	 * hole says which do), its first hole that fits. */
	va_chunk_t *best = NULL;
	for (size_t i = 0; i < va->n; i++) {
		va_chunk_t *c = &va->chunks[i];
		if (c->maxhole >= size && (!best || c->seq > best->seq))
			best = c;
	}
	if (best) {
		size_t at = 0;
		while (best->holes[at].size < size)
			at++;
		va_range_t *h = &best->holes[at];
		*addr_out = h->base;
		h->base += size;
		h->size -= size;
		if (h->size == 0)
			va_hole_remove(best, at);
		va_maxhole(best);
		best->live++;
		return 0;
	}
	/* A new chunk at the top of the highest gap strictly larger, or in
	 * a JAX process at the bottom of the lowest that fits. */
	uint64_t csize = (size + VA_CHUNK - 1) / VA_CHUNK * VA_CHUNK;
	msim_addr_t base = va->chunks[va->n - 1].base - csize;
	if (va->floor) {
		base = va_lowest_gap(va, csize);
	} else if (va->gapmax > csize) { /* else no gap is larger: no scan */
		uint64_t seen = 0;
		size_t i = 0;
		for (; i + 1 < va->n; i++) {
			msim_addr_t lo = va->chunks[i + 1].base +
					 va->chunks[i + 1].size;
			uint64_t gap = va->chunks[i].base - lo;
			if (gap > csize) {
				base = va->chunks[i].base - csize;
				break;
			}
			if (gap > seen)
				seen = gap;
		}
		if (i + 1 >= va->n)
			va->gapmax = seen; /* every gap seen */
	}
	long at = va_chunk_insert(va, base, csize);
	if (at < 0)
		return (int)at;
	va_chunk_t *c = &va->chunks[at];
	c->live = 1;
	if (csize > size && va_hole_insert(c, 0, base + size, csize - size))
		return MSIM_ENOMEM;
	*addr_out = base;
	return 0;
}

static void
va_free(void *ctx, msim_addr_t addr, uint64_t size)
{
	va_t *va = ctx;
	size_t lo = 0, hi = va->n;
	while (lo < hi) { /* the first (highest) chunk with base <= addr */
		size_t mid = (lo + hi) / 2;
		if (va->chunks[mid].base <= addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo == va->n)
		return; /* not ours: a segment placed at a recorded address */
	va_chunk_t *c = &va->chunks[lo];
	if (addr < c->base || addr + size > c->base + c->size)
		return; /* not ours, likewise */
	if (--c->live == 0) {
		free(c->holes);
		memmove(c, c + 1, (va->n - lo - 1) * sizeof(*c));
		va->n--;
		/* The gaps each side of it are one now. */
		if (lo > 0 && lo < va->n) {
			uint64_t gap = va->chunks[lo - 1].base -
				       (va->chunks[lo].base +
					va->chunks[lo].size);
			if (gap > va->gapmax)
				va->gapmax = gap;
		}
		return;
	}
	size_t at = 0;
	while (at < c->nholes && c->holes[at].base < addr)
		at++;
	bool joins_prev = at > 0 &&
		c->holes[at - 1].base + c->holes[at - 1].size == addr;
	bool joins_next = at < c->nholes && addr + size == c->holes[at].base;
	if (joins_prev && joins_next) {
		c->holes[at - 1].size += size + c->holes[at].size;
		va_hole_remove(c, at);
	} else if (joins_prev) {
		c->holes[at - 1].size += size;
	} else if (joins_next) {
		c->holes[at].base = addr;
		c->holes[at].size += size;
	} else if (va_hole_insert(c, at, addr, size)) {
		/* Out of host memory: the range is merely lost to reuse. */
	}
	va_maxhole(c);
}

const msim_device_ops_t msim_device_h200 = {
	.name = "h200",
	.create = va_create,
	.malloc = va_malloc,
	.free = va_free,
	.destroy = va_destroy,
};

/* The same driver in a JAX process; chosen by msim_device_set_layout(). */
static const msim_device_ops_t device_h200_jax = {
	.name = "h200-jax",
	.create = va_create_jax,
	.malloc = va_malloc,
	.free = va_free,
	.destroy = va_destroy,
};

/* ------------------------------------------------------------------ */

struct msim_device_s {
	const msim_device_ops_t *ops;
	void *ctx;
	uint64_t capacity; /* bytes */
	uint64_t cap;      /* allowed bytes; 0 = none */
	uint64_t reserved; /* bytes held now */
	uint64_t peak;         /* the most bytes held yet */
	uint64_t peak_request; /* the request they were first held in */
	msim_stat_t segment[MSIM_NPOOL];
	msim_stat_t reserved_bytes[MSIM_NPOOL];
	int64_t num_device_alloc, num_device_free;
	uint64_t request; /* index of the request being served */
	msim_time_t now;
	const uint64_t *request_p; /* &request, or the engine's counter */
	const msim_time_t *now_p;  /* &now, or the engine's clock */
	msim_schedule_fn schedule;
	void *schedule_ctx;
	int log_events, use_hints;
	const msim_timemodel_t *tm; /* NULL: no running cost */
	msim_devtime_t dt;          /* the running cost of the events */
	msim_seg_event_t *events;
	size_t nevents, capevents;
	va_range_t *resv; /* expandable reservations, sorted by address */
	size_t nresv, capresv;
	msim_addr_t *hints; /* FIFO of recorded segment addresses */
	size_t hint_head, nhints, caphints;
	va_range_t *own; /* segments of allocators of their own, by address */
	size_t nown, capown;
	msim_gpu_t *gpu; /* shared with other processes, or NULL */
	size_t process;  /* this device's process number on gpu */
};

static const char *const seg_action_names[] = {
	"segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom",
};

const char *
msim_seg_action_name(int action)
{
	if (action < 0 || action > MSIM_SEG_OOM)
		return "?";
	return seg_action_names[action];
}

int
msim_seg_action_parse(const char *name)
{
	for (int i = 0; i <= MSIM_SEG_OOM; i++)
		if (strcmp(name, seg_action_names[i]) == 0)
			return i;
	return -1;
}

msim_device_t *
msim_device_new(const msim_device_config_t *cfg)
{
	msim_device_t *dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->ops = cfg && cfg->ops ? cfg->ops : &msim_device_h200;
	dev->capacity = cfg && cfg->capacity ? cfg->capacity : MSIM_H200_BYTES;
	dev->cap = cfg ? cfg->cap : 0;
	dev->log_events = cfg ? cfg->log_events : 0;
	dev->use_hints = cfg ? cfg->use_hints : 0;
	dev->tm = cfg ? cfg->timemodel : NULL;
	dev->gpu = cfg ? cfg->gpu : NULL;
	dev->process = cfg ? cfg->process : 0;
	dev->request_p = &dev->request;
	dev->now_p = &dev->now;
	if (dev->ops->create(&dev->ctx)) {
		free(dev);
		return NULL;
	}
	return dev;
}

int
msim_device_set_layout(msim_device_t *dev, int layout)
{
	const msim_device_ops_t *ops = layout == MSIM_LAYOUT_JAX
		? &device_h200_jax : &msim_device_h200;
	if (dev->ops == ops)
		return 0;
	if ((dev->ops != &msim_device_h200 && dev->ops != &device_h200_jax) ||
	    dev->num_device_alloc > 0)
		return MSIM_ENOTSUP;
	void *ctx;
	if (ops->create(&ctx))
		return MSIM_ENOMEM;
	dev->ops->destroy(dev->ctx);
	dev->ops = ops;
	dev->ctx = ctx;
	return 0;
}

void
msim_device_destroy(msim_device_t *dev)
{
	if (!dev)
		return;
	dev->ops->destroy(dev->ctx);
	free(dev->events);
	free(dev->hints);
	free(dev->resv);
	free(dev->own);
	free(dev);
}

int
msim_device_set_fraction(msim_device_t *dev, double fraction)
{
	if (!(fraction >= 0.0 && fraction <= 1.0))
		return MSIM_EINVAL;
	dev->cap = msim_fraction_bytes(fraction, dev->capacity);
	return 0;
}

double
msim_cap_fraction(uint64_t cap, uint64_t capacity)
{
	return capacity ? (double)cap / (double)capacity : 0.0;
}

uint64_t
msim_fraction_bytes(double fraction, uint64_t capacity)
{
	return fraction >= 1.0 ? 0 : (uint64_t)(fraction * (double)capacity);
}

uint64_t
msim_cap_allowed(uint64_t cap, uint64_t capacity)
{
	return cap ? msim_fraction_bytes(msim_cap_fraction(cap, capacity),
					 capacity)
		   : 0;
}

uint64_t
msim_device_cap(const msim_device_t *dev)
{
	return dev->cap;
}

uint64_t
msim_device_capacity(const msim_device_t *dev)
{
	return dev->capacity;
}

int
msim_device_uses_hints(const msim_device_t *dev)
{
	return dev->use_hints;
}

static void
dev_log(msim_device_t *dev, int action, msim_addr_t addr, uint64_t size)
{
	if (dev->tm)
		msim_timemodel_add(dev->tm, action, size, &dev->dt);
	if (!dev->log_events)
		return;
	if (MSIM_GROW(dev->events, dev->capevents, dev->nevents + 1, 256)) {
		dev->log_events = 0; /* the log is lost, not the run */
		return;
	}
	dev->events[dev->nevents++] = (msim_seg_event_t){
		.request = *dev->request_p, .addr = addr, .size = size,
		.action = action};
}

/* Whether size more bytes fit on a shared GPU (noting when not). */
static bool
dev_gpu_fits(msim_device_t *dev, uint64_t size)
{
	if (!dev->gpu || msim_gpu_fits(dev->gpu, size))
		return true;
	msim_gpu_note_full(dev->gpu, dev->process, *dev->request_p, size);
	return false;
}

/* Whether size more bytes fit under the capacity, the cap and what a
 * shared GPU has left. */
static bool
dev_fits(msim_device_t *dev, uint64_t size)
{
	if (size > dev->capacity - dev->reserved)
		return false;
	if (dev->cap && dev->reserved + size > dev->cap)
		return false;
	return dev_gpu_fits(dev, size);
}

uint64_t
msim_device_avail(const msim_device_t *dev)
{
	uint64_t a = dev->capacity - dev->reserved;
	if (dev->gpu) {
		msim_gpu_stats_t gs;
		msim_gpu_stats(dev->gpu, &gs);
		uint64_t g = msim_gpu_capacity(dev->gpu) - gs.used;
		a = g < a ? g : a;
	}
	return a;
}

static void
dev_count(msim_device_t *dev, int pool, int64_t delta)
{
	msim_stat2_add(dev->reserved_bytes, pool, delta);
	dev->reserved += (uint64_t)delta;
	if (dev->reserved > dev->peak) {
		dev->peak = dev->reserved;
		dev->peak_request = *dev->request_p;
	}
	if (dev->gpu)
		msim_gpu_count(dev->gpu, dev->process, *dev->request_p, delta);
}

int
msim_device_malloc(msim_device_t *dev, uint64_t size, int pool,
		   msim_addr_t *addr_out)
{
	assert(pool == MSIM_POOL_SMALL || pool == MSIM_POOL_LARGE);
	if (!dev_fits(dev, size))
		return MSIM_EDEVOOM;
	if (dev->use_hints && dev->nhints > 0) {
		msim_addr_t at = dev->hints[dev->hint_head];
		/* A recorded address is input: one whose segment would wrap
		 * around the address space is a broken trace. */
		if (at > UINT64_MAX - size)
			return MSIM_EFORMAT;
		*addr_out = at;
		dev->hint_head++;
		dev->nhints--;
	} else {
		int rc = dev->ops->malloc(dev->ctx, size, addr_out);
		if (rc)
			return rc;
	}
	dev_count(dev, pool, (int64_t)size);
	msim_stat2_inc(dev->segment, pool, 1);
	dev->num_device_alloc++;
	dev_log(dev, MSIM_SEG_ALLOC, *addr_out, size);
	return 0;
}

void
msim_device_free(msim_device_t *dev, msim_addr_t addr, uint64_t size, int pool)
{
	dev->ops->free(dev->ctx, addr, size);
	dev_count(dev, pool, -(int64_t)size);
	msim_stat2_dec(dev->segment, pool, 1);
	dev->num_device_free++;
	dev_log(dev, MSIM_SEG_FREE, addr, size);
}

#define OWN_BASE UINT64_C(0x700000000000)
#define OWN_ALIGN (2 * MSIM_MiB)

int
msim_device_malloc_own(msim_device_t *dev, uint64_t size, int pool,
		       msim_addr_t *addr_out)
{
	assert(pool == MSIM_POOL_SMALL || pool == MSIM_POOL_LARGE);
	if (!dev_fits(dev, size))
		return MSIM_EDEVOOM;
	msim_addr_t at = OWN_BASE;
	size_t i = 0;
	if (dev->use_hints && dev->nhints > 0) {
		at = dev->hints[dev->hint_head];
		if (at > UINT64_MAX - size)
			return MSIM_EFORMAT;
		while (i < dev->nown && dev->own[i].base < at)
			i++;
	} else {
		for (; i < dev->nown; i++) { /* the lowest gap that fits */
			if (dev->own[i].base >= at + size)
				break;
			msim_addr_t end = dev->own[i].base + dev->own[i].size;
			end = (end + OWN_ALIGN - 1) / OWN_ALIGN * OWN_ALIGN;
			if (end > at)
				at = end;
		}
	}
	if (MSIM_GROW(dev->own, dev->capown, dev->nown + 1, 8))
		return MSIM_ENOMEM;
	if (dev->use_hints && dev->nhints > 0) {
		dev->hint_head++;
		dev->nhints--;
	}
	memmove(&dev->own[i + 1], &dev->own[i],
		(dev->nown - i) * sizeof(*dev->own));
	dev->own[i] = (va_range_t){at, size};
	dev->nown++;
	*addr_out = at;
	dev_count(dev, pool, (int64_t)size);
	msim_stat2_inc(dev->segment, pool, 1);
	dev->num_device_alloc++;
	dev_log(dev, MSIM_SEG_ALLOC, at, size);
	return 0;
}

void
msim_device_free_own(msim_device_t *dev, msim_addr_t addr, uint64_t size,
		     int pool)
{
	for (size_t i = 0; i < dev->nown; i++) {
		if (dev->own[i].base == addr) {
			memmove(&dev->own[i], &dev->own[i + 1],
				(dev->nown - i - 1) * sizeof(*dev->own));
			dev->nown--;
			break;
		}
	}
	dev_count(dev, pool, -(int64_t)size);
	msim_stat2_dec(dev->segment, pool, 1);
	dev->num_device_free++;
	dev_log(dev, MSIM_SEG_FREE, addr, size);
}

int
msim_device_reserve(msim_device_t *dev, uint64_t size, msim_addr_t *addr_out)
{
	uint64_t len = (size + VA_CHUNK - 1) / VA_CHUNK * VA_CHUNK;
	msim_addr_t at = VA_RESERVE_BASE;
	size_t i = 0;
	if (dev->use_hints && dev->nhints > 0) {
		/* A recorded reservation (its first segment_map row). */
		at = dev->hints[dev->hint_head++];
		dev->nhints--;
		while (i < dev->nresv && dev->resv[i].base < at)
			i++;
	} else {
		for (; i < dev->nresv; i++) { /* first gap that fits */
			if (dev->resv[i].base >= at + len)
				break;
			msim_addr_t end = dev->resv[i].base +
					  dev->resv[i].size;
			if (end > at)
				at = end;
		}
	}
	if (MSIM_GROW(dev->resv, dev->capresv, dev->nresv + 1, 8))
		return MSIM_ENOMEM;
	memmove(&dev->resv[i + 1], &dev->resv[i],
		(dev->nresv - i) * sizeof(*dev->resv));
	dev->resv[i] = (va_range_t){at, len};
	dev->nresv++;
	*addr_out = at;
	return 0;
}

void
msim_device_unreserve(msim_device_t *dev, msim_addr_t addr)
{
	for (size_t i = 0; i < dev->nresv; i++) {
		if (dev->resv[i].base == addr) {
			memmove(&dev->resv[i], &dev->resv[i + 1],
				(dev->nresv - i - 1) * sizeof(*dev->resv));
			dev->nresv--;
			return;
		}
	}
}

int
msim_device_map(msim_device_t *dev, msim_addr_t addr, uint64_t size, int pool)
{
	if (size > dev->capacity - dev->reserved || !dev_gpu_fits(dev, size))
		return MSIM_EDEVOOM;
	dev_count(dev, pool, (int64_t)size);
	dev->num_device_alloc++;
	dev_log(dev, MSIM_SEG_MAP, addr, size);
	return 0;
}

void
msim_device_unmap(msim_device_t *dev, msim_addr_t addr, uint64_t size,
		  int pool)
{
	dev_count(dev, pool, -(int64_t)size);
	dev->num_device_free++;
	dev_log(dev, MSIM_SEG_UNMAP, addr, size);
}

void
msim_device_log_oom(msim_device_t *dev, uint64_t size)
{
	dev_log(dev, MSIM_SEG_OOM, 0, size);
}

int
msim_device_hint(msim_device_t *dev, msim_addr_t addr)
{
	if (!dev->use_hints)
		return 0;
	/* cudaMalloc never returns either; and below 2^63, a segment of at
	 * most MSIM_SIZE_MAX bytes cannot wrap around. */
	if (addr % MSIM_DEVICE_ALIGN || addr > (UINT64_C(1) << 63))
		return MSIM_EFORMAT;
	if (dev->hint_head + dev->nhints == dev->caphints && dev->hint_head) {
		memmove(dev->hints, dev->hints + dev->hint_head,
			dev->nhints * sizeof(*dev->hints));
		dev->hint_head = 0;
	}
	if (MSIM_GROW(dev->hints, dev->caphints, dev->nhints + 1, 64))
		return MSIM_ENOMEM;
	dev->hints[dev->hint_head + dev->nhints++] = addr;
	return 0;
}

void
msim_device_set_request(msim_device_t *dev, uint64_t request)
{
	dev->request = request;
	dev->request_p = &dev->request;
}

msim_time_t
msim_device_now(const msim_device_t *dev)
{
	return *dev->now_p;
}

void
msim_device_set_clock(msim_device_t *dev, msim_time_t now)
{
	dev->now = now;
	dev->now_p = &dev->now;
}

void
msim_device_bind(msim_device_t *dev, const msim_time_t *clock,
		 const uint64_t *request)
{
	dev->now_p = clock;
	dev->request_p = request;
}

void
msim_device_set_scheduler(msim_device_t *dev, msim_schedule_fn fn, void *ctx)
{
	dev->schedule = fn;
	dev->schedule_ctx = ctx;
}

int
msim_device_schedule(msim_device_t *dev, msim_time_t when, uint64_t cookie)
{
	if (!dev->schedule)
		return MSIM_ENOTSUP;
	msim_time_t now = *dev->now_p;
	return dev->schedule(dev->schedule_ctx, when < now ? now : when,
			     cookie);
}

uint64_t
msim_device_reserved(const msim_device_t *dev)
{
	return dev->reserved;
}

uint64_t
msim_device_peak(const msim_device_t *dev, uint64_t *request_out)
{
	*request_out = dev->peak_request;
	return dev->peak;
}

void
msim_device_stats(const msim_device_t *dev, msim_stats_t *out)
{
	memcpy(out->segment, dev->segment, sizeof(out->segment));
	memcpy(out->reserved_bytes, dev->reserved_bytes,
	       sizeof(out->reserved_bytes));
	out->num_device_alloc = dev->num_device_alloc;
	out->num_device_free = dev->num_device_free;
}

void
msim_device_devtime(const msim_device_t *dev, msim_devtime_t *out)
{
	*out = dev->dt;
}

const msim_seg_event_t *
msim_device_events(const msim_device_t *dev, size_t *n_out)
{
	*n_out = dev->nevents;
	return dev->events;
}
