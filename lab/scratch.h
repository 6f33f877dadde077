/*
 * Scratch folders for the files an experiment makes and then drops (the
 * recordings of `memsim fit` and of a recording sweep without --db):
 * made under $TMPDIR, removed with the files in them.  When to remove one
 * (the process's end, a signal) is the caller's: cli/cli.c hooks it.
 */
#ifndef MSIM_LAB_SCRATCH_H
#define MSIM_LAB_SCRATCH_H

#include <stddef.h>

/* Makes PREFIX-XXXXXX under $TMPDIR (default /tmp) into path (n bytes).
 * Returns 0, or an error with why filled. */
int msim_scratch_make(const char *prefix, char *path, size_t n, char *why,
		      size_t whylen);

/* Removes the folder path and the files in it (nothing makes folders
 * there).  Safe in a signal handler's process: no allocation. */
void msim_scratch_remove(const char *path);

#endif
