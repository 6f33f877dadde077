/*
 * One symbolic recording for many values of a setting
 * (docs/symbolic-sizes.md): the command recorded twice with `memsim
 * record --symbolic NAME=V:MAX`, at two neighbouring values V, and the
 * two traces checked against each other (both hold at both values, and
 * each instantiated at both gives the same bytes as the other).  Where
 * they agree, every value of the range where both hold is instantiated
 * (traces/symtrace.h) instead of recorded.  `memsim fit --symbolic` and
 * `memsim sweep --symbolic NAME -- COMMAND` both go through here.
 *
 *	msim_symrec_make() -> [msim_symrec_holds() -> instantiate]
 */
#ifndef MSIM_LAB_SYMREC_H
#define MSIM_LAB_SYMREC_H

#include <stdbool.h>
#include <stddef.h>

#include "lab/record.h"
#include "lab/recserver.h"

/* What to record symbolic. */
typedef struct msim_symrec_spec_s {
	const msim_record_opts_t *rec;
	/* The recorder's fork server, none of its recordings running; NULL:
	 * each recording alone. */
	msim_recserver_t *srv;
	char *const *cmd;       /* with {name}, the other names given */
	int ncmd;
	char *const *ropt;      /* the recorder's other options */
	int nropt;
	const char *name;       /* the setting: {name} in cmd */
	long lo, hi;            /* the values wanted; MAX = min(hi, 2^24) */
	long at;                /* where to record: the first value, then
				 * the next (at the top, the one before) */
	/* The file of the recording at value v, made with ropt and cmd as
	 * given (the --symbolic option last); the check's files are beside
	 * it. */
	void (*path)(void *ctx, long v, char *const *ropt, int nropt,
		     char *const *cmd, char *buf, size_t n);
	void *ctx;
	/* A trace already at its path is taken as made (not recorded
	 * again). */
	bool reuse;
	/* May be NULL: told each step, one line ("recording B=11
	 * symbolic"). */
	void (*note)(void *ctx, const char *line);
} msim_symrec_spec_t;

/* What came of it. */
typedef struct msim_symrec_s {
	long v[2];              /* the values recorded with --symbolic */
	int recordings;         /* made with --symbolic now (0 to 2) */
	/* Where the trace holds (lo <= hi: the trace is used), or lo > hi
	 * and why says why not ("not used: recording B=47 with --symbolic
	 * was refused (exit 3: ...)"). */
	long lo, hi;
	char trace[4096];       /* the first recording */
	char why[1024];         /* "B=2..40 instantiated ...", or "not used:
				 * ..." */
} msim_symrec_t;

/*
 * Records and checks (msim_symrec_spec_t).  Returns 0 with *res (used or
 * not, res->why says), or a negative MSIM_E* with why when the caller
 * cannot go on: no recorder, an output refused, memsim interrupted
 * (msim_record_signal(); MSIM_EIO).
 */
int msim_symrec_make(const msim_symrec_spec_t *spec, msim_symrec_t *res,
		     char *why, size_t whylen);

/* Whether value is one the trace of res is instantiated at. */
bool msim_symrec_holds(const msim_symrec_t *res, long value);

#endif
