/* lj-frames CORE EXE: the Lua frames of a core of LuaJIT's stand-alone
 * interpreter (built with -g: its static globalL names the main
 * thread), read by vm/luajit/frames.c from g->cur_L, the thread that was
 * running, from its L->base: one line per frame, innermost first,
 *   lua SOURCE:LINE | c SYMBOL | ff ID SYMBOL
 * after "vmstate N" and "thread 0x...".  For tests/run-luajit.sh, until
 * the LuaJIT family reads cores itself.  Exit 0; 1 with what failed. */
#include <config.h>

#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prog/program.h"
#include "vm/luajit/frames.h"
#include "vm/luajit/layout.h"

struct sym {
	const char *name;
	uint64_t addr;
};

static int sym_cb(Dwfl_Module *mod, void **ud, const char *mname,
		  Dwarf_Addr start, void *arg)
{
	struct sym *s = arg;
	int n = dwfl_module_getsymtab(mod);

	(void)ud;
	(void)mname;
	(void)start;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr,
							   NULL, NULL, NULL);

		if (name && strcmp(name, s->name) == 0 &&
		    GELF_ST_TYPE(sym.st_info) == STT_OBJECT) {
			s->addr = addr;
			return DWARF_CB_ABORT;
		}
	}
	return DWARF_CB_OK;
}

static int fail(const char *what)
{
	fprintf(stderr, "lj-frames: %s\n", what);
	return 1;
}

int main(int argc, char **argv)
{
	struct lc_program *p;
	struct lc_lj_layout *l;
	struct lc_lj_walk w;
	struct lc_error *err;
	struct sym s = { .name = "globalL" };
	uint64_t L, G, cur, base, vmstate;

	if (argc != 3) {
		fprintf(stderr, "usage: lj-frames CORE EXE\n");
		return 64;
	}
	err = lc_program_open_core(argv[1], argv[2], &p);
	if (!err)
		err = lc_lj_layout_open(p, &l);
	if (err)
		return fail(lc_error_message(err));
	dwfl_getmodules(p->dwfl, sym_cb, &s, 0);
	if (!s.addr)
		return fail("no symbol globalL (not LuaJIT's interpreter?)");
	if (lc_read_u64(p->mem, s.addr, &L) < 0 || !L ||
	    lc_read_uint(p->mem, L + l->L.glref.off, l->L.glref.size, &G) < 0 ||
	    lc_read_uint(p->mem, G + l->G.cur_L.off, l->G.cur_L.size, &cur) < 0 ||
	    lc_read_uint(p->mem, G + l->G.vmstate.off, 4, &vmstate) < 0 ||
	    lc_read_uint(p->mem, cur + l->L.base.off, 8, &base) < 0)
		return fail("globalL, its global_State, cur_L or its base unreadable");
	printf("vmstate %" PRId32 "\nthread 0x%" PRIx64 "\n",
	       (int32_t)vmstate, cur);
	err = lc_lj_walk(p->mem, l, cur, base, 200, &w);
	if (err)
		return fail(lc_error_message(err));
	for (size_t i = 0; i < w.n; i++) {
		const struct lc_lj_frame *f = &w.v[i];
		char src[256];

		if (f->ffid == 0) {
			if (!lc_lj_chunkname(p->mem, l, f->proto, src, sizeof(src)))
				strcpy(src, "?");
			printf("lua %s:%" PRId64 "%s\n", src, f->line,
			       f->in_trace ? " (in a trace)" : "");
		} else {
			const char *name = lc_program_symbol(p, f->cfunc);

			if (f->ffid == 1)
				printf("c %s\n", name ? name : "?");
			else
				printf("ff %u %s\n", f->ffid, name ? name : "?");
		}
	}
	if (w.partial)
		printf("partial: %s\n", w.why);
	lc_lj_walk_free(&w);
	lc_lj_layout_destroy(l);
	lc_program_destroy(p);
	return w.partial ? 1 : 0;
}
