/*
 * The tensor scripts of the transformer models (gen_model_scripts.c): for
 * each phase of a step, the allocations and frees PyTorch 2.11 makes, in
 * its order, with sizes as products of the model's dimensions.  They were
 * read off the ground-truth recordings (GPT-2 with HF transformers 5 on an
 * H200; BERT-base) op by op, and are interpreted by gen_model.c.
 *
 * Syntax: whitespace-separated tokens.
 *   name=EXPR   allocate a tensor of EXPR bytes, named in the current scope
 *   Gk=EXPR     the gradient of the scope's k-th parameter (kept until
 *               zero_grad); GAk names absolute parameter k
 *   -REF        free the tensor REF (a name not found is ignored: the
 *               first and last layers have no neighbour to free)
 *   !ws !wsb    the cuBLAS workspace of the forward (32 MiB + the 1 MiB
 *               cuBLASLt one) or backward thread (32 MiB), the first time
 *   !exit       autocast exits: its cache frees the casts nobody saved
 *   !batch      the input batch is freed (inference loop's `del x`)
 *   $k=EXPR     torch.cat into the layer's KV cache slot k: the new
 *               tensor, then the old one freed (-$k frees it)
 *   name=EXPR~W a linear layer's output; under weight-only quantization
 *               the W-element weight is first dequantized to the
 *               activations' dtype (a temporary), the matmul output then
 *               scaled into name: torch.mm(x, w.to(x.dtype)) * scale
 *   ?FLAGS:TOK  TOK only if every flag holds: c/u KV cache on/off, d/f
 *               decode step or not, w/n weights quantized or not, h/s
 *               2- or 4-byte activations, r grouped-query attention
 *   A tensor of 0 bytes (EXPR = 0) is not allocated.
 * REF prefixes: none = this scope; ^ the previous scope of the same kind
 * (layer i-1 in forward, i+1 in backward); ^^ two back; @ this layer's
 * forward; @> the next layer's forward (or the head); @< the previous
 * layer's forward (or the embeddings); & the embeddings; % the head.
 * EXPR: factors joined by '*': integers or B T T1(T+1) H N F V P Q (qkv
 * width) HN (H+N) a (activation bytes) p (parameter bytes) WH WF WQ
 * (cuBLASLt bias-gradient workspaces) SH SF SQ (their 1/32 companions)
 * EM1 EM2 EM3 (embedding-backward sort buffers), D (head dim), D2 (half),
 * KV (key/value heads), KD (KV x D), S (the cache's length after this
 * forward), TL (rows of logits: 1 in generate(), else T).
 */
#ifndef MSIM_TRACES_GEN_MODEL_SCRIPTS_H
#define MSIM_TRACES_GEN_MODEL_SCRIPTS_H

#include <stdbool.h>

typedef struct msim_tscripts_s {
	const char *pre;     /* embeddings */
	const char *layer;   /* one block, forward */
	const char *tail;    /* final norm, head, loss, loss backward */
	const char *layer_bwd; /* one block, backward */
	const char *pre_bwd; /* embeddings backward */
	const char *out;     /* name of a block's output */
	const char *loss;    /* name of the loss in the head scope */
	const char *casts;   /* names autocast frees at exit (space sep) */
	const char *kvcopies; /* names of the copies of k and v that
			       * use_cache=True's DynamicCache makes (and
			       * SDPA saves) in a training forward */
	const char *wcasts;   /* names of autocast's cached weight casts */
	bool ckpt_cache;      /* the cache reaches checkpointed layers (HF
			       * GPT2Model passes it positionally, so
			       * GradientCheckpointingLayer does not drop
			       * it); else use_cache is off in them */
	unsigned layer_params; /* parameters a block */
	unsigned pre_params;   /* parameters before the first block */
} msim_tscripts_t;

extern const msim_tscripts_t msim_gpt2_fp32;  /* also pure bf16 (a = 2) */
extern const msim_tscripts_t msim_gpt2_amp;   /* autocast, a = 2 */
extern const msim_tscripts_t msim_bert_infer; /* no_grad encoder */
extern const msim_tscripts_t msim_gpt2_infer;  /* no_grad decoder, cache */
extern const msim_tscripts_t msim_llama_infer; /* likewise */
extern const msim_tscripts_t msim_llama_train; /* fp32 or pure bf16 */

#endif
