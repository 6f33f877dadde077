/*
 * Opening traces: the format table and detection by content, the shared
 * bookkeeping of readers (errors with file and line, content hash,
 * timestamps) and closing.  The stages after it have a file each:
 * trace_request.c (entries -> requests), trace_seed.c (partial histories:
 * seeding the start, private pools of a snapshot), trace_writer.c.
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

/* In detection order (MSIM_TRACE_FORMATS, traces/trace_int.h). */
static const msim_trace_format_t *const formats[] = {
#define FORMAT_ENTRY(name) &msim_trace_##name,
	MSIM_TRACE_FORMATS(FORMAT_ENTRY)
#undef FORMAT_ENTRY
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
	[MSIM_ACT_RESET_PEAKS] = "reset_peaks",
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
	if (n >= 16 && memcmp(head, "#memsim-symbolic", 16) == 0) {
		/* traces/symtrace.h: sizes are expressions, no format reads
		 * them before they are instantiated */
		snprintf(why, whylen, "%s: a symbolic trace (memsim record "
			 "--symbolic): instantiate it first, memsim convert "
			 "--at NAME=VALUE", path);
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
void
msim_trace_end(msim_trace_t *t)
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
		msim_trace_end(t);
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

bool
msim_trace_oom_record(const msim_trace_t *t, msim_trace_oom_t *out)
{
	if (t->have_oom)
		*out = t->oomrec;
	return t->have_oom;
}

const char *
msim_trace_alloc_conf(const msim_trace_t *t)
{
	return t->have_conf ? t->alloc_conf : NULL;
}

bool
msim_trace_alloc_conf_recorded(const msim_trace_t *t)
{
	return t->have_conf && t->conf_recorded;
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

const msim_trace_format_t *
msim_trace_format_of(const msim_trace_t *t)
{
	return t->format;
}

const char *
msim_trace_format_name(const msim_trace_t *t)
{
	return t->format->name;
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
