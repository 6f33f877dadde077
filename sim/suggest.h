/*
 * "Did you mean": the nearest of a list of names to a word mistyped, for
 * the CLI's commands and options and for parameter keys.
 */
#ifndef MSIM_SIM_SUGGEST_H
#define MSIM_SIM_SUGGEST_H

#include <stddef.h>

/*
 * The name of names (n of them; NULL entries are skipped) nearest to word
 * by edit distance (insertions, deletions, substitutions and swaps of
 * neighbours, each 1), if it is near enough to be meant: at most 1 for
 * words under 6 characters, 2 under 12, else 3; or a name that begins
 * with word, or word with it (3 characters at least).  NULL if none.
 */
const char *msim_suggest(const char *word, const char *const *names,
			 size_t n);

#endif
