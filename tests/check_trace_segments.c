/*
 * The segments state of snapshot pickles (docs/pytorch-allocator.md
 * §10.1): each real
 * snapshot's segments sum to the reserved bytes captures.tsv recorded at
 * the end of its run, agree with the end of its own trace, and are what a
 * replay of the recording ends with; hostile segment lists fail cleanly,
 * naming the byte.
 */
#include <config.h>

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policies/registry.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "lab/snapcheck.h"
#include "testutil.h"
#include "traces/trace.h"

static const char *const workloads[] = {
	"prefetch_2stream", "train_eval_emptycache", "gpt2_fp32",
	"bert_infer_varlen", "resnet50_amp", "resnet50_amp.frames",
};
#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

/* reserved_bytes.all.current of workload in captures.tsv. */
static uint64_t
captured_reserved(const char *workload)
{
	FILE *fp = fopen(test_data("captures.tsv"), "r");
	ck_assert_ptr_nonnull(fp);
	char head[4096], line[4096];
	ck_assert_ptr_nonnull(fgets(head, sizeof(head), fp));
	int col = -1, k = 0;
	char *save;
	for (char *h = strtok_r(head, "\t\n", &save); h;
	     h = strtok_r(NULL, "\t\n", &save), k++)
		if (!strcmp(h, "reserved_bytes.all.current"))
			col = k;
	ck_assert_int_ge(col, 0);
	size_t wl = strcspn(workload, ".");
	while (fgets(line, sizeof(line), fp)) {
		if (strncmp(line, workload, wl) || line[wl] != '\t')
			continue;
		k = 0;
		for (char *f = strtok_r(line, "\t\n", &save); f;
		     f = strtok_r(NULL, "\t\n", &save), k++)
			if (k == col) {
				fclose(fp);
				return strtoull(f, NULL, 10);
			}
	}
	fclose(fp);
	ck_abort_msg("%s: not in captures.tsv", workload);
	return 0;
}

/* Each snapshot's segments sum to the recorded reserved bytes; the state
 * is whole once the first entry is read; blocks tile their segments and
 * sum to the segment's allocated and active bytes; and the trace's own
 * segment rows and live allocations end in the same state. */
START_TEST(test_segments_sum_to_captured_reserved)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s", test_data("pickles/"));
	strcat(path, workloads[_i]);
	strcat(path, ".pickle");
	char why[512];
	msim_trace_t *t;
	ck_assert_msg(msim_trace_open(path, NULL, &t, why, sizeof(why)) == 0,
		      "%s", why);
	msim_req_t r;
	ck_assert_int_eq(msim_trace_next(t, &r), 1);
	const msim_snap_segment_t *g;
	size_t n0, n;
	ck_assert_int_eq(msim_trace_segments(t, &g, &n0), 0);
	ck_assert_uint_gt(n0, 0);
	int rc;
	while ((rc = msim_trace_next(t, &r)) == 1)
		;
	ck_assert_msg(rc == 0, "%s", msim_trace_errmsg(t));
	ck_assert_int_eq(msim_trace_segments(t, &g, &n), 0);
	ck_assert_uint_eq(n, n0);
	uint64_t reserved = 0, active_req = 0, nactive = 0;
	for (size_t i = 0; i < n; i++) {
		reserved += g[i].total_size;
		ck_assert(i == 0 || g[i].addr > g[i - 1].addr);
		ck_assert_uint_eq(g[i].device, 0);
		uint64_t at = g[i].addr, alloc = 0, active = 0;
		for (size_t k = 0; k < g[i].nblocks; k++) {
			const msim_snap_block_t *b = &g[i].blocks[k];
			ck_assert_uint_eq(b->addr, at);
			ck_assert_uint_eq(b->seg, i);
			at += b->size;
			if (b->state == MSIM_SNAP_ALLOCATED)
				alloc += b->size;
			if (b->state != MSIM_SNAP_INACTIVE) {
				active += b->size;
				active_req += b->requested;
				nactive++;
			}
		}
		ck_assert_uint_eq(at, g[i].addr + g[i].total_size);
		ck_assert_uint_eq(alloc, g[i].allocated_size);
		ck_assert_uint_eq(active, g[i].active_size);
	}
	ck_assert_uint_eq(reserved, captured_reserved(workloads[_i]));
	msim_trace_tally_t tl;
	msim_trace_tally(t, &tl);
	ck_assert_int_eq(tl.seg_bytes, (int64_t)reserved);
	msim_trace_close(t);

	/* Live at the end (allocations without a free_completed row): the
	 * active blocks, by count and requested bytes. */
	ck_assert_int_eq(msim_trace_open(path, NULL, &t, why, sizeof(why)),
			 0);
	uint64_t *size = calloc(1u << 20, sizeof(*size));
	uint64_t live = 0, nlive = 0;
	while (msim_trace_next(t, &r) == 1) {
		if (r.kind == MSIM_REQ_ALLOC &&
		    !(r.flags & MSIM_REQF_EXPECT_OOM)) {
			ck_assert_uint_lt(r.id, 1u << 20);
			size[r.id] = r.size;
			live += r.size;
			nlive++;
		} else if (r.kind == MSIM_REQ_FREE && size[r.id]) {
			live -= size[r.id];
			size[r.id] = 0;
			nlive--;
		}
	}
	free(size);
	msim_trace_close(t);
	ck_assert_uint_eq(nlive, nactive);
	ck_assert_uint_eq(live, active_req);
}
END_TEST

/* A replay of the recording ends in the snapshot's state: the same
 * segments, reserved and allocated bytes, and blocks. */
START_TEST(test_recording_ends_in_snapshot_state)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s", test_data("pickles/"));
	strcat(path, workloads[_i]);
	strcat(path, ".pickle");
	char why[512];
	msim_trace_t *t;
	msim_trace_options_t opt = {.deferred_frees = true,
				    .hidden_empty_cache = true};
	ck_assert_int_eq(msim_trace_open(path, &opt, &t, why, sizeof(why)),
			 0);
	const msim_policy_ops_t *ops = msim_policy_find("pytorch");
	msim_params_t pv;
	ck_assert_int_eq(msim_params_init(&pv, ops->params), 0);
	msim_sim_config_t cfg = {
		.source = msim_trace_source(t), .policy = ops, .params = &pv,
		.device = {.log_events = 1, .use_hints = true},
	};
	msim_sim_t *sim;
	ck_assert_int_eq(msim_sim_new(&cfg, &sim, why, sizeof(why)), 0);
	ck_assert_msg(msim_sim_run(sim) == 0, "%s", msim_sim_errmsg(sim));
	const msim_snap_segment_t *g;
	size_t n;
	ck_assert_int_eq(msim_trace_segments(t, &g, &n), 0);
	msim_snapcheck_t c;
	ck_assert_int_eq(msim_snapcheck(sim, g, n, &c), 0);
	char line[256];
	msim_snapcheck_format(&c, line, sizeof(line));
	ck_assert_msg(c.same && c.blocks_listed && c.by_address, "%s: %s",
		      workloads[_i], line);
	ck_assert_uint_eq(c.sim_segs, n);
	ck_assert_ptr_nonnull(strstr(line, "matches"));
	msim_sim_destroy(sim);
	msim_params_clear(&pv);
	msim_trace_close(t);
}
END_TEST

/* A history started late (tests/data/snapshots/r2_3_late.pickle, made by
 * make_corpus.py): A (4 MiB) and B (2 MiB) in a 20 MiB segment and C
 * (400 B) in a 2 MiB one were allocated before it; it frees A and C,
 * and the snapshot holds B.  The start is rebuilt segment by segment
 * before the first recorded request, then the peaks are reset. */
START_TEST(test_partial_history_seeds_the_start)
{
	const uint64_t MiB = UINT64_C(1) << 20, L = UINT64_C(0x7F0000000000),
		       S = UINT64_C(0x7F0002000000);
	enum { F = MSIM_REQF_FILLER, SD = MSIM_REQF_SEED };
	static const struct {
		int kind;
		uint64_t addr, size;
		int flags;
	} want[] = {
		{MSIM_REQ_SEGMENT_HINT, 0x7F0000000000, 20 << 20, 0},
		{MSIM_REQ_ALLOC, 0, 20 << 20, F}, /* the whole segment */
		{MSIM_REQ_FREE, 0, 0, F},
		{MSIM_REQ_ALLOC, 0x7F0000000000, 4 << 20, SD},        /* A */
		{MSIM_REQ_ALLOC, 0x7F0000400000, 2 << 20, SD},        /* B */
		{MSIM_REQ_ALLOC, 0, 14 << 20, F},              /* its tail */
		{MSIM_REQ_SEGMENT_HINT, 0x7F0002000000, 2 << 20, 0},
		{MSIM_REQ_ALLOC, 0x7F0002000000, 400, SD},            /* C */
		{MSIM_REQ_ALLOC, 0, 1 << 20, F},   /* the rest, in blocks of */
		{MSIM_REQ_ALLOC, 0, (1 << 20) - 512, F}, /* kSmallSize */
		{MSIM_REQ_FREE, 0, 0, F},
		{MSIM_REQ_FREE, 0, 0, F},
		{MSIM_REQ_FREE, 0, 0, F},
		{MSIM_REQ_RESET_PEAKS, 0, 0, 0},
		{MSIM_REQ_ALLOC, 0x7F0002000200, 1024, 0}, /* the trace: D */
		{MSIM_REQ_FREE, 0x7F0000000000, 0, 0},                /* A */
		{MSIM_REQ_FREE, 0x7F0002000000, 0, 0},                /* C */
	};
	char why[512];
	msim_trace_t *t;
	ck_assert_int_eq(msim_trace_open(test_data("snapshots/r2_3_late.pickle"),
					 NULL, &t, why, sizeof(why)), 0);
	msim_req_t r;
	size_t i = 0;
	int rc;
	while ((rc = msim_trace_next(t, &r)) == 1) {
		ck_assert_uint_lt(i, sizeof(want) / sizeof(want[0]));
		ck_assert_msg(r.kind == want[i].kind && r.flags == want[i].flags,
			      "request %zu: kind %d flags %d", i, r.kind,
			      r.flags);
		ck_assert_uint_eq(r.addr, want[i].addr);
		if (r.kind != MSIM_REQ_FREE)
			ck_assert_uint_eq(r.size, want[i].size);
		i++;
	}
	ck_assert_msg(rc == 0, "%s", msim_trace_errmsg(t));
	ck_assert_uint_eq(i, sizeof(want) / sizeof(want[0]));
	msim_trace_seed_t sd;
	msim_trace_seeding(t, &sd);
	ck_assert(sd.first_pass && sd.exact);
	ck_assert_uint_eq(sd.from_frees, 2);
	ck_assert_uint_eq(sd.from_snapshot, 1);
	ck_assert_uint_eq(sd.segments, 2);
	ck_assert_uint_eq(sd.segment_bytes, 22 * MiB);
	ck_assert_uint_eq(sd.bytes, 6 * MiB + 400);
	ck_assert_uint_eq(sd.explained, 1);
	(void)L;
	(void)S;
	msim_trace_close(t);

	/* --strict: today's refusal, naming the address. */
	msim_trace_options_t strict = {.strict = true};
	ck_assert_int_eq(msim_trace_open(test_data("snapshots/r2_3_late.pickle"),
					 &strict, &t, why, sizeof(why)), 0);
	while ((rc = msim_trace_next(t, &r)) == 1)
		;
	ck_assert_int_lt(rc, 0);
	ck_assert_ptr_nonnull(strstr(msim_trace_errmsg(t),
				     "free_requested of unknown address "
				     "0x7f0000000000"));
	msim_trace_close(t);
}
END_TEST

/* A CSV has no segments state; a replay that differs says how. */
START_TEST(test_no_state_and_differences)
{
	char why[512];
	msim_trace_t *t;
	const msim_snap_segment_t *g;
	size_t n = 1;
	ck_assert_int_eq(msim_trace_open(test_data("traces/gpt2_fp32.csv"),
					 NULL, &t, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_trace_segments(t, &g, &n), 0);
	ck_assert_uint_eq(n, 0);
	msim_trace_close(t);

	msim_snapcheck_t c = {.sim_segs = 3, .snap_segs = 2,
			      .segs_only_sim = 1, .by_address = true,
			      .sim_reserved = 30, .snap_reserved = 20};
	char line[256];
	msim_snapcheck_format(&c, line, sizeof(line));
	ck_assert_str_eq(line, "differs: segments 3 simulated, 2 in the "
			 "snapshot (1 and 0 not in the other); reserved 30 "
			 "vs 20");
}
END_TEST

/* A small snapshot: one segment of two blocks, then an empty trace. */
#define ROOT "\x80\x04}(\x8c\x08" "segments](}("
#define SEG_FIELDS \
	"\x8c\x06" "deviceK\x00" "\x8c\x07" "addressK\x10" \
	"\x8c\x0a" "total_sizeK\x20" "\x8c\x0e" "allocated_sizeK\x10" \
	"\x8c\x0c" "segment_type\x8c\x05" "small"
#define BLOCK(addr, state) \
	"}(\x8c\x07" "addressK" addr "\x8c\x04" "sizeK\x10" \
	"\x8c\x05" "state" state "u"
#define TAIL "ue\x8c\x0d" "device_traces]]au."
#define ALLOCATED "\x8c\x10" "active_allocated"
#define INACTIVE "\x8c\x08" "inactive"

START_TEST(test_small_snapshot_reads)
{
	static const char ok[] = ROOT SEG_FIELDS "\x8c\x06" "blocks]("
		BLOCK("\x10", ALLOCATED) BLOCK("\x20", INACTIVE) "e" TAIL;
	const char *p = write_bytes("s.pickle", ok, sizeof(ok) - 1);
	char why[512];
	msim_trace_t *t;
	ck_assert_int_eq(msim_trace_open(p, NULL, &t, why, sizeof(why)), 0);
	msim_req_t r;
	int rc;
	/* No trace: the live block is seeded, in its segment. */
	while ((rc = msim_trace_next(t, &r)) == 1)
		;
	ck_assert_msg(rc == 0, "%s", msim_trace_errmsg(t));
	msim_trace_seed_t sd;
	msim_trace_seeding(t, &sd);
	ck_assert_uint_eq(sd.from_snapshot, 1);
	ck_assert_uint_eq(sd.segments, 1);
	const msim_snap_segment_t *g;
	size_t n;
	ck_assert_int_eq(msim_trace_segments(t, &g, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(g[0].addr, 16);
	ck_assert_uint_eq(g[0].total_size, 32);
	ck_assert_uint_eq(g[0].allocated_size, 16);
	ck_assert(!g[0].large);
	ck_assert_uint_eq(g[0].nblocks, 2);
	ck_assert_uint_eq(g[0].blocks[0].state, MSIM_SNAP_ALLOCATED);
	ck_assert_uint_eq(g[0].blocks[1].addr, 32);
	ck_assert_uint_eq(g[0].blocks[1].state, MSIM_SNAP_INACTIVE);
	msim_trace_close(t);
}
END_TEST

typedef struct hostile_s {
	const char *name;
	const char *data;
	size_t len;
	const char *why;
} hostile_t;

#define H(name, lit, why) {name, lit, sizeof(lit) - 1, why}

START_TEST(test_hostile_segments_fail_cleanly)
{
	static const hostile_t c[] = {
		H("no total_size", ROOT "\x8c\x07" "addressK\x10" TAIL,
		  "segment without 'address' or 'total_size'"),
		H("block without state", ROOT SEG_FIELDS "\x8c\x06" "blocks]("
		  "}(\x8c\x07" "addressK\x10" "\x8c\x04" "sizeK\x10" "u"
		  "e" TAIL, "block without"),
		H("unknown state", ROOT SEG_FIELDS "\x8c\x06" "blocks]("
		  BLOCK("\x10", "\x8c\x03" "odd") "e" TAIL, "unknown state"),
		H("bad segment_type", ROOT "\x8c\x0c" "segment_type"
		  "\x8c\x06" "medium" TAIL, "segment_type"),
		H("negative size", ROOT "\x8c\x0a" "total_size"
		  "J\xff\xff\xff\xff" TAIL, "negative or oversized"),
		H("string size", ROOT "\x8c\x07" "address\x8c\x01" "x" TAIL,
		  "not a number"),
		H("huge key", ROOT "\x8d\xff\xff\xff\xff\xff\xff\xff\x0f" TAIL,
		  "past the end of the file"),
		H("huge blocks", ROOT SEG_FIELDS "\x8c\x06" "blocks]("
		  "}(\x8c\x07" "address\x8e\xff\xff\xff\xff\xff\x00\x00\x00"
		  TAIL, "past the end of the file"),
		H("truncated state", ROOT SEG_FIELDS "\x8c\x06" "blocks](",
		  "truncated pickle"),
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *p = write_bytes("s.pickle", c[i].data, c[i].len);
		char err[512] = "";
		msim_trace_t *t;
		int rc = msim_trace_open(p, NULL, &t, err, sizeof(err));
		ck_assert_msg(rc == 0, "%s: %s", c[i].name, err);
		msim_req_t r;
		while ((rc = msim_trace_next(t, &r)) == 1)
			;
		snprintf(err, sizeof(err), "%s", msim_trace_errmsg(t));
		msim_trace_close(t);
		ck_assert_msg(rc < 0, "%s: accepted", c[i].name);
		ck_assert_msg(strstr(err, p) && strstr(err, "byte ") &&
			      strstr(err, c[i].why), "%s: '%s'", c[i].name,
			      err);
	}
}
END_TEST

/* Deep segment lists: a million lists, marks or segment dicts inside
 * "segments" (or a block list) stop at the reader's bounds. */
START_TEST(test_deep_segments_are_bounded)
{
	/* Inside a segment dict; inside the segments list; inside a
	 * segment's block list (SEG_FIELDS holds NULs: lengths apart). */
	static const struct {
		const char *s;
		size_t len;
	} heads[] = {
		{ROOT, sizeof(ROOT) - 1},
		{"\x80\x04}(\x8c\x08" "segments](",
		 sizeof("\x80\x04}(\x8c\x08" "segments](") - 1},
		{ROOT SEG_FIELDS "\x8c\x06" "blocks](",
		 sizeof(ROOT SEG_FIELDS "\x8c\x06" "blocks](") - 1},
	};
	static const char fill[] = {']', '(', '}'};
	size_t n = 1000000;
	for (size_t h = 0; h < sizeof(heads) / sizeof(heads[0]); h++)
		for (size_t f = 0; f < sizeof(fill); f++) {
			size_t hl = heads[h].len;
			char *buf = malloc(hl + n + 1);
			memcpy(buf, heads[h].s, hl);
			memset(buf + hl, fill[f], n);
			buf[hl + n] = '.';
			const char *p = write_bytes("s.pickle", buf, hl + n + 1);
			free(buf);
			char err[512] = "";
			msim_trace_t *t;
			ck_assert_int_eq(msim_trace_open(p, NULL, &t, err,
							 sizeof(err)), 0);
			msim_req_t r;
			int rc = msim_trace_next(t, &r);
			snprintf(err, sizeof(err), "%s", msim_trace_errmsg(t));
			msim_trace_close(t);
			ck_assert_int_lt(rc, 0);
			ck_assert_msg(strstr(err, "nests too deep") &&
				      strstr(err, "byte "), "%s", err);
		}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("trace_segments");
	TCase *tc = tcase_create("segments");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_loop_test(tc, test_segments_sum_to_captured_reserved, 0,
			    NWORKLOADS);
	tcase_add_loop_test(tc, test_recording_ends_in_snapshot_state, 0,
			    NWORKLOADS);
	tcase_add_test(tc, test_no_state_and_differences);
	tcase_add_test(tc, test_small_snapshot_reads);
	tcase_add_test(tc, test_partial_history_seeds_the_start);
	tcase_add_test(tc, test_hostile_segments_fail_cleanly);
	tcase_add_test(tc, test_deep_segments_are_bounded);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
