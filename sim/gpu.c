/*
 * The shared GPU of gpu.h: one capacity, the bytes each process holds,
 * the peak of their sum, and the named capacities (MIG profiles).
 */
#include <config.h>

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sim/device.h"
#include "sim/error.h"
#include "sim/gpu.h"
#include "sim/suggest.h"

struct msim_gpu_s {
	uint64_t capacity; /* bytes */
	size_t nproc;
	uint64_t used;     /* bytes held by all processes now */
	msim_gpu_stats_t st;
	uint64_t *held;    /* [nproc] bytes each holds now */
	uint64_t *at_peak; /* [nproc] bytes each held at the first peak */
	uint64_t *nfull;   /* [nproc] cudaMallocs failed: GPU full */
	int64_t *lastfull; /* [nproc] request of the last such, or -1 */
};

msim_gpu_t *
msim_gpu_new(uint64_t capacity, size_t nproc)
{
	if (nproc == 0)
		return NULL;
	msim_gpu_t *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->capacity = capacity;
	g->nproc = nproc;
	g->held = calloc(nproc, sizeof(*g->held));
	g->at_peak = calloc(nproc, sizeof(*g->at_peak));
	g->nfull = calloc(nproc, sizeof(*g->nfull));
	g->lastfull = malloc(nproc * sizeof(*g->lastfull));
	if (!g->held || !g->at_peak || !g->nfull || !g->lastfull) {
		msim_gpu_destroy(g);
		return NULL;
	}
	for (size_t i = 0; i < nproc; i++)
		g->lastfull[i] = -1;
	return g;
}

void
msim_gpu_destroy(msim_gpu_t *g)
{
	if (!g)
		return;
	free(g->held);
	free(g->at_peak);
	free(g->nfull);
	free(g->lastfull);
	free(g);
}

uint64_t
msim_gpu_capacity(const msim_gpu_t *g)
{
	return g->capacity;
}

size_t
msim_gpu_nproc(const msim_gpu_t *g)
{
	return g->nproc;
}

bool
msim_gpu_fits(const msim_gpu_t *g, uint64_t size)
{
	return size <= g->capacity - g->used;
}

void
msim_gpu_count(msim_gpu_t *g, size_t proc, uint64_t request, int64_t delta)
{
	g->used += (uint64_t)delta;
	g->held[proc] += (uint64_t)delta;
	if (delta > 0 && g->used > g->st.peak) {
		g->st.peak = g->used;
		g->st.peak_proc = proc;
		g->st.peak_request = request;
		memcpy(g->at_peak, g->held, g->nproc * sizeof(*g->held));
	}
}

void
msim_gpu_note_full(msim_gpu_t *g, size_t proc, uint64_t request,
		   uint64_t size)
{
	(void)size;
	g->nfull[proc]++;
	g->lastfull[proc] = (int64_t)request;
}

void
msim_gpu_stats(const msim_gpu_t *g, msim_gpu_stats_t *out)
{
	*out = g->st;
	out->used = g->used;
}

uint64_t
msim_gpu_held(const msim_gpu_t *g, size_t proc)
{
	return g->held[proc];
}

uint64_t
msim_gpu_held_at_peak(const msim_gpu_t *g, size_t proc)
{
	return g->at_peak[proc];
}

uint64_t
msim_gpu_full_failures(const msim_gpu_t *g, size_t proc)
{
	return g->nfull[proc];
}

int64_t
msim_gpu_last_full_request(const msim_gpu_t *g, size_t proc)
{
	return g->lastfull[proc];
}

/*
 * The whole cards.  total is the bytes cudaMemGetInfo() reports as the
 * device's total (PyTorch's torch.cuda.mem_get_info()[1], equal to
 * get_device_properties().total_memory), where a figure is known:
 * - "measured": read here, on the project's H200 (torch 2.11, CUDA 13.0;
 *   tests/data/explain/h200/context.txt);
 * - "reported": a card's totalGlobalMem as public deviceQuery or PyTorch
 *   output gives it (the recorder's figures since it began; the RTX 5090's
 *   from the deviceQuery in aikitoria/open-gpu-kernel-modules issue 1);
 * - "spec": the memory of the vendor's data sheet, N GB taken as N GiB of
 *   memory chips: an upper bound, the runtime reports a few hundred MiB
 *   less (give --capacity with torch.cuda.mem_get_info()[1] when known).
 * context is what a PyTorch process holds outside its allocator (CUDA
 * context, cuBLAS and cuDNN handles, kernels loaded): measured only on the
 * H200, 787283968 bytes (750.8 MiB) after an MLP's first AdamW steps
 * (tests/data/explain/h200/context.txt, mem_get_info()'s used bytes less
 * memory_reserved(); the bare context alone was 552402944, docs/guide.md);
 * the other cards assume the H200's figure until measured.  major, minor
 * and sms are what get_device_properties() answers (the recorder's --fake
 * device), l2 the L2 cache Triton's autotuner flushes (0: not known).
 */
#define GIB(n) (UINT64_C(n) << 30)
#define H200_CONTEXT UINT64_C(787283968)
#define MEASURED "measured: tests/data/explain/h200/context.txt"
#define REPORTED "reported: public deviceQuery/PyTorch output"
#define SPEC "spec: the data sheet's size, an upper bound"
#define ASSUMED "assumed: the H200's measurement"
#define MIB(n) (UINT64_C(n) << 20)

static const msim_gpu_model_t gpu_models[] = {
	{"h200", "NVIDIA H200", MSIM_H200_BYTES, MEASURED, H200_CONTEXT,
	 MEASURED, 9, 0, 132, MIB(60)},
	{"h100-80gb", "NVIDIA H100 80GB HBM3", UINT64_C(85031714816), REPORTED,
	 H200_CONTEXT, ASSUMED, 9, 0, 132, MIB(50)},
	{"h100-pcie", "NVIDIA H100 PCIe", UINT64_C(85031714816), REPORTED,
	 H200_CONTEXT, ASSUMED, 9, 0, 114, MIB(50)},
	{"h100-94gb", "NVIDIA H100 NVL", GIB(94), SPEC, H200_CONTEXT, ASSUMED,
	 9, 0, 132, MIB(50)},
	{"b200", "NVIDIA B200", GIB(180), SPEC, H200_CONTEXT, ASSUMED, 10, 0,
	 148, 0},
	{"a100-80gb", "NVIDIA A100-SXM4-80GB", UINT64_C(85097971712), REPORTED,
	 H200_CONTEXT, ASSUMED, 8, 0, 108, MIB(40)},
	{"a100-40gb", "NVIDIA A100-SXM4-40GB", UINT64_C(42297270272), REPORTED,
	 H200_CONTEXT, ASSUMED, 8, 0, 108, MIB(40)},
	{"l40s", "NVIDIA L40S", UINT64_C(47697362944), REPORTED, H200_CONTEXT,
	 ASSUMED, 8, 9, 142, MIB(96)},
	{"l4", "NVIDIA L4", UINT64_C(23580639232), REPORTED, H200_CONTEXT,
	 ASSUMED, 8, 9, 58, MIB(48)},
	{"a10g", "NVIDIA A10G", UINT64_C(23609475072), REPORTED, H200_CONTEXT,
	 ASSUMED, 8, 6, 80, MIB(6)},
	{"t4", "Tesla T4", UINT64_C(15835660288), REPORTED, H200_CONTEXT,
	 ASSUMED, 7, 5, 40, MIB(4)},
	{"v100-16gb", "Tesla V100-SXM2-16GB", GIB(16), SPEC, H200_CONTEXT,
	 ASSUMED, 7, 0, 80, MIB(6)},
	{"v100-32gb", "Tesla V100-SXM2-32GB", UINT64_C(34089730048), REPORTED,
	 H200_CONTEXT, ASSUMED, 7, 0, 80, MIB(6)},
	{"rtx3090", "NVIDIA GeForce RTX 3090", GIB(24), SPEC, H200_CONTEXT,
	 ASSUMED, 8, 6, 82, MIB(6)},
	{"rtx4090", "NVIDIA GeForce RTX 4090", GIB(24), SPEC, H200_CONTEXT,
	 ASSUMED, 8, 9, 128, MIB(72)},
	{"rtx5090", "NVIDIA GeForce RTX 5090", UINT64_C(33677180928), REPORTED,
	 H200_CONTEXT, ASSUMED, 12, 0, 170, MIB(96)},
	{"rtx-a6000", "NVIDIA RTX A6000", GIB(48), SPEC, H200_CONTEXT,
	 ASSUMED, 8, 6, 84, MIB(6)},
};

#define GPU_NMODELS (sizeof(gpu_models) / sizeof(gpu_models[0]))

const msim_gpu_model_t *
msim_gpu_models(size_t *n_out)
{
	*n_out = GPU_NMODELS;
	return gpu_models;
}

const msim_gpu_model_t *
msim_gpu_model_find(const char *name)
{
	for (size_t i = 0; i < GPU_NMODELS; i++)
		if (!strcasecmp(gpu_models[i].name, name))
			return &gpu_models[i];
	return NULL;
}

/*
 * The MIG profiles of the NVIDIA Multi-Instance GPU User Guide, section
 * "Supported MIG Profiles" (A100-SXM4-40GB, A100-SXM4-80GB, H100-SXM5-80GB,
 * H200-SXM5-141GB tables; the +me variants have the same memory).  The
 * guide publishes each profile's memory as the size in its name, in GB
 * (10^9 bytes), and as a fraction of the GPU's memory; these are the
 * named sizes.  nvidia-smi mig -lgip reports a little more or less usable
 * memory per instance than the name says.
 */
typedef struct gpu_named_s {
	const char *gpu, *profile;
	uint64_t bytes;
} gpu_named_t;

#define GB(n) (UINT64_C(n) * UINT64_C(1000000000))

static const gpu_named_t gpu_named[] = {
	{"a100-40gb", "1g.5gb", GB(5)},    {"a100-40gb", "1g.10gb", GB(10)},
	{"a100-40gb", "2g.10gb", GB(10)},  {"a100-40gb", "3g.20gb", GB(20)},
	{"a100-40gb", "4g.20gb", GB(20)},  {"a100-40gb", "7g.40gb", GB(40)},
	{"a100-80gb", "1g.10gb", GB(10)},  {"a100-80gb", "1g.20gb", GB(20)},
	{"a100-80gb", "2g.20gb", GB(20)},  {"a100-80gb", "3g.40gb", GB(40)},
	{"a100-80gb", "4g.40gb", GB(40)},  {"a100-80gb", "7g.80gb", GB(80)},
	{"h100", "1g.10gb", GB(10)},       {"h100", "1g.20gb", GB(20)},
	{"h100", "2g.20gb", GB(20)},       {"h100", "3g.40gb", GB(40)},
	{"h100", "4g.40gb", GB(40)},       {"h100", "7g.80gb", GB(80)},
	{"h200", "1g.18gb", GB(18)},       {"h200", "1g.35gb", GB(35)},
	{"h200", "2g.35gb", GB(35)},       {"h200", "3g.71gb", GB(71)},
	{"h200", "4g.71gb", GB(71)},       {"h200", "7g.141gb", GB(141)},
};

#define GPU_NNAMED (sizeof(gpu_named) / sizeof(gpu_named[0]))

const char *
msim_gpu_mig_gpu(size_t i, const char **profile_out, uint64_t *bytes_out)
{
	if (i >= GPU_NNAMED)
		return NULL;
	*profile_out = gpu_named[i].profile;
	*bytes_out = gpu_named[i].bytes;
	return gpu_named[i].gpu;
}

/* The card a MIG GPU name is a slice of ("h100": the H100 80GB). */
static const msim_gpu_model_t *
gpu_mig_card(const char *gpu, size_t glen)
{
	for (size_t i = 0; i < GPU_NMODELS; i++)
		if (!strncmp(gpu_models[i].name, gpu, glen) &&
		    (gpu_models[i].name[glen] == '\0' ||
		     gpu_models[i].name[glen] == '-'))
			return &gpu_models[i];
	return NULL;
}

int
msim_gpu_named(const char *name, uint64_t *bytes_out, uint64_t *context_out,
	       char *why, size_t whylen)
{
	const msim_gpu_model_t *m = msim_gpu_model_find(name);
	if (m) {
		*bytes_out = m->total;
		if (context_out)
			*context_out = m->context;
		return 0;
	}
	const char *colon = strchr(name, ':');
	size_t glen = colon ? (size_t)(colon - name) : strlen(name);
	bool known = false;
	for (size_t i = 0; i < GPU_NNAMED; i++) {
		const gpu_named_t *n = &gpu_named[i];
		if (strlen(n->gpu) != glen || strncasecmp(n->gpu, name, glen))
			continue;
		known = true;
		if (colon && !strcasecmp(colon + 1, n->profile)) {
			*bytes_out = n->bytes;
			if (context_out) {
				m = gpu_mig_card(n->gpu, glen);
				*context_out = m ? m->context : 0;
			}
			return 0;
		}
	}
	if (!known || !colon) {
		const char *names[GPU_NMODELS];
		for (size_t i = 0; i < GPU_NMODELS; i++)
			names[i] = gpu_models[i].name;
		/* "h100": the cards it begins, before names a letter off */
		const char *near = NULL;
		for (size_t i = 0; i < GPU_NMODELS && !near; i++)
			if (!strncasecmp(names[i], name, strlen(name)) &&
			    names[i][strlen(name)] == '-')
				near = names[i];
		if (!near)
			near = msim_suggest(name, names, GPU_NMODELS);
		if (near)
			snprintf(why, whylen, "'%s' is not a GPU of memsim "
				 "devices (did you mean %s?)", name, near);
		else
			snprintf(why, whylen, "'%s' is not a GPU of memsim "
				 "devices (a card: h200, h100-80gb, a10g, "
				 "rtx4090, ...; or a MIG profile GPU:PROFILE "
				 "with GPU a100-40gb, a100-80gb, h100 or "
				 "h200)", name);
		return MSIM_EINVAL;
	}
	size_t k = (size_t)snprintf(why, whylen, "'%s': the MIG profiles of "
				    "%.*s are", name, (int)glen, name);
	for (size_t i = 0; i < GPU_NNAMED && k < whylen; i++)
		if (strlen(gpu_named[i].gpu) == glen &&
		    !strncasecmp(gpu_named[i].gpu, name, glen))
			k += (size_t)snprintf(why + k, whylen - k, " %s",
					      gpu_named[i].profile);
	return MSIM_EINVAL;
}

int
msim_gpu_capacity_parse(const char *name, uint64_t *bytes_out, char *why,
			size_t whylen)
{
	int rc = msim_gpu_named(name, bytes_out, NULL, why, whylen);
	const char *is = strstr(why, "' is not a GPU");
	if (rc && is) { /* a capacity may be bytes too: say so */
		char tail[1024];
		snprintf(tail, sizeof(tail), "%s", is + 9);
		snprintf(why + (is - why) + 9, whylen - (size_t)(is - why) - 9,
			 "a byte size or %s", tail);
	}
	return rc;
}
