/* memsim plot: figures from the results database through gnuplot. */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot.h"
#include "cli/cli.h"
#include "sim/error.h"
#include "sim/results.h"

static void
usage_plot(FILE *fp)
{
	fprintf(fp,
		"usage: memsim plot --db FILE --kind KIND [--run ID...] "
		"-o OUT.png|OUT.svg|OUT.pdf\n"
		"\n"
		"Draws a figure from the database with the gnuplot scripts of "
		"plots/.\n"
		"\n"
		"       memsim plot --kind breakdown -o OUT [memsim explain "
		"options] TRACE\n"
		"kinds:\n"
		"  curve      a run's allocated and reserved bytes and "
		"fragmentation over requests,\n"
		"             its cap and a partial history's start drawn "
		"(default run: the newest)\n"
		"  overlay    several runs' reserved bytes overlaid (default: "
		"the runs of the\n"
		"             newest run's trace)\n"
		"  sweep      a figure against one setting, one line per value "
		"of another\n"
		"             (default runs: the newest sweep, all its shards)\n"
		"  segments   the segments live at the peak of reserved memory, "
		"as bars\n"
		"             (default run: the newest)\n"
		"\n"
		"options:\n"
		"  -d, --db FILE       the results database\n"
		"  -k, --kind KIND     curve (default), overlay, sweep or "
		"segments\n"
		"  -r, --run ID[,ID]   the runs to show (repeatable)\n"
		"  -s, --sweep ID      the runs of this sweep\n"
		"  -o, --output OUT    .png, .svg or .pdf (PDF needs gnuplot's "
		"cairo terminal)\n"
		"      --x KEY         sweep: the setting on x, any key swept "
		"(an allocator's,\n"
		"                      a recording's or model's: batch, ...; "
		"cap, policy);\n"
		"                      default: the first that varies\n"
		"      --series KEY    sweep: one line per value of KEY "
		"(default: one per\n"
		"                      value of the other keys that vary, "
		"\"expandable_segments:True\")\n"
		"      --y COLUMN      sweep: a column of runs (default "
		"peak_reserved_bytes)\n"
		"      --title TEXT    the figure's title\n"
		"      --size WxH      pixels (default 1200x700)\n"
		"      --export CSV    also write the data the script reads, "
		"to plot by hand:\n"
		"                      gnuplot -c plots/KIND.gp CSV OUT.png "
		"[TITLE [WxH]]\n"
		"  -h, --help          this help\n");
}

int
msim_cmd_plot(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"db", required_argument, NULL, 'd'},
		{"kind", required_argument, NULL, 'k'},
		{"run", required_argument, NULL, 'r'},
		{"sweep", required_argument, NULL, 's'},
		{"output", required_argument, NULL, 'o'},
		{"x", required_argument, NULL, 'X'},
		{"series", required_argument, NULL, 'S'},
		{"y", required_argument, NULL, 'Y'},
		{"title", required_argument, NULL, 'T'},
		{"size", required_argument, NULL, 'Z'},
		{"export", required_argument, NULL, 'E'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	/* --kind breakdown replays a trace (memsim explain), no database. */
	for (int i = 1; i < argc; i++)
		if ((!strcmp(argv[i], "breakdown") && i > 1 &&
		     (!strcmp(argv[i - 1], "--kind") ||
		      !strcmp(argv[i - 1], "-k"))) ||
		    !strcmp(argv[i], "--kind=breakdown"))
			return msim_cli_plot_breakdown(argc, argv);
	msim_plot_req_t r = {.kind = MSIM_PLOT_CURVE, .gnuplot = GNUPLOT_PATH};
	const char *path = NULL, *export = NULL;
	int64_t *runs = NULL, sweep = -1;
	size_t nruns = 0;
	int c;
	char *end;
	while ((c = msim_cli_getopt(argc, argv, "d:k:r:s:o:h", longopts)) !=
	       -1) {
		switch (c) {
		case 'd': path = optarg; break;
		case 'k':
			if ((r.kind = msim_plot_kind(optarg)) < 0)
				msim_cli_die("--kind: '%s' is not curve, overlay, "
					     "sweep or segments", optarg);
			break;
		case 'r':
			for (char *p = optarg;;) {
				int64_t id = strtoll(p, &end, 10);
				if (end == p || id < 1 || (*end && *end != ','))
					msim_cli_die("--run: '%s' is not a list "
						     "of run ids", optarg);
				int64_t *nr = realloc(runs, (nruns + 1) *
							    sizeof(*nr));
				if (!nr)
					msim_cli_die("out of memory");
				runs = nr;
				runs[nruns++] = id;
				if (!*end)
					break;
				p = end + 1;
			}
			break;
		case 's':
			sweep = strtoll(optarg, &end, 10);
			if (*end || !*optarg || sweep < 1)
				msim_cli_die("--sweep: '%s' is not a sweep id",
					     optarg);
			break;
		case 'o': r.out = optarg; break;
		case 'X': r.x_key = optarg; break;
		case 'S': r.series_key = optarg; break;
		case 'Y': r.y_col = optarg; break;
		case 'T': r.title = optarg; break;
		case 'Z': r.size = optarg; break;
		case 'E': export = optarg; break;
		case 'h': usage_plot(stdout); return 0;
		default: usage_plot(stderr); return 2;
		}
	}
	msim_cli_not_input("--output", r.out, path, "the database");
	msim_cli_not_input("--export", export, path, "the database");
	msim_cli_not_input("--export", export, r.out, "the plot");
	msim_cli_output("--output", r.out);
	msim_cli_output("--export", export);
	if (optind != argc || !path || (!r.out && !export)) {
		usage_plot(stderr);
		return 2;
	}
	if (nruns && sweep > 0)
		msim_cli_die("give --run or --sweep, not both");
	if (r.out && !export && (!r.gnuplot || !strcmp(r.gnuplot, "no")))
		msim_cli_die("gnuplot is not installed (Debian: apt-get install "
			     "gnuplot-nox); --export FILE writes the data "
			     "without plotting");
	char why[2048];
	msim_db_t *db;
	if (msim_db_open_readonly(path, &db, why, sizeof(why)))
		msim_cli_die("%s", why);
	int rc = 0;
	if (sweep > 0)
		rc = msim_plot_sweep_runs(db, sweep, &runs, &nruns);
	else if (!nruns)
		rc = msim_plot_default_runs(db, r.kind, &runs, &nruns);
	if (rc == MSIM_ENOTFOUND)
		msim_cli_die("%s: %s", path, sweep > 0 ? "no such sweep, or it "
			     "has no runs" : "no runs to plot");
	if (rc)
		msim_cli_die("%s: %s", path, msim_db_errmsg(db));
	if ((r.kind == MSIM_PLOT_CURVE || r.kind == MSIM_PLOT_SEGMENTS) &&
	    nruns > 1)
		msim_cli_die("--kind %s shows one run; give one --run",
			     r.kind == MSIM_PLOT_CURVE ? "curve" : "segments");
	r.runs = runs;
	r.nruns = nruns;
	r.plots_dir = msim_cli_plots_dir();
	if (export && msim_plot_export(db, &r, export, NULL, 0, why,
				       sizeof(why)))
		msim_cli_die("%s", why);
	if (r.out && msim_plot_draw(db, &r, why, sizeof(why)))
		msim_cli_die("%s", why);
	if (r.out)
		printf("plotted %s (%zu run%s)\n", r.out, nruns,
		       nruns == 1 ? "" : "s");
	msim_db_close(db);
	free(runs);
	return 0;
}
