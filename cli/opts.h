/*
 * A command's options as one table that drives both getopt_long() and the
 * option lines of its --help, so that an option is written once (git's
 * parse-options.h, in small).  For the commands that read argv
 * (cli/cmd_*.c).
 *
 *	static const msim_cli_opt_t opts[] = {
 *		{'d', true, "db", "FILE", "where to store (default x.db)"},
 *		{'C', false, "cap", "BYTES", "the cap\n(16GiB, 12.5GB, ...)"},
 *		{0, false, NULL, NULL, "\nrunning:\n"},	  (a heading)
 *		MSIM_CLI_OPT_HELP,
 *		{0},
 *	};
 *	static const msim_cli_cmd_t cmd = {usage_text, opts, 24, NULL};
 *	while ((c = msim_cli_next(&cmd, argc, argv)) != -1)
 *		switch (c) { ... }
 *	msim_cli_operands(&cmd, argc, 1, 1);
 */
#ifndef MSIM_CLI_OPTS_H
#define MSIM_CLI_OPTS_H

#include <stdbool.h>
#include <stdio.h>

/* One option, or a heading (name NULL, help its text, printed as it is);
 * a table ends with {0}. */
typedef struct msim_cli_opt_s {
	int key;          /* what msim_cli_next() returns for it */
	bool short_too;   /* -key as well as --name */
	const char *name; /* the long name */
	const char *arg;  /* the argument's name in --help; NULL: takes none */
	const char *help; /* its lines, "\n" between (not after the last);
			   * NULL: not listed (a heading lists it);
			   * "\n..." starts below a long option */
} msim_cli_opt_t;

#define MSIM_CLI_OPT_HELP {'h', true, "help", NULL, "this help"}

/* A command: its usage text, the options (with their lines in column col
 * of --help), and text after them (NULL: none). */
typedef struct msim_cli_cmd_s {
	const char *usage; /* "usage: memsim x ...\n\nwhat it does\n\n" */
	const msim_cli_opt_t *opts;
	int col;
	const char *after;
	/* The options end at the first operand (what follows is a program's
	 * own command line); else they may come anywhere. */
	bool in_order;
} msim_cli_cmd_t;

/* Prints the whole --help of cmd to fp. */
void msim_cli_help(FILE *fp, const msim_cli_cmd_t *cmd);

/* Prints the option lines of opts, each option's help in column col. */
void msim_cli_opts_print(FILE *fp, const msim_cli_opt_t *opts, int col);

/*
 * The next option, as msim_cli_getopt() reads it (long options written
 * in full), or -1 after the last.  --help prints the help and exits 0; an
 * option not in the table prints it on stderr and exits 2.
 */
int msim_cli_next(const msim_cli_cmd_t *cmd, int argc, char **argv);

/* Prints the help on stderr and exits 2 unless the operands after the
 * options (argv[optind] on) number min to max. */
void msim_cli_operands(const msim_cli_cmd_t *cmd, int argc, int min,
		       int max);

#endif
