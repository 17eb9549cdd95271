/* Core files: the ELF core's segments and notes (threads, registers,
 * signal, process name), its modules through libdwfl, the build-id
 * check of the executable given, and the modules' file-backed segments
 * for what the core leaves out. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <unistd.h>
#include <elf.h>
#include <gelf.h>
#include <elfutils/libdwelf.h>

#include "prog/program.h"

/* libdwfl's standard search, from where the module's file is.  A file
 * that dwfl_core_file_report opened itself, from the path in the core's
 * NT_FILE note (the executable of a core given alone, among others),
 * reaches the callback without that path (elfutils 0.188), and its
 * .gnu_debuglink was looked for in the working directory only.  The
 * module's name is the path. */
static int note_unsafe(struct lc_program *p, const char *path,
		       const char *what, bool exe);

/* Is one of the paths libdwfl's search (find-debuginfo.c, elfutils
 * 0.188-0.192, the default path ":.debug:/usr/lib/debug") tries for
 * file_name's debug file something that must not be opened: a FIFO, a
 * device?  That path, malloc'd, with *kind; else NULL.  The file's
 * directory is the core's to name, and so is the debug link in it. */
static char *unsafe_debug_file(const char *file_name, const char *link,
			       const char **kind)
{
	const char *slash = strrchr(file_name, '/');
	const char *lbase = strrchr(link, '/');
	char *dir, *cand[8] = { NULL };
	size_t n = 0;
	char *bad = NULL;

	if (!slash)
		return NULL;
	lbase = lbase ? lbase + 1 : link;
	dir = strndup(file_name, (size_t)(slash - file_name));
	if (!dir)
		return NULL;
	if (asprintf(&cand[n], "%s/%s", dir, link) >= 0)
		n++;
	if (asprintf(&cand[n], "%s/.debug/%s", dir, link) >= 0)
		n++;
	if (asprintf(&cand[n], "%s/.dwz/%s", dir, lbase) >= 0)
		n++;
	if (asprintf(&cand[n], "/usr/lib/debug/%s", lbase) >= 0)
		n++;
	if (asprintf(&cand[n], "/usr/lib/debug/.dwz/%s", lbase) >= 0)
		n++;
	if (link[0] == '/' && (cand[n] = strdup(link)))
		n++;
	for (size_t i = 0; i < n && !bad; i++)
		if ((*kind = lc_file_unsafe(cand[i])))
			bad = strdup(cand[i]);
	/* /usr/lib/debug/ + each tail of the directory. */
	for (const char *sub = dir; !bad && (sub = strchr(sub, '/'));) {
		char *c;

		sub++;
		if (!*sub || asprintf(&c, "/usr/lib/debug/%s/%s", sub, link) < 0)
			break;
		if ((*kind = lc_file_unsafe(c)))
			bad = c;
		else
			free(c);
	}
	for (size_t i = 0; i < n; i++)
		free(cand[i]);
	free(dir);
	return bad;
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	char *link = NULL, *bad = NULL, *canon;
	const char *kind = NULL;

	if ((!file_name || !strchr(file_name, '/')) && modname &&
	    modname[0] == '/')
		file_name = modname;
	if (file_name) {
		const char *b = strrchr(file_name, '/');

		if (!debuglink_file &&
		    asprintf(&link, "%s.debug", b ? b + 1 : file_name) < 0)
			link = NULL;
		if (debuglink_file || link)
			bad = unsafe_debug_file(file_name,
						debuglink_file ? debuglink_file : link,
						&kind);
		canon = bad ? NULL : realpath(file_name, NULL);
		if (canon && strcmp(canon, file_name) != 0)
			bad = unsafe_debug_file(canon,
						debuglink_file ? debuglink_file : link,
						&kind);
		free(canon);
	}
	free(link);
	if (bad) {
		char *why;

		/* The module's userdata is its program (lc_program_open_core). */
		if (*userdata && asprintf(&why, "its debug file %s is %s",
					  bad, kind) >= 0) {
			note_unsafe(*userdata, file_name, why, false);
			free(why);
		}
		free(bad);
		errno = 0;
		return -1;
	}
	return lc_debuginfod_find_debuginfo(mod, userdata, modname, base,
					    file_name, debuglink_file,
					    debuglink_crc, debuginfo_file_name);
}

static const Dwfl_Callbacks core_callbacks = {
	.find_elf = lc_debuginfod_find_elf,
	.find_debuginfo = find_debuginfo,
	.debuginfo_path = &lc_debuginfo_path,
};

/* pr_reg (struct user_regs_struct) in DWARF register order. */
static void regs_from_prstatus(const struct elf_prstatus *st,
			       struct lc_program_thread *th)
{
	struct user_regs_struct r;

	memcpy(&r, &st->pr_reg, sizeof(r));
	const uint64_t v[17] = {
		r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp,
		r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rip,
	};
	memcpy(th->regs, v, sizeof(v));
	th->have_regs = true;
}

static char *hex(const uint8_t *p, ssize_t n)
{
	char *s;

	if (n <= 0 || n > 256 || !(s = malloc((size_t)n * 2 + 1)))
		return NULL;
	for (ssize_t i = 0; i < n; i++)
		sprintf(s + 2 * i, "%02x", p[i]);
	return s;
}

struct bid_match {
	const uint8_t *id;
	ssize_t len;
	bool found;
	Dwfl_Module *exe_mod;	/* the core's main program */
	const char *fname;
};

static int match_build_id(Dwfl_Module *mod, void **ud, const char *name,
			  Dwarf_Addr start, void *arg)
{
	struct bid_match *m = arg;
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &bits, &vaddr);
	const char *base = name ? strrchr(name, '/') : NULL;

	base = base ? base + 1 : name;
	if (n > 0 && n == m->len && memcmp(bits, m->id, (size_t)n) == 0)
		m->found = true;
	/* The kernel truncates the process name to 15 bytes. */
	if (base && m->fname[0] && !m->exe_mod &&
	    strncmp(base, m->fname, 15) == 0)
		m->exe_mod = mod;
	return DWARF_CB_OK;
}

/* Is the executable the user named the one the core ran?  libdwfl
 * quietly ignores a mismatching file; the user must hear about it. */
static void check_build_id(struct lc_program *t, const char *exe_path)
{
	const char *why;
	int fd = lc_open_regular(exe_path, &why);
	Elf *elf;
	const void *id;
	ssize_t n;
	struct bid_match m = { .fname = t->fname };

	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	n = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
	if (n > 0) {
		t->exe_build_id = hex(id, n);
		m.id = id;
		m.len = n;
		dwfl_getmodules(t->dwfl, match_build_id, &m, 0);
		t->build_id_mismatch = !m.found;
		if (m.found) {
			t->core_build_id = hex(id, n);
		} else if (m.exe_mod) {
			const unsigned char *bits;
			GElf_Addr vaddr;
			int bn = dwfl_module_build_id(m.exe_mod, &bits, &vaddr);
			const char *name;

			if (bn > 0)
				t->core_build_id = hex(bits, bn);
			name = dwfl_module_info(m.exe_mod, NULL, NULL, NULL,
						NULL, NULL, NULL, NULL);
			t->core_exe_path = lc_strdup_or_null(name);
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
}

/* Note a module whose file libdwfl could not use: gone, unreadable, or
 * another file now at that path (rebuilt, upgraded).  Not the vDSO
 * (no path), nor an executable named on the command line that is not
 * the core's (build_id_mismatch says that). */
static int note_missing(Dwfl_Module *mod, void **ud, const char *name,
			Dwarf_Addr start, void *arg)
{
	struct lc_program *p = arg;
	struct lc_program_missing *m;
	const char *base;
	const unsigned char *bits;
	GElf_Addr vaddr, bias;
	bool exe;
	int n, fd;
	const char *why;

	if (!name || name[0] != '/' || dwfl_module_getelf(mod, &bias))
		return DWARF_CB_OK;
	base = strrchr(name, '/') + 1;
	exe = p->fname[0] && strncmp(base, p->fname, 15) == 0;
	if (exe && p->build_id_mismatch)
		return DWARF_CB_OK;
	for (size_t i = 0; i < p->nmissing_listed; i++)
		if (strcmp(p->missing[i].path, name) == 0)
			return DWARF_CB_OK;	/* not a regular file */
	p->nmissing++;
	if (p->nmissing_listed == LC_MISSING_MAX)
		return DWARF_CB_OK;
	if (!p->missing &&
	    !(p->missing = calloc(LC_MISSING_MAX, sizeof(*p->missing))))
		return DWARF_CB_ABORT;
	m = &p->missing[p->nmissing_listed++];
	m->path = strdup(name);
	m->exe = exe;
	n = dwfl_module_build_id(mod, &bits, &vaddr);
	m->build_id = hex(bits, n);
	fd = lc_open_regular(name, &why);
	if (fd < 0) {
		m->why = strdup(why);
	} else {
		close(fd);
		m->why = strdup(m->build_id ?
			"the file there is not the one the core ran (another build-id: rebuilt or replaced since)" :
			"the file there cannot be matched to the core");
	}
	/* The executable first. */
	if (exe && p->nmissing_listed > 1) {
		struct lc_program_missing tmp = *m;

		memmove(p->missing + 1, p->missing,
			(p->nmissing_listed - 1) * sizeof(*m));
		p->missing[0] = tmp;
	}
	return DWARF_CB_OK;
}

/* NT_FILE: the files the process mapped, by the names the kernel (or gdb)
 * gave them: count, page size, count (start, end, page offset) triples,
 * then count NUL-terminated paths. */
static struct lc_error *read_file_note(struct lc_program *t, const char *desc,
				       size_t size)
{
	uint64_t count;
	size_t off;
	const char *names, *end = desc + size;

	if (t->files)
		return NULL;
	if (size < 16) {
		lc_program_damage(t, "the core's NT_FILE note has %zu bytes, too few for a list of files: which files the process mapped is not known",
				  size);
		return NULL;
	}
	memcpy(&count, desc, 8);
	if (count == 0 || count > (size - 16) / 24) {
		lc_program_damage(t, "the core's NT_FILE note counts %" PRIu64 " files, and its %zu bytes hold at most %zu: it is damaged, and which files the process mapped is not known",
				  count, size, (size - 16) / 24);
		return NULL;
	}
	t->files = calloc(count, sizeof(*t->files));
	if (!t->files)
		return &lc_error_nomem;
	names = desc + 16 + count * 24;
	for (uint64_t i = 0; i < count && names < end; i++) {
		struct lc_mapped_file *f = &t->files[t->nfiles];
		size_t len = strnlen(names, (size_t)(end - names));

		off = 16 + i * 24;
		memcpy(&f->start, desc + off, 8);
		memcpy(&f->end, desc + off + 8, 8);
		if (names + len >= end) {	/* a path without its NUL */
			lc_program_damage(t, "the core's NT_FILE note names %" PRIu64 " of the %" PRIu64 " files it counts: the rest run past its end",
					  i, count);
			break;
		}
		f->path = strndup(names, len);
		if (!f->path)
			return &lc_error_nomem;
		names += len + 1;
		if (f->end > f->start)
			t->nfiles++;
		else
			free(f->path);
	}
	return NULL;
}

/* Threads of a core: at most LC_CORE_THREADS, each once.  A thread note
 * is a copy, not a thread of the process, when its tid or its stack
 * pointer is another's (no two threads share a stack): a core made to
 * claim a million threads lists the real ones, unwinds them, and says
 * how many notes it left out. */
#define LC_CORE_THREADS	65536
#define LC_NOTES_RELEASE	(16u << 20)	/* bytes of notes read between releases */
#define LC_SEEN_SLOTS	(4 * LC_CORE_THREADS)	/* open addressing, < 1/2 full */

struct seen {
	uint64_t *v;		/* LC_SEEN_SLOTS keys, 0 = empty */
};

/* Has key been seen?  If not, and with add, it is now.  key 0 is never
 * seen.  Only kept threads are added: the table stays under 1/4 full. */
static bool seen_before(struct seen *s, uint64_t key, bool add)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;

	if (!key)
		return false;
	for (size_t i = 0, at = (size_t)(h >> 40) % LC_SEEN_SLOTS;
	     i < LC_SEEN_SLOTS; i++, at = (at + 1) % LC_SEEN_SLOTS) {
		if (s->v[at] == key)
			return true;
		if (!s->v[at]) {
			if (add)
				s->v[at] = key;
			return false;
		}
	}
	return false;
}

/* Does a segment that fits in the file lie after ph in it? */
static bool whole_after(Elf *elf, size_t phnum, const GElf_Phdr *ph,
			size_t size)
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *o = gelf_getphdr(elf, i, &mem);

		if (o && o->p_filesz && o->p_offset > ph->p_offset &&
		    o->p_offset <= size && o->p_filesz <= size - o->p_offset)
			return true;
	}
	return false;
}

/* Read the notes of a core: signal, pid, threads, process name, files. */
static struct lc_error *read_notes(struct lc_program *t, const GElf_Phdr *ph,
				   uint64_t *need_end)
{
	Elf_Data *data = elf_getdata_rawchunk(t->core_elf, ph->p_offset,
					      ph->p_filesz, ELF_T_NHDR);
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;
	size_t cap = t->nthreads;
	struct seen tids = { NULL }, sps = { NULL };
	struct lc_error *err = NULL;
	size_t released = 0, last = 0, nth = 0;

	if (!data)
		return NULL;	/* truncated: threads come from dwfl */
	while ((off = gelf_getnote(data, last = off, &nh, &name_off,
				   &desc_off)) > 0) {
		const char *desc = (const char *)data->d_buf + desc_off;
		const char *name = (const char *)data->d_buf + name_off;

		/* The notes are read once: what is behind leaves our RSS
		 * (a core can claim a million threads in 356 MB of notes). */
		if (off - released >= LC_NOTES_RELEASE) {
			uintptr_t b = (uintptr_t)data->d_buf;

			lc_memory_release_host(t->mem,
				(b + released) & ~(uintptr_t)4095,
				(b + off) & ~(uintptr_t)4095);
			released = off;
		}
		nth++;
		if (nh.n_namesz < 4 || memcmp(name, "CORE", 4) != 0)
			continue;
		/* libdwfl's part of the notes ends after these. */
		if ((nh.n_type == NT_AUXV || nh.n_type == NT_FILE) &&
		    ph->p_offset + off > *need_end)
			*need_end = ph->p_offset + off;
		if (nh.n_type == NT_PRSTATUS &&
		    nh.n_descsz >= sizeof(struct elf_prstatus)) {
			struct elf_prstatus st;
			struct lc_program_thread th = { 0 };

			memcpy(&st, desc, sizeof(st));
			th.tid = st.pr_pid;
			th.signo = st.pr_cursig;
			regs_from_prstatus(&st, &th);
			if (!tids.v && (!(tids.v = calloc(LC_SEEN_SLOTS, 8)) ||
					!(sps.v = calloc(LC_SEEN_SLOTS, 8)))) {
				err = &lc_error_nomem;
				break;
			}
			/* The tid as a key: 0 means empty, so offset it. */
			if (seen_before(&tids, (uint64_t)(uint32_t)th.tid + 1, false) ||
			    seen_before(&sps, th.regs[LC_REG_SP], false)) {
				t->thread_copies++;
				continue;
			}
			if (t->nthreads == LC_CORE_THREADS) {
				t->threads_over++;
				continue;
			}
			seen_before(&tids, (uint64_t)(uint32_t)th.tid + 1, true);
			seen_before(&sps, th.regs[LC_REG_SP], true);
			if (t->nthreads == cap) {
				size_t ncap = cap ? cap * 2 : 8;
				void *p = realloc(t->threads,
						  ncap * sizeof(*t->threads));

				if (!p) {
					err = &lc_error_nomem;
					break;
				}
				t->threads = p;
				cap = ncap;
			}
			t->threads[t->nthreads++] = th;
			/* The first PRSTATUS is the thread that took the
			 * signal (kernel and gdb both write it first). */
			if (t->nthreads == 1 && !t->have_siginfo)
				t->signo = st.pr_cursig;
		} else if (nh.n_type == NT_SIGINFO && nh.n_descsz >= 24) {
			int32_t signo, code;
			uint64_t addr;

			memcpy(&signo, desc, 4);
			memcpy(&code, desc + 8, 4);
			memcpy(&addr, desc + 16, 8);
			if (!t->have_siginfo) {
				t->signo = signo;
				t->si_code = code;
				t->fault_addr = addr;
				t->have_siginfo = true;
			}
		} else if (nh.n_type == NT_PRPSINFO &&
			   nh.n_descsz >= sizeof(struct elf_prpsinfo)) {
			struct elf_prpsinfo ps;

			memcpy(&ps, desc, sizeof(ps));
			t->pid = ps.pr_pid;
			memcpy(t->fname, ps.pr_fname, sizeof(ps.pr_fname));
			t->fname[sizeof(ps.pr_fname)] = '\0';
		} else if (nh.n_type == NT_AUXV && !t->entry) {
			/* AT_ENTRY: in the executable's mapping. */
			for (size_t k = 0; k + 16 <= nh.n_descsz; k += 16) {
				uint64_t kv[2];

				memcpy(kv, desc + k, 16);
				if (kv[0] == AT_ENTRY)
					t->entry = kv[1];
				if (kv[0] == AT_PHDR)
					t->at_phdr = kv[1];
				if (kv[0] == AT_PHNUM)
					t->at_phnum = kv[1];
				if (kv[0] == AT_NULL)
					break;
			}
		} else if (nh.n_type == NT_FILE) {
			if ((err = read_file_note(t, desc, nh.n_descsz)))
				break;
		}
	}
	/* A note whose sizes reach past the end stops the walk: say so,
	 * and what it claimed. */
	if (!err && off == 0 && data->d_size >= 12 && last <= data->d_size - 12) {
		uint32_t h[3];

		memcpy(h, (const char *)data->d_buf + last, 12);
		if (h[0] || h[1] || h[2])
			lc_program_damage(t,
				"note %zu of the core (type 0x%x) claims %u bytes of name and %u of data, more than the %zu left in its PT_NOTE: it and the notes after it are not read",
				nth, h[2], h[0], h[1], data->d_size - last - 12);
	}
	free(tids.v);
	free(sps.v);
	return err;
}

/* ---- files the core names that are not regular files ----
 *
 * libdwfl opens the files a core's NT_FILE note names itself, inside
 * dwfl_core_file_report, with a plain open(): one that names a FIFO
 * waits there for a writer forever, and one that names a device acts on
 * it.  Each such path is noted as missing, and libdwfl gets a private
 * (copy-on-write) mapping of the core in which the NT_FILE entries of
 * those paths match no module: it names those modules another way and
 * opens nothing.  The file on disk is not changed, nor is the image the
 * memory reads. */

/* Is path the executable's, by the process name (which the kernel
 * truncates to 15 bytes)? */
static bool names_exe(const struct lc_program *p, const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return p->fname[0] && strncmp(base, p->fname, 15) == 0;
}

/* The executable first in the missing list. */
static void exe_first(struct lc_program *p, size_t i)
{
	struct lc_program_missing tmp = p->missing[i];

	memmove(p->missing + 1, p->missing, i * sizeof(tmp));
	p->missing[0] = tmp;
}

/* A file of the core that is not opened, in the missing list (once). */
static int note_unsafe(struct lc_program *p, const char *path,
		       const char *what, bool exe)
{
	struct lc_program_missing *m;

	exe = exe || names_exe(p, path);
	for (size_t i = 0; i < p->nmissing_listed; i++)
		if (strcmp(p->missing[i].path, path) == 0) {
			if (exe && !p->missing[i].exe) {
				p->missing[i].exe = true;
				exe_first(p, i);
			}
			return 0;
		}
	p->nmissing++;
	if (p->nmissing_listed == LC_MISSING_MAX)
		return 0;
	if (!p->missing &&
	    !(p->missing = calloc(LC_MISSING_MAX, sizeof(*p->missing))))
		return -1;
	m = &p->missing[p->nmissing_listed++];
	m->exe = exe;
	m->path = strdup(path);
	if (asprintf(&m->why, "%s, not a regular file: not opened",
		     what) < 0)
		m->why = NULL;
	if (!m->path || !m->why)
		return -1;
	if (m->exe)
		exe_first(p, p->nmissing_listed - 1);
	return 0;
}

/* The desc of the first CORE NT_FILE note in raw (size bytes), or NULL:
 * the notes are walked in the file's bytes, each length checked. */
static uint8_t *raw_file_note(Elf *elf, uint8_t *raw, size_t size,
			      size_t phnum, size_t *descsz)
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(elf, i, &mem);
		uint64_t off, end, align;

		if (!ph || ph->p_type != PT_NOTE || ph->p_offset > size)
			continue;
		align = ph->p_align == 8 ? 8 : 4;
		off = ph->p_offset;
		end = ph->p_filesz > size - off ? size : off + ph->p_filesz;
		while (end - off >= 12) {
			uint32_t nh[3];
			uint64_t name, desc, next;

			memcpy(nh, raw + off, 12);
			name = off + 12;
			desc = name + (((uint64_t)nh[0] + align - 1) & ~(align - 1));
			next = desc + (((uint64_t)nh[1] + align - 1) & ~(align - 1));
			if (desc > end || nh[1] > end - desc)
				break;
			if (nh[2] == NT_FILE && nh[0] == 5 &&
			    memcmp(raw + name, "CORE", 5) == 0) {
				*descsz = nh[1];
				return raw + desc;
			}
			if (next > end)
				break;
			off = next;
		}
	}
	return NULL;
}

/* Each unsafe path of an NT_FILE desc: noted, and with neuter, its
 * entries made to match no module (libdwfl takes an entry's name for
 * the module that starts at it at file offset 0: the offset becomes
 * nonzero).  The number of entries of unsafe paths, or -1. */
static long screen_file_note(struct lc_program *t, uint8_t *desc,
			     size_t size, bool neuter)
{
	uint64_t count;
	const char *names, *end = (const char *)desc + size, *prev = NULL;
	const char *kind = NULL, *prev_kind = NULL;
	char *what = NULL;
	long bad = 0;
	bool exe;
	const char *exe_file = NULL;	/* the mapping of AT_ENTRY's */

	for (size_t i = 0; i < t->nfiles && t->entry && !exe_file; i++)
		if (t->entry >= t->files[i].start && t->entry < t->files[i].end)
			exe_file = t->files[i].path;
	if (size < 16)
		return 0;
	memcpy(&count, desc, 8);
	if (count == 0 || count > (size - 16) / 24)
		return 0;
	names = (const char *)desc + 16 + count * 24;
	for (uint64_t i = 0; i < count && names < end; i++) {
		size_t len = strnlen(names, (size_t)(end - names));

		if (names + len >= end)
			break;		/* a path without its NUL */
		/* Entries of one file come one after another. */
		if (!prev || strcmp(prev, names) != 0)
			kind = names[0] ? lc_file_unsafe(names) : NULL;
		prev = names;
		if (kind) {
			uint64_t off = ~(uint64_t)0, range[2];

			memcpy(range, desc + 16 + i * 24, 16);
			bad++;
			if (!prev_kind || prev_kind != kind) {
				free(what);
				if (asprintf(&what, "it is %s", kind) < 0)
					return -1;
				prev_kind = kind;
			}
			exe = (t->entry && t->entry >= range[0] &&
			       t->entry < range[1]) ||
			      (exe_file && strcmp(exe_file, names) == 0) ||
			      names_exe(t, names);
			/* The executable given stands in for it. */
			if (!(exe && t->exe_path) &&
			    note_unsafe(t, names, what, exe) < 0) {
				free(what);
				return -1;
			}
			if (neuter)
				memcpy(desc + 16 + i * 24 + 16, &off, 8);
		}
		names += len + 1;
	}
	free(what);
	return bad;
}

/* libdwfl (core-file.c, elfutils 0.188-0.192) reads a core's memory
 * through the PT_LOAD it starts in and as many of the following ones as
 * are contiguous with it, and looks for a module at the start of every
 * one: work that grows with the square of their number (64k one-page
 * mappings: a minute in dwfl_core_file_report).  In its view, a run of
 * PT_LOADs contiguous in memory and in the file, whole (p_filesz ==
 * p_memsz) and of the same flags is one PT_LOAD -- the same bytes at the
 * same addresses -- but never across the start of an ELF image, where
 * libdwfl looks for modules.  Returns how many there are now. */
static size_t merge_loads(uint8_t *view, size_t size, uint64_t phoff,
			  size_t phnum)
{
	size_t w = 0;
	Elf64_Phdr prev;

	for (size_t i = 0; i < phnum; i++) {
		Elf64_Phdr ph;
		bool join = false;

		memcpy(&ph, view + phoff + i * sizeof(ph), sizeof(ph));
		if (w && ph.p_type == PT_LOAD && prev.p_type == PT_LOAD &&
		    ph.p_flags == prev.p_flags &&
		    ph.p_filesz == ph.p_memsz && prev.p_filesz == prev.p_memsz &&
		    prev.p_vaddr + prev.p_memsz == ph.p_vaddr &&
		    prev.p_offset + prev.p_filesz == ph.p_offset &&
		    ph.p_offset < size && size - ph.p_offset >= ph.p_filesz)
			join = ph.p_filesz < SELFMAG ||
			       memcmp(view + ph.p_offset, ELFMAG, SELFMAG) != 0;
		if (join) {
			prev.p_filesz += ph.p_filesz;
			prev.p_memsz += ph.p_memsz;
		} else {
			if (w)
				memcpy(view + phoff + (w - 1) * sizeof(prev),
				       &prev, sizeof(prev));
			prev = ph;
			w++;
		}
	}
	if (w)
		memcpy(view + phoff + (w - 1) * sizeof(prev), &prev,
		       sizeof(prev));
	return w;
}

#define LC_MERGE_LOADS	1024	/* PT_LOADs from which libdwfl's view merges */
#define LC_LINK_MAP_MAX	4096	/* link map entries followed */

/* The file offset in the core of the byte at addr, or -1. */
static int64_t core_offset(Elf *elf, size_t phnum, uint64_t addr)
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(elf, i, &mem);

		if (ph && ph->p_type == PT_LOAD && addr >= ph->p_vaddr &&
		    addr - ph->p_vaddr < ph->p_filesz)
			return (int64_t)(ph->p_offset + (addr - ph->p_vaddr));
	}
	return -1;
}

/* The link map's names that must not be opened.  libdwfl follows the
 * dynamic linker's list (link_map.c: AT_PHDR, PT_DYNAMIC, DT_DEBUG,
 * r_debug.r_map) and opens every l_name; those that are not regular
 * files are noted, and the file offsets of their first bytes go to offs
 * (at most max), to be emptied in libdwfl's view.  Their number, or -1. */
static long screen_link_map(struct lc_program *t, size_t phnum,
			    int64_t *offs, size_t max)
{
	struct lc_memory *m = t->mem;
	uint64_t bias = 0, dyn = 0, ndyn = 0, rdebug = 0, lm;
	long bad = 0;

	if (!t->at_phdr || !t->at_phnum || t->at_phnum > 256)
		return 0;
	for (uint64_t i = 0; i < t->at_phnum; i++) {
		Elf64_Phdr ph;

		if (lc_read(m, t->at_phdr + i * sizeof(ph), &ph, sizeof(ph)) < 0)
			return 0;
		if (ph.p_type == PT_PHDR)
			bias = t->at_phdr - ph.p_vaddr;
		if (ph.p_type == PT_DYNAMIC) {
			dyn = ph.p_vaddr;
			ndyn = ph.p_memsz / 16;
		}
	}
	for (uint64_t i = 0; dyn && i < ndyn && i < 1024; i++) {
		uint64_t d[2];

		if (lc_read(m, dyn + bias + 16 * i, d, 16) < 0 || d[0] == DT_NULL)
			break;
		if (d[0] == DT_DEBUG)
			rdebug = d[1];
	}
	if (!rdebug || lc_read_u64(m, rdebug + 8, &lm) < 0)	/* r_map */
		return 0;
	for (size_t n = 0; lm && n < LC_LINK_MAP_MAX; n++) {
		uint64_t name_at;
		char name[4096];
		const char *kind;
		size_t len = 0;

		if (lc_read_u64(m, lm + 8, &name_at) < 0)	/* l_name */
			break;
		/* The name, a piece at a time up to its NUL. */
		while (name_at && len < sizeof(name) - 1) {
			size_t k = sizeof(name) - 1 - len < 64 ?
				   sizeof(name) - 1 - len : 64;

			if (lc_read(m, name_at + len, name + len, k) < 0) {
				k = 1;
				if (lc_read(m, name_at + len, name + len, 1) < 0)
					break;
			}
			if (memchr(name + len, '\0', k)) {
				len += k;
				break;
			}
			len += k;
		}
		name[len] = '\0';
		if (name[0] && (kind = lc_file_unsafe(name))) {
			char *what;
			int64_t off = core_offset(t->core_elf, phnum, name_at);

			if (asprintf(&what, "it is %s", kind) < 0)
				return -1;
			if (note_unsafe(t, name, what, false) < 0) {
				free(what);
				return -1;
			}
			free(what);
			if (off >= 0 && (size_t)bad < max)
				offs[bad++] = off;
		}
		if (lc_read_u64(m, lm + 24, &lm) < 0)		/* l_next */
			break;
	}
	return bad;
}

/* The core as libdwfl is to read it: t->core_elf, or a private mapping
 * of the core (copy-on-write: the file is not changed, nor the image the
 * memory reads) in which the files that are not regular files are left
 * out, and runs of PT_LOADs merged. */
static struct lc_error *dwfl_view(struct lc_program *t, const uint8_t *raw,
				  size_t size, size_t phnum,
				  const GElf_Phdr *note, uint64_t need_end)
{
	size_t descsz, nload = 0;
	uint8_t *desc = raw_file_note(t->core_elf, (uint8_t *)raw, size,
				      phnum, &descsz);
	uint8_t *view;
	long bad = 0;
	GElf_Ehdr eh;
	bool cut_notes = false;
	int64_t lm_offs[64];
	long nlm;

	/* Read-only here: the image is mapped without write access. */
	if (desc && (bad = screen_file_note(t, desc, descsz, false)) < 0)
		return &lc_error_nomem;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(t->core_elf, i, &mem);

		nload += ph && ph->p_type == PT_LOAD;
	}
	if ((nlm = screen_link_map(t, phnum, lm_offs, LC_ARRAY_SIZE(lm_offs))) < 0)
		return &lc_error_nomem;
	/* libdwfl reads NT_AUXV and NT_FILE of the notes (and walks them
	 * all to find those): its PT_NOTE may end after them. */
	if (note && need_end > note->p_offset &&
	    need_end - note->p_offset <= note->p_filesz &&
	    note->p_filesz - (need_end - note->p_offset) >= LC_NOTES_RELEASE)
		cut_notes = true;
	if (bad == 0 && nlm == 0 && nload < LC_MERGE_LOADS && !cut_notes)
		return NULL;
	if (!gelf_getehdr(t->core_elf, &eh))
		return NULL;
	view = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		    t->core_fd, 0);
	if (view == MAP_FAILED)
		return lc_error_create(LC_ERR_OS, "cannot map core '%s': %s",
				       t->core_path, strerror(errno));
	t->dwfl_map = view;
	t->dwfl_map_size = size;
	/* An empty name is no name to libdwfl: it opens nothing. */
	for (long i = 0; i < nlm; i++)
		if ((uint64_t)lm_offs[i] < size)
			view[lm_offs[i]] = '\0';
	if (bad) {
		desc = raw_file_note(t->core_elf, view, size, phnum, &descsz);
		if (!desc || screen_file_note(t, desc, descsz, true) != bad)
			return lc_error_create(LC_ERR_FORMAT,
				"core '%s' changed while it was read", t->core_path);
	}
	if (cut_notes && eh.e_phentsize == sizeof(Elf64_Phdr)) {
		for (size_t i = 0; i < phnum; i++) {
			Elf64_Phdr ph;
			uint8_t *at = view + eh.e_phoff + i * sizeof(ph);

			memcpy(&ph, at, sizeof(ph));
			if (ph.p_type != PT_NOTE)
				continue;
			ph.p_filesz = need_end - ph.p_offset;
			memcpy(at, &ph, sizeof(ph));
		}
	}
	/* The program headers were checked to lie within the file; the
	 * merged table is shorter, and fits in e_phnum. */
	if (nload >= LC_MERGE_LOADS && eh.e_phentsize == sizeof(Elf64_Phdr)) {
		size_t n = merge_loads(view, size, eh.e_phoff, phnum);

		if (n < PN_XNUM) {
			uint16_t v = (uint16_t)n;

			memcpy(view + offsetof(Elf64_Ehdr, e_phnum), &v, 2);
		}
	}
	t->dwfl_elf = elf_memory((char *)view, size);
	if (!t->dwfl_elf)
		return lc_error_create(LC_ERR_FORMAT, "cannot read core '%s': %s",
				       t->core_path, elf_errmsg(-1));
	return NULL;
}

/* Executable segments of the core with no file behind them: anonymous
 * memory the process made executable (JIT code).  An ELF image is no
 * such memory: the vDSO is dumped whole and is a module.  Without an
 * NT_FILE note nothing says which segments are files: such a segment
 * names only what no module covers. */
static struct lc_error *find_anon_exec(struct lc_program *t,
				       const uint8_t *raw, size_t size,
				       size_t phnum)
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(t->core_elf, i, &mem);
		uint64_t s, e;
		bool file = false;

		if (!ph || ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) ||
		    ph->p_memsz == 0)
			continue;
		s = ph->p_vaddr;
		e = s + ph->p_memsz;
		if (e < s)
			continue;
		for (size_t k = 0; k < t->nfiles && !file; k++)
			file = t->files[k].start < e && s < t->files[k].end;
		if (file)
			continue;
		if (ph->p_filesz >= 4 && ph->p_offset < size &&
		    size - ph->p_offset >= 4 &&
		    memcmp(raw + ph->p_offset, ELFMAG, SELFMAG) == 0)
			continue;
		struct lc_error *err = lc_program_add_exec(t, s, e, NULL,
							   t->nfiles > 0);
		if (err)
			return err;
	}
	return NULL;
}

/* The file-backed PT_LOAD segments of each module, for reads of what
 * the core does not contain (text, rodata): fallback ranges of the
 * memory. */
static int add_module_segments(Dwfl_Module *mod, void **userdata,
			       const char *name, Dwarf_Addr start, void *arg)
{
	struct lc_program *p = arg;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	size_t phnum, size;
	const uint8_t *raw;
	struct lc_mem_file *f;

	if (!elf || elf_getphdrnum(elf, &phnum) != 0)
		return DWARF_CB_OK;
	raw = (const uint8_t *)elf_rawfile(elf, &size);
	if (!raw)
		return DWARF_CB_OK;
	if (lc_memory_add_file(p->mem, raw, size, -1, NULL, false, &f))
		return DWARF_CB_ABORT;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(elf, i, &mem);
		uint64_t s, e;
		struct lc_error *err;

		if (!ph || ph->p_type != PT_LOAD || ph->p_filesz == 0)
			continue;
		if (ph->p_offset > size || ph->p_filesz > size - ph->p_offset)
			continue;
		s = ph->p_vaddr + bias;
		e = s + ph->p_filesz;
		if (e < s)
			continue;
		err = lc_memory_add_mapped(p->mem, s, e, LC_MEM_FALLBACK, f,
					   ph->p_offset);
		if (err) {
			lc_error_destroy(err);
			return DWARF_CB_ABORT;
		}
	}
	return DWARF_CB_OK;
}

/* ---- unwinding the core's threads ----
 *
 * libdwfl's own core threads (dwfl_core_file_attach) find a thread by
 * walking the notes from the first each time: unwinding every thread
 * costs the square of their number.  These callbacks serve the threads
 * read_notes kept, by index, with the registers it read, and read memory
 * as the rest of luacore does. */

/* A thread's arg is its lc_program_thread. */
static pid_t core_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct lc_program *p = arg;
	struct lc_program_thread *last = *thread_argp;
	size_t i = last ? (size_t)(last - p->threads) + 1 : 0;

	if (i >= p->nthreads)
		return 0;
	*thread_argp = &p->threads[i];
	return p->threads[i].tid;
}

static int tid_cmp(const void *a, const void *b)
{
	const int *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

static bool core_get_thread(Dwfl *dwfl, pid_t tid, void *arg,
			    void **thread_argp)
{
	struct lc_program *p = arg;
	int key[2] = { tid, 0 }, *hit;

	/* (tid, index) pairs sorted by tid, made on the first call. */
	if (!p->tid_index) {
		p->tid_index = malloc((p->nthreads ? p->nthreads : 1) *
				      2 * sizeof(int));
		if (!p->tid_index)
			return false;
		for (size_t i = 0; i < p->nthreads; i++) {
			p->tid_index[2 * i] = p->threads[i].tid;
			p->tid_index[2 * i + 1] = (int)i;
		}
		qsort(p->tid_index, p->nthreads, 2 * sizeof(int), tid_cmp);
	}
	hit = bsearch(key, p->tid_index, p->nthreads, 2 * sizeof(int), tid_cmp);
	if (!hit)
		return false;
	*thread_argp = &p->threads[hit[1]];
	return true;
}

static bool core_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			     void *arg)
{
	struct lc_program *p = arg;

	return lc_memory_read(p->mem, addr, result, sizeof(*result), NULL) == 0;
}

static bool core_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct lc_program_thread *th = thread_arg;
	Dwarf_Word regs[LC_NREGS];

	if (!th->have_regs)
		return false;
	if (th->from_sp)
		return lc_program_start_from(thread, th->from_pc, th->from_sp);
	for (unsigned r = 0; r < LC_NREGS; r++)
		regs[r] = th->regs[r];
	dwfl_thread_state_register_pc(thread, regs[LC_REG_PC]);
	return dwfl_thread_state_registers(thread, 0, LC_NREGS, regs);
}

static const Dwfl_Thread_Callbacks core_thread_callbacks = {
	.next_thread = core_next_thread,
	.get_thread = core_get_thread,
	.memory_read = core_memory_read,
	.set_initial_registers = core_set_initial_registers,
};

/* The executable of a core given alone that no file stands for (its
 * NT_FILE note damaged or missing, the file neither where the core
 * says nor found by build-id): its frames would be "??" without a word.
 * It is noted missing, by the process name. */
static struct lc_error *exe_unknown(struct lc_program *t)
{
	Dwfl_Module *mod = t->entry ? dwfl_addrmodule(t->dwfl, t->entry) : NULL;
	struct lc_program_missing *m;
	const unsigned char *bits = NULL;
	GElf_Addr vaddr, bias;
	int n = 0;

	if (!t->entry)
		return NULL;
	for (size_t i = 0; i < t->nmissing_listed; i++)
		if (t->missing[i].exe)
			return NULL;
	if (mod && dwfl_module_getelf(mod, &bias))
		return NULL;
	if (mod)
		n = dwfl_module_build_id(mod, &bits, &vaddr);
	t->nmissing++;
	if (t->nmissing_listed == LC_MISSING_MAX)
		return NULL;
	if (!t->missing &&
	    !(t->missing = calloc(LC_MISSING_MAX, sizeof(*t->missing))))
		return &lc_error_nomem;
	m = &t->missing[t->nmissing_listed++];
	m->exe = true;
	m->path = strdup(t->fname[0] ? t->fname : "(no name)");
	m->why = strdup(t->nfiles ?
		"no file is found for it: the core's list of mapped files does not name it, and no file has its build-id" :
		"the core names no file for it (its NT_FILE note is damaged or missing), and no file has its build-id");
	m->build_id = n > 0 ? hex(bits, n) : NULL;
	if (!m->path || !m->why)
		return &lc_error_nomem;
	exe_first(t, t->nmissing_listed - 1);
	return NULL;
}

static int set_userdata(Dwfl_Module *mod, void **userdata, const char *name,
			Dwarf_Addr start, void *arg)
{
	*userdata = arg;
	return DWARF_CB_OK;
}

/* List the modules' file segments again (after a module was added). */
void lc_program_file_segments(struct lc_program *p)
{
	lc_memory_clear(p->mem, LC_MEM_FALLBACK);
	if (p->dwfl)
		dwfl_getmodules(p->dwfl, add_module_segments, p, 0);
}

struct lc_error *lc_program_open_core(const char *core_path,
				      const char *exe_path,
				      struct lc_program **ret)
{
	struct lc_program *t;
	struct lc_error *err = NULL;
	struct stat st;
	GElf_Ehdr ehdr;
	size_t phnum, size;
	struct lc_mem_file *image;
	const uint8_t *raw;
	const char *why;
	GElf_Phdr note_ph = { 0 };
	uint64_t need_end = 0;
	size_t nnotes = 0;

	if ((err = lc_program_new(LC_PROGRAM_CORE, &t)))
		return err;
	t->core_path = strdup(core_path);
	t->exe_path = lc_strdup_or_null(exe_path);
	if (!t->core_path || (exe_path && !t->exe_path)) {
		err = &lc_error_nomem;
		goto fail;
	}
	if ((why = lc_file_unsafe(core_path))) {
		err = lc_error_create(LC_ERR_FORMAT,
			"'%s' is %s, not a regular file: not opened",
			core_path, why);
		goto fail;
	}
	t->core_fd = lc_open_regular(core_path, &why);
	if (t->core_fd < 0) {
		err = lc_error_create(LC_ERR_OS, "cannot open core '%s': %s",
				      core_path, why);
		goto fail;
	}
	if (fstat(t->core_fd, &st) < 0) {
		err = lc_error_create(LC_ERR_OS, "cannot open core '%s': %s",
				      core_path, strerror(errno));
		goto fail;
	}
	if (st.st_size == 0) {
		err = lc_error_create(LC_ERR_FORMAT,
			"'%s' is empty (a core cut off before it started?)",
			core_path);
		goto fail;
	}
	t->core_elf = elf_begin(t->core_fd, ELF_C_READ_MMAP, NULL);
	if (!t->core_elf || elf_kind(t->core_elf) != ELF_K_ELF ||
	    !gelf_getehdr(t->core_elf, &ehdr)) {
		err = lc_error_create(LC_ERR_FORMAT,
			"'%s' is not an ELF file", core_path);
		goto fail;
	}
	if (ehdr.e_type != ET_CORE) {
		err = lc_error_create(LC_ERR_FORMAT,
			"'%s' is an ELF file but not a core (e_type %u); give the core first, then the executable",
			core_path, ehdr.e_type);
		goto fail;
	}
	if (ehdr.e_machine != EM_X86_64 ||
	    ehdr.e_ident[EI_CLASS] != ELFCLASS64) {
		err = lc_error_create(LC_ERR_UNSUPPORTED,
			"'%s' is a core of machine %u; luacore reads x86_64 cores",
			core_path, ehdr.e_machine);
		goto fail;
	}
	if (exe_path) {
		int fd = lc_open_regular(exe_path, &why);

		if (fd < 0) {
			err = lc_error_create(LC_ERR_OS,
				lc_file_unsafe(exe_path) ?
				"the executable '%s' is %s, not a regular file: not opened" :
				"cannot open the executable '%s': %s",
				exe_path, why);
			goto fail;
		}
		close(fd);
	}
	raw = (const uint8_t *)elf_rawfile(t->core_elf, &size);
	t->core_size = size;
	if (!raw || elf_getphdrnum(t->core_elf, &phnum) != 0) {
		err = lc_error_create(LC_ERR_FORMAT,
			"cannot read the program headers of '%s'", core_path);
		goto fail;
	}
	/* libelf gives no program headers when they are cut off. */
	if (ehdr.e_phoff > size ||
	    (uint64_t)(ehdr.e_phnum == PN_XNUM ? phnum : ehdr.e_phnum) *
	    ehdr.e_phentsize > size - ehdr.e_phoff) {
		err = lc_error_create(LC_ERR_FORMAT,
			"'%s' is truncated (%zu bytes) within its program headers: none of the process's memory, threads or files can be found",
			core_path, size);
		goto fail;
	}
	/* The scan reads the image with pread, and the GC walk lets go of
	 * the pages of the mapping it touched. */
	if ((err = lc_memory_add_file(t->mem, raw, size, t->core_fd, core_path,
				      true, &image)))
		goto fail;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(t->core_elf, i, &mem);
		uint64_t s_start, s_end;

		if (!ph)
			continue;
		/* A core cut short (disk full, size limits): say what is
		 * missing rather than guess.  But a segment that claims to
		 * reach past the end while a whole one lies after it in the
		 * file is damaged, not cut off: its bytes up to the end are
		 * read. */
		if (ph->p_offset > size || ph->p_filesz > size - ph->p_offset) {
			if (whole_after(t->core_elf, phnum, ph, size)) {
				GElf_Phdr cut = *ph;

				lc_program_damage(t,
					"program header %zu (%s) claims %" PRIu64 " bytes at offset %" PRIu64 ", past the end of the core (%zu bytes), though the segments after it in the file are whole: its size is damaged, not the file cut short",
					i, ph->p_type == PT_NOTE ? "PT_NOTE" :
					ph->p_type == PT_LOAD ? "PT_LOAD" : "a segment",
					(uint64_t)ph->p_filesz, (uint64_t)ph->p_offset, size);
				if (ph->p_type == PT_NOTE && ph->p_offset < size) {
					cut.p_filesz = size - ph->p_offset;
					nnotes++;
					note_ph = cut;
					err = read_notes(t, &cut, &need_end);
					if (err)
						goto fail;
					continue;
				}
			} else {
				t->truncated = true;
				if (ph->p_type == PT_NOTE)
					t->notes_missing = true;
			}
		}
		if (ph->p_type == PT_NOTE) {
			nnotes++;
			note_ph = *ph;
			err = read_notes(t, ph, &need_end);
			if (err)
				goto fail;
			continue;
		}
		if (ph->p_type != PT_LOAD || ph->p_filesz == 0 ||
		    ph->p_offset >= size)
			continue;
		s_start = ph->p_vaddr;
		s_end = ph->p_vaddr + ph->p_filesz;
		/* A truncated core holds only part of the segment. */
		if (ph->p_filesz > size - ph->p_offset)
			s_end = ph->p_vaddr + (size - ph->p_offset);
		if (s_end <= s_start)
			continue;
		err = lc_memory_add_mapped(t->mem, s_start, s_end,
					   (ph->p_flags & PF_W) ? LC_MEM_WRITABLE : 0,
					   image, ph->p_offset);
		if (err)
			goto fail;
	}

	if ((err = find_anon_exec(t, raw, size, phnum)))
		goto fail;
	if ((err = dwfl_view(t, raw, size, phnum,
			     nnotes == 1 ? &note_ph : NULL, need_end)))
		goto fail;

	t->dwfl = dwfl_begin(&core_callbacks);
	if (t->dwfl)
		lc_debuginfod_hook(t->dwfl);
	if (!t->dwfl) {
		err = lc_error_create(LC_ERR_NOMEM, "dwfl_begin: %s",
				      dwfl_errmsg(-1));
		goto fail;
	}
	dwfl_report_begin(t->dwfl);
	if (dwfl_core_file_report(t->dwfl, t->dwfl_elf ? t->dwfl_elf : t->core_elf,
				  exe_path) < 0) {
		err = lc_error_create(LC_ERR_FORMAT,
			"cannot list the modules of core '%s': %s",
			core_path, dwfl_errmsg(-1));
		goto fail;
	}
	dwfl_report_end(t->dwfl, NULL, NULL);
	dwfl_getmodules(t->dwfl, set_userdata, t, 0);
	if (exe_path)
		check_build_id(t, exe_path);
	dwfl_getmodules(t->dwfl, note_missing, t, 0);
	if (!exe_path && (err = exe_unknown(t)))
		goto fail;
	/* Unwinding needs the attach; without it we still decode. */
	t->dwfl_attached = t->nthreads > 0 &&
		dwfl_attach_state(t->dwfl, t->core_elf,
				  t->pid ? t->pid : t->threads[0].tid,
				  &core_thread_callbacks, t);
	lc_program_file_segments(t);
	*ret = t;
	return NULL;

fail:
	lc_program_destroy(t);
	return err;
}

