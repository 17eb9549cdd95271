/* LuaJIT layouts from DWARF (layout.h).
 *
 * The VM's module is the one exporting luaJIT_setmode, LuaJIT's own API
 * in every release (the Lua 5.1 API it also exports does not tell it
 * from PUC Lua).  Types are looked up in LuaJIT's own units first:
 * lj_state.c includes every header whose structs the decoder reads. */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gelf.h>
#include <elfutils/libdw.h>

#include "base/base.h"
#include "native/dwarf_util.h"
#include "vm/luajit/layout.h"

enum {
	T_STATE, T_GLOBAL, T_GG, T_PROTO, T_FUNCL, T_FUNCC, T_STR, T_JIT,
	T_TRACE, T_SNAP, T_TVALUE, T_UPVAL, T_TAB, T_NODE, T_UDATA, T_CDATA,
	T_COUNT
};

static const char *const type_names[T_COUNT] = {
	[T_STATE] = "lua_State", [T_GLOBAL] = "global_State",
	[T_GG] = "GG_State", [T_PROTO] = "GCproto", [T_FUNCL] = "GCfuncL",
	[T_FUNCC] = "GCfuncC", [T_STR] = "GCstr", [T_JIT] = "jit_State",
	[T_TRACE] = "GCtrace", [T_SNAP] = "SnapShot", [T_TVALUE] = "TValue",
	[T_UPVAL] = "GCupval", [T_TAB] = "GCtab", [T_NODE] = "Node",
	[T_UDATA] = "GCudata", [T_CDATA] = "GCcdata",
};

/* LuaJIT's own units: lj_state.c first.  The amalgamated build
 * (ljamalg.c) holds them all. */
static const char *const lj_sources[] = {
	"lj_state.c", "ljamalg.c", "lj_dispatch.c", "lj_trace.c",
	"lj_debug.c", "lj_obj.c", "lj_gc.c", "lj_func.c", "lj_api.c",
	"lj_snap.c", "lj_err.c",
};

/* The module that exports luaJIT_setmode. */
struct find {
	Dwfl_Module *mod;
	const char *name;
	Dwarf_Addr start, end;
};

/* Without the luaJIT_version_* symbol (older releases name it
 * luaJIT_version_2_1_0_beta3, or a build drops it): the version string
 * itself, LUAJIT_VERSION ("LuaJIT 2.1.0-beta3", jit.version), a string
 * of its own in the module's .rodata. */
static void rodata_version(Dwfl_Module *mod, struct lc_lj_layout *l)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".rodata") != 0 ||
		    !(data = elf_getdata(scn, NULL)) || !data->d_buf)
			continue;
		for (const char *p = data->d_buf, *end = p + data->d_size;
		     (p = memmem(p, (size_t)(end - p), "LuaJIT 2.", 9)); p++) {
			size_t n = strnlen(p, (size_t)(end - p));

			/* The string alone (not the banner with its
			 * copyright), just after another's end. */
			if (n < 12 || n >= sizeof(l->version) + 7 ||
			    p + n == end || memchr(p, ' ', n) != p + 6 ||
			    (p > (const char *)data->d_buf && p[-1] != '\0'))
				continue;
			snprintf(l->version, sizeof(l->version), "%s", p + 7);
			return;
		}
	}
}

/* [vm_start, vm_end): the interpreter's code, from the local symbol
 * lj_vm_asm_begin to the end of the unwind entry (FDE) that covers it;
 * and the version in the name of luaJIT_version_*. */
static void vm_code(Dwfl_Module *mod, struct lc_lj_layout *l)
{
	int n = dwfl_module_getsymtab(mod);
	uint64_t begin = 0;

	snprintf(l->version, sizeof(l->version), "2.1");
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *sn = dwfl_module_getsym_info(mod, i, &sym, &addr,
							 NULL, NULL, NULL);

		if (!sn || sym.st_shndx == SHN_UNDEF)
			continue;
		if (strcmp(sn, "lj_vm_asm_begin") == 0 &&
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
			begin = addr;
		else if (strcmp(sn, "lj_BC_JLOOP") == 0)
			l->vm_jloop = addr;
		else if (GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_size) {
			static const char *const subs[] = {
				"lj_vm_mod", "lj_vm_floor_sse",
				"lj_vm_ceil_sse", "lj_vm_trunc_sse",
			};

			for (size_t k = 0; k < LC_ARRAY_SIZE(subs); k++)
				if (strcmp(sn, subs[k]) == 0) {
					l->vm_sub[k][0] = addr;
					l->vm_sub[k][1] = addr + sym.st_size;
				}
		}
		else if (strncmp(sn, "luaJIT_version_", 15) == 0 &&
			 strlen(sn + 15) < sizeof(l->version)) {
			char *v = l->version;

			snprintf(v, sizeof(l->version), "%s", sn + 15);
			for (; *v; v++)
				if (*v == '_')
					*v = '.';
		}
	}
	if (strcmp(l->version, "2.1") == 0)
		rodata_version(mod, l);
	if (!begin)
		return;
	for (int pass = 0; pass < 2; pass++) {
		Dwarf_Addr bias;
		Dwarf_CFI *cfi = pass ? dwfl_module_dwarf_cfi(mod, &bias) :
				       dwfl_module_eh_cfi(mod, &bias);
		Dwarf_Frame *fr = NULL;
		Dwarf_Addr start, end;

		if (!cfi || dwarf_cfi_addrframe(cfi, begin - bias, &fr) != 0)
			continue;
		if (dwarf_frame_info(fr, &start, &end, NULL) >= 0 &&
		    start + bias <= begin && end + bias > begin) {
			l->vm_start = begin;
			l->vm_end = end + bias;
		}
		free(fr);
		if (l->vm_start)
			return;
	}
}

/* The address of data symbol name in mod, or 0. */
static uint64_t data_symbol(Dwfl_Module *mod, const char *name)
{
	int n = dwfl_module_getsymtab(mod);

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *sn = dwfl_module_getsym_info(mod, i, &sym, &addr,
							 NULL, NULL, NULL);

		if (sn && GELF_ST_TYPE(sym.st_info) == STT_OBJECT &&
		    sym.st_shndx != SHN_UNDEF && strcmp(sn, name) == 0)
			return addr;
	}
	return 0;
}

static int find_cb(Dwfl_Module *mod, void **ud, const char *mname,
		   Dwarf_Addr start, void *arg)
{
	struct find *f = arg;
	int n = dwfl_module_getsymtab(mod);

	(void)ud;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *name = dwfl_module_getsym(mod, i, &sym, NULL);

		if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		if (strcmp(name, "luaJIT_setmode") == 0) {
			f->mod = mod;
			f->name = mname;
			dwfl_module_info(mod, NULL, &f->start, &f->end, NULL,
					 NULL, NULL, NULL);
			(void)start;
			return DWARF_CB_ABORT;
		}
	}
	return DWARF_CB_OK;
}

static struct lc_lj_field field(Dwarf_Die *dies, const bool *found, int t,
				const char *path)
{
	struct lc_lj_field f = { .off = -1, .size = 0 };
	int64_t off;
	uint32_t size;

	if (!found[t] || !lc_dwarf_field(&dies[t], path, &off, &size))
		return f;
	f.off = (int32_t)off;
	f.size = size;
	return f;
}

static int64_t enumerator(Dwfl_Module *mod, const char *name)
{
	int64_t v;

	if (!lc_dwarf_enumerator(mod, lj_sources, LC_ARRAY_SIZE(lj_sources),
				 name, &v))
		return -1;
	return v;
}

/* The fields every walk needs; without them the module's DWARF does not
 * describe the VM (a build without -g, a stripped library). */
static bool complete(const struct lc_lj_layout *l)
{
	return LC_LJ_HAS(l->L.glref) && LC_LJ_HAS(l->L.base) &&
	       LC_LJ_HAS(l->L.stack) && LC_LJ_HAS(l->L.cframe) &&
	       LC_LJ_HAS(l->G.vmstate) && LC_LJ_HAS(l->G.mainthref) &&
	       LC_LJ_HAS(l->G.cur_L) && LC_LJ_HAS(l->G.jit_base) &&
	       LC_LJ_HAS(l->pt.sizebc) && LC_LJ_HAS(l->pt.lineinfo) &&
	       LC_LJ_HAS(l->fn.pc) && LC_LJ_HAS(l->fn.ffid) &&
	       l->sz_proto && l->sz_str && l->vmst_interp >= 0 &&
	       l->frame_varg >= 0;
}

static void read_fields(struct lc_lj_layout *l, Dwarf_Die *D,
			const bool *F)
{
#define X(grp, t, fld, path) l->grp.fld = field(D, F, t, path)
	X(L, T_STATE, nextgc, "nextgc");
	X(L, T_STATE, marked, "marked");
	X(L, T_STATE, gct, "gct");
	X(L, T_STATE, dummy_ffid, "dummy_ffid");
	X(L, T_STATE, status, "status");
	X(L, T_STATE, glref, "glref");
	X(L, T_STATE, gclist, "gclist");
	X(L, T_STATE, base, "base");
	X(L, T_STATE, top, "top");
	X(L, T_STATE, maxstack, "maxstack");
	X(L, T_STATE, stack, "stack");
	X(L, T_STATE, openupval, "openupval");
	X(L, T_STATE, env, "env");
	X(L, T_STATE, cframe, "cframe");
	X(L, T_STATE, stacksize, "stacksize");
	X(L, T_STATE, exdata, "exdata");

	X(G, T_GLOBAL, gc_total, "gc.total");
	X(G, T_GLOBAL, gc_threshold, "gc.threshold");
	X(G, T_GLOBAL, gc_state, "gc.state");
	X(G, T_GLOBAL, gc_root, "gc.root");
	X(G, T_GLOBAL, gc_mmudata, "gc.mmudata");
	X(G, T_GLOBAL, str_tab, "str.tab");
	X(G, T_GLOBAL, str_mask, "str.mask");
	X(G, T_GLOBAL, str_num, "str.num");
	X(G, T_GLOBAL, strempty, "strempty");
	X(G, T_GLOBAL, hookmask, "hookmask");
	X(G, T_GLOBAL, vmstate, "vmstate");
	X(G, T_GLOBAL, mainthref, "mainthref");
	X(G, T_GLOBAL, registrytv, "registrytv");
	X(G, T_GLOBAL, vmthref, "vmthref");
	X(G, T_GLOBAL, cur_L, "cur_L");
	X(G, T_GLOBAL, jit_base, "jit_base");
	X(G, T_GLOBAL, gcroot, "gcroot");
	X(G, T_GLOBAL, allocf, "allocf");
	X(G, T_GLOBAL, saved_jit_base, "saved_jit_base");

	X(GG, T_GG, L, "L");
	X(GG, T_GG, g, "g");
	X(GG, T_GG, J, "J");
	X(GG, T_GG, dispatch, "dispatch");

	X(pt, T_PROTO, gct, "gct");
	X(pt, T_PROTO, numparams, "numparams");
	X(pt, T_PROTO, framesize, "framesize");
	X(pt, T_PROTO, sizebc, "sizebc");
	X(pt, T_PROTO, k, "k");
	X(pt, T_PROTO, uv, "uv");
	X(pt, T_PROTO, sizekgc, "sizekgc");
	X(pt, T_PROTO, sizekn, "sizekn");
	X(pt, T_PROTO, sizept, "sizept");
	X(pt, T_PROTO, sizeuv, "sizeuv");
	X(pt, T_PROTO, flags, "flags");
	X(pt, T_PROTO, trace, "trace");
	X(pt, T_PROTO, chunkname, "chunkname");
	X(pt, T_PROTO, firstline, "firstline");
	X(pt, T_PROTO, numline, "numline");
	X(pt, T_PROTO, lineinfo, "lineinfo");
	X(pt, T_PROTO, uvinfo, "uvinfo");
	X(pt, T_PROTO, varinfo, "varinfo");

	X(fn, T_FUNCL, gct, "gct");
	X(fn, T_FUNCL, ffid, "ffid");
	X(fn, T_FUNCL, nupvalues, "nupvalues");
	X(fn, T_FUNCL, env, "env");
	X(fn, T_FUNCL, pc, "pc");
	X(fn, T_FUNCL, uvptr, "uvptr");
	X(fn, T_FUNCC, f, "f");
	X(fn, T_FUNCC, upvalue, "upvalue");

	X(str, T_STR, gct, "gct");
	X(str, T_STR, len, "len");
	X(str, T_STR, hash, "hash");

	X(tab, T_TAB, array, "array");
	X(tab, T_TAB, asize, "asize");
	X(tab, T_TAB, node, "node");
	X(tab, T_TAB, hmask, "hmask");
	X(tab, T_TAB, colo, "colo");
	X(tab, T_TAB, metatable, "metatable");
	X(ud, T_UDATA, len, "len");
	X(ud, T_UDATA, metatable, "metatable");
	X(ud, T_UDATA, env, "env");
	X(tab, T_NODE, val, "val");
	X(tab, T_NODE, key, "key");

	X(uv, T_UPVAL, gct, "gct");
	X(uv, T_UPVAL, v, "v");
	X(uv, T_UPVAL, closed, "closed");

	X(J, T_JIT, trace, "trace");
	X(J, T_JIT, sizetrace, "sizetrace");
	X(J, T_JIT, state, "state");
	X(J, T_JIT, freetrace, "freetrace");
	X(J, T_JIT, flags, "flags");

	X(tr, T_TRACE, gct, "gct");
	X(tr, T_TRACE, nsnap, "nsnap");
	X(tr, T_TRACE, nins, "nins");
	X(tr, T_TRACE, nk, "nk");
	X(tr, T_TRACE, ir, "ir");
	X(tr, T_TRACE, snap, "snap");
	X(tr, T_TRACE, snapmap, "snapmap");
	X(tr, T_TRACE, nsnapmap, "nsnapmap");
	X(tr, T_TRACE, startpt, "startpt");
	X(tr, T_TRACE, startpc, "startpc");
	X(tr, T_TRACE, mcode, "mcode");
	X(tr, T_TRACE, szmcode, "szmcode");
	X(tr, T_TRACE, mcloop, "mcloop");
	X(tr, T_TRACE, traceno, "traceno");
	X(tr, T_TRACE, link, "link");
	X(tr, T_TRACE, root, "root");
	X(tr, T_TRACE, spadjust, "spadjust");

	X(snap, T_SNAP, mcofs, "mcofs");
	X(snap, T_SNAP, ref, "ref");
	X(snap, T_SNAP, mapofs, "mapofs");
	X(snap, T_SNAP, nent, "nent");
	X(snap, T_SNAP, nslots, "nslots");
	X(snap, T_SNAP, topslot, "topslot");
	X(snap, T_SNAP, count, "count");
#undef X
	l->sz_lstate = F[T_STATE] ? lc_dwarf_type_size(&D[T_STATE]) : 0;
	l->sz_gstate = F[T_GLOBAL] ? lc_dwarf_type_size(&D[T_GLOBAL]) : 0;
	l->sz_proto = F[T_PROTO] ? lc_dwarf_type_size(&D[T_PROTO]) : 0;
	l->sz_str = F[T_STR] ? lc_dwarf_type_size(&D[T_STR]) : 0;
	l->sz_tvalue = F[T_TVALUE] ? lc_dwarf_type_size(&D[T_TVALUE]) : 0;
	l->snap.size = F[T_SNAP] ? lc_dwarf_type_size(&D[T_SNAP]) : 0;
	l->sz_node = F[T_NODE] ? lc_dwarf_type_size(&D[T_NODE]) : 0;
	/* the heap walk's sizes (vm/luajit/objects.c) */
	l->sz_tab = F[T_TAB] ? lc_dwarf_type_size(&D[T_TAB]) : 0;
	l->sz_funcl = F[T_FUNCL] ? lc_dwarf_type_size(&D[T_FUNCL]) : 0;
	l->sz_funcc = F[T_FUNCC] ? lc_dwarf_type_size(&D[T_FUNCC]) : 0;
	l->sz_upval = F[T_UPVAL] ? lc_dwarf_type_size(&D[T_UPVAL]) : 0;
	l->sz_udata = F[T_UDATA] ? lc_dwarf_type_size(&D[T_UDATA]) : 0;
	l->sz_cdata = F[T_CDATA] ? lc_dwarf_type_size(&D[T_CDATA]) : 0;
	l->sz_trace = F[T_TRACE] ? lc_dwarf_type_size(&D[T_TRACE]) : 0;
	l->sz_gg = F[T_GG] ? lc_dwarf_type_size(&D[T_GG]) : 0;
}

static void read_enums(struct lc_lj_layout *l, Dwfl_Module *mod)
{
	int64_t pgc = enumerator(mod, "IRT_PGC");
	int64_t p64 = enumerator(mod, "IRT_P64");

	l->vmst_interp = enumerator(mod, "LJ_VMST_INTERP");
	l->vmst_c = enumerator(mod, "LJ_VMST_C");
	l->vmst_gc = enumerator(mod, "LJ_VMST_GC");
	l->vmst_exit = enumerator(mod, "LJ_VMST_EXIT");
	l->vmst_record = enumerator(mod, "LJ_VMST_RECORD");
	l->vmst_opt = enumerator(mod, "LJ_VMST_OPT");
	l->vmst_asm = enumerator(mod, "LJ_VMST_ASM");
	l->vmst_max = enumerator(mod, "LJ_VMST__MAX");
	l->frame_lua = enumerator(mod, "FRAME_LUA");
	l->frame_c = enumerator(mod, "FRAME_C");
	l->frame_cont = enumerator(mod, "FRAME_CONT");
	l->frame_varg = enumerator(mod, "FRAME_VARG");
	l->frame_luap = enumerator(mod, "FRAME_LUAP");
	l->frame_cp = enumerator(mod, "FRAME_CP");
	l->frame_pcall = enumerator(mod, "FRAME_PCALL");
	l->frame_pcallh = enumerator(mod, "FRAME_PCALLH");
	l->gcroot_mmname = enumerator(mod, "GCROOT_MMNAME");
	l->gcroot_max = enumerator(mod, "GCROOT_MAX");
	l->trace_idle = enumerator(mod, "LJ_TRACE_IDLE");
	l->trace_active = enumerator(mod, "LJ_TRACE_ACTIVE");
	l->trace_record = enumerator(mod, "LJ_TRACE_RECORD");
	l->trace_record_1st = enumerator(mod, "LJ_TRACE_RECORD_1ST");
	l->trace_start = enumerator(mod, "LJ_TRACE_START");
	l->trace_end = enumerator(mod, "LJ_TRACE_END");
	l->trace_asm = enumerator(mod, "LJ_TRACE_ASM");
	l->trace_err = enumerator(mod, "LJ_TRACE_ERR");
	l->ir_kgc = enumerator(mod, "IR_KGC");
	l->ir_knum = enumerator(mod, "IR_KNUM");
	l->bc_mov = enumerator(mod, "BC_MOV");
	l->bc_gget = enumerator(mod, "BC_GGET");
	l->bc_tgets = enumerator(mod, "BC_TGETS");
	l->bc_uget = enumerator(mod, "BC_UGET");
	l->bc_knil = enumerator(mod, "BC_KNIL");
	l->bc_iterc = enumerator(mod, "BC_ITERC");
	l->bc_max = enumerator(mod, "BC__MAX");
	l->bc_funcc = enumerator(mod, "BC_FUNCC");
	l->bc_funccw = enumerator(mod, "BC_FUNCCW");
	l->bcm_dst = enumerator(mod, "BCMdst");
	l->bcm_base = enumerator(mod, "BCMbase");
	l->mm_call = enumerator(mod, "MM_call");
	l->mm_max = enumerator(mod, "MM__MAX");
	l->varname_max = enumerator(mod, "VARNAME__MAX");
	/* lj_ir.h: IRT_PGC = LJ_GC64 ? IRT_P64 : IRT_P32.  Without the
	 * JIT's units (LUAJIT_DISABLE_JIT) the 8-byte GCRef says it. */
	if (pgc >= 0 && p64 >= 0)
		l->gc64 = pgc == p64;
	else
		l->gc64 = LC_LJ_HAS(l->L.env) && l->L.env.size == 8;
	/* lj_arch.h: LJ_FR2 is set with LJ_GC64 (two-slot frames). */
	l->fr2 = l->gc64;
}

struct lc_error *lc_lj_layout_open(struct lc_program *t,
				   struct lc_lj_layout **ret)
{
	struct find f = { 0 };
	Dwarf_Die dies[T_COUNT];
	bool found[T_COUNT] = { false };
	struct lc_dwarf_types ts = { .names = type_names, .n = T_COUNT,
				     .dies = dies, .found = found };
	struct lc_lj_layout *l;
	char desc[160];

	*ret = NULL;
	dwfl_getmodules(t->dwfl, find_cb, &f, 0);
	if (!f.mod)
		return lc_error_create(LC_ERR_NOT_FOUND,
				    "no module exports luaJIT_setmode: no LuaJIT here");
	lc_dwarf_find_types(f.mod, lj_sources, LC_ARRAY_SIZE(lj_sources),
			    &ts, NULL);
	l = calloc(1, sizeof(*l));
	if (!l)
		return &lc_error_nomem;
	l->module_path = strdup(f.name ? f.name : "");
	l->module_start = f.start;
	l->module_end = f.end;
	read_fields(l, dies, found);
	read_enums(l, f.mod);
	l->bc_mode = data_symbol(f.mod, "lj_bc_mode");
	vm_code(f.mod, l);
	if (!complete(l)) {
		struct lc_error *err = lc_error_create(LC_ERR_UNSUPPORTED,
			"LuaJIT in %s: no DWARF describes its lua_State, "
			"global_State and GCproto (a build without -g, or no "
			"debug file found: install its debug package or rebuild "
			"it with -g)", l->module_path);

		lc_lj_layout_destroy(l);
		return err;
	}
	l->fork = LC_LJ_HAS(l->L.exdata) ? LC_LJ_OPENRESTY : LC_LJ_UPSTREAM;
	l->vmthread = LC_LJ_HAS(l->G.vmthref);
	snprintf(desc, sizeof(desc), "LuaJIT 2.1 (%s%s, %s)",
		 l->fork == LC_LJ_OPENRESTY ? "OpenResty's luajit2" :
		 "upstream", l->vmthread ? ", with a VM thread" : "",
		 l->gc64 ? "GC64" : "32-bit GC references");
	l->desc = strdup(desc);
	if (!l->module_path || !l->desc) {
		lc_lj_layout_destroy(l);
		return &lc_error_nomem;
	}
	*ret = l;
	return NULL;
}

void lc_lj_layout_destroy(struct lc_lj_layout *l)
{
	if (!l)
		return;
	free(l->module_path);
	free(l->desc);
	free(l);
}

char *lc_lj_layout_dump(const struct lc_lj_layout *l)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
#define F(name, fld) fprintf(f, "%s %" PRId32 " %" PRIu32 "\n", name, \
			     (fld).off, (fld).size)
	F("lua_State.gct", l->L.gct);
	F("lua_State.status", l->L.status);
	F("lua_State.glref", l->L.glref);
	F("lua_State.base", l->L.base);
	F("lua_State.top", l->L.top);
	F("lua_State.maxstack", l->L.maxstack);
	F("lua_State.stack", l->L.stack);
	F("lua_State.openupval", l->L.openupval);
	F("lua_State.cframe", l->L.cframe);
	F("lua_State.stacksize", l->L.stacksize);
	F("lua_State.exdata", l->L.exdata);
	F("global_State.gc.total", l->G.gc_total);
	F("global_State.gc.root", l->G.gc_root);
	F("global_State.str.tab", l->G.str_tab);
	F("global_State.vmstate", l->G.vmstate);
	F("global_State.mainthref", l->G.mainthref);
	F("global_State.registrytv", l->G.registrytv);
	F("global_State.vmthref", l->G.vmthref);
	F("global_State.cur_L", l->G.cur_L);
	F("global_State.jit_base", l->G.jit_base);
	F("global_State.gcroot", l->G.gcroot);
	F("global_State.saved_jit_base", l->G.saved_jit_base);
	F("GG_State.g", l->GG.g);
	F("GG_State.J", l->GG.J);
	F("GG_State.dispatch", l->GG.dispatch);
	F("GCproto.sizebc", l->pt.sizebc);
	F("GCproto.chunkname", l->pt.chunkname);
	F("GCproto.firstline", l->pt.firstline);
	F("GCproto.numline", l->pt.numline);
	F("GCproto.lineinfo", l->pt.lineinfo);
	F("GCproto.varinfo", l->pt.varinfo);
	F("GCfuncL.ffid", l->fn.ffid);
	F("GCfuncL.pc", l->fn.pc);
	F("GCfuncC.f", l->fn.f);
	F("GCstr.len", l->str.len);
	F("GCtab.array", l->tab.array);
	F("GCtab.asize", l->tab.asize);
	F("GCtab.node", l->tab.node);
	F("GCtab.hmask", l->tab.hmask);
	F("Node.val", l->tab.val);
	F("Node.key", l->tab.key);
	F("jit_State.trace", l->J.trace);
	F("jit_State.sizetrace", l->J.sizetrace);
	F("jit_State.state", l->J.state);
	F("jit_State.flags", l->J.flags);
	F("GCtrace.nsnap", l->tr.nsnap);
	F("GCtrace.snap", l->tr.snap);
	F("GCtrace.snapmap", l->tr.snapmap);
	F("GCtrace.startpc", l->tr.startpc);
	F("GCtrace.mcode", l->tr.mcode);
	F("GCtrace.szmcode", l->tr.szmcode);
	F("GCtrace.spadjust", l->tr.spadjust);
	F("GCtrace.traceno", l->tr.traceno);
	F("GCtrace.ir", l->tr.ir);
	F("GCtrace.nk", l->tr.nk);
	F("SnapShot.mcofs", l->snap.mcofs);
	F("SnapShot.mapofs", l->snap.mapofs);
	F("SnapShot.nent", l->snap.nent);
#undef F
	fprintf(f, "sizeof.lua_State %" PRIu32 "\n", l->sz_lstate);
	fprintf(f, "sizeof.global_State %" PRIu32 "\n", l->sz_gstate);
	fprintf(f, "sizeof.GCproto %" PRIu32 "\n", l->sz_proto);
	fprintf(f, "sizeof.GCstr %" PRIu32 "\n", l->sz_str);
	fprintf(f, "sizeof.SnapShot %" PRIu32 "\n", l->snap.size);
	fprintf(f, "sizeof.Node %" PRIu32 "\n", l->sz_node);
#define E(name) fprintf(f, "enum.%s %" PRId64 "\n", #name, l->name)
	E(vmst_interp); E(vmst_c); E(vmst_gc); E(vmst_exit);
	E(vmst_record); E(vmst_opt); E(vmst_asm); E(vmst_max);
	E(frame_lua); E(frame_c); E(frame_cont); E(frame_varg);
	E(frame_luap); E(frame_cp); E(frame_pcall); E(frame_pcallh);
	E(gcroot_mmname); E(gcroot_max);
	E(trace_idle); E(trace_active); E(trace_record); E(trace_start);
	E(trace_asm); E(trace_err); E(ir_kgc); E(ir_knum);
	E(bc_mov); E(bc_gget); E(bc_tgets); E(bc_uget); E(bc_knil);
	E(bc_iterc); E(bc_max); E(bcm_dst); E(bcm_base); E(mm_call);
	E(mm_max); E(varname_max);
#undef E
	fprintf(f, "fork %s\n", l->fork == LC_LJ_OPENRESTY ? "openresty" :
		"upstream");
	fprintf(f, "gc64 %d\n", l->gc64);
	fprintf(f, "vm_code %" PRIu64 "\n", l->vm_end - l->vm_start);
	fprintf(f, "version %s\n", l->version);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
