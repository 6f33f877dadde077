/*
 * For the files of the snapshot reader (traces/pickle_vm.c: the pickle
 * virtual machine; traces/fmt_pickle.c: what the snapshot means;
 * traces/snapshot_out.c: the writer): the machine's values and state, and
 * the calls between them.  Users read snapshots through traces/trace.h.
 */
#ifndef MSIM_TRACES_PICKLE_INT_H
#define MSIM_TRACES_PICKLE_INT_H

#include <stdbool.h>
#include <stdint.h>

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

/* ---- pickle_vm.c ---- */

/* Fails the read with code and what, at the opcode's byte offset. */
int msim_pk_fail(msim_trace_t *t, pk_t *p, int code, const char *what);
/* Runs one opcode.  Returns 0, or an error. */
int msim_pk_op(msim_trace_t *t, pk_t *p);

/* ---- fmt_pickle.c: what the opcodes call ---- */

/* Decides the role of a dict or list about to be pushed. */
void msim_pk_role(pk_t *p, pk_val_t *v);
/* Records key k = value v in dict d (only the fields we look for). */
int msim_pk_setitem(msim_trace_t *t, pk_t *p, pk_val_t *d,
		    const pk_val_t *k, const pk_val_t *v);
/* A value attached to list l: a trace entry completes here at the latest. */
int msim_pk_attach(msim_trace_t *t, pk_t *p, pk_val_t *l, pk_val_t *v);
/* Hands out the trace entry collected in dict d of device dev. */
int msim_pk_emit(msim_trace_t *t, pk_t *p, pk_val_t *d, uint32_t dev);
/* Gives the segment dict v (about to be pushed) a new record. */
int msim_pk_seg_new(msim_trace_t *t, pk_t *p, pk_val_t *v);
/* Gives the block dict v of segment v->dev a new record.  Blocks come
 * grouped by segment, as each segment writes its list inside its dict. */
int msim_pk_block_new(msim_trace_t *t, pk_t *p, pk_val_t *v);
/* A segment or block dict is complete: checks its record. */
int msim_pk_state_done(msim_trace_t *t, pk_t *p, pk_val_t *d);
/* A record for the frame dict or frames list v about to be pushed. */
int msim_pk_fr_new(msim_trace_t *t, pk_t *p, pk_val_t *v);
/* Keeps the n bytes at s in the pool: v->sid.  Returns 0 or MSIM_ENOMEM
 * (a full pool leaves the string without a sid). */
int msim_pk_pool(pk_t *p, const char *s, size_t n, pk_val_t *v);

/* ---- snapshot_out.c: the format's writer ---- */

/* write_open, write and write_close of msim_trace_pickle. */
int msim_pk_write_open(msim_trace_writer_t *w);
int msim_pk_write(msim_trace_writer_t *w, const msim_entry_t *e);
int msim_pk_write_close(msim_trace_writer_t *w);

#endif
