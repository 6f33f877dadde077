/*
 * The pytorch policy rule by rule: the cases of docs/pytorch-allocator.md
 * §14, with the exact figures the real allocator showed on an H200
 * (torch 2.11.0+cu130, the probe programs of §14.2), step by step.
 */
#include <config.h>

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policies/registry.h"
#include "sim/device.h"
#include "sim/error.h"

#define MB (UINT64_C(1) << 20)

static msim_device_t *dev;
static msim_policy_t *pol;
static msim_addr_t addr[64];

/* A fresh device and pytorch policy with conf, under cap bytes (0: none),
 * the cap set as set_per_process_memory_fraction(cap / total) does. */
static void
setup(const char *conf, uint64_t cap)
{
	const msim_policy_ops_t *ops = msim_policy_find("pytorch");
	msim_params_t pv;
	char why[256];
	msim_device_config_t cfg = {.log_events = 1};
	dev = msim_device_new(&cfg);
	ck_assert_ptr_nonnull(dev);
	if (cap)
		ck_assert_int_eq(msim_device_set_fraction(
			dev, (double)cap / (double)MSIM_H200_BYTES), 0);
	ck_assert_int_eq(msim_params_init(&pv, ops->params), 0);
	ck_assert_msg(msim_params_parse(&pv, conf) == 0, "%s", pv.errmsg);
	ck_assert_msg(msim_policy_new(ops, dev, &pv, &pol, why,
				      sizeof(why)) == 0, "%s", why);
	msim_params_clear(&pv);
	memset(addr, 0, sizeof(addr));
}

static void
teardown(void)
{
	msim_policy_destroy(pol);
	msim_device_destroy(dev);
	pol = NULL;
	dev = NULL;
}

static int
try_alloc(uint32_t id, uint64_t size)
{
	msim_req_t r = {.kind = MSIM_REQ_ALLOC, .id = id, .size = size};
	return msim_policy_alloc(pol, &r, &addr[id]);
}

static msim_addr_t
A(uint32_t id, uint64_t size)
{
	ck_assert_int_eq(try_alloc(id, size), 0);
	return addr[id];
}

static void
F(uint32_t id)
{
	msim_req_t r = {.kind = MSIM_REQ_FREE, .id = id};
	ck_assert_int_eq(msim_policy_free(pol, &r), 0);
}

static msim_stats_t
S(void)
{
	msim_stats_t st;
	msim_policy_stats(pol, &st);
	return st;
}

/* The figures the probe printed after each step. */
typedef struct probe_s {
	int64_t allocated, reserved, active, requested, inactive_split_bytes,
		inactive_split, segment, allocation;
} probe_t;

#define CUR(st, f) ((st).f[0].current)

static void
expect(const probe_t *p, const char *step)
{
	msim_stats_t st = S();
	ck_assert_msg(CUR(st, allocated_bytes) == p->allocated,
		      "%s: allocated %lld", step,
		      (long long)CUR(st, allocated_bytes));
	ck_assert_msg(CUR(st, reserved_bytes) == p->reserved,
		      "%s: reserved %lld", step,
		      (long long)CUR(st, reserved_bytes));
	ck_assert_msg(CUR(st, active_bytes) == p->active, "%s: active", step);
	ck_assert_msg(CUR(st, requested_bytes) == p->requested,
		      "%s: requested %lld", step,
		      (long long)CUR(st, requested_bytes));
	ck_assert_msg(CUR(st, inactive_split_bytes) == p->inactive_split_bytes,
		      "%s: inactive_split_bytes %lld", step,
		      (long long)CUR(st, inactive_split_bytes));
	ck_assert_msg(CUR(st, inactive_split) == p->inactive_split,
		      "%s: inactive_split", step);
	ck_assert_msg(CUR(st, segment) == p->segment, "%s: segment", step);
	ck_assert_msg(CUR(st, allocation) == p->allocation, "%s: allocation",
		      step);
}

/* The i-th device event must be (action, size). */
static void
expect_event(size_t i, int action, uint64_t size)
{
	size_t n;
	const msim_seg_event_t *ev = msim_device_events(dev, &n);
	ck_assert_msg(i < n, "only %zu events", n);
	ck_assert_str_eq(msim_seg_action_name(ev[i].action),
			 msim_seg_action_name(action));
	ck_assert_uint_eq(ev[i].size, size);
}

static size_t
nevents(void)
{
	size_t n;
	msim_device_events(dev, &n);
	return n;
}

/* §1.3: request -> block size / segment size, default config. */
START_TEST(test_sizes_round_and_segment)
{
	static const uint64_t c[][3] = {
		{1, 512, 2 * MB}, {511, 512, 2 * MB}, {512, 512, 2 * MB},
		{513, 1024, 2 * MB}, {1000, 1024, 2 * MB},
		{1048575, 1048576, 2 * MB}, {1048576, 1048576, 2 * MB},
		{1048577, 1049088, 20 * MB}, {2 * MB, 2 * MB, 20 * MB},
		{5 * MB, 5 * MB, 20 * MB}, {10 * MB - 1, 10 * MB, 10 * MB},
		{10 * MB + 1, 10486272, 12 * MB},
		{12 * MB + 1, 12583424, 14 * MB}, {25 * MB, 26 * MB, 26 * MB},
		{19 * MB + 1, 20 * MB, 20 * MB},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		setup("", 0);
		A(0, c[i][0]);
		msim_stats_t st = S();
		ck_assert_msg(CUR(st, allocated_bytes) == (int64_t)c[i][1],
			      "%llu -> block %lld", (unsigned long long)c[i][0],
			      (long long)CUR(st, allocated_bytes));
		ck_assert_int_eq(CUR(st, reserved_bytes), c[i][2]);
		ck_assert_int_eq(CUR(st, requested_bytes), c[i][0]);
		int small = c[i][1] <= MB;
		ck_assert_int_eq(st.reserved_bytes[small ? 1 : 2].current,
				 c[i][2]);
		teardown();
	}
}
END_TEST

/* §14.2 large_split. */
START_TEST(test_large_split)
{
	setup("", 0);
	msim_addr_t x = A(0, 2 * MB);
	expect(&(probe_t){2097152, 20971520, 2097152, 2097152, 18874368, 1, 1,
			  1}, "x2MB");
	ck_assert_uint_eq(A(1, 17 * MB) - x, 2097152);
	expect(&(probe_t){20971520, 20971520, 20971520, 19922944, 0, 0, 1, 2},
	       "y17MB");
	F(1);
	expect(&(probe_t){2097152, 20971520, 2097152, 2097152, 18874368, 1, 1,
			  1}, "free_y");
	F(0);
	expect(&(probe_t){0, 20971520, 0, 0, 0, 0, 1, 0}, "free_x");
	ck_assert_uint_eq(A(2, 19 * MB + 1), x);
	expect(&(probe_t){20971520, 20971520, 20971520, 19922945, 0, 0, 1, 1},
	       "z19MB+1");
	F(2);
	ck_assert_uint_eq(A(3, 12 * MB), x);
	expect(&(probe_t){12582912, 20971520, 12582912, 12582912, 8388608, 1,
			  1, 1}, "w12MB");
	ck_assert_uint_eq(A(4, 6 * MB) - x, 12582912);
	expect(&(probe_t){18874368, 20971520, 18874368, 18874368, 2097152, 1,
			  1, 2}, "v6MB");
	F(3);
	F(4);
	ck_assert_int_eq(msim_policy_empty_cache(pol), 0);
	expect(&(probe_t){0, 0, 0, 0, 0, 0, 0, 0}, "emptied");
	msim_stats_t st = S();
	ck_assert_int_eq(st.num_sync_all_streams, 1);
	ck_assert_int_eq(st.num_device_alloc, 1);
	ck_assert_int_eq(st.num_device_free, 1);
	expect_event(1, MSIM_SEG_FREE, 20 * MB);
	teardown();
}
END_TEST

/* §14.2 small_pack. */
START_TEST(test_small_pack)
{
	setup("", 0);
	msim_addr_t a = A(0, MB);
	ck_assert_uint_eq(A(1, MB) - a, MB);
	A(2, 512);
	expect(&(probe_t){2097664, 4194304, 2097664, 2097664, 2096640, 1, 2,
			  3}, "three");
	/* The second 2 MiB segment sits 74 MiB above the first (driver). */
	ck_assert_uint_eq(addr[2] - a, 77594624);
	F(0);
	expect(&(probe_t){1049088, 4194304, 1049088, 1049088, 3145216, 2, 2,
			  2}, "freed0");
	ck_assert_uint_eq(A(3, 716800), a); /* best fit: the 1 MiB hole */
	expect(&(probe_t){1765888, 4194304, 1765888, 1765888, 2428416, 2, 2,
			  3}, "q700k");
	teardown();
}
END_TEST

/* §14.2 max_split, with and without max_non_split_rounding_mb. */
static void
max_split_case(const char *conf, int g_reuses)
{
	setup(conf, 0);
	msim_addr_t a = A(0, 50 * MB);
	expect(&(probe_t){52428800, 52428800, 52428800, 52428800, 0, 0, 1, 1},
	       "a50");
	ck_assert_int_eq(S().oversize_allocations.current, 1);
	ck_assert_int_eq(S().oversize_segments.current, 1);
	F(0);
	ck_assert_int_eq(S().oversize_allocations.current, 0);
	ck_assert_uint_eq(A(1, 45 * MB), a);
	expect(&(probe_t){52428800, 52428800, 52428800, 47185920, 0, 0, 1, 1},
	       "b45");
	F(1);
	ck_assert_uint_eq(A(2, 42 * MB), a);
	F(2);
	ck_assert_uint_ne(A(3, 30 * MB), a);
	expect(&(probe_t){31457280, 83886080, 31457280, 31457280, 0, 0, 2, 1},
	       "c30");
	A(4, 29 * MB + 1);
	expect(&(probe_t){62914560, 115343360, 62914560, 61865985, 0, 0, 3, 2},
	       "d29");
	F(3);
	F(4);
	msim_addr_t e = A(5, 71 * MB);
	ck_assert_uint_ne(e, a);
	expect(&(probe_t){75497472, 190840832, 75497472, 74448896, 0, 0, 4, 1},
	       "e71");
	F(5);
	ck_assert_uint_eq(A(6, 69 * MB), e);
	F(6);
	msim_addr_t g = A(7, 51 * MB);
	if (g_reuses) {
		ck_assert_uint_eq(g, e);
		expect(&(probe_t){75497472, 190840832, 75497472, 53477376, 0, 0,
				  4, 1}, "g51");
	} else {
		ck_assert_uint_ne(g, e);
		expect(&(probe_t){54525952, 245366784, 54525952, 53477376, 0, 0,
				  5, 1}, "g51");
		ck_assert_int_eq(S().oversize_segments.current, 3);
	}
	teardown();
}

START_TEST(test_max_split)
{
	max_split_case("max_split_size_mb:40", 0);
	max_split_case("max_split_size_mb:40,max_non_split_rounding_mb:40", 1);
}
END_TEST

/* §14.2 release_avail: cap +100 MB, max_split_size_mb:40. */
START_TEST(test_release_available)
{
	setup("max_split_size_mb:40", 100 * MB);
	A(0, 60 * MB);
	F(0);
	A(1, 30 * MB);
	expect(&(probe_t){31457280, 94371840, 31457280, 31457280, 0, 0, 2, 1},
	       "c30");
	A(2, 30 * MB);
	expect(&(probe_t){62914560, 62914560, 62914560, 62914560, 0, 0, 2, 2},
	       "d30");
	msim_stats_t st = S();
	ck_assert_int_eq(st.num_alloc_retries, 0);
	ck_assert_int_eq(st.num_device_free, 1);
	ck_assert_int_eq(st.num_device_alloc, 3);
	expect_event(2, MSIM_SEG_FREE, 60 * MB);
	expect_event(3, MSIM_SEG_ALLOC, 30 * MB);
	ck_assert_int_eq(try_alloc(3, 200 * MB), MSIM_EDEVOOM);
	st = S();
	ck_assert_int_eq(st.num_alloc_retries, 1);
	ck_assert_int_eq(st.num_ooms, 1);
	ck_assert_int_eq(st.num_sync_all_streams, 1);
	expect_event(4, MSIM_SEG_OOM, 209715200);
	teardown();
}
END_TEST

/* §3.5, §14.2 oom_simple: cap +50 MB; the split 30 MB segment stays. */
START_TEST(test_oom_keeps_split_segment)
{
	setup("", 50 * MB);
	A(0, 30 * MB);
	F(0);
	A(1, 4 * MB);
	expect(&(probe_t){4194304, 31457280, 4194304, 4194304, 27262976, 1, 1,
			  1}, "b4");
	ck_assert_int_eq(try_alloc(2, 40 * MB), MSIM_EDEVOOM);
	expect(&(probe_t){4194304, 31457280, 4194304, 4194304, 27262976, 1, 1,
			  1}, "oom40");
	msim_stats_t st = S();
	ck_assert_int_eq(st.num_alloc_retries, 1);
	ck_assert_int_eq(st.num_ooms, 1);
	ck_assert_int_eq(st.num_sync_all_streams, 1);
	ck_assert_uint_eq(nevents(), 2);
	expect_event(1, MSIM_SEG_OOM, 41943040);
	teardown();
}
END_TEST

/* §5 gc: threshold 0.5 under a cap of 120 MB frees exactly the 40 MB
 * segment (age 6 >= average 3.5), not the 30 MB one (age 1). */
START_TEST(test_garbage_collection)
{
	setup("garbage_collection_threshold:0.5", 120 * MB);
	A(0, 2 * MB);
	A(1, 40 * MB);
	A(2, 30 * MB);
	F(1);
	for (int i = 0; i < 5; i++) {
		A(3, 2 * MB);
		F(3);
	}
	F(2);
	expect(&(probe_t){2097152, 94371840, 2097152, 2097152, 18874368, 1, 3,
			  1}, "before");
	A(4, 50 * MB);
	expect(&(probe_t){54525952, 104857600, 54525952, 54525952, 18874368,
			  1, 3, 2}, "c50");
	ck_assert_uint_eq(nevents(), 5);
	expect_event(3, MSIM_SEG_FREE, 40 * MB);
	expect_event(4, MSIM_SEG_ALLOC, 50 * MB);
	ck_assert_int_eq(S().num_device_free, 1);
	teardown();
}
END_TEST

/* §14.2 gc_frac1 / gc_nofrac / gc_frac999: GC needs a cap below 1. */
START_TEST(test_gc_needs_cap)
{
	static const double fraction[] = {0.0, 1.0, 0.999};
	for (int i = 0; i < 3; i++) {
		const msim_policy_ops_t *ops = msim_policy_find("pytorch");
		msim_params_t pv;
		char why[128];
		dev = msim_device_new(&(msim_device_config_t){.log_events = 1});
		if (fraction[i] > 0)
			msim_device_set_fraction(dev, fraction[i]);
		ck_assert_int_eq(msim_params_init(&pv, ops->params), 0);
		ck_assert_int_eq(msim_params_parse(
			&pv, "garbage_collection_threshold:0.01"), 0);
		ck_assert_int_eq(msim_policy_new(ops, dev, &pv, &pol, why,
						 sizeof(why)), 0);
		msim_params_clear(&pv);
		A(0, 4096 * MB);
		F(0);
		A(1, 6144 * MB);
		int gc = fraction[i] > 0 && fraction[i] < 1;
		ck_assert_int_eq(S().num_device_free, gc ? 1 : 0);
		ck_assert_int_eq(CUR(S(), reserved_bytes),
				 gc ? 6144 * MB : 10240 * MB);
		teardown();
	}
}
END_TEST

/* §1.2: roundup_power2_divisions, single value and list forms. */
START_TEST(test_roundup_power2_divisions)
{
	static const struct {
		const char *conf;
		uint64_t req, block;
	} c[] = {
		{"roundup_power2_divisions:4", 1200, 1536},
		{"roundup_power2_divisions:4", 1500, 1536},
		{"roundup_power2_divisions:4", 2049, 2560},
		{"roundup_power2_divisions:4", 3000, 3072},
		{"roundup_power2_divisions:4", 5000, 5120},
		{"roundup_power2_divisions:4", 1048577, 1310720},
		{"roundup_power2_divisions:4", 1300000, 1310720},
		{"roundup_power2_divisions:4", 3145733, 3670016},
		{"roundup_power2_divisions:4", 84 * MB, 96 * MB},
		{"roundup_power2_divisions:4", 600 * MB, 640 * MB},
		{"roundup_power2_divisions:4", 1100 * MB, 1280 * MB},
		{"roundup_power2_divisions:[1:2,2:4,>:8]", 2049, 3072},
		{"roundup_power2_divisions:[1:2,2:4,>:8]", 5000, 6144},
		{"roundup_power2_divisions:[1:2,2:4,>:8]", 1048577, 1572864},
		{"roundup_power2_divisions:[1:2,2:4,>:8]", 3145733, 3670016},
		{"roundup_power2_divisions:[1:2,2:4,>:8]", 84 * MB, 88 * MB},
		{"roundup_power2_divisions:[1:2,2:4,>:8]", 600 * MB, 640 * MB},
		{"roundup_power2_divisions:[1:2,2:4,>:8]", 1100 * MB, 1152 * MB},
		{"roundup_power2_divisions:[256:1,512:2,>:4]", 600 * MB, 768 * MB},
		{"roundup_power2_divisions:[256:1,512:2,>:4]", 1100 * MB,
		 1280 * MB},
		{"roundup_power2_divisions:[256:1,512:2,>:4]", 200 * MB + 1,
		 200 * MB + 512},
		/* test_allocator_settings (§14.1) */
		{"roundup_power2_divisions:[64:8,128:2,256:2,512:2,1024:1,>:1]",
		 84 * MB, 88 * MB},
		{"roundup_power2_divisions:[64:8,128:2,256:2,512:2,1024:1,>:1]",
		 400 * MB, 512 * MB},
		{"garbage_collection_threshold:0.5,max_split_size_mb:40",
		 84 * MB, 84 * MB},
		{"release_lock_on_cudamalloc:True", 84 * MB, 84 * MB},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		setup(c[i].conf, 0);
		A(0, c[i].req);
		ck_assert_msg(CUR(S(), allocated_bytes) == (int64_t)c[i].block,
			      "%s: %llu -> %lld", c[i].conf,
			      (unsigned long long)c[i].req,
			      (long long)CUR(S(), allocated_bytes));
		ck_assert_int_eq(CUR(S(), requested_bytes), c[i].req);
		teardown();
	}
}
END_TEST

/* §14.2 empty_split: a live block keeps its segment through
 * empty_cache. */
START_TEST(test_empty_cache_keeps_split_segment)
{
	setup("", 0);
	A(0, 2 * MB);
	A(1, 2 * MB);
	F(0);
	expect(&(probe_t){2097152, 20971520, 2097152, 2097152, 18874368, 2, 1,
			  1}, "one_live");
	msim_policy_empty_cache(pol);
	expect(&(probe_t){2097152, 20971520, 2097152, 2097152, 18874368, 2, 1,
			  1}, "after_empty");
	F(1);
	msim_policy_empty_cache(pol);
	expect(&(probe_t){0, 0, 0, 0, 0, 0, 0, 0}, "after_empty2");
	msim_stats_t st = S();
	ck_assert_int_eq(st.num_sync_all_streams, 2);
	ck_assert_int_eq(st.num_device_free, 1);
	teardown();
}
END_TEST

/* §14.2 tie: equal-size free blocks go to the lowest address. */
START_TEST(test_tie_lowest_address)
{
	setup("", 0);
	msim_addr_t x = A(0, 30 * MB), y = A(1, 30 * MB);
	ck_assert_uint_gt(x, y); /* successive segments descend */
	F(0);
	msim_policy_empty_cache(pol);
	msim_addr_t z = A(2, 30 * MB);
	ck_assert_uint_lt(z, y); /* x's range, one 32 MiB chunk, is skipped */
	F(1);
	F(2);
	ck_assert_uint_eq(A(3, 30 * MB), z);
	teardown();
}
END_TEST

/* §14.1 test_memory_allocation, test_memory_stats,
 * test_out_of_memory_retry: memory_allocated, freed counters, OOM retry. */
START_TEST(test_torch_memory_stats_cases)
{
	setup("", 0);
	A(0, 1);
	ck_assert_int_eq(CUR(S(), allocated_bytes), 512);
	F(0);
	ck_assert_int_eq(CUR(S(), allocated_bytes), 0);
	A(1, 1024);
	ck_assert_int_eq(S().active_bytes[0].freed, 512);
	F(1);
	ck_assert_int_eq(S().active_bytes[0].freed, 1536);
	teardown();

	/* 50 % of the device, twice: the second OOMs under the device's
	 * capacity; after the first is freed, the same allocation reuses it. */
	setup("", 0);
	uint64_t half = MSIM_H200_BYTES / 2;
	msim_addr_t a = A(0, half);
	ck_assert_int_eq(try_alloc(1, half), MSIM_EDEVOOM);
	F(0);
	ck_assert_uint_eq(A(2, half), a);
	teardown();
}
END_TEST

/* §14.1 test_allocator_settings: bad settings are refused with a reason. */
START_TEST(test_bad_settings_refused)
{
	static const char *const bad[] = {
		"foo:1,bar:2", "garbage_collection_threshold:1.2",
		"release_lock_on_cudamalloc:none",
		"pinned_use_cuda_host_register:none",
		"pinned_num_register_threads:none",
		"pinned_num_register_threads:1024",
		"roundup_power2_divisions:3", "roundup_power2_divisions:[3:4]",
		"max_split_size_mb:abc", "backend:cudaMallocAsync",
		"garbage_collection_threshold:0",
	};
	const msim_policy_ops_t *ops = msim_policy_find("pytorch");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msim_params_t pv;
		ck_assert_int_eq(msim_params_init(&pv, ops->params), 0);
		ck_assert_msg(msim_params_parse(&pv, bad[i]) == MSIM_EINVAL,
			      "%s accepted", bad[i]);
		ck_assert_msg(strlen(pv.errmsg) > 0, "%s: no reason", bad[i]);
		msim_params_clear(&pv);
	}
	/* max_split_size_mb below large_segment_size_mb: refused at create. */
	msim_params_t pv;
	char why[256];
	ck_assert_int_eq(msim_params_init(&pv, ops->params), 0);
	ck_assert_int_eq(msim_params_parse(&pv, "max_split_size_mb:2"), 0);
	dev = msim_device_new(NULL);
	ck_assert_int_eq(msim_policy_new(ops, dev, &pv, &pol, why, sizeof(why)),
			 MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "max_split_size_mb"));
	msim_params_clear(&pv);
	msim_device_destroy(dev);
	dev = NULL;
}
END_TEST

/* Oversize rule details: a small request never takes an oversize block. */
START_TEST(test_oversize_block_refused_for_small_request)
{
	setup("max_split_size_mb:20", 0);
	msim_addr_t big = A(0, 40 * MB);
	F(0);
	ck_assert_uint_ne(A(1, 8 * MB), big); /* 8 MiB < M: new segment */
	ck_assert_int_eq(CUR(S(), reserved_bytes), 60 * MB);
	ck_assert_uint_eq(A(2, 30 * MB), big); /* 40 < 30 + 20 */
	teardown();
}
END_TEST

static int
alloc_on(uint32_t id, uint64_t size, msim_stream_t stream)
{
	msim_req_t r = {.kind = MSIM_REQ_ALLOC, .id = id, .size = size,
			.stream = stream};
	return msim_policy_alloc(pol, &r, &addr[id]);
}

static void
free_requested(uint32_t id)
{
	msim_req_t r = {.kind = MSIM_REQ_FREE_REQUESTED, .id = id};
	ck_assert_int_eq(msim_policy_free_requested(pol, &r), 0);
}

/* §7.2, probe `expandable` (§14.2): maps, unmaps and addresses. */
START_TEST(test_expandable_sequence)
{
	setup("expandable_segments:True", 0);
	msim_addr_t x = A(0, 2 * MB);
	ck_assert_uint_eq(x, UINT64_C(12918456320)); /* 0x302000000 */
	expect_event(0, MSIM_SEG_MAP, 20 * MB);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 20 * MB);
	ck_assert_int_eq(CUR(S(), segment), 0);
	/* The 18 MiB tail is too small: map the next page, merge. */
	ck_assert_uint_eq(A(1, 30 * MB) - x, 2 * MB);
	expect_event(1, MSIM_SEG_MAP, 20 * MB);
	ck_assert_uint_eq(msim_device_events(dev, &(size_t){0})[1].addr,
			  UINT64_C(12939427840));
	ck_assert_int_eq(CUR(S(), reserved_bytes), 40 * MB);
	A(2, 1000); /* a small expandable segment, one 2 MiB page */
	expect_event(2, MSIM_SEG_MAP, 2 * MB);
	ck_assert_uint_eq(addr[2], UINT64_C(181831467008));
	ck_assert_int_eq(CUR(S(), reserved_bytes), 42 * MB);
	F(1);
	msim_policy_empty_cache(pol); /* x live: page 2 goes, page 1 stays */
	expect_event(3, MSIM_SEG_UNMAP, 20 * MB);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 22 * MB);
	F(0);
	F(2);
	msim_policy_empty_cache(pol);
	expect_event(4, MSIM_SEG_UNMAP, 20 * MB);
	expect_event(5, MSIM_SEG_UNMAP, 2 * MB);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 0);
	/* Both reservations were released: the next one reuses the range. */
	ck_assert_uint_eq(A(3, 50 * MB), UINT64_C(12918456320));
	expect_event(6, MSIM_SEG_MAP, 60 * MB);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 60 * MB);
	msim_stats_t st = S();
	ck_assert_int_eq(st.num_device_alloc, 4);
	ck_assert_int_eq(st.num_device_free, 3);
	ck_assert_int_eq(st.inactive_split[0].peak, 0);
	ck_assert_int_eq(st.segment[0].peak, 0);
	teardown();
}
END_TEST

/* §4.3 record_stream: allocated bytes drop at free_requested, active
 * and requested bytes at free_completed; a pending block is not merged. */
START_TEST(test_deferred_free)
{
	setup("", 0);
	A(0, MB);
	free_requested(0);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, allocated_bytes), 0);
	ck_assert_int_eq(CUR(st, allocation), 0);
	ck_assert_int_eq(CUR(st, active_bytes), MB);
	ck_assert_int_eq(CUR(st, requested_bytes), MB);
	ck_assert_uint_ne(A(1, MB), addr[0]); /* not reusable yet */
	F(0);
	ck_assert_int_eq(CUR(S(), active_bytes), MB);
	ck_assert_uint_eq(A(2, MB), addr[0]);
	teardown();

	/* Large pool: x | y | rest in one 20 MiB segment.  y pending while x
	 * is freed: x must not absorb y. */
	setup("", 0);
	A(0, 4 * MB);
	A(1, 4 * MB);
	free_requested(1);
	F(0);
	st = S();
	ck_assert_int_eq(CUR(st, inactive_split), 2); /* x, rest: apart */
	ck_assert_int_eq(CUR(st, inactive_split_bytes), 16 * MB);
	F(1); /* now all three merge into one free segment */
	st = S();
	ck_assert_int_eq(CUR(st, inactive_split), 0);
	ck_assert_int_eq(CUR(st, inactive_split_bytes), 0);
	msim_policy_empty_cache(pol);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 0);
	teardown();

	/* A pending block and a live one: active (allocated plus pending)
	 * peaks above allocated; each is freed at its own row. */
	setup("", 0);
	A(0, 4 * MB);
	free_requested(0);
	A(1, 4 * MB);
	st = S();
	ck_assert_int_eq(CUR(st, active_bytes), 8 * MB);
	ck_assert_int_eq(st.active_bytes[MSIM_POOL_LARGE].current, 8 * MB);
	ck_assert_int_eq(st.active_bytes[0].freed, 0);
	ck_assert_int_eq(st.allocated_bytes[0].freed, 4 * MB);
	F(0);
	st = S();
	ck_assert_int_eq(CUR(st, active), 1);
	ck_assert_int_eq(st.active_bytes[MSIM_POOL_LARGE].freed, 4 * MB);
	F(1);
	st = S();
	ck_assert_int_eq(st.allocated_bytes[0].peak, 4 * MB);
	ck_assert_int_eq(st.allocation[0].peak, 1);
	ck_assert_int_eq(st.active_bytes[0].peak, 8 * MB);
	ck_assert_int_eq(st.active_bytes[MSIM_POOL_LARGE].peak, 8 * MB);
	ck_assert_int_eq(st.active_bytes[MSIM_POOL_SMALL].peak, 0);
	ck_assert_int_eq(st.active[0].peak, 2);
	ck_assert_int_eq(st.active[0].freed, 2);
	ck_assert_int_eq(st.active_bytes[0].freed, 8 * MB);
	ck_assert_int_eq(CUR(st, active_bytes), 0);
	teardown();
}
END_TEST

/* Streams: blocks never cross streams; release walks streams in handle
 * order, large pool before small. */
START_TEST(test_streams)
{
	setup("", 0);
	ck_assert_int_eq(alloc_on(0, 4 * MB, 7), 0);
	F(0);
	ck_assert_int_eq(alloc_on(1, 4 * MB, 3), 0);
	ck_assert_uint_ne(addr[1], addr[0]); /* not stream 7's block */
	ck_assert_int_eq(CUR(S(), segment), 2);
	ck_assert_int_eq(alloc_on(2, 4 * MB, 7), 0);
	ck_assert_uint_eq(addr[2], addr[0]);
	ck_assert_int_eq(alloc_on(3, 1000, 5), 0);
	F(1);
	F(2);
	F(3);
	size_t n0 = nevents();
	msim_policy_empty_cache(pol);
	size_t n;
	const msim_seg_event_t *ev = msim_device_events(dev, &n);
	ck_assert_uint_eq(n - n0, 3);
	ck_assert_uint_eq(ev[n0].addr, addr[1]);     /* large, stream 3 */
	ck_assert_uint_eq(ev[n0 + 1].addr, addr[0]); /* large, stream 7 */
	ck_assert_uint_eq(ev[n0 + 2].size, 2 * MB);  /* small, stream 5 */
	teardown();
}
END_TEST

/* Expandable with max_split_size and GC under a cap (§7.4, §11.2):
 * an already mapped block the lookup refused as oversize serves the
 * malloc without a map; release_available and GC skip expandable blocks;
 * the OOM retry unmaps whole free pages. */
START_TEST(test_expandable_with_options)
{
	setup("expandable_segments:True,max_split_size_mb:40,"
	      "garbage_collection_threshold:0.5", 200 * MB);
	A(0, 50 * MB); /* 3 pages: 60 MiB, 10 MiB free tail */
	F(0);
	A(1, 10 * MB);
	ck_assert_uint_eq(addr[1], addr[0]);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 60 * MB);
	ck_assert_int_eq(S().num_device_alloc, 1);
	ck_assert_int_eq(try_alloc(2, 190 * MB), MSIM_EDEVOOM);
	msim_stats_t st = S();
	ck_assert_int_eq(st.num_ooms, 1);
	ck_assert_int_eq(st.num_alloc_retries, 1);
	ck_assert_int_eq(st.num_device_free, 1);
	expect_event(1, MSIM_SEG_UNMAP, 40 * MB); /* pages 2 and 3 */
	ck_assert_int_eq(CUR(st, reserved_bytes), 20 * MB);
	teardown();
}
END_TEST

static void
largest_free_block(void *ctx, const msim_block_t *b)
{
	uint64_t *m = ctx;
	if (b->state == MSIM_BLOCK_FREE && b->size > *m)
		*m = b->size;
}

/* free_info's largest free block (kept between samples, forgotten when
 * that block leaves its free set) is the largest free block the policy
 * lists, after each step of a mixed workload: splits, merges, blocks of
 * both pools, max_split_size_mb's oversize blocks, a cap's garbage
 * collection and empty_cache. */
START_TEST(test_largest_free_block)
{
	const char *confs[] = {"", "max_split_size_mb:64,"
			       "garbage_collection_threshold:0.6"};
	for (int c = 0; c < 2; c++) {
		setup(confs[c], c ? 3ULL << 30 : 0);
		bool live[64] = {false};
		uint64_t x = 0x9e3779b97f4a7c15u;
		for (int step = 0; step < 4000; step++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			uint32_t id = (uint32_t)(x % 64);
			if (live[id]) {
				F(id);
				live[id] = false;
			} else {
				/* 512 B to 1 MiB, or up to 256 MiB */
				uint64_t size = x >> 40 & 1
					? 512 + (x >> 8) % (1u << 20)
					: (1u << 20) + (x >> 8) % (256u << 20);
				live[id] = try_alloc(id, size) == 0;
			}
			if (step % 500 == 499)
				msim_policy_empty_cache(pol);
			uint64_t largest, total, want = 0;
			msim_policy_free_info(pol, &largest, &total);
			ck_assert(msim_policy_blocks(pol, largest_free_block,
						     &want));
			ck_assert_msg(largest == want,
				      "conf %d step %d: largest free %llu, "
				      "listed %llu", c, step,
				      (unsigned long long)largest,
				      (unsigned long long)want);
		}
		teardown();
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("policy_pytorch");
	TCase *tc = tcase_create("conformance");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_sizes_round_and_segment);
	tcase_add_test(tc, test_large_split);
	tcase_add_test(tc, test_small_pack);
	tcase_add_test(tc, test_max_split);
	tcase_add_test(tc, test_release_available);
	tcase_add_test(tc, test_oom_keeps_split_segment);
	tcase_add_test(tc, test_garbage_collection);
	tcase_add_test(tc, test_gc_needs_cap);
	tcase_add_test(tc, test_roundup_power2_divisions);
	tcase_add_test(tc, test_empty_cache_keeps_split_segment);
	tcase_add_test(tc, test_tie_lowest_address);
	tcase_add_test(tc, test_torch_memory_stats_cases);
	tcase_add_test(tc, test_bad_settings_refused);
	tcase_add_test(tc, test_oversize_block_refused_for_small_request);
	tcase_add_test(tc, test_expandable_sequence);
	tcase_add_test(tc, test_deferred_free);
	tcase_add_test(tc, test_streams);
	tcase_add_test(tc, test_expandable_with_options);
	tcase_add_test(tc, test_largest_free_block);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
