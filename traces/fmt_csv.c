/*
 * The flattened PyTorch device-trace CSV: one trace entry of
 * torch.cuda.memory._snapshot()["device_traces"][d] a line, under the
 * header "seq,time_us,action,addr,size,stream" (columns in any order;
 * action, addr and size are required).
 * Each line is one entry; the request stage of trace.c gives them their
 * replay meaning.  The writer writes the same columns (seq counts from 0).
 *
 * The reader scans a 1 MiB buffer in place: no per-line allocation, no
 * stdio per field; a line spanning two reads is moved to the front.
 */
#include <config.h>

#include <inttypes.h>
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
csv_next(msim_trace_t *t, msim_entry_t *e)
{
	csv_t *c = t->fmt;
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
		int a = msim_action_parse(action, strlen(action));
		if (a < 0)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "unknown action '%s'", action);
		e->time_us = time_us;
		e->addr = addr;
		e->size = size;
		e->stream = stream;
		e->action = (uint8_t)a;
		return 1;
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

static int
csv_write_open(msim_trace_writer_t *w)
{
	if (fputs("seq,time_us,action,addr,size,stream\n", w->fp) < 0)
		return msim_trace_writer_fail(w, MSIM_EIO, "cannot write");
	return 0;
}

static int
csv_write(msim_trace_writer_t *w, const msim_entry_t *e)
{
	if (fprintf(w->fp, "%" PRIu64 ",%" PRIu64 ",%s,%" PRIu64 ",%" PRIu64
		    ",%" PRIu64 "\n", w->entries, e->time_us,
		    msim_action_name(e->action), e->addr, e->size,
		    e->stream) < 0)
		return msim_trace_writer_fail(w, MSIM_EIO, "cannot write");
	return 0;
}

static int
csv_write_close(msim_trace_writer_t *w)
{
	(void)w;
	return 0;
}

const msim_trace_format_t msim_trace_csv = {
	.name = "csv",
	.exts = ".csv",
	.summary = "PyTorch device trace flattened to CSV "
		   "(seq,time_us,action,addr,size,stream)",
	.probe = csv_probe,
	.open = csv_open,
	.next = csv_next,
	.close = csv_close,
	.write_open = csv_write_open,
	.write = csv_write,
	.write_close = csv_write_close,
};
