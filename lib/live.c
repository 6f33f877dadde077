/*
 * A live allocator (memsim.h, memsim_live_*): a policy on its modelled
 * device served one request at a time, as a program makes them, with its
 * statistics readable between any two.  `memsim record --fake` answers
 * torch.cuda.memory_reserved(), memory_stats() and mem_get_info() from it,
 * and decides --oom's out-of-memory errors by it (docs/recording.md).
 *
 * The engine reads its requests from a source of one slot: each request
 * is put there and the engine stepped until it has taken it (events the
 * policy scheduled before it are served first, as in a replay).  The
 * addresses a caller names are mapped to the engine's block ids as a
 * trace reader maps a trace's (traces/idmap.h).
 */
#include <config.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/handle.h"
#include "lib/memsim.h"
#include "policies/registry.h"
#include "sim/device.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "sim/gpu.h"
#include "sim/metrics.h"
#include "sim/params.h"
#include "traces/idmap.h"
#include "traces/trace.h"

typedef struct live_s {
	msim_sim_t *sim;
	msim_params_t pv;
	bool pv_init;
	msim_gpu_t *gpu;     /* the device less its context, when one */
	msim_idmap_t ids;
	msim_req_t slot;     /* the request the engine is to take */
	bool full;           /* slot holds one */
	bool refused;        /* the policy refused the last ALLOC (OOM) */
	msim_time_t clock;   /* one microsecond a request */
	char errmsg[512];
} live_t;

static int
live_next(void *ctx, msim_req_t *req_out)
{
	live_t *lv = ctx;
	if (!lv->full)
		return 0;
	*req_out = lv->slot;
	lv->full = false;
	return 1;
}

static const char *
live_errmsg(void *ctx)
{
	return ((live_t *)ctx)->errmsg;
}

/* The engine's observer: whether the policy refused an ALLOC. */
static void
live_observe(void *ctx, const msim_req_t *req, int rc)
{
	if (req->kind == MSIM_REQ_ALLOC)
		((live_t *)ctx)->refused = rc != 0;
}

static int
live_fail(live_t *lv, int rc, const char *what)
{
	snprintf(lv->errmsg, sizeof(lv->errmsg), "%s", what);
	return rc;
}

int
memsim_live_open(memsim_live_t **out, const char *policy, const char *conf,
		 uint64_t capacity, uint64_t context, double fraction)
{
	if (!out)
		return MEMSIM_EINVAL;
	*out = NULL;
	live_t *lv = calloc(1, sizeof(*lv));
	void *h;
	if (!lv)
		return MEMSIM_ENOMEM;
	if (msim_handle_new(MSIM_HANDLE_LIVE, lv, &h)) {
		free(lv);
		return MEMSIM_ENOMEM;
	}
	*out = h;
	if (msim_idmap_init(&lv->ids))
		return live_fail(lv, MEMSIM_ENOMEM, "out of memory");
	const msim_policy_ops_t *ops =
		msim_policy_find(policy ? policy : "pytorch");
	if (!ops) {
		snprintf(lv->errmsg, sizeof(lv->errmsg),
			 "unknown policy '%s' (see `memsim policies`)", policy);
		return MEMSIM_EINVAL;
	}
	if (msim_params_init(&lv->pv, ops->params))
		return live_fail(lv, MEMSIM_ENOMEM, "out of memory");
	lv->pv_init = true;
	if (conf && *conf && msim_params_parse(&lv->pv, conf))
		return live_fail(lv, MEMSIM_EINVAL, lv->pv.errmsg);
	if (!capacity)
		capacity = MSIM_H200_BYTES;
	if (context >= capacity)
		return live_fail(lv, MEMSIM_EINVAL, "the context leaves "
				 "nothing of the device");
	if (!(fraction >= 0 && fraction <= 1))
		return live_fail(lv, MEMSIM_EINVAL,
				 "the fraction is not within [0, 1]");
	if (context && !(lv->gpu = msim_gpu_new(capacity - context, 1)))
		return live_fail(lv, MEMSIM_ENOMEM, "out of memory");
	msim_sim_config_t cfg = {
		.source = {.next = live_next, .errmsg = live_errmsg, .ctx = lv},
		.policy = ops,
		.params = &lv->pv,
		.device = {.capacity = capacity, .gpu = lv->gpu},
		.fraction = fraction,
		.keep_going = true,
		.timeline_points = 2,
		.observe = live_observe,
		.observe_ctx = lv,
	};
	int rc = msim_sim_new(&cfg, &lv->sim, lv->errmsg, sizeof(lv->errmsg));
	return rc;
}

static void
live_destroy(live_t *lv)
{
	msim_sim_destroy(lv->sim);
	if (lv->pv_init)
		msim_params_clear(&lv->pv);
	msim_gpu_destroy(lv->gpu);
	msim_idmap_clear(&lv->ids);
	free(lv);
}

void
memsim_live_close(memsim_live_t *h)
{
	void *lv;
	if (!msim_handle_get(h, MSIM_HANDLE_LIVE, true, &lv))
		live_destroy(lv);
}

/* Declares lv, the live allocator of handle h, or returns the handle's
 * error (lib/handle.h). */
#define LIVE_OF(h, lv)                                                        \
	live_t *lv;                                                           \
	do {                                                                  \
		void *o_;                                                     \
		int hrc_ = msim_handle_get((h), MSIM_HANDLE_LIVE, false, &o_); \
		if (hrc_)                                                     \
			return hrc_;                                          \
		lv = o_;                                                      \
	} while (0)

const char *
memsim_live_errmsg(const memsim_live_t *h)
{
	void *lv;
	int rc = msim_handle_get(h, MSIM_HANDLE_LIVE, false, &lv);
	if (rc == MEMSIM_ESTATE)
		return "the live allocator is closed";
	if (rc)
		return "not a live allocator (NULL or not from "
		       "memsim_live_open())";
	return ((live_t *)lv)->errmsg;
}

/* Serves the request in the slot: steps the engine until it took it. */
static int
live_serve(live_t *lv)
{
	lv->slot.time = lv->clock += 1000;
	lv->full = true;
	lv->refused = false;
	while (lv->full) {
		int rc = msim_sim_step(lv->sim);
		if (rc < 0) {
			lv->full = false;
			return live_fail(lv, rc, msim_sim_errmsg(lv->sim));
		}
		if (rc == 0 && lv->full)
			return live_fail(lv, MEMSIM_ESTATE, "the run is over");
	}
	return 0;
}

int
memsim_live_request(memsim_live_t *h, const char *action, uint64_t addr,
		    uint64_t size, uint64_t stream)
{
	LIVE_OF(h, lv);
	if (!lv->sim || !action)
		return MEMSIM_EINVAL;
	int act = msim_action_parse(action, strlen(action));
	msim_req_t *r = &lv->slot;
	memset(r, 0, sizeof(*r));
	r->stream = stream;
	int rc;
	switch (act) {
	case MSIM_ACT_ALLOC:
		if (!size || !addr)
			return live_fail(lv, MEMSIM_EINVAL, size
					 ? "alloc at address 0"
					 : "alloc of 0 bytes");
		if ((rc = msim_idmap_add(&lv->ids, addr, &r->id)))
			return live_fail(lv, rc, rc == MSIM_EINVAL
					 ? "alloc at a live block's address"
					 : msim_strerror(rc));
		r->kind = MSIM_REQ_ALLOC;
		r->size = size;
		break;
	case MSIM_ACT_FREE_COMPLETED:
		if ((rc = msim_idmap_find(&lv->ids, addr, &r->id)))
			return live_fail(lv, rc, "free of no live block");
		r->kind = MSIM_REQ_FREE;
		break;
	case MSIM_ACT_EMPTY_CACHE:
		r->kind = MSIM_REQ_EMPTY_CACHE;
		break;
	case MSIM_ACT_RESET_PEAKS:
		r->kind = MSIM_REQ_RESET_PEAKS;
		break;
	case MSIM_ACT_POOL_CREATE:
	case MSIM_ACT_POOL_BEGIN:
	case MSIM_ACT_POOL_END:
	case MSIM_ACT_POOL_RELEASE:
		/* As a trace's rows (docs/trace-formats.md) */
		r->addr = addr;
		if (msim_pool_request(act, addr, size, r, lv->errmsg,
				      sizeof(lv->errmsg)))
			return MEMSIM_EINVAL;
		break;
	default:
		snprintf(lv->errmsg, sizeof(lv->errmsg),
			 "'%s' is not a request memsim_live_request() takes",
			 action);
		return MEMSIM_EINVAL;
	}
	uint32_t id = r->id;
	if ((rc = live_serve(lv)))
		return rc;
	if (act == MSIM_ACT_ALLOC && lv->refused) {
		/* Refused: the program got an out-of-memory error and holds
		 * no block.  The engine keeps going and ignores the id's
		 * FREE (its dead mark cleared, so the id can be reused). */
		memset(r, 0, sizeof(*r));
		r->kind = MSIM_REQ_FREE;
		r->id = id;
		msim_idmap_remove(&lv->ids, addr, &id);
		return (rc = live_serve(lv)) ? rc : 1;
	}
	if (act == MSIM_ACT_FREE_COMPLETED)
		msim_idmap_remove(&lv->ids, addr, &id);
	return 0;
}

int
memsim_live_get(const memsim_live_t *h, const char *name,
		int64_t *value_out)
{
	LIVE_OF(h, lv);
	if (!lv->sim || !name || !value_out)
		return MEMSIM_EINVAL;
	msim_stats_t st;
	msim_sim_stats(lv->sim, &st);
	return msim_stats_get(&st, name, value_out) ? MEMSIM_ENOTFOUND : 0;
}
