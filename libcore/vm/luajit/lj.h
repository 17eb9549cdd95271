/* LuaJIT 2.1's #define constants the decoder needs, for x86_64 with GC64
 * (two-slot frames) outside Windows: DWARF does not have them.  Each names
 * the source it mirrors; upstream v2.1 (1ee778a4) and OpenResty's
 * v2.1-20240314 agree on every one. */
#ifndef LC_LJ_H
#define LC_LJ_H

#include <stdint.h>

/* lj_obj.h: type tags, stored inverted (~LJ_T*) in GCHeader.gct and in
 * a TValue's top 17 bits (itype: it64 >> 47). */
#define LC_LJ_TSTR	4u	/* ~LJ_TSTR */
#define LC_LJ_TTHREAD	6u	/* ~LJ_TTHREAD */
#define LC_LJ_TPROTO	7u	/* ~LJ_TPROTO */
#define LC_LJ_TFUNC	8u	/* ~LJ_TFUNC */
#define LC_LJ_TTRACE	9u	/* ~LJ_TTRACE */
#define LC_LJ_TUPVAL	5u	/* ~LJ_TUPVAL */
#define LC_LJ_TCDATA	10u	/* ~LJ_TCDATA */
#define LC_LJ_TTAB	11u	/* ~LJ_TTAB */
#define LC_LJ_TUDATA	12u	/* ~LJ_TUDATA */
/* lj_obj.h LJ_GCVMASK: a GC pointer in a TValue is its low 47 bits. */
#define LC_LJ_GCVMASK	((UINT64_C(1) << 47) - 1)

/* lj_obj.h FF_LUA, FF_C: GCfunc.ffid of a Lua function and of a C
 * function; higher ids are fast functions (per build: lj_ffdef.h). */
#define LC_LJ_FF_LUA	0
#define LC_LJ_FF_C	1

/* lj_frame.h: the frame type in a link's low bits (FRAME_TYPE 3: Lua
 * when 0, the link then being a return PC; FRAME_TYPEP 7 otherwise). */
#define LC_LJ_FRAME_TYPE	3
#define LC_LJ_FRAME_TYPEP	7

/* lj_frame.h, x64 non-Windows with GC64: the C frame (cframe) the VM
 * pushes at each entry from C, and the flags in L->cframe. */
#define LC_LJ_CFRAME_OFS_PREV	32
#define LC_LJ_CFRAME_OFS_PC	24
#define LC_LJ_CFRAME_OFS_L	16
#define LC_LJ_CFRAME_OFS_ERRF	12
#define LC_LJ_CFRAME_OFS_NRES	8
#define LC_LJ_CFRAME_RAWMASK	(~UINT64_C(3))	/* CFRAME_RESUME|UNWIND_FF */
#define LC_LJ_CFRAME_RESUME	1	/* cframe_canyield: entered by a resume */
/* lj_frame.h CFRAME_SIZE_JIT - CFRAME_SIZE: what vm_x64.dasc BC_JLOOP
 * pushes (sub rsp, 16: r12 and r13) before it jumps into a trace, whose
 * own spill area (GCtrace.spadjust) lies below that. */
#define LC_LJ_CFRAME_JIT_EXTRA	16

/* lj_obj.h PROTO_VARARG: GCproto.flags of a vararg function; lj_parse.c
 * lj_parse sets it on every main chunk (firstline 0). */
#define LC_LJ_PROTO_VARARG	0x02u

/* lj_jit.h JIT_F_ON: jit_State.flags while the compiler is on (jit.on,
 * jit.off, luaJIT_setmode). */
#define LC_LJ_JIT_F_ON		0x1u

/* lj_ir.h: a trace's IR, x86_64: an IRIns is 8 bytes, its opcode (o) the
 * byte at offset 5; T->ir is biased, instructions from REF_BIAS up and
 * constants below; a 64-bit constant (IR_KNUM, and IR_KGC with GC64)
 * keeps its value in the next slot (ir_knum, ir_kgc). */
#define LC_LJ_IRINS_SIZE	8
#define LC_LJ_IRINS_OP		5
#define LC_LJ_REF_BIAS		0x8000u
/* lj_jit.h SnapEntry: slot << 24 | flags | IR ref (16 bits); SNAP_FRAME
 * marks a frame's link slot (FR2: its value a KNUM constant). */
#define LC_LJ_SNAP_SLOT(sn)	((sn) >> 24)
#define LC_LJ_SNAP_REF(sn)	((sn) & 0xffffu)
#define LC_LJ_SNAP_FRAME	0x010000u
#define LC_LJ_SNAP_NORESTORE	0x040000u

/* lj_bc.h: an instruction's opcode and operands. */
#define LC_LJ_BC_OP(ins)	((ins) & 0xff)
#define LC_LJ_BC_A(ins)	(((ins) >> 8) & 0xff)
#define LC_LJ_BC_B(ins)	((ins) >> 24)
#define LC_LJ_BC_C(ins)	(((ins) >> 16) & 0xff)
#define LC_LJ_BC_D(ins)	((ins) >> 16)
/* lj_bc.h bcmode_a, bcmode_mm: fields of lj_bc_mode[op]. */
#define LC_LJ_BCMODE_A(m)	((m) & 7)
#define LC_LJ_BCMODE_MM(m)	((m) >> 11)

/* lj_debug.h VARNAMEDEF: the names of the internal variables, in the
 * order of their VARNAME_* numbers (1 up; 0 ends a varinfo). */
#define LC_LJ_VARNAMES { "(for index)", "(for limit)", "(for step)", \
			 "(for generator)", "(for state)", "(for control)" }

#endif /* LC_LJ_H */
