/* The seam's common part (vm.h): the family list, opening an
 * interpreter, and freeing the report data every family fills. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/vm.h"

const struct lc_vm_ops *const lc_vm_families[] = {
	&lc_puc_ops,
	&lc_luajit_ops,
	NULL,
};

struct lc_error *lc_interp_open_all(struct lc_program *p,
				    struct lc_interp ***ret, size_t *nret)
{
	struct lc_error *first = NULL;
	struct lc_interp **v = NULL;
	size_t n = 0;

	for (size_t i = 0; lc_vm_families[i]; i++) {
		struct lc_interp *in, **nv;
		struct lc_error *err = lc_vm_families[i]->open(p, &in);

		/* The error to say: the first family's that found its VM
		 * and could not read it, else the first family's. */
		if (err) {
			if (!first || (lc_error_code(first) == LC_ERR_NOT_FOUND &&
				       lc_error_code(err) != LC_ERR_NOT_FOUND)) {
				lc_error_destroy(first);
				first = err;
			} else {
				lc_error_destroy(err);
			}
			continue;
		}
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			lc_interp_close(in);
			continue;
		}
		v = nv;
		v[n++] = in;
	}
	if (n) {
		lc_error_destroy(first);
		*ret = v;
		*nret = n;
		return NULL;
	}
	*ret = NULL;
	*nret = 0;
	return first ? first : lc_error_create(LC_ERR_NOT_FOUND,
					       "no VM family is built in");
}

void lc_interp_close(struct lc_interp *in)
{
	if (in)
		in->ops->close(in);
}

bool lc_interp_has_pc(const struct lc_interp *in, uint64_t pc)
{
	return in && pc >= in->module_start && pc < in->module_end;
}

void lc_vwalk_free(const struct lc_interp *in, struct lc_vwalk *w)
{
	if (in && w->priv)
		in->ops->walk_free(w);
	free(w->frames);
	memset(w, 0, sizeof(*w));
}

struct lc_frame *lc_frames_push(struct lc_frames *o)
{
	if (o->n == o->cap) {
		size_t ncap = o->cap ? o->cap * 2 : 64;
		void *p = realloc(o->v, ncap * sizeof(*o->v));

		if (!p) {
			o->nomem = true;
			return NULL;
		}
		o->v = p;
		o->cap = ncap;
	}
	memset(&o->v[o->n], 0, sizeof(o->v[0]));
	return &o->v[o->n++];
}

/* ---- the report's data (luacore.h) ---- */

void lc_value_init(struct lc_value *v)
{
	memset(v, 0, sizeof(*v));
	v->len = -1;
	v->hsize = -1;
}

void lc_value_deinit(struct lc_value *v)
{
	if (!v)
		return;
	free(v->text);
	free(v->str);
	lc_value_init(v);
}

void lc_vars_free(struct lc_var *vars, size_t n)
{
	if (!vars)
		return;
	for (size_t i = 0; i < n; i++) {
		free(vars[i].name);
		lc_value_deinit(&vars[i].value);
	}
	free(vars);
}

void lc_slots_free(struct lc_slot *slots, size_t n)
{
	if (!slots)
		return;
	for (size_t i = 0; i < n; i++)
		lc_value_deinit(&slots[i].value);
	free(slots);
}

void lc_frame_free(struct lc_frame *f)
{
	lc_vars_free(f->vars, f->nvars);
	free(f->function);
	free(f->linkage_name);
	free(f->module);
	free(f->file);
	free(f->source);
	free(f->short_src);
	free(f->name);
	free(f->global_name);
	free(f->traceback);
}

void lc_object_destroy(struct lc_object *o)
{
	if (!o)
		return;
	lc_value_deinit(&o->value);
	free(o->full);
	for (size_t i = 0; i < o->nentries; i++) {
		lc_value_deinit(&o->entries[i].key);
		lc_value_deinit(&o->entries[i].value);
	}
	free(o->entries);
	lc_vars_free(o->upvalues, o->nupvalues);
	free(o);
}

void lc_luathread_clear(struct lc_luathread *th)
{
	if (!th)
		return;
	free(th->hook_name);
	free(th->note);
	th->hook_name = NULL;
	th->note = NULL;
}

void lc_vm_clear(struct lc_vm *vm)
{
	if (!vm)
		return;
	for (size_t i = 0; i < vm->nthreads; i++)
		lc_luathread_clear(&vm->threads[i]);
	free(vm->threads);
	free(vm->note);
	free(vm->name);
	free(vm->alloc);
	free(vm->cur_L_note);
	free(vm->version);
	vm->name = vm->alloc = vm->cur_L_note = vm->version = NULL;
	vm->threads = NULL;
	vm->nthreads = 0;
	vm->note = NULL;
}

enum lc_activity lc_activity_by_roles(const struct lc_interp *in,
				      const struct lc_frame *frames, size_t n)
{
	bool gc = false;

	for (size_t i = 0; i < n; i++) {
		if (frames[i].kind == LC_FRAME_LUA) {
			if (gc)
				return LC_ACTIVITY_GC;
			return frames[i].what && strcmp(frames[i].what, "C") == 0 ?
			       LC_ACTIVITY_C : LC_ACTIVITY_LUA;
		}
		if (in && (in->ops->roles(in, frames[i].function) & LC_ROLE_GC))
			gc = true;
	}
	return LC_ACTIVITY_NATIVE;
}

bool lc_seen_check(struct lc_seen *c, uint64_t addr,
		   bool (*check)(void *arg, uint64_t addr), void *arg)
{
	size_t i = (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 58);

	if (!addr)
		return false;
	if (c->addr[i] == addr)
		return c->ok[i];
	c->addr[i] = addr;
	c->ok[i] = check(arg, addr);
	return c->ok[i];
}

const char *lc_hkind_name(int kind)
{
	static const char *const names[LC_HK_NKINDS] = {
		[LC_HK_STRING] = "string", [LC_HK_TABLE] = "table",
		[LC_HK_LFUNC] = "Lua function", [LC_HK_CFUNC] = "C function",
		[LC_HK_USERDATA] = "userdata", [LC_HK_THREAD] = "thread",
		[LC_HK_PROTO] = "proto", [LC_HK_UPVAL] = "upvalue",
		[LC_HK_TRACE] = "trace", [LC_HK_CDATA] = "cdata",
	};

	return kind >= 0 && kind < LC_HK_NKINDS ? names[kind] : "?";
}

bool lc_lua_ident(const char *s, size_t n)
{
	static const char *const reserved[] = {
		"and", "break", "do", "else", "elseif", "end", "false", "for",
		"function", "goto", "if", "in", "local", "nil", "not", "or",
		"repeat", "return", "then", "true", "until", "while",
	};

	if (!n || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
		    s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strlen(reserved[i]) == n && memcmp(s, reserved[i], n) == 0)
			return false;
	return true;
}

uint64_t lc_hash_bytes(struct lc_memory *m, uint64_t at, uint64_t len,
		       uint64_t fallback)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ len;

	for (uint64_t off = 0; off < len;) {
		size_t n = len - off < 4096 ? (size_t)(len - off) : 4096;
		const uint8_t *p = lc_memory_map(m, at + off, n);
		uint8_t buf[64];
		uint64_t k;
		size_t i = 0;

		if (!p) {
			n = n < sizeof(buf) ? n : sizeof(buf);
			if (lc_read(m, at + off, buf, n) < 0)
				return fallback | 1;
			p = buf;
		}
		for (; i + 8 <= n; i += 8) {
			memcpy(&k, p + i, 8);
			h = (h ^ k) * 0xff51afd7ed558ccdull;
			h ^= h >> 32;
		}
		if (i < n) {
			k = 0;
			memcpy(&k, p + i, n - i);
			h = (h ^ k ^ ((uint64_t)(n - i) << 56)) * 0xc4ceb9fe1a85ec53ull;
			h ^= h >> 29;
		}
		off += n;
	}
	return h | 1;
}

void lc_hvm_note(struct lc_hvm *vm, const char *fmt, ...)
{
	size_t n = strlen(vm->note);
	va_list ap;

	vm->partial = true;
	if (n + 4 >= sizeof(vm->note))
		return;
	if (n) {
		memcpy(vm->note + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(vm->note + n, sizeof(vm->note) - n, fmt, ap);
	va_end(ap);
}
