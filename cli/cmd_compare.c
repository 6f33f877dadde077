/*
 * memsim compare: one trace through several policies, one table and one
 * overlaid plot of peak reserved bytes, fragmentation, device calls and
 * modelled allocator time.
 *
 * The time is a model of the driver calls only (sim/timemodel.h): each
 * cudaMalloc / map and cudaFree / unmap a policy makes costs the H200's
 * median latency for its size.  cuda-async is the exception: every request
 * is itself a cudaMallocAsync or cudaFreeAsync, so those are counted
 * instead (the pool's own growth happens inside them).  Host-side
 * bookkeeping of the caching allocators is taken as free.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plots/plot.h"
#include "policies/registry.h"
#include "cli/cli.h"
#include "sim/file.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "sim/timemodel.h"
#include "sim/results.h"
#include "sim/units.h"
#include "traces/trace.h"

#define CMP_MAX 32

static void
usage_compare(FILE *fp)
{
	fprintf(fp,
		"usage: memsim compare [OPTIONS] TRACE\n"
		"\n"
		"Replays TRACE through several policies (default: all of "
		"`memsim policies`)\nand prints one row per policy: peak "
		"reserved and allocated bytes,\nfragmentation (1 - allocated/"
		"reserved at the peaks, its mean over the\ntrace, and the "
		"largest external 1 - largest free block / free bytes),\n"
		"driver calls that reserve or release memory, and the "
		"modelled time of\nthose calls (H200 latencies by size; for "
		"cuda-async, one cudaMallocAsync or\ncudaFreeAsync per "
		"request).\n"
		"\n"
		"options:\n"
		"  -p, --policies A,B,...   policies to compare, in this "
		"order\n"
		"  -c, --alloc-conf NAME=CONF  parameters of policy NAME, "
		"e.g.\n"
		"                           pytorch=max_split_size_mb:128 "
		"(repeatable)\n"
		"      --capacity BYTES     device memory (default the "
		"H200's)\n"
		"      --calibration CSV    driver latencies (`memsim validate "
		"--calibrate`;\n"
		"                           default: the H200's, built in)\n"
		"  -d, --db FILE            store every run in this SQLite "
		"database\n"
		"      --plot OUT           overlaid plot (.png, .svg, .pdf)\n"
		"  -h, --help               this help\n");
}

typedef struct cmp_row_s {
	const msim_policy_ops_t *ops;
	const char *conf;
	char canon[512];
	msim_summary_t sum;
	msim_stats_t st;
	double time_ms;
	int64_t run_id;
} cmp_row_t;

/* The trace seen by one run: counts cudaMallocAsync-style costs. */
typedef struct cmp_src_s {
	msim_trace_t *t;
	const msim_timemodel_t *lat;
	double async_us; /* one driver call per request */
} cmp_src_t;

static int
cmp_next(void *ctx, msim_req_t *req_out)
{
	cmp_src_t *c = ctx;
	int rc = msim_trace_next(c->t, req_out);
	if (rc == 1 && req_out->kind == MSIM_REQ_ALLOC)
		c->async_us += msim_timemodel_us(c->lat, MSIM_LAT_MALLOC_ASYNC,
					       req_out->size);
	else if (rc == 1 && req_out->kind == MSIM_REQ_FREE)
		c->async_us += msim_timemodel_us(c->lat, MSIM_LAT_FREE_ASYNC, 0);
	return rc;
}

static const char *
cmp_errmsg(void *ctx)
{
	return msim_trace_errmsg(((cmp_src_t *)ctx)->t);
}

/* Modelled microseconds of the device calls in the event log. */
static double
events_us(const msim_timemodel_t *lat, const msim_seg_event_t *ev, size_t n)
{
	double us = 0.0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].action == MSIM_SEG_ALLOC ||
		    ev[i].action == MSIM_SEG_MAP)
			us += msim_timemodel_us(lat, MSIM_LAT_MALLOC, ev[i].size);
		else if (ev[i].action == MSIM_SEG_FREE ||
			 ev[i].action == MSIM_SEG_UNMAP)
			us += msim_timemodel_us(lat, MSIM_LAT_FREE, ev[i].size);
	}
	return us;
}

/* Writes one policy's block of the timelines file. */
static void
write_timeline(FILE *fp, const char *name, const msim_timeline_t *tl,
	       bool first)
{
	if (!first)
		fprintf(fp, "\n\n");
	fprintf(fp, "request,%s\n", name);
	for (size_t i = 0; i < tl->n; i++)
		fprintf(fp, "%" PRIu64 ",%" PRId64 "\n", tl->v[i].request,
			tl->v[i].reserved);
}

static void
print_row(const cmp_row_t *r)
{
	char a[32], b[32], name[64];
	snprintf(name, sizeof(name), "%s%s", r->ops->name,
		 r->canon[0] ? "*" : "");
	printf("%-12s %11s %11s %9.4f %9.4f %9.4f %9" PRId64 " %11.2f",
	       name,
	       msim_format_bytes((uint64_t)r->st.reserved_bytes[0].peak, a,
				 sizeof(a)),
	       msim_format_bytes((uint64_t)r->st.allocated_bytes[0].peak, b,
				 sizeof(b)),
	       r->sum.frag_at_peak, r->sum.frag_mean, r->sum.ext_frag_max,
	       r->st.num_device_alloc + r->st.num_device_free, r->time_ms);
	if (r->sum.oom_request >= 0)
		printf("  OOM at request %" PRId64, r->sum.oom_request);
	printf("\n");
}

int
msim_cmd_compare(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"policies", required_argument, NULL, 'p'},
		{"alloc-conf", required_argument, NULL, 'c'},
		{"capacity", required_argument, NULL, 'K'},
		{"calibration", required_argument, NULL, 'L'},
		{"db", required_argument, NULL, 'd'},
		{"plot", required_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cmp_row_t rows[CMP_MAX];
	size_t nrows = 0;
	const char *list = NULL, *db_path = NULL, *plot = NULL, *lat_path = NULL;
	const char *confs[CMP_MAX][2];
	size_t nconfs = 0;
	uint64_t capacity = MSIM_H200_BYTES;
	int c;
	while ((c = getopt_long(argc, argv, "p:c:d:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': list = optarg; break;
		case 'c': {
			char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg)
				msim_cli_die("--alloc-conf: '%s' is not NAME=CONF",
				    optarg);
			*eq = '\0';
			if (!msim_policy_find(optarg))
				msim_cli_die("--alloc-conf: unknown policy '%s'",
				    optarg);
			if (nconfs == CMP_MAX)
				msim_cli_die("--alloc-conf: too many");
			confs[nconfs][0] = optarg;
			confs[nconfs][1] = eq + 1;
			nconfs++;
			break;
		}
		case 'K':
			capacity = msim_cli_bytes("--capacity", optarg);
			if (capacity == 0)
				msim_cli_die("--capacity: must be above 0");
			break;
		case 'L': lat_path = optarg; break;
		case 'd': db_path = optarg; break;
		case 'P': plot = optarg; break;
		case 'h': usage_compare(stdout); return 0;
		default: usage_compare(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage_compare(stderr);
		return 2;
	}
	const char *path = argv[optind];
	msim_cli_not_input("--plot", plot, path, "the input trace");
	msim_cli_not_input("--plot", plot, db_path, "the database");
	msim_cli_not_input("--plot", plot, lat_path, "the calibration file");
	msim_cli_not_input("--db", db_path, path, "the input trace");

	/* The policies, in order. */
	if (list) {
		char *copy = strdup(list), *save = NULL;
		if (!copy)
			msim_cli_die("out of memory");
		for (char *tok = strtok_r(copy, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			const msim_policy_ops_t *ops = msim_policy_find(tok);
			if (!ops)
				msim_cli_die("--policies: unknown policy '%s' "
				    "(see `memsim policies`)", tok);
			if (nrows == CMP_MAX)
				msim_cli_die("--policies: at most %d", CMP_MAX);
			rows[nrows++] = (cmp_row_t){.ops = ops};
		}
		free(copy);
		if (nrows == 0)
			msim_cli_die("--policies: no policy named");
	} else {
		for (const msim_policy_ops_t *const *p = msim_policy_list();
		     *p && nrows < CMP_MAX; p++)
			rows[nrows++] = (cmp_row_t){.ops = *p};
	}
	for (size_t i = 0; i < nconfs; i++) {
		bool used = false;
		for (size_t r = 0; r < nrows; r++) {
			if (!strcmp(rows[r].ops->name, confs[i][0])) {
				rows[r].conf = confs[i][1];
				used = true;
			}
		}
		if (!used)
			msim_cli_die("--alloc-conf: policy '%s' is not compared",
			    confs[i][0]);
	}

	char why[1024];
	msim_timemodel_t *lat;
	if (lat_path ? msim_timemodel_load(lat_path, &lat, why, sizeof(why))
		     : msim_timemodel_h200(&lat))
		msim_cli_die("--calibration: %s", lat_path ? why
							   : "out of memory");
	msim_db_t *db = NULL;
	if (db_path && msim_db_open(db_path, &db, why, sizeof(why)))
		msim_cli_die("%s", why);

	char sum_csv[] = "/tmp/memsim-cmp-sum-XXXXXX";
	char tl_csv[] = "/tmp/memsim-cmp-tl-XXXXXX";
	FILE *sum_fp = NULL, *tl_fp = NULL;
	if (plot) {
		int fd1 = mkstemp(sum_csv), fd2 = mkstemp(tl_csv);
		if (fd1 < 0 || fd2 < 0 || !(sum_fp = fdopen(fd1, "w")) ||
		    !(tl_fp = fdopen(fd2, "w")))
			msim_cli_die("cannot create a temporary file: %s",
			    strerror(errno));
	}

	char hash[32] = "";
	for (size_t r = 0; r < nrows; r++) {
		cmp_row_t *row = &rows[r];
		msim_params_t pv;
		if (msim_params_init(&pv, row->ops->params))
			msim_cli_die("out of memory");
		if (row->conf && msim_params_parse(&pv, row->conf))
			msim_cli_die("--alloc-conf %s: %s", row->ops->name,
			    pv.errmsg);
		msim_params_canonical(&pv, row->canon, sizeof(row->canon));
		msim_trace_t *t;
		if (msim_trace_open(path, NULL, &t, why, sizeof(why)))
			msim_cli_die("%s", why);
		cmp_src_t src = {.t = t, .lat = lat};
		msim_sim_config_t cfg = {
			.source = {cmp_next, cmp_errmsg, &src},
			.policy = row->ops,
			.params = &pv,
			.device = {.capacity = capacity, .log_events = 1},
		};
		msim_sim_t *sim;
		if (msim_sim_new(&cfg, &sim, why, sizeof(why)))
			msim_cli_die("%s: %s", row->ops->name, why);
		double t0 = msim_cli_now_ms();
		if (msim_sim_run(sim))
			msim_cli_die("%s: %s", row->ops->name,
			    msim_sim_errmsg(sim));
		double wall_ms = msim_cli_now_ms() - t0;
		msim_sim_summary(sim, &row->sum);
		msim_sim_stats(sim, &row->st);
		size_t nev;
		const msim_seg_event_t *ev =
			msim_device_events(msim_sim_device(sim), &nev);
		row->time_ms = (!strcmp(row->ops->name, "cuda-async")
				? src.async_us : events_us(lat, ev, nev)) /
			       1e3;
		snprintf(hash, sizeof(hash), "%016" PRIx64, msim_trace_hash(t));
		row->run_id = -1;
		if (db) {
			msim_run_info_t info = {
				.kind = "simulated", .trace_path = path,
				.trace_hash = hash,
				.trace_format = msim_trace_format_name(t),
				.policy = row->ops->name, .params = row->canon,
				.addresses = "model", .wall_ms = wall_ms,
			};
			if (msim_db_store_run(db, &info, &row->sum, &row->st,
					      msim_sim_timeline(sim), ev, nev,
					      &row->run_id))
				msim_cli_die("%s", msim_db_errmsg(db));
		}
		if (plot) {
			fprintf(sum_fp, "%s,%" PRId64 ",%" PRId64 ",%.6f,%"
				PRId64 ",%.3f\n", row->ops->name,
				row->st.reserved_bytes[0].peak,
				row->st.allocated_bytes[0].peak,
				row->sum.frag_at_peak,
				row->st.num_device_alloc +
				row->st.num_device_free, row->time_ms);
			write_timeline(tl_fp, row->ops->name,
				       msim_sim_timeline(sim), r == 0);
		}
		msim_sim_destroy(sim);
		msim_trace_close(t);
		msim_params_clear(&pv);
	}

	printf("trace %s (%" PRIu64 " requests)\n\n", path,
	       rows[0].sum.requests);
	printf("%-12s %11s %11s %9s %9s %9s %9s %11s\n", "policy",
	       "reserved", "allocated", "frag@peak", "frag mean", "ext max",
	       "dev calls", "model ms");
	for (size_t r = 0; r < nrows; r++)
		print_row(&rows[r]);
	for (size_t r = 0; r < nrows; r++)
		if (rows[r].canon[0])
			printf("* %s: %s\n", rows[r].ops->name, rows[r].canon);
	if (db)
		printf("stored runs %" PRId64 "..%" PRId64 " in %s\n",
		       rows[0].run_id, rows[nrows - 1].run_id, db_path);
	if (plot) {
		if (fclose(sum_fp) || fclose(tl_fp))
			msim_cli_die("writing the plot data: %s",
			    strerror(errno));
		char title[1024];
		snprintf(title, sizeof(title), "memsim compare: %s", path);
		int rc = msim_plot_compare(msim_cli_plots_dir(), GNUPLOT_PATH,
					   sum_csv, tl_csv, plot, title, why,
					   sizeof(why));
		unlink(sum_csv);
		unlink(tl_csv);
		if (rc)
			msim_cli_die("--plot: %s", why);
		printf("plotted %s\n", plot);
	}
	msim_db_close(db);
	msim_timemodel_destroy(lat);
	return 0;
}
