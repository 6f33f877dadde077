/*
 * The binary trace checks a checksum over every block before it decodes it
 * (traces/fmt_bin.c), so random mutations never reach the decoder.  The
 * fuzz harness rewrites each block's checksum to match its payload, as far
 * as the block lengths fit in the input.
 */
#ifndef MSIM_FUZZ_BIN_FIXUP_H
#define MSIM_FUZZ_BIN_FIXUP_H

#include <string.h>

#include "traces/trace.h"

static inline void
fuzz_bin_fixup(uint8_t *d, size_t n)
{
	if (n < 16 || memcmp(d, "\x89MSIMTR\n", 8))
		return;
	size_t off = 16;
	while (off + 16 <= n) {
		uint32_t len = (uint32_t)d[off + 4] | (uint32_t)d[off + 5] << 8 |
			       (uint32_t)d[off + 6] << 16 |
			       (uint32_t)d[off + 7] << 24;
		if (len > n - off - 16)
			return;
		msim_hash_t h;
		msim_hash_init(&h);
		msim_hash_update(&h, d + off + 16, len);
		uint64_t sum = msim_hash_final(&h);
		for (int i = 0; i < 8; i++)
			d[off + 8 + i] = (uint8_t)(sum >> (8 * i));
		off += 16 + (size_t)len;
	}
}

#endif
