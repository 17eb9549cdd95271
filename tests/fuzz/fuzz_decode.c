/* libFuzzer harness: the Lua decoder on a real process image, mutated.
 *
 * A fixture core ($LC_FUZZ_CORE, with $LC_FUZZ_EXE) is opened once; its
 * file image is made writable (a private copy-on-write mapping).  One
 * report is taken to learn which pages the decoder reads.  An input is a
 * list of patches to those pages:
 *
 *	u16 page index (modulo the number of pages), u16 offset (modulo the
 *	page size), u8 length (1-8), then that many bytes
 *
 * applied to the image, a full report taken (locals, data stacks, the
 * scan for idle VMs) and printed as text and JSON, and the image
 * restored.  Memory read by the unwinder (the machine stacks) is patched
 * too: libdwfl reads the same image.  A crash, a sanitizer report or a
 * hang (libFuzzer's -timeout) is a bug.
 *
 * Built by tests/fuzz/build.sh with libFuzzer and ASan/UBSan, or with
 * tests/fuzz/replay.c for replaying a corpus (make check). */
#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fuzz.h"
#include "internal.h"

#define MAX_PAGES	4096
#define MAX_PATCHES	64

static struct lc_target *target;
static uint8_t *image;			/* the core's file image */
static size_t image_size;
static uint64_t pages[MAX_PAGES];	/* target addresses read, page-aligned */
static size_t npages;
static FILE *devnull;

/* Where target address addr lies in the (writable) image, or NULL. */
static uint8_t *image_at(uint64_t addr, size_t len)
{
	return (uint8_t *)lc_core_image_at(target, addr, len);
}

/* While learning: the pages of every read. */
static void learn_read(uint64_t addr, size_t len)
{
	for (uint64_t pa = addr & ~4095ull; len && pa < addr + len &&
	     npages < MAX_PAGES; pa += 4096) {
		size_t i;

		for (i = 0; i < npages && pages[i] != pa; i++)
			;
		if (i == npages && image_at(pa, 1))
			pages[npages++] = pa;
	}
}

static void run(void)
{
	struct lc_report_options o = { .locals = true, .stack = true };
	struct lc_report *r = NULL;
	struct lc_error *err = lc_report_create(target, &o, &r);

	if (!err) {
		lc_report_print_text(r, devnull);
		lc_report_print_json(r, devnull);
	}
	lc_error_destroy(err);
	lc_report_destroy(r);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *core = getenv("LC_FUZZ_CORE"), *exe = getenv("LC_FUZZ_EXE");
	struct lc_report_options o = { .locals = true, .stack = true,
				       .no_scan = true };
	struct lc_report *r = NULL;
	struct lc_error *err;
	uintptr_t lo, hi;

	(void)argc;
	(void)argv;
	if (!core) {
		fprintf(stderr, "fuzz_decode: set LC_FUZZ_CORE (and LC_FUZZ_EXE)\n");
		exit(2);
	}
	err = lc_target_open_core(core, exe, &target);
	if (err) {
		fprintf(stderr, "fuzz_decode: %s\n", lc_error_message(err));
		exit(2);
	}
	image = (uint8_t *)elf_rawfile(target->core_elf, &image_size);
	lo = (uintptr_t)image & ~(uintptr_t)4095;
	hi = ((uintptr_t)image + image_size + 4095) & ~(uintptr_t)4095;
	if (!image || mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE)) {
		fprintf(stderr, "fuzz_decode: cannot make the core image writable\n");
		exit(2);
	}
	devnull = fopen("/dev/null", "w");
	/* Learn the pages a report reads (the scan reads the whole image
	 * directly, not through lc_read). */
	lc_read_hook = learn_read;
	err = lc_report_create(target, &o, &r);
	lc_read_hook = NULL;
	lc_error_destroy(err);
	lc_report_destroy(r);
	if (!npages) {
		fprintf(stderr, "fuzz_decode: the report read no memory of the core\n");
		exit(2);
	}
	fprintf(stderr, "fuzz_decode: %zu pages of %s\n", npages, core);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct { uint8_t *at; uint8_t old[8]; size_t len; } undo[MAX_PATCHES];
	size_t n = 0;

	while (size >= 6 && n < MAX_PATCHES) {
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
			undo[n].at = at;
			undo[n].len = len;
			memcpy(undo[n].old, at, len);
			memcpy(at, data, len);
			n++;
		}
		data += len;
		size -= len;
	}
	run();
	while (n--)
		memcpy(undo[n].at, undo[n].old, undo[n].len);
	return 0;
}
