/* The heap as text and as JSON (format luacore-heap/1). */
#include <config.h>

#include <inttypes.h>
#include <string.h>

#include "base/base.h"
#include "heap/heap.h"

static void es(FILE *out, const char *s)
{
	lc_print_escaped(s, out);
}

static void bytes_h(FILE *out, uint64_t b)
{
	if (b >= 10ull << 30)
		fprintf(out, "%.1f GiB", (double)b / (1 << 30));
	else if (b >= 10ull << 20)
		fprintf(out, "%.1f MiB", (double)b / (1 << 20));
	else if (b >= 10ull << 10)
		fprintf(out, "%.1f KiB", (double)b / (1 << 10));
	else
		fprintf(out, "%" PRIu64 " B", b);
}

static const char *class_label(int kind)
{
	switch (kind) {
	case LC_HK_LFUNC: return "Lua functions by definition";
	case LC_HK_CFUNC: return "C functions";
	case LC_HK_TABLE: return "tables by metatable";
	case LC_HK_USERDATA: return "userdata by metatable";
	default: return "?";
	}
}

static void print_classes(const struct lc_hvmres *v, size_t top, int kind,
			  bool diff, FILE *out)
{
	size_t shown = 0, n = 0;

	for (size_t i = 0; i < v->nclasses; i++)
		if (v->classes[i].kind == kind)
			n++;
	if (!n)
		return;
	fprintf(out, "  %s (%zu):\n", class_label(kind), n);
	if (diff)
		fprintf(out, "    %10s %12s %10s %12s  %s\n", "count", "bytes", "new",
			"growth", kind == LC_HK_LFUNC ? "defined at" : "name");
	else
		fprintf(out, "    %10s %12s  %s\n", "count", "bytes",
			kind == LC_HK_LFUNC ? "defined at" : "name");
	for (size_t i = 0; i < v->nclasses && shown < top; i++) {
		const struct lc_hclass *c = &v->classes[i];

		if (c->kind != kind)
			continue;
		shown++;
		if (diff)
			fprintf(out, "    %10" PRIu64 " %12" PRIu64 " %10" PRIu64 " %+12" PRId64 "  ",
				c->count, c->bytes, c->new_count,
				(int64_t)(c->bytes - c->a_bytes));
		else
			fprintf(out, "    %10" PRIu64 " %12" PRIu64 "  ", c->count,
				c->bytes);
		if (c->name)
			es(out, c->name);
		else if (kind == LC_HK_TABLE || kind == LC_HK_USERDATA)
			fputs(c->klass ? "(a metatable without __name)" :
				"(no metatable)", out);
		else
			fputs("?", out);
		if (c->klass && (kind == LC_HK_TABLE || kind == LC_HK_USERDATA))
			fprintf(out, " [metatable 0x%" PRIx64 "]", c->klass);
		fputc('\n', out);
	}
	if (shown < n)
		fprintf(out, "    ... %zu more\n", n - shown);
}

static void print_vm(const struct lc_heap *h, const struct lc_hvmres *v,
		     FILE *out)
{
	uint64_t explained = v->total + v->info.own;
	int64_t rest = (int64_t)(v->info.memory - explained);

	fprintf(out, "VM 0x%" PRIx64 " (Lua %s): %" PRIu64 " objects, ", v->g,
		v->version ? v->version : "?", v->info.objects);
	bytes_h(out, v->total);
	fputc('\n', out);
	fprintf(out, "  the VM counts %" PRIu64 " bytes; objects %" PRIu64
		", the VM's own structures %" PRIu64 " (global_State, string table); not in any object: %" PRId64
		" (%.1f%%)\n", v->info.memory, v->total, v->info.own, rest,
		v->info.memory ? 100.0 * (double)rest / (double)v->info.memory : 0.0);
	if (v->info.partial) {
		fputs("  partial: ", out);
		es(out, v->info.note);
		fputc('\n', out);
	}
	fprintf(out, "  by type:\n    %-14s %10s %14s\n", "type", "count", "bytes");
	for (int k = 0; k < LC_HK_NKINDS; k++)
		fprintf(out, "    %-14s %10" PRIu64 " %14" PRIu64 "\n",
			lc_hkind_name(k), v->count[k], v->bytes[k]);
	fprintf(out, "  strings: %" PRIu64 " short (%" PRIu64 " bytes), %" PRIu64
		" long (%" PRIu64 " bytes)\n", v->short_count, v->short_bytes,
		v->long_count, v->long_bytes);
	if (v->nstrings) {
		fprintf(out, "    biggest:\n");
		for (size_t i = 0; i < v->nstrings; i++) {
			const struct lc_htop *t = &v->strings[i];

			fprintf(out, "    %10" PRIu64 " B  0x%" PRIx64 "  len %" PRIu64 "  ",
				t->bytes, t->addr, t->len);
			/* previews and paths are escaped already */
			fputs(t->preview ? t->preview : "?", out);
			if (t->path) {
				fputs("  <- ", out);
				fputs(t->path, out);
			}
			fputc('\n', out);
		}
	}
	if (v->ndups) {
		fprintf(out, "    duplicated long strings:\n");
		for (size_t i = 0; i < v->ndups; i++) {
			const struct lc_hdup *d = &v->dups[i];

			fprintf(out, "    %6" PRIu64 " copies %10" PRIu64 " B  len %" PRIu64 "  ",
				d->copies, d->bytes, d->len);
			fputs(d->preview ? d->preview : "?", out);
			fputc('\n', out);
		}
	}
	if (v->ntables) {
		fprintf(out, "  tables, biggest:\n    %12s %10s %10s  %-18s %s\n",
			"bytes", "array", "hash", "address", "metatable");
		for (size_t i = 0; i < v->ntables; i++) {
			const struct lc_htop *t = &v->tables[i];

			fprintf(out, "    %12" PRIu64 " %10" PRIu64 " %10u  0x%-16" PRIx64 " ",
				t->bytes, t->len, t->hsize, t->addr);
			if (t->name)
				es(out, t->name);
			else
				fputs(t->klass ? "(no __name)" : "-", out);
			if (t->path) {
				fputs("  <- ", out);
				fputs(t->path, out);
			}
			fputc('\n', out);
		}
	}
	print_classes(v, h->top, LC_HK_TABLE, v->diffed, out);
	print_classes(v, h->top, LC_HK_LFUNC, v->diffed, out);
	print_classes(v, h->top, LC_HK_CFUNC, v->diffed, out);
	print_classes(v, h->top, LC_HK_USERDATA, v->diffed, out);
	fprintf(out, "  threads (%" PRIu64 "):\n", v->threads_total);
	for (size_t i = 0; i < v->nthreads; i++)
		fprintf(out, "    0x%" PRIx64 "  %" PRIu64 " stack slots, %" PRIu64 " bytes\n",
			v->threads[i].addr, v->threads[i].len, v->threads[i].bytes);
	if (v->nthreads < v->threads_total)
		fprintf(out, "    ... %" PRIu64 " more\n",
			v->threads_total - v->nthreads);
	fprintf(out, "  prototypes: %" PRIu64 " (%" PRIu64 " bytes)\n",
		v->count[LC_HK_PROTO], v->bytes[LC_HK_PROTO]);
	if (v->walked_paths)
		fprintf(out, "  reachable from the roots: %" PRIu64 " objects, %" PRIu64
			" more only through weak references; %" PRIu64
			" unreachable (%" PRIu64 " bytes: garbage not yet collected)\n",
			v->reached, v->reached_weak, v->unreached, v->unreached_bytes);
	if (v->nretainers) {
		fprintf(out, "  keeping the most alive (at least: itself, what only it holds, and so on):\n"
			"    %12s %10s  %-14s %-18s %s\n", "kept alive", "own bytes",
			"type", "address", "class  <- path");
		for (size_t i = 0; i < v->nretainers; i++) {
			const struct lc_htop *t = &v->retainers[i];

			fprintf(out, "    %12" PRIu64 " %10" PRIu64 "  %-14s 0x%-16" PRIx64 " ",
				t->retained, t->bytes, lc_hkind_name(t->kind), t->addr);
			if (t->name)
				es(out, t->name);
			else
				fputs("-", out);
			if (t->path) {
				fputs("  <- ", out);
				fputs(t->path, out);
			}
			fputc('\n', out);
		}
	}
	for (size_t i = 0; i < v->npaths; i++) {
		const struct lc_hpath *p = &v->paths[i];

		fprintf(out, "  path to 0x%" PRIx64 " (%s, %" PRIu64 " bytes",
			p->addr, lc_hkind_name(p->kind), p->size);
		if (p->reachable)
			fprintf(out, ", keeps %" PRIu64 " alive at least", p->retained);
		fputs("): ", out);
		if (p->path) {
			fputs(p->path, out);
			if (p->weak)
				fputs("  [held only through a weak reference]", out);
		} else {
			fputs(h->opts.strong ? "unreachable through strong references"
				: "unreachable: garbage not yet collected", out);
		}
		fputc('\n', out);
	}
	if (v->diffed) {
		fprintf(out, "  since the baseline: %" PRIu64 " objects (%" PRIu64
			" bytes) then, %" PRIu64 " now; new %" PRIu64 " (%" PRIu64
			" bytes), freed %" PRIu64 " (%" PRIu64 " bytes)\n",
			v->a_objects, v->a_bytes, v->info.objects, v->new_objects,
			v->new_bytes, v->freed_objects, v->freed_bytes);
		fprintf(out, "  new objects by class and path, growth first:\n");
		for (size_t i = 0; i < v->ngroups && i < h->top; i++) {
			const struct lc_hgroup *g = &v->groups[i];

			fprintf(out, "    %8" PRIu64 " %12" PRIu64 " B  %s", g->count,
				g->bytes, lc_hkind_name(g->kind));
			if (g->name) {
				fputs(" ", out);
				es(out, g->name);
			}
			fputs("  at ", out);
			fputs(g->pattern ? g->pattern : v->no_paths ?
			      "(no paths for this VM)" : "(unreachable)", out);
			if (g->example) {
				fputs("  e.g. ", out);
				fputs(g->example, out);
			}
			fputc('\n', out);
		}
		if (v->ngroups > h->top)
			fprintf(out, "    ... %zu more groups\n", v->ngroups - h->top);
	}
}

void lc_heap_print_text(const struct lc_heap *h, FILE *out)
{
	for (size_t i = 0; i < h->nvms; i++) {
		if (i)
			fputc('\n', out);
		print_vm(h, &h->vms[i], out);
	}
	if (h->note) {
		fputs("note: ", out);
		es(out, h->note);
		fputc('\n', out);
	}
	for (size_t k = 0; k < h->opts.npath_to; k++) {
		bool found = false;

		for (size_t i = 0; i < h->nvms && !found; i++)
			for (size_t j = 0; j < h->vms[i].npaths; j++)
				if (h->vms[i].paths[j].addr == h->opts.path_to[k])
					found = true;
		if (!found)
			fprintf(out, "0x%" PRIx64 ": no object of any VM starts there\n",
				h->opts.path_to[k]);
	}
}

/* ---- JSON ---- */

static void jtop(FILE *out, const struct lc_htop *t, size_t n, bool str)
{
	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s{\"address\":\"0x%" PRIx64 "\",\"bytes\":%" PRIu64,
			i ? "," : "", t[i].addr, t[i].bytes);
		if (str) {
			fprintf(out, ",\"length\":%" PRIu64 ",\"preview\":", t[i].len);
			lc_json_str(out, t[i].preview);
		} else if (t[i].kind == LC_HK_TABLE) {
			fprintf(out, ",\"array\":%" PRIu64 ",\"hash\":%u,\"metatable\":",
				t[i].len, t[i].hsize);
			if (t[i].klass)
				fprintf(out, "\"0x%" PRIx64 "\"", t[i].klass);
			else
				fputs("null", out);
			fputs(",\"name\":", out);
			lc_json_str(out, t[i].name);
		} else {
			fprintf(out, ",\"stack_slots\":%" PRIu64, t[i].len);
		}
		if (t[i].path) {
			fputs(",\"path\":", out);
			lc_json_str(out, t[i].path);
			fprintf(out, ",\"weak\":%s", t[i].weak ? "true" : "false");
		}
		if (t[i].retained)
			fprintf(out, ",\"retained\":%" PRIu64, t[i].retained);
		fputc('}', out);
	}
	fputc(']', out);
}

/* The start of the i-th object of a list: address, type, bytes and
 * what it keeps alive. */
static void jobject(FILE *out, size_t i, uint64_t addr, int kind,
		    uint64_t bytes, uint64_t retained)
{
	fprintf(out, "%s{\"address\":\"0x%" PRIx64 "\",\"type\":\"%s\",\"bytes\":%" PRIu64
		",\"retained\":%" PRIu64, i ? "," : "", addr, lc_hkind_name(kind),
		bytes, retained);
}

/* The objects that keep the most alive. */
static void jretainers(FILE *out, const struct lc_hvmres *v)
{
	fputs(",\"retainers\":[", out);
	for (size_t i = 0; i < v->nretainers; i++) {
		const struct lc_htop *t = &v->retainers[i];

		jobject(out, i, t->addr, t->kind, t->bytes, t->retained);
		fputs(",\"name\":", out);
		lc_json_str(out, t->name);
		fputs(",\"path\":", out);
		lc_json_str(out, t->path);
		fprintf(out, ",\"weak\":%s}", t->weak ? "true" : "false");
	}
	fputc(']', out);
}

static void json_vm(const struct lc_heap *h, const struct lc_hvmres *v,
		    FILE *out)
{
	fprintf(out, "{\"vm\":\"0x%" PRIx64 "\",\"version\":", v->g);
	lc_json_str(out, v->version);
	fprintf(out, ",\"objects\":%" PRIu64 ",\"bytes\":%" PRIu64
		",\"vm_memory\":%" PRIu64 ",\"vm_own\":%" PRIu64
		",\"unexplained\":%" PRId64 ",\"walk_seconds\":%.6f,\"partial\":%s,\"note\":",
		v->info.objects, v->total, v->info.memory, v->info.own,
		(int64_t)(v->info.memory - v->total - v->info.own),
		v->walk_seconds, v->info.partial ? "true" : "false");
	lc_json_str(out, v->info.partial ? v->info.note : NULL);
	fputs(",\"types\":{", out);
	for (int k = 0; k < LC_HK_NKINDS; k++)
		fprintf(out, "%s\"%s\":{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "}",
			k ? "," : "", lc_hkind_name(k), v->count[k], v->bytes[k]);
	fprintf(out, "},\"strings\":{\"short\":{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64
		"},\"long\":{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 "},\"biggest\":",
		v->short_count, v->short_bytes, v->long_count, v->long_bytes);
	jtop(out, v->strings, v->nstrings, true);
	fputs(",\"duplicated\":[", out);
	for (size_t i = 0; i < v->ndups; i++) {
		fprintf(out, "%s{\"copies\":%" PRIu64 ",\"bytes\":%" PRIu64
			",\"length\":%" PRIu64 ",\"example\":\"0x%" PRIx64 "\",\"preview\":",
			i ? "," : "", v->dups[i].copies, v->dups[i].bytes,
			v->dups[i].len, v->dups[i].example);
		lc_json_str(out, v->dups[i].preview);
		fputc('}', out);
	}
	fputs("]},\"tables\":", out);
	jtop(out, v->tables, v->ntables, false);
	fputs(",\"classes\":[", out);
	for (size_t i = 0; i < v->nclasses; i++) {
		const struct lc_hclass *c = &v->classes[i];

		fprintf(out, "%s{\"type\":\"%s\",\"class\":\"0x%" PRIx64 "\",\"name\":",
			i ? "," : "", lc_hkind_name(c->kind), c->klass);
		lc_json_str(out, c->name);
		fprintf(out, ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64, c->count,
			c->bytes);
		if (v->diffed)
			fprintf(out, ",\"baseline_count\":%" PRIu64 ",\"baseline_bytes\":%" PRIu64
				",\"new_count\":%" PRIu64 ",\"new_bytes\":%" PRIu64,
				c->a_count, c->a_bytes, c->new_count, c->new_bytes);
		fputc('}', out);
	}
	fprintf(out, "],\"threads_total\":%" PRIu64 ",\"threads\":", v->threads_total);
	jtop(out, v->threads, v->nthreads, false);
	if (v->walked_paths)
		fprintf(out, ",\"reachability\":{\"strong\":%" PRIu64 ",\"weak\":%" PRIu64
			",\"unreachable\":%" PRIu64 ",\"unreachable_bytes\":%" PRIu64 "}",
			v->reached, v->reached_weak, v->unreached, v->unreached_bytes);
	if (v->nretainers)
		jretainers(out, v);
	fputs(",\"paths\":[", out);
	for (size_t i = 0; i < v->npaths; i++) {
		const struct lc_hpath *p = &v->paths[i];

		jobject(out, i, p->addr, p->kind, p->size, p->retained);
		fprintf(out, ",\"reachable\":%s,\"weak\":%s,\"path\":",
			p->reachable ? "true" : "false", p->weak ? "true" : "false");
		lc_json_str(out, p->path);
		fputc('}', out);
	}
	fputc(']', out);
	if (v->diffed) {
		fprintf(out, ",\"diff\":{\"baseline_objects\":%" PRIu64 ",\"baseline_bytes\":%" PRIu64
			",\"new_objects\":%" PRIu64 ",\"new_bytes\":%" PRIu64
			",\"freed_objects\":%" PRIu64 ",\"freed_bytes\":%" PRIu64 ",\"groups\":[",
			v->a_objects, v->a_bytes, v->new_objects, v->new_bytes,
			v->freed_objects, v->freed_bytes);
		for (size_t i = 0; i < v->ngroups && i < h->top; i++) {
			const struct lc_hgroup *g = &v->groups[i];

			fprintf(out, "%s{\"type\":\"%s\",\"class\":", i ? "," : "",
				lc_hkind_name(g->kind));
			lc_json_str(out, g->name);
			fprintf(out, ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"pattern\":",
				g->count, g->bytes);
			lc_json_str(out, g->pattern);
			fputs(",\"example\":", out);
			lc_json_str(out, g->example);
			fprintf(out, ",\"example_address\":\"0x%" PRIx64 "\"}", g->example_addr);
		}
		fputs("]}", out);
	}
	fputc('}', out);
}

void lc_heap_print_json(const struct lc_heap *h, FILE *out)
{
	fputs("{\"format\":\"luacore-heap/1\",\"partial\":", out);
	fputs(h->partial ? "true" : "false", out);
	fputs(",\"note\":", out);
	lc_json_str(out, h->note);
	fputs(",\"vms\":[", out);
	for (size_t i = 0; i < h->nvms; i++) {
		if (i)
			fputc(',', out);
		json_vm(h, &h->vms[i], out);
	}
	fputs("]}\n", out);
}
