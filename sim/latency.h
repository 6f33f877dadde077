/*
 * A model of what the CUDA driver's memory calls cost: median latencies of
 * cudaMalloc, cudaFree, cudaMallocAsync and cudaFreeAsync by size, measured
 * on an H200 (groundtruth cuda_latency_h200.csv), linearly interpolated in
 * size between the measured sizes and held flat past either end.  A first
 * model for `memsim compare`; a calibration may load another table of the
 * same CSV format.
 */
#ifndef MSIM_SIM_LATENCY_H
#define MSIM_SIM_LATENCY_H

#include <stddef.h>
#include <stdint.h>

enum { MSIM_LAT_MALLOC = 0, MSIM_LAT_FREE, MSIM_LAT_MALLOC_ASYNC,
       MSIM_LAT_FREE_ASYNC, MSIM_NLAT };

#define MSIM_LAT_MAXPOINTS 64

typedef struct msim_latency_s {
	size_t n;                                  /* points, sizes rising */
	uint64_t size[MSIM_LAT_MAXPOINTS];         /* bytes */
	double us[MSIM_NLAT][MSIM_LAT_MAXPOINTS];  /* microseconds */
} msim_latency_t;

/* The H200 table, built in. */
void msim_latency_h200(msim_latency_t *lat);

/*
 * Reads a table in the CSV format of cuda_latency_h200.csv (header
 * size_bytes,malloc_us,free_us,malloc_async_us,free_async_us; other rows,
 * such as addrN, are ignored).  Returns 0, or MSIM_EIO / MSIM_EFORMAT with
 * why naming the file, line and reason.
 */
int msim_latency_load(msim_latency_t *lat, const char *path, char *why,
		      size_t whylen);

/* Modelled microseconds of one call of kind (MSIM_LAT_*) of size bytes. */
double msim_latency_us(const msim_latency_t *lat, int kind, uint64_t size);

#endif
