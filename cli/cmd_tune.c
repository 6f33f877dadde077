/*
 * memsim tune: the PYTORCH_CUDA_ALLOC_CONF with the lowest peak reserved
 * that does not run out of memory under a cap.  The search, the pick and
 * the store are lab/tune.c's and so is the table of the default beside
 * the recommendation; here are the options.
 */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "lab/tune.h"
#include "sim/device.h"

static const msim_cli_opt_t tune_opts[] = {
	{'C', false, "cap", "BYTES",
	 "the per-process cap (required; 16GiB, 12.5GB, ...)"},
	{'d', true, "db", "FILE", "where to store both runs (default memsim.db)"},
	{'g', true, "grid", "K=V,...", "replace one axis of the search "
	 "(repeatable)"},
	{'j', true, "jobs", "N", "worker processes (default: the number of "
	 "cores)"},
	{'D', false, "device", "NAME", "a GPU of memsim devices: the "
	 "allocator gets its\nmemory less its context (and --cap defaults "
	 "to that)"},
	{'K', false, "capacity", "BYTES|NAME", "device memory (default the "
	 "H200's)"},
	{'X', false, "context-bytes", "B", "CUDA context and libraries, off "
	 "the capacity\n(default --device's, else 0)"},
	{'J', false, "json", NULL, "one JSON object (fields in memsim-tune(1))"},
	{'P', false, "progress", NULL, "a progress line on stderr even when "
	 "it is not a\nterminal (on a terminal: always, after 1 s)"},
	MSIM_CLI_OPT_HELP,
	{0},
};

/* The settings searched: msim_tune_grid's 6 x 6 x 6 x 2 (lab/tune.c). */
static const msim_cli_cmd_t tune_cmd = {
	"usage: memsim tune [OPTIONS] --cap BYTES|--device NAME TRACE\n"
	"\n"
	"Searches the pytorch policy's settings (max_split_size_mb x "
	"garbage_collection_\n"
	"threshold x roundup_power2_divisions x expandable_segments, 432 "
	"settings) and\nrecommends the\n"
	"PYTORCH_CUDA_ALLOC_CONF with the lowest peak reserved that does not "
	"run out of\n"
	"memory under the cap (ties: fewer retries, then fewer keys).  Prints "
	"the\n"
	"default and the recommendation side by side and stores both in the "
	"database.\n"
	"\n"
	"options:\n",
	tune_opts, 22, NULL, false,
};

/* What the options ask for. */
typedef struct tune_opts_s {
	uint64_t cap;
	const char *db;
	const char *grid[16];
	size_t ngrid;
	long jobs;
	bool json, progress;
	msim_cli_gpu_t gpu;   /* --device, --capacity, --context-bytes */
	uint64_t capacity;    /* the allocator's: the device less context */
} tune_opts_t;

/* Reads the options into o.  Returns -1 to go on, else the exit status. */
static int
tune_parse(int argc, char **argv, tune_opts_t *o)
{
	int c;
	for (size_t k = 0; k < MSIM_TUNE_NGRID; k++)
		o->grid[o->ngrid++] = msim_tune_grid[k];
	while ((c = msim_cli_next(&tune_cmd, argc, argv)) != -1) {
		switch (c) {
		case 'C': o->cap = msim_cli_bytes("--cap", optarg); break;
		case 'd': o->db = optarg; break;
		case 'g':
			if (msim_tune_grid_set(o->grid, &o->ngrid, 16, optarg))
				msim_cli_die("--grid: too many axes");
			break;
		case 'j': o->jobs = msim_cli_jobs(optarg); break;
		case 'D': msim_cli_gpu_device(&o->gpu, optarg, false); break;
		case 'K': msim_cli_gpu_capacity(&o->gpu, optarg); break;
		case 'X': msim_cli_gpu_context(&o->gpu, optarg); break;
		case 'J': o->json = true; break;
		case 'P': o->progress = true; break;
		}
	}
	msim_cli_operands(&tune_cmd, argc, 1, 1);
	msim_cli_gpu_done(&o->gpu);
	/* The context holds its bytes outside the allocator, which gets
	 * the rest (lab/job.c does the same for one process). */
	if (o->gpu.capacity)
		o->capacity = o->gpu.capacity - o->gpu.context;
	else if (o->gpu.context)
		o->capacity = MSIM_H200_BYTES - o->gpu.context;
	if (!o->cap && !o->gpu.name)
		msim_cli_die("--cap BYTES (the memory the job may use) or "
			     "--device NAME is required");
	if (!o->cap)
		o->cap = o->capacity;
	if (o->capacity && o->cap > o->capacity)
		msim_cli_die("--cap: %" PRIu64 " bytes is more than the %"
			     PRIu64 " the device leaves after its context "
			     "(%" PRIu64 " of %" PRIu64 ")", o->cap,
			     o->capacity, o->gpu.context, o->capacity +
			     o->gpu.context);
	return -1;
}

int
msim_cmd_tune(int argc, char **argv)
{
	tune_opts_t o = {.db = "memsim.db",
			 .jobs = sysconf(_SC_NPROCESSORS_ONLN)};
	int rc = tune_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	msim_cli_progress_t pr = {
		.what = "tune", .start = msim_cli_now_ms(), .after_ms = 1000,
		.on = o.progress || isatty(STDERR_FILENO),
	};
	msim_tune_spec_t spec = {
		.trace = argv[optind], .cap = o.cap, .db_path = o.db,
		.grid = o.grid, .ngrid = o.ngrid, .jobs = (int)o.jobs,
		.capacity = o.capacity, .progress = msim_cli_progress,
		.ctx = &pr,
	};
	msim_tune_result_t res;
	char why[2048];
	rc = msim_tune_run(&spec, &res, why, sizeof(why));
	msim_cli_progress_end(&pr);
	if (rc)
		msim_cli_die("%s", why);
	if (o.json) {
		msim_tune_json(&res, spec.trace, o.cap, true);
		if (*res.store_err)
			msim_cli_die("%s", res.store_err);
		return 0;
	}
	msim_tune_print(&res, spec.trace, o.cap);
	if (*res.store_err) {
		fflush(stdout);
		msim_cli_die("%s", res.store_err);
	}
	printf("stored     tune %" PRId64 " in %s\n", res.tune_id, o.db);
	return 0;
}
