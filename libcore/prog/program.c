/* Programs (program.h): construction of callback programs, modules,
 * threads, regions, the process facts a front end hands in, symbols,
 * and the one destructor. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gelf.h>

#include "prog/program.h"

/* Where libdwfl looks for separate debug files (its debuginfo_path
 * syntax); NULL: its default, ":.debug:/usr/lib/debug". */
char *lc_debuginfo_path;

void lc_set_debuginfo_path(const char *path)
{
	free(lc_debuginfo_path);
	lc_debuginfo_path = path ? strdup(path) : NULL;
}

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = lc_debuginfod_find_elf,
	.find_debuginfo = lc_debuginfod_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &lc_debuginfo_path,
};


void lc_program_damage(struct lc_program *p, const char *fmt, ...)
{
	va_list ap;

	if (p->damage)
		return;
	va_start(ap, fmt);
	if (vasprintf(&p->damage, fmt, ap) < 0)
		p->damage = NULL;
	va_end(ap);
}

static const char *file_kind(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a regular file";
}

const char *lc_file_unsafe(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
		return NULL;
	return file_kind(st.st_mode);
}

int lc_open_regular(const char *path, const char **why)
{
	struct stat st;
	const char *kind = lc_file_unsafe(path);
	int fd, fl;

	if (kind) {
		*why = kind;
		return -1;
	}
	/* Something else may be there by now: O_NONBLOCK keeps a FIFO's
	 * open from waiting, fstat tells. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		*why = strerror(errno);
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		*why = fstat(fd, &st) != 0 ? strerror(errno) :
		       file_kind(st.st_mode);
		close(fd);
		return -1;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

struct lc_error *lc_program_new(enum lc_program_kind kind,
				struct lc_program **ret)
{
	struct lc_program *p;
	struct lc_error *err;

	elf_version(EV_CURRENT);
	p = calloc(1, sizeof(*p));
	if (!p)
		return &lc_error_nomem;
	p->kind = kind;
	p->core_fd = -1;
	p->mem_fd = -1;
	p->pagemap_fd = -1;
	err = lc_memory_create(&p->mem);
	if (err) {
		free(p);
		return err;
	}
	*ret = p;
	return NULL;
}

/* A callback program's whole address space comes from its callback. */
struct callback {
	lc_read_fn *read;
	void *arg;
};

static int callback_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct callback *c = arg;

	return c->read(c->arg, addr, buf, len);
}

static const struct lc_mem_source callback_source = {
	.name = "callback",
	.read = callback_read,
	.destroy = free,
};

struct lc_error *lc_program_create_callback(lc_read_fn *read, void *arg,
					    struct lc_program **ret)
{
	struct lc_program *t;
	struct callback *c;
	struct lc_error *err;

	if (!read)
		return lc_error_create(LC_ERR_INVALID, "no read callback");
	c = malloc(sizeof(*c));
	if (!c)
		return &lc_error_nomem;
	*c = (struct callback){ read, arg };
	err = lc_program_new(LC_PROGRAM_CALLBACK, &t);
	if (err) {
		free(c);
		return err;
	}
	err = lc_memory_add_space(t->mem, 0, &callback_source, c);
	if (err) {	/* c is not the memory's */
		free(c);
		lc_program_destroy(t);
		return err;
	}
	*ret = t;
	return NULL;
}

struct lc_error *lc_program_add_module(struct lc_program *t, const char *path,
				       uint64_t bias)
{
	Dwfl_Module *mod;
	char *real;
	const char *kind = lc_file_unsafe(path);

	if (kind)	/* libdwfl would open it and wait */
		return lc_error_create(LC_ERR_FORMAT,
				       "'%s' is %s, not a regular file: not opened",
				       path, kind);
	if (!t->dwfl) {
		t->dwfl = dwfl_begin(&offline_callbacks);
		if (t->dwfl)
			lc_debuginfod_hook(t->dwfl);
		if (!t->dwfl)
			return lc_error_create(LC_ERR_NOMEM, "dwfl_begin: %s",
					       dwfl_errmsg(-1));
	}
	/* Named by its real path, as the kernel names a mapped file: the
	 * same name as from the program's core or the live process
	 * (lc_program_module_name). */
	real = realpath(path, NULL);
	dwfl_report_begin_add(t->dwfl);
	mod = dwfl_report_elf(t->dwfl, real ? real : path, path, -1, bias,
			      false);
	dwfl_report_end(t->dwfl, NULL, NULL);
	free(real);
	if (!mod)
		return lc_error_create(LC_ERR_FORMAT, "cannot load '%s': %s",
				       path, dwfl_errmsg(-1));
	lc_program_file_segments(t);
	/* A new module may hold the VM: the layers above look again. */
	t->generation++;
	return NULL;
}

struct lc_error *lc_program_add_module_section(struct lc_program *t,
					       const char *path,
					       const char *section,
					       uint64_t addr)
{
	const char *why;
	int fd = lc_open_regular(path, &why);
	Elf *elf;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	struct lc_error *err = NULL;
	bool found = false;
	uint64_t bias = 0;

	if (fd < 0)
		return lc_error_create(LC_ERR_OS, "cannot open '%s': %s", path,
				       why);
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
	return lc_program_add_module(t, path, bias);
}

struct lc_error *lc_program_add_thread(struct lc_program *t, int tid,
				       const char *name, int signo,
				       const struct lc_frame_regs *frames,
				       size_t nframes)
{
	struct lc_program_thread *th;
	void *p;

	if (t->kind == LC_PROGRAM_CORE)
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

struct lc_error *lc_program_add_region(struct lc_program *t, uint64_t start,
				       uint64_t end, bool writable)
{
	if (t->kind == LC_PROGRAM_CORE)
		return lc_error_create(LC_ERR_INVALID,
				       "regions are added to callback targets only");
	if (end <= start)
		return lc_error_create(LC_ERR_INVALID,
				       "empty region 0x%" PRIx64 "-0x%" PRIx64,
				       start, end);
	return lc_memory_add(t->mem, start, end,
			     LC_MEM_REGION | (writable ? LC_MEM_WRITABLE : 0),
			     NULL, NULL);
}

struct lc_error *lc_program_set_process(struct lc_program *t, int pid,
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

void lc_program_set_signal(struct lc_program *t, int signo, int si_code,
			   uint64_t fault_addr)
{
	t->signo = signo;
	t->si_code = si_code;
	t->fault_addr = fault_addr;
	t->have_siginfo = signo != 0;
}

void lc_program_destroy(struct lc_program *t)
{
	if (!t)
		return;
	/* libdwfl first: it may still use the threads' stops. */
	if (t->dwfl && t->kind == LC_PROGRAM_LIVE) {
		dwfl_end(t->dwfl);
		t->dwfl = NULL;
	}
	lc_program_detach(t);
	lc_program_copy_drop(t);
	if (t->mem_fd >= 0)
		close(t->mem_fd);
	if (t->pagemap_fd >= 0)
		close(t->pagemap_fd);
	free(t->shared);
	for (size_t i = 0; i < t->nthreads; i++) {
		free(t->threads[i].frames);
		free(t->threads[i].name);
	}
	lc_memory_destroy(t->mem);
	if (t->dwfl)
		dwfl_end(t->dwfl);
	if (t->core_elf)
		elf_end(t->core_elf);
	if (t->dwfl_elf)
		elf_end(t->dwfl_elf);
	if (t->dwfl_map)
		munmap(t->dwfl_map, t->dwfl_map_size);
	if (t->core_fd >= 0)
		close(t->core_fd);
	free(t->threads);
	free(t->tid_index);
	free(t->core_path);
	free(t->damage);
	free(t->exe_path);
	free(t->types_path);
	free(t->exe_build_id);
	free(t->core_build_id);
	free(t->core_exe_path);
	for (size_t i = 0; i < t->nmissing_listed; i++) {
		free(t->missing[i].path);
		free(t->missing[i].why);
		free(t->missing[i].build_id);
	}
	free(t->missing);
	for (size_t i = 0; i < t->nfiles; i++)
		free(t->files[i].path);
	free(t->files);
	for (size_t i = 0; i < t->nexec; i++)
		free(t->exec[i].name);
	free(t->exec);
	lc_symnames_free(t->symnames);
	free(t);
}

static int thread_cb(Dwfl_Thread *thread, void *arg)
{
	struct lc_program *p = arg;
	pid_t tid = dwfl_thread_tid(thread);
	void *v = realloc(p->threads, (p->nthreads + 1) * sizeof(*p->threads));

	if (!v)
		return DWARF_CB_ABORT;
	p->threads = v;
	memset(&p->threads[p->nthreads], 0, sizeof(*p->threads));
	p->threads[p->nthreads].tid = tid;
	p->nthreads++;
	return DWARF_CB_OK;
}

void lc_program_list_threads(struct lc_program *p)
{
	if (p->nthreads == 0 && p->dwfl && p->dwfl_attached)
		dwfl_getthreads(p->dwfl, thread_cb, p);
}

bool lc_program_start_from(Dwfl_Thread *thread, uint64_t pc, uint64_t sp)
{
	Dwarf_Word v = sp, ip = pc;

	if (!dwfl_thread_state_registers(thread, LC_REG_SP, 1, &v) ||
	    !dwfl_thread_state_registers(thread, LC_REG_PC, 1, &ip))
		return false;
	dwfl_thread_state_register_pc(thread, pc);
	return true;
}
