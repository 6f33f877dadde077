/*
 * Included first by every file of tests/check_column's scratch build of
 * the results store and the figures (tests/Makemodule.am): one line that
 * adds a column to the runs table, as docs/changing.md tells.  Its value
 * is computed from the run, so that a test can tell it was written; it
 * may be NULL, so that a file without it gains it when opened.
 */
#define MSIM_RUN_COLUMNS_EXTRA(C)					      \
 C(probe_bytes, "probe_bytes", INT, "INTEGER",			      \
   MSIM_DB_SCHEMA_VERSION, TAIL,					      \
   st->allocated_bytes[MSIM_POOL_ALL].peak + (int64_t)sum->requests)
