/*
 * The pool of worker processes that runs a sweep's pending settings
 * (msim_sweep_pool_run(), called by msim_sweep_exec() in sweep.c), and the
 * run of one setting (msim_setting_run()).
 *
 * Workers are forked processes, not threads: a run is single-threaded and
 * memory-bound, SQLite connections must not cross a fork, and a worker that
 * crashes on a bad trace takes no other setting with it.  They take the
 * next setting from a counter in shared memory, so a slow setting does not
 * hold up the others, and each writes its result in its own transaction,
 * taking turns at a lock in that memory (sweep_wlock()); the parent (the
 * supervisor, pool_supervise()) copies the WAL into the database while
 * they run.  Into a new database they start before it is made, and wait
 * for it only to store (worker_db()).  On Linux a worker dies with its
 * parent (PR_SET_PDEATHSIG), so a killed sweep leaves no orphans;
 * elsewhere workers notice the parent is gone before their next setting.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "sim/error.h"
#include "lab/job.h"
#include "lab/sweep_int.h"

/* ---------------------------------------------------------------- */
/* One setting                                                       */

/* Where a setting's run is stored: db, or (db NULL, late set) the
 * database late() gives once the run has replayed, with the sweep's id
 * it sets (a sweep's first settings replay while the parent makes a new
 * database: msim_sweep_exec()); late() NULL: the run is not stored. */
typedef struct store_to_s {
	msim_db_t *db;
	int64_t sweep_id;
	msim_db_t *(*late)(void *ctx, int64_t *sweep_id);
	void *ctx;
} store_to_t;

/*
 * msim_setting_run() with, for a setting replayed from a trace read once
 * (s->spec.cache), *peak: the earliest request of the peak of reserved bytes
 * among the settings of that trace this process ran before (UINT64_MAX:
 * none yet), updated with this one's.  The blocks at peak are copied at
 * the new peaks from a 128th before it on (from a quarter of the trace
 * with none yet): a peak before that costs a second replay up to it
 * (lab/job.c), a copy a pass over the policy's blocks.
 */
static int
setting_run(const msim_setting_t *s, uint64_t capacity, store_to_t to,
	    int mode, uint64_t *peak, int64_t *run_id_out,
	    int *existed_out, msim_summary_t *sum, msim_stats_t *st,
	    char *why, size_t whylen)
{
	*run_id_out = -1;
	*existed_out = 0;
	msim_job_spec_t spec = s->spec;
	spec.capacity = capacity;
	if (spec.cache && peak)
		spec.blocks_from = *peak == UINT64_MAX ? spec.cache->n / 4
						       : *peak - *peak / 128;
	msim_job_t *job;
	msim_job_err_t err;
	int rc = msim_job_open(&spec, to.db || to.late, &job, &err);
	if (!rc)
		rc = msim_job_run(job, &err);
	uint64_t at;
	if (!rc && spec.cache && peak &&
	    msim_device_peak(msim_sim_device(msim_job_sim(job)), &at) &&
	    at < *peak)
		*peak = at;
	if (!rc && !to.db && to.late &&
	    !(to.db = to.late(to.ctx, &to.sweep_id))) {
		rc = MSIM_EDB;
		snprintf(err.msg, sizeof(err.msg), "no database to store in");
	}
	if (!rc && to.db)
		rc = msim_job_store(job, to.db, mode, to.sweep_id, run_id_out,
				    existed_out, &err);
	if (rc)
		snprintf(why, whylen, "%s", err.msg);
	else if (sum)
		*sum = msim_job_result(job)->sum;
	if (!rc && st)
		*st = msim_job_result(job)->st;
	msim_job_destroy(job);
	return rc;
}

int
msim_setting_run(const msim_setting_t *s, uint64_t capacity,
		 msim_db_t *db, int mode, int64_t sweep_id,
		 int64_t *run_id_out, int *existed_out, msim_summary_t *sum,
		 msim_stats_t *st, char *why, size_t whylen)
{
	store_to_t to = {db, sweep_id, NULL, NULL};
	return setting_run(s, capacity, to, mode, NULL, run_id_out,
			   existed_out, sum, st, why, whylen);
}

/* ---------------------------------------------------------------- */
/* Execution                                                         */

/* What workers share with the parent (an anonymous shared mapping). */
typedef struct shared_s {
	atomic_size_t next;    /* next index into the pending list */
	atomic_size_t ran;     /* settings stored */
	atomic_size_t raced;   /* found stored by another process */
	atomic_size_t failed;  /* settings that failed */
	pthread_mutex_t wlock; /* the workers' writer lock (sweep_wlock()) */
	bool wlock_ok;         /* whether it could be made */
	/* A database made after the fork (exec_ctx_t.ready): 1 once made,
	 * with the sweep's id, -1 if it could not be. */
	atomic_int made;
	int64_t sweep_id;
	atomic_size_t cur[];   /* per worker slot: 1 + the setting in hand's
				* index into pending, 0 none; a crashed
				* worker's setting is failed by name */
} shared_t;

typedef struct exec_ctx_s {
	msim_sweep_t *sw;
	const msim_sweep_opts_t *o;
	const size_t *pending; /* indexes into the shard */
	size_t npending;
	shared_t *sh;
	int64_t sweep_id;
	pid_t parent;
	int slot; /* this worker's index into sh->cur */
	bool parent_checkpoints; /* workers leave the WAL to the parent */
	int wake; /* a worker writes a byte here after each setting and when
		   * done; -1: none */
	/* Settings may be stored as failed by an earlier run: each stored
	 * now is forgotten there (msim_db_sweep_unfail()).  Without any,
	 * that is a statement and a write lock a setting saved. */
	bool unfail;
	/* The read end of a pipe whose write end the parent closes once it
	 * has made the database (sh->made): workers forked before wait for
	 * it before they store; -1: made before the fork. */
	int ready;
	int ready_w; /* its write end, which a worker closes; -1: closed */
} exec_ctx_t;

/*
 * Stores that s failed in the sweep, with its reason (one line), so that
 * `memsim report` shows it and a resumed sweep says it retries it.  A
 * storage error here loses only this record: the failure was printed.
 */
static void
sweep_store_failed(msim_db_t *db, int64_t sweep_id, const msim_setting_t *s,
		   const char *status, const char *why)
{
	char line[1024];
	size_t k = 0;
	for (const char *p = why; *p && k + 1 < sizeof(line); p++)
		line[k++] = *p == '\n' || *p == '\r' ? ' ' : *p;
	line[k] = '\0';
	msim_db_sweep_fail(db, sweep_id, s->key, s->spec.trace,
			   s->spec.policy,
			   s->params ? s->params : "", status, line);
}

/*
 * The workers' writer lock (msim_db_set_writer_lock()): a mutex in the
 * shared mapping, so that a worker waiting to store a run wakes as soon as
 * the other has committed, not at the end of a sleep of SQLite's busy
 * handler (db_busy(): 100 us and more, each wait).  Robust: a worker that
 * dies holding it (its SQLite transaction then rolls back) leaves it to
 * the next.  Where it cannot be taken, SQLite's own lock still serves.
 */
typedef struct wlock_s {
	pthread_mutex_t *m;
	bool held;
} wlock_t;

static void
sweep_wlock(void *ctx)
{
	wlock_t *w = ctx;
	int rc = pthread_mutex_lock(w->m);
#ifdef __linux__
	if (rc == EOWNERDEAD)
		rc = pthread_mutex_consistent(w->m);
#endif
	w->held = rc == 0;
}

static void
sweep_wunlock(void *ctx)
{
	wlock_t *w = ctx;
	if (w->held)
		pthread_mutex_unlock(w->m);
	w->held = false;
}

/* A worker's connection, opened at its first use (worker_db()). */
typedef struct worker_s {
	exec_ctx_t *x;
	msim_db_t *db;
	wlock_t wl;
	bool failed; /* the database could not be opened, or made */
} worker_t;

/*
 * The worker's connection: opened the first time, once the database is
 * made (x->ready: at EOF, the parent has made it or failed to), with the
 * sweep's id.  NULL if it cannot be (said once through o->error, unless
 * the parent failed to make the database: the parent says why).
 */
static msim_db_t *
worker_db(void *ctx, int64_t *sweep_id)
{
	worker_t *w = ctx;
	exec_ctx_t *x = w->x;
	if (w->db || w->failed) {
		*sweep_id = x->sweep_id;
		return w->db;
	}
	if (x->ready >= 0) {
		char c;
		while (read(x->ready, &c, 1) < 0 && errno == EINTR)
			;
		if (atomic_load(&x->sh->made) != 1) {
			w->failed = true;
			return NULL;
		}
		x->sweep_id = x->sh->sweep_id;
	}
	char why[1024];
	if (msim_db_open(x->o->db_path, &w->db, why, sizeof(why))) {
		w->db = NULL;
		w->failed = true;
		if (x->o->error)
			x->o->error(x->o->ctx, NULL, why);
		return NULL;
	}
	if (x->parent_checkpoints)
		msim_db_defer_checkpoints(w->db);
	if (x->sh->wlock_ok)
		msim_db_set_writer_lock(w->db, sweep_wlock, sweep_wunlock,
					&w->wl);
	*sweep_id = x->sweep_id;
	return w->db;
}

/* A worker's loop: takes settings until none is left.  Returns 0, or an
 * error if the database cannot be opened (or was not made). */
static int
worker_loop(exec_ctx_t *x, int inline_progress, size_t skipped, size_t total)
{
	char why[1024];
	worker_t w = {x, NULL, {&x->sh->wlock, false}, false};
	int64_t sweep_id;
	/* Made before the fork: opened now, as a check that it can be. */
	if (x->ready < 0 && !worker_db(&w, &sweep_id))
		return MSIM_EDB;
	double last = msim_sweep_now_ms();
	double every = x->o->progress_ms > 0 ? x->o->progress_ms : 250;
	/* By trace: the earliest peak of its settings run here so far. */
	uint64_t *peaks = malloc(x->sw->ntraces * sizeof(*peaks));
	for (size_t t = 0; peaks && t < x->sw->ntraces; t++)
		peaks[t] = UINT64_MAX;
	for (;;) {
		if (!inline_progress && getppid() != x->parent)
			break; /* the sweep was killed */
		size_t k = atomic_fetch_add(&x->sh->next, 1);
		if (k >= x->npending)
			break;
		const msim_setting_t *s = msim_sweep_setting(x->sw,
							     x->pending[k]);
		atomic_store(&x->sh->cur[x->slot], k + 1);
		int64_t id;
		int existed = 0, rc;
		/* Another process may have stored it meanwhile (not in a
		 * database still being made: that one stores with
		 * MSIM_DB_SKIP all the same). */
		if (!x->o->force && w.db &&
		    msim_db_find_run(w.db, s->key, &id) == 0) {
			unsigned char present;
			const char *key = s->key;
			msim_db_sweep_adopt(w.db, x->sweep_id, &key, 1,
					    &present);
			atomic_fetch_add(&x->sh->raced, 1);
			continue;
		}
		uint64_t *peak = NULL;
		if (s->spec.cache && peaks && x->sw->caches)
			peak = &peaks[s->spec.cache - x->sw->caches];
		store_to_t to = {w.db, x->sweep_id, worker_db, &w};
		rc = setting_run(s, x->sw->capacity, to,
				 x->o->force ? MSIM_DB_REPLACE : MSIM_DB_SKIP,
				 peak, &id, &existed, NULL, NULL,
				 why, sizeof(why));
		if (w.failed) {
			/* Neither stored nor failed: the sweep fails. */
			atomic_store(&x->sh->cur[x->slot], 0);
			break;
		}
		if (rc) {
			atomic_fetch_add(&x->sh->failed, 1);
			if (x->o->error)
				x->o->error(x->o->ctx, s, why);
			if (!worker_db(&w, &sweep_id)) {
				atomic_store(&x->sh->cur[x->slot], 0);
				break;
			}
			sweep_store_failed(w.db, x->sweep_id, s, "failed", why);
		} else {
			if (x->unfail)
				msim_db_sweep_unfail(w.db, x->sweep_id, s->key);
			if (existed && !x->o->force)
				atomic_fetch_add(&x->sh->raced, 1);
			else
				atomic_fetch_add(&x->sh->ran, 1);
		}
		atomic_store(&x->sh->cur[x->slot], 0);
		/* Wakes the parent, which may checkpoint what this setting
		 * wrote (msim_sweep_exec()). */
		if (x->wake >= 0) {
			ssize_t wr = write(x->wake, "", 1);
			(void)wr;
		}
		if (inline_progress && x->o->progress &&
		    msim_sweep_now_ms() - last >= every) {
			last = msim_sweep_now_ms();
			x->o->progress(x->o->ctx,
				       skipped + atomic_load(&x->sh->ran) +
					       atomic_load(&x->sh->raced) +
					       atomic_load(&x->sh->failed),
				       total);
		}
	}
	free(peaks);
	msim_db_close(w.db);
	return w.failed ? MSIM_EDB : 0;
}

/* Starts a worker process on slot x->slot.  Returns its pid, or -1. */
static pid_t
sweep_spawn(exec_ctx_t *x)
{
	atomic_store(&x->sh->cur[x->slot], 0);
	pid_t pid = fork();
	if (pid == 0) {
#ifdef __linux__
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != x->parent)
			_exit(1);
#endif
		/* Else its EOF would never come (worker_db()). */
		if (x->ready_w >= 0)
			close(x->ready_w);
		int rc = worker_loop(x, 0, 0, 0);
		/* Wakes the parent at once, not at its next poll (a failed
		 * write only leaves it to the poll). */
		if (x->wake >= 0) {
			ssize_t w = write(x->wake, "", 1);
			(void)w;
		}
		_exit(rc ? 1 : 0);
	}
	return pid;
}

/*
 * The worker on slot died with status.  If it died holding a setting (a
 * crash, not a clean exit), that setting is failed with the reason and
 * true returned when settings remain for a new worker.
 */
static bool
sweep_reap(exec_ctx_t *x, int slot, int status)
{
	size_t k = atomic_exchange(&x->sh->cur[slot], 0);
	if (k == 0)
		return false;
	char why[96];
	if (WIFSIGNALED(status))
		snprintf(why, sizeof(why), "crashed (signal %d, %s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(why, sizeof(why), "its worker exited with status %d",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	atomic_fetch_add(&x->sh->failed, 1);
	const msim_setting_t *s = msim_sweep_setting(x->sw, x->pending[k - 1]);
	if (x->o->error)
		x->o->error(x->o->ctx, s, why);
	/* Stored from here with a connection of its own, closed before the
	 * next worker is forked. */
	msim_db_t *db;
	char ignored[256];
	if (!msim_db_open(x->o->db_path, &db, ignored, sizeof(ignored))) {
		sweep_store_failed(db, x->sweep_id, s, "crashed", why);
		msim_db_close(db);
	}
	return atomic_load(&x->sh->next) < x->npending;
}

/* How often at most the parent of a sweep's workers copies the WAL into
 * the database while they run (msim_db_checkpoint()). */
#define SWEEP_CHECKPOINT_MS 10.0

/*
 * How often the parent starts the WAL over while the workers store runs
 * (msim_db_restart_wal(), under their writer lock).  Its PASSIVE
 * checkpoints alone never find the WAL wholly copied while workers
 * commit, so the WAL would grow by every run stored (14 MB for 60
 * settings of gpt2_varlen) and the end of the sweep (the last
 * connection's checkpoint) would sync all the pages copied and delete
 * all of it (7 ms to delete 14 MB on the device machine).  Started over,
 * it is overwritten from its start, and its last connection's close
 * copies and syncs what the last settings stored and deletes a few MB.
 * Not once every setting is taken: emptying the WAL then (a TRUNCATE
 * checkpoint) held the writer lock while the last settings' runs waited
 * for it, no faster on the device machine (docs/performance.md,
 * "Sweeps").
 */
#ifndef SWEEP_RESTART_MS
#define SWEEP_RESTART_MS 20.0
#endif

/*
 * The shared mapping of a pool of jobs workers, its counters at 0 and its
 * writer lock made where it can be.  MAP_FAILED (why said) if it cannot.
 */
static shared_t *
pool_share_new(int jobs, size_t *size_out, char *why, size_t whylen)
{
	shared_t *sh;
	size_t shsize = sizeof(*sh) + (size_t)jobs * sizeof(sh->cur[0]);
	sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		snprintf(why, whylen, "cannot share memory with the workers: "
			 "%s", strerror(errno));
		return MAP_FAILED;
	}
	*size_out = shsize;
	atomic_init(&sh->next, 0);
	atomic_init(&sh->ran, 0);
	atomic_init(&sh->raced, 0);
	atomic_init(&sh->failed, 0);
	for (int k = 0; k < jobs; k++)
		atomic_init(&sh->cur[k], 0);
	atomic_init(&sh->made, 0);
	sh->sweep_id = -1;
	sh->wlock_ok = false;
	pthread_mutexattr_t ma;
	if (!pthread_mutexattr_init(&ma)) {
		sh->wlock_ok =
			!pthread_mutexattr_setpshared(&ma,
						      PTHREAD_PROCESS_SHARED) &&
#ifdef __linux__
			!pthread_mutexattr_setrobust(&ma,
						     PTHREAD_MUTEX_ROBUST) &&
#endif
			!pthread_mutex_init(&sh->wlock, &ma);
		pthread_mutexattr_destroy(&ma);
	}
	return sh;
}

/* Settings stored, raced or failed so far. */
static size_t
pool_counted(const shared_t *sh)
{
	return atomic_load(&sh->ran) + atomic_load(&sh->raced) +
	       atomic_load(&sh->failed);
}

/* The parent's connection, opened after the fork (none may cross one),
 * with the workers' writer lock; NULL if it cannot be opened. */
static msim_db_t *
pool_parent_db(exec_ctx_t *x, wlock_t *pwl)
{
	msim_db_t *db;
	char ignored[256];
	if (msim_db_open(x->o->db_path, &db, ignored, sizeof(ignored)))
		return NULL;
	if (x->sh->wlock_ok)
		msim_db_set_writer_lock(db, sweep_wlock, sweep_wunlock, pwl);
	return db;
}

/*
 * The supervisor: waits for the started workers (pids), forks a new one
 * for a worker that crashed while settings remain, checkpoints the WAL
 * through *db (opened again where it is NULL) and calls o->progress.
 * Returns how many workers died unclean.
 */
static int
pool_supervise(exec_ctx_t *x, pid_t *pids, int started, int wake_fd,
	       msim_db_t **db, wlock_t *pwl, msim_sweep_result_t *res,
	       size_t n)
{
	const msim_sweep_opts_t *o = x->o;
	shared_t *sh = x->sh;
	size_t npending = x->npending;
	int alive = started, died = 0;
	double checkpointed = 0, restarted = msim_sweep_now_ms();
	double restart_ms = SWEEP_RESTART_MS;
	double last = 0, every = o->progress_ms > 0 ? o->progress_ms : 250;
	while (alive) {
		int status;
		/* Polled for the progress line and the checkpoints,
		 * but once every setting is counted the workers are
		 * only closing their connections: wait for them, not
		 * up to a poll's 20 ms more. */
		size_t counted = pool_counted(sh);
		pid_t pid = waitpid(-1, &status,
				    counted >= npending ? 0 : WNOHANG);
		if (pid > 0) {
			for (int k = 0; k < started; k++)
				if (pids[k] == pid) {
					pids[k] = 0;
					alive--;
					if (!WIFEXITED(status) ||
					    WEXITSTATUS(status))
						died++;
					/* A setting that crashed
					 * its worker fails alone;
					 * a new worker goes on. */
					if (!sweep_reap(x, k, status))
						continue;
					x->slot = k;
					/* Not across the fork. */
					msim_db_close(*db);
					*db = NULL;
					if ((pids[k] = sweep_spawn(x)) > 0) {
						alive++;
						died--;
					} else {
						pids[k] = 0;
					}
				}
			continue;
		}
		if (pid < 0 && errno != EINTR)
			break;
		if (!*db)
			*db = pool_parent_db(x, pwl);
		/* At most every SWEEP_CHECKPOINT_MS (each checkpoint
		 * that copies the whole WAL costs two fdatasyncs), but
		 * after every setting once all are taken, so that the
		 * end (the last connection's checkpoint, before the
		 * sweep returns) finds only the last one's pages. */
		double now = msim_sweep_now_ms();
		if (*db && (now - checkpointed >= SWEEP_CHECKPOINT_MS ||
			    atomic_load(&sh->next) >= npending)) {
			checkpointed = now;
			msim_db_checkpoint(*db);
			/* And while settings remain, every
			 * SWEEP_RESTART_MS it starts the WAL over. */
			if (restart_ms > 0 &&
			    atomic_load(&sh->next) < npending &&
			    now - restarted >= restart_ms) {
				msim_db_restart_wal(*db, false);
				restarted = msim_sweep_now_ms();
			}
		}
		if (wake_fd >= 0) {
			struct pollfd pf = {wake_fd, POLLIN, 0};
			char drain[16];
			if (poll(&pf, 1, 20) > 0)
				while (read(wake_fd, drain, sizeof(drain)) > 0)
					;
		} else {
			struct timespec ts = {0, 20 * 1000000L};
			nanosleep(&ts, NULL);
		}
		if (o->progress && msim_sweep_now_ms() - last >= every) {
			last = msim_sweep_now_ms();
			o->progress(o->ctx, res->skipped + pool_counted(sh), n);
		}
	}
	return died;
}

/*
 * The workers of x (x->o->jobs of them at most, forked) run the pending
 * settings while this process supervises them; in a new database (early)
 * this process makes it meanwhile.  *db: the parent's connection, left
 * open for the caller to close last.  Returns 0 or an error (why said).
 */
static int
pool_fork(exec_ctx_t *x, int jobs, bool early, int ready[2],
	  msim_sweep_result_t *res, msim_db_t **db, char *why, size_t whylen)
{
	msim_sweep_t *sw = x->sw;
	const msim_sweep_opts_t *o = x->o;
	shared_t *sh = x->sh;
	int rc = 0;
	int wake[2] = {-1, -1}; /* exec_ctx_t's wake */
	pid_t *pids = calloc(jobs, sizeof(*pids));
	if (!pids)
		return MSIM_ENOMEM;
	fflush(NULL);
	/* The parent copies the WAL into the database while the workers
	 * replay (its fsyncs wait for the disk, not a core), not a
	 * worker at a commit between two settings, and its connection,
	 * the last closed, checkpoints what is left (the last few
	 * settings') at the end. */
	x->parent_checkpoints = true;
	/* The workers' end of a pipe that the parent polls instead of
	 * sleeping: a worker wakes it after each setting (for its
	 * checkpoints) and when done (20 ms sooner, at worst, than its
	 * next poll). */
	if (!pipe(wake)) {
		fcntl(wake[0], F_SETFD, FD_CLOEXEC);
		fcntl(wake[1], F_SETFD, FD_CLOEXEC);
		fcntl(wake[0], F_SETFL, O_NONBLOCK);
		/* A full pipe (the parent has wake-ups to read) does
		 * not stop a worker. */
		fcntl(wake[1], F_SETFL, O_NONBLOCK);
		x->wake = wake[1];
	}
	int started = 0;
	for (; started < jobs; started++) {
		x->slot = started;
		pid_t pid = sweep_spawn(x);
		if (pid < 0)
			break;
		pids[started] = pid;
	}
	if (!started) {
		snprintf(why, whylen, "cannot start workers: %s",
			 strerror(errno));
		rc = MSIM_ENOMEM;
		goto out;
	}
	/* Opened after the fork (no connection may cross one); without
	 * it the last worker's close checkpoints the whole WAL.  A
	 * database made now (early) is made by it, and the workers
	 * told so through shared memory and the pipe's EOF. */
	wlock_t pwl = {&sh->wlock, false};
	if (early) {
		if (!(rc = msim_db_open(o->db_path, db, why, whylen)) &&
		    (rc = msim_db_sweep_open(*db, &sw->row, &res->sweep_id)))
			snprintf(why, whylen, "%s", msim_db_errmsg(*db));
		sh->sweep_id = res->sweep_id;
		atomic_store(&sh->made, rc ? -1 : 1);
		close(ready[1]);
		ready[1] = x->ready_w = -1;
		if (rc) {
			/* Nothing to store in: the workers stop. */
			for (int k = 0; k < started; k++) {
				kill(pids[k], SIGKILL);
				waitpid(pids[k], NULL, 0);
			}
			goto out;
		}
		if (sh->wlock_ok)
			msim_db_set_writer_lock(*db, sweep_wlock,
						sweep_wunlock, &pwl);
	} else {
		*db = pool_parent_db(x, &pwl);
	}
	int died = pool_supervise(x, pids, started, wake[0], db, &pwl, res,
				  msim_sweep_count(sw));
	if (died) {
		/* A dead worker's setting in hand is neither stored
		 * nor counted: the settings not stored are failed. */
		size_t counted = pool_counted(sh);
		if (counted < x->npending)
			atomic_fetch_add(&sh->failed, x->npending - counted);
	}
out:
	for (int k = 0; k < 2; k++)
		if (wake[k] >= 0)
			close(wake[k]);
	free(pids);
	return rc;
}

int
msim_sweep_pool_run(msim_sweep_t *sw, const msim_sweep_opts_t *o,
		    const size_t *pending, size_t npending, bool early,
		    msim_sweep_result_t *res, msim_db_t **db, char *why,
		    size_t whylen)
{
	size_t n = msim_sweep_count(sw);
	int rc;
	int ready[2] = {-1, -1}; /* exec_ctx_t's ready, and its write end */
	int jobs = o->jobs < 1 ? 1 : o->jobs;
	if ((size_t)jobs > npending)
		jobs = npending ? (int)npending : 1;
	size_t shsize = 0;
	shared_t *sh = pool_share_new(jobs, &shsize, why, whylen);
	if (sh == MAP_FAILED)
		return MSIM_ENOMEM;
	if (early && pipe(ready)) {
		snprintf(why, whylen, "cannot make a pipe for the workers: %s",
			 strerror(errno));
		ready[0] = ready[1] = -1;
		rc = MSIM_ENOMEM;
		goto out;
	}
	if (early) {
		fcntl(ready[0], F_SETFD, FD_CLOEXEC);
		fcntl(ready[1], F_SETFD, FD_CLOEXEC);
	}
	exec_ctx_t x = {sw, o, pending, npending, sh, res->sweep_id,
			getpid(), 0, false, -1,
			o->force || res->retried > 0, ready[0], ready[1]};
	if (o->progress)
		o->progress(o->ctx, res->skipped, n);
	/* Workers are processes even for -j1 (o->jobs == 1), so that a
	 * setting that crashes fails alone; o->jobs <= 0 runs in this
	 * process. */
	if (o->jobs <= 0 || npending == 0) {
		if ((rc = worker_loop(&x, 1, res->skipped, n))) {
			snprintf(why, whylen, "cannot open %s", o->db_path);
			goto out;
		}
	} else if ((rc = pool_fork(&x, jobs, early, ready, res, db, why,
				   whylen))) {
		goto out;
	}
	res->ran = atomic_load(&sh->ran);
	res->skipped += atomic_load(&sh->raced);
	res->failed = atomic_load(&sh->failed);
	if (o->progress)
		o->progress(o->ctx, res->skipped + res->ran + res->failed, n);
	rc = 0;
out:
	for (int k = 0; k < 2; k++)
		if (ready[k] >= 0)
			close(ready[k]);
	if (sh->wlock_ok)
		pthread_mutex_destroy(&sh->wlock);
	munmap(sh, shsize);
	return rc;
}
