/*
 * Recordings (lab/record.h): the recorder's launch, the {NAME}
 * substitution, and the recordings of a sweep over a command.  The child
 * tells an exec that failed through a close-on-exec pipe, so the parent
 * says why in one line and the library prints nothing.
 */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/record.h"
#include "lab/recproc.h"
#include "lab/record_int.h"
#include "lab/recserver.h"
#include "lab/symrec.h"
#include "sim/error.h"
#include "traces/symtrace.h"
#include "traces/trace.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Whether dir holds memsim_record/. */
static bool
record_has_module(const char *dir)
{
	char path[4096];
	struct stat st;
	if ((size_t)snprintf(path, sizeof(path), "%s/memsim_record/__main__.py",
			     dir) >= sizeof(path))
		return false;
	return stat(path, &st) == 0;
}

/* The folder holding memsim_record/: $MEMSIM_PYTHONPATH, else
 * PYTHON_FROM_BINDIR (configure.ac) beside the running program, so that
 * `make install prefix=DIR` and a moved prefix find their own, else the
 * first of dirs that has it. */
const char *
msim_record_module_dir(const char *const *dirs)
{
	const char *env = getenv("MEMSIM_PYTHONPATH");
	if (env && *env)
		return env;
	static char rel[4096];
	char exe[2048];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash = len > 0 ? (exe[len] = '\0', strrchr(exe, '/')) : NULL;
	if (slash && *PYTHON_FROM_BINDIR) {
		*slash = '\0';
		snprintf(rel, sizeof(rel), "%s/%s", exe, PYTHON_FROM_BINDIR);
		if (record_has_module(rel))
			return rel;
	}
	for (size_t i = 0; dirs && dirs[i]; i++)
		if (record_has_module(dirs[i]))
			return dirs[i];
	return NULL;
}

/* The innermost line of the script's own code (no library, no recorder)
 * in faulthandler's dump at PATH ('  File "F", line N in FUNC'), or "". */
static void
record_fault_line(const char *path, char *where, size_t len)
{
	FILE *fp = fopen(path, "r");
	char line[4096];
	*where = '\0';
	if (!fp)
		return;
	while (!*where && fgets(line, sizeof(line), fp))
		if (strstr(line, "File \"") &&
		    !strstr(line, "/site-packages/") &&
		    !strstr(line, "/lib/python") &&
		    !strstr(line, "File \"<") && !strstr(line, "memsim_record"))
			snprintf(where, len, "%s", line + strspn(line, " "));
	fclose(fp);
	where[strcspn(where, "\n")] = '\0';
}

/* What the end of the recorder means, in why; returns the status. */
static int
record_outcome(const msim_record_opts_t *o, const char *py, int status,
	       int how, int sig, int exec_errno, const char *where,
	       char *why, size_t whylen)
{
	if (how == MSIM_RECPROC_SIGNAL) {
		snprintf(why, whylen, "memsim got signal %d: the recording "
			 "was stopped; no trace written", sig);
		return 128 + sig;
	}
	if (how == MSIM_RECPROC_TIMEOUT) {
		snprintf(why, whylen, "the recording ran past --timeout %u "
			 "s and was stopped; no trace written", o->timeout_s);
		return 1;
	}
	if (exec_errno) {
		snprintf(why, whylen, "cannot run %s: %s", py,
			 strerror(exec_errno));
		return 127;
	}
	if (WIFSIGNALED(status)) {
		snprintf(why, whylen, "the recorder was killed by signal %d%s%s; "
			 "no trace written", WTERMSIG(status),
			 *where ? " while running " : "", where);
		return 1;
	}
	int rc = WEXITSTATUS(status);
	if (rc == 127)
		snprintf(why, whylen, "%s or its memsim_record module could "
			 "not be run", py);
	return rc;
}

int
msim_record_finish(const msim_record_opts_t *o, const char *py,
		   const char *stage, const char *out, int status, int how,
		   int sig, int exec_errno, long pid, char *why, size_t whylen)
{
	char trace[4200], fault[4300], where[4096];
	snprintf(trace, sizeof(trace), "%s/trace.csv", stage);
	/* The recorder's faulthandler file (memsim_record/__main__.py): the
	 * Python lines running if it died by a signal. */
	snprintf(fault, sizeof(fault), "%s.fault%ld", trace, pid);
	record_fault_line(fault, where, sizeof(where));
	int rc = record_outcome(o, py, status, how, sig, exec_errno, where,
				why, whylen);
	struct stat st;
	if (!rc && stat(trace, &st)) {
		snprintf(why, whylen, "the recorder ended with status 0 but "
			 "wrote no trace (did the script call os._exit()?); "
			 "no trace written");
		rc = 1;
	}
	if (!rc && msim_recproc_publish(trace, out, why, whylen))
		rc = 1;
	msim_recproc_unstage(stage);
	return rc;
}

const char *
msim_record_python(const msim_record_opts_t *o)
{
	const char *py = o->python ? o->python : getenv("MEMSIM_PYTHON");
	return py && *py ? py : NULL;
}

int
msim_record_stage(const msim_record_opts_t *o, const char *out,
		  char *const *ropt, int nropt, char *const *cmd, int ncmd,
		  const char **dir, char *stage, size_t n, char ***av,
		  char **extra, char *why, size_t whylen)
{
	why[0] = '\0';
	*av = NULL;
	*extra = NULL;
	if (!(*dir = msim_record_module_dir(o->dirs))) {
		snprintf(why, whylen, "the Python recorder (memsim_record) is "
			 "not installed; set MEMSIM_PYTHONPATH");
		return MSIM_ENOTFOUND;
	}
	const char *py = msim_record_python(o);
	/* The recorder writes in a folder of its own beside out (an
	 * absolute path: the script may change directory); out is
	 * replaced only once the recorder and all it started are gone. */
	char trace[4200];
	int rc = msim_recproc_check_out(out, cmd, ncmd, why, whylen);
	if (!rc)
		rc = msim_recproc_stage(out, stage, n, why, whylen);
	if (rc)
		return rc;
	snprintf(trace, sizeof(trace), "%s/trace.csv", stage);
	rc = msim_recproc_argv(py, trace, ropt, nropt, cmd, ncmd, av, extra,
			       why, whylen);
	if (rc)
		msim_recproc_unstage(stage);
	return rc;
}

int
msim_record_exec(const msim_record_opts_t *o, const char *out,
		 char *const *ropt, int nropt, char *const *cmd, int ncmd,
		 char *why, size_t whylen)
{
	char stage[4096], **av, *extra;
	const char *dir;
	int rc = msim_record_stage(o, out, ropt, nropt, cmd, ncmd, &dir,
				   stage, sizeof(stage), &av, &extra, why,
				   whylen);
	if (rc)
		return rc;
	int status = 0, how, sig, exec_errno;
	long pid = 0;
	rc = msim_recproc_run(av, dir, o->quiet, o->timeout_s, &status, &how,
			      &sig, &exec_errno, &pid, why, whylen);
	if (rc)
		msim_recproc_unstage(stage);
	else
		rc = msim_record_finish(o, av[0], stage, out, status, how,
					sig, exec_errno, pid, why, whylen);
	free(av);
	free(extra);
	return rc;
}

int
msim_record_signal(void)
{
	return msim_recproc_signal();
}

/* The recorder's options that a setting of fit or sweep can name. */
static const char *const record_flags[] = {
	"--amp", "--checkpoint", "--device", "--world-size", "--rank",
	"--dynamic-fraction", "--item-int", "--item-bool",
};

const char *
msim_record_flag(const char *name)
{
	for (size_t i = 0; i < NELEM(record_flags); i++)
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
msim_record_has(char *const *cmd, int ncmd, const char *name)
{
	for (int i = 0; i < ncmd; i++)
		if (record_find(cmd[i], name))
			return true;
	return false;
}

/* One word with every {names[k]} replaced, or NULL. */
static char *
record_subst_word(const char *word, const char *const *names,
		  const char *const *values, size_t n)
{
	size_t len = strlen(word) + 1;
	for (size_t k = 0; k < n; k++)
		for (const char *p = word; (p = record_find(p, names[k])); p++)
			len += strlen(values[k]);
	char *w = malloc(len), *d = w;
	if (!w)
		return NULL;
	/* one pass, left to right: a value is never read again */
	for (const char *p = word; *p;) {
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
	return w;
}

char **
msim_record_subst(char *const *cmd, int ncmd, const char *const *names,
		  const char *const *values, size_t n)
{
	char **out = calloc((size_t)ncmd + 1, sizeof(*out));
	for (int i = 0; out && i < ncmd; i++) {
		if (!(out[i] = record_subst_word(cmd[i], names, values, n))) {
			msim_record_subst_free(out, i);
			return NULL;
		}
	}
	return out;
}

void
msim_record_subst_free(char **cmd, int ncmd)
{
	for (int i = 0; cmd && i < ncmd; i++)
		free(cmd[i]);
	free(cmd);
}

/* ---------------------------------------------------------------- */
/* The recordings of a sweep: memsim sweep ... -- python3 SCRIPT {NAME} */

/* One recording name of the grid and its values. */
typedef struct rec_axis_s {
	char *name;
	const char *flag; /* the recorder's option; NULL: only {name} */
	char **v;
	size_t n;
} rec_axis_t;

struct msim_recsweep_s {
	const msim_recsweep_spec_t *spec;
	rec_axis_t *ax;
	size_t nax;
	char *dir;           /* where they are kept */
	const char **paths;  /* one a recording made (malloc'd strings) */
	const char **labels; /* "batch=2,checkpoint=sqrt"; NULL: no name */
	const char **origins; /* msim_recsweep_origins() */
	size_t n;
	size_t failed;
	long sym;            /* the axis of spec->symbolic; -1: none */
	size_t instantiated, sym_made; /* spec->symbolic's counts */
	char *why;           /* the caller's */
	size_t whylen;
};

static int
rec_fail(msim_recsweep_t *r, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
rec_fail(msim_recsweep_t *r, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why, r->whylen, fmt, ap);
	va_end(ap);
	return rc;
}

static void
rec_axis_clear(rec_axis_t *ax)
{
	for (size_t i = 0; i < ax->n; i++)
		free(ax->v[i]);
	free(ax->v);
	free(ax->name);
}

/* "name=v1,v2,..." into ax (commas inside [] kept, as the grid does). */
static int
rec_axis_parse(msim_recsweep_t *r, const char *text, rec_axis_t *ax)
{
	const char *eq = strchr(text, '=');
	if (!eq || eq == text || !eq[1])
		return rec_fail(r, MSIM_EINVAL, "--grid '%s': expected "
				"NAME=V1,V2,...", text);
	if (!(ax->name = strndup(text, (size_t)(eq - text))))
		return rec_fail(r, MSIM_ENOMEM, "out of memory");
	ax->flag = msim_record_flag(ax->name);
	for (const char *p = eq + 1;;) {
		size_t len = 0;
		int depth = 0;
		while (p[len] && (depth || p[len] != ',')) {
			depth += p[len] == '[' ? 1 : p[len] == ']' ? -1 : 0;
			len++;
		}
		if (!len)
			return rec_fail(r, MSIM_EINVAL, "--grid '%s': an "
					"empty value", text);
		char **nv = realloc(ax->v, (ax->n + 1) * sizeof(*nv));
		if (nv)
			ax->v = nv;
		if (!nv || !(nv[ax->n] = strndup(p, len)))
			return rec_fail(r, MSIM_ENOMEM, "out of memory");
		ax->n++;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

/* Every {NAME} of the command has an axis. */
static int
rec_check_names(msim_recsweep_t *r)
{
	const msim_recsweep_spec_t *s = r->spec;
	for (int i = 0; i < s->ncmd; i++) {
		for (const char *p = strchr(s->cmd[i], '{'); p;
		     p = strchr(p + 1, '{')) {
			size_t len = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz"
					    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
					    "0123456789_-");
			if (!len || p[len + 1] != '}')
				continue;
			size_t a = 0;
			while (a < r->nax && (strlen(r->ax[a].name) != len ||
					      strncmp(r->ax[a].name, p + 1,
						      len)))
				a++;
			if (a == r->nax)
				return rec_fail(r, MSIM_EINVAL, "the command's "
						"{%.*s}: no --grid "
						"%.*s=V1,V2,... gives its "
						"values", (int)len, p + 1,
						(int)len, p + 1);
		}
	}
	return 0;
}

/* Moves the grid's recording names from grid to r->ax. */
static int
rec_axes(msim_recsweep_t *r, const char **grid, size_t *ngrid)
{
	size_t keep = 0;
	for (size_t g = 0; g < *ngrid; g++) {
		rec_axis_t ax = {0};
		int rc = rec_axis_parse(r, grid[g], &ax);
		if (!rc && !ax.flag &&
		    !msim_record_has(r->spec->cmd, r->spec->ncmd, ax.name)) {
			rec_axis_clear(&ax);
			grid[keep++] = grid[g];
			continue;
		}
		for (size_t a = 0; !rc && a < r->nax; a++)
			if (!strcmp(r->ax[a].name, ax.name))
				rc = rec_fail(r, MSIM_EINVAL, "--grid %s: "
					      "given twice", ax.name);
		rec_axis_t *na = rc ? NULL
			: realloc(r->ax, (r->nax + 1) * sizeof(*na));
		if (!na) {
			rec_axis_clear(&ax);
			return rc ? rc : rec_fail(r, MSIM_ENOMEM,
						  "out of memory");
		}
		r->ax = na;
		r->ax[r->nax++] = ax;
	}
	*ngrid = keep;
	return rec_check_names(r);
}

/* The folder of the recordings: DB.recordings beside the database (kept,
 * so a sweep run again reuses them), else the scratch folder. */
static int
rec_dir(msim_recsweep_t *r)
{
	const msim_recsweep_spec_t *s = r->spec;
	if (!s->db) {
		if (!(r->dir = strdup(s->scratch ? s->scratch : ".")))
			return rec_fail(r, MSIM_ENOMEM, "out of memory");
		return 0;
	}
	size_t len = strlen(s->db) + sizeof(".recordings");
	if (!(r->dir = malloc(len)))
		return rec_fail(r, MSIM_ENOMEM, "out of memory");
	snprintf(r->dir, len, "%s.recordings", s->db);
	struct stat st;
	if (mkdir(r->dir, 0777) && (errno != EEXIST ||
				    stat(r->dir, &st) || !S_ISDIR(st.st_mode)))
		return rec_fail(r, MSIM_EIO, "%s: cannot make the folder of "
				"the recordings: %s", r->dir,
				errno == EEXIST ? "not a folder"
						: strerror(errno));
	return 0;
}

/* Into h, what the files the command names hold: an edited script (or a
 * config file it reads) is another recording.  A file up to 16 MiB by
 * its bytes, a larger one (a data set) by its size and time. */
static void
rec_hash_files(msim_hash_t *h, char *const *cmd, int ncmd)
{
	for (int i = 0; i < ncmd; i++) {
		struct stat st;
		if (stat(cmd[i], &st) || !S_ISREG(st.st_mode))
			continue;
		FILE *fp = st.st_size <= (16 << 20) ? fopen(cmd[i], "rb")
						     : NULL;
		char buf[65536];
		size_t n;
		while (fp && (n = fread(buf, 1, sizeof(buf), fp)) > 0)
			msim_hash_update(h, buf, n);
		if (fp)
			fclose(fp);
		else
			msim_hash_update(h, &st.st_mtime, sizeof(st.st_mtime));
		msim_hash_update(h, &st.st_size, sizeof(st.st_size));
	}
}

/* The file of one recording: its names for people, then the hash of the
 * exact command and recorder options it is made with, and of the files
 * the command names (rec_hash_files()). */
static char *
rec_path(const msim_recsweep_t *r, const char *label, char *const *ropt,
	 int nropt, char *const *cmd)
{
	msim_hash_t h;
	msim_hash_init(&h);
	for (int i = 0; i < nropt; i++)
		msim_hash_update(&h, ropt[i], strlen(ropt[i]) + 1);
	msim_hash_update(&h, "--", 3);
	for (int i = 0; i < r->spec->ncmd; i++)
		msim_hash_update(&h, cmd[i], strlen(cmd[i]) + 1);
	rec_hash_files(&h, cmd, r->spec->ncmd);
	char name[96];
	snprintf(name, sizeof(name), "%s", label ? label : "recording");
	for (char *c = name; *c; c++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789=,.:_-", *c))
			*c = '_';
	size_t len = strlen(r->dir) + strlen(name) + 24;
	char *path = malloc(len);
	if (path)
		snprintf(path, len, "%s/%s-%016" PRIx64 ".csv", r->dir, name,
			 msim_hash_final(&h));
	return path;
}

static void
rec_note(const msim_recsweep_t *r, int what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
rec_note(const msim_recsweep_t *r, int what, const char *fmt, ...)
{
	if (!r->spec->note)
		return;
	char line[2400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	r->spec->note(r->spec->ctx, what, line);
}

/* Keeps path (taken), label and origin (NULL: recorded) as recording
 * r->n. */
static int
rec_keep(msim_recsweep_t *r, char *path, const char *label,
	 const char *origin)
{
	const char **np = realloc(r->paths, (r->n + 1) * sizeof(*np));
	if (np)
		r->paths = np;
	const char **nl = np ? realloc(r->labels, (r->n + 1) * sizeof(*nl))
			     : NULL;
	if (nl)
		r->labels = nl;
	const char **no = nl ? realloc(r->origins, (r->n + 1) * sizeof(*no))
			     : NULL;
	if (no)
		r->origins = no;
	char *lc = no && r->nax ? strdup(label) : NULL;
	char *oc = lc && origin ? strdup(origin) : NULL;
	if (!no || (r->nax && !lc) || (origin && !oc)) {
		free(lc);
		free(path);
		return rec_fail(r, MSIM_ENOMEM, "out of memory");
	}
	r->paths[r->n] = path;
	r->labels[r->n] = lc;
	r->origins[r->n] = oc;
	r->n++;
	return 0;
}

/* The names, values, recorder options and label of combination k. */
static int
rec_combination(msim_recsweep_t *r, size_t k, const char **names,
		const char **values, char **ropt, int *nropt, char *label,
		size_t labellen)
{
	size_t len = 0, rest = k;
	*nropt = 0;
	label[0] = '\0';
	for (size_t a = r->nax; a-- > 0;) {
		names[a] = r->ax[a].name;
		values[a] = r->ax[a].v[rest % r->ax[a].n];
		rest /= r->ax[a].n;
	}
	for (size_t a = 0; a < r->nax; a++) {
		len += (size_t)snprintf(label + len, labellen - len, "%s%s=%s",
					a ? "," : "", names[a], values[a]);
		if (len >= labellen)
			return rec_fail(r, MSIM_EINVAL, "--grid: the recording "
					"names are too long");
		if (r->ax[a].flag) {
			ropt[(*nropt)++] = (char *)r->ax[a].flag;
			ropt[(*nropt)++] = (char *)values[a];
		}
	}
	return 0;
}

/* A recording of the sweep: made, running, or failed (path NULL). */
typedef struct rec_made_s {
	char *path;
	char *label;
	size_t same;  /* the combination it repeats, or its own k */
	bool reuse;   /* kept before (or repeats one): not recorded */
	/* How it was instantiated from a symbolic recording, now (reuse
	 * false) or before (its PATH.origin); NULL: recorded. */
	char *origin;
	bool kept;    /* path given to rec_keep() */
} rec_made_t;

/* Says that recording k failed (its exit status rc, why) and forgets it. */
static void
rec_failed(msim_recsweep_t *r, rec_made_t *m, int rc, const char *why)
{
	if (*why)
		rec_note(r, MSIM_RECSWEEP_FAILED, "record: %s", why);
	rec_note(r, MSIM_RECSWEEP_FAILED, "recording %s failed (memsim "
		 "record exit %d); its settings are not run",
		 r->nax ? m->label : "the command", rc);
	r->failed++;
	free(m->path);
	m->path = NULL;
}

/* What recording m's end (rc, why) means: a signal to memsim or an
 * error stops the sweep (no more recordings), a failure is counted. */
static int
rec_ended(msim_recsweep_t *r, rec_made_t *m, int rc, const char *why)
{
	if (rc < 0 || (rc && msim_record_signal()) || (rc && !m))
		return rec_fail(r, rc < 0 ? rc : MSIM_EIO, "record: %s", why);
	if (rc)
		rec_failed(r, m, rc, why);
	return 0;
}

/* The origin kept beside path (PATH.origin: one line, written when a
 * trace is instantiated there), so that a sweep run again that reuses
 * the file stores it too; NULL where there is none.  Malloc'd. */
static char *
rec_origin_read(const char *path)
{
	char name[4200], line[2048];
	snprintf(name, sizeof(name), "%s.origin", path);
	FILE *fp = fopen(name, "r");
	if (!fp)
		return NULL;
	char *got = fgets(line, sizeof(line), fp) ? line : NULL;
	fclose(fp);
	if (got)
		got[strcspn(got, "\n")] = '\0';
	return got && *got ? strdup(got) : NULL;
}

/* Keeps origin beside path (origin NULL: removes what is there, as a
 * recording replaces the file).  0, or MSIM_EIO with why. */
static int
rec_origin_write(msim_recsweep_t *r, const char *path, const char *origin)
{
	char name[4200];
	snprintf(name, sizeof(name), "%s.origin", path);
	if (!origin)
		return unlink(name) && errno != ENOENT
			? rec_fail(r, MSIM_EIO, "%s: %s", name, strerror(errno))
			: 0;
	FILE *fp = fopen(name, "w");
	if (!fp || fprintf(fp, "%s\n", origin) < 0 || fclose(fp)) {
		if (fp)
			fclose(fp);
		return rec_fail(r, MSIM_EIO, "%s: %s", name, strerror(errno));
	}
	return 0;
}

/* The file, label and reuse of combination k into made[k]. */
static int
rec_plan(msim_recsweep_t *r, size_t k, rec_made_t *made)
{
	const msim_recsweep_spec_t *s = r->spec;
	const char *names[64], *values[64];
	char *ropt[2 * 64], label[2048];
	int nropt, rc;
	if ((rc = rec_combination(r, k, names, values, ropt, &nropt, label,
				  sizeof(label))))
		return rc;
	char **cmd = msim_record_subst(s->cmd, s->ncmd, names, values, r->nax);
	rec_made_t *m = &made[k];
	m->same = k;
	m->path = cmd ? rec_path(r, r->nax ? label : NULL, ropt, nropt, cmd)
		      : NULL;
	m->label = m->path ? strdup(label) : NULL;
	msim_record_subst_free(cmd, s->ncmd);
	if (!m->label)
		return rec_fail(r, MSIM_ENOMEM, "out of memory");
	for (size_t j = 0; j < k && m->same == k; j++)
		if (made[j].path && !strcmp(made[j].path, m->path))
			m->same = j;
	struct stat st;
	m->reuse = m->same != k || (!s->force && !stat(m->path, &st));
	if (m->same == k && m->reuse)
		m->origin = rec_origin_read(m->path);
	return 0;
}

/* Starts the fork server *srv, once, before the first recording to
 * make; on failure each recording alone says why. */
static int
rec_server(msim_recsweep_t *r, msim_recserver_t **srv, bool *tried)
{
	const msim_recsweep_spec_t *s = r->spec;
	char why[1024];
	if (*tried)
		return 0;
	*tried = true;
	if (msim_recserver_new(&s->rec, s->cmd, s->ncmd, srv, why,
			       sizeof(why)) == MSIM_EIO)
		return rec_fail(r, MSIM_EIO, "record: %s", why);
	return 0;
}

/* Makes (or finds, or starts through the fork server *srv) the recording
 * of combination k, planned in made[k]; a failed one is counted and left
 * out. */
static int
rec_one(msim_recsweep_t *r, size_t k, size_t total, msim_recserver_t **srv,
	bool *tried, rec_made_t *made)
{
	const msim_recsweep_spec_t *s = r->spec;
	rec_made_t *m = &made[k];
	const char *who = r->nax ? m->label : "the command";
	rec_note(r, MSIM_RECSWEEP_NOTE, "recording %zu/%zu (%s): %s", k + 1,
		 total, who, m->reuse && m->origin ? "instantiated before, "
		 "reused" : m->origin ? "instantiated from the symbolic "
		 "recording" : m->reuse ? "made before, reused"
		 : "recording...");
	if (m->reuse || m->origin)
		return 0;
	const char *names[64], *values[64];
	char *ropt[2 * 64], label[2048];
	int nropt, rc;
	if ((rc = rec_origin_write(r, m->path, NULL)) ||
	    (rc = rec_combination(r, k, names, values, ropt, &nropt, label,
				  sizeof(label))) ||
	    (rc = rec_server(r, srv, tried)))
		return rc;
	char **cmd = msim_record_subst(s->cmd, s->ncmd, names, values, r->nax);
	if (!cmd)
		return rec_fail(r, MSIM_ENOMEM, "out of memory");
	char why[1024] = "";
	if (*srv)
		rc = msim_recserver_submit(*srv, (int)k, m->path, ropt, nropt,
					   cmd, s->ncmd, why, sizeof(why));
	else
		rc = msim_record_exec(&s->rec, m->path, ropt, nropt, cmd,
				      s->ncmd, why, sizeof(why));
	msim_record_subst_free(cmd, s->ncmd);
	return rec_ended(r, m, rc, why);
}

/* Waits for one recording of the fork server to end. */
static int
rec_wait(msim_recsweep_t *r, msim_recserver_t *srv, rec_made_t *made)
{
	char why[1024];
	int id, rc = msim_recserver_wait(srv, &id, why, sizeof(why));
	return rec_ended(r, id >= 0 ? &made[id] : NULL, rc, why);
}

/* One group of spec->symbolic: the combinations that differ only in its
 * value, their command with the other names given (and {NAME} kept),
 * their recorder options and the other names' label. */
typedef struct rec_group_s {
	msim_recsweep_t *r;
	char **cmd;
	char *ropt[2 * 64];
	int nropt;
	char label[2048];   /* "checkpoint=sqrt", or "" */
} rec_group_t;

/* The file of the symbolic recording at v (msim_symrec_spec_t.path):
 * beside the others, named by the group and hashed as they are. */
static void
rec_sym_path(void *ctx, long v, char *const *ropt, int nropt,
	     char *const *cmd, char *buf, size_t n)
{
	rec_group_t *g = ctx;
	msim_recsweep_t *r = g->r;
	char name[2200];
	snprintf(name, sizeof(name), "symbolic-%s=%ld%s%s",
		 r->ax[r->sym].name, v, g->label[0] ? "," : "", g->label);
	char *path = rec_path(r, name, ropt, nropt, cmd);
	snprintf(buf, n, "%s", path ? path : "");
	free(path);
}

static void
rec_sym_note(void *ctx, const char *line)
{
	rec_group_t *g = ctx;
	rec_note(g->r, MSIM_RECSWEEP_NOTE, "%s%s%s", g->label[0] ? g->label
		 : "", g->label[0] ? ": " : "", line);
}

/* The value of combination k on spec->symbolic's axis. */
static long
rec_sym_value(const msim_recsweep_t *r, size_t k)
{
	size_t stride = 1;
	for (size_t a = r->nax; --a > (size_t)r->sym;)
		stride *= r->ax[a].n;
	const rec_axis_t *ax = &r->ax[r->sym];
	return strtol(ax->v[k / stride % ax->n], NULL, 10);
}

static int
rec_long_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* The group of combination k0 (its value on the axis the first):
 * recorded symbolic where three or more of its values are to be made,
 * each value where the trace holds instantiated into its file. */
static int
rec_sym_group(msim_recsweep_t *r, size_t k0, size_t total, rec_made_t *made,
	      msim_recserver_t **srv, bool *tried)
{
	const msim_recsweep_spec_t *s = r->spec;
	const rec_axis_t *ax = &r->ax[r->sym];
	size_t stride = total, n = 0;
	for (size_t a = 0; a <= (size_t)r->sym; a++)
		stride /= r->ax[a].n;
	long v[1024];
	for (size_t j = 0; j < ax->n && n < 1024; j++) {
		const rec_made_t *m = &made[k0 + j * stride];
		if (!m->reuse && rec_sym_value(r, k0 + j * stride) >= 2)
			v[n++] = rec_sym_value(r, k0 + j * stride);
	}
	rec_group_t g = {.r = r};
	const char *names[64], *values[64];
	char label[2048];
	int rc = rec_combination(r, k0, names, values, g.ropt, &g.nropt, label,
				 sizeof(label));
	size_t len = 0;
	for (size_t a = 0; !rc && a < r->nax; a++)
		if (a != (size_t)r->sym)
			len += (size_t)snprintf(g.label + len,
						sizeof(g.label) - len, "%s%s=%s",
						len ? "," : "", names[a],
						values[a]);
	if (rc)
		return rc;
	if (n < 3) {
		rec_sym_note(&g, n ? "symbolic: not used: fewer than three "
			     "values to record (two symbolic recordings "
			     "would make them)" : "symbolic: no value from 2 "
			     "up to record (each made before)");
		return 0;
	}
	qsort(v, n, sizeof(*v), rec_long_cmp);
	/* the other names given, {NAME} kept */
	const char *on[64], *ov[64];
	size_t no = 0;
	for (size_t a = 0; a < r->nax; a++)
		if (a != (size_t)r->sym) {
			on[no] = names[a];
			ov[no++] = values[a];
		}
	if ((rc = rec_server(r, srv, tried)))
		return rc;
	if (!(g.cmd = msim_record_subst(s->cmd, s->ncmd, on, ov, no)))
		return rec_fail(r, MSIM_ENOMEM, "out of memory");
	msim_symrec_spec_t ss = {
		.rec = &s->rec, .srv = *srv, .cmd = g.cmd, .ncmd = s->ncmd,
		.ropt = g.ropt, .nropt = g.nropt, .name = ax->name,
		.lo = v[0], .hi = v[n - 1], .at = v[n / 2],
		.path = rec_sym_path, .ctx = &g, .reuse = !s->force,
		.note = rec_sym_note,
	};
	msim_symrec_t res;
	rc = msim_symrec_make(&ss, &res, r->why, r->whylen);
	msim_record_subst_free(g.cmd, s->ncmd);
	r->sym_made += rc ? 0 : (size_t)res.recordings;
	for (size_t j = 0; !rc && j < ax->n; j++) {
		rec_made_t *m = &made[k0 + j * stride];
		long x = rec_sym_value(r, k0 + j * stride);
		if (m->reuse || !msim_symrec_holds(&res, x))
			continue;
		char why[1024], origin[2048];
		if (msim_symtrace_instantiate(res.trace, x, m->path, why,
					      sizeof(why))) {
			rec_sym_note(&g, why);
			continue;
		}
		snprintf(origin, sizeof(origin), "instantiated at %s=%ld from "
			 "%.1000s, which holds for %s=%ld..%ld (recorded at "
			 "%ld and %ld, the same trace)", ax->name, x, res.trace,
			 ax->name, res.lo, res.hi, res.v[0], res.v[1]);
		if (!(m->origin = strdup(origin)))
			return rec_fail(r, MSIM_ENOMEM, "out of memory");
		if ((rc = rec_origin_write(r, m->path, origin)))
			return rc;
		r->instantiated++;
	}
	return rc;
}

/* spec->symbolic: each group of combinations (the other names' values)
 * recorded symbolic, before the recordings one by one. */
static int
rec_symbolic(msim_recsweep_t *r, size_t total, rec_made_t *made,
	     msim_recserver_t **srv, bool *tried)
{
	size_t stride = total;
	for (size_t a = 0; a <= (size_t)r->sym; a++)
		stride /= r->ax[a].n;
	size_t block = stride * r->ax[r->sym].n;
	int rc = 0;
	for (size_t k0 = 0; !rc && k0 < total; k0++)
		if (k0 % block < stride)
			rc = rec_sym_group(r, k0, total, made, srv, tried);
	return rc;
}

/* Makes the total recordings, up to jobs at once through the fork
 * server (each alone without one), then keeps those made, in order. */
static int
rec_all(msim_recsweep_t *r, size_t total)
{
	const msim_recsweep_spec_t *s = r->spec;
	rec_made_t *made = calloc(total, sizeof(*made));
	if (!made)
		return rec_fail(r, MSIM_ENOMEM, "out of memory");
	msim_recserver_t *srv = NULL;
	bool tried = false;
	int jobs = s->jobs > 1 ? s->jobs : 1, rc = 0;
	for (size_t k = 0; !rc && k < total; k++)
		rc = rec_plan(r, k, made);
	if (!rc && r->sym >= 0)
		rc = rec_symbolic(r, total, made, &srv, &tried);
	for (size_t k = 0; !rc && k < total; k++) {
		rc = rec_one(r, k, total, &srv, &tried, made);
		while (!rc && srv && msim_recserver_running(srv) >= jobs)
			rc = rec_wait(r, srv, made);
	}
	while (!rc && srv && msim_recserver_running(srv))
		rc = rec_wait(r, srv, made);
	msim_recserver_destroy(srv);
	if (!rc && r->sym >= 0)
		rec_note(r, MSIM_RECSWEEP_NOTE, "symbolic: %zu of %zu "
			 "recordings instantiated (%zu made with --symbolic)",
			 r->instantiated, total, r->sym_made);
	for (size_t k = 0; !rc && k < total; k++) {
		rec_made_t *m = &made[k];
		if (!m->path || !made[m->same].path)
			continue; /* failed, or repeats one that failed */
		char *path = m->same == k ? m->path : strdup(m->path);
		rc = path ? rec_keep(r, path, m->label,
				     made[m->same].origin)
			  : rec_fail(r, MSIM_ENOMEM, "out of memory");
		m->kept = m->same == k; /* rec_keep() took its path */
	}
	for (size_t k = 0; k < total; k++) {
		if (!made[k].kept)
			free(made[k].path);
		free(made[k].label);
		free(made[k].origin);
	}
	free(made);
	return rc;
}

/* spec->symbolic: its axis, a {NAME} of the command with integers. */
static int
rec_sym_axis(msim_recsweep_t *r)
{
	const char *name = r->spec->symbolic;
	r->sym = -1;
	if (!name)
		return 0;
	for (size_t a = 0; a < r->nax; a++) {
		const rec_axis_t *ax = &r->ax[a];
		if (strcmp(ax->name, name))
			continue;
		if (!msim_record_has(r->spec->cmd, r->spec->ncmd, name))
			return rec_fail(r, MSIM_EINVAL, "--symbolic %s: a "
					"recorder option, not a {%s} of the "
					"command", name, name);
		for (size_t i = 0; i < ax->n; i++) {
			char *end;
			errno = 0;
			long x = strtol(ax->v[i], &end, 10);
			if (errno || end == ax->v[i] || *end || x < 0)
				return rec_fail(r, MSIM_EINVAL, "--symbolic "
						"%s: '%s' is not a whole "
						"number", name, ax->v[i]);
		}
		r->sym = (long)a;
		return 0;
	}
	return rec_fail(r, MSIM_EINVAL, "--symbolic %s: the command has no "
			"{%s} with a --grid %s=V1,V2,... (memsim sweep "
			"--symbolic NAME --grid NAME=... -- python3 SCRIPT "
			"{NAME})", name, name, name);
}

int
msim_recsweep_make(const msim_recsweep_spec_t *spec, const char **grid,
		   size_t *ngrid, msim_recsweep_t **out, char *why,
		   size_t whylen)
{
	*out = NULL;
	msim_recsweep_t *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(why, whylen, "out of memory");
		return MSIM_ENOMEM;
	}
	*r = (msim_recsweep_t){.spec = spec, .why = why, .whylen = whylen};
	int rc = 0;
	size_t total = 1;
	if (spec->ncmd < 1)
		rc = rec_fail(r, MSIM_EINVAL, "no command after '--' (memsim "
			      "sweep ... -- python3 SCRIPT ARGS...)");
	if (!rc)
		rc = rec_axes(r, grid, ngrid);
	if (!rc)
		rc = rec_sym_axis(r);
	if (!rc && r->nax > 64)
		rc = rec_fail(r, MSIM_EINVAL, "--grid: more than 64 recording "
			      "names");
	for (size_t a = 0; !rc && a < r->nax; a++) {
		if (total > 100000 / r->ax[a].n)
			rc = rec_fail(r, MSIM_EINVAL, "--grid: more than "
				      "100000 recordings");
		total *= r->ax[a].n;
	}
	if (!rc)
		rc = rec_dir(r);
	if (!rc)
		rc = rec_all(r, total);
	if (!rc && !r->n)
		rc = rec_fail(r, MSIM_EINVAL, "no recording was made; nothing "
			      "to sweep");
	if (rc) {
		msim_recsweep_destroy(r);
		return rc;
	}
	r->spec = NULL; /* the caller's, gone after this call */
	*out = r;
	return 0;
}

size_t
msim_recsweep_count(const msim_recsweep_t *r)
{
	return r->n;
}

const char *const *
msim_recsweep_paths(const msim_recsweep_t *r)
{
	return r->paths;
}

const char *const *
msim_recsweep_labels(const msim_recsweep_t *r)
{
	return r->labels;
}

size_t
msim_recsweep_failed(const msim_recsweep_t *r)
{
	return r->failed;
}

const char *const *
msim_recsweep_origins(const msim_recsweep_t *r)
{
	return r->origins;
}

size_t
msim_recsweep_instantiated(const msim_recsweep_t *r)
{
	return r->instantiated;
}

void
msim_recsweep_destroy(msim_recsweep_t *r)
{
	if (!r)
		return;
	for (size_t a = 0; a < r->nax; a++)
		rec_axis_clear(&r->ax[a]);
	free(r->ax);
	for (size_t i = 0; i < r->n; i++) {
		free((char *)r->paths[i]);
		free((char *)r->labels[i]);
		free((char *)r->origins[i]);
	}
	free(r->paths);
	free(r->labels);
	free(r->origins);
	free(r->dir);
	free(r);
}
