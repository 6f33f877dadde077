/*
 * A libFuzzer target for one trace reader (FUZZ_FORMAT: csv, pickle, rmm
 * or bin): the input is written to a file and read to the end as requests,
 * with every option of a recording on, and then its snapshot state.  Any crash, leak, hang or sanitizer
 * report is a bug; a clean error is the expected outcome for most inputs.
 * Without libFuzzer, -DFUZZ_MAIN builds a driver that runs the files named
 * on its command line.  See fuzz/README.md.
 */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "traces/trace.h"
#include "fuzz/bin_fixup.h"
#include "fuzz/common.h"

#ifndef FUZZ_FORMAT
#define FUZZ_FORMAT "pickle"
#endif

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The binary reader checks a checksum per block before decoding:
	 * fix them up so that mutations reach the decoder. */
	static uint8_t *copy;
	static size_t ncopy;
	if (size > ncopy) {
		free(copy);
		if (!(copy = malloc(size)))
			abort();
		ncopy = size;
	}
	if (size)
		memcpy(copy, data, size);
	fuzz_bin_fixup(copy, size);
	const char *path = fuzz_file(FUZZ_FORMAT, copy, size);
	msim_trace_options_t opt = {
		.deferred_frees = true,
		.hidden_empty_cache = true,
		.format = msim_trace_format_find(FUZZ_FORMAT),
	};
	/* Half the inputs pick a device, as --device does. */
	if (size && (data[size - 1] & 1))
		opt.device1 = 1 + (data[size - 1] >> 6);
	msim_trace_t *t;
	char why[512];
	if (msim_trace_open(path, &opt, &t, why, sizeof(why)) == 0) {
		msim_req_t r;
		while (msim_trace_next(t, &r) == 1)
			;
		/* The snapshot state, every block touched. */
		const msim_snap_segment_t *g;
		size_t n;
		uint64_t sum = 0;
		if (msim_trace_segments(t, &g, &n) == 0)
			for (size_t i = 0; i < n; i++)
				for (size_t k = 0; k < g[i].nblocks; k++)
					sum += g[i].blocks[k].size +
					       g[i].blocks[k].state;
		if (sum == 1)
			fputc('\0', stderr); /* keep sum live */
		msim_trace_close(t);
	}
	return 0;
}
