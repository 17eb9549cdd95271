/* The members of struct lc_layout (vm/puc/layout.h) that a Lua release
 * and build configuration fix: everything but where the VM was found
 * (module_*) and the version decision (release, major, version*).
 * FIELD(m) names a struct lc_field, SCALAR(m) a number or a flag.
 *
 * The built-in layouts (builtin-layouts.c) are tables of these; their
 * generator (fixtures/layouts/dump.c) prints and compares them by this
 * list, and checks that the list covers the struct: a member added to
 * struct lc_layout must be added here. */
#ifndef LC_LAYOUT_MEMBERS_H
#define LC_LAYOUT_MEMBERS_H

#define LC_LAYOUT_MEMBERS(FIELD, SCALAR) \
	SCALAR(stkidrel) SCALAR(ci_extra_c_only) SCALAR(ts_lngptr) \
	SCALAR(sz_stack_slot) SCALAR(sz_tvalue) SCALAR(sz_callinfo) \
	SCALAR(sz_locvar) SCALAR(sz_upvaldesc) SCALAR(sz_abslineinfo) \
	SCALAR(ts_contents) SCALAR(sz_node) SCALAR(sz_lstate) \
	SCALAR(lg_g_minus_l) SCALAR(lg_derived) FIELD(L.tt) FIELD(L.status) \
	FIELD(L.l_G) FIELD(L.ci) FIELD(L.base_ci) FIELD(L.end_ci) \
	FIELD(L.stack) FIELD(L.stack_last) FIELD(L.top) FIELD(L.savedpc) \
	FIELD(L.nCcalls) FIELD(L.baseCcalls) FIELD(L.nny) FIELD(L.size_ci) \
	FIELD(L.stacksize) FIELD(L.errorJmp) FIELD(L.hook) FIELD(L.hookmask) \
	FIELD(L.allowhook) FIELD(L.basehookcount) FIELD(L.hookcount) \
	FIELD(L.openupval) FIELD(L.tbclist) FIELD(L.oldpc) FIELD(L.base) \
	FIELD(G.mainthread) FIELD(G.mainth) FIELD(G.l_registry) \
	FIELD(G.gcstate) FIELD(G.frealloc) FIELD(ci.func) FIELD(ci.top) \
	FIELD(ci.previous) FIELD(ci.next) FIELD(ci.savedpc) FIELD(ci.base) \
	FIELD(ci.callstatus) FIELD(ci.tailcalls) FIELD(ci.nresults) \
	FIELD(ci.extra) FIELD(ci.k) FIELD(tv.value) FIELD(tv.tt) FIELD(tv.n) \
	FIELD(tv.i) FIELD(cl.isC) \
	FIELD(cl.p) FIELD(cl.f) FIELD(p.source) FIELD(p.linedefined) \
	FIELD(p.lastlinedefined) FIELD(p.code) FIELD(p.sizecode) \
	FIELD(p.lineinfo) FIELD(p.sizelineinfo) FIELD(p.abslineinfo) \
	FIELD(p.sizeabslineinfo) FIELD(p.k) FIELD(p.sizek) FIELD(p.locvars) \
	FIELD(p.sizelocvars) FIELD(p.upvalues) FIELD(p.sizeupvalues) \
	FIELD(p.numparams) FIELD(p.is_vararg) FIELD(p.maxstacksize) \
	FIELD(p.flag) FIELD(p.p) FIELD(p.sizep) FIELD(ali.pc) FIELD(ali.line) \
	FIELD(lv.varname) FIELD(lv.startpc) FIELD(lv.endpc) FIELD(uvd.name) \
	FIELD(uvd.instack) FIELD(uvd.idx) FIELD(uvd.kind) FIELD(ts.tt) \
	FIELD(ts.len) FIELD(ts.shrlen) FIELD(ts.lnglen) FIELD(tab.flags) \
	FIELD(tab.lsizenode) FIELD(tab.sizearray) FIELD(tab.array) \
	FIELD(tab.node) FIELD(tab.metatable) FIELD(node.val) \
	FIELD(node.key_val) FIELD(node.key_tt) FIELD(uv.v) FIELD(ud.len) \
	FIELD(ud.metatable) FIELD(Gx.totalbytes) FIELD(Gx.GCtotalbytes) \
	FIELD(Gx.GCdebt) FIELD(Gx.GCestimate) FIELD(Gx.estimate) \
	FIELD(Gx.gckind) FIELD(Gx.gcemergency) FIELD(Gx.gcpause) \
	FIELD(Gx.gcstepmul) FIELD(Gx.gcstepsize) FIELD(Gx.genminormul) \
	FIELD(Gx.genmajormul) FIELD(Gx.gcmajorinc) FIELD(Gx.gcparams) \
	FIELD(Gx.Cstacklimit) FIELD(Gx.rootgc) FIELD(Gx.allgc) \
	FIELD(Gx.finobj) FIELD(Gx.tobefnz) FIELD(Gx.fixedgc) FIELD(Lx.next) \
	FIELD(Lx.nci) FIELD(uvx.open_next) FIELD(lj.previous) FIELD(lj.status) \
	FIELD(clx.nupvalues) FIELD(clx.upvals) FIELD(clx.upvalue) \
	FIELD(clx.env) FIELD(udx.nuvalue) FIELD(udx.uv) FIELD(udx.env) \
	FIELD(udx.user) FIELD(udx.ttuv) FIELD(tabx.lastfree) FIELD(uvv.value) \
	FIELD(tsx.falloc) FIELD(Gh.strt_hash) FIELD(Gh.strt_size) FIELD(Gh.mt) \
	FIELD(Gh.tmudata) FIELD(Gh.twups) FIELD(Lh.l_gt) SCALAR(sz_table) \
	SCALAR(sz_proto) SCALAR(sz_upval) SCALAR(sz_global) SCALAR(sz_lx) \
	SCALAR(sz_udata) SCALAR(sz_udata0) SCALAR(sz_uvalue) SCALAR(sz_tstring)

#endif /* LC_LAYOUT_MEMBERS_H */
