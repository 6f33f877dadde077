/*
 * A libFuzzer target for option text: the input as --alloc-conf for every
 * policy (msim_params_parse(), then creating the policy, which checks that
 * parameters agree), and as a model spec (msim_model_spec_parse() and its
 * canonical form).  A clean error is the expected outcome for most inputs.
 */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/common.h"
#include "policies/registry.h"
#include "sim/device.h"
#include "sim/policy.h"
#include "traces/model_spec.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	char why[512];
	for (const msim_policy_ops_t *const *p = msim_policy_list(); *p; p++) {
		msim_params_t pv;
		if (msim_params_init(&pv, (*p)->params))
			abort();
		if (msim_params_parse(&pv, text) == 0) {
			msim_device_t *dev = msim_device_new(NULL);
			msim_policy_t *pol;
			if (!dev)
				abort();
			if (msim_policy_new(*p, dev, &pv, &pol, why,
					    sizeof(why)) == 0) {
				msim_stats_t st;
				msim_policy_stats(pol, &st);
				msim_policy_destroy(pol);
			}
			msim_device_destroy(dev);
		}
		msim_params_clear(&pv);
	}
	msim_model_cfg_t cfg;
	if (msim_model_spec_parse(text, &cfg, why, sizeof(why)) == 0) {
		char canon[1024];
		msim_model_spec_canonical(&cfg, canon, sizeof(canon));
	}
	free(text);
	return 0;
}
