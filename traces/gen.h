/*
 * Synthetic request streams: what every generator shares.  A generator
 * fills an msim_gen_t with requests (ALLOC and FREE with dense ids, one
 * microsecond apart) and counts the allocated bytes as it goes, so the
 * peak of a generated run is known without a replay.  The result is an
 * msim_source_t for the engine, or a device-trace CSV that fmt_csv.c reads
 * (addresses are invented: a bump counter, unique for ever).
 */
#ifndef MSIM_TRACES_GEN_H
#define MSIM_TRACES_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/types.h"
#include "sim/types.h"

typedef struct msim_gen_s {
	msim_req_t *reqs;    /* the requests, in order */
	size_t n, cap;       /* used and allocated entries of reqs (with
			      * csv: requests written; reqs stays empty) */
	uint64_t *sizes;     /* bytes of each live id */
	uint32_t *free_ids;  /* ids given back, reused first (LIFO) */
	size_t nfree, idcap; /* free ids; capacity of sizes and free_ids */
	uint32_t next_id;    /* ids handed out so far */
	uint64_t allocated;  /* bytes live now */
	uint64_t peak;       /* highest allocated */
	uint64_t recompute;  /* layer forwards recomputed (checkpointing) */
	msim_time_t clock;   /* ns; each request advances it 1 us */
	bool dry;            /* count bytes only, keep no requests */
	bool failed;         /* a host allocation failed */
	size_t pos;          /* next request msim_gen_source() yields */
	FILE *csv;           /* msim_gen_stream_csv(): rows go here */
	uint64_t *addrs;     /* with csv: invented address of each id */
	uint64_t bump, seq;  /* with csv: next address, next row */
	char errmsg[256];
} msim_gen_t;

/* Sets g up empty.  dry: count bytes, store nothing. */
void msim_gen_init(msim_gen_t *g, bool dry);

/* Frees what g holds; g itself belongs to the caller. */
void msim_gen_clear(msim_gen_t *g);

/* Appends ALLOC of size bytes on stream; returns its id, or -1 if the
 * host ran out of memory (g->failed is then set). */
int64_t msim_gen_alloc(msim_gen_t *g, uint64_t size, msim_stream_t stream);

/* Appends FREE of id (which must be live). */
void msim_gen_free(msim_gen_t *g, uint32_t id);

/* The requests as a source for msim_sim_new(); g must outlive it. */
msim_source_t msim_gen_source(msim_gen_t *g);

/* From now on, writes each request to fp as msim_gen_write_csv() would
 * and keeps none: memory follows the live ids, not the requests.  Writes
 * the header now.  Returns 0 or MSIM_EIO. */
int msim_gen_stream_csv(msim_gen_t *g, FILE *fp);

/* Writes the device-trace CSV (header seq,time_us,action,addr,size,stream;
 * alloc, free_requested and free_completed rows).  Returns 0 or MSIM_EIO. */
int msim_gen_write_csv(const msim_gen_t *g, FILE *fp);

#endif
