/* The report: every thread's mixed C+Lua stack.
 *
 * Per thread: unwind the native frames (unwind.c), collect the lua_States
 * they hold, order the active ones innermost first (resume chain within
 * a VM by C-call count, VMs by where they first appear), walk each one's
 * CallInfos, and splice them into the native frames:
 *  - a C function's CallInfo goes after the native frame of that function;
 *  - a run of Lua CallInfos goes after the luaV_execute frame running it
 *    (the run's extent comes from lc_lua_ci_starts_run, per version);
 *  - what cannot be placed is appended, marked unplaced.
 * The Lua frames' order never depends on placement, only on the walk. */
#include <config.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/puc/puc.h"
#include "vm/puc/values.h"
#include "vm/puc/heap.h"
#include "native/unwind.h"

#define DEFAULT_MAX_FRAMES	512

struct chain_state {
	struct lc_lstate st;
	size_t first_frame;	/* innermost native frame holding it */
	struct lc_ci *cis;
	size_t ncis, next;	/* next CallInfo to emit */
	bool partial;
	bool locals;		/* decode each frame's variables */
};

struct out {
	struct lc_frame *frames;
	size_t n, cap;
	bool nomem;
};

static struct lc_frame *out_push(struct out *o)
{
	if (o->n == o->cap) {
		size_t ncap = o->cap ? o->cap * 2 : 64;
		void *p = realloc(o->frames, ncap * sizeof(*o->frames));

		if (!p) {
			o->nomem = true;
			return NULL;
		}
		o->frames = p;
		o->cap = ncap;
	}
	memset(&o->frames[o->n], 0, sizeof(o->frames[0]));
	return &o->frames[o->n++];
}

static bool in_lua_module(const struct lc_layout *l, const struct lc_native_frame *f)
{
	return l && f->pc >= l->module_start && f->pc < l->module_end;
}

/* The machine frame runs "name", itself or inlined into it (LTO builds
 * inline luaV_execute into luaD_call). */
static bool is_fn(const struct lc_native_frame *f, const char *name)
{
	if (f->function && strcmp(f->function, name) == 0)
		return true;
	for (size_t i = 0; i < f->ninl; i++)
		if (strcmp(f->inl[i].function, name) == 0)
			return true;
	return false;
}

static int cmp_chain(const void *a, const void *b)
{
	const struct chain_state *x = a, *y = b;

	return x->first_frame < y->first_frame ? -1 :
	       x->first_frame > y->first_frame;
}


/* Push the frame of cis[j] (and, 5.1, the lost tail calls it hides). */
static void push_lua_frame(struct lc_target *t, struct lc_lua_ctx *ctx,
			   bool locals, const struct lc_lstate *st,
			   const struct lc_ci *cis, size_t n, size_t j,
			   struct out *o, bool unplaced)
{
	struct lc_frame *f = out_push(o);

	if (!f)
		return;
	lc_lua_frame(ctx, st, cis, n, j, f);
	f->unplaced = unplaced;
	if (f->cfunc)
		f->function = lc_strdup_or_null(lc_target_symbol(t, f->cfunc));
	if (locals && cis[j].is_lua) {
		struct lc_error *err = lc_lua_frame_vars(ctx, st, cis, n, j,
							 &f->vars, &f->nvars);
		if (err) {
			f->partial = true;
			lc_error_destroy(err);
		}
	}
	/* 5.1 counts lost tail calls on the Lua CallInfo that replaced them
	 * (C CallInfos leave the field stale); lua_getstack reports them as
	 * levels of their own, outside it. */
	for (int k = 0; cis[j].is_lua && k < cis[j].tailcalls && k < 1000; k++) {
		struct lc_frame *tf = out_push(o);

		if (!tf)
			return;
		tf->kind = LC_FRAME_LUA;
		tf->what = "tail";
		tf->source = strdup("=(tail call)");
		tf->short_src = strdup("(tail call)");
		tf->currentline = -1;
		tf->linedefined = -1;
		tf->namewhat = "";
		tf->state = st->addr;
		tf->unplaced = unplaced;
	}
}

static void emit_ci(struct lc_target *t, struct lc_lua_ctx *ctx,
		    struct chain_state *cs, struct out *o, bool unplaced)
{
	size_t j = cs->next++;

	push_lua_frame(t, ctx, cs->locals, &cs->st, cs->cis, cs->ncis, j, o,
		       unplaced);
}

static void native_to_frame(const struct lc_native_frame *nf, struct lc_frame *f)
{
	f->kind = LC_FRAME_NATIVE;
	f->pc = nf->pc;
	f->sp = (nf->regmask & (1u << LC_REG_SP)) ? nf->regs[LC_REG_SP] : 0;
	f->function = lc_strdup_or_null(nf->function);
	f->module = lc_strdup_or_null(nf->module);
	f->file = lc_strdup_or_null(nf->file);
	f->line = nf->line;
	f->namewhat = "";
	f->currentline = -1;
}

/* The calls inlined at the machine frame (innermost first), then the
 * machine frame itself. */
static int push_native(const struct lc_native_frame *n, struct out *o)
{
	struct lc_frame *f;

	for (size_t k = 0; k < n->ninl; k++) {
		if (!(f = out_push(o)))
			return -1;
		native_to_frame(n, f);
		f->inlined = true;
		free(f->function);
		free(f->file);
		f->function = lc_strdup_or_null(n->inl[k].function);
		f->file = lc_strdup_or_null(n->inl[k].file);
		f->line = n->inl[k].line;
	}
	if (!(f = out_push(o)))
		return -1;
	native_to_frame(n, f);
	return 0;
}

/* The state to emit from: the current one, or the next that still has
 * frames (another VM's frames may come next). */
static size_t next_live(const struct chain_state *cs, size_t ncs, size_t cur)
{
	while (cur < ncs && cs[cur].next >= cs[cur].ncis)
		cur++;
	return cur;
}

static void frame_free(struct lc_frame *f);

static void build_thread(struct lc_target *t, struct lc_lua_ctx *ctx,
			 const struct lc_report_options *opts,
			 size_t max_frames, struct lc_thread *th)
{
	const struct lc_layout *l = ctx ? lc_lua_layout(ctx) : NULL;
	struct lc_native_frame *nf = NULL;
	struct chain_state *cs = NULL;
	size_t nnf = 0, ncs = 0, cur = 0;
	struct out o = { 0 };
	bool partial = false;
	char *why = NULL;
	struct lc_error *err;
	long bad_l = -1;	/* a frame whose DWARF L does not validate */
	uint64_t bad_addr = 0;

	err = lc_unwind_thread(t, ctx, th->tid, max_frames, &nf, &nnf,
			       &partial, &why);
	if (err) {
		th->partial = true;
		th->note = strdup(lc_error_message(err));
		lc_error_destroy(err);
		return;
	}
	th->partial = partial;
	th->note = why;

	/* States running on this thread: a frame's DWARF "L", or any
	 * candidate held by a frame of the Lua module itself (stack words of
	 * host frames are too often stale). */
	for (size_t i = 0; ctx && i < nnf; i++) {
		for (size_t k = 0; k < nf[i].ncands; k++) {
			uint64_t a = nf[i].cands[k];
			bool strong = a == nf[i].L || in_lua_module(l, &nf[i]);
			struct lc_lstate st;
			size_t j;

			if (!strong)
				continue;
			for (j = 0; j < ncs; j++)
				if (cs[j].st.addr == a)
					break;
			if (j < ncs)
				continue;
			/* Running or normal: status LUA_OK with frames.  A
			 * coroutine that died of an error keeps its frames
			 * (and a yielded one its), but runs nowhere. */
			if (lc_lua_state_read(ctx, a, &st) < 0)
				continue;
			if (!lc_lua_state_active(&st) || st.status != 0)
				continue;
			void *p = realloc(cs, (ncs + 1) * sizeof(*cs));
			if (!p)
				break;
			cs = p;
			memset(&cs[ncs], 0, sizeof(cs[0]));
			cs[ncs].st = st;
			cs[ncs].first_frame = i;
			cs[ncs].locals = opts && opts->locals;
			ncs++;
		}
	}
	/* The VM's own code runs here with an L its debug info names that
	 * is no valid lua_State: what it points to is damaged (or its VM
	 * is), and that state's Lua frames cannot be shown. */
	for (size_t i = 0; ctx && i < nnf && bad_l < 0; i++) {
		struct lc_lstate st;

		if (nf[i].L_raw && in_lua_module(l, &nf[i]) &&
		    lc_lua_state_read(ctx, nf[i].L_raw, &st) < 0) {
			bad_l = (long)i;
			bad_addr = nf[i].L_raw;
		}
	}
	if (bad_l >= 0) {
		char *n = NULL;

		th->partial = true;
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
	 * by C-call count (ldo.c:lua_resume gives the resumed thread its
	 * resumer's count plus one). */
	if (ncs > 1)	/* cs is NULL when there is none */
		qsort(cs, ncs, sizeof(*cs), cmp_chain);
	for (size_t i = 0; i < ncs; i++) {
		/* Pull every later state of the same VM up, highest count
		 * first (stable insertion; chains are short). */
		for (size_t j = i + 1; j < ncs; j++) {
			if (cs[j].st.g != cs[i].st.g)
				continue;
			if (lc_lua_state_ccalls(ctx, &cs[j].st) >
			    lc_lua_state_ccalls(ctx, &cs[i].st)) {
				struct chain_state tmp = cs[j];

				memmove(&cs[i + 1], &cs[i], (j - i) * sizeof(*cs));
				cs[i] = tmp;
			}
		}
	}
	th->vm = ncs ? cs[0].st.g : 0;
	th->states = calloc(ncs ? ncs : 1, sizeof(*th->states));
	for (size_t i = 0; i < ncs; i++) {
		if (th->states)
			th->states[th->nstates++] = cs[i].st.addr;
		err = lc_lua_walk(ctx, &cs[i].st, max_frames, &cs[i].cis,
				  &cs[i].ncis, &cs[i].partial);
		if (err) {
			lc_error_destroy(err);
			cs[i].partial = true;
		}
		if (cs[i].partial) {
			th->partial = true;
			if (!th->note)
				asprintf(&th->note,
					 "the CallInfo chain of lua_State 0x%" PRIx64 " is broken or too long",
					 cs[i].st.addr);
		}
	}

	for (size_t i = 0; i < nnf && !o.nomem; i++) {
		struct lc_native_frame *n = &nf[i];
		struct chain_state *c;
		size_t live;

		/* A frame whose DWARF names the state it runs moves us to that
		 * state; what is left of the states before it could not be
		 * placed. */
		if (n->L && (is_fn(n, "luaV_execute") || is_fn(n, "lua_resume"))) {
			size_t j;

			for (j = cur; j < ncs; j++)
				if (cs[j].st.addr == n->L)
					break;
			for (; j < ncs && cur < j; cur++)
				while (cs[cur].next < cs[cur].ncis)
					emit_ci(t, ctx, &cs[cur], &o, true);
		}
		live = next_live(cs, ncs, cur);
		c = live < ncs ? &cs[live] : NULL;

		/* A C function whose own frame is gone (a tail call in
		 * optimized C, e.g. io_read jumping to g_read) belongs just
		 * inside the luaD_precall that called it. */
		if (c && (is_fn(n, "luaD_precall") || is_fn(n, "precallC")) &&
		    in_lua_module(l, n) && !c->cis[c->next].is_lua) {
			cur = live;
			emit_ci(t, ctx, c, &o, false);
		}
		if (push_native(n, &o) < 0)
			break;

		live = next_live(cs, ncs, cur);
		c = live < ncs ? &cs[live] : NULL;
		if (c && !c->cis[c->next].is_lua && c->cis[c->next].cfunc &&
		    n->func_start == c->cis[c->next].cfunc) {
			cur = live;
			emit_ci(t, ctx, c, &o, false);
		} else if (c && is_fn(n, "luaV_execute")) {
			cur = live;
			/* Pending C CallInfos were not matched: show them
			 * here rather than lose them. */
			while (c->next < c->ncis && !c->cis[c->next].is_lua)
				emit_ci(t, ctx, c, &o, true);
			while (c->next < c->ncis && c->cis[c->next].is_lua) {
				size_t j = c->next;

				emit_ci(t, ctx, c, &o, false);
				if (lc_lua_ci_starts_run(ctx, c->cis, c->ncis, j))
					break;
			}
		} else if (cur < ncs && is_fn(n, "lua_resume") &&
			   (!n->L || n->L == cs[cur].st.addr)) {
			/* The resumed coroutine ends here: the state we
			 * were emitting from (not skipped ahead). */
			while (cs[cur].next < cs[cur].ncis)
				emit_ci(t, ctx, &cs[cur], &o, true);
			cur++;
		}
	}
	for (; cur < ncs && !o.nomem; cur++)
		while (cs[cur].next < cs[cur].ncis && !o.nomem)
			emit_ci(t, ctx, &cs[cur], &o, true);

	/* --max-frames bounds what is shown, natives and Lua together. */
	if (o.n > max_frames) {
		for (size_t i = max_frames; i < o.n; i++)
			frame_free(&o.frames[i]);
		o.n = max_frames;
		th->partial = true;
		if (!th->note)
			th->note = strdup("stack truncated at the frame limit (--max-frames)");
	}
	th->frames = o.frames;
	th->nframes = o.n;
	for (size_t i = 0; i < o.n; i++) {
		if (o.frames[i].partial)
			th->partial = true;
	}
	if (o.nomem) {
		th->partial = true;
		free(th->note);
		th->note = strdup("out of memory");
	}
	for (size_t i = 0; i < ncs; i++)
		free(cs[i].cis);
	free(cs);
	lc_native_frames_free(nf, nnf);
}

/* Signals whose default action dumps core; anything else in a core
 * (SIGSTOP, 0) is a snapshot taken by gcore or a debugger. */
static bool fatal_signal(int signo)
{
	switch (signo) {
	case SIGQUIT: case SIGILL: case SIGTRAP: case SIGABRT: case SIGBUS:
	case SIGFPE: case SIGSEGV: case SIGXCPU: case SIGXFSZ: case SIGSYS:
		return true;
	default:
		return false;
	}
}

static int add_warning(struct lc_report *r, const char *msg)
{
	char **p = realloc(r->warnings, (r->nwarnings + 1) * sizeof(*p));

	if (!p)
		return -1;
	r->warnings = p;
	r->warnings[r->nwarnings] = strdup(msg);
	if (!r->warnings[r->nwarnings])
		return -1;
	r->nwarnings++;
	return 0;
}

static int thread_cb(Dwfl_Thread *thread, void *arg)
{
	struct lc_target *t = arg;
	pid_t tid = dwfl_thread_tid(thread);
	void *p = realloc(t->threads, (t->nthreads + 1) * sizeof(*t->threads));

	if (!p)
		return DWARF_CB_ABORT;
	t->threads = p;
	memset(&t->threads[t->nthreads], 0, sizeof(*t->threads));
	t->threads[t->nthreads].tid = tid;
	t->nthreads++;
	return DWARF_CB_OK;
}

/* ---- every VM of the process ---- */


/* What the report added to a VM, then what the decoder allocated. */
static void vm_free(struct lc_vm *vm)
{
	for (size_t k = 0; k < vm->nthreads; k++) {
		struct lc_luathread *lt = &vm->threads[k];

		for (size_t j = 0; j < lt->nframes; j++)
			frame_free(&lt->frames[j]);
		free(lt->frames);
		lt->frames = NULL;
		lc_slots_free(lt->slots, lt->nslots);
		lt->slots = NULL;
	}
	free(vm->chain);
	vm->chain = NULL;
	lc_vm_clear(vm);
}

/* Thread candidates of the memory scan, when there was one: the VMs'
 * coroutines come from them instead of a walk of every GC object. */
struct scan_threads {
	bool done;
	uint64_t *cands;
	size_t ncands;
};

static struct lc_vm *vm_add(struct lc_report *r, struct lc_lua_ctx *ctx,
			    const struct scan_threads *sc, uint64_t g,
			    const char *found_by)
{
	struct lc_vm *p, *vm;
	struct lc_error *err;

	for (size_t i = 0; i < r->nvms; i++)
		if (r->vms[i].g == g)
			return &r->vms[i];
	p = realloc(r->vms, (r->nvms + 1) * sizeof(*p));
	if (!p)
		return NULL;
	r->vms = p;
	vm = &r->vms[r->nvms++];
	memset(vm, 0, sizeof(*vm));
	err = sc->done ? lc_vm_decode_scanned(ctx, g, sc->cands, sc->ncands, vm) :
			 lc_vm_decode(ctx, g, vm);
	vm->g = g;
	vm->found_by = found_by;
	if (err) {
		vm->partial = true;
		if (!vm->note)
			vm->note = strdup(lc_error_message(err));
		lc_error_destroy(err);
	}
	return vm;
}

/* Where an OS thread's stack lies, roughly: from its innermost stack
 * pointer to a little past its outermost frame's. */
static void stack_range(const struct lc_thread *th, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < th->nframes; i++) {
		uint64_t sp = th->frames[i].sp;

		if (!sp)
			continue;
		if (sp < *lo)
			*lo = sp;
		if (sp > *hi)
			*hi = sp;
	}
	if (*hi)
		*hi += 1 << 16;
}

/* The Lua-only frames, locals and stack slots of one lua_State. */
static void luathread_frames(struct lc_target *t, struct lc_lua_ctx *ctx,
			     const struct lc_report_options *opts, size_t max,
			     struct lc_luathread *lt)
{
	struct lc_lstate st;
	struct lc_ci *cis = NULL;
	size_t n = 0;
	bool partial = false;
	struct out o = { 0 };
	struct lc_error *err;

	lt->topslot = -1;
	if (lc_lua_state_read(ctx, lt->addr, &st) < 0) {
		lt->partial = true;
		return;
	}
	lt->topslot = (long)((st.top - st.stack) /
			     lc_lua_layout(ctx)->sz_stack_slot);
	err = lc_lua_walk(ctx, &st, max, &cis, &n, &partial);
	if (err) {
		lc_error_destroy(err);
		lt->partial = true;
		return;
	}
	if (partial)
		lt->partial = true;
	/* frame_of[j]: where cis[j] lands in frames[] (5.1 inserts lost
	 * tail calls as frames of their own). */
	size_t *frame_of = calloc(n ? n : 1, sizeof(*frame_of));

	for (size_t j = 0; j < n; j++) {
		if (frame_of)
			frame_of[j] = o.n;
		push_lua_frame(t, ctx, opts && opts->locals, &st, cis, n, j, &o,
			       false);
	}
	lt->frames = o.frames;
	lt->nframes = o.n;
	if (opts && opts->stack) {
		err = lc_lua_stack_slots(ctx, &st, cis, n, opts->residue,
					 &lt->slots, &lt->nslots);
		if (err) {
			lt->partial = true;
			lc_error_destroy(err);
		}
		for (size_t k = 0; k < lt->nslots; k++) {
			long f = lt->slots[k].frame;

			if (f >= 0)
				lt->slots[k].frame = frame_of && (size_t)f < n ?
					(long)frame_of[f] : -1;
		}
	}
	free(frame_of);
	free(cis);
}

static void build_vms(struct lc_target *t, struct lc_lua_ctx *ctx,
		      const struct lc_report_options *opts, size_t max,
		      struct lc_report *r)
{
	struct scan_threads sc = { 0 };
	uint64_t *gs = NULL;
	size_t ng = 0;

	/* One sequential pass over the core's writable memory finds the VMs
	 * idle on no thread and every object that may be a coroutine. */
	if (!opts || !opts->no_scan) {
		struct lc_error *err = lc_vm_scan_threads(ctx, &gs, &ng,
							  &sc.cands, &sc.ncands);

		if (err) {
			add_warning(r, lc_error_message(err));
			lc_error_destroy(err);
		} else {
			sc.done = !t->read_cb;
		}
	}
	/* VMs with a state running on an OS thread. */
	for (size_t i = 0; i < r->nthreads; i++)
		for (size_t j = 0; j < r->threads[i].nstates; j++) {
			struct lc_lstate st;

			if (lc_lua_state_read(ctx, r->threads[i].states[j], &st) == 0)
				vm_add(r, ctx, &sc, st.g, "thread");
		}
	/* States named on the command line. */
	for (size_t i = 0; opts && i < opts->nstates; i++) {
		struct lc_lstate st;
		char *msg;

		if (lc_lua_state_read(ctx, opts->states[i], &st) == 0) {
			struct lc_vm *vm = vm_add(r, ctx, &sc, st.g, "state");
			bool known = false;

			for (size_t k = 0; vm && k < vm->nthreads; k++)
				known |= vm->threads[k].addr == st.addr;
			if (vm && !known) {
				struct lc_luathread *p = realloc(vm->threads,
					(vm->nthreads + 1) * sizeof(*p));

				if (p) {
					vm->threads = p;
					memset(&p[vm->nthreads], 0, sizeof(*p));
					lc_luathread_decode(ctx, &st, &p[vm->nthreads]);
					vm->nthreads++;
				}
			}
		} else if (asprintf(&msg, "0x%" PRIx64 " is not a valid lua_State",
				    opts->states[i]) >= 0) {
			add_warning(r, msg);
			free(msg);
			r->partial = true;
		}
	}
	/* VMs idle on no thread: only the memory scan finds them. */
	for (size_t i = 0; i < ng; i++) {
		size_t before = r->nvms;

		vm_add(r, ctx, &sc, gs[i], "scan");
		if (r->nvms > before)
			r->nvms_scanned++;
	}
	free(gs);
	free(sc.cands);
	if (opts && opts->vm) {
		size_t out = 0;

		for (size_t i = 0; i < r->nvms; i++) {
			if (r->vms[i].g == opts->vm)
				r->vms[out++] = r->vms[i];
			else
				vm_free(&r->vms[i]);
		}
		r->nvms = out;
		if (!out) {
			add_warning(r, "no VM at the address given with --vm");
			r->partial = true;
		}
	}

	/* The states running on OS threads, each thread's outermost first,
	 * with their VMs: read once for all the VMs below. */
	struct running {
		size_t thread;
		uint64_t addr, g;
	} *run = NULL;
	size_t nrun = 0;

	for (size_t i = 0; i < r->nthreads; i++) {
		const struct lc_thread *th = &r->threads[i];

		for (size_t j = th->nstates; j-- > 0;) {
			struct lc_lstate st;
			struct running *p;

			if (lc_lua_state_read(ctx, th->states[j], &st) < 0)
				continue;
			p = realloc(run, (nrun + 1) * sizeof(*p));
			if (!p)
				break;
			run = p;
			run[nrun++] = (struct running){ i, st.addr, st.g };
		}
	}

	/* Per VM: its resume chain on each OS thread (the innermost state
	 * there runs, the others resumed it: "normal"), where errorJmp
	 * buffers lie, and every lua_State's frames. */
	for (size_t v = 0; v < r->nvms; v++) {
		struct lc_vm *vm = &r->vms[v];

		for (size_t a = 0; a < nrun; a++) {
			const struct lc_thread *th = &r->threads[run[a].thread];
			struct lc_luathread *lt = NULL;
			uint64_t *p, lo, hi;
			bool last = true;

			if (run[a].g != vm->g)
				continue;
			for (size_t b = a + 1; b < nrun; b++)
				if (run[b].thread == run[a].thread &&
				    run[b].g == vm->g)
					last = false;
			p = realloc(vm->chain, (vm->nchain + 1) * sizeof(*p));
			if (!p)
				break;
			vm->chain = p;
			vm->chain[vm->nchain++] = run[a].addr;
			for (size_t k = 0; k < vm->nthreads; k++)
				if (vm->threads[k].addr == run[a].addr)
					lt = &vm->threads[k];
			if (!lt)
				continue;
			lt->os_tid = th->tid;
			lt->status = last ? "running" : "normal";
			for (size_t b = a; b-- > 0;)
				if (run[b].thread == run[a].thread &&
				    run[b].g == vm->g) {
					lt->resumed_by = run[b].addr;
					break;
				}
			stack_range(th, &lo, &hi);
			lt->errorjmp_on_stack = lt->errorjmp &&
				lt->errorjmp >= lo && lt->errorjmp < hi;
		}
		for (size_t k = 0; k < vm->nthreads; k++) {
			luathread_frames(t, ctx, opts, max, &vm->threads[k]);
			if (vm->threads[k].partial)
				vm->partial = true;
		}
		if (vm->partial)
			r->partial = true;
	}
	free(run);
}

/* --no-native: keep the Lua frames only. */
static void drop_native(struct lc_thread *th)
{
	size_t out = 0;

	for (size_t i = 0; i < th->nframes; i++) {
		if (th->frames[i].kind == LC_FRAME_NATIVE)
			frame_free(&th->frames[i]);
		else
			th->frames[out++] = th->frames[i];
	}
	th->nframes = out;
}

struct lc_error *lc_report_create(struct lc_target *t,
				  const struct lc_report_options *opts,
				  struct lc_report **ret)
{
	struct lc_report *r = calloc(1, sizeof(*r));
	struct lc_lua_ctx *ctx = NULL;
	struct lc_error *err;
	size_t max = opts && opts->max_frames > 0 ? (size_t)opts->max_frames :
		     DEFAULT_MAX_FRAMES;

	if (!r)
		return &lc_error_nomem;
	lc_target_invalidate(t);
	r->core = lc_strdup_or_null(t->core_path);
	r->executable = lc_strdup_or_null(t->exe_path);
	r->pid = t->pid;
	r->live = t->live;
	r->signo = t->signo;
	r->si_code = t->si_code;
	r->fault_addr = t->fault_addr;

	if (t->truncated) {
		char *msg;

		if (asprintf(&msg, "the core %s is truncated (%zu bytes): memory past its end is missing%s",
			     t->core_path ? t->core_path : "", t->core_size,
			     t->notes_missing ? ", and so are its notes: threads, registers, signal and the list of mapped files" : "") >= 0) {
			add_warning(r, msg);
			free(msg);
		}
		r->partial = true;
	}
	r->exe_build_id = lc_strdup_or_null(t->exe_build_id);
	r->core_build_id = lc_strdup_or_null(t->core_build_id);
	r->build_id_mismatch = t->build_id_mismatch;
	if (t->build_id_mismatch) {
		char *msg;

		if (asprintf(&msg, "the executable %s (build-id %s) is not the program in this core%s%s%s%s%s; it was not used: symbols come from the files the core names",
			     t->exe_path, t->exe_build_id ? t->exe_build_id : "?",
			     t->core_exe_path ? " (" : "",
			     t->core_exe_path ? t->core_exe_path : "",
			     t->core_build_id ? ", build-id " : "",
			     t->core_build_id ? t->core_build_id : "",
			     t->core_exe_path ? ")" : "") >= 0) {
			add_warning(r, msg);
			free(msg);
		}
		r->partial = true;
	}
	for (size_t i = 0; i < t->nthreads && i < 1; i++) {
		if (t->threads[i].have_regs && fatal_signal(t->signo)) {
			memcpy(r->regs, t->threads[i].regs, sizeof(r->regs));
			r->have_regs = true;
		}
	}
	err = lc_lua_ctx_create(t, &ctx);
	if (err) {
		/* Owned by the target: copy the message. */
		add_warning(r, lc_error_message(err));
		r->partial = true;
		ctx = NULL;
	} else {
		const struct lc_layout *l = lc_lua_layout(ctx);

		r->lua_version = strdup(l->version);
		r->lua_module = lc_strdup_or_null(l->module_path);
		if (l->version_guessed)
			add_warning(r, "no lua_ident string: Lua version guessed from the DWARF layout");
	}
	if (t->nthreads == 0 && t->dwfl && t->dwfl_attached)
		dwfl_getthreads(t->dwfl, thread_cb, t);
	r->threads = calloc(t->nthreads ? t->nthreads : 1, sizeof(*r->threads));
	if (!r->threads) {
		lc_lua_ctx_destroy(ctx);
		lc_report_destroy(r);
		return &lc_error_nomem;
	}
	for (size_t i = 0; i < t->nthreads; i++) {
		struct lc_thread *th;

		if (opts && opts->tid && t->threads[i].tid != opts->tid)
			continue;
		th = &r->threads[r->nthreads++];

		th->tid = t->threads[i].tid;
		th->signo = t->threads[i].signo;
		th->crashed = i == 0 && fatal_signal(r->signo);
		if (t->threads[i].name)
			th->name = strdup(t->threads[i].name);
		else if (th->tid == t->pid && t->fname[0])
			th->name = strdup(t->fname);
		build_thread(t, ctx, opts, max, th);
		if (th->partial)
			r->partial = true;
	}
	if (ctx && !(opts && opts->no_vms))
		build_vms(t, ctx, opts, max, r);
	/* After build_vms: it finds errorJmp buffers by the native frames'
	 * stack pointers. */
	for (size_t i = 0; opts && opts->no_native && i < r->nthreads; i++)
		drop_native(&r->threads[i]);
	if (opts && opts->tid && r->nthreads == 0) {
		char *msg;

		if (asprintf(&msg, "no thread %d in this core", opts->tid) >= 0) {
			add_warning(r, msg);
			free(msg);
		}
		r->partial = true;
	}
	lc_lua_ctx_destroy(ctx);
	*ret = r;
	return NULL;
}

static void frame_free(struct lc_frame *f)
{
	lc_vars_free(f->vars, f->nvars);
	free(f->function);
	free(f->module);
	free(f->file);
	free(f->source);
	free(f->short_src);
	free(f->name);
	free(f->global_name);
}

void lc_report_destroy(struct lc_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nthreads; i++) {
		struct lc_thread *th = &r->threads[i];

		for (size_t j = 0; j < th->nframes; j++)
			frame_free(&th->frames[j]);
		free(th->frames);
		free(th->states);
		free(th->name);
		free(th->note);
	}
	free(r->threads);
	for (size_t i = 0; i < r->nvms; i++)
		vm_free(&r->vms[i]);
	free(r->vms);
	for (size_t i = 0; i < r->nwarnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	free(r->core);
	free(r->executable);
	free(r->lua_version);
	free(r->lua_module);
	free(r->exe_build_id);
	free(r->core_build_id);
	free(r);
}
