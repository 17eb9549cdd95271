/* Formatting a report: human text (grep-friendly, one frame per line, Lua
 * frames worded like Lua's own traceback) and JSON.  The CLI and the gdb
 * commands share these so their output cannot drift apart. */
#include <config.h>

#include <inttypes.h>
#include <signal.h>
#include <string.h>

#include "internal.h"

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

static const char *sig_name(int signo)
{
	const char *s = signo > 0 ? sigabbrev_np(signo) : NULL;

	return s ? s : "?";
}

/* "in function 'foo'" etc., as luaL_traceback words it (lauxlib.c:
 * pushfuncname), without the package.loaded search. */
static void lua_where(const struct lc_frame *f, FILE *out)
{
	if (strcmp(f->what, "tail") == 0) {
		fputs("(...tail calls...)", out);
		return;
	}
	fprintf(out, "%s:", f->short_src ? f->short_src : "?");
	if (f->currentline > 0)
		fprintf(out, "%d:", f->currentline);
	fputs(" in ", out);
	if (f->global_name)
		fprintf(out, "function '%s'", f->global_name);
	else if (f->name && *f->namewhat) {
		if (strcmp(f->namewhat, "global") == 0)
			fprintf(out, "function '%s'", f->name);
		else
			fprintf(out, "%s '%s'", f->namewhat, f->name);
	} else if (strcmp(f->what, "main") == 0)
		fputs("main chunk", out);
	else if (strcmp(f->what, "C") != 0)
		fprintf(out, "function <%s:%d>", f->short_src ? f->short_src : "?",
			f->linedefined);
	else
		fputs("?", out);
}

void lc_report_print_text(const struct lc_report *r, FILE *out)
{
	if (r->core)
		fprintf(out, "core: %s\n", r->core);
	if (r->executable)
		fprintf(out, "executable: %s\n", r->executable);
	fprintf(out, "pid: %d\n", r->pid);
	if (r->signo && r->threads && r->nthreads && r->threads[0].crashed)
		fprintf(out, "signal: %d (SIG%s) code %d, fault address 0x%" PRIx64 "\n",
			r->signo, sig_name(r->signo), r->si_code, r->fault_addr);
	else
		fputs("signal: none (a snapshot taken by gcore or a debugger)\n", out);
	if (r->lua_version)
		fprintf(out, "lua: %s in %s\n", r->lua_version,
			r->lua_module ? r->lua_module : "?");
	else
		fputs("lua: not found\n", out);
	fprintf(out, "threads: %zu\n", r->nthreads);
	for (size_t i = 0; i < r->nwarnings; i++)
		fprintf(out, "warning: %s\n", r->warnings[i]);

	for (size_t i = 0; i < r->nthreads; i++) {
		const struct lc_thread *th = &r->threads[i];
		unsigned level = 0;

		fprintf(out, "\nThread %d", th->tid);
		if (th->name)
			fprintf(out, " (%s)", th->name);
		if (th->crashed)
			fprintf(out, " [crashed: SIG%s]", sig_name(r->signo));
		fputc('\n', out);
		for (size_t j = 0; j < th->nframes; j++) {
			const struct lc_frame *f = &th->frames[j];

			if (f->kind == LC_FRAME_NATIVE) {
				if (f->inlined)
					fprintf(out, "#%-3u %-18s in %s ()", level++,
						"[inlined]",
						f->function ? f->function : "??");
				else
					fprintf(out, "#%-3u 0x%016" PRIx64 " in %s ()",
						level++, f->pc,
						f->function ? f->function : "??");
				if (f->file)
					fprintf(out, " at %s:%d",
						base_name(f->file), f->line);
				if (f->module)
					fprintf(out, " [%s]", base_name(f->module));
				fputc('\n', out);
				continue;
			}
			fputs("     lua: ", out);
			lua_where(f, out);
			if (f->function)
				fprintf(out, " [%s]", f->function);
			if (f->istailcall)
				fputs(" (tail call)", out);
			if (f->unplaced)
				fputs(" (unplaced)", out);
			if (f->partial)
				fputs(" (partial)", out);
			fputc('\n', out);
		}
		if (th->note)
			fprintf(out, "note: %s\n", th->note);
	}
}

static void json_str(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\t': fputs("\\t", out); break;
		case '\r': fputs("\\r", out); break;
		default:
			if (*p < 0x20 || *p >= 0x7f)
				/* Bytes, not code points: Lua strings are
				 * not UTF-8 in general. */
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

static void json_addr(FILE *out, uint64_t a)
{
	fprintf(out, "\"0x%" PRIx64 "\"", a);
}

void lc_report_print_json(const struct lc_report *r, FILE *out)
{
	fputs("{\"format\":\"luacore-inspect/0\",\"process\":{", out);
	fputs("\"core\":", out);
	json_str(out, r->core);
	fputs(",\"executable\":", out);
	json_str(out, r->executable);
	fprintf(out, ",\"pid\":%d,\"signal\":", r->pid);
	if (r->signo && r->nthreads && r->threads[0].crashed)
		fprintf(out, "%d", r->signo);
	else
		fputs("null", out);
	fprintf(out, ",\"si_code\":%d,\"fault_address\":", r->si_code);
	json_addr(out, r->fault_addr);
	fputs(",\"lua_version\":", out);
	json_str(out, r->lua_version);
	fputs(",\"lua_module\":", out);
	json_str(out, r->lua_module);
	fprintf(out, ",\"partial\":%s,\"warnings\":[", r->partial ? "true" : "false");
	for (size_t i = 0; i < r->nwarnings; i++) {
		if (i)
			fputc(',', out);
		json_str(out, r->warnings[i]);
	}
	fputs("]},\"threads\":[", out);
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct lc_thread *th = &r->threads[i];

		if (i)
			fputc(',', out);
		fprintf(out, "{\"tid\":%d,\"name\":", th->tid);
		json_str(out, th->name);
		fprintf(out, ",\"crashed\":%s,\"partial\":%s,\"note\":",
			th->crashed ? "true" : "false",
			th->partial ? "true" : "false");
		json_str(out, th->note);
		fputs(",\"states\":[", out);
		for (size_t j = 0; j < th->nstates; j++) {
			if (j)
				fputc(',', out);
			json_addr(out, th->states[j]);
		}
		fputs("],\"frames\":[", out);
		for (size_t j = 0; j < th->nframes; j++) {
			const struct lc_frame *f = &th->frames[j];

			if (j)
				fputc(',', out);
			if (f->kind == LC_FRAME_NATIVE) {
				fputs("{\"kind\":\"native\",\"address\":", out);
				json_addr(out, f->pc);
				fputs(",\"function\":", out);
				json_str(out, f->function);
				fputs(",\"module\":", out);
				json_str(out, f->module);
				fputs(",\"file\":", out);
				json_str(out, f->file);
				fprintf(out, ",\"line\":%d,\"inlined\":%s}", f->line,
					f->inlined ? "true" : "false");
				continue;
			}
			fputs("{\"kind\":\"lua\",\"what\":", out);
			json_str(out, f->what);
			fputs(",\"source\":", out);
			json_str(out, f->source);
			fputs(",\"short_src\":", out);
			json_str(out, f->short_src);
			fprintf(out, ",\"currentline\":%d,\"linedefined\":%d,\"name\":",
				f->currentline, f->linedefined);
			json_str(out, f->name);
			fputs(",\"namewhat\":", out);
			json_str(out, f->namewhat);
			fputs(",\"function\":", out);
			json_str(out, f->function);
			fprintf(out, ",\"istailcall\":%s,\"unplaced\":%s,\"partial\":%s,\"state\":",
				f->istailcall ? "true" : "false",
				f->unplaced ? "true" : "false",
				f->partial ? "true" : "false");
			json_addr(out, f->state);
			fputs(",\"ci\":", out);
			json_addr(out, f->ci);
			fputc('}', out);
		}
		fputs("]}", out);
	}
	fputs("]}\n", out);
}
