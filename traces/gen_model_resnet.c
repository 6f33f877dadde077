/*
 * ResNet-50 in the model generator, op by op: conv, batch norm, in-place
 * ReLU and residual add, with the autocast weight casts and cuDNN
 * workspaces (gen_model_int.h).
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "traces/gen_model_int.h"

/* ---- ResNet-50 ----------------------------------------------------------- */

typedef struct rn_conv_s {
	uint64_t cin, cout, k, stride, hin, hout;
	int64_t wcast, in_saved, out, bnout, mean, invstd;
	bool own_input; /* the conv's cast input belongs to it */
} rn_conv_t;

typedef struct rn_block_s {
	rn_conv_t c[4]; /* conv1..3, downsample */
	bool ds;
	int64_t in;  /* block input (saved by conv1 and as identity) */
	int64_t out; /* block output (bn3 out after += and relu) */
} rn_block_t;

/* cuDNN's workspace of a convolution, as chosen on an H200 (fitted). */
static uint64_t
rn_conv_ws(const rn_conv_t *c, uint64_t outbytes)
{
	if (c->k == 7)
		return outbytes + outbytes / 4;
	if (c->k == 3)
		return c->stride == 1 ? 2 * outbytes : 5 * outbytes;
	if (c->stride == 2)
		return 3 * outbytes;
	return 0;
}

static void
rn_conv_fwd(mg_t *m, rn_conv_t *c, int64_t in)
{
	uint64_t a = m->a, B = m->B;
	bool amp = m->cfg->dtype == MSIM_DT_BF16_AMP ||
		   m->cfg->dtype == MSIM_DT_FP16_AMP;
	c->wcast = amp ? mg_alloc(m, c->cout * c->cin * c->k * c->k * 2) : -1;
	c->in_saved = in;
	uint64_t ob = B * c->cout * c->hout * c->hout * a;
	c->out = mg_alloc(m, ob);
	uint64_t ws = rn_conv_ws(c, ob);
	if (ws) {
		int64_t w = mg_alloc(m, ws);
		mg_free(m, &w);
	}
	c->bnout = mg_alloc(m, ob);
	c->mean = mg_alloc(m, c->cout * 4);
	c->invstd = mg_alloc(m, c->cout * 4);
}

/* AccumulateGrad: the first gradient of a step becomes .grad; later
 * micro-batches add theirs in place and let it go. */
static void
rn_accumulate(mg_t *m, unsigned idx, int64_t g)
{
	if (m->micro && m->grad[idx] >= 0) {
		mg_free(m, &g);
		return;
	}
	mg_free(m, &m->grad[idx]);
	m->grad[idx] = g;
}

static void
rn_grad(mg_t *m, unsigned idx, uint64_t bytes_lowp)
{
	bool amp = m->cfg->dtype == MSIM_DT_BF16_AMP ||
		   m->cfg->dtype == MSIM_DT_FP16_AMP;
	int64_t lp = amp ? mg_alloc(m, bytes_lowp) : -1;
	int64_t g = mg_alloc(m, m->psize[idx]);
	mg_free(m, &lp);
	rn_accumulate(m, idx, g);
}

/* bn + conv backward of c; dy is the gradient at the bn output (freed).
 * Returns the gradient at the conv input (or -1 for the stem). */
static int64_t
rn_conv_bwd(mg_t *m, rn_conv_t *c, int64_t dy, unsigned pidx, bool stem)
{
	uint64_t a = m->a, B = m->B;
	uint64_t ob = B * c->cout * c->hout * c->hout * a;
	int64_t dbn = mg_alloc(m, ob);
	rn_accumulate(m, pidx + 1, mg_alloc(m, m->psize[pidx + 1]));
	rn_accumulate(m, pidx + 2, mg_alloc(m, m->psize[pidx + 2]));
	mg_free(m, &dy);
	mg_free(m, &c->out);
	mg_free(m, &c->mean);
	mg_free(m, &c->invstd);
	int64_t dx = -1;
	if (!stem)
		dx = mg_alloc(m, B * c->cin * c->hin * c->hin * a);
	uint64_t ws = rn_conv_ws(c, ob);
	if (ws) {
		int64_t w = mg_alloc(m, ws);
		mg_free(m, &w);
	}
	if (ws) { /* the weight-gradient kernel has its own */
		int64_t w = mg_alloc(m, ws);
		mg_free(m, &w);
	}
	rn_grad(m, pidx, c->cout * c->cin * c->k * c->k * 2);
	mg_free(m, &dbn);
	mg_free(m, &c->wcast);
	if (c->own_input)
		mg_free(m, &c->in_saved);
	return dx;
}

void
mg_resnet50(mg_t *m)
{
	const msim_model_cfg_t *c = m->cfg;
	static const unsigned depth[4] = {3, 4, 6, 3};
	uint64_t S = c->image, B = m->B, a = m->a;
	bool amp = c->dtype == MSIM_DT_BF16_AMP || c->dtype == MSIM_DT_FP16_AMP;
	rn_block_t blk[16];
	rn_conv_t stem = {.cin = 3, .cout = 64, .k = 7, .stride = 2, .hin = S,
			  .hout = (S + 1) / 2, .own_input = true};
	unsigned nb = 0;
	uint64_t h = (stem.hout + 1) / 2, cin = 64;
	/* parameters: conv weight, bn weight, bn bias (+ running stats,
	 * which are buffers: allocated but not optimised) */
	mg_param(m, 64 * 3 * 49);
	mg_param(m, 64);
	mg_param(m, 64);
	for (unsigned s = 0; s < 4; s++) {
		uint64_t w = 64u << s, cout = 4 * w;
		for (unsigned b = 0; b < depth[s]; b++) {
			rn_block_t *k = &blk[nb++];
			memset(k, 0, sizeof(*k));
			uint64_t st = (s > 0 && b == 0) ? 2 : 1;
			uint64_t ho = st == 2 ? h / 2 : h;
			k->c[0] = (rn_conv_t){cin, w, 1, 1, h, h, -1, -1, -1,
					      -1, -1, -1, false};
			k->c[1] = (rn_conv_t){w, w, 3, st, h, ho, -1, -1, -1,
					      -1, -1, -1, true};
			k->c[2] = (rn_conv_t){w, cout, 1, 1, ho, ho, -1, -1,
					      -1, -1, -1, -1, true};
			k->ds = b == 0;
			if (k->ds)
				k->c[3] = (rn_conv_t){cin, cout, 1, st, h, ho,
						      -1, -1, -1, -1, -1, -1,
						      false};
			for (unsigned q = 0; q < (k->ds ? 4u : 3u); q++) {
				mg_param(m, k->c[q].cout * k->c[q].cin *
						    k->c[q].k * k->c[q].k);
				mg_param(m, k->c[q].cout);
				mg_param(m, k->c[q].cout);
			}
			cin = cout;
			h = ho;
		}
	}
	mg_param(m, 1000 * 2048);
	mg_param(m, 1000);
	if (m->params_only)
		return;
	for (unsigned i = 0; i < m->np; i++) {
		mg_alloc(m, m->psize[i]);
		if (i + 2 < m->np && i % 3 == 2) {
			/* bn buffers: running_mean, running_var,
			 * num_batches_tracked (fp32 even under bf16) */
			mg_alloc(m, m->psize[i] / m->p * 4);
			mg_alloc(m, m->psize[i] / m->p * 4);
			mg_alloc(m, 8);
		}
	}
	uint64_t K = c->accum ? c->accum : 1;
	for (uint64_t it = 0; it < c->steps * K && !m->err; it++) {
		uint64_t step = it / K;
		m->micro = it % K; /* gradient accumulation's micro-batch */
		int64_t x = mg_alloc(m, B * 3 * S * S * 4);
		int64_t y = mg_alloc(m, B * 8);
		if (!m->micro)
			mg_zero_grad(m);
		/* forward */
		int64_t xin = amp ? mg_alloc(m, B * 3 * S * S * 2) : x;
		rn_conv_fwd(m, &stem, xin);
		if (!amp)
			stem.own_input = false;
		uint64_t hp = (stem.hout + 1) / 2;
		int64_t pool = mg_alloc(m, B * 64 * hp * hp * a);
		int64_t idx = mg_alloc(m, B * 64 * hp * hp * 8);
		int64_t cur = pool;
		for (unsigned i = 0; i < nb; i++) {
			rn_block_t *k = &blk[i];
			k->in = cur;
			rn_conv_fwd(m, &k->c[0], cur);
			rn_conv_fwd(m, &k->c[1], k->c[0].bnout);
			rn_conv_fwd(m, &k->c[2], k->c[1].bnout);
			if (k->ds) {
				rn_conv_fwd(m, &k->c[3], cur);
				mg_free(m, &k->c[3].bnout); /* after += */
			}
			k->out = k->c[2].bnout;
			cur = k->out;
		}
		int64_t avg = mg_alloc(m, B * 2048 * a);
		int64_t fcw = amp ? mg_alloc(m, 1000 * 2048 * 2) : -1;
		int64_t fcb = amp ? mg_alloc(m, 1000 * 2) : -1;
		int64_t logits = mg_alloc(m, B * 1000 * a);
		mg_workspace(m, false, false);
		int64_t lf = amp ? mg_alloc(m, B * 1000 * 4) : -1;
		int64_t lsm = mg_alloc(m, B * 1000 * 4);
		int64_t loss = mg_alloc(m, 4);
		int64_t tw = mg_alloc(m, 4);
		mg_free(m, &lf);
		mg_free(m, &logits);
		mg_free(m, &fcb); /* autocast exit */
		int64_t scaled = mg_scaler_scale(m);
		/* backward */
		int64_t seed = mg_alloc(m, 4);
		int64_t g1 = mg_alloc(m, B * 1000 * 4);
		mg_free(m, &tw);
		int64_t g2 = mg_alloc(m, B * 1000 * 4);
		mg_free(m, &g1);
		mg_free(m, &lsm);
		int64_t g3 = amp ? mg_alloc(m, B * 1000 * 2) : -1;
		if (g3 >= 0)
			mg_free(m, &g2);
		else
			g3 = g2;
		unsigned pi = m->np - 2;
		mg_workspace(m, true, false);
		int64_t dav = mg_alloc(m, B * 2048 * a);
		rn_grad(m, pi, 1000 * 2048 * 2);
		rn_grad(m, pi + 1, 1000 * 2);
		mg_free(m, &g3);
		mg_free(m, &avg);
		mg_free(m, &fcw);
		uint64_t hl = blk[nb - 1].c[2].hout;
		int64_t dy = mg_alloc(m, B * 2048 * hl * hl * a);
		mg_free(m, &dav);
		for (unsigned i = nb; i-- > 0;) {
			rn_block_t *k = &blk[i];
			pi -= k->ds ? 12 : 9;
			/* relu backward (threshold on the saved output) */
			int64_t dr = mg_alloc(m, B * k->c[2].cout *
							 k->c[2].hout *
							 k->c[2].hout * a);
			mg_free(m, &dy);
			mg_free(m, &k->out);
			int64_t did = -1;
			if (k->ds) {
				int64_t dcopy = dr;
				did = rn_conv_bwd(m, &k->c[3], -1, pi + 9,
						  false);
				(void)dcopy;
			}
			int64_t d = rn_conv_bwd(m, &k->c[2], dr, pi + 6, false);
			int64_t dr2 = mg_alloc(m, B * k->c[1].cout *
							  k->c[1].hout *
							  k->c[1].hout * a);
			mg_free(m, &d);
			d = rn_conv_bwd(m, &k->c[1], dr2, pi + 3, false);
			int64_t dr1 = mg_alloc(m, B * k->c[0].cout *
							  k->c[0].hout *
							  k->c[0].hout * a);
			mg_free(m, &d);
			d = rn_conv_bwd(m, &k->c[0], dr1, pi, false);
			/* the identity path's gradient is added in place */
			mg_free(m, &did);
			if (i == 0) /* later inputs are the blocks' outputs */
				mg_free(m, &k->in);
			dy = d;
		}
		/* maxpool and stem */
		int64_t dp = mg_alloc(m, B * 64 * stem.hout * stem.hout * a);
		mg_free(m, &dy);
		mg_free(m, &idx);
		int64_t dr0 = mg_alloc(m, B * 64 * stem.hout * stem.hout * a);
		mg_free(m, &dp);
		mg_free(m, &stem.bnout);
		rn_conv_bwd(m, &stem, dr0, 0, true);
		mg_free(m, &seed);
		mg_free(m, &scaled);
		if (m->micro + 1 == K) {
			mg_scaler_step(m, true);
			mg_optimizer(m, step);
			mg_scaler_step(m, false);
		}
		mg_free(m, &x);
		mg_free(m, &y);
		mg_free(m, &loss);
	}
}
