/* Big arrays as anonymous mappings with huge pages (base.h). */
#include <config.h>

#include <sys/mman.h>

#include "base/base.h"

static size_t round_up(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

/* Huge pages for the mapping [p, p + n), all of it: advice on a part
 * would split the mapping, and mremap does not move a split one; the
 * kernel puts huge pages where whole 2 MiB pages lie. */
static void advise(void *p, size_t n)
{
	madvise(p, n, MADV_HUGEPAGE);
}

void *lc_huge_alloc(size_t n)
{
	void *p;

	if (!n)
		n = 1;
	p = mmap(NULL, round_up(n), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	advise(p, round_up(n));
	return p;
}

void *lc_huge_grow(void *p, size_t old, size_t n)
{
	void *q;

	if (!p)
		return lc_huge_alloc(n);
	if (round_up(n) <= round_up(old))
		return p;
	q = mremap(p, round_up(old), round_up(n), MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		return NULL;
	advise(q, round_up(n));
	return q;
}

void lc_huge_free(void *p, size_t n)
{
	if (p)
		munmap(p, round_up(n ? n : 1));
}
