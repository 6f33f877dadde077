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
