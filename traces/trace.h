/*
 * Trace sources: every format is a reader behind one const table, and
 * msim_trace_open() picks the format by content.  Readers stream: memory
 * stays constant in the trace length.  Each reader yields requests in file
 * order (msim_req_t), maps addresses to dense ids, hashes the bytes it reads
 * (the content hash stored with a run), and keeps a message naming the
 * file, the line and the reason of any error.
 */
#ifndef MSIM_TRACES_TRACE_H
#define MSIM_TRACES_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/types.h"
#include "traces/idmap.h"

typedef struct msim_trace_s msim_trace_t;

/* Which recorded rows become requests. */
typedef struct msim_trace_options_s {
	bool deferred_frees; /* emit free_requested as FREE_REQUESTED too */
} msim_trace_options_t;

typedef struct msim_trace_format_s {
	const char *name; /* "csv" */
	const char *exts; /* ".csv" */
	/* Whether the first n bytes of a file look like this format. */
	bool (*probe)(const char *head, size_t n);
	/* Sets up t->fmt for reading t->fp.  Returns 0 or an error with
	 * msim_trace_fail(). */
	int (*open)(msim_trace_t *t);
	/* The next request: 1, 0 at the end, or an error. */
	int (*next)(msim_trace_t *t, msim_req_t *req_out);
	void (*close)(msim_trace_t *t);
} msim_trace_format_t;

extern const msim_trace_format_t msim_trace_csv;

/* A 64-bit content hash, fed in pieces (not cryptographic). */
typedef struct msim_hash_s {
	uint64_t h, tail, len;
	unsigned ntail;
} msim_hash_t;
void msim_hash_init(msim_hash_t *h);
void msim_hash_update(msim_hash_t *h, const void *data, size_t n);
uint64_t msim_hash_final(const msim_hash_t *h);

/* What readers share; formats keep their own state in fmt. */
struct msim_trace_s {
	const msim_trace_format_t *format;
	char *path;
	FILE *fp;
	msim_trace_options_t opt;
	msim_idmap_t ids;
	msim_hash_t hash;
	uint64_t line;      /* line (or record) being read, 1-based */
	uint64_t requests;  /* requests returned so far */
	msim_time_t t0;     /* first timestamp, microseconds */
	bool have_t0;
	void *fmt;
	char errmsg[512];
};

/*
 * Opens path, detecting the format by content.  opt may be NULL.
 * Returns 0, or an error with why naming the file and the reason.
 */
int msim_trace_open(const char *path, const msim_trace_options_t *opt,
		    msim_trace_t **out, char *why, size_t whylen);

/* The next request: 1, 0 at the end, or an error (msim_trace_errmsg()). */
int msim_trace_next(msim_trace_t *t, msim_req_t *req_out);

/* "file:line: reason" of the last error. */
const char *msim_trace_errmsg(const msim_trace_t *t);

/* Hash of the bytes read so far: the file's hash once at the end. */
uint64_t msim_trace_hash(const msim_trace_t *t);

const char *msim_trace_format_name(const msim_trace_t *t);

/* Closes t; NULL is a no-op. */
void msim_trace_close(msim_trace_t *t);

/* For readers: records "path:line: <fmt>" and returns code. */
int msim_trace_fail(msim_trace_t *t, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* For readers: reads up to n bytes, hashing them.  Returns bytes read. */
size_t msim_trace_read(msim_trace_t *t, void *buf, size_t n);

/* For readers: turns a recorded microsecond timestamp into simulated ns. */
msim_time_t msim_trace_time(msim_trace_t *t, uint64_t time_us);

#endif
