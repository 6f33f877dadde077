/*
 * For traces/gen_model*.c only (SQLite's btreeInt.h beside btree.h): the
 * generator's state and the calls its parts share.  Users include
 * traces/gen_model.h.  These names are not exported: libmemsim exports
 * memsim_* only (lib/Makemodule.am).
 *
 *	gen_model.c		state, parameters, optimizers, the driver
 *	gen_model_script.c	the interpreter of the tensor scripts
 *				(gen_model_scripts.c holds the scripts)
 *	gen_model_tf.c		transformers
 *	gen_model_resnet.c	ResNet-50, op by op
 */
#ifndef MSIM_TRACES_GEN_MODEL_INT_H
#define MSIM_TRACES_GEN_MODEL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "traces/gen.h"
#include "traces/gen_model.h"
#include "traces/gen_model_scripts.h"

#define MG_NAMES 96

typedef struct mg_scope_s {
	char names[MG_NAMES][8];
	int32_t ids[MG_NAMES]; /* -1 once freed */
	int n;
	bool recompute; /* built by a recomputation */
} mg_scope_t;

typedef struct mg_ctx_s {
	mg_scope_t *cur, *prev, *prev2, *own, *next, *prevf, *pre, *tail;
	mg_scope_t *kv;   /* the layer's KV cache (kept across forwards) */
	unsigned gbase;   /* absolute index of the scope's parameter 0 */
	bool local_frees; /* recomputation: free only inside cur/prev */
} mg_ctx_t;

typedef struct mg_s {
	msim_gen_t *g;
	const msim_model_cfg_t *cfg;
	const msim_tscripts_t *ts;
	uint64_t B, T, H, N, F, V, P, Q, a, p;
	uint64_t D, KV, S, TL; /* head dim, kv heads, cached length, logit rows */
	bool kv_on;        /* this forward updates a KV cache */
	bool decode;       /* a decode step (one token against the cache) */
	bool quant;        /* weight-only int8/fp8 linear layers */
	uint64_t micro;    /* micro-batch of the step (gradient accumulation) */
	uint64_t *psize;  /* bytes of each parameter */
	int64_t *grad;    /* id of each parameter's gradient, -1 if none */
	unsigned np, maxparam;
	bool ws_fwd, ws_bwd, ws_bwd_lt;
	int64_t batch_id, loss_id;
	bool opt_state;    /* optimizer state exists */
	int64_t *state;    /* ids of the optimizer state, 2 a parameter */
	int64_t scaler[2]; /* GradScaler's scale and growth tracker */
	int64_t found_inf, inv_scale; /* GradScaler's, during a step */
	struct mg_tf_s *tf; /* the transformer being generated */
	bool params_only;  /* lay out the parameters, allocate nothing */
	const uint32_t *seg;
	int err;
	char *why;
	size_t whylen;
} mg_t;

typedef struct mg_tf_s {
	mg_scope_t *fwd, *bwd, pre, tail, prebwd;
	mg_scope_t *kv; /* each layer's KV cache, kept across forwards */
	uint64_t L;
} mg_tf_t;

/* gen_model.c: requests, and the parts common to every model. */
void mg_fail(mg_t *m, int code, const char *fmt, ...);
int64_t mg_alloc(mg_t *m, uint64_t bytes);
void mg_free(mg_t *m, int64_t *id);
void mg_param(mg_t *m, uint64_t elems);
void mg_zero_grad(mg_t *m);
void mg_optimizer(mg_t *m, uint64_t step);
int64_t mg_scaler_scale(mg_t *m);
void mg_scaler_step(mg_t *m, bool before);

/* gen_model_script.c: scopes of named tensors and the scripts run in
 * them. */
int32_t *mg_lookup(mg_scope_t *sc, const char *name, size_t len);
void mg_bind(mg_t *m, mg_scope_t *sc, const char *name, size_t len,
	     int64_t id);
void mg_scope_reset(mg_scope_t *sc);
void mg_scope_drop(mg_t *m, mg_scope_t *sc, const char *keep);
void mg_workspace(mg_t *m, bool bwd, bool rec);
void mg_cast_exit(mg_t *m, mg_scope_t *sc);
bool mg_listed(const char *list, const char *name);
void mg_free_name(mg_t *m, mg_scope_t *sc, const char *name, size_t len);
void mg_run(mg_t *m, const char *script, const mg_ctx_t *x);

/* gen_model_tf.c */
void mg_transformer(mg_t *m);
void mg_exit_all(mg_t *m);
void mg_tf_kv_free(mg_t *m, mg_tf_t *t);

/* gen_model_resnet.c */
void mg_resnet50(mg_t *m);

#endif
