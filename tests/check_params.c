/* Parameters: PyTorch's syntax, PyTorch's checks
 * (docs/pytorch-allocator.md §8.1), canonical form. */
#include <config.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "sim/params.h"
#include "policies/registry.h"
#include "sim/error.h"
#include "sim/units.h"

static msim_params_t pv;

static void
setup(void)
{
	ck_assert_int_eq(msim_params_init(&pv, msim_policy_find("pytorch")->params),
			 0);
}

static void
teardown(void)
{
	msim_params_clear(&pv);
}

static const char *
canon(void)
{
	static char buf[512];
	msim_params_canonical(&pv, buf, sizeof(buf));
	return buf;
}

START_TEST(test_parse_and_canonical)
{
	ck_assert_str_eq(canon(), "");
	ck_assert_int_eq(msim_params_parse(&pv, " garbage_collection_threshold"
					   ":0.60 , max_split_size_mb:128"),
			 0);
	/* Table order, normalised numbers. */
	ck_assert_str_eq(canon(), "max_split_size_mb:128,"
				  "garbage_collection_threshold:0.6");
	/* memsim's own spelling, for sweep grids; PyTorch's parse refuses
	 * "none" (std::stoull) and key=value. */
	ck_assert_int_eq(msim_params_set(&pv, "max_split_size_mb", "none"), 0);
	ck_assert_int_eq(msim_params_parse(&pv, "max_split_size_mb=none"),
			 MSIM_EINVAL);
	ck_assert_int_eq(msim_params_parse(&pv, "max_split_size_mb:none"),
			 MSIM_EINVAL);
	ck_assert_str_eq(canon(), "garbage_collection_threshold:0.6");
	ck_assert_int_eq(msim_params_parse(
		&pv, "roundup_power2_divisions:[256:1,512:2,>:4]"), 0);
	ck_assert_ptr_nonnull(strstr(canon(), "[256:1,512:2,>:4]"));
	ck_assert_int_eq(msim_params_parse(&pv, "expandable_segments:False"),
			 0);
	ck_assert_ptr_null(strstr(canon(), "expandable"));
	int i = msim_params_index(&pv, "max_split_size_mb");
	ck_assert_int_ge(i, 0);
	ck_assert(pv.v[i].none);
	ck_assert_int_eq(msim_params_index(&pv, "nope"), -1);
}
END_TEST

START_TEST(test_errors_name_key_and_reason)
{
	static const struct {
		const char *conf, *msg;
	} c[] = {
		{"foo:1", "'foo': unknown key (see `memsim policies`)"},
		{"max_split_sise_mb:64", "'max_split_sise_mb': unknown key "
		 "(did you mean max_split_size_mb?)"},
		{"max_split_size_mb=64", "PyTorch takes key:value, not "
		 "key=value (max_split_size_mb:64)"},
		{"max_split_size_mb", "expected key:value"},
		{"max_split_size_mb:", "max_split_size_mb: no value"},
		{",,", "',': a separator where a key was expected"},
		{":5", "':': a separator where a key was expected"},
		{"max_split_size_mb:abc", "not a whole number"},
		{"expandable_segments:true", "'true' is not True or False"},
		{"garbage_collection_threshold:1", "outside (0, 1)"},
		{"garbage_collection_threshold:x", "not a number"},
		{"expandable_segments:yes", "not True or False"},
		{"roundup_power2_divisions:[1:2", "no closing"},
		{"roundup_power2_divisions:[1:3]", "power of two"},
		{"per_process_memory_fraction:1.5", "outside [0, 1]"},
		{"large_segment_size_mb:10", "outside [11"},
	};
	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		ck_assert_int_eq(msim_params_parse(&pv, c[k].conf), MSIM_EINVAL);
		ck_assert_msg(strstr(pv.errmsg, c[k].msg), "%s: '%s'",
			      c[k].conf, pv.errmsg);
	}
}
END_TEST

START_TEST(test_copy_is_independent)
{
	msim_params_t b;
	ck_assert_int_eq(msim_params_parse(&pv, "max_split_size_mb:64"), 0);
	ck_assert_int_eq(msim_params_copy(&b, &pv), 0);
	ck_assert_int_eq(msim_params_parse(&pv, "max_split_size_mb:128"), 0);
	int i = msim_params_index(&b, "max_split_size_mb");
	ck_assert_uint_eq(b.v[i].u, 64);
	msim_params_clear(&b);
}
END_TEST

START_TEST(test_byte_sizes)
{
	static const struct {
		const char *text;
		uint64_t v;
	} ok[] = {
		{"4096", 4096}, {"16GiB", UINT64_C(16) << 30},
		{"512MiB", UINT64_C(512) << 20}, {"512mib", UINT64_C(512) << 20},
		{"1.5GiB", UINT64_C(3) << 29}, {"2G", UINT64_C(2) << 30},
		{"1GB", 1000000000}, {"10B", 10}, {"1KiB", 1024},
	};
	for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++) {
		uint64_t v;
		ck_assert_int_eq(msim_parse_bytes(ok[k].text, &v), 0);
		ck_assert_uint_eq(v, ok[k].v);
	}
	static const char *const bad[] = {"", "GiB", "-1", "1.5", "3XB",
					  "1.0000001KiB", "99999999999TiB"};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		uint64_t v;
		ck_assert_msg(msim_parse_bytes(bad[k], &v) == MSIM_EINVAL,
			      "'%s' accepted", bad[k]);
	}
	char buf[32];
	ck_assert_str_eq(msim_format_bytes(UINT64_C(38092668928), buf,
					   sizeof(buf)), "35.48 GiB");
	ck_assert_str_eq(msim_format_bytes(100, buf, sizeof(buf)), "100 B");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("params");
	TCase *tc = tcase_create("params");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_parse_and_canonical);
	tcase_add_test(tc, test_errors_name_key_and_reason);
	tcase_add_test(tc, test_copy_is_independent);
	tcase_add_test(tc, test_byte_sizes);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
