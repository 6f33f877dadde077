/*
 * memsim gen: writes synthetic traces.  `gen model` runs the model-shaped
 * generator (traces/gen_model.h), `gen random` the statistical one
 * (traces/gen_random.h); both write the device-trace CSV that `memsim run`
 * reads, and print the generated peak and the recomputation.
 */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "lab/generate.h"
#include "traces/model_spec.h"

static const char gen_usage[] =
	"usage: memsim gen model --arch gpt2|llama|bert|resnet50 "
	"[--layers N --hidden N\n"
	"         --heads N --kv-heads N --ffn N --vocab N "
	"--positions N] --batch N\n"
	"         [--seq N[,N...]] [--image N] --dtype "
	"fp32|bf16-amp|fp16-amp|bf16\n"
	"         [--optimizer adamw|sgd] --steps N [--checkpoint "
	"none|every:K|sqrt|budget:BYTES]\n"
	"         [--inference [--generate N] [--no-cache] [--weights "
	"native|int8|fp8]]\n"
	"         [--accum K] [--scaler-skips N] -o FILE\n"
	"       memsim gen random [--seed N] [--requests N] [--streams "
	"N] [--sizes SPEC]\n"
	"         [--lifetime MEAN] [--arrival MEAN] -o FILE\n"
	"\n"
	"Writes a device-trace CSV (seq,time_us,action,addr,size,stream) "
	"that `memsim run`\n"
	"replays.  A list of sequence lengths means one a step, "
	"repeating.\n"
	"random --sizes: lognormal:MU:SIGMA (bytes = exp(N(MU,SIGMA))) "
	"or\n"
	"classes:SIZE@WEIGHT/SIZE@WEIGHT/... (default "
	"lognormal:14:2.5).\n";

static void
usage_gen(FILE *fp)
{
	fputs(gen_usage, fp);
}

/* An option of the model's shape (--layers, --seq, --weights, ...),
 * set by the model spec's own rules (traces/model_spec.h), as "model:"
 * inputs are: false if c is not one; dies on a bad value. */
static bool
gen_model_key(msim_model_cfg_t *cfg, const msim_cli_opt_t *lo, int c)
{
	while (lo->name && lo->key != c)
		lo++;
	if (!lo->name || !msim_model_key_is(lo->name))
		return false;
	char why[512];
	if (msim_model_set(cfg, lo->name, optarg, why, sizeof(why))) {
		const char *r = strstr(why, ": ");
		msim_cli_die("--%s%s", lo->name, r ? r : why);
	}
	return true;
}

static int
gen_model_cmd(int argc, char **argv)
{
	enum { O_LAYERS = 256, O_HIDDEN, O_HEADS, O_KV, O_FFN, O_VOCAB, O_POS,
	       O_IMAGE, O_OPT, O_CKPT, O_INF, O_SKIPS, O_GENERATE, O_NOCACHE,
	       O_ACCUM, O_WEIGHTS };
	/* The options are listed in the usage text. */
	static const msim_cli_opt_t lo[] = {
		{'a', true, "arch", "V", NULL},
		{O_LAYERS, false, "layers", "V", NULL},
		{O_HIDDEN, false, "hidden", "V", NULL},
		{O_HEADS, false, "heads", "V", NULL},
		{O_KV, false, "kv-heads", "V", NULL},
		{O_FFN, false, "ffn", "V", NULL},
		{O_VOCAB, false, "vocab", "V", NULL},
		{O_POS, false, "positions", "V", NULL},
		{'b', true, "batch", "V", NULL},
		{'s', true, "seq", "V", NULL},
		{O_IMAGE, false, "image", "V", NULL},
		{'d', true, "dtype", "V", NULL},
		{O_OPT, false, "optimizer", "V", NULL},
		{'n', true, "steps", "V", NULL},
		{O_CKPT, false, "checkpoint", "V", NULL},
		{O_INF, false, "inference", NULL, NULL},
		{O_SKIPS, false, "scaler-skips", "V", NULL},
		{O_GENERATE, false, "generate", "V", NULL},
		{O_NOCACHE, false, "no-cache", NULL, NULL},
		{O_ACCUM, false, "accum", "V", NULL},
		{O_WEIGHTS, false, "weights", "V", NULL},
		{'o', true, "output", "V", NULL},
		{'h', true, "help", NULL, NULL},
		{0},
	};
	static const msim_cli_cmd_t cmd = {gen_usage, lo, 0, NULL, false};
	/* the arch first: its defaults come before the other options */
	int arch = -1;
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--arch")) {
			const char *s = argv[i + 1];
			arch = !strcmp(s, "gpt2") ? MSIM_ARCH_GPT2
			       : !strcmp(s, "llama") ? MSIM_ARCH_LLAMA
			       : !strcmp(s, "bert") ? MSIM_ARCH_BERT
			       : !strcmp(s, "resnet50") ? MSIM_ARCH_RESNET50
			       : -2;
			if (arch == -2)
				msim_cli_die("--arch: unknown architecture "
					     "'%s' (gpt2, llama, bert, "
					     "resnet50)", s);
		}
	msim_model_cfg_t cfg;
	msim_model_defaults(&cfg, arch < 0 ? MSIM_ARCH_GPT2 : arch);
	/* Training unless --inference, for every arch: an arch without a
	 * training generator (bert) is refused by msim_model_check(), never
	 * turned into inference silently. */
	cfg.inference = false;
	const char *out = NULL;
	int c;
	optind = 1;
	while ((c = msim_cli_next(&cmd, argc, argv)) != -1) {
		switch (c) {
		case 'a':
			break;
		case 'd':
			cfg.dtype = msim_dtype_parse(optarg);
			if (cfg.dtype < 0)
				msim_cli_die("--dtype: unknown dtype '%s' "
					     "(fp32, bf16-amp, fp16-amp, "
					     "bf16)", optarg);
			break;
		case O_CKPT:
			if (msim_ckpt_parse(optarg, &cfg.ckpt))
				msim_cli_die("--checkpoint: '%s' is not none, "
					     "every:K, sqrt or budget:BYTES",
					     optarg);
			break;
		case O_INF:
			cfg.inference = true;
			break;
		case O_NOCACHE:
			cfg.no_cache = true;
			break;
		case 'o':
			out = optarg;
			break;
		default:
			gen_model_key(&cfg, lo, c);
			break;
		}
	}
	if (arch < 0)
		msim_cli_die("--arch: required (gpt2, llama, bert, resnet50)");
	if (!out)
		msim_cli_die("-o: an output file is required");
	msim_cli_output("-o", out);
	char why[512];
	bool out_err;
	msim_gen_t g;
	msim_gen_init(&g, false);
	if (msim_generate_model(&cfg, &g, out, &out_err, why, sizeof(why)))
		msim_cli_die("%s%s", out_err ? "-o: " : "", why);
	fprintf(stderr, "memsim gen: %zu requests, peak allocated %" PRIu64
		" bytes, recompute %" PRIu64 " layer-forwards\n", g.n, g.peak,
		g.recompute);
	msim_gen_clear(&g);
	return 0;
}

int
msim_cmd_gen(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage_gen(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "model"))
		return gen_model_cmd(argc - 1, argv + 1);
	if (!strcmp(argv[1], "random"))
		return msim_cmd_gen_random(argc - 1, argv + 1);
	msim_cli_die("gen: unknown generator '%s' (model, random)", argv[1]);
}
