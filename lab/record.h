/*
 * Recordings: the launch of the Python recorder (traces/memsim_record, run
 * as `python3 -m memsim_record -o OUT [OPTIONS] -- SCRIPT ARGS`), what a
 * setting name of fit or sweep stands for among the recorder's options,
 * the {NAME} substitution in a command, and the recordings of a sweep over
 * a command (one a combination of the grid's recording names, kept beside
 * the database and reused while the command, its options and the files
 * it names, the script's bytes, are the same).  `memsim record`, `memsim
 * fit` and `memsim sweep -- COMMAND` all record through here.
 *
 * OUT is checked before the script runs (lab/recproc.h); the recorder
 * writes in a private folder beside it, in a process group of its own
 * whose life is memsim's (signals passed on, a time limit, what it leaves
 * running killed), and the trace is renamed to OUT only once all of it is
 * gone, so no partial trace, and no trace from a leftover child, reaches
 * OUT.  Nothing here prints: the script's own output goes to stderr (or
 * nowhere), and what went wrong comes back as one line.
 */
#ifndef MSIM_LAB_RECORD_H
#define MSIM_LAB_RECORD_H

#include <stdbool.h>
#include <stddef.h>

/* How the recorder is run. */
typedef struct msim_record_opts_s {
	/* Folders that may hold memsim_record/ (the installed one, the
	 * source tree's), NULL-terminated, tried after $MEMSIM_PYTHONPATH;
	 * may be NULL. */
	const char *const *dirs;
	/* The interpreter when the command does not start with one: NULL
	 * for $MEMSIM_PYTHON, else python3. */
	const char *python;
	bool quiet;  /* the script's stdout to /dev/null, not to stderr */
	unsigned timeout_s; /* seconds a recording may run; 0: no limit */
} msim_record_opts_t;

/*
 * Records cmd (python3 [-u -X.. -W..] SCRIPT ARGS, python3 -m MODULE
 * ARGS, torchrun [OPTIONS] SCRIPT ARGS: one rank of its world, or SCRIPT
 * ARGS) into out with the recorder's options ropt.  Returns the
 * recorder's exit status (0: out written; why then "", or what a non-zero
 * status means: a signal, the time limit, 128 + a signal memsim got, an
 * interpreter that could not be run, no trace written), or a negative
 * MSIM_E* when it could not be started (no recorder, no script, `-c`, an
 * output that cannot be written or is an input), with why filled.
 */
int msim_record_exec(const msim_record_opts_t *o, const char *out,
		     char *const *ropt, int nropt, char *const *cmd, int ncmd,
		     char *why, size_t whylen);

/* The signal (SIGTERM, SIGINT, SIGHUP) memsim got during the last
 * msim_record_exec(), passed on to the recorder, or 0: the caller stops. */
int msim_record_signal(void);

/* The recorder's option for a setting name ("checkpoint" ->
 * "--checkpoint": amp, checkpoint, device, world-size, rank,
 * dynamic-fraction, item-int, item-bool), or NULL. */
const char *msim_record_flag(const char *name);

/* The command with every {names[i]} replaced by values[i], in one pass
 * left to right (malloc'd: ncmd strings and a NULL; free with
 * msim_record_subst_free()), or NULL when out of memory. */
char **msim_record_subst(char *const *cmd, int ncmd, const char *const *names,
			 const char *const *values, size_t n);
void msim_record_subst_free(char **cmd, int ncmd);

/* Whether cmd has {name} in a word. */
bool msim_record_has(char *const *cmd, int ncmd, const char *name);

/* The recordings of a sweep over a command. */
typedef struct msim_recsweep_s msim_recsweep_t;

enum {
	MSIM_RECSWEEP_NOTE = 0, /* "recording 1/4 (batch=2): recording..." */
	MSIM_RECSWEEP_FAILED,   /* one recording failed; its settings not run */
};

typedef struct msim_recsweep_spec_s {
	char *const *cmd;       /* python3 SCRIPT ... {NAME} ... */
	int ncmd;
	/* Where the recordings are kept: DB.recordings beside db (made if
	 * missing, reused by a sweep run again) when db is given, else
	 * scratch (an existing folder). */
	const char *db;
	const char *scratch;
	bool force;             /* record again even when kept */
	msim_record_opts_t rec; /* quiet is set here */
	/* Recordings made at once through the recorder's fork server
	 * (lab/recserver.h); 0: 1. */
	int jobs;
	/* May be NULL: told each recording's progress (MSIM_RECSWEEP_NOTE)
	 * and failure (MSIM_RECSWEEP_FAILED), one line. */
	void (*note)(void *ctx, int what, const char *line);
	void *ctx;
	/* A {NAME} of the command whose values (integers) are recorded
	 * symbolic (lab/symrec.h): for each combination of the other names,
	 * twice with --symbolic, and every value where both hold
	 * instantiated instead of recorded; the rest recorded one by one.
	 * NULL: every value recorded. */
	const char *symbolic;
} msim_recsweep_spec_t;

/*
 * Moves the grid's recording names (a {NAME} of the command, or an option
 * of the recorder) out of grid (its other axes are kept, in order, and
 * *ngrid shrinks), then makes (or finds) one recording for each of their
 * combinations (up to spec->jobs at once, each a fork of one server
 * that imported PyTorch once).  A failed recording is counted and left
 * out.  Returns 0
 * with *out, or an error with why filled: a {NAME} no axis gives, an axis
 * twice, a symbolic name that is no {NAME} of the command or has a value
 * that is not an integer, a recorder that cannot be started, memsim
 * stopped by a signal (msim_record_signal()), no recording made.
 */
int msim_recsweep_make(const msim_recsweep_spec_t *spec, const char **grid,
		       size_t *ngrid, msim_recsweep_t **out, char *why,
		       size_t whylen);

/* The recordings made: their paths and labels ("batch=2,checkpoint=sqrt";
 * NULL when the grid names none), as msim_sweep_spec_t takes them. */
size_t msim_recsweep_count(const msim_recsweep_t *r);
const char *const *msim_recsweep_paths(const msim_recsweep_t *r);
const char *const *msim_recsweep_labels(const msim_recsweep_t *r);
size_t msim_recsweep_failed(const msim_recsweep_t *r);
/* For each recording, NULL where it was recorded (now or before), else
 * how it was made from a symbolic recording ("instantiated at B=5 from
 * FILE, which holds for B=2..40"), as msim_sweep_spec_t takes them. */
const char *const *msim_recsweep_origins(const msim_recsweep_t *r);
/* How many of the recordings were instantiated (spec->symbolic). */
size_t msim_recsweep_instantiated(const msim_recsweep_t *r);

void msim_recsweep_destroy(msim_recsweep_t *r);

#endif
