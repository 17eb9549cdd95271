/* libFuzzer harness: the core file reader on a real core, mutated.
 *
 * The core $LC_FUZZ_CORE (with $LC_FUZZ_EXE) is loaded once into a
 * memory file.  An input is XORed onto the start of it, up to the end of
 * its notes: the ELF header, program headers and notes (registers,
 * signal, file mappings, auxv), where a bad core is bad.  Zero bytes
 * leave the core as it was, so mutations start from a real one.  The
 * file is opened as a core, reported on in full and printed, and
 * restored.
 *
 * Built by tests/fuzz/build.sh with libFuzzer and ASan/UBSan, or with
 * tests/fuzz/replay.c for replaying a corpus (make check). */
#define _GNU_SOURCE
#include <config.h>

#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "luacore.h"

static int fd = -1;
static char path[64];
static const char *exe;
static uint8_t *base;
static size_t base_size, head;
static uint8_t *work;			/* head bytes as written */
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *core = getenv("LC_FUZZ_CORE");
	const Elf64_Ehdr *eh;
	FILE *f;
	long n;

	(void)argc;
	(void)argv;
	exe = getenv("LC_FUZZ_EXE");
	if (!core || !(f = fopen(core, "rb")) || fseek(f, 0, SEEK_END) ||
	    (n = ftell(f)) < (long)sizeof(Elf64_Ehdr) || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "fuzz_core: set LC_FUZZ_CORE to a core file\n");
		exit(2);
	}
	base_size = (size_t)n;
	base = malloc(base_size);
	if (!base || fread(base, 1, base_size, f) != base_size)
		exit(2);
	fclose(f);
	/* The head: up to the end of the notes (the kernel writes them
	 * first), at least the program headers. */
	eh = (const Elf64_Ehdr *)base;
	head = sizeof(*eh);
	if (eh->e_phoff < base_size &&
	    (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) <= base_size - eh->e_phoff) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);

		head = eh->e_phoff + eh->e_phnum * sizeof(Elf64_Phdr);
		for (int i = 0; i < eh->e_phnum; i++)
			if (ph[i].p_type == PT_NOTE &&
			    ph[i].p_offset + ph[i].p_filesz <= base_size &&
			    ph[i].p_offset + ph[i].p_filesz > head)
				head = ph[i].p_offset + ph[i].p_filesz;
	}
	work = malloc(head);
	if (!work)
		exit(2);
	fd = memfd_create("fuzz-core", 0);
	if (fd < 0 || pwrite(fd, base, base_size, 0) != (ssize_t)base_size)
		exit(2);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	devnull = fopen("/dev/null", "w");
	fprintf(stderr, "fuzz_core: the first %zu bytes of %s\n", head, core);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lc_report_options o = { .locals = true };
	struct lc_target *t = NULL;
	struct lc_report *r = NULL;
	struct lc_error *err;

	if (size > head)
		size = head;
	for (size_t i = 0; i < size; i++)
		work[i] = base[i] ^ data[i];
	if (pwrite(fd, work, size, 0) != (ssize_t)size)
		abort();
	err = lc_target_open_core(path, exe, &t);
	if (!err)
		err = lc_report_create(t, &o, &r);
	if (r) {
		lc_report_print_text(r, devnull);
		lc_report_print_json(r, devnull);
	}
	lc_error_destroy(err);
	lc_report_destroy(r);
	lc_target_destroy(t);
	if (pwrite(fd, base, size, 0) != (ssize_t)size)
		abort();
	return 0;
}
