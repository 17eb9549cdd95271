/* Types, members and enumerators by name in a module's DWARF
 * (dwarf_util.h).  Every walk is bounded: a damaged or huge debug file
 * gives "not found", never a hang. */
#include <config.h>

#include <dwarf.h>
#include <string.h>

#include "base/base.h"
#include "native/dwarf_util.h"

/* Top-level DIEs looked at in one unit, and the nesting of anonymous
 * members followed. */
#define UNIT_DIES_MAX 1000000
#define MEMBER_DEPTH_MAX 8

bool lc_dwarf_peel(Dwarf_Die *die)
{
	for (int i = 0; i < 16; i++) {
		Dwarf_Attribute attr;
		int tag = dwarf_tag(die);

		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type)
			return true;
		if (!dwarf_attr_integrate(die, DW_AT_type, &attr) ||
		    !dwarf_formref_die(&attr, die))
			return false;
	}
	return false;
}

uint32_t lc_dwarf_type_size(Dwarf_Die *type)
{
	Dwarf_Word size;
	Dwarf_Die d = *type;

	if (!lc_dwarf_peel(&d) || dwarf_aggregate_size(&d, &size) != 0)
		return 0;
	return (uint32_t)size;
}

static bool member(Dwarf_Die *type, const char *name, int64_t *off,
		   Dwarf_Die *mtype, int depth)
{
	Dwarf_Die child, t = *type;
	int n = 0;

	if (depth > MEMBER_DEPTH_MAX || !lc_dwarf_peel(&t) ||
	    dwarf_child(&t, &child) != 0)
		return false;
	do {
		Dwarf_Attribute attr;
		Dwarf_Word moff = 0;
		const char *mname;
		Dwarf_Die mt;

		if (dwarf_tag(&child) != DW_TAG_member)
			continue;
		if (dwarf_attr_integrate(&child, DW_AT_data_member_location,
					 &attr) &&
		    dwarf_formudata(&attr, &moff) != 0)
			continue;
		if (!dwarf_attr_integrate(&child, DW_AT_type, &attr) ||
		    !dwarf_formref_die(&attr, &mt))
			continue;
		mname = dwarf_diename(&child);
		if (mname && strcmp(mname, name) == 0) {
			*off = (int64_t)moff;
			*mtype = mt;
			return true;
		}
		if (!mname) {
			int64_t sub;

			if (member(&mt, name, &sub, mtype, depth + 1)) {
				*off = (int64_t)moff + sub;
				return true;
			}
		}
	} while (dwarf_siblingof(&child, &child) == 0 && ++n < UNIT_DIES_MAX);
	return false;
}

bool lc_dwarf_member(Dwarf_Die *type, const char *name, int64_t *off,
		     Dwarf_Die *mtype)
{
	return member(type, name, off, mtype, 0);
}

bool lc_dwarf_field(Dwarf_Die *type, const char *path, int64_t *off,
		    uint32_t *size)
{
	char buf[64];
	char *save = NULL, *part;
	Dwarf_Die cur, mt;
	int64_t total = 0;

	if (strlen(path) >= sizeof(buf))
		return false;
	strcpy(buf, path);
	cur = *type;
	for (part = strtok_r(buf, ".", &save); part;
	     part = strtok_r(NULL, ".", &save)) {
		int64_t o;

		if (!member(&cur, part, &o, &mt, 0))
			return false;
		total += o;
		cur = mt;
	}
	*off = total;
	*size = lc_dwarf_type_size(&cur);
	return true;
}

bool lc_dwarf_member_is_union(Dwarf_Die *type, const char *name)
{
	int64_t off;
	Dwarf_Die mt;

	if (!member(type, name, &off, &mt, 0) || !lc_dwarf_peel(&mt))
		return false;
	return dwarf_tag(&mt) == DW_TAG_union_type;
}

/* Call fn on each top-level DIE of unit, dwz's imported units followed
 * one level deep, until it returns true (then true). */
static bool visit_unit(Dwarf_Die *unit, int depth,
		       bool (*fn)(Dwarf_Die *die, void *arg), void *arg)
{
	Dwarf_Die child;
	int n = 0;

	if (dwarf_child(unit, &child) != 0)
		return false;
	do {
		if (dwarf_tag(&child) == DW_TAG_imported_unit) {
			Dwarf_Attribute attr;
			Dwarf_Die imp;

			if (depth < 2 && dwarf_attr(&child, DW_AT_import, &attr) &&
			    dwarf_formref_die(&attr, &imp) &&
			    visit_unit(&imp, depth + 1, fn, arg))
				return true;
		} else if (fn(&child, arg)) {
			return true;
		}
	} while (dwarf_siblingof(&child, &child) == 0 && ++n < UNIT_DIES_MAX);
	return false;
}

/* A definition of one of t's names: taken (the search stops once every
 * name is found). */
static bool consider(Dwarf_Die *die, void *arg)
{
	struct lc_dwarf_types *t = arg;
	int tag = dwarf_tag(die);
	const char *name;

	if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type &&
	    tag != DW_TAG_typedef)
		return false;
	if (dwarf_hasattr(die, DW_AT_declaration))
		return false;
	name = dwarf_diename(die);
	if (!name)
		return false;
	for (size_t i = 0; i < t->n; i++) {
		Dwarf_Die d = *die;

		if (t->found[i] || strcmp(name, t->names[i]) != 0)
			continue;
		if (!lc_dwarf_peel(&d) || dwarf_hasattr(&d, DW_AT_declaration))
			continue;
		t->dies[i] = d;
		t->found[i] = true;
		t->nfound++;
	}
	return t->nfound == t->n;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* 0: the unit of files[0]; 1: of another of files; 2: any other. */
static int source_rank(Dwarf_Die *cu, const char *const *files,
		       size_t nfiles)
{
	const char *name = dwarf_diename(cu);

	if (!name)
		return 2;
	for (size_t i = 0; i < nfiles; i++)
		if (strcmp(base_name(name), files[i]) == 0)
			return i == 0 ? 0 : 1;
	return 2;
}

void lc_dwarf_find_types(Dwfl_Module *mod, const char *const *files,
			 size_t nfiles, struct lc_dwarf_types *t,
			 bool (*enough)(const struct lc_dwarf_types *t,
					int rank))
{
	for (int rank = 0; rank <= 2 && t->nfound < t->n; rank++) {
		Dwarf_Die *cu = NULL;
		Dwarf_Addr bias;

		while ((cu = dwfl_module_nextcu(mod, cu, &bias))) {
			if (source_rank(cu, files, nfiles) != rank)
				continue;
			visit_unit(cu, 0, consider, t);
			if (t->nfound == t->n)
				return;
			if (enough && enough(t, rank))
				return;
		}
	}
}

struct named {
	const char *name;
	Dwarf_Die *ret;
	int64_t *value;
};

/* A struct (or a typedef of one) defined under that name. */
static bool is_struct(Dwarf_Die *die, void *arg)
{
	struct named *q = arg;
	int tag = dwarf_tag(die);
	const char *dn;
	Dwarf_Die d = *die;

	if ((tag != DW_TAG_structure_type && tag != DW_TAG_typedef) ||
	    dwarf_hasattr(die, DW_AT_declaration))
		return false;
	dn = dwarf_diename(die);
	if (!dn || strcmp(dn, q->name) != 0 || !lc_dwarf_peel(&d) ||
	    dwarf_tag(&d) != DW_TAG_structure_type ||
	    dwarf_hasattr(&d, DW_AT_declaration))
		return false;
	*q->ret = d;
	return true;
}

static bool struct_in_unit(Dwarf_Die *unit, const char *name, Dwarf_Die *ret)
{
	struct named q = { .name = name, .ret = ret };

	return visit_unit(unit, 0, is_struct, &q);
}

bool lc_dwarf_struct_in_unit(Dwarf_Die *unit, const char *name,
			     Dwarf_Die *ret)
{
	return struct_in_unit(unit, name, ret);
}

bool lc_dwarf_private_struct(Dwfl_Module *mod, const char *const *files,
			     size_t nfiles, const char *name, Dwarf_Die *ret)
{
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias;

	while ((cu = dwfl_module_nextcu(mod, cu, &bias))) {
		const char *cn = dwarf_diename(cu);

		if (!cn)
			continue;
		for (size_t i = 0; i < nfiles; i++)
			if (strcmp(base_name(cn), files[i]) == 0 &&
			    struct_in_unit(cu, name, ret))
				return true;
	}
	return false;
}

/* An enumeration type with an enumerator of that name: its value. */
static bool has_enumerator(Dwarf_Die *die, void *arg)
{
	struct named *q = arg;
	Dwarf_Die e;
	int m = 0;

	if (dwarf_tag(die) != DW_TAG_enumeration_type ||
	    dwarf_child(die, &e) != 0)
		return false;
	do {
		const char *en = dwarf_diename(&e);
		Dwarf_Attribute attr;
		Dwarf_Sword sv;

		if (dwarf_tag(&e) != DW_TAG_enumerator || !en ||
		    strcmp(en, q->name) != 0)
			continue;
		if (!dwarf_attr(&e, DW_AT_const_value, &attr) ||
		    dwarf_formsdata(&attr, &sv) != 0)
			return false;
		*q->value = sv;
		return true;
	} while (dwarf_siblingof(&e, &e) == 0 && ++m < UNIT_DIES_MAX);
	return false;
}

bool lc_dwarf_enumerator(Dwfl_Module *mod, const char *const *files,
			 size_t nfiles, const char *name, int64_t *value)
{
	for (int pass = 0; pass < 2; pass++) {
		Dwarf_Die *cu = NULL;
		Dwarf_Addr bias;

		while ((cu = dwfl_module_nextcu(mod, cu, &bias))) {
			bool own = source_rank(cu, files, nfiles) < 2;

			if (own != (pass == 0))
				continue;
			struct named q = { .name = name, .value = value };

			if (visit_unit(cu, 0, has_enumerator, &q))
				return true;
		}
	}
	return false;
}
