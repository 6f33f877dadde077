/*
 * The dtype transform of xform.h.  Two passes over the buffered inner
 * stream: the first finds each allocation's lifetime, the parameters and
 * the forward windows; the second (msim_xform_dtype_new() again, building
 * the output array) rescales sizes and inserts the autocast cache.  The
 * whole stream is held in memory (40 bytes a request).
 */
#include <config.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "traces/gen_model.h"
#include "traces/xform.h"

#define XF_GRAD_MIN 65536 /* smallest allocation read as a gradient */

enum { XF_ACT = 0, XF_PARAM, XF_PSHAPE };

struct msim_xform_s {
	msim_req_t *out;   /* the transformed requests */
	size_t n, cap, pos;
	msim_xform_stats_t st;
	char errmsg[256];
};

typedef struct xf_vec_s {
	msim_req_t *v;
	size_t n, cap;
} xf_vec_t;

static int
xf_push(xf_vec_t *a, const msim_req_t *r)
{
	if (MSIM_GROW(a->v, a->cap, a->n + 1, 4096))
		return MSIM_ENOMEM;
	a->v[a->n++] = *r;
	return 0;
}

int
msim_xform_parse(const char *spec, int *dtype_out, char *why, size_t whylen)
{
	if (strncmp(spec, "dtype=", 6) && strncmp(spec, "dtype:", 6)) {
		snprintf(why, whylen, "'%s' is not a transform (dtype=fp32|"
			 "bf16-amp|fp16-amp|bf16)", spec);
		return MSIM_EINVAL;
	}
	int d = msim_dtype_parse(spec + 6);
	if (d < 0) {
		snprintf(why, whylen, "dtype: '%s' is not fp32, bf16-amp, "
			 "fp16-amp or bf16", spec + 6);
		return MSIM_EINVAL;
	}
	*dtype_out = d;
	return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static bool
xf_is_param_size(const uint64_t *sizes, size_t n, uint64_t size)
{
	return bsearch(&size, sizes, n, sizeof(*sizes), cmp_u64) != NULL;
}

int
msim_xform_dtype_new(msim_source_t src, int dtype, msim_xform_t **out,
		     char *why, size_t whylen)
{
	xf_vec_t in = {0}, res = {0};
	msim_xform_t *x = calloc(1, sizeof(*x));
	uint32_t *open = NULL;       /* id -> index of its live ALLOC */
	size_t *free_at = NULL;      /* ALLOC index -> index of its free */
	unsigned char *cls = NULL;   /* ALLOC index -> XF_* */
	uint64_t *psizes = NULL;     /* parameter sizes, sorted */
	size_t *pidx = NULL;         /* ALLOC indexes of the parameters */
	unsigned char *mark = NULL;  /* request index -> 1 fwd start, 2 end */
	int rc = MSIM_ENOMEM;
	if (!x)
		goto fail;
	/* Read everything. */
	uint32_t maxid = 0;
	msim_req_t r;
	int got;
	while ((got = src.next(src.ctx, &r)) == 1) {
		if (r.kind == MSIM_REQ_SEGMENT_HINT)
			continue; /* recorded addresses no longer apply */
		if (r.id > maxid)
			maxid = r.id;
		if (xf_push(&in, &r))
			goto fail;
	}
	if (got < 0) {
		snprintf(why, whylen, "%s", src.errmsg ? src.errmsg(src.ctx)
			 : msim_strerror(got));
		rc = got;
		goto fail;
	}
	size_t n = in.n;
	open = malloc(((size_t)maxid + 1) * sizeof(*open));
	free_at = malloc((n + 1) * sizeof(*free_at));
	cls = calloc(n + 1, 1);
	mark = calloc(n + 1, 1);
	if (!open || !free_at || !cls || !mark)
		goto fail;
	/* Pass 1: lifetimes; the parameters are what is allocated before
	 * the first free and never freed. */
	size_t first_free = n;
	for (size_t i = 0; i < n; i++) {
		msim_req_t *q = &in.v[i];
		free_at[i] = SIZE_MAX;
		if (q->kind == MSIM_REQ_ALLOC) {
			open[q->id] = (uint32_t)i;
		} else if (q->kind == MSIM_REQ_FREE ||
			   q->kind == MSIM_REQ_FREE_REQUESTED) {
			if (first_free == n)
				first_free = i;
			size_t a = open[q->id];
			if (free_at[a] == SIZE_MAX)
				free_at[a] = i;
		}
	}
	/* What lives through the last allocation lives to the end: the
	 * frees after it are the program's teardown. */
	size_t last_alloc = 0;
	for (size_t i = 0; i < n; i++)
		if (in.v[i].kind == MSIM_REQ_ALLOC)
			last_alloc = i;
#define XF_PERSISTS(i) (free_at[i] == SIZE_MAX || free_at[i] > last_alloc)
	size_t np = 0;
	for (size_t i = 0; i < first_free; i++)
		if (in.v[i].kind == MSIM_REQ_ALLOC && XF_PERSISTS(i))
			np++;
	psizes = malloc((np + 1) * sizeof(*psizes));
	pidx = malloc((np + 1) * sizeof(*pidx));
	if (!psizes || !pidx)
		goto fail;
	np = 0;
	for (size_t i = 0; i < first_free; i++)
		if (in.v[i].kind == MSIM_REQ_ALLOC && XF_PERSISTS(i)) {
			cls[i] = XF_PARAM;
			pidx[np] = i;
			psizes[np++] = in.v[i].size;
			x->st.params++;
			x->st.param_bytes += in.v[i].size;
		}
	qsort(psizes, np, sizeof(*psizes), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		if (in.v[i].kind != MSIM_REQ_ALLOC || cls[i] == XF_PARAM)
			continue;
		if (xf_is_param_size(psizes, np, in.v[i].size)) {
			cls[i] = XF_PSHAPE;
			x->st.pshape++;
			x->st.pshape_bytes += in.v[i].size;
		} else {
			x->st.act++;
			x->st.act_bytes += in.v[i].size;
		}
	}
	/* The forward windows: a forward begins at the first allocation
	 * once no gradient is live and ends at the next gradient. */
	bool amp = dtype == MSIM_DT_BF16_AMP || dtype == MSIM_DT_FP16_AMP;
	if (amp) {
		size_t live = 0, start = SIZE_MAX, grads = np;
		bool in_fwd = false;
		unsigned char *isgrad = calloc(n + 1, 1);
		if (!isgrad)
			goto fail;
		for (size_t i = 0; i < n; i++) {
			msim_req_t *q = &in.v[i];
			if (q->kind == MSIM_REQ_ALLOC) {
				bool grad = cls[i] == XF_PSHAPE &&
					    q->size >= XF_GRAD_MIN &&
					    !XF_PERSISTS(i);
				if (grad) {
					isgrad[i] = 1;
					if (in_fwd) {
						mark[start] = 1;
						mark[i] = 2;
						in_fwd = false;
						grads = 0;
					}
					live++;
					grads++;
				} else if (!in_fwd && !live &&
					   2 * grads >= np &&
					   cls[i] != XF_PARAM) {
					in_fwd = true;
					start = i;
				}
			} else if ((q->kind == MSIM_REQ_FREE ||
				    q->kind == MSIM_REQ_FREE_REQUESTED) &&
				   isgrad[open[q->id]] &&
				   free_at[open[q->id]] == i) {
				live--;
			}
			if (q->kind == MSIM_REQ_ALLOC)
				open[q->id] = (uint32_t)i;
		}
		free(isgrad);
	}
#undef XF_PERSISTS
	/* Pass 2: the output. */
	for (size_t k = 0; k < np; k++)
		x->st.cache_bytes += (in.v[pidx[k]].size + 1) / 2;
	for (size_t i = 0; i < n; i++) {
		msim_req_t q = in.v[i];
		if (mark[i] == 2 || mark[i] == 1) {
			for (size_t k = 0; k < np; k++) {
				msim_req_t c = {
					.time = q.time, .stream = q.stream,
					.id = maxid + 1 + (uint32_t)k,
					.kind = mark[i] == 1 ? MSIM_REQ_ALLOC
							     : MSIM_REQ_FREE,
					.size = mark[i] == 1
						? (in.v[pidx[k]].size + 1) / 2
						: 0,
				};
				if (xf_push(&res, &c))
					goto fail;
			}
			if (mark[i] == 1)
				x->st.forwards++;
		}
		if (q.kind == MSIM_REQ_ALLOC) {
			bool keep = amp && cls[i] != XF_ACT;
			if (dtype != MSIM_DT_FP32 && !keep)
				q.size = (q.size + 1) / 2;
		}
		q.addr = 0;
		if (xf_push(&res, &q))
			goto fail;
	}
	x->out = res.v;
	x->n = res.n;
	x->cap = res.cap;
	res.v = NULL;
	*out = x;
	x = NULL;
	rc = 0;
fail:
	if (rc == MSIM_ENOMEM)
		snprintf(why, whylen, "dtype transform: %s",
			 msim_strerror(rc));
	free(in.v);
	free(res.v);
	free(open);
	free(free_at);
	free(cls);
	free(psizes);
	free(pidx);
	free(mark);
	msim_xform_destroy(x);
	return rc;
}

static int
xf_next(void *ctx, msim_req_t *req_out)
{
	msim_xform_t *x = ctx;
	if (x->pos >= x->n)
		return 0;
	*req_out = x->out[x->pos++];
	return 1;
}

static const char *
xf_errmsg(void *ctx)
{
	return ((msim_xform_t *)ctx)->errmsg;
}

msim_source_t
msim_xform_source(msim_xform_t *x)
{
	x->pos = 0;
	return (msim_source_t){.next = xf_next, .errmsg = xf_errmsg,
			       .ctx = x};
}

void
msim_xform_stats(const msim_xform_t *x, msim_xform_stats_t *out)
{
	*out = x->st;
}

void
msim_xform_destroy(msim_xform_t *x)
{
	if (!x)
		return;
	free(x->out);
	free(x);
}
