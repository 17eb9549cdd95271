/* Profiles: interning of functions, locations and labels, merging of
 * equal samples, frame labels.  The files they are written to are the
 * sinks' (sample/sink.h). */
#include <config.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "report/stack.h"
#include "sample/profile.h"

/* Open-addressing tables of ids, keyed by a hash of what they stand for;
 * the id's own data is compared on a hit.  Sized to stay under half
 * full. */
struct table {
	uint32_t *slots;	/* id + 1, 0 = free */
	size_t cap;		/* power of 2 */
	size_t n;
};

struct index {
	struct table funcs, locs, strings, samples;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return mix(h, s ? 1 : 0);
}

static int grow(struct table *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 256;
	uint32_t *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -1;
	/* Rehashing needs the keys: callers re-insert (see rehash_*). */
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	t->n = 0;
	return 0;
}

static bool streq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static uint64_t func_hash(const char *name, const char *file, int64_t line,
			  enum lc_prof_kind kind)
{
	return mix(mix(hash_str(hash_str(14695981039346656037ull, name),
				file), (uint64_t)line), kind);
}

static uint64_t loc_hash(uint32_t func, int64_t line, uint64_t addr)
{
	return mix(mix(mix(1, func), (uint64_t)line), addr);
}

static uint64_t sample_hash(const uint32_t *locs, size_t n, int tid,
			    uint32_t tname, uint64_t vm, uint64_t co,
			    enum lc_prof_kind leaf, uint32_t vmstate)
{
	uint64_t h = mix(mix(mix(mix(mix(mix(2, (uint64_t)tid), tname), vm),
				 co), leaf), vmstate);

	for (size_t i = 0; i < n; i++)
		h = mix(h, locs[i]);
	return mix(h, n);
}

/* Insert id at the first free slot of h's probe sequence. */
static void put(struct table *t, uint64_t h, uint32_t id)
{
	size_t m = t->cap - 1;

	for (size_t i = h & m;; i = (i + 1) & m)
		if (!t->slots[i]) {
			t->slots[i] = id + 1;
			t->n++;
			return;
		}
}

static int ensure(struct lc_profile *p, struct table *t, int which)
{
	if (t->cap && (t->n + 1) * 2 <= t->cap)
		return 0;
	if (grow(t) < 0)
		return -1;
	switch (which) {
	case 0:
		for (size_t i = 0; i < p->nfuncs; i++) {
			const struct lc_prof_func *f = &p->funcs[i];

			put(t, func_hash(f->name, f->file, f->start_line,
					 f->kind), (uint32_t)i);
		}
		break;
	case 1:
		for (size_t i = 0; i < p->nlocs; i++) {
			const struct lc_prof_loc *l = &p->locs[i];

			put(t, loc_hash(l->func, l->line, l->addr), (uint32_t)i);
		}
		break;
	case 2:
		for (size_t i = 0; i < p->nstrings; i++)
			put(t, hash_str(7, p->strings[i]), (uint32_t)i);
		break;
	default:
		for (size_t i = 0; i < p->nsamples; i++) {
			const struct lc_prof_sample *s = &p->samples[i];

			put(t, sample_hash(s->locs, s->nlocs, s->tid,
					   s->thread_name, s->vm, s->coroutine,
					   s->leaf, s->vmstate), (uint32_t)i);
		}
		break;
	}
	return 0;
}

static int reserve(void **arr, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *q;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	q = realloc(*arr, ncap * size);
	if (!q)
		return -1;
	*arr = q;
	*cap = ncap;
	return 0;
}

struct lc_profile *lc_profile_create(void)
{
	struct lc_profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->index = calloc(1, sizeof(struct index));
	if (!p->index || lc_profile_string(p, "") != 0) {
		lc_profile_destroy(p);
		return NULL;
	}
	return p;
}

void lc_profile_destroy(struct lc_profile *p)
{
	struct index *ix;

	if (!p)
		return;
	ix = p->index;
	for (size_t i = 0; i < p->nfuncs; i++) {
		free(p->funcs[i].name);
		free(p->funcs[i].file);
	}
	free(p->funcs);
	free(p->locs);
	for (size_t i = 0; i < p->nsamples; i++)
		free(p->samples[i].locs);
	free(p->samples);
	free(p->events);
	free(p->vms);
	for (size_t i = 0; i < p->nstrings; i++)
		free(p->strings[i]);
	free(p->strings);
	free(p->command);
	free(p->cwd);
	if (ix) {
		free(ix->funcs.slots);
		free(ix->locs.slots);
		free(ix->strings.slots);
		free(ix->samples.slots);
		free(ix);
	}
	free(p);
}

uint32_t lc_profile_func(struct lc_profile *p, const char *name,
			 const char *file, int64_t start_line,
			 enum lc_prof_kind kind)
{
	struct index *ix = p->index;
	struct table *t = &ix->funcs;
	uint64_t h;
	struct lc_prof_func *f;

	if (!name)
		name = "??";
	h = func_hash(name, file, start_line, kind);
	if (ensure(p, t, 0) < 0)
		return UINT32_MAX;
	for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		uint32_t id = t->slots[i];

		if (!id)
			break;
		f = &p->funcs[id - 1];
		if (f->kind == kind && f->start_line == start_line &&
		    streq(f->name, name) && streq(f->file, file))
			return id - 1;
	}
	if (p->nfuncs >= UINT32_MAX - 1 ||
	    reserve((void **)&p->funcs, &p->capfuncs, p->nfuncs,
		    sizeof(*p->funcs)) < 0)
		return UINT32_MAX;
	f = &p->funcs[p->nfuncs];
	f->name = strdup(name);
	f->file = file ? strdup(file) : NULL;
	if (!f->name || (file && !f->file)) {
		free(f->name);
		free(f->file);
		return UINT32_MAX;
	}
	f->start_line = start_line;
	f->kind = kind;
	put(t, h, (uint32_t)p->nfuncs);
	return (uint32_t)p->nfuncs++;
}

uint32_t lc_profile_loc(struct lc_profile *p, uint32_t func, int64_t line,
			uint64_t addr)
{
	struct index *ix = p->index;
	struct table *t = &ix->locs;
	uint64_t h = loc_hash(func, line, addr);
	struct lc_prof_loc *l;

	if (ensure(p, t, 1) < 0)
		return UINT32_MAX;
	for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		uint32_t id = t->slots[i];

		if (!id)
			break;
		l = &p->locs[id - 1];
		if (l->func == func && l->line == line && l->addr == addr)
			return id - 1;
	}
	if (p->nlocs >= UINT32_MAX - 1 ||
	    reserve((void **)&p->locs, &p->caplocs, p->nlocs,
		    sizeof(*p->locs)) < 0)
		return UINT32_MAX;
	l = &p->locs[p->nlocs];
	l->func = func;
	l->line = line;
	l->addr = addr;
	put(t, h, (uint32_t)p->nlocs);
	return (uint32_t)p->nlocs++;
}

uint32_t lc_profile_string(struct lc_profile *p, const char *s)
{
	struct index *ix = p->index;
	struct table *t = &ix->strings;
	uint64_t h;

	if (!s)
		s = "";
	h = hash_str(7, s);
	if (ensure(p, t, 2) < 0)
		return UINT32_MAX;
	for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		uint32_t id = t->slots[i];

		if (!id)
			break;
		if (strcmp(p->strings[id - 1], s) == 0)
			return id - 1;
	}
	if (p->nstrings >= UINT32_MAX - 1 ||
	    reserve((void **)&p->strings, &p->capstrings, p->nstrings,
		    sizeof(*p->strings)) < 0)
		return UINT32_MAX;
	p->strings[p->nstrings] = strdup(s);
	if (!p->strings[p->nstrings])
		return UINT32_MAX;
	put(t, h, (uint32_t)p->nstrings);
	return (uint32_t)p->nstrings++;
}

static const struct lc_prof_vm *vm_of(const struct lc_profile *p, uint64_t vm)
{
	for (size_t i = 0; vm && i < p->nvms; i++)
		if (p->vms[i].vm == vm)
			return &p->vms[i];
	return NULL;
}

int lc_profile_set_vm(struct lc_profile *p, uint64_t vm, const char *name,
		      const char *alloc)
{
	struct lc_prof_vm *v = (struct lc_prof_vm *)vm_of(p, vm);
	uint32_t n = name ? lc_profile_string(p, name) : 0;
	uint32_t a = alloc ? lc_profile_string(p, alloc) : 0;

	if (n == UINT32_MAX || a == UINT32_MAX)
		return -1;
	if (!v) {
		if (reserve((void **)&p->vms, &p->capvms, p->nvms,
			    sizeof(*p->vms)) < 0)
			return -1;
		v = &p->vms[p->nvms++];
		v->vm = vm;
	}
	v->name = n;
	v->alloc = a;
	return 0;
}

const char *lc_profile_vm_name(const struct lc_profile *p, uint64_t vm)
{
	const struct lc_prof_vm *v = vm_of(p, vm);

	return v && v->name && v->name < p->nstrings ? p->strings[v->name] :
	       NULL;
}

const char *lc_profile_vm_alloc(const struct lc_profile *p, uint64_t vm)
{
	const struct lc_prof_vm *v = vm_of(p, vm);

	return v && v->alloc && v->alloc < p->nstrings ? p->strings[v->alloc] :
	       NULL;
}

/* Append the event; past the cap, or out of memory, the rest are cut. */
static void add_event(struct lc_profile *p, uint32_t sample, int64_t cpu_ns)
{
	/* an allocation profile's weights are bytes */
	int64_t us = p->alloc ? cpu_ns : (cpu_ns + 500) / 1000;

	if (p->events_cut)
		return;
	if (p->nevents >= LC_PROF_EVENTS_MAX ||
	    reserve((void **)&p->events, &p->capevents, p->nevents,
		    sizeof(*p->events)) < 0) {
		p->events_cut = true;
		return;
	}
	p->events[p->nevents].sample = sample;
	p->events[p->nevents].weight_us = us < 1 ? 1 : us > UINT32_MAX ?
					  UINT32_MAX : (uint32_t)us;
	p->nevents++;
}

struct tid_scale {
	int tid;
	double scale;
};

static int tid_scale_cmp(const void *a, const void *b)
{
	int x = ((const struct tid_scale *)a)->tid;
	int y = ((const struct tid_scale *)b)->tid;

	return x < y ? -1 : x > y;
}

int lc_profile_scale_threads(struct lc_profile *p, const int *tids,
			     const double *scales, size_t n)
{
	struct tid_scale *t = malloc((n ? n : 1) * sizeof(*t));

	if (!t)
		return -1;
	for (size_t i = 0; i < n; i++)
		t[i] = (struct tid_scale){ tids[i], scales[i] };
	qsort(t, n, sizeof(*t), tid_scale_cmp);
	for (size_t i = 0; i < p->nsamples; i++) {
		struct tid_scale key = { p->samples[i].tid, 1 };
		const struct tid_scale *f =
			n ? bsearch(&key, t, n, sizeof(*t), tid_scale_cmp) :
			    NULL;

		p->samples[i].scale = f ? f->scale : 1;
	}
	free(t);
	return 0;
}

int lc_profile_add(struct lc_profile *p, const uint32_t *locs, size_t nlocs,
		   int64_t cpu_ns, int tid, const char *thread_name,
		   uint64_t vm, uint64_t coroutine, enum lc_prof_kind leaf)
{
	return lc_profile_add_vmstate(p, locs, nlocs, cpu_ns, tid, thread_name,
				      vm, coroutine, leaf, NULL);
}

static long add_sample(struct lc_profile *p, const uint32_t *locs,
		       size_t nlocs, int64_t cpu_ns, int tid,
		       const char *thread_name, uint64_t vm,
		       uint64_t coroutine, enum lc_prof_kind leaf,
		       const char *vmstate);

int lc_profile_add_vmstate(struct lc_profile *p, const uint32_t *locs,
			   size_t nlocs, int64_t cpu_ns, int tid,
			   const char *thread_name, uint64_t vm,
			   uint64_t coroutine, enum lc_prof_kind leaf,
			   const char *vmstate)
{
	return add_sample(p, locs, nlocs, cpu_ns, tid, thread_name, vm,
			  coroutine, leaf, vmstate) < 0 ? -1 : 0;
}

long lc_profile_add_alloc(struct lc_profile *p, const uint32_t *locs,
			  size_t nlocs, int tid, const char *thread_name,
			  uint64_t vm, uint64_t coroutine,
			  enum lc_prof_kind leaf, int64_t objects,
			  int64_t bytes)
{
	long i = add_sample(p, locs, nlocs, bytes, tid, thread_name, vm,
			    coroutine, leaf, NULL);

	if (i >= 0)
		p->samples[i].alloc_objects += objects;
	return i;
}

/* The sample index, or -1. */
static long add_sample(struct lc_profile *p, const uint32_t *locs,
		       size_t nlocs, int64_t cpu_ns, int tid,
		       const char *thread_name, uint64_t vm,
		       uint64_t coroutine, enum lc_prof_kind leaf,
		       const char *vmstate)
{
	struct index *ix = p->index;
	struct table *t = &ix->samples;
	uint32_t tname = lc_profile_string(p, thread_name);
	uint32_t vst = vmstate ? lc_profile_string(p, vmstate) : 0;
	struct lc_prof_sample *s;
	uint64_t h;

	if (tname == UINT32_MAX || vst == UINT32_MAX)
		return -1;
	h = sample_hash(locs, nlocs, tid, tname, vm, coroutine, leaf, vst);
	if (ensure(p, t, 3) < 0)
		return -1;
	for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		uint32_t id = t->slots[i];

		if (!id)
			break;
		s = &p->samples[id - 1];
		if (s->nlocs == nlocs && s->tid == tid &&
		    s->thread_name == tname && s->vm == vm &&
		    s->coroutine == coroutine && s->leaf == leaf &&
		    s->vmstate == vst &&
		    (nlocs == 0 ||
		     memcmp(s->locs, locs, nlocs * sizeof(*locs)) == 0)) {
			s->count++;
			s->cpu_ns += cpu_ns;
			add_event(p, id - 1, cpu_ns);
			return (long)(id - 1);
		}
	}
	if (reserve((void **)&p->samples, &p->capsamples, p->nsamples,
		    sizeof(*p->samples)) < 0)
		return -1;
	s = &p->samples[p->nsamples];
	memset(s, 0, sizeof(*s));
	s->locs = malloc((nlocs ? nlocs : 1) * sizeof(*locs));
	if (!s->locs)
		return -1;
	if (nlocs)
		memcpy(s->locs, locs, nlocs * sizeof(*locs));
	s->nlocs = nlocs;
	s->count = 1;
	s->cpu_ns = cpu_ns;
	s->scale = 1;
	s->tid = tid;
	s->thread_name = tname;
	s->vm = vm;
	s->coroutine = coroutine;
	s->leaf = leaf;
	s->vmstate = vst;
	put(t, h, (uint32_t)p->nsamples);
	add_event(p, (uint32_t)p->nsamples, cpu_ns);
	return (long)p->nsamples++;
}

/* A Lua function's file as pprof wants it, to find the source: the
 * chunk's path ("@x.lua") made absolute against the program's working
 * directory; a chunk that is no file keeps Lua's short form.  Into buf. */
static const char *lua_file(const struct lc_profile *p,
			    const struct lc_frame *f, char *buf, size_t size)
{
	const char *src = f->source;

	if (!src || src[0] != '@' || !src[1])
		return f->short_src;
	src++;
	if (src[0] == '/' || !p->cwd)
		return src;
	while (src[0] == '.' && src[1] == '/')
		src += 2;
	snprintf(buf, size, "%s/%s", p->cwd, src);
	return buf;
}

/* A machine frame the Lua-first view leaves out: one of the
 * interpreter's own, or the machine frame of a C function called from
 * Lua, which its Lua frame (next, rootward) already shows. */
static bool folded_native(const struct lc_interp *in, const struct lc_stack *th,
			  size_t i)
{
	const struct lc_frame *f = &th->frames[i], *up;

	if (f->runs_lua ||
	    (in && in->ops->own_frame && in->ops->own_frame(in, f)))
		return true;
	if (i + 1 >= th->nframes || !f->function)
		return false;
	up = &th->frames[i + 1];
	return up->kind == LC_FRAME_LUA && up->what &&
	       strcmp(up->what, "C") == 0 && up->function &&
	       strcmp(up->function, f->function) == 0;
}

size_t lc_profile_stack_of(struct lc_profile *p, const struct lc_stack *th,
			   const struct lc_interp *in, bool native,
			   uint32_t *locs, enum lc_prof_kind *leaf)
{
	static const enum lc_prof_kind kinds[] = {
		[LC_ACTIVITY_NATIVE] = LC_PROF_NATIVE,
		[LC_ACTIVITY_LUA] = LC_PROF_LUA,
		[LC_ACTIVITY_C] = LC_PROF_LUA_C,
		[LC_ACTIVITY_GC] = LC_PROF_GC,
	};
	size_t n = 0;
	bool lua = false;

	/* What the thread was doing, as the VM family tells it. */
	*leaf = (size_t)th->activity < LC_ARRAY_SIZE(kinds) ?
		kinds[th->activity] : LC_PROF_NATIVE;
	for (size_t i = 0; i < th->nframes; i++)
		lua |= th->frames[i].kind == LC_FRAME_LUA;
	for (size_t i = 0; i < th->nframes; i++) {
		const struct lc_frame *f = &th->frames[i];
		uint32_t fn;

		if (f->kind == LC_FRAME_LUA) {
			const char *nm = f->global_name ? f->global_name :
					 f->name;
			char buf[256], path[4096];
			bool c = f->what && strcmp(f->what, "C") == 0;

			if (!nm && c)
				nm = f->function ? f->function : "?";
			if (!nm && f->what && strcmp(f->what, "main") == 0)
				nm = "main chunk";
			if (!nm) {
				const char *src = f->short_src ?
						  f->short_src : "?";

				if (f->source && f->source[0] == '@')
					src = lc_profile_short_path(src);
				snprintf(buf, sizeof(buf), "function <%s:%d>",
					 src, f->linedefined);
				nm = buf;
			}
			fn = lc_profile_func(p, nm,
					     c ? NULL : lua_file(p, f, path,
								 sizeof(path)),
					     c ? 0 : f->linedefined,
					     c ? LC_PROF_LUA_C : LC_PROF_LUA);
			if (fn != UINT32_MAX)
				locs[n++] = lc_profile_loc(p, fn,
					f->currentline > 0 ? f->currentline : 0, 0);
		} else {
			/* Lua-first: the interpreter's own frames fold into
			 * the Lua frame they run for. */
			if (lua && !native && folded_native(in, th, i))
				continue;
			fn = lc_profile_func(p, f->function ? f->function : "??",
					     f->file, 0, LC_PROF_NATIVE);
			if (fn != UINT32_MAX)
				locs[n++] = lc_profile_loc(p, fn, f->line,
							   f->inlined ? 0 : f->pc);
		}
	}
	return n;
}

const char *lc_profile_short_path(const char *path)
{
	static __thread char buf[LC_PROF_PATH_MAX + 8];
	size_t n = strlen(path);
	const char *tail;

	if (n <= LC_PROF_PATH_MAX)
		return path;
	/* The last whole components that fit, after an ellipsis. */
	tail = path + n - LC_PROF_PATH_MAX;
	while (*tail && *tail != '/')
		tail++;
	if (*tail == '/' && tail[1]) {
		snprintf(buf, sizeof(buf), "\xe2\x80\xa6%s", tail);
		return buf;
	}
	/* One long name: its end, cut on a character boundary. */
	tail = path + n - LC_PROF_PATH_MAX;
	while (((unsigned char)*tail & 0xc0) == 0x80)
		tail++;
	snprintf(buf, sizeof(buf), "\xe2\x80\xa6%s", tail);
	return buf;
}

/* Room for each escaped part of a label; the label itself is cut to the
 * caller's size. */
#define LC_PROF_LABEL_PART	512

/* A label cut to its buffer may end inside a character: drop that
 * character (the rest is valid UTF-8, the parts being escaped). */
static void trim_cut_char(char *buf)
{
	size_t n = strlen(buf), i = n, need;
	unsigned char lead;

	while (i > 0 && n - i < 3 && ((unsigned char)buf[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0 || (lead = (unsigned char)buf[i - 1]) < 0xc0)
		return;
	need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
	if (n - (i - 1) < need)
		buf[i - 1] = '\0';
}

void lc_profile_label(const struct lc_profile *p, uint32_t func, char *buf,
		      size_t size)
{
	const struct lc_prof_func *f;
	char name[LC_PROF_LABEL_PART], file[LC_PROF_LABEL_PART];

	if (!size)
		return;
	if (func >= p->nfuncs) {
		snprintf(buf, size, "??");
		return;
	}
	f = &p->funcs[func];
	/* Names and files come from the target: escaped, as the text
	 * report prints them (base/escape.c). */
	lc_esc_copy(name, sizeof(name), f->name);
	switch (f->kind) {
	case LC_PROF_LUA:
		/* "function <file:line>" says where already. */
		if (f->file && strncmp(f->name, "function <", 10) != 0) {
			lc_esc_copy(file, sizeof(file), lc_profile_short_path(f->file));
			snprintf(buf, size, "%s (%s:%" PRId64 ")", name, file,
				 f->start_line);
		} else {
			snprintf(buf, size, "%s", name);
		}
		break;
	case LC_PROF_LUA_C:
		snprintf(buf, size, "%s [C]", name);
		break;
	case LC_PROF_GC:
		snprintf(buf, size, "[GC]");
		break;
	case LC_PROF_IDLE:
		snprintf(buf, size, "[idle]");
		break;
	default:
		snprintf(buf, size, "%s", name);
		break;
	}
	trim_cut_char(buf);
}

static bool lua_side(enum lc_prof_kind k)
{
	return k == LC_PROF_LUA || k == LC_PROF_LUA_C || k == LC_PROF_GC ||
	       k == LC_PROF_IDLE;
}

int lc_profile_func_weights(const struct lc_profile *p, bool lua_view,
			    int64_t *self, int64_t *total, int64_t *host)
{
	/* seen[f] = 1 + the last sample that counted f in total. */
	size_t *seen = calloc(p->nfuncs ? p->nfuncs : 1, sizeof(*seen));

	if (!seen)
		return -1;
	memset(self, 0, p->nfuncs * sizeof(*self));
	memset(total, 0, p->nfuncs * sizeof(*total));
	if (host)
		*host = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct lc_prof_sample *s = &p->samples[i];
		size_t outer = 0;	/* 1 + outermost Lua-side frame */
		bool leaf = true, host_seen = false;

		for (size_t k = 0; lua_view && k < s->nlocs; k++) {
			uint32_t l = s->locs[k];

			if (l < p->nlocs && p->locs[l].func < p->nfuncs &&
			    lua_side(p->funcs[p->locs[l].func].kind))
				outer = k + 1;
		}
		for (size_t k = 0; k < s->nlocs; k++) {
			uint32_t f;

			if (s->locs[k] >= p->nlocs)
				continue;
			f = p->locs[s->locs[k]].func;
			if (f >= p->nfuncs)
				continue;
			if (outer && k < outer && !lua_side(p->funcs[f].kind))
				continue;	/* the VM's own frames */
			if (host && outer && k >= outer) {
				if (!lua_side(p->funcs[f].kind)) {
					/* Below Lua: counted once, as one. */
					if (seen[f] != i + 1) {
						seen[f] = i + 1;
						if (!host_seen) {
							*host += lc_profile_cpu(s);
							host_seen = true;
						}
					}
					continue;
				}
			}
			if (leaf)
				self[f] += lc_profile_cpu(s);
			leaf = false;
			if (seen[f] != i + 1) {
				seen[f] = i + 1;
				total[f] += lc_profile_cpu(s);
			}
		}
	}
	free(seen);
	return 0;
}
