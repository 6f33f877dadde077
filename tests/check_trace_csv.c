/*
 * The device-trace CSV reader: the real traces read in full with the right
 * counts, and every kind of bad input rejected with file:line: reason.
 */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/error.h"
#include "testutil.h"
#include "traces/trace.h"

static char tmp[64];

/* Writes text to a fresh temporary file; returns its path. */
static const char *
write_tmp(const char *text)
{
	snprintf(tmp, sizeof(tmp), "/tmp/memsim-csv-XXXXXX");
	int fd = mkstemp(tmp);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return tmp;
}

/* Reads path to the end; returns the final status and counts kinds. */
static int
read_all(const char *path, const msim_trace_options_t *opt,
	 unsigned counts[8], char *err, size_t errlen)
{
	msim_trace_t *t;
	int rc = msim_trace_open(path, opt, &t, err, errlen);
	if (rc)
		return rc;
	msim_req_t r;
	while ((rc = msim_trace_next(t, &r)) == 1)
		if (counts)
			counts[r.kind]++;
	if (rc < 0)
		snprintf(err, errlen, "%s", msim_trace_errmsg(t));
	msim_trace_close(t);
	return rc;
}

START_TEST(test_real_traces_counts)
{
	static const struct {
		const char *name;
		unsigned alloc, free, seg;
	} c[] = {
		{"traces/gpt2_fp32.csv", 3651, 3648, 198},
		{"traces/gpt2_varlen.csv", 11883, 11880, 160},
		{"traces/resnet50_amp.csv", 2650, 2647, 96},
		{"traces/bert_infer_varlen.csv", 2253, 2251, 35},
		{"traces/prefetch_2stream.csv", 2113, 2108, 37},
		{"traces/train_eval_emptycache.csv", 2309, 2306, 104},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		unsigned n[8] = {0};
		char err[512] = "";
		ck_assert_msg(read_all(test_data(c[i].name), NULL, n, err,
				       sizeof(err)) == 0, "%s", err);
		ck_assert_uint_eq(n[MSIM_REQ_ALLOC], c[i].alloc);
		ck_assert_uint_eq(n[MSIM_REQ_FREE], c[i].free);
		ck_assert_uint_eq(n[MSIM_REQ_SEGMENT_HINT], c[i].seg);
		ck_assert_uint_eq(n[MSIM_REQ_FREE_REQUESTED], 0);
	}
	/* With deferred frees, free_requested rows come through too. */
	unsigned n[8] = {0};
	char err[512];
	msim_trace_options_t opt = {.deferred_frees = true};
	ck_assert_int_eq(read_all(test_data("traces/prefetch_2stream.csv"),
				  &opt, n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n[MSIM_REQ_FREE_REQUESTED], 2110);
}
END_TEST

START_TEST(test_requests_fields_and_ids)
{
	const char *p = write_tmp(
		"seq,time_us,action,addr,size,stream\n"
		"0,1000,segment_alloc,4096,2097152,0\n"
		"1,1001,alloc,4096,100,7\r\n"
		"2,1003,alloc,0x2000,600,0\n"
		"3,1004,free_requested,4096,100,7\n"
		"4,1005,free_completed,4096,100,7\n"
		"5,1010,alloc,4096,50,0"); /* no final newline */
	msim_trace_t *t;
	char err[256];
	ck_assert_int_eq(msim_trace_open(p, NULL, &t, err, sizeof(err)), 0);
	ck_assert_str_eq(msim_trace_format_name(t), "csv");
	msim_req_t r;
	ck_assert_int_eq(msim_trace_next(t, &r), 1);
	ck_assert_int_eq(r.kind, MSIM_REQ_SEGMENT_HINT);
	ck_assert_uint_eq(r.addr, 4096);
	ck_assert_int_eq(msim_trace_next(t, &r), 1);
	ck_assert_int_eq(r.kind, MSIM_REQ_ALLOC);
	ck_assert_uint_eq(r.size, 100);
	ck_assert_uint_eq(r.stream, 7);
	ck_assert_uint_eq(r.time, 1000);
	uint32_t first = r.id;
	ck_assert_int_eq(msim_trace_next(t, &r), 1);
	ck_assert_uint_eq(r.addr, 0x2000);
	ck_assert_uint_ne(r.id, first);
	ck_assert_int_eq(msim_trace_next(t, &r), 1);
	ck_assert_int_eq(r.kind, MSIM_REQ_FREE);
	ck_assert_uint_eq(r.id, first);
	ck_assert_int_eq(msim_trace_next(t, &r), 1);
	ck_assert_int_eq(r.kind, MSIM_REQ_ALLOC);
	ck_assert_uint_eq(r.id, first); /* ids are reused */
	ck_assert_uint_eq(r.time, 10000);
	ck_assert_int_eq(msim_trace_next(t, &r), 0);
	uint64_t h = msim_trace_hash(t);
	msim_trace_close(t);
	unlink(p);
	/* The same bytes give the same hash; one byte more, another. */
	p = write_tmp("seq,time_us,action,addr,size,stream\n"
		      "0,1000,segment_alloc,4096,2097152,0\n"
		      "1,1001,alloc,4096,100,7\r\n"
		      "2,1003,alloc,0x2000,600,0\n"
		      "3,1004,free_requested,4096,100,7\n"
		      "4,1005,free_completed,4096,100,7\n"
		      "5,1010,alloc,4096,50,0");
	ck_assert_int_eq(msim_trace_open(p, NULL, &t, err, sizeof(err)), 0);
	while (msim_trace_next(t, &r) == 1)
		;
	ck_assert_uint_eq(msim_trace_hash(t), h);
	msim_trace_close(t);
	unlink(p);
}
END_TEST

START_TEST(test_oom_row_is_an_expected_failure)
{
	const char *p = write_tmp("action,addr,size\n"
				  "alloc,4096,100\n"
				  "oom,0,41943040\n"
				  "alloc,8192,100\n");
	msim_trace_t *t;
	char err[256];
	ck_assert_int_eq(msim_trace_open(p, NULL, &t, err, sizeof(err)), 0);
	msim_req_t r;
	ck_assert_int_eq(msim_trace_next(t, &r), 1);
	ck_assert_int_eq(msim_trace_next(t, &r), 1);
	ck_assert_int_eq(r.kind, MSIM_REQ_ALLOC);
	ck_assert_int_eq(r.flags, MSIM_REQF_EXPECT_OOM);
	ck_assert_uint_eq(r.size, 41943040);
	uint32_t oom_id = r.id;
	ck_assert_int_eq(msim_trace_next(t, &r), 1);
	ck_assert_uint_eq(r.id, oom_id); /* the failed malloc's id is free */
	msim_trace_close(t);
	unlink(p);
}
END_TEST

/* Each bad input: the error names the file and line, and the reason. */
START_TEST(test_bad_input_names_file_line_reason)
{
	static const struct {
		const char *text, *where, *why;
	} c[] = {
		{"", "", "empty file"},
		{"seq,action,size\n", "", "no 'addr' column"},
		{"action,addr,size\nalloc,10,x\n", ":2:", "not a whole number"},
		{"action,addr,size\nalloc,10,5,3\n", ":2:", "more than 3"},
		{"action,addr,size\nalloc,10\n", ":2:", "2 fields"},
		{"action,addr,size\nfree_completed,10,5\n", ":2:",
		 "unknown address 0xa"},
		{"action,addr,size\nalloc,10,5\nalloc,10,5\n", ":3:",
		 "still live"},
		{"action,addr,size\nalloc,10,0\n", ":2:", "0 bytes"},
		{"action,addr,size\nmalloc,10,5\n", ":2:", "unknown action"},
		{"action,addr,size\nalloc,-3,5\n", ":2:", "'-3' is negative"},
		{"action,addr,size\nalloc,99999999999999999999999,5\n", ":2:",
		 "is too large"},
		{"action,addr,size\nalloc,1x0,5\n", ":2:", "not a whole number"},
		{"\x80\x02}q\x00", "byte ", "truncated pickle"},
		{"\x01\x02", "", "unknown trace format"},
	};
	/* --strict: a free of an unknown address is an error (by default
	 * the block is seeded: check_trace_segments). */
	static const msim_trace_options_t strict = {.strict = true};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *p = write_tmp(c[i].text);
		char err[512] = "";
		int rc = read_all(p, &strict, NULL, err, sizeof(err));
		ck_assert_msg(rc < 0, "case %zu accepted", i);
		ck_assert_msg(strstr(err, p) && strstr(err, c[i].where) &&
			      strstr(err, c[i].why), "case %zu: '%s'", i, err);
		unlink(p);
	}
	char err[512];
	ck_assert_int_eq(read_all("/nonexistent/x.csv", NULL, NULL, err,
				  sizeof(err)), MSIM_EIO);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.csv"));
}
END_TEST


/* Under the usual header rows are parsed a word at a time: every length
 * of number (1 to 20 digits), hex, leading zeros, CRLF and odd seq
 * fields read as the byte parser reads them, and bad rows give its
 * errors. */
START_TEST(test_usual_header_rows)
{
	const char *text =
		"seq,time_us,action,addr,size,stream\n"
		"0,1,alloc,4096,1,0\n"
		"x,12,alloc,0x2000,12345678,7\r\n"
		",123456789,alloc,00000000000000012288,123456789,18446744073709551615\n"
		"3,1234567890123456789,free_completed,4096,1,0\n"
		"4,1234567890123456790,alloc,9999999999999999999,4611686018427387904,12345678901234567\n";
	const char *p = write_tmp(text);
	char err[512];
	msim_trace_t *t;
	ck_assert_int_eq(msim_trace_open(p, NULL, &t, err, sizeof(err)), 0);
	static const struct {
		uint64_t time_us, addr, size, stream;
		int action;
	} want[] = {
		{1, 4096, 1, 0, MSIM_ACT_ALLOC},
		{12, 0x2000, 12345678, 7, MSIM_ACT_ALLOC},
		{123456789, 12288, 123456789, UINT64_MAX, MSIM_ACT_ALLOC},
		{1234567890123456789u, 4096, 1, 0, MSIM_ACT_FREE_COMPLETED},
		/* 2^62: the largest size a trace may hold (MSIM_SIZE_MAX). */
		{1234567890123456790u, 9999999999999999999u, MSIM_SIZE_MAX,
		 12345678901234567u, MSIM_ACT_ALLOC},
	};
	msim_entry_t e;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_int_eq(msim_trace_next_entry(t, &e), 1);
		ck_assert_uint_eq(e.time_us, want[i].time_us);
		ck_assert_uint_eq(e.addr, want[i].addr);
		ck_assert_uint_eq(e.size, want[i].size);
		ck_assert_uint_eq(e.stream, want[i].stream);
		ck_assert_int_eq(e.action, want[i].action);
	}
	ck_assert_int_eq(msim_trace_next_entry(t, &e), 0);
	msim_trace_close(t);
	unlink(p);
	static const struct {
		const char *row, *why;
	} bad[] = {
		{"1,2,alloc,18446744073709551616,5,0", "addr '18446744073709551616'"},
		{"1,2,alloc,4096,5,0,", "more than 6 fields"},
		{"1,2,alloc,4096,5", "5 fields"},
		{"1,2,alloc,4096, 5,0", "size ' 5'"},
		{"1,2,alloc,4096,,0", "size ''"},
		{"1,2,allocate,4096,5,0", "unknown action 'allocate'"},
		{"1,2,free_completed,4096,5,0", "unknown address 0x1000"},
		{"1,2,alloc,4096,5,0x", "stream '0x'"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char buf[256];
		snprintf(buf, sizeof(buf),
			 "seq,time_us,action,addr,size,stream\n%s\n",
			 bad[i].row);
		p = write_tmp(buf);
		msim_trace_options_t strict = {.strict = true};
		ck_assert_int_lt(read_all(p, &strict, NULL, err, sizeof(err)),
				 0);
		ck_assert_msg(strstr(err, ":2:") && strstr(err, bad[i].why),
			      "case %zu: '%s'", i, err);
		unlink(p);
	}
}
END_TEST

START_TEST(test_long_line_rejected)
{
	size_t n = (1u << 20) + 100;
	char *text = malloc(n + 64);
	strcpy(text, "action,addr,size\nalloc,1,");
	size_t len = strlen(text);
	memset(text + len, '7', n);
	text[len + n] = '\0';
	const char *p = write_tmp(text);
	char err[512];
	ck_assert_int_lt(read_all(p, NULL, NULL, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "too long"));
	unlink(p);
	free(text);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("trace_csv");
	TCase *tc = tcase_create("csv");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_real_traces_counts);
	tcase_add_test(tc, test_requests_fields_and_ids);
	tcase_add_test(tc, test_oom_row_is_an_expected_failure);
	tcase_add_test(tc, test_bad_input_names_file_line_reason);
	tcase_add_test(tc, test_long_line_rejected);
	tcase_add_test(tc, test_usual_header_rows);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
