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
#include "cli/opts.h"
#include "lab/figures.h"
#include "lab/info.h"
#include "sim/units.h"

static const msim_cli_opt_t info_opts[] = {
	{'D', false, "device", "N",
	 "snapshots: the device_traces index to read"},
	{'X', false, "strict", NULL,
	 "refuse a partial history instead of seeding its start"},
	{'N', false, "lenient", NULL,
	 "skip entries of unknown actions (and count them)"},
	{'j', false, "json", NULL, "print one JSON object"},
	MSIM_CLI_OPT_HELP,
	{0},
};

static const msim_cli_cmd_t info_cmd = {
	"usage: memsim info [OPTIONS] TRACE\n"
	"\n"
	"Reads TRACE once and prints its format, entries by action, requests, "
	"streams,\n"
	"duration, peak live bytes (the sum of the sizes of live allocations), "
	"a\n"
	"histogram of allocation sizes (powers of two) and the hidden "
	"empty_cache()\n"
	"calls found (pytorch-allocator.md §11.2).  For a snapshot, also its\n"
	"segments state (§10.1): segments by pool, reserved, allocated, active "
	"and\n"
	"requested bytes, blocks by state, and whether the trace's end state "
	"agrees.\n"
	"\n"
	"options:\n",
	info_opts, 26, NULL, false,
};

/* Prints the snapshot state and how it compares with the trace's end. */
static void
info_snap_print(const msim_info_t *in)
{
	const msim_trace_tally_t *tl = &in->tally;
	const msim_info_snap_t *s = &in->snap;
	uint64_t start_reserved = in->seed.segment_bytes;
	uint64_t nactive = s->nstate[MSIM_SNAP_ALLOCATED] +
			   s->nstate[MSIM_SNAP_PENDING_FREE];
	bool res_same = s->reserved_same, live_same = s->live_same;
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

/* Prints the figures of f after the others (lab/figures.h), then clears
 * them. */
static void
info_figs(msim_figs_t *f, int rc, bool first)
{
	if (rc)
		msim_cli_die("out of memory");
	msim_print_json_figs(f, first);
	msim_figs_clear(f);
}

static void
info_json(const char *path, const msim_info_t *in)
{
	msim_figs_t f = {0};
	printf("{");
	info_figs(&f, msim_info_figs_head(&f, path, in), true);
	printf(",\n  \"size_log2_histogram\": [");
	for (size_t k = 0; k < MSIM_INFO_BINS; k++)
		printf("%s%.0f", k ? ", " : "", in->hist[k]);
	printf("]");
	info_figs(&f, msim_info_figs_middle(&f, in), false);
	const msim_info_assume_t *as = &in->assume;
	if (as->total) {
		printf(",\n  \"assumptions\": {");
		for (size_t i = 0; i < as->nkinds; i++) {
			printf("%s\n    ", i ? "," : "");
			msim_print_json_str(stdout, as->kinds[i].key);
			printf(": %" PRIu64, as->kinds[i].n);
		}
		printf("\n  }");
	}
	info_figs(&f, msim_info_figs_tail(&f, in), false);
	printf("\n}\n");
}

/* The recorder's assumptions, by kind, then the most frequent sites. */
#define INFO_ASSUME_SHOW 20 /* sites printed */

static void
info_assume_print(const msim_info_assume_t *as)
{
	if (!as->total)
		return;
	printf("assumptions %" PRIu64 " (", as->total);
	for (size_t i = 0; i < as->nkinds; i++)
		printf("%s%s %" PRIu64, i ? ", " : "", as->kinds[i].key,
		       as->kinds[i].n);
	printf(")\n");
	for (size_t i = 0; i < as->nsites && i < INFO_ASSUME_SHOW; i++)
		printf("  %8" PRIu64 " x %s\n", as->sites[i].n,
		       as->sites[i].key);
	if (as->nsites > INFO_ASSUME_SHOW || as->other)
		printf("  (%zu more sites%s)\n",
		       as->nsites > INFO_ASSUME_SHOW ?
		       as->nsites - INFO_ASSUME_SHOW : 0,
		       as->other ? ", and rows past the first 4096 sites" : "");
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
	info_assume_print(&in->assume);
	if (in->has_state)
		info_snap_print(in);
	info_sizes(in);
}

int
msim_cmd_info(int argc, char **argv)
{
	msim_trace_options_t opt = {.hidden_empty_cache = true};
	int json = 0, c;
	while ((c = msim_cli_next(&info_cmd, argc, argv)) != -1) {
		switch (c) {
		case 'D': opt.device1 = msim_cli_device1(optarg); break;
		case 'j': json = 1; break;
		case 'X': opt.strict = true; break;
		case 'N': opt.lenient = true; break;
		}
	}
	msim_cli_operands(&info_cmd, argc, 1, 1);
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
