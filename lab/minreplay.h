/*
 * The minimal path `memsim bench` measures memsim against: an exact
 * streaming replay of the pytorch policy's default configuration for a
 * single-stream trace, with nothing else (no engine, no events, no policy
 * interface).  Same rules as policies/pytorch.c with default parameters
 * (docs/pytorch-allocator.md): round_size, the small and large pools,
 * get_free_block's best fit in (size, address) order, the splitting rules
 * of alloc_found_block, merging in free_block, and the statistics of
 * torch.cuda.memory_stats() named below.  Used only by bench and its test.
 */
#ifndef MSIM_LAB_MINREPLAY_H
#define MSIM_LAB_MINREPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "sim/types.h"

typedef struct msim_minreplay_s msim_minreplay_t;

typedef struct msim_minstat_s {
	int64_t cur, peak;
} msim_minstat_t;

/* The "all" pool figures of memory_stats(). */
typedef struct msim_minreplay_stats_s {
	msim_minstat_t allocated;      /* allocated_bytes */
	msim_minstat_t reserved;       /* reserved_bytes */
	msim_minstat_t requested;      /* requested_bytes */
	msim_minstat_t active;         /* active_bytes */
	msim_minstat_t inactive_split; /* inactive_split (blocks) */
	msim_minstat_t inactive_split_bytes;
	msim_minstat_t segment;        /* segment (count) */
	uint64_t requests;             /* allocs and frees served */
} msim_minreplay_stats_t;

/* A replay on a fresh modelled device (sim/device.h, default config).
 * Returns 0 or MSIM_ENOMEM. */
int msim_minreplay_new(msim_minreplay_t **out);
void msim_minreplay_destroy(msim_minreplay_t *m);

/*
 * Serves n requests.  Returns 0; MSIM_ENOTSUP for what the minimal path
 * does not model (a second stream, private pools, flagged requests, a
 * device that is full: the caller cannot compare), with *at_out the
 * index of that request; MSIM_ENOTFOUND for a free of no live block;
 * MSIM_ENOMEM.
 */
int msim_minreplay_apply(msim_minreplay_t *m, const msim_req_t *v, size_t n,
			 size_t *at_out);

void msim_minreplay_stats(const msim_minreplay_t *m,
			  msim_minreplay_stats_t *out);

#endif
