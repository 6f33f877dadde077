/* memsim convert: a trace from one format to another, entry by entry.
 * The passes are lab/convert.c's; here are the options. */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lab/convert.h"
#include "traces/symtrace.h"
#include "traces/trace.h"

static void
usage_convert(FILE *fp)
{
	fprintf(fp,
		"usage: memsim convert [OPTIONS] IN OUT\n"
		"\n"
		"Converts the trace IN (format detected by content) to OUT, "
		"entry by entry.\n"
		"Rows a format cannot hold are dropped (an RMM log keeps "
		"allocs, frees and\n"
		"OOMs).  A partial history's seeded start is written first "
		"(csv, bin; rmm and\n"
		"pickle refuse one).  IN's allocator settings (a recording's "
		"or a snapshot's)\n"
		"are kept in csv, as its first row; another format drops "
		"them, and says so.\n"
		"\n"
		"options:\n"
		"  -t, --to FORMAT         one of");
	/* The formats memsim can write, from the table: they cannot drift. */
	for (const msim_trace_format_t *const *f = msim_trace_formats(); *f;
	     f++)
		if ((*f)->write)
			fprintf(fp, " %s", (*f)->name);
	fprintf(fp, "\n"
		"                          (default: by OUT's extension, else "
		"csv)\n"
		"      --device N          snapshots: the device_traces index to "
		"read\n"
		"      --at NAME=VALUE     IN is a symbolic trace (memsim record "
		"--symbolic):\n"
		"                          write it instantiated at VALUE, as "
		"CSV\n"
		"      --repeat K          write IN K times; each pass moves the "
		"addresses above\n"
		"                          the previous pass's and continues the "
		"clock (for large\n"
		"                          benchmark traces)\n"
		"  -h, --help              this help\n"
		"\n"
		"formats:\n");
	for (const msim_trace_format_t *const *f = msim_trace_formats(); *f;
	     f++)
		fprintf(fp, "  %-8s %-14s %s\n", (*f)->name, (*f)->exts,
			(*f)->summary);
}

/* --at NAME=VALUE: the symbolic trace in instantiated into out
 * (traces/symtrace.h). */
static int
convert_at(const char *at, const char *in, const char *out,
	   const msim_trace_format_t *to, uint64_t repeat)
{
	const char *eq = strchr(at, '=');
	if (!eq || eq == at)
		msim_cli_die("--at %s: not NAME=VALUE", at);
	if ((to && strcmp(to->name, "csv") != 0) || repeat != 1)
		msim_cli_die("--at writes one CSV trace (no --to other than "
			     "csv, no --repeat)");
	long v = (long)msim_cli_uint("--at", eq + 1, 0, LONG_MAX);
	msim_symtrace_info_t info;
	char why[1024];
	int rc = msim_symtrace_probe(in, &info, why, sizeof(why));
	if (rc == 0)
		msim_cli_die("%s: not a symbolic trace (memsim record "
			     "--symbolic writes them)", in);
	if (rc < 0)
		msim_cli_die("%s", why);
	if (strlen(info.name) != (size_t)(eq - at) ||
	    strncmp(info.name, at, (size_t)(eq - at)) != 0)
		msim_cli_die("--at %s: %s's symbol is %s", at, in, info.name);
	msim_cli_output("OUT", out);
	if (msim_symtrace_instantiate(in, v, out, why, sizeof(why)))
		msim_cli_die("%s", why);
	printf("%s -> %s: %s=%ld (the trace holds for %ld..%ld)\n", in, out,
	       info.name, v, info.lo, info.hi);
	return 0;
}

int
msim_cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"to", required_argument, NULL, 't'},
		{"device", required_argument, NULL, 'D'},
		{"repeat", required_argument, NULL, 'r'},
		{"at", required_argument, NULL, 'a'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const msim_trace_format_t *to = NULL;
	msim_trace_options_t opt = {0};
	uint64_t repeat = 1;
	const char *at = NULL;
	int c;
	while ((c = msim_cli_getopt(argc, argv, "t:h", longopts)) != -1) {
		switch (c) {
		case 't':
			if (!(to = msim_trace_format_find(optarg)))
				msim_cli_die("--to: unknown format '%s'", optarg);
			if (!to->write)
				msim_cli_die("--to: memsim cannot write %s traces",
				    optarg);
			break;
		case 'D': opt.device1 = msim_cli_device1(optarg); break;
		case 'r':
			repeat = msim_cli_uint("--repeat", optarg, 1,
					       UINT32_MAX);
			break;
		case 'a': at = optarg; break;
		case 'h': usage_convert(stdout); return 0;
		default: usage_convert(stderr); return 2;
		}
	}
	if (optind != argc - 2) {
		usage_convert(stderr);
		return 2;
	}
	if (at)
		return convert_at(at, argv[optind], argv[optind + 1], to,
				  repeat);
	msim_convert_spec_t spec = {
		.in = argv[optind], .out = argv[optind + 1], .to = to,
		.opt = &opt, .repeat = repeat,
	};
	msim_convert_result_t res;
	char why[1024];
	msim_cli_output("OUT", spec.out);
	if (msim_convert_run(&spec, &res, why, sizeof(why)))
		msim_cli_die("%s", why);
	printf("%s -> %s: %" PRIu64 " entries (%s -> %s)\n", spec.in, spec.out,
	       res.entries, res.from, res.to);
	if (res.dropped_conf[0])
		fprintf(stderr, "memsim convert: %s: its allocator settings "
			"\"%s\" are not kept (%s cannot hold them; a replay "
			"takes them with -c)\n", spec.out, res.dropped_conf,
			res.to);
	return 0;
}
