/*
 * Explain: the breakdown at peak reserved and at an OOM on hand-made
 * traces whose every figure is worked out below from PyTorch's rules; the
 * tags of CSV columns and of a snapshot's stack frames; the OOM message
 * and the replayed alternatives; memory_summary()'s number formats; the
 * one list of figures that `memsim explain --json` prints nested and
 * memsim_explain() hands out flat.
 */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/explain.h"
#include "lab/print.h"
#include "policies/registry.h"
#include "sim/error.h"
#include "tests/testutil.h"
#include "traces/trace.h"

#define MiB (UINT64_C(1) << 20)

static msim_explain_t *
explain(const char *rel, uint64_t cap, bool alternatives)
{
	char path[4096], why[1024];
	snprintf(path, sizeof(path), "%s", test_data(rel));
	msim_explain_config_t cfg = {
		.spec = {.trace = path, .cap = cap},
		.alternatives = alternatives,
	};
	msim_explain_t *ex = NULL;
	int rc = msim_explain_run(&cfg, &ex, why, sizeof(why));
	ck_assert_msg(rc == 0, "%s", why);
	return ex;
}

static uint64_t
cat_sum(const msim_explain_moment_t *m)
{
	uint64_t s = 0;
	for (int k = 0; k < MSIM_NCAT; k++)
		s += m->cat_bytes[k];
	return s;
}

/*
 * tagged.csv: a 1000-byte parameter (round_size: 1024, small pool, a 2 MiB
 * segment), a 3000000-byte activation (3000320 = 5860 x 512, large pool,
 * a 20 MiB segment: reserved peaks at 22 MiB after request 2), an
 * untagged 512-byte alloc (small pool, no new segment), a free.
 */
START_TEST(test_explain_peak_by_pool_and_category)
{
	msim_explain_t *ex = explain("explain/tagged.csv", 0, false);
	const msim_explain_moment_t *m = &ex->peak;
	ck_assert(ex->tagged);
	ck_assert(!ex->oom);
	ck_assert_uint_eq(m->request, 2);
	ck_assert_uint_eq(m->reserved[MSIM_POOL_ALL], 22 * MiB);
	ck_assert_uint_eq(m->reserved[MSIM_POOL_SMALL], 2 * MiB);
	ck_assert_uint_eq(m->reserved[MSIM_POOL_LARGE], 20 * MiB);
	ck_assert_uint_eq(m->allocated[MSIM_POOL_SMALL], 1024);
	ck_assert_uint_eq(m->allocated[MSIM_POOL_LARGE], 3000320);
	/* the rest of each segment is a free piece of a split segment */
	ck_assert_uint_eq(m->split_free[MSIM_POOL_SMALL], 2 * MiB - 1024);
	ck_assert_uint_eq(m->split_free[MSIM_POOL_LARGE], 20 * MiB - 3000320);
	ck_assert_uint_eq(m->whole_free[MSIM_POOL_ALL], 0);
	ck_assert_uint_eq(m->cat_bytes[MSIM_CAT_PARAMETER], 1024);
	ck_assert_uint_eq(m->cat_bytes[MSIM_CAT_ACTIVATION], 3000320);
	ck_assert_uint_eq(cat_sum(m), m->allocated[MSIM_POOL_ALL]);
	ck_assert_uint_eq(m->nsites, 2);
	ck_assert_str_eq(m->sites[0].site, "model.fc");
	ck_assert_uint_eq(m->sites[0].bytes, 3000320);
	ck_assert_str_eq(m->sites[1].site, "model.w");
	ck_assert_int_eq(m->sites[1].category, MSIM_CAT_PARAMETER);
	/* at the end: the 512-byte alloc is untagged, the activation gone */
	ck_assert_int_eq(ex->end.allocated_bytes[MSIM_POOL_ALL].current,
			 1024 + 512);
	msim_explain_destroy(ex);
}
END_TEST

/*
 * oom.csv under a 40 MiB cap: x (16 MiB) and y (24 MiB) fill the cap with
 * two exact segments; x is freed; z (20 MiB) fits no cached block, a new
 * 20 MiB segment would make 60 MiB, so release_cached_blocks() frees x's
 * whole segment: 24 + 20 = 44 MiB is still over the cap: OOM at request
 * 3, with 24 MiB reserved, all of it allocated.  Uncapped, the run peaks
 * at 44 MiB allocated and fits under a 44 MiB cap (x's segment released).
 */
START_TEST(test_explain_oom)
{
	msim_explain_t *ex = explain("explain/oom.csv", 40 * MiB, true);
	ck_assert(ex->oom);
	ck_assert_int_eq(ex->sum.oom_request, 3);
	ck_assert_uint_eq(ex->oom_size, 20 * MiB);
	ck_assert_uint_eq(ex->oom_alloc_size, 20 * MiB);
	ck_assert_uint_eq(ex->peak.reserved[MSIM_POOL_ALL], 40 * MiB);
	ck_assert_uint_eq(ex->at_oom.reserved[MSIM_POOL_ALL], 24 * MiB);
	ck_assert_uint_eq(ex->at_oom.cat_bytes[MSIM_CAT_PARAMETER], 24 * MiB);
	ck_assert_uint_eq(cat_sum(&ex->at_oom), 24 * MiB);
	ck_assert_uint_eq(ex->oom_device_free,
			  UINT64_C(150109880320) - 24 * MiB);
	char msg[2048];
	msim_explain_oom_message(ex, msg, sizeof(msg));
	ck_assert_msg(strstr(msg, "CUDA out of memory. Tried to allocate "
			     "20.00 MiB. GPU 0 has a total capacity of "
			     "139.80 GiB of which 139.78 GiB is free. "
			     "Including non-PyTorch memory, this process has "
			     "24.00 MiB memory in use. 40.00 MiB allowed; Of "
			     "the allocated memory 24.00 MiB is allocated by "
			     "PyTorch, and 0 bytes is reserved by PyTorch but "
			     "unallocated.") == msg, "%s", msg);
	ck_assert_uint_eq(ex->min_cap, 44 * MiB);
	bool gc = false;
	for (size_t i = 0; i < ex->nalts; i++) {
		ck_assert(!ex->alts[i].fits);
		gc |= !strcmp(ex->alts[i].what,
			      "garbage_collection_threshold:0.6");
	}
	ck_assert(gc);
	msim_explain_destroy(ex);
}
END_TEST

/* Whether a name's part up to each dot (a list or object of the nested
 * JSON) has its members together: none met again after another's. */
static void
check_grouped(const msim_figs_t *f)
{
	for (size_t i = 1; i < f->n; i++) {
		const char *name = f->v[i].name, *dot = name;
		while ((dot = strchr(dot, '.'))) {
			size_t len = (size_t)(dot++ - name) + 1;
			if (!strncmp(f->v[i - 1].name, name, len))
				continue;
			for (size_t j = 0; j + 1 < i; j++)
				ck_assert_msg(strncmp(f->v[j].name, name, len),
					      "%s apart from %s", name,
					      f->v[j].name);
		}
	}
}

/* The figures of oom.csv's explain (above): one list, nested at its
 * dots with each list and object together; memsim.h's view drops the
 * empty ones only. */
START_TEST(test_explain_figs)
{
	msim_explain_t *ex = explain("explain/oom.csv", 40 * MiB, true);
	msim_figs_t f = {0};
	ck_assert_int_eq(msim_explain_figs(&f, ex, "oom.csv"), 0);
	check_grouped(&f);
	const msim_fig_t *g = msim_figs_find(&f, "oom.state.all.reserved");
	ck_assert(g && g->kind == MSIM_FIG_INT && g->i == (int64_t)(24 * MiB));
	g = msim_figs_find(&f, "oom.min_cap");
	ck_assert(g && g->i == (int64_t)(44 * MiB));
	g = msim_figs_find(&f, "oom.min_cap_replays");
	ck_assert(g && g->i == ex->min_cap_runs && g->i > 0);
	g = msim_figs_find(&f, "oom.alternatives.0.fits");
	ck_assert(g && g->kind == MSIM_FIG_BOOL && !g->i);
	g = msim_figs_find(&f, "oom.message");
	ck_assert(g && strstr(g->t, "CUDA out of memory.") == g->t);
	ck_assert_str_eq(f.v[f.n - 1].name, "summary_at_peak");
	ck_assert_ptr_nonnull(msim_figs_find(&f, "trace"));
	msim_figs_clear(&f);
	msim_explain_destroy(ex);
}
END_TEST

/* msim_print_json_tree(): objects and lists opened and closed at the
 * dots, several at once, empty ones, null, the top's members a line. */
START_TEST(test_json_tree)
{
	msim_figs_t f = {0};
	ck_assert_int_eq(msim_figs_text(&f, "a", "x\"y"), 0);
	ck_assert_int_eq(msim_figs_int(&f, "b.c", -1), 0);
	ck_assert_int_eq(msim_figs_empty(&f, "b.d", true), 0);
	ck_assert_int_eq(msim_figs_text(&f, "b.e.0.f", "s"), 0);
	ck_assert_int_eq(msim_figs_bool(&f, "b.e.0.g", true), 0);
	ck_assert_int_eq(msim_figs_int(&f, "b.e.1.f", 2), 0);
	ck_assert_int_eq(msim_figs_int(&f, "b.e.1.h.i", 3), 0);
	ck_assert_int_eq(msim_figs_text(&f, "c", NULL), 0);
	ck_assert_int_eq(msim_figs_empty(&f, "d", false), 0);
	ck_assert_int_eq(msim_figs_int(&f, "e.0.0", 4), 0);
	ck_assert_int_eq(msim_figs_int(&f, "e.0.1", 5), 0);
	ck_assert_int_eq(msim_figs_real(&f, "e.1", 0.5, 3, NULL), 0);
	char buf[512] = "";
	FILE *fp = tmpfile();
	ck_assert_ptr_nonnull(fp);
	msim_print_json_tree(fp, &f);
	rewind(fp);
	buf[fread(buf, 1, sizeof(buf) - 1, fp)] = '\0';
	fclose(fp);
	ck_assert_str_eq(buf,
			 "{\n  \"a\": \"x\\\"y\",\n"
			 "  \"b\": {\"c\": -1, \"d\": {}, \"e\": [{\"f\": "
			 "\"s\", \"g\": true}, {\"f\": 2, \"h\": {\"i\": "
			 "3}}]},\n"
			 "  \"c\": null,\n"
			 "  \"d\": [],\n"
			 "  \"e\": [[4, 5], 0.500]\n}\n");
	msim_figs_drop_empty(&f);
	ck_assert_uint_eq(f.n, 10);
	ck_assert_str_eq(f.v[1].name, "b.c");
	ck_assert_str_eq(f.v[2].name, "b.e.0.f");
	ck_assert_str_eq(f.v[7].name, "e.0.0");
	msim_figs_clear(&f);
}
END_TEST

/*
 * resnet50_amp.frames.pickle: every alloc is tagged from its frames, the
 * categories sum to allocated bytes, and the two inputs live at the peak
 * are the batch (64 x 3 x 224 x 224 fp32) and its labels (64 int64, one
 * 512-byte block); the parameters are ResNet-50's 161 parameter tensors
 * and its 53 batch norms' 3 buffers each, moved by model.to("cuda").
 */
START_TEST(test_explain_snapshot_frames)
{
	msim_explain_t *ex = explain("pickles/resnet50_amp.frames.pickle", 0,
				     false);
	const msim_explain_moment_t *m = &ex->peak;
	ck_assert(ex->tagged);
	uint64_t alloc = m->allocated[MSIM_POOL_ALL];
	ck_assert_uint_eq(cat_sum(m), alloc);
	ck_assert_uint_eq(m->cat_bytes[MSIM_CAT_UNTAGGED], 0);
	ck_assert_uint_ge(100 * (alloc - m->cat_bytes[MSIM_CAT_OTHER]),
			  95 * alloc);
	ck_assert_uint_eq(m->cat_count[MSIM_CAT_INPUT], 2);
	ck_assert_uint_eq(m->cat_bytes[MSIM_CAT_INPUT],
			  64 * 3 * 224 * 224 * 4 + 512);
	ck_assert_uint_eq(m->cat_count[MSIM_CAT_PARAMETER], 161 + 3 * 53);
	ck_assert_uint_gt(m->cat_bytes[MSIM_CAT_ACTIVATION], 0);
	ck_assert_uint_gt(m->cat_bytes[MSIM_CAT_GRADIENT], 0);
	msim_explain_destroy(ex);
}
END_TEST

/* The pickle without frames: the same replay, untagged. */
START_TEST(test_explain_untagged)
{
	msim_explain_t *ex = explain("pickles/resnet50_amp.pickle", 0, false);
	ck_assert(!ex->tagged);
	ck_assert_uint_eq(ex->peak.cat_bytes[MSIM_CAT_UNTAGGED],
			  ex->peak.allocated[MSIM_POOL_ALL]);
	msim_explain_destroy(ex);
}
END_TEST

/* The CSV reader: an unknown category names its line. */
START_TEST(test_csv_bad_category)
{
	char path[] = "/tmp/msim_explain_XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *fp = fdopen(fd, "w");
	fputs("seq,time_us,action,addr,size,stream,category,site\n"
	      "0,1,alloc,4096,100,0,weights,a\n", fp);
	fclose(fp);
	msim_trace_t *t;
	char why[512];
	ck_assert_int_eq(msim_trace_open(path, NULL, &t, why, sizeof(why)), 0);
	msim_req_t req;
	ck_assert_int_eq(msim_trace_next(t, &req), MSIM_EFORMAT);
	ck_assert_msg(strstr(msim_trace_errmsg(t), ":2: unknown category "
			     "'weights'"), "%s", msim_trace_errmsg(t));
	msim_trace_close(t);
	unlink(path);
}
END_TEST

/* format_size() and memory_summary()'s _format_size / _format_count. */
START_TEST(test_torch_formats)
{
	char b[32];
	ck_assert_str_eq(msim_torch_format_size(1024, b, sizeof(b)),
			 "1024 bytes");
	ck_assert_str_eq(msim_torch_format_size(1025, b, sizeof(b)),
			 "1.00 KiB");
	ck_assert_str_eq(msim_torch_format_size(MiB, b, sizeof(b)),
			 "1024.00 KiB");
	ck_assert_str_eq(msim_torch_format_size(3 * MiB / 2, b, sizeof(b)),
			 "1.50 MiB");
	msim_stats_t st = {0};
	st.allocated_bytes[MSIM_POOL_ALL].current = 768 * 1024; /* KiB */
	st.allocated_bytes[MSIM_POOL_ALL].peak = 768 * 1024 - 1; /* B */
	st.allocation[MSIM_POOL_ALL].current = 750000;           /* K */
	st.num_ooms = 3;
	char buf[8192];
	size_t n = msim_memory_summary(&st, 0, true, buf, sizeof(buf));
	ck_assert_uint_eq(n, strlen(buf));
	ck_assert_msg(strstr(buf, "| Allocated memory      |    768 KiB | "
			     "786431 B   |      0 B   |      0 B   |\n"),
		      "%s", buf);
	ck_assert_msg(strstr(buf, "| Allocations           |     750 K  |"),
		      "%s", buf);
	ck_assert(strstr(buf, "CUDA OOMs: 3 "));
	/* every line is 77 characters between newlines */
	for (char *p = buf, *nl; (nl = strchr(p, '\n')); p = nl + 1)
		ck_assert_int_eq(nl - p, 77);
}
END_TEST

/* garbage_collection_threshold without a cap cannot act. */
START_TEST(test_warnings)
{
	const msim_policy_ops_t *ops = msim_policy_find("pytorch");
	msim_params_t pv;
	char lines[4][256];
	ck_assert_int_eq(msim_params_init(&pv, ops->params), 0);
	ck_assert_int_eq(msim_params_parse(&pv,
		"garbage_collection_threshold:0.6"), 0);
	ck_assert_uint_eq(msim_explain_warnings(ops, &pv, false, lines, 4), 1);
	ck_assert(strstr(lines[0], "does nothing without a cap"));
	ck_assert_uint_eq(msim_explain_warnings(ops, &pv, true, lines, 4), 0);
	msim_params_clear(&pv);
}
END_TEST

static Suite *
explain_suite(void)
{
	Suite *s = suite_create("explain");
	TCase *tc = tcase_create("explain");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_explain_peak_by_pool_and_category);
	tcase_add_test(tc, test_explain_oom);
	tcase_add_test(tc, test_explain_figs);
	tcase_add_test(tc, test_json_tree);
	tcase_add_test(tc, test_explain_snapshot_frames);
	tcase_add_test(tc, test_explain_untagged);
	tcase_add_test(tc, test_csv_bad_category);
	tcase_add_test(tc, test_torch_formats);
	tcase_add_test(tc, test_warnings);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(explain_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
