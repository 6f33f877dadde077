/* Inputs of input.h: trace files, model specs and transforms as sources. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/input.h"
#include "sim/error.h"
#include "sim/units.h"
#include "traces/gen_model.h"
#include "traces/model_spec.h"
#include "traces/strategy.h"

int
msim_file_hash(const char *path, char hex[17], char *why, size_t whylen)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return MSIM_EIO;
	}
	msim_hash_t h;
	msim_hash_init(&h);
	char buf[1 << 16];
	size_t got;
	while ((got = fread(buf, 1, sizeof(buf), fp)) > 0)
		msim_hash_update(&h, buf, got);
	int bad = ferror(fp);
	fclose(fp);
	if (bad) {
		snprintf(why, whylen, "%s: cannot read", path);
		return MSIM_EIO;
	}
	snprintf(hex, 17, "%016" PRIx64, msim_hash_final(&h));
	return 0;
}

static void
input_meta(msim_input_t *in, const char *key, uint64_t value)
{
	if (in->nmeta == sizeof(in->meta) / sizeof(in->meta[0]))
		return;
	snprintf(in->meta[in->nmeta][0], sizeof(in->meta[0][0]), "%s", key);
	snprintf(in->meta[in->nmeta][1], sizeof(in->meta[0][1]), "%" PRIu64,
		 value);
	in->nmeta++;
}

/* A checkpoint budget's measure under a cap: the schedule replayed
 * through the run's policy; what it reserves at its peak, UINT64_MAX when
 * it runs out of memory. */
static int
input_measure(void *ctx, msim_gen_t *g, uint64_t *peak_out)
{
	msim_sim_config_t cfg = *(const msim_sim_config_t *)ctx;
	cfg.source = msim_gen_source(g);
	cfg.device.log_events = 0;
	cfg.observe = NULL; /* the run's own observer is not this one's */
	cfg.observe_ctx = NULL;
	cfg.keep_going = false;
	cfg.peak_blocks = false;
	msim_sim_t *sim = NULL;
	char why[256];
	int rc = msim_sim_new(&cfg, &sim, why, sizeof(why));
	if (!rc)
		rc = msim_sim_run(sim);
	if (!rc) {
		msim_summary_t sum;
		msim_stats_t st;
		msim_sim_summary(sim, &sum);
		msim_sim_stats(sim, &st);
		*peak_out = sum.oom_request >= 0 || st.num_ooms
			? UINT64_MAX
			: (uint64_t)st.reserved_bytes[0].peak;
	}
	msim_sim_destroy(sim);
	return rc;
}

int
msim_input_open(msim_input_t *in, const char *trace, const char *model_spec,
		const char *strategy, const msim_trace_options_t *topt,
		const msim_sim_config_t *run, char *why, size_t whylen)
{
	memset(in, 0, sizeof(*in));
	int rc;
	if (model_spec) {
		/* The canonical shape with the strategies appended. */
		size_t need = strlen(model_spec) + 2 +
			      (strategy ? strlen(strategy) : 0);
		char *text = malloc(need);
		msim_model_cfg_t cfg;
		if (!text || !(in->gen = malloc(sizeof(*in->gen)))) {
			free(text);
			return MSIM_ENOMEM;
		}
		snprintf(text, need, "%s%s%s", model_spec,
			 strategy && *strategy ? "," : "",
			 strategy ? strategy : "");
		rc = msim_model_spec_parse(text, &cfg, why, whylen);
		free(text);
		if (!rc && run && run->fraction > 0 &&
		    cfg.ckpt.kind == MSIM_CKPT_BUDGET) {
			cfg.ckpt.measure = input_measure;
			cfg.ckpt.measure_ctx = (void *)run;
		}
		msim_gen_init(in->gen, false);
		if (!rc)
			rc = msim_model_generate(&cfg, in->gen, why, whylen);
		if (rc) {
			msim_input_close(in);
			return rc;
		}
		in->src = msim_gen_source(in->gen);
		in->format = "model";
		input_meta(in, "recompute_layer_forwards", in->gen->recompute);
		input_meta(in, "generated_peak_allocated_bytes",
			   in->gen->peak);
		return 0;
	}
	if ((rc = msim_trace_open(trace, topt, &in->trace, why, whylen)))
		return rc;
	in->src = msim_trace_source(in->trace);
	in->format = msim_trace_format_name(in->trace);
	/* "transform:dtype=X", maybe followed by ";record:..." (what made
	 * the recording, lab/sweep.h: nothing to apply). */
	const char *pfx = "transform:";
	if (strategy && !strncmp(strategy, pfx, strlen(pfx))) {
		int dtype;
		char spec[128];
		snprintf(spec, sizeof(spec), "%.*s",
			 (int)strcspn(strategy + strlen(pfx), ";"),
			 strategy + strlen(pfx));
		if ((rc = msim_xform_parse(spec, &dtype, why, whylen)) ||
		    (rc = msim_xform_dtype_new(in->src, dtype, &in->xform, why,
					       whylen))) {
			msim_input_close(in);
			return rc;
		}
		in->src = msim_xform_source(in->xform);
		msim_xform_stats_t xs;
		msim_xform_stats(in->xform, &xs);
		input_meta(in, "transform_params", xs.params);
		input_meta(in, "transform_pshape_allocs", xs.pshape);
		input_meta(in, "transform_act_allocs", xs.act);
		input_meta(in, "transform_cached_forwards", xs.forwards);
	}
	return 0;
}

void
msim_input_close(msim_input_t *in)
{
	msim_xform_destroy(in->xform);
	if (!in->cache)
		msim_trace_close(in->trace);
	if (in->gen) {
		msim_gen_clear(in->gen);
		free(in->gen);
	}
	memset(in, 0, sizeof(*in));
}

void
msim_input_meta(const msim_input_t *in, const char *const *base,
		const char **kv_out, size_t n)
{
	size_t k = 0;
	for (; base && base[k] && k + 3 < n; k += 2) {
		kv_out[k] = base[k];
		kv_out[k + 1] = base[k + 1];
	}
	for (size_t i = 0; i < in->nmeta && k + 3 < n; i++, k += 2) {
		kv_out[k] = in->meta[i][0];
		kv_out[k + 1] = in->meta[i][1];
	}
	kv_out[k] = NULL;
}

int
msim_input_describe(const char *trace, const char *transform,
		    char **spec_out, char **strategy_out, char *why,
		    size_t whylen)
{
	*spec_out = *strategy_out = NULL;
	char buf[2048];
	if (msim_model_spec_is(trace)) {
		msim_model_cfg_t cfg;
		int rc;
		if (transform) {
			snprintf(why, whylen, "--transform: applies to a "
				 "recorded trace; give dtype= in the model "
				 "spec");
			return MSIM_EINVAL;
		}
		if ((rc = msim_model_spec_parse(trace, &cfg, why, whylen)))
			return rc;
		msim_model_spec_canonical(&cfg, buf, sizeof(buf));
		*spec_out = strdup(buf);
		msim_strategy_canonical(&cfg, buf, sizeof(buf));
		*strategy_out = strdup(buf);
	} else if (transform) {
		int dtype, rc;
		char w[256];
		if ((rc = msim_xform_parse(transform, &dtype, w, sizeof(w)))) {
			snprintf(why, whylen, "--transform: %s", w);
			return rc;
		}
		if (dtype == MSIM_DT_FP32)
			return 0;
		snprintf(buf, sizeof(buf), "transform:dtype=%s",
			 msim_dtype_name(dtype));
		*strategy_out = strdup(buf);
	} else {
		return 0;
	}
	if ((msim_model_spec_is(trace) && !*spec_out) || !*strategy_out) {
		free(*spec_out);
		free(*strategy_out);
		*spec_out = *strategy_out = NULL;
		return MSIM_ENOMEM;
	}
	return 0;
}


void
msim_trace_cache_load(msim_trace_cache_t *c, const char *path,
		      const msim_trace_options_t *topt, size_t max)
{
	memset(c, 0, sizeof(*c));
	char why[1024];
	msim_trace_t *t;
	if (msim_trace_open(path, topt, &t, why, sizeof(why)))
		return; /* each setting reports it */
	size_t cap = 0;
	msim_req_t r;
	int rc = -1;
	if (msim_trace_format_of(t)->snapshot)
		goto no; /* a state beside the requests */
	while ((rc = msim_trace_next(t, &r)) == 1) {
		if (c->n == cap) {
			if (cap >= max)
				goto no;
			size_t n = cap ? 2 * cap : 65536;
			if (n > max)
				n = max;
			msim_req_t *v = realloc(c->reqs, n * sizeof(*v));
			if (!v)
				goto no;
			c->reqs = v;
			cap = n;
		}
		c->reqs[c->n++] = r;
	}
	msim_trace_seed_t sd;
	msim_trace_seeding(t, &sd);
	if (rc < 0 || sd.requests)
		goto no; /* each setting reports or records it */
	c->trace = t;
	c->topt = *topt;
	return;
no:
	free(c->reqs);
	msim_trace_close(t);
	memset(c, 0, sizeof(*c));
}

void
msim_trace_cache_clear(msim_trace_cache_t *c)
{
	free(c->reqs);
	msim_trace_close(c->trace);
	memset(c, 0, sizeof(*c));
}

bool
msim_trace_cache_fits(const msim_trace_cache_t *c,
		      const msim_trace_options_t *o)
{
	const msim_trace_options_t *k = &c->topt;
	return c->trace && k->deferred_frees == o->deferred_frees &&
	       k->hidden_empty_cache == o->hidden_empty_cache &&
	       k->device1 == o->device1 && k->format == o->format &&
	       k->strict == o->strict && k->lenient == o->lenient &&
	       k->all_devices == o->all_devices;
}

static int
cache_next(void *ctx, msim_req_t *req_out)
{
	msim_input_t *in = ctx;
	if (in->cache_pos == in->cache->n)
		return 0;
	*req_out = in->cache->reqs[in->cache_pos++];
	return 1;
}

/* The requests of the cache left, all in one batch (the engine's batch
 * loop, its lean path included, instead of a call a request). */
static int
cache_batch(void *ctx, const msim_req_t **reqs_out, size_t *n_out)
{
	msim_input_t *in = ctx;
	if (in->cache_pos == in->cache->n)
		return 0;
	*reqs_out = in->cache->reqs + in->cache_pos;
	*n_out = in->cache->n - in->cache_pos;
	in->cache_pos = in->cache->n;
	return 1;
}

static const char *
cache_errmsg(void *ctx)
{
	(void)ctx;
	return "";
}

void
msim_input_open_cache(msim_input_t *in, const msim_trace_cache_t *c)
{
	memset(in, 0, sizeof(*in));
	in->cache = c;
	in->trace = c->trace;
	in->format = msim_trace_format_name(c->trace);
	in->src = (msim_source_t){.next = cache_next, .errmsg = cache_errmsg,
				  .batch = cache_batch, .ctx = in};
}
