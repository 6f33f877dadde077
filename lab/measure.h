/*
 * Measure: one trace replayed on a real GPU (validate/validate.h: raw
 * cudaMalloc, a cudaMallocAsync pool, or PyTorch's own allocator through
 * validate/torch_replay.py), its settings made canonical as the policy
 * that models the mode reads them, so measured and simulated runs pair
 * up, and the measured row stored through the job's store
 * (msim_job_store_measured()).  `memsim validate` prints it.
 */
#ifndef MSIM_LAB_MEASURE_H
#define MSIM_LAB_MEASURE_H

#include <stdint.h>

#include "validate/validate.h"

typedef struct msim_measure_spec_s {
	const char *trace;
	int mode;                  /* MSIM_VMODE_* */
	const char *conf;          /* torch: PYTORCH_CUDA_ALLOC_CONF; else
				    * NULL or "" */
	uint64_t cap;              /* bytes; 0: none */
	uint64_t threshold;        /* async: release threshold */
	const char *python;        /* torch: NULL for python3 */
	/* torch: folders that may hold torch_replay.py, NULL-terminated,
	 * tried after $MEMSIM_VALIDATE_DIR. */
	const char *const *bridge_dirs;
	const char *db_path;       /* NULL: nothing stored */
	/* raw and async: msim_validate_cuda(), which lives outside the
	 * library (libmemsim_cuda.a, memsim built with CUDA); NULL: those
	 * modes fail with MSIM_ENOTSUP. */
	int (*cuda)(msim_trace_t *t, int mode, uint64_t cap,
		    uint64_t release_threshold, msim_measured_t *out,
		    char *why, size_t whylen);
} msim_measure_spec_t;

typedef struct msim_measure_s {
	msim_measured_t m;         /* the figures (stats finished) */
	char canon[1024];          /* the canonical settings */
	const char *policy;        /* the policy that models the mode */
	char malloc_us[32], free_us[32]; /* mean latencies, or "" */
	double wall_ms;
	int64_t run_id;            /* stored, or -1 */
} msim_measure_t;

/* Measures and stores.  Returns 0 with *out, or an error with why
 * filled: bad settings, no bridge, no CUDA for raw and async, the trace,
 * the device, the database.  Clear with msim_measure_clear(). */
int msim_measure_run(const msim_measure_spec_t *spec, msim_measure_t *out,
		     char *why, size_t whylen);
void msim_measure_clear(msim_measure_t *out);

/* The figures of a measured run as `memsim validate --json` prints them
 * (lab/figures.h): trace, mode, device, versions, params, cap_bytes,
 * requests, the statistics, oom_request, [malloc_us_mean],
 * [free_us_mean], [run_id].  Returns 0 or MSIM_ENOMEM. */
struct msim_figs_s;
int msim_measure_figs(struct msim_figs_s *f, const msim_measure_spec_t *s,
		      const msim_measure_t *r);

#endif
