/*
 * `memsim gen`: a synthetic trace generated and written as the
 * device-trace CSV that `memsim run` reads, to a file (made whole or not
 * at all, sim/file.h) or to stdout ("-").  The generators are
 * traces/gen_model.h's and traces/gen_random.h's; g keeps their counts
 * (requests, peak, recompute) for the caller to report.
 */
#ifndef MSIM_LAB_GENERATE_H
#define MSIM_LAB_GENERATE_H

#include <stdbool.h>
#include <stddef.h>

#include "traces/gen.h"
#include "traces/gen_model.h"
#include "traces/gen_random.h"

/* Generates the model's trace into g (msim_gen_init()ed), then writes it
 * to out.  Returns 0, or an error with why filled; *out_err says whether
 * it was the output's. */
int msim_generate_model(const msim_model_cfg_t *cfg, msim_gen_t *g,
			const char *out, bool *out_err, char *why,
			size_t whylen);

/* Draws the random trace into out as it goes (memory follows the live
 * allocations, not the requests).  Returns as msim_generate_model(). */
int msim_generate_random(const msim_random_cfg_t *cfg, msim_gen_t *g,
			 const char *out, bool *out_err, char *why,
			 size_t whylen);

#endif
