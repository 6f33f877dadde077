/*
 * memsim info: what a trace holds, read once (streaming), and for a
 * snapshot the allocator state it was taken in (its segments), checked
 * against the end state of its own trace.  The reading is lab/info.c's;
 * here are the options and the printing.
 */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lab/info.h"
#include "sim/units.h"

static void
usage_info(FILE *fp)
{
	fprintf(fp,
		"usage: memsim info [OPTIONS] TRACE\n"
		"\n"
		"Reads TRACE once and prints its format, entries by action, "
		"requests, streams,\n"
		"duration, peak live bytes (the sum of the sizes of live "
		"allocations), a\n"
		"histogram of allocation sizes (powers of two) and the hidden "
		"empty_cache()\n"
		"calls found (pytorch-allocator.md §11.2).  For a snapshot, "
		"also its\n"
		"segments state (§10.1): segments by pool, reserved, "
		"allocated, active and\n"
		"requested bytes, blocks by state, and whether the trace's end "
		"state agrees.\n"
		"\n"
		"options:\n"
		"      --device N          snapshots: the device_traces index to "
		"read\n"
		"      --strict            refuse a partial history instead of "
		"seeding its start\n"
		"      --lenient           skip entries of unknown actions (and "
		"count them)\n"
		"      --json              print one JSON object\n"
		"  -h, --help              this help\n");
}

/* Prints the snapshot state and how it compares with the trace's end. */
static void
info_snap_print(const msim_info_t *in, int json)
{
	const msim_trace_tally_t *tl = &in->tally;
	const msim_info_snap_t *s = &in->snap;
	uint64_t start_reserved = in->seed.segment_bytes;
	uint64_t nactive = s->nstate[MSIM_SNAP_ALLOCATED] +
			   s->nstate[MSIM_SNAP_PENDING_FREE];
	bool res_same = tl->seg_bytes + (int64_t)start_reserved ==
			(int64_t)s->reserved;
	bool live_same = in->nlive == nactive &&
			 in->live == s->active_requested;
	if (json) {
		printf(",\n  \"snapshot_segments\": %zu,\n"
		       "  \"snapshot_small_segments\": %zu,\n"
		       "  \"snapshot_reserved_bytes\": %" PRIu64 ",\n"
		       "  \"snapshot_allocated_bytes\": %" PRIu64 ",\n"
		       "  \"snapshot_active_bytes\": %" PRIu64 ",\n"
		       "  \"snapshot_requested_bytes\": %" PRIu64 ",\n"
		       "  \"snapshot_blocks\": %zu",
		       s->nsegs, s->nsmall, s->reserved, s->allocated,
		       s->active, s->requested, s->nblocks);
		for (int k = 0; k < MSIM_SNAP_NSTATES; k++)
			printf(",\n  \"snapshot_%s_blocks\": %" PRIu64,
			       msim_snap_state_name(k), s->nstate[k]);
		printf(",\n  \"trace_reserved_bytes\": %" PRId64
		       ",\n  \"trace_live_allocations\": %" PRIu64
		       ",\n  \"snapshot_matches_trace\": %s",
		       tl->seg_bytes, in->nlive,
		       res_same && live_same ? "true" : "false");
		return;
	}
	char a[32], b[32], c[32], d[32];
	printf("snapshot   %zu segments (%zu small: %s, %zu large: %s)%s\n",
	       s->nsegs, s->nsmall,
	       msim_format_bytes(s->small_reserved, a, sizeof(a)),
	       s->nsegs - s->nsmall,
	       msim_format_bytes(s->reserved - s->small_reserved, b,
				 sizeof(b)),
	       s->nexpandable ? ", expandable" : "");
	printf("           reserved %s (%" PRIu64 " bytes), allocated %s, "
	       "active %s, requested %s\n",
	       msim_format_bytes(s->reserved, a, sizeof(a)), s->reserved,
	       msim_format_bytes(s->allocated, b, sizeof(b)),
	       msim_format_bytes(s->active, c, sizeof(c)),
	       msim_format_bytes(s->requested, d, sizeof(d)));
	printf("           %zu blocks:", s->nblocks);
	for (int k = 0; k < MSIM_SNAP_NSTATES; k++)
		printf("%s %" PRIu64 " %s (%s)", k ? "," : "", s->nstate[k],
		       msim_snap_state_name(k),
		       msim_format_bytes(s->state_bytes[k], a, sizeof(a)));
	printf("\n");
	if (s->untiled)
		printf("           %zu segment%s not tiled by their blocks\n",
		       s->untiled, s->untiled == 1 ? "" : "s");
	/* The trace ends where the snapshot was taken. */
	if (res_same && start_reserved)
		printf("check      reserved: the seeded segments and the "
		       "trace's segment rows leave the same\n");
	else if (res_same)
		printf("check      reserved: the trace's segment rows leave "
		       "the same\n");
	else
		printf("check      reserved: the trace's segment rows leave "
		       "%" PRId64 " bytes, the snapshot %" PRIu64 " (rows "
		       "lost from a full history?)\n", tl->seg_bytes,
		       s->reserved);
	if (live_same)
		printf("check      live: %" PRIu64 " allocations of %" PRIu64
		       " bytes, as the snapshot's active blocks\n", in->nlive,
		       in->live);
	else
		printf("check      live: the trace leaves %" PRIu64
		       " allocations of %" PRIu64 " bytes, the snapshot %"
		       PRIu64 " active blocks of %" PRIu64 " requested\n",
		       in->nlive, in->live, nactive, s->active_requested);
}

static void
info_json(const char *path, const msim_info_t *in)
{
	msim_trace_t *t = in->trace;
	printf("{\n  \"trace\": ");
	msim_cli_json_str(stdout, path);
	printf(",\n  \"format\": \"%s\",\n  \"entries\": %" PRIu64,
	       msim_trace_format_name(t), in->tally.entries);
	for (int k = 0; k < MSIM_NACT; k++)
		printf(",\n  \"%s\": %" PRIu64, msim_action_name(k),
		       in->tally.actions[k]);
	printf(",\n  \"requests\": %" PRIu64 ",\n  \"allocs\": %" PRIu64
	       ",\n  \"frees\": %" PRIu64 ",\n  \"streams\": %d"
	       ",\n  \"duration_s\": %.6f,\n  \"alloc_bytes\": %" PRIu64
	       ",\n  \"peak_live_bytes\": %" PRIu64
	       ",\n  \"hidden_empty_cache\": %" PRIu64
	       ",\n  \"empty_cache_or_malloc\": %" PRIu64
	       ",\n  \"size_log2_histogram\": [",
	       in->requests, in->allocs, in->frees, in->nstreams,
	       in->duration_s, in->bytes, in->peak, in->empty_found,
	       in->empty_maybe);
	for (size_t k = 0; k < MSIM_INFO_BINS; k++)
		printf("%s%.0f", k ? ", " : "", in->hist[k]);
	printf("]");
	if (!in->timed)
		printf(",\n  \"duration_known\": false");
	if (in->conf) {
		printf(",\n  \"allocator_settings\": ");
		msim_cli_json_str(stdout, in->conf);
	}
	msim_cli_seed_json(t, true);
	if (in->has_state)
		info_snap_print(in, 1);
	printf(",\n  \"trace_hash\": \"%016" PRIx64 "\"\n}\n",
	       msim_trace_hash(t));
}

/* The sizes: allocs by power of two, with bars. */
static void
info_sizes(const msim_info_t *in)
{
	char a[32];
	printf("sizes      (allocs by size, powers of two)\n");
	double max = 0;
	for (size_t k = 0; k < MSIM_INFO_BINS; k++)
		if (in->hist[k] > max)
			max = in->hist[k];
	for (size_t k = 0; k < MSIM_INFO_BINS; k++) {
		double n = in->hist[k];
		if (n == 0)
			continue;
		int bar = max > 0 ? (int)(40 * n / max + 0.5) : 0;
		printf("  >= %-10s %10.0f %.*s\n",
		       msim_format_bytes((uint64_t)1 << k, a, sizeof(a)), n,
		       bar, "########################################");
	}
}

static void
info_text(const char *path, const msim_info_t *in)
{
	msim_trace_t *t = in->trace;
	const msim_trace_tally_t *tl = &in->tally;
	char a[32], b[32];
	printf("trace      %s (%s, hash %016" PRIx64 ")\n", path,
	       msim_trace_format_name(t), msim_trace_hash(t));
	printf("entries    %" PRIu64 ":", tl->entries);
	for (int k = 0; k < MSIM_NACT; k++)
		if (tl->actions[k])
			printf(" %s %" PRIu64, msim_action_name(k),
			       tl->actions[k]);
	printf("\nrequests   %" PRIu64 " (%" PRIu64 " allocs, %" PRIu64
	       " frees)\n", in->requests, in->allocs, in->frees);
	printf("streams    %d%s\n", in->nstreams,
	       in->more_streams ? " or more" : "");
	if (in->timed)
		printf("duration   %.3f s\n", in->duration_s);
	else
		printf("duration   unknown (entries without time_us)\n");
	if (in->conf)
		printf("settings   %s\n", *in->conf ? in->conf
		       : "(the defaults)");
	printf("allocated  %s in all, peak live %s (%" PRIu64 " bytes)\n",
	       msim_format_bytes(in->bytes, a, sizeof(a)),
	       msim_format_bytes(in->peak, b, sizeof(b)), in->peak);
	uint64_t rows = tl->actions[MSIM_ACT_EMPTY_CACHE];
	printf("empty_cache ");
	if (rows)
		printf("%" PRIu64 " call%s (rows), ", rows,
		       rows == 1 ? "" : "s");
	printf("%" PRIu64 " hidden call%s found", in->empty_found,
	       in->empty_found == 1 ? "" : "s");
	if (in->empty_maybe)
		printf(", %" PRIu64 " segment-free run%s left to the policy "
		       "(empty_cache or the malloc's own)", in->empty_maybe,
		       in->empty_maybe == 1 ? "" : "s");
	printf("\n");
	msim_cli_seed_print(t);
	if (in->has_state)
		info_snap_print(in, 0);
	info_sizes(in);
}

int
msim_cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"device", required_argument, NULL, 'D'},
		{"strict", no_argument, NULL, 'X'},
		{"lenient", no_argument, NULL, 'N'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	msim_trace_options_t opt = {.hidden_empty_cache = true};
	int json = 0, c;
	while ((c = msim_cli_getopt(argc, argv, "h", longopts)) != -1) {
		switch (c) {
		case 'D': opt.device1 = msim_cli_device1(optarg); break;
		case 'j': json = 1; break;
		case 'X': opt.strict = true; break;
		case 'N': opt.lenient = true; break;
		case 'h': usage_info(stdout); return 0;
		default: usage_info(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage_info(stderr);
		return 2;
	}
	const char *path = argv[optind];
	char why[1024];
	msim_info_t in;
	if (msim_info_run(path, &opt, &in, why, sizeof(why)))
		msim_cli_die("%s", why);
	if (json)
		info_json(path, &in);
	else
		info_text(path, &in);
	msim_info_clear(&in);
	return 0;
}
