/*
 * The tags of a trace: what each allocation holds (its category) and
 * where it was made (its site: a module path, or "file:line function" of
 * a Python frame).  A trace keeps each distinct (category, site) pair once
 * and its entries carry a 16-bit tag, so requests stay as small as
 * without tags and a trace that has none pays nothing.  Interning is an
 * open-addressing table over the pairs; when 65535 pairs are in use, a new
 * pair gets its category's site-less tag, so categories stay exact.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "traces/trace_int.h"

static const char *const cat_names[MSIM_NCAT] = {
	[MSIM_CAT_UNTAGGED] = "untagged", [MSIM_CAT_PARAMETER] = "parameter",
	[MSIM_CAT_GRADIENT] = "gradient", [MSIM_CAT_OPTIMIZER] = "optimizer",
	[MSIM_CAT_ACTIVATION] = "activation",
	[MSIM_CAT_TEMPORARY] = "temporary", [MSIM_CAT_INPUT] = "input",
	[MSIM_CAT_OTHER] = "other",
};

const char *
msim_category_name(int category)
{
	return category >= 0 && category < MSIM_NCAT ? cat_names[category]
						     : "untagged";
}

int
msim_category_parse(const char *s, size_t len)
{
	for (int c = 0; c < MSIM_NCAT; c++)
		if (strlen(cat_names[c]) == len && !memcmp(cat_names[c], s, len))
			return c;
	if (len == 15 && !memcmp(s, "optimizer_state", 15))
		return MSIM_CAT_OPTIMIZER;
	return -1;
}

static uint32_t
tags_hash(int category, const char *site, size_t len)
{
	uint32_t h = 2166136261u ^ (uint32_t)category;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)site[i]) * 16777619u;
	return h;
}

/* Appends one tag; returns 0 or MSIM_ENOMEM. */
static int
tags_add(msim_tags_t *tg, int category, const char *site, size_t len)
{
	if (tg->n == tg->cap) {
		uint32_t n = tg->cap ? 2 * tg->cap : 64;
		uint8_t *c = realloc(tg->cat, n);
		if (!c)
			return MSIM_ENOMEM;
		tg->cat = c;
		uint32_t *o = realloc(tg->site, n * sizeof(*o));
		if (!o)
			return MSIM_ENOMEM;
		tg->site = o;
		tg->cap = n;
	}
	if (MSIM_GROW(tg->text, tg->captext, tg->ntext + len + 1, 4096))
		return MSIM_ENOMEM;
	memcpy(tg->text + tg->ntext, site, len);
	tg->text[tg->ntext + len] = '\0';
	tg->cat[tg->n] = (uint8_t)category;
	tg->site[tg->n] = (uint32_t)tg->ntext;
	tg->ntext += len + 1;
	tg->n++;
	return 0;
}

/* Rebuilds the slots at twice the size. */
static int
tags_grow(msim_tags_t *tg)
{
	uint32_t n = tg->nslot ? 2 * tg->nslot : 1024;
	uint16_t *s = calloc(n, sizeof(*s));
	if (!s)
		return MSIM_ENOMEM;
	for (uint32_t tag = MSIM_NCAT; tag < tg->n; tag++) {
		const char *site = tg->text + tg->site[tag];
		uint32_t h = tags_hash(tg->cat[tag], site, strlen(site));
		while (s[h & (n - 1)])
			h++;
		s[h & (n - 1)] = (uint16_t)tag;
	}
	free(tg->slot);
	tg->slot = s;
	tg->nslot = n;
	return 0;
}

int
msim_trace_tag_intern(msim_trace_t *t, int category, const char *site,
		      size_t len, uint16_t *tag_out)
{
	msim_tags_t *tg = &t->tags;
	int rc;
	if (category < 0 || category >= MSIM_NCAT)
		category = MSIM_CAT_OTHER;
	if (tg->n == 0) /* tag 0 and the site-less tags */
		for (int c = 0; c < MSIM_NCAT; c++)
			if ((rc = tags_add(tg, c, "", 0)))
				return rc;
	if (len == 0 || memchr(site, '\0', len)) {
		*tag_out = (uint16_t)category;
		return 0;
	}
	if (2 * (tg->n + 1) > tg->nslot && tg->n < MSIM_TAGS_MAX &&
	    (rc = tags_grow(tg)))
		return rc;
	uint32_t h = tags_hash(category, site, len);
	for (;; h++) {
		uint16_t tag = tg->slot[h & (tg->nslot - 1)];
		if (!tag)
			break;
		const char *s = tg->text + tg->site[tag];
		if (tg->cat[tag] == category && !strncmp(s, site, len) &&
		    s[len] == '\0') {
			*tag_out = tag;
			return 0;
		}
	}
	if (tg->n >= MSIM_TAGS_MAX) {
		*tag_out = (uint16_t)category;
		return 0;
	}
	if ((rc = tags_add(tg, category, site, len)))
		return rc;
	tg->slot[h & (tg->nslot - 1)] = (uint16_t)(tg->n - 1);
	*tag_out = (uint16_t)(tg->n - 1);
	return 0;
}

void
msim_tags_clear(msim_tags_t *tg)
{
	free(tg->cat);
	free(tg->site);
	free(tg->text);
	free(tg->slot);
	memset(tg, 0, sizeof(*tg));
}

size_t
msim_trace_ntags(const msim_trace_t *t)
{
	return t->tags.n ? t->tags.n : 1;
}

bool
msim_trace_tagged(const msim_trace_t *t)
{
	return t->tagged;
}

void
msim_trace_tag(const msim_trace_t *t, uint16_t tag, int *category_out,
	       const char **site_out)
{
	if (tag >= t->tags.n) {
		*category_out = MSIM_CAT_UNTAGGED;
		*site_out = "";
		return;
	}
	*category_out = t->tags.cat[tag];
	*site_out = t->tags.text + t->tags.site[tag];
}

void
msim_trace_writer_set_tags(msim_trace_writer_t *w, const msim_trace_t *src)
{
	w->tags_src = src;
}
