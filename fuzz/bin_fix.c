/*
 * Rewrites the block checksums of a binary trace as fuzz_bin and
 * fuzz_replay_bin do before they read it (bin_fixup.h), so that a finding
 * of theirs reads as it did there: `./bin_fix CRASH OUT`, then `memsim
 * run --recording OUT` or `memsim convert -t csv OUT x.csv`.
 */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz/bin_fixup.h"

int
main(int argc, char **argv)
{
	static uint8_t buf[1 << 24];
	if (argc != 3) {
		fprintf(stderr, "usage: bin_fix IN OUT\n");
		return 2;
	}
	FILE *fp = fopen(argv[1], "rb");
	if (!fp) {
		perror(argv[1]);
		return 1;
	}
	size_t n = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	fuzz_bin_fixup(buf, n);
	if (!(fp = fopen(argv[2], "wb")) || fwrite(buf, 1, n, fp) != n ||
	    fclose(fp)) {
		perror(argv[2]);
		return 1;
	}
	return 0;
}
