/*
 * Writing traces (msim_trace_writer_*): the shared part of every format's
 * writer; a file is renamed into place only on a clean close.
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

const msim_trace_format_t *
msim_trace_writer_format(const msim_trace_writer_t *w)
{
	return w->format;
}
