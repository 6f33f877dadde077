/*
 * memsim fit: the largest value of one setting of a script (batch size,
 * sequence length) whose recording fits under a cap, and the best
 * PYTORCH_CUDA_ALLOC_CONF for it.  The bisection, the recordings and the
 * replays are lab/fit.c's; here are the options and the answer.
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
#include "sim/units.h"

#define FIT_MAX_CONFS 32

enum { O_CAP = 256, O_VARY, O_FAKE, O_GPU, O_DEVICE, O_AMP, O_CKPT, O_WS,
       O_RANK, O_FRAC, O_PLOT };

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
	{'j', true, "jobs", "N",
	 "record up to N values at once (default 1)"},
	{O_PLOT, false, "plot", "OUT",
	 "draw the curve learned into OUT (.png, .svg, .pdf)"},
	/* memsim record's, passed on (lab/fit.c) */
	{O_FAKE, false, "fake", NULL, NULL},
	{O_GPU, false, "gpu", NULL, NULL},
	{O_DEVICE, false, "device", "N", NULL},
	{O_AMP, false, "amp", "DTYPE", NULL},
	{O_CKPT, false, "checkpoint", "HOW", NULL},
	{O_WS, false, "world-size", "N", NULL},
	{O_RANK, false, "rank", "R", NULL},
	{O_FRAC, false, "dynamic-fraction", "F", NULL},
	{0, false, NULL, NULL,
	 "      --fake | --gpu, --device, --amp, --checkpoint, --world-size, "
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
	"memory, by bisection (memory is assumed to grow with NAME).  For the "
	"winner it\n"
	"prints the peak reserved and allocated, the margin to the cap, and "
	"the best\n"
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
	  const char **keep, const char **plot)
{
	static const char *const flag[] = {"--device", "--amp", "--checkpoint",
					   "--world-size", "--rank",
					   "--dynamic-fraction"};
	static const char *confs[FIT_MAX_CONFS];
	static char *ropt[32];
	int c, nropt = 0;
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
			if (f->nconf == FIT_MAX_CONFS)
				msim_cli_die("fit: more than %d --alloc-conf",
					     FIT_MAX_CONFS);
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
		case 'j':
			f->jobs = (int)msim_cli_jobs(optarg);
			break;
		case O_PLOT:
			*plot = optarg;
			break;
		case O_FAKE:
			ropt[nropt++] = "--fake";
			break;
		case O_GPU:
			ropt[nropt++] = "--gpu";
			break;
		case O_DEVICE: case O_AMP: case O_CKPT: case O_WS: case O_RANK:
		case O_FRAC:
			if (nropt > 28)
				msim_cli_die("fit: too many options");
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
	return -1;
}

/* A recording or a replay of the search (lab/fit.h). */
static void
fit_note(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "memsim: fit: %s\n", line);
}

/* The curve learned: each value tried, what it needs, how it ran. */
static void
fit_print_curve(const msim_fit_spec_t *f, const msim_fit_result_t *r)
{
	printf("curve      %-8s %14s %14s  under the cap\n", f->name,
	       "needs reserved", "allocated");
	for (size_t i = 0; i < r->ncurve; i++) {
		const msim_fit_curve_pt_t *c = &r->curve[i];
		char rb[32], ab[32];
		msim_format_bytes((uint64_t)c->reserved, rb, sizeof(rb));
		msim_format_bytes((uint64_t)c->allocated, ab, sizeof(ab));
		printf("           %-8ld %14s %14s  %s\n", c->value, rb, ab,
		       c->capped.oom ? "out of memory"
		       : r->fits && c->value == r->best ? "fits: the answer"
							: "fits");
	}
}

static void
fit_print(const msim_fit_spec_t *f, const msim_fit_result_t *r)
{
	char capb[32], rb[32], ab[32], mb[32];
	msim_format_bytes(f->cap, capb, sizeof(capb));
	printf("cap        %s (%" PRIu64 " bytes)\n", capb, f->cap);
	printf("recordings %d\n", r->tries);
	fit_print_curve(f, r);
	if (!r->fits) {
		printf("fits       none: %s=%ld already runs out of memory\n",
		       f->name, f->lo);
		return;
	}
	msim_format_bytes((uint64_t)r->at_best.reserved, rb, sizeof(rb));
	msim_format_bytes((uint64_t)r->at_best.allocated, ab, sizeof(ab));
	msim_format_bytes(f->cap - (uint64_t)r->at_best.reserved, mb,
			  sizeof(mb));
	printf("largest    %s=%ld%s\n", f->name, r->best,
	       r->best == f->hi ? " (the top of the range)" : "");
	printf("peak       reserved %s, allocated %s (default settings)\n",
	       rb, ab);
	printf("margin     %s (%.1f%% of the cap)\n", mb,
	       100.0 * (double)(f->cap - (uint64_t)r->at_best.reserved) /
		       (double)f->cap);
	for (size_t i = 0; i < f->nconf; i++) {
		msim_format_bytes((uint64_t)r->cand[i].reserved, rb,
				  sizeof(rb));
		printf("candidate  %-40s reserved %s%s\n", f->confs[i], rb,
		       r->cand[i].oom ? " (out of memory)" : "");
	}
	if (f->nconf) {
		msim_format_bytes((uint64_t)r->conf_best.reserved, rb,
				  sizeof(rb));
		msim_format_bytes(f->cap - (uint64_t)r->conf_best.reserved, mb,
				  sizeof(mb));
		printf("best       PYTORCH_CUDA_ALLOC_CONF=\"%s\": reserved %s, "
		       "margin %s\n", r->best_conf < f->nconf
		       ? f->confs[r->best_conf] : "(default)", rb, mb);
		return;
	}
	printf("tune       (memsim tune --cap %" PRIu64 " on %s=%ld)\n",
	       f->cap, f->name, r->best);
	if (r->tuned)
		msim_cli_tune_print(&r->tune, r->trace, f->cap);
	if (r->tuned && *r->tune.store_err)
		fprintf(stderr, "memsim: %s\n", r->tune.store_err);
	else if (!r->tuned)
		fprintf(stderr, "memsim: fit: tune: %s\n", r->tune_err);
}

int
msim_cmd_fit(int argc, char **argv)
{
	msim_fit_spec_t f = {.note = fit_note,
			     .tune_jobs = (int)sysconf(_SC_NPROCESSORS_ONLN)};
	const char *vary = NULL, *keep = NULL, *plot = NULL;
	optind = 1;
	int rc = fit_parse(argc, argv, &f, &vary, &keep, &plot);
	if (rc >= 0)
		return rc;
	char name[64], why[4400];
	if (msim_fit_parse_vary(vary, name, sizeof(name), &f.lo, &f.hi, why,
				sizeof(why)))
		msim_cli_die("fit: %s", why);
	if (plot && msim_plot_check(msim_cli_plots_dir(), GNUPLOT_PATH, plot,
				    why, sizeof(why)))
		msim_cli_die("fit: --plot: %s", why);
	f.name = name;
	f.cmd = argv + optind;
	f.ncmd = argc - optind;
	bool found = false;
	if (f.pattern) {
		if (f.ncmd > 0)
			msim_cli_die("fit: give --traces or a command, not both");
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
	f.rec = (msim_record_opts_t){.dirs = msim_cli_record_dirs(),
				     .quiet = true};
	msim_fit_result_t r;
	if (msim_fit_run(&f, &r, why, sizeof(why)))
		msim_cli_die("fit: %s", why);
	fit_print(&f, &r);
	if (plot && msim_fit_plot(&f, &r, msim_cli_plots_dir(), GNUPLOT_PATH,
				  plot, why, sizeof(why))) {
		msim_fit_clear(&r);
		msim_cli_die("fit: --plot: %s", why);
	}
	msim_fit_clear(&r);
	return r.fits ? 0 : 1; /* the scratch folder goes at exit */
}
