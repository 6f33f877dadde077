/*
 * Compare (lab/compare.h): the jobs of one trace under several policies,
 * and the plot's two data files (a summary row a policy; each policy's
 * reserved bytes over the requests), temporary until plotted.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/compare.h"
#include "lab/print.h"
#include "plots/plot.h"
#include "policies/registry.h"
#include "sim/device.h"
#include "sim/error.h"
#include "sim/units.h"

/* Writes one policy's block of the timelines file. */
static void
write_timeline(FILE *fp, const char *name, const msim_timeline_t *tl,
	       bool first)
{
	if (!first)
		fprintf(fp, "\n\n");
	fprintf(fp, "request,%s\n", name);
	for (size_t i = 0; i < tl->n; i++)
		fprintf(fp, "%" PRIu64 ",%" PRId64 "\n", tl->v[i].request,
			tl->v[i].reserved);
}

static void
write_summary(FILE *fp, const msim_compare_row_t *row)
{
	fprintf(fp, "%s,%" PRId64 ",%" PRId64 ",%.6f,%" PRId64 ",%.3f\n",
		row->policy, row->st.reserved_bytes[0].peak,
		row->st.allocated_bytes[0].peak, row->sum.frag_at_peak,
		row->st.num_device_alloc + row->st.num_device_free,
		row->time_ms);
}

/* One pick's row: the job memsim run --policy P --alloc-conf C makes. */
static int
compare_one(const msim_compare_spec_t *s, size_t i, msim_compare_t *c,
	    FILE *tl_fp, msim_job_err_t *err, const char **who)
{
	msim_compare_row_t *row = &c->rows[i];
	msim_job_spec_t spec = {
		.trace = s->trace, .policy = s->picks[i].policy,
		.conf = s->picks[i].conf, .cap = s->cap,
		.fraction = s->fraction, .capacity = s->capacity,
		.context = s->context, .prefetch = true, .timemodel = s->timemodel,
		.calibration = s->calibration, .defaults = s->defaults,
	};
	msim_job_t *job = NULL;
	*who = s->picks[i].policy;
	int rc = msim_job_open(&spec, s->db != NULL, &job, err);
	if (!rc)
		rc = msim_job_run(job, err);
	if (rc) {
		msim_job_destroy(job);
		return rc;
	}
	const msim_job_result_t *res = msim_job_result(job);
	row->policy = s->picks[i].policy;
	row->sum = res->sum;
	row->st = res->st;
	row->time_ms = res->devtime.us / 1e3;
	snprintf(row->canon, sizeof(row->canon), "%s", res->params);
	snprintf(row->settings, sizeof(row->settings), "%s",
		 res->settings_note);
	snprintf(row->capnote, sizeof(row->capnote), "%s",
		 res->capacity_note);
	c->cap = res->cap_bytes;
	row->run_id = -1;
	int existed;
	*who = NULL;
	if (s->db)
		rc = msim_job_store(job, s->db, MSIM_DB_REPLACE, 0,
				    &row->run_id, &existed, err);
	if (!rc && tl_fp)
		write_timeline(tl_fp, row->policy,
			       msim_sim_timeline(msim_job_sim(job)), i == 0);
	msim_job_destroy(job);
	return rc;
}

/* A temporary file for the plot's data, its path into path. */
static FILE *
compare_tmp(char *path, size_t n, const char *what)
{
	snprintf(path, n, "/tmp/memsim-cmp-%s-XXXXXX", what);
	int fd = mkstemp(path);
	FILE *fp = fd < 0 ? NULL : fdopen(fd, "w");
	if (!fp && fd >= 0)
		close(fd);
	if (!fp && fd < 0)
		path[0] = '\0';
	return fp;
}

int
msim_compare_run(const msim_compare_spec_t *spec, msim_compare_t *out,
		 msim_job_err_t *err, const char **who)
{
	memset(out, 0, sizeof(*out));
	memset(err, 0, sizeof(*err));
	*who = NULL;
	FILE *sum_fp = NULL, *tl_fp = NULL;
	int rc = 0;
	if (!(out->rows = calloc(spec->npicks + 1, sizeof(*out->rows)))) {
		err->part = MSIM_JOB_ERUN;
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return MSIM_ENOMEM;
	}
	if (spec->plot &&
	    (!(sum_fp = compare_tmp(out->sum_csv, sizeof(out->sum_csv),
				    "sum")) ||
	     !(tl_fp = compare_tmp(out->tl_csv, sizeof(out->tl_csv), "tl")))) {
		err->part = MSIM_JOB_ERUN;
		snprintf(err->msg, sizeof(err->msg), "cannot create a "
			 "temporary file: %s", strerror(errno));
		rc = MSIM_EIO;
	}
	for (size_t i = 0; !rc && i < spec->npicks; i++) {
		rc = compare_one(spec, i, out, tl_fp, err, who);
		out->n += !rc;
		if (!rc && sum_fp)
			write_summary(sum_fp, &out->rows[i]);
	}
	if ((sum_fp && fclose(sum_fp)) || (tl_fp && fclose(tl_fp))) {
		if (!rc) {
			err->part = MSIM_JOB_ERUN;
			snprintf(err->msg, sizeof(err->msg), "writing the plot "
				 "data: %s", strerror(errno));
			rc = MSIM_EIO;
		}
	}
	if (rc)
		msim_compare_clear(out);
	return rc;
}

int
msim_compare_plot(msim_compare_t *c, const char *plots_dir,
		  const char *gnuplot, const char *path, const char *title,
		  char *why, size_t whylen)
{
	if (!c->sum_csv[0] || !c->tl_csv[0]) {
		snprintf(why, whylen, "the comparison kept no plot data");
		return MSIM_EINVAL;
	}
	int rc = msim_plot_compare(plots_dir, gnuplot, c->sum_csv, c->tl_csv,
				   path, title, why, whylen);
	unlink(c->sum_csv);
	unlink(c->tl_csv);
	c->sum_csv[0] = c->tl_csv[0] = '\0';
	return rc;
}

void
msim_compare_clear(msim_compare_t *c)
{
	if (c->sum_csv[0])
		unlink(c->sum_csv);
	if (c->tl_csv[0])
		unlink(c->tl_csv);
	free(c->rows);
	memset(c, 0, sizeof(*c));
}

int
msim_compare_pick_policies(const char *list, msim_compare_pick_t *rows,
			   size_t max, size_t *n_out, char *why, size_t whylen)
{
	size_t n = 0;
	*n_out = 0;
	if (!list) {
		for (const msim_policy_ops_t *const *p = msim_policy_list();
		     *p && n < max; p++)
			rows[n++] = (msim_compare_pick_t){.policy = (*p)->name};
		*n_out = n;
		return 0;
	}
	char *copy = strdup(list), *save = NULL;
	if (!copy)
		return MSIM_ENOMEM;
	int rc = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok && !rc;
	     tok = strtok_r(NULL, ",", &save)) {
		const msim_policy_ops_t *ops = msim_policy_find(tok);
		if (!ops) {
			snprintf(why, whylen, "unknown policy '%s' (see "
				 "`memsim policies`)", tok);
			rc = MSIM_EINVAL;
		} else if (n == max) {
			snprintf(why, whylen, "at most %zu", max);
			rc = MSIM_EINVAL;
		} else {
			rows[n++] = (msim_compare_pick_t){.policy = ops->name};
		}
	}
	free(copy);
	if (!rc && n == 0) {
		snprintf(why, whylen, "no policy named");
		rc = MSIM_EINVAL;
	}
	*n_out = n;
	return rc;
}

int
msim_compare_pick_confs(msim_compare_pick_t *rows, size_t n,
			const char *const (*confs)[2], size_t nconfs,
			char *why, size_t whylen)
{
	for (size_t i = 0; i < nconfs; i++) {
		bool used = false;
		for (size_t r = 0; r < n; r++) {
			if (!strcmp(rows[r].policy, confs[i][0])) {
				rows[r].conf = confs[i][1];
				used = true;
			}
		}
		if (!used) {
			snprintf(why, whylen, "policy '%s' is not compared",
				 confs[i][0]);
			return MSIM_EINVAL;
		}
	}
	return 0;
}

/* One policy of memsim compare's table. */
static void
compare_print_row(const msim_compare_row_t *r)
{
	char a[32], b[32], name[64];
	snprintf(name, sizeof(name), "%s%s", r->policy,
		 r->canon[0] ? "*" : "");
	printf("%-12s %11s %11s %9.4f %9.4f %9.4f %9" PRId64 " %11.2f",
	       name,
	       msim_format_bytes((uint64_t)r->st.reserved_bytes[0].peak, a,
				 sizeof(a)),
	       msim_format_bytes((uint64_t)r->st.allocated_bytes[0].peak, b,
				 sizeof(b)),
	       r->sum.frag_at_peak, r->sum.frag_mean, r->sum.ext_frag_max,
	       r->st.num_device_alloc + r->st.num_device_free, r->time_ms);
	if (r->sum.oom_request >= 0)
		printf("  OOM at request %" PRId64, r->sum.oom_request);
	printf("\n");
}

void
msim_compare_print(const msim_compare_t *c, const msim_compare_spec_t *spec,
		   const char *db)
{
	const char *path = spec->trace;
	const msim_compare_row_t *rows = c->rows;
	size_t nrows = c->n;
	uint64_t cap = c->cap;
	char a[32];
	printf("trace %s (%" PRIu64 " requests)\n", path,
	       rows[0].sum.requests);
	if (cap)
		printf("cap   %s (%" PRIu64 " bytes)\n",
		       msim_format_bytes(cap, a, sizeof(a)), cap);
	printf("\n%-12s %11s %11s %9s %9s %9s %9s %11s\n", "policy",
	       "reserved", "allocated", "frag@peak", "frag mean", "ext max",
	       "dev calls", "model ms");
	for (size_t r = 0; r < nrows; r++)
		compare_print_row(&rows[r]);
	for (size_t r = 0; r < nrows; r++)
		if (rows[r].canon[0])
			printf("* %s: %s\n", rows[r].policy, rows[r].canon);
	if (db) {
		printf("stored runs");
		for (size_t r = 0; r < nrows; r++)
			printf("%s%" PRId64, r ? ", " : " ", rows[r].run_id);
		printf(" in %s\n", db);
	}
	/* A snapshot replays as it ran: said once, and for each policy
	 * whose note differs from the first's. */
	for (size_t r = 0; r < c->n; r++) {
		const msim_compare_row_t *w = &c->rows[r];
		if (*w->settings && (!r || strcmp(w->settings,
						  c->rows[0].settings)))
			printf("settings   %s%s%s\n", r ? w->policy : "",
			       r ? ": " : "", w->settings);
		if (!r && *w->capnote)
			printf("capacity   %s\n", w->capnote);
	}
}

/* The comparison as one JSON object. */
void
msim_compare_json(const msim_compare_t *c, const msim_compare_spec_t *spec,
		  const char *db, const char *device)
{
	const char *path = spec->trace;
	printf("{\n  \"trace\": ");
	msim_print_json_str(stdout, path);
	printf(",\n  \"requests\": %" PRIu64 ",\n  \"cap_bytes\": %" PRIu64
	       ",\n  \"capacity_bytes\": %" PRIu64 ",\n  \"context_bytes\": "
	       "%" PRIu64 ",\n  \"device\": ", c->rows[0].sum.requests,
	       c->cap, spec->capacity ? spec->capacity : MSIM_H200_BYTES,
	       spec->context);
	if (device)
		msim_print_json_str(stdout, device);
	else
		printf("null");
	printf(",\n  \"settings\": ");
	msim_print_json_str(stdout, c->rows[0].settings);
	printf(",\n  \"capacity_note\": ");
	msim_print_json_str(stdout, c->rows[0].capnote);
	printf(",\n  \"rows\": [");
	for (size_t r = 0; r < c->n; r++) {
		const msim_compare_row_t *w = &c->rows[r];
		printf("%s\n    {\"policy\": \"%s\", \"params\": ",
		       r ? "," : "", w->policy);
		msim_print_json_str(stdout, w->canon);
		printf(", \"peak_reserved_bytes\": %" PRId64
		       ", \"peak_allocated_bytes\": %" PRId64 ",\n     "
		       "\"frag_at_peak\": %.6f, \"frag_mean\": %.6f, "
		       "\"ext_frag_max\": %.6f, \"device_calls\": %" PRId64
		       ", \"model_ms\": %.3f,\n     \"oom_request\": %" PRId64
		       ", \"run_id\": %" PRId64 "}",
		       w->st.reserved_bytes[0].peak,
		       w->st.allocated_bytes[0].peak, w->sum.frag_at_peak,
		       w->sum.frag_mean, w->sum.ext_frag_max,
		       w->st.num_device_alloc + w->st.num_device_free,
		       w->time_ms, w->sum.oom_request,
		       db ? w->run_id : -1);
	}
	printf("\n  ]\n}\n");
}
