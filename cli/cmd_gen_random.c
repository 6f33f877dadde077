/* memsim gen random: the statistical generator's command line. */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "lab/generate.h"

static double
rnd_pos(const char *opt, const char *text)
{
	char *end;
	double v = strtod(text, &end);
	if (end == text || *end || !(v > 0))
		msim_cli_die("%s: '%s' is not a positive number", opt, text);
	return v;
}

/* The options are listed in the usage text. */
static const msim_cli_opt_t random_opts[] = {
	{'S', false, "seed", "N", NULL},
	{'n', false, "requests", "N", NULL},
	{'s', false, "streams", "N", NULL},
	{'z', false, "sizes", "SPEC", NULL},
	{'l', false, "lifetime", "US", NULL},
	{'r', false, "arrival", "US", NULL},
	{'o', true, "output", "FILE", NULL},
	{'h', true, "help", NULL, NULL},
	{0},
};

static const msim_cli_cmd_t random_cmd = {
	"usage: memsim gen random [--seed N] [--requests N] [--streams N] "
	"[--sizes SPEC] [--lifetime US] [--arrival US] -o FILE\n\n"
	"  --seed N       GSL mt19937 seed (default 1)\n"
	"  --requests N   requests to write, allocations and frees (default "
	"10000;\n"
	"                 an odd N leaves the last allocation live)\n"
	"  --streams N    streams, chosen uniformly (default 1)\n"
	"  --sizes SPEC   lognormal:MU:SIGMA (default lognormal:14:2.5) or\n"
	"                 classes:SIZE@W/SIZE@W...\n"
	"  --lifetime US  mean lifetime, exponential (default 200)\n"
	"  --arrival US   mean gap between allocations, Poisson (default 10)\n"
	"  -o FILE        the CSV trace to write (- for stdout)\n",
	random_opts, 0, NULL, false,
};

int
msim_cmd_gen_random(int argc, char **argv)
{
	msim_random_cfg_t cfg;
	msim_random_defaults(&cfg);
	const char *out = NULL;
	char why[256] = "";
	int c;
	optind = 1;
	while ((c = msim_cli_next(&random_cmd, argc, argv)) != -1) {
		switch (c) {
		case 'S':
			cfg.seed = msim_cli_uint("--seed", optarg, 0,
						 UINT64_MAX);
			break;
		case 'n':
			cfg.requests = msim_cli_uint("--requests", optarg, 1,
						     UINT64_C(1) << 40);
			break;
		case 's':
			cfg.streams = msim_cli_uint("--streams", optarg, 1,
						    1024);
			break;
		case 'z':
			if (msim_random_parse_sizes(&cfg, optarg, why,
						    sizeof(why)))
				msim_cli_die("%s", why);
			break;
		case 'l':
			cfg.lifetime_us = rnd_pos("--lifetime", optarg);
			break;
		case 'r':
			cfg.arrival_us = rnd_pos("--arrival", optarg);
			break;
		case 'o':
			out = optarg;
			break;
		}
	}
	if (!out)
		msim_cli_die("-o: an output file is required");
	msim_cli_output("-o", out);
	msim_gen_t g;
	msim_gen_init(&g, false);
	bool out_err;
	if (msim_generate_random(&cfg, &g, out, &out_err, why, sizeof(why)))
		msim_cli_die("%s%s", out_err ? "-o: " : "", why);
	fprintf(stderr, "memsim gen: %zu requests, peak allocated %" PRIu64
		" bytes, seed %" PRIu64 "\n", g.n, g.peak, cfg.seed);
	msim_gen_clear(&g);
	return 0;
}
