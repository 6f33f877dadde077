/*
 * Trace sources: every format is a reader (and most a writer) behind one
 * const table, and msim_trace_open() picks the format by content.  Readers
 * stream: memory stays constant in the trace length.  A format yields the
 * recorded entries in file order (msim_entry_t); one shared stage here
 * turns them into requests (msim_req_t): it maps addresses to dense ids,
 * checks that frees match allocs, and finds the hidden empty_cache() calls
 * of recordings.  Readers hash the bytes they read (the content hash
 * stored with a run) and keep a message naming the file, the line (or
 * byte) and the reason of any error.
 */
#ifndef MSIM_TRACES_TRACE_H
#define MSIM_TRACES_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/types.h"

typedef struct msim_trace_s msim_trace_t;
typedef struct msim_trace_writer_s msim_trace_writer_t;

/*
 * What a trace records: one entry of PyTorch's device trace
 * (torch.cuda.memory._snapshot()["device_traces"][d][i]).  Every format
 * reads into and writes from entries, so `memsim convert` keeps every row
 * a format can hold; msim_trace_next() turns entries into requests.
 */
typedef enum msim_action_e {
	MSIM_ACT_ALLOC = 0,     /* a malloc; addr = block, size = request */
	MSIM_ACT_FREE_REQUESTED, /* the program freed addr */
	MSIM_ACT_FREE_COMPLETED, /* the block at addr is back in the pool */
	MSIM_ACT_SEGMENT_ALLOC, /* cudaMalloc of size at addr */
	MSIM_ACT_SEGMENT_FREE,  /* cudaFree of the segment at addr */
	MSIM_ACT_SEGMENT_MAP,   /* expandable segments: pages mapped */
	MSIM_ACT_SEGMENT_UNMAP, /* expandable segments: pages unmapped */
	MSIM_ACT_OOM,           /* a malloc raised OOM; addr = device_free */
	MSIM_ACT_SNAPSHOT,      /* a _snapshot() call; size = active bytes */
	MSIM_ACT_ANNOTATE,      /* user annotations: not allocator events */
	MSIM_ACT_USER_DEFINED,
	/* Private pools: addr = the pool's id (a CSV's `pool` column);
	 * createOrIncrefPool, beginAllocateToPool (allocations on stream go
	 * to the pool), endAllocateToPool, releasePool.  pool_create's size
	 * is 1 for a pool with an allocator of its own (MemPool(allocator)),
	 * else 0, plus 2 for use_on_oom and 4 for no_split; pool_release's
	 * is 1 for ~MemPool's, which empties the pool's cache after it
	 * (emptyCache(pool)), else 0.  pool_restore is
	 * setCheckpointPoolState; its size is the number of alloc rows that
	 * follow for it, the blocks of the checkpointed segments, each
	 * placed at its address (docs/pytorch-allocator.md §1.4). */
	MSIM_ACT_POOL_CREATE,
	MSIM_ACT_POOL_BEGIN,
	MSIM_ACT_POOL_END,
	MSIM_ACT_POOL_RELEASE,
	MSIM_ACT_POOL_RESTORE,
	/* torch.cuda.empty_cache() (emptyCache, release_cached_blocks):
	 * addr and size 0.  PyTorch's device trace has no entry for the call
	 * (TraceEntry::Action), only the segment_free / segment_unmap rows of
	 * what it released; `memsim record` writes this row where the program
	 * calls it.  Replayed as an EMPTY_CACHE request; with
	 * hidden_empty_cache (a recording, whose segment rows follow) it marks
	 * the run after it as the call's (docs/pytorch-allocator.md §11.2).
	 * Appended: the actions before it keep their numbers. */
	MSIM_ACT_EMPTY_CACHE,
	/* torch.cuda.reset_peak_memory_stats(): addr and size 0.  PyTorch's
	 * trace has no such row; `memsim convert` writes one after a partial
	 * history's seeded start (msim_trace_seed_requests()), where the
	 * replay of the snapshot itself resets its peaks.  Appended. */
	MSIM_ACT_RESET_PEAKS,
	MSIM_NACT
} msim_action_t;

typedef struct msim_entry_s {
	uint64_t time_us;     /* recorded time, microseconds (epoch) */
	uint64_t addr;        /* address (device_free for MSIM_ACT_OOM) */
	uint64_t size;        /* bytes, docs/pytorch-allocator.md §10.2 */
	msim_stream_t stream; /* CUDA stream handle */
	uint32_t device;      /* snapshots: index in device_traces */
	uint8_t action;       /* msim_action_t */
	uint16_t tag;         /* alloc: a (category, site) pair of the
			       * trace's table (msim_trace_tag()), 0 = none */
} msim_entry_t;

/*
 * What an allocation holds: `memsim record` writes it in a CSV column, and
 * the snapshot reader infers it from the Python frames of each alloc.
 */
typedef enum msim_category_e {
	MSIM_CAT_UNTAGGED = 0,
	MSIM_CAT_PARAMETER,
	MSIM_CAT_GRADIENT,
	MSIM_CAT_OPTIMIZER,  /* optimizer state and the step's temporaries */
	MSIM_CAT_ACTIVATION,
	MSIM_CAT_TEMPORARY,
	MSIM_CAT_INPUT,
	MSIM_CAT_OTHER,
	MSIM_NCAT
} msim_category_t;

/* "parameter", ..., "untagged" for MSIM_CAT_UNTAGGED. */
const char *msim_category_name(int category);
/* The category named by the len bytes at s ("optimizer_state" too), or
 * -1. */
int msim_category_parse(const char *s, size_t len);

/*
 * Tags: the (category, site) pairs of a trace, numbered from 1 in the
 * order first seen; tags 1 .. MSIM_NCAT - 1 are the categories with no
 * site.  A site is a module path or "file:line function".  Tags 0 (none)
 * to msim_trace_ntags() - 1 are valid; the strings belong to t.
 */
#define MSIM_TAGS_MAX 65535u
size_t msim_trace_ntags(const msim_trace_t *t);
/* Whether t's entries carry tags: a CSV with a category or site column,
 * a snapshot whose entries have frames (known once one has been read). */
bool msim_trace_tagged(const msim_trace_t *t);
void msim_trace_tag(const msim_trace_t *t, uint16_t tag, int *category_out,
		    const char **site_out);

/* "alloc", "free_completed", ... as PyTorch names them. */
const char *msim_action_name(int action);

/* The action named by the len bytes at s, or -1. */
int msim_action_parse(const char *s, size_t len);

/*
 * A private pool's row (MSIM_ACT_POOL_CREATE ... _RESTORE) of pool number
 * addr as its request: kind and flags into *req (its addr, stream and time
 * left as they are); size is pool_create's flags (1 an allocator of its
 * own, 2 use_on_oom, 4 no_split), pool_restore's count of placed allocs
 * after it, pool_release's 1 for a MemPool's death.  Returns 0, or
 * MSIM_EFORMAT with why (pool 0, flags or a size of no meaning).
 */
int msim_pool_request(int action, uint64_t addr, uint64_t size,
		      msim_req_t *req, char *why, size_t whylen);

/* Which recorded rows become requests. */
typedef struct msim_trace_options_s {
	bool deferred_frees; /* emit free_requested as FREE_REQUESTED too */
	/*
	 * Find the empty_cache() calls a recording does not show
	 * (docs/pytorch-allocator.md §11.2): a run of segment_free /
	 * segment_unmap rows followed by a free or an alloc becomes an
	 * EMPTY_CACHE request (rule a); one followed by a new segment or an oom
	 * flags the next malloc with MSIM_REQF_MAYBE_EMPTY_CACHE (rule b).  An
	 * empty_cache row makes the run after it (free_completed rows of its
	 * synchronize_and_free_events between) that call's: one EMPTY_CACHE
	 * request at the run's end, also when nothing follows or the run is
	 * empty.  Off, an empty_cache row is an EMPTY_CACHE request where it
	 * stands.  On when replaying a recording.
	 */
	bool hidden_empty_cache;
	/* Snapshots: 1 + the index in device_traces to read; 0 = the device
	 * that has events (an error if several have). */
	unsigned device1;
	/* Read as this format; NULL = detect by content. */
	const struct msim_trace_format_s *format;
	/*
	 * Partial histories (the history was started late, or its ring
	 * buffer wrapped): by default a free of an address the trace never
	 * allocated, and a block live in the snapshot that the trace never
	 * allocated, become allocations at the start (see
	 * msim_trace_seeding()).  strict refuses such a trace instead.
	 */
	bool strict;
	/* Skip (and count) entries whose action memsim does not know,
	 * instead of failing on the first. */
	bool lenient;
	/* Snapshots: hand out the entries of every device (for
	 * msim_trace_devices()); the request stage is not for this. */
	bool all_devices;
	/* Do not hash the file while it is read (msim_trace_hash() is then
	 * 0): for a caller that has its hash already (a sweep's plan). */
	bool unhashed;
} msim_trace_options_t;

/*
 * The allocator state a snapshot holds next to its trace
 * (torch.cuda.memory._snapshot()["segments"], docs/pytorch-allocator.md
 * §10.1): what was reserved when the snapshot was taken.  Stack frames
 * and pool ids are not kept.
 */
enum {
	MSIM_SNAP_INACTIVE = 0,   /* "inactive": free in the pool */
	MSIM_SNAP_ALLOCATED,      /* "active_allocated" */
	MSIM_SNAP_PENDING_FREE,   /* "active_pending_free": freed, its
				   * stream events not yet completed */
	MSIM_SNAP_NSTATES
};

/* "inactive", "active_allocated" or "active_pending_free". */
const char *msim_snap_state_name(int state);

typedef struct msim_snap_block_s {
	uint64_t addr;      /* address */
	uint64_t size;      /* bytes */
	uint64_t requested; /* requested_size, bytes (stale if inactive) */
	uint32_t seg;       /* index of its segment in the file */
	uint8_t state;      /* MSIM_SNAP_* */
	uint16_t tag;       /* the site of its frames (the stack of its
			     * allocation), with no category: a tag of the
			     * file's table (msim_trace_tag()); 0: none */
} msim_snap_block_t;

typedef struct msim_snap_segment_s {
	uint64_t addr;           /* address */
	uint64_t total_size;     /* bytes reserved */
	uint64_t allocated_size; /* bytes in active_allocated blocks */
	uint64_t active_size;    /* bytes in allocated or pending blocks */
	uint64_t requested_size; /* bytes the callers asked for */
	msim_stream_t stream;    /* CUDA stream handle (0: legacy default) */
	uint32_t device;         /* CUDA device index */
	bool large;              /* segment_type "large" (else "small") */
	bool expandable;         /* is_expandable */
	uint32_t pool;           /* segment_pool_id: 0 the default pool (0, 0),
				  * else the private pools 1, 2, ... in the
				  * order the segments name them */
	const msim_snap_block_t *blocks; /* in address order */
	size_t nblocks;
} msim_snap_segment_t;

typedef struct msim_trace_format_s {
	const char *name;    /* "csv": CLI and results key */
	const char *exts;    /* ".csv": the usual file name endings */
	const char *summary; /* one line for `memsim convert --help` */
	/* Whether the first n bytes of a file look like this format. */
	bool (*probe)(const char *head, size_t n);
	/* Sets up t->fmt for reading t->fp.  Returns 0 or an error with
	 * msim_trace_fail(). */
	int (*open)(msim_trace_t *t);
	/* The next entry: 1, 0 at the end, or an error. */
	int (*next)(msim_trace_t *t, msim_entry_t *e_out);
	/* May be NULL.  Else the request stage done by the format, straight
	 * into an array, for traces read without hidden_empty_cache: up to
	 * cap (>= 2) requests into v, *n_out of them filled in every case;
	 * returns 1 (more to come), 0 at the end, an error, or MSIM_ENOTSUP
	 * with none filled (then entries go through next()). */
	int (*requests)(msim_trace_t *t, msim_req_t *v, size_t cap,
			size_t *n_out);
	void (*close)(msim_trace_t *t);
	/* Writing; NULL for a read-only format.  write_open sets up w->fmt
	 * and may write a header; write_close writes any trailer and frees
	 * w->fmt (also after an error).  Each returns 0 or an error with
	 * msim_trace_writer_fail(). */
	int (*write_open)(msim_trace_writer_t *w);
	int (*write)(msim_trace_writer_t *w, const msim_entry_t *e);
	int (*write_close)(msim_trace_writer_t *w);
	/* The snapshot state read so far (see msim_trace_segments()); NULL
	 * for a format without one. */
	int (*segments)(msim_trace_t *t, const msim_snap_segment_t **segs_out,
			size_t *n_out);
	/* A snapshot: the file holds a state (its segments, given by
	 * segments()) beside the requests, so its requests alone are not
	 * the trace.  A sweep does not read it once for its settings
	 * (lab/input.c), and a snapshot without trace events is noted
	 * (lab/figures.c). */
	bool snapshot;
} msim_trace_format_t;

/* The formats, NULL-terminated, in the order detection tries them. */
const msim_trace_format_t *const *msim_trace_formats(void);

/* The format t is read as. */
const msim_trace_format_t *msim_trace_format_of(const msim_trace_t *t);

/* The format named name, or NULL. */
const msim_trace_format_t *msim_trace_format_find(const char *name);

/* The format whose extension path ends with, or NULL. */
const msim_trace_format_t *msim_trace_format_by_ext(const char *path);

/* A 64-bit content hash, fed in pieces (not cryptographic). */
typedef struct msim_hash_s {
	uint64_t h, tail, len;
	unsigned ntail;
} msim_hash_t;
void msim_hash_init(msim_hash_t *h);
void msim_hash_update(msim_hash_t *h, const void *data, size_t n);
uint64_t msim_hash_final(const msim_hash_t *h);


/*
 * Opens path, detecting the format by content.  opt may be NULL.
 * Returns 0, or an error with why naming the file and the reason.
 */
int msim_trace_open(const char *path, const msim_trace_options_t *opt,
		    msim_trace_t **out, char *why, size_t whylen);

/* The next request: 1, 0 at the end, or an error (msim_trace_errmsg()). */
int msim_trace_next(msim_trace_t *t, msim_req_t *req_out);

/* The next recorded entry, as the file has it (no request stage, no
 * checks of addresses): 1, 0 at the end, or an error.  Do not mix with
 * msim_trace_next() on one trace. */
int msim_trace_next_entry(msim_trace_t *t, msim_entry_t *e_out);

/* Hidden empty_cache() calls found so far: replayed as EMPTY_CACHE
 * requests (rule a), and runs left to the policy to decide (rule b). */
void msim_trace_empty_caches(const msim_trace_t *t, uint64_t *found_out,
			     uint64_t *maybe_out);

/*
 * The segments of the snapshot state (docs/pytorch-allocator.md §10.1) of
 * the device
 * being read (--device N, else the one with trace events; with no events
 * at all, every segment), in file order (PyTorch sorts them by address).
 * Snapshots write the state before the trace, so it is complete once the
 * first entry has been read, and the device is certain once the end has
 * been; formats without a state give n = 0.  The array belongs to t and
 * stays valid until the next call or msim_trace_close().  Returns 0 or
 * MSIM_ENOMEM.
 */
int msim_trace_segments(msim_trace_t *t, const msim_snap_segment_t **segs_out,
			size_t *n_out);

/*
 * How a partial history was completed.  PyTorch's memory_viz
 * (torch/cuda/_memory_viz.py, trace_plot) treats frees of unknown blocks as allocated before the trace began, and adds
 * the snapshot's blocks the trace never allocated).  With a first pass
 * (a snapshot read from a regular file), the blocks are allocated before
 * the first recorded entry, placed in the segments the snapshot says
 * existed when the history began: the segments of its state that no
 * segment_alloc / segment_map row created, and those a segment_free row
 * frees before any row allocated them.  Each such segment is rebuilt as
 * PyTorch's allocator would hold it, so that a replay starts with its
 * reserved bytes: a large segment by one malloc of its whole size given
 * back at once, then its blocks in address order, the gaps between them
 * taken by fillers that are freed when every segment is built (they are
 * the inactive blocks), then reset_peak_memory_stats().  Without a first
 * pass (a pipe, or a format without a snapshot state), a free of an
 * unknown address is preceded by an allocation of its size where it is
 * met, and blocks only the snapshot knows are not seeded.
 */
typedef struct msim_trace_seed_s {
	bool first_pass;        /* the trace was read once before */
	uint64_t from_frees;    /* blocks seeded for frees of unknown blocks */
	uint64_t from_snapshot; /* live blocks of the snapshot never allocated */
	uint64_t late;          /* seeded where met, not at the start */
	uint64_t bytes;         /* bytes requested by the seeded blocks */
	uint64_t segments;      /* segments rebuilt at the start */
	uint64_t segment_bytes; /* their bytes: reserved at the start */
	uint64_t fillers;       /* filler allocations (inactive blocks) */
	uint64_t unplaced;      /* seeded blocks outside a known segment */
	uint64_t requests;      /* requests the seeding added */
	/* The snapshot's live blocks, and those the trace allocated. */
	uint64_t snap_live, snap_live_bytes;
	uint64_t explained, explained_bytes;
	bool exact;             /* the start is the recorded one (as far as
				 * the snapshot tells) */
	const char *inexact;    /* why not, when !exact */
} msim_trace_seed_t;

/* What the seeding did so far (complete after the first request, with a
 * first pass; else at the end). */
void msim_trace_seeding(const msim_trace_t *t, msim_trace_seed_t *out);

/*
 * The requests that rebuild a partial history's start (n_out of them;
 * none unless the trace needed seeding), complete after
 * msim_trace_prescan(): what msim_trace_next() hands out before the
 * trace's first entry.  Owned by t.
 */
const msim_req_t *msim_trace_seed_requests(const msim_trace_t *t,
					   size_t *n_out);

/*
 * Reads the trace once to the end before it is replayed (a snapshot in a
 * regular file; a no-op otherwise), so that the seeding is complete and
 * the allocator settings are known before the first request.  Called by
 * msim_trace_next() at the first request if not called before.  Returns 0
 * or an error (msim_trace_errmsg()).
 */
int msim_trace_prescan(msim_trace_t *t);

/* The allocator settings a snapshot was recorded with, as a
 * PYTORCH_CUDA_ALLOC_CONF string ("expandable_segments:True"), or NULL
 * when unknown (neither a snapshot nor a recording that names them, or
 * not read that far: a snapshot's come after the trace, so only after
 * msim_trace_prescan() or the end; a recording's CSV has them from the
 * open on, its first row). */
const char *msim_trace_alloc_conf(const msim_trace_t *t);

/* Whether those settings are a recording's (`memsim record`'s CSV), not
 * a snapshot's. */
bool msim_trace_alloc_conf_recorded(const msim_trace_t *t);

/* A snapshot's first out-of-memory record: the device's free bytes it
 * names (device_free, from cudaMemGetInfo), the rounded size that did not
 * fit, and the bytes the process had reserved then (its segments at the
 * end less the segment rows after the record). */
typedef struct msim_trace_oom_s {
	uint64_t device_free; /* bytes */
	uint64_t size;        /* bytes the malloc asked for */
	uint64_t reserved;    /* bytes reserved at the record */
} msim_trace_oom_t;

/* After msim_trace_prescan(): whether the snapshot has an oom record
 * whose reserved bytes its segments state tells (then *out is set). */
bool msim_trace_oom_record(const msim_trace_t *t, msim_trace_oom_t *out);

/* Entries skipped for an unknown action (with lenient), and the first
 * such action's name ("" if none). */
uint64_t msim_trace_skipped(const msim_trace_t *t, const char **first_out);

/*
 * The devices of the snapshot at path that have trace events, in
 * increasing order, into devs (at most max; *n_out counts them all).
 * Returns 0, or an error with why filled.
 */
int msim_trace_devices(const char *path, uint32_t *devs, size_t max,
		       size_t *n_out, char *why, size_t whylen);

/* "file:line: reason" of the last error. */
const char *msim_trace_errmsg(const msim_trace_t *t);

/* Whether the reader reached the end of the trace (the hash is then the
 * whole file's). */
bool msim_trace_ended(const msim_trace_t *t);

/* Hash of the bytes read so far: the file's hash once at the end; 0 for
 * a trace opened unhashed (msim_trace_options_t). */
uint64_t msim_trace_hash(const msim_trace_t *t);

/* Whether msim_trace_hash() is the whole file's: read to its end, and
 * hashed. */
bool msim_trace_hashed(const msim_trace_t *t);

const char *msim_trace_format_name(const msim_trace_t *t);

/*
 * Up to cap (>= 2) requests into v, as msim_trace_next() gives them, with
 * *n_out set in every case: returns 1 (more to come), 0 at the end, or an
 * error.  A format that can does the request stage itself, a block at a
 * time.  Do not mix with msim_trace_next() on one trace.
 */
int msim_trace_fill(msim_trace_t *t, msim_req_t *v, size_t cap,
		    size_t *n_out);

/* t as a request source for the engine (t stays the caller's). */
msim_source_t msim_trace_source(msim_trace_t *t);

/* The recorded time the replay's simulated time counts from (the first
 * timed entry served), microseconds as recorded.  Returns false until a
 * request has been read. */
bool msim_trace_time_origin(const msim_trace_t *t, uint64_t *us_out);

/* What has been read so far: entries by action, their time span, and
 * what the segment rows leave reserved. */
typedef struct msim_trace_tally_s {
	uint64_t entries;            /* entries read */
	uint64_t actions[MSIM_NACT]; /* entries read, by action */
	uint64_t first_us, last_us;  /* times of the first and last entry */
	/* Bytes the segment rows leave reserved (segment_alloc and _map less
	 * segment_free and _unmap); below 0 if the recording lost its oldest
	 * rows. */
	int64_t seg_bytes;
	uint64_t untimed; /* entries without a time (PyTorch 2.0 snapshots) */
	uint64_t zero_skipped; /* zero-byte requests skipped (RMM logs) */
} msim_trace_tally_t;

void msim_trace_tally(const msim_trace_t *t, msim_trace_tally_t *out);

/* Tags of w's entries are those of src's table (convert): formats that
 * hold them write them.  Call before the first msim_trace_writer_put(). */
void msim_trace_writer_set_tags(msim_trace_writer_t *w,
				const msim_trace_t *src);

/* The format w writes. */
const msim_trace_format_t *msim_trace_writer_format(const msim_trace_writer_t *w);

/* Closes t; NULL is a no-op. */
void msim_trace_close(msim_trace_t *t);

/*
 * Creates path and writes entries to it in format (NULL: by the path's
 * extension, else csv), through a temporary file that
 * msim_trace_writer_close() renames into place (sim/file.h).  Returns 0,
 * or an error with why filled.
 */
int msim_trace_writer_open(const char *path, const msim_trace_format_t *format,
			   msim_trace_writer_t **out, char *why, size_t whylen);

/* Appends one entry.  Returns 0 or an error (msim_trace_writer_errmsg()). */
int msim_trace_writer_put(msim_trace_writer_t *w, const msim_entry_t *e);

/* Finishes the file and frees w (NULL: a no-op).  Returns 0 or an error,
 * with why filled. */
int msim_trace_writer_close(msim_trace_writer_t *w, char *why, size_t whylen);
/* Closes w without finishing the file: a temporary file is removed and the
 * file at the path, if any, stays as it was. */
void msim_trace_writer_abort(msim_trace_writer_t *w);

const char *msim_trace_writer_errmsg(const msim_trace_writer_t *w);

#endif
