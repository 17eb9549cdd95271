/* LuaJIT VMs and threads (threads.h). */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "vm/luajit/lj.h"
#include "vm/luajit/threads.h"

#define SCAN_CHUNK (1u << 20)
#define SCAN_OVERLAP 4096
/* GC objects walked on one VM's list: more is taken as damage. */
#define GCLIST_MAX (UINT64_C(1) << 28)

/* The GG_State distance from the main thread to its global_State. */
static int64_t l_to_g(const struct lc_lj_layout *l)
{
	return (int64_t)l->GG.g.off - (int64_t)l->GG.L.off;
}

struct scan {
	struct lc_memory *m;
	const struct lc_lj_layout *l;
	uint64_t *gs;
	size_t n, cap;
	bool nomem;
};

static uint64_t buf_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static int scan_chunk(void *arg, uint64_t addr, const uint8_t *buf,
		      size_t n, size_t avail, struct lc_error **err)
{
	struct scan *s = arg;
	const struct lc_lj_layout *l = s->l;
	size_t need = (size_t)l->L.glref.off + 8;
	int64_t d = l_to_g(l);

	(void)err;
	if ((size_t)l->L.gct.off + 1 > need)
		need = (size_t)l->L.gct.off + 1;
	for (size_t i = (8 - (addr & 7)) & 7; i < n && i + need <= avail;
	     i += 8) {
		uint64_t x = addr + i, g, main;

		if (buf[i + (size_t)l->L.gct.off] != LC_LJ_TTHREAD)
			continue;
		g = buf_u64(buf + i + (size_t)l->L.glref.off);
		if (g != x + (uint64_t)d)
			continue;
		if (lc_lj_field_u(s->m, g, l->G.mainthref, &main) < 0 ||
		    (main & LC_LJ_GCVMASK) != x)
			continue;
		if (s->n == s->cap) {
			size_t nc = s->cap ? s->cap * 2 : 8;
			uint64_t *p = realloc(s->gs, nc * sizeof(*p));

			if (!p) {
				s->nomem = true;
				return -1;
			}
			s->gs = p;
			s->cap = nc;
		}
		s->gs[s->n++] = g;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct lc_error *lc_lj_find_vms(struct lc_memory *m,
				const struct lc_lj_layout *l, uint64_t **ret,
				size_t *n)
{
	struct scan s = { .m = m, .l = l };
	struct lc_error *err;

	*ret = NULL;
	*n = 0;
	if (!LC_LJ_HAS(l->GG.g) || !LC_LJ_HAS(l->GG.L))
		return lc_error_create(LC_ERR_UNSUPPORTED,
				       "the LuaJIT layout has no GG_State");
	err = lc_memory_scan(m, SCAN_CHUNK, SCAN_OVERLAP, scan_chunk, &s);
	if (s.nomem) {
		free(s.gs);
		lc_error_destroy(err);
		return &lc_error_nomem;
	}
	if (err) {
		free(s.gs);
		return err;
	}
	if (s.n)
		qsort(s.gs, s.n, sizeof(*s.gs), cmp_u64);
	*ret = s.gs;
	*n = s.n;
	return NULL;
}

bool lc_lj_is_thread(struct lc_memory *m, const struct lc_lj_layout *l,
		     uint64_t addr, uint64_t g)
{
	uint64_t gct, glref;

	return addr && !(addr & 7) && lc_lj_field_u(m, addr, l->L.gct, &gct) == 0 &&
	       gct == LC_LJ_TTHREAD &&
	       lc_lj_field_u(m, addr, l->L.glref, &glref) == 0 && glref == g;
}

static bool push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		uint64_t *p = realloc(*v, nc * sizeof(*p));

		if (!p)
			return false;
		*v = p;
		*cap = nc;
	}
	(*v)[(*n)++] = x;
	return true;
}

struct lc_error *lc_lj_threads(struct lc_memory *m,
			       const struct lc_lj_layout *l, uint64_t g,
			       size_t max, uint64_t **ret, size_t *n,
			       bool *partial)
{
	uint64_t main, obj, *v = NULL;
	size_t nv = 0, cap = 0;
	/* Brent's cycle detection: a saved node, moved at powers of 2. */
	uint64_t saved = 0, power = 1, lam = 0, steps = 0;

	*ret = NULL;
	*n = 0;
	*partial = false;
	if (lc_lj_field_u(m, g, l->G.mainthref, &main) < 0) {
		*partial = true;
		return NULL;
	}
	main &= LC_LJ_GCVMASK;
	if (lc_lj_is_thread(m, l, main, g) && !push(&v, &nv, &cap, main))
		return &lc_error_nomem;
	if (lc_lj_field_u(m, g, l->G.gc_root, &obj) < 0) {
		*partial = true;
		obj = 0;
	}
	obj &= LC_LJ_GCVMASK;
	while (obj) {
		uint64_t gct, next;

		if (++steps > GCLIST_MAX || obj == saved) {
			*partial = true;
			break;
		}
		if (++lam == power) {
			saved = obj;
			power *= 2;
			lam = 0;
		}
		if (lc_lj_field_u(m, obj, l->L.gct, &gct) < 0 ||
		    lc_lj_field_u(m, obj, l->L.nextgc, &next) < 0) {
			*partial = true;
			break;
		}
		if (gct == LC_LJ_TTHREAD && obj != main &&
		    lc_lj_is_thread(m, l, obj, g)) {
			if (nv >= max) {
				*partial = true;
				break;
			}
			if (!push(&v, &nv, &cap, obj)) {
				free(v);
				return &lc_error_nomem;
			}
		}
		obj = next & LC_LJ_GCVMASK;
	}
	*ret = v;
	*n = nv;
	return NULL;
}

/* Is the TValue at addr a thread, and which? */
static uint64_t tv_thread(struct lc_memory *m, uint64_t addr)
{
	uint64_t v;

	if (lc_read_u64(m, addr, &v) < 0 ||
	    (uint32_t)((int64_t)v >> 47) != (uint32_t)~LC_LJ_TTHREAD)
		return 0;
	return v & LC_LJ_GCVMASK;
}

uint64_t lc_lj_resumed(struct lc_memory *m, const struct lc_lj_layout *l,
		       uint64_t L)
{
	uint64_t base, fv, fn, ffid, g, co;

	if (lc_lj_field_u(m, L, l->L.base, &base) < 0 ||
	    lc_lj_field_u(m, L, l->L.glref, &g) < 0 ||
	    lc_read_u64(m, base - 16, &fv) < 0)
		return 0;
	fn = fv & LC_LJ_GCVMASK;
	if (lc_lj_field_u(m, fn, l->fn.ffid, &ffid) < 0 || ffid == LC_LJ_FF_LUA)
		return 0;
	co = tv_thread(m, base);
	if (!co && LC_LJ_HAS(l->fn.upvalue))
		co = tv_thread(m, fn + (uint64_t)l->fn.upvalue.off);
	if (!co || co == L || !lc_lj_is_thread(m, l, co, g))
		return 0;
	return co;
}
