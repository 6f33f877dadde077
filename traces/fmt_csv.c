/*
 * The flattened PyTorch device-trace CSV: one trace entry of
 * torch.cuda.memory._snapshot()["device_traces"][d] a line, under the
 * header "seq,time_us,action,addr,size,stream" (columns in any order;
 * action, addr and size are required).  Two optional columns tag alloc
 * rows, as `memsim record` writes them: category (parameter, gradient,
 * optimizer, activation, temporary, input, other; empty = untagged) and
 * site (a module path or "file:line function", no commas); a trace
 * without them costs nothing more to read.  An optional `pool` column gives
 * the pool id of the private-pool rows (pool_create, pool_begin, pool_end,
 * pool_release, pool_restore); without it, or where it is empty, their addr
 * holds it (as the writer writes them).  A pool_create row's size holds the
 * pool's flags (1: an allocator of its own, torch.cuda.MemPool(allocator);
 * 2: use_on_oom; 4: no_split), a pool_release row's is 1 for the MemPool's
 * death (then emptyCache(pool)), else 0; a pool_restore row's
 * (setCheckpointPoolState) counts the alloc rows it places.
 * Each line is one entry; the request stage of trace_request.c gives them their
 * replay meaning.  The writer writes the same columns (seq counts from 0).
 * A first row `annotate` of category allocator_settings carries the
 * settings the recorded process ran with (`memsim record`: a
 * PYTORCH_CUDA_ALLOC_CONF string, ';' for ','): msim_trace_alloc_conf() has them from
 * the open on, so that a replay runs with them as a snapshot's do.
 *
 * The reader scans a 1 MiB buffer in place (msim_trace_line(), shared with
 * the RMM reader): no per-line allocation, no
 * stdio per field; a line spanning two reads is moved to the front.
 * Under the usual header (seq,time_us,action,addr,size,stream) a row is
 * parsed a word (8 bytes) at a time: the digits of a field are found and
 * converted with a few shifts and multiplies (SWAR), the action compared
 * as one or two words.  Any row it does not take as it is (hex, blanks,
 * an unknown action, a missing field) goes through the byte-at-a-time
 * parser below, which names what is wrong.
 */
#include <config.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/swar.h"
#include "traces/trace_int.h"

#define CSV_MAXCOLS 16

enum { C_SEQ, C_TIME, C_ACTION, C_ADDR, C_SIZE, C_STREAM, C_CAT, C_SITE,
       C_POOL, C_N };
static const char *const csv_colnames[C_N] = {
	"seq", "time_us", "action", "addr", "size", "stream", "category",
	"site", "pool",
};

/* An action as words: the name's first 8 bytes and the next 8, zero past
 * its end (the names are trace.c's). */
typedef struct csv_act_s {
	uint64_t w0, w1;
	unsigned len;
} csv_act_t;

typedef struct csv_s {
	msim_lines_t lines;
	csv_act_t acts[MSIM_NACT];
	int col[C_N];  /* column index of each field, -1 if absent */
	int ncols;
	bool std;      /* the usual six columns in the usual order */
	char *pend;    /* the first row, read at the open, not yet taken */
	size_t pendlen;
	bool ended;    /* the open found no first row (the end, or a line
			* too long): csv_next() says so without reading on */
} csv_t;


static const uint64_t csv_pow10[9] = {
	1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
};

/*
 * The decimal number of 1 to 19 digits at p, followed by the byte stop:
 * the byte after stop, or NULL (anything else: the slow parser decides).
 */
static inline const char *
csv_u64(const char *p, char stop, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned n = 0; n < 24; n += 8) {
		uint64_t w = msim_swar_load(p);
		uint64_t nd = msim_swar_nondigits(w);
		if (nd) {
			unsigned k = (unsigned)__builtin_ctzll(nd) >> 3;
			if (k)
				v = v * csv_pow10[k] +
				    msim_swar_digits8(w << (64 - 8 * k));
			n += k;
			if (n == 0 || n > 19 || p[k] != stop)
				return NULL;
			*out = v;
			return p + k + 1;
		}
		v = v * 100000000 + msim_swar_digits8(w);
		p += 8;
	}
	return NULL;
}


static void
csv_acts_init(csv_act_t *acts)
{
	for (int a = 0; a < MSIM_NACT; a++) {
		char name[24] = {0};
		const char *s = msim_action_name(a);
		size_t n = strlen(s);
		if (n > 16)
			n = 16; /* longer names: the slow parser */
		memcpy(name, s, n);
		acts[a].w0 = msim_swar_load(name);
		acts[a].w1 = msim_swar_load(name + 8);
		acts[a].len = (unsigned)strlen(s);
	}
}

/* Bytes 0 .. k - 1 of a word (k <= 8). */
static inline uint64_t
csv_mask(unsigned k)
{
	return k >= 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * k)) - 1;
}

/*
 * A row of the usual six columns, a word at a time.  Returns 1 with e
 * filled, or 0 if the row is not plainly one (the slow parser then reads
 * it and names what is wrong).  The line ends at line + len (a NUL), and
 * MSIM_LINE_SLACK bytes after it can be read.
 */
static inline int
csv_fast_row(const csv_act_t *acts, const char *line, size_t len,
	     msim_entry_t *e)
{
	const char *p = line, *end = line + len;
	/* seq: digits, unchecked by the slow parser too, but plain here. */
	for (;;) {
		uint64_t nd = msim_swar_nondigits(msim_swar_load(p));
		if (nd) {
			p += __builtin_ctzll(nd) >> 3;
			break;
		}
		p += 8;
		if (p >= end)
			return 0;
	}
	if (*p++ != ',')
		return 0;
	uint64_t time_us, addr, size, stream;
	if (!(p = csv_u64(p, ',', &time_us)))
		return 0;
	/* action: one comma within its 16 bytes */
	uint64_t w0 = msim_swar_load(p), w1 = msim_swar_load(p + 8);
	uint64_t c0 = msim_swar_eq(w0, ','), c1 = msim_swar_eq(w1, ',');
	unsigned k = c0 ? (unsigned)__builtin_ctzll(c0) >> 3
			: c1 ? 8 + ((unsigned)__builtin_ctzll(c1) >> 3) : 16;
	if (k == 16)
		return 0;
	w0 &= csv_mask(k);
	w1 &= k > 8 ? csv_mask(k - 8) : 0;
	int a = -1;
	for (int i = 0; i < MSIM_NACT; i++) {
		if (acts[i].len == k && acts[i].w0 == w0 &&
		    acts[i].w1 == w1) {
			a = i;
			break;
		}
	}
	if (a < 0)
		return 0;
	p += k + 1;
	if (!(p = csv_u64(p, ',', &addr)) || !(p = csv_u64(p, ',', &size)) ||
	    !(p = csv_u64(p, '\0', &stream)) || p != end + 1)
		return 0;
	e->time_us = time_us;
	e->addr = addr;
	e->size = size;
	e->stream = stream;
	e->action = (uint8_t)a;
	return 1;
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

/*
 * The first row: when it is an annotate row of category allocator_settings
 * (tagged columns only), its site is the recorded process's allocator
 * settings, ';' standing for ','; any other row waits in c->pend for
 * csv_next().
 */
static int
csv_settings(msim_trace_t *t, csv_t *c)
{
	if (c->col[C_CAT] < 0 || c->col[C_SITE] < 0)
		return 0;
	size_t len;
	char *line = msim_trace_line(t, &c->lines, &len);
	if (!line) {
		c->ended = true;   /* csv_next() says which */
		return 0;
	}
	static const char cat[] = "allocator_settings";
	const char *f[CSV_MAXCOLS];
	size_t fl[CSV_MAXCOLS];
	int n = 0;
	for (size_t i = 0, b = 0; i <= len && n < CSV_MAXCOLS; i++)
		if (i == len || line[i] == ',') {
			f[n] = line + b;
			fl[n++] = i - b;
			b = i + 1;
		}
	int a = c->col[C_ACTION], k = c->col[C_CAT], s = c->col[C_SITE];
	if (n != c->ncols || fl[a] != 8 || memcmp(f[a], "annotate", 8) ||
	    fl[k] != sizeof(cat) - 1 || memcmp(f[k], cat, fl[k])) {
		c->pend = line;
		c->pendlen = len;
		return 0;
	}
	if (fl[s] >= sizeof(t->alloc_conf))
		return msim_trace_fail(t, MSIM_EFORMAT, "allocator_settings "
				       "longer than %zu bytes",
				       sizeof(t->alloc_conf) - 1);
	for (size_t i = 0; i < fl[s]; i++)
		t->alloc_conf[i] = f[s][i] == ';' ? ',' : f[s][i];
	t->alloc_conf[fl[s]] = '\0';
	t->have_conf = true;
	t->conf_recorded = true;
	return 0;
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
	c->std = c->ncols == 6;
	for (int i = C_SEQ; i <= C_STREAM; i++)
		c->std = c->std && c->col[i] == i;
	if (c->std)
		csv_acts_init(c->acts);
	return csv_settings(t, c);
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
		char *line = c->pend;
		if (line) {
			len = c->pendlen;
			c->pend = NULL;
		} else if (!c->ended) {
			line = msim_trace_line(t, &c->lines, &len);
		}
		if (!line) {
			if (msim_lines_overlong(&c->lines))
				return msim_trace_fail(t, MSIM_EFORMAT,
						       "line too long");
			return 0;
		}
		if (len == 0)
			continue;
		if (c->std && csv_fast_row(c->acts, line, len, e))
			return 1;
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
		if (a >= MSIM_ACT_POOL_CREATE && a <= MSIM_ACT_POOL_RESTORE &&
		    c->col[C_POOL] >= 0 && *field[c->col[C_POOL]] &&
		    !msim_parse_u64(field[c->col[C_POOL]], &e->addr))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "pool '%s' is not a number",
					       field[c->col[C_POOL]]);
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

/* A site (or the settings), ';' for each ',': sites hold no commas. */
static int
csv_put_site(msim_trace_writer_t *w, const char *site)
{
	for (const char *p = site; *p; p++)
		if (putc(*p == ',' ? ';' : *p, w->fp) == EOF)
			return msim_trace_writer_fail(w, MSIM_EIO,
						      "cannot write");
	return 0;
}

/* The header, then the source's allocator settings (a recording's or a
 * snapshot's) as the first row, which needs the tagged columns. */
static int
csv_header(msim_trace_writer_t *w)
{
	const char *conf = w->tags_src ? msim_trace_alloc_conf(w->tags_src)
				       : NULL;
	bool tags = (w->tags_src && msim_trace_tagged(w->tags_src)) ||
		    (conf && *conf);
	if (fputs(tags ? "seq,time_us,action,addr,size,stream,category,site\n"
		       : "seq,time_us,action,addr,size,stream\n", w->fp) < 0)
		return msim_trace_writer_fail(w, MSIM_EIO, "cannot write");
	if (conf && *conf) {
		int rc;
		if (fputs("0,0,annotate,0,0,0,allocator_settings,", w->fp) < 0)
			return msim_trace_writer_fail(w, MSIM_EIO,
						      "cannot write");
		if ((rc = csv_put_site(w, conf)))
			return rc;
		if (putc('\n', w->fp) == EOF)
			return msim_trace_writer_fail(w, MSIM_EIO,
						      "cannot write");
	}
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
		if ((rc = csv_put_site(w, site)))
			return rc;
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
