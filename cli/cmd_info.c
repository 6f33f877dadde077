/*
 * memsim info: what a trace holds, read once (streaming), and for a
 * snapshot the allocator state it was taken in (its segments), checked
 * against the end state of its own trace.  The reading and the printing
 * are lab/info.c's; here are the options.
 */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "lab/info.h"

static const msim_cli_opt_t info_opts[] = {
	{'D', false, "device", "N",
	 "snapshots: the device_traces index to read"},
	{'X', false, "strict", NULL,
	 "refuse a partial history instead of seeding its start"},
	{'N', false, "lenient", NULL,
	 "skip entries of unknown actions (and count them)"},
	{'j', false, "json", NULL, "print one JSON object"},
	MSIM_CLI_OPT_HELP,
	{0},
};

static const msim_cli_cmd_t info_cmd = {
	"usage: memsim info [OPTIONS] TRACE\n"
	"\n"
	"Reads TRACE once and prints its format, entries by action, requests, "
	"streams,\n"
	"duration, peak live bytes (the sum of the sizes of live allocations), "
	"a\n"
	"histogram of allocation sizes (powers of two) and the hidden "
	"empty_cache()\n"
	"calls found (pytorch-allocator.md §11.2).  For a snapshot, also its\n"
	"segments state (§10.1): segments by pool, reserved, allocated, active "
	"and\n"
	"requested bytes, blocks by state, and whether the trace's end state "
	"agrees.\n"
	"\n"
	"options:\n",
	info_opts, 26, NULL, false,
};

int
msim_cmd_info(int argc, char **argv)
{
	msim_trace_options_t opt = {.hidden_empty_cache = true};
	int json = 0, c;
	while ((c = msim_cli_next(&info_cmd, argc, argv)) != -1) {
		switch (c) {
		case 'D': opt.device1 = msim_cli_device1(optarg); break;
		case 'j': json = 1; break;
		case 'X': opt.strict = true; break;
		case 'N': opt.lenient = true; break;
		}
	}
	msim_cli_operands(&info_cmd, argc, 1, 1);
	const char *path = argv[optind];
	char why[1024];
	msim_info_t in;
	if (msim_info_run(path, &opt, &in, why, sizeof(why)))
		msim_cli_die("%s", why);
	if (json && msim_info_json(path, &in))
		msim_cli_die("out of memory");
	else if (!json)
		msim_info_print(path, &in);
	msim_info_clear(&in);
	return 0;
}
