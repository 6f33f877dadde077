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
#include <stdint.h>
#include <stdio.h>

/* Whether a and b are the same existing file (device and inode). */
bool msim_same_file(const char *a, const char *b);

/*
 * Whether path can be written as an output, checked before any work (the
 * commands call it as they read their options): 0, or MSIM_EINVAL /
 * MSIM_EIO with why, one line naming path: an empty name, a folder, a
 * missing folder or one that is not a folder, a folder where no file can
 * be made (read-only, no permission: tried with a temporary file, removed
 * at once), a device or FIFO that cannot be written.  An existing device
 * or FIFO is fine: msim_outfile_open() writes it in place.  Whether path
 * is one of the inputs is the caller's question (msim_same_file()).
 */
int msim_output_check(const char *path, char *why, size_t whylen);

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

/* Closes o and renames the temporary file into place, unless path has
 * become something else than a regular file meanwhile (a device, a FIFO,
 * a folder: never renamed over).  Returns 0, or MSIM_EIO with why filled
 * (the temporary file is then removed). */
int msim_outfile_commit(msim_outfile_t *o, char *why, size_t whylen);

/* Closes o and removes the temporary file; the old file stays. */
void msim_outfile_abort(msim_outfile_t *o);

/*
 * A text file read a line at a time with a limit on its size, so that
 * /dev/zero, a FIFO that never ends or a binary file given where a text
 * file was meant (--calibration, a settings file) ends in one line, not a
 * hang or a heap that grows: every line read counts against limit bytes;
 * a NUL byte or a line that does not fit is an error naming the line.
 */
#define MSIM_TEXT_MAX (16u << 20) /* bytes: a default limit, 16 MiB */

typedef struct msim_text_s {
	FILE *fp;
	const char *path;     /* for messages; not owned */
	uint64_t nread;       /* bytes read so far */
	uint64_t limit;       /* bytes at most */
	unsigned long lineno; /* of the last line read */
} msim_text_t;

/* Opens path to read (fp NULL), or reads fp (closed by
 * msim_text_close()).  Returns 0 or MSIM_EIO with why. */
int msim_text_open(msim_text_t *t, const char *path, FILE *fp,
		   uint64_t limit, char *why, size_t whylen);

/* The next line in buf (its '\n' dropped, n bytes at most with the
 * '\0').  Returns 1, 0 at the end, or MSIM_EFORMAT ("path:N: a NUL byte:
 * not a text file", "line too long", "path: larger than N bytes") or
 * MSIM_EIO with why. */
int msim_text_line(msim_text_t *t, char *buf, size_t n, char *why,
		   size_t whylen);

void msim_text_close(msim_text_t *t);

#endif
