/* memsim bench: the speed of the hot path. */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policies/registry.h"
#include "lab/bench.h"
#include "cli/cli.h"

#ifndef SRC_EXAMPLE
#define SRC_EXAMPLE "tests/data/traces/gpt2_varlen.csv"
#endif

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
		"      --formats           instead: the read speed (requests/s) "
		"of TRACE written\n"
		"                          in every format (temporary files in "
		"$TMPDIR or /tmp)\n"
		"      --json              print JSON\n"
		"  -h, --help              this help\n");
}

int
msim_cmd_bench(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"requests", required_argument, NULL, 'n'},
		{"policy", required_argument, NULL, 'p'},
		{"alloc-conf", required_argument, NULL, 'c'},
		{"json", no_argument, NULL, 'j'},
		{"formats", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint64_t n = 10000000;
	const char *policy = "pytorch", *conf = "";
	int json = 0, formats = 0, c;
	while ((c = msim_cli_getopt(argc, argv, "n:p:c:h", longopts)) != -1) {
		switch (c) {
		case 'n':
			n = msim_cli_uint("--requests", optarg, 1,
					  UINT64_C(1) << 40);
			break;
		case 'p': policy = optarg; break;
		case 'c': conf = optarg; break;
		case 'j': json = 1; break;
		case 'f': formats = 1; break;
		case 'h': usage_bench(stdout); return 0;
		default: usage_bench(stderr); return 2;
		}
	}
	if (optind < argc - 1) {
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
	msim_bench_result_t r;
	if (msim_bench_run(path, n, ops, &pv, &r, why, sizeof(why)))
		msim_cli_die("%s", why);
	double read_rate = r.trace_requests / r.read_s;
	double rate = r.requests / r.replay_s;
	if (json) {
		printf("{\"trace\": ");
		msim_cli_json_str(stdout, path);
		printf(", \"policy\": \"%s\", \"requests\": %" PRIu64
		       ", \"replay_s\": %.6f, \"requests_per_s\": %.0f"
		       ", \"read_requests_per_s\": %.0f, \"peak_rss_kib\": %ld"
		       ", \"reserved_bytes.all.peak\": %" PRId64
		       ", \"allocated_bytes.all.peak\": %" PRId64 "}\n",
		       ops->name, r.requests, r.replay_s, rate, read_rate,
		       r.peak_rss_kib, r.peak_reserved, r.peak_allocated);
	} else {
		printf("trace     %s (%" PRIu64 " requests)\n", path,
		       r.trace_requests);
		printf("read      %.3f s, %.2f M requests/s (trace reader)\n",
		       r.read_s, read_rate / 1e6);
		printf("replay    %" PRIu64 " requests in %.3f s through %s\n",
		       r.requests, r.replay_s, ops->name);
		printf("rate      %.2f M requests/s\n", rate / 1e6);
		printf("peak RSS  %.1f MiB\n", r.peak_rss_kib / 1024.0);
	}
	msim_params_clear(&pv);
	return 0;
}

