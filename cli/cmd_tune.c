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
#include "lab/tune.h"
#include "sim/units.h"

static void
usage_tune(FILE *fp)
{
	fprintf(fp,
		"usage: memsim tune [OPTIONS] --cap BYTES TRACE\n"
		"\n"
		"Searches the pytorch policy's settings (max_split_size_mb x "
		"garbage_collection_\n"
		"threshold x roundup_power2_divisions, %d settings) and "
		"recommends the\n"
		"PYTORCH_CUDA_ALLOC_CONF with the lowest peak reserved that does "
		"not run out of\n"
		"memory under the cap (ties: fewer retries, then fewer keys).  "
		"Prints the\n"
		"default and the recommendation side by side and stores both in "
		"the database.\n"
		"\n"
		"options:\n"
		"      --cap BYTES     the per-process cap (required; 16GiB, "
		"12.5GB, ...)\n"
		"  -d, --db FILE       where to store both runs (default "
		"memsim.db)\n"
		"  -g, --grid K=V,...  replace one axis of the search "
		"(repeatable)\n"
		"  -j, --jobs N        worker processes (default: the number of "
		"cores)\n"
		"  -h, --help          this help\n", 6 * 6 * 6);
}

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
} tune_opts_t;

static const struct option tune_longopts[] = {
	{"cap", required_argument, NULL, 'C'},
	{"db", required_argument, NULL, 'd'},
	{"grid", required_argument, NULL, 'g'},
	{"jobs", required_argument, NULL, 'j'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* Reads the options into o.  Returns -1 to go on, else the exit status. */
static int
tune_parse(int argc, char **argv, tune_opts_t *o)
{
	int c;
	for (size_t k = 0; k < MSIM_TUNE_NGRID; k++)
		o->grid[o->ngrid++] = msim_tune_grid[k];
	while ((c = msim_cli_getopt(argc, argv, "d:g:j:h", tune_longopts)) !=
	       -1) {
		switch (c) {
		case 'C': o->cap = msim_cli_bytes("--cap", optarg); break;
		case 'd': o->db = optarg; break;
		case 'g':
			if (msim_tune_grid_set(o->grid, &o->ngrid, 16, optarg))
				msim_cli_die("--grid: too many axes");
			break;
		case 'j': o->jobs = msim_cli_jobs(optarg); break;
		case 'h': usage_tune(stdout); return 0;
		default: usage_tune(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage_tune(stderr);
		return 2;
	}
	if (!o->cap)
		msim_cli_die("--cap BYTES is required (the memory the job may "
			     "use)");
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

int
msim_cmd_tune(int argc, char **argv)
{
	tune_opts_t o = {.db = "memsim.db",
			 .jobs = sysconf(_SC_NPROCESSORS_ONLN)};
	int rc = tune_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	msim_tune_spec_t spec = {
		.trace = argv[optind], .cap = o.cap, .db_path = o.db,
		.grid = o.grid, .ngrid = o.ngrid, .jobs = (int)o.jobs,
	};
	msim_tune_result_t res;
	char why[2048];
	if (msim_tune_run(&spec, &res, why, sizeof(why)))
		msim_cli_die("%s", why);
	msim_cli_tune_print(&res, spec.trace, o.cap);
	if (*res.store_err) {
		fflush(stdout);
		msim_cli_die("%s", res.store_err);
	}
	printf("stored     tune %" PRId64 " in %s\n", res.tune_id, o.db);
	return 0;
}
