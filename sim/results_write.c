/*
 * Storing a run in the results store (results.h): the runs row, its
 * statistics, timeline, segment events and blocks at peak packed one row
 * each (results_int.h's msim_dbi_packed), its metadata.
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

/* The statistics of a run as rows, collected by msim_stats_foreach(). */
typedef struct stat_rows_s {
	size_t n, cap;
	struct stat_row_s {
		char name[96]; /* as msim_stats_foreach() makes them */
		int64_t value;
	} *v;
	bool nomem;
} stat_rows_t;

static void
stat_collect(const char *name, int64_t value, void *ctx)
{
	stat_rows_t *s = ctx;
	if (s->nomem)
		return;
	if (MSIM_GROW(s->v, s->cap, s->n + 1, 128)) {
		s->nomem = true;
		return;
	}
	size_t len = strlen(name);
	if (len >= sizeof(s->v[0].name))
		len = sizeof(s->v[0].name) - 1;
	memcpy(s->v[s->n].name, name, len);
	s->v[s->n].name[len] = '\0';
	s->v[s->n++].value = value;
}

/* The statements db_stmt() keeps prepared on a connection: a sweep's
 * worker stores a run every few milliseconds, and preparing them anew
 * each time was a twentieth of storing one. */
enum { DB_Q_FIND, DB_Q_MEMBER, DB_Q_META, DB_Q_RUN_INSERT, DB_Q_RUN_UPDATE };

/* db->q[slot], prepared from sql the first time; NULL if it cannot be.
 * The caller resets it (db_unstmt()) when done. */
static sqlite3_stmt *
db_stmt(msim_db_t *db, int slot, const char *sql)
{
	if (!db->q[slot] &&
	    sqlite3_prepare_v2(db->db, sql, -1, &db->q[slot], NULL) !=
		    SQLITE_OK) {
		sqlite3_finalize(db->q[slot]);
		db->q[slot] = NULL;
	}
	return db->q[slot];
}

/* Ends a use of a statement of db_stmt(). */
static void
db_unstmt(sqlite3_stmt *q)
{
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
}

/* Records that run_id belongs to sweep_id (none when sweep_id is 0). */
static int
db_sweep_member(msim_db_t *db, int64_t sweep_id, int64_t run_id)
{
	if (sweep_id <= 0)
		return 0;
	sqlite3_stmt *q = db_stmt(db, DB_Q_MEMBER, "INSERT OR IGNORE INTO"
				  " sweep_runs VALUES(?,?)");
	if (!q)
		return msim_dbi_fail(db, "cannot record the sweep's run");
	sqlite3_bind_int64(q, 1, sweep_id);
	sqlite3_bind_int64(q, 2, run_id);
	int rc = sqlite3_step(q);
	db_unstmt(q);
	return rc == SQLITE_DONE ? 0 : msim_dbi_fail(db, "cannot record the "
					       "sweep's run");
}

/* Looks up the run stored under key: 1 with its id, 0, or MSIM_EDB. */
int
msim_dbi_find_key(msim_db_t *db, const char *key, int64_t *id_out)
{
	sqlite3_stmt *q = db_stmt(db, DB_Q_FIND, "SELECT id FROM runs WHERE"
				  " setting_key=?");
	if (!q)
		return msim_dbi_fail(db, "cannot look up the setting");
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*id_out = sqlite3_column_int64(q, 0);
	db_unstmt(q);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return msim_dbi_fail(db, "cannot look up the setting");
	return rc == SQLITE_ROW;
}

int
msim_db_find_run(msim_db_t *db, const char *key, int64_t *run_id_out)
{
	int64_t id = -1;
	int rc = msim_dbi_find_key(db, key, &id);
	if (rc < 0)
		return rc;
	*run_id_out = id;
	return rc ? 0 : MSIM_ENOTFOUND;
}

size_t
msim_db_setting_key(const msim_run_info_t *info, char *buf, size_t n)
{
	char extra[512] = "";
	int k = 0;
	if (info->capacity_bytes && info->capacity_bytes != MSIM_H200_BYTES)
		k = snprintf(extra, sizeof(extra), "capacity=%llu",
			     (unsigned long long)info->capacity_bytes);
	if (info->context_bytes && k >= 0 && (size_t)k < sizeof(extra))
		k += snprintf(extra + k, sizeof(extra) - k, "%scontext=%llu",
			      k ? ";" : "",
			      (unsigned long long)info->context_bytes);
	if (info->strategy && *info->strategy && k >= 0 &&
	    (size_t)k < sizeof(extra))
		k += snprintf(extra + k, sizeof(extra) - k, "%sstrategy=%s",
			      k ? ";" : "", info->strategy);
	if (info->replay && *info->replay && k >= 0 &&
	    (size_t)k < sizeof(extra))
		k += snprintf(extra + k, sizeof(extra) - k, "%sreplay=%s",
			      k ? ";" : "", info->replay);
	if (info->device && k >= 0 && (size_t)k < sizeof(extra))
		snprintf(extra + k, sizeof(extra) - k, "%sdevice=%u",
			 k ? ";" : "", (unsigned)info->device);
	int len = snprintf(buf, n, "%s|%s|%s|%s|%llu|%s|%s",
			   info->kind ? info->kind : "simulated",
			   info->trace_hash ? info->trace_hash : "",
			   info->policy ? info->policy : "",
			   info->params ? info->params : "",
			   (unsigned long long)info->cap_bytes,
			   info->addresses ? info->addresses : "model", extra);
	return len < 0 ? 0 : (size_t)len;
}

int
msim_db_store_run(msim_db_t *db, const msim_run_info_t *info,
		  const msim_summary_t *sum, const msim_stats_t *st,
		  const msim_timeline_t *tl, const msim_seg_event_t *events,
		  size_t nevents, int64_t *run_id_out)
{
	int existed;
	return msim_db_store_run_mode(db, info, sum, st, tl, events, nevents,
				      MSIM_DB_INSERT, run_id_out, &existed);
}

/* Deletes the rows of results of a run that keeps its id (replaced). */
static int
db_clear_run(msim_db_t *db, int64_t run_id)
{
	static const char *const del[] = {
		"DELETE FROM stats_packed WHERE run_id=?",
		"DELETE FROM timeline_packed WHERE run_id=?",
		"DELETE FROM segment_events_packed WHERE run_id=?",
		"DELETE FROM run_meta WHERE run_id=?",
		"DELETE FROM peak_blocks_packed WHERE run_id=?",
	};
	for (size_t k = 0; k < sizeof(del) / sizeof(del[0]); k++) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(db->db, del[k], -1, &q, NULL) !=
		    SQLITE_OK)
			return MSIM_EDB;
		sqlite3_bind_int64(q, 1, run_id);
		int rc = sqlite3_step(q);
		sqlite3_finalize(q);
		if (rc != SQLITE_DONE)
			return MSIM_EDB;
	}
	return 0;
}

void
msim_db_run_fill(msim_db_run_t *r, const msim_run_info_t *info,
		 const msim_summary_t *sum, const msim_stats_t *st,
		 const char *key)
{
	memset(r, 0, sizeof(*r));
	r->id = -1;
#define RUN_COL_FILL(name, json, type, sql, since, show, value)	\
	r->name = (MSIM_COL_CTYPE_##type)(value);
	MSIM_RUN_COLUMNS(RUN_COL_FILL)
#undef RUN_COL_FILL
	r->segments_peak = st->segment[MSIM_POOL_ALL].peak;
}

/*
 * The row of runs: a new one (old_id < 0), or old_id's updated.  key NULL:
 * stored without a setting key.  Returns 0 with the run's id or MSIM_EDB.
 */
static int
db_put_run(msim_db_t *db, const msim_run_info_t *info,
	   const msim_summary_t *sum, const msim_stats_t *st,
	   const char *key, int64_t old_id, int64_t *run_id_out)
{
	/* A replaced run keeps its id, so sweeps and users' notes that
	 * name it stay true (SET id = its own id). */
	const char *run_sql = old_id >= 0
		? "UPDATE runs SET (" RUN_COLS "id) = (" RUN_VALS "?), created ="
		  " strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id=?"
		: "INSERT INTO runs(" RUN_COLS "id) VALUES(" RUN_VALS "?)";
	sqlite3_stmt *q = db_stmt(db, old_id >= 0 ? DB_Q_RUN_UPDATE
						   : DB_Q_RUN_INSERT, run_sql);
	if (!q)
		return MSIM_EDB;
	msim_db_run_t row;
	msim_db_run_fill(&row, info, sum, st, key);
	int i = 1;
	for (size_t c = 0; c < msim_db_run_ncols; c++) {
		const msim_db_col_t *col = &msim_db_run_cols[c];
		const void *m = (const char *)&row + col->offset;
		bool null_ok = msim_db_col_nullable(col);
		switch (col->type) {
		case MSIM_COL_TEXT:
		case MSIM_COL_KEY: {
			const char *t = *(char *const *)m;
			if (t && (*t || !null_ok))
				sqlite3_bind_text(q, i++, t, -1, SQLITE_STATIC);
			else
				sqlite3_bind_null(q, i++);
			break;
		}
		case MSIM_COL_INT:
		case MSIM_COL_UINT: {
			int64_t v = col->type == MSIM_COL_INT
				? *(const int64_t *)m
				: (int64_t)*(const uint64_t *)m;
			if (v || !null_ok)
				sqlite3_bind_int64(q, i++, v);
			else
				sqlite3_bind_null(q, i++);
			break;
		}
		default:
			sqlite3_bind_double(q, i++, *(const double *)m);
			break;
		}
	}
	if (old_id >= 0) {
		sqlite3_bind_int64(q, i++, old_id);
		sqlite3_bind_int64(q, i++, old_id);
	} else {
		sqlite3_bind_null(q, i++);
	}
	int rc = sqlite3_step(q);
	db_unstmt(q);
	if (rc != SQLITE_DONE)
		return MSIM_EDB;
	*run_id_out = old_id >= 0 ? old_id : sqlite3_last_insert_rowid(db->db);
	return 0;
}

typedef struct run_rows_s {
	int64_t run_id;
	const void *v;
} run_rows_t;

/* A growing text of db_put_packed() (msim_db_t's jb). */
typedef struct jbuf_s jbuf_t;

/* Room for need more bytes in b: false when out of memory. */
static bool
jb_room(jbuf_t *b, size_t need)
{
	if (b->nomem)
		return false;
	if (b->n + need <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->n + need)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->nomem = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

/* Two decimal digits a pair, "00" to "99". */
static const char jb_pairs[201] =
	"00010203040506070809101112131415161718192021222324"
	"25262728293031323334353637383940414243444546474849"
	"50515253545556575859606162636465666768697071727374"
	"75767778798081828384858687888990919293949596979899";

/* The 8 digits of c (< 10^8), leading zeros kept, ending at e. */
static inline void
jb_eight(char *e, uint32_t c)
{
	uint32_t hi = c / 10000, lo = c % 10000;
	memcpy(e - 8, jb_pairs + hi / 100 * 2, 2);
	memcpy(e - 6, jb_pairs + hi % 100 * 2, 2);
	memcpy(e - 4, jb_pairs + lo / 100 * 2, 2);
	memcpy(e - 2, jb_pairs + lo % 100 * 2, 2);
}

/* Appends v in decimal, as SQLite's json_array() writes an integer: eight
 * digits a 64-bit division, then two a step in 32 bits (a table of the
 * pairs), most of the cost of packing. */
static void
jb_int(jbuf_t *b, int64_t v)
{
	char *p = b->p + b->n;
	uint64_t u = v;
	if (v < 0) {
		*p++ = '-';
		u = 0 - (uint64_t)v;
	}
	/* Its digits: floor(log10) from the highest bit (Bit Twiddling
	 * Hacks' IntegerLog10), corrected by one comparison; u | 1 has
	 * the same digits (no power of ten above 1 is odd). */
	static const uint64_t pow10[20] = {
		1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL,
		10000000ULL, 100000000ULL, 1000000000ULL, 10000000000ULL,
		100000000000ULL, 1000000000000ULL, 10000000000000ULL,
		100000000000000ULL, 1000000000000000ULL,
		10000000000000000ULL, 100000000000000000ULL,
		1000000000000000000ULL, 10000000000000000000ULL};
	unsigned t = (unsigned)(64 - __builtin_clzll(u | 1)) * 1233 >> 12;
	size_t len = t - ((u | 1) < pow10[t]) + 1;
	char *e = p + len;
	b->n = (size_t)(e - b->p);
	while (u >= 100000000) {
		uint64_t q = u / 100000000;
		jb_eight(e, (uint32_t)(u - q * 100000000));
		e -= 8;
		u = q;
	}
	uint32_t w = (uint32_t)u;
	while (w >= 100) {
		uint32_t d = w % 100 * 2;
		w /= 100;
		e -= 2;
		memcpy(e, jb_pairs + d, 2);
	}
	if (w >= 10)
		memcpy(e - 2, jb_pairs + w * 2, 2);
	else
		e[-1] = (char)('0' + w);
}

/* Appends ncols values (ints; the string name[c] where name is given and
 * name[c] not NULL: a plain word of at most 24 bytes) as one row,
 * "[v,v,...]", a comma first unless it is the first. */
static void
jb_row(jbuf_t *b, const int64_t *v, const char *const *name, int ncols)
{
	if (!jb_room(b, 2 + (size_t)ncols * 27))
		return;
	char *p = b->p;
	size_t n = b->n;
	if (n > 1)
		p[n++] = ',';
	p[n++] = '[';
	for (int c = 0; c < ncols; c++) {
		if (c)
			p[n++] = ',';
		if (name && name[c]) {
			size_t len = strnlen(name[c], 24);
			p[n++] = '"';
			memcpy(p + n, name[c], len);
			n += len;
			p[n++] = '"';
		} else {
			b->n = n;
			jb_int(b, v[c]);
			n = b->n;
		}
	}
	p[n++] = ']';
	b->n = n;
}

/* Ends db->jb[k], "[" and rows so far: 0 or MSIM_EDB. */
static int
jb_end(jbuf_t *b)
{
	if (b->nomem || !jb_room(b, 1))
		return MSIM_EDB;
	b->p[b->n++] = ']';
	return 0;
}

/* Stores db->jb[k] (if it holds rows) as run_id's row of msim_dbi_packed[k]'s
 * table.  The names a row holds are plain words (no JSON escapes).  0 or
 * MSIM_EDB. */
static int
db_put_packed(msim_db_t *db, size_t k, int64_t run_id)
{
	const jbuf_t *b = &db->jb[k];
	if (!b->n)
		return 0;
	sqlite3_stmt **q = &db->packed[k];
	if (!*q) {
		char sql[128];
		snprintf(sql, sizeof(sql), "INSERT INTO %s_packed VALUES(?,?)",
			 msim_dbi_packed[k].table);
		if (sqlite3_prepare_v2(db->db, sql, -1, q, NULL) != SQLITE_OK) {
			*q = NULL;
			return MSIM_EDB;
		}
	}
	sqlite3_bind_int64(*q, 1, run_id);
	sqlite3_bind_text(*q, 2, b->p, (int)b->n, SQLITE_STATIC);
	int rc = sqlite3_step(*q);
	sqlite3_reset(*q);
	sqlite3_clear_bindings(*q);
	return rc == SQLITE_DONE ? 0 : MSIM_EDB;
}

/* A value's decimal text, written already at off in a jbuf_t. */
typedef struct jb_span_s {
	int64_t v;
	size_t off, len;
} jb_span_t;

/* Appends v, the value of s, copying its text (24 bytes through a copy:
 * they may overlap; jb_row()'s room covers them). */
static inline void
jb_copy(jbuf_t *b, const jb_span_t *s)
{
	char w[24];
	memcpy(w, b->p + s->off, sizeof(w));
	memcpy(b->p + b->n, w, sizeof(w));
	b->n += s->len;
}

/* Appends v as jb_int() does and keeps where it went in s. */
static inline void
jb_int_span(jbuf_t *b, int64_t v, jb_span_t *s)
{
	s->v = v;
	s->off = b->n;
	jb_int(b, v);
	s->len = b->n - s->off;
}

/* The timeline of a run (tl may be NULL) into db->jb[], one array of
 * rows [request, time_ns, allocated, reserved, active, requested,
 * largest_free, free].  Reserved and the largest free block mostly stay
 * from one sample to the next (87% and 95% of gpt2_varlen's), and active
 * is allocated unless blocks wait for their stream: their text is copied
 * then, not written again (jb_int() is most of the cost of packing). */
static int
db_pack_timeline(msim_db_t *db, const msim_timeline_t *tl)
{
	jbuf_t *b = &db->jb[DB_PACKED_TIMELINE];
	b->n = 0;
	b->nomem = false;
	if (!tl || !tl->n)
		return 0;
	if (!jb_room(b, 1))
		return MSIM_EDB;
	b->p[b->n++] = '[';
	jb_span_t al, res = {0}, lf = {0};
	for (size_t i = 0; i < tl->n; i++) {
		const msim_sample_t *x = &tl->v[i];
		if (!jb_room(b, 2 + 8 * 27))
			return MSIM_EDB;
		if (i)
			b->p[b->n++] = ',';
		b->p[b->n++] = '[';
		jb_int(b, (int64_t)x->request);
		b->p[b->n++] = ',';
		jb_int(b, (int64_t)x->time);
		b->p[b->n++] = ',';
		jb_int_span(b, x->allocated, &al);
		b->p[b->n++] = ',';
		if (i && x->reserved == res.v)
			jb_copy(b, &res);
		else
			jb_int_span(b, x->reserved, &res);
		b->p[b->n++] = ',';
		if (x->active == x->allocated)
			jb_copy(b, &al);
		else
			jb_int(b, x->active);
		b->p[b->n++] = ',';
		jb_int(b, x->requested);
		b->p[b->n++] = ',';
		if (i && (int64_t)x->largest_free == lf.v)
			jb_copy(b, &lf);
		else
			jb_int_span(b, (int64_t)x->largest_free, &lf);
		b->p[b->n++] = ',';
		jb_int(b, (int64_t)x->free);
		b->p[b->n++] = ']';
	}
	return jb_end(b);
}

/* The segment events of a run into db->jb[], numbered from 0 in their
 * order: rows [seq, request, action, addr, size]. */
static int
db_pack_events(msim_db_t *db, const msim_seg_event_t *events, size_t nevents)
{
	jbuf_t *b = &db->jb[DB_PACKED_EVENTS];
	b->n = 0;
	b->nomem = false;
	if (!events || !nevents)
		return 0;
	if (!jb_room(b, 1))
		return MSIM_EDB;
	b->p[b->n++] = '[';
	for (size_t i = 0; i < nevents; i++) {
		const msim_seg_event_t *e = &events[i];
		int64_t v[5] = {(int64_t)i, (int64_t)e->request, 0,
			(int64_t)e->addr, (int64_t)e->size};
		const char *name[5] = {NULL, NULL,
			msim_seg_action_name(e->action), NULL, NULL};
		jb_row(b, v, name, 5);
	}
	return jb_end(b);
}

/* The run_meta of a run: key, value, ..., NULL (meta may be NULL). */
static int
db_put_meta(msim_db_t *db, int64_t run_id, const char *const *meta)
{
	if (!meta)
		return 0;
	sqlite3_stmt *q = db_stmt(db, DB_Q_META, "INSERT INTO run_meta"
				  " VALUES(?,?,?)");
	if (!q)
		return MSIM_EDB;
	int rc = SQLITE_DONE;
	for (const char *const *m = meta; m[0] && m[1] && rc == SQLITE_DONE;
	     m += 2) {
		sqlite3_reset(q);
		sqlite3_bind_int64(q, 1, run_id);
		sqlite3_bind_text(q, 2, m[0], -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 3, m[1], -1, SQLITE_STATIC);
		rc = sqlite3_step(q);
	}
	db_unstmt(q);
	return rc == SQLITE_DONE ? 0 : MSIM_EDB;
}

/*
 * The statistics of a run into db->jb[], rows ["name", value] by name, as
 * the table stats of schema 6 kept them (its key was run_id, name).
 * msim_stats_foreach() gives the same names in the same order each run:
 * their order by name is found once a connection and checked after.
 */
static int
db_pack_stats(msim_db_t *db, const stat_rows_t *sr)
{
	jbuf_t *b = &db->jb[DB_PACKED_STATS];
	b->n = 0;
	b->nomem = false;
	if (sr->nomem)
		return MSIM_EDB;
	if (!sr->n)
		return 0;
	uint16_t *o = db->stat_order;
	bool sorted = db->nstat_order == sr->n;
	for (size_t i = 1; sorted && i < sr->n; i++)
		sorted = strcmp(sr->v[o[i - 1]].name, sr->v[o[i]].name) < 0;
	if (!sorted) {
		if (sr->n > UINT16_MAX)
			return MSIM_EDB;
		free(db->stat_order);
		db->nstat_order = 0;
		if (!(o = db->stat_order = malloc(sr->n * sizeof(*o))))
			return MSIM_EDB;
		/* Insertion sort: once a connection, 122 names. */
		for (size_t i = 0; i < sr->n; i++) {
			size_t k = i;
			for (; k && strcmp(sr->v[o[k - 1]].name,
					   sr->v[i].name) > 0; k--)
				o[k] = o[k - 1];
			o[k] = (uint16_t)i;
		}
		db->nstat_order = sr->n;
	}
	if (!jb_room(b, 1))
		return MSIM_EDB;
	b->p[b->n++] = '[';
	for (size_t i = 0; i < sr->n; i++) {
		const struct stat_row_s *r = &sr->v[o[i]];
		size_t len = strlen(r->name);
		if (!jb_room(b, len + 32))
			return MSIM_EDB;
		char *p = b->p + b->n;
		if (i)
			*p++ = ',';
		*p++ = '[';
		*p++ = '"';
		memcpy(p, r->name, len);
		p += len;
		*p++ = '"';
		*p++ = ',';
		b->n = (size_t)(p - b->p);
		jb_int(b, r->value);
		b->p[b->n++] = ']';
	}
	return jb_end(b);
}

const char *const msim_dbi_block_states[] = {"allocated", "free", "pending"};

/* A block and its index in the input, ordered by address then index. */
typedef struct block_at_s {
	msim_block_t b;
	size_t i;
} block_at_t;

static bool
block_less(const block_at_t *x, const block_at_t *y)
{
	return x->b.addr < y->b.addr || (x->b.addr == y->b.addr && x->i < y->i);
}

/* Sorts v by address then index: a bottom-up merge sort (qsort's call a
 * comparison cost more than the rest of packing the blocks).  0, or
 * MSIM_ENOMEM. */
static int
block_sort(block_at_t *v, size_t n)
{
	block_at_t *tmp = malloc(n * sizeof(*tmp)), *src = v, *dst = tmp;
	if (!tmp)
		return MSIM_ENOMEM;
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t a = lo, b = mid, k = lo;
			while (a < mid && b < hi)
				dst[k++] = block_less(&src[b], &src[a])
						   ? src[b++] : src[a++];
			while (a < mid)
				dst[k++] = src[a++];
			while (b < hi)
				dst[k++] = src[b++];
		}
		block_at_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	return 0;
}

/* The blocks at peak reserved of a run into db->jb[]: rows [addr, size,
 * state] by address (a repeated address: the last block given stays, as
 * when each was a row of the table keyed by address). */
static int
db_pack_peak_blocks(msim_db_t *db, const msim_block_t *blocks, size_t n)
{
	jbuf_t *b = &db->jb[DB_PACKED_BLOCKS];
	b->n = 0;
	b->nomem = false;
	if (!blocks || !n)
		return 0;
	msim_block_t *sorted = NULL;
	size_t i = 1;
	while (i < n && blocks[i - 1].addr < blocks[i].addr)
		i++;
	if (i < n) { /* not in address order (policies' order is theirs) */
		block_at_t *at = malloc(n * sizeof(*at));
		if (!at || !(sorted = malloc(n * sizeof(*sorted)))) {
			free(at);
			return MSIM_EDB;
		}
		for (size_t k = 0; k < n; k++)
			at[k] = (block_at_t){blocks[k], k};
		if (block_sort(at, n)) {
			free(at);
			free(sorted);
			return MSIM_EDB;
		}
		size_t w = 0;
		for (size_t k = 0; k < n; k++)
			if (k + 1 == n || at[k + 1].b.addr != at[k].b.addr)
				sorted[w++] = at[k].b;
		free(at);
		blocks = sorted;
		n = w;
	}
	int rc = MSIM_EDB;
	if (!jb_room(b, 1))
		goto out;
	b->p[b->n++] = '[';
	for (size_t k = 0; k < n; k++) {
		int64_t v[3] = {(int64_t)blocks[k].addr,
			(int64_t)blocks[k].size, 0};
		const char *name[3] = {NULL, NULL,
			msim_dbi_block_states[blocks[k].state % 3]};
		jb_row(b, v, name, 3);
	}
	rc = jb_end(b);
out:
	free(sorted);
	return rc;
}

int
msim_db_store_run_mode(msim_db_t *db, const msim_run_info_t *info,
		       const msim_summary_t *sum, const msim_stats_t *st,
		       const msim_timeline_t *tl,
		       const msim_seg_event_t *events, size_t nevents, int mode,
		       int64_t *run_id_out, int *existed_out)
{
	int rc;
	char key[2048];
	*existed_out = 0;
	if (db->readonly) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: opened for "
			 "reading only", db->path);
		return MSIM_EDB;
	}
	if (mode != MSIM_DB_INSERT &&
	    msim_db_setting_key(info, key, sizeof(key)) >= sizeof(key)) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: the setting is "
			 "too long to store", db->path);
		return MSIM_EINVAL;
	}
	/* The rows made before the lock is taken, so that writers of a
	 * sweep hold it only while SQLite stores them. */
	stat_rows_t sr = {0};
	msim_stats_foreach(st, stat_collect, &sr);
	if (db_pack_stats(db, &sr) || db_pack_timeline(db, tl) ||
	    db_pack_events(db, events, nevents) ||
	    db_pack_peak_blocks(db, info->peak_blocks, info->npeak_blocks)) {
		free(sr.v);
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: cannot store "
			 "the run: %s", db->path, msim_strerror(MSIM_ENOMEM));
		return MSIM_EDB;
	}
	if ((rc = msim_dbi_fk(db, false))) {
		free(sr.v);
		return rc;
	}
	if (db->wlock)
		db->wlock(db->wctx);
	if ((rc = msim_dbi_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
		goto out;
	int64_t old_id = -1, run_id;
	if (mode != MSIM_DB_INSERT) {
		if ((rc = msim_dbi_find_key(db, key, &old_id)) < 0)
			goto rollback;
		*existed_out = rc;
		if (rc && mode == MSIM_DB_SKIP) {
			if ((rc = db_sweep_member(db, info->sweep_id, old_id)) ||
			    (rc = msim_dbi_exec(db, "COMMIT", "cannot commit")))
				goto rollback;
			*run_id_out = old_id;
			goto out;
		}
		/* A replaced run keeps its id (and its sweeps); its rows of
		 * results are written anew. */
		if (rc && db_clear_run(db, old_id))
			goto fail;
		if (!rc)
			old_id = -1;
	}
	if (db_put_run(db, info, sum, st, mode != MSIM_DB_INSERT ? key : NULL,
		       old_id, &run_id) ||
	    db_put_packed(db, DB_PACKED_STATS, run_id) ||
	    db_put_packed(db, DB_PACKED_TIMELINE, run_id) ||
	    db_put_packed(db, DB_PACKED_EVENTS, run_id) ||
	    db_put_meta(db, run_id, info->meta) ||
	    db_put_packed(db, DB_PACKED_BLOCKS, run_id))
		goto fail;
	if ((rc = db_sweep_member(db, info->sweep_id, run_id)))
		goto rollback;
	if ((rc = msim_dbi_exec(db, "COMMIT", "cannot commit")))
		goto rollback;
	*run_id_out = run_id;
	goto out;
fail:
	rc = msim_dbi_fail(db, "cannot store the run");
rollback:
	sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
out:
	if (db->wunlock)
		db->wunlock(db->wctx);
	free(sr.v);
	return rc;
}
