/* Targets: a core file (with libdwfl for modules, threads and debug info)
 * or memory behind a callback.  Every read is ranged and bounded, and
 * fails naming the first address it could not read. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gelf.h>
#include <elfutils/libdwelf.h>
#include <sys/user.h>

#include "prog/target.h"
#include "vm/puc/layout.h"
#include "native/unwind.h"

static char *debuginfo_path;

static const Dwfl_Callbacks core_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

static int seg_cmp(const void *a, const void *b)
{
	const struct lc_segment *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static const struct lc_segment *seg_find(const struct lc_segment *segs,
					 size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < segs[mid].start)
			hi = mid;
		else if (addr >= segs[mid].end)
			lo = mid + 1;
		else
			return &segs[mid];
	}
	return NULL;
}

static int seg_push(struct lc_segment **segs, size_t *n, size_t *cap,
		    struct lc_segment s)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct lc_segment *p = realloc(*segs, ncap * sizeof(*p));

		if (!p)
			return -1;
		*segs = p;
		*cap = ncap;
	}
	(*segs)[(*n)++] = s;
	return 0;
}

/* The cached page holding addr, read whole through the callback on a
 * miss; NULL if that page cannot be read whole. */
static const struct lc_page *cache_page(struct lc_target *t, uint64_t addr)
{
	uint64_t pa = addr & ~(uint64_t)(LC_PAGE_SIZE - 1);
	struct lc_page *p;

	if (!t->cache) {
		t->cache = calloc(LC_CACHE_PAGES, sizeof(*t->cache));
		if (!t->cache)
			return NULL;
	}
	p = &t->cache[(pa / LC_PAGE_SIZE) % LC_CACHE_PAGES];
	if (!p->valid || p->addr != pa) {
		p->addr = pa;
		p->valid = true;
		p->bad = t->read_cb(t->read_arg, pa, p->data, LC_PAGE_SIZE) != 0;
	}
	return p->bad ? NULL : p;
}

/* Serve [addr, addr+len) from whole cached pages; -1 if one of them is
 * not readable whole (the caller then asks for the exact bytes). */
static int cache_read(struct lc_target *t, uint64_t addr, uint8_t *out,
		      size_t len)
{
	if (len > 2 * LC_PAGE_SIZE || addr + len < addr)
		return -1;
	while (len) {
		const struct lc_page *p = cache_page(t, addr);
		size_t off = (size_t)(addr - (p ? p->addr : 0));
		size_t n = LC_PAGE_SIZE - off;

		if (!p)
			return -1;
		if (n > len)
			n = len;
		memcpy(out, p->data + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

void lc_target_set_caching(struct lc_target *t, bool on)
{
	t->caching = on;
	lc_target_invalidate(t);
}

void lc_target_invalidate(struct lc_target *t)
{
	if (t && t->cache)
		memset(t->cache, 0, LC_CACHE_PAGES * sizeof(*t->cache));
}

void (*lc_read_hook)(uint64_t addr, size_t len);

const uint8_t *lc_core_image_at(struct lc_target *t, uint64_t addr,
				size_t len)
{
	size_t size = 0;
	const uint8_t *raw = t->core_elf ?
		(const uint8_t *)elf_rawfile(t->core_elf, &size) : NULL;

	for (size_t i = 0; raw && i < t->ncore_segs; i++) {
		const struct lc_segment *s = &t->core_segs[i];

		if (addr >= s->start && addr < s->end && len <= s->end - addr &&
		    s->data >= raw && s->data < raw + size)
			return s->data + (addr - s->start);
	}
	return NULL;
}

int lc_read(struct lc_target *t, uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;

	if (lc_read_hook)
		lc_read_hook(addr, len);
	/* Callback targets read everything through the callback; what it
	 * cannot serve may still be file-backed text or rodata of a module
	 * added with lc_target_add_module. */
	if (t->read_cb && ((t->caching && cache_read(t, addr, buf, len) == 0) ||
			   t->read_cb(t->read_arg, addr, buf, len) == 0))
		return 0;
	while (len) {
		const struct lc_segment *s;
		uint64_t n;

		s = seg_find(t->core_segs, t->ncore_segs, addr);
		if (!s)
			s = seg_find(t->file_segs, t->nfile_segs, addr);
		if (!s)
			return -1;
		n = s->end - addr;
		if (n > len)
			n = len;
		memcpy(out, s->data + (addr - s->start), n);
		out += n;
		addr += n;
		len -= n;
		if (len && addr == 0)	/* wrapped around */
			return -1;
	}
	return 0;
}

int lc_read_u64(struct lc_target *t, uint64_t addr, uint64_t *ret)
{
	return lc_read(t, addr, ret, 8);
}

int lc_read_u32(struct lc_target *t, uint64_t addr, uint32_t *ret)
{
	return lc_read(t, addr, ret, 4);
}

int lc_read_u8(struct lc_target *t, uint64_t addr, uint8_t *ret)
{
	return lc_read(t, addr, ret, 1);
}

int lc_read_uint(struct lc_target *t, uint64_t addr, unsigned size,
		 uint64_t *ret)
{
	uint8_t b[8];

	if (size == 0 || size > 8 || lc_read(t, addr, b, size) < 0)
		return -1;
	*ret = 0;
	/* Little-endian targets only (x86_64, aarch64). */
	for (unsigned i = size; i-- > 0;)
		*ret = (*ret << 8) | b[i];
	return 0;
}

bool lc_target_is_data(struct lc_target *t, uint64_t addr, size_t len)
{
	const struct lc_segment *s;

	if (t->read_cb && !t->nregions)
		return true;
	s = t->read_cb ? seg_find(t->regions, t->nregions, addr) :
	    seg_find(t->core_segs, t->ncore_segs, addr);
	return s && s->writable && len <= s->end - addr;
}

const char *lc_target_symbol(struct lc_target *t, uint64_t addr)
{
	Dwfl_Module *mod;

	if (!t->dwfl || !addr || !(mod = dwfl_addrmodule(t->dwfl, addr)))
		return NULL;
	return dwfl_module_addrname(mod, addr);
}

struct lc_error *lc_target_read(struct lc_target *t, uint64_t addr,
				void *buf, size_t len)
{
	if (lc_read(t, addr, buf, len) == 0)
		return NULL;
	/* Find the first failing byte for the message. */
	for (size_t i = 0; i < len; i++) {
		uint8_t b;

		if (lc_read(t, addr + i, &b, 1) < 0)
			return lc_error_fault(addr + i, "target memory");
	}
	return lc_error_fault(addr, "target memory");
}

/* pr_reg (struct user_regs_struct) in DWARF register order. */
static void regs_from_prstatus(const struct elf_prstatus *st,
			       struct lc_target_thread *th)
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
static void check_build_id(struct lc_target *t, const char *exe_path)
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

/* Read the notes of a core: signal, pid, threads, process name. */
static struct lc_error *read_notes(struct lc_target *t, const GElf_Phdr *ph)
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
		}
	}
	return NULL;
}

/* Add the file-backed PT_LOAD segments of each module, for reads of what
 * the core does not contain (text, rodata). */
static int add_module_segments(Dwfl_Module *mod, void **userdata,
			       const char *name, Dwarf_Addr start, void *arg)
{
	struct lc_target *t = arg;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	size_t phnum, size;
	const uint8_t *raw;

	if (!elf || elf_getphdrnum(elf, &phnum) != 0)
		return DWARF_CB_OK;
	raw = (const uint8_t *)elf_rawfile(elf, &size);
	if (!raw)
		return DWARF_CB_OK;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(elf, i, &mem);
		struct lc_segment s;

		if (!ph || ph->p_type != PT_LOAD || ph->p_filesz == 0)
			continue;
		if (ph->p_offset > size || ph->p_filesz > size - ph->p_offset)
			continue;
		s.start = ph->p_vaddr + bias;
		s.end = s.start + ph->p_filesz;
		s.data = raw + ph->p_offset;
		s.writable = false;
		if (s.end < s.start)
			continue;
		if (t->nfile_segs % 16 == 0) {
			void *p = realloc(t->file_segs, (t->nfile_segs + 16) *
					  sizeof(*t->file_segs));

			if (!p)
				return DWARF_CB_ABORT;
			t->file_segs = p;
		}
		t->file_segs[t->nfile_segs++] = s;
	}
	return DWARF_CB_OK;
}

/* File segments may overlap each other (never in a sane process); keep the
 * first of any overlapping pair so binary search stays correct. */
static void normalize_segments(struct lc_segment *segs, size_t *n)
{
	size_t out = 0;

	if (*n == 0)
		return;		/* segs may be NULL */
	qsort(segs, *n, sizeof(*segs), seg_cmp);
	for (size_t i = 0; i < *n; i++) {
		if (out && segs[i].start < segs[out - 1].end) {
			if (segs[i].end <= segs[out - 1].end)
				continue;
			if (segs[i].data)	/* regions have none */
				segs[i].data += segs[out - 1].end -
						segs[i].start;
			segs[i].start = segs[out - 1].end;
		}
		segs[out++] = segs[i];
	}
	*n = out;
}

struct lc_error *lc_target_open_core(const char *core_path,
				     const char *exe_path,
				     struct lc_target **ret)
{
	struct lc_target *t;
	struct lc_error *err = NULL;
	struct stat st;
	GElf_Ehdr ehdr;
	size_t phnum, cap = 0, size;
	const uint8_t *raw;

	elf_version(EV_CURRENT);
	t = calloc(1, sizeof(*t));
	if (!t)
		return &lc_error_nomem;
	t->core_fd = -1;
	t->mem_fd = -1;
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
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(t->core_elf, i, &mem);
		struct lc_segment s;

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
		s.start = ph->p_vaddr;
		s.end = ph->p_vaddr + ph->p_filesz;
		/* A truncated core holds only part of the segment. */
		if (ph->p_filesz > size - ph->p_offset)
			s.end = ph->p_vaddr + (size - ph->p_offset);
		if (s.end <= s.start)
			continue;
		s.data = raw + ph->p_offset;
		s.writable = (ph->p_flags & PF_W) != 0;
		if (seg_push(&t->core_segs, &t->ncore_segs, &cap, s) < 0) {
			err = &lc_error_nomem;
			goto fail;
		}
	}
	normalize_segments(t->core_segs, &t->ncore_segs);

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
	/* Unwinding needs the attach; without it we still decode. */
	t->dwfl_attached = dwfl_core_file_attach(t->dwfl, t->core_elf) >= 0;
	dwfl_getmodules(t->dwfl, add_module_segments, t, 0);
	normalize_segments(t->file_segs, &t->nfile_segs);
	*ret = t;
	return NULL;

fail:
	lc_target_destroy(t);
	return err;
}

struct lc_error *lc_target_create_callback(lc_read_fn *read, void *arg,
					   struct lc_target **ret)
{
	struct lc_target *t;

	if (!read)
		return lc_error_create(LC_ERR_INVALID, "no read callback");
	elf_version(EV_CURRENT);
	t = calloc(1, sizeof(*t));
	if (!t)
		return &lc_error_nomem;
	t->core_fd = -1;
	t->mem_fd = -1;
	t->read_cb = read;
	t->read_arg = arg;
	*ret = t;
	return NULL;
}

struct lc_error *lc_target_add_module(struct lc_target *t, const char *path,
				      uint64_t bias)
{
	Dwfl_Module *mod;

	if (!t->dwfl) {
		t->dwfl = dwfl_begin(&offline_callbacks);
		if (!t->dwfl)
			return lc_error_create(LC_ERR_NOMEM, "dwfl_begin: %s",
					       dwfl_errmsg(-1));
	}
	dwfl_report_begin_add(t->dwfl);
	mod = dwfl_report_elf(t->dwfl, path, path, -1, bias, false);
	dwfl_report_end(t->dwfl, NULL, NULL);
	if (!mod)
		return lc_error_create(LC_ERR_FORMAT, "cannot load '%s': %s",
				       path, dwfl_errmsg(-1));
	free(t->file_segs);
	t->file_segs = NULL;
	t->nfile_segs = 0;
	dwfl_getmodules(t->dwfl, add_module_segments, t, 0);
	normalize_segments(t->file_segs, &t->nfile_segs);
	/* A new module may hold the VM: resolve the layout again. */
	lc_layout_destroy(t->layout);
	lc_error_destroy(t->layout_err);
	t->layout = NULL;
	t->layout_err = NULL;
	t->layout_tried = false;
	return NULL;
}

struct lc_error *lc_target_add_module_section(struct lc_target *t,
					      const char *path,
					      const char *section,
					      uint64_t addr)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	struct lc_error *err = NULL;
	bool found = false;
	uint64_t bias = 0;

	if (fd < 0)
		return lc_error_create(LC_ERR_OS, "cannot open '%s': %s", path,
				       strerror(errno));
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0) {
		err = lc_error_create(LC_ERR_FORMAT, "'%s' is not an ELF file: %s",
				      path, elf_errmsg(-1));
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, section) == 0 &&
		    (sh.sh_flags & SHF_ALLOC)) {
			bias = addr - sh.sh_addr;
			found = true;
			break;
		}
	}
	if (!found)
		err = lc_error_create(LC_ERR_NOT_FOUND,
				      "'%s' has no loaded section %s", path,
				      section);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (err)
		return err;
	return lc_target_add_module(t, path, bias);
}

struct lc_error *lc_target_add_thread(struct lc_target *t, int tid,
				      const char *name, int signo,
				      const struct lc_frame_regs *frames,
				      size_t nframes)
{
	struct lc_target_thread *th;
	void *p;

	if (!t->read_cb)
		return lc_error_create(LC_ERR_INVALID,
				       "threads are added to callback targets only");
	if (nframes > 100000)
		return lc_error_create(LC_ERR_INVALID, "%zu frames", nframes);
	p = realloc(t->threads, (t->nthreads + 1) * sizeof(*t->threads));
	if (!p)
		return &lc_error_nomem;
	t->threads = p;
	th = &t->threads[t->nthreads];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->signo = signo;
	th->name = lc_strdup_or_null(name);
	if (nframes) {
		th->frames = malloc(nframes * sizeof(*frames));
		if (!th->frames || (name && !th->name)) {
			free(th->frames);
			free(th->name);
			return &lc_error_nomem;
		}
		memcpy(th->frames, frames, nframes * sizeof(*frames));
		th->nframes = nframes;
		/* The crash context shows the innermost frame's registers. */
		for (unsigned r = 0; r < 17; r++)
			th->regs[r] = frames[0].regs[r];
		th->have_regs = (frames[0].regmask & 0x1ffff) == 0x1ffff;
	}
	t->nthreads++;
	return NULL;
}

struct lc_error *lc_target_add_region(struct lc_target *t, uint64_t start,
				      uint64_t end, bool writable)
{
	size_t cap = t->nregions;
	struct lc_segment r = { .start = start, .end = end,
				.writable = writable };

	if (!t->read_cb)
		return lc_error_create(LC_ERR_INVALID,
				       "regions are added to callback targets only");
	if (end <= start)
		return lc_error_create(LC_ERR_INVALID,
				       "empty region 0x%" PRIx64 "-0x%" PRIx64,
				       start, end);
	if (seg_push(&t->regions, &t->nregions, &cap, r) < 0)
		return &lc_error_nomem;
	normalize_segments(t->regions, &t->nregions);
	return NULL;
}

struct lc_error *lc_target_set_process(struct lc_target *t, int pid,
				       const char *executable,
				       const char *core)
{
	char *e = lc_strdup_or_null(executable), *c = lc_strdup_or_null(core);

	if ((executable && !e) || (core && !c)) {
		free(e);
		free(c);
		return &lc_error_nomem;
	}
	t->pid = pid;
	if (executable) {
		free(t->exe_path);
		t->exe_path = e;
	}
	if (core) {
		free(t->core_path);
		t->core_path = c;
	}
	return NULL;
}

void lc_target_set_signal(struct lc_target *t, int signo, int si_code,
			  uint64_t fault_addr)
{
	t->signo = signo;
	t->si_code = si_code;
	t->fault_addr = fault_addr;
	t->have_siginfo = signo != 0;
}

void lc_target_destroy(struct lc_target *t)
{
	if (!t)
		return;
	/* libdwfl first: it may still use the threads' stops. */
	if (t->dwfl && t->live) {
		dwfl_end(t->dwfl);
		t->dwfl = NULL;
	}
	lc_target_detach(t);
	if (t->mem_fd >= 0)
		close(t->mem_fd);
	for (size_t i = 0; i < t->nthreads; i++) {
		free(t->threads[i].frames);
		free(t->threads[i].name);
	}
	free(t->cache);
	free(t->regions);
	lc_layout_destroy(t->layout);
	lc_error_destroy(t->layout_err);
	lc_unwind_cache_free(t);
	if (t->dwfl)
		dwfl_end(t->dwfl);
	if (t->core_elf)
		elf_end(t->core_elf);
	if (t->core_fd >= 0)
		close(t->core_fd);
	free(t->core_segs);
	free(t->file_segs);
	free(t->threads);
	free(t->core_path);
	free(t->exe_path);
	free(t->exe_build_id);
	free(t->core_build_id);
	free(t->core_exe_path);
	free(t);
}
