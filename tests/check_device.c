/*
 * The device model: counting, capacity and cap, hints, and the driver
 * placement model against addresses the CUDA 13 driver returned on an H200
 * (docs/pytorch-allocator.md §13; tests/data/cuda_latency_h200.csv and
 * the probe runs).
 */
#include <config.h>

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "sim/device.h"
#include "sim/error.h"
#include "sim/timemodel.h"

#define MB (UINT64_C(1) << 20)

static msim_addr_t
M(msim_device_t *dev, uint64_t size)
{
	msim_addr_t a;
	ck_assert_int_eq(msim_device_malloc(dev, size, MSIM_POOL_LARGE, &a), 0);
	return a;
}

/* Six successive 20 MiB cudaMallocs: the first lands in the context's
 * hole 520 MiB above the second, then 32 MiB steps down. */
START_TEST(test_placement_six_20mb)
{
	msim_device_t *dev = msim_device_new(NULL);
	msim_addr_t a[6];
	for (int i = 0; i < 6; i++)
		a[i] = M(dev, 20 * MB);
	ck_assert_uint_eq(a[0] - a[1], 520 * MB);
	for (int i = 2; i < 6; i++)
		ck_assert_uint_eq(a[i - 1] - a[i], 32 * MB);
	msim_device_destroy(dev);
}
END_TEST

/* Probe max_split: 50, 30, 30, 72, 52 MiB segments (nothing freed). */
START_TEST(test_placement_descending_chunks)
{
	msim_device_t *dev = msim_device_new(NULL);
	static const uint64_t sz[] = {50, 30, 30, 72, 52};
	static const int64_t rel[] = {0, -33554432, -67108864, -167772160,
				      -234881024};
	msim_addr_t base = 0;
	for (int i = 0; i < 5; i++) {
		msim_addr_t a = M(dev, sz[i] * MB);
		if (i == 0)
			base = a;
		ck_assert_int_eq((int64_t)(a - base), rel[i]);
	}
	msim_device_destroy(dev);
}
END_TEST

/* Probe gc: 20, 40, 30 MiB, free the 40 MiB one, then 50 MiB: the freed
 * 64 MiB chunk fits the 64 MiB chunk exactly and is skipped. */
START_TEST(test_placement_exact_gap_skipped)
{
	msim_device_t *dev = msim_device_new(NULL);
	msim_addr_t a20 = M(dev, 20 * MB), a40 = M(dev, 40 * MB);
	msim_addr_t a30 = M(dev, 30 * MB);
	ck_assert_uint_eq(a20 - a40, 578813952);
	ck_assert_uint_eq(a40 - a30, 33554432);
	msim_device_free(dev, a40, 40 * MB, MSIM_POOL_LARGE);
	ck_assert_uint_eq(a30 - M(dev, 50 * MB), 67108864);
	msim_device_destroy(dev);
}
END_TEST

/* Probe release_avail: after the 60 MiB segment is freed, a 30 MiB one
 * goes to the top of its freed 64 MiB range. */
START_TEST(test_placement_freed_chunk_reused)
{
	msim_device_t *dev = msim_device_new(NULL);
	msim_addr_t a60 = M(dev, 60 * MB), a30 = M(dev, 30 * MB);
	ck_assert_uint_eq(a60 - a30, 33554432);
	msim_device_free(dev, a60, 60 * MB, MSIM_POOL_LARGE);
	ck_assert_uint_eq(M(dev, 30 * MB) - a60, 33554432);
	msim_device_destroy(dev);
}
END_TEST

/* Gaps that releases open and placements narrow: a new chunk goes to the
 * top of the highest gap strictly larger, else below the lowest chunk. */
START_TEST(test_placement_gaps_open_and_narrow)
{
	msim_device_t *dev = msim_device_new(NULL);
	M(dev, 20 * MB); /* the context's hole */
	msim_addr_t a[5];
	for (int i = 1; i <= 4; i++) /* 64 MiB chunks, 14 MiB holes */
		a[i] = M(dev, 50 * MB);
	ck_assert_uint_eq(a[1] - a[4], 3 * 64 * MB);
	msim_device_free(dev, a[2], 50 * MB, MSIM_POOL_LARGE);
	msim_addr_t b = M(dev, 60 * MB); /* the 64 MiB gap: not larger */
	ck_assert_uint_eq(a[4] - b, 64 * MB);
	msim_device_free(dev, a[3], 50 * MB, MSIM_POOL_LARGE);
	msim_addr_t c = M(dev, 100 * MB); /* 128 MiB gap: not larger */
	ck_assert_uint_eq(b - c, 128 * MB);
	ck_assert_uint_eq(M(dev, 60 * MB), a[2]); /* the gap's top */
	ck_assert_uint_eq(c - M(dev, 60 * MB), 64 * MB); /* 64 left */
	msim_device_destroy(dev);
}
END_TEST

/* Holes: small segments fill a chunk's remainder, newest chunk first. */
START_TEST(test_placement_holes)
{
	msim_device_t *dev = msim_device_new(NULL);
	msim_addr_t big = M(dev, 148 * MB); /* 160 MiB chunk, 12 MiB hole */
	msim_addr_t a;
	ck_assert_int_eq(msim_device_malloc(dev, 2 * MB, MSIM_POOL_SMALL, &a),
			 0);
	ck_assert_uint_eq(a - big, 148 * MB);
	msim_addr_t c = M(dev, 20 * MB); /* context hole at +488 MiB */
	ck_assert_uint_eq(c - big, (160 + 488) * MB);
	msim_device_destroy(dev);
}
END_TEST

/* A JAX process (docs/bfc.md §2): the regions gpt2_fp32 and gpt2_varlen
 * got from JAX 0.11.2's growing BFC on the H200 (tests/data/validate/jax),
 * each new chunk just above the last, from 0x302000000 up. */
static msim_device_t *
jax_device(void)
{
	msim_device_t *dev = msim_device_new(NULL);
	ck_assert_ptr_nonnull(dev);
	ck_assert_int_eq(msim_device_set_layout(dev, MSIM_LAYOUT_JAX), 0);
	return dev;
}

START_TEST(test_placement_jax_regions)
{
	msim_device_t *dev = jax_device();
	static const uint64_t mib[] = {256, 256, 512, 1024, 2048, 4096, 8192};
	static const uint64_t at[] = {0x302000000, 0x312000000, 0x322000000,
				      0x342000000, 0x382000000, 0x402000000,
				      0x502000000};
	for (int i = 0; i < 7; i++)
		ck_assert_uint_eq(M(dev, mib[i] * MB), at[i]);
	msim_device_destroy(dev);
}
END_TEST

/* The first 16 MiB go into the hole on top; a chunk's tail is a hole that
 * the newest chunk offers first; a freed chunk's range is the lowest gap. */
START_TEST(test_placement_jax_holes)
{
	msim_device_t *dev = jax_device();
	msim_addr_t a2 = M(dev, 2 * MB), a4 = M(dev, 4 * MB);
	msim_addr_t a8 = M(dev, 8 * MB);
	ck_assert_uint_eq(a4, a2 + 2 * MB);
	ck_assert_uint_eq(a8, a2 + 6 * MB);
	ck_assert_uint_gt(a2, UINT64_C(0x302000000));
	ck_assert_uint_eq(M(dev, 16 * MB), 0x302000000); /* 2 MiB left */
	ck_assert_uint_eq(M(dev, 2 * MB), 0x303000000);  /* newest hole */
	ck_assert_uint_eq(M(dev, 2 * MB), 0x303200000);
	ck_assert_uint_eq(M(dev, 32 * MB), 0x304000000);
	ck_assert_uint_eq(M(dev, 64 * MB), 0x306000000);
	msim_device_free(dev, 0x304000000, 32 * MB, MSIM_POOL_LARGE);
	ck_assert_uint_eq(M(dev, 20 * MB), 0x304000000);
	ck_assert_uint_eq(M(dev, 40 * MB), 0x30a000000);
	msim_device_destroy(dev);
}
END_TEST

/* Only the default model, and only before its first segment. */
START_TEST(test_layout_refused)
{
	msim_device_t *dev = msim_device_new(NULL);
	ck_assert_int_eq(msim_device_set_layout(dev, MSIM_LAYOUT_PYTORCH), 0);
	M(dev, 2 * MB);
	ck_assert_int_eq(msim_device_set_layout(dev, MSIM_LAYOUT_JAX),
			 MSIM_ENOTSUP);
	msim_device_destroy(dev);
	msim_device_config_t cfg = {.use_hints = 1};
	dev = msim_device_new(&cfg);
	ck_assert_int_eq(msim_device_hint(dev, 0x7000000000), 0);
	ck_assert_int_eq(msim_device_set_layout(dev, MSIM_LAYOUT_JAX), 0);
	ck_assert_uint_eq(M(dev, 2 * MB), 0x7000000000); /* hints first */
	ck_assert_uint_eq(M(dev, 64 * MB), 0x302000000);
	msim_device_destroy(dev);
}
END_TEST

START_TEST(test_counting_and_cap)
{
	msim_device_t *dev = msim_device_new(NULL);
	ck_assert_int_eq(msim_device_set_fraction(dev, 2.0), MSIM_EINVAL);
	ck_assert_int_eq(msim_device_set_fraction(dev, 1.0), 0);
	ck_assert_uint_eq(msim_device_cap(dev), 0); /* 1.0 = no cap */
	/* set_per_process_memory_fraction(f): f x total, truncated. */
	ck_assert_int_eq(msim_device_set_fraction(dev, 0.5), 0);
	ck_assert_uint_eq(msim_device_cap(dev), MSIM_H200_BYTES / 2);
	ck_assert_int_eq(msim_device_set_fraction(
		dev, (double)(100 * MB) / (double)MSIM_H200_BYTES), 0);
	uint64_t cap = msim_device_cap(dev);
	ck_assert(cap == 100 * MB || cap == 100 * MB - 1);
	msim_addr_t a, b;
	ck_assert_int_eq(msim_device_malloc(dev, 60 * MB, MSIM_POOL_LARGE, &a),
			 0);
	ck_assert_int_eq(msim_device_malloc(dev, 40 * MB, MSIM_POOL_SMALL, &b),
			 cap == 100 * MB ? 0 : MSIM_EDEVOOM);
	ck_assert_int_eq(msim_device_malloc(dev, 60 * MB, MSIM_POOL_LARGE, &b),
			 MSIM_EDEVOOM);
	msim_stats_t st = {0};
	msim_device_stats(dev, &st);
	ck_assert_int_eq(st.reserved_bytes[MSIM_POOL_LARGE].current, 60 * MB);
	ck_assert_int_eq(st.segment[MSIM_POOL_ALL].current,
			 cap == 100 * MB ? 2 : 1);
	msim_device_free(dev, a, 60 * MB, MSIM_POOL_LARGE);
	msim_device_stats(dev, &st);
	ck_assert_int_eq(st.reserved_bytes[MSIM_POOL_LARGE].current, 0);
	ck_assert_int_eq(st.reserved_bytes[MSIM_POOL_LARGE].peak, 60 * MB);
	ck_assert_int_eq(st.segment[MSIM_POOL_LARGE].freed, 1);
	ck_assert_int_eq(st.num_device_free, 1);
	msim_device_destroy(dev);

	/* Capacity: a cudaMalloc that does not fit fails, counts nothing. */
	dev = msim_device_new(&(msim_device_config_t){.capacity = 64 * MB});
	ck_assert_int_eq(msim_device_malloc(dev, 66 * MB, MSIM_POOL_LARGE, &a),
			 MSIM_EDEVOOM);
	msim_device_stats(dev, &st);
	ck_assert_int_eq(st.num_device_alloc, 0);
	msim_device_destroy(dev);
	msim_device_destroy(NULL);
}
END_TEST

START_TEST(test_hints_and_log)
{
	msim_device_t *dev = msim_device_new(
		&(msim_device_config_t){.use_hints = 1, .log_events = 1});
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(msim_device_hint(dev, 0x1000000 * (i + 1)), 0);
	msim_device_set_request(dev, 7);
	for (int i = 0; i < 100; i++)
		ck_assert_uint_eq(M(dev, 2 * MB), 0x1000000 * (uint64_t)(i + 1));
	/* Hints exhausted: the model places the next one. */
	msim_addr_t a = M(dev, 2 * MB);
	ck_assert_uint_ne(a, 0);
	msim_device_log_oom(dev, 512);
	size_t n;
	const msim_seg_event_t *ev = msim_device_events(dev, &n);
	ck_assert_uint_eq(n, 102);
	ck_assert_uint_eq(ev[0].request, 7);
	ck_assert_int_eq(ev[101].action, MSIM_SEG_OOM);
	ck_assert_int_eq(msim_seg_action_parse("segment_free"), MSIM_SEG_FREE);
	ck_assert_int_eq(msim_seg_action_parse("bogus"), -1);
	msim_device_destroy(dev);
}
END_TEST

/* Hints from a trace are input: unaligned or wrapping ones are refused. */
START_TEST(test_hints_refused)
{
	msim_device_t *dev = msim_device_new(
		&(msim_device_config_t){.use_hints = 1});
	ck_assert_int_eq(msim_device_hint(dev, 0x1000010), MSIM_EFORMAT);
	ck_assert_int_eq(msim_device_hint(dev, UINT64_MAX - 1023),
			 MSIM_EFORMAT);
	ck_assert_int_eq(msim_device_hint(dev, (UINT64_C(1) << 63) + 256),
			 MSIM_EFORMAT);
	ck_assert_int_eq(msim_device_hint(dev, UINT64_C(1) << 63), 0);
	msim_device_destroy(dev);
}
END_TEST

/* The running cost without a log equals the cost of the log. */
START_TEST(test_devtime_without_log)
{
	msim_timemodel_t *tm;
	ck_assert_int_eq(msim_timemodel_h200(&tm), 0);
	msim_device_t *logged = msim_device_new(
		&(msim_device_config_t){.log_events = 1});
	msim_device_t *bare = msim_device_new(
		&(msim_device_config_t){.timemodel = tm});
	for (int i = 1; i <= 50; i++) {
		msim_addr_t a, b;
		uint64_t size = (uint64_t)i * 2 * MB;
		ck_assert_int_eq(msim_device_malloc(logged, size,
						    MSIM_POOL_LARGE, &a), 0);
		ck_assert_int_eq(msim_device_malloc(bare, size,
						    MSIM_POOL_LARGE, &b), 0);
		if (i % 3) {
			msim_device_free(logged, a, size, MSIM_POOL_LARGE);
			msim_device_free(bare, b, size, MSIM_POOL_LARGE);
		}
	}
	size_t n, nbare;
	const msim_seg_event_t *ev = msim_device_events(logged, &n);
	msim_device_events(bare, &nbare);
	ck_assert_uint_eq(n, 50 + 34);
	ck_assert_uint_eq(nbare, 0); /* no memory per device call */
	msim_devtime_t want, got;
	msim_timemodel_events(tm, ev, n, &want);
	msim_device_devtime(bare, &got);
	ck_assert_uint_eq(got.mallocs, 50);
	ck_assert_uint_eq(got.frees, 34);
	ck_assert_uint_eq(got.mallocs, want.mallocs);
	ck_assert_uint_eq(got.frees, want.frees);
	ck_assert_double_eq(got.us, want.us);
	msim_device_destroy(logged);
	msim_device_destroy(bare);
	msim_timemodel_destroy(tm);
}
END_TEST

/*
 * A cap in bytes is set_per_process_memory_fraction(cap / capacity), and
 * PyTorch truncates fraction x capacity: on an H200, 85 of the caps of 1
 * to 2,224 MiB allow one byte less than asked (sim/device.h).
 */
START_TEST(test_cap_one_function)
{
	const uint64_t MiB = UINT64_C(1) << 20;
	ck_assert_uint_eq(msim_cap_allowed(1946157056, MSIM_H200_BYTES),
			  1946157055);
	ck_assert_uint_eq(msim_cap_allowed(29 * MiB, MSIM_H200_BYTES),
			  29 * MiB - 1);
	ck_assert_uint_eq(msim_cap_allowed(2048 * MiB, MSIM_H200_BYTES),
			  2048 * MiB);
	ck_assert_uint_eq(msim_cap_allowed(0, MSIM_H200_BYTES), 0);
	ck_assert_uint_eq(msim_cap_allowed(MSIM_H200_BYTES, MSIM_H200_BYTES),
			  0);
	size_t shorter = 0;
	for (uint64_t k = 1; k <= 2224; k++) {
		uint64_t got = msim_cap_allowed(k * MiB, MSIM_H200_BYTES);
		ck_assert(got == k * MiB || got == k * MiB - 1);
		shorter += got != k * MiB;
	}
	ck_assert_uint_eq(shorter, 85);
	/* The device's cap goes through the same conversion. */
	msim_device_t *dev = msim_device_new(&(msim_device_config_t){0});
	ck_assert_ptr_nonnull(dev);
	ck_assert_int_eq(msim_device_set_fraction(
		dev, msim_cap_fraction(1946157056, MSIM_H200_BYTES)), 0);
	ck_assert_uint_eq(msim_device_cap(dev), 1946157055);
	msim_device_destroy(dev);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("device");
	TCase *tc = tcase_create("device");
	tcase_add_test(tc, test_placement_six_20mb);
	tcase_add_test(tc, test_placement_descending_chunks);
	tcase_add_test(tc, test_placement_exact_gap_skipped);
	tcase_add_test(tc, test_placement_freed_chunk_reused);
	tcase_add_test(tc, test_placement_holes);
	tcase_add_test(tc, test_placement_gaps_open_and_narrow);
	tcase_add_test(tc, test_placement_jax_regions);
	tcase_add_test(tc, test_placement_jax_holes);
	tcase_add_test(tc, test_layout_refused);
	tcase_add_test(tc, test_counting_and_cap);
	tcase_add_test(tc, test_hints_and_log);
	tcase_add_test(tc, test_hints_refused);
	tcase_add_test(tc, test_devtime_without_log);
	tcase_add_test(tc, test_cap_one_function);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
