/*
 * The results store's write-ahead log (results.h): the VFS that gathers a
 * transaction's WAL frames into one write, and the checkpoint policy a
 * sweep's parent drives (msim_db_checkpoint(), msim_db_restart_wal()).
 */
#define _GNU_SOURCE /* sync_file_range() (Linux) */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "sim/results_int.h"

/*
 * The VFS of connections that write: the default one, except that a WAL
 * file gathers the frames of a transaction and writes them with one
 * pwrite() instead of two a page (SQLite's walWriteOneFrame() writes a
 * frame's 24-byte header, then its page): a sweep's run is about 45
 * pages, so each commit made about 90 system calls while it held the
 * write lock that the other workers wait for.  The bytes and their order
 * are the same.  They reach the file as soon as the commit frame is
 * complete (a frame header whose database size, bytes 4 to 7, is not 0),
 * within SQLite's own write of it and before SQLite publishes the commit
 * in the -shm index (walIndexWriteHdr()): other connections never see a
 * frame that is not in the file, and an error writing them fails the
 * commit.  Any other call on the WAL (a read, a sync, its size, a write
 * elsewhere in it, closing it) writes what was gathered first.  Frames of
 * a transaction that does not commit (a spill of a large one) wait for
 * that next call, as they would wait in SQLite's cache.
 */
#define WB_FRAME_HDR 24           /* a WAL frame's header, in bytes */
#define WB_MAX ((size_t)1 << 20)  /* gathered at most before a write */
#define WB_CHUNK ((size_t)1 << 16) /* written a call (the unix VFS's
				    * seekAndWriteFd() takes less than
				    * 128 KiB) */

typedef struct walbuf_s {
	sqlite3_file base;    /* pMethods: &wb_methods */
	sqlite3_file *real;   /* the default VFS's file, right after this */
	unsigned char *p;     /* bytes gathered, to go at offset off */
	size_t n, cap;
	sqlite3_int64 off;
	bool commit;          /* the last frame header gathered commits */
} walbuf_t;

static sqlite3_vfs *wb_real; /* the default VFS */
static sqlite3_vfs wb_vfs;
static pthread_once_t wb_once = PTHREAD_ONCE_INIT;
static bool wb_ok;

static int
wb_flush(walbuf_t *f)
{
	int rc = SQLITE_OK;
	for (size_t k = 0; !rc && k < f->n; k += WB_CHUNK)
		rc = f->real->pMethods->xWrite(f->real, f->p + k,
			(int)(f->n - k < WB_CHUNK ? f->n - k : WB_CHUNK),
			f->off + (sqlite3_int64)k);
	f->n = 0;
	f->commit = false;
	return rc;
}

static int
wb_close(sqlite3_file *file)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	int rc2 = f->real->pMethods->xClose(f->real);
	free(f->p);
	f->p = NULL;
	return rc ? rc : rc2;
}

static int
wb_read(sqlite3_file *file, void *buf, int amt, sqlite3_int64 off)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xRead(f->real, buf, amt, off);
}

static int
wb_write(sqlite3_file *file, const void *buf, int amt, sqlite3_int64 off)
{
	walbuf_t *f = (walbuf_t *)file;
	size_t k = (size_t)amt;
	int rc;
	if (f->n && (off != f->off + (sqlite3_int64)f->n || f->n + k > WB_MAX) &&
	    (rc = wb_flush(f)))
		return rc;
	if (f->n + k > f->cap) {
		size_t cap = f->cap ? f->cap : 64 << 10;
		while (cap < f->n + k && cap < WB_MAX)
			cap *= 2;
		unsigned char *p = cap >= f->n + k ? realloc(f->p, cap) : NULL;
		if (!p) {
			if ((rc = wb_flush(f)))
				return rc;
			return f->real->pMethods->xWrite(f->real, buf, amt,
							 off);
		}
		f->p = p;
		f->cap = cap;
	}
	if (!f->n)
		f->off = off;
	memcpy(f->p + f->n, buf, k);
	f->n += k;
	if (k == WB_FRAME_HDR) {
		const unsigned char *h = buf;
		f->commit = (h[4] | h[5] | h[6] | h[7]) != 0;
		return SQLITE_OK;
	}
	return f->commit ? wb_flush(f) : SQLITE_OK;
}

static int
wb_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xTruncate(f->real, size);
}

static int
wb_sync(sqlite3_file *file, int flags)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xSync(f->real, flags);
}

static int
wb_size(sqlite3_file *file, sqlite3_int64 *size)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xFileSize(f->real, size);
}

static int
wb_lock(sqlite3_file *file, int level)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xLock(f->real, level);
}

static int
wb_unlock(sqlite3_file *file, int level)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xUnlock(f->real, level);
}

static int
wb_reserved(sqlite3_file *file, int *out)
{
	walbuf_t *f = (walbuf_t *)file;
	return f->real->pMethods->xCheckReservedLock(f->real, out);
}

static int
wb_control(sqlite3_file *file, int op, void *arg)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xFileControl(f->real, op, arg);
}

static int
wb_sector(sqlite3_file *file)
{
	walbuf_t *f = (walbuf_t *)file;
	return f->real->pMethods->xSectorSize(f->real);
}

static int
wb_device(sqlite3_file *file)
{
	walbuf_t *f = (walbuf_t *)file;
	return f->real->pMethods->xDeviceCharacteristics(f->real);
}

/* SQLite maps and locks the -shm index through the database's file, never
 * the WAL's; these only pass the calls on. */
static int
wb_shm_map(sqlite3_file *file, int pg, int pgsz, int extend,
	   void volatile **pp)
{
	walbuf_t *f = (walbuf_t *)file;
	if (f->real->pMethods->iVersion < 2)
		return SQLITE_IOERR;
	return f->real->pMethods->xShmMap(f->real, pg, pgsz, extend, pp);
}

static int
wb_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	if (rc || f->real->pMethods->iVersion < 2)
		return rc ? rc : SQLITE_IOERR;
	return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}

static void
wb_shm_barrier(sqlite3_file *file)
{
	walbuf_t *f = (walbuf_t *)file;
	if (f->real->pMethods->iVersion >= 2)
		f->real->pMethods->xShmBarrier(f->real);
}

static int
wb_shm_unmap(sqlite3_file *file, int del)
{
	walbuf_t *f = (walbuf_t *)file;
	if (f->real->pMethods->iVersion < 2)
		return SQLITE_OK;
	return f->real->pMethods->xShmUnmap(f->real, del);
}

static int
wb_fetch(sqlite3_file *file, sqlite3_int64 off, int amt, void **pp)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	*pp = NULL;
	if (rc || f->real->pMethods->iVersion < 3)
		return rc;
	return f->real->pMethods->xFetch(f->real, off, amt, pp);
}

static int
wb_unfetch(sqlite3_file *file, sqlite3_int64 off, void *p)
{
	walbuf_t *f = (walbuf_t *)file;
	if (f->real->pMethods->iVersion < 3)
		return SQLITE_OK;
	return f->real->pMethods->xUnfetch(f->real, off, p);
}

static const sqlite3_io_methods wb_methods = {
	.iVersion = 3, .xClose = wb_close, .xRead = wb_read,
	.xWrite = wb_write, .xTruncate = wb_truncate, .xSync = wb_sync,
	.xFileSize = wb_size, .xLock = wb_lock, .xUnlock = wb_unlock,
	.xCheckReservedLock = wb_reserved, .xFileControl = wb_control,
	.xSectorSize = wb_sector, .xDeviceCharacteristics = wb_device,
	.xShmMap = wb_shm_map, .xShmLock = wb_shm_lock,
	.xShmBarrier = wb_shm_barrier, .xShmUnmap = wb_shm_unmap,
	.xFetch = wb_fetch, .xUnfetch = wb_unfetch,
};

/* A WAL file gets a walbuf_t with the default VFS's file after it; any
 * other file is the default VFS's own, at the start of the same space. */
static int
wb_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags,
	int *out_flags)
{
	(void)vfs;
	if (!(flags & SQLITE_OPEN_WAL))
		return wb_real->xOpen(wb_real, name, file, flags, out_flags);
	walbuf_t *f = (walbuf_t *)file;
	memset(f, 0, sizeof(*f));
	f->real = (sqlite3_file *)(f + 1);
	f->real->pMethods = NULL;
	int rc = wb_real->xOpen(wb_real, name, f->real, flags, out_flags);
	/* Closed by SQLite, even if the open failed, once it has methods. */
	if (f->real->pMethods)
		f->base.pMethods = &wb_methods;
	return rc;
}

static void
wb_register(void)
{
	if (!(wb_real = sqlite3_vfs_find(NULL)))
		return;
	wb_vfs = *wb_real;
	wb_vfs.zName = "memsim-wal";
	wb_vfs.pNext = NULL;
	wb_vfs.szOsFile = (int)sizeof(walbuf_t) + wb_real->szOsFile;
	wb_vfs.xOpen = wb_open;
	wb_ok = sqlite3_vfs_register(&wb_vfs, 0) == SQLITE_OK;
}

/* The name of the VFS that gathers WAL frames; NULL (the default VFS)
 * where it could not be registered. */
const char *
msim_dbi_wal_vfs(void)
{
	pthread_once(&wb_once, wb_register);
	return wb_ok ? wb_vfs.zName : NULL;
}

void
msim_db_defer_checkpoints(msim_db_t *db)
{
	sqlite3_wal_autocheckpoint(db->db, 0);
}

void
msim_db_set_writer_lock(msim_db_t *db, void (*lock)(void *ctx),
			void (*unlock)(void *ctx), void *ctx)
{
	db->wlock = lock;
	db->wunlock = lock ? unlock : NULL;
	db->wctx = ctx;
}

void
msim_db_keep_wal(msim_db_t *db)
{
	sqlite3_db_config(db->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
}

int
msim_db_checkpoint(msim_db_t *db)
{
	int copied = 0;
	int rc = sqlite3_wal_checkpoint_v2(db->db, NULL,
					   SQLITE_CHECKPOINT_PASSIVE, NULL,
					   &copied);
	/* BUSY: another checkpoint is under way; the next call goes on. */
	if (rc != SQLITE_OK && rc != SQLITE_BUSY)
		return msim_dbi_fail(db, "cannot checkpoint");
#ifdef SYNC_FILE_RANGE_WRITE
	/* While writers keep committing, a PASSIVE checkpoint never finds
	 * the WAL wholly copied, and so never syncs the database: all the
	 * pages it copied would wait for the last connection's checkpoint
	 * (a sweep's end) to be written to the disk.  The kernel starts
	 * writing them now, without waiting for it (only a hint: its
	 * failure changes nothing). */
	if (rc == SQLITE_OK && copied > 0 && strncmp(db->path, "file:", 5)) {
		if (db->ck_fd < 0)
			db->ck_fd = open(db->path, O_RDONLY | O_CLOEXEC);
		if (db->ck_fd >= 0)
			sync_file_range(db->ck_fd, 0, 0,
					SYNC_FILE_RANGE_WRITE);
	}
#endif
	return 0;
}

int
msim_db_restart_wal(msim_db_t *db, bool truncate)
{
	/* What the PASSIVE checkpoints copied is synced first, while the
	 * writers go on (SQLite would sync it below, under the lock). */
	if (db->ck_fd < 0 && strncmp(db->path, "file:", 5))
		db->ck_fd = open(db->path, O_RDONLY | O_CLOEXEC);
	if (db->ck_fd >= 0)
		fdatasync(db->ck_fd);
	if (db->wlock)
		db->wlock(db->wctx);
	/* No writer holds the WAL's write lock now (our writers take the
	 * lock above first; others, SQLite's busy handler waits for), so the
	 * checkpoint copies the few frames committed since, syncs the WAL
	 * and the file, and starts the WAL over (walRestartHdr()). */
	int rc = sqlite3_wal_checkpoint_v2(db->db, NULL,
					   truncate ? SQLITE_CHECKPOINT_TRUNCATE :
						      SQLITE_CHECKPOINT_RESTART,
					   NULL, NULL);
	if (db->wunlock)
		db->wunlock(db->wctx);
	/* BUSY: a reader kept the WAL; a later call starts it over. */
	if (rc != SQLITE_OK && rc != SQLITE_BUSY)
		return msim_dbi_fail(db, "cannot checkpoint");
	return 0;
}
