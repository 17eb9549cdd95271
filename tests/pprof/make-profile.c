/* Build a synthetic profile through the profile API, write it with
 * lc_profile_write_pprof, and write beside it the truth a reader of the
 * file must find: every sample as it was added (before merging), the
 * functions with the names pprof must show, and what the comments must
 * say.  check-pprof.py compares the two.
 *
 *   make-profile [--wall] [--empty] [--big N] OUT.pb.gz TRUTH.tsv
 *
 * --wall   a wall-clock profile (adds idle samples)
 * --empty  no samples at all
 * --big N  N more distinct samples, enough to cross the writer's
 *          internal chunks many times
 *
 * Exit 0 when both files were written, 1 when writing failed (the errno
 * is printed), 64 on bad usage. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample/profile.h"
#include "sample/sink.h"

enum {
	F_MAIN, F_PCALL, F_EXEC, F_CHUNK, F_OUTER, F_INNER, F_UTF8, F_LONG,
	F_REP, F_SORT, F_GC, F_POLL, F_IDLE, NFIXED
};

struct fn {
	const char *name;
	const char *file;
	int64_t line;
	enum lc_prof_kind kind;
	const char *shown;	/* the name pprof must show (the frame label) */
};

#define TEN "abcdefghij"
#define LONG_NAME TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN

/* Names with multi-byte UTF-8 and quotes, and one longer than 127 bytes,
 * so that lengths take two varint bytes. */
static const struct fn fixed[NFIXED] = {
	[F_MAIN] = { "main", "host.c", 0, LC_PROF_NATIVE, "main" },
	[F_PCALL] = { "lua_pcallk", "ldo.c", 0, LC_PROF_NATIVE, "lua_pcallk" },
	[F_EXEC] = { "luaV_execute", "lvm.c", 0, LC_PROF_NATIVE,
		     "luaV_execute" },
	[F_CHUNK] = { "main chunk", "bench.lua", 0, LC_PROF_LUA,
		      "main chunk (bench.lua:0)" },
	[F_OUTER] = { "outer", "bench.lua", 30, LC_PROF_LUA,
		      "outer (bench.lua:30)" },
	[F_INNER] = { "innermost", "bench.lua", 12, LC_PROF_LUA,
		      "innermost (bench.lua:12)" },
	[F_UTF8] = { "m\xc3\xa9tier \"q\"", "donn\xc3\xa9" "es.lua", 3,
		     LC_PROF_LUA,
		     "m\xc3\xa9tier \"q\" (donn\xc3\xa9" "es.lua:3)" },
	[F_LONG] = { LONG_NAME, "long.lua", 1, LC_PROF_LUA,
		     LONG_NAME " (long.lua:1)" },
	[F_REP] = { "string.rep", NULL, 0, LC_PROF_LUA_C, "string.rep [C]" },
	[F_SORT] = { "table.sort", NULL, 0, LC_PROF_LUA_C, "table.sort [C]" },
	[F_GC] = { "luaC_step", NULL, 0, LC_PROF_GC, "[GC]" },
	[F_POLL] = { "poll", NULL, 0, LC_PROF_NATIVE, "poll" },
	[F_IDLE] = { "idle", NULL, 0, LC_PROF_IDLE, "[idle]" },
};

struct frame {
	int fn;
	int64_t line;
	uint64_t addr;
};

#define MAXF 10

/* Distinct stacks or labels per row; each row is added `reps` times,
 * interleaved with the other rows so that merging cannot rely on equal
 * samples coming in a row. */
struct row {
	struct frame f[MAXF];	/* leaf first, ended by fn == -1 */
	int reps;
	int64_t cpu_ns;		/* of the first add; later ones add k * 7 */
	int tid;
	const char *tname;
	uint64_t vm, co;
	enum lc_prof_kind leaf;	/* LC_PROF_IDLE rows: --wall only */
};

#define HOST { F_EXEC, 0, 0x55d0c0de1234 }, { F_PCALL, 0, 0x55d0c0de0100 }, \
	{ F_MAIN, 0, 0x55d0c0de0042 }
#define END { -1, 0, 0 }
#define VM1 0x55d0c0ffe2a0ull
#define VM2 0x7f3a12345000ull

static const struct row rows[] = {
	{ { { F_INNER, 14, 0 }, { F_OUTER, 33, 0 }, { F_CHUNK, 40, 0 }, HOST,
	    END }, 5, 10000000, 100, "main", VM1, 0x55d0c0ffe2a8, LC_PROF_LUA },
	/* The same stack on another thread, VM and coroutine. */
	{ { { F_INNER, 14, 0 }, { F_OUTER, 33, 0 }, { F_CHUNK, 40, 0 }, HOST,
	    END }, 1, 9000000, 101, "worker 1", VM2, 0x7f3a12345100,
	  LC_PROF_LUA },
	/* ... and on the first thread in another coroutine. */
	{ { { F_INNER, 14, 0 }, { F_OUTER, 33, 0 }, { F_CHUNK, 40, 0 }, HOST,
	    END }, 2, 9500000, 100, "main", VM1, 0x55d0c1000010, LC_PROF_LUA },
	{ { { F_REP, 0, 0 }, { F_INNER, 15, 0 }, { F_OUTER, 33, 0 },
	    { F_CHUNK, 40, 0 }, HOST, END }, 3, 11000000, 100, "main", VM1,
	  0x55d0c0ffe2a8, LC_PROF_LUA_C },
	{ { { F_GC, 0, 0 }, { F_REP, 0, 0 }, { F_INNER, 15, 0 },
	    { F_OUTER, 33, 0 }, { F_CHUNK, 40, 0 }, HOST, END }, 2, 12000000,
	  100, "main", VM1, 0x55d0c0ffe2a8, LC_PROF_GC },
	/* Recursion: inclusive time counts a function once per sample. */
	{ { { F_INNER, 14, 0 }, { F_INNER, 16, 0 }, { F_OUTER, 33, 0 },
	    { F_CHUNK, 40, 0 }, HOST, END }, 2, 8000000, 100, "main", VM1,
	  0x55d0c0ffe2a8, LC_PROF_LUA },
	{ { { F_SORT, 0, 0 }, { F_UTF8, 4, 0 }, { F_CHUNK, 41, 0 }, HOST,
	    END }, 1, 5000000000, 101, "worker 1", VM2, 0x7f3a12345100,
	  LC_PROF_LUA_C },
	{ { { F_LONG, 2, 0 }, { F_CHUNK, 42, 0 }, HOST, END }, 1, 1, 100,
	  "main", VM1, 0x55d0c0ffe2a8, LC_PROF_LUA },
	/* Host code only: no VM, no coroutine, no thread name. */
	{ { { F_POLL, 0, 0x7f3a00001f00 }, { F_MAIN, 0, 0x55d0c0de0042 },
	    END }, 4, 20000, 102, NULL, 0, 0, LC_PROF_NATIVE },
	/* One frame. */
	{ { { F_MAIN, 0, 0x55d0c0de0050 }, END }, 1, 300, 102, NULL, 0, 0,
	  LC_PROF_NATIVE },
	{ { { F_IDLE, 0, 0 }, { F_POLL, 0, 0x7f3a00001f00 },
	    { F_MAIN, 0, 0x55d0c0de0042 }, END }, 6, 0, 103, "idler", 0, 0,
	  LC_PROF_IDLE },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static const char *kind_name(enum lc_prof_kind k)
{
	switch (k) {
	case LC_PROF_NATIVE:
		return "native";
	case LC_PROF_LUA:
		return "lua";
	case LC_PROF_LUA_C:
		return "lua_c";
	case LC_PROF_GC:
		return "gc";
	case LC_PROF_IDLE:
		return "idle";
	}
	return "?";
}

static void die(const char *what)
{
	fprintf(stderr, "make-profile: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Functions are interned on first use, so that only used ones exist;
 * the truth file names them by their profile index. */
static uint32_t intern_fn(struct lc_profile *p, FILE *truth,
			  const struct fn *f)
{
	size_t before = p->nfuncs;
	uint32_t id = lc_profile_func(p, f->name, f->file, f->line, f->kind);

	if (id == UINT32_MAX) {
		errno = ENOMEM;
		die("lc_profile_func");
	}
	if (p->nfuncs > before)
		fprintf(truth, "func\t%" PRIu32 "\t%s\t%s\t%s\t%" PRId64 "\t%s\n",
			id, f->shown, f->name, f->file ? f->file : "",
			f->line, kind_name(f->kind));
	return id;
}

/* One lc_profile_add, and its line in the truth. */
static void add(struct lc_profile *p, FILE *truth, const struct frame *fr,
		const struct fn *const *fns, size_t n, int64_t cpu_ns,
		int tid, const char *tname, uint64_t vm, uint64_t co,
		enum lc_prof_kind leaf)
{
	uint32_t locs[MAXF], fids[MAXF];

	/* Intern first: new functions get their own truth lines. */
	for (size_t i = 0; i < n; i++) {
		fids[i] = intern_fn(p, truth, fns[i]);
		locs[i] = lc_profile_loc(p, fids[i], fr[i].line, fr[i].addr);
		if (locs[i] == UINT32_MAX) {
			errno = ENOMEM;
			die("lc_profile_loc");
		}
	}
	fprintf(truth, "add\t%" PRId64 "\t%d\t%s\t%" PRIu64 "\t%" PRIu64
		"\t%s\t", cpu_ns, tid, tname ? tname : "", vm, co,
		kind_name(leaf));
	for (size_t i = 0; i < n; i++)
		fprintf(truth, "%s%" PRIu32 ":%" PRId64 ":%" PRIu64,
			i ? " " : "", fids[i], fr[i].line, fr[i].addr);
	fputc('\n', truth);
	if (lc_profile_add(p, locs, n, cpu_ns, tid, tname, vm, co, leaf) < 0)
		die("lc_profile_add");
}

static void add_rows(struct lc_profile *p, FILE *truth, bool wall)
{
	int maxreps = 0;

	for (size_t r = 0; r < NROWS; r++)
		if (rows[r].reps > maxreps)
			maxreps = rows[r].reps;
	for (int k = 0; k < maxreps; k++)
		for (size_t r = 0; r < NROWS; r++) {
			const struct row *w = &rows[r];
			const struct fn *fns[MAXF];
			size_t n = 0;

			if (k >= w->reps || (w->leaf == LC_PROF_IDLE && !wall))
				continue;
			for (; n < MAXF && w->f[n].fn >= 0; n++)
				fns[n] = &fixed[w->f[n].fn];
			add(p, truth, w->f, fns, n, w->cpu_ns + k * 7, w->tid,
			    w->tname, w->vm, w->co, w->leaf);
		}
}

/* n generated Lua functions, one distinct sample each. */
static void add_big(struct lc_profile *p, FILE *truth, int n)
{
	for (int i = 0; i < n; i++) {
		char name[32], shown[64];
		struct fn g = { name, "gen.lua", i + 1, LC_PROF_LUA, shown };
		const struct fn *fns[3] = { &g, &fixed[F_CHUNK],
					    &fixed[F_MAIN] };
		struct frame fr[3] = {
			{ -1, i + 2, 0 }, { F_CHUNK, 50, 0 },
			{ F_MAIN, 0, 0x55d0c0de0042 },
		};

		snprintf(name, sizeof(name), "gen_%d", i);
		snprintf(shown, sizeof(shown), "gen_%d (gen.lua:%d)", i, i + 1);
		add(p, truth, fr, fns, 3, 1000 + i, 200 + i % 4, "gen", VM1,
		    0x55d0c0ffe2a8, LC_PROF_LUA);
	}
}

int main(int argc, char **argv)
{
	bool wall = false, empty = false;
	int big = 0, i = 1;
	struct lc_profile *p;
	FILE *out, *truth;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--wall") == 0)
			wall = true;
		else if (strcmp(argv[i], "--empty") == 0)
			empty = true;
		else if (strcmp(argv[i], "--big") == 0 && i + 1 < argc)
			big = atoi(argv[++i]);
		else
			break;
	}
	if (argc - i != 2) {
		fprintf(stderr, "usage: make-profile [--wall] [--empty] "
			"[--big N] OUT.pb.gz TRUTH.tsv\n");
		return 64;
	}
	p = lc_profile_create();
	if (!p) {
		errno = ENOMEM;
		die("lc_profile_create");
	}
	truth = fopen(argv[i + 1], "w");
	if (!truth)
		die(argv[i + 1]);

	p->pid = 4242;
	p->command = strdup("lua5.4 bench.lua --n 3");
	p->start_ns = 1700000000123456789;
	p->duration_ns = 2500000000;
	p->period_ns = 10000000;
	p->wall = wall;
	p->q = (struct lc_prof_quality){
		.ticks = 250, .late_ticks = 3, .attempted = 1234,
		.taken = 1200, .lost_read = 20, .lost_gone = 10,
		.lost_inconsistent = 4, .lost_held = 3, .truncated = 2,
		.idle_skipped = 17,
		.rate_hz = 100, .achieved_hz = 99.2, .stop_total_s = 0.125,
		.stop_median_us = 41.5, .stop_p99_us = 230.5,
		.stop_max_us = 812.5, .stop_budget_us = 1000,
		.sampler_cpu_s = 0.5,
	};
	if (!p->command) {
		errno = ENOMEM;
		die("strdup");
	}

	fprintf(truth, "mode\t%s\n", wall ? "wall" : "cpu");
	fprintf(truth, "period\t%" PRId64 "\n", p->period_ns);
	fprintf(truth, "time_nanos\t%" PRId64 "\n", p->start_ns);
	fprintf(truth, "duration_nanos\t%" PRId64 "\n", p->duration_ns);
	fprintf(truth, "comment\tpid 4242\n");
	fprintf(truth, "comment\t100 Hz requested, 99.2 Hz achieved\n");
	fprintf(truth, "comment\tattempted 1234, taken 1200, lost 37 "
		"(stack read failed 20, thread gone 10, inconsistent 4, "
		"released at the stop budget 3), truncated 2, idle skipped 17\n");
	fprintf(truth, "comment\tlate ticks 3\n");
	fprintf(truth, "comment\ttotal 0.125 s, median 41.5 us, p99 230.5 us, "
		"longest hold 812.5 us (stop budget 1000 us)");
	fprintf(truth, "\ncomment\tsampler CPU 0.500 s\n");
	fprintf(truth, "comment\tcommand: lua5.4 bench.lua --n 3\n");
	if (!empty) {
		add_rows(p, truth, wall);
		add_big(p, truth, big);
	}
	if (fclose(truth) != 0)
		die(argv[i + 1]);

	out = fopen(argv[i], "wb");
	if (!out)
		die(argv[i]);
	if (lc_profile_write_pprof(p, NULL, out) < 0)
		die("lc_profile_write_pprof");
	if (fclose(out) != 0)
		die(argv[i]);
	lc_profile_destroy(p);
	return 0;
}
