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

void
msim_cli_json_figs(const msim_figs_t *f, bool first)
{
	for (size_t i = 0; i < f->n; i++) {
		const msim_fig_t *g = &f->v[i];
		printf("%s\n  \"%s\": ", i || !first ? "," : "", g->name);
		switch (g->kind) {
		case MSIM_FIG_INT: printf("%" PRId64, g->i); break;
		case MSIM_FIG_BOOL: printf(g->i ? "true" : "false"); break;
		case MSIM_FIG_REAL: printf("%s", g->t); break;
		default:
			if (g->null)
				printf("null");
			else
				msim_cli_json_str(stdout, g->t);
			break;
		}
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
