/*
 * Sweeps and the schema-2 store: planning (grid order, de-duplication,
 * shards, seeded random draws, settings files), setting keys and the store
 * modes, the migration of schema 1 files, merging, and resuming; the same
 * rows from one worker and from several; sweeps
 * over strategies of a model spec (equal to generating and running each
 * setting alone) and the dtype transform of a recording.
 */
#include <config.h>

#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policies/registry.h"
#include "sim/error.h"
#include "sim/results.h"
#include "lab/sweep.h"
#include "traces/gen_model.h"
#include "traces/model_spec.h"
#include "testutil.h"

static char path[64], path2[64];

static void
unlink_db(const char *p)
{
	char q[96];
	unlink(p);
	snprintf(q, sizeof(q), "%s-wal", p);
	unlink(q);
	snprintf(q, sizeof(q), "%s-shm", p);
	unlink(q);
}

static void
setup(void)
{
	snprintf(path, sizeof(path), "/tmp/memsim-sweep-XXXXXX");
	snprintf(path2, sizeof(path2), "/tmp/memsim-sweep2-XXXXXX");
	close(mkstemp(path));
	close(mkstemp(path2));
	unlink(path);
	unlink(path2);
}

static void
teardown(void)
{
	unlink_db(path);
	unlink_db(path2);
}

static int64_t
query_int(const char *file, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_open(file, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return v;
}

/* plan()'s spec asks for the traces to be read while it plans. */
static bool preload;

#define TINY_MODEL "model:arch=gpt2,layers=2,hidden=32,heads=2,vocab=100," \
		   "positions=64,batch=1,seq=16,steps=1"

static msim_sweep_t *
plan(const char *const *grid, size_t ngrid, int shard, int nshards,
     size_t random, uint64_t seed)
{
	static char trace[4096];
	snprintf(trace, sizeof(trace), "%s",
		 test_data("traces/bert_infer_varlen.csv"));
	const char *traces[] = {trace};
	msim_sweep_spec_t spec = {
		.traces = traces, .ntraces = 1, .grid = grid, .ngrid = ngrid,
		.shard_index = shard, .shard_count = nshards,
		.random = random, .seed = seed, .preload = preload,
	};
	msim_sweep_t *sw = NULL;
	char why[512];
	int rc = msim_sweep_plan(&spec, &sw, why, sizeof(why));
	ck_assert_msg(rc == 0, "%s", why);
	return sw;
}

/* The cartesian product, the last axis turning fastest; "none" is the
 * default, so it is the same setting as leaving the key out. */
START_TEST(test_grid_order_and_dedup)
{
	const char *grid[] = {"max_split_size_mb=none,128,none",
			      "garbage_collection_threshold=0,0.6,0.8"};
	msim_sweep_t *sw = plan(grid, 2, 0, 0, 0, 0);
	ck_assert_uint_eq(msim_sweep_total(sw), 6);
	ck_assert_uint_eq(msim_sweep_count(sw), 6);
	ck_assert_str_eq(msim_sweep_setting(sw, 0)->params, "");
	ck_assert_str_eq(msim_sweep_setting(sw, 1)->params,
			 "garbage_collection_threshold:0.6");
	ck_assert_str_eq(msim_sweep_setting(sw, 3)->params,
			 "max_split_size_mb:128");
	ck_assert_ptr_nonnull(strstr(msim_sweep_setting(sw, 0)->key,
				     "|pytorch||0|model|"));
	msim_sweep_destroy(sw);
}
END_TEST

/* Shards are disjoint, cover the sweep, and share its spec hash. */
START_TEST(test_shards_partition)
{
	const char *grid[] = {"max_split_size_mb=none,64,128,256,512",
			      "roundup_power2_divisions=0,2,4"};
	msim_sweep_t *all = plan(grid, 2, 0, 0, 0, 0);
	size_t seen[64] = {0}, n = 0;
	for (int i = 1; i <= 3; i++) {
		msim_sweep_t *sh = plan(grid, 2, i, 3, 0, 0);
		ck_assert_str_eq(msim_sweep_spec_hash(sh),
				 msim_sweep_spec_hash(all));
		for (size_t k = 0; k < msim_sweep_count(sh); k++) {
			const char *key = msim_sweep_setting(sh, k)->key;
			size_t j = 0;
			while (strcmp(msim_sweep_setting(all, j)->key, key))
				j++;
			seen[j]++;
			n++;
		}
		msim_sweep_destroy(sh);
	}
	ck_assert_uint_eq(n, msim_sweep_total(all));
	for (size_t j = 0; j < msim_sweep_total(all); j++)
		ck_assert_uint_eq(seen[j], 1);
	msim_sweep_destroy(all);
}
END_TEST

/* The same seed draws the same settings; ranges draw inside them. */
START_TEST(test_random_is_seeded)
{
	const char *grid[] = {"max_split_size_mb=none,64,128,256",
			      "garbage_collection_threshold=0.5..0.9"};
	msim_sweep_t *a = plan(grid, 2, 0, 0, 10, 42);
	msim_sweep_t *b = plan(grid, 2, 0, 0, 10, 42);
	msim_sweep_t *c = plan(grid, 2, 0, 0, 10, 43);
	ck_assert_uint_eq(msim_sweep_total(a), msim_sweep_total(b));
	int differ = msim_sweep_total(a) != msim_sweep_total(c);
	for (size_t k = 0; k < msim_sweep_total(a); k++) {
		const msim_setting_t *s = msim_sweep_setting(a, k);
		ck_assert_str_eq(s->key, msim_sweep_setting(b, k)->key);
		const char *gc = strstr(s->params, "threshold:");
		ck_assert_ptr_nonnull(gc);
		double v = atof(gc + 10);
		ck_assert(v >= 0.5 && v <= 0.9);
		if (k < msim_sweep_total(c))
			differ |= strcmp(s->key, msim_sweep_setting(c, k)->key);
	}
	ck_assert(differ);
	msim_sweep_destroy(a);
	msim_sweep_destroy(b);
	msim_sweep_destroy(c);
}
END_TEST

/* A settings file: PyTorch syntax with brackets, comments, and errors
 * naming the line. */
START_TEST(test_settings_file)
{
	FILE *fp = fopen(path2, "w");
	fputs("# two settings\n"
	      "roundup_power2_divisions:[256:1,512:2,>:4], max_split_size_mb:128\n"
	      "\n"
	      "garbage_collection_threshold=0.7  # = works too\n", fp);
	fclose(fp);
	char trace[4096];
	snprintf(trace, sizeof(trace), "%s",
		 test_data("traces/bert_infer_varlen.csv"));
	const char *traces[] = {trace};
	msim_sweep_spec_t spec = {.traces = traces, .ntraces = 1,
				  .settings_file = path2};
	msim_sweep_t *sw;
	char why[512];
	ck_assert_int_eq(msim_sweep_plan(&spec, &sw, why, sizeof(why)), 0);
	ck_assert_uint_eq(msim_sweep_total(sw), 2);
	ck_assert_ptr_nonnull(strstr(msim_sweep_setting(sw, 0)->params,
				     "[256:1,512:2,>:4]"));
	ck_assert_ptr_nonnull(strstr(msim_sweep_setting(sw, 0)->params,
				     "max_split_size_mb:128"));
	msim_sweep_destroy(sw);
	fp = fopen(path2, "w");
	fputs("max_split_size_mb:128\nfoo\n", fp);
	fclose(fp);
	ck_assert_int_ne(msim_sweep_plan(&spec, &sw, why, sizeof(why)), 0);
	ck_assert_msg(strstr(why, ":2: 'foo' is not key:value"), "%s", why);
}
END_TEST

static int64_t
store(msim_db_t *db, const char *params, int64_t peak, int mode,
      int *existed)
{
	msim_stats_t st = {0};
	st.reserved_bytes[0].peak = peak;
	msim_summary_t sum = {.requests = 1, .oom_request = -1};
	msim_run_info_t info = {.trace_path = "t.csv", .trace_hash = "abc",
				.trace_format = "csv", .policy = "pytorch",
				.params = params, .addresses = "model"};
	int64_t id = -1;
	ck_assert_int_eq(msim_db_store_run_mode(db, &info, &sum, &st, NULL,
						NULL, 0, mode, &id, existed),
			 0);
	return id;
}

/* SKIP keeps the stored run; REPLACE rewrites it under the same id. */
START_TEST(test_store_modes)
{
	msim_db_t *db;
	char why[256];
	int existed;
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	int64_t a = store(db, "", 10, MSIM_DB_SKIP, &existed);
	ck_assert_int_eq(existed, 0);
	int64_t b = store(db, "", 20, MSIM_DB_SKIP, &existed);
	ck_assert_int_eq(existed, 1);
	ck_assert_int_eq(a, b);
	int64_t c = store(db, "max_split_size_mb:128", 30, MSIM_DB_SKIP,
			  &existed);
	ck_assert_int_ne(a, c);
	int64_t d = store(db, "", 40, MSIM_DB_REPLACE, &existed);
	ck_assert_int_eq(existed, 1);
	ck_assert_int_eq(a, d);
	msim_db_close(db);
	ck_assert_int_eq(query_int(path, "SELECT count(*) FROM runs"), 2);
	ck_assert_int_eq(query_int(path, "SELECT peak_reserved_bytes FROM runs"
				   " ORDER BY id"), 40);
	ck_assert_int_eq(query_int(path, "SELECT count(*) FROM stats"),
			 2 * 122);
}
END_TEST

/* A schema 1 file opens as schema 2; every row stays; of a setting stored
 * twice only the newest gets the key. */
START_TEST(test_migrate_schema1)
{
	sqlite3 *s;
	ck_assert_int_eq(sqlite3_open(path, &s), SQLITE_OK);
	const char *v1 =
		"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
		"INSERT INTO meta VALUES('schema_version','1');"
		"CREATE TABLE runs(id INTEGER PRIMARY KEY, created TEXT NOT NULL"
		" DEFAULT 'x', memsim_version TEXT NOT NULL, kind TEXT NOT NULL,"
		" trace_path TEXT NOT NULL, trace_hash TEXT NOT NULL,"
		" trace_format TEXT, policy TEXT NOT NULL, params TEXT NOT NULL,"
		" cap_bytes INTEGER NOT NULL, addresses TEXT, requests INTEGER"
		" NOT NULL, oom_request INTEGER NOT NULL, peak_reserved_bytes"
		" INTEGER NOT NULL, peak_allocated_bytes INTEGER NOT NULL,"
		" peak_requested_bytes INTEGER NOT NULL, frag_at_peak REAL NOT"
		" NULL, frag_mean REAL NOT NULL, ext_frag_max REAL NOT NULL,"
		" num_device_alloc INTEGER NOT NULL, num_device_free INTEGER NOT"
		" NULL, num_alloc_retries INTEGER NOT NULL, num_ooms INTEGER NOT"
		" NULL, sim_time_ns INTEGER NOT NULL, wall_ms REAL NOT NULL);"
		"INSERT INTO runs(memsim_version, kind, trace_path, trace_hash,"
		" policy, params, cap_bytes, addresses, requests, oom_request,"
		" peak_reserved_bytes, peak_allocated_bytes, peak_requested_bytes,"
		" frag_at_peak, frag_mean, ext_frag_max, num_device_alloc,"
		" num_device_free, num_alloc_retries, num_ooms, sim_time_ns,"
		" wall_ms) VALUES"
		" ('0.1','simulated','t','abc','pytorch','',0,'model',1,-1,1,1,1,"
		"  0,0,0,1,0,0,0,0,1),"
		" ('0.1','simulated','t','abc','pytorch','',0,'model',1,-1,2,1,1,"
		"  0,0,0,1,0,0,0,0,1),"
		" ('0.1','simulated','t','abc','pytorch','max_split_size_mb:128',"
		"  0,'model',1,-1,3,1,1,0,0,0,1,0,0,0,0,1);";
	ck_assert_int_eq(sqlite3_exec(s, v1, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(s);
	msim_db_t *db;
	char why[256];
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	int existed;
	/* The newest of the duplicates is the setting's run. */
	ck_assert_int_eq(store(db, "", 9, MSIM_DB_SKIP, &existed), 2);
	ck_assert_int_eq(existed, 1);
	msim_db_close(db);
	/* Migrated through 2 to the current schema (strategy added). */
	ck_assert_int_eq(query_int(path, "SELECT value FROM meta WHERE"
				   " key='schema_version'"),
			 MSIM_DB_SCHEMA_VERSION);
	ck_assert_int_eq(query_int(path, "SELECT count(*) FROM runs WHERE"
				   " strategy IS NULL"), 3);
	ck_assert_int_eq(query_int(path, "SELECT count(*) FROM runs"), 3);
	ck_assert_int_eq(query_int(path, "SELECT count(setting_key) FROM"
				   " runs"), 2);
}
END_TEST

/* Merging copies new settings with their rows and skips known ones. */
START_TEST(test_merge)
{
	msim_db_t *a, *b;
	char why[256];
	int existed;
	ck_assert_int_eq(msim_db_open(path, &a, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_db_open(path2, &b, why, sizeof(why)), 0);
	store(a, "", 1, MSIM_DB_SKIP, &existed);
	store(b, "", 1, MSIM_DB_SKIP, &existed);
	store(b, "max_split_size_mb:128", 2, MSIM_DB_SKIP, &existed);
	msim_db_close(b);
	int64_t added, skipped;
	ck_assert_int_eq(msim_db_merge(a, path2, &added, &skipped), 0);
	ck_assert_int_eq(added, 1);
	ck_assert_int_eq(skipped, 1);
	ck_assert_int_eq(msim_db_merge(a, path2, &added, &skipped), 0);
	ck_assert_int_eq(added, 0);
	ck_assert_int_eq(msim_db_merge(a, "/nonexistent.db", &added,
				       &skipped), MSIM_ENOTFOUND);
	msim_db_close(a);
	ck_assert_int_eq(query_int(path, "SELECT count(*) FROM runs"), 2);
	ck_assert_int_eq(query_int(path, "SELECT count(*) FROM stats"),
			 2 * 122);
}
END_TEST

/* A sweep run in workers stores every setting once; run again, nothing
 * runs; the sweep's runs are recorded. */
START_TEST(test_exec_and_resume)
{
	const char *grid[] = {"max_split_size_mb=none,64,128,256",
			      "garbage_collection_threshold=0,0.7"};
	msim_sweep_t *sw = plan(grid, 2, 0, 0, 0, 0);
	msim_sweep_opts_t o = {.db_path = path, .jobs = 2};
	msim_sweep_result_t r;
	char why[512];
	ck_assert_int_eq(msim_sweep_exec(sw, &o, &r, why, sizeof(why)), 0);
	ck_assert_uint_eq(r.ran, 8);
	ck_assert_uint_eq(r.failed, 0);
	ck_assert_int_eq(msim_sweep_exec(sw, &o, &r, why, sizeof(why)), 0);
	ck_assert_uint_eq(r.ran, 0);
	ck_assert_uint_eq(r.skipped, 8);
	msim_sweep_destroy(sw);
	ck_assert_int_eq(query_int(path, "SELECT count(DISTINCT setting_key)"
				   " FROM runs"), 8);
	ck_assert_int_eq(query_int(path, "SELECT count(*) FROM sweep_runs"), 8);
	ck_assert_int_eq(query_int(path, "SELECT count(*) FROM sweeps"), 1);
}
END_TEST

/* Every row a view shows of file's runs, each run named by its setting
 * key rather than its id (the order workers store runs in), one text. */
static char *
rows_by_key(const char *file, const char *view, const char *cols)
{
	char sql[1024];
	snprintf(sql, sizeof(sql), "SELECT group_concat(x, ';') FROM (SELECT"
		 " r.setting_key || '|' || %s AS x FROM %s v JOIN runs r"
		 " ON r.id = v.run_id ORDER BY x)", cols, view);
	sqlite3 *db;
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_open(file, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	const char *t = (const char *)sqlite3_column_text(q, 0);
	char *copy = strdup(t ? t : "");
	sqlite3_finalize(q);
	sqlite3_close(db);
	return copy;
}

/* One worker and three (taking turns at the writer lock, the parent
 * checkpointing between their commits) store the same rows: every view,
 * run by run; and the file is whole. */
START_TEST(test_jobs_same_rows)
{
	const char *grid[] = {"max_split_size_mb=none,64,256",
			      "garbage_collection_threshold=0,0.7",
			      "roundup_power2_divisions=1,4"};
	msim_sweep_t *sw = plan(grid, 3, 0, 0, 0, 0);
	msim_sweep_result_t r;
	char why[512];
	msim_sweep_opts_t o1 = {.db_path = path, .jobs = 1};
	ck_assert_int_eq(msim_sweep_exec(sw, &o1, &r, why, sizeof(why)), 0);
	ck_assert_uint_eq(r.ran, 12);
	msim_sweep_destroy(sw);
	/* The second from a plan that read the trace while planning. */
	preload = true;
	sw = plan(grid, 3, 0, 0, 0, 0);
	preload = false;
	msim_sweep_opts_t o3 = {.db_path = path2, .jobs = 3};
	ck_assert_int_eq(msim_sweep_exec(sw, &o3, &r, why, sizeof(why)), 0);
	ck_assert_uint_eq(r.ran, 12);
	ck_assert_uint_eq(r.failed, 0);
	msim_sweep_destroy(sw);
	/* The parent's connection, closed last, copied the WAL (started
	 * over during the sweep) and deleted it. */
	char wal[96];
	snprintf(wal, sizeof(wal), "%s-wal", path2);
	ck_assert_int_eq(access(wal, F_OK), -1);
	static const char *const views[][2] = {
		{"runs", "v.policy || v.params || v.cap_bytes || '|' ||"
		 " v.requests || '|' || v.oom_request || '|' ||"
		 " v.peak_reserved_bytes || '|' || v.peak_allocated_bytes ||"
		 " '|' || v.frag_mean || '|' || v.num_device_alloc || '|' ||"
		 " v.sim_time_ns"},
		{"stats", "v.name || '=' || v.value"},
		{"timeline", "v.request || ',' || v.time_ns || ',' ||"
		 " v.allocated_bytes || ',' || v.reserved_bytes || ',' ||"
		 " v.active_bytes || ',' || v.requested_bytes || ',' ||"
		 " v.largest_free_bytes || ',' || v.free_bytes"},
		{"segment_events", "v.seq || ',' || v.request || ',' ||"
		 " v.action || ',' || v.addr || ',' || v.size"},
		{"peak_blocks", "v.addr || ',' || v.size || ',' || v.state"},
		{"run_meta", "v.key || '=' || v.value"},
	};
	for (size_t k = 0; k < sizeof(views) / sizeof(views[0]); k++) {
		/* runs is its own view: its rows join themselves. */
		char view[64];
		snprintf(view, sizeof(view), "%s", views[k][0]);
		char *a, *b;
		if (!strcmp(view, "runs")) {
			a = rows_by_key(path, "(SELECT *, id AS run_id FROM"
					" runs)", views[k][1]);
			b = rows_by_key(path2, "(SELECT *, id AS run_id FROM"
					" runs)", views[k][1]);
		} else {
			a = rows_by_key(path, view, views[k][1]);
			b = rows_by_key(path2, view, views[k][1]);
		}
		ck_assert_msg(strlen(a) > 100, "%s: %zu bytes", view, strlen(a));
		ck_assert_msg(!strcmp(a, b), "%s differs between -j 1 and -j 3",
			      view);
		free(a);
		free(b);
	}
	ck_assert_int_eq(query_int(path2, "SELECT count(*) FROM"
				   " pragma_integrity_check WHERE"
				   " integrity_check <> 'ok'"), 0);
	ck_assert_int_eq(query_int(path2, "SELECT count(*) FROM sweep_runs"),
			 12);
}
END_TEST


/* A plan that reads its traces while planning (msim_sweep_spec_t's
 * preload) and is destroyed unrun, or fails on a later trace, leaves
 * nothing behind (ASan's leak check); a trace read twice in one spec is
 * one setting list. */
START_TEST(test_preload_unrun)
{
	static char trace[4096];
	snprintf(trace, sizeof(trace), "%s",
		 test_data("traces/bert_infer_varlen.csv"));
	const char *grid[] = {"max_split_size_mb=64,256"};
	const char *traces[] = {trace, TINY_MODEL, "/nonexistent/x.csv"};
	msim_sweep_spec_t spec = {.traces = traces, .ntraces = 2,
				  .grid = grid, .ngrid = 1, .seed = 1,
				  .preload = true};
	msim_sweep_t *sw = NULL;
	char why[512];
	ck_assert_int_eq(msim_sweep_plan(&spec, &sw, why, sizeof(why)), 0);
	ck_assert_uint_eq(msim_sweep_count(sw), 4);
	msim_sweep_destroy(sw);
	spec.ntraces = 3;
	sw = NULL;
	ck_assert_int_ne(msim_sweep_plan(&spec, &sw, why, sizeof(why)), 0);
	ck_assert_ptr_null(sw);
	ck_assert_msg(strstr(why, "/nonexistent/x.csv"), "%s", why);
}
END_TEST

#define TINY "model:arch=gpt2,layers=4,hidden=64,heads=2,vocab=1000," \
	     "positions=128,batch=2,seq=64/32,steps=2"

/* Peak reserved and allocated of cfg generated and run alone, as
 * `memsim gen model` + `memsim run` would. */
static void
run_alone(const msim_model_cfg_t *cfg, int64_t *reserved, int64_t *alloc,
	  uint64_t *recompute)
{
	char why[256];
	msim_gen_t g;
	msim_gen_init(&g, false);
	ck_assert_int_eq(msim_model_generate(cfg, &g, why, sizeof(why)), 0);
	msim_sim_config_t c = {
		.policy = msim_policy_find("pytorch"),
		.source = msim_gen_source(&g),
		.device = {.capacity = MSIM_H200_BYTES},
	};
	msim_sim_t *sim;
	ck_assert_int_eq(msim_sim_new(&c, &sim, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_sim_run(sim), 0);
	msim_stats_t st;
	msim_sim_stats(sim, &st);
	*reserved = st.reserved_bytes[0].peak;
	*alloc = st.allocated_bytes[0].peak;
	*recompute = g.recompute;
	msim_sim_destroy(sim);
	msim_gen_clear(&g);
}

START_TEST(test_model_sweep_matches_gen)
{
	const char *traces[] = {TINY};
	const char *grid[] = {"dtype=fp32,bf16-amp,bf16",
			      "checkpoint=none,every:2,sqrt"};
	msim_sweep_spec_t spec = {.traces = traces, .ntraces = 1,
				  .grid = grid, .ngrid = 2};
	msim_sweep_t *sw;
	char why[512];
	ck_assert_msg(msim_sweep_plan(&spec, &sw, why, sizeof(why)) == 0,
		      "%s", why);
	ck_assert_uint_eq(msim_sweep_count(sw), 9);
	msim_sweep_opts_t o = {.db_path = path, .jobs = 2};
	msim_sweep_result_t r;
	ck_assert_int_eq(msim_sweep_exec(sw, &o, &r, why, sizeof(why)), 0);
	ck_assert_uint_eq(r.ran, 9);
	ck_assert_uint_eq(r.failed, 0);
	for (size_t i = 0; i < 9; i++) {
		const msim_setting_t *s = msim_sweep_setting(sw, i);
		char text[2048], sql[2048];
		snprintf(text, sizeof(text), "%s,%s", TINY, s->spec.strategy);
		msim_model_cfg_t cfg;
		ck_assert_int_eq(msim_model_spec_parse(text, &cfg, why,
						       sizeof(why)), 0);
		int64_t res, alloc;
		uint64_t rec;
		run_alone(&cfg, &res, &alloc, &rec);
		snprintf(sql, sizeof(sql), "SELECT peak_reserved_bytes FROM "
			 "runs WHERE strategy='%s' AND trace_format='model'",
			 s->spec.strategy);
		ck_assert_int_eq(query_int(path, sql), res);
		snprintf(sql, sizeof(sql), "SELECT peak_allocated_bytes FROM "
			 "runs WHERE strategy='%s'", s->spec.strategy);
		ck_assert_int_eq(query_int(path, sql), alloc);
		snprintf(sql, sizeof(sql), "SELECT CAST(m.value AS INTEGER) "
			 "FROM runs r JOIN run_meta m ON m.run_id=r.id WHERE "
			 "r.strategy='%s' AND m.key='recompute_layer_forwards'",
			 s->spec.strategy);
		ck_assert_int_eq(query_int(path, sql), (int64_t)rec);
		/* every:2 over 4 layers recomputes them all, each step */
		if (strstr(s->spec.strategy, "every:2"))
			ck_assert_uint_eq(rec, 4 * 2);
		if (strstr(s->spec.strategy, "=none"))
			ck_assert_uint_eq(rec, 0);
	}
	/* The strategies are part of the setting: a second sweep skips. */
	ck_assert_int_eq(msim_sweep_exec(sw, &o, &r, why, sizeof(why)), 0);
	ck_assert_uint_eq(r.skipped, 9);
	msim_sweep_destroy(sw);
	ck_assert_int_eq(query_int(path, "SELECT count(DISTINCT setting_key) "
				   "FROM runs WHERE setting_key LIKE "
				   "'%strategy=dtype=%'"), 9);
}
END_TEST

START_TEST(test_model_sweep_bad_keys)
{
	char why[512];
	msim_sweep_t *sw;
	const char *traces[] = {TINY};
	const char *g1[] = {"dtype=fp8"};
	msim_sweep_spec_t spec = {.traces = traces, .ntraces = 1,
				  .grid = g1, .ngrid = 1};
	ck_assert_int_eq(msim_sweep_plan(&spec, &sw, why, sizeof(why)),
			 MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "dtype"));
	/* checkpoint needs a model; a recording takes only dtype */
	static char trace[4096];
	snprintf(trace, sizeof(trace), "%s",
		 test_data("traces/bert_infer_varlen.csv"));
	const char *files[] = {trace};
	const char *g2[] = {"checkpoint=sqrt"};
	spec = (msim_sweep_spec_t){.traces = files, .ntraces = 1,
				   .grid = g2, .ngrid = 1};
	ck_assert_int_eq(msim_sweep_plan(&spec, &sw, why, sizeof(why)),
			 MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "needs a model spec"));
	const char *bad[] = {"model:layers=2", "model:arch=gpt2,seq=x",
			     "model:arch=gpt2,wings=2", "model:arch=gpt2,seq"};
	for (size_t i = 0; i < 4; i++) {
		spec = (msim_sweep_spec_t){.traces = &bad[i], .ntraces = 1};
		ck_assert_int_eq(msim_sweep_plan(&spec, &sw, why,
						 sizeof(why)), MSIM_EINVAL);
	}
}
END_TEST

/* Plans grid (one axis) over gpt2_fp32.csv, n times (labels: NULL or
 * one each), and checks that every setting then runs into path. */
static msim_sweep_t *
plan_fp32(size_t n, const char *const *labels, const char *grid)
{
	static char trace[4096];
	snprintf(trace, sizeof(trace), "%s",
		 test_data("traces/gpt2_fp32.csv"));
	const char *traces[] = {trace, trace};
	ck_assert_uint_le(n, 2);
	msim_sweep_spec_t spec = {.traces = traces, .ntraces = n,
				  .labels = labels, .grid = &grid, .ngrid = 1};
	msim_sweep_t *sw;
	char why[512];
	ck_assert_int_eq(msim_sweep_plan(&spec, &sw, why, sizeof(why)), 0);
	return sw;
}

static void
exec_all(msim_sweep_t *sw)
{
	char why[512];
	msim_sweep_opts_t o = {.db_path = path, .jobs = 1};
	msim_sweep_result_t r;
	ck_assert_int_eq(msim_sweep_exec(sw, &o, &r, why, sizeof(why)), 0);
	ck_assert_uint_eq(r.ran, msim_sweep_count(sw));
	msim_sweep_destroy(sw);
}

START_TEST(test_transform_sweep)
{
	exec_all(plan_fp32(1, NULL, "dtype=fp32,bf16-amp,bf16"));
	/* fp32 is the recording itself */
	ck_assert_int_eq(query_int(path, "SELECT peak_allocated_bytes FROM "
				   "runs WHERE strategy IS NULL"),
			 15776445440LL);
	/* classification: 148 parameters, 3 forwards given a cache */
	ck_assert_int_eq(query_int(path, "SELECT count(*) FROM run_meta WHERE"
				   " key='transform_params' AND value='148'"),
			 2);
	ck_assert_int_eq(query_int(path, "SELECT value FROM run_meta m JOIN "
				   "runs r ON r.id=m.run_id WHERE r.strategy="
				   "'transform:dtype=bf16-amp' AND m.key="
				   "'transform_cached_forwards'"), 3);
	int64_t amp = query_int(path, "SELECT peak_allocated_bytes FROM runs"
				" WHERE strategy='transform:dtype=bf16-amp'");
	int64_t bf16 = query_int(path, "SELECT peak_allocated_bytes FROM runs"
				 " WHERE strategy='transform:dtype=bf16'");
	ck_assert_int_lt(bf16, amp);
	ck_assert_int_lt(amp, 15776445440LL);
}
END_TEST

/* A sweep over recordings (memsim sweep -- COMMAND): each trace's label
 * is stored as its strategy and keeps its rows apart, even where two
 * recordings are the same file; a transform still applies before it. */
START_TEST(test_labelled_recordings)
{
	const char *labels[] = {"batch=2", "batch=4,checkpoint=sqrt"};
	msim_sweep_t *sw = plan_fp32(2, labels, "dtype=fp32,bf16-amp");
	ck_assert_uint_eq(msim_sweep_count(sw), 4);
	ck_assert_str_eq(msim_sweep_setting(sw, 0)->spec.strategy,
			 "record:batch=2");
	ck_assert_str_eq(msim_sweep_setting(sw, 1)->spec.strategy,
			 "transform:dtype=bf16-amp;record:batch=2");
	ck_assert_str_eq(msim_sweep_setting(sw, 2)->spec.strategy,
			 "record:batch=4,checkpoint=sqrt");
	ck_assert_str_ne(msim_sweep_setting(sw, 0)->key,
			 msim_sweep_setting(sw, 2)->key);
	exec_all(sw);
	/* the label changes nothing of the replay */
	ck_assert_int_eq(query_int(path, "SELECT count(*) FROM runs WHERE "
				   "strategy LIKE 'record:%' AND "
				   "peak_allocated_bytes=15776445440"), 2);
	ck_assert_int_eq(query_int(path, "SELECT value FROM run_meta m JOIN "
				   "runs r ON r.id=m.run_id WHERE r.strategy="
				   "'transform:dtype=bf16-amp;record:batch=2' "
				   "AND m.key='transform_cached_forwards'"), 3);
	ck_assert_int_lt(query_int(path, "SELECT max(peak_allocated_bytes) "
				   "FROM runs WHERE strategy LIKE "
				   "'transform:%'"), 15776445440LL);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("sweep");
	TCase *tc = tcase_create("sweep");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_grid_order_and_dedup);
	tcase_add_test(tc, test_shards_partition);
	tcase_add_test(tc, test_random_is_seeded);
	tcase_add_test(tc, test_settings_file);
	tcase_add_test(tc, test_store_modes);
	tcase_add_test(tc, test_migrate_schema1);
	tcase_add_test(tc, test_merge);
	tcase_add_test(tc, test_exec_and_resume);
	tcase_add_test(tc, test_jobs_same_rows);
	tcase_add_test(tc, test_preload_unrun);
	tcase_add_test(tc, test_model_sweep_matches_gen);
	tcase_add_test(tc, test_model_sweep_bad_keys);
	tcase_add_test(tc, test_transform_sweep);
	tcase_add_test(tc, test_labelled_recordings);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
