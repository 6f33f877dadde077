/*
 * lab/measure.h without a GPU: a stand-in for validate/torch_replay.py
 * (run by /bin/sh) answers the bridge's protocol; the measurement's
 * settings are made canonical and its row stored through the job's store
 * (kind measured, addresses device, no setting key) with its stats,
 * run_meta and device events.
 */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "lab/measure.h"
#include "sim/error.h"
#include "sim/results.h"
#include "testutil.h"

static const char *dirs[2];

static void
bridge(void)
{
	static const char sh[] =
		"[ \"$(grep -c '^a ' \"$1\")\" = 2 ] || exit 3\n"
		"[ \"$2\" = 1048576 ] || exit 5\n"
		"echo 'meta device Fake_GPU'\n"
		"echo 'meta torch 2.11.0'\n"
		"echo 'stat reserved_bytes.all.peak 2097152'\n"
		"echo 'stat allocated_bytes.all.peak 1100'\n"
		"echo 'stat num_device_alloc 1'\n"
		"echo 'event 0 segment_alloc 4096 2097152'\n"
		"echo 'oom -1'\n";
	write_bytes("torch_replay.py", sh, sizeof(sh) - 1);
	static const char csv[] = "action,addr,size\nalloc,4096,100\n"
				  "free_completed,4096,100\nalloc,8192,1000\n";
	write_bytes("t.csv", csv, sizeof(csv) - 1);
	dirs[0] = tmpdir_path();
	unsetenv("MEMSIM_VALIDATE_DIR");
}

START_TEST(test_measure_stores_the_measured_row)
{
	bridge();
	const char *trace = tmp_keep("t.csv"), *db = tmp_keep("m.db");
	msim_measure_spec_t s = {
		.trace = trace, .mode = MSIM_VMODE_TORCH,
		.conf = "max_split_size_mb:64,expandable_segments:False",
		.cap = 1048576,
		.python = "/bin/sh", .bridge_dirs = dirs, .db_path = db,
	};
	msim_measure_t r;
	char why[1024];
	ck_assert_msg(msim_measure_run(&s, &r, why, sizeof(why)) == 0, "%s",
		      why);
	ck_assert_str_eq(r.canon, "max_split_size_mb:64");
	ck_assert_str_eq(r.policy, "pytorch");
	ck_assert_int_eq(r.run_id, 1);
	ck_assert_uint_eq(r.m.requests, 3);
	ck_assert_str_eq(r.malloc_us, "");
	msim_measure_clear(&r);
	msim_db_t *d;
	ck_assert_int_eq(msim_db_open_readonly(db, &d, why, sizeof(why)), 0);
	msim_db_run_t run;
	ck_assert_int_eq(msim_db_run_get(d, 1, &run), 0);
	ck_assert_str_eq(run.kind, "measured");
	ck_assert_str_eq(run.policy, "pytorch");
	ck_assert_str_eq(run.params, "max_split_size_mb:64");
	ck_assert_str_eq(run.addresses, "device");
	ck_assert_str_eq(run.trace_format, "csv");
	ck_assert_ptr_null(run.setting_key);
	ck_assert_uint_eq(run.cap_bytes, 1048576);
	ck_assert_int_eq(run.requests, 3);
	ck_assert_int_eq(run.oom_request, -1);
	ck_assert_int_eq(run.peak_reserved_bytes, 2097152);
	ck_assert_int_eq(run.peak_allocated_bytes, 1100);
	msim_db_run_clear(&run);
	char mode[16];
	ck_assert_int_eq(msim_db_run_meta_get(d, 1, "mode", mode, sizeof(mode)),
			 0);
	ck_assert_str_eq(mode, "torch");
	int64_t v;
	ck_assert_int_eq(msim_db_run_stat(d, 1, "num_device_alloc", &v), 0);
	ck_assert_int_eq(v, 1);
	msim_db_close(d);
	/* Measured again: a new row, not the same one replaced. */
	ck_assert_int_eq(msim_measure_run(&s, &r, why, sizeof(why)), 0);
	ck_assert_int_eq(r.run_id, 2);
	msim_measure_clear(&r);
}
END_TEST

START_TEST(test_measure_refuses)
{
	bridge();
	const char *trace = tmp_keep("t.csv");
	msim_measure_spec_t s = {
		.trace = trace, .mode = MSIM_VMODE_TORCH, .conf = "garbage",
		.python = "/bin/sh", .bridge_dirs = dirs,
	};
	msim_measure_t r;
	char why[1024];
	ck_assert_int_eq(msim_measure_run(&s, &r, why, sizeof(why)),
			 MSIM_EINVAL);
	ck_assert_str_eq(why, "--alloc-conf: 'garbage': unknown key (did you "
			 "mean garbage_collection_threshold?)");
	s.mode = MSIM_VMODE_RAW;
	ck_assert_int_eq(msim_measure_run(&s, &r, why, sizeof(why)),
			 MSIM_EINVAL);
	ck_assert_str_eq(why, "--alloc-conf applies to torch mode only");
	s.conf = NULL; /* no CUDA hook: raw is not supported */
	ck_assert_int_eq(msim_measure_run(&s, &r, why, sizeof(why)),
			 MSIM_ENOTSUP);
	s.mode = MSIM_VMODE_TORCH;
	const char *none[] = {"/nonexistent", NULL};
	s.bridge_dirs = none;
	ck_assert_int_eq(msim_measure_run(&s, &r, why, sizeof(why)),
			 MSIM_ENOTFOUND);
	ck_assert_str_eq(why, "cannot find torch_replay.py (set "
			      "MEMSIM_VALIDATE_DIR)");
	/* The stand-in checks the cap: a bridge that fails is an error. */
	s.bridge_dirs = dirs;
	ck_assert_int_ne(msim_measure_run(&s, &r, why, sizeof(why)), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("measure");
	TCase *tc = tcase_create("measure");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, test_measure_stores_the_measured_row);
	tcase_add_test(tc, test_measure_refuses);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
