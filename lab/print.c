/* What the commands print (lab/print.h). */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lab/print.h"
#include "sim/gpu.h"
#include "sim/units.h"
#include "traces/trace.h"

void
msim_print_json_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(fp, "\\%c", c);
		else if (c < 0x20)
			fprintf(fp, "\\u%04x", c);
		else
			fputc(c, fp);
	}
	fputc('"', fp);
}

/* The value of g as JSON. */
static void
json_value(FILE *fp, const msim_fig_t *g)
{
	switch (g->kind) {
	case MSIM_FIG_INT: fprintf(fp, "%" PRId64, g->i); break;
	case MSIM_FIG_BOOL: fputs(g->i ? "true" : "false", fp); break;
	case MSIM_FIG_REAL: /* as written */
	case MSIM_FIG_EMPTY: fputs(g->t, fp); break;
	default:
		if (g->null)
			fputs("null", fp);
		else
			msim_print_json_str(fp, g->t);
		break;
	}
}

void
msim_print_json_figs(const msim_figs_t *f, bool first)
{
	for (size_t i = 0; i < f->n; i++) {
		const msim_fig_t *g = &f->v[i];
		printf("%s\n  \"%s\": ", i || !first ? "," : "", g->name);
		json_value(stdout, g);
	}
}

/* How many of the first max parts (between dots) a and b share. */
static size_t
json_shared(const char *a, const char *b, size_t max)
{
	size_t k = 0;
	while (k < max) {
		size_t la = strcspn(a, "."), lb = strcspn(b, ".");
		if (la != lb || memcmp(a, b, la) || !a[la] || !b[lb])
			break;
		k++;
		a += la + 1;
		b += lb + 1;
	}
	return k;
}

void
msim_print_json_tree(FILE *fp, const msim_figs_t *f)
{
	enum { DEPTH = 16 };
	char close[DEPTH];         /* the open lists' and objects' ends */
	bool any[DEPTH + 1] = {0}; /* depth d (0: the top) has a member */
	size_t open = 0;           /* lists and objects open below the top */
	const char *prev = "";
	fputc('{', fp);
	for (size_t i = 0; i < f->n; i++) {
		const char *s = f->v[i].name;
		size_t keep = json_shared(prev, s, open);
		while (open > keep)
			fputc(close[--open], fp);
		for (size_t k = 0; k < keep; k++)
			s += strcspn(s, ".") + 1;
		for (size_t d = keep;; d++) {
			/* the last part, or at the deepest all that is left */
			bool leaf = !strchr(s, '.') || d + 1 == DEPTH;
			size_t len = leaf ? strlen(s) : strcspn(s, ".");
			if (d)
				fputs(any[d] ? ", " : "", fp);
			else
				fputs(any[0] ? ",\n  " : "\n  ", fp);
			any[d] = true;
			if (!d || close[d - 1] == '}')
				fprintf(fp, "\"%.*s\": ", (int)len, s);
			if (leaf) {
				json_value(fp, &f->v[i]);
				break;
			}
			bool list = s[len + 1] >= '0' && s[len + 1] <= '9';
			fputc(list ? '[' : '{', fp);
			close[open++] = list ? ']' : '}';
			any[open] = false;
			s += len + 1;
		}
		prev = f->v[i].name;
	}
	while (open)
		fputc(close[--open], fp);
	fputs("\n}\n", fp);
}

static void
devices_json(void)
{
	size_t n;
	const msim_gpu_model_t *m = msim_gpu_models(&n);
	printf("{\n  \"devices\": [");
	for (size_t i = 0; i < n; i++) {
		printf("%s\n    {\"name\": \"%s\", \"label\": ", i ? "," : "",
		       m[i].name);
		msim_print_json_str(stdout, m[i].label);
		printf(", \"total_bytes\": %" PRIu64 ", \"total_source\": ",
		       m[i].total);
		msim_print_json_str(stdout, m[i].total_src);
		printf(",\n     \"context_bytes\": %" PRIu64
		       ", \"context_source\": ", m[i].context);
		msim_print_json_str(stdout, m[i].context_src);
		printf(",\n     \"major\": %d, \"minor\": %d, \"sms\": %d, "
		       "\"l2_bytes\": %" PRIu64 "}", m[i].major, m[i].minor,
		       m[i].sms, m[i].l2);
	}
	printf("\n  ],\n  \"mig\": [");
	const char *gpu, *profile;
	uint64_t bytes;
	for (size_t i = 0; (gpu = msim_gpu_mig_gpu(i, &profile, &bytes)); i++)
		printf("%s\n    {\"name\": \"%s:%s\", \"total_bytes\": %" PRIu64
		       "}", i ? "," : "", gpu, profile, bytes);
	printf("\n  ]\n}\n");
}

static void
devices_table(bool mig)
{
	size_t n;
	char a[32], b[32];
	const msim_gpu_model_t *m = msim_gpu_models(&n);
	printf("%-10s %-24s %25s %10s  %s\n", "name", "torch name",
	       "total (cudaMemGetInfo)", "context", "sources (total; context)");
	for (size_t i = 0; i < n; i++)
		printf("%-10s %-24s %14" PRIu64 " %-10s %10s  %.*s; %.*s\n",
		       m[i].name, m[i].label, m[i].total,
		       msim_format_bytes(m[i].total, a, sizeof(a)),
		       msim_format_bytes(m[i].context, b, sizeof(b)),
		       (int)strcspn(m[i].total_src, ":"), m[i].total_src,
		       (int)strcspn(m[i].context_src, ":"),
		       m[i].context_src);
	printf("\nmeasured: tests/data/explain/h200/context.txt; reported: "
	       "public deviceQuery or PyTorch\noutput; spec: the data sheet's "
	       "size (N GB as N GiB), an upper bound; assumed:\nthe H200's "
	       "context.  --capacity BYTES and --context-bytes B override "
	       "them.\n");
	if (!mig) {
		printf("MIG profiles (GPU:PROFILE): memsim devices --mig\n");
		return;
	}
	printf("\nMIG profile       bytes\n");
	const char *gpu, *profile;
	uint64_t bytes;
	for (size_t i = 0; (gpu = msim_gpu_mig_gpu(i, &profile, &bytes));
	     i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s:%s", gpu, profile);
		printf("%-17s %" PRIu64 "\n", name, bytes);
	}
}

void
msim_print_devices(bool json, bool mig)
{
	if (json)
		devices_json();
	else
		devices_table(mig);
}

void
msim_print_seed(msim_trace_t *t)
{
	msim_trace_seed_t s;
	char a[32], b[32];
	msim_trace_seeding(t, &s);
	uint64_t n = s.from_frees + s.from_snapshot;
	if (n || s.segments) {
		printf("seeded     %" PRIu64 " block%s allocated before the "
		       "history began (%" PRIu64 " freed by the trace, %"
		       PRIu64 " live in the snapshot), %s\n", n,
		       n == 1 ? "" : "s", s.from_frees, s.from_snapshot,
		       msim_format_bytes(s.bytes, a, sizeof(a)));
		if (s.segments)
			printf("           %" PRIu64 " segment%s of %s "
			       "rebuilt at the start, %" PRIu64 " filler%s\n",
			       s.segments, s.segments == 1 ? "" : "s",
			       msim_format_bytes(s.segment_bytes, b,
						 sizeof(b)),
			       s.fillers, s.fillers == 1 ? "" : "s");
		if (s.late)
			printf("           %" PRIu64 " seeded where their "
			       "free is met\n", s.late);
		if (s.exact)
			printf("start      as the snapshot tells it\n");
		else
			printf("start      not exact: %s\n", s.inexact);
	}
	if (s.snap_live)
		printf("explained  the trace allocated %" PRIu64 " of the %"
		       PRIu64 " live blocks of the snapshot (%s of %s, "
		       "%.1f%%)\n", s.explained, s.snap_live,
		       msim_format_bytes(s.explained_bytes, a, sizeof(a)),
		       msim_format_bytes(s.snap_live_bytes, b, sizeof(b)),
		       s.snap_live_bytes ? 100.0 * (double)s.explained_bytes /
						   (double)s.snap_live_bytes
					 : 100.0);
	const char *first;
	uint64_t skipped = msim_trace_skipped(t, &first);
	if (skipped)
		printf("skipped    %" PRIu64 " entr%s of unknown actions "
		       "(first '%s')\n", skipped, skipped == 1 ? "y" : "ies",
		       first);
	msim_trace_tally_t tl;
	msim_trace_tally(t, &tl);
	if (tl.zero_skipped)
		printf("skipped    %" PRIu64 " zero-byte request%s\n",
		       tl.zero_skipped, tl.zero_skipped == 1 ? "" : "s");
	if (msim_figs_no_events(t))
		printf("hint       the snapshot has no trace events: was "
		       "torch.cuda.memory._record_memory_history() enabled?\n");
}
