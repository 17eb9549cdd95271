/* A LuaJIT frame's name from its caller's bytecode (frames.h
 * lc_lj_funcname), as lj_debug.c lj_debug_funcname and
 * lj_debug_slotname give it: the call instruction's slot traced back
 * through the local variables' ranges (varinfo), MOV, GGET, TGETS (a
 * method when a MOV of the object precedes it) and UGET; a metamethod
 * call names its metamethod.  Bounded: the backward scan stops at the
 * function's first instruction, each name at NAME_MAX bytes, varinfo
 * after VARINFO_MAX entries.
 *
 * Where the bytecode says there is a name and the data does not give
 * one that can be right (an unreadable table, a constant past the
 * proto's, an object that is no string, a variable name that is no
 * identifier), *bad is set: the caller marks the frame, rather than
 * showing no name, or another, as if that were the answer. */
#include <config.h>

#include <string.h>

#include "base/base.h"
#include "vm/luajit/frames.h"
#include "vm/luajit/lj.h"

#define NAME_MAX_LEN 256
#define VARINFO_MAX 100000
/* MOVs followed back for one slot. */
#define RESTARTS_MAX 1000

static void set_bad(bool *bad)
{
	if (bad)
		*bad = true;
}

/* A name LuaJIT's lexer takes as an identifier (lj_char.h
 * lj_char_isident: letters, digits, '_', and every byte from 0x80, not
 * starting with a digit). */
static bool identifier(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (!(c >= 0x80 || c == '_' || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

/* A variable's NUL-terminated name at addr into buf; false (and *bad)
 * if unreadable, too long or no identifier. */
static bool read_cstr(struct lc_memory *m, uint64_t addr, char *buf,
		      size_t size, bool *bad)
{
	for (size_t i = 0; i < size; i++) {
		uint8_t c;

		if (lc_read_u8(m, addr + i, &c) < 0)
			break;
		buf[i] = (char)c;
		if (!c) {
			if (identifier(buf))
				return true;
			break;
		}
	}
	set_bad(bad);
	return false;
}

/* A GCstr's bytes; false and *bad when s is no readable string (a name
 * longer than buf is only cut). */
static bool read_gcstr(struct lc_memory *m, const struct lc_lj_layout *l,
		       uint64_t s, char *buf, size_t size, bool *bad)
{
	uint64_t gct, len;

	if (!s || lc_lj_field_u(m, s, l->str.gct, &gct) < 0 || gct != LC_LJ_TSTR ||
	    lc_lj_field_u(m, s, l->str.len, &len) < 0 ||
	    len > (UINT64_C(1) << 31)) {
		set_bad(bad);
		return false;
	}
	/* lj_str.c lj_str_alloc: NUL after the last byte. */
	{
		uint8_t nul;

		if (lc_read_u8(m, s + l->sz_str + len, &nul) < 0 || nul) {
			set_bad(bad);
			return false;
		}
	}
	if (len >= size)
		len = size - 1;
	/* (A name with a NUL inside is taken for damage: Lua allows one,
	 * programs do not name functions so.) */
	if (lc_read(m, s + l->sz_str, buf, (size_t)len) < 0 ||
	    memchr(buf, 0, (size_t)len)) {
		set_bad(bad);
		return false;
	}
	buf[len] = '\0';
	return true;
}

static bool read_uleb(struct lc_memory *m, uint64_t *p, uint32_t *v)
{
	uint32_t r = 0;

	for (int shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (lc_read_u8(m, (*p)++, &b) < 0)
			return false;
		r |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return true;
		}
	}
	return false;
}

/* pt has no debug info (stripped bytecode): no line table. */
static bool stripped(struct lc_memory *m, const struct lc_lj_layout *l,
		     uint64_t pt)
{
	uint64_t li;

	return lc_lj_field_u(m, pt, l->pt.lineinfo, &li) == 0 && !li;
}

/* lj_debug.c debug_varname: the local in slot at bytecode pos pc. */
bool lc_lj_varname(struct lc_memory *m, const struct lc_lj_layout *l,
		   uint64_t pt, uint32_t pc, uint32_t slot, char *buf,
		   size_t size, bool *bad)
{
	static const char *const fixed[] = LC_LJ_VARNAMES;
	uint64_t p;
	uint32_t lastpc = 0;

	if (lc_lj_field_u(m, pt, l->pt.varinfo, &p) < 0) {
		set_bad(bad);
		return false;
	}
	if (!p) {
		/* Stripped of debug info: then it has no line table either
		 * (lj_bcread.c bcread_proto). */
		if (!stripped(m, l, pt))
			set_bad(bad);
		return false;
	}
	if (!lc_lj_in_proto(m, l, pt, p, 1)) {
		set_bad(bad);
		return false;
	}
	for (int n = 0; n < VARINFO_MAX; n++) {
		uint64_t name = p;
		uint8_t vn;
		uint32_t start, len;

		if (lc_read_u8(m, p, &vn) < 0)
			break;
		if (vn < (uint64_t)l->varname_max) {
			if (vn == 0)
				return false;	/* VARNAME_END */
		} else {
			/* Skip the name. */
			size_t k;

			for (k = 0; k <= NAME_MAX_LEN; k++) {
				uint8_t c;

				if (lc_read_u8(m, ++p, &c) < 0) {
					k = NAME_MAX_LEN + 1;
					break;
				}
				if (!c)
					break;
			}
			if (k > NAME_MAX_LEN)
				break;
		}
		p++;
		if (!read_uleb(m, &p, &start))
			break;
		lastpc = start = lastpc + start;
		if (start > pc)
			return false;
		if (!read_uleb(m, &p, &len))
			break;
		if (pc < start + len && slot-- == 0) {
			if (vn < (uint64_t)l->varname_max) {
				if (vn > LC_ARRAY_SIZE(fixed))
					break;
				snprintf(buf, size, "%s", fixed[vn - 1]);
				return true;
			}
			return read_cstr(m, name, buf, size, bad);
		}
	}
	set_bad(bad);
	return false;
}

/* The collectable constant ~idx of pt (lj_obj.h proto_kgc); 0 and *bad
 * when past the proto's constants or unreadable. */
static uint64_t kgc(struct lc_memory *m, const struct lc_lj_layout *l,
		    uint64_t pt, uint32_t d, bool *bad)
{
	uint64_t k, sizekgc, v;

	if (lc_lj_field_u(m, pt, l->pt.k, &k) < 0 ||
	    lc_lj_field_u(m, pt, l->pt.sizekgc, &sizekgc) < 0 || d >= sizekgc ||
	    !lc_lj_in_proto(m, l, pt, k - 8 * ((uint64_t)d + 1), 8) ||
	    lc_read_u64(m, k - 8 * ((uint64_t)d + 1), &v) < 0 ||
	    !(v & LC_LJ_GCVMASK)) {
		set_bad(bad);
		return 0;
	}
	return v & LC_LJ_GCVMASK;
}

/* lj_debug.c lj_debug_uvname. */
bool lc_lj_uvname(struct lc_memory *m, const struct lc_lj_layout *l,
		  uint64_t pt, uint32_t idx, char *buf, size_t size, bool *bad)
{
	uint64_t p, sizeuv;

	if (lc_lj_field_u(m, pt, l->pt.uvinfo, &p) < 0 ||
	    lc_lj_field_u(m, pt, l->pt.sizeuv, &sizeuv) < 0 || idx >= sizeuv) {
		set_bad(bad);
		return false;
	}
	if (!p) {
		buf[0] = '\0';
		if (stripped(m, l, pt))
			return true;
		set_bad(bad);
		return false;
	}
	if (!lc_lj_in_proto(m, l, pt, p, 1)) {
		set_bad(bad);
		return false;
	}
	for (uint32_t i = 0; i < idx; i++) {
		for (size_t k = 0;; k++) {
			uint8_t c;

			if (k > NAME_MAX_LEN || lc_read_u8(m, p++, &c) < 0) {
				set_bad(bad);
				return false;
			}
			if (!c)
				break;
		}
	}
	return read_cstr(m, p, buf, size, bad);
}

/* An opcode's mode; false and *bad for no opcode of the build's. */
static bool bcmode(struct lc_memory *m, const struct lc_lj_layout *l,
		   uint32_t op, uint64_t *mode, bool *bad)
{
	if (!l->bc_mode)
		return false;
	if (op >= (uint64_t)l->bc_max ||
	    lc_read_uint(m, l->bc_mode + 2 * (uint64_t)op, 2, mode) != 0) {
		set_bad(bad);
		return false;
	}
	return true;
}

/* lj_debug.c lj_debug_slotname: what slot holds at instruction ip (an
 * index in pt's bytecode). */
static const char *slotname(struct lc_memory *m, const struct lc_lj_layout *l,
			    uint64_t pt, uint32_t ip, uint32_t slot,
			    char *buf, size_t size, bool *bad)
{
	uint64_t bc = pt + l->sz_proto;

	for (int r = 0; r < RESTARTS_MAX; r++) {
		bool restart = false;

		if (lc_lj_varname(m, l, pt, ip, slot, buf, size, bad))
			return "local";
		while (!restart && ip-- > 1) {
			uint32_t ins, op, ra;
			uint64_t mode;

			if (lc_read_u32(m, bc + 4 * (uint64_t)ip, &ins) < 0) {
				set_bad(bad);
				return NULL;
			}
			if (!bcmode(m, l, op = LC_LJ_BC_OP(ins), &mode, bad))
				return NULL;
			ra = LC_LJ_BC_A(ins);
			if (LC_LJ_BCMODE_A(mode) == (uint64_t)l->bcm_base) {
				if (slot >= ra && (op != (uint64_t)l->bc_knil ||
						   slot <= LC_LJ_BC_D(ins)))
					return NULL;
			} else if (LC_LJ_BCMODE_A(mode) == (uint64_t)l->bcm_dst &&
				   ra == slot) {
				if (op == (uint64_t)l->bc_mov) {
					slot = LC_LJ_BC_D(ins);
					restart = true;
				} else if (op == (uint64_t)l->bc_gget) {
					uint64_t k = kgc(m, l, pt,
							 LC_LJ_BC_D(ins), bad);

					return k && read_gcstr(m, l, k, buf,
							       size, bad) ?
					       "global" : NULL;
				} else if (op == (uint64_t)l->bc_tgets) {
					uint32_t insp;
					uint64_t k = kgc(m, l, pt,
							 LC_LJ_BC_C(ins), bad);

					if (!k || !read_gcstr(m, l, k, buf,
							      size, bad))
						return NULL;
					/* A method: the object moved to the
					 * slot after the function's (FR2). */
					if (ip > 0 &&
					    lc_read_u32(m, bc + 4 * (uint64_t)(ip - 1),
							&insp) == 0 &&
					    LC_LJ_BC_OP(insp) == (uint64_t)l->bc_mov &&
					    LC_LJ_BC_A(insp) == ra + 2 &&
					    LC_LJ_BC_D(insp) == LC_LJ_BC_B(ins))
						return "method";
					return "field";
				} else if (op == (uint64_t)l->bc_uget) {
					return lc_lj_uvname(m, l, pt, LC_LJ_BC_D(ins),
						      buf, size, bad) ? "upvalue" :
						     NULL;
				} else {
					return NULL;
				}
			}
		}
		if (!restart)
			return NULL;
	}
	return NULL;
}

const char *lc_lj_funcname(struct lc_memory *m, const struct lc_lj_layout *l,
			   uint64_t g, uint64_t pt, int64_t pos, char *buf,
			   size_t size, bool *bad)
{
	uint64_t sizebc, mode, s;
	uint32_t ins, op;

	if (!size || pos < 0)
		return NULL;
	if (lc_lj_field_u(m, pt, l->pt.sizebc, &sizebc) < 0 ||
	    (uint64_t)pos >= sizebc ||
	    lc_read_u32(m, pt + l->sz_proto + 4 * (uint64_t)pos, &ins) < 0) {
		set_bad(bad);
		return NULL;
	}
	if (!bcmode(m, l, op = LC_LJ_BC_OP(ins), &mode, bad))
		return NULL;
	if (LC_LJ_BCMODE_MM(mode) == (uint64_t)l->mm_call) {
		uint32_t slot = LC_LJ_BC_A(ins);

		if (op == (uint64_t)l->bc_iterc)
			slot -= 3;
		return slotname(m, l, pt, (uint32_t)pos, slot, buf, size, bad);
	}
	if (LC_LJ_BCMODE_MM(mode) >= (uint64_t)l->mm_max || !g ||
	    !LC_LJ_HAS(l->G.gcroot))
		return NULL;
	if (lc_read_u64(m, g + (uint64_t)l->G.gcroot.off +
			8 * ((uint64_t)l->gcroot_mmname + LC_LJ_BCMODE_MM(mode)),
			&s) < 0) {
		set_bad(bad);
		return NULL;
	}
	if (!read_gcstr(m, l, s & LC_LJ_GCVMASK, buf, size, bad))
		return NULL;
	return "metamethod";
}
