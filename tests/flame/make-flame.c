/* Writes a synthetic profile as speedscope JSON and as an SVG flame
 * graph, and the truth to check them against.  The sinks are chosen by
 * the file names' suffixes, as luacore-sample -o chooses them.
 *
 *   make-flame DIR
 *
 * makes DIR/cpu.json, DIR/cpu.svg and DIR/cpu.expect (CPU time), and
 * DIR/wall.json, DIR/wall.svg and DIR/wall.expect (--wall, with idle
 * samples).  The .expect files come from the tables below, not from the
 * writers: one line per thread and per distinct stack, labels in hex so
 * that the odd one (quotes, markup, a control character, a byte that is
 * not UTF-8) survives as bytes:
 *
 *   mode cpu|wall
 *   total WEIGHT
 *   thread TID HEX-NAME
 *   stack TID WEIGHT HEX-LABEL;HEX-LABEL;...   (root first)
 *
 * The labels are written out by hand, as lc_profile_label documents
 * them, so a change of label format shows up here too. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample/profile.h"
#include "sample/sink.h"

struct func {
	const char *name;
	const char *file;
	int64_t line;
	enum lc_prof_kind kind;
	const char *label;	/* what lc_profile_label must make of it */
};

enum {
	F_MAIN, F_VM, F_RUN, F_HOT_A, F_HOT_B, F_REP, F_MEMCPY_LIBC,
	F_MEMCPY_LD, F_GC, F_TINY, F_ODD, F_IDLE, NFUNCS
};

static const struct func funcs[NFUNCS] = {
	[F_MAIN] = { "main", "host.c", 0, LC_PROF_NATIVE, "main" },
	[F_VM] = { "luaV_execute", "lvm.c", 0, LC_PROF_NATIVE,
		   "luaV_execute" },
	[F_RUN] = { "run", "bench.lua", 1, LC_PROF_LUA, "run (bench.lua:1)" },
	[F_HOT_A] = { "hot_a", "bench.lua", 10, LC_PROF_LUA,
		      "hot_a (bench.lua:10)" },
	[F_HOT_B] = { "hot_b", "bench.lua", 20, LC_PROF_LUA,
		      "hot_b (bench.lua:20)" },
	[F_REP] = { "string.rep", NULL, 0, LC_PROF_LUA_C, "string.rep [C]" },
	/* Two functions, one label: the flame graph merges them. */
	[F_MEMCPY_LIBC] = { "memcpy", "libc.so.6", 0, LC_PROF_NATIVE,
			    "memcpy" },
	[F_MEMCPY_LD] = { "memcpy", "ld-linux-x86-64.so.2", 0,
			  LC_PROF_NATIVE, "memcpy" },
	[F_GC] = { "GC", NULL, 0, LC_PROF_GC, "[GC]" },
	/* 5 us of 10,000: under 0.1%, not drawn in the SVG. */
	[F_TINY] = { "tiny", "bench.lua", 40, LC_PROF_LUA,
		     "tiny (bench.lua:40)" },
	[F_ODD] = { "odd<&\"'>\x01\xff]]>", "we\"ird.lua", 30, LC_PROF_LUA,
		    "odd<&\"'>\\x01\\xff]]> (we\"ird.lua:30)" },
	[F_IDLE] = { "idle", NULL, 0, LC_PROF_IDLE, "[idle]" },
};

#define END	(-1)

struct stack {
	int tid;
	const char *thread;
	int n;			/* samples */
	int64_t us;		/* CPU time of each */
	bool wall_only;
	int frames[8];		/* root first, END-terminated */
};

/* 10,000 us in all; run's subtree 9,005 us; anything under "hot_"
 * 7,000 us, hot_a nested in hot_b included once. */
static const struct stack stacks[] = {
	{ 101, "main", 3, 1000, false,
	  { F_MAIN, F_VM, F_RUN, F_HOT_A, END } },
	{ 101, "main", 2, 1000, false,
	  { F_MAIN, F_VM, F_RUN, F_HOT_B, END } },
	{ 101, "main", 1, 1500, false,
	  { F_MAIN, F_VM, F_RUN, F_HOT_B, F_HOT_A, END } },
	{ 101, "main", 1, 600, false, { F_MAIN, F_VM, F_RUN, F_REP, END } },
	{ 101, "main", 1, 400, false,
	  { F_MAIN, F_VM, F_RUN, F_REP, F_MEMCPY_LIBC, END } },
	{ 101, "main", 1, 200, false,
	  { F_MAIN, F_VM, F_RUN, F_REP, F_MEMCPY_LD, END } },
	{ 101, "main", 1, 800, false, { F_MAIN, F_VM, F_RUN, F_GC, END } },
	{ 101, "main", 1, 295, false, { F_MAIN, END } },
	{ 101, "main", 1, 5, false, { F_MAIN, F_VM, F_RUN, F_TINY, END } },
	{ 102, "w\xc3\xb6rker", 1, 700, false, { F_MAIN, F_VM, F_ODD, END } },
	{ 102, "w\xc3\xb6rker", 1, 500, false,
	  { F_MAIN, F_VM, F_RUN, F_HOT_A, END } },
	{ 103, "sleeper", 6, 500, true, { F_MAIN, F_IDLE, END } },
};

#define NSTACKS	(sizeof(stacks) / sizeof(stacks[0]))

static void hex(FILE *out, const char *s)
{
	for (; *s; s++)
		fprintf(out, "%02x", (unsigned char)*s);
}

static int64_t weight(const struct stack *st, bool wall)
{
	(void)wall;
	return st->n * st->us;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "make-flame: %s %s: %s\n", what, path ? path : "",
		strerror(errno));
	exit(1);
}

static struct lc_profile *build(bool wall)
{
	struct lc_profile *p = lc_profile_create();
	uint32_t fid[NFUNCS], loc[NFUNCS];

	if (!p)
		die("lc_profile_create", NULL);
	p->wall = wall;
	p->pid = 4242;
	p->command = strdup("lua bench.lua");
	p->start_ns = 1714564800ll * 1000000000;	/* 2024-05-01 12:00 */
	p->duration_ns = 10ll * 1000000000;
	p->period_ns = 10000000;
	p->q.ticks = 995;
	p->q.attempted = 1010;
	p->q.taken = 1000;
	p->q.lost_read = 6;
	p->q.lost_gone = 3;
	p->q.lost_inconsistent = 1;
	p->q.truncated = 2;
	p->q.rate_hz = 100;
	p->q.achieved_hz = 99.5;
	p->q.stop_median_us = 12.5;
	p->q.stop_p99_us = 40;
	for (int i = 0; i < NFUNCS; i++) {
		fid[i] = lc_profile_func(p, funcs[i].name, funcs[i].file,
					 funcs[i].line, funcs[i].kind);
		/* A Lua frame's line varies; the label must not. */
		loc[i] = lc_profile_loc(p, fid[i], funcs[i].line + 2,
					funcs[i].kind == LC_PROF_NATIVE ?
					0x401000u + 16u * (unsigned)i : 0);
		if (fid[i] == UINT32_MAX || loc[i] == UINT32_MAX)
			die("lc_profile_func", NULL);
	}
	for (size_t k = 0; k < NSTACKS; k++) {
		const struct stack *st = &stacks[k];
		uint32_t locs[8];
		size_t n = 0;

		if (st->wall_only && !wall)
			continue;
		while (st->frames[n] != END)
			n++;
		/* The profile's stacks are leaf first. */
		for (size_t i = 0; i < n; i++)
			locs[i] = loc[st->frames[n - 1 - i]];
		for (int i = 0; i < st->n; i++)
			if (lc_profile_add(p, locs, n, st->us * 1000, st->tid,
					   st->thread, 0x5000, 0x6000,
					   funcs[st->frames[n - 1]].kind) < 0)
				die("lc_profile_add", NULL);
	}
	return p;
}

static void expect(const char *dir, const char *mode, bool wall)
{
	char path[4096];
	int64_t total = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.expect", dir, mode);
	f = fopen(path, "w");
	if (!f)
		die("cannot write", path);
	for (size_t k = 0; k < NSTACKS; k++)
		if (!stacks[k].wall_only || wall)
			total += weight(&stacks[k], wall);
	fprintf(f, "mode %s\ntotal %" PRId64 "\n", mode, total);
	for (size_t k = 0; k < NSTACKS; k++) {
		const struct stack *st = &stacks[k];

		if (st->wall_only && !wall)
			continue;
		if (k == 0 || st->tid != stacks[k - 1].tid) {
			fprintf(f, "thread %d ", st->tid);
			hex(f, st->thread);
			putc('\n', f);
		}
		fprintf(f, "stack %d %" PRId64 " ", st->tid, weight(st, wall));
		for (size_t i = 0; st->frames[i] != END; i++) {
			if (i)
				putc(';', f);
			hex(f, funcs[st->frames[i]].label);
		}
		putc('\n', f);
	}
	if (fclose(f) != 0)
		die("cannot write", path);
}

static void write_one(const char *dir, const char *mode, const char *ext,
		      struct lc_profile *p)
{
	char path[4096];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s.%s", dir, mode, ext);
	f = fopen(path, "w");
	if (!f)
		die("cannot write", path);
	/* The title is the SVG's; speedscope has no place for it. */
	rc = lc_sink_for(path, NULL)->write(p, p->wall ?
					    "bench.lua, wall clock" :
					    "bench.lua <CPU> & \"friends\"", f);
	if (rc < 0)
		die("writing", path);
	if (fclose(f) != 0)
		die("cannot write", path);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make-flame DIR\n");
		return 64;
	}
	for (int wall = 0; wall <= 1; wall++) {
		const char *mode = wall ? "wall" : "cpu";
		struct lc_profile *p = build(wall);

		write_one(argv[1], mode, "json", p);
		write_one(argv[1], mode, "svg", p);
		expect(argv[1], mode, wall);
		lc_profile_destroy(p);
	}
	return 0;
}
