/*
 * cuda-async: each rule of docs/cuda-async.md §2 as one hand-made case,
 * with the numbers the H200's pool gave in the probe of the same name
 * (§2 lists them), then the real pool's peaks on the traces of
 * tests/data/async_real.tsv (allocated peaks exact; reserved peaks printed
 * with their error) and the four figures of tests/data/async.tsv.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "sim/engine.h"
#include "tests/policytest.h"
#include "tests/testutil.h"
#include "traces/trace.h"

/* Offset of block id from block 0, bytes. */
#define OFF(id) ((int64_t)(addr[id] - addr[0]))
#define RES() CUR(S(), reserved_bytes)

/* §2.2 probe G: one allocation reserves its size rounded up to 32 MiB. */
START_TEST(test_async_granularity)
{
	static const struct {
		uint64_t size, reserved;
	} g[] = {
		{1, 32 * MB},
		{2 * MB + 1, 32 * MB},
		{32 * MB, 32 * MB},
		{32 * MB + 1, 64 * MB},
		{64 * MB + 1, 96 * MB},
		{100 * MB + 1, 128 * MB},
		{1 * GB + 1, 1056 * MB},
		{4 * GB + 1, 4128 * MB},
	};
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
		setup("cuda-async", "");
		A(0, g[i].size);
		msim_stats_t st = S();
		ck_assert_int_eq(CUR(st, reserved_bytes), g[i].reserved);
		/* UsedMemCurrent: the bytes asked for, not rounded. */
		ck_assert_int_eq(CUR(st, allocated_bytes), g[i].size);
		teardown();
	}
}
END_TEST

/* §2.1 probe P: blocks are packed at 512 B rounding, large ones too, and
 * a block may straddle two granules. */
START_TEST(test_async_packing)
{
	setup("cuda-async", "");
	A(0, 1000);
	A(1, 1000);
	A(2, 100000);
	A(3, 1);
	ck_assert_int_eq(OFF(1), 1024);
	ck_assert_int_eq(OFF(2), 2048);
	ck_assert_int_eq(OFF(3), 2048 + 100352);
	teardown();

	setup("cuda-async", "");
	for (uint32_t i = 0; i < 10; i++)
		A(i, 3 * MB);          /* 0 .. 30 MiB: one granule */
	ck_assert_int_eq(RES(), 32 * MB);
	A(10, 3 * MB);                 /* 30 .. 33 MiB */
	ck_assert_int_eq(OFF(10), 30 * MB);
	ck_assert_int_eq(RES(), 64 * MB);
	teardown();

	/* large_after_small: 30000000 B rounds to 30000128, no 2 MiB. */
	setup("cuda-async", "");
	A(0, 1000);
	A(1, 30000000);
	A(2, 1000);
	ck_assert_int_eq(OFF(1), 1024);
	ck_assert_int_eq(OFF(2), 30001152);
	ck_assert_int_eq(RES(), 32 * MB);
	teardown();
}
END_TEST

/* §2.1 probe fit: the smallest hole that holds the block. */
START_TEST(test_async_best_fit)
{
	setup("cuda-async", "");
	A(0, 8 * MB);   /* a   0 */
	A(1, 8 * MB);   /* g1  8 */
	A(2, 24 * MB);  /* b  16 */
	A(3, 8 * MB);   /* g2 40 */
	A(4, 12 * MB);  /* c  48 */
	A(5, 8 * MB);   /* g3 60 */
	A(6, 60 * MB);  /* g4 68 */
	ck_assert_int_eq(RES(), 128 * MB);
	F(0);
	F(2);
	F(4);
	A(7, 10 * MB);  /* c (12 MiB), not the first hole b */
	ck_assert_int_eq(OFF(7), 48 * MB);
	A(8, 8 * MB);   /* a, exactly */
	ck_assert_int_eq(OFF(8), 0);
	A(9, 8 * MB);   /* b: the 2 MiB left of c is too small */
	ck_assert_int_eq(OFF(9), 16 * MB);
	A(10, 20 * MB); /* 16 MiB left of b: the top */
	ck_assert_int_eq(OFF(10), 128 * MB);
	ck_assert_int_eq(RES(), 160 * MB);
	teardown();
}
END_TEST

/* §2.1 probe tie_three: equal holes go in the order they were freed. */
START_TEST(test_async_ties_first_freed)
{
	setup("cuda-async", "");
	A(0, 4 * MB);   /* a  0 */
	A(1, 1 * MB);
	A(2, 4 * MB);   /* b  5 */
	A(3, 1 * MB);
	A(4, 4 * MB);   /* c 10 */
	A(5, 1 * MB);
	A(6, 60 * MB);
	F(2);
	F(0);
	F(4);
	A(7, 4 * MB);
	A(8, 4 * MB);
	A(9, 4 * MB);
	ck_assert_int_eq(OFF(7), 5 * MB);
	ck_assert_int_eq(OFF(8), 0);
	ck_assert_int_eq(OFF(9), 10 * MB);
	teardown();
}
END_TEST

/* §2.1 probes coalesce and hole_vs_tail: freed neighbours merge; the
 * space above the highest block is taken only when no hole fits. */
START_TEST(test_async_merge_and_top)
{
	setup("cuda-async", "");
	for (uint32_t i = 0; i < 4; i++)
		A(i, 16 * MB); /* a b c g at 0 16 32 48 */
	F(0);
	F(1);
	A(4, 32 * MB);         /* a + b */
	ck_assert_int_eq(OFF(4), 0);
	F(2);
	A(5, 24 * MB);         /* c is 16 MiB: the top, at 64 */
	ck_assert_int_eq(OFF(5), 64 * MB);
	ck_assert_int_eq(RES(), 96 * MB);
	teardown();

	setup("cuda-async", "");
	A(1, 20 * MB);
	A(2, 1000);
	A(3, 5 * MB);
	ck_assert_int_eq(OFF(3) - OFF(1), 20 * MB + 1024);
	F(1);
	A(4, 25 * MB);         /* the 20 MiB hole is too small */
	ck_assert_int_eq(OFF(4) - OFF(1), 26215424);
	ck_assert_int_eq(RES(), 64 * MB);
	A(5, 18 * MB);         /* the hole, not the top */
	ck_assert_int_eq(addr[5], addr[1]);
	teardown();
}
END_TEST

/* §3.1, read off the whole-trace replays' addresses, then probe
 * recent_first (tests/data/async_probes/recent.txt, the same offsets):
 * pending (recently freed) ranges are searched first, then the old ones,
 * the two kinds apart; when neither holds a block every pending free
 * becomes old and old neighbours merge before the top is tried. */
START_TEST(test_async_recent_first)
{
	setup("cuda-async", "");
	A(0, 8 * MB);          /* 0 .. 8 */
	A(1, 1 * MB);          /* 8 .. 9 */
	A(2, 12 * MB);         /* 9 .. 21 */
	A(3, 1 * MB);          /* 21 .. 22 */
	F(0);                  /* recent: 8 MiB at 0 */
	A(4, 16 * MB);         /* nothing holds it: 0 .. 8 old, the top */
	ck_assert_int_eq(OFF(4), 22 * MB);
	F(2);                  /* recent: 12 MiB at 9 */
	A(5, 2 * MB);          /* the recent range, not the old 8 MiB */
	ck_assert_int_eq(OFF(5), 9 * MB);
	A(6, 11 * MB);         /* pending 10 MiB, old 8 MiB too small; all
				* old (not adjacent): the top */
	ck_assert_int_eq(OFF(6), 38 * MB);
	A(7, 2 * MB);          /* all old now: the best fit, 8 MiB at 0 */
	ck_assert_int_eq(OFF(7), 0);
	F(1);                  /* pending 8 .. 9, beside old 2 .. 8: apart */
	A(9, 6 * MB + 512);    /* so not 2 .. 9: the old 10 MiB at 11 */
	ck_assert_int_eq(OFF(9), 11 * MB);
	teardown();

	/* Probe recent_vs_old: a recent 4 MiB range before an old 2 MiB. */
	setup("cuda-async", "");
	A(0, 2 * MB);
	A(1, 1 * MB);
	A(2, 4 * MB);
	A(3, 1 * MB);
	F(0);
	A(4, 8 * MB);          /* the top; 0 .. 2 becomes old */
	ck_assert_int_eq(OFF(4), 8 * MB);
	F(2);
	A(5, 2 * MB);          /* best fit alone: 0 */
	ck_assert_int_eq(OFF(5), 3 * MB);
	teardown();

	/* Probe recent_merge: recent neighbours merge at once. */
	setup("cuda-async", "");
	for (uint32_t i = 0; i < 7; i++)
		A(i, 1 * MB);  /* at 0 .. 6 */
	F(1);
	F(2);                  /* 1 .. 3, 2 MiB */
	F(5);                  /* 5 .. 6, 1 MiB: the best fit */
	A(7, 1 * MB);          /* unmerged, the first freed: 1 */
	ck_assert_int_eq(OFF(7), 5 * MB);
	teardown();
}
END_TEST

/* alloc on a stream (A() uses stream 0). */
static msim_addr_t
AS(uint32_t id, uint64_t size, msim_stream_t stream)
{
	msim_req_t r = {.kind = MSIM_REQ_ALLOC, .id = id, .size = size,
			.stream = stream};
	ck_assert_int_eq(msim_policy_alloc(pol, &r, &addr[id]), 0);
	return addr[id];
}

/* §3.1, the rules of pending frees, one probe each
 * (validate/device/async_probe_rules.py; tests/data/async_probes/rules.txt, the
 * same offsets with and without a query after every call). */
START_TEST(test_async_pending_rules)
{
	/* miss_merges: a block no free range holds makes every pending
	 * free old, merged with its old neighbours, before the top. */
	setup("cuda-async", "");
	A(0, 8 * MB);
	A(1, 8 * MB);
	A(2, 1 * MB);
	F(0);
	A(3, 64 * MB);         /* 0 .. 8 old; the top, at 17 */
	ck_assert_int_eq(OFF(3), 17 * MB);
	F(1);                  /* pending 8 .. 16 beside old 0 .. 8 */
	A(4, 12 * MB);         /* neither holds it: merged, 0 .. 16 */
	ck_assert_int_eq(OFF(4), 0);
	teardown();

	/* split_renews: the rest of a split range is entered anew. */
	setup("cuda-async", "");
	A(0, 2 * MB);          /* p */
	A(1, 1 * MB);
	A(2, MB / 2);          /* q, at 3 */
	A(3, 1 * MB);
	A(4, 40 * MB);
	F(0);
	F(2);
	A(5, 3 * MB / 2);      /* the best fit, p: its rest 0.5 MiB at 1.5 */
	ck_assert_int_eq(OFF(5), 0);
	A(6, MB / 2);          /* q, freed before the rest was made */
	ck_assert_int_eq(OFF(6), 3 * MB);
	teardown();

	/* merge_renews: a free merged with a pending neighbour enters the
	 * merged range anew. */
	setup("cuda-async", "");
	A(0, 1 * MB);          /* v1 */
	A(1, 1 * MB);          /* v2 */
	A(2, 1 * MB);
	A(3, 2 * MB);          /* u, at 3 */
	A(4, 1 * MB);
	A(5, 40 * MB);
	F(0);
	F(3);
	F(1);                  /* v = v1 + v2, 2 MiB, after u */
	A(6, 2 * MB);
	ck_assert_int_eq(OFF(6), 3 * MB);
	teardown();

	/* old_newest_first: pending frees turn old newest first. */
	setup("cuda-async", "");
	A(0, 2 * MB);          /* x */
	A(1, 1 * MB);
	A(2, 2 * MB);          /* y, at 3 */
	A(3, 1 * MB);
	F(0);
	F(2);
	A(4, 64 * MB);         /* x and y old; the top */
	ck_assert_int_eq(OFF(4), 6 * MB);
	A(5, 2 * MB);          /* y, freed last, is first among the old */
	ck_assert_int_eq(OFF(5), 3 * MB);
	teardown();

	/* map_retires: a block that needs a granule mapped makes every
	 * pending free old. */
	setup("cuda-async", "");
	A(0, 2 * MB);
	A(1, 2 * MB);          /* o, at 2 */
	A(2, 2 * MB);
	A(3, 4 * MB);          /* r, at 6 */
	A(4, 2 * MB);
	A(5, 84 * MB);         /* big, 12 .. 96 */
	A(6, 1 * MB);
	F(1);
	A(7, 64 * MB);         /* o old; the top, at 97 */
	ck_assert_int_eq(OFF(7), 97 * MB);
	F(5);
	ck_assert_int_eq(msim_policy_empty_cache(pol), 0); /* granules 1, 2 */
	F(3);                  /* r pending */
	A(8, 32 * MB);         /* the old big range: granule 1 mapped again */
	ck_assert_int_eq(OFF(8), 12 * MB);
	A(9, 2 * MB);          /* r is old now: the best fit, o */
	ck_assert_int_eq(OFF(9), 2 * MB);
	teardown();

	/* stream_own: a range pending on one stream is searched for another
	 * only after the old ones (§3.5). */
	setup("cuda-async", "");
	AS(0, 4 * MB, 1);      /* r, on stream 1 */
	A(1, 1 * MB);
	A(2, 8 * MB);          /* o, at 5 */
	A(3, 1 * MB);
	F(2);
	A(4, 64 * MB);         /* o old; the top */
	ck_assert_int_eq(OFF(4), 14 * MB);
	F(0);                  /* pending on stream 1 */
	AS(5, 4 * MB, 0);      /* the old 8 MiB range, not r */
	ck_assert_int_eq(OFF(5), 5 * MB);
	teardown();
}
END_TEST

/* §3.5: several streams, from random scenarios of validate/device/
 * async_probe_sync.py run on the H200 (seed/number) and its probes
 * (tests/data/async_probes/sync.txt). */
START_TEST(test_async_streams)
{
	/* 1001/418: a range pending on another stream is taken before a
	 * miss, and the rest stays pending on that stream. */
	setup("cuda-async", "");
	AS(0, 41943040, 1);
	F(0);                  /* 0 .. 40 MiB pending on stream 1 */
	AS(1, 2097152, 0);     /* its front, not a miss */
	ck_assert_int_eq(OFF(1), 0);
	F(1);                  /* 0 .. 2 MiB pending on stream 0 */
	AS(2, 7438031, 0);     /* stream 1's rest; no miss merges 0 .. 2 */
	ck_assert_int_eq(OFF(2), 2097152);
	teardown();

	/* 1003/105: other streams are searched in the order they first
	 * allocated, the best fit within the first that holds the block:
	 * stream 2 (first) over the smaller range of stream 1. */
	setup("cuda-async", "");
	AS(0, 12582912, 2);
	F(0);
	AS(1, 1840044, 1);     /* the front of stream 2's range */
	F(1);                  /* 0 .. 1840128 pending on stream 1 */
	AS(2, 512, 0);
	ck_assert_int_eq(OFF(2), 1840128);
	teardown();

	/* 1004/51: the order is that of the first malloc, not of the stream
	 * numbers: stream 0 before stream 3. */
	setup("cuda-async", "");
	AS(0, 49152, 0);
	AS(1, 49152, 3);
	F(1);
	F(0);
	AS(2, 49152, 1);
	ck_assert_int_eq(OFF(2), 0);
	teardown();

	/* 1001/303: a miss completes the pending frees stream by stream, in
	 * the order of the streams' first malloc (stream 1 here), each
	 * stream's newest first: of two old 1536 B ranges, stream 1's 512 KiB
	 * block's (completed first) is taken, not stream 0's 1536 B one. */
	setup("cuda-async", "");
	AS(0, 524288, 1);
	AS(1, 524288, 1);
	AS(2, 2097152, 0);
	F(2);
	F(0);
	AS(3, 41943040, 1);
	F(3);
	F(1);
	AS(4, 41943040, 1);
	F(4);
	AS(5, 524288, 0);
	F(5);
	AS(6, 7271754, 1);
	AS(7, 1536, 1);
	AS(8, 1536, 0);
	AS(9, 9483823, 0);
	AS(10, 1536, 1);
	AS(11, 10913371, 1);
	AS(12, 524288, 1);
	AS(13, 10376949, 1);
	F(12);
	AS(14, 3719009, 0);
	F(8);
	F(14);
	AS(15, 10390560, 0);
	AS(16, 4355235, 0);
	ck_assert_int_eq(OFF(16), 49489920);
	AS(17, 1536, 0);
	ck_assert_int_eq(OFF(17), 28197376);
	teardown();

	/* probes own_none and own_e: a 4 MiB block takes its stream's
	 * pending 8 MiB range p before the old 4 MiB hole o; after
	 * empty_cache (cudaDeviceSynchronize, then the trim) p is old and
	 * the block takes o. */
	for (int ec = 0; ec < 2; ec++) {
		setup("cuda-async", "");
		A(0, 4 * MB);          /* o */
		A(1, 1 * MB);
		A(2, 8 * MB);          /* p, at 5 */
		A(3, 1 * MB);
		F(0);
		A(4, 64 * MB);         /* a miss: o old */
		F(2);                  /* p pending */
		if (ec)
			ck_assert_int_eq(msim_policy_empty_cache(pol), 0);
		A(5, 4 * MB);
		ck_assert_int_eq(OFF(5), ec ? 0 : 5 * MB);
		teardown();
	}
}
END_TEST

/* Every block of six real traces where the H200's pool put it
 * (tests/data/async_offsets/, from validate/device/async_replay.py), the blocks
 * placed one after another by the policy alone. */
START_TEST(test_async_real_offsets)
{
	static const char *const traces[][2] = {
		{"gpt2_infer", "recorded/gpt2_infer.msimtr"},
		{"cnn_scaler", "record/cnn_scaler.real.bin"},
		{"int8_infer", "record/int8_infer.real.bin"},
		{"llama_int8", "recorded/llama_int8.msimtr"},
		{"prefetch_2stream", "traces/prefetch_2stream.csv"},
		{"llama", "record/llama.real.bin"},
	};
	for (size_t k = 0; k < sizeof(traces) / sizeof(traces[0]); k++) {
		char path[256], line[128], why[512];
		snprintf(path, sizeof(path), "async_offsets/%s.txt",
			 traces[k][0]);
		FILE *fp = fopen(test_data(path), "r");
		ck_assert_ptr_nonnull(fp);
		msim_trace_t *t;
		ck_assert_msg(msim_trace_open(test_data(traces[k][1]), NULL, &t,
					      why, sizeof(why)) == 0, "%s", why);
		setup("cuda-async", "");
		msim_req_t r;
		msim_addr_t a, first = 0;
		size_t n = 0;
		int rc;
		while ((rc = msim_trace_next(t, &r)) == 1) {
			if (r.kind == MSIM_REQ_FREE) {
				ck_assert_int_eq(msim_policy_free(pol, &r), 0);
				continue;
			}
			if (r.kind != MSIM_REQ_ALLOC)
				continue;
			ck_assert_int_eq(msim_policy_alloc(pol, &r, &a), 0);
			if (n == 0)
				first = a;
			do
				ck_assert_ptr_nonnull(fgets(line, sizeof(line),
							    fp));
			while (line[0] == '#');
			long long want = atoll(line);
			ck_assert_msg((long long)(a - first) == want,
				      "%s block %zu: %lld, the H200 %lld",
				      traces[k][0], n, (long long)(a - first),
				      want);
			n++;
		}
		ck_assert_int_eq(rc, 0);
		ck_assert_ptr_null(fgets(line, sizeof(line), fp));
		printf("cuda-async %-22s %zu blocks where the H200 put them\n",
		       traces[k][0], n);
		teardown();
		msim_trace_close(t);
		fclose(fp);
	}
}
END_TEST

/* §2.2 probes remap and remap3: a free granule is remapped where a block
 * needs one; the pool maps more only when none is free. */
START_TEST(test_async_remap)
{
	setup("cuda-async", "");
	A(0, 32 * MB);
	A(1, 32 * MB);
	A(2, 1000);            /* granule 2 */
	ck_assert_int_eq(RES(), 96 * MB);
	F(0);                  /* granule 0 free, kept */
	A(3, 40 * MB);         /* granules 2 and 3: 0's memory moves */
	ck_assert_int_eq(OFF(3), 64 * MB + 1024);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 96 * MB);
	ck_assert_int_eq(st.num_device_alloc, 3);
	teardown();

	setup("cuda-async", "");
	A(0, 64 * MB);
	A(1, 1000);
	F(0);
	A(2, 70 * MB);         /* 64 MiB + 1 KiB .. : granules 2, 3, 4 */
	ck_assert_int_eq(OFF(2), 64 * MB + 1024);
	ck_assert_int_eq(RES(), 96 * MB);
	A(3, 20 * MB);         /* at 0: granule 0 needs new memory */
	ck_assert_int_eq(OFF(3), 0);
	ck_assert_int_eq(RES(), 128 * MB);
	teardown();

	/* big_first: 2 GiB + 1 B, then its room reused by two 1000 MiB. */
	setup("cuda-async", "");
	A(0, 2 * GB + 1);
	A(1, 1000);
	ck_assert_int_eq(OFF(1), 2147484160);
	ck_assert_int_eq(RES(), 2080 * MB);
	F(0);
	A(2, 1000 * MB);
	A(3, 1000 * MB);
	A(4, 100 * MB);        /* the top: granules 64 .. 67 */
	ck_assert_int_eq(OFF(2), 0);
	ck_assert_int_eq(OFF(3), 1000 * MB);
	ck_assert_int_eq(OFF(4), 2147485184);
	ck_assert_int_eq(RES(), 2144 * MB);
	teardown();
}
END_TEST

/* §2.3 probes trim_partial, trim_two and high: cudaMemPoolTrimTo(0)
 * (empty_cache) unmaps every granule without a live byte, in the middle
 * too; the peak is the high-water mark of what was mapped. */
START_TEST(test_async_trim)
{
	setup("cuda-async", "");
	A(0, 1000);
	A(1, 60 * MB);
	F(1);
	ck_assert_int_eq(RES(), 64 * MB);
	ck_assert_int_eq(msim_policy_empty_cache(pol), 0);
	ck_assert_int_eq(RES(), 32 * MB); /* granule 0 holds 1000 B */
	teardown();

	setup("cuda-async", "");
	A(0, 100 * MB);        /* 0 .. 100 */
	A(1, 100 * MB);        /* 100 .. 200: granules 3 .. 6 */
	ck_assert_int_eq(RES(), 224 * MB);
	F(0);
	ck_assert_int_eq(msim_policy_empty_cache(pol), 0);
	ck_assert_int_eq(RES(), 128 * MB);
	A(2, 100 * MB);        /* back at 0 */
	ck_assert_int_eq(OFF(2), 0);
	ck_assert_int_eq(RES(), 224 * MB);
	teardown();

	setup("cuda-async", "");
	A(0, 64 * MB);
	F(0);
	ck_assert_int_eq(msim_policy_empty_cache(pol), 0);
	A(1, 32 * MB);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 32 * MB);
	ck_assert_int_eq(PEAK(st, reserved_bytes), 64 * MB);
	A(2, 1000);
	ck_assert_int_eq(OFF(2), 32 * MB);
	ck_assert_int_eq(RES(), 64 * MB);
	teardown();
}
END_TEST

/* §2.3 probe threshold32: above the release threshold the pool gives back
 * down to it (at the next synchronisation; memsim: at the free). */
START_TEST(test_async_release_threshold)
{
	setup("cuda-async", "release_threshold_mb:32");
	A(0, 100 * MB);
	ck_assert_int_eq(RES(), 128 * MB);
	F(0);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 32 * MB);
	ck_assert_int_eq(st.num_device_free, 1);
	teardown();

	setup("cuda-async", "release_threshold_mb:0");
	A(0, 64 * MB);
	F(0);
	ck_assert_int_eq(RES(), 0);
	teardown();
}
END_TEST

/* Replays sim's whole trace through cuda-async; returns its stats. */
static msim_stats_t
replay(const char *rel)
{
	char why[512];
	msim_trace_t *t;
	ck_assert_msg(msim_trace_open(test_data(rel), NULL, &t, why,
				      sizeof(why)) == 0, "%s: %s", rel, why);
	msim_sim_config_t cfg = {
		.source = msim_trace_source(t),
		.policy = msim_policy_find("cuda-async"),
	};
	msim_sim_t *sim;
	ck_assert_int_eq(msim_sim_new(&cfg, &sim, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_sim_run(sim), 0);
	msim_stats_t st;
	msim_sim_stats(sim, &st);
	msim_sim_destroy(sim);
	msim_trace_close(t);
	return st;
}

/* The real pool's peaks (docs/cuda-async.md §4): the allocated peak is
 * the device's UsedMemHigh exactly; the reserved peak is the model's (a
 * regression check), printed beside the device's. */
START_TEST(test_async_real_pool)
{
	FILE *fp = fopen(test_data("async_real.tsv"), "r");
	ck_assert_ptr_nonnull(fp);
	char line[1024], w[64], rel[256];
	long long used, real, model;
	int n = 0;
	while (fgets(line, sizeof(line), fp)) {
		if (line[0] == '#' || !strncmp(line, "workload", 8))
			continue;
		ck_assert_int_eq(sscanf(line, "%63s %255s %lld %lld %lld", w,
					rel, &used, &real, &model), 5);
		msim_stats_t st = replay(rel);
		int64_t peak = PEAK(st, reserved_bytes);
		printf("cuda-async %-22s reserved peak %lld, H200 %lld: "
		       "%+lld MiB (%+.2f%%)\n", w, (long long)peak, real,
		       (long long)(peak - real) / (long long)MB,
		       100.0 * (double)(peak - real) / (double)real);
		ck_assert_int_eq(PEAK(st, allocated_bytes), used);
		ck_assert_int_eq(peak % (32 * MB), 0);
		ck_assert_int_eq(peak, model);
		n++;
	}
	fclose(fp);
	ck_assert_int_eq(n, 23);
}
END_TEST

/* The four figures of async.tsv (PyTorch's own runs): the same traces are
 * rows of async_real.tsv; here the allocated peaks against PyTorch's
 * memory_stats() and the reserved ones printed. */
START_TEST(test_async_tsv)
{
	FILE *fp = fopen(test_data("async.tsv"), "r");
	ck_assert_ptr_nonnull(fp);
	char line[1024], w[64], conf[64], rel[256];
	long long rpeak, apeak;
	int n = 0;
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), fp)); /* header */
	while (fgets(line, sizeof(line), fp)) {
		ck_assert_int_eq(sscanf(line, "%63s %63s %lld %lld", w, conf,
					&rpeak, &apeak), 4);
		snprintf(rel, sizeof(rel), "traces/%s.csv", w);
		msim_stats_t st = replay(rel);
		printf("cuda-async %-22s reserved peak %lld, async.tsv %lld: "
		       "%+.2f%%\n", w, (long long)PEAK(st, reserved_bytes),
		       rpeak, 100.0 * (double)(PEAK(st, reserved_bytes) -
					       rpeak) / (double)rpeak);
		ck_assert_int_eq(PEAK(st, allocated_bytes), apeak);
		n++;
	}
	fclose(fp);
	ck_assert_int_eq(n, 4);
}
END_TEST

static void
add(TCase *tc)
{
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_async_granularity);
	tcase_add_test(tc, test_async_packing);
	tcase_add_test(tc, test_async_best_fit);
	tcase_add_test(tc, test_async_ties_first_freed);
	tcase_add_test(tc, test_async_merge_and_top);
	tcase_add_test(tc, test_async_recent_first);
	tcase_add_test(tc, test_async_pending_rules);
	tcase_add_test(tc, test_async_streams);
	tcase_add_test(tc, test_async_real_offsets);
	tcase_add_test(tc, test_async_remap);
	tcase_add_test(tc, test_async_trim);
	tcase_add_test(tc, test_async_release_threshold);
	tcase_add_test(tc, test_async_real_pool);
	tcase_add_test(tc, test_async_tsv);
}

int
main(void)
{
	return run_suite("policy_cuda_async", add);
}
