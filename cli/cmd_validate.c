/*
 * memsim validate: replay a trace on a real GPU (raw cudaMalloc, a
 * cudaMallocAsync pool, or PyTorch's own allocator) and store the measured
 * figures beside the simulated ones; `--calibrate` measures the latencies
 * of the time model.  The measurement and its stored row are
 * lab/measure.c's; here are the options and the printing.
 */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "lab/figures.h"
#include "lab/measure.h"
#include "policies/registry.h"
#include "sim/metrics.h"

#ifndef PKGDATA_DIR
#define PKGDATA_DIR ""
#endif
#ifndef SRC_VALIDATE_DIR
#define SRC_VALIDATE_DIR "validate"
#endif

static const msim_cli_opt_t validate_opts[] = {
	{'m', true, "mode", "MODE", "raw, async or torch (default torch)"},
	{'c', true, "alloc-conf", "STR",
	 "PYTORCH_CUDA_ALLOC_CONF for torch mode"},
	{'C', false, "cap", "BYTES",
	 "per-process cap (torch: set_per_process_memory_fraction)"},
	{'T', false, "release-threshold", "BYTES",
	 "\nasync pool's release threshold (default: never release)"},
	{'P', false, "python", "PATH",
	 "the python3 with PyTorch (default python3)"},
	{'d', true, "db", "FILE", "store the measured run (kind 'measured')"},
	{'j', false, "json", NULL, "print JSON"},
	{'K', false, "calibrate", "OUT.csv",
	 "measure cudaMalloc/cudaFree/cudaMallocAsync latency\n"
	 "by size, for `memsim run --calibration`"},
	MSIM_CLI_OPT_HELP,
	{0},
};

static const msim_cli_cmd_t validate_cmd = {
	"usage: memsim validate [OPTIONS] TRACE\n"
	"       memsim validate --calibrate OUT.csv\n"
	"\n"
	"Replays TRACE on a real GPU and prints (and stores with --db) the "
	"measured\n"
	"figures, to set beside a simulation of the same trace.\n"
	"\n"
	"modes (--mode):\n"
	"  raw     every request its own cudaMalloc/cudaFree; memory in use "
	"from\n"
	"          cudaMemGetInfo; call latencies (compare: policy naive)\n"
	"  async   cudaMallocAsync/cudaFreeAsync on a pool with a release "
	"threshold\n"
	"          (compare: policy cuda-async)\n"
	"  torch   PyTorch's caching allocator through "
	"validate/torch_replay.py,\n"
	"          under --alloc-conf and --cap (compare: policy "
	MSIM_POLICY_PYTORCH ")\n"
	"\n"
	"options:\n",
	validate_opts, 28,
#ifndef HAVE_CUDA
	"\nThis memsim was built without CUDA: raw, async and --calibrate "
	"need\n`./configure --with-cuda[=/usr/local/cuda]`; torch mode needs "
	"only python3\nwith PyTorch.\n",
#else
	NULL,
#endif
	false,
};

static void
no_cuda(const char *what)
{
#ifndef HAVE_CUDA
	msim_cli_die("%s needs CUDA: this memsim was built without it; "
		     "reconfigure with --with-cuda[=/usr/local/cuda] where "
		     "the CUDA toolkit is installed", what);
#else
	(void)what;
#endif
}

static void
print_json(const msim_measure_spec_t *s, const msim_measure_t *r)
{
	msim_figs_t f = {0};
	if (msim_measure_figs(&f, s, r))
		msim_cli_die("out of memory");
	printf("{");
	msim_print_json_figs(&f, true);
	printf("\n}\n");
	msim_figs_clear(&f);
}

static void
print_text(const msim_measure_spec_t *s, const msim_measure_t *r)
{
	const msim_measured_t *m = &r->m;
	printf("trace      %s\n", s->trace);
	printf("measured   %s on %s (%s)\n", msim_vmode_name(s->mode),
	       m->device, m->versions);
	printf("requests   %" PRIu64 "%s\n", m->requests,
	       m->oom_request >= 0 ? " (stopped at an OOM)" : "");
	printf("reserved   peak %" PRId64 " bytes\n",
	       m->st.reserved_bytes[0].peak);
	printf("allocated  peak %" PRId64 " bytes\n",
	       m->st.allocated_bytes[0].peak);
	if (m->nmalloc)
		printf("latency    malloc %s us, free %s us (means)\n",
		       r->malloc_us, *r->free_us ? r->free_us : "-");
	if (m->oom_request >= 0)
		printf("OOM        at request %" PRId64 "\n", m->oom_request);
	if (r->run_id >= 0)
		printf("stored     run %" PRId64 " in %s\n", r->run_id,
		       s->db_path);
}

int
msim_cmd_validate(int argc, char **argv)
{
	const char *conf = "", *python = NULL, *dbpath = NULL, *calib = NULL;
	uint64_t cap = 0, threshold = UINT64_MAX;
	int mode = MSIM_VMODE_TORCH, json = 0, c;
	while ((c = msim_cli_next(&validate_cmd, argc, argv)) != -1) {
		switch (c) {
		case 'm':
			if ((mode = msim_vmode_parse(optarg)) < 0)
				msim_cli_die("--mode: '%s' is not raw, async or "
					     "torch", optarg);
			break;
		case 'c': conf = optarg; break;
		case 'C': cap = msim_cli_bytes("--cap", optarg); break;
		case 'T':
			threshold = msim_cli_bytes("--release-threshold",
						   optarg);
			break;
		case 'P': python = optarg; break;
		case 'd': dbpath = optarg; break;
		case 'j': json = 1; break;
		case 'K': calib = optarg; break;
		}
	}
	char why[1024];
	if (calib) {
		no_cuda("--calibrate");
#ifdef HAVE_CUDA
		if (msim_validate_calibrate(calib, why, sizeof(why)))
			msim_cli_die("--calibrate: %s", why);
		printf("calibration written to %s\n", calib);
#endif
		return 0;
	}
	msim_cli_operands(&validate_cmd, argc, 1, 1);
	if (mode != MSIM_VMODE_TORCH)
		no_cuda("--mode raw/async");
	const char *const dirs[] = {PKGDATA_DIR "/validate", SRC_VALIDATE_DIR,
				    NULL};
	msim_measure_spec_t spec = {
		.trace = argv[optind], .mode = mode, .conf = conf, .cap = cap,
		.threshold = threshold, .python = python, .bridge_dirs = dirs,
		.db_path = dbpath,
#ifdef HAVE_CUDA
		.cuda = msim_validate_cuda,
#endif
	};
	msim_measure_t r;
	if (msim_measure_run(&spec, &r, why, sizeof(why)))
		msim_cli_die("%s", why);
	if (json)
		print_json(&spec, &r);
	else
		print_text(&spec, &r);
	msim_measure_clear(&r);
	return 0;
}
