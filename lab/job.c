/* The job of job.h: open a resolved setting, replay it, store its row. */
#include <config.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab/job.h"
#include "lab/snapcheck.h"
#include "policies/registry.h"
#include "sim/error.h"
#include "sim/gpu.h"
#include "sim/units.h"
#include "traces/model_spec.h"
#include "traces/prefetch.h"

#define JOB_NKV 32

struct msim_job_s {
	msim_job_spec_t spec;      /* as given; strings owned by the caller */
	bool store;
	const msim_policy_ops_t *ops;
	msim_params_t pv;
	bool pv_init;
	char *params;              /* canonical */
	char *model_spec, *strategy; /* resolved here (owned), or NULL */
	msim_timemodel_t *tm_own;
	const msim_timemodel_t *tm;
	msim_input_t in;
	msim_prefetch_t *pf;
	msim_sim_t *sim;
	msim_sim_config_t cfg;     /* the run's, for job_peak_blocks() */
	msim_gpu_t *gpu_own;       /* a lone process's GPU (spec.context) */
	char context[24];          /* spec.context as stored in run_meta */
	char key[1024];            /* the setting key (msim_job_row()) */
	bool lazy_blocks;          /* blocks at peak by job_peak_blocks() */
	msim_block_t *blocks;      /* what it found */
	size_t nblocks;
	char hash[32];
	char snapstate[256];
	char confnote[768];
	char capnote[256];
	bool capacity_given;       /* spec.capacity was not 0 */
	char seeding[320];
	char history_start[24];    /* requests the seeding added */
	msim_sim_meta_t meta;
	msim_job_result_t res;
};

static int
job_fail(msim_job_err_t *err, int part, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
job_fail(msim_job_err_t *err, int part, int rc, const char *fmt, ...)
{
	va_list ap;
	err->part = part;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return rc;
}

static double
job_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

msim_trace_options_t
msim_job_trace_options(const msim_job_spec_t *spec)
{
	/* By default free_requested and free_completed rows apply apart;
	 * --recording adds the hidden empty_cache() calls. */
	msim_trace_options_t topt = {
		.deferred_frees = !spec->requests_only || spec->recording,
		.hidden_empty_cache = spec->recording,
		.device1 = spec->device1,
		.strict = spec->strict,
		.lenient = spec->lenient,
	};
	return topt;
}

/* The policy and its canonical parameters. */
static int
job_policy(msim_job_t *j, msim_job_err_t *err)
{
	const msim_job_spec_t *s = &j->spec;
	if (!s->policy || !(j->ops = msim_policy_find(s->policy)))
		return job_fail(err, MSIM_JOB_EPOLICY, MSIM_EINVAL,
				"unknown policy '%s' (see `memsim policies`)",
				s->policy ? s->policy : "");
	if (msim_params_init(&j->pv, j->ops->params))
		return job_fail(err, MSIM_JOB_EPARAMS, MSIM_ENOMEM,
				"out of memory");
	j->pv_init = true;
	if (s->conf && *s->conf && msim_params_parse(&j->pv, s->conf))
		return job_fail(err, MSIM_JOB_EPARAMS, MSIM_EINVAL, "%s",
				j->pv.errmsg);
	size_t need = msim_params_canonical(&j->pv, NULL, 0) + 1;
	if (!(j->params = malloc(need)))
		return job_fail(err, MSIM_JOB_EPARAMS, MSIM_ENOMEM,
				"out of memory");
	msim_params_canonical(&j->pv, j->params, need);
	return 0;
}

/* Whether PYTORCH_CUDA_ALLOC_CONF text selects the cudaMallocAsync
 * backend: a "backend" key of value "cudaMallocAsync" among its
 * comma-separated key:value pairs, spaces around either ignored, as
 * c10/cuda/CUDAAllocatorConfig.cpp's parseAllocatorConfig reads it (the
 * value is compared whole; "native" is the default backend). */
static bool
conf_backend_async(const char *conf)
{
	const char *p = conf;
	while (*p) {
		while (*p == ' ' || *p == ',')
			p++;
		const char *k = p;
		while (*p && *p != ':' && *p != ',' && *p != ' ')
			p++;
		size_t kn = (size_t)(p - k);
		while (*p == ' ')
			p++;
		if (*p != ':') {
			while (*p && *p != ',')
				p++;
			continue;
		}
		p++;
		while (*p == ' ')
			p++;
		const char *v = p;
		while (*p && *p != ',' && *p != ' ')
			p++;
		size_t vn = (size_t)(p - v);
		if (kn == 7 && !strncmp(k, "backend", 7) &&
		    vn == 15 && !strncmp(v, "cudaMallocAsync", 15))
			return true;
		while (*p && *p != ',')
			p++;
	}
	return false;
}

/* A recording made under backend:cudaMallocAsync replays under the
 * cuda-async policy with its defaults when the policy was not named:
 * PyTorch then allocates through cudaMallocAsync alone
 * (CUDAMallocAsyncAllocator.cpp), and the native allocator's rounding,
 * splitting and garbage-collection settings do not apply
 * (docs/cuda-async.md).  *switched: whether it did. */
static int
job_snapconf_async(msim_job_t *j, const char *snapconf, const char *whose,
		   bool *switched, msim_job_err_t *err)
{
	const msim_policy_ops_t *ca;
	*switched = false;
	if (!j->spec.policy_default || !conf_backend_async(snapconf) ||
	    !(ca = msim_policy_find("cuda-async")) || ca == j->ops)
		return 0;
	msim_params_clear(&j->pv);
	j->pv_init = false;
	j->ops = ca;
	if (msim_params_init(&j->pv, j->ops->params))
		return job_fail(err, MSIM_JOB_EPARAMS, MSIM_ENOMEM,
				"out of memory");
	j->pv_init = true;
	size_t need = msim_params_canonical(&j->pv, NULL, 0) + 1;
	char *canon = malloc(need);
	if (!canon)
		return job_fail(err, MSIM_JOB_EPARAMS, MSIM_ENOMEM,
				"out of memory");
	msim_params_canonical(&j->pv, canon, need);
	free(j->params);
	j->params = canon;
	snprintf(j->confnote, sizeof(j->confnote), "the %s's own \"%s\": "
		 "policy cuda-async, the native allocator's settings do not "
		 "apply (--policy overrides, --defaults drops them)", whose,
		 snapconf);
	*switched = true;
	return 0;
}

/* A first pass over a trace file completes a partial history and reads a
 * snapshot's allocator settings (a recording's are read at its open),
 * which apply unless parameters were given or spec.defaults. */
static int
job_snapconf(msim_job_t *j, msim_job_err_t *err)
{
	if (!j->in.trace)
		return 0;
	if (msim_trace_prescan(j->in.trace))
		return job_fail(err, MSIM_JOB_EINPUT, MSIM_EINVAL, "%s",
				msim_trace_errmsg(j->in.trace));
	const char *snapconf = msim_trace_alloc_conf(j->in.trace);
	if (!snapconf || !*snapconf)
		return 0;
	const char *whose = msim_trace_alloc_conf_recorded(j->in.trace) ?
		"recording" : "snapshot";
	if (j->spec.defaults) {
		snprintf(j->confnote, sizeof(j->confnote), "--defaults: the "
			 "%s's settings \"%s\" are not applied", whose,
			 snapconf);
		return 0;
	}
	if (j->spec.conf && *j->spec.conf) {
		snprintf(j->confnote, sizeof(j->confnote), "--alloc-conf "
			 "given: the %s's settings \"%s\" are not "
			 "applied", whose, snapconf);
		return 0;
	}
	bool switched;
	int rc = job_snapconf_async(j, snapconf, whose, &switched, err);
	if (rc || switched)
		return rc;
	msim_params_t sp;
	if (msim_params_init(&sp, j->ops->params))
		return job_fail(err, MSIM_JOB_EPARAMS, MSIM_ENOMEM,
				"out of memory");
	if (msim_params_parse(&sp, snapconf)) {
		snprintf(j->confnote, sizeof(j->confnote), "the %s's "
			 "settings \"%s\" are not applied: %s", whose, snapconf,
			 sp.errmsg);
		msim_params_clear(&sp);
		return 0;
	}
	size_t need = msim_params_canonical(&sp, NULL, 0) + 1;
	char *canon = malloc(need);
	if (!canon) {
		msim_params_clear(&sp);
		return job_fail(err, MSIM_JOB_EPARAMS, MSIM_ENOMEM,
				"out of memory");
	}
	msim_params_canonical(&sp, canon, need);
	msim_params_clear(&j->pv);
	j->pv = sp;
	free(j->params);
	j->params = canon;
	snprintf(j->confnote, sizeof(j->confnote), "the %s's own "
		 "\"%s\" (-c overrides, --defaults drops them)", whose,
		 snapconf);
	return 0;
}

/*
 * A snapshot with an oom record replays on a device of the capacity the
 * record implies, so that its OOM comes at the same request: what the
 * process had reserved then plus the device_free it names (plus the
 * context, which the job takes off again).  Only when no capacity, cap
 * or fraction was given, not spec.defaults, and the record shows a full
 * device (it asked more than device_free; else a cap refused it).  Rebuilds the job's own GPU (a context)
 * and the fraction of a cap for the new capacity.
 */
static int
job_oom_capacity(msim_job_t *j, msim_sim_config_t *cfg, msim_job_err_t *err)
{
	msim_trace_oom_t o;
	msim_job_spec_t *s = &j->spec;
	if (!j->in.trace || s->defaults || j->capacity_given || s->gpu ||
	    s->cap || s->fraction > 0 ||
	    !msim_trace_oom_record(j->in.trace, &o))
		return 0;
	char a[32], b[32], c[32], d[32];
	msim_format_bytes(o.device_free, c, sizeof(c));
	msim_format_bytes(o.size, d, sizeof(d));
	if (o.size <= o.device_free) {
		/* The device had room: a cap refused it, which the
		 * snapshot does not record. */
		snprintf(j->capnote, sizeof(j->capnote), "the snapshot's oom "
			 "record had %s free when %s did not fit: a cap, not "
			 "the device (--cap or --fraction sets it)", c, d);
		return 0;
	}
	uint64_t cap = o.reserved + o.device_free + s->context;
	if (cap > MSIM_SIZE_MAX)
		return 0;
	s->capacity = cap;
	cfg->device.capacity = cap;
	if (j->gpu_own) {
		msim_gpu_destroy(j->gpu_own);
		if (!(j->gpu_own = msim_gpu_new(cap - s->context, 1)))
			return job_fail(err, MSIM_JOB_EINPUT, MSIM_ENOMEM,
					"out of memory");
		cfg->device.gpu = j->gpu_own;
	}
	msim_format_bytes(cap, a, sizeof(a));
	msim_format_bytes(o.reserved, b, sizeof(b));
	snprintf(j->capnote, sizeof(j->capnote), "%s from the snapshot's oom "
		 "record: %s reserved + %s free when %s did not fit "
		 "(--capacity overrides, --defaults drops it)", a, b, c, d);
	return 0;
}

/* The input: a model spec or a transform resolved, then opened. */
static int
job_input(msim_job_t *j, msim_sim_config_t *cfg, msim_job_err_t *err)
{
	const msim_job_spec_t *s = &j->spec;
	const char *mspec = s->model_spec, *strategy = s->strategy;
	int rc;
	if (!mspec && !strategy &&
	    (msim_model_spec_is(s->trace) || s->transform)) {
		char why[1024];
		if ((rc = msim_input_describe(s->trace, s->transform,
					      &j->model_spec, &j->strategy,
					      why, sizeof(why))))
			return job_fail(err, MSIM_JOB_EINPUT, rc, "%s%s",
					msim_model_spec_is(s->trace) &&
					!s->transform ? "model spec: " : "",
					why);
		mspec = j->model_spec;
		strategy = j->strategy;
	}
	msim_trace_options_t topt = msim_job_trace_options(s);
	if (s->cache && !mspec && !strategy &&
	    msim_trace_cache_fits(s->cache, &topt))
		msim_input_open_cache(&j->in, s->cache);
	else if ((rc = msim_input_open(&j->in, s->trace, mspec, strategy,
				       &topt, cfg, err->msg,
				       sizeof(err->msg)))) {
		err->part = MSIM_JOB_EINPUT;
		return rc;
	}
	if ((rc = job_snapconf(j, err)))
		return rc;
	cfg->policy = j->ops;   /* job_snapconf may name another */
	j->res.trace_path = mspec ? mspec : s->trace;
	j->res.strategy = strategy;
	j->res.trace_format = j->in.format;
	if (s->prefetch && msim_prefetch_new(j->in.src, &j->pf))
		return job_fail(err, MSIM_JOB_EINPUT, MSIM_ENOMEM,
				"out of memory");
	return 0;
}

int
msim_job_open(const msim_job_spec_t *spec, bool store, msim_job_t **out,
	      msim_job_err_t *err)
{
	*out = NULL;
	memset(err, 0, sizeof(*err));
	msim_job_t *j = calloc(1, sizeof(*j));
	if (!j)
		return job_fail(err, MSIM_JOB_EINPUT, MSIM_ENOMEM,
				"out of memory");
	j->spec = *spec;
	j->store = store;
	if (!j->spec.addresses)
		j->spec.addresses = "model";
	j->capacity_given = j->spec.capacity != 0;
	if (!j->spec.capacity)
		j->spec.capacity = MSIM_H200_BYTES;
	const msim_job_spec_t *s = &j->spec;
	int rc;
	if ((rc = job_policy(j, err)))
		goto fail;
	if (s->cap && s->fraction) {
		rc = job_fail(err, MSIM_JOB_ECAP, MSIM_EINVAL,
			      "give a cap or a fraction, not both");
		goto fail;
	}
	if (s->cap > s->capacity) {
		rc = job_fail(err, MSIM_JOB_ECAP, MSIM_EINVAL, "%" PRIu64
			      " bytes is more than the device's %" PRIu64,
			      s->cap, s->capacity);
		goto fail;
	}
	/* A lone process with a CUDA context: the context takes its bytes
	 * from the device outside the allocator, on a GPU of its own as
	 * lab/together.c makes one for several processes. */
	msim_gpu_t *gpu = s->gpu;
	size_t process = s->process;
	if (s->context && !s->gpu) {
		if (s->context >= s->capacity) {
			rc = job_fail(err, MSIM_JOB_EINPUT, MSIM_EINVAL,
				      "--context-bytes: %" PRIu64 " bytes "
				      "leave nothing of the device's %" PRIu64,
				      s->context, s->capacity);
			goto fail;
		}
		if (!(j->gpu_own = msim_gpu_new(s->capacity - s->context,
						1))) {
			rc = job_fail(err, MSIM_JOB_EINPUT, MSIM_ENOMEM,
				      "out of memory");
			goto fail;
		}
		gpu = j->gpu_own;
		process = 0;
	}
	if (!(j->tm = s->timemodel)) {
		if ((rc = msim_timemodel_h200(&j->tm_own))) {
			job_fail(err, MSIM_JOB_EINPUT, rc, "out of memory");
			goto fail;
		}
		j->tm = j->tm_own;
	}
	msim_sim_config_t cfg = {
		.policy = j->ops,
		.params = &j->pv,
		/* The log only where it is read; the modelled cost of the
		 * device calls is added up as they happen. */
		.device = {.capacity = s->capacity,
			   .log_events = store || s->recording || s->keep_log ||
					 s->observe,
			   .timemodel = j->tm,
			   .use_hints = !strcmp(s->addresses, "trace"),
			   .gpu = gpu, .process = process},
		.fraction = s->cap ? msim_cap_fraction(s->cap, s->capacity)
				   : s->fraction,
		.keep_going = s->keep_going,
		.peak_blocks = store, /* for memsim plot --kind segments */
		.observe = s->observe,
		.observe_ctx = s->observe_ctx,
	};
	if ((rc = job_input(j, &cfg, err)) ||
	    (rc = job_oom_capacity(j, &cfg, err)))
		goto fail;
	/* Replayed from memory (a sweep's setting), the blocks at peak are
	 * copied only at the new peaks from spec.blocks_from on (a copy at
	 * each of them was about 170 a setting of gpt2_varlen, 14% of its
	 * cost); when the peak came before, a second replay up to it finds
	 * them once the run is over (job_peak_blocks()). */
	if (store && j->in.cache && !j->pf && !gpu) {
		cfg.peak_blocks_from = s->blocks_from;
		j->lazy_blocks = true;
	}
	cfg.source = j->pf ? msim_prefetch_source(j->pf) : j->in.src;
	j->cfg = cfg;
	if ((rc = msim_sim_new(&cfg, &j->sim, err->msg, sizeof(err->msg)))) {
		err->part = MSIM_JOB_EPARAMS;
		goto fail;
	}
	*out = j;
	return 0;
fail:
	msim_job_destroy(j);
	return rc;
}

/* The hash of the whole input: the model spec's, the reader's when it
 * read the file to its end, else (an OOM stopped the run early) the
 * file's read again. */
static int
job_hash(msim_job_t *j, msim_job_err_t *err)
{
	const char *mspec = j->spec.model_spec ? j->spec.model_spec
					       : j->model_spec;
	if (j->spec.trace_hash) {
		snprintf(j->hash, sizeof(j->hash), "%s", j->spec.trace_hash);
	} else if (mspec) {
		msim_hash_t h;
		msim_hash_init(&h);
		msim_hash_update(&h, mspec, strlen(mspec));
		snprintf(j->hash, sizeof(j->hash), "%016" PRIx64,
			 msim_hash_final(&h));
	} else if (j->in.trace && msim_trace_hashed(j->in.trace)) {
		snprintf(j->hash, sizeof(j->hash), "%016" PRIx64,
			 msim_trace_hash(j->in.trace));
	} else {
		int rc = msim_file_hash(j->spec.trace, j->hash, err->msg,
					sizeof(err->msg));
		if (rc) {
			err->part = MSIM_JOB_EINPUT;
			return rc;
		}
	}
	return 0;
}

/* --recording of a snapshot: does the replay end in its state? */
static int
job_snapcheck(msim_job_t *j, msim_job_err_t *err)
{
	const msim_snap_segment_t *segs;
	size_t nsegs = 0;
	if (!j->spec.recording || !j->in.trace)
		return 0;
	if (msim_trace_segments(j->in.trace, &segs, &nsegs))
		return job_fail(err, MSIM_JOB_ERUN, MSIM_ENOMEM,
				"out of memory");
	if (!nsegs)
		return 0;
	msim_snapcheck_t sc;
	if (msim_snapcheck(j->sim, segs, nsegs, &sc))
		return job_fail(err, MSIM_JOB_ERUN, MSIM_ENOMEM,
				"out of memory");
	msim_snapcheck_format(&sc, j->snapstate, sizeof(j->snapstate));
	return 0;
}

int
msim_job_run(msim_job_t *j, msim_job_err_t *err)
{
	memset(err, 0, sizeof(*err));
	double t0 = job_now_ms();
	int rc = msim_sim_run(j->sim);
	msim_prefetch_destroy(j->pf); /* the reader is done with the input */
	j->pf = NULL;
	if (rc)
		return job_fail(err, MSIM_JOB_ERUN, rc, "%s",
				msim_sim_errmsg(j->sim));
	return msim_job_finish(j, job_now_ms() - t0, err);
}

int
msim_job_finish(msim_job_t *j, double wall_ms, msim_job_err_t *err)
{
	int rc;
	memset(err, 0, sizeof(*err));
	msim_prefetch_destroy(j->pf);
	j->pf = NULL;
	msim_job_result_t *r = &j->res;
	r->wall_ms = wall_ms;
	msim_sim_summary(j->sim, &r->sum);
	msim_sim_stats(j->sim, &r->st);
	if ((rc = job_hash(j, err)) || (rc = job_snapcheck(j, err)))
		return rc;
	msim_device_devtime(msim_sim_device(j->sim), &r->devtime);
	msim_sim_meta_fill(&j->meta, r->devtime.us,
			   j->spec.calibration ? j->spec.calibration
					       : "H200 (built in)", &r->sum);
	r->devtime_ms = j->meta.ms;
	r->trace_hash = j->hash;
	r->policy = j->ops->name;
	r->params = j->params;
	r->addresses = j->spec.addresses;
	r->cap_bytes = msim_device_cap(msim_sim_device(j->sim));
	r->capacity = j->spec.capacity;
	r->snapshot_state = j->snapstate;
	r->settings_note = j->confnote;
	r->capacity_note = j->capnote;
	r->meta = (const char (*)[2][40])j->in.meta;
	r->nmeta = j->in.nmeta;
	return 0;
}

const msim_job_result_t *
msim_job_result(const msim_job_t *job)
{
	return &job->res;
}

msim_sim_t *
msim_job_sim(msim_job_t *job)
{
	return job->sim;
}

msim_trace_t *
msim_job_trace(msim_job_t *job)
{
	return job->in.trace;
}

const msim_policy_ops_t *
msim_job_policy(const msim_job_t *job)
{
	return job->ops;
}

const msim_params_t *
msim_job_params(const msim_job_t *job)
{
	return &job->pv;
}

/*
 * The blocks at peak of a run replayed from memory: the same setting
 * replayed again up to the request in which the device first held its
 * most bytes (msim_device_peak()), with nothing logged or sampled, and the
 * policy's blocks then: what a copy at each new peak would have kept last.
 */
static int
job_peak_blocks(msim_job_t *j, msim_job_err_t *err)
{
	uint64_t at;
	free(j->blocks);
	j->blocks = NULL;
	j->nblocks = 0;
	if (!msim_device_peak(msim_sim_device(j->sim), &at))
		return 0; /* nothing was reserved */
	msim_input_t in;
	msim_input_open_cache(&in, j->spec.cache);
	msim_sim_config_t cfg = j->cfg;
	cfg.source = in.src;
	cfg.device.log_events = false;
	cfg.peak_blocks = false;
	cfg.observe = NULL;
	cfg.observe_ctx = NULL;
	cfg.blocks_at = at + 1;
	msim_sim_t *sim;
	char why[512];
	int rc = msim_sim_new(&cfg, &sim, why, sizeof(why));
	if (rc)
		return job_fail(err, MSIM_JOB_ERUN, rc, "blocks at peak: %s",
				why);
	if ((rc = msim_sim_run(sim))) {
		rc = job_fail(err, MSIM_JOB_ERUN, rc, "blocks at peak: %s",
			      msim_sim_errmsg(sim));
	} else {
		size_t n;
		const msim_block_t *b = msim_sim_peak_blocks(sim, &n);
		if (n && !(j->blocks = malloc(n * sizeof(*b))))
			rc = job_fail(err, MSIM_JOB_ERUN, MSIM_ENOMEM,
				      "out of memory");
		else if (n) {
			memcpy(j->blocks, b, n * sizeof(*b));
			j->nblocks = n;
		}
	}
	msim_sim_destroy(sim);
	return rc;
}

/* Appends key, value to the NULL-terminated kv (value "" adds nothing). */
static void
job_meta_add(const char **kv, const char *key, const char *value)
{
	size_t k = 0;
	if (!*value)
		return;
	while (kv[k])
		k += 2;
	if (k + 2 < JOB_NKV) {
		kv[k] = key;
		kv[k + 1] = value;
		kv[k + 2] = NULL;
	}
}

/*
 * What identifies a run of spec (its setting key's parts), given what
 * resolving it found: the trace's hash, the strategies, the canonical
 * parameters and the allowed bytes.  The one builder of a setting key
 * (msim_job_setting_key()): a sweep's plan and a job's store use it.
 */
static void
job_key_info(const msim_job_spec_t *spec, const char *trace_hash,
	     const char *strategy, const char *params, uint64_t cap_bytes,
	     msim_run_info_t *info)
{
	*info = (msim_run_info_t){
		.kind = "simulated", .trace_hash = trace_hash,
		.strategy = strategy, .policy = spec->policy,
		.params = params, .cap_bytes = cap_bytes,
		.addresses = spec->addresses ? spec->addresses : "model",
		.capacity_bytes = spec->capacity ? spec->capacity
						 : MSIM_H200_BYTES,
		/* A GPU of its own, less a context: another experiment. */
		.context_bytes = spec->gpu ? 0 : spec->context,
		/* Other rows replayed, another experiment. */
		.replay = spec->recording ? "recording"
			  : spec->requests_only ? "requests" : NULL,
		/* One device of a snapshot, another experiment. */
		.device = spec->device1 > 1 ? spec->device1 - 1 : 0,
	};
}

size_t
msim_job_setting_key(const msim_job_spec_t *spec, const char *trace_hash,
		     const char *strategy, const char *params,
		     uint64_t cap_bytes, char *buf, size_t n)
{
	msim_run_info_t info;
	job_key_info(spec, trace_hash, strategy, params, cap_bytes, &info);
	return msim_db_setting_key(&info, buf, n);
}

/* What identifies the run of j and what it measured besides the
 * statistics, as stored (no meta, blocks or sweep). */
static void
job_info(const msim_job_t *j, msim_run_info_t *info)
{
	const msim_job_result_t *r = &j->res;
	job_key_info(&j->spec, r->trace_hash, r->strategy, r->params,
		     r->cap_bytes, info);
	info->trace_path = r->trace_path;
	info->trace_format = r->trace_format;
	info->wall_ms = r->wall_ms;
}

void
msim_job_row(msim_job_t *j, msim_db_run_t *row_out)
{
	msim_run_info_t info;
	job_info(j, &info);
	msim_db_setting_key(&info, j->key, sizeof(j->key));
	msim_db_run_fill(row_out, &info, &j->res.sum, &j->res.st, j->key);
}

int
msim_job_store(msim_job_t *j, msim_db_t *db, int mode, int64_t sweep_id,
	       int64_t *run_id_out, int *existed_out, msim_job_err_t *err)
{
	memset(err, 0, sizeof(*err));
	*run_id_out = -1;
	*existed_out = 0;
	const msim_job_result_t *r = &j->res;
	const char *kv[JOB_NKV];
	msim_input_meta(&j->in, j->meta.kv, kv, JOB_NKV);
	job_meta_add(kv, "snapshot_state", j->snapstate);
	job_meta_add(kv, "trace_origin", j->spec.origin ? j->spec.origin : "");
	/* A partial history: what was seeded, kept with the run. */
	msim_trace_seed_t sd = {0};
	if (j->in.trace)
		msim_trace_seeding(j->in.trace, &sd);
	if (sd.requests) {
		snprintf(j->seeding, sizeof(j->seeding), "%" PRIu64 " blocks, %"
			 PRIu64 " segments of %" PRIu64 " bytes; %s%s",
			 sd.from_frees + sd.from_snapshot, sd.segments,
			 sd.segment_bytes, sd.exact ? "exact" : "not exact: ",
			 sd.exact ? "" : sd.inexact);
		job_meta_add(kv, "seeded", j->seeding);
		/* where the recorded history begins: plots mark it */
		snprintf(j->history_start, sizeof(j->history_start),
			 "%" PRIu64, sd.requests);
		job_meta_add(kv, "history_start", j->history_start);
	}
	if (j->gpu_own) {
		snprintf(j->context, sizeof(j->context), "%" PRIu64,
			 j->spec.context);
		job_meta_add(kv, "context_bytes", j->context);
	}
	msim_run_info_t info;
	job_info(j, &info);
	info.meta = kv;
	info.sweep_id = sweep_id;
	uint64_t at = 0;
	if (j->store && j->lazy_blocks &&
	    (!msim_device_peak(msim_sim_device(j->sim), &at) ||
	     msim_sim_peak_blocks_request(j->sim) == at)) {
		/* Copied after the peak's request itself (or nothing was
		 * reserved, and nothing copied): what the second replay
		 * would give. */
		info.peak_blocks = msim_sim_peak_blocks(j->sim,
							&info.npeak_blocks);
	} else if (j->store && j->lazy_blocks) {
		int brc = job_peak_blocks(j, err);
		if (brc)
			return brc;
		info.peak_blocks = j->blocks;
		info.npeak_blocks = j->nblocks;
	} else if (j->store) {
		info.peak_blocks = msim_sim_peak_blocks(j->sim,
							&info.npeak_blocks);
	}
	size_t nev;
	const msim_seg_event_t *ev =
		msim_device_events(msim_sim_device(j->sim), &nev);
	int rc = msim_db_store_run_mode(db, &info, &r->sum, &r->st,
					msim_sim_timeline(j->sim), ev, nev,
					mode, run_id_out, existed_out);
	if (rc)
		return job_fail(err, MSIM_JOB_ESTORE, rc, "%s",
				msim_db_errmsg(db));
	return 0;
}

void
msim_job_destroy(msim_job_t *j)
{
	if (!j)
		return;
	msim_prefetch_destroy(j->pf);
	msim_sim_destroy(j->sim);
	msim_gpu_destroy(j->gpu_own); /* after the device drawing from it */
	free(j->blocks);
	msim_input_close(&j->in);
	free(j->model_spec);
	free(j->strategy);
	free(j->params);
	if (j->pv_init)
		msim_params_clear(&j->pv);
	msim_timemodel_destroy(j->tm_own);
	free(j);
}

int
msim_job_store_measured(msim_db_t *db, const msim_job_measured_t *m,
			int64_t *run_id_out, msim_job_err_t *err)
{
	memset(err, 0, sizeof(*err));
	*run_id_out = -1;
	const msim_measured_t *got = m->got;
	char hash[32];
	snprintf(hash, sizeof(hash), "%016" PRIx64, msim_trace_hash(m->trace));
	msim_summary_t sum = {.requests = got->requests,
			      .oom_request = got->oom_request};
	sum.frag_at_peak = msim_frag(got->st.allocated_bytes[0].peak,
				     got->st.reserved_bytes[0].peak);
	msim_run_info_t info = {
		.kind = "measured", .trace_path = m->trace_path,
		.trace_hash = hash,
		.trace_format = msim_trace_format_name(m->trace),
		.policy = m->policy, .params = m->params,
		.cap_bytes = m->cap, .addresses = "device",
		.wall_ms = m->wall_ms, .meta = m->meta,
	};
	int rc = msim_db_store_run(db, &info, &sum, &got->st, NULL,
				   got->events, got->nevents, run_id_out);
	if (rc)
		return job_fail(err, MSIM_JOB_ESTORE, rc, "%s",
				msim_db_errmsg(db));
	return 0;
}
