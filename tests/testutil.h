/* Helpers the Check programs share: where the test data lives, and a
 * scratch folder per test for the files a test writes (tests/data is
 * only read). */
#ifndef MSIM_TESTS_TESTUTIL_H
#define MSIM_TESTS_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* $MSIM_TESTDATA/rel, in a static buffer (tests/data by default). */
static inline const char *
test_data(const char *rel)
{
	static char buf[4096];
	const char *dir = getenv("MSIM_TESTDATA");
	snprintf(buf, sizeof(buf), "%s/%s", dir ? dir : "tests/data", rel);
	return buf;
}

/* The scratch folder's path (empty before tmpdir_setup()). */
static inline char *
tmpdir_path(void)
{
	static char dir[64];
	return dir;
}

/* How many of tmp_keep()'s buffers the test has used. */
static inline int *
tmp_kept(void)
{
	static int n;
	return &n;
}

/* A checked fixture (tcase_add_checked_fixture(tc, tmpdir_setup,
 * tmpdir_teardown)): a fresh folder for each test, removed with
 * all it holds after it. */
static inline void
tmpdir_setup(void)
{
	char *dir = tmpdir_path();
	*tmp_kept() = 0;
	snprintf(dir, 64, "/tmp/memsim-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static inline void
tmpdir_teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir_path());
	ck_assert_int_eq(system(cmd), 0);
}

/* The scratch folder's file name, in one of four static buffers (so a
 * test may hold a few paths at once). */
static inline const char *
tmp_path(const char *name)
{
	static char buf[4][256];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", tmpdir_path(), name);
	return buf[k];
}

/* The scratch folder's file name in a buffer of its own that lasts the
 * test (at most 16 a test): for the paths a spec holds while
 * tmp_path()'s buffers are reused. */
static inline char *
tmp_keep(const char *name)
{
	static char buf[16][256];
	int *n = tmp_kept();
	ck_assert_int_lt(*n, 16);
	snprintf(buf[*n], sizeof(buf[0]), "%s/%s", tmpdir_path(), name);
	return buf[(*n)++];
}

/* Writes n bytes to the scratch file name; returns its path
 * (tmp_path()'s). */
static inline const char *
write_bytes(const char *name, const void *data, size_t n)
{
	const char *p = tmp_path(name);
	FILE *fp = fopen(p, "wb");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(data, 1, n, fp), n);
	fclose(fp);
	return p;
}

#endif
