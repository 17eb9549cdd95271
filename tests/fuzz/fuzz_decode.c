/* libFuzzer harness: the Lua decoder on a real process image, mutated.
 *
 * A fixture core ($LC_FUZZ_CORE, with $LC_FUZZ_EXE) is opened once and
 * its image made writable; a report is taken to learn which pages the
 * decoder reads (image.h).  An input patches those pages; a full report
 * is then taken (locals, data stacks, the scan for idle VMs) and printed
 * as text and JSON, then the heap's census (every input) and its
 * reference paths (one input in eight: a walk from the roots reads every
 * reachable object), and the image restored.  A crash, a sanitizer report
 * or a hang (libFuzzer's -timeout) is a bug.
 *
 * Inputs are mutated by libFuzzer and, half the time, by typed edits of
 * the fields the decoder reads (LLVMFuzzerCustomMutator below).
 *
 * Built by tests/fuzz/build.sh with libFuzzer and ASan/UBSan, or with
 * tests/fuzz/replay.c for replaying a corpus (make check). */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "image.h"
#include "../puc_support.h"

static struct lc_target *target;
static FILE *devnull;

static void report(bool scan, bool print)
{
	struct lc_report_options o = { .locals = true, .stack = true,
				       .no_scan = !scan };
	struct lc_report *r = NULL;
	struct lc_error *err = lc_report_create(target, &o, &r);

	if (!err && print) {
		lc_report_print_text(r, devnull);
		lc_report_print_json(r, devnull);
	}
	lc_error_destroy(err);
	lc_report_destroy(r);
}

/* The heap of the mutated image: a census, with paths when asked. */
static void heap(bool paths)
{
	struct lc_heap_options o = { .paths = paths, .top = 5 };
	struct lc_heap *h = NULL;
	struct lc_error *err = lc_heap_create(target, &o, &h);

	if (!err) {
		lc_heap_print_text(h, devnull);
		lc_heap_print_json(h, devnull);
	}
	lc_error_destroy(err);
	lc_heap_destroy(h);
}

static void learn(void)
{
	report(false, false);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	target = fuzz_image_open("fuzz_decode");
	fuzz_image_learn("fuzz_decode", learn);
	return 0;
}

/* libFuzzer's own mutator; absent (weak) in the replaying build, which
 * never mutates. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size)
	__attribute__((weak));
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);

/* Half the time libFuzzer's own mutations; else a typed edit of a field
 * the decoder read (image.h: a self-loop, another object, a huge count,
 * a flipped status bit...) appended to the input's whole patches, or
 * alone when there is no room. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	uint8_t e[16];
	size_t n, end = 0;

	if ((seed & 1) && LLVMFuzzerMutate)
		return LLVMFuzzerMutate(data, size, max_size);
	n = fuzz_image_typed_edit(e, sizeof(e), seed >> 1);
	if (!n)
		return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, max_size) : size;
	while (end + 5 <= size && end + 5 + data[end + 4] % 8 + 1 <= size)
		end += 5 + data[end + 4] % 8 + 1;
	if (end + n > max_size)
		end = 0;
	memcpy(data + end, e, n);
	return end + n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_image_patch(data, size);
	report(true, true);
	heap(size && (data[size - 1] & 7) == 0);
	fuzz_image_restore();
	return 0;
}
