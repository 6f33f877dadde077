/* Helpers the Check programs share: where the test data lives. */
#ifndef MSIM_TESTS_TESTUTIL_H
#define MSIM_TESTS_TESTUTIL_H

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

#endif
