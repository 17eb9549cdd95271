/* The heap as a pprof profile (profile.proto, uncompressed): sample
 * types inuse_objects/count and inuse_space/bytes, as Go's heap
 * profiles name them, so that go tool pprof -top reads it without
 * flags.  By path: one sample per (path pattern, class), its stack the
 * steps of the path (root outermost), the object's type and class the
 * leaf; by class: the leaf under its type. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "heap/heap.h"

struct pb {
	uint8_t *b;
	size_t n, cap;
	bool nomem;
};

static void put(struct pb *p, const void *d, size_t n)
{
	if (p->nomem || !n)
		return;
	if (p->n + n > p->cap) {
		size_t nc = p->cap ? p->cap * 2 : 4096;
		uint8_t *nb;

		while (nc < p->n + n)
			nc *= 2;
		nb = realloc(p->b, nc);
		if (!nb) {
			p->nomem = true;
			return;
		}
		p->b = nb;
		p->cap = nc;
	}
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

static void varint(struct pb *p, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	put(p, b, n);
}

static void key(struct pb *p, unsigned field, unsigned wire)
{
	varint(p, (uint64_t)field << 3 | wire);
}

static void fint(struct pb *p, unsigned field, uint64_t v)
{
	key(p, field, 0);
	varint(p, v);
}

static void fbytes(struct pb *p, unsigned field, const void *d, size_t n)
{
	key(p, field, 2);
	varint(p, n);
	put(p, d, n);
}

static void fmsg(struct pb *p, unsigned field, struct pb *m)
{
	fbytes(p, field, m->b, m->n);
	if (m->nomem)
		p->nomem = true;
	m->n = 0;
}

/* The string table, deduplicated by a linear probe on a hash. */
struct strs {
	char **v;
	size_t n, cap;
	uint64_t *hk;
	uint32_t *hi;
	size_t hcap;
	bool nomem;
};

static uint64_t shash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 0x100000001b3ull;
	}
	return h | 1;
}

static uint64_t sid(struct strs *t, const char *s)
{
	uint64_t h = shash(s);
	size_t j;

	if (t->nomem)
		return 0;
	if ((t->n + 1) * 2 >= t->hcap) {
		size_t nc = t->hcap ? t->hcap * 2 : 1024;
		uint64_t *nk = calloc(nc, sizeof(*nk));
		uint32_t *ni = calloc(nc, sizeof(*ni));

		if (!nk || !ni) {
			free(nk);
			free(ni);
			t->nomem = true;
			return 0;
		}
		for (size_t i = 0; i < t->hcap; i++) {
			if (!t->hk[i])
				continue;
			for (j = t->hk[i] & (nc - 1); nk[j]; j = (j + 1) & (nc - 1))
				;
			nk[j] = t->hk[i];
			ni[j] = t->hi[i];
		}
		free(t->hk);
		free(t->hi);
		t->hk = nk;
		t->hi = ni;
		t->hcap = nc;
	}
	for (j = h & (t->hcap - 1); t->hk[j]; j = (j + 1) & (t->hcap - 1))
		if (t->hk[j] == h && strcmp(t->v[t->hi[j]], s) == 0)
			return t->hi[j];
	if (t->n == t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 256;
		char **nv = realloc(t->v, nc * sizeof(*nv));

		if (!nv) {
			t->nomem = true;
			return 0;
		}
		t->v = nv;
		t->cap = nc;
	}
	t->v[t->n] = strdup(s);
	if (!t->v[t->n]) {
		t->nomem = true;
		return 0;
	}
	t->hk[j] = h;
	t->hi[j] = (uint32_t)t->n;
	return t->n++;
}

/* One function and one location per distinct frame name: the same
 * number (string id + 1) serves as both ids. */
struct frames {
	uint8_t *used;
	size_t cap;
};

static uint64_t frame(struct strs *t, struct frames *f, const char *name)
{
	uint64_t id = sid(t, name);

	if (id >= f->cap) {
		size_t nc = f->cap ? f->cap : 1024;
		uint8_t *nu;

		while (nc <= id)
			nc *= 2;
		nu = realloc(f->used, nc);
		if (!nu) {
			t->nomem = true;
			return 0;
		}
		memset(nu + f->cap, 0, nc - f->cap);
		f->used = nu;
		f->cap = nc;
	}
	f->used[id] = 1;
	return id + 1;
}

static char *leaf_name(int kind, const char *cls)
{
	char *s;

	if (asprintf(&s, "%s%s%s", lc_hkind_name(kind), cls ? " " : "",
		     cls ? cls : "") < 0)
		return NULL;
	return s;
}

/* The steps of a rendered path: split at " -> ". */
static size_t steps(char *path, char **out, size_t max)
{
	size_t n = 0;
	char *p = path;

	while (p && n < max) {
		char *e = strstr(p, " -> ");

		out[n++] = p;
		if (!e)
			break;
		*e = 0;
		p = e + 4;
	}
	return n;
}

static void sample(struct pb *s, struct pb *m, const uint64_t *locs, size_t n,
		   uint64_t count, uint64_t bytes)
{
	struct pb packed = { 0 };

	for (size_t i = 0; i < n; i++)
		varint(&packed, locs[i]);
	fbytes(m, 1, packed.b, packed.n);
	key(m, 2, 2);
	{
		struct pb vals = { 0 };

		varint(&vals, count);
		varint(&vals, bytes);
		varint(m, vals.n);
		put(m, vals.b, vals.n);
		free(vals.b);
	}
	free(packed.b);
	fmsg(s, 2, m);
}

struct lc_error *lc_heap_write_pprof(const struct lc_heap *h, bool by_path,
				     FILE *out)
{
	struct pb p = { 0 }, m = { 0 }, n = { 0 };
	struct strs t = { 0 };
	struct frames f = { 0 };
	struct lc_error *err = NULL;

	if (by_path && !h->opts.pprof_paths)
		return lc_error_create(LC_ERR_INVALID,
			"a profile by path needs the heap read with pprof_paths");
	sid(&t, "");
	sid(&t, "space");
	/* sample_type: inuse_objects/count, inuse_space/bytes */
	fint(&n, 1, sid(&t, "inuse_objects"));
	fint(&n, 2, sid(&t, "count"));
	fmsg(&p, 1, &n);
	fint(&n, 1, sid(&t, "inuse_space"));
	fint(&n, 2, sid(&t, "bytes"));
	fmsg(&p, 1, &n);
	for (size_t i = 0; i < h->nvms; i++) {
		const struct lc_hvmres *v = &h->vms[i];
		char vmname[64];

		snprintf(vmname, sizeof(vmname), "VM 0x%" PRIx64, v->g);
		if (by_path) {
			for (size_t g = 0; g < v->npgroups; g++) {
				const struct lc_hgroup *gr = &v->pgroups[g];
				char *copy = strdup(gr->pattern ? gr->pattern :
						    "(unreachable)");
				char *st[LC_HEAP_PATH_MAX + 2];
				uint64_t locs[LC_HEAP_PATH_MAX + 3];
				char *leaf = leaf_name(gr->kind, gr->name);
				size_t ns, k = 0;

				if (!copy || !leaf) {
					free(copy);
					free(leaf);
					t.nomem = true;
					break;
				}
				ns = steps(copy, st, LC_HEAP_PATH_MAX);
				locs[k++] = frame(&t, &f, leaf);
				while (ns)
					locs[k++] = frame(&t, &f, st[--ns]);
				if (h->nvms > 1)
					locs[k++] = frame(&t, &f, vmname);
				sample(&p, &m, locs, k, gr->count, gr->bytes);
				free(copy);
				free(leaf);
			}
		} else {
			for (int kind = 0; kind < LC_HK_NKINDS; kind++) {
				uint64_t cc = 0, cb = 0;

				/* classed kinds by class, the rest as one */
				for (size_t c = 0; c < v->nclasses; c++) {
					const struct lc_hclass *cl = &v->classes[c];
					uint64_t locs[3];
					size_t k = 0;
					char *leaf;

					if (cl->kind != kind)
						continue;
					cc += cl->count;
					cb += cl->bytes;
					leaf = leaf_name(kind, cl->name ? cl->name :
							 cl->klass && (kind == LC_HK_TABLE ||
								       kind == LC_HK_USERDATA) ?
							 "(no __name)" : NULL);
					if (!leaf) {
						t.nomem = true;
						break;
					}
					locs[k++] = frame(&t, &f, leaf);
					locs[k++] = frame(&t, &f, lc_hkind_name(kind));
					if (h->nvms > 1)
						locs[k++] = frame(&t, &f, vmname);
					sample(&p, &m, locs, k, cl->count, cl->bytes);
					free(leaf);
				}
				if (v->count[kind] > cc) {
					uint64_t locs[2];
					size_t k = 0;

					locs[k++] = frame(&t, &f, lc_hkind_name(kind));
					if (h->nvms > 1)
						locs[k++] = frame(&t, &f, vmname);
					sample(&p, &m, locs, k, v->count[kind] - cc,
					       v->bytes[kind] - cb);
				}
			}
		}
	}
	/* one mapping, named, that every location is in (pprof then
	 * needs no binary) */
	fint(&m, 1, 1);
	fint(&m, 5, sid(&t, "[lua heap]"));
	fint(&m, 7, 1);		/* has_functions */
	fmsg(&p, 3, &m);
	/* locations and functions */
	for (size_t id = 0; id < f.cap; id++) {
		struct pb line = { 0 };

		if (!f.used[id])
			continue;
		fint(&m, 1, id + 1);
		fint(&m, 2, 1);
		fint(&line, 1, id + 1);
		fmsg(&m, 4, &line);
		free(line.b);
		fmsg(&p, 4, &m);
		fint(&m, 1, id + 1);
		fint(&m, 2, id);
		fint(&m, 3, id);
		fmsg(&p, 5, &m);
	}
	/* period_type, period: one object (strings already in the table) */
	fint(&n, 1, sid(&t, "space"));
	fint(&n, 2, sid(&t, "bytes"));
	for (size_t i = 0; i < t.n; i++)
		fbytes(&p, 6, t.v[i], strlen(t.v[i]));
	if (p.nomem || m.nomem || n.nomem || t.nomem) {
		err = &lc_error_nomem;
	} else {
		fmsg(&p, 11, &n);
		fint(&p, 12, 1);
		fint(&p, 14, sid(&t, "inuse_space"));
		if (fwrite(p.b, 1, p.n, out) != p.n || fflush(out))
			err = lc_error_create(LC_ERR_OS, "cannot write the profile: %s",
					      strerror(errno));
	}
	for (size_t i = 0; i < t.n; i++)
		free(t.v[i]);
	free(t.v);
	free(t.hk);
	free(t.hi);
	free(f.used);
	free(p.b);
	free(m.b);
	free(n.b);
	return err;
}
