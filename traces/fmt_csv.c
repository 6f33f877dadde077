/*
 * The flattened PyTorch device-trace CSV: one trace entry of
 * torch.cuda.memory._snapshot()["device_traces"][d] a line, under the
 * header "seq,time_us,action,addr,size,stream" (columns in any order;
 * action, addr and size are required).  Two optional columns tag alloc
 * rows, as `memsim record` writes them: category (parameter, gradient,
 * optimizer, activation, temporary, input, other; empty = untagged) and
 * site (a module path or "file:line function", no commas); a trace
 * without them costs nothing more to read.
 * Each line is one entry; the request stage of trace.c gives them their
 * replay meaning.  The writer writes the same columns (seq counts from 0).
 *
 * The reader scans a 1 MiB buffer in place (msim_trace_line(), shared with
 * the RMM reader): no per-line allocation, no
 * stdio per field; a line spanning two reads is moved to the front.
 */
#include <config.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "traces/trace_int.h"

#define CSV_MAXCOLS 16

enum { C_SEQ, C_TIME, C_ACTION, C_ADDR, C_SIZE, C_STREAM, C_CAT, C_SITE,
       C_N };
static const char *const csv_colnames[C_N] = {
	"seq", "time_us", "action", "addr", "size", "stream", "category",
	"site",
};

typedef struct csv_s {
	msim_lines_t lines;
	int col[C_N];  /* column index of each field, -1 if absent */
	int ncols;
} csv_t;

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
	if (msim_lines_init(&c->lines))
		return MSIM_ENOMEM;
	size_t len;
	char *line = msim_trace_line(t, &c->lines, &len);
	if (!line)
		return msim_trace_fail(t, MSIM_EFORMAT, "empty file");
	if (strlen(line) != len)
		return msim_trace_fail(t, MSIM_EFORMAT, "NUL byte in the header "
				       "(not a text file?)");
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
	t->tagged = c->col[C_CAT] >= 0 || c->col[C_SITE] >= 0;
	return 0;
}

/* The tag of an alloc row's category and site fields. */
static int
csv_tag(msim_trace_t *t, csv_t *c, char **field, uint16_t *tag_out)
{
	const char *cat = c->col[C_CAT] >= 0 ? field[c->col[C_CAT]] : "";
	const char *site = c->col[C_SITE] >= 0 ? field[c->col[C_SITE]] : "";
	int k = MSIM_CAT_OTHER;
	if (*cat && (k = msim_category_parse(cat, strlen(cat))) < 0)
		return msim_trace_fail(t, MSIM_EFORMAT,
				       "unknown category '%s' (expected "
				       "parameter, gradient, optimizer, "
				       "activation, temporary, input or "
				       "other)", cat);
	if (!*cat && !*site) {
		*tag_out = 0;
		return 0;
	}
	if (!*cat)
		k = MSIM_CAT_UNTAGGED;
	int rc = msim_trace_tag_intern(t, k, site, strlen(site), tag_out);
	return rc ? msim_trace_fail(t, rc, "%s", msim_strerror(rc)) : 0;
}

static int
csv_next(msim_trace_t *t, msim_entry_t *e)
{
	csv_t *c = t->fmt;
	for (;;) {
		size_t len;
		char *line = msim_trace_line(t, &c->lines, &len);
		if (!line) {
			if (msim_lines_overlong(&c->lines))
				return msim_trace_fail(t, MSIM_EFORMAT,
						       "line too long");
			return 0;
		}
		if (len == 0)
			continue;
		if (strlen(line) != len)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "NUL byte at column %zu (not a "
					       "text file?)", strlen(line) + 1);
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
		if (!msim_parse_u64(field[c->col[C_ADDR]], &addr))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "addr \'%s\' %s",
					       field[c->col[C_ADDR]],
					       msim_u64_why(field[c->col[C_ADDR]]));
		if (!msim_parse_u64(field[c->col[C_SIZE]], &size))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "size \'%s\' %s",
					       field[c->col[C_SIZE]],
					       msim_u64_why(field[c->col[C_SIZE]]));
		if (c->col[C_STREAM] >= 0 &&
		    !msim_parse_u64(field[c->col[C_STREAM]], &stream))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "stream \'%s\' %s",
					       field[c->col[C_STREAM]],
					       msim_u64_why(field[c->col[C_STREAM]]));
		if (c->col[C_TIME] >= 0 &&
		    !msim_parse_u64(field[c->col[C_TIME]], &time_us))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "time_us \'%s\' %s",
					       field[c->col[C_TIME]],
					       msim_u64_why(field[c->col[C_TIME]]));
		int a = msim_action_parse(action, strlen(action));
		if (a < 0 && msim_trace_skip_unknown(t, action))
			continue;
		if (a < 0)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "unknown action '%s' (--lenient "
					       "skips such rows)", action);
		e->time_us = time_us;
		e->addr = addr;
		e->size = size;
		e->stream = stream;
		e->action = (uint8_t)a;
		if (t->tagged && a == MSIM_ACT_ALLOC) {
			int rc = csv_tag(t, c, field, &e->tag);
			if (rc)
				return rc;
		}
		return 1;
	}
}

static void
csv_close(msim_trace_t *t)
{
	csv_t *c = t->fmt;
	msim_lines_clear(&c->lines);
	free(c);
	t->fmt = NULL;
}

/* The writer's state: w->fmt points at one of these once the header is
 * written.  The header waits for the first entry, by which time the
 * source (msim_trace_writer_set_tags()) knows whether it has tags. */
static const char csv_plain = 0, csv_tagged = 1;

static int
csv_write_open(msim_trace_writer_t *w)
{
	w->fmt = NULL;
	return 0;
}

static int
csv_header(msim_trace_writer_t *w)
{
	bool tags = w->tags_src && msim_trace_tagged(w->tags_src);
	if (fputs(tags ? "seq,time_us,action,addr,size,stream,category,site\n"
		       : "seq,time_us,action,addr,size,stream\n", w->fp) < 0)
		return msim_trace_writer_fail(w, MSIM_EIO, "cannot write");
	w->fmt = (void *)(tags ? &csv_tagged : &csv_plain);
	return 0;
}

static int
csv_write(msim_trace_writer_t *w, const msim_entry_t *e)
{
	int rc;
	if (!w->fmt && (rc = csv_header(w)))
		return rc;
	if (fprintf(w->fp, "%" PRIu64 ",%" PRIu64 ",%s,%" PRIu64 ",%" PRIu64
		    ",%" PRIu64, w->entries, e->time_us,
		    msim_action_name(e->action), e->addr, e->size,
		    e->stream) < 0)
		return msim_trace_writer_fail(w, MSIM_EIO, "cannot write");
	if (w->fmt == &csv_tagged) {
		int cat = MSIM_CAT_UNTAGGED;
		const char *site = "";
		if (e->tag)
			msim_trace_tag(w->tags_src, e->tag, &cat, &site);
		if (fprintf(w->fp, ",%s,", cat ? msim_category_name(cat)
					       : "") < 0)
			return msim_trace_writer_fail(w, MSIM_EIO,
						      "cannot write");
		for (const char *p = site; *p; p++) /* sites hold no commas */
			if (putc(*p == ',' ? ';' : *p, w->fp) == EOF)
				return msim_trace_writer_fail(w, MSIM_EIO,
							      "cannot write");
	}
	if (putc('\n', w->fp) == EOF)
		return msim_trace_writer_fail(w, MSIM_EIO, "cannot write");
	return 0;
}

static int
csv_write_close(msim_trace_writer_t *w)
{
	int rc = w->fmt ? 0 : csv_header(w);
	w->fmt = NULL;
	return rc;
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
