/* Running the gnuplot scripts of plots/ on data exported from SQLite. */
#include <config.h>

#include <errno.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plots/plot.h"
#include "sim/error.h"

extern char **environ;

static bool
has_script(const char *dir)
{
	char path[4096];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/curve.gp", dir);
	return stat(path, &sb) == 0;
}

const char *
msim_plot_dir(const char *const *dirs)
{
	const char *env = getenv("MEMSIM_PLOTS_DIR");
	if (env && *env)
		return env;
	for (; dirs && *dirs; dirs++)
		if (has_script(*dirs))
			return *dirs;
	return NULL;
}

static const char *
plot_ext(const char *out)
{
	const char *dot = strrchr(out, '.');
	if (!dot)
		return NULL;
	if (!strcmp(dot, ".png") || !strcmp(dot, ".svg") || !strcmp(dot, ".pdf"))
		return dot + 1;
	return NULL;
}

/* Runs gnuplot -c script args...; returns 0 or MSIM_EIO with why. */
static int
run_gnuplot(const char *gnuplot, char *const argv[], char *why, size_t whylen)
{
	pid_t pid;
	int rc = posix_spawnp(&pid, gnuplot, NULL, NULL, argv, environ);
	if (rc) {
		snprintf(why, whylen, "cannot run %s: %s", gnuplot,
			 strerror(rc));
		return MSIM_EIO;
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			snprintf(why, whylen, "waiting for gnuplot: %s",
				 strerror(errno));
			return MSIM_EIO;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(why, whylen, "gnuplot failed (see its message above)");
		return MSIM_EIO;
	}
	return 0;
}

/* Whether gnuplot, out's extension and the scripts are there. */
static int
plot_ready(const char *plots_dir, const char *gnuplot, const char *out,
	   char *why, size_t whylen)
{
	if (!gnuplot || !*gnuplot || !strcmp(gnuplot, "no")) {
		snprintf(why, whylen, "gnuplot is not installed (Debian: "
			 "apt-get install gnuplot-nox)");
		return MSIM_ENOTSUP;
	}
	if (!plot_ext(out)) {
		snprintf(why, whylen, "%s: the plot must end in .png, .svg or "
			 ".pdf", out);
		return MSIM_EINVAL;
	}
	if (!plots_dir) {
		snprintf(why, whylen, "cannot find the gnuplot scripts (set "
			 "MEMSIM_PLOTS_DIR)");
		return MSIM_ENOTFOUND;
	}
	return 0;
}

int
msim_plot_compare(const char *plots_dir, const char *gnuplot,
		  const char *summary, const char *timelines, const char *out,
		  const char *title, char *why, size_t whylen)
{
	int rc = plot_ready(plots_dir, gnuplot, out, why, whylen);
	if (rc)
		return rc;
	char script[4096];
	snprintf(script, sizeof(script), "%s/compare.gp", plots_dir);
	char *argv[] = {(char *)gnuplot, "-c", script, (char *)summary,
			(char *)timelines, (char *)out,
			(char *)(title ? title : ""), NULL};
	return run_gnuplot(gnuplot, argv, why, whylen);
}

int
msim_plot_curve(msim_db_t *db, int64_t run_id, const char *plots_dir,
		const char *gnuplot, const char *out, const char *title,
		char *why, size_t whylen)
{
	if (!gnuplot || !*gnuplot || !strcmp(gnuplot, "no")) {
		snprintf(why, whylen, "gnuplot is not installed (Debian: "
			 "apt-get install gnuplot-nox); the data is in the "
			 "database");
		return MSIM_ENOTSUP;
	}
	if (!plot_ext(out)) {
		snprintf(why, whylen, "%s: the plot must end in .png, .svg or "
			 ".pdf", out);
		return MSIM_EINVAL;
	}
	if (!plots_dir) {
		snprintf(why, whylen, "cannot find the gnuplot scripts (set "
			 "MEMSIM_PLOTS_DIR)");
		return MSIM_ENOTFOUND;
	}
	char csv[] = "/tmp/memsim-curve-XXXXXX";
	int fd = mkstemp(csv);
	if (fd < 0) {
		snprintf(why, whylen, "cannot create a temporary file: %s",
			 strerror(errno));
		return MSIM_EIO;
	}
	close(fd);
	int rc = msim_db_export_timeline(db, run_id, csv);
	if (rc) {
		snprintf(why, whylen, "%s", msim_db_errmsg(db));
		unlink(csv);
		return rc;
	}
	char script[4096];
	snprintf(script, sizeof(script), "%s/curve.gp", plots_dir);
	char *argv[] = {(char *)gnuplot, "-c", script, csv, (char *)out,
			(char *)(title ? title : ""), NULL};
	rc = run_gnuplot(gnuplot, argv, why, whylen);
	unlink(csv);
	return rc;
}
