/*
 * A job's simulated run kept as a PyTorch snapshot (memsim run
 * --snapshot-out; traces/snapshot_out.h writes it): its requests as trace
 * entries at the simulated addresses, the device's segment events between
 * them, the recording's site as each allocation's frame, and the segments
 * and blocks the run ends with (or holds at its peak).
 *
 *	rec = msim_snaprec_new(); spec.observe = msim_snaprec_observe;
 *	spec.observe_ctx = rec; msim_job_open(); msim_snaprec_attach(rec,
 *	job); msim_job_run(); msim_snaprec_write(); msim_snaprec_destroy()
 */
#ifndef MSIM_LAB_SNAPOUT_H
#define MSIM_LAB_SNAPOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "lab/job.h"

typedef struct msim_snaprec_s msim_snaprec_t;

/* With at_peak, the snapshot is of the moment the device first held its
 * most bytes (the trace up to it, the segments and blocks then); else of
 * the end.  NULL when out of memory. */
msim_snaprec_t *msim_snaprec_new(bool at_peak);

/* The job whose simulation it follows, before it runs. */
void msim_snaprec_attach(msim_snaprec_t *rec, msim_job_t *job);

/* The job spec's observe (ctx is rec). */
void msim_snaprec_observe(void *ctx, const msim_req_t *req, int rc);

/* After the run: writes the snapshot to path.  Returns 0, or an error
 * with why filled (out of memory, the file). */
int msim_snaprec_write(msim_snaprec_t *rec, const char *path, char *why,
		       size_t whylen);

void msim_snaprec_destroy(msim_snaprec_t *rec);

#endif
