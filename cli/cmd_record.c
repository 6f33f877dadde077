/*
 * memsim record: runs a PyTorch script under the Python recorder
 * (traces/memsim_record, installed in $(pythondir)) and writes the trace.
 * OUT is checked before the script runs and replaced only by a whole
 * trace (lab/recproc.h).
 * The launch itself is lab/record.c's, shared with `memsim fit` and
 * `memsim sweep -- COMMAND`.
 */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "lab/record.h"
#include "sim/gpu.h"

enum { O_FAKE = 256, O_GPU, O_DEVICE, O_WS, O_RANK, O_AMP, O_CKPT, O_FRAC,
       O_ITEM, O_ITEMB, O_REPEATS, O_VALUES, O_IMB, O_SYM, O_PY,
       O_TIMEOUT, O_OOM };

static const msim_cli_opt_t record_opts[] = {
	{'o', true, "output", "OUT", "the trace to write (required)"},
	{O_FAKE, false, "fake", NULL, NULL},
	{O_GPU, false, "gpu", NULL, NULL},
	{0, false, NULL, NULL, "      --fake | --gpu        fake tensors "
	 "(default) or a real run\n"},
	{O_DEVICE, false, "device", "NAME",
	 "the GPU torch.cuda reports under --fake: h200\n"
	 "(default), a10g, rtx4090, ... (memsim devices)"},
	{O_WS, false, "world-size", "N",
	 "one rank of an N-GPU job (fake process group)"},
	{O_RANK, false, "rank", "R", "which rank (default 0)"},
	{O_AMP, false, "amp", "bf16|fp16", "autocast around the model's forward"},
	{O_CKPT, false, "checkpoint", "S",
	 "none, every:K or sqrt: checkpoint the repeated blocks"},
	{O_FRAC, false, "dynamic-fraction", "F",
	 "share of elements nonzero, masked_select, unique\n"
	 "(MoE routing) select (default 0.5)"},
	{O_ITEM, false, "item-int", "N",
	 "what an integer .item() returns (default 1)"},
	{O_ITEMB, false, "item-bool", "true|false",
	 "what a bool .item() of unknown value returns\n(default false)"},
	{O_REPEATS, false, "item-repeats", "N",
	 "stop when one line asks for an unknown .item()\n"
	 "more than N times (default 100000)"},
	{O_VALUES, false, "values", "rules|cpu",
	 "GPU values: rules (default) or computed on the CPU\n"
	 "(docs/recording-values.md)"},
	{O_IMB, false, "routing-imbalance", "F",
	 "top-k routing: expert 0 gets F x its uniform\nshare (default 1)"},
	{O_OOM, false, "oom", NULL,
	 "raise torch.OutOfMemoryError where the caching\n"
	 "allocator runs out of --device's memory\n"
	 "(auto_find_batch_size)"},
	{O_SYM, false, "symbolic", "NAME=V[:MAX]",
	 "the script runs with setting NAME at V; sizes V\n"
	 "become a symbol and OUT a symbolic trace, valid\n"
	 "for a range of NAME up to MAX (default 4096)\n"
	 "(docs/symbolic-sizes.md; exit 3: refused)"},
	{O_PY, false, "python", "PY",
	 "the interpreter (default $MEMSIM_PYTHON or python3)"},
	{O_TIMEOUT, false, "timeout", "SECONDS",
	 "stop a recording that runs longer (no trace)"},
	MSIM_CLI_OPT_HELP,
	{0},
};

static const msim_cli_cmd_t record_cmd = {
	"usage: memsim record -o OUT [OPTIONS] -- python3 SCRIPT [ARGS...]\n"
	"       memsim record -o OUT [OPTIONS] -- python3 -m MODULE [ARGS...]\n"
	"       memsim record -o OUT [OPTIONS] -- torchrun --nproc-per-node N "
	"SCRIPT ...\n"
	"       memsim record -o OUT [OPTIONS] -- accelerate launch "
	"[ITS OPTIONS] SCRIPT ...\n"
	"\n"
	"Runs SCRIPT, unmodified, and writes its GPU allocations to OUT as a "
	"CSV trace\n"
	"(seq,time_us,action,addr,size,stream,category,site) for `memsim run`."
	"  With\n"
	"--fake (the default) the script runs on PyTorch's fake tensors: no "
	"GPU, no\n"
	"CUDA driver and no compute; CUDA queries are answered for --device, "
	"kernels'\n"
	"own workspaces are added by rule, and data-dependent values get "
	"stated\n"
	"assumptions (counted as `annotate` rows; see README.md).  With --gpu "
	"it runs\n"
	"for real with the allocator's history on.  Either way each call of\n"
	"torch.cuda.empty_cache() is an `empty_cache` row, which the replay "
	"runs.\n"
	"Needs Python 3 and PyTorch.  The interpreter's -u, -X and -W are "
	"passed on;\n"
	"under torchrun or a multi-GPU accelerate launch one rank (--rank, "
	"default 0)\n"
	"of its world is recorded.  OUT is written only when the script ends "
	"well;\n"
	"stopping memsim stops the script and all it started.\n"
	"\n"
	"options:\n",
	record_opts, 28, NULL, true,
};

int
msim_cmd_record(int argc, char **argv)
{
	const char *out = NULL;
	/* two words an option at most: never more than argc */
	char **ropt = calloc((size_t)argc * 2 + 1, sizeof(*ropt));
	int nropt = 0;
	unsigned timeout_s = 0;
	int c;
	if (!ropt)
		msim_cli_die("record: out of memory");
	optind = 1;
	while ((c = msim_cli_next(&record_cmd, argc, argv)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case O_FAKE:
			ropt[nropt++] = "--fake";
			break;
		case O_GPU:
			ropt[nropt++] = "--gpu";
			break;
		case O_OOM:
			ropt[nropt++] = "--oom";
			break;
		case O_PY:
			setenv("MEMSIM_PYTHON", optarg, 1);
			break;
		case O_TIMEOUT:
			timeout_s = (unsigned)msim_cli_uint("--timeout", optarg,
							    1, 1u << 30);
			break;
		case O_DEVICE:
			if (!msim_gpu_model_find(optarg)) {
				/* one line with the name meant */
				uint64_t b;
				char why[1024];
				if (msim_gpu_named(optarg, &b, NULL, why,
						   sizeof(why)) == 0)
					msim_cli_die("--device: '%s' is a MIG "
						     "profile; record takes a "
						     "card (memsim devices)",
						     optarg);
				msim_cli_die("--device: %s", why);
			}
			/* fall through */
		case O_WS: case O_RANK: case O_AMP: case O_CKPT:
		case O_FRAC: case O_ITEM: case O_ITEMB: case O_REPEATS:
		case O_VALUES: case O_IMB: case O_SYM: {
			static const char *const flag[] = {
				"--device", "--world-size", "--rank", "--amp",
				"--checkpoint", "--dynamic-fraction",
				"--item-int", "--item-bool", "--item-repeats",
				"--values", "--routing-imbalance",
				"--symbolic"};
			ropt[nropt++] = (char *)flag[c - O_DEVICE];
			ropt[nropt++] = optarg;
			break;
		}
		}
	}
	if (!out) {
		/* one line, with the form, not the whole help */
		fprintf(stderr, "memsim: record: -o OUT is required (memsim "
			"record -o trace.csv -- python3 train.py ...; memsim "
			"record --help)\n");
		free(ropt);
		return 2;
	}
	msim_record_opts_t ro = {.dirs = msim_cli_record_dirs(),
				 .timeout_s = timeout_s};
	char why[4400];
	int rc = msim_record_exec(&ro, out, ropt, nropt, argv + optind,
				  argc - optind, why, sizeof(why));
	free(ropt);
	if (rc < 0)
		msim_cli_die("record: %s", why);
	if (*why)
		fprintf(stderr, "memsim: record: %s\n", why);
	return rc;
}
