/* Unit tests for libcore/vm/puc/names.c: function names from calling code
 * and local variable names, per Lua release, on hand-built prototypes.
 *
 * The instruction sequences follow what the real compilers emit
 * (luac5.1/5.2/5.3/5.4 -l -l; 5.4.7 built from its sources; 5.5.0's
 * words as its lua_load leaves them in Proto.code) for the Lua source
 * quoted above each case, and the expected names are what
 * debug.getinfo(f, "n") reports in those releases.  A release newer
 * than the newest known (5.4.9, 5.5.1, 5.6.0) must get the newest
 * rules of its kind, never no name at all.  The encoders are
 * checked against raw words taken from those compilers' output in
 * test_encoders_match_luac.
 *
 * Build: gcc -std=gnu11 -Wall -Wextra -I libcore tests/check_names.c
 *        libcore/vm/puc/names.c $(pkg-config --cflags --libs check)
 */

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/puc/names.h"

/* ------------------------------------------------------------------ */
/* Instruction encoders, written from each release's lopcodes.h layout. */

/* 5.1-5.3: op 6 bits, A 8 at 6, C 9 at 14, B 9 at 23, Bx 18 at 14. */
static uint32_t abc5(int op, int a, int b, int c)
{
	return (uint32_t)op | (uint32_t)a << 6 | (uint32_t)c << 14 |
	       (uint32_t)b << 23;
}

static uint32_t abx5(int op, int a, int bx)
{
	return (uint32_t)op | (uint32_t)a << 6 | (uint32_t)bx << 14;
}

static uint32_t asbx5(int op, int a, int sbx)
{
	return abx5(op, a, sbx + 0x1ffff);
}

static uint32_t ax5(int op, int ax)
{
	return (uint32_t)op | (uint32_t)ax << 6;
}

/* RK operand naming constant k (5.1-5.3). */
#define RK(k)	((k) | 0x100)

/* 5.4: op 7 bits, A 8 at 7, k at 15, B 8 at 16, C 8 at 24, Bx 17 at
 * 15, sJ/Ax 25 at 7. */
static uint32_t abck4(int op, int a, int b, int c, int k)
{
	return (uint32_t)op | (uint32_t)a << 7 | (uint32_t)k << 15 |
	       (uint32_t)b << 16 | (uint32_t)c << 24;
}

static uint32_t abc4(int op, int a, int b, int c)
{
	return abck4(op, a, b, c, 0);
}

static uint32_t abx4(int op, int a, int bx)
{
	return (uint32_t)op | (uint32_t)a << 7 | (uint32_t)bx << 15;
}

static uint32_t sj4(int op, int sj)
{
	return (uint32_t)op | (uint32_t)(sj + 0xffffff) << 7;
}

static uint32_t ax4(int op, int ax)
{
	return (uint32_t)op | (uint32_t)ax << 7;
}

/* ------------------------------------------------------------------ */
/* Opcode numbers, in each release's lopcodes.h order. */

enum {
	O51_MOVE, O51_LOADK, O51_LOADBOOL, O51_LOADNIL, O51_GETUPVAL,
	O51_GETGLOBAL, O51_GETTABLE, O51_SETGLOBAL, O51_SETUPVAL,
	O51_SETTABLE, O51_NEWTABLE, O51_SELF, O51_ADD, O51_SUB, O51_MUL,
	O51_DIV, O51_MOD, O51_POW, O51_UNM, O51_NOT, O51_LEN, O51_CONCAT,
	O51_JMP, O51_EQ, O51_LT, O51_LE, O51_TEST, O51_TESTSET, O51_CALL,
	O51_TAILCALL, O51_RETURN, O51_FORLOOP, O51_FORPREP, O51_TFORLOOP,
	O51_SETLIST, O51_CLOSE, O51_CLOSURE, O51_VARARG,
};

enum {
	O52_MOVE, O52_LOADK, O52_LOADKX, O52_LOADBOOL, O52_LOADNIL,
	O52_GETUPVAL, O52_GETTABUP, O52_GETTABLE, O52_SETTABUP,
	O52_SETUPVAL, O52_SETTABLE, O52_NEWTABLE, O52_SELF, O52_ADD,
	O52_SUB, O52_MUL, O52_DIV, O52_MOD, O52_POW, O52_UNM, O52_NOT,
	O52_LEN, O52_CONCAT, O52_JMP, O52_EQ, O52_LT, O52_LE, O52_TEST,
	O52_TESTSET, O52_CALL, O52_TAILCALL, O52_RETURN, O52_FORLOOP,
	O52_FORPREP, O52_TFORCALL, O52_TFORLOOP, O52_SETLIST, O52_CLOSURE,
	O52_VARARG, O52_EXTRAARG,
};

enum {
	O53_MOVE, O53_LOADK, O53_LOADKX, O53_LOADBOOL, O53_LOADNIL,
	O53_GETUPVAL, O53_GETTABUP, O53_GETTABLE, O53_SETTABUP,
	O53_SETUPVAL, O53_SETTABLE, O53_NEWTABLE, O53_SELF, O53_ADD,
	O53_SUB, O53_MUL, O53_MOD, O53_POW, O53_DIV, O53_IDIV, O53_BAND,
	O53_BOR, O53_BXOR, O53_SHL, O53_SHR, O53_UNM, O53_BNOT, O53_NOT,
	O53_LEN, O53_CONCAT, O53_JMP, O53_EQ, O53_LT, O53_LE, O53_TEST,
	O53_TESTSET, O53_CALL, O53_TAILCALL, O53_RETURN, O53_FORLOOP,
	O53_FORPREP, O53_TFORCALL, O53_TFORLOOP, O53_SETLIST, O53_CLOSURE,
	O53_VARARG, O53_EXTRAARG,
};

enum {
	O54_MOVE, O54_LOADI, O54_LOADF, O54_LOADK, O54_LOADKX,
	O54_LOADFALSE, O54_LFALSESKIP, O54_LOADTRUE, O54_LOADNIL,
	O54_GETUPVAL, O54_SETUPVAL, O54_GETTABUP, O54_GETTABLE, O54_GETI,
	O54_GETFIELD, O54_SETTABUP, O54_SETTABLE, O54_SETI, O54_SETFIELD,
	O54_NEWTABLE, O54_SELF, O54_ADDI, O54_ADDK, O54_SUBK, O54_MULK,
	O54_MODK, O54_POWK, O54_DIVK, O54_IDIVK, O54_BANDK, O54_BORK,
	O54_BXORK, O54_SHRI, O54_SHLI, O54_ADD, O54_SUB, O54_MUL, O54_MOD,
	O54_POW, O54_DIV, O54_IDIV, O54_BAND, O54_BOR, O54_BXOR, O54_SHL,
	O54_SHR, O54_MMBIN, O54_MMBINI, O54_MMBINK, O54_UNM, O54_BNOT,
	O54_NOT, O54_LEN, O54_CONCAT, O54_CLOSE, O54_TBC, O54_JMP, O54_EQ,
	O54_LT, O54_LE, O54_EQK, O54_EQI, O54_LTI, O54_LEI, O54_GTI,
	O54_GEI, O54_TEST, O54_TESTSET, O54_CALL, O54_TAILCALL, O54_RETURN,
	O54_RETURN0, O54_RETURN1, O54_FORLOOP, O54_FORPREP, O54_TFORPREP,
	O54_TFORCALL, O54_TFORLOOP, O54_SETLIST, O54_CLOSURE, O54_VARARG,
	O54_VARARGPREP, O54_EXTRAARG,
};

/* 5.5.0 lopcodes.h: 5.4's order but SHLI before SHRI, and GETVARG and
 * ERRNNIL after VARARG. */
enum {
	O55_MOVE, O55_LOADI, O55_LOADF, O55_LOADK, O55_LOADKX,
	O55_LOADFALSE, O55_LFALSESKIP, O55_LOADTRUE, O55_LOADNIL,
	O55_GETUPVAL, O55_SETUPVAL, O55_GETTABUP, O55_GETTABLE, O55_GETI,
	O55_GETFIELD, O55_SETTABUP, O55_SETTABLE, O55_SETI, O55_SETFIELD,
	O55_NEWTABLE, O55_SELF, O55_ADDI, O55_ADDK, O55_SUBK, O55_MULK,
	O55_MODK, O55_POWK, O55_DIVK, O55_IDIVK, O55_BANDK, O55_BORK,
	O55_BXORK, O55_SHLI, O55_SHRI, O55_ADD, O55_SUB, O55_MUL, O55_MOD,
	O55_POW, O55_DIV, O55_IDIV, O55_BAND, O55_BOR, O55_BXOR, O55_SHL,
	O55_SHR, O55_MMBIN, O55_MMBINI, O55_MMBINK, O55_UNM, O55_BNOT,
	O55_NOT, O55_LEN, O55_CONCAT, O55_CLOSE, O55_TBC, O55_JMP, O55_EQ,
	O55_LT, O55_LE, O55_EQK, O55_EQI, O55_LTI, O55_LEI, O55_GTI,
	O55_GEI, O55_TEST, O55_TESTSET, O55_CALL, O55_TAILCALL, O55_RETURN,
	O55_RETURN0, O55_RETURN1, O55_FORLOOP, O55_FORPREP, O55_TFORPREP,
	O55_TFORCALL, O55_TFORLOOP, O55_SETLIST, O55_CLOSURE, O55_VARARG,
	O55_GETVARG, O55_ERRNNIL, O55_VARARGPREP, O55_EXTRAARG,
};

/* 5.4 ltm.h ORDER TM, for MMBIN's C operand (5.5's is the same). */
enum {
	TM_INDEX, TM_NEWINDEX, TM_GC, TM_MODE, TM_LEN, TM_EQ, TM_ADD,
	TM_SUB, TM_MUL, TM_MOD, TM_POW, TM_DIV, TM_IDIV, TM_BAND, TM_BOR,
	TM_BXOR, TM_SHL, TM_SHR, TM_UNM, TM_BNOT, TM_LT, TM_LE, TM_CONCAT,
	TM_CALL, TM_CLOSE, TM_N
};

/* ------------------------------------------------------------------ */
/* A prototype under construction. */

#define TP_MAXCODE	4096
#define TP_MAXK		400
#define TP_MAXLOC	32
#define TP_MAXUP	16

struct tp {
	struct lc_proto_view v;
	uint32_t code[TP_MAXCODE];
	struct lc_kview k[TP_MAXK];
	struct lc_locvar_view loc[TP_MAXLOC];
	const char *up[TP_MAXUP];
};

static struct tp *tp_new(int release)
{
	struct tp *t = calloc(1, sizeof(*t));

	ck_assert_ptr_nonnull(t);
	t->v.release = release;
	t->v.code = t->code;
	t->v.k = t->k;
	t->v.locvars = t->loc;
	t->v.upvalnames = t->up;
	/* Main-chunk style defaults; 5.1's checks need sane values. */
	t->v.maxstacksize = 10;
	t->v.is_vararg = (release < 50200) ? 2 : 1;
	return t;
}

static int emit(struct tp *t, uint32_t i)
{
	if (t->v.ncode >= TP_MAXCODE)
		ck_abort_msg("test prototype: code full");
	t->code[t->v.ncode] = i;
	return t->v.ncode++;
}

static int kstr(struct tp *t, const char *s)
{
	if (t->v.nk >= TP_MAXK)
		ck_abort_msg("test prototype: constants full");
	t->k[t->v.nk].is_string = 1;
	t->k[t->v.nk].str = s;
	return t->v.nk++;
}

static int knum(struct tp *t)
{
	if (t->v.nk >= TP_MAXK)
		ck_abort_msg("test prototype: constants full");
	t->k[t->v.nk].is_string = 0;
	t->k[t->v.nk].str = NULL;
	return t->v.nk++;
}

static void local(struct tp *t, const char *name, int startpc, int endpc)
{
	if (t->v.nlocvars >= TP_MAXLOC)
		ck_abort_msg("test prototype: locals full");
	t->loc[t->v.nlocvars].name = name;
	t->loc[t->v.nlocvars].startpc = startpc;
	t->loc[t->v.nlocvars].endpc = endpc;
	t->v.nlocvars++;
}

static void upval(struct tp *t, const char *name)
{
	if (t->v.nupvalnames >= TP_MAXUP)
		ck_abort_msg("test prototype: upvalues full");
	t->up[t->v.nupvalnames++] = name;
}

static const char *str_or_null(const char *s)
{
	return s ? s : "(null)";
}

/* Check namewhat/name of the call at pc ("what" NULL: no name). */
#define expect(t, pc, what, nm) expect_at(t, pc, what, nm, __LINE__)
static void expect_at(const struct tp *t, int pc, const char *what,
		      const char *nm, int line)
{
	const char *gotname = (const char *)1;
	const char *got = lc_names_from_call(&t->v, pc, &gotname);
	int ok;

	if (what == NULL)
		ok = (got == NULL && gotname == NULL);
	else
		ok = (got && gotname && strcmp(got, what) == 0 &&
		      strcmp(gotname, nm) == 0);
	ck_assert_msg(ok, "line %d, release %d, pc %d: got %s '%s', "
		      "want %s '%s'", line, t->v.release, pc,
		      str_or_null(got), str_or_null(got ? gotname : NULL),
		      str_or_null(what), str_or_null(nm));
}

/* ------------------------------------------------------------------ */
/* Encoders against real compiler output. */

START_TEST(test_encoders_match_luac)
{
	/* luac5.1: gfn()   and   for k in next, {} do end */
	ck_assert_uint_eq(abx5(O51_GETGLOBAL, 0, 0), 0x00000005);
	ck_assert_uint_eq(abc5(O51_CALL, 0, 1, 1), 0x0080401c);
	ck_assert_uint_eq(abc5(O51_RETURN, 0, 1, 0), 0x0080001e);
	ck_assert_uint_eq(asbx5(O51_JMP, 0, 0), 0x7fffc016);
	ck_assert_uint_eq(asbx5(O51_JMP, 0, -2), 0x7fff4016);
	ck_assert_uint_eq(abc5(O51_TFORLOOP, 0, 0, 1), 0x00004021);
	/* luac5.1: local t = {}; t:m() */
	ck_assert_uint_eq(abc5(O51_SELF, 1, 0, RK(0)), 0x0040004b);
	/* luac5.2: gfn()   ("abc")()   for k in next, {} do end */
	ck_assert_uint_eq(abc5(O52_GETTABUP, 0, 0, RK(0)), 0x00400006);
	ck_assert_uint_eq(abc5(O52_CALL, 0, 1, 1), 0x0080401d);
	ck_assert_uint_eq(abc5(O52_TFORCALL, 0, 0, 1), 0x00004022);
	ck_assert_uint_eq(abc5(O52_ADD, 2, 0, 1), 0x0000408d);
	ck_assert_uint_eq(abc5(O52_SETTABLE, 0, RK(1), 2), 0x8080800a);
	/* luac5.3: gfn()   local t = {}; t:m(); t.x()   (a and f or g)() */
	ck_assert_uint_eq(abc5(O53_CALL, 0, 1, 1), 0x00804024);
	ck_assert_uint_eq(abc5(O53_SELF, 1, 0, RK(0)), 0x0040004c);
	ck_assert_uint_eq(abc5(O53_GETTABLE, 1, 0, RK(1)), 0x00404047);
	ck_assert_uint_eq(asbx5(O53_JMP, 0, 3), 0x8000801e);
	ck_assert_uint_eq(abc5(O53_IDIV, 2, 0, 1), 0x00004093);
	/* luac5.4 (5.4.4 and 5.4.7 agree) */
	ck_assert_uint_eq(abc4(O54_VARARGPREP, 0, 0, 0), 0x00000051);
	ck_assert_uint_eq(abc4(O54_GETTABUP, 0, 0, 0), 0x0000000b);
	ck_assert_uint_eq(abc4(O54_CALL, 0, 1, 1), 0x01010044);
	ck_assert_uint_eq(abck4(O54_RETURN, 0, 1, 1, 0), 0x01010046);
	/* local t = {}; t:m() */
	ck_assert_uint_eq(abck4(O54_SELF, 1, 0, 0, 1), 0x00008094);
	/* local a, b = ...; c = a + b; c = a + 1 */
	ck_assert_uint_eq(abc4(O54_MMBIN, 0, 1, TM_ADD), 0x0601002e);
	ck_assert_uint_eq(abck4(O54_MMBINI, 0, 128, TM_ADD, 0), 0x0680002f);
	/* (a and f or g)() and for k in next, {} do end */
	ck_assert_uint_eq(sj4(O54_JMP, 3), 0x80000138);
	ck_assert_uint_eq(sj4(O54_JMP, 1), 0x80000038);
	ck_assert_uint_eq(abck4(O54_TEST, 0, 0, 0, 1), 0x00008042);
	ck_assert_uint_eq(abx4(O54_TFORLOOP, 0, 2), 0x0001004d);
	ck_assert_uint_eq(ax4(O54_EXTRAARG, 0), 0x00000052);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Lua 5.1 */

/* gfn() */
START_TEST(test_51_global)
{
	struct tp *t = tp_new(50105);

	kstr(t, "gfn");
	emit(t, abx5(O51_GETGLOBAL, 0, 0));
	emit(t, abc5(O51_CALL, 0, 1, 1));
	emit(t, abc5(O51_RETURN, 0, 1, 0));
	expect(t, 1, "global", "gfn");
	expect(t, 0, NULL, NULL);
	expect(t, 2, NULL, NULL);
	free(t);
}
END_TEST

/* local f; f() */
START_TEST(test_51_local)
{
	struct tp *t = tp_new(50105);

	emit(t, abc5(O51_MOVE, 1, 0, 0));
	emit(t, abc5(O51_CALL, 1, 1, 1));
	emit(t, abc5(O51_RETURN, 0, 1, 0));
	local(t, "f", 0, 2);
	expect(t, 1, "local", "f");
	free(t);
}
END_TEST

/* local t = {}; t:m(); t.x(); t[t]() */
START_TEST(test_51_method_field)
{
	struct tp *t = tp_new(50105);

	kstr(t, "m");
	kstr(t, "x");
	emit(t, abc5(O51_NEWTABLE, 0, 0, 0));
	emit(t, abc5(O51_SELF, 1, 0, RK(0)));
	emit(t, abc5(O51_CALL, 1, 2, 1));
	emit(t, abc5(O51_GETTABLE, 1, 0, RK(1)));
	emit(t, abc5(O51_CALL, 1, 1, 1));
	emit(t, abc5(O51_GETTABLE, 1, 0, 0));	/* register key */
	emit(t, abc5(O51_CALL, 1, 1, 1));
	emit(t, abc5(O51_RETURN, 0, 1, 0));
	local(t, "t", 1, 8);
	expect(t, 2, "method", "m");
	expect(t, 4, "field", "x");
	expect(t, 6, "field", "?");
	free(t);
}
END_TEST

/* local up; return function() up() end  (the inner function) */
START_TEST(test_51_upvalue)
{
	struct tp *t = tp_new(50105);

	t->v.is_vararg = 0;
	t->v.maxstacksize = 2;
	emit(t, abc5(O51_GETUPVAL, 0, 0, 0));
	emit(t, abc5(O51_CALL, 0, 1, 1));
	emit(t, abc5(O51_RETURN, 0, 1, 0));
	upval(t, "up");
	expect(t, 1, "upvalue", "up");
	t->up[0] = NULL;		/* unreadable name */
	expect(t, 1, "upvalue", "?");
	t->v.nupvalnames = 0;		/* luac -s drops 5.1 names ... */
	t->v.stripped = true;		/* ... with the line info */
	expect(t, 1, "upvalue", "?");
	t->v.stripped = false;		/* no names, yet line info: damage */
	expect(t, 1, NULL, NULL);
	free(t);
}
END_TEST

/* for k in next, {} do end: 5.1 names the generator register. */
START_TEST(test_51_for_generator)
{
	struct tp *t = tp_new(50105);

	t->v.maxstacksize = 6;
	kstr(t, "next");
	emit(t, abx5(O51_GETGLOBAL, 0, 0));
	emit(t, abc5(O51_NEWTABLE, 1, 0, 0));
	emit(t, abc5(O51_LOADNIL, 2, 2, 0));
	emit(t, asbx5(O51_JMP, 0, 0));
	emit(t, abc5(O51_TFORLOOP, 0, 0, 1));
	emit(t, asbx5(O51_JMP, 0, -2));
	emit(t, abc5(O51_RETURN, 0, 1, 0));
	local(t, "(for generator)", 3, 6);
	local(t, "(for state)", 3, 6);
	local(t, "(for control)", 3, 6);
	local(t, "k", 4, 4);
	expect(t, 4, "local", "(for generator)");
	/* Stripped: symbolic execution finds the GETGLOBAL. */
	t->v.nlocvars = 0;
	expect(t, 4, "global", "next");
	free(t);
}
END_TEST

/* local up; return function() g(function() return up end) end
 * The GETUPVAL after CLOSURE is the closure's upvalue descriptor, not
 * an assignment to register 0. */
START_TEST(test_51_closure_pseudo)
{
	struct tp *t = tp_new(50105);

	t->v.is_vararg = 0;
	t->v.maxstacksize = 2;
	kstr(t, "g");
	upval(t, "up");
	emit(t, abx5(O51_GETGLOBAL, 0, 0));
	emit(t, abx5(O51_CLOSURE, 1, 0));
	emit(t, abc5(O51_GETUPVAL, 0, 0, 0));
	emit(t, abc5(O51_CALL, 0, 2, 1));
	emit(t, abc5(O51_RETURN, 0, 1, 0));
	expect(t, 3, "global", "g");
	free(t);
}
END_TEST

/* (a and f or g)(): 5.1's symbolic execution follows the forward
 * jumps and names g; 5.2+ give no name (see test_53_conditional). */
START_TEST(test_51_follows_jumps)
{
	struct tp *t = tp_new(50105);

	t->v.maxstacksize = 2;
	kstr(t, "a");
	kstr(t, "f");
	kstr(t, "g");
	emit(t, abx5(O51_GETGLOBAL, 0, 0));
	emit(t, abc5(O51_TEST, 0, 0, 0));
	emit(t, asbx5(O51_JMP, 0, 3));
	emit(t, abx5(O51_GETGLOBAL, 0, 1));
	emit(t, abc5(O51_TEST, 0, 0, 1));
	emit(t, asbx5(O51_JMP, 0, 1));
	emit(t, abx5(O51_GETGLOBAL, 0, 2));
	emit(t, abc5(O51_CALL, 0, 1, 1));
	emit(t, abc5(O51_RETURN, 0, 1, 0));
	expect(t, 7, "global", "g");
	free(t);
}
END_TEST

/* MOVE chains: 5.1 checks the source register's local name at the
 * calling pc, not at the MOVE. */
START_TEST(test_51_move_chain)
{
	struct tp *t = tp_new(50105);

	kstr(t, "f");
	emit(t, abx5(O51_GETGLOBAL, 0, 0));
	emit(t, abc5(O51_MOVE, 1, 0, 0));
	emit(t, abc5(O51_MOVE, 2, 1, 0));
	emit(t, abc5(O51_CALL, 2, 1, 1));
	emit(t, abc5(O51_RETURN, 0, 1, 0));
	expect(t, 3, "global", "f");
	local(t, "lf", 3, 5);	/* register 0: a local only at the call */
	expect(t, 3, "local", "lf");
	free(t);
}
END_TEST

/* local a, b = ...; c = a + b etc.: 5.1 names no metamethods, and
 * only CALL, TAILCALL and TFORLOOP at all. */
START_TEST(test_51_no_metamethods)
{
	struct tp *t = tp_new(50105);

	emit(t, abc5(O51_ADD, 2, 0, 1));
	emit(t, abc5(O51_UNM, 2, 0, 0));
	emit(t, abc5(O51_GETTABLE, 2, 0, 1));
	emit(t, abc5(O51_CONCAT, 2, 0, 1));
	emit(t, abc5(O51_RETURN, 0, 1, 0));
	expect(t, 0, NULL, NULL);
	expect(t, 1, NULL, NULL);
	expect(t, 2, NULL, NULL);
	expect(t, 3, NULL, NULL);
	free(t);
}
END_TEST

/* 5.1's getobjname runs symbexec, which verifies the code; failures
 * mean no name. */
START_TEST(test_51_verifier)
{
	struct tp *t = tp_new(50105);

	kstr(t, "gfn");
	knum(t);
	emit(t, abx5(O51_GETGLOBAL, 0, 0));
	emit(t, abc5(O51_CALL, 0, 1, 1));
	emit(t, abc5(O51_RETURN, 0, 1, 0));
	expect(t, 1, "global", "gfn");

	t->v.maxstacksize = 0;			/* register 0 too high */
	expect(t, 1, NULL, NULL);
	t->v.maxstacksize = 251;		/* above MAXSTACK */
	expect(t, 1, NULL, NULL);
	t->v.maxstacksize = 10;
	t->v.is_vararg = 4;			/* NEEDSARG without HASARG */
	expect(t, 1, NULL, NULL);
	t->v.is_vararg = 2;
	t->code[2] = abc5(O51_CALL, 0, 1, 1);	/* no final RETURN */
	expect(t, 1, NULL, NULL);
	t->code[2] = abc5(O51_RETURN, 0, 1, 0);
	t->code[0] = abx5(O51_GETGLOBAL, 0, 1);	/* non-string name */
	expect(t, 1, NULL, NULL);
	t->code[0] = abx5(O51_GETGLOBAL, 0, 2);	/* no such constant */
	expect(t, 1, NULL, NULL);
	t->code[0] = abx5(63, 0, 0);		/* no such opcode */
	expect(t, 1, NULL, NULL);
	t->code[0] = abc5(O51_EQ, 0, 0, 0);	/* test not before a jump */
	expect(t, 1, NULL, NULL);
	free(t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Lua 5.2 and 5.3: the same rules, different opcode numbers. */

struct ops53 {
	int release;
	int MOVE, LOADK, LOADKX, GETUPVAL, GETTABUP, GETTABLE, SETTABUP,
	    SETTABLE, NEWTABLE, SELF, ADD, SUB, MUL, DIV, MOD, POW, UNM,
	    LEN, CONCAT, JMP, EQ, LT, LE, TEST, CALL, TAILCALL, RETURN,
	    TFORCALL, EXTRAARG, NOT;
};

static const struct ops53 v52 = {
	50204, O52_MOVE, O52_LOADK, O52_LOADKX, O52_GETUPVAL, O52_GETTABUP,
	O52_GETTABLE, O52_SETTABUP, O52_SETTABLE, O52_NEWTABLE, O52_SELF,
	O52_ADD, O52_SUB, O52_MUL, O52_DIV, O52_MOD, O52_POW, O52_UNM,
	O52_LEN, O52_CONCAT, O52_JMP, O52_EQ, O52_LT, O52_LE, O52_TEST,
	O52_CALL, O52_TAILCALL, O52_RETURN, O52_TFORCALL, O52_EXTRAARG,
	O52_NOT,
};

static const struct ops53 v53 = {
	50306, O53_MOVE, O53_LOADK, O53_LOADKX, O53_GETUPVAL, O53_GETTABUP,
	O53_GETTABLE, O53_SETTABUP, O53_SETTABLE, O53_NEWTABLE, O53_SELF,
	O53_ADD, O53_SUB, O53_MUL, O53_DIV, O53_MOD, O53_POW, O53_UNM,
	O53_LEN, O53_CONCAT, O53_JMP, O53_EQ, O53_LT, O53_LE, O53_TEST,
	O53_CALL, O53_TAILCALL, O53_RETURN, O53_TFORCALL, O53_EXTRAARG,
	O53_NOT,
};

static const struct ops53 *ops53_for(int i)
{
	return (i == 0) ? &v52 : &v53;
}

/* gfn(), with _ENV as upvalue 0; then the same through another
 * upvalue, which is only a field. */
START_TEST(test_53_global)
{
	const struct ops53 *o = ops53_for(_i);
	struct tp *t = tp_new(o->release);

	upval(t, "_ENV");
	kstr(t, "gfn");
	emit(t, abc5(o->GETTABUP, 0, 0, RK(0)));
	emit(t, abc5(o->CALL, 0, 1, 1));
	emit(t, abc5(o->RETURN, 0, 1, 0));
	expect(t, 1, "global", "gfn");
	expect(t, 0, "metamethod", "__index");
	expect(t, 2, NULL, NULL);
	t->up[0] = "mod";
	expect(t, 1, "field", "gfn");
	t->up[0] = NULL;		/* stripped: name unknown */
	expect(t, 1, "field", "gfn");
	free(t);
}
END_TEST

/* local f; f()   and   local t = {}; t:m(); t.x() */
START_TEST(test_53_local_method_field)
{
	const struct ops53 *o = ops53_for(_i);
	struct tp *t = tp_new(o->release);

	upval(t, "_ENV");
	kstr(t, "m");
	kstr(t, "x");
	emit(t, abc5(o->NEWTABLE, 0, 0, 0));
	emit(t, abc5(o->SELF, 1, 0, RK(0)));
	emit(t, abc5(o->CALL, 1, 2, 1));
	emit(t, abc5(o->GETTABLE, 1, 0, RK(1)));
	emit(t, abc5(o->CALL, 1, 1, 1));
	emit(t, abc5(o->MOVE, 1, 0, 0));
	emit(t, abc5(o->CALL, 1, 1, 1));
	emit(t, abc5(o->RETURN, 0, 1, 0));
	local(t, "t", 1, 8);
	expect(t, 2, "method", "m");
	expect(t, 4, "field", "x");
	expect(t, 6, "local", "t");
	expect(t, 1, "metamethod", "__index");
	expect(t, 3, "metamethod", "__index");
	free(t);
}
END_TEST

/* Keys in registers: a string loaded by LOADK names the field (as when
 * a function has more than 256 constants); any other register is "?".
 * A table in a local named _ENV makes the access global. */
START_TEST(test_53_register_keys)
{
	const struct ops53 *o = ops53_for(_i);
	struct tp *t = tp_new(o->release);

	upval(t, "_ENV");
	kstr(t, "key");
	emit(t, abc5(o->NEWTABLE, 0, 0, 0));		/* local tb */
	emit(t, abx5(o->LOADK, 1, 0));			/* temp "key" */
	emit(t, abc5(o->GETTABLE, 1, 0, 1));
	emit(t, abc5(o->CALL, 1, 1, 1));
	emit(t, abc5(o->GETTABLE, 1, 0, 0));		/* key: tb itself */
	emit(t, abc5(o->CALL, 1, 1, 1));
	emit(t, abc5(o->RETURN, 0, 1, 0));
	local(t, "tb", 1, 7);
	expect(t, 3, "field", "key");
	expect(t, 5, "field", "?");
	t->loc[0].name = "_ENV";
	expect(t, 3, "global", "key");
	free(t);
}
END_TEST

/* local up; return function() up() end, and a called string constant:
 * ("abc")() */
START_TEST(test_53_upvalue_constant)
{
	const struct ops53 *o = ops53_for(_i);
	struct tp *t = tp_new(o->release);

	upval(t, "up");
	kstr(t, "abc");
	emit(t, abc5(o->GETUPVAL, 0, 0, 0));
	emit(t, abc5(o->CALL, 0, 1, 1));
	emit(t, abx5(o->LOADK, 0, 0));
	emit(t, abc5(o->CALL, 0, 1, 1));
	emit(t, abx5(o->LOADKX, 0, 0));
	emit(t, ax5(o->EXTRAARG, 0));
	emit(t, abc5(o->CALL, 0, 1, 1));
	emit(t, abc5(o->RETURN, 0, 1, 0));
	expect(t, 1, "upvalue", "up");
	expect(t, 3, "constant", "abc");
	expect(t, 6, "constant", "abc");
	t->up[0] = NULL;
	expect(t, 1, "upvalue", "?");
	t->k[0].is_string = 0;		/* a number names nothing */
	expect(t, 3, NULL, NULL);
	free(t);
}
END_TEST

/* for k in next, {} do end */
START_TEST(test_53_for_iterator)
{
	const struct ops53 *o = ops53_for(_i);
	struct tp *t = tp_new(o->release);

	emit(t, abc5(o->TFORCALL, 0, 0, 1));
	emit(t, abc5(o->RETURN, 0, 1, 0));
	expect(t, 0, "for iterator", "for iterator");
	free(t);
}
END_TEST

/* Operators call metamethods; 5.2 and 5.3 name them with "__". */
START_TEST(test_53_metamethods)
{
	const struct ops53 *o = ops53_for(_i);
	struct tp *t = tp_new(o->release);
	static const char *const want[] = {
		"__index", "__newindex", "__newindex", "__add", "__sub",
		"__mul", "__div", "__mod", "__pow", "__unm", "__len",
		"__concat", "__eq", "__lt", "__le",
	};
	int ops[15], i;

	ops[0] = o->SELF; ops[1] = o->SETTABUP; ops[2] = o->SETTABLE;
	ops[3] = o->ADD; ops[4] = o->SUB; ops[5] = o->MUL; ops[6] = o->DIV;
	ops[7] = o->MOD; ops[8] = o->POW; ops[9] = o->UNM; ops[10] = o->LEN;
	ops[11] = o->CONCAT; ops[12] = o->EQ; ops[13] = o->LT;
	ops[14] = o->LE;
	for (i = 0; i < 15; i++)
		emit(t, abc5(ops[i], 0, 1, 2));
	emit(t, abc5(o->NOT, 0, 1, 0));
	emit(t, abc5(o->RETURN, 0, 1, 0));
	for (i = 0; i < 15; i++)
		expect(t, i, "metamethod", want[i]);
	expect(t, 15, NULL, NULL);	/* NOT calls nothing */
	expect(t, 16, NULL, NULL);	/* RETURN calls nothing */
	free(t);
}
END_TEST

/* (a and f or g)(), as luac5.3 compiles it: the register is set in
 * conditional code, so no name. */
START_TEST(test_53_conditional)
{
	const struct ops53 *o = ops53_for(_i);
	struct tp *t = tp_new(o->release);

	upval(t, "_ENV");
	kstr(t, "a");
	kstr(t, "f");
	kstr(t, "g");
	emit(t, abc5(o->GETTABUP, 0, 0, RK(0)));
	emit(t, abc5(o->TEST, 0, 0, 0));
	emit(t, asbx5(o->JMP, 0, 3));
	emit(t, abc5(o->GETTABUP, 0, 0, RK(1)));
	emit(t, abc5(o->TEST, 0, 0, 1));
	emit(t, asbx5(o->JMP, 0, 1));
	emit(t, abc5(o->GETTABUP, 0, 0, RK(2)));
	emit(t, abc5(o->CALL, 0, 1, 1));
	emit(t, abc5(o->RETURN, 0, 1, 0));
	expect(t, 7, NULL, NULL);
	free(t);
}
END_TEST

/* MOVE chains: 5.2+ look at the source register at the MOVE's pc. */
START_TEST(test_53_move_chain)
{
	const struct ops53 *o = ops53_for(_i);
	struct tp *t = tp_new(o->release);
	int r;

	t->v.maxstacksize = 250;
	upval(t, "_ENV");
	kstr(t, "f");
	emit(t, abc5(o->GETTABUP, 0, 0, RK(0)));
	for (r = 1; r < 250; r++)
		emit(t, abc5(o->MOVE, r, r - 1, 0));
	emit(t, abc5(o->CALL, 249, 1, 1));
	emit(t, abc5(o->RETURN, 0, 1, 0));
	expect(t, 250, "global", "f");
	/* A local for register 0 that starts only at the call does not
	 * count (5.1 would say "local"). */
	local(t, "lf", 250, 251);
	expect(t, 250, "global", "f");
	free(t);
}
END_TEST

/* 5.2's findsetreg treats TEST as writing its register, 5.3's does
 * not: a guarded call "if f then f() end" on a temporary. */
START_TEST(test_52_53_test_quirk)
{
	struct tp *t2 = tp_new(50204), *t3 = tp_new(50306);

	upval(t2, "_ENV");
	kstr(t2, "f");
	emit(t2, abc5(O52_GETTABUP, 0, 0, RK(0)));
	emit(t2, abc5(O52_TEST, 0, 0, 1));
	emit(t2, asbx5(O52_JMP, 0, 0));
	emit(t2, abc5(O52_CALL, 0, 1, 1));
	emit(t2, abc5(O52_RETURN, 0, 1, 0));
	expect(t2, 3, NULL, NULL);

	upval(t3, "_ENV");
	kstr(t3, "f");
	emit(t3, abc5(O53_GETTABUP, 0, 0, RK(0)));
	emit(t3, abc5(O53_TEST, 0, 0, 1));
	emit(t3, asbx5(O53_JMP, 0, 0));
	emit(t3, abc5(O53_CALL, 0, 1, 1));
	emit(t3, abc5(O53_RETURN, 0, 1, 0));
	expect(t3, 3, "global", "f");
	free(t2);
	free(t3);
}
END_TEST

/* Integer division and bitwise operators exist only in 5.3. */
START_TEST(test_53_bitwise_metamethods)
{
	struct tp *t = tp_new(50306);
	static const int ops[] = {
		O53_IDIV, O53_BAND, O53_BOR, O53_BXOR, O53_SHL, O53_SHR,
		O53_BNOT,
	};
	static const char *const want[] = {
		"__idiv", "__band", "__bor", "__bxor", "__shl", "__shr",
		"__bnot",
	};
	int i;

	for (i = 0; i < 7; i++)
		emit(t, abc5(ops[i], 2, 0, 1));
	emit(t, abc5(O53_RETURN, 0, 1, 0));
	for (i = 0; i < 7; i++)
		expect(t, i, "metamethod", want[i]);
	free(t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Lua 5.4 */

/* gfn() as luac5.4 compiles a main chunk. */
START_TEST(test_54_global)
{
	int rel = 50400 + _i;
	struct tp *t = tp_new(rel);

	upval(t, "_ENV");
	kstr(t, "gfn");
	emit(t, abc4(O54_VARARGPREP, 0, 0, 0));
	emit(t, abc4(O54_GETTABUP, 0, 0, 0));
	emit(t, abc4(O54_CALL, 0, 1, 1));
	emit(t, abc4(O54_RETURN, 0, 1, 1));
	expect(t, 0, NULL, NULL);
	expect(t, 1, "metamethod", "index");
	expect(t, 2, "global", "gfn");
	expect(t, 3, "metamethod", "close");
	t->up[0] = "M";
	expect(t, 2, "field", "gfn");
	free(t);
}
END_TEST

/* local t <close> = nil; local k = "kk"; t[k](); t:m(); t.f[k]()
 * plus t.x(), t[1]() and a method with a register key. */
START_TEST(test_54_fields_methods)
{
	int rel = 50400 + _i;
	struct tp *t = tp_new(rel);

	upval(t, "_ENV");
	kstr(t, "kk");
	kstr(t, "m");
	kstr(t, "f");
	kstr(t, "x");
	emit(t, abc4(O54_VARARGPREP, 0, 0, 0));		/* 0 */
	emit(t, abc4(O54_LOADNIL, 0, 0, 0));		/* 1 */
	emit(t, abc4(O54_TBC, 0, 0, 0));		/* 2 */
	emit(t, abx4(O54_LOADK, 1, 0));			/* 3 */
	emit(t, abc4(O54_GETTABLE, 2, 0, 1));		/* 4 */
	emit(t, abc4(O54_CALL, 2, 1, 1));		/* 5 */
	emit(t, abck4(O54_SELF, 2, 0, 1, 1));		/* 6 */
	emit(t, abc4(O54_CALL, 2, 2, 1));		/* 7 */
	emit(t, abc4(O54_GETFIELD, 2, 0, 2));		/* 8 */
	emit(t, abc4(O54_GETTABLE, 2, 2, 1));		/* 9 */
	emit(t, abc4(O54_CALL, 2, 1, 1));		/* 10 */
	emit(t, abc4(O54_GETFIELD, 2, 0, 3));		/* 11 */
	emit(t, abc4(O54_CALL, 2, 1, 1));		/* 12 */
	emit(t, abc4(O54_GETI, 2, 0, 1));		/* 13 */
	emit(t, abc4(O54_CALL, 2, 1, 1));		/* 14 */
	emit(t, abx4(O54_LOADK, 3, 3));			/* 15 */
	emit(t, abck4(O54_SELF, 2, 0, 3, 0));		/* 16 */
	emit(t, abc4(O54_CALL, 2, 2, 1));		/* 17 */
	emit(t, abx4(O54_LOADK, 2, 3));			/* 18 */
	emit(t, abc4(O54_GETTABLE, 2, 0, 2));		/* 19 */
	emit(t, abc4(O54_CALL, 2, 1, 1));		/* 20 */
	emit(t, abck4(O54_RETURN, 2, 1, 1, 1));		/* 21 */
	local(t, "t", 2, 22);
	local(t, "k", 4, 22);
	expect(t, 5, "field", "?");
	expect(t, 7, "method", "m");
	expect(t, 10, "field", "?");
	expect(t, 12, "field", "x");
	expect(t, 14, "field", "integer index");
	expect(t, 17, "method", "x");
	expect(t, 20, "field", "x");
	expect(t, 4, "metamethod", "index");
	expect(t, 8, "metamethod", "index");
	expect(t, 13, "metamethod", "index");
	free(t);
}
END_TEST

/* local t = {}; t._ENV.x(): up to 5.4.6 the "_ENV" field name makes
 * it a global; 5.4.7's isEnv only trusts locals/upvalues/constants,
 * 5.4.8's only locals/upvalues. */
START_TEST(test_54_env_field)
{
	int rel = 50400 + _i;
	struct tp *t = tp_new(rel);

	upval(t, "_ENV");
	kstr(t, "_ENV");
	kstr(t, "x");
	emit(t, abc4(O54_VARARGPREP, 0, 0, 0));
	emit(t, abc4(O54_NEWTABLE, 0, 0, 0));
	emit(t, ax4(O54_EXTRAARG, 0));
	emit(t, abc4(O54_GETFIELD, 1, 0, 0));
	emit(t, abc4(O54_GETFIELD, 1, 1, 1));
	emit(t, abc4(O54_CALL, 1, 1, 1));
	emit(t, abck4(O54_RETURN, 1, 1, 1, 0));
	local(t, "t", 3, 7);
	if (rel <= 50406)
		expect(t, 5, "global", "x");
	else
		expect(t, 5, "field", "x");
	/* A local named _ENV is the globals in every release. */
	t->loc[0].name = "_ENV";
	t->code[4] = abc4(O54_GETFIELD, 1, 0, 1);
	expect(t, 5, "global", "x");
	/* So is a string constant "_ENV" in a register up to 5.4.7:
	 * (("_ENV")).x(); 5.4.8's isEnv takes only a local's or an
	 * upvalue's name. */
	t->loc[0].name = "t";
	t->code[3] = abx4(O54_LOADK, 1, 0);
	t->code[4] = abc4(O54_GETFIELD, 1, 1, 1);
	if (rel <= 50407)
		expect(t, 5, "global", "x");
	else
		expect(t, 5, "field", "x");
	free(t);
}
END_TEST

/* Upvalue, constant (LOADK and LOADKX), for iterator. */
START_TEST(test_54_upvalue_constant_iterator)
{
	int rel = 50400 + _i;
	struct tp *t = tp_new(rel);

	upval(t, "up");
	kstr(t, "abc");
	emit(t, abc4(O54_GETUPVAL, 0, 0, 0));
	emit(t, abc4(O54_CALL, 0, 1, 1));
	emit(t, abx4(O54_LOADK, 0, 0));
	emit(t, abc4(O54_CALL, 0, 1, 1));
	emit(t, abx4(O54_LOADKX, 0, 0));
	emit(t, ax4(O54_EXTRAARG, 0));
	emit(t, abc4(O54_CALL, 0, 1, 1));
	emit(t, abc4(O54_TFORCALL, 0, 0, 1));
	emit(t, abc4(O54_RETURN0, 0, 0, 0));
	expect(t, 1, "upvalue", "up");
	expect(t, 3, "constant", "abc");
	expect(t, 6, "constant", "abc");
	expect(t, 7, "for iterator", "for iterator");
	expect(t, 8, NULL, NULL);
	free(t);
}
END_TEST

/* Arithmetic and bitwise metamethods come from MMBIN's event operand;
 * the other operators name their own event.  No "__" in 5.4. */
START_TEST(test_54_metamethods)
{
	int rel = 50400 + _i;
	struct tp *t = tp_new(rel);
	static const char *const tmname[TM_N] = {
		"index", "newindex", "gc", "mode", "len", "eq", "add", "sub",
		"mul", "mod", "pow", "div", "idiv", "band", "bor", "bxor",
		"shl", "shr", "unm", "bnot", "lt", "le", "concat", "call",
		"close",
	};
	int tm;

	for (tm = 0; tm < TM_N; tm++)
		emit(t, abc4(O54_MMBIN, 0, 1, tm));
	emit(t, abc4(O54_MMBINI, 0, 127, TM_SUB));
	emit(t, abck4(O54_MMBINK, 0, 0, TM_BXOR, 1));
	emit(t, abc4(O54_MMBIN, 0, 1, TM_N));		/* not an event */
	emit(t, abc4(O54_UNM, 0, 1, 0));
	emit(t, abc4(O54_BNOT, 0, 1, 0));
	emit(t, abc4(O54_LEN, 0, 1, 0));
	emit(t, abc4(O54_CONCAT, 0, 2, 0));
	emit(t, abc4(O54_EQ, 0, 1, 0));
	emit(t, abc4(O54_EQK, 0, 1, 0));
	emit(t, abc4(O54_EQI, 0, 1, 0));
	emit(t, abc4(O54_SETTABUP, 0, 0, 0));
	emit(t, abc4(O54_SETI, 0, 1, 0));
	emit(t, abc4(O54_CLOSE, 0, 0, 0));
	emit(t, abc4(O54_ADD, 0, 1, 2));	/* MMBIN does the call */
	emit(t, abc4(O54_RETURN1, 0, 0, 0));
	for (tm = 0; tm < TM_N; tm++)
		expect(t, tm, "metamethod", tmname[tm]);
	expect(t, TM_N + 0, "metamethod", "sub");
	expect(t, TM_N + 1, "metamethod", "bxor");
	expect(t, TM_N + 2, NULL, NULL);
	expect(t, TM_N + 3, "metamethod", "unm");
	expect(t, TM_N + 4, "metamethod", "bnot");
	expect(t, TM_N + 5, "metamethod", "len");
	expect(t, TM_N + 6, "metamethod", "concat");
	expect(t, TM_N + 7, "metamethod", "eq");
	expect(t, TM_N + 8, NULL, NULL);
	expect(t, TM_N + 9, NULL, NULL);
	expect(t, TM_N + 10, "metamethod", "newindex");
	expect(t, TM_N + 11, "metamethod", "newindex");
	expect(t, TM_N + 12, "metamethod", "close");
	expect(t, TM_N + 13, NULL, NULL);
	expect(t, TM_N + 14, NULL, NULL);
	free(t);
}
END_TEST

/* Order comparisons: 5.4.0-5.4.2 say "order" (and nothing for GTI and
 * GEI); 5.4.3+ name the event ("lt"/"le"). */
START_TEST(test_54_comparisons)
{
	int rel = 50400 + _i;
	struct tp *t = tp_new(rel);
	bool old = rel <= 50402;

	emit(t, abc4(O54_LT, 0, 1, 0));
	emit(t, abc4(O54_LE, 0, 1, 0));
	emit(t, abc4(O54_LTI, 0, 127, 0));
	emit(t, abc4(O54_LEI, 0, 127, 0));
	emit(t, abc4(O54_GTI, 0, 127, 0));
	emit(t, abc4(O54_GEI, 0, 127, 0));
	emit(t, abc4(O54_RETURN0, 0, 0, 0));
	expect(t, 0, "metamethod", old ? "order" : "lt");
	expect(t, 1, "metamethod", old ? "order" : "le");
	expect(t, 2, "metamethod", old ? "order" : "lt");
	expect(t, 3, "metamethod", old ? "order" : "le");
	if (old) {
		expect(t, 4, NULL, NULL);
		expect(t, 5, NULL, NULL);
	} else {
		expect(t, 4, "metamethod", "lt");
		expect(t, 5, "metamethod", "le");
	}
	free(t);
}
END_TEST

/* (a and f or g)() as luac5.4 compiles it: conditional, no name. */
START_TEST(test_54_conditional)
{
	int rel = 50400 + _i;
	struct tp *t = tp_new(rel);

	upval(t, "_ENV");
	kstr(t, "a");
	kstr(t, "f");
	kstr(t, "g");
	emit(t, abc4(O54_VARARGPREP, 0, 0, 0));
	emit(t, abc4(O54_GETTABUP, 0, 0, 0));
	emit(t, abc4(O54_TEST, 0, 0, 0));
	emit(t, sj4(O54_JMP, 3));
	emit(t, abc4(O54_GETTABUP, 0, 0, 1));
	emit(t, abck4(O54_TEST, 0, 0, 0, 1));
	emit(t, sj4(O54_JMP, 1));
	emit(t, abc4(O54_GETTABUP, 0, 0, 2));
	emit(t, abc4(O54_CALL, 0, 1, 1));
	emit(t, abc4(O54_RETURN, 0, 1, 1));
	expect(t, 8, NULL, NULL);
	/* Without the jumps the last GETTABUP names the function. */
	t->code[3] = abc4(O54_MOVE, 5, 5, 0);
	t->code[6] = abc4(O54_MOVE, 5, 5, 0);
	expect(t, 8, "global", "g");
	free(t);
}
END_TEST

/* MOVE chains, and a MOVE from a higher register (names nothing). */
START_TEST(test_54_move_chain)
{
	int rel = 50400 + _i;
	struct tp *t = tp_new(rel);

	upval(t, "_ENV");
	kstr(t, "f");
	emit(t, abc4(O54_GETTABUP, 0, 0, 0));
	emit(t, abc4(O54_MOVE, 1, 0, 0));
	emit(t, abc4(O54_MOVE, 2, 1, 0));
	emit(t, abc4(O54_CALL, 2, 1, 1));
	emit(t, abc4(O54_MOVE, 2, 3, 0));
	emit(t, abc4(O54_CALL, 2, 1, 1));
	emit(t, abc4(O54_RETURN0, 0, 0, 0));
	expect(t, 3, "global", "f");
	expect(t, 5, NULL, NULL);
	local(t, "a", 1, 7);		/* local a = f; local b = a; b() */
	expect(t, 3, "local", "a");
	free(t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Lua 5.5 (loops: 0 = 5.5.0, 1 = 5.5.1 and 2 = 5.6.0, newer than any
 * known release: read with 5.5.0's rules) */

static const int rel55[] = { 50500, 50501, 50600 };

/* gfn(); local t = {}; t:m(); t._ENV.x(); local s = "_ENV";
 * (("_ENV")).y(): 5.5.0's words.  Its SELF names K[C] with k = 0, and
 * a register holding the string "_ENV" is no environment (5.4.8 too);
 * the same words read with 5.4.7's rules name "method '?'" and
 * "global 'y'". */
START_TEST(test_55_calls)
{
	struct tp *t = tp_new(rel55[_i]);
	static const uint32_t words[] = {
		0x00000053, 0x0000000b, 0x01010044, 0x00000013, 0x00000054,
		0x01000094, 0x010200c4, 0x0200008e, 0x0301008e, 0x010100c4,
		0x00010083, 0x00010103, 0x0402010e, 0x01010144, 0x01010146,
	};

	ck_assert_uint_eq(words[0], abc4(O55_VARARGPREP, 0, 0, 0));
	ck_assert_uint_eq(words[4], ax4(O55_EXTRAARG, 0));
	ck_assert_uint_eq(words[5], abck4(O55_SELF, 1, 0, 1, 0));
	ck_assert_uint_eq(words[14], abc4(O55_RETURN, 2, 1, 1));
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		emit(t, words[i]);
	upval(t, "_ENV");
	kstr(t, "gfn");
	kstr(t, "m");
	kstr(t, "_ENV");
	kstr(t, "x");
	kstr(t, "y");
	local(t, "t", 5, 15);
	local(t, "s", 11, 15);
	expect(t, 0, NULL, NULL);
	expect(t, 1, "metamethod", "index");
	expect(t, 2, "global", "gfn");
	expect(t, 5, "metamethod", "index");
	expect(t, 6, "method", "m");
	expect(t, 9, "field", "x");
	expect(t, 13, "field", "y");
	expect(t, 14, "metamethod", "close");
	t->v.release = 50407;
	expect(t, 6, "method", "?");
	expect(t, 13, "global", "y");
	free(t);
}
END_TEST

/* local function f(...t) local a = t[1]; a(); t[2](); local n = t.n end:
 * GETVARG (5.5's opcode 81, 5.4's VARARGPREP) sets its register; and
 * global gfun = show; gfun() with ERRNNIL (82, 5.4's EXTRAARG). */
START_TEST(test_55_vararg_global)
{
	struct tp *t = tp_new(rel55[_i]);
	static const uint32_t words[] = {
		0x00000053, 0x80000081, 0x010000d1, 0x00010100, 0x01010144,
		0x80008101, 0x02000151, 0x01010144, 0x00000103, 0x02000151,
		0x010101c6,
	};

	ck_assert_uint_eq(words[2], abc4(O55_GETVARG, 1, 0, 1));
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		emit(t, words[i]);
	kstr(t, "n");
	local(t, "t", 1, 11);
	local(t, "a", 3, 11);
	local(t, "n", 10, 11);
	expect(t, 4, "local", "a");
	expect(t, 7, NULL, NULL);
	free(t);

	t = tp_new(rel55[_i]);
	upval(t, "_ENV");
	kstr(t, "gfun");
	emit(t, abc4(O55_VARARGPREP, 0, 0, 0));
	emit(t, abc4(O55_GETTABUP, 3, 0, 0));
	emit(t, abx4(O55_ERRNNIL, 3, 1) | 0);
	emit(t, abc4(O55_SETTABUP, 0, 0, 2));
	emit(t, abc4(O55_GETTABUP, 2, 0, 0));
	emit(t, abc4(O55_CALL, 2, 1, 1));
	emit(t, abc4(O55_RETURN, 3, 1, 1));
	ck_assert_uint_eq(t->code[1], 0x0000018b);
	ck_assert_uint_eq(t->code[2], 0x000081d2);
	ck_assert_uint_eq(t->code[3], 0x0200000f);
	expect(t, 2, NULL, NULL);
	expect(t, 3, "metamethod", "newindex");
	expect(t, 5, "global", "gfun");
	free(t);
}
END_TEST

/* The event operands and comparison names are 5.4.3's. */
START_TEST(test_55_metamethods)
{
	struct tp *t = tp_new(rel55[_i]);

	emit(t, abc4(O55_SHLI, 0, 1, 3));
	emit(t, abc4(O55_MMBINI, 1, 3, TM_SHL));
	emit(t, abc4(O55_SHRI, 0, 1, 3));
	emit(t, abc4(O55_MMBINI, 1, 3, TM_SHR));
	emit(t, abc4(O55_GTI, 0, 127, 0));
	emit(t, abc4(O55_TFORCALL, 0, 0, 1));
	emit(t, abc4(O55_CONCAT, 0, 2, 0));
	emit(t, abc4(O55_RETURN0, 0, 0, 0));
	expect(t, 0, NULL, NULL);
	expect(t, 1, "metamethod", "shl");
	expect(t, 3, "metamethod", "shr");
	expect(t, 4, "metamethod", "lt");
	expect(t, 5, "for iterator", "for iterator");
	expect(t, 6, "metamethod", "concat");
	expect(t, 7, NULL, NULL);
	free(t);
}
END_TEST

/* A patch release newer than the newest known one of its major version
 * (5.1.6, 5.2.5, 5.3.7, 5.4.9) is read with that one's rules: names,
 * not none (the layout warns that it is unknown). */
START_TEST(test_newer_releases)
{
	struct tp *t = tp_new(50106);

	kstr(t, "gfn");
	emit(t, abx5(O51_GETGLOBAL, 0, 0));
	emit(t, abc5(O51_CALL, 0, 1, 1));
	emit(t, abc5(O51_RETURN, 0, 1, 0));
	expect(t, 1, "global", "gfn");
	free(t);
	for (int i = 0; i < 2; i++) {
		const struct ops53 *o = ops53_for(i);

		t = tp_new(o->release + 1);
		upval(t, "_ENV");
		kstr(t, "gfn");
		emit(t, abc5(o->GETTABUP, 0, 0, RK(0)));
		emit(t, abc5(o->CALL, 0, 1, 1));
		emit(t, abc5(o->RETURN, 0, 1, 0));
		expect(t, 1, "global", "gfn");
		free(t);
	}
	t = tp_new(50409);
	upval(t, "_ENV");
	kstr(t, "gfn");
	emit(t, abc4(O54_GETTABUP, 0, 0, 0));
	emit(t, abc4(O54_CALL, 0, 1, 1));
	emit(t, abc4(O54_RETURN0, 0, 0, 0));
	expect(t, 1, "global", "gfn");
	free(t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Nonsense in, NULL out. */

static const int all_releases[] = {
	50100, 50105, 50200, 50204, 50300, 50306,
	50400, 50401, 50402, 50403, 50404, 50405, 50406, 50407, 50408,
	50500, 50600,
};

START_TEST(test_bad_arguments)
{
	struct tp *t = tp_new(50404);
	const char *nm = (const char *)1;
	/* (Not before 5.1; a newer release than the newest known is
	 * read with the newest rules, see test_newer_releases.) */
	static const int bad_rel[] = { 0, -1, 50000, 50099, 40404 };
	size_t i;

	upval(t, "_ENV");
	kstr(t, "gfn");
	emit(t, abc4(O54_GETTABUP, 0, 0, 0));
	emit(t, abc4(O54_CALL, 0, 1, 1));
	emit(t, abc4(O54_RETURN0, 0, 0, 0));
	expect(t, 1, "global", "gfn");
	ck_assert_ptr_null(lc_names_from_call(NULL, 0, &nm));
	ck_assert_ptr_null(nm);
	ck_assert_str_eq(lc_names_from_call(&t->v, 1, NULL), "global");
	expect(t, -1, NULL, NULL);
	expect(t, 3, NULL, NULL);
	expect(t, 1 << 30, NULL, NULL);
	for (i = 0; i < sizeof(bad_rel) / sizeof(bad_rel[0]); i++) {
		t->v.release = bad_rel[i];
		expect(t, 1, NULL, NULL);
	}
	t->v.release = 50404;
	t->v.code = NULL;
	expect(t, 1, NULL, NULL);
	t->v.code = t->code;
	t->v.ncode = -5;
	expect(t, 1, NULL, NULL);
	t->v.ncode = 3;
	t->v.k = NULL;			/* constant array missing */
	expect(t, 1, NULL, NULL);
	t->v.k = t->k;
	t->v.nupvalnames = -1;
	expect(t, 1, NULL, NULL);
	free(t);
}
END_TEST

/* Indexes past the arrays: no name rather than a read out of bounds. */
START_TEST(test_out_of_range_indexes)
{
	struct tp *t = tp_new(50404), *t3 = tp_new(50306);

	upval(t, "_ENV");
	kstr(t, "gfn");
	emit(t, abc4(O54_GETTABUP, 0, 0, 5));		/* K[5] missing */
	emit(t, abc4(O54_CALL, 0, 1, 1));
	emit(t, abc4(O54_GETTABUP, 0, 3, 0));		/* upvalue 3 */
	emit(t, abc4(O54_CALL, 0, 1, 1));
	emit(t, abc4(O54_GETUPVAL, 0, 9, 0));
	emit(t, abc4(O54_CALL, 0, 1, 1));
	emit(t, abx4(O54_LOADK, 0, 100000));
	emit(t, abc4(O54_CALL, 0, 1, 1));
	emit(t, abck4(O54_SELF, 0, 1, 200, 1));
	emit(t, abc4(O54_CALL, 0, 2, 1));
	emit(t, abc4(O54_MOVE, 0, 0, 0));
	emit(t, abx4(O54_LOADKX, 0, 0));		/* no EXTRAARG */
	expect(t, 1, NULL, NULL);
	expect(t, 3, NULL, NULL);
	expect(t, 5, NULL, NULL);
	expect(t, 7, NULL, NULL);
	expect(t, 9, NULL, NULL);
	expect(t, 11, NULL, NULL);

	upval(t3, "_ENV");
	kstr(t3, "gfn");
	emit(t3, abc5(O53_GETTABUP, 0, 0, RK(200)));
	emit(t3, abc5(O53_CALL, 0, 1, 1));
	emit(t3, abx5(O53_LOADKX, 0, 0));
	emit(t3, ax5(O53_EXTRAARG, 1 << 20));
	emit(t3, abc5(O53_CALL, 0, 1, 1));
	emit(t3, abc5(O53_GETUPVAL, 0, 7, 0));
	emit(t3, abc5(O53_CALL, 0, 1, 1));
	emit(t3, abx5(O53_LOADKX, 0, 0));
	expect(t3, 1, NULL, NULL);
	expect(t3, 4, NULL, NULL);
	expect(t3, 6, NULL, NULL);
	free(t);
	free(t3);
}
END_TEST

/* Key names nested deeper than any compiled code needs: each GETTABLE
 * takes its key from the register the previous one set.  5.3 recurses
 * once per level; 5.4.0-5.4.6 twice (key and table), which is
 * exponential.  Both must give up (NULL) rather than overflow the
 * stack or spin. */
START_TEST(test_deep_and_exponential)
{
	static const int rels[] = { 50306, 50404, 50407 };
	size_t r;

	for (r = 0; r < sizeof(rels) / sizeof(rels[0]); r++) {
		struct tp *t = tp_new(rels[r]);
		bool is54 = rels[r] >= 50400;
		int i, n = 2000, pc;

		upval(t, "_ENV");
		kstr(t, "k");
		emit(t, is54 ? abx4(O54_LOADK, 1, 0) : abx5(O53_LOADK, 1, 0));
		for (i = 0; i < n; i++)
			emit(t, is54 ? abc4(O54_GETTABLE, 1, 1, 1)
				     : abc5(O53_GETTABLE, 1, 1, 1));
		pc = emit(t, is54 ? abc4(O54_CALL, 1, 1, 1)
				  : abc5(O53_CALL, 1, 1, 1));
		/* 5.4.7 looks at most one level down: a real answer. */
		if (rels[r] == 50407)
			expect(t, pc, "field", "?");
		else
			expect(t, pc, NULL, NULL);
		free(t);
	}
}
END_TEST

/* A few levels of the same shape are fine in every release. */
START_TEST(test_shallow_nesting)
{
	static const int rels[] = { 50204, 50306, 50404, 50407 };
	size_t r;

	for (r = 0; r < sizeof(rels) / sizeof(rels[0]); r++) {
		struct tp *t = tp_new(rels[r]);
		bool is54 = rels[r] >= 50400;
		int i, pc;

		upval(t, "_ENV");
		kstr(t, "k");
		emit(t, is54 ? abx4(O54_LOADK, 1, 0) : abx5(O53_LOADK, 1, 0));
		if (rels[r] == 50204)
			t->code[0] = abx5(O52_LOADK, 1, 0);
		for (i = 0; i < 12; i++)
			emit(t, is54 ? abc4(O54_GETTABLE, 1, 1, 1)
				     : abc5(rels[r] == 50204 ? O52_GETTABLE
							     : O53_GETTABLE,
					    1, 1, 1));
		pc = emit(t, is54 ? abc4(O54_CALL, 1, 1, 1)
				  : abc5(rels[r] == 50204 ? O52_CALL
							  : O53_CALL, 1, 1, 1));
		expect(t, pc, "field", "?");
		free(t);
	}
}
END_TEST

/* Random words, sizes and tables: must not crash, and a namewhat
 * always comes with a name.  (Loop over releases.) */
START_TEST(test_random_garbage)
{
	int rel = all_releases[_i];
	unsigned seed = 12345u + (unsigned)_i;
	static const char *const names[] = { "_ENV", "x", NULL, "", "f" };
	int round;

	for (round = 0; round < 300; round++) {
		struct tp *t = tp_new(rel);
		int n, i, pc;

		n = 1 + rand_r(&seed) % 200;
		for (i = 0; i < n; i++) {
			uint32_t w = (uint32_t)rand_r(&seed) << 16 ^
				     (uint32_t)rand_r(&seed);

			/* Bias towards valid opcodes. */
			if (rand_r(&seed) % 2)
				w = (w & ~0x3fu) |
				    (uint32_t)(rand_r(&seed) % 40);
			emit(t, w);
		}
		for (i = rand_r(&seed) % 20; i > 0; i--) {
			if (rand_r(&seed) % 3)
				kstr(t, names[rand_r(&seed) % 5]);
			else
				knum(t);
		}
		for (i = rand_r(&seed) % 6; i > 0; i--)
			upval(t, names[rand_r(&seed) % 5]);
		for (i = rand_r(&seed) % 8; i > 0; i--)
			local(t, names[rand_r(&seed) % 5],
			      rand_r(&seed) % (n + 2) - 1,
			      rand_r(&seed) % (n + 2));
		t->v.maxstacksize = rand_r(&seed) % 260;
		t->v.numparams = rand_r(&seed) % 5;
		t->v.is_vararg = rand_r(&seed) % 8;
		for (pc = -1; pc <= n; pc++) {
			const char *nm = NULL;
			const char *what = lc_names_from_call(&t->v, pc, &nm);

			/* (Only call into Check on failure: each
			 * assertion costs a message to the runner.) */
			if ((what == NULL) != (nm == NULL))
				ck_abort_msg("release %d round %d pc %d",
					     rel, round, pc);
			lc_names_local(&t->v, pc & 7, pc);
		}
		free(t);
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* lc_names_local */

START_TEST(test_local_names)
{
	struct tp *t = tp_new(50404);

	local(t, "a", 0, 10);
	local(t, "b", 2, 5);
	local(t, "c", 3, 10);
	local(t, NULL, 4, 10);		/* unreadable name */
	local(t, "late", 20, 30);
	ck_assert_str_eq(lc_names_local(&t->v, 1, 0), "a");
	ck_assert_ptr_null(lc_names_local(&t->v, 2, 0));
	ck_assert_str_eq(lc_names_local(&t->v, 2, 3), "b");
	ck_assert_str_eq(lc_names_local(&t->v, 3, 3), "c");
	ck_assert_str_eq(lc_names_local(&t->v, 2, 5), "c");	/* b dead */
	ck_assert_str_eq(lc_names_local(&t->v, 3, 5), "?");
	ck_assert_ptr_null(lc_names_local(&t->v, 4, 5));
	ck_assert_ptr_null(lc_names_local(&t->v, 0, 3));
	ck_assert_ptr_null(lc_names_local(&t->v, -1, 3));
	ck_assert_str_eq(lc_names_local(&t->v, 1, 25), "late");
	ck_assert_ptr_null(lc_names_local(NULL, 1, 0));
	t->v.nlocvars = -3;
	ck_assert_ptr_null(lc_names_local(&t->v, 1, 0));
	t->v.nlocvars = 5;
	t->v.locvars = NULL;
	ck_assert_ptr_null(lc_names_local(&t->v, 1, 0));
	free(t);
}
END_TEST

/* An unreadable local name still makes the register a local. */
START_TEST(test_local_unreadable_name_in_call)
{
	struct tp *t = tp_new(50306);

	emit(t, abc5(O53_CALL, 0, 1, 1));
	emit(t, abc5(O53_RETURN, 0, 1, 0));
	local(t, NULL, 0, 2);
	expect(t, 0, "local", "?");
	free(t);
}
END_TEST

/* A key constant of a kind the compiler never puts in the instruction:
 * 5.1 GETGLOBAL and 5.4+ GETTABUP, GETFIELD and SELF with a constant
 * key take strings only, so a number there is damage; 5.3's GETTABUP
 * takes any constant (_ENV[1]()), so it is a name of "?". */
START_TEST(test_key_kind_damage)
{
	struct tp *t1 = tp_new(50105), *t4 = tp_new(50404), *t3 = tp_new(50306);
	const char *name;
	bool damaged;

	knum(t1);
	emit(t1, abx5(O51_GETGLOBAL, 0, 0));
	emit(t1, abc5(O51_CALL, 0, 1, 1));
	damaged = false;
	ck_assert_ptr_null(lc_names_from_call_checked(&t1->v, 1, &name, &damaged));
	ck_assert(damaged);

	upval(t4, "_ENV");
	knum(t4);
	emit(t4, abc4(O54_GETTABUP, 0, 0, 0));
	emit(t4, abc4(O54_CALL, 0, 1, 1));
	emit(t4, abc4(O54_GETFIELD, 0, 0, 0));
	emit(t4, abc4(O54_CALL, 0, 1, 1));
	emit(t4, abck4(O54_SELF, 0, 0, 0, 1));
	emit(t4, abc4(O54_CALL, 0, 2, 1));
	for (int pc = 1; pc <= 5; pc += 2) {
		damaged = false;
		lc_names_from_call_checked(&t4->v, pc, &name, &damaged);
		ck_assert_msg(damaged, "5.4 pc %d: a number key is not damage", pc);
	}
	kstr(t4, "gfn");
	t4->code[0] = abc4(O54_GETTABUP, 0, 0, 1);
	damaged = false;
	ck_assert_str_eq(lc_names_from_call_checked(&t4->v, 1, &name, &damaged),
			 "global");
	ck_assert_str_eq(name, "gfn");
	ck_assert(!damaged);

	upval(t3, "_ENV");
	knum(t3);
	emit(t3, abc5(O53_GETTABUP, 0, 0, RK(0)));
	emit(t3, abc5(O53_CALL, 0, 1, 1));
	damaged = false;
	ck_assert_str_eq(lc_names_from_call_checked(&t3->v, 1, &name, &damaged),
			 "global");
	ck_assert_str_eq(name, "?");
	ck_assert(!damaged);
	free(t1);
	free(t3);
	free(t4);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *names_suite(void)
{
	Suite *s = suite_create("lua_names");
	TCase *tc;
	int nrel = (int)(sizeof(all_releases) / sizeof(all_releases[0]));

	tc = tcase_create("encoding");
	tcase_add_test(tc, test_encoders_match_luac);
	suite_add_tcase(s, tc);

	tc = tcase_create("lua51");
	tcase_add_test(tc, test_51_global);
	tcase_add_test(tc, test_51_local);
	tcase_add_test(tc, test_51_method_field);
	tcase_add_test(tc, test_51_upvalue);
	tcase_add_test(tc, test_51_for_generator);
	tcase_add_test(tc, test_51_closure_pseudo);
	tcase_add_test(tc, test_51_follows_jumps);
	tcase_add_test(tc, test_51_move_chain);
	tcase_add_test(tc, test_51_no_metamethods);
	tcase_add_test(tc, test_51_verifier);
	tcase_add_test(tc, test_key_kind_damage);
	suite_add_tcase(s, tc);

	tc = tcase_create("lua52_53");	/* loops: 0 = 5.2.4, 1 = 5.3.6 */
	tcase_add_loop_test(tc, test_53_global, 0, 2);
	tcase_add_loop_test(tc, test_53_local_method_field, 0, 2);
	tcase_add_loop_test(tc, test_53_register_keys, 0, 2);
	tcase_add_loop_test(tc, test_53_upvalue_constant, 0, 2);
	tcase_add_loop_test(tc, test_53_for_iterator, 0, 2);
	tcase_add_loop_test(tc, test_53_metamethods, 0, 2);
	tcase_add_loop_test(tc, test_53_conditional, 0, 2);
	tcase_add_loop_test(tc, test_53_move_chain, 0, 2);
	tcase_add_test(tc, test_52_53_test_quirk);
	tcase_add_test(tc, test_53_bitwise_metamethods);
	suite_add_tcase(s, tc);

	/* loops: 5.4.0 to 5.4.8, and 5.4.9 (newer than any known: 5.4.8's
	 * rules) */
	tc = tcase_create("lua54");
	tcase_add_loop_test(tc, test_54_global, 0, 10);
	tcase_add_loop_test(tc, test_54_fields_methods, 0, 10);
	tcase_add_loop_test(tc, test_54_env_field, 0, 10);
	tcase_add_loop_test(tc, test_54_upvalue_constant_iterator, 0, 10);
	tcase_add_loop_test(tc, test_54_metamethods, 0, 10);
	tcase_add_loop_test(tc, test_54_comparisons, 0, 10);
	tcase_add_loop_test(tc, test_54_conditional, 0, 10);
	tcase_add_loop_test(tc, test_54_move_chain, 0, 10);
	suite_add_tcase(s, tc);

	tc = tcase_create("lua55");
	tcase_add_loop_test(tc, test_55_calls, 0, 3);
	tcase_add_loop_test(tc, test_55_vararg_global, 0, 3);
	tcase_add_loop_test(tc, test_55_metamethods, 0, 3);
	tcase_add_test(tc, test_newer_releases);
	suite_add_tcase(s, tc);

	tc = tcase_create("robustness");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_out_of_range_indexes);
	tcase_add_test(tc, test_deep_and_exponential);
	tcase_add_test(tc, test_shallow_nesting);
	tcase_add_loop_test(tc, test_random_garbage, 0, nrel);
	suite_add_tcase(s, tc);

	tc = tcase_create("locals");
	tcase_add_test(tc, test_local_names);
	tcase_add_test(tc, test_local_unreadable_name_in_call);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(names_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
