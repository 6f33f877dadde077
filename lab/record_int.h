/*
 * The recorder's launch, for lab/ files that start it other ways than
 * msim_record_exec() (lab/recserver.c, the fork server): the output
 * checked and a private folder made (the argv as lab/recproc.h reads the
 * command), and the end read and the trace published, one copy each.
 */
#ifndef MSIM_LAB_RECORD_INT_H
#define MSIM_LAB_RECORD_INT_H

#include "lab/record.h"

/* The folder holding memsim_record/: $MEMSIM_PYTHONPATH, else
 * PYTHON_FROM_BINDIR beside the running program, else the first of dirs
 * that has it, else NULL. */
const char *msim_record_module_dir(const char *const *dirs);

/* The interpreter when the command does not start with one: o->python,
 * else $MEMSIM_PYTHON, else NULL (python3, or the interpreter of a
 * launcher such as torchrun: lab/recproc.h). */
const char *msim_record_python(const msim_record_opts_t *o);

/* Before a recording of cmd into out: the recorder's folder (*dir), out
 * checked (msim_recproc_check_out()), a private folder beside it (stage,
 * n bytes) and the recorder's argv writing stage/trace.csv (*av, *extra:
 * msim_recproc_argv()'s; free both).  0, or a negative MSIM_E* with why
 * (nothing left behind). */
int msim_record_stage(const msim_record_opts_t *o, const char *out,
		      char *const *ropt, int nropt, char *const *cmd,
		      int ncmd, const char **dir, char *stage, size_t n,
		      char ***av, char **extra, char *why, size_t whylen);

/* After the recorder pid (interpreter py) ended and all it started is
 * gone (status, how, sig, exec_errno: msim_recproc_run()'s): what it
 * means in why, the trace published from stage to out when it
 * succeeded, stage removed.  Returns msim_record_exec()'s answer. */
int msim_record_finish(const msim_record_opts_t *o, const char *py,
		       const char *stage, const char *out, int status,
		       int how, int sig, int exec_errno, long pid, char *why,
		       size_t whylen);

#endif
