/*
 * Info (lab/info.h): one streaming pass over a trace, and a snapshot's
 * segments summed.
 */
#include <config.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_histogram.h>

#include "lab/figures.h"
#include "lab/info.h"
#include "lab/print.h"
#include "sim/error.h"
#include "sim/grow.h"
#include "sim/units.h"

/* The pass: live size by request id, streams seen. */
typedef struct info_pass_s {
	msim_info_t *out;
	uint64_t *sizes;
	size_t nsizes;
	msim_stream_t streams[MSIM_INFO_MAX_STREAMS];
	gsl_histogram *h;
} info_pass_t;

/* r's block is live from now on. */
static void
info_live(info_pass_t *p, const msim_req_t *r)
{
	msim_info_t *in = p->out;
	p->sizes[r->id] = r->size;
	in->live += r->size;
	in->nlive++;
	if (in->live > in->peak)
		in->peak = in->live;
}

static int
info_alloc(info_pass_t *p, const msim_req_t *r)
{
	msim_info_t *in = p->out;
	if (r->flags & MSIM_REQF_FILLER)
		return 0; /* stands for a block that was free */
	if (MSIM_GROW_ZERO(p->sizes, p->nsizes, (size_t)r->id + 1, 1024))
		return MSIM_ENOMEM;
	if (r->flags & MSIM_REQF_SEED) {
		/* Allocated before the history began: live, not counted. */
		info_live(p, r);
		return 0;
	}
	in->allocs++;
	in->bytes += r->size;
	gsl_histogram_increment(p->h, log2((double)r->size));
	int i;
	for (i = 0; i < in->nstreams; i++)
		if (p->streams[i] == r->stream)
			break;
	if (i == in->nstreams) {
		if (in->nstreams < MSIM_INFO_MAX_STREAMS)
			p->streams[in->nstreams++] = r->stream;
		else
			in->more_streams = true;
	}
	if (r->flags & MSIM_REQF_EXPECT_OOM)
		return 0; /* never live */
	info_live(p, r);
	return 0;
}

static void
info_snap_sum(const msim_snap_segment_t *g, size_t n, msim_info_snap_t *s)
{
	memset(s, 0, sizeof(*s));
	s->nsegs = n;
	for (size_t i = 0; i < n; i++, g++) {
		s->reserved += g->total_size;
		s->allocated += g->allocated_size;
		s->active += g->active_size;
		s->requested += g->requested_size;
		if (!g->large) {
			s->nsmall++;
			s->small_reserved += g->total_size;
		}
		s->nexpandable += g->expandable;
		s->nblocks += g->nblocks;
		uint64_t at = g->addr;
		bool tiled = true;
		for (size_t k = 0; k < g->nblocks; k++) {
			const msim_snap_block_t *b = &g->blocks[k];
			s->nstate[b->state]++;
			s->state_bytes[b->state] += b->size;
			if (b->state != MSIM_SNAP_INACTIVE)
				s->active_requested += b->requested;
			tiled = tiled && b->addr == at;
			at = b->addr + b->size;
		}
		/* Expandable segments list only their mapped blocks. */
		if (!g->expandable && (!tiled || at != g->addr + g->total_size))
			s->untiled++;
	}
}

/* One request of the pass. */
static int
info_req(info_pass_t *p, const msim_req_t *r)
{
	msim_info_t *in = p->out;
	if (r->kind == MSIM_REQ_SEGMENT_HINT ||
	    r->kind == MSIM_REQ_RESET_PEAKS ||
	    (r->flags & (MSIM_REQF_SEED | MSIM_REQF_FILLER)))
		return r->kind == MSIM_REQ_ALLOC ? info_alloc(p, r) : 0;
	/* Requests as a run counts them: allocs and frees (not hidden
	 * empty_cache() calls or free_requested rows). */
	if (r->kind != MSIM_REQ_ALLOC && r->kind != MSIM_REQ_FREE)
		return 0;
	in->requests++;
	if (r->kind == MSIM_REQ_ALLOC)
		return info_alloc(p, r);
	in->frees++;
	if (r->id < p->nsizes && p->sizes[r->id]) {
		in->live -= p->sizes[r->id];
		p->sizes[r->id] = 0;
		in->nlive--;
	}
	return 0;
}

/* What the trace says of itself once read. */
static int
info_end(msim_info_t *in, char *why, size_t whylen)
{
	msim_trace_t *t = in->trace;
	msim_trace_empty_caches(t, &in->empty_found, &in->empty_maybe);
	const msim_snap_segment_t *segs;
	size_t nsegs;
	if (msim_trace_segments(t, &segs, &nsegs)) {
		snprintf(why, whylen, "out of memory");
		return MSIM_ENOMEM;
	}
	info_snap_sum(segs, nsegs, &in->snap);
	/* A snapshot memsim wrote (convert) has an empty state. */
	in->has_state = nsegs > 0;
	msim_trace_tally(t, &in->tally);
	const msim_trace_tally_t *tl = &in->tally;
	in->duration_s = tl->entries ? (tl->last_us - tl->first_us) / 1e6
				     : 0.0;
	in->timed = tl->untimed == 0; /* PyTorch 2.0 wrote no time_us */
	msim_trace_seeding(t, &in->seed);
	in->conf = msim_trace_alloc_conf(t);
	return 0;
}

/* Field i of the comma-separated line s (no quoting: memsim writes none),
 * as a pointer and a length; false if the line has fewer fields. */
static bool
info_field(const char *s, int i, const char **f, size_t *len)
{
	for (; i > 0; i--) {
		s = strchr(s, ',');
		if (!s)
			return false;
		s++;
	}
	*f = s;
	*len = strcspn(s, ",\r\n");
	return true;
}

static int
info_count_add(msim_info_count_t **v, size_t *n, const char *key,
	       size_t len)
{
	for (size_t i = 0; i < *n; i++)
		if (strlen((*v)[i].key) == len &&
		    !memcmp((*v)[i].key, key, len)) {
			(*v)[i].n++;
			return 0;
		}
	msim_info_count_t *w = realloc(*v, (*n + 1) * sizeof(**v));
	if (!w)
		return MSIM_ENOMEM;
	*v = w;
	if (!(w[*n].key = malloc(len + 1)))
		return MSIM_ENOMEM;
	memcpy(w[*n].key, key, len);
	w[*n].key[len] = '\0';
	w[*n].n = 1;
	(*n)++;
	return 0;
}

static int
info_count_cmp(const void *a, const void *b)
{
	const msim_info_count_t *x = a, *y = b;
	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return strcmp(x->key, y->key);
}

/* The trace reader keeps no annotate site, so the file is read again for
 * them: a plain CSV with action, category and site columns. */
static int
info_assumptions(const char *path, msim_info_assume_t *as)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return 0;
	char *line = NULL;
	size_t cap = 0;
	int col_act = -1, col_cat = -1, col_site = -1, rc = 0;
	if (getline(&line, &cap, fp) > 0) {
		const char *f;
		size_t len;
		for (int i = 0; info_field(line, i, &f, &len); i++) {
			if (len == 6 && !memcmp(f, "action", 6))
				col_act = i;
			else if (len == 8 && !memcmp(f, "category", 8))
				col_cat = i;
			else if (len == 4 && !memcmp(f, "site", 4))
				col_site = i;
		}
	}
	while (!rc && col_act >= 0 && col_cat >= 0 && col_site >= 0 &&
	       getline(&line, &cap, fp) > 0) {
		const char *f, *site;
		size_t len, slen;
		if (!strstr(line, ",annotate,") ||
		    !info_field(line, col_act, &f, &len) || len != 8 ||
		    memcmp(f, "annotate", 8) ||
		    !info_field(line, col_cat, &f, &len) || len != 10 ||
		    memcmp(f, "assumption", 10) ||
		    !info_field(line, col_site, &site, &slen) || !slen)
			continue;
		as->total++;
		rc = info_count_add(&as->kinds, &as->nkinds, site,
				    strcspn(site, " ,\r\n"));
		if (rc)
			break;
		if (as->nsites < MSIM_INFO_ASSUME_SITES)
			rc = info_count_add(&as->sites, &as->nsites, site,
					    slen);
		else
			as->other++;
	}
	free(line);
	fclose(fp);
	if (as->nkinds) /* (qsort's base may not be NULL) */
		qsort(as->kinds, as->nkinds, sizeof(*as->kinds),
		      info_count_cmp);
	if (as->nsites)
		qsort(as->sites, as->nsites, sizeof(*as->sites),
		      info_count_cmp);
	return rc;
}

int
msim_info_run(const char *path, const msim_trace_options_t *opt,
	      msim_info_t *out, char *why, size_t whylen)
{
	memset(out, 0, sizeof(*out));
	info_pass_t p = {.out = out};
	int rc = msim_trace_open(path, opt, &out->trace, why, whylen);
	if (rc)
		return rc;
	if (!(p.h = gsl_histogram_alloc(MSIM_INFO_BINS)) ||
	    gsl_histogram_set_ranges_uniform(p.h, 0, MSIM_INFO_BINS)) {
		snprintf(why, whylen, "out of memory");
		rc = MSIM_ENOMEM;
	}
	msim_req_t r;
	int more = 0;
	while (!rc && (more = msim_trace_next(out->trace, &r)) == 1)
		if ((rc = info_req(&p, &r)))
			snprintf(why, whylen, "out of memory");
	if (!rc && more < 0) {
		snprintf(why, whylen, "%s", msim_trace_errmsg(out->trace));
		rc = more;
	}
	if (!rc)
		rc = info_end(out, why, whylen);
	if (!rc && out->has_state) {
		msim_info_snap_t *s = &out->snap;
		s->reserved_same = out->tally.seg_bytes +
				   (int64_t)out->seed.segment_bytes ==
				   (int64_t)s->reserved;
		s->live_same = out->nlive == s->nstate[MSIM_SNAP_ALLOCATED] +
				       s->nstate[MSIM_SNAP_PENDING_FREE] &&
			       out->live == s->active_requested;
	}
	for (size_t k = 0; !rc && k < MSIM_INFO_BINS; k++)
		out->hist[k] = gsl_histogram_get(p.h, k);
	if (!rc && out->tally.actions[MSIM_ACT_ANNOTATE] &&
	    !strcmp(msim_trace_format_name(out->trace), "csv") &&
	    (rc = info_assumptions(path, &out->assume)))
		snprintf(why, whylen, "out of memory");
	if (p.h)
		gsl_histogram_free(p.h);
	free(p.sizes);
	if (rc)
		msim_info_clear(out);
	return rc;
}

void
msim_info_clear(msim_info_t *info)
{
	msim_trace_close(info->trace);
	info->trace = NULL;
	msim_info_assume_t *as = &info->assume;
	for (size_t i = 0; i < as->nkinds; i++)
		free(as->kinds[i].key);
	for (size_t i = 0; i < as->nsites; i++)
		free(as->sites[i].key);
	free(as->kinds);
	free(as->sites);
	memset(as, 0, sizeof(*as));
}

int
msim_info_figs_head(msim_figs_t *f, const char *path, const msim_info_t *in)
{
	int rc = msim_figs_text(f, "trace", path);
	if (!rc)
		rc = msim_figs_text(f, "format",
				    msim_trace_format_name(in->trace));
	if (!rc)
		rc = msim_figs_int(f, "entries", (int64_t)in->tally.entries);
	for (int k = 0; !rc && k < MSIM_NACT; k++)
		rc = msim_figs_int(f, msim_action_name(k),
				   (int64_t)in->tally.actions[k]);
	const struct { const char *name; uint64_t v; } n[] = {
		{"requests", in->requests}, {"allocs", in->allocs},
		{"frees", in->frees}, {"streams", (uint64_t)in->nstreams},
	};
	for (size_t k = 0; !rc && k < sizeof(n) / sizeof(n[0]); k++)
		rc = msim_figs_int(f, n[k].name, (int64_t)n[k].v);
	if (!rc)
		rc = msim_figs_real(f, "duration_s", in->duration_s, 6,
				    NULL);
	const struct { const char *name; uint64_t v; } m[] = {
		{"alloc_bytes", in->bytes}, {"peak_live_bytes", in->peak},
		{"hidden_empty_cache", in->empty_found},
		{"empty_cache_or_malloc", in->empty_maybe},
	};
	for (size_t k = 0; !rc && k < sizeof(m) / sizeof(m[0]); k++)
		rc = msim_figs_int(f, m[k].name, (int64_t)m[k].v);
	return rc;
}

int
msim_info_figs_middle(msim_figs_t *f, const msim_info_t *in)
{
	int rc = 0;
	if (!in->timed)
		rc = msim_figs_bool(f, "duration_known", false);
	if (!rc && in->conf)
		rc = msim_figs_text(f, "allocator_settings", in->conf);
	return rc ? rc : msim_figs_seed(f, in->trace, true);
}

int
msim_info_figs_tail(msim_figs_t *f, const msim_info_t *in)
{
	int rc = 0;
	const msim_info_snap_t *s = &in->snap;
	if (in->has_state) {
		const struct { const char *name; uint64_t v; } n[] = {
			{"snapshot_segments", s->nsegs},
			{"snapshot_small_segments", s->nsmall},
			{"snapshot_reserved_bytes", s->reserved},
			{"snapshot_allocated_bytes", s->allocated},
			{"snapshot_active_bytes", s->active},
			{"snapshot_requested_bytes", s->requested},
			{"snapshot_blocks", s->nblocks},
		};
		for (size_t k = 0; !rc && k < sizeof(n) / sizeof(n[0]); k++)
			rc = msim_figs_int(f, n[k].name, (int64_t)n[k].v);
		char name[64];
		for (int k = 0; !rc && k < MSIM_SNAP_NSTATES; k++) {
			snprintf(name, sizeof(name), "snapshot_%s_blocks",
				 msim_snap_state_name(k));
			rc = msim_figs_int(f, name, (int64_t)s->nstate[k]);
		}
		if (!rc)
			rc = msim_figs_int(f, "trace_reserved_bytes",
					   in->tally.seg_bytes);
		if (!rc)
			rc = msim_figs_int(f, "trace_live_allocations",
					   (int64_t)in->nlive);
		if (!rc)
			rc = msim_figs_bool(f, "snapshot_matches_trace",
					    s->reserved_same && s->live_same);
	}
	char hash[17];
	snprintf(hash, sizeof(hash), "%016" PRIx64,
		 msim_trace_hash(in->trace));
	return rc ? rc : msim_figs_text(f, "trace_hash", hash);
}

/* Prints the snapshot state and how it compares with the trace's end. */
static void
info_snap_print(const msim_info_t *in)
{
	const msim_trace_tally_t *tl = &in->tally;
	const msim_info_snap_t *s = &in->snap;
	uint64_t start_reserved = in->seed.segment_bytes;
	uint64_t nactive = s->nstate[MSIM_SNAP_ALLOCATED] +
			   s->nstate[MSIM_SNAP_PENDING_FREE];
	bool res_same = s->reserved_same, live_same = s->live_same;
	char a[32], b[32], c[32], d[32];
	printf("snapshot   %zu segments (%zu small: %s, %zu large: %s)%s\n",
	       s->nsegs, s->nsmall,
	       msim_format_bytes(s->small_reserved, a, sizeof(a)),
	       s->nsegs - s->nsmall,
	       msim_format_bytes(s->reserved - s->small_reserved, b,
				 sizeof(b)),
	       s->nexpandable ? ", expandable" : "");
	printf("           reserved %s (%" PRIu64 " bytes), allocated %s, "
	       "active %s, requested %s\n",
	       msim_format_bytes(s->reserved, a, sizeof(a)), s->reserved,
	       msim_format_bytes(s->allocated, b, sizeof(b)),
	       msim_format_bytes(s->active, c, sizeof(c)),
	       msim_format_bytes(s->requested, d, sizeof(d)));
	printf("           %zu blocks:", s->nblocks);
	for (int k = 0; k < MSIM_SNAP_NSTATES; k++)
		printf("%s %" PRIu64 " %s (%s)", k ? "," : "", s->nstate[k],
		       msim_snap_state_name(k),
		       msim_format_bytes(s->state_bytes[k], a, sizeof(a)));
	printf("\n");
	if (s->untiled)
		printf("           %zu segment%s not tiled by their blocks\n",
		       s->untiled, s->untiled == 1 ? "" : "s");
	/* The trace ends where the snapshot was taken. */
	if (res_same && start_reserved)
		printf("check      reserved: the seeded segments and the "
		       "trace's segment rows leave the same\n");
	else if (res_same)
		printf("check      reserved: the trace's segment rows leave "
		       "the same\n");
	else
		printf("check      reserved: the trace's segment rows leave "
		       "%" PRId64 " bytes, the snapshot %" PRIu64 " (rows "
		       "lost from a full history?)\n", tl->seg_bytes,
		       s->reserved);
	if (live_same)
		printf("check      live: %" PRIu64 " allocations of %" PRIu64
		       " bytes, as the snapshot's active blocks\n", in->nlive,
		       in->live);
	else
		printf("check      live: the trace leaves %" PRIu64
		       " allocations of %" PRIu64 " bytes, the snapshot %"
		       PRIu64 " active blocks of %" PRIu64 " requested\n",
		       in->nlive, in->live, nactive, s->active_requested);
}

/* Prints the figures of f after the others (lab/figures.h), then clears
 * them.  Returns rc, the making's (0 or MSIM_ENOMEM): on an error nothing
 * is printed. */
static int
info_figs(msim_figs_t *f, int rc, bool first)
{
	if (!rc)
		msim_print_json_figs(f, first);
	msim_figs_clear(f);
	return rc;
}

int
msim_info_json(const char *path, const msim_info_t *in)
{
	msim_figs_t f = {0};
	printf("{");
	if (info_figs(&f, msim_info_figs_head(&f, path, in), true))
		return MSIM_ENOMEM;
	printf(",\n  \"size_log2_histogram\": [");
	for (size_t k = 0; k < MSIM_INFO_BINS; k++)
		printf("%s%.0f", k ? ", " : "", in->hist[k]);
	printf("]");
	if (info_figs(&f, msim_info_figs_middle(&f, in), false))
		return MSIM_ENOMEM;
	const msim_info_assume_t *as = &in->assume;
	if (as->total) {
		printf(",\n  \"assumptions\": {");
		for (size_t i = 0; i < as->nkinds; i++) {
			printf("%s\n    ", i ? "," : "");
			msim_print_json_str(stdout, as->kinds[i].key);
			printf(": %" PRIu64, as->kinds[i].n);
		}
		printf("\n  }");
	}
	if (info_figs(&f, msim_info_figs_tail(&f, in), false))
		return MSIM_ENOMEM;
	printf("\n}\n");
	return 0;
}

/* The recorder's assumptions, by kind, then the most frequent sites. */
#define INFO_ASSUME_SHOW 20 /* sites printed */

static void
info_assume_print(const msim_info_assume_t *as)
{
	if (!as->total)
		return;
	printf("assumptions %" PRIu64 " (", as->total);
	for (size_t i = 0; i < as->nkinds; i++)
		printf("%s%s %" PRIu64, i ? ", " : "", as->kinds[i].key,
		       as->kinds[i].n);
	printf(")\n");
	for (size_t i = 0; i < as->nsites && i < INFO_ASSUME_SHOW; i++)
		printf("  %8" PRIu64 " x %s\n", as->sites[i].n,
		       as->sites[i].key);
	if (as->nsites > INFO_ASSUME_SHOW || as->other)
		printf("  (%zu more sites%s)\n",
		       as->nsites > INFO_ASSUME_SHOW ?
		       as->nsites - INFO_ASSUME_SHOW : 0,
		       as->other ? ", and rows past the first 4096 sites" : "");
}

/* The sizes: allocs by power of two, with bars. */
static void
info_sizes(const msim_info_t *in)
{
	char a[32];
	printf("sizes      (allocs by size, powers of two)\n");
	double max = 0;
	for (size_t k = 0; k < MSIM_INFO_BINS; k++)
		if (in->hist[k] > max)
			max = in->hist[k];
	for (size_t k = 0; k < MSIM_INFO_BINS; k++) {
		double n = in->hist[k];
		if (n == 0)
			continue;
		int bar = max > 0 ? (int)(40 * n / max + 0.5) : 0;
		printf("  >= %-10s %10.0f %.*s\n",
		       msim_format_bytes((uint64_t)1 << k, a, sizeof(a)), n,
		       bar, "########################################");
	}
}

void
msim_info_print(const char *path, const msim_info_t *in)
{
	msim_trace_t *t = in->trace;
	const msim_trace_tally_t *tl = &in->tally;
	char a[32], b[32];
	printf("trace      %s (%s, hash %016" PRIx64 ")\n", path,
	       msim_trace_format_name(t), msim_trace_hash(t));
	printf("entries    %" PRIu64 ":", tl->entries);
	for (int k = 0; k < MSIM_NACT; k++)
		if (tl->actions[k])
			printf(" %s %" PRIu64, msim_action_name(k),
			       tl->actions[k]);
	printf("\nrequests   %" PRIu64 " (%" PRIu64 " allocs, %" PRIu64
	       " frees)\n", in->requests, in->allocs, in->frees);
	printf("streams    %d%s\n", in->nstreams,
	       in->more_streams ? " or more" : "");
	if (in->timed)
		printf("duration   %.3f s\n", in->duration_s);
	else
		printf("duration   unknown (entries without time_us)\n");
	if (in->conf)
		printf("settings   %s\n", *in->conf ? in->conf
		       : "(the defaults)");
	printf("allocated  %s in all, peak live %s (%" PRIu64 " bytes)\n",
	       msim_format_bytes(in->bytes, a, sizeof(a)),
	       msim_format_bytes(in->peak, b, sizeof(b)), in->peak);
	uint64_t rows = tl->actions[MSIM_ACT_EMPTY_CACHE];
	printf("empty_cache ");
	if (rows)
		printf("%" PRIu64 " call%s (rows), ", rows,
		       rows == 1 ? "" : "s");
	printf("%" PRIu64 " hidden call%s found", in->empty_found,
	       in->empty_found == 1 ? "" : "s");
	if (in->empty_maybe)
		printf(", %" PRIu64 " segment-free run%s left to the policy "
		       "(empty_cache or the malloc's own)", in->empty_maybe,
		       in->empty_maybe == 1 ? "" : "s");
	printf("\n");
	msim_print_seed(t);
	info_assume_print(&in->assume);
	if (in->has_state)
		info_snap_print(in);
	info_sizes(in);
}
