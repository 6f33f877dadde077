/*
 * Opening traces: format detection by content, the shared bookkeeping of
 * readers (errors with file and line, content hash, timestamps).
 */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "traces/trace.h"

static const msim_trace_format_t *const formats[] = {
	&msim_trace_csv,
	NULL,
};

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
		uint64_t w = 0;
		for (int i = 0; i < 8; i++) /* little-endian on every host */
			w |= (uint64_t)p[i] << (8 * i);
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
	else
		snprintf(t->errmsg, sizeof(t->errmsg), "%s: %s", t->path, why);
	return code;
}

size_t
msim_trace_read(msim_trace_t *t, void *buf, size_t n)
{
	size_t got = fread(buf, 1, n, t->fp);
	msim_hash_update(&t->hash, buf, got);
	return got;
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
	for (const msim_trace_format_t *const *f = formats; *f; f++) {
		if ((*f)->probe(head, n)) {
			t->format = *f;
			break;
		}
	}
	if (!t->format) {
		snprintf(why, whylen, "%s: unknown trace format (expected a "
			 "PyTorch device-trace CSV)", path);
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

int
msim_trace_next(msim_trace_t *t, msim_req_t *req_out)
{
	int rc = t->format->next(t, req_out);
	if (rc == 1 && req_out->kind != MSIM_REQ_SEGMENT_HINT)
		t->requests++;
	return rc;
}

const char *
msim_trace_errmsg(const msim_trace_t *t)
{
	return t->errmsg;
}

uint64_t
msim_trace_hash(const msim_trace_t *t)
{
	return msim_hash_final(&t->hash);
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
	free(t->path);
	free(t);
}
