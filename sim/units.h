/* Byte sizes as people write them: "16GiB", "512MiB", "1.5GB", "4096". */
#ifndef MSIM_SIM_UNITS_H
#define MSIM_SIM_UNITS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parses a byte count: a number (decimals allowed with a suffix) and an
 * optional suffix: B; KiB MiB GiB TiB (and K M G T, binary); KB MB GB TB
 * (decimal).  Returns 0, or MSIM_EINVAL if text is not such a size or is
 * not a whole number of bytes.
 */
int msim_parse_bytes(const char *text, uint64_t *out);

/* Writes bytes as "13.71 GiB" into buf.  Returns buf. */
char *msim_format_bytes(uint64_t bytes, char *buf, size_t n);

#endif
