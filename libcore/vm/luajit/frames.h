/* A LuaJIT thread's frames, read from its data stack (GC64, two-slot
 * frames), as LuaJIT's own debug library sees them (lj_debug.c
 * lj_debug_frame, debug_framepc, lj_debug_line): dummy frames and the
 * pseudo-frame below each vararg frame skipped, each Lua frame's position
 * taken from the frame above it (its return PC, a continuation's PC, or
 * the C frame chain).
 *
 * Reads the target through mem; every read is checked and every loop
 * bounded.  What a walk returns is the caller's (lc_lj_frames_free). */
#ifndef LC_LJ_FRAMES_H
#define LC_LJ_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem/memory.h"
#include "vm/luajit/layout.h"

struct lc_lj_frame {
	uint64_t slot;		/* the frame's link slot (base - 8) */
	uint64_t func;		/* its GCfunc */
	unsigned link;		/* the link's frame type (FRAME_*: low 3
				   bits, or 0 for a Lua return PC) */
	uint8_t ffid;		/* 0 Lua, 1 C, else a fast function */
	uint64_t proto;		/* Lua: its GCproto */
	uint64_t cfunc;		/* C and fast functions: GCfuncC.f */
	bool asm_ff;		/* a fast function the interpreter's own
				   code runs (its bytecode is not FUNCC):
				   no machine frame of its own unless it
				   falls back to its C handler (cfunc) */
	int64_t pos;		/* Lua: bytecode position, -1 unknown */
	int64_t line;		/* Lua: current line, -1 unknown */
	bool bad_func;		/* its function's ffid and pc disagree: a
				   Lua function's pc points past a GCproto
				   header, a C or fast function's does not */
	bool bad_line;		/* its proto's line table did not read
				   whole or plausibly: line unknown */
	bool in_trace;		/* its PC points into a trace (JLOOP
				   exit): the line is the trace's start */
	uint64_t prev;		/* the slot of the frame that called it
				   (past a vararg frame's pseudo-frame),
				   or 0 */
};

struct lc_lj_walk {
	struct lc_lj_frame *v;	/* innermost first */
	size_t n;
	bool partial;		/* a read failed, the chain was broken or
				   longer than max */
	const char *why;	/* what broke it (static), or NULL */
};

/* The frames of thread L whose innermost frame's base is base (L->base
 * when the thread is not running Lua code: the VM wrote it when it left
 * for C), at most max.  pc: the interpreter's PC register while it runs
 * the innermost frame (the next instruction), or 0: the PC its C frame
 * saved.  NULL, or LC_ERR_NOMEM. */
struct lc_error *lc_lj_walk(struct lc_memory *m, const struct lc_lj_layout *l,
			    uint64_t L, uint64_t base, uint64_t pc, size_t max,
			    struct lc_lj_walk *ret);
void lc_lj_walk_free(struct lc_lj_walk *w);

/* The chunk name of proto (its GCstr's bytes) into buf, NUL-terminated
 * and cut to size; false when it cannot be read. */
bool lc_lj_chunkname(struct lc_memory *m, const struct lc_lj_layout *l,
		     uint64_t proto, char *buf, size_t size);

/* The line of bytecode position pos of proto (lj_debug_line), -1 when
 * unknown (no position, stripped bytecode), -2 when its line table does
 * not read whole or plausibly. */
int64_t lc_lj_line(struct lc_memory *m, const struct lc_lj_layout *l,
		   uint64_t proto, int64_t pos);

/* [addr, addr + len) lies in proto pt's own block, which holds its
 * bytecode, constants and debug info (lj_parse.c fs_finish, lj_bcread.c
 * bcread_proto: sizept bytes); true when the build has no sizept. */
bool lc_lj_in_proto(struct lc_memory *m, const struct lc_lj_layout *l,
		    uint64_t pt, uint64_t addr, uint64_t len);

/* The name of the function called at bytecode position pos of proto pt
 * (vm/luajit/names.c), as LuaJIT's debug library gives it: the name
 * into buf, and what it is ("local", "global", "field", "method",
 * "upvalue", "metamethod"; static), or NULL when the bytecode does not
 * tell.  g: the VM's global_State (metamethod names).  *bad (may be
 * NULL) is set when the bytecode names something the data cannot give
 * (names.c). */
const char *lc_lj_funcname(struct lc_memory *m, const struct lc_lj_layout *l,
			   uint64_t g, uint64_t pt, int64_t pos, char *buf,
			   size_t size, bool *bad);

/* The name of the slot-th local variable live at bytecode position pc
 * of proto pt (lj_debug.c debug_varname: in the order they were
 * declared, from 0) into buf; false when there is none, and then *bad
 * (may be NULL) if the table could not be read whole or the name is no
 * identifier. */
bool lc_lj_varname(struct lc_memory *m, const struct lc_lj_layout *l,
		   uint64_t pt, uint32_t pc, uint32_t slot, char *buf,
		   size_t size, bool *bad);

/* The name of upvalue idx of proto pt (lj_debug.c lj_debug_uvname; ""
 * where the proto keeps no names) into buf; false when idx is past its
 * upvalues or unreadable, and then *bad (may be NULL). */
bool lc_lj_uvname(struct lc_memory *m, const struct lc_lj_layout *l,
		  uint64_t pt, uint32_t idx, char *buf, size_t size, bool *bad);

/* The value of the TValue at addr (GC64), as the report shows values
 * (luacore.h struct lc_value: a Lua literal, "table: 0x...", "function:
 * @x.lua:12"); p names C functions.  Never fails: what is unreadable is
 * marked partial.  (vm/luajit/values.c) */
struct lc_program;
struct lc_value;
void lc_lj_value(struct lc_program *p, const struct lc_lj_layout *l,
		 uint64_t addr, struct lc_value *v);

/* The object at addr for lua-value (luacore.h lc_object_create): a
 * TValue's value, or a GC object's by its header; a table's entries (at
 * most max), a Lua function's upvalues, a string's bytes.  Never fails
 * but for memory: what is unreadable is marked partial.
 * (vm/luajit/values.c) */
enum lc_object_kind;
struct lc_object;
struct lc_error *lc_lj_object(struct lc_program *p,
			      const struct lc_lj_layout *l,
			      enum lc_object_kind kind, uint64_t addr,
			      size_t max, struct lc_object **ret);

/* The name of w->v[i] from its caller's bytecode (lc_lj_funcname), or
 * NULL: its caller is not a Lua frame with a known position (or *bad,
 * may be NULL: the caller's data could not give the name). */
const char *lc_lj_frame_name(struct lc_memory *m, const struct lc_lj_layout *l,
			     uint64_t g, const struct lc_lj_walk *w, size_t i,
			     char *buf, size_t size, bool *bad);

#endif /* LC_LJ_FRAMES_H */
