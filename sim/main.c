/*
 * memsim: the command line.  One binary, subcommands parsed with
 * getopt_long; the only file that reads argv, prints to stdout or calls
 * exit().  Errors are one line on stderr, "memsim: <what>: <why>", and a
 * non-zero status; an OOM of the simulated device is a result, not an
 * error.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_errno.h>

#include "plots/plot.h"
#include "policies/policy.h"
#include "sim/bench.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "sim/metrics.h"
#include "sim/results.h"
#include "sim/units.h"
#include "traces/trace.h"

#ifndef PLOTS_DIR
#define PLOTS_DIR ""
#endif
#ifndef SRC_PLOTS_DIR
#define SRC_PLOTS_DIR "plots"
#endif

static const char *prog = "memsim";

static void
die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_FAILURE);
}

static void
usage_main(FILE *fp)
{
	fprintf(fp,
		"usage: memsim COMMAND [OPTIONS]\n"
		"\n"
		"Simulates GPU memory allocators on allocation traces.\n"
		"\n"
		"commands:\n"
		"  run TRACE      replay a trace through a policy; print and "
		"store the figures\n"
		"  policies       list the policies and their parameters\n"
		"  bench [TRACE]  measure the simulator's speed (requests/s, "
		"peak memory)\n"
		"  help COMMAND   show a command's options\n"
		"\n"
		"`memsim COMMAND --help` shows a command's options; "
		"`memsim --version` the version.\n");
}

static void
usage_run(FILE *fp)
{
	fprintf(fp,
		"usage: memsim run [OPTIONS] TRACE\n"
		"\n"
		"Replays TRACE (a PyTorch device-trace CSV) through a policy "
		"and prints the\n"
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
		"      --keep-going        do not stop at the first OOM\n"
		"  -d, --db FILE           store the run in this SQLite "
		"database\n"
		"      --plot OUT          plot the fragmentation curve "
		"(.png, .svg, .pdf; needs --db)\n"
		"      --segments FILE     write the segment events as CSV "
		"(request,action,addr,size)\n"
		"      --json              print one JSON object instead of a "
		"table\n"
		"  -h, --help              this help\n",
		MSIM_H200_BYTES);
}

static void
usage_bench(FILE *fp)
{
	fprintf(fp,
		"usage: memsim bench [OPTIONS] [TRACE]\n"
		"\n"
		"Reads TRACE once (timing the reader), then replays it through "
		"the engine and\n"
		"a policy until about N requests (timing the hot path: request "
		"-> policy ->\n"
		"metrics).  Prints requests per second and the peak resident "
		"memory.\n"
		"\n"
		"options:\n"
		"  -n, --requests N        requests to replay (default "
		"10000000)\n"
		"  -p, --policy NAME       policy (default pytorch)\n"
		"  -c, --alloc-conf STR    its parameters\n"
		"      --json              print JSON\n"
		"  -h, --help              this help\n");
}

/* ------------------------------------------------------------------ */

static void
print_policies(void)
{
	for (const msim_policy_ops_t *const *p = msim_policy_list(); *p; p++) {
		printf("%s: %s\n", (*p)->name, (*p)->summary);
		for (const msim_param_spec_t *s = (*p)->params; s && s->name;
		     s++)
			printf("  %-36s default %-8s %s\n", s->name, s->def,
			       s->help);
	}
}

static uint64_t
parse_bytes_opt(const char *opt, const char *text)
{
	uint64_t v;
	if (msim_parse_bytes(text, &v))
		die("%s: '%s' is not a byte size (examples: 16GiB, 512MiB, "
		    "1000000)", opt, text);
	return v;
}

static void
json_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(fp, "\\%c", c);
		else if (c < 0x20)
			fprintf(fp, "\\u%04x", c);
		else
			fputc(c, fp);
	}
	fputc('"', fp);
}

static void
json_stat(const char *name, int64_t value, void *ctx)
{
	FILE *fp = ctx;
	fprintf(fp, ",\n  \"%s\": %" PRId64, name, value);
}

typedef struct run_opts_s {
	const char *policy, *conf, *db, *plot, *segments, *addresses;
	uint64_t cap, capacity;
	double fraction;
	int json, keep_going;
} run_opts_t;

static int
trace_next(void *ctx, msim_req_t *req_out)
{
	return msim_trace_next(ctx, req_out);
}

static const char *
trace_errmsg(void *ctx)
{
	return msim_trace_errmsg(ctx);
}

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
write_segments(const char *path, msim_device_t *dev)
{
	FILE *fp = fopen(path, "w");
	if (!fp)
		die("%s: %s", path, strerror(errno));
	size_t n;
	const msim_seg_event_t *ev = msim_device_events(dev, &n);
	fprintf(fp, "request,action,addr,size\n");
	for (size_t i = 0; i < n; i++)
		fprintf(fp, "%" PRIu64 ",%s,%" PRIu64 ",%" PRIu64 "\n",
			ev[i].request, msim_seg_action_name(ev[i].action),
			ev[i].addr, ev[i].size);
	if (fclose(fp))
		die("%s: %s", path, strerror(errno));
}

static void
print_table(const char *trace, const char *policy, const char *params,
	    uint64_t cap, const msim_summary_t *sum, const msim_stats_t *st)
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
	if (sum->ooms_expected || sum->ooms_unmatched)
		printf("recorded OOMs  %" PRIu64 " reproduced, %" PRIu64
		       " not\n", sum->ooms_expected, sum->ooms_unmatched);
}

static int
cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"policy", required_argument, NULL, 'p'},
		{"alloc-conf", required_argument, NULL, 'c'},
		{"cap", required_argument, NULL, 'C'},
		{"fraction", required_argument, NULL, 'F'},
		{"capacity", required_argument, NULL, 'K'},
		{"addresses", required_argument, NULL, 'A'},
		{"keep-going", no_argument, NULL, 'k'},
		{"db", required_argument, NULL, 'd'},
		{"plot", required_argument, NULL, 'P'},
		{"segments", required_argument, NULL, 'S'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	run_opts_t o = {.policy = "pytorch", .conf = "", .addresses = "model"};
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "p:c:d:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': o.policy = optarg; break;
		case 'c': o.conf = optarg; break;
		case 'C': o.cap = parse_bytes_opt("--cap", optarg); break;
		case 'K':
			o.capacity = parse_bytes_opt("--capacity", optarg);
			break;
		case 'F':
			o.fraction = strtod(optarg, &end);
			if (*end || !(o.fraction > 0 && o.fraction <= 1))
				die("--fraction: '%s' is not in (0, 1]", optarg);
			break;
		case 'A':
			if (strcmp(optarg, "model") && strcmp(optarg, "trace"))
				die("--addresses: '%s' is not model or trace",
				    optarg);
			o.addresses = optarg;
			break;
		case 'k': o.keep_going = 1; break;
		case 'd': o.db = optarg; break;
		case 'P': o.plot = optarg; break;
		case 'S': o.segments = optarg; break;
		case 'j': o.json = 1; break;
		case 'h': usage_run(stdout); return 0;
		default: usage_run(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage_run(stderr);
		return 2;
	}
	if (o.plot && !o.db)
		die("--plot needs --db (the curve is drawn from the database)");
	if (o.cap && o.fraction)
		die("give --cap or --fraction, not both");
	const char *path = argv[optind];

	const msim_policy_ops_t *ops = msim_policy_find(o.policy);
	if (!ops)
		die("--policy: unknown policy '%s' (see `memsim policies`)",
		    o.policy);
	msim_params_t pv;
	if (msim_params_init(&pv, ops->params))
		die("out of memory");
	if (msim_params_parse(&pv, o.conf))
		die("--alloc-conf: %s", pv.errmsg);
	char canon[1024];
	msim_params_canonical(&pv, canon, sizeof(canon));

	/* Open the database first: a bad database fails before the work. */
	char why[1024];
	msim_db_t *db = NULL;
	if (o.db && msim_db_open(o.db, &db, why, sizeof(why)))
		die("%s", why);

	msim_trace_t *t;
	if (msim_trace_open(path, NULL, &t, why, sizeof(why)))
		die("%s", why);
	uint64_t capacity = o.capacity ? o.capacity : MSIM_H200_BYTES;
	msim_sim_config_t cfg = {
		.source = {trace_next, trace_errmsg, t},
		.policy = ops,
		.params = &pv,
		.device = {.capacity = capacity, .log_events = 1,
			   .use_hints = !strcmp(o.addresses, "trace")},
		.fraction = o.cap ? (double)o.cap / (double)capacity
				  : o.fraction,
		.keep_going = o.keep_going,
	};
	if (o.cap > capacity)
		die("--cap: %" PRIu64 " bytes is more than the device's %"
		    PRIu64, o.cap, capacity);
	msim_sim_t *sim;
	if (msim_sim_new(&cfg, &sim, why, sizeof(why)))
		die("--alloc-conf: %s", why);
	double t0 = now_ms();
	if (msim_sim_run(sim))
		die("%s", msim_sim_errmsg(sim));
	double wall_ms = now_ms() - t0;

	msim_summary_t sum;
	msim_stats_t st;
	msim_sim_summary(sim, &sum);
	msim_sim_stats(sim, &st);
	uint64_t cap = msim_device_cap(msim_sim_device(sim));
	char hash[32];
	snprintf(hash, sizeof(hash), "%016" PRIx64, msim_trace_hash(t));

	int64_t run_id = -1;
	if (db) {
		size_t nev;
		const msim_seg_event_t *ev =
			msim_device_events(msim_sim_device(sim), &nev);
		msim_run_info_t info = {
			.kind = "simulated", .trace_path = path,
			.trace_hash = hash,
			.trace_format = msim_trace_format_name(t),
			.policy = ops->name, .params = canon, .cap_bytes = cap,
			.addresses = o.addresses, .wall_ms = wall_ms,
		};
		if (msim_db_store_run(db, &info, &sum, &st,
				      msim_sim_timeline(sim), ev, nev, &run_id))
			die("%s", msim_db_errmsg(db));
	}
	if (o.segments)
		write_segments(o.segments, msim_sim_device(sim));
	if (o.json) {
		printf("{\n  \"trace\": ");
		json_str(stdout, path);
		printf(",\n  \"trace_hash\": \"%s\",\n  \"policy\": ", hash);
		json_str(stdout, ops->name);
		printf(",\n  \"params\": ");
		json_str(stdout, canon);
		printf(",\n  \"cap_bytes\": %" PRIu64, cap);
		printf(",\n  \"requests\": %" PRIu64, sum.requests);
		msim_stats_foreach(&st, json_stat, stdout);
		printf(",\n  \"oom_request\": %" PRId64, sum.oom_request);
		printf(",\n  \"frag_at_peak\": %.6f", sum.frag_at_peak);
		printf(",\n  \"frag_mean\": %.6f", sum.frag_mean);
		printf(",\n  \"ext_frag_max\": %.6f", sum.ext_frag_max);
		printf(",\n  \"wall_ms\": %.3f", wall_ms);
		if (run_id >= 0)
			printf(",\n  \"run_id\": %" PRId64, run_id);
		printf("\n}\n");
	} else {
		print_table(path, ops->name, canon, cap, &sum, &st);
		if (run_id >= 0)
			printf("stored     run %" PRId64 " in %s\n", run_id,
			       o.db);
	}
	if (o.plot) {
		const char *dirs[] = {PLOTS_DIR, SRC_PLOTS_DIR, NULL};
		char title[2048];
		snprintf(title, sizeof(title), "%s: %s %s", path, ops->name,
			 canon);
		if (msim_plot_curve(db, run_id, msim_plot_dir(dirs),
				    GNUPLOT_PATH, o.plot, title, why,
				    sizeof(why)))
			die("--plot: %s", why);
		if (!o.json)
			printf("plotted    %s\n", o.plot);
	}
	msim_sim_destroy(sim);
	msim_trace_close(t);
	msim_db_close(db);
	msim_params_clear(&pv);
	return 0;
}

static int
cmd_bench(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"requests", required_argument, NULL, 'n'},
		{"policy", required_argument, NULL, 'p'},
		{"alloc-conf", required_argument, NULL, 'c'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint64_t n = 10000000;
	const char *policy = "pytorch", *conf = "";
	int json = 0, c;
	char *end;
	while ((c = getopt_long(argc, argv, "n:p:c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			n = strtoull(optarg, &end, 10);
			if (*end || n == 0)
				die("--requests: '%s' is not a positive number",
				    optarg);
			break;
		case 'p': policy = optarg; break;
		case 'c': conf = optarg; break;
		case 'j': json = 1; break;
		case 'h': usage_bench(stdout); return 0;
		default: usage_bench(stderr); return 2;
		}
	}
	if (optind < argc - 1) {
		usage_bench(stderr);
		return 2;
	}
	const char *path = optind < argc ? argv[optind]
					 : PKGDATA_DIR "/examples/gpt2_varlen.csv";
	const msim_policy_ops_t *ops = msim_policy_find(policy);
	if (!ops)
		die("--policy: unknown policy '%s'", policy);
	msim_params_t pv;
	if (msim_params_init(&pv, ops->params))
		die("out of memory");
	if (msim_params_parse(&pv, conf))
		die("--alloc-conf: %s", pv.errmsg);
	msim_bench_result_t r;
	char why[1024];
	if (msim_bench_run(path, n, ops, &pv, &r, why, sizeof(why)))
		die("%s", why);
	double read_rate = r.trace_requests / r.read_s;
	double rate = r.requests / r.replay_s;
	if (json) {
		printf("{\"trace\": ");
		json_str(stdout, path);
		printf(", \"policy\": \"%s\", \"requests\": %" PRIu64
		       ", \"replay_s\": %.6f, \"requests_per_s\": %.0f"
		       ", \"read_requests_per_s\": %.0f, \"peak_rss_kib\": %ld}\n",
		       ops->name, r.requests, r.replay_s, rate, read_rate,
		       r.peak_rss_kib);
	} else {
		printf("trace     %s (%" PRIu64 " requests)\n", path,
		       r.trace_requests);
		printf("read      %.3f s, %.2f M requests/s (CSV reader)\n",
		       r.read_s, read_rate / 1e6);
		printf("replay    %" PRIu64 " requests in %.3f s through %s\n",
		       r.requests, r.replay_s, ops->name);
		printf("rate      %.2f M requests/s\n", rate / 1e6);
		printf("peak RSS  %.1f MiB\n", r.peak_rss_kib / 1024.0);
	}
	msim_params_clear(&pv);
	return 0;
}

int
main(int argc, char **argv)
{
	gsl_set_error_handler_off();
	if (argc < 2) {
		usage_main(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("memsim %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage_main(stdout);
		return 0;
	}
	if (!strcmp(cmd, "help")) {
		const char *what = argc > 2 ? argv[2] : "";
		if (!strcmp(what, "run"))
			usage_run(stdout);
		else if (!strcmp(what, "bench"))
			usage_bench(stdout);
		else
			usage_main(stdout);
		return 0;
	}
	argv[1] = argv[0];
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "bench"))
		return cmd_bench(argc - 1, argv + 1);
	if (!strcmp(cmd, "policies")) {
		print_policies();
		return 0;
	}
	fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
	usage_main(stderr);
	return 2;
}
