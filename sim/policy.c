/*
 * The wrappers every caller goes through (SQLite's os.c does the same for
 * its VFS): they check what holds for every policy, so a policy file holds
 * only its algorithm.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/policy.h"
#include "sim/error.h"

struct msim_policy_s {
	const msim_policy_ops_t *ops;
	void *state;
	msim_device_t *dev;
};

int
msim_policy_new(const msim_policy_ops_t *ops, msim_device_t *dev,
		const msim_params_t *pv, msim_policy_t **out, char *why,
		size_t whylen)
{
	msim_params_t defaults = {0};
	msim_policy_t *pol = calloc(1, sizeof(*pol));
	int rc = MSIM_ENOMEM;
	if (why && whylen)
		why[0] = '\0';
	if (!pol)
		goto fail;
	if (!pv) {
		if ((rc = msim_params_init(&defaults, ops->params)))
			goto fail;
		pv = &defaults;
	}
	pol->ops = ops;
	pol->dev = dev;
	rc = ops->create(&pol->state, dev, pv, why, whylen);
	if (rc)
		goto fail;
	msim_params_clear(&defaults);
	*out = pol;
	return 0;
fail:
	if (why && whylen && !why[0])
		snprintf(why, whylen, "%s", msim_strerror(rc));
	msim_params_clear(&defaults);
	free(pol);
	return rc;
}

void
msim_policy_destroy(msim_policy_t *pol)
{
	if (!pol)
		return;
	pol->ops->destroy(pol->state);
	free(pol);
}

const msim_policy_ops_t *
msim_policy_ops(const msim_policy_t *pol)
{
	return pol->ops;
}

int
msim_policy_alloc(msim_policy_t *pol, const msim_req_t *req,
		  msim_addr_t *addr_out)
{
	if (!msim_policy_size_ok(req->size))
		return MSIM_EINVAL;
	int rc = pol->ops->alloc(pol->state, req, addr_out);
	/* cudaMalloc's alignment.  Segments placed at a trace's recorded
	 * addresses (--addresses trace) can break it: bad input, not a
	 * broken policy. */
	if (rc == 0 && *addr_out % MSIM_DEVICE_ALIGN)
		return MSIM_EFORMAT;
	return rc;
}

int
msim_policy_free(msim_policy_t *pol, const msim_req_t *req)
{
	return pol->ops->free(pol->state, req);
}

int
msim_policy_free_requested(msim_policy_t *pol, const msim_req_t *req)
{
	if (!pol->ops->free_requested)
		return 0;
	return pol->ops->free_requested(pol->state, req);
}

int
msim_policy_free_now(msim_policy_t *pol, const msim_req_t *req)
{
	if (pol->ops->free_now)
		return pol->ops->free_now(pol->state, req);
	int rc = msim_policy_free_requested(pol, req);
	return rc ? rc : pol->ops->free(pol->state, req);
}

void
msim_policy_hot(const msim_policy_t *pol, msim_policy_hot_t *out)
{
	*out = (msim_policy_hot_t){pol->state, pol->ops->alloc, pol->ops->free,
		pol->ops->free_requested, pol->ops->free_now, pol->ops->serve};
}

int
msim_policy_empty_cache(msim_policy_t *pol)
{
	if (!pol->ops->empty_cache)
		return 0;
	return pol->ops->empty_cache(pol->state);
}

int
msim_policy_private_pool(msim_policy_t *pol, const msim_req_t *req)
{
	if (!pol->ops->pool)
		return 0;
	return pol->ops->pool(pol->state, req);
}

bool
msim_policy_would_release(const msim_policy_t *pol, const msim_req_t *req)
{
	return pol->ops->would_release &&
	       pol->ops->would_release(pol->state, req);
}

int
msim_policy_on_event(msim_policy_t *pol, uint64_t cookie)
{
	if (!pol->ops->on_event)
		return 0;
	return pol->ops->on_event(pol->state, cookie);
}

void
msim_policy_stats(const msim_policy_t *pol, msim_stats_t *out)
{
	memset(out, 0, sizeof(*out));
	out->max_split_size = -1;
	pol->ops->stats(pol->state, out);
	msim_device_stats(pol->dev, out);
	msim_stats_finish(out);
}

bool
msim_policy_blocks(const msim_policy_t *pol,
		   void (*fn)(void *ctx, const msim_block_t *b), void *ctx)
{
	if (!pol->ops->blocks)
		return false;
	pol->ops->blocks(pol->state, fn, ctx);
	return true;
}

void
msim_policy_sample(const msim_policy_t *pol, int64_t *allocated_out,
		   int64_t *reserved_out, int64_t *active_out,
		   int64_t *requested_out)
{
	if (!pol->ops->sample) {
		msim_stats_t st;
		msim_policy_stats(pol, &st);
		*allocated_out = st.allocated_bytes[MSIM_POOL_ALL].current;
		*reserved_out = st.reserved_bytes[MSIM_POOL_ALL].current;
		*active_out = st.active_bytes[MSIM_POOL_ALL].current;
		*requested_out = st.requested_bytes[MSIM_POOL_ALL].current;
		return;
	}
	pol->ops->sample(pol->state, allocated_out, active_out, requested_out);
	/* The device's reserved_bytes (msim_device_stats()), kept beside. */
	*reserved_out = (int64_t)msim_device_reserved(pol->dev);
}

void
msim_policy_free_info(const msim_policy_t *pol, uint64_t *largest_out,
		      uint64_t *total_out)
{
	*largest_out = *total_out = 0;
	if (pol->ops->free_info)
		pol->ops->free_info(pol->state, largest_out, total_out);
}
