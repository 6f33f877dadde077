/*
 * Read-ahead: a request source wrapped so that it is read on a thread of
 * its own, in batches, while the engine replays.  The order of requests,
 * the end and any error (with its message) are the inner source's.
 */
#ifndef MSIM_TRACES_PREFETCH_H
#define MSIM_TRACES_PREFETCH_H

#include "sim/types.h"

typedef struct msim_prefetch_s msim_prefetch_t;

/* Starts reading inner ahead.  inner must stay valid until
 * msim_prefetch_destroy().  Returns 0 or MSIM_ENOMEM. */
int msim_prefetch_new(msim_source_t inner, msim_prefetch_t **out);

/* The requests of inner, read ahead. */
msim_source_t msim_prefetch_source(msim_prefetch_t *p);

/* Stops the reader thread (also before the end) and frees p; NULL is a
 * no-op. */
void msim_prefetch_destroy(msim_prefetch_t *p);

#endif
