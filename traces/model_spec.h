/*
 * Model specs: a generated workload named where a trace file would be, so
 * that `memsim run` and `memsim sweep` take a model as their input
 * ("model:arch=gpt2,layers=12,batch=8,seq=1024,steps=3").  The keys are
 * the options of `memsim gen model` without their dashes (kv-heads may be
 * spelled kv_heads); the strategies (dtype, checkpoint) are keys like the
 * others.  A spec is parsed into a msim_model_cfg_t, and has a canonical
 * text of the model's shape (every key, strategies left out) that names
 * and identifies the generated trace in the results database.
 */
#ifndef MSIM_TRACES_MODEL_SPEC_H
#define MSIM_TRACES_MODEL_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "traces/gen_model.h"

#define MSIM_MODEL_SPEC_PREFIX "model:"

/* Whether text is a model spec (starts with "model:"). */
bool msim_model_spec_is(const char *text);

/* Whether key is a key of the model's shape (layers, batch, seq, ...), the
 * strategies excluded. */
bool msim_model_key_is(const char *key);

/*
 * Sets one key of cfg: a shape key or a strategy.  "seq" takes lengths
 * separated by '/' (or by ',' inside brackets: [512,1024]).  Returns 0, or
 * MSIM_EINVAL with why naming the key and the reason.
 */
int msim_model_set(msim_model_cfg_t *cfg, const char *key, const char *value,
		   char *why, size_t whylen);

/*
 * Parses "model:arch=A,key=value,..." into cfg (the arch's defaults, then
 * the keys in order) and checks it (msim_model_check()).  arch is
 * required.  Returns 0, or MSIM_EINVAL with why naming the key.
 */
int msim_model_spec_parse(const char *text, msim_model_cfg_t *cfg, char *why,
			  size_t whylen);

/*
 * The canonical spec of cfg's shape, strategies left out, every key in a
 * fixed order: "model:arch=gpt2,layers=12,...,steps=3".  Returns the
 * length it needed (snprintf-like).
 */
size_t msim_model_spec_canonical(const msim_model_cfg_t *cfg, char *buf,
				 size_t n);

/*
 * Splits s in place at the commas outside brackets ("a=1,b=[2,3]") into
 * parts, each trimmed of blanks; returns their number, or -1 if there are
 * more than max or a bracket is left open.
 */
int msim_split_commas(char *s, char **parts, int max);

#endif
