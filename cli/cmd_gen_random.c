/* memsim gen random: the statistical generator's command line. */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/error.h"
#include "traces/gen_random.h"

static double
rnd_pos(const char *opt, const char *text)
{
	char *end;
	double v = strtod(text, &end);
	if (end == text || *end || !(v > 0))
		msim_cli_die("%s: '%s' is not a positive number", opt, text);
	return v;
}

int
msim_cmd_gen_random(int argc, char **argv)
{
	static const struct option lo[] = {
		{"seed", required_argument, NULL, 'S'},
		{"requests", required_argument, NULL, 'n'},
		{"streams", required_argument, NULL, 's'},
		{"sizes", required_argument, NULL, 'z'},
		{"lifetime", required_argument, NULL, 'l'},
		{"arrival", required_argument, NULL, 'r'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	msim_random_cfg_t cfg;
	msim_random_defaults(&cfg);
	const char *out = NULL;
	char why[256] = "";
	int c;
	optind = 1;
	while ((c = msim_cli_getopt(argc, argv, "o:h", lo)) != -1) {
		char *end;
		switch (c) {
		case 'S':
			cfg.seed = strtoull(optarg, &end, 10);
			if (end == optarg || *end)
				msim_cli_die("--seed: '%s' is not a whole "
					     "number", optarg);
			break;
		case 'n':
			cfg.requests = (uint64_t)rnd_pos("--requests", optarg);
			break;
		case 's':
			cfg.streams = (uint64_t)rnd_pos("--streams", optarg);
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
		case 'h':
			printf("usage: memsim gen random [--seed N] "
			       "[--requests N] [--streams N] [--sizes SPEC] "
			       "[--lifetime US] [--arrival US] -o FILE\n\n"
			       "  --seed N       GSL mt19937 seed (default 1)\n"
			       "  --requests N   requests to write, allocations "
			       "and frees (default 10000;\n"
			       "                 an odd N leaves the last "
			       "allocation live)\n"
			       "  --streams N    streams, chosen uniformly "
			       "(default 1)\n"
			       "  --sizes SPEC   lognormal:MU:SIGMA (default "
			       "lognormal:14:2.5) or\n"
			       "                 classes:SIZE@W/SIZE@W...\n"
			       "  --lifetime US  mean lifetime, exponential "
			       "(default 200)\n"
			       "  --arrival US   mean gap between allocations, "
			       "Poisson (default 10)\n"
			       "  -o FILE        the CSV trace to write (- for "
			       "stdout)\n");
			return 0;
		default:
			return 2;
		}
	}
	if (!out)
		msim_cli_die("-o: an output file is required");
	msim_gen_t g;
	msim_gen_init(&g, false);
	int rc = msim_random_generate(&cfg, &g, why, sizeof(why));
	if (rc)
		msim_cli_die("%s", why);
	FILE *fp = strcmp(out, "-") ? fopen(out, "w") : stdout;
	if (!fp)
		msim_cli_die("-o: cannot open '%s' for writing", out);
	rc = msim_gen_write_csv(&g, fp);
	if (fp != stdout && fclose(fp))
		rc = MSIM_EIO;
	if (rc)
		msim_cli_die("-o: writing '%s' failed", out);
	fprintf(stderr, "memsim gen: %zu requests, peak allocated %" PRIu64
		" bytes, seed %" PRIu64 "\n", g.n, g.peak, cfg.seed);
	msim_gen_clear(&g);
	return 0;
}
