/* Running the gnuplot scripts of plots/ on data exported from SQLite. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "plots/plot.h"
#include "policies/registry.h"
#include "sim/error.h"
#include "sim/units.h"

extern char **environ;

static bool
has_script(const char *dir)
{
	char path[4096];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/curve.gp", dir);
	return stat(path, &sb) == 0;
}

const char *
msim_plot_dir(const char *const *dirs)
{
	const char *env = getenv("MEMSIM_PLOTS_DIR");
	if (env && *env)
		return env;
	for (; dirs && *dirs; dirs++)
		if (has_script(*dirs))
			return *dirs;
	return NULL;
}

static const char *
plot_ext(const char *out)
{
	const char *dot = strrchr(out, '.');
	if (!dot)
		return NULL;
	if (!strcmp(dot, ".png") || !strcmp(dot, ".svg") || !strcmp(dot, ".pdf"))
		return dot + 1;
	return NULL;
}

/* Runs gnuplot -c script args...; returns 0 or MSIM_EIO with why. */
static int
run_gnuplot(const char *gnuplot, char *const argv[], char *why, size_t whylen)
{
	pid_t pid;
	int rc = posix_spawnp(&pid, gnuplot, NULL, NULL, argv, environ);
	if (rc) {
		snprintf(why, whylen, "cannot run %s: %s", gnuplot,
			 strerror(rc));
		return MSIM_EIO;
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			snprintf(why, whylen, "waiting for gnuplot: %s",
				 strerror(errno));
			return MSIM_EIO;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(why, whylen, "gnuplot failed (see its message above)");
		return MSIM_EIO;
	}
	return 0;
}

/* Whether gnuplot, out's extension and the scripts are there. */
static int
plot_ready(const char *plots_dir, const char *gnuplot, const char *out,
	   char *why, size_t whylen)
{
	if (!gnuplot || !*gnuplot || !strcmp(gnuplot, "no")) {
		snprintf(why, whylen, "gnuplot is not installed (Debian: "
			 "apt-get install gnuplot-nox); `memsim plot --export "
			 "FILE` writes the data, `memsim report` the figures");
		return MSIM_ENOTSUP;
	}
	if (!plot_ext(out)) {
		snprintf(why, whylen, "%s: the plot must end in .png, .svg or "
			 ".pdf", out);
		return MSIM_EINVAL;
	}
	if (!plots_dir) {
		snprintf(why, whylen, "cannot find the gnuplot scripts (set "
			 "MEMSIM_PLOTS_DIR)");
		return MSIM_ENOTFOUND;
	}
	return 0;
}

int
msim_plot_run(const char *plots_dir, const char *gnuplot, const char *name,
	      const char *data, const char *out, const char *title, char *why,
	      size_t whylen)
{
	int rc = plot_ready(plots_dir, gnuplot, out, why, whylen);
	if (rc)
		return rc;
	char script[4096];
	snprintf(script, sizeof(script), "%s/%s.gp", plots_dir, name);
	char *argv[] = {(char *)gnuplot, "-c", script, (char *)data, (char *)out,
			(char *)(title ? title : ""), NULL};
	return run_gnuplot(gnuplot, argv, why, whylen);
}

int
msim_plot_compare(const char *plots_dir, const char *gnuplot,
		  const char *summary, const char *timelines, const char *out,
		  const char *title, char *why, size_t whylen)
{
	int rc = plot_ready(plots_dir, gnuplot, out, why, whylen);
	if (rc)
		return rc;
	char script[4096];
	snprintf(script, sizeof(script), "%s/compare.gp", plots_dir);
	char *argv[] = {(char *)gnuplot, "-c", script, (char *)summary,
			(char *)timelines, (char *)out,
			(char *)(title ? title : ""), NULL};
	return run_gnuplot(gnuplot, argv, why, whylen);
}

/* ---------------------------------------------------------------- */
/* The figures of memsim plot                                        */

static const char *const kind_names[] = {"curve", "overlay", "sweep",
					 "segments"};

int
msim_plot_kind(const char *name)
{
	for (int k = 0; k < 4; k++)
		if (!strcmp(name, kind_names[k]))
			return k;
	return -1;
}

/* Appends id to a growing array. */
static int
push_id(int64_t **v, size_t *n, int64_t id)
{
	int64_t *nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv)
		return MSIM_ENOMEM;
	nv[(*n)++] = id;
	*v = nv;
	return 0;
}

/* Collects the first column of sql (one optional integer parameter). */
static int
query_ids(sqlite3 *db, const char *sql, int64_t arg, int64_t **runs_out,
	  size_t *n_out)
{
	sqlite3_stmt *q;
	*runs_out = NULL;
	*n_out = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		return MSIM_EDB;
	if (sqlite3_bind_parameter_count(q))
		sqlite3_bind_int64(q, 1, arg);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		if (push_id(runs_out, n_out, sqlite3_column_int64(q, 0))) {
			sqlite3_finalize(q);
			return MSIM_ENOMEM;
		}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE)
		return MSIM_EDB;
	return *n_out ? 0 : MSIM_ENOTFOUND;
}

int
msim_plot_sweep_runs(msim_db_t *mdb, int64_t sweep_id, int64_t **runs_out,
		     size_t *n_out)
{
	return query_ids(msim_db_handle(mdb),
			 "SELECT DISTINCT w.run_id FROM sweep_runs w JOIN sweeps"
			 " s ON s.id=w.sweep_id WHERE s.spec_hash=(SELECT"
			 " spec_hash FROM sweeps WHERE id=?1) AND s.kind=(SELECT"
			 " kind FROM sweeps WHERE id=?1) ORDER BY w.run_id",
			 sweep_id, runs_out, n_out);
}

int
msim_plot_default_runs(msim_db_t *mdb, int kind, int64_t **runs_out,
		       size_t *n_out)
{
	sqlite3 *db = msim_db_handle(mdb);
	switch (kind) {
	case MSIM_PLOT_OVERLAY:
		return query_ids(db, "SELECT id FROM runs WHERE trace_hash="
				 "(SELECT trace_hash FROM runs ORDER BY id DESC"
				 " LIMIT 1) ORDER BY id", 0, runs_out, n_out);
	case MSIM_PLOT_SWEEP: {
		int64_t *s;
		size_t n;
		int rc = query_ids(db, "SELECT id FROM sweeps ORDER BY id DESC"
				   " LIMIT 1", 0, &s, &n);
		if (rc)
			return rc;
		rc = msim_plot_sweep_runs(mdb, s[0], runs_out, n_out);
		free(s);
		return rc;
	}
	default:
		return query_ids(db, "SELECT id FROM runs ORDER BY id DESC"
				 " LIMIT 1", 0, runs_out, n_out);
	}
}

/* What a run is, for titles and labels. */
typedef struct run_desc_s {
	char trace[512];
	char policy[64];
	char params[1024];
	char hash[32];
	uint64_t cap;
} run_desc_t;

static int
run_describe(sqlite3 *db, int64_t id, run_desc_t *d, char *why, size_t whylen)
{
	sqlite3_stmt *q;
	memset(d, 0, sizeof(*d));
	if (sqlite3_prepare_v2(db, "SELECT trace_path, policy, params,"
			       " trace_hash, cap_bytes FROM runs WHERE id=?",
			       -1, &q, NULL) != SQLITE_OK) {
		snprintf(why, whylen, "%s", sqlite3_errmsg(db));
		return MSIM_EDB;
	}
	sqlite3_bind_int64(q, 1, id);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(q, 0);
		const char *slash = t ? strrchr(t, '/') : NULL;
		snprintf(d->trace, sizeof(d->trace), "%s",
			 slash ? slash + 1 : t ? t : "");
		snprintf(d->policy, sizeof(d->policy), "%s",
			 (const char *)sqlite3_column_text(q, 1));
		const char *pp = (const char *)sqlite3_column_text(q, 2);
		snprintf(d->params, sizeof(d->params), "%s", pp ? pp : "");
		snprintf(d->hash, sizeof(d->hash), "%s",
			 (const char *)sqlite3_column_text(q, 3));
		d->cap = (uint64_t)sqlite3_column_int64(q, 4);
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_ROW) {
		snprintf(why, whylen, "no run %" PRId64 " in the database", id);
		return MSIM_ENOTFOUND;
	}
	return 0;
}

/* "policy params, cap X" */
static void
run_label(const run_desc_t *d, int with_trace, char *buf, size_t n)
{
	char cap[32] = "";
	if (d->cap) {
		char b[24];
		snprintf(cap, sizeof(cap), ", cap %s",
			 msim_format_bytes(d->cap, b, sizeof(b)));
	}
	snprintf(buf, n, "%s%s%s%s%s", with_trace ? d->trace : "",
		 with_trace ? ": " : "", *d->params ? d->params : "defaults",
		 cap, "");
}

/* CSV-safe: the scripts split on commas, so a label keeps none. */
static void
label_clean(char *s)
{
	for (; *s; s++)
		if (*s == ',' || *s == '"' || *s == '\n')
			*s = *s == ',' ? ' ' : '\'';
}

/* Value of key in canonical params ("k:v,k:[a,b]"), else the default of
 * the policy's table, else "-". */
static void
param_value(const char *params, const char *policy, const char *key,
	    char *buf, size_t n)
{
	size_t klen = strlen(key);
	int depth = 0;
	const char *start = params;
	for (const char *p = params;; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if ((*p == ',' && depth == 0) || !*p) {
			if (!strncmp(start, key, klen) && start[klen] == ':') {
				int len = (int)(p - start - klen - 1);
				snprintf(buf, n, "%.*s", len, start + klen + 1);
				return;
			}
			if (!*p)
				break;
			start = p + 1;
		}
	}
	const msim_policy_ops_t *ops = msim_policy_find(policy);
	for (const msim_param_spec_t *s = ops ? ops->params : NULL;
	     s && s->name; s++)
		if (!strcmp(s->name, key)) {
			snprintf(buf, n, "%s", s->def);
			return;
		}
	snprintf(buf, n, "-");
}

static FILE *
open_csv(const char *path, char *why, size_t whylen)
{
	FILE *fp = fopen(path, "w");
	if (!fp)
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
	return fp;
}

static int
close_csv(FILE *fp, const char *path, char *why, size_t whylen)
{
	if (fclose(fp)) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return MSIM_EIO;
	}
	return 0;
}

static int
export_overlay(sqlite3 *db, const msim_plot_req_t *r, FILE *fp,
	       char *title, size_t titlelen, char *why, size_t whylen)
{
	run_desc_t d0, d;
	int rc;
	if ((rc = run_describe(db, r->runs[0], &d0, why, whylen)))
		return rc;
	int many_traces = 0;
	for (size_t i = 1; i < r->nruns; i++) {
		if ((rc = run_describe(db, r->runs[i], &d, why, whylen)))
			return rc;
		many_traces |= strcmp(d.hash, d0.hash) != 0;
	}
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db, "SELECT request, reserved_bytes,"
			       " allocated_bytes FROM timeline WHERE run_id=?"
			       " ORDER BY request", -1, &q, NULL) != SQLITE_OK) {
		snprintf(why, whylen, "%s", sqlite3_errmsg(db));
		return MSIM_EDB;
	}
	for (size_t i = 0; i < r->nruns; i++) {
		char label[2048];
		run_describe(db, r->runs[i], &d, why, whylen);
		run_label(&d, many_traces, label, sizeof(label));
		label_clean(label);
		fprintf(fp, "%srequest,run %" PRId64 " %s,allocated\n",
			i ? "\n\n" : "", r->runs[i], label);
		sqlite3_reset(q);
		sqlite3_bind_int64(q, 1, r->runs[i]);
		int rows = 0;
		while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
			fprintf(fp, "%lld,%lld,%lld\n",
				(long long)sqlite3_column_int64(q, 0),
				(long long)sqlite3_column_int64(q, 1),
				(long long)sqlite3_column_int64(q, 2));
			rows++;
		}
		if (rc != SQLITE_DONE || !rows) {
			snprintf(why, whylen, "run %" PRId64 ": %s", r->runs[i],
				 rows ? sqlite3_errmsg(db) : "no timeline");
			sqlite3_finalize(q);
			return rows ? MSIM_EDB : MSIM_ENOTFOUND;
		}
	}
	sqlite3_finalize(q);
	if (many_traces)
		snprintf(title, titlelen, "reserved bytes of %zu runs",
			 r->nruns);
	else
		snprintf(title, titlelen, "%s: reserved under %zu settings",
			 d0.trace, r->nruns);
	return 0;
}

/* A point of a sweep plot. */
typedef struct spoint_s {
	char x[128], series[1024];
	double y;
	int xi, si;
} spoint_t;

static const char *const y_cols[] = {
	"peak_reserved_bytes", "peak_allocated_bytes", "peak_requested_bytes",
	"frag_at_peak", "frag_mean", "ext_frag_max", "num_device_alloc",
	"num_device_free", "num_alloc_retries", "num_ooms", "requests",
	"wall_ms", NULL,
};

static int
cmp_xval(const char *a, const char *b)
{
	char *ea, *eb;
	double da = strtod(a, &ea), db = strtod(b, &eb);
	int na = *a && !*ea, nb = *b && !*eb;
	if (na && nb)
		return (da > db) - (da < db);
	if (na != nb)
		return na ? -1 : 1; /* numbers first, "none" after */
	return strcmp(a, b);
}

static const spoint_t *sort_pts;

static int
cmp_pt_x(const void *a, const void *b)
{
	return cmp_xval(sort_pts[*(const int *)a].x, sort_pts[*(const int *)b].x);
}

static int
export_sweep(sqlite3 *db, const msim_plot_req_t *r, FILE *fp, char *title,
	     size_t titlelen, char *why, size_t whylen)
{
	const char *xk = r->x_key ? r->x_key : "max_split_size_mb";
	const char *sk = r->series_key ? r->series_key
				       : "garbage_collection_threshold";
	const char *yc = r->y_col ? r->y_col : "peak_reserved_bytes";
	int ok = 0;
	for (int k = 0; y_cols[k]; k++)
		ok |= !strcmp(y_cols[k], yc);
	if (!ok) {
		snprintf(why, whylen, "--y %s: not one of peak_reserved_bytes, "
			 "peak_allocated_bytes, frag_at_peak, frag_mean, "
			 "num_alloc_retries, ...", yc);
		return MSIM_EINVAL;
	}
	int bytes = strstr(yc, "_bytes") != NULL;
	spoint_t *pt = calloc(r->nruns, sizeof(*pt));
	int *ord = calloc(r->nruns, sizeof(*ord));
	if (!pt || !ord) {
		free(pt);
		free(ord);
		return MSIM_ENOMEM;
	}
	char sql[256];
	snprintf(sql, sizeof(sql), "SELECT %s FROM runs WHERE id=?", yc);
	sqlite3_stmt *q;
	int rc = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
		snprintf(why, whylen, "%s", sqlite3_errmsg(db));
		rc = MSIM_EDB;
		goto out;
	}
	run_desc_t d0;
	int many_traces = 0;
	for (size_t i = 0; i < r->nruns; i++) {
		run_desc_t d;
		if ((rc = run_describe(db, r->runs[i], &d, why, whylen)))
			break;
		if (!i)
			d0 = d;
		many_traces |= strcmp(d.hash, d0.hash) != 0;
		param_value(d.params, d.policy, xk, pt[i].x, sizeof(pt[i].x));
		char sv[128];
		param_value(d.params, d.policy, sk, sv, sizeof(sv));
		snprintf(pt[i].series, sizeof(pt[i].series), "%s%s%s=%s",
			 d.trace, " ", sk, sv);
		sqlite3_reset(q);
		sqlite3_bind_int64(q, 1, r->runs[i]);
		if (sqlite3_step(q) == SQLITE_ROW)
			pt[i].y = sqlite3_column_double(q, 0);
		if (bytes)
			pt[i].y /= 1024.0 * 1024.0 * 1024.0;
		label_clean(pt[i].x);
		label_clean(pt[i].series);
	}
	sqlite3_finalize(q);
	if (rc)
		goto out;
	if (!many_traces) /* the trace goes into the title instead */
		for (size_t i = 0; i < r->nruns; i++)
			memmove(pt[i].series,
				pt[i].series + strlen(d0.trace) + 1,
				strlen(pt[i].series + strlen(d0.trace) + 1) + 1);
	/* Positions on x: distinct values in numeric order. */
	for (size_t i = 0; i < r->nruns; i++)
		ord[i] = (int)i;
	sort_pts = pt;
	qsort(ord, r->nruns, sizeof(*ord), cmp_pt_x);
	int xi = -1;
	for (size_t k = 0; k < r->nruns; k++) {
		if (!k || cmp_xval(pt[ord[k]].x, pt[ord[k - 1]].x))
			xi++;
		pt[ord[k]].xi = xi;
	}
	/* One block per line, in order of first appearance. */
	int nseries = 0;
	for (size_t i = 0; i < r->nruns; i++) {
		pt[i].si = -1;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(pt[j].series, pt[i].series)) {
				pt[i].si = pt[j].si;
				break;
			}
		if (pt[i].si < 0)
			pt[i].si = nseries++;
	}
	for (int s = 0; s < nseries; s++) {
		int first = 1;
		for (size_t k = 0; k < r->nruns; k++) {
			const spoint_t *p = &pt[ord[k]];
			if (p->si != s)
				continue;
			if (first)
				fprintf(fp, "%s%s,%s,label\n", s ? "\n\n" : "",
					xk, p->series);
			first = 0;
			fprintf(fp, "%d,%.9g,%s\n", p->xi, p->y, p->x);
		}
	}
	snprintf(title, titlelen, "%s%s%s against %s (%zu runs)",
		 many_traces ? "" : d0.trace, many_traces ? "" : ": ", yc, xk,
		 r->nruns);
out:
	free(pt);
	free(ord);
	return rc;
}

/* A live segment while replaying the segment events. */
typedef struct seg_s {
	uint64_t addr, size;
} seg_t;

static int
cmp_seg(const void *a, const void *b)
{
	const seg_t *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* Replays events [0, upto) into the live set; returns its size. */
static size_t
segs_replay(sqlite3_stmt *q, int64_t run_id, int64_t upto, seg_t *live,
	    uint64_t *reserved_max, int64_t *at_out, int64_t *request_out)
{
	size_t n = 0;
	uint64_t reserved = 0;
	int64_t seq = 0;
	sqlite3_reset(q);
	sqlite3_bind_int64(q, 1, run_id);
	while (sqlite3_step(q) == SQLITE_ROW && (upto < 0 || seq < upto)) {
		const char *act = (const char *)sqlite3_column_text(q, 0);
		uint64_t addr = (uint64_t)sqlite3_column_int64(q, 1);
		uint64_t size = (uint64_t)sqlite3_column_int64(q, 2);
		seq++;
		if (!act)
			continue;
		if (!strcmp(act, "segment_alloc") || !strcmp(act, "segment_map")) {
			if (live)
				live[n] = (seg_t){addr, size};
			n++;
			reserved += size;
		} else if (!strcmp(act, "segment_free") ||
			   !strcmp(act, "segment_unmap")) {
			reserved -= size <= reserved ? size : reserved;
			if (live) {
				for (size_t k = 0; k < n; k++)
					if (live[k].addr == addr) {
						live[k] = live[--n];
						break;
					}
			} else if (n) {
				n--;
			}
		}
		if (reserved_max && reserved > *reserved_max) {
			*reserved_max = reserved;
			*at_out = seq;
			*request_out = sqlite3_column_int64(q, 3);
		}
	}
	return n;
}

static int
export_segments(sqlite3 *db, const msim_plot_req_t *r, FILE *fp,
		char *title, size_t titlelen, char *why, size_t whylen)
{
	run_desc_t d;
	int rc;
	if ((rc = run_describe(db, r->runs[0], &d, why, whylen)))
		return rc;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db, "SELECT action, addr, size, request FROM"
			       " segment_events WHERE run_id=? ORDER BY seq",
			       -1, &q, NULL) != SQLITE_OK) {
		snprintf(why, whylen, "%s", sqlite3_errmsg(db));
		return MSIM_EDB;
	}
	/* First pass: the moment of the peak and how many segments at most. */
	uint64_t peak = 0;
	int64_t at = 0, request = 0;
	size_t most = segs_replay(q, r->runs[0], -1, NULL, &peak, &at,
				  &request);
	if (!peak) {
		sqlite3_finalize(q);
		snprintf(why, whylen, "run %" PRId64 " has no segment events "
			 "(was it stored by `memsim run --db`?)", r->runs[0]);
		return MSIM_ENOTFOUND;
	}
	/* Counting allocations bounds the live set at any moment. */
	seg_t *live = calloc(most + at + 1, sizeof(*live));
	if (!live) {
		sqlite3_finalize(q);
		return MSIM_ENOMEM;
	}
	size_t n = segs_replay(q, r->runs[0], at, live, NULL, NULL, NULL);
	sqlite3_finalize(q);
	qsort(live, n, sizeof(*live), cmp_seg);
	/* The blocks inside, where the run stored them (peak_blocks): one
	 * row per block, else one row per segment with the block columns
	 * empty. */
	sqlite3_stmt *bq = NULL;
	if (sqlite3_prepare_v2(db, "SELECT addr, size, state FROM peak_blocks"
			       " WHERE run_id=?1 AND addr>=?2 AND addr<?3"
			       " ORDER BY addr", -1, &bq, NULL) != SQLITE_OK)
		bq = NULL; /* a schema without peak_blocks: segments only */
	fprintf(fp, "rank,addr,size_mib,pool,offset_mib,block_mib,state\n");
	const double mib = 1024.0 * 1024.0;
	for (size_t k = 0; k < n; k++) {
		const char *pool = live[k].size == 2 * 1024 * 1024 ? "small"
								   : "large";
		int rows = 0;
		if (bq) {
			sqlite3_reset(bq);
			sqlite3_bind_int64(bq, 1, r->runs[0]);
			sqlite3_bind_int64(bq, 2, (sqlite3_int64)live[k].addr);
			sqlite3_bind_int64(bq, 3, (sqlite3_int64)(live[k].addr +
								  live[k].size));
			while (sqlite3_step(bq) == SQLITE_ROW) {
				uint64_t a = (uint64_t)sqlite3_column_int64(bq, 0);
				fprintf(fp, "%zu,%" PRIu64 ",%.6f,%s,%.6f,%.6f,%s\n",
					k, live[k].addr,
					(double)live[k].size / mib, pool,
					(double)(a - live[k].addr) / mib,
					(double)sqlite3_column_int64(bq, 1) / mib,
					(const char *)sqlite3_column_text(bq, 2));
				rows++;
			}
		}
		if (!rows)
			fprintf(fp, "%zu,%" PRIu64 ",%.6f,%s,,,\n", k,
				live[k].addr, (double)live[k].size / mib, pool);
	}
	sqlite3_finalize(bq);
	free(live);
	char b[32], label[2048];
	run_label(&d, 0, label, sizeof(label));
	snprintf(title, titlelen, "%.400s: %s %.1000s: %zu segments, %s reserved at the "
		 "peak (request %" PRId64 ")", d.trace, d.policy, label, n,
		 msim_format_bytes(peak, b, sizeof(b)), request);
	return 0;
}

int
msim_plot_export(msim_db_t *mdb, const msim_plot_req_t *r,
		 const char *csv_path, char *title_out, size_t titlelen,
		 char *why, size_t whylen)
{
	sqlite3 *db = msim_db_handle(mdb);
	char title[2048] = "";
	if (!r->nruns) {
		snprintf(why, whylen, "no run to plot");
		return MSIM_EINVAL;
	}
	int rc;
	if (r->kind == MSIM_PLOT_CURVE) {
		run_desc_t d;
		if ((rc = run_describe(db, r->runs[0], &d, why, whylen)))
			return rc;
		if ((rc = msim_db_export_timeline(mdb, r->runs[0], csv_path))) {
			snprintf(why, whylen, "%s", rc == MSIM_ENOTFOUND
				 ? "the run has no timeline" : msim_db_errmsg(mdb));
			return rc;
		}
		char label[2048];
		run_label(&d, 0, label, sizeof(label));
		snprintf(title, sizeof(title), "%.400s: %s %.1000s", d.trace, d.policy,
			 label);
	} else {
		FILE *fp = open_csv(csv_path, why, whylen);
		if (!fp)
			return MSIM_EIO;
		if (r->kind == MSIM_PLOT_OVERLAY)
			rc = export_overlay(db, r, fp, title, sizeof(title), why,
					    whylen);
		else if (r->kind == MSIM_PLOT_SWEEP)
			rc = export_sweep(db, r, fp, title, sizeof(title), why,
					  whylen);
		else if (r->kind == MSIM_PLOT_SEGMENTS)
			rc = export_segments(db, r, fp, title, sizeof(title),
					     why, whylen);
		else {
			snprintf(why, whylen, "unknown kind of plot");
			rc = MSIM_EINVAL;
		}
		int crc = close_csv(fp, csv_path, why, whylen);
		if (!rc)
			rc = crc;
		if (rc)
			return rc;
	}
	if (title_out)
		snprintf(title_out, titlelen, "%s", title);
	return 0;
}

int
msim_plot_draw(msim_db_t *db, const msim_plot_req_t *r, char *why,
	       size_t whylen)
{
	int rc = plot_ready(r->plots_dir, r->gnuplot, r->out, why, whylen);
	if (rc)
		return rc;
	if (r->size) {
		unsigned w, h;
		char tail;
		if (sscanf(r->size, "%ux%u%c", &w, &h, &tail) != 2 || w < 50 ||
		    h < 50 || w > 20000 || h > 20000) {
			snprintf(why, whylen, "--size %s: expected WxH pixels, "
				 "e.g. 1200x700", r->size);
			return MSIM_EINVAL;
		}
	}
	if (r->kind < 0 || r->kind > MSIM_PLOT_SEGMENTS) {
		snprintf(why, whylen, "unknown kind of plot");
		return MSIM_EINVAL;
	}
	char csv[] = "/tmp/memsim-plot-XXXXXX";
	int fd = mkstemp(csv);
	if (fd < 0) {
		snprintf(why, whylen, "cannot create a temporary file: %s",
			 strerror(errno));
		return MSIM_EIO;
	}
	close(fd);
	char title[2048];
	rc = msim_plot_export(db, r, csv, title, sizeof(title), why, whylen);
	if (rc) {
		unlink(csv);
		return rc;
	}
	char script[4096];
	snprintf(script, sizeof(script), "%s/%s.gp", r->plots_dir,
		 kind_names[r->kind]);
	char *argv[] = {(char *)r->gnuplot, "-c", script, csv, (char *)r->out,
			r->title ? (char *)r->title : title,
			(char *)(r->size ? r->size : ""), NULL};
	rc = run_gnuplot(r->gnuplot, argv, why, whylen);
	unlink(csv);
	return rc;
}
