/*
 * The recorder's process (internal to lab/record.c): the command line as
 * users type it (python3 -u/-X/-W/-m, torchrun), the output checked before
 * the script runs, a private folder beside the output where the recorder
 * writes, the recorder in a process group of its own whose life is
 * memsim's (a signal to memsim is passed on, --timeout ends it, whatever
 * it leaves running is killed), and the trace renamed into place by
 * memsim only once the recorder's whole group is gone.
 */
#ifndef MSIM_LAB_RECPROC_H
#define MSIM_LAB_RECPROC_H

#include <stdbool.h>
#include <stddef.h>

/* The recorder's argv (malloc'd, NULL-terminated; free with free(), the
 * strings are cmd's, ropt's, static or *extra's):
 *   PY [interpreter flags] -m memsim_record -o OUT ROPT [torchrun's
 *   --world-size N] [--module] -- SCRIPT|MODULE ARGS
 * py is the interpreter when cmd does not start with one (NULL: the one
 * of torchrun's "#!" line, else python3); *extra holds the strings made
 * here (free it).  --world-size and --rank are checked.  Returns 0, or
 * MSIM_EINVAL / MSIM_ENOMEM with why (one line: "python3 -c" refused,
 * no script, a torchrun option it cannot map). */
int msim_recproc_argv(const char *py, const char *out, char *const *ropt,
		      int nropt, char *const *cmd, int ncmd, char ***av_out,
		      char **extra_out, char *why, size_t whylen);

/* Whether out can be a recording's output: msim_output_check(), not an
 * existing device, FIFO or folder (the trace is renamed into place), and
 * not a file the command names (the script, a data file).  0 or
 * MSIM_EINVAL / MSIM_EIO with why. */
int msim_recproc_check_out(const char *out, char *const *cmd, int ncmd,
			   char *why, size_t whylen);

/* A private folder beside out (absolute path in stage, n bytes), where
 * the recorder writes; removed with what is in it by _unstage(). */
int msim_recproc_stage(const char *out, char *stage, size_t n, char *why,
		       size_t whylen);
void msim_recproc_unstage(const char *stage);

/* How the recorder ended. */
enum { MSIM_RECPROC_EXITED, MSIM_RECPROC_TIMEOUT, MSIM_RECPROC_SIGNAL };

/* Runs av with PYTHONPATH led by dir, in a process group of its own
 * (unless stdin is a terminal: then the terminal's job control reaches
 * it), killed with memsim (PR_SET_PDEATHSIG where available); SIGTERM,
 * SIGINT and SIGHUP to memsim are passed on; after timeout_s seconds (0:
 * none) it gets SIGTERM, 5 s later SIGKILL.  When it ends, what is left
 * of its group is killed.  Returns 0 with *status (waitpid's), *how and
 * *sig (the signal memsim got, for MSIM_RECPROC_SIGNAL), *exec_errno
 * (the exec's errno, 0: it ran) and *pid; or MSIM_EIO / MSIM_ENOMEM with
 * why. */
int msim_recproc_run(char **av, const char *dir, bool quiet,
		     unsigned timeout_s, int *status, int *how, int *sig,
		     int *exec_errno, long *pid, char *why, size_t whylen);

/* msim_recproc_run() in two halves, for a process that lives while
 * memsim does other things (the fork server, lab/recserver.c): _start()
 * forks and execs av as _run() does and leaves memsim's handlers in
 * place (a signal to memsim is passed on to the process's group);
 * _end() waits for it (timeout_s as _run()'s), kills what is left of
 * its group, reaps it and puts the handlers back.  One at a time. */
int msim_recproc_start(char **av, const char *dir, bool quiet, long *pid,
		       int *exec_errno, char *why, size_t whylen);
int msim_recproc_end(long pid, unsigned timeout_s, int *status, int *how,
		     int *sig, char *why, size_t whylen);

/* Renames trace (in the stage) to out.  0 or MSIM_EIO with why. */
int msim_recproc_publish(const char *trace, const char *out, char *why,
			 size_t whylen);

/* The signal that stopped the last recording (SIGTERM, SIGINT, SIGHUP
 * sent to memsim), or 0. */
int msim_recproc_signal(void);

#endif
