/*
 * memsim tune: the PYTORCH_CUDA_ALLOC_CONF with the lowest peak reserved
 * that does not run out of memory under a cap.  The search, the pick and
 * the store are lab/tune.c's; here are the options and the table of the
 * default beside the recommendation.
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
#include "sim/units.h"

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

static void
print_side(const char *what, const char *a, const char *b)
{
	printf("%-24s %-22s %s\n", what, a, b);
}

static const char *
fmt_bytes(int64_t v, char *buf, size_t n)
{
	return msim_format_bytes((uint64_t)(v < 0 ? 0 : v), buf, n);
}

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

static const char *
tune_oom(int64_t oom_request, char *buf, size_t n)
{
	if (oom_request >= 0)
		snprintf(buf, n, "at request %" PRId64, oom_request);
	else
		snprintf(buf, n, "none");
	return buf;
}

/* The default and the recommendation side by side. */
void
msim_cli_tune_print(const msim_tune_result_t *r, const char *trace,
		    uint64_t cap)
{
	char a[64], b[64];
	const msim_tune_row_t *d = &r->def, *best = &r->best;
	const char *conf = r->fits ? (*best->params ? best->params
						    : "(defaults)")
				   : "(none fits)";
	printf("trace      %s\n", trace);
	printf("cap        %s (%" PRIu64 " bytes)\n",
	       msim_format_bytes(cap, a, sizeof(a)), cap);
	printf("searched   %zu settings of pytorch in %.2f s; %" PRId64
	       " ran out of memory\n\n", r->searched, r->wall_ms / 1e3,
	       r->n_oom);
	print_side("", "default", "recommended");
	if (*r->keys)
		print_side("setting", r->keys, r->keys);
	print_side("PYTORCH_CUDA_ALLOC_CONF", "(unset)", conf);
	if (!r->fits) {
		snprintf(a, sizeof(a), "%" PRId64, d->oom_request);
		print_side("OOM at request", a, "-");
		printf("\nno setting of the search fits under the cap\n");
		return;
	}
	print_side("peak reserved", fmt_bytes(d->peak_reserved, a, 64),
		   fmt_bytes(best->peak_reserved, b, 64));
	print_side("peak allocated", fmt_bytes(d->peak_allocated, a, 64),
		   fmt_bytes(best->peak_allocated, b, 64));
	snprintf(a, sizeof(a), "%.4f", d->frag);
	snprintf(b, sizeof(b), "%.4f", best->frag);
	print_side("fragmentation at peak", a, b);
	snprintf(a, sizeof(a), "%" PRId64, d->segments);
	snprintf(b, sizeof(b), "%" PRId64, best->segments);
	print_side("segments at peak", a, b);
	snprintf(a, sizeof(a), "%" PRId64, d->retries);
	snprintf(b, sizeof(b), "%" PRId64, best->retries);
	print_side("alloc retries", a, b);
	print_side("OOM", tune_oom(d->oom_request, a, sizeof(a)),
		   tune_oom(best->oom_request, b, sizeof(b)));
	snprintf(a, sizeof(a), "%" PRId64, r->def_id);
	snprintf(b, sizeof(b), "%" PRId64, r->best_id);
	if (!*r->store_err)
		print_side("run (in the database)", a, b);
	printf("\nexport PYTORCH_CUDA_ALLOC_CONF=\"%s\"\n", best->params);
}

/* One run of tune's JSON. */
static void
tune_json_row(const char *name, const msim_tune_row_t *r, int64_t id)
{
	printf(",\n  \"%s\": {\"alloc_conf\": ", name);
	msim_print_json_str(stdout, r->params);
	printf(", \"peak_reserved_bytes\": %" PRId64 ", "
	       "\"peak_allocated_bytes\": %" PRId64 ", \"frag_at_peak\": "
	       "%.6f, \"segments_at_peak\": %" PRId64 ", \"alloc_retries\": "
	       "%" PRId64 ", \"oom_request\": %" PRId64 ", \"run_id\": %"
	       PRId64 "}", r->peak_reserved, r->peak_allocated, r->frag,
	       r->segments, r->retries, r->oom_request, id);
}

void
msim_cli_tune_json(const msim_tune_result_t *r, const char *trace,
		   uint64_t cap, bool close)
{
	printf("{\n  \"trace\": ");
	msim_print_json_str(stdout, trace);
	printf(",\n  \"cap_bytes\": %" PRIu64 ",\n  \"searched\": %zu,\n"
	       "  \"search_seconds\": %.3f,\n  \"ran_out\": %" PRId64
	       ",\n  \"fits\": %s,\n  \"setting\": ", cap, r->searched,
	       r->wall_ms / 1e3, r->n_oom, r->fits ? "true" : "false");
	msim_print_json_str(stdout, r->keys);
	tune_json_row("default", &r->def, r->def_id);
	if (r->fits)
		tune_json_row("recommended", &r->best, r->best_id);
	else
		printf(",\n  \"recommended\": null");
	printf(",\n  \"tune_id\": %" PRId64, r->tune_id);
	if (close)
		printf("\n}\n");
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
		msim_cli_tune_json(&res, spec.trace, o.cap, true);
		if (*res.store_err)
			msim_cli_die("%s", res.store_err);
		return 0;
	}
	msim_cli_tune_print(&res, spec.trace, o.cap);
	if (*res.store_err) {
		fflush(stdout);
		msim_cli_die("%s", res.store_err);
	}
	printf("stored     tune %" PRId64 " in %s\n", res.tune_id, o.db);
	return 0;
}
