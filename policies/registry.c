/* Every policy memsim knows, in the order `memsim policies` lists them. */
#include <config.h>

#include <stddef.h>

#include "policies/policy.h"

extern const msim_policy_ops_t msim_policy_pytorch;

static const msim_policy_ops_t *const registry[] = {
	&msim_policy_pytorch,
	NULL,
};

const msim_policy_ops_t *const *
msim_policy_list(void)
{
	return registry;
}
