/*
 * The C API (lib/memsim.h) never crashes its caller: every function given
 * NULL, a closed run or a pointer that is no run returns the error the
 * header names (or 0, NULL, a message), and closing twice is harmless,
 * also once a new run took the closed run's place.  Written against
 * memsim.h alone and linked to libmemsim as a user's program is.
 */
#include <config.h>

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memsim.h"
#include "testutil.h"

static char trace[4096];

static void
setup(void)
{
	snprintf(trace, sizeof(trace), "%s",
		 test_data("traces/gpt2_varlen.csv"));
}

/* Every function taking a run, given h, returns code (or 0 / NULL). */
static void
all_refuse(memsim_run_t *h, int code)
{
	int64_t v = 7;
	double d;
	const char *t;
	memsim_point_t pt;
	ck_assert_int_eq(memsim_set_policy(h, "bfc", NULL), code);
	ck_assert_int_eq(memsim_set_option(h, "cap", "1GiB"), code);
	ck_assert_int_eq(memsim_replay(h), code);
	ck_assert_int_eq(memsim_explain(h), code);
	ck_assert_uint_eq(memsim_count(h), 0);
	ck_assert_ptr_null(memsim_name(h, 0));
	ck_assert_int_eq(memsim_get_kind(h, "requests"), code);
	ck_assert_int_eq(memsim_get_int(h, "requests", &v), code);
	ck_assert_int_eq(memsim_get_real(h, "requests", &d), code);
	ck_assert_int_eq(memsim_get_text(h, "policy", &t), code);
	ck_assert_uint_eq(memsim_timeline_len(h), 0);
	ck_assert_int_eq(memsim_timeline_get(h, 0, &pt), code);
	ck_assert_int_eq(memsim_store(h, "x.db", &v), code);
	ck_assert_int_eq(v, -1);
	ck_assert_ptr_nonnull(memsim_errmsg(h));
	memsim_close(h);
	memsim_close(h);
}

START_TEST(test_api_null_run)
{
	all_refuse(NULL, MEMSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(memsim_errmsg(NULL), "no run"));
}
END_TEST

START_TEST(test_api_not_a_run)
{
	/* A pointer memsim_open() did not give: an address of the caller's. */
	int x;
	all_refuse((memsim_run_t *)(void *)&x, MEMSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(memsim_errmsg((memsim_run_t *)(void *)&x),
				     "not a run"));
}
END_TEST

START_TEST(test_api_null_arguments)
{
	memsim_run_t *r;
	int64_t v;
	memsim_point_t pt;
	ck_assert_int_eq(memsim_open(NULL, trace), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_load(NULL, "x.db", 1), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_open(&r, NULL), MEMSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(memsim_errmsg(r), "no trace"));
	/* Replaying it anyway (found by fuzz_api: a NULL trace path reached
	 * the reader's strdup()). */
	ck_assert_int_eq(memsim_replay(r), MEMSIM_ESTATE);
	ck_assert_ptr_nonnull(strstr(memsim_errmsg(r), "no trace to replay"));
	memsim_close(r);
	ck_assert_int_eq(memsim_open(&r, trace), 0);
	ck_assert_int_eq(memsim_set_policy(r, NULL, NULL), MEMSIM_EPOLICY);
	ck_assert_int_eq(memsim_set_option(r, NULL, "1"), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_set_option(r, "cap", NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_replay(r), 0);
	ck_assert_int_eq(memsim_get_int(r, "requests", NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_get_real(r, "requests", NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_get_text(r, "policy", NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_get_int(r, NULL, &v), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_get_kind(r, NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_timeline_get(r, 0, NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_store(r, NULL, NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_get_int(r, "requests", &v), 0);
	ck_assert_int_gt(v, 0);
	ck_assert_int_eq(memsim_timeline_get(r, 0, &pt), 0);
	memsim_close(r);
	size_t n = 5;
	const char *msg;
	ck_assert_int_eq(memsim_list_runs("x.db", NULL, 0, NULL, &msg),
			 MEMSIM_EINVAL);
	ck_assert_str_ne(msg, "");
	ck_assert_int_eq(memsim_list_runs("x.db", NULL, 4, &n, NULL),
			 MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_list_runs(NULL, NULL, 0, &n, NULL),
			 MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_load(&r, NULL, 1), MEMSIM_EINVAL);
	memsim_close(r);
}
END_TEST

START_TEST(test_api_closed_run)
{
	memsim_run_t *r, *r2;
	int64_t v;
	ck_assert_int_eq(memsim_open(&r, trace), 0);
	ck_assert_int_eq(memsim_replay(r), 0);
	memsim_close(r);
	all_refuse(r, MEMSIM_ESTATE); /* closes r twice more */
	ck_assert_str_eq(memsim_errmsg(r), "the run is closed");
	/* A new run may take r's place: r still names no run, and closing
	 * r again leaves the new one be. */
	ck_assert_int_eq(memsim_open(&r2, trace), 0);
	memsim_close(r);
	ck_assert_int_eq(memsim_replay(r2), 0);
	ck_assert_int_eq(memsim_get_int(r2, "requests", &v), 0);
	ck_assert_int_eq(memsim_get_int(r, "requests", &v), MEMSIM_ESTATE);
	memsim_close(r2);
	memsim_close(r2);
}
END_TEST

/* memsim_explain() in place of memsim_replay(): once, its figures read
 * as a run's, no timeline, not stored; memsim_parse_bytes(). */
START_TEST(test_api_explain)
{
	memsim_run_t *r;
	int64_t v, peak;
	const char *t;
	memsim_point_t pt;
	ck_assert_int_eq(memsim_open(&r, trace), 0);
	ck_assert_int_eq(memsim_set_option(r, "context_bytes", "lots"),
			 MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_set_option(r, "context_bytes", "750MiB"), 0);
	ck_assert_int_eq(memsim_explain(r), 0);
	ck_assert_int_eq(memsim_explain(r), MEMSIM_ESTATE);
	ck_assert_int_eq(memsim_replay(r), MEMSIM_ESTATE);
	ck_assert_int_eq(memsim_get_int(r, "context_bytes", &v), 0);
	ck_assert_int_eq(v, 750 << 20);
	ck_assert_int_eq(memsim_get_int(r, "peak.all.reserved", &peak), 0);
	ck_assert_int_eq(memsim_get_int(r, "peak.nvidia_smi_bytes", &v), 0);
	ck_assert_int_eq(v, peak + (750 << 20));
	ck_assert_int_eq(memsim_get_int(r, "oom_request", &v), 0);
	ck_assert_int_eq(v, -1);
	ck_assert_int_eq(memsim_get_kind(r, "oom.message"), MEMSIM_ENOTFOUND);
	ck_assert_int_eq(memsim_get_text(r, "summary", &t), 0);
	ck_assert_ptr_nonnull(strstr(t, "PyTorch CUDA memory summary"));
	ck_assert_uint_eq(memsim_timeline_len(r), 0);
	ck_assert_int_eq(memsim_timeline_get(r, 0, &pt), MEMSIM_ESTATE);
	ck_assert_int_eq(memsim_store(r, "x.db", NULL), MEMSIM_ESTATE);
	memsim_close(r);
	/* At a cap it runs out of memory: PyTorch's message. */
	ck_assert_int_eq(memsim_open(&r, trace), 0);
	ck_assert_int_eq(memsim_set_option(r, "cap", "2GiB"), 0);
	ck_assert_int_eq(memsim_explain(r), 0);
	ck_assert_int_eq(memsim_get_int(r, "oom_request", &v), 0);
	ck_assert_int_ge(v, 0);
	ck_assert_int_eq(memsim_get_text(r, "oom.message", &t), 0);
	ck_assert_ptr_nonnull(strstr(t, "CUDA out of memory. Tried to "
				     "allocate "));
	memsim_close(r);
	uint64_t b;
	ck_assert_int_eq(memsim_parse_bytes("1.5GiB", &b), 0);
	ck_assert_uint_eq(b, UINT64_C(3) << 29);
	ck_assert_int_eq(memsim_parse_bytes("80GB", &b), 0);
	ck_assert_uint_eq(b, UINT64_C(80000000000));
	ck_assert_int_eq(memsim_parse_bytes("16 GiB", &b), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_parse_bytes(NULL, &b), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_parse_bytes("1", NULL), MEMSIM_EINVAL);
}
END_TEST

/* memsim_live_*: the caching allocator served request by request, with
 * exact figures (round_size, a 2 MiB segment of the small pool, a 20 MiB
 * one of the large, release_cached_blocks before an OOM), and its refusals
 * of what is not a request. */
static int64_t
live_stat(const memsim_live_t *lv, const char *name)
{
	int64_t v = -1;
	ck_assert_int_eq(memsim_live_get(lv, name, &v), 0);
	return v;
}

START_TEST(test_api_live)
{
	memsim_live_t *lv;
	int64_t v;
	const uint64_t A = UINT64_C(1) << 32, B = UINT64_C(2) << 32,
		       C = UINT64_C(3) << 32, GiB = UINT64_C(1) << 30;
	ck_assert_int_eq(memsim_live_open(NULL, NULL, NULL, 0, 0, 0),
			 MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_live_open(&lv, "lifo", NULL, 0, 0, 0),
			 MEMSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(memsim_live_errmsg(lv), "unknown policy"));
	memsim_live_close(lv);
	ck_assert_int_eq(memsim_live_open(&lv, NULL, "max_split_size_mb=3", 0,
					  0, 0), MEMSIM_EINVAL);
	ck_assert_str_ne(memsim_live_errmsg(lv), "");
	memsim_live_close(lv);
	ck_assert_int_eq(memsim_live_open(&lv, NULL, NULL, GiB, GiB, 0),
			 MEMSIM_EINVAL);
	memsim_live_close(lv);
	ck_assert_int_eq(memsim_live_request(NULL, "alloc", A, 1, 0),
			 MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_live_get(NULL, "num_ooms", &v), MEMSIM_EINVAL);
	ck_assert_ptr_nonnull(memsim_live_errmsg(NULL));
	memsim_live_close(NULL);

	/* 1 GiB less a 100 MiB context. */
	ck_assert_int_eq(memsim_live_open(&lv, "pytorch", "", GiB, 100 << 20,
					  0), 0);
	ck_assert_int_eq(memsim_live_request(lv, "alloc", A, 1000, 0), 0);
	ck_assert_int_eq(live_stat(lv, "allocated_bytes.all.current"), 1024);
	ck_assert_int_eq(live_stat(lv, "reserved_bytes.all.current"), 2 << 20);
	ck_assert_int_eq(memsim_live_request(lv, "alloc", B, 5 << 20, 0), 0);
	ck_assert_int_eq(live_stat(lv, "reserved_bytes.large_pool.current"),
			 20 << 20);
	ck_assert_int_eq(memsim_live_request(lv, "free_completed", A, 0, 0), 0);
	ck_assert_int_eq(live_stat(lv, "reserved_bytes.all.current"), 22 << 20);
	/* 1000 MiB do not fit in 924 MiB: the free 2 MiB segment is given
	 * back first, the alloc refused and counted. */
	ck_assert_int_eq(memsim_live_request(lv, "alloc", C, 1000 << 20, 0), 1);
	ck_assert_int_eq(live_stat(lv, "reserved_bytes.all.current"), 20 << 20);
	ck_assert_int_eq(live_stat(lv, "num_ooms"), 1);
	ck_assert_int_eq(live_stat(lv, "reserved_bytes.all.peak"), 22 << 20);
	/* The refused block is no block; its address can be used again. */
	ck_assert_int_eq(memsim_live_request(lv, "free_completed", C, 0, 0),
			 MEMSIM_ENOTFOUND);
	ck_assert_int_eq(memsim_live_request(lv, "alloc", C, 512, 1), 0);
	ck_assert_int_eq(memsim_live_request(lv, "alloc", C, 512, 1),
			 MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_live_request(lv, "alloc", 0, 512, 1),
			 MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_live_request(lv, "alloc", A, 0, 1),
			 MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_live_request(lv, "oom", A, 8, 0),
			 MEMSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(memsim_live_errmsg(lv), "'oom'"));
	ck_assert_int_eq(memsim_live_request(lv, "pool_begin", 0, 0, 0),
			 MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_live_request(lv, "free_completed", B, 0, 0), 0);
	ck_assert_int_eq(memsim_live_request(lv, "empty_cache", 0, 0, 0), 0);
	ck_assert_int_eq(live_stat(lv, "reserved_bytes.all.current"), 2 << 20);
	ck_assert_int_eq(memsim_live_request(lv, "reset_peaks", 0, 0, 0), 0);
	ck_assert_int_eq(live_stat(lv, "reserved_bytes.all.peak"), 2 << 20);
	ck_assert_int_eq(memsim_live_get(lv, "reserved", &v), MEMSIM_ENOTFOUND);
	memsim_live_close(lv);
	/* A token, as a run's: closed, or no handle, or a run's. */
	ck_assert_int_eq(memsim_live_request(lv, "empty_cache", 0, 0, 0),
			 MEMSIM_ESTATE);
	ck_assert_int_eq(memsim_live_get(lv, "num_ooms", &v), MEMSIM_ESTATE);
	ck_assert_ptr_nonnull(strstr(memsim_live_errmsg(lv), "closed"));
	memsim_live_close(lv);
	memsim_live_t *bogus = (memsim_live_t *)(void *)&v;
	ck_assert_int_eq(memsim_live_request(bogus, "empty_cache", 0, 0, 0),
			 MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_live_get(bogus, "num_ooms", &v),
			 MEMSIM_EINVAL);
	memsim_live_close(bogus);
	memsim_run_t *r;
	ck_assert_int_eq(memsim_open(&r, trace), 0);
	ck_assert_int_eq(memsim_live_get((memsim_live_t *)(void *)r,
					 "num_ooms", &v), MEMSIM_EINVAL);
	memsim_live_close((memsim_live_t *)(void *)r);
	ck_assert_int_eq(memsim_replay(r), 0);
	memsim_close(r);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("handles");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_api_null_run);
	tcase_add_test(tc, test_api_not_a_run);
	tcase_add_test(tc, test_api_null_arguments);
	tcase_add_test(tc, test_api_closed_run);
	tcase_add_test(tc, test_api_explain);
	tcase_add_test(tc, test_api_live);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
