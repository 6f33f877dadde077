/*
 * The strategy registry (strategy.h): dtype and checkpoint, each with one
 * TEXT parameter "value" whose check() is the command line's own parser,
 * so a grid value is accepted exactly when `memsim gen model` accepts it.
 */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "sim/error.h"
#include "traces/strategy.h"

static int
dtype_check(const char *text, char *why, size_t whylen)
{
	if (msim_dtype_parse(text) >= 0)
		return 0;
	snprintf(why, whylen, "'%s' is not fp32, bf16-amp, fp16-amp or bf16",
		 text);
	return MSIM_EINVAL;
}

static int
ckpt_check(const char *text, char *why, size_t whylen)
{
	msim_ckpt_t c;
	if (!msim_ckpt_parse(text, &c))
		return 0;
	snprintf(why, whylen, "'%s' is not none, every:K, sqrt or "
		 "budget:BYTES", text);
	return MSIM_EINVAL;
}

static const msim_param_spec_t dtype_params[] = {
	{"value", MSIM_PT_TEXT, "fp32", 0, 0, 0,
	 "fp32 | bf16-amp | fp16-amp (autocast, fp32 master weights, "
	 "GradScaler) | bf16 (pure)", dtype_check},
	{NULL, 0, NULL, 0, 0, 0, NULL, NULL},
};

static const msim_param_spec_t ckpt_params[] = {
	{"value", MSIM_PT_TEXT, "none", 0, 0, 0,
	 "none | every:K | sqrt | budget:BYTES (least recompute that fits)",
	 ckpt_check},
	{NULL, 0, NULL, 0, 0, 0, NULL, NULL},
};

static int
dtype_apply(const msim_params_t *pv, msim_model_cfg_t *cfg, char *why,
	    size_t whylen)
{
	const char *t = pv->v[0].set ? pv->v[0].text : pv->spec[0].def;
	if (dtype_check(t, why, whylen))
		return MSIM_EINVAL;
	cfg->dtype = msim_dtype_parse(t);
	return 0;
}

static int
ckpt_apply(const msim_params_t *pv, msim_model_cfg_t *cfg, char *why,
	   size_t whylen)
{
	const char *t = pv->v[0].set ? pv->v[0].text : pv->spec[0].def;
	if (ckpt_check(t, why, whylen))
		return MSIM_EINVAL;
	return msim_ckpt_parse(t, &cfg->ckpt);
}

static const msim_strategy_t strategy_dtype = {
	.name = "dtype",
	.summary = "AMP dtype sizing of parameters, activations, gradients "
		   "and optimizer state",
	.params = dtype_params,
	.apply = dtype_apply,
};

static const msim_strategy_t strategy_checkpoint = {
	.name = "checkpoint",
	.summary = "activation checkpoint schedule; recompute reported in "
		   "layer-forwards",
	.params = ckpt_params,
	.apply = ckpt_apply,
};

static const msim_strategy_t *const registry[] = {
	&strategy_dtype, &strategy_checkpoint, NULL,
};

const msim_strategy_t *const *
msim_strategy_list(void)
{
	return registry;
}

const msim_strategy_t *
msim_strategy_find(const char *name)
{
	for (const msim_strategy_t *const *s = registry; *s; s++)
		if (!strcmp((*s)->name, name))
			return *s;
	return NULL;
}

int
msim_strategy_set(msim_model_cfg_t *cfg, const char *name, const char *value,
		  char *why, size_t whylen)
{
	const msim_strategy_t *s = msim_strategy_find(name);
	if (!s) {
		snprintf(why, whylen, "%s: unknown strategy (dtype, "
			 "checkpoint)", name);
		return MSIM_EINVAL;
	}
	msim_params_t pv;
	if (msim_params_init(&pv, s->params))
		return MSIM_ENOMEM;
	char reason[320] = "";
	int rc = msim_params_set(&pv, "value", value);
	if (rc)
		snprintf(reason, sizeof(reason), "%s", pv.errmsg);
	else
		rc = s->apply(&pv, cfg, reason, sizeof(reason));
	if (rc)
		snprintf(why, whylen, "%s: %s", name, reason);
	msim_params_clear(&pv);
	return rc;
}

size_t
msim_strategy_canonical(const msim_model_cfg_t *cfg, char *buf, size_t n)
{
	char ck[48];
	switch (cfg->ckpt.kind) {
	case MSIM_CKPT_EVERY:
		snprintf(ck, sizeof(ck), "every:%llu",
			 (unsigned long long)cfg->ckpt.k);
		break;
	case MSIM_CKPT_SQRT:
		snprintf(ck, sizeof(ck), "sqrt");
		break;
	case MSIM_CKPT_BUDGET:
		snprintf(ck, sizeof(ck), "budget:%llu",
			 (unsigned long long)cfg->ckpt.budget);
		break;
	default:
		snprintf(ck, sizeof(ck), "none");
		break;
	}
	int len = snprintf(buf, n, "dtype=%s,checkpoint=%s",
			   msim_dtype_name(cfg->dtype), ck);
	return len < 0 ? 0 : (size_t)len;
}
