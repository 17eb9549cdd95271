/* Looking up types, members and enumerators by name in a module's DWARF:
 * what every VM family's layout needs (vm/puc/layout.c,
 * vm/luajit/layout.c).  Reads only the module's debug info, never the
 * target's memory.  The DIEs returned point into the module's Dwarf,
 * owned by its Dwfl: valid while the program is open. */
#ifndef LC_DWARF_UTIL_H
#define LC_DWARF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

/* Strip typedefs and cv-qualifiers; false if the chain is broken or too
 * long. */
bool lc_dwarf_peel(Dwarf_Die *die);

/* The byte size of a type (peeled), or 0. */
uint32_t lc_dwarf_type_size(Dwarf_Die *type);

/* Member "name" of struct/union type, anonymous members searched: its
 * offset and its (unpeeled) type. */
bool lc_dwarf_member(Dwarf_Die *type, const char *name, int64_t *off,
		     Dwarf_Die *mtype);

/* Member "path" (dot-separated, "gc.total") of type: its offset and the
 * size of its type. */
bool lc_dwarf_field(Dwarf_Die *type, const char *path, int64_t *off,
		    uint32_t *size);

/* Is member "name" of type a union (rather than, say, a pointer)? */
bool lc_dwarf_member_is_union(Dwarf_Die *type, const char *name);

/* A search for the definitions of several named types (structs, unions,
 * typedefs of them), units of the VM's own source files first. */
struct lc_dwarf_types {
	const char *const *names;	/* the type names */
	size_t n;
	Dwarf_Die *dies;	/* n, filled where found (peeled) */
	bool *found;		/* n */
	size_t nfound;
};

/* Fill t from mod's units: first the unit of files[0], then those of the
 * other files (base names), then any unit, until enough(arg) says the
 * search may stop (NULL: when every name is found).  The first
 * definition of a name wins. */
void lc_dwarf_find_types(Dwfl_Module *mod, const char *const *files,
			 size_t nfiles, struct lc_dwarf_types *t,
			 bool (*enough)(const struct lc_dwarf_types *t,
					int rank));

/* The struct "name" (or a typedef of one) among the top-level DIEs of
 * unit, dwz's imported units followed one level deep. */
bool lc_dwarf_struct_in_unit(Dwarf_Die *unit, const char *name,
			     Dwarf_Die *ret);

/* The struct "name" as defined by the unit of one of files (base
 * names): a struct private to one source file. */
bool lc_dwarf_private_struct(Dwfl_Module *mod, const char *const *files,
			     size_t nfiles, const char *name, Dwarf_Die *ret);

/* The value of enumerator "name" in the units of files (base names),
 * then in any unit; false when no unit has it. */
bool lc_dwarf_enumerator(Dwfl_Module *mod, const char *const *files,
			 size_t nfiles, const char *name, int64_t *value);

#endif /* LC_DWARF_UTIL_H */
