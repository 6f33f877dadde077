/* The address-to-id map of idmap.h. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "traces/idmap.h"

static inline size_t
idmap_slot(uint64_t addr, size_t mask)
{
	/* Fibonacci hashing: block addresses share their low bits. */
	return (size_t)((addr * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & mask;
}

int
msim_idmap_init(msim_idmap_t *m)
{
	memset(m, 0, sizeof(*m));
	m->mask = 1023;
	m->keys = calloc(m->mask + 1, sizeof(*m->keys));
	m->vals = calloc(m->mask + 1, sizeof(*m->vals));
	if (!m->keys || !m->vals) {
		msim_idmap_clear(m);
		return MSIM_ENOMEM;
	}
	return 0;
}

void
msim_idmap_clear(msim_idmap_t *m)
{
	free(m->keys);
	free(m->vals);
	free(m->free_ids);
	memset(m, 0, sizeof(*m));
}

static int
idmap_grow(msim_idmap_t *m)
{
	size_t n = 2 * (m->mask + 1);
	uint64_t *keys = calloc(n, sizeof(*keys));
	uint32_t *vals = calloc(n, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return MSIM_ENOMEM;
	}
	for (size_t i = 0; i <= m->mask; i++) {
		if (!m->keys[i])
			continue;
		size_t j = idmap_slot(m->keys[i], n - 1);
		while (keys[j])
			j = (j + 1) & (n - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->mask = n - 1;
	return 0;
}

int
msim_idmap_take_id(msim_idmap_t *m, uint32_t *id_out)
{
	if (m->nfree) {
		*id_out = m->free_ids[--m->nfree];
		return 0;
	}
	if (m->next_id == UINT32_MAX)
		return MSIM_ENOMEM;
	*id_out = m->next_id++;
	return 0;
}

int
msim_idmap_put_id(msim_idmap_t *m, uint32_t id)
{
	if (MSIM_GROW(m->free_ids, m->capfree, m->nfree + 1, 256))
		return MSIM_ENOMEM;
	m->free_ids[m->nfree++] = id;
	return 0;
}

int
msim_idmap_add(msim_idmap_t *m, uint64_t addr, uint32_t *id_out)
{
	if (2 * (m->count + 1) > m->mask + 1 && idmap_grow(m))
		return MSIM_ENOMEM;
	size_t i = idmap_slot(addr, m->mask);
	while (m->keys[i]) {
		if (m->keys[i] == addr)
			return MSIM_EINVAL;
		i = (i + 1) & m->mask;
	}
	int rc = msim_idmap_take_id(m, id_out);
	if (rc)
		return rc;
	m->keys[i] = addr;
	m->vals[i] = *id_out;
	m->count++;
	return 0;
}

int
msim_idmap_bind(msim_idmap_t *m, uint64_t addr, uint32_t id)
{
	if (2 * (m->count + 1) > m->mask + 1 && idmap_grow(m))
		return MSIM_ENOMEM;
	size_t i = idmap_slot(addr, m->mask);
	while (m->keys[i]) {
		if (m->keys[i] == addr)
			return MSIM_EINVAL;
		i = (i + 1) & m->mask;
	}
	m->keys[i] = addr;
	m->vals[i] = id;
	m->count++;
	return 0;
}

int
msim_idmap_find(const msim_idmap_t *m, uint64_t addr, uint32_t *id_out)
{
	size_t i = idmap_slot(addr, m->mask);
	while (m->keys[i]) {
		if (m->keys[i] == addr) {
			*id_out = m->vals[i];
			return 0;
		}
		i = (i + 1) & m->mask;
	}
	return MSIM_ENOTFOUND;
}

int
msim_idmap_remove(msim_idmap_t *m, uint64_t addr, uint32_t *id_out)
{
	size_t i = idmap_slot(addr, m->mask);
	while (m->keys[i] && m->keys[i] != addr)
		i = (i + 1) & m->mask;
	if (!m->keys[i])
		return MSIM_ENOTFOUND;
	*id_out = m->vals[i];
	int rc = msim_idmap_put_id(m, *id_out);
	if (rc)
		return rc;
	/* Backward-shift deletion keeps every probe chain unbroken. */
	size_t j = i;
	for (;;) {
		j = (j + 1) & m->mask;
		if (!m->keys[j])
			break;
		size_t home = idmap_slot(m->keys[j], m->mask);
		/* Move j into the hole at i if its home is not in (i, j]. */
		if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = 0;
	m->count--;
	return 0;
}
