/*
 * memsim report --compare: every measured run of a database (memsim
 * validate) beside a simulation of the same trace under the same setting
 * (lab/reproduce.h), as a table, CSV or JSON, and a plot of measured
 * against simulated peak reserved.  Each figure is an exact match or a
 * difference in %.
 */
#include <config.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "lab/reproduce.h"

#define NFIG MSIM_REPRODUCE_NFIG
#define figures msim_reproduce_figures

static const char *
pct(int64_t meas, int64_t sim, char *buf, size_t n)
{
	if (meas == sim)
		snprintf(buf, n, "exact");
	else if (meas == 0)
		snprintf(buf, n, "n/a");
	else
		snprintf(buf, n, "%+.2f%%",
			 100.0 * (double)(sim - meas) / (double)meas);
	return buf;
}

static const char *
basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static void
print_header(int json, int csv)
{
	if (csv) {
		printf("run_id,trace,mode,policy,params,cap_bytes");
		for (size_t k = 0; k < NFIG; k++)
			printf(",measured.%s,simulated.%s", figures[k],
			       figures[k]);
		printf(",measured_oom_request,simulated_oom_request,"
		       "stats_equal,stats_total,events_equal\n");
	} else if (json) {
		printf("[");
	} else {
		printf("%5s  %-22s %-6s %-54s %12s %12s %9s %8s %7s\n", "run",
		       "trace", "mode", "setting", "measured", "simulated",
		       "reserved", "stats", "events");
	}
}

static void
print_csv(const msim_reproduce_row_t *r)
{
	printf("%" PRId64 ",%s,%s,%s,\"%s\",%" PRIu64, r->id, r->trace,
	       r->mode, r->policy, r->params, r->cap);
	for (size_t k = 0; k < NFIG; k++) {
		if (r->have[k])
			printf(",%" PRId64, r->meas[k]);
		else
			printf(",");
		printf(",%" PRId64, r->sim[k]);
	}
	printf(",%" PRId64 ",%" PRId64 ",%d,%d,%s\n", r->oom_request,
	       r->sim_oom, r->stats_equal, r->stats_total,
	       r->events < 0 ? "" : r->events ? "1" : "0");
}

static void
print_json(const msim_reproduce_row_t *r, bool first)
{
	printf("%s\n {\"run_id\": %" PRId64 ", \"trace\": ", first ? "" : ",",
	       r->id);
	msim_print_json_str(stdout, r->trace);
	printf(", \"mode\": \"%s\", \"policy\": \"%s\", \"params\": ",
	       r->mode, r->policy);
	msim_print_json_str(stdout, r->params);
	printf(", \"cap_bytes\": %" PRIu64, r->cap);
	for (size_t k = 0; k < NFIG; k++) {
		if (r->have[k])
			printf(", \"measured.%s\": %" PRId64, figures[k],
			       r->meas[k]);
		printf(", \"simulated.%s\": %" PRId64, figures[k], r->sim[k]);
	}
	printf(", \"measured.oom_request\": %" PRId64
	       ", \"simulated.oom_request\": %" PRId64 ", \"exact\": %s}",
	       r->oom_request, r->sim_oom, r->exact ? "true" : "false");
}

static void
print_text(const msim_reproduce_row_t *r)
{
	char setting[256], d[32], stats[32], events[16];
	const char *params = *r->params ? r->params : "(defaults)";
	if (r->cap)
		snprintf(setting, sizeof(setting), "%s cap %" PRIu64, params,
			 r->cap);
	else
		snprintf(setting, sizeof(setting), "%s", params);
	if (r->stats_total)
		snprintf(stats, sizeof(stats), "%d/%d", r->stats_equal,
			 r->stats_total);
	else
		snprintf(stats, sizeof(stats), "-");
	snprintf(events, sizeof(events), "%s",
		 r->events < 0 ? "-" : r->events ? "equal" : "differ");
	printf("%5" PRId64 "  %-22.22s %-6s %-54.54s %12" PRId64 " %12" PRId64
	       " %9s %8s %7s\n", r->id, basename_of(r->trace), r->mode,
	       setting, r->meas[0], r->sim[0],
	       pct(r->meas[0], r->sim[0], d, sizeof(d)), stats, events);
}

int
msim_report_compare(msim_db_t *db, int json, int csv, const char *plot)
{
	msim_reproduce_t rep;
	char why[1024];
	if (msim_reproduce_run(db, &rep, why, sizeof(why)))
		msim_cli_die("%s", why);
	print_header(json, csv);
	for (size_t i = 0; i < rep.n; i++) {
		if (csv)
			print_csv(&rep.rows[i]);
		else if (json)
			print_json(&rep.rows[i], i == 0);
		else
			print_text(&rep.rows[i]);
	}
	if (json)
		printf("\n]\n");
	else if (!csv)
		printf("\n%zu of %zu measured runs reproduced exactly (every "
		       "figure compared)\n", rep.exact, rep.n);
	if (plot) {
		fflush(stdout);
		if (msim_reproduce_plot(&rep, msim_cli_plots_dir(),
					GNUPLOT_PATH, plot, why, sizeof(why)))
			msim_cli_die("-o: %s", why);
		if (!json && !csv)
			printf("plotted %s\n", plot);
	}
	size_t n = rep.n;
	msim_reproduce_clear(&rep);
	if (!n)
		msim_cli_die("no measured runs in the database (memsim "
			     "validate --db stores them)");
	return 0;
}
