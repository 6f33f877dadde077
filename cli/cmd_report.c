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

#include <sqlite3.h>

#include "cli/cli.h"
#include "sim/file.h"
#include "sim/metrics.h"
#include "sim/results.h"
#include "sim/units.h"

static void
usage_report(FILE *fp)
{
	fprintf(fp,
		"usage: memsim report --db FILE [OPTIONS]\n"
		"\n"
		"Lists the runs of the database: peaks, fragmentation, segments, "
		"retries, OOM\n"
		"and wall time.\n"
		"\n"
		"options:\n"
		"  -d, --db FILE     the results database\n"
		"  -r, --run ID      only this run (repeatable)\n"
		"  -s, --sweep ID    only the runs of this sweep\n"
		"      --json        a JSON array, one object per run, with the "
		"keys of\n"
		"                    `memsim run --json` and the run's "
		"settings\n"
		"      --csv         CSV with a header line\n"
		"      --compare     each measured run (memsim validate) beside "
		"a fresh\n"
		"                    simulation of the same trace and setting: "
		"exact or\n"
		"                    the difference in %%\n"
		"  -o, --plot OUT    with --compare: measured and simulated "
		"peaks as bars\n"
		"                    (.png, .svg, .pdf)\n"
		"  -h, --help        this help\n");
}

/* The columns read from runs, in this order. */
#define REPORT_COLS							\
	"r.id, r.trace_path, r.trace_hash, r.policy, r.params,"		\
	" r.cap_bytes, r.addresses, r.requests, r.peak_reserved_bytes,"	\
	" r.peak_allocated_bytes, r.peak_requested_bytes, r.frag_at_peak,"	\
	" r.frag_mean, r.ext_frag_max, r.num_device_alloc,"		\
	" r.num_device_free, r.num_alloc_retries, r.num_ooms,"		\
	" r.oom_request, r.wall_ms, r.kind, r.created, r.memsim_version,"	\
	" r.capacity_bytes, r.setting_key, r.trace_format,"		\
	" (SELECT value FROM stats s WHERE s.run_id=r.id AND"		\
	"  s.name='segment.all.peak'), r.strategy"
enum { C_ID, C_TRACE, C_HASH, C_POLICY, C_PARAMS, C_CAP, C_ADDR, C_REQS,
       C_PRES, C_PALLOC, C_PREQ, C_FRAG, C_FRAGM, C_EXT, C_DALLOC, C_DFREE,
       C_RETRY, C_OOMS, C_OOMREQ, C_WALL, C_KIND, C_CREATED, C_VERSION,
       C_CAPACITY, C_KEY, C_FORMAT, C_SEGS, C_STRAT };

static const char *
col_text(sqlite3_stmt *q, int c)
{
	const char *s = (const char *)sqlite3_column_text(q, c);
	return s ? s : "";
}

typedef struct stat_name_s {
	const char **names;
	size_t n;
} stat_names_t;

static void
collect_name(const char *name, int64_t value, void *ctx)
{
	(void)value;
	stat_names_t *sn = ctx;
	/* name may live in a buffer reused for the next key. */
	if (!(sn->names[sn->n++] = strdup(name)))
		msim_cli_die("out of memory");
}

static void
print_json(sqlite3 *db, sqlite3_stmt *q, const stat_names_t *sn, int first)
{
	int64_t id = sqlite3_column_int64(q, C_ID);
	printf("%s{\n  \"trace\": ", first ? "" : ",\n");
	msim_cli_json_str(stdout, col_text(q, C_TRACE));
	printf(",\n  \"trace_hash\": ");
	msim_cli_json_str(stdout, col_text(q, C_HASH));
	printf(",\n  \"policy\": ");
	msim_cli_json_str(stdout, col_text(q, C_POLICY));
	printf(",\n  \"params\": ");
	msim_cli_json_str(stdout, col_text(q, C_PARAMS));
	if (*col_text(q, C_STRAT)) {
		printf(",\n  \"strategy\": ");
		msim_cli_json_str(stdout, col_text(q, C_STRAT));
	}
	printf(",\n  \"cap_bytes\": %lld",
	       (long long)sqlite3_column_int64(q, C_CAP));
	printf(",\n  \"requests\": %lld",
	       (long long)sqlite3_column_int64(q, C_REQS));
	/* The statistics, in the order of memory_stats(). */
	int64_t *vals = calloc(sn->n, sizeof(*vals));
	unsigned char *have = calloc(sn->n, 1);
	sqlite3_stmt *s;
	if (!vals || !have)
		msim_cli_die("out of memory");
	if (sqlite3_prepare_v2(db, "SELECT name, value FROM stats WHERE "
			       "run_id=?", -1, &s, NULL) != SQLITE_OK)
		msim_cli_die("%s", sqlite3_errmsg(db));
	sqlite3_bind_int64(s, 1, id);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(s, 0);
		for (size_t k = 0; name && k < sn->n; k++)
			if (!strcmp(sn->names[k], name)) {
				vals[k] = sqlite3_column_int64(s, 1);
				have[k] = 1;
				break;
			}
	}
	sqlite3_finalize(s);
	for (size_t k = 0; k < sn->n; k++)
		if (have[k])
			printf(",\n  \"%s\": %" PRId64, sn->names[k], vals[k]);
	free(vals);
	free(have);
	printf(",\n  \"oom_request\": %lld",
	       (long long)sqlite3_column_int64(q, C_OOMREQ));
	printf(",\n  \"frag_at_peak\": %.6f", sqlite3_column_double(q, C_FRAG));
	printf(",\n  \"frag_mean\": %.6f", sqlite3_column_double(q, C_FRAGM));
	printf(",\n  \"ext_frag_max\": %.6f", sqlite3_column_double(q, C_EXT));
	printf(",\n  \"wall_ms\": %.3f", sqlite3_column_double(q, C_WALL));
	printf(",\n  \"run_id\": %lld", (long long)id);
	printf(",\n  \"addresses\": ");
	msim_cli_json_str(stdout, col_text(q, C_ADDR));
	if (sqlite3_column_type(q, C_CAPACITY) != SQLITE_NULL)
		printf(",\n  \"capacity_bytes\": %lld",
		       (long long)sqlite3_column_int64(q, C_CAPACITY));
	printf(",\n  \"kind\": ");
	msim_cli_json_str(stdout, col_text(q, C_KIND));
	printf(",\n  \"created\": ");
	msim_cli_json_str(stdout, col_text(q, C_CREATED));
	printf(",\n  \"memsim_version\": ");
	msim_cli_json_str(stdout, col_text(q, C_VERSION));
	printf(",\n  \"setting_key\": ");
	if (sqlite3_column_type(q, C_KEY) == SQLITE_NULL)
		printf("null");
	else
		msim_cli_json_str(stdout, col_text(q, C_KEY));
	/* What run_meta holds (modelled time, measured device...): numbers
	 * as numbers, the rest as strings. */
	if (sqlite3_prepare_v2(db, "SELECT key, value FROM run_meta WHERE "
			       "run_id=? ORDER BY key", -1, &s, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(s, 1, id);
		while (sqlite3_step(s) == SQLITE_ROW) {
			const char *k = (const char *)sqlite3_column_text(s, 0);
			const char *v = (const char *)sqlite3_column_text(s, 1);
			char *end;
			printf(",\n  ");
			msim_cli_json_str(stdout, k);
			printf(": ");
			if (v && *v && (strtod(v, &end), !*end))
				printf("%s", v);
			else
				msim_cli_json_str(stdout, v);
		}
		sqlite3_finalize(s);
	}
	printf("\n}");
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
print_csv(sqlite3_stmt *q)
{
	printf("%lld,", (long long)sqlite3_column_int64(q, C_ID));
	csv_field(col_text(q, C_TRACE));
	printf(",%s,%s,", col_text(q, C_HASH), col_text(q, C_POLICY));
	csv_field(col_text(q, C_PARAMS));
	printf(",%lld,%s,%lld,%lld,%lld,%lld,%.6f,%.6f,%.6f,%lld,%lld,%lld,"
	       "%lld,%lld,%lld,%.3f,",
	       (long long)sqlite3_column_int64(q, C_CAP), col_text(q, C_ADDR),
	       (long long)sqlite3_column_int64(q, C_REQS),
	       (long long)sqlite3_column_int64(q, C_PRES),
	       (long long)sqlite3_column_int64(q, C_PALLOC),
	       (long long)sqlite3_column_int64(q, C_PREQ),
	       sqlite3_column_double(q, C_FRAG),
	       sqlite3_column_double(q, C_FRAGM),
	       sqlite3_column_double(q, C_EXT),
	       (long long)sqlite3_column_int64(q, C_SEGS),
	       (long long)sqlite3_column_int64(q, C_DALLOC),
	       (long long)sqlite3_column_int64(q, C_DFREE),
	       (long long)sqlite3_column_int64(q, C_RETRY),
	       (long long)sqlite3_column_int64(q, C_OOMS),
	       (long long)sqlite3_column_int64(q, C_OOMREQ),
	       sqlite3_column_double(q, C_WALL));
	csv_field(col_text(q, C_STRAT));
	putchar('\n');
}

static void
print_row(sqlite3_stmt *q)
{
	char a[32], b[32], cap[32] = "-", oom[32] = "-";
	const char *trace = col_text(q, C_TRACE);
	/* A model spec's seq list has slashes too. */
	const char *slash = strncmp(trace, "model:", 6) ? strrchr(trace, '/')
							: NULL;
	const char *params = col_text(q, C_PARAMS);
	const char *strategy = col_text(q, C_STRAT);
	int64_t c = sqlite3_column_int64(q, C_CAP);
	if (c)
		msim_format_bytes((uint64_t)c, cap, sizeof(cap));
	if (sqlite3_column_int64(q, C_OOMREQ) >= 0)
		snprintf(oom, sizeof(oom), "%lld",
			 (long long)sqlite3_column_int64(q, C_OOMREQ));
	printf("%5lld  %-22.22s %-8.8s %-12s %-12s %-12s %6.4f %5lld %7lld "
	       "%-7s %8.1f  %s%s%s\n",
	       (long long)sqlite3_column_int64(q, C_ID), slash ? slash + 1
							       : trace,
	       col_text(q, C_POLICY), cap,
	       msim_format_bytes((uint64_t)sqlite3_column_int64(q, C_PRES), a,
				 sizeof(a)),
	       msim_format_bytes((uint64_t)sqlite3_column_int64(q, C_PALLOC),
				 b, sizeof(b)),
	       sqlite3_column_double(q, C_FRAG),
	       (long long)sqlite3_column_int64(q, C_SEGS),
	       (long long)sqlite3_column_int64(q, C_RETRY), oom,
	       sqlite3_column_double(q, C_WALL), *params ? params
							 : "(defaults)",
	       *strategy ? " " : "", strategy);
}

int
msim_cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"db", required_argument, NULL, 'd'},
		{"run", required_argument, NULL, 'r'},
		{"sweep", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'J'},
		{"csv", no_argument, NULL, 'V'},
		{"compare", no_argument, NULL, 'C'},
		{"plot", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *path = NULL;
	int64_t *runs = NULL, sweep = -1;
	size_t nruns = 0;
	int json = 0, csv = 0, compare = 0, c;
	const char *plot = NULL;
	char *end;
	while ((c = getopt_long(argc, argv, "d:r:s:o:h", longopts, NULL)) != -1) {
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
		case 'h': usage_report(stdout); return 0;
		default: usage_report(stderr); return 2;
		}
	}
	if (optind != argc || !path) {
		usage_report(stderr);
		return 2;
	}
	if (json && csv)
		msim_cli_die("give --json or --csv, not both");
	msim_cli_not_input("--plot", plot, path, "the database");
	char why[1024];
	msim_db_t *mdb;
	if (msim_db_open_existing(path, &mdb, why, sizeof(why)))
		msim_cli_die("%s", why);
	if (plot && !compare)
		msim_cli_die("--plot goes with --compare (memsim plot draws the "
			     "other figures)");
	if (compare) {
		int rc = msim_report_compare(mdb, json, csv, plot);
		msim_db_close(mdb);
		free(runs);
		return rc;
	}
	sqlite3 *db = msim_db_handle(mdb);
	sqlite3_stmt *q;
	const char *sql = sweep > 0
		? "SELECT " REPORT_COLS " FROM runs r JOIN sweep_runs w ON"
		  " w.run_id=r.id WHERE w.sweep_id=?1 ORDER BY r.id"
		: "SELECT " REPORT_COLS " FROM runs r WHERE ?1 < 0 OR r.id=?2"
		  " ORDER BY r.id";
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		msim_cli_die("%s: %s", path, sqlite3_errmsg(db));

	const char *names[512];
	stat_names_t sn = {names, 0};
	msim_stats_t zero = {0};
	msim_stats_foreach(&zero, collect_name, &sn);

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
	int first = 1, rc;
	size_t pass = nruns ? nruns : 1;
	for (size_t k = 0; k < pass; k++) {
		sqlite3_reset(q);
		if (sweep > 0) {
			sqlite3_bind_int64(q, 1, sweep);
		} else {
			sqlite3_bind_int64(q, 1, nruns ? 1 : -1);
			sqlite3_bind_int64(q, 2, nruns ? runs[k] : 0);
		}
		int found = 0;
		while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
			found = 1;
			if (json)
				print_json(db, q, &sn, first);
			else if (csv)
				print_csv(q);
			else
				print_row(q);
			first = 0;
		}
		if (rc != SQLITE_DONE)
			msim_cli_die("%s: %s", path, sqlite3_errmsg(db));
		if (nruns && !found)
			msim_cli_die("%s: no run %" PRId64, path, runs[k]);
	}
	if (json)
		printf("%s]\n", first ? "" : "\n");
	sqlite3_finalize(q);
	msim_db_close(mdb);
	for (size_t k = 0; k < sn.n; k++)
		free((char *)names[k]);
	free(runs);
	return 0;
}
