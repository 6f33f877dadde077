/*
 * The traces a sweep reads once for its settings (lab/sweep.c): read on
 * a thread beside the plan (msim_sweep_preload_start()) or before the
 * workers start (msim_sweep_load()), shared by the settings that replay
 * them as they are (msim_sweep_share()), forgotten after the run
 * (msim_sweep_unshare()).  The workers of lab/sweep_pool.c inherit them
 * through fork(): the pages are shared, not copied.
 */
#include <config.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lab/job.h"
#include "lab/sweep_int.h"
#include "traces/model_spec.h"
#include "traces/trace.h"

static void sweep_load_paths(msim_sweep_t *sw);

static void *
sweep_preload_thread(void *arg)
{
	sweep_load_paths(arg);
	return NULL;
}

/*
 * Starts reading the spec's trace files into caches on a thread of its
 * own, beside the plan's checking and hashing of them and the database's
 * making (msim_sweep_exec()), which otherwise came before it: about 3 ms
 * of start-up for 2 MB of CSV.  Only for a sweep whose settings all run
 * (spec->preload), with two or more settings a trace, as msim_sweep_load()
 * would; a trace fewer of them replay is forgotten by msim_sweep_share().
 * Nothing happens where memory or a thread is short.
 */
void
msim_sweep_preload_start(msim_sweep_t *sw, const msim_sweep_spec_t *spec)
{
	sw->caches = calloc(spec->ntraces, sizeof(*sw->caches));
	sw->preload_paths = calloc(spec->ntraces, sizeof(char *));
	bool ok = sw->caches && sw->preload_paths;
	for (size_t t = 0; ok && t < spec->ntraces; t++)
		if (!msim_model_spec_is(spec->traces[t]) &&
		    !(sw->preload_paths[t] = strdup(spec->traces[t])))
			ok = false;
	sw->npreload = spec->ntraces;
	if (ok && !pthread_create(&sw->preload, NULL, sweep_preload_thread,
				  sw)) {
		sw->preloading = true;
		return;
	}
	msim_sweep_preload_join(sw);
	free(sw->caches);
	sw->caches = NULL;
}

/* Waits for the plan's reading of the traces, if any, and forgets the
 * paths it read. */
void
msim_sweep_preload_join(msim_sweep_t *sw)
{
	if (sw->preloading)
		pthread_join(sw->preload, NULL);
	sw->preloading = false;
	for (size_t t = 0; sw->preload_paths && t < sw->npreload; t++)
		free(sw->preload_paths[t]);
	free(sw->preload_paths);
	sw->preload_paths = NULL;
}


/* Traces a sweep reads once and keeps in memory for its settings: at most
 * this many bytes of requests each. */
#define SWEEP_CACHE_BYTES ((size_t)512 << 20)

/* How a trace read once for the settings is read: as a plain job reads
 * it, but not hashed (the plan hashed the file for the settings' keys). */
static msim_trace_options_t
sweep_cache_options(void)
{
	msim_job_spec_t plain = {0};
	msim_trace_options_t topt = msim_job_trace_options(&plain);
	topt.unhashed = true;
	return topt;
}

/* Whether setting s replays trace t as it is (no transform). */
static bool
sweep_plain_use(const msim_sweep_t *sw, const msim_setting_t *s, size_t t)
{
	return s->spec.trace == sw->traces[t] && !s->spec.model_spec &&
	       !s->spec.strategy;
}

/*
 * Reads each trace file that two or more of the settings listed (n of
 * them; all of the shard's where list is NULL) replay as it is once,
 * before the workers start: they share its requests (the pages of a
 * fork) instead of each parsing the file again.  A trace that cannot be
 * cached (lab/input.h) is read by each setting.
 */
void
msim_sweep_load(msim_sweep_t *sw, const size_t *list, size_t n)
{
	if (!(sw->caches = calloc(sw->ntraces, sizeof(*sw->caches))))
		return;
	msim_trace_options_t topt = sweep_cache_options();
	for (size_t t = 0; t < sw->ntraces; t++) {
		size_t uses = 0;
		for (size_t i = 0; i < n; i++)
			uses += sweep_plain_use(sw, &sw->v[sw->shard[list ?
				list[i] : i]], t);
		if (sw->models[t] || uses < 2)
			continue;
		msim_trace_cache_load(&sw->caches[t], sw->traces[t], &topt,
				      SWEEP_CACHE_BYTES / sizeof(msim_req_t));
	}
}

/* The plan's reading (msim_sweep_preload_start()): every trace file. */
static void
sweep_load_paths(msim_sweep_t *sw)
{
	msim_trace_options_t topt = sweep_cache_options();
	for (size_t t = 0; t < sw->npreload; t++)
		if (sw->preload_paths[t])
			msim_trace_cache_load(&sw->caches[t],
					      sw->preload_paths[t], &topt,
					      SWEEP_CACHE_BYTES /
						      sizeof(msim_req_t));
}

/* The pending settings that replay a trace msim_sweep_load() read use it;
 * a trace fewer than two of them replay is forgotten. */
void
msim_sweep_share(msim_sweep_t *sw, const size_t *pending, size_t npending)
{
	if (!sw->caches)
		return;
	for (size_t t = 0; t < sw->ntraces; t++) {
		if (!sw->caches[t].trace)
			continue;
		size_t uses = 0;
		for (size_t i = 0; i < npending; i++)
			uses += sweep_plain_use(sw, &sw->v[sw->shard[pending[i]]],
						t);
		if (uses < 2) {
			msim_trace_cache_clear(&sw->caches[t]);
			continue;
		}
		for (size_t i = 0; i < npending; i++) {
			msim_setting_t *s = &sw->v[sw->shard[pending[i]]];
			if (sweep_plain_use(sw, s, t))
				s->spec.cache = &sw->caches[t];
		}
	}
}

/* Forgets what msim_sweep_share() read. */
void
msim_sweep_unshare(msim_sweep_t *sw)
{
	if (!sw->caches)
		return;
	for (size_t i = 0; i < sw->n; i++)
		sw->v[i].spec.cache = NULL;
	for (size_t t = 0; t < sw->ntraces; t++)
		msim_trace_cache_clear(&sw->caches[t]);
	free(sw->caches);
	sw->caches = NULL;
}
