/*
 * Strategies: transforms of the model that generates the requests (AMP
 * dtype sizing, checkpoint schedules), described like policies: a name, a
 * summary and a table of msim_param_spec_t, so that `memsim policies`, the
 * sweeps (`--grid checkpoint=none,every:2,sqrt --grid dtype=fp32,bf16-amp`)
 * and the canonical parameter string stored with a run come from one
 * table.  msim_strategy_apply() sets a generator configuration from parsed
 * values.
 */
#ifndef MSIM_TRACES_STRATEGY_H
#define MSIM_TRACES_STRATEGY_H

#include <stddef.h>

#include "sim/params.h"
#include "traces/gen_model.h"

typedef struct msim_strategy_s {
	const char *name;                /* [a-z0-9_]; the grid key */
	const char *summary;             /* one line */
	const msim_param_spec_t *params; /* its values (one TEXT "value") */
	/* Sets cfg from pv (parsed against params).  Returns 0 or
	 * MSIM_EINVAL with why. */
	int (*apply)(const msim_params_t *pv, msim_model_cfg_t *cfg,
		     char *why, size_t whylen);
} msim_strategy_t;

/* The registered strategies, NULL-terminated. */
const msim_strategy_t *const *msim_strategy_list(void);

/* The strategy called name, or NULL. */
const msim_strategy_t *msim_strategy_find(const char *name);

/*
 * Applies "name=value" (or name:value) to cfg: the sweep's entry point.
 * Returns 0, or MSIM_EINVAL with why naming the strategy and the reason.
 */
int msim_strategy_set(msim_model_cfg_t *cfg, const char *name,
		      const char *value, char *why, size_t whylen);

/*
 * The strategies of cfg as stored with a run: every strategy in registry
 * order, "dtype=bf16-amp,checkpoint=every:2".  Returns the length it
 * needed (snprintf-like).
 */
size_t msim_strategy_canonical(const msim_model_cfg_t *cfg, char *buf,
			       size_t n);

#endif
