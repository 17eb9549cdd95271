/* What decoding one sample costs: a thread of a core decoded again and
 * again, the way luacore-sample decodes a stopped thread.
 *
 *   decode report CORE EXE TID N   one report per sample through the
 *                                  public API (lc_report_create with the
 *                                  thread's id, no scan, no VM list, 256
 *                                  frames): what the sampler did before
 *                                  it kept one session; builds against
 *                                  any libluacore
 *   decode stack CORE EXE TID N    one pass and lc_stack_decode per
 *                                  sample on one session: what it does
 *                                  now (libluacore_impl, internal API)
 *
 * Prints the CPU time per sample in microseconds (CLOCK_PROCESS_CPUTIME_ID,
 * after one sample to warm the caches) and the frames decoded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "luacore.h"
#ifdef LC_BENCH_STACK
#include "report/stack.h"
#endif

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t by_report(struct lc_target *t, int tid)
{
	struct lc_report_options o = {
		.max_frames = 256, .tid = tid, .no_scan = true, .no_vms = true,
	};
	struct lc_report *r = NULL;
	struct lc_error *err = lc_report_create(t, &o, &r);
	size_t n = 0;

	if (err) {
		fprintf(stderr, "decode: %s\n", lc_error_message(err));
		exit(2);
	}
	n = r->nthreads ? r->threads[0].nframes : 0;
	lc_report_destroy(r);
	return n;
}

#ifdef LC_BENCH_STACK
static size_t by_stack(struct lc_target *t, int tid)
{
	struct lc_interp *in = lc_target_interp(t, NULL);
	struct lc_stack_options o = { .max_frames = 256 };
	struct lc_pass *pass = NULL;
	struct lc_stack st;
	size_t n;

	if (in && in->ops->begin(in, &pass))
		exit(2);
	lc_stack_decode(t, pass, tid, &o, &st);
	n = st.nframes;
	lc_stack_deinit(&st);
	if (pass)
		in->ops->end(pass);
	return n;
}
#endif

int main(int argc, char **argv)
{
	size_t (*fn)(struct lc_target *, int) = NULL;
	struct lc_target *t;
	struct lc_error *err;
	size_t frames;
	long n;
	int tid;
	double t0;

	if (argc != 6) {
		fprintf(stderr, "usage: decode report|stack CORE EXE TID N\n");
		return 64;
	}
	if (strcmp(argv[1], "report") == 0)
		fn = by_report;
#ifdef LC_BENCH_STACK
	else if (strcmp(argv[1], "stack") == 0)
		fn = by_stack;
#endif
	if (!fn) {
		fprintf(stderr, "decode: no mode '%s' in this build\n", argv[1]);
		return 64;
	}
	tid = atoi(argv[4]);
	n = atol(argv[5]);
	if ((err = lc_target_open_core(argv[2], argv[3], &t))) {
		fprintf(stderr, "decode: %s\n", lc_error_message(err));
		return 2;
	}
	frames = fn(t, tid);
	t0 = cpu_s();
	for (long i = 0; i < n; i++)
		fn(t, tid);
	printf("%.2f us per sample, %zu frames\n", (cpu_s() - t0) / (double)n * 1e6,
	       frames);
	lc_target_destroy(t);
	return 0;
}
