/*
 * memsim explain: where the memory goes at peak reserved and at an
 * out-of-memory (lab/explain.h does the work; this file prints it), and
 * memsim summary: torch.cuda.memory_summary()'s table of a replay.
 */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lab/explain.h"
#include "lab/print.h"
#include "policies/registry.h"
#include "sim/device.h"
#include "sim/units.h"

static void
usage_explain(FILE *fp, const char *name)
{
	bool summary = !strcmp(name, "summary");
	if (summary)
		fprintf(fp,
			"usage: memsim summary [OPTIONS] TRACE|MODEL\n"
			"\n"
			"Replays TRACE and prints torch.cuda.memory_summary()'s "
			"table (PyTorch 2.11's\n"
			"layout) of the statistics at the end of the replay "
			"(at the OOM if one),\n"
			"or with --at peak where reserved bytes first reached "
			"their peak.\n");
	else
		fprintf(fp,
			"usage: memsim explain [OPTIONS] TRACE|MODEL\n"
			"\n"
			"Replays TRACE and says where the memory goes when "
			"reserved bytes reach their\n"
			"peak, and at an out-of-memory: reserved = allocated + "
			"pending + free pieces of\n"
			"split segments (fragmentation) + whole free segments, "
			"per pool; allocated\n"
			"bytes by category and by call site (from the trace's "
			"category/site columns\n"
			"or a snapshot's stack frames); at an OOM, PyTorch's "
			"message for it, then\n"
			"replays under expandable_segments, max_split_size_mb, "
			"garbage_collection_threshold\n"
			"and the smallest cap that fits.\n");
	fprintf(fp,
		"\n"
		"options:\n"
		"  -p, --policy NAME       policy (default pytorch)\n"
		"  -c, --alloc-conf STR    parameters in PYTORCH_CUDA_ALLOC_CONF "
		"syntax\n"
		"      --cap BYTES         per-process cap (suffixes: 16GiB, "
		"512MiB)\n"
		"      --fraction F        the same cap as a fraction of the "
		"capacity\n"
		"      --capacity BYTES|NAME  device memory (default the "
		"H200's, %" PRIu64 ")\n"
		"      --addresses MODE    model (default) or trace\n"
		"      --requests-only     replay only alloc and free_completed "
		"rows\n"
		"      --recording         reproduce the recording itself, as "
		"run --recording:\n"
		"                          hidden empty_cache() calls replayed, "
		"--addresses trace\n"
		"      --device NAME       a GPU of memsim devices: its capacity "
		"and context\n"
		"      --device N          snapshots: the device_traces index\n",
		MSIM_H200_BYTES);
	if (summary)
		fprintf(fp,
			"      --at WHEN           end (default) or peak\n"
			"      --abbreviated       memory_summary(abbreviated="
			"True): no pool rows\n");
	else
		fprintf(fp,
			"      --top N             call sites to list "
			"(default 10)\n"
			"      --context-bytes B   CUDA context and libraries' "
			"memory, for the\n"
			"                          nvidia-smi view (default "
			"--device's, else 0)\n"
			"      --no-alternatives   at an OOM, do not replay "
			"other settings\n"
			"      --summary           also print memory_summary() "
			"at the peak\n"
			"      --plot OUT          draw the breakdown as stacked "
			"bars (.png, .svg, .pdf)\n"
			"      --export CSV        write the breakdown's data "
			"(MiB) as CSV\n"
			"      --title TEXT        the plot's title\n"
			"      --json              one JSON object\n");
	fprintf(fp,
		"  -q, --quiet             no warnings about settings that "
		"cannot act\n"
		"  -h, --help              this help\n");
}

static const char *
fb(uint64_t v, char *buf, size_t n)
{
	return msim_format_bytes(v, buf, n);
}

static void
print_moment(const msim_explain_t *ex, const msim_explain_moment_t *m)
{
	char a[32], b[32], c[32];
	static const char *const rows[] = {
		"reserved", "allocated", "pending free",
		"inactive split (fragmentation)", "whole free segments",
	};
	const uint64_t *v[] = {m->reserved, m->allocated, m->pending,
			       m->split_free, m->whole_free};
	printf("  %-32s %12s %12s %12s\n", "", "all", "large pool",
	       "small pool");
	for (int r = 0; r < 5; r++) {
		if (r == 2 && !m->pending[MSIM_POOL_ALL])
			continue;
		printf("  %-32s %12s %12s %12s\n", rows[r],
		       fb(v[r][MSIM_POOL_ALL], a, sizeof(a)),
		       fb(v[r][MSIM_POOL_LARGE], b, sizeof(b)),
		       fb(v[r][MSIM_POOL_SMALL], c, sizeof(c)));
	}
	uint64_t alloc = m->allocated[MSIM_POOL_ALL];
	printf("  allocated by category%s:\n",
	       ex->tagged ? "" : " (the trace carries no tags)");
	for (int k = 1; k <= MSIM_NCAT + 1; k++) {
		int cat = k % MSIM_NCAT; /* untagged, then the start, last */
		uint64_t bytes = m->cat_bytes[cat], n = m->cat_count[cat];
		const char *name = msim_category_name(cat);
		/* The seeded blocks (untagged: their snapshot frames give a
		 * site, not a category) are named for what they are. */
		if (k == MSIM_NCAT) {
			bytes -= m->before_bytes;
			n -= m->before_count;
		} else if (k == MSIM_NCAT + 1) {
			bytes = m->before_bytes;
			n = m->before_count;
			name = "before history";
		}
		if (!n)
			continue;
		printf("    %-14s %10s %6.2f%% %8" PRIu64 " blocks\n", name,
		       fb(bytes, a, sizeof(a)),
		       alloc ? 100.0 * (double)bytes / (double)alloc : 0.0,
		       n);
	}
	if (m->before_count)
		printf("  (before history: blocks live when the recorded "
		       "history began, rebuilt from the\n  snapshot's "
		       "state: where they are, and where they were allocated "
		       "when its blocks\n  have frames)\n");
	if (!ex->tagged || !m->nsites)
		return;
	printf("  top call sites (%zu of %zu live):\n", m->nsites,
	       m->nsites_live);
	for (size_t i = 0; i < m->nsites; i++) {
		const msim_explain_site_t *s = &m->sites[i];
		printf("    %12s %6" PRIu64 " x  %-10s %s\n",
		       fb(s->bytes, a, sizeof(a)), s->count,
		       msim_explain_site_category(s),
		       *s->site ? s->site : "(no site)");
	}
}

/* The moment allocated bytes first peaked, when not that of reserved. */
static void
print_peak_alloc(const msim_explain_t *ex)
{
	char a[32];
	const msim_explain_moment_t *m = &ex->peak_alloc;
	if (!ex->peak_alloc_apart)
		return;
	printf("\nAt peak allocated, %s (%" PRIu64 " bytes), after %" PRIu64
	       " requests:\n", fb(m->allocated[MSIM_POOL_ALL], a, sizeof(a)),
	       m->allocated[MSIM_POOL_ALL], m->request);
	print_moment(ex, m);
}

static void
print_text(const msim_explain_t *ex, const char *trace, bool summary)
{
	char a[32], b[32], c[32];
	printf("trace      %s\n", trace);
	printf("policy     %s%s%s\n", ex->policy, *ex->params ? " " : "",
	       ex->params);
	if (ex->cap)
		printf("cap        %s (%" PRIu64 " bytes)\n",
		       fb(ex->cap, a, sizeof(a)), ex->cap);
	const msim_explain_moment_t *m = &ex->peak;
	printf("\nAt peak reserved, %s (%" PRIu64 " bytes), after %"
	       PRIu64 " requests:\n", fb(m->reserved[MSIM_POOL_ALL], a, sizeof(a)),
	       m->reserved[MSIM_POOL_ALL], m->request);
	print_moment(ex, m);
	uint64_t smi = m->reserved[MSIM_POOL_ALL] + ex->context_bytes;
	if (ex->context_bytes)
		printf("  nvidia-smi would show %s: reserved %s + CUDA context "
		       "and libraries %s\n", fb(smi, a, sizeof(a)),
		       fb(m->reserved[MSIM_POOL_ALL], b, sizeof(b)),
		       fb(ex->context_bytes, c, sizeof(c)));
	else
		printf("  nvidia-smi would show %s plus the CUDA context and "
		       "libraries (give --context-bytes)\n",
		       fb(smi, a, sizeof(a)));
	if (summary) {
		char buf[8192];
		msim_memory_summary(&m->st, 0, false, buf, sizeof(buf));
		printf("\n%s", buf);
	}
	print_peak_alloc(ex);
	if (!ex->oom) {
		printf("\nNo out-of-memory: %" PRIu64 " requests served.\n",
		       ex->sum.requests);
		return;
	}
	char msg[2048];
	msim_explain_oom_message(ex, msg, sizeof(msg));
	/* A recorded OOM (the program went on) leaves sum.oom_request at
	 * -1; the moment knows its place. */
	bool recorded = ex->sum.oom_request < 0;
	printf("\nOut of memory at request %" PRId64 "%s (%" PRIu64
	       " bytes asked):\n  %s\n", recorded
	       ? (int64_t)ex->at_oom.request - 1 : ex->sum.oom_request,
	       recorded ? ", as recorded" : "", ex->oom_size, msg);
	printf("\nAt the out-of-memory, after PyTorch freed what it could:\n");
	print_moment(ex, &ex->at_oom);
	if (!ex->nalts && !ex->min_cap_runs)
		return;
	printf("\nmemsim replayed the trace under other settings:\n");
	for (size_t i = 0; i < ex->nalts; i++) {
		const msim_explain_alt_t *al = &ex->alts[i];
		if (al->fits)
			printf("  %-36s fits: peak reserved %s\n", al->what,
			       fb(al->peak_reserved, a, sizeof(a)));
		else if (al->oom_request >= 0)
			printf("  %-36s out of memory at request %" PRId64
			       "\n", al->what, al->oom_request);
		else
			printf("  %-36s out of memory where the recording "
			       "did\n", al->what);
	}
	if (ex->min_cap)
		printf("  %-36s %s (%" PRIu64 " bytes; %d replays)\n",
		       "smallest cap it fits under", fb(ex->min_cap, a,
							sizeof(a)),
		       ex->min_cap, ex->min_cap_runs);
	else if (ex->min_cap_runs)
		printf("  %-36s none: it does not fit on the device\n",
		       "smallest cap it fits under");
	printf("  (a smaller batch is a different trace: record it, or "
	       "generate it with memsim gen model)\n");
}

/* --json: the figures memsim_explain() gives too, nested at their dots. */
static void
print_json(const msim_explain_t *ex, const char *trace)
{
	msim_figs_t f = {0};
	if (msim_explain_figs(&f, ex, trace))
		msim_cli_die("out of memory");
	msim_print_json_tree(stdout, &f);
	msim_figs_clear(&f);
}

void
msim_cli_warn_settings(const msim_policy_ops_t *ops, const msim_params_t *pv,
		       bool has_cap)
{
	char warn[4][256];
	size_t n = msim_explain_warnings(ops, pv, has_cap, warn, 4);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "memsim: warning: %s\n", warn[i]);
}

void
msim_cli_explain(const msim_explain_config_t *cfg)
{
	msim_explain_t *ex;
	char why[1024];
	if (msim_explain_run(cfg, &ex, why, sizeof(why)))
		msim_cli_die("%s", why);
	printf("\n");
	print_text(ex, cfg->spec.trace, false);
	msim_explain_destroy(ex);
}

/* What the options ask for besides the configuration itself. */
typedef struct explain_opts_s {
	const char *name;            /* "explain" or "summary" */
	const char *policy, *conf;
	bool json, quiet, with_summary, at_peak, abbreviated, requests_only;
	const char *plot, *export, *title;
	msim_cli_gpu_t gpu; /* --device, --capacity, --context-bytes */
} explain_opts_t;

static const struct option explain_longopts[] = {
	{"policy", required_argument, NULL, 'p'},
	{"alloc-conf", required_argument, NULL, 'c'},
	{"cap", required_argument, NULL, 'C'},
	{"fraction", required_argument, NULL, 'F'},
	{"capacity", required_argument, NULL, 'K'},
	{"addresses", required_argument, NULL, 'A'},
	{"requests-only", no_argument, NULL, 'R'},
	{"recording", no_argument, NULL, 'r'},
	{"device", required_argument, NULL, 'D'},
	{"top", required_argument, NULL, 't'},
	{"context-bytes", required_argument, NULL, 'X'},
	{"no-alternatives", no_argument, NULL, 'N'},
	{"summary", no_argument, NULL, 'S'},
	{"at", required_argument, NULL, 'a'},
	{"abbreviated", no_argument, NULL, 'b'},
	{"json", no_argument, NULL, 'j'},
	{"plot", required_argument, NULL, 'P'},
	{"output", required_argument, NULL, 'o'},
	{"export", required_argument, NULL, 'E'},
	{"title", required_argument, NULL, 'T'},
	{"kind", required_argument, NULL, 'k'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* One option into cfg or o.  Returns -1 to go on, else the exit status. */
static int
explain_opt(int c, msim_explain_config_t *cfg, explain_opts_t *o)
{
	msim_job_spec_t *spec = &cfg->spec;
	switch (c) {
	case 'p': o->policy = optarg; break;
	case 'c': o->conf = optarg; break;
	case 'C': spec->cap = msim_cli_bytes("--cap", optarg); break;
	case 'K': msim_cli_gpu_capacity(&o->gpu, optarg); break;
	case 'F': spec->fraction = msim_cli_fraction(optarg); break;
	case 'A': spec->addresses = msim_cli_addresses(optarg); break;
	case 'R': o->requests_only = true; break;
	case 'r':
		spec->recording = true;
		spec->addresses = "trace";
		break;
	case 'D': msim_cli_gpu_device(&o->gpu, optarg, true); break;
	case 't':
		cfg->top = (size_t)msim_cli_uint("--top", optarg, 1, 1000000);
		break;
	case 'X': msim_cli_gpu_context(&o->gpu, optarg); break;
	case 'N': cfg->alternatives = false; break;
	case 'S': o->with_summary = true; break;
	case 'a':
		if (!strcmp(optarg, "peak"))
			o->at_peak = true;
		else if (strcmp(optarg, "end"))
			msim_cli_die("--at: '%s' is not end or peak", optarg);
		break;
	case 'b': o->abbreviated = true; break;
	case 'j': o->json = true; break;
	case 'P': case 'o': o->plot = optarg; break;
	case 'E': o->export = optarg; break;
	case 'T': o->title = optarg; break;
	case 'k':
		if (strcmp(optarg, "breakdown"))
			msim_cli_die("--kind: '%s': memsim plot --kind "
				     "breakdown takes a trace", optarg);
		break;
	case 'q': o->quiet = true; break;
	case 'h': usage_explain(stdout, o->name); return 0;
	default: usage_explain(stderr, o->name); return 2;
	}
	return -1;
}

/* Reads the options and checks the setting (warning of settings that
 * cannot act).  Returns -1 to go on, else the exit status. */
static int
explain_parse(int argc, char **argv, bool plot_only,
	      msim_explain_config_t *cfg, explain_opts_t *o)
{
	msim_job_spec_t *spec = &cfg->spec;
	int c, rc;
	while ((c = msim_cli_getopt(argc, argv, "p:c:o:k:qh",
				    explain_longopts)) != -1)
		if ((rc = explain_opt(c, cfg, o)) >= 0)
			return rc;
	if (optind != argc - 1) {
		usage_explain(stderr, o->name);
		return 2;
	}
	msim_cli_gpu_done(&o->gpu);
	spec->capacity = o->gpu.capacity;
	spec->device1 = o->gpu.device1;
	cfg->context_bytes = o->gpu.context;
	if (plot_only && !o->plot)
		msim_cli_die("--kind breakdown needs -o OUT (.png, .svg, .pdf)");
	if (plot_only)
		cfg->alternatives = false;
	if (spec->cap && spec->fraction)
		msim_cli_die("give --cap or --fraction, not both");
	spec->requests_only = o->requests_only;
	spec->trace = argv[optind];
	msim_cli_not_input("--plot", o->plot, spec->trace, "the input trace");
	msim_cli_not_input("--export", o->export, spec->trace,
			   "the input trace");
	spec->policy = o->policy;
	spec->conf = o->conf;
	const msim_policy_ops_t *ops = msim_policy_find(o->policy);
	if (!ops)
		msim_cli_die("--policy: unknown policy '%s' (see `memsim "
			     "policies`)", o->policy);
	msim_params_t pv;
	if (msim_params_init(&pv, ops->params))
		msim_cli_die("out of memory");
	if (msim_params_parse(&pv, o->conf))
		msim_cli_die("--alloc-conf: %s", pv.errmsg);
	if (!o->quiet)
		msim_cli_warn_settings(ops, &pv,
				       spec->cap || spec->fraction > 0);
	msim_params_clear(&pv);
	return -1;
}

/* --plot and --export: the breakdown's data, and its plot. */
static void
explain_plot(const msim_explain_t *ex, const explain_opts_t *o,
	     const char *trace)
{
	char tmpl[] = "/tmp/memsim-breakdown-XXXXXX", why[1024];
	const char *csv = o->export;
	if (!csv) {
		int fd = mkstemp(tmpl);
		if (fd < 0)
			msim_cli_die("cannot create a temporary file");
		close(fd);
		csv = tmpl;
	}
	char t[3072];
	snprintf(t, sizeof(t), "%s: %s %s", trace, ex->policy, ex->params);
	int rc = msim_explain_plot(ex, csv, o->plot, o->title ? o->title : t,
				   msim_cli_plots_dir(), GNUPLOT_PATH, why,
				   sizeof(why));
	if (!o->export)
		unlink(tmpl);
	if (rc)
		msim_cli_die("--plot: %s", why);
}

static int
cmd_explain_common(int argc, char **argv, bool summary, bool plot_only)
{
	explain_opts_t o = {.name = summary ? "summary" : "explain",
			    .policy = MSIM_POLICY_DEFAULT, .conf = ""};
	msim_explain_config_t cfg = {.alternatives = !summary};
	int rc = explain_parse(argc, argv, plot_only, &cfg, &o);
	if (rc >= 0)
		return rc;
	msim_explain_t *ex;
	char why[1024];
	if (msim_explain_run(&cfg, &ex, why, sizeof(why)))
		msim_cli_die("%s", why);
	if (o.plot || o.export)
		explain_plot(ex, &o, cfg.spec.trace);
	if (plot_only) {
		printf("plotted    %s\n", o.plot);
	} else if (summary) {
		char buf[8192];
		msim_memory_summary(o.at_peak ? &ex->peak.st : &ex->end, 0,
				    o.abbreviated, buf, sizeof(buf));
		fputs(buf, stdout);
	} else if (o.json) {
		print_json(ex, cfg.spec.trace);
	} else {
		print_text(ex, cfg.spec.trace, o.with_summary);
	}
	msim_explain_destroy(ex);
	return 0;
}

int
msim_cmd_explain(int argc, char **argv)
{
	return cmd_explain_common(argc, argv, false, false);
}

int
msim_cli_plot_breakdown(int argc, char **argv)
{
	return cmd_explain_common(argc, argv, false, true);
}

int
msim_cmd_summary(int argc, char **argv)
{
	return cmd_explain_common(argc, argv, true, false);
}
