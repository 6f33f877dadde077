/*
 * memsim devices: the GPUs --device NAME and --capacity NAME take (the
 * table of sim/gpu.c), with the bytes cudaMemGetInfo() reports, the bytes
 * of CUDA context and libraries a PyTorch process takes, and where each
 * figure comes from; --json for scripts (the recorder's --fake devices,
 * traces/memsim_record/devices.json, are this output).
 */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "sim/gpu.h"
#include "sim/units.h"

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

static void
devices_json(void)
{
	size_t n;
	const msim_gpu_model_t *m = msim_gpu_models(&n);
	printf("{\n  \"devices\": [");
	for (size_t i = 0; i < n; i++) {
		printf("%s\n    {\"name\": \"%s\", \"label\": ", i ? "," : "",
		       m[i].name);
		msim_cli_json_str(stdout, m[i].label);
		printf(", \"total_bytes\": %" PRIu64 ", \"total_source\": ",
		       m[i].total);
		msim_cli_json_str(stdout, m[i].total_src);
		printf(",\n     \"context_bytes\": %" PRIu64
		       ", \"context_source\": ", m[i].context);
		msim_cli_json_str(stdout, m[i].context_src);
		printf(",\n     \"major\": %d, \"minor\": %d, \"sms\": %d, "
		       "\"l2_bytes\": %" PRIu64 "}", m[i].major, m[i].minor,
		       m[i].sms, m[i].l2);
	}
	printf("\n  ],\n  \"mig\": [");
	const char *gpu, *profile;
	uint64_t bytes;
	for (size_t i = 0; (gpu = msim_gpu_mig_gpu(i, &profile, &bytes)); i++)
		printf("%s\n    {\"name\": \"%s:%s\", \"total_bytes\": %" PRIu64
		       "}", i ? "," : "", gpu, profile, bytes);
	printf("\n  ]\n}\n");
}

static void
devices_table(bool mig)
{
	size_t n;
	char a[32], b[32];
	const msim_gpu_model_t *m = msim_gpu_models(&n);
	printf("%-10s %-24s %25s %10s  %s\n", "name", "torch name",
	       "total (cudaMemGetInfo)", "context", "sources (total; context)");
	for (size_t i = 0; i < n; i++)
		printf("%-10s %-24s %14" PRIu64 " %-10s %10s  %.*s; %.*s\n",
		       m[i].name, m[i].label, m[i].total,
		       msim_format_bytes(m[i].total, a, sizeof(a)),
		       msim_format_bytes(m[i].context, b, sizeof(b)),
		       (int)strcspn(m[i].total_src, ":"), m[i].total_src,
		       (int)strcspn(m[i].context_src, ":"),
		       m[i].context_src);
	printf("\nmeasured: tests/data/explain/h200/context.txt; reported: "
	       "public deviceQuery or PyTorch\noutput; spec: the data sheet's "
	       "size (N GB as N GiB), an upper bound; assumed:\nthe H200's "
	       "context.  --capacity BYTES and --context-bytes B override "
	       "them.\n");
	if (!mig) {
		printf("MIG profiles (GPU:PROFILE): memsim devices --mig\n");
		return;
	}
	printf("\nMIG profile       bytes\n");
	const char *gpu, *profile;
	uint64_t bytes;
	for (size_t i = 0; (gpu = msim_gpu_mig_gpu(i, &profile, &bytes));
	     i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s:%s", gpu, profile);
		printf("%-17s %" PRIu64 "\n", name, bytes);
	}
}

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
	if (json)
		devices_json();
	else
		devices_table(mig);
	return 0;
}
