/* The heap of a PUC Lua VM (objects.c): the family's heap_walk,
 * heap_refs, heap_class and heap_string (vm/vm.h).
 *
 * cache: the pass's slot for what these keep between calls (weak modes
 * of metatables, the registry's named metatables); freed with
 * lc_puc_heap_cache_free at the end of the pass.  Strings returned are
 * malloc'd and the caller's. */
#ifndef LC_PUC_OBJECTS_H
#define LC_PUC_OBJECTS_H

#include "vm/vm.h"
#include "vm/puc/puc.h"

/* Every object of the VM at g, at most max (then ret->partial). */
struct lc_error *lc_puc_heap_walk(struct lc_lua_ctx *ctx, uint64_t g,
				  size_t max, unsigned flags, lc_hobj_fn *fn,
				  void *arg, struct lc_hvm *ret);
int lc_puc_heap_refs(struct lc_lua_ctx *ctx, void **cache, uint64_t g,
		     const struct lc_hobj *o, lc_href_fn *fn, void *arg);
char *lc_puc_heap_class(struct lc_lua_ctx *ctx, void **cache, uint64_t g,
			enum lc_hkind kind, uint64_t klass);
char *lc_puc_heap_string(struct lc_lua_ctx *ctx, const struct lc_hobj *o,
			 size_t max, size_t *len);
void lc_puc_heap_cache_free(void *cache);

#endif /* LC_PUC_OBJECTS_H */
