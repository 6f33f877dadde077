/*
 * The model-shaped generator: the allocations and frees PyTorch makes when
 * it trains or runs a model, in PyTorch's order (parameters, the input
 * batch, zero_grad(set_to_none), forward with its saved activations and
 * temporaries, logits and loss, backward with gradient accumulation, the
 * optimizer step with its state created at the first step, the cuBLAS
 * workspaces), for GPT-2 and Llama-style decoders, BERT-style encoders
 * (inference) and ResNet-50, under the dtype strategies (fp32, bf16/fp16
 * autocast, pure bf16) and checkpoint schedules of strategy.h.
 */
#ifndef MSIM_TRACES_GEN_MODEL_H
#define MSIM_TRACES_GEN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "traces/gen.h"

typedef enum msim_arch_e {
	MSIM_ARCH_GPT2 = 0,
	MSIM_ARCH_LLAMA,
	MSIM_ARCH_BERT,
	MSIM_ARCH_RESNET50,
} msim_arch_t;

typedef enum msim_dtype_e {
	MSIM_DT_FP32 = 0, /* everything fp32 */
	MSIM_DT_BF16_AMP, /* torch.autocast(bfloat16), fp32 master weights */
	MSIM_DT_FP16_AMP, /* torch.autocast(float16) + GradScaler */
	MSIM_DT_BF16,     /* model.to(bfloat16): weights, grads, state */
} msim_dtype_t;

typedef enum msim_ckpt_kind_e {
	MSIM_CKPT_NONE = 0,
	MSIM_CKPT_EVERY,  /* a checkpoint every k layers */
	MSIM_CKPT_SQRT,   /* k = ceil(sqrt(layers)) (Chen et al. 2016) */
	MSIM_CKPT_BUDGET, /* least recomputation under a peak budget */
} msim_ckpt_kind_t;

typedef struct msim_ckpt_s {
	int kind;        /* msim_ckpt_kind_t */
	uint64_t k;      /* EVERY: layers a segment */
	uint64_t budget; /* BUDGET: bytes of peak allocated (or reserved,
			  * as measure says) */
	/*
	 * BUDGET: how a schedule's peak is measured; NULL: the generated
	 * peak allocated bytes.  Given (lab/input.c does under a cap), the
	 * generated requests of the schedule (g, not dry) are handed to it
	 * and *peak_out is what must fit the budget: the bytes the allocator
	 * reserves under the cap, UINT64_MAX when it runs out of memory.
	 */
	int (*measure)(void *ctx, msim_gen_t *g, uint64_t *peak_out);
	void *measure_ctx;
} msim_ckpt_t;

#define MSIM_MODEL_MAXSEQ 64

typedef struct msim_model_cfg_s {
	int arch;           /* msim_arch_t */
	uint64_t layers;    /* transformer blocks (0: the arch's default) */
	uint64_t hidden;    /* model width */
	uint64_t heads;     /* attention heads */
	uint64_t kv_heads;  /* key/value heads (0: = heads) */
	uint64_t ffn;       /* MLP width (0: msim_model_ffn()'s default) */
	uint64_t vocab;     /* vocabulary */
	uint64_t positions; /* position table rows */
	uint64_t batch;     /* sequences (or images) a step */
	uint64_t seq[MSIM_MODEL_MAXSEQ]; /* sequence length of each step */
	size_t nseq;        /* used entries of seq (repeated over steps) */
	uint64_t image;     /* image side in pixels (ResNet) */
	int dtype;          /* msim_dtype_t */
	int optimizer;      /* 0 AdamW, 1 SGD with momentum */
	uint64_t steps;     /* training steps or inference batches */
	msim_ckpt_t ckpt;   /* activation checkpointing */
	bool inference;     /* no_grad forward only */
	/* fp16-amp: the first optimizer steps GradScaler skips because the
	 * gradients overflow at its initial scale of 2^16 (the scale halves
	 * each time; no optimizer state is created until a step runs).  A
	 * freshly initialised ResNet-50 skipped all of its first 3. */
	uint64_t scaler_skips;
} msim_model_cfg_t;

enum { MSIM_OPT_ADAMW = 0, MSIM_OPT_SGD = 1 };

/* Fills cfg with the defaults of arch (GPT-2 small, Llama-2-7B shape,
 * BERT-base, ResNet-50 at 224 px): batch 8, seq 1024, fp32, 1 step. */
void msim_model_defaults(msim_model_cfg_t *cfg, int arch);

/* The MLP width: ffn, or by default 4 x hidden (GPT-2, BERT) and
 * 8/3 x hidden rounded up to 256 (Llama: 11008 for 4096). */
uint64_t msim_model_ffn(const msim_model_cfg_t *cfg);

/* Checks cfg.  Returns 0, or MSIM_EINVAL with why naming the option. */
int msim_model_check(const msim_model_cfg_t *cfg, char *why, size_t whylen);

/*
 * Generates the run cfg describes into g (initialised by the caller,
 * dry or not).  A budget schedule is resolved first (see
 * msim_model_schedule()).  Returns 0, MSIM_EINVAL (why) or MSIM_ENOMEM.
 */
int msim_model_generate(const msim_model_cfg_t *cfg, msim_gen_t *g, char *why,
			size_t whylen);

/*
 * The checkpoint layout cfg asks for, layer by layer: seg_out[i] is the
 * length of the checkpointed segment starting at layer i (0 = the layer is
 * not checkpointed, or is inside a segment).  For BUDGET it searches
 * schedules (a prefix of the layers checkpointed in segments of k, the rest
 * stored) for the least recomputation whose generated peak fits, measuring
 * each by a dry run of up to two steps (optimizer state included).
 * Returns 0, or MSIM_EINVAL when nothing
 * fits (why says the smallest peak reachable).
 */
int msim_model_schedule(const msim_model_cfg_t *cfg, uint32_t *seg_out,
			char *why, size_t whylen);

/* Short names, as the command line spells them. */
const char *msim_arch_name(int arch);
const char *msim_dtype_name(int dtype);
int msim_dtype_parse(const char *s);          /* -1 if unknown */
int msim_ckpt_parse(const char *s, msim_ckpt_t *out); /* 0 or MSIM_EINVAL */

#endif
