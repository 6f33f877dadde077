/*
 * The request buffer behind every generator (gen.h): requests are appended
 * in program order, ids are dense and reused last-freed-first, as a trace
 * reader would number them, and allocated bytes are counted on the way so
 * that a generator knows its own peak.
 */
#include <config.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "traces/gen.h"

void
msim_gen_init(msim_gen_t *g, bool dry)
{
	memset(g, 0, sizeof(*g));
	g->dry = dry;
}

void
msim_gen_clear(msim_gen_t *g)
{
	if (!g)
		return;
	free(g->reqs);
	free(g->addrs);
	free(g->sizes);
	free(g->free_ids);
	memset(g, 0, sizeof(*g));
}

static int
gen_push(msim_gen_t *g, const msim_req_t *r)
{
	g->clock += 1000;
	if (g->csv)
		g->n++; /* counted, written by the caller, not kept */
	if (g->dry || g->csv)
		return 0;
	if (MSIM_GROW(g->reqs, g->cap, g->n + 1, 4096)) {
		g->failed = true;
		return MSIM_ENOMEM;
	}
	g->reqs[g->n++] = *r;
	return 0;
}

int64_t
msim_gen_alloc(msim_gen_t *g, uint64_t size, msim_stream_t stream)
{
	uint32_t id;
	if (g->nfree) {
		id = g->free_ids[--g->nfree];
	} else {
		if (g->next_id == g->idcap) {
			size_t cap = g->idcap ? 2 * g->idcap : 1024;
			uint64_t *s = realloc(g->sizes, cap * sizeof(*s));
			if (s)
				g->sizes = s;
			uint32_t *f = realloc(g->free_ids, cap * sizeof(*f));
			if (f)
				g->free_ids = f;
			uint64_t *a = NULL;
			if (g->csv && (a = realloc(g->addrs, cap * sizeof(*a))))
				g->addrs = a;
			if (!s || !f || (g->csv && !a)) {
				g->failed = true;
				return -1;
			}
			g->idcap = cap;
		}
		id = g->next_id++;
	}
	g->sizes[id] = size;
	g->allocated += size;
	if (g->allocated > g->peak)
		g->peak = g->allocated;
	msim_req_t r = {.time = g->clock, .size = size, .stream = stream,
			.id = id, .kind = MSIM_REQ_ALLOC};
	if (gen_push(g, &r))
		return -1;
	if (g->csv) {
		g->addrs[id] = g->bump;
		g->bump += (size + 511) / 512 * 512 + 512;
		fprintf(g->csv, "%" PRIu64 ",%" PRIu64 ",alloc,%" PRIu64
			",%" PRIu64 ",%" PRIu64 "\n", g->seq++, r.time / 1000,
			g->addrs[id], size, stream);
	}
	return id;
}

void
msim_gen_free(msim_gen_t *g, uint32_t id)
{
	if (id >= g->next_id || g->sizes[id] == UINT64_MAX) {
		g->failed = true; /* a generator bug: never emit it */
		return;
	}
	g->allocated -= g->sizes[id];
	if (g->csv) {
		uint64_t us = g->clock / 1000; /* the request's time */
		for (int k = 0; k < 2; k++)
			fprintf(g->csv, "%" PRIu64 ",%" PRIu64 ",%s,%" PRIu64
				",%" PRIu64 ",0\n", g->seq++, us,
				k ? "free_completed" : "free_requested",
				g->addrs[id], g->sizes[id]);
	}
	g->sizes[id] = UINT64_MAX;
	g->free_ids[g->nfree++] = id;
	msim_req_t r = {.time = g->clock, .id = id, .kind = MSIM_REQ_FREE};
	gen_push(g, &r);
}

static int
gen_next(void *ctx, msim_req_t *req_out)
{
	msim_gen_t *g = ctx;
	if (g->pos >= g->n)
		return 0;
	*req_out = g->reqs[g->pos++];
	return 1;
}

static const char *
gen_errmsg(void *ctx)
{
	return ((msim_gen_t *)ctx)->errmsg;
}

msim_source_t
msim_gen_source(msim_gen_t *g)
{
	g->pos = 0;
	return (msim_source_t){.next = gen_next, .errmsg = gen_errmsg,
			       .ctx = g};
}

int
msim_gen_stream_csv(msim_gen_t *g, FILE *fp)
{
	g->csv = fp;
	g->bump = UINT64_C(0x7f0000000000); /* as msim_gen_write_csv() */
	g->seq = 0;
	if (g->idcap && !(g->addrs = calloc(g->idcap, sizeof(*g->addrs)))) {
		g->failed = true;
		return MSIM_ENOMEM;
	}
	fprintf(fp, "seq,time_us,action,addr,size,stream\n");
	return ferror(fp) ? MSIM_EIO : 0;
}

int
msim_gen_write_csv(const msim_gen_t *g, FILE *fp)
{
	/* Invented addresses: a bump pointer in 512-byte steps from a
	 * plausible device base, so an address is never reused. */
	size_t nid = g->next_id ? g->next_id : 1;
	uint64_t *addr = calloc(2 * nid, sizeof(*addr));
	if (!addr)
		return MSIM_ENOMEM;
	uint64_t *size = addr + nid; /* the CSV repeats it on frees */
	uint64_t bump = UINT64_C(0x7f0000000000);
	uint64_t seq = 0;
	fprintf(fp, "seq,time_us,action,addr,size,stream\n");
	for (size_t i = 0; i < g->n; i++) {
		const msim_req_t *r = &g->reqs[i];
		uint64_t us = r->time / 1000;
		if (r->kind == MSIM_REQ_ALLOC) {
			addr[r->id] = bump;
			size[r->id] = r->size;
			bump += (r->size + 511) / 512 * 512 + 512;
			fprintf(fp, "%" PRIu64 ",%" PRIu64 ",alloc,%" PRIu64
				",%" PRIu64 ",%" PRIu64 "\n", seq++, us,
				addr[r->id], r->size, r->stream);
		} else {
			uint64_t sz = size[r->id];
			for (int k = 0; k < 2; k++)
				fprintf(fp, "%" PRIu64 ",%" PRIu64 ",%s,%" PRIu64
					",%" PRIu64 ",%" PRIu64 "\n", seq++, us,
					k ? "free_completed" : "free_requested",
					addr[r->id], sz, r->stream);
		}
	}
	free(addr);
	return ferror(fp) ? MSIM_EIO : 0;
}
