/*
 * The command line's shared helpers.  The memsim binary is cli/main.c (the
 * dispatcher) and one cli/cmd_<name>.c per subcommand; these are the only
 * files that read argv, print to stdout or call exit().  None of them goes
 * into libmemsim.a.
 */
#ifndef MSIM_CLI_CLI_H
#define MSIM_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lab/print.h"
#include "sim/types.h"

/* Prints "memsim: <message>" on stderr and exits with status 1. */
void msim_cli_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* A byte size option ("16GiB"); dies naming opt if text is not one, or
 * is a bare count under 1 MiB (msim_cli_bytes_meant()). */
uint64_t msim_cli_bytes(const char *opt, const char *text);

/* Dies when text, read as v bytes, is a bare count of 1 to 1 MiB - 1
 * ("--cap 16"), asking whether GiB was meant ("16B" is bytes). */
void msim_cli_bytes_meant(const char *opt, const char *text, uint64_t v);

/* A whole-number option in [min, max]: digits only (no sign, no space);
 * dies naming opt on anything else, negatives and overflow included. */
uint64_t msim_cli_uint(const char *opt, const char *text, uint64_t min,
		       uint64_t max);

/* Dies unless out is a different file from in (device and inode, so links
 * and other spellings count); what names in ("the input trace"). */
void msim_cli_not_input(const char *opt, const char *out, const char *in,
			const char *what);

/* Dies (one line naming opt) unless out can be written: msim_output_check()
 * of sim/file.h, called before any work.  "-" (stdout) passes. */
void msim_cli_output(const char *opt, const char *out);

/*
 * getopt_long() with one rule for every command: long options are
 * written in full.  getopt_long() takes an unambiguous prefix ("--cap"
 * for "--capacity"); here a prefix dies naming what was written and the
 * option it would have matched.  An unknown option, or one without its
 * value, is one line on stderr (with the option meant when one is near,
 * "--cpa: unknown option (did you mean --cap?)") and exit status 2.
 */
struct option;
int msim_cli_getopt(int argc, char **argv, const char *shortopts,
		    const struct option *longopts);

/* A --fraction option: a number in (0, 1]; dies otherwise. */
double msim_cli_fraction(const char *text);

/* An --addresses option: "model" or "trace" (text itself); dies
 * otherwise. */
const char *msim_cli_addresses(const char *text);

/* A --device option: a device_traces index N, as N + 1 (the device1 of
 * traces/trace.h); dies otherwise. */
unsigned msim_cli_device1(const char *text);

/*
 * The device options every command that takes a capacity shares:
 * --device NAME (a GPU of `memsim devices`: its capacity and context),
 * or --device N (a snapshot's device_traces index) where index_ok;
 * --capacity BYTES|NAME (the capacity alone, over --device's);
 * --context-bytes B (over --device's).  Fill with the three calls as
 * options come, then msim_cli_gpu_done(); each dies (one line naming
 * the option) on a bad value.
 */
typedef struct msim_cli_gpu_s {
	const char *name;        /* --device NAME, or NULL */
	const char *cap_name;    /* --capacity NAME, or NULL */
	uint64_t capacity;       /* after done: bytes; 0: not given */
	uint64_t context;        /* after done: bytes; 0: none */
	bool capacity_given, context_given;
	uint64_t dev_capacity, dev_context; /* --device NAME's */
	unsigned device1;        /* --device N: N + 1; 0: not given */
} msim_cli_gpu_t;

void msim_cli_gpu_device(msim_cli_gpu_t *g, const char *text, bool index_ok);
void msim_cli_gpu_capacity(msim_cli_gpu_t *g, const char *text);
void msim_cli_gpu_context(msim_cli_gpu_t *g, const char *text);
/* Settles capacity and context: given ones over --device NAME's; dies
 * when the context leaves nothing of the capacity (the H200's if none). */
void msim_cli_gpu_done(msim_cli_gpu_t *g);

/* A --jobs option: a number of worker processes, 1 to 4096; dies
 * otherwise. */
long msim_cli_jobs(const char *text);

/* Dies with a job's error (lab/job.h), naming the option at fault:
 * --policy, --alloc-conf (followed by who when given), --cap. */
struct msim_job_err_s;
void msim_cli_job_die(const struct msim_job_err_s *err, const char *who)
	__attribute__((noreturn));

/* The folder of the gnuplot scripts: $MEMSIM_PLOTS_DIR, the installed
 * one, else the source tree's; NULL if none has them. */
const char *msim_cli_plots_dir(void);

/*
 * A progress line on stderr, "\rmemsim WHAT: done/total settings (P%), R/s,
 * ETA m:ss", redrawn in place: msim_cli_progress() is a sweep's progress
 * callback (lab/sweep.h) with a msim_cli_progress_t as ctx.  Drawn only
 * when on (a terminal, or asked for) and after_ms since start have
 * passed; msim_cli_progress_end() ends the line if one was drawn.
 */
typedef struct msim_cli_progress_s {
	const char *what;  /* "sweep", "tune" */
	bool on;
	double start;      /* msim_cli_now_ms() when the work began; 0:
			    * at the first call */
	double after_ms;   /* draw nothing before */
	double t0;         /* the first call's time and count */
	size_t done0;
	bool started, drawn;
} msim_cli_progress_t;
void msim_cli_progress(void *ctx, size_t done, size_t total);
void msim_cli_progress_end(msim_cli_progress_t *p);

/* Milliseconds on the monotonic clock. */
double msim_cli_now_ms(void);

/* Subcommands: each takes argv with argv[0] = "memsim <name>". */
int msim_cmd_run(int argc, char **argv);
int msim_cmd_bench(int argc, char **argv);
int msim_cmd_validate(int argc, char **argv);
int msim_cmd_compare(int argc, char **argv);
int msim_cmd_sweep(int argc, char **argv);
int msim_cmd_merge(int argc, char **argv);
int msim_cmd_report(int argc, char **argv);
/* memsim report --compare (cli/cmd_report_compare.c). */
struct msim_db_s;
int msim_report_compare(struct msim_db_s *db, int json, int csv,
			const char *plot);
int msim_cmd_plot(int argc, char **argv);
int msim_cmd_tune(int argc, char **argv);
int msim_cmd_gen(int argc, char **argv);
int msim_cmd_gen_random(int argc, char **argv);
int msim_cmd_convert(int argc, char **argv);
int msim_cmd_info(int argc, char **argv);
int msim_cmd_explain(int argc, char **argv);
/* Warns on stderr of settings in pv that cannot act (cli/cmd_explain.c). */
struct msim_policy_ops_s;
struct msim_params_s;
void msim_cli_warn_settings(const struct msim_policy_ops_s *ops,
			    const struct msim_params_s *pv, bool has_cap);
/* Prints memsim explain's text for cfg (run --explain). */
struct msim_explain_config_s;
void msim_cli_explain(const struct msim_explain_config_s *cfg);
int msim_cmd_summary(int argc, char **argv);
/* memsim plot --kind breakdown TRACE (cli/cmd_explain.c). */
int msim_cli_plot_breakdown(int argc, char **argv);
int msim_cmd_record(int argc, char **argv);
int msim_cmd_fit(int argc, char **argv);
int msim_cmd_devices(int argc, char **argv);
/* Where the Python recorder may be installed (lab/record.h's dirs). */
const char *const *msim_cli_record_dirs(void);

/*
 * A scratch folder, PREFIX-XXXXXX under $TMPDIR (default /tmp), removed
 * with the files in it when the process that made it ends: a return from
 * main, exit() (msim_cli_die() too), SIGINT, SIGTERM or SIGHUP.  One a
 * process; dies if it cannot be made.  Returns its path.
 */
const char *msim_cli_scratch(const char *prefix);

#endif
