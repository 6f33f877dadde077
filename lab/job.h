/*
 * The job: one setting -> one replay -> one stored row.  Every command that
 * simulates a setting (run, compare, sweep, tune, report --compare,
 * explain) goes through here, so one experiment is opened the same way (the
 * input of lab/input.h with the same trace options), costed by the same
 * time model (msim_timemodel_events) and stored as one identical row
 * (setting key, trace hash, capacity, run_meta, peak blocks) whichever
 * command ran it.
 *
 *	msim_job_open() -> msim_job_run() -> [msim_job_store()] ->
 *	msim_job_destroy()
 *
 * Nothing here prints or exits: errors come back as a code, the part of
 * the setting at fault and one line of text.
 */
#ifndef MSIM_LAB_JOB_H
#define MSIM_LAB_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/input.h"
#include "sim/engine.h"
#include "sim/results.h"
#include "sim/timemodel.h"
#include "validate/validate.h"

/* A setting as a job replays it. */
typedef struct msim_job_spec_s {
	const char *trace;      /* a trace file or "model:..." as given */
	/* --transform of a recording ("dtype=bf16-amp"); NULL: none.  Only
	 * when model_spec and strategy are NULL (they are then resolved
	 * from trace and transform). */
	const char *transform;
	/* Resolved already (a sweep's setting): the canonical model shape
	 * (NULL: trace is a file) and strategies (NULL: none). */
	const char *model_spec;
	const char *strategy;
	const char *trace_hash; /* NULL: of model_spec, or of the file */
	const char *policy;     /* required: the caller picks the default */
	const char *conf;       /* parameters, PYTORCH_CUDA_ALLOC_CONF
				 * syntax; NULL or "": the defaults */
	uint64_t cap;           /* bytes; 0: none */
	double fraction;        /* or the cap as a fraction; 0: none */
	uint64_t capacity;      /* device memory; 0: the H200's */
	const char *addresses;  /* "model" (NULL) or "trace" */
	/* How the trace file was made when it was not recorded ("instantiated
	 * at B=5 from ..."; lab/record.h), stored as the run_meta
	 * trace_origin; NULL: nothing stored.  Not part of the setting. */
	const char *origin;
	/* Which rows of a trace file are replayed (traces/trace.h):
	 * requests_only drops free_requested (alloc and free_completed, as
	 * caching_allocator_alloc/delete and `memsim validate` see them);
	 * recording replays the hidden empty_cache() calls too and checks a
	 * snapshot's end state. */
	bool requests_only, recording;
	/* A snapshot replays as it ran: with its own allocator settings
	 * (unless conf is given) and, when its oom record shows a full
	 * device and capacity, cap and fraction are 0, on a device of the
	 * capacity that record implies (reserved + device_free + context).  defaults drops both: the
	 * policy's defaults on the H200. */
	bool defaults;
	/* policy is the caller's default, not named by the user: a
	 * recording or snapshot whose settings select PyTorch's
	 * backend:cudaMallocAsync replays under cuda-async, as the process
	 * ran (unless conf is given or defaults). */
	bool policy_default;
	unsigned device1;       /* snapshots: 1 + device index; 0: auto */
	/* A partial history: refuse it (strict) instead of seeding its
	 * start; skip entries of unknown actions (lenient). */
	bool strict, lenient;
	bool keep_going;        /* do not stop at the first OOM */
	bool keep_log;          /* keep the device event log (--segments);
				 * kept anyway when storing, for a recording
				 * and with observe; else memory does not grow
				 * with device calls */
	bool prefetch;          /* read the input on a second thread */
	/* The calibration of the modelled device time (NULL: the H200's,
	 * built in) and the name stored with it. */
	const msim_timemodel_t *timemodel;
	const char *calibration;
	/* A GPU shared with other jobs (sim/gpu.h; lab/together.h), this
	 * job being its process number process; NULL: the job's own. */
	msim_gpu_t *gpu;
	size_t process;
	/* Bytes of the device the process's CUDA context (and libraries)
	 * hold outside its allocator; 0: none.  With gpu NULL, the job runs
	 * on a GPU of its own of capacity - context, as each of several
	 * processes does (lab/together.h, which subtracts the contexts
	 * itself: ignored with gpu).  capacity, cap and fraction stay of
	 * the whole device, as set_per_process_memory_fraction() takes
	 * them.  Part of the stored setting. */
	uint64_t context;
	/* May be NULL: called after each request the engine serves
	 * (msim_sim_config_t.observe), as lab/explain.c follows blocks. */
	void (*observe)(void *ctx, const msim_req_t *req, int rc);
	void *observe_ctx;
	/* A trace file read once already (a sweep's, lab/input.h): replayed
	 * from it when it holds trace read with this spec's options (no
	 * transform); NULL: read the file. */
	const msim_trace_cache_t *cache;
	/* With cache, when stored: the blocks at peak are copied at the new
	 * peaks of reserved bytes from this request on (0: from the start),
	 * each copy a pass over the policy's blocks; if the peak came
	 * before, a second replay up to it finds them.  A sweep passes a
	 * guess from its settings before (lab/sweep.c). */
	uint64_t blocks_from;
} msim_job_spec_t;

/* The part of a setting an error is about. */
enum {
	MSIM_JOB_EPOLICY = 1, /* spec.policy */
	MSIM_JOB_EPARAMS,     /* spec.conf, or the policy refused the
			       * parameters */
	MSIM_JOB_EINPUT,      /* the trace, model spec or transform */
	MSIM_JOB_ECAP,        /* cap or fraction */
	MSIM_JOB_ERUN,        /* the replay */
	MSIM_JOB_ESTORE,      /* the database */
};

typedef struct msim_job_err_s {
	int part;        /* MSIM_JOB_E* */
	char msg[1024];  /* one line, without the part's name */
} msim_job_err_t;

/* What a finished job measured. */
typedef struct msim_job_result_s {
	const char *trace_path;   /* the model spec, or the file as given */
	const char *trace_format; /* the format's name, or "model" */
	const char *trace_hash;
	const char *strategy;     /* NULL: none */
	const char *policy;       /* the policy's name */
	const char *params;       /* canonical parameters */
	const char *addresses;
	uint64_t cap_bytes;       /* what the device allowed */
	uint64_t capacity;
	msim_summary_t sum;
	msim_stats_t st;
	msim_devtime_t devtime;   /* msim_timemodel_events() of the run */
	const char *devtime_ms;   /* devtime.us / 1000 as stored */
	double wall_ms;
	const char *snapshot_state; /* --recording of a snapshot; "" else */
	/* A snapshot with allocator settings: applied, or why not
	 * (spec.conf given, spec.defaults, or they do not parse); "" else. */
	const char *settings_note;
	/* The capacity taken from a snapshot's oom record, and how; ""
	 * else. */
	const char *capacity_note;
	/* The input's run_meta (generator, transform), as printed. */
	const char (*meta)[2][40];
	size_t nmeta;
} msim_job_result_t;

typedef struct msim_job_s msim_job_t;

/*
 * The setting key (sim/results.h's msim_db_setting_key()) of a run of
 * spec, given what resolving it finds: the trace's hash, the strategies
 * (NULL: none), the canonical parameters and the bytes the cap allows.
 * The one builder of a key: a job stores its run under it, a sweep's plan
 * looks its settings up by it.  Returns the length it needed.
 */
size_t msim_job_setting_key(const msim_job_spec_t *spec,
			    const char *trace_hash, const char *strategy,
			    const char *params, uint64_t cap_bytes, char *buf,
			    size_t n);

/*
 * The runs row a finished job stores (sim/results.h's MSIM_RUN_COLUMNS),
 * setting key included, into row_out: its strings live as long as the
 * job (not to be cleared); id is -1, created NULL.
 */
void msim_job_row(msim_job_t *job, msim_db_run_t *row_out);

/*
 * Resolves spec (policy, parameters, input, cap) and opens it ready to
 * run; store says the job will be stored (the policy's blocks at peak are
 * kept for it).  Returns 0, or an error with err filled.
 */
int msim_job_open(const msim_job_spec_t *spec, bool store, msim_job_t **out,
		  msim_job_err_t *err);

/* Replays the job to its end (or its first OOM).  Returns 0 or an error. */
int msim_job_run(msim_job_t *job, msim_job_err_t *err);

/* msim_job_run() in two halves, for a caller that steps msim_job_sim()
 * itself (several jobs on one GPU): after the simulation has run to its
 * end, measures the figures.  wall_ms is the time the caller spent.
 * Returns 0 or an error. */
int msim_job_finish(msim_job_t *job, double wall_ms, msim_job_err_t *err);

/* After msim_job_run(): the figures. */
const msim_job_result_t *msim_job_result(const msim_job_t *job);

/* The simulation itself (device events, timeline) until destroyed. */
msim_sim_t *msim_job_sim(msim_job_t *job);

/* After msim_job_open(): the trace file (its seeding, its notes; NULL for
 * a model spec), the policy and the parameters the job runs with (a
 * snapshot's own unless spec.conf or spec.defaults). */
msim_trace_t *msim_job_trace(msim_job_t *job);
const msim_policy_ops_t *msim_job_policy(const msim_job_t *job);
const msim_params_t *msim_job_params(const msim_job_t *job);

/*
 * Stores the finished job in db under its setting key; mode is
 * MSIM_DB_SKIP (keep a run stored already) or MSIM_DB_REPLACE (store the
 * new results under its id); sweep_id > 0 records it as the sweep's.
 * Returns 0 with the run's id and whether the setting was there already,
 * or an error.
 */
int msim_job_store(msim_job_t *job, msim_db_t *db, int mode,
		   int64_t sweep_id, int64_t *run_id_out, int *existed_out,
		   msim_job_err_t *err);

void msim_job_destroy(msim_job_t *job);

/* The trace options every job opens a trace file with (and bench, so its
 * requests are the ones a run replays). */
msim_trace_options_t msim_job_trace_options(const msim_job_spec_t *spec);

/* A run measured on a device (memsim validate, lab/measure.h). */
typedef struct msim_job_measured_s {
	const char *trace_path;      /* as given */
	msim_trace_t *trace;         /* read: its hash and format */
	const char *policy;          /* the policy that models it */
	const char *params;          /* canonical */
	uint64_t cap;                /* bytes; 0: none */
	double wall_ms;
	const char *const *meta;     /* mode, device, versions, ... */
	const msim_measured_t *got;  /* the figures and device events */
} msim_job_measured_t;

/* Stores m as a new "measured" row (every measurement its own row, no
 * setting key), addresses "device".  Returns 0 with the run's id, or an
 * error (MSIM_JOB_ESTORE). */
int msim_job_store_measured(msim_db_t *db, const msim_job_measured_t *m,
			    int64_t *run_id_out, msim_job_err_t *err);

#endif
