/*
 * The policy plug-in: a const operations table plus opaque state, the shape
 * of GSL's gsl_rng_type and SQLite's sqlite3_mem_methods.  The engine calls
 * the msim_policy_*() wrappers below, never the ops directly; the wrappers
 * check what must hold for every policy.
 *
 * To add a policy: write policies/<name>.c ending in its ops table, add one
 * line to registry.c and one to policies/Makemodule.am.  The contract test
 * (tests/check_policy_contract.c) then covers it.
 */
#ifndef MSIM_SIM_POLICY_H
#define MSIM_SIM_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "sim/params.h"
#include "sim/device.h"
#include "sim/types.h"

/* The lean loop's state (sim/lean.h). */
typedef struct msim_lean_s msim_lean_t;

typedef struct msim_policy_ops_s {
	const char *name;                /* unique, [a-z0-9_-]; CLI and DB key */
	const char *summary;             /* one line for `memsim policies` */
	const msim_param_spec_t *params; /* NULL-name terminated */
	/* Creates the state over dev.  Returns 0, MSIM_ENOMEM, or MSIM_EINVAL
	 * with why filled when parameters contradict each other. */
	int (*create)(void **state_out, msim_device_t *dev,
		      const msim_params_t *pv, char *why, size_t whylen);
	/* Serves req (ALLOC).  Returns 0 with the block's address;
	 * MSIM_EDEVOOM when the device (or the cap) has no room: a result
	 * of the experiment, which the engine counts; MSIM_ENOMEM when the
	 * host has no memory for the policy's bookkeeping; MSIM_EINVAL when
	 * the request contradicts the policy's state (pytorch: a capture's
	 * private pool released while the capture was underway).  Any
	 * error but MSIM_EDEVOOM ends the run. */
	int (*alloc)(void *state, const msim_req_t *req, msim_addr_t *addr_out);
	/* The block req->id is back (FREE).  Returns 0; MSIM_ENOTFOUND when
	 * req->id is not a live block (never allocated, or freed already:
	 * a trace whose frees do not pair with its allocs); MSIM_ENOMEM when
	 * the host has no memory for the bookkeeping (a free list grows).
	 * Either ends the run. */
	int (*free)(void *state, const msim_req_t *req);
	/* The program freed req->id, the block returns at a later FREE.
	 * Returns 0, or MSIM_ENOTFOUND when req->id is not an allocated
	 * block.  May be NULL: then FREE_REQUESTED is ignored. */
	int (*free_requested)(void *state, const msim_req_t *req);
	/* A FREE_REQUESTED directly followed by the FREE of the same block:
	 * what free_requested and then free do, with free_requested's
	 * errors (the engine's lean loop calls it for such a pair).  May be
	 * NULL: the engine then calls them in turn. */
	int (*free_now)(void *state, const msim_req_t *req);
	/* torch.cuda.empty_cache().  May be NULL. */
	int (*empty_cache)(void *state);
	/* A private-pool request (MSIM_REQ_POOL_*).  Returns 0, or
	 * MSIM_EINVAL when the request contradicts the pool's state (ending
	 * a pool not begun, releasing one never created).  May be NULL: the
	 * policy has no private pools and serves every request from its
	 * one pool. */
	int (*pool)(void *state, const msim_req_t *req);
	/* Whether serving req now would make the policy free cached memory
	 * itself (no cached block fits and a new segment would exceed a
	 * threshold, the cap or the device).  No side effects.  May be NULL
	 * (never). */
	bool (*would_release)(const void *state, const msim_req_t *req);
	/* An event the policy scheduled with msim_device_schedule().  May be
	 * NULL. */
	int (*on_event)(void *state, uint64_t cookie);
	/* Fills the policy's statistics; the device's own counters are added
	 * by the wrapper. */
	void (*stats)(const void *state, msim_stats_t *out);
	/* Largest free block and total free bytes held by the policy. */
	void (*free_info)(const void *state, uint64_t *largest_out,
			  uint64_t *total_out);
	/* Calls fn for every block the policy holds in device memory
	 * (allocated, free, or freed but pending), in no set order.  May be
	 * NULL (the policy keeps no such map). */
	void (*blocks)(const void *state,
		       void (*fn)(void *ctx, const msim_block_t *b), void *ctx);
	void (*destroy)(void *state);
	/* The current allocated, active and requested bytes of the "all"
	 * pool: what a timeline sample keeps, without a copy of every
	 * statistic.  May be NULL (taken from stats). */
	void (*sample)(const void *state, int64_t *allocated_out,
		       int64_t *active_out, int64_t *requested_out);
	/* The engine's lean loop over a batch with this policy's request
	 * functions inlined: msim_lean_run() of sim/lean.h called with
	 * them, nothing else.  May be NULL: the engine runs that loop through
	 * the functions above. */
	int (*serve)(void *state, msim_lean_t *L, const msim_req_t *v,
		     size_t n, size_t *at);
} msim_policy_ops_t;

typedef struct msim_policy_s msim_policy_t;

/*
 * Creates an instance of ops over dev with parameters pv (NULL: defaults).
 * Returns 0, or an error with why filled.
 */
int msim_policy_new(const msim_policy_ops_t *ops, msim_device_t *dev,
		    const msim_params_t *pv, msim_policy_t **out, char *why,
		    size_t whylen);
void msim_policy_destroy(msim_policy_t *pol);

const msim_policy_ops_t *msim_policy_ops(const msim_policy_t *pol);

/* Serves an ALLOC: what ops->alloc returns (0, MSIM_EDEVOOM,
 * MSIM_ENOMEM, MSIM_EINVAL); also MSIM_EINVAL if size is 0 or above
 * MSIM_SIZE_MAX (so no policy's rounding can wrap), and MSIM_EFORMAT if
 * the block is not aligned to MSIM_DEVICE_ALIGN, which only segments placed
 * at a trace's recorded addresses can cause. */
int msim_policy_alloc(msim_policy_t *pol, const msim_req_t *req,
		      msim_addr_t *addr_out);
/* A FREE: what ops->free returns (0, MSIM_ENOTFOUND, MSIM_ENOMEM). */
int msim_policy_free(msim_policy_t *pol, const msim_req_t *req);
/* A FREE_REQUESTED: 0 (also without ops->free_requested) or
 * MSIM_ENOTFOUND. */
int msim_policy_free_requested(msim_policy_t *pol, const msim_req_t *req);
/* ops->free_now, or free_requested then free. */
int msim_policy_free_now(msim_policy_t *pol, const msim_req_t *req);
int msim_policy_empty_cache(msim_policy_t *pol);
int msim_policy_private_pool(msim_policy_t *pol, const msim_req_t *req);
bool msim_policy_would_release(const msim_policy_t *pol,
			       const msim_req_t *req);
int msim_policy_on_event(msim_policy_t *pol, uint64_t cookie);

/*
 * The request functions of a policy, for the engine's lean loop: it calls
 * them without the wrappers above, once per request, and makes the checks
 * of msim_policy_alloc() itself (msim_policy_size_ok(), the alignment).
 * free_requested and free_now may be NULL, as in the ops.
 */
typedef struct msim_policy_hot_s {
	void *state;
	int (*alloc)(void *state, const msim_req_t *req, msim_addr_t *addr_out);
	int (*free)(void *state, const msim_req_t *req);
	int (*free_requested)(void *state, const msim_req_t *req);
	int (*free_now)(void *state, const msim_req_t *req);
	int (*serve)(void *state, msim_lean_t *L, const msim_req_t *v,
		     size_t n, size_t *at);
} msim_policy_hot_t;

void msim_policy_hot(const msim_policy_t *pol, msim_policy_hot_t *out);

/* Whether an ALLOC of size bytes may reach a policy: not 0, not above
 * MSIM_SIZE_MAX (so no policy's rounding can wrap). */
static inline bool
msim_policy_size_ok(uint64_t size)
{
	return size - 1 < MSIM_SIZE_MAX;
}

/* All statistics: the policy's and the device's. */
void msim_policy_stats(const msim_policy_t *pol, msim_stats_t *out);
/* The policy's blocks through fn (see ops->blocks).  Returns false if the
 * policy cannot list them. */
bool msim_policy_blocks(const msim_policy_t *pol,
			void (*fn)(void *ctx, const msim_block_t *b), void *ctx);
void msim_policy_free_info(const msim_policy_t *pol, uint64_t *largest_out,
			   uint64_t *total_out);
/* The figures of a timeline sample now: the "all" pool's current allocated,
 * reserved, active and requested bytes (those of msim_policy_stats()). */
void msim_policy_sample(const msim_policy_t *pol, int64_t *allocated_out,
			int64_t *reserved_out, int64_t *active_out,
			int64_t *requested_out);

#endif
