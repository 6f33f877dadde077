/* The command line's shared helpers of cli.h. */
#include <config.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plots/plot.h"
#include "cli/cli.h"
#include "sim/file.h"
#include "sim/units.h"

void
msim_cli_die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "memsim: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_FAILURE);
}

uint64_t
msim_cli_bytes(const char *opt, const char *text)
{
	uint64_t v;
	if (msim_parse_bytes(text, &v))
		msim_cli_die("%s: '%s' is not a byte size (examples: 16GiB, "
			     "512MiB, 1000000)", opt, text);
	if (v > MSIM_SIZE_MAX)
		msim_cli_die("%s: '%s' is above 2^62 bytes", opt, text);
	return v;
}

uint64_t
msim_cli_uint(const char *opt, const char *text, uint64_t min, uint64_t max)
{
	const char *p = text;
	uint64_t v = 0;
	if (!*p)
		msim_cli_die("%s: empty, expected a whole number", opt);
	if (*p == '-')
		msim_cli_die("%s: '%s' is negative", opt, text);
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			msim_cli_die("%s: '%s' is not a whole number", opt,
				     text);
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			msim_cli_die("%s: '%s' is too large (at most %" PRIu64
				     ")", opt, text, max);
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v < min || v > max)
		msim_cli_die("%s: %" PRIu64 " is outside [%" PRIu64 ", %" PRIu64
			     "]", opt, v, min, max);
	return v;
}

void
msim_cli_not_input(const char *opt, const char *out, const char *in,
		   const char *what)
{
	if (out && in && msim_same_file(out, in))
		msim_cli_die("%s: '%s' is %s; choose another file", opt, out,
			     what);
}

void
msim_cli_json_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(fp, "\\%c", c);
		else if (c < 0x20)
			fprintf(fp, "\\u%04x", c);
		else
			fputc(c, fp);
	}
	fputc('"', fp);
}

#ifndef PLOTS_DIR
#define PLOTS_DIR ""
#endif
#ifndef SRC_PLOTS_DIR
#define SRC_PLOTS_DIR "plots"
#endif

/*
 * Where the gnuplot scripts are, in this order (MEMSIM_PLOTS_DIR, read by
 * msim_plot_dir(), overrides them all):
 * - a binary run from its build tree (config.status beside it) takes the
 *   scripts of its own source tree, not those of an older installation;
 * - else BIN/../share/memsim/plots next to the running binary, so a tree
 *   installed with DESTDIR, or a prefix moved elsewhere, finds its own;
 * - else the configured $(pkgdatadir)/plots, and last the source tree.
 */
const char *
msim_cli_plots_dir(void)
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
		dirs[n++] = SRC_PLOTS_DIR;
	if (rel[0])
		dirs[n++] = rel;
	dirs[n++] = PLOTS_DIR;
	dirs[n++] = SRC_PLOTS_DIR;
	return msim_plot_dir(dirs);
}

double
msim_cli_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
