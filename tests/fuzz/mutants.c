/* Structure-aware mutants of a fixture core, and an oracle for them.
 *
 *   mutants [OPTIONS] CORE EXE
 *
 * Learning: a report on the unmutated core is taken (with and without
 * the scan for idle VMs, locals and data stacks) while every read the
 * decoder makes through lc_read is recorded: its address, length and
 * bytes, and the field it reads, named from the source line that reads
 * it ("ci.savedpc" where the line says l->ci.savedpc, else the function
 * and line), found through the DWARF of this program.  Those fields are
 * what a mutant edits.
 *
 * Mutant i (of seed S) picks 1-3 learned fields, a field by picking a
 * field name first (so that every kind of field is edited, not mostly
 * stack slots), and gives each a typed edit: for a pointer, NULL,
 * another object that was read (ptr-other; ptr-same when another field
 * read by the same source line holds it: an object of the right type),
 * the field's own
 * address or its containing object's (a self-loop), a sibling field's
 * value (a shared list node), misaligned, a step off, unmapped; for a
 * count or a line, 0, small ints, -1, 0x7fffffff, 0x80000000,
 * 0xffffffff, 2^40, INT32_MIN, +-1; for a small field (status bits,
 * tags), one flipped bit.  The same seed, index and tree give the same
 * mutant.
 *
 * Oracle: each mutant runs in a child process (the image patched in the
 * child's copy): a full report with and without the scan, printed as
 * text and JSON (to /dev/null), and compared with the unmutated core's
 * report: every thread's and coroutine's frames (kind, line, name), the
 * coroutines' statuses, which threads and coroutines there are.  A line
 * or name that becomes unknown (-1, 0, "", "?") is "line-lost" or
 * "name-lost", a wrong one "line" or "name"; when every difference is
 * one a real state gives too, the class says so: "line-inside" (each
 * line lies in its function's lines, from the unmutated core's Proto,
 * or for a main chunk from 1 on: Lua stores no end for it),
 * "line-past-file" (the same, but a main chunk's line is past the end
 * of its file, which the report does not read), "tail-unnamed" (a
 * frame became a tail call and lost its name, as Lua names no
 * tail-called function).
 * The
 * outcome of a mutant, worst first:
 *   sanitizer  the child died with a sanitizer report (or a signal)
 *   hang       the child ran over the timeout (30 s)
 *   silent     the report differs while nothing is marked partial
 *              (exit status 0): a silent wrong answer
 *   unmarked   something inside is partial (a frame, thread, coroutine,
 *              VM) while the report says not partial (exit status 0)
 *   marked     differs, marked partial (exit status 1): as it should
 *   same       no difference
 *   error      nothing shown (the report failed: exit status 2)
 * One tab-separated line per mutant on stdout: index, outcome, mode
 * (scan, noscan), what differs, the first difference, the field and kind
 * of the edit that causes a bad outcome (of several, the one that alone
 * gives it, else the first), the number of edits, every edit, seconds.
 *
 * Options:
 *   -n COUNT       mutants to run (100)     -f FIRST  first index (0)
 *   -s SEED        seed (1)                 -t SECS   timeout (30)
 *   -e DIR         keep the stderr of sanitizer runs as DIR/INDEX.err
 *   -w DIR         write each bad mutant (silent, unmarked, hang,
 *                  sanitizer) to DIR, as a fuzz_decode input and a spec,
 *                  named PREFIX-OUTCOME-FIELD-EDIT-INDEX (-p PREFIX)
 *   --only I       run mutant I, print its edits and every difference
 *   --apply SPEC   run the mutant of a spec file (see --write-spec)
 *   --patch FILE   run a fuzz_decode input (image.h) as the mutant
 *   --write-core I OUT   a copy of CORE with mutant I's edits
 *   --write-patch I OUT  mutant I as a fuzz_decode input (image.h)
 *   --write-spec I OUT   mutant I as lines "ADDR LEN NEWHEX OLDHEX
 *                        FIELD:EDIT": independent of the decoder's reads,
 *                        for --apply (exit 3 if the core does not hold
 *                        OLDHEX at ADDR: a spec is of one core file)
 *   --fields       list the learned fields and exit
 *
 * Built by tests/fuzz/build.sh with ASan and UBSan (and by make check
 * without); run by tests/fuzz/mutants.sh. */
#define _GNU_SOURCE
#include <config.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "image.h"
#include "../puc_support.h"

#define MAX_FIELDS	200000
#define MAX_SITES	4096
#define MAX_EDITS	3
#define MAX_SIG		20000

/* ---- learning ---- */

struct field {
	uint64_t addr;
	uint32_t len;
	uint32_t site;
	uint8_t orig[8];	/* the first bytes, as read */
	bool ptr;		/* 8 aligned bytes pointing into the core */
};

struct site {
	char name[80];		/* "ci.savedpc", or "func@file.c:123" */
	uint32_t *fields;
	size_t nfields, cap;
	bool skip;		/* string bytes, code: contents, not structure */
};

static struct lc_target *target;
static struct field *fields;
static size_t nfields;
static struct site sites[MAX_SITES];
static size_t nsites;
static uint64_t *ptrvals;	/* sorted values of pointer fields */
static size_t nptrvals;

/* Fields by (addr, len): open addressing. */
#define HBITS	19
static uint32_t fhash[1u << HBITS];	/* field index + 1, 0 empty */

static uint32_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x;
}

/* Sites by the call stack of a read (return addresses). */
struct stackkey {
	uint64_t h;
	uint32_t site;
};
static struct stackkey skeys[1u << 16];

static Dwfl *self;

/* Source files' lines, for naming fields. */
struct src {
	char *path;
	char **lines;
	size_t nlines;
};
static struct src srcs[64];
static size_t nsrcs;

static const char *src_line(const char *path, int line)
{
	struct src *s = NULL;

	for (size_t i = 0; i < nsrcs; i++)
		if (strcmp(srcs[i].path, path) == 0)
			s = &srcs[i];
	if (!s && nsrcs < 64) {
		FILE *f = fopen(path, "r");
		char *buf = NULL;
		size_t cap = 0;

		s = &srcs[nsrcs++];
		s->path = strdup(path);
		s->lines = NULL;
		s->nlines = 0;
		while (f && getline(&buf, &cap, f) >= 0) {
			s->lines = realloc(s->lines, (s->nlines + 1) * sizeof(char *));
			s->lines[s->nlines++] = strdup(buf);
		}
		free(buf);
		if (f)
			fclose(f);
	}
	if (!s || line < 1 || (size_t)line > s->nlines)
		return "";
	return s->lines[line - 1];
}

struct srcpos {
	const char *file;
	int line;
	const char *func;
};

/* A function's name, through its abstract origin (an inlined or
 * out-of-line instance of an inline function). */
static const char *die_name(Dwarf_Die *d)
{
	Dwarf_Attribute a;

	return dwarf_formstring(dwarf_attr_integrate(d, DW_AT_name, &a));
}

/* The source positions of pc, innermost inlined call first. */
static size_t positions(uint64_t pc, struct srcpos *out, size_t max)
{
	Dwfl_Module *mod = dwfl_addrmodule(self, pc);
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu, *scopes = NULL;
	Dwfl_Line *ln;
	Dwarf_Files *files = NULL;
	size_t nf = 0, n = 0;
	int line = 0, ns;
	const char *file, *fn;

	if (!mod || !(ln = dwfl_module_getsrc(mod, pc)) ||
	    !(file = dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL))) {
		if (getenv("MUTANTS_DEBUG"))
			fprintf(stderr, "  no line for %#lx (%s): %s\n", (unsigned long)pc,
				mod ? dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL) : "no module",
				dwfl_errmsg(-1));
		return 0;
	}
	fn = dwfl_module_addrname(mod, pc);
	cu = dwfl_module_addrdie(mod, pc, &bias);
	ns = cu ? dwarf_getscopes(cu, pc - bias, &scopes) : 0;
	if (cu)
		dwarf_getsrcfiles(cu, &files, &nf);
	/* The innermost scope naming a function names the first line. */
	for (int i = 0; i < ns; i++)
		if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine ||
		    dwarf_tag(&scopes[i]) == DW_TAG_subprogram) {
			const char *nm = die_name(&scopes[i]);

			if (nm)
				fn = nm;
			break;
		}
	out[n++] = (struct srcpos){ file, line, fn ? fn : "?" };
	for (int i = 0; i < ns && n < max; i++) {
		Dwarf_Attribute a;
		Dwarf_Word cf, cl;

		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine ||
		    dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &cf) ||
		    dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &cl) ||
		    !files)
			continue;
		file = dwarf_filesrc(files, cf, NULL, NULL);
		if (!file)
			continue;
		fn = "?";
		for (int k = i + 1; k < ns; k++)
			if (dwarf_tag(&scopes[k]) == DW_TAG_inlined_subroutine ||
			    dwarf_tag(&scopes[k]) == DW_TAG_subprogram) {
				const char *nm = die_name(&scopes[k]);

				fn = nm ? nm : "?";
				break;
			}
		out[n++] = (struct srcpos){ file, (int)cl, fn };
	}
	free(scopes);
	return n;
}

static bool is_reader(const char *file)
{
	return strstr(file, "/mem/") || strstr(file, "tests/fuzz/");
}

/* Name the field a read reads from its call stack: the first source line
 * outside the memory layer that says l->STRUCT.FIELD, else where the
 * decoder called the reader. */
static uint32_t site_of(void *const *pcs, int n)
{
	static regex_t re;
	static bool re_ok;
	struct srcpos pos[64];
	size_t np = 0;
	char where[80] = "", name[80] = "";
	const char *wtext = "";
	uint64_t h = 1469598103934665603ull;
	uint32_t slot;

	for (int i = 2; i < n; i++)
		h = (h ^ (uint64_t)(uintptr_t)pcs[i]) * 1099511628211ull;
	slot = hash64(h) & ((1u << 16) - 1);
	for (uint32_t k = 0; k < (1u << 16); k++, slot = (slot + 1) & 0xffff) {
		if (skeys[slot].h == h)
			return skeys[slot].site;
		if (!skeys[slot].h)
			break;
	}
	if (!re_ok) {
		regcomp(&re, "l->([A-Za-z]+\\.[A-Za-z_]+|ts_contents)", REG_EXTENDED);
		re_ok = true;
	}
	for (int i = 1; i < n && np < 60; i++)
		np += positions((uint64_t)(uintptr_t)pcs[i] - 1, pos + np, 64 - np);
	for (size_t i = 0, seen = 0; i < np && seen < 6; i++) {
		const char *txt;
		regmatch_t m[2];

		if (is_reader(pos[i].file))
			continue;
		if (!where[0]) {
			const char *b = strrchr(pos[i].file, '/');

			wtext = src_line(pos[i].file, pos[i].line);
			snprintf(where, sizeof(where), "%s@%s:%d", pos[i].func,
				 b ? b + 1 : pos[i].file, pos[i].line);
		}
		seen++;
		txt = src_line(pos[i].file, pos[i].line);
		if (regexec(&re, txt, 2, m, 0) == 0) {
			snprintf(name, sizeof(name), "%.*s",
				 (int)(m[1].rm_eo - m[1].rm_so), txt + m[1].rm_so);
			break;
		}
	}
	if (getenv("MUTANTS_DEBUG")) {
		fprintf(stderr, "read stack (%d pcs, %zu positions):\n", n, np);
		for (size_t i = 0; i < np; i++)
			fprintf(stderr, "  %s %s:%d\n", pos[i].func, pos[i].file, pos[i].line);
	}
	if (!name[0])
		snprintf(name, sizeof(name), "%s", where[0] ? where : "?");
	uint32_t s;

	for (s = 0; s < nsites && strcmp(sites[s].name, name) != 0; s++)
		;
	if (s == nsites && nsites < MAX_SITES) {
		snprintf(sites[s].name, sizeof(sites[s].name), "%s", name);
		/* The bytes of strings and code are contents: an edit there
		 * gives another valid answer, not a wrong one. */
		sites[s].skip = strstr(name, "string") || strstr(name, "str_") ||
				strstr(wtext, "codev") || strstr(wtext, "mem, bytes") ||
				strstr(name, "chunkid");
		nsites++;
	}
	if (s == nsites)
		s = nsites - 1;
	skeys[slot].h = h;
	skeys[slot].site = s;
	return s;
}

static void learn_hook(uint64_t addr, size_t len)
{
	void *pcs[24];
	uint8_t *at;
	uint32_t slot;
	int n;

	if (!len || nfields >= MAX_FIELDS || !(at = fuzz_image_at(addr, len)))
		return;
	slot = hash64(addr * 31 + len) & ((1u << HBITS) - 1);
	while (fhash[slot]) {
		struct field *f = &fields[fhash[slot] - 1];

		if (f->addr == addr && f->len == len)
			return;
		slot = (slot + 1) & ((1u << HBITS) - 1);
	}
	n = backtrace(pcs, 24);
	fields[nfields].addr = addr;
	fields[nfields].len = (uint32_t)len;
	memcpy(fields[nfields].orig, at, len < 8 ? len : 8);
	fields[nfields].site = site_of(pcs, n);
	fhash[slot] = (uint32_t)++nfields;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t orig_value(const struct field *f)
{
	uint64_t v = 0;

	memcpy(&v, f->orig, f->len < 8 ? f->len : 8);
	return v;
}

static void index_fields(void)
{
	ptrvals = malloc((nfields + 1) * sizeof(uint64_t));
	for (size_t i = 0; i < nfields; i++) {
		struct field *f = &fields[i];
		struct site *s = &sites[f->site];
		uint64_t v = orig_value(f);

		f->ptr = f->len == 8 && !(f->addr & 7) && v && !(v & 7) &&
			 fuzz_image_at(v, 1);
		if (f->ptr)
			ptrvals[nptrvals++] = v;
		if (s->nfields == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 16;
			s->fields = realloc(s->fields, s->cap * sizeof(uint32_t));
		}
		s->fields[s->nfields++] = (uint32_t)i;
	}
	qsort(ptrvals, nptrvals, sizeof(uint64_t), cmp_u64);
}

/* ---- mutants ---- */

struct edit {
	uint32_t field;
	uint32_t off, len;	/* bytes edited, from the field's address */
	uint8_t bytes[8];
	const char *kind;
};

struct mutant {
	struct edit e[MAX_EDITS];
	int n;
};

static uint64_t rng;

static uint64_t next(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t pick(uint64_t n)
{
	return n ? next() % n : 0;
}

/* The start of the object holding addr: the greatest pointer value at or
 * below it, within 2 KiB; else addr. */
static uint64_t container(uint64_t addr)
{
	size_t lo = 0, hi = nptrvals;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ptrvals[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr - ptrvals[lo - 1] < 2048 ? ptrvals[lo - 1] : addr;
}

/* A pointer field near addr (a sibling in the same object) whose value
 * differs from v, or 0. */
static uint64_t sibling(uint64_t addr, uint64_t v)
{
	for (int d = 8; d <= 512; d += 8) {
		uint64_t a[2] = { addr + (uint64_t)d, addr - (uint64_t)d };

		for (int k = 0; k < 2; k++) {
			uint8_t *p = fuzz_image_at(a[k], 8);
			uint64_t w;

			if (!p)
				continue;
			memcpy(&w, p, 8);
			if (w && w != v && !(w & 7) && fuzz_image_at(w, 1) &&
			    (pick(4) == 0))
				return w;
		}
	}
	return 0;
}

/* The GC header tag of the object at a (CommonHeader: next, then tt),
 * when it is one of a string's (5.1-5.5: 4, with 5.2+'s variant and
 * collectable bits), else -1. */
static int string_tag(uint64_t a)
{
	uint8_t *p = a && !(a & 7) ? fuzz_image_at(a, 16) : NULL;

	if (!p)
		return -1;
	switch (p[8]) {
	case 0x04: case 0x14: case 0x44: case 0x54:
		return p[8];
	default:
		return -1;
	}
}

/* Whether w points to an object of the type f's own value points to:
 * another field read where f is (the same source line: a field of the
 * same struct type) holds it, or both are strings of the same kind (a
 * name for a name).  Not by line for TValues, whose pointee's type is
 * their tag's. */
static bool same_site(const struct field *f, uint64_t w)
{
	const struct site *s = &sites[f->site];
	int tag = string_tag(orig_value(f));

	if (tag >= 0 && string_tag(w) == tag)
		return true;
	if (!strncmp(s->name, "tv.", 3))
		return false;
	for (size_t i = 0; i < s->nfields; i++)
		if (fields[s->fields[i]].ptr && orig_value(&fields[s->fields[i]]) == w)
			return true;
	return false;
}

static void edit_value(struct edit *e, uint64_t v, const char *kind)
{
	memcpy(e->bytes, &v, 8);
	e->kind = kind;
}

static void make_edit(struct edit *e, uint32_t fi)
{
	const struct field *f = &fields[fi];
	uint64_t v;

	e->field = fi;
	e->off = 0;
	e->len = f->len;
	if (f->len > 8) {
		/* An array read as a block (line info): one element. */
		uint32_t esz = f->len % 4 == 0 && pick(2) ? 4 : 1;
		static const uint32_t b32[] = { 0x7fffffff, 0x80000000, 0xffffffff,
						0, 0x10000 };
		static const uint8_t b8[] = { 0x80, 0x7f, 0xff, 0x81, 0 };

		e->off = (uint32_t)pick(f->len / esz) * esz;
		e->len = esz;
		if (esz == 4)
			edit_value(e, b32[pick(5)], "elem32");
		else
			edit_value(e, b8[pick(5)], "elem8");
		return;
	}
	memcpy(&v, f->orig, 8);
	if (f->len < 8)
		v &= (1ull << (f->len * 8)) - 1;
	if (f->ptr && pick(5) != 0) {
		switch (pick(9)) {
		case 0: edit_value(e, 0, "ptr-null"); return;
		case 1: {
			uint64_t w = ptrvals[pick(nptrvals)];

			edit_value(e, w != v ? w : v + 64,
				   w != v && same_site(f, w) ? "ptr-same" : "ptr-other");
			return;
		}
		case 2: edit_value(e, f->addr, "ptr-self"); return;
		case 3: edit_value(e, container(f->addr), "ptr-container"); return;
		case 4: {
			uint64_t w = sibling(f->addr, v);

			edit_value(e, w ? w : container(f->addr),
				   !w ? "ptr-container" :
				   string_tag(v) >= 0 && string_tag(w) == string_tag(v) ?
				   "ptr-same" : "ptr-sibling");
			return;
		}
		case 5: {
			/* Off every alignment a pointer has (a step of 4 would
			 * be the next Instruction of a saved pc). */
			static const uint64_t off[] = { 1, 2, 3, 5, 6, 7 };

			edit_value(e, v + off[pick(6)], "ptr-misalign");
			return;
		}
		case 6: {
			static const int64_t step[] = { -16, -8, -4, 4, 8, 16, 4096, -4096 };

			edit_value(e, v + (uint64_t)step[pick(8)], "ptr-step");
			return;
		}
		case 7: edit_value(e, 0xdead0000ull + pick(16) * 8, "ptr-unmapped"); return;
		default: edit_value(e, v ^ (1ull << (40 + pick(8))), "ptr-highbit"); return;
		}
	}
	if (f->len <= 2 && pick(2)) {
		edit_value(e, v ^ (1ull << pick(f->len * 8)), "bitflip");
		return;
	}
	switch (pick(14)) {
	case 0: edit_value(e, 0, "zero"); return;
	case 1: edit_value(e, 1 + pick(3), "small"); return;
	case 2: edit_value(e, ~0ull, "minus1"); return;
	case 3: edit_value(e, 0x7fffffff, "int32max"); return;
	case 4: edit_value(e, 0x80000000, "int32min"); return;
	case 5: edit_value(e, 0xffffffff, "uint32max"); return;
	case 6:
		if (f->len == 8)
			edit_value(e, 1ull << 40, "2^40");
		else
			edit_value(e, 1ull << (f->len * 8 - 2), "quarter-range");
		return;
	case 7: edit_value(e, v + 1, "plus1"); return;
	case 8: edit_value(e, v - 1, "minus1-of"); return;
	case 9: edit_value(e, (uint64_t)-125, "minus125"); return;
	case 10: edit_value(e, v * 2 + 1000, "grow"); return;
	case 11: edit_value(e, 4 + pick(60), "small"); return;
	default: edit_value(e, v ^ (1ull << pick(f->len * 8)), "bitflip"); return;
	}
}

static void make_mutant(uint64_t seed, uint64_t idx, struct mutant *m)
{
	size_t live[MAX_SITES], nlive = 0;

	rng = idx;
	rng = next() ^ seed;
	rng = next();
	for (size_t s = 0; s < nsites; s++)
		if (!sites[s].skip && sites[s].nfields)
			live[nlive++] = s;
	uint64_t r = pick(100);

	m->n = r < 60 ? 1 : r < 85 ? 2 : 3;
	for (int i = 0; i < m->n; i++) {
		const struct site *s = &sites[live[pick(nlive)]];

		make_edit(&m->e[i], s->fields[pick(s->nfields)]);
	}
}

static void apply(const struct mutant *m)
{
	for (int i = 0; i < m->n; i++) {
		const struct edit *e = &m->e[i];
		uint8_t *at = fuzz_image_at(fields[e->field].addr + e->off, e->len);

		if (at)
			memcpy(at, e->bytes, e->len);
	}
}

static void describe(FILE *out, const struct mutant *m, char sep)
{
	for (int i = 0; i < m->n; i++) {
		const struct edit *e = &m->e[i];
		uint64_t v = 0;

		memcpy(&v, e->bytes, e->len < 8 ? e->len : 8);
		fprintf(out, "%s%s:%s@0x%" PRIx64 "/%u=0x%" PRIx64,
			i ? (sep == ';' ? ";" : "\n") : "",
			sites[fields[e->field].site].name, e->kind,
			fields[e->field].addr + e->off, e->len, v);
	}
}

/* ---- the oracle ---- */

struct sig {
	char key[48];		/* "T1234#3", "C0x55..", "C0x55..#2" */
	char val[160];		/* kind, line, name, status */
	const char *cls;	/* what a change of val is: "line", ... */
	int lo, hi;		/* "line" of the unmutated core: the lines
				   of its function (0, 0: not known) */
	int file_lines;		/* a main chunk's: its file's, or 0 */
};

struct outcome {
	bool failed;		/* the report failed */
	bool partial;		/* report->partial */
	bool inner_partial;	/* anything inside partial */
	struct sig *sig;
	size_t nsig;
};

static FILE *devnull;
static bool ranging;		/* take() of the unmutated core: find the
				   lines each Lua frame's function spans,
				   and the threads' machine stacks */
#define MAX_STACKS	64
static struct { uint64_t lo, hi; } stacks[MAX_STACKS];
static size_t nstacks;

/* Whether addr is a word of a thread's machine stack in the unmutated
 * core: from below its innermost frame's sp (the red zone and what the
 * unwinder probes) to past its outermost frame's. */
static bool on_stack(uint64_t addr)
{
	for (size_t i = 0; i < nstacks; i++)
		if (addr >= stacks[i].lo && addr < stacks[i].hi)
			return true;
	return false;
}

/* The name a field is shown under: a word of a machine stack is one
 * ("stack:" and the field the decoder first read it as), whatever read
 * it first. */
static const char *field_name(const struct field *f)
{
	static char buf[2][96];
	static int k;

	if (!on_stack(f->addr))
		return sites[f->site].name;
	k ^= 1;
	snprintf(buf[k], sizeof(buf[k]), "stack:%s", sites[f->site].name);
	return buf[k];
}

/* The lines the function of Lua frame f spans, in the unmutated core:
 * a function's [linedefined, lastlinedefined] (from its Proto); a main
 * chunk's from 1 on (Lua stores no last line for it, lastlinedefined
 * 0: only its line info, the edited data, says where it ends), and
 * *file_lines its file's lines (from the source it names) or 0; 0, 0
 * when not known.  Its reads are not learned as fields. */
static void line_range(const struct lc_frame *f, int *lo, int *hi,
		       int *file_lines)
{
	static struct lc_lua_ctx *ctx;
	const struct lc_layout *l = NULL;
	void (*hook)(uint64_t, size_t) = lc_read_hook;

	*lo = *hi = *file_lines = 0;
	if (f->linedefined == 0) {
		FILE *src = f->source && f->source[0] == '@' ?
			    fopen(f->source + 1, "r") : NULL;
		int c, n = 0;

		*lo = 1;
		*hi = INT32_MAX - 1;
		if (!src)
			return;
		while ((c = getc(src)) != EOF)
			n += c == '\n';
		fclose(src);
		*file_lines = n + 1;
		return;
	}
	if (f->linedefined <= 0 || !f->state || !f->ci)
		return;
	lc_read_hook = NULL;
	if (!ctx) {
		struct lc_error *e = lc_test_ctx(target, &ctx);

		lc_error_destroy(e);
	}
	if (ctx && !lc_layout_get(target, &l)) {
		struct lc_lstate st;
		struct lc_ci *cis = NULL;
		size_t n = 0;
		bool partial;
		int64_t last;
		struct lc_error *e = NULL;

		if (lc_lua_state_read(ctx, f->state, &st) == 0 &&
		    !(e = lc_lua_walk(ctx, &st, 4096, &cis, &n, &partial)))
			for (size_t k = 0; k < n; k++)
				if (cis[k].addr == f->ci && cis[k].is_lua &&
				    cis[k].proto &&
				    lc_lua_read_sfield(ctx, cis[k].proto,
						       l->p.lastlinedefined, &last) == 0 &&
				    last >= f->linedefined && last < INT32_MAX) {
					*lo = f->linedefined;
					*hi = (int)last;
				}
		lc_error_destroy(e);
		free(cis);
	}
	lc_read_hook = hook;
}

static void sig_add(struct outcome *o, const char *cls, const char *key,
		    const char *fmt, ...)
{
	va_list ap;
	struct sig *s;

	if (o->nsig >= MAX_SIG)
		return;
	s = &o->sig[o->nsig++];
	snprintf(s->key, sizeof(s->key), "%s", key);
	va_start(ap, fmt);
	vsnprintf(s->val, sizeof(s->val), fmt, ap);
	va_end(ap);
	s->cls = cls;
}

static void sig_frames(struct outcome *o, const char *prefix,
		       const struct lc_frame *fr, size_t n)
{
	for (size_t k = 0, nl = 0, nn = 0; k < n; k++) {
		const struct lc_frame *f = &fr[k];
		char key[48];

		if (f->partial)
			o->inner_partial = true;
		if (f->kind == LC_FRAME_NATIVE) {
			snprintf(key, sizeof(key), "%sn%zu", prefix, nn++);
			sig_add(o, "native", key, "%s", f->function ? f->function : "??");
			continue;
		}
		snprintf(key, sizeof(key), "%s#%zu", prefix, nl++);
		sig_add(o, "kind", key, "%s", f->what ? f->what : "?");
		snprintf(key, sizeof(key), "%s#%zu.line", prefix, nl - 1);
		sig_add(o, "line", key, "%d", f->currentline);
		if (ranging && o->nsig)
			line_range(f, &o->sig[o->nsig - 1].lo, &o->sig[o->nsig - 1].hi,
				   &o->sig[o->nsig - 1].file_lines);
		snprintf(key, sizeof(key), "%s#%zu.name", prefix, nl - 1);
		sig_add(o, "name", key, "%s", f->name ? f->name : "");
		snprintf(key, sizeof(key), "%s#%zu.tail", prefix, nl - 1);
		sig_add(o, "tail", key, "%d", f->istailcall);
	}
}

static void take(bool scan, struct outcome *o, bool print)
{
	struct lc_report_options opt = { .locals = true, .stack = true,
					 .no_scan = !scan };
	struct lc_report *r = NULL;
	struct lc_error *err = lc_report_create(target, &opt, &r);

	memset(o, 0, sizeof(*o));
	o->sig = calloc(MAX_SIG, sizeof(struct sig));
	if (err || !r) {
		o->failed = true;
		lc_error_destroy(err);
		lc_report_destroy(r);
		return;
	}
	if (print) {
		lc_report_print_text(r, devnull);
		lc_report_print_json(r, devnull);
	}
	o->partial = r->partial;
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct lc_thread *t = &r->threads[i];
		char key[48];

		if (t->partial)
			o->inner_partial = true;
		if (ranging && nstacks < MAX_STACKS) {
			uint64_t lo = UINT64_MAX, hi = 0;

			for (size_t k = 0; k < t->nframes; k++)
				if (t->frames[k].kind == LC_FRAME_NATIVE &&
				    t->frames[k].sp) {
					if (t->frames[k].sp < lo)
						lo = t->frames[k].sp;
					if (t->frames[k].sp > hi)
						hi = t->frames[k].sp;
				}
			if (hi) {
				stacks[nstacks].lo = lo - 4096;
				stacks[nstacks++].hi = hi + 4096;
			}
		}
		snprintf(key, sizeof(key), "T%d", t->tid);
		sig_add(o, "thread", key, "%zu states", t->nstates);
		sig_frames(o, key, t->frames, t->nframes);
	}
	for (size_t v = 0; v < r->nvms; v++) {
		const struct lc_vm *vm = &r->vms[v];

		if (vm->partial)
			o->inner_partial = true;
		for (size_t i = 0; i < vm->nthreads; i++) {
			const struct lc_luathread *c = &vm->threads[i];
			char key[48];

			if (c->partial)
				o->inner_partial = true;
			snprintf(key, sizeof(key), "C%" PRIx64, c->addr);
			sig_add(o, "coroutine", key, "%s", "present");
			snprintf(key, sizeof(key), "C%" PRIx64 ".status", c->addr);
			sig_add(o, "status", key, "%s", c->status ? c->status : "?");
			snprintf(key, sizeof(key), "C%" PRIx64, c->addr);
			sig_frames(o, key, c->frames, c->nframes);
		}
	}
	lc_report_destroy(r);
}

static const struct sig *find_sig(const struct outcome *o, const char *key)
{
	for (size_t i = 0; i < o->nsig; i++)
		if (strcmp(o->sig[i].key, key) == 0)
			return &o->sig[i];
	return NULL;
}

/* Whether difference s -> t is one a real state gives too: a line the
 * function spans (its line info is not otherwise constrained), or a
 * frame that became a tail call and so lost its name (every Lua
 * function may have been tail called, and Lua names none that was).
 * *tail is set for the latter, *past for a main chunk's line past the
 * end of its file (which the report does not read). */
static bool plausible(const struct outcome *b, const struct sig *s,
		      const struct sig *t, bool *tail, bool *past)
{
	if (!strcmp(s->cls, "line")) {
		int v = atoi(t->val);

		if (s->file_lines && v > s->file_lines)
			*past = true;
		return s->hi > 0 && v >= s->lo && v <= s->hi;
	}
	if (!strcmp(s->cls, "tail"))
		return !strcmp(s->val, "0") && !strcmp(t->val, "1") && (*tail = true);
	if (!strcmp(s->cls, "name") && !strcmp(t->val, "")) {
		char key[48];
		const struct sig *tl;
		size_t len = strlen(s->key);

		if (len < 5)
			return false;
		snprintf(key, sizeof(key), "%.*s.tail", (int)(len - 5), s->key);
		tl = find_sig(b, key);
		return tl && !strcmp(tl->val, "1") && (*tail = true);
	}
	return false;
}

/* The differences of b from a: their number; the first's class and
 * text in cls/what (the class "line-inside", "line-past-file" or
 * "tail-unnamed" when every difference is plausible()); each printed to
 * verbose if set. */
static size_t diff(const struct outcome *a, const struct outcome *b,
		   char *cls, size_t clsz, char *what, size_t wsz, FILE *verbose)
{
	size_t n = 0;
	bool all = true, tail = false, past = false;

	for (size_t i = 0; i < a->nsig; i++) {
		const struct sig *s = &a->sig[i], *t = find_sig(b, s->key);
		char c[32], w[400];

		if (t && strcmp(s->val, t->val) == 0)
			continue;
		if (!t || !plausible(b, s, t, &tail, &past))
			all = false;
		if (t && (!strcmp(s->cls, "name") || !strcmp(s->cls, "line")) &&
		    (!strcmp(t->val, "") || !strcmp(t->val, "?") ||
		     !strcmp(t->val, "-1") || !strcmp(t->val, "0")))
			snprintf(c, sizeof(c), "%s-lost", s->cls);
		else if (t)
			snprintf(c, sizeof(c), "%s", s->cls);
		else
			snprintf(c, sizeof(c), "%s-missing",
				 strchr("kln", s->cls[0]) ? "frame" : s->cls);
		snprintf(w, sizeof(w), "%s: %s -> %s", s->key, s->val,
			 t ? t->val : "(none)");
		if (!n++) {
			snprintf(cls, clsz, "%s", c);
			snprintf(what, wsz, "%s", w);
		}
		if (verbose)
			fprintf(verbose, "  differs (%s) %s\n", c, w);
	}
	for (size_t i = 0; i < b->nsig; i++) {
		const struct sig *t = &b->sig[i];
		char w[400];

		if (find_sig(a, t->key))
			continue;
		all = false;
		snprintf(w, sizeof(w), "%s: (none) -> %s", t->key, t->val);
		if (!n++) {
			snprintf(cls, clsz, "%s-extra", strchr("kln", t->cls[0]) ? "frame" : t->cls);
			snprintf(what, wsz, "%s", w);
		}
		if (verbose)
			fprintf(verbose, "  differs (extra) %s\n", w);
	}
	if (n && all)
		snprintf(cls, clsz, "%s", tail ? "tail-unnamed" :
			 past ? "line-past-file" : "line-inside");
	return n;
}

static struct outcome base[2];	/* noscan, scan */

enum { O_SAME, O_ERROR, O_MARKED, O_UNMARKED, O_SILENT, O_HANG, O_SANITIZER };
static const char *oname[] = { "same", "error", "marked", "unmarked", "silent",
			       "hang", "sanitizer" };

/* Run m in this process (a child): the verdict line. */
static void judge(const struct mutant *m, char *line, size_t sz, FILE *verbose)
{
	int worst = O_SAME;
	char wcls[32] = "-", wwhat[400] = "-";
	const char *wmode = "-";

	apply(m);
	for (int scan = 1; scan >= 0; scan--) {
		struct outcome o;
		char cls[32] = "-", what[400] = "-";
		size_t nd;
		int v;

		take(scan, &o, scan);
		if (o.failed) {
			v = O_ERROR;
		} else {
			nd = diff(&base[scan], &o, cls, sizeof(cls), what,
				  sizeof(what), verbose);
			if (nd && !o.partial && !o.inner_partial)
				v = O_SILENT;
			else if (o.inner_partial && !o.partial)
				v = O_UNMARKED;
			else if (nd)
				v = O_MARKED;
			else
				v = O_SAME;
			if (verbose)
				fprintf(verbose, "%s: %zu differences, report %s, inside %s\n",
					scan ? "scan" : "noscan", nd,
					o.partial ? "partial" : "not partial",
					o.inner_partial ? "partial" : "not partial");
		}
		if (v > worst) {
			worst = v;
			wmode = scan ? "scan" : "noscan";
			snprintf(wcls, sizeof(wcls), "%s", cls);
			snprintf(wwhat, sizeof(wwhat), "%s", what);
		}
		free(o.sig);
	}
	for (char *p = wwhat; *p; p++)
		if (*p == '\t' || *p == '\n' || (unsigned char)*p < 32)
			*p = ' ';
	snprintf(line, sz, "%s\t%s\t%s\t%s", oname[worst], wmode, wcls, wwhat);
}

/* Run m in a child with a timeout: its verdict line in line (outcome,
 * mode, class, first difference), and the seconds it took. */
static double run_child(uint64_t idx, const struct mutant *m, int timeout,
			const char *errdir, char *line, size_t linesz)
{
	int pfd[2];
	char errpath[4096], buf[1024];
	struct timespec t0, t1;
	size_t got = 0;
	pid_t pid;
	int status = 0, efd;
	bool hung = false;

	snprintf(errpath, sizeof(errpath), "%s/%" PRIu64 ".err",
		 errdir ? errdir : "/tmp", idx);
	efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (pipe(pfd) < 0 || efd < 0) {
		perror("mutants");
		exit(2);
	}
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		dup2(efd, 2);
		judge(m, buf, sizeof(buf), NULL);
		if (write(pfd[1], buf, strlen(buf)) < 0)
			_exit(3);
		_exit(0);
	}
	close(pfd[1]);
	close(efd);
	for (;;) {
		struct pollfd p = { pfd[0], POLLIN, 0 };
		long left;
		ssize_t k;

		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = timeout * 1000L - ((t1.tv_sec - t0.tv_sec) * 1000L +
					  (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&p, 1, (int)left) == 0) {
			kill(pid, SIGKILL);
			hung = true;
			break;
		}
		k = read(pfd[0], line + got, linesz - 1 - got);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	line[got] = '\0';
	close(pfd[0]);
	waitpid(pid, &status, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (hung) {
		snprintf(line, linesz, "hang\t-\t-\tover %d s", timeout);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !got) {
		FILE *f = fopen(errpath, "r");
		char l[512], first[600] = "";

		while (f && fgets(l, sizeof(l), f))
			if (!first[0] && (strstr(l, "ERROR:") || strstr(l, "runtime error")))
				snprintf(first, sizeof(first), "%s", l);
		if (f)
			fclose(f);
		first[strcspn(first, "\n")] = '\0';
		for (char *p = first; *p; p++)
			if (*p == '\t')
				*p = ' ';
		snprintf(line, linesz, "sanitizer\t-\t%s\t%s",
			 WIFSIGNALED(status) ? "signal" : "exit",
			 first[0] ? first : "(no report)");
	}
	if (!errdir || strncmp(line, "sanitizer", 9) != 0)
		unlink(errpath);
	return (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

static int write_patch(const struct mutant *m, const char *out);
static int write_spec(const struct mutant *m, const char *out);

static bool bad(const char *line)
{
	return !strncmp(line, "silent", 6) || !strncmp(line, "unmarked", 8) ||
	       !strncmp(line, "hang", 4) || !strncmp(line, "sanitizer", 9);
}

/* Run mutant idx and print its line.  A bad outcome of several edits is
 * retried with each edit alone: the first that gives the same outcome
 * is the one the line names (the "culprit", else the first edit).  With
 * savedir, a bad mutant is written there as a fuzz_decode input
 * PREFIX-OUTCOME-FIELD-EDIT-INDEX and a spec of the same name + .spec. */
static void run_one(uint64_t idx, const struct mutant *m, int timeout,
		    const char *errdir, const char *savedir, const char *prefix)
{
	char line[1024] = "", path[4096], name[200];
	double secs = run_child(idx, m, timeout, errdir, line, sizeof(line));
	int culprit = 0;

	if (bad(line) && m->n > 1) {
		size_t ol = strcspn(line, "\t");

		for (int k = 0; k < m->n; k++) {
			struct mutant one = { .n = 1 };
			char l1[1024] = "";

			one.e[0] = m->e[k];
			run_child(idx, &one, timeout, NULL, l1, sizeof(l1));
			if (strncmp(l1, line, ol) == 0 && l1[ol] == '\t') {
				culprit = k;
				break;
			}
		}
	}
	printf("%" PRIu64 "\t%s\t%s\t%s\t%d\t", idx, line,
	       field_name(&fields[m->e[culprit].field]), m->e[culprit].kind, m->n);
	describe(stdout, m, ';');
	printf("\t%.2f\n", secs);
	fflush(stdout);
	if (savedir && bad(line)) {
		snprintf(name, sizeof(name), "%s-%.*s-%s-%s-%" PRIu64, prefix,
			 (int)strcspn(line, "\t"), line,
			 field_name(&fields[m->e[culprit].field]),
			 m->e[culprit].kind, idx);
		for (char *p = name; *p; p++)
			if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_", *p))
				*p = '_';
		snprintf(path, sizeof(path), "%s/%s", savedir, name);
		write_patch(m, path);
		snprintf(path, sizeof(path), "%s/%s.spec", savedir, name);
		write_spec(m, path);
	}
}

/* ---- reproducers ---- */

static int write_patch(const struct mutant *m, const char *out)
{
	FILE *f = fopen(out, "wb");

	for (int i = 0; f && i < m->n; i++) {
		const struct edit *e = &m->e[i];
		uint64_t a = fields[e->field].addr + e->off;

		/* Patches are at most 8 bytes within a page: split. */
		for (uint32_t k = 0; k < e->len;) {
			uint64_t at = a + k;
			long pi = fuzz_image_page_index(at);
			uint32_t n = e->len - k;

			if (n > 4096 - (at & 4095))
				n = (uint32_t)(4096 - (at & 4095));
			if (pi < 0) {
				fprintf(stderr, "mutants: 0x%" PRIx64 " is on no page fuzz_decode learns\n", at);
				fclose(f);
				return 1;
			}
			fputc((int)(pi & 0xff), f);
			fputc((int)(pi >> 8), f);
			fputc((int)(at & 0xff), f);
			fputc((int)((at & 4095) >> 8), f);
			fputc((int)(n - 1), f);
			fwrite(e->bytes + k, 1, n, f);
			k += n;
		}
	}
	return f && fclose(f) == 0 ? 0 : 1;
}

static int write_spec(const struct mutant *m, const char *out)
{
	FILE *f = fopen(out, "w");

	for (int i = 0; f && i < m->n; i++) {
		const struct edit *e = &m->e[i];

		uint64_t a = fields[e->field].addr + e->off;
		const uint8_t *was = fuzz_image_at(a, e->len);

		fprintf(f, "0x%" PRIx64 " %u ", a, e->len);
		for (uint32_t k = 0; k < e->len; k++)
			fprintf(f, "%02x", e->bytes[k]);
		fputc(' ', f);
		for (uint32_t k = 0; k < e->len; k++)
			fprintf(f, "%02x", was ? was[k] : 0);
		fprintf(f, " %s:%s\n", sites[fields[e->field].site].name, e->kind);
	}
	return f && fclose(f) == 0 ? 0 : 1;
}

static int write_core(const struct mutant *m, const char *core, const char *out)
{
	int in = open(core, O_RDONLY), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char buf[65536];
	ssize_t k;

	if (in < 0 || fd < 0) {
		perror(out);
		return 1;
	}
	while ((k = read(in, buf, sizeof(buf))) > 0)
		if (write(fd, buf, (size_t)k) != k)
			return 1;
	close(in);
	for (int i = 0; i < m->n; i++) {
		const struct edit *e = &m->e[i];
		long long off = fuzz_image_file_offset(fields[e->field].addr + e->off, e->len);

		if (off < 0 || pwrite(fd, e->bytes, e->len, off) != (ssize_t)e->len) {
			fprintf(stderr, "mutants: cannot write edit %d\n", i);
			return 1;
		}
	}
	return close(fd) == 0 ? 0 : 1;
}

/* A spec's edits as a mutant: each line's address becomes a field of its
 * own (added to the learned ones). */
static int read_spec(const char *path, struct mutant *m)
{
	FILE *f = fopen(path, "r");
	char l[512];

	m->n = 0;
	while (f && m->n < MAX_EDITS && fgets(l, sizeof(l), f)) {
		uint64_t a;
		unsigned len;
		char hex[40], was[40], what[300] = "spec";
		struct edit *e = &m->e[m->n];
		const uint8_t *at;

		if (sscanf(l, "%" SCNx64 " %u %39s %39s %299s", &a, &len, hex, was,
			   what) < 5 || len > 8 || strlen(hex) != 2 * len ||
		    strlen(was) != 2 * len || nfields >= MAX_FIELDS)
			continue;
		/* The spec is of this core only if the bytes it replaces are
		 * there (a core made again has other addresses). */
		at = fuzz_image_at(a, len);
		for (unsigned k = 0; k < len; k++) {
			uint8_t b;

			sscanf(hex + 2 * k, "%2hhx", &e->bytes[k]);
			sscanf(was + 2 * k, "%2hhx", &b);
			if (!at || at[k] != b) {
				fprintf(stderr, "mutants: %s is not of this core: 0x%" PRIx64
					" does not hold %s\n", path, a, was);
				fclose(f);
				return 3;
			}
		}
		fields[nfields] = (struct field){ .addr = a, .len = len,
						  .site = (uint32_t)nsites };
		if (nsites < MAX_SITES) {
			char *c = strrchr(what, ':');

			if (c)
				*c = '\0';
			snprintf(sites[nsites].name, sizeof(sites[nsites].name), "%s", what);
			nsites++;
		}
		e->field = (uint32_t)nfields++;
		e->off = 0;
		e->len = len;
		e->kind = "spec";
		m->n++;
	}
	if (f)
		fclose(f);
	return m->n ? 0 : 1;
}

/* ---- main ---- */

static void learn_pages(void)
{
	/* As fuzz_decode learns, so that patches index the same pages. */
	struct lc_report_options o = { .locals = true, .stack = true,
				       .no_scan = true };
	struct lc_report *r = NULL;

	lc_error_destroy(lc_report_create(target, &o, &r));
	lc_report_destroy(r);
}

int main(int argc, char **argv)
{
	static const Dwfl_Callbacks cb = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
	};
	uint64_t count = 100, first = 0, seed = 1, one = UINT64_MAX;
	int timeout = 30, listf = 0;
	const char *patch = NULL, *errdir = NULL, *savedir = NULL, *prefix = "mut", *spec = NULL, *wcore = NULL, *wpatch = NULL,
		   *wspec = NULL;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--fields")) {
			listf = 1;
			continue;
		}
		if (!v)
			break;
		if (!strcmp(a, "-n"))
			count = strtoull(v, NULL, 0);
		else if (!strcmp(a, "-f"))
			first = strtoull(v, NULL, 0);
		else if (!strcmp(a, "-s"))
			seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "-t"))
			timeout = atoi(v);
		else if (!strcmp(a, "-e"))
			errdir = v;
		else if (!strcmp(a, "-w"))
			savedir = v;
		else if (!strcmp(a, "-p"))
			prefix = v;
		else if (!strcmp(a, "--only"))
			one = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--apply"))
			spec = v;
		else if (!strcmp(a, "--patch"))
			patch = v;
		else if (!strcmp(a, "--write-core") || !strcmp(a, "--write-patch") ||
			 !strcmp(a, "--write-spec")) {
			if (i + 2 >= argc)
				break;
			one = strtoull(v, NULL, 0);
			if (a[8] == 'c')
				wcore = argv[i + 2];
			else if (a[8] == 'p')
				wpatch = argv[i + 2];
			else
				wspec = argv[i + 2];
			i++;
		} else
			break;
		i++;
	}
	if (argc - i != 2) {
		fprintf(stderr, "usage: mutants [-n COUNT] [-f FIRST] [-s SEED] [-t SECS] [-e DIR] [-w DIR [-p PREFIX]]\n"
			"       [--only I | --apply SPEC | --patch FILE | --write-core|--write-patch|--write-spec I OUT | --fields]\n"
			"       CORE EXE\n");
		return 64;
	}
	setenv("LC_FUZZ_CORE", argv[i], 1);
	setenv("LC_FUZZ_EXE", argv[i + 1], 1);
	devnull = fopen("/dev/null", "w");
	fields = calloc(MAX_FIELDS, sizeof(*fields));
	target = fuzz_image_open("mutants");
	fuzz_image_learn("mutants", learn_pages);
	self = dwfl_begin(&cb);
	if (!self || dwfl_linux_proc_report(self, getpid()) ||
	    dwfl_report_end(self, NULL, NULL)) {
		fprintf(stderr, "mutants: cannot read this program's own DWARF\n");
		return 2;
	}
	/* The baselines, learning every field they read. */
	lc_read_hook = learn_hook;
	ranging = true;
	take(false, &base[0], false);
	take(true, &base[1], false);
	ranging = false;
	lc_read_hook = NULL;
	if (base[0].failed || base[1].failed) {
		fprintf(stderr, "mutants: no report of the unmutated core\n");
		return 2;
	}
	/* A partial baseline hides every difference (each mutant's report
	 * is partial too): e.g. an executable that is not the core's. */
	if ((base[0].partial || base[1].partial) && !getenv("LC_MUTANTS_PARTIAL_OK")) {
		fprintf(stderr, "mutants: the report of the unmutated core is partial: no "
			"difference could be told from a marked one (is %s the program "
			"of this core?  LC_MUTANTS_PARTIAL_OK=1 runs anyway)\n", argv[i + 1]);
		return 2;
	}
	index_fields();
	fprintf(stderr, "mutants: %zu fields of %zu kinds; baseline %zu+%zu items, %s\n",
		nfields, nsites, base[0].nsig, base[1].nsig,
		base[1].partial ? "partial" : "not partial");
	if (listf) {
		for (size_t s = 0; s < nsites; s++)
			printf("%6zu %s%s\n", sites[s].nfields, sites[s].name,
			       sites[s].skip ? " (contents: not edited)" : "");
		return 0;
	}
	if (patch) {
		struct mutant none = { .n = 0 };
		char line[1024];
		uint8_t buf[4096];
		FILE *f = fopen(patch, "rb");
		size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;

		if (!f) {
			perror(patch);
			return 2;
		}
		fclose(f);
		fuzz_image_patch(buf, n);
		judge(&none, line, sizeof(line), stdout);
		printf("%s\n", line);
		return 0;
	}
	if (spec || one != UINT64_MAX) {
		struct mutant m;
		char line[1024];

		if (spec) {
			int rc = read_spec(spec, &m);

			if (rc == 3)
				return 3;
			if (rc) {
				fprintf(stderr, "mutants: no edit in %s\n", spec);
				return 2;
			}
		} else {
			make_mutant(seed, one, &m);
		}
		if (wcore)
			return write_core(&m, argv[i], wcore);
		if (wpatch)
			return write_patch(&m, wpatch);
		if (wspec)
			return write_spec(&m, wspec);
		describe(stdout, &m, '\n');
		printf("\n");
		fflush(stdout);
		judge(&m, line, sizeof(line), stdout);
		printf("%s\n", line);
		return 0;
	}
	for (uint64_t k = first; k < first + count; k++) {
		struct mutant m;

		make_mutant(seed, k, &m);
		run_one(k, &m, timeout, errdir, savedir, prefix);
	}
	return 0;
}
