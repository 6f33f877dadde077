/* Every policy memsim knows, in the order `memsim policies` lists them. */
#include <config.h>

#include <stddef.h>
#include <string.h>

#include "policies/registry.h"

extern const msim_policy_ops_t msim_policy_pytorch;
extern const msim_policy_ops_t msim_policy_naive;
extern const msim_policy_ops_t msim_policy_bfc;
extern const msim_policy_ops_t msim_policy_cuda_async;
extern const msim_policy_ops_t msim_policy_pool;
extern const msim_policy_ops_t msim_policy_arena;
extern const msim_policy_ops_t msim_policy_binning;
extern const msim_policy_ops_t msim_policy_buddy;
extern const msim_policy_ops_t msim_policy_cupy;

static const msim_policy_ops_t *const registry[] = {
	&msim_policy_pytorch,
	&msim_policy_naive,
	&msim_policy_bfc,
	&msim_policy_cuda_async,
	&msim_policy_pool,
	&msim_policy_arena,
	&msim_policy_binning,
	&msim_policy_buddy,
	&msim_policy_cupy,
	NULL,
};

const msim_policy_ops_t *const *
msim_policy_list(void)
{
	return registry;
}

const msim_policy_ops_t *
msim_policy_find(const char *name)
{
	for (const msim_policy_ops_t *const *p = registry; *p; p++)
		if (!strcmp((*p)->name, name))
			return *p;
	return NULL;
}
