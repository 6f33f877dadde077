/*
 * memsim record: runs a PyTorch script under the Python recorder
 * (traces/memsim_record, installed in $(pythondir)) and writes the trace.
 * The recorder writes OUT.tmp<pid> and renames it; if it dies, the
 * temporary is removed here, so no partial trace is left at OUT.
 * Also the recording step of `memsim fit` and of `memsim sweep --
 * COMMAND` (msim_cli_record()), and what both share: the recorder options
 * a setting name stands for, and the {NAME} substitution.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

static void
usage_record(FILE *fp)
{
	fprintf(fp,
		"usage: memsim record -o OUT [OPTIONS] -- python3 SCRIPT "
		"[ARGS...]\n"
		"\n"
		"Runs SCRIPT, unmodified, and writes its GPU allocations to OUT "
		"as a CSV trace\n"
		"(seq,time_us,action,addr,size,stream,category,site) for `memsim "
		"run`.  With\n"
		"--fake (the default) the script runs on PyTorch's fake tensors: "
		"no GPU, no\n"
		"CUDA driver and no compute; CUDA queries are answered for "
		"--device, kernels'\n"
		"own workspaces are added by rule, and data-dependent values get "
		"stated\n"
		"assumptions (counted as `annotate` rows; see README.md).  With "
		"--gpu it runs\n"
		"for real with the allocator's history on.  Either way each "
		"call of\n"
		"torch.cuda.empty_cache() is an `empty_cache` row, which the "
		"replay runs.\n"
		"Needs Python 3 and PyTorch.\n"
		"\n"
		"options:\n"
		"  -o, --output OUT          the trace to write (required)\n"
		"      --fake | --gpu        fake tensors (default) or a real "
		"run\n"
		"      --device NAME         h200 (default), h100-80gb, "
		"a100-80gb, a100-40gb, l4, ...\n"
		"      --world-size N        one rank of an N-GPU job (fake "
		"process group)\n"
		"      --rank R              which rank (default 0)\n"
		"      --amp bf16|fp16       autocast around the model's "
		"forward\n"
		"      --checkpoint S        none, every:K or sqrt: "
		"checkpoint the repeated blocks\n"
		"      --dynamic-fraction F  share of elements nonzero, "
		"masked_select, unique\n"
		"                            (MoE routing) select (default "
		"0.5)\n"
		"      --item-int N          what an integer .item() returns "
		"(default 1)\n"
		"      --item-bool true|false  what a bool .item() of unknown "
		"value returns\n"
		"                            (default false)\n"
		"      --item-repeats N      stop when one line asks for an "
		"unknown .item()\n"
		"                            more than N times (default "
		"100000)\n"
		"      --python PY           the interpreter (default "
		"$MEMSIM_PYTHON or python3)\n"
		"  -h, --help                this help\n");
}

/* The folder holding memsim_record/: $MEMSIM_PYTHONPATH, the installed
 * one, else the source tree's. */
static const char *
record_module_dir(void)
{
	static const char *const dirs[] = {PYTHON_DIR, SRC_TRACES_DIR};
	const char *env = getenv("MEMSIM_PYTHONPATH");
	if (env && *env)
		return env;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[4096];
		struct stat st;
		snprintf(path, sizeof(path), "%s/memsim_record/__main__.py",
			 dirs[i]);
		if (stat(path, &st) == 0)
			return dirs[i];
	}
	return NULL;
}

/* Whether word names a Python interpreter (python, python3, .../python3.12). */
static int
is_python(const char *word)
{
	const char *base = strrchr(word, '/');
	base = base ? base + 1 : word;
	return !strncmp(base, "python", 6);
}

/* The recorder died by signal sig: what Python's faulthandler wrote to
 * path (the Python lines running then, innermost first), then the line
 * of the script's own code innermost there, if any. */
static void
record_fault(const char *path, int sig)
{
	FILE *fp = fopen(path, "r");
	char line[4096], where[4096] = "";
	if (fp) {
		while (fgets(line, sizeof(line), fp)) {
			if (!strncmp(line, "Extension modules:", 18))
				continue;
			fputs(line, stderr);
			/* faulthandler: '  File "F", line N in FUNC' */
			if (!where[0] && strstr(line, "File \"") &&
			    !strstr(line, "/site-packages/") &&
			    !strstr(line, "/lib/python") &&
			    !strstr(line, "File \"<") &&
			    !strstr(line, "memsim_record"))
				snprintf(where, sizeof(where), "%s",
					 line + strspn(line, " "));
		}
		fclose(fp);
	}
	where[strcspn(where, "\n")] = '\0';
	if (where[0])
		fprintf(stderr, "memsim: record: the recorder was killed by "
			"signal %d while running %s; no trace written\n", sig,
			where);
	else
		fprintf(stderr, "memsim: record: the recorder was killed by "
			"signal %d; no trace written\n", sig);
}

int
msim_cli_record(const char *out, char *const *ropt, int nropt,
		char *const *cmd, int ncmd, int quiet)
{
	const char *dir = record_module_dir();
	if (!dir)
		msim_cli_die("record: the Python recorder (memsim_record) is "
			     "not installed; set MEMSIM_PYTHONPATH");
	if (ncmd < 1)
		msim_cli_die("record: no script given (memsim record -o OUT "
			     "-- python3 SCRIPT ARGS...)");
	const char *py = getenv("MEMSIM_PYTHON");
	if (!py || !*py)
		py = "python3";
	int skip = 0;
	if (is_python(cmd[0])) {
		py = cmd[0];
		skip = 1;
	}
	if (ncmd - skip < 1)
		msim_cli_die("record: no script given after '%s'", cmd[0]);
	if (!strcmp(cmd[skip], "-m") || !strcmp(cmd[skip], "-c"))
		msim_cli_die("record: '%s %s' is not supported: give the "
			     "script's path", py, cmd[skip]);
	char **av = calloc((size_t)(nropt + ncmd + 8), sizeof(*av));
	if (!av)
		msim_cli_die("out of memory");
	int n = 0;
	av[n++] = (char *)py;
	av[n++] = "-m";
	av[n++] = "memsim_record";
	av[n++] = "-o";
	av[n++] = (char *)out;
	for (int i = 0; i < nropt; i++)
		av[n++] = ropt[i];
	av[n++] = "--";
	for (int i = skip; i < ncmd; i++)
		av[n++] = cmd[i];
	av[n] = NULL;

	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		msim_cli_die("record: fork: %s", strerror(errno));
	if (pid == 0) {
		const char *old = getenv("PYTHONPATH");
		size_t len = strlen(dir) + (old ? strlen(old) : 0) + 2;
		char *pp = malloc(len);
		if (!pp)
			_exit(127);
		snprintf(pp, len, "%s%s%s", dir, old && *old ? ":" : "",
			 old ? old : "");
		setenv("PYTHONPATH", pp, 1);
		if (quiet) {
			if (!freopen("/dev/null", "w", stdout))
				_exit(127);
		} else if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
			_exit(127);
		}
		execvp(py, av);
		fprintf(stderr, "memsim: record: cannot run %s: %s\n", py,
			strerror(errno));
		_exit(127);
	}
	free(av);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			msim_cli_die("record: waitpid: %s", strerror(errno));
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp%ld", out, (long)pid);
	unlink(tmp); /* what a killed recorder left */
	snprintf(tmp, sizeof(tmp), "%s.fault%ld", out, (long)pid);
	if (WIFSIGNALED(status)) {
		record_fault(tmp, WTERMSIG(status));
		unlink(tmp);
		return 1;
	}
	unlink(tmp);
	int rc = WEXITSTATUS(status);
	if (rc == 127)
		fprintf(stderr, "memsim: record: %s or its memsim_record module "
			"could not be run\n", py);
	return rc;
}

/* The recorder's options that a setting of fit or sweep can name. */
static const char *const record_flags[] = {
	"--amp", "--checkpoint", "--device", "--world-size", "--rank",
	"--dynamic-fraction", "--item-int", "--item-bool",
};

const char *
msim_cli_record_flag(const char *name)
{
	for (size_t i = 0; i < sizeof(record_flags) / sizeof(*record_flags);
	     i++)
		if (!strcmp(record_flags[i] + 2, name))
			return record_flags[i];
	return NULL;
}

/* Where "{name}" starts in word, or NULL. */
static const char *
record_find(const char *word, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = strchr(word, '{'); p; p = strchr(p + 1, '{'))
		if (!strncmp(p + 1, name, n) && p[n + 1] == '}')
			return p;
	return NULL;
}

bool
msim_cli_record_has(char *const *cmd, int ncmd, const char *name)
{
	for (int i = 0; i < ncmd; i++)
		if (record_find(cmd[i], name))
			return true;
	return false;
}

char **
msim_cli_record_subst(char *const *cmd, int ncmd, const char *const *names,
		      const char *const *values, size_t n)
{
	char **out = calloc((size_t)ncmd + 1, sizeof(*out));
	if (!out)
		msim_cli_die("out of memory");
	for (int i = 0; i < ncmd; i++) {
		/* one pass, left to right: a value is never read again */
		size_t len = strlen(cmd[i]) + 1;
		for (size_t k = 0; k < n; k++)
			for (const char *p = cmd[i];
			     (p = record_find(p, names[k])); p++)
				len += strlen(values[k]);
		char *w = malloc(len), *d = w;
		if (!w)
			msim_cli_die("out of memory");
		for (const char *p = cmd[i]; *p;) {
			size_t k = 0;
			while (k < n && record_find(p, names[k]) != p)
				k++;
			if (k == n) {
				*d++ = *p++;
				continue;
			}
			d += sprintf(d, "%s", values[k]);
			p += strlen(names[k]) + 2;
		}
		*d = '\0';
		out[i] = w;
	}
	return out;
}

void
msim_cli_record_subst_free(char **cmd, int ncmd)
{
	for (int i = 0; cmd && i < ncmd; i++)
		free(cmd[i]);
	free(cmd);
}

int
msim_cmd_record(int argc, char **argv)
{
	enum { O_FAKE = 256, O_GPU, O_DEVICE, O_WS, O_RANK, O_AMP, O_CKPT,
	       O_FRAC, O_ITEM, O_ITEMB, O_REPEATS, O_PY };
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"fake", no_argument, NULL, O_FAKE},
		{"gpu", no_argument, NULL, O_GPU},
		{"device", required_argument, NULL, O_DEVICE},
		{"world-size", required_argument, NULL, O_WS},
		{"rank", required_argument, NULL, O_RANK},
		{"amp", required_argument, NULL, O_AMP},
		{"checkpoint", required_argument, NULL, O_CKPT},
		{"dynamic-fraction", required_argument, NULL, O_FRAC},
		{"item-int", required_argument, NULL, O_ITEM},
		{"item-bool", required_argument, NULL, O_ITEMB},
		{"item-repeats", required_argument, NULL, O_REPEATS},
		{"python", required_argument, NULL, O_PY},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out = NULL;
	char *ropt[32];
	int nropt = 0;
	int c;
	optind = 1;
	while ((c = msim_cli_getopt(argc, argv, "+o:h", longopts)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case O_FAKE:
			ropt[nropt++] = "--fake";
			break;
		case O_GPU:
			ropt[nropt++] = "--gpu";
			break;
		case O_PY:
			setenv("MEMSIM_PYTHON", optarg, 1);
			break;
		case O_DEVICE: case O_WS: case O_RANK: case O_AMP: case O_CKPT:
		case O_FRAC: case O_ITEM: case O_ITEMB: case O_REPEATS: {
			static const char *const flag[] = {
				"--device", "--world-size", "--rank", "--amp",
				"--checkpoint", "--dynamic-fraction",
				"--item-int", "--item-bool", "--item-repeats"};
			if (nropt > 28)
				msim_cli_die("record: too many options");
			ropt[nropt++] = (char *)flag[c - O_DEVICE];
			ropt[nropt++] = optarg;
			break;
		}
		case 'h':
			usage_record(stdout);
			return 0;
		default:
			usage_record(stderr);
			return 2;
		}
	}
	if (!out) {
		fprintf(stderr, "memsim: record: -o OUT is required\n");
		usage_record(stderr);
		return 2;
	}
	return msim_cli_record(out, ropt, nropt, argv + optind, argc - optind,
			       0);
}
