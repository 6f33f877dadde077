/*
 * memsim report: the runs of a database as a table, JSON or CSV.  The JSON
 * objects carry the keys of `memsim run --json` (the 122 memory_stats()
 * keys among them, from the stats table) plus what identifies the run.
 */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "lab/figures.h"
#include "sim/results.h"
#include "sim/error.h"
#include "sim/units.h"

static const msim_cli_opt_t report_opts[] = {
	{'d', true, "db", "FILE", "the results database"},
	{'r', true, "run", "ID", "only this run (repeatable)"},
	{'s', true, "sweep", "ID", "only the runs of this sweep"},
	{'J', false, "json", NULL,
	 "a JSON array, one object per run, with the keys of\n"
	 "`memsim run --json` and the run's settings"},
	{'V', false, "csv", NULL, "CSV with a header line"},
	{'C', false, "compare", NULL,
	 "each measured run (memsim validate) beside a fresh\n"
	 "simulation of the same trace and setting: exact or\n"
	 "the difference in %"},
	{'o', true, "plot", "OUT",
	 "with --compare: measured and simulated peaks as bars\n"
	 "(.png, .svg, .pdf)"},
	MSIM_CLI_OPT_HELP,
	{0},
};

static const msim_cli_cmd_t report_cmd = {
	"usage: memsim report --db FILE [OPTIONS]\n"
	"\n"
	"Lists the runs of the database: peaks, fragmentation, segments, "
	"retries, OOM\n"
	"and wall time.\n"
	"\n"
	"options:\n",
	report_opts, 20, NULL, false,
};

/* A run as `memsim run --json` prints one, with what the store adds
 * (lab/figures.h: the same list of figures as memsim_load()). */
static void
print_json(msim_db_t *db, const char *path, int64_t id, int first)
{
	msim_figs_t f = {0};
	int rc = msim_figs_stored(&f, db, id);
	if (rc == MSIM_ENOTFOUND)
		msim_cli_die("%s: no run %" PRId64, path, id);
	if (rc)
		msim_cli_die("%s: %s", path, rc == MSIM_ENOMEM
			     ? msim_strerror(rc) : msim_db_errmsg(db));
	printf("%s{", first ? "" : ",\n");
	msim_print_json_figs(&f, true);
	printf("\n}");
	msim_figs_clear(&f);
}

/* A CSV field: quoted when it holds a comma, a quote or a newline. */
static void
csv_field(const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void
print_csv(const msim_db_run_t *r)
{
	printf("%" PRId64 ",", r->id);
	csv_field(r->trace_path);
	printf(",%s,%s,", r->trace_hash, r->policy);
	csv_field(r->params);
	printf(",%llu,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
	       ",%.6f,%.6f,%.6f,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
	       ",%" PRId64 ",%" PRId64 ",%.3f,",
	       (unsigned long long)r->cap_bytes, r->addresses, r->requests,
	       r->peak_reserved_bytes, r->peak_allocated_bytes,
	       r->peak_requested_bytes, r->frag_at_peak, r->frag_mean,
	       r->ext_frag_max, r->segments_peak, r->num_device_alloc,
	       r->num_device_free, r->num_alloc_retries, r->num_ooms,
	       r->oom_request, r->wall_ms);
	csv_field(r->strategy);
	putchar('\n');
}

static void
print_row(const msim_db_run_t *r)
{
	char a[32], b[32], cap[32] = "-", oom[32] = "-";
	const char *trace = r->trace_path;
	/* A model spec's seq list has slashes too. */
	const char *slash = strncmp(trace, "model:", 6) ? strrchr(trace, '/')
							: NULL;
	if (r->cap_bytes)
		msim_format_bytes(r->cap_bytes, cap, sizeof(cap));
	if (r->oom_request >= 0)
		snprintf(oom, sizeof(oom), "%" PRId64, r->oom_request);
	printf("%5" PRId64 "  %-22.22s %-8.8s %-12s %-12s %-12s %6.4f %5" PRId64
	       " %7" PRId64 " %-7s %8.1f  %s%s%s\n",
	       r->id, slash ? slash + 1 : trace, r->policy, cap,
	       msim_format_bytes((uint64_t)r->peak_reserved_bytes, a,
				 sizeof(a)),
	       msim_format_bytes((uint64_t)r->peak_allocated_bytes, b,
				 sizeof(b)),
	       r->frag_at_peak, r->segments_peak, r->num_alloc_retries, oom,
	       r->wall_ms, *r->params ? r->params : "(defaults)",
	       *r->strategy ? " " : "", r->strategy);
}

/* A setting a sweep stored as failed, after the runs of the table. */
static void
print_failed(void *ctx, const msim_db_failed_t *f)
{
	int *first = ctx;
	if (*first)
		printf("\nfailed settings (run again by the sweep's next "
		       "run):\n");
	*first = 0;
	const char *slash = strncmp(f->trace_path, "model:", 6)
		? strrchr(f->trace_path, '/') : NULL;
	printf("sweep %" PRId64 "  %s  %s  %s  %s: %s\n", f->sweep_id,
	       slash ? slash + 1 : f->trace_path, f->policy,
	       *f->params ? f->params : "(defaults)", f->status, f->reason);
}

int
msim_cmd_report(int argc, char **argv)
{
	const char *path = NULL;
	int64_t *runs = NULL, sweep = -1;
	size_t nruns = 0;
	int json = 0, csv = 0, compare = 0, c;
	const char *plot = NULL;
	char *end;
	while ((c = msim_cli_next(&report_cmd, argc, argv)) != -1) {
		switch (c) {
		case 'd': path = optarg; break;
		case 'r': {
			int64_t id = strtoll(optarg, &end, 10);
			if (*end || !*optarg || id < 1)
				msim_cli_die("--run: '%s' is not a run id",
					     optarg);
			int64_t *nr = realloc(runs, (nruns + 1) * sizeof(*nr));
			if (!nr)
				msim_cli_die("out of memory");
			runs = nr;
			runs[nruns++] = id;
			break;
		}
		case 's':
			sweep = strtoll(optarg, &end, 10);
			if (*end || !*optarg || sweep < 1)
				msim_cli_die("--sweep: '%s' is not a sweep id",
					     optarg);
			break;
		case 'J': json = 1; break;
		case 'V': csv = 1; break;
		case 'C': compare = 1; break;
		case 'o': plot = optarg; break;
		}
	}
	msim_cli_operands(&report_cmd, argc, 0, 0);
	if (!path) {
		msim_cli_help(stderr, &report_cmd);
		return 2;
	}
	if (json && csv)
		msim_cli_die("give --json or --csv, not both");
	msim_cli_not_input("--plot", plot, path, "the database");
	msim_cli_output("--plot", plot);
	char why[1024];
	msim_db_t *db;
	if (msim_db_open_readonly(path, &db, why, sizeof(why)))
		msim_cli_die("%s", why);
	if (plot && !compare)
		msim_cli_die("--plot goes with --compare (memsim plot draws the "
			     "other figures)");
	if (compare) {
		int rc = msim_report_compare(db, json, csv, plot);
		msim_db_close(db);
		free(runs);
		return rc;
	}
	/* The runs shown: those named, a sweep's, or all. */
	int64_t *ids = runs;
	size_t nids = nruns;
	if (!nruns) {
		msim_db_select_t sel = {.sweep_id = sweep > 0 ? sweep : 0};
		if (msim_db_list_runs(db, &sel, &ids, &nids))
			msim_cli_die("%s", msim_db_errmsg(db));
	}

	if (json)
		printf("[\n");
	else if (csv)
		printf("id,trace,trace_hash,policy,params,cap_bytes,addresses,"
		       "requests,peak_reserved_bytes,peak_allocated_bytes,"
		       "peak_requested_bytes,frag_at_peak,frag_mean,"
		       "ext_frag_max,segments_peak,num_device_alloc,"
		       "num_device_free,num_alloc_retries,num_ooms,"
		       "oom_request,wall_ms,strategy\n");
	else
		printf("%5s  %-22s %-8s %-12s %-12s %-12s %6s %5s %7s %-7s "
		       "%8s  %s\n", "run", "trace", "policy", "cap",
		       "peak resv", "peak alloc", "frag", "segs", "retries",
		       "OOM at", "wall ms", "settings");
	for (size_t k = 0; k < nids; k++) {
		if (json) {
			print_json(db, path, ids[k], !k);
			continue;
		}
		msim_db_run_t r;
		int rc = msim_db_run_get(db, ids[k], &r);
		if (rc == MSIM_ENOTFOUND)
			msim_cli_die("%s: no run %" PRId64, path, ids[k]);
		if (rc)
			msim_cli_die("%s", msim_db_errmsg(db));
		if (csv)
			print_csv(&r);
		else
			print_row(&r);
		msim_db_run_clear(&r);
	}
	if (json)
		printf("%s]\n", nids ? "\n" : "");
	int first = 1;
	if (!json && !csv && !nruns &&
	    msim_db_sweep_failed(db, sweep, print_failed, &first))
		msim_cli_die("%s", msim_db_errmsg(db));
	msim_db_close(db);
	if (ids != runs)
		free(ids);
	free(runs);
	return 0;
}
