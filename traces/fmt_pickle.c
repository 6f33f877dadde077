/*
 * PyTorch memory snapshots, read in C: the pickle that
 * torch.cuda.memory._dump_snapshot() writes
 * (docs/pytorch-allocator.md §10), so that
 * `memsim run x.pickle` needs nothing but memsim.
 *
 * The reader is a pickle virtual machine that does not build the object
 * tree.  It runs the opcodes of protocols 2 to 5 that Python's pickler and
 * TorchScript's write for plain data (dicts, lists, tuples, sets, str,
 * bytes, ints of any size, floats, bools, None, the memo; globals and
 * reductions are accepted as opaque values) and keeps on its stack only
 * what it needs: scalars, and for each open dict or list its role in the
 * snapshot.  A container's role is decided when it is created, from the
 * stack below it (pickles are written parent first, children before they
 * are attached): the top-level dict; its "device_traces" list; the list of
 * device d in it; a trace entry in that list; its "segments" list, a
 * segment in it, the segment's "blocks" list and a block in that.  A
 * trace entry's fields are collected as its SETITEMS run, and the entry is
 * handed out as soon as its dict is complete, so a long trace streams:
 * finished entries collapse into one run-length stack slot, and memory
 * stays small however long the trace.  Strings are only compared with the
 * few dozen names the reader looks for; the memo keeps a 4-byte tag per
 * slot (a key name, a small int, or "something else"), so GETs cost O(1)
 * and cannot build cycles.
 *
 * Hostile input: every length is checked against the bytes left in the
 * file before anything is read or allocated; the stack (nesting) and the
 * marks are bounded; memo indices are bounded by the file size; each
 * opcode does O(1) work per stack item it consumes, so the time is linear.
 * Any error names the file and the byte offset of the opcode.
 *
 * The segments state is small next to the trace (one record per segment
 * and per block, bounded by PK_MAX_SEGS and PK_MAX_BLOCKS): a segment or
 * block gets its record when its dict is created, and its fields are
 * written into the record as they are set, so the blocks (which pickles
 * write before the segment's own SETITEMS) need no stack space.  A
 * record is checked when its dict is complete.
 *
 * Stack frames (context="all", stacks="python"): of each trace entry's
 * "frames" list (innermost first) the reader keeps one frame, the first
 * outside PyTorch's own files, as the alloc's site ("file:line
 * function"), and a category inferred from the whole stack (pk_frame()).
 * Strings up to PK_STR_MAX bytes are kept in a pool so that memoized
 * filenames and function names can be read back; the memo slot of a
 * string holds its pool index.  Not kept: the frames of segments and
 * blocks.
 *
 * A segment's segment_pool_id (a tuple; (0, 0) is the default pool, others
 * a CUDA graph's or a MemPool's private pool) becomes its pool number
 * (msim_snap_segment_t.pool): a tuple of two ints is kept as a value (and
 * in the memo), other tuples are opaque.  The trace entries name no pool:
 * traces/trace_seed.c derives them from the segments (msim_trace_pool_derive()).
 *
 * The writer writes a snapshot that torch.cuda.memory's tools and this
 * reader load: {"segments": [], "device_traces": [[entry, ...]]}, entries
 * with action, addr (device_free for oom), size, stream and time_us, in
 * protocol 4 without memo, in batches of 1000 as Python's pickler does.
 */
#include <config.h>

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "traces/trace_int.h"

#define PK_BUF (1u << 20)
#define PK_MAX_STACK (1u << 17) /* stack slots: nesting and batches */
#define PK_MAX_MARKS 4096u      /* nested MARKs */
#define PK_SHORT 32             /* longer strings are never key names */
#define PK_STR_MAX 1024         /* longer strings are not pooled */
#define PK_POOL_MAX (64u << 20) /* bytes of pooled strings */
#define PK_MAX_MEMO_NOSIZE (1u << 24)
#define PK_MAX_SEGS (1u << 20)   /* segments in the snapshot state */
#define PK_MAX_BLOCKS (1u << 22) /* their blocks: 128 MiB of records */

/* Value types on the stack. */
enum {
	V_MARK, V_NONE, V_BOOL, V_INT, V_STR, V_OPAQUE, V_RUN, V_DICT, V_LIST,
};

/* Roles of containers. */
enum { R_NONE, R_ROOT, R_TRACES, R_DEVLIST, R_ENTRY, R_SEGLIST, R_SEG,
       R_BLOCKLIST, R_BLOCK, R_FRAMES, R_FRAME, R_SETTINGS };

/* Names the reader looks for: codes of V_STR values. */
enum {
	S_OTHER = 0, S_ACTION, S_ADDR, S_SIZE, S_STREAM, S_TIME_US,
	S_DEVICE_FREE, S_DEVICE_TRACES,
	/* the segments state */
	S_SEGMENTS, S_DEVICE, S_ADDRESS, S_TOTAL_SIZE, S_ALLOCATED_SIZE,
	S_ACTIVE_SIZE, S_REQUESTED_SIZE, S_SEGMENT_TYPE, S_IS_EXPANDABLE,
	S_BLOCKS, S_STATE, S_SMALL, S_LARGE,
	/* stack frames */
	S_FRAMES, S_FILENAME, S_LINE, S_NAME,
	/* allocator_settings (PyTorch 2.4 and later) */
	S_ALLOC_SETTINGS, S_PTCONF, S_EXPANDABLE, S_MAXSPLIT, S_GCTHRESH,
	S_AWAITING, /* "active_awaiting_free": a pending free's other name */
	S_SEGPOOL,  /* "segment_pool_id": the segment's private pool */
	S_STATE0, /* S_STATE0 + MSIM_SNAP_*: a block state */
	S_NKEYS = S_STATE0 + MSIM_SNAP_NSTATES,
	S_ACT0 = 48, /* S_ACT0 + msim_action_t: an action name */
};
static_assert(S_NKEYS <= S_ACT0 && S_ACT0 + MSIM_NACT < 256,
	      "string codes fit pk_val_t.str");
static const char *const pk_keys[S_NKEYS] = {
	[S_ACTION] = "action", [S_ADDR] = "addr", [S_SIZE] = "size",
	[S_STREAM] = "stream", [S_TIME_US] = "time_us",
	[S_DEVICE_FREE] = "device_free", [S_DEVICE_TRACES] = "device_traces",
	[S_SEGMENTS] = "segments", [S_DEVICE] = "device",
	[S_ADDRESS] = "address", [S_TOTAL_SIZE] = "total_size",
	[S_ALLOCATED_SIZE] = "allocated_size", [S_ACTIVE_SIZE] = "active_size",
	[S_REQUESTED_SIZE] = "requested_size",
	[S_SEGMENT_TYPE] = "segment_type", [S_IS_EXPANDABLE] = "is_expandable",
	[S_BLOCKS] = "blocks", [S_STATE] = "state", [S_SMALL] = "small",
	[S_LARGE] = "large", [S_FRAMES] = "frames", [S_FILENAME] = "filename",
	[S_LINE] = "line", [S_NAME] = "name",
	[S_ALLOC_SETTINGS] = "allocator_settings",
	[S_PTCONF] = "PYTORCH_CUDA_ALLOC_CONF",
	[S_EXPANDABLE] = "expandable_segments",
	[S_MAXSPLIT] = "max_split_size",
	[S_GCTHRESH] = "garbage_collection_threshold",
	[S_AWAITING] = "active_awaiting_free",
	[S_SEGPOOL] = "segment_pool_id",
	[S_STATE0 + MSIM_SNAP_INACTIVE] = "inactive",
	[S_STATE0 + MSIM_SNAP_ALLOCATED] = "active_allocated",
	[S_STATE0 + MSIM_SNAP_PENDING_FREE] = "active_pending_free",
};
/* Entry fields, in pk_val_t.f, by key code - S_ADDR. */
enum { F_ADDR, F_SIZE, F_STREAM, F_TIME, F_DEVFREE, F_N };
#define HAVE_ACTION 0x20
#define EMITTED 0x40
/* Segment and block dicts: the fields they must have. */
#define HAVE_ADDRESS 0x01
#define HAVE_SIZE 0x02  /* total_size of a segment, size of a block */
#define HAVE_STATE 0x04

typedef struct pk_val_s {
	uint8_t type;   /* V_* */
	uint8_t role;   /* R_* of a V_DICT / V_LIST */
	uint8_t have;   /* dict: bit F_* set, HAVE_ACTION, EMITTED; segment
			 * or block: HAVE_ADDRESS, _SIZE, _STATE, EMITTED
			 * (complete) */
	uint8_t str;    /* V_STR: S_*; dict: the action's code */
	uint8_t neg;    /* V_INT: negative or over 64 bits: not a field;
			 * V_OPAQUE: 2 for a float, its bits in i; PK_PAIR
			 * for a tuple of two ints, in f[0] and f[1] */
	uint32_t sid;   /* V_STR: 1 + index in the string pool, 0: none */
	uint32_t dev;   /* R_DEVLIST / R_ENTRY: the device index; R_SEG /
			 * R_BLOCKLIST: the segment's record; R_BLOCK: the
			 * block's */
	uint64_t cum;   /* values from the last MARK up to this one */
	uint64_t i;     /* V_INT, V_BOOL; V_RUN: count; list: items */
	uint64_t f[F_N]; /* dict: entry fields */
} pk_val_t;

/* Memo slot tags (4 bits) above a 28-bit payload. */
enum { M_UNSET, M_OPAQUE, M_NONE, M_BOOL, M_STR, M_INT, M_BIGINT,
       M_LARGEINT, M_FRAME, M_FRAMES, M_PAIR };
#define M_PAYLOAD 0x0fffffffu

typedef struct pk_s {
	uint8_t *buf;
	size_t pos, end;
	uint64_t base;     /* file offset of buf[0] */
	uint64_t op_off;   /* file offset of the opcode being run */
	bool eof, stopped;
	pk_val_t *stack;
	size_t sp, capstack;
	size_t *marks;     /* stack indices of MARKs */
	size_t nmarks;
	uint32_t *memo;
	size_t capmemo;
	uint64_t *ints;    /* memoized ints that do not fit the payload */
	size_t nints, capints;
	uint64_t (*pairs)[2]; /* memoized tuples of two ints */
	size_t npairs, cappairs;
	uint64_t (*pools)[2]; /* the segments' private pool ids (never
			       * (0, 0), the default pool's), by number - 1 */
	size_t npools, cappools;
	msim_entry_t *q;   /* entries ready to hand out */
	size_t qhead, qlen, capq;
	uint64_t nset;     /* memo slots set: MEMOIZE's index */
	int chosen;        /* device whose entries we hand out, -1 = none */
	uint32_t ndev;     /* device lists seen */
	bool saw_traces;
	msim_snap_segment_t *segs; /* the segments state, in file order */
	size_t nsegs, capsegs;
	msim_snap_block_t *blocks; /* their blocks, grouped by segment */
	size_t nblocks, capblocks;
	msim_snap_segment_t *out;  /* msim_trace_segments(): one device's */
	char *pool;        /* strings, NUL-terminated (pk_string()) */
	size_t npool, cappool;
	uint32_t *stroff;  /* by sid - 1: offset of the string in pool */
	size_t nstr, capstr;
	/* Frame dicts and frames lists, by record (a dict's or list's dev):
	 * snapshots share them between entries through the memo. */
	struct pk_fr_s *fr;
	size_t nfr, capfr;
	bool fr_seen;      /* the entry being read has a "frames" list */
	uint32_t fr_cur;   /* its record */
	/* allocator_settings */
	bool saw_settings;
	char conf[512];      /* PYTORCH_CUDA_ALLOC_CONF, as set */
	int expandable;      /* expandable_segments: -1 unknown */
	uint64_t max_split;  /* max_split_size: 0 unknown or unlimited */
	double gc_threshold; /* garbage_collection_threshold */
} pk_t;

/* A frame (file, line, name) or a frames list (its site frame, FR_* and
 * whether it has a frame). */
typedef struct pk_fr_s {
	uint32_t file, name; /* sids; 0: none */
	uint64_t line;
	uint8_t flags;       /* FR_* */
	bool any;
} pk_fr_t;
#define PK_MAX_FR (1u << 24)
#define PK_PAIR 3
#define PK_MAX_POOLS 65535u /* distinct private pools of the segments */

/* What a stack shows, most telling first (pk_frame()). */
#define FR_OPTIMIZER 0x01
#define FR_BACKWARD 0x02
#define FR_PARAMETER 0x04
#define FR_FORWARD 0x08
#define FR_TORCH 0x10 /* a frame in PyTorch's own files */

/* ---- input ---- */

static int
pk_fail(msim_trace_t *t, pk_t *p, int code, const char *what)
{
	t->offset = p->op_off + 1;
	return msim_trace_fail(t, code, "%s", what);
}

/* Makes n (<= PK_BUF) bytes available at p->buf + p->pos. */
static int
pk_need(msim_trace_t *t, pk_t *p, size_t n)
{
	if (p->end - p->pos >= n)
		return 0;
	size_t rest = p->end - p->pos;
	memmove(p->buf, p->buf + p->pos, rest);
	p->base += p->pos;
	p->pos = 0;
	p->end = rest;
	while (p->end < n && !p->eof) {
		size_t got = msim_trace_read(t, p->buf + p->end,
					     PK_BUF - p->end);
		if (got == 0)
			p->eof = true;
		p->end += got;
	}
	if (p->end < n)
		return pk_fail(t, p, MSIM_EFORMAT,
			       "truncated pickle (no STOP opcode)");
	return 0;
}

/* Checks that n declared bytes can follow in the file. */
static int
pk_check_len(msim_trace_t *t, pk_t *p, uint64_t n)
{
	uint64_t here = p->base + p->pos;
	if ((t->size && n > t->size - (here < t->size ? here : t->size)) ||
	    n > (UINT64_C(1) << 40))
		return pk_fail(t, p, MSIM_EFORMAT,
			       "declared length runs past the end of the file");
	return 0;
}

/* Skips n bytes (already checked against the file size). */
static int
pk_skip(msim_trace_t *t, pk_t *p, uint64_t n)
{
	while (n) {
		if (p->pos == p->end) {
			int rc = pk_need(t, p, 1);
			if (rc)
				return rc;
		}
		size_t k = p->end - p->pos;
		if (k > n)
			k = (size_t)n;
		p->pos += k;
		n -= k;
	}
	return 0;
}

static uint64_t
pk_le(const uint8_t *b, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* ---- the stack ---- */

static bool
pk_inert(const pk_val_t *v)
{
	return v->type == V_OPAQUE || v->type == V_RUN ||
	       (v->type == V_DICT && (v->have & EMITTED));
}

static uint64_t
pk_count(const pk_val_t *v)
{
	return v->type == V_RUN ? v->i : 1;
}

static int
pk_push(msim_trace_t *t, pk_t *p, const pk_val_t *v)
{
	/* Collapse finished values under the top into one run. */
	if (p->sp >= 2 && v->type != V_MARK) {
		pk_val_t *top = &p->stack[p->sp - 1], *below = top - 1;
		if (pk_inert(top) && below->type != V_MARK && pk_inert(below)) {
			below->i = pk_count(below) + pk_count(top);
			below->type = V_RUN;
			below->role = R_NONE;
			below->cum = top->cum;
			p->sp--;
		}
	}
	if (p->sp == p->capstack) {
		if (p->capstack == PK_MAX_STACK)
			return pk_fail(t, p, MSIM_EFORMAT,
				       "pickle nests too deep (stack over "
				       "131072 values)");
		if (MSIM_GROW(p->stack, p->capstack, p->sp + 1, 256))
			return MSIM_ENOMEM;
	}
	pk_val_t *dst = &p->stack[p->sp];
	*dst = *v;
	if (v->type == V_MARK) {
		if (p->nmarks == PK_MAX_MARKS)
			return pk_fail(t, p, MSIM_EFORMAT,
				       "pickle nests too deep (over 4096 "
				       "marks)");
		p->marks[p->nmarks++] = p->sp;
		dst->cum = 0;
	} else {
		uint64_t prev = p->sp ? p->stack[p->sp - 1].cum : 0;
		dst->cum = prev + pk_count(v);
	}
	p->sp++;
	return 0;
}

static int
pk_push_type(msim_trace_t *t, pk_t *p, int type, uint64_t i)
{
	pk_val_t v = {.type = (uint8_t)type, .i = i};
	return pk_push(t, p, &v);
}

/* Pops one value into *out (a run gives up one opaque value). */
static int
pk_pop(msim_trace_t *t, pk_t *p, pk_val_t *out)
{
	if (p->sp == 0 || p->stack[p->sp - 1].type == V_MARK)
		return pk_fail(t, p, MSIM_EFORMAT,
			       "pickle stack underflow");
	pk_val_t *top = &p->stack[p->sp - 1];
	if (top->type == V_RUN && top->i > 1) {
		top->i--;
		top->cum--;
		*out = (pk_val_t){.type = V_OPAQUE};
		return 0;
	}
	*out = *top;
	p->sp--;
	return 0;
}

/* The index of the topmost MARK, or an error. */
static int
pk_topmark(msim_trace_t *t, pk_t *p, size_t *m)
{
	if (!p->nmarks)
		return pk_fail(t, p, MSIM_EFORMAT, "no MARK on the stack");
	*m = p->marks[p->nmarks - 1];
	return 0;
}

static void
pk_popmark(pk_t *p, size_t m)
{
	p->sp = m;
	p->nmarks--;
}

/* ---- stack frames ---- */

/* Keeps the n bytes at s in the pool: v->sid.  Returns 0 or MSIM_ENOMEM
 * (a full pool leaves the string without a sid). */
static int
pk_pool(pk_t *p, const char *s, size_t n, pk_val_t *v)
{
	if (p->npool + n + 1 > PK_POOL_MAX || p->nstr >= (1u << 20) - 1)
		return 0;
	if (MSIM_GROW(p->stroff, p->capstr, p->nstr + 1, 1024) ||
	    MSIM_GROW(p->pool, p->cappool, p->npool + n + 1, 4096))
		return MSIM_ENOMEM;
	memcpy(p->pool + p->npool, s, n);
	p->pool[p->npool + n] = '\0';
	p->stroff[p->nstr++] = (uint32_t)p->npool;
	v->sid = (uint32_t)p->nstr;
	p->npool += n + 1;
	return 0;
}

static const char *
pk_str(const pk_t *p, uint32_t sid)
{
	return sid && sid <= p->nstr ? p->pool + p->stroff[sid - 1] : "";
}

static bool
pk_ends(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);
	return n >= k && !strcmp(s + n - k, tail);
}

/*
 * One frame of the entry being read, frames coming innermost first.  The
 * first Python frame outside PyTorch's own files becomes the site; the stack
 * tells the category: inside an optimizer's step (torch/optim, or
 * GradScaler.step/unscale_), in backward(), in Module._apply (.to(),
 * .cuda() of parameters and buffers), in a module's forward
 * (Module._call_impl); a stack with no PyTorch frame at all is the
 * program making a tensor itself (torch.randn(..., device="cuda"),
 * x.cuda()): an input.  Anything else is "other".
 */
static void
pk_frame(pk_t *p, pk_fr_t *l, const pk_fr_t *fr)
{
	const char *file = pk_str(p, fr->file);
	const char *name = pk_str(p, fr->name);
	/* Snapshots recorded with stacks="all" (the default since PyTorch
	 * 2.1) interleave C++ frames ("??" or a .cpp/.so file, line 0):
	 * only Python frames (a .py file, or "<string>" and the like) say
	 * where and why, and a stack of C++ frames alone is the autograd
	 * engine's thread. */
	if (!pk_ends(file, ".py") && file[0] != '<')
		return;
	/* PyTorch's own files: an installed torch package, or a source
	 * tree's torch/ (a virtualenv under /opt/torch is not one). */
	const char *pk = strstr(file, "-packages/");
	bool torch = pk ? !strncmp(pk + 10, "torch/", 6)
			: strstr(file, "/torch/") != NULL;
	if (strstr(file, "/torch/optim/") ||
	    (pk_ends(file, "/torch/amp/grad_scaler.py") &&
	     (!strcmp(name, "step") || !strcmp(name, "unscale_"))))
		l->flags |= FR_OPTIMIZER;
	else if (!strcmp(name, "backward") || !strcmp(name, "_make_grads"))
		l->flags |= FR_BACKWARD;
	else if (pk_ends(file, "/torch/nn/modules/module.py") &&
		 (!strcmp(name, "_apply") || !strcmp(name, "to") ||
		  !strcmp(name, "cuda")))
		l->flags |= FR_PARAMETER;
	else if (pk_ends(file, "/torch/nn/modules/module.py") &&
		 !strcmp(name, "_call_impl"))
		l->flags |= FR_FORWARD;
	l->any = true;
	if (torch)
		l->flags |= FR_TORCH;
	if (!torch && !l->file && fr->file) {
		l->file = fr->file;
		l->name = fr->name;
		l->line = fr->line;
	}
}

/* A record for the frame dict or frames list v about to be pushed. */
static int
pk_fr_new(msim_trace_t *t, pk_t *p, pk_val_t *v)
{
	if (p->nfr == PK_MAX_FR)
		return pk_fail(t, p, MSIM_EFORMAT, "over 16777216 stack "
			       "frames");
	if (MSIM_GROW(p->fr, p->capfr, p->nfr + 1, 256))
		return MSIM_ENOMEM;
	p->fr[p->nfr] = (pk_fr_t){0};
	v->dev = (uint32_t)p->nfr++;
	return 0;
}

/* The tag of the entry's frames (see pk_frame()).  Returns 0 or an
 * error. */
static int
pk_frames_tag(msim_trace_t *t, pk_t *p, uint16_t *tag_out)
{
	const pk_fr_t *l = &p->fr[p->fr_cur];
	int cat = l->flags & FR_OPTIMIZER ? MSIM_CAT_OPTIMIZER
		: l->flags & FR_BACKWARD ? MSIM_CAT_GRADIENT
		: l->flags & FR_PARAMETER ? MSIM_CAT_PARAMETER
		: l->flags & FR_FORWARD ? MSIM_CAT_ACTIVATION
		: l->flags & FR_TORCH ? MSIM_CAT_OTHER
		: MSIM_CAT_INPUT;
	char site[600];
	int n;
	if (!l->any) {
		/* No Python frame: the autograd engine's own thread, which
		 * runs backward. */
		cat = MSIM_CAT_GRADIENT;
		n = snprintf(site, sizeof(site), "(autograd engine: no "
			     "Python frames)");
	} else if (l->file) {
		const char *file = pk_str(p, l->file);
		const char *sp = strstr(file, "-packages/");
		n = snprintf(site, sizeof(site), "%s:%llu %s",
			     sp ? sp + 10 : file,
			     (unsigned long long)l->line,
			     pk_str(p, l->name));
	} else {
		n = 0;
	}
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(site))
		n = sizeof(site) - 1;
	for (int i = 0; i < n; i++)
		if (site[i] == ',' || site[i] == '\n' || site[i] == '\r')
			site[i] = ';';
	int rc = msim_trace_tag_intern(t, cat, site, (size_t)n, tag_out);
	return rc ? pk_fail(t, p, rc, "out of memory") : 0;
}

/* ---- entries ---- */

static int
pk_queue(pk_t *p, const msim_entry_t *e)
{
	if (p->qhead + p->qlen == p->capq) {
		if (p->qhead) {
			memmove(p->q, p->q + p->qhead, p->qlen * sizeof(*p->q));
			p->qhead = 0;
		} else if (MSIM_GROW(p->q, p->capq, p->qlen + 1, 64)) {
			return MSIM_ENOMEM;
		}
	}
	p->q[p->qhead + p->qlen++] = *e;
	return 0;
}

/* Hands out the trace entry collected in dict d of device dev. */
static int
pk_emit(msim_trace_t *t, pk_t *p, pk_val_t *d, uint32_t dev)
{
	d->have |= EMITTED;
	if (t->opt.device1 && dev != t->opt.device1 - 1)
		return 0;
	if (!t->opt.device1 && !t->opt.all_devices) {
		if (p->chosen < 0) {
			p->chosen = (int)dev;
		} else if ((uint32_t)p->chosen != dev) {
			t->offset = p->op_off + 1;
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "devices %d and %u both have "
					       "trace events: choose one with "
					       "--device", p->chosen, dev);
		}
	}
	if (!(d->have & HAVE_ACTION))
		return pk_fail(t, p, MSIM_EFORMAT, "trace entry without "
			       "'action'");
	msim_entry_t e = {.action = (uint8_t)(d->str - S_ACT0)};
	bool oom = e.action == MSIM_ACT_OOM;
	int need_addr = oom ? F_DEVFREE : F_ADDR;
	if (!(d->have & (1u << need_addr)) && e.action != MSIM_ACT_SNAPSHOT &&
	    e.action != MSIM_ACT_ANNOTATE &&
	    e.action != MSIM_ACT_USER_DEFINED)
		return pk_fail(t, p, MSIM_EFORMAT, oom
			       ? "oom entry without 'device_free'"
			       : "trace entry without 'addr'");
	if (!(d->have & (1u << F_SIZE)) && e.action <= MSIM_ACT_OOM)
		return pk_fail(t, p, MSIM_EFORMAT,
			       "trace entry without 'size'");
	e.addr = d->have & (1u << need_addr) ? d->f[need_addr] : 0;
	e.size = d->f[F_SIZE];
	e.stream = d->f[F_STREAM];
	e.time_us = d->f[F_TIME];
	e.device = dev;
	if (!(d->have & (1u << F_TIME)))
		t->untimed++; /* PyTorch 2.0 wrote no time_us */
	int rc;
	if (p->fr_seen && (e.action == MSIM_ACT_ALLOC || oom) &&
	    (rc = pk_frames_tag(t, p, &e.tag)))
		return rc;
	return pk_queue(p, &e);
}

/* ---- the segments state ---- */

/* Gives the segment dict v (about to be pushed) a new record. */
static int
pk_seg_new(msim_trace_t *t, pk_t *p, pk_val_t *v)
{
	if (p->nsegs == PK_MAX_SEGS)
		return pk_fail(t, p, MSIM_EFORMAT, "snapshot state has over "
			       "1048576 segments");
	if (MSIM_GROW(p->segs, p->capsegs, p->nsegs + 1, 64))
		return MSIM_ENOMEM;
	p->segs[p->nsegs] = (msim_snap_segment_t){0};
	v->dev = (uint32_t)p->nsegs++;
	return 0;
}

/* Gives the block dict v of segment v->dev a new record.  Blocks come
 * grouped by segment, as each segment writes its list inside its dict. */
static int
pk_block_new(msim_trace_t *t, pk_t *p, pk_val_t *v)
{
	if (p->nblocks == PK_MAX_BLOCKS)
		return pk_fail(t, p, MSIM_EFORMAT, "snapshot state has over "
			       "4194304 blocks");
	if (p->nblocks && p->blocks[p->nblocks - 1].seg > v->dev)
		return pk_fail(t, p, MSIM_EFORMAT, "a block of an earlier "
			       "segment after a later one's");
	if (MSIM_GROW(p->blocks, p->capblocks, p->nblocks + 1, 256))
		return MSIM_ENOMEM;
	p->blocks[p->nblocks] = (msim_snap_block_t){.seg = v->dev};
	v->dev = (uint32_t)p->nblocks++;
	return 0;
}

/* A field of a segment or block dict d: the value v of key k. */
static int
pk_state_set(msim_trace_t *t, pk_t *p, pk_val_t *d, const pk_val_t *k,
	     const pk_val_t *v)
{
	bool seg = d->role == R_SEG;
	uint64_t *u = NULL;
	uint8_t have = 0;
	if (k->str == S_SEGMENT_TYPE && seg) {
		if (v->type != V_STR ||
		    (v->str != S_SMALL && v->str != S_LARGE))
			return pk_fail(t, p, MSIM_EFORMAT, "segment_type is "
				       "neither 'small' nor 'large'");
		p->segs[d->dev].large = v->str == S_LARGE;
		return 0;
	}
	if (k->str == S_SEGPOOL && seg) {
		/* (0, 0) is the default pool; others are numbered 1, 2, ...
		 * in the order the segments list them. */
		if (v->type != V_OPAQUE || v->neg != PK_PAIR)
			return pk_fail(t, p, MSIM_EFORMAT, "segment_pool_id "
				       "is not a pair of numbers");
		if (!v->f[0] && !v->f[1])
			return 0;
		size_t i = 0;
		while (i < p->npools && (p->pools[i][0] != v->f[0] ||
					 p->pools[i][1] != v->f[1]))
			i++;
		if (i == p->npools) {
			if (p->npools == PK_MAX_POOLS)
				return pk_fail(t, p, MSIM_EFORMAT, "over 65535 "
					       "private pools");
			if (MSIM_GROW(p->pools, p->cappools, p->npools + 1, 8))
				return MSIM_ENOMEM;
			p->pools[i][0] = v->f[0];
			p->pools[i][1] = v->f[1];
			p->npools++;
		}
		p->segs[d->dev].pool = (uint32_t)(i + 1);
		return 0;
	}
	if (k->str == S_STATE && !seg) {
		if (v->type == V_STR && v->str == S_AWAITING) {
			p->blocks[d->dev].state = MSIM_SNAP_PENDING_FREE;
			d->have |= HAVE_STATE;
			return 0;
		}
		if (v->type != V_STR || v->str < S_STATE0 ||
		    v->str >= S_STATE0 + MSIM_SNAP_NSTATES)
			return pk_fail(t, p, MSIM_EFORMAT,
				       "block with an unknown state");
		p->blocks[d->dev].state = (uint8_t)(v->str - S_STATE0);
		d->have |= HAVE_STATE;
		return 0;
	}
	if (seg) {
		msim_snap_segment_t *g = &p->segs[d->dev];
		switch (k->str) {
		case S_ADDRESS: u = &g->addr; have = HAVE_ADDRESS; break;
		case S_TOTAL_SIZE: u = &g->total_size; have = HAVE_SIZE; break;
		case S_ALLOCATED_SIZE: u = &g->allocated_size; break;
		case S_ACTIVE_SIZE: u = &g->active_size; break;
		case S_REQUESTED_SIZE: u = &g->requested_size; break;
		case S_STREAM: u = &g->stream; break;
		case S_DEVICE:
		case S_IS_EXPANDABLE: break;
		default: return 0;
		}
	} else {
		msim_snap_block_t *b = &p->blocks[d->dev];
		switch (k->str) {
		case S_ADDRESS: u = &b->addr; have = HAVE_ADDRESS; break;
		case S_SIZE: u = &b->size; have = HAVE_SIZE; break;
		case S_REQUESTED_SIZE: u = &b->requested; break;
		default: return 0;
		}
	}
	if (v->type != V_INT && v->type != V_BOOL)
		return pk_fail(t, p, MSIM_EFORMAT, seg
			       ? "segment field is not a number"
			       : "block field is not a number");
	if (v->neg)
		return pk_fail(t, p, MSIM_EFORMAT, "negative or oversized "
			       "number in the segments state");
	if (k->str == S_DEVICE) {
		if (v->i > UINT32_MAX)
			return pk_fail(t, p, MSIM_EFORMAT,
				       "segment device index out of range");
		p->segs[d->dev].device = (uint32_t)v->i;
	} else if (k->str == S_IS_EXPANDABLE) {
		p->segs[d->dev].expandable = v->i != 0;
	} else {
		*u = v->i;
		d->have |= have;
	}
	return 0;
}

/* A segment or block dict is complete: checks its record. */
static int
pk_state_done(msim_trace_t *t, pk_t *p, pk_val_t *d)
{
	d->have |= EMITTED;
	if (d->role == R_SEG && (d->have & (HAVE_ADDRESS | HAVE_SIZE)) !=
				(HAVE_ADDRESS | HAVE_SIZE))
		return pk_fail(t, p, MSIM_EFORMAT, "segment without 'address' "
			       "or 'total_size'");
	if (d->role == R_BLOCK &&
	    (d->have & (HAVE_SIZE | HAVE_STATE)) != (HAVE_SIZE | HAVE_STATE))
		return pk_fail(t, p, MSIM_EFORMAT, "block without 'size' or "
			       "'state'");
	if (d->role == R_SEG) {
		/* PyTorch 2.0 writes blocks without 'address': they tile
		 * their segment in address order (segmentInfo() walks
		 * block->next from the segment's head), so each starts
		 * where the one before ends. */
		size_t j = p->nblocks;
		while (j && p->blocks[j - 1].seg == d->dev)
			j--;
		uint64_t at = p->segs[d->dev].addr;
		for (; j < p->nblocks; j++) {
			if (!p->blocks[j].addr)
				p->blocks[j].addr = at;
			at = p->blocks[j].addr + p->blocks[j].size;
		}
	}
	return 0;
}

/* Records key k = value v in dict d (only the fields we look for). */
static int
pk_setitem(msim_trace_t *t, pk_t *p, pk_val_t *d, const pk_val_t *k,
	   const pk_val_t *v)
{
	if (d->type != V_DICT || k->type != V_STR)
		return 0;
	if (d->role == R_SEG || d->role == R_BLOCK)
		return d->have & EMITTED ? 0 : pk_state_set(t, p, d, k, v);
	if (d->role == R_FRAME) {
		pk_fr_t *f = &p->fr[d->dev];
		if (k->str == S_FILENAME && v->type == V_STR)
			f->file = v->sid;
		else if (k->str == S_NAME && v->type == V_STR)
			f->name = v->sid;
		else if (k->str == S_LINE && v->type == V_INT && !v->neg)
			f->line = v->i;
		return 0;
	}
	if (d->role == R_ENTRY && k->str == S_FRAMES && v->type == V_LIST &&
	    v->role == R_FRAMES) {
		p->fr_seen = true;
		p->fr_cur = v->dev;
		t->tagged = true;
		return 0;
	}
	if (d->role == R_SETTINGS) {
		p->saw_settings = true;
		if (k->str == S_EXPANDABLE && v->type == V_BOOL)
			p->expandable = v->i != 0;
		else if (k->str == S_MAXSPLIT && v->type == V_INT && !v->neg &&
			 v->i < (UINT64_C(1) << 62))
			p->max_split = v->i; /* -1 or SIZE_MAX: unlimited */
		else if (k->str == S_GCTHRESH && v->type == V_OPAQUE &&
			 v->neg == 2)
			memcpy(&p->gc_threshold, &v->i, sizeof(double));
		return 0;
	}
	if (k->str == S_ACTION) {
		if (v->type != V_STR)
			return 0;
		if (v->str < S_ACT0 && d->role != R_ENTRY)
			return 0;
		if (v->str < S_ACT0) {
			const char *name = v->sid ? pk_str(p, v->sid) : "?";
			if (msim_trace_skip_unknown(t, name)) {
				d->have |= EMITTED; /* never handed out */
				return 0;
			}
			t->offset = p->op_off + 1;
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "trace entry with an unknown "
					       "action '%s' (--lenient skips "
					       "such entries)", name);
		}
		d->str = v->str;
		d->have |= HAVE_ACTION;
	} else if (k->str >= S_ADDR && k->str <= S_DEVICE_FREE) {
		if (v->type != V_INT && v->type != V_BOOL)
			return 0;
		if (v->neg)
			return pk_fail(t, p, MSIM_EFORMAT,
				       "negative or oversized number in a "
				       "trace entry");
		d->f[k->str - S_ADDR] = v->i;
		d->have |= (uint8_t)(1u << (k->str - S_ADDR));
	}
	return 0;
}

/* A value attached to list l: a trace entry completes here at the latest. */
static int
pk_attach(msim_trace_t *t, pk_t *p, pk_val_t *l, pk_val_t *v)
{
	if (l->type != V_LIST)
		return 0;
	if (((l->role == R_SEGLIST && v->role == R_SEG) ||
	     (l->role == R_BLOCKLIST && v->role == R_BLOCK)) &&
	    v->type == V_DICT && !(v->have & EMITTED))
		return pk_state_done(t, p, v);
	if (l->role == R_FRAMES && v->role == R_FRAME && v->type == V_DICT) {
		pk_frame(p, &p->fr[l->dev], &p->fr[v->dev]);
		return 0;
	}
	if (l->role == R_DEVLIST && v->type == V_DICT &&
	    !(v->have & EMITTED) && (v->have & HAVE_ACTION))
		return pk_emit(t, p, v, l->dev);
	return 0;
}

/* Decides the role of a dict or list about to be pushed. */
static void
pk_role(pk_t *p, pk_val_t *v)
{
	if (p->sp == 0) {
		v->role = v->type == V_DICT ? R_ROOT : R_NONE;
		return;
	}
	const pk_val_t *top = &p->stack[p->sp - 1];
	const pk_val_t *parent = NULL, *key = NULL;
	uint64_t index = 0;
	if (top->type == V_MARK) {
		/* First item after a MARK: of the container below it. */
		if (p->sp >= 2)
			parent = top - 1;
	} else if (p->nmarks) {
		size_t m = p->marks[p->nmarks - 1];
		const pk_val_t *c = m ? &p->stack[m - 1] : NULL;
		if (c && c->type == V_DICT && (top->cum & 1) &&
		    top->type != V_LIST && top->type != V_DICT) {
			parent = c; /* a value: top is its key */
			key = top;
		} else if (c && c->type == V_LIST) {
			parent = c;
			index = top->cum;
		}
	}
	if (!parent && top->type == V_LIST) {
		parent = top; /* EMPTY_LIST ... APPEND */
	} else if (!parent && p->sp >= 2 && top[-1].type == V_DICT &&
		   top->type == V_STR) {
		parent = top - 1; /* EMPTY_DICT key ... SETITEM */
		key = top;
	}
	if (!parent)
		return;
	if (parent->type == V_LIST)
		index += parent->i;
	switch (parent->role) {
	case R_ROOT:
		if (key && key->type == V_STR && key->str == S_DEVICE_TRACES &&
		    v->type == V_LIST)
			v->role = R_TRACES;
		if (key && key->type == V_STR && key->str == S_SEGMENTS &&
		    v->type == V_LIST)
			v->role = R_SEGLIST;
		if (key && key->type == V_STR &&
		    key->str == S_ALLOC_SETTINGS && v->type == V_DICT)
			v->role = R_SETTINGS;
		break;
	case R_SEGLIST:
		if (v->type == V_DICT && parent->type == V_LIST)
			v->role = R_SEG;
		break;
	case R_SEG:
		if (key && key->type == V_STR && key->str == S_FRAMES &&
		    v->type == V_LIST)
			v->role = R_FRAMES; /* entries may share its frames */
		if (key && key->type == V_STR && key->str == S_BLOCKS &&
		    v->type == V_LIST && !(parent->have & EMITTED)) {
			v->role = R_BLOCKLIST;
			v->dev = parent->dev;
		}
		break;
	case R_BLOCK:
		if (key && key->type == V_STR && key->str == S_FRAMES &&
		    v->type == V_LIST)
			v->role = R_FRAMES;
		break;
	case R_BLOCKLIST:
		if (v->type == V_DICT && parent->type == V_LIST) {
			v->role = R_BLOCK;
			v->dev = parent->dev;
		}
		break;
	case R_TRACES:
		if (v->type == V_LIST && parent->type == V_LIST &&
		    index < UINT32_MAX) {
			v->role = R_DEVLIST;
			v->dev = (uint32_t)index;
		}
		break;
	case R_DEVLIST:
		if (v->type == V_DICT && parent->type == V_LIST) {
			v->role = R_ENTRY;
			v->dev = parent->dev;
			p->fr_seen = false;
		}
		break;
	case R_ENTRY:
		if (key && key->type == V_STR && key->str == S_FRAMES &&
		    v->type == V_LIST)
			v->role = R_FRAMES;
		break;
	case R_FRAMES:
		if (v->type == V_DICT && parent->type == V_LIST)
			v->role = R_FRAME;
		break;
	default:
		break;
	}
}

/* ---- the memo ---- */

static int
pk_memo_put(msim_trace_t *t, pk_t *p, uint64_t idx)
{
	if (p->sp == 0 || p->stack[p->sp - 1].type == V_MARK)
		return pk_fail(t, p, MSIM_EFORMAT, "memo of an empty stack");
	uint64_t limit = t->size ? t->size : PK_MAX_MEMO_NOSIZE;
	if (idx > limit || idx >= M_PAYLOAD)
		return pk_fail(t, p, MSIM_EFORMAT,
			       "memo index larger than the file");
	if (MSIM_GROW_ZERO(p->memo, p->capmemo, (size_t)idx + 1, 1024))
		return MSIM_ENOMEM;
	const pk_val_t *v = &p->stack[p->sp - 1];
	uint32_t slot = M_OPAQUE << 28;
	switch (v->type) {
	case V_NONE: slot = M_NONE << 28; break;
	case V_BOOL: slot = M_BOOL << 28 | (uint32_t)v->i; break;
	case V_OPAQUE:
		if (v->neg != PK_PAIR)
			break;
		if (p->npairs >= M_PAYLOAD)
			return pk_fail(t, p, MSIM_EFORMAT,
				       "too many memoized tuples");
		if (MSIM_GROW(p->pairs, p->cappairs, p->npairs + 1, 16))
			return MSIM_ENOMEM;
		p->pairs[p->npairs][0] = v->f[0];
		p->pairs[p->npairs][1] = v->f[1];
		slot = (uint32_t)M_PAIR << 28 | (uint32_t)p->npairs++;
		break;
	case V_DICT:
	case V_LIST:
		if (v->role == R_FRAME || v->role == R_FRAMES)
			slot = (uint32_t)(v->role == R_FRAME ? M_FRAME
							     : M_FRAMES) << 28 |
			       v->dev;
		break;
	case V_STR:
		slot = M_STR << 28 | v->str |
		       (v->sid < (1u << 20) ? v->sid << 8 : 0);
		break;
	case V_INT:
		if (v->neg) {
			slot = M_BIGINT << 28;
		} else if (v->i < M_PAYLOAD) {
			slot = M_INT << 28 | (uint32_t)v->i;
		} else {
			/* A large int: its value goes to p->ints. */
			if (p->nints >= M_PAYLOAD)
				return pk_fail(t, p, MSIM_EFORMAT,
					       "too many memoized ints");
			if (MSIM_GROW(p->ints, p->capints, p->nints + 1, 64))
				return MSIM_ENOMEM;
			p->ints[p->nints] = v->i;
			slot = (uint32_t)M_LARGEINT << 28 | (uint32_t)p->nints++;
		}
		break;
	default: break;
	}
	if (!p->memo[idx])
		p->nset++;
	p->memo[idx] = slot;
	return 0;
}

static int
pk_memo_get(msim_trace_t *t, pk_t *p, uint64_t idx)
{
	if (idx >= p->capmemo || p->memo[idx] == 0)
		return pk_fail(t, p, MSIM_EFORMAT,
			       "memo GET of an index never PUT");
	uint32_t slot = p->memo[idx], pay = slot & M_PAYLOAD;
	pk_val_t v = {.type = V_OPAQUE};
	switch (slot >> 28) {
	case M_NONE: v.type = V_NONE; break;
	case M_BOOL: v.type = V_BOOL; v.i = pay; break;
	case M_STR:
		v.type = V_STR;
		v.str = (uint8_t)pay;
		v.sid = pay >> 8;
		break;
	case M_INT: v.type = V_INT; v.i = pay; break;
	case M_BIGINT: v.type = V_INT; v.neg = 1; break;
	case M_LARGEINT: v.type = V_INT; v.i = p->ints[pay]; break;
	case M_PAIR:
		v.neg = PK_PAIR;
		v.f[0] = p->pairs[pay][0];
		v.f[1] = p->pairs[pay][1];
		break;
	case M_FRAME:
	case M_FRAMES: /* shared by several entries */
		v.type = (slot >> 28) == M_FRAME ? V_DICT : V_LIST;
		v.role = (slot >> 28) == M_FRAME ? R_FRAME : R_FRAMES;
		v.dev = pay;
		break;
	default: break;
	}
	return pk_push(t, p, &v);
}

/* ---- opcodes ---- */

/* A string of n bytes: compared with the names we look for, else opaque. */
static int
pk_string(msim_trace_t *t, pk_t *p, uint64_t n)
{
	int rc;
	if ((rc = pk_check_len(t, p, n)))
		return rc;
	const pk_val_t *top = p->sp ? &p->stack[p->sp - 1] : NULL;
	if (top && top->type == V_STR && top->str == S_PTCONF &&
	    n < sizeof(p->conf)) {
		/* allocator_settings' PYTORCH_CUDA_ALLOC_CONF string */
		if ((rc = pk_need(t, p, (size_t)n)))
			return rc;
		memcpy(p->conf, p->buf + p->pos, (size_t)n);
		p->conf[n] = '\0';
		p->pos += (size_t)n;
		return pk_push_type(t, p, V_STR, 0);
	}
	if (n > PK_STR_MAX) {
		if ((rc = pk_skip(t, p, n)))
			return rc;
		return pk_push_type(t, p, V_STR, 0);
	}
	if ((rc = pk_need(t, p, (size_t)n)))
		return rc;
	const char *s = (const char *)p->buf + p->pos;
	p->pos += (size_t)n;
	pk_val_t v = {.type = V_STR, .str = S_OTHER};
	if (n > PK_SHORT)
		return pk_pool(p, s, (size_t)n, &v) ? MSIM_ENOMEM
						    : pk_push(t, p, &v);
	for (int k = 1; k < S_NKEYS; k++)
		if (strlen(pk_keys[k]) == n && !memcmp(pk_keys[k], s, n)) {
			v.str = (uint8_t)k;
			break;
		}
	if (v.str == S_OTHER) {
		int a = msim_action_parse(s, (size_t)n);
		if (a >= 0)
			v.str = (uint8_t)(S_ACT0 + a);
	}
	if (v.str == S_OTHER && pk_pool(p, s, (size_t)n, &v))
		return MSIM_ENOMEM;
	return pk_push(t, p, &v);
}

/* A little-endian two's complement int of n bytes. */
static int
pk_long(msim_trace_t *t, pk_t *p, uint64_t n)
{
	int rc;
	if ((rc = pk_check_len(t, p, n)))
		return rc;
	pk_val_t v = {.type = V_INT};
	if (n > 9) {
		v.neg = 1; /* too large to be a field */
		if ((rc = pk_skip(t, p, n)))
			return rc;
		return pk_push(t, p, &v);
	}
	if ((rc = pk_need(t, p, (size_t)n)))
		return rc;
	const uint8_t *b = p->buf + p->pos;
	p->pos += (size_t)n;
	if (n == 0)
		return pk_push(t, p, &v);
	bool negative = b[n - 1] & 0x80;
	if (n == 9) {
		v.i = pk_le(b, 8);
		v.neg = negative || b[8] != 0;
	} else {
		v.i = pk_le(b, (int)n);
		v.neg = negative;
	}
	return pk_push(t, p, &v);
}

/* Pops values down to the topmost MARK, feeding them to the container
 * below it (SETITEMS, APPENDS, ADDITEMS) or dropping them. */
static int
pk_items(msim_trace_t *t, pk_t *p, int op)
{
	size_t m = 0;
	int rc;
	if ((rc = pk_topmark(t, p, &m)))
		return rc;
	pk_val_t *c = m ? &p->stack[m - 1] : NULL;
	if (op == 'u' || op == 'e' || op == 0x90) {
		if (!c || c->type == V_MARK)
			return pk_fail(t, p, MSIM_EFORMAT,
				       "SETITEMS/APPENDS with nothing to fill");
		if ((op == 'u' && c->type != V_DICT &&
		     !pk_inert(c)) ||
		    (op == 'e' && c->type != V_LIST && !pk_inert(c)))
			return pk_fail(t, p, MSIM_EFORMAT,
				       op == 'u' ? "SETITEMS on a non-dict"
						 : "APPENDS on a non-list");
	}
	if (op == 'u') {
		const pk_val_t *key = NULL;
		pk_val_t opaque = {.type = V_OPAQUE};
		for (size_t i = m + 1; i < p->sp; i++) {
			pk_val_t *v = &p->stack[i];
			uint64_t n = pk_count(v);
			if (v->type == V_RUN) {
				if (key) {
					if ((rc = pk_setitem(t, p, c, key,
							     &opaque)))
						return rc;
					key = NULL;
					n--;
				}
				if (n & 1)
					key = &opaque;
			} else if (!key) {
				key = v;
			} else {
				if ((rc = pk_setitem(t, p, c, key, v)))
					return rc;
				key = NULL;
			}
		}
		if (key)
			return pk_fail(t, p, MSIM_EFORMAT,
				       "SETITEMS with a key and no value");
		if (c->type == V_DICT && c->role == R_ENTRY &&
		    (c->have & HAVE_ACTION) && !(c->have & EMITTED) &&
		    (rc = pk_emit(t, p, c, c->dev)))
			return rc;
		if (c->type == V_DICT &&
		    (c->role == R_SEG || c->role == R_BLOCK) &&
		    !(c->have & EMITTED) && (rc = pk_state_done(t, p, c)))
			return rc;
	} else if (op == 'e') {
		for (size_t i = m + 1; i < p->sp; i++) {
			if ((rc = pk_attach(t, p, c, &p->stack[i])))
				return rc;
			if (c->type == V_LIST)
				c->i += pk_count(&p->stack[i]);
		}
	}
	pk_popmark(p, m);
	return 0;
}

/* Runs one opcode.  Returns 0, or an error. */
static int
pk_op(msim_trace_t *t, pk_t *p)
{
	int rc;
	if ((rc = pk_need(t, p, 1)))
		return rc;
	p->op_off = p->base + p->pos;
	uint8_t op = p->buf[p->pos++];
	pk_val_t a, b;
	switch (op) {
	case 0x80: /* PROTO */
		if ((rc = pk_need(t, p, 1)))
			return rc;
		if (p->buf[p->pos] < 2 || p->buf[p->pos] > 5)
			return pk_fail(t, p, MSIM_EFORMAT,
				       "pickle protocol not in 2..5");
		p->pos++;
		return 0;
	case 0x95: /* FRAME: a length we need not use */
		if ((rc = pk_need(t, p, 8)))
			return rc;
		uint64_t flen = pk_le(p->buf + p->pos, 8);
		p->pos += 8;
		return pk_check_len(t, p, flen);
	case '.': /* STOP */
		p->stopped = true;
		return 0;
	case '(': /* MARK */
		return pk_push_type(t, p, V_MARK, 0);
	case '0': /* POP */
		if (p->sp && p->stack[p->sp - 1].type == V_MARK) {
			pk_popmark(p, p->sp - 1);
			return 0;
		}
		return pk_pop(t, p, &a);
	case '1': { /* POP_MARK */
		size_t m = 0;
		if ((rc = pk_topmark(t, p, &m)))
			return rc;
		pk_popmark(p, m);
		return 0;
	}
	case '2': /* DUP */
		if (p->sp == 0 || p->stack[p->sp - 1].type == V_MARK)
			return pk_fail(t, p, MSIM_EFORMAT, "DUP of nothing");
		a = p->stack[p->sp - 1];
		if (a.type == V_RUN || a.type == V_DICT || a.type == V_LIST)
			a = (pk_val_t){.type = V_OPAQUE};
		return pk_push(t, p, &a);
	case 'N':
		return pk_push_type(t, p, V_NONE, 0);
	case 0x88: /* NEWTRUE */
	case 0x89: /* NEWFALSE */
		return pk_push_type(t, p, V_BOOL, op == 0x88);
	case 'K': /* BININT1 */
	case 'M': /* BININT2 */
	case 'J': { /* BININT */
		int n = op == 'K' ? 1 : op == 'M' ? 2 : 4;
		if ((rc = pk_need(t, p, (size_t)n)))
			return rc;
		pk_val_t v = {.type = V_INT};
		v.i = pk_le(p->buf + p->pos, n);
		p->pos += (size_t)n;
		if (n == 4 && (v.i & 0x80000000u))
			v.neg = 1;
		return pk_push(t, p, &v);
	}
	case 0x8a: /* LONG1 */
		if ((rc = pk_need(t, p, 1)))
			return rc;
		return pk_long(t, p, p->buf[p->pos++]);
	case 0x8b: /* LONG4 */
		if ((rc = pk_need(t, p, 4)))
			return rc;
		a.i = pk_le(p->buf + p->pos, 4);
		p->pos += 4;
		if (a.i & 0x80000000u)
			return pk_fail(t, p, MSIM_EFORMAT,
				       "LONG4 of negative length");
		return pk_long(t, p, a.i);
	case 'G': { /* BINFLOAT: big-endian IEEE 754 */
		if ((rc = pk_need(t, p, 8)))
			return rc;
		pk_val_t v = {.type = V_OPAQUE, .neg = 2};
		for (int k = 0; k < 8; k++)
			v.i = v.i << 8 | p->buf[p->pos + k];
		p->pos += 8;
		return pk_push(t, p, &v);
	}
	case 0x8c: /* SHORT_BINUNICODE */
	case 'U':  /* SHORT_BINSTRING */
		if ((rc = pk_need(t, p, 1)))
			return rc;
		return pk_string(t, p, p->buf[p->pos++]);
	case 'X': /* BINUNICODE */
	case 'T': /* BINSTRING */
		if ((rc = pk_need(t, p, 4)))
			return rc;
		a.i = pk_le(p->buf + p->pos, 4);
		p->pos += 4;
		if (op == 'T' && (a.i & 0x80000000u))
			return pk_fail(t, p, MSIM_EFORMAT,
				       "BINSTRING of negative length");
		return pk_string(t, p, a.i);
	case 0x8d: /* BINUNICODE8 */
		if ((rc = pk_need(t, p, 8)))
			return rc;
		a.i = pk_le(p->buf + p->pos, 8);
		p->pos += 8;
		return pk_string(t, p, a.i);
	case 'C':  /* SHORT_BINBYTES */
	case 'B':  /* BINBYTES */
	case 0x8e: /* BINBYTES8 */
	case 0x96: { /* BYTEARRAY8 */
		int n = op == 'C' ? 1 : op == 'B' ? 4 : 8;
		if ((rc = pk_need(t, p, (size_t)n)))
			return rc;
		uint64_t len = pk_le(p->buf + p->pos, n);
		p->pos += (size_t)n;
		if ((rc = pk_check_len(t, p, len)) || (rc = pk_skip(t, p, len)))
			return rc;
		return pk_push_type(t, p, V_OPAQUE, 0);
	}
	case '}': /* EMPTY_DICT */
	case ']': { /* EMPTY_LIST */
		pk_val_t v = {.type = op == '}' ? V_DICT : V_LIST};
		pk_role(p, &v);
		if (v.role == R_TRACES)
			p->saw_traces = true;
		if (v.role == R_DEVLIST && v.dev >= p->ndev)
			p->ndev = v.dev + 1;
		if ((v.role == R_SEG && (rc = pk_seg_new(t, p, &v))) ||
		    (v.role == R_BLOCK && (rc = pk_block_new(t, p, &v))) ||
		    ((v.role == R_FRAME || v.role == R_FRAMES) &&
		     (rc = pk_fr_new(t, p, &v))))
			return rc;
		return pk_push(t, p, &v);
	}
	case ')':  /* EMPTY_TUPLE */
	case 0x8f: /* EMPTY_SET */
		return pk_push_type(t, p, V_OPAQUE, 0);
	case 0x86: { /* TUPLE2 */
		/* A pair of ints (a segment's segment_pool_id) is kept. */
		if ((rc = pk_pop(t, p, &b)) || (rc = pk_pop(t, p, &a)))
			return rc;
		pk_val_t v = {.type = V_OPAQUE};
		if (a.type == V_INT && !a.neg && b.type == V_INT && !b.neg) {
			v.neg = PK_PAIR;
			v.f[0] = a.i;
			v.f[1] = b.i;
		}
		return pk_push(t, p, &v);
	}
	case 0x85: /* TUPLE1 */
	case 0x87: /* TUPLE3 */
		for (int k = 0; k < op - 0x84; k++)
			if ((rc = pk_pop(t, p, &a)))
				return rc;
		return pk_push_type(t, p, V_OPAQUE, 0);
	case 't':  /* TUPLE */
	case 0x91: /* FROZENSET */
	case 'l':  /* LIST */
	case 'd':  /* DICT */
		if ((rc = pk_items(t, p, op)))
			return rc;
		return pk_push_type(t, p, V_OPAQUE, 0);
	case 'u':  /* SETITEMS */
	case 'e':  /* APPENDS */
	case 0x90: /* ADDITEMS */
		return pk_items(t, p, op);
	case 'a': /* APPEND */
		if ((rc = pk_pop(t, p, &a)))
			return rc;
		if (p->sp == 0 || p->stack[p->sp - 1].type == V_MARK ||
		    (p->stack[p->sp - 1].type != V_LIST &&
		     !pk_inert(&p->stack[p->sp - 1])))
			return pk_fail(t, p, MSIM_EFORMAT,
				       "APPEND to a non-list");
		if ((rc = pk_attach(t, p, &p->stack[p->sp - 1], &a)))
			return rc;
		if (p->stack[p->sp - 1].type == V_LIST)
			p->stack[p->sp - 1].i++;
		return 0;
	case 's': /* SETITEM */
		if ((rc = pk_pop(t, p, &b)) || (rc = pk_pop(t, p, &a)))
			return rc;
		if (p->sp == 0 || p->stack[p->sp - 1].type == V_MARK ||
		    (p->stack[p->sp - 1].type != V_DICT &&
		     !pk_inert(&p->stack[p->sp - 1])))
			return pk_fail(t, p, MSIM_EFORMAT,
				       "SETITEM on a non-dict");
		return pk_setitem(t, p, &p->stack[p->sp - 1], &a, &b);
	case 0x94: /* MEMOIZE: the index is the number of slots set */
		return pk_memo_put(t, p, p->nset);
	case 'q': /* BINPUT */
	case 'r': /* LONG_BINPUT */
	case 'h': /* BINGET */
	case 'j': { /* LONG_BINGET */
		int n = op == 'q' || op == 'h' ? 1 : 4;
		if ((rc = pk_need(t, p, (size_t)n)))
			return rc;
		uint64_t idx = pk_le(p->buf + p->pos, n);
		p->pos += (size_t)n;
		if (op == 'q' || op == 'r')
			return pk_memo_put(t, p, idx);
		return pk_memo_get(t, p, idx);
	}
	case 'c': /* GLOBAL: two lines, module and name */
		for (int k = 0; k < 2; k++) {
			for (int n = 0;; n++) {
				if (n == 256)
					return pk_fail(t, p, MSIM_EFORMAT,
						       "GLOBAL name too long");
				if ((rc = pk_need(t, p, 1)))
					return rc;
				if (p->buf[p->pos++] == '\n')
					break;
			}
		}
		return pk_push_type(t, p, V_OPAQUE, 0);
	case 0x93: /* STACK_GLOBAL */
	case 'R':  /* REDUCE */
	case 0x81: /* NEWOBJ */
		if ((rc = pk_pop(t, p, &a)) || (rc = pk_pop(t, p, &b)))
			return rc;
		return pk_push_type(t, p, V_OPAQUE, 0);
	case 0x92: /* NEWOBJ_EX */
		for (int k = 0; k < 3; k++)
			if ((rc = pk_pop(t, p, &a)))
				return rc;
		return pk_push_type(t, p, V_OPAQUE, 0);
	case 'b': /* BUILD: the state goes into the object below */
		if ((rc = pk_pop(t, p, &a)))
			return rc;
		if (p->sp == 0 || p->stack[p->sp - 1].type == V_MARK)
			return pk_fail(t, p, MSIM_EFORMAT, "BUILD of nothing");
		return 0;
	case 'Q': /* BINPERSID */
		if ((rc = pk_pop(t, p, &a)))
			return rc;
		return pk_push_type(t, p, V_OPAQUE, 0);
	case 0x98: /* READONLY_BUFFER */
		if (p->sp == 0 || p->stack[p->sp - 1].type == V_MARK)
			return pk_fail(t, p, MSIM_EFORMAT,
				       "READONLY_BUFFER of nothing");
		return 0;
	case 0x97: /* NEXT_BUFFER */
		return pk_fail(t, p, MSIM_ENOTSUP,
			       "out-of-band buffers (NEXT_BUFFER) are not "
			       "supported");
	default: {
		char why[64];
		snprintf(why, sizeof(why), "unknown pickle opcode 0x%02x", op);
		return pk_fail(t, p, MSIM_EFORMAT, why);
	}
	}
}

/* ---- the format ---- */

static bool
pk_probe(const char *head, size_t n)
{
	/* PROTO 2..5; protocol 4 and 5 pickles go on with FRAME. */
	return n >= 3 && (unsigned char)head[0] == 0x80 &&
	       head[1] >= 2 && head[1] <= 5;
}

static int
pk_open(msim_trace_t *t)
{
	pk_t *p = calloc(1, sizeof(*p));
	if (!p)
		return MSIM_ENOMEM;
	t->fmt = p;
	p->chosen = -1;
	p->expandable = -1;
	p->buf = malloc(PK_BUF);
	p->marks = malloc(PK_MAX_MARKS * sizeof(*p->marks));
	if (!p->buf || !p->marks)
		return MSIM_ENOMEM;
	return 0;
}

/* The allocator settings as a PYTORCH_CUDA_ALLOC_CONF string: the one the
 * process was given, else what _set_allocator_settings() left. */
static void
pk_settings(msim_trace_t *t, pk_t *p)
{
	if (!p->saw_settings)
		return;
	t->have_conf = true;
	if (p->conf[0]) {
		snprintf(t->alloc_conf, sizeof(t->alloc_conf), "%s", p->conf);
		return;
	}
	size_t k = 0;
	t->alloc_conf[0] = '\0';
	if (p->expandable == 1)
		k += (size_t)snprintf(t->alloc_conf + k,
				      sizeof(t->alloc_conf) - k,
				      "expandable_segments:True");
	if (p->max_split)
		k += (size_t)snprintf(t->alloc_conf + k,
				      sizeof(t->alloc_conf) - k,
				      "%smax_split_size_mb:%llu", k ? "," : "",
				      (unsigned long long)(p->max_split >>
							   20));
	if (p->gc_threshold > 0 && p->gc_threshold < 1 &&
	    k < sizeof(t->alloc_conf))
		snprintf(t->alloc_conf + k, sizeof(t->alloc_conf) - k,
			 "%sgarbage_collection_threshold:%g", k ? "," : "",
			 p->gc_threshold);
}

static int
pk_next(msim_trace_t *t, msim_entry_t *e)
{
	pk_t *p = t->fmt;
	while (p->qlen == 0) {
		if (p->stopped) {
			t->offset = p->op_off + 1;
			if (!p->saw_traces)
				return msim_trace_fail(
					t, MSIM_EFORMAT,
					"no 'device_traces' in this pickle (a "
					"snapshot of "
					"torch.cuda.memory._dump_snapshot() "
					"was expected)");
			if (t->opt.device1 && t->opt.device1 > p->ndev)
				return msim_trace_fail(
					t, MSIM_EINVAL,
					"no device %u: device_traces has %u",
					t->opt.device1 - 1, p->ndev);
			pk_settings(t, p);
			return 0;
		}
		int rc = pk_op(t, p);
		if (rc)
			return rc;
	}
	*e = p->q[p->qhead++];
	if (--p->qlen == 0)
		p->qhead = 0;
	t->offset = p->op_off + 1;
	return 1;
}

static int
pk_segments(msim_trace_t *t, const msim_snap_segment_t **segs_out,
	    size_t *n_out)
{
	pk_t *p = t->fmt;
	int64_t dev = t->opt.device1 ? (int64_t)t->opt.device1 - 1
				     : p->chosen;
	free(p->out);
	p->out = NULL;
	if (!p->nsegs)
		return 0;
	if (!(p->out = malloc(p->nsegs * sizeof(*p->out))))
		return MSIM_ENOMEM;
	size_t n = 0, j = 0;
	for (size_t i = 0; i < p->nsegs; i++) {
		msim_snap_segment_t *g = &p->segs[i];
		size_t first = j;
		while (j < p->nblocks && p->blocks[j].seg == i)
			j++;
		g->blocks = j > first ? &p->blocks[first] : NULL;
		g->nblocks = j - first;
		if (dev < 0 || g->device == dev)
			p->out[n++] = *g;
	}
	*segs_out = p->out;
	*n_out = n;
	return 0;
}

static void
pk_close(msim_trace_t *t)
{
	pk_t *p = t->fmt;
	free(p->segs);
	free(p->blocks);
	free(p->out);
	free(p->buf);
	free(p->stack);
	free(p->pairs);
	free(p->pools);
	free(p->marks);
	free(p->memo);
	free(p->ints);
	free(p->q);
	free(p->pool);
	free(p->stroff);
	free(p->fr);
	free(p);
	t->fmt = NULL;
}

/* ---- writing ---- */

typedef struct pkw_s {
	uint8_t buf[256];
	size_t len;
	unsigned batch; /* entries since the last MARK */
} pkw_t;

static void
pkw_str(pkw_t *w, const char *s)
{
	size_t n = strlen(s);
	w->buf[w->len++] = 0x8c; /* SHORT_BINUNICODE */
	w->buf[w->len++] = (uint8_t)n;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

static void
pkw_int(pkw_t *w, uint64_t v)
{
	if (v < 256) {
		w->buf[w->len++] = 'K';
		w->buf[w->len++] = (uint8_t)v;
		return;
	}
	/* LONG1: little-endian two's complement, a zero byte on top if the
	 * top bit is set. */
	uint8_t n = 0, *len = &w->buf[w->len + 1];
	w->buf[w->len] = 0x8a;
	w->len += 2;
	do {
		w->buf[w->len++] = (uint8_t)v;
		n++;
		v >>= 8;
	} while (v);
	if (w->buf[w->len - 1] & 0x80) {
		w->buf[w->len++] = 0;
		n++;
	}
	*len = n;
}

static int
pkw_flush(msim_trace_writer_t *w, pkw_t *p)
{
	if (fwrite(p->buf, 1, p->len, w->fp) != p->len)
		return msim_trace_writer_fail(w, MSIM_EIO, "cannot write");
	p->len = 0;
	return 0;
}

static int
pk_write_open(msim_trace_writer_t *w)
{
	pkw_t *p = calloc(1, sizeof(*p));
	if (!p)
		return msim_trace_writer_fail(w, MSIM_ENOMEM, "out of memory");
	w->fmt = p;
	static const uint8_t proto[] = {0x80, 4, '}', '('};
	memcpy(p->buf, proto, sizeof(proto));
	p->len = sizeof(proto);
	pkw_str(p, "segments");
	p->buf[p->len++] = ']';
	pkw_str(p, "device_traces");
	p->buf[p->len++] = ']';
	p->buf[p->len++] = ']';
	p->buf[p->len++] = '(';
	return pkw_flush(w, p);
}

static int
pk_write(msim_trace_writer_t *w, const msim_entry_t *e)
{
	pkw_t *p = w->fmt;
	int rc;
	if (p->batch == 1000) {
		p->buf[p->len++] = 'e'; /* APPENDS */
		p->buf[p->len++] = '(';
		p->batch = 0;
	}
	p->buf[p->len++] = '}';
	p->buf[p->len++] = '(';
	pkw_str(p, "action");
	pkw_str(p, msim_action_name(e->action));
	pkw_str(p, e->action == MSIM_ACT_OOM ? "device_free" : "addr");
	pkw_int(p, e->addr);
	pkw_str(p, "size");
	pkw_int(p, e->size);
	pkw_str(p, "stream");
	pkw_int(p, e->stream);
	pkw_str(p, "time_us");
	pkw_int(p, e->time_us);
	p->buf[p->len++] = 'u';
	p->batch++;
	if ((rc = pkw_flush(w, p)))
		return rc;
	return 0;
}

static int
pk_write_close(msim_trace_writer_t *w)
{
	pkw_t *p = w->fmt;
	int rc = 0;
	if (!p)
		return 0;
	/* APPENDS, the device list into device_traces, SETITEMS, STOP */
	static const uint8_t tail[] = {'e', 'a', 'u', '.'};
	memcpy(p->buf + p->len, tail, sizeof(tail));
	p->len += sizeof(tail);
	rc = pkw_flush(w, p);
	free(p);
	w->fmt = NULL;
	return rc;
}

const msim_trace_format_t msim_trace_pickle = {
	.name = "pickle",
	.exts = ".pickle .pkl",
	.summary = "PyTorch memory snapshot "
		   "(torch.cuda.memory._dump_snapshot)",
	.probe = pk_probe,
	.open = pk_open,
	.next = pk_next,
	.close = pk_close,
	.write_open = pk_write_open,
	.write = pk_write,
	.write_close = pk_write_close,
	.segments = pk_segments,
	.snapshot = true,
};
