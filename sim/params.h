/*
 * Policy parameters: each policy declares them once, in a table of
 * msim_param_spec_t, and that table drives the parser (PyTorch's own
 * "key:value,key:value" syntax of PYTORCH_CUDA_ALLOC_CONF, with list values
 * in brackets), `memsim policies`, `--help`, sweeps, and the canonical
 * string stored with each run.
 */
#ifndef MSIM_SIM_PARAMS_H
#define MSIM_SIM_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum msim_param_type_e {
	MSIM_PT_BOOL,   /* True / False */
	MSIM_PT_UINT,   /* a whole number in [min, max] */
	MSIM_PT_DOUBLE, /* a real number in [min, max] (ends open by flags) */
	MSIM_PT_TEXT,   /* free form, validated by check() */
} msim_param_type_t;

/* Flags of a parameter. */
#define MSIM_PF_NONE_OK 0x1  /* UINT accepts "none" (unlimited) */
#define MSIM_PF_MIN_OPEN 0x2 /* DOUBLE: value must be > min */
#define MSIM_PF_MAX_OPEN 0x4 /* DOUBLE: value must be < max */
#define MSIM_PF_POW2 0x8     /* UINT: 0 or a power of two */

typedef struct msim_param_spec_s {
	const char *name; /* [a-z0-9_], as PyTorch spells it */
	int type;         /* msim_param_type_t */
	const char *def;  /* default, as text ("none", "0", "False") */
	double min, max;  /* range of UINT and DOUBLE */
	unsigned flags;   /* MSIM_PF_* */
	const char *help; /* one line */
	/* TEXT only: returns 0 if text is valid, else writes why. */
	int (*check)(const char *text, char *why, size_t whylen);
} msim_param_spec_t;

typedef struct msim_param_value_s {
	bool set;  /* given explicitly */
	bool none; /* UINT: "none" */
	bool b;    /* BOOL */
	uint64_t u; /* UINT */
	double d;  /* DOUBLE */
	char text[128]; /* the value as given, normalised */
} msim_param_value_t;

typedef struct msim_params_s {
	const msim_param_spec_t *spec; /* NULL-name terminated table */
	size_t n;
	msim_param_value_t *v; /* v[i] belongs to spec[i] */
	char errmsg[256];      /* why the last call failed */
} msim_params_t;

/* Sets p to the defaults of spec.  Returns 0 or MSIM_ENOMEM. */
int msim_params_init(msim_params_t *p, const msim_param_spec_t *spec);

/* Frees what msim_params_init() allocated. */
void msim_params_clear(msim_params_t *p);

/* Copies src into a fresh dst.  Returns 0 or MSIM_ENOMEM. */
int msim_params_copy(msim_params_t *dst, const msim_params_t *src);

/*
 * Parses a settings string exactly as PyTorch 2.13 parses
 * PYTORCH_CUDA_ALLOC_CONF in a CUDA build (c10's ConfigTokenizer and the
 * parseArgs() of AcceleratorAllocatorConfig and CUDAAllocatorConfig): the
 * same strings accepted, the same refused (key=value, "true", an unknown
 * key; docs/alloc-conf.md lists the details and tests/data/allocconf.tsv
 * the cases).  Returns 0, or MSIM_EINVAL with p->errmsg naming the key and
 * the reason (and the key meant, for an unknown one near a known one).
 */
int msim_params_parse(msim_params_t *p, const char *conf);

/* Sets one parameter from text, in memsim's own looser spelling (sweep
 * grids: True/true/1, "none" for unlimited).  Returns 0 or MSIM_EINVAL
 * (p->errmsg). */
int msim_params_set(msim_params_t *p, const char *key, const char *value);

/* Index of name in the table, or -1. */
int msim_params_index(const msim_params_t *p, const char *name);

/*
 * Writes the canonical form: the parameters whose value differs from the
 * default, in table order, as "key:value,...".  Returns the length it
 * needed (snprintf style).
 */
size_t msim_params_canonical(const msim_params_t *p, char *buf, size_t n);

#endif
