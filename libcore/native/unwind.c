/* Native unwinding of core threads with libdwfl (report-then-use: frames
 * are collected first and only then symbolized and searched for
 * lua_States). */
#include <config.h>

#include <dwarf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "native/unwind.h"

#define LC_FRAME_SCAN_MAX	4096	/* stack bytes searched per frame */

struct collect {
	struct lc_native_frame *frames;
	size_t n, cap, max;
	bool truncated;
	bool nomem;
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct collect *c = arg;
	struct lc_native_frame *f;
	Dwarf_Addr pc;
	bool activation;

	if (c->n >= c->max) {
		c->truncated = true;
		return DWARF_CB_ABORT;
	}
	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		void *p = realloc(c->frames, ncap * sizeof(*c->frames));

		if (!p) {
			c->nomem = true;
			return DWARF_CB_ABORT;
		}
		c->frames = p;
		c->cap = ncap;
	}
	f = &c->frames[c->n++];
	memset(f, 0, sizeof(*f));
	f->pc = pc;
	f->activation = activation;
	for (unsigned r = 0; r < LC_NREGS; r++) {
		Dwarf_Word v;

		if (dwfl_frame_reg(state, r, &v) == 0) {
			f->regs[r] = v;
			f->regmask |= 1u << r;
		}
	}
	return DWARF_CB_OK;
}

/* ---- a callback program's threads for libdwfl: one thread (cb_tid),
 * its registers those of the innermost frame the debugger gave ---- */

static const struct lc_program_thread *cb_thread(struct lc_program *t, int tid)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid && t->threads[i].nframes)
			return &t->threads[i];
	return NULL;
}

static pid_t cb_next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct lc_program *t = dwfl_arg;

	(void)dwfl;
	if (*thread_argp || !cb_thread(t, t->cb_tid))
		return 0;
	*thread_argp = t;
	return t->cb_tid;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg,
			  void **thread_argp)
{
	struct lc_program *t = dwfl_arg;

	(void)dwfl;
	if (tid != t->cb_tid || !cb_thread(t, tid))
		return false;
	*thread_argp = t;
	return true;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			   void *arg)
{
	struct lc_program *t = arg;

	(void)dwfl;
	return lc_memory_read(t->mem, addr, result, sizeof(*result), NULL) == 0;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct lc_program *t = thread_arg;
	const struct lc_program_thread *th = cb_thread(t, t->cb_tid);
	const struct lc_frame_regs *f;
	Dwarf_Word regs[LC_NREGS];

	if (!th)
		return false;
	if (th->from_sp)
		return lc_program_start_from(thread, th->from_pc, th->from_sp);
	f = &th->frames[0];
	for (unsigned r = 0; r < LC_NREGS; r++)
		regs[r] = (f->regmask & (1u << r)) ? f->regs[r] : 0;
	regs[LC_REG_PC] = f->pc;
	dwfl_thread_state_register_pc(thread, regs[LC_REG_PC]);
	return dwfl_thread_state_registers(thread, 0, LC_NREGS, regs);
}

static const Dwfl_Thread_Callbacks cb_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

/* Registers a call preserves (x86_64 SysV): rbx, rbp, rsp, r12-r15 and
 * the return address.  libdwfl knows no others in a caller's frame. */
#define LC_CALLEE_SAVED	((1u << 3) | (1u << 6) | (1u << 7) | (1u << 12) | \
			 (1u << 13) | (1u << 14) | (1u << 15) | (1u << 16))

/* Tell the program where thread tid's unwinding starts (0, 0: from its
 * registers). */
static void set_from(struct lc_program *t, int tid, uint64_t pc, uint64_t sp)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid) {
			t->threads[i].from_pc = pc;
			t->threads[i].from_sp = sp;
		}
	if (t->unwind_from)
		t->unwind_from(t->unwind_from_arg, tid, pc, sp);
}

/* c's innermost frame runs code no unwind information (or the wrong
 * one) covers, as the probe's foreign says, with where its caller
 * starts: unwind again from there into c, the frame in front.
 * libdwfl's result, or -1 when the probe does not know the frame (c is
 * left as it was). */
static int unwind_foreign(struct lc_program *t,
			  const struct lc_state_probe *probe, int tid,
			  size_t max, struct collect *c, size_t k)
{
	struct collect c2 = { .max = max > k + 1 ? max - k - 1 : 1 };
	uint64_t pc, sp;
	char *name = NULL;
	void *p;
	int r;

	if (k >= c->n ||
	    !probe->foreign(probe->arg, &c->frames[k], &pc, &sp, &name))
		return -1;
	set_from(t, tid, pc, sp);
	r = dwfl_getthread_frames(t->dwfl, tid, frame_cb, &c2);
	set_from(t, tid, 0, 0);
	if (c2.nomem || !c2.n ||
	    !(p = realloc(c2.frames, (c2.n + k + 1) * sizeof(*c2.frames)))) {
		c->nomem |= c2.nomem;
		free(c2.frames);
		free(name);
		return r ? r : -1;
	}
	/* Frames 0..k as they were (k the foreign one), then the new. */
	c2.frames = p;
	memmove(c2.frames + k + 1, c2.frames, c2.n * sizeof(*c2.frames));
	memcpy(c2.frames, c->frames, (k + 1) * sizeof(*c2.frames));
	c2.frames[k].function = name;
	/* The caller's frame: its registers other than pc and sp are the
	 * foreign frame's, which it may have changed. */
	c2.frames[k + 1].activation = false;
	c2.frames[k + 1].regmask &= LC_CALLEE_SAVED;
	free(c->frames);
	c->frames = c2.frames;
	c->n = c2.n + k + 1;
	c->cap = c->n;
	c->truncated = c2.truncated;
	return r;
}

/* The frames a debugger gave for thread tid of a callback program. */
static int given_frames(struct lc_program *t, int tid, struct collect *c)
{
	const struct lc_program_thread *th = NULL;

	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid) {
			th = &t->threads[i];
			break;
		}
	if (!th || !th->nframes)
		return 0;
	c->cap = th->nframes < c->max ? th->nframes : c->max;
	c->truncated = th->nframes > c->max;
	c->frames = calloc(c->cap ? c->cap : 1, sizeof(*c->frames));
	if (!c->frames)
		return -1;
	for (size_t i = 0; i < c->cap; i++) {
		const struct lc_frame_regs *g = &th->frames[i];
		struct lc_native_frame *f = &c->frames[c->n++];

		f->pc = g->pc;
		f->activation = g->activation;
		f->regmask = g->regmask & ((1u << LC_NREGS) - 1);
		if (!g->activation)
			f->regmask &= LC_CALLEE_SAVED;
		for (unsigned r = 0; r < LC_NREGS; r++)
			if (f->regmask & (1u << r))
				f->regs[r] = g->regs[r];
	}
	return 0;
}

/* ---- a small DWARF expression evaluator, enough for variable
 * locations at -O0 and -O2 (registers, frame base, CFA, derefs). */

struct eval_env {
	struct lc_memory *mem;
	const struct lc_native_frame *f;
	uint64_t cfa;		/* 0 if unknown */
	Dwarf_Die *func;	/* for DW_AT_frame_base */
	Dwarf_Addr pc;		/* module-relative pc */
	Dwarf_Addr bias;
	int depth;
};

static int eval_expr(struct eval_env *env, const Dwarf_Op *ops, size_t nops,
		     bool address, uint64_t *ret);

static bool reg_of(const struct eval_env *env, unsigned r, uint64_t *v)
{
	if (r >= LC_NREGS || !(env->f->regmask & (1u << r)))
		return false;
	*v = env->f->regs[r];
	return true;
}

static bool frame_base(struct eval_env *env, uint64_t *v)
{
	Dwarf_Attribute attr;
	Dwarf_Op *ops;
	size_t nops;

	if (!env->func || env->depth > 2 ||
	    !dwarf_attr_integrate(env->func, DW_AT_frame_base, &attr) ||
	    dwarf_getlocation_addr(&attr, env->pc, &ops, &nops, 1) != 1)
		return false;
	env->depth++;
	/* DW_AT_frame_base computes an address, not a location to load. */
	int r = eval_expr(env, ops, nops, true, v);
	env->depth--;
	return r == 0;
}

/* Returns 0 and the variable's value in *ret (with "address", the
 * computed address itself). */
static int eval_expr(struct eval_env *env, const Dwarf_Op *ops, size_t nops,
		     bool address, uint64_t *ret)
{
	uint64_t stack[16];
	size_t sp = 0;
	bool is_value = false;

	if (nops == 0 || nops > 64)
		return -1;
	for (size_t i = 0; i < nops; i++) {
		uint8_t op = ops[i].atom;
		uint64_t v;

#define PUSH(x) do { if (sp >= 16) return -1; stack[sp++] = (x); } while (0)
#define NEED(k) do { if (sp < (k)) return -1; } while (0)
		if (op >= DW_OP_reg0 && op <= DW_OP_reg31) {
			if (nops != 1 && !(i + 1 < nops &&
					   ops[i + 1].atom == DW_OP_piece))
				return -1;
			if (!reg_of(env, op - DW_OP_reg0, &v))
				return -1;
			*ret = v;
			return 0;
		}
		if (op >= DW_OP_breg0 && op <= DW_OP_breg31) {
			if (!reg_of(env, op - DW_OP_breg0, &v))
				return -1;
			PUSH(v + (uint64_t)(int64_t)ops[i].number);
			continue;
		}
		if (op >= DW_OP_lit0 && op <= DW_OP_lit31) {
			PUSH((uint64_t)(op - DW_OP_lit0));
			continue;
		}
		switch (op) {
		case DW_OP_regx:
			if (!reg_of(env, (unsigned)ops[i].number, &v))
				return -1;
			*ret = v;
			return 0;
		case DW_OP_bregx:
			if (!reg_of(env, (unsigned)ops[i].number, &v))
				return -1;
			PUSH(v + (uint64_t)(int64_t)ops[i].number2);
			break;
		case DW_OP_fbreg:
			if (!frame_base(env, &v))
				return -1;
			PUSH(v + (uint64_t)(int64_t)ops[i].number);
			break;
		case DW_OP_call_frame_cfa:
			if (!env->cfa)
				return -1;
			PUSH(env->cfa);
			break;
		case DW_OP_addr:
			PUSH(ops[i].number + env->bias);
			break;
		case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u:
		case DW_OP_const8u: case DW_OP_constu:
		case DW_OP_const1s: case DW_OP_const2s: case DW_OP_const4s:
		case DW_OP_const8s: case DW_OP_consts:
			PUSH(ops[i].number);
			break;
		case DW_OP_plus_uconst:
			NEED(1);
			stack[sp - 1] += ops[i].number;
			break;
		case DW_OP_plus:
			NEED(2);
			stack[sp - 2] += stack[sp - 1];
			sp--;
			break;
		case DW_OP_minus:
			NEED(2);
			stack[sp - 2] -= stack[sp - 1];
			sp--;
			break;
		case DW_OP_deref:
			NEED(1);
			if (lc_read_u64(env->mem, stack[sp - 1], &v) < 0)
				return -1;
			stack[sp - 1] = v;
			break;
		case DW_OP_stack_value:
			is_value = true;
			i = nops;	/* must be last */
			break;
		case DW_OP_piece:
			i = nops;	/* first piece only */
			break;
		default:
			return -1;	/* entry values and the rest */
		}
#undef PUSH
#undef NEED
	}
	if (sp == 0)
		return -1;
	if (is_value || address) {
		*ret = stack[sp - 1];
		return 0;
	}
	return lc_read_u64(env->mem, stack[sp - 1], ret);
}

/* Does this DIE's type point to the struct named type_name? */
static bool is_state_ptr(Dwarf_Die *var, const char *type_name)
{
	Dwarf_Attribute attr;
	Dwarf_Die t;
	const char *name;

	if (!dwarf_attr_integrate(var, DW_AT_type, &attr) ||
	    !dwarf_formref_die(&attr, &t))
		return false;
	for (int i = 0; i < 8 && (dwarf_tag(&t) == DW_TAG_typedef ||
				  dwarf_tag(&t) == DW_TAG_const_type ||
				  dwarf_tag(&t) == DW_TAG_volatile_type); i++)
		if (!dwarf_attr_integrate(&t, DW_AT_type, &attr) ||
		    !dwarf_formref_die(&attr, &t))
			return false;
	if (dwarf_tag(&t) != DW_TAG_pointer_type ||
	    !dwarf_attr_integrate(&t, DW_AT_type, &attr) ||
	    !dwarf_formref_die(&attr, &t))
		return false;
	name = dwarf_diename(&t);
	return name && strcmp(name, type_name) == 0;
}

static void add_cand(struct lc_native_frame *f, uint64_t v)
{
	uint64_t *p;

	for (size_t i = 0; i < f->ncands; i++)
		if (f->cands[i] == v)
			return;
	p = realloc(f->cands, (f->ncands + 1) * sizeof(*p));
	if (!p)
		return;
	f->cands = p;
	f->cands[f->ncands++] = v;
}

/* What a pc's DWARF says, kept per unwinder: symbolizing and looking up
 * variables walk DIE trees, and a sampler meets the same pcs again and
 * again.  Open addressing on the module-relative pc. */
#define PC_CACHE_SIZE	8192	/* entries; a full cache is not grown */

struct var_loc {
	Dwarf_Op *ops;		/* owned by libdw, valid while the module is */
	size_t nops;
	bool is_L;		/* the formal parameter of the probe's name */
};

struct pc_entry {
	uint64_t pc;		/* adjusted pc; 0: free */
	/* symbolize() */
	Dwfl_Module *mod;
	char *function, *linkage, *module, *file;
	uint64_t func_start;
	int line;
	struct lc_inline *inl;
	size_t ninl;
	/* dwarf_states() */
	bool vars_done;
	struct var_loc *vars;
	size_t nvars;
	Dwarf_Die func;		/* for DW_AT_frame_base */
	bool have_func;
	Dwarf_Addr bias;
	/* named_vars(): the probe's var_names of its var_func */
	bool named_done;
	struct var_loc named[LC_FRAME_VARS];	/* ops NULL: not located */
	Dwarf_Die nfunc;	/* the subprogram holding var_func's frame */
	bool have_nfunc;
};

struct pc_cache {
	struct pc_entry e[PC_CACHE_SIZE];
	size_t n;
};

struct lc_unwinder {
	struct lc_program *prog;
	unsigned generation;	/* of the program when the cache was made */
	const char *type_name;	/* the probe the cache's variables are for */
	const char *param_name;
	const char *var_func;
	const char *const *var_names;
	struct pc_cache *pc_cache;
};

static struct pc_entry *pc_lookup(struct lc_unwinder *u, uint64_t pc, bool add)
{
	struct pc_cache *c = u->pc_cache;
	size_t i;

	if (!c) {
		if (!add)
			return NULL;
		c = u->pc_cache = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
	}
	for (size_t k = 0; k < PC_CACHE_SIZE; k++) {
		i = (size_t)((pc * 0x9e3779b97f4a7c15ull) >> 51) + k;
		i %= PC_CACHE_SIZE;
		if (c->e[i].pc == pc)
			return &c->e[i];
		if (c->e[i].pc == 0) {
			if (!add || c->n >= PC_CACHE_SIZE / 2)
				return NULL;
			c->e[i].pc = pc;
			c->n++;
			return &c->e[i];
		}
	}
	return NULL;
}

static void cache_free(struct lc_unwinder *u)
{
	struct pc_cache *c = u->pc_cache;

	if (!c)
		return;
	for (size_t i = 0; i < PC_CACHE_SIZE; i++) {
		struct pc_entry *e = &c->e[i];

		if (!e->pc)
			continue;
		free(e->function);
		free(e->linkage);
		free(e->module);
		free(e->file);
		for (size_t j = 0; j < e->ninl; j++) {
			free(e->inl[j].function);
			free(e->inl[j].file);
		}
		free(e->inl);
		free(e->vars);
	}
	free(c);
	u->pc_cache = NULL;
}

/* The variables in scope at pc_adj that point to the probe's type: their
 * locations. */
static void find_vars(struct pc_entry *e, Dwfl_Module *mod, Dwarf_Addr pc_adj,
		      const struct lc_state_probe *probe)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, pc_adj, &bias);
	Dwarf_Die *scopes = NULL;
	int n;

	e->vars_done = true;
	if (!cu)
		return;
	e->bias = bias;
	n = dwarf_getscopes(cu, pc_adj - bias, &scopes);
	if (n <= 0)
		return;
	/* The outermost function scope holds DW_AT_frame_base. */
	for (int i = 0; i < n; i++)
		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram) {
			e->func = scopes[i];
			e->have_func = true;
			break;
		}
	for (int i = 0; i < n && i < 8; i++) {
		Dwarf_Die child;
		int count = 0;

		if (dwarf_child(&scopes[i], &child) != 0)
			continue;
		do {
			int tag = dwarf_tag(&child);
			Dwarf_Attribute attr;
			Dwarf_Op *ops;
			size_t nops;
			const char *name;
			struct var_loc *p;

			if (tag != DW_TAG_formal_parameter &&
			    tag != DW_TAG_variable)
				continue;
			if (!is_state_ptr(&child, probe->type_name) ||
			    !dwarf_attr_integrate(&child, DW_AT_location, &attr) ||
			    dwarf_getlocation_addr(&attr, pc_adj - bias, &ops,
						   &nops, 1) != 1)
				continue;
			p = realloc(e->vars, (e->nvars + 1) * sizeof(*p));
			if (!p)
				break;
			e->vars = p;
			name = dwarf_diename(&child);
			p[e->nvars].ops = ops;
			p[e->nvars].nops = nops;
			p[e->nvars].is_L = name && probe->param_name &&
					   strcmp(name, probe->param_name) == 0 &&
					   tag == DW_TAG_formal_parameter;
			e->nvars++;
		} while (dwarf_siblingof(&child, &child) == 0 && ++count < 4096);
	}
	free(scopes);
}

/* Look in the frame's DWARF scopes for variables pointing to the probe's
 * type. */
static void dwarf_states(struct lc_unwinder *u,
			 const struct lc_state_probe *probe,
			 struct lc_native_frame *f, uint64_t cfa,
			 Dwfl_Module *mod, Dwarf_Addr pc_adj)
{
	struct pc_entry local = { 0 }, *e = pc_lookup(u, pc_adj, true);

	if (!e)
		e = &local;
	if (!e->vars_done)
		find_vars(e, mod, pc_adj, probe);
	for (size_t i = 0; i < e->nvars; i++) {
		uint64_t v;
		struct eval_env env = {
			.mem = u->prog->mem, .f = f, .cfa = cfa,
			.func = e->have_func ? &e->func : NULL,
			.pc = pc_adj - e->bias, .bias = e->bias,
		};

		if (eval_expr(&env, e->vars[i].ops, e->vars[i].nops, false,
			      &v) < 0)
			continue;
		if (e->vars[i].is_L && !f->L_raw)
			f->L_raw = v;
		if (!probe->check(probe->arg, v))
			continue;
		if (e->vars[i].is_L && !f->L)
			f->L = v;
		add_cand(f, v);
	}
	if (e == &local)
		free(local.vars);
}

/* The probe's var_names as var_func sees them at pc_adj: scopes from the
 * innermost outward, across inlined calls (their concrete callers come
 * from dwarf_getscopes_die, as in expand_inlines), up to the scope of
 * var_func itself.  A name found in a function inlined into var_func is
 * that function's, not var_func's: forgotten when its scope ends. */
static void find_named(struct pc_entry *e, Dwfl_Module *mod, Dwarf_Addr pc_adj,
		       const struct lc_state_probe *probe)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, pc_adj, &bias);
	Dwarf_Die *scopes = NULL;
	Dwarf_Die found[LC_FRAME_VARS];
	bool have[LC_FRAME_VARS] = { false };
	bool in_func = false;
	size_t nnames = 0;
	int n, i = 0;

	e->named_done = true;
	if (!cu)
		return;
	e->bias = bias;
	while (nnames < LC_FRAME_VARS && probe->var_names[nnames])
		nnames++;
	n = dwarf_getscopes(cu, pc_adj - bias, &scopes);
	for (int guard = 0; i < n && guard < 256; guard++, i++) {
		Dwarf_Die *sc = &scopes[i];
		int tag = dwarf_tag(sc);
		bool is_func = tag == DW_TAG_subprogram ||
			       tag == DW_TAG_inlined_subroutine;
		const char *fname = is_func ? dwarf_diename(sc) : NULL;
		Dwarf_Die child;
		int count = 0;

		if (in_func) {
			/* var_func found; now its concrete subprogram, for
			 * DW_AT_frame_base. */
			if (tag == DW_TAG_subprogram) {
				e->nfunc = *sc;
				e->have_nfunc = true;
				break;
			}
		} else if (dwarf_child(sc, &child) == 0) {
			do {
				int ctag = dwarf_tag(&child);
				const char *name;

				if (ctag != DW_TAG_variable &&
				    ctag != DW_TAG_formal_parameter)
					continue;
				name = dwarf_diename(&child);
				for (size_t k = 0; name && k < nnames; k++)
					if (!have[k] &&
					    strcmp(name, probe->var_names[k]) == 0) {
						found[k] = child;
						have[k] = true;
					}
			} while (dwarf_siblingof(&child, &child) == 0 &&
				 ++count < 4096);
		}
		if (!in_func && is_func) {
			if (fname && strcmp(fname, probe->var_func) == 0) {
				in_func = true;
				if (tag == DW_TAG_subprogram) {
					e->nfunc = *sc;
					e->have_nfunc = true;
					break;
				}
			} else {
				memset(have, 0, sizeof(have));
				if (tag == DW_TAG_subprogram)
					break;	/* var_func is not in this frame */
			}
		}
		if (tag == DW_TAG_inlined_subroutine) {
			Dwarf_Die *outer = NULL;
			int m = dwarf_getscopes_die(sc, &outer);

			free(scopes);
			scopes = outer;
			n = m;
			i = 0;	/* outer[0] is the instance itself */
		}
	}
	free(scopes);
	if (!in_func)
		return;
	for (size_t k = 0; k < nnames; k++) {
		Dwarf_Attribute attr;
		Dwarf_Op *ops;
		size_t nops;

		if (have[k] &&
		    dwarf_attr_integrate(&found[k], DW_AT_location, &attr) &&
		    dwarf_getlocation_addr(&attr, pc_adj - bias, &ops, &nops,
					   1) == 1) {
			e->named[k].ops = ops;
			e->named[k].nops = nops;
		}
	}
}

/* The values of the probe's var_names in this frame (varmask). */
static void named_vars(struct lc_unwinder *u,
		       const struct lc_state_probe *probe,
		       struct lc_native_frame *f, uint64_t cfa,
		       Dwfl_Module *mod, Dwarf_Addr pc_adj)
{
	struct pc_entry local = { 0 }, *e = pc_lookup(u, pc_adj, true);

	if (!e)
		e = &local;
	if (!e->named_done)
		find_named(e, mod, pc_adj, probe);
	for (size_t k = 0; k < LC_FRAME_VARS; k++) {
		struct eval_env env = {
			.mem = u->prog->mem, .f = f, .cfa = cfa,
			.func = e->have_nfunc ? &e->nfunc : NULL,
			.pc = pc_adj - e->bias, .bias = e->bias,
		};

		if (e->named[k].ops &&
		    eval_expr(&env, e->named[k].ops, e->named[k].nops, false,
			      &f->vars[k]) == 0)
			f->varmask |= 1u << k;
	}
}

/* Registers and stack words of the frame that the probe validates. */
static void scan_states(struct lc_unwinder *u,
			const struct lc_state_probe *probe,
			struct lc_native_frame *f, uint64_t lo, uint64_t hi)
{
	uint64_t words[LC_FRAME_SCAN_MAX / 8];

	for (unsigned r = 0; r < LC_NREGS; r++)
		if ((f->regmask & (1u << r)) && r != LC_REG_SP && r != LC_REG_PC &&
		    probe->check(probe->arg, f->regs[r]))
			add_cand(f, f->regs[r]);
	if (!lo || hi <= lo)
		return;
	if (hi - lo > LC_FRAME_SCAN_MAX)
		hi = lo + LC_FRAME_SCAN_MAX;
	lo &= ~7ull;
	if (lc_read(u->prog->mem, lo, words, hi - lo) < 0)
		return;
	for (size_t i = 0; i < (hi - lo) / 8; i++)
		if (probe->check(probe->arg, words[i]))
			add_cand(f, words[i]);
}

/* File name of DW_AT_call_file of an inlined call. */
static const char *call_file(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word idx;
	Dwarf_Die cu;
	Dwarf_Files *files;
	size_t nfiles;

	if (!dwarf_attr_integrate(die, DW_AT_call_file, &attr) ||
	    dwarf_formudata(&attr, &idx) != 0 ||
	    !dwarf_diecu(die, &cu, NULL, NULL) ||
	    dwarf_getsrcfiles(&cu, &files, &nfiles) != 0 || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static int call_line(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word line;

	if (!dwarf_attr_integrate(die, DW_AT_call_line, &attr) ||
	    dwarf_formudata(&attr, &line) != 0 || line > INT32_MAX)
		return 0;
	return (int)line;
}

/* An inlined function's name as its machine frame would be named: the
 * demangled linkage name of a C++ function ("ns::f(int)"), else the
 * DWARF name. */
static char *inline_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		name = dwarf_formstring(&attr);
	if (!name)
		name = dwarf_diename(die);
	return name ? lc_symbol_display(name, NULL) : strdup("??");
}

/* Calls inlined at pc become frames of their own, as gdb and eu-stack -i
 * show them: the innermost inline gets the line-table position, each
 * outer one the call site of the inline inside it.  dwarf_getscopes stops
 * at an inlined instance (what follows are the abstract definition's
 * scopes), so the concrete callers come from dwarf_getscopes_die. */
static void expand_inlines(Dwfl_Module *mod, struct lc_native_frame *f,
			   Dwarf_Addr pc_adj)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, pc_adj, &bias);
	Dwarf_Die *scopes = NULL;
	Dwarf_Die prev;
	bool have_prev = false;
	int n, i = 0;

	if (!cu)
		return;
	n = dwarf_getscopes(cu, pc_adj - bias, &scopes);
	for (int guard = 0; i < n && guard < 256; guard++, i++) {
		int tag = dwarf_tag(&scopes[i]);
		struct lc_inline *p;

		if (tag == DW_TAG_subprogram) {
			/* The machine frame itself: its line is the call
			 * site of the outermost inline. */
			if (have_prev) {
				free(f->file);
				f->file = lc_strdup_or_null(call_file(&prev));
				f->line = call_line(&prev);
			}
			break;
		}
		if (tag != DW_TAG_inlined_subroutine || f->ninl >= 64)
			continue;
		p = realloc(f->inl, (f->ninl + 1) * sizeof(*p));
		if (!p)
			break;
		f->inl = p;
		p[f->ninl].function = inline_name(&scopes[i]);
		if (!have_prev) {
			p[f->ninl].file = lc_strdup_or_null(f->file);
			p[f->ninl].line = f->line;
		} else {
			p[f->ninl].file = lc_strdup_or_null(call_file(&prev));
			p[f->ninl].line = call_line(&prev);
		}
		f->ninl++;
		prev = scopes[i];
		have_prev = true;
		/* Continue with the scopes that contain this instance. */
		{
			Dwarf_Die *outer = NULL;
			int m = dwarf_getscopes_die(&prev, &outer);

			free(scopes);
			scopes = outer;
			n = m;
			i = 0;	/* outer[0] is the instance itself */
		}
	}
	free(scopes);
}

static void symbolize_dwfl(struct lc_program *p, struct lc_native_frame *f,
			   Dwarf_Addr pc_adj, Dwfl_Module **modp);

static struct lc_inline *inl_dup(const struct lc_inline *inl, size_t n)
{
	struct lc_inline *p = calloc(n ? n : 1, sizeof(*p));

	for (size_t i = 0; p && i < n; i++) {
		p[i].function = lc_strdup_or_null(inl[i].function);
		p[i].file = lc_strdup_or_null(inl[i].file);
		p[i].line = inl[i].line;
	}
	return p;
}

/* symbolize_dwfl, through the unwinder's pc cache. */
static void symbolize(struct lc_unwinder *u, struct lc_native_frame *f,
		      Dwarf_Addr pc_adj, Dwfl_Module **modp)
{
	struct pc_entry *e = pc_lookup(u, pc_adj, true);

	if (e && e->mod) {
		*modp = e->mod;
		f->function = lc_strdup_or_null(e->function);
		f->linkage = lc_strdup_or_null(e->linkage);
		f->module = lc_strdup_or_null(e->module);
		f->file = lc_strdup_or_null(e->file);
		f->func_start = e->func_start;
		f->line = e->line;
		if (e->ninl && (f->inl = inl_dup(e->inl, e->ninl)))
			f->ninl = e->ninl;
		return;
	}
	symbolize_dwfl(u->prog, f, pc_adj, modp);
	if (e && *modp) {
		e->mod = *modp;
		e->function = lc_strdup_or_null(f->function);
		e->linkage = lc_strdup_or_null(f->linkage);
		e->module = lc_strdup_or_null(f->module);
		e->file = lc_strdup_or_null(f->file);
		e->func_start = f->func_start;
		e->line = f->line;
		if (f->ninl && (e->inl = inl_dup(f->inl, f->ninl)))
			e->ninl = f->ninl;
	}
}

/* Where the function holding pc_adj begins when no symbol says: the
 * start of the .eh_frame entry that covers it, which a compiler emits
 * per function (a function split in two, hot and cold, has one per
 * part).  The entries' starts come sorted in .eh_frame_hdr's search
 * table (LSB, "Exception Frame Header"): version 1, starts and entries
 * as 4-byte offsets from the header's own address.  0 when the module
 * has no such table or pc_adj lies before its first entry.  Only the
 * module's own file is read: no search for debug info starts here. */
static uint64_t cfi_start(Dwfl_Module *mod, Dwarf_Addr pc_adj)
{
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d = NULL;
	const uint8_t *h;
	uint64_t lo, hi, addr, pc = pc_adj - bias;
	int32_t v;
	uint32_t n;
	size_t table;

	while (elf && (scn = elf_nextscn(elf, scn))) {
		const char *name;
		size_t shstrndx;

		if (!gelf_getshdr(scn, &sh) || elf_getshdrstrndx(elf, &shstrndx) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (strcmp(name, ".eh_frame_hdr") == 0 &&
		    sh.sh_type == SHT_PROGBITS) {
			d = elf_getdata(scn, NULL);
			break;
		}
	}
	/* version 1; eh_frame_ptr any 4-byte form; fde_count udata4;
	 * table datarel sdata4 (0x3b), as GNU ld writes it. */
	if (!d || !d->d_buf || d->d_size < 12)
		return 0;
	h = d->d_buf;
	if (h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b)
		return 0;
	memcpy(&n, h + 8, 4);
	table = 12;
	if (n == 0 || (d->d_size - table) / 8 < n)
		return 0;
	addr = sh.sh_addr;
	/* The last entry whose start is at or below pc. */
	lo = 0;
	hi = n;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		memcpy(&v, h + table + mid * 8, 4);
		if (addr + (int64_t)v <= pc)
			lo = mid;
		else
			hi = mid;
	}
	memcpy(&v, h + table + lo * 8, 4);
	if (addr + (int64_t)v > pc)
		return 0;
	/* Entries do not overlap: the last one starting at or below pc is
	 * the one covering it, if any covers it. */
	{
		Dwarf_Addr cbias;
		Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &cbias);
		Dwarf_Frame *fr = NULL;

		if (!cfi || dwarf_cfi_addrframe(cfi, pc_adj - cbias, &fr) != 0)
			return 0;
		free(fr);
	}
	return addr + (int64_t)v + bias;
}

static void symbolize_dwfl(struct lc_program *p, struct lc_native_frame *f,
			   Dwarf_Addr pc_adj, Dwfl_Module **modp)
{
	Dwfl_Module *mod = dwfl_addrmodule(p->dwfl, pc_adj);
	GElf_Off off;
	GElf_Sym sym;
	const char *name;
	Dwfl_Line *line;

	*modp = mod;
	if (!mod)
		return;
	f->module = lc_strdup_or_null(lc_program_module_name(p, mod));
	name = dwfl_module_addrinfo(mod, pc_adj, &off, &sym, NULL, NULL, NULL);
	if (name) {
		f->function = lc_symbol_display(name, &f->linkage);
		f->func_start = pc_adj - off;
	} else {
		f->func_start = cfi_start(mod, pc_adj);
	}
	line = dwfl_module_getsrc(mod, pc_adj);
	if (line) {
		int lineno = 0;
		const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL,
						 NULL, NULL);

		f->file = lc_strdup_or_null(file);
		f->line = lineno;
	}
	expand_inlines(mod, f, pc_adj);
}

struct lc_error *lc_unwinder_create(struct lc_program *p,
				    struct lc_unwinder **ret)
{
	struct lc_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return &lc_error_nomem;
	u->prog = p;
	u->generation = p->generation;
	*ret = u;
	return NULL;
}

void lc_unwinder_destroy(struct lc_unwinder *u)
{
	if (!u)
		return;
	cache_free(u);
	free(u);
}

static void frame_deinit(struct lc_native_frame *f);

/* Where a thread's stack begins: glibc's _start, clone and clone3
 * (their CFI ends the unwind), and what other libcs and runtimes call
 * theirs. */
static bool is_thread_entry(const char *fn)
{
	static const char *const entries[] = {
		"_start", "__clone3", "__clone", "clone", "clone3",
		"start_thread", "__libc_start_main", "__libc_start_call_main",
		"_start_c", "__start", "thread_start", "__thread_start",
	};

	for (size_t i = 0; i < LC_ARRAY_SIZE(entries); i++)
		if (strcmp(fn, entries[i]) == 0)
			return true;
	return false;
}

/* pc is in clone's wrapper (its name, where the module's symbols say). */
static bool in_clone(struct lc_program *t, uint64_t pc)
{
	static const char *const names[] = { "__clone3", "__clone", "clone",
					     "clone3" };
	Dwfl_Module *mod = dwfl_addrmodule(t->dwfl, pc);
	const char *fn = mod ? dwfl_module_addrname(mod, pc) : NULL;

	for (size_t i = 0; fn && i < LC_ARRAY_SIZE(names); i++)
		if (strcmp(fn, names[i]) == 0)
			return true;
	return false;
}

/* Whether what the unwinder found would be marked broken: it stopped at
 * the first frame, or the first caller is in no module and no
 * executable mapping. */
static bool looks_broken(struct lc_program *t, const struct collect *c,
			 unsigned partial)
{
	bool anon;

	if (c->n == 1)
		return partial == LC_NATIVE_BROKEN;
	return c->n > 1 && !dwfl_addrmodule(t->dwfl, c->frames[1].pc - 1) &&
	       !lc_program_exec_name(t, c->frames[1].pc - 1, &anon);
}

/* A thread of a program read as it runs that was running when listed
 * (lc_program_list_running). */
static bool thread_running(const struct lc_program *t, int tid)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid)
			return t->threads[i].running;
	return false;
}

struct lc_error *lc_unwind_thread(struct lc_unwinder *u,
				  const struct lc_state_probe *probe,
				  int tid, size_t max,
				  struct lc_native_frame **ret, size_t *nret,
				  unsigned *partial, char **why)
{
	struct lc_program *t = u->prog;
	struct collect c = { .max = max };

	/* What the cache knows of a pc's variables is for one probe, and
	 * of its module for one set of modules. */
	if (u->generation != t->generation ||
	    (probe && (u->type_name != probe->type_name ||
		       u->param_name != probe->param_name ||
		       u->var_func != probe->var_func ||
		       u->var_names != probe->var_names))) {
		cache_free(u);
		u->generation = t->generation;
	}
	if (probe) {
		u->type_name = probe->type_name;
		u->param_name = probe->param_name;
		u->var_func = probe->var_func;
		u->var_names = probe->var_names;
	}

	*partial = 0;
	*why = NULL;
	if (t->kind == LC_PROGRAM_CALLBACK) {
		if (given_frames(t, tid, &c) < 0) {
			lc_native_frames_free(c.frames, c.n);
			return &lc_error_nomem;
		}
		/* The debugger stopped at code of no module (a JIT trace):
		 * libdwfl unwinds on from where the VM family says. */
		if (c.n >= 1 && probe && probe->foreign && t->dwfl &&
		    c.frames[0].activation) {
			if (!t->cb_attached &&
			    dwfl_attach_state(t->dwfl, NULL, 1, &cb_callbacks, t))
				t->cb_attached = true;
			if (t->cb_attached) {
				t->cb_tid = tid;
				/* The innermost frame, or the first further
				 * out in code of no module (a trace an FFI call
				 * returns to; the debugger may have gone on
				 * past it by guesswork). */
				if (unwind_foreign(t, probe, tid, max, &c, 0) == -1)
					for (size_t k = 1; k < c.n && !c.nomem; k++)
						if (!dwfl_addrmodule(t->dwfl, c.frames[k].pc - 1)) {
							unwind_foreign(t, probe, tid, max, &c, k);
							break;
						}
				t->cb_tid = 0;
			}
		}
		if (c.truncated) {
			*partial = LC_NATIVE_TRUNCATED;
			*why = strdup("native stack truncated at the frame limit");
		}
	} else if (t->not_stopped && thread_running(t, tid)) {
		*partial = LC_NATIVE_BROKEN;
		*why = strdup("running when read, and not stopped (--nonblocking): no machine stack");
		*ret = NULL;
		*nret = 0;
		return NULL;
	} else if (!t->dwfl || !t->dwfl_attached) {
		*partial = LC_NATIVE_BROKEN;
		*why = strdup("native unwinding unavailable (dwfl_core_file_attach failed)");
		*ret = NULL;
		*nret = 0;
		return NULL;
	} else {
		int r = dwfl_getthread_frames(t->dwfl, tid, frame_cb, &c);
		const struct lc_native_frame *last = c.n ? &c.frames[c.n - 1] : NULL;

		/* Read as it ran: its frame pointer was unknown, and the
		 * unwinding ends at a frame that needs it. */
		if (t->not_stopped && !c.nomem && !c.truncated && last &&
		    !(last->function && is_thread_entry(last->function)) &&
		    (last->regmask & (1u << LC_REG_SP)) &&
		    lc_program_guess_fp(t, tid, last->pc, last->regs[LC_REG_SP])) {
			lc_native_frames_free(c.frames, c.n);
			c = (struct collect){ .max = max };
			r = dwfl_getthread_frames(t->dwfl, tid, frame_cb, &c);
		}
		/* The innermost frame runs code of no module, with no
		 * unwind information: where the VM family knows it for its
		 * own generated code, unwinding starts again from the caller
		 * it names, and the frame goes back in front. */
		if (c.n >= 1 && !c.nomem && probe && probe->foreign &&
		    c.frames[0].activation) {
			int r2 = unwind_foreign(t, probe, tid, max, &c, 0);

			if (r2 != -1)
				r = r2;
		}
		/* Unwinding stopped at a frame of no module further out (a
		 * trace that called a C function through the FFI). */
		if (r != 0 && c.n > 1 && !c.nomem && probe && probe->foreign &&
		    !dwfl_addrmodule(t->dwfl, c.frames[c.n - 1].pc - 1)) {
			int r2 = unwind_foreign(t, probe, tid, max, &c, c.n - 1);

			if (r2 != -1)
				r = r2;
		}
		if (c.nomem) {
			lc_native_frames_free(c.frames, c.n);
			return &lc_error_nomem;
		}
		if (c.truncated) {
			*partial = LC_NATIVE_TRUNCATED;
			*why = strdup("native stack truncated at the frame limit");
		} else if (r != 0 && c.n <= 1) {
			*partial = LC_NATIVE_BROKEN;
			if (asprintf(why, "native unwinding stopped: %s",
				     dwfl_errmsg(-1)) < 0)
				*why = NULL;
		} else if (r != 0) {
			/* A stack unwinds to a frame whose CFI says it has no
			 * caller (_start, clone); failing before that means
			 * a word it was unwound through is damaged. */
			*partial = LC_NATIVE_BROKEN;
			if (asprintf(why, "native unwinding stopped after frame #%zu: %s",
				     c.n - 1, dwfl_errmsg(-1)) < 0)
				*why = NULL;
		}
	}
	/* Unwound from the caller of clone's wrapper (live.c): the wrapper's
	 * own frame goes back in front. */
	{
		uint64_t cpc, csp;
		void *p;

		if (c.n && lc_program_thread_clone(t, tid, &cpc, &csp) &&
		    (p = realloc(c.frames, (c.n + 1) * sizeof(*c.frames)))) {
			c.frames = p;
			memmove(c.frames + 1, c.frames, c.n * sizeof(*c.frames));
			memset(c.frames, 0, sizeof(*c.frames));
			c.frames[0].pc = cpc;
			c.frames[0].activation = true;
			c.frames[0].regs[LC_REG_SP] = csp;
			c.frames[0].regmask = 1u << LC_REG_SP;
			c.frames[1].activation = false;
			c.n++;
		}
	}
	/* A thread stopped before its first instruction (live: born during
	 * the stop), or interrupted at it, still in clone's wrapper on the
	 * child's side (the parent's side unwinds to its caller): what its
	 * new stack holds is no caller, and may be what an exited thread
	 * left there. */
	if (t->kind == LC_PROGRAM_LIVE && t->dwfl && looks_broken(t, &c, *partial) &&
	    (lc_program_thread_born(t, tid) ||
	     (c.n == 1 && in_clone(t, c.frames[0].pc)))) {
		while (c.n > 1)
			frame_deinit(&c.frames[--c.n]);
		if (*partial == LC_NATIVE_BROKEN) {
			*partial = 0;
			free(*why);
			*why = NULL;
		}
	}
	for (size_t i = 0; i < c.n; i++) {
		struct lc_native_frame *f = &c.frames[i];
		Dwarf_Addr pc_adj = f->activation ? f->pc : f->pc - 1;
		uint64_t sp = (f->regmask & (1u << LC_REG_SP)) ? f->regs[LC_REG_SP] : 0;
		uint64_t caller_sp = 0;
		Dwfl_Module *mod;

		if (i + 1 < c.n && (c.frames[i + 1].regmask & (1u << LC_REG_SP)))
			caller_sp = c.frames[i + 1].regs[LC_REG_SP];
		const char *exec;
		bool anon = false;

		mod = NULL;
		/* Anonymous executable memory (JIT code) is no module's,
		 * even where libdwfl's ranges reach over it. */
		exec = lc_program_exec_name(t, pc_adj, &anon);
		if (t->dwfl && !(exec && anon))
			symbolize(u, f, pc_adj, &mod);
		if (!mod && exec)
			f->module = strdup(exec);
		/* A caller's return address outside every module and every
		 * executable mapping: the unwinder followed a stack that
		 * something overwrote. */
		if (t->dwfl && !mod && !exec && i > 0 && !*partial) {
			*partial = LC_NATIVE_BROKEN;
			free(*why);
			if (asprintf(why, "frame #%zu returns to 0x%" PRIx64
				     ", outside any loaded module: the machine stack looks overwritten",
				     i, f->pc) < 0)
				*why = NULL;
		}
		if (!probe)
			continue;
		/* On x86_64 a frame's CFA is its caller's stack pointer. */
		if (mod)
			dwarf_states(u, probe, f, caller_sp, mod, pc_adj);
		if (mod && probe->var_func && probe->var_names)
			named_vars(u, probe, f, caller_sp, mod, pc_adj);
		scan_states(u, probe, f, sp, caller_sp ? caller_sp : sp + 512);
	}
	/* The outermost frame of a whole stack is a thread's entry, whose
	 * CFI says it has no caller.  One that ends in another function
	 * (its return address or saved frame pointer damaged, read as
	 * the end) lost its callers. */
	if (t->kind != LC_PROGRAM_CALLBACK && t->dwfl && !*partial && c.n > 0 &&
	    c.frames[c.n - 1].function &&
	    !is_thread_entry(c.frames[c.n - 1].function) &&
	    !(t->kind == LC_PROGRAM_LIVE && lc_program_thread_born(t, tid))) {
		*partial = LC_NATIVE_BROKEN;
		free(*why);
		if (asprintf(why, "native unwinding ended at frame #%zu (%s), not at a thread's entry: the frames that called it are lost",
			     c.n - 1, c.frames[c.n - 1].function) < 0)
			*why = NULL;
	}
	*ret = c.frames;
	*nret = c.n;
	return NULL;
}

static void frame_deinit(struct lc_native_frame *f)
{
	free(f->function);
	free(f->linkage);
	free(f->module);
	free(f->file);
	free(f->cands);
	for (size_t j = 0; j < f->ninl; j++) {
		free(f->inl[j].function);
		free(f->inl[j].file);
	}
	free(f->inl);
}

void lc_native_frames_free(struct lc_native_frame *f, size_t n)
{
	if (!f)
		return;
	for (size_t i = 0; i < n; i++)
		frame_deinit(&f[i]);
	free(f);
}
