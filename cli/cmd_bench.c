/* memsim bench: the speed of the hot path.  The measurements are
 * lab/benchsuite.c's; here are the options and the printing. */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policies/registry.h"
#include "lab/benchsuite.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "sim/error.h"

#ifndef SRC_EXAMPLE
#define SRC_EXAMPLE "tests/data/traces/gpt2_varlen.csv"
#endif

static const msim_cli_opt_t bench_opts[] = {
	{'n', true, "requests", "N", "requests to replay (default 10000000)"},
	{'r', true, "runs", "R", "runs of each measurement (default 5)"},
	{'s', false, "sweep", NULL,
	 "also: a 60-setting sweep of TRACE (max_split_size_mb x\n"
	 "garbage_collection_threshold x roundup_power2_\n"
	 "divisions, 20 GiB cap) against one `memsim run` of it"},
	{'J', false, "jobs", "N",
	 "the sweep's workers (default 2); it also runs with one,\n"
	 "for the wall-time scaling of N workers (each round\n"
	 "both, in turns first; a sweep before the first round\n"
	 "is not timed)"},
	{'p', true, "policy", "NAME",
	 "policy (default " MSIM_POLICY_DEFAULT "; the minimal path compares\n"
	 "with " MSIM_POLICY_PYTORCH " and no --alloc-conf only)"},
	{'c', true, "alloc-conf", "STR", "its parameters"},
	{'f', false, "formats", NULL,
	 "instead: the read speed (requests/s) of TRACE written\n"
	 "in every format (temporary files in $TMPDIR or /tmp)"},
	{'j', false, "json", NULL, "print JSON"},
	MSIM_CLI_OPT_HELP,
	{0},
};

static const msim_cli_cmd_t bench_cmd = {
	"usage: memsim bench [OPTIONS] [TRACE [FILE...]]\n"
	"\n"
	"Reads TRACE once (timing the reader), then replays it through the "
	"engine and\n"
	"a policy until about N requests (timing the hot path: request -> "
	"policy ->\n"
	"metrics).  Prints requests per second and the peak resident memory.\n"
	"Beside it, the minimal path (an exact replay of pytorch's defaults "
	"for one\n"
	"stream with nothing else) on the same requests, and each FILE (a "
	"large trace,\n"
	"binary or CSV) end to end: `memsim run --json FILE` against the "
	"minimal path\n"
	"streaming FILE (a CSV by its own SIMD parser).  CPU seconds, medians "
	"of R\n"
	"runs taken in turns, and the ratios memsim / minimal.\n"
	"\n"
	"options:\n",
	bench_opts, 26, NULL, false,
};

static void
print_json(const msim_bench_suite_spec_t *s, const msim_bench_suite_t *b)
{
	const msim_bench_result_t *r = &b->r;
	printf("{\"trace\": ");
	msim_print_json_str(stdout, s->trace);
	printf(", \"policy\": \"%s\", \"requests\": %" PRIu64
	       ", \"replay_s\": %.6f, \"requests_per_s\": %.0f"
	       ", \"read_requests_per_s\": %.0f, \"peak_rss_kib\": %ld"
	       ", \"runs\": %" PRIu64 ", \"replay_cpu_s\": %.6f",
	       b->policy, r->requests, r->replay_s,
	       r->requests / r->replay_s, r->trace_requests / r->read_s,
	       r->peak_rss_kib, s->runs, b->replay_cpu_s);
	if (b->minimal)
		printf(", \"minimal\": {\"same\": true, \"requests\": %" PRIu64
		       ", \"replay_cpu_s\": %.6f, \"ratio\": %.3f}",
		       b->minimal_requests, b->minimal_cpu_s,
		       b->replay_cpu_s / b->minimal_cpu_s);
	else {
		printf(", \"minimal\": {\"same\": false, \"why\": ");
		msim_print_json_str(stdout, b->minimal_why);
		printf("}");
	}
	printf(", \"end_to_end\": [");
	for (size_t f = 0; f < s->nfiles; f++) {
		const msim_bench_file_t *bf = &b->files[f];
		printf("%s{\"file\": ", f ? ", " : "");
		msim_print_json_str(stdout, s->files[f]);
		printf(", \"memsim_run_cpu_s\": %.6f", bf->run_cpu_s);
		if (bf->same) {
			printf(", \"same\": true, \"requests\": %" PRIu64
			       ", \"minimal_cpu_s\": %.6f, \"ratio\": %.3f, "
			       "\"minimal_reserved_peak\": %" PRId64
			       ", \"minimal_allocated_peak\": %" PRId64,
			       bf->requests, bf->minimal_cpu_s,
			       bf->run_cpu_s / bf->minimal_cpu_s,
			       bf->st.reserved.peak, bf->st.allocated.peak);
		} else {
			printf(", \"same\": false, \"why\": ");
			msim_print_json_str(stdout, bf->why);
		}
		printf("}");
	}
	printf("]");
	if (s->sweep)
		printf(", \"sweep\": {\"settings\": 60, \"jobs\": %s"
		       ", \"sweep_cpu_s\": %.6f, \"run_cpu_s\": %.6f"
		       ", \"ratio\": %.2f, \"wall_s\": %.6f"
		       ", \"wall_one_job_s\": %.6f, \"scaling\": %.2f}",
		       s->jobs, b->sweep_cpu_s, b->run_cpu_s,
		       b->sweep_cpu_s / b->run_cpu_s, b->wall_jobs_s,
		       b->wall_one_s, b->wall_one_s / b->wall_jobs_s);
	printf(", \"reserved_bytes.all.peak\": %" PRId64
	       ", \"allocated_bytes.all.peak\": %" PRId64 "}\n",
	       r->peak_reserved, r->peak_allocated);
}

static void
print_text(const msim_bench_suite_spec_t *s, const msim_bench_suite_t *b)
{
	const msim_bench_result_t *r = &b->r;
	printf("trace     %s (%" PRIu64 " requests)\n", s->trace,
	       r->trace_requests);
	printf("read      %.3f s, %.2f M requests/s (trace reader)\n",
	       r->read_s, r->trace_requests / r->read_s / 1e6);
	printf("replay    %" PRIu64 " requests in %.3f s through %s\n",
	       r->requests, r->replay_s, b->policy);
	printf("rate      %.2f M requests/s\n",
	       r->requests / r->replay_s / 1e6);
	printf("peak RSS  %.1f MiB\n", r->peak_rss_kib / 1024.0);
	if (b->minimal)
		printf("minimal   same figures as %s (current and peak)\n",
		       b->policy);
	else
		printf("minimal   cannot compare: %s\n", b->minimal_why);
	printf("\nCPU s, medians of %" PRIu64 "%*s memsim   minimal  "
	       "memsim/minimal\n", s->runs, s->runs < 10 ? 22 : 21, "");
	printf("%-40s %8.3f", "replay in memory", b->replay_cpu_s);
	if (b->minimal)
		printf(" %9.3f %10.2f\n", b->minimal_cpu_s,
		       b->replay_cpu_s / b->minimal_cpu_s);
	else
		printf("         -          -\n");
	for (size_t f = 0; f < s->nfiles; f++) {
		const msim_bench_file_t *bf = &b->files[f];
		char what[48];
		const char *base = strrchr(s->files[f], '/');
		snprintf(what, sizeof(what), "run --json %s",
			 base ? base + 1 : s->files[f]);
		printf("%-40s %8.3f", what, bf->run_cpu_s);
		if (bf->same)
			printf(" %9.3f %10.2f\n", bf->minimal_cpu_s,
			       bf->run_cpu_s / bf->minimal_cpu_s);
		else
			printf("         -          -  (%s)\n", bf->why);
	}
	if (s->sweep)
		printf("\nsweep     60 settings (-j %s) %.3f CPU s, one "
		       "`memsim run` %.3f: %.1fx\n", s->jobs, b->sweep_cpu_s,
		       b->run_cpu_s, b->sweep_cpu_s / b->run_cpu_s);
	if (s->sweep && strcmp(s->jobs, "1"))
		printf("scaling   wall %.3f s with -j 1, %.3f s with "
		       "-j %s: %.2fx\n", b->wall_one_s, b->wall_jobs_s, s->jobs,
		       b->wall_one_s / b->wall_jobs_s);
}

int
msim_cmd_bench(int argc, char **argv)
{
	uint64_t n = 10000000;
	const char *policy = MSIM_POLICY_DEFAULT, *conf = "";
	uint64_t runs = 5;
	int json = 0, formats = 0, sweep = 0, c;
	const char *jobs = "2";
	while ((c = msim_cli_next(&bench_cmd, argc, argv)) != -1) {
		switch (c) {
		case 'n':
			n = msim_cli_uint("--requests", optarg, 1,
					  UINT64_C(1) << 40);
			break;
		case 'r':
			runs = msim_cli_uint("--runs", optarg, 1, 1000);
			break;
		case 's': sweep = 1; break;
		case 'J':
			msim_cli_uint("--jobs", optarg, 1, 4096);
			jobs = optarg;
			break;
		case 'p': policy = optarg; break;
		case 'c': conf = optarg; break;
		case 'j': json = 1; break;
		case 'f': formats = 1; break;
		}
	}
	if (formats)
		msim_cli_operands(&bench_cmd, argc, 0, 1);
	/* The example: installed, else (a build tree) the source tree's. */
	const char *path = optind < argc ? argv[optind]
					 : PKGDATA_DIR "/examples/gpt2_varlen.csv";
	if (optind == argc && access(path, R_OK) != 0)
		path = SRC_EXAMPLE;
	char why[1024];
	if (formats) {
		msim_bench_format_t fr[8];
		size_t nf;
		const char *dir = getenv("TMPDIR");
		if (msim_bench_formats(path, dir && *dir ? dir : "/tmp", fr, &nf,
				       why, sizeof(why)))
			msim_cli_die("%s", why);
		if (json)
			printf("{\"trace\": ");
		if (json)
			msim_print_json_str(stdout, path);
		else
			printf("trace     %s\nformat    file MiB    requests"
			       "    read s   M requests/s\n", path);
		for (size_t i = 0; i < nf; i++) {
			double rate = fr[i].requests / fr[i].read_s;
			if (json)
				printf(", \"%s\": {\"file_bytes\": %" PRIu64
				       ", \"requests\": %" PRIu64
				       ", \"read_s\": %.6f, \"requests_per_s\""
				       ": %.0f}", fr[i].format, fr[i].file_bytes,
				       fr[i].requests, fr[i].read_s, rate);
			else
				printf("%-9s %8.1f %11" PRIu64 " %9.3f %14.2f\n",
				       fr[i].format, fr[i].file_bytes / 1048576.0,
				       fr[i].requests, fr[i].read_s, rate / 1e6);
		}
		if (json)
			printf("}\n");
		return 0;
	}
	msim_bench_suite_spec_t spec = {
		.trace = path, .requests = n, .runs = runs, .policy = policy,
		.conf = conf, .files = (const char *const *)argv + optind + 1,
		.nfiles = optind < argc ? (size_t)(argc - optind - 1) : 0,
		.sweep = sweep, .jobs = jobs, .self = "/proc/self/exe",
	};
	msim_bench_suite_t r;
	if (msim_bench_suite_run(&spec, &r, why, sizeof(why)))
		msim_cli_die("%s", why);
	if (json)
		print_json(&spec, &r);
	else
		print_text(&spec, &r);
	msim_bench_suite_clear(&r);
	return 0;
}
