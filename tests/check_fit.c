/*
 * lab/fit.h: the bisection over a family of hand-made traces recorded
 * already (t-B.csv: B blocks of 20 MiB live at once, each its own 20 MiB
 * segment under the pytorch policy: a request over 10 MiB is rounded up
 * to 2 MiB, round_size), under a cap of 110 MiB: B = 5 fits (100 MiB),
 * 6 does not (120 MiB).  Then the candidates on the winner.
 */
#include <config.h>

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lab/fit.h"
#include "sim/error.h"
#include "testutil.h"

#define MIB 1048576ULL

/* t-1.csv .. t-8.csv in the scratch folder. */
static void
family(void)
{
	for (int b = 1; b <= 8; b++) {
		char name[32], csv[1024];
		int n = snprintf(csv, sizeof(csv), "action,addr,size\n");
		for (int i = 0; i < b; i++)
			n += snprintf(csv + n, sizeof(csv) - (size_t)n,
				      "alloc,%d,%llu\n", 4096 * (i + 1),
				      20 * MIB);
		for (int i = 0; i < b; i++)
			n += snprintf(csv + n, sizeof(csv) - (size_t)n,
				      "free_completed,%d,%llu\n",
				      4096 * (i + 1), 20 * MIB);
		snprintf(name, sizeof(name), "t-%d.csv", b);
		write_bytes(name, csv, (size_t)n);
	}
}

static char notes[16][128];
static int nnotes;

static void
note(void *ctx, const char *line)
{
	(void)ctx;
	if (nnotes < 16)
		snprintf(notes[nnotes++], sizeof(notes[0]), "%s", line);
}

static msim_fit_spec_t
spec_of(uint64_t cap)
{
	const char *pattern = tmp_keep("t-{B}.csv");
	nnotes = 0;
	return (msim_fit_spec_t){
		.cap = cap, .name = "B", .lo = 1, .hi = 8,
		.pattern = pattern, .note = note,
	};
}

START_TEST(test_fit_bisects_to_the_largest_that_fits)
{
	family();
	msim_fit_spec_t s = spec_of(110 * MIB);
	msim_fit_result_t r;
	char why[1024];
	ck_assert_int_eq(msim_fit_run(&s, &r, why, sizeof(why)), 0);
	ck_assert(r.fits);
	ck_assert_int_eq(r.best, 5);
	/* 1 fits, 8 does not; the line through what they need (20 and 160
	 * MiB) meets the cap at 5 (fits), then 6 (not) */
	ck_assert_int_eq(r.tries, 4);
	ck_assert_int_eq(r.at_best.reserved, (int64_t)(100 * MIB));
	ck_assert_int_eq(r.at_best.allocated, (int64_t)(100 * MIB));
	ck_assert(!r.at_best.oom);
	ck_assert_str_eq(r.trace, tmp_path("t-5.csv"));
	ck_assert_int_eq(nnotes, 4);
	ck_assert_str_eq(notes[0], "B=1: peak reserved 20971520");
	ck_assert_str_eq(notes[1], "B=8: peak reserved 104857600, out of "
				   "memory");
	ck_assert_str_eq(notes[2], "B=5: peak reserved 104857600");
	ck_assert_str_eq(notes[3], "B=6: peak reserved 104857600, out of "
				   "memory");
	ck_assert_uint_eq(r.ncurve, 4);
	ck_assert_int_eq(r.curve[3].value, 8);
	ck_assert_int_eq(r.curve[3].reserved, (int64_t)(160 * MIB));
	ck_assert(r.curve[3].capped.oom);
	ck_assert(!r.tuned); /* no tune_db */
	msim_fit_clear(&r);
}
END_TEST

START_TEST(test_fit_top_of_range_and_none)
{
	family();
	msim_fit_spec_t s = spec_of(200 * MIB);
	msim_fit_result_t r;
	char why[1024];
	ck_assert_int_eq(msim_fit_run(&s, &r, why, sizeof(why)), 0);
	ck_assert_int_eq(r.best, 8);
	ck_assert_int_eq(r.tries, 2);
	ck_assert_int_eq(r.at_best.reserved, (int64_t)(160 * MIB));
	msim_fit_clear(&r);
	s = spec_of(10 * MIB);
	ck_assert_int_eq(msim_fit_run(&s, &r, why, sizeof(why)), 0);
	ck_assert(!r.fits);
	ck_assert_int_eq(r.best, 0);
	ck_assert_int_eq(r.tries, 1);
	msim_fit_clear(&r);
}
END_TEST

START_TEST(test_fit_candidates)
{
	family();
	/* roundup_power2_divisions:2 rounds 20 MiB up to 24 MiB (the next
	 * half-way point between 16 and 32 MiB, roundup_power2_next_division;
	 * docs/pytorch-allocator.md 1.2): 5 blocks need 120 MiB.
	 * max_split_size_mb:64 changes nothing here and is not lower than
	 * the defaults, so the defaults stay best. */
	const char *confs[] = {"roundup_power2_divisions:2",
			       "max_split_size_mb:64"};
	msim_fit_spec_t s = spec_of(110 * MIB);
	s.confs = confs;
	s.nconf = 2;
	msim_fit_result_t r;
	char why[1024];
	ck_assert_int_eq(msim_fit_run(&s, &r, why, sizeof(why)), 0);
	ck_assert_int_eq(r.best, 5);
	ck_assert(r.cand[0].oom);
	ck_assert_int_eq(r.cand[0].reserved, (int64_t)(96 * MIB));
	ck_assert(!r.cand[1].oom);
	ck_assert_int_eq(r.cand[1].reserved, (int64_t)(100 * MIB));
	ck_assert_uint_eq(r.best_conf, 2);
	ck_assert_int_eq(r.conf_best.reserved, (int64_t)(100 * MIB));
	msim_fit_clear(&r);
	/* A candidate that does not parse names the option. */
	const char *bad[] = {"garbage"};
	s.confs = bad;
	s.nconf = 1;
	ck_assert_int_eq(msim_fit_run(&s, &r, why, sizeof(why)), MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "--alloc-conf: "));
	ck_assert_ptr_nonnull(strstr(why, "t-5.csv"));
	msim_fit_clear(&r);
}
END_TEST

/* t-V.csv for value v: n blocks of 20 MiB. */
static void
trace_of(long v, int n)
{
	char name[64], csv[1024];
	int len = snprintf(csv, sizeof(csv), "action,addr,size\n");
	for (int i = 0; i < n; i++)
		len += snprintf(csv + len, sizeof(csv) - (size_t)len,
				"alloc,%d,%llu\n", 4096 * (i + 1), 20 * MIB);
	snprintf(name, sizeof(name), "t-%ld.csv", v);
	write_bytes(name, csv, (size_t)len);
}

/* Any range of long, the whole of it included: the search's arithmetic
 * never overflows.  V <= 5 fits (min(max(V, 1), 5) blocks); above, 6
 * blocks run out of memory under 110 MiB.  The values the search picks
 * are made as it asks for them (its error names the trace missing), so
 * each is tried once; the search takes at most three times bisection's
 * recordings (lab/fit.c). */
START_TEST(test_fit_any_range)
{
	long lo = LONG_MIN + 1, hi = LONG_MAX;
	int made = 0;
	msim_fit_spec_t s = spec_of(110 * MIB);
	s.lo = lo;
	s.hi = hi;
	msim_fit_result_t r;
	char why[1024];
	int rc;
	while ((rc = msim_fit_run(&s, &r, why, sizeof(why))) == MSIM_EIO) {
		long v;
		const char *base = strrchr(why, '/');
		ck_assert_msg(base && sscanf(base, "/t-%ld.csv:", &v) == 1,
			      "%s", why);
		trace_of(v, v <= 5 ? (v < 1 ? 1 : (int)v) : 6);
		made++;
		msim_fit_clear(&r);
		ck_assert_int_le(made, 3 * 64 + 2);
	}
	ck_assert_int_eq(rc, 0);
	ck_assert(r.fits);
	ck_assert_int_eq(r.best, 5);
	ck_assert_int_eq(r.tries, made);
	ck_assert_uint_eq(r.ncurve, (size_t)made);
	for (size_t i = 1; i < r.ncurve; i++)
		ck_assert_int_lt(r.curve[i - 1].value, r.curve[i].value);
	ck_assert_str_eq(r.growth, "");
	msim_fit_clear(&r);
}
END_TEST

/* Peaks that do not grow with the value are said, in the result and to
 * note: a lower peak at a larger value, the same peaks at every value. */
START_TEST(test_fit_growth)
{
	/* tried: 1 (4 blocks), 8 (6: out of memory), then the line's
	 * guesses 6 (6: out of memory), 4 (2), 5 (2) */
	int blocks[9] = {0, 4, 0, 0, 2, 2, 6, 0, 6};
	for (long v = 1; v <= 8; v++)
		trace_of(v, blocks[v] ? blocks[v] : 1);
	msim_fit_spec_t s = spec_of(110 * MIB);
	msim_fit_result_t r;
	char why[1024];
	ck_assert_int_eq(msim_fit_run(&s, &r, why, sizeof(why)), 0);
	ck_assert_int_eq(r.best, 5);
	ck_assert_str_eq(r.growth, "the peaks do not grow with B (B=1: "
			 "83886080 bytes allocated, B=4: 41943040); the "
			 "search assumes they do, so the answer may be wrong");
	ck_assert(!strncmp(notes[nnotes - 1], r.growth, sizeof(notes[0]) - 1));
	msim_fit_clear(&r);
	for (long v = 1; v <= 8; v++)
		trace_of(v, 2);
	s = spec_of(110 * MIB);
	ck_assert_int_eq(msim_fit_run(&s, &r, why, sizeof(why)), 0);
	ck_assert_int_eq(r.best, 8);
	ck_assert_str_eq(r.growth, "the peaks are the same at every B tried: "
			 "B may not change the memory (is {B} used by the "
			 "script?)");
	msim_fit_clear(&r);
}
END_TEST

START_TEST(test_fit_errors)
{
	msim_fit_spec_t s = spec_of(110 * MIB);
	msim_fit_result_t r;
	char why[1024];
	ck_assert_int_eq(msim_fit_run(&s, &r, why, sizeof(why)), MSIM_EIO);
	ck_assert_ptr_nonnull(strstr(why, "t-1.csv: "));
	msim_fit_clear(&r);
	char name[64];
	long lo, hi;
	ck_assert_int_eq(msim_fit_parse_vary("batch=2..16", name, sizeof(name),
					     &lo, &hi, why, sizeof(why)), 0);
	ck_assert_str_eq(name, "batch");
	ck_assert_int_eq(lo, 2);
	ck_assert_int_eq(hi, 16);
	ck_assert_int_eq(msim_fit_parse_vary("B=9..x", name, sizeof(name),
					     &lo, &hi, why, sizeof(why)),
			 MSIM_EINVAL);
	ck_assert_str_eq(why, "--vary 'B=9..x': expected integers LO <= HI");
	ck_assert_int_eq(msim_fit_parse_vary("=1..2", name, sizeof(name), &lo,
					     &hi, why, sizeof(why)),
			 MSIM_EINVAL);
	ck_assert_str_eq(why, "--vary '=1..2': expected NAME=LO..HI");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("fit");
	TCase *tc = tcase_create("fit");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	/* a guard against a hang: test_fit_any_range writes up to 194
	 * traces, 28 s of wall time under ASan on a loaded 2-core machine */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fit_bisects_to_the_largest_that_fits);
	tcase_add_test(tc, test_fit_top_of_range_and_none);
	tcase_add_test(tc, test_fit_candidates);
	tcase_add_test(tc, test_fit_errors);
	tcase_add_test(tc, test_fit_any_range);
	tcase_add_test(tc, test_fit_growth);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
