/*
 * Transforms of recorded request streams: a source that wraps a source.
 * The dtype transform estimates what an fp32 recording would allocate
 * under another dtype strategy (bf16/fp16 autocast or a pure bf16 model)
 * without the model: it reads the whole inner stream, classifies each
 * allocation from the trace itself, rescales it, and for autocast adds the
 * cache of low-precision weight copies that lives through each forward.
 *
 * Classification (only sizes and lifetimes are known):
 *   param   allocated before the first free and never freed: the model's
 *           parameters (and what else the program made up front);
 *   pshape  later allocations of a parameter's exact size: gradients,
 *           optimizer state, foreach temporaries;
 *   act     everything else: activations, temporaries, workspaces.
 * Autocast keeps param and pshape in fp32 and halves act; pure bf16 halves
 * all three.  The autocast cache is a half-size copy of every parameter,
 * allocated when a forward begins (the first allocation once no gradient
 * is live) and freed at its end (the first gradient allocated: an
 * allocation of a parameter's size, 64 KiB or more, that is freed later),
 * only for forwards followed by a backward.  The approximations: ops that
 * autocast keeps in fp32 (layer norm, softmax, loss) are halved anyway,
 * every parameter is cast (embeddings and norms are not), and casts are
 * made all at once instead of at first use.  docs/fidelity.md ("The dtype
 * transform of recorded traces") gives the error on the recorded and
 * generated GPT-2 runs.
 */
#ifndef MSIM_TRACES_XFORM_H
#define MSIM_TRACES_XFORM_H

#include <stddef.h>
#include <stdint.h>

#include "sim/engine.h"

typedef struct msim_xform_s msim_xform_t;

/* What the dtype transform found and did. */
typedef struct msim_xform_stats_s {
	uint64_t params, param_bytes;   /* param class: count, bytes */
	uint64_t pshape, pshape_bytes;  /* pshape class */
	uint64_t act, act_bytes;        /* act class */
	uint64_t forwards;              /* forwards given an autocast cache */
	uint64_t cache_bytes;           /* bytes of one forward's cache */
} msim_xform_stats_t;

/*
 * Parses a transform spec, "dtype=bf16-amp" (fp16-amp, bf16; fp32 is the
 * identity): the dtype the recording (taken as fp32) is rescaled to.
 * Returns 0 with *dtype_out (msim_dtype_t), or MSIM_EINVAL with why.
 */
int msim_xform_parse(const char *spec, int *dtype_out, char *why,
		     size_t whylen);

/*
 * Reads all of src (which must stay valid until this returns) and makes
 * the transformed stream of an fp32 recording under dtype.  Returns 0, the
 * inner source's error with why (its message), or MSIM_ENOMEM.
 */
int msim_xform_dtype_new(msim_source_t src, int dtype, msim_xform_t **out,
			 char *why, size_t whylen);

/* The transformed requests; x must outlive the source. */
msim_source_t msim_xform_source(msim_xform_t *x);

void msim_xform_stats(const msim_xform_t *x, msim_xform_stats_t *out);

void msim_xform_destroy(msim_xform_t *x);

#endif
