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
#include <stdbool.h>
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
	char key[2048];   /* the setting key */
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
	snprintf(out->key, sizeof(out->key), "%s",
		 r.setting_key ? r.setting_key : "");
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

static int
same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* The recommended setting (the best run's key) and the default beside
 * it: the same trace, model and strategies, the allocator's defaults. */
static void
tune_pick(const msim_sweep_t *sw, const tune_row_t *best,
	  const msim_setting_t **def_out, const msim_setting_t **rec_out)
{
	const msim_setting_t *def = NULL, *rec = NULL;
	for (size_t i = 0; best->found && i < msim_sweep_count(sw); i++) {
		const msim_setting_t *st = msim_sweep_setting(sw, i);
		if (!strcmp(st->key, best->key))
			rec = st;
	}
	for (size_t i = 0; i < msim_sweep_count(sw); i++) {
		const msim_setting_t *st = msim_sweep_setting(sw, i);
		if (*st->params)
			continue;
		if (!rec) {
			def = st;
			break;
		}
		if (same_str(st->model_spec, rec->model_spec) &&
		    same_str(st->strategy, rec->strategy) &&
		    st->cap == rec->cap &&
		    !strcmp(st->addresses, rec->addresses)) {
			def = st;
			break;
		}
	}
	*def_out = def;
	*rec_out = rec;
}

/* The keys of s that are not the allocator's (batch=8,checkpoint=...),
 * in the order given; "" when none. */
static void
tune_keys(const msim_setting_t *s, char *buf, size_t n)
{
	size_t k = 0;
	const char *p = s->conf;
	buf[0] = '\0';
	while (p && *p) {
		size_t len = strcspn(p, ",");
		size_t eq = strcspn(p, "=:");
		if (eq < len && p[eq] == '=' && k + len + 2 < n)
			k += (size_t)snprintf(buf + k, n - k, "%s%.*s",
					      k ? "," : "", (int)len, p);
		p += len + (p[len] == ',');
	}
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

/* A --grid replaces the axis of its key, or adds one. */
static void
tune_grid_set(tune_opts_t *o, const char *axis)
{
	size_t klen = strcspn(axis, "=:");
	size_t k = 0;
	for (; k < o->ngrid; k++)
		if (!strncmp(o->grid[k], axis, klen) &&
		    o->grid[k][klen] == '=')
			break;
	if (k == o->ngrid && o->ngrid == 16)
		msim_cli_die("--grid: too many axes");
	o->grid[k] = axis;
	if (k == o->ngrid)
		o->ngrid++;
}

/* Reads the options into o.  Returns -1 to go on, else the exit status. */
static int
tune_parse(int argc, char **argv, tune_opts_t *o)
{
	int c;
	for (size_t k = 0; k < 3; k++)
		o->grid[o->ngrid++] = tune_grid[k];
	while ((c = msim_cli_getopt(argc, argv, "d:g:j:h", tune_longopts)) !=
	       -1) {
		switch (c) {
		case 'C': o->cap = msim_cli_bytes("--cap", optarg); break;
		case 'd': o->db = optarg; break;
		case 'g': tune_grid_set(o, optarg); break;
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

/* Runs the search into a scratch database and reads it back. */
static void
tune_run_search(msim_sweep_t *sw, const tune_opts_t *o, const char *trace,
		msim_sweep_result_t *res, tune_row_t *best, tune_row_t *sd,
		int64_t *n_oom)
{
	char why[2048];
	const char *tmp = getenv("TMPDIR");
	char dir[4096], scratch[4200];
	snprintf(dir, sizeof(dir), "%s/memsim-tune-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		msim_cli_die("%s: %s", dir, strerror(errno));
	snprintf(scratch, sizeof(scratch), "%s/search.db", dir);
	msim_sweep_opts_t opts = {.db_path = scratch, .jobs = (int)o->jobs,
				  .kind = "tune"};
	if (msim_sweep_exec(sw, &opts, res, why, sizeof(why))) {
		remove_scratch(dir, scratch);
		msim_cli_die("%s", why);
	}
	if (res->failed) {
		remove_scratch(dir, scratch);
		msim_cli_die("%s: %zu of %zu settings failed to run", trace,
			     res->failed, res->total);
	}
	int rc = tune_search(scratch, best, sd, n_oom);
	remove_scratch(dir, scratch);
	if (rc)
		msim_cli_die("%s: cannot read the search's results", scratch);
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
static void
tune_print(const tune_row_t *d, const tune_row_t *best, int64_t def_id,
	   int64_t best_id, bool ids)
{
	char a[64], b[64];
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
	snprintf(a, sizeof(a), "%" PRId64, def_id);
	snprintf(b, sizeof(b), "%" PRId64, best_id);
	if (ids)
		print_side("run (in the database)", a, b);
	printf("\nexport PYTORCH_CUDA_ALLOC_CONF=\"%s\"\n", best->params);
}

/* Stores the default and the recommendation as the runs of one tune
 * sweep, with every key of the winning setting (the allocator's last) as
 * its result, and reads them back into d and best.  Returns "" or what
 * failed: a storage error (a full disk) is told after the figures. */
static void
tune_store(msim_db_t *db, const msim_sweep_t *sw, const char *dbpath,
	   const msim_setting_t *def, const msim_setting_t *rec,
	   const char *result, tune_row_t *d, tune_row_t *best,
	   int64_t *tune_id, int64_t *def_id, int64_t *best_id, char *serr,
	   size_t n)
{
	char why[2048];
	int existed;
	msim_sweep_row_t row = {
		.kind = "tune", .spec = msim_sweep_spec_text(sw),
		.spec_hash = msim_sweep_spec_hash(sw), .seed = -1,
		.shard_index = 1, .shard_count = 1,
		.settings = (int64_t)msim_sweep_total(sw),
	};
	serr[0] = '\0';
	if (msim_db_sweep_open(db, &row, tune_id)) {
		snprintf(serr, n, "%s", msim_db_errmsg(db));
		return;
	}
	if (msim_setting_run(def, 0, db, MSIM_DB_SKIP, *tune_id, def_id,
			     &existed, NULL, NULL, why, sizeof(why)) ||
	    (rec && msim_setting_run(rec, 0, db, MSIM_DB_SKIP, *tune_id,
				     best_id, &existed, NULL, NULL, why,
				     sizeof(why)))) {
		snprintf(serr, n, "%s", why);
		return;
	}
	if (tune_read(db, *def_id, d) ||
	    (rec && tune_read(db, *best_id, best))) {
		snprintf(serr, n, "%s: cannot read the runs back", dbpath);
		return;
	}
	if (msim_db_sweep_set_result(db, *tune_id, *def_id, *best_id,
				     rec ? result : NULL))
		snprintf(serr, n, "%s", msim_db_errmsg(db));
}

int
msim_cmd_tune(int argc, char **argv)
{
	tune_opts_t o = {.db = "memsim.db",
			 .jobs = sysconf(_SC_NPROCESSORS_ONLN)};
	int rc = tune_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	const char *trace = argv[optind], *dbpath = o.db;
	const char *traces[] = {trace};
	uint64_t caps[] = {o.cap};
	msim_sweep_spec_t spec = {
		.traces = traces, .ntraces = 1, .caps = caps, .ncaps = 1,
		.grid = o.grid, .ngrid = o.ngrid,
	};
	char why[2048];
	msim_sweep_t *sw;
	if (msim_sweep_plan(&spec, &sw, why, sizeof(why)))
		msim_cli_die("%s", why);

	/* Open the user's database first: a bad one fails before the work. */
	msim_db_t *db;
	if (msim_db_open(dbpath, &db, why, sizeof(why)))
		msim_cli_die("%s", why);
	msim_sweep_result_t res;
	tune_row_t best, sd;
	int64_t n_oom;
	tune_run_search(sw, &o, trace, &res, &best, &sd, &n_oom);

	const msim_setting_t *def, *rec;
	tune_pick(sw, &best, &def, &rec);
	if (!def)
		msim_cli_die("the search has no default");
	char keys[1024] = "", result[2200], serr[2048];
	if (rec)
		tune_keys(rec, keys, sizeof(keys));
	snprintf(result, sizeof(result), "%s%s%s", keys,
		 *keys && *best.params ? "," : "", best.params);
	int64_t tune_id = -1, def_id = -1, best_id = -1;
	tune_row_t d = sd, sb = best;
	tune_store(db, sw, dbpath, def, rec, result, &d, &best, &tune_id,
		   &def_id, &best_id, serr, sizeof(serr));
	if (*serr) { /* the search's own figures, no run ids */
		d = sd;
		best = sb;
	}
	const char *conf = rec ? (*best.params ? best.params : "(defaults)")
			       : "(none fits)";

	char a[64];
	printf("trace      %s\n", trace);
	printf("cap        %s (%" PRIu64 " bytes)\n",
	       msim_format_bytes(o.cap, a, sizeof(a)), o.cap);
	printf("searched   %zu settings of pytorch in %.2f s; %" PRId64
	       " ran out of memory\n\n", res.total, res.wall_ms / 1e3, n_oom);
	print_side("", "default", "recommended");
	if (*keys)
		print_side("setting", keys, keys);
	print_side("PYTORCH_CUDA_ALLOC_CONF", "(unset)", conf);
	if (rec) {
		tune_print(&d, &best, def_id, best_id, !*serr);
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
