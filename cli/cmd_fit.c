/*
 * memsim fit: the largest value of one setting of a script (batch size,
 * sequence length) whose recording fits under a cap, and the best
 * PYTORCH_CUDA_ALLOC_CONF for it.  The bisection, the recordings and the
 * replays are lab/fit.c's, and so is its answer; here are the options.
 */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "lab/fit.h"
#include "plots/plot.h"
#include "policies/registry.h"
#include "sim/file.h"

enum { O_CAP = 256, O_VARY, O_FAKE, O_GPU, O_DEVICE, O_AMP, O_CKPT, O_WS,
       O_RANK, O_FRAC, O_CTX, O_JSON, O_TIMEOUT, O_PLOT, O_SYMBOLIC };

static const msim_cli_opt_t fit_opts[] = {
	{O_CAP, false, "cap", "BYTES", "the per-process cap (required)"},
	{O_VARY, false, "vary", "NAME=LO..HI",
	 "the setting and its range (required)"},
	{'c', true, "alloc-conf", "CONF",
	 "a candidate PYTORCH_CUDA_ALLOC_CONF (repeatable)"},
	{'p', true, "policy", "NAME",
	 "the policy (default " MSIM_POLICY_DEFAULT ")"},
	{'k', true, "keep", "DIR",
	 "keep the recordings in DIR (NAME-VALUE.csv)"},
	{'t', true, "traces", "PATTERN",
	 "no recording: the traces already recorded, PATTERN\n"
	 "with {NAME} for the value (gpt-{B}.csv)"},
	{O_DEVICE, false, "device", "NAME",
	 "the GPU (memsim devices; default h200): a cap above\n"
	 "its memory is refused, its context comes off it\n"
	 "(passed to memsim record too)"},
	{O_CTX, false, "context-bytes", "B",
	 "CUDA context and libraries (default the device's)"},
	{O_JSON, false, "json", NULL, "one JSON object (fields in memsim-fit(1))"},
	{O_TIMEOUT, false, "timeout", "SECONDS",
	 "stop a recording that runs longer (a failure at\n"
	 "its value)"},
	{'j', true, "jobs", "N",
	 "record up to N values at once (default 1)"},
	{O_PLOT, false, "plot", "OUT",
	 "draw the curve learned into OUT (.png, .svg, .pdf)"},
	{O_SYMBOLIC, false, "symbolic", NULL,
	 "record once with NAME symbolic (memsim record\n"
	 "--symbolic, twice to check) and instantiate that\n"
	 "trace where it holds; other values recorded"},
	/* memsim record's, passed on (lab/fit.c) */
	{O_FAKE, false, "fake", NULL, NULL},
	{O_GPU, false, "gpu", NULL, NULL},
	{O_AMP, false, "amp", "DTYPE", NULL},
	{O_CKPT, false, "checkpoint", "HOW", NULL},
	{O_WS, false, "world-size", "N", NULL},
	{O_RANK, false, "rank", "R", NULL},
	{O_FRAC, false, "dynamic-fraction", "F", NULL},
	{0, false, NULL, NULL,
	 "      --fake | --gpu, --amp, --checkpoint, --world-size, "
	 "--rank,\n"
	 "      --dynamic-fraction    passed to memsim record\n"},
	MSIM_CLI_OPT_HELP,
	{0},
};

static const msim_cli_cmd_t fit_cmd = {
	"usage: memsim fit --cap BYTES --vary NAME=LO..HI [OPTIONS] -- "
	"python3 SCRIPT ... {NAME} ...\n"
	"       memsim fit --cap BYTES --vary NAME=LO..HI --traces PATTERN "
	"[OPTIONS]\n"
	"\n"
	"Finds the largest integer NAME in [LO, HI] whose recording (memsim "
	"record, with\n"
	"{NAME} replaced in the command) replays under the cap without running "
	"out of\n"
	"memory (memory is assumed to grow with NAME): the ends of the range, "
	"then where\n"
	"the line through what they need meets the cap (bisection after two "
	"slow guesses).\n"
	"A recording that fails counts as not fitting.  It prints the curve "
	"learned; for\n"
	"the winner, the peak reserved and allocated, the margin to the cap, "
	"and the best\n"
	"--alloc-conf of the candidates (lowest peak reserved without an OOM); "
	"with no\n"
	"candidates, `memsim tune` searches them.\n"
	"\n"
	"options:\n",
	fit_opts, 27, NULL, true,
};

/* Reads the options into f.  Returns -1 to go on, else the exit status. */
static int
fit_parse(int argc, char **argv, msim_fit_spec_t *f, const char **vary,
	  const char **keep, msim_cli_gpu_t *gpu, bool *json,
	  const char **plot)
{
	static const char *const flag[] = {"--device", "--amp", "--checkpoint",
					   "--world-size", "--rank",
					   "--dynamic-fraction"};
	/* at most one a word of argv, two words an option: never more than
	 * argc (fit_free_opts) */
	const char **confs = calloc((size_t)argc + 1, sizeof(*confs));
	char **ropt = calloc((size_t)argc * 2 + 1, sizeof(*ropt));
	int c, nropt = 0;
	if (!confs || !ropt)
		msim_cli_die("fit: out of memory");
	f->confs = confs;
	f->ropt = ropt;
	optind = 1;
	while ((c = msim_cli_next(&fit_cmd, argc, argv)) != -1) {
		switch (c) {
		case O_CAP:
			f->cap = msim_cli_bytes("--cap", optarg);
			break;
		case O_VARY:
			*vary = optarg;
			break;
		case 'c':
			confs[f->nconf++] = optarg;
			break;
		case 'p':
			f->policy = optarg;
			break;
		case 'k':
			*keep = optarg;
			break;
		case 't':
			f->pattern = optarg;
			break;
		case O_TIMEOUT:
			f->rec.timeout_s = (unsigned)msim_cli_uint(
				"--timeout", optarg, 1, 1u << 30);
			break;
		case 'j':
			f->jobs = (int)msim_cli_jobs(optarg);
			break;
		case O_PLOT:
			*plot = optarg;
			break;
		case O_SYMBOLIC:
			f->symbolic = true;
			break;
		case O_FAKE:
			ropt[nropt++] = "--fake";
			break;
		case O_GPU:
			ropt[nropt++] = "--gpu";
			break;
		case O_CTX:
			msim_cli_gpu_context(gpu, optarg);
			break;
		case O_JSON:
			*json = true;
			break;
		case O_DEVICE:
			msim_cli_gpu_device(gpu, optarg, false);
			/* memsim record takes it too */
			/* fall through */
		case O_AMP: case O_CKPT: case O_WS: case O_RANK:
		case O_FRAC:
			ropt[nropt++] = (char *)flag[c - O_DEVICE];
			ropt[nropt++] = optarg;
			break;
		}
	}
	f->nropt = nropt;
	if (!f->cap || !*vary) {
		fprintf(stderr, "memsim: fit: --cap and --vary are required\n");
		msim_cli_help(stderr, &fit_cmd);
		return 2;
	}
	/* No --device: the recorder's default, the H200. */
	if (!gpu->name)
		msim_cli_gpu_device(gpu, "h200", false);
	msim_cli_gpu_done(gpu);
	f->capacity = gpu->capacity;
	f->context = gpu->context;
	if (f->cap > f->capacity)
		msim_cli_die("--cap: %" PRIu64 " bytes is more than the %s's "
			     "%" PRIu64 " (memsim devices)", f->cap, gpu->name,
			     f->capacity);
	return -1;
}

/* A recording or a replay of the search (lab/fit.h). */
static void
fit_note(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "memsim: fit: %s\n", line);
}

/* The option arrays fit_parse() made. */
static void
fit_free_opts(msim_fit_spec_t *f)
{
	free((void *)f->confs);
	free((void *)f->ropt);
}

int
msim_cmd_fit(int argc, char **argv)
{
	msim_fit_spec_t f = {.note = fit_note,
			     .tune_jobs = (int)sysconf(_SC_NPROCESSORS_ONLN)};
	const char *vary = NULL, *keep = NULL, *plot = NULL;
	msim_cli_gpu_t gpu = {0};
	bool json = false;
	optind = 1;
	int rc = fit_parse(argc, argv, &f, &vary, &keep, &gpu, &json, &plot);
	if (rc >= 0) {
		fit_free_opts(&f);
		return rc;
	}
	char name[64], why[4400];
	if (msim_fit_parse_vary(vary, name, sizeof(name), &f.lo, &f.hi, why,
				sizeof(why)))
		msim_cli_die("fit: %s", why);
	if (plot && msim_plot_check(msim_cli_plots_dir(), GNUPLOT_PATH, plot,
				    why, sizeof(why)))
		msim_cli_die("fit: --plot: %s", why);
	f.name = name;
	if (keep) { /* the folder, checked on its first recording's name */
		char first[4200];
		snprintf(first, sizeof(first), "%s/%s-%ld.csv", keep, name,
			 f.lo);
		if (msim_output_check(first, why, sizeof(why)))
			msim_cli_die("fit: --keep %s", why);
	}
	f.cmd = argv + optind;
	f.ncmd = argc - optind;
	bool found = false;
	if (f.pattern) {
		if (f.ncmd > 0)
			msim_cli_die("fit: give --traces or a command, not both");
		if (f.symbolic)
			msim_cli_die("fit: --symbolic records the command; "
				     "--traces gives recordings already made");
		char *pat = (char *)f.pattern;
		found = msim_record_has(&pat, 1, name);
	} else if (f.ncmd < 1) {
		msim_cli_die("fit: no command after '--'");
	}
	if (!found && !msim_record_has(f.cmd, f.ncmd, name))
		msim_cli_die("fit: the command has no {%s} to vary", name);
	/* recordings (unless kept) and tune's database; removed on every
	 * way out, msim_cli_die() included */
	const char *tmpdir = msim_cli_scratch("memsim-fit");
	char tunedb[4200];
	snprintf(tunedb, sizeof(tunedb), "%s/tune.db", tmpdir);
	f.dir = keep ? keep : tmpdir;
	f.tune_db = tunedb;
	f.rec.dirs = msim_cli_record_dirs(); /* --timeout is set already */
	f.rec.quiet = true;
	/* tune's search on the winner: a progress line on a terminal */
	msim_cli_progress_t pr = {.what = "fit: tune", .after_ms = 1000,
				  .on = isatty(STDERR_FILENO)};
	f.tune_progress = msim_cli_progress;
	f.tune_progress_ctx = &pr;
	msim_fit_result_t r;
	rc = msim_fit_run(&f, &r, why, sizeof(why));
	msim_cli_progress_end(&pr);
	if (rc) {
		int sig = msim_record_signal();
		if (sig) { /* stopped by a signal: said, then the status */
			fprintf(stderr, "memsim: fit: %s\n", why);
			exit(128 + sig);
		}
		msim_cli_die("fit: %s", why);
	}
	if (json)
		msim_fit_json(&f, &r, gpu.name);
	else
		msim_fit_print(&f, &r, gpu.name);
	if (!json && r.fits && !f.nconf && r.tuned && *r.tune.store_err)
		fprintf(stderr, "memsim: %s\n", r.tune.store_err);
	else if (!json && r.fits && !f.nconf && !r.tuned)
		fprintf(stderr, "memsim: fit: tune: %s\n", r.tune_err);
	if (plot && msim_fit_plot(&f, &r, msim_cli_plots_dir(), GNUPLOT_PATH,
				  plot, why, sizeof(why))) {
		msim_fit_clear(&r);
		msim_cli_die("fit: --plot: %s", why);
	}
	msim_fit_clear(&r);
	fit_free_opts(&f);
	return r.fits ? 0 : 1; /* the scratch folder goes at exit */
}
