/* Scratch folders (lab/scratch.h). */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/scratch.h"
#include "sim/error.h"

int
msim_scratch_make(const char *prefix, char *path, size_t n, char *why,
		  size_t whylen)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	if ((size_t)snprintf(path, n, "%s/%s-XXXXXX", dir, prefix) >= n) {
		snprintf(why, whylen, "TMPDIR: '%s' is too long", dir);
		return MSIM_EINVAL;
	}
	if (!mkdtemp(path)) {
		snprintf(why, whylen, "%s: cannot make a scratch folder in %s: "
			 "%s", prefix, dir, strerror(errno));
		return MSIM_EIO;
	}
	return 0;
}

void
msim_scratch_remove(const char *path)
{
	DIR *d = opendir(path);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			char p[4400];
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(path);
}
