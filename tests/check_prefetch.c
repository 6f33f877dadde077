/* Read-ahead: the same requests in the same order, then the same end or
 * error; and it stops cleanly when the consumer leaves early. */
#include <config.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "traces/prefetch.h"

typedef struct counter_s {
	uint32_t i, n;
	int fail_at; /* -1: no error */
} counter_t;

static int
counter_next(void *ctx, msim_req_t *req)
{
	counter_t *c = ctx;
	if ((int)c->i == c->fail_at)
		return MSIM_EFORMAT;
	if (c->i == c->n)
		return 0;
	*req = (msim_req_t){.time = c->i, .size = 512 + c->i, .id = c->i,
			    .kind = MSIM_REQ_ALLOC};
	c->i++;
	return 1;
}

static const char *
counter_err(void *ctx)
{
	(void)ctx;
	return "trace.csv:7: boom";
}

START_TEST(test_order_and_end)
{
	counter_t c = {0, 100000, -1};
	msim_prefetch_t *p;
	ck_assert_int_eq(msim_prefetch_new((msim_source_t){counter_next,
							   counter_err, &c, NULL, NULL},
					   &p), 0);
	msim_source_t s = msim_prefetch_source(p);
	msim_req_t r;
	for (uint32_t i = 0; i < 100000; i++) {
		ck_assert_int_eq(s.next(s.ctx, &r), 1);
		ck_assert_uint_eq(r.id, i);
		ck_assert_uint_eq(r.size, 512 + i);
	}
	ck_assert_int_eq(s.next(s.ctx, &r), 0);
	ck_assert_int_eq(s.next(s.ctx, &r), 0);
	msim_prefetch_destroy(p);
}
END_TEST

/* The same requests through the batch interface. */
START_TEST(test_batches)
{
	counter_t c = {0, 100000, 70000};
	msim_prefetch_t *p;
	ck_assert_int_eq(msim_prefetch_new((msim_source_t){counter_next,
			 counter_err, &c, NULL, NULL}, &p), 0);
	msim_source_t s = msim_prefetch_source(p);
	ck_assert_ptr_nonnull(s.batch);
	const msim_req_t *v;
	size_t n;
	uint32_t next = 0;
	int rc;
	while ((rc = s.batch(s.ctx, &v, &n)) == 1)
		for (size_t i = 0; i < n; i++)
			ck_assert_uint_eq(v[i].id, next++);
	ck_assert_int_eq(rc, MSIM_EFORMAT);
	ck_assert_uint_eq(next, 70000);
	ck_assert_str_eq(s.errmsg(s.ctx), "trace.csv:7: boom");
	msim_prefetch_destroy(p);
}
END_TEST

START_TEST(test_error_after_requests)
{
	counter_t c = {0, 100000, 70000};
	msim_prefetch_t *p;
	ck_assert_int_eq(msim_prefetch_new((msim_source_t){counter_next,
							   counter_err, &c, NULL, NULL},
					   &p), 0);
	msim_source_t s = msim_prefetch_source(p);
	msim_req_t r;
	uint32_t n = 0;
	int rc;
	while ((rc = s.next(s.ctx, &r)) == 1)
		ck_assert_uint_eq(r.id, n++);
	ck_assert_int_eq(rc, MSIM_EFORMAT);
	ck_assert_uint_eq(n, 70000);
	ck_assert_str_eq(s.errmsg(s.ctx), "trace.csv:7: boom");
	msim_prefetch_destroy(p);
}
END_TEST

START_TEST(test_early_stop)
{
	for (int k = 0; k < 50; k++) {
		counter_t c = {0, 10000000, -1};
		msim_prefetch_t *p;
		ck_assert_int_eq(msim_prefetch_new(
			(msim_source_t){counter_next, counter_err, &c, NULL, NULL}, &p), 0);
		msim_source_t s = msim_prefetch_source(p);
		msim_req_t r;
		for (int i = 0; i < k * 1000; i++)
			ck_assert_int_eq(s.next(s.ctx, &r), 1);
		msim_prefetch_destroy(p); /* must not hang */
	}
	msim_prefetch_destroy(NULL);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("prefetch");
	TCase *tc = tcase_create("prefetch");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_order_and_end);
	tcase_add_test(tc, test_error_after_requests);
	tcase_add_test(tc, test_batches);
	tcase_add_test(tc, test_early_stop);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
