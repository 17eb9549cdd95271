/* The LuaJIT family (2.1, GC64, x86_64) behind the VM seam (vm/vm.h):
 * the interpreter is the layout read from DWARF (layout.c), a pass reads
 * the target's memory through it, and each operation is one of the
 * decoder's functions (frames.c, names.c, threads.c) in the seam's terms.
 * The names of LuaJIT's C functions and the registers of its interpreter
 * that native frames are matched against live here only.
 *
 * Where a thread's frames start (its innermost frame's base) depends on
 * what the VM is doing (global_State.vmstate): in C or the collector,
 * L->base, which the VM wrote when it left Lua code; in the interpreter,
 * the BASE and PC registers of its machine frame (vm_x64.dasc: rdx,
 * rbx), L->base being stale there; in a compiled trace, g->jit_base. */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/vm.h"
#include "vm/luajit/frames.h"
#include "vm/luajit/layout.h"
#include "vm/luajit/objects.h"
#include "vm/luajit/lj.h"
#include "vm/luajit/threads.h"

/* vm_x64.dasc (not Windows): the interpreter's BASE and PC, in DWARF's
 * x86_64 register numbers (rdx 1, rbx 3). */
#define LJ_REG_BASE	1
#define LJ_REG_PC	3
/* lj_target_x86.h: with GC64, a trace keeps DISPATCH (r14) too. */
#define LJ_REG_DISPATCH	14
/* lj_obj.h: LUA_YIELD (lua.h) and the bottom frame of a thread's stack
 * (stack + 1 + LJ_FR2 slots: its dummy frame). */
#define LJ_STATUS_YIELD	1
/* lua.h LUA_ERRERR: lj_err.c lj_err_run sets it while the error handler
 * of an xpcall runs (on the thread's frames, above the error). */
#define LJ_STATUS_ERRERR	5
#define LJ_BOTTOM	16
/* luaconf.h LUA_IDSIZE: lua_Debug.short_src. */
#define LJ_IDSIZE	60
/* Threads on one VM's GC list read for its list of coroutines. */
#define LJ_THREADS_MAX	(1u << 20)


/* A thread as read at this pass (lc_vstate.priv). */
struct ljstate {
	uint64_t L, g, base, top, stack, maxstack, cframe;
	uint64_t run_base, run_pc;	/* from the interpreter's registers
					   (at_frame), 0: none */
	uint64_t cur_L, jit_base;	/* its VM's */
	int32_t vmstate;		/* its VM's: >= 0 a trace number, else
					   ~LJ_VMST_* (lj_obj.h setvmstate) */
	/* Running a trace (at_frame, the innermost machine frame in its
	 * code): where the innermost frame's line comes from. */
	enum { LINE_VM, LINE_SNAPSHOT, LINE_TRACE_START, LINE_TRACE } line;
	/* Running a trace: the snapshot (and its trace) whose machine code
	 * covers the pc, the line's; 0: none.  inlined: its pc lies in
	 * calls the trace inlined, whose frames it holds go above the
	 * innermost one (walk), whose pc is then their return PC. */
	uint64_t snap_trace, snap;
	bool inlined;
	uint8_t status;
	bool is_main;
};

struct lc_pass {
	struct lc_interp *in;
	struct lc_memory *m;
	const struct lc_lj_layout *l;
	struct lc_seen seen;		/* is_state's answers */
	uint64_t vm_seen[8];		/* global_States found whole */
	/* What at_frame found of the threads the interpreter runs, for
	 * later reads of the same thread in this pass (the VM list). */
	struct ljstate runs[8];
	size_t nruns;
};

_Static_assert(sizeof(struct ljstate) <= sizeof(((struct lc_vstate *)0)->priv),
	       "struct ljstate fits in lc_vstate.priv");

static const struct ljstate *ljs(const struct lc_vstate *st)
{
	return (const struct ljstate *)st->priv;
}

static const struct lc_lj_layout *layout(const struct lc_interp *in)
{
	return in->priv;
}

/* ---- opening ---- */

static struct lc_error *lj_open(struct lc_program *p, struct lc_interp **ret)
{
	struct lc_lj_layout *l;
	struct lc_interp *in;
	char *version = NULL, *note = NULL;
	struct lc_error *err = lc_lj_layout_open(p, &l);

	if (err)
		return err;
	if (!l->gc64) {
		err = lc_error_create(LC_ERR_UNSUPPORTED,
			"LuaJIT in %s is built without GC64 (32-bit GC references, one-slot frames): only GC64 builds are read (LuaJIT's default on x86_64 since 2.1; LJ_GC64)",
			l->module_path);
		lc_lj_layout_destroy(l);
		return err;
	}
	in = calloc(1, sizeof(*in));
	if (!in || asprintf(&version, "LuaJIT %s", l->version) < 0 ||
	    asprintf(&note, "DWARF of %s: %s", l->module_path, l->desc) < 0) {
		free(in);
		free(version);
		lc_lj_layout_destroy(l);
		return &lc_error_nomem;
	}
	in->ops = &lc_luajit_ops;
	in->prog = p;
	in->version = version;
	in->module = l->module_path;
	in->module_start = l->module_start;
	in->module_end = l->module_end;
	in->layout_note = note;
	in->priv = l;
	*ret = in;
	return NULL;
}

static void lj_close(struct lc_interp *in)
{
	free((char *)in->version);
	free((char *)in->layout_note);
	lc_lj_layout_destroy(in->priv);
	free(in);
}

static struct lc_error *lj_begin(struct lc_interp *in, struct lc_pass **ret)
{
	struct lc_pass *pass = calloc(1, sizeof(*pass));

	if (!pass)
		return &lc_error_nomem;
	pass->in = in;
	pass->m = in->prog->mem;
	pass->l = layout(in);
	*ret = pass;
	return NULL;
}

static void lj_end(struct lc_pass *pass)
{
	free(pass);
}

/* ---- states ---- */

/* A global_State that names, as its main thread, the lua_State beside
 * it in their GG_State, whose header says thread and whose glref points
 * back. */
static bool vm_ok(struct lc_pass *pass, uint64_t g)
{
	const struct lc_lj_layout *l = pass->l;
	size_t i = (size_t)((g >> 4) & 7);
	uint64_t main;

	if (!g || (g & 7))
		return false;
	if (pass->vm_seen[i] == g)
		return true;
	if (lc_lj_field_u(pass->m, g, l->G.mainthref, &main) < 0)
		return false;
	main &= LC_LJ_GCVMASK;
	if (main + (uint64_t)((int64_t)l->GG.g.off - (int64_t)l->GG.L.off) != g ||
	    !lc_lj_is_thread(pass->m, l, main, g))
		return false;
	pass->vm_seen[i] = g;
	return true;
}

static bool read_state(struct lc_pass *pass, uint64_t addr,
		       struct ljstate *s)
{
	const struct lc_lj_layout *l = pass->l;
	struct lc_memory *m = pass->m;
	uint64_t g, status, cur, vmstate, main;

	memset(s, 0, sizeof(*s));
	if (!addr || (addr & 7) ||
	    lc_lj_field_u(m, addr, l->L.glref, &g) < 0 || !vm_ok(pass, g) ||
	    !lc_lj_is_thread(m, l, addr, g) ||
	    lc_lj_field_u(m, addr, l->L.status, &status) < 0 ||
	    lc_lj_field_u(m, addr, l->L.base, &s->base) < 0 ||
	    lc_lj_field_u(m, addr, l->L.top, &s->top) < 0 ||
	    lc_lj_field_u(m, addr, l->L.stack, &s->stack) < 0 ||
	    lc_lj_field_u(m, addr, l->L.maxstack, &s->maxstack) < 0 ||
	    lc_lj_field_u(m, addr, l->L.cframe, &s->cframe) < 0 ||
	    lc_lj_field_u(m, g, l->G.cur_L, &cur) < 0 ||
	    lc_lj_field_u(m, g, l->G.vmstate, &vmstate) < 0 ||
	    lc_lj_field_u(m, g, l->G.mainthref, &main) < 0)
		return false;
	/* The stack: slots, inside its bounds. */
	if (!s->stack || (s->stack & 7) || s->maxstack <= s->stack ||
	    s->maxstack - s->stack > (UINT64_C(1) << 34) ||
	    s->base < s->stack || s->base > s->maxstack + 8 || (s->base & 7) ||
	    s->top < s->stack || s->top > s->maxstack + 8 * 8)
		return false;
	s->L = addr;
	s->g = g;
	s->status = (uint8_t)status;
	s->cur_L = cur & LC_LJ_GCVMASK;
	s->vmstate = (int32_t)(uint32_t)vmstate;
	s->is_main = (main & LC_LJ_GCVMASK) == addr;
	for (size_t i = 0; i < pass->nruns; i++)
		if (pass->runs[i].L == addr) {
			s->run_base = pass->runs[i].run_base;
			s->run_pc = pass->runs[i].run_pc;
			s->line = pass->runs[i].line;
			s->snap_trace = pass->runs[i].snap_trace;
			s->snap = pass->runs[i].snap;
			s->inlined = pass->runs[i].inlined;
		}
	if (s->cur_L == addr && s->vmstate >= 0 &&
	    lc_lj_field_u(m, g, l->G.jit_base, &s->jit_base) == 0 &&
	    (s->jit_base < s->stack + LJ_BOTTOM || s->jit_base > s->maxstack ||
	     (s->jit_base & 7)))
		s->jit_base = 0;
	return true;
}

static bool has_frames(const struct ljstate *s)
{
	return s->base > s->stack + LJ_BOTTOM;
}

static void to_vstate(const struct ljstate *s, struct lc_vstate *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->addr = s->L;
	ret->vm = s->g;
	/* The running thread (cur_L) runs whatever its L->base says. */
	ret->active = has_frames(s) || (s->cur_L == s->L && s->status == 0);
	ret->runnable = ret->active &&
			(s->status == 0 || s->status == LJ_STATUS_ERRERR);
	/* A resumed thread's C frame lies below (deeper in the machine
	 * stack than) its resumer's. */
	ret->resume_depth = s->cframe & LC_LJ_CFRAME_RAWMASK ?
		UINT64_MAX - (s->cframe & LC_LJ_CFRAME_RAWMASK) : 0;
	memcpy(ret->priv, s, sizeof(*s));
}

static bool lj_state(struct lc_pass *pass, uint64_t addr,
		     struct lc_vstate *ret)
{
	struct ljstate s;

	if (!read_state(pass, addr, &s))
		return false;
	to_vstate(&s, ret);
	return true;
}

static bool state_reads(void *arg, uint64_t addr)
{
	struct ljstate s;

	return read_state(arg, addr, &s);
}

static bool lj_is_state(void *arg, uint64_t addr)
{
	struct lc_pass *pass = arg;

	return lc_seen_check(&pass->seen, addr, state_reads, pass);
}

static bool in_vm_code(const struct lc_lj_layout *l, uint64_t pc)
{
	return l->vm_start && pc >= l->vm_start && pc < l->vm_end;
}

/* In one of the interpreter's subroutines (layout.h vm_sub), which run
 * for the interpreter frame that called them. */
static bool in_vm_sub(const struct lc_lj_layout *l, uint64_t pc)
{
	for (size_t k = 0; k < LC_ARRAY_SIZE(l->vm_sub); k++)
		if (l->vm_sub[k][0] <= pc && pc < l->vm_sub[k][1])
			return true;
	return false;
}

/* Keep what at_frame found of s for the rest of the pass. */
static void remember(struct lc_pass *pass, const struct ljstate *s)
{
	size_t i;

	for (i = 0; i < pass->nruns; i++)
		if (pass->runs[i].L == s->L)
			break;
	if (i == LC_ARRAY_SIZE(pass->runs))
		return;
	pass->runs[i] = *s;
	if (i == pass->nruns)
		pass->nruns++;
}

/* ---- compiled traces ---- */

/* The trace numbered no of VM g: its GCtrace, or 0. */
static uint64_t trace_of(struct lc_pass *pass, uint64_t g, int32_t no)
{
	const struct lc_lj_layout *l = pass->l;
	uint64_t J = g - (uint64_t)l->GG.g.off + (uint64_t)l->GG.J.off;
	uint64_t size, arr, T, gct, tno;

	if (no <= 0 || !vm_ok(pass, g) ||
	    lc_lj_field_u(pass->m, J, l->J.sizetrace, &size) < 0 ||
	    (uint64_t)no >= size ||
	    lc_lj_field_u(pass->m, J, l->J.trace, &arr) < 0 ||
	    lc_read_u64(pass->m, arr + 8 * (uint64_t)no, &T) < 0)
		return 0;
	T &= LC_LJ_GCVMASK;
	if (lc_lj_field_u(pass->m, T, l->tr.gct, &gct) < 0 ||
	    gct != LC_LJ_TTRACE ||
	    lc_lj_field_u(pass->m, T, l->tr.traceno, &tno) < 0 ||
	    tno != (uint64_t)no)
		return 0;
	return T;
}

/* Is pc in trace T's machine code? */
static bool in_trace(struct lc_pass *pass, uint64_t T, uint64_t pc)
{
	uint64_t mcode, sz;

	return lc_lj_field_u(pass->m, T, pass->l->tr.mcode, &mcode) == 0 &&
	       lc_lj_field_u(pass->m, T, pass->l->tr.szmcode, &sz) == 0 &&
	       pc >= mcode && pc - mcode < sz;
}

/* The VM whose trace the machine frame f runs, and the trace: f's
 * DISPATCH register names the VM (GG_State), whose vmstate is the
 * trace's number. */
static uint64_t frame_trace(struct lc_pass *pass,
			    const struct lc_native_frame *f, uint64_t *g,
			    int32_t *no)
{
	const struct lc_lj_layout *l = pass->l;
	uint64_t vmstate, T;

	if (!(f->regmask & (1u << LJ_REG_DISPATCH)) ||
	    !(f->regmask & (1u << LC_REG_SP)))
		return 0;
	*g = f->regs[LJ_REG_DISPATCH] - (uint64_t)l->GG.dispatch.off +
	     (uint64_t)l->GG.g.off;
	if (!vm_ok(pass, *g) ||
	    lc_lj_field_u(pass->m, *g, l->G.vmstate, &vmstate) < 0)
		return 0;
	*no = (int32_t)(uint32_t)vmstate;
	T = trace_of(pass, *g, *no);
	return T && in_trace(pass, T, f->pc) ? T : 0;
}

/* A subroutine of the interpreter's (vm_sub) runs on its frame, below
 * its return address.  A trace runs on the interpreter's machine frame, below what the
 * interpreter pushed to enter it and its own spill slots
 * (GCtrace.spadjust): the interpreter's frame, whose unwind information
 * is one rule for all its code, starts that many bytes up. */
static bool lj_foreign(void *arg, const struct lc_native_frame *f,
		       uint64_t *pc, uint64_t *sp, char **name)
{
	struct lc_pass *pass = arg;
	const struct lc_lj_layout *l = pass->l;
	uint64_t g, T, adj;
	int32_t no;

	/* A subroutine of the interpreter, its return address on top of
	 * the interpreter's frame. */
	if (f->activation && in_vm_sub(l, f->pc) &&
	    (f->regmask & (1u << LC_REG_SP)) &&
	    lc_read_u64(pass->m, f->regs[LC_REG_SP], pc) == 0 &&
	    in_vm_code(l, *pc)) {
		*sp = f->regs[LC_REG_SP] + 8;
		*name = NULL;
		return true;
	}
	if (!l->vm_start || !(T = frame_trace(pass, f, &g, &no)) ||
	    lc_lj_field_u(pass->m, T, l->tr.spadjust, &adj) < 0)
		return false;
	*sp = f->regs[LC_REG_SP] + adj + LC_LJ_CFRAME_JIT_EXTRA;
	*pc = l->vm_jloop ? l->vm_jloop + 1 : l->vm_start + 1;
	if (asprintf(name, "LuaJIT trace %d", no) < 0)
		*name = NULL;
	return true;
}

/* The pc the innermost Lua frame (its function fn) was at in trace T,
 * which runs at machine address mpc: that of the snapshot whose machine
 * code covers mpc (lj_trace.c lj_trace_exit's search), when it is in
 * fn's own bytecode (a snapshot inside a call the trace inlined is not
 * this frame's), else the trace's start (in fn's bytecode, where the
 * trace began in fn).  The instruction after it, as the interpreter's
 * PC would be; 0 when neither. */
/* ---- frames a trace inlined ---- */

/* A frame the trace inlined, as its snapshot holds it. */
struct inl_frame {
	uint64_t fn, proto;
	uint64_t pc;		/* the instruction it is at */
	uint64_t slot;		/* its link slot's address on the stack */
};
#define LJ_INLINED_MAX	64

/* Snapshot sn of trace T: its entries into ents (at most 255, *nent of
 * them) and the 8 bytes after them, its pc and base slot (lj_snap.c
 * snapshot_framelinks, FR2).  false when they cannot be read. */
static bool snap_entries(struct lc_pass *pass, uint64_t T, uint64_t sn,
			 uint32_t ents[256], uint64_t *nent, uint64_t *pcbase)
{
	const struct lc_lj_layout *l = pass->l;
	uint64_t map, mapofs;

	return T && sn && lc_lj_field_u(pass->m, T, l->tr.snapmap, &map) == 0 &&
	       lc_lj_field_u(pass->m, sn, l->snap.mapofs, &mapofs) == 0 &&
	       lc_lj_field_u(pass->m, sn, l->snap.nent, nent) == 0 &&
	       *nent <= 255 &&
	       lc_read(pass->m, map + 4 * mapofs, ents, 4 * (size_t)*nent) == 0 &&
	       lc_read_u64(pass->m, map + 4 * (mapofs + *nent), pcbase) == 0;
}

/* The 64-bit constant of IR reference ref of trace T whose opcode is
 * op (lj_ir.h ir_kgc, ir_knum: the value in the next slot). */
static bool ir_k64(struct lc_pass *pass, uint64_t T, uint32_t ref,
		   int64_t op, uint64_t *v)
{
	const struct lc_lj_layout *l = pass->l;
	uint64_t ir, nk;
	uint8_t o;

	if (op < 0 || lc_lj_field_u(pass->m, T, l->tr.ir, &ir) < 0 ||
	    lc_lj_field_u(pass->m, T, l->tr.nk, &nk) < 0 ||
	    ref < nk || ref >= LC_LJ_REF_BIAS ||
	    lc_read_u8(pass->m, ir + LC_LJ_IRINS_SIZE * (uint64_t)ref +
		       LC_LJ_IRINS_OP, &o) < 0 || o != (uint64_t)op)
		return false;
	return lc_read_u64(pass->m, ir + LC_LJ_IRINS_SIZE * ((uint64_t)ref + 1),
			   v) == 0;
}

/* The frames trace T inlined at snapshot sn, innermost first, into out
 * (at most LJ_INLINED_MAX), from the snapshot's frame slots (lj_snap.c
 * snapshot_slots, FR2: a frame's function a KGC constant two slots
 * below its base, its link a KNUM constant just below), and the return
 * PC into the trace's start frame (base jit_base, slot 2).  0 when the
 * snapshot is in the start frame, or when any of it does not check out:
 * a function that is no Lua function holding its pc, a link that is no
 * Lua return PC, a caller's base outside the chain. */
static size_t trace_inlined(struct lc_pass *pass, uint64_t T, uint64_t sn,
			    uint64_t jit_base, struct inl_frame *out,
			    uint64_t *ret_pc)
{
	const struct lc_lj_layout *l = pass->l;
	struct lc_memory *m = pass->m;
	uint64_t nent, pcbase, pc, b;
	uint32_t ents[256];
	size_t n = 0;

	if (!snap_entries(pass, T, sn, ents, &nent, &pcbase))
		return 0;
	pc = pcbase >> 8;		/* lj_jit.h snap_pc */
	b = (pcbase & 0xff) + 2;	/* J->baseslot (lj_snap.c) */
	while (b > 2) {
		uint64_t fv = 0, link = 0, gct, ffid, fpc, sizebc, proto;
		uint32_t ins, a;
		bool have_fn = false, have_link = false;

		if (n >= LJ_INLINED_MAX)
			return 0;
		for (uint64_t k = 0; k < nent; k++) {
			uint32_t e = ents[k];

			if (LC_LJ_SNAP_SLOT(e) == b - 2 && !(e & LC_LJ_SNAP_FRAME))
				have_fn = ir_k64(pass, T, LC_LJ_SNAP_REF(e),
						 l->ir_kgc, &fv);
			else if (LC_LJ_SNAP_SLOT(e) == b - 1 &&
				 (e & LC_LJ_SNAP_FRAME))
				have_link = ir_k64(pass, T, LC_LJ_SNAP_REF(e),
						   l->ir_knum, &link);
		}
		fv &= LC_LJ_GCVMASK;
		if (!have_fn || !have_link ||
		    lc_lj_field_u(m, fv, l->fn.gct, &gct) < 0 ||
		    gct != LC_LJ_TFUNC ||
		    lc_lj_field_u(m, fv, l->fn.ffid, &ffid) < 0 ||
		    ffid != LC_LJ_FF_LUA ||
		    lc_lj_field_u(m, fv, l->fn.pc, &fpc) < 0 || fpc <= l->sz_proto)
			return 0;
		proto = fpc - l->sz_proto;
		if (lc_lj_field_u(m, proto, l->pt.sizebc, &sizebc) < 0 ||
		    pc < fpc || pc >= fpc + 4 * sizebc)
			return 0;
		out[n++] = (struct inl_frame){ fv, proto, pc,
					       jit_base + 8 * (b - 3) };
		/* Its caller: the link is the return PC after the CALL
		 * whose A operand is the callee's slot in the caller's
		 * frame (lj_frame.h frame_prevl). */
		if ((link & LC_LJ_FRAME_TYPE) != (uint64_t)l->frame_lua ||
		    lc_read_u32(m, link - 4, &ins) < 0)
			return 0;
		a = LC_LJ_BC_A(ins);
		if (b - 2 < 2 + (uint64_t)a)
			return 0;
		b = b - 2 - a;
		pc = link - 4;
	}
	*ret_pc = pc + 4;
	return n;
}

static uint64_t trace_pc(struct lc_pass *pass, uint64_t T, uint64_t mpc,
			 uint64_t fpc, uint64_t sizebc, int *line,
			 uint64_t *snap)
{
	const struct lc_lj_layout *l = pass->l;
	struct lc_memory *m = pass->m;
	uint64_t mcode, nsnap, snaps, map, lo = 0, hi, pc;

	if (lc_lj_field_u(m, T, l->tr.mcode, &mcode) == 0 &&
	    lc_lj_field_u(m, T, l->tr.nsnap, &nsnap) == 0 &&
	    lc_lj_field_u(m, T, l->tr.snap, &snaps) == 0 &&
	    lc_lj_field_u(m, T, l->tr.snapmap, &map) == 0 &&
	    nsnap && nsnap < 65536 && l->snap.size) {
		hi = nsnap;
		/* Rightmost snapshot whose mcofs is at most the offset. */
		while (lo < hi) {
			uint64_t mid = (lo + hi) / 2, ofs;

			if (lc_lj_field_u(m, snaps + mid * l->snap.size,
					  l->snap.mcofs, &ofs) < 0)
				break;
			if (mpc - mcode < ofs)
				hi = mid;
			else
				lo = mid + 1;
		}
		if (lo == hi && lo > 0) {
			uint64_t sn = snaps + (lo - 1) * l->snap.size, mapofs,
				 nent, pcbase;

			if (lc_lj_field_u(m, sn, l->snap.mapofs, &mapofs) == 0 &&
			    lc_lj_field_u(m, sn, l->snap.nent, &nent) == 0 &&
			    lc_read_u64(m, map + 4 * (mapofs + nent), &pcbase) == 0) {
				pc = pcbase >> 8;	/* lj_jit.h snap_pc */
				*snap = sn;
				if (pc >= fpc && pc < fpc + 4 * sizebc) {
					*line = LINE_SNAPSHOT;
					return pc + 4;
				}
			}
		}
	}
	if (lc_lj_field_u(m, T, l->tr.startpc, &pc) == 0 &&
	    pc >= fpc && pc < fpc + 4 * sizebc) {
		*line = LINE_TRACE_START;
		return pc + 4;
	}
	*line = LINE_TRACE;
	return 0;
}

/* The innermost machine frame is the interpreter's, and the VM says it
 * interprets: its BASE and PC registers say where, if they read as a
 * frame of this thread (a function below the base, a Lua one whose
 * bytecode holds the PC). */
static void lj_at_frame(struct lc_pass *pass, struct lc_vstate *st,
			const struct lc_native_frame *nf, size_t n, size_t i)
{
	const struct lc_lj_layout *l = pass->l;
	struct ljstate *s = (struct ljstate *)st->priv;
	const uint32_t need = (1u << LJ_REG_BASE) | (1u << LJ_REG_PC);
	uint64_t base, pc, fv, fn, ffid, fpc, sizebc, proto;

	(void)i;
	if (n && s->cur_L == s->L && s->vmstate >= 0 && s->jit_base) {
		uint64_t g, T = 0, mpc;
		int32_t no;
		int line = LINE_TRACE;
		size_t k;

		/* In a trace (the innermost machine frame, or the one a C
		 * function it called through the FFI returns to): the frames
		 * from jit_base, the innermost one's line from the trace. */
		for (k = 0; k < n && k < 32 && !T; k++)
			if (!in_vm_code(l, nf[k].pc))
				T = frame_trace(pass, &nf[k], &g, &no);
		if (!T || g != s->g ||
		    lc_read_u64(pass->m, s->jit_base - 16, &fv) < 0)
			return;
		k--;
		mpc = nf[k].activation ? nf[k].pc : nf[k].pc - 1;
		fn = fv & LC_LJ_GCVMASK;
		if (lc_lj_field_u(pass->m, fn, l->fn.ffid, &ffid) == 0 &&
		    ffid == LC_LJ_FF_LUA &&
		    lc_lj_field_u(pass->m, fn, l->fn.pc, &fpc) == 0 &&
		    fpc > l->sz_proto &&
		    lc_lj_field_u(pass->m, fpc - l->sz_proto, l->pt.sizebc,
				  &sizebc) == 0)
		{
			uint64_t sn = 0, ret;
			struct inl_frame inl[LJ_INLINED_MAX];

			s->run_pc = trace_pc(pass, T, mpc, fpc, sizebc, &line,
					     &sn);
			if (line == LINE_SNAPSHOT) {
				s->snap_trace = T;
				s->snap = sn;
			} else if (sn && trace_inlined(pass, T, sn, s->jit_base,
						       inl, &ret) &&
				   ret > fpc && ret <= fpc + 4 * sizebc) {
				/* The snapshot's pc is in a call the trace
				 * inlined: its frames, as they lead back
				 * into this one. */
				s->run_pc = ret;
				line = LINE_SNAPSHOT;
				s->snap_trace = T;
				s->snap = sn;
				s->inlined = true;
			}
		}
		if (!s->run_pc)
			s->run_pc = 1;	/* unknown, not the saved PC's */
		s->line = line;
		s->run_base = s->jit_base;
		remember(pass, s);
		return;
	}
	/* The interpreter's frame is the innermost, or the one just outside
	 * a subroutine of its own with an unwind entry of its own
	 * (lj_vm_mod, lj_vm_floor, ...: vm_x64.dasc's ->vm_* helpers, which
	 * leave BASE and PC alone): the innermost frame's registers. */
	if (!n || s->cur_L != s->L || s->vmstate != ~(int32_t)l->vmst_interp ||
	    !nf[0].activation || (nf[0].regmask & need) != need ||
	    !in_vm_code(l, nf[0].pc))
		return;
	base = nf[0].regs[LJ_REG_BASE];
	pc = nf[0].regs[LJ_REG_PC];
	if (base < s->stack + LJ_BOTTOM + 8 || base > s->maxstack ||
	    (base & 7) || lc_read_u64(pass->m, base - 16, &fv) < 0)
		return;
	fn = fv & LC_LJ_GCVMASK;
	if (lc_lj_field_u(pass->m, fn, l->fn.ffid, &ffid) < 0)
		return;
	s->run_base = base;
	remember(pass, s);
	st->active = true;
	st->runnable = s->status == 0 || s->status == LJ_STATUS_ERRERR;
	if (ffid != LC_LJ_FF_LUA ||
	    lc_lj_field_u(pass->m, fn, l->fn.pc, &fpc) < 0 ||
	    fpc <= l->sz_proto)
		return;
	proto = fpc - l->sz_proto;
	/* A PC outside the function's bytecode says nothing: the line is
	 * unknown (1 reads as no position), not the stale saved PC's. */
	if (lc_lj_field_u(pass->m, proto, l->pt.sizebc, &sizebc) == 0 &&
	    pc > fpc && pc <= fpc + 4 * sizebc)
		s->run_pc = pc;
	else
		s->run_pc = 1;
	remember(pass, s);
}

/* The base the walk starts from, and the innermost frame's PC. */
static uint64_t walk_base(const struct ljstate *s, uint64_t *pc)
{
	*pc = s->run_pc;
	if (s->run_base)
		return s->run_base;
	if (s->jit_base)
		return s->jit_base;
	return s->base;
}

/* ---- frames ---- */

struct ljwalk {
	struct lc_lj_walk w;
	bool from_regs;		/* the interpreter's registers placed it */
	bool in_trace;		/* started from jit_base */
	int line;		/* ljstate.line */
	/* Running a trace: its frames (those it inlined and its start
	 * frame) are the first trace_frames; their slots on the stack hold
	 * what the last exit wrote, the trace keeps the current values. */
	size_t trace_frames;
	int32_t trace;
	uint64_t snap_trace, snap, jit_base;	/* ljstate's */
};

/* Snapshot sn of trace T holds slot (lj_snap.c numbering: the trace's
 * start frame's base is slot 2) as a value the trace keeps, newer than
 * the stack's (an entry that is restored at an exit); true too when the
 * snapshot cannot be read.  A slot it does not hold is as the stack
 * has it (snapshot_slots leaves out unmodified slots). */
static bool snap_holds(struct lc_pass *pass, uint64_t T, uint64_t sn,
		       uint64_t slot)
{
	uint64_t nent, pcbase;
	uint32_t ents[256];

	if (!snap_entries(pass, T, sn, ents, &nent, &pcbase))
		return true;
	for (uint64_t k = 0; k < nent; k++)
		if (LC_LJ_SNAP_SLOT(ents[k]) == slot &&
		    !(ents[k] & LC_LJ_SNAP_NORESTORE))
			return true;
	return false;
}

/* The frames the running trace inlined (at_frame found them in its
 * snapshot) above the walk's innermost frame, which is the trace's start
 * frame: innermost first, each with its position and line, its caller
 * the frame below.  false: out of memory. */
static bool add_inlined(struct lc_pass *pass, const struct ljstate *s,
			struct lc_lj_walk *w)
{
	struct inl_frame inl[LJ_INLINED_MAX];
	struct lc_lj_frame *v;
	uint64_t ret;
	size_t n = trace_inlined(pass, s->snap_trace, s->snap, s->jit_base,
				 inl, &ret);

	if (!n)
		return true;
	v = realloc(w->v, (w->n + n + 64) * sizeof(*v));
	if (!v)
		return false;
	memmove(v + n, v, w->n * sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		struct lc_lj_frame *f = &v[i];

		memset(f, 0, sizeof(*f));
		f->slot = inl[i].slot;
		f->func = inl[i].fn;
		f->ffid = LC_LJ_FF_LUA;
		f->proto = inl[i].proto;
		f->pos = (int64_t)((inl[i].pc - (inl[i].proto + pass->l->sz_proto)) / 4);
		f->line = lc_lj_line(pass->m, pass->l, f->proto, f->pos);
		if (f->line == -2) {
			f->line = -1;
			f->bad_line = true;
		}
		f->prev = i + 1 < n ? inl[i + 1].slot : v[n].slot;
	}
	w->v = v;
	w->n += n;
	return true;
}

static struct lc_error *lj_walk(struct lc_pass *pass, const struct lc_vstate *st,
				size_t max, struct lc_vwalk *ret)
{
	const struct ljstate *s = ljs(st);
	struct ljwalk *lw = calloc(1, sizeof(*lw));
	struct lc_error *err;
	uint64_t pc, base = walk_base(s, &pc);

	memset(ret, 0, sizeof(*ret));
	if (!lw)
		return &lc_error_nomem;
	lw->from_regs = s->run_base != 0 && s->line == LINE_VM;
	lw->in_trace = s->jit_base != 0;
	lw->line = s->line;
	/* A thread with no frame above its bottom one has nothing to
	 * walk (a coroutine not started, or finished). */
	if (base <= s->stack + LJ_BOTTOM) {
		ret->priv = lw;
		return NULL;
	}
	err = lc_lj_walk(pass->m, pass->l, s->L, base, pc, max, &lw->w);
	if (err) {
		free(lw);
		return err;
	}
	{
		size_t before = lw->w.n;

		if (s->inlined && lw->w.n && !add_inlined(pass, s, &lw->w)) {
			lc_lj_walk_free(&lw->w);
			free(lw);
			return &lc_error_nomem;
		}
		if (s->jit_base && s->vmstate >= 0 && lw->w.n && base == s->jit_base) {
			lw->trace_frames = lw->w.n - before + 1;
			lw->trace = s->vmstate;
			lw->snap_trace = s->snap_trace;
			lw->snap = s->snap;
			lw->jit_base = s->jit_base;
		}
	}
	ret->partial = lw->w.partial;
	ret->frames = calloc(lw->w.n ? lw->w.n : 1, sizeof(*ret->frames));
	if (!ret->frames) {
		lc_lj_walk_free(&lw->w);
		free(lw);
		return &lc_error_nomem;
	}
	for (size_t i = 0; i < lw->w.n; i++) {
		const struct lc_lj_frame *f = &lw->w.v[i];

		ret->frames[i].addr = f->slot;
		ret->frames[i].kind = f->ffid == LC_LJ_FF_LUA ? LC_VFRAME_LUA :
				      LC_VFRAME_C;
		ret->frames[i].cfunc = f->ffid == LC_LJ_FF_LUA ? 0 : f->cfunc;
		ret->frames[i].in_run = f->asm_ff;
	}
	ret->n = lw->w.n;
	ret->priv = lw;
	return NULL;
}

static void lj_walk_free(struct lc_vwalk *w)
{
	struct ljwalk *lw = w->priv;

	if (lw)
		lc_lj_walk_free(&lw->w);
	free(lw);
	w->priv = NULL;
}

/* lj_debug.c lj_debug_shortname. */
static char *short_src(const char *src, bool builtin)
{
	char out[LJ_IDSIZE + 16];
	size_t len = strlen(src);

	if (*src == '=') {
		snprintf(out, LJ_IDSIZE, "%.*s", LJ_IDSIZE - 1, src + 1);
	} else if (*src == '@') {
		if (len - 1 >= LJ_IDSIZE)
			snprintf(out, sizeof(out), "...%.*s", LJ_IDSIZE - 4,
				 src + 1 + (len - 1) - (LJ_IDSIZE - 4));
		else
			snprintf(out, sizeof(out), "%.*s", LJ_IDSIZE - 1, src + 1);
	} else {
		size_t n;

		for (n = 0; n < LJ_IDSIZE - 12; n++)
			if ((unsigned char)src[n] < ' ')
				break;
		if (src[n]) {
			if (n > LJ_IDSIZE - 15)
				n = LJ_IDSIZE - 15;
			snprintf(out, sizeof(out), "%s%.*s...%s",
				 builtin ? "[builtin:" : "[string \"", (int)n,
				 src, builtin ? "]" : "\"]");
		} else {
			snprintf(out, sizeof(out), "%s%.*s%s",
				 builtin ? "[builtin:" : "[string \"", (int)n, src,
				 builtin ? "]" : "\"]");
		}
	}
	return strdup(out);
}

/* lj_debug.c luaL_traceback: the line it prints for frame f. */
static char *traceback_line(const struct lc_frame *f, uint8_t ffid)
{
	char head[LJ_IDSIZE + 40], *out = NULL;
	int r;

	if (ffid > LC_LJ_FF_C && !*f->namewhat)
		snprintf(head, sizeof(head), "[builtin#%u]:", ffid);
	else
		snprintf(head, sizeof(head), "%s:", f->short_src ? f->short_src : "?");
	if (f->currentline > 0) {
		size_t k = strlen(head);

		snprintf(head + k, sizeof(head) - k, "%d:", f->currentline);
	}
	if (*f->namewhat)
		r = asprintf(&out, "%s in function '%s'", head,
			     f->name ? f->name : "?");
	else if (strcmp(f->what, "main") == 0)
		r = asprintf(&out, "%s in main chunk", head);
	else if (strcmp(f->what, "C") == 0)
		r = asprintf(&out, "%s at 0x%08" PRIx64, head, f->cfunc);
	else
		r = asprintf(&out, "%s in function <%s:%d>", head,
			     f->short_src ? f->short_src : "?", f->linedefined);
	return r < 0 ? NULL : out;
}

/* Fill report frame f from walk frame i of state s. */
static void fill_frame(struct lc_pass *pass, const struct ljstate *s,
		       const struct ljwalk *lw, size_t i, struct lc_frame *f)
{
	const struct lc_lj_layout *l = pass->l;
	const struct lc_lj_frame *fr = &lw->w.v[i];
	char buf[4096], name[256];
	const char *namewhat;

	f->kind = LC_FRAME_LUA;
	f->state = s->L;
	f->ci = fr->slot;
	f->currentline = -1;
	f->linedefined = -1;
	f->namewhat = "";
	{
		bool bad = false;

		namewhat = lc_lj_frame_name(pass->m, l, s->g, &lw->w, i, name,
					    sizeof(name), &bad);
		if (bad)
			f->partial = true;
	}
	if (namewhat) {
		f->name = strdup(name);
		f->namewhat = namewhat;
	}
	if (fr->ffid == LC_LJ_FF_LUA) {
		uint64_t first = 0;

		if (!fr->proto || !lc_lj_chunkname(pass->m, l, fr->proto, buf,
						   sizeof(buf))) {
			f->partial = true;
			snprintf(buf, sizeof(buf), "?");
		}
		f->source = strdup(buf);
		f->short_src = short_src(buf, false);
		if (fr->proto)
			lc_lj_field_u(pass->m, fr->proto, l->pt.firstline, &first);
		f->linedefined = (int)(int32_t)first;
		f->what = f->linedefined == 0 ? "main" : "Lua";
		/* A main chunk is a vararg function: one that is not is
		 * a function whose first line was lost. */
		if (fr->proto && f->linedefined == 0) {
			uint64_t flags;

			if (lc_lj_field_u(pass->m, fr->proto, l->pt.flags,
					  &flags) < 0 ||
			    !(flags & LC_LJ_PROTO_VARARG))
				f->partial = true;
		}
		f->currentline = fr->line >= 0 ? (int)fr->line : -1;
		if (fr->bad_line || fr->bad_func)
			f->partial = true;
		if (i == 0 && lw->from_regs)
			f->line_from = "pc";
		else if (i == 0 && lw->line == LINE_SNAPSHOT)
			f->line_from = "snapshot";
		else if (i == 0 && lw->line == LINE_TRACE_START)
			f->line_from = "trace start";
		f->savedpc_line = f->currentline;
	} else {
		f->what = "C";
		f->source = strdup("=[C]");
		f->short_src = strdup("[C]");
		f->cfunc = fr->cfunc;
		f->function = lc_strdup_or_null(
			lc_program_symbol(pass->in->prog, fr->cfunc));
		if (fr->bad_func)
			f->partial = true;
	}
	if (!pass->in->profile_frames)
		f->traceback = traceback_line(f, fr->ffid);
}

/* Locals of Lua frame i (lj_debug.c lua_getlocal: the variables live at
 * its position, in the order declared, each in the slot from the frame's
 * base up), at most LOCALS_MAX. */
#define LOCALS_MAX 250
static void frame_locals(struct lc_pass *pass, const struct ljwalk *lw,
			 size_t i, struct lc_frame *f)
{
	const struct lc_lj_frame *fr = &lw->w.v[i];
	struct lc_var *vars = NULL;
	size_t n = 0;
	char name[256];

	if (fr->ffid != LC_LJ_FF_LUA || !fr->proto || fr->pos < 0)
		return;
	for (uint32_t slot = 0; slot < LOCALS_MAX; slot++) {
		struct lc_var *p;

		bool bad = false;

		if (!lc_lj_varname(pass->m, pass->l, fr->proto, (uint32_t)fr->pos,
				   slot, name, sizeof(name), &bad)) {
			if (bad)
				f->partial = true;
			break;
		}
		p = realloc(vars, (n + 1) * sizeof(*p));
		if (!p) {
			f->partial = true;
			break;
		}
		vars = p;
		memset(&vars[n], 0, sizeof(vars[n]));
		vars[n].kind = "local";
		vars[n].name = strdup(name);
		vars[n].index = (int)slot + 1;
		/* Slot k of the frame: base + 8k, the base just above the
		 * frame's link slot; a frame the running trace runs keeps
		 * its values in the trace (registers, spill slots), its
		 * stack slot an older one. */
		/* (A frame the trace inlined is on the stack only once an
		 * exit writes it: none of its slots holds its values.) */
		if (i + 1 < lw->trace_frames ||
		    (i < lw->trace_frames &&
		     snap_holds(pass, lw->snap_trace, lw->snap,
				(fr->slot + 8 - lw->jit_base) / 8 + 2 + slot))) {
			lc_value_init(&vars[n].value);
			vars[n].value.type = "?";
			free(vars[n].value.text);
			if (asprintf(&vars[n].value.text,
				     "(held by trace %d, not on the stack)",
				     (int)lw->trace) < 0)
				vars[n].value.text = NULL;
		} else {
			lc_lj_value(pass->in->prog, pass->l,
				    fr->slot + 8 + 8 * (uint64_t)slot,
				    &vars[n].value);
		}
		n++;
	}
	/* Its function's upvalues (lua_getupvalue): each GCupval's v
	 * points to the value, on a stack while open. */
	{
		const struct lc_lj_layout *l = pass->l;
		uint64_t nup = 0;

		if (LC_LJ_HAS(l->fn.uvptr) && LC_LJ_HAS(l->uv.v))
			lc_lj_field_u(pass->m, fr->func, l->fn.nupvalues, &nup);
		for (uint32_t k = 0; k < nup && k < LOCALS_MAX; k++) {
			struct lc_var *p = realloc(vars, (n + 1) * sizeof(*p));
			uint64_t uv, gct, v;

			if (!p) {
				f->partial = true;
				break;
			}
			vars = p;
			memset(&vars[n], 0, sizeof(vars[n]));
			vars[n].kind = "upvalue";
			vars[n].index = (int)k + 1;
			bool bad = false;

			if (!lc_lj_uvname(pass->m, l, fr->proto, k, name,
					  sizeof(name), &bad)) {
				snprintf(name, sizeof(name), "?");
				if (bad)
					f->partial = true;
			}
			vars[n].name = strdup(*name ? name : "?");
			if (lc_read_u64(pass->m, fr->func + (uint64_t)l->fn.uvptr.off +
					8 * (uint64_t)k, &uv) == 0 &&
			    (uv &= LC_LJ_GCVMASK) &&
			    lc_lj_field_u(pass->m, uv, l->uv.gct, &gct) == 0 &&
			    gct == LC_LJ_TUPVAL &&
			    lc_lj_field_u(pass->m, uv, l->uv.v, &v) == 0) {
				lc_lj_value(pass->in->prog, l, v, &vars[n].value);
			} else {
				lc_value_init(&vars[n].value);
				vars[n].value.type = "?";
				vars[n].value.text = strdup("(unreadable)");
				vars[n].value.partial = true;
			}
			n++;
		}
	}
	f->vars = vars;
	f->nvars = n;
}

static void lj_frame(struct lc_pass *pass, const struct lc_vstate *st,
		     const struct lc_vwalk *w, size_t i, bool locals,
		     bool unplaced, const struct lc_native_frame *runner,
		     struct lc_frames *out)
{
	struct lc_frame *f = lc_frames_push(out);

	(void)runner;
	if (!f)
		return;
	fill_frame(pass, ljs(st), w->priv, i, f);
	if (locals)
		frame_locals(pass, w->priv, i, f);
	f->unplaced = unplaced;
}

/* A frame called from C (lua_call, lua_pcall: a C frame of its own on
 * the machine stack) or the bottom one of a coroutine (lj_vm_resume)
 * is the outermost of one run of the interpreter. */
static bool lj_starts_run(struct lc_pass *pass, const struct lc_vwalk *w,
			  size_t i)
{
	const struct ljwalk *lw = w->priv;
	const struct lc_lj_layout *l = pass->l;
	unsigned t;

	if (!lw || i >= lw->w.n)
		return false;
	if (i + 1 == lw->w.n && !lw->w.partial)
		return true;
	t = lw->w.v[i].link;
	return t != 0 && (t == (unsigned)l->frame_c || t == (unsigned)l->frame_cp);
}

static bool lj_continued(struct lc_pass *pass, const struct lc_vwalk *w,
			 size_t i)
{
	(void)pass;
	(void)w;
	(void)i;
	return false;
}

static unsigned lj_roles(const struct lc_interp *in, const char *fn)
{
	static const char *const gc[] = {
		"lj_gc_step", "lj_gc_fullgc", "lj_gc_step_fixtop",
		"lj_gc_step_jit", "lj_gc_freeall",
	};
	unsigned r = 0;

	(void)in;
	if (!fn)
		return 0;
	if (strcmp(fn, "lua_resume") == 0)
		r |= LC_ROLE_RESUME;
	for (size_t i = 0; i < LC_ARRAY_SIZE(gc); i++)
		if (strcmp(fn, gc[i]) == 0)
			r |= LC_ROLE_GC;
	return r;
}

/* Every machine frame in the interpreter's code is one of its runs: it
 * runs Lua, and calls C functions for it (BC_FUNCC). */
static unsigned lj_frame_roles(const struct lc_interp *in,
			       const struct lc_native_frame *f)
{
	const struct lc_lj_layout *l = layout(in);

	return in_vm_code(l, f->pc) && !(f->activation && in_vm_sub(l, f->pc)) ?
	       LC_ROLE_RUNS_LUA | LC_ROLE_CALLS_C : 0;
}

/* LuaJIT's own code: its source files (lj_*.c, lib_*.c), its names, or
 * the interpreter's machine code. */
static bool lj_own_frame(const struct lc_interp *in, const struct lc_frame *f)
{
	const char *fn = f->function;

	if (f->kind == LC_FRAME_LUA)
		return false;
	if (in_vm_code(layout(in), f->pc))
		return true;
	if (f->file) {
		const char *b = lc_base_name(f->file);

		if ((strncmp(b, "lj_", 3) == 0 || strncmp(b, "lib_", 4) == 0) &&
		    strstr(b, ".c"))
			return true;
	}
	if (fn && (strncmp(fn, "lj_", 3) == 0 || strncmp(fn, "lua_", 4) == 0 ||
		   strncmp(fn, "luaL_", 5) == 0 || strncmp(fn, "luaJIT_", 7) == 0))
		return true;
	return !fn && in && in->module && f->module &&
	       strcmp(in->module, f->module) == 0 &&
	       strstr(lc_base_name(in->module), ".so");
}

/* lj_obj.h vmstate, as jit.p tells it (lib/jit/p.lua, lj_profile.c):
 * a trace's number (N), the interpreter (I), C code (C), the collector
 * (G), else the compiler (J: recording, optimizing, assembling, a
 * trace's exit). */
static const char *lj_vm_label(struct lc_pass *pass, const struct lc_vstate *st,
			       int32_t *trace)
{
	const struct lc_lj_layout *l = pass->l;
	int32_t v = ljs(st)->vmstate;

	if (v >= 0) {
		*trace = v;
		return "trace";
	}
	if (v == ~(int32_t)l->vmst_interp)
		return "lua";
	if (v == ~(int32_t)l->vmst_c)
		return "c";
	if (v == ~(int32_t)l->vmst_gc)
		return "gc";
	return "jit";
}

/* ---- the whole process ---- */

/* The data stack's slots (--stack): from L->stack to top, and residue
 * slots above it (stale, as popped).  A slot belongs to the innermost
 * frame whose function slot is at or below it (GC64: the function, then
 * the frame's link, then its base); the link is no value. */
#define SLOTS_MAX 100000
static void stack_slots(struct lc_pass *pass, const struct ljstate *s,
			const struct ljwalk *lw, int residue,
			struct lc_luathread *lt)
{
	uint64_t n, used = (s->top - s->stack) / 8;
	struct lc_slot *v;

	if (residue < 0)
		residue = 0;
	n = used + (uint64_t)residue;
	if (n > (s->maxstack - s->stack) / 8 + 1)
		n = (s->maxstack - s->stack) / 8 + 1;
	if (n > SLOTS_MAX) {
		n = SLOTS_MAX;
		lt->partial = true;
	}
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v) {
		lt->partial = true;
		return;
	}
	for (uint64_t k = 0; k < n; k++) {
		struct lc_slot *sl = &v[k];
		uint64_t addr = s->stack + 8 * k;
		bool link = false;

		sl->addr = addr;
		sl->index = (long)k;
		sl->residue = k >= used;
		sl->frame = -1;
		for (size_t i = 0; lw && i < lw->w.n; i++) {
			const struct lc_lj_frame *fr = &lw->w.v[i];

			if (addr >= fr->slot - 8) {
				sl->frame = (long)i;
				sl->is_func = addr == fr->slot - 8;
				link = addr == fr->slot;
				break;
			}
		}
		if (link) {
			uint64_t raw = 0;

			lc_value_init(&sl->value);
			lc_read_u64(pass->m, addr, &raw);
			sl->value.type = "?";
			if (asprintf(&sl->value.text, "(frame link 0x%" PRIx64 ")",
				     raw) < 0)
				sl->value.text = NULL;
		} else {
			lc_lj_value(pass->in->prog, pass->l, addr, &sl->value);
		}
	}
	lt->slots = v;
	lt->nslots = (size_t)n;
}

static void lj_state_frames(struct lc_pass *pass, const struct lc_vstate *st,
			    size_t max, bool locals, bool slots, int residue,
			    struct lc_luathread *lt)
{
	const struct ljstate *s = ljs(st);
	struct lc_vwalk w;
	struct lc_frames o = { 0 };
	struct lc_error *err;

	lt->topslot = s->top >= s->stack ? (long)((s->top - s->stack) / 8) : -1;
	err = lj_walk(pass, st, max, &w);
	if (err) {
		lc_error_destroy(err);
		lt->partial = true;
		return;
	}
	if (w.partial) {
		const struct ljwalk *lw = w.priv;

		lt->partial = true;
		if (!lt->note && lw && lw->w.why)
			lt->note = strdup(lw->w.why);
	}
	for (size_t i = 0; i < w.n; i++) {
		struct lc_frame *f = lc_frames_push(&o);

		if (!f)
			break;
		fill_frame(pass, s, w.priv, i, f);
		if (locals)
			frame_locals(pass, w.priv, i, f);
		if (f->partial)
			lt->partial = true;
	}
	lt->frames = o.v;
	lt->nframes = o.n;
	if (slots)
		stack_slots(pass, s, w.priv, residue, lt);
	lc_vwalk_free(pass->in, &w);
}

static struct lc_error *lj_scan(struct lc_pass *pass, uint64_t **vms,
				size_t *nvms, uint64_t **threads,
				size_t *nthreads)
{
	if (threads) {
		*threads = NULL;
		*nthreads = 0;
	}
	return lc_lj_find_vms(pass->m, pass->l, vms, nvms);
}

/* lj_gc.h: the collector's states, in their order there. */
static const char *const gc_states[] = {
	"pause", "propagate", "atomic", "sweepstring", "sweep", "finalize",
};

/* g->vmstate in words: ~LJ_VMST_* (lj_obj.h), or a trace's number. */
static const char *vmstate_name(const struct lc_lj_layout *l, int32_t v)
{
	static const struct { size_t off; const char *name; } names[] = {
		{ offsetof(struct lc_lj_layout, vmst_interp), "interpreter" },
		{ offsetof(struct lc_lj_layout, vmst_c), "C function" },
		{ offsetof(struct lc_lj_layout, vmst_gc), "garbage collector" },
		{ offsetof(struct lc_lj_layout, vmst_exit), "trace exit" },
		{ offsetof(struct lc_lj_layout, vmst_record), "recording" },
		{ offsetof(struct lc_lj_layout, vmst_opt), "optimizing" },
		{ offsetof(struct lc_lj_layout, vmst_asm), "assembling" },
	};

	if (v >= 0)
		return "trace";
	for (size_t i = 0; i < LC_ARRAY_SIZE(names); i++) {
		int64_t e = *(const int64_t *)(const void *)
			((const char *)l + names[i].off);

		if (e >= 0 && v == ~(int32_t)e)
			return names[i].name;
	}
	return NULL;
}

/* jit_State.state (lj_jit.h TraceState) in words. */
static const char *jit_state_name(const struct lc_lj_layout *l, int64_t v)
{
	if (v == l->trace_idle)
		return "idle";
	if (v == l->trace_active)
		return "active";
	if (v == l->trace_record || v == l->trace_record_1st)
		return "recording";
	if (v == l->trace_start)
		return "starting a trace";
	if (v == l->trace_end)
		return "ending a trace";
	if (v == l->trace_asm)
		return "assembling";
	if (v == l->trace_err)
		return "aborting a trace";
	return NULL;
}

/* The compiler of VM g: on or off, its state, and the traces it holds
 * (the non-empty slots of J->trace, 1 up: lj_trace.c traceref). */
#define LJ_SIZETRACE_MAX 65536u	/* lj_def.h LJ_MAX_TRACE, with room */
static void decode_jit(struct lc_pass *pass, uint64_t g, struct lc_vm *vm)
{
	const struct lc_lj_layout *l = pass->l;
	struct lc_memory *m = pass->m;
	uint64_t J, v, tr, size;

	vm->jit_on = -1;
	vm->ntraces = -1;
	if (!LC_LJ_HAS(l->GG.g) || !LC_LJ_HAS(l->GG.J))
		return;
	J = g - (uint64_t)l->GG.g.off + (uint64_t)l->GG.J.off;
	if (lc_lj_field_u(m, J, l->J.flags, &v) == 0)
		vm->jit_on = (v & LC_LJ_JIT_F_ON) != 0;
	if (lc_lj_field_u(m, J, l->J.state, &v) == 0)
		vm->jit_state = jit_state_name(l, (int64_t)v);
	if (lc_lj_field_u(m, J, l->J.trace, &tr) == 0 &&
	    lc_lj_field_u(m, J, l->J.sizetrace, &size) == 0 &&
	    size <= LJ_SIZETRACE_MAX && (tr || !size)) {
		uint64_t *refs = size ? calloc(size, 8) : NULL;
		int64_t n = 0;

		if (size && !refs)
			return;
		if (size && lc_read(m, tr, refs, size * 8) < 0) {
			free(refs);
			return;
		}
		for (uint64_t i = 1; i < size; i++)
			n += (refs[i] & LC_LJ_GCVMASK) != 0;
		free(refs);
		vm->ntraces = n;
	}
}

static void decode_thread(struct lc_pass *pass, const struct ljstate *s,
			  struct lc_luathread *lt)
{
	lt->addr = s->L;
	lt->g = s->g;
	lt->is_main = s->is_main;
	lt->raw_status = s->status;
	lt->stack = s->stack;
	lt->top = s->top;
	lt->stack_last = s->maxstack;
	lt->stacksize = (long)((s->maxstack - s->stack) / 8);
	lt->topslot = (long)((s->top - s->stack) / 8);
	lt->ci_depth = -1;
	lt->openupval = -1;
	/* Where an error in it unwinds to: its innermost C frame (LuaJIT's
	 * counterpart of PUC's errorJmp; lj_err.c unwinds C frame by C
	 * frame). */
	lt->errorjmp = s->cframe & LC_LJ_CFRAME_RAWMASK;
	/* lj_api.c lua_isyieldable: its C frame was entered by a resume
	 * (not by a C call, nor the main thread's). */
	lt->nny = lt->errorjmp && !(s->cframe & LC_LJ_CFRAME_RESUME);
	/* lib_base.c coroutine.status, and the report's own words: a main
	 * thread with no frames is idle; one died of an error, "error". */
	/* (cur_L names the thread the VM ran last: one of an idle VM, or
	 * one the VM left for C, has no frames but those its C frame
	 * shows.) */
	if (s->L == s->cur_L && (has_frames(s) || s->run_base) &&
	    (s->status == 0 || s->status == LJ_STATUS_ERRERR))
		lt->status = "running";
	else if (s->status == LJ_STATUS_YIELD)
		lt->status = "suspended";
	else if (s->status != 0)
		lt->status = "error";
	else if (has_frames(s))
		lt->status = "normal";
	else if (s->is_main)
		lt->status = "idle";
	else if (s->top == s->base)
		lt->status = "dead";
	else
		lt->status = "suspended";
	(void)pass;
}

static void lj_decode_state(struct lc_pass *pass, const struct lc_vstate *st,
			    struct lc_luathread *ret)
{
	decode_thread(pass, ljs(st), ret);
}

static struct lc_error *lj_decode_vm(struct lc_pass *pass, uint64_t g,
				     bool scanned, const uint64_t *cands,
				     size_t ncands, struct lc_vm *vm)
{
	const struct lc_lj_layout *l = pass->l;
	struct lc_memory *m = pass->m;
	uint64_t *th = NULL, v, vmth = 0;
	size_t nth = 0;
	bool partial = false;
	struct lc_error *err;

	(void)scanned;
	(void)cands;
	(void)ncands;
	vm->g = g;
	vm->gcpause = vm->gcstepmul = vm->gcstepsize = -1;
	vm->genminormul = vm->genmajormul = -1;
	vm->gcstate = -1;
	if (!vm_ok(pass, g)) {
		vm->partial = true;
		vm->note = strdup("its global_State does not read as a LuaJIT VM's");
		return NULL;
	}
	if (lc_lj_field_u(m, g, l->G.mainthref, &v) == 0)
		vm->mainthread = v & LC_LJ_GCVMASK;
	if (lc_lj_field_u(m, g, l->G.gc_total, &v) == 0)
		vm->totalbytes = vm->memory = (int64_t)v;
	if (lc_lj_field_u(m, g, l->G.gc_state, &v) == 0) {
		vm->gcstate = (int)v;
		if (v < LC_ARRAY_SIZE(gc_states))
			vm->gcstate_name = gc_states[v];
	}
	if (LC_LJ_HAS(l->G.registrytv) &&
	    lc_read_u64(m, g + (uint64_t)l->G.registrytv.off, &v) == 0)
		vm->registry = v & LC_LJ_GCVMASK;
	vm->gckind = "incremental";
	if (lc_lj_field_u(m, g, l->G.vmstate, &v) == 0) {
		vm->vmstate = vmstate_name(l, (int32_t)(uint32_t)v);
		if (!vm->vmstate)
			vm->vmstate = "unknown";
		if ((int32_t)(uint32_t)v >= 0)
			vm->vmstate_trace = (int32_t)(uint32_t)v;
	} else {
		vm->vmstate = "unread";
	}
	decode_jit(pass, g, vm);
	/* cur_L: a thread of this VM (lj_obj.h G(L) == g); report.c holds
	 * it against the thread the stacks show running. */
	if (lc_lj_field_u(m, g, l->G.cur_L, &v) == 0) {
		struct ljstate cs;

		vm->cur_L = v & LC_LJ_GCVMASK;
		if (!vm->cur_L)
			vm->cur_L_note = strdup("g->cur_L is NULL");
		else if (!read_state(pass, vm->cur_L, &cs) || cs.g != g)
			asprintf(&vm->cur_L_note,
				 "g->cur_L 0x%" PRIx64 " is not a thread of this VM",
				 vm->cur_L);
	}
	err = lc_lj_threads(m, l, g, LJ_THREADS_MAX, &th, &nth, &partial);
	if (err)
		return err;
	vm->threads = calloc(nth ? nth : 1, sizeof(*vm->threads));
	if (!vm->threads) {
		free(th);
		return &lc_error_nomem;
	}
	/* Upstream's VM thread (2025: g->vmthref), on which finalizers
	 * run: the VM's own, listed only while it runs something.
	 * lj_state.c cpluaopen makes it with the VM: one that is no
	 * thread of this VM is damage. */
	if (LC_LJ_HAS(l->G.vmthref)) {
		struct ljstate vs;

		if (lc_lj_field_u(m, g, l->G.vmthref, &v) == 0)
			vmth = v & LC_LJ_GCVMASK;
		if (!vmth || !read_state(pass, vmth, &vs) || vs.g != g) {
			vm->partial = true;
			asprintf(&vm->note, "g->vmthref 0x%" PRIx64 " is not a thread of this VM",
				 vmth);
			vmth = 0;
		}
	}
	for (size_t i = 0; i < nth; i++) {
		struct ljstate s;

		if (!read_state(pass, th[i], &s)) {
			partial = true;
			continue;
		}
		if (th[i] == vmth && !has_frames(&s))
			continue;
		decode_thread(pass, &s, &vm->threads[vm->nthreads++]);
	}
	free(th);
	if (partial) {
		vm->partial = true;
		if (!vm->note)
			vm->note = strdup("its list of GC objects could not be read to its end: threads may be missing");
	}
	return NULL;
}

static void lj_vm_names(struct lc_pass *pass, uint64_t g, const char *global,
			char **name, char **alloc)
{
	uint64_t f = 0;
	const char *sym;

	(void)global;
	*name = NULL;
	*alloc = NULL;
	if (lc_lj_field_u(pass->m, g, pass->l->G.allocf, &f) == 0 && f &&
	    (sym = lc_program_symbol(pass->in->prog, f)))
		*alloc = strdup(sym);
}

static struct lc_error *lj_object(struct lc_pass *pass,
				  enum lc_object_kind kind, uint64_t addr,
				  size_t max, struct lc_object **ret)
{
	return lc_lj_object(pass->in->prog, pass->l, kind, addr, max, ret);
}

static uint64_t lj_resumes(struct lc_pass *pass, const struct lc_vstate *st)
{
	return lc_lj_resumed(pass->m, pass->l, st->addr);
}

static size_t lj_hot(struct lc_pass *pass, const uint64_t *states,
		     size_t nstates, const struct lc_frame *frames,
		     size_t nframes, uint64_t (*r)[2], size_t room)
{
	const struct lc_lj_layout *l = pass->l;
	size_t n = 0;

	(void)frames;
	(void)nframes;
#define ADD(a, len) do { if (n < room) { r[n][0] = (a); r[n][1] = (len); n++; } } while (0)
	for (size_t i = 0; i < nstates && i < 8; i++)
		ADD(states[i], l->sz_lstate ? l->sz_lstate : 128);
	/* Each state's VM: its vmstate, cur_L and jit_base say where the
	 * frames start, and change as it runs (read after the stop, they
	 * may be another moment's). */
	for (size_t i = 0; i < nstates && i < 8; i++) {
		struct ljstate s;
		bool seen = false;

		if (!read_state(pass, states[i], &s))
			continue;
		for (size_t k = 0; k < n; k++)
			seen |= r[k][0] == s.g;
		if (!seen)
			ADD(s.g, l->sz_gstate ? l->sz_gstate : 1024);
	}
	for (size_t i = 0; i < nstates && i < 8; i++) {
		struct ljstate s;

		if (read_state(pass, states[i], &s) && s.top > s.stack)
			ADD(s.stack, s.top - s.stack + 8 * 8);
	}
#undef ADD
	return n;
}

static struct lc_error *lj_heap_walk(struct lc_pass *pass, uint64_t vm,
				     unsigned flags, lc_hobj_fn *fn, void *arg,
				     struct lc_hvm *ret)
{
	return lc_lj_heap_walk(pass->in->prog, pass->l, vm, 50000000, flags,
			       fn, arg, ret);
}

/* A thread's stack slots, named as its frames' locals name them: the
 * first local of the innermost frame that holds the same object. */
struct lj_named {
	const struct lc_frame *frames;
	size_t nframes;
	lc_href_fn *fn;
	void *arg;
	char where[300];
};

static int lj_name_slot(void *arg, const struct lc_href *r)
{
	struct lj_named *n = arg;
	struct lc_href h = *r;
	const char *src;

	if (r->edge != LC_HE_LOCAL)
		return n->fn(n->arg, r);
	h.where = NULL;
	for (size_t f = 0; f < n->nframes && !h.name; f++) {
		const struct lc_frame *fr = &n->frames[f];

		for (size_t v = 0; v < fr->nvars; v++) {
			if (strcmp(fr->vars[v].kind, "local") != 0 ||
			    fr->vars[v].value.addr != r->to)
				continue;
			/* the chunk named whole, as the other edges name it
			 * (short_src cuts a long path to "..." and a tail) */
			src = !fr->source ? (fr->short_src ? fr->short_src : "?") :
			      fr->source[0] == '@' || fr->source[0] == '=' ?
			      fr->source + 1 : "[string]";
			h.name = fr->vars[v].name;
			if (fr->linedefined > 0)
				snprintf(n->where, sizeof(n->where), "%s:%d",
					 src, fr->linedefined);
			else
				snprintf(n->where, sizeof(n->where), "main chunk of %s",
					 src);
			h.where = n->where;
			break;
		}
	}
	if (!h.where)
		h.where = "its stack";
	return n->fn(n->arg, &h);
}

static int lj_heap_refs(struct lc_pass *pass, uint64_t vm,
			const struct lc_hobj *o, lc_href_fn *fn, void *arg)
{
	struct lc_vstate vs;
	struct lc_luathread lt;
	struct lj_named n = { .fn = fn, .arg = arg };
	int rc;

	if (!o || o->kind != LC_HK_THREAD || !lj_state(pass, o->addr, &vs))
		return lc_lj_heap_refs(pass->in->prog, pass->l, vm, o, fn, arg);
	memset(&lt, 0, sizeof(lt));
	lj_state_frames(pass, &vs, 200, true, false, 0, &lt);
	n.frames = lt.frames;
	n.nframes = lt.nframes;
	rc = lc_lj_heap_refs(pass->in->prog, pass->l, vm, o, lj_name_slot, &n);
	for (size_t i = 0; i < lt.nframes; i++)
		lc_frame_free(&lt.frames[i]);
	free(lt.frames);
	lc_luathread_clear(&lt);
	return rc;
}

static char *lj_heap_class(struct lc_pass *pass, uint64_t vm,
			   enum lc_hkind kind, uint64_t klass)
{
	return lc_lj_heap_class(pass->in->prog, pass->l, vm, kind, klass);
}

static char *lj_heap_string(struct lc_pass *pass, const struct lc_hobj *o,
			    size_t max, size_t *len)
{
	return lc_lj_heap_string(pass->in->prog, pass->l, o, max, len);
}

const struct lc_vm_ops lc_luajit_ops = {
	.name = "LuaJIT",
	.open = lj_open,
	.close = lj_close,
	.begin = lj_begin,
	.end = lj_end,
	.state_type = "lua_State",
	.state_param = "L",
	.run_func = NULL,
	.run_vars = NULL,
	.foreign = lj_foreign,
	.state = lj_state,
	.is_state = lj_is_state,
	.walk = lj_walk,
	.walk_free = lj_walk_free,
	.starts_run = lj_starts_run,
	.run_marks = NULL,
	.continued = lj_continued,
	.frame = lj_frame,
	.c_only_runs = true,
	.roles = lj_roles,
	.frame_roles = lj_frame_roles,
	.at_frame = lj_at_frame,
	.own_frame = lj_own_frame,
	.activity = lc_activity_by_roles,
	.vm_label = lj_vm_label,
	.state_frames = lj_state_frames,
	.resumes = lj_resumes,
	.scan = lj_scan,
	.decode_vm = lj_decode_vm,
	.vm_names = lj_vm_names,
	.decode_state = lj_decode_state,
	.object = lj_object,
	.heap_walk = lj_heap_walk,
	.heap_refs = lj_heap_refs,
	.heap_class = lj_heap_class,
	.heap_string = lj_heap_string,
	.hot = lj_hot,
};
