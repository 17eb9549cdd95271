/* The PUC Lua family (5.1-5.5) behind the VM seam (vm/vm.h): the
 * interpreter is the layout read from DWARF, a pass is a decoder context,
 * and each operation is one of the decoder's functions (decode.c,
 * values.c, heap.c) in the seam's terms.  The names of PUC Lua's C
 * functions that native frames are matched against live here only. */
#include <config.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/vm.h"
#include "vm/puc/heap.h"
#include "vm/puc/objects.h"
#include "vm/puc/layout.h"
#include "vm/puc/puc.h"
#include "vm/puc/values.h"

struct lc_pass {
	struct lc_lua_ctx *ctx;
	struct lc_interp *in;
	struct lc_seen seen;		/* is_state's answers */
	void *heap;			/* objects.c's cache */
};

_Static_assert(sizeof(struct lc_lstate) <= sizeof(((struct lc_vstate *)0)->priv),
	       "struct lc_lstate fits in lc_vstate.priv");

static const struct lc_lstate *lstate(const struct lc_vstate *st)
{
	return (const struct lc_lstate *)st->priv;
}

#define VALIDATE_VMS	16	/* VMs a built-in layout is checked on */

/* A built-in layout (l->builtin: the module has no DWARF, or --layout)
 * or one from another file's DWARF (--types) is used only
 * once it reads this program's memory as a VM's: the memory scan finds
 * a global_State whose main thread points back to it (thread tag, l_G,
 * stack bounds, a current CallInfo in writable memory); that thread's
 * CallInfo chain ends at its base CallInfo.  And the global _VERSION,
 * where the base library set it, is looked up: found, the tables and
 * strings are as the layout has them (a host may set it to its own
 * text: what it reads is said, not held against the layout).  The
 * number format comes from math.pi and math.maxinteger
 * (lc_lua_number_format): a built-in layout, made for the default
 * configuration, takes 4-byte numbers where they read so (LUA_32BITS,
 * whose values keep their 8 bytes for pointers); a file's must agree;
 * neither format: refused.  *note (malloc'd) says what was checked; an
 * error, which check failed. */
static struct lc_error *validate_layout(struct lc_program *p,
					 struct lc_layout *l, char **note)
{
	struct lc_lua_ctx *ctx;
	uint64_t *vms = NULL;
	size_t nvms = 0, walked = 0, broken = 0, versions = 0;
	unsigned nsize = 0, isize = 0;
	char numbers[192] = "", bad_numbers[160] = "";
	char want[24], bad_version[LC_VM_NAME_MAX + 1] = "";
	char what[PATH_MAX + 256], source[PATH_MAX + 128];
	struct lc_error *err;

	/* What is checked, for the note and the errors. */
	if (l->types_path) {
		snprintf(source, sizeof(source), "layout from the DWARF of %s (--types)",
			 l->types_path);
		snprintf(what, sizeof(what), "the %s", source);
	} else if (l->forced) {
		snprintf(source, sizeof(source), "built-in layout of Lua %s (--layout)",
			 l->version);
		snprintf(what, sizeof(what), "the %s", source);
	} else {
		snprintf(source, sizeof(source), "built-in layout of Lua %s (the module has no DWARF)",
			 l->version);
		snprintf(what, sizeof(what), "%s has no DWARF, and the built-in layout of Lua %s",
			 l->module_path ? l->module_path : "the Lua module",
			 l->version);
	}
	*note = NULL;
	err = lc_lua_ctx_create(p, l, NULL, &ctx);
	if (err)
		return err;
	snprintf(want, sizeof(want), "Lua %d.%d", l->major / 100, l->major % 100);
	err = lc_vm_scan(ctx, &vms, &nvms);
	for (size_t i = 0; !err && i < nvms && i < VALIDATE_VMS; i++) {
		struct lc_lstate st;
		struct lc_ci *cis = NULL;
		size_t n = 0;
		bool partial = false;
		uint64_t m;
		char *v;

		if (lc_lua_mainthread(ctx, vms[i], &m) < 0 ||
		    lc_lua_state_read(ctx, m, &st) < 0 ||
		    lc_lua_walk(ctx, &st, 1u << 20, &cis, &n, &partial) ||
		    partial)
			broken++;
		else
			walked++;
		free(cis);
		if (!nsize && !isize && !bad_numbers[0] &&
		    lc_lua_number_format(ctx, vms[i], &nsize, &isize,
					 bad_numbers, sizeof(bad_numbers)) < 0 &&
		    !bad_numbers[0])
			snprintf(bad_numbers, sizeof(bad_numbers), "unreadable");
		v = lc_lua_global_string(ctx, vms[i], "_VERSION");
		if (v && strcmp(v, want) == 0)
			versions++;
		else if (v && !bad_version[0])
			snprintf(bad_version, sizeof(bad_version), "%s", v);
		free(v);
	}
	lc_lua_ctx_destroy(ctx);
	free(vms);
	if (err)
		return err;
	if (!nvms)
		return lc_error_create(LC_ERR_UNSUPPORTED,
			"%s does not fit this program's memory: the scan of its writable memory found no global_State whose main thread points back to it.  A Lua whose structs differ from the release's (fields added, a changed luaconf.h) cannot be read with it: give its layout with --types FILE (any ELF with its DWARF, e.g. its lstate.c compiled with -g)",
			what);
	if (!walked)
		return lc_error_create(LC_ERR_UNSUPPORTED,
			"%s does not fit this program's memory: of the %zu VM%s the scan found, no main thread's CallInfo chain ends at its base CallInfo: give its layout with --types FILE",
			what, nvms, nvms == 1 ? "" : "s");
	/* The numbers: what math shows against what the layout says. */
	{
		unsigned ln = l->tv.n.size, li = l->tv.i.size;
		bool other = (nsize && nsize != ln) || (isize && isize != li);

		if (bad_numbers[0] || (other && l->types_path))
			return lc_error_create(LC_ERR_UNSUPPORTED,
				"%s does not fit this program's numbers: %s: give the layout of its build with --types FILE",
				what, bad_numbers[0] ? bad_numbers :
				"math.pi or math.maxinteger has another size than the file's lua_Number or lua_Integer");
		if (other) {
			if (nsize)
				l->tv.n.size = nsize;
			if (isize)
				l->tv.i.size = isize;
		}
		if (nsize || isize) {
			char n[48] = "", i[48] = "";

			if (nsize)
				snprintf(n, sizeof(n), "math.pi a float of %u bytes", nsize);
			if (isize)
				snprintf(i, sizeof(i), "math.maxinteger an integer of %u bytes", isize);
			snprintf(numbers, sizeof(numbers), "; numbers: %s%s%s%s",
				 n, n[0] && i[0] ? ", " : "", i,
				 other ? " (not the release's default: LUA_32BITS)" : "");
		} else
			snprintf(numbers, sizeof(numbers), "; numbers not checked (no math library)");
	}
	if (asprintf(note, "%s, validated against memory: the scan found %zu VM%s; %zu main thread%s with a CallInfo chain ending at base_ci%s%s%s%s",
		     source, nvms, nvms == 1 ? "" : "s", walked,
		     walked == 1 ? "" : "s",
		     broken ? " (" : "", broken ? "others broken" : "",
		     broken ? ")" : "", numbers) < 0)
		*note = NULL;
	if (*note && (versions || bad_version[0])) {
		char *more;

		if (asprintf(&more, "%s; _VERSION is \"%s\"", *note,
			     versions ? want : bad_version) >= 0) {
			free(*note);
			*note = more;
		}
	}
	return NULL;
}

static struct lc_error *puc_open(struct lc_program *p, struct lc_interp **ret)
{
	struct lc_layout *l;
	struct lc_interp *in;
	char *note = NULL;
	struct lc_error *err = lc_layout_open(p, &l);

	if (err)
		return err;
	if ((l->builtin || l->types_path) &&
	    (err = validate_layout(p, l, &note))) {
		lc_layout_destroy(l);
		return err;
	}
	if (!note && asprintf(&note, "%s of %s", l->builtin ?
			      "built-in layout" : "DWARF",
			      l->module_path ? l->module_path : "the Lua module") < 0)
		note = NULL;
	in = calloc(1, sizeof(*in));
	if (!in) {
		free(note);
		lc_layout_destroy(l);
		return &lc_error_nomem;
	}
	in->layout_note = note;
	in->ops = &lc_puc_ops;
	in->prog = p;
	in->version = l->version;
	in->module = l->module_path;
	in->module_start = l->module_start;
	in->module_end = l->module_end;
	in->version_guessed = l->version_guessed;
	in->version_warning = l->version_warning[0] ? l->version_warning :
			      NULL;
	in->priv = l;
	in->cache = lc_lua_cache_create();
	*ret = in;
	return NULL;
}

static void puc_close(struct lc_interp *in)
{
	free((char *)in->layout_note);
	lc_layout_destroy(in->priv);
	lc_lua_cache_destroy(in->cache);
	free(in);
}

static struct lc_error *puc_begin(struct lc_interp *in, struct lc_pass **ret)
{
	struct lc_pass *pass = calloc(1, sizeof(*pass));
	struct lc_error *err;

	if (!pass)
		return &lc_error_nomem;
	if (in->cache) {
		lc_lua_cache_set_reuse(in->cache, in->reuse_s);
		lc_lua_cache_set_profile(in->cache, in->profile_frames);
	}
	err = lc_lua_ctx_create(in->prog, in->priv, in->cache, &pass->ctx);
	if (err) {
		free(pass);
		return err;
	}
	pass->in = in;
	*ret = pass;
	return NULL;
}

static void puc_end(struct lc_pass *pass)
{
	if (!pass)
		return;
	lc_lua_ctx_destroy(pass->ctx);
	lc_puc_heap_cache_free(pass->heap);
	free(pass);
}

static void to_vstate(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
		      struct lc_vstate *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->addr = st->addr;
	ret->vm = st->g;
	ret->active = lc_lua_state_active(st);
	ret->runnable = ret->active && st->status == 0;
	/* ldo.c luaD_throw with no errorJmp sets the status, keeps the
	 * CallInfos and calls the panic function (5.4.3+ resets the
	 * thread first: no frames are left). */
	if (ret->active && st->status >= 2 && LC_HAS(lc_lua_layout(ctx)->L.errorJmp)) {
		uint64_t ej = 1;

		lc_read_u64(lc_lua_mem(ctx), st->addr +
			    (uint64_t)lc_lua_layout(ctx)->L.errorJmp.off, &ej);
		ret->dying = ej == 0;
	}
	/* A resumed thread counts its C calls on from its resumer's, except
	 * in a 5.1 without baseCcalls (5.1.1): resume sets the count to
	 * 0, so it orders nothing and the native frames' order stands. */
	if (!(lc_lua_layout(ctx)->major == 501 &&
	      !LC_HAS(lc_lua_layout(ctx)->L.baseCcalls))) {
		unsigned depth = 0;

		lc_lua_state_ccalls(ctx, st, &depth);
		ret->resume_depth = depth;
	}
	memcpy(ret->priv, st, sizeof(*st));
}

static bool puc_state(struct lc_pass *pass, uint64_t addr,
		      struct lc_vstate *ret)
{
	struct lc_lstate st;

	if (lc_lua_state_read(pass->ctx, addr, &st) < 0)
		return false;
	to_vstate(pass->ctx, &st, ret);
	return true;
}

static bool state_reads(void *arg, uint64_t addr)
{
	struct lc_pass *pass = arg;
	struct lc_lstate st;

	return lc_lua_state_read(pass->ctx, addr, &st) == 0;
}

static bool puc_is_state(void *arg, uint64_t addr)
{
	struct lc_pass *pass = arg;

	return lc_seen_check(&pass->seen, addr, state_reads, pass);
}

static struct lc_error *puc_walk(struct lc_pass *pass,
				 const struct lc_vstate *st, size_t max,
				 struct lc_vwalk *ret)
{
	struct lc_ci *cis = NULL;
	size_t n = 0;
	bool partial = false;
	struct lc_error *err;

	struct lc_lstate run = *lstate(st);

	memset(ret, 0, sizeof(*ret));
	/* A status the native stack contradicts is damage: the CallInfos
	 * are read as a running state's (a yield's moved func is not
	 * looked for). */
	if (st->status_damaged)
		run.status = 0;
	err = lc_lua_walk(pass->ctx, &run, max, &cis, &n, &partial);
	ret->partial = partial;
	if (err)
		return err;
	ret->after_cfunc = lc_lua_ci_after(pass->ctx, &run);
	ret->frames = calloc(n ? n : 1, sizeof(*ret->frames));
	if (!ret->frames) {
		free(cis);
		return &lc_error_nomem;
	}
	for (size_t i = 0; i < n; i++) {
		ret->frames[i].addr = cis[i].addr;
		ret->frames[i].kind = cis[i].is_lua ? LC_VFRAME_LUA : LC_VFRAME_C;
		ret->frames[i].cfunc = cis[i].cfunc;
	}
	ret->n = n;
	ret->priv = cis;
	return NULL;
}

static void puc_walk_free(struct lc_vwalk *w)
{
	free(w->priv);
	w->priv = NULL;
}

static bool puc_starts_run(struct lc_pass *pass, const struct lc_vwalk *w,
			   size_t i)
{
	return lc_lua_ci_starts_run(pass->ctx, w->priv, w->n, i);
}

static unsigned puc_run_marks(struct lc_pass *pass, const struct lc_vstate *st,
			      const struct lc_vwalk *w, size_t i,
			      const uint64_t *words, size_t n)
{
	const struct lc_ci *cis = w->priv;

	return i < w->n ? lc_lua_run_marks(pass->ctx, lstate(st), &cis[i],
					   words, n) : 0;
}

/* After a resume from a yield, resume and unroll (ldo.c, 5.2+) finish
 * the frames below the one that yielded one by one: Lua frames in a new
 * luaV_execute each, C functions through their continuation.  Until then
 * they run on no native frame.  5.1 yields only from a hook or a C
 * function called by Lua, and its resume runs every Lua frame left in
 * one luaV_execute. */
static bool puc_continued(struct lc_pass *pass, const struct lc_vwalk *w,
			  size_t i)
{
	const struct lc_ci *cis = w->priv;

	if (lc_lua_layout(pass->ctx)->major == 501 || i >= w->n)
		return false;
	return !cis[i].bad && (cis[i].is_lua || cis[i].continues);
}

/* Push the frame of cis[j] (and, 5.1, the lost tail calls it hides). */
static void push_frame(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
		       const struct lc_ci *cis, size_t n, size_t j, bool locals,
		       bool unplaced, struct lc_frames *o)
{
	struct lc_frame *f = lc_frames_push(o);

	if (!f)
		return;
	lc_lua_frame(ctx, st, cis, n, j, f);
	f->unplaced = unplaced;
	if (f->cfunc)
		f->function = lc_strdup_or_null(
			lc_program_symbol(lc_lua_program(ctx), f->cfunc));
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
		struct lc_frame *tf = lc_frames_push(o);

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
		tf->traceback = lc_lua_traceback_line(ctx, tf);
	}
}

/* luaV_execute's locals that say where the frame it runs is (in the
 * order of LC_RUNVAR_*): decode.c, lc_lua_live_pc. */
static const char *const puc_run_vars[] = { "pc", "base", "ci", "cl", NULL };
_Static_assert(LC_NRUNVARS <= LC_FRAME_VARS, "run vars fit a native frame");

static void puc_frame(struct lc_pass *pass, const struct lc_vstate *st,
		      const struct lc_vwalk *w, size_t i, bool locals,
		      bool unplaced, const struct lc_native_frame *runner,
		      struct lc_frames *out)
{
	struct lc_ci *cis = w->priv;

	if (runner && cis[i].is_lua && !cis[i].livepc) {
		struct lc_runvars rv = { .mask = 0 };

		for (unsigned k = 0; k < LC_NRUNVARS; k++)
			if (runner->varmask & (1u << k)) {
				rv.vals[k] = runner->vars[k];
				rv.mask |= 1u << k;
			}
		lc_lua_live_pc(pass->ctx, lstate(st), &cis[i], &rv);
	}
	push_frame(pass->ctx, lstate(st), cis, w->n, i, locals, unplaced, out);
}

static unsigned puc_roles(const struct lc_interp *in, const char *fn)
{
	/* The collector's entry points: a stack through one of them is
	 * doing collection work (allocation alone goes through lgc.c too,
	 * in luaC_link or luaC_newobj, and is not). */
	static const char *const gc[] = {
		"luaC_step", "luaC_fullgc", "luaC_runtilstate",
		"luaC_freeallobjects", "luaC_checkGC",
	};
	unsigned r = 0;

	if (!fn)
		return 0;
	if (strcmp(fn, "luaV_execute") == 0)
		r |= LC_ROLE_RUNS_LUA;
	if (strcmp(fn, "lua_resume") == 0)
		r |= LC_ROLE_RESUME;
	/* luaD_precall (5.4.4+: precallC) calls C functions; in 5.4.0 and
	 * 5.4.1 luaD_call calls them itself. */
	if (strcmp(fn, "luaD_precall") == 0 || strcmp(fn, "precallC") == 0)
		r |= LC_ROLE_CALLS_C;
	if (strcmp(fn, "luaD_call") == 0 && in && in->priv) {
		const struct lc_layout *l = in->priv;

		if (l->major == 504 && l->release < 50402)
			r |= LC_ROLE_CALLS_C;
	}
	for (size_t i = 0; i < LC_ARRAY_SIZE(gc); i++)
		if (strcmp(fn, gc[i]) == 0)
			r |= LC_ROLE_GC;
	return r;
}

/* The interpreter's own: its source files (DWARF), else its names
 * (luaV_execute, lua_pcallk, luaL_checkinteger, luai_...), else code of
 * a module of its own (liblua5.4.so) with no name.  The files are those
 * of every release 5.1-5.5: the core, lauxlib.c and the standard
 * library (whose functions are C functions called from Lua, already a
 * frame of their own, and whose helpers are their work). */
static bool puc_own_frame(const struct lc_interp *in, const struct lc_frame *f)
{
	static const char *const files[] = {
		"lapi.c", "lauxlib.c", "lbaselib.c", "lbitlib.c", "lcode.c",
		"lcorolib.c", "lctype.c", "ldblib.c", "ldebug.c", "ldo.c",
		"ldump.c", "lfunc.c", "lgc.c", "linit.c", "liolib.c",
		"llex.c", "lmathlib.c", "lmem.c", "loadlib.c", "lobject.c",
		"lopcodes.c", "loslib.c", "lparser.c", "lstate.c",
		"lstring.c", "lstrlib.c", "ltable.c", "ltablib.c", "ltm.c",
		"lundump.c", "lutf8lib.c", "lvm.c", "lzio.c", "onelua.c",
	};
	const char *fn = f->function;

	if (f->kind == LC_FRAME_LUA)
		return false;
	if (f->file) {
		const char *b = lc_base_name(f->file);

		for (size_t i = 0; i < LC_ARRAY_SIZE(files); i++)
			if (strcmp(b, files[i]) == 0)
				return true;
	}
	if (fn && strncmp(fn, "lua", 3) == 0 &&
	    ((fn[3] >= 'A' && fn[3] <= 'Z' && fn[4] == '_') ||
	     fn[3] == '_' || strncmp(fn + 3, "i_", 2) == 0))
		return true;
	/* No name to tell by: code of the interpreter's own module, when
	 * that is a library and not the program. */
	return !fn && in && in->module && f->module &&
	       strcmp(in->module, f->module) == 0 &&
	       strstr(lc_base_name(in->module), ".so");
}

/* The Lua-only frames, locals and stack slots of one lua_State. */
static uint64_t puc_resumes(struct lc_pass *pass, const struct lc_vstate *vs)
{
	struct lc_lua_ctx *ctx = pass->ctx;
	const struct lc_lstate *st = lstate(vs);
	struct lc_ci *cis = NULL;
	struct lc_tvalue arg;
	struct lc_lstate co;
	struct lc_error *err;
	uint64_t ret = 0;
	size_t n = 0;
	bool partial = false;

	err = lc_lua_walk(ctx, st, 1, &cis, &n, &partial);
	if (err) {
		lc_error_destroy(err);
		return 0;
	}
	/* The slot above the function's is its first argument; a thread
	 * there is checked as a state whole (its tag, its l_G's round
	 * trip, its stack) before it counts. */
	if (n && !cis[0].is_lua && !cis[0].bad &&
	    lc_lua_read_tvalue(ctx, cis[0].func + lc_lua_layout(ctx)->sz_stack_slot,
			       &arg) == 0 &&
	    arg.value && arg.value != st->addr &&
	    lc_lua_state_read(ctx, arg.value, &co) == 0 && co.g == st->g &&
	    lc_lua_state_active(&co) && co.status == 0)
		ret = arg.value;
	free(cis);
	return ret;
}

static void puc_state_frames(struct lc_pass *pass, const struct lc_vstate *vs,
			     size_t max, bool locals, bool slots, int residue,
			     struct lc_luathread *lt)
{
	struct lc_lua_ctx *ctx = pass->ctx;
	const struct lc_lstate *st = lstate(vs);
	struct lc_ci *cis = NULL;
	size_t n = 0;
	bool partial = false;
	struct lc_frames o = { 0 };
	struct lc_error *err;
	size_t *frame_of;

	lt->topslot = (long)((st->top - st->stack) /
			     lc_lua_layout(ctx)->sz_stack_slot);
	err = lc_lua_walk(ctx, st, max, &cis, &n, &partial);
	if (err) {
		lc_error_destroy(err);
		lt->partial = true;
		return;
	}
	if (partial)
		lt->partial = true;
	/* frame_of[j]: where cis[j] lands in frames[] (5.1 inserts lost
	 * tail calls as frames of their own). */
	frame_of = calloc(n ? n : 1, sizeof(*frame_of));
	for (size_t j = 0; j < n; j++) {
		if (frame_of)
			frame_of[j] = o.n;
		push_frame(ctx, st, cis, n, j, locals, false, &o);
	}
	lt->frames = o.v;
	lt->nframes = o.n;
	/* A frame that could not be read makes the thread (and so the
	 * report) partial, as on a running thread's stack. */
	for (size_t k = 0; k < o.n; k++) {
		if (!o.v[k].partial)
			continue;
		lt->partial = true;
		if (!lt->note &&
		    asprintf(&lt->note, "Lua frame %zu (CallInfo 0x%" PRIx64
			     ") could not be read in full", k, o.v[k].ci) < 0)
			lt->note = NULL;
		break;
	}
	if (slots) {
		err = lc_lua_stack_slots(ctx, st, cis, n, residue, &lt->slots,
					 &lt->nslots);
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

static struct lc_error *puc_scan(struct lc_pass *pass, uint64_t **vms,
				 size_t *nvms, uint64_t **threads,
				 size_t *nthreads)
{
	return lc_vm_scan_threads(pass->ctx, vms, nvms, threads, nthreads);
}

static struct lc_error *puc_decode_vm(struct lc_pass *pass, uint64_t vm,
				      bool scanned, const uint64_t *threads,
				      size_t nthreads, struct lc_vm *ret)
{
	return scanned ? lc_vm_decode_scanned(pass->ctx, vm, threads, nthreads,
					      ret) :
			 lc_vm_decode(pass->ctx, vm, ret);
}

static void puc_vm_names(struct lc_pass *pass, uint64_t vm, const char *global,
			 char **name, char **alloc)
{
	uint64_t f = lc_lua_allocator(pass->ctx, vm);
	const char *sym = f ? lc_program_symbol(lc_lua_program(pass->ctx), f) :
			      NULL;

	*name = global ? lc_lua_global_string(pass->ctx, vm, global) : NULL;
	*alloc = sym ? strdup(sym) : NULL;
}

static void puc_decode_state(struct lc_pass *pass, const struct lc_vstate *st,
			     struct lc_luathread *ret)
{
	lc_luathread_decode(pass->ctx, lstate(st), ret);
}

static struct lc_error *puc_object(struct lc_pass *pass,
				   enum lc_object_kind kind, uint64_t addr,
				   size_t max, struct lc_object **ret)
{
	return lc_lua_object(pass->ctx, kind, addr, max, ret);
}

static size_t puc_hot(struct lc_pass *pass, const uint64_t *states,
		      size_t nstates, const struct lc_frame *frames,
		      size_t nframes, uint64_t (*r)[2], size_t room)
{
	const struct lc_layout *l = lc_lua_layout(pass->ctx);
	size_t n = 0;

#define ADD(a, len) do { if (n < room) { r[n][0] = (a); r[n][1] = (len); n++; } } while (0)
	for (size_t i = 0; i < nstates && i < 8; i++)
		ADD(states[i], l->sz_lstate ? l->sz_lstate : 256);
	for (size_t i = 0; i < nframes; i++)
		if (frames[i].kind == LC_FRAME_LUA && frames[i].ci)
			ADD(frames[i].ci, l->sz_callinfo ? l->sz_callinfo : 128);
	for (size_t i = 0; i < nstates && i < 8; i++) {
		struct lc_lstate st;

		if (lc_lua_state_read(pass->ctx, states[i], &st) != 0)
			continue;
		if (st.top > st.stack)
			ADD(st.stack, st.top - st.stack + 8 * l->sz_stack_slot);
		/* No frames decoded (a state only named, not read yet):
		 * its CallInfos from the current one down, a few */
		if (!nframes && st.ci) {
			struct lc_ci_cursor c = { 0 };
			uint64_t ci = st.ci;

			for (int k = 0; k < 16 && ci; k++) {
				ADD(ci, l->sz_callinfo ? l->sz_callinfo : 128);
				if (lc_lua_ci_prev(pass->ctx, &st, &c, ci, &ci) != 0)
					break;
			}
		}
	}
#undef ADD
	return n;
}

static struct lc_error *puc_heap_walk(struct lc_pass *pass, uint64_t vm,
				      unsigned flags, lc_hobj_fn *fn, void *arg,
				      struct lc_hvm *ret)
{
	return lc_puc_heap_walk(pass->ctx, vm, LC_VM_MAX_OBJECTS, flags, fn,
				arg, ret);
}

static int puc_heap_refs(struct lc_pass *pass, uint64_t vm,
			 const struct lc_hobj *o, lc_href_fn *fn, void *arg)
{
	return lc_puc_heap_refs(pass->ctx, &pass->heap, vm, o, fn, arg);
}

static char *puc_heap_class(struct lc_pass *pass, uint64_t vm,
			    enum lc_hkind kind, uint64_t klass)
{
	return lc_puc_heap_class(pass->ctx, &pass->heap, vm, kind, klass);
}

static char *puc_heap_string(struct lc_pass *pass, const struct lc_hobj *o,
			     size_t max, size_t *len)
{
	return lc_puc_heap_string(pass->ctx, o, max, len);
}

const struct lc_vm_ops lc_puc_ops = {
	.name = "PUC Lua",
	.open = puc_open,
	.close = puc_close,
	.begin = puc_begin,
	.end = puc_end,
	.state_type = "lua_State",
	.state_param = "L",
	.run_func = "luaV_execute",
	.run_vars = puc_run_vars,
	.state = puc_state,
	.is_state = puc_is_state,
	.walk = puc_walk,
	.walk_free = puc_walk_free,
	.starts_run = puc_starts_run,
	.run_marks = puc_run_marks,
	.continued = puc_continued,
	.frame = puc_frame,
	.roles = puc_roles,
	.own_frame = puc_own_frame,
	.activity = lc_activity_by_roles,
	.state_frames = puc_state_frames,
	.resumes = puc_resumes,
	.scan = puc_scan,
	.decode_vm = puc_decode_vm,
	.vm_names = puc_vm_names,
	.decode_state = puc_decode_state,
	.object = puc_object,
	.hot = puc_hot,
	.heap_walk = puc_heap_walk,
	.heap_refs = puc_heap_refs,
	.heap_class = puc_heap_class,
	.heap_string = puc_heap_string,
};
