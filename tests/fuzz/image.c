/* Patches to a fixture core's image: see image.h. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "image.h"
#include "../puc_support.h"

#define MAX_PAGES	4096
#define MAX_PATCHES	64

static struct lc_target *target;
static uint64_t pages[MAX_PAGES];	/* target addresses read, page-aligned */
static size_t npages;
static struct {
	uint8_t *at;
	uint8_t old[8];
	size_t len;
} undo[MAX_PATCHES];
static size_t nundo;

/* Where target address addr lies in the (writable) image, or NULL. */
static uint8_t *image_at(uint64_t addr, size_t len)
{
	return (uint8_t *)lc_memory_map(target->prog->mem, addr, len);
}

/* While learning: the fields read (address and length, at most 8 bytes
 * of each), for typed edits. */
#define MAX_FIELDS	65536
static struct { uint64_t addr; uint32_t len; } fields[MAX_FIELDS];
static size_t nfields;
static uint64_t ptrs[MAX_FIELDS];	/* values of 8-byte fields that point
					   into the image */
static size_t nptrs;

static void learn_field(uint64_t addr, size_t len)
{
	uint8_t *at = image_at(addr, len);
	uint64_t v;

	if (!at || nfields == MAX_FIELDS)
		return;
	/* Consecutive reads of one field are one. */
	if (nfields && fields[nfields - 1].addr == addr)
		return;
	fields[nfields].addr = addr;
	fields[nfields].len = len > 8 ? 1 : (uint32_t)len;
	nfields++;
	if (len == 8 && !(addr & 7)) {
		memcpy(&v, at, 8);
		if (v && !(v & 7) && image_at(v, 1) && nptrs < MAX_FIELDS)
			ptrs[nptrs++] = v;
	}
}

/* While learning: the pages of every read. */
static void learn_read(uint64_t addr, size_t len)
{
	learn_field(addr, len);
	for (uint64_t pa = addr & ~4095ull; len && pa < addr + len &&
	     npages < MAX_PAGES; pa += 4096) {
		size_t i;

		for (i = 0; i < npages && pages[i] != pa; i++)
			;
		if (i == npages && image_at(pa, 1))
			pages[npages++] = pa;
	}
}

struct lc_target *fuzz_image_open(const char *who)
{
	const char *core = getenv("LC_FUZZ_CORE"), *exe = getenv("LC_FUZZ_EXE");
	struct lc_error *err;
	uint8_t *image;
	size_t size;
	uintptr_t lo, hi;

	if (!core) {
		fprintf(stderr, "%s: set LC_FUZZ_CORE (and LC_FUZZ_EXE)\n", who);
		exit(2);
	}
	err = lc_target_open_core(core, exe, &target);
	if (err) {
		fprintf(stderr, "%s: %s\n", who, lc_error_message(err));
		exit(2);
	}
	image = (uint8_t *)elf_rawfile(target->prog->core_elf, &size);
	lo = (uintptr_t)image & ~(uintptr_t)4095;
	hi = ((uintptr_t)image + size + 4095) & ~(uintptr_t)4095;
	if (!image || mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE)) {
		fprintf(stderr, "%s: cannot make the core image writable\n", who);
		exit(2);
	}
	return target;
}

void fuzz_image_learn(const char *who, void (*learn)(void))
{
	/* The scan for idle VMs reads the whole image directly, not through
	 * lc_read: only reads through lc_read are learned. */
	lc_read_hook = learn_read;
	learn();
	lc_read_hook = NULL;
	if (!npages) {
		fprintf(stderr, "%s: the decoder read no memory of the core\n", who);
		exit(2);
	}
	fprintf(stderr, "%s: %zu pages of %s\n", who, npages,
		target->prog->core_path);
}

void fuzz_image_patch(const uint8_t *data, size_t size)
{
	while (size >= 6 && nundo < MAX_PATCHES) {
		size_t idx = (data[0] | (size_t)data[1] << 8) % npages;
		size_t off = (data[2] | (size_t)data[3] << 8) % 4096;
		size_t len = data[4] % 8 + 1;
		uint8_t *at;

		data += 5;
		size -= 5;
		if (len > size)
			len = size;
		at = image_at(pages[idx] + off, len);
		if (at) {
			undo[nundo].at = at;
			undo[nundo].len = len;
			memcpy(undo[nundo].old, at, len);
			memcpy(at, data, len);
			nundo++;
		}
		data += len;
		size -= len;
	}
}

void fuzz_image_restore(void)
{
	while (nundo) {
		nundo--;
		memcpy(undo[nundo].at, undo[nundo].old, undo[nundo].len);
	}
}

long fuzz_image_page_index(uint64_t addr)
{
	for (size_t i = 0; i < npages; i++)
		if (pages[i] == (addr & ~4095ull))
			return (long)i;
	return -1;
}

uint8_t *fuzz_image_at(uint64_t addr, size_t len)
{
	return image_at(addr, len);
}

long long fuzz_image_file_offset(uint64_t addr, size_t len)
{
	const uint8_t *raw = (const uint8_t *)elf_rawfile(target->prog->core_elf, NULL);
	const uint8_t *p = image_at(addr, len);

	return p && raw ? (long long)(p - raw) : -1;
}

size_t fuzz_image_typed_edit(uint8_t *out, size_t max, uint64_t seed)
{
	uint64_t r = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
	uint64_t v = 0, addr;
	uint32_t len;
	long pi;
	uint8_t *at;

#define NEXT() (r ^= r >> 29, r *= 0xbf58476d1ce4e5b9ull, r ^= r >> 32, r)
	if (!nfields || max < 13)
		return 0;
	{
		size_t i = NEXT() % nfields;

		addr = fields[i].addr;
		len = fields[i].len;
	}
	at = image_at(addr, len);
	pi = fuzz_image_page_index(addr);
	if (!at || pi < 0 || (addr & 4095) + len > 4096)
		return 0;
	memcpy(&v, at, len);
	switch (NEXT() % 16) {
	case 0: v = 0; break;
	case 1: v = ~0ull; break;
	case 2: v = 0x7fffffff; break;
	case 3: v = 0x80000000; break;
	case 4: v = 0xffffffff; break;
	case 5: v = 1ull << 40; break;
	case 6: v = NEXT() % 64; break;
	case 7: v ^= 1ull << (NEXT() % (len * 8)); break;
	case 8: v = addr; break;				/* self-loop */
	case 9: v = nptrs ? ptrs[NEXT() % nptrs] : 0; break;	/* another object */
	case 10: v += 1 + NEXT() % 7; break;			/* misaligned */
	case 11: v -= 1; break;
	case 12: v = (uint64_t)-125; break;
	case 13: v = 0xdead0000; break;
	default: v ^= 1ull << (NEXT() % 8); break;		/* low bits: tags, status */
	}
#undef NEXT
	out[0] = (uint8_t)pi;
	out[1] = (uint8_t)(pi >> 8);
	out[2] = (uint8_t)addr;
	out[3] = (uint8_t)((addr & 4095) >> 8);
	out[4] = (uint8_t)(len - 1);
	memcpy(out + 5, &v, len);
	return 5 + len;
}
