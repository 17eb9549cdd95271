/* Core files: the ELF core's segments and notes (threads, registers,
 * signal, process name), its modules through libdwfl, the build-id
 * check of the executable given, and the modules' file-backed segments
 * for what the core leaves out. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <unistd.h>
#include <gelf.h>
#include <elfutils/libdwelf.h>

#include "prog/program.h"

static char *debuginfo_path;

/* libdwfl's standard search, from where the module's file is.  A file
 * that dwfl_core_file_report opened itself, from the path in the core's
 * NT_FILE note (the executable of a core given alone, among others),
 * reaches the callback without that path (elfutils 0.188), and its
 * .gnu_debuglink was looked for in the working directory only.  The
 * module's name is the path. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	if ((!file_name || !strchr(file_name, '/')) && modname &&
	    modname[0] == '/')
		file_name = modname;
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base,
					    file_name, debuglink_file,
					    debuglink_crc, debuginfo_file_name);
}

static const Dwfl_Callbacks core_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.debuginfo_path = &debuginfo_path,
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
	int fd = open(exe_path, O_RDONLY | O_CLOEXEC);
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

	if (!name || name[0] != '/' || dwfl_module_getelf(mod, &bias))
		return DWARF_CB_OK;
	base = strrchr(name, '/') + 1;
	exe = p->fname[0] && strncmp(base, p->fname, 15) == 0;
	if (exe && p->build_id_mismatch)
		return DWARF_CB_OK;
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
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		m->why = strdup(strerror(errno));
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

	if (size < 16 || t->files)
		return NULL;
	memcpy(&count, desc, 8);
	if (count == 0 || count > (size - 16) / 24)
		return NULL;
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
		if (names + len >= end)
			break;		/* a path without its NUL */
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

/* Read the notes of a core: signal, pid, threads, process name, files. */
static struct lc_error *read_notes(struct lc_program *t, const GElf_Phdr *ph)
{
	Elf_Data *data = elf_getdata_rawchunk(t->core_elf, ph->p_offset,
					      ph->p_filesz, ELF_T_NHDR);
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;
	size_t cap = 0;

	if (!data)
		return NULL;	/* truncated: threads come from dwfl */
	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *desc = (const char *)data->d_buf + desc_off;
		const char *name = (const char *)data->d_buf + name_off;

		if (nh.n_namesz < 4 || memcmp(name, "CORE", 4) != 0)
			continue;
		if (nh.n_type == NT_PRSTATUS &&
		    nh.n_descsz >= sizeof(struct elf_prstatus)) {
			struct elf_prstatus st;

			memcpy(&st, desc, sizeof(st));
			if (t->nthreads == cap) {
				size_t ncap = cap ? cap * 2 : 8;
				void *p = realloc(t->threads,
						  ncap * sizeof(*t->threads));

				if (!p)
					return &lc_error_nomem;
				t->threads = p;
				cap = ncap;
			}
			memset(&t->threads[t->nthreads], 0, sizeof(*t->threads));
			t->threads[t->nthreads].tid = st.pr_pid;
			t->threads[t->nthreads].signo = st.pr_cursig;
			regs_from_prstatus(&st, &t->threads[t->nthreads]);
			t->nthreads++;
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
		} else if (nh.n_type == NT_FILE) {
			struct lc_error *err = read_file_note(t, desc,
							      nh.n_descsz);

			if (err)
				return err;
		}
	}
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

	if ((err = lc_program_new(LC_PROGRAM_CORE, &t)))
		return err;
	t->core_path = strdup(core_path);
	t->exe_path = lc_strdup_or_null(exe_path);
	if (!t->core_path || (exe_path && !t->exe_path)) {
		err = &lc_error_nomem;
		goto fail;
	}
	t->core_fd = open(core_path, O_RDONLY | O_CLOEXEC);
	if (t->core_fd < 0) {
		err = lc_error_create(LC_ERR_OS, "cannot open core '%s': %s",
				      core_path, strerror(errno));
		goto fail;
	}
	if (fstat(t->core_fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		err = lc_error_create(LC_ERR_FORMAT,
			"'%s' is not a regular file", core_path);
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
		int fd = open(exe_path, O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			err = lc_error_create(LC_ERR_OS,
				"cannot open the executable '%s': %s",
				exe_path, strerror(errno));
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
		 * missing rather than guess. */
		if (ph->p_offset + ph->p_filesz > size) {
			t->truncated = true;
			if (ph->p_type == PT_NOTE)
				t->notes_missing = true;
		}
		if (ph->p_type == PT_NOTE) {
			err = read_notes(t, ph);
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

	t->dwfl = dwfl_begin(&core_callbacks);
	if (!t->dwfl) {
		err = lc_error_create(LC_ERR_NOMEM, "dwfl_begin: %s",
				      dwfl_errmsg(-1));
		goto fail;
	}
	dwfl_report_begin(t->dwfl);
	if (dwfl_core_file_report(t->dwfl, t->core_elf, exe_path) < 0) {
		err = lc_error_create(LC_ERR_FORMAT,
			"cannot list the modules of core '%s': %s",
			core_path, dwfl_errmsg(-1));
		goto fail;
	}
	dwfl_report_end(t->dwfl, NULL, NULL);
	if (exe_path)
		check_build_id(t, exe_path);
	dwfl_getmodules(t->dwfl, note_missing, t, 0);
	/* Unwinding needs the attach; without it we still decode. */
	t->dwfl_attached = dwfl_core_file_attach(t->dwfl, t->core_elf) >= 0;
	lc_program_file_segments(t);
	*ret = t;
	return NULL;

fail:
	lc_program_destroy(t);
	return err;
}

