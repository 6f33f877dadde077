/*
 * The contract every registered policy keeps, run over msim_policy_list()
 * with tcase_add_loop_test, so a new policy is covered by adding it to the
 * registry: live blocks never overlap and are 256 B aligned, every valid
 * free is accepted and an invalid one refused, statistics agree with the
 * live blocks, peak reserved >= peak allocated, free_info stays within the
 * reserved bytes, and the real traces of tests/data/traces/ replay.
 */
#include <config.h>

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/registry.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "tests/testutil.h"
#include "traces/trace.h"

#define MB (UINT64_C(1) << 20)
#define NSLOTS 256

static size_t npolicies;

static const msim_policy_ops_t *
policy(int i)
{
	return msim_policy_list()[i];
}

/* xorshift64*: a fixed sequence, no global state. */
static uint64_t
rnd(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * UINT64_C(2685821657736338717);
}

/* A size of every scale: bytes, KiB, MiB, hundreds of MiB. */
static uint64_t
rnd_size(uint64_t *x)
{
	uint64_t r = rnd(x) % 100;
	if (r < 40)
		return 1 + rnd(x) % 4096;
	if (r < 70)
		return 1 + rnd(x) % MB;
	if (r < 95)
		return 1 + rnd(x) % (32 * MB);
	return 1 + rnd(x) % (300 * MB);
}

typedef struct slot_s {
	bool live;
	msim_addr_t addr;
	uint64_t size;
} slot_t;

static void
check_consistent(const msim_policy_t *pol, const slot_t *slots,
		 const char *name)
{
	msim_stats_t st;
	msim_policy_stats(pol, &st);
	int64_t n = 0, req = 0;
	for (int i = 0; i < NSLOTS; i++) {
		if (slots[i].live) {
			n++;
			req += (int64_t)slots[i].size;
		}
	}
	ck_assert_msg(st.allocation[0].current == n, "%s: allocation %lld "
		      "!= %lld live", name,
		      (long long)st.allocation[0].current, (long long)n);
	ck_assert_msg(st.active[0].current == n, "%s: active", name);
	ck_assert_msg(st.requested_bytes[0].current == req,
		      "%s: requested_bytes", name);
	ck_assert_msg(st.allocated_bytes[0].current >= req,
		      "%s: allocated below requested", name);
	ck_assert_msg(st.reserved_bytes[0].current >=
		      st.allocated_bytes[0].current,
		      "%s: reserved below allocated", name);
	ck_assert_msg(st.reserved_bytes[0].peak >=
		      st.allocated_bytes[0].peak, "%s: peaks", name);
	for (int p = 1; p < MSIM_NPOOL; p++)
		ck_assert_msg(st.allocated_bytes[p].current <=
			      st.allocated_bytes[0].current, "%s: pool", name);
	uint64_t largest, total;
	msim_policy_free_info(pol, &largest, &total);
	ck_assert_msg(largest <= total, "%s: largest free %llu > free %llu",
		      name, (unsigned long long)largest,
		      (unsigned long long)total);
	ck_assert_msg(total + (uint64_t)st.allocated_bytes[0].current <=
		      (uint64_t)st.reserved_bytes[0].current,
		      "%s: free + allocated > reserved", name);
}

/* Random allocs and frees: disjoint, aligned, accepted, consistent. */
START_TEST(test_random_workload_keeps_contract)
{
	const msim_policy_ops_t *ops = policy(_i);
	msim_device_t *dev = msim_device_new(NULL);
	msim_policy_t *pol;
	char why[256];
	ck_assert_msg(msim_policy_new(ops, dev, NULL, &pol, why,
				      sizeof(why)) == 0, "%s: %s", ops->name,
		      why);
	slot_t slots[NSLOTS] = {{0}};
	uint64_t x = 0x9e3779b97f4a7c15u;
	for (int step = 0; step < 3000; step++) {
		uint32_t id = (uint32_t)(rnd(&x) % NSLOTS);
		slot_t *sl = &slots[id];
		msim_req_t r = {.id = id, .time = (msim_time_t)step};
		if (sl->live) {
			r.kind = MSIM_REQ_FREE;
			ck_assert_msg(msim_policy_free(pol, &r) == 0,
				      "%s: free of a live block refused",
				      ops->name);
			sl->live = false;
		} else {
			r.kind = MSIM_REQ_ALLOC;
			r.size = rnd_size(&x);
			msim_addr_t a;
			int rc = msim_policy_alloc(pol, &r, &a);
			ck_assert_msg(rc == 0, "%s: alloc of %llu: %s",
				      ops->name, (unsigned long long)r.size,
				      msim_strerror(rc));
			ck_assert_msg(a % 256 == 0, "%s: %llx not aligned",
				      ops->name, (unsigned long long)a);
			for (int j = 0; j < NSLOTS; j++) {
				const slot_t *o = &slots[j];
				ck_assert_msg(!o->live || a + r.size <= o->addr
					      || o->addr + o->size <= a,
					      "%s: block %d overlaps %d",
					      ops->name, (int)id, j);
			}
			*sl = (slot_t){true, a, r.size};
		}
		if (step % 97 == 0)
			check_consistent(pol, slots, ops->name);
	}
	/* Everything back: nothing allocated, nothing live. */
	for (uint32_t id = 0; id < NSLOTS; id++) {
		if (!slots[id].live)
			continue;
		msim_req_t r = {.kind = MSIM_REQ_FREE, .id = id};
		ck_assert_int_eq(msim_policy_free(pol, &r), 0);
		slots[id].live = false;
	}
	check_consistent(pol, slots, ops->name);
	msim_stats_t st;
	msim_policy_stats(pol, &st);
	ck_assert_int_eq(st.allocated_bytes[0].current, 0);
	msim_policy_destroy(pol);
	msim_device_destroy(dev);
}
END_TEST

/* A free of a block that is not live is refused, never a crash. */
START_TEST(test_invalid_free_refused)
{
	const msim_policy_ops_t *ops = policy(_i);
	msim_device_t *dev = msim_device_new(NULL);
	msim_policy_t *pol;
	char why[256];
	ck_assert_int_eq(msim_policy_new(ops, dev, NULL, &pol, why,
					 sizeof(why)), 0);
	/* sim/policy.h: a free of a block not live is MSIM_ENOTFOUND. */
	msim_req_t f = {.kind = MSIM_REQ_FREE, .id = 7};
	ck_assert_int_eq(msim_policy_free(pol, &f), MSIM_ENOTFOUND);
	f.id = 100000000; /* far past any table */
	ck_assert_int_eq(msim_policy_free(pol, &f), MSIM_ENOTFOUND);
	msim_req_t fr = {.kind = MSIM_REQ_FREE_REQUESTED, .id = 7};
	int rc = msim_policy_free_requested(pol, &fr);
	ck_assert(rc == MSIM_ENOTFOUND || (rc == 0 && !ops->free_requested));
	msim_req_t a = {.kind = MSIM_REQ_ALLOC, .id = 7, .size = 1000};
	msim_addr_t addr;
	ck_assert_int_eq(msim_policy_alloc(pol, &a, &addr), 0);
	f.id = 7;
	ck_assert_int_eq(msim_policy_free(pol, &f), 0);
	ck_assert_int_eq(msim_policy_free(pol, &f), MSIM_ENOTFOUND); /* twice */
	a.size = 0;
	ck_assert_int_eq(msim_policy_alloc(pol, &a, &addr), MSIM_EINVAL);
	msim_policy_destroy(pol);
	msim_device_destroy(dev);
}
END_TEST

/* Out of device memory is a result: MSIM_EDEVOOM, counted, and the
 * policy stays usable. */
START_TEST(test_device_oom_is_reported)
{
	const msim_policy_ops_t *ops = policy(_i);
	msim_device_config_t cfg = {.capacity = 1024 * MB};
	msim_device_t *dev = msim_device_new(&cfg);
	msim_policy_t *pol;
	char why[256];
	ck_assert_int_eq(msim_policy_new(ops, dev, NULL, &pol, why,
					 sizeof(why)), 0);
	msim_req_t a = {.kind = MSIM_REQ_ALLOC, .id = 0, .size = 2048 * MB};
	msim_addr_t addr;
	ck_assert_int_eq(msim_policy_alloc(pol, &a, &addr), MSIM_EDEVOOM);
	msim_stats_t st;
	msim_policy_stats(pol, &st);
	ck_assert_int_ge(st.num_ooms, 1);
	ck_assert_uint_le((uint64_t)st.reserved_bytes[0].current, 1024 * MB);
	a.size = 8 * MB;
	ck_assert_int_eq(msim_policy_alloc(pol, &a, &addr), 0);
	msim_policy_destroy(pol);
	msim_device_destroy(dev);
}
END_TEST

static const char *const traces[] = {
	"gpt2_fp32", "gpt2_varlen", "resnet50_amp", "bert_infer_varlen",
	"prefetch_2stream", "train_eval_emptycache",
};
#define NTRACES (sizeof(traces) / sizeof(traces[0]))

/* Every real trace replays through every policy with its defaults. */
START_TEST(test_real_traces_replay)
{
	const msim_policy_ops_t *ops = policy(_i / (int)NTRACES);
	const char *w = traces[_i % NTRACES];
	char path[256], why[512];
	snprintf(path, sizeof(path), "traces/%s.csv", w);
	msim_trace_t *t;
	ck_assert_int_eq(msim_trace_open(test_data(path), NULL, &t, why,
					 sizeof(why)), 0);
	msim_sim_config_t cfg = {
		.source = msim_trace_source(t),
		.policy = ops,
	};
	msim_sim_t *sim;
	ck_assert_msg(msim_sim_new(&cfg, &sim, why, sizeof(why)) == 0, "%s",
		      why);
	ck_assert_msg(msim_sim_run(sim) == 0, "%s on %s: %s", ops->name, w,
		      msim_sim_errmsg(sim));
	msim_summary_t sum;
	msim_stats_t st;
	msim_sim_summary(sim, &sum);
	msim_sim_stats(sim, &st);
	ck_assert_msg(sum.oom_request < 0, "%s on %s: OOM at %lld", ops->name,
		      w, (long long)sum.oom_request);
	ck_assert_int_ge(st.reserved_bytes[0].peak, st.allocated_bytes[0].peak);
	ck_assert_int_ge(st.allocated_bytes[0].peak, st.requested_bytes[0].peak);
	ck_assert(sum.frag_at_peak >= 0.0 && sum.frag_at_peak < 1.0);
	msim_sim_destroy(sim);
	msim_trace_close(t);
}
END_TEST

int
main(void)
{
	for (npolicies = 0; msim_policy_list()[npolicies]; npolicies++)
		;
	Suite *s = suite_create("policy_contract");
	TCase *tc = tcase_create("contract");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_random_workload_keeps_contract, 0,
			    (int)npolicies);
	tcase_add_loop_test(tc, test_invalid_free_refused, 0, (int)npolicies);
	tcase_add_loop_test(tc, test_device_oom_is_reported, 0,
			    (int)npolicies);
	tcase_add_loop_test(tc, test_real_traces_replay, 0,
			    (int)(npolicies * NTRACES));
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
