/*
 * lab/record.h without Python: a stand-in interpreter (a shell script
 * named python3) that writes what it was run with, the {NAME}
 * substitution, the recorder's options, and a sweep's recordings (one a
 * combination of the recording names, reused when made before).
 */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lab/record.h"
#include "sim/error.h"
#include "testutil.h"

/* tmp/bin/python3, which writes its arguments and PYTHONPATH's first
 * folder to the file after -o, and exits with $FAKE_RC; tmp/mod holds a
 * memsim_record module. */
static void
stand_in(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/bin", tmpdir_path());
	ck_assert_int_eq(mkdir(path, 0777), 0);
	snprintf(path, sizeof(path), "%s/mod", tmpdir_path());
	ck_assert_int_eq(mkdir(path, 0777), 0);
	snprintf(path, sizeof(path), "%s/mod/memsim_record", tmpdir_path());
	ck_assert_int_eq(mkdir(path, 0777), 0);
	write_bytes("mod/memsim_record/__main__.py", "", 0);
	static const char sh[] =
		"#!/bin/sh\n"
		"out=$4\n"
		"echo \"$*\" >\"$out\"\n"
		"echo \"${PYTHONPATH%%:*}\" >>\"$out\"\n"
		"exit ${FAKE_RC:-0}\n";
	const char *py = write_bytes("bin/python3", sh, sizeof(sh) - 1);
	ck_assert_int_eq(chmod(py, 0755), 0);
	unsetenv("MEMSIM_PYTHONPATH");
	unsetenv("FAKE_RC");
}

static char *
slurp(const char *path)
{
	static char buf[2048];
	FILE *fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

START_TEST(test_record_exec)
{
	stand_in();
	char *py = tmp_keep("bin/python3");
	const char *mod = tmp_keep("mod");
	const char *out = tmp_keep("out.csv");
	const char *dirs[] = {"/nonexistent", mod, NULL};
	msim_record_opts_t o = {.dirs = dirs, .quiet = true};
	char *ropt[] = {"--fake", "--amp", "bf16"};
	char *cmd[] = {py, "train.py", "--batch", "8"};
	char why[1024];
	ck_assert_int_eq(msim_record_exec(&o, out, ropt, 3, cmd, 4, why,
					  sizeof(why)), 0);
	ck_assert_str_eq(why, "");
	char want[1024];
	snprintf(want, sizeof(want), "-m memsim_record -o %s --fake --amp "
		 "bf16 -- train.py --batch 8\n%s\n", out, mod);
	ck_assert_str_eq(slurp(out), want);
	/* The recorder's exit status comes back as it is. */
	setenv("FAKE_RC", "3", 1);
	ck_assert_int_eq(msim_record_exec(&o, out, NULL, 0, cmd, 2, why,
					  sizeof(why)), 3);
	ck_assert_str_eq(why, "");
	unsetenv("FAKE_RC");
	/* An interpreter that cannot be run: 127, and why. */
	char *gone[] = {"/nonexistent/python3", "train.py"};
	ck_assert_int_eq(msim_record_exec(&o, out, NULL, 0, gone, 2, why,
					  sizeof(why)), 127);
	ck_assert_str_eq(why, "cannot run /nonexistent/python3: No such file "
			      "or directory");
	/* What cannot start at all. */
	char *m[] = {py, "-m", "pkg"};
	ck_assert_int_eq(msim_record_exec(&o, out, NULL, 0, m, 3, why,
					  sizeof(why)), MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "-m' is not supported"));
	ck_assert_int_eq(msim_record_exec(&o, out, NULL, 0, cmd, 1, why,
					  sizeof(why)), MSIM_EINVAL);
	msim_record_opts_t none = {.dirs = NULL};
	ck_assert_int_eq(msim_record_exec(&none, out, NULL, 0, cmd, 2, why,
					  sizeof(why)), MSIM_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(why, "MEMSIM_PYTHONPATH"));
}
END_TEST

START_TEST(test_record_subst)
{
	char *cmd[] = {"s.py", "--b={b}", "{bb}{b}", "{c}"};
	const char *names[] = {"b", "bb"};
	const char *values[] = {"{bb}", "7"};
	char **out = msim_record_subst(cmd, 4, names, values, 2);
	ck_assert_ptr_nonnull(out);
	ck_assert_str_eq(out[0], "s.py");
	ck_assert_str_eq(out[1], "--b={bb}"); /* a value is not read again */
	ck_assert_str_eq(out[2], "7{bb}");
	ck_assert_str_eq(out[3], "{c}");
	ck_assert_ptr_null(out[4]);
	msim_record_subst_free(out, 4);
	ck_assert(msim_record_has(cmd, 4, "bb"));
	ck_assert(!msim_record_has(cmd, 4, "d"));
	ck_assert_str_eq(msim_record_flag("checkpoint"), "--checkpoint");
	ck_assert_str_eq(msim_record_flag("item-bool"), "--item-bool");
	ck_assert_ptr_null(msim_record_flag("batch"));
}
END_TEST

static char lines[16][256];
static int nlines;

static void
note(void *ctx, int what, const char *line)
{
	(void)ctx;
	if (nlines < 16)
		snprintf(lines[nlines++], sizeof(lines[0]), "%d %s", what,
			 line);
}

START_TEST(test_recsweep)
{
	stand_in();
	char *py = tmp_keep("bin/python3");
	const char *mod = tmp_keep("mod");
	const char *db = tmp_keep("s.db");
	const char *dirs[] = {mod, NULL};
	char *cmd[] = {py, "s.py", "--batch", "{batch}"};
	msim_recsweep_spec_t s = {
		.cmd = cmd, .ncmd = 4, .db = db,
		.rec = {.dirs = dirs, .quiet = true}, .note = note,
	};
	const char *grid[] = {"batch=2,4", "max_split_size_mb=none,64",
			      "amp=bf16"};
	size_t ngrid = 3;
	msim_recsweep_t *r;
	char why[2048];
	nlines = 0;
	ck_assert_msg(msim_recsweep_make(&s, grid, &ngrid, &r, why,
					 sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(ngrid, 1);
	ck_assert_str_eq(grid[0], "max_split_size_mb=none,64");
	ck_assert_uint_eq(msim_recsweep_count(r), 2);
	ck_assert_uint_eq(msim_recsweep_failed(r), 0);
	ck_assert_str_eq(msim_recsweep_labels(r)[0], "batch=2,amp=bf16");
	ck_assert_str_eq(msim_recsweep_labels(r)[1], "batch=4,amp=bf16");
	char prefix[512];
	snprintf(prefix, sizeof(prefix), "%s.recordings/batch=4,amp=bf16-", db);
	const char *p1 = msim_recsweep_paths(r)[1];
	ck_assert_int_eq(strncmp(p1, prefix, strlen(prefix)), 0);
	ck_assert_ptr_nonnull(strstr(slurp(p1), "--amp bf16 -- s.py "
					     "--batch 4\n"));
	ck_assert_int_eq(nlines, 2);
	ck_assert_str_eq(lines[0], "0 recording 1/2 (batch=2,amp=bf16): "
				   "recording...");
	msim_recsweep_destroy(r);
	/* Again: both reused; a third value recorded, and one that fails. */
	const char *grid2[] = {"batch=2,4,8"};
	ngrid = 1;
	nlines = 0;
	setenv("FAKE_RC", "0", 1);
	ck_assert_int_eq(msim_recsweep_make(&s, grid2, &ngrid, &r, why,
					    sizeof(why)), 0);
	ck_assert_uint_eq(msim_recsweep_count(r), 3);
	ck_assert_str_eq(lines[0], "0 recording 1/3 (batch=2): recording...");
	msim_recsweep_destroy(r);
	const char *grid3[] = {"batch=2,16"};
	ngrid = 1;
	nlines = 0;
	setenv("FAKE_RC", "1", 1);
	ck_assert_int_eq(msim_recsweep_make(&s, grid3, &ngrid, &r, why,
					    sizeof(why)), 0);
	unsetenv("FAKE_RC");
	ck_assert_uint_eq(msim_recsweep_count(r), 1);
	ck_assert_uint_eq(msim_recsweep_failed(r), 1);
	ck_assert_str_eq(lines[0], "0 recording 1/2 (batch=2): made before, "
				   "reused");
	ck_assert_str_eq(lines[2], "1 recording batch=16 failed (memsim "
				   "record exit 1); its settings are not run");
	msim_recsweep_destroy(r);
	/* A {NAME} of the command that no axis gives. */
	const char *grid4[] = {"max_split_size_mb=none,64"};
	ngrid = 1;
	ck_assert_int_eq(msim_recsweep_make(&s, grid4, &ngrid, &r, why,
					    sizeof(why)), MSIM_EINVAL);
	ck_assert_str_eq(why, "the command's {batch}: no --grid "
			      "batch=V1,V2,... gives its values");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("record");
	TCase *tc = tcase_create("record");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, test_record_exec);
	tcase_add_test(tc, test_record_subst);
	tcase_add_test(tc, test_recsweep);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
