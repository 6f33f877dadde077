/* memsim merge: combine the databases of sweep shards without duplicates. */
#include <config.h>

#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"
#include "sim/file.h"
#include "sim/results.h"

static const msim_cli_opt_t merge_opts[] = {
	{'q', true, "quiet", NULL, "no summary"},
	MSIM_CLI_OPT_HELP,
	{0},
};

static const msim_cli_cmd_t merge_cmd = {
	"usage: memsim merge [OPTIONS] OUT.db IN.db...\n"
	"\n"
	"Copies into OUT.db (created if needed) every run of the IN databases "
	"whose\n"
	"setting OUT.db does not hold yet, with its statistics, timeline and "
	"segment\n"
	"events, and the sweeps with their runs.  Each IN is read only and "
	"merged in\n"
	"one transaction: a failure leaves OUT.db as it was before that file.\n"
	"\n"
	"options:\n",
	merge_opts, 16, NULL, false,
};

int
msim_cmd_merge(int argc, char **argv)
{
	int c, quiet = 0;
	while ((c = msim_cli_next(&merge_cmd, argc, argv)) != -1)
		quiet |= c == 'q';
	msim_cli_operands(&merge_cmd, argc, 2, INT_MAX);
	const char *out = argv[optind];
	for (int i = optind + 1; i < argc; i++)
		if (!strcmp(argv[i], out) || msim_same_file(argv[i], out))
			msim_cli_die("%s: cannot merge a database into itself",
				     out);
	msim_cli_output("OUT.db", out);
	char why[1024];
	msim_db_t *db;
	if (msim_db_open(out, &db, why, sizeof(why)))
		msim_cli_die("%s", why);
	int64_t added = 0, skipped = 0;
	for (int i = optind + 1; i < argc; i++) {
		int64_t a, s;
		if (msim_db_merge(db, argv[i], &a, &s)) {
			fprintf(stderr, "memsim: %s\n", msim_db_errmsg(db));
			msim_db_close(db);
			return 1;
		}
		added += a;
		skipped += s;
	}
	msim_db_close(db);
	if (!quiet)
		printf("merged %d databases into %s: %" PRId64 " runs added, %"
		       PRId64 " already there\n", argc - optind - 1, out, added,
		       skipped);
	return 0;
}
