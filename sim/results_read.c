/*
 * Reading the results store (results.h): a run's row, its statistics,
 * metadata, timeline, segment events and blocks at peak, listings.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "sim/results_int.h"

/* ------------------------------------------------------------------ */
/* Reading                                                            */

/* Prepares sql, or fills db->errmsg: 0 or MSIM_EDB. */
static int
db_prepare(msim_db_t *db, const char *sql, sqlite3_stmt **q, const char *what)
{
	if (sqlite3_prepare_v2(db->db, sql, -1, q, NULL) != SQLITE_OK) {
		*q = NULL;
		return msim_dbi_fail(db, what);
	}
	return 0;
}

static char *
col_dup(sqlite3_stmt *q, int c, bool *oom)
{
	const char *s = (const char *)sqlite3_column_text(q, c);
	char *d = strdup(s ? s : "");
	if (!d)
		*oom = true;
	return d;
}

void
msim_db_run_clear(msim_db_run_t *r)
{
	if (!r)
		return;
	free(r->created);
	for (size_t c = 0; c < msim_db_run_ncols; c++) {
		const msim_db_col_t *col = &msim_db_run_cols[c];
		if (col->type == MSIM_COL_TEXT || col->type == MSIM_COL_KEY)
			free(*(char **)((char *)r + col->offset));
	}
	memset(r, 0, sizeof(*r));
}

int
msim_db_run_get(msim_db_t *db, int64_t id, msim_db_run_t *r)
{
	/* Columns a file of an older schema lacks read as NULL. */
	char cols[2048], sql[2560];
	msim_dbi_run_select(cols, sizeof(cols), db->version, NULL);
	snprintf(sql, sizeof(sql), "SELECT id, created, %s, (SELECT value"
		 " FROM stats s WHERE s.run_id=r.id AND"
		 " s.name='segment.all.peak') FROM runs r WHERE id=?", cols);
	sqlite3_stmt *q;
	memset(r, 0, sizeof(*r));
	if (db_prepare(db, sql, &q, "cannot read the run"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	int rc = sqlite3_step(q);
	if (rc != SQLITE_ROW) {
		if (rc == SQLITE_DONE)
			snprintf(db->errmsg, sizeof(db->errmsg), "%s: no run %"
				 PRId64, db->path, id);
		else
			msim_dbi_fail(db, "cannot read the run");
		sqlite3_finalize(q);
		return rc == SQLITE_DONE ? MSIM_ENOTFOUND : MSIM_EDB;
	}
	bool oom = false;
	int c = 0;
	r->id = sqlite3_column_int64(q, c++);
	r->created = col_dup(q, c++, &oom);
	for (size_t k = 0; k < msim_db_run_ncols; k++, c++) {
		const msim_db_col_t *col = &msim_db_run_cols[k];
		void *m = (char *)r + col->offset;
		switch (col->type) {
		case MSIM_COL_KEY:
			if (sqlite3_column_type(q, c) == SQLITE_NULL)
				break;
			/* fall through */
		case MSIM_COL_TEXT:
			*(char **)m = col_dup(q, c, &oom);
			break;
		case MSIM_COL_INT:
			*(int64_t *)m = sqlite3_column_int64(q, c);
			break;
		case MSIM_COL_UINT:
			*(uint64_t *)m = (uint64_t)sqlite3_column_int64(q, c);
			break;
		default:
			*(double *)m = sqlite3_column_double(q, c);
			break;
		}
	}
	r->segments_peak = sqlite3_column_int64(q, c++);
	sqlite3_finalize(q);
	if (oom) {
		msim_db_run_clear(r);
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s", db->path,
			 msim_strerror(MSIM_ENOMEM));
		return MSIM_ENOMEM;
	}
	return 0;
}

/* Collects the first column of q's rows into *ids_out. */
static int
db_collect_ids(msim_db_t *db, sqlite3_stmt *q, int64_t **ids_out,
	       size_t *n_out)
{
	int64_t *v = NULL;
	size_t n = 0, cap = 0;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 16;
			int64_t *nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				free(v);
				snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s",
					 db->path, msim_strerror(MSIM_ENOMEM));
				return MSIM_ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = sqlite3_column_int64(q, 0);
	}
	if (rc != SQLITE_DONE) {
		free(v);
		return msim_dbi_fail(db, "cannot list the runs");
	}
	*ids_out = v;
	*n_out = n;
	return 0;
}

int
msim_db_list_runs(msim_db_t *db, const msim_db_select_t *sel,
		  int64_t **ids_out, size_t *n_out)
{
	static const msim_db_select_t all = {0};
	if (!sel)
		sel = &all;
	*ids_out = NULL;
	*n_out = 0;
	if (sel->sweep_id > 0 && !db->has_sweeps)
		return 0; /* a file from before sweeps */
	const char *from = sel->sweep_id <= 0 ? "runs r WHERE ?1 IS NULL"
		: sel->all_shards
		? "runs r WHERE r.id IN (SELECT w.run_id FROM sweep_runs w"
		  " JOIN sweeps s ON s.id=w.sweep_id JOIN sweeps o ON"
		  " o.spec_hash=s.spec_hash AND o.kind=s.kind WHERE o.id=?1)"
		: "runs r WHERE r.id IN (SELECT run_id FROM sweep_runs"
		  " WHERE sweep_id=?1)";
	char sql[1024];
	snprintf(sql, sizeof(sql), "SELECT r.id FROM %s AND (?2 IS NULL OR"
		 " r.kind=?2) AND (?3 IS NULL OR r.trace_hash=?3) ORDER BY"
		 " r.id", from);
	sqlite3_stmt *q;
	if (db_prepare(db, sql, &q, "cannot list the runs"))
		return MSIM_EDB;
	if (sel->sweep_id > 0)
		sqlite3_bind_int64(q, 1, sel->sweep_id);
	if (sel->kind)
		sqlite3_bind_text(q, 2, sel->kind, -1, SQLITE_STATIC);
	if (sel->trace_hash)
		sqlite3_bind_text(q, 3, sel->trace_hash, -1, SQLITE_STATIC);
	int rc = db_collect_ids(db, q, ids_out, n_out);
	sqlite3_finalize(q);
	return rc;
}

/* The single integer of sql: 0, MSIM_ENOTFOUND or MSIM_EDB. */
static int
db_one_id(msim_db_t *db, const char *sql, int64_t *id_out)
{
	int64_t v = 0;
	int rc = msim_dbi_step2(db, sql, 0, 0, &v);
	if (rc == SQLITE_ROW) {
		*id_out = v;
		return 0;
	}
	if (rc == SQLITE_DONE)
		return MSIM_ENOTFOUND;
	return msim_dbi_fail(db, "cannot read");
}

int
msim_db_newest_run(msim_db_t *db, int64_t *id_out)
{
	return db_one_id(db, "SELECT max(id) FROM runs HAVING count(*) > 0",
			 id_out);
}

int
msim_db_newest_sweep(msim_db_t *db, int64_t *id_out)
{
	if (!db->has_sweeps)
		return MSIM_ENOTFOUND;
	return db_one_id(db, "SELECT max(id) FROM sweeps HAVING count(*) > 0",
			 id_out);
}

int
msim_db_run_stats(msim_db_t *db, int64_t id,
		  void (*fn)(const char *name, int64_t value, void *ctx),
		  void *ctx)
{
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT name, value FROM stats WHERE run_id=?", &q,
		       "cannot read the statistics"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(q, 0);
		if (name)
			fn(name, sqlite3_column_int64(q, 1), ctx);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : msim_dbi_fail(db, "cannot read the statistics");
}

int
msim_db_run_stat(msim_db_t *db, int64_t id, const char *name,
		 int64_t *value_out)
{
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT value FROM stats WHERE run_id=? AND name=?",
		       &q, "cannot read the statistics"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*value_out = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? MSIM_ENOTFOUND
				 : msim_dbi_fail(db, "cannot read the statistics");
}

int
msim_db_run_meta(msim_db_t *db, int64_t id,
		 void (*fn)(const char *key, const char *value, void *ctx),
		 void *ctx)
{
	if (!db->has_meta)
		return 0;
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT key, value FROM run_meta WHERE run_id=?"
		       " ORDER BY key", &q, "cannot read run_meta"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(q, 0);
		const char *v = (const char *)sqlite3_column_text(q, 1);
		fn(k ? k : "", v ? v : "", ctx);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : msim_dbi_fail(db, "cannot read run_meta");
}

int
msim_db_run_meta_get(msim_db_t *db, int64_t id, const char *key, char *buf,
		     size_t n)
{
	if (!db->has_meta)
		return MSIM_ENOTFOUND;
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT value FROM run_meta WHERE run_id=? AND"
		       " key=?", &q, "cannot read run_meta"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(q, 0);
		snprintf(buf, n, "%s", v ? v : "");
	}
	sqlite3_finalize(q);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? MSIM_ENOTFOUND
				 : msim_dbi_fail(db, "cannot read run_meta");
}

int
msim_db_run_timeline(msim_db_t *db, int64_t id,
		     int (*fn)(const msim_sample_t *s, void *ctx), void *ctx)
{
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT request, time_ns, allocated_bytes,"
		       " reserved_bytes, active_bytes, requested_bytes,"
		       " largest_free_bytes, free_bytes FROM timeline"
		       " WHERE run_id=? ORDER BY request", &q,
		       "cannot read the timeline"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	int rc, frc = 0;
	size_t rows = 0;
	while (!frc && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		msim_sample_t s = {
			.request = (uint64_t)sqlite3_column_int64(q, 0),
			.time = (msim_time_t)sqlite3_column_int64(q, 1),
			.allocated = sqlite3_column_int64(q, 2),
			.reserved = sqlite3_column_int64(q, 3),
			.active = sqlite3_column_int64(q, 4),
			.requested = sqlite3_column_int64(q, 5),
			.largest_free = (uint64_t)sqlite3_column_int64(q, 6),
			.free = (uint64_t)sqlite3_column_int64(q, 7),
		};
		rows++;
		frc = fn(&s, ctx);
	}
	sqlite3_finalize(q);
	if (frc)
		return frc;
	if (rc != SQLITE_DONE)
		return msim_dbi_fail(db, "cannot read the timeline");
	return rows ? 0 : MSIM_ENOTFOUND;
}

int
msim_db_run_events(msim_db_t *db, int64_t id,
		   int (*fn)(const msim_seg_event_t *ev, void *ctx), void *ctx)
{
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT request, action, addr, size FROM"
		       " segment_events WHERE run_id=? ORDER BY seq", &q,
		       "cannot read the segment events"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	int rc, frc = 0;
	while (!frc && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *a = (const char *)sqlite3_column_text(q, 1);
		msim_seg_event_t ev = {
			.request = (uint64_t)sqlite3_column_int64(q, 0),
			.action = a ? msim_seg_action_parse(a) : -1,
			.addr = (msim_addr_t)sqlite3_column_int64(q, 2),
			.size = (uint64_t)sqlite3_column_int64(q, 3),
		};
		frc = fn(&ev, ctx);
	}
	sqlite3_finalize(q);
	if (frc)
		return frc;
	return rc == SQLITE_DONE ? 0
				 : msim_dbi_fail(db, "cannot read the segment events");
}

int
msim_db_run_peak_blocks(msim_db_t *db, int64_t id, msim_block_t **blocks_out,
			size_t *n_out)
{
	*blocks_out = NULL;
	*n_out = 0;
	if (!db->has_blocks)
		return 0;
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT addr, size, state FROM peak_blocks WHERE"
		       " run_id=? ORDER BY addr", &q,
		       "cannot read the blocks at peak"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	msim_block_t *v = NULL;
	size_t n = 0, cap = 0;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			msim_block_t *nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				free(v);
				sqlite3_finalize(q);
				return MSIM_ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		const char *st = (const char *)sqlite3_column_text(q, 2);
		int state = MSIM_BLOCK_ALLOCATED;
		for (int k = 0; k < 3; k++)
			if (st && !strcmp(st, msim_dbi_block_states[k]))
				state = k;
		v[n++] = (msim_block_t){
			.addr = (msim_addr_t)sqlite3_column_int64(q, 0),
			.size = (uint64_t)sqlite3_column_int64(q, 1),
			.state = state,
		};
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE) {
		free(v);
		return msim_dbi_fail(db, "cannot read the blocks at peak");
	}
	*blocks_out = v;
	*n_out = n;
	return 0;
}

const char *const msim_db_run_figures[] = {
	"peak_reserved_bytes", "peak_allocated_bytes", "peak_requested_bytes",
	"frag_at_peak", "frag_mean", "ext_frag_max", "num_device_alloc",
	"num_device_free", "num_alloc_retries", "num_ooms", "requests",
	"wall_ms", NULL,
};

int
msim_db_run_figure(const msim_db_run_t *r, const char *name, double *out)
{
	const double v[] = {
		(double)r->peak_reserved_bytes, (double)r->peak_allocated_bytes,
		(double)r->peak_requested_bytes, r->frag_at_peak, r->frag_mean,
		r->ext_frag_max, (double)r->num_device_alloc,
		(double)r->num_device_free, (double)r->num_alloc_retries,
		(double)r->num_ooms, (double)r->requests, r->wall_ms,
	};
	for (size_t k = 0; msim_db_run_figures[k]; k++)
		if (!strcmp(msim_db_run_figures[k], name)) {
			*out = v[k];
			return 0;
		}
	return MSIM_ENOTFOUND;
}

/* Writes one timeline sample as a CSV line (ctx: the FILE). */
static int
timeline_csv_row(const msim_sample_t *s, void *ctx)
{
	fprintf(ctx, "%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRId64
		",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%.6f,%.6f\n", s->request,
		(uint64_t)s->time, s->allocated, s->reserved, s->active,
		s->requested, s->largest_free, s->free,
		msim_frag(s->allocated, s->reserved),
		msim_ext_frag(s->largest_free, s->free));
	return 0;
}

int
msim_db_export_timeline(msim_db_t *db, int64_t run_id, const char *path)
{
	FILE *fp = fopen(path, "w");
	if (!fp) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s", path,
			 strerror(errno));
		return MSIM_EIO;
	}
	fprintf(fp, "request,time_ns,allocated,reserved,active,requested,"
		"largest_free,free,frag,ext_frag\n");
	int rc = msim_db_run_timeline(db, run_id, timeline_csv_row, fp);
	if (fclose(fp) != 0 && !rc) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: cannot write the "
			 "timeline", path);
		return MSIM_EIO;
	}
	return rc;
}
