/* memsim run: replay a trace through a policy; print, store and plot. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot.h"
#include "policies/registry.h"
#include "cli/cli.h"
#include "sim/file.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "sim/metrics.h"
#include "sim/results.h"
#include "lab/explain.h"
#include "lab/snapcheck.h"
#include "sim/timemodel.h"
#include "lab/sweep.h"
#include "sim/units.h"
#include "traces/model_spec.h"
#include "traces/prefetch.h"
#include "traces/trace.h"

static void
usage_run(FILE *fp)
{
	fprintf(fp,
		"usage: memsim run [OPTIONS] TRACE|MODEL\n"
		"\n"
		"Replays TRACE (a PyTorch snapshot pickle, device-trace CSV, "
		"RMM log or memsim\n"
		"binary trace) or the trace generated for MODEL\n"
		"(\"model:arch=gpt2,batch=8,seq=1024,steps=3,dtype=bf16-amp\": "
		"the options of\n"
		"`memsim gen model` as key=value) through a policy and prints "
		"the\n"
		"figures of torch.cuda.memory_stats().  An out-of-memory is a "
		"result: it is\n"
		"reported with the index of the failing request and the exit "
		"status stays 0.\n"
		"\n"
		"options:\n"
		"  -p, --policy NAME       policy (default pytorch; see `memsim "
		"policies`)\n"
		"  -c, --alloc-conf STR    parameters in PYTORCH_CUDA_ALLOC_CONF "
		"syntax,\n"
		"                          e.g. \"max_split_size_mb:128,"
		"garbage_collection_threshold:0.6\"\n"
		"      --cap BYTES         per-process cap, as "
		"set_per_process_memory_fraction(\n"
		"                          BYTES / capacity) (suffixes: 16GiB, "
		"512MiB, 1.5GB)\n"
		"      --fraction F        the same cap as a fraction of the "
		"capacity\n"
		"      --capacity BYTES    device memory (default the H200's, "
		"%" PRIu64 ")\n"
		"      --addresses MODE    model: place segments like the CUDA "
		"13 driver (default);\n"
		"                          trace: at the trace's recorded "
		"segment addresses\n"
		"      --transform SPEC    rescale an fp32 recording: "
		"dtype=bf16-amp|fp16-amp|bf16\n"
		"                          (approximate; see README.md)\n"
		"      --keep-going        do not stop at the first OOM\n"
		"      --requests-only     replay only alloc and free_completed "
		"rows (as\n"
		"                          caching_allocator_alloc/delete "
		"would); by default a\n"
		"                          free_requested row frees allocated "
		"bytes at once and\n"
		"                          the block returns at its "
		"free_completed row\n"
		"      --recording         reproduce the recording itself: "
		"free_requested applied,\n"
		"                          hidden empty_cache() calls "
		"replayed, --addresses trace;\n"
		"                          a snapshot's end state is checked "
		"against its segments\n"
		"      --device N|all      snapshots: the device_traces index "
		"to replay, or each\n"
		"                          device with trace events in turn\n"
		"      --strict            refuse a partial history (frees of "
		"blocks the trace\n"
		"                          never allocated) instead of seeding "
		"its start\n"
		"      --lenient           skip entries of unknown actions (and "
		"count them)\n"
		"  -d, --db FILE           store the run in this SQLite "
		"database\n"
		"      --plot OUT          plot the fragmentation curve "
		"(.png, .svg, .pdf; needs --db)\n"
		"      --segments FILE     write the segment events as CSV "
		"(request,action,addr,size)\n"
		"      --calibration FILE  device latencies for the modelled "
		"device time\n"
		"                          (default: the H200's, built in)\n"
		"      --json              print one JSON object instead of a "
		"table\n"
		"      --explain           then where the memory goes (memsim "
		"explain)\n"
		"  -q, --quiet             no warnings about settings that "
		"cannot act\n"
		"  -h, --help              this help\n",
		MSIM_H200_BYTES);
}

static void
json_stat(const char *name, int64_t value, void *ctx)
{
	FILE *fp = ctx;
	fprintf(fp, ",\n  \"%s\": %" PRId64, name, value);
}

typedef struct run_opts_s {
	const char *policy, *conf, *db, *plot, *segments, *addresses;
	const char *calibration, *transform;
	uint64_t cap, capacity;
	double fraction;
	int json, keep_going, requests_only, explain, quiet;
	int recording;     /* --recording */
	unsigned device1;  /* --device N: N + 1 */
	int strict, lenient;
} run_opts_t;

static void
write_segments(const char *path, msim_device_t *dev)
{
	msim_outfile_t out;
	char why[512];
	if (msim_outfile_open(&out, path, why, sizeof(why)))
		msim_cli_die("%s", why);
	FILE *fp = out.fp;
	size_t n;
	const msim_seg_event_t *ev = msim_device_events(dev, &n);
	fprintf(fp, "request,action,addr,size\n");
	for (size_t i = 0; i < n; i++)
		fprintf(fp, "%" PRIu64 ",%s,%" PRIu64 ",%" PRIu64 "\n",
			ev[i].request, msim_seg_action_name(ev[i].action),
			ev[i].addr, ev[i].size);
	if (msim_outfile_commit(&out, why, sizeof(why)))
		msim_cli_die("%s", why);
}

static void
print_table(const char *trace, const char *policy, const char *params,
	    uint64_t cap, const msim_summary_t *sum, const msim_stats_t *st,
	    bool addresses_trace)
{
	char a[32], b[32];
	printf("trace      %s\n", trace);
	printf("policy     %s%s%s\n", policy, *params ? " " : "", params);
	if (cap)
		printf("cap        %s (%" PRIu64 " bytes)\n",
		       msim_format_bytes(cap, a, sizeof(a)), cap);
	printf("requests   %" PRIu64 "\n", sum->requests);
	printf("reserved   peak %-12s now %s\n",
	       msim_format_bytes((uint64_t)st->reserved_bytes[0].peak, a,
				 sizeof(a)),
	       msim_format_bytes((uint64_t)st->reserved_bytes[0].current, b,
				 sizeof(b)));
	printf("allocated  peak %-12s now %s\n",
	       msim_format_bytes((uint64_t)st->allocated_bytes[0].peak, a,
				 sizeof(a)),
	       msim_format_bytes((uint64_t)st->allocated_bytes[0].current, b,
				 sizeof(b)));
	printf("requested  peak %s\n",
	       msim_format_bytes((uint64_t)st->requested_bytes[0].peak, a,
				 sizeof(a)));
	printf("fragmentation at peak %.4f, mean %.4f; external max %.4f\n",
	       sum->frag_at_peak, sum->frag_mean, sum->ext_frag_max);
	printf("segments   %" PRId64 " allocated, %" PRId64 " freed, peak %"
	       PRId64 "\n", st->segment[0].allocated, st->segment[0].freed,
	       st->segment[0].peak);
	printf("device     %" PRId64 " allocs, %" PRId64 " frees; retries %"
	       PRId64 ", OOMs %" PRId64 "\n", st->num_device_alloc,
	       st->num_device_free, st->num_alloc_retries, st->num_ooms);
	if (sum->oom_request >= 0)
		printf("OOM        at request %" PRId64 "\n", sum->oom_request);
	if (sum->addr_same + sum->addr_other && addresses_trace)
		printf("addresses  %" PRIu64 " of %" PRIu64 " allocations at "
		       "their recorded address\n", sum->addr_same,
		       sum->addr_same + sum->addr_other);
	if (sum->ooms_expected || sum->ooms_unmatched)
		printf("recorded OOMs  %" PRIu64 " reproduced, %" PRIu64
		       " not\n", sum->ooms_expected, sum->ooms_unmatched);
}

/* --device all: the run once per device with trace events, as
 * --device N. */
static int
run_each_device(int argc, char **argv)
{
	const char *path = argv[argc - 1];
	uint32_t devs[256];
	size_t n;
	char why[1024];
	if (msim_trace_devices(path, devs, 256, &n, why, sizeof(why)))
		msim_cli_die("%s", why);
	if (n == 0)
		msim_cli_die("%s: no device has trace events (was "
			     "torch.cuda.memory._record_memory_history() "
			     "enabled?)", path);
	char **av = malloc(((size_t)argc + 1) * sizeof(*av));
	char num[16];
	if (!av)
		msim_cli_die("out of memory");
	for (size_t d = 0; d < n && d < 256; d++) {
		snprintf(num, sizeof(num), "%u", devs[d]);
		int k = 0;
		for (int i = 0; i < argc; i++) {
			if (!strcmp(argv[i], "all") && i &&
			    !strcmp(argv[i - 1], "--device"))
				av[k++] = num;
			else if (!strcmp(argv[i], "--device=all"))
				av[k++] = "--device", av[k++] = num;
			else
				av[k++] = argv[i];
		}
		av[k] = NULL;
		bool json = false;
		for (int i = 0; i < argc; i++)
			json = json || !strcmp(argv[i], "--json");
		if (!json) /* JSON: one object per device */
			printf("%sdevice     %u\n", d ? "\n" : "", devs[d]);
		fflush(stdout);
		optind = 0; /* getopt starts over */
		int rc = msim_cmd_run(k, av);
		if (rc)
			return rc;
	}
	free(av);
	return 0;
}

int
msim_cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"policy", required_argument, NULL, 'p'},
		{"alloc-conf", required_argument, NULL, 'c'},
		{"cap", required_argument, NULL, 'C'},
		{"fraction", required_argument, NULL, 'F'},
		{"capacity", required_argument, NULL, 'K'},
		{"addresses", required_argument, NULL, 'A'},
		{"keep-going", no_argument, NULL, 'k'},
		{"transform", required_argument, NULL, 'T'},
		{"requests-only", no_argument, NULL, 'R'},
		{"calibration", required_argument, NULL, 'L'},
		{"recording", no_argument, NULL, 'E'},
		{"device", required_argument, NULL, 'D'},
		{"strict", no_argument, NULL, 'Z'},
		{"lenient", no_argument, NULL, 'N'},
		{"db", required_argument, NULL, 'd'},
		{"plot", required_argument, NULL, 'P'},
		{"segments", required_argument, NULL, 'S'},
		{"json", no_argument, NULL, 'j'},
		{"explain", no_argument, NULL, 'X'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	run_opts_t o = {.policy = "pytorch", .conf = "", .addresses = "model"};
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "p:c:d:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': o.policy = optarg; break;
		case 'c': o.conf = optarg; break;
		case 'C': o.cap = msim_cli_bytes("--cap", optarg); break;
		case 'K':
			o.capacity = msim_cli_bytes("--capacity", optarg);
			if (!o.capacity)
				msim_cli_die("--capacity: 0 bytes; give the "
					     "device's memory (e.g. 80GiB)");
			break;
		case 'F':
			o.fraction = strtod(optarg, &end);
			if (*end || !(o.fraction > 0 && o.fraction <= 1))
				msim_cli_die("--fraction: '%s' is not in (0, 1]", optarg);
			break;
		case 'A':
			if (strcmp(optarg, "model") && strcmp(optarg, "trace"))
				msim_cli_die("--addresses: '%s' is not model or trace",
				    optarg);
			o.addresses = optarg;
			break;
		case 'k': o.keep_going = 1; break;
		case 'T': o.transform = optarg; break;
		case 'R': o.requests_only = 1; break;
		case 'L': o.calibration = optarg; break;
		case 'E': o.recording = 1; o.addresses = "trace"; break;
		case 'Z': o.strict = 1; break;
		case 'N': o.lenient = 1; break;
		case 'D':
			if (!strcmp(optarg, "all"))
				return run_each_device(argc, argv);
			o.device1 = (unsigned)msim_cli_uint("--device",
					optarg, 0, 1023) + 1;
			break;
		case 'd': o.db = optarg; break;
		case 'P': o.plot = optarg; break;
		case 'S': o.segments = optarg; break;
		case 'j': o.json = 1; break;
		case 'X': o.explain = 1; break;
		case 'q': o.quiet = 1; break;
		case 'h': usage_run(stdout); return 0;
		default: usage_run(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage_run(stderr);
		return 2;
	}
	if (o.plot && !o.db)
		msim_cli_die("--plot needs --db (the curve is drawn from the database)");
	if (o.cap && o.fraction)
		msim_cli_die("give --cap or --fraction, not both");
	const char *path = argv[optind];
	/* Outputs never overwrite an input. */
	msim_cli_not_input("--segments", o.segments, path, "the input trace");
	msim_cli_not_input("--segments", o.segments, o.db, "the database");
	msim_cli_not_input("--segments", o.segments, o.calibration,
			   "the calibration file");
	msim_cli_not_input("--plot", o.plot, path, "the input trace");
	msim_cli_not_input("--plot", o.plot, o.db, "the database");
	msim_cli_not_input("--plot", o.plot, o.calibration,
			   "the calibration file");
	msim_cli_not_input("--db", o.db, path, "the input trace");
	char *mspec, *strategy;
	char why[1024];
	if (msim_input_describe(path, o.transform, &mspec, &strategy, why,
				sizeof(why)))
		msim_cli_die("%s%s", msim_model_spec_is(path) && !o.transform
			     ? "model spec: " : "", why);

	const msim_policy_ops_t *ops = msim_policy_find(o.policy);
	if (!ops)
		msim_cli_die("--policy: unknown policy '%s' (see `memsim policies`)",
		    o.policy);
	msim_params_t pv;
	if (msim_params_init(&pv, ops->params))
		msim_cli_die("out of memory");
	if (msim_params_parse(&pv, o.conf))
		msim_cli_die("--alloc-conf: %s", pv.errmsg);
	if (o.explain && (o.json || o.transform))
		msim_cli_die("--explain: not with --json or --transform (see "
			     "memsim explain --json)");
	if (!o.quiet)
		msim_cli_warn_settings(ops, &pv, o.cap || o.fraction > 0);
	char canon[1024];
	msim_params_canonical(&pv, canon, sizeof(canon));

	/* Open the database first: a bad database fails before the work. */
	msim_timemodel_t *tm = NULL;
	const char *calib = o.calibration ? o.calibration : "H200 (built in)";
	if (o.calibration
	    ? msim_timemodel_load(o.calibration, &tm, why, sizeof(why))
	    : msim_timemodel_h200(&tm))
		msim_cli_die("--calibration: %s", o.calibration ? why
							   : "out of memory");
	msim_db_t *db = NULL;
	if (o.db && msim_db_open(o.db, &db, why, sizeof(why)))
		msim_cli_die("%s", why);

	msim_input_t in;
	/* By default free_requested and free_completed rows apply apart;
	 * --recording adds the hidden empty_cache() calls and the recorded
	 * addresses. */
	msim_trace_options_t topt = {
		.deferred_frees = !o.requests_only || o.recording,
		.hidden_empty_cache = o.recording,
		.device1 = o.device1,
		.strict = o.strict,
		.lenient = o.lenient,
	};
	if (msim_input_open(&in, path, mspec, strategy, &topt, why,
			    sizeof(why)))
		msim_cli_die("%s", why);
	/* A first pass completes a partial history and reads the
	 * snapshot's allocator settings, which --recording applies. */
	if (in.trace && msim_trace_prescan(in.trace))
		msim_cli_die("%s", msim_trace_errmsg(in.trace));
	const char *snapconf = in.trace ? msim_trace_alloc_conf(in.trace)
					: NULL;
	char confnote[768] = "";
	if (o.recording && snapconf && *snapconf && *o.conf) {
		snprintf(confnote, sizeof(confnote), "--alloc-conf given: the "
			 "snapshot's settings \"%s\" are not applied",
			 snapconf);
	} else if (o.recording && snapconf && *snapconf) {
		msim_params_t sp;
		if (msim_params_init(&sp, ops->params))
			msim_cli_die("out of memory");
		if (msim_params_parse(&sp, snapconf)) {
			snprintf(confnote, sizeof(confnote), "the snapshot's "
				 "settings \"%s\" are not applied: %s",
				 snapconf, sp.errmsg);
			msim_params_clear(&sp);
		} else {
			msim_params_clear(&pv);
			pv = sp;
			msim_params_canonical(&pv, canon, sizeof(canon));
			snprintf(confnote, sizeof(confnote), "the snapshot's "
				 "allocator settings \"%s\"", snapconf);
		}
	}
	uint64_t capacity = o.capacity ? o.capacity : MSIM_H200_BYTES;
	/* The trace is read on a second thread while the engine replays. */
	msim_prefetch_t *pf;
	if (msim_prefetch_new(in.src, &pf))
		msim_cli_die("out of memory");
	msim_sim_config_t cfg = {
		.source = msim_prefetch_source(pf),
		.policy = ops,
		.params = &pv,
		/* The log only where it is read: memory stays with the
		 * live blocks however many device calls a run makes. */
		.device = {.capacity = capacity,
			   .log_events = o.db || o.segments || o.recording,
			   .timemodel = tm,
			   .use_hints = !strcmp(o.addresses, "trace")},
		.fraction = o.cap ? (double)o.cap / (double)capacity
				  : o.fraction,
		.keep_going = o.keep_going,
		.peak_blocks = o.db != NULL, /* for memsim plot --kind segments */
	};
	if (o.cap > capacity)
		msim_cli_die("--cap: %" PRIu64 " bytes is more than the device's %"
		    PRIu64, o.cap, capacity);
	msim_sim_t *sim;
	if (msim_sim_new(&cfg, &sim, why, sizeof(why)))
		msim_cli_die("--alloc-conf: %s", why);
	double t0 = msim_cli_now_ms();
	int rc = msim_sim_run(sim);
	msim_prefetch_destroy(pf); /* the reader is done with the input */
	if (rc) {
		const char *e = msim_sim_errmsg(sim);
		/* The engine names the request, the reader the file. */
		msim_cli_die("%s%s%s", strncmp(e, "request ", 8) ? "" : path,
			     strncmp(e, "request ", 8) ? "" : ": ", e);
	}
	double wall_ms = msim_cli_now_ms() - t0;

	msim_summary_t sum;
	msim_stats_t st;
	msim_sim_summary(sim, &sum);
	msim_sim_stats(sim, &st);
	uint64_t cap = msim_device_cap(msim_sim_device(sim));
	/* The hash of the whole file, the reader's when it read it all,
	 * else (an OOM stopped the run early) read again: the setting key of
	 * the run depends on it. */
	char hash[32];
	if (mspec) {
		msim_hash_t h;
		msim_hash_init(&h);
		msim_hash_update(&h, mspec, strlen(mspec));
		snprintf(hash, sizeof(hash), "%016" PRIx64,
			 msim_hash_final(&h));
	} else if (in.trace && msim_trace_ended(in.trace)) {
		snprintf(hash, sizeof(hash), "%016" PRIx64,
			 msim_trace_hash(in.trace));
	} else if (msim_file_hash(path, hash, why, sizeof(why))) {
		msim_cli_die("%s", why);
	}
	const char *tpath = mspec ? mspec : path;

	size_t nev;
	const msim_seg_event_t *ev = msim_device_events(msim_sim_device(sim),
							&nev);
	msim_devtime_t dt;
	msim_device_devtime(msim_sim_device(sim), &dt);
	msim_sim_meta_t meta;
	msim_sim_meta_fill(&meta, dt.us, calib, &sum);
	const char *dt_ms = meta.ms;
	const char *kv[32];
	msim_input_meta(&in, meta.kv, kv, 32);
	/* --recording of a snapshot: does the replay end in its state? */
	char snapstate[256] = "";
	const msim_snap_segment_t *segs;
	size_t nsegs = 0;
	if (o.recording && in.trace &&
	    msim_trace_segments(in.trace, &segs, &nsegs))
		msim_cli_die("out of memory");
	if (nsegs) {
		msim_snapcheck_t sc;
		if (msim_snapcheck(sim, segs, nsegs, &sc))
			msim_cli_die("out of memory");
		msim_snapcheck_format(&sc, snapstate, sizeof(snapstate));
		size_t k = 0;
		while (kv[k])
			k += 2;
		if (k + 2 < 32) {
			kv[k] = "snapshot_state";
			kv[k + 1] = snapstate;
			kv[k + 2] = NULL;
		}
	}
	/* A partial history: what was seeded, kept with the run. */
	char seeding[320] = "";
	msim_trace_seed_t sd = {0};
	if (in.trace)
		msim_trace_seeding(in.trace, &sd);
	if (sd.requests) {
		snprintf(seeding, sizeof(seeding), "%" PRIu64 " blocks, %"
			 PRIu64 " segments of %" PRIu64 " bytes; %s%s",
			 sd.from_frees + sd.from_snapshot, sd.segments,
			 sd.segment_bytes, sd.exact ? "exact" : "not exact: ",
			 sd.exact ? "" : sd.inexact);
		size_t k = 0;
		while (kv[k])
			k += 2;
		if (k + 2 < 32) {
			kv[k] = "seeded";
			kv[k + 1] = seeding;
			kv[k + 2] = NULL;
		}
	}
	int64_t run_id = -1;
	char dberr[2600] = ""; /* a storage error, told after the figures */
	if (db) {
		msim_run_info_t info = {
			.kind = "simulated", .trace_path = tpath,
			.trace_hash = hash, .trace_format = in.format,
			.strategy = strategy,
			.policy = ops->name, .params = canon, .cap_bytes = cap,
			.addresses = o.addresses, .wall_ms = wall_ms,
			.meta = kv,
			.capacity_bytes = capacity,
		};
		info.peak_blocks = msim_sim_peak_blocks(sim, &info.npeak_blocks);
		/* A setting is stored once: running it again replaces its
		 * results under the same run id. */
		int existed;
		if (msim_db_store_run_mode(db, &info, &sum, &st,
					   msim_sim_timeline(sim), ev, nev,
					   MSIM_DB_REPLACE, &run_id, &existed))
			snprintf(dberr, sizeof(dberr), "%s", msim_db_errmsg(db));
	}
	if (o.segments)
		write_segments(o.segments, msim_sim_device(sim));
	if (o.json) {
		printf("{\n  \"trace\": ");
		msim_cli_json_str(stdout, tpath);
		if (strategy) {
			printf(",\n  \"strategy\": ");
			msim_cli_json_str(stdout, strategy);
		}
		for (size_t i = 0; i < in.nmeta; i++)
			printf(",\n  \"%s\": %s", in.meta[i][0],
			       in.meta[i][1]);
		printf(",\n  \"trace_hash\": \"%s\",\n  \"policy\": ", hash);
		msim_cli_json_str(stdout, ops->name);
		printf(",\n  \"params\": ");
		msim_cli_json_str(stdout, canon);
		printf(",\n  \"cap_bytes\": %" PRIu64, cap);
		printf(",\n  \"requests\": %" PRIu64, sum.requests);
		msim_stats_foreach(&st, json_stat, stdout);
		printf(",\n  \"oom_request\": %" PRId64, sum.oom_request);
		printf(",\n  \"frag_at_peak\": %.6f", sum.frag_at_peak);
		printf(",\n  \"frag_mean\": %.6f", sum.frag_mean);
		printf(",\n  \"ext_frag_max\": %.6f", sum.ext_frag_max);
		printf(",\n  \"addr_same\": %" PRIu64 ",\n  \"addr_other\": %"
		       PRIu64, sum.addr_same, sum.addr_other);
		printf(",\n  \"modelled_device_ms\": %s", dt_ms);
		printf(",\n  \"wall_ms\": %.3f", wall_ms);
		if (*snapstate) {
			printf(",\n  \"snapshot_state\": ");
			msim_cli_json_str(stdout, snapstate);
		}
		if (*confnote) {
			printf(",\n  \"settings_note\": ");
			msim_cli_json_str(stdout, confnote);
		}
		if (in.trace)
			msim_cli_seed_json(in.trace, false);
		if (run_id >= 0)
			printf(",\n  \"run_id\": %" PRId64, run_id);
		printf("\n}\n");
	} else {
		print_table(tpath, ops->name, canon, cap, &sum, &st,
			    !strcmp(o.addresses, "trace"));
		if (strategy)
			printf("strategy   %s\n", strategy);
		for (size_t i = 0; i < in.nmeta; i++)
			printf("meta       %s %s\n", in.meta[i][0],
			       in.meta[i][1]);
		printf("time       %" PRIu64 " device allocs, %" PRIu64
			       " frees: %s ms modelled\n", dt.mallocs,
			       dt.frees, dt_ms);
		if (*confnote)
			printf("settings   %s\n", confnote);
		if (in.trace)
			msim_cli_seed_print(in.trace);
		if (*snapstate)
			printf("snapshot state: %s\n", snapstate);
		if (run_id >= 0)
			printf("stored     run %" PRId64 " in %s\n", run_id,
			       o.db);
	}
	/* The figures are out: a full disk loses the row, not the results. */
	if (*dberr) {
		fflush(stdout);
		msim_cli_die("%s", dberr);
	}
	if (o.plot) {
		char title[2048];
		snprintf(title, sizeof(title), "%s: %s %s%s%s", tpath,
			 ops->name, canon, strategy ? " " : "",
			 strategy ? strategy : "");
		msim_plot_req_t pr = {
			.kind = MSIM_PLOT_CURVE, .runs = &run_id, .nruns = 1,
			.out = o.plot, .title = title,
			.plots_dir = msim_cli_plots_dir(),
			.gnuplot = GNUPLOT_PATH,
		};
		if (msim_plot_draw(db, &pr, why, sizeof(why)))
			msim_cli_die("--plot: %s", why);
		if (!o.json)
			printf("plotted    %s\n", o.plot);
	}
	if (o.explain) {
		msim_explain_config_t ecfg = {
			.trace = path, .topt = topt, .policy = ops,
			.conf = o.conf, .capacity = capacity, .cap = o.cap,
			.fraction = o.fraction, .alternatives = true,
			.use_hints = !strcmp(o.addresses, "trace"),
		};
		msim_cli_explain(&ecfg);
	}
	msim_sim_destroy(sim);
	msim_input_close(&in);
	free(mspec);
	free(strategy);
	msim_db_close(db);
	msim_timemodel_destroy(tm);
	msim_params_clear(&pv);
	return 0;
}

