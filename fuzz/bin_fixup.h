/*
 * The binary trace checks a checksum over every block before it decodes it
 * (traces/fmt_bin.c: msim_hash in version 1, CRC32C in the low 32 bits in
 * version 2), so random mutations never reach the decoder.  The
 * fuzz harness rewrites each block's checksum to match its payload, as far
 * as the block lengths fit in the input.
 */
#ifndef MSIM_FUZZ_BIN_FIXUP_H
#define MSIM_FUZZ_BIN_FIXUP_H

#include <string.h>

#include "traces/trace.h"

/* CRC32C (reflected 0x82F63B78), bit by bit: version 2's checksum. */
static inline uint32_t
fuzz_crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = ~0u;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c >> 1 ^ (0x82F63B78u & -(c & 1));
	}
	return ~c;
}

static inline void
fuzz_bin_fixup(uint8_t *d, size_t n)
{
	if (n < 16 || memcmp(d, "\x89MSIMTR\n", 8))
		return;
	uint32_t version = (uint32_t)d[8] | (uint32_t)d[9] << 8 |
			   (uint32_t)d[10] << 16 | (uint32_t)d[11] << 24;
	size_t off = 16;
	while (off + 16 <= n) {
		uint32_t len = (uint32_t)d[off + 4] | (uint32_t)d[off + 5] << 8 |
			       (uint32_t)d[off + 6] << 16 |
			       (uint32_t)d[off + 7] << 24;
		if (len > n - off - 16)
			return;
		uint64_t sum;
		if (version == 1) {
			msim_hash_t h;
			msim_hash_init(&h);
			msim_hash_update(&h, d + off + 16, len);
			sum = msim_hash_final(&h);
		} else {
			sum = fuzz_crc32c(d + off + 16, len);
		}
		for (int i = 0; i < 8; i++)
			d[off + 8 + i] = (uint8_t)(sum >> (8 * i));
		off += 16 + (size_t)len;
	}
}

#endif
