/*
 * The engine: event order (time, then queueing order), free_requested
 * and FREE pairs served at once, a policy's own lean loop (ops->serve)
 * against the engine's, OOM handling,
 * the timeline's bounded down-sampling, and the statistic names.
 */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/registry.h"
#include "sim/policy.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "sim/metrics.h"
#include "traces/trace.h"
#include "testutil.h"

#define MB (UINT64_C(1) << 20)

/* A source over an array. */
typedef struct arr_s {
	const msim_req_t *v;
	size_t n, i;
} arr_t;

static int
arr_next(void *ctx, msim_req_t *req)
{
	arr_t *a = ctx;
	if (a->i == a->n)
		return 0;
	*req = a->v[a->i++];
	return 1;
}

/* The same array handed out in batches of two. */
static int
arr_batch(void *ctx, const msim_req_t **reqs_out, size_t *n_out)
{
	arr_t *a = ctx;
	if (a->i == a->n)
		return 0;
	*reqs_out = a->v + a->i;
	*n_out = a->n - a->i < 2 ? a->n - a->i : 2;
	a->i += *n_out;
	return 1;
}

/* The whole array as one batch. */
static int
arr_batch_all(void *ctx, const msim_req_t **reqs_out, size_t *n_out)
{
	arr_t *a = ctx;
	if (a->i == a->n)
		return 0;
	*reqs_out = a->v;
	*n_out = a->n;
	a->i = a->n;
	return 1;
}

static const char *
arr_err(void *ctx)
{
	(void)ctx;
	return "array";
}

/* A fake policy: logs what happens; each alloc schedules an event at
 * time + cookie-delay. */
static char log_buf[512];
static msim_device_t *fake_dev;

static int
fake_create(void **state_out, msim_device_t *dev, const msim_params_t *pv,
	    char *why, size_t whylen)
{
	(void)pv;
	(void)why;
	(void)whylen;
	fake_dev = dev;
	*state_out = dev;
	return 0;
}

static int
fake_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "a%u@%llu ", req->id,
		 (unsigned long long)msim_device_now(state));
	strcat(log_buf, buf);
	*addr_out = 512 * (req->id + 1);
	/* id 0 schedules two events at time 10 (queue order must hold). */
	if (req->id == 0) {
		msim_device_schedule(state, 10, 1);
		msim_device_schedule(state, 10, 2);
	}
	return 0;
}

static int
fake_free(void *state, const msim_req_t *req)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "f%u@%llu ", req->id,
		 (unsigned long long)msim_device_now(state));
	strcat(log_buf, buf);
	return 0;
}

static int
fake_event(void *state, uint64_t cookie)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "e%llu@%llu ", (unsigned long long)cookie,
		 (unsigned long long)msim_device_now(state));
	strcat(log_buf, buf);
	return 0;
}

static void
fake_stats(const void *state, msim_stats_t *out)
{
	(void)state;
	(void)out;
}

static void
fake_destroy(void *state)
{
	(void)state;
}

static const msim_param_spec_t fake_params[] = {{NULL, 0, NULL, 0, 0, 0,
						 NULL, NULL}};
static const msim_policy_ops_t fake_ops = {
	.name = "fake", .summary = "test", .params = fake_params,
	.create = fake_create, .alloc = fake_alloc, .free = fake_free,
	.on_event = fake_event, .stats = fake_stats, .destroy = fake_destroy,
};

START_TEST(test_events_ordered_by_time_then_queue)
{
	static const msim_req_t reqs[] = {
		{.time = 0, .kind = MSIM_REQ_ALLOC, .id = 0, .size = 1},
		{.time = 10, .kind = MSIM_REQ_ALLOC, .id = 1, .size = 1},
		{.time = 5, .kind = MSIM_REQ_FREE, .id = 0}, /* clock clamps */
		{.time = 20, .kind = MSIM_REQ_FREE, .id = 1},
	};
	arr_t a = {reqs, 4, 0};
	/* _i 1: the same requests in batches, the same order of events. */
	msim_sim_config_t cfg = {.source = {arr_next, arr_err, &a,
					    _i ? arr_batch : NULL},
				 .policy = &fake_ops};
	msim_sim_t *sim;
	char why[128];
	log_buf[0] = '\0';
	ck_assert_int_eq(msim_sim_new(&cfg, &sim, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_sim_run(sim), 0);
	/* The events were queued (at time 0) before the request due at 10
	 * was read, so they run first; a request dated in the past runs at
	 * the current time. */
	ck_assert_str_eq(log_buf, "a0@0 e1@10 e2@10 a1@10 f0@10 f1@20 ");
	msim_summary_t sum;
	msim_sim_summary(sim, &sum);
	ck_assert_uint_eq(sum.requests, 4);
	ck_assert_uint_eq(sum.end_time, 20);
	msim_sim_destroy(sim);
}
END_TEST

/* pytorch under a cap: the run stops at the failing request. */
START_TEST(test_oom_stops_and_keep_going)
{
	msim_req_t reqs[] = {
		{.kind = MSIM_REQ_ALLOC, .id = 0, .size = 30 * MB},
		{.kind = MSIM_REQ_ALLOC, .id = 1, .size = 30 * MB},
		{.kind = MSIM_REQ_ALLOC, .id = 2, .size = 10 * MB},
		{.kind = MSIM_REQ_FREE, .id = 1},
		{.kind = MSIM_REQ_FREE, .id = 2},
	};
	for (int keep = 0; keep < 2; keep++) {
		arr_t a = {reqs, 5, 0};
		msim_sim_config_t cfg = {
			.policy = msim_policy_find("pytorch"),
			.source = {arr_next, arr_err, &a},
			.fraction = (double)(50 * MB) / (double)MSIM_H200_BYTES,
			.keep_going = keep,
		};
		msim_sim_t *sim;
		char why[128];
		ck_assert_int_eq(msim_sim_new(&cfg, &sim, why, sizeof(why)), 0);
		ck_assert_int_eq(msim_sim_run(sim), 0);
		msim_summary_t sum;
		msim_stats_t st;
		msim_sim_summary(sim, &sum);
		msim_sim_stats(sim, &st);
		ck_assert_int_eq(sum.oom_request, 1);
		ck_assert_uint_eq(sum.requests, keep ? 5 : 2);
		ck_assert_int_eq(st.num_ooms, 1);
		/* keep going: the failed id's free is skipped, id 2 served. */
		ck_assert_int_eq(st.allocation[0].current, keep ? 1 : 1);
		ck_assert_int_eq(st.allocated_bytes[0].peak,
				 keep ? 40 * MB : 30 * MB);
		msim_sim_destroy(sim);
	}
}
END_TEST

/*
 * free_requested rows directly followed by their FREE are served in one
 * call on the lean path (ops->free_now): the same figures one request at
 * a time (_i 0), in batches of two that cut some pairs apart (1) and in
 * one batch (2).  1000 B -> 1024; at most 3 MiB and 12 MiB + 512 live
 * together (allocated), 3 MiB + 12 MiB + 1 requested.
 */
START_TEST(test_free_pairs)
{
	static int (*const batch[])(void *, const msim_req_t **, size_t *) = {
		NULL, arr_batch, arr_batch_all};
	msim_req_t reqs[] = {
		{.kind = MSIM_REQ_ALLOC, .id = 0, .size = 1000},
		{.kind = MSIM_REQ_ALLOC, .id = 1, .size = 3 * MB},
		{.kind = MSIM_REQ_FREE_REQUESTED, .id = 0},
		{.kind = MSIM_REQ_FREE, .id = 0},
		{.kind = MSIM_REQ_ALLOC, .id = 2, .size = 12 * MB + 1},
		{.kind = MSIM_REQ_FREE_REQUESTED, .id = 1},
		{.kind = MSIM_REQ_FREE, .id = 1},
		{.kind = MSIM_REQ_FREE_REQUESTED, .id = 2},
		{.kind = MSIM_REQ_ALLOC, .id = 3, .size = 512},
		{.kind = MSIM_REQ_FREE, .id = 2},
		{.kind = MSIM_REQ_FREE_REQUESTED, .id = 3},
		{.kind = MSIM_REQ_FREE, .id = 3},
	};
	arr_t a = {reqs, sizeof(reqs) / sizeof(*reqs), 0};
	msim_sim_config_t cfg = {
		.policy = msim_policy_find("pytorch"),
		.source = {arr_next, arr_err, &a, batch[_i]},
	};
	msim_sim_t *sim;
	char why[128];
	ck_assert_int_eq(msim_sim_new(&cfg, &sim, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_sim_run(sim), 0);
	msim_summary_t sum;
	msim_stats_t st;
	msim_sim_summary(sim, &sum);
	msim_sim_stats(sim, &st);
	ck_assert_uint_eq(sum.requests, 8);
	ck_assert_int_eq(st.allocated_bytes[0].peak, 15 * MB + 512);
	ck_assert_int_eq(st.allocated_bytes[0].current, 0);
	ck_assert_int_eq(st.allocated_bytes[0].allocated,
			 1024 + 3 * MB + 12 * MB + 512 + 512);
	ck_assert_int_eq(st.requested_bytes[0].peak, 15 * MB + 1);
	ck_assert_int_eq(st.active[0].current, 0);
	ck_assert_int_eq(st.allocation[0].allocated, 4);
	msim_sim_destroy(sim);
}
END_TEST

/* The array in batches of arr_k requests (arr_batch_k). */
static size_t arr_k;

static int
arr_batch_k(void *ctx, const msim_req_t **reqs_out, size_t *n_out)
{
	arr_t *a = ctx;
	if (a->i == a->n)
		return 0;
	*reqs_out = a->v + a->i;
	*n_out = a->n - a->i < arr_k ? a->n - a->i : arr_k;
	a->i += *n_out;
	return 1;
}

/* One run of v[0..n) with ops in batches of k; what it gave. */
typedef struct lean_run_s {
	int rc;
	msim_summary_t sum;
	msim_stats_t st;
	msim_sample_t tl[64];
	size_t ntl;
} lean_run_t;

static void
lean_run(const msim_policy_ops_t *ops, const char *conf, const msim_req_t *v,
	 size_t n, size_t k, double fraction, bool keep, lean_run_t *out)
{
	arr_t a = {v, n, 0};
	arr_k = k;
	msim_params_t pv;
	ck_assert_int_eq(msim_params_init(&pv, ops->params), 0);
	ck_assert_msg(msim_params_parse(&pv, conf) == 0, "%s", pv.errmsg);
	msim_sim_config_t cfg = {
		.policy = ops,
		.params = &pv,
		.source = {arr_next, arr_err, &a, arr_batch_k},
		.fraction = fraction,
		.keep_going = keep,
		.timeline_points = 16,
	};
	msim_sim_t *sim;
	char why[256];
	memset(out, 0, sizeof(*out));
	ck_assert_int_eq(msim_sim_new(&cfg, &sim, why, sizeof(why)), 0);
	out->rc = msim_sim_run(sim);
	msim_sim_summary(sim, &out->sum);
	msim_sim_stats(sim, &out->st);
	const msim_timeline_t *tl = msim_sim_timeline(sim);
	ck_assert_uint_le(tl->n, 64);
	out->ntl = tl->n;
	memcpy(out->tl, tl->v, tl->n * sizeof(*tl->v));
	msim_sim_destroy(sim);
	msim_params_clear(&pv);
}

/*
 * pytorch's own copies of the lean loop (ops->serve, sim/lean.h: one for
 * the defaults, with the checks of other settings left out, and one for
 * any setting) against the engine's through its functions (serve NULL):
 * the same summary, every statistic and every timeline sample on a real
 * trace (its 35k rows, half of them free_requested rows followed by their
 * FREE), in batches of 4096 and of 3 (which cut pairs apart and stop often
 * for the timeline's 16 points), with no cap and under a 6 GiB cap where
 * allocs fail (the run stops at the first, or goes on with keep_going);
 * with the defaults (_i 0) and each setting the default copy leaves out.
 */
static const char *const serve_confs[] = {
	"", "max_split_size_mb:128", "roundup_power2_divisions:4",
	"expandable_segments:True",
	"garbage_collection_threshold:0.6,max_split_size_mb:256",
};

START_TEST(test_serve_same_as_engine)
{
	const char *conf = serve_confs[_i];
	static const size_t ks[] = {4096, 3};
	static const struct { double fraction; bool keep; } caps[] = {
		{0, false},
		{(double)(6144 * MB) / (double)MSIM_H200_BYTES, false},
		{(double)(6144 * MB) / (double)MSIM_H200_BYTES, true},
	};
	msim_trace_t *t;
	char why[512];
	msim_trace_options_t topt = {.deferred_frees = true}; /* as run's */
	ck_assert_int_eq(msim_trace_open(test_data("traces/gpt2_varlen.csv"),
					 &topt, &t, why, sizeof(why)), 0);
	size_t n = 0, cap = 1024;
	msim_req_t *v = malloc(cap * sizeof(*v));
	ck_assert_ptr_nonnull(v);
	int rc;
	while ((rc = msim_trace_next(t, &v[n])) == 1)
		if (++n == cap) {
			cap *= 2;
			v = realloc(v, cap * sizeof(*v));
			ck_assert_ptr_nonnull(v);
		}
	ck_assert_int_eq(rc, 0);
	msim_trace_close(t);
	const msim_policy_ops_t *pt = msim_policy_find("pytorch");
	ck_assert_ptr_nonnull(pt->serve);
	msim_policy_ops_t apart = *pt;
	apart.serve = NULL;
	static lean_run_t r[2];
	for (size_t c = 0; c < sizeof(caps) / sizeof(*caps); c++)
		for (size_t j = 0; j < sizeof(ks) / sizeof(*ks); j++) {
			lean_run(pt, conf, v, n, ks[j], caps[c].fraction,
				 caps[c].keep, &r[0]);
			lean_run(&apart, conf, v, n, ks[j], caps[c].fraction,
				 caps[c].keep, &r[1]);
			ck_assert_int_eq(r[0].rc, 0);
			ck_assert_int_eq(r[1].rc, 0);
			ck_assert_uint_eq(r[0].sum.requests, r[1].sum.requests);
			ck_assert_int_eq(r[0].sum.oom_request,
					 r[1].sum.oom_request);
			ck_assert_uint_eq(r[0].sum.addr_same,
					  r[1].sum.addr_same);
			ck_assert_uint_eq(r[0].sum.addr_other,
					  r[1].sum.addr_other);
			ck_assert_int_eq(memcmp(&r[0].st, &r[1].st,
						sizeof(r[0].st)), 0);
			ck_assert_uint_eq(r[0].ntl, r[1].ntl);
			ck_assert_int_eq(memcmp(r[0].tl, r[1].tl,
						r[0].ntl * sizeof(*r[0].tl)),
					 0);
			if (c == 0) {
				ck_assert_msg(r[0].sum.oom_request < 0, "%s",
					      conf);
				ck_assert_uint_gt(r[0].sum.addr_same +
						  r[0].sum.addr_other, 0);
			} else {
				ck_assert_msg(r[0].sum.oom_request >= 0, "%s",
					      conf);
			}
			ck_assert_uint_gt(r[0].ntl, 4);
		}
	size_t pairs = 0;
	for (size_t i = 0; i + 1 < n; i++)
		pairs += v[i].kind == MSIM_REQ_FREE_REQUESTED &&
			 v[i + 1].kind == MSIM_REQ_FREE &&
			 v[i + 1].id == v[i].id;
	ck_assert_uint_gt(pairs, n / 4);
	free(v);
}
END_TEST

/* A second free_requested of a block: the same error however the rows
 * are handed out, at the same request (a pair in one call fails as its
 * free_requested would). */
START_TEST(test_free_pair_errors)
{
	static int (*const batch[])(void *, const msim_req_t **, size_t *) = {
		NULL, arr_batch, arr_batch_all};
	msim_req_t reqs[] = {
		{.kind = MSIM_REQ_ALLOC, .id = 0, .size = 1000},
		{.kind = MSIM_REQ_FREE_REQUESTED, .id = 0},
		{.kind = MSIM_REQ_FREE_REQUESTED, .id = 0},
		{.kind = MSIM_REQ_FREE, .id = 0},
	};
	arr_t a = {reqs, 4, 0};
	msim_sim_config_t cfg = {
		.policy = msim_policy_find("pytorch"),
		.source = {arr_next, arr_err, &a, batch[_i]},
	};
	msim_sim_t *sim;
	char why[128];
	ck_assert_int_eq(msim_sim_new(&cfg, &sim, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_sim_run(sim), MSIM_ENOTFOUND);
	ck_assert_str_eq(msim_sim_errmsg(sim),
			 "request 1: free_requested: not found");
	msim_sim_destroy(sim);
}
END_TEST

/* A recorded OOM is expected: it does not stop the run. */
START_TEST(test_expected_oom)
{
	msim_req_t reqs[] = {
		{.kind = MSIM_REQ_ALLOC, .id = 0, .size = 40 * MB},
		{.kind = MSIM_REQ_ALLOC, .id = 1, .size = 40 * MB,
		 .flags = MSIM_REQF_EXPECT_OOM},
		{.kind = MSIM_REQ_ALLOC, .id = 1, .size = 2 * MB,
		 .flags = MSIM_REQF_EXPECT_OOM}, /* fits: not an OOM here */
		{.kind = MSIM_REQ_ALLOC, .id = 1, .size = 2 * MB},
	};
	arr_t a = {reqs, 4, 0};
	msim_sim_config_t cfg = {
		.policy = msim_policy_find("pytorch"),
		.source = {arr_next, arr_err, &a},
		.fraction = (double)(70 * MB) / (double)MSIM_H200_BYTES,
	};
	msim_sim_t *sim;
	char why[128];
	ck_assert_int_eq(msim_sim_new(&cfg, &sim, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_sim_run(sim), 0);
	msim_summary_t sum;
	msim_sim_summary(sim, &sum);
	ck_assert_int_eq(sum.oom_request, -1);
	ck_assert_uint_eq(sum.ooms_expected, 1);
	ck_assert_uint_eq(sum.ooms_unmatched, 1);
	ck_assert_uint_eq(sum.requests, 4);
	msim_sim_destroy(sim);
}
END_TEST

/* A recorded run of segment frees before a malloc: the malloc's own
 * release when it had to free memory, else a hidden empty_cache(). */
START_TEST(test_maybe_empty_cache)
{
	for (int own = 0; own < 2; own++) {
		msim_req_t reqs[] = {
			{.kind = MSIM_REQ_ALLOC, .id = 0, .size = 60 * MB},
			{.kind = MSIM_REQ_ALLOC, .id = 1, .size = 30 * MB},
			{.kind = MSIM_REQ_FREE, .id = 1},
			{.kind = MSIM_REQ_ALLOC, .id = 2,
			 .size = own ? 40 * MB : 20 * MB,
			 .flags = MSIM_REQF_MAYBE_EMPTY_CACHE},
		};
		arr_t a = {reqs, 4, 0};
		msim_sim_config_t cfg = {
			.policy = msim_policy_find("pytorch"),
			.source = {arr_next, arr_err, &a},
			.fraction = (double)(100 * MB) / (double)MSIM_H200_BYTES,
		};
		msim_sim_t *sim;
		char why[128];
		ck_assert_int_eq(msim_sim_new(&cfg, &sim, why, sizeof(why)), 0);
		ck_assert_int_eq(msim_sim_run(sim), 0);
		msim_stats_t st;
		msim_sim_stats(sim, &st);
		/* Either way the cached 30 MiB segment goes, once. */
		ck_assert_int_eq(st.num_device_free, 1);
		ck_assert_int_eq(st.num_sync_all_streams, 1);
		ck_assert_int_eq(st.num_alloc_retries, own ? 1 : 0);
		ck_assert_int_eq(st.reserved_bytes[0].current,
				 own ? 100 * MB : 80 * MB);
		msim_sim_destroy(sim);
	}
}
END_TEST

START_TEST(test_timeline_bounded)
{
	msim_timeline_t tl;
	ck_assert_int_eq(msim_timeline_init(&tl, 100), 0);
	for (uint64_t r = 0; r < 100000; r++) {
		if (!msim_timeline_due(&tl, r))
			continue;
		msim_sample_t s = {.request = r, .reserved = (int64_t)r};
		msim_timeline_add(&tl, &s);
	}
	ck_assert_uint_le(tl.n, 200);
	ck_assert_uint_ge(tl.n, 100);
	for (size_t i = 1; i < tl.n; i++)
		ck_assert_uint_eq(tl.v[i].request - tl.v[i - 1].request,
				  tl.stride);
	msim_timeline_clear(&tl);
	ck_assert_double_eq_tol(msim_frag(75, 100), 0.25, 1e-12);
	ck_assert_double_eq_tol(msim_frag(0, 0), 0.0, 1e-12);
	ck_assert_double_eq_tol(msim_ext_frag(30, 120), 0.75, 1e-12);
}
END_TEST

static void
count_key(const char *name, int64_t value, void *ctx)
{
	(void)name;
	(void)value;
	(*(int *)ctx)++;
}

/* The 122 keys of torch.cuda.memory_stats() in PyTorch 2.11. */
START_TEST(test_stat_names)
{
	msim_stats_t st = {0};
	int n = 0;
	msim_stats_foreach(&st, count_key, &n);
	ck_assert_int_eq(n, 122);
	st.reserved_bytes[MSIM_POOL_LARGE].peak = 42;
	st.num_sync_all_streams = 3;
	int64_t v;
	ck_assert_int_eq(msim_stats_get(&st, "reserved_bytes.large_pool.peak",
					&v), 0);
	ck_assert_int_eq(v, 42);
	ck_assert_int_eq(msim_stats_get(&st, "num_sync_all_streams", &v), 0);
	ck_assert_int_eq(v, 3);
	ck_assert_int_eq(msim_stats_get(&st, "allocation.all.freed", &v), 0);
	ck_assert_int_eq(msim_stats_get(&st, "allocated.all.current", &v),
			 MSIM_ENOTFOUND);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("engine");
	tcase_add_loop_test(tc, test_events_ordered_by_time_then_queue, 0, 2);
	tcase_add_loop_test(tc, test_free_pairs, 0, 3);
	tcase_add_loop_test(tc, test_free_pair_errors, 0, 3);
	tcase_add_loop_test(tc, test_serve_same_as_engine, 0,
			    sizeof(serve_confs) / sizeof(*serve_confs));
	tcase_add_test(tc, test_oom_stops_and_keep_going);
	tcase_add_test(tc, test_expected_oom);
	tcase_add_test(tc, test_maybe_empty_cache);
	tcase_add_test(tc, test_timeline_bounded);
	tcase_add_test(tc, test_stat_names);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
