/* libFuzzer harness: the sampler's decoding and profile writers on a
 * real process image, mutated.
 *
 * As fuzz_decode (image.h), but each input is decoded the way
 * luacore-sample decodes a stopped thread: a pass per thread, its
 * stack (report/stack.h), at most 256 frames.  Each thread's stack becomes a
 * profile sample (lc_profile_stack_of, as the sampler's), and the
 * profile is written by every sink of the table (folded, pprof, SVG,
 * speedscope) and weighed as luacore-sample --top does.  Names and
 * sources read from the mutated image reach every writer's escaping.  A
 * crash, a sanitizer report or a hang (libFuzzer's -timeout) is a bug.
 *
 * Built by tests/fuzz/build.sh with libFuzzer and ASan/UBSan, or with
 * tests/fuzz/replay.c for replaying a corpus (make check). */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "image.h"
#include "report/stack.h"
#include "sample/profile.h"
#include "sample/sink.h"

static struct lc_target *target;
static FILE *devnull;

/* Each thread's sample into p (NULL: decode only), decoded as the
 * sampler decodes a stopped thread: a pass of its own, the stack unit. */
static void sample_threads(struct lc_profile *p)
{
	struct lc_program *prog = target->prog;
	struct lc_interp *in = lc_target_interp(target, NULL);
	size_t nthreads = prog->nthreads;

	for (size_t i = 0; i < nthreads; i++) {
		struct lc_stack_options o = { .max_frames = 256 };
		const struct lc_program_thread *pt = &prog->threads[i];
		const char *name = pt->name ? pt->name :
				   pt->tid == prog->pid && prog->fname[0] ?
				   prog->fname : NULL;
		struct lc_pass *pass = NULL;
		struct lc_stack st;

		if (in && in->ops->begin(in, &pass))
			continue;
		lc_stack_decode(target, pass, pt->tid, &o, &st);
		if (p) {
			uint32_t *locs = calloc(st.nframes + 1, sizeof(*locs));
			enum lc_prof_kind leaf;

			if (locs) {
				size_t n = lc_profile_stack_of(p, &st, in,
							       i % 2 == 0, locs,
							       &leaf);

				lc_profile_add(p, locs, n, 1000 * (int64_t)(i + 1),
					       pt->tid, name, st.vm,
					       st.nstates ? st.states[0] : 0,
					       leaf);
				free(locs);
			}
		}
		lc_stack_deinit(&st);
		if (pass)
			in->ops->end(pass);
	}
}

static void learn(void)
{
	sample_threads(NULL);
}

static void write_all(struct lc_profile *p)
{
	int64_t *self = calloc(p->nfuncs + 1, sizeof(*self));
	int64_t *total = calloc(p->nfuncs + 1, sizeof(*total));
	char label[512];

	for (size_t i = 0; lc_sinks[i]; i++)
		lc_sinks[i]->write(p, "fuzz_sample", devnull);
	if (self && total) {
		int64_t host;

		lc_profile_func_weights(p, true, self, total, NULL);
		lc_profile_func_weights(p, true, self, total, &host);
		lc_profile_func_weights(p, false, self, total, NULL);
	}
	for (uint32_t f = 0; f < p->nfuncs; f++)
		lc_profile_label(p, f, label, sizeof(label));
	free(self);
	free(total);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	target = fuzz_image_open("fuzz_sample");
	fuzz_image_learn("fuzz_sample", learn);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lc_profile *p = lc_profile_create();

	fuzz_image_patch(data, size);
	if (p) {
		p->pid = 4242;
		p->period_ns = 10000000;
		p->duration_ns = 1000000000;
		sample_threads(p);
		write_all(p);
		lc_profile_destroy(p);
	}
	fuzz_image_restore();
	return 0;
}
