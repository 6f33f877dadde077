/*
 * msim_snapout_write(): a pickle of protocol 4 without memo or frames, as
 * the reader of traces/fmt_pickle.c and Python's pickle.load() take it:
 *
 *   {"segments": [{"device", "address", "total_size", "allocated_size",
 *                  "active_size", "requested_size", "stream",
 *                  "segment_type", "segment_pool_id", "is_expandable",
 *                  "frames", "blocks": [{"address", "size",
 *                  "requested_size", "state", "frames"}]}],
 *    "device_traces": [[{"action", "addr" | "device_free", "size",
 *                        "stream", "time_us", "frames"}]],
 *    "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF",
 *                           "expandable_segments"}}
 *
 * the fields torch.cuda.memory._snapshot() gives in PyTorch 2.4 and later
 * that memory_viz reads.  A frame is {"filename", "line", "name"}, split
 * from a site "file:line function".
 *
 * The trace format's writer (msim_trace_pickle's write_open, write and
 * write_close: `memsim convert --to pickle`) writes with the same opcodes
 * a snapshot that torch.cuda.memory's tools and the reader load:
 * {"segments": [], "device_traces": [[entry, ...]]}, entries with action,
 * addr (device_free for oom), size, stream and time_us, without frames,
 * streamed in batches of 1000 as Python's pickler does.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/file.h"
#include "sim/types.h"
#include "traces/pickle_int.h"
#include "traces/snapshot_out.h"

static void
so_str(FILE *fp, const char *s, size_t n)
{
	if (n < 256) {
		fputc(0x8c, fp); /* SHORT_BINUNICODE */
		fputc((int)n, fp);
	} else {
		fputc('X', fp);  /* BINUNICODE, 4-byte length */
		for (int k = 0; k < 4; k++)
			fputc((int)((n >> (8 * k)) & 0xff), fp);
	}
	fwrite(s, 1, n, fp);
}

static void
so_key(FILE *fp, const char *s)
{
	so_str(fp, s, strlen(s));
}

static void
so_int(FILE *fp, uint64_t v)
{
	if (v < 256) {
		fputc('K', fp); /* BININT1 */
		fputc((int)v, fp);
		return;
	}
	/* LONG1: little-endian two's complement, a zero byte on top if the
	 * top bit is set. */
	uint8_t b[9];
	int n = 0;
	do {
		b[n++] = (uint8_t)v;
		v >>= 8;
	} while (v);
	if (b[n - 1] & 0x80)
		b[n++] = 0;
	fputc(0x8a, fp);
	fputc(n, fp);
	fwrite(b, 1, (size_t)n, fp);
}

static void
so_bool(FILE *fp, bool v)
{
	fputc(v ? 0x88 : 0x89, fp); /* NEWTRUE, NEWFALSE */
}

/* "frames": a list of one frame from site ("file:line function"; a site
 * without a line is the frame's name), or an empty list. */
static void
so_frames(FILE *fp, const char *site)
{
	so_key(fp, "frames");
	fputc(']', fp);
	if (!site || !*site)
		return;
	const char *sp = strchr(site, ' ');
	const char *colon = NULL;
	for (const char *c = site; *c && (!sp || c < sp); c++)
		if (*c == ':')
			colon = c;
	fputc('}', fp);
	fputc('(', fp);
	if (colon && sp) {
		so_key(fp, "filename");
		so_str(fp, site, (size_t)(colon - site));
		so_key(fp, "line");
		so_int(fp, strtoull(colon + 1, NULL, 10));
		so_key(fp, "name");
		so_str(fp, sp + 1, strlen(sp + 1));
	} else {
		so_key(fp, "filename");
		so_key(fp, "??");
		so_key(fp, "line");
		so_int(fp, 0);
		so_key(fp, "name");
		so_key(fp, site);
	}
	fputc('u', fp); /* SETITEMS */
	fputc('a', fp); /* APPEND */
}

static const char *
so_state(int state)
{
	return state == MSIM_BLOCK_ALLOCATED ? "active_allocated"
	       : state == MSIM_BLOCK_PENDING ? "active_pending_free"
					      : "inactive";
}

static void
so_segment(FILE *fp, const msim_snapout_seg_t *g)
{
	uint64_t allocated = 0, active = 0, requested = 0;
	for (size_t k = 0; k < g->nblocks; k++) {
		const msim_snapout_block_t *b = &g->blocks[k];
		if (b->state == MSIM_BLOCK_FREE)
			continue;
		active += b->size;
		requested += b->requested;
		if (b->state == MSIM_BLOCK_ALLOCATED)
			allocated += b->size;
	}
	fputc('}', fp);
	fputc('(', fp);
	so_key(fp, "device");
	so_int(fp, 0);
	so_key(fp, "address");
	so_int(fp, g->addr);
	so_key(fp, "total_size");
	so_int(fp, g->size);
	so_key(fp, "allocated_size");
	so_int(fp, allocated);
	so_key(fp, "active_size");
	so_int(fp, active);
	so_key(fp, "requested_size");
	so_int(fp, requested);
	so_key(fp, "stream");
	so_int(fp, g->stream);
	/* The small pool's segments are its 2 MiB buffers (kSmallBuffer). */
	so_key(fp, "segment_type");
	so_key(fp, g->size <= (UINT64_C(2) << 20) && !g->expandable ? "small"
								     : "large");
	so_key(fp, "segment_pool_id");
	so_int(fp, 0);
	so_int(fp, 0);
	fputc(0x86, fp); /* TUPLE2 */
	so_key(fp, "is_expandable");
	so_bool(fp, g->expandable);
	so_frames(fp, NULL);
	so_key(fp, "blocks");
	fputc(']', fp);
	if (g->nblocks) {
		fputc('(', fp);
		for (size_t k = 0; k < g->nblocks; k++) {
			const msim_snapout_block_t *b = &g->blocks[k];
			fputc('}', fp);
			fputc('(', fp);
			so_key(fp, "address");
			so_int(fp, b->addr);
			so_key(fp, "size");
			so_int(fp, b->size);
			so_key(fp, "requested_size");
			so_int(fp, b->state == MSIM_BLOCK_FREE ? 0
							       : b->requested);
			so_key(fp, "state");
			so_key(fp, so_state(b->state));
			so_frames(fp, b->state == MSIM_BLOCK_FREE ? NULL
								  : b->site);
			fputc('u', fp);
		}
		fputc('e', fp); /* APPENDS */
	}
	fputc('u', fp);
}

/* A device_traces entry's fields (its dict's MARK to its SETITEMS are the
 * caller's). */
static void
so_entry_fields(FILE *fp, int action, uint64_t addr, uint64_t size,
		uint64_t stream, uint64_t time_us)
{
	so_key(fp, "action");
	so_key(fp, msim_action_name(action));
	so_key(fp, action == MSIM_ACT_OOM ? "device_free" : "addr");
	so_int(fp, addr);
	so_key(fp, "size");
	so_int(fp, size);
	so_key(fp, "stream");
	so_int(fp, stream);
	so_key(fp, "time_us");
	so_int(fp, time_us);
}

static void
so_entry(FILE *fp, const msim_snapout_entry_t *e)
{
	fputc('}', fp);
	fputc('(', fp);
	so_entry_fields(fp, e->action, e->addr, e->size, e->stream,
			e->time_us);
	so_frames(fp, e->site);
	fputc('u', fp);
}

int
msim_snapout_write(const char *path, const msim_snapout_t *s, char *why,
		   size_t whylen)
{
	msim_outfile_t o;
	int rc = msim_outfile_open(&o, path, why, whylen);
	if (rc)
		return rc;
	FILE *fp = o.fp;
	static const uint8_t head[] = {0x80, 4, '}', '('};
	fwrite(head, 1, sizeof(head), fp);
	so_key(fp, "segments");
	fputc(']', fp);
	if (s->nsegs) {
		fputc('(', fp);
		for (size_t i = 0; i < s->nsegs; i++) {
			so_segment(fp, &s->segs[i]);
			if (i % 1000 == 999 && i + 1 < s->nsegs) {
				fputc('e', fp);
				fputc('(', fp);
			}
		}
		fputc('e', fp);
	}
	so_key(fp, "device_traces");
	fputc(']', fp);
	fputc(']', fp);
	if (s->nentries) {
		fputc('(', fp);
		for (size_t i = 0; i < s->nentries; i++) {
			so_entry(fp, &s->entries[i]);
			if (i % 1000 == 999 && i + 1 < s->nentries) {
				fputc('e', fp);
				fputc('(', fp);
			}
		}
		fputc('e', fp);
	}
	fputc('a', fp); /* the device's list into device_traces */
	so_key(fp, "allocator_settings");
	fputc('}', fp);
	fputc('(', fp);
	so_key(fp, "PYTORCH_CUDA_ALLOC_CONF");
	so_key(fp, s->alloc_conf ? s->alloc_conf : "");
	so_key(fp, "expandable_segments");
	so_bool(fp, s->expandable);
	fputc('u', fp);
	fputc('u', fp); /* the top dict's SETITEMS */
	fputc('.', fp); /* STOP */
	if (ferror(fp)) {
		msim_outfile_abort(&o);
		snprintf(why, whylen, "%s: cannot write", path);
		return MSIM_EIO;
	}
	return msim_outfile_commit(&o, why, whylen);
}

/* ---- the trace format's writer ---- */

/* Entries written since the last MARK (w->fmt). */
typedef struct so_trace_s {
	unsigned batch;
} so_trace_t;

static int
so_check(msim_trace_writer_t *w)
{
	if (ferror(w->fp))
		return msim_trace_writer_fail(w, MSIM_EIO, "cannot write");
	return 0;
}

int
msim_pk_write_open(msim_trace_writer_t *w)
{
	so_trace_t *p = calloc(1, sizeof(*p));
	if (!p)
		return msim_trace_writer_fail(w, MSIM_ENOMEM, "out of memory");
	w->fmt = p;
	static const uint8_t head[] = {0x80, 4, '}', '('};
	fwrite(head, 1, sizeof(head), w->fp);
	so_key(w->fp, "segments");
	fputc(']', w->fp);
	so_key(w->fp, "device_traces");
	fputc(']', w->fp);
	fputc(']', w->fp);
	fputc('(', w->fp);
	return so_check(w);
}

int
msim_pk_write(msim_trace_writer_t *w, const msim_entry_t *e)
{
	so_trace_t *p = w->fmt;
	FILE *fp = w->fp;
	if (p->batch == 1000) {
		fputc('e', fp); /* APPENDS */
		fputc('(', fp);
		p->batch = 0;
	}
	fputc('}', fp);
	fputc('(', fp);
	so_entry_fields(fp, e->action, e->addr, e->size, e->stream,
			e->time_us);
	fputc('u', fp);
	p->batch++;
	return so_check(w);
}

int
msim_pk_write_close(msim_trace_writer_t *w)
{
	so_trace_t *p = w->fmt;
	if (!p)
		return 0;
	/* APPENDS, the device list into device_traces, SETITEMS, STOP */
	static const uint8_t tail[] = {'e', 'a', 'u', '.'};
	fwrite(tail, 1, sizeof(tail), w->fp);
	free(p);
	w->fmt = NULL;
	return so_check(w);
}
