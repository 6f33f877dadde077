/*
 * Tune (lab/tune.h): the search (a sweep into a scratch database), the
 * pick (lowest peak reserved without an OOM; ties: fewer retries, then
 * fewer keys) and the store of the default and the recommendation.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/print.h"
#include "lab/sweep.h"
#include "lab/tune.h"
#include "sim/error.h"
#include "sim/results.h"
#include "sim/units.h"

const char *const msim_tune_grid[MSIM_TUNE_NGRID] = {
	"max_split_size_mb=none,64,128,256,512,1024",
	"garbage_collection_threshold=0,0.5,0.6,0.7,0.8,0.9",
	"roundup_power2_divisions=0,1,2,4,8,16",
	"expandable_segments=false,true",
};

int
msim_tune_grid_set(const char **grid, size_t *ngrid, size_t max,
		   const char *axis)
{
	size_t klen = strcspn(axis, "=:");
	size_t k = 0;
	for (; k < *ngrid; k++)
		if (!strncmp(grid[k], axis, klen) && grid[k][klen] == '=')
			break;
	if (k == *ngrid && *ngrid == max)
		return -1;
	grid[k] = axis;
	if (k == *ngrid)
		++*ngrid;
	return 0;
}

/* Reads run id of db. */
static int
tune_read(msim_db_t *db, int64_t id, msim_tune_row_t *out)
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
tune_better(const msim_tune_row_t *a, const msim_tune_row_t *b)
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
tune_search(const char *scratch, msim_tune_row_t *best, msim_tune_row_t *def,
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
		msim_tune_row_t t;
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
	char p[4400];
	unlink(db);
	snprintf(p, sizeof(p), "%s-wal", db);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", db);
	unlink(p);
	rmdir(dir);
}

static int
same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* The recommended setting (the best run's key) and the default beside
 * it: the same trace, model and strategies, the allocator's defaults. */
static void
tune_pick(const msim_sweep_t *sw, const msim_tune_row_t *best,
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
		if (same_str(st->spec.model_spec, rec->spec.model_spec) &&
		    same_str(st->spec.strategy, rec->spec.strategy) &&
		    st->spec.cap == rec->spec.cap &&
		    !strcmp(st->spec.addresses, rec->spec.addresses)) {
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

/* Runs the search into a scratch database and reads it back. */
static int
tune_run_search(msim_sweep_t *sw, const msim_tune_spec_t *spec,
		msim_tune_result_t *res, msim_tune_row_t *sd, char *why,
		size_t whylen)
{
	const char *tmp = spec->tmpdir ? spec->tmpdir : getenv("TMPDIR");
	char dir[4096], scratch[4200];
	snprintf(dir, sizeof(dir), "%s/memsim-tune-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		snprintf(why, whylen, "%s: %s", dir, strerror(errno));
		return MSIM_EIO;
	}
	snprintf(scratch, sizeof(scratch), "%s/search.db", dir);
	msim_sweep_opts_t opts = {.db_path = scratch, .jobs = spec->jobs,
				  .kind = "tune", .progress = spec->progress,
				  .ctx = spec->ctx};
	msim_sweep_result_t sr;
	int rc = msim_sweep_exec(sw, &opts, &sr, why, whylen);
	if (!rc && sr.failed) {
		snprintf(why, whylen, "%s: %zu of %zu settings failed to run",
			 spec->trace, sr.failed, sr.total);
		rc = MSIM_EINVAL;
	}
	if (!rc && (rc = tune_search(scratch, &res->best, sd, &res->n_oom)))
		snprintf(why, whylen, "%s: cannot read the search's results",
			 scratch);
	remove_scratch(dir, scratch);
	res->searched = sr.total;
	res->wall_ms = sr.wall_ms;
	return rc;
}

/* Stores the default and the recommendation as the runs of one tune
 * sweep, with every key of the winning setting (the allocator's last) as
 * its result, and reads them back into res; what failed goes to
 * res->store_err. */
static void
tune_store(msim_db_t *db, const msim_sweep_t *sw, const char *dbpath,
	   const msim_setting_t *def, const msim_setting_t *rec,
	   msim_tune_result_t *res)
{
	char why[2048], result[2200];
	char *serr = res->store_err;
	size_t n = sizeof(res->store_err);
	int existed;
	snprintf(result, sizeof(result), "%s%s%s", res->keys,
		 *res->keys && *res->best.params ? "," : "", res->best.params);
	msim_sweep_row_t row = {
		.kind = "tune", .spec = msim_sweep_spec_text(sw),
		.spec_hash = msim_sweep_spec_hash(sw), .seed = -1,
		.shard_index = 1, .shard_count = 1,
		.settings = (int64_t)msim_sweep_total(sw),
	};
	if (msim_db_sweep_open(db, &row, &res->tune_id)) {
		snprintf(serr, n, "%s", msim_db_errmsg(db));
		return;
	}
	if (msim_setting_run(def, 0, db, MSIM_DB_SKIP, res->tune_id,
			     &res->def_id, &existed, NULL, NULL, why,
			     sizeof(why)) ||
	    (rec && msim_setting_run(rec, 0, db, MSIM_DB_SKIP, res->tune_id,
				     &res->best_id, &existed, NULL, NULL, why,
				     sizeof(why)))) {
		snprintf(serr, n, "%s", why);
		return;
	}
	if (tune_read(db, res->def_id, &res->def) ||
	    (rec && tune_read(db, res->best_id, &res->best))) {
		snprintf(serr, n, "%s: cannot read the runs back", dbpath);
		return;
	}
	if (msim_db_sweep_set_result(db, res->tune_id, res->def_id,
				     res->best_id, rec ? result : NULL))
		snprintf(serr, n, "%s", msim_db_errmsg(db));
}

/* The search, the pick and the store, with the sweep planned and the
 * user's database open. */
static int
tune_with(const msim_tune_spec_t *spec, msim_sweep_t *sw, msim_db_t *db,
	  msim_tune_result_t *res, char *why, size_t whylen)
{
	msim_tune_row_t sd;
	int rc = tune_run_search(sw, spec, res, &sd, why, whylen);
	if (rc)
		return rc;
	const msim_setting_t *def, *rec;
	tune_pick(sw, &res->best, &def, &rec);
	if (!def) {
		snprintf(why, whylen, "the search has no default");
		return MSIM_EINVAL;
	}
	res->fits = rec != NULL;
	if (rec)
		tune_keys(rec, res->keys, sizeof(res->keys));
	res->def = sd;
	msim_tune_row_t sb = res->best;
	tune_store(db, sw, spec->db_path, def, rec, res);
	if (*res->store_err) { /* the search's own figures, no run ids */
		res->def = sd;
		res->best = sb;
	}
	return 0;
}

int
msim_tune_run(const msim_tune_spec_t *spec, msim_tune_result_t *res,
	      char *why, size_t whylen)
{
	memset(res, 0, sizeof(*res));
	res->tune_id = res->def_id = res->best_id = -1;
	const char *traces[] = {spec->trace};
	uint64_t caps[] = {spec->cap};
	msim_sweep_spec_t ss = {
		.traces = traces, .ntraces = 1, .caps = caps, .ncaps = 1,
		.grid = spec->grid, .ngrid = spec->ngrid,
		.capacity = spec->capacity,
	};
	msim_sweep_t *sw;
	int rc = msim_sweep_plan(&ss, &sw, why, whylen);
	if (rc)
		return rc;
	/* Open the user's database first: a bad one fails before the work. */
	msim_db_t *db;
	if ((rc = msim_db_open(spec->db_path, &db, why, whylen))) {
		msim_sweep_destroy(sw);
		return rc;
	}
	rc = tune_with(spec, sw, db, res, why, whylen);
	msim_db_close(db);
	msim_sweep_destroy(sw);
	return rc;
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
msim_tune_print(const msim_tune_result_t *r, const char *trace,
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
	/* the default run has the trace's own settings, if it has any (a
	 * snapshot's or a recording's: job_snapconf) */
	print_side("PYTORCH_CUDA_ALLOC_CONF", *d->params ? d->params
							 : "(unset)", conf);
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
msim_tune_json(const msim_tune_result_t *r, const char *trace,
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
