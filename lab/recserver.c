/*
 * The recorder's fork server (lab/recserver.h): started as `python3 -m
 * memsim_record --serve FD SCRIPT` with the child's end of a socket pair
 * as FD, through msim_record_child() as any recording; requests go as one
 * JSON array a line, answers come back as "ID PID STATUS" lines.  What a
 * finished recording left (its temporary, its fault file) is cleaned and
 * read by msim_record_status(), as for a recording started alone.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/record_int.h"
#include "lab/recserver.h"
#include "sim/error.h"

/* A recording running: its id and its output. */
typedef struct srv_req_s {
	int id;
	char *out;
} srv_req_t;

struct msim_recserver_s {
	pid_t pid;        /* the server */
	int fd;           /* our end of the socket pair */
	char *py;         /* its interpreter */
	const char *const *dirs; /* msim_record_opts_t's, the caller's */
	srv_req_t *req;   /* the recordings running */
	int nreq, cap;
	char buf[4096];   /* what was read of the answers, not yet a line */
	size_t len;
};

/* One line of the server's (without its newline) into line, or -1 at
 * the socket's end or an error. */
static int
srv_line(msim_recserver_t *s, char *line, size_t n)
{
	for (;;) {
		char *nl = memchr(s->buf, '\n', s->len);
		if (nl) {
			size_t k = (size_t)(nl - s->buf);
			snprintf(line, n, "%.*s", (int)k, s->buf);
			memmove(s->buf, nl + 1, s->len - k - 1);
			s->len -= k + 1;
			return 0;
		}
		if (s->len == sizeof(s->buf))
			return -1;
		ssize_t r = read(s->fd, s->buf + s->len,
				 sizeof(s->buf) - s->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		s->len += (size_t)r;
	}
}

/* Starts the server process; 0, or -1 with why. */
static int
srv_spawn(msim_recserver_t *s, const char *dir, const char *script,
	  bool quiet, char *why, size_t whylen)
{
	int sv[2], ep[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		snprintf(why, whylen, "socketpair: %s", strerror(errno));
		return -1;
	}
	if (pipe(ep) < 0) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	fcntl(sv[0], F_SETFD, FD_CLOEXEC);
	fcntl(ep[0], F_SETFD, FD_CLOEXEC);
	fcntl(ep[1], F_SETFD, FD_CLOEXEC);
	char fdarg[16];
	snprintf(fdarg, sizeof(fdarg), "%d", sv[1]);
	char *av[] = {s->py, "-m", "memsim_record", "--serve", fdarg,
		      (char *)script, NULL};
	fflush(stdout);
	s->pid = fork();
	if (s->pid == 0) {
		close(sv[0]);
		msim_record_child(dir, s->py, av, quiet, ep[1]);
	}
	int e = errno;
	close(sv[1]);
	close(ep[1]);
	s->fd = sv[0];
	int exec_errno = 0;
	ssize_t r = s->pid < 0 ? 0 : read(ep[0], &exec_errno,
					  sizeof(exec_errno));
	close(ep[0]);
	if (s->pid < 0 || r == (ssize_t)sizeof(exec_errno)) {
		snprintf(why, whylen, "cannot run %s: %s", s->py,
			 strerror(s->pid < 0 ? e : exec_errno));
		return -1;
	}
	char line[128];
	long pid;
	if (srv_line(s, line, sizeof(line)) ||
	    sscanf(line, "ready %ld", &pid) != 1) {
		snprintf(why, whylen, "the recorder's fork server did not "
			 "start");
		return -1;
	}
	return 0;
}

int
msim_recserver_new(const msim_record_opts_t *o, char *const *cmd, int ncmd,
		   msim_recserver_t **out, char *why, size_t whylen)
{
	*out = NULL;
	const char *dir, *py;
	int skip;
	int rc = msim_record_check(o, cmd, ncmd, &dir, &py, &skip, why,
				   whylen);
	if (rc)
		return rc;
	const char *off = getenv("MEMSIM_RECORD_SERVER");
	if (off && !strcmp(off, "0")) {
		snprintf(why, whylen, "MEMSIM_RECORD_SERVER=0");
		return MSIM_ENOTFOUND;
	}
	msim_recserver_t *s = calloc(1, sizeof(*s));
	if (!s || !(s->py = strdup(py))) {
		free(s);
		snprintf(why, whylen, "out of memory");
		return MSIM_ENOMEM;
	}
	s->fd = -1;
	s->dirs = o->dirs;
	if (srv_spawn(s, dir, cmd[skip], o->quiet, why, whylen)) {
		msim_recserver_destroy(s);
		return MSIM_ENOTFOUND;
	}
	*out = s;
	return 0;
}

/* Appends word as a JSON string to the line (grown as needed). */
static int
srv_json(char **line, size_t *len, size_t *cap, const char *word)
{
	size_t need = *len + 6 * strlen(word) + 4;
	if (need > *cap) {
		char *nl = realloc(*line, need * 2);
		if (!nl)
			return -1;
		*line = nl;
		*cap = need * 2;
	}
	char *d = *line + *len;
	*d++ = ',';
	*d++ = '"';
	for (const unsigned char *p = (const unsigned char *)word; *p; p++) {
		if (*p == '"' || *p == '\\') {
			*d++ = '\\';
			*d++ = (char)*p;
		} else if (*p < 0x20) {
			d += sprintf(d, "\\u%04x", *p);
		} else {
			*d++ = (char)*p;
		}
	}
	*d++ = '"';
	*len = (size_t)(d - *line);
	return 0;
}

/* Writes all of buf; 0 or -1. */
static int
srv_send(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

int
msim_recserver_submit(msim_recserver_t *s, int id, const char *out,
		      char *const *ropt, int nropt, char *const *cmd,
		      int ncmd, char *why, size_t whylen)
{
	msim_record_opts_t o = {.python = s->py, .dirs = s->dirs};
	const char *dir, *py;
	int skip;
	int rc = msim_record_check(&o, cmd, ncmd, &dir, &py, &skip, why,
				   whylen);
	if (rc)
		return rc;
	if (strcmp(py, s->py)) {
		snprintf(why, whylen, "the fork server runs %s, not %s", s->py,
			 py);
		return MSIM_EINVAL;
	}
	if (s->nreq == s->cap) {
		int nc = s->cap ? 2 * s->cap : 8;
		srv_req_t *nr = realloc(s->req, (size_t)nc * sizeof(*nr));
		if (!nr)
			goto oom;
		s->req = nr;
		s->cap = nc;
	}
	char **av = msim_record_argv(py, out, ropt, nropt, cmd, ncmd, skip);
	size_t len = 0, cap = 64;
	char *line = av ? malloc(cap) : NULL;
	if (line)
		len = (size_t)snprintf(line, cap, "[%d", id);
	/* av: py -m memsim_record, then the recorder's own argv */
	for (int i = 3; line && av[i]; i++)
		if (srv_json(&line, &len, &cap, av[i])) {
			free(line);
			line = NULL;
		}
	free(av);
	char *o_out = line ? strdup(out) : NULL;
	if (!o_out) {
		free(line);
		goto oom;
	}
	memcpy(line + len, "]\n", 2);
	rc = srv_send(s->fd, line, len + 2);
	free(line);
	if (rc) {
		free(o_out);
		snprintf(why, whylen, "the recorder's fork server is gone");
		return MSIM_EIO;
	}
	s->req[s->nreq++] = (srv_req_t){.id = id, .out = o_out};
	return 0;
oom:
	snprintf(why, whylen, "out of memory");
	return MSIM_ENOMEM;
}

int
msim_recserver_running(const msim_recserver_t *s)
{
	return s->nreq;
}

int
msim_recserver_wait(msim_recserver_t *s, int *id_out, char *why,
		    size_t whylen)
{
	char line[128];
	int id, status;
	long pid;
	*id_out = -1;
	if (!s->nreq) {
		snprintf(why, whylen, "no recording is running");
		return MSIM_EINVAL;
	}
	if (srv_line(s, line, sizeof(line)) ||
	    sscanf(line, "%d %ld %d", &id, &pid, &status) != 3) {
		snprintf(why, whylen, "the recorder's fork server is gone");
		return MSIM_EIO;
	}
	int k = 0;
	while (k < s->nreq && s->req[k].id != id)
		k++;
	if (k == s->nreq) {
		snprintf(why, whylen, "the recorder's fork server answered "
			 "'%s'", line);
		return MSIM_EIO;
	}
	srv_req_t r = s->req[k];
	s->req[k] = s->req[--s->nreq];
	*id_out = id;
	int rc = msim_record_status(r.out, s->py, pid, status, 0, why,
				    whylen);
	free(r.out);
	return rc;
}

void
msim_recserver_destroy(msim_recserver_t *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd); /* the server kills what runs and exits */
	if (s->pid > 0)
		while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
			;
	for (int i = 0; i < s->nreq; i++)
		free(s->req[i].out);
	free(s->req);
	free(s->py);
	free(s);
}
