/*
 * A libFuzzer target for sweep settings files (`memsim sweep --settings`):
 * the input is the file, planned over a small trace and two policies as
 * msim_sweep_plan() does before a sweep runs (every setting parsed, routed,
 * checked by creating its policy, keyed and de-duplicated).
 */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/common.h"
#include "lab/sweep.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t trace[] =
		"seq,time_us,action,addr,size,stream\n"
		"0,1,alloc,4096,512,0\n"
		"1,2,free_completed,4096,512,0\n";
	static const char *tpath;
	if (!tpath)
		tpath = strdup(fuzz_file("trace.csv", trace,
					 sizeof(trace) - 1));
	const char *spath = fuzz_file("settings", data, size);
	const char *traces[] = {tpath};
	const char *policies[] = {"pytorch", "bfc"};
	const char *grid[] = {"garbage_collection_threshold=0,0.5"};
	msim_sweep_spec_t spec = {
		.traces = traces, .ntraces = 1,
		.policies = policies, .npolicies = size && (data[0] & 1) ? 2 : 1,
		.grid = grid, .ngrid = size && (data[0] & 2) ? 1 : 0,
		.settings_file = spath,
	};
	msim_sweep_t *sw;
	char why[1024];
	if (msim_sweep_plan(&spec, &sw, why, sizeof(why)) == 0)
		msim_sweep_destroy(sw);
	return 0;
}
