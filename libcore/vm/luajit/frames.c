/* A LuaJIT thread's frames (frames.h). */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "vm/luajit/frames.h"
#include "vm/luajit/lj.h"

/* The C frames followed looking for one PC: a chain longer than this is
 * taken as damaged. */
#define CFRAMES_MAX 10000

/* The GC object of a TValue slot: its low 47 bits. */
static int slot_gc(struct lc_memory *m, uint64_t slot, uint64_t *gc)
{
	uint64_t v;

	if (lc_read_u64(m, slot, &v) < 0)
		return -1;
	*gc = v & LC_LJ_GCVMASK;
	return 0;
}

static bool gct_is(struct lc_memory *m, const struct lc_lj_layout *l,
		   uint64_t obj, struct lc_lj_field gct, unsigned want)
{
	uint64_t t;

	return obj && lc_lj_field_u(m, obj, gct, &t) == 0 && t == want;
}

bool lc_lj_chunkname(struct lc_memory *m, const struct lc_lj_layout *l,
		     uint64_t proto, char *buf, size_t size)
{
	uint64_t s, len;
	size_t n;

	if (!size || lc_lj_field_u(m, proto, l->pt.chunkname, &s) < 0 ||
	    !gct_is(m, l, s, l->str.gct, LC_LJ_TSTR) ||
	    lc_lj_field_u(m, s, l->str.len, &len) < 0)
		return false;
	/* lj_str.c lj_str_alloc: NUL after the last byte. */
	{
		uint8_t nul;

		if (lc_read_u8(m, s + l->sz_str + len, &nul) < 0 || nul)
			return false;
	}
	n = len < size - 1 ? (size_t)len : size - 1;
	if (lc_read(m, s + l->sz_str, buf, n) < 0)
		return false;
	buf[n] = '\0';
	return true;
}

bool lc_lj_in_proto(struct lc_memory *m, const struct lc_lj_layout *l,
		    uint64_t pt, uint64_t addr, uint64_t len)
{
	uint64_t sizept;

	if (!LC_LJ_HAS(l->pt.sizept))
		return true;
	if (lc_lj_field_u(m, pt, l->pt.sizept, &sizept) < 0)
		return false;
	return addr >= pt && len <= sizept && addr - pt <= sizept - len;
}

int64_t lc_lj_line(struct lc_memory *m, const struct lc_lj_layout *l,
		   uint64_t proto, int64_t pos)
{
	uint64_t sizebc, first, numline, li, v;
	unsigned w;

	if (pos < 0)
		return -1;
	if (lc_lj_field_u(m, proto, l->pt.sizebc, &sizebc) < 0 ||
	    lc_lj_field_u(m, proto, l->pt.firstline, &first) < 0 ||
	    lc_lj_field_u(m, proto, l->pt.numline, &numline) < 0 ||
	    lc_lj_field_u(m, proto, l->pt.lineinfo, &li) < 0 ||
	    (uint64_t)pos > sizebc)
		return -2;
	if (!li) {
		/* Stripped bytecode has no debug info at all (lj_bcread.c
		 * bcread_proto): a line table alone missing is damage. */
		uint64_t vi = 0, ui = 0;

		if (lc_lj_field_u(m, proto, l->pt.varinfo, &vi) < 0 ||
		    lc_lj_field_u(m, proto, l->pt.uvinfo, &ui) < 0 || vi || ui)
			return -2;
		return -1;
	}
	/* BCLine is an int32_t; a chunk's lines fit in it. */
	first = (uint64_t)(int64_t)(int32_t)first;
	numline = (uint64_t)(int64_t)(int32_t)numline;
	if ((int64_t)first < 0 || (int64_t)numline < 0 ||
	    first + numline > INT32_MAX)
		return -2;
	if ((uint64_t)pos == sizebc)
		return (int64_t)(first + numline);
	if (pos == 0)
		return (int64_t)first;
	w = numline < 256 ? 1 : numline < 65536 ? 2 : 4;
	/* The table lies in the proto's own block (lj_parse.c fs_finish,
	 * lj_bcread.c bcread_proto). */
	if (sizebc && !lc_lj_in_proto(m, l, proto, li, (sizebc - 1) * w))
		return -2;
	/* Each entry is the line's offset from the first, at most numline. */
	if (lc_read_uint(m, li + (uint64_t)(pos - 1) * w, w, &v) < 0 ||
	    v > numline)
		return -2;
	return (int64_t)(first + v);
}

/* The C frame that was current when the frame at f ran (lj_debug.c
 * debug_framepc): walk the frames from the innermost one and the C
 * frame chain in step, a C frame passed at each C link (and at an FFI
 * callback's continuation, which this build of the walk does not
 * tell: it has no FFI callbacks in its fixtures), until f is reached;
 * its saved PC.  0 when not found. */
static uint64_t cframe_pc(struct lc_memory *m, const struct lc_lj_layout *l,
			  uint64_t L, uint64_t base, uint64_t target)
{
	uint64_t cf, stack, f = base - 8, pc;
	size_t steps = 0;

	if (lc_lj_field_u(m, L, l->L.cframe, &cf) < 0 ||
	    lc_lj_field_u(m, L, l->L.stack, &stack) < 0)
		return 0;
	cf &= LC_LJ_CFRAME_RAWMASK;
	while (steps++ < CFRAMES_MAX) {
		uint64_t link;
		uint32_t nres;

		if (!cf)
			return 0;
		/* A C frame with a negative result count saved the stack
		 * offset of its frame: skip those already passed. */
		while (lc_read_u32(m, cf + LC_LJ_CFRAME_OFS_NRES, &nres) == 0 &&
		       (int32_t)nres < 0 && steps++ < CFRAMES_MAX) {
			if (f >= stack + (uint64_t)-(int64_t)(int32_t)nres)
				break;
			if (lc_read_u64(m, cf + LC_LJ_CFRAME_OFS_PREV, &cf) < 0)
				return 0;
			cf &= LC_LJ_CFRAME_RAWMASK;
			if (!cf)
				return 0;
		}
		if (f < target)
			break;
		if (lc_read_u64(m, f, &link) < 0)
			return 0;
		if ((link & LC_LJ_FRAME_TYPE) == (uint64_t)l->frame_lua) {
			uint32_t ins;

			if (lc_read_u32(m, link - 4, &ins) < 0)
				return 0;
			f -= 8 * (2 + LC_LJ_BC_A(ins));
		} else {
			if ((link & LC_LJ_FRAME_TYPE) == (uint64_t)l->frame_c) {
				if (lc_read_u64(m, cf + LC_LJ_CFRAME_OFS_PREV,
						&cf) < 0)
					return 0;
				cf &= LC_LJ_CFRAME_RAWMASK;
			}
			if ((link & ~UINT64_C(7)) == 0)
				return 0;
			f -= link & ~UINT64_C(7);
		}
	}
	if (!cf || lc_read_u64(m, cf + LC_LJ_CFRAME_OFS_PC, &pc) < 0)
		return 0;
	return pc;
}

/* The bytecode position of Lua function fn's frame whose next (inner)
 * frame is next (its link slot), -1 when unknown. */
static int64_t frame_pos(struct lc_memory *m, const struct lc_lj_layout *l,
			 uint64_t L, uint64_t base, uint64_t proto,
			 uint64_t next, uint64_t pc, bool *in_trace)
{
	uint64_t link, ins, sizebc;
	int64_t pos;

	*in_trace = false;
	if (!next && pc) {
		ins = pc;
	} else if (!next) {
		/* The innermost frame: the PC the VM saved in its C frame
		 * when it called C (an allocation, a metamethod helper, a
		 * hook), unless that slot holds L (lj_debug.c). */
		uint64_t cf, cl;

		if (lc_lj_field_u(m, L, l->L.cframe, &cf) < 0)
			return -1;
		cf &= LC_LJ_CFRAME_RAWMASK;
		if (!cf || lc_read_u64(m, cf + LC_LJ_CFRAME_OFS_PC, &ins) < 0 ||
		    lc_read_u64(m, cf + LC_LJ_CFRAME_OFS_L, &cl) < 0 ||
		    ins == cl)
			return -1;
	} else if (lc_read_u64(m, next, &link) < 0) {
		return -1;
	} else if ((link & LC_LJ_FRAME_TYPE) == (uint64_t)l->frame_lua) {
		ins = link;
	} else if ((link & LC_LJ_FRAME_TYPEP) == (uint64_t)l->frame_cont) {
		/* lj_frame.h frame_contpc, FR2: two slots further down. */
		if (lc_read_u64(m, next - 16, &ins) < 0)
			return -1;
	} else {
		ins = cframe_pc(m, l, L, base, next);
	}
	if (!ins || lc_lj_field_u(m, proto, l->pt.sizebc, &sizebc) < 0)
		return -1;
	if (ins < proto + l->sz_proto + 4)
		return -1;
	pos = (int64_t)((ins - (proto + l->sz_proto)) / 4) - 1;
	if ((uint64_t)pos > sizebc) {
		/* A trace's exit to the interpreter (JLOOP): lj_debug.c
		 * takes the trace's start; not read yet. */
		*in_trace = true;
		return -1;
	}
	return pos;
}

struct lc_error *lc_lj_walk(struct lc_memory *m, const struct lc_lj_layout *l,
			    uint64_t L, uint64_t base, uint64_t pc, size_t max,
			    struct lc_lj_walk *ret)
{
	uint64_t stack, maxstack, frame, next = 0, bot;
	bool skip_next = false;
	size_t steps = 0;

	memset(ret, 0, sizeof(*ret));
	if (lc_lj_field_u(m, L, l->L.stack, &stack) < 0 ||
	    lc_lj_field_u(m, L, l->L.maxstack, &maxstack) < 0) {
		ret->partial = true;
		ret->why = "the thread's stack bounds cannot be read";
		return NULL;
	}
	bot = stack + 8;	/* stack + LJ_FR2: the bottom dummy frame */
	if (base < bot + 8 || base > maxstack + 8 || (base & 7)) {
		ret->partial = true;
		ret->why = "the frame base is outside the thread's stack";
		return NULL;
	}
	for (frame = base - 8; frame > bot; ) {
		uint64_t link, fn, ffid;
		struct lc_lj_frame *fr;
		bool reported = false;

		if (++steps > max + 1000 || frame >= maxstack + 8) {
			ret->partial = true;
			ret->why = "the frame chain is too long or leaves the stack";
			break;
		}
		if (lc_read_u64(m, frame, &link) < 0 ||
		    slot_gc(m, frame - 8, &fn) < 0) {
			ret->partial = true;
			ret->why = "a frame slot cannot be read";
			break;
		}
		if (fn == L) {
			/* A dummy frame (lj_err.c lj_err_optype_call). */
		} else if (skip_next) {
			/* The pseudo-frame below a vararg frame. */
			skip_next = false;
		} else {
			if (ret->n >= max) {
				ret->partial = true;
				ret->why = "more frames than asked for";
				break;
			}
			if (!gct_is(m, l, fn, l->fn.gct, LC_LJ_TFUNC) ||
			    lc_lj_field_u(m, fn, l->fn.ffid, &ffid) < 0) {
				ret->partial = true;
				ret->why = "a frame's function is not a function";
				break;
			}
			if (!(ret->n & 63)) {
				void *p = realloc(ret->v, (ret->n + 64) *
						  sizeof(*ret->v));

				if (!p) {
					lc_lj_walk_free(ret);
					return &lc_error_nomem;
				}
				ret->v = p;
			}
			fr = &ret->v[ret->n++];
			memset(fr, 0, sizeof(*fr));
			reported = true;
			fr->slot = frame;
			fr->func = fn;
			fr->ffid = (uint8_t)ffid;
			fr->link = (link & LC_LJ_FRAME_TYPE) ==
					   (uint64_t)l->frame_lua ?
				   0 : (unsigned)(link & LC_LJ_FRAME_TYPEP);
			fr->pos = fr->line = -1;
			if (ffid == LC_LJ_FF_LUA) {
				uint64_t fpc;

				if (lc_lj_field_u(m, fn, l->fn.pc, &fpc) == 0 &&
				    fpc > l->sz_proto &&
				    !gct_is(m, l, fpc - l->sz_proto, l->pt.gct,
					    LC_LJ_TPROTO))
					fr->bad_func = true;
				else if (lc_lj_field_u(m, fn, l->fn.pc, &fpc) == 0 &&
				    fpc > l->sz_proto) {
					fr->proto = fpc - l->sz_proto;
					fr->pos = frame_pos(m, l, L, base,
							    fr->proto, next, pc,
							    &fr->in_trace);
					fr->line = lc_lj_line(m, l, fr->proto,
							      fr->pos);
					if (fr->line == -2) {
						fr->line = -1;
						fr->bad_line = true;
					}
				}
			} else {
				uint64_t fpc;
				uint32_t ins;

				lc_lj_field_u(m, fn, l->fn.f, &fr->cfunc);
				/* (lj_func.c: a C function's pc is one of the
				 * VM's instructions, in no GCproto.) */
				if (lc_lj_field_u(m, fn, l->fn.pc, &fpc) == 0 &&
				    fpc > l->sz_proto &&
				    gct_is(m, l, fpc - l->sz_proto, l->pt.gct,
					   LC_LJ_TPROTO))
					fr->bad_func = true;
				if (ffid != LC_LJ_FF_C &&
				    lc_lj_field_u(m, fn, l->fn.pc, &fpc) == 0 &&
				    lc_read_u32(m, fpc, &ins) == 0 &&
				    LC_LJ_BC_OP(ins) != (uint32_t)l->bc_funcc &&
				    LC_LJ_BC_OP(ins) != (uint32_t)l->bc_funccw)
					fr->asm_ff = true;
			}
		}
		next = frame;
		if ((link & LC_LJ_FRAME_TYPE) == (uint64_t)l->frame_lua) {
			uint32_t ins;

			/* frame_prevl: back over the caller's frame, whose
			 * size is the A operand of its call instruction. */
			if (lc_read_u32(m, link - 4, &ins) < 0) {
				ret->partial = true;
				ret->why = "a return PC's call instruction cannot be read";
				break;
			}
			frame -= 8 * (2 + LC_LJ_BC_A(ins));
		} else {
			if ((link & LC_LJ_FRAME_TYPEP) ==
			    (uint64_t)l->frame_varg && fn != L)
				skip_next = true;
			if ((link & ~UINT64_C(7)) == 0 ||
			    (link & ~UINT64_C(7)) > frame - bot) {
				ret->partial = true;
				ret->why = "a frame's size leaves the stack";
				break;
			}
			frame -= link & ~UINT64_C(7);
		}
		/* The caller's slot: past the pseudo-frame of a vararg
		 * frame, which the next turn skips. */
		if (ret->n && (reported || fn != L) && !skip_next &&
		    !ret->v[ret->n - 1].prev)
			ret->v[ret->n - 1].prev = frame;
	}
	return NULL;
}

const char *lc_lj_frame_name(struct lc_memory *m, const struct lc_lj_layout *l,
			     uint64_t g, const struct lc_lj_walk *w, size_t i,
			     char *buf, size_t size, bool *bad)
{
	const struct lc_lj_frame *f = &w->v[i], *c;

	if (i + 1 >= w->n || !f->prev)
		return NULL;
	c = &w->v[i + 1];
	if (c->slot != f->prev || c->ffid != LC_LJ_FF_LUA || !c->proto)
		return NULL;
	return lc_lj_funcname(m, l, g, c->proto, c->pos, buf, size, bad);
}

void lc_lj_walk_free(struct lc_lj_walk *w)
{
	free(w->v);
	memset(w, 0, sizeof(*w));
}
