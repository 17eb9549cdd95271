/* lj-layout ELF: the LuaJIT layout luacore reads from ELF's DWARF
 * (vm/luajit/layout.c), one "name offset size" line per field and
 * enumerator, for tests/run-luajit.sh to hold against gdb's view of the
 * same file.  Exit 0, or 1 with the error. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "prog/program.h"
#include "vm/luajit/layout.h"

/* No memory: the layout reads only debug info. */
static int no_memory(void *arg, uint64_t addr, void *buf, size_t len)
{
	(void)arg;
	(void)addr;
	(void)buf;
	(void)len;
	return -1;
}

int main(int argc, char **argv)
{
	struct lc_program *p;
	struct lc_lj_layout *l = NULL;
	struct lc_error *err;
	char *dump;

	if (argc != 2) {
		fprintf(stderr, "usage: lj-layout ELF\n");
		return 64;
	}
	err = lc_program_create_callback(no_memory, NULL, &p);
	if (!err)
		err = lc_program_add_module(p, argv[1], 0);
	if (!err)
		err = lc_lj_layout_open(p, &l);
	if (err) {
		fprintf(stderr, "lj-layout: %s: %s\n", argv[1],
			lc_error_message(err));
		return 1;
	}
	dump = lc_lj_layout_dump(l);
	if (!dump)
		return 1;
	printf("module %s\ndesc %s\n%s", l->module_path, l->desc, dump);
	free(dump);
	lc_lj_layout_destroy(l);
	lc_program_destroy(p);
	return 0;
}
