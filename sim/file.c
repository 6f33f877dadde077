/*
 * Same-file tests and outputs written through a temporary file (see
 * file.h).  rename(2) within one folder replaces the old file atomically.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/error.h"
#include "sim/file.h"

bool
msim_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	if (!a || !b || stat(a, &sa) || stat(b, &sb))
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int
msim_output_check(const char *path, char *why, size_t whylen)
{
	if (!path || !*path) {
		snprintf(why, whylen, "an empty file name");
		return MSIM_EINVAL;
	}
	struct stat st;
	if (!stat(path, &st)) {
		if (S_ISDIR(st.st_mode)) {
			snprintf(why, whylen, "%s: is a folder", path);
			return MSIM_EINVAL;
		}
		if (!S_ISREG(st.st_mode)) { /* written in place */
			if (access(path, W_OK)) {
				snprintf(why, whylen, "%s: %s", path,
					 strerror(errno));
				return MSIM_EIO;
			}
			return 0;
		}
	} else if (path[strlen(path) - 1] == '/') {
		snprintf(why, whylen, "%s: names a folder, not a file", path);
		return MSIM_EINVAL;
	}
	/* The folder: there, a folder, and one where a file can be made
	 * (outputs are written through a temporary file beside them). */
	const char *slash = strrchr(path, '/');
	char dir[4096];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s",
			 (int)(slash - path + (slash == path)), path);
	if (stat(dir, &st)) {
		snprintf(why, whylen, "%s: folder %s: %s", path, dir,
			 strerror(errno));
		return MSIM_EIO;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "%s: %s is not a folder", path, dir);
		return MSIM_EINVAL;
	}
	char probe[4200];
	snprintf(probe, sizeof(probe), "%s/.memsim-probe-XXXXXX", dir);
	int fd = mkstemp(probe);
	if (fd < 0) {
		snprintf(why, whylen, "%s: cannot write in folder %s: %s", path,
			 dir, strerror(errno));
		return MSIM_EIO;
	}
	close(fd);
	unlink(probe);
	return 0;
}

int
msim_outfile_open(msim_outfile_t *o, const char *path, char *why,
		  size_t whylen)
{
	memset(o, 0, sizeof(*o));
	const char *given = path;
	struct stat st;
	bool direct = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
	/* A link to a file: the file is replaced, the link stays. */
	struct stat lst;
	char *real = !direct && !lstat(path, &lst) && S_ISLNK(lst.st_mode)
		? realpath(path, NULL) : NULL;
	if (real)
		path = real;
	o->path = strdup(path);
	free(real);
	if (!o->path)
		goto nomem;
	path = o->path;
	if (direct) {
		if (!(o->fp = fopen(path, "wb")))
			goto io;
		return 0;
	}
	size_t n = strlen(path) + 16;
	if (!(o->tmp = malloc(n)))
		goto nomem;
	/* Next to the file, so that rename() stays in one file system. */
	const char *slash = strrchr(path, '/');
	size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
	snprintf(o->tmp, n, "%.*s.%s.XXXXXX", (int)dir, path, path + dir);
	int fd = mkstemp(o->tmp);
	if (fd < 0) {
		free(o->tmp);
		o->tmp = NULL;
		goto io;
	}
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) || !(o->fp = fdopen(fd, "wb"))) {
		int e = errno;
		close(fd);
		unlink(o->tmp);
		errno = e;
		goto io;
	}
	return 0;
io:
	snprintf(why, whylen, "%s: %s", path, strerror(errno));
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof(*o));
	return MSIM_EIO;
nomem:
	snprintf(why, whylen, "%s: %s", given, msim_strerror(MSIM_ENOMEM));
	free(o->path);
	memset(o, 0, sizeof(*o));
	return MSIM_ENOMEM;
}

int
msim_outfile_commit(msim_outfile_t *o, char *why, size_t whylen)
{
	int rc = 0;
	bool bad = ferror(o->fp) != 0;
	int e = bad ? EIO : 0;
	if (fclose(o->fp) && !bad) {
		bad = true;
		e = errno;
	}
	o->fp = NULL;
	struct stat st;
	if (!bad && o->tmp && !lstat(o->path, &st) && !S_ISREG(st.st_mode) &&
	    !S_ISLNK(st.st_mode)) {
		bad = true; /* became a device, FIFO or folder meanwhile */
		e = EEXIST;
	}
	if (!bad && o->tmp && rename(o->tmp, o->path)) {
		bad = true;
		e = errno;
	}
	if (bad) {
		snprintf(why, whylen, "%s: %s", o->path, strerror(e));
		if (o->tmp)
			unlink(o->tmp);
		rc = MSIM_EIO;
	}
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof(*o));
	return rc;
}

void
msim_outfile_abort(msim_outfile_t *o)
{
	if (o->fp)
		fclose(o->fp);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof(*o));
}

int
msim_text_open(msim_text_t *t, const char *path, FILE *fp, uint64_t limit,
	       char *why, size_t whylen)
{
	*t = (msim_text_t){.fp = fp, .path = path, .limit = limit};
	if (!fp && !(t->fp = fopen(path, "r"))) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return MSIM_EIO;
	}
	return 0;
}

int
msim_text_line(msim_text_t *t, char *buf, size_t n, char *why, size_t whylen)
{
	size_t k = 0;
	int c;
	t->lineno++;
	while ((c = getc(t->fp)) != EOF) {
		if (++t->nread > t->limit) {
			snprintf(why, whylen, "%s: larger than %" PRIu64 " bytes: "
				 "not a file of this kind", t->path, t->limit);
			return MSIM_EFORMAT;
		}
		if (c == '\n')
			break;
		if (!c) {
			snprintf(why, whylen, "%s:%lu: a NUL byte: not a text "
				 "file", t->path, t->lineno);
			return MSIM_EFORMAT;
		}
		if (k + 1 >= n) {
			snprintf(why, whylen, "%s:%lu: line too long (more than "
				 "%zu bytes)", t->path, t->lineno, n - 1);
			return MSIM_EFORMAT;
		}
		buf[k++] = (char)c;
	}
	buf[k] = '\0';
	if (c == EOF && ferror(t->fp)) {
		snprintf(why, whylen, "%s: cannot read: %s", t->path,
			 strerror(errno));
		return MSIM_EIO;
	}
	return c == EOF && !k ? 0 : 1;
}

void
msim_text_close(msim_text_t *t)
{
	if (t->fp)
		fclose(t->fp);
	t->fp = NULL;
}
