/*
 * Measure (lab/measure.h): the settings checked and made canonical, the
 * replay on the device, and the measured row through the job's store.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab/figures.h"
#include "lab/job.h"
#include "lab/measure.h"
#include "policies/registry.h"
#include "sim/error.h"
#include "sim/metrics.h"
#include "sim/results.h"

/* torch_replay.py: in $MEMSIM_VALIDATE_DIR, else the first of dirs. */
static const char *
measure_bridge(const char *const *dirs, char *path, size_t n)
{
	const char *env = getenv("MEMSIM_VALIDATE_DIR");
	for (size_t i = 0; i == 0 || (dirs && dirs[i - 1]); i++) {
		const char *d = i == 0 ? env : dirs[i - 1];
		if (!d || !*d)
			continue;
		snprintf(path, n, "%s/torch_replay.py", d);
		FILE *fp = fopen(path, "r");
		if (fp) {
			fclose(fp);
			return path;
		}
	}
	return NULL;
}

/* The settings as the policy of the mode reads them, canonical. */
static int
measure_canon(const msim_measure_spec_t *s, msim_measure_t *out, char *why,
	      size_t whylen)
{
	const char *conf = s->conf ? s->conf : "";
	out->policy = s->mode == MSIM_VMODE_TORCH ? MSIM_POLICY_PYTORCH
		      : s->mode == MSIM_VMODE_RAW ? "naive" : "cuda-async";
	if (s->mode != MSIM_VMODE_TORCH) {
		if (!*conf)
			return 0;
		snprintf(why, whylen, "--alloc-conf applies to torch mode "
			 "only");
		return MSIM_EINVAL;
	}
	const msim_policy_ops_t *ops = msim_policy_find(out->policy);
	msim_params_t pv;
	if (!ops || msim_params_init(&pv, ops->params)) {
		snprintf(why, whylen, "out of memory");
		return MSIM_ENOMEM;
	}
	int rc = msim_params_parse(&pv, conf);
	if (rc)
		snprintf(why, whylen, "--alloc-conf: %s", pv.errmsg);
	else
		msim_params_canonical(&pv, out->canon, sizeof(out->canon));
	msim_params_clear(&pv);
	return rc ? MSIM_EINVAL : 0;
}

static double
measure_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The replay on the device. */
static int
measure_replay(const msim_measure_spec_t *s, msim_trace_t *t,
	       const char *bridge, msim_measure_t *out, char *why,
	       size_t whylen)
{
	double t0 = measure_now_ms();
	int rc;
	if (s->mode == MSIM_VMODE_TORCH)
		rc = msim_validate_torch(t, s->python, bridge,
					 s->conf ? s->conf : "", s->cap,
					 &out->m, why, whylen);
	else if (s->cuda)
		rc = s->cuda(t, s->mode, s->cap, s->threshold, &out->m, why,
			     whylen);
	else
		rc = MSIM_ENOTSUP,
		snprintf(why, whylen, "raw and async need CUDA");
	if (rc)
		return rc;
	out->wall_ms = measure_now_ms() - t0;
	msim_stats_finish(&out->m.st);
	if (out->m.nmalloc)
		snprintf(out->malloc_us, sizeof(out->malloc_us), "%.3f",
			 out->m.malloc_us / (double)out->m.nmalloc);
	if (out->m.nfree)
		snprintf(out->free_us, sizeof(out->free_us), "%.3f",
			 out->m.free_us / (double)out->m.nfree);
	return 0;
}

/* The measured row, through the job's store. */
static int
measure_store(const msim_measure_spec_t *s, msim_db_t *db, msim_trace_t *t,
	      msim_measure_t *out, char *why, size_t whylen)
{
	const char *meta[] = {
		"mode", msim_vmode_name(s->mode), "device", out->m.device,
		"versions", out->m.versions, "malloc_us_mean", out->malloc_us,
		"free_us_mean", out->free_us, NULL,
	};
	msim_job_measured_t jm = {
		.trace_path = s->trace, .trace = t, .policy = out->policy,
		.params = out->canon, .cap = s->cap, .wall_ms = out->wall_ms,
		.meta = meta, .got = &out->m,
	};
	msim_job_err_t err;
	int rc = msim_job_store_measured(db, &jm, &out->run_id, &err);
	if (rc)
		snprintf(why, whylen, "%s", err.msg);
	return rc;
}

int
msim_measure_run(const msim_measure_spec_t *spec, msim_measure_t *out,
		 char *why, size_t whylen)
{
	memset(out, 0, sizeof(*out));
	out->run_id = -1;
	char path[4200];
	const char *bridge = NULL;
	int rc = measure_canon(spec, out, why, whylen);
	if (rc)
		return rc;
	if (spec->mode == MSIM_VMODE_TORCH &&
	    !(bridge = measure_bridge(spec->bridge_dirs, path, sizeof(path)))) {
		snprintf(why, whylen, "cannot find torch_replay.py (set "
			 "MEMSIM_VALIDATE_DIR)");
		return MSIM_ENOTFOUND;
	}
	msim_db_t *db = NULL;
	msim_trace_t *t = NULL;
	if (spec->db_path &&
	    (rc = msim_db_open(spec->db_path, &db, why, whylen)))
		return rc;
	if (!(rc = msim_trace_open(spec->trace, NULL, &t, why, whylen)) &&
	    !(rc = measure_replay(spec, t, bridge, out, why, whylen)) && db)
		rc = measure_store(spec, db, t, out, why, whylen);
	msim_trace_close(t);
	msim_db_close(db);
	if (rc)
		msim_measure_clear(out);
	return rc;
}

void
msim_measure_clear(msim_measure_t *out)
{
	msim_measured_clear(&out->m);
}

int
msim_measure_figs(msim_figs_t *f, const msim_measure_spec_t *s,
		  const msim_measure_t *r)
{
	const msim_measured_t *m = &r->m;
	const char *text[][2] = {
		{"trace", s->trace}, {"mode", msim_vmode_name(s->mode)},
		{"device", m->device}, {"versions", m->versions},
		{"params", r->canon},
	};
	int rc = 0;
	for (size_t k = 0; !rc && k < sizeof(text) / sizeof(text[0]); k++)
		rc = msim_figs_text(f, text[k][0], text[k][1]);
	if (!rc)
		rc = msim_figs_int(f, "cap_bytes", (int64_t)s->cap);
	if (!rc)
		rc = msim_figs_int(f, "requests", (int64_t)m->requests);
	if (!rc)
		rc = msim_figs_stats(f, &m->st);
	if (!rc)
		rc = msim_figs_int(f, "oom_request", m->oom_request);
	if (!rc && m->nmalloc)
		rc = msim_figs_real(f, "malloc_us_mean",
				    strtod(r->malloc_us, NULL), 0,
				    r->malloc_us);
	if (!rc && m->nfree)
		rc = msim_figs_real(f, "free_us_mean",
				    strtod(r->free_us, NULL), 0, r->free_us);
	if (!rc && r->run_id >= 0)
		rc = msim_figs_int(f, "run_id", r->run_id);
	return rc;
}
