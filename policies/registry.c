/* Every policy memsim knows, in the order `memsim policies` lists them. */
#include <config.h>

#include <stddef.h>
#include <string.h>

#include "policies/registry.h"

/*
 * Every policy, one line each, in the order `memsim policies` lists them:
 * X(name) stands for the ops table msim_policy_<name>, the only non-static
 * symbol of policies/<name>.c.  Adding a policy is adding its line here
 * (docs/changing.md).
 */
#define MSIM_POLICIES(X)						\
	X(pytorch)							\
	X(naive)							\
	X(bfc)								\
	X(cuda_async)							\
	X(pool)								\
	X(arena)							\
	X(binning)							\
	X(buddy)							\
	X(cupy)								\
	/* a policy a line, each ending in a backslash */

#define POLICY_EXTERN(name) extern const msim_policy_ops_t msim_policy_##name;
MSIM_POLICIES(POLICY_EXTERN)
#undef POLICY_EXTERN

static const msim_policy_ops_t *const registry[] = {
#define POLICY_ENTRY(name) &msim_policy_##name,
	MSIM_POLICIES(POLICY_ENTRY)
#undef POLICY_ENTRY
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
