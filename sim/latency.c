/* The driver latency model of latency.h. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/latency.h"

/* groundtruth/cuda_latency_h200.csv (tests/data has a copy; the test
 * check_latency compares the two). */
static const struct {
	uint64_t size;
	double us[MSIM_NLAT];
} h200[] = {
	{UINT64_C(512), {42.15, 35.83, 51.90, 0.83}},
	{UINT64_C(4096), {42.32, 35.76, 51.00, 0.79}},
	{UINT64_C(65536), {42.24, 35.64, 51.17, 0.79}},
	{UINT64_C(1048576), {42.15, 35.71, 51.13, 0.80}},
	{UINT64_C(2097152), {40.76, 34.49, 50.51, 0.78}},
	{UINT64_C(20971520), {42.99, 49.39, 50.75, 0.80}},
	{UINT64_C(67108864), {47.81, 82.38, 88.70, 0.80}},
	{UINT64_C(268435456), {51.86, 157.52, 294.62, 0.93}},
	{UINT64_C(1073741824), {146.03, 551.27, 1170.30, 0.98}},
	{UINT64_C(4294967296), {257.41, 1128.55, 4520.19, 2.98}},
	{UINT64_C(17179869184), {49081.02, 9980.69, 18026.96, 8.76}},
};

void
msim_latency_h200(msim_latency_t *lat)
{
	memset(lat, 0, sizeof(*lat));
	lat->n = sizeof(h200) / sizeof(h200[0]);
	for (size_t i = 0; i < lat->n; i++) {
		lat->size[i] = h200[i].size;
		for (int k = 0; k < MSIM_NLAT; k++)
			lat->us[k][i] = h200[i].us[k];
	}
}

int
msim_latency_load(msim_latency_t *lat, const char *path, char *why,
		  size_t whylen)
{
	FILE *fp = fopen(path, "r");
	if (!fp) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return MSIM_EIO;
	}
	memset(lat, 0, sizeof(*lat));
	char line[512];
	unsigned lineno = 0;
	int rc = 0;
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		if (lineno == 1) {
			static const char head[] = "size_bytes,malloc_us,"
				"free_us,malloc_async_us,free_async_us";
			if (strncmp(line, head, sizeof(head) - 1)) {
				snprintf(why, whylen, "%s:1: not a latency "
					 "table (header size_bytes,malloc_us,"
					 "free_us,malloc_async_us,"
					 "free_async_us)", path);
				rc = MSIM_EFORMAT;
				break;
			}
			continue;
		}
		if (line[0] < '0' || line[0] > '9')
			continue; /* addrN rows */
		unsigned long long size;
		double v[MSIM_NLAT];
		char extra;
		if (sscanf(line, "%llu,%lf,%lf,%lf,%lf %c", &size, &v[0], &v[1],
			   &v[2], &v[3], &extra) != 5 || v[0] < 0 ||
		    v[1] < 0 || v[2] < 0 || v[3] < 0) {
			snprintf(why, whylen, "%s:%u: expected a size and four "
				 "latencies in microseconds", path, lineno);
			rc = MSIM_EFORMAT;
			break;
		}
		if (lat->n == MSIM_LAT_MAXPOINTS ||
		    (lat->n && size <= lat->size[lat->n - 1])) {
			snprintf(why, whylen, "%s:%u: sizes must rise (at most "
				 "%d rows)", path, lineno, MSIM_LAT_MAXPOINTS);
			rc = MSIM_EFORMAT;
			break;
		}
		lat->size[lat->n] = size;
		for (int k = 0; k < MSIM_NLAT; k++)
			lat->us[k][lat->n] = v[k];
		lat->n++;
	}
	fclose(fp);
	if (!rc && lat->n == 0) {
		snprintf(why, whylen, "%s: no latency rows", path);
		rc = MSIM_EFORMAT;
	}
	return rc;
}

double
msim_latency_us(const msim_latency_t *lat, int kind, uint64_t size)
{
	if (lat->n == 0 || kind < 0 || kind >= MSIM_NLAT)
		return 0.0;
	const double *us = lat->us[kind];
	if (size <= lat->size[0])
		return us[0];
	for (size_t i = 1; i < lat->n; i++) {
		if (size <= lat->size[i]) {
			double f = (double)(size - lat->size[i - 1]) /
				   (double)(lat->size[i] - lat->size[i - 1]);
			return us[i - 1] + f * (us[i] - us[i - 1]);
		}
	}
	return us[lat->n - 1];
}
