/* The figures of a run (lab/figures.h): one list, one order. */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/figures.h"
#include "lab/together.h"
#include "sim/error.h"
#include "sim/grow.h"
#include "sim/metrics.h"
#include "sim/results.h"

/* Appends a figure named name (copied); NULL out of memory. */
static msim_fig_t *
fig_add(msim_figs_t *f, const char *name, int kind)
{
	if (MSIM_GROW(f->v, f->cap, f->n + 1, 192))
		return NULL;
	msim_fig_t *g = &f->v[f->n];
	memset(g, 0, sizeof(*g));
	if (!(g->name = strdup(name)))
		return NULL;
	g->kind = kind;
	f->n++;
	return g;
}

static bool
fig_int(msim_figs_t *f, const char *name, int64_t v)
{
	msim_fig_t *g = fig_add(f, name, MSIM_FIG_INT);
	if (g)
		g->i = v;
	return g != NULL;
}

static bool
fig_bool(msim_figs_t *f, const char *name, bool v)
{
	if (!fig_int(f, name, v))
		return false;
	f->v[f->n - 1].kind = MSIM_FIG_BOOL;
	return true;
}

/* A number and how it is written (printf's "%.*f", or as text). */
static bool
fig_real(msim_figs_t *f, const char *name, double v, int prec,
	 const char *as_written)
{
	char buf[64];
	msim_fig_t *g = fig_add(f, name, MSIM_FIG_REAL);
	if (!g)
		return false;
	g->d = v;
	if (!as_written) {
		snprintf(buf, sizeof(buf), "%.*f", prec, v);
		as_written = buf;
	}
	return (g->t = strdup(as_written)) != NULL;
}

static bool
fig_text(msim_figs_t *f, const char *name, const char *v)
{
	msim_fig_t *g = fig_add(f, name, MSIM_FIG_TEXT);
	return g && (g->t = strdup(v ? v : "")) != NULL;
}

/* The columns of row (sim/results.h's MSIM_RUN_COLUMNS) that printers
 * show at show (MSIM_COL_HEAD, MSIM_COL_TAIL), in their order. */
static bool
fig_columns(msim_figs_t *f, const msim_db_run_t *row, int show)
{
	bool ok = true;
	for (size_t c = 0; ok && c < msim_db_run_ncols; c++) {
		const msim_db_col_t *col = &msim_db_run_cols[c];
		const void *m = (const char *)row + col->offset;
		if (col->show != show)
			continue;
		switch (col->type) {
		case MSIM_COL_TEXT:
			ok = fig_text(f, col->json, *(char *const *)m);
			break;
		case MSIM_COL_KEY:
			ok = fig_text(f, col->json, *(char *const *)m);
			if (ok)
				f->v[f->n - 1].null = !*(char *const *)m;
			break;
		case MSIM_COL_INT:
			ok = fig_int(f, col->json, *(const int64_t *)m);
			break;
		case MSIM_COL_UINT:
			ok = fig_int(f, col->json,
				     (int64_t)*(const uint64_t *)m);
			break;
		default:
			ok = fig_real(f, col->json, *(const double *)m,
				      col->type == MSIM_COL_REAL3 ? 3 : 6,
				      NULL);
			break;
		}
	}
	return ok;
}

typedef struct stat_ctx_s {
	msim_figs_t *f;
	bool ok;
} stat_ctx_t;

static void
fig_stat(const char *name, int64_t value, void *ctx)
{
	stat_ctx_t *c = ctx;
	if (c->ok)
		c->ok = fig_int(c->f, name, value);
}

int
msim_figs_stats(msim_figs_t *f, const msim_stats_t *st)
{
	stat_ctx_t c = {f, true};
	msim_stats_foreach(st, fig_stat, &c);
	return c.ok ? 0 : MSIM_ENOMEM;
}

bool
msim_figs_no_events(msim_trace_t *t)
{
	msim_trace_tally_t tl;
	msim_trace_tally(t, &tl);
	return tl.entries == 0 && msim_trace_ended(t) &&
	       msim_trace_format_of(t)->snapshot;
}

int
msim_figs_seed(msim_figs_t *f, msim_trace_t *t, bool always)
{
	msim_trace_seed_t s;
	msim_trace_seeding(t, &s);
	const char *first;
	uint64_t skipped = msim_trace_skipped(t, &first);
	msim_trace_tally_t tl;
	msim_trace_tally(t, &tl);
	bool none = msim_figs_no_events(t);
	if (!always && !s.requests && !s.snap_live && !skipped &&
	    !tl.zero_skipped && !none)
		return 0;
	bool ok = fig_int(f, "seeded_from_frees", (int64_t)s.from_frees) &&
	     fig_int(f, "seeded_from_snapshot", (int64_t)s.from_snapshot) &&
	     fig_int(f, "seeded_late", (int64_t)s.late) &&
	     fig_int(f, "seeded_bytes", (int64_t)s.bytes) &&
	     fig_int(f, "seeded_segments", (int64_t)s.segments) &&
	     fig_int(f, "seeded_segment_bytes", (int64_t)s.segment_bytes) &&
	     fig_int(f, "seed_fillers", (int64_t)s.fillers) &&
	     fig_int(f, "seed_requests", (int64_t)s.requests) &&
	     fig_bool(f, "seed_exact", s.exact);
	if (ok && !s.exact)
		ok = fig_text(f, "seed_inexact", s.inexact);
	ok = ok &&
	     fig_int(f, "snapshot_live_blocks", (int64_t)s.snap_live) &&
	     fig_int(f, "snapshot_live_bytes", (int64_t)s.snap_live_bytes) &&
	     fig_int(f, "explained_live_blocks", (int64_t)s.explained) &&
	     fig_int(f, "explained_live_bytes", (int64_t)s.explained_bytes) &&
	     fig_int(f, "skipped_entries", (int64_t)skipped) &&
	     fig_int(f, "zero_byte_skipped", (int64_t)tl.zero_skipped) &&
	     fig_bool(f, "no_trace_events", none);
	return ok ? 0 : MSIM_ENOMEM;
}

int
msim_figs_job(msim_figs_t *f, msim_job_t *job)
{
	const msim_job_result_t *r = msim_job_result(job);
	msim_db_run_t row;
	msim_job_row(job, &row);
	bool ok = fig_columns(f, &row, MSIM_COL_HEAD);
	/* The input's meta are counts (lab/input.c). */
	for (size_t i = 0; ok && i < r->nmeta; i++)
		ok = fig_int(f, r->meta[i][0],
			     (int64_t)strtoull(r->meta[i][1], NULL, 10));
	ok = ok && !msim_figs_stats(f, &r->st) &&
	     fig_columns(f, &row, MSIM_COL_TAIL) &&
	     fig_int(f, "addr_same", (int64_t)r->sum.addr_same) &&
	     fig_int(f, "addr_other", (int64_t)r->sum.addr_other) &&
	     fig_real(f, "modelled_device_ms", strtod(r->devtime_ms, NULL), 3,
		      r->devtime_ms);
	if (ok && *r->snapshot_state)
		ok = fig_text(f, "snapshot_state", r->snapshot_state);
	if (ok && r->settings_note && *r->settings_note)
		ok = fig_text(f, "settings_note", r->settings_note);
	if (ok && r->capacity_note && *r->capacity_note)
		ok = fig_text(f, "capacity_note", r->capacity_note);
	if (!ok)
		return MSIM_ENOMEM;
	msim_trace_t *t = msim_job_trace(job);
	return t ? msim_figs_seed(f, t, false) : 0;
}

/* The statistics stored for a run, by name. */
typedef struct stored_stats_s {
	char **name;
	int64_t *value;
	unsigned char *used;
	size_t n, cap;
	bool ok;
} stored_stats_t;

static void
stored_stat(const char *name, int64_t value, void *ctx)
{
	stored_stats_t *s = ctx;
	if (!s->ok)
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		char **nn = realloc(s->name, cap * sizeof(*nn));
		if (nn)
			s->name = nn;
		int64_t *nv = realloc(s->value, cap * sizeof(*nv));
		if (nv)
			s->value = nv;
		if (!nn || !nv) {
			s->ok = false;
			return;
		}
		s->cap = cap;
	}
	if (!(s->name[s->n] = strdup(name))) {
		s->ok = false;
		return;
	}
	s->value[s->n++] = value;
}

typedef struct order_ctx_s {
	msim_figs_t *f;
	stored_stats_t *s;
	bool ok;
} order_ctx_t;

static void
stat_in_order(const char *name, int64_t value, void *ctx)
{
	(void)value;
	order_ctx_t *o = ctx;
	for (size_t k = 0; o->ok && k < o->s->n; k++)
		if (!o->s->used[k] && !strcmp(o->s->name[k], name)) {
			o->s->used[k] = 1;
			o->ok = fig_int(o->f, name, o->s->value[k]);
			return;
		}
}

/* Appends the statistics stored for run id in the order of
 * torch.cuda.memory_stats() (msim_stats_foreach(), as `memsim run --json`
 * prints them), then any the store has that this memsim does not know.
 * Returns 0 or MSIM_EDB; *ok false out of memory. */
static int
fig_stored_stats(msim_figs_t *f, msim_db_t *db, int64_t id, bool *ok)
{
	stored_stats_t s = {.ok = true};
	int rc = msim_db_run_stats(db, id, stored_stat, &s);
	if (!rc && s.ok && s.n && !(s.used = calloc(s.n, 1)))
		s.ok = false;
	order_ctx_t o = {f, &s, s.ok};
	if (!rc && o.ok) {
		msim_stats_t zero = {0};
		msim_stats_foreach(&zero, stat_in_order, &o);
	}
	for (size_t k = 0; !rc && o.ok && k < s.n; k++)
		if (!s.used[k])
			o.ok = fig_int(f, s.name[k], s.value[k]);
	for (size_t k = 0; k < s.n; k++)
		free(s.name[k]);
	free(s.name);
	free(s.value);
	free(s.used);
	*ok = o.ok;
	return rc;
}

/* A run_meta entry: a number when its text is one. */
static bool
fig_meta(msim_figs_t *f, const char *key, const char *value)
{
	char *end;
	if (msim_figs_find(f, key))
		return true; /* a column says it already */
	long long i = strtoll(value, &end, 10);
	if (*value && *value != ' ' && !*end)
		return fig_int(f, key, i);
	double d = strtod(value, &end);
	if (*value && *value != ' ' && !*end)
		return fig_real(f, key, d, 0, value);
	return fig_text(f, key, value);
}

typedef struct meta_ctx_s {
	msim_figs_t *f;
	bool ok;
} meta_ctx_t;

static void
fig_meta_cb(const char *key, const char *value, void *ctx)
{
	meta_ctx_t *c = ctx;
	if (c->ok)
		c->ok = fig_meta(c->f, key, value);
}

int
msim_figs_stored(msim_figs_t *f, msim_db_t *db, int64_t id)
{
	msim_db_run_t r;
	int rc = msim_db_run_get(db, id, &r);
	if (rc)
		return rc;
	bool ok = fig_columns(f, &r, MSIM_COL_HEAD);
	if (ok && (rc = fig_stored_stats(f, db, id, &ok)))
		goto out;
	ok = ok && fig_columns(f, &r, MSIM_COL_TAIL) &&
	     fig_text(f, "created", r.created);
	meta_ctx_t m = {f, ok};
	if (ok && (rc = msim_db_run_meta(db, id, fig_meta_cb, &m)))
		goto out;
	if (!m.ok || !fig_int(f, "run_id", r.id))
		rc = MSIM_ENOMEM;
out:
	msim_db_run_clear(&r);
	return rc;
}

const msim_fig_t *
msim_figs_find(const msim_figs_t *f, const char *name)
{
	for (size_t i = 0; name && i < f->n; i++)
		if (!strcmp(f->v[i].name, name))
			return &f->v[i];
	return NULL;
}

int
msim_figs_int(msim_figs_t *f, const char *name, int64_t v)
{
	msim_fig_t *g = (msim_fig_t *)msim_figs_find(f, name);
	if (g) {
		g->i = v;
		return 0;
	}
	return fig_int(f, name, v) ? 0 : MSIM_ENOMEM;
}

int
msim_figs_text(msim_figs_t *f, const char *name, const char *v)
{
	if (!fig_text(f, name, v))
		return MSIM_ENOMEM;
	f->v[f->n - 1].null = v == NULL;
	return 0;
}

int
msim_figs_real(msim_figs_t *f, const char *name, double v, int prec,
	       const char *as_written)
{
	return fig_real(f, name, v, prec, as_written) ? 0 : MSIM_ENOMEM;
}

int
msim_figs_bool(msim_figs_t *f, const char *name, bool v)
{
	return fig_bool(f, name, v) ? 0 : MSIM_ENOMEM;
}

int
msim_figs_empty(msim_figs_t *f, const char *name, bool object)
{
	msim_fig_t *g = fig_add(f, name, MSIM_FIG_EMPTY);
	return g && (g->t = strdup(object ? "{}" : "[]")) ? 0 : MSIM_ENOMEM;
}

void
msim_figs_drop_empty(msim_figs_t *f)
{
	size_t n = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (f->v[i].kind != MSIM_FIG_EMPTY) {
			f->v[n++] = f->v[i];
			continue;
		}
		free(f->v[i].name);
		free(f->v[i].t);
	}
	f->n = n;
}

void
msim_figs_clear(msim_figs_t *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].name);
		free(f->v[i].t);
	}
	free(f->v);
	f->v = NULL;
	f->n = f->cap = 0;
}

int
msim_figs_gpu(msim_figs_t *f, msim_together_t *t, uint64_t context,
	      const char *capacity_name, bool absolute)
{
	const msim_gpu_t *gpu = msim_together_gpu(t);
	size_t n = msim_together_n(t);
	msim_gpu_stats_t gs;
	msim_gpu_stats(gpu, &gs);
	uint64_t shared = msim_gpu_capacity(gpu);
	bool ok = fig_int(f, "capacity_bytes",
			  (int64_t)(shared + n * context)) &&
		  fig_int(f, "context_bytes", (int64_t)context) &&
		  fig_int(f, "shared_bytes", (int64_t)shared) &&
		  (!capacity_name ||
		   fig_text(f, "capacity_name", capacity_name)) &&
		  fig_text(f, "time", absolute ? "absolute" : "relative") &&
		  fig_int(f, "gpu_peak_bytes", (int64_t)gs.peak) &&
		  fig_int(f, "gpu_peak_process", (int64_t)gs.peak_proc + 1) &&
		  fig_int(f, "gpu_peak_request", (int64_t)gs.peak_request) &&
		  fig_int(f, "gpu_bytes_now", (int64_t)gs.used);
	return ok ? 0 : MSIM_ENOMEM;
}

int
msim_figs_process(msim_figs_t *f, msim_together_t *t, size_t i)
{
	const msim_gpu_t *gpu = msim_together_gpu(t);
	const char *cause = msim_together_oom_cause(t, i);
	bool ok = fig_int(f, "process", (int64_t)i + 1) &&
		  fig_text(f, "oom_cause", cause);
	if (ok && !cause)
		f->v[f->n - 1].null = true;
	ok = ok && fig_int(f, "gpu_full_failures",
			   (int64_t)msim_gpu_full_failures(gpu, i)) &&
	     fig_int(f, "held_at_gpu_peak",
		     (int64_t)msim_gpu_held_at_peak(gpu, i)) &&
	     fig_int(f, "start_ns", (int64_t)msim_together_start(t, i));
	return ok ? msim_figs_job(f, msim_together_job(t, i)) : MSIM_ENOMEM;
}
