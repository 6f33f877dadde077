/*
 * The recorder's process (lab/recproc.h): its command line, its output,
 * its folder, its process group and its end.  The parent waits with
 * waitid(WNOWAIT), so that the group can be killed while its leader is
 * still a zombie (its pid, hence the group's id, cannot be reused yet).
 */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "lab/recproc.h"
#include "sim/error.h"
#include "sim/file.h"

/* The last path component of word. */
static const char *
rp_base(const char *word)
{
	const char *s = strrchr(word, '/');
	return s ? s + 1 : word;
}

/* Whether word names a Python interpreter (python, python3, .../python3.12). */
static bool
rp_is_python(const char *word)
{
	return !strncmp(rp_base(word), "python", 6);
}

/* The command read: where the script is, and what comes before it. */
typedef struct rp_cmd_s {
	const char *py;
	const char *pre[64]; /* interpreter flags, passed on */
	int npre;
	int script;          /* index in cmd of the script or module */
	bool module;         /* -m MODULE */
	long world;          /* torchrun's processes in all, 0: no torchrun */
} rp_cmd_t;

/* Interpreter flags: letters without a value (-u, -B, -OO, -bb ...),
 * -X and -W with one (attached or not); -m starts a module, -c, -i, -E,
 * -I and - are refused.  Returns the index after them, or -1 with why. */
static int
rp_python_flags(rp_cmd_t *c, char *const *cmd, int ncmd, int i, char *why,
		size_t whylen)
{
	for (; i < ncmd && cmd[i][0] == '-'; i++) {
		const char *f = cmd[i];
		if (!strcmp(f, "--"))
			return i + 1;
		if (!strcmp(f, "-m")) {
			c->module = true;
			return i + 1;
		}
		if (!strcmp(f, "-") || !strcmp(f, "-c")) {
			snprintf(why, whylen, "'%s %s' is not supported: give "
				 "the script's path (or -m MODULE)", c->py, f);
			return -1;
		}
		if (f[1] == 'X' || f[1] == 'W') {
			if (c->npre + 2 > 64)
				break;
			c->pre[c->npre++] = f;
			if (!f[2] && i + 1 < ncmd)
				c->pre[c->npre++] = cmd[++i];
			continue;
		}
		size_t n = strspn(f + 1, "bBdOqsSuvRP");
		if (f[1] && !f[1 + n] && c->npre < 64) {
			c->pre[c->npre++] = f;
			continue;
		}
		if (strpbrk(f + 1, "EI") && f[1] != '-') {
			snprintf(why, whylen, "'%s %s' is not supported: it "
				 "makes Python ignore PYTHONPATH, which finds "
				 "the recorder", c->py, f);
			return -1;
		}
		snprintf(why, whylen, "'%s %s': an interpreter option memsim "
			 "record does not pass on (it knows -u, -B, -O, -X, -W, "
			 "-m and the like)", c->py, f);
		return -1;
	}
	return i;
}

/* A count of torchrun's (--nproc-per-node 8, --nnodes 2 or 1:4 for an
 * elastic job: its largest), or -1. */
static long
rp_count(const char *v)
{
	const char *colon = strchr(v, ':');
	char *end;
	errno = 0;
	long n = strtol(colon ? colon + 1 : v, &end, 10);
	if (errno || end == (colon ? colon + 1 : v) || *end || n < 1 ||
	    n > 1L << 20)
		return -1;
	return n;
}

/* The interpreter of a launcher script (torchrun's "#!/venv/bin/python3"
 * line), found on PATH like execvp() does, in buf; or NULL. */
static const char *
rp_shebang(const char *prog, char *buf, size_t n)
{
	const char *path = strchr(prog, '/') ? "" : getenv("PATH");
	for (const char *p = path; p; p = strchr(p, ':') ? strchr(p, ':') + 1
							 : NULL) {
		char file[PATH_MAX];
		size_t len = strcspn(p, ":");
		snprintf(file, sizeof(file), "%.*s%s%s", (int)len, p,
			 len ? "/" : "", prog);
		FILE *fp = fopen(file, "r");
		if (!fp)
			continue;
		bool ok = fgets(buf, (int)n, fp) && !strncmp(buf, "#!", 2);
		fclose(fp);
		if (!ok)
			return NULL;
		buf[strcspn(buf, " \t\r\n")] = '\0';
		memmove(buf, buf + 2, strlen(buf + 2) + 1);
		return rp_is_python(buf) && buf[0] == '/' ? buf : NULL;
	}
	return NULL;
}

/* Whether the option f (len bytes) is name. */
static bool
rp_is(const char *f, size_t len, const char *name)
{
	return strlen(name) == len && !strncmp(f, name, len);
}

/* torchrun's options (torch.distributed.run), up to the script: the
 * processes per node times the nodes make the world size; every other
 * option is torchrun's own business.  Returns the script's index, or -1
 * with why. */
static int
rp_torchrun(rp_cmd_t *c, char *const *cmd, int ncmd, int i, const char *who,
	    char *why, size_t whylen)
{
	static const char *const novalue[] = {
		"standalone", "no-python", "no_python", "run-path", "run_path",
		"module", "m", "virtual-local-rank", "virtual_local_rank",
	};
	long nproc = 1, nnodes = 1;
	for (; i < ncmd && cmd[i][0] == '-'; i++) {
		const char *f = cmd[i] + 1 + (cmd[i][1] == '-');
		if (!strcmp(cmd[i], "--"))
			return i + 1;
		size_t len = strcspn(f, "=");
		const char *v = f[len] ? f + len + 1 : NULL;
		bool flag = false;
		for (size_t k = 0; k < sizeof(novalue) / sizeof(*novalue); k++)
			flag |= rp_is(f, len, novalue[k]);
		if (flag && !strncmp(f, "no", 2)) {
			snprintf(why, whylen, "'%s %s' is not supported: the "
				 "script must be Python", who, cmd[i]);
			return -1;
		}
		if (flag) {
			c->module |= rp_is(f, len, "m") ||
				     rp_is(f, len, "module");
			continue;
		}
		if (!v) {
			if (i + 1 >= ncmd)
				break;
			v = cmd[++i];
		}
		long *to = rp_is(f, len, "nproc-per-node") ||
				   rp_is(f, len, "nproc_per_node")
			? &nproc
			: rp_is(f, len, "nnodes") ? &nnodes : NULL;
		if (to && (*to = rp_count(v)) < 0) {
			snprintf(why, whylen, "'%s --%.*s %s': memsim record "
				 "needs a number of processes (it records one "
				 "rank: memsim record --world-size N --rank R "
				 "-- python3 SCRIPT)", who, (int)len, f, v);
			return -1;
		}
	}
	c->world = nproc * nnodes;
	return i;
}

/* --world-size and --rank among the recorder's options av (up to "--"):
 * a world of one GPU at least, a rank inside it (unless a launcher's
 * options, read by the recorder, decide the world).  0 or MSIM_EINVAL. */
static int
rp_check_world(char *const *av, bool launcher, char *why, size_t whylen)
{
	long ws = 1, rank = 0;
	for (int i = 0; av[i] && av[i + 1] && strcmp(av[i], "--"); i++) {
		bool w = !strcmp(av[i], "--world-size");
		if (!w && strcmp(av[i], "--rank"))
			continue;
		char *end;
		errno = 0;
		long v = strtol(av[i + 1], &end, 10);
		if (errno || end == av[i + 1] || *end || v < 0 ||
		    v > 1L << 24 || (w && v < 1)) {
			snprintf(why, whylen, "%s '%s': expected a whole "
				 "number%s", av[i], av[i + 1],
				 w ? " of GPUs, at least 1" : " from 0");
			return MSIM_EINVAL;
		}
		*(w ? &ws : &rank) = v;
	}
	if (rank >= ws && !launcher) { /* accelerate's: the recorder's */
		snprintf(why, whylen, "--rank %ld: must be below --world-size "
			 "%ld", rank, ws);
		return MSIM_EINVAL;
	}
	return 0;
}

int
msim_recproc_argv(const char *py, const char *out, char *const *ropt,
		  int nropt, char *const *cmd, int ncmd, char ***av_out,
		  char **extra_out, char *why, size_t whylen)
{
	rp_cmd_t c = {.py = py ? py : "python3"};
	char shebang[PATH_MAX] = "";
	int i = 0;
	*av_out = NULL;
	*extra_out = NULL;
	const char *who = ncmd > 0 ? cmd[0] : "";
	bool accelerate = ncmd > 1 && !strcmp(rp_base(cmd[0]), "accelerate") &&
			  !strcmp(cmd[1], "launch");
	if (accelerate) {
		/* `accelerate launch [ITS OPTIONS] SCRIPT ARGS`: the recorder
		 * reads them as accelerate does (lifecycle.accelerate_launch),
		 * under the launcher's interpreter */
		i = 2;
		const char *sb = py ? NULL
			: rp_shebang(cmd[0], shebang, sizeof(shebang));
		c.py = sb ? sb : c.py;
	} else if (ncmd > 0 && !strcmp(rp_base(cmd[0]), "torchrun")) {
		i = rp_torchrun(&c, cmd, ncmd, 1, who, why, whylen);
		const char *sb = py ? NULL
			: rp_shebang(cmd[0], shebang, sizeof(shebang));
		c.py = sb ? sb : c.py;
	} else if (ncmd > 0 && rp_is_python(cmd[0])) {
		c.py = cmd[0];
		i = rp_python_flags(&c, cmd, ncmd, 1, why, whylen);
		if (i > 0 && c.module && i < ncmd &&
		    (!strcmp(cmd[i], "torch.distributed.run") ||
		     !strcmp(cmd[i], "torch.distributed.launch"))) {
			c.module = false;
			i = rp_torchrun(&c, cmd, ncmd, i + 1, cmd[i], why,
					whylen);
		}
	}
	if (i < 0)
		return MSIM_EINVAL;
	if (i >= ncmd) {
		snprintf(why, whylen, ncmd ? "no script given after '%s'"
			 : "no script given (memsim record -o OUT -- python3 "
			   "SCRIPT ARGS...)", ncmd ? cmd[ncmd - 1] : "");
		return MSIM_EINVAL;
	}
	c.script = i;
	bool given = false;
	for (int k = 0; k < nropt; k++)
		given |= !strcmp(ropt[k], "--world-size");
	/* the strings made here, in one block: the world size, the
	 * launcher's interpreter */
	bool sb = c.py == shebang;
	/* torchrun of any size, one process included, gives each worker its
	 * environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ...): the
	 * recorder is told the world's size, which sets it (dist.py) */
	if ((c.world >= 1 && !given) || sb) {
		if (!(*extra_out = malloc(24 + strlen(shebang) + 1)))
			goto nomem;
		snprintf(*extra_out, 24, "%ld", c.world >= 1 && !given
			 ? c.world : 0);
		if (sb)
			c.py = strcpy(*extra_out + 24, shebang);
	}
	char **av = calloc((size_t)(c.npre + nropt + ncmd + 12), sizeof(*av));
	if (!av)
		goto nomem;
	int n = 0;
	av[n++] = (char *)c.py;
	for (int k = 0; k < c.npre; k++)
		av[n++] = (char *)c.pre[k];
	av[n++] = "-m";
	av[n++] = "memsim_record";
	av[n++] = "-o";
	av[n++] = (char *)out;
	for (int k = 0; k < nropt; k++)
		av[n++] = ropt[k];
	if (c.world >= 1 && !given) {
		av[n++] = "--world-size";
		av[n++] = *extra_out;
	}
	if (c.module)
		av[n++] = "--module";
	if (accelerate) {
		av[n++] = "--launcher";
		av[n++] = "accelerate";
	}
	av[n++] = "--";
	for (int k = c.script; k < ncmd; k++)
		av[n++] = cmd[k];
	av[n] = NULL;
	if (rp_check_world(av, accelerate, why, whylen)) {
		free(av);
		free(*extra_out);
		*extra_out = NULL;
		return MSIM_EINVAL;
	}
	*av_out = av;
	return 0;
nomem:
	free(*extra_out);
	*extra_out = NULL;
	snprintf(why, whylen, "out of memory");
	return MSIM_ENOMEM;
}

int
msim_recproc_check_out(const char *out, char *const *cmd, int ncmd,
		       char *why, size_t whylen)
{
	char w[4400];
	int rc = msim_output_check(out, w, sizeof(w));
	if (rc) {
		snprintf(why, whylen, "-o %s%s", *out ? "" : "'': ", w);
		return rc;
	}
	struct stat st;
	if (!stat(out, &st) && !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "-o %s: not a regular file (a trace is "
			 "written beside it and renamed into place)", out);
		return MSIM_EINVAL;
	}
	for (int i = 0; i < ncmd; i++)
		if (msim_same_file(out, cmd[i])) {
			snprintf(why, whylen, "-o %s: is %s, a file the "
				 "command reads", out, cmd[i]);
			return MSIM_EINVAL;
		}
	return 0;
}

int
msim_recproc_stage(const char *out, char *stage, size_t n, char *why,
		   size_t whylen)
{
	const char *slash = strrchr(out, '/');
	char cwd[PATH_MAX] = "";
	if (out[0] != '/' && !getcwd(cwd, sizeof(cwd))) {
		snprintf(why, whylen, "getcwd: %s", strerror(errno));
		return MSIM_EIO;
	}
	int len = snprintf(stage, n, "%s%s%.*s.memsim-record-XXXXXX", cwd,
			   *cwd ? "/" : "", slash ? (int)(slash - out + 1) : 0,
			   out);
	if (len < 0 || (size_t)len >= n) {
		snprintf(why, whylen, "-o %s: the path is too long", out);
		return MSIM_EINVAL;
	}
	if (!mkdtemp(stage)) {
		snprintf(why, whylen, "-o %s: cannot make a folder beside it: "
			 "%s", out, strerror(errno));
		return MSIM_EIO;
	}
	return 0;
}

void
msim_recproc_unstage(const char *stage)
{
	DIR *d = opendir(stage);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[PATH_MAX + 256];
		snprintf(p, sizeof(p), "%s/%s", stage, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(stage);
}

/* ---------------------------------------------------------------- */
/* The process: signals to memsim are passed on to the recorder. */

static volatile sig_atomic_t rp_sig, rp_alarm;
static volatile pid_t rp_target; /* -pgid, or the pid */
static int rp_last_sig;

static void
rp_on_signal(int sig)
{
	rp_sig = sig;
	if (rp_target)
		kill(rp_target, sig);
}

static void
rp_on_alarm(int sig)
{
	(void)sig;
	rp_alarm = 1;
}

static const int rp_sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGALRM};
#define RP_NSIGS (sizeof(rp_sigs) / sizeof(*rp_sigs))

/* Our handlers, but for a signal the caller ignores (nohup): it stays
 * ignored, and the recorder inherits that. */
static void
rp_handlers(struct sigaction *old)
{
	for (size_t i = 0; i < RP_NSIGS; i++) {
		struct sigaction sa = {0};
		sa.sa_handler = rp_sigs[i] == SIGALRM ? rp_on_alarm
						      : rp_on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(rp_sigs[i], NULL, &old[i]);
		if (old[i].sa_handler != SIG_IGN || rp_sigs[i] == SIGALRM)
			sigaction(rp_sigs[i], &sa, NULL); /* no SA_RESTART */
	}
}

/* The child: group, death signal, PYTHONPATH, stdout, exec; an exec
 * that fails writes its errno to fd. */
static void
rp_child(const char *dir, char **av, bool quiet, bool group, pid_t parent,
	 const struct sigaction *old, int fd)
{
	for (size_t i = 0; i < RP_NSIGS; i++)
		sigaction(rp_sigs[i], &old[i], NULL);
	if (group)
		setpgid(0, 0);
#ifdef PR_SET_PDEATHSIG
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
#else
	(void)parent;
#endif
	const char *prev = getenv("PYTHONPATH");
	size_t len = strlen(dir) + (prev ? strlen(prev) : 0) + 2;
	char *pp = malloc(len);
	if (!pp)
		_exit(127);
	snprintf(pp, len, "%s%s%s", dir, prev && *prev ? ":" : "",
		 prev ? prev : "");
	setenv("PYTHONPATH", pp, 1);
	if (quiet) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
	} else if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		_exit(127);
	}
	execvp(av[0], av);
	int e = errno;
	if (write(fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* Waits until pid has ended (not reaped), passing on the timeout. */
static void
rp_wait(pid_t pid, unsigned timeout_s, int *how)
{
	bool stopping = false, killed = false;
	if (timeout_s)
		alarm(timeout_s);
	for (;;) {
		if (rp_sig && !stopping) {
			stopping = true; /* passed on by the handler */
			*how = MSIM_RECPROC_SIGNAL;
			rp_alarm = 0;
			alarm(5);
		}
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (!waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT))
			break;
		if (errno != EINTR)
			break;
		if (!rp_alarm)
			continue;
		rp_alarm = 0;
		if (!stopping) {
			stopping = true;
			*how = MSIM_RECPROC_TIMEOUT;
			kill(rp_target, SIGTERM);
			alarm(5);
		} else if (!killed) {
			killed = true;
			kill(rp_target, SIGKILL);
		}
	}
	alarm(0);
}

/* The handlers saved by msim_recproc_start(), put back by _end(). */
static struct sigaction rp_old[RP_NSIGS];

int
msim_recproc_start(char **av, const char *dir, bool quiet, long *pid_out,
		   int *exec_errno, char *why, size_t whylen)
{
	*exec_errno = 0;
	*pid_out = 0;
	rp_last_sig = 0;
	int fd[2];
	if (pipe(fd) < 0) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return MSIM_EIO;
	}
	fcntl(fd[0], F_SETFD, FD_CLOEXEC);
	fcntl(fd[1], F_SETFD, FD_CLOEXEC);
	/* A terminal's job control (Ctrl-C, Ctrl-Z) reaches memsim's group:
	 * the recorder stays in it there, and reads the terminal. */
	bool group = !isatty(STDIN_FILENO);
	rp_sig = rp_alarm = 0;
	rp_target = 0;
	rp_handlers(rp_old);
	fflush(stdout);
	fflush(stderr);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		for (size_t i = 0; i < RP_NSIGS; i++)
			sigaction(rp_sigs[i], &rp_old[i], NULL);
		close(fd[0]);
		close(fd[1]);
		return MSIM_ENOMEM;
	}
	if (pid == 0)
		rp_child(dir, av, quiet, group, parent, rp_old, fd[1]);
	if (group)
		setpgid(pid, pid); /* also here: no race with kill() */
	rp_target = group ? -pid : pid;
	if (rp_sig)
		kill(rp_target, rp_sig);
	close(fd[1]);
	ssize_t r;
	while ((r = read(fd[0], exec_errno, sizeof(*exec_errno))) < 0 &&
	       errno == EINTR)
		;
	if (r != (ssize_t)sizeof(*exec_errno))
		*exec_errno = 0;
	close(fd[0]);
	*pid_out = (long)pid;
	return 0;
}

int
msim_recproc_end(long pid, unsigned timeout_s, int *status, int *how,
		 int *sig, char *why, size_t whylen)
{
	*how = MSIM_RECPROC_EXITED;
	*sig = 0;
	rp_wait((pid_t)pid, timeout_s, how);
	/* What the script left running (a forked child, a daemon) goes
	 * with it: nothing of the group outlives the recording. */
	if (rp_target < 0)
		kill(rp_target, SIGKILL);
	int rc = 0;
	while (waitpid((pid_t)pid, status, 0) < 0)
		if (errno != EINTR) {
			snprintf(why, whylen, "waitpid: %s", strerror(errno));
			rc = MSIM_EIO;
			break;
		}
	rp_target = 0;
	for (size_t i = 0; i < RP_NSIGS; i++)
		sigaction(rp_sigs[i], &rp_old[i], NULL);
	if (rp_sig) {
		*how = MSIM_RECPROC_SIGNAL;
		*sig = rp_last_sig = rp_sig;
	}
	return rc;
}

int
msim_recproc_run(char **av, const char *dir, bool quiet, unsigned timeout_s,
		 int *status, int *how, int *sig, int *exec_errno, long *pid_out,
		 char *why, size_t whylen)
{
	*how = MSIM_RECPROC_EXITED;
	*sig = 0;
	int rc = msim_recproc_start(av, dir, quiet, pid_out, exec_errno, why,
				    whylen);
	return rc ? rc : msim_recproc_end(*pid_out, timeout_s, status, how,
					  sig, why, whylen);
}

int
msim_recproc_publish(const char *trace, const char *out, char *why,
		     size_t whylen)
{
	struct stat st;
	/* A link to a file: the file is replaced, the link stays. */
	char *real = !lstat(out, &st) && S_ISLNK(st.st_mode)
		? realpath(out, NULL) : NULL;
	const char *to = real ? real : out;
	int rc = 0;
	if (!stat(to, &st) && !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "-o %s: has become something else than "
			 "a file; the trace is not written", out);
		rc = MSIM_EIO;
	} else if (rename(trace, to)) {
		snprintf(why, whylen, "-o %s: %s", out, strerror(errno));
		rc = MSIM_EIO;
	}
	free(real);
	return rc;
}

int
msim_recproc_signal(void)
{
	return rp_last_sig;
}
