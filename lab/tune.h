/*
 * Tune: the PYTORCH_CUDA_ALLOC_CONF of the pytorch policy with the lowest
 * peak reserved that does not run out of memory under a cap.  The search
 * is a sweep (lab/sweep.h) into a scratch database; the default and the
 * recommendation (same trace, model and strategies) are then stored in
 * the user's database as the runs of one "tune" sweep, whose result is
 * every key of the winning setting (the allocator's last).
 *
 *	msim_tune_run() -> msim_tune_print() or msim_tune_json()
 *
 * Nothing here exits; only the two printers print (to stdout).
 */
#ifndef MSIM_LAB_TUNE_H
#define MSIM_LAB_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The search space when no axis is replaced: what PyTorch users tune
 * (max_split_size_mb, garbage_collection_threshold,
 * roundup_power2_divisions, and expandable_segments, which PyTorch's own
 * OOM message recommends; "0", "none" and "false" are the defaults,
 * off): 6 x 6 x 6 x 2 = 432 settings. */
#define MSIM_TUNE_NGRID 4
extern const char *const msim_tune_grid[MSIM_TUNE_NGRID];

/* Puts axis ("key=v1,v2,...") into grid in place of the axis of its key,
 * or after the others.  Returns 0, or -1 when grid already holds max. */
int msim_tune_grid_set(const char **grid, size_t *ngrid, size_t max,
		       const char *axis);

typedef struct msim_tune_spec_s {
	const char *trace;       /* a trace file or "model:..." */
	uint64_t cap;            /* bytes, required */
	const char *db_path;     /* where both runs are stored */
	const char *const *grid; /* the axes; msim_tune_grid and the like */
	size_t ngrid;
	int jobs;                /* worker processes of the search */
	const char *tmpdir;      /* the search's scratch folder goes
				  * there; NULL: $TMPDIR, else /tmp */
	uint64_t capacity;       /* device memory; 0: the H200's */
	/* May be NULL: called in this process as settings finish
	 * (msim_sweep_opts_t.progress). */
	void (*progress)(void *ctx, size_t done, size_t total);
	void *ctx;
} msim_tune_spec_t;

/* One run of the search, or of the store. */
typedef struct msim_tune_row_s {
	char params[1024];        /* canonical parameters; "": defaults */
	char key[2048];           /* the setting key */
	int64_t peak_reserved, peak_allocated, retries, oom_request, ooms;
	int64_t device_allocs, segments;
	double frag;              /* at peak */
	bool found;
} msim_tune_row_t;

typedef struct msim_tune_result_s {
	size_t searched;          /* settings of the search */
	double wall_ms;           /* the search's */
	int64_t n_oom;            /* of them, how many ran out of memory */
	bool fits;                /* a setting fits: best is it */
	/* The setting's keys that are not the allocator's ("batch=8");
	 * "" when none. */
	char keys[1024];
	msim_tune_row_t def, best; /* the default, the recommendation */
	/* The stored tune sweep and runs, or -1; when the store failed
	 * (store_err not ""), def and best are the search's figures. */
	int64_t tune_id, def_id, best_id;
	char store_err[2048];
} msim_tune_result_t;

/*
 * Searches, picks and stores.  Returns 0 with *res (a failed store is
 * told in res->store_err: the figures stand), or an error with why: a bad
 * setting, a database that cannot be opened, settings of the search that
 * failed to run.
 */
int msim_tune_run(const msim_tune_spec_t *spec, msim_tune_result_t *res,
		  char *why, size_t whylen);

/* Prints to stdout the default and the recommendation of the search r of
 * trace under cap side by side (memsim tune's and fit's table). */
void msim_tune_print(const msim_tune_result_t *r, const char *trace,
		     uint64_t cap);
/* The same as JSON: an object's members, closed with "}" when close
 * (else the caller adds members and closes it). */
void msim_tune_json(const msim_tune_result_t *r, const char *trace,
		    uint64_t cap, bool close);

#endif
