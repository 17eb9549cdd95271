/* Built-in layouts: struct lc_layout of every PUC Lua release on x86_64
 * in its default configuration (64-bit integers and floats; validation
 * takes 4-byte ones where math.pi and math.maxinteger read so, and
 * LUAI_EXTRASPACE moves nothing read), for VMs whose module has no
 * DWARF.  The table
 * (builtin-layouts.c) is generated from the DWARF of reference builds by
 * fixtures/layouts/generate.sh and never edited by hand; a layout taken
 * from it is used only once it validates against the target's memory. */
#ifndef LC_BUILTIN_H
#define LC_BUILTIN_H

#include <stddef.h>

#include "vm/puc/layout.h"

#define LC_BUILTIN_RELEASES 32

struct lc_builtin_layout {
	/* The releases (50406) whose layout this is, 0 after the last. */
	int releases[LC_BUILTIN_RELEASES];
	/* Its LC_LAYOUT_MEMBERS (vm/puc/layout-members.h); the rest zero. */
	struct lc_layout layout;
};

extern const struct lc_builtin_layout lc_builtin_layouts[];
extern const size_t lc_nbuiltin_layouts;

/* The built-in layout of release (50406), or NULL: static storage. */
const struct lc_layout *lc_layout_builtin(int release);

#endif /* LC_BUILTIN_H */
