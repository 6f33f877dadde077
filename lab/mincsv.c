/* The minimal path's CSV reader of mincsv.h. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MC_X86 1
#endif

#include "lab/mincsv.h"
#include "sim/error.h"
#include "sim/grow.h"
#include "sim/swar.h"

#define MC_BUF (1u << 20)  /* bytes read at a time */
#define MC_SLACK 128       /* readable bytes before and after the data */
#define MC_BATCH 4096      /* requests handed to the replay at a time */

/* ---------------------------------------------------------------- */
/* Stage 1: the separators of 64 bytes as a word of bits             */

static void
mc_seps_swar(const char *p, size_t nblocks, uint64_t *masks)
{
	for (size_t b = 0; b < nblocks; b++, p += 64) {
		uint64_t m = 0;
		for (unsigned k = 0; k < 8; k++) {
			uint64_t w = msim_swar_load(p + 8 * k);
			uint64_t hi = msim_swar_eq(w, ',') | msim_swar_eq(w, '\n');
			/* the 8 high bits into one byte */
			m |= (((hi >> 7) * UINT64_C(0x0102040810204080)) >> 56)
			     << (8 * k);
		}
		masks[b] = m;
	}
}

#ifdef MC_X86
static void
mc_seps_sse2(const char *p, size_t nblocks, uint64_t *masks)
{
	const __m128i comma = _mm_set1_epi8(','), nl = _mm_set1_epi8('\n');
	for (size_t b = 0; b < nblocks; b++, p += 64) {
		uint64_t m = 0;
		for (unsigned k = 0; k < 4; k++) {
			__m128i v = _mm_loadu_si128((const __m128i *)(p +
								      16 * k));
			__m128i s = _mm_or_si128(_mm_cmpeq_epi8(v, comma),
						 _mm_cmpeq_epi8(v, nl));
			m |= (uint64_t)(uint16_t)_mm_movemask_epi8(s)
			     << (16 * k);
		}
		masks[b] = m;
	}
}

__attribute__((target("avx2"))) static void
mc_seps_avx2(const char *p, size_t nblocks, uint64_t *masks)
{
	const __m256i comma = _mm256_set1_epi8(','),
		      nl = _mm256_set1_epi8('\n');
	for (size_t b = 0; b < nblocks; b++, p += 64) {
		__m256i lo = _mm256_loadu_si256((const __m256i *)p);
		__m256i hi = _mm256_loadu_si256((const __m256i *)(p + 32));
		__m256i sl = _mm256_or_si256(_mm256_cmpeq_epi8(lo, comma),
					     _mm256_cmpeq_epi8(lo, nl));
		__m256i sh = _mm256_or_si256(_mm256_cmpeq_epi8(hi, comma),
					     _mm256_cmpeq_epi8(hi, nl));
		masks[b] = (uint64_t)(uint32_t)_mm256_movemask_epi8(sl) |
			   (uint64_t)(uint32_t)_mm256_movemask_epi8(sh) << 32;
	}
}
#endif

int
msim_mincsv_isa_ok(msim_mincsv_isa_t isa)
{
	switch (isa) {
	case MSIM_MINCSV_BEST:
	case MSIM_MINCSV_SWAR:
		return 1;
#ifdef MC_X86
	case MSIM_MINCSV_SSE2:
		return __builtin_cpu_supports("sse2");
	case MSIM_MINCSV_AVX2:
		return __builtin_cpu_supports("avx2");
#endif
	default:
		return 0;
	}
}

typedef void (*mc_seps_fn)(const char *, size_t, uint64_t *);

static mc_seps_fn
mc_seps_pick(msim_mincsv_isa_t isa)
{
#ifdef MC_X86
	if (isa == MSIM_MINCSV_BEST)
		isa = msim_mincsv_isa_ok(MSIM_MINCSV_AVX2) ? MSIM_MINCSV_AVX2
		      : msim_mincsv_isa_ok(MSIM_MINCSV_SSE2) ? MSIM_MINCSV_SSE2
		      : MSIM_MINCSV_SWAR;
	if (isa == MSIM_MINCSV_AVX2 && msim_mincsv_isa_ok(isa))
		return mc_seps_avx2;
	if (isa == MSIM_MINCSV_SSE2 && msim_mincsv_isa_ok(isa))
		return mc_seps_sse2;
#endif
	return mc_seps_swar;
}

void
msim_mincsv_separators(msim_mincsv_isa_t isa, const char *p,
		       size_t nblocks, uint64_t *masks)
{
	mc_seps_pick(isa)(p, nblocks, masks);
}

/* ---------------------------------------------------------------- */
/* Stage 2: fields                                                   */

/* The decimal number of the len (1 to 19) bytes at s, 8 digits at a
 * time; false if one is not a digit.  Reads up to 7 bytes before s. */
static inline bool
mc_u64(const char *s, size_t len, uint64_t *out)
{
	if (len - 1 >= 19)
		return false;
	size_t head = len - (len - 1) / 8 * 8; /* 1 to 8 */
	uint64_t w = msim_swar_load(s + head - 8), keep = ~UINT64_C(0) <<
						   (8 * (8 - head));
	w &= keep;
	if (msim_swar_nondigits(w) & keep)
		return false;
	uint64_t v = msim_swar_digits8(w);
	for (s += head, len -= head; len; s += 8, len -= 8) {
		w = msim_swar_load(s);
		if (msim_swar_nondigits(w))
			return false;
		v = v * 100000000 + msim_swar_digits8(w);
	}
	*out = v;
	return true;
}

#ifdef __SSE2__
/* tbl + k: 16 - k bytes of 0 then k of 0xff. */
static const unsigned char mc_tail[32] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	255, 255, 255, 255, 255, 255, 255, 255,
	255, 255, 255, 255, 255, 255, 255, 255,
};

/*
 * mc_u64() for up to 16 digits, a vector at a time (SSE2, part of every
 * x86-64): the 16 bytes ending with the field, the bytes before it
 * masked to 0, digits checked, then pairs, quads and octets of digits
 * combined by multiply-adds of 16-bit lanes.  Reads up to 15 bytes
 * before s.
 */
static inline __attribute__((always_inline)) bool
mc_u64_vec(const char *s, size_t len, uint64_t *out)
{
	if (len - 1 >= 16)
		return mc_u64(s, len, out);
	__m128i c = _mm_loadu_si128((const __m128i *)(s + len - 16));
	__m128i keep = _mm_loadu_si128((const __m128i *)(mc_tail + len));
	__m128i bad = _mm_or_si128(_mm_cmplt_epi8(c, _mm_set1_epi8('0')),
				   _mm_cmpgt_epi8(c, _mm_set1_epi8('9')));
	if (_mm_movemask_epi8(_mm_and_si128(bad, keep)))
		return false;
	__m128i d = _mm_and_si128(_mm_sub_epi8(c, _mm_set1_epi8('0')), keep);
	__m128i z = _mm_setzero_si128();
	__m128i w10 = _mm_set1_epi32(0x0001000a); /* lanes 10, 1 */
	__m128i lo = _mm_madd_epi16(_mm_unpacklo_epi8(d, z), w10);
	__m128i hi = _mm_madd_epi16(_mm_unpackhi_epi8(d, z), w10);
	__m128i p2 = _mm_packs_epi32(lo, hi); /* 8 numbers of 2 digits */
	__m128i p4 = _mm_madd_epi16(p2, _mm_set1_epi32(0x00010064));
	p4 = _mm_packs_epi32(p4, p4);         /* 4 numbers of 4 digits */
	__m128i p8 = _mm_madd_epi16(p4, _mm_set1_epi32(0x00012710));
	uint32_t h = (uint32_t)_mm_cvtsi128_si32(p8);
	uint32_t l = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(p8, 4));
	*out = (uint64_t)h * 100000000 + l;
	return true;
}
#define MC_U64 mc_u64_vec
#else
#define MC_U64 mc_u64
#endif

/* The actions this reader takes, as their length and first 16 bytes. */
enum { MC_ALLOC, MC_FREE_REQ, MC_FREE_DONE, MC_SEG_ALLOC, MC_SEG_FREE,
       MC_NACT };
static const char *const mc_names[MC_NACT] = {
	"alloc", "free_requested", "free_completed", "segment_alloc",
	"segment_free",
};

typedef struct mc_act_s {
	uint64_t w0, w1;
	size_t len;
} mc_act_t;

static void
mc_acts_init(mc_act_t *acts)
{
	for (int a = 0; a < MC_NACT; a++) {
		char b[16] = {0};
		acts[a].len = strlen(mc_names[a]);
		memcpy(b, mc_names[a], acts[a].len);
		acts[a].w0 = msim_swar_load(b);
		acts[a].w1 = msim_swar_load(b + 8);
	}
}

static inline int
mc_action(const mc_act_t *acts, const char *s, size_t len)
{
	if (len - 1 >= 16)
		return -1;
	uint64_t w0 = msim_swar_load(s), w1 = msim_swar_load(s + 8);
	if (len < 8)
		w0 &= (UINT64_C(1) << (8 * len)) - 1;
	w1 = len <= 8 ? 0 : len < 16 ? w1 & ((UINT64_C(1) << (8 * (len - 8)))
					     - 1) : w1;
	for (int a = 0; a < MC_NACT; a++)
		if (acts[a].len == len && acts[a].w0 == w0 && acts[a].w1 == w1)
			return a;
	return -1;
}

/* ---------------------------------------------------------------- */
/* The request stage: addresses to dense ids                         */

typedef struct mc_ids_s {
	uint64_t *keys; /* addresses, 0 = empty (linear probing) */
	uint32_t *vals;
	size_t cap, n;  /* cap a power of two */
	uint32_t *spare; /* ids free for reuse */
	size_t nspare, capspare;
	uint32_t next;
} mc_ids_t;

static inline size_t
mc_home(const mc_ids_t *m, uint64_t key)
{
	return (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 32) &
	       (m->cap - 1);
}

static int
mc_ids_grow(mc_ids_t *m)
{
	size_t cap = m->cap ? 2 * m->cap : 4096, ocap = m->cap;
	uint64_t *keys = calloc(cap, sizeof(*keys)), *okeys = m->keys;
	uint32_t *vals = malloc(cap * sizeof(*vals)), *ovals = m->vals;
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return MSIM_ENOMEM;
	}
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	for (size_t i = 0; i < ocap; i++) {
		if (!okeys[i])
			continue;
		size_t j = mc_home(m, okeys[i]);
		while (keys[j])
			j = (j + 1) & (cap - 1);
		keys[j] = okeys[i];
		vals[j] = ovals[i];
	}
	free(okeys);
	free(ovals);
	return 0;
}

/* The slot of key, or of the empty entry where it would go. */
static inline size_t
mc_slot(const mc_ids_t *m, uint64_t key)
{
	size_t j = mc_home(m, key);
	while (m->keys[j] && m->keys[j] != key)
		j = (j + 1) & (m->cap - 1);
	return j;
}

/* A new id for key; MSIM_EINVAL if key is live. */
static inline int
mc_ids_add(mc_ids_t *m, uint64_t key, uint32_t *id)
{
	int rc;
	if (2 * (m->n + 1) > m->cap && (rc = mc_ids_grow(m)))
		return rc;
	size_t j = mc_slot(m, key);
	if (m->keys[j])
		return MSIM_EINVAL;
	*id = m->nspare ? m->spare[--m->nspare] : m->next++;
	m->keys[j] = key;
	m->vals[j] = *id;
	m->n++;
	return 0;
}

/* Removes key (backward-shift deletion), giving its id back. */
static inline int
mc_ids_remove(mc_ids_t *m, uint64_t key, uint32_t *id)
{
	size_t i = mc_slot(m, key), mask = m->cap - 1;
	if (!m->keys[i])
		return MSIM_ENOTFOUND;
	*id = m->vals[i];
	if (MSIM_GROW(m->spare, m->capspare, m->nspare + 1, 1024))
		return MSIM_ENOMEM;
	m->spare[m->nspare++] = *id;
	m->n--;
	for (size_t j = i;;) {
		j = (j + 1) & mask;
		if (!m->keys[j])
			break;
		size_t h = mc_home(m, m->keys[j]);
		/* stays if its home lies cyclically in (i, j] */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		i = j;
	}
	m->keys[i] = 0;
	return 0;
}

static void
mc_ids_clear(mc_ids_t *m)
{
	free(m->keys);
	free(m->vals);
	free(m->spare);
}

/* ---------------------------------------------------------------- */
/* The reader                                                        */

static const char mc_header[] = "seq,time_us,action,addr,size,stream";

typedef struct mc_s {
	mc_act_t acts[MC_NACT];
	mc_ids_t ids;
	msim_minreplay_t *m;
	msim_req_t v[MC_BATCH];
	size_t nv;
	uint64_t line;     /* of the row being read */
	uint64_t applied;  /* requests handed to the replay */
	const char *path;
	char *why;
	size_t whylen;
} mc_t;

static int
mc_flush(mc_t *c)
{
	size_t at;
	int rc = msim_minreplay_apply(c->m, c->v, c->nv, &at);
	if (rc == MSIM_ENOTSUP)
		snprintf(c->why, c->whylen, "%s: request %llu uses what the "
			 "minimal path does not model", c->path,
			 (unsigned long long)(c->applied + at + 1));
	else if (rc)
		snprintf(c->why, c->whylen, "%s: request %llu: %s", c->path,
			 (unsigned long long)(c->applied + at + 1),
			 msim_strerror(rc));
	c->applied += c->nv;
	c->nv = 0;
	return rc;
}

static int
mc_fail(mc_t *c, int rc, const char *what)
{
	snprintf(c->why, c->whylen, "%s:%llu: %s", c->path,
		 (unsigned long long)c->line, what);
	return rc;
}

/* One row: the fields between separators sep[0..5] (the row starts at
 * s). */
static inline __attribute__((always_inline)) int
mc_row(mc_t *c, const char *s, const char *const sep[6])
{
	uint64_t seq, time_us, addr, size, stream;
	for (int i = 0; i < 5; i++)
		if (*sep[i] != ',')
			return mc_fail(c, MSIM_ENOTSUP, "fewer than 6 fields");
	if (*sep[5] != '\n')
		return mc_fail(c, MSIM_ENOTSUP, "more than 6 fields");
	if (!MC_U64(s, (size_t)(sep[0] - s), &seq) ||
	    !MC_U64(sep[0] + 1, (size_t)(sep[1] - sep[0] - 1), &time_us) ||
	    !MC_U64(sep[2] + 1, (size_t)(sep[3] - sep[2] - 1), &addr) ||
	    !MC_U64(sep[3] + 1, (size_t)(sep[4] - sep[3] - 1), &size) ||
	    !MC_U64(sep[4] + 1, (size_t)(sep[5] - sep[4] - 1), &stream))
		return mc_fail(c, MSIM_ENOTSUP, "a field is not a plain "
			       "decimal number");
	int a = mc_action(c->acts, sep[1] + 1, (size_t)(sep[2] - sep[1] - 1));
	msim_req_t *r = &c->v[c->nv];
	int rc;
	switch (a) {
	case MC_ALLOC:
		if (!size || !addr)
			return mc_fail(c, MSIM_EFORMAT, "alloc of 0 bytes or "
				       "at address 0");
		if ((rc = mc_ids_add(&c->ids, addr, &r->id)))
			return mc_fail(c, rc, rc == MSIM_EINVAL ? "alloc at "
				       "a live address" : msim_strerror(rc));
		r->kind = MSIM_REQ_ALLOC;
		r->size = size;
		break;
	case MC_FREE_REQ: {
		size_t j = mc_slot(&c->ids, addr);
		if (!c->ids.keys[j])
			return mc_fail(c, MSIM_ENOTSUP, "free of an address "
				       "never allocated (not modelled)");
		r->id = c->ids.vals[j];
		r->kind = MSIM_REQ_FREE_REQUESTED;
		r->size = 0;
		break;
	}
	case MC_FREE_DONE:
		if ((rc = mc_ids_remove(&c->ids, addr, &r->id)))
			return mc_fail(c, rc == MSIM_ENOTFOUND ? MSIM_ENOTSUP
				       : rc, rc == MSIM_ENOTFOUND ? "free of "
				       "an address never allocated (not "
				       "modelled)" : msim_strerror(rc));
		r->kind = MSIM_REQ_FREE;
		r->size = 0;
		break;
	case MC_SEG_ALLOC:
	case MC_SEG_FREE:
		return 0; /* the replay places its own segments */
	default:
		return mc_fail(c, MSIM_ENOTSUP, "an action the minimal path "
			       "does not read");
	}
	r->time = time_us;
	r->stream = stream;
	r->addr = addr;
	r->flags = 0;
	r->tag = 0;
	if (++c->nv == MC_BATCH)
		return mc_flush(c);
	return 0;
}

/* The next separator: the lowest bit left in *m, then in the words
 * after it (a sentinel bit past the data ends the search). */
static inline size_t
mc_next_sep(const uint64_t *masks, size_t *b, uint64_t *m)
{
	while (!*m)
		*m = masks[++*b];
	size_t k = *b * 64 + (unsigned)__builtin_ctzll(*m);
	*m &= *m - 1;
	return k;
}

/* The rows of buf[from, end), end just after a '\n'; masks has a
 * sentinel bit at (end + 63) / 64 * 64. */
static int
mc_rows(mc_t *c, const char *buf, size_t from, size_t end,
	const uint64_t *masks)
{
	size_t b = from / 64, k[6];
	uint64_t m = masks[b] & (~UINT64_C(0) << (from % 64));
	int rc;
	while (from < end) {
		if (buf[from] == '\n') { /* a blank line */
			mc_next_sep(masks, &b, &m);
			from++;
			c->line++;
			continue;
		}
		for (int i = 0; i < 6; i++)
			k[i] = mc_next_sep(masks, &b, &m);
		const char *sep[6];
		for (int i = 0; i < 6; i++)
			sep[i] = buf + k[i];
		if (k[5] >= end)
			return mc_fail(c, MSIM_ENOTSUP, "fewer than 6 fields");
		if ((rc = mc_row(c, buf + from, sep)))
			return rc;
		c->line++;
		from = k[5] + 1;
	}
	return 0;
}

int
msim_mincsv_replay(const char *path, msim_mincsv_isa_t isa,
		   msim_minreplay_stats_t *st_out, char *why, size_t whylen)
{
	mc_seps_fn seps = mc_seps_pick(isa);
	char *mem = malloc(MC_SLACK + MC_BUF + 1 + MC_SLACK);
	uint64_t *masks = malloc((MC_BUF / 64 + 2) * sizeof(*masks));
	mc_t *c = calloc(1, sizeof(*c));
	int fd = -1, rc = MSIM_ENOMEM;
	if (!mem || !masks || !c) {
		snprintf(why, whylen, "%s", msim_strerror(rc));
		goto done;
	}
	memset(mem, 0, MC_SLACK);
	c->path = path;
	c->why = why;
	c->whylen = whylen;
	c->line = 1;
	mc_acts_init(c->acts);
	if ((rc = mc_ids_grow(&c->ids)) || (rc = msim_minreplay_new(&c->m))) {
		snprintf(why, whylen, "%s", msim_strerror(rc));
		goto done;
	}
	if ((fd = open(path, O_RDONLY)) < 0) {
		rc = MSIM_EIO;
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		goto done;
	}
	char *buf = mem + MC_SLACK;
	size_t have = 0;
	bool header = true, eof = false;
	while (!eof) {
		ssize_t got = read(fd, buf + have, MC_BUF - have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = MSIM_EIO;
			snprintf(why, whylen, "%s: %s", path, strerror(errno));
			goto done;
		}
		have += (size_t)got;
		if (got == 0) {
			eof = true;
			if (have && buf[have - 1] != '\n')
				buf[have++] = '\n';
		}
		size_t end = have;
		while (end && buf[end - 1] != '\n')
			end--;
		if (!end) {
			if (have == MC_BUF) {
				rc = mc_fail(c, MSIM_ENOTSUP, "line too long");
				goto done;
			}
			continue;
		}
		memset(buf + have, 0, MC_SLACK); /* stage 1 reads up to here */
		size_t from = 0;
		if (header) {
			size_t n = sizeof(mc_header) - 1;
			if (end < n + 1 || memcmp(buf, mc_header, n) ||
			    buf[n] != '\n') {
				rc = mc_fail(c, MSIM_ENOTSUP, "not the header "
					     "seq,time_us,action,addr,size,"
					     "stream");
				goto done;
			}
			from = n + 1;
			header = false;
			c->line++;
		}
		size_t nblocks = (end + 63) / 64;
		seps(buf, nblocks, masks);
		masks[nblocks] = ~UINT64_C(0); /* sentinels */
		if ((rc = mc_rows(c, buf, from, end, masks)))
			goto done;
		memmove(buf, buf + end, have - end);
		have -= end;
	}
	if (header) {
		rc = mc_fail(c, MSIM_ENOTSUP, "empty file");
		goto done;
	}
	if (c->nv && (rc = mc_flush(c)))
		goto done;
	msim_minreplay_stats(c->m, st_out);
	rc = 0;
done:
	if (fd >= 0)
		close(fd);
	if (c) {
		msim_minreplay_destroy(c->m);
		mc_ids_clear(&c->ids);
	}
	free(c);
	free(masks);
	free(mem);
	return rc;
}
