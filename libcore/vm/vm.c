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

static inline uint64_t rotl64(uint64_t x, int r)
{
	return x << r | x >> (64 - r);
}

/* Four lanes over 32-byte stripes, so that the multiplies of one stripe
 * do not wait for each other's.  Bytes come in pieces whose lengths are
 * multiples of the stripe but for the last, so the result does not
 * depend on where the pieces end. */
struct hasher {
	uint64_t h[4];
};

#define HC1	0x9e3779b97f4a7c15ull
#define HC2	0xff51afd7ed558ccdull

static void hash_start(struct hasher *s, uint64_t len)
{
	s->h[0] = HC1 ^ len;
	s->h[1] = HC2 ^ len;
	s->h[2] = rotl64(HC1, 17) ^ len;
	s->h[3] = rotl64(HC2, 29) ^ len;
}

static void hash_piece(struct hasher *s, const uint8_t *p, size_t n)
{
	size_t i = 0;

	for (; i + 32 <= n; i += 32)
		for (int k = 0; k < 4; k++) {
			uint64_t w;

			memcpy(&w, p + i + 8 * k, 8);
			s->h[k] = rotl64((s->h[k] ^ w) * HC2, 31);
		}
	for (int k = 0; i < n; i += 8, k++) {
		uint64_t w = 0;
		size_t t = n - i < 8 ? n - i : 8;

		memcpy(&w, p + i, t);
		s->h[k] = rotl64((s->h[k] ^ w ^ ((uint64_t)t << 56)) * HC1, 27);
	}
}

static uint64_t hash_end(const struct hasher *s)
{
	uint64_t r = s->h[0] ^ rotl64(s->h[1], 16) ^ rotl64(s->h[2], 32) ^
		     rotl64(s->h[3], 48);

	r = (r ^ (r >> 33)) * HC2;
	r ^= r >> 29;
	return r | 1;
}

uint64_t lc_hash_buf(const void *p, size_t len)
{
	struct hasher s;

	hash_start(&s, len);
	hash_piece(&s, p, len);
	return hash_end(&s);
}

/* Bytes [at, at + n) (n at most a page) through a view, else into buf;
 * NULL when unreadable. */
static const uint8_t *bytes_at(struct lc_memory *m, uint64_t at, size_t n,
			       uint8_t *buf)
{
	return lc_memory_bytes(m, at, n, buf, false);
}

uint64_t lc_hash_bytes(struct lc_memory *m, uint64_t at, uint64_t len,
		       uint64_t fallback)
{
	struct hasher s;
	uint8_t buf[LC_PAGE_SIZE];

	hash_start(&s, len);
	for (uint64_t off = 0; off < len;) {
		size_t n = len - off < LC_PAGE_SIZE ? (size_t)(len - off) :
			   LC_PAGE_SIZE;
		const uint8_t *p = bytes_at(m, at + off, n, buf);

		if (!p)
			return fallback | 1;
		hash_piece(&s, p, n);
		off += n;
	}
	return hash_end(&s);
}

uint64_t lc_hash_ends(const void *head, const void *tail, uint64_t len)
{
	struct hasher s;

	/* a start that no exact hash has: the length's complement */
	hash_start(&s, ~len);
	hash_piece(&s, head, LC_SKETCH_MIN / 2);
	hash_piece(&s, tail, LC_SKETCH_MIN / 2);
	return hash_end(&s);
}

uint64_t lc_hash_sketch(struct lc_memory *m, uint64_t at, uint64_t len,
			uint64_t fallback)
{
	uint8_t hb[LC_SKETCH_MIN / 2], tb[LC_SKETCH_MIN / 2];
	const uint8_t *head, *tail;

	if (len <= LC_SKETCH_MIN)
		return lc_hash_bytes(m, at, len, fallback);
	if (!(head = bytes_at(m, at, sizeof(hb), hb)))
		return fallback | 1;
	/* the head's view may end with the next read: copied */
	if (head != hb)
		memcpy(hb, head, sizeof(hb));
	if (!(tail = bytes_at(m, at + len - sizeof(tb), sizeof(tb), tb)))
		return fallback | 1;
	return lc_hash_ends(hb, tail, len);
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
