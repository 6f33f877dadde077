/*
 * The statistical generator: allocations whose sizes follow a log-normal
 * law or a discrete mixture of size classes, whose arrivals are a Poisson
 * process and whose lifetimes are exponential, spread over streams.  GSL's
 * generators draw everything from one explicitly seeded gsl_rng (mt19937),
 * so a seed gives the same trace on every machine.
 */
#ifndef MSIM_TRACES_GEN_RANDOM_H
#define MSIM_TRACES_GEN_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "traces/gen.h"

#define MSIM_RANDOM_MAXCLASS 32

typedef struct msim_random_cfg_s {
	uint64_t seed;       /* gsl_rng_mt19937 seed */
	uint64_t requests;   /* allocations + frees to write; odd: one live */
	uint64_t streams;    /* streams, uniformly chosen (1 = default) */
	int sizes;           /* 0 log-normal, 1 size classes */
	double mu, sigma;    /* log-normal: bytes = exp(N(mu, sigma)) */
	uint64_t class_size[MSIM_RANDOM_MAXCLASS];  /* bytes */
	double class_weight[MSIM_RANDOM_MAXCLASS];  /* relative */
	size_t nclass;
	double lifetime_us;  /* mean lifetime (exponential) */
	double arrival_us;   /* mean gap between allocations */
	uint64_t max_bytes;  /* cap on one size (0: 64 GiB) */
} msim_random_cfg_t;

/* Defaults: seed 1, 10000 requests (5000 allocations), 1 stream, log-normal(14, 2.5),
 * lifetime 200 us, arrivals every 10 us. */
void msim_random_defaults(msim_random_cfg_t *cfg);

/* Parses "lognormal:MU:SIGMA" or "classes:SIZE@W/SIZE@W/...".
 * Returns 0 or MSIM_EINVAL with why. */
int msim_random_parse_sizes(msim_random_cfg_t *cfg, const char *spec,
			    char *why, size_t whylen);

/* Generates into g.  Returns 0, MSIM_EINVAL (why) or MSIM_ENOMEM. */
int msim_random_generate(const msim_random_cfg_t *cfg, msim_gen_t *g,
			 char *why, size_t whylen);

#endif
