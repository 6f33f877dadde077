/* memsim convert: a trace from one format to another, entry by entry. */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/file.h"
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
		"OOMs).\n"
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

int
msim_cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"to", required_argument, NULL, 't'},
		{"device", required_argument, NULL, 'D'},
		{"repeat", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const msim_trace_format_t *to = NULL;
	msim_trace_options_t opt = {0};
	uint64_t repeat = 1;
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
		case 'h': usage_convert(stdout); return 0;
		default: usage_convert(stderr); return 2;
		}
	}
	if (optind != argc - 2) {
		usage_convert(stderr);
		return 2;
	}
	const char *in = argv[optind], *out = argv[optind + 1];
	char why[1024];
	msim_trace_writer_t *w;
	if (msim_same_file(in, out))
		msim_cli_die("%s: is the input trace; write to another file",
			     out);
	msim_cli_output("OUT", out);
	if (msim_trace_writer_open(out, to, &w, why, sizeof(why)))
		msim_cli_die("%s", why);
	/* On any error below: the output's old content stays. */
#define CONVERT_DIE(...) \
	do { \
		msim_trace_writer_abort(w); \
		msim_cli_die(__VA_ARGS__); \
	} while (0)
	uint64_t entries = 0, lo = UINT64_MAX, hi = 0, t_lo = UINT64_MAX;
	uint64_t t_hi = 0, addr_step = 0, time_step = 0;
	const char *from = "?";
	for (uint64_t pass = 0; pass < repeat; pass++) {
		msim_trace_t *t;
		if (msim_trace_open(in, &opt, &t, why, sizeof(why)))
			CONVERT_DIE("%s", why);
		from = msim_trace_format_name(t);
		msim_trace_writer_set_tags(w, t); /* categories and sites */
		msim_entry_t e;
		int rc;
		while ((rc = msim_trace_next_entry(t, &e)) == 1) {
			if (pass == 0) {
				if (e.addr && e.action != MSIM_ACT_OOM) {
					lo = e.addr < lo ? e.addr : lo;
					hi = e.addr + e.size > hi
						? e.addr + e.size : hi;
				}
				t_lo = e.time_us < t_lo ? e.time_us : t_lo;
				t_hi = e.time_us > t_hi ? e.time_us : t_hi;
			}
			if (e.addr && e.action != MSIM_ACT_OOM)
				e.addr += pass * addr_step;
			e.time_us += pass * time_step;
			if (msim_trace_writer_put(w, &e))
				CONVERT_DIE("%s", msim_trace_writer_errmsg(w));
			entries++;
		}
		if (rc < 0)
			CONVERT_DIE("%s", msim_trace_errmsg(t));
		msim_trace_writer_set_tags(w, NULL);
		msim_trace_close(t);
		if (pass == 0 && hi > lo) {
			/* Each pass: fresh addresses above the previous
			 * pass's (2 MiB aligned), and a clock that goes on. */
			uint64_t align = 2u << 20;
			addr_step = (hi - lo + align + align - 1) & ~(align - 1);
			time_step = t_hi - t_lo + 1;
			if (repeat > 1 && (UINT64_MAX - hi) / addr_step < repeat)
				CONVERT_DIE("--repeat: %" PRIu64 " passes run out "
				    "of addresses", repeat);
		}
	}
	const char *fmt = msim_trace_writer_format(w)->name;
#undef CONVERT_DIE
	if (msim_trace_writer_close(w, why, sizeof(why)))
		msim_cli_die("%s", why);
	printf("%s -> %s: %" PRIu64 " entries (%s -> %s)\n", in, out, entries,
	       from, fmt);
	return 0;
}
