/*
 * The minimal path of `memsim bench` (lab/minreplay.h): a hand-made
 * scenario with exact figures, then the same figures (current and peak)
 * as the pytorch policy through the engine on every single-stream test
 * trace, and a second stream refused as not comparable; the minimal
 * path's own CSV reader (lab/mincsv.h): its separators by each
 * instruction set, numbers of every length, what it refuses.
 */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/bench.h"
#include "lab/mincsv.h"
#include "lab/minreplay.h"
#include "sim/error.h"
#include "testutil.h"

#define MiB (INT64_C(1024) * 1024)

static msim_req_t
rq(int kind, uint32_t id, uint64_t size)
{
	return (msim_req_t){.kind = (uint8_t)kind, .id = id, .size = size};
}

/*
 * 1000 B rounds to 1024 (round_size) in a new 2 MiB small segment, split
 * (remainder >= 512); 3 MiB takes a 20 MiB large segment (below 10 MiB),
 * split (remainder > 1 MiB); 12 MiB + 1 (12 MiB + 512 rounded) fits the
 * 17 MiB remainder (best fit) and splits it again (5 MiB - 512 left).
 * Freeing the first merges it back into a whole segment.
 */
START_TEST(test_exact)
{
	msim_minreplay_t *m;
	ck_assert_int_eq(msim_minreplay_new(&m), 0);
	msim_req_t v[] = {
		rq(MSIM_REQ_ALLOC, 0, 1000),
		rq(MSIM_REQ_ALLOC, 1, 3 * MiB),
		rq(MSIM_REQ_ALLOC, 2, 12 * MiB + 1),
		rq(MSIM_REQ_FREE_REQUESTED, 0, 0),
		rq(MSIM_REQ_FREE, 0, 0),
	};
	size_t at;
	ck_assert_int_eq(msim_minreplay_apply(m, v, 5, &at), 0);
	ck_assert_uint_eq(at, 5);
	msim_minreplay_stats_t st;
	msim_minreplay_stats(m, &st);
	int64_t b2 = 12 * MiB + 512;
	ck_assert_int_eq(st.requests, 4);
	ck_assert_int_eq(st.allocated.peak, 1024 + 3 * MiB + b2);
	ck_assert_int_eq(st.allocated.cur, 3 * MiB + b2);
	ck_assert_int_eq(st.requested.peak, 1000 + 3 * MiB + 12 * MiB + 1);
	ck_assert_int_eq(st.reserved.peak, 2 * MiB + 20 * MiB);
	ck_assert_int_eq(st.segment.cur, 2);
	ck_assert_int_eq(st.inactive_split.peak, 2);
	ck_assert_int_eq(st.inactive_split.cur, 1);
	ck_assert_int_eq(st.inactive_split_bytes.peak,
			 (2 * MiB - 1024) + 17 * MiB);
	ck_assert_int_eq(st.inactive_split_bytes.cur, 17 * MiB - b2);
	/* A free of no live block. */
	msim_req_t bad = rq(MSIM_REQ_FREE, 0, 0);
	ck_assert_int_eq(msim_minreplay_apply(m, &bad, 1, &at),
			 MSIM_ENOTFOUND);
	ck_assert_uint_eq(at, 0);
	/* A second stream is not modelled. */
	msim_req_t s2 = rq(MSIM_REQ_ALLOC, 3, 512);
	s2.stream = 7;
	ck_assert_int_eq(msim_minreplay_apply(m, &s2, 1, &at), MSIM_ENOTSUP);
	msim_minreplay_destroy(m);
}
END_TEST

static const char *const traces[] = {
	"traces/gpt2_fp32.csv", "traces/gpt2_varlen.csv",
	"traces/bert_infer_varlen.csv", "traces/resnet50_amp.csv",
};

START_TEST(test_same_as_pytorch)
{
	char why[1024];
	msim_bench_same_t r;
	int rc = msim_bench_same(test_data(traces[_i]), &r, why, sizeof(why));
	ck_assert_msg(rc == 0, "%s", why);
	ck_assert_msg(r.same, "%s: allocated peak %lld vs %lld, reserved "
		      "peak %lld vs %lld", traces[_i],
		      (long long)r.minimal.allocated.peak,
		      (long long)r.memsim.allocated_bytes[0].peak,
		      (long long)r.minimal.reserved.peak,
		      (long long)r.memsim.reserved_bytes[0].peak);
	ck_assert_int_gt(r.minimal.reserved.peak, 0);
	ck_assert_int_gt(r.minimal.inactive_split_bytes.peak, 0);
	/* Streamed from the file, the same figures. */
	uint64_t n;
	double cpu;
	msim_minreplay_stats_t st;
	rc = msim_bench_minimal_stream(test_data(traces[_i]), &n, &cpu, &st,
				       why, sizeof(why));
	ck_assert_msg(rc == 0, "%s", why);
	ck_assert(msim_bench_same_stats(&st, &r.memsim));
	ck_assert_int_eq(n, r.minimal.requests);
}
END_TEST

/* Two streams: the bench says it cannot compare. */
START_TEST(test_streams_refused)
{
	char path[] = "/tmp/memsim-minreplay-XXXXXX", why[1024];
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *fp = fdopen(fd, "w");
	fprintf(fp, "action,addr,size,stream\n"
		"alloc,4096,1048576,0\n"
		"alloc,8392704,1048576,5\n"
		"free_completed,4096,1048576,0\n");
	fclose(fp);
	msim_bench_same_t r;
	int rc = msim_bench_same(path, &r, why, sizeof(why));
	unlink(path);
	ck_assert_int_eq(rc, MSIM_ENOTSUP);
	ck_assert_msg(strstr(why, "request 2"), "%s", why);
}
END_TEST

/* The separators of random bytes, by every way this CPU has, against a
 * byte-at-a-time count. */
START_TEST(test_mincsv_separators)
{
	static const char alphabet[] = ",\n0123456789az_\r \x80\xff";
	char buf[64 * 7];
	uint64_t want[7], got[7];
	srand(16);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = alphabet[rand() % (int)(sizeof(alphabet) - 1)];
	for (int b = 0; b < 7; b++) {
		want[b] = 0;
		for (int i = 0; i < 64; i++)
			if (buf[64 * b + i] == ',' || buf[64 * b + i] == '\n')
				want[b] |= UINT64_C(1) << i;
	}
	for (int isa = MSIM_MINCSV_BEST; isa <= MSIM_MINCSV_SWAR; isa++) {
		if (!msim_mincsv_isa_ok(isa))
			continue;
		memset(got, 0, sizeof(got));
		msim_mincsv_separators(isa, buf, 7, got);
		for (int b = 0; b < 7; b++)
			ck_assert_msg(got[b] == want[b], "isa %d block %d", isa,
				      b);
	}
	ck_assert(msim_mincsv_isa_ok(MSIM_MINCSV_SWAR));
}
END_TEST

static void
write_file(char *path, const char *text)
{
	int fd = mkstemps(path, 4);
	ck_assert_int_ge(fd, 0);
	FILE *fp = fdopen(fd, "w");
	fputs(text, fp);
	fclose(fp);
}

/*
 * Sizes of 1 to 10 digits live together, at addresses of 16 to 19 digits
 * (the last three past one vector), one freed at a free_requested and its
 * free_completed: requested bytes peak at their exact sum, and memsim
 * reading the same file gives the same figures, by every way this CPU
 * has.
 */
START_TEST(test_mincsv_numbers)
{
	char path[] = "/tmp/memsim-mincsv-XXXXXX.csv", why[1024];
	char text[4096];
	int n = snprintf(text, sizeof(text),
			 "seq,time_us,action,addr,size,stream\n");
	uint64_t size = 0, sum = 0, addr = UINT64_C(100000000000000);
	for (int d = 1; d <= 10; d++) {
		size = size * 10 + (uint64_t)(10 - d % 10) % 10 + (d == 10);
		sum += size;
		addr = d <= 4 ? addr * 10 : addr + (UINT64_C(1) << 30);
		n += snprintf(text + n, sizeof(text) - (size_t)n,
			      "%d,%d,alloc,%llu,%llu,0\n%s", d, 100 + d,
			      (unsigned long long)addr,
			      (unsigned long long)size, d == 5 ? "\n" : "");
	}
	snprintf(text + n, sizeof(text) - (size_t)n,
		 "11,200,free_requested,%llu,%llu,0\n"
		 "12,201,free_completed,%llu,%llu,0\n"
		 "13,202,segment_alloc,4096,2097152,0\n",
		 (unsigned long long)addr, (unsigned long long)size,
		 (unsigned long long)addr, (unsigned long long)size);
	write_file(path, text);
	msim_bench_same_t r;
	int rc = msim_bench_same(path, &r, why, sizeof(why)), rcs[4] = {0};
	msim_minreplay_stats_t st[4];
	char whys[4][1024];
	for (int isa = MSIM_MINCSV_BEST; isa <= MSIM_MINCSV_SWAR; isa++)
		if (msim_mincsv_isa_ok(isa))
			rcs[isa] = msim_mincsv_replay(path, isa, &st[isa],
						      whys[isa],
						      sizeof(whys[isa]));
	unlink(path);
	ck_assert_msg(rc == 0, "%s", why);
	for (int isa = MSIM_MINCSV_BEST; isa <= MSIM_MINCSV_SWAR; isa++) {
		if (!msim_mincsv_isa_ok(isa))
			continue;
		ck_assert_msg(rcs[isa] == 0, "%s", whys[isa]);
		ck_assert_int_eq(st[isa].requests, 11);
		ck_assert_int_eq(st[isa].requested.peak, (int64_t)sum);
		ck_assert_int_eq(st[isa].requested.cur, (int64_t)(sum - size));
		ck_assert(msim_bench_same_stats(&st[isa], &r.memsim));
	}
}
END_TEST

/* What the minimal reader does not take: not compared, with the line. */
START_TEST(test_mincsv_refused)
{
	static const struct {
		const char *text, *why;
	} cases[] = {
		{"seq,time_us,action,addr,size,stream\n0,1,alloc,4096,512,0\n"
		 "\n1,2,alloc,8192,512\n", ":4: fewer than 6 fields"},
		{"seq,time_us,action,addr,size,stream\n0,1,alloc,4096,5x2,0\n",
		 ":2: a field is not a plain decimal number"},
		{"seq,time_us,action,addr,size,stream\n0,1,alloc,4096,512,0,7\n",
		 ":2: more than 6 fields"},
		{"seq,time_us,action,addr,size,stream\n0,1,snapshot,0,0,0\n",
		 ":2: an action the minimal path does not read"},
		{"seq,time_us,action,addr,size,stream\n0,1,free_completed,"
		 "4096,512,0\n", ":2: free of an address never allocated"},
		{"action,addr,size\nalloc,4096,512\n", ":1: not the header"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char path[] = "/tmp/memsim-mincsv-XXXXXX.csv", why[1024];
		write_file(path, cases[i].text);
		msim_minreplay_stats_t st;
		int rc = msim_mincsv_replay(path, MSIM_MINCSV_BEST, &st, why,
					    sizeof(why));
		unlink(path);
		ck_assert_int_eq(rc, MSIM_ENOTSUP);
		ck_assert_msg(strstr(why, cases[i].why) &&
			      !strncmp(why, path, strlen(path)),
			      "case %zu: %s", i, why);
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("minreplay");
	TCase *tc = tcase_create("minreplay");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_exact);
	tcase_add_loop_test(tc, test_same_as_pytorch, 0,
			    sizeof(traces) / sizeof(*traces));
	tcase_add_test(tc, test_streams_refused);
	tcase_add_test(tc, test_mincsv_separators);
	tcase_add_test(tc, test_mincsv_numbers);
	tcase_add_test(tc, test_mincsv_refused);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
