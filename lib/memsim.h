/*
 * memsim.h: the public C API of libmemsim, the simulator of GPU memory
 * allocators.  A run replays one trace (a PyTorch snapshot pickle,
 * device-trace CSV, RMM log, memsim binary trace) or one generated model
 * ("model:arch=gpt2,batch=8,seq=1024") through one allocator policy and
 * measures it with the keys of torch.cuda.memory_stats():
 *
 *	memsim_open() -> [memsim_set_policy(), memsim_set_option()] ->
 *	memsim_replay() -> memsim_get_*() / memsim_timeline_get() ->
 *	[memsim_store()] -> memsim_close()
 *
 * Every function returns 0 (MEMSIM_OK) or a negative MEMSIM_E* code; the
 * run keeps one line saying what went wrong (memsim_errmsg()).  The
 * library never prints and never exits.  A simulated out-of-memory is a
 * result, not an error: see the figure "oom_request".
 *
 * Handles are opaque tokens, not addresses.  Every function taking a run
 * returns MEMSIM_EINVAL for NULL or a pointer that memsim_open() or
 * memsim_load() did not give, and MEMSIM_ESTATE for a closed run (those
 * returning a count return 0, memsim_name() NULL, memsim_errmsg() a
 * message saying which); memsim_close() of a closed run does nothing,
 * even after a new run was opened.  A NULL out-parameter (value_out, out,
 * n_out) or name is MEMSIM_EINVAL.
 *
 * Threads: different runs may be replayed in different threads at once
 * (tests/api_threads.c, also under ThreadSanitizer); one run must not be
 * used by two threads at once.  No call changes process-wide state, with
 * one exception made once: the first memsim_open() turns GSL's default
 * error handler (which aborts) off for the process, unless the caller
 * installed a handler of their own, which is kept.  The library checks
 * GSL's status codes and hands GSL checked input, so the handler is
 * reached only when the host runs out of memory.  Strings returned by the
 * library belong to it and live until the run is closed (or, for
 * memsim_errmsg(), its next call).
 *
 * Build against it with `pkg-config --cflags --libs memsim`.
 */
#ifndef MEMSIM_H
#define MEMSIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define MEMSIM_EXPORT __attribute__((visibility("default")))
#else
#define MEMSIM_EXPORT
#endif

/* Error codes: 0 or negative.  memsim_strerror() describes each. */
enum memsim_status {
	MEMSIM_OK = 0,
	MEMSIM_EINVAL = -1,    /* an invalid argument or option */
	MEMSIM_ENOMEM = -2,    /* host out of memory */
	MEMSIM_EDB = -4,       /* the results database */
	MEMSIM_EIO = -5,       /* reading or writing a file */
	MEMSIM_EFORMAT = -6,   /* a malformed trace or file */
	MEMSIM_ENOTFOUND = -7, /* no such file, figure or key */
	MEMSIM_ENOTSUP = -8,   /* not supported (by this policy or build) */
	MEMSIM_EPOLICY = -20,  /* an unknown policy */
	MEMSIM_EPARAMS = -21,  /* the policy refused its parameters */
	MEMSIM_EINPUT = -22,   /* the trace or model spec */
	MEMSIM_ECAP = -23,     /* the cap or fraction */
	MEMSIM_ESTATE = -24,   /* called out of order (e.g. before replay) */
};

/* The kinds of figure (memsim_get_kind()). */
enum memsim_kind {
	MEMSIM_INT = 1,  /* memsim_get_int() */
	MEMSIM_REAL = 2, /* memsim_get_real() */
	MEMSIM_TEXT = 3, /* memsim_get_text() */
	MEMSIM_BOOL = 4, /* memsim_get_int(): 0 or 1 */
};

typedef struct memsim_run_s memsim_run_t;

/* One point of the run's memory curve (down-sampled to at most about
 * 2048 points whatever the trace's length). */
typedef struct memsim_point_s {
	uint64_t request;      /* requests served before this point */
	uint64_t time_ns;      /* simulated time */
	int64_t allocated;     /* allocated_bytes.all.current */
	int64_t reserved;      /* reserved_bytes.all.current */
	int64_t active;        /* active_bytes.all.current */
	int64_t requested;     /* requested_bytes.all.current */
	uint64_t largest_free; /* largest free block the policy holds */
	uint64_t free;         /* bytes of free blocks the policy holds */
} memsim_point_t;

/* The library's version ("0.1.0"). */
MEMSIM_EXPORT const char *memsim_version(void);

/* A static description of code ("unknown error" if it is none). */
MEMSIM_EXPORT const char *memsim_strerror(int code);

/* The i-th policy's name and one-line summary (i from 0); NULL past the
 * last. */
MEMSIM_EXPORT const char *memsim_policy_name(size_t i);
MEMSIM_EXPORT const char *memsim_policy_summary(size_t i);

/*
 * Starts a run of trace: a trace file, or "model:KEY=VALUE,..." (the
 * options of `memsim gen model`).  The policy is "pytorch" with its
 * defaults until memsim_set_policy().  The trace is read by
 * memsim_replay(), which reports its errors.  *out is set whenever
 * memory allows, also on error, so memsim_errmsg() can say why; close it
 * with memsim_close().  Returns 0, MEMSIM_EINVAL (also for out NULL, then
 * nothing is made) or MEMSIM_ENOMEM.
 */
MEMSIM_EXPORT int memsim_open(memsim_run_t **out, const char *trace);

/* Frees the run; NULL, a closed run (closing twice) or a pointer that is
 * no run is a no-op. */
MEMSIM_EXPORT void memsim_close(memsim_run_t *run);

/* The last error's message, one line ("" if none); for NULL (memsim_open()
 * out of memory), a closed run or no run, a static line saying so. */
MEMSIM_EXPORT const char *memsim_errmsg(const memsim_run_t *run);

/*
 * The policy by name (see memsim_policy_name()) and its parameters in
 * PYTORCH_CUDA_ALLOC_CONF syntax ("max_split_size_mb:128,
 * garbage_collection_threshold:0.6"; NULL or "": the defaults), checked
 * now.  Returns 0, MEMSIM_EPOLICY or MEMSIM_EPARAMS.
 */
MEMSIM_EXPORT int memsim_set_policy(memsim_run_t *run, const char *policy,
				    const char *conf);

/*
 * One option of the run, by name, as `memsim run` takes it:
 *	cap            per-process cap in bytes ("16GiB", "512MiB", "1e9")
 *	fraction       the cap as a fraction of the capacity, in (0, 1]
 *	capacity       device memory in bytes (default: the H200's)
 *	addresses      "model" (default) or "trace"
 *	transform      rescale an fp32 recording: "dtype=bf16-amp" ...
 *	keep_going     "1": do not stop at the first OOM
 *	requests_only  "1": replay alloc and free_completed rows only
 *	recording      "1": reproduce the recording (and addresses=trace)
 *	device         snapshots: the device_traces index
 *	strict         "1": refuse a partial history instead of seeding it
 *	lenient        "1": skip entries of unknown actions
 *	calibration    a file of device latencies for the modelled time
 *	context_bytes  memsim_explain(): the CUDA context and libraries'
 *	               bytes, which nvidia-smi adds to reserved and the
 *	               out-of-memory message counts as in use
 * Returns 0, MEMSIM_EINVAL (bad value), MEMSIM_ENOTFOUND (no such
 * option) or MEMSIM_ESTATE (after memsim_replay()).
 */
MEMSIM_EXPORT int memsim_set_option(memsim_run_t *run, const char *name,
				    const char *value);

/*
 * Opens the trace and replays it to its end (or its first OOM unless
 * keep_going).  Once per run.  Returns 0, or the error of the part at
 * fault: MEMSIM_EPOLICY, MEMSIM_EPARAMS, MEMSIM_ECAP, MEMSIM_EINPUT (or
 * the reader's MEMSIM_EIO, MEMSIM_EFORMAT, MEMSIM_ENOTFOUND), ...;
 * MEMSIM_ESTATE for a run whose memsim_open() failed (no trace) or that
 * memsim_load() gave.
 */
MEMSIM_EXPORT int memsim_replay(memsim_run_t *run);

/*
 * In place of memsim_replay(): `memsim explain` of the run's setting,
 * whose figures then read as those of a replayed run: the keys of
 * `memsim explain --json` flattened with dots, in its order, from the
 * same list (lab/explain.h's msim_explain_figs()): trace, policy, params,
 * capacity_bytes, cap_bytes, context_bytes, tagged, requests,
 * peak.request, peak.all.reserved, ..., peak.categories.NAME.bytes,
 * peak.sites.I.site, ..., oom_request, and after an out-of-memory
 * oom.size, oom.message, oom.state.*, oom.alternatives.I.setting ...,
 * oom.min_cap, oom.min_cap_replays; then summary and summary_at_peak:
 * the text of torch.cuda.memory_summary() at the end (the OOM) and at
 * the peak of reserved bytes.  The JSON's empty lists and objects have
 * no figure, and its null (peak_allocated when allocated bytes peak with
 * reserved) reads as the text "".  There is no
 * timeline (memsim_timeline_get(): MEMSIM_ESTATE), and the run cannot be
 * stored.  Once per run.  Returns 0,
 * MEMSIM_EINPUT (the trace, the setting: see memsim_errmsg()),
 * MEMSIM_ENOMEM or MEMSIM_ESTATE.
 */
MEMSIM_EXPORT int memsim_explain(memsim_run_t *run);

/*
 * The figures of a replayed run, the keys of `memsim run --json` in its
 * order: trace, [strategy], [generator meta], trace_hash, policy, params,
 * cap_bytes, requests, the 122 keys of torch.cuda.memory_stats()
 * ("reserved_bytes.all.peak", ...), oom_request (-1: none),
 * frag_at_peak, frag_mean, ext_frag_max, addr_same, addr_other,
 * modelled_device_ms, wall_ms, [snapshot_state], [settings_note], [capacity_note], [what
 * a partial history was seeded with: seeded_from_frees ...
 * no_trace_events], and run_id once stored.  Before memsim_replay()
 * there are none.
 */
MEMSIM_EXPORT size_t memsim_count(const memsim_run_t *run);
/* The i-th figure's name, or NULL past the last. */
MEMSIM_EXPORT const char *memsim_name(const memsim_run_t *run, size_t i);
/* A figure's kind (MEMSIM_INT, _REAL, _TEXT, _BOOL) or
 * MEMSIM_ENOTFOUND. */
MEMSIM_EXPORT int memsim_get_kind(const memsim_run_t *run, const char *name);
/* A figure's value.  An INT or BOOL reads as a REAL too, a BOOL as an
 * INT.  Returns 0,
 * MEMSIM_ENOTFOUND, MEMSIM_EINVAL (another kind) or MEMSIM_ESTATE. */
MEMSIM_EXPORT int memsim_get_int(const memsim_run_t *run, const char *name,
				 int64_t *value_out);
MEMSIM_EXPORT int memsim_get_real(const memsim_run_t *run, const char *name,
				  double *value_out);
MEMSIM_EXPORT int memsim_get_text(const memsim_run_t *run, const char *name,
				  const char **value_out);

/* The memory curve of a replayed run: its length (0 before), and the
 * i-th point.  Returns 0, MEMSIM_EINVAL (i too large) or MEMSIM_ESTATE. */
MEMSIM_EXPORT size_t memsim_timeline_len(const memsim_run_t *run);
MEMSIM_EXPORT int memsim_timeline_get(const memsim_run_t *run, size_t i,
				      memsim_point_t *out);

/*
 * Stores the replayed run in the SQLite database at db_path (created if
 * need be) as `memsim run --db` does: the same setting is stored once,
 * running it again replaces its results under the same run id.  Adds the
 * figure run_id.  Returns 0 with the id in *run_id_out (may be NULL), or
 * MEMSIM_EDB, MEMSIM_ESTATE.
 */
MEMSIM_EXPORT int memsim_store(memsim_run_t *run, const char *db_path,
			       int64_t *run_id_out);

/*
 * Reading a database that memsim_store() or `memsim run|sweep|tune --db`
 * wrote (opened read-only).  memsim_list_runs() puts the ids of its runs,
 * in order of id, into ids (up to max of them; ids may be NULL with max
 * 0) and their number into *n_out, so a second call with a buffer of
 * that size reads them all.  Returns 0, MEMSIM_ENOTFOUND (no such file)
 * or MEMSIM_EDB; *errmsg_out (may be NULL) gets a static "" or the
 * message of a failure, valid until the next call of this function from
 * any thread.
 */
MEMSIM_EXPORT int memsim_list_runs(const char *db_path, int64_t *ids,
				   size_t max, size_t *n_out,
				   const char **errmsg_out);

/*
 * A run as stored in db_path under run_id, as a run handle whose figures
 * and timeline read as those of a replayed run (memsim_count() ...
 * memsim_timeline_get()): the figures `memsim report --json` prints, in
 * its order: the stored columns of `memsim run --json` (trace,
 * trace_hash, policy, params, cap_bytes, requests, strategy), the
 * statistics, the other columns (memsim_version, kind, trace_format,
 * addresses, oom_request, frag_at_peak, frag_mean, ext_frag_max,
 * sim_time_ns, wall_ms, capacity_bytes, setting_key: "" when none), then
 * created, the run's meta (modelled_device_ms, calibration, ...: numbers
 * as MEMSIM_INT or MEMSIM_REAL) and run_id.  It cannot be replayed or
 * stored.  *out is set as by memsim_open().
 * Returns 0, MEMSIM_EINVAL, MEMSIM_ENOTFOUND (no such file or run),
 * MEMSIM_EDB or MEMSIM_ENOMEM.
 */
MEMSIM_EXPORT int memsim_load(memsim_run_t **out, const char *db_path,
			      int64_t run_id);

/* A byte count as the options take it ("16GiB", "512MiB", "1.5G",
 * "80GB", "1048576") into *out.  Returns 0 or MEMSIM_EINVAL. */
MEMSIM_EXPORT int memsim_parse_bytes(const char *text, uint64_t *out);

/*
 * The experiments of memsim's commands (docs/lab.md), each one call over
 * the same code as the command.  why (whylen bytes, may be NULL with 0)
 * gets what went wrong, one line.
 *
 * memsim_tune(): `memsim tune`: the PYTORCH_CUDA_ALLOC_CONF of the
 * pytorch policy with the lowest peak reserved that does not run out of
 * memory under cap bytes (max_split_size_mb x
 * garbage_collection_threshold x roundup_power2_divisions, run in this
 * process), stored with the default in db_path as one tune sweep.  Writes
 * it into conf_out (n bytes; "" for the defaults).  Returns 0, 1 when no
 * setting of the search fits (conf_out ""), or an error.
 */
MEMSIM_EXPORT int memsim_tune(const char *trace, uint64_t cap,
			      const char *db_path, char *conf_out, size_t n,
			      char *why, size_t whylen);

/*
 * memsim_fit(): `memsim fit --traces`: the largest value in [lo, hi] of
 * {name} in pattern ("gpt-{B}.csv", traces recorded already) whose trace
 * replays under cap bytes through policy (NULL: pytorch) without running
 * out of memory, by bisection (memory is assumed to grow with the value).
 * Returns 0 with *best_out (lo - 1 when lo already runs out of memory),
 * or an error.
 */
MEMSIM_EXPORT int memsim_fit(const char *pattern, const char *name, long lo,
			     long hi, uint64_t cap, const char *policy,
			     long *best_out, char *why, size_t whylen);

/*
 * memsim_record(): `memsim record -o out -- argv...`: runs argv (argc
 * words: python3 SCRIPT ARGS, or SCRIPT ARGS) under the Python recorder
 * (memsim_record from $MEMSIM_PYTHONPATH, else the installed one; the
 * interpreter from argv, else $MEMSIM_PYTHON, else python3; `python3
 * -m MODULE` and torchrun as `memsim record` reads them) and writes its
 * allocations to out; the script's output goes to stderr.  out is checked
 * before anything runs (MEMSIM_EIO or MEMSIM_EINVAL: a missing folder, a
 * folder, a device, a file the command names) and replaced only by a
 * whole trace.  Returns the recorder's exit status (0: out written), or
 * an error.
 */
MEMSIM_EXPORT int memsim_record(const char *out, char *const *argv, int argc,
				char *why, size_t whylen);

/*
 * A live allocator: a policy (NULL: pytorch) with its parameters (conf,
 * PYTORCH_CUDA_ALLOC_CONF syntax; NULL or "": the defaults) on a device of
 * capacity bytes (0: the H200's) of which a CUDA context takes context
 * bytes, capped as set_per_process_memory_fraction(fraction) caps it (0:
 * no cap), served one request at a time as a program makes them, its
 * memory_stats() readable between any two.  `memsim record --fake`
 * answers torch.cuda.memory_reserved() from one.
 *
 *	memsim_live_open() -> (memsim_live_request(), memsim_live_get())...
 *	-> memsim_live_close()
 *
 * memsim_live_open() returns 0, MEMSIM_EINVAL (an unknown policy, conf
 * the policy refuses, a context of the whole device, a fraction outside
 * [0, 1]) or MEMSIM_ENOMEM; *out is set whenever memory allows, also on
 * error, so memsim_live_errmsg() can say why: close it.  A handle is a
 * token as a run's is: NULL or a pointer memsim_live_open() did not give
 * is MEMSIM_EINVAL, a closed one MEMSIM_ESTATE, and closing twice does
 * nothing.  A handle is for one thread at a time.
 */
typedef struct memsim_live_s memsim_live_t;

MEMSIM_EXPORT int memsim_live_open(memsim_live_t **out, const char *policy,
				   const char *conf, uint64_t capacity,
				   uint64_t context, double fraction);
MEMSIM_EXPORT void memsim_live_close(memsim_live_t *live);
MEMSIM_EXPORT const char *memsim_live_errmsg(const memsim_live_t *live);

/*
 * One request, as a row of memsim's CSV trace names it
 * (docs/trace-formats.md): "alloc" of size bytes on stream, its block
 * named addr (not 0, not a live block's); "free_completed" of the block
 * addr; "empty_cache"; "reset_peaks"; "pool_create", "pool_begin",
 * "pool_end", "pool_release" of the private pool numbered addr (size:
 * pool_create's flags, pool_release's 1 for a MemPool's death).  Returns
 * 0; 1 when the alloc did not fit (PyTorch's OutOfMemoryError: no block
 * is held, num_ooms counts it); MEMSIM_EINVAL (an unknown action, an
 * alloc of 0 bytes or at address 0 or a live block's, a pool request of
 * pool 0 or of unknown flags); MEMSIM_ENOTFOUND (a free of no live
 * block); or MEMSIM_ENOMEM; memsim_live_errmsg() says which.
 */
MEMSIM_EXPORT int memsim_live_request(memsim_live_t *live, const char *action,
				      uint64_t addr, uint64_t size,
				      uint64_t stream);

/*
 * The value of one of torch.cuda.memory_stats()'s keys
 * ("reserved_bytes.all.current", "num_ooms", ...) now.  Returns 0,
 * MEMSIM_ENOTFOUND (no such key) or MEMSIM_EINVAL.
 */
MEMSIM_EXPORT int memsim_live_get(const memsim_live_t *live,
				  const char *name, int64_t *value_out);

#ifdef __cplusplus
}
#endif

#endif
