/*
 * Tests of the generators and strategies: the model-shaped generator
 * against the ground truth (peak allocated within 3%, peak reserved through
 * the pytorch policy within 5%, for the four recorded workloads), exact
 * sizes of each strategy on a tiny GPT-2 computed by hand, checkpoint
 * recomputation counts, the statistical generator's determinism, and the
 * strategy registry's errors.
 */
#include <config.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "policies/registry.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "tests/testutil.h"
#include "traces/gen.h"
#include "traces/gen_model.h"
#include "traces/gen_random.h"
#include "traces/strategy.h"

/* ---- ground truth ---------------------------------------------------- */

typedef struct gt_case_s {
	const char *name;
	int arch, dtype, optimizer;
	uint64_t batch, steps, image;
	const char *seq;
} gt_case_t;

/* The recorded runs of tests/data/traces (H200, torch 2.11). */
static const gt_case_t gt_cases[] = {
	{"gpt2_fp32", MSIM_ARCH_GPT2, MSIM_DT_FP32, MSIM_OPT_ADAMW, 8, 3, 0,
	 "1024"},
	{"gpt2_varlen", MSIM_ARCH_GPT2, MSIM_DT_BF16_AMP, MSIM_OPT_ADAMW, 8, 8,
	 0, "512,1024,768,256,1000,640,896,384"},
	{"resnet50_amp", MSIM_ARCH_RESNET50, MSIM_DT_FP16_AMP, MSIM_OPT_SGD,
	 64, 3, 224, NULL},
	{"bert_infer_varlen", MSIM_ARCH_BERT, MSIM_DT_FP32, 0, 32, 10, 0,
	 "128,512,64,384,256,512,32,448,192,320"},
};

static void
gt_cfg(const gt_case_t *k, msim_model_cfg_t *c)
{
	msim_model_defaults(c, k->arch);
	c->dtype = k->dtype;
	c->optimizer = k->optimizer;
	c->batch = k->batch;
	c->steps = k->steps;
	if (k->image)
		c->image = k->image;
	if (k->seq) {
		char buf[256];
		snprintf(buf, sizeof(buf), "%s", k->seq);
		c->nseq = 0;
		for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
			c->seq[c->nseq++] = strtoull(t, NULL, 10);
	}
}

/* allocated and reserved peaks of workload in expected.tsv (default). */
static void
gt_expected(const char *workload, int64_t *alloc, int64_t *reserved)
{
	FILE *fp = fopen(test_data("expected.tsv"), "r");
	ck_assert_ptr_nonnull(fp);
	char line[8192];
	int ca = -1, cr = -1;
	*alloc = *reserved = -1;
	while (fgets(line, sizeof(line), fp)) {
		char *f[64];
		int n = 0;
		for (char *t = strtok(line, "\t\n"); t && n < 64;
		     t = strtok(NULL, "\t\n"))
			f[n++] = t;
		if (ca < 0) {
			for (int i = 0; i < n; i++) {
				if (!strcmp(f[i], "allocated_bytes.all.peak"))
					ca = i;
				if (!strcmp(f[i], "reserved_bytes.all.peak"))
					cr = i;
			}
			continue;
		}
		if (n > ca && n > cr && !strcmp(f[0], workload) &&
		    !strcmp(f[1], "default")) {
			*alloc = strtoll(f[ca], NULL, 10);
			*reserved = strtoll(f[cr], NULL, 10);
		}
	}
	fclose(fp);
	ck_assert_int_gt(*alloc, 0);
}

START_TEST(test_gen_groundtruth_peaks)
{
	const gt_case_t *k = &gt_cases[_i];
	msim_model_cfg_t c;
	gt_cfg(k, &c);
	msim_gen_t g;
	msim_gen_init(&g, false);
	char why[256] = "";
	ck_assert_msg(msim_model_generate(&c, &g, why, sizeof(why)) == 0,
		      "%s", why);
	msim_sim_config_t sc = {.source = msim_gen_source(&g),
				.policy = msim_policy_find("pytorch")};
	msim_sim_t *sim;
	ck_assert_int_eq(msim_sim_new(&sc, &sim, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_sim_run(sim), 0);
	msim_stats_t st;
	msim_sim_stats(sim, &st);
	int64_t ra, rr;
	gt_expected(k->name, &ra, &rr);
	double ea = (double)st.allocated_bytes[MSIM_POOL_ALL].peak / ra - 1;
	double er = (double)st.reserved_bytes[MSIM_POOL_ALL].peak / rr - 1;
	ck_assert_msg(ea > -0.03 && ea < 0.03, "%s: allocated off by %.2f%%",
		      k->name, 100 * ea);
	ck_assert_msg(er > -0.05 && er < 0.05, "%s: reserved off by %.2f%%",
		      k->name, 100 * er);
	msim_sim_destroy(sim);
	msim_gen_clear(&g);
}
END_TEST

/* ---- a tiny GPT-2, by hand ------------------------------------------- */

/* L=2, H=64, heads 4, F=256, V=100, P=32, batch 2, seq 16.  Parameters:
 * V*H + P*H = 6400 + 2048; a block: ln 2*64, c_attn 64*192 + 192,
 * c_proj 64*64 + 64, ln 2*64, c_fc 64*256 + 256, c_proj 256*64 + 64
 * = 49984; two blocks 99968; ln_f 128.  Total 108544 parameters. */
#define TINY_PARAMS 108544u

static void
tiny(msim_model_cfg_t *c, int dtype)
{
	msim_model_defaults(c, MSIM_ARCH_GPT2);
	c->layers = 2, c->hidden = 64, c->heads = 4, c->ffn = 256;
	c->vocab = 100, c->positions = 32, c->batch = 2, c->seq[0] = 16;
	c->dtype = dtype;
}

static void
tiny_gen(const msim_model_cfg_t *c, msim_gen_t *g)
{
	char why[256] = "";
	msim_gen_init(g, false);
	ck_assert_msg(msim_model_generate(c, g, why, sizeof(why)) == 0, "%s",
		      why);
}

/* Bytes of the first n allocations. */
static uint64_t
first_allocs(const msim_gen_t *g, size_t from, size_t n)
{
	uint64_t sum = 0;
	size_t k = 0;
	for (size_t i = 0; i < g->n && k < from + n; i++)
		if (g->reqs[i].kind == MSIM_REQ_ALLOC) {
			if (k >= from)
				sum += g->reqs[i].size;
			k++;
		}
	return sum;
}

/* 148 parameters for 12 layers; 2 + 12 x 2 + 2 = 28 here. */
#define TINY_NPARAM 28

START_TEST(test_gen_dtype_param_bytes)
{
	static const int dt[4] = {MSIM_DT_FP32, MSIM_DT_BF16_AMP,
				  MSIM_DT_FP16_AMP, MSIM_DT_BF16};
	/* autocast keeps fp32 master weights; pure bf16 halves them */
	static const uint64_t bytes[4] = {4 * TINY_PARAMS, 4 * TINY_PARAMS,
					  4 * TINY_PARAMS, 2 * TINY_PARAMS};
	msim_model_cfg_t c;
	tiny(&c, dt[_i]);
	msim_gen_t g;
	tiny_gen(&c, &g);
	ck_assert_uint_eq(first_allocs(&g, 0, TINY_NPARAM), bytes[_i]);
	/* then the batch, B*T int64 = 256, then wte's output B*T*H:
	 * fp32 under autocast (embedding is not autocast), bf16 if pure */
	ck_assert_uint_eq(first_allocs(&g, TINY_NPARAM, 1), 256);
	ck_assert_uint_eq(first_allocs(&g, TINY_NPARAM + 1, 1),
			  dt[_i] == MSIM_DT_BF16 ? 4096 : 8192);
	msim_gen_clear(&g);
}
END_TEST

START_TEST(test_gen_amp_weight_cast)
{
	/* Layer 0 under autocast: ln_1 out fp32 (8192), mean and rstd
	 * (2*16*4 = 128 each), then the autocast cache's bf16 copy of
	 * c_attn's weight, 64 x 192 x 2 = 24576, the bf16 cast of ln_1's
	 * output (4096), of the bias (384), and qkv in bf16 (12288). */
	msim_model_cfg_t c;
	tiny(&c, MSIM_DT_BF16_AMP);
	msim_gen_t g;
	tiny_gen(&c, &g);
	size_t l0 = TINY_NPARAM + 1 + 7; /* params, batch, embeddings */
	static const uint64_t want[7] = {8192, 128, 128, 24576, 4096, 384,
					 12288};
	for (size_t i = 0; i < 7; i++)
		ck_assert_uint_eq(first_allocs(&g, l0 + i, 1), want[i]);
	msim_gen_clear(&g);
}
END_TEST

START_TEST(test_gen_adamw_state_bytes)
{
	/* AdamW creates exp_avg and exp_avg_sq at the first step, as many
	 * bytes as the (master) parameters each: the live bytes at the end
	 * of a step are parameters, gradients, two states and the cuBLAS
	 * workspaces (32 + 1 MiB forward, 32 MiB backward). */
	msim_model_cfg_t c;
	tiny(&c, _i ? MSIM_DT_BF16 : MSIM_DT_FP32);
	msim_gen_t g;
	tiny_gen(&c, &g);
	uint64_t p = (_i ? 2 : 4) * (uint64_t)TINY_PARAMS;
	ck_assert_uint_eq(g.allocated, 4 * p + 65 * MSIM_MiB);
	msim_gen_clear(&g);
}
END_TEST

START_TEST(test_gen_checkpoint_recompute)
{
	/* 4 layers (wider, so activations outweigh the workspaces): every:1 recomputes each layer once, every:2 too (two
	 * segments of 2), sqrt(4) = 2 likewise; a budget at the
	 * unchekpointed peak needs none; recomputation is per step. */
	static const struct {
		const char *spec;
		uint64_t recompute;
	} k[] = {{"none", 0}, {"every:1", 8}, {"every:2", 8}, {"sqrt", 8},
		 {"every:3", 8}};
	msim_model_cfg_t c;
	tiny(&c, MSIM_DT_FP32);
	c.layers = 4;
	c.steps = 2;
	c.hidden = 256, c.ffn = 1024, c.batch = 8, c.seq[0] = 32;
	/* without the cache GPT-2's checkpointed blocks keep (see
	 * test_gen_checkpoint_cache), which outweighs the activations
	 * saved at this size */
	c.no_cache = true;
	uint64_t peak_none = 0;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		char why[256];
		ck_assert_int_eq(msim_strategy_set(&c, "checkpoint", k[i].spec,
						   why, sizeof(why)), 0);
		msim_gen_t g;
		tiny_gen(&c, &g);
		ck_assert_uint_eq(g.recompute, k[i].recompute);
		if (!i)
			peak_none = g.peak;
		else
			ck_assert_uint_lt(g.peak, peak_none);
		msim_gen_clear(&g);
	}
	/* budget: the unconstrained peak fits with no recomputation; one
	 * byte less forces some, and the result fits */
	char spec[64], why[256];
	snprintf(spec, sizeof(spec), "budget:%llu",
		 (unsigned long long)peak_none);
	ck_assert_int_eq(msim_strategy_set(&c, "checkpoint", spec, why,
					   sizeof(why)), 0);
	msim_gen_t g;
	tiny_gen(&c, &g);
	ck_assert_uint_eq(g.recompute, 0);
	msim_gen_clear(&g);
	snprintf(spec, sizeof(spec), "budget:%llu",
		 (unsigned long long)peak_none - 1);
	ck_assert_int_eq(msim_strategy_set(&c, "checkpoint", spec, why,
					   sizeof(why)), 0);
	tiny_gen(&c, &g);
	ck_assert_uint_gt(g.recompute, 0);
	ck_assert_uint_le(g.peak, peak_none - 1);
	msim_gen_clear(&g);
	ck_assert_int_eq(msim_strategy_set(&c, "checkpoint", "budget:1", why,
					   sizeof(why)), 0);
	msim_gen_init(&g, false);
	ck_assert_int_eq(msim_model_generate(&c, &g, why, sizeof(why)),
			 MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "--checkpoint"));
	msim_gen_clear(&g);
}
END_TEST

START_TEST(test_gen_balanced)
{
	/* every generated run frees what it allocates but the persistent
	 * state, and never frees twice (g.failed) */
	msim_model_cfg_t c;
	tiny(&c, MSIM_DT_BF16_AMP);
	c.steps = 3;
	c.ckpt.kind = MSIM_CKPT_EVERY;
	c.ckpt.k = 1;
	msim_gen_t g;
	tiny_gen(&c, &g);
	ck_assert(!g.failed);
	msim_gen_clear(&g);
}
END_TEST

/* ---- decoders: Llama's layout, inference, generation, accumulation ---- */

/* Live bytes just before the n-th allocation (0-based) of size bytes,
 * or UINT64_MAX if there are fewer. */
static uint64_t
live_before(const msim_gen_t *g, uint64_t size, int n)
{
	uint64_t *sz = calloc(g->n + 1, sizeof(*sz)); /* ids are < n */
	uint64_t live = 0, out = UINT64_MAX;
	ck_assert_ptr_nonnull(sz);
	for (size_t i = 0; i < g->n; i++) {
		const msim_req_t *r = &g->reqs[i];
		if (r->kind == MSIM_REQ_ALLOC) {
			if (r->size == size && n-- == 0) {
				out = live;
				break;
			}
			sz[r->id] = r->size;
			live += r->size;
		} else {
			live -= sz[r->id];
		}
	}
	free(sz);
	return out;
}

/* Allocations of exactly size bytes. */
static int
count_allocs(const msim_gen_t *g, uint64_t size)
{
	int n = 0;
	for (size_t i = 0; i < g->n; i++)
		n += g->reqs[i].kind == MSIM_REQ_ALLOC &&
		     g->reqs[i].size == size;
	return n;
}

/* L=2, H=64, heads 4 (head dim 16), 2 key/value heads (KD = 32), F=128,
 * V=100.  Parameters: embed 6400; a layer: q 64x64 4096, k and v 64x32
 * 2048 each, o 4096, gate, up, down 64x128 8192 each, two norms 64 =
 * 36992; two layers 73984; norm 64; lm_head (untied) 6400: 86848. */
#define LLAMA_TINY 86848u

static void
llama_tiny(msim_model_cfg_t *c)
{
	msim_model_defaults(c, MSIM_ARCH_LLAMA);
	c->layers = 2, c->hidden = 64, c->heads = 4, c->kv_heads = 2;
	c->ffn = 128, c->vocab = 100, c->positions = 64;
	c->batch = 2, c->seq[0] = 16;
}

START_TEST(test_gen_llama_params)
{
	msim_model_cfg_t c;
	/* Llama-2-7B: 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096)
	 * + 2 x 32000 x 4096 (embeddings, lm_head) + 4096 */
	msim_model_defaults(&c, MSIM_ARCH_LLAMA);
	ck_assert_uint_eq(msim_model_ffn(&c), 11008);
	ck_assert_uint_eq(msim_model_params(&c), 6738415616ull);
	/* GPT-2 small, lm_head tied to wte */
	msim_model_defaults(&c, MSIM_ARCH_GPT2);
	ck_assert_uint_eq(msim_model_params(&c), 124439808ull);
	/* 400 tiny GPT-2 blocks (4804 parameter tensors: more than the
	 * generator's old fixed table of 4096 held) */
	tiny(&c, MSIM_DT_FP32);
	c.layers = 400;
	ck_assert_uint_eq(msim_model_params(&c), 400 * 49984 + 6400 + 2048 + 128);
	llama_tiny(&c);
	ck_assert_uint_eq(msim_model_params(&c), LLAMA_TINY);
	/* the parameters come first, fp32, with the rotary inv_freq buffer
	 * (head dim / 2 = 8 floats) before lm_head: 22 allocations */
	msim_gen_t g;
	tiny_gen(&c, &g);
	ck_assert_uint_eq(first_allocs(&g, 0, 22), 4 * LLAMA_TINY + 32);
	ck_assert_uint_eq(first_allocs(&g, 20, 1), 32);
	ck_assert_uint_eq(first_allocs(&g, 21, 1), 4 * 6400);
	/* training leaves parameters, gradients, two AdamW states, the
	 * buffer and the cuBLAS workspaces (32 MiB each thread; no
	 * cuBLASLt one: the projections have no bias) */
	ck_assert_uint_eq(g.allocated, 16 * LLAMA_TINY + 32 + 64 * MSIM_MiB);
	ck_assert(!g.failed);
	msim_gen_clear(&g);
}
END_TEST

START_TEST(test_gen_weights_quantized)
{
	/* weights=int8 (and fp8) on the bf16 tiny Llama: the linear weights
	 * at 1 byte (2 layers x 36864 + lm_head 6400 = 80128 bytes), a bf16
	 * scale per output channel (a layer:
	 * 64 + 32 + 32 + 64 + 128 + 128 + 64 = 512; lm_head 100; 2 x 1124
	 * bytes), the rest bf16 (embed 6400, 4 layer norms and the final
	 * one, 320 elements: 13440 bytes), inv_freq 16 bytes. */
	msim_model_cfg_t c;
	llama_tiny(&c);
	c.inference = true;
	c.dtype = MSIM_DT_BF16;
	c.weights = _i ? MSIM_W_FP8 : MSIM_W_INT8;
	msim_gen_t g;
	tiny_gen(&c, &g);
	/* embed; a layer: 7 weights + 7 scales + 2 norms; norm; buffer;
	 * lm_head and its scale: 1 + 2 x 16 + 1 + 1 + 2 = 37 */
	ck_assert_uint_eq(first_allocs(&g, 0, 37), 80128 + 2248 + 13440 + 16);
	/* the first projection dequantizes q_proj's weight to bf16
	 * (64 x 64 x 2), multiplies (B x T x 64 x 2), scales into q */
	uint64_t q = 2 * 16 * 64 * 2;
	int found = 0; /* q_proj and o_proj, two layers */
	for (size_t i = 0; i + 3 < g.n; i++)
		found += g.reqs[i].kind == MSIM_REQ_ALLOC &&
			 g.reqs[i].size == 8192 &&
			 g.reqs[i + 1].kind == MSIM_REQ_ALLOC &&
			 g.reqs[i + 1].size == q &&
			 g.reqs[i + 2].kind == MSIM_REQ_FREE &&
			 g.reqs[i + 2].id == g.reqs[i].id &&
			 g.reqs[i + 3].kind == MSIM_REQ_ALLOC &&
			 g.reqs[i + 3].size == q;
	ck_assert_int_eq(found, 4);
	ck_assert(!g.failed);
	msim_gen_clear(&g);
	/* training a quantized model is not modelled */
	c.inference = false;
	char why[256];
	msim_gen_init(&g, false);
	ck_assert_int_eq(msim_model_generate(&c, &g, why, sizeof(why)),
			 MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "--weights"));
	msim_gen_clear(&g);
}
END_TEST

START_TEST(test_gen_generate_cache)
{
	/* generate=3 on the fp32 tiny Llama, prompt 16: DynamicCache's
	 * torch.cat copies k and v at each forward, B x S x KD x 4 bytes
	 * (2 x S x 32 x 4): 2 layers x 2 a decode step, S = 17, 18, 19;
	 * the prefill's logits are the last position's (B x V x 4 = 800),
	 * never B x T x V; everything but the model is freed at the end. */
	msim_model_cfg_t c;
	llama_tiny(&c);
	c.inference = true;
	c.generate = 3;
	msim_gen_t g;
	tiny_gen(&c, &g);
	for (uint64_t S = 17; S <= 19; S++)
		ck_assert_int_eq(count_allocs(&g, 2 * S * 32 * 4), 4);
	ck_assert_int_eq(count_allocs(&g, 2 * 100 * 4), 4);
	ck_assert_int_eq(count_allocs(&g, 2 * 16 * 100 * 4), 0);
	/* before the last step's first cat, the cache holds 2 layers x
	 * (k, v) of S = 18 */
	uint64_t before = live_before(&g, 2 * 19 * 32 * 4, 0);
	ck_assert_uint_ge(before, 4 * 2 * 18 * 32 * 4);
	ck_assert_uint_eq(g.allocated, 4 * LLAMA_TINY + 32 + 32 * MSIM_MiB);
	ck_assert(!g.failed);
	msim_gen_clear(&g);
	/* a plain forward (no generate) keeps the whole logits; with
	 * use_cache=False there are no copies of k and v: per layer 4
	 * fewer tensors of B x T x KD x 4 bytes */
	c.generate = 0;
	tiny_gen(&c, &g);
	ck_assert_int_eq(count_allocs(&g, 2 * 16 * 100 * 4), 1);
	int with_cache = count_allocs(&g, 2 * 16 * 32 * 4);
	msim_gen_clear(&g);
	c.no_cache = true;
	tiny_gen(&c, &g);
	ck_assert_int_eq(with_cache - count_allocs(&g, 2 * 16 * 32 * 4),
			 2 * 2);
	msim_gen_clear(&g);
}
END_TEST

START_TEST(test_gen_infer_tiny_peak)
{
	/* The tiny GPT-2 (one layer) under no_grad, fp32, by hand.  Its
	 * peak is in gelu_new: the parameters (58560 x 4), the cuBLAS
	 * workspaces (33 MiB), the batch 256, the embeddings (wte out 8192,
	 * cache_position 128, wpe out 4096, their sum 8192), the cache's k
	 * and v (8192 each), attn_output 8192, the residual 8192, ln_2's
	 * output 8192, and four B x T x F x 4 = 32768 (c_fc's output,
	 * 0.5 * x, x^3, 0.044715 * x^3). */
	msim_model_cfg_t c;
	tiny(&c, MSIM_DT_FP32);
	c.layers = 1;
	c.inference = true;
	msim_gen_t g;
	tiny_gen(&c, &g);
	ck_assert_uint_eq(g.peak, 58560 * 4 + 33 * MSIM_MiB + 256 + 8192 +
			  128 + 4096 + 8192 + 2 * 8192 + 3 * 8192 + 4 * 32768);
	ck_assert_uint_eq(g.allocated, 58560 * 4 + 33 * MSIM_MiB);
	msim_gen_clear(&g);
}
END_TEST

/* The evaluation part of train_eval_emptycache.csv: Hugging Face GPT-2
 * (6 layers, 512 wide, 8 heads) in fp32 under no_grad, batch 16 at 1024,
 * 256 and 768 tokens, between the first and the second empty_cache().
 * Returns its peak of live bytes. */
static uint64_t
eval_window_peak(void)
{
	FILE *fp = fopen(test_data("traces/train_eval_emptycache.csv"), "r");
	ck_assert_ptr_nonnull(fp);
	char line[512];
	size_t cap = 1 << 14, n = 0;
	struct { unsigned long long addr, size; } *live = calloc(cap,
							      sizeof(*live));
	ck_assert_ptr_nonnull(live);
	uint64_t cur = 0, peak = 0;
	int group = 0; /* empty_cache() calls seen (runs of segment_free) */
	bool in_free = false;
	while (fgets(line, sizeof(line), fp)) {
		char action[32];
		unsigned long long seq, t, addr, size, stream;
		if (sscanf(line, "%llu,%llu,%31[a-z_],%llu,%llu,%llu", &seq,
			   &t, action, &addr, &size, &stream) != 6)
			continue;
		bool sf = !strcmp(action, "segment_free");
		if (sf && !in_free)
			group++;
		in_free = sf;
		if (group >= 2 && sf && peak)
			break;
		if (!strcmp(action, "alloc")) {
			ck_assert_uint_lt(n, cap);
			live[n].addr = addr, live[n].size = size, n++;
			cur += size;
		} else if (!strcmp(action, "free_completed")) {
			for (size_t i = 0; i < n; i++)
				if (live[i].addr == addr) {
					cur -= live[i].size;
					live[i] = live[--n];
					break;
				}
		}
		if (group == 1 && cur > peak)
			peak = cur;
	}
	fclose(fp);
	free(live);
	return peak;
}

START_TEST(test_gen_infer_vs_recording)
{
	/* The generated inference of the same model and batches has the
	 * recorded peak exactly, but for the 32 MiB cuBLAS workspace of
	 * autograd's thread that the recording kept from its training. */
	msim_model_cfg_t c;
	msim_model_defaults(&c, MSIM_ARCH_GPT2);
	c.layers = 6, c.hidden = 512, c.heads = 8, c.batch = 16;
	c.seq[0] = 1024, c.seq[1] = 256, c.seq[2] = 768, c.nseq = 3;
	c.steps = 3, c.inference = true;
	msim_gen_t g;
	tiny_gen(&c, &g);
	ck_assert_uint_eq(g.peak + 32 * MSIM_MiB, eval_window_peak());
	ck_assert_uint_eq(eval_window_peak(), 3978823680ull);
	msim_gen_clear(&g);
}
END_TEST

START_TEST(test_gen_accum)
{
	/* accum=K on the tiny GPT-2 (fp32), micro-batches of 16, 15 (and
	 * 14) tokens, so that each batch (B x T x 8 bytes: 240, 224) is the
	 * first allocation of its size: after the first micro-batch the
	 * gradients stay (no zero_grad, no step), so the next batches are
	 * allocated over parameters, one set of gradients (added in place)
	 * and the workspaces, and no AdamW state yet (one step, after the
	 * last); a step ends with one set of gradients and two states. */
	msim_model_cfg_t c;
	tiny(&c, MSIM_DT_FP32);
	c.accum = 2 + (uint64_t)_i;
	c.seq[0] = 16, c.seq[1] = 15, c.seq[2] = 14, c.nseq = 3;
	msim_gen_t g;
	tiny_gen(&c, &g);
	uint64_t p = 4 * (uint64_t)TINY_PARAMS;
	ck_assert_uint_eq(live_before(&g, 2 * 15 * 8, 0),
			  2 * p + 65 * MSIM_MiB);
	if (c.accum == 3)
		ck_assert_uint_eq(live_before(&g, 2 * 14 * 8, 0),
				  2 * p + 65 * MSIM_MiB);
	ck_assert_uint_eq(g.allocated, 4 * p + 65 * MSIM_MiB);
	ck_assert(!g.failed);
	msim_gen_clear(&g);
}
END_TEST

START_TEST(test_gen_checkpoint_cache)
{
	/* HF GPT-2 checkpointed: the cache's k and v copies of every layer
	 * (2 x B x T x H x 4 = 131072 a layer at batch 8 x 32) are alive at
	 * the head's peak (a vocabulary of 8000 makes the logits, 8 x 32 x
	 * 8000 x 4, the largest tensors; SGD keeps the step below it), so
	 * use_cache=True costs exactly 2 layers x 131072 there. */
	msim_model_cfg_t c;
	tiny(&c, MSIM_DT_FP32);
	c.vocab = 8000, c.batch = 8, c.seq[0] = 32;
	c.optimizer = MSIM_OPT_SGD;
	c.ckpt.kind = MSIM_CKPT_EVERY;
	c.ckpt.k = 1;
	msim_gen_t g;
	tiny_gen(&c, &g);
	uint64_t with = g.peak;
	msim_gen_clear(&g);
	c.no_cache = true;
	tiny_gen(&c, &g);
	ck_assert_uint_eq(with - g.peak, 2 * 131072);
	ck_assert(!g.failed);
	msim_gen_clear(&g);
}
END_TEST

/* ---- strategies and random ------------------------------------------- */

START_TEST(test_strategy_registry)
{
	ck_assert_ptr_nonnull(msim_strategy_find("dtype"));
	ck_assert_ptr_nonnull(msim_strategy_find("checkpoint"));
	ck_assert_ptr_null(msim_strategy_find("nope"));
	msim_model_cfg_t c;
	msim_model_defaults(&c, MSIM_ARCH_GPT2);
	char why[256] = "";
	ck_assert_int_eq(msim_strategy_set(&c, "dtype", "bf16-amp", why,
					   sizeof(why)), 0);
	ck_assert_int_eq(c.dtype, MSIM_DT_BF16_AMP);
	ck_assert_int_eq(msim_strategy_set(&c, "dtype", "fp8", why,
					   sizeof(why)), MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "dtype"));
	ck_assert_int_eq(msim_strategy_set(&c, "checkpoint", "every:0", why,
					   sizeof(why)), MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "checkpoint"));
}
END_TEST

START_TEST(test_random_deterministic)
{
	msim_random_cfg_t c;
	msim_random_defaults(&c);
	c.requests = 10000; /* 5000 allocations and their frees */
	char why[256];
	msim_gen_t a, b;
	msim_gen_init(&a, false);
	msim_gen_init(&b, false);
	ck_assert_int_eq(msim_random_generate(&c, &a, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_random_generate(&c, &b, why, sizeof(why)), 0);
	ck_assert_uint_eq(a.n, 10000);
	ck_assert_uint_eq(a.peak, b.peak);
	ck_assert_int_eq(memcmp(a.reqs, b.reqs, a.n * sizeof(*a.reqs)), 0);
	ck_assert_uint_eq(a.allocated, 0);
	msim_gen_clear(&b);
	c.seed = 2;
	msim_gen_init(&b, false);
	ck_assert_int_eq(msim_random_generate(&c, &b, why, sizeof(why)), 0);
	ck_assert_uint_ne(a.peak, b.peak);
	msim_gen_clear(&a);
	msim_gen_clear(&b);
}
END_TEST

/* --requests N writes N requests: an odd N leaves the last allocation live. */
START_TEST(test_random_requests_counted)
{
	msim_random_cfg_t c;
	msim_random_defaults(&c);
	char why[256];
	for (uint64_t n = 1; n <= 9; n++) {
		c.requests = n;
		msim_gen_t g;
		msim_gen_init(&g, false);
		ck_assert_int_eq(msim_random_generate(&c, &g, why,
						      sizeof(why)), 0);
		ck_assert_uint_eq(g.n, n);
		size_t allocs = 0;
		for (size_t i = 0; i < g.n; i++)
			allocs += g.reqs[i].kind == MSIM_REQ_ALLOC;
		ck_assert_uint_eq(allocs, (n + 1) / 2);
		ck_assert(n % 2 ? g.allocated > 0 : g.allocated == 0);
		msim_gen_clear(&g);
	}
}
END_TEST

START_TEST(test_random_classes)
{
	msim_random_cfg_t c;
	msim_random_defaults(&c);
	char why[256];
	ck_assert_int_eq(msim_random_parse_sizes(&c, "classes:512@3/2097152@1",
						 why, sizeof(why)), 0);
	c.streams = 2;
	msim_gen_t g;
	msim_gen_init(&g, false);
	ck_assert_int_eq(msim_random_generate(&c, &g, why, sizeof(why)), 0);
	size_t small = 0, n = 0;
	for (size_t i = 0; i < g.n; i++) {
		if (g.reqs[i].kind != MSIM_REQ_ALLOC)
			continue;
		ck_assert(g.reqs[i].size == 512 || g.reqs[i].size == 2097152);
		ck_assert_uint_lt(g.reqs[i].stream, 2);
		small += g.reqs[i].size == 512;
		n++;
	}
	ck_assert_double_eq_tol((double)small / n, 0.75, 0.03);
	msim_gen_clear(&g);
	ck_assert_int_eq(msim_random_parse_sizes(&c, "classes:", why,
						 sizeof(why)), MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "--sizes"));
}
END_TEST

static Suite *
gen_suite(void)
{
	Suite *s = suite_create("gen");
	TCase *tc = tcase_create("groundtruth");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_gen_groundtruth_peaks, 0,
			    (int)(sizeof(gt_cases) / sizeof(gt_cases[0])));
	suite_add_tcase(s, tc);
	tc = tcase_create("strategies");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_gen_dtype_param_bytes, 0, 4);
	tcase_add_test(tc, test_gen_amp_weight_cast);
	tcase_add_loop_test(tc, test_gen_adamw_state_bytes, 0, 2);
	tcase_add_test(tc, test_gen_checkpoint_recompute);
	tcase_add_test(tc, test_gen_balanced);
	tcase_add_test(tc, test_gen_llama_params);
	tcase_add_loop_test(tc, test_gen_weights_quantized, 0, 2);
	tcase_add_test(tc, test_gen_generate_cache);
	tcase_add_test(tc, test_gen_infer_tiny_peak);
	tcase_add_test(tc, test_gen_infer_vs_recording);
	tcase_add_loop_test(tc, test_gen_accum, 0, 2);
	tcase_add_test(tc, test_gen_checkpoint_cache);
	tcase_add_test(tc, test_strategy_registry);
	suite_add_tcase(s, tc);
	tc = tcase_create("random");
	tcase_add_test(tc, test_random_deterministic);
	tcase_add_test(tc, test_random_requests_counted);
	tcase_add_test(tc, test_random_classes);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	gsl_set_error_handler_off();
	SRunner *sr = srunner_create(gen_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
