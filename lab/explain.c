/*
 * Explain (lab/explain.h): replays through the engine's observer, which
 * keeps per request id the bytes and tag of each live block, and sums by
 * category and by tag as blocks come and go (O(1) a request; the sums
 * are copied only at the moments explained).  A block's bytes are the
 * change of allocated_bytes its alloc made, and leave at the free that
 * brings allocated_bytes down (free() in PyTorch, even while the block's
 * stream events are pending), so the categories always sum to allocated.
 */
#include <config.h>

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/registry.h"
#include "lab/explain.h"
#include "lab/job.h"
#include "plots/plot.h"
#include "policies/pytorch.h"
#include "sim/device.h"
#include "sim/error.h"

/* The sums by site: a tag's blocks from the history and its seeded ones
 * (live before the history began) apart. */
#define EX_SLOT(tag, seeded) (2u * (size_t)(tag) + ((seeded) ? 1u : 0u))

/* The observer's bookkeeping during one replay. */
typedef struct ex_obs_s {
	msim_sim_t *sim;
	int64_t prev_alloc;  /* allocated_bytes.all.current so far */
	uint64_t *bytes;     /* by id: the live block's bytes */
	uint16_t *tag;       /* by id: its tag */
	uint8_t *live;       /* by id: 1, or 2 for a seeded block */
	size_t nid;
	uint64_t before_bytes, before_count; /* the seeded blocks live */
	uint64_t cat_bytes[MSIM_NCAT], cat_count[MSIM_NCAT];
	uint64_t *tag_bytes, *tag_count; /* by EX_SLOT(tag, seeded) */
	size_t ntag;
	uint64_t seq;        /* observed requests */
	uint64_t nreq;       /* allocs and frees (the engine's count) */
	uint64_t best;       /* peak reserved bytes so far */
	uint64_t best_seq;   /* where it was first reached */
	uint64_t best_alloc, best_alloc_seq; /* the same for allocated */
	uint64_t stop_seq;   /* 0: never */
	bool stop;
	bool oom;            /* the first OOM, recorded or not */
	bool oom_recorded;   /* it was a recorded OOM the replay repeats */
	uint64_t oom_seq;    /* its place among the requests served */
	uint64_t oom_size;
	uint64_t oom_rounded; /* its size as the policy logged the OOM */
	int err;             /* MSIM_ENOMEM on the way */
} ex_obs_t;

static int
ex_grow_ids(ex_obs_t *o, uint32_t id)
{
	if (id < o->nid)
		return 0;
	size_t n = o->nid ? o->nid : 1024;
	while (n <= id)
		n *= 2;
	uint64_t *b = realloc(o->bytes, n * sizeof(*b));
	if (!b)
		return MSIM_ENOMEM;
	o->bytes = b;
	uint16_t *t = realloc(o->tag, n * sizeof(*t));
	if (!t)
		return MSIM_ENOMEM;
	o->tag = t;
	uint8_t *l = realloc(o->live, n);
	if (!l)
		return MSIM_ENOMEM;
	o->live = l;
	memset(o->live + o->nid, 0, n - o->nid);
	o->nid = n;
	return 0;
}

static int
ex_grow_tags(ex_obs_t *o, size_t slot)
{
	if (slot < o->ntag)
		return 0;
	size_t n = o->ntag ? o->ntag : 64;
	while (n <= slot)
		n *= 2;
	uint64_t *b = realloc(o->tag_bytes, n * sizeof(*b));
	if (!b)
		return MSIM_ENOMEM;
	o->tag_bytes = b;
	uint64_t *c = realloc(o->tag_count, n * sizeof(*c));
	if (!c)
		return MSIM_ENOMEM;
	o->tag_count = c;
	memset(o->tag_bytes + o->ntag, 0, (n - o->ntag) * sizeof(*b));
	memset(o->tag_count + o->ntag, 0, (n - o->ntag) * sizeof(*c));
	o->ntag = n;
	return 0;
}

/* The category of tag, from the trace's table. */
static int
ex_cat(const msim_trace_t *t, uint16_t tag)
{
	int cat = MSIM_CAT_UNTAGGED;
	const char *site;
	if (t && tag)
		msim_trace_tag(t, tag, &cat, &site);
	return cat;
}

typedef struct ex_ctx_s {
	ex_obs_t o;
	const msim_trace_t *trace; /* NULL: a generator, untagged */
} ex_ctx_t;

static void
ex_unlive(ex_ctx_t *x, uint32_t id)
{
	ex_obs_t *o = &x->o;
	if (o->live[id] == 2) {
		o->before_bytes -= o->bytes[id];
		o->before_count--;
	}
	uint16_t tag = o->tag[id];
	int cat = ex_cat(x->trace, tag);
	size_t slot = EX_SLOT(tag, o->live[id] == 2);
	o->cat_bytes[cat] -= o->bytes[id];
	o->cat_count[cat]--;
	o->tag_bytes[slot] -= o->bytes[id];
	o->tag_count[slot]--;
	o->live[id] = 0;
}

/* At a reset_peaks row (traces/trace.h: the end of a partial history's
 * seeded start, as `memsim convert` writes it into csv and bin), the
 * blocks live are those from before the history: a converted snapshot is
 * explained as the snapshot is (a snapshot's own seeded blocks are marked
 * so already). */
static void
ex_seeded(ex_obs_t *o)
{
	for (size_t id = 0; id < o->nid; id++) {
		if (o->live[id] != 1)
			continue;
		size_t from = EX_SLOT(o->tag[id], 0), to = EX_SLOT(o->tag[id], 1);
		o->live[id] = 2;
		o->before_bytes += o->bytes[id];
		o->before_count++;
		o->tag_bytes[from] -= o->bytes[id];
		o->tag_count[from]--;
		o->tag_bytes[to] += o->bytes[id];
		o->tag_count[to]++;
	}
}

static void
ex_observe(void *ctx, const msim_req_t *req, int rc)
{
	ex_ctx_t *x = ctx;
	ex_obs_t *o = &x->o;
	if (o->err)
		return;
	msim_stats_t st;
	msim_sim_stats(o->sim, &st);
	int64_t now = st.allocated_bytes[MSIM_POOL_ALL].current;
	int64_t delta = now - o->prev_alloc;
	o->prev_alloc = now;
	o->seq++;
	switch (req->kind) {
	case MSIM_REQ_ALLOC:
		o->nreq++;
		if (rc == MSIM_EDEVOOM && !o->oom) {
			/* A recorded OOM (the program caught it and went on)
			 * is the moment a user with a snapshot of an OOM
			 * asks about, as much as one the replay meets first. */
			o->oom = true;
			o->oom_recorded = req->flags & MSIM_REQF_EXPECT_OOM;
			o->oom_seq = o->seq;
			o->oom_size = req->size;
		}
		if (rc || delta <= 0)
			break;
		if ((o->err = ex_grow_ids(o, req->id)) ||
		    (o->err = ex_grow_tags(o, EX_SLOT(req->tag, 1))))
			return;
		o->live[req->id] = req->flags & MSIM_REQF_SEED ? 2 : 1;
		if (o->live[req->id] == 2) {
			o->before_bytes += (uint64_t)delta;
			o->before_count++;
		}
		o->bytes[req->id] = (uint64_t)delta;
		o->tag[req->id] = req->tag;
		int cat = ex_cat(x->trace, req->tag);
		o->cat_bytes[cat] += (uint64_t)delta;
		o->cat_count[cat]++;
		size_t slot = EX_SLOT(req->tag, o->live[req->id] == 2);
		o->tag_bytes[slot] += (uint64_t)delta;
		o->tag_count[slot]++;
		uint64_t reserved =
			(uint64_t)st.reserved_bytes[MSIM_POOL_ALL].current;
		if (reserved > o->best) {
			o->best = reserved;
			o->best_seq = o->seq;
		}
		if ((uint64_t)now > o->best_alloc) {
			o->best_alloc = (uint64_t)now;
			o->best_alloc_seq = o->seq;
		}
		break;
	case MSIM_REQ_RESET_PEAKS:
		/* The end of a partial history's seeding: peaks count from
		 * the history's start (its fillers are gone by now). */
		o->best = (uint64_t)st.reserved_bytes[MSIM_POOL_ALL].current;
		o->best_alloc = (uint64_t)now;
		o->best_seq = o->best_alloc_seq = o->seq;
		ex_seeded(o);
		break;
	case MSIM_REQ_FREE_REQUESTED:
		if (req->id < o->nid && o->live[req->id] && delta < 0)
			ex_unlive(x, req->id);
		break;
	case MSIM_REQ_FREE:
		o->nreq++;
		if (req->id < o->nid && o->live[req->id])
			ex_unlive(x, req->id);
		break;
	default:
		break;
	}
	if (o->seq == o->stop_seq)
		o->stop = true;
}

static int
site_cmp(const void *a, const void *b)
{
	const msim_explain_site_t *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	int c = strcmp(x->site, y->site);
	if (c)
		return c;
	return x->before != y->before ? x->before - y->before
				      : x->category - y->category;
}

/* Fills m from the replay's state now.  Returns 0 or MSIM_ENOMEM. */
static int
ex_moment(ex_ctx_t *x, size_t top, msim_explain_moment_t *m)
{
	ex_obs_t *o = &x->o;
	msim_sim_stats(o->sim, &m->st);
	msim_stats_finish(&m->st);
	m->request = o->nreq;
	for (int p = 0; p < MSIM_NPOOL; p++) {
		int64_t res = m->st.reserved_bytes[p].current;
		int64_t alc = m->st.allocated_bytes[p].current;
		int64_t act = m->st.active_bytes[p].current;
		int64_t spl = m->st.inactive_split_bytes[p].current;
		m->reserved[p] = (uint64_t)res;
		m->allocated[p] = (uint64_t)alc;
		m->pending[p] = act > alc ? (uint64_t)(act - alc) : 0;
		m->split_free[p] = (uint64_t)spl;
		int64_t whole = res - (act > alc ? act : alc) - spl;
		m->whole_free[p] = whole > 0 ? (uint64_t)whole : 0;
	}
	m->before_bytes = o->before_bytes;
	m->before_count = o->before_count;
	memcpy(m->cat_bytes, o->cat_bytes, sizeof(m->cat_bytes));
	memcpy(m->cat_count, o->cat_count, sizeof(m->cat_count));
	size_t live = 0;
	for (size_t i = 0; i < o->ntag; i++)
		live += o->tag_count[i] != 0;
	m->nsites_live = live;
	msim_explain_site_t *v = calloc(live ? live : 1, sizeof(*v));
	if (!v)
		return MSIM_ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < o->ntag; i++) {
		if (!o->tag_count[i])
			continue;
		const char *site = "";
		int cat = MSIM_CAT_UNTAGGED;
		if (x->trace && i / 2)
			msim_trace_tag(x->trace, (uint16_t)(i / 2), &cat,
				       &site);
		v[k++] = (msim_explain_site_t){
			.site = (char *)site, .category = cat, .before = i & 1,
			.bytes = o->tag_bytes[i], .count = o->tag_count[i],
		};
	}
	qsort(v, k, sizeof(*v), site_cmp);
	if (k > top)
		k = top;
	for (size_t i = 0; i < k; i++)
		if (!(v[i].site = strdup(v[i].site))) {
			for (size_t j = 0; j < i; j++)
				free(v[j].site);
			free(v);
			return MSIM_ENOMEM;
		}
	m->sites = v;
	m->nsites = k;
	return 0;
}

const char *
msim_explain_site_category(const msim_explain_site_t *s)
{
	return s->before ? "before history" : msim_category_name(s->category);
}

static void
ex_moment_clear(msim_explain_moment_t *m)
{
	for (size_t i = 0; i < m->nsites; i++)
		free(m->sites[i].site);
	free(m->sites);
	m->sites = NULL;
	m->nsites = 0;
}

static void
ex_obs_clear(ex_obs_t *o)
{
	free(o->bytes);
	free(o->tag);
	free(o->live);
	free(o->tag_bytes);
	free(o->tag_count);
}

/* The settings every replay of cfg shares, the job's (lab/job.h). */
typedef struct ex_run_s {
	const msim_explain_config_t *cfg;
	msim_job_spec_t spec;       /* cfg's, with the shared time model */
	char hash[32];              /* the trace's, once known */
} ex_run_t;

/* A job's error as explain words it (as `memsim run` does). */
static int
ex_job_fail(const msim_job_err_t *err, int rc, char *why, size_t whylen)
{
	static const char *const opt[] = {
		[MSIM_JOB_EPOLICY] = "--policy: ",
		[MSIM_JOB_EPARAMS] = "--alloc-conf: ",
		[MSIM_JOB_ECAP] = "--cap: ",
	};
	const char *p = err->part > 0 && err->part <= MSIM_JOB_ECAP &&
			opt[err->part] ? opt[err->part] : "";
	snprintf(why, whylen, "%s%s", p, err->msg);
	return rc;
}

/*
 * One replay of the setting with parameters conf (NULL: the setting's
 * own) and allowed bytes cap (0: the setting's cap or fraction), opened
 * and costed as a job like `memsim run` does.  With x, the observer
 * follows it: it stops at x->o.stop_seq when set, and moment (if not
 * NULL) is filled where it stopped.  res (if not NULL) gets the job's
 * parameters, cap and policy.  Returns 0, or an error with why.
 */
static int
ex_replay(ex_run_t *er, const char *conf, uint64_t cap, ex_ctx_t *x,
	  msim_summary_t *sum, msim_stats_t *end, bool *tagged,
	  msim_explain_moment_t *moment, size_t top, msim_explain_t *res,
	  char *why, size_t whylen)
{
	msim_job_spec_t spec = er->spec;
	if (conf)
		spec.conf = conf;
	if (cap) {
		spec.cap = cap;
		spec.fraction = 0;
	}
	if (*er->hash)
		spec.trace_hash = er->hash; /* not read again after an OOM */
	if (x) {
		spec.observe = ex_observe;
		spec.observe_ctx = x;
	}
	msim_job_t *job;
	msim_job_err_t err;
	int rc = msim_job_open(&spec, false, &job, &err);
	if (rc)
		return ex_job_fail(&err, rc, why, whylen);
	msim_sim_t *sim = msim_job_sim(job);
	if (x && x->o.stop_seq) {
		/* Stopped at a moment: the figures there, not the run's. */
		x->o.sim = sim;
		x->trace = msim_job_trace(job);
		while (!x->o.stop && (rc = msim_sim_step(sim)) == 1)
			;
		if (rc < 0)
			snprintf(why, whylen, "%s", msim_sim_errmsg(sim));
		else
			rc = 0;
	} else {
		if (x) {
			x->o.sim = sim;
			x->trace = msim_job_trace(job);
		}
		if ((rc = msim_job_run(job, &err))) {
			ex_job_fail(&err, rc, why, whylen);
		} else if (!*er->hash) {
			snprintf(er->hash, sizeof(er->hash), "%s",
				 msim_job_result(job)->trace_hash);
		}
	}
	if (!rc && x) {
		if (x->o.err)
			snprintf(why, whylen, "%s", msim_strerror(rc = x->o.err));
		else if (moment)
			rc = ex_moment(x, top, moment);
		size_t nev;
		const msim_seg_event_t *ev =
			msim_device_events(msim_sim_device(sim), &nev);
		for (size_t i = nev; i-- > 0;)
			if (ev[i].action == MSIM_SEG_OOM) {
				x->o.oom_rounded = ev[i].size;
				break;
			}
	}
	if (x)
		x->trace = NULL;
	if (!rc) {
		if (sum)
			msim_sim_summary(sim, sum);
		if (end) {
			msim_sim_stats(sim, end);
			msim_stats_finish(end);
		}
		if (tagged) {
			msim_trace_t *t = msim_job_trace(job);
			*tagged = t && msim_trace_tagged(t);
		}
	}
	if (!rc && res) {
		const msim_policy_ops_t *ops = msim_job_policy(job);
		const msim_params_t *pv = msim_job_params(job);
		res->policy = ops->name;
		msim_params_canonical(pv, res->params, sizeof(res->params));
		res->cap = msim_device_cap(msim_sim_device(sim));
		int i = msim_params_index(pv, "large_segment_size_mb");
		res->large_segment = i >= 0 ? pv->v[i].u * MSIM_MiB
					    : 20 * MSIM_MiB;
	}
	msim_job_destroy(job);
	return rc;
}

/* Whether a replay served every request: no OOM, and no recorded OOM
 * that happened again. */
static bool
ex_fits(const msim_summary_t *sum)
{
	return sum->oom_request < 0 && sum->ooms_expected == 0;
}

/* Replays under conf and cap, recording the outcome as an alternative. */
static int
ex_alt(ex_run_t *er, msim_explain_t *ex, const char *what, const char *conf,
       uint64_t cap, char *why, size_t whylen)
{
	msim_summary_t sum;
	msim_stats_t st;
	int rc = ex_replay(er, conf, cap, NULL, &sum, &st, NULL, NULL, 0,
			   NULL, why, whylen);
	if (rc)
		return rc;
	msim_explain_alt_t *a = realloc(ex->alts, (ex->nalts + 1) *
					sizeof(*a));
	if (!a)
		return MSIM_ENOMEM;
	ex->alts = a;
	a = &a[ex->nalts++];
	memset(a, 0, sizeof(*a));
	snprintf(a->what, sizeof(a->what), "%s", what);
	snprintf(a->conf, sizeof(a->conf), "%s", conf);
	a->cap = cap ? cap : ex->cap;
	a->fits = ex_fits(&sum);
	a->oom_request = sum.oom_request;
	a->peak_reserved = (uint64_t)st.reserved_bytes[MSIM_POOL_ALL].peak;
	return 0;
}

/* conf with one more key (PyTorch takes the last of a repeated key). */
static void
ex_conf_with(char *buf, size_t n, const char *conf, const char *more)
{
	snprintf(buf, n, "%s%s%s", conf, *conf ? "," : "", more);
}

/* What memsim adds at an OOM: the alternatives, each replayed under the
 * parameters the run had (conf: canonical, a snapshot's own included)
 * with one key more. */
static int
ex_alternatives(ex_run_t *er, msim_explain_t *ex, const char *conf,
		char *why, size_t whylen)
{
	char c[sizeof(ex->params) + 64];
	int rc;
	if (strcmp(ex->policy, MSIM_POLICY_PYTORCH))
		return 0; /* the settings below are PyTorch's */
	ex_conf_with(c, sizeof(c), conf, "expandable_segments:True");
	if ((rc = ex_alt(er, ex, "expandable_segments:True", c, 0, why,
			 whylen)))
		return rc;
	static const char *const splits[] = {"512", "256", "128", "64", "32"};
	for (size_t i = 0; i < sizeof(splits) / sizeof(*splits); i++) {
		char kv[64];
		snprintf(kv, sizeof(kv), "max_split_size_mb:%s", splits[i]);
		ex_conf_with(c, sizeof(c), conf, kv);
		if ((rc = ex_alt(er, ex, kv, c, 0, why, whylen)))
			return rc;
	}
	if (ex->cap) { /* the collector acts only under a cap */
		ex_conf_with(c, sizeof(c), conf,
			     "garbage_collection_threshold:0.6");
		if ((rc = ex_alt(er, ex, "garbage_collection_threshold:0.6", c,
				 0, why, whylen)))
			return rc;
	}
	/* The smallest cap it fits under, by bisection in 2 MiB steps
	 * between just under the uncapped run's peak allocated (nothing
	 * below it fits) and its peak reserved (fits: the run never reaches
	 * the cap).  Fitting is taken to be monotone in the cap. */
	msim_summary_t sum;
	msim_stats_t st;
	ex_run_t uncapped = *er;
	uncapped.spec.cap = 0;
	uncapped.spec.fraction = 0;
	if ((rc = ex_replay(&uncapped, conf, 0, NULL, &sum, &st, NULL, NULL,
			    0, NULL, why, whylen)))
		return rc;
	ex->min_cap_runs = 1;
	if (!ex_fits(&sum))
		return 0; /* it does not fit on the device at all */
	uint64_t step = 2 * MSIM_MiB;
	uint64_t lo = (uint64_t)st.allocated_bytes[MSIM_POOL_ALL].peak;
	uint64_t hi = (uint64_t)st.reserved_bytes[MSIM_POOL_ALL].peak;
	lo = lo ? (lo - 1) / step * step : 0; /* a cap of lo may fit */
	hi = (hi + step - 1) / step * step;
	while (hi - lo > step) {
		uint64_t mid = (lo + (hi - lo) / 2) / step * step;
		if (mid <= lo)
			mid = lo + step;
		if ((rc = ex_replay(er, conf, mid, NULL, &sum, NULL, NULL,
				    NULL, 0, NULL, why, whylen)))
			return rc;
		ex->min_cap_runs++;
		if (ex_fits(&sum))
			hi = mid;
		else
			lo = mid;
	}
	ex->min_cap = hi;
	return 0;
}

int
msim_explain_run(const msim_explain_config_t *cfg, msim_explain_t **out,
		 char *why, size_t whylen)
{
	size_t top = cfg->top ? cfg->top : 10;
	int rc = MSIM_ENOMEM;
	ex_ctx_t x = {0};
	ex_run_t er = {.cfg = cfg, .spec = cfg->spec};
	msim_timemodel_t *tm = NULL;
	msim_explain_t *ex = calloc(1, sizeof(*ex));
	if (!ex) {
		snprintf(why, whylen, "%s", msim_strerror(rc));
		return rc;
	}
	if (!er.spec.policy)
		er.spec.policy = MSIM_POLICY_DEFAULT;
	/* The moments are those of the first OOM. */
	er.spec.keep_going = false;
	/* One calibration for every replay. */
	if (!er.spec.timemodel) {
		if ((rc = msim_timemodel_h200(&tm))) {
			snprintf(why, whylen, "%s", msim_strerror(rc));
			goto fail;
		}
		er.spec.timemodel = tm;
	}
	ex->capacity = er.spec.capacity ? er.spec.capacity : MSIM_H200_BYTES;
	ex->context_bytes = cfg->context_bytes;
	/* First replay: to the end or the OOM, finding the peak. */
	if ((rc = ex_replay(&er, NULL, 0, &x, &ex->sum, &ex->end, &ex->tagged,
			    &ex->at_oom, top, ex, why, whylen)))
		goto fail;
	ex->oom = x.o.oom;
	ex->oom_size = x.o.oom_size;
	uint64_t oom_rounded = x.o.oom_rounded;
	uint64_t stop = x.o.best_seq;
	uint64_t stop_alloc = x.o.best_alloc_seq;
	uint64_t recorded_oom = x.o.oom_recorded ? x.o.oom_seq : 0;
	if (!ex->oom)
		ex_moment_clear(&ex->at_oom);
	ex_obs_clear(&x.o);
	memset(&x, 0, sizeof(x));
	/* A recorded OOM does not stop the replay: its moment comes from
	 * a replay stopped there. */
	if (recorded_oom) {
		ex_moment_clear(&ex->at_oom);
		x.o.stop_seq = recorded_oom;
		if ((rc = ex_replay(&er, NULL, 0, &x, NULL, NULL, NULL,
				    &ex->at_oom, top, NULL, why, whylen)))
			goto fail;
		oom_rounded = x.o.oom_rounded;
		ex_obs_clear(&x.o);
		memset(&x, 0, sizeof(x));
	}
	/* Second replay: stop where reserved bytes first reached the peak. */
	if (stop) {
		x.o.stop_seq = stop;
		if ((rc = ex_replay(&er, NULL, 0, &x, NULL, NULL, NULL,
				    &ex->peak, top, NULL, why, whylen)))
			goto fail;
		ex_obs_clear(&x.o);
		memset(&x, 0, sizeof(x));
	}
	/* Third: where allocated bytes first reached theirs, if apart. */
	if (stop_alloc && stop_alloc != stop) {
		x.o.stop_seq = stop_alloc;
		if ((rc = ex_replay(&er, NULL, 0, &x, NULL, NULL, NULL,
				    &ex->peak_alloc, top, NULL, why, whylen)))
			goto fail;
		ex->peak_alloc_apart = true;
		ex_obs_clear(&x.o);
		memset(&x, 0, sizeof(x));
	}
	if (ex->oom) {
		int64_t res = ex->at_oom.st.reserved_bytes[MSIM_POOL_ALL].current;
		/* round_size() of the request, as the policy logged it */
		uint64_t rounded = oom_rounded ? oom_rounded : ex->oom_size;
		/* PyTorch names the segment it tried; other policies the
		 * block */
		ex->oom_alloc_size = strcmp(ex->policy, MSIM_POLICY_PYTORCH) ? rounded
			: msim_pytorch_segment_size(rounded, ex->large_segment);
		uint64_t used = (uint64_t)res + ex->context_bytes;
		ex->oom_device_free = used < ex->capacity ? ex->capacity - used
							  : 0;
		if (cfg->alternatives &&
		    (rc = ex_alternatives(&er, ex, ex->params, why, whylen)))
			goto fail;
	}
	msim_timemodel_destroy(tm);
	*out = ex;
	return 0;
fail:
	ex_obs_clear(&x.o);
	msim_timemodel_destroy(tm);
	msim_explain_destroy(ex);
	return rc;
}

void
msim_explain_destroy(msim_explain_t *ex)
{
	if (!ex)
		return;
	ex_moment_clear(&ex->peak);
	ex_moment_clear(&ex->peak_alloc);
	ex_moment_clear(&ex->at_oom);
	free(ex->alts);
	free(ex);
}

char *
msim_torch_format_size(uint64_t size, char *buf, size_t n)
{
	/* c10::CachingAllocator::format_size() */
	if (size <= 1024)
		snprintf(buf, n, "%" PRIu64 " bytes", size);
	else if (size <= 1048576)
		snprintf(buf, n, "%.2f KiB", (double)size / 1024.0);
	else if (size <= UINT64_C(1073741824))
		snprintf(buf, n, "%.2f MiB", (double)size / 1048576.0);
	else
		snprintf(buf, n, "%.2f GiB", (double)size / 1073741824.0);
	return buf;
}

size_t
msim_explain_oom_message(const msim_explain_t *ex, char *buf, size_t n)
{
	char a[32], c[32], f[32], u[32], al[32], r[32], cap[48] = "";
	const msim_stats_t *st = &ex->at_oom.st;
	int64_t res = st->reserved_bytes[MSIM_POOL_ALL].current;
	int64_t alc = st->allocated_bytes[MSIM_POOL_ALL].current;
	if (ex->cap) {
		msim_torch_format_size(ex->cap, cap, sizeof(cap) - 10);
		strcat(cap, " allowed; ");
	}
	/* DeviceCachingAllocator::malloc(), the OutOfMemoryError text */
	int k = snprintf(buf, n,
		"CUDA out of memory. Tried to allocate %s. GPU 0 has a total "
		"capacity of %s of which %s is free. Including non-PyTorch "
		"memory, this process has %s memory in use. %sOf the "
		"allocated memory %s is allocated by PyTorch, and %s is "
		"reserved by PyTorch but unallocated. If reserved but "
		"unallocated memory is large try setting "
		"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
		"fragmentation.  See documentation for Memory Management  "
		"(https://docs.pytorch.org/docs/stable/notes/cuda.html"
		"#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)",
		msim_torch_format_size(ex->oom_alloc_size, a, sizeof(a)),
		msim_torch_format_size(ex->capacity, c, sizeof(c)),
		msim_torch_format_size(ex->oom_device_free, f, sizeof(f)),
		msim_torch_format_size((uint64_t)res + ex->context_bytes, u,
				       sizeof(u)),
		cap, msim_torch_format_size((uint64_t)alc, al, sizeof(al)),
		msim_torch_format_size((uint64_t)(res - alc), r, sizeof(r)));
	return k < 0 ? 0 : (size_t)k;
}

/* The figures being built (msim_explain_figs()) and whether all went in. */
typedef struct xf_s {
	msim_figs_t *f;
	bool ok;
} xf_t;

/* Appends one figure of kind (MSIM_FIG_INT, _BOOL: i; _TEXT: t, NULL a
 * JSON null; _EMPTY: i 1 an object, 0 a list) named by fmt. */
static void __attribute__((format(printf, 5, 6)))
xf_add(xf_t *x, int kind, int64_t i, const char *t, const char *fmt, ...)
{
	char name[256];
	va_list ap;
	if (!x->ok)
		return;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	switch (kind) {
	case MSIM_FIG_INT: x->ok = !msim_figs_int(x->f, name, i); break;
	case MSIM_FIG_BOOL: x->ok = !msim_figs_bool(x->f, name, i); break;
	case MSIM_FIG_EMPTY: x->ok = !msim_figs_empty(x->f, name, i); break;
	default: x->ok = !msim_figs_text(x->f, name, t); break;
	}
}

#define XF_INT(x, v, ...)                                                     \
	xf_add(x, MSIM_FIG_INT, (int64_t)(v), NULL, __VA_ARGS__)

/* The figures of moment m under prefix p ("peak.", "oom.state."). */
static void
xf_moment(xf_t *x, const char *p, const msim_explain_t *ex,
	  const msim_explain_moment_t *m)
{
	/* MSIM_POOL_ALL, _SMALL, _LARGE as memory_stats() names them */
	static const char *const pools[] = {"all", "small_pool",
					    "large_pool"};
	static_assert(sizeof(pools) / sizeof(pools[0]) == MSIM_NPOOL,
		      "pools");
	static const char *const parts[] = {"reserved", "allocated",
					    "pending", "inactive_split",
					    "whole_free_segments"};
	const uint64_t *v[] = {m->reserved, m->allocated, m->pending,
			       m->split_free, m->whole_free};
	XF_INT(x, m->request, "%srequest", p);
	for (int k = 0; k < MSIM_NPOOL; k++)
		for (int r = 0; r < 5; r++)
			XF_INT(x, v[r][k], "%s%s.%s", p, pools[k], parts[r]);
	XF_INT(x, m->reserved[MSIM_POOL_ALL] + ex->context_bytes,
	       "%snvidia_smi_bytes", p);
	bool any = false;
	for (int c = 0; c < MSIM_NCAT; c++) {
		if (!m->cat_count[c])
			continue;
		const char *cat = msim_category_name(c);
		XF_INT(x, m->cat_bytes[c], "%scategories.%s.bytes", p, cat);
		XF_INT(x, m->cat_count[c], "%scategories.%s.blocks", p, cat);
		any = true;
	}
	if (!any)
		xf_add(x, MSIM_FIG_EMPTY, 1, NULL, "%scategories", p);
	XF_INT(x, m->before_bytes, "%sbefore_history.bytes", p);
	XF_INT(x, m->before_count, "%sbefore_history.blocks", p);
	XF_INT(x, m->nsites_live, "%ssites_live", p);
	for (size_t i = 0; i < m->nsites; i++) {
		const msim_explain_site_t *s = &m->sites[i];
		xf_add(x, MSIM_FIG_TEXT, 0, s->site, "%ssites.%zu.site", p, i);
		xf_add(x, MSIM_FIG_TEXT, 0, msim_explain_site_category(s),
		       "%ssites.%zu.category", p, i);
		XF_INT(x, s->bytes, "%ssites.%zu.bytes", p, i);
		XF_INT(x, s->count, "%ssites.%zu.blocks", p, i);
	}
	if (!m->nsites)
		xf_add(x, MSIM_FIG_EMPTY, 0, NULL, "%ssites", p);
}

/* After an out-of-memory: PyTorch's message, the state then, the
 * settings replayed and the smallest cap. */
static void
xf_oom(xf_t *x, const msim_explain_t *ex, char *text, size_t n)
{
	XF_INT(x, ex->oom_size, "oom.size");
	XF_INT(x, ex->oom_alloc_size, "oom.alloc_size");
	XF_INT(x, ex->oom_device_free, "oom.device_free");
	msim_explain_oom_message(ex, text, n);
	xf_add(x, MSIM_FIG_TEXT, 0, text, "oom.message");
	xf_moment(x, "oom.state.", ex, &ex->at_oom);
	for (size_t i = 0; i < ex->nalts; i++) {
		const msim_explain_alt_t *al = &ex->alts[i];
		const char *a = "oom.alternatives";
		xf_add(x, MSIM_FIG_TEXT, 0, al->what, "%s.%zu.setting", a, i);
		xf_add(x, MSIM_FIG_BOOL, al->fits, NULL, "%s.%zu.fits", a, i);
		XF_INT(x, al->oom_request, "%s.%zu.oom_request", a, i);
		XF_INT(x, al->peak_reserved, "%s.%zu.peak_reserved", a, i);
	}
	if (!ex->nalts)
		xf_add(x, MSIM_FIG_EMPTY, 0, NULL, "oom.alternatives");
	XF_INT(x, ex->min_cap, "oom.min_cap");
	XF_INT(x, ex->min_cap_runs, "oom.min_cap_replays");
}

int
msim_explain_figs(msim_figs_t *f, const msim_explain_t *ex,
		  const char *trace)
{
	xf_t x = {f, true};
	char text[8192];
	xf_add(&x, MSIM_FIG_TEXT, 0, trace, "trace");
	xf_add(&x, MSIM_FIG_TEXT, 0, ex->policy, "policy");
	xf_add(&x, MSIM_FIG_TEXT, 0, ex->params, "params");
	XF_INT(&x, ex->capacity, "capacity_bytes");
	XF_INT(&x, ex->cap, "cap_bytes");
	XF_INT(&x, ex->context_bytes, "context_bytes");
	xf_add(&x, MSIM_FIG_BOOL, ex->tagged, NULL, "tagged");
	XF_INT(&x, ex->sum.requests, "requests");
	xf_moment(&x, "peak.", ex, &ex->peak);
	if (ex->peak_alloc_apart)
		xf_moment(&x, "peak_allocated.", ex, &ex->peak_alloc);
	else
		xf_add(&x, MSIM_FIG_TEXT, 0, NULL, "peak_allocated");
	XF_INT(&x, ex->sum.oom_request, "oom_request");
	if (ex->oom)
		xf_oom(&x, ex, text, sizeof(text));
	/* torch.cuda.memory_summary() at the end (the OOM) and at the
	 * peak, as `memsim summary [--at peak]` prints it. */
	msim_memory_summary(&ex->end, 0, false, text, sizeof(text));
	xf_add(&x, MSIM_FIG_TEXT, 0, text, "summary");
	msim_memory_summary(&ex->peak.st, 0, false, text, sizeof(text));
	xf_add(&x, MSIM_FIG_TEXT, 0, text, "summary_at_peak");
	return x.ok ? 0 : MSIM_ENOMEM;
}

/* torch/cuda/memory.py, memory_summary(): _format_size */
static void
sum_size(char *out, int64_t sz, double pref)
{
	static const char *const prefixes[] = {"B  ", "KiB", "MiB", "GiB",
					       "TiB", "PiB"};
	const char *prefix = prefixes[0];
	for (int i = 1; i < 6; i++) {
		if (pref < 768 * 1024)
			break;
		prefix = prefixes[i];
		/* Python's // floors */
		sz = sz >= 0 ? sz / 1024 : -((-sz + 1023) / 1024);
		pref /= 1024;
	}
	sprintf(out, "%6" PRId64 " %s", sz, prefix);
}

/* _format_count */
static void
sum_count(char *out, int64_t cnt, double pref)
{
	static const char *const prefixes[] = {" ", "K", "M"};
	const char *prefix = prefixes[0];
	for (int i = 1; i < 3; i++) {
		if (pref < 750 * 1000)
			break;
		prefix = prefixes[i];
		cnt = cnt >= 0 ? cnt / 1000 : -((-cnt + 999) / 1000);
		pref /= 1000;
	}
	sprintf(out, "%7" PRId64 " %s ", cnt, prefix);
}

typedef struct sum_buf_s {
	char *buf;
	size_t n, len;
} sum_buf_t;

static void
sum_put(sum_buf_t *b, const char *s)
{
	size_t k = strlen(s);
	if (b->len < b->n) {
		size_t room = b->n - b->len - 1;
		memcpy(b->buf + b->len, s, k < room ? k : room);
		b->buf[b->len + (k < room ? k : room)] = '\0';
	}
	b->len += k;
}

static void
sum_rule(sum_buf_t *b, char c)
{
	char line[80];
	memset(line, c, 75);
	line[75] = '\0';
	sum_put(b, "|");
	sum_put(b, line);
	sum_put(b, "|\n");
}

static void
sum_row(sum_buf_t *b, const char *name, const msim_stat_t *s,
	const msim_stat_t *pref, bool bytes)
{
	char v[4][32], line[256];
	int64_t val[4] = {s->current, s->peak, s->allocated, s->freed};
	int64_t pv[4] = {pref->current, pref->peak, pref->allocated,
			 pref->freed};
	for (int i = 0; i < 4; i++) {
		if (bytes)
			sum_size(v[i], val[i], (double)pv[i]);
		else
			sum_count(v[i], val[i], (double)pv[i]);
	}
	snprintf(line, sizeof(line), "| %-21s | %s | %s | %s | %s |\n", name,
		 v[0], v[1], v[2], v[3]);
	sum_put(b, line);
}

size_t
msim_memory_summary(const msim_stats_t *st, int device, bool abbreviated,
		    char *buf, size_t n)
{
	sum_buf_t b = {buf, n, 0};
	char line[160];
	if (n)
		buf[0] = '\0';
	sum_rule(&b, '=');
	snprintf(line, sizeof(line), "| %16s PyTorch CUDA memory summary, "
		 "device ID %-17d |\n", "", device);
	sum_put(&b, line);
	sum_rule(&b, '-');
	snprintf(line, sizeof(line), "|  %9s CUDA OOMs: %-12" PRId64 " | %6s "
		 "cudaMalloc retries: %-8" PRId64 "  |\n", "", st->num_ooms,
		 "", st->num_alloc_retries);
	sum_put(&b, line);
	sum_rule(&b, '=');
	sum_put(&b, "|        Metric         | Cur Usage  | Peak Usage | "
		    "Tot Alloc  | Tot Freed  |\n");
	static const struct {
		size_t off;
		const char *name;
		bool bytes;
	} metrics[] = {
		{offsetof(msim_stats_t, allocated_bytes), "Allocated memory",
		 true},
		{offsetof(msim_stats_t, active_bytes), "Active memory", true},
		{offsetof(msim_stats_t, requested_bytes), "Requested memory",
		 true},
		{offsetof(msim_stats_t, reserved_bytes), "GPU reserved memory",
		 true},
		{offsetof(msim_stats_t, inactive_split_bytes),
		 "Non-releasable memory", true},
		{offsetof(msim_stats_t, allocation), "Allocations", false},
		{offsetof(msim_stats_t, active), "Active allocs", false},
		{offsetof(msim_stats_t, segment), "GPU reserved segments",
		 false},
		{offsetof(msim_stats_t, inactive_split),
		 "Non-releasable allocs", false},
	};
	for (size_t i = 0; i < sizeof(metrics) / sizeof(*metrics); i++) {
		const msim_stat_t *s = (const msim_stat_t *)
			((const char *)st + metrics[i].off);
		sum_rule(&b, '-');
		sum_row(&b, metrics[i].name, &s[MSIM_POOL_ALL],
			&s[MSIM_POOL_ALL], metrics[i].bytes);
		if (!abbreviated) {
			sum_row(&b, "      from large pool", &s[MSIM_POOL_LARGE],
				&s[MSIM_POOL_ALL], metrics[i].bytes);
			sum_row(&b, "      from small pool", &s[MSIM_POOL_SMALL],
				&s[MSIM_POOL_ALL], metrics[i].bytes);
		}
	}
	sum_rule(&b, '-');
	sum_row(&b, "Oversize allocations", &st->oversize_allocations,
		&st->oversize_allocations, false);
	sum_rule(&b, '-');
	sum_row(&b, "Oversize GPU segments", &st->oversize_segments,
		&st->oversize_segments, false);
	sum_rule(&b, '=');
	return b.len;
}

size_t
msim_explain_warnings(const msim_policy_ops_t *ops, const msim_params_t *pv,
		      bool has_cap, char (*lines)[256], size_t max)
{
	size_t k = 0;
	int gc = msim_params_index(pv, "garbage_collection_threshold");
	int fr = msim_params_index(pv, "per_process_memory_fraction");
	bool cap = has_cap || (fr >= 0 && pv->v[fr].set);
	if (gc >= 0 && pv->v[gc].d > 0 && !cap && k < max)
		snprintf(lines[k++], 256, "%.16s: garbage_collection_threshold:"
			 "%.16s does nothing without a cap (it acts only under "
			 "set_per_process_memory_fraction: give --cap)",
			 ops->name, pv->v[gc].text);
	return k;
}

int
msim_explain_plot(const msim_explain_t *ex, const char *csv_path,
		  const char *out, const char *title, const char *plots_dir,
		  const char *gnuplot, char *why, size_t whylen)
{
	FILE *fp = fopen(csv_path, "w");
	if (!fp) {
		snprintf(why, whylen, "%s: cannot write", csv_path);
		return MSIM_EIO;
	}
	/* The parts, bottom to top: categories (untagged last), then the
	 * cache. */
	fprintf(fp, "moment");
	for (int k = 1; k <= MSIM_NCAT; k++)
		fprintf(fp, ",%s", msim_category_name(k % MSIM_NCAT));
	fprintf(fp, ",pending free,inactive split,whole free segments\n");
	const msim_explain_moment_t *m[2] = {&ex->peak, &ex->at_oom};
	const char *name[2] = {"peak reserved", "out of memory"};
	for (int i = 0; i < (ex->oom ? 2 : 1); i++) {
		fprintf(fp, "%s", name[i]);
		for (int k = 1; k <= MSIM_NCAT; k++)
			fprintf(fp, ",%.3f", (double)m[i]->cat_bytes[k %
				MSIM_NCAT] / (double)MSIM_MiB);
		fprintf(fp, ",%.3f,%.3f,%.3f\n",
			(double)m[i]->pending[MSIM_POOL_ALL] / (double)MSIM_MiB,
			(double)m[i]->split_free[MSIM_POOL_ALL] /
				(double)MSIM_MiB,
			(double)m[i]->whole_free[MSIM_POOL_ALL] /
				(double)MSIM_MiB);
	}
	if (fclose(fp)) {
		snprintf(why, whylen, "%s: cannot write", csv_path);
		return MSIM_EIO;
	}
	if (!out)
		return 0;
	return msim_plot_run(plots_dir, gnuplot, "breakdown", csv_path, out,
			     title, why, whylen);
}
