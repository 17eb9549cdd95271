/* Lua values for display: TValues, a frame's locals, varargs and
 * upvalues, and a lua_State's data stack (Lua 5.1-5.4).
 *
 * Internal to libluacore, not installed.  Everything read from the target
 * is untrusted: tags, lengths, counts and pointers are checked or bounded,
 * and whatever cannot be read gives a value of type "?" (or a known type
 * with partial set), never a crash or an unbounded read.
 *
 * Ownership: an lc_value filled here owns its text and str (malloc'd;
 * either may be NULL when memory ran out, which also sets partial).
 * Release one value with lc_value_deinit.  The arrays returned by
 * lc_lua_frame_vars and lc_lua_stack_slots are malloc'd and own their
 * names and values; free them with lc_vars_free / lc_slots_free (or free
 * each member with lc_value_deinit and free(name), then the array).
 *
 * Offsets all come from the layout (DWARF) except three the layout does
 * not have yet, derived from DWARF-known neighbours (tests/check_values.c
 * checks them against the real DWARF of 5.1, 5.3 and 5.4):
 *   Table.lastfree        = Table.node + 8            (5.1-5.4)
 *   LClosure.upvals[0]    = LClosure.p + 8            (5.1 l.p; 5.2-5.4 p)
 *   CallInfo.u.l.nextraargs = CallInfo.u.l.savedpc + 12 (5.4: after the
 *                           int-sized 'trap')
 * layout.c should provide tab.lastfree, cl.upvals and ci.nextraargs. */
#ifndef LC_LUA_VALUES_H
#define LC_LUA_VALUES_H

#include "vm/vm.h"
#include "vm/puc/puc.h"

/* The longest text of a string, function source or other value (bytes,
 * without the NUL): longer strings are cut on a character boundary and
 * marked with "..." after the closing quote. */
#define LC_VALUE_TEXT_MAX	60
/* Bytes of a string kept in lc_value.str. */
#define LC_VALUE_STR_MAX	4096
/* Varargs listed per frame; more are left out. */
#define LC_MAX_VARARGS		1000
/* Slots of one data stack (5.2+ LUAI_MAXSTACK is 1000000). */
#define LC_MAX_SLOTS		1100000

/* Decode the TValue (or 5.4 StackValue) at tvalue_addr.  *ret is
 * overwritten (not freed first).  Renders per version:
 *   nil (5.4 empty and abstract-key variants too); true/false;
 *   numbers as Lua's tostring: "%.14g", and from 5.3 on a float with an
 *     integral value gets ".0" ("1.0"), integers plain ("42");
 *   strings quoted and escaped (\" \\ \n \r \t \a \b \f \v, other control
 *     bytes and bytes that are not valid UTF-8 as \ddd decimal), at most
 *     LC_VALUE_TEXT_MAX bytes in all ("abc"... when cut); len is the full
 *     length as stored, str/strlen the first LC_VALUE_STR_MAX bytes.  A
 *     string whose bytes or terminating NUL cannot be read is partial;
 *   tables "table: 0x..." with len the array size (5.4: luaH_realasize),
 *     hsize the node count (0 for the shared dummy node), metatable;
 *   Lua closures "function: SOURCE:LINEDEFINED" (SOURCE as the Proto
 *     stores it for "@file" and "=name" chunks, [string "..."] for code
 *     strings), addr the closure; C closures and light C functions
 *     "function: [C] symbol" (or "function: [C] 0x..."), addr the
 *     closure (a GC object, as tostring shows it) or, for a light C
 *     function, the C function pointer;
 *   full userdata "userdata: 0x..." with len its size and its metatable;
 *     light userdata "userdata: 0x..." (type "lightuserdata");
 *   threads "thread: 0x... (status N)" with N the raw L->status;
 *   anything else type "?", partial. */
/* The number format VM g shows: math.pi (every release's math library
 * has it) read as a double (*nsize 8) or a float (4), math.maxinteger
 * (5.3+) as a 64-bit (*isize 8) or 32-bit (4) integer; 0 where the
 * library or the field is not there.  -1, with why said, when a value is
 * neither: the layout does not read this build's numbers. */
int lc_lua_number_format(struct lc_lua_ctx *ctx, uint64_t g, unsigned *nsize,
			 unsigned *isize, char *why, size_t size);

void lc_lua_value(struct lc_lua_ctx *ctx, uint64_t tvalue_addr,
		  struct lc_value *ret);

/* The same for a TValue already read (its payload and raw tag). */
void lc_lua_value_tv(struct lc_lua_ctx *ctx, const struct lc_tvalue *tv,
		     struct lc_value *ret);

/* Free what a value owns and reset it (type, text and str NULL, len and
 * hsize -1).  Accepts a zeroed value and NULL. */

/* The variables of the Lua frame cis[i] (cis as lc_lua_walk gave them,
 * innermost first), in this order:
 *  - kind "local": the named locals active at the frame's current pc as
 *    luaF_getlocalname lists them; local k lives in register k-1 from the
 *    frame's base (5.1-5.3 ci->base, 5.4 ci->func + 1); index = register;
 *  - kind "vararg": the extra arguments, index = 1, 2, ... as lua_getlocal
 *    (L, ar, -index) finds them (ldebug.c:findvararg; 5.1, which has no
 *    such access, keeps them in the same place as 5.2/5.3: between the
 *    fixed parameters and base); named "(*vararg)" (5.1-5.3) or
 *    "(vararg)" (5.4); at most LC_MAX_VARARGS;
 *  - kind "upvalue": the closure's upvalues named by the Proto, index =
 *    1, 2, ... as debug.getupvalue counts them (5.1: none when the chunk
 *    was stripped, as in Lua).
 * Values that cannot be read are partial.  C frames give no variables and
 * no error.  Errors: LC_ERR_INVALID (i >= n), LC_ERR_FAULT (the frame's
 * closure or Proto is unreadable), LC_ERR_CORRUPT (its pc is outside its
 * code), LC_ERR_NOMEM; *ret is then NULL and *nret 0. */
struct lc_error *lc_lua_frame_vars(struct lc_lua_ctx *ctx,
				   const struct lc_lstate *st,
				   const struct lc_ci *cis, size_t n, size_t i,
				   struct lc_var **ret, size_t *nret);

/* Every slot of st's data stack from L->stack to L->top - 1, then up to
 * "residue" stale slots from top upwards (residue = true, frame -1),
 * bounded by the end of the allocated stack (stack_last + EXTRA_STACK).
 * Slot frame = index into cis of the frame owning it: cis[j] owns
 * [cis[j].func, cis[j-1].func), the innermost cis[0] up to top; slots
 * below the outermost frame's function (the base CallInfo's) get -1.
 * Exception, 5.4: a vararg Lua function's CallInfo func was moved up
 * past its arguments (ltm.c:luaT_adjustvarargs); the original function
 * slot, the erased fixed parameters and the varargs below func still
 * belong to that frame, not its caller.  is_func marks cis[j].func.
 * Errors: LC_ERR_CORRUPT (no stack), LC_ERR_NOMEM. */
struct lc_error *lc_lua_stack_slots(struct lc_lua_ctx *ctx,
				    const struct lc_lstate *st,
				    const struct lc_ci *cis, size_t n,
				    int residue, struct lc_slot **ret,
				    size_t *nret);


/* The object at addr (lc_object_create of luacore.h): tables list at most
 * max_entries entries (0: 100).  Errors: LC_ERR_NOMEM only; what cannot
 * be read is a value of type "?" marked partial. */
struct lc_error *lc_lua_object(struct lc_lua_ctx *ctx,
			       enum lc_object_kind kind, uint64_t addr,
			       size_t max_entries, struct lc_object **ret);

#endif /* LC_LUA_VALUES_H */
