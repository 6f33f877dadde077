/* memsim bench: the speed of the hot path. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policies/registry.h"
#include "lab/bench.h"
#include "cli/cli.h"
#include "sim/error.h"

#ifndef SRC_EXAMPLE
#define SRC_EXAMPLE "tests/data/traces/gpt2_varlen.csv"
#endif

static void
usage_bench(FILE *fp)
{
	fprintf(fp,
		"usage: memsim bench [OPTIONS] [TRACE [FILE...]]\n"
		"\n"
		"Reads TRACE once (timing the reader), then replays it through "
		"the engine and\n"
		"a policy until about N requests (timing the hot path: request "
		"-> policy ->\n"
		"metrics).  Prints requests per second and the peak resident "
		"memory.\n"
		"Beside it, the minimal path (an exact replay of pytorch's "
		"defaults for one\n"
		"stream with nothing else) on the same requests, and each "
		"FILE (a large trace,\n"
		"binary or CSV) end to end: `memsim run --json FILE` against "
		"the minimal path\n"
		"streaming FILE (a CSV by its own SIMD parser).  CPU seconds, "
		"medians of R\n"
		"runs taken in turns, and the ratios memsim / minimal.\n"
		"\n"
		"options:\n"
		"  -n, --requests N        requests to replay (default "
		"10000000)\n"
		"  -r, --runs R            runs of each measurement (default 5)\n"
		"      --sweep             also: a 60-setting sweep of TRACE "
		"(max_split_size_mb x\n"
		"                          garbage_collection_threshold x "
		"roundup_power2_\n"
		"                          divisions, 20 GiB cap) against one "
		"`memsim run` of it\n"
		"      --jobs N            the sweep's workers (default 2); it also "
		"runs with one,\n"
		"                          for the wall-time scaling of N "
		"workers (each round\n"
		"                          both, in turns first; a sweep before "
		"the first round\n"
		"                          is not timed)\n"
		"  -p, --policy NAME       policy (default pytorch; the minimal "
		"path compares\n"
		"                          with pytorch and no --alloc-conf "
		"only)\n"
		"  -c, --alloc-conf STR    its parameters\n"
		"      --formats           instead: the read speed (requests/s) "
		"of TRACE written\n"
		"                          in every format (temporary files in "
		"$TMPDIR or /tmp)\n"
		"      --json              print JSON\n"
		"  -h, --help              this help\n");
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of n values (sorts them). */
static double
median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The figure named key ("reserved_bytes.all.peak") in JSON, or -1. */
static int64_t
json_figure(const char *json, const char *key)
{
	char pat[96];
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	const char *at = strstr(json, pat);
	return at ? strtoll(at + strlen(pat), NULL, 10) : -1;
}

/* Whether the figures `memsim run --json` printed are the minimal
 * path's. */
static bool
same_as_run(const char *json, const msim_minreplay_stats_t *st)
{
	return json_figure(json, "allocated_bytes.all.peak") ==
		       st->allocated.peak &&
	       json_figure(json, "reserved_bytes.all.peak") ==
		       st->reserved.peak &&
	       json_figure(json, "requested_bytes.all.peak") ==
		       st->requested.peak &&
	       json_figure(json, "inactive_split_bytes.all.peak") ==
		       st->inactive_split_bytes.peak &&
	       json_figure(json, "inactive_split.all.peak") ==
		       st->inactive_split.peak &&
	       json_figure(json, "segment.all.peak") == st->segment.peak;
}

/* memsim with args in a child (this very binary): its CPU seconds,
 * user and system, every thread and every worker it waited for.  What it
 * printed goes to *out (malloc'd) when out is not NULL. */
static double
bench_spawn(char **args, char **out, double *wall)
{
	fflush(stdout);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	FILE *fp = tmpfile();
	if (!fp)
		msim_cli_die("tmpfile: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		msim_cli_die("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(fileno(fp), STDOUT_FILENO);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0)
		msim_cli_die("wait: %s", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (wall)
		*wall = (double)(t1.tv_sec - t0.tv_sec) +
			(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		msim_cli_die("`memsim %s` failed (status %d)", args[1],
			     status);
	if (out) {
		long len = ftell(fp);
		char *text = malloc(len > 0 ? (size_t)len + 1 : 1);
		if (!text)
			msim_cli_die("out of memory");
		rewind(fp);
		size_t got = len > 0 ? fread(text, 1, (size_t)len, fp) : 0;
		text[got] = 0;
		free(*out);
		*out = text;
	}
	fclose(fp);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* `memsim run --json FILE` end to end. */
static double
bench_memsim_run(const char *file, const char *policy, const char *conf,
		 char **json_out)
{
	char *args[] = {"memsim", "run", "--json", "--policy",
		(char *)policy, "--alloc-conf", (char *)conf, (char *)file,
		NULL};
	return bench_spawn(args, json_out, NULL);
}

/*
 * The sweep of issue 16 over trace: max_split_size_mb (5) x
 * garbage_collection_threshold (3) x roundup_power2_divisions (4) under a
 * 20 GiB cap, 60 settings into a fresh database, with jobs workers; and
 * one `memsim run` of the trace under that cap.  CPU seconds of each,
 * and the wall seconds of the sweep with jobs workers and with one (how
 * the workers scale), the one and the other first in turns (round is
 * the round's number); round 0 is a warm-up, not timed.
 */
static void
bench_sweep(const char *trace, const char *jobs, uint64_t round,
	    double *sweep_cpu, double *run_cpu, double *wall_jobs,
	    double *wall_one)
{
	const char *dir = getenv("TMPDIR");
	char db[4096];
	snprintf(db, sizeof(db), "%s/memsim-bench-%ld.db",
		 dir && *dir ? dir : "/tmp", (long)getpid());
	remove(db);
	char *sargs[] = {"memsim", "sweep", "--quiet", "--jobs", (char *)jobs,
		"--db", db, "--cap", "20GiB",
		"--grid", "max_split_size_mb=64,128,256,512,1024",
		"--grid", "garbage_collection_threshold=0.5,0.7,0.9",
		"--grid", "roundup_power2_divisions=1,2,4,8",
		(char *)trace, NULL};
	double ignored;
	if (round == 0) {
		bench_spawn(sargs, NULL, &ignored);
		remove(db);
		return;
	}
	bool one_first = strcmp(jobs, "1") && round % 2 == 0;
	for (int k = 0; k < 2; k++) {
		if (k == one_first) {
			sargs[4] = (char *)jobs;
			*sweep_cpu = bench_spawn(sargs, NULL, wall_jobs);
		} else if (strcmp(jobs, "1")) {
			sargs[4] = "1";
			bench_spawn(sargs, NULL, wall_one);
		} else {
			continue;
		}
		remove(db);
	}
	if (!strcmp(jobs, "1"))
		*wall_one = *wall_jobs;
	char *rargs[] = {"memsim", "run", "--json", "--cap", "20GiB",
		(char *)trace, NULL};
	*run_cpu = bench_spawn(rargs, NULL, NULL);
}

int
msim_cmd_bench(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"requests", required_argument, NULL, 'n'},
		{"runs", required_argument, NULL, 'r'},
		{"sweep", no_argument, NULL, 's'},
		{"jobs", required_argument, NULL, 'J'},
		{"policy", required_argument, NULL, 'p'},
		{"alloc-conf", required_argument, NULL, 'c'},
		{"json", no_argument, NULL, 'j'},
		{"formats", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint64_t n = 10000000;
	const char *policy = MSIM_POLICY_DEFAULT, *conf = "";
	uint64_t runs = 5;
	int json = 0, formats = 0, sweep = 0, c;
	const char *jobs = "2";
	while ((c = msim_cli_getopt(argc, argv, "n:r:p:c:h", longopts)) != -1) {
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
		case 'h': usage_bench(stdout); return 0;
		default: usage_bench(stderr); return 2;
		}
	}
	if (formats && optind < argc - 1) {
		usage_bench(stderr);
		return 2;
	}
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
			msim_cli_json_str(stdout, path);
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
	const msim_policy_ops_t *ops = msim_policy_find(policy);
	if (!ops)
		msim_cli_die("--policy: unknown policy '%s'", policy);
	msim_params_t pv;
	if (msim_params_init(&pv, ops->params))
		msim_cli_die("out of memory");
	if (msim_params_parse(&pv, conf))
		msim_cli_die("--alloc-conf: %s", pv.errmsg);
	/* Measurements in turns: the medians of runs. */
	int nfiles = optind < argc ? argc - optind - 1 : 0;
	char **files = argv + optind + 1;
	bool defaults = !strcmp(ops->name, MSIM_POLICY_PYTORCH) && !*conf;
	bool minimal = defaults;
	char minwhy[1024] = "";
	msim_bench_same_t same;
	if (!minimal)
		snprintf(minwhy, sizeof(minwhy), "the minimal path models "
			 "pytorch with default parameters only");
	else if ((c = msim_bench_same(path, &same, minwhy, sizeof(minwhy)))) {
		if (c != MSIM_ENOTSUP)
			msim_cli_die("%s", minwhy);
		minimal = false;
	} else if (!same.same) {
		snprintf(minwhy, sizeof(minwhy), "%s: the minimal path's "
			 "figures differ from pytorch's", path);
		minimal = false;
	}
	double *v = calloc(runs * (6 + 2 * (size_t)nfiles) + 1, sizeof(*v));
	/* sweep CPU, run CPU, sweep wall with --jobs, sweep wall with one */
	double *sw = v + runs * (2 + 2 * (size_t)nfiles);
	bool *filemin = calloc((size_t)nfiles + 1, sizeof(*filemin));
	char (*filewhy)[1024] = calloc((size_t)nfiles + 1, sizeof(*filewhy));
	msim_minreplay_stats_t *filest = calloc((size_t)nfiles + 1,
						sizeof(*filest));
	uint64_t *filereq = calloc((size_t)nfiles + 1, sizeof(*filereq));
	char **runjson = calloc((size_t)nfiles + 1, sizeof(*runjson));
	if (!v || !filemin || !filewhy || !filest || !filereq || !runjson)
		msim_cli_die("out of memory");
	/* v[k * runs + i]: k = 0 memsim replay, 1 minimal replay, then
	 * memsim run and minimal stream of each FILE. */
	msim_bench_result_t r;
	uint64_t minreq = 0;
	for (int f = 0; f < nfiles; f++)
		filemin[f] = defaults; /* each FILE is judged apart */
	for (uint64_t i = 0; i < runs; i++) {
		if (msim_bench_run(path, n, ops, &pv, &r, why, sizeof(why)))
			msim_cli_die("%s", why);
		v[i] = r.replay_cpu_s;
		if (minimal && msim_bench_minimal_mem(path, n, &minreq,
						      &v[runs + i], why,
						      sizeof(why)))
			msim_cli_die("%s", why);
		for (int f = 0; f < nfiles; f++) {
			v[(2 + 2 * (size_t)f) * runs + i] =
				bench_memsim_run(files[f], ops->name, conf,
						 &runjson[f]);
			if (!filemin[f])
				continue;
			int rc = msim_bench_minimal_stream(
				files[f], &filereq[f],
				&v[(3 + 2 * (size_t)f) * runs + i], &filest[f],
				filewhy[f], sizeof(filewhy[f]));
			if (rc == MSIM_ENOTSUP)
				filemin[f] = false;
			else if (rc)
				msim_cli_die("%s", filewhy[f]);
			else if (!same_as_run(runjson[f], &filest[f])) {
				snprintf(filewhy[f], sizeof(filewhy[f]),
					 "%s: the minimal path's figures "
					 "differ from `memsim run`'s",
					 files[f]);
				filemin[f] = false;
			}
		}
		if (sweep && i == 0)
			bench_sweep(path, jobs, 0, NULL, NULL, NULL, NULL);
		if (sweep)
			bench_sweep(path, jobs, i + 1, &sw[i], &sw[runs + i],
				    &sw[2 * runs + i], &sw[3 * runs + i]);
	}
	double med[2], swmed[4] = {0, 0, 0, 0};
	for (int k = 0; k < 2; k++)
		med[k] = median(v + (size_t)k * runs, runs);
	if (sweep) {
		for (int k = 0; k < 4; k++)
			swmed[k] = median(sw + (size_t)k * runs, runs);
	}
	double read_rate = r.trace_requests / r.read_s;
	double rate = r.requests / r.replay_s;
	if (json) {
		printf("{\"trace\": ");
		msim_cli_json_str(stdout, path);
		printf(", \"policy\": \"%s\", \"requests\": %" PRIu64
		       ", \"replay_s\": %.6f, \"requests_per_s\": %.0f"
		       ", \"read_requests_per_s\": %.0f, \"peak_rss_kib\": %ld"
		       ", \"runs\": %" PRIu64 ", \"replay_cpu_s\": %.6f",
		       ops->name, r.requests, r.replay_s, rate, read_rate,
		       r.peak_rss_kib, runs, med[0]);
		if (minimal)
			printf(", \"minimal\": {\"same\": true, \"requests\": %"
			       PRIu64 ", \"replay_cpu_s\": %.6f, \"ratio\": "
			       "%.3f}", minreq, med[1], med[0] / med[1]);
		else {
			printf(", \"minimal\": {\"same\": false, \"why\": ");
			msim_cli_json_str(stdout, minwhy);
			printf("}");
		}
		printf(", \"end_to_end\": [");
		for (int f = 0; f < nfiles; f++) {
			double a = median(v + (2 + 2 * (size_t)f) * runs, runs);
			printf("%s{\"file\": ", f ? ", " : "");
			msim_cli_json_str(stdout, files[f]);
			printf(", \"memsim_run_cpu_s\": %.6f", a);
			if (filemin[f]) {
				double b = median(v + (3 + 2 * (size_t)f) *
						  runs, runs);
				printf(", \"same\": true, \"requests\": %" PRIu64
				       ", \"minimal_cpu_s\": %.6f, \"ratio\": "
				       "%.3f, \"minimal_reserved_peak\": %"
				       PRId64 ", \"minimal_allocated_peak\": %"
				       PRId64, filereq[f], b, a / b,
				       filest[f].reserved.peak,
				       filest[f].allocated.peak);
			} else {
				printf(", \"same\": false, \"why\": ");
				msim_cli_json_str(stdout, filewhy[f][0] ?
						  filewhy[f] : minwhy);
			}
			printf("}");
		}
		printf("]");
		if (sweep)
			printf(", \"sweep\": {\"settings\": 60, \"jobs\": %s"
			       ", \"sweep_cpu_s\": %.6f, \"run_cpu_s\": %.6f"
			       ", \"ratio\": %.2f, \"wall_s\": %.6f"
			       ", \"wall_one_job_s\": %.6f, \"scaling\": %.2f}",
			       jobs, swmed[0], swmed[1], swmed[0] / swmed[1],
			       swmed[2], swmed[3], swmed[3] / swmed[2]);
		printf(", \"reserved_bytes.all.peak\": %" PRId64
		       ", \"allocated_bytes.all.peak\": %" PRId64 "}\n",
		       r.peak_reserved, r.peak_allocated);
	} else {
		printf("trace     %s (%" PRIu64 " requests)\n", path,
		       r.trace_requests);
		printf("read      %.3f s, %.2f M requests/s (trace reader)\n",
		       r.read_s, read_rate / 1e6);
		printf("replay    %" PRIu64 " requests in %.3f s through %s\n",
		       r.requests, r.replay_s, ops->name);
		printf("rate      %.2f M requests/s\n", rate / 1e6);
		printf("peak RSS  %.1f MiB\n", r.peak_rss_kib / 1024.0);
		if (minimal)
			printf("minimal   same figures as %s (current and peak)"
			       "\n", ops->name);
		else
			printf("minimal   cannot compare: %s\n", minwhy);
		printf("\nCPU s, medians of %" PRIu64 "%*s memsim   minimal  "
		       "memsim/minimal\n", runs, runs < 10 ? 22 : 21, "");
		printf("%-40s %8.3f", "replay in memory", med[0]);
		if (minimal)
			printf(" %9.3f %10.2f\n", med[1], med[0] / med[1]);
		else
			printf("         -          -\n");
		for (int f = 0; f < nfiles; f++) {
			char what[48];
			const char *base = strrchr(files[f], '/');
			snprintf(what, sizeof(what), "run --json %s",
				 base ? base + 1 : files[f]);
			double a = median(v + (2 + 2 * (size_t)f) * runs, runs);
			printf("%-40s %8.3f", what, a);
			if (filemin[f]) {
				double b = median(v + (3 + 2 * (size_t)f) *
						  runs, runs);
				printf(" %9.3f %10.2f\n", b, a / b);
			} else {
				printf("         -          -  (%s)\n",
				       filewhy[f][0] ? filewhy[f] : minwhy);
			}
		}
		if (sweep)
			printf("\nsweep     60 settings (-j %s) %.3f CPU s, one "
			       "`memsim run` %.3f: %.1fx\n", jobs, swmed[0],
			       swmed[1], swmed[0] / swmed[1]);
		if (sweep && strcmp(jobs, "1"))
			printf("scaling   wall %.3f s with -j 1, %.3f s with "
			       "-j %s: %.2fx\n", swmed[3], swmed[2], jobs,
			       swmed[3] / swmed[2]);
	}
	free(v);
	free(filemin);
	free(filewhy);
	free(filest);
	free(filereq);
	for (int f = 0; f < nfiles; f++)
		free(runjson[f]);
	free(runjson);
	msim_params_clear(&pv);
	return 0;
}
