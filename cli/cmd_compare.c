/*
 * memsim compare: one trace through several policies, one table and one
 * overlaid plot of peak reserved bytes, fragmentation, device calls and
 * modelled allocator time.
 *
 * Each policy's run is the job `memsim run` makes of the same setting
 * (lab/job.h): the same input, trace options and time model
 * (msim_timemodel_events: each cudaMalloc / map and cudaFree / unmap a
 * policy makes costs the calibration's median latency for its size), and
 * with --db the same stored row under the same setting key.  The runs
 * and the table are lab/compare.c's; here are the options and the plot.
 */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "lab/compare.h"
#include "policies/registry.h"
#include "sim/error.h"
#include "sim/device.h"

#define CMP_MAX 32

static const msim_cli_opt_t cmp_opts[] = {
	{'p', true, "policies", "A,B,...",
	 "policies to compare, in this order"},
	{'c', true, "alloc-conf", "NAME=CONF",
	 "parameters of policy NAME, e.g.\n" MSIM_POLICY_PYTORCH "=max_split_size_mb:128 (repeatable)"},
	{'C', false, "cap", "BYTES",
	 "per-process cap (suffixes: 16GiB, 512MiB, 1.5GB)"},
	{'F', false, "fraction", "F",
	 "the same cap as a fraction of the capacity"},
	{'K', false, "capacity", "BYTES|NAME",
	 "device memory (default the H200's)"},
	{'D', false, "device", "NAME", "a GPU of memsim devices: its capacity "
	 "and context"},
	{'X', false, "context-bytes", "B", "CUDA context and libraries, off "
	 "the capacity\n(default --device's, else 0)"},
	{'j', false, "json", NULL, "one JSON object (fields in "
	 "memsim-compare(1))"},
	{'L', false, "calibration", "CSV",
	 "driver latencies (`memsim validate --calibrate`;\n"
	 "default: the H200's, built in)"},
	{'W', false, "defaults", NULL,
	 "snapshots: not with their own settings and the\n"
	 "capacity of their oom record (applied by default)"},
	{'d', true, "db", "FILE", "store every run in this SQLite database"},
	{'P', false, "plot", "OUT", "overlaid plot (.png, .svg, .pdf)"},
	MSIM_CLI_OPT_HELP,
	{0},
};

static const msim_cli_cmd_t cmp_cmd = {
	"usage: memsim compare [OPTIONS] TRACE|MODEL\n"
	"\n"
	"Replays TRACE (or the trace generated for a MODEL spec, as `memsim "
	"run`)\nthrough several policies (default: all of `memsim policies`) "
	"and prints one\nrow per policy: peak reserved and allocated bytes, "
	"fragmentation\n(1 - allocated/reserved at the peaks, its mean over "
	"the trace, and the\nlargest external 1 - largest free block / free "
	"bytes), driver calls that\nreserve or release memory, and the "
	"modelled time of those calls (as\n`memsim run` models it: H200 "
	"latencies by size).  Each run is the one\n`memsim run` makes of the "
	"same setting.\n"
	"\n"
	"options:\n",
	cmp_opts, 27, NULL, false,
};

/* What the options ask for. */
typedef struct cmp_opts_s {
	const char *list, *db, *plot, *calibration;
	const char *confs[CMP_MAX][2];
	size_t nconfs;
	uint64_t cap;
	double fraction;
	bool defaults;     /* --defaults */
	bool json;         /* --json */
	msim_cli_gpu_t gpu; /* --device, --capacity, --context-bytes */
} cmp_opts_t;

/* Reads the options into o. */
static void
cmp_parse(int argc, char **argv, cmp_opts_t *o)
{
	int c;
	while ((c = msim_cli_next(&cmp_cmd, argc, argv)) != -1) {
		switch (c) {
		case 'p': o->list = optarg; break;
		case 'c': {
			char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg)
				msim_cli_die("--alloc-conf: '%s' is not "
					     "NAME=CONF", optarg);
			*eq = '\0';
			if (!msim_policy_find(optarg))
				msim_cli_die("--alloc-conf: unknown policy "
					     "'%s'", optarg);
			if (o->nconfs == CMP_MAX)
				msim_cli_die("--alloc-conf: too many");
			o->confs[o->nconfs][0] = optarg;
			o->confs[o->nconfs][1] = eq + 1;
			o->nconfs++;
			break;
		}
		case 'C': o->cap = msim_cli_bytes("--cap", optarg); break;
		case 'F': o->fraction = msim_cli_fraction(optarg); break;
		case 'K': msim_cli_gpu_capacity(&o->gpu, optarg); break;
		case 'D': msim_cli_gpu_device(&o->gpu, optarg, false); break;
		case 'X': msim_cli_gpu_context(&o->gpu, optarg); break;
		case 'j': o->json = true; break;
		case 'L': o->calibration = optarg; break;
		case 'W': o->defaults = true; break;
		case 'd': o->db = optarg; break;
		case 'P': o->plot = optarg; break;
		}
	}
	msim_cli_operands(&cmp_cmd, argc, 1, 1);
	msim_cli_gpu_done(&o->gpu);
	if (o->cap && o->fraction)
		msim_cli_die("give --cap or --fraction, not both");
}

/* The policies, in order, each with its --alloc-conf. */
static size_t
cmp_rows(const cmp_opts_t *o, msim_compare_pick_t *rows)
{
	size_t nrows;
	char why[512];
	int rc = msim_compare_pick_policies(o->list, rows, CMP_MAX, &nrows,
					    why, sizeof(why));
	if (rc == MSIM_ENOMEM)
		msim_cli_die("out of memory");
	if (rc)
		msim_cli_die("--policies: %s", why);
	if (msim_compare_pick_confs(rows, nrows,
				    (const char *const (*)[2])o->confs,
				    o->nconfs, why, sizeof(why)))
		msim_cli_die("--alloc-conf: %s", why);
	return nrows;
}

int
msim_cmd_compare(int argc, char **argv)
{
	cmp_opts_t o = {0};
	cmp_parse(argc, argv, &o);
	const char *path = argv[optind];
	/* Outputs never overwrite an input. */
	msim_cli_not_input("--plot", o.plot, path, "the input trace");
	msim_cli_not_input("--plot", o.plot, o.db, "the database");
	msim_cli_not_input("--plot", o.plot, o.calibration,
			   "the calibration file");
	msim_cli_not_input("--db", o.db, path, "the input trace");
	msim_compare_pick_t picks[CMP_MAX];
	size_t npicks = cmp_rows(&o, picks);
	char why[1024];
	msim_timemodel_t *lat = NULL;
	if (o.calibration &&
	    msim_timemodel_load(o.calibration, &lat, why, sizeof(why)))
		msim_cli_die("--calibration: %s", why);
	msim_db_t *db = NULL;
	if (o.db && msim_db_open(o.db, &db, why, sizeof(why)))
		msim_cli_die("%s", why);
	msim_compare_spec_t spec = {
		.trace = path, .picks = picks, .npicks = npicks, .cap = o.cap,
		.fraction = o.fraction, .capacity = o.gpu.capacity,
		.context = o.gpu.context, .timemodel = lat, .calibration = o.calibration, .db = db,
		.plot = o.plot != NULL, .defaults = o.defaults,
	};
	msim_compare_t c;
	msim_job_err_t err;
	const char *who;
	if (msim_compare_run(&spec, &c, &err, &who))
		msim_cli_job_die(&err, who);
	if (o.json)
		msim_compare_json(&c, &spec, o.db, o.gpu.name);
	else
		msim_compare_print(&c, &spec, o.db);
	if (o.plot) {
		char title[1024];
		snprintf(title, sizeof(title), "memsim compare: %s", path);
		if (msim_compare_plot(&c, msim_cli_plots_dir(), GNUPLOT_PATH,
				      o.plot, title, why, sizeof(why)))
			msim_cli_die("--plot: %s", why);
		if (!o.json)
			printf("plotted %s\n", o.plot);
	}
	msim_compare_clear(&c);
	msim_db_close(db);
	msim_timemodel_destroy(lat);
	return 0;
}
