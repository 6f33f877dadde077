/* memsim info: what a trace holds, read once (streaming). */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_histogram.h>

#include "sim/cli.h"
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
		"calls found (spec section 16, note 6).\n"
		"\n"
		"options:\n"
		"      --device N          snapshots: the device_traces index to "
		"read\n"
		"      --json              print one JSON object\n"
		"  -h, --help              this help\n");
}

typedef struct info_s {
	uint64_t *sizes; /* live size by request id */
	size_t nsizes;
	uint64_t live, peak, allocs, frees, bytes;
	msim_stream_t streams[INFO_MAX_STREAMS];
	int nstreams;
	bool more_streams;
	gsl_histogram *h;
} info_t;

static void
info_alloc(info_t *in, const msim_req_t *r)
{
	if (r->id >= in->nsizes) {
		size_t n = in->nsizes ? in->nsizes : 1024;
		while (n <= r->id)
			n *= 2;
		uint64_t *s = realloc(in->sizes, n * sizeof(*s));
		if (!s)
			msim_cli_die("out of memory");
		memset(s + in->nsizes, 0, (n - in->nsizes) * sizeof(*s));
		in->sizes = s;
		in->nsizes = n;
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
	if (in->live > in->peak)
		in->peak = in->live;
}

int
msim_cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"device", required_argument, NULL, 'D'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	msim_trace_options_t opt = {.hidden_empty_cache = true};
	int json = 0, c;
	char *end;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'D':
			opt.device1 = (unsigned)strtoul(optarg, &end, 10) + 1;
			if (*end || !*optarg || opt.device1 == 0)
				msim_cli_die("--device: '%s' is not a device index",
				    optarg);
			break;
		case 'j': json = 1; break;
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
		if (r.kind == MSIM_REQ_SEGMENT_HINT)
			continue;
		requests++;
		if (r.kind == MSIM_REQ_ALLOC) {
			info_alloc(&in, &r);
		} else if (r.kind == MSIM_REQ_FREE) {
			in.frees++;
			if (r.id < in.nsizes) {
				in.live -= in.sizes[r.id];
				in.sizes[r.id] = 0;
			}
		}
	}
	if (rc < 0)
		msim_cli_die("%s", msim_trace_errmsg(t));
	uint64_t found, maybe;
	msim_trace_empty_caches(t, &found, &maybe);
	double dur_s = t->entries ? (t->last_us - t->first_us) / 1e6 : 0.0;
	char a[32], b[32];
	if (json) {
		printf("{\n  \"trace\": ");
		msim_cli_json_str(stdout, path);
		printf(",\n  \"format\": \"%s\",\n  \"entries\": %" PRIu64,
		       msim_trace_format_name(t), t->entries);
		for (int k = 0; k < MSIM_NACT; k++)
			printf(",\n  \"%s\": %" PRIu64, msim_action_name(k),
			       t->actions[k]);
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
		printf("],\n  \"trace_hash\": \"%016" PRIx64 "\"\n}\n",
		       msim_trace_hash(t));
	} else {
		printf("trace      %s (%s, hash %016" PRIx64 ")\n", path,
		       msim_trace_format_name(t), msim_trace_hash(t));
		printf("entries    %" PRIu64 ":", t->entries);
		for (int k = 0; k < MSIM_NACT; k++)
			if (t->actions[k])
				printf(" %s %" PRIu64, msim_action_name(k),
				       t->actions[k]);
		printf("\nrequests   %" PRIu64 " (%" PRIu64 " allocs, %" PRIu64
		       " frees)\n", requests, in.allocs, in.frees);
		printf("streams    %d%s\n", in.nstreams,
		       in.more_streams ? " or more" : "");
		printf("duration   %.3f s\n", dur_s);
		printf("allocated  %s in all, peak live %s (%" PRIu64
		       " bytes)\n", msim_format_bytes(in.bytes, a, sizeof(a)),
		       msim_format_bytes(in.peak, b, sizeof(b)), in.peak);
		printf("empty_cache %" PRIu64 " hidden call%s found", found,
		       found == 1 ? "" : "s");
		if (maybe)
			printf(", %" PRIu64 " segment-free run%s left to the "
			       "policy (empty_cache or the malloc's own)",
			       maybe, maybe == 1 ? "" : "s");
		printf("\nsizes      (allocs by size, powers of two)\n");
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
	gsl_histogram_free(in.h);
	free(in.sizes);
	msim_trace_close(t);
	return 0;
}
