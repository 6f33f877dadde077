/*
 * What the pytorch policy tells others about PyTorch's rules, so that a
 * rule lives in one place: explain names the bytes of an out-of-memory
 * the way PyTorch's message does.
 */
#ifndef MSIM_POLICIES_PYTORCH_H
#define MSIM_POLICIES_PYTORCH_H

#include <stdint.h>

/* get_allocation_size(): the bytes of a new segment for a block of size
 * (already rounded by round_size()), large_segment being
 * large_segment_size_mb in bytes (20 MiB by default). */
uint64_t msim_pytorch_segment_size(uint64_t size, uint64_t large_segment);

#endif
