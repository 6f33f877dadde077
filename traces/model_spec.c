/*
 * Model specs (model_spec.h): the keys of `memsim gen model` as one
 * comma-separated list, with the same ranges as the command line, so a
 * spec is accepted exactly when the equivalent `gen model` is.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "traces/model_spec.h"
#include "traces/strategy.h"

bool
msim_model_spec_is(const char *text)
{
	return text && !strncmp(text, MSIM_MODEL_SPEC_PREFIX,
				strlen(MSIM_MODEL_SPEC_PREFIX));
}

/* The shape keys, each with the range `memsim gen model` accepts. */
typedef struct spec_key_s {
	const char *name;
	uint64_t min, max;
} spec_key_t;

static const spec_key_t spec_keys[] = {
	{"layers", 1, 1000},
	{"hidden", 1, 1 << 20},
	{"heads", 1, 4096},
	{"kv_heads", 1, 4096},
	{"ffn", 1, 1 << 22},
	{"vocab", 1, 1 << 24},
	{"positions", 1, 1 << 24},
	{"batch", 1, 1 << 20},
	{"seq", 1, 1 << 24},
	{"image", 32, 4096},
	{"steps", 1, 1000000},
	{"scaler_skips", 0, 1000000},
	{"optimizer", 0, 0},
	{"inference", 0, 0},
	{"generate", 0, 1 << 24},
	{"use_cache", 0, 0},
	{"accum", 1, 1000000},
	{"weights", 0, 0},
	{NULL, 0, 0},
};

/* key with '-' read as '_' (kv-heads = kv_heads). */
static const spec_key_t *
spec_key_find(const char *key)
{
	char k[32];
	size_t n = strlen(key);
	if (n >= sizeof(k))
		return NULL;
	for (size_t i = 0; i <= n; i++)
		k[i] = key[i] == '-' ? '_' : key[i];
	for (const spec_key_t *s = spec_keys; s->name; s++)
		if (!strcmp(s->name, k))
			return s;
	return NULL;
}

bool
msim_model_key_is(const char *key)
{
	return spec_key_find(key) != NULL;
}

static int
spec_uint(const spec_key_t *k, const char *text, uint64_t *out, char *why,
	  size_t whylen)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (end == text || *end || text[0] == '-' || text[0] == '+' ||
	    text[0] == ' ') {
		snprintf(why, whylen, "%s: '%s' is %s", k->name, text,
			 text[0] == '-' ? "negative" : "not a whole number");
		return MSIM_EINVAL;
	}
	if (errno == ERANGE) {
		snprintf(why, whylen, "%s: '%s' is too large (at most %llu)",
			 k->name, text, (unsigned long long)k->max);
		return MSIM_EINVAL;
	}
	if (v < k->min || v > k->max) {
		snprintf(why, whylen, "%s: %llu is not in [%llu, %llu]",
			 k->name, v, (unsigned long long)k->min,
			 (unsigned long long)k->max);
		return MSIM_EINVAL;
	}
	*out = v;
	return 0;
}

static int
spec_seq(msim_model_cfg_t *cfg, const spec_key_t *k, const char *value,
	 char *why, size_t whylen)
{
	char buf[1024];
	size_t n = strlen(value);
	if (n >= sizeof(buf) - 1) {
		snprintf(why, whylen, "seq: too long");
		return MSIM_EINVAL;
	}
	if (value[0] == '[' && n >= 2 && value[n - 1] == ']') {
		memcpy(buf, value + 1, n - 2);
		buf[n - 2] = 0;
	} else {
		memcpy(buf, value, n + 1);
	}
	size_t nseq = 0;
	uint64_t seq[MSIM_MODEL_MAXSEQ];
	char *save = NULL;
	for (char *t = strtok_r(buf, ",/", &save); t;
	     t = strtok_r(NULL, ",/", &save)) {
		if (nseq == MSIM_MODEL_MAXSEQ) {
			snprintf(why, whylen, "seq: at most %d lengths",
				 MSIM_MODEL_MAXSEQ);
			return MSIM_EINVAL;
		}
		if (spec_uint(k, t, &seq[nseq++], why, whylen))
			return MSIM_EINVAL;
	}
	if (!nseq) {
		snprintf(why, whylen, "seq: no length given");
		return MSIM_EINVAL;
	}
	memcpy(cfg->seq, seq, nseq * sizeof(seq[0]));
	cfg->nseq = nseq;
	return 0;
}

int
msim_model_set(msim_model_cfg_t *cfg, const char *key, const char *value,
	       char *why, size_t whylen)
{
	if (msim_strategy_find(key))
		return msim_strategy_set(cfg, key, value, why, whylen);
	const spec_key_t *k = spec_key_find(key);
	if (!k) {
		snprintf(why, whylen, "%s: not a key of a model spec (arch, "
			 "layers, hidden, heads, kv_heads, ffn, vocab, "
			 "positions, batch, seq, image, steps, optimizer, "
			 "inference, generate, use_cache, accum, weights, "
			 "scaler_skips, dtype, checkpoint)", key);
		return MSIM_EINVAL;
	}
	if (!strcmp(k->name, "seq"))
		return spec_seq(cfg, k, value, why, whylen);
	if (!strcmp(k->name, "optimizer")) {
		if (!strcmp(value, "adamw"))
			cfg->optimizer = MSIM_OPT_ADAMW;
		else if (!strcmp(value, "sgd"))
			cfg->optimizer = MSIM_OPT_SGD;
		else {
			snprintf(why, whylen, "optimizer: unknown optimizer "
				 "'%s' (adamw, sgd)", value);
			return MSIM_EINVAL;
		}
		return 0;
	}
	if (!strcmp(k->name, "inference") || !strcmp(k->name, "use_cache")) {
		bool v;
		if (!strcmp(value, "1") || !strcmp(value, "yes") ||
		    !strcmp(value, "true"))
			v = true;
		else if (!strcmp(value, "0") || !strcmp(value, "no") ||
			 !strcmp(value, "false"))
			v = false;
		else {
			snprintf(why, whylen, "%s: '%s' is not 0 or 1",
				 k->name, value);
			return MSIM_EINVAL;
		}
		if (k->name[0] == 'i')
			cfg->inference = v;
		else
			cfg->no_cache = !v;
		return 0;
	}
	if (!strcmp(k->name, "weights")) {
		int w = msim_weights_parse(value);
		if (w < 0) {
			snprintf(why, whylen, "weights: unknown weights '%s' "
				 "(native, int8, fp8)", value);
			return MSIM_EINVAL;
		}
		cfg->weights = w;
		return 0;
	}
	uint64_t v;
	if (spec_uint(k, value, &v, why, whylen))
		return MSIM_EINVAL;
	uint64_t *field = !strcmp(k->name, "layers") ? &cfg->layers
			: !strcmp(k->name, "hidden") ? &cfg->hidden
			: !strcmp(k->name, "heads") ? &cfg->heads
			: !strcmp(k->name, "kv_heads") ? &cfg->kv_heads
			: !strcmp(k->name, "ffn") ? &cfg->ffn
			: !strcmp(k->name, "vocab") ? &cfg->vocab
			: !strcmp(k->name, "positions") ? &cfg->positions
			: !strcmp(k->name, "batch") ? &cfg->batch
			: !strcmp(k->name, "image") ? &cfg->image
			: !strcmp(k->name, "steps") ? &cfg->steps
			: !strcmp(k->name, "generate") ? &cfg->generate
			: !strcmp(k->name, "accum") ? &cfg->accum
			: &cfg->scaler_skips;
	*field = v;
	return 0;
}

int
msim_split_commas(char *s, char **parts, int max)
{
	int n = 0, depth = 0;
	char *start = s;
	for (char *p = s;; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if ((*p == ',' && depth == 0) || !*p) {
			int end = !*p;
			*p = 0;
			if (n == max)
				return -1;
			while (*start == ' ' || *start == '\t')
				start++;
			char *e = p;
			while (e > start && (e[-1] == ' ' || e[-1] == '\t' ||
					     e[-1] == '\n' || e[-1] == '\r'))
				*--e = 0;
			parts[n++] = start;
			start = p + 1;
			if (end)
				break;
		}
	}
	return depth ? -1 : n;
}

static int
spec_arch(const char *s)
{
	for (int a = MSIM_ARCH_GPT2; a <= MSIM_ARCH_RESNET50; a++)
		if (!strcmp(s, msim_arch_name(a)))
			return a;
	return -1;
}

int
msim_model_spec_parse(const char *text, msim_model_cfg_t *cfg, char *why,
		      size_t whylen)
{
	if (!msim_model_spec_is(text)) {
		snprintf(why, whylen, "'%s' is not a model spec (model:arch="
			 "A,key=value,...)", text);
		return MSIM_EINVAL;
	}
	char *copy = strdup(text + strlen(MSIM_MODEL_SPEC_PREFIX));
	char *parts[64];
	if (!copy)
		return MSIM_ENOMEM;
	int n = msim_split_commas(copy, parts, 64), rc = 0, arch = -1;
	if (n < 0) {
		snprintf(why, whylen, "unbalanced brackets or "
			 "too many keys");
		rc = MSIM_EINVAL;
	}
	/* The arch first: its defaults come before the other keys. */
	for (int i = 0; !rc && i < n; i++) {
		char *eq = strchr(parts[i], '=');
		if (!eq || eq == parts[i] || !eq[1]) {
			snprintf(why, whylen, "'%s' is not "
				 "key=value", parts[i]);
			rc = MSIM_EINVAL;
		} else if (!strncmp(parts[i], "arch=", 5)) {
			if ((arch = spec_arch(eq + 1)) < 0) {
				snprintf(why, whylen, "arch: unknown "
					 "architecture '%s' (gpt2, llama, "
					 "bert, resnet50)", eq + 1);
				rc = MSIM_EINVAL;
			}
		}
	}
	if (!rc && arch < 0) {
		snprintf(why, whylen, "arch: required in a model spec (gpt2, "
			 "llama, bert, resnet50)");
		rc = MSIM_EINVAL;
	}
	if (!rc) {
		msim_model_defaults(cfg, arch);
		cfg->inference = false; /* training unless inference=1 */
	}
	for (int i = 0; !rc && i < n; i++) {
		char *eq = strchr(parts[i], '=');
		*eq = 0;
		if (strcmp(parts[i], "arch"))
			rc = msim_model_set(cfg, parts[i], eq + 1, why,
					    whylen);
	}
	free(copy);
	if (!rc)
		rc = msim_model_check(cfg, why, whylen);
	return rc;
}

size_t
msim_model_spec_canonical(const msim_model_cfg_t *c, char *buf, size_t n)
{
	char seq[MSIM_MODEL_MAXSEQ * 12] = "";
	size_t k = 0;
	for (size_t i = 0; i < c->nseq && k < sizeof(seq); i++)
		k += snprintf(seq + k, sizeof(seq) - k, "%s%" PRIu64,
			      i ? "/" : "", c->seq[i]);
	int len;
	if (c->arch == MSIM_ARCH_RESNET50)
		len = snprintf(buf, n, "%sarch=%s,batch=%" PRIu64 ",image=%"
			       PRIu64 ",steps=%" PRIu64 ",optimizer=%s,"
			       "scaler_skips=%" PRIu64, MSIM_MODEL_SPEC_PREFIX,
			       msim_arch_name(c->arch), c->batch, c->image,
			       c->steps, c->optimizer == MSIM_OPT_SGD ? "sgd"
			       : "adamw", c->scaler_skips);
	else
		len = snprintf(buf, n, "%sarch=%s,layers=%" PRIu64 ",hidden=%"
			       PRIu64 ",heads=%" PRIu64 ",kv_heads=%" PRIu64
			       ",ffn=%" PRIu64 ",vocab=%" PRIu64 ",positions=%"
			       PRIu64 ",batch=%" PRIu64 ",seq=%s,steps=%"
			       PRIu64 ",optimizer=%s,inference=%d,"
			       "scaler_skips=%" PRIu64, MSIM_MODEL_SPEC_PREFIX,
			       msim_arch_name(c->arch), c->layers, c->hidden,
			       c->heads, c->kv_heads ? c->kv_heads : c->heads,
			       msim_model_ffn(c), c->vocab,
			       c->positions, c->batch, seq, c->steps,
			       c->optimizer == MSIM_OPT_SGD ? "sgd" : "adamw",
			       c->inference ? 1 : 0, c->scaler_skips);
	/* the keys added later, only where they are not the default, so
	 * that the specs stored before them keep their text */
	char extra[160] = "";
	size_t e = 0;
	if (c->generate)
		e += snprintf(extra + e, sizeof(extra) - e, ",generate=%"
			      PRIu64, c->generate);
	if (c->no_cache && e < sizeof(extra))
		e += snprintf(extra + e, sizeof(extra) - e, ",use_cache=0");
	if (c->accum > 1 && e < sizeof(extra))
		e += snprintf(extra + e, sizeof(extra) - e, ",accum=%" PRIu64,
			      c->accum);
	if (c->weights && e < sizeof(extra))
		snprintf(extra + e, sizeof(extra) - e, ",weights=%s",
			 msim_weights_name(c->weights));
	if (len >= 0 && extra[0]) {
		size_t at = (size_t)len < n ? (size_t)len : (n ? n - 1 : 0);
		int l2 = snprintf(n ? buf + at : NULL, n ? n - at : 0, "%s",
				  extra);
		len += l2 < 0 ? 0 : l2;
	}
	return len < 0 ? 0 : (size_t)len;
}
