/*
 * validate --mode raw|async, and the calibration of the time model, on a
 * real GPU through the CUDA runtime (plain C against cuda_runtime_api.h;
 * built only when configure found CUDA).
 *
 * raw: each ALLOC is one cudaMalloc and each FREE one cudaFree, timed with
 * the monotonic clock around the (synchronous) calls; memory in use is
 * cudaMemGetInfo's total - free, less what was in use before the first
 * request, read after every cudaMalloc.
 * async: cudaMallocFromPoolAsync / cudaFreeAsync on the stream of each
 * request, from a pool of our own with cudaMemPoolAttrReleaseThreshold;
 * reserved and used bytes from the pool's high-water attributes.
 * A cap makes a request fail when the live requested bytes plus its size
 * exceed it, as PyTorch's cudaMallocAsync backend does.
 */
#include <config.h>

#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/error.h"
#include "validate/validate.h"

#define MAXSTREAMS 64

typedef struct vstate_s {
	void **ptr;   /* by request id */
	uint64_t *size;
	size_t n;
	msim_stream_t handle[MAXSTREAMS];
	cudaStream_t stream[MAXSTREAMS];
	size_t nstreams;
} vstate_t;

static double
now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
cuda_fail(cudaError_t e, const char *what, char *why, size_t whylen)
{
	snprintf(why, whylen, "%s: %s", what, cudaGetErrorString(e));
	return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver
		? MSIM_ENOTSUP : MSIM_EIO;
}

static int
slot(vstate_t *v, uint32_t id)
{
	if (id < v->n)
		return 0;
	size_t n = v->n ? v->n : 1024;
	while (n <= id)
		n *= 2;
	void **p = realloc(v->ptr, n * sizeof(*p));
	if (!p)
		return MSIM_ENOMEM;
	v->ptr = p;
	uint64_t *s = realloc(v->size, n * sizeof(*s));
	if (!s)
		return MSIM_ENOMEM;
	v->size = s;
	memset(v->ptr + v->n, 0, (n - v->n) * sizeof(*p));
	memset(v->size + v->n, 0, (n - v->n) * sizeof(*s));
	v->n = n;
	return 0;
}

/* The stream of handle: 0 is the legacy default stream. */
static int
stream_of(vstate_t *v, msim_stream_t handle, cudaStream_t *out)
{
	if (handle == 0) {
		*out = 0;
		return 0;
	}
	for (size_t i = 0; i < v->nstreams; i++) {
		if (v->handle[i] == handle) {
			*out = v->stream[i];
			return 0;
		}
	}
	if (v->nstreams == MAXSTREAMS)
		return MSIM_EINVAL;
	if (cudaStreamCreateWithFlags(&v->stream[v->nstreams],
				      cudaStreamNonBlocking) != cudaSuccess)
		return MSIM_EIO;
	v->handle[v->nstreams] = handle;
	*out = v->stream[v->nstreams++];
	return 0;
}

static void
describe(msim_measured_t *m)
{
	struct cudaDeviceProp prop;
	int drv = 0, rt = 0;
	if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
		snprintf(m->device, sizeof(m->device), "%.127s", prop.name);
	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rt);
	snprintf(m->versions, sizeof(m->versions), "driver %d.%d, runtime %d.%d",
		 drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
}

int
msim_validate_cuda(msim_trace_t *t, int mode, uint64_t cap,
		   uint64_t release_threshold, msim_measured_t *out, char *why,
		   size_t whylen)
{
	vstate_t v = {0};
	cudaMemPool_t pool = NULL;
	int rc = 0;
	cudaError_t e;
	memset(out, 0, sizeof(*out));
	out->oom_request = -1;
	out->st.max_split_size = -1;
	if ((e = cudaSetDevice(0)) != cudaSuccess ||
	    (e = cudaFree(NULL)) != cudaSuccess)
		return cuda_fail(e, "no usable GPU", why, whylen);
	describe(out);
	size_t free0, total;
	if ((e = cudaMemGetInfo(&free0, &total)) != cudaSuccess)
		return cuda_fail(e, "cudaMemGetInfo", why, whylen);
	if (mode == MSIM_VMODE_ASYNC) {
		struct cudaMemPoolProps props;
		memset(&props, 0, sizeof(props));
		props.allocType = cudaMemAllocationTypePinned;
		props.location.type = cudaMemLocationTypeDevice;
		props.location.id = 0;
		if ((e = cudaMemPoolCreate(&pool, &props)) != cudaSuccess)
			return cuda_fail(e, "cudaMemPoolCreate", why, whylen);
		uint64_t thr = release_threshold;
		cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
					&thr);
	}
	uint64_t live = 0;
	msim_req_t r;
	int got;
	while ((got = msim_trace_next(t, &r)) == 1) {
		if (r.kind != MSIM_REQ_ALLOC && r.kind != MSIM_REQ_FREE)
			continue;
		if ((rc = slot(&v, r.id)))
			goto done;
		cudaStream_t s;
		if ((rc = stream_of(&v, r.stream, &s))) {
			snprintf(why, whylen, "cannot create a stream");
			goto done;
		}
		if (r.kind == MSIM_REQ_FREE) {
			double t0 = now_us();
			e = mode == MSIM_VMODE_RAW ? cudaFree(v.ptr[r.id])
						   : cudaFreeAsync(v.ptr[r.id], s);
			out->free_us += now_us() - t0;
			out->nfree++;
			if (e != cudaSuccess) {
				rc = cuda_fail(e, "free", why, whylen);
				goto done;
			}
			live -= v.size[r.id];
			msim_stat2_dec(out->st.allocated_bytes, MSIM_POOL_LARGE,
				       (int64_t)v.size[r.id]);
			msim_stat2_dec(out->st.allocation, MSIM_POOL_LARGE, 1);
			if (mode == MSIM_VMODE_RAW)
				out->st.num_device_free++;
			out->requests++;
			continue;
		}
		void *p = NULL;
		double t0 = now_us();
		if (cap && live + r.size > cap)
			e = cudaErrorMemoryAllocation;
		else if (mode == MSIM_VMODE_RAW)
			e = cudaMalloc(&p, r.size);
		else
			e = cudaMallocFromPoolAsync(&p, r.size, pool, s);
		out->malloc_us += now_us() - t0;
		out->nmalloc++;
		if (e == cudaErrorMemoryAllocation) {
			cudaGetLastError();
			out->st.num_ooms++;
			if (r.flags & MSIM_REQF_EXPECT_OOM) {
				out->requests++;
				continue;
			}
			out->oom_request = (int64_t)out->requests++;
			break;
		}
		if (e != cudaSuccess) {
			rc = cuda_fail(e, "malloc", why, whylen);
			goto done;
		}
		if (r.flags & MSIM_REQF_EXPECT_OOM) { /* served: give it back */
			mode == MSIM_VMODE_RAW ? cudaFree(p) : cudaFreeAsync(p, s);
			out->requests++;
			continue;
		}
		v.ptr[r.id] = p;
		v.size[r.id] = r.size;
		live += r.size;
		msim_stat2_inc(out->st.allocated_bytes, MSIM_POOL_LARGE,
			       (int64_t)r.size);
		msim_stat2_inc(out->st.allocation, MSIM_POOL_LARGE, 1);
		if (mode == MSIM_VMODE_RAW) {
			size_t f, tot;
			out->st.num_device_alloc++;
			if (cudaMemGetInfo(&f, &tot) == cudaSuccess &&
			    free0 > f) {
				int64_t used = (int64_t)(free0 - f);
				msim_stat_t *rs = &out->st.reserved_bytes[0];
				rs->current = used;
				if (used > rs->peak)
					rs->peak = used;
			}
		}
		out->requests++;
	}
	if (got < 0) {
		snprintf(why, whylen, "%s", msim_trace_errmsg(t));
		rc = got;
		goto done;
	}
	if ((e = cudaDeviceSynchronize()) != cudaSuccess) {
		rc = cuda_fail(e, "cudaDeviceSynchronize", why, whylen);
		goto done;
	}
	if (mode == MSIM_VMODE_ASYNC) {
		uint64_t rh = 0, rcur = 0, uh = 0;
		cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &rh);
		cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent,
					&rcur);
		cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &uh);
		out->st.reserved_bytes[0].peak = (int64_t)rh;
		out->st.reserved_bytes[0].current = (int64_t)rcur;
		out->st.active_bytes[0].peak = (int64_t)uh;
	} else {
		size_t f, tot;
		if (cudaMemGetInfo(&f, &tot) == cudaSuccess)
			out->st.reserved_bytes[0].current =
				free0 > f ? (int64_t)(free0 - f) : 0;
	}
done:
	/* Give everything back, so a later mode starts clean. */
	for (size_t i = 0; i < v.n; i++) {
		if (!v.ptr[i])
			continue;
		if (mode == MSIM_VMODE_RAW)
			cudaFree(v.ptr[i]);
		else
			cudaFreeAsync(v.ptr[i], 0);
	}
	cudaDeviceSynchronize();
	if (pool)
		cudaMemPoolDestroy(pool);
	for (size_t i = 0; i < v.nstreams; i++)
		cudaStreamDestroy(v.stream[i]);
	free(v.ptr);
	free(v.size);
	if (rc)
		msim_measured_clear(out);
	return rc;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int
msim_validate_calibrate(const char *path, char *why, size_t whylen)
{
	static const uint64_t sizes[] = {
		512, 4096, 65536, 1048576, 2097152, 20971520, 67108864,
		268435456, 1073741824, UINT64_C(4294967296),
		UINT64_C(17179869184),
	};
	enum { REPS = 31 };
	cudaError_t e;
	if ((e = cudaSetDevice(0)) != cudaSuccess ||
	    (e = cudaFree(NULL)) != cudaSuccess)
		return cuda_fail(e, "no usable GPU", why, whylen);
	FILE *fp = fopen(path, "w");
	if (!fp) {
		snprintf(why, whylen, "%s: cannot write", path);
		return MSIM_EIO;
	}
	fprintf(fp, "size_bytes,malloc_us,free_us,malloc_async_us,"
		"free_async_us\n");
	cudaStream_t s;
	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		double lat[4][REPS];
		for (int i = 0; i < REPS; i++) {
			void *p;
			double t0 = now_us();
			if ((e = cudaMalloc(&p, sizes[k])) != cudaSuccess)
				goto fail;
			double t1 = now_us();
			cudaFree(p);
			double t2 = now_us();
			if ((e = cudaMallocAsync(&p, sizes[k], s)) != cudaSuccess)
				goto fail;
			cudaStreamSynchronize(s);
			double t3 = now_us();
			cudaFreeAsync(p, s);
			double t4 = now_us();
			cudaStreamSynchronize(s);
			lat[0][i] = t1 - t0;
			lat[1][i] = t2 - t1;
			lat[2][i] = t3 - t2;
			lat[3][i] = t4 - t3;
		}
		for (int j = 0; j < 4; j++)
			qsort(lat[j], REPS, sizeof(double), cmp_double);
		fprintf(fp, "%" PRIu64 ",%.2f,%.2f,%.2f,%.2f\n", sizes[k],
			lat[0][REPS / 2], lat[1][REPS / 2], lat[2][REPS / 2],
			lat[3][REPS / 2]);
	}
	cudaStreamDestroy(s);
	if (fclose(fp)) {
		snprintf(why, whylen, "%s: cannot write", path);
		return MSIM_EIO;
	}
	return 0;
fail:
	cudaStreamDestroy(s);
	fclose(fp);
	return cuda_fail(e, "calibration", why, whylen);
}
