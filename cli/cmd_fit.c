/*
 * memsim fit: the largest value of one setting of a script (batch size,
 * sequence length) whose recording fits under a cap, found by bisection
 * over `memsim record` recordings replayed through a policy (default the
 * exact pytorch one) with `memsim run --cap`; then, for the winner, the
 * best of the candidate PYTORCH_CUDA_ALLOC_CONF settings (or `memsim
 * tune`'s search when none is given).  The offline version of "catch OOM,
 * halve the batch, retry".  Fitting assumes memory grows with the value.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "sim/grow.h"
#include "sim/units.h"

#define FIT_MAX_CONFS 32

static void
usage_fit(FILE *fp)
{
	fprintf(fp,
		"usage: memsim fit --cap BYTES --vary NAME=LO..HI [OPTIONS] -- "
		"python3 SCRIPT ... {NAME} ...\n"
		"       memsim fit --cap BYTES --vary NAME=LO..HI --traces "
		"PATTERN [OPTIONS]\n"
		"\n"
		"Finds the largest integer NAME in [LO, HI] whose recording (memsim "
		"record, with\n"
		"{NAME} replaced in the command) replays under the cap without "
		"running out of\n"
		"memory, by bisection (memory is assumed to grow with NAME).  For "
		"the winner it\n"
		"prints the peak reserved and allocated, the margin to the cap, "
		"and the best\n"
		"--alloc-conf of the candidates (lowest peak reserved without an "
		"OOM); with no\n"
		"candidates, `memsim tune` searches them.\n"
		"\n"
		"options:\n"
		"      --cap BYTES          the per-process cap (required)\n"
		"      --vary NAME=LO..HI   the setting and its range (required)\n"
		"  -c, --alloc-conf CONF    a candidate PYTORCH_CUDA_ALLOC_CONF "
		"(repeatable)\n"
		"  -p, --policy NAME        the policy (default pytorch)\n"
		"  -k, --keep DIR           keep the recordings in DIR "
		"(NAME-VALUE.csv)\n"
		"  -t, --traces PATTERN     no recording: the traces already "
		"recorded, PATTERN\n"
		"                           with {NAME} for the value "
		"(gpt-{B}.csv)\n"
		"      --fake | --gpu, --device, --amp, --checkpoint, "
		"--world-size, --rank,\n"
		"      --dynamic-fraction    passed to memsim record\n"
		"  -h, --help               this help\n");
}

/* Runs av, its stdout into a malloc'd string; returns the exit status. */
static int
fit_capture(char *const *av, char **out)
{
	int fd[2];
	if (pipe(fd) < 0)
		msim_cli_die("fit: pipe: %s", strerror(errno));
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		msim_cli_die("fit: fork: %s", strerror(errno));
	if (pid == 0) {
		close(fd[0]);
		if (dup2(fd[1], STDOUT_FILENO) < 0)
			_exit(127);
		execv(av[0], av);
		_exit(127);
	}
	close(fd[1]);
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	if (!buf)
		msim_cli_die("out of memory");
	for (;;) {
		if (MSIM_GROW(buf, cap, len + 2, 4096))
			msim_cli_die("out of memory");
		ssize_t r = read(fd[0], buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	close(fd[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			msim_cli_die("fit: waitpid: %s", strerror(errno));
	*out = buf;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int64_t
fit_json_int(const char *json, const char *key)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	const char *p = strstr(json, pat);
	if (!p)
		return -1;
	return strtoll(p + strlen(pat), NULL, 10);
}

typedef struct fit_result_s {
	int64_t reserved, allocated, ooms;
} fit_result_t;

static const char *self_exe;

/* Replays trace under cap; dies if the replay fails. */
static void
fit_replay(const char *trace, uint64_t cap, const char *policy,
	   const char *conf, fit_result_t *r)
{
	char capb[32];
	snprintf(capb, sizeof(capb), "%" PRIu64, cap);
	char *av[16];
	int n = 0;
	av[n++] = (char *)self_exe;
	av[n++] = "run";
	av[n++] = "--json";
	av[n++] = "--cap";
	av[n++] = capb;
	if (policy) {
		av[n++] = "--policy";
		av[n++] = (char *)policy;
	}
	if (conf && *conf) {
		av[n++] = "--alloc-conf";
		av[n++] = (char *)conf;
	}
	av[n++] = (char *)trace;
	av[n] = NULL;
	char *out;
	int rc = fit_capture(av, &out);
	r->reserved = fit_json_int(out, "reserved_bytes.all.peak");
	r->allocated = fit_json_int(out, "allocated_bytes.all.peak");
	r->ooms = fit_json_int(out, "num_ooms");
	free(out);
	if (rc != 0 || r->reserved < 0 || r->ooms < 0)
		msim_cli_die("fit: replaying %s failed (memsim run exit %d)",
			     trace, rc);
}

/* The command (or a --traces pattern) with every {name} replaced by
 * value. */
static char **
fit_subst(char **cmd, int ncmd, const char *name, long value)
{
	char val[32];
	snprintf(val, sizeof(val), "%ld", value);
	const char *v = val;
	return msim_cli_record_subst(cmd, ncmd, &name, &v, 1);
}

static void
fit_free(char **v, int n)
{
	msim_cli_record_subst_free(v, n);
}

typedef struct fit_s {
	uint64_t cap;
	const char *name, *policy, *dir, *pattern;
	char **cmd;
	int ncmd;
	char **ropt;
	int nropt;
	int tries;
} fit_t;

/* Records the script at value; 1 if it fits, 0 if not. */
static int
fit_try(fit_t *f, long value, fit_result_t *r)
{
	char trace[4096];
	if (f->pattern) {
		char *pat = (char *)f->pattern;
		char **p = fit_subst(&pat, 1, f->name, value);
		snprintf(trace, sizeof(trace), "%s", p[0]);
		fit_free(p, 1);
		if (access(trace, R_OK) != 0)
			msim_cli_die("fit: %s: %s", trace, strerror(errno));
		f->tries++;
		fit_replay(trace, f->cap, f->policy, NULL, r);
		fprintf(stderr, "memsim: fit: %s=%ld: peak reserved %" PRId64
			"%s\n", f->name, value, r->reserved,
			r->ooms ? ", out of memory" : "");
		return r->ooms == 0;
	}
	snprintf(trace, sizeof(trace), "%s/%s-%ld.csv", f->dir, f->name,
		 value);
	char **cmd = fit_subst(f->cmd, f->ncmd, f->name, value);
	fprintf(stderr, "memsim: fit: recording %s=%ld\n", f->name, value);
	int rc = msim_cli_record(trace, f->ropt, f->nropt, cmd, f->ncmd, 1);
	fit_free(cmd, f->ncmd);
	if (rc != 0)
		msim_cli_die("fit: recording %s=%ld failed (exit %d)", f->name,
			     value, rc);
	f->tries++;
	fit_replay(trace, f->cap, f->policy, NULL, r);
	char mb[2][32];
	msim_format_bytes((uint64_t)r->reserved, mb[0], sizeof(mb[0]));
	fprintf(stderr, "memsim: fit: %s=%ld: peak reserved %s%s\n", f->name,
		value, mb[0], r->ooms ? ", out of memory" : "");
	(void)mb[1];
	return r->ooms == 0;
}

int
msim_cmd_fit(int argc, char **argv)
{
	enum { O_CAP = 256, O_VARY, O_FAKE, O_GPU, O_DEVICE, O_AMP, O_CKPT,
	       O_WS, O_RANK, O_FRAC };
	static const struct option longopts[] = {
		{"cap", required_argument, NULL, O_CAP},
		{"vary", required_argument, NULL, O_VARY},
		{"alloc-conf", required_argument, NULL, 'c'},
		{"policy", required_argument, NULL, 'p'},
		{"keep", required_argument, NULL, 'k'},
		{"traces", required_argument, NULL, 't'},
		{"fake", no_argument, NULL, O_FAKE},
		{"gpu", no_argument, NULL, O_GPU},
		{"device", required_argument, NULL, O_DEVICE},
		{"amp", required_argument, NULL, O_AMP},
		{"checkpoint", required_argument, NULL, O_CKPT},
		{"world-size", required_argument, NULL, O_WS},
		{"rank", required_argument, NULL, O_RANK},
		{"dynamic-fraction", required_argument, NULL, O_FRAC},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char *const flag[] = {"--device", "--amp", "--checkpoint",
					   "--world-size", "--rank",
					   "--dynamic-fraction"};
	fit_t f = {0};
	const char *vary = NULL, *keep = NULL;
	const char *confs[FIT_MAX_CONFS];
	int nconf = 0;
	char *ropt[32];
	int c;
	optind = 1;
	while ((c = msim_cli_getopt(argc, argv, "+c:p:k:t:h", longopts)) !=
	       -1) {
		switch (c) {
		case O_CAP:
			f.cap = msim_cli_bytes("--cap", optarg);
			break;
		case O_VARY:
			vary = optarg;
			break;
		case 'c':
			if (nconf == FIT_MAX_CONFS)
				msim_cli_die("fit: more than %d --alloc-conf",
					     FIT_MAX_CONFS);
			confs[nconf++] = optarg;
			break;
		case 'p':
			f.policy = optarg;
			break;
		case 'k':
			keep = optarg;
			break;
		case 't':
			f.pattern = optarg;
			break;
		case O_FAKE:
			ropt[f.nropt++] = "--fake";
			break;
		case O_GPU:
			ropt[f.nropt++] = "--gpu";
			break;
		case O_DEVICE: case O_AMP: case O_CKPT: case O_WS: case O_RANK:
		case O_FRAC:
			if (f.nropt > 28)
				msim_cli_die("fit: too many options");
			ropt[f.nropt++] = (char *)flag[c - O_DEVICE];
			ropt[f.nropt++] = optarg;
			break;
		case 'h':
			usage_fit(stdout);
			return 0;
		default:
			usage_fit(stderr);
			return 2;
		}
	}
	if (!f.cap || !vary) {
		fprintf(stderr, "memsim: fit: --cap and --vary are required\n");
		usage_fit(stderr);
		return 2;
	}
	char name[64];
	long lo, hi;
	const char *eq = strchr(vary, '=');
	char *end;
	if (!eq || eq == vary || (size_t)(eq - vary) >= sizeof(name))
		msim_cli_die("fit: --vary '%s': expected NAME=LO..HI", vary);
	memcpy(name, vary, (size_t)(eq - vary));
	name[eq - vary] = '\0';
	errno = 0;
	lo = strtol(eq + 1, &end, 10);
	if (errno || end == eq + 1 || strncmp(end, "..", 2))
		msim_cli_die("fit: --vary '%s': expected NAME=LO..HI", vary);
	const char *h = end + 2;
	hi = strtol(h, &end, 10);
	if (errno || end == h || *end || lo > hi)
		msim_cli_die("fit: --vary '%s': expected integers LO <= HI",
			     vary);
	f.name = name;
	f.cmd = argv + optind;
	f.ncmd = argc - optind;
	f.ropt = ropt;
	bool found = false;
	if (f.pattern) {
		if (f.ncmd > 0)
			msim_cli_die("fit: give --traces or a command, not both");
		char *pat = (char *)f.pattern;
		found = msim_cli_record_has(&pat, 1, name);
		keep = ".";
	} else if (f.ncmd < 1) {
		msim_cli_die("fit: no command after '--'");
	}
	if (!found && !msim_cli_record_has(f.cmd, f.ncmd, name))
		msim_cli_die("fit: the command has no {%s} to vary", name);
	static char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl > 0) {
		self[sl] = '\0';
		self_exe = self;
	} else {
		msim_cli_die("fit: cannot find the memsim program");
	}
	/* recordings (unless kept) and tune's database; removed on every
	 * way out, msim_cli_die() included */
	const char *tmpdir = msim_cli_scratch("memsim-fit");
	f.dir = keep ? keep : tmpdir;

	fit_result_t r, best_r = {0};
	long best = lo - 1;
	if (fit_try(&f, lo, &r)) {
		best = lo;
		best_r = r;
		if (lo < hi && fit_try(&f, hi, &r)) {
			best = hi;
			best_r = r;
		} else {
			long a = lo, b = hi; /* a fits, b does not */
			while (b - a > 1) {
				long m = a + (b - a) / 2;
				if (fit_try(&f, m, &r)) {
					a = m;
					best_r = r;
				} else {
					b = m;
				}
			}
			best = a;
		}
	}
	char capb[32], rb[32], ab[32], mb[32];
	msim_format_bytes(f.cap, capb, sizeof(capb));
	printf("cap        %s (%" PRIu64 " bytes)\n", capb, f.cap);
	printf("recordings %d\n", f.tries);
	int rc = 0;
	if (best < lo) {
		printf("fits       none: %s=%ld already runs out of memory\n",
		       name, lo);
		rc = 1;
	} else {
		msim_format_bytes((uint64_t)best_r.reserved, rb, sizeof(rb));
		msim_format_bytes((uint64_t)best_r.allocated, ab, sizeof(ab));
		msim_format_bytes(f.cap - (uint64_t)best_r.reserved, mb,
			       sizeof(mb));
		printf("largest    %s=%ld%s\n", name, best,
		       best == hi ? " (the top of the range)" : "");
		printf("peak       reserved %s, allocated %s (default "
		       "settings)\n", rb, ab);
		printf("margin     %s (%.1f%% of the cap)\n", mb,
		       100.0 * (double)(f.cap - (uint64_t)best_r.reserved) /
			       (double)f.cap);
		char trace[4096];
		if (f.pattern) {
			char *pat = (char *)f.pattern;
			char **p = fit_subst(&pat, 1, name, best);
			snprintf(trace, sizeof(trace), "%s", p[0]);
			fit_free(p, 1);
		} else {
			snprintf(trace, sizeof(trace), "%s/%s-%ld.csv", f.dir,
				 name, best);
		}
		if (nconf > 0) {
			const char *bc = "";
			fit_result_t bcr = best_r;
			for (int i = 0; i < nconf; i++) {
				fit_replay(trace, f.cap, f.policy, confs[i],
					   &r);
				msim_format_bytes((uint64_t)r.reserved, rb,
					       sizeof(rb));
				printf("candidate  %-40s reserved %s%s\n",
				       confs[i], rb,
				       r.ooms ? " (out of memory)" : "");
				if (!r.ooms && r.reserved < bcr.reserved) {
					bc = confs[i];
					bcr = r;
				}
			}
			msim_format_bytes((uint64_t)bcr.reserved, rb, sizeof(rb));
			msim_format_bytes(f.cap - (uint64_t)bcr.reserved, mb,
				       sizeof(mb));
			printf("best       PYTORCH_CUDA_ALLOC_CONF=\"%s\": "
			       "reserved %s, margin %s\n",
			       *bc ? bc : "(default)", rb, mb);
		} else {
			char db[4200], capn[32];
			snprintf(db, sizeof(db), "%s/tune.db", tmpdir);
			snprintf(capn, sizeof(capn), "%" PRIu64, f.cap);
			char *av[] = {(char *)self_exe, "tune", "--cap", capn,
				      "--db", db, trace, NULL};
			char *out;
			int trc = fit_capture(av, &out);
			/* tune's last line names its scratch database */
			char *last = strstr(out, "stored ");
			if (last && last > out)
				*last = '\0';
			printf("tune       (memsim tune --cap %s on %s=%ld)\n%s",
			       capn, name, best, out);
			free(out);
			if (trc != 0)
				fprintf(stderr, "memsim: fit: memsim tune "
					"exited %d\n", trc);
		}
	}
	return rc; /* the scratch folder goes at exit */
}
