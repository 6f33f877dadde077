/*
 * The parameter parser.  Values are checked against their spec as they are
 * set, so a policy's create() receives only well-formed values and checks
 * only what relates several parameters.
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/params.h"
#include "sim/error.h"

static int
param_fail(msim_params_t *p, const char *key, const char *fmt, const char *val)
{
	char why[160];
	snprintf(why, sizeof(why), fmt, val);
	snprintf(p->errmsg, sizeof(p->errmsg), "%s: %s", key, why);
	return MSIM_EINVAL;
}

/* Parses text into v according to s; on error writes p->errmsg. */
static int
param_parse_value(msim_params_t *p, const msim_param_spec_t *s,
		  const char *text, msim_param_value_t *v, bool is_default)
{
	char *end;
	if (strlen(text) >= sizeof(v->text))
		return param_fail(p, s->name, "value '%.40s...' is too long",
				  text);
	memset(v, 0, sizeof(*v));
	switch (s->type) {
	case MSIM_PT_BOOL:
		if (!strcmp(text, "True") || !strcmp(text, "true") ||
		    !strcmp(text, "1"))
			v->b = true;
		else if (!strcmp(text, "False") || !strcmp(text, "false") ||
			 !strcmp(text, "0"))
			v->b = false;
		else
			return param_fail(p, s->name,
					  "'%s' is not True or False", text);
		snprintf(v->text, sizeof(v->text), "%s",
			 v->b ? "True" : "False");
		return 0;
	case MSIM_PT_UINT:
		if ((s->flags & MSIM_PF_NONE_OK) &&
		    (!strcmp(text, "none") || !strcmp(text, "-1"))) {
			v->none = true;
			snprintf(v->text, sizeof(v->text), "none");
			return 0;
		}
		if (!isdigit((unsigned char)text[0]))
			return param_fail(p, s->name,
					  "'%s' is not a whole number", text);
		errno = 0;
		v->u = strtoull(text, &end, 10);
		if (*end || errno)
			return param_fail(p, s->name,
					  "'%s' is not a whole number", text);
		if (!is_default &&
		    ((double)v->u < s->min || (double)v->u > s->max)) {
			char fmt[96];
			snprintf(fmt, sizeof(fmt), "%%s is outside [%.0f, %.0f]",
				 s->min, s->max);
			return param_fail(p, s->name, fmt, text);
		}
		if ((s->flags & MSIM_PF_POW2) && (v->u & (v->u - 1)))
			return param_fail(p, s->name,
					  "%s is not a power of two", text);
		snprintf(v->text, sizeof(v->text), "%llu",
			 (unsigned long long)v->u);
		return 0;
	case MSIM_PT_DOUBLE:
		errno = 0;
		v->d = strtod(text, &end);
		if (!*text || *end || errno || !isfinite(v->d))
			return param_fail(p, s->name, "'%s' is not a number",
					  text);
		if (!is_default &&
		    (v->d < s->min || v->d > s->max ||
		     ((s->flags & MSIM_PF_MIN_OPEN) && v->d == s->min) ||
		     ((s->flags & MSIM_PF_MAX_OPEN) && v->d == s->max))) {
			char fmt[96];
			snprintf(fmt, sizeof(fmt), "%%s is outside %c%g, %g%c",
				 (s->flags & MSIM_PF_MIN_OPEN) ? '(' : '[',
				 s->min, s->max,
				 (s->flags & MSIM_PF_MAX_OPEN) ? ')' : ']');
			return param_fail(p, s->name, fmt, text);
		}
		/* The shortest text that reads back as the same double. */
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(v->text, sizeof(v->text), "%.*g", prec, v->d);
			if (strtod(v->text, NULL) == v->d)
				break;
		}
		return 0;
	case MSIM_PT_TEXT:
		if (s->check && !is_default) {
			char why[160];
			if (s->check(text, why, sizeof(why)))
				return param_fail(p, s->name, "%s", why);
		}
		snprintf(v->text, sizeof(v->text), "%s", text);
		return 0;
	}
	return param_fail(p, s->name, "bad parameter type%s", "");
}

int
msim_params_init(msim_params_t *p, const msim_param_spec_t *spec)
{
	memset(p, 0, sizeof(*p));
	p->spec = spec;
	while (spec && spec[p->n].name)
		p->n++;
	p->v = calloc(p->n ? p->n : 1, sizeof(*p->v));
	if (!p->v)
		return MSIM_ENOMEM;
	for (size_t i = 0; i < p->n; i++) {
		int rc = param_parse_value(p, &spec[i], spec[i].def, &p->v[i],
					   true);
		if (rc)
			return rc; /* a bad default is a bug of the table */
	}
	return 0;
}

void
msim_params_clear(msim_params_t *p)
{
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

int
msim_params_copy(msim_params_t *dst, const msim_params_t *src)
{
	*dst = *src;
	dst->v = calloc(src->n ? src->n : 1, sizeof(*dst->v));
	if (!dst->v)
		return MSIM_ENOMEM;
	memcpy(dst->v, src->v, src->n * sizeof(*dst->v));
	return 0;
}

int
msim_params_index(const msim_params_t *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->spec[i].name, name))
			return (int)i;
	return -1;
}

int
msim_params_set(msim_params_t *p, const char *key, const char *value)
{
	int i = msim_params_index(p, key);
	if (i < 0) {
		snprintf(p->errmsg, sizeof(p->errmsg),
			 "%s: unknown option (see `memsim policies`)", key);
		return MSIM_EINVAL;
	}
	msim_param_value_t v;
	int rc = param_parse_value(p, &p->spec[i], value, &v, false);
	if (rc)
		return rc;
	v.set = true;
	p->v[i] = v;
	return 0;
}

int
msim_params_parse(msim_params_t *p, const char *conf)
{
	/* Strip whitespace first: PyTorch's tokenizer ignores it. */
	size_t len = strlen(conf);
	char *buf = malloc(len + 1), *w = buf;
	if (!buf)
		return MSIM_ENOMEM;
	for (const char *r = conf; *r; r++)
		if (!isspace((unsigned char)*r))
			*w++ = *r;
	*w = '\0';

	int rc = 0;
	char *s = buf;
	while (*s && !rc) {
		char *sep = s + strcspn(s, ":=,");
		if (sep == s && *sep == ',') {
			snprintf(p->errmsg, sizeof(p->errmsg),
				 "an empty item between commas");
			rc = MSIM_EINVAL;
			break;
		}
		if (*sep != ':' && *sep != '=') {
			snprintf(p->errmsg, sizeof(p->errmsg),
				 "'%.*s': expected key:value", (int)(sep - s), s);
			rc = MSIM_EINVAL;
			break;
		}
		*sep = '\0';
		char *val = sep + 1, *end;
		if (*val == '[') {
			end = strchr(val, ']');
			if (!end) {
				snprintf(p->errmsg, sizeof(p->errmsg),
					 "%s: list value has no closing ']'", s);
				rc = MSIM_EINVAL;
				break;
			}
			end++;
		} else {
			end = val + strcspn(val, ",");
		}
		char next = *end;
		*end = '\0';
		if (!*s || !*val) {
			snprintf(p->errmsg, sizeof(p->errmsg), !*s
				 ? "'%s': a value with no key" : "%s: no value",
				 !*s ? val : s);
			rc = MSIM_EINVAL;
			break;
		}
		rc = msim_params_set(p, s, val);
		if (next == ',')
			end++;
		else if (next != '\0') {
			snprintf(p->errmsg, sizeof(p->errmsg),
				 "%s: unexpected '%c' after the value", s, next);
			rc = MSIM_EINVAL;
		}
		s = end;
	}
	free(buf);
	return rc;
}

size_t
msim_params_canonical(const msim_params_t *p, char *buf, size_t n)
{
	size_t len = 0;
	if (n)
		buf[0] = '\0';
	for (size_t i = 0; i < p->n; i++) {
		msim_param_value_t def;
		msim_params_t tmp = *p;
		if (param_parse_value(&tmp, &p->spec[i], p->spec[i].def, &def,
				      true))
			continue;
		if (!strcmp(def.text, p->v[i].text))
			continue;
		/* buf may be NULL when n is 0 (measuring). */
		int w = snprintf(len < n ? buf + len : NULL,
				 len < n ? n - len : 0, "%s%s:%s",
				 len ? "," : "", p->spec[i].name, p->v[i].text);
		len += (size_t)w;
	}
	return len;
}
