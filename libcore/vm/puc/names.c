/* Function and variable names from Lua bytecode, as Lua's own debug
 * interface derives them.  See vm/puc/names.h for the contract.
 *
 * This file re-implements, for host-side copies of a Proto, the naming
 * part of ldebug.c (symbexec/getobjname/getfuncname in 5.1,
 * findsetreg/getobjname/getfuncname in 5.2 and 5.3, findsetreg/
 * getobjname/funcnamefromcode in 5.4) and lfunc.c:luaF_getlocalname.
 * The code is written from scratch; each function names the Lua
 * function and releases it mirrors.
 *
 * Everything in the view comes from a possibly corrupt target, so:
 *   - every array index is checked against its size;
 *   - an index that is out of range anywhere along the way makes the
 *     whole answer NULL (Lua would read garbage memory there; we cannot
 *     mirror that, and a made-up name is worse than none);
 *   - recursion is bounded by NAMES_MAX_DEPTH and all scanning of the
 *     code array is charged to a step budget (NAMES_BUDGET), because
 *     5.4.0-5.4.6's getobjname branches twice per GETTABLE and can take
 *     exponential time on adversarial code.  Exceeding either limit
 *     also yields NULL.  Compiled code stays far below both: the depth
 *     follows expression nesting, and the budget allows over a dozen
 *     full scans of a million-instruction function.
 *
 * Owned by libcore; internal, not installed.
 */

#include "vm/puc/names.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Deepest nesting of name look-ups (kname/rname/gxf recursion).  Lua's
 * parser caps expression nesting at LUAI_MAXCCALLS (200), which bounds
 * the depth real code can need. */
#define NAMES_MAX_DEPTH		256

/* Instructions we are willing to scan for one query. */
#define NAMES_BUDGET		(16L * 1024 * 1024)

/* ------------------------------------------------------------------ */
/* Canonical opcodes.
 *
 * Each release numbers its opcodes differently; the per-release tables
 * below translate a raw opcode into one of these so the logic can be
 * shared.  Opcodes that naming never looks at individually become
 * COP_OTHER and only contribute their "sets register A" flag.
 */
enum cop {
	COP_OTHER = 0,
	COP_MOVE,
	COP_LOADK,
	COP_LOADKX,
	COP_LOADBOOL,		/* 5.1 only matters */
	COP_LOADNIL,
	COP_GETUPVAL,
	COP_SETUPVAL,
	COP_GETGLOBAL,		/* 5.1 */
	COP_SETGLOBAL,		/* 5.1 */
	COP_GETTABUP,		/* 5.2+ */
	COP_GETTABLE,
	COP_GETI,		/* 5.4 */
	COP_GETFIELD,		/* 5.4 */
	COP_SETTABUP,
	COP_SETTABLE,
	COP_SETI,
	COP_SETFIELD,
	COP_SELF,
	COP_ADD,
	COP_SUB,
	COP_MUL,
	COP_MOD,
	COP_POW,
	COP_DIV,
	COP_IDIV,
	COP_BAND,
	COP_BOR,
	COP_BXOR,
	COP_SHL,
	COP_SHR,
	COP_MMBIN,		/* 5.4: MMBIN, MMBINI, MMBINK */
	COP_UNM,
	COP_BNOT,
	COP_LEN,
	COP_CONCAT,
	COP_CLOSE,
	COP_JMP,
	COP_EQ,
	COP_LT,
	COP_LE,
	COP_LTI,		/* 5.4 */
	COP_LEI,
	COP_GTI,
	COP_GEI,
	COP_TEST,
	COP_CALL,
	COP_TAILCALL,
	COP_RETURN,
	COP_FORLOOP,
	COP_FORPREP,
	COP_TFORCALL,		/* 5.2+ */
	COP_TFORLOOP,
	COP_SETLIST,
	COP_CLOSURE,
	COP_VARARG,
};

/* Properties of a raw opcode (lopcodes.c:luaP_opmodes, reduced). */
#define F_SETA	0x01	/* testAMode: instruction sets register A */
#define F_TEST	0x02	/* testTMode: next instruction is a jump */
#define F_MM	0x04	/* testMMMode (5.4): calls a metamethod */

/* Instruction formats and 5.1 argument modes, for 5.1's symbexec
 * checks (lopcodes.h: enum OpMode, enum OpArgMask). */
enum fmt { FMT_ABC, FMT_ABX, FMT_ASBX, FMT_AX, FMT_SJ };
enum argm { ARG_N, ARG_U, ARG_R, ARG_K };

struct opinfo {
	unsigned char op;	/* enum cop */
	unsigned char flags;	/* F_* */
	unsigned char fmt;	/* enum fmt (used for 5.1 only) */
	unsigned char bmode;	/* enum argm (used for 5.1 only) */
	unsigned char cmode;	/* enum argm (used for 5.1 only) */
};

#define OPI(op, fl, fm, b, c) \
	{ COP_##op, (fl), FMT_##fm, ARG_##b, ARG_##c }
#define OPX(fl) \
	{ COP_OTHER, (fl), FMT_ABC, ARG_N, ARG_N }

/* Lua 5.1.0-5.1.5 opcodes, in lopcodes.h order (38 opcodes).  Flags and
 * modes as in 5.1's luaP_opmodes. */
static const struct opinfo ops51[] = {
	OPI(MOVE, F_SETA, ABC, R, N),		/*  0 MOVE */
	OPI(LOADK, F_SETA, ABX, K, N),		/*  1 LOADK */
	OPI(LOADBOOL, F_SETA, ABC, U, U),	/*  2 LOADBOOL */
	OPI(LOADNIL, F_SETA, ABC, R, N),	/*  3 LOADNIL */
	OPI(GETUPVAL, F_SETA, ABC, U, N),	/*  4 GETUPVAL */
	OPI(GETGLOBAL, F_SETA, ABX, K, N),	/*  5 GETGLOBAL */
	OPI(GETTABLE, F_SETA, ABC, R, K),	/*  6 GETTABLE */
	OPI(SETGLOBAL, 0, ABX, K, N),		/*  7 SETGLOBAL */
	OPI(SETUPVAL, 0, ABC, U, N),		/*  8 SETUPVAL */
	OPI(SETTABLE, 0, ABC, K, K),		/*  9 SETTABLE */
	OPI(OTHER, F_SETA, ABC, U, U),		/* 10 NEWTABLE */
	OPI(SELF, F_SETA, ABC, R, K),		/* 11 SELF */
	OPI(ADD, F_SETA, ABC, K, K),		/* 12 ADD */
	OPI(SUB, F_SETA, ABC, K, K),		/* 13 SUB */
	OPI(MUL, F_SETA, ABC, K, K),		/* 14 MUL */
	OPI(DIV, F_SETA, ABC, K, K),		/* 15 DIV */
	OPI(MOD, F_SETA, ABC, K, K),		/* 16 MOD */
	OPI(POW, F_SETA, ABC, K, K),		/* 17 POW */
	OPI(UNM, F_SETA, ABC, R, N),		/* 18 UNM */
	OPI(OTHER, F_SETA, ABC, R, N),		/* 19 NOT */
	OPI(LEN, F_SETA, ABC, R, N),		/* 20 LEN */
	OPI(CONCAT, F_SETA, ABC, R, R),		/* 21 CONCAT */
	OPI(JMP, 0, ASBX, R, N),		/* 22 JMP */
	OPI(EQ, F_TEST, ABC, K, K),		/* 23 EQ */
	OPI(LT, F_TEST, ABC, K, K),		/* 24 LT */
	OPI(LE, F_TEST, ABC, K, K),		/* 25 LE */
	OPI(TEST, F_TEST | F_SETA, ABC, R, U),	/* 26 TEST */
	OPI(OTHER, F_TEST | F_SETA, ABC, R, U),	/* 27 TESTSET */
	OPI(CALL, F_SETA, ABC, U, U),		/* 28 CALL */
	OPI(TAILCALL, F_SETA, ABC, U, U),	/* 29 TAILCALL */
	OPI(RETURN, 0, ABC, U, N),		/* 30 RETURN */
	OPI(FORLOOP, F_SETA, ASBX, R, N),	/* 31 FORLOOP */
	OPI(FORPREP, F_SETA, ASBX, R, N),	/* 32 FORPREP */
	OPI(TFORLOOP, F_TEST, ABC, N, U),	/* 33 TFORLOOP */
	OPI(SETLIST, 0, ABC, U, U),		/* 34 SETLIST */
	OPI(CLOSE, 0, ABC, N, N),		/* 35 CLOSE */
	OPI(CLOSURE, F_SETA, ABX, U, N),	/* 36 CLOSURE */
	OPI(VARARG, F_SETA, ABC, U, N),		/* 37 VARARG */
};

/* Lua 5.2.0-5.2.4 opcodes (40).  Only the A flag matters here. */
static const struct opinfo ops52[] = {
	OPI(MOVE,	F_SETA, ABC, N, N),	/*  0 MOVE */
	OPI(LOADK,	F_SETA, ABX, N, N),	/*  1 LOADK */
	OPI(LOADKX,	F_SETA, ABX, N, N),	/*  2 LOADKX */
	OPX(F_SETA),				/*  3 LOADBOOL */
	OPI(LOADNIL,	F_SETA, ABC, N, N),	/*  4 LOADNIL */
	OPI(GETUPVAL,	F_SETA, ABC, N, N),	/*  5 GETUPVAL */
	OPI(GETTABUP,	F_SETA, ABC, N, N),	/*  6 GETTABUP */
	OPI(GETTABLE,	F_SETA, ABC, N, N),	/*  7 GETTABLE */
	OPI(SETTABUP,	0,      ABC, N, N),	/*  8 SETTABUP */
	OPX(0),					/*  9 SETUPVAL */
	OPI(SETTABLE,	0,      ABC, N, N),	/* 10 SETTABLE */
	OPX(F_SETA),				/* 11 NEWTABLE */
	OPI(SELF,	F_SETA, ABC, N, N),	/* 12 SELF */
	OPI(ADD,	F_SETA, ABC, N, N),	/* 13 ADD */
	OPI(SUB,	F_SETA, ABC, N, N),	/* 14 SUB */
	OPI(MUL,	F_SETA, ABC, N, N),	/* 15 MUL */
	OPI(DIV,	F_SETA, ABC, N, N),	/* 16 DIV */
	OPI(MOD,	F_SETA, ABC, N, N),	/* 17 MOD */
	OPI(POW,	F_SETA, ABC, N, N),	/* 18 POW */
	OPI(UNM,	F_SETA, ABC, N, N),	/* 19 UNM */
	OPX(F_SETA),				/* 20 NOT */
	OPI(LEN,	F_SETA, ABC, N, N),	/* 21 LEN */
	OPI(CONCAT,	F_SETA, ABC, N, N),	/* 22 CONCAT */
	OPI(JMP,	0,      ASBX, N, N),	/* 23 JMP */
	OPI(EQ,		F_TEST, ABC, N, N),	/* 24 EQ */
	OPI(LT,		F_TEST, ABC, N, N),	/* 25 LT */
	OPI(LE,		F_TEST, ABC, N, N),	/* 26 LE */
	OPI(TEST,	F_TEST, ABC, N, N),	/* 27 TEST */
	OPX(F_TEST|F_SETA),			/* 28 TESTSET */
	OPI(CALL,	F_SETA, ABC, N, N),	/* 29 CALL */
	OPI(TAILCALL,	F_SETA, ABC, N, N),	/* 30 TAILCALL */
	OPI(RETURN,	0,      ABC, N, N),	/* 31 RETURN */
	OPI(FORLOOP,	F_SETA, ASBX, N, N),	/* 32 FORLOOP */
	OPI(FORPREP,	F_SETA, ASBX, N, N),	/* 33 FORPREP */
	OPI(TFORCALL,	0,      ABC, N, N),	/* 34 TFORCALL */
	OPI(TFORLOOP,	F_SETA, ASBX, N, N),	/* 35 TFORLOOP */
	OPI(SETLIST,	0,      ABC, N, N),	/* 36 SETLIST */
	OPI(CLOSURE,	F_SETA, ABX, N, N),	/* 37 CLOSURE */
	OPI(VARARG,	F_SETA, ABC, N, N),	/* 38 VARARG */
	OPX(0),					/* 39 EXTRAARG */
};

/* Lua 5.3.0-5.3.6 opcodes (47): 5.2's set plus integer division and
 * bitwise operators, with DIV moved after POW. */
static const struct opinfo ops53[] = {
	OPI(MOVE,	F_SETA, ABC, N, N),	/*  0 MOVE */
	OPI(LOADK,	F_SETA, ABX, N, N),	/*  1 LOADK */
	OPI(LOADKX,	F_SETA, ABX, N, N),	/*  2 LOADKX */
	OPX(F_SETA),				/*  3 LOADBOOL */
	OPI(LOADNIL,	F_SETA, ABC, N, N),	/*  4 LOADNIL */
	OPI(GETUPVAL,	F_SETA, ABC, N, N),	/*  5 GETUPVAL */
	OPI(GETTABUP,	F_SETA, ABC, N, N),	/*  6 GETTABUP */
	OPI(GETTABLE,	F_SETA, ABC, N, N),	/*  7 GETTABLE */
	OPI(SETTABUP,	0,      ABC, N, N),	/*  8 SETTABUP */
	OPX(0),					/*  9 SETUPVAL */
	OPI(SETTABLE,	0,      ABC, N, N),	/* 10 SETTABLE */
	OPX(F_SETA),				/* 11 NEWTABLE */
	OPI(SELF,	F_SETA, ABC, N, N),	/* 12 SELF */
	OPI(ADD,	F_SETA, ABC, N, N),	/* 13 ADD */
	OPI(SUB,	F_SETA, ABC, N, N),	/* 14 SUB */
	OPI(MUL,	F_SETA, ABC, N, N),	/* 15 MUL */
	OPI(MOD,	F_SETA, ABC, N, N),	/* 16 MOD */
	OPI(POW,	F_SETA, ABC, N, N),	/* 17 POW */
	OPI(DIV,	F_SETA, ABC, N, N),	/* 18 DIV */
	OPI(IDIV,	F_SETA, ABC, N, N),	/* 19 IDIV */
	OPI(BAND,	F_SETA, ABC, N, N),	/* 20 BAND */
	OPI(BOR,	F_SETA, ABC, N, N),	/* 21 BOR */
	OPI(BXOR,	F_SETA, ABC, N, N),	/* 22 BXOR */
	OPI(SHL,	F_SETA, ABC, N, N),	/* 23 SHL */
	OPI(SHR,	F_SETA, ABC, N, N),	/* 24 SHR */
	OPI(UNM,	F_SETA, ABC, N, N),	/* 25 UNM */
	OPI(BNOT,	F_SETA, ABC, N, N),	/* 26 BNOT */
	OPX(F_SETA),				/* 27 NOT */
	OPI(LEN,	F_SETA, ABC, N, N),	/* 28 LEN */
	OPI(CONCAT,	F_SETA, ABC, N, N),	/* 29 CONCAT */
	OPI(JMP,	0,      ASBX, N, N),	/* 30 JMP */
	OPI(EQ,		F_TEST, ABC, N, N),	/* 31 EQ */
	OPI(LT,		F_TEST, ABC, N, N),	/* 32 LT */
	OPI(LE,		F_TEST, ABC, N, N),	/* 33 LE */
	OPI(TEST,	F_TEST, ABC, N, N),	/* 34 TEST */
	OPX(F_TEST|F_SETA),			/* 35 TESTSET */
	OPI(CALL,	F_SETA, ABC, N, N),	/* 36 CALL */
	OPI(TAILCALL,	F_SETA, ABC, N, N),	/* 37 TAILCALL */
	OPI(RETURN,	0,      ABC, N, N),	/* 38 RETURN */
	OPI(FORLOOP,	F_SETA, ASBX, N, N),	/* 39 FORLOOP */
	OPI(FORPREP,	F_SETA, ASBX, N, N),	/* 40 FORPREP */
	OPI(TFORCALL,	0,      ABC, N, N),	/* 41 TFORCALL */
	OPI(TFORLOOP,	F_SETA, ASBX, N, N),	/* 42 TFORLOOP */
	OPI(SETLIST,	0,      ABC, N, N),	/* 43 SETLIST */
	OPI(CLOSURE,	F_SETA, ABX, N, N),	/* 44 CLOSURE */
	OPI(VARARG,	F_SETA, ABC, N, N),	/* 45 VARARG */
	OPX(0),					/* 46 EXTRAARG */
};

/* Lua 5.4.0-5.4.7 opcodes (83).  The numbering and luaP_opmodes are
 * the same in every 5.4 release (5.4 bytecode is interchangeable
 * between them). */
static const struct opinfo ops54[] = {
	OPI(MOVE,	F_SETA, ABC, N, N),	/*  0 MOVE */
	OPX(F_SETA),				/*  1 LOADI */
	OPX(F_SETA),				/*  2 LOADF */
	OPI(LOADK,	F_SETA, ABX, N, N),	/*  3 LOADK */
	OPI(LOADKX,	F_SETA, ABX, N, N),	/*  4 LOADKX */
	OPX(F_SETA),				/*  5 LOADFALSE */
	OPX(F_SETA),				/*  6 LFALSESKIP */
	OPX(F_SETA),				/*  7 LOADTRUE */
	OPI(LOADNIL,	F_SETA, ABC, N, N),	/*  8 LOADNIL */
	OPI(GETUPVAL,	F_SETA, ABC, N, N),	/*  9 GETUPVAL */
	OPX(0),					/* 10 SETUPVAL */
	OPI(GETTABUP,	F_SETA, ABC, N, N),	/* 11 GETTABUP */
	OPI(GETTABLE,	F_SETA, ABC, N, N),	/* 12 GETTABLE */
	OPI(GETI,	F_SETA, ABC, N, N),	/* 13 GETI */
	OPI(GETFIELD,	F_SETA, ABC, N, N),	/* 14 GETFIELD */
	OPI(SETTABUP,	0,      ABC, N, N),	/* 15 SETTABUP */
	OPI(SETTABLE,	0,      ABC, N, N),	/* 16 SETTABLE */
	OPI(SETI,	0,      ABC, N, N),	/* 17 SETI */
	OPI(SETFIELD,	0,      ABC, N, N),	/* 18 SETFIELD */
	OPX(F_SETA),				/* 19 NEWTABLE */
	OPI(SELF,	F_SETA, ABC, N, N),	/* 20 SELF */
	OPX(F_SETA),				/* 21 ADDI */
	OPX(F_SETA),				/* 22 ADDK */
	OPX(F_SETA),				/* 23 SUBK */
	OPX(F_SETA),				/* 24 MULK */
	OPX(F_SETA),				/* 25 MODK */
	OPX(F_SETA),				/* 26 POWK */
	OPX(F_SETA),				/* 27 DIVK */
	OPX(F_SETA),				/* 28 IDIVK */
	OPX(F_SETA),				/* 29 BANDK */
	OPX(F_SETA),				/* 30 BORK */
	OPX(F_SETA),				/* 31 BXORK */
	OPX(F_SETA),				/* 32 SHRI */
	OPX(F_SETA),				/* 33 SHLI */
	OPX(F_SETA),				/* 34 ADD */
	OPX(F_SETA),				/* 35 SUB */
	OPX(F_SETA),				/* 36 MUL */
	OPX(F_SETA),				/* 37 MOD */
	OPX(F_SETA),				/* 38 POW */
	OPX(F_SETA),				/* 39 DIV */
	OPX(F_SETA),				/* 40 IDIV */
	OPX(F_SETA),				/* 41 BAND */
	OPX(F_SETA),				/* 42 BOR */
	OPX(F_SETA),				/* 43 BXOR */
	OPX(F_SETA),				/* 44 SHL */
	OPX(F_SETA),				/* 45 SHR */
	OPI(MMBIN,	F_MM,   ABC, N, N),	/* 46 MMBIN */
	OPI(MMBIN,	F_MM,   ABC, N, N),	/* 47 MMBINI */
	OPI(MMBIN,	F_MM,   ABC, N, N),	/* 48 MMBINK */
	OPI(UNM,	F_SETA, ABC, N, N),	/* 49 UNM */
	OPI(BNOT,	F_SETA, ABC, N, N),	/* 50 BNOT */
	OPX(F_SETA),				/* 51 NOT */
	OPI(LEN,	F_SETA, ABC, N, N),	/* 52 LEN */
	OPI(CONCAT,	F_SETA, ABC, N, N),	/* 53 CONCAT */
	OPI(CLOSE,	0,      ABC, N, N),	/* 54 CLOSE */
	OPX(0),					/* 55 TBC */
	OPI(JMP,	0,      SJ,  N, N),	/* 56 JMP */
	OPI(EQ,		F_TEST, ABC, N, N),	/* 57 EQ */
	OPI(LT,		F_TEST, ABC, N, N),	/* 58 LT */
	OPI(LE,		F_TEST, ABC, N, N),	/* 59 LE */
	OPX(F_TEST),				/* 60 EQK */
	OPX(F_TEST),				/* 61 EQI */
	OPI(LTI,	F_TEST, ABC, N, N),	/* 62 LTI */
	OPI(LEI,	F_TEST, ABC, N, N),	/* 63 LEI */
	OPI(GTI,	F_TEST, ABC, N, N),	/* 64 GTI */
	OPI(GEI,	F_TEST, ABC, N, N),	/* 65 GEI */
	OPI(TEST,	F_TEST, ABC, N, N),	/* 66 TEST */
	OPX(F_TEST|F_SETA),			/* 67 TESTSET */
	OPI(CALL,	F_SETA, ABC, N, N),	/* 68 CALL */
	OPI(TAILCALL,	F_SETA, ABC, N, N),	/* 69 TAILCALL */
	OPI(RETURN,	0,      ABC, N, N),	/* 70 RETURN */
	OPX(0),					/* 71 RETURN0 */
	OPX(0),					/* 72 RETURN1 */
	OPI(FORLOOP,	F_SETA, ABX, N, N),	/* 73 FORLOOP */
	OPI(FORPREP,	F_SETA, ABX, N, N),	/* 74 FORPREP */
	OPX(0),					/* 75 TFORPREP */
	OPI(TFORCALL,	0,      ABC, N, N),	/* 76 TFORCALL */
	OPI(TFORLOOP,	F_SETA, ABX, N, N),	/* 77 TFORLOOP */
	OPI(SETLIST,	0,      ABC, N, N),	/* 78 SETLIST */
	OPI(CLOSURE,	F_SETA, ABX, N, N),	/* 79 CLOSURE */
	OPI(VARARG,	F_SETA, ABC, N, N),	/* 80 VARARG */
	OPX(F_SETA),				/* 81 VARARGPREP */
	OPX(0),					/* 82 EXTRAARG */
};

/* Lua 5.5.0 opcodes (85): 5.4's with SHLI before SHRI and GETVARG,
 * ERRNNIL after VARARG.  Flags as in 5.5.0's luaP_opmodes. */
static const struct opinfo ops55[] = {
	OPI(MOVE,	F_SETA, ABC, N, N),	/*  0 MOVE */
	OPX(F_SETA),				/*  1 LOADI */
	OPX(F_SETA),				/*  2 LOADF */
	OPI(LOADK,	F_SETA, ABX, N, N),	/*  3 LOADK */
	OPI(LOADKX,	F_SETA, ABX, N, N),	/*  4 LOADKX */
	OPX(F_SETA),				/*  5 LOADFALSE */
	OPX(F_SETA),				/*  6 LFALSESKIP */
	OPX(F_SETA),				/*  7 LOADTRUE */
	OPI(LOADNIL,	F_SETA, ABC, N, N),	/*  8 LOADNIL */
	OPI(GETUPVAL,	F_SETA, ABC, N, N),	/*  9 GETUPVAL */
	OPX(0),					/* 10 SETUPVAL */
	OPI(GETTABUP,	F_SETA, ABC, N, N),	/* 11 GETTABUP */
	OPI(GETTABLE,	F_SETA, ABC, N, N),	/* 12 GETTABLE */
	OPI(GETI,	F_SETA, ABC, N, N),	/* 13 GETI */
	OPI(GETFIELD,	F_SETA, ABC, N, N),	/* 14 GETFIELD */
	OPI(SETTABUP,	0,      ABC, N, N),	/* 15 SETTABUP */
	OPI(SETTABLE,	0,      ABC, N, N),	/* 16 SETTABLE */
	OPI(SETI,	0,      ABC, N, N),	/* 17 SETI */
	OPI(SETFIELD,	0,      ABC, N, N),	/* 18 SETFIELD */
	OPX(F_SETA),				/* 19 NEWTABLE */
	OPI(SELF,	F_SETA, ABC, N, N),	/* 20 SELF */
	OPX(F_SETA),				/* 21 ADDI */
	OPX(F_SETA),				/* 22 ADDK */
	OPX(F_SETA),				/* 23 SUBK */
	OPX(F_SETA),				/* 24 MULK */
	OPX(F_SETA),				/* 25 MODK */
	OPX(F_SETA),				/* 26 POWK */
	OPX(F_SETA),				/* 27 DIVK */
	OPX(F_SETA),				/* 28 IDIVK */
	OPX(F_SETA),				/* 29 BANDK */
	OPX(F_SETA),				/* 30 BORK */
	OPX(F_SETA),				/* 31 BXORK */
	OPX(F_SETA),				/* 32 SHLI */
	OPX(F_SETA),				/* 33 SHRI */
	OPX(F_SETA),				/* 34 ADD */
	OPX(F_SETA),				/* 35 SUB */
	OPX(F_SETA),				/* 36 MUL */
	OPX(F_SETA),				/* 37 MOD */
	OPX(F_SETA),				/* 38 POW */
	OPX(F_SETA),				/* 39 DIV */
	OPX(F_SETA),				/* 40 IDIV */
	OPX(F_SETA),				/* 41 BAND */
	OPX(F_SETA),				/* 42 BOR */
	OPX(F_SETA),				/* 43 BXOR */
	OPX(F_SETA),				/* 44 SHL */
	OPX(F_SETA),				/* 45 SHR */
	OPI(MMBIN,	F_MM,   ABC, N, N),	/* 46 MMBIN */
	OPI(MMBIN,	F_MM,   ABC, N, N),	/* 47 MMBINI */
	OPI(MMBIN,	F_MM,   ABC, N, N),	/* 48 MMBINK */
	OPI(UNM,	F_SETA, ABC, N, N),	/* 49 UNM */
	OPI(BNOT,	F_SETA, ABC, N, N),	/* 50 BNOT */
	OPX(F_SETA),				/* 51 NOT */
	OPI(LEN,	F_SETA, ABC, N, N),	/* 52 LEN */
	OPI(CONCAT,	F_SETA, ABC, N, N),	/* 53 CONCAT */
	OPI(CLOSE,	0,      ABC, N, N),	/* 54 CLOSE */
	OPX(0),					/* 55 TBC */
	OPI(JMP,	0,      SJ,  N, N),	/* 56 JMP */
	OPI(EQ,		F_TEST, ABC, N, N),	/* 57 EQ */
	OPI(LT,		F_TEST, ABC, N, N),	/* 58 LT */
	OPI(LE,		F_TEST, ABC, N, N),	/* 59 LE */
	OPX(F_TEST),				/* 60 EQK */
	OPX(F_TEST),				/* 61 EQI */
	OPI(LTI,	F_TEST, ABC, N, N),	/* 62 LTI */
	OPI(LEI,	F_TEST, ABC, N, N),	/* 63 LEI */
	OPI(GTI,	F_TEST, ABC, N, N),	/* 64 GTI */
	OPI(GEI,	F_TEST, ABC, N, N),	/* 65 GEI */
	OPI(TEST,	F_TEST, ABC, N, N),	/* 66 TEST */
	OPX(F_TEST|F_SETA),			/* 67 TESTSET */
	OPI(CALL,	F_SETA, ABC, N, N),	/* 68 CALL */
	OPI(TAILCALL,	F_SETA, ABC, N, N),	/* 69 TAILCALL */
	OPI(RETURN,	0,      ABC, N, N),	/* 70 RETURN */
	OPX(0),					/* 71 RETURN0 */
	OPX(0),					/* 72 RETURN1 */
	OPI(FORLOOP,	F_SETA, ABX, N, N),	/* 73 FORLOOP */
	OPI(FORPREP,	F_SETA, ABX, N, N),	/* 74 FORPREP */
	OPX(0),					/* 75 TFORPREP */
	OPI(TFORCALL,	0,      ABC, N, N),	/* 76 TFORCALL */
	OPI(TFORLOOP,	F_SETA, ABX, N, N),	/* 77 TFORLOOP */
	OPI(SETLIST,	0,      ABC, N, N),	/* 78 SETLIST */
	OPI(CLOSURE,	F_SETA, ABX, N, N),	/* 79 CLOSURE */
	OPI(VARARG,	F_SETA, ABC, N, N),	/* 80 VARARG */
	OPX(F_SETA),				/* 81 GETVARG */
	OPX(0),					/* 82 ERRNNIL */
	OPX(F_SETA),				/* 83 VARARGPREP */
	OPX(0),					/* 84 EXTRAARG */
};

#define NELEM(a)	((int)(sizeof(a) / sizeof((a)[0])))

/* 5.4's event names without the "__" that funcnamefromcode skips
 * ("getstr(G(L)->tmname[tm]) + 2"), in ltm.h ORDER TM (the same in
 * 5.5). */
static const char *const tmnames54[] = {
	"index", "newindex", "gc", "mode", "len", "eq",
	"add", "sub", "mul", "mod", "pow", "div", "idiv",
	"band", "bor", "bxor", "shl", "shr",
	"unm", "bnot", "lt", "le", "concat", "call", "close",
};

/* ------------------------------------------------------------------ */
/* Per-query state. */

/* The opcode set and instruction layout: one per major version. */
enum family { FAM_51 = 1, FAM_52, FAM_53, FAM_54, FAM_55 };

struct ctx {
	const struct lc_proto_view *p;
	const struct opinfo *ops;
	int nops;
	int fam;		/* enum family */
	/* The naming rules that changed within a family, each set by
	 * ctx_init from the release (a release newer than the newest
	 * known gets the newest rules). */
	bool order_events;	/* 5.4.3+: "lt"/"le", GTI/GEI named (else
				 * "order") */
	bool basic_getobj;	/* 5.4.7+: basicgetobjname for isEnv and
				 * rname */
	bool env_is_var;	/* 5.4.8+: _ENV only as a local or upvalue
				 * name (isEnv) */
	bool self_k;		/* 5.5: SELF's key is always K[C] */
	bool closure_skip;	/* 5.1.4+: symbexec steps over a CLOSURE's
				 * upvalue pseudo-instructions (5.1.1
				 * traces them as loads; the fix's
				 * ldebug.c revision postdates 5.1.3) */
	/* Sanitised sizes: 0 when the matching array is missing. */
	int ncode, nk, nlocvars;
	long budget;		/* instruction steps left */
	bool bad;		/* nonsense or a limit was hit: answer NULL */
	bool out_of_range;	/* the code names a constant or upvalue
				 * past the Proto's arrays, or a constant
				 * of a kind its instruction never has, or
				 * fails 5.1's checks: they are damaged,
				 * or the code is */
};

static void mark_bad(struct ctx *c)
{
	c->bad = true;
}

/* Charge n steps; false (and the query turns bad) when out of budget. */
static bool charge(struct ctx *c, long n)
{
	if (n < 1)
		n = 1;
	c->budget -= n;
	if (c->budget < 0) {
		mark_bad(c);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* Instruction decoding (lopcodes.h GETARG_* for each layout; 5.5 has
 * 5.4's, its ivABC variant only for NEWTABLE and SETLIST, which naming
 * never decodes). */

static uint32_t code_at(const struct ctx *c, int pc)
{
	return c->p->code[pc];	/* callers check 0 <= pc < c->ncode */
}

static int raw_op(const struct ctx *c, uint32_t i)
{
	return (c->fam >= FAM_54) ? (int)(i & 0x7f) : (int)(i & 0x3f);
}

/* Canonical opcode and flags; an opcode beyond the release's table
 * (garbage) is COP_OTHER with no flags. */
static const struct opinfo *opinfo_of(const struct ctx *c, uint32_t i)
{
	static const struct opinfo none = OPX(0);
	int op = raw_op(c, i);

	return (op < c->nops) ? &c->ops[op] : &none;
}

static int op_of(const struct ctx *c, uint32_t i)
{
	return opinfo_of(c, i)->op;
}

static int arg_a(const struct ctx *c, uint32_t i)
{
	return (c->fam >= FAM_54) ? (int)((i >> 7) & 0xff)
				  : (int)((i >> 6) & 0xff);
}

static int arg_b(const struct ctx *c, uint32_t i)
{
	return (c->fam >= FAM_54) ? (int)((i >> 16) & 0xff)
				  : (int)((i >> 23) & 0x1ff);
}

static int arg_c(const struct ctx *c, uint32_t i)
{
	return (c->fam >= FAM_54) ? (int)((i >> 24) & 0xff)
				  : (int)((i >> 14) & 0x1ff);
}

static int arg_k54(uint32_t i)
{
	return (int)((i >> 15) & 1);
}

static int arg_bx(const struct ctx *c, uint32_t i)
{
	return (c->fam >= FAM_54) ? (int)((i >> 15) & 0x1ffff)
				  : (int)((i >> 14) & 0x3ffff);
}

static int arg_sbx(const struct ctx *c, uint32_t i)
{
	return (c->fam >= FAM_54) ? arg_bx(c, i) - 0xffff
				  : arg_bx(c, i) - 0x1ffff;
}

static int arg_ax(const struct ctx *c, uint32_t i)
{
	return (c->fam >= FAM_54) ? (int)((i >> 7) & 0x1ffffff)
				  : (int)((i >> 6) & 0x3ffffff);
}

static int arg_sj54(uint32_t i)
{
	return (int)((i >> 7) & 0x1ffffff) - 0xffffff;
}

/* RK operands of 5.1-5.3: bit 8 of a 9-bit B/C selects a constant. */
#define RK_ISK(x)	((x) & 0x100)
#define RK_INDEXK(x)	((x) & 0xff)

/* ------------------------------------------------------------------ */
/* Views of the constant, local and upvalue arrays. */

/* String constant k[idx]: 1 and *s set (to "?" when the copy is
 * unreadable) if it is a string, 0 if it is another kind, -1 (query
 * bad) when idx is out of range. */
static int kstring(struct ctx *c, int idx, const char **s)
{
	const struct lc_kview *kv;

	if (idx < 0 || idx >= c->nk) {
		mark_bad(c);
		c->out_of_range = true;
		return -1;
	}
	kv = &c->p->k[idx];
	if (!kv->is_string)
		return 0;
	*s = kv->str ? kv->str : "?";
	return 1;
}

/* Mirrors lfunc.c:luaF_getlocalname (identical in 5.1.5-5.4.7): the
 * n-th variable whose [startpc, endpc) covers pc, scanning in order
 * while startpc <= pc. */
static const char *localname(const struct lc_proto_view *p, int nlocvars,
			     int n, int pc)
{
	int i;

	for (i = 0; i < nlocvars && p->locvars[i].startpc <= pc; i++) {
		if (pc < p->locvars[i].endpc) {
			n--;
			if (n == 0)
				return p->locvars[i].name ? p->locvars[i].name
							  : "?";
		}
	}
	return NULL;
}

static const char *ctx_localname(struct ctx *c, int n, int pc)
{
	charge(c, c->nlocvars);
	return localname(c->p, c->nlocvars, n, pc);
}

/* Mirrors ldebug.c:upvalname (5.2.0-5.4.7): "?" for a missing name.
 * An index outside sizeupvalues makes the query bad. */
static const char *upvalname(struct ctx *c, int uv)
{
	const char *s;

	if (uv < 0 || uv >= c->p->nupvalnames) {
		mark_bad(c);
		/* 5.2+ keeps an Upvaldesc per upvalue even when stripped;
		 * 5.1 drops the names only with the line info. */
		c->out_of_range = c->fam != FAM_51 || c->p->nupvalnames > 0 ||
				  !c->p->stripped;
		return NULL;
	}
	s = c->p->upvalnames ? c->p->upvalnames[uv] : NULL;
	return s ? s : "?";
}

/* ------------------------------------------------------------------ */
/* Lua 5.1 */

#define MAXSTACK51		250	/* llimits.h MAXSTACK */
#define MAXUPVALUES51		60	/* luaconf.h LUAI_MAXUPVALUES */
#define VARARG_HASARG		1	/* lobject.h, 5.1 */
#define VARARG_ISVARARG		2
#define VARARG_NEEDSARG		4

/* Mirrors 5.1's checkArgMode. */
static bool argmode_ok51(const struct ctx *c, int r, int mode)
{
	switch (mode) {
	case ARG_N:
		return r == 0;
	case ARG_U:
		return true;
	case ARG_R:
		return r < c->p->maxstacksize;
	case ARG_K:
		return RK_ISK(r) ? RK_INDEXK(r) < c->nk
				 : r < c->p->maxstacksize;
	}
	return false;
}

/* Mirrors 5.1's luaG_checkopenop: what may follow an instruction that
 * leaves a variable number of values on the stack. */
static bool openop_ok51(const struct ctx *c, int pc)
{
	uint32_t i;

	if (pc + 1 >= c->ncode)
		return false;
	i = code_at(c, pc + 1);
	switch (op_of(c, i)) {
	case COP_CALL:
	case COP_TAILCALL:
	case COP_RETURN:
	case COP_SETLIST:
		return arg_b(c, i) == 0;
	default:
		return false;
	}
}

/* Number of upvalue pseudo-instructions after the CLOSURE at pc.
 *
 * 5.1 skips them using the child prototype's nups, which the view does
 * not carry.  lparser.c:pushclosure emits them as MOVE 0 x 0 or
 * GETUPVAL 0 x 0, so count the run of such instructions (at most
 * LUAI_MAXUPVALUES).  This can only differ from Lua when a real
 * "MOVE 0 x" or "GETUPVAL 0 x" follows a closure, i.e. an assignment to
 * a live local in register 0, which getobjname then reports as "local"
 * anyway. */
static int closure_nups51(const struct ctx *c, int pc)
{
	int n = 0;

	while (n < MAXUPVALUES51 && pc + 1 + n < c->ncode) {
		uint32_t i = code_at(c, pc + 1 + n);
		int op = op_of(c, i);

		if ((op != COP_MOVE && op != COP_GETUPVAL) ||
		    arg_a(c, i) != 0 || arg_c(c, i) != 0)
			break;
		n++;
	}
	return n;
}

/* Mirrors 5.1's precheck, minus the fields the view lacks (nups,
 * sizelineinfo). */
static bool precheck51(const struct ctx *c)
{
	const struct lc_proto_view *p = c->p;
	int isva = p->is_vararg;

	if (p->maxstacksize > MAXSTACK51 || p->maxstacksize < 0)
		return false;
	if (p->numparams < 0 ||
	    p->numparams + (isva & VARARG_HASARG) > p->maxstacksize)
		return false;
	if ((isva & VARARG_NEEDSARG) && !(isva & VARARG_HASARG))
		return false;
	if (c->ncode <= 0 ||
	    op_of(c, code_at(c, c->ncode - 1)) != COP_RETURN)
		return false;
	return true;
}

/* Code that 5.1's checks reject was not made by its compiler (nor
 * loaded: lundump.c runs the same checks): it is damage. */
static int bad51(struct ctx *c)
{
	c->out_of_range = true;
	return -1;
}

/* Mirrors ldebug.c:symbexec of 5.1.5 in tracing mode (reg given):
 * verifies the code up to lastpc as 5.1 does and returns the index of
 * the last instruction that changed reg, or -1 when a check fails (5.1
 * then returns instruction 0, a MOVE 0 0, which names nothing). */
static int symbexec51(struct ctx *c, int lastpc, int reg)
{
	const struct lc_proto_view *p = c->p;
	int maxstack = p->maxstacksize;
	int nups = p->nupvalnames;	/* 0 when names were stripped */
	int last, pc;

	if (!precheck51(c))
		return bad51(c);
	if (!charge(c, lastpc))
		return -1;
	last = c->ncode - 1;	/* final RETURN: names nothing */
	for (pc = 0; pc < lastpc; pc++) {
		uint32_t i = code_at(c, pc);
		const struct opinfo *oi;
		int op, a, b = 0, cc = 0;

		if (raw_op(c, i) >= c->nops)
			return bad51(c);
		oi = opinfo_of(c, i);
		op = oi->op;
		a = arg_a(c, i);
		if (a >= maxstack)
			return bad51(c);
		switch (oi->fmt) {
		case FMT_ABC:
			b = arg_b(c, i);
			cc = arg_c(c, i);
			if (!argmode_ok51(c, b, oi->bmode) ||
			    !argmode_ok51(c, cc, oi->cmode))
				return bad51(c);
			break;
		case FMT_ABX:
			b = arg_bx(c, i);
			if (oi->bmode == ARG_K && b >= c->nk)
				return bad51(c);
			break;
		case FMT_ASBX: {
			int64_t dest;

			b = arg_sbx(c, i);
			if (oi->bmode != ARG_R)
				break;
			dest = (int64_t)pc + 1 + b;
			if (dest < 0 || dest >= c->ncode)
				return bad51(c);
			if (dest > 0) {
				/* A jump must not land on the count word
				 * of a SETLIST with C == 0; count back
				 * over such pairs to tell. */
				int j;

				for (j = 0; j < dest; j++) {
					uint32_t d = code_at(c,
							(int)dest - 1 - j);

					if (!(op_of(c, d) == COP_SETLIST &&
					      arg_c(c, d) == 0))
						break;
				}
				if (!charge(c, j))
					return -1;
				if (j & 1)
					return bad51(c);
			}
			break;
		}
		}
		if ((oi->flags & F_SETA) && a == reg)
			last = pc;
		if (oi->flags & F_TEST) {
			if (pc + 2 >= c->ncode ||
			    op_of(c, code_at(c, pc + 1)) != COP_JMP)
				return bad51(c);
		}
		switch (op) {
		case COP_LOADBOOL:
			if (cc == 1) {
				uint32_t n;

				if (pc + 2 >= c->ncode)
					return bad51(c);
				n = code_at(c, pc + 1);
				if (op_of(c, n) == COP_SETLIST &&
				    arg_c(c, n) == 0)
					return bad51(c);
			}
			break;
		case COP_LOADNIL:
			if (a <= reg && reg <= b)
				last = pc;
			break;
		case COP_GETUPVAL:
		case COP_SETUPVAL:
			/* 5.1 checks b < nups; sizeupvalues is nups or 0
			 * (stripped), so check only when names exist. */
			if ((nups > 0 || !p->stripped) && b >= nups) {
				c->out_of_range = true;
				return bad51(c);
			}
			break;
		case COP_GETGLOBAL:
		case COP_SETGLOBAL:
			if (!c->p->k[b].is_string)
				return bad51(c);
			break;
		case COP_SELF:
			if (a + 1 >= maxstack)
				return bad51(c);
			if (reg == a + 1)
				last = pc;
			break;
		case COP_CONCAT:
			if (b >= cc)
				return bad51(c);
			break;
		case COP_TFORLOOP:
			if (cc < 1 || a + 2 + cc >= maxstack)
				return bad51(c);
			if (reg >= a + 2)
				last = pc;
			break;
		case COP_FORLOOP:
		case COP_FORPREP:
			if (a + 3 >= maxstack)
				return bad51(c);
			/* fall through */
		case COP_JMP: {
			int64_t dest = (int64_t)pc + 1 + b;

			/* Follow forward jumps that do not skip lastpc. */
			if (pc < dest && dest <= lastpc)
				pc += b;
			break;
		}
		case COP_CALL:
		case COP_TAILCALL:
			if (b != 0 && a + b - 1 >= maxstack)
				return bad51(c);
			cc--;	/* number of results */
			if (cc == -1) {
				if (!openop_ok51(c, pc))
					return bad51(c);
			} else if (cc != 0 && a + cc - 1 >= maxstack) {
				return bad51(c);
			}
			if (reg >= a)
				last = pc;
			break;
		case COP_RETURN:
			b--;
			if (b > 0 && a + b - 1 >= maxstack)
				return bad51(c);
			break;
		case COP_SETLIST:
			if (b > 0 && a + b >= maxstack)
				return bad51(c);
			if (cc == 0) {
				pc++;	/* skip the count word */
				if (pc >= c->ncode - 1)
					return bad51(c);
			}
			break;
		case COP_CLOSURE: {
			/* 5.1 also checks b < sizep; the view has no
			 * child prototypes. */
			int nup = closure_nups51(c, pc);

			if (c->closure_skip)
				pc += nup;
			break;
		}
		case COP_VARARG:
			if (!(p->is_vararg & VARARG_ISVARARG) ||
			    (p->is_vararg & VARARG_NEEDSARG))
				return bad51(c);
			b--;
			if (b == -1 && !openop_ok51(c, pc))
				return bad51(c);
			if (a + b - 1 >= maxstack)
				return bad51(c);
			break;
		default:
			break;
		}
	}
	return last;
}

/* The string constant k[idx] of an operand the compiler only ever gives
 * a string (5.1 GETGLOBAL; 5.4+ GETTABUP, GETFIELD, SELF's K[C]: lcode.c
 * luaK_indexed keeps a key in the instruction only where isKstr): as
 * kstring, and another kind is damage. */
static int kstring_only(struct ctx *c, int idx, const char **s)
{
	int r = kstring(c, idx, s);

	if (r == 0)
		c->out_of_range = true;
	return r;
}

/* Mirrors 5.1's kname: the string constant of an RK operand, or "?". */
static const char *kname51(struct ctx *c, int rk)
{
	const char *s;

	if (RK_ISK(rk) && kstring(c, RK_INDEXK(rk), &s) == 1)
		return s;
	return "?";
}

/* Mirrors ldebug.c:getobjname of 5.1.5.  Unlike 5.2+, the MOVE case
 * looks at the source register at the same pc (currentpc of the frame),
 * not at the MOVE. */
static const char *getobjname51(struct ctx *c, int pc, int reg,
				const char **name)
{
	/* MOVE only follows b < a, so this loop ends within 256 turns. */
	for (;;) {
		uint32_t i;
		int last;

		*name = ctx_localname(c, reg + 1, pc);
		if (*name)
			return "local";
		last = symbexec51(c, pc, reg);
		if (last < 0 || c->bad)
			return NULL;
		i = code_at(c, last);
		switch (op_of(c, i)) {
		case COP_GETGLOBAL: {
			const char *s;

			if (kstring_only(c, arg_bx(c, i), &s) != 1)
				return NULL;
			*name = s;
			return "global";
		}
		case COP_MOVE: {
			int a = arg_a(c, i), b = arg_b(c, i);

			if (b < a) {
				reg = b;
				continue;
			}
			return NULL;
		}
		case COP_GETTABLE:
			*name = kname51(c, arg_c(c, i));
			return "field";
		case COP_GETUPVAL: {
			int u = arg_b(c, i);

			if (c->p->nupvalnames == 0 && c->p->stripped) {
				*name = "?";	/* names stripped */
			} else {
				*name = upvalname(c, u);
				if (!*name)
					return NULL;
			}
			return "upvalue";
		}
		case COP_SELF:
			*name = kname51(c, arg_c(c, i));
			return "method";
		default:
			return NULL;
		}
	}
}

/* Mirrors 5.1.5's getfuncname after its frame checks. */
static const char *funcname51(struct ctx *c, int pc, const char **name)
{
	uint32_t i = code_at(c, pc);

	switch (op_of(c, i)) {
	case COP_CALL:
	case COP_TAILCALL:
	case COP_TFORLOOP:
		return getobjname51(c, pc, arg_a(c, i), name);
	default:
		return NULL;
	}
}

/* ------------------------------------------------------------------ */
/* Lua 5.2-5.4: findsetreg */

static int filterpc(int pc, int jmptarget)
{
	return (pc < jmptarget) ? -1 : pc;
}

/* Mirrors ldebug.c:findsetreg: 5.2.4 (with its OP_TEST case), 5.3.6,
 * and 5.4.0-5.4.7 (MM-instruction adjustment, sJ jumps, and any jump
 * target counted).  Returns the last pc before lastpc that set reg and
 * is not inside conditional code, or -1. */
static int findsetreg(struct ctx *c, int lastpc, int reg)
{
	int pc, setreg = -1, jmptarget = 0;

	if (c->bad)
		return -1;
	if (lastpc < 0 || lastpc >= c->ncode) {
		mark_bad(c);
		return -1;
	}
	if (c->fam >= FAM_54 &&
	    (opinfo_of(c, code_at(c, lastpc))->flags & F_MM))
		lastpc--;	/* the previous instruction did not finish */
	if (!charge(c, lastpc))
		return -1;
	for (pc = 0; pc < lastpc; pc++) {
		uint32_t i = code_at(c, pc);
		const struct opinfo *oi = opinfo_of(c, i);
		int a = arg_a(c, i);
		bool change;

		switch (oi->op) {
		case COP_LOADNIL:
			/* 5.2+: B is the count minus one */
			change = (a <= reg && reg <= a + arg_b(c, i));
			break;
		case COP_TFORCALL:
			change = (reg >= a + 2);
			break;
		case COP_CALL:
		case COP_TAILCALL:
			change = (reg >= a);
			break;
		case COP_JMP: {
			int64_t dest = (int64_t)pc + 1 + (c->fam >= FAM_54
				? arg_sj54(i) : arg_sbx(c, i));

			/* 5.2/5.3 only count forward jumps; 5.4 any jump
			 * not past lastpc. */
			if (dest <= lastpc && dest > jmptarget &&
			    (c->fam >= FAM_54 || pc < dest))
				jmptarget = (int)dest;
			change = false;
			break;
		}
		case COP_TEST:
			/* Only 5.2 treats TEST as touching A. */
			change = (c->fam == FAM_52 && reg == a);
			break;
		default:
			change = (oi->flags & F_SETA) && reg == a;
			break;
		}
		if (change)
			setreg = filterpc(pc, jmptarget);
	}
	return setreg;
}

/* ------------------------------------------------------------------ */
/* Lua 5.2 and 5.3 */

static const char *getobjname53(struct ctx *c, int lastpc, int reg,
				const char **name, int depth);

/* Mirrors ldebug.c:kname of 5.2.4/5.3.6: a string constant, or a
 * register whose value came from a string constant ("constant"). */
static void kname53(struct ctx *c, int pc, int rk, const char **name,
		    int depth)
{
	if (RK_ISK(rk)) {
		const char *s;

		if (kstring(c, RK_INDEXK(rk), &s) == 1) {
			*name = s;
			return;
		}
	} else {
		const char *what = getobjname53(c, pc, rk, name, depth + 1);

		if (what && *what == 'c')
			return;
	}
	*name = "?";
}

/* Mirrors ldebug.c:getobjname of 5.2.4 and 5.3.6 (identical). */
static const char *getobjname53(struct ctx *c, int lastpc, int reg,
				const char **name, int depth)
{
	*name = NULL;
	if (c->bad)
		return NULL;
	if (depth > NAMES_MAX_DEPTH) {
		mark_bad(c);
		return NULL;
	}
	/* The MOVE case is a tail call, done by looping; it ends because
	 * both lastpc and reg strictly decrease. */
	for (;;) {
		uint32_t i;
		int pc;

		*name = ctx_localname(c, reg + 1, lastpc);
		if (*name)
			return "local";
		pc = findsetreg(c, lastpc, reg);
		if (pc < 0 || c->bad)
			return NULL;
		i = code_at(c, pc);
		switch (op_of(c, i)) {
		case COP_MOVE: {
			int b = arg_b(c, i);

			if (b < arg_a(c, i)) {
				lastpc = pc;
				reg = b;
				continue;
			}
			return NULL;
		}
		case COP_GETTABUP:
		case COP_GETTABLE: {
			int t = arg_b(c, i);
			const char *vn;

			if (op_of(c, i) == COP_GETTABLE)
				vn = ctx_localname(c, t + 1, pc);
			else
				vn = upvalname(c, t);
			kname53(c, pc, arg_c(c, i), name, depth);
			if (c->bad)
				return NULL;
			return (vn && strcmp(vn, "_ENV") == 0) ? "global"
							      : "field";
		}
		case COP_GETUPVAL:
			*name = upvalname(c, arg_b(c, i));
			return *name ? "upvalue" : NULL;
		case COP_LOADK:
		case COP_LOADKX: {
			int b;
			const char *s;

			if (op_of(c, i) == COP_LOADK) {
				b = arg_bx(c, i);
			} else {
				if (pc + 1 >= c->ncode) {
					mark_bad(c);
					return NULL;
				}
				b = arg_ax(c, code_at(c, pc + 1));
			}
			if (kstring(c, b, &s) == 1) {
				*name = s;
				return "constant";
			}
			*name = NULL;
			return NULL;
		}
		case COP_SELF:
			kname53(c, pc, arg_c(c, i), name, depth);
			return c->bad ? NULL : "method";
		default:
			*name = NULL;
			return NULL;
		}
	}
}

/* Mirrors 5.2.4's getfuncname and 5.3.6's funcnamefromcode (after the
 * frame checks).  Metamethod names keep the "__" prefix: both return
 * G(L)->tmname[tm], the full event name. */
static const char *funcname53(struct ctx *c, int pc, const char **name)
{
	uint32_t i = code_at(c, pc);

	switch (op_of(c, i)) {
	case COP_CALL:
	case COP_TAILCALL:
		return getobjname53(c, pc, arg_a(c, i), name, 0);
	case COP_TFORCALL:
		*name = "for iterator";
		return "for iterator";
	case COP_SELF:
	case COP_GETTABUP:
	case COP_GETTABLE:	*name = "__index"; break;
	case COP_SETTABUP:
	case COP_SETTABLE:	*name = "__newindex"; break;
	case COP_EQ:		*name = "__eq"; break;
	case COP_ADD:		*name = "__add"; break;
	case COP_SUB:		*name = "__sub"; break;
	case COP_MUL:		*name = "__mul"; break;
	case COP_DIV:		*name = "__div"; break;
	case COP_MOD:		*name = "__mod"; break;
	case COP_POW:		*name = "__pow"; break;
	/* IDIV, the bitwise operators and BNOT exist from 5.3 on. */
	case COP_IDIV:		*name = "__idiv"; break;
	case COP_BAND:		*name = "__band"; break;
	case COP_BOR:		*name = "__bor"; break;
	case COP_BXOR:		*name = "__bxor"; break;
	case COP_SHL:		*name = "__shl"; break;
	case COP_SHR:		*name = "__shr"; break;
	case COP_UNM:		*name = "__unm"; break;
	case COP_BNOT:		*name = "__bnot"; break;
	case COP_LEN:		*name = "__len"; break;
	case COP_LT:		*name = "__lt"; break;
	case COP_LE:		*name = "__le"; break;
	case COP_CONCAT:	*name = "__concat"; break;
	default:
		return NULL;
	}
	return "metamethod";
}

/* ------------------------------------------------------------------ */
/* Lua 5.4 */

/* Mirrors 5.4's kname: the string constant k[idx] or "?"; returns
 * "constant" like 5.4.7's version (5.4.0-5.4.6 return nothing, and no
 * caller there looks at it). */
static const char *kname54(struct ctx *c, int idx, const char **name)
{
	const char *s;
	int r = kstring(c, idx, &s);

	if (r == 1) {
		*name = s;
		return "constant";
	}
	*name = "?";
	return NULL;
}

static const char *getobjname54(struct ctx *c, int lastpc, int reg,
				const char **name, int depth);

/* kname54 for a K[C] that can only be a string (kstring_only). */
static void kname54_str(struct ctx *c, int idx, const char **name)
{
	if (kname54(c, idx, name) == NULL && idx >= 0 && idx < c->nk)
		c->out_of_range = true;
}

/* Mirrors 5.4.7's basicgetobjname: locals, MOVE chains, upvalues and
 * constants; *ppc follows the chain to the instruction that set the
 * value, or -1. */
static const char *basicgetobjname547(struct ctx *c, int *ppc, int reg,
				      const char **name)
{
	int pc = *ppc;

	for (;;) {
		uint32_t i;

		*name = ctx_localname(c, reg + 1, pc);
		if (*name)
			return "local";
		*ppc = pc = findsetreg(c, pc, reg);
		if (pc < 0 || c->bad)
			return NULL;
		i = code_at(c, pc);
		switch (op_of(c, i)) {
		case COP_MOVE: {
			int b = arg_b(c, i);

			if (b < arg_a(c, i)) {
				reg = b;
				continue;
			}
			return NULL;
		}
		case COP_GETUPVAL:
			*name = upvalname(c, arg_b(c, i));
			return *name ? "upvalue" : NULL;
		case COP_LOADK:
			return kname54(c, arg_bx(c, i), name);
		case COP_LOADKX:
			if (pc + 1 >= c->ncode) {
				mark_bad(c);
				return NULL;
			}
			return kname54(c, arg_ax(c, code_at(c, pc + 1)), name);
		default:
			return NULL;
		}
	}
}

/* Mirrors 5.4's rname: a register's name only if it holds a string
 * constant.  5.4.0-5.4.6 ask the full getobjname, 5.4.7 only
 * basicgetobjname; either way only "constant" is kept. */
static void rname54(struct ctx *c, int pc, int reg, const char **name,
		    int depth)
{
	const char *what;

	if (c->basic_getobj)
		what = basicgetobjname547(c, &pc, reg, name);
	else
		what = getobjname54(c, pc, reg, name, depth + 1);
	if (!(what && *what == 'c'))
		*name = "?";
}

/* Mirrors 5.4's rkname (SELF's key); 5.5's SELF always names K[C]. */
static void rkname54(struct ctx *c, int pc, uint32_t i, const char **name,
		     int depth)
{
	if (c->self_k || arg_k54(i))
		kname54_str(c, arg_c(c, i), name);
	else
		rname54(c, pc, arg_c(c, i), name, depth);
}

/* "global" when the indexed table is _ENV.  Mirrors gxf (5.4.0-5.4.6)
 * and isEnv (5.4.7, 5.4.8, 5.5.0).  For a register table, gxf takes
 * whatever name getobjname finds (even a field key or a string
 * constant), while isEnv only looks at locals, MOVE chains, upvalues
 * and constants; so "t._ENV.x()" names "global 'x'" up to 5.4.6 but
 * "field 'x'" in 5.4.7.  From 5.4.8 on the name must be a local's or
 * an upvalue's: a register loaded from the string constant "_ENV" is
 * not the globals table. */
static const char *isenv54(struct ctx *c, int pc, uint32_t i, bool isup,
			   int depth)
{
	int t = arg_b(c, i);
	const char *name = NULL;

	if (isup) {
		name = upvalname(c, t);
	} else if (c->basic_getobj) {
		const char *what = basicgetobjname547(c, &pc, t, &name);

		if (c->env_is_var && !(what && (strcmp(what, "local") == 0 ||
						strcmp(what, "upvalue") == 0)))
			name = NULL;
	} else
		getobjname54(c, pc, t, &name, depth + 1);
	if (c->bad)
		return NULL;
	return (name && strcmp(name, "_ENV") == 0) ? "global" : "field";
}

/* Mirrors 5.4's getobjname: 5.4.0-5.4.6 (one function) and 5.4.7
 * (basicgetobjname plus the table cases).  The two give the same
 * answers apart from isenv54 above. */
static const char *getobjname54(struct ctx *c, int lastpc, int reg,
				const char **name, int depth)
{
	uint32_t i;
	int pc;

	*name = NULL;
	if (c->bad)
		return NULL;
	if (depth > NAMES_MAX_DEPTH) {
		mark_bad(c);
		return NULL;
	}
	if (c->basic_getobj) {
		const char *kind = basicgetobjname547(c, &lastpc, reg, name);

		if (kind || c->bad || lastpc < 0)
			return c->bad ? NULL : kind;
		pc = lastpc;
	} else {
		for (;;) {	/* MOVE as a loop; see getobjname53 */
			*name = ctx_localname(c, reg + 1, lastpc);
			if (*name)
				return "local";
			pc = findsetreg(c, lastpc, reg);
			if (pc < 0 || c->bad)
				return NULL;
			i = code_at(c, pc);
			if (op_of(c, i) == COP_MOVE &&
			    arg_b(c, i) < arg_a(c, i)) {
				lastpc = pc;
				reg = arg_b(c, i);
				continue;
			}
			break;
		}
	}
	i = code_at(c, pc);
	switch (op_of(c, i)) {
	case COP_GETTABUP:
		kname54_str(c, arg_c(c, i), name);
		return isenv54(c, pc, i, true, depth);
	case COP_GETTABLE:
		rname54(c, pc, arg_c(c, i), name, depth);
		return isenv54(c, pc, i, false, depth);
	case COP_GETI:
		*name = "integer index";
		return "field";
	case COP_GETFIELD:
		kname54_str(c, arg_c(c, i), name);
		return isenv54(c, pc, i, false, depth);
	case COP_SELF:
		rkname54(c, pc, i, name, depth);
		return c->bad ? NULL : "method";
	default:
		break;
	}
	if (c->basic_getobj) {
		*name = NULL;
		return NULL;	/* basicgetobjname had its chance */
	}
	/* 5.4.0-5.4.6 handle these in the same switch. */
	switch (op_of(c, i)) {
	case COP_GETUPVAL:
		*name = upvalname(c, arg_b(c, i));
		return *name ? "upvalue" : NULL;
	case COP_LOADK:
		return kname54(c, arg_bx(c, i), name);
	case COP_LOADKX:
		if (pc + 1 >= c->ncode) {
			mark_bad(c);
			return NULL;
		}
		return kname54(c, arg_ax(c, code_at(c, pc + 1)), name);
	default:
		*name = NULL;
		return NULL;
	}
}

/* Mirrors 5.4's funcnamefromcode (5.4.0-5.4.7).  Metamethod names are
 * the event names without "__".  5.4.0-5.4.2 name every order
 * comparison "order" and give no name for GTI/GEI; 5.4.3 and later use
 * the real event ("lt" for LT/LTI/GTI, "le" for LE/LEI/GEI). */
static const char *funcname54(struct ctx *c, int pc, const char **name)
{
	uint32_t i = code_at(c, pc);
	int tm;

	switch (op_of(c, i)) {
	case COP_CALL:
	case COP_TAILCALL:
		return getobjname54(c, pc, arg_a(c, i), name, 0);
	case COP_TFORCALL:
		*name = "for iterator";
		return "for iterator";
	case COP_SELF:
	case COP_GETTABUP:
	case COP_GETTABLE:
	case COP_GETI:
	case COP_GETFIELD:
		*name = "index";
		return "metamethod";
	case COP_SETTABUP:
	case COP_SETTABLE:
	case COP_SETI:
	case COP_SETFIELD:
		*name = "newindex";
		return "metamethod";
	case COP_MMBIN:
		tm = arg_c(c, i);
		if (tm >= NELEM(tmnames54))
			return NULL;	/* not an event: nonsense */
		*name = tmnames54[tm];
		return "metamethod";
	case COP_UNM:		*name = "unm"; return "metamethod";
	case COP_BNOT:		*name = "bnot"; return "metamethod";
	case COP_LEN:		*name = "len"; return "metamethod";
	case COP_CONCAT:	*name = "concat"; return "metamethod";
	case COP_EQ:		*name = "eq"; return "metamethod";
	case COP_LT:
	case COP_LTI:
		*name = !c->order_events ? "order" : "lt";
		return "metamethod";
	case COP_LE:
	case COP_LEI:
		*name = !c->order_events ? "order" : "le";
		return "metamethod";
	case COP_GTI:
		if (!c->order_events)
			return NULL;
		*name = "lt";
		return "metamethod";
	case COP_GEI:
		if (!c->order_events)
			return NULL;
		*name = "le";
		return "metamethod";
	case COP_CLOSE:
	case COP_RETURN:
		*name = "close";
		return "metamethod";
	default:
		return NULL;
	}
}

/* ------------------------------------------------------------------ */
/* Entry points */

/* Set up a query; false for a release before 5.1 or an unusable view.
 *
 * The opcode set follows the major version (5.1's to 5.5's); a major
 * version newer than 5.5 is read as 5.5 (the layout says the caller
 * found one that looks like it, and warns).  The rules that changed
 * between patch releases are each on from the release that brought
 * them, so a patch release newer than the newest known one gets the
 * newest rules.  5.4.8's bytecode and luaP_opmodes are 5.4.7's; its
 * ldebug.c changed isEnv only (env_is_var). */
static bool ctx_init(struct ctx *c, const struct lc_proto_view *p)
{
	int rel, major, minor;

	memset(c, 0, sizeof(*c));
	if (!p)
		return false;
	rel = p->release;
	major = rel / 100;
	minor = rel % 100;
	c->p = p;
	if (major < 501) {
		return false;
	} else if (major == 501) {
		c->fam = FAM_51;
		c->ops = ops51;
		c->nops = NELEM(ops51);
		c->closure_skip = minor >= 4;
	} else if (major == 502) {
		c->fam = FAM_52;
		c->ops = ops52;
		c->nops = NELEM(ops52);
	} else if (major == 503) {
		c->fam = FAM_53;
		c->ops = ops53;
		c->nops = NELEM(ops53);
	} else if (major == 504) {
		c->fam = FAM_54;
		c->ops = ops54;
		c->nops = NELEM(ops54);
		c->order_events = minor >= 3;
		c->basic_getobj = minor >= 7;
		c->env_is_var = minor >= 8;
	} else {
		c->fam = FAM_55;
		c->ops = ops55;
		c->nops = NELEM(ops55);
		c->order_events = c->basic_getobj = c->env_is_var = true;
		c->self_k = true;
	}
	c->ncode = (p->code && p->ncode > 0) ? p->ncode : 0;
	c->nk = (p->k && p->nk > 0) ? p->nk : 0;
	c->nlocvars = (p->locvars && p->nlocvars > 0) ? p->nlocvars : 0;
	if (p->nupvalnames < 0)
		return false;
	c->budget = NAMES_BUDGET;
	return true;
}

const char *lc_names_from_call(const struct lc_proto_view *p, int pc,
			       const char **name)
{
	return lc_names_from_call_checked(p, pc, name, NULL);
}

const char *lc_names_from_call_checked(const struct lc_proto_view *p, int pc,
				       const char **name, bool *damaged)
{
	struct ctx c;
	const char *dummy = NULL;
	const char *what = NULL;

	if (!name)
		name = &dummy;
	*name = NULL;
	if (!ctx_init(&c, p) || pc < 0 || pc >= c.ncode)
		return NULL;
	switch (c.fam) {
	case FAM_51:
		what = funcname51(&c, pc, name);
		break;
	case FAM_52:
	case FAM_53:
		what = funcname53(&c, pc, name);
		break;
	case FAM_54:
	case FAM_55:	/* 5.5's funcnamefromcode is 5.4.3's */
		what = funcname54(&c, pc, name);
		break;
	}
	if (damaged && c.out_of_range)
		*damaged = true;
	if (!what || c.bad || !*name) {
		*name = NULL;
		return NULL;
	}
	return what;
}

int lc_names_next_closure(const struct lc_proto_view *p, int pc, int *child)
{
	struct ctx c;

	if (!ctx_init(&c, p))
		return -1;
	for (; pc >= 0 && pc < c.ncode; pc++) {
		uint32_t i = code_at(&c, pc);

		if (op_of(&c, i) == COP_CLOSURE) {
			*child = arg_bx(&c, i);
			return pc;
		}
	}
	return -1;
}

int lc_names_active(const struct lc_proto_view *p, int pc)
{
	int n = 0;

	for (int i = 0; p && p->locvars && i < p->nlocvars &&
			p->locvars[i].startpc <= pc; i++)
		if (pc < p->locvars[i].endpc)
			n++;
	return n;
}

const char *lc_names_local(const struct lc_proto_view *p, int n, int pc)
{
	int nlocvars;

	if (!p || !p->locvars || p->nlocvars <= 0 || n <= 0)
		return NULL;
	nlocvars = p->nlocvars;
	return localname(p, nlocvars, n, pc);
}
