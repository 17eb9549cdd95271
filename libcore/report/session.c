/* The composition root (session.h) and the public target functions of
 * luacore.h: each hands its work to the program, and the target keeps
 * the unwinder and the interpreter in step with the program's modules. */
#include <config.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/session.h"

struct lc_error *lc_target_wrap(struct lc_program *p, struct lc_target **ret)
{
	struct lc_target *t = calloc(1, sizeof(*t));
	struct lc_error *err;

	if (!t) {
		lc_program_destroy(p);
		return &lc_error_nomem;
	}
	t->prog = p;
	t->generation = p->generation;
	err = lc_unwinder_create(p, &t->unw);
	if (err) {
		lc_target_destroy(t);
		return err;
	}
	*ret = t;
	return NULL;
}

static void drop_interps(struct lc_target *t)
{
	for (size_t i = 0; i < t->ninterps; i++)
		lc_interp_close(t->interps[i]);
	free(t->interps);
	lc_error_destroy(t->interp_err);
	t->interps = NULL;
	t->ninterps = 0;
	t->interp_err = NULL;
	t->interp_tried = false;
}

/* After the modules changed: look for the interpreter again. */
static void sync(struct lc_target *t)
{
	if (t->generation == t->prog->generation)
		return;
	t->generation = t->prog->generation;
	drop_interps(t);
}

struct lc_interp *lc_target_interp(struct lc_target *t,
				   const struct lc_error **why)
{
	sync(t);
	if (!t->interp_tried) {
		t->interp_tried = true;
		t->interp_err = lc_interp_open_all(t->prog, &t->interps,
						   &t->ninterps);
	}
	if (why)
		*why = t->interp_err;
	return t->ninterps ? t->interps[0] : NULL;
}

struct lc_interp *const *lc_target_interps(struct lc_target *t,
					   const struct lc_error **why,
					   size_t *n)
{
	(void)lc_target_interp(t, why);
	*n = t->ninterps;
	return t->ninterps ? t->interps : NULL;
}

struct lc_unwinder *lc_target_unwinder(struct lc_target *t)
{
	sync(t);
	return t->unw;
}

void lc_target_destroy(struct lc_target *t)
{
	if (!t)
		return;
	drop_interps(t);
	lc_unwinder_destroy(t->unw);
	lc_program_destroy(t->prog);
	free(t);
}

struct lc_error *lc_target_set_layout(struct lc_target *t,
				      const char *types_file,
				      const char *release)
{
	int a, b, c;
	char *path = NULL;

	if (types_file && release)
		return lc_error_create(LC_ERR_INVALID,
			"a layout from a file (--types) or a release's (--layout), not both");
	if (release && (sscanf(release, "%d.%d.%d", &a, &b, &c) != 3 ||
			a != 5 || b < 1 || b > 99 || c < 0 || c > 99))
		return lc_error_create(LC_ERR_INVALID,
			"'%s' is not a Lua release: 5.Y.Z, one of 5.1.1-5.5.0",
			release);
	if (types_file && !(path = strdup(types_file)))
		return &lc_error_nomem;
	free(t->prog->types_path);
	t->prog->types_path = path;
	t->prog->layout_release = release ? a * 10000 + b * 100 + c : 0;
	drop_interps(t);
	return NULL;
}

/* ---- luacore.h: construction ---- */

struct lc_error *lc_target_open_core(const char *core_path,
				     const char *exe_path,
				     struct lc_target **ret)
{
	struct lc_program *p;
	struct lc_error *err = lc_program_open_core(core_path, exe_path, &p);

	return err ? err : lc_target_wrap(p, ret);
}

struct lc_error *lc_target_create_callback(lc_read_fn *read, void *arg,
					   struct lc_target **ret)
{
	struct lc_program *p;
	struct lc_error *err = lc_program_create_callback(read, arg, &p);

	return err ? err : lc_target_wrap(p, ret);
}

/* A live target, not yet stopped: what does not change while the
 * process runs is read first, the Lua layout too (an error is the
 * report's). */
static struct lc_error *prepare(int pid, struct lc_target **ret)
{
	struct lc_program *p;
	struct lc_error *err = lc_program_prepare_live(pid, true, &p);

	if (err)
		return err;
	if ((err = lc_target_wrap(p, ret)))
		return err;
	(void)lc_target_interp(*ret, NULL);
	return NULL;
}

struct lc_error *lc_target_attach(int pid, struct lc_target **ret)
{
	struct lc_target *t;
	struct lc_error *err = prepare(pid, &t);

	if (err)
		return err;
	err = lc_program_seize(t->prog);
	if (err) {
		lc_target_destroy(t);
		return err;
	}
	/* Nothing changes while every thread is stopped: the report's many
	 * small reads are served page by page. */
	lc_memory_set_caching(t->prog->mem, true);
	*ret = t;
	return NULL;
}

void lc_target_detach(struct lc_target *t)
{
	if (t) {
		lc_program_detach(t->prog);
		lc_memory_set_caching(t->prog->mem, false);
	}
}

struct lc_error *lc_target_attach_nonblocking(int pid,
					      struct lc_target **ret)
{
	struct lc_target *t;
	struct lc_error *err = prepare(pid, &t);

	if (err)
		return err;
	if ((err = lc_program_list_running(t->prog))) {
		lc_target_destroy(t);
		return err;
	}
	*ret = t;
	return NULL;
}

struct lc_error *lc_target_relist(struct lc_target *t)
{
	if (!t->prog->not_stopped)
		return lc_error_create(LC_ERR_INVALID,
			"only a target read as it runs can be listed again");
	return lc_program_list_running(t->prog);
}

struct lc_error *lc_target_attach_copy(int pid, uint64_t limit,
				       double budget_s, uint64_t *copied,
				       uint64_t *mapped, bool *complete,
				       struct lc_target **ret)
{
	struct lc_target *t;
	struct lc_copy_stats st;
	struct lc_error *err = prepare(pid, &t);

	*copied = *mapped = 0;
	*complete = false;
	if (err)
		return err;
	lc_error_destroy(lc_program_copy_prepare(t->prog, limit));
	if ((err = lc_program_seize(t->prog)) ||
	    (err = lc_program_copy(t->prog, limit, budget_s, &st))) {
		lc_target_destroy(t);
		return err;
	}
	lc_program_detach(t->prog);
	*copied = st.copied;
	*mapped = st.mapped;
	*complete = st.complete;
	*ret = t;
	return NULL;
}

uint64_t lc_target_copy_misses(const struct lc_target *t)
{
	return t->prog->copy_outside;
}

double lc_target_stopped_seconds(const struct lc_target *t)
{
	return lc_program_stopped_seconds(t->prog);
}

struct lc_error *lc_target_add_module(struct lc_target *t, const char *path,
				      uint64_t bias)
{
	return lc_program_add_module(t->prog, path, bias);
}

struct lc_error *lc_target_add_module_section(struct lc_target *t,
					      const char *path,
					      const char *section,
					      uint64_t addr)
{
	return lc_program_add_module_section(t->prog, path, section, addr);
}

struct lc_error *lc_target_add_thread(struct lc_target *t, int tid,
				      const char *name, int signo,
				      const struct lc_frame_regs *frames,
				      size_t nframes)
{
	return lc_program_add_thread(t->prog, tid, name, signo, frames, nframes);
}

struct lc_error *lc_target_set_process(struct lc_target *t, int pid,
				       const char *executable,
				       const char *core)
{
	return lc_program_set_process(t->prog, pid, executable, core);
}

void lc_target_set_signal(struct lc_target *t, int signo, int si_code,
			  uint64_t fault_addr)
{
	lc_program_set_signal(t->prog, signo, si_code, fault_addr);
}

struct lc_error *lc_target_add_region(struct lc_target *t, uint64_t start,
				      uint64_t end, bool writable)
{
	return lc_program_add_region(t->prog, start, end, writable);
}

void lc_target_set_caching(struct lc_target *t, bool on)
{
	lc_memory_set_caching(t->prog->mem, on);
}

void lc_target_invalidate(struct lc_target *t)
{
	if (t)
		lc_memory_invalidate(t->prog->mem);
}

struct lc_error *lc_target_read(struct lc_target *t, uint64_t addr,
				void *buf, size_t len)
{
	uint64_t fault;

	if (lc_memory_read(t->prog->mem, addr, buf, len, &fault) == 0)
		return NULL;
	return lc_error_fault(fault, "target memory");
}

/* ---- luacore.h: single objects ---- */

struct lc_error *lc_object_create(struct lc_target *t,
				  enum lc_object_kind kind, uint64_t addr,
				  size_t max_entries, struct lc_object **ret)
{
	const struct lc_error *why;
	struct lc_interp *const *ins;
	struct lc_pass *pass;
	struct lc_error *err = NULL;
	size_t n;

	lc_target_invalidate(t);
	ins = lc_target_interps(t, &why, &n);
	if (!n)
		return lc_error_create(lc_error_code(why), "%s",
				       lc_error_message(why));
	/* With two interpreters (PUC Lua and LuaJIT): the first whose
	 * reading is a Lua value. */
	for (size_t i = 0; i < n; i++) {
		struct lc_object *o = NULL;

		lc_error_destroy(err);
		err = ins[i]->ops->begin(ins[i], &pass);
		if (err)
			continue;
		err = ins[i]->ops->object(pass, kind, addr, max_entries, &o);
		ins[i]->ops->end(pass);
		if (err)
			continue;
		if (i + 1 < n && o && o->value.type &&
		    strcmp(o->value.type, "?") == 0) {
			lc_object_destroy(o);
			continue;
		}
		*ret = o;
		return NULL;
	}
	return err ? err : lc_error_create(LC_ERR_UNSUPPORTED,
					   "0x%" PRIx64 ": no Lua value", addr);
}
