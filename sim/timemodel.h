/*
 * The time model: what the device calls a run made would cost on a real
 * GPU.  A calibration gives the median latency of cudaMalloc, cudaFree,
 * cudaMallocAsync and cudaFreeAsync at a set of sizes (measured by
 * `memsim validate --calibrate`; an H200's is built in); between
 * sizes the latency is interpolated linearly in log2(size), beyond the
 * largest it follows a least-squares line through the largest points
 * (GSL).  Expandable segments' cuMemMap / cuMemUnmap are costed as a
 * cudaMalloc / cudaFree of the same size: an approximation.
 */
#ifndef MSIM_SIM_TIMEMODEL_H
#define MSIM_SIM_TIMEMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "sim/device.h"

enum {
	MSIM_LAT_MALLOC = 0,
	MSIM_LAT_FREE,
	MSIM_LAT_MALLOC_ASYNC,
	MSIM_LAT_FREE_ASYNC,
	MSIM_NLAT
};

typedef struct msim_timemodel_s msim_timemodel_t;

/*
 * Reads a calibration CSV (size_bytes,malloc_us,free_us,malloc_async_us,
 * free_async_us; other rows are ignored).  Returns 0, or an error with why
 * naming the file, line and reason.
 */
int msim_timemodel_load(const char *path, msim_timemodel_t **out, char *why,
			size_t whylen);
void msim_timemodel_destroy(msim_timemodel_t *tm);

/* The built-in H200 calibration.  Returns 0 or MSIM_ENOMEM. */
int msim_timemodel_h200(msim_timemodel_t **out);

/* Modelled latency in microseconds of one call of kind (MSIM_LAT_*). */
double msim_timemodel_us(const msim_timemodel_t *tm, int kind, uint64_t size);

/* Adds one device event (MSIM_SEG_*) of size bytes to out. */
void msim_timemodel_add(const msim_timemodel_t *tm, int action,
			uint64_t size, msim_devtime_t *out);

/* What the device events of a run cost (msim_devtime_t: sim/device.h). */
void msim_timemodel_events(const msim_timemodel_t *tm,
			   const msim_seg_event_t *ev, size_t n,
			   msim_devtime_t *out);

#endif
