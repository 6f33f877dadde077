/*
 * Live addresses to dense request ids.  Trace formats name blocks by
 * address; policies want small integers they can index arrays with.  An id
 * is taken at an alloc and given back at its free, so ids stay below the
 * largest number of blocks live at once.  Open addressing with linear
 * probing and backward-shift deletion: no tombstones, so long traces do not
 * slow down.
 */
#ifndef MSIM_TRACES_IDMAP_H
#define MSIM_TRACES_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct msim_idmap_s {
	uint64_t *keys; /* addresses; 0 = empty slot */
	uint32_t *vals; /* ids */
	size_t mask;    /* slots - 1 */
	size_t count;   /* live addresses */
	uint32_t *free_ids; /* stack of ids given back */
	size_t nfree, capfree;
	uint32_t next_id; /* ids never used yet start here */
} msim_idmap_t;

/* Returns 0 or MSIM_ENOMEM. */
int msim_idmap_init(msim_idmap_t *m);
void msim_idmap_clear(msim_idmap_t *m);

/* Maps addr (non-zero) to a fresh id.  Returns 0, MSIM_EINVAL if addr is
 * live already, or MSIM_ENOMEM. */
int msim_idmap_add(msim_idmap_t *m, uint64_t addr, uint32_t *id_out);

/* Maps addr (non-zero) to id, chosen by the caller (a reader that kept
 * the ids itself hands them over; it sets free_ids and next_id too).
 * Returns 0, MSIM_EINVAL if addr is live already, or MSIM_ENOMEM. */
int msim_idmap_bind(msim_idmap_t *m, uint64_t addr, uint32_t id);

/* The id of live addr.  Returns 0 or MSIM_ENOTFOUND. */
int msim_idmap_find(const msim_idmap_t *m, uint64_t addr, uint32_t *id_out);

/* Forgets addr and gives its id back.  Returns 0 or MSIM_ENOTFOUND. */
int msim_idmap_remove(msim_idmap_t *m, uint64_t addr, uint32_t *id_out);

/* An id not bound to any address, for a request that never lives (an
 * expected OOM); give it back with msim_idmap_put_id(). */
int msim_idmap_take_id(msim_idmap_t *m, uint32_t *id_out);
int msim_idmap_put_id(msim_idmap_t *m, uint32_t id);

#endif
