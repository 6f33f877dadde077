/*
 * memsim devices: the GPUs --device NAME and --capacity NAME take (the
 * table of sim/gpu.c), with the bytes cudaMemGetInfo() reports, the bytes
 * of CUDA context and libraries a PyTorch process takes, and where each
 * figure comes from; --json for scripts (the recorder's --fake devices,
 * traces/memsim_record/devices.json, are this output).
 */
#include <config.h>

#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/opts.h"

static const msim_cli_opt_t devices_opts[] = {
	{'j', false, "json", NULL, "one JSON object: the cards and the MIG "
	 "profiles"},
	{'m', false, "mig", NULL, "list the MIG profiles too"},
	MSIM_CLI_OPT_HELP,
	{0},
};

static const msim_cli_cmd_t devices_cmd = {
	"usage: memsim devices [--json] [--mig]\n"
	"\n"
	"The GPUs that --device NAME (run, explain, summary, compare, sweep, "
	"tune, fit,\n"
	"record) and --capacity NAME take: the bytes cudaMemGetInfo() reports "
	"as total,\n"
	"the bytes a PyTorch process holds outside its allocator (CUDA context "
	"and\n"
	"libraries), and where each figure comes from: measured (a file of "
	"tests/data),\n"
	"reported (public deviceQuery or PyTorch output), spec (the data "
	"sheet's size, an\n"
	"upper bound) or assumed (the H200's measurement).  With --mig, also "
	"the MIG\n"
	"profiles (GPU:PROFILE, sized as NVIDIA's MIG guide names them).\n"
	"\n"
	"options:\n",
	devices_opts, 12, NULL, false,
};

int
msim_cmd_devices(int argc, char **argv)
{
	bool json = false, mig = false;
	int c;
	optind = 1;
	while ((c = msim_cli_next(&devices_cmd, argc, argv)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'm': mig = true; break;
		}
	}
	msim_cli_operands(&devices_cmd, argc, 0, 0);
	msim_print_devices(json, mig);
	return 0;
}
