/*
 * What the commands print that is not about their options: JSON strings
 * and the figures of lab/figures.h as JSON members, flat or nested, the
 * device table of sim/gpu.h (`memsim devices`), what a partial history
 * was seeded with.  Everything goes to stdout (msim_print_json_str() and
 * msim_print_json_tree() to fp).
 */
#ifndef MSIM_LAB_PRINT_H
#define MSIM_LAB_PRINT_H

#include <stdbool.h>
#include <stdio.h>

#include "lab/figures.h"

/* Writes s as a JSON string. */
void msim_print_json_str(FILE *fp, const char *s);

/* Writes the figures of f to stdout as the members of a JSON object, one
 * a line, each after ",\n" (the first after "\n" when first). */
void msim_print_json_figs(const msim_figs_t *f, bool first);

/*
 * Writes the figures of f to fp as one JSON object nested at the dots of
 * their names ("peak.all.reserved": {"peak": {"all": {"reserved": ...}}};
 * a part of digits is a list's item, "sites.0.site"), in their order,
 * which keeps each object's and list's members together: its members one a
 * line, deeper ones on that line, then "\n}\n" (`memsim explain --json`).
 * An MSIM_FIG_EMPTY figure is an empty list or object.  Past 16 levels
 * the rest of a name is one key.
 */
void msim_print_json_tree(FILE *fp, const msim_figs_t *f);

/* `memsim devices`: the table of the cards (and the MIG profiles when
 * mig), or with json one JSON object of both (what
 * traces/memsim_record/devices.json is). */
void msim_print_devices(bool json, bool mig);

/* What info and run say about a trace read to its end: the seeding of a
 * partial history (msim_trace_seeding()), how much of the snapshot's end
 * state the trace explains, skipped entries, and a hint when a snapshot
 * has no trace events. */
void msim_print_seed(msim_trace_t *t);

#endif
