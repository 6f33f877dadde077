/*
 * memsim sweep: many settings over traces and policies, into one database.
 * With a command after "--" (memsim sweep --grid batch=2,4 ... -- python3
 * SCRIPT {batch}), the grid's recording names (those in the command as
 * {NAME}, and the recorder's own options: checkpoint, amp, ...) make one
 * recording each (memsim record, cached by command and options), and
 * the other names the allocator settings every recording replays.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "sim/device.h"
#include "cli/opts.h"
#include "lab/record.h"
#include "lab/sweep.h"
#include "policies/registry.h"

static const msim_cli_opt_t sweep_opts[] = {
	{0, false, NULL, NULL,
	 "settings (combined: file lines x grid, per trace, policy and "
	 "cap):\n"},
	{'g', true, "grid", "KEY=V1,V2,...",
	 "one axis of a cartesian grid (repeatable); KEY is a\n"
	 "parameter of the policy (as in --alloc-conf), or\n"
	 "cap, addresses, policy; or a strategy (dtype,\n"
	 "checkpoint) or model key (batch, seq, ...) of a\n"
	 "MODEL; dtype on a recording is the dtype transform"},
	{'s', true, "settings", "FILE",
	 "one setting a line, \"key:value,key:value\" (# comments)"},
	{'R', false, "random", "N",
	 "draw N settings from the grid instead (a value LO..HI\n"
	 "draws from the range)"},
	{'S', false, "seed", "S",
	 "seed of the draws (default 1; stored with the sweep)"},
	{'p', true, "policy", "NAME",
	 "policy (repeatable; default " MSIM_POLICY_DEFAULT ")"},
	{'C', false, "cap", "BYTES[,BYTES]", "per-process cap(s) (repeatable)"},
	{'K', false, "capacity", "BYTES|NAME",
	 "device memory (default the H200's)"},
	{'D', false, "device", "NAME", "a GPU of memsim devices: the "
	 "allocator gets its\nmemory less its context"},
	{'X', false, "context-bytes", "B", "CUDA context and libraries, off "
	 "the capacity\n(default --device's, else 0)"},
	{'A', false, "addresses", "MODE", "model (default) or trace"},
	{0, false, NULL, NULL, "\nrunning:\n"},
	{'d', true, "db", "FILE", "the results database (required)"},
	{'j', true, "jobs", "N",
	 "worker processes (default: the number of cores); over\n"
	 "a command, also the recordings made at once"},
	{'Y', false, "symbolic", "NAME",
	 "over a command: record the {NAME} of the grid\n"
	 "symbolic (memsim record --symbolic, twice to check)\n"
	 "and instantiate its values where that holds; the\n"
	 "rest recorded one by one (docs/symbolic-sizes.md)"},
	{'T', false, "timeout", "SECONDS",
	 "over a command: stop a recording that runs longer\n"
	 "(a failure at its values)"},
	{'f', false, "force", NULL,
	 "run settings already stored again, replacing them"},
	{'H', false, "shard", "I/N",
	 "run only the I-th of N slices (1 <= I <= N); merge\n"
	 "the shards' databases with `memsim merge`"},
	{'l', false, "list", NULL,
	 "print this shard's settings and stop (trace, policy,\n"
	 "canonical parameters, cap, addresses, strategy;\n"
	 "tab-separated)"},
	{'q', true, "quiet", NULL, "no progress line and no summary"},
	MSIM_CLI_OPT_HELP,
	{0},
};

static const msim_cli_cmd_t sweep_cmd = {
	"usage: memsim sweep [OPTIONS] --db FILE TRACE|MODEL...\n"
	"       memsim sweep [OPTIONS] --db FILE --grid NAME=V1,V2,... "
	"[NAME=...] --\n"
	"                    python3 SCRIPT ... {NAME} ...\n"
	"\n"
	"MODEL is a model spec, \"model:arch=gpt2,batch=8,seq=1024,steps=3\" "
	"(the options\n"
	"of `memsim gen model` as key=value), generated in memory for each "
	"setting.\n"
	"Runs every setting over every TRACE and policy and stores each result "
	"once in\n"
	"the database.  Settings already there are skipped, so a killed sweep "
	"resumes\n"
	"where it stopped when run again.\n"
	"\n",
	sweep_opts, 28,
	"\n"
	"With a command after --, each combination of the grid's recording "
	"names (a\n"
	"{NAME} of the command, or a `memsim record` option: amp, checkpoint, "
	"device,\n"
	"world-size, rank, dynamic-fraction, item-int) is recorded once (kept "
	"in\n"
	"DB.recordings/ and reused), and every setting of the other names "
	"replays it;\n"
	"words NAME=V1,... before -- are grid axes too.  --symbolic NAME records "
	"{NAME}\n"
	"twice with memsim record --symbolic and instantiates its values "
	"where that\n"
	"holds (docs/symbolic-sizes.md).\n",
	false,
};

typedef msim_cli_progress_t progress_t;

static void
sweep_error(void *ctx, const msim_setting_t *s, const char *msg)
{
	progress_t *p = ctx;
	if (s)
		fprintf(stderr, "%smemsim sweep: %s, %s%s%s: %s\n",
			p->drawn ? "\n" : "", s->spec.trace, s->spec.policy,
			*s->conf ? " " : "", s->conf, msg);
	else
		fprintf(stderr, "%smemsim sweep: %s\n", p->drawn ? "\n" : "",
			msg);
}

/* Appends to a growing array of strings. */
static void
push(const char ***v, size_t *n, const char *s)
{
	const char **nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv)
		msim_cli_die("out of memory");
	nv[(*n)++] = s;
	*v = nv;
}

/* What the options ask for besides the sweep itself. */
typedef struct sweep_opts_s {
	const char **grid, **policies;
	size_t ngrid, npolicies, ncaps;
	uint64_t *caps;
	const char *db;
	long jobs;
	unsigned timeout; /* --timeout: seconds a recording may run */
	const char *symbolic; /* --symbolic NAME */
	int force, list, quiet;
	msim_cli_gpu_t gpu; /* --device, --capacity, --context-bytes */
} sweep_opts_t;

/* --cap BYTES[,BYTES...] */
static void
sweep_caps(sweep_opts_t *o, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		msim_cli_die("out of memory");
	for (char *t = strtok_r(copy, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		uint64_t *nc = realloc(o->caps, (o->ncaps + 1) * sizeof(*nc));
		if (!nc)
			msim_cli_die("out of memory");
		o->caps = nc;
		o->caps[o->ncaps++] = msim_cli_bytes("--cap", t);
	}
	free(copy);
}

/* One option of the sweep into spec or o. */
static void
sweep_opt(int c, msim_sweep_spec_t *spec, sweep_opts_t *o)
{
	int i, n, len = 0;
	switch (c) {
	case 'g': push(&o->grid, &o->ngrid, optarg); break;
	case 's': spec->settings_file = optarg; break;
	case 'R':
		spec->random = msim_cli_uint("--random", optarg, 1,
					     UINT32_MAX);
		break;
	case 'S':
		spec->seed = msim_cli_uint("--seed", optarg, 0, UINT64_MAX);
		break;
	case 'p': push(&o->policies, &o->npolicies, optarg); break;
	case 'C': sweep_caps(o, optarg); break;
	case 'K': msim_cli_gpu_capacity(&o->gpu, optarg); break;
	case 'D': msim_cli_gpu_device(&o->gpu, optarg, false); break;
	case 'X': msim_cli_gpu_context(&o->gpu, optarg); break;
	case 'A': spec->addresses = msim_cli_addresses(optarg); break;
	case 'd': o->db = optarg; break;
	case 'j': o->jobs = msim_cli_jobs(optarg); break;
	case 'T':
		o->timeout = (unsigned)msim_cli_uint("--timeout", optarg, 1,
						     1u << 30);
		break;
	case 'Y':
		if (o->symbolic && strcmp(o->symbolic, optarg))
			msim_cli_die("--symbolic: one name at a time (%s and "
				     "%s given): the recorder makes one "
				     "setting symbolic", o->symbolic, optarg);
		o->symbolic = optarg;
		break;
	case 'f': o->force = 1; break;
	case 'H':
		if (sscanf(optarg, "%d/%d%n", &i, &n, &len) != 2 ||
		    optarg[len] || n < 1 || i < 1 || i > n)
			msim_cli_die("--shard: '%s' is not I/N with 1 <= I <= "
				     "N", optarg);
		spec->shard_index = i;
		spec->shard_count = n;
		break;
	case 'l': o->list = 1; break;
	case 'q': o->quiet = 1; break;
	}
}

/* Reads the options.  Returns -1 to go on, else the exit status.  rec:
 * a command follows (argv ends before its "--"); the words left are grid
 * axes, not traces. */
static int
sweep_parse(int argc, char **argv, int rec, msim_sweep_spec_t *spec,
	    sweep_opts_t *o)
{
	int c;
	while ((c = msim_cli_next(&sweep_cmd, argc, argv)) != -1)
		sweep_opt(c, spec, o);
	/* The context holds its bytes outside the allocator, which gets
	 * the rest (as lab/job.c gives one process). */
	msim_cli_gpu_done(&o->gpu);
	if (o->gpu.capacity || o->gpu.context)
		spec->capacity = (o->gpu.capacity ? o->gpu.capacity
						  : MSIM_H200_BYTES) -
				 o->gpu.context;
	if (!rec)
		msim_cli_operands(&sweep_cmd, argc, 1, argc);
	if (!o->db && !o->list)
		msim_cli_die("--db FILE is required (the results go there)");
	if (rec) {
		for (int i = optind; i < argc; i++) {
			if (!strchr(argv[i], '='))
				msim_cli_die("'%s': with a command after --, "
					     "the words before it are grid "
					     "axes NAME=V1,V2,... (no "
					     "traces)", argv[i]);
			push(&o->grid, &o->ngrid, argv[i]);
		}
	} else {
		spec->traces = (const char *const *)argv + optind;
		spec->ntraces = (size_t)(argc - optind);
	}
	spec->grid = o->grid;
	spec->ngrid = o->ngrid;
	spec->policies = o->policies;
	spec->npolicies = o->npolicies;
	spec->caps = o->caps;
	spec->ncaps = o->ncaps;
	return -1;
}

/* A recording's progress or failure (lab/record.h). */
static void
rec_note(void *ctx, int what, const char *line)
{
	const sweep_opts_t *o = ctx;
	if (what == MSIM_RECSWEEP_FAILED || !o->quiet)
		fprintf(stderr, "memsim sweep: %s\n", line);
}

/* Makes every recording of the grid (lab/record.h), into spec's traces. */
static msim_recsweep_t *
rec_make(char *const *cmd, int ncmd, sweep_opts_t *o, msim_sweep_spec_t *spec)
{
	msim_recsweep_spec_t rs = {
		.cmd = cmd, .ncmd = ncmd, .db = o->db, .force = o->force,
		.scratch = o->db ? NULL : msim_cli_scratch("memsim-sweep"),
		.rec = {.dirs = msim_cli_record_dirs(), .quiet = true,
			.timeout_s = o->timeout},
		.jobs = (int)o->jobs, .note = rec_note, .ctx = o,
		.symbolic = o->symbolic,
	};
	msim_recsweep_t *r;
	char why[2048];
	if (msim_recsweep_make(&rs, o->grid, &o->ngrid, &r, why, sizeof(why)))
		msim_cli_die("%s", why);
	spec->traces = msim_recsweep_paths(r);
	spec->ntraces = msim_recsweep_count(r);
	spec->labels = msim_recsweep_labels(r);
	spec->origins = msim_recsweep_origins(r);
	spec->grid = o->grid;
	spec->ngrid = o->ngrid;
	return r;
}

static void
sweep_list(const msim_sweep_t *sw)
{
	for (size_t i = 0; i < msim_sweep_count(sw); i++) {
		const msim_setting_t *s = msim_sweep_setting(sw, i);
		printf("%s\t%s\t%s\t%" PRIu64 "\t%s\t%s\n",
		       s->spec.model_spec ? s->spec.model_spec : s->spec.trace,
		       s->spec.policy, s->params, s->spec.cap,
		       s->spec.addresses,
		       s->spec.strategy ? s->spec.strategy : "");
	}
}

static void
sweep_summary(const msim_sweep_t *sw, const msim_sweep_spec_t *spec,
	      const msim_sweep_result_t *res, const char *db)
{
	double secs = res->wall_ms / 1e3;
	printf("sweep %" PRId64 ": %zu settings", res->sweep_id, res->total);
	if (res->total != msim_sweep_total(sw))
		printf(" (shard %d/%d of %zu)", spec->shard_index,
		       spec->shard_count, msim_sweep_total(sw));
	printf(": %zu run, %zu already stored, %zu failed in %.2f s",
	       res->ran, res->skipped, res->failed, secs);
	if (res->retried)
		printf(" (%zu retried: stored as failed by an earlier run; "
		       "`memsim report --sweep %" PRId64 "` lists them)",
		       res->retried, res->sweep_id);
	if (res->ran && secs > 0)
		printf(" (%.1f settings/s)", (double)res->ran / secs);
	printf("; database %s\n", db);
}

int
msim_cmd_sweep(int argc, char **argv)
{
	msim_sweep_spec_t spec = {.seed = 1};
	sweep_opts_t o = {.jobs = sysconf(_SC_NPROCESSORS_ONLN)};
	msim_recsweep_t *rec = NULL;
	char *const *cmd = NULL;
	int recmode = 0, ncmd = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			recmode = 1;
			cmd = argv + i + 1;
			ncmd = argc - i - 1;
			argc = i;
			break;
		}
	}
	int rc = sweep_parse(argc, argv, recmode, &spec, &o);
	if (rc >= 0)
		return rc;
	if (o.timeout && !recmode)
		msim_cli_die("--timeout: only over a command (memsim sweep "
			     "... -- python3 SCRIPT ...): no trace is recorded");
	if (o.symbolic && !recmode)
		msim_cli_die("--symbolic: only over a command (memsim sweep "
			     "--symbolic NAME ... -- python3 SCRIPT {NAME}): "
			     "no trace is recorded");
	if (recmode)
		rec = rec_make(cmd, ncmd, &o, &spec);
	char why[2048];
	msim_sweep_t *sw;
	/* Every setting will run: the traces are read while they are
	 * planned (lab/sweep.h). */
	spec.preload = !o.list && o.db && (o.force || access(o.db, F_OK));
	if (msim_sweep_plan(&spec, &sw, why, sizeof(why)))
		msim_cli_die("%s", why);
	if (*msim_sweep_note(sw))
		fprintf(stderr, "memsim sweep: %s\n", msim_sweep_note(sw));
	msim_sweep_result_t res = {0};
	if (o.list) {
		sweep_list(sw);
	} else {
		progress_t pr = {.what = "sweep",
				 .on = !o.quiet && isatty(STDERR_FILENO)};
		msim_sweep_opts_t opts = {
			.db_path = o.db, .jobs = (int)o.jobs,
			.force = o.force, .progress = msim_cli_progress,
			.error = sweep_error, .ctx = &pr,
		};
		rc = msim_sweep_exec(sw, &opts, &res, why, sizeof(why));
		if (pr.drawn)
			fputc('\n', stderr);
		if (rc)
			msim_cli_die("%s", why);
		if (!o.quiet)
			sweep_summary(sw, &spec, &res, o.db);
	}
	msim_sweep_destroy(sw);
	free(o.grid);
	free(o.policies);
	free(o.caps);
	rc = res.failed || (rec && msim_recsweep_failed(rec)) ? 1 : 0;
	msim_recsweep_destroy(rec);
	return rc;
}
