/*
 * Several processes on one GPU: each input replayed by its own job (its
 * own policy, parameters and per-process cap; lab/job.h), all drawing
 * from one sim/gpu.h capacity, their requests interleaved by time.
 *
 *	msim_together_open() -> msim_together_run() -> results ->
 *	msim_together_destroy()
 *
 * The order: each step serves the process whose next request (or policy
 * event) is due first, its time taken relative to the first request of
 * its own trace (traces recorded at different times start together), or
 * as recorded with absolute; equal times go to the process given first.
 * A process that hits an OOM stops there, as a lone run does, and keeps
 * what it holds (a process that caught the error and waits); with
 * keep_going every process goes on past its OOMs.  Nothing is stored:
 * a stored run is one process's.
 */
#ifndef MSIM_LAB_TOGETHER_H
#define MSIM_LAB_TOGETHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/job.h"
#include "sim/gpu.h"

typedef struct msim_together_s msim_together_t;

/*
 * Opens n jobs on one GPU of capacity bytes (0: the H200's), of which each
 * process's CUDA context holds context bytes outside its allocator: the
 * allocators share capacity - n * context.  Each spec's
 * capacity, gpu and process are set here; the rest is the spec's own
 * (keep_going and prefetch are ignored: keep_going applies to all).
 * Returns 0, or an error with err filled and *failed_out the index of
 * the spec at fault.
 */
int msim_together_open(const msim_job_spec_t *specs, size_t n,
		       uint64_t capacity, uint64_t context, bool absolute,
		       bool keep_going,
		       msim_together_t **out, size_t *failed_out,
		       msim_job_err_t *err);

/* Replays all jobs to their ends.  Returns 0, or an error with err and
 * *failed_out the process whose input or replay failed. */
int msim_together_run(msim_together_t *t, size_t *failed_out,
		      msim_job_err_t *err);

size_t msim_together_n(const msim_together_t *t);
msim_job_t *msim_together_job(msim_together_t *t, size_t i);
const msim_gpu_t *msim_together_gpu(const msim_together_t *t);

/* Why process i's OOM (sum.oom_request >= 0) happened: "gpu" when its
 * failing cudaMalloc found the GPU full, else "process" (its cap or
 * its own capacity); NULL when it had none. */
const char *msim_together_oom_cause(msim_together_t *t, size_t i);

/* When the process first served (its start under relative time), ns. */
msim_time_t msim_together_start(const msim_together_t *t, size_t i);

void msim_together_destroy(msim_together_t *t);

/* Prints t to stdout as `memsim run` of several inputs does: the GPU
 * (capacity_name or NULL; context bytes each process holds outside its
 * allocator; time absolute or relative), its peak, who ran out of
 * memory, then each process (lab/run.h's msim_run_print());
 * msim_together_json() the same as one JSON object (lab/figures.h's
 * msim_figs_gpu() and msim_figs_process()), returning 0 or MSIM_ENOMEM. */
void msim_together_print(msim_together_t *t, uint64_t context,
			 const char *capacity_name, bool absolute);
int msim_together_json(msim_together_t *t, uint64_t context,
		       const char *capacity_name, bool absolute);

#endif
