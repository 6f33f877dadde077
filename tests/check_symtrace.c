/*
 * Symbolic traces (traces/symtrace.h): the size polynomials evaluated
 * exactly or refused, a trace instantiated to the exact bytes the
 * recorder writes, and every kind of bad input refused with one line
 * naming the file and line.
 */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/error.h"
#include "traces/symtrace.h"
#include "traces/trace.h"
#include "testutil.h"

static char *
slurp(const char *path)
{
	FILE *fp = fopen(path, "rb");
	ck_assert_ptr_nonnull(fp);
	static char buf[8192];
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

static int64_t
eval_ok(const char *e, long v)
{
	int64_t x = -1;
	char why[256] = "";
	int rc = msim_symtrace_eval(e, strlen(e), "B", v, &x, why,
				    sizeof(why));
	ck_assert_msg(rc == 0, "%s: %s", e, why);
	return x;
}

START_TEST(test_eval)
{
	ck_assert_int_eq(eval_ok("512", 7), 512);
	ck_assert_int_eq(eval_ok("B", 7), 7);
	ck_assert_int_eq(eval_ok("131072*B", 3), 393216);
	ck_assert_int_eq(eval_ok("4*B^2+8*B+1", 5), 141);
	ck_assert_int_eq(eval_ok("B^3-2*B", 4), 56);
	ck_assert_int_eq(eval_ok("-B+100", 30), 70);
	ck_assert_int_eq(eval_ok("2048*B^2", 1000000), 2048000000000000);
	/* a kernel rule's division: Python's floor and remainder */
	ck_assert_int_eq(eval_ok("32768*B+8*((2048*B)//5)", 7),
			 32768 * 7 + 8 * (2048 * 7 / 5));
	ck_assert_int_eq(eval_ok("(B-10)//4", 3), -2);
	ck_assert_int_eq(eval_ok("(B-10)%4", 3), 1);
	ck_assert_int_eq(eval_ok("B%4", 7), 3);
	ck_assert_int_eq(eval_ok("(B+1)^2", 4), 25);
	ck_assert_int_eq(eval_ok("(B)", 4), 4);
	/* a name that only begins with B is not B */
	const char *bad[] = {"", "2**B", "2*C", "2*BB", "+B", "B+",
			     "2 *B", "B^0", "B^17", "B^", "3B", "(B",
			     "B)", "B/2", "B//0", "B//", "B%-2", "B//B",
			     "floor(B)", "1e3", "0x10", "--B", "B*",
			     "99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		int64_t x;
		char why[256] = "";
		ck_assert_msg(msim_symtrace_eval(bad[i], strlen(bad[i]), "B",
						 3, &x, why, sizeof(why)) ==
			      MSIM_EFORMAT, "accepted \"%s\"", bad[i]);
		ck_assert_ptr_nonnull(strstr(why, "size"));
	}
	/* past int64: refused, not wrapped */
	int64_t x;
	char why[256];
	ck_assert_int_eq(msim_symtrace_eval("B^4", 3, "B", 100000, &x, why,
					    sizeof(why)), MSIM_EFORMAT);
	ck_assert_ptr_nonnull(strstr(why, "past 64 bits"));
}
END_TEST

/* The kernel rules a size may call (memsim_record/kernels.py RULES),
 * the figures kernels.py's own reduce_rule and split_k_rule give. */
START_TEST(test_rules)
{
	/* a bias gradient of (B, 65600) fp32 rows: the kept dimension the
	 * fastest, a buffer from B = 1100 on (setReduceConfig's
	 * values-per-thread against its power-of-two block) */
	const char *bias = "reduce_buffer(B;65600;4;4;4;4;0;132;2048)";
	ck_assert_int_eq(eval_ok(bias, 7), 0);
	ck_assert_int_eq(eval_ok(bias, 1100), 167936000);
	ck_assert_int_eq(eval_ok(bias, 3000), 167936000);
	ck_assert_int_eq(eval_ok("reduce_semaphores(B;65600;4;4;4;4;0;132;"
				 "2048)", 1100), 2052);
	/* a sum of B x 4096 floats: none at B=1, 128 bytes at 64 */
	const char *sum = "reduce_buffer(4096*B;1;3;4;4;4;0;132;2048)";
	ck_assert_int_eq(eval_ok(sum, 1), 0);
	ck_assert_int_eq(eval_ok(sum, 64), 128);
	ck_assert_int_eq(eval_ok(sum, 1000), 2000);
	ck_assert_int_eq(eval_ok("reduce_semaphores(4096*B;1;3;4;4;4;0;132;"
				 "2048)", 64), 4);
	/* split-K of a 3x3 convolution's 16 x 27 weights over 1024*B
	 * outputs: floor(sqrt(1024 B) / 42) slices, none below 2 */
	const char *sk = "1744+77824*B+conv_split_k(16;27;1024*B;132)";
	ck_assert_int_eq(eval_ok(sk, 5), 1744 + 77824 * 5);
	ck_assert_int_eq(eval_ok(sk, 7), 1744 + 77824 * 7 + 13824);
	ck_assert_int_eq(eval_ok(sk, 16), 1744 + 77824 * 16 + 20736);
	/* cudnn.benchmark's find (kernels.conv_find_rule) of 16 -> 16
	 * channels, 3x3 "same" on 32 x 32 images, batch B: backward-weight
	 * the output gradient and max(32 B, 256) tiles of 64 x 33 x 16
	 * bytes, backward-data (a padded side of 34: t = 2) 4352 bytes
	 * times 256 + 64 B; the plan where it is larger; channels_last
	 * (the H200's 16 x 64 x 56 x 56 find) the transposed operands */
	const char *fw = "conv_find(533520;1;B;16;16;32;32;3;3;1;1;0)";
	ck_assert_int_eq(eval_ok(fw, 4), 8912896);
	ck_assert_int_eq(eval_ok(fw, 16), 16 * 65536 + 512 * 33792);
	const char *fd = "conv_find(533520;2;B;16;16;32;32;3;3;1;1;0)";
	ck_assert_int_eq(eval_ok(fd, 4), 2228224);
	ck_assert_int_eq(eval_ok("conv_find(9000000000;2;B;16;16;32;32;3;"
				 "3;1;1;0)", 4), 9000000000);
	ck_assert_int_eq(eval_ok("conv_find(0;1;B;64;64;56;56;3;3;1;1;1)",
				 16), 177094672);
	/* forward: the weight, 9216 bytes, and max(16 B + 256, 16 B)
	 * tiles of 64 x 33 x 16 */
	ck_assert_int_eq(eval_ok("conv_find(0;3;B;16;16;32;32;3;3;1;1;0)",
				 4), 9216 + 320 * 33792);
	/* stride 2, backward-data (op 4): the H200's finds of DCGAN's
	 * 256 -> 512 channels 4x4 at 8 x 8, and of its 3-channel 64 x 64
	 * layer (C counted as 4; a padded side halved of 33: t = 2) */
	const char *fs = "conv_find(14680211;4;B;256;512;8;8;4;4;1;1;0)";
	ck_assert_int_eq(eval_ok(fs, 64), 2734686224);
	ck_assert_int_eq(eval_ok(fs, 8), 2354839568);
	const char *f3 = "conv_find(0;4;B;3;64;64;64;4;4;1;1;1)";
	ck_assert_int_eq(eval_ok(f3, 1), 5517328);
	ck_assert_int_eq(eval_ok(f3, 64), 70029328);
	/* a resnet's 3x3 (64 -> 128 at 56 x 56) and its 7x7 stem: each
	 * filter's phases 2 x 2 and 4 x 4, the output gradient a row and a
	 * column larger (odd kernel, odd padding) */
	ck_assert_int_eq(eval_ok("conv_find(0;4;B;64;128;56;56;3;3;1;1;0)",
				 16), 189603856);
	ck_assert_int_eq(eval_ok("conv_find(0;4;B;3;64;224;224;7;7;3;3;0)",
				 16), 80810000);
	/* kernels.strided_fft_candidate: no FFT candidate, the plan's,
	 * where N*H*W > 4096 for an odd kernel with 32768 <= K*C < 65536 and
	 * N*H*W <= 16384 (3x3 128 -> 256 at 16 x 16: 16 images the FFT,
	 * 17 to 64 not, 96 the FFT; WRN-16-8's at 32 x 32, 32 images, the
	 * FFT; 256 -> 256 at 16 x 16, 64 images, the FFT) or an even one
	 * with K*C >= 32768 (4x4 256 -> 512 at 16 x 16: 16 images the FFT,
	 * 17 not) */
	const char *fr = "conv_find(13762576;4;B;128;256;16;16;3;3;1;1;0)";
	ck_assert_int_eq(eval_ok(fr, 8), 600973328);
	ck_assert_int_eq(eval_ok(fr, 16), 629424144);
	ck_assert_int_eq(eval_ok(fr, 17), 13762576);
	ck_assert_int_eq(eval_ok(fr, 64), 13762576);
	ck_assert_int_eq(eval_ok(fr, 96), 913932304);
	ck_assert_int_eq(eval_ok("conv_find(0;4;B;128;256;32;32;3;3;1;1;0)",
				 32), 705724432);
	ck_assert_int_eq(eval_ok("conv_find(0;4;B;256;256;16;16;3;3;1;1;0)",
				 64), 1523646480);
	const char *f4 = "conv_find(20971536;4;B;256;512;16;16;4;4;1;1;0)";
	ck_assert_int_eq(eval_ok(f4, 16), 2413821968);
	ck_assert_int_eq(eval_ok(f4, 17), 20971536);
	const char *bad[] = {"reduce_buffer(B;1)", "min(B;2)",
			     "reduce_buffer(B,1,3,4,4,4,0,132,2048)",
			     "reduce_buffer(B;1;3;4;4;4;0;132;2048",
			     "reduce_bufferB", "conv_split_k()"};
	int64_t x;
	char why[512];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(msim_symtrace_eval(bad[i], strlen(bad[i]), "B",
						 3, &x, why, sizeof(why)) ==
			      MSIM_EFORMAT && strstr(why, "not an expression"),
			      "accepted %s", bad[i]);
	const char *dom[] = {"reduce_buffer(B;1;9;4;4;4;0;132;2048)",
			     "reduce_buffer(B;1;3;4;4;3;0;132;2048)",
			     "conv_split_k(0;27;B;132)",
			     "conv_split_k(16;27;B-10;132)",
			     "conv_find(0;5;B;16;16;32;32;3;3;1;1;0)",
			     "conv_find(0;1;B-10;16;16;32;32;3;3;1;1;0)"};
	for (size_t i = 0; i < sizeof(dom) / sizeof(dom[0]); i++)
		ck_assert_msg(msim_symtrace_eval(dom[i], strlen(dom[i]), "B",
						 3, &x, why, sizeof(why)) ==
			      MSIM_EFORMAT && strstr(why, "out of its domain"),
			      "accepted %s", dom[i]);
}
END_TEST

/* '?' rows: a kernel rule's block there only where its size is not 0.
 * Recorded at B=7, where the bias gradient's buffer is absent (numbered
 * 1, no address), and at B=2000, where it is there. */
#define OPT "?reduce_buffer(B;65600;4;4;4;4;0;132;2048)"
static const char opt7[] =
	"#memsim-symbolic 1\n"
	"#symbol B 7 2 4096\n"
	"seq,time_us,action,addr,size,stream,category,site\n"
	"0,0,alloc,4294967296,100*B,0,activation,x\n"
	"1,1,alloc,1," OPT ",0,temporary,r\n"
	"2,2,free_completed,1," OPT ",0,,\n"
	"3,3,alloc,4294968832,8,0,activation,y\n"
	"4,4,free_completed,4294967296,100*B,0,,\n";
static const char opt2000[] =
	"#memsim-symbolic 1\n"
	"#symbol B 2000 2 4096\n"
	"seq,time_us,action,addr,size,stream,category,site\n"
	"0,0,alloc,4294967296,100*B,0,activation,x\n"
	"1,1,alloc,4295168000," OPT ",0,temporary,r\n"
	"2,2,free_completed,4295168000," OPT ",0,,\n"
	"3,3,alloc,4463104512,8,0,activation,y\n"
	"4,4,free_completed,4294967296,100*B,0,,\n";

START_TEST(test_optional)
{
	const char *out = tmp_keep("out.csv");
	char why[1024] = "";
	/* at B=1100 the buffer is there: 110000 bytes, then 167936000 on
	 * 216 * 512, then y on 328001 * 512 */
	const char *at1100 =
		"seq,time_us,action,addr,size,stream,category,site\n"
		"0,0,alloc,4294967296,110000,0,activation,x\n"
		"1,1,alloc,4295077888,167936000,0,temporary,r\n"
		"2,2,free_completed,4295077888,167936000,0,,\n"
		"3,3,alloc,4463014400,8,0,activation,y\n"
		"4,4,free_completed,4294967296,110000,0,,\n";
	/* at B=7 it is not: its two rows left out, the others renumbered */
	const char *at7 =
		"seq,time_us,action,addr,size,stream,category,site\n"
		"0,0,alloc,4294967296,700,0,activation,x\n"
		"1,1,alloc,4294968832,8,0,activation,y\n"
		"2,2,free_completed,4294967296,700,0,,\n";
	const char *traces[] = {opt7, opt2000};
	for (int k = 0; k < 2; k++) {
		const char *p = write_bytes("trace.csv", traces[k],
					    strlen(traces[k]));
		ck_assert_int_eq(msim_symtrace_instantiate(p, 1100, out, why,
							   sizeof(why)), 0);
		ck_assert_str_eq(slurp(out), at1100);
		ck_assert_int_eq(msim_symtrace_instantiate(p, 7, out, why,
							   sizeof(why)), 0);
		ck_assert_str_eq(slurp(out), at7);
	}
}
END_TEST

/* Recorded at B=3: sizes 100*B (300) and 1024; addresses by the rule:
 * 2^32, then + ((300 + 511) / 512 + 1) * 512 = 1024. */
static const char good[] =
	"#memsim-symbolic 1\n"
	"#symbol B 3 2 10 100*B<=1000\n"
	"seq,time_us,action,addr,size,stream,category,site\n"
	"0,0,alloc,4294967296,100*B,0,activation,M.fc\n"
	"1,1,alloc,4294968320,1024,0,parameter,M.fc.weight\n"
	"2,2,annotate,0,0,,assumption,item:float\n"
	"3,3,free_completed,4294967296,100*B,0,,\n"
	"4,4,empty_cache,0,0,0,,\n";

START_TEST(test_instantiate)
{
	const char *p = write_bytes("trace.csv", good, strlen(good));
	const char *out = tmp_keep("out.csv");
	msim_symtrace_info_t info;
	char why[1024] = "";
	ck_assert_int_eq(msim_symtrace_probe(p, &info, why, sizeof(why)), 1);
	ck_assert_str_eq(info.name, "B");
	ck_assert_int_eq(info.value, 3);
	ck_assert_int_eq(info.lo, 2);
	ck_assert_int_eq(info.hi, 10);
	/* at B=10: 1000 bytes, the next block at 2^32 + 3 * 512 */
	ck_assert_int_eq(msim_symtrace_instantiate(p, 10, out, why,
						   sizeof(why)), 0);
	ck_assert_str_eq(slurp(out),
		"seq,time_us,action,addr,size,stream,category,site\n"
		"0,0,alloc,4294967296,1000,0,activation,M.fc\n"
		"1,1,alloc,4294968832,1024,0,parameter,M.fc.weight\n"
		"2,2,annotate,0,0,,assumption,item:float\n"
		"3,3,free_completed,4294967296,1000,0,,\n"
		"4,4,empty_cache,0,0,0,,\n");
	/* at the value recorded: the file's own addresses */
	ck_assert_int_eq(msim_symtrace_instantiate(p, 3, out, why,
						   sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(slurp(out),
				     "1,1,alloc,4294968320,1024,"));
	/* outside the range: refused, nothing written */
	unlink(out);
	ck_assert_int_eq(msim_symtrace_instantiate(p, 11, out, why,
						   sizeof(why)), MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "outside the range"));
	ck_assert_int_ne(access(out, F_OK), 0);
	/* the trace readers refuse it, saying what to do */
	msim_trace_t *t;
	ck_assert_int_eq(msim_trace_open(p, NULL, &t, why, sizeof(why)),
			 MSIM_EFORMAT);
	ck_assert_ptr_nonnull(strstr(why, "convert --at"));
}
END_TEST

/* A bad file: refused with FILE:LINE: and the words, nothing written. */
static void
refused(const char *text, const char *line, const char *words)
{
	const char *p = write_bytes("trace.csv", text, strlen(text));
	const char *out = tmp_path("out.csv");
	char why[1024] = "";
	int rc = msim_symtrace_instantiate(p, 4, out, why, sizeof(why));
	ck_assert_msg(rc < 0, "accepted: %s", text);
	char at[128];
	snprintf(at, sizeof(at), "%s:%s", p, line);
	ck_assert_msg(strstr(why, at) != NULL, "%s lacks %s", why, at);
	ck_assert_msg(strstr(why, words) != NULL, "%s lacks %s", why, words);
	ck_assert_int_ne(access(out, F_OK), 0);
}

#define HEADER "seq,time_us,action,addr,size,stream,category,site\n"

/* A valid symbolic header, then ROW (the file's line 4): refused. */
static void
refused_row(const char *row, const char *words)
{
	char buf[1024];
	snprintf(buf, sizeof(buf),
		 "#memsim-symbolic 1\n#symbol B 3 2 10\n" HEADER "%s", row);
	refused(buf, "4", words);
}

START_TEST(test_bad)
{
	refused("#memsim-symbolic 2\n", "1", "another version");
	refused("#memsim-symbolic 1\n", "2", "no #symbol");
	refused("#memsim-symbolic 1\n#symbol B 3 2\n", "2", "#symbol NAME");
	refused("#memsim-symbolic 1\n#symbol 9B 3 2 10\n", "2",
		"#symbol NAME");
	refused("#memsim-symbolic 1\n#symbol B 3 4 10\n", "2", "range");
	refused("#memsim-symbolic 1\n#symbol B 3 2 10\nx\n", "3",
		"no CSV header");
	refused_row("0,0,alloc,4294967296,100*C,0,activation,x\n",
		    "not an expression of integers and B");
	refused_row("0,0,alloc,4294967296,10-B/5,0,activation,x\n",
		    "not an expression");
	refused_row("0,0,alloc,4294967296,10-5*B,0,activation,x\n",
		    "is -10 at B=4");
	refused_row("0,0,alloc,4294967300,B,0,activation,x\n",
		    "not the recorder's");
	refused_row("0,0,free_completed,4294967296,B,0,,\n",
		    "which no row allocated");
	refused_row("0,0,alloc,4294967296,B,0\n", "not a row");
	refused_row("0,0,alloc,4294967296,B,0,a,b", "newline");
	refused_row("0,0,alloc,42x,B,0,a,b\n", "not a number");
	refused_row("0,0,annotate,0,?B,,assumption,x\n", "'?' size");
	refused_row("0,0,alloc,4294967296,?B-4,0,a,x\n",
		    "is -1 at B=3");
	/* absent at B=3 (0 there) yet given an address */
	refused_row("0,0,alloc,4294967296,?B-3,0,a,x\n", "numbered");
	/* a free whose '?' size is gone where its allocation is not */
	refused("#memsim-symbolic 1\n#symbol B 3 2 10\n" HEADER
		"0,0,alloc,1,?B-3,0,a,x\n"
		"1,1,free_completed,1,?(B-3)*(B-4),0,,\n", "5",
		"not its allocation's");
	/* not symbolic at all: probe says 0, instantiate refuses */
	const char *p = write_bytes("trace.csv", HEADER, strlen(HEADER));
	const char *out = tmp_path("out.csv");
	msim_symtrace_info_t info;
	char why[1024];
	ck_assert_int_eq(msim_symtrace_probe(p, &info, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_symtrace_instantiate(p, 3, out, why,
						   sizeof(why)), MSIM_EFORMAT);
	ck_assert_ptr_nonnull(strstr(why, "not a symbolic trace"));
	ck_assert_int_eq(msim_symtrace_probe("/nonexistent/x.csv", &info, why,
					     sizeof(why)), MSIM_EIO);
	ck_assert_ptr_nonnull(strstr(why, "/nonexistent/x.csv"));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("symtrace");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, test_eval);
	tcase_add_test(tc, test_instantiate);
	tcase_add_test(tc, test_bad);
	tcase_add_test(tc, test_rules);
	tcase_add_test(tc, test_optional);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
