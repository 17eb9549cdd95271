/* The heap layer: census, reference paths and diffs of the Lua heaps of
 * a target, on the VM seam's heap_walk/heap_refs (vm/vm.h).  Nothing
 * here knows a VM family's structs; nothing here prints but format.c
 * and pprof.c, to the FILE they are given.
 *
 * Ownership: struct lc_heap (luacore.h) owns its VMs, each VM its
 * arrays and strings; lc_heap_destroy frees them all.  The object index
 * (objs) is kept only when paths, a diff, a snapshot or a pprof profile
 * need it: a census alone is counted as the walk goes. */
#ifndef LC_HEAP_H
#define LC_HEAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "luacore.h"
#include "vm/vm.h"

/* Entries kept per top list at most (lc_heap_options.top is capped). */
#define LC_HEAP_TOP_MAX		1000
/* Steps of a path, at most. */
#define LC_HEAP_PATH_MAX	256
/* Bytes of a string shown. */
#define LC_HEAP_PREVIEW		60

struct lc_hclass {
	uint8_t kind;
	uint64_t klass;
	char *name;		/* NULL: none (a table without metatable) */
	uint64_t count, bytes;
	uint64_t a_count, a_bytes;	/* diff: in the baseline */
	uint64_t new_count, new_bytes;	/* diff: not in the baseline */
};

struct lc_htop {
	uint64_t addr, bytes, len;
	uint32_t hsize;
	uint8_t kind;
	uint64_t klass;
	char *name;		/* class name */
	char *preview;		/* strings: the first bytes, escaped */
	char *path;		/* with paths: its shortest path, or NULL */
	bool weak;		/* that path passes a weak reference */
	uint64_t retained;	/* with paths: bytes it keeps alive at least
				   (lc_hvmres.retained), 0: not known */
};

struct lc_hdup {
	uint64_t hash, len, copies, bytes;
	uint64_t example;
	char *preview;
};

/* A group of new objects in a diff: one class, one path pattern. */
struct lc_hgroup {
	uint8_t kind;
	char *name;
	char *pattern;		/* the path with indices folded, or NULL:
				   unreachable */
	char *example;		/* one object's full path */
	uint64_t example_addr;
	uint64_t count, bytes;
};

struct lc_hpath {
	uint64_t addr;
	uint8_t kind;
	bool found;		/* the address is an object of the VM */
	bool reachable;
	bool weak;
	char *path;		/* NULL when unreachable or not found */
	uint64_t size;
	uint64_t retained;	/* as lc_htop's */
};

struct lc_hvmres {
	uint64_t g;
	const char *version;	/* borrowed from the interp */
	struct lc_hvm info;
	double walk_seconds;	/* the walk and the census, not the scan
				   for VMs nor what follows */
	uint64_t count[LC_HK_NKINDS], bytes[LC_HK_NKINDS];
	uint64_t total;		/* bytes of every object */
	uint64_t short_count, short_bytes, long_count, long_bytes;
	struct lc_htop *strings, *tables;	/* biggest first */
	size_t nstrings, ntables;
	struct lc_hdup *dups;
	size_t ndups;
	struct lc_hclass *classes;	/* functions, tables and userdata
					   by class; threads none */
	size_t nclasses;
	struct lc_htop *threads;	/* every thread (at most top) */
	size_t nthreads, threads_total;
	struct lc_hpath *paths;		/* asked for */
	size_t npaths;
	/* with paths: objects reached from the roots, strongly, and
	 * only through a weak reference; no_paths: the family reads no
	 * references (LuaJIT) */
	bool walked_paths, no_paths;
	uint64_t reached, reached_weak, unreached, unreached_bytes;
	/* diff */
	bool diffed;
	uint64_t a_objects, a_bytes, new_objects, new_bytes, freed_objects,
		freed_bytes;
	struct lc_hgroup *groups;
	size_t ngroups;
	/* the index, sorted by address, when kept */
	struct lc_hobj *objs;
	size_t nobjs;
	int32_t *parent;	/* paths: the object a BFS reached it from;
				   -1 unreached; <= -2 root number -2-r */
	uint64_t *retained;	/* paths: bytes each keeps alive at least: it,
				   what only it references strongly, and so
				   on (0: unreached) */
	struct lc_htop *retainers;	/* paths: the objects that keep the
					   most alive, most first */
	size_t nretainers;
	uint8_t *reach;		/* 1 strong, 2 weak */
	char **roots;		/* root names, by number */
	size_t nroots;
	/* pprof by path: every object grouped by (pattern, class) */
	struct lc_hgroup *pgroups;
	size_t npgroups;
};

struct lc_heap {
	struct lc_hvmres *vms;
	size_t nvms;
	bool partial;
	char *note;		/* why no VM, or what the baseline lacked */
	struct lc_heap_options opts;
	size_t top;
};

/* Paths (path.c). */
void lc_heap_bfs(struct lc_interp *in, struct lc_pass *pass,
		 struct lc_hvmres *v, bool strong);
/* The path of object i (as v->parent says), malloc'd; pattern: indices
 * folded to [*]. */
char *lc_heap_path_of(struct lc_interp *in, struct lc_pass *pass,
		      struct lc_hvmres *v, size_t i, bool pattern, bool *weak);
/* Index of the object at addr in v->objs, or -1. */
long lc_heap_find(const struct lc_hvmres *v, uint64_t addr);

/* pprof (pprof.c): a profile of v's objects by retaining path (by_path;
 * needs paths) or by class, to out. */
struct lc_error *lc_heap_pprof_write(const struct lc_heap *h, bool by_path,
				     FILE *out);

#endif /* LC_HEAP_H */
