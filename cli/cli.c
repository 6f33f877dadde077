/* The command line's shared helpers of cli.h. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
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
#include "sim/device.h"
#include "sim/gpu.h"
#include "lab/figures.h"
#include "lab/job.h"
#include "lab/scratch.h"
#include "sim/suggest.h"
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
	msim_cli_bytes_meant(opt, text, v);
	return v;
}

void
msim_cli_bytes_meant(const char *opt, const char *text, uint64_t v)
{
	/* A bare count under 1 MiB is almost always a size in GiB written
	 * without its unit ("--cap 16"): 16 bytes would OOM at once. */
	if (v && v < (UINT64_C(1) << 20) &&
	    strspn(text, "0123456789") == strlen(text))
		msim_cli_die("%s: %s is %s bytes; did you mean %sGiB? (write "
			     "%sB for bytes)", opt, text, text, text, text);
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

/* getopt_long() refused argv[optind - 1] (or optopt): says why in one
 * line, with the option meant when one is near, and exits 2. */
static void
cli_getopt_unknown(char **argv, const char *shortopts,
		   const struct option *longopts)
{
	const char *el = argv[optind - 1];
	const char *cmd = "memsim";
	if (!strncmp(el, "--", 2)) {
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(el + 2, "="),
			 el + 2);
		const char *names[256];
		size_t n = 0;
		for (const struct option *o = longopts; o->name && n < 256; o++) {
			if (!strcmp(o->name, name)) {
				fprintf(stderr, "%s: --%s %s (see --help)\n",
					cmd, name, o->has_arg == no_argument
					? "takes no value" : "needs a value");
				exit(2);
			}
			names[n++] = o->name;
		}
		const char *near = msim_suggest(name, names, n);
		/* a prefix of several options ("--ca": --cap, --capacity) */
		for (size_t i = 0; i < n; i++)
			if (!strncmp(names[i], name, strlen(name)) &&
			    (!near || strncmp(near, name, strlen(name))))
				near = names[i];
		if (near && !strncmp(near, name, strlen(name)))
			msim_cli_die("--%s: not an option; options are written "
				     "in full (did you mean --%s?)", name,
				     near);
		if (near)
			fprintf(stderr, "%s: --%s: unknown option (did you mean "
				"--%s?)\n", cmd, name, near);
		else
			fprintf(stderr, "%s: --%s: unknown option (see "
				"--help)\n", cmd, name);
		exit(2);
	}
	const char *sp = optopt ? strchr(shortopts, optopt) : NULL;
	if (sp && sp[1] == ':')
		fprintf(stderr, "%s: -%c needs a value (see --help)\n", cmd,
			optopt);
	else if (optopt)
		fprintf(stderr, "%s: -%c: unknown option (see --help)\n", cmd,
			optopt);
	else
		fprintf(stderr, "%s: %s: unknown option (see --help)\n", cmd,
			el);
	exit(2);
}

void
msim_cli_output(const char *opt, const char *out)
{
	char why[4400];
	if (out && strcmp(out, "-") && msim_output_check(out, why, sizeof(why)))
		msim_cli_die("%s: %s", opt, why);
}

int
msim_cli_getopt(int argc, char **argv, const char *shortopts,
		const struct option *longopts)
{
	int li = -1;
	opterr = 0; /* an unknown option is told below, in one line */
	int c = getopt_long(argc, argv, shortopts, longopts, &li);
	if (c == '?')
		cli_getopt_unknown(argv, shortopts, longopts);
	if (c == -1 || li < 0)
		return c;
	/* The element just read: the option, or the one before its
	 * argument when that came separately. */
	const struct option *lo = &longopts[li];
	int at = optind - 1;
	if (lo->has_arg != no_argument && optarg && at > 0 &&
	    optarg == argv[at])
		at--;
	const char *el = argv[at];
	if (strncmp(el, "--", 2))
		return c;
	size_t n = strcspn(el + 2, "=");
	if (n != strlen(lo->name) || strncmp(el + 2, lo->name, n))
		msim_cli_die("--%.*s: not an option; options are written in "
			     "full (did you mean --%s?)", (int)n, el + 2,
			     lo->name);
	return c;
}

double
msim_cli_fraction(const char *text)
{
	char *end;
	double f = strtod(text, &end);
	if (end == text || *end || !(f > 0 && f <= 1))
		msim_cli_die("--fraction: '%s' is not in (0, 1]", text);
	return f;
}

const char *
msim_cli_addresses(const char *text)
{
	if (strcmp(text, "model") && strcmp(text, "trace"))
		msim_cli_die("--addresses: '%s' is not model or trace", text);
	return text;
}

unsigned
msim_cli_device1(const char *text)
{
	return (unsigned)msim_cli_uint("--device", text, 0, 1023) + 1;
}

void
msim_cli_gpu_device(msim_cli_gpu_t *g, const char *text, bool index_ok)
{
	char why[1024];
	if (*text >= '0' && *text <= '9' && strspn(text, "0123456789") ==
	    strlen(text)) {
		if (!index_ok)
			msim_cli_die("--device: '%s' is not a GPU of memsim "
				     "devices (a name: h200, a10g, ...)", text);
		g->device1 = msim_cli_device1(text);
		return;
	}
	if (msim_gpu_named(text, &g->dev_capacity, &g->dev_context, why,
			   sizeof(why)))
		msim_cli_die("--device: %s", why);
	g->name = text;
}

void
msim_cli_gpu_capacity(msim_cli_gpu_t *g, const char *text)
{
	char why[1024];
	g->cap_name = NULL;
	g->capacity_given = true;
	if (!msim_parse_bytes(text, &g->capacity)) {
		if (!g->capacity)
			msim_cli_die("--capacity: 0 bytes; give the device's "
				     "memory (e.g. 80GiB)");
		if (g->capacity > MSIM_SIZE_MAX)
			msim_cli_die("--capacity: '%s' is above 2^62 bytes",
				     text);
		msim_cli_bytes_meant("--capacity", text, g->capacity);
		return;
	}
	if (msim_gpu_capacity_parse(text, &g->capacity, why, sizeof(why)))
		msim_cli_die("--capacity: %s", why);
	g->cap_name = text;
}

void
msim_cli_gpu_context(msim_cli_gpu_t *g, const char *text)
{
	uint64_t v;
	/* 0 is allowed: no context, over --device's */
	if (msim_parse_bytes(text, &v) || v > MSIM_SIZE_MAX)
		msim_cli_die("--context-bytes: '%s' is not a byte size "
			     "(examples: 750MiB, 0)", text);
	msim_cli_bytes_meant("--context-bytes", text, v);
	g->context = v;
	g->context_given = true;
}

void
msim_cli_gpu_done(msim_cli_gpu_t *g)
{
	if (!g->capacity_given)
		g->capacity = g->name ? g->dev_capacity : 0;
	if (!g->context_given)
		g->context = g->name ? g->dev_context : 0;
	uint64_t cap = g->capacity ? g->capacity : MSIM_H200_BYTES;
	if (g->context >= cap)
		msim_cli_die("--context-bytes: %" PRIu64 " bytes leave nothing "
			     "of the device's %" PRIu64, g->context, cap);
}

long
msim_cli_jobs(const char *text)
{
	return (long)msim_cli_uint("--jobs", text, 1, 4096);
}

void
msim_cli_job_die(const msim_job_err_t *err, const char *who)
{
	switch (err->part) {
	case MSIM_JOB_EPOLICY:
		msim_cli_die("--policy: %s", err->msg);
	case MSIM_JOB_EPARAMS:
		msim_cli_die("--alloc-conf%s%s: %s", who ? " " : "",
			     who ? who : "", err->msg);
	case MSIM_JOB_ECAP:
		msim_cli_die("--cap: %s", err->msg);
	case MSIM_JOB_ERUN:
		if (who)
			msim_cli_die("%s: %s", who, err->msg);
		/* fall through */
	default:
		msim_cli_die("%s", err->msg);
	}
}

#ifndef PYTHON_DIR
#define PYTHON_DIR ""
#endif
#ifndef SRC_TRACES_DIR
#define SRC_TRACES_DIR "traces"
#endif

const char *const *
msim_cli_record_dirs(void)
{
	static const char *const dirs[] = {PYTHON_DIR, SRC_TRACES_DIR, NULL};
	return dirs;
}

#ifndef PLOTS_DIR
#define PLOTS_DIR ""
#endif
#ifndef SRC_PLOTS_DIR
#define SRC_PLOTS_DIR "plots"
#endif

/* Where the gnuplot scripts are (plots/plot.h): the configured
 * $(pkgdatadir)/plots and the source tree's. */
const char *
msim_cli_plots_dir(void)
{
	return msim_plot_dir_for(PLOTS_DIR, SRC_PLOTS_DIR);
}

double
msim_cli_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void
msim_cli_progress(void *ctx, size_t done, size_t total)
{
	msim_cli_progress_t *p = ctx;
	if (!p->on)
		return;
	double now = msim_cli_now_ms();
	if (!p->started) {
		p->started = true;
		p->t0 = now;
		p->done0 = done;
	}
	if (now - (p->start ? p->start : p->t0) < p->after_ms)
		return;
	double secs = (now - p->t0) / 1e3;
	double rate = secs > 0 ? (double)(done - p->done0) / secs : 0;
	char eta[32] = "--:--";
	if (rate > 0) {
		long left = (long)((double)(total - done) / rate + 0.5);
		snprintf(eta, sizeof(eta), "%ld:%02ld", left / 60, left % 60);
	}
	fprintf(stderr, "\rmemsim %s: %zu/%zu settings (%.0f%%), %.1f/s, "
		"ETA %s   ", p->what, done, total,
		total ? 100.0 * (double)done / (double)total : 100.0, rate,
		eta);
	p->drawn = true;
}

void
msim_cli_progress_end(msim_cli_progress_t *p)
{
	if (p->drawn)
		fputc('\n', stderr);
	p->drawn = false;
}

/* The scratch folder of msim_cli_scratch() and the process it is of. */
static char scratch_path[4096];
static pid_t scratch_owner;

/* Removes the scratch folder, only in the process that made it, not in a
 * forked child that exits. */
static void
scratch_remove(void)
{
	if (!scratch_path[0] || getpid() != scratch_owner)
		return;
	msim_scratch_remove(scratch_path);
	scratch_path[0] = '\0';
}

static void
scratch_signal(int sig)
{
	scratch_remove();
	signal(sig, SIG_DFL);
	raise(sig);
}

const char *
msim_cli_scratch(const char *prefix)
{
	if (scratch_path[0])
		msim_cli_die("%s: a scratch folder exists already", prefix);
	char why[4400];
	if (msim_scratch_make(prefix, scratch_path, sizeof(scratch_path), why,
			      sizeof(why)))
		msim_cli_die("%s", why);
	scratch_owner = getpid();
	static int hooked;
	if (!hooked) {
		hooked = 1;
		atexit(scratch_remove);
		static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
			struct sigaction old;
			/* nohup's ignored SIGHUP stays ignored */
			if (sigaction(sigs[i], NULL, &old) == 0 &&
			    old.sa_handler == SIG_IGN)
				continue;
			signal(sigs[i], scratch_signal);
		}
	}
	return scratch_path;
}
