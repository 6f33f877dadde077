/* The time model of timemodel.h. */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_interp.h>

#include "sim/error.h"
#include "sim/file.h"
#include "sim/timemodel.h"

#define TM_MAXPTS 64
#define TM_FITPTS 3 /* largest sizes the extrapolation line goes through */

struct msim_timemodel_s {
	size_t n;
	double lsize[TM_MAXPTS];           /* log2(bytes), increasing */
	double size[TM_MAXPTS];            /* bytes */
	double us[MSIM_NLAT][TM_MAXPTS];   /* median latency */
	gsl_interp *interp[MSIM_NLAT];
	gsl_interp_accel *acc[MSIM_NLAT];
	double c0[MSIM_NLAT], c1[MSIM_NLAT]; /* us = c0 + c1 * bytes above */
};

void
msim_timemodel_destroy(msim_timemodel_t *tm)
{
	if (!tm)
		return;
	for (int k = 0; k < MSIM_NLAT; k++) {
		if (tm->interp[k])
			gsl_interp_free(tm->interp[k]);
		if (tm->acc[k])
			gsl_interp_accel_free(tm->acc[k]);
	}
	free(tm);
}

/* The H200's calibration (groundtruth cuda_latency_h200.csv: median of
 * 31 calls each, CUDA 13.0, driver 580), so memsim needs no file for it. */
static const char h200_csv[] =
	"size_bytes,malloc_us,free_us,malloc_async_us,free_async_us\n"
	"512,42.15,35.83,51.90,0.83\n"
	"4096,42.32,35.76,51.00,0.79\n"
	"65536,42.24,35.64,51.17,0.79\n"
	"1048576,42.15,35.71,51.13,0.80\n"
	"2097152,40.76,34.49,50.51,0.78\n"
	"20971520,42.99,49.39,50.75,0.80\n"
	"67108864,47.81,82.38,88.70,0.80\n"
	"268435456,51.86,157.52,294.62,0.93\n"
	"1073741824,146.03,551.27,1170.30,0.98\n"
	"4294967296,257.41,1128.55,4520.19,2.98\n"
	"17179869184,49081.02,9980.69,18026.96,8.76\n";

static int timemodel_read(FILE *fp, const char *path, msim_timemodel_t **out,
			  char *why, size_t whylen);

int
msim_timemodel_h200(msim_timemodel_t **out)
{
	char why[256];
	FILE *fp = fmemopen((void *)h200_csv, sizeof(h200_csv) - 1, "r");
	if (!fp)
		return MSIM_ENOMEM;
	return timemodel_read(fp, "(built-in H200 calibration)", out, why,
			      sizeof(why));
}

int
msim_timemodel_load(const char *path, msim_timemodel_t **out, char *why,
		    size_t whylen)
{
	FILE *fp = fopen(path, "r");
	if (!fp) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return MSIM_EIO;
	}
	return timemodel_read(fp, path, out, why, whylen);
}

/* Reads a calibration from fp (closed here). */
static int
timemodel_read(FILE *fp, const char *path, msim_timemodel_t **out, char *why,
	       size_t whylen)
{
	msim_timemodel_t *tm = calloc(1, sizeof(*tm));
	if (!tm) {
		fclose(fp);
		snprintf(why, whylen, "%s: %s", path, msim_strerror(MSIM_ENOMEM));
		return MSIM_ENOMEM;
	}
	/* A calibration is a few dozen short lines: 1 MiB at most, so
	 * --calibration /dev/zero is an error, not a hang. */
	msim_text_t tx;
	msim_text_open(&tx, path, fp, 1u << 20, why, whylen);
	char line[4096];
	int rc = 0;
	while ((rc = msim_text_line(&tx, line, sizeof(line), why, whylen)) ==
	       1) {
		unsigned long lineno = tx.lineno;
		rc = 0;
		double v[5];
		char tail;
		if (sscanf(line, "%lf,%lf,%lf,%lf,%lf%c", &v[0], &v[1], &v[2],
			   &v[3], &v[4], &tail) < 5)
			continue; /* the header, the address rows */
		/* Increasing in log2 too: gsl_interp_init() is given checked
		 * points only (lib/memsim.h, GSL's handler). */
		if (!(v[0] >= 1) || (tm->n && !(log2(v[0]) >
						 tm->lsize[tm->n - 1]))) {
			snprintf(why, whylen, "%s:%lu: sizes must be positive "
				 "and increasing", path, lineno);
			rc = MSIM_EFORMAT;
			goto done;
		}
		if (tm->n == TM_MAXPTS) {
			snprintf(why, whylen, "%s:%lu: more than %d sizes", path,
				 lineno, TM_MAXPTS);
			rc = MSIM_EFORMAT;
			goto done;
		}
		for (int k = 0; k < MSIM_NLAT; k++) {
			if (!(v[k + 1] >= 0) || !isfinite(v[k + 1])) {
				snprintf(why, whylen, "%s:%lu: bad latency",
					 path, lineno);
				rc = MSIM_EFORMAT;
				goto done;
			}
			tm->us[k][tm->n] = v[k + 1];
		}
		tm->size[tm->n] = v[0];
		tm->lsize[tm->n] = log2(v[0]);
		tm->n++;
	}
	if (rc)
		goto done;
	if (tm->n < TM_FITPTS) {
		snprintf(why, whylen, "%s: a calibration needs at least %d sizes",
			 path, TM_FITPTS);
		rc = MSIM_EFORMAT;
		goto done;
	}
	for (int k = 0; k < MSIM_NLAT; k++) {
		tm->interp[k] = gsl_interp_alloc(gsl_interp_linear, tm->n);
		tm->acc[k] = gsl_interp_accel_alloc();
		if (!tm->interp[k] || !tm->acc[k] ||
		    gsl_interp_init(tm->interp[k], tm->lsize, tm->us[k],
				    tm->n) != GSL_SUCCESS) {
			snprintf(why, whylen, "%s: cannot interpolate", path);
			rc = MSIM_EFORMAT;
			goto done;
		}
		double cov00, cov01, cov11, sumsq;
		size_t first = tm->n - TM_FITPTS;
		gsl_fit_linear(tm->size + first, 1, tm->us[k] + first, 1,
			       TM_FITPTS, &tm->c0[k], &tm->c1[k], &cov00,
			       &cov01, &cov11, &sumsq);
		if (tm->c1[k] < 0) { /* never cheaper for being larger */
			tm->c1[k] = 0;
			tm->c0[k] = tm->us[k][tm->n - 1];
		}
	}
done:
	msim_text_close(&tx);
	if (rc) {
		msim_timemodel_destroy(tm);
		return rc;
	}
	*out = tm;
	return 0;
}

double
msim_timemodel_us(const msim_timemodel_t *tm, int kind, uint64_t size)
{
	double x = (double)(size ? size : 1);
	if (x <= tm->size[0])
		return tm->us[kind][0];
	if (x >= tm->size[tm->n - 1]) {
		double y = tm->c0[kind] + tm->c1[kind] * x;
		double last = tm->us[kind][tm->n - 1];
		return y > last ? y : last;
	}
	return gsl_interp_eval(tm->interp[kind], tm->lsize, tm->us[kind],
			       log2(x), tm->acc[kind]);
}

void
msim_timemodel_events(const msim_timemodel_t *tm, const msim_seg_event_t *ev,
		      size_t n, msim_devtime_t *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		msim_timemodel_add(tm, ev[i].action, ev[i].size, out);
}

void
msim_timemodel_add(const msim_timemodel_t *tm, int action, uint64_t size,
		   msim_devtime_t *out)
{
	switch (action) {
	case MSIM_SEG_ALLOC:
	case MSIM_SEG_MAP:
		out->mallocs++;
		out->us += msim_timemodel_us(tm, MSIM_LAT_MALLOC, size);
		break;
	case MSIM_SEG_FREE:
	case MSIM_SEG_UNMAP:
		out->frees++;
		out->us += msim_timemodel_us(tm, MSIM_LAT_FREE, size);
		break;
	}
}
