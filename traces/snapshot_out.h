/*
 * A simulated run written as a PyTorch memory snapshot (memsim run
 * --snapshot-out): the dict torch.cuda.memory._snapshot() returns, as
 * _dump_snapshot() pickles it, so that PyTorch's memory_viz
 * (torch.cuda._memory_viz, pytorch.org/memory_viz) opens it.  The reader
 * of such pickles is traces/fmt_pickle.c.
 */
#ifndef MSIM_TRACES_SNAPSHOT_OUT_H
#define MSIM_TRACES_SNAPSHOT_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One device_traces entry: action is msim_action_t (traces/trace.h);
 * addr is device_free for an oom; site ("file:line function", or a module
 * path) becomes its one frame, NULL: no frames. */
typedef struct msim_snapout_entry_s {
	int action;
	uint64_t addr, size, stream, time_us;
	const char *site;
} msim_snapout_entry_t;

/* A block of a segment, as segmentInfo() lists it. */
typedef struct msim_snapout_block_s {
	uint64_t addr, size;  /* bytes */
	uint64_t requested;   /* bytes the program asked for (0: free) */
	int state;            /* MSIM_BLOCK_* (sim/types.h) */
	const char *site;     /* its allocation's frame, or NULL */
} msim_snapout_block_t;

/* A segment and its blocks, which tile it in address order. */
typedef struct msim_snapout_seg_s {
	uint64_t addr, size;  /* total_size: bytes (mapped, if expandable) */
	uint64_t stream;
	bool expandable;
	const msim_snapout_block_t *blocks;
	size_t nblocks;
} msim_snapout_seg_t;

/* What the snapshot holds besides. */
typedef struct msim_snapout_s {
	const msim_snapout_entry_t *entries; /* device 0's trace */
	size_t nentries;
	const msim_snapout_seg_t *segs;      /* the state it ends in */
	size_t nsegs;
	const char *alloc_conf;  /* allocator_settings'
				  * PYTORCH_CUDA_ALLOC_CONF; NULL: none */
	bool expandable;         /* allocator_settings' expandable_segments */
} msim_snapout_t;

/* Writes s to path (through a temporary file renamed into place).
 * Returns 0, or MSIM_EIO / MSIM_ENOMEM with why filled. */
int msim_snapout_write(const char *path, const msim_snapout_t *s, char *why,
		       size_t whylen);

#endif
