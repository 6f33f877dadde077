/*
 * One physical GPU that several processes share.  Each process has its
 * own device model (sim/device.h: its own address space, counters, event
 * log and per-process cap); a device created with a gpu also draws its
 * bytes from the gpu, so a cudaMalloc fails when the GPU is full even if
 * the process is far below its own cap.  The gpu keeps the sum the
 * processes hold, its peak, what each held at that peak, and the
 * cudaMallocs each process saw fail because the GPU was full.
 *
 * Named GPUs (memsim devices): whole cards with the bytes the runtime
 * reports and the context a PyTorch process takes, and the MIG
 * profiles NVIDIA publishes for the A100, H100 and H200
 * (msim_gpu_capacity_parse()).
 */
#ifndef MSIM_SIM_GPU_H
#define MSIM_SIM_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct msim_gpu_s msim_gpu_t;

/* Creates a GPU of capacity bytes for nproc processes (numbered from 0).
 * Returns NULL when out of host memory or nproc is 0. */
msim_gpu_t *msim_gpu_new(uint64_t capacity, size_t nproc);

/* Frees gpu; NULL is a no-op.  Devices drawing from it must be gone. */
void msim_gpu_destroy(msim_gpu_t *gpu);

uint64_t msim_gpu_capacity(const msim_gpu_t *gpu);
size_t msim_gpu_nproc(const msim_gpu_t *gpu);

/* Whether size more bytes fit on the GPU now. */
bool msim_gpu_fits(const msim_gpu_t *gpu, uint64_t size);

/* Process proc took (delta > 0) or gave back (delta < 0) bytes during
 * its request (0-based, its own trace's index). */
void msim_gpu_count(msim_gpu_t *gpu, size_t proc, uint64_t request,
		    int64_t delta);

/* A cudaMalloc (or page map) of size bytes by proc, during its request
 * (0-based, its own trace's index), failed because the GPU was full. */
void msim_gpu_note_full(msim_gpu_t *gpu, size_t proc, uint64_t request,
			uint64_t size);

/* What the GPU saw. */
typedef struct msim_gpu_stats_s {
	uint64_t used;        /* bytes the processes hold now */
	uint64_t peak;        /* peak of the sum */
	size_t peak_proc;     /* the process whose malloc reached the peak */
	uint64_t peak_request; /* and its request index then */
} msim_gpu_stats_t;

void msim_gpu_stats(const msim_gpu_t *gpu, msim_gpu_stats_t *out);

/* Bytes proc holds now, and held when the sum first reached its peak. */
uint64_t msim_gpu_held(const msim_gpu_t *gpu, size_t proc);
uint64_t msim_gpu_held_at_peak(const msim_gpu_t *gpu, size_t proc);

/* The cudaMallocs of proc that failed because the GPU was full: how
 * many, and the request index of the last (-1: none). */
uint64_t msim_gpu_full_failures(const msim_gpu_t *gpu, size_t proc);
int64_t msim_gpu_last_full_request(const msim_gpu_t *gpu, size_t proc);

/*
 * A GPU by name (memsim devices): what cudaMemGetInfo() reports as its
 * total and what a PyTorch process takes of it outside the allocator,
 * each with where the figure comes from ("measured: FILE", "reported:
 * ...", "spec: ...", "assumed: ..."; sim/gpu.c says which is which).
 */
typedef struct msim_gpu_model_s {
	const char *name;        /* "a10g": what --device takes */
	const char *label;       /* torch.cuda.get_device_name() */
	uint64_t total;          /* bytes cudaMemGetInfo() reports */
	const char *total_src;   /* where total comes from */
	uint64_t context;        /* bytes of CUDA context and libraries */
	const char *context_src; /* where context comes from */
	int major, minor;        /* compute capability */
	int sms;                 /* multiprocessors */
	uint64_t l2;             /* L2 cache bytes; 0: not known */
} msim_gpu_model_t;

/* The whole cards, n_out of them, in a fixed order. */
const msim_gpu_model_t *msim_gpu_models(size_t *n_out);

/* The card named name (case ignored), or NULL. */
const msim_gpu_model_t *msim_gpu_model_find(const char *name);

/* The i-th MIG profile (from 0): its GPU's name (NULL past the last),
 * the profile and its bytes. */
const char *msim_gpu_mig_gpu(size_t i, const char **profile_out,
			     uint64_t *bytes_out);

/*
 * A GPU by name: a card of msim_gpu_models() or a MIG profile
 * "GPU:PROFILE" (GPU one of a100-40gb, a100-80gb, h100, h200; "h200:1g.18gb").
 * Returns 0 with its bytes and (context_out may be NULL) the context of
 * its card, or MSIM_EINVAL with why (the name nearest, or the profiles
 * of the GPU named).
 */
int msim_gpu_named(const char *name, uint64_t *bytes_out,
		   uint64_t *context_out, char *why, size_t whylen);

/*
 * A named capacity: msim_gpu_named() without the context (why says
 * "'x' is not a byte size or a GPU ..." of a name not known).
 */
int msim_gpu_capacity_parse(const char *name, uint64_t *bytes_out, char *why,
			    size_t whylen);

#endif
