/* policies/kit.c: the free-extent index (a treap) against a plain sorted
 * list, over random inserts and removals, including extents of equal size
 * and address (segments placed twice at one recorded address). */
#include <config.h>

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "policies/kit.h"

#define N 600

static uint32_t lcg = 12345;

static uint32_t
rnd(uint32_t n)
{
	lcg = lcg * 1103515245u + 12345u;
	return (lcg >> 8) % n;
}

/* The reference: the smallest (size, addr) >= size among the indexed. */
static msim_ext_t *
ref_best(msim_ext_t **e, uint64_t size)
{
	msim_ext_t *best = NULL;
	for (int i = 0; i < N; i++)
		if (e[i]->indexed && e[i]->size >= size &&
		    (!best || e[i]->size < best->size ||
		     (e[i]->size == best->size && e[i]->addr < best->addr)))
			best = e[i];
	return best;
}

START_TEST(test_extidx_matches_sorted_list)
{
	msim_extidx_t x = {0};
	msim_ext_t *e[N];
	for (int i = 0; i < N; i++)
		/* Few distinct sizes and addresses: many equal keys. */
		e[i] = msim_ext_new(256 * (1 + rnd(40)), 512 * (1 + rnd(30)),
				    NULL);
	size_t n = 0;
	uint64_t bytes = 0;
	for (int step = 0; step < 20000; step++) {
		msim_ext_t *t = e[rnd(N)];
		if (t->indexed) {
			msim_extidx_remove(&x, t);
			n--;
			bytes -= t->size;
		} else {
			ck_assert_int_eq(msim_extidx_insert(&x, t), 0);
			n++;
			bytes += t->size;
		}
		ck_assert_uint_eq(x.n, n);
		ck_assert_uint_eq(x.bytes, bytes);
		uint64_t want = 512 * (1 + rnd(32));
		msim_ext_t *got = msim_extidx_best(&x, want), *ref =
			ref_best(e, want);
		ck_assert(!got == !ref);
		if (got) {
			ck_assert_uint_eq(got->size, ref->size);
			ck_assert_uint_eq(got->addr, ref->addr);
		}
	}
	/* In order, every extent once; the largest last. */
	size_t seen = 0;
	msim_ext_t *prev = NULL;
	for (msim_ext_t *t = msim_extidx_first(&x); t;
	     t = msim_extidx_next(&x, t), seen++) {
		if (prev)
			ck_assert(prev->size < t->size ||
				  (prev->size == t->size &&
				   prev->addr <= t->addr));
		prev = t;
	}
	ck_assert_uint_eq(seen, n);
	ck_assert_ptr_eq(msim_extidx_largest(&x), prev);
	for (msim_ext_t *t; (t = msim_extidx_first(&x));)
		msim_extidx_remove(&x, t);
	ck_assert_uint_eq(x.n, 0);
	ck_assert_uint_eq(x.bytes, 0);
	ck_assert_ptr_null(msim_extidx_best(&x, 1));
	for (int i = 0; i < N; i++)
		free(e[i]);
	msim_extidx_clear(&x);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("kit");
	TCase *tc = tcase_create("extidx");
	tcase_add_test(tc, test_extidx_matches_sorted_list);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
