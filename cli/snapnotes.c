/*
 * What `memsim info` and `memsim run` say about a partial history and
 * the snapshot it came with (see msim_trace_seeding() in
 * traces/trace.h).
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "lab/figures.h"
#include "sim/units.h"
#include "traces/trace.h"

void
msim_cli_seed_print(msim_trace_t *t)
{
	msim_trace_seed_t s;
	char a[32], b[32];
	msim_trace_seeding(t, &s);
	uint64_t n = s.from_frees + s.from_snapshot;
	if (n || s.segments) {
		printf("seeded     %" PRIu64 " block%s allocated before the "
		       "history began (%" PRIu64 " freed by the trace, %"
		       PRIu64 " live in the snapshot), %s\n", n,
		       n == 1 ? "" : "s", s.from_frees, s.from_snapshot,
		       msim_format_bytes(s.bytes, a, sizeof(a)));
		if (s.segments)
			printf("           %" PRIu64 " segment%s of %s "
			       "rebuilt at the start, %" PRIu64 " filler%s\n",
			       s.segments, s.segments == 1 ? "" : "s",
			       msim_format_bytes(s.segment_bytes, b,
						 sizeof(b)),
			       s.fillers, s.fillers == 1 ? "" : "s");
		if (s.late)
			printf("           %" PRIu64 " seeded where their "
			       "free is met\n", s.late);
		if (s.exact)
			printf("start      as the snapshot tells it\n");
		else
			printf("start      not exact: %s\n", s.inexact);
	}
	if (s.snap_live)
		printf("explained  the trace allocated %" PRIu64 " of the %"
		       PRIu64 " live blocks of the snapshot (%s of %s, "
		       "%.1f%%)\n", s.explained, s.snap_live,
		       msim_format_bytes(s.explained_bytes, a, sizeof(a)),
		       msim_format_bytes(s.snap_live_bytes, b, sizeof(b)),
		       s.snap_live_bytes ? 100.0 * (double)s.explained_bytes /
						   (double)s.snap_live_bytes
					 : 100.0);
	const char *first;
	uint64_t skipped = msim_trace_skipped(t, &first);
	if (skipped)
		printf("skipped    %" PRIu64 " entr%s of unknown actions "
		       "(first '%s')\n", skipped, skipped == 1 ? "y" : "ies",
		       first);
	msim_trace_tally_t tl;
	msim_trace_tally(t, &tl);
	if (tl.zero_skipped)
		printf("skipped    %" PRIu64 " zero-byte request%s\n",
		       tl.zero_skipped, tl.zero_skipped == 1 ? "" : "s");
	if (msim_figs_no_events(t))
		printf("hint       the snapshot has no trace events: was "
		       "torch.cuda.memory._record_memory_history() enabled?\n");
}
