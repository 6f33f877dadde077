/*
 * Eight bytes at a time in a 64-bit word (SWAR): the helpers the CSV
 * readers share (traces/fmt_csv.c, and bench's minimal path in
 * lab/mincsv.c).  Every one is exact: no carries cross a byte.
 */
#ifndef MSIM_SIM_SWAR_H
#define MSIM_SIM_SWAR_H

#include <stdint.h>
#include <string.h>

#define MSIM_SWAR_ONES UINT64_C(0x0101010101010101)
#define MSIM_SWAR_HIGH UINT64_C(0x8080808080808080)
#define MSIM_SWAR_LOW7 UINT64_C(0x7f7f7f7f7f7f7f7f)

/* The 8 bytes at p as a little-endian word. */
static inline uint64_t
msim_swar_load(const char *p)
{
	uint64_t w;
	memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

/* 0x80 in each byte of w that is not an ASCII digit, 0 elsewhere. */
static inline uint64_t
msim_swar_nondigits(uint64_t w)
{
	uint64_t l = w & MSIM_SWAR_LOW7;
	uint64_t ge0 = l + 0x50 * MSIM_SWAR_ONES;  /* bit 7: byte >= '0' */
	uint64_t ge10 = l + 0x46 * MSIM_SWAR_ONES; /* bit 7: byte > '9' */
	return ~(ge0 & ~ge10 & ~w) & MSIM_SWAR_HIGH;
}

/* 0x80 in each byte of w equal to c, 0 elsewhere. */
static inline uint64_t
msim_swar_eq(uint64_t w, unsigned char c)
{
	uint64_t x = w ^ (c * MSIM_SWAR_ONES);
	return ~(((x & MSIM_SWAR_LOW7) + MSIM_SWAR_LOW7) | x | MSIM_SWAR_LOW7);
}

/* The number of the 8 ASCII digits of w, the first (lowest byte) the
 * most significant (bytes that are 0 count as leading zeros). */
static inline uint64_t
msim_swar_digits8(uint64_t w)
{
	w = ((w & 0x0f * MSIM_SWAR_ONES) * (10 * 256 + 1)) >> 8;
	w = ((w & UINT64_C(0x00ff00ff00ff00ff)) * (100 * 65536 + 1)) >> 16;
	return ((w & UINT64_C(0x0000ffff0000ffff)) *
		(10000 * UINT64_C(0x100000000) + 1)) >> 32;
}

#endif
