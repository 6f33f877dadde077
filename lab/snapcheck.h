/*
 * Whether a replay ends where its recording did: the end state of a
 * finished run (the live segments of its device log, its statistics and
 * the policy's blocks) against the segments state of the snapshot it
 * replayed (docs/pytorch-allocator.md §10.1).  A snapshot is taken where
 * its trace ends, so `memsim run --recording` of a faithful replay ends in
 * the same
 * state.
 */
#ifndef MSIM_LAB_SNAPCHECK_H
#define MSIM_LAB_SNAPCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/engine.h"
#include "traces/trace.h"

typedef struct msim_snapcheck_s {
	size_t sim_segs, snap_segs; /* live segments */
	size_t segs_only_sim;       /* simulated, not in the snapshot */
	size_t segs_only_snap;      /* in the snapshot, not simulated */
	bool by_address;            /* segments compared by address and
				     * size (not with expandable ones) */
	uint64_t sim_reserved, snap_reserved;   /* bytes */
	uint64_t sim_allocated, snap_allocated; /* bytes */
	bool blocks_listed;         /* the policy listed its blocks */
	size_t sim_blocks, snap_blocks;
	size_t blocks_differ;       /* by address, size or state */
	bool same;                  /* all of the above agree */
} msim_snapcheck_t;

/*
 * Compares the end of sim (a finished run whose device logged its
 * events) with the n snapshot segments segs.  Returns 0 with *out
 * filled, or MSIM_ENOMEM.
 */
int msim_snapcheck(msim_sim_t *sim, const msim_snap_segment_t *segs,
		   size_t n, msim_snapcheck_t *out);

/* "matches", or what differs, in one line into buf. */
void msim_snapcheck_format(const msim_snapcheck_t *c, char *buf, size_t n);

#endif
