/*
 * The handles of memsim.h (lib/handle.h).
 */
#include <config.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/handle.h"
#include "lib/memsim.h"
#include "sim/grow.h"

#define SLOT_BITS (sizeof(uintptr_t) * 4)
#define SLOT_MASK (((uintptr_t)1 << SLOT_BITS) - 1)
#define GEN_MASK (UINTPTR_MAX >> SLOT_BITS)

typedef struct slot_s {
	void *obj;       /* NULL: free */
	int kind;        /* MSIM_HANDLE_* of obj */
	uintptr_t gen;   /* 1 ... GEN_MASK, advanced at each close */
	size_t next;     /* free: the next free slot + 1, or 0 */
} slot_t;

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t *slots;
static size_t nslots, slots_cap, free_slot; /* free_slot: index + 1 or 0 */

int
msim_handle_new(int kind, void *obj, void **out)
{
	int rc = 0;
	size_t i;
	pthread_mutex_lock(&slots_lock);
	if (free_slot) {
		i = free_slot - 1;
		free_slot = slots[i].next;
	} else if (nslots < SLOT_MASK &&
		   !MSIM_GROW(slots, slots_cap, nslots + 1, 64)) {
		i = nslots++;
		slots[i].gen = 1;
	} else {
		rc = MEMSIM_ENOMEM;
	}
	if (!rc) {
		slots[i].obj = obj;
		slots[i].kind = kind;
		*out = (void *)((slots[i].gen << SLOT_BITS) | (i + 1));
	}
	pthread_mutex_unlock(&slots_lock);
	if (rc)
		*out = NULL;
	return rc;
}

int
msim_handle_get(const void *h, int kind, bool take, void **obj_out)
{
	uintptr_t t = (uintptr_t)h;
	size_t i = (size_t)(t & SLOT_MASK);
	uintptr_t gen = t >> SLOT_BITS;
	int rc = 0;
	*obj_out = NULL;
	if (!h || !i)
		return MEMSIM_EINVAL;
	pthread_mutex_lock(&slots_lock);
	if (i > nslots || !gen) {
		rc = MEMSIM_EINVAL;
	} else if (slots[i - 1].gen != gen || !slots[i - 1].obj) {
		rc = gen < slots[i - 1].gen ? MEMSIM_ESTATE : MEMSIM_EINVAL;
	} else if (slots[i - 1].kind != kind) {
		rc = MEMSIM_EINVAL;
	} else {
		*obj_out = slots[i - 1].obj;
		if (take) {
			slot_t *sl = &slots[i - 1];
			sl->obj = NULL;
			sl->gen = sl->gen == GEN_MASK ? 1 : sl->gen + 1;
			sl->next = free_slot;
			free_slot = i;
		}
	}
	pthread_mutex_unlock(&slots_lock);
	return rc;
}
