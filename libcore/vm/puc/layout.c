/* Lua struct layouts from DWARF, and version detection.
 *
 * The VM's module is the one defining lua_newstate (or luaV_execute for
 * static hosts that hide the API).  Types are looked up by name in that
 * module's compilation units, Lua's own sources first (lstate.c includes
 * every header whose structs we need), so a host type that happens to be
 * called "Table" or "Proto" elsewhere is never picked. */
#include <config.h>

#include <dwarf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <gelf.h>
#include <elfutils/libdw.h>

#include "native/dwarf_util.h"
#include "vm/puc/builtin.h"
#include "vm/puc/diagnose.h"
#include "vm/puc/layout.h"

/* Every type name the layout uses. */
enum {
	T_STATE, T_GLOBAL, T_CI, T_TVALUE, T_LUA_TVALUE, T_STACKVALUE,
	T_PROTO, T_LCLOSURE, T_CCLOSURE, T_CLOSURE, T_TSTRING, T_UTSTRING,
	T_LOCVAR, T_UPVALDESC, T_ABSLINEINFO, T_TABLE, T_NODE, T_UPVAL,
	T_UDATA, T_UVALUE, T_UUDATA, T_COUNT
};

static const char *const type_names[T_COUNT] = {
	[T_STATE] = "lua_State", [T_GLOBAL] = "global_State",
	[T_CI] = "CallInfo", [T_TVALUE] = "TValue",
	[T_LUA_TVALUE] = "lua_TValue", [T_STACKVALUE] = "StackValue",
	[T_PROTO] = "Proto", [T_LCLOSURE] = "LClosure",
	[T_CCLOSURE] = "CClosure", [T_CLOSURE] = "Closure",
	[T_TSTRING] = "TString", [T_UTSTRING] = "UTString",
	[T_LOCVAR] = "LocVar", [T_UPVALDESC] = "Upvaldesc",
	[T_ABSLINEINFO] = "AbsLineInfo", [T_TABLE] = "Table",
	[T_NODE] = "Node", [T_UPVAL] = "UpVal", [T_UDATA] = "Udata",
	[T_UVALUE] = "UValue", [T_UUDATA] = "UUdata",
};

/* Lua's own source files: their CUs are searched first. */
static const char *const lua_sources[] = {
	"lstate.c", "ldebug.c", "lfunc.c", "ldo.c", "lvm.c", "lapi.c",
	"lgc.c", "lobject.c", "ltable.c", "lstring.c", "ltm.c", "onelua.c",
};

/* The PUC search stops once Lua's own units answered: they hold all of
 * Lua's types that the build uses; host code is not wandered into once
 * lstate.c gave the core set (rank 1 or later). */
static bool core_set(const struct lc_dwarf_types *t, int rank)
{
	return rank > 0 && t->found[T_STATE] && t->found[T_PROTO] &&
	       t->found[T_CI];
}

struct type_search {
	Dwarf_Die dies[T_COUNT];
	bool found[T_COUNT];
	struct lc_dwarf_types t;
};

static void find_types(Dwfl_Module *mod, struct type_search *s)
{
	memset(s->found, 0, sizeof(s->found));
	s->t = (struct lc_dwarf_types){ .names = type_names, .n = T_COUNT,
					.dies = s->dies, .found = s->found };
	lc_dwarf_find_types(mod, lua_sources, LC_ARRAY_SIZE(lua_sources),
			    &s->t, core_set);
}

static struct lc_field field(Dwarf_Die *type, bool have, const char *path)
{
	struct lc_field f = { .off = -1, .size = 0 };
	int64_t off;
	uint32_t size;

	if (!have || !lc_dwarf_field(type, path, &off, &size))
		return f;
	f.off = (int32_t)off;
	f.size = size;
	return f;
}

struct sym_search {
	const char *const *names;
	size_t nnames;
	Dwfl_Module *mod;
	GElf_Addr addr;
	int which;		/* index in names of the best match */
	/* Leave LuaJIT's modules out (they export the Lua 5.1 API too): the
	 * first one seen, its name and release. */
	bool skip_luajit;
	Dwfl_Module *luajit;
	const char *luajit_name;
	char luajit_what[32];
	/* Leave out modules that define the first name but none of the
	 * others when those are among the names (lua_newstate without
	 * luaV_execute or lua_ident): a library that wraps Lua's API, such
	 * as luacore-sample --alloc's shim, not Lua. */
	bool skip_wrappers;
};

static int find_symbol_cb(Dwfl_Module *mod, void **ud, const char *mname,
			  Dwarf_Addr start, void *arg)
{
	struct sym_search *s = arg;
	int n = dwfl_module_getsymtab(mod);
	bool checked = false;
	Dwfl_Module *mod0 = s->mod;
	GElf_Addr addr0 = s->addr;
	int which0 = s->which;
	unsigned found = 0;

	(void)ud;
	(void)start;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr,
							   NULL, NULL, NULL);

		if (!name || sym.st_shndx == SHN_UNDEF)
			continue;
		for (size_t j = 0; j < s->nnames; j++) {
			if (strcmp(name, s->names[j]) != 0)
				continue;
			/* A process may hold LuaJIT beside PUC Lua. */
			if (s->skip_luajit && !checked) {
				char what[32];

				checked = true;
				if (lc_puc_luajit_symbols(mod, what, sizeof(what))) {
					if (!s->luajit) {
						s->luajit = mod;
						s->luajit_name = mname;
						snprintf(s->luajit_what,
							 sizeof(s->luajit_what),
							 "%s", what);
					}
					return DWARF_CB_OK;
				}
			}
			if (j < 32)
				found |= 1u << j;
			if (!s->mod || (int)j < s->which) {
				s->mod = mod;
				s->addr = addr;
				s->which = (int)j;
			}
		}
	}
	if (s->skip_wrappers && s->nnames > 1 && found == 1u) {
		/* the first name alone: a wrapper; as if not seen */
		s->mod = mod0;
		s->addr = addr0;
		s->which = which0;
		return DWARF_CB_OK;
	}
	return s->mod && s->which == 0 ? DWARF_CB_ABORT : DWARF_CB_OK;
}

/* A module without symbols for Lua (stripped): the one whose read-only
 * data holds lua_ident's text ("$LuaVersion: Lua 5.4.6 ..." from 5.2 on,
 * "$Lua: Lua 5.1.5 ..." before), read from its file. */
struct ident_search {
	Dwfl_Module *mod;
	char text[128];
};

static int find_ident_cb(Dwfl_Module *mod, void **ud, const char *mname,
			 Dwarf_Addr start, void *arg)
{
	static const char *const marks[] = { "$LuaVersion: Lua 5.", "$Lua: Lua 5." };
	struct ident_search *s = arg;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	Elf_Scn *scn = NULL;

	(void)ud; (void)mname; (void)start;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || (sh.sh_flags & SHF_EXECINSTR) ||
		    (sh.sh_flags & SHF_WRITE) || !(d = elf_getdata(scn, NULL)) ||
		    !d->d_buf)
			continue;
		for (size_t m = 0; m < LC_ARRAY_SIZE(marks); m++) {
			const char *p = memmem(d->d_buf, d->d_size, marks[m],
					       strlen(marks[m]));
			size_t n;

			if (!p)
				continue;
			n = d->d_size - (size_t)(p - (const char *)d->d_buf);
			if (n >= sizeof(s->text))
				n = sizeof(s->text) - 1;
			memcpy(s->text, p, n);
			s->text[n] = '\0';
			s->mod = mod;
			return DWARF_CB_ABORT;
		}
	}
	return DWARF_CB_OK;
}

/* Parse "Lua 5.4.4" out of lua_ident.  Any 5.x is taken: whether the
 * release is one the decoder knows is decided by lc_layout_version. */
static bool parse_ident(const char *s, int *release, char *version,
			size_t vsize)
{
	const char *p = strstr(s, "Lua 5.");
	int a, b, c = 0;

	if (!p)
		return false;
	if (sscanf(p, "Lua %d.%d.%d", &a, &b, &c) < 2)
		return false;
	if (a != 5 || b < 1 || b > 99 || c < 0 || c > 99)
		return false;
	*release = a * 10000 + b * 100 + c;
	snprintf(version, vsize, "%d.%d.%d", a, b, c);
	return true;
}

/* The text of the program's lua_ident into buf, "" when there is none
 * or it is unreadable. */
static void ident_text(struct lc_program *t, char *buf, size_t size)
{
	static const char *const ident[] = { "lua_ident" };
	struct sym_search is = { .names = ident, .nnames = 1 };

	buf[0] = '\0';
	dwfl_getmodules(t->dwfl, find_symbol_cb, &is, 0);
	if (!is.mod || lc_read(t->mem, is.addr, buf, size - 1) != 0)
		buf[0] = '\0';
	else
		buf[size - 1] = '\0';
}

/* The newest release known of major version "major", 0 if none. */
static int newest_release(int major)
{
	switch (major) {
	case 501: return LC_NEWEST_51;
	case 502: return LC_NEWEST_52;
	case 503: return LC_NEWEST_53;
	case 504: return LC_NEWEST_54;
	case 505: return LC_NEWEST_55;
	default: return 0;
	}
}

struct lc_error *lc_layout_version(const char *ident, int shape,
				   struct lc_layout *l)
{
	int rel = 0, major, newest;
	char ver[16];

	l->version_warning[0] = '\0';
	l->version_guessed = false;
	if (!ident || !parse_ident(ident, &rel, ver, sizeof(ver))) {
		l->release = shape * 100;
		l->major = shape;
		snprintf(l->version, sizeof(l->version), "%d.%d", shape / 100,
			 shape % 100);
		l->version_guessed = true;
		return NULL;
	}
	major = rel / 100;
	/* A major version newer than any known is read as the newest one
	 * when its DWARF layout looks like it (each field is looked up by
	 * name anyway); otherwise the ident must match the layout. */
	if (major != shape && !(major > LC_NEWEST_MAJOR &&
				shape == LC_NEWEST_MAJOR))
		return lc_error_create(LC_ERR_UNSUPPORTED,
			"lua_ident says Lua %s but the DWARF layout of lua_State in %s looks like Lua 5.%d",
			ver, l->module_path ? l->module_path : "?",
			shape % 100);
	l->release = rel;
	l->major = shape;
	snprintf(l->version, sizeof(l->version), "%s", ver);
	newest = newest_release(shape);
	if (rel > newest)
		snprintf(l->version_warning, sizeof(l->version_warning),
			 "Lua %s is newer than the newest release luacore knows%s (%d.%d.%d): read with the rules of %d.%d.%d, the layout from its DWARF; names, lines and values may be wrong",
			 ver, major == shape ? " of its version" : "",
			 newest / 10000, newest / 100 % 100, newest % 100,
			 newest / 10000, newest / 100 % 100, newest % 100);
	return NULL;
}

/* ---- types outside the main search (vm/puc/heap.c's fields) ---- */

/* struct LG is private to lstate.c, struct lua_longjmp to ldo.c
 * (onelua.c holds both): lc_dwarf_private_struct. */

/* Fields for VM discovery, GC lists and thread internals (vm/puc/heap.c). */
static void vm_layout(struct lc_layout *l, Dwfl_Module *mod,
		      struct type_search *ts)
{
	static const char *const lstate_files[] = { "lstate.c", "onelua.c" };
	static const char *const ldo_files[] = { "ldo.c", "onelua.c" };
	Dwarf_Die *G = &ts->dies[T_GLOBAL], *S = &ts->dies[T_STATE];
	Dwarf_Die *U = &ts->dies[T_UPVAL];
	bool fg = ts->found[T_GLOBAL], fs = ts->found[T_STATE];
	bool fu = ts->found[T_UPVAL];
	Dwarf_Die d;

#define GX(fld) l->Gx.fld = field(G, fg, #fld)
	GX(totalbytes); GX(GCtotalbytes); GX(GCdebt); GX(GCestimate);
	GX(estimate); GX(gckind); GX(gcemergency); GX(gcpause); GX(gcstepmul);
	GX(gcstepsize); GX(genminormul); GX(genmajormul); GX(gcmajorinc);
	GX(gcparams); GX(Cstacklimit);
	GX(rootgc); GX(allgc); GX(finobj); GX(tobefnz); GX(fixedgc);
#undef GX
	l->Lx.next = field(S, fs, "next");
	l->Lx.nci = field(S, fs, "nci");
	l->uvx.open_next = field(U, fu, l->major <= 502 ? "next" :
				 "u.open.next");
	l->sz_lstate = fs ? lc_dwarf_type_size(S) : 0;
	if (lc_dwarf_private_struct(mod, ldo_files, LC_ARRAY_SIZE(ldo_files),
				"lua_longjmp", &d)) {
		l->lj.previous = field(&d, true, "previous");
		l->lj.status = field(&d, true, "status");
	} else {
		l->lj.previous = l->lj.status = (struct lc_field){ -1, 0 };
	}
	l->lg_g_minus_l = 0;
	if (LC_HAS(l->G.mainth)) {
		/* 5.5: lua_newstate allocates the global_State, the main
		 * thread inside it. */
		l->lg_g_minus_l = -(int64_t)l->G.mainth.off;
		return;
	}
	if (lc_dwarf_private_struct(mod, lstate_files,
				LC_ARRAY_SIZE(lstate_files), "LG", &d)) {
		struct lc_field g = field(&d, true, "g");
		/* 5.2+: LG.l is an LX holding the lua_State at LX.l. */
		struct lc_field lx = field(&d, true, "l.l");

		if (lx.off < 0)
			lx = field(&d, true, "l");
		if (g.off > 0 && lx.off >= 0 && g.off > lx.off)
			l->lg_g_minus_l = g.off - lx.off;
	}
	if (!l->lg_g_minus_l && l->sz_lstate) {
		/* luaconf.h defaults: LUA_EXTRASPACE is sizeof(void *) in
		 * 5.3/5.4, LUAI_EXTRASPACE undefined (0) in 5.1/5.2;
		 * global_State is 8-aligned. */
		uint64_t extra = l->major >= 503 ? 8 : 0;

		l->lg_g_minus_l = (int64_t)(((extra + l->sz_lstate + 7) & ~7ull) -
					    extra);
		l->lg_derived = true;
	}
}

/* What the heap walk needs (vm/puc/objects.c): the sizes each type's
 * free function frees, and the links it follows.  Sizes that no DWARF
 * type holds are derived as the headers define them, said at each. */
static void heap_layout(struct lc_layout *l, Dwfl_Module *mod,
			struct type_search *ts)
{
	static const char *const lstate_files[] = { "lstate.c", "onelua.c" };
	Dwarf_Die *D = ts->dies, d;
	bool *F = ts->found;
	bool c51 = l->major == 501;

	l->clx.nupvalues = field(c51 ? &D[T_CLOSURE] : &D[T_LCLOSURE],
				 c51 ? F[T_CLOSURE] : F[T_LCLOSURE],
				 c51 ? "l.nupvalues" : "nupvalues");
	l->clx.upvals = field(c51 ? &D[T_CLOSURE] : &D[T_LCLOSURE],
			      c51 ? F[T_CLOSURE] : F[T_LCLOSURE],
			      c51 ? "l.upvals" : "upvals");
	l->clx.upvalue = field(c51 ? &D[T_CLOSURE] : &D[T_CCLOSURE],
			       c51 ? F[T_CLOSURE] : F[T_CCLOSURE],
			       c51 ? "c.upvalue" : "upvalue");
	l->clx.env = field(&D[T_CLOSURE], c51 && F[T_CLOSURE], "l.env");
	if (l->major <= 502) {
		l->udx.env = field(&D[T_UDATA], F[T_UDATA], "uv.env");
		l->udx.nuvalue = l->udx.uv = l->udx.user = l->udx.ttuv =
			(struct lc_field){ -1, 0 };
	} else {
		l->udx.env = (struct lc_field){ -1, 0 };
		l->udx.nuvalue = field(&D[T_UDATA], F[T_UDATA], "nuvalue");
		l->udx.uv = field(&D[T_UDATA], F[T_UDATA], "uv");
		l->udx.user = field(&D[T_UDATA], F[T_UDATA], "user_");
		l->udx.ttuv = field(&D[T_UDATA], F[T_UDATA], "ttuv_");
	}
	l->tabx.lastfree = field(&D[T_TABLE], F[T_TABLE], "lastfree");
	l->uvv.value = field(&D[T_UPVAL], F[T_UPVAL], "u.value");
	l->tsx.falloc = field(&D[T_TSTRING], F[T_TSTRING] && l->major >= 505,
			      "falloc");
	l->Gh.strt_hash = field(&D[T_GLOBAL], F[T_GLOBAL], "strt.hash");
	l->Gh.strt_size = field(&D[T_GLOBAL], F[T_GLOBAL], "strt.size");
	l->Gh.mt = field(&D[T_GLOBAL], F[T_GLOBAL], "mt");
	l->Gh.tmudata = field(&D[T_GLOBAL], F[T_GLOBAL] && c51, "tmudata");
	l->Gh.twups = field(&D[T_GLOBAL], F[T_GLOBAL], "twups");
	l->Lh.l_gt = field(&D[T_STATE], F[T_STATE] && c51, "l_gt");
	/* Arrays whose offsets alone are used: what DWARF gives as their
	 * size varies by compiler (0 for a flexible or [1] member in some
	 * builds), so none is kept. */
	l->clx.upvals.size = l->clx.upvalue.size = l->udx.uv.size = 0;
	l->Gh.mt.size = 0;
	l->sz_table = F[T_TABLE] ? lc_dwarf_type_size(&D[T_TABLE]) : 0;
	l->sz_proto = F[T_PROTO] ? lc_dwarf_type_size(&D[T_PROTO]) : 0;
	l->sz_upval = F[T_UPVAL] ? lc_dwarf_type_size(&D[T_UPVAL]) : 0;
	l->sz_global = F[T_GLOBAL] ? lc_dwarf_type_size(&D[T_GLOBAL]) : 0;
	l->sz_tstring = F[T_TSTRING] ? lc_dwarf_type_size(&D[T_TSTRING]) : 0;
	/* 5.2+ threads are an LX (lstate.c: the extra space, then the
	 * lua_State); 5.1 allocates the lua_State with LUAI_EXTRASPACE,
	 * which luaconf.h leaves 0. */
	l->sz_lx = l->sz_lstate;
	if (!c51 && lc_dwarf_private_struct(mod, lstate_files,
					    LC_ARRAY_SIZE(lstate_files), "LX",
					    &d))
		l->sz_lx = lc_dwarf_type_size(&d);
	else if (l->major >= 503 && l->sz_lstate)
		l->sz_lx = ((8 + l->sz_lstate) + 7) & ~7u;
	l->sz_udata0 = l->sz_uvalue = 0;
	switch (l->major) {
	case 501:
	case 502:
		l->sz_udata = F[T_UDATA] ? lc_dwarf_type_size(&D[T_UDATA]) : 0;
		break;
	case 503:
		/* union UUdata pads Udata to L_Umaxalign (8 with the
		 * default luaconf.h) where no DWARF has it. */
		l->sz_udata = F[T_UUDATA] ? lc_dwarf_type_size(&D[T_UUDATA]) :
			F[T_UDATA] ? (lc_dwarf_type_size(&D[T_UDATA]) + 7) & ~7u : 0;
		break;
	default:
		/* lobject.h udatamemoffset: offsetof(Udata, uv) + n UValues,
		 * or offsetof(Udata0, bindata), the header without gclist,
		 * 8-aligned (LUAI_MAXALIGN's members are 8-byte types). */
		l->sz_udata = LC_HAS(l->udx.uv) ? (uint32_t)l->udx.uv.off : 0;
		l->sz_uvalue = F[T_UVALUE] ? lc_dwarf_type_size(&D[T_UVALUE]) :
			l->sz_tvalue;
		if (LC_HAS(l->ud.metatable))
			l->sz_udata0 = ((uint32_t)l->ud.metatable.off + 8 + 7) & ~7u;
		break;
	}
}

/* No DWARF in the VM's module: the built-in layout of the release its
 * lua_ident names, unvalidated (l->builtin); or why there is none. */
static struct lc_error *builtin_layout(struct lc_program *t, Dwfl_Module *mod,
				       const char *mname, Dwarf_Addr mstart,
				       Dwarf_Addr mend, const char *ident,
				       struct lc_layout **ret)
{
	char buf[128], version[16];
	int release;
	const struct lc_layout *bi;
	struct lc_layout *l;
	struct lc_error *err;

	/* --layout: that release, whatever lua_ident says. */
	if (t->layout_release)
		snprintf(buf, sizeof(buf), "Lua %d.%d.%d",
			 t->layout_release / 10000, t->layout_release / 100 % 100,
			 t->layout_release % 100);
	else
		snprintf(buf, sizeof(buf), "%s", ident);
	if (!parse_ident(buf, &release, version, sizeof(version)))
		return lc_puc_no_dwarf_error(mod, mname, NULL, false);
	bi = lc_layout_builtin(release);
	if (!bi && t->layout_release)
		return lc_error_create(LC_ERR_INVALID,
			"--layout %s: luacore has no built-in layout of that release (it has every release 5.1.1-5.5.0)",
			version);
	if (!bi)
		return lc_puc_no_dwarf_error(mod, mname, version, true);
	l = malloc(sizeof(*l));
	if (!l)
		return &lc_error_nomem;
	*l = *bi;
	l->builtin = true;
	l->forced = t->layout_release != 0;
	l->module_path = lc_strdup_or_null(mname);
	l->module_start = mstart;
	l->module_end = mend;
	err = lc_layout_version(buf, release / 100, l);
	if (err) {
		lc_layout_destroy(l);
		return err;
	}
	*ret = l;
	return NULL;
}

static int first_module_cb(Dwfl_Module *mod, void **ud, const char *name,
			   Dwarf_Addr start, void *arg)
{
	(void)ud; (void)name; (void)start;
	*(Dwfl_Module **)arg = mod;
	return DWARF_CB_ABORT;
}

static int no_memory(void *arg, uint64_t addr, void *buf, size_t len)
{
	(void)arg; (void)addr; (void)buf; (void)len;
	return -1;
}

/* --types FILE: a program of FILE alone (its DWARF; no memory), and the
 * module the types are looked for in. */
static struct lc_error *types_module(const char *path, struct lc_program **aux,
				     Dwfl_Module **mod)
{
	struct lc_error *err = lc_program_create_callback(no_memory, NULL, aux);

	if (!err)
		err = lc_program_add_module(*aux, path, 0);
	*mod = NULL;
	if (!err && (*aux)->dwfl)
		dwfl_getmodules((*aux)->dwfl, first_module_cb, mod, 0);
	if (!err && !*mod)
		err = lc_error_create(LC_ERR_INVALID, "not an ELF file libdwfl can read");
	if (err) {
		struct lc_error *e = lc_error_create(LC_ERR_INVALID, "--types %s: %s",
						     path, lc_error_message(err));

		lc_error_destroy(err);
		lc_program_destroy(*aux);
		*aux = NULL;
		return e;
	}
	return NULL;
}

struct lc_error *lc_layout_open(struct lc_program *t, struct lc_layout **ret)
{
	static const char *const api_syms[] = { "lua_newstate", "luaV_execute",
						"lua_ident" };
	struct sym_search ss = { .names = api_syms, .nnames = 3,
				 .skip_luajit = true, .skip_wrappers = true };
	struct ident_search is = { 0 };
	struct type_search ts;
	struct lc_layout *l;
	struct lc_program *aux = NULL;	/* --types: the file's */
	Dwfl_Module *typemod;
	char ident[128];
	Dwarf_Die *D = ts.dies;
	bool *F = ts.found;
	const char *mname;
	Dwarf_Addr mstart, mend;

	if (!t->dwfl)
		return lc_error_create(LC_ERR_NOT_FOUND,
			"no modules to look for the Lua VM in");
	dwfl_getmodules(t->dwfl, find_symbol_cb, &ss, 0);
	if (!ss.mod && t->nmissing && !ss.luajit)
		return lc_error_create(LC_ERR_NOT_FOUND,
			"no Lua VM found: no file that could be read defines lua_newstate or luaV_execute, and %s%s, which the core names, cannot be read (see above)",
			t->missing[0].path, t->nmissing > 1 ? " and others" : "");
	if (!ss.mod) {
		/* Stripped: the module whose data holds lua_ident's text. */
		dwfl_getmodules(t->dwfl, find_ident_cb, &is, 0);
		ss.mod = is.mod;
	}
	if (!ss.mod && ss.luajit)
		return lc_puc_luajit_error(ss.luajit_what, ss.luajit_name);
	if (!ss.mod)
		return lc_error_create(LC_ERR_NOT_FOUND,
			"no module defines lua_newstate or luaV_execute, and none holds lua_ident's text: is Lua linked into this program?");
	mname = dwfl_module_info(ss.mod, NULL, &mstart, &mend, NULL, NULL,
				 NULL, NULL);
	typemod = ss.mod;
	{
		char what[32];

		if (lc_puc_luajit_symbols(ss.mod, what, sizeof(what)))
			return lc_puc_luajit_error(what, mname);
	}
	if (is.mod)
		snprintf(ident, sizeof(ident), "%s", is.text);
	else
		ident_text(t, ident, sizeof(ident));
	if (t->layout_release)
		return builtin_layout(t, ss.mod, mname, mstart, mend, ident, ret);
	if (t->types_path) {
		struct lc_error *err = types_module(t->types_path, &aux,
						    &typemod);

		if (err)
			return err;
	}
	memset(&ts, 0, sizeof(ts));
	find_types(typemod, &ts);
	if ((!F[T_STATE] || !F[T_CI]) && aux) {
		lc_program_destroy(aux);
		return lc_error_create(LC_ERR_INVALID,
			"--types %s: the file has no DWARF description of lua_State and CallInfo (compile the program's lstate.c with -g, or give its debug file)",
			t->types_path);
	}
	if (!F[T_STATE] || !F[T_CI])
		return builtin_layout(t, ss.mod, mname, mstart, mend, ident,
				      ret);

	l = calloc(1, sizeof(*l));
	if (!l) {
		lc_program_destroy(aux);
		return &lc_error_nomem;
	}
	if (aux && !(l->types_path = strdup(t->types_path))) {
		free(l);
		lc_program_destroy(aux);
		return &lc_error_nomem;
	}
	l->module_path = lc_strdup_or_null(mname);
	l->module_start = mstart;
	l->module_end = mend;

	/* Version: lua_ident, checked against the DWARF shape. */
	{
		char buf[128];
		Dwarf_Die *S = &D[T_STATE];
		int shape;
		int64_t off;
		Dwarf_Die mt;
		struct lc_error *err;

		snprintf(buf, sizeof(buf), "%s", ident);
		/* 5.5 embeds the main thread in global_State (mainth); 5.4's
		 * CallInfo has the u2 union (from 5.4.0; tbclist came in
		 * 5.4.3); 5.3's TString is a plain struct (5.2's a union
		 * with the fields in tsv; shrlen came in 5.3.1); 5.1 has a
		 * CallInfo array. */
		if (lc_dwarf_member(S, "base_ci", &off, &mt) &&
		    lc_dwarf_peel(&mt) && dwarf_tag(&mt) == DW_TAG_pointer_type)
			shape = 501;
		else if (F[T_GLOBAL] &&
			 lc_dwarf_member(&D[T_GLOBAL], "mainth", &off, &mt))
			shape = 505;
		else if (lc_dwarf_member(&D[T_CI], "u2", &off, &mt))
			shape = 504;
		else if (F[T_TSTRING] &&
			 lc_dwarf_member(&D[T_TSTRING], "hash", &off, &mt))
			shape = 503;
		else
			shape = 502;
		err = lc_layout_version(buf, shape, l);
		if (err) {
			lc_layout_destroy(l);
			lc_program_destroy(aux);
			return err;
		}
	}
	l->stkidrel = l->major >= 504 &&
		      lc_dwarf_member_is_union(&D[T_STATE], "top");

#define S(fld, path) l->L.fld = field(&D[T_STATE], F[T_STATE], path)
	S(tt, "tt"); S(status, "status"); S(l_G, "l_G"); S(ci, "ci");
	S(base_ci, "base_ci"); S(end_ci, "end_ci"); S(stack, "stack");
	S(stack_last, "stack_last"); S(top, "top"); S(savedpc, "savedpc");
	S(nCcalls, "nCcalls"); S(baseCcalls, "baseCcalls"); S(nny, "nny");
	S(size_ci, "size_ci"); S(stacksize, "stacksize");
	S(errorJmp, "errorJmp"); S(hook, "hook"); S(hookmask, "hookmask");
	S(allowhook, "allowhook"); S(basehookcount, "basehookcount");
	S(hookcount, "hookcount"); S(openupval, "openupval");
	S(tbclist, "tbclist"); S(oldpc, "oldpc"); S(base, "base");
#undef S
	if (F[T_GLOBAL]) {
		l->G.mainthread = field(&D[T_GLOBAL], true, "mainthread");
		l->G.mainth = field(&D[T_GLOBAL], true, "mainth.l");
		l->G.l_registry = field(&D[T_GLOBAL], true, "l_registry");
		l->G.gcstate = field(&D[T_GLOBAL], true, "gcstate");
		l->G.frealloc = field(&D[T_GLOBAL], true, "frealloc");
	} else {
		l->G.mainthread = l->G.mainth = l->G.l_registry =
			l->G.gcstate = l->G.frealloc = (struct lc_field){ -1, 0 };
	}
#define C(fld, path) l->ci.fld = field(&D[T_CI], true, path)
	C(func, "func"); C(top, "top"); C(previous, "previous"); C(next, "next");
	C(callstatus, "callstatus"); C(tailcalls, "tailcalls");
	C(nresults, "nresults"); C(extra, "extra");
	if (l->major == 502 && !LC_HAS(l->ci.extra)) {
		C(extra, "u.c.extra");	/* 5.2.0 */
		l->ci_extra_c_only = true;
	}
	if (l->major == 501) {
		C(savedpc, "savedpc"); C(base, "base");
		l->ci.k = (struct lc_field){ -1, 0 };
	} else {
		C(savedpc, "u.l.savedpc"); C(base, "u.l.base"); C(k, "u.c.k");
	}
#undef C
	l->sz_callinfo = lc_dwarf_type_size(&D[T_CI]);
	{
		Dwarf_Die *tv = F[T_TVALUE] ? &D[T_TVALUE] :
				F[T_LUA_TVALUE] ? &D[T_LUA_TVALUE] : NULL;

		l->tv.value = field(tv, tv != NULL, l->major == 501 ? "value" : "value_");
		l->tv.tt = field(tv, tv != NULL, l->major == 501 ? "tt" : "tt_");
		l->tv.n = field(tv, tv != NULL, l->major == 501 ? "value.n" : "value_.n");
		l->tv.i = field(tv, tv != NULL && l->major >= 503, "value_.i");
		l->sz_tvalue = tv ? lc_dwarf_type_size(tv) : 0;
		l->sz_stack_slot = F[T_STACKVALUE] ?
			lc_dwarf_type_size(&D[T_STACKVALUE]) : l->sz_tvalue;
	}
	if (l->major == 501) {
		l->cl.isC = field(&D[T_CLOSURE], F[T_CLOSURE], "c.isC");
		l->cl.p = field(&D[T_CLOSURE], F[T_CLOSURE], "l.p");
		l->cl.f = field(&D[T_CLOSURE], F[T_CLOSURE], "c.f");
	} else {
		l->cl.isC = (struct lc_field){ -1, 0 };
		l->cl.p = field(&D[T_LCLOSURE], F[T_LCLOSURE], "p");
		l->cl.f = field(&D[T_CCLOSURE], F[T_CCLOSURE], "f");
	}
#define P(fld) l->p.fld = field(&D[T_PROTO], F[T_PROTO], #fld)
	P(source); P(linedefined); P(lastlinedefined); P(code); P(sizecode);
	P(lineinfo); P(sizelineinfo); P(abslineinfo); P(sizeabslineinfo);
	P(k); P(sizek); P(locvars); P(sizelocvars); P(upvalues);
	P(sizeupvalues); P(numparams); P(is_vararg); P(maxstacksize);
	P(flag);	/* 5.5: PF_VAHID, PF_VATAB instead of is_vararg */
	P(p); P(sizep);
#undef P
	l->ali.pc = field(&D[T_ABSLINEINFO], F[T_ABSLINEINFO], "pc");
	l->ali.line = field(&D[T_ABSLINEINFO], F[T_ABSLINEINFO], "line");
	l->sz_abslineinfo = F[T_ABSLINEINFO] ?
		lc_dwarf_type_size(&D[T_ABSLINEINFO]) : 0;
	l->lv.varname = field(&D[T_LOCVAR], F[T_LOCVAR], "varname");
	l->lv.startpc = field(&D[T_LOCVAR], F[T_LOCVAR], "startpc");
	l->lv.endpc = field(&D[T_LOCVAR], F[T_LOCVAR], "endpc");
	l->sz_locvar = F[T_LOCVAR] ? lc_dwarf_type_size(&D[T_LOCVAR]) : 0;
	l->uvd.name = field(&D[T_UPVALDESC], F[T_UPVALDESC], "name");
	l->uvd.instack = field(&D[T_UPVALDESC], F[T_UPVALDESC], "instack");
	l->uvd.idx = field(&D[T_UPVALDESC], F[T_UPVALDESC], "idx");
	l->uvd.kind = field(&D[T_UPVALDESC], F[T_UPVALDESC], "kind");
	l->sz_upvaldesc = F[T_UPVALDESC] ? lc_dwarf_type_size(&D[T_UPVALDESC]) : 0;

	/* Strings: where the bytes start differs per version. */
	switch (l->major) {
	case 501:
	case 502:
		l->ts.tt = field(&D[T_TSTRING], F[T_TSTRING], "tsv.tt");
		l->ts.len = field(&D[T_TSTRING], F[T_TSTRING], "tsv.len");
		l->ts_contents = F[T_TSTRING] ? lc_dwarf_type_size(&D[T_TSTRING]) : 0;
		break;
	case 503:
		l->ts.tt = field(&D[T_TSTRING], F[T_TSTRING], "tt");
		l->ts.shrlen = field(&D[T_TSTRING], F[T_TSTRING], "shrlen");
		l->ts.lnglen = field(&D[T_TSTRING], F[T_TSTRING], "u.lnglen");
		/* 5.3.0 keeps one length for short and long strings. */
		if (!LC_HAS(l->ts.shrlen))
			l->ts.shrlen = l->ts.lnglen =
				field(&D[T_TSTRING], F[T_TSTRING], "len");
		/* getstr: the bytes follow the UTString union. */
		l->ts_contents = F[T_UTSTRING] ? lc_dwarf_type_size(&D[T_UTSTRING]) :
			F[T_TSTRING] ? (lc_dwarf_type_size(&D[T_TSTRING]) + 7u) & ~7u : 0;
		break;
	default:
		l->ts.tt = field(&D[T_TSTRING], F[T_TSTRING], "tt");
		l->ts.shrlen = field(&D[T_TSTRING], F[T_TSTRING], "shrlen");
		l->ts.lnglen = field(&D[T_TSTRING], F[T_TSTRING], "u.lnglen");
		/* 5.4: char contents[1] holds the bytes of every string.
		 * 5.5: char *contents points to a long string's bytes,
		 * and a short string's start where the pointer would be
		 * (lobject.h getshrstr, getlngstr); the type says which. */
		{
			int64_t off;
			Dwarf_Die mt;

			l->ts_lngptr = F[T_TSTRING] &&
				lc_dwarf_member(&D[T_TSTRING], "contents", &off,
					      &mt) &&
				lc_dwarf_peel(&mt) &&
				dwarf_tag(&mt) == DW_TAG_pointer_type;
		}
		{
			struct lc_field c = field(&D[T_TSTRING], F[T_TSTRING],
						  "contents");

			l->ts_contents = c.off > 0 ? (uint32_t)c.off : 0;
		}
		break;
	}

	/* Tables, for the registry and package.loaded. */
	{
		Dwarf_Die *T = &D[T_TABLE], *N = &D[T_NODE];
		bool ft = F[T_TABLE], fn = F[T_NODE];

		l->tab.flags = field(T, ft, "flags");
		l->tab.lsizenode = field(T, ft, "lsizenode");
		l->tab.sizearray = field(T, ft, l->major == 504 ? "alimit" :
					 l->major >= 505 ? "asize" : "sizearray");
		l->tab.array = field(T, ft, "array");
		l->tab.node = field(T, ft, "node");
		l->tab.metatable = field(T, ft, "metatable");
		l->sz_node = fn ? lc_dwarf_type_size(N) : 0;
		l->node.val = field(N, fn, "i_val");
		switch (l->major) {
		case 501:
			l->node.key_val = field(N, fn, "i_key.nk.value");
			l->node.key_tt = field(N, fn, "i_key.nk.tt");
			break;
		case 502:
		case 503:
			l->node.key_val = field(N, fn, "i_key.nk.value_");
			l->node.key_tt = field(N, fn, "i_key.nk.tt_");
			break;
		default:
			l->node.key_val = field(N, fn, "u.key_val");
			l->node.key_tt = field(N, fn, "u.key_tt");
			break;
		}
		l->uv.v = field(&D[T_UPVAL], F[T_UPVAL], "v");
		if (l->major <= 502) {
			l->ud.len = field(&D[T_UDATA], F[T_UDATA], "uv.len");
			l->ud.metatable = field(&D[T_UDATA], F[T_UDATA], "uv.metatable");
		} else {
			l->ud.len = field(&D[T_UDATA], F[T_UDATA], "len");
			l->ud.metatable = field(&D[T_UDATA], F[T_UDATA], "metatable");
		}
	}

	vm_layout(l, typemod, &ts);
	heap_layout(l, typemod, &ts);
	lc_log(LC_LOG_VERBOSE, "Lua %s in %s: layout from the DWARF of %s (%s)",
	       l->version, l->module_path ? l->module_path : "?",
	       aux ? t->types_path : "it",
	       F[T_STATE] ? "lua_State found" : "no lua_State");
	/* The file's DWARF is read: what the layout keeps is its own. */
	lc_program_destroy(aux);

	/* The fields no decoding can do without. */
	{
		const char *missing = NULL;

		if (!LC_HAS(l->L.tt)) missing = "lua_State.tt";
		else if (!LC_HAS(l->L.l_G)) missing = "lua_State.l_G";
		else if (!LC_HAS(l->L.ci)) missing = "lua_State.ci";
		else if (!LC_HAS(l->L.stack)) missing = "lua_State.stack";
		else if (!LC_HAS(l->L.base_ci)) missing = "lua_State.base_ci";
		else if (!LC_HAS(l->ci.func)) missing = "CallInfo.func";
		else if (!LC_HAS(l->ci.savedpc)) missing = "CallInfo savedpc";
		else if (!LC_HAS(l->G.mainthread) && !LC_HAS(l->G.mainth))
			missing = l->major >= 505 ? "global_State.mainth" :
				"global_State.mainthread";
		else if (!l->sz_tvalue || !LC_HAS(l->tv.tt)) missing = "TValue";
		else if (!LC_HAS(l->cl.p) || !LC_HAS(l->cl.f)) missing = "closures";
		else if (!LC_HAS(l->p.code) || !LC_HAS(l->p.source)) missing = "Proto";
		else if (!l->ts_contents) missing = "TString";
		else if (l->major == 501 && !l->sz_callinfo) missing = "CallInfo size";
		if (missing) {
			struct lc_error *err = lc_error_create(LC_ERR_UNSUPPORTED,
				"unknown Lua layout in %s (Lua %s): %s not found in its DWARF",
				l->module_path ? l->module_path : "?",
				l->version, missing);
			lc_layout_destroy(l);
			return err;
		}
	}
	*ret = l;
	return NULL;
}

void lc_layout_destroy(struct lc_layout *l)
{
	if (!l)
		return;
	free(l->module_path);
	free(l->types_path);
	free(l);
}
