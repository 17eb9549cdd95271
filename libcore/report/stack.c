/* One thread's mixed stack (stack.h): native frames from the unwinder,
 * the interpreter's frames from the VM family, spliced together. */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/stack.h"

struct chain_state {
	struct lc_vstate st;
	size_t first_frame;	/* innermost native frame holding it */
	size_t outermost;	/* the outermost native frame whose DWARF
				   L names it, or SIZE_MAX */
	struct lc_vwalk w;
	size_t next;		/* next frame to emit */
	bool partial;
};

struct ctx {
	struct lc_interp *in;
	struct lc_pass *pass;
	bool locals;
	struct lc_frames o;
	/* Where no name says which frames run Lua: the entry of the
	 * function recognised as the interpreter's (learn_runner), or 0;
	 * the entry of the one that calls C functions for it
	 * (learn_c_caller), or 0. */
	uint64_t runner, c_caller;
};

static int cmp_chain(const void *a, const void *b)
{
	const struct chain_state *x = a, *y = b;

	return x->first_frame < y->first_frame ? -1 :
	       x->first_frame > y->first_frame;
}

/* The roles of a machine frame: of its function, and of the calls
 * inlined into it (LTO builds inline the interpreter into its caller). */
static unsigned native_roles(const struct ctx *c,
			     const struct lc_native_frame *f)
{
	const struct lc_interp *in = c->in;
	unsigned r;

	if (!in)
		return 0;
	r = in->ops->roles(in, f->function);
	if (in->ops->frame_roles)
		r |= in->ops->frame_roles(in, f);
	for (size_t i = 0; i < f->ninl; i++)
		r |= in->ops->roles(in, f->inl[i].function);
	if (c->runner && f->func_start == c->runner)
		r |= LC_ROLE_RUNS_LUA;
	if (c->c_caller && f->func_start == c->c_caller)
		r |= LC_ROLE_CALLS_C;
	return r;
}

static void emit_run(struct ctx *c, struct chain_state *cs, bool unplaced,
		     const struct lc_native_frame *runner)
{
	size_t j = cs->next++;

	c->in->ops->frame(c->pass, &cs->st, &cs->w, j, c->locals, unplaced,
			  runner, &c->o);
}

static void emit(struct ctx *c, struct chain_state *cs, bool unplaced)
{
	emit_run(c, cs, unplaced, NULL);
}

static bool next_is_lua(const struct chain_state *cs)
{
	return cs->w.frames[cs->next].kind == LC_VFRAME_LUA;
}

static void native_to_frame(const struct lc_native_frame *nf, struct lc_frame *f)
{
	f->kind = LC_FRAME_NATIVE;
	f->pc = nf->pc;
	f->sp = (nf->regmask & (1u << LC_REG_SP)) ? nf->regs[LC_REG_SP] : 0;
	f->function = lc_strdup_or_null(nf->function);
	f->linkage_name = lc_strdup_or_null(nf->linkage);
	f->module = lc_strdup_or_null(nf->module);
	f->file = lc_strdup_or_null(nf->file);
	f->line = nf->line;
	f->namewhat = "";
	f->currentline = -1;
}

/* The calls inlined at the machine frame (innermost first), then the
 * machine frame itself. */
static int push_native(const struct lc_native_frame *n, struct lc_frames *o)
{
	struct lc_frame *f;

	for (size_t k = 0; k < n->ninl; k++) {
		if (!(f = lc_frames_push(o)))
			return -1;
		native_to_frame(n, f);
		f->inlined = true;
		free(f->function);
		free(f->linkage_name);
		free(f->file);
		f->linkage_name = NULL;
		f->function = lc_strdup_or_null(n->inl[k].function);
		f->file = lc_strdup_or_null(n->inl[k].file);
		f->line = n->inl[k].line;
	}
	if (!(f = lc_frames_push(o)))
		return -1;
	native_to_frame(n, f);
	return 0;
}

/* Does the C function cfunc have a machine frame of its own among the
 * frames after nf[i], before the next frame that runs Lua?  Then it is
 * placed there, not inside the interpreter frame at i. */
static bool cfunc_ahead(const struct ctx *c,
			const struct lc_native_frame *nf, size_t nnf, size_t i,
			uint64_t cfunc)
{
	for (size_t j = i + 1; cfunc && j < nnf && j < i + 64; j++) {
		if (nf[j].func_start == cfunc)
			return true;
		if (native_roles(c, &nf[j]) & LC_ROLE_RUNS_LUA)
			return false;
	}
	return false;
}

/* The values of machine frame i for learn_runner: its registers
 * (those the unwinder knows; not sp or pc) and its stack words, from its
 * stack pointer to its caller's (at most RUNNER_STACK_WORDS).  How many
 * went into words. */
#define RUNNER_STACK_WORDS	512
#define RUNNER_WORDS		(LC_NREGS + RUNNER_STACK_WORDS)
static size_t frame_words(struct lc_memory *mem,
			  const struct lc_native_frame *nf, size_t nnf,
			  size_t i, uint64_t *words)
{
	const uint32_t sp = 1u << LC_REG_SP;
	uint64_t lo, hi;
	size_t n = 0;

	for (unsigned r = 0; r < LC_NREGS; r++)
		if ((nf[i].regmask & (1u << r)) && r != LC_REG_SP &&
		    r != LC_REG_PC)
			words[n++] = nf[i].regs[r];
	if (i + 1 >= nnf || !(nf[i].regmask & sp) || !(nf[i + 1].regmask & sp))
		return n;
	lo = nf[i].regs[LC_REG_SP] & ~7ull;
	hi = nf[i + 1].regs[LC_REG_SP];
	if (hi <= lo)
		return n;
	if (hi - lo > RUNNER_STACK_WORDS * 8)
		hi = lo + RUNNER_STACK_WORDS * 8;
	if (lc_read(mem, lo, words + n, hi - lo) < 0)
		return n;
	return n + (hi - lo) / 8;
}

/* No frame is named as one that runs Lua (a stripped build): the
 * interpreter's function is recognised by what it keeps.  A run's
 * machine frame holds, in its registers and stack words, what the family
 * counts as marks of the run's innermost Lua frame (PUC: its CallInfo,
 * closure, base, constants, a pc in its code).  Values pass inward only
 * -- a callee that leaves a register alone runs with its caller's value,
 * one that saves it keeps it in its own stack words -- so the run's frame
 * is the outermost frame of the interpreter's module holding two marks,
 * inside the frame of the run outside it.  Runs are taken outermost
 * first, and only frames no symbol names are candidates.  Every frame found must be of one function (one .eh_frame
 * entry): then each frame of that function runs Lua.  Two functions, or
 * none: nothing is certain, 0.  A function found by two runs, or by
 * two stacks of one run each, is kept by the interpreter for later
 * stacks (lc_interp.runner), used while a frame of it is on the stack. */
static uint64_t learn_runner(struct ctx *c, struct lc_memory *mem,
			     const struct lc_native_frame *nf, size_t nnf,
			     const struct chain_state *cs, size_t ncs)
{
	struct lc_interp *in = c->in;
	uint64_t **words = NULL, runner = 0;	/* per frame, read once */
	size_t *nwords = NULL, limit = nnf;
	unsigned runs = 0;

	if (!in->ops->run_marks)
		return 0;
	for (size_t i = 0; i < nnf; i++)
		if (native_roles(c, &nf[i]) & LC_ROLE_RUNS_LUA)
			return 0;
	for (size_t i = 0; in->runner && i < nnf; i++)
		if (nf[i].func_start == in->runner)
			return in->runner;
	for (size_t s = ncs; s-- > 0;) {
		const struct lc_vwalk *w = &cs[s].w;

		for (size_t j = w->n; j-- > 0;) {
			if (w->frames[j].kind != LC_VFRAME_LUA ||
			    (j > 0 && w->frames[j - 1].kind == LC_VFRAME_LUA &&
			     !in->ops->starts_run(c->pass, w, j - 1)))
				continue;	/* not the innermost of its run */
			for (size_t i = limit; i-- > 0;) {
				const struct lc_native_frame *f = &nf[i];

				/* A named function is never the nameless
				 * interpreter. */
				if (f->function || !f->func_start ||
				    !lc_interp_has_pc(in, f->pc))
					continue;
				if (!words) {
					words = calloc(nnf, sizeof(*words));
					nwords = calloc(nnf, sizeof(*nwords));
					if (!words || !nwords) {
						runner = 0;
						goto out;
					}
				}
				if (!words[i]) {
					words[i] = malloc(RUNNER_WORDS * sizeof(**words));
					if (!words[i]) {
						runner = 0;
						goto out;
					}
					nwords[i] = frame_words(mem, nf, nnf, i,
								words[i]);
				}
				if (in->ops->run_marks(c->pass, &cs[s].st, w, j,
						       words[i], nwords[i]) < 2)
					continue;
				if (runner && f->func_start != runner) {
					runner = 0;
					goto out;
				}
				runner = f->func_start;
				runs++;
				limit = i;
				break;
			}
		}
	}
	if (runner && (runs >= 2 || runner == in->runner_once))
		in->runner = runner;
	else if (runner)
		in->runner_once = runner;
out:
	for (size_t i = 0; words && i < nnf; i++)
		free(words[i]);
	free(words);
	free(nwords);
	return runner;
}

/* With the interpreter recognised where no name says (learn_runner):
 * the function that calls C functions for Lua is the caller of a C
 * function's own frame -- a frame whose .eh_frame entry starts at the C
 * function of a C frame of the states.  It is what places a C function
 * whose own frame a tail call replaced (CALLS_C).  Every such caller
 * must be one nameless function of the interpreter's module, not the
 * interpreter itself; else 0.  Kept by the interpreter once found
 * (lc_interp.c_caller): which function that is does not change.
 * A stack with no C function's own frame (its one C function tail-called
 * another, io.read into g_read) says less: there the function each
 * interpreter frame called, where all of them called one nameless
 * function of the module, is taken for this stack alone. */
/* Frame f as the one that calls C functions: a nameless function of
 * the interpreter's module, not the interpreter itself, and the same as
 * *caller where that is set already (which it then becomes).  false:
 * it cannot be. */
static bool c_caller_agrees(const struct ctx *c,
			    const struct lc_native_frame *f, uint64_t *caller)
{
	if (f->function || !f->func_start || f->func_start == c->runner ||
	    !lc_interp_has_pc(c->in, f->pc) ||
	    (*caller && f->func_start != *caller))
		return false;
	*caller = f->func_start;
	return true;
}

static uint64_t learn_c_caller(struct ctx *c,
			       const struct lc_native_frame *nf, size_t nnf,
			       const struct chain_state *cs, size_t ncs)
{
	struct lc_interp *in = c->in;
	uint64_t caller = 0;

	if (!c->runner)
		return 0;
	if (in->c_caller)
		return in->c_caller;
	for (size_t i = 0; i + 1 < nnf; i++) {
		bool cfunc = false;

		for (size_t s = 0; s < ncs && !cfunc && nf[i].func_start; s++)
			for (size_t j = 0; j < cs[s].w.n && !cfunc; j++)
				cfunc = cs[s].w.frames[j].kind == LC_VFRAME_C &&
					cs[s].w.frames[j].cfunc == nf[i].func_start;
		if (cfunc && !c_caller_agrees(c, &nf[i + 1], &caller))
			return 0;
	}
	if (caller) {
		in->c_caller = caller;
		return caller;
	}
	for (size_t i = 1; i < nnf; i++)
		if (nf[i].func_start == c->runner &&
		    !c_caller_agrees(c, &nf[i - 1], &caller))
			return 0;
	return caller;
}

/* The state to emit from: the current one, or the next that still has
 * frames (another VM's frames may come next). */
static size_t next_live(const struct chain_state *cs, size_t ncs, size_t cur)
{
	while (cur < ncs && cs[cur].next >= cs[cur].w.n)
		cur++;
	return cur;
}

void lc_stack_decode(struct lc_target *t, struct lc_pass *pass, int tid,
		     const struct lc_stack_options *opts, struct lc_stack *th)
{
	struct ctx c = { .in = !pass ? NULL : opts->interp ? opts->interp :
			 lc_target_interp(t, NULL),
			 .pass = pass, .locals = opts->locals };
	const struct lc_interp *in = c.in;
	struct lc_state_probe probe;
	struct lc_native_frame *nf = NULL;
	struct chain_state *cs = NULL;
	size_t nnf = 0, ncs = 0, cur = 0, max_frames = opts->max_frames;
	unsigned npartial = 0;
	char *why = NULL;
	struct lc_error *err;
	long bad_l = -1;	/* a frame whose DWARF L does not validate */
	uint64_t bad_addr = 0;

	memset(th, 0, sizeof(*th));
	if (!in)
		c.pass = pass = NULL;
	if (in)
		probe = (struct lc_state_probe){
			.type_name = in->ops->state_type,
			.param_name = in->ops->state_param,
			.check = in->ops->is_state, .arg = pass,
			.var_func = in->ops->run_func,
			.var_names = in->ops->run_vars,
			.foreign = in->ops->foreign,
		};
	err = lc_unwind_thread(lc_target_unwinder(t), in ? &probe : NULL, tid,
			       max_frames, &nf, &nnf, &npartial, &why);
	if (err) {
		th->partial = LC_PARTIAL_UNWIND;
		th->note = strdup(lc_error_message(err));
		lc_error_destroy(err);
		return;
	}
	if (npartial & LC_NATIVE_TRUNCATED)
		th->partial |= LC_PARTIAL_TRUNCATED;
	if (npartial & LC_NATIVE_BROKEN)
		th->partial |= LC_PARTIAL_UNWIND;
	th->note = why;

	/* States running on this thread: a frame's DWARF "L", or any
	 * candidate held by a frame of the interpreter's module itself
	 * (stack words of host frames are too often stale). */
	for (size_t i = 0; in && i < nnf; i++) {
		for (size_t k = 0; k < nf[i].ncands; k++) {
			uint64_t a = nf[i].cands[k];
			bool strong = a == nf[i].L || lc_interp_has_pc(in, nf[i].pc);
			struct lc_vstate st;
			size_t j;

			if (!strong)
				continue;
			for (j = 0; j < ncs; j++)
				if (cs[j].st.addr == a)
					break;
			if (j < ncs)
				continue;
			/* Running or normal: status OK with frames.  A
			 * coroutine that died of an error keeps its frames
			 * (and a yielded one its), but runs nowhere.  The
			 * interpreter running a state its DWARF names, or a
			 * resume of it, says otherwise: a status that
			 * disagrees is damage, and the frames are shown,
			 * marked, unless it is an error on its way to a
			 * panic. */
			if (!in->ops->state(pass, a, &st))
				continue;
			if (!st.runnable) {
				if (!st.active || a != nf[i].L ||
				    !(native_roles(&c, &nf[i]) &
				      (LC_ROLE_RUNS_LUA | LC_ROLE_RESUME)))
					continue;
				if (!st.dying) {
					st.status_damaged = true;
					th->partial |= LC_PARTIAL_BAD_STATE;
					if (!th->note)
						asprintf(&th->note,
							 "lua_State 0x%" PRIx64 " runs in frame #%zu but its status says it does not",
							 a, i);
				}
			}
			void *p = realloc(cs, (ncs + 1) * sizeof(*cs));
			if (!p)
				break;
			cs = p;
			memset(&cs[ncs], 0, sizeof(cs[0]));
			if (in->ops->at_frame)
				in->ops->at_frame(pass, &st, nf, nnf, i);
			cs[ncs].st = st;
			cs[ncs].first_frame = i;
			ncs++;
		}
	}
	/* The VM's own code runs here with an L its debug info names that
	 * is no valid state: what it points to is damaged (or its VM is),
	 * and that state's Lua frames cannot be shown. */
	for (size_t i = 0; in && i < nnf && bad_l < 0; i++) {
		struct lc_vstate st;

		if (nf[i].L_raw && lc_interp_has_pc(in, nf[i].pc) &&
		    !in->ops->state(pass, nf[i].L_raw, &st)) {
			bad_l = (long)i;
			bad_addr = nf[i].L_raw;
		}
	}
	if (bad_l >= 0) {
		char *n = NULL;

		th->partial |= LC_PARTIAL_BAD_STATE;
		if (asprintf(&n, "%s%sframe #%ld (%s) runs Lua with L = 0x%" PRIx64
			     ", which does not read as a lua_State of a valid VM: its Lua frames are not shown",
			     th->note ? th->note : "", th->note ? "; " : "",
			     bad_l, nf[bad_l].function ? nf[bad_l].function : "??",
			     bad_addr) >= 0) {
			free(th->note);
			th->note = n;
		}
	}
	/* VMs in order of first appearance; within a VM, the resume chain
	 * by resume depth (the family's: a resumed thread is deeper than
	 * its resumer). */
	if (ncs > 1)	/* cs is NULL when there is none */
		qsort(cs, ncs, sizeof(*cs), cmp_chain);
	/* Equal depths (a family whose counts order nothing: 5.1.1) are
	 * ordered by the outermost frame whose DWARF L names each state:
	 * a resumed coroutine's ends at its resume, inside its resumer's
	 * frames, so the deepest comes first; a state no frame names
	 * comes last. */
	for (size_t j = 0; j < ncs; j++) {
		cs[j].outermost = SIZE_MAX;
		for (size_t i = nnf; i-- > 0;)
			if (nf[i].L == cs[j].st.addr) {
				cs[j].outermost = i;
				break;
			}
	}
	for (size_t i = 0; i < ncs; i++) {
		/* Pull every later state of the same VM up, deepest first
		 * (stable insertion; chains are short). */
		for (size_t j = i + 1; j < ncs; j++) {
			if (cs[j].st.vm != cs[i].st.vm)
				continue;
			if (cs[j].st.resume_depth > cs[i].st.resume_depth ||
			    (cs[j].st.resume_depth == cs[i].st.resume_depth &&
			     cs[j].outermost < cs[i].outermost)) {
				struct chain_state tmp = cs[j];

				memmove(&cs[i + 1], &cs[i], (j - i) * sizeof(*cs));
				cs[i] = tmp;
			}
		}
	}
	/* A resumed coroutine's frames lie inside its resumer's: where the
	 * C-call counts order two states of a VM against the native frames
	 * that name them, one of the counts is damaged. */
	for (size_t i = 0; i < ncs; i++)
		for (size_t j = i + 1; j < ncs; j++)
			if (cs[j].st.vm == cs[i].st.vm &&
			    cs[i].outermost != SIZE_MAX &&
			    cs[j].outermost != SIZE_MAX &&
			    cs[i].outermost > cs[j].outermost &&
			    !(th->partial & LC_PARTIAL_CHAIN)) {
				th->partial |= LC_PARTIAL_CHAIN;
				if (!th->note)
					asprintf(&th->note,
						 "the C-call counts of lua_States 0x%" PRIx64 " and 0x%" PRIx64 " order them unlike the native frames that run them",
						 cs[i].st.addr, cs[j].st.addr);
			}
	th->vm = ncs ? cs[0].st.vm : 0;
	th->states = calloc(ncs ? ncs : 1, sizeof(*th->states));
	for (size_t i = 0; i < ncs; i++) {
		if (th->states)
			th->states[th->nstates++] = cs[i].st.addr;
		err = in->ops->walk(pass, &cs[i].st, max_frames, &cs[i].w);
		cs[i].partial = cs[i].w.partial;
		if (err) {
			lc_error_destroy(err);
			cs[i].partial = true;
		}
		if (cs[i].partial) {
			th->partial |= LC_PARTIAL_CHAIN;
			if (!th->note)
				asprintf(&th->note,
					 "the CallInfo chain of lua_State 0x%" PRIx64 " is broken or too long",
					 cs[i].st.addr);
		}
	}

	long lost_run = -1;
	size_t emitted;
	/* Native frames a C frame of a state was placed at. */
	bool *placed = calloc(nnf ? nnf : 1, sizeof(*placed));
	/* No frame named as the interpreter's (a stripped executable):
	 * nothing says where each Lua frame runs.  They all go, unplaced,
	 * just outside the innermost frames that are not the interpreter
	 * module's (a system call, a library the C function called), at the
	 * top of its frames: where a profile's leaf is. */
	size_t unnamed_at = SIZE_MAX;

	if (in && ncs) {
		bool named = false;

		c.runner = learn_runner(&c, t->prog->mem, nf, nnf, cs, ncs);
		c.c_caller = learn_c_caller(&c, nf, nnf, cs, ncs);

		for (size_t i = 0; i < nnf && !named; i++)
			named = native_roles(&c, &nf[i]) != 0 || nf[i].L;
		for (size_t i = 0; !named && i < nnf; i++)
			if (lc_interp_has_pc(in, nf[i].pc)) {
				unnamed_at = i;
				break;
			}
	}

	for (size_t i = 0; i < nnf && !c.o.nomem; i++) {
		struct lc_native_frame *n = &nf[i];
		unsigned roles = native_roles(&c, n);
		struct chain_state *cc;
		size_t live;

		if (i == unnamed_at)
			for (; cur < ncs && !c.o.nomem; cur++)
				while (cs[cur].next < cs[cur].w.n && !c.o.nomem)
					emit(&c, &cs[cur], true);

		/* A frame whose DWARF names the state it runs moves us to that
		 * state; what is left of the states before it could not be
		 * placed. */
		if (n->L && (roles & (LC_ROLE_RUNS_LUA | LC_ROLE_RESUME))) {
			size_t j;

			for (j = cur; j < ncs; j++)
				if (cs[j].st.addr == n->L)
					break;
			for (; j < ncs && cur < j; cur++)
				while (cs[cur].next < cs[cur].w.n)
					emit(&c, &cs[cur], true);
		}
		live = next_live(cs, ncs, cur);
		cc = live < ncs ? &cs[live] : NULL;

		/* A C function whose own frame is gone (a tail call in
		 * optimized C, e.g. io_read jumping to g_read) belongs just
		 * inside the interpreter frame that called it. */
		if (cc && (roles & LC_ROLE_CALLS_C) &&
		    lc_interp_has_pc(in, n->pc) && !next_is_lua(cc) &&
		    /* (a frame that calls C functions may run Lua too, as
		     * 5.4.0's call function does: here it called the
		     * interpreter) */
		    !(i > 0 && (native_roles(&c, &nf[i - 1]) & LC_ROLE_RUNS_LUA)) &&
		    !cfunc_ahead(&c, nf, nnf, i, cc->w.frames[cc->next].cfunc)) {
			cur = live;
			emit(&c, cc, false);
		}
		if (push_native(n, &c.o) < 0)
			break;
		c.o.v[c.o.n - 1].runs_lua = (roles & LC_ROLE_RUNS_LUA) != 0;
		emitted = c.o.n;

		live = next_live(cs, ncs, cur);
		cc = live < ncs ? &cs[live] : NULL;
		if (cc && !next_is_lua(cc) && cc->w.frames[cc->next].cfunc &&
		    n->func_start == cc->w.frames[cc->next].cfunc) {
			cur = live;
			emit(&c, cc, false);
			if (placed)
				placed[i] = true;
		} else if (cc && (roles & LC_ROLE_RUNS_LUA)) {
			cur = live;
			/* Pending C frames were not matched: show them here
			 * rather than lose them (unplaced, unless they run in
			 * this very frame). */
			while (cc->next < cc->w.n && !next_is_lua(cc))
				emit(&c, cc, !cc->w.frames[cc->next].in_run);
			/* The run's innermost Lua frame is the one this
			 * native frame executes: its locals say where.  A
			 * C frame that runs in the run's own machine frame
			 * (in_run) is one of the run's too. */
			for (const struct lc_native_frame *runner = n;
			     cc->next < cc->w.n &&
			     (next_is_lua(cc) || cc->w.frames[cc->next].in_run);
			     runner = NULL) {
				size_t j = cc->next;

				emit_run(&c, cc, false, runner);
				if (in->ops->starts_run(pass, &cc->w, j))
					break;
			}
		} else if (cur < ncs && (roles & LC_ROLE_RESUME) &&
			   (!n->L || n->L == cs[cur].st.addr)) {
			/* The resumed coroutine ends here: the state we
			 * were emitting from (not skipped ahead).  Frames
			 * left over are those a yield took the native frames
			 * of: the interpreter continues them after the
			 * resume. */
			while (cs[cur].next < cs[cur].w.n) {
				size_t first = c.o.n;
				bool cont = in->ops->continued(pass, &cs[cur].w,
							       cs[cur].next);

				emit(&c, &cs[cur], !cont);
				for (size_t k = first; cont && k < c.o.n; k++)
					c.o.v[k].continued = true;
			}
			cur++;
		}
		/* The interpreter runs a Lua function in every one of its
		 * frames: one left without is a state that was not found or
		 * did not hold together. */
		if ((roles & LC_ROLE_RUNS_LUA) && in && lost_run < 0) {
			bool lua = false;

			for (size_t k = emitted; k < c.o.n; k++)
				lua |= c.o.v[k].what && strcmp(c.o.v[k].what, "C") != 0;
			/* (or, where the family allows it, a C function only,
			 * placed at the frame just inside) */
			if (in->ops->c_only_runs && i > 0 && placed && placed[i - 1])
				lua = true;
			if (!lua)
				lost_run = (long)i;
		}
	}
	/* A C function the interpreter called for Lua (its caller calls C
	 * functions) has a CallInfo of the state running it.  One whose
	 * native frame got none, while the CallInfo just past a state's
	 * current one holds that very function, is a call the state's
	 * current CallInfo pointer has lost: damage (a finished call's
	 * frame is gone from the native stack). */
	for (size_t j = 0; placed && in && j + 1 < nnf; j++) {
		size_t k;

		if (placed[j] || !nf[j].func_start ||
		    !(native_roles(&c, &nf[j + 1]) & LC_ROLE_CALLS_C))
			continue;
		for (k = 0; k < ncs; k++)
			if (cs[k].w.after_cfunc == nf[j].func_start)
				break;
		if (k == ncs)
			continue;
		th->partial |= LC_PARTIAL_CHAIN;
		if (!th->note)
			asprintf(&th->note,
				 "frame #%zu (%s) is a C function called for Lua, but the current CallInfo of lua_State 0x%" PRIx64 " is older than its call",
				 j, nf[j].function ? nf[j].function : "??",
				 cs[k].st.addr);
		break;
	}
	free(placed);
	if (lost_run >= 0) {
		th->partial |= LC_PARTIAL_CHAIN;
		if (!th->note)
			asprintf(&th->note,
				 "frame #%ld (%s) runs Lua, but no Lua frame could be placed in it",
				 lost_run, nf[lost_run].function ? nf[lost_run].function : "??");
	}
	for (; cur < ncs && !c.o.nomem; cur++)
		while (cs[cur].next < cs[cur].w.n && !c.o.nomem)
			emit(&c, &cs[cur], true);

	/* The frame limit bounds what is shown, natives and Lua together. */
	if (c.o.n > max_frames) {
		for (size_t i = max_frames; i < c.o.n; i++)
			lc_frame_free(&c.o.v[i]);
		c.o.n = max_frames;
		th->partial |= LC_PARTIAL_TRUNCATED;
		if (!th->note)
			th->note = strdup("stack truncated at the frame limit (--max-frames)");
	}
	th->frames = c.o.v;
	th->nframes = c.o.n;
	for (size_t i = 0; i < c.o.n; i++) {
		if (c.o.v[i].partial)
			th->partial |= LC_PARTIAL_FRAME;
	}
	if (c.o.nomem) {
		th->partial |= LC_PARTIAL_NOMEM;
		free(th->note);
		th->note = strdup("out of memory");
	}
	th->activity = in ? in->ops->activity(in, c.o.v, c.o.n) :
			    LC_ACTIVITY_NATIVE;
	if (in && ncs && in->ops->vm_label)
		th->vm_label = in->ops->vm_label(pass, &cs[0].st, &th->trace);
	for (size_t i = 0; i < ncs; i++)
		lc_vwalk_free(in, &cs[i].w);
	free(cs);
	lc_native_frames_free(nf, nnf);
}

void lc_stack_deinit(struct lc_stack *s)
{
	for (size_t i = 0; i < s->nframes; i++)
		lc_frame_free(&s->frames[i]);
	free(s->frames);
	free(s->states);
	free(s->note);
	memset(s, 0, sizeof(*s));
}
