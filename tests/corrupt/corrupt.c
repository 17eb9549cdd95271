/* Make a corrupted copy of a fixture core, for tests/run-corrupt.sh.
 *
 *   corrupt SCENARIO CORE EXE OUT
 *
 * Finds, in the core, the first thread running Lua: its innermost
 * lua_State, CallInfo and Lua function, their VM; field offsets come
 * from the DWARF layout, as luacore-inspect reads them.  Writes OUT, a
 * copy of CORE with that memory changed as SCENARIO says, and prints
 * what it changed.  Exit 0, 1 if the scenario does not apply to this
 * Lua version (a message says why), 2 on error.
 *
 * Scenarios (the damage a wild write or a use-after-free leaves):
 *   ci-cycle       the innermost CallInfo's previous is itself (5.1:
 *                  L->ci points far past the CallInfo array)
 *   ci-next        previous->next disagrees with previous (5.2+)
 *   stack-outside  the innermost CallInfo's function slot is 1 GiB past
 *                  the stack
 *   stack-moved    the lua_State's stack pointer 1 MiB lower, so that a
 *                  million slots of other memory would look live
 *   proto-sizes    the innermost Lua function's Proto has absurd sizes
 *   string-len     its source string claims 2^40 bytes
 *   gc-cycle       the VM's list of all objects loops back on itself
 *   gc-shared      the list of objects with finalizers (5.2+ finobj)
 *                  starts inside the list of all objects: their tails
 *                  are shared
 *   table-sizes    a table of the VM (package.loaded's, where the
 *                  walk starts) claims 2^63 hash nodes and 2^31 - 1
 *                  array slots
 *   gc-skip        a link of that list steps over a coroutine: the list
 *                  still ends where it should, one thread short
 *   mainthread     the global_State's mainthread is not its main thread
 *                  (5.5: its embedded main thread's l_G points elsewhere)
 *   mainthread-other  the global_State's mainthread is another thread of
 *                  the VM, a coroutine (5.1-5.4)
 *   ci-lost        the running state's current CallInfo is its caller's:
 *                  the C function the interpreter called has none
 *   loaded-table   the table of module "coroutine" that names C functions
 *                  (package.loaded.coroutine; 5.2: _G.coroutine) has its
 *                  hash part in unmapped memory
 *   longjmp        the state's errorJmp chain leads into unmapped memory
 *   smashed-stack  the crashed thread's machine stack overwritten with
 *                  0x41 bytes above its stack pointer, like an overflow
 * and, on the second Lua frame of that thread (the innermost's caller,
 * whose pc is the one saved in its CallInfo):
 *   savedpc-null   its saved pc is NULL
 *   savedpc-below  its saved pc points below its Proto's code
 *   savedpc-odd    its saved pc is not on an instruction boundary
 *   lineinfo       the line info of its current instruction is absurd
 *                  (5.1-5.3: line 2147483647; 5.4+: a delta of +127)
 *   linedefined    its Proto's linedefined is INT32_MAX
 *   kind-bits      its CallInfo's status bits say C (5.1: its closure's
 *                  isC says C)
 *   line-later     the line info of an instruction after the current
 *                  one is out of its function (5.1-5.3: the first
 *                  instruction's line; 5.4+: the next delta +120 or
 *                  more, moving the lines after it up to an anchor, or
 *                  the first delta up and the second down by as
 *                  much): the current line itself still looks right
 *   k-self         its Proto's constants pointer points at the Proto
 *   upval-desc     its Proto's first upvalue description says the
 *                  upvalue is register-held with 4, not 0 or 1 (5.2+)
 *   startpc-order  a local of its Proto comes into scope after the
 *                  next one does (locals are registered in order)
 *   hook-bit       its CallInfo says it runs a hook (CIST_HOOKED; 5.3+
 *                  then name the frame it calls "hook" "?") while the
 *                  state allows hooks
 * and on states:
 *   status-flip    the running lua_State's status says yielded
 *   co-header      a suspended coroutine's stack pointer moved 1 MiB
 *                  down, so that it no longer validates
 *   ci-loops       every suspended coroutine's innermost CallInfo links
 *                  to itself, both ways */
#include <config.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../puc_support.h"

#define MAX_PATCHES	(1 << 16)

static struct lc_target *t;
static const struct lc_layout *l;
static const uint8_t *raw;
static struct { uint64_t addr; uint8_t bytes[512]; size_t len; } *patch;
static size_t npatch;

/* The table value stored under string key `key` in table tbl, or 0. */
struct key_find {
	const char *key;
	uint64_t tbl;
};

static bool key_find_fn(struct lc_lua_ctx *c, const struct lc_tvalue *k,
			const struct lc_tvalue *v, void *arg)
{
	struct key_find *kf = arg;
	char *s;

	if ((k->tag & 0x0f) != 4 || (v->tag & 0x0f) != 5)
		return true;
	s = lc_lua_read_string(c, k->value, NULL, NULL);
	if (s && strcmp(s, kf->key) == 0)
		kf->tbl = v->value;
	free(s);
	return kf->tbl == 0;
}

static uint64_t table_at_key(struct lc_lua_ctx *c, uint64_t tbl, const char *key)
{
	struct key_find kf = { .key = key };
	size_t budget = 1000000;

	lc_lua_table_scan(c, tbl, key_find_fn, &kf, &budget);
	return kf.tbl;
}

static void die(const char *what)
{
	fprintf(stderr, "corrupt: %s\n", what);
	exit(2);
}

static void skip(const char *why)
{
	printf("not applicable: %s\n", why);
	exit(1);
}

static uint64_t rd(uint64_t addr, struct lc_field f)
{
	uint64_t v = 0;

	if (!LC_HAS(f) || lc_read_uint(t->prog->mem, addr + (uint64_t)f.off, f.size, &v) < 0)
		die("cannot read a field of the unmodified core");
	return v;
}

static void put_bytes(uint64_t addr, const void *b, size_t len)
{
	if (npatch == MAX_PATCHES || len > sizeof(patch[0].bytes))
		die("too many patches");
	patch[npatch].addr = addr;
	memcpy(patch[npatch].bytes, b, len);
	patch[npatch].len = len;
	npatch++;
	printf("patch 0x%" PRIx64 " (%zu bytes)\n", addr, len);
}

static void put(uint64_t addr, struct lc_field f, uint64_t v)
{
	if (!LC_HAS(f))
		die("the layout lacks a field the scenario needs");
	put_bytes(addr + (uint64_t)f.off, &v, f.size);
}

/* The file offset of target address addr, or -1. */
static int64_t file_off(uint64_t addr, size_t len)
{
	const uint8_t *p = lc_memory_map(t->prog->mem, addr, len);

	return p ? (int64_t)(p - raw) : -1;
}

int main(int argc, char **argv)
{
	struct lc_report_options o = { .no_scan = true };
	struct lc_report *r = NULL;
	struct lc_lua_ctx *ctx = NULL;
	const struct lc_thread *th = NULL;
	const struct lc_frame *lf = NULL;
	struct lc_lstate st;
	struct lc_error *err;
	const char *sc;
	uint64_t L, ci, g;
	int fd;

	if (argc != 5) {
		fprintf(stderr, "usage: corrupt SCENARIO CORE EXE OUT\n");
		return 64;
	}
	sc = argv[1];
	patch = calloc(MAX_PATCHES, sizeof(*patch));
	if (!patch)
		die("out of memory");
	if ((err = lc_target_open_core(argv[2], argv[3], &t)) ||
	    (err = lc_layout_get(t, &l)) ||
	    (err = lc_test_ctx(t, &ctx)) ||
	    (err = lc_report_create(t, &o, &r)))
		die(lc_error_message(err));
	raw = (const uint8_t *)elf_rawfile(t->prog->core_elf, NULL);
	for (size_t i = 0; i < r->nthreads && !lf; i++) {
		th = &r->threads[i];
		for (size_t k = 0; k < th->nframes && !lf; k++)
			if (th->frames[k].kind == LC_FRAME_LUA &&
			    th->frames[k].ci && th->frames[k].what &&
			    strcmp(th->frames[k].what, "C") != 0)
				lf = &th->frames[k];
	}
	if (!lf)
		die("no thread runs Lua in this core");
	L = lf->state;
	ci = lf->ci;
	if (lc_lua_state_read(ctx, L, &st) < 0)
		die("cannot read the lua_State");
	g = st.g;
	printf("thread %d, lua_State 0x%" PRIx64 ", CallInfo 0x%" PRIx64
	       ", global_State 0x%" PRIx64 ", Lua %s\n", th->tid, L, ci, g,
	       l->version);

	/* The second Lua frame of the thread: its pc is its CallInfo's. */
	const struct lc_frame *lf2 = NULL;
	for (const struct lc_frame *f = lf + 1; f < th->frames + th->nframes; f++)
		if (f->kind == LC_FRAME_LUA && f->ci && f->state == L &&
		    f->what && strcmp(f->what, "Lua") == 0 && f->ci != st.ci) {
			lf2 = f;
			break;
		}

	if (strncmp(sc, "savedpc-", 8) == 0 || strcmp(sc, "lineinfo") == 0 ||
	    strcmp(sc, "linedefined") == 0 || strcmp(sc, "kind-bits") == 0 ||
	    strcmp(sc, "k-self") == 0 || strcmp(sc, "hook-bit") == 0 ||
	    strcmp(sc, "line-later") == 0 || strcmp(sc, "upval-desc") == 0 ||
	    strcmp(sc, "startpc-order") == 0) {
		uint64_t func, cl, p, code, pc;

		if (!lf2)
			skip("the innermost Lua frame has no Lua caller in its state");
		func = rd(lf2->ci, l->ci.func);
		cl = rd(func, l->tv.value);
		p = rd(cl, l->cl.p);
		code = rd(p, l->p.code);
		pc = rd(lf2->ci, l->ci.savedpc);
		printf("frame: %s:%d, CallInfo 0x%" PRIx64 ", Proto 0x%" PRIx64 "\n",
		       lf2->short_src, lf2->currentline, lf2->ci, p);
		if (strcmp(sc, "savedpc-null") == 0)
			put(lf2->ci, l->ci.savedpc, 0);
		else if (strcmp(sc, "savedpc-below") == 0)
			put(lf2->ci, l->ci.savedpc, code - 64);
		else if (strcmp(sc, "savedpc-odd") == 0)
			put(lf2->ci, l->ci.savedpc, pc + 2);
		else if (strcmp(sc, "linedefined") == 0)
			put(p, l->p.linedefined, 0x7fffffff);
		else if (strcmp(sc, "line-later") == 0) {
			uint64_t li = rd(p, l->p.lineinfo);
			uint64_t k = (pc - code) / 4 - 1;
			uint64_t n = rd(p, l->p.sizecode);
			uint64_t last = rd(p, l->p.lastlinedefined);

			if (!li)
				skip("the frame's function has no line info");
			if (l->major < 504) {
				uint32_t v = (uint32_t)last + 1000;

				if (k == 0)
					skip("the frame runs its first instruction");
				put_bytes(li, &v, 4);
			} else {
				uint64_t d = 0, d1 = 0;

				if (k + 2 < n) {
					if (lc_read_uint(t->prog->mem, li + k + 1, 1, &d) < 0)
						die("cannot read the line info");
					if ((int8_t)d == -0x80 || (int8_t)d > 7)
						skip("the next instruction's line is absolute");
					d = 120;
					put_bytes(li + k + 1, &d, 1);
				} else {
					/* The first two deltas, one up and one
					 * down by as much: the lines between
					 * move, the current one does not. */
					int8_t a, b;

					if (k < 2 ||
					    lc_read_uint(t->prog->mem, li, 1, &d) < 0 ||
					    lc_read_uint(t->prog->mem, li + 1, 1, &d1) < 0)
						skip("the frame runs its first instructions");
					a = (int8_t)d;
					b = (int8_t)d1;
					if (a == -0x80 || b == -0x80 || a > 7 ||
					    b - (120 - a) < -127)
						skip("the first instructions' lines are absolute");
					b = (int8_t)(b - (120 - a));
					a = 120;
					put_bytes(li, &a, 1);
					put_bytes(li + 1, &b, 1);
				}
			}
		} else if (strcmp(sc, "k-self") == 0)
			put(p, l->p.k, p);
		else if (strcmp(sc, "upval-desc") == 0) {
			if (l->major == 501 || !LC_HAS(l->uvd.instack))
				skip("5.1 keeps upvalue names only");
			if (rd(p, l->p.sizeupvalues) == 0)
				skip("the frame's function has no upvalues");
			put(rd(p, l->p.upvalues), l->uvd.instack, 4);
		} else if (strcmp(sc, "startpc-order") == 0) {
			uint64_t lv = rd(p, l->p.locvars);
			uint64_t n = rd(p, l->p.sizelocvars), i;

			for (i = 0; i + 1 < n; i++) {
				uint64_t a = lv + i * l->sz_locvar;

				if (rd(a + l->sz_locvar, l->lv.startpc) + 1 <=
				    rd(a, l->lv.endpc))
					break;
			}
			if (i + 1 >= n)
				skip("no two locals of the frame's function to reorder");
			put(lv + i * l->sz_locvar, l->lv.startpc,
			    rd(lv + (i + 1) * l->sz_locvar, l->lv.startpc) + 1);
		}
		else if (strcmp(sc, "hook-bit") == 0) {
			/* lstate.h CIST_HOOKED of each release; 5.1 has no
			 * status bits. */
			unsigned bit = l->major == 505 ? 1u << 20 :
				       l->release >= 50402 ? 1u << 3 :
				       l->major == 502 ? 1u << 1 : 1u << 2;

			if (l->major == 501)
				skip("5.1 has no status bits");
			put(lf2->ci, l->ci.callstatus,
			    rd(lf2->ci, l->ci.callstatus) | bit);
		}
		else if (strcmp(sc, "lineinfo") == 0) {
			uint64_t li = rd(p, l->p.lineinfo);
			uint64_t k = (pc - code) / 4 - 1;

			if (l->major < 504) {
				uint32_t v = 0x7fffffff;

				put_bytes(li + k * 4, &v, 4);
			} else {
				uint8_t v = 127;

				put_bytes(li + k, &v, 1);
			}
		} else if (l->major == 501) {
			put(cl, l->cl.isC, 1);
		} else {
			/* The release's CIST bit that says Lua (5.2, 5.3) or
			 * C (5.4, 5.5): lstate.h. */
			unsigned bit = l->major == 502 ? 1u << 0 :
				       l->major == 505 ? 1u << 15 : 1u << 1;
			uint64_t cs = rd(lf2->ci, l->ci.callstatus);

			put(lf2->ci, l->ci.callstatus, cs ^ bit);
		}
	} else if (strcmp(sc, "status-flip") == 0) {
		put(L, l->L.status, 1);	/* LUA_YIELD */
	} else if (strcmp(sc, "co-header") == 0 || strcmp(sc, "ci-loops") == 0) {
		size_t n = 0;

		for (size_t v = 0; v < r->nvms; v++)
			for (size_t k = 0; k < r->vms[v].nthreads; k++) {
				const struct lc_luathread *lt = &r->vms[v].threads[k];
				struct lc_lstate cs;

				if (!lt->status || strcmp(lt->status, "suspended") != 0 ||
				    lc_lua_state_read(ctx, lt->addr, &cs) < 0 ||
				    cs.ci == cs.base_ci)
					continue;
				if (sc[0] == 'c' && sc[1] == 'o') {
					if (n == 0)
						put(lt->addr, l->L.stack, cs.stack - (1ull << 20));
				} else if (l->major == 501) {
					skip("5.1 keeps CallInfos in an array, with no links");
				} else {
					put(cs.ci, l->ci.previous, cs.ci);
					put(cs.ci, l->ci.next, cs.ci);
				}
				n++;
			}
		if (!n)
			skip("no suspended coroutine with frames");
		printf("%zu coroutines changed\n", n);
	} else if (strcmp(sc, "ci-cycle") == 0) {
		if (l->major == 501)
			put(L, l->L.ci, st.end_ci + 1000ull * l->sz_callinfo);
		else
			put(ci, l->ci.previous, ci);
	} else if (strcmp(sc, "ci-next") == 0) {
		uint64_t prev;

		if (l->major == 501)
			skip("5.1 keeps CallInfos in an array, with no links");
		prev = rd(ci, l->ci.previous);
		put(prev, l->ci.next, prev + 8);
	} else if (strcmp(sc, "stack-outside") == 0) {
		put(ci, l->ci.func, st.stack + (1ull << 30));
	} else if (strcmp(sc, "stack-moved") == 0) {
		put(L, l->L.stack, st.stack - (1ull << 20));
	} else if (strcmp(sc, "proto-sizes") == 0 ||
		   strcmp(sc, "string-len") == 0) {
		uint64_t func = rd(ci, l->ci.func);
		uint64_t cl = rd(func, l->tv.value);
		uint64_t p = rd(cl, l->cl.p);

		if (sc[0] == 'p') {
			put(p, l->p.sizecode, 0x7fffffff);
			put(p, l->p.sizelineinfo, 0x7fffffff);
			put(p, l->p.sizek, 0x7fffffff);
			put(p, l->p.sizelocvars, 0x7fffffff);
			put(p, l->p.sizeupvalues, 0x7fffffff);
			if (LC_HAS(l->p.sizeabslineinfo))
				put(p, l->p.sizeabslineinfo, 0x7fffffff);
		} else {
			uint64_t s = rd(p, l->p.source);

			if (l->major >= 503) {
				/* A long string: tag 4 | 1 << 4 (5.3, 5.4). */
				put(s, l->ts.tt, 0x14);
				put(s, l->ts.lnglen, 1ull << 40);
			} else {
				put(s, l->ts.len, 1ull << 40);
			}
		}
	} else if (strcmp(sc, "gc-cycle") == 0) {
		struct lc_field head = LC_HAS(l->Gx.allgc) ? l->Gx.allgc :
				       l->Gx.rootgc;
		uint64_t first = rd(g, head), second;

		if (!first)
			die("the VM has no objects");
		second = rd(first, l->Lx.next);
		if (!second)
			die("the VM has one object");
		put(second, l->Lx.next, first);
	} else if (strcmp(sc, "gc-shared") == 0) {
		uint64_t obj;

		if (!LC_HAS(l->Gx.finobj))
			skip("5.1 has no list of objects with finalizers");
		obj = rd(g, l->Gx.allgc);
		for (int k = 0; k < 3 && obj; k++)
			obj = rd(obj, l->Lx.next);
		if (!obj)
			die("the VM has fewer than four objects");
		put(g, l->Gx.finobj, obj);
	} else if (strcmp(sc, "table-sizes") == 0) {
		struct lc_field head = LC_HAS(l->Gx.allgc) ? l->Gx.allgc :
				       l->Gx.rootgc;
		uint64_t obj = rd(g, head);
		size_t n = 0;

		/* The first table on the list of all objects. */
		for (; obj && n < 1000000; n++) {
			uint64_t tt = 0;

			if (lc_read_uint(t->prog->mem, obj + (uint64_t)l->L.tt.off,
					 1, &tt) < 0)
				die("cannot read a field of the unmodified core");
			if ((tt & 0x0f) == 5)
				break;
			obj = rd(obj, l->Lx.next);
		}
		if (!obj || n == 1000000)
			skip("no table on the VM's list of all objects");
		put(obj, l->tab.lsizenode, 63);
		put(obj, l->tab.sizearray, 0x7fffffff);
	} else if (strcmp(sc, "gc-skip") == 0) {
		struct lc_field head = LC_HAS(l->Gx.allgc) ? l->Gx.allgc :
				       l->Gx.rootgc;
		uint64_t at = g + (uint64_t)head.off, obj = rd(g, head);
		struct lc_field link = head;
		uint64_t base = g;
		size_t n = 0;

		/* The first coroutine on the list: the link to it is made
		 * to point past it. */
		for (; obj && n < 1000000; n++) {
			uint64_t tt = 0;

			if (lc_read_uint(t->prog->mem, obj + (uint64_t)l->L.tt.off,
					 1, &tt) < 0)
				die("cannot read a field of the unmodified core");
			if ((tt & 0x0f) == 8 && obj != st.mainthread)
				break;
			base = obj;
			link = l->Lx.next;
			obj = rd(obj, l->Lx.next);
		}
		if (!obj || n == 1000000)
			skip("no coroutine on the VM's list of all objects");
		(void)at;
		put(base, link, rd(obj, l->Lx.next));
	} else if (strcmp(sc, "mainthread-other") == 0) {
		uint64_t other = 0;

		if (!LC_HAS(l->G.mainthread))
			skip("5.5 embeds its main thread: no pointer to it");
		for (size_t v = 0; v < r->nvms && !other; v++)
			for (size_t k = 0; k < r->vms[v].nthreads; k++)
				if (r->vms[v].g == g &&
				    r->vms[v].threads[k].addr != st.mainthread) {
					other = r->vms[v].threads[k].addr;
					break;
				}
		if (!other)
			skip("the VM has no coroutine");
		put(g, l->G.mainthread, other);
	} else if (strcmp(sc, "ci-lost") == 0) {
		uint64_t prev;

		if (l->major == 501) {
			if (st.ci - st.base_ci < 2 * l->sz_callinfo)
				skip("the running state has one CallInfo");
			prev = st.ci - l->sz_callinfo;
		} else {
			prev = rd(st.ci, l->ci.previous);
			if (!prev || prev == st.base_ci)
				skip("the running state has one CallInfo");
		}
		put(L, l->L.ci, prev);
	} else if (strcmp(sc, "mainthread") == 0) {
		/* 5.5 has no pointer: its embedded main thread's l_G is
		 * made to point elsewhere. */
		if (LC_HAS(l->G.mainthread))
			put(g, l->G.mainthread, st.mainthread + 64);
		else
			put(st.mainthread, l->L.l_G, g + 64);
	} else if (strcmp(sc, "loaded-table") == 0) {
		struct lc_tvalue reg;
		uint64_t mods = 0, co;

		if (lc_lua_read_tvalue(ctx, g + (uint64_t)l->G.l_registry.off, &reg) < 0 ||
		    (reg.tag & 0x0f) != 5)
			die("cannot read the registry of the unmodified core");
		if (l->major == 502) {
			/* registry[LUA_RIDX_GLOBALS], array slot 2 */
			struct lc_tvalue gt;

			if (lc_lua_read_tvalue(ctx, rd(reg.value, l->tab.array) +
						     l->sz_tvalue, &gt) == 0 &&
			    (gt.tag & 0x0f) == 5)
				mods = gt.value;
		} else {
			mods = table_at_key(ctx, reg.value, "_LOADED");
		}
		if (!mods || !(co = table_at_key(ctx, mods, "coroutine")))
			skip("no coroutine module table");
		put(co, l->tab.node, 0xdead0000);
	} else if (strcmp(sc, "longjmp") == 0) {
		put(L, l->L.errorJmp, 0xdead0000);
	} else if (strcmp(sc, "smashed-stack") == 0) {
		uint8_t a[512];
		uint64_t sp = th->nframes ? th->frames[0].sp : 0;

		if (!sp)
			die("no stack pointer for the thread");
		memset(a, 0x41, sizeof(a));
		/* From the stack pointer up: the frames' saved registers and
		 * return addresses. */
		put_bytes(sp, a, sizeof(a));
	} else {
		die("unknown scenario");
	}

	{
		FILE *in = fopen(argv[2], "rb");
		char buf[1 << 16];
		size_t n;

		fd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (!in || fd < 0)
			die("cannot copy the core");
		while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
			if (write(fd, buf, n) != (ssize_t)n)
				die("cannot write the copy");
		fclose(in);
	}
	for (size_t i = 0; i < npatch; i++) {
		int64_t off = file_off(patch[i].addr, patch[i].len);

		if (off < 0 || pwrite(fd, patch[i].bytes, patch[i].len, off) !=
				       (ssize_t)patch[i].len)
			die("the memory to change is not in the core file");
	}
	close(fd);
	lc_report_destroy(r);
	lc_lua_ctx_destroy(ctx);
	lc_target_destroy(t);
	return 0;
}
