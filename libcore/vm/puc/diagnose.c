/* The PUC family's diagnoses (diagnose.h): LuaJIT told apart from PUC
 * Lua, and what to do when Lua has no DWARF, which depends on where it
 * is: built into the executable or a shared library. */
#include <config.h>

#include <stdio.h>
#include <string.h>
#include <gelf.h>

#include "vm/puc/diagnose.h"

/* LuaJIT exports the Lua 5.1 API, lua_newstate included, but is another
 * VM.  It is known by its own API (luaJIT_setmode, in every release),
 * its internals where the symbol table is kept (lj_state_new), and its
 * version symbol (luaJIT_version_2_1_0_beta3, not exported by every
 * build); luaJIT_profile_start came with 2.1.  *what gets "LuaJIT 2.1"
 * or "LuaJIT". */
bool lc_puc_luajit_symbols(Dwfl_Module *mod, char *what, size_t size)
{
	int n = dwfl_module_getsymtab(mod), major = -1, minor = -1;
	bool found = false, profile = false;

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr,
							   NULL, NULL, NULL);

		if (!name || sym.st_shndx == SHN_UNDEF)
			continue;
		if (strcmp(name, "luaJIT_setmode") == 0 ||
		    strcmp(name, "lj_state_new") == 0)
			found = true;
		else if (strcmp(name, "luaJIT_profile_start") == 0)
			profile = true;
		else if (strncmp(name, "luaJIT_version_", 15) == 0 &&
			 sscanf(name + 15, "%d_%d", &major, &minor) == 2)
			found = true;
	}
	if (!found)
		return false;
	if (major >= 0 && major < 100 && minor >= 0 && minor < 100)
		snprintf(what, size, "LuaJIT %d.%d", major, minor);
	else
		snprintf(what, size, profile ? "LuaJIT 2.1" : "LuaJIT");
	return true;
}

struct lc_error *lc_puc_luajit_error(const char *what, const char *mname)
{
	return lc_error_create(LC_ERR_NOT_FOUND,
		"the Lua of %s is %s, not PUC Lua (the LuaJIT family reads it)",
		mname ? mname : "the Lua module", what);
}

/* Is mod the main program rather than a shared library? */
static bool is_executable(Dwfl_Module *mod)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	GElf_Ehdr eh;
	size_t phnum;

	if (!elf || !gelf_getehdr(elf, &eh))
		return false;
	if (eh.e_type == ET_EXEC)
		return true;
	if (elf_getphdrnum(elf, &phnum) != 0)
		return false;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(elf, (int)i, &mem);

		if (ph && ph->p_type == PT_INTERP)
			return true;
	}
	return false;
}

struct lc_error *lc_puc_no_dwarf_error(Dwfl_Module *mod, const char *mname,
				       const char *version, bool no_builtin)
{
	char found[64], pkg[64] = "", why[160];
	const char *base = mname ? strrchr(mname, '/') : NULL;
	int minor;

	base = base ? base + 1 : mname ? mname : "";
	if (version)
		snprintf(found, sizeof(found), "Lua %s (lua_ident)", version);
	else
		snprintf(found, sizeof(found), "Lua");
	/* What kept the built-in layouts out. */
	if (!version)
		snprintf(why, sizeof(why), "no lua_ident string names its release, so no built-in layout applies");
	else if (no_builtin)
		snprintf(why, sizeof(why), "luacore has no built-in layout of Lua %s (it has every release 5.1.1-5.5.0)",
			 version);
	else
		why[0] = '\0';
	if (is_executable(mod))
		return lc_error_create(LC_ERR_UNSUPPORTED,
			"%s is built into the executable %s, which has no DWARF description of lua_State%s%s: build it with -g, or keep its debug info in a separate file (objcopy --only-keep-debug, then --add-gnu-debuglink, or /usr/lib/debug/.build-id)",
			found, mname ? mname : "?", why[0] ? ", and " : "", why);
	if (sscanf(base, "liblua5.%d.so", &minor) == 1 && minor >= 1 &&
	    minor <= 9)
		snprintf(pkg, sizeof(pkg), " (Debian: the liblua5.%d-0-dbg package)",
			 minor);
	return lc_error_create(LC_ERR_UNSUPPORTED,
		"%s is in %s, which has no DWARF description of lua_State%s%s: install its debug info%s, set DEBUGINFOD_URLS for debuginfod, or build Lua with -g",
		found, mname ? mname : "?", why[0] ? ", and " : "", why, pkg);
}
