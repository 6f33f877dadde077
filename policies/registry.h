/*
 * The registry: every policy memsim knows, by name.  The policies
 * themselves implement the contract of sim/policy.h; callers that pick a
 * policy by name (the command line, sweeps, stored runs) look it up here.
 */
#ifndef MSIM_POLICIES_REGISTRY_H
#define MSIM_POLICIES_REGISTRY_H

#include "sim/policy.h"

/*
 * The policy of a run that names none (`memsim run`, sweeps, explain,
 * bench, the C library), written once: PyTorch's caching allocator
 * (policies/pytorch.c).  MSIM_POLICY_PYTORCH names that policy where code
 * asks whether a run is PyTorch's (explain's alternatives, bench's minimal
 * path), whatever the default.
 */
#define MSIM_POLICY_DEFAULT "pytorch"
#define MSIM_POLICY_PYTORCH MSIM_POLICY_DEFAULT

/* NULL-terminated list of every registered policy, in the order
 * `memsim policies` lists them. */
const msim_policy_ops_t *const *msim_policy_list(void);

/* The policy called name, or NULL. */
const msim_policy_ops_t *msim_policy_find(const char *name);

#endif
