/* The heap of a LuaJIT VM (objects.c): the family's heap_walk,
 * heap_refs, heap_class and heap_string (vm/vm.h).  Strings
 * returned are malloc'd and the caller's. */
#ifndef LC_LJ_OBJECTS_H
#define LC_LJ_OBJECTS_H

#include "vm/vm.h"
#include "vm/luajit/layout.h"

/* Every object of the VM at g, at most max (then ret->partial). */
struct lc_error *lc_lj_heap_walk(struct lc_program *p,
				 const struct lc_lj_layout *l, uint64_t g,
				 size_t max, unsigned flags, lc_hobj_fn *fn,
				 void *arg, struct lc_hvm *ret);
/* The references out of o, or of the roots (o NULL). */
int lc_lj_heap_refs(struct lc_program *p, const struct lc_lj_layout *l,
		    uint64_t g, const struct lc_hobj *o, lc_href_fn *fn,
		    void *arg);
char *lc_lj_heap_class(struct lc_program *p, const struct lc_lj_layout *l,
		       uint64_t g, enum lc_hkind kind, uint64_t klass);
char *lc_lj_heap_string(struct lc_program *p, const struct lc_lj_layout *l,
			const struct lc_hobj *o, size_t max, size_t *len);

#endif /* LC_LJ_OBJECTS_H */
