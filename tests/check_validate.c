/*
 * Validation mode without a GPU: the torch bridge's protocol (against a
 * stand-in for python), and the pytorch policy against what PyTorch's own
 * allocator measured on an H200 (tests/data/validate/measured.db, written
 * by validate/device/run_h200.sh): every measured torch-mode replay is simulated
 * and every memory_stats() key and device event must agree.
 */
#include <config.h>

#include <check.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policies/registry.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "sim/metrics.h"
#include "testutil.h"
#include "traces/trace.h"
#include "validate/validate.h"

START_TEST(test_torch_bridge_protocol)
{
	char script[] = "/tmp/memsim-bridge-XXXXXX";
	int fd = mkstemp(script);
	ck_assert_int_ge(fd, 0);
	const char *body =
		"# stand-in for torch_replay.py: check the requests, answer\n"
		"[ \"$(grep -c '^a ' \"$1\")\" = 2 ] || exit 3\n"
		"[ \"$(grep -c '^f ' \"$1\")\" = 1 ] || exit 4\n"
		"[ \"$2\" = 1048576 ] || exit 5\n"
		"[ \"$PYTORCH_CUDA_ALLOC_CONF\" = max_split_size_mb:64 ] || exit 6\n"
		"echo 'meta device Fake_GPU'\n"
		"echo 'meta torch 2.11.0'\n"
		"echo 'stat reserved_bytes.all.peak 2097152'\n"
		"echo 'stat allocated_bytes.large_pool.current 512'\n"
		"echo 'stat oversize_segments.peak 1'\n"
		"echo 'stat num_ooms 1'\n"
		"echo 'event 0 segment_alloc 4096 2097152'\n"
		"echo 'event 2 oom 0 1024'\n"
		"echo 'oom 2'\n";
	ck_assert_int_eq(write(fd, body, strlen(body)), (ssize_t)strlen(body));
	close(fd);
	char trace[] = "/tmp/memsim-bt-XXXXXX";
	fd = mkstemp(trace);
	const char *csv = "action,addr,size\nalloc,4096,100\nfree_completed,4096,"
			  "100\nalloc,8192,1000\n";
	ck_assert_int_eq(write(fd, csv, strlen(csv)), (ssize_t)strlen(csv));
	close(fd);
	msim_trace_t *t;
	char why[512];
	ck_assert_int_eq(msim_trace_open(trace, NULL, &t, why, sizeof(why)), 0);
	msim_measured_t m;
	int rc = msim_validate_torch(t, "/bin/sh", script, "max_split_size_mb:64",
				     1048576, &m, why, sizeof(why));
	ck_assert_msg(rc == 0, "%s", why);
	ck_assert_str_eq(m.device, "Fake_GPU");
	ck_assert_ptr_nonnull(strstr(m.versions, "torch 2.11.0"));
	ck_assert_int_eq(m.st.reserved_bytes[MSIM_POOL_ALL].peak, 2097152);
	ck_assert_int_eq(m.st.allocated_bytes[MSIM_POOL_LARGE].current, 512);
	ck_assert_int_eq(m.st.oversize_segments.peak, 1);
	ck_assert_int_eq(m.st.num_ooms, 1);
	ck_assert_uint_eq(m.nevents, 2);
	ck_assert_int_eq(m.events[1].action, MSIM_SEG_OOM);
	ck_assert_int_eq(m.oom_request, 2);
	ck_assert_uint_eq(m.requests, 3);
	msim_measured_clear(&m);
	msim_trace_close(t);
	/* A bridge that fails is an error, not a result. */
	ck_assert_int_eq(msim_trace_open(trace, NULL, &t, why, sizeof(why)), 0);
	rc = msim_validate_torch(t, "/bin/sh", script, "", 0, &m, why,
				 sizeof(why));
	ck_assert_int_eq(rc, MSIM_EIO);
	ck_assert_ptr_nonnull(strstr(why, "failed"));
	msim_trace_close(t);
	unlink(script);
	unlink(trace);
}
END_TEST

/* The measured torch-mode runs: (trace file, params, cap, run id). */
typedef struct mrun_s {
	char trace[64], params[128];
	uint64_t cap;
	int64_t id;
} mrun_t;

static mrun_t mruns[64];
static int nmruns;
static sqlite3 *mdb;

static void
load_measured(void)
{
	if (sqlite3_open_v2(test_data("validate/measured.db"), &mdb,
			    SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		fprintf(stderr, "cannot open measured.db\n");
		exit(EXIT_FAILURE);
	}
	/* A fixture in WAL mode needs its -wal and -shm beside it, and even
	 * a read-only reader writes the -shm: kept in rollback-journal mode,
	 * the .db is the whole fixture and reading it writes nothing. */
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(mdb, "PRAGMA journal_mode", -1, &q, NULL) !=
	    SQLITE_OK || sqlite3_step(q) != SQLITE_ROW ||
	    !strcmp((const char *)sqlite3_column_text(q, 0), "wal")) {
		fprintf(stderr, "measured.db is in WAL mode (or unreadable): "
			"check it in after PRAGMA journal_mode=DELETE\n");
		exit(EXIT_FAILURE);
	}
	sqlite3_finalize(q);
	sqlite3_prepare_v2(mdb, "SELECT trace_path, params, cap_bytes, id FROM "
			   "runs WHERE kind='measured' AND policy='pytorch' "
			   "ORDER BY id", -1, &q, NULL);
	while (sqlite3_step(q) == SQLITE_ROW && nmruns < 64) {
		mrun_t *r = &mruns[nmruns++];
		const char *p = (const char *)sqlite3_column_text(q, 0);
		const char *slash = strrchr(p, '/');
		snprintf(r->trace, sizeof(r->trace), "%s", slash ? slash + 1 : p);
		snprintf(r->params, sizeof(r->params), "%s",
			 (const char *)sqlite3_column_text(q, 1));
		r->cap = (uint64_t)sqlite3_column_int64(q, 2);
		r->id = sqlite3_column_int64(q, 3);
	}
	sqlite3_finalize(q);
}

typedef struct cmp_s {
	int64_t run_id;
	const char *what;
	int bad;
} cmp_t;

static void
cmp_stat(const char *name, int64_t value, void *ctx)
{
	cmp_t *c = ctx;
	sqlite3_stmt *q;
	sqlite3_prepare_v2(mdb, "SELECT value FROM stats WHERE run_id=? AND "
			   "name=?", -1, &q, NULL);
	sqlite3_bind_int64(q, 1, c->run_id);
	sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	int64_t want = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	ck_assert_msg(value == want, "%s: %s simulated %" PRId64 ", measured %"
		      PRId64, c->what, name, value, want);
}

START_TEST(test_simulation_equals_torch_mode)
{
	const mrun_t *r = &mruns[_i];
	char path[128], why[512];
	snprintf(path, sizeof(path), "traces/%s", r->trace);
	msim_trace_t *t;
	ck_assert_int_eq(msim_trace_open(test_data(path), NULL, &t, why,
					 sizeof(why)), 0);
	const msim_policy_ops_t *ops = msim_policy_find("pytorch");
	msim_params_t pv;
	ck_assert_int_eq(msim_params_init(&pv, ops->params), 0);
	ck_assert_int_eq(msim_params_parse(&pv, r->params), 0);
	msim_sim_config_t cfg = {
		.policy = msim_policy_find("pytorch"),
		.source = msim_trace_source(t),
		.params = &pv,
		.device = {.log_events = 1},
		.fraction = r->cap ? (double)r->cap / (double)MSIM_H200_BYTES : 0,
	};
	msim_sim_t *sim;
	ck_assert_int_eq(msim_sim_new(&cfg, &sim, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_sim_run(sim), 0);
	msim_stats_t st;
	msim_sim_stats(sim, &st);
	char what[256];
	snprintf(what, sizeof(what), "%s %s cap %" PRIu64, r->trace, r->params,
		 r->cap);
	cmp_t c = {r->id, what, 0};
	msim_stats_foreach(&st, cmp_stat, &c);
	/* The device events, in order. */
	size_t n;
	const msim_seg_event_t *ev = msim_device_events(msim_sim_device(sim),
							&n);
	sqlite3_stmt *q;
	sqlite3_prepare_v2(mdb, "SELECT request, action, size FROM "
			   "segment_events WHERE run_id=? ORDER BY seq", -1, &q,
			   NULL);
	sqlite3_bind_int64(q, 1, r->id);
	size_t k = 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		ck_assert_msg(k < n, "%s: fewer simulated events", what);
		ck_assert_uint_eq(ev[k].request,
				  (uint64_t)sqlite3_column_int64(q, 0));
		ck_assert_str_eq(msim_seg_action_name(ev[k].action),
				 (const char *)sqlite3_column_text(q, 1));
		ck_assert_uint_eq(ev[k].size, (uint64_t)sqlite3_column_int64(q, 2));
		k++;
	}
	sqlite3_finalize(q);
	ck_assert_msg(k == n, "%s: %zu simulated events, %zu measured", what, n,
		      k);
	msim_sim_destroy(sim);
	msim_trace_close(t);
	msim_params_clear(&pv);
}
END_TEST

int
main(void)
{
	load_measured();
	Suite *s = suite_create("validate");
	TCase *tc = tcase_create("validate");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_torch_bridge_protocol);
	tcase_add_loop_test(tc, test_simulation_equals_torch_mode, 0, nmruns);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	sqlite3_close(mdb);
	if (nmruns < 34) {
		fprintf(stderr, "measured.db has %d torch runs, expected 34\n",
			nmruns);
		return EXIT_FAILURE;
	}
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
