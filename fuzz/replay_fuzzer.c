/*
 * A libFuzzer target for the whole replay: the input is a trace (FUZZ_FORMAT
 * csv or pickle; bin with its checksums fixed up), replayed as
 * `memsim run --recording` does (deferred frees, hidden empty_cache calls,
 * the recorded segment addresses as placement hints, every OOM kept going)
 * by every policy, then checked against the snapshot's segments state when
 * the trace has one (lab/snapcheck.c).  An impossible trace must end in a
 * clean error from the reader or the engine, never in a crash, a leak or a
 * sanitizer report.
 *
 * A byte taken from both ends of the input and its length (so that every
 * format, whose first and last bytes are mostly fixed, gets both) picks
 * the variants: bit 0 replays once more with `--addresses model`, bit 1
 * replays under a cap of 4 GiB with each policy's second setting
 * (conf_variant: expandable segments and the garbage collector for
 * pytorch, a limit for cupy and pool, a release threshold for cuda-async),
 * where private pools fall back, use_on_oom pools lend their blocks and
 * frees of other streams complete.
 */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/bin_fixup.h"
#include "fuzz/common.h"
#include "lab/snapcheck.h"
#include "policies/registry.h"
#include "sim/params.h"
#include "sim/engine.h"
#include "traces/trace.h"

#ifndef FUZZ_FORMAT
#define FUZZ_FORMAT "csv"
#endif

/* Each policy's second setting (the replay's bit 1), or NULL. */
static const char *
conf_variant(const char *policy)
{
	static const char *const v[][2] = {
		{"pytorch", "expandable_segments:True,max_split_size_mb:40,"
			    "garbage_collection_threshold:0.5,"
			    "roundup_power2_divisions:4"},
		{"cuda-async", "release_threshold_mb:64"},
		{"cupy", "limit:1073741824"},
		{"pool", "initial_pool_size_mb:64,maximum_pool_size_mb:2048"},
		{"bfc", "allow_growth:False"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (!strcmp(v[i][0], policy))
			return v[i][1];
	return NULL;
}

static void
replay(const char *path, const msim_policy_ops_t *ops, bool hints,
       bool variant)
{
	msim_trace_options_t opt = {
		.deferred_frees = true,
		.hidden_empty_cache = hints,
		.format = msim_trace_format_find(FUZZ_FORMAT),
	};
	msim_trace_t *t;
	char why[512];
	if (msim_trace_open(path, &opt, &t, why, sizeof(why)))
		return;
	msim_sim_config_t cfg = {
		.source = msim_trace_source(t),
		.policy = ops,
		.device = {.log_events = 1, .use_hints = hints,
			   .capacity = UINT64_C(1) << 34},
		.keep_going = true,
		.peak_blocks = true,
		.timeline_points = 16,
	};
	msim_params_t pv;
	const char *conf = variant ? conf_variant(ops->name) : NULL;
	bool have_pv = false;
	if (variant) {
		cfg.fraction = 0.25;
		if (conf) {
			if (msim_params_init(&pv, ops->params))
				abort();
			have_pv = true;
			if (msim_params_parse(&pv, conf))
				abort(); /* the table above is wrong */
			cfg.params = &pv;
		}
	}
	msim_sim_t *sim;
	if (msim_sim_new(&cfg, &sim, why, sizeof(why)) == 0) {
		if (msim_sim_run(sim) == 0) {
			const msim_snap_segment_t *segs;
			size_t n;
			msim_snapcheck_t chk;
			if (msim_trace_segments(t, &segs, &n) == 0)
				msim_snapcheck(sim, segs, n, &chk);
			msim_stats_t st;
			msim_sim_stats(sim, &st);
		}
		msim_sim_destroy(sim);
	}
	if (have_pv)
		msim_params_clear(&pv);
	msim_trace_close(t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0; /* long inputs are slow, not more interesting */
	uint8_t *copy = malloc(size + 1);
	if (!copy)
		abort();
	if (size)
		memcpy(copy, data, size);
	fuzz_bin_fixup(copy, size);
	const char *path = fuzz_file("replay", copy, size);
	free(copy);
	unsigned mode = size ? data[0] ^ data[size - 1] ^ (unsigned)size : 0;
	for (const msim_policy_ops_t *const *p = msim_policy_list(); *p; p++) {
		replay(path, *p, true, mode & 2);
		if (mode & 1) /* --addresses model */
			replay(path, *p, false, mode & 2);
	}
	return 0;
}
