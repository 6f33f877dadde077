/* msim_suggest(): optimal string alignment distance over short names. */
#include <config.h>

#include <string.h>

#include "sim/suggest.h"

#define SUGGEST_MAX 64 /* longer words are not compared */

/* The optimal string alignment distance of a and b (both shorter than
 * SUGGEST_MAX). */
static size_t
suggest_distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];
	for (size_t i = 0; i <= na; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= nb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= na; i++) {
		for (size_t j = 1; j <= nb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[na][nb];
}

const char *
msim_suggest(const char *word, const char *const *names, size_t n)
{
	size_t nw = strlen(word);
	if (!nw || nw >= SUGGEST_MAX)
		return NULL;
	size_t limit = nw < 6 ? 1 : nw < 12 ? 2 : 3;
	const char *best = NULL;
	size_t best_d = limit + 1;
	for (size_t k = 0; k < n; k++) {
		const char *c = names[k];
		size_t nc = c ? strlen(c) : 0;
		if (!nc || nc >= SUGGEST_MAX)
			continue;
		size_t d = suggest_distance(word, nw, c, nc);
		if (d < best_d) {
			best = c;
			best_d = d;
		}
	}
	if (best)
		return best;
	for (size_t k = 0; k < n && nw >= 3; k++) {
		const char *c = names[k];
		size_t nc = c ? strlen(c) : 0;
		if (nc >= 3 && (!strncmp(c, word, nw < nc ? nw : nc)))
			return c;
	}
	return NULL;
}
