/* memsim run: replay a trace through a policy; store and plot (its
 * printing is lab/run.c's and lab/together.c's). */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "sim/timemodel.h"
#include "lab/explain.h"
#include "lab/figures.h"
#include "lab/job.h"
#include "lab/run.h"
#include "lab/together.h"
#include "policies/registry.h"

/* The H200's memory, as the help says it (sim/device.h). */
#define RUN_H200_TEXT "150109880320"
static_assert(MSIM_H200_BYTES == UINT64_C(150109880320),
	      "RUN_H200_TEXT is MSIM_H200_BYTES");

static const msim_cli_opt_t run_opts[] = {
	{'p', true, "policy", "NAME",
	 "policy (default pytorch; see `memsim policies`)"},
	{'c', true, "alloc-conf", "STR",
	 "parameters in PYTORCH_CUDA_ALLOC_CONF syntax,\n"
	 "e.g. \"max_split_size_mb:128,garbage_collection_threshold:0.6\""},
	{'C', false, "cap", "BYTES",
	 "per-process cap, as set_per_process_memory_fraction(\n"
	 "BYTES / capacity) (suffixes: 16GiB, 512MiB, 1.5GB)"},
	{'F', false, "fraction", "F",
	 "the same cap as a fraction of the capacity"},
	{'K', false, "capacity", "BYTES|NAME",
	 "device memory (default the H200's, " RUN_H200_TEXT "),\n"
	 "or a GPU or MIG profile: h200, a10g, rtx4090,\n"
	 "h200:1g.18gb, h100:3g.40gb ... (memsim devices)"},
	{'x', false, "context-bytes", "B",
	 "each process's CUDA context holds B\n"
	 "bytes of --capacity outside its allocator"},
	{'a', false, "absolute-time", NULL,
	 "several inputs: interleave by the recorded times, not\n"
	 "by the time since each trace's first request"},
	{'A', false, "addresses", "MODE",
	 "model: place segments like the CUDA 13 driver (default);\n"
	 "trace: at the trace's recorded segment addresses"},
	{'T', false, "transform", "SPEC",
	 "rescale an fp32 recording: dtype=bf16-amp|fp16-amp|bf16\n"
	 "(approximate; see docs/fidelity.md)"},
	{'k', false, "keep-going", NULL, "do not stop at the first OOM"},
	{'R', false, "requests-only", NULL,
	 "replay only alloc and free_completed rows (as\n"
	 "caching_allocator_alloc/delete would); by default a\n"
	 "free_requested row frees allocated bytes at once and\n"
	 "the block returns at its free_completed row"},
	{'E', false, "recording", NULL,
	 "reproduce the recording itself: free_requested applied,\n"
	 "hidden empty_cache() calls replayed, --addresses trace;\n"
	 "a snapshot's end state is checked against its segments"},
	{'W', false, "defaults", NULL,
	 "snapshots: not with their own allocator settings and\n"
	 "the capacity of their oom record (applied by default)"},
	{'D', false, "device", "NAME|N|all",
	 "a GPU of memsim devices: its capacity and context;\n"
	 "snapshots: N, the device_traces index to replay, or\n"
	 "all, each device with trace events in turn"},
	{'Z', false, "strict", NULL,
	 "refuse a partial history (frees of blocks the trace\n"
	 "never allocated) instead of seeding its start"},
	{'N', false, "lenient", NULL,
	 "skip entries of unknown actions (and count them)"},
	{'d', true, "db", "FILE", "store the run in this SQLite database"},
	{'P', false, "plot", "OUT",
	 "plot the fragmentation curve (.png, .svg, .pdf; needs --db)"},
	{'O', false, "snapshot-out", "FILE",
	 "write the simulated run as a PyTorch snapshot pickle\n"
	 "(its trace and end state) for memory_viz"},
	{'o', false, "snapshot-at", "end|peak",
	 "the state it holds: at the end (default), or\n"
	 "when reserved first peaked (the trace up to then)"},
	{'S', false, "segments", "FILE",
	 "write the segment events as CSV (request,action,addr,size)"},
	{'L', false, "calibration", "FILE",
	 "device latencies for the modelled device time\n"
	 "(default: the H200's, built in)"},
	{'j', false, "json", NULL, "print one JSON object instead of a table"},
	{'X', false, "explain", NULL,
	 "then where the memory goes (memsim explain)"},
	{'q', true, "quiet", NULL,
	 "no warnings about settings that cannot act"},
	MSIM_CLI_OPT_HELP,
	{0},
};

static const msim_cli_cmd_t run_cmd = {
	"usage: memsim run [OPTIONS] TRACE|MODEL...\n"
	"\n"
	"Replays TRACE (a PyTorch snapshot pickle, device-trace CSV, RMM log "
	"or memsim\n"
	"binary trace) or the trace generated for MODEL\n"
	"(\"model:arch=gpt2,batch=8,seq=1024,steps=3,dtype=bf16-amp\": the "
	"options of\n"
	"`memsim gen model` as key=value) through a policy and prints the\n"
	"figures of torch.cuda.memory_stats().  An out-of-memory is a result: "
	"it is\n"
	"reported with the index of the failing request and the exit status "
	"stays 0.\n"
	"\n"
	"Several inputs are several processes on one GPU: each through its "
	"own\n"
	"allocator, their requests interleaved by time, all sharing "
	"--capacity; a\n"
	"cudaMalloc fails when the GPU is full.  --policy, --alloc-conf, --cap "
	"and\n"
	"--fraction given once apply to every process; given once per input, "
	"the Nth\n"
	"to the Nth.  The peak of the sum and each process are reported.\n"
	"\n"
	"options:\n",
	run_opts, 26, NULL, false,
};

/* Options given per process (several inputs): at most this many. */
#define RUN_MAXPROC 64

typedef struct run_per_s {
	const char *v[RUN_MAXPROC];
	size_t n;
} run_per_t;

typedef struct run_opts_s {
	const char *policy, *conf, *db, *plot, *segments, *addresses;
	const char *calibration, *transform;
	uint64_t cap, capacity;
	const char *capacity_name; /* --capacity NAME, or NULL */
	uint64_t context;  /* --context-bytes */
	double fraction;
	/* Each --policy, --alloc-conf, --cap, --fraction as given. */
	run_per_t policies, confs, caps, fractions;
	int absolute;
	int json, keep_going, requests_only, explain, quiet;
	int recording;     /* --recording */
	int defaults;      /* --defaults */
	const char *snapshot_out; /* --snapshot-out */
	int snapshot_peak;        /* --snapshot-at peak */
	unsigned device1;  /* --device N: N + 1 */
	int all_devices;   /* --device all */
	msim_cli_gpu_t gpu; /* --device, --capacity, --context-bytes */
	int strict, lenient;
} run_opts_t;

/* Keeps a per-process option; returns it. */
static const char *
run_per(run_per_t *per, const char *value)
{
	if (per->n == RUN_MAXPROC)
		msim_cli_die("more than %d values of one option",
			     RUN_MAXPROC);
	per->v[per->n++] = value;
	return value;
}

/* Several inputs: per-process options given once or once per input;
 * what cannot apply to several processes refused. */
static void
run_parse_several(const run_opts_t *o, size_t n)
{
	if (n > RUN_MAXPROC)
		msim_cli_die("%zu inputs: at most %d processes on one GPU", n,
			     RUN_MAXPROC);
	const struct { const char *name; size_t n; } per[] = {
		{"--policy", o->policies.n}, {"--alloc-conf", o->confs.n},
		{"--cap", o->caps.n}, {"--fraction", o->fractions.n},
	};
	for (size_t i = 0; i < sizeof(per) / sizeof(per[0]); i++)
		if (per[i].n > 1 && per[i].n != n)
			msim_cli_die("%s given %zu times for %zu inputs: give "
				     "it once (every process) or once per "
				     "input", per[i].name, per[i].n, n);
	const struct { const char *name; bool on; } no[] = {
		{"--db", o->db != NULL}, {"--plot", o->plot != NULL},
		{"--segments", o->segments != NULL},
		{"--explain", o->explain != 0},
		{"--snapshot-out", o->snapshot_out != NULL},
	};
	if (o->caps.n && o->fractions.n)
		msim_cli_die("give --cap or --fraction, not both");
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (no[i].on)
			msim_cli_die("%s: one input at a time (several "
				     "inputs are processes on one GPU)",
				     no[i].name);
}

/* Reads the options into o.  Returns -1 to go on, else the exit status
 * (--help, a usage error). */
static int
run_parse(int argc, char **argv, run_opts_t *o)
{
	int c;
	while ((c = msim_cli_next(&run_cmd, argc, argv)) != -1) {
		switch (c) {
		case 'p': o->policy = run_per(&o->policies, optarg); break;
		case 'c': o->conf = run_per(&o->confs, optarg); break;
		case 'C':
			o->cap = msim_cli_bytes("--cap", optarg);
			run_per(&o->caps, optarg);
			break;
		case 'K': msim_cli_gpu_capacity(&o->gpu, optarg); break;
		case 'a': o->absolute = 1; break;
		case 'x': msim_cli_gpu_context(&o->gpu, optarg); break;
		case 'F':
			o->fraction = msim_cli_fraction(optarg);
			run_per(&o->fractions, optarg);
			break;
		case 'A': o->addresses = msim_cli_addresses(optarg); break;
		case 'k': o->keep_going = 1; break;
		case 'T': o->transform = optarg; break;
		case 'R': o->requests_only = 1; break;
		case 'L': o->calibration = optarg; break;
		case 'E': o->recording = 1; o->addresses = "trace"; break;
		case 'W': o->defaults = 1; break;
		case 'O': o->snapshot_out = optarg; break;
		case 'o':
			if (strcmp(optarg, "end") && strcmp(optarg, "peak"))
				msim_cli_die("--snapshot-at: '%s' is not end or "
					     "peak", optarg);
			o->snapshot_peak = !strcmp(optarg, "peak");
			break;
		case 'Z': o->strict = 1; break;
		case 'N': o->lenient = 1; break;
		case 'D':
			o->all_devices = !strcmp(optarg, "all");
			if (!o->all_devices)
				msim_cli_gpu_device(&o->gpu, optarg, true);
			break;
		case 'd': o->db = optarg; break;
		case 'P': o->plot = optarg; break;
		case 'S': o->segments = optarg; break;
		case 'j': o->json = 1; break;
		case 'X': o->explain = 1; break;
		case 'q': o->quiet = 1; break;
		}
	}
	msim_cli_operands(&run_cmd, argc, 1, INT_MAX);
	msim_cli_gpu_done(&o->gpu);
	o->capacity = o->gpu.capacity;
	o->context = o->gpu.context;
	o->capacity_name = o->gpu.cap_name ? o->gpu.cap_name : o->gpu.name;
	o->device1 = o->gpu.device1;
	/* Outputs never overwrite an input. */
	const struct { const char *opt, *path; } outs[] = {
		{"--segments", o->segments}, {"--plot", o->plot},
		{"--db", o->db}, {"--snapshot-out", o->snapshot_out},
	};
	for (size_t k = 0; k < sizeof(outs) / sizeof(outs[0]); k++) {
		const char *opt = outs[k].opt, *out = outs[k].path;
		for (int i = optind; i < argc; i++)
			msim_cli_not_input(opt, out, argv[i], i == optind
					   ? "the input trace"
					   : "an input trace");
		if (out != o->db)
			msim_cli_not_input(opt, out, o->db, "the database");
		msim_cli_not_input(opt, out, o->calibration,
				   "the calibration file");
		msim_cli_output(opt, out);
	}
	if (optind < argc - 1)
		run_parse_several(o, (size_t)(argc - optind));
	if (o->snapshot_peak && !o->snapshot_out)
		msim_cli_die("--snapshot-at: needs --snapshot-out");
	if (o->plot && !o->db)
		msim_cli_die("--plot needs --db (the curve is drawn from the "
			     "database)");
	if (o->cap && o->fraction)
		msim_cli_die("give --cap or --fraction, not both");
	if (o->explain && (o->json || o->transform))
		msim_cli_die("--explain: not with --json or --transform (see "
			     "memsim explain --json)");
	return -1;
}

/* Settings given that cannot act, on stderr (the job reports a bad
 * policy or parameter itself). */
static void
run_warn_one(const run_opts_t *o, const char *policy, const char *conf,
	     bool capped)
{
	char warn[4][256];
	size_t n = o->quiet ? 0
		   : msim_run_warnings(policy, conf, capped, warn, 4);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "memsim: warning: %s\n", warn[i]);
}

/* The figures of lab/figures.h, as the public API hands them out. */
static void
print_json(msim_job_t *job, int64_t run_id)
{
	msim_figs_t f = {0};
	if (msim_figs_job(&f, job) ||
	    (run_id >= 0 && msim_figs_int(&f, "run_id", run_id)))
		msim_cli_die("out of memory");
	printf("{");
	msim_print_json_figs(&f, true);
	printf("\n}\n");
	msim_figs_clear(&f);
}

/* The setting of process i of several: per-process options given once
 * apply to all. */
static const char *
run_pick(const run_per_t *per, size_t i, const char *dflt)
{
	return per->n == 0 ? dflt : per->v[per->n == 1 ? 0 : i];
}

/* Several inputs: processes on one GPU. */
static int
run_together(const run_opts_t *o, char **inputs, size_t n,
	     const msim_timemodel_t *tm)
{
	msim_job_spec_t *specs = calloc(n, sizeof(*specs));
	if (!specs)
		msim_cli_die("out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *cap = run_pick(&o->caps, i, NULL);
		const char *frac = run_pick(&o->fractions, i, NULL);
		/* Settings that cannot act, once per distinct setting. */
		if (i == 0 || o->policies.n > 1 || o->confs.n > 1 ||
		    o->caps.n > 1 || o->fractions.n > 1)
			run_warn_one(o, run_pick(&o->policies, i, MSIM_POLICY_DEFAULT),
				     run_pick(&o->confs, i, ""),
				     cap || frac);
		specs[i] = (msim_job_spec_t){
			.trace = inputs[i], .transform = o->transform,
			.policy = run_pick(&o->policies, i, MSIM_POLICY_DEFAULT),
			.conf = run_pick(&o->confs, i, ""),
			.cap = cap ? msim_cli_bytes("--cap", cap) : 0,
			.fraction = frac ? msim_cli_fraction(frac) : 0,
			.addresses = o->addresses,
			.requests_only = o->requests_only,
			.recording = o->recording, .defaults = o->defaults,
			.policy_default = o->policies.n == 0,
			.device1 = o->device1,
			.strict = o->strict, .lenient = o->lenient,
			.timemodel = tm, .calibration = o->calibration,
		};
	}
	msim_together_t *t;
	msim_job_err_t err;
	size_t bad;
	char who[64];
	if (msim_together_open(specs, n, o->capacity, o->context, o->absolute,
			       o->keep_going, &t, &bad, &err) ||
	    msim_together_run(t, &bad, &err)) {
		snprintf(who, sizeof(who), "(process %zu)", bad + 1);
		if (err.part == MSIM_JOB_EPOLICY || err.part == MSIM_JOB_ECAP)
			msim_cli_die("%s %s: %s", err.part == MSIM_JOB_ECAP
				     ? "--cap" : "--policy", who, err.msg);
		if (err.part == MSIM_JOB_EPARAMS)
			msim_cli_die("--alloc-conf %s: %s", who, err.msg);
		msim_cli_die("%s", err.msg);
	}
	if (o->json && msim_together_json(t, o->context, o->capacity_name,
					  o->absolute))
		msim_cli_die("out of memory");
	else if (!o->json)
		msim_together_print(t, o->context, o->capacity_name,
				    o->absolute);
	msim_together_destroy(t);
	free(specs);
	return 0;
}

/* The run of the inputs argv[optind...] under o, one device of them. */
static int
run_inputs(run_opts_t *o, int argc, char **argv)
{
	if (optind == argc - 1)
		run_warn_one(o, o->policy, o->conf,
			     o->cap || o->fraction > 0);
	char why[1024];
	/* Open the calibration and the database first: a bad one fails
	 * before the work. */
	msim_timemodel_t *tm = NULL;
	if (o->calibration &&
	    msim_timemodel_load(o->calibration, &tm, why, sizeof(why)))
		msim_cli_die("--calibration: %s", why);
	if (optind < argc - 1) {
		int rc2 = run_together(o, argv + optind,
				       (size_t)(argc - optind), tm);
		msim_timemodel_destroy(tm);
		return rc2;
	}
	msim_run_req_t req = {
		.spec = {
			.trace = argv[optind], .transform = o->transform,
			.policy = o->policy, .conf = o->conf, .cap = o->cap,
			.fraction = o->fraction, .capacity = o->capacity,
			.context = o->context, /* on a GPU of its own */
			.addresses = o->addresses,
			.requests_only = o->requests_only,
			.recording = o->recording, .defaults = o->defaults,
			.policy_default = o->policies.n == 0,
			.device1 = o->device1,
			.strict = o->strict, .lenient = o->lenient,
			.keep_going = o->keep_going, .prefetch = true,
			.timemodel = tm, .calibration = o->calibration,
		},
		.db = o->db, .segments = o->segments != NULL,
		.snapshot = o->snapshot_out != NULL,
		.snapshot_peak = o->snapshot_peak,
	};
	msim_run_t run;
	msim_job_err_t err;
	if (msim_run_exec(&req, &run, &err))
		/* The engine names the request, the trace is named here. */
		msim_cli_job_die(&err, err.part == MSIM_JOB_ERUN &&
				 !strncmp(err.msg, "request ", 8)
				 ? req.spec.trace : NULL);
	if (o->segments && msim_run_segments(&run, o->segments, why,
					    sizeof(why)))
		msim_cli_die("%s", why);
	if (o->snapshot_out && msim_run_snapshot(&run, o->snapshot_out, why,
						sizeof(why)))
		msim_cli_die("--snapshot-out: %s", why);
	if (o->json)
		print_json(run.job, run.run_id);
	else
		msim_run_print(msim_job_result(run.job), msim_job_trace(run.job),
			   run.run_id, o->db);
	/* The figures are out: a full disk loses the row, not the results. */
	if (run.store_err.part) {
		fflush(stdout);
		msim_cli_job_die(&run.store_err, NULL);
	}
	if (o->plot) {
		if (msim_run_plot(&run, o->plot, msim_cli_plots_dir(),
				  GNUPLOT_PATH, why, sizeof(why)))
			msim_cli_die("--plot: %s", why);
		if (!o->json)
			printf("plotted    %s\n", o->plot);
	}
	if (o->explain) {
		/* The same setting, replayed as this run was. */
		msim_explain_config_t ecfg = {.spec = req.spec,
					      .alternatives = true,
					      .context_bytes = o->context};
		ecfg.spec.prefetch = false;
		msim_cli_explain(&ecfg);
	}
	msim_run_clear(&run);
	msim_timemodel_destroy(tm);
	return 0;
}

/* --device all: the run once per device with trace events, as
 * --device N. */
static int
run_each_device(run_opts_t *o, int argc, char **argv)
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
	if (o->snapshot_out)
		msim_cli_die("--snapshot-out: one device at a time "
			     "(--device N)");
	for (size_t d = 0; d < n && d < 256; d++) {
		if (!o->json) /* JSON: one object per device */
			printf("%sdevice     %u\n", d ? "\n" : "", devs[d]);
		fflush(stdout);
		o->device1 = devs[d] + 1;
		int rc = run_inputs(o, argc, argv);
		if (rc)
			return rc;
	}
	return 0;
}

int
msim_cmd_run(int argc, char **argv)
{
	run_opts_t o = {.policy = MSIM_POLICY_DEFAULT, .conf = "", .addresses = "model"};
	int rc = run_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	return o.all_devices ? run_each_device(&o, argc, argv)
			     : run_inputs(&o, argc, argv);
}
