/* Shortest reference paths from the GC roots: a breadth-first search
 * over heap_refs, strong references first; then, from every object
 * reached, the weak ones (a weak table's keys and values: the object
 * is then reached "weakly", and --strong leaves it unreached).  One
 * parent per object; a path is rendered by asking the parent's
 * references again for the one to the child. */
#include <config.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "heap/heap.h"

struct bfs {
	struct lc_hvmres *v;
	int32_t *queue;
	size_t qn;
	int32_t from;		/* the object whose references these are */
	bool weak_phase;	/* take weak references only */
	bool had_weak;		/* a weak reference was left for later */
	uint8_t *weak_src;	/* objects with weak references */
	uint8_t *refs;		/* strong references to each: 0, 1, 2 (more) */
	size_t nroots;
	char **roots;
	bool nomem;
	uint64_t dangling;	/* references to no object of the lists */
	uint64_t dangle_to;
	int32_t dangle_from;	/* -1: a root */
};

static int bfs_ref(void *arg, const struct lc_href *r)
{
	struct bfs *b = arg;
	struct lc_hvmres *v = b->v;
	long k;

	if (r->weak && !b->weak_phase) {
		b->had_weak = true;
		return 0;
	}
	if (!r->weak && b->weak_phase && b->from >= 0 &&
	    v->reach[b->from] == 1)
		return 0;	/* followed in the strong phase */
	k = lc_heap_find(v, r->to);
	/* each strong reference from a reached object is seen here once */
	if (k >= 0 && !r->weak && b->refs[k] < 2)
		b->refs[k]++;
	if (k < 0) {
		/* A reachable object refers to memory that holds no object
		 * of the GC lists: a list lost it, or the reference is
		 * damaged. */
		if (!b->dangling++) {
			b->dangle_to = r->to;
			b->dangle_from = b->from;
		}
		return 0;
	}
	if (v->parent[k] != -1)
		return 0;
	if (b->from < 0) {
		/* a root */
		char **n = realloc(b->roots, (b->nroots + 1) * sizeof(*n));

		if (!n) {
			b->nomem = true;
			return -1;
		}
		b->roots = n;
		b->roots[b->nroots] = strdup(r->name ? r->name : "root");
		v->parent[k] = -2 - (int32_t)b->nroots;
		b->nroots++;
	} else {
		v->parent[k] = b->from;
	}
	v->reach[k] = b->weak_phase || (b->from >= 0 && v->reach[b->from] == 2) ?
		2 : 1;
	b->queue[b->qn++] = (int32_t)k;
	return 0;
}

/* What each reached object keeps alive at least: itself, and what it
 * alone references strongly, and so on.  An object with one strong
 * reference is dominated by the object that holds it (every path from
 * the roots passes there), so these sums are a part of the retained
 * size a dominator tree would give: all of it where the data is a tree,
 * less where objects are shared (two references to one object, even
 * from one holder, leave it out).  Children come after their parent in
 * the BFS order: summed from the end. */
static void retained(struct bfs *b)
{
	struct lc_hvmres *v = b->v;

	for (size_t q = b->qn; q-- > 0;) {
		int32_t i = b->queue[q], p = v->parent[i];

		v->retained[i] += v->objs[i].size;
		if (p >= 0 && b->refs[i] == 1 && v->reach[i] == 1)
			v->retained[p] += v->retained[i];
	}
}

static void run(struct lc_interp *in, struct lc_pass *pass, struct bfs *b,
		size_t head)
{
	struct lc_hvmres *v = b->v;

	for (; head < b->qn && !b->nomem; head++) {
		int32_t i = b->queue[head];

		b->from = i;
		b->had_weak = false;
		in->ops->heap_refs(pass, v->g, &v->objs[i], bfs_ref, b);
		if (b->had_weak && b->weak_src)
			b->weak_src[i] = 1;
	}
}

void lc_heap_bfs(struct lc_interp *in, struct lc_pass *pass,
		 struct lc_hvmres *v, bool strong)
{
	struct bfs b = { .v = v };
	size_t n = v->nobjs;

	v->walked_paths = true;
	v->parent = malloc((n ? n : 1) * sizeof(*v->parent));
	v->reach = calloc(n ? n : 1, 1);
	b.queue = malloc((n ? n : 1) * sizeof(*b.queue));
	b.weak_src = calloc(n ? n : 1, 1);
	b.refs = calloc(n ? n : 1, 1);
	v->retained = calloc(n ? n : 1, sizeof(*v->retained));
	if (!v->parent || !v->reach || !b.queue || !b.weak_src || !b.refs ||
	    !v->retained) {
		free(v->parent);
		free(v->reach);
		free(v->retained);
		v->parent = NULL;
		v->reach = NULL;
		v->retained = NULL;
		free(b.queue);
		free(b.weak_src);
		free(b.refs);
		v->walked_paths = false;
		v->info.partial = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
		v->parent[i] = -1;
	b.from = -1;
	in->ops->heap_refs(pass, v->g, NULL, bfs_ref, &b);
	run(in, pass, &b, 0);
	if (!strong) {
		/* the weak references of what was reached, in BFS order */
		size_t strong_n = b.qn;

		b.weak_phase = true;
		for (size_t q = 0; q < strong_n && !b.nomem; q++) {
			int32_t i = b.queue[q];
			size_t before = b.qn;

			if (!b.weak_src[i])
				continue;
			b.from = i;
			in->ops->heap_refs(pass, v->g, &v->objs[i], bfs_ref, &b);
			b.weak_phase = false;
			run(in, pass, &b, before);
			b.weak_phase = true;
		}
	}
	retained(&b);
	for (size_t i = 0; i < n; i++) {
		if (v->reach[i] == 1)
			v->reached++;
		else if (v->reach[i] == 2)
			v->reached_weak++;
		else {
			v->unreached++;
			v->unreached_bytes += v->objs[i].size;
		}
	}
	v->roots = b.roots;
	v->nroots = b.nroots;
	if (b.dangling) {
		char *from = b.dangle_from >= 0 ?
			lc_heap_path_of(in, pass, v, (size_t)b.dangle_from, false,
					&(bool){ false }) : NULL;

		lc_hvm_note(&v->info, "%" PRIu64 " references from reachable objects lead to no object of the GC lists (the first to 0x%" PRIx64 " from %s): a list lost objects, or references are damaged",
			    b.dangling, b.dangle_to, from ? from : "a root");
		free(from);
	}
	free(b.queue);
	free(b.weak_src);
	free(b.refs);
}

/* ---- rendering ---- */

struct edge_find {
	uint64_t to;
	bool want_strong;
	struct lc_strbuf *sb;
	bool pattern;
	bool found;
	bool weak;
	bool table_step;	/* the edge reads as part of a table path */
};

static bool table_edge(int e)
{
	return e == LC_HE_FIELD || e == LC_HE_INDEX || e == LC_HE_KEY;
}

static void render(struct lc_strbuf *sb, const struct lc_href *r0, bool pattern,
		   bool after_table)
{
	const char *sep = after_table ? "" : " -> ";
	/* Names and sources are the target's: escaped here, so that a path
	 * is text to print as it is (a key is escaped already, as a Lua
	 * literal, by the family). */
	char name[256], where[512];
	struct lc_href rr = *r0, *r = &rr;

	if (r->name && r->edge != LC_HE_KEY && r->edge != LC_HE_ASKEY) {
		lc_esc_copy(name, sizeof(name), r->name);
		r->name = name;
	}
	if (r->where) {
		lc_esc_copy(where, sizeof(where), r->where);
		r->where = where;
	}

	switch (r->edge) {
	case LC_HE_FIELD:
		lc_strbuf_appendf(sb, "%s.%s", after_table ? "" : " -> ",
				  r->name ? r->name : "?");
		break;
	case LC_HE_INDEX:
		if (pattern)
			lc_strbuf_appendf(sb, "%s[*]", after_table ? "" : " -> ");
		else
			lc_strbuf_appendf(sb, "%s[%" PRId64 "]",
					  after_table ? "" : " -> ", r->index);
		break;
	case LC_HE_KEY:
		if (pattern && r->name && (strstr(r->name, ": 0x") ||
					   strchr("0123456789-", r->name[0])))
			lc_strbuf_appendf(sb, "%s[*]", after_table ? "" : " -> ");
		else
			lc_strbuf_appendf(sb, "%s[%s]", after_table ? "" : " -> ",
					  r->name ? r->name : "?");
		break;
	case LC_HE_ASKEY:
		lc_strbuf_appendf(sb, " -> key [%s]", pattern ? "*" :
				  r->name ? r->name : "?");
		break;
	case LC_HE_METATABLE:
		lc_strbuf_appendf(sb, " -> metatable");
		break;
	case LC_HE_UPVALUE:
		if (r->name && r->name[0])
			lc_strbuf_appendf(sb, " -> upvalue '%s'%s of %s", r->name,
					  r->open ? " (open)" : "",
					  r->where ? r->where : "?");
		else
			lc_strbuf_appendf(sb, " -> upvalue %" PRId64 "%s of %s",
					  r->index, r->open ? " (open)" : "",
					  r->where ? r->where : "?");
		break;
	case LC_HE_ENV:
		lc_strbuf_appendf(sb, " -> %s", r->name ? r->name : "environment");
		break;
	case LC_HE_USERVALUE:
		lc_strbuf_appendf(sb, " -> user value %" PRId64, r->index);
		break;
	case LC_HE_LOCAL:
		if (r->name)
			lc_strbuf_appendf(sb, " -> local '%s' in %s", r->name,
					  r->where ? r->where : "?");
		else
			lc_strbuf_appendf(sb, " -> stack slot in %s",
					  r->where ? r->where : "?");
		break;
	case LC_HE_FUNC:
		lc_strbuf_appendf(sb, " -> function of frame %s",
				  r->where ? r->where : "?");
		break;
	case LC_HE_PROTO:
		lc_strbuf_appendf(sb, " -> prototype");
		break;
	case LC_HE_CONST:
		if (pattern || !r->index)
			lc_strbuf_appendf(sb, " -> %s", r->name ? r->name : "constant");
		else
			lc_strbuf_appendf(sb, " -> %s %" PRId64,
					  r->name ? r->name : "constant", r->index);
		break;
	default:
		lc_strbuf_appendf(sb, "%s%s", sep, r->name ? r->name : "?");
		break;
	}
	if (r->weak)
		lc_strbuf_append(sb, " (weak)", 7);
}

static int find_ref(void *arg, const struct lc_href *r)
{
	struct edge_find *f = arg;

	if (r->to != f->to || (f->want_strong && r->weak))
		return 0;
	render(f->sb, r, f->pattern, f->table_step && table_edge(r->edge));
	f->found = true;
	f->weak = r->weak;
	/* what follows a table step, a metatable or an environment reads
	 * on as a table path: t.a[1], _G.obj -> metatable.__index */
	f->table_step = table_edge(r->edge) || r->edge == LC_HE_METATABLE ||
			r->edge == LC_HE_ENV;
	return -1;
}

char *lc_heap_path_of(struct lc_interp *in, struct lc_pass *pass,
		      struct lc_hvmres *v, size_t i, bool pattern, bool *weak)
{
	int32_t chain[LC_HEAP_PATH_MAX];
	size_t n = 0;
	int32_t cur = (int32_t)i;
	struct lc_strbuf sb = { 0 };
	bool after_table;

	*weak = false;
	if (!v->parent || v->parent[i] == -1)
		return NULL;
	while (cur >= 0 && n < LC_HEAP_PATH_MAX) {
		chain[n++] = cur;
		cur = v->parent[cur];
	}
	if (cur >= 0) {
		lc_strbuf_appendf(&sb, "...");
		after_table = false;
	} else {
		size_t r = (size_t)(-2 - cur);

		lc_strbuf_appendf(&sb, "%s", r < v->nroots ? v->roots[r] : "?");
		/* a table root reads on as a table path */
		after_table = v->objs[chain[n - 1]].kind == LC_HK_TABLE;
	}
	for (size_t k = n - 1; k > 0; k--) {
		int32_t from = chain[k], to = chain[k - 1];
		struct edge_find f = { .to = v->objs[to].addr, .sb = &sb,
				       .pattern = pattern,
				       .want_strong = v->reach[to] == 1,
				       .table_step = after_table };

		in->ops->heap_refs(pass, v->g, &v->objs[from], find_ref, &f);
		if (!f.found) {
			lc_strbuf_appendf(&sb, " -> ?");
			f.table_step = false;
		}
		if (f.weak)
			*weak = true;
		after_table = f.table_step && !f.weak;
	}
	if (v->reach[i] == 2)
		*weak = true;
	return lc_strbuf_steal(&sb);
}
