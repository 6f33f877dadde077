/*
 * The shared GPU of gpu.h: one capacity, the bytes each process holds,
 * the peak of their sum, and the named capacities (MIG profiles).
 */
#include <config.h>

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "sim/device.h"
#include "sim/error.h"
#include "sim/gpu.h"

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

int
msim_gpu_capacity_parse(const char *name, uint64_t *bytes_out, char *why,
			size_t whylen)
{
	if (!strcmp(name, "h200")) {
		*bytes_out = MSIM_H200_BYTES;
		return 0;
	}
	const char *colon = strchr(name, ':');
	size_t glen = colon ? (size_t)(colon - name) : strlen(name);
	bool known = false;
	for (size_t i = 0; i < GPU_NNAMED; i++) {
		const gpu_named_t *n = &gpu_named[i];
		if (strlen(n->gpu) != glen || strncmp(n->gpu, name, glen))
			continue;
		known = true;
		if (colon && !strcmp(colon + 1, n->profile)) {
			*bytes_out = n->bytes;
			return 0;
		}
	}
	if (!known) {
		snprintf(why, whylen, "'%s' is not a byte size or a named "
			 "capacity (h200, or GPU:PROFILE with GPU a100-40gb, "
			 "a100-80gb, h100 or h200)", name);
		return MSIM_EINVAL;
	}
	size_t k = (size_t)snprintf(why, whylen, "'%s': the MIG profiles of "
				    "%.*s are", name, (int)glen, name);
	for (size_t i = 0; i < GPU_NNAMED && k < whylen; i++)
		if (strlen(gpu_named[i].gpu) == glen &&
		    !strncmp(gpu_named[i].gpu, name, glen))
			k += (size_t)snprintf(why + k, whylen - k, " %s",
					      gpu_named[i].profile);
	return MSIM_EINVAL;
}
