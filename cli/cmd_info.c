/*
 * memsim info: what a trace holds, read once (streaming), and for a
 * snapshot the allocator state it was taken in (its segments), checked
 * against the end state of its own trace.
 */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_histogram.h>

#include "cli/cli.h"
#include "sim/grow.h"
#include "sim/units.h"
#include "traces/trace.h"

#define INFO_MAX_STREAMS 64
#define INFO_BINS 48 /* log2 size bins: [2^k, 2^(k+1)) bytes, k < 48 */

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

typedef struct info_s {
	uint64_t *sizes; /* live size by request id */
	size_t nsizes;
	uint64_t live, peak, allocs, frees, bytes;
	uint64_t nlive; /* live allocations */
	msim_stream_t streams[INFO_MAX_STREAMS];
	int nstreams;
	bool more_streams;
	gsl_histogram *h;
} info_t;

static void
info_alloc(info_t *in, const msim_req_t *r)
{
	if (r->flags & MSIM_REQF_FILLER)
		return; /* stands for a block that was free */
	if (MSIM_GROW_ZERO(in->sizes, in->nsizes, (size_t)r->id + 1, 1024))
		msim_cli_die("out of memory");
	if (r->flags & MSIM_REQF_SEED) {
		/* Allocated before the history began: live, not counted. */
		in->sizes[r->id] = r->size;
		in->live += r->size;
		in->nlive++;
		if (in->live > in->peak)
			in->peak = in->live;
		return;
	}
	in->allocs++;
	in->bytes += r->size;
	gsl_histogram_increment(in->h, log2((double)r->size));
	int i;
	for (i = 0; i < in->nstreams; i++)
		if (in->streams[i] == r->stream)
			break;
	if (i == in->nstreams) {
		if (in->nstreams < INFO_MAX_STREAMS)
			in->streams[in->nstreams++] = r->stream;
		else
			in->more_streams = true;
	}
	if (r->flags & MSIM_REQF_EXPECT_OOM)
		return; /* never live */
	in->sizes[r->id] = r->size;
	in->live += r->size;
	in->nlive++;
	if (in->live > in->peak)
		in->peak = in->live;
}

/* A snapshot's segments state, summed. */
typedef struct info_snap_s {
	size_t nsegs, nsmall, nexpandable, nblocks;
	uint64_t reserved, allocated, active, requested; /* bytes */
	uint64_t small_reserved;                        /* bytes */
	uint64_t nstate[MSIM_SNAP_NSTATES];             /* blocks */
	uint64_t state_bytes[MSIM_SNAP_NSTATES];
	uint64_t active_requested; /* requested_size of active blocks */
	size_t untiled; /* segments whose blocks do not tile them */
} info_snap_t;

static void
info_snap_sum(const msim_snap_segment_t *g, size_t n, info_snap_t *s)
{
	memset(s, 0, sizeof(*s));
	s->nsegs = n;
	for (size_t i = 0; i < n; i++, g++) {
		s->reserved += g->total_size;
		s->allocated += g->allocated_size;
		s->active += g->active_size;
		s->requested += g->requested_size;
		if (!g->large) {
			s->nsmall++;
			s->small_reserved += g->total_size;
		}
		s->nexpandable += g->expandable;
		s->nblocks += g->nblocks;
		uint64_t at = g->addr;
		bool tiled = true;
		for (size_t k = 0; k < g->nblocks; k++) {
			const msim_snap_block_t *b = &g->blocks[k];
			s->nstate[b->state]++;
			s->state_bytes[b->state] += b->size;
			if (b->state != MSIM_SNAP_INACTIVE)
				s->active_requested += b->requested;
			tiled = tiled && b->addr == at;
			at = b->addr + b->size;
		}
		/* Expandable segments list only their mapped blocks. */
		if (!g->expandable && (!tiled || at != g->addr + g->total_size))
			s->untiled++;
	}
}

/* Prints the snapshot state and how it compares with the trace's end. */
static void
info_snap_print(const msim_trace_tally_t *tl, const info_t *in,
		const info_snap_t *s, uint64_t start_reserved, int json)
{
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

/*
 * The recorder's assumptions: the `annotate` rows of category
 * "assumption" in a CSV trace that `memsim record --fake` wrote, whose site
 * is "KIND FILE:LINE =VALUE" (docs/recording-values.md).  The trace reader
 * keeps no annotate site, so the file is read again for them, and only a
 * plain CSV with action, category and site columns.
 */
#define INFO_ASSUME_SITES 4096 /* distinct sites listed; more are counted */
#define INFO_ASSUME_SHOW 20    /* sites printed */

typedef struct info_count_s {
	char *key;
	uint64_t n;
} info_count_t;

typedef struct info_assume_s {
	info_count_t *kinds, *sites;
	size_t nkinds, nsites;
	uint64_t total, other; /* other: rows past INFO_ASSUME_SITES sites */
} info_assume_t;

static void
info_count_add(info_count_t **v, size_t *n, const char *key, size_t len)
{
	for (size_t i = 0; i < *n; i++)
		if (strlen((*v)[i].key) == len &&
		    !memcmp((*v)[i].key, key, len)) {
			(*v)[i].n++;
			return;
		}
	info_count_t *w = realloc(*v, (*n + 1) * sizeof(**v));
	if (!w)
		msim_cli_die("out of memory");
	*v = w;
	if (!(w[*n].key = malloc(len + 1)))
		msim_cli_die("out of memory");
	memcpy(w[*n].key, key, len);
	w[*n].key[len] = '\0';
	w[*n].n = 1;
	(*n)++;
}

/* Field i of the comma-separated line s (no quoting: memsim writes none),
 * as a pointer and a length; false if the line has fewer fields. */
static bool
info_field(const char *s, int i, const char **f, size_t *len)
{
	for (; i > 0; i--) {
		s = strchr(s, ',');
		if (!s)
			return false;
		s++;
	}
	size_t n = strcspn(s, ",\r\n");
	*f = s;
	*len = n;
	return true;
}

static int
info_count_cmp(const void *a, const void *b)
{
	const info_count_t *x = a, *y = b;
	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return strcmp(x->key, y->key);
}

static void
info_assumptions(const char *path, info_assume_t *as)
{
	memset(as, 0, sizeof(*as));
	FILE *fp = fopen(path, "r");
	if (!fp)
		return;
	char *line = NULL;
	size_t cap = 0;
	int col_act = -1, col_cat = -1, col_site = -1;
	if (getline(&line, &cap, fp) > 0) {
		const char *f;
		size_t len;
		for (int i = 0; info_field(line, i, &f, &len); i++) {
			if (len == 6 && !memcmp(f, "action", 6))
				col_act = i;
			else if (len == 8 && !memcmp(f, "category", 8))
				col_cat = i;
			else if (len == 4 && !memcmp(f, "site", 4))
				col_site = i;
		}
	}
	while (col_act >= 0 && col_cat >= 0 && col_site >= 0 &&
	       getline(&line, &cap, fp) > 0) {
		const char *f, *site;
		size_t len, slen;
		if (!strstr(line, ",annotate,") ||
		    !info_field(line, col_act, &f, &len) || len != 8 ||
		    memcmp(f, "annotate", 8) ||
		    !info_field(line, col_cat, &f, &len) || len != 10 ||
		    memcmp(f, "assumption", 10) ||
		    !info_field(line, col_site, &site, &slen) || !slen)
			continue;
		as->total++;
		info_count_add(&as->kinds, &as->nkinds, site,
			       strcspn(site, " ,\r\n"));
		if (as->nsites < INFO_ASSUME_SITES)
			info_count_add(&as->sites, &as->nsites, site, slen);
		else
			as->other++;
	}
	free(line);
	fclose(fp);
	if (as->nkinds) /* (qsort's base may not be NULL) */
		qsort(as->kinds, as->nkinds, sizeof(*as->kinds),
		      info_count_cmp);
	if (as->nsites)
		qsort(as->sites, as->nsites, sizeof(*as->sites),
		      info_count_cmp);
}

static void
info_assume_free(info_assume_t *as)
{
	for (size_t i = 0; i < as->nkinds; i++)
		free(as->kinds[i].key);
	for (size_t i = 0; i < as->nsites; i++)
		free(as->sites[i].key);
	free(as->kinds);
	free(as->sites);
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
	msim_trace_t *t;
	if (msim_trace_open(path, &opt, &t, why, sizeof(why)))
		msim_cli_die("%s", why);
	info_t in = {0};
	if (!(in.h = gsl_histogram_alloc(INFO_BINS)) ||
	    gsl_histogram_set_ranges_uniform(in.h, 0, INFO_BINS))
		msim_cli_die("out of memory");
	msim_req_t r;
	int rc;
	uint64_t requests = 0;
	while ((rc = msim_trace_next(t, &r)) == 1) {
		if (r.kind == MSIM_REQ_SEGMENT_HINT ||
		    r.kind == MSIM_REQ_RESET_PEAKS ||
		    (r.flags & (MSIM_REQF_SEED | MSIM_REQF_FILLER))) {
			if (r.kind == MSIM_REQ_ALLOC)
				info_alloc(&in, &r);
			continue;
		}
		/* Requests as a run counts them: allocs and frees (not
		 * hidden empty_cache() calls or free_requested rows). */
		if (r.kind != MSIM_REQ_ALLOC && r.kind != MSIM_REQ_FREE)
			continue;
		requests++;
		if (r.kind == MSIM_REQ_ALLOC) {
			info_alloc(&in, &r);
		} else if (r.kind == MSIM_REQ_FREE) {
			in.frees++;
			if (r.id < in.nsizes && in.sizes[r.id]) {
				in.live -= in.sizes[r.id];
				in.sizes[r.id] = 0;
				in.nlive--;
			}
		}
	}
	if (rc < 0)
		msim_cli_die("%s", msim_trace_errmsg(t));
	uint64_t found, maybe;
	msim_trace_empty_caches(t, &found, &maybe);
	const msim_snap_segment_t *segs;
	size_t nsegs;
	if (msim_trace_segments(t, &segs, &nsegs))
		msim_cli_die("out of memory");
	info_snap_t snap;
	info_snap_sum(segs, nsegs, &snap);
	/* A snapshot memsim wrote (convert) has an empty state: not shown. */
	bool has_state = nsegs > 0;
	msim_trace_tally_t tl;
	msim_trace_tally(t, &tl);
	double dur_s = tl.entries ? (tl.last_us - tl.first_us) / 1e6 : 0.0;
	bool timed = tl.untimed == 0; /* PyTorch 2.0 wrote no time_us */
	msim_trace_seed_t seed;
	msim_trace_seeding(t, &seed);
	info_assume_t as = {0};
	if (tl.actions[MSIM_ACT_ANNOTATE] &&
	    !strcmp(msim_trace_format_name(t), "csv"))
		info_assumptions(path, &as);
	const char *conf = msim_trace_alloc_conf(t);
	char a[32], b[32];
	if (json) {
		printf("{\n  \"trace\": ");
		msim_cli_json_str(stdout, path);
		printf(",\n  \"format\": \"%s\",\n  \"entries\": %" PRIu64,
		       msim_trace_format_name(t), tl.entries);
		for (int k = 0; k < MSIM_NACT; k++)
			printf(",\n  \"%s\": %" PRIu64, msim_action_name(k),
			       tl.actions[k]);
		printf(",\n  \"requests\": %" PRIu64 ",\n  \"allocs\": %"
		       PRIu64 ",\n  \"frees\": %" PRIu64 ",\n  \"streams\": %d"
		       ",\n  \"duration_s\": %.6f,\n  \"alloc_bytes\": %" PRIu64
		       ",\n  \"peak_live_bytes\": %" PRIu64
		       ",\n  \"hidden_empty_cache\": %" PRIu64
		       ",\n  \"empty_cache_or_malloc\": %" PRIu64
		       ",\n  \"size_log2_histogram\": [",
		       requests, in.allocs, in.frees, in.nstreams, dur_s,
		       in.bytes, in.peak, found, maybe);
		for (size_t k = 0; k < INFO_BINS; k++)
			printf("%s%.0f", k ? ", " : "",
			       gsl_histogram_get(in.h, k));
		printf("]");
		if (!timed)
			printf(",\n  \"duration_known\": false");
		if (conf) {
			printf(",\n  \"allocator_settings\": ");
			msim_cli_json_str(stdout, conf);
		}
		msim_cli_seed_json(t, true);
		if (as.total) {
			printf(",\n  \"assumptions\": {");
			for (size_t i = 0; i < as.nkinds; i++) {
				printf("%s\n    ", i ? "," : "");
				msim_cli_json_str(stdout, as.kinds[i].key);
				printf(": %" PRIu64, as.kinds[i].n);
			}
			printf("\n  }");
		}
		if (has_state)
			info_snap_print(&tl, &in, &snap, seed.segment_bytes, 1);
		printf(",\n  \"trace_hash\": \"%016" PRIx64 "\"\n}\n",
		       msim_trace_hash(t));
	} else {
		printf("trace      %s (%s, hash %016" PRIx64 ")\n", path,
		       msim_trace_format_name(t), msim_trace_hash(t));
		printf("entries    %" PRIu64 ":", tl.entries);
		for (int k = 0; k < MSIM_NACT; k++)
			if (tl.actions[k])
				printf(" %s %" PRIu64, msim_action_name(k),
				       tl.actions[k]);
		printf("\nrequests   %" PRIu64 " (%" PRIu64 " allocs, %" PRIu64
		       " frees)\n", requests, in.allocs, in.frees);
		printf("streams    %d%s\n", in.nstreams,
		       in.more_streams ? " or more" : "");
		if (timed)
			printf("duration   %.3f s\n", dur_s);
		else
			printf("duration   unknown (entries without time_us)\n");
		if (conf)
			printf("settings   %s\n", *conf ? conf
			       : "(the defaults)");
		printf("allocated  %s in all, peak live %s (%" PRIu64
		       " bytes)\n", msim_format_bytes(in.bytes, a, sizeof(a)),
		       msim_format_bytes(in.peak, b, sizeof(b)), in.peak);
		uint64_t rows = tl.actions[MSIM_ACT_EMPTY_CACHE];
		printf("empty_cache ");
		if (rows)
			printf("%" PRIu64 " call%s (rows), ", rows,
			       rows == 1 ? "" : "s");
		printf("%" PRIu64 " hidden call%s found", found,
		       found == 1 ? "" : "s");
		if (maybe)
			printf(", %" PRIu64 " segment-free run%s left to the "
			       "policy (empty_cache or the malloc's own)",
			       maybe, maybe == 1 ? "" : "s");
		printf("\n");
		msim_cli_seed_print(t);
		if (as.total) {
			printf("assumptions %" PRIu64 " (", as.total);
			for (size_t i = 0; i < as.nkinds; i++)
				printf("%s%s %" PRIu64, i ? ", " : "",
				       as.kinds[i].key, as.kinds[i].n);
			printf(")\n");
			for (size_t i = 0; i < as.nsites &&
			     i < INFO_ASSUME_SHOW; i++)
				printf("  %8" PRIu64 " x %s\n", as.sites[i].n,
				       as.sites[i].key);
			if (as.nsites > INFO_ASSUME_SHOW || as.other)
				printf("  (%zu more sites%s)\n",
				       as.nsites > INFO_ASSUME_SHOW ?
				       as.nsites - INFO_ASSUME_SHOW : 0,
				       as.other ? ", and rows past the "
				       "first 4096 sites" : "");
		}
		if (has_state)
			info_snap_print(&tl, &in, &snap, seed.segment_bytes, 0);
		printf("sizes      (allocs by size, powers of two)\n");
		double max = gsl_histogram_max_val(in.h);
		for (size_t k = 0; k < INFO_BINS; k++) {
			double n = gsl_histogram_get(in.h, k);
			if (n == 0)
				continue;
			int bar = max > 0 ? (int)(40 * n / max + 0.5) : 0;
			printf("  >= %-10s %10.0f %.*s\n",
			       msim_format_bytes((uint64_t)1 << k, a, sizeof(a)),
			       n, bar,
			       "########################################");
		}
	}
	info_assume_free(&as);
	gsl_histogram_free(in.h);
	free(in.sizes);
	msim_trace_close(t);
	return 0;
}
