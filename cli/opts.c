/*
 * Option tables (cli/opts.h): getopt_long()'s arguments and the option
 * lines of --help, both from the one table.
 */
#include <config.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opts.h"

void
msim_cli_opts_print(FILE *fp, const msim_cli_opt_t *opts, int col)
{
	for (const msim_cli_opt_t *o = opts; o->name || o->help; o++) {
		if (!o->name || !o->help) {
			fputs(o->name ? "" : o->help, fp);
			continue;
		}
		int n;
		if (o->short_too)
			n = fprintf(fp, "  -%c, --%s", o->key, o->name);
		else
			n = fprintf(fp, "      --%s", o->name);
		if (o->arg)
			n += fprintf(fp, " %s", o->arg);
		for (const char *h = o->help; *h;) {
			size_t len = strcspn(h, "\n");
			if (len)	/* else the help starts below */
				fprintf(fp, "%*s%.*s", n < col - 2 ? col - n
						     : 2, "", (int)len, h);
			fputc('\n', fp);
			n = 0;
			h += len + (h[len] == '\n');
		}
	}
}

void
msim_cli_help(FILE *fp, const msim_cli_cmd_t *cmd)
{
	fputs(cmd->usage, fp);
	msim_cli_opts_print(fp, cmd->opts, cmd->col);
	if (cmd->after)
		fputs(cmd->after, fp);
}

#define OPTS_MAX 64

int
msim_cli_next(const msim_cli_cmd_t *cmd, int argc, char **argv)
{
	/* getopt_long()'s tables, made again at each call (getopt keeps
	 * its place in argv, not in them). */
	char s[3 * OPTS_MAX + 2];
	struct option l[OPTS_MAX + 1];
	size_t k = 0, j = 0;
	if (cmd->in_order)
		s[k++] = '+';
	for (const msim_cli_opt_t *o = cmd->opts; o->name || o->help; o++) {
		if (!o->name)
			continue;
		if (j == OPTS_MAX)
			msim_cli_die("more than %d options", OPTS_MAX);
		if (o->short_too) {
			s[k++] = (char)o->key;
			if (o->arg)
				s[k++] = ':';
		}
		l[j++] = (struct option){o->name, o->arg ? required_argument
						     : no_argument, NULL, o->key};
	}
	s[k] = '\0';
	l[j] = (struct option){0};
	int c = msim_cli_getopt(argc, argv, s, l);
	if (c == 'h') {
		msim_cli_help(stdout, cmd);
		exit(0);
	}
	if (c == '?' || c == ':') {
		msim_cli_help(stderr, cmd);
		exit(2);
	}
	return c;
}

void
msim_cli_operands(const msim_cli_cmd_t *cmd, int argc, int min, int max)
{
	int n = argc - optind;
	if (n < min || n > max) {
		msim_cli_help(stderr, cmd);
		exit(2);
	}
}
