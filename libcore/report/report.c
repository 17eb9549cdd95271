/* The report: every thread's mixed C+Lua stack (stack.c), then every VM
 * of the process with its coroutines, through the VM seam. */
#include <config.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/stack.h"

#define DEFAULT_MAX_FRAMES	512

/* The report's view of a thread: the stack unit, moved in. */
static void build_thread(struct lc_target *t, struct lc_interp *const *ins,
			 struct lc_pass *const *passes, size_t nin,
			 const struct lc_report_options *opts,
			 size_t max_frames, struct lc_thread *th)
{
	struct lc_stack_options so = {
		.max_frames = max_frames, .locals = opts && opts->locals,
		.interp = nin ? ins[0] : NULL,
	};
	struct lc_stack st;

	lc_stack_decode(t, nin ? passes[0] : NULL, th->tid, &so, &st);
	/* A process with two interpreters (PUC Lua and LuaJIT): the
	 * thread is read with the first whose states it holds. */
	for (size_t i = 1; i < nin && !st.nstates; i++) {
		struct lc_stack other;

		so.interp = ins[i];
		lc_stack_decode(t, passes[i], th->tid, &so, &other);
		if (other.nstates) {
			lc_stack_deinit(&st);
			st = other;
		} else {
			lc_stack_deinit(&other);
		}
	}
	th->frames = st.frames;
	th->nframes = st.nframes;
	th->states = st.states;
	th->nstates = st.nstates;
	th->vm = st.vm;
	th->partial = st.partial != 0;
	th->note = st.note;
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

/* ---- every VM of the process ---- */


/* What the report added to a VM, then what the decoder allocated. */
static void vm_free(struct lc_vm *vm)
{
	for (size_t k = 0; k < vm->nthreads; k++) {
		struct lc_luathread *lt = &vm->threads[k];

		for (size_t j = 0; j < lt->nframes; j++)
			lc_frame_free(&lt->frames[j]);
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

static struct lc_vm *vm_add(struct lc_report *r, const struct lc_interp *in,
			    struct lc_pass *pass, const struct scan_threads *sc,
			    uint64_t g, const char *found_by,
			    const struct lc_report_options *opts)
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
	err = in->ops->decode_vm(pass, g, sc->done, sc->cands, sc->ncands, vm);
	vm->g = g;
	vm->version = lc_strdup_or_null(in->version);
	vm->found_by = found_by;
	if (in->ops->vm_names)
		in->ops->vm_names(pass, g, opts ? opts->vm_name : NULL,
				  &vm->name, &vm->alloc);
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
static void luathread_frames(const struct lc_interp *in, struct lc_pass *pass,
			     const struct lc_report_options *opts, size_t max,
			     struct lc_luathread *lt)
{
	struct lc_vstate st;

	lt->topslot = -1;
	if (!in->ops->state(pass, lt->addr, &st)) {
		lt->partial = true;
		return;
	}
	in->ops->state_frames(pass, &st, max, opts && opts->locals,
			      opts && opts->stack, opts ? opts->residue : 0, lt);
}

static void build_vms(struct lc_target *t, const struct lc_interp *in,
		      struct lc_pass *pass, const struct lc_report_options *opts,
		      size_t max, struct lc_report *r)
{
	struct scan_threads sc = { 0 };
	uint64_t *gs = NULL;
	size_t ng = 0, first = r->nvms;	/* this interpreter's VMs */

	/* One sequential pass over the core's writable memory finds the VMs
	 * idle on no thread and every object that may be a coroutine. */
	if (!opts || !opts->no_scan) {
		struct lc_error *err = in->ops->scan(pass, &gs, &ng, &sc.cands,
						     &sc.ncands);

		if (err) {
			add_warning(r, lc_error_message(err));
			lc_error_destroy(err);
		} else {
			sc.done = t->prog->kind == LC_PROGRAM_CORE;
		}
	}
	/* VMs with a state running on an OS thread. */
	for (size_t i = 0; i < r->nthreads; i++)
		for (size_t j = 0; j < r->threads[i].nstates; j++) {
			struct lc_vstate st;

			if (in->ops->state(pass, r->threads[i].states[j], &st))
				vm_add(r, in, pass, &sc, st.vm, "thread", opts);
		}
	/* States named on the command line. */
	for (size_t i = 0; opts && i < opts->nstates; i++) {
		struct lc_vstate st;
		char *msg;

		if (in->ops->state(pass, opts->states[i], &st)) {
			struct lc_vm *vm = vm_add(r, in, pass, &sc, st.vm, "state", opts);
			bool known = false;

			for (size_t k = 0; vm && k < vm->nthreads; k++)
				known |= vm->threads[k].addr == st.addr;
			if (vm && !known) {
				struct lc_luathread *p = realloc(vm->threads,
					(vm->nthreads + 1) * sizeof(*p));

				if (p) {
					vm->threads = p;
					memset(&p[vm->nthreads], 0, sizeof(*p));
					in->ops->decode_state(pass, &st, &p[vm->nthreads]);
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

		vm_add(r, in, pass, &sc, gs[i], "scan", opts);
		if (r->nvms > before)
			r->nvms_scanned++;
	}
	free(gs);
	free(sc.cands);
	if (opts && opts->vm) {
		size_t out = first;

		for (size_t i = first; i < r->nvms; i++) {
			if (r->vms[i].g == opts->vm)
				r->vms[out++] = r->vms[i];
			else
				vm_free(&r->vms[i]);
		}
		r->nvms = out;
	}

	/* The states running on OS threads, each thread's outermost first,
	 * with their VMs: read once for all the VMs below. */
	struct running {
		size_t thread;
		uint64_t addr, g;
		bool runnable, dying;	/* as the VM seam says */
	} *run = NULL;
	size_t nrun = 0;

	for (size_t i = 0; i < r->nthreads; i++) {
		const struct lc_thread *th = &r->threads[i];

		for (size_t j = th->nstates; j-- > 0;) {
			struct lc_vstate st;
			struct running *p;

			if (!in->ops->state(pass, th->states[j], &st))
				continue;
			p = realloc(run, (nrun + 1) * sizeof(*p));
			if (!p)
				break;
			run = p;
			run[nrun++] = (struct running){ i, st.addr, st.vm,
							st.runnable, st.dying };
		}
	}

	/* Per VM: its resume chain on each OS thread (the innermost state
	 * there runs, the others resumed it: "normal"), where errorJmp
	 * buffers lie, and every lua_State's frames. */
	/* Whether every thread's stack was read whole: not with --thread
	 * (the others were not read), nor with one cut at the frame limit. */
	bool whole = r->nthreads && !(opts && opts->tid);

	for (size_t i = 0; i < r->nthreads; i++)
		if (r->threads[i].partial & LC_PARTIAL_TRUNCATED)
			whole = false;
	for (size_t v = first; v < r->nvms; v++) {
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
			/* (One dying of an error keeps "error".) */
			if (!run[a].dying)
				lt->status = last ? "running" : "normal";
			/* Its status says it runs nowhere (stack.c); one
			 * dying of an error may. */
			if (!run[a].runnable && !run[a].dying) {
				lt->partial = true;
				if (!lt->note)
					asprintf(&lt->note,
						 "its status (%d) says it does not run, but thread %d runs it",
						 lt->raw_status, th->tid);
			}
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
		/* LuaJIT's g->cur_L names the thread the VM runs (or ran
		 * last): it must be the innermost of the VM's states on the
		 * stacks (lj_err.c before 2023-09 left it stale after an
		 * error through a coroutine). */
		if (vm->vmstate && vm->cur_L && !vm->cur_L_note && whole) {
			uint64_t runs = 0;

			for (size_t a = 0; a < nrun; a++)
				if (run[a].g == vm->g)
					runs = run[a].addr;	/* the last */
			if (runs && runs != vm->cur_L)
				asprintf(&vm->cur_L_note,
					 "g->cur_L 0x%" PRIx64 " is not the thread the stacks run (0x%" PRIx64 ")",
					 vm->cur_L, runs);
		}
		/* A state running, or resuming another, is on the stack
		 * of the OS thread that runs it: one found on none (a
		 * native frame's word that named it is damaged, or its
		 * status is) is marked, where every stack was read whole. */
		for (size_t k = 0; k < vm->nthreads && whole; k++) {
			struct lc_luathread *lt = &vm->threads[k];

			if (lt->os_tid || !lt->status ||
			    (strcmp(lt->status, "running") != 0 &&
			     strcmp(lt->status, "normal") != 0))
				continue;
			lt->partial = true;
			if (!lt->note)
				asprintf(&lt->note,
					 "its status says it %s, but no thread's stack runs it",
					 lt->status[0] == 'r' ? "runs" : "resumed another");
		}
		for (size_t k = 0; k < vm->nthreads; k++) {
			luathread_frames(in, pass, opts, max, &vm->threads[k]);
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
			lc_frame_free(&th->frames[i]);
		else
			th->frames[out++] = th->frames[i];
	}
	th->nframes = out;
}

/* Something unreadable anywhere makes everything that holds it partial:
 * a frame with a value read in part, a thread with such a frame, a VM
 * with such a thread, and the report. */
static bool frames_partial(struct lc_frame *f, size_t n)
{
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < f[i].nvars; k++)
			if (f[i].vars[k].value.partial)
				f[i].partial = true;
		any |= f[i].partial;
	}
	return any;
}

static void propagate_partial(struct lc_report *r)
{
	for (size_t i = 0; i < r->nthreads; i++) {
		struct lc_thread *th = &r->threads[i];

		if (frames_partial(th->frames, th->nframes))
			th->partial = true;
		r->partial |= th->partial;
	}
	for (size_t v = 0; v < r->nvms; v++) {
		struct lc_vm *vm = &r->vms[v];

		for (size_t k = 0; k < vm->nthreads; k++) {
			struct lc_luathread *lt = &vm->threads[k];

			if (frames_partial(lt->frames, lt->nframes))
				lt->partial = true;
			vm->partial |= lt->partial;
		}
		r->partial |= vm->partial;
	}
}

struct lc_error *lc_report_create(struct lc_target *t,
				  const struct lc_report_options *opts,
				  struct lc_report **ret)
{
	struct lc_report *r = calloc(1, sizeof(*r));
	struct lc_program *p = t->prog;
	const struct lc_error *why;
	struct lc_interp *const *all;
	struct lc_interp *ins[4];
	struct lc_pass *passes[4];
	size_t nall, nin = 0;
	struct lc_error *err;
	size_t max = opts && opts->max_frames > 0 ? (size_t)opts->max_frames :
		     DEFAULT_MAX_FRAMES;

	if (!r)
		return &lc_error_nomem;
	lc_target_invalidate(t);
	/* The interpreter's DWARF is looked for first: the search may find
	 * files that cannot be used (prog/core.c), which the notes below
	 * list. */
	(void)lc_target_interp(t, NULL);
	r->core = lc_strdup_or_null(p->core_path);
	r->executable = lc_strdup_or_null(p->exe_path);
	r->pid = p->pid;
	r->live = (p->kind == LC_PROGRAM_LIVE);
	r->not_stopped = p->not_stopped;
	r->signo = p->signo;
	r->si_code = p->si_code;
	r->fault_addr = p->fault_addr;

	if (p->truncated) {
		char *msg;

		if (asprintf(&msg, "the core %s is truncated (%zu bytes): memory past its end is missing%s",
			     p->core_path ? p->core_path : "", p->core_size,
			     p->notes_missing ? ", and so are its notes: threads, registers, signal and the list of mapped files" : "") >= 0) {
			add_warning(r, msg);
			free(msg);
		}
		r->partial = true;
	}
	if (p->damage) {
		add_warning(r, p->damage);
		r->partial = true;
	}
	if (p->thread_copies || p->threads_over) {
		char *msg;

		if (p->thread_copies &&
		    asprintf(&msg, "%zu thread notes (NT_PRSTATUS) of the core repeat the tid or the stack pointer of another: copies, not threads of the process; left out",
			     p->thread_copies) >= 0) {
			add_warning(r, msg);
			free(msg);
		}
		if (p->threads_over &&
		    asprintf(&msg, "the core has %zu more thread notes than the %zu listed: left out",
			     p->threads_over, p->nthreads) >= 0) {
			add_warning(r, msg);
			free(msg);
		}
		r->partial = true;
	}
	r->exe_build_id = lc_strdup_or_null(p->exe_build_id);
	r->core_build_id = lc_strdup_or_null(p->core_build_id);
	r->build_id_mismatch = p->build_id_mismatch;
	if (p->build_id_mismatch) {
		char *msg;

		if (asprintf(&msg, "the executable %s (build-id %s) is not the program in this core%s%s%s%s%s; it was not used: symbols come from the files the core names",
			     p->exe_path, p->exe_build_id ? p->exe_build_id : "?",
			     p->core_exe_path ? " (" : "",
			     p->core_exe_path ? p->core_exe_path : "",
			     p->core_build_id ? ", build-id " : "",
			     p->core_build_id ? p->core_build_id : "",
			     p->core_exe_path ? ")" : "") >= 0) {
			add_warning(r, msg);
			free(msg);
		}
		r->partial = true;
	}
	for (size_t i = 0; i < p->nmissing_listed; i++) {
		const struct lc_program_missing *m = &p->missing[i];
		char *msg;
		int n;

		if (m->exe)
			n = asprintf(&msg, "the executable %s named in the core cannot be used (%s%s%s): its symbols, and Lua if it is linked into it, cannot be read; give the executable the core ran as the second argument (CORE EXECUTABLE)",
				     m->path, m->why,
				     m->build_id ? "; the core's build-id for it is " : "",
				     m->build_id ? m->build_id : "");
		else
			n = asprintf(&msg, "the file %s named in the core cannot be used (%s%s%s): its functions are not named, and Lua, if it is in that file, cannot be read; put the file the core ran at that path",
				     m->path, m->why,
				     m->build_id ? "; the core's build-id for it is " : "",
				     m->build_id ? m->build_id : "");
		if (n >= 0) {
			add_warning(r, msg);
			free(msg);
		}
		r->partial = true;
	}
	if (p->nmissing > p->nmissing_listed) {
		char *msg;

		if (asprintf(&msg, "%zu more files named in the core cannot be used",
			     p->nmissing - p->nmissing_listed) >= 0) {
			add_warning(r, msg);
			free(msg);
		}
	}
	for (size_t i = 0; i < p->nthreads && i < 1; i++) {
		if (p->threads[i].have_regs && fatal_signal(p->signo)) {
			memcpy(r->regs, p->threads[i].regs, sizeof(r->regs));
			r->have_regs = true;
		}
	}
	all = lc_target_interps(t, &why, &nall);
	for (size_t i = 0; i < nall && nin < LC_ARRAY_SIZE(ins); i++) {
		struct lc_interp *in = all[i];
		struct lc_lua_found *lf;

		err = in->ops->begin(in, &passes[nin]);
		if (err) {
			/* The target's: copy the message. */
			add_warning(r, lc_error_message(err));
			r->partial = true;
			lc_error_destroy(err);
			continue;
		}
		ins[nin++] = in;
		lf = realloc(r->luas, (r->nluas + 1) * sizeof(*lf));
		if (!lf)
			continue;
		r->luas = lf;
		lf = &r->luas[r->nluas++];
		lf->version = lc_strdup_or_null(in->version);
		/* By the name its frames give the module. */
		{
			Dwfl_Module *m = p->dwfl && in->module_start ?
				dwfl_addrmodule(p->dwfl, in->module_start) : NULL;
			const char *mn = lc_program_module_name(p, m);

			lf->module = lc_strdup_or_null(mn ? mn : in->module);
		}
		lf->layout = lc_strdup_or_null(in->layout_note);
		if (in->version_guessed)
			add_warning(r, "no lua_ident string: Lua version guessed from the DWARF layout");
		if (in->version_warning)
			add_warning(r, in->version_warning);
	}
	if (!nall) {
		add_warning(r, lc_error_message(why));
		r->partial = true;
	} else if (r->nluas) {
		r->lua_version = lc_strdup_or_null(r->luas[0].version);
		r->lua_module = lc_strdup_or_null(r->luas[0].module);
		r->lua_layout = lc_strdup_or_null(r->luas[0].layout);
	}
	lc_program_list_threads(p);
	r->threads = calloc(p->nthreads ? p->nthreads : 1, sizeof(*r->threads));
	if (!r->threads) {
		for (size_t i = 0; i < nin; i++)
			ins[i]->ops->end(passes[i]);
		lc_report_destroy(r);
		return &lc_error_nomem;
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		struct lc_thread *th;

		if (opts && opts->tid && p->threads[i].tid != opts->tid)
			continue;
		th = &r->threads[r->nthreads++];

		th->tid = p->threads[i].tid;
		th->signo = p->threads[i].signo;
		th->crashed = i == 0 && fatal_signal(r->signo);
		if (p->threads[i].name)
			th->name = strdup(p->threads[i].name);
		else if (th->tid == p->pid && p->fname[0])
			th->name = strdup(p->fname);
		build_thread(t, ins, passes, nin, opts, max, th);
		if (th->partial)
			r->partial = true;
	}
	for (size_t i = 0; i < nin && !(opts && opts->no_vms); i++)
		build_vms(t, ins[i], passes[i], opts, max, r);
	if (nin && opts && opts->vm && !opts->no_vms && !r->nvms) {
		add_warning(r, "no VM at the address given with --vm");
		r->partial = true;
	}
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
	propagate_partial(r);
	for (size_t i = 0; i < nin; i++)
		ins[i]->ops->end(passes[i]);
	*ret = r;
	return NULL;
}

void lc_report_destroy(struct lc_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nthreads; i++) {
		struct lc_thread *th = &r->threads[i];

		for (size_t j = 0; j < th->nframes; j++)
			lc_frame_free(&th->frames[j]);
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
	free(r->lua_layout);
	for (size_t i = 0; i < r->nluas; i++) {
		free(r->luas[i].version);
		free(r->luas[i].module);
		free(r->luas[i].layout);
	}
	free(r->luas);
	free(r->exe_build_id);
	free(r->core_build_id);
	free(r);
}
