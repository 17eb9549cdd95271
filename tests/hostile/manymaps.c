/* LD_PRELOAD'ed into a Lua host: before main, maps LC_MAPS one-page
 * anonymous regions, PROT_READ and PROT_NONE in turn, so that no two
 * neighbours merge into one mapping (/proc/PID/maps lists each). */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((constructor)) static void many_maps(void)
{
	const char *s = getenv("LC_MAPS");
	long n = s ? atol(s) : 0;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *base;

	if (n <= 0)
		return;
	/* One reservation, then each page given its protection: the
	 * mappings are adjacent and alternate. */
	base = mmap(NULL, (size_t)n * page, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		_exit(97);
	for (long i = 0; i < n; i += 2)
		if (mprotect(base + (size_t)i * page, page, PROT_READ) != 0)
			_exit(98);
}
