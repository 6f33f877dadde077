/*
 * A libFuzzer target for the C API (lib/memsim.h) as a careless caller
 * uses it: the input is a program of calls and their arguments; after the
 * first 0xff byte, the rest is the trace file memsim_open() is given.
 * Each call byte picks an entry point; its arguments come from the bytes
 * after it: a string up to a NUL (or NULL, when it starts with 0x01), a
 * handle slot (open, closed, NULL or a pointer the library never gave), an
 * index, and NULL out-parameters.  Every entry point must return a code
 * (never crash, never abort), closing twice is harmless, and the figures
 * of a replayed run must read back.  One store into a database in
 * /dev/shm an input at most, then its runs listed and loaded.
 */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz/common.h"
#include "lib/memsim.h"

typedef struct {
	const uint8_t *p, *end;
} rd_t;

static unsigned
rd_byte(rd_t *r)
{
	return r->p < r->end ? *r->p++ : 0;
}

/* A string of at most 200 bytes, or NULL (0x01). */
static const char *
rd_str(rd_t *r, char *buf)
{
	if (r->p < r->end && *r->p == 1) {
		r->p++;
		return NULL;
	}
	size_t n = 0;
	while (r->p < r->end && *r->p && n < 200)
		buf[n++] = (char)*r->p++;
	if (r->p < r->end)
		r->p++;
	buf[n] = '\0';
	return buf;
}

#define SLOTS 4

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *split = memchr(data, 0xff, size);
	size_t nprog = split ? (size_t)(split - data) : size;
	const char *trace = fuzz_file("api.csv", split ? split + 1 : data,
				      split ? size - nprog - 1 : 0);
	char db[96];
	snprintf(db, sizeof(db), "/dev/shm/msim-fuzz-%d-api.db", (int)getpid());
	unlink(db);
	memsim_run_t *run[SLOTS] = {0};
	static char bogus[64]; /* a pointer the library never gave */
	rd_t r = {data, data + (nprog > 512 ? 512 : nprog)};
	int stored = 0;
	char s1[256], s2[256];
	while (r.p < r.end) {
		unsigned op = rd_byte(&r), slot = rd_byte(&r) % (SLOTS + 2);
		memsim_run_t *h = slot < SLOTS ? run[slot]
			: slot == SLOTS ? NULL : (memsim_run_t *)bogus;
		int64_t iv;
		double dv;
		const char *tv;
		memsim_point_t pt;
		const char *a, *b;
		switch (op % 16) {
		case 0: /* open: the trace, NULL, or a string */
			if (slot < SLOTS) {
				memsim_close(run[slot]);
				run[slot] = NULL;
				unsigned k = rd_byte(&r) % 3;
				a = k == 0 ? trace : k == 1 ? NULL : rd_str(&r, s1);
				(void)memsim_open(&run[slot], a);
			} else {
				(void)memsim_open(NULL, trace);
			}
			break;
		case 1: /* close, perhaps twice; the slot keeps the handle */
			memsim_close(h);
			break;
		case 2:
			a = rd_str(&r, s1);
			b = rd_str(&r, s2);
			(void)memsim_set_policy(h, a, b);
			break;
		case 3:
			a = rd_str(&r, s1);
			b = rd_str(&r, s2);
			(void)memsim_set_option(h, a, b);
			break;
		case 4:
			(void)memsim_replay(h);
			break;
		case 5: {
			size_t n = memsim_count(h);
			for (size_t i = 0; i < n; i++) {
				const char *name = memsim_name(h, i);
				if (!name)
					abort();
				int kind = memsim_get_kind(h, name);
				if (kind == MEMSIM_INT || kind == MEMSIM_BOOL) {
					if (memsim_get_int(h, name, &iv))
						abort();
				} else if (kind == MEMSIM_REAL) {
					if (memsim_get_real(h, name, &dv))
						abort();
				} else if (kind == MEMSIM_TEXT) {
					if (memsim_get_text(h, name, &tv) || !tv)
						abort();
				}
			}
			(void)memsim_name(h, n + rd_byte(&r));
			break;
		}
		case 6:
			a = rd_str(&r, s1);
			(void)memsim_get_int(h, a, rd_byte(&r) & 1 ? NULL : &iv);
			break;
		case 7:
			a = rd_str(&r, s1);
			(void)memsim_get_real(h, a, rd_byte(&r) & 1 ? NULL : &dv);
			break;
		case 8:
			a = rd_str(&r, s1);
			(void)memsim_get_text(h, a, rd_byte(&r) & 1 ? NULL : &tv);
			break;
		case 9:
			a = rd_str(&r, s1);
			(void)memsim_get_kind(h, a);
			break;
		case 10: {
			size_t n = memsim_timeline_len(h);
			size_t i = rd_byte(&r) & 1 ? n : n / 2;
			(void)memsim_timeline_get(h, i,
						  rd_byte(&r) & 1 ? NULL : &pt);
			break;
		}
		case 11:
			(void)memsim_errmsg(h);
			break;
		case 12:
			if (!stored) {
				stored = 1;
				(void)memsim_store(h, rd_byte(&r) & 1 ? NULL : db,
						   rd_byte(&r) & 1 ? NULL : &iv);
			}
			break;
		case 13: {
			int64_t ids[8];
			size_t n = 0;
			const char *msg = NULL;
			(void)memsim_list_runs(rd_byte(&r) & 1 ? NULL : db, ids,
					       rd_byte(&r) % 9, &n, &msg);
			if (n > 8)
				abort();
			if (slot < SLOTS && n) {
				memsim_close(run[slot]);
				run[slot] = NULL;
				(void)memsim_load(&run[slot], db, ids[0]);
			}
			break;
		}
		case 14:
			(void)memsim_strerror((int)rd_byte(&r) - 128);
			(void)memsim_policy_name(rd_byte(&r));
			(void)memsim_policy_summary(rd_byte(&r));
			break;
		default:
			if (slot < SLOTS) {
				memsim_close(run[slot]);
				run[slot] = NULL;
			}
			(void)memsim_load(slot < SLOTS ? &run[slot] : NULL,
					  rd_byte(&r) & 1 ? db : NULL,
					  (int64_t)rd_byte(&r) - 1);
			break;
		}
	}
	for (int i = 0; i < SLOTS; i++)
		memsim_close(run[i]);
	unlink(db);
	return 0;
}
