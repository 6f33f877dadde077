/* What the commands print (lab/print.h). */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lab/print.h"
#include "sim/gpu.h"
#include "sim/units.h"

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

void
msim_print_json_figs(const msim_figs_t *f, bool first)
{
	for (size_t i = 0; i < f->n; i++) {
		const msim_fig_t *g = &f->v[i];
		printf("%s\n  \"%s\": ", i || !first ? "," : "", g->name);
		switch (g->kind) {
		case MSIM_FIG_INT: printf("%" PRId64, g->i); break;
		case MSIM_FIG_BOOL: printf(g->i ? "true" : "false"); break;
		case MSIM_FIG_REAL: printf("%s", g->t); break;
		default:
			if (g->null)
				printf("null");
			else
				msim_print_json_str(stdout, g->t);
			break;
		}
	}
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
