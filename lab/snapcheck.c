/*
 * The end state of a run against a snapshot's segments state (see
 * snapcheck.h).  The live simulated segments come from the device log:
 * an address's last alloc or free event says whether its segment is
 * live, found by sorting the events by address (O(E log E) in the
 * events, run once after the replay).  Blocks are compared as two lists
 * sorted by address.
 */
#include <config.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "lab/snapcheck.h"

typedef struct sc_ev_s {
	uint64_t addr, size;
	size_t seq;  /* index in the log */
	bool alloc;
} sc_ev_t;

static int
sc_ev_cmp(const void *a, const void *b)
{
	const sc_ev_t *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct sc_blk_s {
	uint64_t addr, size;
	int state; /* MSIM_SNAP_* */
} sc_blk_t;

static int
sc_blk_cmp(const void *a, const void *b)
{
	const sc_blk_t *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

typedef struct sc_list_s {
	sc_blk_t *b;
	size_t n, cap;
	bool nomem;
} sc_list_t;

static void
sc_collect_raw(sc_list_t *l, sc_blk_t b)
{
	if (l->nomem)
		return;
	if (MSIM_GROW(l->b, l->cap, l->n + 1, 256)) {
		l->nomem = true;
		return;
	}
	l->b[l->n++] = b;
}

static void
sc_collect(void *ctx, const msim_block_t *b)
{
	int st = b->state == MSIM_BLOCK_ALLOCATED ? MSIM_SNAP_ALLOCATED
		 : b->state == MSIM_BLOCK_PENDING ? MSIM_SNAP_PENDING_FREE
						  : MSIM_SNAP_INACTIVE;
	sc_collect_raw(ctx, (sc_blk_t){.addr = b->addr, .size = b->size,
				       .state = st});
}

/*
 * Expandable segments: the ranges mapped at the end, from the log's
 * segment_map / segment_unmap events in order, as maximal runs of
 * contiguous mapped bytes (PyTorch's snapshot lists a segment per run of
 * mapped blocks: segmentInfo() of each head whose previous block is not
 * mapped).  Appended to l; map is a scratch list.
 */
static int
sc_mapped(const msim_seg_event_t *log, size_t nev, sc_list_t *map)
{
	for (size_t i = 0; i < nev; i++) {
		if (log[i].action != MSIM_SEG_MAP &&
		    log[i].action != MSIM_SEG_UNMAP)
			continue;
		uint64_t a = log[i].addr, e = a + log[i].size;
		/* Cut [a, e) out of every range, then add it if mapped. */
		size_t k = 0;
		sc_blk_t extra = {0};
		bool have_extra = false;
		for (size_t j = 0; j < map->n; j++) {
			sc_blk_t r = map->b[j];
			uint64_t re = r.addr + r.size;
			if (re <= a || r.addr >= e) {
				map->b[k++] = r;
				continue;
			}
			if (r.addr < a)
				map->b[k++] = (sc_blk_t){r.addr, a - r.addr, 0};
			if (re > e) {
				extra = (sc_blk_t){e, re - e, 0};
				have_extra = true;
			}
		}
		map->n = k;
		for (int add = 0; add < 2; add++) {
			if (add == 0 && !have_extra)
				continue;
			if (add == 1 && log[i].action != MSIM_SEG_MAP)
				continue;
			sc_collect_raw(map, add ? (sc_blk_t){a, e - a, 0}
						: extra);
			if (map->nomem)
				return MSIM_ENOMEM;
		}
		if (map->n)
			qsort(map->b, map->n, sizeof(*map->b), sc_blk_cmp);
	}
	/* Merge touching ranges. */
	size_t k = 0;
	for (size_t j = 0; j < map->n; j++) {
		if (k && map->b[k - 1].addr + map->b[k - 1].size ==
				 map->b[j].addr)
			map->b[k - 1].size += map->b[j].size;
		else
			map->b[k++] = map->b[j];
	}
	map->n = k;
	return 0;
}

/* Counts the segments (addr, size) of a and b (both sorted by address)
 * found in only one of them. */
static void
sc_diff(const sc_blk_t *a, size_t na, const sc_blk_t *b, size_t nb,
	bool state, size_t *only_a, size_t *only_b)
{
	size_t i = 0, j = 0;
	*only_a = *only_b = 0;
	while (i < na || j < nb) {
		if (j == nb || (i < na && a[i].addr < b[j].addr)) {
			(*only_a)++;
			i++;
		} else if (i == na || b[j].addr < a[i].addr) {
			(*only_b)++;
			j++;
		} else {
			if (a[i].size != b[j].size ||
			    (state && a[i].state != b[j].state)) {
				(*only_a)++;
				(*only_b)++;
			}
			i++;
			j++;
		}
	}
}

int
msim_snapcheck(msim_sim_t *sim, const msim_snap_segment_t *segs, size_t n,
	       msim_snapcheck_t *out)
{
	memset(out, 0, sizeof(*out));
	int rc = MSIM_ENOMEM;
	sc_ev_t *ev = NULL;
	sc_blk_t *live = NULL, *snap = NULL;
	sc_list_t pol = {0}, map = {0};
	bool expandable = false;
	size_t nev, nseg = 0, nlive = 0, nsnapb = 0;
	const msim_seg_event_t *log = msim_device_events(msim_sim_device(sim),
							 &nev);
	out->by_address = true;
	for (size_t i = 0; i < n; i++) {
		out->snap_reserved += segs[i].total_size;
		out->snap_allocated += segs[i].allocated_size;
		out->snap_blocks += segs[i].nblocks;
	}
	out->snap_segs = n;
	msim_stats_t st;
	msim_sim_stats(sim, &st);
	out->sim_reserved = (uint64_t)st.reserved_bytes[MSIM_POOL_ALL].current;
	out->sim_allocated =
		(uint64_t)st.allocated_bytes[MSIM_POOL_ALL].current;

	/* The live simulated segments: an address's last event is an alloc. */
	if (nev && !(ev = malloc(nev * sizeof(*ev))))
		goto fail;
	for (size_t i = 0; i < nev; i++) {
		if (log[i].action == MSIM_SEG_MAP ||
		    log[i].action == MSIM_SEG_UNMAP)
			expandable = true;
		if (log[i].action != MSIM_SEG_ALLOC &&
		    log[i].action != MSIM_SEG_FREE)
			continue;
		ev[nseg++] = (sc_ev_t){.addr = log[i].addr,
				       .size = log[i].size, .seq = i,
				       .alloc = log[i].action == MSIM_SEG_ALLOC};
	}
	if (nseg)
		qsort(ev, nseg, sizeof(*ev), sc_ev_cmp);
	if (expandable && sc_mapped(log, nev, &map))
		goto fail;
	if ((nseg + map.n && !(live = malloc((nseg + map.n) *
					      sizeof(*live)))) ||
	    (n && !(snap = malloc(n * sizeof(*snap)))))
		goto fail;
	for (size_t i = 0; i < map.n; i++)
		live[nlive++] = map.b[i];
	for (size_t i = 0; i < nseg; i++)
		if ((i + 1 == nseg || ev[i + 1].addr != ev[i].addr) &&
		    ev[i].alloc)
			live[nlive++] = (sc_blk_t){.addr = ev[i].addr,
						   .size = ev[i].size};
	out->sim_segs = nlive;
	if (nlive)
		qsort(live, nlive, sizeof(*live), sc_blk_cmp);
	for (size_t i = 0; i < n; i++)
		snap[i] = (sc_blk_t){.addr = segs[i].addr,
				     .size = segs[i].total_size};
	if (n)
		qsort(snap, n, sizeof(*snap), sc_blk_cmp);
	if (out->by_address)
		sc_diff(live, nlive, snap, n, false, &out->segs_only_sim,
			&out->segs_only_snap);

	/* The policy's blocks, if it can list them, against the snapshot's. */
	if (msim_policy_blocks(msim_sim_policy(sim), sc_collect, &pol)) {
		if (pol.nomem)
			goto fail;
		out->blocks_listed = true;
		out->sim_blocks = pol.n;
		free(snap);
		snap = NULL; /* a snapshot may list no blocks at all */
		if (out->snap_blocks &&
		    !(snap = malloc(out->snap_blocks * sizeof(*snap))))
			goto fail;
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < segs[i].nblocks; k++) {
				const msim_snap_block_t *b = &segs[i].blocks[k];
				snap[nsnapb++] = (sc_blk_t){
					.addr = b->addr, .size = b->size,
					.state = b->state};
			}
		if (pol.n)
			qsort(pol.b, pol.n, sizeof(*pol.b), sc_blk_cmp);
		if (nsnapb)
			qsort(snap, nsnapb, sizeof(*snap), sc_blk_cmp);
		size_t only_sim, only_snap;
		sc_diff(pol.b, pol.n, snap, nsnapb, true, &only_sim,
			&only_snap);
		out->blocks_differ = only_sim > only_snap ? only_sim
							  : only_snap;
	}
	out->same = out->sim_reserved == out->snap_reserved &&
		    out->sim_allocated == out->snap_allocated &&
		    out->sim_segs == out->snap_segs &&
		    !out->segs_only_sim && !out->segs_only_snap &&
		    !out->blocks_differ;
	rc = 0;
fail:
	free(ev);
	free(live);
	free(snap);
	free(pol.b);
	free(map.b);
	return rc;
}

/* Appends to buf (n bytes, *k used so far), truncating. */
static void __attribute__((format(printf, 4, 5)))
sc_cat(char *buf, size_t n, size_t *k, const char *fmt, ...)
{
	if (*k >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *k, n - *k, fmt, ap);
	va_end(ap);
	if (w > 0)
		*k += (size_t)w;
}

void
msim_snapcheck_format(const msim_snapcheck_t *c, char *buf, size_t n)
{
	size_t k = 0;
	if (n)
		buf[0] = '\0';
	if (c->same) {
		sc_cat(buf, n, &k, "matches (%zu segments, %" PRIu64
		       " bytes reserved, %" PRIu64 " allocated%s)",
		       c->snap_segs, c->snap_reserved, c->snap_allocated,
		       c->blocks_listed ? ", same blocks" : "");
		return;
	}
	const char *sep = "differs: ";
	if (c->sim_segs != c->snap_segs || c->segs_only_sim ||
	    c->segs_only_snap) {
		sc_cat(buf, n, &k, "%ssegments %zu simulated, %zu in the "
		       "snapshot", sep, c->sim_segs, c->snap_segs);
		if (c->by_address)
			sc_cat(buf, n, &k, " (%zu and %zu not in the other)",
			       c->segs_only_sim, c->segs_only_snap);
		sep = "; ";
	}
	if (c->sim_reserved != c->snap_reserved) {
		sc_cat(buf, n, &k, "%sreserved %" PRIu64 " vs %" PRIu64, sep,
		       c->sim_reserved, c->snap_reserved);
		sep = "; ";
	}
	if (c->sim_allocated != c->snap_allocated) {
		sc_cat(buf, n, &k, "%sallocated %" PRIu64 " vs %" PRIu64, sep,
		       c->sim_allocated, c->snap_allocated);
		sep = "; ";
	}
	if (c->blocks_differ)
		sc_cat(buf, n, &k, "%s%zu blocks of %zu differ (%zu "
		       "simulated)", sep, c->blocks_differ, c->snap_blocks,
		       c->sim_blocks);
}
