/*
 * Validation mode: the same requests on a real GPU.  Three ways to serve
 * them:
 *
 *   raw    every request its own cudaMalloc / cudaFree (validate/cuda.c);
 *          memory in use from cudaMemGetInfo; the latency of every call;
 *   async  cudaMallocFromPoolAsync / cudaFreeAsync on a memory pool with a
 *          release threshold (validate/cuda.c); reserved and used bytes
 *          from the pool's attributes;
 *   torch  PyTorch's own caching allocator, through the Python bridge
 *          validate/torch_replay.py (validate/torch.c): memory_stats() and
 *          the recorded segment events.
 *
 * raw and async need memsim built with --with-cuda; torch needs python3
 * with PyTorch and a GPU where it runs.  Streams in the trace become real
 * streams.  Results have the shape of a simulation's, so the results
 * database and `memsim report` put both side by side.
 */
#ifndef MSIM_VALIDATE_VALIDATE_H
#define MSIM_VALIDATE_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "sim/device.h"
#include "sim/types.h"
#include "traces/trace.h"

enum { MSIM_VMODE_RAW = 0, MSIM_VMODE_ASYNC, MSIM_VMODE_TORCH };

/* "raw", "async", "torch"; and back (-1 if unknown). */
const char *msim_vmode_name(int mode);
int msim_vmode_parse(const char *name);

typedef struct msim_measured_s {
	msim_stats_t st;     /* what the mode can measure; the rest 0 */
	uint64_t requests;   /* requests served */
	int64_t oom_request; /* first unexpected OOM, or -1 */
	msim_seg_event_t *events; /* torch: the recorded device events */
	size_t nevents;
	double malloc_us, free_us; /* raw, async: total call latency */
	uint64_t nmalloc, nfree;   /* calls timed */
	char device[128];    /* GPU name */
	char versions[128];  /* driver, runtime, library */
} msim_measured_t;

void msim_measured_clear(msim_measured_t *m);

/*
 * torch mode: writes the requests of t to a temporary file, runs
 * `python3 SCRIPT FILE CAP` with PYTORCH_CUDA_ALLOC_CONF=alloc_conf and
 * reads what it prints.  python NULL means "python3".  Returns 0, or an
 * error with why filled.
 */
int msim_validate_torch(msim_trace_t *t, const char *python,
			const char *script, const char *alloc_conf,
			uint64_t cap, msim_measured_t *out, char *why,
			size_t whylen);

/* raw and async modes (only with CUDA).  release_threshold: async pool's
 * cudaMemPoolAttrReleaseThreshold.  Returns 0, MSIM_ENOTSUP without a
 * GPU, or another error with why filled. */
int msim_validate_cuda(msim_trace_t *t, int mode, uint64_t cap,
		       uint64_t release_threshold, msim_measured_t *out,
		       char *why, size_t whylen);

/* Measures the calibration of the time model (median of 31 calls at each
 * size) and writes it as CSV to path.  Only with CUDA. */
int msim_validate_calibrate(const char *path, char *why, size_t whylen);

#endif
