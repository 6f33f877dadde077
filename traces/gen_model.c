/*
 * The model-shaped generator (gen_model.h).  Transformers are driven by
 * tensor scripts (gen_model_scripts.c), interpreted against scopes of
 * named tensors, one scope a layer and phase (gen_model_script.c,
 * gen_model_tf.c); ResNet-50 is modelled op by op in C
 * (gen_model_resnet.c).  The parts common to every model are here: the parameters (allocated first, in module order),
 * zero_grad(set_to_none) freeing gradients in parameter order, AdamW and
 * SGD-with-momentum steps as torch.optim's foreach implementation runs
 * them (state created at the first step; AdamW's one list of temporaries,
 * freed in reverse), GradScaler's small tensors, and checkpoint schedules
 * (segments of layers whose activations are dropped after the forward and
 * recomputed in backward, counted in layer-forwards).
 *
 * Cost: linear in the requests generated; a budget schedule costs one dry
 * one-step run per candidate (layers^2 candidates at most).
 */
#include <config.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "traces/gen_model_int.h"

void
mg_fail(mg_t *m, int code, const char *fmt, ...)
{
	if (m->err)
		return;
	m->err = code;
	va_list ap;
	va_start(ap, fmt);
	if (m->why && m->whylen)
		vsnprintf(m->why, m->whylen, fmt, ap);
	va_end(ap);
}

int64_t
mg_alloc(mg_t *m, uint64_t bytes)
{
	if (bytes == 0)
		bytes = 1;
	int64_t id = msim_gen_alloc(m->g, bytes, 0);
	if (id < 0)
		mg_fail(m, MSIM_ENOMEM, "out of host memory");
	return id;
}

void
mg_free(mg_t *m, int64_t *id)
{
	if (*id >= 0)
		msim_gen_free(m->g, (uint32_t)*id);
	*id = -1;
}

/* ---- parameters, zero_grad, optimizers -------------------------------- */

void
mg_param(mg_t *m, uint64_t elems)
{
	if (m->np < m->maxparam)
		m->psize[m->np++] = elems * m->p;
}

void
mg_zero_grad(mg_t *m)
{
	for (unsigned i = 0; i < m->np; i++)
		mg_free(m, &m->grad[i]);
}

void
mg_optimizer(mg_t *m, uint64_t step)
{
	const msim_model_cfg_t *c = m->cfg;
	if (c->dtype == MSIM_DT_FP16_AMP && step < c->scaler_skips)
		return; /* inf/NaN found: GradScaler skips optimizer.step() */
	if (c->optimizer == MSIM_OPT_SGD) {
		/* _multi_tensor_sgd: momentum_buffer = clone(grad) the first
		 * time, then in-place foreach ops: no temporaries. */
		if (!m->opt_state) {
			for (unsigned i = 0; i < m->np; i++)
				m->state[2 * i] = mg_alloc(m, m->psize[i]);
			m->opt_state = true;
		}
		return;
	}
	/* _multi_tensor_adamw: exp_avg, exp_avg_sq = zeros at the first
	 * step, param by param; then exp_avg_sq_sqrt = _foreach_sqrt(...),
	 * divided and added to in place, freed after addcdiv_. */
	if (!m->opt_state) {
		for (unsigned i = 0; i < m->np; i++) {
			m->state[2 * i] = mg_alloc(m, m->psize[i]);
			m->state[2 * i + 1] = mg_alloc(m, m->psize[i]);
		}
		m->opt_state = true;
	}
	int64_t *tmp = malloc(m->np * sizeof(*tmp));
	if (!tmp) {
		mg_fail(m, MSIM_ENOMEM, "out of host memory");
		return;
	}
	for (unsigned i = 0; i < m->np; i++)
		tmp[i] = mg_alloc(m, m->psize[i]);
	for (unsigned i = m->np; i-- > 0;)
		mg_free(m, &tmp[i]);
	free(tmp);
}

/* GradScaler: scale(loss) (the scale and growth tracker are created the
 * first time), unscale_ (found_inf, inv_scale), update. */
int64_t
mg_scaler_scale(mg_t *m)
{
	if (m->cfg->dtype != MSIM_DT_FP16_AMP)
		return -1;
	if (m->scaler[0] < 0) {
		m->scaler[0] = mg_alloc(m, 4);
		m->scaler[1] = mg_alloc(m, 4);
	}
	return mg_alloc(m, 4);
}

void
mg_scaler_step(mg_t *m, bool before)
{
	if (m->cfg->dtype != MSIM_DT_FP16_AMP)
		return;
	if (before) {
		m->inv_scale = mg_alloc(m, 4);
		m->found_inf = mg_alloc(m, 4);
	} else {
		mg_free(m, &m->inv_scale);
		mg_free(m, &m->found_inf);
	}
}

/* ---- driver ------------------------------------------------------------- */

uint64_t
msim_model_ffn(const msim_model_cfg_t *c)
{
	if (c->ffn)
		return c->ffn;
	if (c->arch == MSIM_ARCH_LLAMA) /* 8/3 x hidden, to 256 (11008) */
		return (8 * c->hidden / 3 + 255) / 256 * 256;
	return 4 * c->hidden;
}

void
msim_model_defaults(msim_model_cfg_t *cfg, int arch)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->arch = arch;
	cfg->batch = 8;
	cfg->seq[0] = 1024;
	cfg->nseq = 1;
	cfg->steps = 1;
	cfg->image = 224;
	cfg->scaler_skips = 3;
	switch (arch) {
	case MSIM_ARCH_LLAMA:
		cfg->layers = 32, cfg->hidden = 4096, cfg->heads = 32;
		cfg->vocab = 32000;
		cfg->positions = 4096;
		break;
	case MSIM_ARCH_BERT:
		cfg->layers = 12, cfg->hidden = 768, cfg->heads = 12;
		cfg->vocab = 30522, cfg->positions = 512;
		cfg->seq[0] = 512;
		cfg->inference = true;
		break;
	default:
		cfg->layers = 12, cfg->hidden = 768, cfg->heads = 12;
		cfg->vocab = 50257, cfg->positions = 1024;
		break;
	}
}

int
msim_model_check(const msim_model_cfg_t *c, char *why, size_t whylen)
{
#define BAD(...) do { snprintf(why, whylen, __VA_ARGS__); \
		return MSIM_EINVAL; } while (0)
	if (c->arch < 0 || c->arch > MSIM_ARCH_RESNET50)
		BAD("--arch: unknown architecture");
	if (!c->batch)
		BAD("--batch: must be at least 1");
	if (!c->steps)
		BAD("--steps: must be at least 1");
	if (c->arch == MSIM_ARCH_RESNET50) {
		if (c->image < 32 || c->image > 4096)
			BAD("--image: must be in [32, 4096]");
		if (c->inference)
			BAD("--inference: not modelled for resnet50");
		if (c->weights != MSIM_W_NATIVE || c->generate)
			BAD("--weights, --generate: not modelled for "
			    "resnet50");
		return 0;
	}
	if (!c->layers || c->layers > 1000)
		BAD("--layers: must be in [1, 1000]");
	if (!c->hidden || !c->heads || c->hidden % c->heads)
		BAD("--hidden: must be a multiple of --heads");
	if (c->kv_heads && c->heads % c->kv_heads)
		BAD("--kv-heads: must divide --heads");
	if (!c->vocab)
		BAD("--vocab: must be at least 1");
	if (!c->nseq)
		BAD("--seq: at least one length");
	for (size_t i = 0; i < c->nseq; i++)
		if (!c->seq[i] || c->seq[i] > c->positions)
			BAD("--seq: %llu is not in [1, --positions=%llu]",
			    (unsigned long long)c->seq[i],
			    (unsigned long long)c->positions);
	if (c->arch == MSIM_ARCH_BERT && !c->inference)
		BAD("--arch bert: only --inference is modelled");
	if (c->inference && c->dtype != MSIM_DT_FP32 &&
	    c->dtype != MSIM_DT_BF16)
		BAD("--dtype: inference is modelled in fp32 and bf16 (the "
		    "model's own dtype)");
	if (c->arch == MSIM_ARCH_LLAMA && !c->inference &&
	    c->dtype != MSIM_DT_FP32 && c->dtype != MSIM_DT_BF16)
		BAD("--dtype: llama training is modelled in fp32 and bf16");
	if (c->generate && (!c->inference || c->arch == MSIM_ARCH_BERT))
		BAD("--generate: needs --inference and a decoder (gpt2, "
		    "llama)");
	if (c->generate && c->no_cache)
		BAD("--generate: decoding without a KV cache is not "
		    "modelled");
	for (size_t i = 0; c->generate && i < c->nseq; i++)
		if (c->seq[i] + c->generate > c->positions)
			BAD("--generate: %llu tokens after a prompt of %llu "
			    "pass --positions=%llu",
			    (unsigned long long)c->generate,
			    (unsigned long long)c->seq[i],
			    (unsigned long long)c->positions);
	if (c->weights != MSIM_W_NATIVE &&
	    (!c->inference || c->arch == MSIM_ARCH_BERT))
		BAD("--weights: weight-only quantization is modelled for "
		    "decoder inference (--inference)");
	if (c->accum && c->inference)
		BAD("--accum: gradient accumulation needs training");
	if (c->arch == MSIM_ARCH_LLAMA && c->heads && (c->hidden / c->heads) % 2)
		BAD("--heads: llama's head dim (hidden/heads) must be even "
		    "(rotary embeddings)");
	if (c->arch == MSIM_ARCH_BERT && c->dtype != MSIM_DT_FP32 &&
	    c->dtype != MSIM_DT_BF16)
		BAD("--dtype: bert inference is modelled in fp32 and bf16");
	if (c->ckpt.kind == MSIM_CKPT_EVERY && !c->ckpt.k)
		BAD("--checkpoint: every:K needs K >= 1");
	return 0;
#undef BAD
}

/* Generates c into g; params_only: lays the parameters out and counts
 * their elements into *count, allocating nothing. */
static int
mg_generate_x(const msim_model_cfg_t *c, msim_gen_t *g, const uint32_t *seg,
	      bool params_only, uint64_t *count, char *why, size_t whylen)
{
	mg_t m = {0};
	m.g = g;
	m.cfg = c;
	m.why = why;
	m.whylen = whylen;
	m.seg = seg;
	m.B = c->batch;
	m.H = c->hidden;
	m.N = c->heads;
	m.F = msim_model_ffn(c);
	m.V = c->vocab;
	m.P = c->positions;
	uint64_t kv = c->kv_heads ? c->kv_heads : c->heads;
	m.Q = c->heads ? m.H + 2 * kv * (m.H / c->heads) : 0;
	m.KV = kv;
	m.D = c->heads ? m.H / c->heads : 0;
	bool amp = c->dtype == MSIM_DT_BF16_AMP || c->dtype == MSIM_DT_FP16_AMP;
	m.p = c->dtype == MSIM_DT_BF16 ? 2 : 4;
	m.a = (amp || c->dtype == MSIM_DT_BF16) ? 2 : 4;
	m.quant = c->weights != MSIM_W_NATIVE;
	m.params_only = params_only;
	if (params_only) /* elements, not bytes */
		m.p = 1, m.quant = false;
	m.batch_id = -1;
	m.scaler[0] = m.scaler[1] = -1;
	m.found_inf = m.inv_scale = -1;
	/* a block has at most 16 parameters (32 entries with quantized
	 * weights' scales); ResNet-50 161 */
	m.maxparam = 256 + 32 * (unsigned)(c->layers < 1000 ? c->layers : 1000);
	m.psize = calloc(m.maxparam, sizeof(*m.psize));
	m.grad = malloc(m.maxparam * sizeof(*m.grad));
	m.state = malloc(2 * (size_t)m.maxparam * sizeof(*m.state));
	if (!m.psize || !m.grad || !m.state) {
		mg_fail(&m, MSIM_ENOMEM, "out of host memory");
		goto out;
	}
	for (unsigned i = 0; i < m.maxparam; i++)
		m.grad[i] = m.state[2 * i] = m.state[2 * i + 1] = -1;
	if (c->arch == MSIM_ARCH_RESNET50) {
		mg_resnet50(&m);
	} else {
		bool llama = c->arch == MSIM_ARCH_LLAMA;
		m.ts = c->arch == MSIM_ARCH_BERT ? &msim_bert_infer
		       : c->inference ? (llama ? &msim_llama_infer
					       : &msim_gpt2_infer)
		       : llama ? &msim_llama_train
		       : amp ? &msim_gpt2_amp : &msim_gpt2_fp32;
		mg_transformer(&m);
	}
	if (count) {
		*count = 0;
		for (unsigned i = 0; i < m.np; i++)
			*count += m.psize[i];
	}
	if (!m.err && g->failed)
		mg_fail(&m, MSIM_ENOMEM, "out of host memory (or a tensor "
			"freed twice: a generator bug)");
out:
	free(m.psize);
	free(m.grad);
	free(m.state);
	return m.err;
}

static int
mg_generate(const msim_model_cfg_t *c, msim_gen_t *g, const uint32_t *seg,
	    char *why, size_t whylen)
{
	return mg_generate_x(c, g, seg, false, NULL, why, whylen);
}

uint64_t
msim_model_params(const msim_model_cfg_t *c)
{
	msim_gen_t g;
	uint64_t n = 0;
	char why[64];
	msim_gen_init(&g, true);
	if (mg_generate_x(c, &g, NULL, true, &n, why, sizeof(why)))
		n = 0;
	msim_gen_clear(&g);
	return n;
}

static void
mg_uniform(uint32_t *seg, uint64_t L, uint64_t from, uint64_t k)
{
	memset(seg, 0, L * sizeof(*seg));
	for (uint64_t i = from; i < L && k; i += k)
		seg[i] = (uint32_t)(i + k <= L ? k : L - i);
}

int
msim_model_schedule(const msim_model_cfg_t *c, uint32_t *seg, char *why,
		    size_t whylen)
{
	uint64_t L = c->layers;
	memset(seg, 0, L * sizeof(*seg));
	switch (c->ckpt.kind) {
	case MSIM_CKPT_NONE:
		return 0;
	case MSIM_CKPT_EVERY:
		mg_uniform(seg, L, 0, c->ckpt.k);
		return 0;
	case MSIM_CKPT_SQRT:
		mg_uniform(seg, L, 0, (uint64_t)ceil(sqrt((double)L)));
		return 0;
	default:
		break;
	}
	/* BUDGET: the first m layers checkpointed in segments of k, the
	 * last L - m stored (backward reaches them first); the least
	 * recomputation (m) whose one-step peak fits, then the lowest peak. */
	msim_model_cfg_t one = *c;
	one.steps = c->steps < 2 ? c->steps : 2; /* with optimizer state */
	uint32_t *cand = malloc(L * sizeof(*cand));
	if (!cand)
		return MSIM_ENOMEM;
	uint64_t best_m = UINT64_MAX, best_peak = UINT64_MAX, lowest = UINT64_MAX;
	for (uint64_t mm = 0; mm <= L; mm++) {
		for (uint64_t k = mm ? 1 : 0; k <= (mm ? mm : 0); k++) {
			if (mm)
				mg_uniform(cand, mm, 0, k);
			for (uint64_t i = mm; i < L; i++)
				cand[i] = 0;
			msim_gen_t g;
			msim_gen_init(&g, !c->ckpt.measure);
			int rc = mg_generate(&one, &g, mm ? cand : NULL, why,
					     whylen);
			uint64_t pk = g.peak;
			if (!rc && c->ckpt.measure &&
			    (rc = c->ckpt.measure(c->ckpt.measure_ctx, &g,
						  &pk)))
				snprintf(why, whylen, "--checkpoint: budget: "
					 "%s", msim_strerror(rc));
			msim_gen_clear(&g);
			if (rc) {
				free(cand);
				return rc;
			}
			if (pk < lowest)
				lowest = pk;
			if (pk <= c->ckpt.budget &&
			    (mm < best_m || (mm == best_m && pk < best_peak))) {
				best_m = mm;
				best_peak = pk;
				memcpy(seg, cand, L * sizeof(*seg));
			}
			if (!mm)
				break;
		}
		if (best_m != UINT64_MAX)
			break; /* recomputation only grows with mm */
	}
	free(cand);
	if (best_m == UINT64_MAX && lowest == UINT64_MAX) {
		snprintf(why, whylen, "--checkpoint: budget %llu bytes: "
			 "every schedule runs out of memory under the cap",
			 (unsigned long long)c->ckpt.budget);
		return MSIM_EINVAL;
	}
	if (best_m == UINT64_MAX) {
		snprintf(why, whylen, "--checkpoint: budget %llu bytes is "
			 "below the lowest reachable peak %llu",
			 (unsigned long long)c->ckpt.budget,
			 (unsigned long long)lowest);
		return MSIM_EINVAL;
	}
	return 0;
}

int
msim_model_generate(const msim_model_cfg_t *c, msim_gen_t *g, char *why,
		    size_t whylen)
{
	int rc = msim_model_check(c, why, whylen);
	if (rc)
		return rc;
	uint32_t *seg = NULL;
	if (c->ckpt.kind != MSIM_CKPT_NONE && c->arch != MSIM_ARCH_RESNET50 &&
	    !c->inference) {
		seg = calloc(c->layers, sizeof(*seg));
		if (!seg)
			return MSIM_ENOMEM;
		rc = msim_model_schedule(c, seg, why, whylen);
	}
	if (!rc)
		rc = mg_generate(c, g, seg, why, whylen);
	free(seg);
	return rc;
}

const char *
msim_arch_name(int arch)
{
	static const char *const n[] = {"gpt2", "llama", "bert", "resnet50"};
	return arch >= 0 && arch <= MSIM_ARCH_RESNET50 ? n[arch] : "?";
}

static const char *const dtype_names[] = {"fp32", "bf16-amp", "fp16-amp",
					  "bf16"};
static const char *const weights_names[] = {"native", "int8", "fp8"};

const char *
msim_weights_name(int w)
{
	return w >= 0 && w <= MSIM_W_FP8 ? weights_names[w] : "?";
}

int
msim_weights_parse(const char *s)
{
	for (int i = 0; i <= MSIM_W_FP8; i++)
		if (!strcmp(s, weights_names[i]))
			return i;
	return -1;
}

const char *
msim_dtype_name(int dtype)
{
	return dtype >= 0 && dtype <= MSIM_DT_BF16 ? dtype_names[dtype] : "?";
}

int
msim_dtype_parse(const char *s)
{
	for (int i = 0; i <= MSIM_DT_BF16; i++)
		if (!strcmp(s, dtype_names[i]))
			return i;
	return -1;
}

int
msim_ckpt_parse(const char *s, msim_ckpt_t *out)
{
	memset(out, 0, sizeof(*out));
	char *end;
	if (!strcmp(s, "none"))
		return 0;
	if (!strcmp(s, "sqrt")) {
		out->kind = MSIM_CKPT_SQRT;
		return 0;
	}
	if (!strncmp(s, "every:", 6)) {
		unsigned long long k = strtoull(s + 6, &end, 10);
		if (end == s + 6 || *end || !k)
			return MSIM_EINVAL;
		out->kind = MSIM_CKPT_EVERY;
		out->k = k;
		return 0;
	}
	if (!strncmp(s, "budget:", 7)) {
		double v = strtod(s + 7, &end);
		double mult = 1;
		if (!strcmp(end, "GiB") || !strcmp(end, "G"))
			mult = 1073741824.0;
		else if (!strcmp(end, "MiB") || !strcmp(end, "M"))
			mult = 1048576.0;
		else if (!strcmp(end, "GB"))
			mult = 1e9;
		else if (*end)
			return MSIM_EINVAL;
		if (end == s + 7 || !(v > 0))
			return MSIM_EINVAL;
		out->kind = MSIM_CKPT_BUDGET;
		out->budget = (uint64_t)(v * mult);
		return 0;
	}
	return MSIM_EINVAL;
}
