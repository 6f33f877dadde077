/*
 * Convert: a trace from one format to another, entry by entry (rows a
 * format cannot hold are dropped by its writer), optionally repeated:
 * each pass after the first at fresh addresses above the previous pass's
 * (2 MiB aligned) and on a clock that goes on.  The output is written
 * whole or not at all: on any error its old content stays.  `memsim
 * convert` prints what it did.
 */
#ifndef MSIM_LAB_CONVERT_H
#define MSIM_LAB_CONVERT_H

#include <stdint.h>

#include "traces/trace.h"

typedef struct msim_convert_spec_s {
	const char *in, *out;
	const msim_trace_format_t *to;   /* NULL: by out's extension */
	const msim_trace_options_t *opt; /* how in is read; may be NULL */
	uint64_t repeat;                 /* passes, >= 1 */
} msim_convert_spec_t;

typedef struct msim_convert_result_s {
	uint64_t entries;                /* written, every pass */
	char from[32], to[32];           /* the formats' names */
	/* The input's allocator settings where the output's format cannot
	 * hold them (only CSV does: its first row); "" otherwise. */
	char dropped_conf[512];
} msim_convert_result_t;

/* Converts.  Returns 0 with *res, or an error with why (out is in, a
 * reader or writer error, --repeat running out of addresses). */
int msim_convert_run(const msim_convert_spec_t *spec,
		     msim_convert_result_t *res, char *why, size_t whylen);

#endif
