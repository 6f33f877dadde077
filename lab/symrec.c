/*
 * The symbolic recordings of lab/symrec.h: two values next to each other
 * recorded with --symbolic, then checked against each other before any
 * value is instantiated from them.
 */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/symrec.h"
#include "sim/error.h"
#include "traces/symtrace.h"

static void
symrec_note(const msim_symrec_spec_t *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
symrec_note(const msim_symrec_spec_t *s, const char *fmt, ...)
{
	if (!s->note)
		return;
	char line[1400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->note(s->ctx, line);
}

/* b - a without overflow over any long range. */
static unsigned long
symrec_span(long a, long b)
{
	return (unsigned long)b - (unsigned long)a;
}

/* Whether files a and b hold the same bytes. */
static bool
symrec_same_file(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	bool same = fa && fb;
	char ba[65536], bb[65536];
	while (same) {
		size_t na = fread(ba, 1, sizeof(ba), fa);
		size_t nb = fread(bb, 1, sizeof(bb), fb);
		same = na == nb && memcmp(ba, bb, na) == 0;
		if (na < sizeof(ba))
			break;
	}
	same = same && !ferror(fa) && !ferror(fb);
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

/* The values recorded: at (clamped into [a, b]) and the next, or at the
 * top the one before: next to each other, seldom on two sides of a
 * rule's branch; a size the model has for itself that equals one of them
 * is made symbolic in that recording alone, and the two differ. */
static void
symrec_sentinels(long at, long a, long b, long v[2])
{
	at = at < a ? a : at > b ? b : at;
	v[0] = at < b ? at : b - 1;
	if (v[0] < a)
		v[0] = a;
	v[1] = v[0] + 1;
}

/* Records (or, with reuse, finds) the command at v[0] and v[1] into
 * traces[], one after another, each with its --symbolic NAME=V:top.
 * Returns 0 (res->why says a recording that failed), or a negative
 * MSIM_E* with why. */
static int
symrec_record(const msim_symrec_spec_t *s, msim_symrec_t *res, long top,
	      char (*traces)[4096], char *why, size_t whylen)
{
	char **ropt = calloc((size_t)s->nropt + 3, sizeof(*ropt));
	if (!ropt) {
		snprintf(why, whylen, "out of memory");
		return MSIM_ENOMEM;
	}
	int rc = 0;
	for (int i = 0; i < 2 && !rc && !res->why[0]; i++) {
		char val[32], opt[160], rwhy[1024];
		snprintf(val, sizeof(val), "%ld", res->v[i]);
		snprintf(opt, sizeof(opt), "%s=%ld:%ld", s->name, res->v[i],
			 top);
		const char *vp = val;
		for (int k = 0; k < s->nropt; k++)
			ropt[k] = s->ropt[k];
		ropt[s->nropt] = "--symbolic";
		ropt[s->nropt + 1] = opt;
		char **cmd = msim_record_subst(s->cmd, s->ncmd, &s->name, &vp,
					       1);
		if (!cmd) {
			snprintf(why, whylen, "out of memory");
			rc = MSIM_ENOMEM;
			break;
		}
		s->path(s->ctx, res->v[i], ropt, s->nropt + 2, cmd, traces[i],
			sizeof(traces[i]));
		int r = 0;
		if (s->reuse && access(traces[i], R_OK) == 0) {
			symrec_note(s, "recording %s=%ld symbolic: made "
				    "before, reused", s->name, res->v[i]);
		} else {
			symrec_note(s, "recording %s=%ld symbolic", s->name,
				    res->v[i]);
			res->recordings++;
			if (s->srv) {
				r = msim_recserver_submit(s->srv, i, traces[i],
							  ropt, s->nropt + 2,
							  cmd, s->ncmd, rwhy,
							  sizeof(rwhy));
				int id;
				while (!r && msim_recserver_running(s->srv))
					r = msim_recserver_wait(s->srv, &id,
								rwhy,
								sizeof(rwhy));
			} else {
				r = msim_record_exec(s->rec, traces[i], ropt,
						     s->nropt + 2, cmd,
						     s->ncmd, rwhy,
						     sizeof(rwhy));
			}
		}
		msim_record_subst_free(cmd, s->ncmd);
		if (r < 0) {
			snprintf(why, whylen, "record: %s", rwhy);
			rc = r;
		} else if (r && msim_record_signal()) {
			snprintf(why, whylen, "recording %s=%ld: %s", s->name,
				 res->v[i], rwhy);
			rc = MSIM_EIO;
		} else if (r) {
			snprintf(res->why, sizeof(res->why), "not used: "
				 "recording %s=%ld with --symbolic %s (exit "
				 "%d%s%.700s)", s->name, res->v[i],
				 r == 3 ? "was refused" : "failed", r,
				 *rwhy ? ": " : "", rwhy);
		}
	}
	free(ropt);
	return rc;
}

/* Where both traces hold, and whether each, instantiated at both
 * values, gives the same bytes as the other: res->lo, hi, trace, or
 * res->why says why not. */
static void
symrec_check(const msim_symrec_spec_t *s, msim_symrec_t *res,
	     char (*traces)[4096])
{
	char *sy = res->why;
	size_t syl = sizeof(res->why);
	msim_symtrace_info_t in[2];
	char why[1024];
	long lo = 0, hi = 0;
	for (int i = 0; i < 2 && !sy[0]; i++) {
		if (msim_symtrace_probe(traces[i], &in[i], why,
					sizeof(why)) != 1)
			snprintf(sy, syl, "not used: %.900s", why);
	}
	const long *v = res->v;
	if (!sy[0]) {
		lo = in[0].lo > in[1].lo ? in[0].lo : in[1].lo;
		hi = in[0].hi < in[1].hi ? in[0].hi : in[1].hi;
		if (v[0] < lo || v[0] > hi || v[1] < lo || v[1] > hi)
			snprintf(sy, syl, "not used: the recordings at %s=%ld "
				 "and %ld hold for %ld..%ld and %ld..%ld: "
				 "the program branches on %s between them",
				 s->name, v[0], v[1], in[0].lo, in[0].hi,
				 in[1].lo, in[1].hi, s->name);
	}
	for (int k = 0; k < 2 && !sy[0]; k++) {
		char x[2][4200];
		for (int i = 0; i < 2 && !sy[0]; i++) {
			snprintf(x[i], sizeof(x[i]), "%.4000s-check%d.csv",
				 traces[i], k);
			if (msim_symtrace_instantiate(traces[i], v[k], x[i],
						      why, sizeof(why)))
				snprintf(sy, syl, "not used: %.900s", why);
		}
		if (!sy[0] && !symrec_same_file(x[0], x[1]))
			snprintf(sy, syl, "not used: the recordings at %s=%ld "
				 "and %ld, instantiated at %ld, differ: the "
				 "script uses %s where no tensor size shows "
				 "it (a loop, or B*T computed as an int)",
				 s->name, v[0], v[1], v[k], s->name);
		unlink(x[0]);
		unlink(x[1]);
	}
	if (sy[0])
		return;
	memcpy(res->trace, traces[0], sizeof(res->trace));
	res->lo = lo;
	res->hi = hi;
	snprintf(sy, syl, "%s=%ld..%ld instantiated from one symbolic "
		 "recording (%.700s; recorded at %ld and %ld, the same trace); "
		 "values outside it recorded one by one", s->name, lo, hi,
		 traces[0], v[0], v[1]);
}

int
msim_symrec_make(const msim_symrec_spec_t *s, msim_symrec_t *res, char *why,
		 size_t whylen)
{
	memset(res, 0, sizeof(*res));
	res->lo = 1;
	res->hi = 0;
	long a = s->lo < 2 ? 2 : s->lo, top = s->hi > (1L << 24) ?
		(1L << 24) : s->hi;
	if (top < a || symrec_span(a, top) < 2 || s->at < 2) {
		snprintf(res->why, sizeof(res->why), "not used: %s=%ld..%ld "
			 "is too short a range (it starts at 2: PyTorch "
			 "specializes sizes 0 and 1)", s->name, s->lo, s->hi);
		symrec_note(s, "symbolic: %s", res->why);
		return 0;
	}
	symrec_sentinels(s->at, a, top, res->v);
	char traces[2][4096];
	int rc = symrec_record(s, res, top, traces, why, whylen);
	if (rc)
		return rc;
	if (!res->why[0])
		symrec_check(s, res, traces);
	if (res->lo <= res->hi)
		symrec_note(s, "symbolic: %s", res->why);
	else
		symrec_note(s, "symbolic: %s; every value is recorded",
			    res->why);
	return 0;
}

bool
msim_symrec_holds(const msim_symrec_t *res, long value)
{
	return value >= res->lo && value <= res->hi;
}
