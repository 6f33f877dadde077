/*
 * The recorder's fork server (lab/recserver.h): started as `python3 -m
 * memsim_record --serve FD SCRIPT` with the child's end of a socket pair
 * as FD, through msim_recproc_start() as any recording (its own process
 * group, killed with memsim, memsim's signals passed on); requests go as
 * one JSON array a line, answers come back as "ID PID STATUS TIMEDOUT"
 * lines.  Each recording writes into a private folder beside its output
 * (msim_record_stage()), and msim_record_finish() publishes its trace
 * once the server says it and its process group are gone, as for a
 * recording started alone.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lab/record_int.h"
#include "lab/recproc.h"
#include "lab/recserver.h"
#include "sim/error.h"

/* A recording running: its id, its output and its private folder. */
typedef struct srv_req_s {
	int id;
	char *out;
	char *stage;
} srv_req_t;

struct msim_recserver_s {
	long pid;         /* the server; 0: not running */
	int fd;           /* our end of the socket pair */
	char *py;         /* its interpreter */
	msim_record_opts_t o; /* the caller's (its strings borrowed) */
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

/* Ends the server (it kills what it still records at the socket's end)
 * and reaps it; a signal memsim got meanwhile is msim_record_signal()'s
 * then. */
static void
srv_stop(msim_recserver_t *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->pid > 0) {
		int status, how, sig;
		char why[256];
		msim_recproc_end(s->pid, 0, &status, &how, &sig, why,
				 sizeof(why));
	}
	s->pid = 0;
}

/* The server ended on its own: reaped, and why says whether memsim got
 * a signal (passed on to it) or it died.  Returns MSIM_EIO. */
static int
srv_gone(msim_recserver_t *s, char *why, size_t whylen)
{
	srv_stop(s);
	if (msim_record_signal())
		snprintf(why, whylen, "memsim got signal %d: the recordings "
			 "were stopped; no trace written",
			 msim_record_signal());
	else
		snprintf(why, whylen, "the recorder's fork server is gone");
	return MSIM_EIO;
}

/* Starts the server process; 0, or -1 with why. */
static int
srv_spawn(msim_recserver_t *s, const char *dir, const char *script,
	  char *why, size_t whylen)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		snprintf(why, whylen, "socketpair: %s", strerror(errno));
		return -1;
	}
	fcntl(sv[0], F_SETFD, FD_CLOEXEC);
	char fdarg[16];
	snprintf(fdarg, sizeof(fdarg), "%d", sv[1]);
	char *av[] = {s->py, "-m", "memsim_record", "--serve", fdarg,
		      (char *)script, NULL};
	int exec_errno;
	int rc = msim_recproc_start(av, dir, s->o.quiet, &s->pid, &exec_errno,
				    why, whylen);
	close(sv[1]);
	s->fd = sv[0];
	if (rc)
		return -1;
	if (exec_errno) {
		snprintf(why, whylen, "cannot run %s: %s", s->py,
			 strerror(exec_errno));
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
	const char *dir = msim_record_module_dir(o->dirs);
	char **av = NULL, *extra = NULL;
	int rc = dir ? msim_recproc_argv(msim_record_python(o), "-", NULL, 0,
					 cmd, ncmd, &av, &extra, why, whylen)
		     : MSIM_ENOTFOUND;
	if (!dir)
		snprintf(why, whylen, "the Python recorder (memsim_record) is "
			 "not installed; set MEMSIM_PYTHONPATH");
	if (rc)
		return rc;
	/* the script (or module) after "--" */
	int i = 0;
	while (strcmp(av[i], "--"))
		i++;
	const char *off = getenv("MEMSIM_RECORD_SERVER");
	msim_recserver_t *s = NULL;
	if (off && !strcmp(off, "0")) {
		snprintf(why, whylen, "MEMSIM_RECORD_SERVER=0");
		rc = MSIM_ENOTFOUND;
	} else if (strcmp(av[1], "-m")) {
		/* -u, -X, -W: options of an interpreter that starts once */
		snprintf(why, whylen, "%s %s: each value is recorded alone",
			 av[0], av[1]);
		rc = MSIM_ENOTFOUND;
	} else if (!(s = calloc(1, sizeof(*s))) || !(s->py = strdup(av[0]))) {
		snprintf(why, whylen, "out of memory");
		rc = MSIM_ENOMEM;
	} else {
		s->fd = -1;
		s->o = *o;
		if (srv_spawn(s, dir, av[i + 1], why, whylen)) {
			/* a signal stops all; else each value alone */
			srv_stop(s);
			rc = msim_record_signal() ? srv_gone(s, why, whylen)
						  : MSIM_ENOTFOUND;
		}
	}
	free(av);
	free(extra);
	if (rc) {
		msim_recserver_destroy(s);
		return rc;
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
	char stage[4096], **av, *extra;
	const char *dir;
	int rc = msim_record_stage(&s->o, out, ropt, nropt, cmd, ncmd, &dir,
				   stage, sizeof(stage), &av, &extra, why,
				   whylen);
	if (rc)
		return rc;
	size_t len = 0, cap = 64;
	char *line = NULL;
	srv_req_t req = {.id = id};
	if (strcmp(av[0], s->py) || strcmp(av[1], "-m")) {
		snprintf(why, whylen, "the fork server runs %s, not %s%s%s",
			 s->py, av[0], strcmp(av[1], "-m") ? " " : "",
			 strcmp(av[1], "-m") ? av[1] : "");
		rc = MSIM_EINVAL;
		goto out;
	}
	if (s->nreq == s->cap) {
		int nc = s->cap ? 2 * s->cap : 8;
		srv_req_t *nr = realloc(s->req, (size_t)nc * sizeof(*nr));
		if (!nr)
			goto oom;
		s->req = nr;
		s->cap = nc;
	}
	if (!(line = malloc(cap)))
		goto oom;
	len = (size_t)snprintf(line, cap, "[%d,%u", id, s->o.timeout_s);
	/* av: py -m memsim_record, then the recorder's own argv */
	for (int i = 3; av[i]; i++)
		if (srv_json(&line, &len, &cap, av[i]))
			goto oom;
	if (!(req.out = strdup(out)) || !(req.stage = strdup(stage)))
		goto oom;
	memcpy(line + len, "]\n", 2);
	if (srv_send(s->fd, line, len + 2)) {
		rc = srv_gone(s, why, whylen);
		goto out;
	}
	s->req[s->nreq++] = req;
	req.out = req.stage = NULL;
	goto out;
oom:
	snprintf(why, whylen, "out of memory");
	rc = MSIM_ENOMEM;
out:
	if (rc)
		msim_recproc_unstage(stage);
	free(req.out);
	free(req.stage);
	free(line);
	free(av);
	free(extra);
	return rc;
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
	int id, status, timedout;
	long pid;
	*id_out = -1;
	if (!s->nreq) {
		snprintf(why, whylen, "no recording is running");
		return MSIM_EINVAL;
	}
	if (srv_line(s, line, sizeof(line)) ||
	    sscanf(line, "%d %ld %d %d", &id, &pid, &status, &timedout) != 4) {
		return srv_gone(s, why, whylen);
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
	/* the server answers once the recording's group is gone */
	int rc = msim_record_finish(&s->o, s->py, r.stage, r.out, status,
				    timedout ? MSIM_RECPROC_TIMEOUT
					     : MSIM_RECPROC_EXITED, 0, 0, pid,
				    why, whylen);
	free(r.out);
	free(r.stage);
	return rc;
}

void
msim_recserver_destroy(msim_recserver_t *s)
{
	if (!s)
		return;
	srv_stop(s); /* the server kills what runs and exits */
	for (int i = 0; i < s->nreq; i++) {
		msim_recproc_unstage(s->req[i].stage);
		free(s->req[i].stage);
		free(s->req[i].out);
	}
	free(s->req);
	free(s->py);
	free(s);
}
