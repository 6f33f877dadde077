/*
 * A libFuzzer target for the whole replay: the input is a trace (FUZZ_FORMAT
 * csv or pickle; bin with its checksums fixed up), replayed as
 * `memsim run --recording` does (deferred frees, hidden empty_cache calls,
 * the recorded segment addresses as placement hints, every OOM kept going)
 * by every policy, then checked against the snapshot's segments state when
 * the trace has one (lab/snapcheck.c).  An impossible trace must end in a
 * clean error from the reader or the engine, never in a crash, a leak or a
 * sanitizer report.
 */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/bin_fixup.h"
#include "fuzz/common.h"
#include "lab/snapcheck.h"
#include "policies/registry.h"
#include "sim/engine.h"
#include "traces/trace.h"

#ifndef FUZZ_FORMAT
#define FUZZ_FORMAT "csv"
#endif

static void
replay(const char *path, const msim_policy_ops_t *ops, bool hints)
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
	for (const msim_policy_ops_t *const *p = msim_policy_list(); *p; p++) {
		replay(path, *p, true);
		if (size && (data[0] & 1))
			replay(path, *p, false); /* --addresses model */
	}
	return 0;
}
