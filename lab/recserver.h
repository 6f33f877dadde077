/*
 * The recorder's fork server: start once, record many.  `memsim fit` and
 * `memsim sweep -- COMMAND` record one script at many values; each
 * recording started alone pays Python's start-up and PyTorch's imports
 * (about 4 s of CPU) before its fake step.  The server
 * (traces/memsim_record/server.py) imports them once, then forks a fresh
 * process per recording, several at once if asked: each is the recording
 * `python3 -m memsim_record ARGV` makes (the same trace, byte for byte:
 * tests/recorder_server.sh), without the start-up.
 *
 *	msim_recserver_new() -> (_submit(), _wait())... -> _destroy()
 *
 * The protocol is one line each way over a socket pair (server.py says
 * it).  The server dies with this process (the socket's end, and
 * PR_SET_PDEATHSIG), and its recordings with it.  MEMSIM_RECORD_SERVER=0
 * in the environment turns it off: msim_recserver_new() then returns
 * MSIM_ENOTFOUND and callers record each value alone (msim_record_exec()).
 */
#ifndef MSIM_LAB_RECSERVER_H
#define MSIM_LAB_RECSERVER_H

#include <stddef.h>

#include "lab/record.h"

typedef struct msim_recserver_s msim_recserver_t;

/*
 * Starts the server for the recordings of cmd (its interpreter; the
 * script's imports that are safe to make early are made there) and waits
 * until it has imported PyTorch.  Returns 0 with *out, MSIM_ENOTFOUND
 * when it is turned off, cannot run the command as typed (python3 -u,
 * -X, -W: options of an interpreter that starts once) or could not start
 * (why says which; record each value alone then), MSIM_EIO when memsim
 * got a signal meanwhile (stop: msim_record_signal()), or another
 * negative MSIM_E* with why for what msim_record_exec() refuses too (no
 * recorder, no script).  While it lives, memsim's SIGTERM, SIGINT and
 * SIGHUP are passed on to it (lab/recproc.h): it then kills every
 * recording's process group and exits.
 */
int msim_recserver_new(const msim_record_opts_t *o, char *const *cmd,
		       int ncmd, msim_recserver_t **out, char *why,
		       size_t whylen);

/*
 * Starts recording cmd into out with the recorder's options ropt, as
 * msim_record_exec() would (out checked, a private folder beside it,
 * --timeout of the options it was made with applied to this recording);
 * id names it to msim_recserver_wait().  cmd
 * must start with the server's interpreter, as the one it was made with.
 * Returns 0, or a negative MSIM_E* with why (the server gone, a cmd the
 * server cannot run).
 */
int msim_recserver_submit(msim_recserver_t *s, int id, const char *out,
			  char *const *ropt, int nropt, char *const *cmd,
			  int ncmd, char *why, size_t whylen);

/* How many recordings are running. */
int msim_recserver_running(const msim_recserver_t *s);

/*
 * Waits for one of the recordings to end (its process group gone, its
 * trace then renamed into place): *id_out, and what msim_record_exec()
 * returns for it (its exit status, why filled when not 0), or a
 * negative MSIM_E* with why when the server is gone (*id_out -1; after
 * a signal to memsim, msim_record_signal() says which).
 */
int msim_recserver_wait(msim_recserver_t *s, int *id_out, char *why,
			size_t whylen);

/* Ends the server (and what it still records) and waits for it. */
void msim_recserver_destroy(msim_recserver_t *s);

#endif
