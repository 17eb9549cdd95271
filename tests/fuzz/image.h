/* A fixture core's file image made writable, and fuzzer inputs applied
 * to it as patches to the pages the decoder reads.  Shared by the
 * harnesses that mutate a process image (fuzz_decode, fuzz_sample); the
 * image and the target belong to this module for the process's life.
 *
 * An input is a list of patches:
 *
 *	u16 page index (modulo the number of pages learned), u16 offset
 *	(modulo the page size), u8 length (1-8), then that many bytes
 *
 * Memory the unwinder reads (machine stacks) is patched too: libdwfl
 * reads the same image. */
#ifndef LC_FUZZ_IMAGE_H
#define LC_FUZZ_IMAGE_H

#include <stddef.h>
#include <stdint.h>

struct lc_target;

/* Open $LC_FUZZ_CORE (with $LC_FUZZ_EXE) and make its image writable.
 * Exits with status 2 on error, naming the harness who. */
struct lc_target *fuzz_image_open(const char *who);

/* Run learn() once on the unpatched image: the pages it reads through
 * lc_read are those inputs patch.  Exits with status 2 if it read
 * none. */
void fuzz_image_learn(const char *who, void (*learn)(void));

/* Apply an input's patches; fuzz_image_restore undoes them. */
void fuzz_image_patch(const uint8_t *data, size_t size);
void fuzz_image_restore(void);

/* For tools that make inputs (tests/fuzz/mutants.c): the index of the
 * learned page holding target address addr (an input's page index), or
 * -1; where addr's len bytes lie in the writable image, or NULL; their
 * offset in the core file, or -1. */
long fuzz_image_page_index(uint64_t addr);
uint8_t *fuzz_image_at(uint64_t addr, size_t len);
long long fuzz_image_file_offset(uint64_t addr, size_t len);

/* A patch (an input's unit, at most 13 bytes, written to out) that gives
 * a field the decoder read while learning a typed value chosen by seed:
 * 0, -1, 0x7fffffff, 0x80000000, 0xffffffff, 2^40, a small int, a
 * flipped bit, its own address (a self-loop), another object's address,
 * misaligned, one less, -125, unmapped.  Its length; 0 if out has no
 * room. */
size_t fuzz_image_typed_edit(uint8_t *out, size_t max, uint64_t seed);

#endif /* LC_FUZZ_IMAGE_H */
