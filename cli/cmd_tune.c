/*
 * memsim tune: searches the pytorch policy's settings for the
 * PYTORCH_CUDA_ALLOC_CONF with the lowest peak reserved that does not run
 * out of memory under a cap.  The search is a sweep (lab/sweep.h) into a
 * scratch database; the default and the recommendation are then stored in
 * the user's database as the runs of one "tune" sweep.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "sim/error.h"
#include "sim/results.h"
#include "lab/sweep.h"
#include "sim/units.h"

/* The search space: what PyTorch users tune.  "0" is the default (off). */
static const char *const tune_grid[] = {
	"max_split_size_mb=none,64,128,256,512,1024",
	"garbage_collection_threshold=0,0.5,0.6,0.7,0.8,0.9",
	"roundup_power2_divisions=0,1,2,4,8,16",
};

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

typedef struct tune_row_s {
	char params[1024];
	int64_t peak_reserved, peak_allocated, retries, oom_request, ooms;
	int64_t device_allocs, segments;
	double frag;
	int found;
} tune_row_t;

/* Reads run id of db. */
static int
tune_read(msim_db_t *db, int64_t id, tune_row_t *out)
{
	msim_db_run_t r;
	memset(out, 0, sizeof(*out));
	int rc = msim_db_run_get(db, id, &r);
	if (rc)
		return rc;
	snprintf(out->params, sizeof(out->params), "%s", r.params);
	out->peak_reserved = r.peak_reserved_bytes;
	out->peak_allocated = r.peak_allocated_bytes;
	out->retries = r.num_alloc_retries;
	out->oom_request = r.oom_request;
	out->ooms = r.num_ooms;
	out->frag = r.frag_at_peak;
	out->device_allocs = r.num_device_alloc;
	out->segments = r.segments_peak;
	out->found = 1;
	msim_db_run_clear(&r);
	return 0;
}

/* Whether a is a better recommendation than b: a lower peak reserved,
 * then fewer retries, then fewer keys (a shorter setting). */
static int
tune_better(const tune_row_t *a, const tune_row_t *b)
{
	if (!b->found)
		return 1;
	if (a->peak_reserved != b->peak_reserved)
		return a->peak_reserved < b->peak_reserved;
	if (a->retries != b->retries)
		return a->retries < b->retries;
	return strlen(a->params) < strlen(b->params);
}

/* Reads the search's results: the best run that does not run out of
 * memory, the default's run and how many ran out. */
static int
tune_search(const char *scratch, tune_row_t *best, tune_row_t *def,
	    int64_t *n_oom)
{
	msim_db_t *s = NULL;
	char why[1024];
	int64_t *ids = NULL;
	size_t n = 0;
	memset(best, 0, sizeof(*best));
	memset(def, 0, sizeof(*def));
	*n_oom = 0;
	int rc = msim_db_open_readonly(scratch, &s, why, sizeof(why));
	if (!rc)
		rc = msim_db_list_runs(s, NULL, &ids, &n);
	for (size_t k = 0; !rc && k < n; k++) {
		tune_row_t t;
		if ((rc = tune_read(s, ids[k], &t)))
			break;
		if (!*t.params)
			*def = t;
		if (t.oom_request >= 0 || t.ooms > 0)
			++*n_oom;
		else if (tune_better(&t, best))
			*best = t;
	}
	free(ids);
	msim_db_close(s);
	return rc;
}

static void
remove_scratch(const char *dir, const char *db)
{
	char p[4200];
	unlink(db);
	snprintf(p, sizeof(p), "%s-wal", db);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", db);
	unlink(p);
	rmdir(dir);
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

int
msim_cmd_tune(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"cap", required_argument, NULL, 'C'},
		{"db", required_argument, NULL, 'd'},
		{"grid", required_argument, NULL, 'g'},
		{"jobs", required_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint64_t cap = 0;
	const char *dbpath = "memsim.db";
	const char *grid[16];
	size_t ngrid = 0;
	long jobs = sysconf(_SC_NPROCESSORS_ONLN);
	int c;
	for (size_t k = 0; k < 3; k++)
		grid[ngrid++] = tune_grid[k];
	while ((c = getopt_long(argc, argv, "d:g:j:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'C': cap = msim_cli_bytes("--cap", optarg); break;
		case 'd': dbpath = optarg; break;
		case 'g': {
			size_t klen = strcspn(optarg, "=:");
			size_t k = 0;
			/* A --grid replaces the axis of its key, or adds one. */
			for (; k < ngrid; k++)
				if (!strncmp(grid[k], optarg, klen) &&
				    grid[k][klen] == '=')
					break;
			if (k == ngrid && ngrid == 16)
				msim_cli_die("--grid: too many axes");
			grid[k] = optarg;
			if (k == ngrid)
				ngrid++;
			break;
		}
		case 'j':
			jobs = (long)msim_cli_uint("--jobs", optarg, 1, 4096);
			break;
		case 'h': usage_tune(stdout); return 0;
		default: usage_tune(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage_tune(stderr);
		return 2;
	}
	if (!cap)
		msim_cli_die("--cap BYTES is required (the memory the job may "
			     "use)");
	const char *trace = argv[optind];
	const char *traces[] = {trace};
	uint64_t caps[] = {cap};
	msim_sweep_spec_t spec = {
		.traces = traces, .ntraces = 1, .caps = caps, .ncaps = 1,
		.grid = grid, .ngrid = ngrid,
	};
	char why[2048];
	msim_sweep_t *sw;
	if (msim_sweep_plan(&spec, &sw, why, sizeof(why)))
		msim_cli_die("%s", why);

	/* Open the user's database first: a bad one fails before the work. */
	msim_db_t *db;
	if (msim_db_open(dbpath, &db, why, sizeof(why)))
		msim_cli_die("%s", why);

	const char *tmp = getenv("TMPDIR");
	char dir[4096], scratch[4200];
	snprintf(dir, sizeof(dir), "%s/memsim-tune-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		msim_cli_die("%s: %s", dir, strerror(errno));
	snprintf(scratch, sizeof(scratch), "%s/search.db", dir);
	msim_sweep_opts_t opts = {.db_path = scratch, .jobs = (int)jobs,
				  .kind = "tune"};
	msim_sweep_result_t res;
	if (msim_sweep_exec(sw, &opts, &res, why, sizeof(why))) {
		remove_scratch(dir, scratch);
		msim_cli_die("%s", why);
	}
	if (res.failed) {
		remove_scratch(dir, scratch);
		msim_cli_die("%s: %zu of %zu settings failed to run", trace,
			     res.failed, res.total);
	}
	tune_row_t best, sd;
	int64_t n_oom = 0;
	int rc = tune_search(scratch, &best, &sd, &n_oom);
	remove_scratch(dir, scratch);
	if (rc)
		msim_cli_die("%s: cannot read the search's results", scratch);

	/* Store the default and the recommendation as one tune sweep. */
	msim_sweep_row_t row = {
		.kind = "tune", .spec = msim_sweep_spec_text(sw),
		.spec_hash = msim_sweep_spec_hash(sw), .seed = -1,
		.shard_index = 1, .shard_count = 1,
		.settings = (int64_t)msim_sweep_total(sw),
	};
	/* A storage error (a full disk) is told after the search's figures. */
	int64_t tune_id, def_id = -1, best_id = -1;
	char serr[2048] = "";
	if (msim_db_sweep_open(db, &row, &tune_id))
		snprintf(serr, sizeof(serr), "%s", msim_db_errmsg(db));
	const msim_setting_t *def = NULL, *rec = NULL;
	for (size_t i = 0; i < msim_sweep_count(sw); i++) {
		const msim_setting_t *st = msim_sweep_setting(sw, i);
		if (!*st->params)
			def = st;
		if (best.found && !strcmp(st->params, best.params))
			rec = st;
	}
	int existed;
	if (!def)
		msim_cli_die("the search has no default");
	if (!*serr && (msim_setting_run(def, 0, db, MSIM_DB_SKIP, tune_id,
					&def_id, &existed, NULL, NULL, why,
					sizeof(why)) ||
		       (rec && msim_setting_run(rec, 0, db, MSIM_DB_SKIP,
						tune_id, &best_id, &existed,
						NULL, NULL, why, sizeof(why)))))
		snprintf(serr, sizeof(serr), "%s", why);
	tune_row_t d = sd, sb = best;
	if (!*serr && (tune_read(db, def_id, &d) ||
		       (rec && tune_read(db, best_id, &best))))
		snprintf(serr, sizeof(serr), "%s: cannot read the runs back",
			 dbpath);
	const char *conf = rec ? (*best.params ? best.params : "(defaults)")
			       : "(none fits)";
	if (!*serr && msim_db_sweep_set_result(db, tune_id, def_id, best_id,
					       rec ? best.params : NULL))
		snprintf(serr, sizeof(serr), "%s", msim_db_errmsg(db));
	if (*serr) { /* the search's own figures, no run ids */
		d = sd;
		best = sb;
	}

	char a[64], b[64];
	printf("trace      %s\n", trace);
	printf("cap        %s (%" PRIu64 " bytes)\n",
	       msim_format_bytes(cap, a, sizeof(a)), cap);
	printf("searched   %zu settings of pytorch in %.2f s; %" PRId64
	       " ran out of memory\n\n", res.total, res.wall_ms / 1e3, n_oom);
	print_side("", "default", "recommended");
	print_side("PYTORCH_CUDA_ALLOC_CONF", "(unset)", conf);
	if (rec) {
		print_side("peak reserved", fmt_bytes(d.peak_reserved, a, 64),
			   fmt_bytes(best.peak_reserved, b, 64));
		print_side("peak allocated", fmt_bytes(d.peak_allocated, a, 64),
			   fmt_bytes(best.peak_allocated, b, 64));
		snprintf(a, sizeof(a), "%.4f", d.frag);
		snprintf(b, sizeof(b), "%.4f", best.frag);
		print_side("fragmentation at peak", a, b);
		snprintf(a, sizeof(a), "%" PRId64, d.segments);
		snprintf(b, sizeof(b), "%" PRId64, best.segments);
		print_side("segments at peak", a, b);
		snprintf(a, sizeof(a), "%" PRId64, d.retries);
		snprintf(b, sizeof(b), "%" PRId64, best.retries);
		print_side("alloc retries", a, b);
		snprintf(a, sizeof(a), "%s", d.oom_request >= 0 ? "at request"
			 : "none");
		if (d.oom_request >= 0)
			snprintf(a, sizeof(a), "at request %" PRId64,
				 d.oom_request);
		print_side("OOM", a, "none");
		snprintf(a, sizeof(a), "%" PRId64, def_id);
		snprintf(b, sizeof(b), "%" PRId64, best_id);
		if (!*serr)
			print_side("run (in the database)", a, b);
		printf("\nexport PYTORCH_CUDA_ALLOC_CONF=\"%s\"\n", best.params);
	} else {
		snprintf(a, sizeof(a), "%" PRId64, d.oom_request);
		print_side("OOM at request", a, "-");
		printf("\nno setting of the search fits under the cap\n");
	}
	if (*serr) {
		fflush(stdout);
		msim_cli_die("%s", serr);
	}
	printf("stored     tune %" PRId64 " in %s\n", tune_id, dbpath);
	msim_db_close(db);
	msim_sweep_destroy(sw);
	return 0;
}
