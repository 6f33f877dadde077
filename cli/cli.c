/* The command line's shared helpers of cli.h. */
#include <config.h>

#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include "plots/plot.h"
#include "cli/cli.h"
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
	return v;
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

const char *
msim_cli_plots_dir(void)
{
	static const char *const dirs[] = {PLOTS_DIR, SRC_PLOTS_DIR, NULL};
	return msim_plot_dir(dirs);
}

double
msim_cli_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
