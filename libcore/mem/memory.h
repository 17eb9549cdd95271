/* The memory layer: a target's address space as ranges, each served by a
 * source.  No ELF, no process, no Lua here: a core's segments, a module's
 * file-backed text, a live process, a debugger's callback and the
 * sampler's copy are all sources that some layer above hands in.
 *
 * Reads are tried in this order:
 *  1. whole-space sources (lc_memory_add_space), overlays first, each for
 *     the whole read; with caching on (lc_memory_set_caching) they are
 *     read a page at a time and the last LC_CACHE_PAGES kept;
 *  2. ranges (lc_memory_add), chunk by chunk, the primary ones (a core's
 *     segments) before the fallback ones (LC_MEM_FALLBACK: what the
 *     modules' files hold, for text and rodata a core leaves out).
 * Regions (LC_MEM_REGION) serve no bytes: they tell where the target has
 * memory and which of it is writable, for lc_memory_is_data and the scan.
 *
 * Ownership: the memory owns its ranges and, when a source has destroy,
 * the source's arg (freed by lc_memory_destroy).  Pointers from
 * lc_memory_map point into a file image added with lc_memory_add_file;
 * they are borrowed, valid while that image is (its program's Elf). */
#ifndef LC_MEMORY_H
#define LC_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

struct lc_mem_source {
	const char *name;	/* "file", "proc", "callback", "snapshot" */
	/* 0, or -1 if any byte of [addr, addr + len) is unreadable. */
	int (*read)(void *arg, uint64_t addr, void *buf, size_t len);
	/* Optional: let go of the pages of the mapping this process has
	 * touched (they are read again when needed). */
	void (*release)(void *arg);
	/* Optional: free arg with the memory. */
	void (*destroy)(void *arg);
	/* Optional, for the scan of a whole-space source's regions: how
	 * many bytes from addr (page-aligned; at most len) the target has
	 * never written, so that they hold nothing the scan looks for
	 * (pages of a private mapping it never touched: zeros, or the
	 * file's bytes); 0 when the page at addr may hold data. */
	uint64_t (*untouched)(void *arg, uint64_t addr, uint64_t len);
	/* Optional, whole-space overlays: [addr, addr + len) as bytes in
	 * this process when the source holds them whole (a copy), else
	 * NULL; borrowed, valid while the source is (lc_memory_map). */
	const void *(*map)(void *arg, uint64_t addr, size_t len);
};

enum {
	LC_MEM_WRITABLE = 1,	/* writable in the target: heap, stacks, data */
	LC_MEM_OVERLAY = 2,	/* whole-space: tried before the others */
	LC_MEM_FALLBACK = 4,	/* range: tried after the primary ranges */
	LC_MEM_REGION = 8,	/* range: a mapping, serving no bytes */
	LC_MEM_SOLE = 16,	/* whole-space: what it cannot read, no
				   source after it is asked for */
};

/* Pages of whole-space sources kept with caching on. */
#define LC_PAGE_SIZE	4096
#define LC_CACHE_PAGES	256

struct lc_memory;

struct lc_error *lc_memory_create(struct lc_memory **ret);
void lc_memory_destroy(struct lc_memory *m);

/* [start, end) served by src (flags LC_MEM_*).  Ranges of one kind
 * (primary, fallback, region) that overlap are trimmed: the first added
 * keeps the bytes. */
struct lc_error *lc_memory_add(struct lc_memory *m, uint64_t start,
			       uint64_t end, unsigned flags,
			       const struct lc_mem_source *src, void *arg);
/* A source for the whole address space (a process, a callback). */
struct lc_error *lc_memory_add_space(struct lc_memory *m, unsigned flags,
				     const struct lc_mem_source *src,
				     void *arg);
/* Drop every range of a kind (LC_MEM_FALLBACK or LC_MEM_REGION, or 0 for
 * the primary ones), e.g. to list the modules' files again. */
void lc_memory_clear(struct lc_memory *m, unsigned kind);

/* 0, or -1 with *fault (may be NULL) the first unreadable address. */
int lc_memory_read(struct lc_memory *m, uint64_t addr, void *buf, size_t len,
		   uint64_t *fault);
/* [addr, addr + len) as bytes in this process when one primary range of
 * a file image holds it whole, or an overlay whose source maps (a copy
 * of a live process), else NULL.  Borrowed. */
const void *lc_memory_map(struct lc_memory *m, uint64_t addr, size_t len);
/* For a walk over much of a core (the heap census): with bytes > 0,
 * reads of a core's segments are served from blocks of 64 KiB read with
 * pread from the file (the page cache, at memory speed), at most about
 * bytes of them kept, instead of from the file's mapping, whose page
 * faults cost more than the bytes (a fifth of pread's speed measured in
 * a VM).  A thread of ours reads ahead where reads go from block to
 * block in one direction.  0 turns them off and frees them (the thread
 * ends); the same size again keeps them.  True when they are on.
 * lc_memory_map is not changed: its views stay valid. */
bool lc_memory_set_blocks(struct lc_memory *m, size_t bytes);
bool lc_memory_blocks_on(const struct lc_memory *m);
/* [addr, addr + len) as bytes in this process: a block (with blocks on,
 * len <= LC_PAGE_SIZE), else lc_memory_map's view; NULL where neither
 * holds it (lc_read then).  Borrowed, and valid only until the next
 * call into the memory. */
const void *lc_memory_view(struct lc_memory *m, uint64_t addr, size_t len);
/* [addr, addr + len) through lc_memory_map (lasting) or lc_memory_view,
 * else read into buf (len bytes at least); NULL if unreadable. */
static inline const void *lc_memory_bytes(struct lc_memory *m, uint64_t addr,
					  size_t len, void *buf, bool lasting)
{
	const void *p = lasting ? lc_memory_map(m, addr, len) :
			lc_memory_view(m, addr, len);

	if (p)
		return p;
	return lc_memory_read(m, addr, buf, len, NULL) == 0 ? buf : NULL;
}
/* True if [addr, addr + len) lies in writable memory: a writable primary
 * range, or with regions, a writable region.  A memory that has a
 * whole-space source and no region list cannot tell: true. */
bool lc_memory_is_data(struct lc_memory *m, uint64_t addr, size_t len);

/* Visit the writable memory in address order, chunk bytes at a time:
 * fn gets buf holding [addr, addr + avail), of which the first n bytes
 * are this chunk's and the rest (at most overlap) the start of the next,
 * so that an object across the boundary is seen whole.  Primary ranges
 * are read through their source's read (a core: pread, not its
 * mapping); regions through the whole-space sources, skipping what they
 * cannot read and what they say the target never wrote (untouched).  fn returns 0, or -1 to stop with *err set by it.  An
 * empty memory (no writable range, no region) visits nothing. */
typedef int lc_mem_chunk_fn(void *arg, uint64_t addr, const uint8_t *buf,
			    size_t n, size_t avail, struct lc_error **err);
struct lc_error *lc_memory_scan(struct lc_memory *m, size_t chunk,
				size_t overlap, lc_mem_chunk_fn *fn,
				void *arg);
/* Whether the memory can be scanned at all: it has writable ranges or
 * regions. */
bool lc_memory_scannable(struct lc_memory *m);
/* The writable span [*lo, *hi) of the ranges or regions; false if none. */
bool lc_memory_data_span(struct lc_memory *m, uint64_t *lo, uint64_t *hi);

/* Every source's release (see struct lc_mem_source). */
void lc_memory_release(struct lc_memory *m);
/* Let go of the host pages [lo, hi) where they belong to a file image
 * added with release (lc_memory_add_file): a walk through
 * lc_memory_map's views drops what it touched as it goes. */
void lc_memory_release_host(struct lc_memory *m, uintptr_t lo, uintptr_t hi);
/* The memory has a whole-space source (a process, a callback). */
bool lc_memory_has_space(const struct lc_memory *m);
/* The region holding addr ([*start, *end), its LC_MEM_* flags): false if
 * none is listed there. */
bool lc_memory_region_at(struct lc_memory *m, uint64_t addr, uint64_t *start,
			 uint64_t *end, unsigned *flags);

void lc_memory_set_caching(struct lc_memory *m, bool on);
void lc_memory_invalidate(struct lc_memory *m);

/* Called with every read when set: the fuzzing harness learns which
 * memory the decoder reads.  NULL (the default) costs one branch.  Not
 * exported from the shared library. */
extern void (*lc_read_hook)(uint64_t addr, size_t len);

/* Readers for the decoders: 0, or -1 if any byte is unreadable. */
static inline int lc_read(struct lc_memory *m, uint64_t addr, void *buf,
			  size_t len)
{
	return lc_memory_read(m, addr, buf, len, NULL);
}
int lc_read_u64(struct lc_memory *m, uint64_t addr, uint64_t *ret);
int lc_read_u32(struct lc_memory *m, uint64_t addr, uint32_t *ret);
int lc_read_u8(struct lc_memory *m, uint64_t addr, uint8_t *ret);
/* An unsigned integer of size (1, 2, 4, 8) bytes, little-endian. */
int lc_read_uint(struct lc_memory *m, uint64_t addr, unsigned size,
		 uint64_t *ret);

/* Bytes of a file mapped in this process: a core's image, a module's
 * ELF file.  [image, image + size) is the file's content; with fd >= 0
 * the scan preads the same bytes from it (POSIX_FADV_SEQUENTIAL) instead
 * of touching the mapping; path names it in messages.  With release,
 * lc_memory_release madvises the image away when it is a private
 * read-only file mapping.  Owned by the memory; *ret is borrowed. */
struct lc_mem_file;
struct lc_error *lc_memory_add_file(struct lc_memory *m, const uint8_t *image,
				    size_t size, int fd, const char *path,
				    bool release, struct lc_mem_file **ret);
/* [start, end) of the target holds the bytes at offset off of file f. */
struct lc_error *lc_memory_add_mapped(struct lc_memory *m, uint64_t start,
				      uint64_t end, unsigned flags,
				      struct lc_mem_file *f, uint64_t off);

#endif /* LC_MEMORY_H */
