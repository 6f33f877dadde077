/* Running the gnuplot scripts of plots/ on data read from the results store. */
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

const char *
msim_plot_dir_for(const char *installed, const char *src)
{
	static char rel[8192];
	const char *dirs[5] = {NULL};
	size_t n = 0;
	bool build_tree = false;
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len > 0) {
		exe[len] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			char cs[4200];
			struct stat sb;
			snprintf(cs, sizeof(cs), "%s/config.status", exe);
			build_tree = stat(cs, &sb) == 0;
			snprintf(rel, sizeof(rel), "%s/../share/%s/plots", exe,
				 PACKAGE);
		}
	}
	if (build_tree)
		dirs[n++] = src;
	if (rel[0])
		dirs[n++] = rel;
	dirs[n++] = installed;
	dirs[n++] = src;
	return msim_plot_dir(dirs);
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
msim_plot_check(const char *plots_dir, const char *gnuplot, const char *out,
		char *why, size_t whylen)
{
	return plot_ready(plots_dir, gnuplot, out, why, whylen);
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

int
msim_plot_sweep_runs(msim_db_t *db, int64_t sweep_id, int64_t **runs_out,
		     size_t *n_out)
{
	msim_db_select_t sel = {.sweep_id = sweep_id, .all_shards = 1};
	int rc = msim_db_list_runs(db, &sel, runs_out, n_out);
	return rc ? rc : *n_out ? 0 : MSIM_ENOTFOUND;
}

int
msim_plot_default_runs(msim_db_t *db, int kind, int64_t **runs_out,
		       size_t *n_out)
{
	int64_t id;
	int rc;
	*runs_out = NULL;
	*n_out = 0;
	if (kind == MSIM_PLOT_SWEEP) {
		if ((rc = msim_db_newest_sweep(db, &id)))
			return rc;
		return msim_plot_sweep_runs(db, id, runs_out, n_out);
	}
	if ((rc = msim_db_newest_run(db, &id)))
		return rc;
	if (kind == MSIM_PLOT_OVERLAY) {
		msim_db_run_t run;
		if ((rc = msim_db_run_get(db, id, &run)))
			return rc;
		msim_db_select_t sel = {.trace_hash = run.trace_hash};
		rc = msim_db_list_runs(db, &sel, runs_out, n_out);
		msim_db_run_clear(&run);
		return rc ? rc : *n_out ? 0 : MSIM_ENOTFOUND;
	}
	if (!(*runs_out = malloc(sizeof(**runs_out))))
		return MSIM_ENOMEM;
	(*runs_out)[0] = id;
	*n_out = 1;
	return 0;
}

/* What a run is, for titles and labels. */
typedef struct run_desc_s {
	char trace[512];
	char policy[64];
	char params[1024];
	char hash[32];
	/* The setting's other keys, "k=v,k=v": a recording's (its strategy
	 * "record:batch=8,..."), a model spec's ("model:arch=gpt2,...") and
	 * the strategies' ("dtype=bf16-amp"). */
	char keys[2048];
	uint64_t cap;
	double y; /* the figure a sweep plot shows */
} run_desc_t;

/* Describes run id; y_col (may be NULL) names the figure to read. */
static int
run_describe(msim_db_t *db, int64_t id, const char *y_col, run_desc_t *d,
	     char *why, size_t whylen)
{
	msim_db_run_t r;
	memset(d, 0, sizeof(*d));
	int rc = msim_db_run_get(db, id, &r);
	if (rc) {
		if (rc == MSIM_ENOTFOUND)
			snprintf(why, whylen, "no run %" PRId64 " in the "
				 "database", id);
		else
			snprintf(why, whylen, "%s", msim_db_errmsg(db));
		return rc;
	}
	const char *slash = strrchr(r.trace_path, '/');
	snprintf(d->trace, sizeof(d->trace), "%s",
		 slash ? slash + 1 : r.trace_path);
	snprintf(d->policy, sizeof(d->policy), "%s", r.policy);
	snprintf(d->params, sizeof(d->params), "%s", r.params);
	snprintf(d->hash, sizeof(d->hash), "%s", r.trace_hash);
	const char *st = r.strategy ? r.strategy : "";
	if (!strncmp(st, "record:", 7))
		st += 7;
	const char *model = !strncmp(r.trace_path, "model:", 6)
				    ? r.trace_path + 6 : "";
	snprintf(d->keys, sizeof(d->keys), "%s%s%s", model,
		 *model && *st ? "," : "", st);
	d->cap = r.cap_bytes;
	if (y_col)
		msim_db_run_figure(&r, y_col, &d->y);
	msim_db_run_clear(&r);
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

/* Value of key in a list "k<sep>v,k<sep>[a,b],..." into buf: 1 if there,
 * else 0. */
static int
list_value(const char *list, char sep, const char *key, char *buf, size_t n)
{
	size_t klen = strlen(key);
	int depth = 0;
	const char *start = list;
	for (const char *p = list;; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if ((*p == ',' && depth == 0) || !*p) {
			if (!strncmp(start, key, klen) && start[klen] == sep) {
				int len = (int)(p - start - klen - 1);
				snprintf(buf, n, "%.*s", len, start + klen + 1);
				return 1;
			}
			if (!*p)
				break;
			start = p + 1;
		}
	}
	return 0;
}

/* Value of key in canonical params ("k:v,k:[a,b]"), else the default of
 * the policy's table, else "-". */
static void
param_value(const char *params, const char *policy, const char *key,
	    char *buf, size_t n)
{
	if (list_value(params, ':', key, buf, n))
		return;
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

/* One line of an overlay's block: request,reserved,allocated. */
static int
overlay_row(const msim_sample_t *s, void *ctx)
{
	fprintf(ctx, "%" PRIu64 ",%" PRId64 ",%" PRId64 "\n", s->request,
		s->reserved, s->allocated);
	return 0;
}

static int
export_overlay(msim_db_t *db, const msim_plot_req_t *r, FILE *fp,
	       char *title, size_t titlelen, char *why, size_t whylen)
{
	run_desc_t d0, d;
	int rc;
	if ((rc = run_describe(db, r->runs[0], NULL, &d0, why, whylen)))
		return rc;
	int many_traces = 0;
	for (size_t i = 1; i < r->nruns; i++) {
		if ((rc = run_describe(db, r->runs[i], NULL, &d, why, whylen)))
			return rc;
		many_traces |= strcmp(d.hash, d0.hash) != 0;
	}
	for (size_t i = 0; i < r->nruns; i++) {
		char label[2048];
		run_describe(db, r->runs[i], NULL, &d, why, whylen);
		run_label(&d, many_traces, label, sizeof(label));
		label_clean(label);
		fprintf(fp, "%srequest,run %" PRId64 " %s,allocated\n",
			i ? "\n\n" : "", r->runs[i], label);
		rc = msim_db_run_timeline(db, r->runs[i], overlay_row, fp);
		if (rc) {
			snprintf(why, whylen, "run %" PRId64 ": %s", r->runs[i],
				 rc == MSIM_ENOTFOUND ? "no timeline"
						      : msim_db_errmsg(db));
			return rc;
		}
	}
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

/* The value of a setting key of run d: policy, cap, a recording's,
 * model's or strategy's key, else an allocator parameter (its default
 * when the run did not set it). */
static void
setting_value(const run_desc_t *d, const char *key, char *buf, size_t n)
{
	if (!strcmp(key, "policy"))
		snprintf(buf, n, "%s", d->policy);
	else if (!strcmp(key, "cap"))
		snprintf(buf, n, "%" PRIu64, d->cap);
	else if (!list_value(d->keys, '=', key, buf, n))
		param_value(d->params, d->policy, key, buf, n);
}

#define SWEEP_MAXKEYS 64

/* The names of list "k<sep>v,..." not in names yet, appended (at most
 * SWEEP_MAXKEYS); alloc marks those of an allocator's list. */
static void
sweep_names(const char *list, char sep, char (*names)[64], bool *alloc,
	    size_t *nn, bool is_alloc)
{
	int depth = 0;
	const char *start = list;
	for (const char *p = list; *list; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if (!((*p == ',' && depth == 0) || !*p))
			continue;
		const char *e = memchr(start, sep, (size_t)(p - start));
		size_t len = e ? (size_t)(e - start) : 0;
		bool seen = !len || len >= 64;
		for (size_t i = 0; i < *nn && !seen; i++)
			seen = strlen(names[i]) == len &&
			       !strncmp(names[i], start, len);
		if (!seen && *nn < SWEEP_MAXKEYS) {
			snprintf(names[*nn], 64, "%.*s", (int)len, start);
			alloc[(*nn)++] = is_alloc;
		}
		if (!*p)
			break;
		start = p + 1;
	}
}

/*
 * The keys whose value differs between the runs d[0..n), in order: a
 * recording's, model's or strategy's keys, the allocator's, cap, policy.
 * Returns how many (into names, alloc: whether an allocator's).
 */
static size_t
sweep_varying(const run_desc_t *d, size_t n, char (*names)[64], bool *alloc)
{
	char all[SWEEP_MAXKEYS][64];
	bool is_alloc[SWEEP_MAXKEYS];
	size_t na = 0, nv = 0;
	for (size_t i = 0; i < n; i++)
		sweep_names(d[i].keys, '=', all, is_alloc, &na, false);
	/* the allocators' keys in their tables' order */
	for (size_t i = 0; i < n; i++) {
		const msim_policy_ops_t *ops = msim_policy_find(d[i].policy);
		for (const msim_param_spec_t *p = ops ? ops->params : NULL;
		     p && p->name; p++) {
			char one[80];
			snprintf(one, sizeof(one), "%s:", p->name);
			sweep_names(one, ':', all, is_alloc, &na, true);
		}
	}
	sweep_names("cap=,policy=", '=', all, is_alloc, &na, false);
	for (size_t k = 0; k < na; k++) {
		char v0[128], v[128];
		setting_value(&d[0], all[k], v0, sizeof(v0));
		bool varies = false;
		for (size_t i = 1; i < n && !varies; i++) {
			setting_value(&d[i], all[k], v, sizeof(v));
			varies = strcmp(v, v0) != 0;
		}
		if (varies) {
			memcpy(names[nv], all[k], 64);
			alloc[nv++] = is_alloc[k];
		}
	}
	return nv;
}

/* A line's name: the value of key sk (given), else the run's other
 * varying keys but x ("batch=8,expandable_segments:True"), the trace's
 * name first when the runs' traces differ otherwise than by them. */
static void
sweep_series(const run_desc_t *d, const char *xk, const char *sk,
	     char (*vary)[64], const bool *alloc, size_t nv, bool trace,
	     char *buf, size_t n)
{
	char v[128];
	size_t k = 0;
	buf[0] = '\0';
	if (trace && k < n)
		k += (size_t)snprintf(buf + k, n - k, "%s ", d->trace);
	if (sk) {
		bool is_alloc = false;
		for (size_t i = 0; i < nv; i++)
			is_alloc |= !strcmp(vary[i], sk) && alloc[i];
		setting_value(d, sk, v, sizeof(v));
		if (k < n)
			snprintf(buf + k, n - k, "%s%c%s", sk,
				 is_alloc ? ':' : '=', v);
		return;
	}
	size_t k0 = k;
	for (size_t i = 0; i < nv && k < n; i++) {
		if (!strcmp(vary[i], xk))
			continue;
		setting_value(d, vary[i], v, sizeof(v));
		if (!strcmp(vary[i], "cap")) {
			char b[24];
			msim_format_bytes(d->cap, b, sizeof(b));
			snprintf(v, sizeof(v), "%s", d->cap ? b : "none");
		}
		k += (size_t)snprintf(buf + k, n - k, "%s%s%c%s",
				      k > k0 ? " " : "", vary[i],
				      alloc[i] ? ':' : '=', v);
	}
	if (k == k0 && k < n)
		snprintf(buf + k, n - k, "%s", *d->params ? d->params
							  : "defaults");
}

static int
export_sweep(msim_db_t *db, const msim_plot_req_t *r, FILE *fp, char *title,
	     size_t titlelen, char *why, size_t whylen)
{
	const char *yc = r->y_col ? r->y_col : "peak_reserved_bytes";
	int ok = 0;
	for (int k = 0; msim_db_run_figures[k]; k++)
		ok |= !strcmp(msim_db_run_figures[k], yc);
	if (!ok) {
		snprintf(why, whylen, "--y %s: not one of peak_reserved_bytes, "
			 "peak_allocated_bytes, frag_at_peak, frag_mean, "
			 "num_alloc_retries, ...", yc);
		return MSIM_EINVAL;
	}
	int bytes = strstr(yc, "_bytes") != NULL;
	spoint_t *pt = calloc(r->nruns, sizeof(*pt));
	int *ord = calloc(r->nruns, sizeof(*ord));
	run_desc_t *d = calloc(r->nruns, sizeof(*d));
	char (*vary)[64] = calloc(SWEEP_MAXKEYS, 64);
	if (!pt || !ord || !d || !vary) {
		free(pt);
		free(ord);
		free(d);
		free(vary);
		return MSIM_ENOMEM;
	}
	int rc = 0;
	bool many_traces = false, keyed = true;
	for (size_t i = 0; i < r->nruns && !rc; i++) {
		rc = run_describe(db, r->runs[i], yc, &d[i], why, whylen);
		many_traces |= !rc && strcmp(d[i].hash, d[0].hash) != 0;
		keyed &= !rc && d[i].keys[0];
	}
	if (rc)
		goto out;
	bool alloc[SWEEP_MAXKEYS];
	size_t nv = sweep_varying(d, r->nruns, vary, alloc);
	/* x: the key asked for, else the first that varies. */
	const char *xk = r->x_key ? r->x_key : nv ? vary[0]
						   : "max_split_size_mb";
	/* A recording's name is its hash, a model's its whole spec: their
	 * keys say what they are.  Other traces go by their names. */
	bool trace_names = many_traces && !keyed;
	for (size_t i = 0; i < r->nruns; i++) {
		setting_value(&d[i], xk, pt[i].x, sizeof(pt[i].x));
		sweep_series(&d[i], xk, r->series_key, vary, alloc, nv,
			     trace_names, pt[i].series, sizeof(pt[i].series));
		pt[i].y = d[i].y;
		if (bytes)
			pt[i].y /= 1024.0 * 1024.0 * 1024.0;
		label_clean(pt[i].x);
		label_clean(pt[i].series);
	}
	if (r->x_key && nv) {
		bool swept = false;
		for (size_t k = 0; k < nv; k++)
			swept |= !strcmp(vary[k], xk);
		if (!swept) {
			size_t k = (size_t)snprintf(why, whylen, "--x %s: not "
						    "swept in these runs (what "
						    "varies:", xk);
			for (size_t j = 0; j < nv && k < whylen; j++)
				k += (size_t)snprintf(why + k, whylen - k,
						      " %s", vary[j]);
			if (k < whylen)
				snprintf(why + k, whylen - k, ")");
			rc = MSIM_EINVAL;
			goto out;
		}
	}
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
		 trace_names || keyed ? "" : d[0].trace,
		 trace_names || keyed ? "" : ": ", yc, xk, r->nruns);
out:
	free(pt);
	free(ord);
	free(d);
	free(vary);
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

/* Replaying the segment events up to a point: the live segments (when
 * live is given), the reserved bytes and when they peaked. */
typedef struct segs_replay_s {
	int64_t upto;          /* events to replay; -1 all */
	seg_t *live;           /* NULL: count only */
	size_t n;              /* live segments */
	uint64_t reserved, peak;
	int64_t seq, at, request; /* events seen; the peak's event, request */
} segs_replay_t;

static int
segs_event(const msim_seg_event_t *ev, void *ctx)
{
	segs_replay_t *x = ctx;
	if (x->upto >= 0 && x->seq >= x->upto)
		return 1; /* far enough */
	x->seq++;
	if (ev->action == MSIM_SEG_ALLOC || ev->action == MSIM_SEG_MAP) {
		if (x->live)
			x->live[x->n] = (seg_t){ev->addr, ev->size};
		x->n++;
		x->reserved += ev->size;
	} else if (ev->action == MSIM_SEG_FREE ||
		   ev->action == MSIM_SEG_UNMAP) {
		x->reserved -= ev->size <= x->reserved ? ev->size : x->reserved;
		if (x->live) {
			for (size_t k = 0; k < x->n; k++)
				if (x->live[k].addr == ev->addr) {
					x->live[k] = x->live[--x->n];
					break;
				}
		} else if (x->n) {
			x->n--;
		}
	}
	if (x->reserved > x->peak) {
		x->peak = x->reserved;
		x->at = x->seq;
		x->request = (int64_t)ev->request;
	}
	return 0;
}

/* Writes the rows of the segments of live (sorted by address) with the
 * blocks inside each, where the run stored them (peak_blocks): one row per
 * block, else one row per segment with the block columns empty. */
static void
segs_write(FILE *fp, const seg_t *live, size_t n, const msim_block_t *b,
	   size_t nb)
{
	static const char *const states[] = {"allocated", "free", "pending"};
	const double mib = 1024.0 * 1024.0;
	fprintf(fp, "rank,addr,size_mib,pool,offset_mib,block_mib,state\n");
	size_t j = 0;
	for (size_t k = 0; k < n; k++) {
		const char *pool = live[k].size == 2 * 1024 * 1024 ? "small"
								   : "large";
		uint64_t end = live[k].addr + live[k].size;
		int rows = 0;
		while (j < nb && b[j].addr < live[k].addr)
			j++;
		for (size_t i = j; i < nb && b[i].addr < end; i++, rows++)
			fprintf(fp, "%zu,%" PRIu64 ",%.6f,%s,%.6f,%.6f,%s\n", k,
				live[k].addr, (double)live[k].size / mib, pool,
				(double)(b[i].addr - live[k].addr) / mib,
				(double)b[i].size / mib, states[b[i].state % 3]);
		if (!rows)
			fprintf(fp, "%zu,%" PRIu64 ",%.6f,%s,,,\n", k,
				live[k].addr, (double)live[k].size / mib, pool);
	}
}

static int
export_segments(msim_db_t *db, const msim_plot_req_t *r, FILE *fp,
		char *title, size_t titlelen, char *why, size_t whylen)
{
	run_desc_t d;
	int rc;
	if ((rc = run_describe(db, r->runs[0], NULL, &d, why, whylen)))
		return rc;
	/* First pass: the moment of the peak and how many segments at most. */
	segs_replay_t x = {.upto = -1};
	if ((rc = msim_db_run_events(db, r->runs[0], segs_event, &x))) {
		snprintf(why, whylen, "%s", msim_db_errmsg(db));
		return rc;
	}
	if (!x.peak) {
		snprintf(why, whylen, "run %" PRId64 " has no segment events "
			 "(was it stored by `memsim run --db`?)", r->runs[0]);
		return MSIM_ENOTFOUND;
	}
	/* Counting allocations bounds the live set at any moment. */
	segs_replay_t y = {.upto = x.at};
	if (!(y.live = calloc(x.n + (size_t)x.at + 1, sizeof(*y.live))))
		return MSIM_ENOMEM;
	rc = msim_db_run_events(db, r->runs[0], segs_event, &y);
	msim_block_t *blocks = NULL;
	size_t nb = 0;
	if (rc < 0 || (rc = msim_db_run_peak_blocks(db, r->runs[0], &blocks,
						      &nb))) {
		snprintf(why, whylen, "%s", msim_db_errmsg(db));
		free(y.live);
		return rc;
	}
	qsort(y.live, y.n, sizeof(*y.live), cmp_seg);
	segs_write(fp, y.live, y.n, blocks, nb);
	free(blocks);
	free(y.live);
	char b[32], label[2048];
	run_label(&d, 0, label, sizeof(label));
	snprintf(title, titlelen, "%.400s: %s %.1000s: %zu segments, %s reserved at the "
		 "peak (request %" PRId64 ")", d.trace, d.policy, label, y.n,
		 msim_format_bytes(x.peak, b, sizeof(b)), x.request);
	return 0;
}

int
msim_plot_export(msim_db_t *mdb, const msim_plot_req_t *r,
		 const char *csv_path, char *title_out, size_t titlelen,
		 char *why, size_t whylen)
{
	msim_db_t *db = mdb;
	char title[2048] = "";
	if (!r->nruns) {
		snprintf(why, whylen, "no run to plot");
		return MSIM_EINVAL;
	}
	int rc;
	if (r->kind == MSIM_PLOT_CURVE) {
		run_desc_t d;
		if ((rc = run_describe(db, r->runs[0], NULL, &d, why, whylen)))
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
	/* A curve: the run's cap and where a partial history begins
	 * (run_meta history_start), drawn as lines. */
	char cap[32] = "", start[32] = "";
	if (r->kind == MSIM_PLOT_CURVE) {
		run_desc_t d;
		if (!run_describe(db, r->runs[0], NULL, &d, why, whylen) &&
		    d.cap)
			snprintf(cap, sizeof(cap), "%" PRIu64, d.cap);
		if (msim_db_run_meta_get(db, r->runs[0], "history_start", start,
					 sizeof(start)))
			start[0] = '\0';
	}
	char *argv[] = {(char *)r->gnuplot, "-c", script, csv, (char *)r->out,
			r->title ? (char *)r->title : title,
			(char *)(r->size ? r->size : ""), cap, start, NULL};
	rc = run_gnuplot(r->gnuplot, argv, why, whylen);
	unlink(csv);
	return rc;
}
