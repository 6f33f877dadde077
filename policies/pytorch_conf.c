/*
 * The pytorch policy's parameters: PyTorch's alloc-conf keys
 * (c10/cuda/CUDAAllocatorConfig.cpp, parseArgs()), parsed and checked as
 * PyTorch parses them (docs/pytorch-allocator.md), and the state they
 * make (ops->create).  The policy itself is policies/pytorch.c.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/pytorch_int.h"
#include "sim/error.h"

/* ---------------------------------------------------------------- */
/* Parameters                                                        */

enum {
	P_MAX_SPLIT, P_NONSPLIT, P_LARGE_SEG, P_GC, P_RP2, P_EXPANDABLE,
	P_FRACTION, P_RELEASE_LOCK, P_GRAPH_REUSE, P_PIN_REGISTER,
	P_PIN_THREADS, P_BACKEND, P_PIN_BG, P_PIN_RESERVE, P_RELEASE_LOCK_HIP,
	P_PIN_REGISTER_HIP,
};

/* Parses roundup_power2_divisions, "N" or "[B:N,...,>:N]", into table.
 * Returns 0, or -1 with why filled. */
static int
rp2_parse(const char *text, uint8_t table[16], char *why, size_t whylen)
{
	char *end;
	memset(table, 0, 16);
	if (text[0] != '[') {
		unsigned long n = strtoul(text, &end, 10);
		if (*end || end == text || n > 128 || (n & (n - 1))) {
			snprintf(why, whylen, "'%s' is not a power of two "
				 "(at most 128) nor a [size_mb:N,...] list", text);
			return -1;
		}
		memset(table, (int)n, 16);
		return 0;
	}
	const char *s = text + 1;
	bool first = true;
	int last = -1;
	while (*s && *s != ']') {
		bool rest = *s == '>';
		unsigned long mb = 0;
		if (rest) {
			end = (char *)s + 1;
		} else {
			mb = strtoul(s, &end, 10);
			if (end == s || mb == 0 || (mb & (mb - 1))) {
				snprintf(why, whylen, "interval '%.*s' is not a "
					 "power-of-two number of MiB",
					 (int)strcspn(s, ":,]"), s);
				return -1;
			}
		}
		if (*end != ':') {
			snprintf(why, whylen, "expected ':' after '%.*s'",
				 (int)(end - s), s);
			return -1;
		}
		s = end + 1;
		unsigned long n = strtoul(s, &end, 10);
		if (end == s || n > 128 || (n & (n - 1))) {
			snprintf(why, whylen, "divisions '%.*s' is not 0 or a "
				 "power of two (at most 128)",
				 (int)strcspn(s, ",]"), s);
			return -1;
		}
		if (rest) {
			for (int i = last + 1; i < 16; i++)
				table[i] = (uint8_t)n;
		} else {
			int ix = 0;
			while ((1UL << (ix + 1)) <= mb)
				ix++;
			if (ix > 15)
				ix = 15;
			if (first)
				memset(table, (int)n, (size_t)ix);
			table[ix] = (uint8_t)n;
			last = ix;
			first = false;
		}
		s = end;
		if (*s == ',')
			s++;
		else if (*s != ']') {
			snprintf(why, whylen, "expected ',' or ']' at '%s'", s);
			return -1;
		}
	}
	if (*s != ']' || s[1]) {
		snprintf(why, whylen, "list must end with ']'");
		return -1;
	}
	return 0;
}

static int
rp2_check(const char *text, char *why, size_t whylen)
{
	uint8_t table[16];
	return rp2_parse(text, table, why, whylen);
}

static int
backend_check(const char *text, char *why, size_t whylen)
{
	if (!strcmp(text, "native"))
		return 0;
	if (!strcmp(text, "cudaMallocAsync"))
		snprintf(why, whylen, "cudaMallocAsync is not this policy; "
			 "use --policy cuda-async");
	else
		snprintf(why, whylen, "'%s' is not native or cudaMallocAsync",
			 text);
	return -1;
}

const msim_param_spec_t msim_pt_params[] = {
	[P_MAX_SPLIT] = {"max_split_size_mb", MSIM_PT_UINT, "none", 0, 1e12,
		MSIM_PF_NONE_OK, "blocks of this many MiB or more are never "
		"split; must be >= large_segment_size_mb", NULL},
	[P_NONSPLIT] = {"max_non_split_rounding_mb", MSIM_PT_UINT, "none", 0,
		1e12, MSIM_PF_NONE_OK, "an oversize request takes a cached "
		"block less than this many MiB larger (default "
		"large_segment_size_mb)", NULL},
	[P_LARGE_SEG] = {"large_segment_size_mb", MSIM_PT_UINT, "20", 11,
		1e9, 0, "segment size for requests of 1 to 10 MiB", NULL},
	[P_GC] = {"garbage_collection_threshold", MSIM_PT_DOUBLE, "0", 0, 1,
		MSIM_PF_MIN_OPEN | MSIM_PF_MAX_OPEN, "free unused cached "
		"segments above this fraction of the cap (needs a cap)", NULL},
	[P_RP2] = {"roundup_power2_divisions", MSIM_PT_TEXT, "0", 0, 0, 0,
		"round sizes up to N divisions of a power of two: N or "
		"[size_mb:N,...,>:N]", rp2_check},
	[P_EXPANDABLE] = {"expandable_segments", MSIM_PT_BOOL, "False", 0, 0,
		0, "grow one virtual segment per stream and pool", NULL},
	[P_FRACTION] = {"per_process_memory_fraction", MSIM_PT_DOUBLE, "1",
		0, 1, 0, "cap = fraction x device memory (overrides --cap)",
		NULL},
	[P_RELEASE_LOCK] = {"release_lock_on_cudamalloc", MSIM_PT_BOOL,
		"False", 0, 0, 0, "accepted; concurrency only, no effect on "
		"memory", NULL},
	[P_GRAPH_REUSE] = {"graph_capture_record_stream_reuse", MSIM_PT_BOOL,
		"False", 0, 0, 0, "blocks freed with record_stream uses during "
		"a CUDA graph capture are reused inside it where the trace "
		"frees them; False: only after the capture", NULL},
	[P_PIN_REGISTER] = {"pinned_use_cuda_host_register", MSIM_PT_BOOL,
		"False", 0, 0, 0, "accepted; host allocator only", NULL},
	[P_PIN_THREADS] = {"pinned_num_register_threads", MSIM_PT_UINT, "1",
		1, 128, MSIM_PF_POW2, "accepted; host allocator only", NULL},
	[P_BACKEND] = {"backend", MSIM_PT_TEXT, "native", 0, 0, 0,
		"native (this policy)", backend_check},
	[P_PIN_BG] = {"pinned_use_background_threads", MSIM_PT_BOOL, "False",
		0, 0, 0, "accepted; host allocator only", NULL},
	[P_PIN_RESERVE] = {"pinned_reserve_segment_size_mb", MSIM_PT_UINT,
		"0", 1, 1e12, 0, "accepted; host allocator only", NULL},
	/* The ROCm spellings, which the CUDA build accepts too. */
	[P_RELEASE_LOCK_HIP] = {"release_lock_on_hipmalloc", MSIM_PT_BOOL,
		"False", 0, 0, 0, "accepted (ROCm's spelling); no effect",
		NULL},
	[P_PIN_REGISTER_HIP] = {"pinned_use_hip_host_register", MSIM_PT_BOOL,
		"False", 0, 0, 0, "accepted (ROCm's spelling); host allocator "
		"only", NULL},
	{NULL, 0, NULL, 0, 0, 0, NULL, NULL},
};

int
msim_pt_create(void **state_out, msim_device_t *dev, const msim_params_t *pv,
	       char *why, size_t whylen)
{
	const msim_param_value_t *v = pv->v;
	uint64_t large_mb = v[P_LARGE_SEG].u;
	if (!v[P_MAX_SPLIT].none && v[P_MAX_SPLIT].u < large_mb) {
		snprintf(why, whylen, "max_split_size_mb: %llu is below "
			 "large_segment_size_mb (%llu)",
			 (unsigned long long)v[P_MAX_SPLIT].u,
			 (unsigned long long)large_mb);
		return MSIM_EINVAL;
	}
	if (!v[P_NONSPLIT].none && v[P_NONSPLIT].u < large_mb) {
		snprintf(why, whylen, "max_non_split_rounding_mb: %llu is "
			 "below large_segment_size_mb (%llu)",
			 (unsigned long long)v[P_NONSPLIT].u,
			 (unsigned long long)large_mb);
		return MSIM_EINVAL;
	}
	pt_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return MSIM_ENOMEM;
	s->dev = dev;
	s->large_segment = large_mb * MSIM_MiB;
	s->max_split = v[P_MAX_SPLIT].none ? PT_UNLIMITED
					   : v[P_MAX_SPLIT].u * MSIM_MiB;
	s->nonsplit_tol = v[P_NONSPLIT].none ? s->large_segment
					     : v[P_NONSPLIT].u * MSIM_MiB;
	s->gc_threshold = v[P_GC].d;
	s->expandable = v[P_EXPANDABLE].b;
	s->graph_reuse = v[P_GRAPH_REUSE].b;
	rp2_parse(v[P_RP2].text, s->rp2, why, whylen);
	for (int i = 0; i < 16; i++)
		s->rp2_any = s->rp2_any || s->rp2[i] > 1;
	if (v[P_FRACTION].set && msim_device_set_fraction(dev, v[P_FRACTION].d)) {
		free(s);
		return MSIM_EINVAL;
	}
	s->cap = msim_device_cap(dev);
	s->gc_enabled = s->cap && s->gc_threshold > 0.0;
	*state_out = s;
	return 0;
}
