/*
 * What the per-policy Check programs share: a fresh device (logging its
 * events) and policy per test, and one-letter steps, A(id, size) to
 * allocate, F(id) to free, S() for the statistics, as in
 * check_policy_pytorch.c.
 */
#ifndef MSIM_TESTS_POLICYTEST_H
#define MSIM_TESTS_POLICYTEST_H

#include <check.h>
#include <stdint.h>
#include <string.h>

#include "lab/job.h"
#include "policies/registry.h"
#include "sim/device.h"
#include "sim/error.h"

#define MB (UINT64_C(1) << 20)
#define GB (UINT64_C(1) << 30)
#define CUR(st, f) ((st).f[0].current)
#define PEAK(st, f) ((st).f[0].peak)

static msim_device_t *dev;
static msim_policy_t *pol;
static msim_addr_t addr[64];

/* A fresh device of capacity bytes (0: the H200) and policy name. */
static inline void
setup_cap(const char *name, const char *conf, uint64_t capacity)
{
	const msim_policy_ops_t *ops = msim_policy_find(name);
	ck_assert_ptr_nonnull(ops);
	msim_params_t pv;
	char why[256];
	msim_device_config_t cfg = {.log_events = 1, .capacity = capacity};
	dev = msim_device_new(&cfg);
	ck_assert_ptr_nonnull(dev);
	ck_assert_int_eq(msim_params_init(&pv, ops->params), 0);
	ck_assert_msg(msim_params_parse(&pv, conf) == 0, "%s", pv.errmsg);
	ck_assert_msg(msim_policy_new(ops, dev, &pv, &pol, why,
				      sizeof(why)) == 0, "%s", why);
	msim_params_clear(&pv);
	memset(addr, 0, sizeof(addr));
}

static inline void
setup(const char *name, const char *conf)
{
	setup_cap(name, conf, 0);
}

static inline void
teardown(void)
{
	msim_policy_destroy(pol);
	msim_device_destroy(dev);
	pol = NULL;
	dev = NULL;
}

static inline int
try_alloc(uint32_t id, uint64_t size)
{
	msim_req_t r = {.kind = MSIM_REQ_ALLOC, .id = id, .size = size};
	return msim_policy_alloc(pol, &r, &addr[id]);
}

static inline msim_addr_t
A(uint32_t id, uint64_t size)
{
	int rc = try_alloc(id, size);
	ck_assert_msg(rc == 0, "alloc %u of %llu: %s", id,
		      (unsigned long long)size, msim_strerror(rc));
	return addr[id];
}

static inline void
F(uint32_t id)
{
	msim_req_t r = {.kind = MSIM_REQ_FREE, .id = id};
	ck_assert_int_eq(msim_policy_free(pol, &r), 0);
}

static inline msim_stats_t
S(void)
{
	msim_stats_t st;
	msim_policy_stats(pol, &st);
	return st;
}

/* Device events so far. */
static inline size_t
nevents(void)
{
	size_t n;
	msim_device_events(dev, &n);
	return n;
}

/* The size of the i-th device event. */
static inline uint64_t
event_size(size_t i)
{
	size_t n;
	const msim_seg_event_t *ev = msim_device_events(dev, &n);
	ck_assert_uint_lt(i, n);
	return ev[i].size;
}

/* The pytorch policy with its defaults under a cap of cap bytes (0: none),
 * as set_per_process_memory_fraction(cap / total). */
static inline void
setup_pt(uint64_t cap)
{
	setup("pytorch", "");
	if (cap)
		ck_assert_int_eq(msim_device_set_fraction(
			dev, (double)cap / (double)MSIM_H200_BYTES), 0);
	msim_policy_destroy(pol);
	const msim_policy_ops_t *ops = msim_policy_find("pytorch");
	char why[128];
	ck_assert_int_eq(msim_policy_new(ops, dev, NULL, &pol, why,
					 sizeof(why)), 0);
}

/* Runs the tests of one suite; returns the exit status. */
static inline int
run_suite(const char *name, void (*add)(TCase *tc))
{
	Suite *s = suite_create(name);
	TCase *tc = tcase_create("rules");
	tcase_set_timeout(tc, 30);
	add(tc);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}

/* The job of spec s, opened and run (both must succeed); the caller
 * destroys it. */
static inline msim_job_t *
job_ran(const msim_job_spec_t *s)
{
	msim_job_t *j;
	msim_job_err_t err;
	ck_assert_msg(msim_job_open(s, false, &j, &err) == 0, "%s", err.msg);
	ck_assert_msg(msim_job_run(j, &err) == 0, "%s", err.msg);
	return j;
}

#endif
