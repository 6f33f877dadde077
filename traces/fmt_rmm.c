/*
 * RAPIDS RMM replay logs, as rmm::mr::logging_resource_adaptor writes them:
 * a CSV under the header "Thread,Time,Action,Pointer,Size,Stream", one
 * line per allocate / free.  RMM's own replay benchmark reads these.
 *
 * Mapping: "allocate" is an alloc, "free" (or "deallocate") a
 * free_completed (RMM frees are stream-ordered: the block is reusable on
 * its stream at once), "allocate failure" an oom.  Pointer and Stream are
 * hex ("0x7f..") or decimal.  Time is either the time of day RMM's logger
 * prints ("14:03:07.123456", also with ':' before the fraction; a
 * decreasing time of day is taken as the next day) or seconds since the
 * epoch ("1634567890.123456"); both become microseconds.  Thread is read
 * and ignored.
 *
 * Releases differ in what they print for a null pointer: "0x0" before
 * 24.12, "(nil)" after (RMM formats the pointer with printf's %p); both
 * read as 0.  A failed allocation ("allocate failure", with a null
 * pointer) is an oom row of its size.  Zero-byte requests (an "allocate"
 * of 0 bytes, which returns a null pointer, and the "free" of it) are
 * skipped and counted (msim_trace_tally()).
 *
 * The writer writes allocs, free_completed and ooms (an RMM log has no
 * other rows), with Time in seconds since the epoch and Thread 0.
 */
#include <config.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/error.h"
#include "traces/trace_int.h"


enum { R_THREAD, R_TIME, R_ACTION, R_POINTER, R_SIZE, R_STREAM, R_N };
static const char *const rmm_colnames[R_N] = {
	"Thread", "Time", "Action", "Pointer", "Size", "Stream",
};

typedef struct rmm_s {
	msim_lines_t lines;
	int col[R_N]; /* column index of each field, -1 if absent */
	int ncols;
	uint64_t day_us;  /* days added for time-of-day wrap-around */
	uint64_t last_us; /* last time read, before day_us */
} rmm_t;

/* Decimal or 0x-hex unsigned after blanks; false if s is not one. */
static bool
rmm_u64(const char *s, uint64_t *out)
{
	while (*s == ' ')
		s++;
	if (!strcmp(s, "(nil)")) { /* glibc's %p of a null pointer */
		*out = 0;
		return true;
	}
	return msim_parse_u64(s, out);
}

/* Digits at *s, at most max of them, into *out; the count read. */
static int
rmm_digits(const char **s, int max, uint64_t *out)
{
	int n = 0;
	uint64_t v = 0;
	while (n < max && **s >= '0' && **s <= '9') {
		v = v * 10 + (uint64_t)(**s - '0');
		(*s)++;
		n++;
	}
	*out = v;
	return n;
}

/* "HH:MM:SS[.:]ffffff" or "SECONDS[.ffffff]" to microseconds. */
static bool
rmm_time(const char *s, uint64_t *us_out)
{
	uint64_t a, b, c, frac = 0;
	int nf = 0;
	if (strchr(s, ':')) {
		if (rmm_digits(&s, 2, &a) < 1 || *s++ != ':' ||
		    rmm_digits(&s, 2, &b) != 2 || *s++ != ':' ||
		    rmm_digits(&s, 2, &c) != 2 || a > 23 || b > 59 || c > 60)
			return false;
		if (*s == '.' || *s == ':') {
			s++;
			nf = rmm_digits(&s, 9, &frac);
			if (nf == 0)
				return false;
		}
		if (*s)
			return false;
		c += a * 3600 + b * 60;
	} else {
		if (rmm_digits(&s, 12, &c) < 1)
			return false;
		if (*s == '.') {
			s++;
			nf = rmm_digits(&s, 9, &frac);
		}
		if (*s)
			return false;
	}
	for (; nf < 6; nf++)
		frac *= 10;
	for (; nf > 6; nf--)
		frac /= 10;
	*us_out = c * 1000000 + frac;
	return true;
}

static bool
rmm_probe(const char *head, size_t n)
{
	static const char hdr[] = "Thread,Time,Action,Pointer,Size";
	size_t k = sizeof(hdr) - 1;
	if (n >= 3 && !memcmp(head, "\xef\xbb\xbf", 3)) { /* a UTF-8 BOM */
		head += 3;
		n -= 3;
	}
	return n >= k && !memcmp(head, hdr, k);
}

static int
rmm_open(msim_trace_t *t)
{
	rmm_t *r = calloc(1, sizeof(*r));
	if (!r)
		return MSIM_ENOMEM;
	t->fmt = r;
	if (msim_lines_init(&r->lines))
		return MSIM_ENOMEM;
	size_t len;
	char *line = msim_trace_line(t, &r->lines, &len);
	if (!line)
		return msim_trace_fail(t, MSIM_EFORMAT, "no header line");
	if (!memcmp(line, "\xef\xbb\xbf", 3))
		line += 3;
	for (int i = 0; i < R_N; i++)
		r->col[i] = -1;
	char *save = NULL;
	for (char *f = strtok_r(line, ",", &save); f;
	     f = strtok_r(NULL, ",", &save)) {
		if (r->ncols == 16)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "more than 16 columns");
		for (int i = 0; i < R_N; i++)
			if (!strcmp(f, rmm_colnames[i]))
				r->col[i] = r->ncols;
		r->ncols++;
	}
	for (int i = R_ACTION; i <= R_SIZE; i++)
		if (r->col[i] < 0)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "header has no '%s' column",
					       rmm_colnames[i]);
	return 0;
}

static int
rmm_next(msim_trace_t *t, msim_entry_t *e)
{
	rmm_t *r = t->fmt;
	for (;;) {
		size_t len;
		char *line = msim_trace_line(t, &r->lines, &len);
		if (!line) {
			if (msim_lines_overlong(&r->lines))
				return msim_trace_fail(t, MSIM_EFORMAT,
						       "line too long");
			return 0;
		}
		if (!*line && len == 0)
			continue;
		if (strlen(line) != len)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "NUL byte at column %zu (not a "
					       "text file?)", strlen(line) + 1);
		char *field[16];
		int n = 0;
		field[n++] = line;
		for (char *p = line; *p; p++) {
			if (*p == ',') {
				*p = '\0';
				if (n == r->ncols)
					return msim_trace_fail(
						t, MSIM_EFORMAT,
						"more than %d fields", r->ncols);
				field[n++] = p + 1;
			}
		}
		if (n != r->ncols)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "%d fields, expected %d", n,
					       r->ncols);
		const char *action = field[r->col[R_ACTION]];
		memset(e, 0, sizeof(*e));
		if (!strcmp(action, "allocate"))
			e->action = MSIM_ACT_ALLOC;
		else if (!strcmp(action, "free") ||
			 !strcmp(action, "deallocate"))
			e->action = MSIM_ACT_FREE_COMPLETED;
		else if (!strcmp(action, "allocate failure"))
			e->action = MSIM_ACT_OOM;
		else if (msim_trace_skip_unknown(t, action))
			continue;
		else
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "unknown action '%s' (--lenient "
					       "skips such rows)", action);
		if (!rmm_u64(field[r->col[R_POINTER]], &e->addr))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "pointer \'%s\' %s",
					       field[r->col[R_POINTER]],
					       msim_u64_why(field[r->col[R_POINTER]]));
		if (!rmm_u64(field[r->col[R_SIZE]], &e->size))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "size \'%s\' %s",
					       field[r->col[R_SIZE]],
					       msim_u64_why(field[r->col[R_SIZE]]));
		if (r->col[R_STREAM] >= 0 &&
		    !rmm_u64(field[r->col[R_STREAM]], &e->stream))
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "stream \'%s\' %s",
					       field[r->col[R_STREAM]],
					       msim_u64_why(field[r->col[R_STREAM]]));
		if (r->col[R_TIME] >= 0) {
			const char *tf = field[r->col[R_TIME]];
			uint64_t us;
			if (!rmm_time(tf, &us))
				return msim_trace_fail(t, MSIM_EFORMAT,
						       "time '%s' is neither "
						       "HH:MM:SS.ffffff nor "
						       "seconds", tf);
			/* The time of day went back by more than 12 h:
			 * midnight passed. */
			if (strchr(tf, ':') && us + UINT64_C(43200000000) <
						       r->last_us)
				r->day_us += UINT64_C(86400000000);
			r->last_us = us;
			e->time_us = us + r->day_us;
		}
		if (e->size == 0 && (e->action != MSIM_ACT_FREE_COMPLETED ||
				     e->addr == 0)) {
			t->zero_skipped++;
			continue;
		}
		return 1;
	}
}

static void
rmm_close(msim_trace_t *t)
{
	rmm_t *r = t->fmt;
	msim_lines_clear(&r->lines);
	free(r);
	t->fmt = NULL;
}

static int
rmm_write_open(msim_trace_writer_t *w)
{
	if (fputs("Thread,Time,Action,Pointer,Size,Stream\n", w->fp) < 0)
		return msim_trace_writer_fail(w, MSIM_EIO, "cannot write");
	return 0;
}

static int
rmm_write(msim_trace_writer_t *w, const msim_entry_t *e)
{
	const char *action;
	uint64_t addr = e->addr;
	switch (e->action) {
	case MSIM_ACT_ALLOC: action = "allocate"; break;
	case MSIM_ACT_FREE_COMPLETED: action = "free"; break;
	case MSIM_ACT_OOM: action = "allocate failure"; addr = 0; break;
	default: return 0; /* not in an RMM log */
	}
	if (fprintf(w->fp, "0,%" PRIu64 ".%06" PRIu64 ",%s,0x%" PRIx64
		    ",%" PRIu64 ",0x%" PRIx64 "\n", e->time_us / 1000000,
		    e->time_us % 1000000, action, addr, e->size,
		    e->stream) < 0)
		return msim_trace_writer_fail(w, MSIM_EIO, "cannot write");
	return 0;
}

static int
rmm_write_close(msim_trace_writer_t *w)
{
	(void)w;
	return 0;
}

const msim_trace_format_t msim_trace_rmm = {
	.name = "rmm",
	.exts = ".rmm.csv .rmm",
	.summary = "RAPIDS RMM logging_resource_adaptor log "
		   "(Thread,Time,Action,Pointer,Size,Stream)",
	.probe = rmm_probe,
	.open = rmm_open,
	.next = rmm_next,
	.close = rmm_close,
	.write_open = rmm_write_open,
	.write = rmm_write,
	.write_close = rmm_write_close,
};
