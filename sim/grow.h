/*
 * sim/grow.h: the one growable array of the project.
 *
 * An array is a pointer and a size_t capacity (in elements) kept beside it.
 * MSIM_GROW(v, cap, need, first) makes room for at least need elements:
 * the capacity starts at first and doubles until it holds need, and the
 * array is realloc()ed once.  Both are left as they were when the host is
 * out of memory or the byte count would overflow size_t, so the caller
 * reports MSIM_ENOMEM with its data intact.  MSIM_GROW_ZERO also zeroes the
 * new elements (tables indexed by id, where 0 means "none").
 *
 *	if (MSIM_GROW(a->v, a->cap, a->n + 1, 4096))
 *		return MSIM_ENOMEM;
 *	a->v[a->n++] = x;
 */
#ifndef MSIM_SIM_GROW_H
#define MSIM_SIM_GROW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"

/* Grows the array whose pointer is at *vp (elements of elem bytes, *cap of
 * them) to hold need, doubling from first (> 0); zero: clear the new
 * elements.  Returns 0, or MSIM_ENOMEM with *vp and *cap unchanged.  The
 * pointer is read and written through memcpy so that vp may be the address
 * of any object pointer. */
static inline int
msim_grow(void *vp, size_t *cap, size_t need, size_t elem, size_t first,
	  bool zero)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : first ? first : 1;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return MSIM_ENOMEM;
		n *= 2;
	}
	if (n > SIZE_MAX / elem)
		return MSIM_ENOMEM;
	void *old, *p;
	memcpy(&old, vp, sizeof(old));
	if (!(p = realloc(old, n * elem)))
		return MSIM_ENOMEM;
	if (zero)
		memset((char *)p + *cap * elem, 0, (n - *cap) * elem);
	memcpy(vp, &p, sizeof(p));
	*cap = n;
	return 0;
}

/* v: an lvalue pointer to the elements; cap: an lvalue size_t.  Returns 0
 * or MSIM_ENOMEM (v and cap unchanged). */
#define MSIM_GROW(v, cap, need, first)                                        \
	msim_grow(&(v), &(cap), (need), sizeof(*(v)), (first), false)
#define MSIM_GROW_ZERO(v, cap, need, first)                                   \
	msim_grow(&(v), &(cap), (need), sizeof(*(v)), (first), true)

#endif /* MSIM_SIM_GROW_H */
