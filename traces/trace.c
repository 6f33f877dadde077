/*
 * Opening traces: format detection by content, the shared bookkeeping of
 * readers (errors with file and line, content hash, timestamps), the
 * request stage that turns recorded entries into requests, and writers.
 *
 * The request stage is where replay semantics live, once for every format
 * (docs/pytorch-allocator.md §11): `alloc` rows are requests of `size`
 * bytes, `free_completed` rows return the block; `free_requested` rows are
 * checked and, with deferred frees on, passed on; `segment_alloc` rows are
 * passed on as address hints; an `oom` row is a malloc that raised
 * out-of-memory (size = the rounded request), replayed as such.  With
 * hidden_empty_cache on, runs of segment_free / segment_unmap rows become
 * empty_cache() calls (rule a) or flag the next malloc (rule b); this needs
 * one entry of look-ahead, kept in t->la.
 */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "sim/error.h"
#include "traces/trace_int.h"

/* Detection order: the binary formats have magic numbers, so they go
 * first; the RMM header is more specific than the device-trace CSV's. */
static const msim_trace_format_t *const formats[] = {
	&msim_trace_bin,
	&msim_trace_pickle,
	&msim_trace_rmm,
	&msim_trace_csv,
	NULL,
};

static const char *const action_names[MSIM_NACT] = {
	[MSIM_ACT_ALLOC] = "alloc",
	[MSIM_ACT_FREE_REQUESTED] = "free_requested",
	[MSIM_ACT_FREE_COMPLETED] = "free_completed",
	[MSIM_ACT_SEGMENT_ALLOC] = "segment_alloc",
	[MSIM_ACT_SEGMENT_FREE] = "segment_free",
	[MSIM_ACT_SEGMENT_MAP] = "segment_map",
	[MSIM_ACT_SEGMENT_UNMAP] = "segment_unmap",
	[MSIM_ACT_OOM] = "oom",
	[MSIM_ACT_SNAPSHOT] = "snapshot",
	[MSIM_ACT_ANNOTATE] = "annotate",
	[MSIM_ACT_USER_DEFINED] = "user_defined",
	[MSIM_ACT_POOL_CREATE] = "pool_create",
	[MSIM_ACT_POOL_BEGIN] = "pool_begin",
	[MSIM_ACT_POOL_END] = "pool_end",
	[MSIM_ACT_POOL_RELEASE] = "pool_release",
	[MSIM_ACT_POOL_RESTORE] = "pool_restore",
	[MSIM_ACT_EMPTY_CACHE] = "empty_cache",
};

const char *
msim_action_name(int action)
{
	return action >= 0 && action < MSIM_NACT ? action_names[action] : "?";
}

const char *
msim_snap_state_name(int state)
{
	static const char *const names[MSIM_SNAP_NSTATES] = {
		[MSIM_SNAP_INACTIVE] = "inactive",
		[MSIM_SNAP_ALLOCATED] = "active_allocated",
		[MSIM_SNAP_PENDING_FREE] = "active_pending_free",
	};
	return state >= 0 && state < MSIM_SNAP_NSTATES ? names[state] : "?";
}

int
msim_action_parse(const char *s, size_t len)
{
	for (int a = 0; a < MSIM_NACT; a++)
		if (strlen(action_names[a]) == len &&
		    !memcmp(action_names[a], s, len))
			return a;
	return -1;
}

const msim_trace_format_t *const *
msim_trace_formats(void)
{
	return formats;
}

const msim_trace_format_t *
msim_trace_format_find(const char *name)
{
	for (const msim_trace_format_t *const *f = formats; *f; f++)
		if (!strcmp((*f)->name, name))
			return *f;
	return NULL;
}

const msim_trace_format_t *
msim_trace_format_by_ext(const char *path)
{
	size_t n = strlen(path);
	for (const msim_trace_format_t *const *f = formats; *f; f++) {
		/* exts is a space-separated list: ".pickle .pkl" */
		const char *e = (*f)->exts;
		while (*e) {
			size_t k = strcspn(e, " ");
			if (k && k <= n && !strncasecmp(path + n - k, e, k))
				return *f;
			e += k;
			while (*e == ' ')
				e++;
		}
	}
	return NULL;
}

#define H_K1 UINT64_C(0x9E3779B97F4A7C15)
#define H_K2 UINT64_C(0xC2B2AE3D27D4EB4F)

static inline uint64_t
hash_mix(uint64_t h, uint64_t w)
{
	h ^= w * H_K1;
	h = (h << 31) | (h >> 33);
	return h * H_K2;
}

void
msim_hash_init(msim_hash_t *h)
{
	memset(h, 0, sizeof(*h));
	h->h = UINT64_C(0x6D656D73696D3031); /* "memsim01" */
}

void
msim_hash_update(msim_hash_t *h, const void *data, size_t n)
{
	const unsigned char *p = data;
	h->len += n;
	while (n && h->ntail) {
		h->tail |= (uint64_t)*p++ << (8 * h->ntail);
		n--;
		if (++h->ntail == 8) {
			h->h = hash_mix(h->h, h->tail);
			h->tail = 0;
			h->ntail = 0;
		}
	}
	uint64_t hv = h->h;
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t w;
		memcpy(&w, p, 8); /* one load; the words are little-endian */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		w = __builtin_bswap64(w);
#endif
		hv = hash_mix(hv, w);
	}
	h->h = hv;
	for (; n; n--) {
		h->tail |= (uint64_t)*p++ << (8 * h->ntail);
		h->ntail++;
	}
}

uint64_t
msim_hash_final(const msim_hash_t *h)
{
	uint64_t v = hash_mix(h->h, h->tail);
	v = hash_mix(v, h->len);
	v ^= v >> 33;
	v *= H_K1;
	v ^= v >> 29;
	return v;
}

int
msim_trace_fail(msim_trace_t *t, int code, const char *fmt, ...)
{
	char why[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (t->line)
		snprintf(t->errmsg, sizeof(t->errmsg), "%s:%llu: %s", t->path,
			 (unsigned long long)t->line, why);
	else if (t->offset)
		snprintf(t->errmsg, sizeof(t->errmsg), "%s: byte %llu: %s",
			 t->path, (unsigned long long)(t->offset - 1), why);
	else
		snprintf(t->errmsg, sizeof(t->errmsg), "%s: %s", t->path, why);
	return code;
}

size_t
msim_trace_read(msim_trace_t *t, void *buf, size_t n)
{
	size_t got = fread(buf, 1, n, t->fp);
	if (!t->opt.unhashed)
		msim_hash_update(&t->hash, buf, got);
	return got;
}

int
msim_lines_init(msim_lines_t *l)
{
	memset(l, 0, sizeof(*l));
	/* MSIM_LINE_SLACK bytes more, zeroed: word-at-a-time parsers may
	 * load up to 8 bytes from any byte of a line, its NUL included. */
	l->buf = calloc(1, MSIM_LINE_MAX + 1 + MSIM_LINE_SLACK);
	return l->buf ? 0 : MSIM_ENOMEM;
}

void
msim_lines_clear(msim_lines_t *l)
{
	free(l->buf);
	memset(l, 0, sizeof(*l));
}

char *
msim_trace_line(msim_trace_t *t, msim_lines_t *l, size_t *len_out)
{
	for (;;) {
		char *start = l->buf + l->pos;
		char *nl = memchr(start, '\n', l->end - l->pos);
		if (nl || (l->eof && l->pos < l->end)) {
			/* A line, or the last one without a newline. */
			size_t len = nl ? (size_t)(nl - start) : l->end - l->pos;
			start[len] = '\0';
			l->pos += nl ? len + 1 : len;
			if (len && start[len - 1] == '\r')
				start[--len] = '\0';
			t->line++;
			*len_out = len;
			return start;
		}
		if (l->eof)
			return NULL;
		size_t rest = l->end - l->pos;
		if (rest == MSIM_LINE_MAX) {
			t->line++; /* the error names the overlong line */
			return NULL;
		}
		memmove(l->buf, start, rest);
		l->pos = 0;
		l->end = rest;
		size_t got = msim_trace_read(t, l->buf + l->end,
					     MSIM_LINE_MAX - l->end);
		l->end += got;
		if (got == 0)
			l->eof = true;
	}
}

bool
msim_lines_overlong(const msim_lines_t *l)
{
	return !l->eof || l->pos != l->end;
}

bool
msim_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (!*s)
		return false;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		if (!*s)
			return false;
		for (; *s; s++) {
			unsigned d;
			if (*s >= '0' && *s <= '9')
				d = (unsigned)(*s - '0');
			else if ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f')
				d = (unsigned)((*s | 0x20) - 'a' + 10);
			else
				return false;
			if (v >> 60)
				return false;
			v = v << 4 | d;
		}
	} else {
		for (; *s; s++) {
			unsigned d = (unsigned)(*s - '0');
			if (d > 9 || v > (UINT64_MAX - d) / 10)
				return false;
			v = v * 10 + d;
		}
	}
	*out = v;
	return true;
}

const char *
msim_u64_why(const char *s)
{
	if (!*s)
		return "is empty";
	if (*s == '-')
		return "is negative";
	const char *p = s[0] == '0' && (s[1] | 0x20) == 'x' ? s + 2 : s;
	bool hex = p != s;
	if (!*p)
		return "is not a whole number";
	for (; *p; p++)
		if (!(*p >= '0' && *p <= '9') &&
		    !(hex && (*p | 0x20) >= 'a' && (*p | 0x20) <= 'f'))
			return "is not a whole number";
	return "is too large (above 2^64)";
}

bool
msim_trace_skip_unknown(msim_trace_t *t, const char *name)
{
	if (!t->opt.lenient)
		return false;
	if (!t->skipped++)
		snprintf(t->skipped_first, sizeof(t->skipped_first), "%s",
			 name);
	return true;
}

bool
msim_trace_time_origin(const msim_trace_t *t, uint64_t *us_out)
{
	if (t->have_t0)
		*us_out = t->t0;
	return t->have_t0;
}

msim_time_t
msim_trace_time(msim_trace_t *t, uint64_t time_us)
{
	if (!t->have_t0) {
		t->t0 = time_us;
		t->have_t0 = true;
	}
	return time_us >= t->t0 ? (time_us - t->t0) * 1000 : 0;
}

int
msim_trace_open(const char *path, const msim_trace_options_t *opt,
		msim_trace_t **out, char *why, size_t whylen)
{
	msim_trace_t *t = calloc(1, sizeof(*t));
	int rc = MSIM_ENOMEM;
	if (!t || !(t->path = strdup(path)) || msim_idmap_init(&t->ids)) {
		snprintf(why, whylen, "%s: %s", path, msim_strerror(rc));
		goto fail;
	}
	if (opt)
		t->opt = *opt;
	msim_hash_init(&t->hash);
	t->fp = fopen(path, "rb");
	if (!t->fp) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		rc = MSIM_EIO;
		goto fail;
	}
	struct stat sb;
	if (fstat(fileno(t->fp), &sb) == 0 && S_ISREG(sb.st_mode))
		t->size = (uint64_t)sb.st_size;
	char head[512];
	size_t n = fread(head, 1, sizeof(head), t->fp);
	if (ferror(t->fp) || fseek(t->fp, 0, SEEK_SET)) {
		snprintf(why, whylen, "%s: cannot read: %s", path,
			 strerror(errno));
		rc = MSIM_EIO;
		goto fail;
	}
	if (n == 0) {
		snprintf(why, whylen, "%s: empty file", path);
		rc = MSIM_EFORMAT;
		goto fail;
	}
	t->format = t->opt.format;
	for (const msim_trace_format_t *const *f = formats;
	     *f && !t->format; f++) {
		if ((*f)->probe(head, n)) {
			t->format = *f;
			break;
		}
	}
	if (!t->format) {
		snprintf(why, whylen, "%s: unknown trace format (expected a "
			 "PyTorch snapshot pickle, a device-trace CSV, an RMM "
			 "log or a memsim binary trace)", path);
		rc = MSIM_EFORMAT;
		goto fail;
	}
	if ((rc = t->format->open(t))) {
		snprintf(why, whylen, "%s", t->errmsg);
		goto fail;
	}
	*out = t;
	return 0;
fail:
	msim_trace_close(t);
	return rc;
}

/* What msim_trace_next_entry() does at the end: hash what a format leaves
 * unread, so that the content hash is the whole file's. */
static void
trace_end(msim_trace_t *t)
{
	if (t->ended)
		return;
	char buf[4096];
	while (msim_trace_read(t, buf, sizeof(buf)) > 0)
		;
	t->ended = true;
}

int
msim_trace_next_entry(msim_trace_t *t, msim_entry_t *e_out)
{
	e_out->tag = 0; /* formats without tags leave it */
	int rc = t->format->next(t, e_out);
	if (rc == 1) {
		if (e_out->size > MSIM_SIZE_MAX)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "%s of %llu bytes: above 2^62",
					       msim_action_name(e_out->action),
					       (unsigned long long)e_out->size);
		if (!t->entries++)
			t->first_us = e_out->time_us;
		t->last_us = e_out->time_us;
		t->actions[e_out->action < MSIM_NACT ? e_out->action : 0]++;
		switch (e_out->action) {
		case MSIM_ACT_SEGMENT_ALLOC:
		case MSIM_ACT_SEGMENT_MAP:
			if (__builtin_add_overflow(t->seg_bytes,
						   (int64_t)e_out->size,
						   &t->seg_bytes))
				goto too_many;
			break;
		case MSIM_ACT_SEGMENT_FREE:
		case MSIM_ACT_SEGMENT_UNMAP:
			if (__builtin_sub_overflow(t->seg_bytes,
						   (int64_t)e_out->size,
						   &t->seg_bytes))
				goto too_many;
			break;
		default:
			break;
		}
	} else if (rc == 0) {
		trace_end(t);
	}
	return rc;
too_many:
	return msim_trace_fail(t, MSIM_EFORMAT, "segments add up to more "
			       "than 2^63 bytes");
}

bool
msim_trace_ended(const msim_trace_t *t)
{
	return t->ended;
}

bool
msim_trace_hashed(const msim_trace_t *t)
{
	return t->ended && !t->opt.unhashed;
}

/* ---- partial histories: seeding the start (see msim_trace_seeding()) ---- */

/* PyTorch's CUDACachingAllocator constants: kMinBlockSize (round_size
 * rounds up to it), kSmallSize (the largest small-pool request; a large
 * free block is split only if more than this remains) and kSmallBuffer
 * (the size of a small segment). */
#define SEED_MIN_BLOCK UINT64_C(512)
#define SEED_SMALL_SIZE (UINT64_C(1) << 20)
#define SEED_SMALL_BUFFER (UINT64_C(2) << 20)

typedef struct seed_blk_s {
	uint64_t addr, size, block; /* block: its size in the snapshot, 0 if
				     * unknown */
	msim_stream_t stream;
} seed_blk_t;

typedef struct seed_seg_s {
	uint64_t addr, size;
	msim_stream_t stream;
	bool large;
	uint32_t pool; /* its private pool (pool_derive()), 0: default */
} seed_seg_t;

typedef struct seed_build_s {
	seed_blk_t *b;
	size_t nb, capb;
	seed_seg_t *g;
	size_t ng, capg;
	uint32_t *fill; /* filler ids to free once all is built */
	size_t nfill, capfill;
} seed_build_t;

static int
seed_grow(void **a, size_t *cap, size_t n, size_t each)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? 2 * *cap : 64;
	void *p = realloc(*a, c * each);
	if (!p)
		return MSIM_ENOMEM;
	*a = p;
	*cap = c;
	return 0;
}

static int
seed_add_blk(seed_build_t *s, uint64_t addr, uint64_t size, uint64_t block,
	     msim_stream_t stream)
{
	if (seed_grow((void **)&s->b, &s->capb, s->nb, sizeof(*s->b)))
		return MSIM_ENOMEM;
	s->b[s->nb++] = (seed_blk_t){addr, size, block, stream};
	return 0;
}

static int
seed_add_seg(seed_build_t *s, uint64_t addr, uint64_t size,
	     msim_stream_t stream, bool large, uint32_t pool)
{
	if (seed_grow((void **)&s->g, &s->capg, s->ng, sizeof(*s->g)))
		return MSIM_ENOMEM;
	s->g[s->ng++] = (seed_seg_t){addr, size, stream, large, pool};
	return 0;
}

static int
seed_blk_cmp(const void *a, const void *b)
{
	const seed_blk_t *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int
seed_seg_cmp(const void *a, const void *b)
{
	const seed_seg_t *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static uint64_t
seed_round(uint64_t size)
{
	/* round_size(): at least kMinBlockSize, else a multiple of it. */
	return size < SEED_MIN_BLOCK ? SEED_MIN_BLOCK
	       : (size + SEED_MIN_BLOCK - 1) / SEED_MIN_BLOCK * SEED_MIN_BLOCK;
}

static void
seed_inexact(msim_trace_t *t, const char *why)
{
	if (t->seed.exact) {
		t->seed.exact = false;
		t->seed.inexact = why;
	}
}

static int
seed_push(msim_trace_t *t, int kind, uint32_t id, uint64_t addr,
	  uint64_t size, msim_stream_t stream, uint8_t flags)
{
	if (seed_grow((void **)&t->seedq, &t->capseedq, t->nseedq,
		      sizeof(*t->seedq)))
		return MSIM_ENOMEM;
	t->seedq[t->nseedq++] = (msim_req_t){
		.kind = (uint8_t)kind, .id = id, .addr = addr, .size = size,
		.stream = stream, .flags = flags};
	if (kind != MSIM_REQ_SEGMENT_HINT && kind != MSIM_REQ_RESET_PEAKS &&
	    (kind < MSIM_REQ_POOL_CREATE || kind > MSIM_REQ_POOL_RESTORE))
		t->seed.requests++;
	return 0;
}

/* Fillers for the free bytes [at, at + n) of a segment being rebuilt:
 * blocks of the pool the segment belongs to (small: at most kSmallSize
 * each). */
static int
seed_fill(msim_trace_t *t, seed_build_t *s, const seed_seg_t *g, uint64_t n)
{
	bool chunks = !g->large && n <= SEED_SMALL_BUFFER;
	if (!g->large && !chunks)
		seed_inexact(t, "a small segment larger than 2 MiB");
	while (n) {
		uint64_t k = n;
		if (chunks && k > SEED_SMALL_SIZE)
			k = SEED_SMALL_SIZE;
		uint32_t id;
		int rc;
		if ((rc = msim_idmap_take_id(&t->ids, &id)) ||
		    (rc = seed_grow((void **)&s->fill, &s->capfill, s->nfill,
				    sizeof(*s->fill))) ||
		    (rc = seed_push(t, MSIM_REQ_ALLOC, id, 0, k, g->stream,
				    MSIM_REQF_FILLER)))
			return rc;
		s->fill[s->nfill++] = id;
		t->seed.fillers++;
		n -= k;
	}
	return 0;
}

/* The allocation of seeded block b. */
static int
seed_alloc(msim_trace_t *t, const seed_blk_t *b, uint64_t size)
{
	uint32_t id;
	int rc = msim_idmap_add(&t->ids, b->addr, &id);
	if (rc == MSIM_EINVAL)
		return 0; /* seeded twice: once is enough */
	if (rc)
		return rc;
	t->seed.bytes += b->size;
	return seed_push(t, MSIM_REQ_ALLOC, id, b->addr, size, b->stream,
			 MSIM_REQF_SEED);
}

/* Rebuilds segment g with the seeded blocks b[0..n) inside it. */
static int
seed_segment(msim_trace_t *t, seed_build_t *s, const seed_seg_t *g,
	     const seed_blk_t *b, size_t n)
{
	int rc;
	uint64_t end = g->addr + g->size, at = g->addr;
	t->seed.segments++;
	t->seed.segment_bytes += g->size;
	/* A private pool's segment is rebuilt inside that pool. */
	if (g->pool && (rc = seed_push(t, MSIM_REQ_POOL_BEGIN, 0, g->pool, 0,
				       g->stream, 0)))
		return rc;
	if ((rc = seed_push(t, MSIM_REQ_SEGMENT_HINT, 0, g->addr, g->size,
			    g->stream, 0)))
		return rc;
	if (g->large) {
		/* One malloc of the whole segment, given back: the segment
		 * is then one free block of its recorded size. */
		uint32_t id;
		if ((rc = msim_idmap_take_id(&t->ids, &id)) ||
		    (rc = seed_push(t, MSIM_REQ_ALLOC, id, 0, g->size,
				    g->stream, MSIM_REQF_FILLER)) ||
		    (rc = seed_push(t, MSIM_REQ_FREE, id, 0, 0, g->stream,
				    MSIM_REQF_FILLER)) ||
		    (rc = msim_idmap_put_id(&t->ids, id)))
			return rc;
		if (g->size <= 10 * SEED_SMALL_SIZE)
			seed_inexact(t, "a large segment of 10 MiB or less "
				     "cannot be rebuilt by one malloc");
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t used = b[i].block ? b[i].block : seed_round(b[i].size);
		uint64_t size = b[i].size;
		if (b[i].block && seed_round(size) != b[i].block)
			size = b[i].block; /* it kept a remainder too small
					    * to split */
		if (b[i].addr < at) {
			seed_inexact(t, "seeded blocks overlap");
			continue;
		}
		uint64_t gap = b[i].addr - at;
		if (g->large && gap && gap <= SEED_SMALL_SIZE) {
			/* Too small for a large-pool filler: the block
			 * before (or this one) takes it. */
			seed_inexact(t, "a free gap of 1 MiB or less in a "
				     "large segment was given to a block");
			size += gap;
			gap = 0;
		} else if ((rc = seed_fill(t, s, g, gap))) {
			return rc;
		}
		if ((rc = seed_alloc(t, &b[i], size)))
			return rc;
		at = b[i].addr + used;
	}
	if (at < end && (!g->large || end - at > SEED_SMALL_SIZE ||
			 n == 0) && (rc = seed_fill(t, s, g, end - at)))
		return rc;
	if (g->pool &&
	    ((rc = seed_push(t, MSIM_REQ_POOL_END, 0, g->pool, 0, g->stream,
			     0)) ||
	     (rc = seed_push(t, MSIM_REQ_POOL_RELEASE, 0, g->pool, 0,
			     g->stream, 0))))
		return rc;
	return 0;
}

/* ---- private pools of a snapshot ----
 *
 * A snapshot's segments name their pool (segment_pool_id); its trace
 * entries name none (PyTorch 2.11).  What can be derived: a segment of the
 * end state that is in a private pool was in it all its life (a block
 * never changes pools, and release_cached_blocks frees a segment only when
 * it is wholly free), so every alloc whose address lies in it once the
 * trace made it (or from the start, for a segment older than the history)
 * came from that pool, and so did the malloc behind its segment_alloc
 * row.  The replay gets the rows `memsim record --gpu` would have written
 * around them: each pool is created before anything (a reference held to
 * the end: its segments outlive the trace), a run of such allocs on a
 * stream is a pool_begin on that stream ... pool_end, pool_release, and
 * the runs end before an alloc of the default pool on that stream, before
 * a segment_free (empty_cache(), the OOM retry: release_cached_blocks is
 * skipped while a capture is underway) and before an oom entry.
 * What cannot be derived: the pool of a segment the trace frees (it is not
 * in the end state: its allocs replay in the default pool); when a pool
 * was released (its segments outlive the trace, so none of them was freed
 * by release_cached_blocks); a pool's use by allocs that reused no
 * segment of the end state.  Needs a first pass (a snapshot in a regular
 * file). */

static int
pseg_cmp(const void *a, const void *b)
{
	const struct msim_pseg_s *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The private segments of the end state g[0..ng), with the entry that
 * made each (segs: the trace's segments alive at its end, by address, and
 * segord their segment_alloc entries by id), into t->pseg. */
static int
pool_scan(msim_trace_t *t, const msim_snap_segment_t *g, size_t ng,
	  const msim_idmap_t *segs, const uint64_t *segord)
{
	size_t n = 0;
	for (size_t i = 0; i < ng; i++)
		n += g[i].pool != 0;
	if (!n)
		return 0;
	if (!(t->pseg = malloc(n * sizeof(*t->pseg))))
		return MSIM_ENOMEM;
	for (size_t i = 0; i < ng; i++) {
		if (!g[i].pool)
			continue;
		uint32_t id;
		struct msim_pseg_s *q = &t->pseg[t->npseg++];
		q->addr = g[i].addr;
		q->size = g[i].total_size;
		q->pool = g[i].pool;
		q->ord = msim_idmap_find(segs, g[i].addr, &id) ? 0
							       : segord[id];
		if (g[i].pool > t->npools)
			t->npools = g[i].pool;
	}
	qsort(t->pseg, t->npseg, sizeof(*t->pseg), pseg_cmp);
	/* Each pool is created first: a reference held to the end. */
	for (uint32_t k = 1; k <= t->npools; k++)
		if (seed_push(t, MSIM_REQ_POOL_CREATE, 0, k, 0, 0, 0))
			return MSIM_ENOMEM;
	return 0;
}

/* The private pool of the alloc at addr (entry ord), 0 if none. */
static uint32_t
pool_of(const msim_trace_t *t, uint64_t addr, uint64_t ord)
{
	size_t lo = 0, hi = t->npseg;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->pseg[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	const struct msim_pseg_s *q = &t->pseg[lo - 1];
	return addr - q->addr < q->size && q->ord <= ord ? q->pool : 0;
}

static int
pool_queue(msim_trace_t *t, int kind, uint32_t pool, msim_stream_t stream,
	   const msim_entry_t *e)
{
	if (seed_grow((void **)&t->pq, &t->cappq, t->npq, sizeof(*t->pq)))
		return MSIM_ENOMEM;
	t->pq[t->npq++] = (msim_req_t){
		.kind = (uint8_t)kind, .addr = pool, .stream = stream,
		.time = msim_trace_time(t, e->time_us)};
	return 0;
}

/* Ends stream i's run in its pool. */
static int
pool_end_run(msim_trace_t *t, size_t i, const msim_entry_t *e)
{
	int rc;
	if ((rc = pool_queue(t, MSIM_REQ_POOL_END, t->pcur[i].pool,
			     t->pcur[i].stream, e)) ||
	    (rc = pool_queue(t, MSIM_REQ_POOL_RELEASE, t->pcur[i].pool,
			     t->pcur[i].stream, e)))
		return rc;
	t->pcur[i] = t->pcur[--t->npcur];
	return 0;
}

/* The pool requests entry e needs before it, into t->pq: 1 if any, 0 if
 * none, or an error.  before: called before the hidden empty_cache rules
 * (ends every run at a segment_free or an oom), else after them (an alloc
 * or a segment_alloc enters its pool). */
static int
pool_derive(msim_trace_t *t, const msim_entry_t *e, bool before)
{
	bool ends = e->action == MSIM_ACT_SEGMENT_FREE ||
		    e->action == MSIM_ACT_SEGMENT_UNMAP ||
		    e->action == MSIM_ACT_OOM;
	bool enters = e->action == MSIM_ACT_ALLOC ||
		      e->action == MSIM_ACT_SEGMENT_ALLOC;
	if (before ? !ends : !enters)
		return 0;
	if (t->pool_done) {
		t->pool_done = false; /* its requests were served */
		return 0;
	}
	int rc;
	t->npq = t->pqpos = 0;
	if (ends) {
		while (t->npcur)
			if ((rc = pool_end_run(t, t->npcur - 1, e)))
				return rc;
	} else {
		uint32_t pool = pool_of(t, e->addr, t->entries);
		size_t i = 0;
		while (i < t->npcur && t->pcur[i].stream != e->stream)
			i++;
		if (i < t->npcur && t->pcur[i].pool == pool)
			return 0;
		if (i < t->npcur && (rc = pool_end_run(t, i, e)))
			return rc;
		if (pool) {
			/* Begun on another stream: one capture a pool. */
			for (i = 0; i < t->npcur; i++)
				if (t->pcur[i].pool == pool &&
				    (rc = pool_end_run(t, i, e)))
					return rc;
			if ((rc = seed_grow((void **)&t->pcur, &t->cappcur,
					    t->npcur, sizeof(*t->pcur))) ||
			    (rc = pool_queue(t, MSIM_REQ_POOL_BEGIN, pool,
					     e->stream, e)))
				return rc;
			t->pcur[t->npcur++] = (struct msim_pcur_s){
				e->stream, pool};
		}
	}
	if (!t->npq)
		return 0;
	t->la = *e;
	t->have_la = true;
	t->pool_done = true;
	return 1;
}

/* The state of the segments a partial history began with, from a first
 * pass over the trace (t2, at its start), into t->seedq. */
static int
seed_scan(msim_trace_t *t, msim_trace_t *t2)
{
	msim_idmap_t known, pend, segs;
	seed_build_t s = {0};
	uint64_t *segord = NULL; /* by id in segs: its segment_alloc entry */
	size_t capsegord = 0;
	int rc = MSIM_ENOMEM;
	bool expandable = false;
	memset(&known, 0, sizeof(known));
	memset(&pend, 0, sizeof(pend));
	memset(&segs, 0, sizeof(segs));
	if (msim_idmap_init(&known) || msim_idmap_init(&pend) ||
	    msim_idmap_init(&segs))
		goto out;
	msim_entry_t e;
	uint32_t id;
	while ((rc = msim_trace_next_entry(t2, &e)) == 1) {
		rc = 0;
		switch (e.action) {
		case MSIM_ACT_ALLOC:
			if (e.addr)
				rc = msim_idmap_add(&known, e.addr, &id);
			break;
		case MSIM_ACT_FREE_REQUESTED:
			if (!msim_idmap_find(&known, e.addr, &id) ||
			    !msim_idmap_find(&pend, e.addr, &id) || !e.addr)
				break;
			t->seed.from_frees++;
			if (!(rc = msim_idmap_add(&pend, e.addr, &id)))
				rc = seed_add_blk(&s, e.addr, e.size, 0,
						  e.stream);
			break;
		case MSIM_ACT_FREE_COMPLETED:
			if (!msim_idmap_remove(&known, e.addr, &id) ||
			    !msim_idmap_remove(&pend, e.addr, &id) || !e.addr)
				break;
			t->seed.from_frees++;
			rc = seed_add_blk(&s, e.addr, e.size, 0, e.stream);
			break;
		case MSIM_ACT_SEGMENT_ALLOC:
			rc = msim_idmap_add(&segs, e.addr, &id);
			if (rc == 0 && !(rc = seed_grow((void **)&segord,
							&capsegord, id,
							sizeof(*segord))))
				segord[id] = t2->entries;
			break;
		case MSIM_ACT_SEGMENT_FREE:
			if (msim_idmap_remove(&segs, e.addr, &id) &&
			    e.size)
				rc = seed_add_seg(&s, e.addr, e.size, e.stream,
						  e.size > SEED_SMALL_BUFFER,
						  0);
			break;
		case MSIM_ACT_SEGMENT_MAP:
		case MSIM_ACT_SEGMENT_UNMAP:
			expandable = true;
			break;
		default:
			break;
		}
		if (rc == MSIM_ENOMEM)
			goto out;
	}
	if (rc < 0) {
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", t2->errmsg);
		goto out;
	}
	/* The snapshot's state: its live blocks, and the segments no row
	 * created. */
	const msim_snap_segment_t *g;
	size_t ng;
	rc = MSIM_ENOMEM;
	if (msim_trace_segments(t2, &g, &ng) ||
	    pool_scan(t, g, ng, &segs, segord))
		goto out;
	for (size_t i = 0; i < ng; i++) {
		if (g[i].expandable)
			expandable = true;
		else if (msim_idmap_find(&segs, g[i].addr, &id) &&
			 seed_add_seg(&s, g[i].addr, g[i].total_size,
				      g[i].stream, g[i].large, g[i].pool))
			goto out;
		for (size_t k = 0; k < g[i].nblocks; k++) {
			const msim_snap_block_t *b = &g[i].blocks[k];
			if (b->state == MSIM_SNAP_INACTIVE)
				continue;
			t->seed.snap_live++;
			t->seed.snap_live_bytes += b->requested;
			if (!msim_idmap_find(&known, b->addr, &id)) {
				t->seed.explained++;
				t->seed.explained_bytes += b->requested;
			} else if (msim_idmap_find(&pend, b->addr, &id)) {
				t->seed.from_snapshot++;
				if (seed_add_blk(&s, b->addr, b->requested,
						 b->size, g[i].stream))
					goto out;
			}
		}
	}
	if (t2->have_conf) {
		memcpy(t->alloc_conf, t2->alloc_conf, sizeof(t->alloc_conf));
		t->have_conf = true;
	}
	if (t->opt.strict) {
		/* The settings only: a partial history stays an error. */
		t->seed.from_frees = t->seed.from_snapshot = 0;
		rc = 0;
		goto out;
	}
	if (!s.nb && !s.ng) {
		rc = 0;
		goto out;
	}
	if (expandable)
		seed_inexact(t, "expandable segments are seeded without "
			     "their layout");
	if (!ng)
		seed_inexact(t, "the snapshot has no segments state");
	if (s.nb)
		qsort(s.b, s.nb, sizeof(*s.b), seed_blk_cmp);
	if (s.ng)
		qsort(s.g, s.ng, sizeof(*s.g), seed_seg_cmp);
	/* Each segment with its blocks, then the blocks outside them. */
	size_t j = 0;
	unsigned char *placed = s.nb ? calloc(s.nb, 1) : NULL;
	if (s.nb && !placed)
		goto out;
	for (size_t i = 0; i < s.ng; i++) {
		if (i && s.g[i].addr < s.g[i - 1].addr + s.g[i - 1].size)
			continue; /* the same segment twice */
		while (j < s.nb && s.b[j].addr < s.g[i].addr)
			j++;
		size_t k = j;
		while (k < s.nb && s.b[k].addr < s.g[i].addr + s.g[i].size)
			placed[k++] = 1;
		/* s.b is NULL when the snapshot lists no blocks. */
		if ((rc = seed_segment(t, &s, &s.g[i], s.nb ? s.b + j : NULL,
				       k - j))) {
			free(placed);
			goto out;
		}
		j = k;
	}
	for (size_t i = 0; i < s.nb; i++) {
		if (placed[i])
			continue;
		t->seed.unplaced++;
		if ((rc = seed_alloc(t, &s.b[i], s.b[i].size))) {
			free(placed);
			goto out;
		}
	}
	free(placed);
	if (t->seed.unplaced && ng)
		seed_inexact(t, "some seeded blocks lie in no segment the "
			     "snapshot knows");
	for (size_t i = 0; i < s.nfill; i++)
		if ((rc = seed_push(t, MSIM_REQ_FREE, s.fill[i], 0, 0, 0,
				    MSIM_REQF_FILLER)))
			goto out;
	for (size_t i = 0; i < s.nfill; i++)
		if ((rc = msim_idmap_put_id(&t->ids, s.fill[i])))
			goto out;
	/* The history begins here: peaks from now on. */
	rc = seed_push(t, MSIM_REQ_RESET_PEAKS, 0, 0, 0, 0, 0);
out:
	if (rc == MSIM_ENOMEM)
		msim_trace_fail(t, rc, "%s", msim_strerror(rc));
	msim_idmap_clear(&known);
	msim_idmap_clear(&pend);
	msim_idmap_clear(&segs);
	free(segord);
	free(s.b);
	free(s.g);
	free(s.fill);
	return rc;
}

int
msim_trace_prescan(msim_trace_t *t)
{
	if (t->prescanned)
		return 0;
	t->prescanned = true;
	t->seed.exact = true;
	if (t->opt.all_devices)
		return 0;
	if (!t->format->segments || !t->size) {
		t->lazy_seed = !t->opt.strict;
		return 0;
	}
	msim_trace_options_t o = t->opt;
	o.format = t->format;
	o.hidden_empty_cache = false;
	msim_trace_t *t2;
	char why[512];
	int rc = msim_trace_open(t->path, &o, &t2, why, sizeof(why));
	if (rc) {
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", why);
		return rc;
	}
	t->seed.first_pass = true;
	rc = seed_scan(t, t2);
	msim_trace_close(t2);
	return rc;
}

void
msim_trace_seeding(const msim_trace_t *t, msim_trace_seed_t *out)
{
	*out = t->seed;
	if (!t->prescanned)
		out->exact = true;
}

const char *
msim_trace_alloc_conf(const msim_trace_t *t)
{
	return t->have_conf ? t->alloc_conf : NULL;
}

uint64_t
msim_trace_skipped(const msim_trace_t *t, const char **first_out)
{
	*first_out = t->skipped_first;
	return t->skipped;
}

int
msim_trace_devices(const char *path, uint32_t *devs, size_t max,
		   size_t *n_out, char *why, size_t whylen)
{
	msim_trace_options_t o = {.all_devices = true, .lenient = true};
	msim_trace_t *t;
	int rc = msim_trace_open(path, &o, &t, why, whylen);
	if (rc)
		return rc;
	msim_entry_t e;
	size_t n = 0;
	uint64_t seen[4] = {0}; /* devices below 256, as a bitmap */
	while ((rc = msim_trace_next_entry(t, &e)) == 1)
		if (e.device < 256)
			seen[e.device / 64] |= UINT64_C(1) << (e.device % 64);
	if (rc < 0) {
		snprintf(why, whylen, "%s", t->errmsg);
		msim_trace_close(t);
		return rc;
	}
	for (uint32_t d = 0; d < 256; d++)
		if (seen[d / 64] >> (d % 64) & 1) {
			if (n < max)
				devs[n] = d;
			n++;
		}
	*n_out = n;
	msim_trace_close(t);
	return 0;
}

/* Turns entry e into a request: 1, 0 if e is not one, or an error. */
static int
trace_request(msim_trace_t *t, const msim_entry_t *e, msim_req_t *req)
{
	int rc;
	memset(req, 0, sizeof(*req));
	req->time = msim_trace_time(t, e->time_us);
	req->stream = e->stream;
	req->addr = e->addr;
	switch (e->action) {
	case MSIM_ACT_ALLOC:
		if (e->size == 0)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "alloc of 0 bytes");
		if (e->addr == 0)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "alloc at address 0");
		rc = msim_idmap_add(&t->ids, e->addr, &req->id);
		if (rc == MSIM_EINVAL)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "alloc at address 0x%llx, which "
					       "is still live",
					       (unsigned long long)e->addr);
		if (rc)
			return msim_trace_fail(t, rc, "%s", msim_strerror(rc));
		req->kind = MSIM_REQ_ALLOC;
		req->size = e->size;
		req->tag = e->tag;
		return 1;
	case MSIM_ACT_FREE_COMPLETED:
	case MSIM_ACT_FREE_REQUESTED: {
		bool completed = e->action == MSIM_ACT_FREE_COMPLETED;
		rc = completed ? msim_idmap_remove(&t->ids, e->addr, &req->id)
			       : msim_idmap_find(&t->ids, e->addr, &req->id);
		if (rc == MSIM_ENOTFOUND && t->lazy_seed && e->addr) {
			/* No first pass: the block was allocated before the
			 * history began; allocate it now, then free it. */
			if ((rc = msim_idmap_add(&t->ids, e->addr, &req->id)))
				return msim_trace_fail(t, rc, "%s",
						       msim_strerror(rc));
			seed_inexact(t, "without a first pass over the file, "
				     "blocks are seeded where their free is "
				     "met");
			t->seed.from_frees++;
			t->seed.late++;
			t->seed.requests++;
			t->seed.bytes += e->size;
			req->kind = MSIM_REQ_ALLOC;
			req->size = e->size ? e->size : SEED_MIN_BLOCK;
			req->flags = MSIM_REQF_SEED;
			t->la = *e;
			t->have_la = true;
			return 1;
		}
		if (rc == MSIM_ENOTFOUND)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "%s of unknown address 0x%llx "
					       "(the history began after it "
					       "was allocated%s)",
					       msim_action_name(e->action),
					       (unsigned long long)e->addr,
					       t->opt.strict
					       ? "; without --strict it is "
						 "seeded at the start"
					       : "");
		if (rc)
			return msim_trace_fail(t, rc, "%s", msim_strerror(rc));
		if (!completed && !t->opt.deferred_frees)
			return 0;
		req->kind = completed ? MSIM_REQ_FREE : MSIM_REQ_FREE_REQUESTED;
		return 1;
	}
	case MSIM_ACT_SEGMENT_ALLOC:
		req->kind = MSIM_REQ_SEGMENT_HINT;
		req->size = e->size;
		return 1;
	case MSIM_ACT_SEGMENT_MAP:
		/* Expandable segments: the first map of a reservation is at
		 * its base, the address of the VA range reserved; later maps
		 * of it lie between its base and its mapped end. */
		for (size_t i = 0; i < t->nresv; i++) {
			uint64_t *r = t->resv[i];
			if (e->addr >= r[0] && e->addr <= r[1]) {
				if (e->addr + e->size > r[1])
					r[1] = e->addr + e->size;
				return 0;
			}
		}
		if (seed_grow((void **)&t->resv, &t->capresv, t->nresv,
			      sizeof(*t->resv)))
			return msim_trace_fail(t, MSIM_ENOMEM, "%s",
					       msim_strerror(MSIM_ENOMEM));
		t->resv[t->nresv][0] = e->addr;
		t->resv[t->nresv++][1] = e->addr + e->size;
		req->kind = MSIM_REQ_SEGMENT_HINT;
		req->size = e->size;
		return 1;
	case MSIM_ACT_OOM:
		if (e->size == 0)
			return msim_trace_fail(t, MSIM_EFORMAT, "oom of 0 bytes");
		if ((rc = msim_idmap_take_id(&t->ids, &req->id)))
			return msim_trace_fail(t, rc, "%s", msim_strerror(rc));
		t->pending_id = true;
		t->oom_id = req->id;
		req->kind = MSIM_REQ_ALLOC;
		req->flags = MSIM_REQF_EXPECT_OOM;
		req->size = e->size;
		req->tag = e->tag;
		req->addr = 0;
		return 1;
	case MSIM_ACT_POOL_CREATE:
	case MSIM_ACT_POOL_BEGIN:
	case MSIM_ACT_POOL_END:
	case MSIM_ACT_POOL_RELEASE:
	case MSIM_ACT_POOL_RESTORE:
		if (e->addr == 0)
			return msim_trace_fail(t, MSIM_EFORMAT, "%s of pool 0 "
					       "(the default pool has no id)",
					       msim_action_name(e->action));
		/* pool_create's size: the pool's flags, 1 = an allocator of
		 * its own, 2 = use_on_oom, 4 = no_split. */
		if (e->action == MSIM_ACT_POOL_CREATE && e->size > 7)
			return msim_trace_fail(t, MSIM_EFORMAT, "pool_create "
					       "size %llu is not a sum of "
					       "flags 1 (an allocator of its "
					       "own), 2 (use_on_oom), 4 "
					       "(no_split)",
					       (unsigned long long)e->size);
		if (e->action == MSIM_ACT_POOL_CREATE)
			req->flags = (uint8_t)(
				(e->size & 1 ? MSIM_REQF_OWN_ALLOC : 0) |
				(e->size & 2 ? MSIM_REQF_USE_ON_OOM : 0) |
				(e->size & 4 ? MSIM_REQF_NO_SPLIT : 0));
		/* pool_restore's: the number of placed allocs after it. */
		if (e->action == MSIM_ACT_POOL_RESTORE)
			req->size = e->size;
		/* pool_release's: 1 = ~MemPool's, with emptyCache(pool). */
		if (e->action == MSIM_ACT_POOL_RELEASE && e->size > 1)
			return msim_trace_fail(t, MSIM_EFORMAT, "pool_release "
					       "size %llu is not 0 or 1 (the "
					       "MemPool's death)",
					       (unsigned long long)e->size);
		if (e->action == MSIM_ACT_POOL_RELEASE && e->size == 1)
			req->flags = MSIM_REQF_EMPTY_POOL;
		req->kind = MSIM_REQ_POOL_CREATE +
			    (e->action - MSIM_ACT_POOL_CREATE);
		return 1;
	case MSIM_ACT_EMPTY_CACHE:
		/* torch.cuda.empty_cache() where the program called it. */
		req->kind = MSIM_REQ_EMPTY_CACHE;
		req->addr = 0;
		return 1;
	default: /* what the allocator did, or annotations */
		return 0;
	}
}

int
msim_trace_next(msim_trace_t *t, msim_req_t *req_out)
{
	if (t->pending_id) {
		t->pending_id = false;
		if (msim_idmap_put_id(&t->ids, t->oom_id))
			return MSIM_ENOMEM;
	}
	if (!t->prescanned) {
		int rc = msim_trace_prescan(t);
		if (rc)
			return rc;
	}
	if (t->seedpos < t->nseedq) {
		*req_out = t->seedq[t->seedpos++];
		if (req_out->kind != MSIM_REQ_SEGMENT_HINT &&
		    req_out->kind != MSIM_REQ_RESET_PEAKS)
			t->requests++;
		return 1;
	}
	for (;;) {
		if (t->pqpos < t->npq) {
			*req_out = t->pq[t->pqpos++];
			t->requests++;
			return 1;
		}
		msim_entry_t e;
		int rc;
		if (t->have_la) {
			e = t->la;
			t->have_la = false;
		} else if ((rc = msim_trace_next_entry(t, &e)) != 1) {
			if (rc == 0 && t->in_call) {
				/* An empty_cache row near the end. */
				t->in_call = t->in_run = false;
				goto empty_cache;
			}
			if (rc == 0 && t->in_run) {
				/* Segments freed at the very end: an
				 * empty_cache() (or the final cleanup). */
				t->in_run = false;
				t->empty_caches++;
				goto empty_cache;
			}
			return rc;
		}
		if (e.action == MSIM_ACT_EMPTY_CACHE && (e.addr || e.size))
			return msim_trace_fail(t, MSIM_EFORMAT, "empty_cache "
					       "with addr %llu and size %llu "
					       "(both are 0; a MemPool's "
					       "emptyCache is a pool_release "
					       "of size 1)",
					       (unsigned long long)e.addr,
					       (unsigned long long)e.size);
		if (t->npools && (rc = pool_derive(t, &e, true)) != 0) {
			if (rc < 0)
				return msim_trace_fail(t, rc, "%s",
						       msim_strerror(rc));
			continue;
		}
		/* The segment_free rows right after ~MemPool's pool_release
		 * (snapshot rows aside) are its emptyCache(pool)'s, which the
		 * policy does at that row: no empty_cache() of their own. */
		bool pool_run = false;
		if (e.action == MSIM_ACT_POOL_RELEASE)
			t->pool_emptying = e.size == 1;
		else if (e.action == MSIM_ACT_SEGMENT_FREE ||
			 e.action == MSIM_ACT_SEGMENT_UNMAP)
			pool_run = t->pool_emptying;
		else if (e.action != MSIM_ACT_SNAPSHOT)
			t->pool_emptying = false;
		/* A run of segment_free / segment_unmap rows: an empty_cache()'s
		 * (the call of the row before it, or a hidden one), decided by
		 * the row after it (below). */
		if (t->opt.hidden_empty_cache && (t->in_call || !pool_run) &&
		    (e.action == MSIM_ACT_SEGMENT_FREE ||
		     e.action == MSIM_ACT_SEGMENT_UNMAP)) {
			t->in_run = true;
			t->run_time_us = e.time_us;
			continue;
		}
		if (t->opt.hidden_empty_cache && t->in_call) {
			/* After an empty_cache row: synchronize_and_free_events'
			 * free_completed rows, then release_cached_blocks'
			 * segment_free / segment_unmap rows (§3.5).  The call
			 * is replayed once, at the end of them, whatever comes
			 * next (no rule b). */
			switch (e.action) {
			case MSIM_ACT_FREE_COMPLETED:
				if (t->in_run)
					break;
				/* An event synchronised by the call. */
				goto request;
			case MSIM_ACT_SNAPSHOT:
			case MSIM_ACT_ANNOTATE:
			case MSIM_ACT_USER_DEFINED:
				continue;
			default:
				break;
			}
			t->in_call = t->in_run = false;
			t->la = e;
			t->have_la = true;
			goto empty_cache;
		}
		if (t->opt.hidden_empty_cache && !pool_run) {
			switch (e.action) {
			case MSIM_ACT_EMPTY_CACHE:
				if (!t->in_run) {
					t->in_call = true;
					t->run_time_us = e.time_us;
					continue;
				}
				/* A run before it is a call of its own. */
				/* fall through */
			case MSIM_ACT_ALLOC:
			case MSIM_ACT_FREE_REQUESTED:
			case MSIM_ACT_FREE_COMPLETED:
				if (!t->in_run)
					break;
				/* Rule a: the run was an empty_cache(). */
				t->in_run = false;
				t->empty_caches++;
				t->la = e;
				t->have_la = true;
				goto empty_cache;
			case MSIM_ACT_SEGMENT_ALLOC:
			case MSIM_ACT_SEGMENT_MAP:
			case MSIM_ACT_OOM:
				if (!t->in_run)
					break;
				/* Rule b: the next malloc's, or not. */
				t->in_run = false;
				t->maybe_empty_caches++;
				t->next_flags |= MSIM_REQF_MAYBE_EMPTY_CACHE;
				break;
			default:
				break;
			}
		}
		if (t->npools && (rc = pool_derive(t, &e, false)) != 0) {
			if (rc < 0)
				return msim_trace_fail(t, rc, "%s",
						       msim_strerror(rc));
			continue;
		}
request:
		if ((rc = trace_request(t, &e, req_out)) < 0)
			return rc;
		if (rc == 0)
			continue;
		if (req_out->kind == MSIM_REQ_ALLOC) {
			req_out->flags |= t->next_flags;
			t->next_flags = 0;
		}
		if (req_out->kind != MSIM_REQ_SEGMENT_HINT)
			t->requests++;
		return 1;
	}
empty_cache:
	memset(req_out, 0, sizeof(*req_out));
	req_out->kind = MSIM_REQ_EMPTY_CACHE;
	req_out->time = msim_trace_time(t, t->run_time_us);
	t->requests++;
	return 1;
}

void
msim_trace_empty_caches(const msim_trace_t *t, uint64_t *found_out,
			uint64_t *maybe_out)
{
	*found_out = t->empty_caches;
	*maybe_out = t->maybe_empty_caches;
}

int
msim_trace_segments(msim_trace_t *t, const msim_snap_segment_t **segs_out,
		    size_t *n_out)
{
	*segs_out = NULL;
	*n_out = 0;
	if (!t->format->segments || !t->fmt)
		return 0;
	return t->format->segments(t, segs_out, n_out);
}

const char *
msim_trace_errmsg(const msim_trace_t *t)
{
	return t->errmsg;
}

uint64_t
msim_trace_hash(const msim_trace_t *t)
{
	return t->opt.unhashed ? 0 : msim_hash_final(&t->hash);
}

const char *
msim_trace_format_name(const msim_trace_t *t)
{
	return t->format->name;
}

int
msim_trace_fill(msim_trace_t *t, msim_req_t *v, size_t cap, size_t *n_out)
{
	int rc = 1;
	*n_out = 0;
	if (t->fast == 0) {
		/* The format's own stage: for a plain replay of a file read
		 * from its start, with no blocks seeded before it. */
		if ((rc = msim_trace_prescan(t)))
			return rc;
		t->fast = t->format->requests && !t->opt.hidden_empty_cache &&
			  !t->opt.all_devices && !t->entries && !t->have_la &&
			  !t->nseedq ? 1 : -1;
	}
	if (t->fast == 1) {
		rc = t->format->requests(t, v, cap, n_out);
		if (rc == 0)
			trace_end(t);
		if (rc != MSIM_ENOTSUP)
			return rc;
		t->fast = -1; /* nothing read: entry by entry */
	}
	size_t n = 0;
	while (n < cap && (rc = msim_trace_next(t, &v[n])) == 1)
		n++;
	*n_out = n;
	return n == cap ? 1 : rc;
}

static int
trace_src_fill(void *ctx, msim_req_t *v, size_t cap, size_t *n_out)
{
	return msim_trace_fill(ctx, v, cap, n_out);
}

static int
trace_src_next(void *ctx, msim_req_t *req_out)
{
	return msim_trace_next(ctx, req_out);
}

static const char *
trace_src_errmsg(void *ctx)
{
	return msim_trace_errmsg(ctx);
}

msim_source_t
msim_trace_source(msim_trace_t *t)
{
	return (msim_source_t){.next = trace_src_next,
			       .errmsg = trace_src_errmsg, .ctx = t,
			       .fill = trace_src_fill};
}

void
msim_trace_close(msim_trace_t *t)
{
	if (!t)
		return;
	if (t->format && t->fmt)
		t->format->close(t);
	if (t->fp)
		fclose(t->fp);
	msim_idmap_clear(&t->ids);
	msim_tags_clear(&t->tags);
	free(t->seedq);
	free(t->resv);
	free(t->pseg);
	free(t->pcur);
	free(t->pq);
	free(t->path);
	free(t);
}

int
msim_trace_writer_fail(msim_trace_writer_t *w, int code, const char *fmt, ...)
{
	char why[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(w->errmsg, sizeof(w->errmsg), "%s: %s", w->path, why);
	return code;
}

int
msim_trace_writer_open(const char *path, const msim_trace_format_t *format,
		       msim_trace_writer_t **out, char *why, size_t whylen)
{
	if (!format)
		format = msim_trace_format_by_ext(path);
	if (!format)
		format = &msim_trace_csv;
	if (!format->write) {
		snprintf(why, whylen, "%s: memsim cannot write %s traces", path,
			 format->name);
		return MSIM_ENOTSUP;
	}
	msim_trace_writer_t *w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		free(w);
		snprintf(why, whylen, "%s: %s", path, msim_strerror(MSIM_ENOMEM));
		return MSIM_ENOMEM;
	}
	w->format = format;
	int rc = msim_outfile_open(&w->out, path, why, whylen);
	if (rc) {
		free(w->path);
		free(w);
		return rc;
	}
	w->fp = w->out.fp;
	rc = format->write_open(w);
	if (rc) {
		snprintf(why, whylen, "%s", w->errmsg);
		msim_trace_writer_abort(w);
		return rc;
	}
	*out = w;
	return 0;
}

int
msim_trace_writer_put(msim_trace_writer_t *w, const msim_entry_t *e)
{
	int rc = w->format->write(w, e);
	if (rc == 0)
		w->entries++;
	return rc;
}

const char *
msim_trace_writer_errmsg(const msim_trace_writer_t *w)
{
	return w->errmsg;
}

int
msim_trace_writer_close(msim_trace_writer_t *w, char *why, size_t whylen)
{
	if (!w)
		return 0;
	int rc = w->format->write_close(w);
	if (rc) {
		snprintf(why, whylen, "%s", w->errmsg);
		msim_outfile_abort(&w->out);
	} else {
		rc = msim_outfile_commit(&w->out, why, whylen);
	}
	free(w->path);
	free(w);
	return rc;
}

void
msim_trace_writer_abort(msim_trace_writer_t *w)
{
	if (!w)
		return;
	if (w->format->write_close) {
		w->format->write_close(w); /* frees the format's state */
	}
	msim_outfile_abort(&w->out);
	free(w->path);
	free(w);
}

void
msim_trace_tally(const msim_trace_t *t, msim_trace_tally_t *out)
{
	out->entries = t->entries;
	memcpy(out->actions, t->actions, sizeof(out->actions));
	out->first_us = t->first_us;
	out->last_us = t->last_us;
	out->seg_bytes = t->seg_bytes;
	out->untimed = t->untimed;
	out->zero_skipped = t->zero_skipped;
}

const msim_trace_format_t *
msim_trace_writer_format(const msim_trace_writer_t *w)
{
	return w->format;
}
