/*
 * A libFuzzer target for sweep settings files (`memsim sweep --settings`):
 * the input is the file, planned over a small trace and two policies as
 * msim_sweep_plan() does before a sweep runs (every setting parsed, routed,
 * checked by creating its policy, keyed and de-duplicated).  With bit 2 of
 * the last byte xor the length, a plan of at most 8 settings also runs, as
 * msim_sweep_exec() does in one process (each setting replayed and stored
 * in a new results database), then once more over the same database (every
 * setting already stored; bit 3: --force, each replaced).
 */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	if (msim_sweep_plan(&spec, &sw, why, sizeof(why)))
		return 0;
	unsigned mode = size ? data[size - 1] ^ (unsigned)size : 0;
	if ((mode & 4) && msim_sweep_count(sw) <= 8) {
		char db[128], side[160];
		snprintf(db, sizeof(db), "/dev/shm/msim-fuzz-%d-sweep.db",
			 (int)getpid());
		msim_sweep_opts_t o = {.db_path = db};
		msim_sweep_result_t res;
		for (int pass = 0; pass < 2; pass++) {
			o.force = pass && (mode & 8);
			if (msim_sweep_exec(sw, &o, &res, why, sizeof(why)))
				break;
		}
		unlink(db);
		snprintf(side, sizeof(side), "%s-wal", db);
		unlink(side);
		snprintf(side, sizeof(side), "%s-shm", db);
		unlink(side);
	}
	msim_sweep_destroy(sw);
	return 0;
}
