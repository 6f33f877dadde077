/*
 * memsim validate: replay a trace on a real GPU (raw cudaMalloc, a
 * cudaMallocAsync pool, or PyTorch's own allocator) and store the measured
 * figures beside the simulated ones; `--calibrate` measures the latencies
 * of the time model.
 */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/registry.h"
#include "cli/cli.h"
#include "sim/error.h"
#include "sim/metrics.h"
#include "sim/results.h"
#include "traces/trace.h"
#include "validate/validate.h"

#ifndef PKGDATA_DIR
#define PKGDATA_DIR ""
#endif
#ifndef SRC_VALIDATE_DIR
#define SRC_VALIDATE_DIR "validate"
#endif

static void
usage_validate(FILE *fp)
{
	fprintf(fp,
		"usage: memsim validate [OPTIONS] TRACE\n"
		"       memsim validate --calibrate OUT.csv\n"
		"\n"
		"Replays TRACE on a real GPU and prints (and stores with --db) "
		"the measured\n"
		"figures, to set beside a simulation of the same trace.\n"
		"\n"
		"modes (--mode):\n"
		"  raw     every request its own cudaMalloc/cudaFree; memory "
		"in use from\n"
		"          cudaMemGetInfo; call latencies (compare: policy "
		"naive)\n"
		"  async   cudaMallocAsync/cudaFreeAsync on a pool with a "
		"release threshold\n"
		"          (compare: policy cuda-async)\n"
		"  torch   PyTorch's caching allocator through "
		"validate/torch_replay.py,\n"
		"          under --alloc-conf and --cap (compare: policy "
		"pytorch)\n"
		"\n"
		"options:\n"
		"  -m, --mode MODE           raw, async or torch (default "
		"torch)\n"
		"  -c, --alloc-conf STR      PYTORCH_CUDA_ALLOC_CONF for torch "
		"mode\n"
		"      --cap BYTES           per-process cap (torch: "
		"set_per_process_memory_fraction)\n"
		"      --release-threshold BYTES\n"
		"                            async pool's release threshold "
		"(default: never release)\n"
		"      --python PATH         the python3 with PyTorch (default "
		"python3)\n"
		"  -d, --db FILE             store the measured run (kind "
		"'measured')\n"
		"      --json                print JSON\n"
		"      --calibrate OUT.csv   measure cudaMalloc/cudaFree/"
		"cudaMallocAsync latency\n"
		"                            by size, for `memsim run "
		"--calibration`\n"
		"  -h, --help                this help\n"
#ifndef HAVE_CUDA
		"\nThis memsim was built without CUDA: raw, async and "
		"--calibrate need\n`./configure --with-cuda[=/usr/local/cuda]`; "
		"torch mode needs only python3\nwith PyTorch.\n"
#endif
		);
}

static const char *
bridge_path(void)
{
	static char path[4096];
	const char *env = getenv("MEMSIM_VALIDATE_DIR");
	const char *dirs[] = {env ? env : "", PKGDATA_DIR "/validate",
			      SRC_VALIDATE_DIR};
	for (size_t i = 0; i < 3; i++) {
		if (!*dirs[i])
			continue;
		snprintf(path, sizeof(path), "%s/torch_replay.py", dirs[i]);
		FILE *fp = fopen(path, "r");
		if (fp) {
			fclose(fp);
			return path;
		}
	}
	return NULL;
}

static void
json_stat(const char *name, int64_t value, void *ctx)
{
	fprintf(ctx, ",\n  \"%s\": %" PRId64, name, value);
}

static void
no_cuda(const char *what)
{
#ifndef HAVE_CUDA
	msim_cli_die("%s needs CUDA: this memsim was built without it; "
		     "reconfigure with --with-cuda[=/usr/local/cuda] where "
		     "the CUDA toolkit is installed", what);
#else
	(void)what;
#endif
}

int
msim_cmd_validate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"mode", required_argument, NULL, 'm'},
		{"alloc-conf", required_argument, NULL, 'c'},
		{"cap", required_argument, NULL, 'C'},
		{"release-threshold", required_argument, NULL, 'T'},
		{"python", required_argument, NULL, 'P'},
		{"db", required_argument, NULL, 'd'},
		{"json", no_argument, NULL, 'j'},
		{"calibrate", required_argument, NULL, 'K'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *conf = "", *python = NULL, *dbpath = NULL, *calib = NULL;
	uint64_t cap = 0, threshold = UINT64_MAX;
	int mode = MSIM_VMODE_TORCH, json = 0, c;
	while ((c = msim_cli_getopt(argc, argv, "m:c:d:h", longopts)) != -1) {
		switch (c) {
		case 'm':
			if ((mode = msim_vmode_parse(optarg)) < 0)
				msim_cli_die("--mode: '%s' is not raw, async or "
					     "torch", optarg);
			break;
		case 'c': conf = optarg; break;
		case 'C': cap = msim_cli_bytes("--cap", optarg); break;
		case 'T':
			threshold = msim_cli_bytes("--release-threshold",
						   optarg);
			break;
		case 'P': python = optarg; break;
		case 'd': dbpath = optarg; break;
		case 'j': json = 1; break;
		case 'K': calib = optarg; break;
		case 'h': usage_validate(stdout); return 0;
		default: usage_validate(stderr); return 2;
		}
	}
	char why[1024];
	if (calib) {
		no_cuda("--calibrate");
#ifdef HAVE_CUDA
		if (msim_validate_calibrate(calib, why, sizeof(why)))
			msim_cli_die("--calibrate: %s", why);
		printf("calibration written to %s\n", calib);
#endif
		return 0;
	}
	if (optind != argc - 1) {
		usage_validate(stderr);
		return 2;
	}
	const char *path = argv[optind];
	if (mode != MSIM_VMODE_TORCH)
		no_cuda("--mode raw/async");

	/* The settings as the pytorch policy reads them: checked and made
	 * canonical, so measured and simulated runs pair up. */
	const msim_policy_ops_t *ops = msim_policy_find(
		mode == MSIM_VMODE_TORCH ? "pytorch"
		: mode == MSIM_VMODE_RAW ? "naive" : "cuda-async");
	char canon[1024] = "";
	if (mode == MSIM_VMODE_TORCH) {
		msim_params_t pv;
		if (msim_params_init(&pv, ops->params))
			msim_cli_die("out of memory");
		if (msim_params_parse(&pv, conf))
			msim_cli_die("--alloc-conf: %s", pv.errmsg);
		msim_params_canonical(&pv, canon, sizeof(canon));
		msim_params_clear(&pv);
	} else if (*conf) {
		msim_cli_die("--alloc-conf applies to torch mode only");
	}
	const char *bridge = NULL;
	if (mode == MSIM_VMODE_TORCH && !(bridge = bridge_path()))
		msim_cli_die("cannot find torch_replay.py (set "
			     "MEMSIM_VALIDATE_DIR)");

	msim_db_t *db = NULL;
	if (dbpath && msim_db_open(dbpath, &db, why, sizeof(why)))
		msim_cli_die("%s", why);
	msim_trace_t *t;
	if (msim_trace_open(path, NULL, &t, why, sizeof(why)))
		msim_cli_die("%s", why);
	msim_measured_t m;
	double t0 = msim_cli_now_ms();
	int rc;
	if (mode == MSIM_VMODE_TORCH)
		rc = msim_validate_torch(t, python, bridge, conf, cap, &m, why,
					 sizeof(why));
	else
#ifdef HAVE_CUDA
		rc = msim_validate_cuda(t, mode, cap, threshold, &m, why,
					sizeof(why));
#else
		rc = MSIM_ENOTSUP, (void)threshold;
#endif
	if (rc)
		msim_cli_die("%s", why);
	double wall_ms = msim_cli_now_ms() - t0;
	msim_stats_finish(&m.st);
	char hash[32], mus[32] = "", fus[32] = "";
	snprintf(hash, sizeof(hash), "%016" PRIx64, msim_trace_hash(t));
	if (m.nmalloc)
		snprintf(mus, sizeof(mus), "%.3f", m.malloc_us / m.nmalloc);
	if (m.nfree)
		snprintf(fus, sizeof(fus), "%.3f", m.free_us / m.nfree);
	const char *meta[] = {"mode", msim_vmode_name(mode), "device",
			      m.device, "versions", m.versions,
			      "malloc_us_mean", mus, "free_us_mean", fus, NULL};
	int64_t run_id = -1;
	if (db) {
		msim_summary_t sum = {.requests = m.requests,
				      .oom_request = m.oom_request};
		sum.frag_at_peak = msim_frag(m.st.allocated_bytes[0].peak,
					     m.st.reserved_bytes[0].peak);
		msim_run_info_t info = {
			.kind = "measured", .trace_path = path,
			.trace_hash = hash,
			.trace_format = msim_trace_format_name(t),
			.policy = ops ? ops->name : msim_vmode_name(mode),
			.params = canon, .cap_bytes = cap,
			.addresses = "device", .wall_ms = wall_ms, .meta = meta,
		};
		if (msim_db_store_run(db, &info, &sum, &m.st, NULL, m.events,
				      m.nevents, &run_id))
			msim_cli_die("%s", msim_db_errmsg(db));
	}
	if (json) {
		printf("{\n  \"trace\": ");
		msim_cli_json_str(stdout, path);
		printf(",\n  \"mode\": \"%s\",\n  \"device\": ",
		       msim_vmode_name(mode));
		msim_cli_json_str(stdout, m.device);
		printf(",\n  \"versions\": ");
		msim_cli_json_str(stdout, m.versions);
		printf(",\n  \"params\": ");
		msim_cli_json_str(stdout, canon);
		printf(",\n  \"cap_bytes\": %" PRIu64 ",\n  \"requests\": %"
		       PRIu64, cap, m.requests);
		msim_stats_foreach(&m.st, json_stat, stdout);
		printf(",\n  \"oom_request\": %" PRId64, m.oom_request);
		if (m.nmalloc)
			printf(",\n  \"malloc_us_mean\": %s", mus);
		if (m.nfree)
			printf(",\n  \"free_us_mean\": %s", fus);
		if (run_id >= 0)
			printf(",\n  \"run_id\": %" PRId64, run_id);
		printf("\n}\n");
	} else {
		printf("trace      %s\n", path);
		printf("measured   %s on %s (%s)\n", msim_vmode_name(mode),
		       m.device, m.versions);
		printf("requests   %" PRIu64 "%s\n", m.requests,
		       m.oom_request >= 0 ? " (stopped at an OOM)" : "");
		printf("reserved   peak %" PRId64 " bytes\n",
		       m.st.reserved_bytes[0].peak);
		printf("allocated  peak %" PRId64 " bytes\n",
		       m.st.allocated_bytes[0].peak);
		if (m.nmalloc)
			printf("latency    malloc %s us, free %s us (means)\n",
			       mus, *fus ? fus : "-");
		if (m.oom_request >= 0)
			printf("OOM        at request %" PRId64 "\n",
			       m.oom_request);
		if (run_id >= 0)
			printf("stored     run %" PRId64 " in %s\n", run_id,
			       dbpath);
	}
	msim_measured_clear(&m);
	msim_trace_close(t);
	msim_db_close(db);
	return 0;
}
