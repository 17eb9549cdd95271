/* LuaJIT VMs and their threads, from the target's memory.
 *
 * A VM is a GG_State: its main lua_State and its global_State side by
 * side.  The scan takes a lua_State whose header says thread, whose
 * glref points GG_OFS(g) - GG_OFS(L) bytes after it, and whose
 * global_State names it as its main thread back: a round trip that a
 * stray word does not make.  A VM's threads are the thread objects on
 * its list of all GC objects (g->gc.root, linked by nextgc; strings are
 * not on it).  Every read is checked, every walk bounded, a cycle
 * detected.  Arrays returned are malloc'd and the caller's. */
#ifndef LC_LJ_THREADS_H
#define LC_LJ_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem/memory.h"
#include "vm/luajit/layout.h"

/* The global_States of every VM in m's writable memory, sorted. */
struct lc_error *lc_lj_find_vms(struct lc_memory *m,
				const struct lc_lj_layout *l, uint64_t **ret,
				size_t *n);

/* Is addr a thread of VM g (its header, and its glref)? */
bool lc_lj_is_thread(struct lc_memory *m, const struct lc_lj_layout *l,
		     uint64_t addr, uint64_t g);

/* The threads of VM g: its main thread first, then those on its GC
 * list, at most max.  *partial when the list could not be read to its
 * end (a bad pointer, a cycle, more objects than the walk allows). */
struct lc_error *lc_lj_threads(struct lc_memory *m,
			       const struct lc_lj_layout *l, uint64_t g,
			       size_t max, uint64_t **ret, size_t *n,
			       bool *partial);

/* The thread that thread L resumed, or 0: L's innermost frame is a C or
 * fast function (coroutine.resume, a coroutine.wrap function) whose
 * first argument, or else first upvalue, is a thread of the same VM
 * with frames. */
uint64_t lc_lj_resumed(struct lc_memory *m, const struct lc_lj_layout *l,
		       uint64_t L);

#endif /* LC_LJ_THREADS_H */
