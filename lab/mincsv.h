/*
 * The minimal path's own CSV reader, for `memsim bench` only: a trace of
 * the usual six columns (seq,time_us,action,addr,size,stream) parsed a
 * vector at a time and replayed by the minimal path (lab/minreplay.h),
 * with nothing of memsim's trace layer (traces/) in between.  What bench
 * compares `memsim run` on a CSV trace with.
 *
 * The parse is in two stages, as SIMD JSON parsers do: the separators
 * (',' and '\n') of each 64 bytes become one word of bits, by AVX2 where
 * the CPU has it (checked at run time), SSE2 on other x86-64 and 8-byte
 * words elsewhere (SWAR); then each row's six fields are cut at those
 * bits and their digits converted a vector (SSE2) or 8 digits (SWAR) at a
 * time.  The request stage is as small: an address map to dense ids,
 * alloc, free_requested and free_completed rows as
 * requests, segment_alloc and segment_free rows skipped.
 */
#ifndef MSIM_LAB_MINCSV_H
#define MSIM_LAB_MINCSV_H

#include <stddef.h>
#include <stdint.h>

#include "lab/minreplay.h"

/* How the separators are found. */
typedef enum {
	MSIM_MINCSV_BEST = 0, /* AVX2 where the CPU has it, else SSE2 or SWAR */
	MSIM_MINCSV_AVX2,
	MSIM_MINCSV_SSE2,
	MSIM_MINCSV_SWAR,
} msim_mincsv_isa_t;

/* Whether this build and this CPU can use isa. */
int msim_mincsv_isa_ok(msim_mincsv_isa_t isa);

/* Bit i of masks[b] set when p[64 * b + i] is ',' or '\n', for nblocks
 * blocks of 64 bytes. */
void msim_mincsv_separators(msim_mincsv_isa_t isa, const char *p,
			    size_t nblocks, uint64_t *masks);

/*
 * Parses the CSV trace at path and replays it through the minimal path.
 * Returns 0 with *st_out filled; MSIM_ENOTSUP when the file is not what
 * this reader takes (another header, another action, a row that is not
 * plain decimal) or the replay is not one the minimal path models;
 * another error; why says which, with the line.
 */
int msim_mincsv_replay(const char *path, msim_mincsv_isa_t isa,
		       msim_minreplay_stats_t *st_out, char *why,
		       size_t whylen);

#endif
