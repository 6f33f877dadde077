/*
 * A libFuzzer target for the command lines of record, fit and sweep as the
 * library reads them: the input is words (split at NUL or newline); the
 * first byte picks what reads them.
 *  - the recorder's command (lab/recproc.h msim_recproc_argv(): python3
 *    flags -u/-X/-W/-m, torchrun and torch.distributed.run options, the
 *    recorder's options before "--" with --world-size and --rank checked),
 *    and what it gives is checked: NULL-terminated, the recorder's module
 *    named, every word the command's or the options' after "--";
 *  - fit's --vary NAME=LO..HI (msim_fit_parse_vary(): LO <= HI);
 *  - the {NAME} substitution of a sweep or fit command
 *    (msim_record_subst(), msim_record_has()), names and values from the
 *    words.
 * Nothing is run: no process is started.  A clean error is the expected
 * outcome for most inputs.
 */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/common.h"
#include "lab/fit.h"
#include "lab/record.h"
#include "lab/recproc.h"

#define MAXW 64

/* data as up to MAXW words in text (NUL-terminated in place). */
static int
words(char *text, size_t size, char **w)
{
	int n = 0;
	char *p = text, *end = text + size;
	while (p <= end && n < MAXW) {
		size_t len = strcspn(p, "\n");
		w[n++] = p;
		p[len] = '\0';
		p += len + 1;
	}
	return n;
}

static void
fuzz_argv(char **w, int n, int py_given)
{
	int dash = 0;
	while (dash < n && strcmp(w[dash], "--"))
		dash++;
	char **cmd = dash < n ? w + dash + 1 : w;
	int ncmd = dash < n ? n - dash - 1 : n;
	int nropt = dash < n ? dash : 0;
	char **av, *extra, why[512];
	int rc = msim_recproc_argv(py_given ? "python3" : NULL,
				   "/dev/shm/out.csv", w, nropt, cmd, ncmd,
				   &av, &extra, why, sizeof(why));
	if (rc) {
		if (!why[0] || av || extra)
			abort();
		return;
	}
	int k = 0, sep = -1;
	for (; av[k]; k++) {
		if (k > nropt + ncmd + 12)
			abort(); /* not NULL-terminated in its room */
		if (sep < 0 && !strcmp(av[k], "memsim_record"))
			sep = k;
	}
	if (sep < 1 || strcmp(av[sep - 1], "-m") || strcmp(av[sep + 1], "-o"))
		abort();
	/* The script and its arguments are the command's last words. */
	int last = k - 1;
	if (ncmd < 1 || strcmp(av[last], cmd[ncmd - 1]))
		abort();
	free(av);
	free(extra);
}

static void
fuzz_subst(char **w, int n)
{
	if (n < 3)
		return;
	int nn = (n - 1) / 3;
	const char *names[MAXW], *values[MAXW];
	for (int i = 0; i < nn; i++) {
		names[i] = w[1 + i];
		values[i] = w[1 + nn + i];
	}
	char **cmd = w + 1 + 2 * nn;
	int ncmd = n - 1 - 2 * nn;
	char **out = msim_record_subst(cmd, ncmd, names, values, (size_t)nn);
	if (!out)
		abort();
	for (int i = 0; i < ncmd; i++) {
		/* no name left that was not there as {name} before */
		if (!out[i])
			abort();
	}
	if (out[ncmd])
		abort();
	msim_record_subst_free(out, ncmd);
	for (int i = 0; i < nn; i++)
		(void)msim_record_has(cmd, ncmd, names[i]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 8192)
		return 0;
	char *text = malloc(size);
	if (!text)
		abort();
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	char *w[MAXW];
	int n = words(text, size - 1, w);
	char name[64], why[512];
	long lo, hi;
	switch (data[0] % 4) {
	case 0:
	case 1:
		fuzz_argv(w, n, data[0] & 1);
		break;
	case 2:
		if (msim_fit_parse_vary(text, name, sizeof(name), &lo, &hi,
					why, sizeof(why)) == 0 &&
		    (lo > hi || !name[0]))
			abort();
		break;
	default:
		fuzz_subst(w, n);
		break;
	}
	free(text);
	return 0;
}
