/*
 * Where the memory goes: one replay of a trace, taken apart at the moment
 * reserved bytes reach their peak, at the moment allocated bytes do, and
 * at the out-of-memory if there is one.  Reserved bytes split into allocated, freed-but-pending, free
 * pieces of split segments (PyTorch's inactive_split_bytes: the
 * fragmentation) and whole free segments, per pool; allocated bytes split
 * by category and by call site, from the trace's tags (traces/tags.c).  At
 * an out-of-memory, PyTorch's own message for that request, then what
 * memsim can add because it can run again: whether expandable segments, a
 * max_split_size_mb or a garbage_collection_threshold would have avoided
 * it, and the smallest cap the trace fits under, each from a replay.
 *
 * Each replay is a job (lab/job.h), opened and costed as `memsim run`
 * opens and costs it; it follows each block's owner through the engine's
 * observer (msim_job_spec_t.observe): a block's bytes are the change of
 * allocated_bytes its alloc made, so the categories sum exactly to
 * allocated bytes.  The peak is found in a first replay and the state
 * there read in a second that stops at it.
 *
 *	msim_explain_run() -> fields of msim_explain_t, or its figures
 *	(msim_explain_figs()) -> msim_explain_destroy()
 */
#ifndef MSIM_LAB_EXPLAIN_H
#define MSIM_LAB_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/figures.h"
#include "lab/job.h"
#include "sim/engine.h"
#include "sim/params.h"
#include "sim/policy.h"
#include "sim/types.h"
#include "traces/trace.h"

/* What to explain. */
typedef struct msim_explain_config_s {
	/* The setting, as `memsim run` replays it (lab/job.h): each replay
	 * is a job opened from it (policy NULL: pytorch), so explain sees
	 * the run's input, parameters (a snapshot's own under --recording),
	 * cap and rows.  keep_going is not used: the moments are those of
	 * the first OOM. */
	msim_job_spec_t spec;
	size_t top;                     /* call sites kept; 0: 10 */
	bool alternatives;              /* at an OOM, replay alternatives */
	uint64_t context_bytes;         /* CUDA context and libraries: what
					 * nvidia-smi adds to reserved */
} msim_explain_config_t;

/* One call site (or tag) live at a moment. */
typedef struct msim_explain_site_s {
	char *site;        /* "file:line function" or a module path; "" */
	int category;      /* msim_category_t */
	uint64_t bytes;    /* allocated bytes of its live blocks */
	uint64_t count;    /* its live blocks */
	bool before;       /* blocks live before a partial history began
			    * (their snapshot frames' site, category
			    * untagged), apart from the history's own */
} msim_explain_site_t;

/* What a site's blocks are: "before history", else the category's name. */
const char *msim_explain_site_category(const msim_explain_site_t *s);

/* The state at one moment of the replay. */
typedef struct msim_explain_moment_s {
	uint64_t request;  /* requests (allocs and frees) served up to it */
	msim_stats_t st;   /* every statistic then */
	/* By pool (MSIM_POOL_ALL, _SMALL, _LARGE), bytes: reserved =
	 * allocated + pending + split_free + whole_free. */
	uint64_t reserved[MSIM_NPOOL];
	uint64_t allocated[MSIM_NPOOL];
	uint64_t pending[MSIM_NPOOL];    /* freed, stream events pending */
	uint64_t split_free[MSIM_NPOOL]; /* inactive_split_bytes */
	uint64_t whole_free[MSIM_NPOOL]; /* free, unsplit segments */
	uint64_t cat_bytes[MSIM_NCAT];   /* allocated bytes by category */
	uint64_t cat_count[MSIM_NCAT];   /* live blocks by category */
	msim_explain_site_t *sites;      /* the top sites, by bytes */
	size_t nsites;
	size_t nsites_live;              /* distinct sites live (a tag's
					  * seeded blocks apart) */
	/* Of the allocated bytes, the blocks a partial history's seeding
	 * allocated (live before the history began; msim_trace_seeding()):
	 * their bytes (in cat_bytes too) and count. */
	uint64_t before_bytes, before_count;
} msim_explain_moment_t;

/* One replay under another setting, after an OOM. */
typedef struct msim_explain_alt_s {
	char what[64];        /* "expandable_segments:True", "cap", ... */
	char conf[512];       /* its parameters, canonical */
	uint64_t cap;         /* its allowed bytes; 0: none */
	bool fits;            /* ran to the end without an OOM */
	int64_t oom_request;  /* else the request that failed */
	uint64_t peak_reserved; /* bytes */
} msim_explain_alt_t;

typedef struct msim_explain_s {
	const char *policy;     /* the policy's name */
	char params[1024];      /* canonical parameters */
	uint64_t capacity;      /* device bytes */
	uint64_t cap;           /* allowed bytes; 0: none */
	uint64_t large_segment; /* the policy's large segment size, bytes */
	uint64_t context_bytes; /* as configured */
	bool tagged;            /* the trace carries categories or sites */
	msim_summary_t sum;
	msim_stats_t end;       /* at the end of the replay (the OOM) */
	msim_explain_moment_t peak; /* when reserved first reached its peak */
	/* When allocated first reached its peak, if not at that same
	 * moment (peak_alloc_apart); peaks count from a partial history's
	 * start, after its seeding (the reset_peak_memory_stats() it ends
	 * with). */
	msim_explain_moment_t peak_alloc;
	bool peak_alloc_apart;
	bool oom;               /* the replay ran out of memory */
	msim_explain_moment_t at_oom;
	uint64_t oom_size;      /* bytes the failing request asked for */
	uint64_t oom_alloc_size; /* what PyTorch's message names: the
				  * segment it tried (get_allocation_size) */
	uint64_t oom_device_free; /* capacity - reserved - context */
	msim_explain_alt_t *alts;
	size_t nalts;
	uint64_t min_cap;       /* smallest cap found to fit (2 MiB steps);
				 * 0: not searched or none */
	int min_cap_runs;       /* replays the search took */
} msim_explain_t;

/* Replays cfg and explains it.  Returns 0, or an error with why (the
 * trace, the parameters). */
int msim_explain_run(const msim_explain_config_t *cfg, msim_explain_t **out,
		     char *why, size_t whylen);
void msim_explain_destroy(msim_explain_t *ex);

/*
 * Appends ex as figures named by their place in `memsim explain --json`,
 * whose printer nests them at their dots (msim_print_json_tree()) and
 * which memsim_explain() hands out flat (lib/memsim.h): the one list of
 * explain's answer.  trace, policy, params, capacity_bytes, cap_bytes,
 * context_bytes, tagged, requests; the moment reserved bytes peak
 * (peak.request, peak.all.reserved ... peak.large_pool.whole_free_segments,
 * peak.nvidia_smi_bytes, peak.categories.NAME.bytes and .blocks,
 * peak.before_history.bytes and .blocks, peak.sites_live,
 * peak.sites.I.site, .category, .bytes, .blocks); peak_allocated.* the
 * same when allocated bytes peak apart, else a null peak_allocated;
 * oom_request; after an out-of-memory oom.size, oom.alloc_size,
 * oom.device_free, oom.message, oom.state.* (a moment),
 * oom.alternatives.I.setting, .fits, .oom_request, .peak_reserved,
 * oom.min_cap, oom.min_cap_replays; then summary and summary_at_peak,
 * torch.cuda.memory_summary()'s text at the end (the OOM) and at the
 * peak.  An empty categories, sites or alternatives is an MSIM_FIG_EMPTY
 * figure.  Returns 0 or MSIM_ENOMEM.
 */
int msim_explain_figs(msim_figs_t *f, const msim_explain_t *ex,
		      const char *trace);

/*
 * PyTorch's message for the out-of-memory of ex (the text of
 * torch.OutOfMemoryError raised by DeviceCachingAllocator::malloc), with
 * the figures the real allocator would show: the allocation size, the
 * device's capacity and free bytes (capacity - reserved - context),
 * the process's use (reserved + context), the cap, allocated and
 * reserved-but-unallocated bytes.  Returns snprintf's length.
 */
size_t msim_explain_oom_message(const msim_explain_t *ex, char *buf,
				size_t n);

/*
 * Writes ex's breakdown as CSV to csv_path (header "moment,<part>,...",
 * a row per moment: peak, and oom if any; MiB) and, with out, draws it
 * with plots/breakdown.gp (plots_dir, gnuplot as for msim_plot_run()).
 * Returns 0, or an error with why.
 */
int msim_explain_plot(const msim_explain_t *ex, const char *csv_path,
		      const char *out, const char *title,
		      const char *plots_dir, const char *gnuplot, char *why,
		      size_t whylen);

/* PyTorch's format_size(): "512 bytes", "1.50 KiB", "20.00 MiB", ... */
char *msim_torch_format_size(uint64_t size, char *buf, size_t n);

/*
 * torch.cuda.memory_summary(device, abbreviated)'s table for st, in the
 * layout of torch/cuda/memory.py (PyTorch 2.11).  Returns snprintf's
 * length (the full table is under 4 KiB).
 */
size_t msim_memory_summary(const msim_stats_t *st, int device,
			   bool abbreviated, char *buf, size_t n);

/*
 * Settings that cannot act, one line each into lines (up to max of 256
 * bytes): garbage_collection_threshold without a cap.  has_cap: a cap is
 * given outside pv (--cap, --fraction).  Returns the number of lines.
 */
size_t msim_explain_warnings(const msim_policy_ops_t *ops,
			     const msim_params_t *pv, bool has_cap,
			     char (*lines)[256], size_t max);

#endif
