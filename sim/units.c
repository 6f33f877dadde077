/* Byte-size parsing and formatting of units.h. */
#include <config.h>

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/error.h"
#include "sim/units.h"

static const struct {
	const char *suffix;
	uint64_t mult;
} units[] = {
	{"", 1}, {"B", 1},
	{"K", UINT64_C(1) << 10}, {"KiB", UINT64_C(1) << 10},
	{"M", UINT64_C(1) << 20}, {"MiB", UINT64_C(1) << 20},
	{"G", UINT64_C(1) << 30}, {"GiB", UINT64_C(1) << 30},
	{"T", UINT64_C(1) << 40}, {"TiB", UINT64_C(1) << 40},
	{"KB", UINT64_C(1000)}, {"MB", UINT64_C(1000000)},
	{"GB", UINT64_C(1000000000)}, {"TB", UINT64_C(1000000000000)},
};

int
msim_parse_bytes(const char *text, uint64_t *out)
{
	const char *p = text;
	if (!isdigit((unsigned char)*p))
		return MSIM_EINVAL;
	while (isdigit((unsigned char)*p))
		p++;
	bool frac = *p == '.';
	if (frac) {
		p++;
		if (!isdigit((unsigned char)*p))
			return MSIM_EINVAL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	const char *suffix = p;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(suffix, units[i].suffix) != 0)
			continue;
		/* Case matters between the decimal and binary families only
		 * through the letters; "kib" and "KiB" are the same. */
		if (!frac) {
			errno = 0;
			uint64_t v = strtoull(text, NULL, 10);
			if (errno || (v && units[i].mult > UINT64_MAX / v))
				return MSIM_EINVAL;
			*out = v * units[i].mult;
			return 0;
		}
		double v = strtod(text, NULL) * (double)units[i].mult;
		if (!(v < 1.8e19) || v != floor(v))
			return MSIM_EINVAL;
		*out = (uint64_t)v;
		return 0;
	}
	return MSIM_EINVAL;
}

char *
msim_format_bytes(uint64_t bytes, char *buf, size_t n)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, n, "%.2f %s", v, names[u]);
	return buf;
}
