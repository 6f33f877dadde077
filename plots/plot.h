/*
 * Figures from the results database through gnuplot: the code exports a
 * run's data as CSV and runs one of the installed scripts in plots/ as
 * `gnuplot -c SCRIPT DATA.csv OUT TITLE`; the scripts also run by hand on
 * exported data.  The terminal follows OUT's extension (.png, .svg, .pdf).
 */
#ifndef MSIM_PLOTS_PLOT_H
#define MSIM_PLOTS_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "sim/results.h"

/* The folder holding the gnuplot scripts: $MEMSIM_PLOTS_DIR, else the first
 * of dirs (NULL-terminated) that has curve.gp.  Returns NULL if none. */
const char *msim_plot_dir(const char *const *dirs);

/*
 * msim_plot_dir() for a program whose scripts were installed in installed
 * and whose source tree's are in src, in this order: a binary run from
 * its build tree (config.status beside it) takes src, not an older
 * installation's; else BIN/../share/memsim/plots next to the running
 * binary, so a tree installed with DESTDIR, or a prefix moved elsewhere,
 * finds its own; else installed, and last src.
 */
const char *msim_plot_dir_for(const char *installed, const char *src);

/* The checks every plot makes (gnuplot there, a known extension, the
 * scripts found), for a command to make before its work.  Returns 0, or
 * an error with why filled. */
int msim_plot_check(const char *plots_dir, const char *gnuplot,
		    const char *out, char *why, size_t whylen);

/* Runs plots/NAME.gp on data into out (after the checks every plot makes:
 * gnuplot there, a known extension, the scripts found).  Returns 0, or an
 * error with why filled. */
int msim_plot_run(const char *plots_dir, const char *gnuplot,
		  const char *name, const char *data, const char *out,
		  const char *title, char *why, size_t whylen);

/*
 * The overlaid plot of `memsim compare`: runs compare.gp on summary (no
 * header; one row per policy: policy,peak_reserved,peak_allocated,
 * frag_at_peak,device_calls,time_ms) and timelines (one block per policy, separated by
 * two blank lines, each headed "request,<policy>", then request,reserved
 * rows).  Returns 0, or an error with why filled.
 */
int msim_plot_compare(const char *plots_dir, const char *gnuplot,
		      const char *summary, const char *timelines,
		      const char *out, const char *title, char *why,
		      size_t whylen);

/* The figures of `memsim plot`. */
enum {
	MSIM_PLOT_CURVE = 0, /* one run: allocated, reserved, fragmentation */
	MSIM_PLOT_OVERLAY,   /* several runs' reserved bytes overlaid */
	MSIM_PLOT_SWEEP,     /* a figure against a setting, a line per value */
	MSIM_PLOT_SEGMENTS,  /* the segments live at peak reserved */
};

/* Parses "curve", "overlay", "sweep", "segments"; returns the kind or -1. */
int msim_plot_kind(const char *name);

/* What to plot. */
typedef struct msim_plot_req_s {
	int kind;                 /* MSIM_PLOT_* */
	const int64_t *runs;      /* the runs (curve, segments: the first) */
	size_t nruns;
	/* sweep: a key the runs vary (an allocator parameter, a recording's,
	 * model's or strategy's key, cap, policy); NULL: the first that
	 * varies (recording and model keys first, then the allocator's in
	 * its table's order).  A key given that does not vary is refused. */
	const char *x_key;
	/* sweep: one line per value of this key; NULL: one per value of the
	 * other keys that vary ("batch=8 expandable_segments:True"), the
	 * trace's name first for plain traces that differ. */
	const char *series_key;
	const char *y_col;        /* sweep: a runs column; NULL =
				   * peak_reserved_bytes */
	const char *out;          /* .png, .svg or .pdf */
	const char *title;        /* NULL: made up from the runs */
	const char *size;         /* "WxH" pixels; NULL: 1200x700 */
	const char *plots_dir;    /* msim_plot_dir() */
	const char *gnuplot;      /* the program; "no" or NULL: missing */
} msim_plot_req_t;

/*
 * The runs a plot shows when none is named: curve and segments the
 * newest run; overlay the runs of the newest run's trace; sweep the runs
 * of the newest sweep (all its shards).  *runs_out is malloc'ed.  Returns
 * 0, MSIM_ENOTFOUND (an empty database) or MSIM_EDB.
 */
int msim_plot_default_runs(msim_db_t *db, int kind, int64_t **runs_out,
			   size_t *n_out);

/* The runs of sweep_id (and of the other shards of the same sweep). */
int msim_plot_sweep_runs(msim_db_t *db, int64_t sweep_id, int64_t **runs_out,
			 size_t *n_out);

/*
 * Writes the data file of r's figure to csv_path, the file the script
 * reads (for plotting by hand: gnuplot -c plots/<kind>.gp CSV OUT TITLE).
 * title_out (may be NULL) receives a title made up from the runs.
 * Returns 0 or an error with why filled.
 */
int msim_plot_export(msim_db_t *db, const msim_plot_req_t *r,
		     const char *csv_path, char *title_out, size_t titlelen,
		     char *why, size_t whylen);

/* Draws r's figure into r->out through gnuplot.  Returns 0, or an error
 * with why filled (gnuplot missing, bad extension, no data). */
int msim_plot_draw(msim_db_t *db, const msim_plot_req_t *r, char *why,
		   size_t whylen);

#endif
