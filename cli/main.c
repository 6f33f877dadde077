/*
 * memsim: the command line's dispatcher.  One binary, subcommands parsed
 * with getopt_long, each in its own cli/cmd_<name>.c.  Errors are one line
 * on stderr, "memsim: <what>: <why>", and a non-zero status; an OOM of the
 * simulated device is a result, not an error.
 */
#define _GNU_SOURCE /* dladdr() */
#include <config.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "lib/memsim.h"
#include "policies/registry.h"
#include "cli/cli.h"
#include "sim/suggest.h"
#include "traces/strategy.h"

/* A policy's or strategy's name, summary and parameters. */
static void
print_params(const char *name, const char *summary,
	     const msim_param_spec_t *params)
{
	printf("%s: %s\n", name, summary);
	for (const msim_param_spec_t *s = params; s && s->name; s++)
		printf("  %-36s default %-8s %s\n", s->name, s->def, s->help);
}

static void
print_policies(void)
{
	for (const msim_policy_ops_t *const *p = msim_policy_list(); *p; p++)
		print_params((*p)->name, (*p)->summary, (*p)->params);
	printf("\nstrategies (memsim gen model; sweep keys):\n");
	for (const msim_strategy_t *const *p = msim_strategy_list(); *p; p++)
		print_params((*p)->name, (*p)->summary, (*p)->params);
}

static void
usage_policies(FILE *fp)
{
	fprintf(fp, "usage: memsim policies [-h|--help]\n\n"
		"Lists every policy with a one-line summary and its parameters "
		"(name, default,\nmeaning): the keys --alloc-conf and sweep "
		"grids take.  Then the strategies of\nmemsim gen model (dtype, "
		"checkpoint), which sweeps take as keys too.\n\n"
		"options:\n"
		"  -h, --help              this help\n");
}

static int
cmd_policies(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") ||
			 !strcmp(argv[1], "-h"))) {
		usage_policies(stdout);
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "memsim policies: unexpected argument '%s' "
			"(it takes none; see --help)\n", argv[1]);
		return 2;
	}
	print_policies();
	return 0;
}

/* Every subcommand, in the order `memsim --help` lists them.  To add one:
 * write cli/cmd_<name>.c, declare it in cli/cli.h, add a line here. */
static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"run", msim_cmd_run, "replay a trace through a policy; print, store "
	 "and plot the figures"},
	{"compare", msim_cmd_compare, "replay a trace through several policies; "
	 "one table, one plot"},
	{"sweep", msim_cmd_sweep, "run many settings over traces and "
	 "policies into one database"},
	{"merge", msim_cmd_merge, "combine databases (sweep shards) without "
	 "duplicates"},
	{"report", msim_cmd_report, "the runs of a database as a table, "
	 "JSON or CSV"},
	{"plot", msim_cmd_plot, "figures from a database through gnuplot"},
	{"tune", msim_cmd_tune, "recommend the PYTORCH_CUDA_ALLOC_CONF with "
	 "the lowest peak under a cap"},
	{"gen", msim_cmd_gen, "write a synthetic trace (model-shaped or "
	 "statistical)"},
	{"policies", cmd_policies, "list the policies and their parameters"},
	{"bench", msim_cmd_bench, "measure the simulator's speed "
	 "(requests/s, peak memory)"},
	{"validate", msim_cmd_validate, "replay a trace on a real GPU; "
	 "measured figures beside simulated"},
	{"convert", msim_cmd_convert, "convert a trace between formats"},
	{"explain", msim_cmd_explain, "where the memory goes at peak reserved "
	 "and at an OOM, with what would avoid it"},
	{"summary", msim_cmd_summary, "torch.cuda.memory_summary() of a "
	 "replay"},
	{"info", msim_cmd_info, "summarize a trace (requests, sizes, peak)"},
	{"record", msim_cmd_record, "record a PyTorch script's allocations "
	 "(fake tensors, no GPU; or a real run)"},
	{"fit", msim_cmd_fit, "the largest batch (or any setting) of a "
	 "script that fits under a cap"},
	{"devices", msim_cmd_devices, "the GPUs --device takes: memory, "
	 "context, sources"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void
usage_main(FILE *fp)
{
	fprintf(fp, "usage: memsim COMMAND [OPTIONS]\n\n"
		"Simulates GPU memory allocators on allocation traces.\n\n"
		"commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(fp, "  %-10s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(fp, "\n`memsim COMMAND --help` (or `memsim help COMMAND`) shows "
		"a command's options;\n`memsim --version` the version.\n");
}

/* The recorder (traces/memsim_record/live.py) models the caching
 * allocator beside a recording with this program's libmemsim
 * (memsim_live_open()): $MEMSIM_LIBRARY names it for the recordings
 * memsim starts, unless the environment names one already. */
static void
library_env(void)
{
	Dl_info info;
	char path[PATH_MAX];
	if (getenv("MEMSIM_LIBRARY") ||
	    !dladdr((void *)(uintptr_t)memsim_live_open, &info) ||
	    !info.dli_fname || !realpath(info.dli_fname, path) ||
	    !strstr(path, "libmemsim"))
		return;
	setenv("MEMSIM_LIBRARY", path, 0);
}

int
main(int argc, char **argv)
{
	gsl_set_error_handler_off();
	library_env();
	if (argc < 2) {
		usage_main(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		/* The shared library's, as a user of memsim.h sees it. */
		printf("memsim %s\n", memsim_version());
		return 0;
	}
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") ||
	    (!strcmp(cmd, "help") && argc < 3)) {
		usage_main(stdout);
		return 0;
	}
	char help[] = "--help";
	if (!strcmp(cmd, "help")) { /* memsim help X = memsim X --help */
		cmd = argv[2];
		argv[2] = help;
		argc = 3;
	}
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(cmd, commands[i].name))
			continue;
		char name[64];
		snprintf(name, sizeof(name), "memsim %s", cmd);
		argv[1] = name;
		return commands[i].fn(argc - 1, argv + 1);
	}
	const char *names[NCOMMANDS + 1];
	for (size_t i = 0; i < NCOMMANDS; i++)
		names[i] = commands[i].name;
	names[NCOMMANDS] = "help";
	const char *near = msim_suggest(cmd, names, NCOMMANDS + 1);
	if (near)
		fprintf(stderr, "memsim: unknown command '%s' (did you mean "
			"%s?)\n", cmd, near);
	else
		fprintf(stderr, "memsim: unknown command '%s' (`memsim --help` "
			"lists them)\n", cmd);
	return 2;
}
