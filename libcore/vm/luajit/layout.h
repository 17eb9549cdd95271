/* LuaJIT 2.1 struct layouts, read from the DWARF of the module holding
 * the VM, and what tells the builds apart.
 *
 * Upstream LuaJIT and OpenResty's fork (luajit2) differ in lua_State,
 * global_State, GG_State and jit_State (vm/luajit/lj.h lists what
 * differs); upstream itself moved fields in 2025 (vmthref).  Every field
 * is looked up by name, never copied from a header; a field the build
 * does not have has off == -1.  The constants that are #defines in
 * LuaJIT (type tags, cframe offsets) are in lj.h, each with the source
 * it mirrors.  Owned by whoever opened it (lc_lj_layout_destroy). */
#ifndef LC_LJ_LAYOUT_H
#define LC_LJ_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "mem/memory.h"
#include "prog/program.h"

struct lc_lj_field {
	int32_t off;		/* byte offset, -1 if the build has none */
	uint32_t size;		/* byte size of the member */
};

#define LC_LJ_HAS(f) ((f).off >= 0)

/* The fork, from what the layout holds (lua_State.exdata: OpenResty's). */
enum lc_lj_fork {
	LC_LJ_UPSTREAM,
	LC_LJ_OPENRESTY,
};

struct lc_lj_layout {
	enum lc_lj_fork fork;
	bool gc64;		/* 64-bit GC references (IRT_PGC is IRT_P64) */
	bool fr2;		/* two-slot frames (GC64 implies it) */
	bool vmthread;		/* global_State.vmthref (upstream, 2025-11) */
	char *module_path;	/* the module holding the VM */
	uint64_t module_start, module_end;
	char *desc;		/* "LuaJIT 2.1 (OpenResty's luajit2, GC64)" */

	uint32_t sz_lstate, sz_gstate, sz_proto, sz_str, sz_tvalue, sz_node;
	struct {
		struct lc_lj_field gct, marked, nextgc, dummy_ffid, status,
			glref, gclist, base, top, maxstack, stack, openupval,
			env, cframe, stacksize, exdata;
	} L;
	struct {
		struct lc_lj_field gc_total, gc_threshold, gc_state, gc_root,
			gc_mmudata, str_tab, str_mask, str_num, strempty,
			hookmask, vmstate, mainthref, registrytv, vmthref,
			cur_L, jit_base, gcroot, allocf, saved_jit_base;
	} G;
	struct {
		/* GG_State: the main thread, the global_State, the JIT
		 * state and the dispatch table; off of g is GG_OFS(g). */
		struct lc_lj_field L, g, J, dispatch;
	} GG;
	struct {
		struct lc_lj_field gct, numparams, framesize, sizebc, k, uv,
			sizekgc, sizekn, sizept, sizeuv, flags, trace,
			chunkname, firstline, numline, lineinfo, uvinfo,
			varinfo;
	} pt;
	struct {
		struct lc_lj_field gct, ffid, nupvalues, env, pc, f,
			upvalue, uvptr;
	} fn;
	struct {
		struct lc_lj_field gct, len, hash;
	} str;
	struct {
		struct lc_lj_field gct, v, closed;	/* GCupval: v points to
						   its value */
	} uv;
	struct {
		/* GCtab: the array part (asize slots) and the hash part
		 * (hmask + 1 Nodes); a Node's value and key; colo: the
		 * array slots allocated with the table (lj_tab.c), and the
		 * metatable. */
		struct lc_lj_field array, asize, node, hmask, val, key, colo,
			metatable;
	} tab;
	struct {
		struct lc_lj_field len, metatable, env;	/* GCudata */
	} ud;
	/* The heap walk's sizes (vm/luajit/objects.c): GCtab, GCfuncL,
	 * GCfuncC, GCupval, GCudata, GCcdata, GCtrace, GG_State. */
	uint32_t sz_tab, sz_funcl, sz_funcc, sz_upval, sz_udata, sz_cdata,
		sz_trace, sz_gg;
	struct {
		struct lc_lj_field trace, sizetrace, state, freetrace, flags;
	} J;
	struct {
		struct lc_lj_field gct, nsnap, nins, snap, snapmap, startpt,
			startpc, mcode, szmcode, mcloop, traceno, link, root,
			spadjust, parent, exitno, nsnapmap, ir, nk;
	} tr;
	struct {
		struct lc_lj_field mcofs, ref, mapofs, nent, nslots, topslot,
			count;
		uint32_t size;
	} snap;

	/* Enumerators the decoder needs, from DWARF (lj_obj.h LJ_VMST_*,
	 * lj_frame.h FRAME_*, lj_obj.h GCROOT_*); -1 when absent. */
	int64_t vmst_interp, vmst_c, vmst_gc, vmst_exit, vmst_record,
		vmst_opt, vmst_asm, vmst_max;
	int64_t frame_lua, frame_c, frame_cont, frame_varg, frame_luap,
		frame_cp, frame_pcall, frame_pcallh;
	int64_t gcroot_mmname, gcroot_max;
	/* lj_jit.h TraceState: the compiler's jit_State.state. */
	int64_t trace_idle, trace_active, trace_record, trace_record_1st,
		trace_start, trace_end, trace_asm, trace_err;
	/* lj_ir.h IROp: a constant's opcode in a trace's IR. */
	int64_t ir_kgc, ir_knum;
	/* Bytecode (lj_bc.h BCOp, BCMode; lj_obj.h MMS; lj_debug.h
	 * VARNAME_*), for names from the caller's bytecode. */
	int64_t bc_mov, bc_gget, bc_tgets, bc_uget, bc_knil, bc_iterc,
		bc_max, bcm_dst, bcm_base, mm_call, mm_max, varname_max;
	/* The first instruction of a C function (its GCfuncC.pc points to
	 * one of the VM's: lj_lib.c, lj_func.c); a fast function's is its
	 * own bytecode, run by the interpreter's code. */
	int64_t bc_funcc, bc_funccw;
	/* lj_bc_mode[] (lj_bc.c): its address in the module, 0 if the
	 * symbol is not found. */
	uint64_t bc_mode;
	/* The interpreter's machine code (lj_vm.S, which buildvm makes:
	 * from lj_vm_asm_begin to the end of the call frame information
	 * that covers it; its bytecode handlers, fast functions and entry
	 * points from C are all one frame), 0 and 0 when not found. */
	uint64_t vm_start, vm_end;
	/* lj_BC_JLOOP: where the interpreter enters a trace (0: unknown). */
	uint64_t vm_jloop;
	/* The interpreter's own subroutines, entered by a call inside its
	 * frame (vm_x64.dasc: call ->vm_mod, ->vm_floor_sse, ...), which its
	 * one unwind entry does not describe: their [start, end), 0 none. */
	uint64_t vm_sub[4][2];
	/* "2.1.1787165859": the version in the name of the symbol
	 * luaJIT_version_2_1_... (lj_dispatch.c), "2.1" without one. */
	char version[48];
};

/* Read field f of the object at obj (an unsigned integer of f.size
 * bytes): 0, or -1 when the build has no such field or the read fails. */
static inline int lc_lj_field_u(struct lc_memory *m, uint64_t obj,
				struct lc_lj_field f, uint64_t *v)
{
	if (!LC_LJ_HAS(f) || f.size == 0 || f.size > 8)
		return -1;
	return lc_read_uint(m, obj + (uint64_t)f.off, f.size, v);
}

/* The LuaJIT VM of t, if any: the module exporting LuaJIT's own API
 * (luaJIT_setmode).  LC_ERR_NOT_FOUND when t has none; an error saying
 * what is missing when the module has no DWARF describing it. */
struct lc_error *lc_lj_layout_open(struct lc_program *t,
				   struct lc_lj_layout **ret);
void lc_lj_layout_destroy(struct lc_lj_layout *l);

/* Each field and enumerator as "name offset size" lines (offset -1:
 * absent), for tests that hold them against gdb's view of the same
 * build; malloc'd, NULL when out of memory. */
char *lc_lj_layout_dump(const struct lc_lj_layout *l);

#endif /* LC_LJ_LAYOUT_H */
