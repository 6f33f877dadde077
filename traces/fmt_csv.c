/*
 * The flattened PyTorch device-trace CSV: one trace entry of
 * torch.cuda.memory._snapshot()["device_traces"][d] a line, under the
 * header "seq,time_us,action,addr,size,stream" (columns in any order;
 * action, addr and size are required).
 *
 * Replay semantics (spec section 16.4): `alloc` rows are requests of `size`
 * bytes, `free_completed` rows return the block; `free_requested` rows are
 * checked and, with deferred frees on, passed on; `segment_alloc` rows are
 * passed on as address hints; an `oom` row is a malloc that raised
 * out-of-memory (size = the rounded request), replayed as such.  Other
 * device events are what the allocator did; they are not requests.
 *
 * The reader scans a 1 MiB buffer in place: no per-line allocation, no
 * stdio per field; a line spanning two reads is moved to the front.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "traces/trace.h"

#define CSV_BUF (1u << 20)
#define CSV_MAXCOLS 16

enum { C_SEQ, C_TIME, C_ACTION, C_ADDR, C_SIZE, C_STREAM, C_N };
static const char *const csv_colnames[C_N] = {
	"seq", "time_us", "action", "addr", "size", "stream",
};

typedef struct csv_s {
	char *buf;
	size_t pos, end;
	bool eof;
	int col[C_N];  /* column index of each field, -1 if absent */
	int ncols;
	bool pending_id; /* an expected-OOM id to give back */
	uint32_t oom_id;
} csv_t;

/* The next line, NUL-terminated, without its newline; NULL at the end. */
static char *
csv_line(msim_trace_t *t, csv_t *c, size_t *len_out)
{
	for (;;) {
		char *start = c->buf + c->pos;
		char *nl = memchr(start, '\n', c->end - c->pos);
		if (nl) {
			*nl = '\0';
			size_t len = (size_t)(nl - start);
			c->pos += len + 1;
			if (len && start[len - 1] == '\r')
				start[--len] = '\0';
			t->line++;
			*len_out = len;
			return start;
		}
		if (c->eof) {
			if (c->pos == c->end)
				return NULL;
			/* A last line without a newline. */
			size_t len = c->end - c->pos;
			start[len] = '\0';
			c->pos = c->end;
			t->line++;
			*len_out = len;
			return start;
		}
		size_t rest = c->end - c->pos;
		if (rest == CSV_BUF) {
			t->line++;
			return NULL; /* caller reports the overlong line */
		}
		memmove(c->buf, start, rest);
		c->pos = 0;
		c->end = rest;
		size_t got = msim_trace_read(t, c->buf + c->end,
					     CSV_BUF - c->end);
		c->end += got;
		if (got == 0)
			c->eof = true;
	}
}

/* Parses a decimal (or 0x hex) unsigned field.  Returns false if bad. */
static bool
csv_u64(const char *s, uint64_t *out)
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
			else if (*s >= 'a' && *s <= 'f')
				d = (unsigned)(*s - 'a' + 10);
			else if (*s >= 'A' && *s <= 'F')
				d = (unsigned)(*s - 'A' + 10);
			else
				return false;
			if (v >> 60)
				return false;
			v = v << 4 | d;
		}
		*out = v;
		return true;
	}
	for (; *s; s++) {
		unsigned d = (unsigned)(*s - '0');
		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool
csv_probe(const char *head, size_t n)
{
	/* The header line names the columns we need. */
	size_t len = 0;
	while (len < n && head[len] != '\n')
		len++;
	char line[512];
	if (len >= sizeof(line))
		return false;
	memcpy(line, head, len);
	line[len] = '\0';
	return strstr(line, "action") && strchr(line, ',');
}

static int
csv_open(msim_trace_t *t)
{
	csv_t *c = calloc(1, sizeof(*c));
	if (!c)
		return MSIM_ENOMEM;
	t->fmt = c;
	c->buf = malloc(CSV_BUF + 1);
	if (!c->buf)
		return MSIM_ENOMEM;
	size_t len;
	char *line = csv_line(t, c, &len);
	if (!line)
		return msim_trace_fail(t, MSIM_EFORMAT, "empty file");
	for (int i = 0; i < C_N; i++)
		c->col[i] = -1;
	char *save = NULL;
	for (char *f = strtok_r(line, ",", &save); f;
	     f = strtok_r(NULL, ",", &save)) {
		if (c->ncols == CSV_MAXCOLS)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "more than %d columns",
					       CSV_MAXCOLS);
		for (int i = 0; i < C_N; i++)
			if (!strcmp(f, csv_colnames[i]))
				c->col[i] = c->ncols;
		c->ncols++;
	}
	for (int i = C_ACTION; i <= C_SIZE; i++)
		if (c->col[i] < 0)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "header has no '%s' column",
					       csv_colnames[i]);
	return 0;
}

static int
csv_next(msim_trace_t *t, msim_req_t *req)
{
	csv_t *c = t->fmt;
	if (c->pending_id) {
		c->pending_id = false;
		if (msim_idmap_put_id(&t->ids, c->oom_id))
			return MSIM_ENOMEM;
	}
	for (;;) {
		size_t len;
		char *line = csv_line(t, c, &len);
		if (!line) {
			if (!c->eof || c->pos != c->end)
				return msim_trace_fail(t, MSIM_EFORMAT,
						       "line too long");
			return 0;
		}
		if (len == 0)
			continue;
		char *field[CSV_MAXCOLS];
		int n = 0;
		field[n++] = line;
		for (char *p = line; *p; p++) {
			if (*p == ',') {
				*p = '\0';
				if (n == c->ncols)
					return msim_trace_fail(
						t, MSIM_EFORMAT,
						"more than %d fields", c->ncols);
				field[n++] = p + 1;
			}
		}
		if (n != c->ncols)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "%d fields, expected %d", n,
					       c->ncols);
		const char *action = field[c->col[C_ACTION]];
		uint64_t addr, size, stream = 0, time_us = 0;
		if (!csv_u64(field[c->col[C_ADDR]], &addr))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "addr '%s' is not a number",
					       field[c->col[C_ADDR]]);
		if (!csv_u64(field[c->col[C_SIZE]], &size))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "size '%s' is not a number",
					       field[c->col[C_SIZE]]);
		if (c->col[C_STREAM] >= 0 &&
		    !csv_u64(field[c->col[C_STREAM]], &stream))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "stream '%s' is not a number",
					       field[c->col[C_STREAM]]);
		if (c->col[C_TIME] >= 0 &&
		    !csv_u64(field[c->col[C_TIME]], &time_us))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "time_us '%s' is not a number",
					       field[c->col[C_TIME]]);
		memset(req, 0, sizeof(*req));
		req->time = msim_trace_time(t, time_us);
		req->stream = stream;
		req->addr = addr;
		int rc;
		if (!strcmp(action, "alloc")) {
			if (size == 0)
				return msim_trace_fail(t, MSIM_EFORMAT,
						       "alloc of 0 bytes");
			if (addr == 0)
				return msim_trace_fail(t, MSIM_EFORMAT,
						       "alloc at address 0");
			rc = msim_idmap_add(&t->ids, addr, &req->id);
			if (rc == MSIM_EINVAL)
				return msim_trace_fail(
					t, MSIM_EFORMAT,
					"alloc at address 0x%llx, which is "
					"still live",
					(unsigned long long)addr);
			if (rc)
				return msim_trace_fail(t, rc, "%s",
						       msim_strerror(rc));
			req->kind = MSIM_REQ_ALLOC;
			req->size = size;
			return 1;
		}
		if (!strcmp(action, "free_completed") ||
		    !strcmp(action, "free_requested")) {
			bool completed = action[5] == 'c';
			rc = completed
				? msim_idmap_remove(&t->ids, addr, &req->id)
				: msim_idmap_find(&t->ids, addr, &req->id);
			if (rc == MSIM_ENOTFOUND)
				return msim_trace_fail(
					t, MSIM_EFORMAT,
					"%s of unknown address 0x%llx", action,
					(unsigned long long)addr);
			if (rc)
				return msim_trace_fail(t, rc, "%s",
						       msim_strerror(rc));
			if (!completed && !t->opt.deferred_frees)
				continue;
			req->kind = completed ? MSIM_REQ_FREE
					      : MSIM_REQ_FREE_REQUESTED;
			return 1;
		}
		if (!strcmp(action, "segment_alloc")) {
			req->kind = MSIM_REQ_SEGMENT_HINT;
			req->size = size;
			return 1;
		}
		if (!strcmp(action, "oom")) {
			if (size == 0)
				return msim_trace_fail(t, MSIM_EFORMAT,
						       "oom of 0 bytes");
			if ((rc = msim_idmap_take_id(&t->ids, &req->id)))
				return msim_trace_fail(t, rc, "%s",
						       msim_strerror(rc));
			c->pending_id = true;
			c->oom_id = req->id;
			req->kind = MSIM_REQ_ALLOC;
			req->flags = MSIM_REQF_EXPECT_OOM;
			req->size = size;
			req->addr = 0;
			return 1;
		}
		if (!strcmp(action, "segment_free") ||
		    !strcmp(action, "segment_map") ||
		    !strcmp(action, "segment_unmap") ||
		    !strcmp(action, "snapshot") ||
		    !strcmp(action, "annotate") ||
		    !strcmp(action, "user_defined"))
			continue;
		return msim_trace_fail(t, MSIM_EFORMAT, "unknown action '%s'",
				       action);
	}
}

static void
csv_close(msim_trace_t *t)
{
	csv_t *c = t->fmt;
	free(c->buf);
	free(c);
	t->fmt = NULL;
}

const msim_trace_format_t msim_trace_csv = {
	.name = "csv",
	.exts = ".csv",
	.probe = csv_probe,
	.open = csv_open,
	.next = csv_next,
	.close = csv_close,
};
