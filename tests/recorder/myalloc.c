/*
 * A pluggable allocator for torch.cuda.MemPool(allocator) probes
 * (tests/recorder/graphreuse.py ownpool): my_malloc and my_free call
 * cudaMalloc and cudaFree of the CUDA runtime PyTorch already loaded (found
 * with dlopen, so no CUDA headers or libraries are needed to build it:
 *   gcc -shared -fPIC -O2 -o myalloc.so tests/recorder/myalloc.c -ldl),
 * and log each call to stderr as "myalloc: malloc SIZE PTR" / "myalloc:
 * free SIZE PTR", what the allocator asked of its pool's allocator.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

typedef int (*rt_malloc_t)(void **, size_t);
typedef int (*rt_free_t)(void *);

static rt_malloc_t rt_malloc;
static rt_free_t rt_free;

/* The runtime PyTorch loaded: by soname, else by the path in the maps. */
static void
myalloc_init(void)
{
	static const char *const names[] = {
		"libcudart.so.13", "libcudart.so.12", "libcudart.so", NULL,
	};
	void *h = NULL;
	if (rt_malloc)
		return;
	for (int i = 0; !h && names[i]; i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
	if (!h) {
		FILE *fp = fopen("/proc/self/maps", "r");
		char line[4096];
		while (fp && !h && fgets(line, sizeof(line), fp)) {
			char *p = strchr(line, '/');
			if (!p || !strstr(p, "libcudart.so"))
				continue;
			p[strcspn(p, "\n")] = '\0';
			h = dlopen(p, RTLD_NOW);
		}
		if (fp)
			fclose(fp);
	}
	for (int i = 0; !h && names[i]; i++)
		h = dlopen(names[i], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "myalloc: no libcudart: %s\n", dlerror());
		return;
	}
	rt_malloc = (rt_malloc_t)dlsym(h, "cudaMalloc");
	rt_free = (rt_free_t)dlsym(h, "cudaFree");
}

void *
my_malloc(ssize_t size, int device, void *stream)
{
	void *p = NULL;
	(void)device;
	(void)stream;
	myalloc_init();
	if (!rt_malloc || rt_malloc(&p, (size_t)size) != 0)
		p = NULL;
	fprintf(stderr, "myalloc: malloc %zd %lu\n", size, (unsigned long)p);
	return p;
}

void
my_free(void *ptr, ssize_t size, int device, void *stream)
{
	(void)device;
	(void)stream;
	myalloc_init();
	fprintf(stderr, "myalloc: free %zd %lu\n", size, (unsigned long)ptr);
	if (rt_free)
		rt_free(ptr);
}
