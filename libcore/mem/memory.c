/* The memory layer (memory.h): ranges and whole-space sources, a page
 * cache for costly sources, ranged reads that name the first unreadable
 * byte, borrowed views, and the sequential scan of writable memory. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mem/memory.h"

struct range {
	uint64_t start, end;	/* [start, end) */
	unsigned flags;
	const struct lc_mem_source *src;
	void *arg;
	const uint8_t *data;	/* the range's bytes in this process, or NULL */
	uint64_t off;		/* file ranges: the file offset of start */
};

struct ranges {
	struct range *v;
	size_t n, cap;
	bool dirty;		/* added to since the last normalize */
};

struct space {
	const struct lc_mem_source *src;
	void *arg;
	unsigned flags;
};

struct page {
	uint64_t addr;		/* page address */
	bool valid;		/* data holds the page */
	bool bad;		/* the whole page could not be read */
	uint8_t data[LC_PAGE_SIZE];
};

/* What a source arg the memory owns needs to be freed. */
struct owned {
	const struct lc_mem_source *src;
	void *arg;
};

struct lc_memory {
	struct space spaces[4];	/* overlays first */
	size_t nspaces;
	struct ranges prim, fall, regions;
	const struct range *last;	/* lc_memory_map's last hit */
	const struct range *hot;	/* the primary range of the last read */
	bool caching;
	struct page *cache;	/* LC_CACHE_PAGES, direct-mapped */
	struct owned *owned;
	size_t nowned;
	struct blocks *blocks;	/* lc_memory_set_blocks, or NULL */
};

void (*lc_read_hook)(uint64_t addr, size_t len);

/* The blocks of lc_memory_set_blocks: direct-mapped by block number;
 * each slot holds [lo, hi) of its block and up to BLOCK_OVER bytes
 * after it, read from one range's file.
 *
 * Read-ahead: a walk goes through a heap mostly block after block (the
 * GC lists run newest first, and objects made one after the other lie
 * side by side).  After two steps of one block in one direction, a
 * thread of ours reads the next AHEAD blocks in that direction while the
 * walk works on this one, so that the copy out of the page cache, a
 * third of a census's time, runs on another core.  A slot the thread
 * fills is busy: the walk neither reads nor writes it until the thread
 * is done with it (waiting, if it needs that very slot). */
#define BLOCK_SIZE	(64u << 10)
#define BLOCK_OVER	LC_PAGE_SIZE
#define AHEAD		16

/* A line each: the read-ahead thread writes the slots it fills while the
 * walk reads its own, and sharing lines would move them between the
 * cores at every view. */
struct block {
	uint64_t lo, hi;	/* target addresses held, hi == 0: empty */
	atomic_int busy;	/* the read-ahead thread owns it */
} __attribute__((aligned(64)));

struct ahead {
	size_t slot;
	uint64_t lo, hi;	/* what to read, into the slot's data */
	int fd;
	uint64_t off;		/* the file offset of lo */
};

struct blocks {
	struct block *v;
	uint8_t *data;		/* n * (BLOCK_SIZE + BLOCK_OVER) */
	size_t n;		/* a power of 2 */
	/* the walk's last block and its step (+-BLOCK_SIZE, or 0) */
	uint64_t cur;
	int64_t step;
	/* the read-ahead thread; under mu: the queue, running, quit */
	bool started, failed;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t more, done;
	struct ahead q[AHEAD];
	size_t qn;
	bool running, quit;
};

static uint8_t *slot_data(const struct blocks *b, size_t i)
{
	return b->data + i * (size_t)(BLOCK_SIZE + BLOCK_OVER);
}

static int fd_pread(int fd, uint64_t off, void *buf, size_t len)
{
	uint8_t *out = buf;

	while (len) {
		ssize_t n = pread(fd, out, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		out += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* What is queued is dropped: its slots empty and the walk's again.
 * Under mu. */
static void drop_queued(struct blocks *b)
{
	for (size_t i = 0; i < b->qn; i++) {
		b->v[b->q[i].slot].hi = 0;
		atomic_store_explicit(&b->v[b->q[i].slot].busy, 0,
				      memory_order_release);
	}
	b->qn = 0;
}

static void *ahead_main(void *arg)
{
	struct blocks *b = arg;

	pthread_mutex_lock(&b->mu);
	for (;;) {
		struct ahead r;
		struct block *k;
		bool ok;

		while (!b->qn && !b->quit)
			pthread_cond_wait(&b->more, &b->mu);
		if (b->quit)
			break;
		r = b->q[0];
		memmove(b->q, b->q + 1, --b->qn * sizeof(b->q[0]));
		b->running = true;
		pthread_mutex_unlock(&b->mu);
		ok = fd_pread(r.fd, r.off, slot_data(b, r.slot) +
			      (r.lo & (BLOCK_SIZE - 1)), (size_t)(r.hi - r.lo)) == 0;
		pthread_mutex_lock(&b->mu);
		k = &b->v[r.slot];
		k->lo = ok ? r.lo : 0;
		k->hi = ok ? r.hi : 0;
		atomic_store_explicit(&k->busy, 0, memory_order_release);
		b->running = false;
		pthread_cond_broadcast(&b->done);
	}
	drop_queued(b);
	pthread_cond_broadcast(&b->done);
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

/* The thread, with every signal blocked in it (the tools' handlers run
 * on the main thread); none when it cannot be made. */
static void ahead_start(struct blocks *b)
{
	sigset_t all, old;

	if (pthread_mutex_init(&b->mu, NULL) != 0)
		return;
	if (pthread_cond_init(&b->more, NULL) != 0) {
		pthread_mutex_destroy(&b->mu);
		return;
	}
	if (pthread_cond_init(&b->done, NULL) != 0) {
		pthread_cond_destroy(&b->more);
		pthread_mutex_destroy(&b->mu);
		return;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	b->started = pthread_create(&b->th, NULL, ahead_main, b) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!b->started) {
		pthread_cond_destroy(&b->done);
		pthread_cond_destroy(&b->more);
		pthread_mutex_destroy(&b->mu);
	}
}

/* Until the thread has nothing queued and reads nothing: what is
 * queued is dropped (its slots empty). */
static void ahead_quiesce(struct blocks *b)
{
	if (!b || !b->started)
		return;
	pthread_mutex_lock(&b->mu);
	drop_queued(b);
	while (b->running)
		pthread_cond_wait(&b->done, &b->mu);
	pthread_mutex_unlock(&b->mu);
}

/* Until slot k is no longer the thread's. */
static void ahead_wait(struct blocks *b, struct block *k)
{
	pthread_mutex_lock(&b->mu);
	while (atomic_load_explicit(&k->busy, memory_order_acquire))
		pthread_cond_wait(&b->done, &b->mu);
	pthread_mutex_unlock(&b->mu);
}

static void blocks_free(struct blocks *b)
{
	if (!b)
		return;
	if (b->started) {
		pthread_mutex_lock(&b->mu);
		b->quit = true;
		pthread_cond_signal(&b->more);
		pthread_mutex_unlock(&b->mu);
		pthread_join(b->th, NULL);
		pthread_cond_destroy(&b->done);
		pthread_cond_destroy(&b->more);
		pthread_mutex_destroy(&b->mu);
	}
	free(b->v);
	lc_huge_free(b->data, b->n * (size_t)(BLOCK_SIZE + BLOCK_OVER));
	free(b);
}

struct lc_error *lc_memory_create(struct lc_memory **ret)
{
	struct lc_memory *m = calloc(1, sizeof(*m));

	if (!m)
		return &lc_error_nomem;
	*ret = m;
	return NULL;
}

void lc_memory_destroy(struct lc_memory *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nowned; i++)
		m->owned[i].src->destroy(m->owned[i].arg);
	free(m->owned);
	free(m->prim.v);
	free(m->fall.v);
	free(m->regions.v);
	free(m->cache);
	blocks_free(m->blocks);
	free(m);
}

static int own(struct lc_memory *m, const struct lc_mem_source *src, void *arg)
{
	struct owned *p;

	if (!src->destroy)
		return 0;
	for (size_t i = 0; i < m->nowned; i++)
		if (m->owned[i].arg == arg)
			return 0;
	p = realloc(m->owned, (m->nowned + 1) * sizeof(*p));
	if (!p)
		return -1;
	m->owned = p;
	m->owned[m->nowned++] = (struct owned){ src, arg };
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sort by start and trim overlaps (never in a sane process): the range
 * that starts first keeps the bytes, so that binary search stays right.
 * qsort is not stable, so among ranges of the same start the order is
 * unspecified, as it always was. */
static void normalize(struct ranges *r)
{
	size_t out = 0;

	r->dirty = false;
	if (r->n == 0)
		return;
	qsort(r->v, r->n, sizeof(*r->v), range_cmp);
	for (size_t i = 0; i < r->n; i++) {
		struct range *s = &r->v[i];

		if (out && s->start < r->v[out - 1].end) {
			if (s->end <= r->v[out - 1].end)
				continue;
			if (s->data)
				s->data += r->v[out - 1].end - s->start;
			s->off += r->v[out - 1].end - s->start;
			s->start = r->v[out - 1].end;
		}
		r->v[out++] = *s;
	}
	r->n = out;
}

static struct ranges *kind_of(struct lc_memory *m, unsigned flags)
{
	if (flags & LC_MEM_REGION)
		return &m->regions;
	return flags & LC_MEM_FALLBACK ? &m->fall : &m->prim;
}

static struct lc_error *add_range(struct lc_memory *m, uint64_t start,
				   uint64_t end, unsigned flags,
				   const struct lc_mem_source *src, void *arg,
				   const uint8_t *data, uint64_t off)
{
	struct ranges *r = kind_of(m, flags);
	struct range s = { .start = start, .end = end, .flags = flags,
			   .src = src, .arg = arg, .data = data, .off = off };

	if (end <= start)
		return lc_error_create(LC_ERR_INVALID,
				       "empty range 0x%" PRIx64 "-0x%" PRIx64,
				       start, end);
	if (r->n == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 16;
		struct range *p = realloc(r->v, ncap * sizeof(*p));

		if (!p)
			return &lc_error_nomem;
		r->v = p;
		r->cap = ncap;
	}
	if (src && own(m, src, arg) < 0)
		return &lc_error_nomem;
	r->v[r->n++] = s;
	r->dirty = true;	/* sorted when next looked up */
	m->last = m->hot = NULL;
	return NULL;
}

struct lc_error *lc_memory_add(struct lc_memory *m, uint64_t start,
			       uint64_t end, unsigned flags,
			       const struct lc_mem_source *src, void *arg)
{
	if (!(flags & LC_MEM_REGION) && (!src || !src->read))
		return lc_error_create(LC_ERR_INVALID, "a range without a source");
	return add_range(m, start, end, flags, src, arg, NULL, 0);
}

struct lc_error *lc_memory_add_space(struct lc_memory *m, unsigned flags,
				     const struct lc_mem_source *src,
				     void *arg)
{
	size_t at = m->nspaces;

	if (!src || !src->read)
		return lc_error_create(LC_ERR_INVALID, "a source without read");
	if (m->nspaces == LC_ARRAY_SIZE(m->spaces))
		return lc_error_create(LC_ERR_INVALID, "too many sources");
	if (own(m, src, arg) < 0)
		return &lc_error_nomem;
	if (flags & LC_MEM_OVERLAY) {
		at = 0;
		while (at < m->nspaces && (m->spaces[at].flags & LC_MEM_OVERLAY))
			at++;
		memmove(&m->spaces[at + 1], &m->spaces[at],
			(m->nspaces - at) * sizeof(m->spaces[0]));
	}
	m->spaces[at] = (struct space){ src, arg, flags };
	m->nspaces++;
	m->hot = NULL;		/* the spaces come first now */
	lc_memory_invalidate(m);
	return NULL;
}

void lc_memory_clear(struct lc_memory *m, unsigned kind)
{
	struct ranges *r = kind_of(m, kind);

	r->n = 0;
	m->last = m->hot = NULL;
	if (m->blocks) {
		ahead_quiesce(m->blocks);
		for (size_t i = 0; i < m->blocks->n; i++)
			m->blocks->v[i].hi = 0;
		m->blocks->step = 0;
	}
}

static inline const struct range *find(struct ranges *r, uint64_t addr)
{
	size_t lo, hi;

	if (r->dirty)
		normalize(r);
	lo = 0;
	hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < r->v[mid].start)
			hi = mid;
		else if (addr >= r->v[mid].end)
			lo = mid + 1;
		else
			return &r->v[mid];
	}
	return NULL;
}

/* ---- the page cache of whole-space sources ---- */

static int space_read(const struct lc_memory *m, uint64_t addr, void *buf,
		      size_t len)
{
	for (size_t i = 0; i < m->nspaces; i++) {
		if (m->spaces[i].src->read(m->spaces[i].arg, addr, buf, len) == 0)
			return 0;
		if (m->spaces[i].flags & LC_MEM_SOLE)
			break;
	}
	return -1;
}

/* Bytes from addr that every whole-space source says the target never
 * wrote (at most len); 0 unless each of them can tell. */
static uint64_t space_untouched(const struct lc_memory *m, uint64_t addr,
				uint64_t len)
{
	uint64_t n = len;

	for (size_t i = 0; i < m->nspaces && n; i++) {
		const struct lc_mem_source *src = m->spaces[i].src;
		uint64_t k = src->untouched ?
			     src->untouched(m->spaces[i].arg, addr, n) : 0;

		if (k < n)
			n = k;
	}
	return m->nspaces ? n & ~(uint64_t)(LC_PAGE_SIZE - 1) : 0;
}

/* The cached page holding addr, read whole on a miss; NULL if that page
 * cannot be read whole. */
static const struct page *cache_page(struct lc_memory *m, uint64_t addr)
{
	uint64_t pa = addr & ~(uint64_t)(LC_PAGE_SIZE - 1);
	struct page *p;

	if (!m->cache) {
		m->cache = calloc(LC_CACHE_PAGES, sizeof(*m->cache));
		if (!m->cache)
			return NULL;
	}
	p = &m->cache[(pa / LC_PAGE_SIZE) % LC_CACHE_PAGES];
	if (!p->valid || p->addr != pa) {
		p->addr = pa;
		p->valid = true;
		p->bad = space_read(m, pa, p->data, LC_PAGE_SIZE) != 0;
	}
	return p->bad ? NULL : p;
}

/* Serve [addr, addr + len) from whole cached pages; -1 if one of them is
 * not readable whole (the caller then asks for the exact bytes). */
static int cache_read(struct lc_memory *m, uint64_t addr, uint8_t *out,
		      size_t len)
{
	if (len > 2 * LC_PAGE_SIZE || addr + len < addr)
		return -1;
	while (len) {
		const struct page *p = cache_page(m, addr);
		size_t off, n;

		if (!p)
			return -1;
		off = (size_t)(addr - p->addr);
		n = LC_PAGE_SIZE - off;
		if (n > len)
			n = len;
		memcpy(out, p->data + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

void lc_memory_set_caching(struct lc_memory *m, bool on)
{
	m->caching = on;
	lc_memory_invalidate(m);
}

void lc_memory_invalidate(struct lc_memory *m)
{
	if (m && m->cache)
		memset(m->cache, 0, LC_CACHE_PAGES * sizeof(*m->cache));
}

/* ---- reads ---- */

static int range_read(const struct range *s, uint64_t addr, uint8_t *out,
		      size_t n)
{
	if (s->data) {
		memcpy(out, s->data + (addr - s->start), n);
		return 0;
	}
	return s->src->read(s->arg, addr, out, n);
}

static const uint8_t *blocks_view(struct lc_memory *m, uint64_t addr,
				  size_t len);

static int read_once(struct lc_memory *m, uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;
	const struct range *h = m->hot;

	if (m->blocks) {
		const uint8_t *p = blocks_view(m, addr, len);

		if (p) {
			memcpy(buf, p, len);
			return 0;
		}
	}

	/* Reads come in runs in one range (a stack, a Proto, a table): the
	 * range the last one was served from first. */
	if (h && addr >= h->start && addr < h->end && len <= h->end - addr) {
		memcpy(buf, h->data + (addr - h->start), len);
		return 0;
	}
	if (m->nspaces &&
	    ((m->caching && cache_read(m, addr, buf, len) == 0) ||
	     space_read(m, addr, buf, len) == 0))
		return 0;
	while (len) {
		const struct range *s = find(&m->prim, addr);
		uint64_t n;

		if (s && s->data && !m->nspaces)
			m->hot = s;
		if (!s)
			s = find(&m->fall, addr);
		if (!s)
			return -1;
		n = s->end - addr;
		if (n > len)
			n = len;
		if (range_read(s, addr, out, (size_t)n) < 0)
			return -1;
		out += n;
		addr += n;
		len -= (size_t)n;
		if (len && addr == 0)	/* wrapped around */
			return -1;
	}
	return 0;
}

int lc_memory_read(struct lc_memory *m, uint64_t addr, void *buf, size_t len,
		   uint64_t *fault)
{
	if (lc_read_hook)
		lc_read_hook(addr, len);
	if (read_once(m, addr, buf, len) == 0)
		return 0;
	if (fault) {
		/* The first byte that does not read on its own: a page at a
		 * time, then byte by byte in the page that fails. */
		uint8_t tmp[LC_PAGE_SIZE];
		uint64_t a = addr, end = addr + len;

		*fault = addr;
		while (a < end && a >= addr) {
			uint64_t pe = (a | (LC_PAGE_SIZE - 1)) + 1;
			size_t n = (size_t)((pe > end || pe < a ? end : pe) - a);

			if (read_once(m, a, tmp, n) < 0) {
				for (size_t i = 0; i < n; i++)
					if (read_once(m, a + i, tmp, 1) < 0) {
						*fault = a + i;
						return -1;
					}
			}
			a += n;
		}
	}
	return -1;
}

int lc_read_u64(struct lc_memory *m, uint64_t addr, uint64_t *ret)
{
	return lc_read(m, addr, ret, 8);
}

int lc_read_u32(struct lc_memory *m, uint64_t addr, uint32_t *ret)
{
	return lc_read(m, addr, ret, 4);
}

int lc_read_u8(struct lc_memory *m, uint64_t addr, uint8_t *ret)
{
	return lc_read(m, addr, ret, 1);
}

int lc_read_uint(struct lc_memory *m, uint64_t addr, unsigned size,
		 uint64_t *ret)
{
	uint8_t b[8];

	if (size == 0 || size > 8 || lc_read(m, addr, b, size) < 0)
		return -1;
	*ret = 0;
	/* Little-endian targets only (x86_64, aarch64). */
	for (unsigned i = size; i-- > 0;)
		*ret = (*ret << 8) | b[i];
	return 0;
}

const void *lc_memory_map(struct lc_memory *m, uint64_t addr, size_t len)
{
	const struct range *s = m->last;

	/* Overlays come first in reads, so in views too. */
	for (size_t i = 0; i < m->nspaces &&
	     (m->spaces[i].flags & LC_MEM_OVERLAY); i++) {
		if (m->spaces[i].src->map) {
			const void *p = m->spaces[i].src->map(m->spaces[i].arg,
							     addr, len);

			if (p)
				return p;
		}
	}
	if (!s || addr < s->start || addr >= s->end) {
		s = find(&m->prim, addr);
		if (!s)
			return NULL;
		m->last = s;
	}
	if (!s->data || len > s->end - addr)
		return NULL;
	return s->data + (addr - s->start);
}

static const struct lc_mem_source mapped_source;

/* Bytes of a file mapped in this process (lc_memory_add_file). */
struct lc_mem_file {
	const uint8_t *image;
	size_t size;
	int fd;			/* for pread, or -1 */
	char *path;		/* for messages, or NULL */
	int releasable;		/* -1 unknown, 0 no, 1 a file mapping */
	bool check_release;	/* release may madvise the image */
};


/* The walk is now in block base (s: its range, NULL: not looked up):
 * after two steps of one block in one direction, the next AHEAD blocks
 * that way are queued for the thread when the one half-way there is
 * neither held nor queued (so that the thread is woken once for several
 * blocks). */
static void read_ahead(struct lc_memory *m, const struct range *s,
		       uint64_t base)
{
	struct blocks *b = m->blocks;
	int64_t d = (int64_t)(base - b->cur);
	const struct lc_mem_file *f;
	uint64_t mid;
	struct block *km;
	bool added = false;

	b->cur = base;
	/* too few slots: the blocks ahead would take those in use */
	if (b->n < 4 * AHEAD)
		return;
	if (d != (int64_t)BLOCK_SIZE && d != -(int64_t)BLOCK_SIZE) {
		b->step = 0;
		return;
	}
	if (d != b->step) {
		b->step = d;
		return;
	}
	mid = base + (uint64_t)(d * (AHEAD / 2));
	km = &b->v[(size_t)(mid / BLOCK_SIZE) & (b->n - 1)];
	if (atomic_load_explicit(&km->busy, memory_order_acquire) ||
	    (km->hi && km->lo <= mid && mid < km->hi))
		return;
	if (!s) {
		s = m->last;
		if (!s || base < s->start || base >= s->end)
			s = find(&m->prim, base);
	}
	if (!s || s->src != &mapped_source || !s->data)
		return;
	f = s->arg;
	if (f->fd < 0)
		return;
	/* made when first wanted: never for memory with no file behind */
	if (!b->started && (ahead_start(b), !b->started)) {
		b->failed = true;
		return;
	}
	pthread_mutex_lock(&b->mu);
	for (int j = 1; j <= AHEAD && b->qn < AHEAD; j++) {
		uint64_t nb = base + (uint64_t)(d * j), lo, hi;
		size_t i = (size_t)(nb / BLOCK_SIZE) & (b->n - 1);
		struct block *k = &b->v[i];

		if (nb + BLOCK_SIZE <= s->start || nb >= s->end ||
		    (d < 0 && nb > base) || (d > 0 && nb < base))
			break;
		lo = nb < s->start ? s->start : nb;
		if (atomic_load_explicit(&k->busy, memory_order_relaxed) ||
		    (k->hi && k->lo <= lo && k->hi >= nb + BLOCK_SIZE))
			continue;
		hi = nb + BLOCK_SIZE + BLOCK_OVER;
		if (hi > s->end)
			hi = s->end;
		k->hi = 0;
		atomic_store_explicit(&k->busy, 1, memory_order_relaxed);
		b->q[b->qn++] = (struct ahead){ i, lo, hi, f->fd,
						s->off + (lo - s->start) };
		added = true;
	}
	if (added)
		pthread_cond_signal(&b->more);
	pthread_mutex_unlock(&b->mu);
}

/* [addr, addr + len) from a block, read on a miss with pread from the
 * file behind the primary range that holds addr; NULL where no file
 * with a descriptor is behind it, or where the range or the file ends
 * before addr + len. */
static const uint8_t *block_view(struct lc_memory *m, uint64_t addr,
				 size_t len)
{
	struct blocks *b = m->blocks;
	uint64_t base = addr & ~(uint64_t)(BLOCK_SIZE - 1);
	size_t i = (size_t)(base / BLOCK_SIZE) & (b->n - 1);
	struct block *k = &b->v[i];
	uint8_t *data = slot_data(b, i);
	const struct range *s = NULL;

	if (atomic_load_explicit(&k->busy, memory_order_acquire))
		ahead_wait(b, k);
	if (k->hi == 0 || addr < k->lo || addr + len > k->hi ||
	    addr + len < addr) {
		const struct lc_mem_file *f;
		uint64_t lo, hi;

		s = m->last;
		if (!s || addr < s->start || addr >= s->end) {
			s = find(&m->prim, addr);
			if (!s)
				return NULL;
			m->last = s;
		}
		if (s->src != &mapped_source || !s->data)
			return NULL;
		f = s->arg;
		if (f->fd < 0)
			return NULL;
		lo = base < s->start ? s->start : base;
		hi = base + BLOCK_SIZE + BLOCK_OVER;
		if (hi > s->end || hi < base)
			hi = s->end;
		if (addr + len > hi || addr + len < addr)
			return NULL;
		k->hi = 0;
		if (fd_pread(f->fd, s->off + (lo - s->start), data + (lo - base),
			       (size_t)(hi - lo)) < 0)
			return NULL;
		k->lo = lo;
		k->hi = hi;
	}
	if (base != b->cur && !b->failed)
		read_ahead(m, s, base);
	return data + (addr - base);
}

/* block_view where blocks serve [addr, addr + len): on, no whole-space
 * source before the ranges, len within a block's overlap. */
static const uint8_t *blocks_view(struct lc_memory *m, uint64_t addr,
				  size_t len)
{
	if (!m->blocks || m->nspaces || len > BLOCK_OVER)
		return NULL;
	return block_view(m, addr, len);
}

const void *lc_memory_view(struct lc_memory *m, uint64_t addr, size_t len)
{
	const uint8_t *p = blocks_view(m, addr, len);

	return p ? p : lc_memory_map(m, addr, len);
}

bool lc_memory_blocks_on(const struct lc_memory *m)
{
	return m->blocks != NULL;
}

bool lc_memory_set_blocks(struct lc_memory *m, size_t bytes)
{
	struct blocks *b;
	size_t n = 1;

	/* a power of 2, for the slot's mask */
	while (2 * n * (BLOCK_SIZE + BLOCK_OVER) <= bytes)
		n *= 2;
	if (bytes < BLOCK_SIZE + BLOCK_OVER)
		n = 0;
	if (n && m->blocks && m->blocks->n == n)
		return true;	/* on already */

	blocks_free(m->blocks);
	m->blocks = NULL;
	if (!n)
		return false;
	b = calloc(1, sizeof(*b));
	if (!b)
		return false;
	b->n = n;
	b->v = aligned_alloc(_Alignof(struct block), n * sizeof(*b->v));
	if (b->v)
		memset(b->v, 0, n * sizeof(*b->v));
	b->data = lc_huge_alloc(n * (size_t)(BLOCK_SIZE + BLOCK_OVER));
	if (!b->v || !b->data) {
		blocks_free(b);
		return false;
	}
	m->blocks = b;
	return true;
}

bool lc_memory_is_data(struct lc_memory *m, uint64_t addr, size_t len)
{
	const struct range *s;

	if (m->nspaces && !m->regions.n)
		return true;
	s = find(m->nspaces ? &m->regions : &m->prim, addr);
	return s && (s->flags & LC_MEM_WRITABLE) && len <= s->end - addr;
}

void lc_memory_release(struct lc_memory *m)
{
	for (size_t i = 0; i < m->nowned; i++)
		if (m->owned[i].src->release)
			m->owned[i].src->release(m->owned[i].arg);
}

/* ---- the scan ---- */

static struct ranges *scan_ranges(struct lc_memory *m)
{
	struct ranges *r = m->nspaces ? &m->regions : &m->prim;

	if (r->dirty)
		normalize(r);
	return r;
}

bool lc_memory_scannable(struct lc_memory *m)
{
	return scan_ranges(m)->n > 0;
}

bool lc_memory_data_span(struct lc_memory *m, uint64_t *lo, uint64_t *hi)
{
	const struct ranges *r = scan_ranges(m);

	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].flags & LC_MEM_WRITABLE) {
			if (r->v[i].start < *lo)
				*lo = r->v[i].start;
			if (r->v[i].end > *hi)
				*hi = r->v[i].end;
		}
	return *hi > 0;
}

struct lc_error *lc_memory_scan(struct lc_memory *m, size_t chunk,
				size_t overlap, lc_mem_chunk_fn *fn,
				void *arg)
{
	const struct ranges *r = scan_ranges(m);
	struct lc_error *err = NULL;

	uint8_t *buf;

	if (!r->n)
		return NULL;
	buf = malloc(chunk + overlap);
	if (!buf)
		return &lc_error_nomem;
	for (size_t i = 0; i < r->n && !err; i++) {
		const struct range *s = &r->v[i];
		const struct lc_mem_file *mf = NULL;
		uint64_t len;

		if (!(s->flags & LC_MEM_WRITABLE))
			continue;
		if (!m->nspaces) {
			/* Primary ranges: read with pread from the file
			 * behind them, into one buffer (the page cache, not
			 * our RSS). */
			if (s->src != &mapped_source)
				continue;
			mf = s->arg;
			if (mf->fd < 0)
				continue;
			posix_fadvise(mf->fd, (off_t)s->off,
				      (off_t)(s->end - s->start),
				      POSIX_FADV_SEQUENTIAL);
		}
		len = s->end - s->start;
		for (uint64_t done = 0; done < len;) {
			size_t n;

			if (!mf) {
				uint64_t skip = space_untouched(m, s->start + done,
								len - done);

				if (skip) {
					done += skip;
					continue;
				}
			}
			n = len - done > chunk ? chunk : (size_t)(len - done);
			/* A little of the next chunk, so that an object
			 * starting near the end is seen whole. */
			size_t avail = len - done - n > overlap ?
				       n + overlap : (size_t)(len - done);
			uint64_t a = s->start + done;

			if (!mf) {
				/* A region may have holes (a guard page, memory
				 * the debugger cannot read): skip what fails. */
				if (space_read(m, a, buf, avail) != 0) {
					if (avail == n || space_read(m, a, buf, n) != 0) {
						done += n;
						continue;
					}
					memset(buf + n, 0, avail - n);
				}
			} else {
				errno = 0;
				if (fd_pread(mf->fd, s->off + done, buf, avail) < 0) {
					err = lc_error_create(LC_ERR_OS,
						"cannot read core '%s' at offset %" PRIu64 ": %s",
						mf->path ? mf->path : "?",
						s->off + done,
						strerror(errno ? errno : EIO));
					break;
				}
			}
			if (fn(arg, a, buf, n, avail, &err) < 0) {
				if (!err)
					err = &lc_error_nomem;
				break;
			}
			done += n;
		}
	}
	free(buf);
	return err;
}

/* ---- mapped bytes with a file behind them ---- */

/* Ranges of a file keep their bytes in range.data: no read through the
 * source (the scan preads them itself). */
static int mapped_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	return -1;
}

/* The image is a private read-only file mapping (libelf falls back to
 * malloc'd memory when mmap fails, which MADV_DONTNEED would zero). */
static bool file_mapping(const uint8_t *map, size_t size)
{
	char line[512];
	FILE *f;
	bool ok = false;

	if (!map || ((uintptr_t)map & 4095) || !size)
		return false;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, ino;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &lo, &hi, perms,
			   &ino) != 4)
			continue;
		if ((uintptr_t)map >= lo && (uintptr_t)map < hi) {
			ok = ino != 0 && perms[1] == '-';
			break;
		}
	}
	fclose(f);
	return ok;
}

static void file_release(void *arg)
{
	struct lc_mem_file *f = arg;

	if (!f->check_release)
		return;
	if (f->releasable < 0)
		f->releasable = file_mapping(f->image, f->size);
	if (f->releasable)
		madvise((void *)(uintptr_t)f->image, f->size, MADV_DONTNEED);
}

static void file_destroy(void *arg)
{
	struct lc_mem_file *f = arg;

	free(f->path);
	free(f);
}

static const struct lc_mem_source mapped_source = {
	.name = "file",
	.read = mapped_read,
	.release = file_release,
	.destroy = file_destroy,
};

void lc_memory_release_host(struct lc_memory *m, uintptr_t lo, uintptr_t hi)
{
	for (size_t i = 0; i < m->nowned; i++) {
		struct lc_mem_file *f = m->owned[i].arg;
		uintptr_t start, end, a, b;

		if (m->owned[i].src != &mapped_source || !f->check_release)
			continue;
		if (f->releasable < 0)
			f->releasable = file_mapping(f->image, f->size);
		if (!f->releasable)
			continue;
		start = (uintptr_t)f->image;
		end = (start + f->size + 4095) & ~(uintptr_t)4095;
		a = lo < start ? start : lo;
		b = hi > end ? end : hi;
		if (b > a)
			madvise((void *)a, b - a, MADV_DONTNEED);
	}
}

bool lc_memory_has_space(const struct lc_memory *m)
{
	return m->nspaces > 0;
}

bool lc_memory_region_at(struct lc_memory *m, uint64_t addr, uint64_t *start,
			 uint64_t *end, unsigned *flags)
{
	const struct range *s = find(m->nspaces ? &m->regions : &m->prim, addr);

	if (!s)
		return false;
	*start = s->start;
	*end = s->end;
	*flags = s->flags;
	return true;
}

struct lc_error *lc_memory_add_file(struct lc_memory *m, const uint8_t *image,
				    size_t size, int fd, const char *path,
				    bool release, struct lc_mem_file **ret)
{
	struct lc_mem_file *f;

	/* The same file again (its segments listed anew): one record. */
	for (size_t i = 0; i < m->nowned; i++) {
		f = m->owned[i].arg;
		if (m->owned[i].src == &mapped_source && f->image == image &&
		    f->size == size && f->fd == fd) {
			*ret = f;
			return NULL;
		}
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return &lc_error_nomem;
	*f = (struct lc_mem_file){ image, size, fd, NULL, -1, release };
	if ((path && !(f->path = strdup(path))) ||
	    own(m, &mapped_source, f) < 0) {
		file_destroy(f);
		return &lc_error_nomem;
	}
	*ret = f;
	return NULL;
}

struct lc_error *lc_memory_add_mapped(struct lc_memory *m, uint64_t start,
				      uint64_t end, unsigned flags,
				      struct lc_mem_file *f, uint64_t off)
{
	if (off > f->size || end - start > f->size - off)
		return lc_error_create(LC_ERR_INVALID,
				       "range 0x%" PRIx64 "-0x%" PRIx64 " past the end of its file",
				       start, end);
	return add_range(m, start, end, flags, &mapped_source, f,
			 f->image + off, off);
}
