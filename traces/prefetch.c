/*
 * A source read ahead on a thread of its own: the inner source fills
 * batches of requests while the engine replays the previous ones, so on
 * two cores reading a trace costs no replay time.  Requests come out in
 * exactly the inner source's order, then its end or its error (message
 * included), so a run is the same with or without it.
 *
 * Six batches of 4096 requests (160 KiB each, 960 KiB in all: the
 * batches in flight stay in a core's L2 cache beside the policy's data;
 * four of 16384 cost the engine 1-3% more CPU) circulate between the two
 * threads under one mutex and two condition variables; a lock is taken
 * once per batch, not per request, and the threads wake each other once
 * per four batches (PF_LOW).
 */
#include <config.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "traces/prefetch.h"

#define PF_BATCH 4096
#define PF_SLOTS 6
/* A producer that found every slot full sleeps until the consumer has
 * drained them to this many: it then fills the rest in one go, so the
 * threads wake each other once per PF_SLOTS - PF_LOW batches, not per
 * batch (a wake-up across cores costs more than a batch's hand-over). */
#define PF_LOW 2

typedef struct pf_batch_s {
	msim_req_t req[PF_BATCH];
	size_t n;   /* requests in the batch */
	int status; /* after them: 1 more to come, 0 the end, < 0 an error */
} pf_batch_t;

struct msim_prefetch_s {
	msim_source_t inner;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t filled, emptied;
	pf_batch_t slot[PF_SLOTS];
	size_t nfull;  /* batches ready for the consumer */
	size_t head;   /* next batch the consumer takes */
	size_t tail;   /* next batch the producer fills */
	bool stop;     /* the consumer is gone */
	bool drain;    /* the producer sleeps until nfull <= PF_LOW */
	/* the consumer's side */
	pf_batch_t *cur;
	size_t pos;
	int final;     /* status once the last batch is used up */
	char errmsg[512];
};

static void *
pf_produce(void *arg)
{
	msim_prefetch_t *p = arg;
	int status = 1;
	while (status == 1) {
		pthread_mutex_lock(&p->lock);
		if (p->nfull == PF_SLOTS) {
			p->drain = true;
			while (p->nfull > PF_LOW && !p->stop)
				pthread_cond_wait(&p->emptied, &p->lock);
			p->drain = false;
		}
		bool stop = p->stop;
		pf_batch_t *b = &p->slot[p->tail];
		pthread_mutex_unlock(&p->lock);
		if (stop)
			break;
		/* Fill outside the lock: the slot is ours until handed over. */
		b->n = 0;
		if (p->inner.fill) {
			status = p->inner.fill(p->inner.ctx, b->req, PF_BATCH,
					       &b->n);
		} else {
			while (b->n < PF_BATCH &&
			       (status = p->inner.next(p->inner.ctx,
						       &b->req[b->n])) == 1)
				b->n++;
		}
		b->status = status;
		if (status < 0)
			snprintf(p->errmsg, sizeof(p->errmsg), "%s",
				 p->inner.errmsg(p->inner.ctx));
		pthread_mutex_lock(&p->lock);
		p->tail = (p->tail + 1) % PF_SLOTS;
		p->nfull++;
		pthread_cond_signal(&p->filled);
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

/* Hands the slot being served back (if any) and takes the next filled
 * one, waiting for it.  Returns 1 with p->cur set, or the source's end
 * (0) or error once its last batch has been served. */
static int
pf_advance(msim_prefetch_t *p)
{
	if (p->cur) {
		int status = p->cur->status;
		pthread_mutex_lock(&p->lock);
		p->head = (p->head + 1) % PF_SLOTS;
		p->nfull--;
		if (p->drain && p->nfull <= PF_LOW)
			pthread_cond_signal(&p->emptied);
		pthread_mutex_unlock(&p->lock);
		p->cur = NULL;
		if (status != 1)
			p->final = status;
	}
	if (p->final != 1)
		return p->final;
	pthread_mutex_lock(&p->lock);
	while (p->nfull == 0)
		pthread_cond_wait(&p->filled, &p->lock);
	p->cur = &p->slot[p->head];
	pthread_mutex_unlock(&p->lock);
	p->pos = 0;
	return 1;
}

static int
pf_next(void *ctx, msim_req_t *req_out)
{
	msim_prefetch_t *p = ctx;
	while (!p->cur || p->pos == p->cur->n) {
		int rc = pf_advance(p);
		if (rc != 1)
			return rc;
	}
	*req_out = p->cur->req[p->pos++];
	return 1;
}

/* The same, a batch at a time: the slot's own array, no copy. */
static int
pf_batch(void *ctx, const msim_req_t **reqs_out, size_t *n_out)
{
	msim_prefetch_t *p = ctx;
	int rc;
	while ((rc = pf_advance(p)) == 1) {
		if (p->cur->n) {
			*reqs_out = p->cur->req;
			*n_out = p->cur->n;
			p->pos = p->cur->n;
			return 1;
		}
	}
	return rc;
}

static const char *
pf_errmsg(void *ctx)
{
	msim_prefetch_t *p = ctx;
	return p->errmsg;
}

int
msim_prefetch_new(msim_source_t inner, msim_prefetch_t **out)
{
	msim_prefetch_t *p = calloc(1, sizeof(*p));
	if (!p)
		return MSIM_ENOMEM;
	p->inner = inner;
	p->final = 1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->filled, NULL);
	pthread_cond_init(&p->emptied, NULL);
	if (pthread_create(&p->thread, NULL, pf_produce, p)) {
		msim_prefetch_destroy(p);
		return MSIM_ENOMEM;
	}
	p->started = true;
	*out = p;
	return 0;
}

msim_source_t
msim_prefetch_source(msim_prefetch_t *p)
{
	return (msim_source_t){pf_next, pf_errmsg, p, pf_batch, NULL};
}

void
msim_prefetch_destroy(msim_prefetch_t *p)
{
	if (!p)
		return;
	if (p->started) {
		pthread_mutex_lock(&p->lock);
		p->stop = true;
		pthread_cond_signal(&p->emptied);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
	}
	pthread_cond_destroy(&p->filled);
	pthread_cond_destroy(&p->emptied);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
