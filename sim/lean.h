/*
 * The engine's lean loop (sim/engine.c) as an inline template, so that a
 * policy can have its own copy with its request functions inlined
 * (ops->serve): no call, no saving of registers, and no reloading of the
 * policy's state per request.  The engine runs the same loop through the
 * function pointers of msim_policy_hot_t for a policy without ops->serve,
 * so both follow one definition.
 *
 * The loop serves plain allocs, frees and free_requested rows of
 * v[*at..n) while no policy event is pending: a free_requested row
 * directly followed by its own FREE is one call (ops->free_now, or free
 * when the policy keeps no free_requested), an unpaired free_requested row
 * is served and not counted.  It stores the clock and the request count
 * where the engine keeps them before each call (the device reads both),
 * and stops:
 *   - at anything else (flags, another kind, a size msim_policy_size_ok()
 *     refuses, an event pending), the end of the batch: MSIM_LEAN_LEFT,
 *     *at at that request;
 *   - after the request that brings the count to next_sample:
 *     MSIM_LEAN_SAMPLE, *at past it;
 *   - at an alloc the policy refused or placed unaligned: MSIM_LEAN_REFUSED,
 *     *at at it, rc and addr set (MSIM_EFORMAT for unaligned, as
 *     msim_policy_alloc()), not counted;
 *   - at a free that failed: MSIM_LEAN_FAIL, rc and what set.
 */
#ifndef MSIM_SIM_LEAN_H
#define MSIM_SIM_LEAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sim/device.h"
#include "sim/error.h"
#include "sim/policy.h"
#include "sim/types.h"

enum {
	MSIM_LEAN_LEFT = 0,
	MSIM_LEAN_SAMPLE,
	MSIM_LEAN_REFUSED,
	MSIM_LEAN_FAIL,
};

struct msim_lean_s {
	/* in */
	msim_time_t *clock;     /* the engine's clock */
	uint64_t *requests;     /* requests served (msim_summary_t's) */
	const size_t *nheap;    /* policy events pending */
	uint64_t next_sample;   /* the count at which to stop for a sample */
	/* With snap (msim_lean_run()): called after each ALLOC served, before
	 * it is counted (the engine's blocks at a new peak). */
	void (*snap)(void *ctx);
	void *snap_ctx;
	/* added to */
	uint64_t addr_same, addr_other; /* recorded addresses (summary) */
	/* out, as the loop's result says */
	int rc;
	const char *what;       /* MSIM_LEAN_FAIL: what failed */
	msim_addr_t addr;       /* MSIM_LEAN_REFUSED: what alloc gave */
};

/*
 * A request's id, kind and flags as one word (the tag left out), so that
 * whether a free_requested row is directly followed by its own FREE is one
 * comparison: that FREE's word is msim_lean_free_key() of the row's id.
 */
static_assert(offsetof(msim_req_t, kind) == offsetof(msim_req_t, id) + 4 &&
	      offsetof(msim_req_t, flags) == offsetof(msim_req_t, id) + 5 &&
	      sizeof(((msim_req_t *)0)->id) == 4,
	      "id, kind, flags are adjacent");

static inline uint64_t
msim_lean_key(const msim_req_t *r)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t w;
	memcpy(&w, &r->id, sizeof(w));
	return w & UINT64_C(0x0000ffffffffffff);
#else
	return r->id | (uint64_t)r->kind << 32 | (uint64_t)r->flags << 40;
#endif
}

static inline uint64_t
msim_lean_free_key(uint32_t id)
{
	return id | (uint64_t)MSIM_REQ_FREE << 32;
}

/* How many requests ahead the loop prefetches. */
#define MSIM_LEAN_AHEAD 64

/*
 * The loop.  Called with constant functions (a policy's ops->serve), the
 * compiler inlines them; free_requested and free_now may be NULL, as in
 * the ops.  events is false for a policy that schedules no events (it has
 * no ops->on_event): none can become pending during the loop, so pending
 * ones are looked for once, not at every request; snap is whether to call
 * L->snap after each ALLOC.  Returns an MSIM_LEAN_* (above).
 */
static inline __attribute__((always_inline)) int
msim_lean_run(msim_lean_t *L, const msim_req_t *v, size_t n, size_t *at,
	      void *state,
	      int (*alloc)(void *, const msim_req_t *, msim_addr_t *),
	      int (*free_)(void *, const msim_req_t *),
	      int (*free_requested)(void *, const msim_req_t *),
	      int (*free_now)(void *, const msim_req_t *), const bool events,
	      const bool snap)
{
	const bool pairs = free_now || !free_requested;
	/* In locals: the loop's calls may reach memory the compiler cannot
	 * see through, so fields of L would be read again each time. */
	msim_time_t *const clockp = L->clock;
	uint64_t *const reqsp = L->requests;
	const size_t *const nheap = L->nheap;
	const uint64_t next = L->next_sample;
	const msim_req_t *req = v + *at, *const end = v + n;
	msim_time_t clock = *clockp;
	uint64_t reqs = *reqsp;
	uint64_t same = 0, other = 0;
	int st = MSIM_LEAN_LEFT, rc;
	if (!events && *nheap)
		goto out;
	for (; req < end; req++) {
		/* The batch was written on the reader's core: ask for the
		 * lines a few requests ahead before they are needed. */
		__builtin_prefetch(req + MSIM_LEAN_AHEAD);
		if (req->flags || (events && *nheap))
			break;
		if (req->time > clock)
			clock = req->time;
		*clockp = clock;
		if (req->kind == MSIM_REQ_ALLOC) {
			msim_addr_t addr;
			if (!msim_policy_size_ok(req->size))
				break; /* the engine says why */
			rc = alloc(state, req, &addr);
			if (__builtin_expect(rc != 0 ||
					     addr % MSIM_DEVICE_ALIGN != 0, 0)) {
				L->rc = rc ? rc : MSIM_EFORMAT;
				L->addr = rc ? 0 : addr;
				st = MSIM_LEAN_REFUSED;
				break;
			}
			if (req->addr) {
				if (addr == req->addr)
					same++;
				else
					other++;
			}
			if (snap)
				L->snap(L->snap_ctx);
		} else if (req->kind == MSIM_REQ_FREE_REQUESTED) {
			const msim_req_t *fr = req + 1;
			if (pairs && fr < end &&
			    msim_lean_key(fr) == msim_lean_free_key(req->id)) {
				/* Freed and back at once: the FREE's time. */
				req = fr;
				if (fr->time > clock) {
					clock = fr->time;
					*clockp = clock;
				}
				if (free_now) {
					if ((rc = free_now(state, fr))) {
						L->what = "free_requested";
						goto fail;
					}
				} else if ((rc = free_(state, fr))) {
					L->what = "free of a block not live";
					goto fail;
				}
			} else {
				if (free_requested &&
				    (rc = free_requested(state, req))) {
					L->what = "free_requested";
					goto fail;
				}
				continue; /* not counted */
			}
		} else if (req->kind == MSIM_REQ_FREE) {
			if ((rc = free_(state, req))) {
				L->what = "free of a block not live";
				goto fail;
			}
		} else {
			break;
		}
		*reqsp = ++reqs;
		if (reqs == next) {
			req++;
			st = MSIM_LEAN_SAMPLE;
			break;
		}
	}
	goto out;
fail:
	L->rc = rc;
	st = MSIM_LEAN_FAIL;
out:
	L->addr_same += same;
	L->addr_other += other;
	*at = (size_t)(req - v);
	return st;
}

#endif
