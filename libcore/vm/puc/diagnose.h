/* Why the PUC family finds no VM it can read, in words that say what was
 * found, what is missing and what to do (layout.c asks): LuaJIT, which
 * exports the same C API, and Lua without the DWARF that layout.c reads
 * its layout from. */
#ifndef LC_PUC_DIAGNOSE_H
#define LC_PUC_DIAGNOSE_H

#include <stdbool.h>
#include <stddef.h>
#include <elfutils/libdwfl.h>

#include "base/base.h"

/* Does mod hold LuaJIT, by its symbols?  Then *what (size bytes) gets
 * "LuaJIT 2.1", or "LuaJIT" when its release is not told. */
bool lc_puc_luajit_symbols(Dwfl_Module *mod, char *what, size_t size);
/* "WHAT detected in MNAME; not yet supported ...". */
struct lc_error *lc_puc_luajit_error(const char *what, const char *mname);
/* Lua is in mod (named mname), which has no DWARF for lua_State;
 * version is lua_ident's ("5.4.7") or NULL; no_builtin: that release has
 * no built-in layout either.  The message says what kept the built-in
 * layouts out. */
struct lc_error *lc_puc_no_dwarf_error(Dwfl_Module *mod, const char *mname,
				       const char *version, bool no_builtin);

#endif /* LC_PUC_DIAGNOSE_H */
