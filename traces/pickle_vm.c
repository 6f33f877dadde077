/*
 * The pickle virtual machine of the snapshot reader (traces/fmt_pickle.c):
 * input, the stack, the memo and the opcodes.
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
 * What the values mean (a container's role, an entry's fields, the
 * segments state, the frames) is traces/fmt_pickle.c's: the opcodes call
 * it through msim_pk_role(), _setitem(), _attach() and the record makers
 * of traces/pickle_int.h.
 */

#include <config.h>

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "traces/pickle_int.h"

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

/* ---- input ---- */

int
msim_pk_fail(msim_trace_t *t, pk_t *p, int code, const char *what)
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
		return msim_pk_fail(t, p, MSIM_EFORMAT,
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
		return msim_pk_fail(t, p, MSIM_EFORMAT,
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
					    "pickle nests too deep (stack over "
					    "131072 values)");
		if (MSIM_GROW(p->stack, p->capstack, p->sp + 1, 256))
			return MSIM_ENOMEM;
	}
	pk_val_t *dst = &p->stack[p->sp];
	*dst = *v;
	if (v->type == V_MARK) {
		if (p->nmarks == PK_MAX_MARKS)
			return msim_pk_fail(t, p, MSIM_EFORMAT,
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
		return msim_pk_fail(t, p, MSIM_EFORMAT,
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
		return msim_pk_fail(t, p, MSIM_EFORMAT, "no MARK on the stack");
	*m = p->marks[p->nmarks - 1];
	return 0;
}

static void
pk_popmark(pk_t *p, size_t m)
{
	p->sp = m;
	p->nmarks--;
}

/* ---- the memo ---- */

static int
pk_memo_put(msim_trace_t *t, pk_t *p, uint64_t idx)
{
	if (p->sp == 0 || p->stack[p->sp - 1].type == V_MARK)
		return msim_pk_fail(t, p, MSIM_EFORMAT,
				    "memo of an empty stack");
	uint64_t limit = t->size ? t->size : PK_MAX_MEMO_NOSIZE;
	if (idx > limit || idx >= M_PAYLOAD)
		return msim_pk_fail(t, p, MSIM_EFORMAT,
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
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
				return msim_pk_fail(t, p, MSIM_EFORMAT,
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
		return msim_pk_fail(t, p, MSIM_EFORMAT,
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
		return msim_pk_pool(p, s, (size_t)n, &v) ? MSIM_ENOMEM
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
	if (v.str == S_OTHER && msim_pk_pool(p, s, (size_t)n, &v))
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
				"SETITEMS/APPENDS with nothing to fill");
		if ((op == 'u' && c->type != V_DICT &&
		     !pk_inert(c)) ||
		    (op == 'e' && c->type != V_LIST && !pk_inert(c)))
			return msim_pk_fail(t, p, MSIM_EFORMAT,
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
					if ((rc = msim_pk_setitem(t, p, c, key,
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
				if ((rc = msim_pk_setitem(t, p, c, key, v)))
					return rc;
				key = NULL;
			}
		}
		if (key)
			return msim_pk_fail(t, p, MSIM_EFORMAT,
					    "SETITEMS with a key and no value");
		if (c->type == V_DICT && c->role == R_ENTRY &&
		    (c->have & HAVE_ACTION) && !(c->have & EMITTED) &&
		    (rc = msim_pk_emit(t, p, c, c->dev)))
			return rc;
		if (c->type == V_DICT &&
		    (c->role == R_SEG || c->role == R_BLOCK) &&
		    !(c->have & EMITTED) && (rc = msim_pk_state_done(t, p, c)))
			return rc;
	} else if (op == 'e') {
		for (size_t i = m + 1; i < p->sp; i++) {
			if ((rc = msim_pk_attach(t, p, c, &p->stack[i])))
				return rc;
			if (c->type == V_LIST)
				c->i += pk_count(&p->stack[i]);
		}
	}
	pk_popmark(p, m);
	return 0;
}

/* Runs one opcode.  Returns 0, or an error. */
int
msim_pk_op(msim_trace_t *t, pk_t *p)
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
					    "DUP of nothing");
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
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
		msim_pk_role(p, &v);
		if (v.role == R_TRACES)
			p->saw_traces = true;
		if (v.role == R_DEVLIST && v.dev >= p->ndev)
			p->ndev = v.dev + 1;
		if ((v.role == R_SEG && (rc = msim_pk_seg_new(t, p, &v))) ||
		    (v.role == R_BLOCK && (rc = msim_pk_block_new(t, p, &v))) ||
		    ((v.role == R_FRAME || v.role == R_FRAMES) &&
		     (rc = msim_pk_fr_new(t, p, &v))))
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
					    "APPEND to a non-list");
		if ((rc = msim_pk_attach(t, p, &p->stack[p->sp - 1], &a)))
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
					    "SETITEM on a non-dict");
		return msim_pk_setitem(t, p, &p->stack[p->sp - 1], &a, &b);
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
					return msim_pk_fail(t, p, MSIM_EFORMAT,
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
			return msim_pk_fail(t, p, MSIM_EFORMAT,
					    "BUILD of nothing");
		return 0;
	case 'Q': /* BINPERSID */
		if ((rc = pk_pop(t, p, &a)))
			return rc;
		return pk_push_type(t, p, V_OPAQUE, 0);
	case 0x98: /* READONLY_BUFFER */
		if (p->sp == 0 || p->stack[p->sp - 1].type == V_MARK)
			return msim_pk_fail(t, p, MSIM_EFORMAT,
					    "READONLY_BUFFER of nothing");
		return 0;
	case 0x97: /* NEXT_BUFFER */
		return msim_pk_fail(t, p, MSIM_ENOTSUP,
				    "out-of-band buffers (NEXT_BUFFER) are not "
				    "supported");
	default: {
		char why[64];
		snprintf(why, sizeof(why), "unknown pickle opcode 0x%02x", op);
		return msim_pk_fail(t, p, MSIM_EFORMAT, why);
	}
	}
}
