/*
 * The handles memsim.h gives its callers (memsim_run_t, memsim_live_t):
 * not an object's address but a token, the number of a slot in one table
 * and the slot's generation, which closing advances.  A closed object's
 * handle, used or closed again, meets a slot of another generation
 * (MEMSIM_ESTATE) and never freed memory, even once a new object took the
 * slot; a pointer that is no handle at all, or the handle of another kind
 * of object, names none (MEMSIM_EINVAL).  One mutex guards the table,
 * held for the look-up only; the table is never freed (it stays
 * reachable).
 */
#ifndef MSIM_LIB_HANDLE_H
#define MSIM_LIB_HANDLE_H

#include <stdbool.h>

enum { MSIM_HANDLE_RUN = 1, MSIM_HANDLE_LIVE };

/* Puts obj, of kind, in a slot; its token in *out.  Returns 0, or
 * MEMSIM_ENOMEM with *out NULL. */
int msim_handle_new(int kind, void *obj, void **out);

/* The object of kind that token h names, in *obj_out; MEMSIM_EINVAL for
 * NULL, no token or another kind's, MEMSIM_ESTATE for a closed one.  With
 * take, the slot is freed (the caller destroys the object). */
int msim_handle_get(const void *h, int kind, bool take, void **obj_out);

#endif
