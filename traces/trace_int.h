/*
 * For format authors (libuv's uv-common.h beside uv.h): what a reader or
 * writer of one format shares with traces/trace*.c.  Users of traces
 * include traces/trace.h only.
 */
#ifndef MSIM_TRACES_TRACE_INT_H
#define MSIM_TRACES_TRACE_INT_H

#include "traces/idmap.h"
#include "sim/file.h"
#include "traces/trace.h"

/*
 * Every trace format, one line each, in the order detection tries them
 * (traces/trace.c): X(name) stands for the table msim_trace_<name>, the
 * only non-static symbol of traces/fmt_<name>.c.  The binary formats have
 * magic numbers, so they go first; the RMM header is more specific than
 * the device-trace CSV's.  Adding a format is adding its line here
 * (docs/changing.md).
 */
#define MSIM_TRACE_FORMATS(X)						\
	X(bin)								\
	X(pickle)							\
	X(rmm)								\
	X(csv)								\
	/* a format a line, each ending in a backslash */

#define MSIM_TRACE_FORMAT_EXTERN(name)					\
	extern const msim_trace_format_t msim_trace_##name;
MSIM_TRACE_FORMATS(MSIM_TRACE_FORMAT_EXTERN)
#undef MSIM_TRACE_FORMAT_EXTERN

/* The tag table of a trace (see msim_trace_tag()). */
typedef struct msim_tags_s {
	uint8_t *cat;      /* by tag: msim_category_t */
	uint32_t *site;    /* by tag: offset of the site in text */
	uint32_t n, cap;   /* tags in use (0 .. n - 1), allocated */
	char *text;        /* the sites, NUL-terminated */
	size_t ntext, captext;
	uint16_t *slot;    /* open addressing by (category, site): tag */
	uint32_t nslot;    /* a power of two, or 0 */
} msim_tags_t;

/* What readers share; formats keep their own state in fmt. */
struct msim_trace_s {
	const msim_trace_format_t *format;
	char *path;
	FILE *fp;
	bool ended;         /* the format reached its end (all bytes hashed) */
	msim_trace_options_t opt;
	msim_idmap_t ids;
	msim_hash_t hash;
	uint64_t line;      /* text formats: line being read, 1-based */
	uint64_t offset;    /* binary formats: 1 + byte offset of the entry */
	uint64_t size;      /* bytes in the file, 0 if unknown (a pipe) */
	uint64_t entries;   /* entries read so far */
	uint64_t actions[MSIM_NACT]; /* entries read so far, by action */
	uint64_t first_us, last_us;  /* times of the first and last entry */
	/* Bytes the segment rows read so far leave reserved (segment_alloc
	 * and _map less segment_free and _unmap); below 0 if the recording
	 * lost its oldest rows. */
	int64_t seg_bytes;
	uint64_t requests;  /* requests returned so far */
	msim_time_t t0;     /* first timestamp, microseconds */
	bool have_t0;
	void *fmt;
	msim_tags_t tags;   /* (category, site) pairs of alloc entries */
	bool tagged;        /* the format found tags (msim_trace_tagged()) */
	char errmsg[512];
	/* The request stage between entries and msim_trace_next(). */
	msim_entry_t la;     /* an entry read ahead, to serve next */
	bool have_la;
	bool in_run;         /* inside a run of segment_free rows */
	bool in_call;        /* after an empty_cache row, with
			      * hidden_empty_cache: its call not yet served */
	bool pool_emptying;  /* after a pool_release of size 1 (~MemPool's
			      * emptyCache(pool)): its segment_free rows */
	bool pending_id;     /* an expected-OOM id to give back */
	uint32_t oom_id;
	uint8_t next_flags;  /* MSIM_REQF_* for the next ALLOC */
	uint64_t run_time_us; /* time of the run's last row */
	uint64_t empty_caches; /* hidden empty_cache calls found (rule a) */
	uint64_t maybe_empty_caches; /* runs left to the policy (rule b) */
	int8_t fast;         /* msim_trace_fill(): 1 through the format's
			      * requests(), -1 entry by entry (a format may
			      * switch to it, with the ids, t->la set), 0 not
			      * chosen */
	/* Partial histories (msim_trace_seeding()). */
	bool prescanned;      /* msim_trace_prescan() ran */
	bool lazy_seed;       /* no first pass: seed frees where met */
	msim_req_t *seedq;    /* the requests that rebuild the start */
	size_t nseedq, capseedq, seedpos;
	msim_trace_seed_t seed;
	/* Private pools of a snapshot (msim_trace_pool_derive(), trace_seed.c). */
	uint32_t npools;      /* private pools its segments name; 0: off */
	struct msim_pseg_s {  /* its private segments of the end state */
		uint64_t addr, size;
		uint64_t ord;  /* the entry (1-based) whose segment_alloc made
				* it; 0: it was there when the history began */
		uint32_t pool;
	} *pseg;              /* by address */
	size_t npseg;
	struct msim_pcur_s {  /* streams allocating to a private pool now */
		msim_stream_t stream;
		uint32_t pool;
	} *pcur;
	size_t npcur, cappcur;
	msim_req_t *pq;       /* pool requests to serve before the entry in
			       * t->la */
	size_t npq, cappq, pqpos;
	bool pool_done;       /* t->la's pool requests were served */
	/* Set by formats. */
	uint64_t untimed;     /* entries without a time */
	uint64_t zero_skipped; /* zero-byte requests skipped (RMM logs) */
	uint64_t skipped;     /* entries of unknown actions (lenient) */
	char skipped_first[48]; /* the first such action */
	char alloc_conf[512]; /* the snapshot's or recording's allocator
			       * settings */
	bool have_conf;
	bool conf_recorded;   /* they are a recording's (fmt_csv.c) */
	msim_trace_oom_t oomrec; /* its first oom record (trace_seed.c) */
	bool have_oom;
	/* Expandable segments: reservations seen (base, mapped end), so that
	 * the first segment_map of a new one becomes an address hint. */
	uint64_t (*resv)[2];
	size_t nresv, capresv;
};

/* A trace being written. */struct msim_trace_writer_s {
	const msim_trace_format_t *format;
	char *path;
	FILE *fp;           /* out.fp */
	msim_outfile_t out; /* renamed into place on a clean close */
	uint64_t entries; /* entries written so far */
	const msim_trace_t *tags_src; /* whose tags the entries carry */
	void *fmt;
	char errmsg[512];
};

/* For readers: records "path:line: <fmt>" and returns code. */
int msim_trace_fail(msim_trace_t *t, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * For readers: the tag of (category, site), site being len bytes (len 0:
 * none), added to t's table if new.  When the table is full, the tag of
 * the category alone.  Returns 0 or MSIM_ENOMEM.
 */
int msim_trace_tag_intern(msim_trace_t *t, int category, const char *site,
			  size_t len, uint16_t *tag_out);
void msim_tags_clear(msim_tags_t *tg);

/* For readers: reads up to n bytes, hashing them.  Returns bytes read. */
size_t msim_trace_read(msim_trace_t *t, void *buf, size_t n);

/* For text readers: the lines of the trace, through a buffer of
 * MSIM_LINE_MAX bytes (a longer line is an error). */
#define MSIM_LINE_MAX (1u << 20)
#define MSIM_LINE_SLACK 16 /* readable bytes after a line's NUL, at least */
typedef struct msim_lines_s {
	char *buf;
	size_t pos, end;
	bool eof;
} msim_lines_t;

/* Returns 0 or MSIM_ENOMEM. */
int msim_lines_init(msim_lines_t *l);
void msim_lines_clear(msim_lines_t *l);

/*
 * The next line, NUL-terminated, without its "\n" or "\r\n", and its
 * length; t->line counts it.  NULL at the end of the file, or when a line
 * is longer than the buffer: msim_lines_overlong() tells which.
 */
char *msim_trace_line(msim_trace_t *t, msim_lines_t *l, size_t *len_out);
bool msim_lines_overlong(const msim_lines_t *l);

/* A decimal or 0x-hex unsigned number, all of s (no sign, no blanks).
 * Returns false if s is not one or it overflows 64 bits. */
bool msim_parse_u64(const char *s, uint64_t *out);
/* Why msim_parse_u64() refused s: "is empty", "is negative", "is too
 * large", or "is not a whole number". */
const char *msim_u64_why(const char *s);

/* For readers: an entry of the unknown action name.  With lenient on,
 * counts it and returns true (skip it); else false (fail, naming it). */
bool msim_trace_skip_unknown(msim_trace_t *t, const char *name);

/* For readers: turns a recorded microsecond timestamp into simulated ns. */
msim_time_t msim_trace_time(msim_trace_t *t, uint64_t time_us);

/* Between the stages of a reader (trace.c, trace_request.c,
 * trace_seed.c). */

/* PyTorch's kMinBlockSize: round_size() rounds up to it. */
#define SEED_MIN_BLOCK UINT64_C(512)

/* What msim_trace_next_entry() does at the end: hash what a format leaves
 * unread, so that the content hash is the whole file's. */
void msim_trace_end(msim_trace_t *t);
/* Grows array *a of *cap elements of each bytes to hold n + 1.  Returns 0
 * or MSIM_ENOMEM. */
int msim_trace_seed_grow(void **a, size_t *cap, size_t n, size_t each);
/* The seeding is not exact, for reason why (kept: a constant). */
void msim_trace_seed_inexact(msim_trace_t *t, const char *why);
/* The pool requests entry e needs before it, into t->pq: 1 if any, 0 if
 * none, or an error.  before: called before the hidden empty_cache rules,
 * else after them (trace_seed.c). */
int msim_trace_pool_derive(msim_trace_t *t, const msim_entry_t *e,
			   bool before);

/* For writers: records "path: <fmt>" and returns code. */
int msim_trace_writer_fail(msim_trace_writer_t *w, int code, const char *fmt,
			   ...) __attribute__((format(printf, 3, 4)));

#endif
