/* A live program's memory copied while it is stopped, so that it can run
 * on while the report decodes: lc_program_copy (program.h).
 *
 * What the report reads of a big heap, object by object through
 * process_vm_readv, took seconds to minutes with every thread stopped;
 * the same bytes copy in bulk at gigabytes a second.  So, once every
 * thread is stopped: the registers are saved (the unwinder no longer
 * needs ptrace), the writable mappings are copied (the thread stacks
 * first, then in address order; of anonymous memory only the pages the
 * process ever touched, by /proc/PID/pagemap, the others being zeros),
 * up to a byte limit and a time budget, and the threads are let go.  The
 * copy then serves reads as a whole-space overlay in front of the
 * process: what it lacks (text and read-only data, which do not change;
 * and what the limit or the budget left out) is read from the running
 * process, and counted.
 *
 * The copy is owned by the program's memory (freed with it). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include "prog/program.h"

#define NR_CLONE	56
#define NR_CLONE3	435
#define IOV_BATCH	512		/* runs of pages per process_vm_readv */

struct seg {
	uint64_t start, end;		/* copied: [start, end) */
	uint8_t *buf;
	size_t map_size;
};

struct copy {
	struct seg *segs;		/* sorted by start */
	size_t nsegs;
	uint64_t (*writable)[2];	/* every writable mapping, sorted */
	size_t nwritable;
	uint64_t *outside;		/* reads of writable memory it could
					   not serve */
	size_t last;			/* the segment copy_map served last */
};

/* The copy's bytes of [addr, addr + len) when one segment holds them. */
static const void *copy_view(void *arg, uint64_t addr, size_t len)
{
	struct copy *c = arg;
	size_t lo = 0, hi = c->nsegs;

	if (c->last < c->nsegs && c->segs[c->last].start <= addr &&
	    len <= c->segs[c->last].end - addr && addr < c->segs[c->last].end)
		return c->segs[c->last].buf + (addr - c->segs[c->last].start);
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c->segs[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->nsegs && c->segs[lo].start <= addr &&
	    len <= c->segs[lo].end - addr) {
		c->last = lo;
		return c->segs[lo].buf + (addr - c->segs[lo].start);
	}
	return NULL;
}

static int copy_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct copy *c = arg;
	const void *p = copy_view(arg, addr, len);
	size_t lo, hi;

	if (p) {
		memcpy(buf, p, len);
		return 0;
	}
	/* Writable memory the limit or the budget left out: read from the
	 * running process, and counted (text and read-only data are not
	 * copied, by design). */
	for (lo = 0, hi = c->nwritable; lo < hi;) {
		size_t mid = (lo + hi) / 2;

		if (c->writable[mid][1] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->nwritable && c->writable[lo][0] <= addr)
		(*c->outside)++;
	return -1;
}

static void copy_destroy(void *arg)
{
	struct copy *c = arg;

	for (size_t i = 0; i < c->nsegs; i++)
		munmap(c->segs[i].buf, c->segs[i].map_size);
	free(c->segs);
	free(c->writable);
	free(c);
}

static const struct lc_mem_source copy_source = {
	.name = "copy",
	.read = copy_read,
	.destroy = copy_destroy,
	.map = copy_view,
};

/* A writable mapping to copy. */
struct map {
	uint64_t lo, hi;
	bool anon;		/* no file behind it: untouched pages are 0 */
	bool stack;		/* a thread's stack pointer is in it */
};

static int map_cmp(const void *a, const void *b)
{
	const struct map *x = a, *y = b;

	if (x->stack != y->stack)
		return x->stack ? -1 : 1;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int range_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

static int seg_cmp(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The writable mappings, as /proc/PID/maps has them now (the process is
 * stopped: they hold still). */
static size_t list_maps(struct lc_program *t, struct map **ret)
{
	char path[64], line[4096];
	struct map *m = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", t->reader);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, ino;
		char perms[8] = "", name[4096] = "";

		if (sscanf(line, "%llx-%llx %7s %*s %*s %llu %4095[^\n]", &lo,
			   &hi, perms, &ino, name) < 4)
			continue;
		if (perms[0] != 'r' || perms[1] != 'w' ||
		    (strncmp(name, "/dev/", 5) == 0 &&
		     strcmp(name, "/dev/zero") != 0) ||
		    strcmp(name, "[vvar]") == 0 || strcmp(name, "[vsyscall]") == 0)
			continue;
		if (n == cap) {
			void *p = realloc(m, (cap = cap ? 2 * cap : 64) *
					  sizeof(*m));

			if (!p)
				break;
			m = p;
		}
		m[n].lo = lo;
		m[n].hi = hi;
		/* Private and with no file: [heap], [stack], anonymous. */
		m[n].anon = perms[3] == 'p' && ino == 0 &&
			    (!name[0] || name[0] == '[');
		m[n].stack = false;
		for (size_t i = 0; i < t->nthreads; i++)
			if (t->threads[i].have_regs &&
			    t->threads[i].regs[7] >= lo &&
			    t->threads[i].regs[7] < hi)
				m[n].stack = true;
		n++;
	}
	if (f)
		fclose(f);
	*ret = m;
	return n;
}

/* Save every stopped thread's registers (and what lc_program_thread_born
 * and the clone frame need), for an unwinding after the release. */
static void save_regs(struct lc_program *t)
{
	for (size_t i = 0; i < t->nthreads; i++) {
		struct lc_program_thread *th = &t->threads[i];
		struct user_regs_struct u;

		if (!lc_live_thread_regs(th->tid, &u, th->regs, &th->clone_pc,
					 &th->clone_sp))
			continue;
		th->have_regs = true;
		if (!th->born_known) {
			th->born_known = true;
			th->born = u.rax == 0 && (u.orig_rax == NR_CLONE ||
						  u.orig_rax == NR_CLONE3);
		}
	}
}

/* Copy [lo, hi) into buf, the pages pagemap says were touched when anon
 * (all of them otherwise): the bytes copied (a short copy stops at the
 * first page that could not be read, or past the deadline). */
static uint64_t copy_map(struct lc_program *t, const struct map *m,
			 uint8_t *buf, double deadline, uint64_t *skipped)
{
	uint64_t addr = m->lo;

	while (addr < m->hi) {
		struct iovec local[IOV_BATCH], remote[IOV_BATCH];
		size_t n = 0;
		uint64_t want = 0, next = addr;
		ssize_t got;

		/* Up to IOV_BATCH runs of pages, or 64 MiB. */
		while (next < m->hi && n < IOV_BATCH && want < (64u << 20)) {
			uint64_t run = m->hi - next, skip = 0;

			if (m->anon && t->pagemap_fd >= 0) {
				/* Untouched pages: 0 in the copy as in the
				 * process. */
				uint64_t pm[512];
				size_t np = run / LC_PAGE_SIZE < 512 ?
					    run / LC_PAGE_SIZE : 512, k = 0;
				ssize_t r = pread(t->pagemap_fd, pm,
						  np * sizeof(*pm),
						  (off_t)(next / LC_PAGE_SIZE *
							  sizeof(*pm)));

				if (r == (ssize_t)(np * sizeof(*pm))) {
					while (k < np &&
					       !(pm[k] & (3ull << 62)))
						k++;
					skip = k;
					if (k < np) {
						size_t e = k;

						while (e < np &&
						       (pm[e] & (3ull << 62)))
							e++;
						run = (e - k) * LC_PAGE_SIZE;
					} else {
						run = 0;
					}
				}
			}
			next += skip * LC_PAGE_SIZE;
			*skipped += skip * LC_PAGE_SIZE;
			if (!run || next >= m->hi)
				continue;
			if (run > m->hi - next)
				run = m->hi - next;
			local[n] = (struct iovec){ buf + (next - m->lo), run };
			remote[n] = (struct iovec){ (void *)(uintptr_t)next, run };
			n++;
			want += run;
			next += run;
		}
		if (n) {
			got = process_vm_readv(t->reader, local, n, remote, n, 0);
			if (got < (ssize_t)want) {
				/* The runs fill in order: the copy holds up
				 * to where the bytes read end. */
				uint64_t left = got > 0 ? (uint64_t)got : 0;
				uint64_t end = addr;

				for (size_t k = 0; k < n; k++) {
					uint64_t rs = (uint64_t)(uintptr_t)
						      remote[k].iov_base;

					if (left < remote[k].iov_len) {
						end = rs + left;
						break;
					}
					left -= remote[k].iov_len;
					end = rs + remote[k].iov_len;
				}
				return end - m->lo;
			}
		}
		addr = next;
		if (lc_now_s() > deadline)
			return addr - m->lo;
	}
	return m->hi - m->lo;
}

/* Buffers made ready before the stop: a mapping's pages the process had
 * touched already faulted in (a fault per page written costs more than
 * the copy, the more so in a virtual machine whose host backs guest
 * memory on first use). */
struct prep {
	uint64_t lo, hi;
	uint8_t *buf;
	bool taken;
};

struct preps {
	struct prep *p;
	size_t n;
};

/* Fault in the pages of buf that stand for touched pages of m (all of
 * them for a mapping of a file): the bytes. */
static uint64_t populate(struct lc_program *t, const struct map *m,
			 uint8_t *buf)
{
	uint64_t addr = m->lo, done = 0;

	if (!m->anon || t->pagemap_fd < 0) {
		if (madvise(buf, m->hi - m->lo, MADV_POPULATE_WRITE) < 0)
			for (uint64_t o = 0; o < m->hi - m->lo; o += LC_PAGE_SIZE)
				buf[o] = 0;
		return m->hi - m->lo;
	}
	while (addr < m->hi) {
		uint64_t pm[512];
		size_t np = (m->hi - addr) / LC_PAGE_SIZE < 512 ?
			    (m->hi - addr) / LC_PAGE_SIZE : 512;
		ssize_t r = pread(t->pagemap_fd, pm, np * sizeof(*pm),
				  (off_t)(addr / LC_PAGE_SIZE * sizeof(*pm)));

		if (r != (ssize_t)(np * sizeof(*pm)))
			break;
		for (size_t k = 0; k < np;) {
			size_t e = k;

			while (e < np && (pm[e] & (3ull << 62)))
				e++;
			if (e > k) {
				uint8_t *p = buf + (addr - m->lo) +
					     k * LC_PAGE_SIZE;
				size_t len = (e - k) * LC_PAGE_SIZE;

				if (madvise(p, len, MADV_POPULATE_WRITE) < 0)
					for (size_t o = 0; o < len;
					     o += LC_PAGE_SIZE)
						p[o] = 0;
				done += len;
			}
			k = e < np ? e + 1 : e;
		}
		addr += np * LC_PAGE_SIZE;
	}
	return done;
}

static void *map_buffer(uint64_t size)
{
	void *buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (buf == MAP_FAILED)
		return NULL;
	/* 2 MB pages where the kernel allows: fewer faults still. */
	if (size >= (2u << 20))
		madvise(buf, size, MADV_HUGEPAGE);
	return buf;
}

struct lc_error *lc_program_copy_prepare(struct lc_program *t, uint64_t limit)
{
	struct map *maps = NULL;
	size_t nmaps = list_maps(t, &maps);
	struct preps *ps = calloc(1, sizeof(*ps));
	uint64_t total = 0;
	double t0 = lc_now_s();

	if (!ps || !(ps->p = calloc(nmaps ? nmaps : 1, sizeof(*ps->p)))) {
		free(ps);
		free(maps);
		return &lc_error_nomem;
	}
	for (size_t i = 0; i < nmaps && total < limit; i++) {
		uint8_t *buf = map_buffer(maps[i].hi - maps[i].lo);

		if (!buf)
			continue;
		total += populate(t, &maps[i], buf);
		ps->p[ps->n++] = (struct prep){ maps[i].lo, maps[i].hi, buf,
						false };
	}
	free(maps);
	t->copy_prep = ps;
	lc_log(LC_LOG_VERBOSE, "%.1f MB of buffers made ready for the copy in %.3f s, before the stop",
	       (double)total / 1e6, lc_now_s() - t0);
	return NULL;
}

/* The prepared buffer of [lo, hi), or NULL. */
static uint8_t *take_prep(struct lc_program *t, uint64_t lo, uint64_t hi)
{
	struct preps *ps = t->copy_prep;

	for (size_t i = 0; ps && i < ps->n; i++)
		if (!ps->p[i].taken && ps->p[i].lo == lo && ps->p[i].hi == hi) {
			ps->p[i].taken = true;
			return ps->p[i].buf;
		}
	return NULL;
}

void lc_program_copy_drop(struct lc_program *t)
{
	struct preps *ps = t->copy_prep;

	for (size_t i = 0; ps && i < ps->n; i++)
		if (!ps->p[i].taken)
			munmap(ps->p[i].buf, ps->p[i].hi - ps->p[i].lo);
	if (ps)
		free(ps->p);
	free(ps);
	t->copy_prep = NULL;
}

struct lc_error *lc_program_copy(struct lc_program *t, uint64_t limit,
				 double budget_s, struct lc_copy_stats *ret)
{
	struct map *maps = NULL;
	size_t nmaps;
	struct copy *c;
	double t0 = lc_now_s(), deadline = t0 + budget_s;
	struct lc_error *err;

	memset(ret, 0, sizeof(*ret));
	if (t->kind != LC_PROGRAM_LIVE || t->detached)
		return lc_error_create(LC_ERR_INVALID,
				       "only a stopped live process is copied");
	save_regs(t);
	c = calloc(1, sizeof(*c));
	if (!c)
		return &lc_error_nomem;
	c->outside = &t->copy_outside;
	nmaps = list_maps(t, &maps);
	qsort(maps, nmaps, sizeof(*maps), map_cmp);
	c->segs = calloc(nmaps ? nmaps : 1, sizeof(*c->segs));
	if (!c->segs) {
		free(maps);
		free(c);
		return &lc_error_nomem;
	}
	ret->complete = true;
	for (size_t i = 0; i < nmaps; i++) {
		const struct map *m = &maps[i];
		uint64_t size = m->hi - m->lo, got, skipped = 0;
		uint8_t *buf;

		ret->mapped += size;
		if (ret->copied >= limit || lc_now_s() > deadline) {
			ret->complete = false;
			continue;
		}
		buf = take_prep(t, m->lo, m->hi);
		if (!buf)
			buf = map_buffer(size);
		if (!buf) {
			ret->complete = false;
			continue;
		}
		got = copy_map(t, m, buf, deadline, &skipped);
		got &= ~(uint64_t)(LC_PAGE_SIZE - 1);
		if (got < size)
			ret->complete = false;
		if (!got) {
			munmap(buf, size);
			continue;
		}
		c->segs[c->nsegs++] = (struct seg){ m->lo, m->lo + got, buf,
						    size };
		ret->copied += got - (skipped < got ? skipped : got);
	}
	c->writable = malloc((nmaps ? nmaps : 1) * sizeof(*c->writable));
	for (size_t i = 0; c->writable && i < nmaps; i++) {
		c->writable[i][0] = maps[i].lo;
		c->writable[i][1] = maps[i].hi;
	}
	if (c->writable) {
		c->nwritable = nmaps;
		qsort(c->writable, nmaps, sizeof(*c->writable), range_cmp);
	}
	free(maps);
	lc_program_copy_drop(t);
	qsort(c->segs, c->nsegs, sizeof(*c->segs), seg_cmp);
	ret->seconds = lc_now_s() - t0;
	err = lc_memory_add_space(t->mem, LC_MEM_OVERLAY, &copy_source, c);
	if (err) {
		copy_destroy(c);
		return err;
	}
	t->copied = true;
	lc_log(LC_LOG_VERBOSE, "copied %.1f MB of %.1f MB of writable memory in %.3f s%s",
	       (double)ret->copied / 1e6, (double)ret->mapped / 1e6,
	       ret->seconds, ret->complete ? "" : " (cut short)");
	return NULL;
}
