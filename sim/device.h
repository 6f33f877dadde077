/*
 * The device model: where policies get device memory from, and the one
 * place that counts it, so every policy is measured the same way.
 *
 * A policy reserves and releases memory only through these calls.  The
 * device counts reserved bytes and segments per pool type, the driver calls
 * (num_device_alloc / num_device_free), enforces the capacity and the
 * optional per-process cap, and logs each segment event with the index of
 * the request during which it happened.
 *
 * Where a new segment lands is decided by a backend, a small const ops
 * table: the default models the CUDA 13 driver's placement on the H200
 * (docs/pytorch-allocator.md §13; in a JAX process, docs/bfc.md §2, after
 * msim_device_set_layout()), tests pass fakes, validation mode passes
 * cudaMalloc.
 * Addresses matter because PyTorch breaks ties between equal-size free
 * blocks by address.
 */
#ifndef MSIM_SIM_DEVICE_H
#define MSIM_SIM_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "sim/gpu.h"
#include "sim/types.h"

/* The H200's totalGlobalMem, as the CUDA runtime reports it. */
#define MSIM_H200_BYTES UINT64_C(150109880320)

typedef struct msim_device_s msim_device_t;

/* Where segments come from.  ctx is the backend's own state. */
typedef struct msim_device_ops_s {
	const char *name;
	/* Creates the backend state.  Returns 0 or MSIM_ENOMEM. */
	int (*create)(void **ctx_out);
	/* Picks the address of a new segment of size bytes.  Returns 0 or
	 * MSIM_EDEVOOM when the backend itself is out of memory. */
	int (*malloc)(void *ctx, uint64_t size, msim_addr_t *addr_out);
	/* Gives back the segment at addr (its size given for convenience). */
	void (*free)(void *ctx, msim_addr_t addr, uint64_t size);
	void (*destroy)(void *ctx);
} msim_device_ops_t;

/* The driver placement model of docs/pytorch-allocator.md §13 (the
 * default). */
extern const msim_device_ops_t msim_device_h200;

/* Which kind of process the default model places segments for. */
enum {
	MSIM_LAYOUT_PYTORCH = 0, /* docs/pytorch-allocator.md §13 (the default) */
	MSIM_LAYOUT_JAX,         /* docs/bfc.md §2: a JAX (XLA) process */
};

/* Segment events, as PyTorch's trace names them. */
typedef enum msim_seg_action_e {
	MSIM_SEG_ALLOC = 0, /* cudaMalloc */
	MSIM_SEG_FREE,      /* cudaFree */
	MSIM_SEG_MAP,       /* expandable: pages mapped */
	MSIM_SEG_UNMAP,     /* expandable: pages unmapped */
	MSIM_SEG_OOM,       /* a malloc raised out-of-memory; size = rounded */
} msim_seg_action_t;

/* Returns "segment_alloc", ... for action. */
const char *msim_seg_action_name(int action);

/* Parses a name of msim_seg_action_name(); returns the action or -1. */
int msim_seg_action_parse(const char *name);

typedef struct msim_seg_event_s {
	uint64_t request; /* 0-based index of the request it happened in */
	msim_addr_t addr; /* segment or first mapped/unmapped address */
	uint64_t size;    /* bytes */
	int action;       /* msim_seg_action_t */
} msim_seg_event_t;

/* What the device events of a run cost (sim/timemodel.h models them). */
typedef struct msim_devtime_s {
	uint64_t mallocs, frees; /* cudaMalloc + cuMemMap, cudaFree + unmap */
	double us;               /* their modelled total */
} msim_devtime_t;

struct msim_timemodel_s;

/* How a device is set up.  Zeroes mean the defaults. */
typedef struct msim_device_config_s {
	const msim_device_ops_t *ops; /* NULL: msim_device_h200 */
	uint64_t capacity;            /* bytes; 0: MSIM_H200_BYTES */
	uint64_t cap;                 /* allowed bytes; 0: no cap */
	int log_events;               /* keep the segment event log (memory
				       * grows with device calls) */
	/* NULL, or the latencies each event's modelled cost is added up
	 * with as it happens (msim_device_devtime()), with no log kept. */
	const struct msim_timemodel_s *timemodel;
	int use_hints;                /* place segments at recorded addresses */
	/* A GPU several processes share (sim/gpu.h), this device being
	 * process number process there; NULL: the device is the process's
	 * alone.  capacity should then be the gpu's. */
	msim_gpu_t *gpu;
	size_t process;
} msim_device_config_t;

/* Creates a device.  Returns NULL when out of host memory. */
msim_device_t *msim_device_new(const msim_device_config_t *cfg);

/*
 * Places this process's segments as the driver does in a process of kind
 * layout (MSIM_LAYOUT_*).  Only the default model knows layouts, and only
 * before its first segment: returns 0, MSIM_ENOTSUP (another backend, or
 * segments already placed; nothing changes) or MSIM_ENOMEM.  Recorded
 * addresses (use_hints) still come first.
 */
int msim_device_set_layout(msim_device_t *dev, int layout);

/* Frees the device; NULL is a no-op. */
void msim_device_destroy(msim_device_t *dev);

/*
 * The per-process cap of torch.cuda.set_per_process_memory_fraction(f):
 * allowed = msim_fraction_bytes(f, capacity).  Returns MSIM_EINVAL unless
 * 0 <= f <= 1.
 */
int msim_device_set_fraction(msim_device_t *dev, double fraction);

/*
 * A cap given in bytes (--cap, a sweep's caps) is the fraction cap /
 * capacity handed to set_per_process_memory_fraction(), as
 * validate/torch_replay.py hands it to PyTorch on a GPU; the bytes that
 * fraction allows are (uint64_t)(fraction * capacity), truncated as
 * PyTorch 2.11's setMemoryFraction() does, 0 (no cap) when fraction >= 1.
 * So a cap may come back one byte short of the bytes asked for: on an
 * H200 (150109880320 bytes), 85 of the 2,224 caps of 1 to 2,224 MiB do
 * (1946157056 allows 1946157055).  The short one is right: it is what
 * PyTorch enforces for that cap (docs/memsim.1, --cap).  Every conversion
 * goes through these two functions.
 */
double msim_cap_fraction(uint64_t cap, uint64_t capacity);
uint64_t msim_fraction_bytes(double fraction, uint64_t capacity);
/* msim_fraction_bytes(msim_cap_fraction(cap, capacity), capacity): the
 * bytes a cap of cap bytes allows; 0 for cap 0 (none). */
uint64_t msim_cap_allowed(uint64_t cap, uint64_t capacity);

/* Allowed bytes under the cap, or 0 when there is no cap. */
uint64_t msim_device_cap(const msim_device_t *dev);

/* Physical capacity in bytes. */
uint64_t msim_device_capacity(const msim_device_t *dev);

/* Whether the device places segments at recorded addresses (use_hints,
 * `--addresses trace`): a trace's addresses are then CuPy's or PyTorch's
 * own, and a policy may use an alloc's recorded address too. */
int msim_device_uses_hints(const msim_device_t *dev);

/*
 * cudaMalloc: a new segment of size bytes for pool (MSIM_POOL_SMALL or
 * _LARGE).  Returns 0, or MSIM_EDEVOOM when it does not fit under the
 * capacity, the cap, or what the shared GPU has left (nothing is counted
 * then; a full GPU is noted there with the request).
 */
int msim_device_malloc(msim_device_t *dev, uint64_t size, int pool,
		       msim_addr_t *addr_out);

/* cudaFree of a segment that msim_device_malloc() returned. */
void msim_device_free(msim_device_t *dev, msim_addr_t addr, uint64_t size,
		      int pool);
/*
 * A segment from an allocator of its own rather than cudaMalloc (a
 * torch.cuda.MemPool(allocator) pool's raw_alloc): counted as
 * msim_device_malloc() counts one (capacity, cap, reserved bytes,
 * segments, num_device_alloc, a segment_alloc event), but placed apart
 * from the driver model's address space, which it leaves untouched: the
 * lowest gap from 0x700000000000 up, segments 2 MiB aligned, or at the next
 * recorded address when hints are on (docs/pytorch-allocator.md §1.4).
 * Returns 0, MSIM_EDEVOOM, MSIM_ENOMEM or MSIM_EFORMAT (a hint that would
 * wrap around).
 */
int msim_device_malloc_own(msim_device_t *dev, uint64_t size, int pool,
			   msim_addr_t *addr_out);
/* Frees a segment that msim_device_malloc_own() returned. */
void msim_device_free_own(msim_device_t *dev, msim_addr_t addr,
			  uint64_t size, int pool);

/*
 * Expandable segments: map or unmap size bytes of physical pages at addr in
 * a virtual reservation.  Counted as reserved bytes and driver calls, never
 * as segments.  map returns 0, or MSIM_EDEVOOM when the pages do not fit in
 * the device's capacity (the cap is the policy's own bookkeeping here, as
 * PyTorch checks it before mapping).
 */
int msim_device_map(msim_device_t *dev, msim_addr_t addr, uint64_t size,
		    int pool);
void msim_device_unmap(msim_device_t *dev, msim_addr_t addr, uint64_t size,
		       int pool);

/*
 * Expandable segments: a virtual address reservation of size bytes
 * (cuMemAddressReserve; no physical memory, nothing counted).  The driver
 * puts them at the lowest free address at or above 0x302000000, sizes
 * rounded up to 32 MiB, and reuses released ranges
 * (docs/pytorch-allocator.md §13 f).
 * Returns 0 or MSIM_ENOMEM.
 */
int msim_device_reserve(msim_device_t *dev, uint64_t size,
			msim_addr_t *addr_out);
void msim_device_unreserve(msim_device_t *dev, msim_addr_t addr);

/* Logs an OOM of a request rounded to size bytes (the trace's `oom`). */
void msim_device_log_oom(msim_device_t *dev, uint64_t size);

/* cudaMalloc's alignment: every segment and block address is a multiple. */
#define MSIM_DEVICE_ALIGN 256

/* A recorded segment address, used by the next malloc when hints are on.
 * Returns 0, MSIM_ENOMEM, or MSIM_EFORMAT if addr is not a multiple of
 * MSIM_DEVICE_ALIGN or is above 2^63 (so no segment can wrap around). */
int msim_device_hint(msim_device_t *dev, msim_addr_t addr);

/* Sets the index of the request being served, for the event log. */
void msim_device_set_request(msim_device_t *dev, uint64_t request);

/*
 * The clock and the event queue, seen from a policy.  The engine installs a
 * scheduler; msim_device_schedule() then asks for the policy's on_event()
 * with cookie at time when (never earlier than now).  Returns 0, or
 * MSIM_ENOTSUP when nothing drives the device.
 */
typedef int (*msim_schedule_fn)(void *ctx, msim_time_t when, uint64_t cookie);
msim_time_t msim_device_now(const msim_device_t *dev);
int msim_device_schedule(msim_device_t *dev, msim_time_t when,
			 uint64_t cookie);
void msim_device_set_clock(msim_device_t *dev, msim_time_t now);
/* The engine's clock and request counter, read by the device when it needs
 * them (no call per request); both must outlive dev. */
void msim_device_bind(msim_device_t *dev, const msim_time_t *clock,
		      const uint64_t *request);
void msim_device_set_scheduler(msim_device_t *dev, msim_schedule_fn fn,
			       void *ctx);

/* Bytes a cudaMalloc could get now, the cap aside: the capacity less
 * what this process reserved, or less when a shared GPU has less left. */
uint64_t msim_device_avail(const msim_device_t *dev);

/* Bytes reserved from the device now (segments + mapped pages). */
uint64_t msim_device_reserved(const msim_device_t *dev);

/* The most bytes reserved yet, and (request_out) the index of the request
 * being served when they were first reserved. */
uint64_t msim_device_peak(const msim_device_t *dev, uint64_t *request_out);

/* Adds the device's counters (segment, reserved_bytes, num_device_*) to out. */
void msim_device_stats(const msim_device_t *dev, msim_stats_t *out);

/* The modelled cost of the device calls so far (zero unless the config
 * named a timemodel); the same sum as msim_timemodel_events() of the log. */
void msim_device_devtime(const msim_device_t *dev, msim_devtime_t *out);

/* The event log (empty unless log_events); valid until the next call. */
const msim_seg_event_t *msim_device_events(const msim_device_t *dev,
					   size_t *n_out);

#endif
