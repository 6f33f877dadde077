/*
 * Output files that never destroy an input: a same-file test by device and
 * inode (names lie: links, "./x" and "x"), and outputs written through a
 * temporary file in the same folder, renamed into place only once complete,
 * so a failed or interrupted write leaves the old file as it was.
 */
#ifndef MSIM_SIM_FILE_H
#define MSIM_SIM_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Whether a and b are the same existing file (device and inode). */
bool msim_same_file(const char *a, const char *b);

typedef struct msim_outfile_s {
	FILE *fp;   /* write here */
	char *path; /* the final name */
	char *tmp;  /* the temporary name, or NULL when written directly */
} msim_outfile_t;

/*
 * Opens path for writing.  A regular file, or a path that does not exist
 * yet, is written through a temporary file next to it; anything else
 * (/dev/stdout, a FIFO) directly.  Returns 0, or MSIM_EIO / MSIM_ENOMEM
 * with why filled ("path: reason").
 */
int msim_outfile_open(msim_outfile_t *o, const char *path, char *why,
		      size_t whylen);

/* Closes o and renames the temporary file into place.  Returns 0, or
 * MSIM_EIO with why filled (the temporary file is then removed). */
int msim_outfile_commit(msim_outfile_t *o, char *why, size_t whylen);

/* Closes o and removes the temporary file; the old file stays. */
void msim_outfile_abort(msim_outfile_t *o);

#endif
