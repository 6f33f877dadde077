/*
 * Inputs: what a run replays, as one request source.  A trace file (any
 * format of traces/trace.h), a model spec generated in memory
 * ("model:arch=gpt2,..."; traces/model_spec.h), or a recording under a
 * dtype transform (traces/xform.h).  Every command that replays a setting
 * opens its input here, through the job API (lab/job.h).
 */
#ifndef MSIM_LAB_INPUT_H
#define MSIM_LAB_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/engine.h"
#include "sim/types.h"
#include "traces/gen.h"
#include "traces/trace.h"
#include "traces/xform.h"

/*
 * A trace file read once into memory, for the settings of a sweep to
 * replay without reading it again (forked workers share its pages): the
 * requests msim_trace_next() gave, in order, and the trace read to its end
 * (its format, hash and tags).  Only traces whose replay needs nothing
 * else of the reader: one whose format is not a snapshot
 * (msim_trace_format_t.snapshot: a CSV, RMM log or binary trace), read
 * without error and without seeding a partial history.
 */
typedef struct msim_trace_cache_s {
	msim_trace_t *trace;       /* NULL: not cached */
	msim_req_t *reqs;
	size_t n;
	msim_trace_options_t topt; /* what it was read with */
} msim_trace_cache_t;

/* Reads path with topt into c if it is such a trace of at most max
 * requests; else (or out of memory) leaves c->trace NULL. */
void msim_trace_cache_load(msim_trace_cache_t *c, const char *path,
			   const msim_trace_options_t *topt, size_t max);
void msim_trace_cache_clear(msim_trace_cache_t *c);

/* Whether c holds path read with topt. */
bool msim_trace_cache_fits(const msim_trace_cache_t *c,
			   const msim_trace_options_t *topt);

/*
 * What a run replays: a trace file, a model spec generated in memory
 * (model_spec with strategy's keys), or a trace file under a transform
 * (strategy "transform:dtype=..."), as one source.
 */
typedef struct msim_input_s {
	msim_source_t src;
	const char *format;     /* the trace format's name, or "model" */
	msim_trace_t *trace;
	msim_gen_t *gen;
	msim_xform_t *xform;
	char meta[4][2][40];    /* run_meta of the generator or transform */
	size_t nmeta;
	const msim_trace_cache_t *cache; /* the requests come from it; trace
					  * is its (not closed here) */
	size_t cache_pos;
} msim_input_t;

/*
 * Opens in (topt applies to trace files).  run (may be NULL) is the
 * simulation the input is for: under a cap, a checkpoint=budget:B of a
 * model spec then counts the bytes that allocator reserves under that
 * cap, not the bytes allocated.  Returns 0, or an error with why.
 */
int msim_input_open(msim_input_t *in, const char *trace,
		    const char *model_spec, const char *strategy,
		    const msim_trace_options_t *topt,
		    const msim_sim_config_t *run, char *why, size_t whylen);
void msim_input_close(msim_input_t *in);

/* Opens in as the requests of c (c->trace set), replayed from memory; in
 * must stay where it is while it is read. */
void msim_input_open_cache(msim_input_t *in, const msim_trace_cache_t *c);

/* base (key, value, ..., NULL; may be NULL) followed by in's run_meta,
 * into kv_out (n entries, NULL-terminated); points into both. */
void msim_input_meta(const msim_input_t *in, const char *const *base,
		     const char **kv_out, size_t n);

/*
 * The strategy string and setting of input for a model spec or a
 * transform (memsim run): for a model spec, *spec_out is its canonical
 * shape (malloc'd) and *strategy_out its strategies; with transform
 * (a "dtype=..." spec, NULL: none) for a file, *strategy_out is
 * "transform:dtype=..." or NULL for the identity.  Returns 0 or
 * MSIM_EINVAL with why.
 */
int msim_input_describe(const char *trace, const char *transform,
			char **spec_out, char **strategy_out, char *why,
			size_t whylen);

/* The content hash of the file at path, as runs store it (16 hex digits
 * into hex[17]).  Returns 0 or MSIM_EIO with why. */
int msim_file_hash(const char *path, char hex[17], char *why, size_t whylen);

#endif
