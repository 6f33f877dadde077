/*
 * validate --mode torch: the requests through PyTorch's own allocator, by
 * the Python bridge validate/torch_replay.py.  This side needs no CUDA: it
 * writes the requests, runs the bridge and parses its line protocol (see
 * the bridge's docstring), so it is tested here with a stand-in script.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/error.h"
#include "sim/metrics.h"
#include "validate/validate.h"

extern char **environ;

static const char *const vmode_names[] = {"raw", "async", "torch"};

const char *
msim_vmode_name(int mode)
{
	return mode >= 0 && mode <= MSIM_VMODE_TORCH ? vmode_names[mode] : "?";
}

int
msim_vmode_parse(const char *name)
{
	for (int i = 0; i <= MSIM_VMODE_TORCH; i++)
		if (!strcmp(name, vmode_names[i]))
			return i;
	return -1;
}

void
msim_measured_clear(msim_measured_t *m)
{
	free(m->events);
	memset(m, 0, sizeof(*m));
}

/* Writes t's requests in the bridge's protocol.  Returns 0 or an error. */
static int
write_requests(msim_trace_t *t, FILE *fp, uint64_t *n_out, char *why,
	       size_t whylen)
{
	msim_req_t r;
	int rc;
	*n_out = 0;
	while ((rc = msim_trace_next(t, &r)) == 1) {
		switch (r.kind) {
		case MSIM_REQ_ALLOC:
			fprintf(fp, "%c %u %" PRIu64 " %" PRIu64 "\n",
				(r.flags & MSIM_REQF_EXPECT_OOM) ? 'x' : 'a',
				r.id, r.size, r.stream);
			++*n_out;
			break;
		case MSIM_REQ_FREE:
			fprintf(fp, "f %u\n", r.id);
			++*n_out;
			break;
		case MSIM_REQ_EMPTY_CACHE:
			fprintf(fp, "e\n");
			break;
		default: /* hints, free_requested: not requests here */
			break;
		}
	}
	if (rc < 0) {
		snprintf(why, whylen, "%s", msim_trace_errmsg(t));
		return rc;
	}
	if (fflush(fp) || ferror(fp)) {
		snprintf(why, whylen, "cannot write the requests: %s",
			 strerror(errno));
		return MSIM_EIO;
	}
	return 0;
}

static int
add_event(msim_measured_t *m, const msim_seg_event_t *e)
{
	if ((m->nevents & (m->nevents - 1)) == 0) { /* 0, 1, 2, 4, ... */
		size_t n = m->nevents ? 2 * m->nevents : 64;
		msim_seg_event_t *v = realloc(m->events, n * sizeof(*v));
		if (!v)
			return MSIM_ENOMEM;
		m->events = v;
	}
	m->events[m->nevents++] = *e;
	return 0;
}

/* Sets the statistic called name (a memory_stats key) to value. */
static void
set_stat(msim_stats_t *st, const char *name, int64_t value)
{
	/* memory_stats keys map onto msim_stats_t fields by name. */
	msim_stat_t *s = NULL;
	char field[64], pool[32] = "", part[32] = "";
	int n = sscanf(name, "%63[^.].%31[^.].%31s", field, pool, part);
	int p = !strcmp(pool, "small_pool") ? MSIM_POOL_SMALL
		: !strcmp(pool, "large_pool") ? MSIM_POOL_LARGE
					      : MSIM_POOL_ALL;
#define XX(f)                                                              \
	if (n == 3 && !strcmp(field, #f))                                  \
		s = &st->f[p];
	MSIM_STAT_ARRAYS(XX)
#undef XX
#define XX(f)                                                              \
	if (n == 2 && !strcmp(field, #f)) {                                \
		s = &st->f;                                                \
		snprintf(part, sizeof(part), "%s", pool);                  \
	}
	MSIM_STAT_SINGLES(XX)
#undef XX
#define XX(f)                                                              \
	if (n == 1 && !strcmp(field, #f))                                  \
		st->f = value;
	MSIM_STAT_COUNTERS(XX)
#undef XX
	if (n == 1 && !strcmp(field, "max_split_size"))
		st->max_split_size = value;
	if (!s)
		return;
	if (!strcmp(part, "current"))
		s->current = value;
	else if (!strcmp(part, "peak"))
		s->peak = value;
	else if (!strcmp(part, "allocated"))
		s->allocated = value;
	else if (!strcmp(part, "freed"))
		s->freed = value;
}

static int
parse_output(FILE *fp, msim_measured_t *m, char *why, size_t whylen)
{
	char line[1024];
	unsigned long lineno = 0;
	int saw_oom = 0;
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		char key[128], val[512], action[32];
		long long v;
		unsigned long long req, addr, size;
		if (sscanf(line, "stat %127s %lld", key, &v) == 2) {
			set_stat(&m->st, key, v);
		} else if (sscanf(line, "event %llu %31s %llu %llu", &req,
				  action, &addr, &size) == 4) {
			msim_seg_event_t e = {req, addr, size,
					      msim_seg_action_parse(action)};
			if (e.action < 0) {
				snprintf(why, whylen, "bridge output line %lu: "
					 "unknown action '%s'", lineno, action);
				return MSIM_EFORMAT;
			}
			if (add_event(m, &e))
				return MSIM_ENOMEM;
		} else if (sscanf(line, "oom %lld", &v) == 1) {
			m->oom_request = v;
			saw_oom = 1;
		} else if (sscanf(line, "meta %127s %511[^\n]", key, val) == 2) {
			if (!strcmp(key, "device"))
				snprintf(m->device, sizeof(m->device), "%.127s",
					 val);
			else if (!strcmp(key, "torch") || !strcmp(key, "cuda")) {
				size_t len = strlen(m->versions);
				snprintf(m->versions + len,
					 sizeof(m->versions) - len, "%s%s %.60s",
					 len ? ", " : "", key, val);
			}
		} else {
			snprintf(why, whylen, "bridge output line %lu: cannot "
				 "parse '%.60s'", lineno, line);
			return MSIM_EFORMAT;
		}
	}
	if (!saw_oom) {
		snprintf(why, whylen, "the bridge stopped before its report "
			 "(see its messages above)");
		return MSIM_EIO;
	}
	return 0;
}

int
msim_validate_torch(msim_trace_t *t, const char *python, const char *script,
		    const char *alloc_conf, uint64_t cap, msim_measured_t *out,
		    char *why, size_t whylen)
{
	char reqs[] = "/tmp/memsim-req-XXXXXX", outp[] = "/tmp/memsim-out-XXXXXX";
	int rfd = -1, ofd = -1, rc;
	FILE *fp = NULL;
	memset(out, 0, sizeof(*out));
	out->oom_request = -1;
	if ((rfd = mkstemp(reqs)) < 0 || (ofd = mkstemp(outp)) < 0) {
		snprintf(why, whylen, "cannot create a temporary file: %s",
			 strerror(errno));
		rc = MSIM_EIO;
		goto done;
	}
	if (!(fp = fdopen(rfd, "w"))) {
		rc = MSIM_EIO;
		goto done;
	}
	rfd = -1;
	uint64_t nreq;
	if ((rc = write_requests(t, fp, &nreq, why, whylen)))
		goto done;
	fclose(fp);
	fp = NULL;

	/* python3 SCRIPT REQS CAP > OUT, with the allocator's settings. */
	if (alloc_conf && *alloc_conf)
		setenv("PYTORCH_CUDA_ALLOC_CONF", alloc_conf, 1);
	else
		unsetenv("PYTORCH_CUDA_ALLOC_CONF");
	char capstr[32];
	snprintf(capstr, sizeof(capstr), "%" PRIu64, cap);
	const char *py = python ? python : "python3";
	char *argv[] = {(char *)py, (char *)script, reqs, capstr, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, ofd, STDOUT_FILENO);
	pid_t pid;
	int err = posix_spawnp(&pid, py, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err) {
		snprintf(why, whylen, "cannot run %s: %s", py, strerror(err));
		rc = MSIM_EIO;
		goto done;
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(why, whylen, "%s %s failed (see its messages above)",
			 py, script);
		rc = MSIM_EIO;
		goto done;
	}
	if (!(fp = fopen(outp, "r"))) {
		rc = MSIM_EIO;
		goto done;
	}
	if ((rc = parse_output(fp, out, why, whylen)))
		goto done;
	out->requests = out->oom_request >= 0 ? (uint64_t)out->oom_request + 1
					      : nreq;
done:
	if (fp)
		fclose(fp);
	if (rfd >= 0)
		close(rfd);
	if (ofd >= 0)
		close(ofd);
	unlink(reqs);
	unlink(outp);
	if (rc)
		msim_measured_clear(out);
	return rc;
}
