/*
 * memsim record: runs a PyTorch script under the Python recorder
 * (traces/memsim_record, installed in $(pythondir)) and writes the trace.
 * The recorder writes OUT.tmp<pid> and renames it; if it dies, the
 * temporary is removed here, so no partial trace is left at OUT.
 * The launch itself is lab/record.c's, shared with `memsim fit` and
 * `memsim sweep -- COMMAND`.
 */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lab/record.h"

static void
usage_record(FILE *fp)
{
	fprintf(fp,
		"usage: memsim record -o OUT [OPTIONS] -- python3 SCRIPT "
		"[ARGS...]\n"
		"\n"
		"Runs SCRIPT, unmodified, and writes its GPU allocations to OUT "
		"as a CSV trace\n"
		"(seq,time_us,action,addr,size,stream,category,site) for `memsim "
		"run`.  With\n"
		"--fake (the default) the script runs on PyTorch's fake tensors: "
		"no GPU, no\n"
		"CUDA driver and no compute; CUDA queries are answered for "
		"--device, kernels'\n"
		"own workspaces are added by rule, and data-dependent values get "
		"stated\n"
		"assumptions (counted as `annotate` rows; see README.md).  With "
		"--gpu it runs\n"
		"for real with the allocator's history on.  Either way each "
		"call of\n"
		"torch.cuda.empty_cache() is an `empty_cache` row, which the "
		"replay runs.\n"
		"Needs Python 3 and PyTorch.\n"
		"\n"
		"options:\n"
		"  -o, --output OUT          the trace to write (required)\n"
		"      --fake | --gpu        fake tensors (default) or a real "
		"run\n"
		"      --device NAME         h200 (default), h100-80gb, "
		"a100-80gb, a100-40gb, l4, ...\n"
		"      --world-size N        one rank of an N-GPU job (fake "
		"process group)\n"
		"      --rank R              which rank (default 0)\n"
		"      --amp bf16|fp16       autocast around the model's "
		"forward\n"
		"      --checkpoint S        none, every:K or sqrt: "
		"checkpoint the repeated blocks\n"
		"      --dynamic-fraction F  share of elements nonzero, "
		"masked_select, unique\n"
		"                            (MoE routing) select (default "
		"0.5)\n"
		"      --item-int N          what an integer .item() returns "
		"(default 1)\n"
		"      --item-bool true|false  what a bool .item() of unknown "
		"value returns\n"
		"                            (default false)\n"
		"      --item-repeats N      stop when one line asks for an "
		"unknown .item()\n"
		"                            more than N times (default "
		"100000)\n"
		"      --python PY           the interpreter (default "
		"$MEMSIM_PYTHON or python3)\n"
		"  -h, --help                this help\n");
}

int
msim_cmd_record(int argc, char **argv)
{
	enum { O_FAKE = 256, O_GPU, O_DEVICE, O_WS, O_RANK, O_AMP, O_CKPT,
	       O_FRAC, O_ITEM, O_ITEMB, O_REPEATS, O_PY };
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"fake", no_argument, NULL, O_FAKE},
		{"gpu", no_argument, NULL, O_GPU},
		{"device", required_argument, NULL, O_DEVICE},
		{"world-size", required_argument, NULL, O_WS},
		{"rank", required_argument, NULL, O_RANK},
		{"amp", required_argument, NULL, O_AMP},
		{"checkpoint", required_argument, NULL, O_CKPT},
		{"dynamic-fraction", required_argument, NULL, O_FRAC},
		{"item-int", required_argument, NULL, O_ITEM},
		{"item-bool", required_argument, NULL, O_ITEMB},
		{"item-repeats", required_argument, NULL, O_REPEATS},
		{"python", required_argument, NULL, O_PY},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out = NULL;
	char *ropt[32];
	int nropt = 0;
	int c;
	optind = 1;
	while ((c = msim_cli_getopt(argc, argv, "+o:h", longopts)) != -1) {
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
		case O_PY:
			setenv("MEMSIM_PYTHON", optarg, 1);
			break;
		case O_DEVICE: case O_WS: case O_RANK: case O_AMP: case O_CKPT:
		case O_FRAC: case O_ITEM: case O_ITEMB: case O_REPEATS: {
			static const char *const flag[] = {
				"--device", "--world-size", "--rank", "--amp",
				"--checkpoint", "--dynamic-fraction",
				"--item-int", "--item-bool", "--item-repeats"};
			if (nropt > 28)
				msim_cli_die("record: too many options");
			ropt[nropt++] = (char *)flag[c - O_DEVICE];
			ropt[nropt++] = optarg;
			break;
		}
		case 'h':
			usage_record(stdout);
			return 0;
		default:
			usage_record(stderr);
			return 2;
		}
	}
	if (!out) {
		fprintf(stderr, "memsim: record: -o OUT is required\n");
		usage_record(stderr);
		return 2;
	}
	msim_record_opts_t ro = {.dirs = msim_cli_record_dirs()};
	char why[1024];
	int rc = msim_record_exec(&ro, out, ropt, nropt, argv + optind,
				  argc - optind, why, sizeof(why));
	if (rc < 0)
		msim_cli_die("record: %s", why);
	if (*why)
		fprintf(stderr, "memsim: record: %s\n", why);
	return rc;
}
