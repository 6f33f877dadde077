/*
 * The recorder's launch, for lab/ files that start it other ways than
 * msim_record_exec() (lab/recserver.c, the fork server): the checks, the
 * child's set-up, the argv and the reading of how it ended, one copy each.
 */
#ifndef MSIM_LAB_RECORD_INT_H
#define MSIM_LAB_RECORD_INT_H

#include "lab/record.h"

/* The folder holding memsim_record/: $MEMSIM_PYTHONPATH, else the first
 * of dirs that has it, else NULL. */
const char *msim_record_module_dir(const char *const *dirs);

/* Checks cmd as msim_record_exec() takes it: 0 with the recorder's
 * folder, the interpreter and how many words of cmd name it (0 or 1),
 * or a negative MSIM_E* with why. */
int msim_record_check(const msim_record_opts_t *o, char *const *cmd,
		      int ncmd, const char **dir_out, const char **py_out,
		      int *skip_out, char *why, size_t whylen);

/* In a forked child: PYTHONPATH with dir, stdout to stderr (quiet: to
 * /dev/null), then execvp(py, av); an exec that fails writes its errno
 * to fd.  Never returns. */
_Noreturn void msim_record_child(const char *dir, const char *py, char **av,
				 int quiet, int fd);

/* The recorder's argv: py -m memsim_record -o out ropt -- cmd[skip..]
 * (malloc'd array of borrowed strings, NULL-terminated), or NULL. */
char **msim_record_argv(const char *py, const char *out, char *const *ropt,
			int nropt, char *const *cmd, int ncmd, int skip);

/* After the recorder pid wrote out and ended with wait status status (or
 * could not exec py, exec_errno): removes its temporary and fault files
 * and returns msim_record_exec()'s answer (the exit status, why filled). */
int msim_record_status(const char *out, const char *py, long pid, int status,
		       int exec_errno, char *why, size_t whylen);

#endif
