/*
 * The discrete-event engine.  Requests come from a source (a trace reader or
 * a generator) in order; their timestamps drive the clock.  Policies may
 * schedule their own events through the device (msim_device_schedule());
 * events due at the same time run in the order they were queued (libuv's
 * timer rule), requests included, so a run is deterministic.
 *
 * The caller drives the loop:
 *
 *	msim_sim_new() -> msim_sim_step() until 0 -> msim_sim_stats() ...
 *	-> msim_sim_destroy()
 */
#ifndef MSIM_SIM_ENGINE_H
#define MSIM_SIM_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/policy.h"
#include "sim/device.h"
#include "sim/metrics.h"
#include "sim/types.h"

typedef struct msim_sim_config_s {
	msim_source_t source;
	const msim_policy_ops_t *policy; /* required */
	const msim_params_t *params;     /* NULL: the policy's defaults */
	msim_device_config_t device;
	double fraction;        /* > 0: set_per_process_memory_fraction */
	bool keep_going;        /* do not stop at the first OOM */
	size_t timeline_points; /* 0: 1024 */
	bool peak_blocks;       /* keep the policy's blocks at peak reserved */
	/* With peak_blocks: kept only at the new peaks of the requests from
	 * this index on (0: all); msim_sim_peak_blocks_request() says which
	 * request they followed.  A sweep's guess of where the peak is
	 * (lab/job.c): each copy costs a pass over the policy's blocks. */
	uint64_t peak_blocks_from;
	/* > 0: stop once this many requests were served, keeping the
	 * policy's blocks then (msim_sim_peak_blocks()) and taking no
	 * timeline: the blocks at a peak found by a run before (lab/job.c:
	 * msim_device_peak()'s request + 1), replayed to it again. */
	uint64_t blocks_at;
	/* May be NULL.  Called after each ALLOC, FREE_REQUESTED, FREE and
	 * RESET_PEAKS the engine serves, with the policy's answer to an
	 * ALLOC (0 or MSIM_EDEVOOM; 0 otherwise): what explain needs to
	 * follow each block's owner and where peaks count from.  One test
	 * of a NULL pointer a request otherwise. */
	void (*observe)(void *ctx, const msim_req_t *req, int rc);
	void *observe_ctx;
} msim_sim_config_t;

typedef struct msim_sim_s msim_sim_t;

/* What a finished (or stopped) run measured, besides the statistics. */
typedef struct msim_summary_s {
	uint64_t requests;       /* ALLOC and FREE requests served */
	int64_t oom_request;     /* index of the first unexpected OOM, or -1 */
	uint64_t ooms_expected;  /* recorded OOMs that happened again */
	uint64_t ooms_unmatched; /* recorded OOMs the simulation served */
	uint64_t addr_same;      /* allocs at their recorded address */
	uint64_t addr_other;     /* allocs elsewhere (recorded address known) */
	double frag_at_peak;     /* 1 - peak allocated / peak reserved */
	double frag_mean;        /* mean of 1 - allocated/reserved */
	double ext_frag_max;     /* max of 1 - largest free / free */
	msim_time_t end_time;    /* simulated ns */
} msim_summary_t;

/* Creates a run.  Returns 0, or an error with why filled. */
int msim_sim_new(const msim_sim_config_t *cfg, msim_sim_t **out, char *why,
		 size_t whylen);
void msim_sim_destroy(msim_sim_t *sim);

/* Serves one request or event.  Returns 1, 0 when the run is over (end of
 * the source, or an OOM unless keep_going), or an error (msim_sim_errmsg). */
int msim_sim_step(msim_sim_t *sim);

/* When the next msim_sim_step() serves something: returns 1 with its
 * simulated time, 0 when the run is over, or an error (msim_sim_errmsg).
 * Reads the source one request ahead, as msim_sim_step() would. */
int msim_sim_peek(msim_sim_t *sim, msim_time_t *when_out);

/* Steps to the end.  Returns 0 or an error. */
int msim_sim_run(msim_sim_t *sim);

const char *msim_sim_errmsg(const msim_sim_t *sim);
void msim_sim_stats(const msim_sim_t *sim, msim_stats_t *out);
void msim_sim_summary(msim_sim_t *sim, msim_summary_t *out);
const msim_timeline_t *msim_sim_timeline(const msim_sim_t *sim);

/* With peak_blocks: the policy's blocks when reserved bytes first reached
 * their peak (n_out 0 if the policy cannot list its blocks). */
const msim_block_t *msim_sim_peak_blocks(const msim_sim_t *sim,
					 size_t *n_out);
/* The 0-based index of the request after which msim_sim_peak_blocks()
 * were taken, or UINT64_MAX if none were. */
uint64_t msim_sim_peak_blocks_request(const msim_sim_t *sim);
msim_device_t *msim_sim_device(msim_sim_t *sim);
msim_policy_t *msim_sim_policy(msim_sim_t *sim);
/* Inside observe, for an ALLOC: the address it was served at (0 when it
 * was refused). */
msim_addr_t msim_sim_last_addr(const msim_sim_t *sim);

#endif
