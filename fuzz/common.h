/*
 * What the fuzz targets share: the input written to a file in /dev/shm (the
 * readers take paths), and a driver for builds without libFuzzer
 * (-DFUZZ_MAIN runs the files named on its command line).
 */
#ifndef MSIM_FUZZ_COMMON_H
#define MSIM_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data to a per-process file (suffix names it); returns its path. */
static inline const char *
fuzz_file(const char *suffix, const uint8_t *data, size_t size)
{
	static char path[4][96];
	static int next;
	char *p = path[next++ & 3];
	snprintf(p, sizeof(path[0]), "/dev/shm/msim-fuzz-%d-%s", (int)getpid(),
		 suffix);
	FILE *fp = fopen(p, "wb");
	if (!fp)
		abort();
	if (size && fwrite(data, 1, size, fp) != size)
		abort();
	fclose(fp);
	return p;
}

#ifdef FUZZ_MAIN
int
main(int argc, char **argv)
{
	static uint8_t buf[1 << 24];
	for (int i = 1; i < argc; i++) {
		FILE *fp = fopen(argv[i], "rb");
		if (!fp)
			continue;
		size_t n = fread(buf, 1, sizeof(buf), fp);
		fclose(fp);
		LLVMFuzzerTestOneInput(buf, n);
	}
	return 0;
}
#endif

#endif
