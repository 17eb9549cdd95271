/* Function and variable names from Lua bytecode, as Lua's own debug
 * interface derives them (ldebug.c: getfuncname, funcnamefromcode,
 * getobjname; lfunc.c: luaF_getlocalname).
 *
 * Everything here works on host-side copies of a Proto (struct
 * lc_proto_view) that the decoder has already read and bounded; nothing
 * here reads target memory.  Owned by libcore; internal, not installed.
 *
 * Releases: 5.1.0-5.1.5, 5.2.0-5.2.4, 5.3.0-5.3.6 (each handled as its
 * last patch release, whose sources were followed), 5.4.0-5.4.8 (each
 * exactly) and 5.5.0.  The opcode set is chosen by the major version;
 * a newer patch release (5.4.9) gets the newest rules of its major
 * version, a newer major version (5.6) those of 5.5: names.c never
 * refuses a release after 5.1 (the layout warns about unknown ones).
 * A release before 5.1 gives NULL.
 *
 * The view's contents are untrusted: all indexes are range-checked,
 * and anything out of range on the way to an answer, or a look-up
 * deeper or longer than code from Lua's own compiler can need, gives
 * NULL rather than a guess.  Nothing here allocates or keeps state; the
 * functions are reentrant.
 *
 * What the caller must do first (lua_getinfo's 'n' option decides
 * these from CallInfo flags before it looks at any code).  "ci" is the
 * frame being described, "prev" the frame that called it; "from code"
 * means lc_names_from_call(prev's Proto, currentpc(prev)), where
 * currentpc is savedpc - code - 1 (5.1: for the running frame use
 * L->savedpc).  "none" means namewhat "" and name NULL.
 *   5.1:   ci is Lua with ci->tailcalls > 0 -> none; prev (ci - 1) not
 *          Lua -> none; else from code.  No hook or finalizer cases.
 *   5.2:   ci has CIST_TAIL, or prev not Lua -> none; else from code.
 *   5.3, 5.4.0-5.4.3:
 *          ci (the described frame itself) has CIST_FIN -> "metamethod"
 *          "__gc"; ci has CIST_TAIL or prev not Lua -> none; prev has
 *          CIST_HOOKED -> "hook" "?"; else from code.
 *   5.4.4-5.4.8, 5.5.0:
 *          ci has CIST_TAIL -> none; prev has CIST_HOOKED -> "hook" "?";
 *          prev has CIST_FIN -> "metamethod" "__gc"; prev is Lua -> from
 *          code; else none.
 * "__gc" keeps its underscores in every release, although 5.4 strips
 * them from the names this module returns.  The CIST_* bit values
 * differ between releases.
 */
#ifndef LC_LUA_NAMES_H
#define LC_LUA_NAMES_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* A constant of the proto: only strings matter for naming.  A string
 * whose copy is NULL (unreadable) is named "?". */
struct lc_kview {
	int is_string;		/* 1 if the constant is a (short or long) string */
	const char *str;	/* NUL-terminated copy when is_string, else NULL */
};

/* Proto.locvars (empty when the chunk was stripped).  A variable whose
 * name is NULL (unreadable) is still a local, named "?". */
struct lc_locvar_view {
	const char *name;	/* NUL-terminated, may be NULL if unreadable */
	int startpc;		/* first pc where the variable is active */
	int endpc;		/* first pc where it is dead */
};

/* A Proto as read from the target.  All arrays are borrowed from the
 * caller for the duration of one call; a NULL array counts as empty.
 *
 * upvalnames/nupvalnames are Proto.upvalues/sizeupvalues: in 5.2-5.4
 * that is one entry per upvalue even when stripped (names NULL there);
 * in 5.1 it is 0 when stripped, else nups.  NULL names read as "?".
 * An upvalue index at or beyond nupvalnames is nonsense (NULL answer).
 *
 * numparams, is_vararg and maxstacksize are only used for 5.1, whose
 * getobjname verifies the code up to the call (symbexec) and gives no
 * name if that fails: pass them as read, is_vararg as the raw 5.1
 * bitmask (1 HASARG, 2 ISVARARG, 4 NEEDSARG). */
struct lc_proto_view {
	int release;		/* e.g. 50105, 50204, 50306, 50404, 50500 */
	const uint32_t *code;	/* instructions, host byte order */
	int ncode;
	const struct lc_kview *k;
	int nk;
	const struct lc_locvar_view *locvars;
	int nlocvars;
	const char *const *upvalnames; /* may hold NULLs for unknown names */
	int nupvalnames;
	int numparams;
	int is_vararg;
	int maxstacksize;
	bool stripped;		/* no line info: a stripped dump (5.1 then
				 * keeps no upvalue names either) */
};

/* Name of the function being called by the instruction at "pc" of the
 * calling function "p" (pc as ldebug.c's currentpc: index of the calling
 * instruction).  Returns the namewhat ("global", "local", "method",
 * "field", "upvalue", "constant", "metamethod", "for iterator") or NULL
 * when Lua would give no name; on success *name points to a string that
 * lives as long as "p"'s arrays or is static (a static string for
 * metamethods, "for iterator", "integer index" and "?"), and on failure
 * *name is set to NULL.  "name" may be NULL.  Mirrors getfuncname
 * (5.1), getfuncname (5.2), funcnamefromcode (5.3, 5.4.0-5.4.8, 5.5.0)
 * after the frame checks listed at the top of this file.
 *
 * Per release: 5.1 names only CALL, TAILCALL and TFORLOOP (the last as
 * the generator register, usually "local" "(for generator)") and gives
 * no metamethod names.  5.2 and 5.3 name metamethods with the "__"
 * prefix ("__index", "__add", ...; 5.3 adds "__idiv", "__band", "__bor",
 * "__bxor", "__shl", "__shr", "__bnot"); 5.4 without it ("index",
 * "add", ..., "close"; 5.5 the same).  5.4.0-5.4.2 name every order
 * comparison "order" and GTI/GEI not at all; 5.4.3+ use "lt"/"le".  Up
 * to 5.4.6 a table reached through a field named _ENV counts as the
 * globals ("t._ENV.x()" gives "global" "x"); 5.4.7 gives "field" there;
 * from 5.4.8 on only a local or upvalue named _ENV is the globals (not a
 * register loaded from the string "_ENV").  5.5's SELF always names its
 * constant key. */
const char *lc_names_from_call(const struct lc_proto_view *p, int pc,
			       const char **name);
/* The same, and *damaged set (never cleared) when the code names a
 * constant or upvalue past p's arrays, or a constant of a kind its
 * instruction never has (a key no string): a name lost to damage. */
const char *lc_names_from_call_checked(const struct lc_proto_view *p, int pc,
				       const char **name, bool *damaged);

/* Name of the n-th (1-based) active local variable at pc, or NULL.
 * Mirrors luaF_getlocalname (the same in 5.1-5.4).  The result borrows
 * from p->locvars, or is the static "?" for an unreadable name. */
const char *lc_names_local(const struct lc_proto_view *p, int n, int pc);

/* The pc of the first CLOSURE of p at or after pc, with in *child the
 * index in p's array of functions of the one it makes; -1 when there is
 * none. */
int lc_names_next_closure(const struct lc_proto_view *p, int pc, int *child);

/* How many locals of p are active at pc: they hold registers 0 up to
 * that (counted as lfunc.c luaF_getlocalname counts them, in order of
 * startpc). */
int lc_names_active(const struct lc_proto_view *p, int pc);

#endif /* LC_LUA_NAMES_H */
