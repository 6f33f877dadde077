/*
 * memsim's own binary trace format, for large traces: about a seventh of
 * the CSV's size and read about as fast as the replay runs.  Little-endian
 * throughout.
 *
 *   header  16 bytes: magic "\x89MSIMTR\n", u32 version (2; 1 is still
 *           read), u32 flags (0)
 *   blocks  u32 entries, u32 payload bytes, u64 checksum of the payload
 *           (version 2: CRC32C in the low 32 bits; version 1: msim_hash),
 *           then the payload: `entries` entries in records
 *   end     a block of 0 entries whose 8-byte payload is the u64 total
 *           number of entries; nothing may follow it
 *
 * A record is a tag byte (low 4 bits: the action; bit 4: a stream
 * follows, else the stream is the previous entry's), then LEB128 varints:
 * time_us as a zigzag delta from the previous entry's, then
 *   - a raw record (version 1's only kind): addr as a zigzag delta from the
 *     previous entry's, size, [stream]; in version 2 its bit 6 (bit 5
 *     clear) adds 16 to the action: the actions appended after the first
 *     16 (empty_cache is 16 + 0).  A memsim older than them refuses such a
 *     record ("bad tag 0x50"); an action this one does not know is an
 *     error naming it, or skipped and counted with lenient (a raw record
 *     reads the same whatever its action);
 *   - an id record (bit 5; version 2): the dense id the request stage of
 *     traces/trace_request.c gives the block (msim_idmap_t's, which `convert`
 *     replays as it writes), so a reader needs no address map:
 *       alloc, oom: id, addr delta, size, [stream]
 *       free_requested, free_completed: id, [size unless bit 6: the size
 *       of the id's alloc], [stream], and with bit 7 (free_requested only)
 *       a time delta: a free_completed of the same block follows (the
 *       usual pair, one record for two entries).
 *     A free's address is its alloc's.
 * Allocs and frees the request stage would reject (0 bytes, address 0, an
 * address still live, an unknown address) stay raw records, so readers
 * report them as they would from CSV.  The delta state starts at 0 in every
 * block, the ids do not (they name live blocks).  Blocks hold at most 65536
 * entries and 1 MiB of payload; a reader checks every length against those
 * bounds and the file size before it allocates or reads, every checksum
 * before it decodes, and every id against the blocks live.
 */
#include <config.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "traces/trace_int.h"

#define BIN_MAGIC "\x89MSIMTR\n"
#define BIN_VERSION 2
#define BIN_HEADER 16
#define BIN_BLOCK_HEADER 16
#define BIN_MAX_ENTRIES 65536u
#define BIN_MAX_PAYLOAD (1u << 20)
#define BIN_MAX_RECORD 61 /* tag + 6 varints of at most 10 bytes */
#define BIN_PAD 128       /* zero bytes after a payload: a record decoded
			   * past its end stops in them, then is caught */
#define BIN_STREAM 0x10
#define BIN_ID 0x20
#define BIN_SAME_SIZE 0x40
#define BIN_PAIR 0x80
#define BIN_EXT 0x40 /* a raw record's: the action is 16 + the low 4 bits */
static_assert(MSIM_NACT <= 32, "an action is the tag's low 4 bits, plus 16 "
	      "with BIN_EXT");

/* The action of a record's tag. */
static inline unsigned
bin_act(uint8_t tag)
{
	return (tag & 0x0fu) +
	       ((tag & (BIN_ID | BIN_EXT)) == BIN_EXT ? 16u : 0u);
}

/* One record, decoded. */
typedef struct bin_rec_s {
	uint8_t tag;
	uint32_t id;
	uint64_t time, time2, addr, size;
	const uint8_t *start; /* where it begins in the payload */
} bin_rec_t;

typedef struct bin_s {
	uint8_t *buf;        /* payload of the current block, then BIN_PAD */
	const uint8_t *p, *end; /* decoding position, end of the payload */
	uint32_t left;       /* entries left in the block */
	unsigned version;
	uint64_t block_off;  /* file offset of the block's payload */
	uint64_t off;        /* file offset of the next block */
	uint64_t total;      /* entries decoded (written) so far */
	uint64_t time, addr, stream; /* delta state */
	bool done;
	/* Blocks live, by id (reader and writer): address (0: none) and
	 * size of the alloc. */
	uint64_t *saddr, *ssize;
	uint32_t nslot;
	/* The request stage's free ids (msim_idmap_t's stack), followed:
	 * an id record's id must be the one it would give. */
	uint32_t *fstack;
	size_t nfree, capfree;
	uint32_t next_id;
	bool oom_out;        /* an oom's id (oom_id), to give back at the
			      * next record */
	msim_entry_t pend;   /* the second entry of a pair, to serve next */
	bool have_pend;
	/* writer */
	size_t len;          /* payload bytes in buf */
	uint32_t nbuf;       /* entries in buf */
	msim_idmap_t ids;    /* the request stage's ids, replayed */
	bool ids_init;
	bool oom_pending;    /* an oom's id to give back at the next entry */
	uint32_t oom_id;
	msim_entry_t held;   /* a free_requested id record held back */
	uint32_t held_id;
	bool have_held;
} bin_t;

static inline uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t
get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void
put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/*
 * CRC32C (Castagnoli, the iSCSI polynomial, reflected 0x82F63B78): the
 * SSE4.2 crc32 instruction where the CPU has it (checked once at run
 * time), else tables eight bytes at a time (also when the environment
 * sets MEMSIM_PORTABLE_CRC32C).
 */
static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static bool crc_hw;

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const uint8_t *p, size_t n)
{
	uint64_t c = crc;
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
	}
	uint32_t c32 = (uint32_t)c;
	for (; n; n--)
		c32 = __builtin_ia32_crc32qi(c32, *p++);
	return c32;
}
#endif

static void
crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			crc_tab[k][i] = (crc_tab[k - 1][i] >> 8) ^
					crc_tab[0][crc_tab[k - 1][i] & 0xff];
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	/* MEMSIM_PORTABLE_CRC32C set: the tables, as on other CPUs (for
	 * tests of both). */
	crc_hw = __builtin_cpu_supports("sse4.2") &&
		 !getenv("MEMSIM_PORTABLE_CRC32C");
#endif
}

static uint32_t
crc32c_sw(uint32_t c, const uint8_t *p, size_t n)
{
	for (; n >= 8; n -= 8, p += 8) {
		uint32_t lo = c ^ get32(p), hi = get32(p + 4);
		c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		    crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		    crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
	}
	for (; n; n--)
		c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xff];
	return c;
}

static uint32_t
crc32c(const uint8_t *p, size_t n)
{
	pthread_once(&crc_once, crc_init);
#if defined(__x86_64__) && defined(__GNUC__)
	if (crc_hw)
		return ~crc32c_hw(~0u, p, n);
#endif
	return ~crc32c_sw(~0u, p, n);
}

/* The checksum of a payload in version v. */
static uint64_t
bin_sum(unsigned v, const uint8_t *p, size_t n)
{
	if (v >= 2)
		return crc32c(p, n);
	msim_hash_t hh;
	msim_hash_init(&hh);
	msim_hash_update(&hh, p, n);
	return msim_hash_final(&hh);
}

static bool
bin_probe(const char *head, size_t n)
{
	return n >= 8 && !memcmp(head, BIN_MAGIC, 8);
}

static int
bin_open(msim_trace_t *t)
{
	bin_t *b = calloc(1, sizeof(*b));
	if (!b)
		return MSIM_ENOMEM;
	t->fmt = b;
	if (!(b->buf = calloc(1, BIN_MAX_PAYLOAD + BIN_PAD)))
		return MSIM_ENOMEM;
	b->p = b->end = b->buf;
	uint8_t h[BIN_HEADER];
	t->offset = 1;
	if (msim_trace_read(t, h, sizeof(h)) != sizeof(h))
		return msim_trace_fail(t, MSIM_EFORMAT, "truncated header");
	if (memcmp(h, BIN_MAGIC, 8))
		return msim_trace_fail(t, MSIM_EFORMAT, "not a memsim trace");
	b->version = get32(h + 8);
	if (b->version < 1 || b->version > BIN_VERSION)
		return msim_trace_fail(t, MSIM_EFORMAT,
				       "version %u, this memsim reads 1 to %u "
				       "(a newer memsim wrote it?)",
				       b->version, BIN_VERSION);
	if (get32(h + 12) != 0)
		return msim_trace_fail(t, MSIM_EFORMAT, "unknown flags 0x%x",
				       get32(h + 12));
	b->off = BIN_HEADER;
	return 0;
}

/* Reads the next block into b->buf.  Returns 1, 0 at the end block, or an
 * error. */
static int
bin_block(msim_trace_t *t, bin_t *b)
{
	uint8_t h[BIN_BLOCK_HEADER];
	if (b->p != b->end) {
		t->offset = b->block_off + (uint64_t)(b->p - b->buf) + 1;
		return msim_trace_fail(t, MSIM_EFORMAT,
				       "%zu bytes left over in a block",
				       (size_t)(b->end - b->p));
	}
	t->offset = b->off + 1;
	size_t got = msim_trace_read(t, h, sizeof(h));
	if (got != sizeof(h))
		return msim_trace_fail(t, MSIM_EFORMAT,
				       got ? "truncated block header"
					   : "truncated: no end block");
	uint32_t n = get32(h), len = get32(h + 4);
	uint64_t sum = get64(h + 8);
	if (len > BIN_MAX_PAYLOAD || n > BIN_MAX_ENTRIES)
		return msim_trace_fail(t, MSIM_EFORMAT,
				       "block of %u entries in %u bytes is "
				       "over the limits", n, len);
	if (t->size && b->off + BIN_BLOCK_HEADER + len > t->size)
		return msim_trace_fail(t, MSIM_EFORMAT,
				       "block of %u bytes runs past the end of "
				       "the file", len);
	/* Records take 4 bytes at least in version 1, 2 bytes an entry in
	 * version 2 (a pair: tag, time, id, time). */
	if ((n == 0 && len != 8) ||
	    (n && (uint64_t)n * (b->version >= 2 ? 2 : 3) > len))
		return msim_trace_fail(t, MSIM_EFORMAT,
				       "block of %u entries cannot take %u "
				       "bytes", n, len);
	if (msim_trace_read(t, b->buf, len) != len)
		return msim_trace_fail(t, MSIM_EFORMAT, "truncated block");
	if (bin_sum(b->version, b->buf, len) != sum)
		return msim_trace_fail(t, MSIM_EFORMAT, "checksum mismatch");
	memset(b->buf + len, 0, BIN_PAD); /* where a bad record stops */
	b->block_off = b->off + BIN_BLOCK_HEADER;
	b->off += BIN_BLOCK_HEADER + len;
	if (n == 0) {
		uint64_t total = get64(b->buf);
		if (total != b->total)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "end block counts %llu entries, "
					       "the file has %llu",
					       (unsigned long long)total,
					       (unsigned long long)b->total);
		uint8_t extra;
		if (msim_trace_read(t, &extra, 1))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "data after the end block");
		b->p = b->end = b->buf;
		return 0;
	}
	b->p = b->buf;
	b->end = b->buf + len;
	b->left = n;
	b->time = b->addr = b->stream = 0;
	return 1;
}

/*
 * A LEB128 varint at p, which has at least BIN_PAD readable bytes after
 * it: the usual one-byte case with one test, up to eight bytes a word at
 * a time (the stop bit found with one count of trailing zeros, the 7-bit
 * groups packed with three shift-and-masks), longer ones byte by byte.
 * Returns the byte after it, or NULL past 64 bits.
 */
static inline __attribute__((always_inline)) const uint8_t *
bin_varint(const uint8_t *p, uint64_t *out)
{
	if (p[0] < 0x80) {
		*out = p[0];
		return p + 1;
	}
	uint64_t w;
	memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	uint64_t stop = ~w & UINT64_C(0x8080808080808080);
	if (stop) {
		uint64_t x = w & (stop ^ (stop - 1)) &
			     UINT64_C(0x7f7f7f7f7f7f7f7f);
		x = (x & UINT64_C(0x007f007f007f007f)) |
		    ((x & UINT64_C(0x7f007f007f007f00)) >> 1);
		x = (x & UINT64_C(0x00003fff00003fff)) |
		    ((x & UINT64_C(0x3fff00003fff0000)) >> 2);
		x = (x & UINT64_C(0x000000000fffffff)) |
		    ((x & UINT64_C(0x0fffffff00000000)) >> 4);
		*out = x;
		return p + __builtin_ctzll(stop) / 8 + 1;
	}
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint64_t c = *p++;
		if (shift == 63 && c > 1)
			return NULL;
		v |= (c & 0x7f) << shift;
		if (c < 0x80) {
			*out = v;
			return p;
		}
	}
	return NULL;
}

static inline uint64_t
unzig(uint64_t v)
{
	return (v >> 1) ^ (0 - (v & 1));
}

static inline uint64_t
zig(uint64_t d)
{
	return (d << 1) ^ (0 - (d >> 63));
}

/* Makes room for id in the tables of live blocks. */
static int
bin_slots(bin_t *b, uint32_t id)
{
	if (id < b->nslot)
		return 0;
	size_t n = b->nslot ? 2 * (size_t)b->nslot : 1024;
	while (n <= id)
		n *= 2;
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	uint64_t *a = realloc(b->saddr, n * sizeof(*a));
	if (!a)
		return MSIM_ENOMEM;
	b->saddr = a;
	uint64_t *s = realloc(b->ssize, n * sizeof(*s));
	if (!s)
		return MSIM_ENOMEM;
	b->ssize = s;
	memset(a + b->nslot, 0, (n - b->nslot) * sizeof(*a));
	memset(s + b->nslot, 0, (n - b->nslot) * sizeof(*s));
	b->nslot = (uint32_t)n;
	return 0;
}

/* Gives id back (msim_idmap_put_id()). */
static int
bin_put_id(bin_t *b, uint32_t id)
{
	if (MSIM_GROW(b->fstack, b->capfree, b->nfree + 1, 256))
		return MSIM_ENOMEM;
	b->fstack[b->nfree++] = id;
	return 0;
}

static int
bin_bad(msim_trace_t *t, bin_t *b, const uint8_t *at, const char *why,
	uint64_t v)
{
	t->offset = b->block_off + (uint64_t)(at - b->buf) + 1;
	return msim_trace_fail(t, MSIM_EFORMAT, why, (unsigned long long)v);
}

/*
 * Decodes the record at b->p into r (a pair: its first entry, r->time2 the
 * second's time) and keeps the tables of live blocks.  b->left > 0.
 * Returns the entries it holds (1 or 2), 0 for an entry of an unknown
 * action skipped (lenient), or an error.
 */
static inline __attribute__((always_inline)) int
bin_record(msim_trace_t *t, bin_t *b, bin_rec_t *r)
{
	const uint8_t *p = b->p;
	uint64_t v;
	r->start = p;
	if (b->oom_out) {
		b->oom_out = false;
		if (bin_put_id(b, b->oom_id))
			return msim_trace_fail(t, MSIM_ENOMEM, "out of memory");
	}
	uint8_t tag = *p++;
	unsigned act = tag & 0x0f;
	r->tag = tag;
	if (!(p = bin_varint(p, &v)))
		goto bad_varint;
	b->time += unzig(v);
	r->time = b->time;
	if (!(tag & BIN_ID)) {
		/* A raw record, version 1's only kind. */
		if ((tag & BIN_PAIR) || ((tag & BIN_EXT) && b->version < 2))
			return bin_bad(t, b, r->start, "bad tag 0x%02llx", tag);
		if (!(p = bin_varint(p, &v)))
			goto bad_varint;
		b->addr += unzig(v);
		if (!(p = bin_varint(p, &r->size)))
			goto bad_varint;
		if ((tag & BIN_STREAM) && !(p = bin_varint(p, &b->stream)))
			goto bad_varint;
		r->addr = b->addr;
		r->id = 0;
		b->p = p;
		if (p > b->end)
			return bin_bad(t, b, r->start, "block ends early%.0llu", 0);
		if ((act = bin_act(tag)) < MSIM_NACT)
			return 1;
		char name[24];
		snprintf(name, sizeof(name), "action %u", act);
		if (msim_trace_skip_unknown(t, name))
			return 0;
		return bin_bad(t, b, r->start, "unknown action %llu (a newer "
			       "memsim's file? --lenient skips such records)",
			       act);
	}
	/* An id record. */
	bool isfree = act == MSIM_ACT_FREE_REQUESTED ||
		      act == MSIM_ACT_FREE_COMPLETED;
	if (b->version < 2 ||
	    (!isfree && act != MSIM_ACT_ALLOC && act != MSIM_ACT_OOM) ||
	    (!isfree && (tag & BIN_SAME_SIZE)) ||
	    ((tag & BIN_PAIR) && act != MSIM_ACT_FREE_REQUESTED))
		return bin_bad(t, b, r->start, "bad tag 0x%02llx", tag);
	if (!(p = bin_varint(p, &v)))
		goto bad_varint;
	if (v > UINT32_MAX - 1)
		return bin_bad(t, b, r->start, "bad id %llu", v);
	uint32_t id = (uint32_t)v;
	r->id = id;
	if (!isfree) {
		if (!(p = bin_varint(p, &v)))
			goto bad_varint;
		b->addr += unzig(v);
		if (!(p = bin_varint(p, &r->size)))
			goto bad_varint;
		if ((tag & BIN_STREAM) && !(p = bin_varint(p, &b->stream)))
			goto bad_varint;
		r->addr = b->addr;
		b->p = p;
		if (p > b->end)
			return bin_bad(t, b, r->start, "block ends early%.0llu", 0);
		/* The id the request stage gives: the last one given back,
		 * else a new one. */
		uint32_t want = b->nfree ? b->fstack[b->nfree - 1] : b->next_id;
		if (id != want)
			return bin_bad(t, b, r->start, "id %llu is not the one "
				       "the request stage gives", id);
		if (!r->size || (act == MSIM_ACT_ALLOC && !r->addr))
			return bin_bad(t, b, r->start,
				       "id record of 0 bytes or at address 0"
				       "%.0llu", 0);
		if (b->nfree)
			b->nfree--;
		else
			b->next_id++;
		if (act == MSIM_ACT_OOM) {
			b->oom_out = true;
			b->oom_id = id;
		} else {
			if (id >= b->nslot && bin_slots(b, id))
				return msim_trace_fail(t, MSIM_ENOMEM,
						       "out of memory");
			b->saddr[id] = r->addr;
			b->ssize[id] = r->size;
		}
		return 1;
	}
	if (id >= b->nslot || !b->saddr[id])
		return bin_bad(t, b, r->start, "free of id %llu, not live", id);
	r->addr = b->addr = b->saddr[id];
	if (tag & BIN_SAME_SIZE)
		r->size = b->ssize[id];
	else if (!(p = bin_varint(p, &r->size)))
		goto bad_varint;
	if ((tag & BIN_STREAM) && !(p = bin_varint(p, &b->stream)))
		goto bad_varint;
	int n = 1;
	if (tag & BIN_PAIR) {
		if (!(p = bin_varint(p, &v)))
			goto bad_varint;
		b->time += unzig(v);
		r->time2 = b->time;
		n = 2;
	}
	b->p = p;
	if (p > b->end)
		return bin_bad(t, b, r->start, "block ends early%.0llu", 0);
	if (n > (int)b->left)
		return bin_bad(t, b, r->start, "pair past the block's %llu "
			       "entries", b->left);
	if (act == MSIM_ACT_FREE_COMPLETED || n == 2) {
		b->saddr[id] = 0;
		if (bin_put_id(b, id))
			return msim_trace_fail(t, MSIM_ENOMEM, "out of memory");
	}
	return n;
bad_varint:
	return bin_bad(t, b, r->start, "bad varint%.0llu", 0);
}

static inline void
bin_entry(const bin_t *b, const bin_rec_t *r, msim_entry_t *e)
{
	e->time_us = r->time;
	e->addr = r->addr;
	e->size = r->size;
	e->stream = b->stream;
	e->device = 0;
	e->action = (uint8_t)bin_act(r->tag);
}

static int
bin_next(msim_trace_t *t, msim_entry_t *e)
{
	bin_t *b = t->fmt;
	if (b->have_pend) {
		*e = b->pend;
		b->have_pend = false;
		return 1;
	}
	if (b->done)
		return 0;
	while (b->left == 0) {
		int rc = bin_block(t, b);
		if (rc <= 0) {
			b->done = rc == 0;
			return rc;
		}
	}
	bin_rec_t r = {0};
	int n;
	while ((n = bin_record(t, b, &r)) == 0) {
		/* Skipped: an entry of the block all the same. */
		b->left--;
		b->total++;
		while (b->left == 0) {
			int rc = bin_block(t, b);
			if (rc <= 0) {
				b->done = rc == 0;
				return rc;
			}
		}
	}
	if (n < 0)
		return n;
	bin_entry(b, &r, e);
	if (n == 2) {
		b->pend = *e;
		b->pend.time_us = r.time2;
		b->pend.action = MSIM_ACT_FREE_COMPLETED;
		b->have_pend = true;
	}
	b->left -= (uint32_t)n;
	b->total += (uint64_t)n;
	return 1;
}

/*
 * Hands the request stage of traces/trace_request.c what bin_requests() kept (the
 * live ids and the free ones) and the record r as its look-ahead entry,
 * for it to read the rest of the file entry by entry.
 */
static int
bin_hand_over(msim_trace_t *t, bin_t *b, const bin_rec_t *r)
{
	msim_idmap_t *m = &t->ids;
	for (uint32_t id = 0; id < b->nslot; id++)
		if (b->saddr[id] && msim_idmap_bind(m, b->saddr[id], id))
			return msim_trace_fail(t, MSIM_ENOMEM, "out of memory");
	for (size_t i = 0; i < b->nfree; i++)
		if (msim_idmap_put_id(m, b->fstack[i]))
			return msim_trace_fail(t, MSIM_ENOMEM, "out of memory");
	m->next_id = b->next_id;
	bin_entry(b, r, &t->la);
	t->have_la = true;
	t->fast = -1;
	return 0;
}

/*
 * The request stage of traces/trace_request.c for version 2's id records, straight
 * into an array: up to cap (>= 2) requests in v.  Returns 1 (more to
 * come), 0 (the end) or an error, with *n_out requests in v in every
 * case; MSIM_ENOTSUP for a version 1 file (no ids: read it entry by
 * entry).  A record that needs more of the request stage (a raw alloc or
 * free: an error, or a block seeded for a partial history; a
 * segment_map) hands it the rest of the file (bin_hand_over()).
 */
static int
bin_requests(msim_trace_t *t, msim_req_t *v, size_t cap, size_t *n_out)
{
	bin_t *b = t->fmt;
	size_t n = 0;
	uint64_t requests = 0;
	int rc = 1;
	bin_rec_t r = {0};
	*n_out = 0;
	if (b->version < 2)
		return MSIM_ENOTSUP;
	bool deferred = t->opt.deferred_frees;
	if (!t->have_t0 && !b->done) {
		/* The clock starts at the first entry (msim_trace_time()). */
		while (b->left == 0 && (rc = bin_block(t, b)) == 1)
			;
		if (rc <= 0)
			goto out;
		const uint8_t *p = b->p + 1;
		uint64_t dt;
		if (!bin_varint(p, &dt))
			return bin_bad(t, b, b->p, "bad varint%.0llu", 0);
		t->t0 = unzig(dt);
		t->have_t0 = true;
	}
	uint64_t t0 = t->t0;
	while (n + 2 <= cap) {
		if (b->left == 0) {
			if (b->done || (rc = bin_block(t, b)) <= 0) {
				if (rc == 0)
					b->done = true;
				goto out;
			}
		}
		int k = bin_record(t, b, &r);
		if (k < 0) {
			rc = k;
			goto out;
		}
		if (k == 0) { /* skipped */
			b->left--;
			b->total++;
			continue;
		}
		unsigned act = bin_act(r.tag);
		b->left -= (uint32_t)k;
		b->total += (uint64_t)k;
		/* The tally of msim_trace_next_entry(). */
		if (!t->entries)
			t->first_us = r.time;
		t->entries += (uint64_t)k;
		t->actions[act]++;
		t->last_us = r.time;
		msim_req_t *q = &v[n];
		q->time = r.time >= t0 ? (r.time - t0) * 1000 : 0;
		q->stream = b->stream;
		q->addr = r.addr;
		q->id = r.id;
		q->flags = 0;
		q->tag = 0;
		q->size = 0;
		switch (act) {
		case MSIM_ACT_ALLOC:
			if (!(r.tag & BIN_ID))
				goto hand_over;
			q->kind = MSIM_REQ_ALLOC;
			q->size = r.size;
			n++;
			requests++;
			break;
		case MSIM_ACT_FREE_REQUESTED:
			if (!(r.tag & BIN_ID))
				goto hand_over;
			if (deferred) {
				q->kind = MSIM_REQ_FREE_REQUESTED;
				n++;
				requests++;
			}
			if (k == 2) {
				t->actions[MSIM_ACT_FREE_COMPLETED]++;
				t->last_us = r.time2;
				q = &v[n++];
				requests++;
				q->time = r.time2 >= t0 ? (r.time2 - t0) * 1000
							: 0;
				q->stream = b->stream;
				q->addr = r.addr;
				q->id = r.id;
				q->flags = 0;
				q->tag = 0;
				q->size = 0;
				q->kind = MSIM_REQ_FREE;
			}
			break;
		case MSIM_ACT_FREE_COMPLETED:
			if (!(r.tag & BIN_ID))
				goto hand_over;
			q->kind = MSIM_REQ_FREE;
			n++;
			requests++;
			break;
		case MSIM_ACT_SEGMENT_ALLOC:
			t->seg_bytes += (int64_t)r.size;
			q->kind = MSIM_REQ_SEGMENT_HINT;
			q->size = r.size;
			n++;
			break;
		case MSIM_ACT_SEGMENT_MAP:
			t->seg_bytes += (int64_t)r.size;
			goto hand_over;
		case MSIM_ACT_SEGMENT_FREE:
		case MSIM_ACT_SEGMENT_UNMAP:
			t->seg_bytes -= (int64_t)r.size;
			break;
		case MSIM_ACT_OOM:
			if (!(r.tag & BIN_ID))
				goto hand_over;
			q->kind = MSIM_REQ_ALLOC;
			q->flags = MSIM_REQF_EXPECT_OOM;
			q->size = r.size;
			q->addr = 0;
			n++;
			requests++;
			break;
		case MSIM_ACT_EMPTY_CACHE:
			if (r.addr || r.size)
				goto hand_over; /* an error, named there */
			q->kind = MSIM_REQ_EMPTY_CACHE;
			q->addr = 0;
			n++;
			requests++;
			break;
		case MSIM_ACT_RESET_PEAKS:
			q->kind = MSIM_REQ_RESET_PEAKS;
			q->addr = 0;
			q->size = 0;
			n++;
			break;
		case MSIM_ACT_POOL_CREATE:
		case MSIM_ACT_POOL_BEGIN:
		case MSIM_ACT_POOL_END:
		case MSIM_ACT_POOL_RELEASE:
		case MSIM_ACT_POOL_RESTORE:
			/* Private pools: their rows' checks and flags, and the
			 * placed allocs after a pool_restore, are the request
			 * stage's (traces/trace_request.c). */
			goto hand_over;
		default: /* annotations */
			break;
		}
	}
	goto out;
hand_over:
	rc = bin_hand_over(t, b, &r);
	if (rc == 0)
		rc = 1;
out:
	t->requests += requests;
	*n_out = n;
	return rc;
}

static void
bin_close(msim_trace_t *t)
{
	bin_t *b = t->fmt;
	free(b->buf);
	free(b->saddr);
	free(b->ssize);
	free(b->fstack);
	free(b);
	t->fmt = NULL;
}

static int
bin_write_open(msim_trace_writer_t *w)
{
	bin_t *b = calloc(1, sizeof(*b));
	if (!b)
		return msim_trace_writer_fail(w, MSIM_ENOMEM, "out of memory");
	w->fmt = b;
	if (!(b->buf = malloc(BIN_MAX_PAYLOAD)) || msim_idmap_init(&b->ids))
		return msim_trace_writer_fail(w, MSIM_ENOMEM, "out of memory");
	b->ids_init = true;
	uint8_t h[BIN_HEADER];
	memcpy(h, BIN_MAGIC, 8);
	put32(h + 8, BIN_VERSION);
	put32(h + 12, 0);
	if (fwrite(h, 1, sizeof(h), w->fp) != sizeof(h))
		return msim_trace_writer_fail(w, MSIM_EIO, "cannot write");
	return 0;
}

static int
bin_flush(msim_trace_writer_t *w, bin_t *b, uint32_t n)
{
	uint8_t h[BIN_BLOCK_HEADER];
	put32(h, n);
	put32(h + 4, (uint32_t)b->len);
	put64(h + 8, bin_sum(BIN_VERSION, b->buf, b->len));
	if (fwrite(h, 1, sizeof(h), w->fp) != sizeof(h) ||
	    fwrite(b->buf, 1, b->len, w->fp) != b->len)
		return msim_trace_writer_fail(w, MSIM_EIO, "cannot write");
	b->len = 0;
	b->nbuf = 0;
	b->time = b->addr = b->stream = 0;
	return 0;
}

static inline void
bin_put_varint(bin_t *b, uint64_t v)
{
	while (v >= 0x80) {
		b->buf[b->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->buf[b->len++] = (uint8_t)v;
}

/*
 * Writes e as one record: with an id (id >= 0), and with pair_us the time
 * of the free_completed it pairs with (pair: a free_requested).
 */
static int
bin_put(msim_trace_writer_t *w, bin_t *b, const msim_entry_t *e, int64_t id,
	bool pair, uint64_t pair_us)
{
	int rc;
	uint32_t k = pair ? 2 : 1;
	if ((b->nbuf + k > BIN_MAX_ENTRIES ||
	     b->len + BIN_MAX_RECORD > BIN_MAX_PAYLOAD) &&
	    (rc = bin_flush(w, b, b->nbuf)))
		return rc;
	bool first = b->nbuf == 0;
	bool isfree = e->action == MSIM_ACT_FREE_REQUESTED ||
		      e->action == MSIM_ACT_FREE_COMPLETED;
	uint8_t tag = (uint8_t)(e->action & 0x0f);
	if (e->action >= 16)
		tag |= BIN_EXT; /* raw: id < 0 */
	if (first || e->stream != b->stream)
		tag |= BIN_STREAM;
	if (id >= 0)
		tag |= BIN_ID;
	if (id >= 0 && isfree && b->ssize[id] == e->size)
		tag |= BIN_SAME_SIZE;
	if (pair)
		tag |= BIN_PAIR;
	b->buf[b->len++] = tag;
	bin_put_varint(b, zig(e->time_us - b->time));
	b->time = e->time_us;
	if (id >= 0)
		bin_put_varint(b, (uint64_t)id);
	if (id < 0 || !isfree) {
		bin_put_varint(b, zig(e->addr - b->addr));
		bin_put_varint(b, e->size);
	} else if (!(tag & BIN_SAME_SIZE)) {
		bin_put_varint(b, e->size);
	}
	b->addr = e->addr;
	if (tag & BIN_STREAM)
		bin_put_varint(b, e->stream);
	b->stream = e->stream;
	if (pair) {
		bin_put_varint(b, zig(pair_us - b->time));
		b->time = pair_us;
	}
	b->nbuf += k;
	b->total += k;
	return 0;
}

/* Writes the free_requested held back, alone. */
static int
bin_put_held(msim_trace_writer_t *w, bin_t *b)
{
	if (!b->have_held)
		return 0;
	b->have_held = false;
	return bin_put(w, b, &b->held, b->held_id, false, 0);
}

/*
 * The ids the request stage gives (traces/trace_request.c, trace_request()),
 * replayed: an alloc takes one, a free_completed gives it back, an oom
 * takes one until the next entry.  Entries it would reject are written
 * raw.  A free_requested is held back one entry, to pair it with the
 * free_completed that usually follows.
 */
static int
bin_write(msim_trace_writer_t *w, const msim_entry_t *e)
{
	bin_t *b = w->fmt;
	int rc;
	uint32_t id;
	if (b->oom_pending) {
		b->oom_pending = false;
		if (msim_idmap_put_id(&b->ids, b->oom_id))
			return msim_trace_writer_fail(w, MSIM_ENOMEM,
						      "out of memory");
	}
	switch (e->action) {
	case MSIM_ACT_ALLOC:
		if ((rc = bin_put_held(w, b)))
			return rc;
		if (!e->size || !e->addr)
			return bin_put(w, b, e, -1, false, 0);
		rc = msim_idmap_add(&b->ids, e->addr, &id);
		if (rc == MSIM_EINVAL)
			return bin_put(w, b, e, -1, false, 0);
		if (rc || bin_slots(b, id))
			return msim_trace_writer_fail(w, MSIM_ENOMEM,
						      "out of memory");
		b->ssize[id] = e->size;
		return bin_put(w, b, e, id, false, 0);
	case MSIM_ACT_OOM:
		if ((rc = bin_put_held(w, b)))
			return rc;
		if (!e->size)
			return bin_put(w, b, e, -1, false, 0);
		if (msim_idmap_take_id(&b->ids, &id))
			return msim_trace_writer_fail(w, MSIM_ENOMEM,
						      "out of memory");
		b->oom_pending = true;
		b->oom_id = id;
		return bin_put(w, b, e, id, false, 0);
	case MSIM_ACT_FREE_REQUESTED:
		if ((rc = bin_put_held(w, b)))
			return rc;
		if (msim_idmap_find(&b->ids, e->addr, &id))
			return bin_put(w, b, e, -1, false, 0);
		b->held = *e;
		b->held_id = id;
		b->have_held = true;
		return 0;
	case MSIM_ACT_FREE_COMPLETED: {
		rc = msim_idmap_remove(&b->ids, e->addr, &id);
		if (rc == MSIM_ENOMEM)
			return msim_trace_writer_fail(w, MSIM_ENOMEM,
						      "out of memory");
		bool found = rc == 0;
		if (found && b->have_held && b->held_id == id &&
		    b->held.stream == e->stream && b->held.size == e->size &&
		    b->held.size == b->ssize[id]) {
			b->have_held = false;
			return bin_put(w, b, &b->held, id, true, e->time_us);
		}
		if ((rc = bin_put_held(w, b)))
			return rc;
		return bin_put(w, b, e, found ? (int64_t)id : -1, false, 0);
	}
	default:
		if ((rc = bin_put_held(w, b)))
			return rc;
		return bin_put(w, b, e, -1, false, 0);
	}
}

static int
bin_write_close(msim_trace_writer_t *w)
{
	bin_t *b = w->fmt;
	int rc = 0;
	if (!b)
		return 0;
	if (b->buf) {
		rc = bin_put_held(w, b);
		if (!rc && b->nbuf)
			rc = bin_flush(w, b, b->nbuf);
		if (!rc) {
			put64(b->buf, b->total);
			b->len = 8;
			rc = bin_flush(w, b, 0);
		}
	}
	free(b->buf);
	free(b->saddr);
	free(b->ssize);
	if (b->ids_init)
		msim_idmap_clear(&b->ids);
	free(b);
	w->fmt = NULL;
	return rc;
}

const msim_trace_format_t msim_trace_bin = {
	.name = "bin",
	.exts = ".msimtr .bin",
	.summary = "memsim binary trace (compact, checksummed, fast to read)",
	.probe = bin_probe,
	.open = bin_open,
	.next = bin_next,
	.requests = bin_requests,
	.close = bin_close,
	.write_open = bin_write_open,
	.write = bin_write,
	.write_close = bin_write_close,
};
