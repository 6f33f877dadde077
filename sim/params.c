/*
 * The parameter parser.  Values are checked against their spec as they are
 * set, so a policy's create() receives only well-formed values and checks
 * only what relates several parameters.
 */
#include <config.h>

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/params.h"
#include "sim/error.h"
#include "sim/suggest.h"

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

/*
 * The tokens of a settings string as PyTorch's ConfigTokenizer makes them
 * (c10's AllocatorConfig.h): whitespace dropped everywhere, then each of
 * , : [ ] a token of its own and each run of other characters one token.
 * They are written NUL-separated into buf; tok[i] points at each.
 */
typedef struct param_toks_s {
	char *buf;
	const char **tok;
	size_t n;
} param_toks_t;

static int
param_tokenize(const char *conf, param_toks_t *t)
{
	size_t len = strlen(conf);
	t->n = 0;
	t->buf = malloc(2 * len + 1);
	t->tok = malloc((len + 1) * sizeof(*t->tok));
	if (!t->buf || !t->tok)
		return MSIM_ENOMEM;
	char *w = t->buf;
	bool open = false; /* a run of other characters is being written */
	for (const char *r = conf; *r; r++) {
		if (isspace((unsigned char)*r))
			continue;
		if (strchr(",:[]", *r)) {
			if (open)
				*w++ = '\0';
			t->tok[t->n++] = w;
			*w++ = *r;
			*w++ = '\0';
			open = false;
		} else {
			if (!open)
				t->tok[t->n++] = w;
			*w++ = *r;
			open = true;
		}
	}
	if (open)
		*w = '\0';
	return 0;
}

/* std::stoull: an optional sign, then base-10 digits (what follows them is
 * ignored; a minus wraps around).  Returns false where it throws. */
static bool
param_stoull(const char *text, uint64_t *out)
{
	const char *s = text;
	bool neg = *s == '-';
	if (*s == '-' || *s == '+')
		s++;
	if (!isdigit((unsigned char)*s))
		return false;
	uint64_t v = 0;
	for (; isdigit((unsigned char)*s); s++) {
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false; /* out_of_range */
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = neg ? (uint64_t)0 - v : v;
	return true;
}

/* std::stod: strtod's longest prefix.  Returns false where it throws (no
 * number, or out of range). */
static bool
param_stod(const char *text, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(text, &end);
	return end != text && errno != ERANGE;
}

/* The value of key (spec s) at token i, as PyTorch reads it, as the text
 * msim_params_set() takes, into out.  Sets *i_out to the value's last
 * token.  Returns 0 or MSIM_EINVAL with p->errmsg. */
static int
param_value(msim_params_t *p, const msim_param_spec_t *s,
	    const param_toks_t *t, size_t i, size_t *i_out, char *out,
	    size_t n)
{
	const char *v = t->tok[i];
	*i_out = i;
	uint64_t u;
	double d;
	switch (s->type) {
	case MSIM_PT_BOOL:
		/* ConfigTokenizer::toBool() */
		if (strcmp(v, "True") && strcmp(v, "False"))
			return param_fail(p, s->name, "'%s' is not True or "
					  "False (as PyTorch spells them)", v);
		snprintf(out, n, "%s", v);
		return 0;
	case MSIM_PT_UINT:
		if (!param_stoull(v, &u))
			return param_fail(p, s->name, "'%s' is not a whole "
					  "number", v);
		/* PyTorch clamps a size in MiB to SIZE_MAX bytes: past the
		 * table's range that is "unlimited". */
		if ((s->flags & MSIM_PF_NONE_OK) && (double)u > s->max)
			snprintf(out, n, "none");
		else
			snprintf(out, n, "%llu", (unsigned long long)u);
		return 0;
	case MSIM_PT_DOUBLE:
		if (!param_stod(v, &d))
			return param_fail(p, s->name, "'%s' is not a number",
					  v);
		snprintf(out, n, "%.17g", d);
		return 0;
	default:
		break;
	}
	if (strcmp(v, "[")) {
		/* A single value: roundup_power2_divisions' must be a power
		 * of two (0 is not one, for PyTorch). */
		if (!strcmp(s->name, "roundup_power2_divisions")) {
			if (!param_stoull(v, &u))
				return param_fail(p, s->name, "'%s' is not a "
						  "whole number", v);
			if (!u || (u & (u - 1)))
				return param_fail(p, s->name, "%s is not a "
						  "power of two", v);
			snprintf(out, n, "%llu", (unsigned long long)u);
		} else {
			snprintf(out, n, "%s", v);
		}
		return 0;
	}
	/* A list, [B:N,...,>:N], read as parseRoundUpPower2Divisions()
	 * reads it: the token after each B is skipped (PyTorch does not
	 * check it is a ':'), and so is the one after each N unless it is
	 * the ']'. */
	size_t k = 0;
	k += (size_t)snprintf(out + k, n - k, "[");
	while (++i < t->n && strcmp(t->tok[i], "]")) {
		size_t bi = i;
		i += 2;
		if (i >= t->n)
			return param_fail(p, s->name, "list %s", "ends early");
		if (!param_stoull(t->tok[i], &u))
			return param_fail(p, s->name, "'%s' is not a whole "
					  "number", t->tok[i]);
		if (u & (u - 1))
			return param_fail(p, s->name, "divisions %s is not 0 "
					  "or a power of two", t->tok[i]);
		char item[64];
		uint64_t b;
		if (!strcmp(t->tok[bi], ">")) {
			snprintf(item, sizeof(item), ">:%llu",
				 (unsigned long long)u);
		} else if (!param_stoull(t->tok[bi], &b)) {
			return param_fail(p, s->name, "'%s' is not a whole "
					  "number", t->tok[bi]);
		} else if (!b || (b & (b - 1))) {
			return param_fail(p, s->name, "interval %s is not a "
					  "power of two", t->tok[bi]);
		} else {
			snprintf(item, sizeof(item), "%llu:%llu",
				 (unsigned long long)b, (unsigned long long)u);
		}
		if (k + strlen(item) + 3 >= n)
			return param_fail(p, s->name, "list %s", "too long");
		k += (size_t)snprintf(out + k, n - k, "%s%s",
				      k > 1 ? "," : "", item);
		if (i + 1 >= t->n)
			return param_fail(p, s->name, "list %s",
					  "has no closing ']'");
		if (strcmp(t->tok[i + 1], "]"))
			i++;
	}
	if (i >= t->n)
		return param_fail(p, s->name, "list %s", "has no closing ']'");
	snprintf(out + k, n - k, "]");
	*i_out = i;
	return 0;
}

/* An unknown key: its name, and the key meant when one is near. */
static int
param_unknown(msim_params_t *p, const char *key)
{
	const char *names[64];
	size_t n = 0;
	for (size_t i = 0; i < p->n && n < 64; i++)
		names[n++] = p->spec[i].name;
	char base[64];
	snprintf(base, sizeof(base), "%.*s", (int)strcspn(key, "="), key);
	const char *near = msim_suggest(base, names, n);
	if (strchr(",:[]", key[0]) && !key[1])
		snprintf(p->errmsg, sizeof(p->errmsg), "'%s': a separator "
			 "where a key was expected", key);
	else if (strchr(key, '=') && msim_params_index(p, base) >= 0)
		snprintf(p->errmsg, sizeof(p->errmsg), "'%.60s': PyTorch "
			 "takes key:value, not key=value (%s:%s)", key, base,
			 strchr(key, '=') + 1);
	else if (near)
		snprintf(p->errmsg, sizeof(p->errmsg), "'%.60s': unknown key "
			 "(did you mean %s?)", key, near);
	else
		snprintf(p->errmsg, sizeof(p->errmsg), "'%.60s': unknown key "
			 "(see `memsim policies`)", key);
	return MSIM_EINVAL;
}

int
msim_params_parse(msim_params_t *p, const char *conf)
{
	/* As PyTorch's AcceleratorAllocatorConfig::parseArgs() and the CUDA
	 * allocator's CUDAAllocatorConfig::parseArgs() read it: KEY, a
	 * token (':', not checked), VALUE, then a token skipped (','; not
	 * checked either) before the next KEY.  A key neither knows is
	 * refused, as the CUDA build refuses it. */
	param_toks_t t = {0};
	int rc = param_tokenize(conf, &t);
	for (size_t i = 0; !rc && i < t.n; i++) {
		const char *key = t.tok[i];
		int ix = msim_params_index(p, key);
		if (ix < 0) {
			rc = param_unknown(p, key);
			break;
		}
		if (i + 2 >= t.n) {
			snprintf(p->errmsg, sizeof(p->errmsg), "%s: %s", key,
				 i + 1 < t.n && !strcmp(t.tok[i + 1], ":")
				 ? "no value" : "expected key:value");
			rc = MSIM_EINVAL;
			break;
		}
		char text[sizeof(((msim_param_value_t *)0)->text)];
		if ((rc = param_value(p, &p->spec[ix], &t, i + 2, &i, text,
				      sizeof(text))) ||
		    (rc = msim_params_set(p, key, text)))
			break;
		if (i + 1 < t.n)
			i++;
	}
	free(t.buf);
	free(t.tok);
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
