/*
 * PyTorch memory snapshots, read in C: the pickle that
 * torch.cuda.memory._dump_snapshot() writes
 * (docs/pytorch-allocator.md §10), so that
 * `memsim run x.pickle` needs nothing but memsim.
 *
 * This file is what the snapshot means: each container's role, the trace
 * entries, the segments state, the stack frames, allocator_settings, and
 * the format's table.  The pickle virtual machine that runs the opcodes
 * is traces/pickle_vm.c; the writer is traces/snapshot_out.c.
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
 * string holds its pool index.  A block's frames (the stack of its
 * allocation) give it a site the same way (pk_block_tag()), for the blocks
 * a partial history seeds.  Not kept: the frames of segments.
 *
 * A segment's segment_pool_id (a tuple; (0, 0) is the default pool, others
 * a CUDA graph's or a MemPool's private pool) becomes its pool number
 * (msim_snap_segment_t.pool): a tuple of two ints is kept as a value (and
 * in the memo), other tuples are opaque.  The trace entries name no pool:
 * traces/trace_seed.c derives them from the segments (msim_trace_pool_derive()).
 */

#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "traces/pickle_int.h"

/* ---- stack frames ---- */

/* Keeps the n bytes at s in the pool: v->sid.  Returns 0 or MSIM_ENOMEM
 * (a full pool leaves the string without a sid). */
int
msim_pk_pool(pk_t *p, const char *s, size_t n, pk_val_t *v)
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
int
msim_pk_fr_new(msim_trace_t *t, pk_t *p, pk_val_t *v)
{
	if (p->nfr == PK_MAX_FR)
		return msim_pk_fail(t, p, MSIM_EFORMAT, "over 16777216 stack "
				    "frames");
	if (MSIM_GROW(p->fr, p->capfr, p->nfr + 1, 256))
		return MSIM_ENOMEM;
	p->fr[p->nfr] = (pk_fr_t){0};
	v->dev = (uint32_t)p->nfr++;
	return 0;
}

/* The site of frames list l ("file:line function", site[] of size n)
 * and the category its stack tells (see pk_frame()).  Returns the site's
 * length. */
static int
pk_site(const pk_t *p, const pk_fr_t *l, char *site, size_t size, int *cat)
{
	*cat = l->flags & FR_OPTIMIZER ? MSIM_CAT_OPTIMIZER
		: l->flags & FR_BACKWARD ? MSIM_CAT_GRADIENT
		: l->flags & FR_PARAMETER ? MSIM_CAT_PARAMETER
		: l->flags & FR_FORWARD ? MSIM_CAT_ACTIVATION
		: l->flags & FR_TORCH ? MSIM_CAT_OTHER
		: MSIM_CAT_INPUT;
	int n;
	if (!l->any) {
		/* No Python frame: the autograd engine's own thread, which
		 * runs backward. */
		*cat = MSIM_CAT_GRADIENT;
		n = snprintf(site, size, "(autograd engine: no "
			     "Python frames)");
	} else if (l->file) {
		const char *file = pk_str(p, l->file);
		const char *sp = strstr(file, "-packages/");
		n = snprintf(site, size, "%s:%llu %s",
			     sp ? sp + 10 : file,
			     (unsigned long long)l->line,
			     pk_str(p, l->name));
	} else {
		n = 0;
	}
	if (n < 0)
		n = 0;
	if ((size_t)n >= size)
		n = (int)size - 1;
	for (int i = 0; i < n; i++)
		if (site[i] == ',' || site[i] == '\n' || site[i] == '\r')
			site[i] = ';';
	return n;
}

/* The tag of the entry's frames (see pk_site()).  Returns 0 or an
 * error. */
static int
pk_frames_tag(msim_trace_t *t, pk_t *p, uint16_t *tag_out)
{
	char site[600];
	int cat;
	int n = pk_site(p, &p->fr[p->fr_cur], site, sizeof(site), &cat);
	int rc = msim_trace_tag_intern(t, cat, site, (size_t)n, tag_out);
	return rc ? msim_pk_fail(t, p, rc, "out of memory") : 0;
}

/* The site of a block's frames (the stack of its allocation, when the
 * history was recorded with stacks): a tag with that site and no
 * category (msim_snap_block_t.tag), as blocks live before a partial
 * history began are "before history" whatever their stack (explain).
 * No Python frame outside PyTorch (frames [] when the block was allocated
 * before recording began): no tag.  Returns 0 or an error. */
static int
pk_block_tag(msim_trace_t *t, pk_t *p, msim_snap_block_t *b, uint32_t fr)
{
	char site[600];
	int cat;
	const pk_fr_t *l = &p->fr[fr];
	if (!l->any || !l->file)
		return 0;
	int n = pk_site(p, l, site, sizeof(site), &cat);
	int rc = msim_trace_tag_intern(t, MSIM_CAT_UNTAGGED, site, (size_t)n,
				       &b->tag);
	return rc ? msim_pk_fail(t, p, rc, "out of memory") : 0;
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
int
msim_pk_emit(msim_trace_t *t, pk_t *p, pk_val_t *d, uint32_t dev)
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
		return msim_pk_fail(t, p, MSIM_EFORMAT, "trace entry without "
				    "'action'");
	msim_entry_t e = {.action = (uint8_t)(d->str - S_ACT0)};
	bool oom = e.action == MSIM_ACT_OOM;
	int need_addr = oom ? F_DEVFREE : F_ADDR;
	if (!(d->have & (1u << need_addr)) && e.action != MSIM_ACT_SNAPSHOT &&
	    e.action != MSIM_ACT_ANNOTATE &&
	    e.action != MSIM_ACT_USER_DEFINED)
		return msim_pk_fail(t, p, MSIM_EFORMAT, oom
				    ? "oom entry without 'device_free'"
				    : "trace entry without 'addr'");
	if (!(d->have & (1u << F_SIZE)) && e.action <= MSIM_ACT_OOM)
		return msim_pk_fail(t, p, MSIM_EFORMAT,
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
int
msim_pk_seg_new(msim_trace_t *t, pk_t *p, pk_val_t *v)
{
	if (p->nsegs == PK_MAX_SEGS)
		return msim_pk_fail(t, p, MSIM_EFORMAT,
				    "snapshot state has over "
				    "1048576 segments");
	if (MSIM_GROW(p->segs, p->capsegs, p->nsegs + 1, 64))
		return MSIM_ENOMEM;
	p->segs[p->nsegs] = (msim_snap_segment_t){0};
	v->dev = (uint32_t)p->nsegs++;
	return 0;
}

/* Gives the block dict v of segment v->dev a new record.  Blocks come
 * grouped by segment, as each segment writes its list inside its dict. */
int
msim_pk_block_new(msim_trace_t *t, pk_t *p, pk_val_t *v)
{
	if (p->nblocks == PK_MAX_BLOCKS)
		return msim_pk_fail(t, p, MSIM_EFORMAT,
				    "snapshot state has over "
				    "4194304 blocks");
	if (p->nblocks && p->blocks[p->nblocks - 1].seg > v->dev)
		return msim_pk_fail(t, p, MSIM_EFORMAT, "a block of an earlier "
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
					    "segment_type is "
					    "neither 'small' nor 'large'");
		p->segs[d->dev].large = v->str == S_LARGE;
		return 0;
	}
	if (k->str == S_SEGPOOL && seg) {
		/* (0, 0) is the default pool; others are numbered 1, 2, ...
		 * in the order the segments list them. */
		if (v->type != V_OPAQUE || v->neg != PK_PAIR)
			return msim_pk_fail(t, p, MSIM_EFORMAT,
					    "segment_pool_id "
					    "is not a pair of numbers");
		if (!v->f[0] && !v->f[1])
			return 0;
		size_t i = 0;
		while (i < p->npools && (p->pools[i][0] != v->f[0] ||
					 p->pools[i][1] != v->f[1]))
			i++;
		if (i == p->npools) {
			if (p->npools == PK_MAX_POOLS)
				return msim_pk_fail(t, p, MSIM_EFORMAT,
						    "over 65535 "
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
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
		return msim_pk_fail(t, p, MSIM_EFORMAT, seg
				    ? "segment field is not a number"
				    : "block field is not a number");
	if (v->neg)
		return msim_pk_fail(t, p, MSIM_EFORMAT, "negative or oversized "
				    "number in the segments state");
	if (k->str == S_DEVICE) {
		if (v->i > UINT32_MAX)
			return msim_pk_fail(t, p, MSIM_EFORMAT,
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
int
msim_pk_state_done(msim_trace_t *t, pk_t *p, pk_val_t *d)
{
	d->have |= EMITTED;
	if (d->role == R_SEG && (d->have & (HAVE_ADDRESS | HAVE_SIZE)) !=
				(HAVE_ADDRESS | HAVE_SIZE))
		return msim_pk_fail(t, p, MSIM_EFORMAT,
				    "segment without 'address' "
				    "or 'total_size'");
	if (d->role == R_BLOCK &&
	    (d->have & (HAVE_SIZE | HAVE_STATE)) != (HAVE_SIZE | HAVE_STATE))
		return msim_pk_fail(t, p, MSIM_EFORMAT,
				    "block without 'size' or "
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
int
msim_pk_setitem(msim_trace_t *t, pk_t *p, pk_val_t *d, const pk_val_t *k,
		const pk_val_t *v)
{
	if (d->type != V_DICT || k->type != V_STR)
		return 0;
	if (d->role == R_BLOCK && k->str == S_FRAMES && v->type == V_LIST &&
	    v->role == R_FRAMES)
		return d->have & EMITTED ? 0
		       : pk_block_tag(t, p, &p->blocks[d->dev], v->dev);
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
					    "negative or oversized number in a "
					    "trace entry");
		d->f[k->str - S_ADDR] = v->i;
		d->have |= (uint8_t)(1u << (k->str - S_ADDR));
	}
	return 0;
}

/* A value attached to list l: a trace entry completes here at the latest. */
int
msim_pk_attach(msim_trace_t *t, pk_t *p, pk_val_t *l, pk_val_t *v)
{
	if (l->type != V_LIST)
		return 0;
	if (((l->role == R_SEGLIST && v->role == R_SEG) ||
	     (l->role == R_BLOCKLIST && v->role == R_BLOCK)) &&
	    v->type == V_DICT && !(v->have & EMITTED))
		return msim_pk_state_done(t, p, v);
	if (l->role == R_FRAMES && v->role == R_FRAME && v->type == V_DICT) {
		pk_frame(p, &p->fr[l->dev], &p->fr[v->dev]);
		return 0;
	}
	if (l->role == R_DEVLIST && v->type == V_DICT &&
	    !(v->have & EMITTED) && (v->have & HAVE_ACTION))
		return msim_pk_emit(t, p, v, l->dev);
	return 0;
}

/* Decides the role of a dict or list about to be pushed. */
void
msim_pk_role(pk_t *p, pk_val_t *v)
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
		int rc = msim_pk_op(t, p);
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

const msim_trace_format_t msim_trace_pickle = {
	.name = "pickle",
	.exts = ".pickle .pkl",
	.summary = "PyTorch memory snapshot "
		   "(torch.cuda.memory._dump_snapshot)",
	.probe = pk_probe,
	.open = pk_open,
	.next = pk_next,
	.close = pk_close,
	.write_open = msim_pk_write_open,
	.write = msim_pk_write,
	.write_close = msim_pk_write_close,
	.segments = pk_segments,
	.snapshot = true,
};
