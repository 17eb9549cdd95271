/* Names of a program's code (program.h): symbols as a person reads them
 * (demangled, without their version), modules by the file the process
 * mapped, and executable memory that belongs to no module. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "prog/program.h"

/* libstdc++'s demangler (cxxabi.h; C linkage): the one gdb's and
 * eu-stack's output agree with. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Longer mangled names are left as they are: the demangler recurses on the
 * name's structure, and a symbol table is untrusted input. */
#define LC_DEMANGLE_MAX	4096

char *lc_symbol_display(const char *raw, char **linkage)
{
	size_t n;
	char *base, *out = NULL;
	int status = -1;

	if (linkage)
		*linkage = NULL;
	if (!raw)
		return NULL;
	/* "memcpy@@GLIBC_2.14", "memcpy@GLIBC_2.2.5": the linker's version
	 * suffix is no part of the function's name.  A mangled name never
	 * contains '@'. */
	n = strcspn(raw, "@");
	if (n == 0)
		n = strlen(raw);
	base = strndup(raw, n);
	if (!base)
		return NULL;
	/* Only "_Z..." is a mangled function or object name: __cxa_demangle
	 * also takes a bare type ("f" would become "float"). */
	if (base[0] == '_' && base[1] == 'Z' && n <= LC_DEMANGLE_MAX)
		out = __cxa_demangle(base, NULL, NULL, &status);
	if (out && status == 0 && *out) {
		if (linkage)
			*linkage = base;
		else
			free(base);
		return out;
	}
	free(out);
	return base;
}

/* ---- the symbol names lc_program_symbol hands out ---- */

/* The answers for the addresses asked last, direct-mapped: libdwfl
 * looks a symbol up by a walk of the module's whole symbol table, and a
 * sampler asks for the same few C functions at every sample.  Valid for
 * one set of modules (generation). */
#define ADDR_CACHE	1024

struct lc_symnames {
	const char **raw;	/* libdwfl's string: the key */
	char **name;		/* what lc_program_symbol returns */
	size_t n, cap;		/* cap: a power of two */
	unsigned generation;	/* of the modules the addresses are of */
	uint64_t addr[ADDR_CACHE];	/* 0: free */
	const char *answer[ADDR_CACHE];
};

static size_t sym_slot(const struct lc_symnames *s, const char *raw)
{
	size_t i = (size_t)(((uintptr_t)raw * 0x9e3779b97f4a7c15ull) >> 17);

	for (i &= s->cap - 1; s->raw[i] && s->raw[i] != raw; i = (i + 1) & (s->cap - 1))
		;
	return i;
}

static bool sym_grow(struct lc_symnames *s)
{
	struct lc_symnames t = { .cap = s->cap ? s->cap * 2 : 256 };

	t.raw = calloc(t.cap, sizeof(*t.raw));
	t.name = calloc(t.cap, sizeof(*t.name));
	if (!t.raw || !t.name) {
		free(t.raw);
		free(t.name);
		return false;
	}
	for (size_t i = 0; i < s->cap; i++)
		if (s->raw[i]) {
			size_t j = sym_slot(&t, s->raw[i]);

			t.raw[j] = s->raw[i];
			t.name[j] = s->name[i];
		}
	t.n = s->n;
	free(s->raw);
	free(s->name);
	*s = t;
	return true;
}

void lc_symnames_free(struct lc_symnames *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->cap; i++)
		free(s->name[i]);
	free(s->raw);
	free(s->name);
	free(s);
}

static const char *symbol_of(struct lc_program *p, uint64_t addr);

const char *lc_program_symbol(struct lc_program *p, uint64_t addr)
{
	struct lc_symnames *s;
	size_t i = (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 54);

	if (!p->dwfl || !addr)
		return NULL;
	if (!p->symnames && !(p->symnames = calloc(1, sizeof(*p->symnames))))
		return symbol_of(p, addr);
	s = p->symnames;
	if (s->generation != p->generation) {
		memset(s->addr, 0, sizeof(s->addr));
		s->generation = p->generation;
	}
	if (s->addr[i] != addr) {
		s->answer[i] = symbol_of(p, addr);
		s->addr[i] = addr;
	}
	return s->answer[i];
}

static const char *symbol_of(struct lc_program *p, uint64_t addr)
{
	Dwfl_Module *mod;
	const char *raw;
	struct lc_symnames *s;
	size_t i;
	char *name;

	if (!(mod = dwfl_addrmodule(p->dwfl, addr)) ||
	    !(raw = dwfl_module_addrname(mod, addr)))
		return NULL;
	/* Most names (C) are shown as the symbol table has them. */
	if (!strchr(raw, '@') && !(raw[0] == '_' && raw[1] == 'Z'))
		return raw;
	if (!p->symnames && !(p->symnames = calloc(1, sizeof(*p->symnames))))
		return raw;
	s = p->symnames;
	if (s->cap && s->raw[i = sym_slot(s, raw)])
		return s->name[i];
	if ((s->n + 1) * 2 > s->cap && !sym_grow(s))
		return raw;
	name = lc_symbol_display(raw, NULL);
	if (!name)
		return raw;
	i = sym_slot(s, raw);
	s->raw[i] = raw;
	s->name[i] = name;
	s->n++;
	return name;
}

/* ---- modules ---- */

/* A file the process mapped at addr, per the core's NT_FILE note. */
static const struct lc_mapped_file *mapped_file(const struct lc_program *p,
						uint64_t addr)
{
	for (size_t i = 0; i < p->nfiles; i++)
		if (addr >= p->files[i].start && addr < p->files[i].end)
			return &p->files[i];
	return NULL;
}

const char *lc_program_module_name(struct lc_program *p, Dwfl_Module *mod)
{
	const char *name;
	Dwarf_Addr low;
	const struct lc_mapped_file *f;

	if (!mod)
		return NULL;
	name = dwfl_module_info(mod, NULL, &low, NULL, NULL, NULL, NULL, NULL);
	/* A core's modules are named after the link map (a base name, or the
	 * executable as the user gave it); the kernel's note names the file
	 * it mapped there, as /proc/PID/maps names it for a live process. */
	if (p->kind == LC_PROGRAM_CORE && (f = mapped_file(p, low)))
		return f->path;
	/* The kernel's image of the vDSO: "linux-vdso.so.1" from a core's
	 * link map, "[vdso: PID]" from a live process's maps. */
	if (name && (strncmp(name, "[vdso", 5) == 0 ||
		     strncmp(name, "linux-vdso.so", 13) == 0 ||
		     strncmp(name, "linux-gate.so", 13) == 0))
		return "[vdso]";
	return name;
}

/* ---- executable memory of no module ---- */

struct lc_error *lc_program_add_exec(struct lc_program *p, uint64_t start,
				     uint64_t end, const char *name, bool anon)
{
	struct lc_exec_region *r;
	void *v;

	if (end <= start)
		return NULL;
	if (p->nexec >= 65536)
		return lc_error_create(LC_ERR_INVALID, "too many executable mappings");
	v = realloc(p->exec, (p->nexec + 1) * sizeof(*p->exec));
	if (!v)
		return &lc_error_nomem;
	p->exec = v;
	r = &p->exec[p->nexec];
	r->start = start;
	r->end = end;
	r->anon = anon;
	r->name = strdup(name && *name ? name : "[anon:exec]");
	if (!r->name)
		return &lc_error_nomem;
	p->nexec++;
	return NULL;
}

const char *lc_program_exec_name(const struct lc_program *p, uint64_t addr,
				 bool *anon)
{
	for (size_t i = 0; i < p->nexec; i++)
		if (addr >= p->exec[i].start && addr < p->exec[i].end) {
			*anon = p->exec[i].anon;
			return p->exec[i].name;
		}
	return NULL;
}

struct warm {
	double until;
};

static int warm_aranges(Dwfl_Module *mod, void **userdata, const char *name,
			Dwarf_Addr start, void *arg)
{
	struct warm *w = arg;
	Dwarf_Addr bias;
	Dwarf *dw;
	Dwarf_Aranges *ar;
	size_t n;

	if (lc_now_s() > w->until)
		return DWARF_CB_ABORT;
	if ((dw = dwfl_module_getdwarf(mod, &bias)))
		dwarf_getaranges(dw, &ar, &n);
	return DWARF_CB_OK;
}

void lc_program_warm_lines(struct lc_program *p, uint64_t addr,
			   double seconds)
{
	struct warm w = { .until = lc_now_s() + seconds };
	Dwfl_Module *mod = p->dwfl ? dwfl_addrmodule(p->dwfl, addr) : NULL;
	Dwarf_Addr bias;
	Dwarf *dw = mod ? dwfl_module_getdwarf(mod, &bias) : NULL;
	Dwarf_CU *cu = NULL;
	Dwarf_Die die;
	size_t n;
	uint8_t type;

	if (p->dwfl)
		dwfl_getmodules(p->dwfl, warm_aranges, &w, 0);
	while (dw && lc_now_s() < w.until &&
	       dwarf_get_units(dw, cu, &cu, NULL, &type, &die, NULL) == 0) {
		Dwarf_Lines *lines;

		dwarf_getsrclines(&die, &lines, &n);
	}
}
