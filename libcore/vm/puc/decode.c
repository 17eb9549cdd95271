/* The Lua decoder: states, CallInfo walks, functions, lines and names,
 * for Lua 5.1-5.5.  Each per-version rule names the Lua function it
 * mirrors; offsets all come from the layout (DWARF). */
#include <config.h>

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "vm/puc/puc.h"
#include "vm/puc/names.h"

/* Type tags (low 6 bits of a TValue tag; bit 6 marks collectable values
 * in 5.2+).  Base types are the same in every version. */
#define TAG_FUNCTION	6
#define TAG_THREAD	8
#define V_LCL		0x06	/* Lua closure */
#define V_LCF		0x16	/* light C function (5.2+) */
#define V_CCL		0x26	/* C closure (5.2+) */
#define V_SHRSTR	0x04
#define V_LNGSTR	0x14

/* CallInfo status bits of each release (lstate.h CIST_*), 0 where it has
 * no such flag.  A Lua call is marked by lua (5.2, 5.3: CIST_LUA) or a C
 * call by c (5.4+: CIST_C).  A luaV_execute run starts at a CallInfo
 * with fresh set (5.3.2+, 5.4.2+), or with reentry clear (5.2 and
 * 5.3.0-5.3.1, CIST_REENTRY); 5.4.0-5.4.1 run one luaV_execute per Lua
 * call (per_call). */
struct cist {
	uint32_t lua, c, hooked, tail, fin, fresh, reentry;
	bool per_call;
};

static const struct cist cist52 = { .lua = 1u << 0, .hooked = 1u << 1,
	.reentry = 1u << 2, .tail = 1u << 6 };
static const struct cist cist530 = { .lua = 1u << 1, .hooked = 1u << 2,
	.reentry = 1u << 3, .tail = 1u << 5 };
static const struct cist cist532 = { .lua = 1u << 1, .hooked = 1u << 2,
	.fresh = 1u << 3, .tail = 1u << 5 };
static const struct cist cist534 = { .lua = 1u << 1, .hooked = 1u << 2,
	.fresh = 1u << 3, .tail = 1u << 5, .fin = 1u << 8 };
static const struct cist cist540 = { .c = 1u << 1, .hooked = 1u << 2,
	.tail = 1u << 4, .fin = 1u << 6, .per_call = true };
static const struct cist cist542 = { .c = 1u << 1, .fresh = 1u << 2,
	.hooked = 1u << 3, .tail = 1u << 5, .fin = 1u << 7 };
/* 5.5: the low byte holds nresults + 1, bits 8-11 the __call count,
 * 12-14 the recover status; the flags start at CIST_C. */
static const struct cist cist55 = { .c = 1u << 15, .fresh = 1u << 16,
	.hooked = 1u << 20, .tail = 1u << 22, .fin = 1u << 24 };

/* The bits of the release at hand; none for 5.1, which has no callstatus. */
static const struct cist *cist_of(const struct lc_layout *l)
{
	static const struct cist none;

	switch (l->major) {
	case 501: return &none;
	case 502: return &cist52;
	case 503: return l->release < 50302 ? &cist530 :
			 l->release < 50304 ? &cist532 : &cist534;
	case 504: return l->release < 50402 ? &cist540 : &cist542;
	default: return &cist55;
	}
}

#define PF55_VAHID	1	/* lobject.h Proto.flag: hidden varargs */

#define LUA_IDSIZE	60	/* luaconf.h default, for short_src */
#define ST_YIELD	1	/* L->status after a yield (LUA_YIELD), every release */

/* Bytes of a Proto's fields that say what it is (proto_fingerprint). */
#define PROTO_FP	192
/* Protos kept across passes: beyond this many, all are dropped before
 * the next pass. */
#define CACHE_PROTOS	4096

#define PROTO_LINES	8	/* pcs whose lines a Proto keeps */

struct proto {
	uint64_t addr;
	bool ok;		/* header readable */
	char *source;
	bool bad_source;	/* points to something that is no string */
	int linedefined, lastlinedefined;
	bool bad_lines;		/* linedefined/lastlinedefined impossible */
	bool bad_arrays;	/* its arrays overlap (arrays_overlap) */
	bool lines_tried;	/* every line checked (lines_hold) */
	bool lines_ok;
	uint64_t code;
	int sizecode;
	bool names_tried;
	bool names_ok;
	bool names_damaged;	/* what naming reads does not hold together */
	uint32_t *codev;
	struct lc_kview *k;
	char **kstr;
	int nk;
	struct lc_locvar_view *locvars;
	char **locnames;
	int nlocvars;
	char **upvalnames;
	int nupvals;
	struct lc_proto_view view;
	/* What line_of and chunkid answered for it: its lines and source
	 * are the function's for its lifetime, and the fingerprint holds
	 * their pointers and sizes. */
	struct { int pc, line; bool partial; } lines[PROTO_LINES];
	unsigned nlines, nextline;
	char *short_src;
	/* And what its calls name (lc_names_from_call_checked at a pc):
	 * names point into its own strings, or are static. */
	struct { int pc; const char *what, *name; bool damaged; }
		calls[PROTO_LINES];
	unsigned ncalls, nextcall;
	/* The cache's (lc_lua_cache): the fields it was read with, and the
	 * last pass that found them unchanged. */
	uint8_t fp[PROTO_FP];
	size_t nfp;
	unsigned checked;
};

/* A function reachable as package.loaded[mod][key], for naming C
 * functions the way luaL_traceback does (lauxlib.c:pushglobalfuncname). */
struct gname {
	unsigned tag;		/* the function value's tag and payload */
	uint64_t value;
	uint64_t node;		/* the table node it was found in */
	uint64_t key;		/* and that node's key (a TString) */
	size_t seq;		/* the order found: the first name wins */
	char *name;		/* "string.gsub"; "_G." stripped */
};

/* A VM whose package.loaded was indexed, and whether the index met
 * damage (gnames_build): its names sorted by value, tag and seq.
 * Kept across passes (lc_lua_cache) for reuse_s seconds: a name found
 * in it is checked against its node in every pass; one that no longer
 * holds makes the pass index the VM again. */
struct gn_vm {
	uint64_t g;
	bool damaged;
	struct gname *names;
	size_t n, cap;
	double built;		/* when (lc_now_s) */
	unsigned serial;	/* the pass that built it */
};

#define CACHE_VMS	4096	/* VMs whose names are kept */

/* Protos by address, each allocated on its own (a pass holds pointers
 * to them), with an index: open addressing, 1 + index into protos. */
struct lc_lua_cache {
	struct proto **protos;
	size_t n, cap;
	uint32_t *slot;
	size_t nslots;		/* a power of two, > 2 n; 0 none yet */
	unsigned serial;	/* the pass now using it (+1 per context) */
	const struct lc_layout *l;	/* what its Protos were read with */
	struct gn_vm *gn_vms;	/* VMs whose package.loaded was indexed */
	size_t ngn_vms;
	double reuse_s;		/* how long an index may serve (0: a pass) */
	bool profile;		/* frames for a profile: no traceback line */
};

struct lc_lua_ctx {
	struct lc_program *prog;
	struct lc_memory *mem;
	const struct lc_layout *l;
	struct lc_lua_cache *cache;
	bool own_cache;		/* none was given: the context's own */
	uint64_t scan_node;	/* the node lc_lua_table_scan visits */
	size_t ci_steps;	/* CallInfo steps taken (LC_CI_BUDGET) */
};

static void proto_free(struct proto *p);

struct lc_lua_cache *lc_lua_cache_create(void)
{
	return calloc(1, sizeof(struct lc_lua_cache));
}

static void gn_vm_clear(struct gn_vm *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->names[i].name);
	free(v->names);
	v->names = NULL;
	v->n = v->cap = 0;
	v->damaged = false;
}

static void cache_clear(struct lc_lua_cache *c)
{
	for (size_t i = 0; i < c->ngn_vms; i++)
		gn_vm_clear(&c->gn_vms[i]);
	free(c->gn_vms);
	c->gn_vms = NULL;
	c->ngn_vms = 0;
	for (size_t i = 0; i < c->n; i++) {
		proto_free(c->protos[i]);
		free(c->protos[i]);
	}
	free(c->protos);
	free(c->slot);
	c->protos = NULL;
	c->slot = NULL;
	c->n = c->cap = c->nslots = 0;
}

void lc_lua_cache_set_reuse(struct lc_lua_cache *c, double seconds)
{
	c->reuse_s = seconds;
}

void lc_lua_cache_set_profile(struct lc_lua_cache *c, bool on)
{
	c->profile = on;
}

void lc_lua_cache_destroy(struct lc_lua_cache *c)
{
	if (!c)
		return;
	cache_clear(c);
	free(c);
}

struct lc_error *lc_lua_ctx_create(struct lc_program *p,
				   const struct lc_layout *l,
				   struct lc_lua_cache *c,
				   struct lc_lua_ctx **ret)
{
	struct lc_lua_ctx *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		return &lc_error_nomem;
	if (!c) {
		if (!(c = lc_lua_cache_create())) {
			free(ctx);
			return &lc_error_nomem;
		}
		ctx->own_cache = true;
	}
	if (c->n > CACHE_PROTOS || c->ngn_vms >= CACHE_VMS ||
	    (c->l && c->l != l))
		cache_clear(c);
	c->l = l;
	c->serial++;
	ctx->prog = p;
	ctx->mem = p->mem;
	ctx->l = l;
	ctx->cache = c;
	*ret = ctx;
	return NULL;
}

static void proto_free(struct proto *p)
{
	free(p->source);
	free(p->short_src);
	free(p->codev);
	if (p->kstr)
		for (int i = 0; i < p->nk; i++)
			free(p->kstr[i]);
	free(p->kstr);
	free(p->k);
	if (p->locnames)
		for (int i = 0; i < p->nlocvars; i++)
			free(p->locnames[i]);
	free(p->locnames);
	free(p->locvars);
	if (p->upvalnames)
		for (int i = 0; i < p->nupvals; i++)
			free(p->upvalnames[i]);
	free(p->upvalnames);
}

void lc_lua_ctx_destroy(struct lc_lua_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->own_cache)
		lc_lua_cache_destroy(ctx->cache);
	free(ctx);
}

const struct lc_layout *lc_lua_layout(const struct lc_lua_ctx *ctx)
{
	return ctx->l;
}

struct lc_memory *lc_lua_mem(const struct lc_lua_ctx *ctx)
{
	return ctx->mem;
}

struct lc_program *lc_lua_program(const struct lc_lua_ctx *ctx)
{
	return ctx->prog;
}

/* ---- small readers ---- */

int lc_lua_read_field(struct lc_lua_ctx *ctx, uint64_t base,
		    struct lc_field f, uint64_t *ret)
{
	if (f.off < 0 || f.size == 0 || f.size > 8)
		return -1;
	return lc_read_uint(ctx->mem, base + (uint64_t)f.off, f.size, ret);
}

int lc_lua_read_sfield(struct lc_lua_ctx *ctx, uint64_t base,
		       struct lc_field f, int64_t *ret)
{
	uint64_t v;

	if (lc_lua_read_field(ctx, base, f, &v) < 0)
		return -1;
	if (f.size < 8 && (v >> (f.size * 8 - 1)) & 1)
		v |= ~0ull << (f.size * 8);
	*ret = (int64_t)v;
	return 0;
}

static int rd_int(struct lc_lua_ctx *ctx, uint64_t base, struct lc_field f,
		  int *ret)
{
	int64_t v;

	if (lc_lua_read_sfield(ctx, base, f, &v) < 0 || v < INT32_MIN || v > INT32_MAX)
		return -1;
	*ret = (int)v;
	return 0;
}

/* A StkId field: a pointer, or (5.4.5+, during a stack reallocation) an
 * offset from the stack base (ldo.c:relstack). */
int lc_lua_read_stkid(struct lc_lua_ctx *ctx, uint64_t base, struct lc_field f,
		    uint64_t stack, uint64_t *ret)
{
	uint64_t v;

	if (f.off < 0 || lc_read_u64(ctx->mem, base + (uint64_t)f.off, &v) < 0)
		return -1;
	if (ctx->l->stkidrel && stack && v < (1ull << 32) && v < stack)
		v += stack;
	*ret = v;
	return 0;
}

int lc_lua_read_tvalue(struct lc_lua_ctx *ctx, uint64_t addr, struct lc_tvalue *tv)
{
	const struct lc_layout *l = ctx->l;
	uint64_t tag;

	if (lc_read_u64(ctx->mem, addr + (uint64_t)l->tv.value.off, &tv->value) < 0 ||
	    lc_lua_read_field(ctx, addr, l->tv.tt, &tag) < 0)
		return -1;
	tv->tag = (unsigned)tag;
	return 0;
}

int lc_lua_string_bytes(struct lc_lua_ctx *ctx, uint64_t ts, bool is_long,
			uint64_t *ret)
{
	const struct lc_layout *l = ctx->l;

	if (is_long && l->ts_lngptr)
		return lc_read_u64(ctx->mem, ts + l->ts_contents, ret) < 0 ||
		       !*ret ? -1 : 0;
	*ret = ts + l->ts_contents;
	return 0;
}

int lc_lua_mainthread(struct lc_lua_ctx *ctx, uint64_t g, uint64_t *ret)
{
	const struct lc_layout *l = ctx->l;

	if (LC_HAS(l->G.mainth)) {
		*ret = g + (uint64_t)l->G.mainth.off;
		return 0;
	}
	if (!LC_HAS(l->G.mainthread) ||
	    lc_read_u64(ctx->mem, g + (uint64_t)l->G.mainthread.off, ret) < 0)
		return -1;
	/* lstate.c lua_newstate allocates the main thread and the
	 * global_State together (struct LG): where the DWARF gives LG
	 * and a thread of this global_State sits there, a main thread
	 * anywhere else is damage. */
	if (l->lg_g_minus_l > 0 && !l->lg_derived &&
	    *ret != g - (uint64_t)l->lg_g_minus_l) {
		uint64_t at = g - (uint64_t)l->lg_g_minus_l, ag;
		uint8_t tt;

		if (lc_read_u8(ctx->mem, at + (uint64_t)l->L.tt.off, &tt) == 0 &&
		    (tt & 0x3f) == TAG_THREAD &&
		    lc_read_u64(ctx->mem, at + (uint64_t)l->L.l_G.off, &ag) == 0 &&
		    ag == g)
			return -1;
	}
	return 0;
}

/* Copy a TString's bytes (at most LC_MAX_STR).  Returns a malloc'd
 * NUL-terminated string, or NULL if unreadable or not a string (its
 * length does not end at the NUL Lua puts after every string). */
char *lc_lua_read_string(struct lc_lua_ctx *ctx, uint64_t ts, uint64_t *lenp,
			 bool *truncated)
{
	const struct lc_layout *l = ctx->l;
	uint64_t len = 0, tag = 0, bytes;
	char *s;

	/* Every collectable object is an allocation of its own, aligned
	 * for any type (lmem.c, LUAI_MAXALIGN). */
	if (!ts || (ts & 7))
		return NULL;
	if (l->major <= 502) {
		uint8_t tt;

		/* A string's header says so (5.1 LUA_TSTRING, 5.2 its
		 * short and long variants). */
		if (lc_read_u8(ctx->mem, ts + (uint64_t)l->L.tt.off, &tt) < 0 ||
		    (tt & 0x0f) != 4 ||
		    lc_lua_read_field(ctx, ts, l->ts.len, &len) < 0)
			return NULL;
	} else {
		if (lc_lua_read_field(ctx, ts, l->ts.tt, &tag) < 0)
			return NULL;
		if ((tag & 0x3f) == V_SHRSTR) {
			if (lc_lua_read_field(ctx, ts, l->ts.shrlen, &len) < 0)
				return NULL;
		} else if ((tag & 0x3f) == V_LNGSTR) {
			if (lc_lua_read_field(ctx, ts, l->ts.lnglen, &len) < 0)
				return NULL;
		} else {
			return NULL;
		}
	}
	/* Lua ends every string's bytes with a NUL: a length that does not
	 * land on one (or on memory at all) is not the string's. */
	{
		uint8_t nul;

		if (len >= (1ull << 40) ||
		    lc_lua_string_bytes(ctx, ts, (tag & 0x3f) == V_LNGSTR,
					&bytes) < 0 ||
		    lc_read_u8(ctx->mem, bytes + len, &nul) < 0 ||
		    nul != 0)
			return NULL;
	}
	if (lenp)
		*lenp = len;
	if (truncated)
		*truncated = len > LC_MAX_STR;
	if (len > LC_MAX_STR)
		len = LC_MAX_STR;
	s = malloc(len + 1);
	if (!s)
		return NULL;
	if (lc_read(ctx->mem, bytes, s, len) < 0) {
		free(s);
		return NULL;
	}
	s[len] = '\0';
	return s;
}

/* ---- tables ---- */

#define LC_MAX_LSIZENODE	20	/* 1M nodes */
#define LC_MAX_NODE_READS	200000	/* per package.loaded scan */

static unsigned base_type(const struct lc_layout *l, unsigned tag)
{
	return l->major == 501 ? tag : (tag & 0x0f);
}

/* Key and value of one hash node. */
static int node_read(struct lc_lua_ctx *ctx, uint64_t node,
		     struct lc_tvalue *key, struct lc_tvalue *val)
{
	const struct lc_layout *l = ctx->l;
	uint64_t tt;

	if (lc_lua_read_tvalue(ctx, node + (uint64_t)l->node.val.off, val) < 0 ||
	    lc_read_u64(ctx->mem, node + (uint64_t)l->node.key_val.off,
			&key->value) < 0 ||
	    lc_lua_read_field(ctx, node, l->node.key_tt, &tt) < 0)
		return -1;
	key->tag = (unsigned)tt;
	return 0;
}

/* Visit the hash part of a table in node order (lua_next's order for
 * string keys).  Stops when fn returns false or *budget runs out. */
int lc_lua_table_scan(struct lc_lua_ctx *ctx, uint64_t tbl, lc_node_fn *fn,
		      void *arg, size_t *budget)
{
	const struct lc_layout *l = ctx->l;
	uint64_t node, lsz;

	if (!l->sz_node || !LC_HAS(l->node.val) || !LC_HAS(l->node.key_val))
		return 0;	/* the layout cannot say: nothing to visit */
	if (lc_lua_read_field(ctx, tbl, l->tab.lsizenode, &lsz) < 0 ||
	    lsz > LC_MAX_LSIZENODE ||
	    lc_read_u64(ctx->mem, tbl + (uint64_t)l->tab.node.off, &node) < 0)
		return -1;
	for (uint64_t i = 0; i < (1ull << lsz); i++) {
		struct lc_tvalue k, v;

		if (*budget == 0)
			return 0;
		(*budget)--;
		if (node_read(ctx, node + i * l->sz_node, &k, &v) < 0)
			return -1;
		if (base_type(l, v.tag) == 0)	/* nil or empty */
			continue;
		ctx->scan_node = node + i * l->sz_node;
		if (!fn(ctx, &k, &v, arg))
			return 0;
	}
	return 0;
}

struct find_key {
	const char *key;
	struct lc_tvalue val;
	bool found;
	bool damaged;		/* a key tagged string that is none */
};

static bool find_key_fn(struct lc_lua_ctx *ctx, const struct lc_tvalue *k,
			const struct lc_tvalue *v, void *arg)
{
	struct find_key *fk = arg;
	char *s;

	if (base_type(ctx->l, k->tag) != 4)
		return true;
	s = lc_lua_read_string(ctx, k->value, NULL, NULL);
	if (!s)
		fk->damaged = true;
	if (s && strcmp(s, fk->key) == 0) {
		fk->val = *v;
		fk->found = true;
	}
	free(s);
	return !fk->found;
}

struct gn_scan {
	struct gn_vm *vm;
	const char *mod;
	size_t *budget;
	bool keep_G;		/* 5.2: "_G.x" is a name of its own */
	bool *damaged;		/* set where what the index reads does not
				   read as what its tags say */
};

static void gname_add(struct lc_lua_ctx *ctx, struct gn_vm *vm,
		      const struct lc_tvalue *k, const struct lc_tvalue *v,
		      const char *mod, const char *key)
{
	char *name;

	if (!mod || strcmp(mod, "_G") == 0)
		name = strdup(key);
	else if (asprintf(&name, "%s.%s", mod, key) < 0)
		name = NULL;
	if (!name)
		return;
	if (vm->n == vm->cap) {
		size_t ncap = vm->cap ? vm->cap * 2 : 64;
		struct gname *p = realloc(vm->names, ncap * sizeof(*p));

		if (!p) {
			free(name);
			return;
		}
		vm->names = p;
		vm->cap = ncap;
	}
	vm->names[vm->n] = (struct gname){
		.tag = v->tag, .value = v->value, .node = ctx->scan_node,
		.key = k->value, .seq = vm->n, .name = name,
	};
	vm->n++;
}

static bool gn_field_fn(struct lc_lua_ctx *ctx, const struct lc_tvalue *k,
			const struct lc_tvalue *v, void *arg)
{
	struct gn_scan *sc = arg;
	char *key;

	if (base_type(ctx->l, k->tag) != 4 || base_type(ctx->l, v->tag) != 6)
		return true;
	key = lc_lua_read_string(ctx, k->value, NULL, NULL);
	if (!key)
		*sc->damaged = true;
	if (key) {
		if (sc->keep_G && strcmp(sc->mod, "_G") == 0) {
			char *n = NULL;

			if (asprintf(&n, "_G.%s", key) >= 0)
				gname_add(ctx, sc->vm, k, v, NULL, n);
			free(n);
		} else {
			gname_add(ctx, sc->vm, k, v, sc->mod, key);
		}
	}
	free(key);
	return true;
}

static bool gn_module_fn(struct lc_lua_ctx *ctx, const struct lc_tvalue *k,
			 const struct lc_tvalue *v, void *arg)
{
	struct gn_scan *sc = arg;
	struct gn_scan sub = *sc;
	char *mod;

	if (base_type(ctx->l, k->tag) != 4 ||
	    (base_type(ctx->l, v->tag) != 5 && base_type(ctx->l, v->tag) != 6))
		return true;
	mod = lc_lua_read_string(ctx, k->value, NULL, NULL);
	if (!mod) {
		*sc->damaged = true;
		return true;
	}
	/* findfield: a function stored as package.loaded[mod] itself is
	 * named mod. */
	if (base_type(ctx->l, v->tag) == 6) {
		gname_add(ctx, sc->vm, k, v, NULL, mod);
		free(mod);
		return true;
	}
	sub.mod = mod;
	if (lc_lua_table_scan(ctx, v->value, gn_field_fn, &sub, sc->budget) < 0)
		*sc->damaged = true;
	free(mod);
	return true;
}

static int gname_cmp(const void *a, const void *b)
{
	const struct gname *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static struct gn_vm *gn_vm_find(struct lc_lua_cache *c, uint64_t g)
{
	for (size_t i = 0; i < c->ngn_vms; i++)
		if (c->gn_vms[i].g == g)
			return &c->gn_vms[i];
	return NULL;
}

/* Index the functions of package.loaded (registry._LOADED) of VM g,
 * unless this pass did, or an earlier one less than reuse_s ago (and
 * not again: always when again is set). */
static struct gn_vm *gnames_build(struct lc_lua_ctx *ctx, uint64_t g,
				  bool again)
{
	const struct lc_layout *l = ctx->l;
	struct lc_lua_cache *c = ctx->cache;
	struct find_key fk = { .key = "_LOADED" };
	struct lc_tvalue reg;
	size_t budget = LC_MAX_NODE_READS;
	struct gn_vm *vm = gn_vm_find(c, g);
	bool *damaged;
	double now = lc_now_s();

	if (vm && (vm->serial == c->serial ||
		   (!again && c->reuse_s > 0 && now - vm->built < c->reuse_s)))
		return vm;
	if (!vm) {
		struct gn_vm *p = realloc(c->gn_vms, (c->ngn_vms + 1) * sizeof(*p));

		if (!p)
			return NULL;
		c->gn_vms = p;
		vm = &c->gn_vms[c->ngn_vms++];
		*vm = (struct gn_vm){ .g = g };
	}
	gn_vm_clear(vm);
	vm->built = now;
	vm->serial = c->serial;
	damaged = &vm->damaged;
	if (!LC_HAS(l->G.l_registry) ||
	    lc_lua_read_tvalue(ctx, g + (uint64_t)l->G.l_registry.off, &reg) < 0 ||
	    base_type(l, reg.tag) != 5)
		return vm;
	/* 5.2 lauxlib.c pushglobalfuncname searches the global table,
	 * registry[LUA_RIDX_GLOBALS], two levels deep, and keeps "_G."
	 * names ("_G.print" when the walk meets _G._G first); 5.3+ search
	 * package.loaded (registry._LOADED) and drop a leading "_G.". */
	if (l->major == 502) {
		uint64_t array, asz;
		struct lc_tvalue gt;

		if (lc_lua_read_field(ctx, reg.value, l->tab.sizearray, &asz) < 0 ||
		    asz < 2 ||
		    lc_read_u64(ctx->mem, reg.value + (uint64_t)l->tab.array.off,
				&array) < 0 ||
		    lc_lua_read_tvalue(ctx, array + l->sz_tvalue, &gt) < 0 ||
		    base_type(l, gt.tag) != 5)
			return vm;
		fk.val = gt;
	} else {
		if (lc_lua_table_scan(ctx, reg.value, find_key_fn, &fk, &budget) < 0 ||
		    fk.damaged)
			*damaged = true;
		if (!fk.found || base_type(l, fk.val.tag) != 5)
			return vm;
	}
	struct gn_scan sc = { .vm = vm, .budget = &budget,
			      .keep_G = l->major == 502, .damaged = damaged };
	if (lc_lua_table_scan(ctx, fk.val.value, gn_module_fn, &sc, &budget) < 0)
		*damaged = true;
	if (vm->n > 1)
		qsort(vm->names, vm->n, sizeof(*vm->names), gname_cmp);
	return vm;
}

/* registry._LOADED._G: the table of globals, in every release (the base
 * library registers itself as module "_G"), without the registry's
 * array part, whose layout changed in 5.5. */
int lc_lua_loaded_field(struct lc_lua_ctx *ctx, uint64_t g, const char *lib,
			const char *name, struct lc_tvalue *ret)
{
	const struct lc_layout *l = ctx->l;
	const char *const path[] = { "_LOADED", lib, name };
	size_t budget = LC_MAX_NODE_READS;
	struct lc_tvalue t;
	struct find_key fk = { 0 };

	if (!lib || !name || !LC_HAS(l->G.l_registry) ||
	    lc_lua_read_tvalue(ctx, g + (uint64_t)l->G.l_registry.off, &t) < 0 ||
	    base_type(l, t.tag) != 5)
		return -1;
	for (size_t i = 0; i < LC_ARRAY_SIZE(path); i++) {
		fk = (struct find_key){ .key = path[i] };
		if (lc_lua_table_scan(ctx, t.value, find_key_fn, &fk, &budget) < 0 ||
		    !fk.found)
			return -1;
		t = fk.val;
		if (i + 1 < LC_ARRAY_SIZE(path) && base_type(l, t.tag) != 5)
			return -1;
	}
	*ret = t;
	return 0;
}

char *lc_lua_global_string(struct lc_lua_ctx *ctx, uint64_t g,
			   const char *name)
{
	const struct lc_layout *l = ctx->l;
	struct lc_tvalue t;
	uint64_t len;
	bool cut;
	char *s;

	if (lc_lua_loaded_field(ctx, g, "_G", name, &t) < 0 ||
	    base_type(l, t.tag) != 4)
		return NULL;
	s = lc_lua_read_string(ctx, t.value, &len, &cut);
	if (s && strlen(s) > LC_VM_NAME_MAX)
		s[LC_VM_NAME_MAX] = '\0';
	return s;
}

uint64_t lc_lua_allocator(struct lc_lua_ctx *ctx, uint64_t g)
{
	uint64_t f;

	if (!LC_HAS(ctx->l->G.frealloc) ||
	    lc_read_u64(ctx->mem, g + (uint64_t)ctx->l->G.frealloc.off, &f) < 0)
		return 0;
	return f;
}

/* Whether VM g's index of package.loaded met memory that does not read
 * as its tags say: a name not found there may be one lost. */
static bool gnames_damaged(const struct lc_lua_ctx *ctx, uint64_t g)
{
	const struct gn_vm *vm = gn_vm_find(ctx->cache, g);

	return vm && vm->damaged;
}

static const char *global_name(struct lc_lua_ctx *ctx, uint64_t g,
			       uint64_t func_slot)
{
	struct lc_tvalue fv;

	if (lc_lua_read_tvalue(ctx, func_slot, &fv) < 0)
		return NULL;
	for (int round = 0; round < 2; round++) {
		struct gn_vm *vm = gnames_build(ctx, g, round > 0);
		size_t lo = 0, hi = vm ? vm->n : 0;
		const struct gname *e;
		struct lc_tvalue k, v;

		/* The first (lowest seq) name of the value. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			const struct gname *m = &vm->names[mid];

			if (m->value < fv.value ||
			    (m->value == fv.value && m->tag < fv.tag))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!vm || lo == vm->n || vm->names[lo].value != fv.value ||
		    vm->names[lo].tag != fv.tag)
			return NULL;
		e = &vm->names[lo];
		/* Built in this pass, or its node still holds it. */
		if (vm->serial == ctx->cache->serial ||
		    (node_read(ctx, e->node, &k, &v) == 0 &&
		     k.value == e->key && v.value == e->value && v.tag == e->tag))
			return e->name;
	}
	return NULL;
}

/* ---- states ---- */

int lc_lua_state_read(struct lc_lua_ctx *ctx, uint64_t addr,
		      struct lc_lstate *st)
{
	const struct lc_layout *l = ctx->l;
	struct lc_memory *t = ctx->mem;
	uint64_t v, m, mg;
	uint8_t tt;

	memset(st, 0, sizeof(*st));
	if (!addr || (addr & 7) || !lc_memory_is_data(t, addr, 64))
		return -1;
	if (lc_read_u8(t, addr + (uint64_t)l->L.tt.off, &tt) < 0 ||
	    (tt & 0x3f) != TAG_THREAD)
		return -1;
	if (lc_read_u64(t, addr + (uint64_t)l->L.l_G.off, &st->g) < 0 ||
	    !st->g || (st->g & 7) || !lc_memory_is_data(t, st->g, 64))
		return -1;
	if (lc_lua_mainthread(ctx, st->g, &m) < 0 || !m || (m & 7))
		return -1;
	if (m != addr) {
		if (lc_read_u8(t, m + (uint64_t)l->L.tt.off, &tt) < 0 ||
		    (tt & 0x3f) != TAG_THREAD ||
		    lc_read_u64(t, m + (uint64_t)l->L.l_G.off, &mg) < 0 ||
		    mg != st->g)
			return -1;
	}
	st->addr = addr;
	st->mainthread = m;
	if (lc_lua_read_field(ctx, addr, l->L.status, &v) < 0)
		return -1;
	st->status = (int)v;
	if (lc_read_u64(t, addr + (uint64_t)l->L.stack.off, &st->stack) < 0 ||
	    lc_lua_read_stkid(ctx, addr, l->L.top, st->stack, &st->top) < 0 ||
	    lc_lua_read_stkid(ctx, addr, l->L.stack_last, st->stack, &st->stack_last) < 0)
		return -1;
	if (!st->stack || st->top < st->stack || st->stack_last < st->stack ||
	    st->stack_last - st->stack > (1ull << 31) ||
	    st->top > st->stack_last + 64 * (uint64_t)l->sz_stack_slot)
		return -1;
	/* ci is &L->base_ci or a CallInfo Lua allocated: aligned, in
	 * writable memory.  (A stale copy on a machine stack can pass the
	 * checks above: with 5.4.5+'s StkIdRel, zeros read as offsets.) */
	if (lc_read_u64(t, addr + (uint64_t)l->L.ci.off, &st->ci) < 0 ||
	    !st->ci || (st->ci & 7) ||
	    !lc_memory_is_data(t, st->ci, l->sz_callinfo ? l->sz_callinfo : 8))
		return -1;
	if (l->major == 501) {
		if (lc_read_u64(t, addr + (uint64_t)l->L.base_ci.off,
				&st->base_ci) < 0 ||
		    lc_read_u64(t, addr + (uint64_t)l->L.end_ci.off,
				&st->end_ci) < 0 ||
		    st->ci < st->base_ci || st->ci >= st->end_ci ||
		    (st->ci - st->base_ci) % l->sz_callinfo)
			return -1;
		if (LC_HAS(l->L.savedpc))
			lc_read_u64(t, addr + (uint64_t)l->L.savedpc.off,
				    &st->savedpc);
	} else {
		st->base_ci = addr + (uint64_t)l->L.base_ci.off;
	}
	/* The base CallInfo's function is the stack's first slot: Lua puts
	 * it there (lstate.c, stack_init) and moves both together when the
	 * stack is reallocated (ldo.c, correctstack).  A stack pointer that
	 * disagrees is damaged, and would make every slot from it to top
	 * look live. */
	if (lc_lua_read_stkid(ctx, st->base_ci, l->ci.func, st->stack, &v) < 0 ||
	    v != st->stack)
		return -1;
	if (lc_lua_read_field(ctx, addr, l->L.nCcalls, &v) == 0)
		st->nCcalls = (uint32_t)v;
	return 0;
}

bool lc_lua_state_active(const struct lc_lstate *st)
{
	return st->ci != st->base_ci;
}

int lc_lua_state_ccalls(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
			unsigned *ret)
{
	const struct lc_layout *l = ctx->l;

	*ret = 0;
	if (l->major >= 504 && LC_HAS(l->Gx.Cstacklimit)) {
		/* 5.4.0/5.4.1 count down what is left of the C stack, less
		 * the CallInfos in use (lstate.h; lua_resume gives a thread
		 * its resumer's count less its own CallInfos): the calls in
		 * use are the limit less both. */
		uint64_t limit = 0, nci = 0;
		int64_t used;

		if (lc_lua_read_field(ctx, st->g, l->Gx.Cstacklimit, &limit) < 0)
			return -1;
		if (LC_HAS(l->Lx.nci))
			lc_lua_read_field(ctx, st->addr, l->Lx.nci, &nci);
		used = (int64_t)limit - (int64_t)(st->nCcalls & 0xffff) -
		       (int64_t)nci;
		*ret = used > 0 ? (unsigned)used : 0;
		return 0;
	}
	/* 5.4+ keeps the non-yieldable count in the high half (lstate.h:
	 * getCcalls); before, nCcalls is the C-call count itself. */
	*ret = l->major >= 504 ? (st->nCcalls & 0xffff) : st->nCcalls;
	return 0;
}

/* ---- CallInfo walk ---- */

/* The GC tag a Proto's header carries (lobject.h LUA_TPROTO, 5.4+
 * LUA_VPROTO): one past the basic types. */
static unsigned proto_tag(const struct lc_layout *l)
{
	return l->major >= 504 ? 10 : 9;
}

/* The object at addr lies in writable memory, as everything the
 * collector allocates does, and carries GC tag tag in its header
 * (CommonHeader's tt, at the same offset in every collectable object). */
static bool gc_tag_is(struct lc_lua_ctx *ctx, uint64_t addr, unsigned tag)
{
	uint8_t tt;

	return addr && !(addr & 7) && lc_memory_is_data(ctx->mem, addr, 16) &&
	       lc_read_u8(ctx->mem, addr + (uint64_t)ctx->l->L.tt.off, &tt) == 0 &&
	       (tt & 0x3f) == tag;
}

/* A closure's header tag: its variant (5.2.1+: lfunc.c luaF_newCclosure,
 * luaF_newLclosure), 5.2.0's the base type for both. */
static bool closure_tag_is(struct lc_lua_ctx *ctx, uint64_t addr,
			   unsigned variant)
{
	/* (Any 5.2 may be 5.2.0 when its release is guessed.) */
	return gc_tag_is(ctx, addr, variant) ||
	       (ctx->l->major == 502 &&
		(ctx->l->release == 50200 || ctx->l->version_guessed) &&
		gc_tag_is(ctx, addr, TAG_FUNCTION));
}

/* What the function in a CallInfo's slot is.  Every pointer it follows
 * must lead to an object of the type it claims (a closure's header tag,
 * its Proto's); a slot that holds no function, or points at the wrong
 * kind of object, leaves ci->bad set. */
static void decode_func(struct lc_lua_ctx *ctx, struct lc_ci *ci)
{
	const struct lc_layout *l = ctx->l;
	struct lc_tvalue tv;

	ci->bad = true;
	if (lc_lua_read_tvalue(ctx, ci->func, &tv) < 0)
		return;
	if (l->major == 501) {
		uint8_t isC;

		if (tv.tag != TAG_FUNCTION ||
		    !gc_tag_is(ctx, tv.value, TAG_FUNCTION) ||
		    lc_read_u8(ctx->mem, tv.value + (uint64_t)l->cl.isC.off, &isC) < 0 ||
		    isC > 1)
			return;
		if (isC) {
			if (lc_read_u64(ctx->mem, tv.value + (uint64_t)l->cl.f.off,
					&ci->cfunc) < 0 || !ci->cfunc)
				return;
			/* CClosure.f and LClosure.p share an offset: a C
			 * closure whose function is a Proto is a Lua
			 * closure with a damaged isC. */
			if (gc_tag_is(ctx, ci->cfunc, proto_tag(l))) {
				ci->proto = ci->cfunc;
				ci->cfunc = 0;
				ci->kind_mismatch = true;
				isC = 0;
			}
		} else if (lc_read_u64(ctx->mem, tv.value + (uint64_t)l->cl.p.off,
				       &ci->proto) < 0 ||
			   !gc_tag_is(ctx, ci->proto, proto_tag(l))) {
			return;
		}
		ci->is_lua = !isC;
		ci->bad = false;
		return;
	}
	switch (tv.tag & 0x3f) {
	case V_LCL:
		if (!closure_tag_is(ctx, tv.value, V_LCL) ||
		    lc_read_u64(ctx->mem, tv.value + (uint64_t)l->cl.p.off,
				&ci->proto) < 0 ||
		    !gc_tag_is(ctx, ci->proto, proto_tag(l)))
			return;
		ci->slot_lua = true;
		break;
	case V_LCF:
		ci->cfunc = tv.value;
		if (!ci->cfunc)
			return;
		break;
	case V_CCL:
		if (!closure_tag_is(ctx, tv.value, V_CCL) ||
		    lc_read_u64(ctx->mem, tv.value + (uint64_t)l->cl.f.off,
				&ci->cfunc) < 0 || !ci->cfunc)
			return;
		break;
	default:
		return;
	}
	ci->bad = false;
}

static int read_ci(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
		   uint64_t addr, struct lc_ci *ci)
{
	const struct lc_layout *l = ctx->l;
	uint64_t v;

	memset(ci, 0, sizeof(*ci));
	ci->addr = addr;
	if (lc_lua_read_stkid(ctx, addr, l->ci.func, st->stack, &ci->func) < 0)
		return -1;
	if (lc_read_u64(ctx->mem, addr + (uint64_t)l->ci.savedpc.off,
			&ci->savedpc) < 0)
		return -1;
	if (LC_HAS(l->ci.callstatus) &&
	    lc_lua_read_field(ctx, addr, l->ci.callstatus, &v) == 0) {
		/* The bits each release defines (lstate.h CIST_*; 5.2's
		 * byte uses all eight): any other is damage. */
		uint32_t known = l->major == 503 ? 0x1ff :
				 l->major == 504 ? (l->release < 50402 ? 0x1ff :
						    l->release < 50403 ? 0x3ff : 0x3fff) :
				 l->major == 505 ? 0x1ffffff : 0xffffffff;

		ci->callstatus = (uint32_t)v;
		if (ci->callstatus & ~known)
			ci->kind_mismatch = true;
	}
	/* 5.2/5.3 lua_yieldk (and a hook's yield, ldebug.c luaG_traceexec)
	 * move the top CallInfo's func below the yielded values and keep
	 * the real one's stack offset in ci->extra; resume moves it back.
	 * 5.2.0 does so for C functions only, in ci->u.c.extra. */
	if ((l->major == 502 || l->major == 503) && st->status == ST_YIELD &&
	    addr == st->ci && LC_HAS(l->ci.extra) &&
	    !(l->ci_extra_c_only && (ci->callstatus & cist_of(l)->lua))) {
		int64_t extra;

		if (lc_lua_read_sfield(ctx, addr, l->ci.extra, &extra) < 0 ||
		    extra < 0 || (uint64_t)extra % l->sz_stack_slot ||
		    st->stack + (uint64_t)extra >= st->top)
			return -1;
		ci->func = st->stack + (uint64_t)extra;
	}
	if (LC_HAS(l->ci.tailcalls) &&
	    lc_lua_read_field(ctx, addr, l->ci.tailcalls, &v) == 0)
		ci->tailcalls = (int)v;
	decode_func(ctx, ci);
	/* isLua as each version defines it (5.1: from the closure, in
	 * decode_func). */
	if (l->major >= 502) {
		const struct cist *b = cist_of(l);

		ci->is_lua = b->lua ? (ci->callstatus & b->lua) != 0 :
			     !(ci->callstatus & b->c);
		/* The status bits and the function in the slot must agree
		 * (luaD_precall sets one from the other).  Where they do
		 * not, the function says what the frame is, and the frame
		 * is marked. */
		if (!ci->bad && ci->is_lua != ci->slot_lua) {
			ci->kind_mismatch = true;
			ci->is_lua = ci->slot_lua;
		}
		/* Only a Lua function is tail called (OP_TAILCALL, callhook,
		 * luaD_pretailcall) or runs in a fresh or reentered
		 * luaV_execute; a C function's status starts from 0 (or
		 * CIST_C) at each call. */
		if (!ci->is_lua && (ci->callstatus & (b->tail | b->fresh | b->reentry)))
			ci->kind_mismatch = true;
	}
	if (ci->is_lua && !ci->proto)
		ci->bad = true;
	/* 5.1 keeps the running Lua function's pc in the state. */
	if (l->major == 501 && addr == st->ci && st->savedpc)
		ci->savedpc = st->savedpc;
	/* Only a hook yields with a Lua function on top.  Up to 5.4.6 it
	 * steps savedpc back onto the instruction it interrupted before it
	 * yields (5.1 lvm.c luaV_execute; 5.2-5.4.6 luaG_traceexec): the
	 * instruction that runs next is the one savedpc points at, one past
	 * what currentpc takes.  From 5.4.7 resume does that step instead,
	 * and savedpc is as in any other frame. */
	if (st->status == ST_YIELD && addr == st->ci && ci->is_lua &&
	    ci->savedpc) {
		ci->hook_yield = true;
		if (l->release < 50407)
			ci->savedpc += 4;	/* sizeof(Instruction) */
	}
	if (!ci->is_lua && LC_HAS(l->ci.k)) {
		uint64_t k;

		ci->continues = lc_read_u64(ctx->mem, addr + (uint64_t)l->ci.k.off,
					    &k) == 0 && k != 0;
	}
	return 0;
}

uint64_t lc_lua_ci_after(struct lc_lua_ctx *ctx, const struct lc_lstate *st)
{
	const struct lc_layout *l = ctx->l;
	uint64_t next;
	struct lc_ci c;

	if (l->major == 501) {
		/* end_ci is the array's last entry (lstate.c stack_init). */
		next = st->ci + l->sz_callinfo;
		if (!st->end_ci || st->ci >= st->end_ci || next > st->end_ci)
			return 0;
	} else if (lc_read_u64(ctx->mem, st->ci + (uint64_t)l->ci.next.off,
			       &next) < 0 || !next || (next & 7)) {
		return 0;
	}
	if (read_ci(ctx, st, next, &c) < 0 || c.bad || c.is_lua)
		return 0;
	return c.cfunc;
}

int lc_lua_ci_prev(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
		   struct lc_ci_cursor *c, uint64_t ci, uint64_t *prev)
{
	const struct lc_layout *l = ctx->l;
	uint64_t p, next;

	if (ctx->ci_steps >= LC_CI_BUDGET)
		return LC_CI_SPENT;
	ctx->ci_steps++;
	if (l->major == 501) {
		/* An array: step down, never below base_ci. */
		if (ci <= st->base_ci || ci - st->base_ci < l->sz_callinfo)
			return LC_CI_BROKEN;
		*prev = ci - l->sz_callinfo;
		return 0;
	}
	/* The list is doubly linked: a previous whose next is not us means
	 * a corrupted chain. */
	if (lc_read_u64(ctx->mem, ci + (uint64_t)l->ci.previous.off, &p) < 0 ||
	    !p || (p & 7) ||
	    lc_read_u64(ctx->mem, p + (uint64_t)l->ci.next.off, &next) < 0 ||
	    next != ci)
		return LC_CI_BROKEN;
	if (!c->power) {
		c->power = 1;
		c->mark = ci;
	}
	if (p == c->mark)
		return LC_CI_CYCLE;
	if (++c->lam == c->power) {
		c->mark = p;
		c->power *= 2;
		c->lam = 0;
	}
	*prev = p;
	return 0;
}

const char *lc_lua_ci_why(int step)
{
	switch (step) {
	case LC_CI_CYCLE: return "the CallInfo chain loops";
	case LC_CI_SPENT: return "the report's budget of CallInfo steps is spent";
	default: return "the CallInfo chain is broken";
	}
}

struct lc_error *lc_lua_walk(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
			     size_t max, struct lc_ci **ret, size_t *nret,
			     bool *partial)
{
	struct lc_ci *cis = NULL;
	struct lc_ci_cursor cur = { 0 };
	size_t n = 0, cap = 0;
	uint64_t ci = st->ci;

	*partial = false;
	for (size_t steps = 0; ci != st->base_ci; steps++) {
		struct lc_ci c;

		if (steps >= LC_MAX_CI || n >= max) {
			*partial = true;
			break;
		}
		if (read_ci(ctx, st, ci, &c) < 0) {
			*partial = true;
			break;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 32;
			struct lc_ci *p = realloc(cis, ncap * sizeof(*p));

			if (!p) {
				free(cis);
				return &lc_error_nomem;
			}
			cis = p;
			cap = ncap;
		}
		cis[n++] = c;
		if (lc_lua_ci_prev(ctx, st, &cur, ci, &ci) < 0) {
			*partial = true;
			break;
		}
	}
	*ret = cis;
	*nret = n;
	return NULL;
}

/* ---- Protos ---- */

/* Whether the arrays Proto p points to overlap one another or the Proto
 * itself.  Each is an allocation of its own (lfunc.c luaF_newproto,
 * lparser.c close_func, lundump.c), so any overlap is damage: an array
 * pointer that was written over with the Proto's address or a sibling
 * array's.  The Proto's extent is taken as far as its last known field
 * reaches; an array whose pointer or size is unreadable, 0 or out of
 * Lua's bounds is left to the checks that read it. */
static bool arrays_overlap(struct lc_lua_ctx *ctx, const struct proto *p)
{
	const struct lc_layout *l = ctx->l;
	const struct lc_field fs[] = {
		l->p.source, l->p.linedefined, l->p.lastlinedefined, l->p.code,
		l->p.sizecode, l->p.lineinfo, l->p.sizelineinfo,
		l->p.abslineinfo, l->p.sizeabslineinfo, l->p.k, l->p.sizek,
		l->p.locvars, l->p.sizelocvars, l->p.upvalues,
		l->p.sizeupvalues, l->p.numparams, l->p.is_vararg,
		l->p.maxstacksize, l->p.flag,
	};
	struct {
		struct lc_field ptr, size;
		uint64_t elem;
	} arr[] = {
		{ l->p.code, l->p.sizecode, 4 },
		{ l->p.k, l->p.sizek, l->sz_tvalue },
		{ l->p.locvars, l->p.sizelocvars, l->sz_locvar },
		{ l->p.upvalues, l->p.sizeupvalues,
		  l->major == 501 ? 8 : l->sz_upvaldesc },
		{ l->p.lineinfo, l->p.sizelineinfo, l->major >= 504 ? 1 : 4 },
		{ l->p.abslineinfo, l->p.sizeabslineinfo, l->sz_abslineinfo },
	};
	uint64_t lo[7], hi[7], end = 0;
	size_t n = 0;

	for (size_t i = 0; i < sizeof(fs) / sizeof(*fs); i++)
		if (LC_HAS(fs[i]) && (uint64_t)fs[i].off + fs[i].size > end)
			end = (uint64_t)fs[i].off + fs[i].size;
	lo[n] = p->addr;
	hi[n++] = p->addr + end;
	for (size_t i = 0; i < sizeof(arr) / sizeof(*arr); i++) {
		uint64_t a;
		int size;

		if (!LC_HAS(arr[i].ptr) || !LC_HAS(arr[i].size) || !arr[i].elem ||
		    lc_read_u64(ctx->mem, p->addr + (uint64_t)arr[i].ptr.off, &a) < 0 ||
		    rd_int(ctx, p->addr, arr[i].size, &size) < 0 ||
		    !a || size <= 0 || size > LC_MAX_CODE ||
		    a > UINT64_MAX - (uint64_t)size * arr[i].elem)
			continue;
		lo[n] = a;
		hi[n++] = a + (uint64_t)size * arr[i].elem;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (lo[i] < hi[j] && lo[j] < hi[i])
				return true;
	return false;
}

/* What Proto addr is, as the fields of its header that never change
 * once it is made (lparser.c, lundump.c): its source, lines, arrays and
 * their sizes, and its parameters; not its GC header, gclist or (5.2,
 * 5.3) closure cache.  Every array it points to is written before the
 * Proto is published and never after, so a Proto whose fingerprint is
 * the same in a later pass is the same function, and what was read from
 * its arrays holds.  -1 when unreadable. */
static int proto_fingerprint(struct lc_lua_ctx *ctx, uint64_t addr,
			     uint8_t *out, size_t *nout)
{
	const struct lc_layout *l = ctx->l;
	const struct lc_field fs[] = {
		l->p.source, l->p.linedefined, l->p.lastlinedefined, l->p.code,
		l->p.sizecode, l->p.lineinfo, l->p.sizelineinfo,
		l->p.abslineinfo, l->p.sizeabslineinfo, l->p.k, l->p.sizek,
		l->p.locvars, l->p.sizelocvars, l->p.upvalues,
		l->p.sizeupvalues, l->p.p, l->p.sizep, l->p.numparams,
		l->p.is_vararg, l->p.maxstacksize, l->p.flag,
	};
	uint8_t hdr[512];
	uint64_t end = 0;
	size_t n = 0;

	for (size_t i = 0; i < sizeof(fs) / sizeof(*fs); i++)
		if (LC_HAS(fs[i]) && (uint64_t)fs[i].off + fs[i].size > end)
			end = (uint64_t)fs[i].off + fs[i].size;
	if (!end || end > sizeof(hdr) || lc_read(ctx->mem, addr, hdr, end) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(fs) / sizeof(*fs); i++) {
		if (!LC_HAS(fs[i]))
			continue;
		if (n + fs[i].size > PROTO_FP)
			return -1;
		memcpy(out + n, hdr + fs[i].off, fs[i].size);
		n += fs[i].size;
	}
	*nout = n;
	return 0;
}

/* Where the index probes for addr first. */
static size_t cache_home(const struct lc_lua_cache *c, uint64_t addr)
{
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 20) & (c->nslots - 1);
}

static struct proto **cache_find(struct lc_lua_cache *c, uint64_t addr)
{
	size_t i;

	if (!c->nslots)
		return NULL;
	for (i = cache_home(c, addr); c->slot[i]; i = (i + 1) & (c->nslots - 1))
		if (c->protos[c->slot[i] - 1]->addr == addr)
			return &c->protos[c->slot[i] - 1];
	return NULL;
}

static void cache_index(struct lc_lua_cache *c, size_t k)
{
	size_t i = cache_home(c, c->protos[k]->addr);

	while (c->slot[i])
		i = (i + 1) & (c->nslots - 1);
	c->slot[i] = (uint32_t)(k + 1);
}

/* A new entry for addr, indexed; NULL when memory ran out. */
static struct proto *cache_add(struct lc_lua_cache *c, uint64_t addr)
{
	struct proto *p;

	if (c->n >= UINT32_MAX - 1)
		return NULL;
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		struct proto **np = realloc(c->protos, ncap * sizeof(*np));

		if (!np)
			return NULL;
		c->protos = np;
		c->cap = ncap;
	}
	if ((c->n + 1) * 2 > c->nslots) {
		size_t ns = c->nslots ? c->nslots * 2 : 128;
		uint32_t *sl = calloc(ns, sizeof(*sl));

		if (!sl)
			return NULL;
		free(c->slot);
		c->slot = sl;
		c->nslots = ns;
		for (size_t k = 0; k < c->n; k++)
			cache_index(c, k);
	}
	if (!(p = calloc(1, sizeof(*p))))
		return NULL;
	p->addr = addr;
	c->protos[c->n] = p;
	cache_index(c, c->n++);
	return p;
}

static struct proto *proto_get(struct lc_lua_ctx *ctx, uint64_t addr)
{
	const struct lc_layout *l = ctx->l;
	struct lc_lua_cache *c = ctx->cache;
	struct proto **pp = cache_find(c, addr), *p;
	uint8_t fp[PROTO_FP];
	size_t nfp = 0;
	uint64_t src;
	bool have_fp;

	if (pp && (*pp)->checked == c->serial)
		return *pp;
	have_fp = proto_fingerprint(ctx, addr, fp, &nfp) == 0;
	if (pp) {
		p = *pp;
		/* Read in an earlier pass: the same function still? */
		if (have_fp && p->ok && p->nfp == nfp &&
		    memcmp(p->fp, fp, nfp) == 0) {
			p->checked = c->serial;
			return p;
		}
		proto_free(p);
		memset(p, 0, sizeof(*p));
		p->addr = addr;
	} else if (!(p = cache_add(c, addr)))
		return NULL;
	p->checked = c->serial;
	if (have_fp) {
		memcpy(p->fp, fp, nfp);
		p->nfp = nfp;
	}
	if (lc_read_u64(ctx->mem, addr + (uint64_t)l->p.source.off, &src) < 0 ||
	    rd_int(ctx, addr, l->p.linedefined, &p->linedefined) < 0 ||
	    rd_int(ctx, addr, l->p.lastlinedefined, &p->lastlinedefined) < 0 ||
	    lc_read_u64(ctx->mem, addr + (uint64_t)l->p.code.off, &p->code) < 0 ||
	    (p->code & 3) ||	/* an array of 4-byte Instructions */
	    rd_int(ctx, addr, l->p.sizecode, &p->sizecode) < 0 ||
	    p->sizecode < 0 || p->sizecode > LC_MAX_CODE)
		return p;
	p->source = src ? lc_lua_read_string(ctx, src, NULL, NULL) : NULL;
	p->bad_source = src && !p->source;
	/* A main chunk has both 0 (lparser.c mainfunc); a function's last
	 * line is never before its first. */
	p->bad_lines = p->linedefined < 0 ||
		       (p->linedefined == 0 && p->lastlinedefined != 0) ||
		       (p->linedefined > 0 && p->lastlinedefined < p->linedefined);
	p->bad_arrays = arrays_overlap(ctx, p);
	p->ok = true;
	return p;
}

/* Whether tag is one a constant of release l can carry (lcode.c addk:
 * nil, a boolean, a number, a string; lobject.h makes the tags: 5.2+
 * marks strings collectable (0x40), 5.2.1+ tells short from long
 * strings, 5.3+ integers from floats, 5.4+ false from true by variant
 * bits). */
static bool k_tag_ok(const struct lc_layout *l, unsigned tag)
{
	switch (tag) {
	case 0x00: case 0x01: case 0x03:
		return true;
	case 0x04:
		return l->major == 501;
	case 0x44: case 0x54:
		return l->major >= 502;
	case 0x13:
		return l->major >= 503;
	case 0x11:
		return l->major >= 504;
	default:
		return false;
	}
}

/* Whether p's locals hold every register its closures capture: an
 * upvalue a CLOSURE takes from the stack (instack: lparser.c newupvalue,
 * a VLOCAL) is the register of a local active there (5.4+ activate a
 * local function's own name just after its CLOSURE, lparser.c
 * localfunc).  A child or an upvalue description that cannot be read
 * proves nothing and is passed over; at most LC_MAX_UPVALS * 16
 * descriptions are read. */
static bool captures_hold(struct lc_lua_ctx *ctx, const struct proto *p)
{
	const struct lc_layout *l = ctx->l;
	int sizep, budget = LC_MAX_UPVALS * 16;
	uint64_t parr;

	if (l->major < 502 || !LC_HAS(l->p.p) || !LC_HAS(l->p.sizep) ||
	    !LC_HAS(l->uvd.instack) || !LC_HAS(l->uvd.idx) || !l->sz_upvaldesc ||
	    rd_int(ctx, p->addr, l->p.sizep, &sizep) < 0 || sizep <= 0 ||
	    lc_read_u64(ctx->mem, p->addr + (uint64_t)l->p.p.off, &parr) < 0 ||
	    !parr || (parr & 7))
		return true;
	for (int pc = 0, k; budget > 0 &&
			    (pc = lc_names_next_closure(&p->view, pc, &k)) >= 0; pc++) {
		int nup, nact, next;
		uint64_t child, ups;

		if (k >= sizep ||
		    lc_read_u64(ctx->mem, parr + 8 * (uint64_t)k, &child) < 0 ||
		    !gc_tag_is(ctx, child, proto_tag(l)) ||
		    rd_int(ctx, child, l->p.sizeupvalues, &nup) < 0 ||
		    nup <= 0 || nup > LC_MAX_UPVALS ||
		    lc_read_u64(ctx->mem, child + (uint64_t)l->p.upvalues.off, &ups) < 0 ||
		    !ups)
			continue;
		nact = lc_names_active(&p->view, pc);
		next = lc_names_active(&p->view, pc + 1);
		if (next > nact)
			nact = next;
		for (int u = 0; u < nup && budget-- > 0; u++) {
			uint64_t d = ups + (uint64_t)u * l->sz_upvaldesc, instack, idx;

			if (lc_lua_read_field(ctx, d, l->uvd.instack, &instack) < 0 ||
			    lc_lua_read_field(ctx, d, l->uvd.idx, &idx) < 0)
				break;
			if (instack == 1 && idx >= (uint64_t)nact)
				return false;
		}
	}
	return true;
}

/* Load what naming needs: code, string constants, locals, upvalue names.
 * Anything unreadable is left empty (names then come out NULL). */
static bool proto_load_names(struct lc_lua_ctx *ctx, struct proto *p)
{
	const struct lc_layout *l = ctx->l;
	int sizek = 0, nloc = 0, nup = 0, np = 0, isva = 0, maxs = 0;
	uint64_t kaddr = 0, locaddr = 0, upaddr = 0, li = 0;
	bool unnamed = false;	/* an upvalue without a name */

	if (p->names_tried)
		return p->names_ok;
	p->names_tried = true;
	if (p->bad_arrays)
		p->names_damaged = true;
	if (!p->ok || p->sizecode <= 0)
		return false;
	p->codev = malloc((size_t)p->sizecode * 4);
	if (!p->codev ||
	    lc_read(ctx->mem, p->code, p->codev, (size_t)p->sizecode * 4) < 0)
		return false;
	/* Everything naming reads is checked: sizes within what Lua allows,
	 * arrays where their sizes say, names that are strings, local
	 * ranges inside the code.  Anything else is damage, and a name
	 * taken from it is marked (names_damaged). */
	if (rd_int(ctx, p->addr, l->p.sizek, &sizek) < 0 ||
	    lc_read_u64(ctx->mem, p->addr + (uint64_t)l->p.k.off, &kaddr) < 0 ||
	    sizek < 0 || sizek > LC_MAX_K || (sizek > 0 && (!kaddr || (kaddr & 7))))
		p->names_damaged = true;
	if (sizek > 0 && sizek <= LC_MAX_K && kaddr) {
		p->k = calloc((size_t)sizek, sizeof(*p->k));
		p->kstr = calloc((size_t)sizek, sizeof(*p->kstr));
		if (p->k && p->kstr) {
			p->nk = sizek;
			for (int i = 0; i < sizek; i++) {
				struct lc_tvalue tv;
				unsigned base;

				if (lc_lua_read_tvalue(ctx, kaddr + (uint64_t)i * l->sz_tvalue,
					      &tv) < 0) {
					p->names_damaged = true;
					continue;
				}
				base = l->major == 501 ? tv.tag : (tv.tag & 0x0f);
				/* Constants are nil, booleans, numbers and
				 * strings (lcode.c addk), each with the tag
				 * its release gives it. */
				if (!k_tag_ok(l, tv.tag))
					p->names_damaged = true;
				if (base != 4)	/* LUA_TSTRING */
					continue;
				p->kstr[i] = lc_lua_read_string(ctx, tv.value, NULL, NULL);
				if (!p->kstr[i])
					p->names_damaged = true;
				p->k[i].is_string = p->kstr[i] != NULL;
				p->k[i].str = p->kstr[i];
			}
		}
	}
	if (rd_int(ctx, p->addr, l->p.sizelocvars, &nloc) < 0 ||
	    lc_read_u64(ctx->mem, p->addr + (uint64_t)l->p.locvars.off, &locaddr) < 0 ||
	    nloc < 0 || nloc > LC_MAX_LOCVARS || (nloc > 0 && !locaddr))
		p->names_damaged = true;
	if (nloc > 0 && nloc <= LC_MAX_LOCVARS && locaddr && l->sz_locvar) {
		p->locvars = calloc((size_t)nloc, sizeof(*p->locvars));
		p->locnames = calloc((size_t)nloc, sizeof(*p->locnames));
		if (p->locvars && p->locnames) {
			p->nlocvars = nloc;
			for (int i = 0; i < nloc; i++) {
				uint64_t a = locaddr + (uint64_t)i * l->sz_locvar;
				uint64_t name = 0;

				lc_read_u64(ctx->mem, a + (uint64_t)l->lv.varname.off,
					    &name);
				p->locnames[i] = lc_lua_read_string(ctx, name, NULL, NULL);
				p->locvars[i].name = p->locnames[i];
				if (!p->locnames[i])
					p->names_damaged = true;
				if (rd_int(ctx, a, l->lv.startpc,
					   &p->locvars[i].startpc) < 0 ||
				    rd_int(ctx, a, l->lv.endpc,
					   &p->locvars[i].endpc) < 0) {
					/* An unreadable range never matches. */
					p->locvars[i].startpc = 1;
					p->locvars[i].endpc = 0;
					p->names_damaged = true;
				}
				/* lparser.c: a local lives from where it is
				 * declared to where its block ends, inside
				 * the code. */
				if (p->locvars[i].startpc < 0 ||
				    p->locvars[i].startpc > p->locvars[i].endpc ||
				    p->locvars[i].endpc > p->sizecode)
					p->names_damaged = true;
				/* Locals are registered as they come into
				 * scope (lparser.c adjustlocalvars; 5.1-5.3
				 * register at the declaration and set startpc
				 * there, in the same order), so their starts
				 * never go back. */
				if (i > 0 && p->locvars[i].startpc <
					     p->locvars[i - 1].startpc)
					p->names_damaged = true;
			}
		}
	}
	/* 5.1 keeps upvalue names only (NULL when stripped); 5.2+ an
	 * Upvaldesc per upvalue, named or not (a stripped dump). */
	if (rd_int(ctx, p->addr, l->p.sizeupvalues, &nup) < 0 ||
	    lc_read_u64(ctx->mem, p->addr + (uint64_t)l->p.upvalues.off, &upaddr) < 0 ||
	    nup < 0 || nup > LC_MAX_UPVALS || (nup > 0 && !upaddr))
		p->names_damaged = true;
	if (nup > 0 && nup <= LC_MAX_UPVALS && upaddr) {
		p->upvalnames = calloc((size_t)nup, sizeof(*p->upvalnames));
		if (p->upvalnames) {
			p->nupvals = nup;
			for (int i = 0; i < nup; i++) {
				uint64_t name = 0;
				uint64_t d = upaddr + (uint64_t)i * l->sz_upvaldesc;
				uint64_t a = l->major == 501 ?
					upaddr + (uint64_t)i * 8 :
					d + (uint64_t)l->uvd.name.off;
				int instack = 0, kind = 0;

				if (l->major != 501 && !l->sz_upvaldesc)
					break;
				if (lc_read_u64(ctx->mem, a, &name) < 0)
					p->names_damaged = true;
				p->upvalnames[i] = lc_lua_read_string(ctx, name, NULL, NULL);
				if (name && !p->upvalnames[i])
					p->names_damaged = true;
				/* 5.2+: whether the upvalue is a register of
				 * the enclosing function is a boolean
				 * (lparser.c newupvalue); 5.4+ its kind is the
				 * variable's (lparser.h VDKREG..RDKCTC, 5.5 up
				 * to GDKCONST). */
				if (l->major != 501 &&
				    ((LC_HAS(l->uvd.instack) &&
				      (rd_int(ctx, d, l->uvd.instack, &instack) < 0 ||
				       instack < 0 || instack > 1)) ||
				     (LC_HAS(l->uvd.kind) &&
				      (rd_int(ctx, d, l->uvd.kind, &kind) < 0 ||
				       kind < 0 || kind > (l->major >= 505 ? 6 : 3)))))
					p->names_damaged = true;
				if (!name)
					unnamed = true;
			}
		}
	}
	rd_int(ctx, p->addr, l->p.numparams, &np);
	if (LC_HAS(l->p.flag)) {
		/* 5.5: the varargs sit below the function (as in 5.4's
		 * is_vararg functions) only when they are hidden. */
		rd_int(ctx, p->addr, l->p.flag, &isva);
		isva &= PF55_VAHID;
	} else {
		rd_int(ctx, p->addr, l->p.is_vararg, &isva);
	}
	rd_int(ctx, p->addr, l->p.maxstacksize, &maxs);
	/* lcode.c luaK_checkstack: at most MAXREGS (255; 5.1 MAXSTACK,
	 * 250) registers, the parameters among them. */
	if (maxs < 2 || maxs > 255 || np < 0 || np > maxs)
		p->names_damaged = true;
	/* lparser.c open_func starts every function at 2 registers, and
	 * its parameters are its first locals: a function with line info
	 * (not stripped) has at least that many. */
	/* (Nor are its upvalues unnamed: a stripped dump drops line info
	 * and names together.) */
	if (lc_read_u64(ctx->mem, p->addr + (uint64_t)l->p.lineinfo.off, &li) == 0 &&
	    li && (nloc < np || unnamed))
		p->names_damaged = true;
	p->view = (struct lc_proto_view){
		.release = l->release,
		.code = p->codev, .ncode = p->sizecode,
		.k = p->k, .nk = p->nk,
		.locvars = p->locvars, .nlocvars = p->nlocvars,
		.upvalnames = (const char *const *)p->upvalnames,
		.nupvalnames = p->nupvals,
		.numparams = np, .is_vararg = isva, .maxstacksize = maxs,
		.stripped = li == 0,
	};
	if (li && !p->names_damaged && !captures_hold(ctx, p))
		p->names_damaged = true;
	p->names_ok = true;
	return true;
}

const struct lc_proto_view *lc_lua_proto_view(struct lc_lua_ctx *ctx,
					      uint64_t proto)
{
	struct proto *p = proto_get(ctx, proto);

	if (!p || !proto_load_names(ctx, p))
		return NULL;
	return &p->view;
}

static int current_pc(const struct proto *p, const struct lc_ci *ci);

int lc_lua_current_pc(struct lc_lua_ctx *ctx, const struct lc_ci *ci)
{
	struct proto *p;

	if (!ci->is_lua || ci->bad || !(p = proto_get(ctx, ci->proto)))
		return -2;
	return current_pc(p, ci);
}

/* pc of the instruction a Lua CallInfo is executing (ldebug.c:currentpc:
 * savedpc points past it; so does luaV_execute's own pc): -1 if the
 * function has not run its first instruction (savedpc at the code's
 * start), PC_BAD if savedpc is not inside the Proto's code or not
 * aligned on an instruction. */
#define PC_BAD	(-2)

static int current_pc(const struct proto *p, const struct lc_ci *ci)
{
	uint64_t at = ci->livepc ? ci->livepc : ci->savedpc;
	uint64_t d;

	if (!p->ok || !p->code || at < p->code || (at - p->code) % 4)
		return PC_BAD;
	d = (at - p->code) / 4;
	if (d > (uint64_t)p->sizecode)
		return PC_BAD;
	return (int)d - 1;
}

/* 5.4+: the line of pc, from the nearest absolute anchor at or below
 * it and the deltas after (ldebug.c luaG_getfuncline, getbaseline). */
static int line54(struct lc_lua_ctx *ctx, const struct proto *p, uint64_t li,
		  int pc, bool *partial)
{
	const struct lc_layout *l = ctx->l;

	{
		uint64_t abs = 0;
		int nabs = 0, basepc = -1, line = p->linedefined;
		int lo = 0, hi;

		lc_read_u64(ctx->mem, p->addr + (uint64_t)l->p.abslineinfo.off, &abs);
		rd_int(ctx, p->addr, l->p.sizeabslineinfo, &nabs);
		if (nabs < 0 || nabs > LC_MAX_CODE || !l->sz_abslineinfo)
			nabs = 0;
		/* Binary search for the last anchor with anchor.pc <= pc. */
		hi = nabs;
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;
			int apc;

			if (rd_int(ctx, abs + (uint64_t)mid * l->sz_abslineinfo,
				   l->ali.pc, &apc) < 0) {
				*partial = true;
				return -1;
			}
			if (apc <= pc)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > 0) {
			uint64_t a = abs + (uint64_t)(lo - 1) * l->sz_abslineinfo;
			int8_t mark = 0;

			if (rd_int(ctx, a, l->ali.pc, &basepc) < 0 ||
			    rd_int(ctx, a, l->ali.line, &line) < 0 ||
			    basepc < 0 || basepc > pc) {
				*partial = true;
				return -1;
			}
			/* An anchor's instruction says so in lineinfo
			 * (lcode.c savelineinfo: ABSLINEINFO). */
			if (lc_read(ctx->mem, li + (uint64_t)basepc, &mark, 1) < 0 ||
			    mark != -0x80)
				*partial = true;
		}
		if (pc - basepc > 0) {
			int n = pc - basepc;
			int8_t *d = malloc((size_t)n);
			int64_t sum = line;

			if (!d || lc_read(ctx->mem, li + (uint64_t)(basepc + 1), d,
					  (size_t)n) < 0) {
				free(d);
				*partial = true;
				return -1;
			}
			/* At most 2^24 deltas of at most 128: no overflow in
			 * 64 bits; a sum no int holds is damage. */
			/* An instruction whose line is absolute (ldebug.h
			 * ABSLINEINFO, -0x80) has an anchor: none can lie
			 * past the anchor found. */
			for (int i = 0; i < n; i++) {
				if (d[i] == -0x80)
					*partial = true;
				sum += d[i];
			}
			free(d);
			if (sum < INT_MIN || sum > INT_MAX) {
				*partial = true;
				return -1;
			}
			line = (int)sum;
		}
		return line;
	}
}

/* Whether every instruction's line in p's line info lies where Lua
 * puts it: a function's inside linedefined..lastlinedefined, a main
 * chunk's inside 1 up to the line of its last instruction (the RETURN
 * close_func adds at the chunk's last token).  5.4+ line info is read as
 * luaG_getfuncline reads it, deltas from the anchors in abslineinfo:
 * each absolute mark must meet the next anchor, at its pc.  One damaged
 * byte moves every line after it up to the next anchor; this finds the
 * move where the current line alone looks plausible.  Read once per
 * Proto, in blocks. */
static bool lines_hold(struct lc_lua_ctx *ctx, struct proto *p, uint64_t li,
		       int n)
{
	const struct lc_layout *l = ctx->l;
	uint64_t abs = 0;
	int nabs = 0, next = 0, lo = 1, hi = INT_MAX - 1;
	int64_t line = p->linedefined, min = INT64_MAX, max = INT64_MIN;
	bool ok = true;

	if (p->lines_tried)
		return p->lines_ok;
	p->lines_tried = true;
	if (n <= 0 || n > LC_MAX_CODE)
		return p->lines_ok = false;
	if (p->linedefined > 0) {
		lo = p->linedefined;
		hi = p->lastlinedefined;
	}
	if (l->major >= 504) {
		lc_read_u64(ctx->mem, p->addr + (uint64_t)l->p.abslineinfo.off, &abs);
		rd_int(ctx, p->addr, l->p.sizeabslineinfo, &nabs);
		if (nabs < 0 || nabs > n || !l->sz_abslineinfo)
			return p->lines_ok = false;
	}
	/* Only the extremes and the last line are kept. */
	for (int at = 0; at < n && ok; ) {
		int8_t d8[4096];
		int32_t d32[1024];
		int m = l->major >= 504 ? (int)sizeof(d8) : (int)(sizeof(d32) / 4);

		if (m > n - at)
			m = n - at;
		if (l->major < 504 ?
		    lc_read(ctx->mem, li + (uint64_t)at * 4, d32, (size_t)m * 4) < 0 :
		    lc_read(ctx->mem, li + (uint64_t)at, d8, (size_t)m) < 0) {
			ok = false;
			break;
		}
		for (int i = 0; i < m && ok; i++) {
			if (l->major < 504) {
				line = d32[i];
			} else if (d8[i] == -0x80) {
				int apc, aline;
				uint64_t a = abs + (uint64_t)next * l->sz_abslineinfo;

				if (next >= nabs ||
				    rd_int(ctx, a, l->ali.pc, &apc) < 0 ||
				    rd_int(ctx, a, l->ali.line, &aline) < 0 ||
				    apc != at + i) {
					ok = false;
					break;
				}
				next++;
				line = aline;
			} else {
				line += d8[i];
				if (line < INT_MIN || line > INT_MAX) {
					ok = false;
					break;
				}
			}
			if (line < min)
				min = line;
			if (line > max)
				max = line;
		}
		at += m;
	}
	if (ok && p->linedefined == 0)
		hi = (int)line;		/* the last instruction's */
	return p->lines_ok = ok && min >= lo && max <= hi;
}

/* Line of pc.  5.1-5.3: lineinfo[pc] is absolute (ldebug.c:getfuncline /
 * 5.1 getline).  5.4: deltas from the nearest absolute anchor at or below
 * pc (line54). */
static int line_read(struct lc_lua_ctx *ctx, struct proto *p, int pc,
		     bool *partial);

/* line_read, answered once per pc of a Proto (PROTO_LINES kept, the
 * oldest replaced). */
static int line_of(struct lc_lua_ctx *ctx, struct proto *p, int pc,
		   bool *partial)
{
	bool bad = false;
	unsigned i;
	int line;

	for (i = 0; i < p->nlines; i++)
		if (p->lines[i].pc == pc) {
			*partial |= p->lines[i].partial;
			return p->lines[i].line;
		}
	line = line_read(ctx, p, pc, &bad);
	*partial |= bad;
	i = p->nlines < PROTO_LINES ? p->nlines++ :
	    p->nextline++ % PROTO_LINES;
	p->lines[i].pc = pc;
	p->lines[i].line = line;
	p->lines[i].partial = bad;
	return line;
}

static int line_read(struct lc_lua_ctx *ctx, struct proto *p, int pc,
		     bool *partial)
{
	const struct lc_layout *l = ctx->l;
	uint64_t li = 0;
	int sizeli = 0;

	if (lc_read_u64(ctx->mem, p->addr + (uint64_t)l->p.lineinfo.off, &li) < 0 ||
	    rd_int(ctx, p->addr, l->p.sizelineinfo, &sizeli) < 0) {
		*partial = true;
		return -1;
	}
	/* Lua keeps a line per instruction (lcode.c savelineinfo, the
	 * vector shrunk to the code at close_func), or none at all when
	 * the chunk was stripped (lundump.c: NULL and 0). */
	if (!li && sizeli == 0)
		return l->major == 501 ? 0 : -1;	/* stripped */
	if (!li || sizeli != p->sizecode) {
		*partial = true;
		return -1;
	}
	if (pc == -1)
		pc = 0;
	if (pc < 0 || pc >= sizeli) {
		*partial = true;
		return -1;
	}
	if (!lines_hold(ctx, p, li, sizeli))
		*partial = true;
	if (l->major < 504) {
		int32_t line;

		if (lc_read(ctx->mem, li + (uint64_t)pc * 4, &line, 4) < 0) {
			*partial = true;
			return -1;
		}
		/* llex.c counts lines from 1 and stops a chunk before
		 * MAX_INT of them. */
		if (line < 1 || line == INT32_MAX || line < p->linedefined)
			*partial = true;
		/* The last instruction, the RETURN close_func adds, is at
		 * the function's last line ('end', or the chunk's end): no
		 * instruction is after it. */
		{
			int32_t last;

			if (lc_read(ctx->mem, li + (uint64_t)(sizeli - 1) * 4,
				    &last, 4) < 0 ||
			    (p->linedefined > 0 && last != p->lastlinedefined) ||
			    line > last)
				*partial = true;
		}
		return line;
	}
	{
		int line = line54(ctx, p, li, pc, partial);
		int last = line54(ctx, p, li, sizeli - 1, partial);

		/* As above: nothing is after the last instruction's line,
		 * the function's last. */
		if (line != -1 && last != -1 &&
		    ((p->linedefined > 0 && last != p->lastlinedefined) ||
		     line > last))
			*partial = true;
		/* Lines count from 1, and a function's code is on or after
		 * the line that defines it. */
		if (line < 1 || line == INT_MAX || line < p->linedefined)
			*partial = true;
		return line;
	}
}

/* luaO_chunkid: the short source shown in messages (5.1's rules for
 * long names differ from 5.2's on). */
static char *chunkid(const char *source, int major)
{
	char out[LUA_IDSIZE];
	size_t bufflen = LUA_IDSIZE, srclen;

	if (!source)
		return strdup("?");
	srclen = strlen(source);
	if (major == 501 && *source == '@') {
		/* 5.1: "..." and the last LUA_IDSIZE - 8 bytes of a long
		 * file name (room kept for " '...' "). */
		size_t room = bufflen - sizeof(" '...' ");

		if (srclen - 1 > room)
			snprintf(out, sizeof(out), "...%s", source + srclen - room);
		else
			snprintf(out, sizeof(out), "%s", source + 1);
	} else if (major == 501 && *source != '=') {
		/* 5.1: up to the first newline or carriage return, at most
		 * LUA_IDSIZE - 17 bytes, "..." when cut. */
		size_t room = bufflen - sizeof(" [string \"...\"] ");
		size_t len = strcspn(source, "\n\r");

		if (len > room)
			len = room;
		snprintf(out, sizeof(out), "[string \"%.*s%s\"]", (int)len,
			 source, source[len] ? "..." : "");
	} else if (*source == '=') {
		snprintf(out, sizeof(out), "%.*s", (int)(bufflen - 1),
			 source + 1);
	} else if (*source == '@') {
		if (srclen - 1 <= bufflen - 1)
			snprintf(out, sizeof(out), "%s", source + 1);
		else
			snprintf(out, sizeof(out), "...%s",
				 source + 1 + (srclen - 1) - (bufflen - 1 - 3));
	} else {
		const char *nl = strchr(source, '\n');
		size_t room = bufflen - sizeof("[string \"...\"]");
		size_t len = nl ? (size_t)(nl - source) : srclen;

		if (len < srclen || len > room) {
			if (len > room)
				len = room;
			snprintf(out, sizeof(out), "[string \"%.*s...\"]",
				 (int)len, source);
		} else {
			snprintf(out, sizeof(out), "[string \"%s\"]", source);
		}
	}
	return strdup(out);
}

/* Whether state st allows hooks (allowhook read and nonzero).  A frame
 * runs a hook (CIST_HOOKED) or a finalizer (CIST_FIN) only while its
 * state's allowhook is 0: luaD_hook and GCTM clear it for the call and
 * set it back after, and an error out of either leaves it 0 until a
 * pcall below restores it with the frames it drops.  Either bit on a
 * state that allows hooks is damage, not a name. */
static bool hooks_allowed(struct lc_lua_ctx *ctx, const struct lc_lstate *st)
{
	uint64_t v;

	return LC_HAS(ctx->l->L.allowhook) &&
	       lc_lua_read_field(ctx, st->addr, ctx->l->L.allowhook, &v) == 0 &&
	       v != 0;
}

/* The name Lua gives cis[i], from its caller (ldebug.c: getfuncname and
 * funcnamefromcall per version). */
static const char *func_name(struct lc_lua_ctx *ctx,
			     const struct lc_lstate *st,
			     const struct lc_ci *cis, size_t n, size_t i,
			     const char **name, bool *damaged)
{
	const struct lc_layout *l = ctx->l;
	const struct lc_ci *ci = &cis[i];
	const struct lc_ci *caller = i + 1 < n ? &cis[i + 1] : NULL;
	struct proto *p;
	int pc;
	const struct cist *b = cist_of(l);

	switch (l->major) {
	case 501:	/* 5.1 getfuncname */
		if ((ci->is_lua && ci->tailcalls > 0) || !caller ||
		    !caller->is_lua)
			return NULL;
		break;
	case 502:	/* 5.2 lua_getinfo 'n' */
		if ((ci->callstatus & b->tail) || !caller || !caller->is_lua)
			return NULL;
		break;
	default:
		if (l->major == 503 || l->release < 50404) {
			/* 5.3-5.4.3 getfuncname, funcnamefromcode: the
			 * finalizer flag of the frame itself, then the caller,
			 * then its hook flag. */
			if (ci->callstatus & b->fin) {
				*damaged = hooks_allowed(ctx, st);
				*name = "__gc";
				return "metamethod";
			}
			if ((ci->callstatus & b->tail) || !caller ||
			    !caller->is_lua)
				return NULL;
			if (caller->callstatus & b->hooked) {
				*damaged = hooks_allowed(ctx, st);
				*name = "?";
				return "hook";
			}
			break;
		}
		/* 5.4.4+ and 5.5 getfuncname, funcnamefromcall */
		if ((ci->callstatus & b->tail) || !caller)
			return NULL;
		if (caller->callstatus & b->hooked) {
			*damaged = hooks_allowed(ctx, st);
			*name = "?";
			return "hook";
		}
		if (caller->callstatus & b->fin) {
			*damaged = hooks_allowed(ctx, st);
			*name = "__gc";
			return "metamethod";
		}
		if (!caller->is_lua)
			return NULL;
		break;
	}
	if (caller->bad || !caller->proto)
		return NULL;
	p = proto_get(ctx, caller->proto);
	if (!p || !proto_load_names(ctx, p)) {
		*damaged = true;
		return NULL;
	}
	pc = current_pc(p, caller);
	if (pc < 0) {
		*damaged = pc == PC_BAD;
		return NULL;
	}
	*damaged = p->names_damaged;
	{
		const char *what;
		bool d = false;
		unsigned k;

		for (k = 0; k < p->ncalls; k++)
			if (p->calls[k].pc == pc) {
				*name = p->calls[k].name;
				*damaged |= p->calls[k].damaged;
				return p->calls[k].what;
			}
		what = lc_names_from_call_checked(&p->view, pc, name, &d);
		*damaged |= d;
		k = p->ncalls < PROTO_LINES ? p->ncalls++ :
		    p->nextcall++ % PROTO_LINES;
		p->calls[k].pc = pc;
		p->calls[k].what = what;
		p->calls[k].name = *name;
		p->calls[k].damaged = d;
		return what;
	}
}

/* What luaV_execute keeps of the frame it runs, as lc_lua_run_marks
 * counts it: each a distinct kind of evidence. */
enum { MARK_CI, MARK_CL, MARK_BASE, MARK_K, MARK_PC, NMARKS };

unsigned lc_lua_run_marks(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
			  const struct lc_ci *ci, const uint64_t *words,
			  size_t n)
{
	const struct lc_layout *l = ctx->l;
	uint64_t want[NMARKS] = { 0 }, k = 0;
	struct lc_tvalue fv;
	struct proto *p;
	unsigned found = 0, count = 0;

	if (!ci->is_lua || ci->bad || !(p = proto_get(ctx, ci->proto)) ||
	    !p->ok || !p->code || p->sizecode <= 0)
		return 0;
	want[MARK_CI] = ci->addr;
	if (lc_lua_read_tvalue(ctx, ci->func, &fv) == 0)
		want[MARK_CL] = fv.value;
	if (l->major == 501) {
		if (LC_HAS(l->ci.base))
			lc_lua_read_stkid(ctx, ci->addr, l->ci.base, st->stack,
					  &want[MARK_BASE]);
	} else {
		want[MARK_BASE] = ci->func + l->sz_stack_slot;
	}
	if (LC_HAS(l->p.k) && lc_lua_read_field(ctx, ci->proto, l->p.k, &k) == 0)
		want[MARK_K] = k;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = words[i];

		if (!v)
			continue;
		for (unsigned m = 0; m < MARK_PC; m++)
			if (v == want[m])
				found |= 1u << m;
		if (v >= p->code && (v - p->code) % 4 == 0 &&
		    (v - p->code) / 4 <= (uint64_t)p->sizecode)
			found |= 1u << MARK_PC;
	}
	for (unsigned m = 0; m < NMARKS; m++)
		count += (found >> m) & 1;
	return count;
}

/* Lua 5.1 and 5.4+ run a function with its pc in a local of luaV_execute
 * (lvm.c: "pc"), stored into the CallInfo (savedpc) only before calls and
 * protected operations: the VM's own work in between, an allocation in a
 * table constructor say, sees a savedpc some instructions behind.  5.2 and
 * 5.3 execute through savedpc itself and have no such local.  luaV_execute
 * reads savedpc back only when it enters or returns to a frame, so for the
 * frame it runs its pc is never older than savedpc -- except that a hook
 * (5.4+ luaG_traceexec, luaD_hookcall) stores pc + 1 instruction as its
 * reference, which is then right.  The pc must be this frame's: between a
 * call's new CallInfo and luaV_execute taking it over, the pc is still the
 * caller's, so luaV_execute's ci (5.4+), or else its base (5.1: ci->base;
 * 5.4: func + 1), must name this CallInfo. */
bool lc_lua_live_pc(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
		    struct lc_ci *ci, const struct lc_runvars *rv)
{
	const struct lc_layout *l = ctx->l;
	uint64_t pc = rv->vals[LC_RUNVAR_PC];
	bool named = false;
	struct proto *p;

	if (!(rv->mask & (1u << LC_RUNVAR_PC)) || !ci->is_lua || ci->bad ||
	    !(p = proto_get(ctx, ci->proto)) || !p->ok)
		return false;
	if (pc < p->code || (pc - p->code) % 4 ||
	    (pc - p->code) / 4 > (uint64_t)p->sizecode)
		return false;	/* not in this function's code */
	/* ci first: base goes stale while a call out moves the stack
	 * (luaV_execute updates it on return). */
	if (rv->mask & (1u << LC_RUNVAR_CI)) {
		if (rv->vals[LC_RUNVAR_CI] != ci->addr)
			return false;
		named = true;
	} else if (rv->mask & (1u << LC_RUNVAR_BASE)) {
		uint64_t base = 0;

		if (l->major == 501) {
			if (!LC_HAS(l->ci.base) ||
			    lc_lua_read_stkid(ctx, ci->addr, l->ci.base,
					      st->stack, &base) < 0)
				return false;
		} else {
			base = ci->func + l->sz_stack_slot;
		}
		if (rv->vals[LC_RUNVAR_BASE] != base)
			return false;
		named = true;
	} else if (rv->mask & (1u << LC_RUNVAR_CL)) {
		/* 5.1 at -O2 keeps neither ci (it has none) nor base, but
		 * the closure it runs: it must be this frame's. */
		struct lc_tvalue fv;

		if (lc_lua_read_tvalue(ctx, ci->func, &fv) < 0 ||
		    fv.value != rv->vals[LC_RUNVAR_CL])
			return false;
		named = true;
	}
	if (!named || ci->savedpc == pc + 4)
		return false;
	ci->livepc = pc;
	return true;
}

/* The line a Lua frame is at, checked: its pc inside the code, its line
 * inside the function's lines, [linedefined, lastlinedefined] (a main
 * chunk's from 1).  What fails is marked in *partial; a pc outside the
 * code has no line (-1). */
static int frame_line(struct lc_lua_ctx *ctx, struct proto *p,
		      const struct lc_ci *ci, bool *partial)
{
	int pc = current_pc(p, ci);
	int line;

	if (pc == PC_BAD) {
		*partial = true;
		return -1;
	}
	/* 5.4 gives a function that has not started its linedefined
	 * (luaG_getfuncline with pc -1). */
	if (pc == -1 && ctx->l->major >= 504)
		return p->linedefined;
	{
		bool bad = false;

		line = line_of(ctx, p, pc, &bad);
		if (bad) {
			*partial = true;
			return line;
		}
	}
	if (line == -1 || (line == 0 && ctx->l->major == 501))
		return line;	/* stripped */
	if (line < 1 || line == INT32_MAX ||
	    (p->linedefined > 0 &&
	     (line < p->linedefined || line > p->lastlinedefined)))
		*partial = true;
	return line;
}

void lc_lua_frame(struct lc_lua_ctx *ctx, const struct lc_lstate *st,
		  const struct lc_ci *cis, size_t n, size_t i,
		  struct lc_frame *f)
{
	const struct lc_ci *ci = &cis[i];
	const char *name = NULL, *namewhat;

	f->kind = LC_FRAME_LUA;
	f->state = st->addr;
	f->ci = ci->addr;
	f->currentline = -1;
	f->linedefined = -1;
	f->namewhat = "";
	if (ci->bad) {
		f->what = "?";
		f->partial = true;
		f->source = strdup("=?");
		f->short_src = strdup("?");
		return;
	}
	f->global_name = lc_strdup_or_null(global_name(ctx, st->g, ci->func));
	/* A C function is named only from package.loaded: where its index
	 * is damaged, a missing name may be a lost one. */
	if (!f->global_name && !ci->bad && !ci->is_lua &&
	    gnames_damaged(ctx, st->g))
		f->partial = true;
	if (!ci->is_lua) {
		f->what = "C";
		f->cfunc = ci->cfunc;
		f->source = strdup("=[C]");
		f->short_src = strdup("[C]");
	} else {
		struct proto *p = proto_get(ctx, ci->proto);

		if (!p || !p->ok) {
			f->what = "Lua";
			f->partial = true;
			f->source = strdup("=?");
			f->short_src = strdup("?");
			return;
		}
		f->what = p->linedefined == 0 ? "main" : "Lua";
		f->linedefined = p->linedefined;
		f->source = p->source ? strdup(p->source) : strdup("=?");
		if (!p->short_src)
			p->short_src = chunkid(p->source ? p->source : "=?",
					       ctx->l->major);
		f->short_src = lc_strdup_or_null(p->short_src);
		if (p->bad_source)
			f->partial = true;	/* a source that is no string */
		if (p->bad_lines || p->bad_arrays)
			f->partial = true;
		f->currentline = frame_line(ctx, p, ci, &f->partial);
		f->line_from = ci->livepc ? "pc" : "savedpc";
		f->savedpc_line = f->currentline;
		if (ci->livepc) {
			struct lc_ci saved = *ci;
			bool partial = false;

			saved.livepc = 0;
			f->savedpc_line = frame_line(ctx, p, &saved, &partial);
		}
	}
	if (ci->kind_mismatch)
		f->partial = true;
	/* The frame runs a hook (it is the one luaD_hook was called on)
	 * while its state allows hooks: a status bit is damaged. */
	if ((ci->callstatus & cist_of(ctx->l)->hooked) && hooks_allowed(ctx, st))
		f->partial = true;
	/* A C function's code lies in no memory the program can write
	 * (where the memory's regions are known). */
	{
		uint64_t lo, hi;
		unsigned flags;

		if (!ci->is_lua &&
		    lc_memory_region_at(ctx->mem, ci->cfunc, &lo, &hi, &flags) &&
		    (flags & LC_MEM_WRITABLE))
			f->partial = true;
	}
	f->istailcall = (ci->callstatus & cist_of(ctx->l)->tail) != 0;
	{
		bool damaged = false;

		namewhat = func_name(ctx, st, cis, n, i, &name, &damaged);
		/* The caller's code and names name this frame: if they do
		 * not hold together, neither does the name. */
		if (damaged)
			f->partial = true;
	}
	if (namewhat && name) {
		f->namewhat = namewhat;
		f->name = strdup(name);
	}
	if (!ctx->cache || !ctx->cache->profile)
		f->traceback = lc_lua_traceback_line(ctx, f);
}

/* The line luaL_traceback prints for frame f (5.1: ldblib.c db_errorfb;
 * 5.2+: lauxlib.c luaL_traceback and pushfuncname).  The releases differ
 * in when a package.loaded name is used and how a name is worded:
 *   5.1   name from code ("function 'x'"), main, " ?" for C and tail
 *         calls, else <src:line>; no package.loaded search
 *   5.2   name from code ("function 'x'"), main, for C functions a
 *         global name, else <src:line>
 *   5.3,  a package.loaded name first, for every function; then the
 *   5.4   name from code worded by its kind ("local 'x'"), main,
 *         <src:line> for Lua functions, "?"
 *   5.5   the name from code first, main, then a package.loaded name */
char *lc_lua_traceback_line(struct lc_lua_ctx *ctx, const struct lc_frame *f)
{
	int major = ctx->l->major;
	const char *src = f->short_src ? f->short_src : "?";
	bool named = f->name && *f->namewhat;
	bool main_ = strcmp(f->what, "main") == 0;
	bool c = strcmp(f->what, "C") == 0;
	char head[LUA_IDSIZE + 24], *out = NULL;
	int r;

	if (f->currentline > 0)
		snprintf(head, sizeof(head), "%s:%d:", src, f->currentline);
	else
		snprintf(head, sizeof(head), "%s:", src);
	if (major == 501) {
		if (named)
			r = asprintf(&out, "%s in function '%s'", head, f->name);
		else if (main_)
			r = asprintf(&out, "%s in main chunk", head);
		else if (c || strcmp(f->what, "tail") == 0)
			r = asprintf(&out, "%s ?", head);
		else
			r = asprintf(&out, "%s in function <%s:%d>", head, src,
				     f->linedefined);
	} else if (major == 502) {
		if (named)
			r = asprintf(&out, "%s in function '%s'", head, f->name);
		else if (main_)
			r = asprintf(&out, "%s in main chunk", head);
		else if (c)
			r = f->global_name ?
				asprintf(&out, "%s in function '%s'", head, f->global_name) :
				asprintf(&out, "%s in ?", head);
		else
			r = asprintf(&out, "%s in function <%s:%d>", head, src,
				     f->linedefined);
	} else {
		bool global_first = major <= 504;

		if (global_first && f->global_name)
			r = asprintf(&out, "%s in function '%s'", head, f->global_name);
		else if (named)
			r = asprintf(&out, "%s in %s '%s'", head, f->namewhat, f->name);
		else if (main_)
			r = asprintf(&out, "%s in main chunk", head);
		else if (f->global_name)
			r = asprintf(&out, "%s in function '%s'", head, f->global_name);
		else if (!c)
			r = asprintf(&out, "%s in function <%s:%d>", head, src,
				     f->linedefined);
		else
			r = asprintf(&out, "%s in ?", head);
	}
	return r < 0 ? NULL : out;
}

bool lc_lua_ci_starts_run(struct lc_lua_ctx *ctx, const struct lc_ci *cis,
			  size_t n, size_t i)
{
	const struct lc_layout *l = ctx->l;
	const struct lc_ci *ci = &cis[i];

	switch (l->major) {
	case 501: {
		/* 5.1 (lvm.c: OP_CALL/OP_TAILCALL "goto reentry"): a Lua
		 * function runs in its caller's luaV_execute only when that
		 * caller is Lua code executing a call instruction.  Anything
		 * else (luaD_call from C, metamethods, for iterators) starts
		 * a new luaV_execute. */
		const struct lc_ci *caller = i + 1 < n ? &cis[i + 1] : NULL;
		struct proto *p;
		int pc;
		uint32_t op;

		if (!caller || !caller->is_lua || caller->bad)
			return true;
		p = proto_get(ctx, caller->proto);
		if (!p || !proto_load_names(ctx, p))
			return true;
		pc = current_pc(p, caller);
		if (pc < 0)
			return true;
		op = p->codev[pc] & 0x3f;
		return !(op == 28 || op == 29);	/* OP_CALL, OP_TAILCALL */
	}
	default: {
		const struct cist *b = cist_of(l);

		if (b->per_call)
			return true;
		if (b->reentry)
			return !(ci->callstatus & b->reentry);
		return (ci->callstatus & b->fresh) != 0;
	}
	}
}
