/* Formatting a report: human text (grep-friendly, one frame per line, Lua
 * frames worded like Lua's own traceback) and JSON.  The CLI and the gdb
 * commands share these so their output cannot drift apart. */
#include <config.h>

#include <inttypes.h>
#include <signal.h>
#include <string.h>

#include "base/base.h"

/* Signals whose siginfo carries the address of a fault (when the kernel
 * raised them: si_code > 0). */
static bool is_fault(int signo)
{
	return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL ||
	       signo == SIGFPE || signo == SIGTRAP;
}

static const char *sig_name(int signo)
{
	const char *s = signo > 0 ? sigabbrev_np(signo) : NULL;

	return s ? s : "?";
}

static const char *const reg_names[17] = {
	"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip",
};

/* Every string a target supplied is printed escaped (base/escape.c), so
 * that no byte of it can move the cursor, clear the screen or end one of
 * our lines: es() for those, plain stdio for our own words and numbers.
 * Messages (warnings, notes) are escaped whole: they quote paths and
 * names, and our own words escape to themselves. */
static void es(FILE *out, const char *s)
{
	lc_print_escaped(s ? s : "?", out);
}

/* A value's text is escaped already, as a Lua literal (lc_value.text). */
static void val(FILE *out, const struct lc_value *v)
{
	fputs(v->text ? v->text : "?", out);
}

/* Where the frame is, as the release's luaL_traceback words it: the
 * family's line when it made one, else a 5.4-style line without the
 * package.loaded search. */
static void lua_where(const struct lc_frame *f, FILE *out)
{
	if (f->traceback) {
		es(out, f->traceback);
		return;
	}
	if (strcmp(f->what, "tail") == 0) {
		fputs("(...tail calls...)", out);
		return;
	}
	es(out, f->short_src);
	fputc(':', out);
	if (f->currentline > 0)
		fprintf(out, "%d:", f->currentline);
	fputs(" in ", out);
	if (f->global_name || (f->name && *f->namewhat)) {
		fprintf(out, "%s '", f->global_name ||
			strcmp(f->namewhat, "global") == 0 ? "function" :
			f->namewhat);
		es(out, f->global_name ? f->global_name : f->name);
		fputc('\'', out);
	} else if (strcmp(f->what, "main") == 0)
		fputs("main chunk", out);
	else if (strcmp(f->what, "C") != 0) {
		fputs("function <", out);
		es(out, f->short_src);
		fprintf(out, ":%d>", f->linedefined);
	} else
		fputs("?", out);
}

static void print_lua_frame(const struct lc_frame *f, const char *indent,
			    FILE *out)
{
	fprintf(out, "%slua: ", indent);
	lua_where(f, out);
	if (f->function) {
		fputs(" [", out);
		es(out, f->function);
		fputc(']', out);
	}
	if (f->istailcall)
		fputs(" (tail call)", out);
	if (f->continued)
		fputs(" (continued after resume)", out);
	/* Said only where the CallInfo's saved pc lags: there Lua's own
	 * getinfo, from a C function or hook, would give the older line. */
	if (f->line_from && strcmp(f->line_from, "pc") == 0 &&
	    f->savedpc_line != f->currentline)
		fprintf(out, " (line from the interpreter's pc; savedpc says %d)",
			f->savedpc_line);
	/* LuaJIT, a compiled trace running it. */
	if (f->line_from && strcmp(f->line_from, "snapshot") == 0)
		fputs(" (compiled: the line of its trace's snapshot)", out);
	else if (f->line_from && strcmp(f->line_from, "trace start") == 0)
		fputs(" (compiled: the line its trace starts at)", out);
	if (f->unplaced)
		fputs(" (unplaced)", out);
	if (f->partial)
		fputs(" (partial)", out);
	fputc('\n', out);
	for (size_t i = 0; i < f->nvars; i++) {
		const struct lc_var *v = &f->vars[i];

		fprintf(out, "%s       %s ", indent, v->kind);
		es(out, v->name);
		fputs(" = ", out);
		val(out, &v->value);
		fprintf(out, "%s\n", v->value.partial ? " (partial)" : "");
	}
}

/* lj: a LuaJIT thread, which has no C-call count, errorJmp, hook fields
 * or CallInfos of its own to show. */
static void print_luathread(const struct lc_luathread *lt,
			    bool state_frames, bool lj, FILE *out)
{
	fprintf(out, "  lua_State 0x%" PRIx64 " %s %s", lt->addr,
		lt->is_main ? "main" : "coroutine",
		lt->status ? lt->status : "?");
	if (lt->os_tid)
		fprintf(out, " on thread %d", lt->os_tid);
	if (lt->resumed_by)
		fprintf(out, ", resumed by 0x%" PRIx64, lt->resumed_by);
	if (lt->status && strcmp(lt->status, "error") == 0)
		fprintf(out, " (status %d)", lt->raw_status);
	fputc('\n', out);
	if (lj) {
		fprintf(out, "    stack %ld slots, top at slot %ld",
			lt->stacksize, lt->topslot);
		if (lt->errorjmp)
			fprintf(out, "; C frame 0x%" PRIx64 " (%s)", lt->errorjmp,
				lt->errorjmp_on_stack ? "on its thread's stack" :
				"not on a known stack");
		fputc('\n', out);
		goto frames;
	}
	fprintf(out, "    ccalls %u, nny %u (nCcalls 0x%x); errorJmp ", lt->ccalls,
		lt->nny, lt->nCcalls_raw);
	if (lt->errorjmp)
		fprintf(out, "0x%" PRIx64 " (%s, status %d)%s", lt->errorjmp,
			lt->errorjmp_on_stack ? "on its thread's stack" :
			"not on a known stack", lt->errorjmp_status,
			lt->errorjmp_suspicious ? " SUSPICIOUS" : "");
	else
		fputs("none", out);
	fputc('\n', out);
	fputs("    hook ", out);
	if (lt->hook) {
		fprintf(out, "0x%" PRIx64 " [", lt->hook);
		es(out, lt->hook_name);
		fprintf(out, "] mask 0x%x count %d/%d", lt->hookmask,
			lt->hookcount, lt->basehookcount);
	} else
		fputs("none", out);
	fprintf(out, ", allowhook %d; stack %ld slots, top at slot %ld"
		", %ld CallInfos, %ld open upvalues",
		lt->allowhook, lt->stacksize, lt->topslot, lt->ci_depth,
		lt->openupval);
	if (lt->tbclist)
		fprintf(out, ", tbclist 0x%" PRIx64, lt->tbclist);
	fputc('\n', out);
frames:
	/* A state running on an OS thread has its frames in that thread's
	 * mixed stack above. */
	if (lt->os_tid && lt->nframes && !state_frames)
		fprintf(out, "    %zu Lua frames: see Thread %d\n", lt->nframes,
			lt->os_tid);
	else
		for (size_t j = 0; j < lt->nframes; j++)
			print_lua_frame(&lt->frames[j], "    ", out);
	for (size_t j = 0; j < lt->nslots; j++) {
		const struct lc_slot *sl = &lt->slots[j];

		char owner[32] = "";

		if (sl->frame >= 0)
			snprintf(owner, sizeof(owner), "lua#%ld", sl->frame);
		fprintf(out, "    [%4ld] 0x%016" PRIx64 " %-8s %-8s ",
			sl->index, sl->addr, owner,
			sl->residue ? "residue" : sl->is_func ? "function" : "");
		val(out, &sl->value);
		fputc('\n', out);
	}
	if (lt->note) {
		fputs("    note: ", out);
		es(out, lt->note);
		fputc('\n', out);
	}
}

static const struct lc_luathread *vm_state(const struct lc_vm *vm,
					    uint64_t addr)
{
	for (size_t k = 0; k < vm->nthreads; k++)
		if (vm->threads[k].addr == addr)
			return &vm->threads[k];
	return NULL;
}

static void print_vms(const struct lc_report *r,
		      const struct lc_text_options *o, FILE *out)
{
	if (!o->state)
		fprintf(out, "\nVMs: %zu (%zu found only by scanning memory)\n",
			r->nvms, r->nvms_scanned);
	for (size_t i = 0; i < r->nvms; i++) {
		const struct lc_vm *vm = &r->vms[i];
		const struct lc_luathread *only = NULL;
		const char *ver = vm->version ? vm->version : r->lua_version;
		bool lj = ver && strncmp(ver, "LuaJIT", 6) == 0;

		if (o->state && !(only = vm_state(vm, o->state)))
			continue;

		if (lj)
			fprintf(out, "\nVM 0x%" PRIx64 " (found by %s): %" PRId64
				" bytes in use, gc %s", vm->g,
				vm->found_by ? vm->found_by : "?", vm->memory,
				vm->gcstate_name ? vm->gcstate_name : "?");
		else
			fprintf(out, "\nVM 0x%" PRIx64 " (found by %s): %" PRId64
				" bytes in use, gc %s (%s), debt %" PRId64
				", estimate %" PRId64, vm->g,
				vm->found_by ? vm->found_by : "?", vm->memory,
				vm->gcstate_name ? vm->gcstate_name : "?",
				vm->gckind ? vm->gckind : "?", vm->gcdebt,
				vm->gcestimate);
		if (vm->gcpause >= 0)
			fprintf(out, ", pause %d", vm->gcpause);
		if (vm->gcstepmul >= 0)
			fprintf(out, ", stepmul %d", vm->gcstepmul);
		if (vm->gcstepsize >= 0)
			fprintf(out, ", stepsize %d", vm->gcstepsize);
		if (vm->alloc) {
			fputs(", allocator ", out);
			es(out, vm->alloc);
		}
		if (vm->name) {
			fputs(", name \"", out);
			es(out, vm->name);
			fputc('"', out);
		}
		fputc('\n', out);
		if (vm->vmstate) {
			fprintf(out, "  LuaJIT: vmstate %s", vm->vmstate);
			if (strcmp(vm->vmstate, "trace") == 0)
				fprintf(out, " %" PRId32, vm->vmstate_trace);
			if (vm->jit_on >= 0)
				fprintf(out, "; compiler %s",
					vm->jit_on ? "on" : "off");
			if (vm->jit_state)
				fprintf(out, ", %s", vm->jit_state);
			if (vm->ntraces >= 0)
				fprintf(out, ", %" PRId64 " trace%s", vm->ntraces,
					vm->ntraces == 1 ? "" : "s");
			if (vm->cur_L)
				fprintf(out, "; cur_L 0x%" PRIx64, vm->cur_L);
			fputc('\n', out);
			if (vm->cur_L_note) {
				fputs("  note: ", out);
				es(out, vm->cur_L_note);
				fputc('\n', out);
			}
		}
		if (vm->nchain) {
			fputs("  resume chain:", out);
			for (size_t c = 0; c < vm->nchain; c++)
				fprintf(out, "%s0x%" PRIx64, c ? " -> " : " ",
					vm->chain[c]);
			fputc('\n', out);
		}
		if (vm->note) {
			fputs("  note: ", out);
			es(out, vm->note);
			fputc('\n', out);
		}
		for (size_t k = 0; k < vm->nthreads; k++)
			if (!only || &vm->threads[k] == only)
				print_luathread(&vm->threads[k],
						o->state_frames, lj, out);
	}
}

static void print_header(const struct lc_report *r, FILE *out)
{
	if (r->core) {
		fputs("core: ", out);
		es(out, r->core);
		fputc('\n', out);
	}
	if (r->executable) {
		fputs("executable: ", out);
		es(out, r->executable);
		fputc('\n', out);
	}
	if (r->live && r->not_stopped)
		fprintf(out, "pid: %d (live; not stopped, read as it ran)\n",
			r->pid);
	else if (r->live)
		fprintf(out, "pid: %d (live; stopped for %.3f ms)\n", r->pid,
			r->stopped_seconds * 1e3);
	else
		fprintf(out, "pid: %d\n", r->pid);
	if (r->signo && r->threads && r->nthreads && r->threads[0].crashed &&
	    r->si_code <= 0)
		/* Sent by a process (kill, tgkill, sigqueue: SI_USER and
		 * the other codes <= 0): siginfo holds its pid and uid
		 * where a fault's address would be. */
		fprintf(out, "signal: %d (SIG%s) code %d, sent by process %" PRIu32
			" (uid %" PRIu32 ")\n", r->signo, sig_name(r->signo),
			r->si_code, (uint32_t)r->fault_addr,
			(uint32_t)(r->fault_addr >> 32));
	else if (r->signo && r->threads && r->nthreads && r->threads[0].crashed &&
		 is_fault(r->signo))
		fprintf(out, "signal: %d (SIG%s) code %d, fault address 0x%" PRIx64 "\n",
			r->signo, sig_name(r->signo), r->si_code, r->fault_addr);
	else if (r->signo && r->threads && r->nthreads && r->threads[0].crashed)
		fprintf(out, "signal: %d (SIG%s) code %d\n", r->signo,
			sig_name(r->signo), r->si_code);
	else
		fputs(r->live ? "signal: none (a running process)\n" :
		      "signal: none (a snapshot taken by gcore or a debugger)\n",
		      out);
	if (r->lua_version) {
		fputs("lua: ", out);
		es(out, r->lua_version);
		fputs(" in ", out);
		es(out, r->lua_module);
		fputc('\n', out);
		if (r->lua_layout) {
			fputs("lua layout: ", out);
			es(out, r->lua_layout);
			fputc('\n', out);
		}
		/* A second interpreter in the same process. */
		for (size_t i = 1; i < r->nluas; i++) {
			fputs("lua: ", out);
			es(out, r->luas[i].version);
			fputs(" in ", out);
			es(out, r->luas[i].module);
			fputs(" too\n", out);
			if (r->luas[i].layout) {
				fputs("lua layout: ", out);
				es(out, r->luas[i].layout);
				fputc('\n', out);
			}
		}
	} else if (r->nwarnings)
		fputs("lua: none read (the warnings say why)\n", out);
	else
		fputs("lua: not found\n", out);
	if (r->exe_build_id) {
		fputs("build-id: ", out);
		es(out, r->exe_build_id);
		fprintf(out, "%s\n",
			r->build_id_mismatch ? " (MISMATCH: not the program of this core)" : "");
	}
	if (r->have_regs) {
		fputs("registers:", out);
		for (int i = 0; i < 17; i++)
			fprintf(out, " %s=0x%" PRIx64, reg_names[i], r->regs[i]);
		fputc('\n', out);
	}
	fprintf(out, "threads: %zu\n", r->nthreads);
}

static void print_threads(const struct lc_report *r, FILE *out)
{
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct lc_thread *th = &r->threads[i];
		unsigned level = 0;

		fprintf(out, "\nThread %d", th->tid);
		if (th->name) {
			fputs(" (", out);
			es(out, th->name);
			fputc(')', out);
		}
		if (th->crashed)
			fprintf(out, " [crashed: SIG%s]", sig_name(r->signo));
		fputc('\n', out);
		for (size_t j = 0; j < th->nframes; j++) {
			const struct lc_frame *f = &th->frames[j];

			if (f->kind == LC_FRAME_NATIVE) {
				if (f->inlined)
					fprintf(out, "#%-3u %-18s in ", level++,
						"[inlined]");
				else
					fprintf(out, "#%-3u 0x%016" PRIx64 " in ",
						level++, f->pc);
				es(out, f->function ? f->function : "??");
				fputs(" ()", out);
				if (f->file) {
					fputs(" at ", out);
					es(out, lc_base_name(f->file));
					fprintf(out, ":%d", f->line);
				}
				/* "[anon:exec]" and "[vdso]" are their own
				 * brackets. */
				if (f->module && f->module[0] == '[') {
					fputc(' ', out);
					es(out, f->module);
				} else if (f->module) {
					fputs(" [", out);
					es(out, lc_base_name(f->module));
					fputc(']', out);
				}
				fputc('\n', out);
				continue;
			}
			print_lua_frame(f, "     ", out);
		}
		if (th->note) {
			fputs("note: ", out);
			es(out, th->note);
			fputc('\n', out);
		}
	}
}

void lc_report_print_text_parts(const struct lc_report *r,
				const struct lc_text_options *o, FILE *out)
{
	if (o->parts & LC_TEXT_HEADER)
		print_header(r, out);
	if (o->parts & LC_TEXT_WARNINGS)
		for (size_t i = 0; i < r->nwarnings; i++) {
			fputs("warning: ", out);
			es(out, r->warnings[i]);
			fputc('\n', out);
		}
	if (o->parts & LC_TEXT_THREADS)
		print_threads(r, out);
	if ((o->parts & LC_TEXT_VMS) && r->nvms)
		print_vms(r, o, out);
}

void lc_report_print_text(const struct lc_report *r, FILE *out)
{
	struct lc_text_options o = { .parts = LC_TEXT_ALL };

	lc_report_print_text_parts(r, &o, out);
}

static void json_addr(FILE *out, uint64_t a)
{
	fprintf(out, "\"0x%" PRIx64 "\"", a);
}

static void json_addr_or_null(FILE *out, uint64_t a)
{
	if (a)
		json_addr(out, a);
	else
		fputs("null", out);
}

static void json_bool(FILE *out, bool b)
{
	fputs(b ? "true" : "false", out);
}

/* Bytes as a JSON string: printable ASCII as is, the rest \u00XX. */
static void json_bytes(FILE *out, const char *s, size_t n)
{
	fputc('"', out);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}


/* n, or null when negative (unknown). */
static void json_i64_or_null(FILE *out, int64_t n)
{
	if (n >= 0)
		fprintf(out, "%" PRId64, n);
	else
		fputs("null", out);
}

static void json_value(FILE *out, const struct lc_value *v)
{
	fputs("{\"type\":", out);
	lc_json_str(out, v->type ? v->type : "?");
	fputs(",\"text\":", out);
	lc_json_str(out, v->text);
	fputs(",\"address\":", out);
	json_addr_or_null(out, v->addr);
	fputs(",\"len\":", out);
	json_i64_or_null(out, v->len);
	fputs(",\"hsize\":", out);
	json_i64_or_null(out, v->hsize);
	fputs(",\"metatable\":", out);
	json_addr_or_null(out, v->metatable);
	if (v->str) {
		fputs(",\"string\":", out);
		json_bytes(out, v->str, v->strlen);
	}
	fputs(",\"partial\":", out);
	json_bool(out, v->partial);
	fputc('}', out);
}

static void json_frame(FILE *out, const struct lc_frame *f)
{
	if (f->kind == LC_FRAME_NATIVE) {
		fputs("{\"kind\":\"native\",\"address\":", out);
		json_addr(out, f->pc);
		fputs(",\"function\":", out);
		lc_json_str(out, f->function);
		fputs(",\"linkage_name\":", out);
		lc_json_str(out, f->linkage_name);
		fputs(",\"module\":", out);
		lc_json_str(out, f->module);
		fputs(",\"file\":", out);
		lc_json_str(out, f->file);
		fprintf(out, ",\"line\":%d,\"inlined\":", f->line);
		json_bool(out, f->inlined);
		fputs(",\"runs_lua\":", out);
		json_bool(out, f->runs_lua);
		fputc('}', out);
		return;
	}
	fputs("{\"kind\":\"lua\",\"what\":", out);
	lc_json_str(out, f->what);
	fputs(",\"source\":", out);
	lc_json_str(out, f->source);
	fputs(",\"short_src\":", out);
	lc_json_str(out, f->short_src);
	fprintf(out, ",\"currentline\":%d,\"linedefined\":%d,\"line_from\":",
		f->currentline, f->linedefined);
	lc_json_str(out, f->line_from);
	fputs(",\"savedpc_line\":", out);
	if (f->line_from && strcmp(f->line_from, "pc") == 0)
		fprintf(out, "%d", f->savedpc_line);
	else
		fputs("null", out);
	fputs(",\"name\":", out);
	lc_json_str(out, f->name);
	fputs(",\"namewhat\":", out);
	lc_json_str(out, f->namewhat);
	fputs(",\"function\":", out);
	lc_json_str(out, f->function);
	fputs(",\"global_name\":", out);
	lc_json_str(out, f->global_name);
	fputs(",\"traceback\":", out);
	lc_json_str(out, f->traceback);
	fputs(",\"istailcall\":", out);
	json_bool(out, f->istailcall);
	fputs(",\"unplaced\":", out);
	json_bool(out, f->unplaced);
	fputs(",\"continued\":", out);
	json_bool(out, f->continued);
	fputs(",\"partial\":", out);
	json_bool(out, f->partial);
	fputs(",\"state\":", out);
	json_addr_or_null(out, f->state);
	fputs(",\"ci\":", out);
	json_addr_or_null(out, f->ci);
	if (f->vars) {
		fputs(",\"vars\":[", out);
		for (size_t i = 0; i < f->nvars; i++) {
			const struct lc_var *v = &f->vars[i];

			if (i)
				fputc(',', out);
			fputs("{\"kind\":", out);
			lc_json_str(out, v->kind);
			fputs(",\"name\":", out);
			lc_json_str(out, v->name);
			fprintf(out, ",\"index\":%d,\"value\":", v->index);
			json_value(out, &v->value);
			fputc('}', out);
		}
		fputc(']', out);
	}
	fputc('}', out);
}

static void json_frames(FILE *out, const struct lc_frame *frames, size_t n)
{
	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', out);
		json_frame(out, &frames[i]);
	}
	fputc(']', out);
}

static void json_int_or_null(FILE *out, int v)
{
	if (v >= 0)
		fprintf(out, "%d", v);
	else
		fputs("null", out);
}

static void json_luathread(FILE *out, const struct lc_luathread *th)
{
	fputs("{\"address\":", out);
	json_addr(out, th->addr);
	fputs(",\"main\":", out);
	json_bool(out, th->is_main);
	fputs(",\"status\":", out);
	lc_json_str(out, th->status);
	fprintf(out, ",\"raw_status\":%d,\"os_tid\":", th->raw_status);
	if (th->os_tid)
		fprintf(out, "%d", th->os_tid);
	else
		fputs("null", out);
	fputs(",\"resumed_by\":", out);
	json_addr_or_null(out, th->resumed_by);
	fprintf(out, ",\"ccalls\":%u,\"nny\":%u,\"nCcalls\":%u,\"errorjmp\":",
		th->ccalls, th->nny, th->nCcalls_raw);
	json_addr_or_null(out, th->errorjmp);
	fprintf(out, ",\"errorjmp_status\":%d,\"errorjmp_on_stack\":",
		th->errorjmp_status);
	json_bool(out, th->errorjmp_on_stack);
	fputs(",\"errorjmp_suspicious\":", out);
	json_bool(out, th->errorjmp_suspicious);
	fputs(",\"hook\":", out);
	json_addr_or_null(out, th->hook);
	fputs(",\"hook_name\":", out);
	lc_json_str(out, th->hook_name);
	fprintf(out, ",\"hookmask\":%d,\"basehookcount\":%d,\"hookcount\":%d,\"allowhook\":%d,\"stack\":",
		th->hookmask, th->basehookcount, th->hookcount, th->allowhook);
	json_addr_or_null(out, th->stack);
	fputs(",\"top\":", out);
	json_addr_or_null(out, th->top);
	fputs(",\"stack_last\":", out);
	json_addr_or_null(out, th->stack_last);
	fprintf(out, ",\"stacksize\":%ld,\"topslot\":%ld,\"ci_depth\":%ld,\"openupval\":%ld,\"tbclist\":",
		th->stacksize, th->topslot, th->ci_depth, th->openupval);
	json_addr_or_null(out, th->tbclist);
	fputs(",\"partial\":", out);
	json_bool(out, th->partial);
	fputs(",\"note\":", out);
	lc_json_str(out, th->note);
	fputs(",\"frames\":", out);
	json_frames(out, th->frames, th->nframes);
	if (th->slots) {
		fputs(",\"slots\":[", out);
		for (size_t i = 0; i < th->nslots; i++) {
			const struct lc_slot *sl = &th->slots[i];

			if (i)
				fputc(',', out);
			fprintf(out, "{\"index\":%ld,\"address\":", sl->index);
			json_addr(out, sl->addr);
			fputs(",\"frame\":", out);
			if (sl->frame >= 0)
				fprintf(out, "%ld", sl->frame);
			else
				fputs("null", out);
			fputs(",\"func\":", out);
			json_bool(out, sl->is_func);
			fputs(",\"residue\":", out);
			json_bool(out, sl->residue);
			fputs(",\"value\":", out);
			json_value(out, &sl->value);
			fputc('}', out);
		}
		fputc(']', out);
	}
	fputc('}', out);
}

static void json_vm(FILE *out, const struct lc_report *r, const struct lc_vm *vm)
{
	fputs("{\"address\":", out);
	json_addr(out, vm->g);
	fputs(",\"found_by\":", out);
	lc_json_str(out, vm->found_by);
	fputs(",\"name\":", out);
	lc_json_str(out, vm->name);
	fputs(",\"allocator\":", out);
	lc_json_str(out, vm->alloc);
	fputs(",\"version\":", out);
	lc_json_str(out, vm->version ? vm->version : r->lua_version);
	fputs(",\"mainthread\":", out);
	json_addr_or_null(out, vm->mainthread);
	fputs(",\"registry\":", out);
	json_addr_or_null(out, vm->registry);
	fprintf(out, ",\"memory\":%" PRId64 ",\"totalbytes\":%" PRId64
		",\"gcdebt\":%" PRId64 ",\"gcestimate\":%" PRId64,
		vm->memory, vm->totalbytes, vm->gcdebt, vm->gcestimate);
	fputs(",\"gc\":{\"state\":", out);
	lc_json_str(out, vm->gcstate_name);
	fprintf(out, ",\"state_code\":%d,\"kind\":", vm->gcstate);
	lc_json_str(out, vm->gckind);
	fputs(",\"pause\":", out);
	json_int_or_null(out, vm->gcpause);
	fputs(",\"stepmul\":", out);
	json_int_or_null(out, vm->gcstepmul);
	fputs(",\"stepsize\":", out);
	json_int_or_null(out, vm->gcstepsize);
	fputs(",\"genminormul\":", out);
	json_int_or_null(out, vm->genminormul);
	fputs(",\"genmajormul\":", out);
	json_int_or_null(out, vm->genmajormul);
	fputs("},\"chain\":[", out);
	for (size_t i = 0; i < vm->nchain; i++) {
		if (i)
			fputc(',', out);
		json_addr(out, vm->chain[i]);
	}
	fputs("],\"partial\":", out);
	json_bool(out, vm->partial);
	fputs(",\"note\":", out);
	lc_json_str(out, vm->note);
	fputs(",\"luajit\":", out);
	if (vm->vmstate) {
		fputs("{\"vmstate\":", out);
		lc_json_str(out, vm->vmstate);
		fputs(",\"trace\":", out);
		if (strcmp(vm->vmstate, "trace") == 0)
			fprintf(out, "%" PRId32, vm->vmstate_trace);
		else
			fputs("null", out);
		fputs(",\"compiler_on\":", out);
		if (vm->jit_on >= 0)
			json_bool(out, vm->jit_on);
		else
			fputs("null", out);
		fputs(",\"compiler_state\":", out);
		lc_json_str(out, vm->jit_state);
		fputs(",\"traces\":", out);
		json_i64_or_null(out, vm->ntraces);
		fputs(",\"cur_L\":", out);
		json_addr_or_null(out, vm->cur_L);
		fputs(",\"cur_L_note\":", out);
		lc_json_str(out, vm->cur_L_note);
		fputc('}', out);
	} else {
		fputs("null", out);
	}
	fputs(",\"threads\":[", out);
	for (size_t i = 0; i < vm->nthreads; i++) {
		if (i)
			fputc(',', out);
		json_luathread(out, &vm->threads[i]);
	}
	fputs("]}", out);
}

void lc_report_print_json(const struct lc_report *r, FILE *out)
{
	bool crashed = r->nthreads && r->threads[0].crashed;

	fputs("{\"format\":\"luacore-inspect/1\",\"process\":{", out);
	fputs("\"core\":", out);
	lc_json_str(out, r->core);
	fputs(",\"executable\":", out);
	lc_json_str(out, r->executable);
	fprintf(out, ",\"pid\":%d,\"signal\":", r->pid);
	if (r->signo && crashed)
		fprintf(out, "%d", r->signo);
	else
		fputs("null", out);
	fprintf(out, ",\"si_code\":%d,\"fault_address\":", r->si_code);
	json_addr(out, r->fault_addr);
	fputs(",\"lua_version\":", out);
	lc_json_str(out, r->lua_version);
	fputs(",\"lua_module\":", out);
	lc_json_str(out, r->lua_module);
	fputs(",\"lua_layout\":", out);
	lc_json_str(out, r->lua_layout);
	fputs(",\"luas\":[", out);
	for (size_t i = 0; i < r->nluas; i++) {
		fputs(i ? ",{\"version\":" : "{\"version\":", out);
		lc_json_str(out, r->luas[i].version);
		fputs(",\"module\":", out);
		lc_json_str(out, r->luas[i].module);
		fputs(",\"layout\":", out);
		lc_json_str(out, r->luas[i].layout);
		fputc('}', out);
	}
	fputc(']', out);
	fputs(",\"partial\":", out);
	json_bool(out, r->partial);
	fputs(",\"warnings\":[", out);
	for (size_t i = 0; i < r->nwarnings; i++) {
		if (i)
			fputc(',', out);
		lc_json_str(out, r->warnings[i]);
	}
	fputs("],\"registers\":", out);
	if (r->have_regs) {
		fputc('{', out);
		for (int i = 0; i < 17; i++)
			fprintf(out, "%s\"%s\":\"0x%" PRIx64 "\"", i ? "," : "",
				reg_names[i], r->regs[i]);
		fputc('}', out);
	} else {
		fputs("null", out);
	}
	fputs(",\"build_id\":{\"executable\":", out);
	lc_json_str(out, r->exe_build_id);
	fputs(",\"core\":", out);
	lc_json_str(out, r->core_build_id);
	fputs(",\"mismatch\":", out);
	json_bool(out, r->build_id_mismatch);
	fprintf(out, "},\"vms_found\":%zu,\"vms_scanned\":%zu,\"live\":%s",
		r->nvms, r->nvms_scanned, r->live ? "true" : "false");
	if (r->live)
		fprintf(out, ",\"stopped_seconds\":%.6f,\"not_stopped\":%s",
			r->stopped_seconds, r->not_stopped ? "true" : "false");
	fputs("},\"threads\":[", out);
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct lc_thread *th = &r->threads[i];

		if (i)
			fputc(',', out);
		fprintf(out, "{\"tid\":%d,\"name\":", th->tid);
		lc_json_str(out, th->name);
		fputs(",\"crashed\":", out);
		json_bool(out, th->crashed);
		fputs(",\"partial\":", out);
		json_bool(out, th->partial);
		fputs(",\"note\":", out);
		lc_json_str(out, th->note);
		fputs(",\"states\":[", out);
		for (size_t j = 0; j < th->nstates; j++) {
			if (j)
				fputc(',', out);
			json_addr(out, th->states[j]);
		}
		fputs("],\"frames\":", out);
		json_frames(out, th->frames, th->nframes);
		fputc('}', out);
	}
	fputs("],\"vms\":[", out);
	for (size_t i = 0; i < r->nvms; i++) {
		if (i)
			fputc(',', out);
		json_vm(out, r, &r->vms[i]);
	}
	fputs("]}\n", out);
}

/* lua-value: the value as a TValue shows it, then what it holds. */
void lc_object_print_text(const struct lc_object *o, FILE *out)
{
	const struct lc_value *v = &o->value;

	val(out, v);
	if (strcmp(v->type, "table") == 0) {
		fprintf(out, " (array %" PRId64 ", hash %" PRId64, v->len,
			v->hsize);
		if (v->metatable)
			fprintf(out, ", metatable 0x%" PRIx64, v->metatable);
		fputc(')', out);
	} else if (strcmp(v->type, "string") == 0 ||
		   strcmp(v->type, "userdata") == 0) {
		fprintf(out, " (%s %" PRId64, *v->type == 's' ? "length" :
			"size", v->len);
		if (v->metatable)
			fprintf(out, ", metatable 0x%" PRIx64, v->metatable);
		fputc(')', out);
	}
	if (v->partial)
		fputs(" (partial)", out);
	fputc('\n', out);
	if (o->full && v->text && strcmp(o->full, v->text) != 0) {
		fputs("  ", out);
		fputs(o->full, out);	/* escaped, as a value's text */
		fputc('\n', out);
	}
	for (size_t i = 0; i < o->nentries; i++) {
		const struct lc_entry *e = &o->entries[i];
		bool plain = strcmp(e->key.type, "number") == 0;

		fputs("  [", out);
		val(out, &e->key);
		fputs("] = ", out);
		val(out, &e->value);
		fprintf(out, "%s\n", e->value.partial || (!plain && e->key.partial) ?
			" (partial)" : "");
	}
	if (o->more || o->more_bounded)
		fprintf(out, "  ... %s%zu more entries\n",
			o->more_bounded ? "at least " : "", o->more);
	for (size_t i = 0; i < o->nupvalues; i++) {
		const struct lc_var *u = &o->upvalues[i];

		fputs("  upvalue ", out);
		es(out, u->name);
		fputs(" = ", out);
		val(out, &u->value);
		fprintf(out, "%s\n", u->value.partial ? " (partial)" : "");
	}
}
