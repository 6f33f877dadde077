/*
 * Sweeps of sweep.h: planning (expansion of grids, settings files and
 * random draws into checked, de-duplicated settings; shards), and
 * msim_sweep_exec(): which settings are pending, the traces read once for
 * them (sweep_cache.c), then the pool of worker processes of sweep_pool.c
 * runs them.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_rng.h>

#include "policies/registry.h"
#include "sim/error.h"
#include "sim/file.h"
#include "lab/job.h"
#include "lab/sweep_int.h"
#include "sim/timemodel.h"
#include "sim/units.h"
#include "sim/grow.h"
#include "traces/gen_model.h"
#include "traces/model_spec.h"
#include "traces/strategy.h"
#include "traces/trace.h"


/* ---------------------------------------------------------------- */
/* Small helpers                                                     */

double
msim_sweep_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A growing string. */
typedef struct sbuf_s {
	char *s;
	size_t n, cap;
	int oom;
} sbuf_t;

static void
sb_add(sbuf_t *b, const char *text)
{
	size_t k = strlen(text);
	if (b->oom)
		return;
	if (b->n + k + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->n + k + 1)
			cap *= 2;
		char *s = realloc(b->s, cap);
		if (!s) {
			b->oom = 1;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
	memcpy(b->s + b->n, text, k + 1);
	b->n += k;
}

static char *
sb_take(sbuf_t *b)
{
	if (!b->s && !b->oom)
		sb_add(b, "");
	if (b->oom) {
		free(b->s);
		return NULL;
	}
	return b->s;
}

static char *
trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' ||
		     s[n - 1] == '\r'))
		s[--n] = 0;
	return s;
}

/* ---------------------------------------------------------------- */
/* Settings as key=value lists                                       */

typedef struct kvlist_s {
	msim_kv_t *v;
	size_t n;
} kvlist_t;

static void
kv_clear(kvlist_t *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].key);
		free(l->v[i].value);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Appends key=value (a later value of a key replaces the earlier one). */
static int
kv_set(kvlist_t *l, const char *key, const char *value)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].key, key)) {
			char *v = strdup(value);
			if (!v)
				return MSIM_ENOMEM;
			free(l->v[i].value);
			l->v[i].value = v;
			return 0;
		}
	msim_kv_t *v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return MSIM_ENOMEM;
	l->v = v;
	v[l->n].key = strdup(key);
	v[l->n].value = strdup(value);
	if (!v[l->n].key || !v[l->n].value) {
		free(v[l->n].key);
		free(v[l->n].value);
		return MSIM_ENOMEM;
	}
	l->n++;
	return 0;
}

/* Splits "key:value" or "key=value" at the first ':' or '='. */
static int
kv_split(char *pair, char **key_out, char **value_out)
{
	char *sep = pair + strcspn(pair, ":=");
	if (!*sep)
		return -1;
	*sep = 0;
	*key_out = trim(pair);
	*value_out = trim(sep + 1);
	return **key_out && **value_out ? 0 : -1;
}

/* Parses one "k:v,k:v" line into l; why says what is wrong. */
static int
kv_parse(kvlist_t *l, const char *line, char *why, size_t whylen)
{
	char *copy = strdup(line);
	char *parts[64];
	if (!copy)
		return MSIM_ENOMEM;
	int n = msim_split_commas(copy, parts, 64);
	int rc = 0;
	if (n < 0) {
		snprintf(why, whylen, "unbalanced brackets or too many keys");
		rc = MSIM_EINVAL;
	}
	for (int i = 0; !rc && i < n; i++) {
		char *k, *v;
		if (!*parts[i])
			continue;
		if (kv_split(parts[i], &k, &v)) {
			snprintf(why, whylen, "'%s' is not key:value",
				 parts[i]);
			rc = MSIM_EINVAL;
		} else {
			rc = kv_set(l, k, v);
		}
	}
	free(copy);
	return rc;
}

/* One --grid axis. */
typedef struct axis_s {
	char *key;
	char **values;
	size_t n;
	char *buf;
} axis_t;

static void
axis_clear(axis_t *a)
{
	free(a->key);
	free(a->values);
	free(a->buf);
}

static int
axis_parse(axis_t *a, const char *text, char *why, size_t whylen)
{
	memset(a, 0, sizeof(*a));
	char *copy = strdup(text);
	if (!copy)
		return MSIM_ENOMEM;
	char *k, *v;
	if (kv_split(copy, &k, &v)) {
		snprintf(why, whylen, "--grid '%s': expected key=v1,v2,...",
			 text);
		free(copy);
		return MSIM_EINVAL;
	}
	a->key = strdup(k);
	a->buf = strdup(v);
	free(copy);
	char *parts[1024];
	int n = a->buf ? msim_split_commas(a->buf, parts, 1024) : -1;
	if (!a->key || !a->buf || n <= 0) {
		snprintf(why, whylen, "--grid '%s': %s", text,
			 n < 0 && a->buf ? "unbalanced brackets or more than "
			 "1024 values" : "no values");
		return a->key && a->buf ? MSIM_EINVAL : MSIM_ENOMEM;
	}
	if (!(a->values = malloc(n * sizeof(char *))))
		return MSIM_ENOMEM;
	for (int i = 0; i < n; i++) {
		if (!*parts[i]) {
			snprintf(why, whylen, "--grid '%s': an empty value",
				 text);
			return MSIM_EINVAL;
		}
		a->values[i] = parts[i];
	}
	a->n = (size_t)n;
	return 0;
}

/* Whether v is a range "LO..HI" of a random search. */
static int
is_range(const char *v, double *lo, double *hi)
{
	const char *dots = strstr(v, "..");
	if (!dots)
		return 0;
	/* Parse LO on its own: strtod() would read "64." of "64..512". */
	char lo_text[64], *end;
	size_t n = (size_t)(dots - v);
	if (n == 0 || n >= sizeof(lo_text))
		return 0;
	memcpy(lo_text, v, n);
	lo_text[n] = '\0';
	*lo = strtod(lo_text, &end);
	if (*end)
		return 0;
	*hi = strtod(dots + 2, &end);
	return dots[2] && !*end && *hi >= *lo;
}

/* ---------------------------------------------------------------- */
/* Planning                                                          */

typedef struct plan_ctx_s {
	msim_sweep_t *sw;
	const msim_sweep_spec_t *spec;
	char *why;
	size_t whylen;
} plan_ctx_t;

static void
setting_clear(msim_setting_t *s)
{
	for (size_t i = 0; i < s->nkv; i++) {
		free(s->kv[i].key);
		free(s->kv[i].value);
	}
	free(s->kv);
	free(s->model_spec_own);
	free(s->strategy_own);
	free(s->hash_own);
	free(s->conf);
	free(s->params);
	free(s->key);
	memset(s, 0, sizeof(*s));
}

/* Whether value is the parameter's default as the table spells it: "0"
 * for garbage_collection_threshold is the default (off) even though 0 is
 * not a value it accepts, so a grid can include "off". */
static int
param_is_default(const msim_params_t *pv, const char *key, const char *value)
{
	int i = msim_params_index(pv, key);
	return i >= 0 && pv->spec[i].def && !strcmp(pv->spec[i].def, value);
}

/* Names the setting for error messages: "trace.csv, pytorch k:v". */
static void
setting_name(const char *trace, const char *policy, const kvlist_t *kv,
	     char *buf, size_t n)
{
	int k = snprintf(buf, n, "%s, %s", trace, policy);
	for (size_t i = 0; i < kv->n && k > 0 && (size_t)k < n; i++)
		k += snprintf(buf + k, n - k, "%s%s:%s", i ? "," : " ",
			      kv->v[i].key, kv->v[i].value);
}

/* ---------------------------------------------------------------- */
/* Key routing: where each key of a setting goes                     */

/* A setting's keys, routed in one walk over them. */
typedef struct route_ctx_s {
	plan_ctx_t *pc;
	const char *name;           /* the setting, for messages */
	const char *policy, *addresses;
	uint64_t cap;
	const msim_model_cfg_t *model; /* the trace's model spec; NULL: a
					* file */
	msim_model_cfg_t mc;        /* model with the setting's keys */
	int xdtype;                 /* a file's dtype transform */
	const char *label;          /* what made the recording; NULL: none */
	sbuf_t conf;                /* "k=v,..." of the input's keys */
	const msim_kv_t **params;   /* the policy's keys, checked once the
				     * policy is known */
	size_t nparams;
} route_ctx_t;

/* One route: the keys it takes and what it does with one. */
typedef struct route_s {
	int (*takes)(const char *key);
	int (*apply)(route_ctx_t *r, const msim_kv_t *kv);
} route_t;

/* The run's own keys: policy, addresses, cap. */
static int
route_takes_run(const char *k)
{
	return !strcmp(k, "policy") || !strcmp(k, "addresses") ||
	       !strcmp(k, "cap");
}

static int
route_run(route_ctx_t *r, const msim_kv_t *kv)
{
	const char *k = kv->key, *v = kv->value;
	plan_ctx_t *pc = r->pc;
	if (!strcmp(k, "policy")) {
		r->policy = v;
	} else if (!strcmp(k, "addresses")) {
		if (strcmp(v, "model") && strcmp(v, "trace")) {
			snprintf(pc->why, pc->whylen, "%s: addresses: '%s' is "
				 "not model or trace", r->name, v);
			return MSIM_EINVAL;
		}
		r->addresses = v;
	} else if (msim_parse_bytes(v, &r->cap)) {
		snprintf(pc->why, pc->whylen, "%s: cap: '%s' is not a byte "
			 "size", r->name, v);
		return MSIM_EINVAL;
	}
	return 0;
}

/* Strategies and model keys: to the generator of a model spec, or to the
 * dtype transform of a recording. */
static int
route_takes_input(const char *k)
{
	return msim_strategy_find(k) || msim_model_key_is(k);
}

static int
route_input(route_ctx_t *r, const msim_kv_t *kv)
{
	const char *k = kv->key, *v = kv->value;
	char w[320];
	int rc;
	if (r->model) {
		rc = msim_model_set(&r->mc, k, v, w, sizeof(w));
	} else if (!strcmp(k, "dtype")) {
		char spec[128];
		snprintf(spec, sizeof(spec), "dtype=%s", v);
		rc = msim_xform_parse(spec, &r->xdtype, w, sizeof(w));
	} else {
		snprintf(w, sizeof(w), "%s: needs a model spec as the input (a "
			 "recording takes only dtype, as a transform)", k);
		rc = MSIM_EINVAL;
	}
	if (rc) {
		snprintf(r->pc->why, r->pc->whylen, "%s: %s", r->name, w);
		return rc;
	}
	if (r->conf.n)
		sb_add(&r->conf, ",");
	sb_add(&r->conf, k);
	sb_add(&r->conf, "=");
	sb_add(&r->conf, v);
	return 0;
}

/* Anything else: a parameter of the policy. */
static int
route_takes_param(const char *k)
{
	(void)k;
	return 1;
}

static int
route_param(route_ctx_t *r, const msim_kv_t *kv)
{
	r->params[r->nparams++] = kv;
	return 0;
}

/* Walked in order; the first route that takes a key gets it. */
static const route_t routes[] = {
	{route_takes_run, route_run},
	{route_takes_input, route_input},
	{route_takes_param, route_param},
};

/* The input of s: a model spec's canonical shape, strategies and hash,
 * or a recording's transform. */
static int
setting_input(route_ctx_t *r, msim_setting_t *s)
{
	char buf[2048];
	if (!r->model) {
		if (r->xdtype == MSIM_DT_FP32 && !r->label)
			return 0;
		int k = 0;
		if (r->xdtype != MSIM_DT_FP32)
			k = snprintf(buf, sizeof(buf), "transform:dtype=%s",
				     msim_dtype_name(r->xdtype));
		if (r->label &&
		    (size_t)snprintf(buf + k, sizeof(buf) - (size_t)k,
				     "%srecord:%s", k ? ";" : "", r->label) >=
			    sizeof(buf) - (size_t)k) {
			snprintf(r->pc->why, r->pc->whylen, "%s: the "
				 "recording's parameters are too long",
				 r->name);
			return MSIM_EINVAL;
		}
		return (s->strategy_own = strdup(buf)) ? 0 : MSIM_ENOMEM;
	}
	char w[320];
	int rc = msim_model_check(&r->mc, w, sizeof(w));
	if (rc) {
		snprintf(r->pc->why, r->pc->whylen, "%s: %s", r->name, w);
		return rc;
	}
	msim_model_spec_canonical(&r->mc, buf, sizeof(buf));
	s->model_spec_own = strdup(buf);
	msim_strategy_canonical(&r->mc, buf, sizeof(buf));
	s->strategy_own = strdup(buf);
	msim_hash_t h;
	msim_hash_init(&h);
	msim_hash_update(&h, s->model_spec_own ? s->model_spec_own : "",
			 s->model_spec_own ? strlen(s->model_spec_own) : 0);
	snprintf(buf, sizeof(buf), "%016" PRIx64, msim_hash_final(&h));
	if (!s->model_spec_own || !s->strategy_own ||
	    !(s->hash_own = strdup(buf)))
		return MSIM_ENOMEM;
	return 0;
}

/* The policy's keys: checked against its table, the defaults dropped,
 * the others set in pv, kept in s and appended to conf. */
static int
setting_params(route_ctx_t *r, const msim_policy_ops_t *ops,
	       msim_params_t *pv, msim_setting_t *s)
{
	plan_ctx_t *pc = r->pc;
	for (size_t i = 0; i < r->nparams; i++) {
		const char *k = r->params[i]->key, *v = r->params[i]->value;
		if (msim_params_index(pv, k) < 0) {
			snprintf(pc->why, pc->whylen, "%s: %s: not a parameter "
				 "of policy %s (see `memsim policies`)",
				 r->name, k, ops->name);
			return MSIM_EINVAL;
		}
		if (param_is_default(pv, k, v))
			continue;
		if (msim_params_set(pv, k, v)) {
			snprintf(pc->why, pc->whylen, "%s: %s", r->name,
				 pv->errmsg);
			return MSIM_EINVAL;
		}
		if (r->conf.n)
			sb_add(&r->conf, ",");
		sb_add(&r->conf, k);
		sb_add(&r->conf, ":");
		sb_add(&r->conf, v);
		msim_kv_t *nv = realloc(s->kv, (s->nkv + 1) * sizeof(*nv));
		if (!nv)
			return MSIM_ENOMEM;
		s->kv = nv;
		nv[s->nkv].key = strdup(k);
		nv[s->nkv].value = strdup(v);
		s->nkv++;
		if (!nv[s->nkv - 1].key || !nv[s->nkv - 1].value)
			return MSIM_ENOMEM;
	}
	return 0;
}

/* The policy checks what relates parameters; the device tells the cap the
 * run will have (a parameter may set it). */
static int
setting_cap(route_ctx_t *r, const msim_policy_ops_t *ops,
	    const msim_params_t *pv, msim_setting_t *s)
{
	plan_ctx_t *pc = r->pc;
	uint64_t capacity = pc->sw->capacity;
	if (r->cap > capacity) {
		snprintf(pc->why, pc->whylen, "%s: cap %" PRIu64 " is more "
			 "than the device's %" PRIu64 " bytes", r->name, r->cap,
			 capacity);
		return MSIM_EINVAL;
	}
	msim_device_config_t dc = {.capacity = capacity};
	msim_device_t *dev = msim_device_new(&dc);
	if (!dev)
		return MSIM_ENOMEM;
	if (r->cap)
		msim_device_set_fraction(dev, msim_cap_fraction(r->cap,
								capacity));
	msim_policy_t *pol;
	char why[256];
	int rc = msim_policy_new(ops, dev, pv, &pol, why, sizeof(why));
	if (rc) {
		snprintf(pc->why, pc->whylen, "%s: %s", r->name, why);
	} else {
		s->cap_bytes = msim_device_cap(dev);
		msim_policy_destroy(pol);
	}
	msim_device_destroy(dev);
	return rc;
}

/* The canonical parameters (spec.conf) and the setting key of s. */
static int
setting_key(const msim_params_t *pv, msim_setting_t *s)
{
	size_t need = msim_params_canonical(pv, NULL, 0) + 1;
	if (!(s->params = malloc(need)))
		return MSIM_ENOMEM;
	msim_params_canonical(pv, s->params, need);
	s->spec.conf = s->params;
	need = msim_job_setting_key(&s->spec, s->spec.trace_hash,
				    s->spec.strategy, s->params, s->cap_bytes,
				    NULL, 0) + 1;
	if (!(s->key = malloc(need)))
		return MSIM_ENOMEM;
	msim_job_setting_key(&s->spec, s->spec.trace_hash, s->spec.strategy,
			     s->params, s->cap_bytes, s->key, need);
	return 0;
}

static int
sweep_push(msim_sweep_t *sw, msim_setting_t *s)
{
	if (MSIM_GROW(sw->v, sw->cap, sw->n + 1, 64))
		return MSIM_ENOMEM;
	sw->v[sw->n++] = *s;
	memset(s, 0, sizeof(*s));
	return 0;
}

/*
 * Resolves one combination into a setting of the sweep: routes its keys
 * (one walk over routes[]), resolves the input, checks the parameters
 * against the policy (by creating it), computes the cap and the setting
 * key.
 */
static int
plan_add(plan_ctx_t *pc, size_t trace, const char *policy, uint64_t cap,
	 const kvlist_t *kv)
{
	msim_sweep_t *sw = pc->sw;
	char name[512];
	setting_name(sw->traces[trace], policy, kv, name, sizeof(name));
	route_ctx_t r = {
		.pc = pc, .name = name, .policy = policy, .cap = cap,
		.addresses = pc->spec->addresses ? pc->spec->addresses
						 : "model",
		.model = sw->models[trace], .xdtype = MSIM_DT_FP32,
		.label = pc->spec->labels ? pc->spec->labels[trace] : NULL,
	};
	if (r.model)
		r.mc = *r.model;
	msim_setting_t s = {0};
	msim_params_t pv;
	int pv_init = 0, rc = 0;
	if (kv->n && !(r.params = malloc(kv->n * sizeof(*r.params))))
		return MSIM_ENOMEM;
	for (size_t i = 0; !rc && i < kv->n; i++) {
		const route_t *ro = routes;
		while (!ro->takes(kv->v[i].key))
			ro++;
		rc = ro->apply(&r, &kv->v[i]);
	}
	const msim_policy_ops_t *ops = rc ? NULL : msim_policy_find(r.policy);
	if (!rc && !ops) {
		snprintf(pc->why, pc->whylen, "%s: unknown policy '%s' (see "
			 "`memsim policies`)", name, r.policy);
		rc = MSIM_EINVAL;
	}
	if (!rc && !(rc = msim_params_init(&pv, ops->params)))
		pv_init = 1;
	if (!rc)
		rc = setting_input(&r, &s);
	if (!rc)
		rc = setting_params(&r, ops, &pv, &s);
	if (!rc)
		rc = setting_cap(&r, ops, &pv, &s);
	if (!rc) {
		s.conf = sb_take(&r.conf);
		r.conf.s = NULL;
		s.spec = (msim_job_spec_t){
			.trace = sw->traces[trace],
			.model_spec = s.model_spec_own,
			.strategy = s.strategy_own,
			.trace_hash = s.hash_own ? s.hash_own
						 : sw->hashes[trace],
			.policy = ops->name, .cap = r.cap,
			.capacity = sw->capacity, .addresses = r.addresses,
			.origin = pc->spec->origins ? pc->spec->origins[trace]
						    : NULL,
		};
		rc = s.conf ? setting_key(&pv, &s) : MSIM_ENOMEM;
	}
	if (!rc)
		rc = sweep_push(sw, &s);
	free(r.conf.s);
	free(r.params);
	setting_clear(&s);
	if (pv_init)
		msim_params_clear(&pv);
	return rc;
}

/* Reads the settings file: one setting a line; '#' starts a comment. */
static int
read_settings_file(const char *path, kvlist_t **out, size_t *n_out,
		   char *why, size_t whylen)
{
	/* Read with a size limit (sim/file.h): a settings file given
	 * /dev/zero or an endless FIFO is an error, not a heap that grows. */
	msim_text_t tx;
	int rc = msim_text_open(&tx, path, NULL, MSIM_TEXT_MAX, why, whylen);
	if (rc)
		return rc;
	kvlist_t *v = NULL;
	size_t n = 0, vcap = 0;
	char line[4096];
	while ((rc = msim_text_line(&tx, line, sizeof(line), why, whylen)) ==
	       1) {
		size_t lineno = tx.lineno;
		rc = 0;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		char *t = trim(line);
		if (!*t)
			continue;
		if (MSIM_GROW(v, vcap, n + 1, 64)) { /* not a copy a line */
			rc = MSIM_ENOMEM;
			break;
		}
		memset(&v[n], 0, sizeof(v[n]));
		char w[256];
		if ((rc = kv_parse(&v[n++], t, w, sizeof(w)))) {
			snprintf(why, whylen, "%s:%zu: %s", path, lineno, w);
			break;
		}
	}
	msim_text_close(&tx);
	if (!rc && !n) {
		snprintf(why, whylen, "%s: no settings in the file", path);
		rc = MSIM_EFORMAT;
	}
	if (rc) {
		for (size_t i = 0; i < n; i++)
			kv_clear(&v[i]);
		free(v);
		return rc;
	}
	*out = v;
	*n_out = n;
	return 0;
}

/* The type of key for random draws: UINT params draw whole numbers. */
static int
key_is_uint(const msim_sweep_spec_t *spec, const char *key)
{
	const char *policy = spec->npolicies ? spec->policies[0]
						 : MSIM_POLICY_DEFAULT;
	const msim_policy_ops_t *ops = msim_policy_find(policy);
	for (const msim_param_spec_t *p = ops ? ops->params : NULL; p && p->name;
	     p++)
		if (!strcmp(p->name, key))
			return p->type == MSIM_PT_UINT;
	return 0;
}

/* Sorts indexes by setting key, then by position (for de-duplication). */
static const msim_setting_t *sort_v;

static int
cmp_key(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int c = strcmp(sort_v[i].key, sort_v[j].key);
	return c ? c : (i > j) - (i < j);
}

/* Drops settings whose key came earlier, keeping the order. */
static int
dedup(msim_sweep_t *sw)
{
	if (sw->n < 2)
		return 0;
	size_t *ix = malloc(sw->n * sizeof(*ix));
	unsigned char *drop = calloc(sw->n, 1);
	if (!ix || !drop) {
		free(ix);
		free(drop);
		return MSIM_ENOMEM;
	}
	for (size_t i = 0; i < sw->n; i++)
		ix[i] = i;
	sort_v = sw->v;
	qsort(ix, sw->n, sizeof(*ix), cmp_key);
	for (size_t k = 1; k < sw->n; k++)
		if (!strcmp(sw->v[ix[k]].key, sw->v[ix[k - 1]].key))
			drop[ix[k]] = 1;
	size_t m = 0;
	for (size_t i = 0; i < sw->n; i++) {
		if (drop[i])
			setting_clear(&sw->v[i]);
		else
			sw->v[m++] = sw->v[i];
	}
	sw->n = m;
	free(ix);
	free(drop);
	return 0;
}

/* The traces of spec: each file's format checked and its hash taken,
 * each model spec parsed. */
static int
plan_traces(msim_sweep_t *sw, const msim_sweep_spec_t *spec, char *why,
	    size_t whylen)
{
	sw->traces = calloc(spec->ntraces, sizeof(char *));
	sw->hashes = calloc(spec->ntraces, sizeof(char *));
	sw->models = calloc(spec->ntraces, sizeof(*sw->models));
	if (!sw->traces || !sw->hashes || !sw->models)
		return MSIM_ENOMEM;
	sw->ntraces = spec->ntraces;
	for (size_t t = 0; t < spec->ntraces; t++) {
		char hex[17] = "";
		msim_trace_t *tr;
		int rc;
		if (msim_model_spec_is(spec->traces[t])) {
			if (!(sw->models[t] = malloc(sizeof(msim_model_cfg_t))))
				return MSIM_ENOMEM;
			char w[512];
			if ((rc = msim_model_spec_parse(spec->traces[t],
							sw->models[t], w,
							sizeof(w)))) {
				snprintf(why, whylen, "%s: %s",
					 spec->traces[t], w);
				return rc;
			}
		} else {
			/* The format is checked now; errors inside the trace
			 * show when it runs. */
			if ((rc = msim_trace_open(spec->traces[t], NULL, &tr,
						  why, whylen)))
				return rc;
			msim_trace_close(tr);
			if ((rc = msim_file_hash(spec->traces[t], hex, why,
						 whylen)))
				return rc;
		}
		if (!(sw->traces[t] = strdup(spec->traces[t])) ||
		    !(sw->hashes[t] = strdup(hex)))
			return MSIM_ENOMEM;
	}
	return 0;
}

/* What the settings combine: the grid's axes and the base settings (the
 * settings file's lines, or one empty setting). */
typedef struct plan_src_s {
	axis_t *axes;
	kvlist_t *base;
	size_t nbase;
	const char *const *policies;
	size_t npolicies;
	const uint64_t *caps;
	size_t ncaps;
} plan_src_t;

static int
plan_sources(const msim_sweep_spec_t *spec, plan_src_t *src, char *why,
	     size_t whylen)
{
	static const char *const def_policy[] = {MSIM_POLICY_DEFAULT};
	static const uint64_t def_cap[] = {0};
	int rc;
	src->policies = spec->npolicies ? spec->policies : def_policy;
	src->npolicies = spec->npolicies ? spec->npolicies : 1;
	src->caps = spec->ncaps ? spec->caps : def_cap;
	src->ncaps = spec->ncaps ? spec->ncaps : 1;
	if (!(src->axes = calloc(spec->ngrid + 1, sizeof(*src->axes))))
		return MSIM_ENOMEM;
	for (size_t g = 0; g < spec->ngrid; g++)
		if ((rc = axis_parse(&src->axes[g], spec->grid[g], why,
				     whylen)))
			return rc;
	if (spec->settings_file) {
		if ((rc = read_settings_file(spec->settings_file, &src->base,
					     &src->nbase, why, whylen)))
			return rc;
	} else {
		if (!(src->base = calloc(1, sizeof(*src->base))))
			return MSIM_ENOMEM;
		src->nbase = 1;
	}
	for (size_t g = 0; !spec->random && g < spec->ngrid; g++)
		for (size_t k = 0; k < src->axes[g].n; k++) {
			double lo, hi;
			if (is_range(src->axes[g].values[k], &lo, &hi)) {
				snprintf(why, whylen, "--grid %s=%s: a range "
					 "needs --random N", src->axes[g].key,
					 src->axes[g].values[k]);
				return MSIM_EINVAL;
			}
		}
	return 0;
}

static void
plan_sources_clear(const msim_sweep_spec_t *spec, plan_src_t *src)
{
	for (size_t g = 0; src->axes && g < spec->ngrid; g++)
		axis_clear(&src->axes[g]);
	free(src->axes);
	for (size_t b = 0; b < src->nbase; b++)
		kv_clear(&src->base[b]);
	free(src->base);
}

/* One random draw: a base setting and a value (or a point of a range)
 * of every axis. */
static int
plan_draw(plan_ctx_t *pc, const plan_src_t *src, gsl_rng *rng,
	  size_t t, const char *policy, uint64_t cap)
{
	const msim_sweep_spec_t *spec = pc->spec;
	kvlist_t kv = {0};
	int rc = 0;
	const kvlist_t *b = &src->base[src->nbase > 1
		? gsl_rng_uniform_int(rng, src->nbase) : 0];
	for (size_t i = 0; !rc && i < b->n; i++)
		rc = kv_set(&kv, b->v[i].key, b->v[i].value);
	for (size_t g = 0; !rc && g < spec->ngrid; g++) {
		const axis_t *a = &src->axes[g];
		const char *v = a->values[gsl_rng_uniform_int(rng, a->n)];
		double lo, hi;
		char num[64];
		if (is_range(v, &lo, &hi)) {
			double u = gsl_rng_uniform(rng);
			if (key_is_uint(spec, a->key))
				snprintf(num, sizeof(num), "%.0f",
					 lo + floor(u * (hi - lo + 1)));
			else
				snprintf(num, sizeof(num), "%.4g",
					 lo + u * (hi - lo));
			v = num;
		}
		rc = kv_set(&kv, a->key, v);
	}
	if (!rc)
		rc = plan_add(pc, t, policy, cap, &kv);
	kv_clear(&kv);
	return rc;
}

/* The integers of the range "LO..HI" in *n (LO and HI whole, n at most
 * 2^53); 0 when v is no such range. */
static int
int_range(const char *v, double *lo, double *hi, double *n)
{
	if (!is_range(v, lo, hi) || *lo != floor(*lo) || *hi != floor(*hi) ||
	    *hi - *lo >= 9007199254740992.0)
		return 0;
	*n = *hi - *lo + 1;
	return 1;
}

/*
 * The settings a random search over src can draw for one trace, policy
 * and cap: the base settings times the values of each axis, an integer
 * range of an integer key counting its integers; SIZE_MAX when a range of
 * reals makes them uncountable or they pass SIZE_MAX.
 */
static size_t
plan_space(const msim_sweep_spec_t *spec, const plan_src_t *src)
{
	double total = (double)src->nbase;
	for (size_t g = 0; g < spec->ngrid; g++) {
		const axis_t *a = &src->axes[g];
		double n = 0;
		for (size_t k = 0; k < a->n; k++) {
			double lo, hi, m;
			if (!is_range(a->values[k], &lo, &hi)) {
				n += 1;
				continue;
			}
			if (!key_is_uint(spec, a->key) ||
			    !int_range(a->values[k], &lo, &hi, &m))
				return SIZE_MAX;
			n += m;
		}
		total *= n;
	}
	return total < (double)SIZE_MAX ? (size_t)total : SIZE_MAX;
}

/* Replaces each integer range of a by its integers (plan_space() counted
 * them). */
static int
axis_expand(axis_t *a)
{
	size_t n = 0, len = 0;
	for (size_t k = 0; k < a->n; k++) {
		double lo, hi, m;
		if (int_range(a->values[k], &lo, &hi, &m)) {
			n += (size_t)m;
			len += (size_t)m * 24;
		} else {
			n++;
			len += strlen(a->values[k]) + 1;
		}
	}
	char **v = malloc(n * sizeof(*v));
	char *buf = malloc(len), *p = buf;
	if (!v || !buf) {
		free(v);
		free(buf);
		return MSIM_ENOMEM;
	}
	size_t i = 0;
	for (size_t k = 0; k < a->n; k++) {
		double lo, hi, m;
		if (int_range(a->values[k], &lo, &hi, &m)) {
			for (double x = lo; x <= hi; x++) {
				v[i++] = p;
				p += snprintf(p, 24, "%.0f", x) + 1;
			}
		} else {
			size_t l = strlen(a->values[k]) + 1;
			v[i++] = memcpy(p, a->values[k], l);
			p += l;
		}
	}
	free(a->values);
	free(a->buf);
	a->values = v;
	a->buf = buf;
	a->n = n;
	return 0;
}

/* The cartesian product of the axes over one base setting; the last axis
 * turns fastest. */
static int
plan_grid(plan_ctx_t *pc, const plan_src_t *src, const kvlist_t *base,
	  size_t *odo, size_t t, const char *policy, uint64_t cap)
{
	size_t ngrid = pc->spec->ngrid;
	memset(odo, 0, (ngrid + 1) * sizeof(*odo));
	for (;;) {
		kvlist_t kv = {0};
		int rc = 0;
		for (size_t i = 0; !rc && i < base->n; i++)
			rc = kv_set(&kv, base->v[i].key, base->v[i].value);
		for (size_t g = 0; !rc && g < ngrid; g++)
			rc = kv_set(&kv, src->axes[g].key,
				    src->axes[g].values[odo[g]]);
		if (!rc)
			rc = plan_add(pc, t, policy, cap, &kv);
		kv_clear(&kv);
		if (rc)
			return rc;
		size_t g = ngrid;
		while (g > 0 && ++odo[g - 1] == src->axes[g - 1].n)
			odo[--g] = 0;
		if (g == 0)
			return 0;
	}
}

/* Every setting of the sweep, in a fixed order: trace, policy, cap, then
 * the draws or the grid over each base setting. */
static int
plan_expand(plan_ctx_t *pc, plan_src_t *src)
{
	const msim_sweep_spec_t *spec = pc->spec;
	size_t *odo = calloc(spec->ngrid + 1, sizeof(*odo));
	gsl_rng *rng = NULL;
	int rc = 0;
	/* A random search over a grid of no more settings than it draws is
	 * the grid itself: its settings, each once, at the cost of the grid
	 * and not of the draws (--random 1000000000 over 449 settings). */
	size_t space = spec->random ? plan_space(spec, src) : SIZE_MAX;
	bool whole = spec->random && space <= spec->random;
	if (whole) {
		snprintf(pc->sw->note, sizeof(pc->sw->note), "--random %zu: "
			 "the grid holds %zu setting%s, taking each once",
			 spec->random, space, space == 1 ? "" : "s");
		for (size_t g = 0; !rc && g < spec->ngrid; g++)
			rc = axis_expand(&src->axes[g]);
	}
	if (!odo || (spec->random && !whole &&
		     !(rng = gsl_rng_alloc(gsl_rng_mt19937))))
		rc = MSIM_ENOMEM;
	for (size_t t = 0; !rc && t < spec->ntraces; t++)
	for (size_t p = 0; !rc && p < src->npolicies; p++)
	for (size_t c = 0; !rc && c < src->ncaps; c++) {
		const char *policy = src->policies[p];
		uint64_t cap = src->caps[c];
		if (spec->random && !whole) {
			/* The draws repeat for each trace, policy and cap, so
			 * every trace sees the same settings. */
			gsl_rng_set(rng, (unsigned long)spec->seed);
			for (size_t r = 0; !rc && r < spec->random; r++)
				rc = plan_draw(pc, src, rng, t, policy, cap);
			continue;
		}
		for (size_t b = 0; !rc && b < src->nbase; b++)
			rc = plan_grid(pc, src, &src->base[b], odo, t, policy,
				       cap);
	}
	free(odo);
	gsl_rng_free(rng);
	return rc;
}

/* This shard's settings (every shard_count-th) and what the sweeps table
 * keeps: every setting key in order (equal for all shards of one sweep)
 * and a readable summary. */
static int
plan_finish(msim_sweep_t *sw, const msim_sweep_spec_t *spec,
	    const plan_src_t *src)
{
	if (!(sw->shard = malloc((sw->n + 1) * sizeof(size_t))))
		return MSIM_ENOMEM;
	for (size_t i = 0; i < sw->n; i++)
		if (!spec->shard_count ||
		    i % (size_t)spec->shard_count ==
			    (size_t)(spec->shard_index - 1))
			sw->shard[sw->nshard++] = i;
	msim_hash_t h;
	msim_hash_init(&h);
	for (size_t i = 0; i < sw->n; i++)
		msim_hash_update(&h, sw->v[i].key, strlen(sw->v[i].key) + 1);
	snprintf(sw->spec_hash, sizeof(sw->spec_hash), "%016" PRIx64,
		 msim_hash_final(&h));
	sbuf_t st = {0};
	sb_add(&st, "traces=");
	for (size_t t = 0; t < spec->ntraces; t++) {
		sb_add(&st, t ? "," : "");
		sb_add(&st, spec->traces[t]);
	}
	sb_add(&st, " policies=");
	for (size_t p = 0; p < src->npolicies; p++) {
		sb_add(&st, p ? "," : "");
		sb_add(&st, src->policies[p]);
	}
	for (size_t g = 0; g < spec->ngrid; g++) {
		sb_add(&st, " grid ");
		sb_add(&st, spec->grid[g]);
	}
	if (spec->settings_file) {
		sb_add(&st, " settings ");
		sb_add(&st, spec->settings_file);
	}
	if (src->ncaps > 1 || src->caps[0]) {
		sb_add(&st, " caps=");
		for (size_t c = 0; c < src->ncaps; c++) {
			char num[32];
			snprintf(num, sizeof(num), "%s%" PRIu64, c ? "," : "",
				 src->caps[c]);
			sb_add(&st, num);
		}
	}
	if (spec->random) {
		char num[96];
		snprintf(num, sizeof(num), " random=%zu seed=%" PRIu64,
			 spec->random, spec->seed);
		sb_add(&st, num);
	}
	if (!(sw->spec_text = sb_take(&st)))
		return MSIM_ENOMEM;
	sw->row = (msim_sweep_row_t){
		.kind = "sweep", .spec = sw->spec_text,
		.spec_hash = sw->spec_hash,
		.seed = spec->random ? (int64_t)spec->seed : -1,
		.shard_index = spec->shard_count ? spec->shard_index : 1,
		.shard_count = spec->shard_count ? spec->shard_count : 1,
		.settings = (int64_t)sw->n,
	};
	return 0;
}

/* How many settings the spec makes of each trace at least, before
 * de-duplication: its grid's values, policies and caps multiplied, or its
 * random draws (a settings file only multiplies them). */
static size_t
plan_ways(const msim_sweep_spec_t *spec)
{
	size_t ways = spec->random ? spec->random : 1;
	for (size_t g = 0; !spec->random && g < spec->ngrid; g++) {
		size_t values = 1;
		for (const char *c = strchr(spec->grid[g], '='); c && *c; c++)
			values += *c == ',';
		ways *= values;
	}
	return ways * (spec->npolicies ? spec->npolicies : 1) *
	       (spec->ncaps ? spec->ncaps : 1);
}

int
msim_sweep_plan(const msim_sweep_spec_t *spec, msim_sweep_t **out,
		char *why, size_t whylen)
{
	if (!spec->ntraces) {
		snprintf(why, whylen, "no trace to sweep");
		return MSIM_EINVAL;
	}
	if (spec->shard_count < 0 || spec->shard_index < 0 ||
	    (spec->shard_count && (spec->shard_index < 1 ||
				   spec->shard_index > spec->shard_count))) {
		snprintf(why, whylen, "shard %d/%d: I must be in 1..N",
			 spec->shard_index, spec->shard_count);
		return MSIM_EINVAL;
	}
	why[0] = 0;
	plan_src_t src = {0};
	msim_sweep_t *sw = calloc(1, sizeof(*sw));
	if (!sw) {
		snprintf(why, whylen, "%s", msim_strerror(MSIM_ENOMEM));
		return MSIM_ENOMEM;
	}
	sw->capacity = spec->capacity ? spec->capacity : MSIM_H200_BYTES;
	plan_ctx_t pc = {sw, spec, why, whylen};
	if (spec->preload && plan_ways(spec) >= 2)
		msim_sweep_preload_start(sw, spec);
	int rc = plan_traces(sw, spec, why, whylen);
	if (!rc)
		rc = plan_sources(spec, &src, why, whylen);
	if (!rc)
		rc = plan_expand(&pc, &src);
	if (!rc)
		rc = dedup(sw);
	if (!rc)
		rc = plan_finish(sw, spec, &src);
	if (rc && why[0] == 0)
		snprintf(why, whylen, "%s", msim_strerror(rc));
	plan_sources_clear(spec, &src);
	if (rc) {
		msim_sweep_destroy(sw);
		return rc;
	}
	*out = sw;
	return 0;
}

void
msim_sweep_destroy(msim_sweep_t *sw)
{
	if (!sw)
		return;
	msim_sweep_preload_join(sw);
	/* A plan that failed read traces it had not counted yet. */
	for (size_t t = sw->ntraces; sw->caches && t < sw->npreload; t++)
		msim_trace_cache_clear(&sw->caches[t]);
	msim_sweep_unshare(sw);
	for (size_t i = 0; i < sw->n; i++)
		setting_clear(&sw->v[i]);
	free(sw->v);
	free(sw->shard);
	for (size_t t = 0; t < sw->ntraces; t++) {
		free(sw->traces[t]);
		free(sw->hashes[t]);
		free(sw->models ? sw->models[t] : NULL);
	}
	free(sw->models);
	free(sw->traces);
	free(sw->hashes);
	free(sw->spec_text);
	free(sw);
}

const char *
msim_sweep_note(const msim_sweep_t *sw)
{
	return sw->note;
}

size_t
msim_sweep_total(const msim_sweep_t *sw)
{
	return sw->n;
}

size_t
msim_sweep_count(const msim_sweep_t *sw)
{
	return sw->nshard;
}

const msim_setting_t *
msim_sweep_setting(const msim_sweep_t *sw, size_t i)
{
	return i < sw->nshard ? &sw->v[sw->shard[i]] : NULL;
}

const char *
msim_sweep_spec_text(const msim_sweep_t *sw)
{
	return sw->spec_text;
}

const char *
msim_sweep_spec_hash(const msim_sweep_t *sw)
{
	return sw->spec_hash;
}


static void *
sweep_load_thread(void *arg)
{
	msim_sweep_t *sw = arg;
	msim_sweep_load(sw, NULL, sw->nshard);
	return NULL;
}

static void
sweep_count_failed(void *ctx, const msim_db_failed_t *f)
{
	(void)f;
	(*(size_t *)ctx)++;
}

int
msim_sweep_exec(msim_sweep_t *sw, const msim_sweep_opts_t *o,
		msim_sweep_result_t *res, char *why, size_t whylen)
{
	memset(res, 0, sizeof(*res));
	double t0 = msim_sweep_now_ms();
	size_t n = sw->nshard;
	res->total = n;
	msim_db_t *db = NULL;
	int rc;
	/* A new database (or --force): every setting is pending, so the
	 * traces are read while the database is made (mostly waits for the
	 * disk), on a thread of their own; else once the pending settings
	 * are known (none may be, a resumed sweep of a large trace). */
	pthread_t loader;
	bool preloaded = sw->preloading || sw->caches;
	bool fresh = o->force || access(o->db_path, F_OK);
	bool loading = !preloaded && fresh &&
		       !pthread_create(&loader, NULL, sweep_load_thread, sw);
	/* Then the workers need not wait for the database either: they are
	 * forked as soon as the traces are read, and replay their first
	 * settings while the parent makes it (a new file's schema, the
	 * sweep's row: about 3 ms, mostly waiting for the disk), waiting
	 * for it only to store them (worker_db()). */
	bool early = fresh && o->jobs >= 1 && n > 0;
	const char **keys = NULL;
	unsigned char *present = NULL;
	size_t *pending = NULL;
	bool kept_wal = false;  /* closed by msim_db_keep_wal() */
	if (o->kind)
		sw->row.kind = o->kind;
	keys = malloc((n + 1) * sizeof(*keys));
	present = calloc(n + 1, 1);
	pending = malloc((n + 1) * sizeof(*pending));
	if (!keys || !present || !pending) {
		rc = MSIM_ENOMEM;
		snprintf(why, whylen, "%s", msim_strerror(rc));
		goto out;
	}
	size_t npending = 0;
	if (early) {
		/* Every setting is pending: none can be stored in a new
		 * file, and --force runs them all again. */
		for (size_t i = 0; i < n; i++)
			pending[npending++] = i;
		goto load;
	}
	if ((rc = msim_db_open(o->db_path, &db, why, whylen)))
		goto out;
	for (size_t i = 0; i < n; i++)
		keys[i] = msim_sweep_setting(sw, i)->key;
	if ((rc = msim_db_sweep_open(db, &sw->row, &res->sweep_id)) ||
	    (!o->force && (rc = msim_db_sweep_adopt(db, res->sweep_id, keys,
						     n, present)))) {
		snprintf(why, whylen, "%s", msim_db_errmsg(db));
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (!present[i])
			pending[npending++] = i;
		else
			msim_db_sweep_unfail(db, res->sweep_id, keys[i]);
	res->skipped = n - npending;
	/* Settings that failed before are run again (the cause may be gone:
	 * a full disk, a fixed trace, a newer memsim), and counted so that
	 * the sweep says so. */
	if (!o->force &&
	    (rc = msim_db_sweep_failed(db, res->sweep_id, sweep_count_failed,
				       &res->retried))) {
		snprintf(why, whylen, "%s", msim_db_errmsg(db));
		goto out;
	}
	/* No SQLite connection may cross a fork.  The WAL it wrote (a new
	 * file's schema, the sweep's row) is left for the workers to add
	 * to, not copied into the file and deleted (three fsyncs, then two
	 * more for the next WAL): the parent's connection checkpoints it. */
	msim_db_keep_wal(db);
	msim_db_close(db);
	db = NULL;
	kept_wal = true;
load:
	if (loading) {
		pthread_join(loader, NULL);
		loading = false;
	} else if (preloaded) {
		msim_sweep_preload_join(sw);
	} else {
		msim_sweep_load(sw, pending, npending);
	}
	msim_sweep_share(sw, pending, npending);

	rc = msim_sweep_pool_run(sw, o, pending, npending, early, res, &db,
				 why, whylen);
out:
	if (loading)
		pthread_join(loader, NULL);
	msim_sweep_preload_join(sw);
	msim_sweep_unshare(sw);
	res->wall_ms = msim_sweep_now_ms() - t0;
	free(keys);
	free(present);
	free(pending);
	/* The WAL left before the fork is copied into the file whatever
	 * happened since (its last connection closing does it). */
	char ignored[256];
	if (kept_wal && !db &&
	    msim_db_open(o->db_path, &db, ignored, sizeof(ignored)))
		db = NULL;
	msim_db_close(db);
	return rc;
}
