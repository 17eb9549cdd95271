/* lj-frames CORE EXE: the Lua frames of a core of a program running
 * LuaJIT (built with -g), read by vm/luajit: each VM the memory scan
 * finds ("vm 0x... vmstate N threads N"), then from its g->cur_L, the
 * thread that was running, the chain of threads that resumed it, each
 * one's frames from its L->base ("thread 0x..."), innermost first:
 *   lua SOURCE:LINE | c SYMBOL | ff ID SYMBOL
 * then a tab, the name its caller's bytecode gives, a tab, what it is
 * (both empty when none)
 * For tests/run-luajit.sh, until the LuaJIT family reads cores itself.
 * Exit 0; 1 with what failed or was partial. */
#include <config.h>

#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog/program.h"
#include "vm/luajit/frames.h"
#include "vm/luajit/layout.h"
#include "vm/luajit/lj.h"
#include "vm/luajit/threads.h"

static int fail(const char *what)
{
	fprintf(stderr, "lj-frames: %s\n", what);
	return 1;
}

static bool print_thread(struct lc_program *p, const struct lc_lj_layout *l,
			 uint64_t g, uint64_t L)
{
	struct lc_lj_walk w;
	uint64_t base;
	bool ok;

	printf("thread 0x%" PRIx64 "\n", L);
	if (lc_read_uint(p->mem, L + l->L.base.off, 8, &base) < 0 ||
	    lc_lj_walk(p->mem, l, L, base, 0, 200, &w)) {
		printf("partial: base unreadable\n");
		return false;
	}
	for (size_t i = 0; i < w.n; i++) {
		const struct lc_lj_frame *f = &w.v[i];
		char src[256], name[256];
		const char *what = lc_lj_frame_name(p->mem, l, g, &w, i, name,
						    sizeof(name), NULL);

		if (f->ffid == 0) {
			if (!lc_lj_chunkname(p->mem, l, f->proto, src, sizeof(src)))
				strcpy(src, "?");
			printf("lua %s:%" PRId64 "%s", src, f->line,
			       f->in_trace ? " (in a trace)" : "");
		} else {
			const char *sym = lc_program_symbol(p, f->cfunc);

			if (f->ffid == 1)
				printf("c %s", sym ? sym : "?");
			else
				printf("ff %u %s", f->ffid, sym ? sym : "?");
		}
		printf("\t%s\t%s\n", what ? name : "", what ? what : "");
	}
	if (w.partial)
		printf("partial: %s\n", w.why);
	ok = !w.partial;
	lc_lj_walk_free(&w);
	return ok;
}

int main(int argc, char **argv)
{
	struct lc_program *p;
	struct lc_lj_layout *l;
	struct lc_error *err;
	uint64_t *gs;
	size_t ngs;
	bool ok = true;

	if (argc != 3) {
		fprintf(stderr, "usage: lj-frames CORE EXE\n");
		return 64;
	}
	err = lc_program_open_core(argv[1], argv[2], &p);
	if (!err)
		err = lc_lj_layout_open(p, &l);
	if (!err)
		err = lc_lj_find_vms(p->mem, l, &gs, &ngs);
	if (err)
		return fail(lc_error_message(err));
	if (!ngs)
		return fail("the scan found no LuaJIT VM");
	for (size_t v = 0; v < ngs; v++) {
		uint64_t g = gs[v], cur, vmstate, *th;
		size_t nth, depth = 0;
		bool partial;

		if (lc_read_uint(p->mem, g + l->G.cur_L.off, 8, &cur) < 0 ||
		    lc_read_uint(p->mem, g + l->G.vmstate.off, 4, &vmstate) < 0 ||
		    lc_lj_threads(p->mem, l, g, 100000, &th, &nth, &partial))
			return fail("a VM's cur_L, vmstate or threads unreadable");
		printf("vm 0x%" PRIx64 " vmstate %" PRId32 " threads %zu%s\n",
		       g, (int32_t)vmstate, nth, partial ? " (partial)" : "");
		cur &= LC_LJ_GCVMASK;
		/* The running thread, then the one that resumed it, and so
		 * on: the thread whose innermost frame resumes the last. */
		while (cur && depth++ < nth + 1) {
			uint64_t next = 0;

			ok &= print_thread(p, l, g, cur);
			for (size_t i = 0; i < nth && !next; i++)
				if (lc_lj_resumed(p->mem, l, th[i]) == cur)
					next = th[i];
			cur = next;
		}
		free(th);
	}
	free(gs);
	lc_lj_layout_destroy(l);
	lc_program_destroy(p);
	return ok ? 0 : 1;
}
