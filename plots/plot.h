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
 * Plots run_id's fragmentation curve (allocated and reserved bytes, and
 * 1 - allocated/reserved, over requests) into out.  Returns 0, or an error
 * with why filled (gnuplot missing, bad extension, database error).
 */
int msim_plot_curve(msim_db_t *db, int64_t run_id, const char *plots_dir,
		    const char *gnuplot, const char *out, const char *title,
		    char *why, size_t whylen);

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

#endif
