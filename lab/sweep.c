/*
 * Sweeps of sweep.h: planning (expansion of grids, settings files and
 * random draws into checked, de-duplicated settings; shards), the run of
 * one setting, and the pool of worker processes.
 *
 * Workers are forked processes, not threads: a run is single-threaded and
 * memory-bound, SQLite connections must not cross a fork, and a worker that
 * crashes on a bad trace takes no other setting with it.  They take the
 * next setting from a counter in shared memory, so a slow setting does not
 * hold up the others, and each writes its result in its own transaction.
 * On Linux a worker dies with its parent (PR_SET_PDEATHSIG), so a killed
 * sweep leaves no orphans; elsewhere workers notice the parent is gone
 * before their next setting.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
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

#include <gsl/gsl_rng.h>

#include "policies/registry.h"
#include "sim/error.h"
#include "lab/sweep.h"
#include "sim/timemodel.h"
#include "sim/units.h"
#include "traces/gen_model.h"
#include "traces/model_spec.h"
#include "traces/strategy.h"
#include "traces/trace.h"

struct msim_sweep_s {
	msim_setting_t *v; /* every setting of the sweep, de-duplicated */
	size_t n, cap;
	size_t *shard;     /* indexes of this shard's settings in v */
	size_t nshard;
	char **traces, **hashes; /* owned copies */
	msim_model_cfg_t **models; /* parsed model specs; NULL: a file */
	size_t ntraces;
	uint64_t capacity;
	char *spec_text;
	char spec_hash[17];
	msim_sweep_row_t row; /* the sweeps table's row */
};

/* ---------------------------------------------------------------- */
/* Small helpers                                                     */

static double
sweep_now_ms(void)
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

int
msim_file_hash(const char *path, char hex[17], char *why, size_t whylen)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return MSIM_EIO;
	}
	msim_hash_t h;
	msim_hash_init(&h);
	char buf[1 << 16];
	size_t got;
	while ((got = fread(buf, 1, sizeof(buf), fp)) > 0)
		msim_hash_update(&h, buf, got);
	int bad = ferror(fp);
	fclose(fp);
	if (bad) {
		snprintf(why, whylen, "%s: cannot read", path);
		return MSIM_EIO;
	}
	snprintf(hex, 17, "%016" PRIx64, msim_hash_final(&h));
	return 0;
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
	free(s->model_spec);
	free(s->strategy);
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

/*
 * Resolves one combination into a setting of the sweep: routes its keys,
 * checks the parameters against the policy (by creating it), computes the
 * cap and the setting key.
 */
static int
plan_add(plan_ctx_t *pc, size_t trace, const char *policy, uint64_t cap,
	 const kvlist_t *kv)
{
	msim_sweep_t *sw = pc->sw;
	const char *addresses = pc->spec->addresses ? pc->spec->addresses
						    : "model";
	char name[512];
	setting_name(sw->traces[trace], policy, kv, name, sizeof(name));
	/* Route the keys of the run itself first: they may name the policy. */
	for (size_t i = 0; i < kv->n; i++) {
		const char *k = kv->v[i].key, *v = kv->v[i].value;
		if (!strcmp(k, "policy")) {
			policy = v;
		} else if (!strcmp(k, "addresses")) {
			if (strcmp(v, "model") && strcmp(v, "trace")) {
				snprintf(pc->why, pc->whylen, "%s: addresses: "
					 "'%s' is not model or trace", name, v);
				return MSIM_EINVAL;
			}
			addresses = v;
		} else if (!strcmp(k, "cap")) {
			if (msim_parse_bytes(v, &cap)) {
				snprintf(pc->why, pc->whylen, "%s: cap: '%s' is "
					 "not a byte size", name, v);
				return MSIM_EINVAL;
			}
		}
	}
	const msim_policy_ops_t *ops = msim_policy_find(policy);
	if (!ops) {
		snprintf(pc->why, pc->whylen, "%s: unknown policy '%s' (see "
			 "`memsim policies`)", name, policy);
		return MSIM_EINVAL;
	}
	msim_params_t pv;
	if (msim_params_init(&pv, ops->params))
		return MSIM_ENOMEM;
	int rc = 0;
	msim_setting_t s = {0};
	sbuf_t conf = {0};
	/* Strategies and model keys go to the generator (a model spec) or
	 * to the dtype transform (a recording). */
	const msim_model_cfg_t *model = sw->models[trace];
	msim_model_cfg_t mc;
	if (model)
		mc = *model;
	int xdtype = MSIM_DT_FP32;
	for (size_t i = 0; i < kv->n; i++) {
		const char *k = kv->v[i].key, *v = kv->v[i].value;
		char w[320];
		if (!msim_strategy_find(k) && !msim_model_key_is(k))
			continue;
		if (model) {
			rc = msim_model_set(&mc, k, v, w, sizeof(w));
		} else if (!strcmp(k, "dtype")) {
			char spec[128];
			snprintf(spec, sizeof(spec), "dtype=%s", v);
			rc = msim_xform_parse(spec, &xdtype, w, sizeof(w));
		} else {
			snprintf(w, sizeof(w), "%s: needs a model spec as the "
				 "input (a recording takes only dtype, as a "
				 "transform)", k);
			rc = MSIM_EINVAL;
		}
		if (rc) {
			snprintf(pc->why, pc->whylen, "%s: %s", name, w);
			goto out;
		}
		if (conf.n)
			sb_add(&conf, ",");
		sb_add(&conf, k);
		sb_add(&conf, "=");
		sb_add(&conf, v);
	}
	if (model) {
		char w[320], buf[2048];
		if ((rc = msim_model_check(&mc, w, sizeof(w)))) {
			snprintf(pc->why, pc->whylen, "%s: %s", name, w);
			goto out;
		}
		msim_model_spec_canonical(&mc, buf, sizeof(buf));
		s.model_spec = strdup(buf);
		msim_strategy_canonical(&mc, buf, sizeof(buf));
		s.strategy = strdup(buf);
		msim_hash_t h;
		msim_hash_init(&h);
		msim_hash_update(&h, s.model_spec ? s.model_spec : "",
				 s.model_spec ? strlen(s.model_spec) : 0);
		snprintf(buf, sizeof(buf), "%016" PRIx64, msim_hash_final(&h));
		if (!s.model_spec || !s.strategy ||
		    !(s.hash_own = strdup(buf))) {
			rc = MSIM_ENOMEM;
			goto out;
		}
	} else if (xdtype != MSIM_DT_FP32) {
		char buf[64];
		snprintf(buf, sizeof(buf), "transform:dtype=%s",
			 msim_dtype_name(xdtype));
		if (!(s.strategy = strdup(buf))) {
			rc = MSIM_ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < kv->n; i++) {
		const char *k = kv->v[i].key, *v = kv->v[i].value;
		if (!strcmp(k, "policy") || !strcmp(k, "addresses") ||
		    !strcmp(k, "cap") || msim_strategy_find(k) ||
		    msim_model_key_is(k))
			continue;
		if (msim_params_index(&pv, k) < 0) {
			snprintf(pc->why, pc->whylen, "%s: %s: not a parameter "
				 "of policy %s (see `memsim policies`)", name,
				 k, ops->name);
			rc = MSIM_EINVAL;
			goto out;
		}
		if (param_is_default(&pv, k, v))
			continue;
		if (msim_params_set(&pv, k, v)) {
			snprintf(pc->why, pc->whylen, "%s: %s", name,
				 pv.errmsg);
			rc = MSIM_EINVAL;
			goto out;
		}
		if (conf.n)
			sb_add(&conf, ",");
		sb_add(&conf, k);
		sb_add(&conf, ":");
		sb_add(&conf, v);
		msim_kv_t *nv = realloc(s.kv, (s.nkv + 1) * sizeof(*nv));
		if (!nv) {
			rc = MSIM_ENOMEM;
			goto out;
		}
		s.kv = nv;
		nv[s.nkv].key = strdup(k);
		nv[s.nkv].value = strdup(v);
		s.nkv++;
		if (!nv[s.nkv - 1].key || !nv[s.nkv - 1].value) {
			rc = MSIM_ENOMEM;
			goto out;
		}
	}
	/* The policy checks what relates parameters; the device tells the
	 * cap the run will have (a parameter may set it). */
	uint64_t capacity = sw->capacity;
	if (cap > capacity) {
		snprintf(pc->why, pc->whylen, "%s: cap %" PRIu64 " is more "
			 "than the device's %" PRIu64 " bytes", name, cap,
			 capacity);
		rc = MSIM_EINVAL;
		goto out;
	}
	msim_device_config_t dc = {.capacity = capacity};
	msim_device_t *dev = msim_device_new(&dc);
	if (!dev) {
		rc = MSIM_ENOMEM;
		goto out;
	}
	if (cap)
		msim_device_set_fraction(dev, (double)cap / (double)capacity);
	msim_policy_t *pol;
	char why[256];
	if ((rc = msim_policy_new(ops, dev, &pv, &pol, why, sizeof(why)))) {
		snprintf(pc->why, pc->whylen, "%s: %s", name, why);
		msim_device_destroy(dev);
		goto out;
	}
	s.cap_bytes = msim_device_cap(dev);
	msim_policy_destroy(pol);
	msim_device_destroy(dev);

	size_t need = msim_params_canonical(&pv, NULL, 0) + 1;
	s.params = malloc(need);
	s.conf = sb_take(&conf);
	conf.s = NULL;
	if (!s.params || !s.conf) {
		rc = MSIM_ENOMEM;
		goto out;
	}
	msim_params_canonical(&pv, s.params, need);
	s.trace = sw->traces[trace];
	s.trace_hash = s.hash_own ? s.hash_own : sw->hashes[trace];
	s.policy = ops->name;
	s.cap = cap;
	s.addresses = addresses;
	msim_run_info_t info = {
		.kind = "simulated", .trace_hash = s.trace_hash,
		.policy = s.policy, .params = s.params,
		.cap_bytes = s.cap_bytes, .addresses = addresses,
		.capacity_bytes = capacity, .strategy = s.strategy,
	};
	need = msim_db_setting_key(&info, NULL, 0) + 1;
	if (!(s.key = malloc(need))) {
		rc = MSIM_ENOMEM;
		goto out;
	}
	msim_db_setting_key(&info, s.key, need);
	if (sw->n == sw->cap) {
		size_t ncap = sw->cap ? 2 * sw->cap : 64;
		msim_setting_t *v = realloc(sw->v, ncap * sizeof(*v));
		if (!v) {
			rc = MSIM_ENOMEM;
			goto out;
		}
		sw->v = v;
		sw->cap = ncap;
	}
	sw->v[sw->n++] = s;
	memset(&s, 0, sizeof(s));
out:
	free(conf.s);
	setting_clear(&s);
	msim_params_clear(&pv);
	return rc;
}

/* Reads the settings file: one setting a line; '#' starts a comment. */
static int
read_settings_file(const char *path, kvlist_t **out, size_t *n_out,
		   char *why, size_t whylen)
{
	FILE *fp = fopen(path, "r");
	if (!fp) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return MSIM_EIO;
	}
	kvlist_t *v = NULL;
	size_t n = 0, lineno = 0;
	char line[4096];
	int rc = 0;
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(fp)) {
			snprintf(why, whylen, "%s:%zu: line too long", path,
				 lineno);
			rc = MSIM_EFORMAT;
			break;
		}
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		char *t = trim(line);
		if (!*t)
			continue;
		kvlist_t *nv = realloc(v, (n + 1) * sizeof(*nv));
		if (!nv) {
			rc = MSIM_ENOMEM;
			break;
		}
		v = nv;
		memset(&v[n], 0, sizeof(v[n]));
		char w[256];
		if ((rc = kv_parse(&v[n++], t, w, sizeof(w)))) {
			snprintf(why, whylen, "%s:%zu: %s", path, lineno, w);
			break;
		}
	}
	if (!rc && ferror(fp)) {
		snprintf(why, whylen, "%s: cannot read", path);
		rc = MSIM_EIO;
	}
	fclose(fp);
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
	const char *policy = spec->npolicies ? spec->policies[0] : "pytorch";
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
	msim_sweep_t *sw = calloc(1, sizeof(*sw));
	axis_t *axes = calloc(spec->ngrid + 1, sizeof(*axes));
	kvlist_t *base = NULL;
	size_t nbase = 0;
	gsl_rng *rng = NULL;
	int rc = MSIM_ENOMEM;
	why[0] = 0;
	if (!sw || !axes)
		goto fail;
	sw->capacity = spec->capacity ? spec->capacity : MSIM_H200_BYTES;
	sw->traces = calloc(spec->ntraces, sizeof(char *));
	sw->hashes = calloc(spec->ntraces, sizeof(char *));
	sw->models = calloc(spec->ntraces, sizeof(*sw->models));
	if (!sw->traces || !sw->hashes || !sw->models)
		goto fail;
	sw->ntraces = spec->ntraces;
	for (size_t t = 0; t < spec->ntraces; t++) {
		char hex[17];
		msim_trace_t *tr;
		if (msim_model_spec_is(spec->traces[t])) {
			rc = MSIM_ENOMEM;
			if (!(sw->models[t] = malloc(sizeof(msim_model_cfg_t))))
				goto fail;
			char w[512];
			if ((rc = msim_model_spec_parse(spec->traces[t],
							sw->models[t], w,
							sizeof(w)))) {
				snprintf(why, whylen, "%s: %s",
					 spec->traces[t], w);
				goto fail;
			}
			rc = MSIM_ENOMEM;
			if (!(sw->traces[t] = strdup(spec->traces[t])) ||
			    !(sw->hashes[t] = strdup("")))
				goto fail;
			continue;
		}
		/* The format is checked now; errors inside the trace show
		 * when it runs. */
		if ((rc = msim_trace_open(spec->traces[t], NULL, &tr, why,
					  whylen)))
			goto fail;
		msim_trace_close(tr);
		if ((rc = msim_file_hash(spec->traces[t], hex, why, whylen)))
			goto fail;
		rc = MSIM_ENOMEM;
		if (!(sw->traces[t] = strdup(spec->traces[t])) ||
		    !(sw->hashes[t] = strdup(hex)))
			goto fail;
	}
	for (size_t g = 0; g < spec->ngrid; g++)
		if ((rc = axis_parse(&axes[g], spec->grid[g], why, whylen)))
			goto fail;
	if (spec->settings_file) {
		if ((rc = read_settings_file(spec->settings_file, &base, &nbase,
					     why, whylen)))
			goto fail;
	} else {
		rc = MSIM_ENOMEM;
		if (!(base = calloc(1, sizeof(*base))))
			goto fail;
		nbase = 1;
	}
	if (!spec->random)
		for (size_t g = 0; g < spec->ngrid; g++)
			for (size_t k = 0; k < axes[g].n; k++) {
				double lo, hi;
				if (is_range(axes[g].values[k], &lo, &hi)) {
					snprintf(why, whylen, "--grid %s=%s: a "
						 "range needs --random N",
						 axes[g].key, axes[g].values[k]);
					rc = MSIM_EINVAL;
					goto fail;
				}
			}

	static const char *const def_policy[] = {"pytorch"};
	static const uint64_t def_cap[] = {0};
	const char *const *policies = spec->npolicies ? spec->policies
						      : def_policy;
	size_t npolicies = spec->npolicies ? spec->npolicies : 1;
	const uint64_t *caps = spec->ncaps ? spec->caps : def_cap;
	size_t ncaps = spec->ncaps ? spec->ncaps : 1;
	plan_ctx_t pc = {sw, spec, why, whylen};
	size_t *odo = calloc(spec->ngrid + 1, sizeof(*odo));
	if (!odo) {
		rc = MSIM_ENOMEM;
		goto fail;
	}
	if (spec->random) {
		rng = gsl_rng_alloc(gsl_rng_mt19937);
		if (!rng) {
			free(odo);
			rc = MSIM_ENOMEM;
			goto fail;
		}
		gsl_rng_set(rng, (unsigned long)spec->seed);
	}
	rc = 0;
	for (size_t t = 0; !rc && t < spec->ntraces; t++)
	for (size_t p = 0; !rc && p < npolicies; p++)
	for (size_t c = 0; !rc && c < ncaps; c++) {
		if (spec->random) {
			/* The draws repeat for each trace, policy and cap, so
			 * every trace sees the same settings. */
			gsl_rng_set(rng, (unsigned long)spec->seed);
			for (size_t r = 0; !rc && r < spec->random; r++) {
				kvlist_t kv = {0};
				const kvlist_t *b = &base[nbase > 1
					? gsl_rng_uniform_int(rng, nbase) : 0];
				for (size_t i = 0; !rc && i < b->n; i++)
					rc = kv_set(&kv, b->v[i].key,
						    b->v[i].value);
				for (size_t g = 0; !rc && g < spec->ngrid; g++) {
					const axis_t *a = &axes[g];
					const char *v = a->values[
						gsl_rng_uniform_int(rng, a->n)];
					double lo, hi;
					char num[64];
					if (is_range(v, &lo, &hi)) {
						double u = gsl_rng_uniform(rng);
						if (key_is_uint(spec, a->key))
							snprintf(num, sizeof(num),
								 "%.0f", lo + floor(
								 u * (hi - lo + 1)));
						else
							snprintf(num, sizeof(num),
								 "%.4g", lo + u *
								 (hi - lo));
						v = num;
					}
					rc = kv_set(&kv, a->key, v);
				}
				if (!rc)
					rc = plan_add(&pc, t, policies[p],
						      caps[c], &kv);
				kv_clear(&kv);
			}
			continue;
		}
		for (size_t b = 0; !rc && b < nbase; b++) {
			memset(odo, 0, (spec->ngrid + 1) * sizeof(*odo));
			for (;;) {
				kvlist_t kv = {0};
				for (size_t i = 0; !rc && i < base[b].n; i++)
					rc = kv_set(&kv, base[b].v[i].key,
						    base[b].v[i].value);
				for (size_t g = 0; !rc && g < spec->ngrid; g++)
					rc = kv_set(&kv, axes[g].key,
						    axes[g].values[odo[g]]);
				if (!rc)
					rc = plan_add(&pc, t, policies[p],
						      caps[c], &kv);
				kv_clear(&kv);
				if (rc)
					break;
				/* The last axis turns fastest. */
				size_t g = spec->ngrid;
				while (g > 0 && ++odo[g - 1] == axes[g - 1].n)
					odo[--g] = 0;
				if (g == 0)
					break;
			}
		}
	}
	free(odo);
	if (rc) {
		if (!why[0])
			snprintf(why, whylen, "%s", msim_strerror(rc));
		goto fail;
	}
	if ((rc = dedup(sw)))
		goto fail;

	/* This shard: every shard_count-th setting. */
	rc = MSIM_ENOMEM;
	if (!(sw->shard = malloc((sw->n + 1) * sizeof(size_t))))
		goto fail;
	for (size_t i = 0; i < sw->n; i++)
		if (!spec->shard_count ||
		    i % (size_t)spec->shard_count ==
			    (size_t)(spec->shard_index - 1))
			sw->shard[sw->nshard++] = i;

	/* What the sweeps table keeps: every setting key in order (equal
	 * for all shards of one sweep) and a readable summary. */
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
	for (size_t p = 0; p < npolicies; p++) {
		sb_add(&st, p ? "," : "");
		sb_add(&st, policies[p]);
	}
	for (size_t g = 0; g < spec->ngrid; g++) {
		sb_add(&st, " grid ");
		sb_add(&st, spec->grid[g]);
	}
	if (spec->settings_file) {
		sb_add(&st, " settings ");
		sb_add(&st, spec->settings_file);
	}
	if (ncaps > 1 || caps[0]) {
		sb_add(&st, " caps=");
		for (size_t c = 0; c < ncaps; c++) {
			char num[32];
			snprintf(num, sizeof(num), "%s%" PRIu64, c ? "," : "",
				 caps[c]);
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
		goto fail;
	sw->row = (msim_sweep_row_t){
		.kind = "sweep", .spec = sw->spec_text,
		.spec_hash = sw->spec_hash,
		.seed = spec->random ? (int64_t)spec->seed : -1,
		.shard_index = spec->shard_count ? spec->shard_index : 1,
		.shard_count = spec->shard_count ? spec->shard_count : 1,
		.settings = (int64_t)sw->n,
	};
	rc = 0;
	*out = sw;
	sw = NULL;
fail:
	if (rc && why[0] == 0)
		snprintf(why, whylen, "%s", msim_strerror(rc));
	for (size_t g = 0; axes && g < spec->ngrid; g++)
		axis_clear(&axes[g]);
	free(axes);
	for (size_t b = 0; b < nbase; b++)
		kv_clear(&base[b]);
	free(base);
	gsl_rng_free(rng);
	msim_sweep_destroy(sw);
	return rc;
}

void
msim_sweep_destroy(msim_sweep_t *sw)
{
	if (!sw)
		return;
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

/* ---------------------------------------------------------------- */
/* One setting                                                       */

static void
input_meta(msim_input_t *in, const char *key, uint64_t value)
{
	if (in->nmeta == sizeof(in->meta) / sizeof(in->meta[0]))
		return;
	snprintf(in->meta[in->nmeta][0], sizeof(in->meta[0][0]), "%s", key);
	snprintf(in->meta[in->nmeta][1], sizeof(in->meta[0][1]), "%" PRIu64,
		 value);
	in->nmeta++;
}

int
msim_input_open(msim_input_t *in, const char *trace, const char *model_spec,
		const char *strategy, const msim_trace_options_t *topt,
		char *why, size_t whylen)
{
	memset(in, 0, sizeof(*in));
	int rc;
	if (model_spec) {
		/* The canonical shape with the strategies appended. */
		size_t need = strlen(model_spec) + 2 +
			      (strategy ? strlen(strategy) : 0);
		char *text = malloc(need);
		msim_model_cfg_t cfg;
		if (!text || !(in->gen = malloc(sizeof(*in->gen)))) {
			free(text);
			return MSIM_ENOMEM;
		}
		snprintf(text, need, "%s%s%s", model_spec,
			 strategy && *strategy ? "," : "",
			 strategy ? strategy : "");
		rc = msim_model_spec_parse(text, &cfg, why, whylen);
		free(text);
		msim_gen_init(in->gen, false);
		if (!rc)
			rc = msim_model_generate(&cfg, in->gen, why, whylen);
		if (rc) {
			msim_input_close(in);
			return rc;
		}
		in->src = msim_gen_source(in->gen);
		in->format = "model";
		input_meta(in, "recompute_layer_forwards", in->gen->recompute);
		input_meta(in, "generated_peak_allocated_bytes",
			   in->gen->peak);
		return 0;
	}
	if ((rc = msim_trace_open(trace, topt, &in->trace, why, whylen)))
		return rc;
	in->src = msim_trace_source(in->trace);
	in->format = msim_trace_format_name(in->trace);
	const char *pfx = "transform:";
	if (strategy && !strncmp(strategy, pfx, strlen(pfx))) {
		int dtype;
		if ((rc = msim_xform_parse(strategy + strlen(pfx), &dtype,
					   why, whylen)) ||
		    (rc = msim_xform_dtype_new(in->src, dtype, &in->xform, why,
					       whylen))) {
			msim_input_close(in);
			return rc;
		}
		in->src = msim_xform_source(in->xform);
		msim_xform_stats_t xs;
		msim_xform_stats(in->xform, &xs);
		input_meta(in, "transform_params", xs.params);
		input_meta(in, "transform_pshape_allocs", xs.pshape);
		input_meta(in, "transform_act_allocs", xs.act);
		input_meta(in, "transform_cached_forwards", xs.forwards);
	}
	return 0;
}

void
msim_input_close(msim_input_t *in)
{
	msim_xform_destroy(in->xform);
	msim_trace_close(in->trace);
	if (in->gen) {
		msim_gen_clear(in->gen);
		free(in->gen);
	}
	memset(in, 0, sizeof(*in));
}

void
msim_input_meta(const msim_input_t *in, const char *const *base,
		const char **kv_out, size_t n)
{
	size_t k = 0;
	for (; base && base[k] && k + 3 < n; k += 2) {
		kv_out[k] = base[k];
		kv_out[k + 1] = base[k + 1];
	}
	for (size_t i = 0; i < in->nmeta && k + 3 < n; i++, k += 2) {
		kv_out[k] = in->meta[i][0];
		kv_out[k + 1] = in->meta[i][1];
	}
	kv_out[k] = NULL;
}

int
msim_input_describe(const char *trace, const char *transform,
		    char **spec_out, char **strategy_out, char *why,
		    size_t whylen)
{
	*spec_out = *strategy_out = NULL;
	char buf[2048];
	if (msim_model_spec_is(trace)) {
		msim_model_cfg_t cfg;
		int rc;
		if (transform) {
			snprintf(why, whylen, "--transform: applies to a "
				 "recorded trace; give dtype= in the model "
				 "spec");
			return MSIM_EINVAL;
		}
		if ((rc = msim_model_spec_parse(trace, &cfg, why, whylen)))
			return rc;
		msim_model_spec_canonical(&cfg, buf, sizeof(buf));
		*spec_out = strdup(buf);
		msim_strategy_canonical(&cfg, buf, sizeof(buf));
		*strategy_out = strdup(buf);
	} else if (transform) {
		int dtype, rc;
		char w[256];
		if ((rc = msim_xform_parse(transform, &dtype, w, sizeof(w)))) {
			snprintf(why, whylen, "--transform: %s", w);
			return rc;
		}
		if (dtype == MSIM_DT_FP32)
			return 0;
		snprintf(buf, sizeof(buf), "transform:dtype=%s",
			 msim_dtype_name(dtype));
		*strategy_out = strdup(buf);
	} else {
		return 0;
	}
	if ((msim_model_spec_is(trace) && !*spec_out) || !*strategy_out) {
		free(*spec_out);
		free(*strategy_out);
		*spec_out = *strategy_out = NULL;
		return MSIM_ENOMEM;
	}
	return 0;
}

int
msim_setting_run(const msim_setting_t *s, uint64_t capacity,
		 msim_db_t *db, int mode, int64_t sweep_id,
		 int64_t *run_id_out, int *existed_out, msim_summary_t *sum,
		 msim_stats_t *st, char *why, size_t whylen)
{
	*run_id_out = -1;
	*existed_out = 0;
	if (!capacity)
		capacity = MSIM_H200_BYTES;
	const msim_policy_ops_t *ops = msim_policy_find(s->policy);
	if (!ops) {
		snprintf(why, whylen, "unknown policy '%s'", s->policy);
		return MSIM_EINVAL;
	}
	msim_params_t pv;
	if (msim_params_init(&pv, ops->params))
		return MSIM_ENOMEM;
	int rc = 0;
	msim_input_t in = {0};
	msim_sim_t *sim = NULL;
	for (size_t i = 0; i < s->nkv; i++)
		if (!param_is_default(&pv, s->kv[i].key, s->kv[i].value) &&
		    (rc = msim_params_set(&pv, s->kv[i].key, s->kv[i].value))) {
			snprintf(why, whylen, "%s", pv.errmsg);
			goto out;
		}
	/* As memsim run does: free_requested rows applied separately. */
	msim_trace_options_t topt = {.deferred_frees = true};
	if ((rc = msim_input_open(&in, s->trace, s->model_spec, s->strategy,
				  &topt, why, whylen)))
		goto out;
	msim_sim_config_t cfg = {
		.source = in.src,
		.policy = ops,
		.params = &pv,
		.device = {.capacity = capacity, .log_events = db != NULL,
			   .use_hints = !strcmp(s->addresses, "trace")},
		.fraction = s->cap ? (double)s->cap / (double)capacity : 0,
	};
	if ((rc = msim_sim_new(&cfg, &sim, why, whylen)))
		goto out;
	double t0 = sweep_now_ms();
	if ((rc = msim_sim_run(sim))) {
		snprintf(why, whylen, "%s", msim_sim_errmsg(sim));
		goto out;
	}
	double wall_ms = sweep_now_ms() - t0;
	msim_summary_t sm;
	msim_stats_t ss;
	msim_sim_summary(sim, &sm);
	msim_sim_stats(sim, &ss);
	if (sum)
		*sum = sm;
	if (st)
		*st = ss;
	if (db) {
		size_t nev;
		const msim_seg_event_t *ev =
			msim_device_events(msim_sim_device(sim), &nev);
		msim_timemodel_t *tm;
		msim_devtime_t dt = {0};
		if (msim_timemodel_h200(&tm) == 0) {
			msim_timemodel_events(tm, ev, nev, &dt);
			msim_timemodel_destroy(tm);
		}
		msim_sim_meta_t meta;
		msim_sim_meta_fill(&meta, dt.us, "H200 (built in)", &sm);
		const char *kv[32];
		msim_input_meta(&in, meta.kv, kv, 32);
		msim_run_info_t info = {
			.meta = kv, .strategy = s->strategy,
			.kind = "simulated",
			.trace_path = s->model_spec ? s->model_spec : s->trace,
			.trace_hash = s->trace_hash,
			.trace_format = in.format,
			.policy = ops->name, .params = s->params,
			.cap_bytes = msim_device_cap(msim_sim_device(sim)),
			.addresses = s->addresses, .wall_ms = wall_ms,
			.capacity_bytes = capacity, .sweep_id = sweep_id,
		};
		if ((rc = msim_db_store_run_mode(db, &info, &sm, &ss,
						 msim_sim_timeline(sim), ev,
						 nev, mode, run_id_out,
						 existed_out)))
			snprintf(why, whylen, "%s", msim_db_errmsg(db));
	}
out:
	msim_sim_destroy(sim);
	msim_input_close(&in);
	msim_params_clear(&pv);
	return rc;
}

/* ---------------------------------------------------------------- */
/* Execution                                                         */

/* What workers share with the parent (an anonymous shared mapping). */
typedef struct shared_s {
	atomic_size_t next;    /* next index into the pending list */
	atomic_size_t ran;     /* settings stored */
	atomic_size_t raced;   /* found stored by another process */
	atomic_size_t failed;  /* settings that failed */
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
} exec_ctx_t;

/* A worker's loop: takes settings until none is left.  Returns 0, or an
 * error if the database cannot be opened. */
static int
worker_loop(exec_ctx_t *x, int inline_progress, size_t skipped, size_t total)
{
	char why[1024];
	msim_db_t *db;
	if (msim_db_open(x->o->db_path, &db, why, sizeof(why))) {
		if (x->o->error)
			x->o->error(x->o->ctx, NULL, why);
		return MSIM_EDB;
	}
	double last = sweep_now_ms();
	double every = x->o->progress_ms > 0 ? x->o->progress_ms : 250;
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
		/* Another process may have stored it meanwhile. */
		if (!x->o->force && msim_db_find_run(db, s->key, &id) == 0) {
			unsigned char present;
			const char *key = s->key;
			msim_db_sweep_adopt(db, x->sweep_id, &key, 1, &present);
			atomic_fetch_add(&x->sh->raced, 1);
			continue;
		}
		rc = msim_setting_run(s, x->sw->capacity, db,
				      x->o->force ? MSIM_DB_REPLACE
						  : MSIM_DB_SKIP,
				      x->sweep_id, &id, &existed, NULL, NULL,
				      why, sizeof(why));
		if (rc) {
			atomic_fetch_add(&x->sh->failed, 1);
			if (x->o->error)
				x->o->error(x->o->ctx, s, why);
		} else if (existed && !x->o->force) {
			atomic_fetch_add(&x->sh->raced, 1);
		} else {
			atomic_fetch_add(&x->sh->ran, 1);
		}
		atomic_store(&x->sh->cur[x->slot], 0);
		if (inline_progress && x->o->progress &&
		    sweep_now_ms() - last >= every) {
			last = sweep_now_ms();
			x->o->progress(x->o->ctx,
				       skipped + atomic_load(&x->sh->ran) +
					       atomic_load(&x->sh->raced) +
					       atomic_load(&x->sh->failed),
				       total);
		}
	}
	msim_db_close(db);
	return 0;
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
		_exit(worker_loop(x, 0, 0, 0) ? 1 : 0);
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
	if (x->o->error)
		x->o->error(x->o->ctx,
			    msim_sweep_setting(x->sw, x->pending[k - 1]), why);
	return atomic_load(&x->sh->next) < x->npending;
}

int
msim_sweep_exec(msim_sweep_t *sw, const msim_sweep_opts_t *o,
		msim_sweep_result_t *res, char *why, size_t whylen)
{
	memset(res, 0, sizeof(*res));
	double t0 = sweep_now_ms();
	size_t n = sw->nshard;
	res->total = n;
	msim_db_t *db;
	int rc;
	if ((rc = msim_db_open(o->db_path, &db, why, whylen)))
		return rc;
	if (o->kind)
		sw->row.kind = o->kind;
	const char **keys = malloc((n + 1) * sizeof(*keys));
	unsigned char *present = calloc(n + 1, 1);
	size_t *pending = malloc((n + 1) * sizeof(*pending));
	shared_t *sh = MAP_FAILED;
	size_t shsize = 0;
	pid_t *pids = NULL;
	if (!keys || !present || !pending) {
		rc = MSIM_ENOMEM;
		snprintf(why, whylen, "%s", msim_strerror(rc));
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		keys[i] = msim_sweep_setting(sw, i)->key;
	if ((rc = msim_db_sweep_open(db, &sw->row, &res->sweep_id)) ||
	    (!o->force && (rc = msim_db_sweep_adopt(db, res->sweep_id, keys,
						     n, present)))) {
		snprintf(why, whylen, "%s", msim_db_errmsg(db));
		goto out;
	}
	size_t npending = 0;
	for (size_t i = 0; i < n; i++)
		if (!present[i])
			pending[npending++] = i;
	res->skipped = n - npending;
	/* No SQLite connection may cross a fork. */
	msim_db_close(db);
	db = NULL;

	int jobs = o->jobs < 1 ? 1 : o->jobs;
	if ((size_t)jobs > npending)
		jobs = npending ? (int)npending : 1;
	shsize = sizeof(*sh) + (size_t)jobs * sizeof(sh->cur[0]);
	sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		snprintf(why, whylen, "cannot share memory with the workers: "
			 "%s", strerror(errno));
		rc = MSIM_ENOMEM;
		goto out;
	}
	atomic_init(&sh->next, 0);
	atomic_init(&sh->ran, 0);
	atomic_init(&sh->raced, 0);
	atomic_init(&sh->failed, 0);
	for (int k = 0; k < jobs; k++)
		atomic_init(&sh->cur[k], 0);
	exec_ctx_t x = {sw, o, pending, npending, sh, res->sweep_id,
			getpid(), 0};
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
	} else {
		if (!(pids = calloc(jobs, sizeof(*pids)))) {
			rc = MSIM_ENOMEM;
			goto out;
		}
		fflush(NULL);
		int started = 0;
		for (; started < jobs; started++) {
			x.slot = started;
			pid_t pid = sweep_spawn(&x);
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
		int alive = started, died = 0;
		double last = 0, every = o->progress_ms > 0 ? o->progress_ms : 250;
		while (alive) {
			int status;
			pid_t pid = waitpid(-1, &status, WNOHANG);
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
						if (!sweep_reap(&x, k, status))
							continue;
						x.slot = k;
						if ((pids[k] = sweep_spawn(&x)) > 0) {
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
			struct timespec ts = {0, 20 * 1000000L};
			nanosleep(&ts, NULL);
			if (o->progress && sweep_now_ms() - last >= every) {
				last = sweep_now_ms();
				o->progress(o->ctx, res->skipped +
					    atomic_load(&sh->ran) +
					    atomic_load(&sh->raced) +
					    atomic_load(&sh->failed), n);
			}
		}
		if (died) {
			/* A dead worker's setting in hand is neither stored
			 * nor counted: the settings not stored are failed. */
			size_t counted = atomic_load(&sh->ran) +
					 atomic_load(&sh->raced) +
					 atomic_load(&sh->failed);
			if (counted < npending)
				atomic_fetch_add(&sh->failed,
						 npending - counted);
		}
	}
	res->ran = atomic_load(&sh->ran);
	res->skipped += atomic_load(&sh->raced);
	res->failed = atomic_load(&sh->failed);
	if (o->progress)
		o->progress(o->ctx, res->skipped + res->ran + res->failed, n);
	rc = 0;
out:
	res->wall_ms = sweep_now_ms() - t0;
	if (sh != MAP_FAILED)
		munmap(sh, shsize);
	free(pids);
	free(keys);
	free(present);
	free(pending);
	msim_db_close(db);
	return rc;
}
