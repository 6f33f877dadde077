/*
 * Info: what a trace holds, read once (streaming): requests as a run
 * counts them, sizes, streams, live bytes, hidden empty_cache() calls,
 * and for a snapshot the allocator state it was taken in (its segments,
 * summed) beside the end state of its own trace.  `memsim info` prints
 * it.  Nothing here prints or exits.
 */
#ifndef MSIM_LAB_INFO_H
#define MSIM_LAB_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "traces/trace.h"

#define MSIM_INFO_BINS 48        /* log2 size bins: [2^k, 2^(k+1)) bytes */
#define MSIM_INFO_MAX_STREAMS 64 /* counted; more are "or more" */

/* A snapshot's segments state, summed. */
typedef struct msim_info_snap_s {
	size_t nsegs, nsmall, nexpandable, nblocks;
	uint64_t reserved, allocated, active, requested; /* bytes */
	uint64_t small_reserved;                        /* bytes */
	uint64_t nstate[MSIM_SNAP_NSTATES];             /* blocks */
	uint64_t state_bytes[MSIM_SNAP_NSTATES];
	uint64_t active_requested; /* requested_size of active blocks */
	size_t untiled; /* segments whose blocks do not tile them */
	/* The trace ends where the snapshot was taken: its segment rows
	 * (and the seeded segments) leave the snapshot's reserved bytes; its
	 * live allocations are the snapshot's active blocks. */
	bool reserved_same, live_same;
} msim_info_snap_t;

/* The recorder's assumptions (docs/recording-values.md): the `annotate`
 * rows of category "assumption" of a CSV trace written by `memsim record
 * --fake`, whose site is "KIND FILE:LINE =VALUE", counted by kind and by
 * site, most frequent first. */
#define MSIM_INFO_ASSUME_SITES 4096 /* distinct sites kept; more counted */

typedef struct msim_info_count_s {
	char *key;
	uint64_t n;
} msim_info_count_t;

typedef struct msim_info_assume_s {
	msim_info_count_t *kinds, *sites;
	size_t nkinds, nsites;
	uint64_t total, other; /* other: rows past MSIM_INFO_ASSUME_SITES */
} msim_info_assume_t;

typedef struct msim_info_s {
	msim_trace_t *trace;      /* read to its end: format, hash, seeding */
	uint64_t requests;        /* allocs and frees, as a run counts */
	uint64_t allocs, frees, bytes; /* bytes: of every alloc */
	uint64_t peak;            /* live bytes, the seeded included */
	uint64_t live, nlive;     /* at the end: bytes, allocations */
	int nstreams;
	bool more_streams;        /* more than MSIM_INFO_MAX_STREAMS */
	double hist[MSIM_INFO_BINS]; /* allocs by log2 of their size */
	uint64_t empty_found, empty_maybe; /* msim_trace_empty_caches() */
	msim_trace_tally_t tally;
	msim_trace_seed_t seed;
	const char *conf;         /* the allocator settings, or NULL */
	double duration_s;
	bool timed;               /* entries have time_us */
	bool has_state;           /* a snapshot with segments: snap */
	msim_info_snap_t snap;
	msim_info_assume_t assume;
} msim_info_t;

/* Reads path to its end.  Returns 0 with *out, or an error with why.
 * Clear with msim_info_clear() (it closes the trace). */
int msim_info_run(const char *path, const msim_trace_options_t *opt,
		  msim_info_t *out, char *why, size_t whylen);
void msim_info_clear(msim_info_t *info);

/*
 * The figures of `memsim info --json` (lab/figures.h), in three runs
 * around the two that are not single values (the size histogram, the
 * assumptions by kind): head (trace, format, entries, each action,
 * requests ... empty_cache_or_malloc), middle ([duration_known],
 * [allocator_settings], the seeding of msim_figs_seed()), tail (the
 * snapshot state and its checks where there is one, trace_hash).
 * Return 0 or MSIM_ENOMEM.
 */
struct msim_figs_s;
int msim_info_figs_head(struct msim_figs_s *f, const char *path,
			const msim_info_t *in);
int msim_info_figs_middle(struct msim_figs_s *f, const msim_info_t *in);
int msim_info_figs_tail(struct msim_figs_s *f, const msim_info_t *in);

/* Prints in to stdout as `memsim info` does: the trace's counts, the
 * seeding (lab/print.h), the recorder's assumptions, the snapshot's state
 * checked against the trace's end, the sizes; msim_info_json() the same
 * as one JSON object (the figures above), returning 0 or MSIM_ENOMEM. */
void msim_info_print(const char *path, const msim_info_t *in);
int msim_info_json(const char *path, const msim_info_t *in);

#endif
