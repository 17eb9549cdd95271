/* The program layer: a process image -- a core file, a live process or
 * what a debugger describes through callbacks -- with its memory
 * (mem/), modules and symbols (libdwfl), threads, the facts a report
 * states about the process (signal, pid, build-ids, truncation) and, for
 * live processes, the ptrace attachment.  It knows nothing of Lua.
 *
 * Ownership: a program owns its memory, its Dwfl, the core's Elf and fd,
 * its threads and every string below; lc_program_destroy frees them (and
 * lets a live process's threads go first).  Layers above keep their own
 * caches and watch `generation`, which goes up whenever the modules
 * change. */
#ifndef LC_PROGRAM_H
#define LC_PROGRAM_H

#include <stdbool.h>
#include <stdint.h>
#include <elfutils/libdwfl.h>

#include "base/base.h"
#include "mem/memory.h"

/* The search path of separate debug files every Dwfl of the library
 * uses (lc_set_debuginfo_path); NULL: libdwfl's default. */
extern char *lc_debuginfo_path;

#define LC_NREGS	17	/* x86_64 DWARF registers 0-16 (rip = 16) */
#define LC_REG_SP	7
#define LC_REG_PC	16

enum lc_program_kind {
	LC_PROGRAM_CORE,	/* a core file and the files it names */
	LC_PROGRAM_LIVE,	/* a running process (ptrace, process_vm_readv) */
	LC_PROGRAM_CALLBACK,	/* memory, modules and threads handed in */
};

struct lc_program_thread {
	int tid;
	int signo;		/* pr_cursig; live: the signal to hand back */
	uint64_t regs[LC_NREGS];	/* DWARF x86_64 numbering, from pr_reg */
	bool have_regs;
	/* Live: stopped before it ran an instruction of its own
	 * (lc_program_thread_born), asked once. */
	bool born, born_known;
	/* Live: stopped in its parent's side of clone, just after the
	 * system call, where the wrapper has no unwind info (glibc ends it
	 * before the syscall) and its caller's return address is at [rsp]:
	 * the unwinder starts at the caller, and this frame (pc, sp) goes
	 * back in front.  0 otherwise. */
	uint64_t clone_pc, clone_sp;
	/* Set by the unwinder for one unwinding: start from this pc and
	 * stack pointer instead of the registers' (the frame at the
	 * registers is code no unwind information covers, whose caller the
	 * VM family found: lc_state_probe.foreign); 0 otherwise. */
	uint64_t from_pc, from_sp;	/* (only these two then: the other
					   registers are not known there) */
	int held;		/* live: its slot in the held list, -1 none */
	/* Live, not stopped (lc_program_list_threads): only regs[7] (sp)
	 * and regs[16] (pc) are known, from its system call; or it was
	 * running, and nothing is. */
	bool sp_pc_only, running;
	char *name;		/* callback programs: as the debugger names it */
	/* Callback programs: the machine frames a debugger unwound. */
	struct lc_frame_regs *frames;
	size_t nframes;
};

/* A file a core names whose image could not be used, so that its
 * symbols and DWARF are missing (core.c). */
struct lc_program_missing {
	char *path;		/* as the core names it */
	char *why;		/* strerror, or why the file there is not it */
	char *build_id;		/* the core's for it, hex, or NULL */
	bool exe;		/* the main program */
};

#define LC_MISSING_MAX	16	/* files listed; nmissing counts them all */
/* A file the process mapped, per a core's NT_FILE note. */
struct lc_mapped_file {
	uint64_t start, end;
	char *path;		/* as the kernel names it: symlinks resolved */
};

/* Executable memory that no module explains: JIT code, a trampoline, a
 * file that is no ELF image. */
struct lc_exec_region {
	uint64_t start, end;
	char *name;		/* "[anon:exec]", or the mapping's own name */
	bool anon;		/* no file behind it: never a module's code,
				   whatever module libdwfl files it under */
};

struct lc_symnames;

struct lc_program {
	enum lc_program_kind kind;
	/* Where the threads' registers come from elsewhere (the sampler's
	 * copies): told the unwinder's from_pc and from_sp of thread tid
	 * (lc_program_thread), 0 and 0 to clear them.  NULL otherwise. */
	void (*unwind_from)(void *arg, int tid, uint64_t pc, uint64_t sp);
	void *unwind_from_arg;
	struct lc_memory *mem;
	unsigned generation;	/* +1 on every change of the modules */

	Dwfl *dwfl;		/* NULL: no module known */
	bool dwfl_attached;	/* libdwfl can unwind the threads itself */
	/* Callback programs: libdwfl attached to unwind on from a frame the
	 * debugger could not unwind (native/unwind.c), one thread at a
	 * time (cb_tid), from its given frames. */
	bool cb_attached;
	int cb_tid;
	Elf *core_elf;
	Elf *dwfl_elf;		/* the core as libdwfl reads it, when not
				   core_elf (core.c): dwfl_map, */
	void *dwfl_map;		/* a private mapping of the core with its
				   unsafe file names left out, its runs of
				   PT_LOADs merged */
	size_t dwfl_map_size;
	int core_fd;
	size_t core_size;
	char *core_path;
	char *exe_path;
	int pid;
	/* Where the Lua layout comes from when the user says
	 * (lc_target_set_layout): an ELF file with DWARF for it, or a
	 * release's built-in layout (50406); NULL and 0 otherwise. */
	char *types_path;
	int layout_release;

	/* Live programs (live.c). */
	bool detached;
	bool not_stopped;	/* live, its threads listed, never seized */
	/* The thread that stands for the process in /proc and for
	 * process_vm_readv: pid, or a live thread of it where the leader
	 * is a zombie (it called pthread_exit, the others run on). */
	int reader;
	int mem_fd;		/* /proc/PID/mem, -1 if none */
	int pagemap_fd;		/* /proc/PID/pagemap, -1 if none */
	/* Its shared writable mappings, in address order: another process
	 * may write their pages, so the scan never skips them. */
	uint64_t (*shared)[2];
	size_t nshared;
	bool copied;		/* its memory is served by a copy (copy.c) */
	void *copy_prep;	/* buffers made ready before the stop */
	uint64_t copy_outside;	/* reads the copy could not serve */
	double stop_start;	/* CLOCK_MONOTONIC seconds of the first stop */
	double stop_seconds;	/* from the first stop to the detach */

	/* What the report states about the process. */
	int signo, si_code;
	uint64_t fault_addr;
	bool have_siginfo;
	bool truncated;		/* the file ends before its segments do */
	bool notes_missing;	/* ... before its notes (gdb writes them last) */
	char *damage;		/* what of its headers or notes is damaged (the
				   first found), or NULL */
	char fname[17];		/* NT_PRPSINFO pr_fname */
	uint64_t entry;		/* NT_AUXV AT_ENTRY: in the executable */
	uint64_t at_phdr, at_phnum;	/* NT_AUXV: its program headers */
	char *exe_build_id;	/* of the executable given, hex */
	char *core_build_id;	/* of the main program in the core, hex */
	char *core_exe_path;	/* the main program's path per the core */
	bool build_id_mismatch;
	/* Cores: the files it names that could not be used, the executable
	 * first; at most LC_MISSING_MAX listed. */
	struct lc_program_missing *missing;
	size_t nmissing, nmissing_listed;

	struct lc_program_thread *threads;
	size_t nthreads;
	/* Cores: thread notes left out, as copies of another thread (its
	 * tid or stack pointer) or past the first LC_CORE_THREADS. */
	size_t thread_copies, threads_over;
	int *tid_index;		/* (tid, index) by tid, for libdwfl (core.c) */
	bool threads_listed;	/* lc_program_list_threads asked libdwfl */

	struct lc_mapped_file *files;	/* cores: NT_FILE, in its order */
	size_t nfiles;
	struct lc_exec_region *exec;	/* symbol.c */
	size_t nexec;
	struct lc_symnames *symnames;	/* lc_program_symbol's names */
};

/* ---- construction (core.c, program.c, live.c) ---- */

/* An empty program of that kind with an empty memory: what each
 * constructor starts from (lc_program_destroy frees it). */
struct lc_error *lc_program_new(enum lc_program_kind kind,
				struct lc_program **ret);

struct lc_error *lc_program_open_core(const char *core_path,
				      const char *exe_path,
				      struct lc_program **ret);
/* Memory behind read (lc_read_fn of luacore.h). */
struct lc_error *lc_program_create_callback(lc_read_fn *read, void *arg,
					    struct lc_program **ret);
struct lc_error *lc_program_add_module(struct lc_program *p, const char *path,
				       uint64_t bias);
struct lc_error *lc_program_add_module_section(struct lc_program *p,
					       const char *path,
					       const char *section,
					       uint64_t addr);
struct lc_error *lc_program_add_thread(struct lc_program *p, int tid,
				       const char *name, int signo,
				       const struct lc_frame_regs *frames,
				       size_t nframes);
struct lc_error *lc_program_add_region(struct lc_program *p, uint64_t start,
				       uint64_t end, bool writable);
struct lc_error *lc_program_set_process(struct lc_program *p, int pid,
					const char *executable,
					const char *core);
void lc_program_set_signal(struct lc_program *p, int signo, int si_code,
			   uint64_t fault_addr);

/* A live program not yet stopped: modules, symbols, CFI and memory
 * regions read; with proc_attach, libdwfl unwinds its threads through
 * ptrace itself (they must be stopped by then). */
struct lc_error *lc_program_prepare_live(int pid, bool proc_attach,
					 struct lc_program **ret);
/* Seize and stop every thread of a prepared live program. */
struct lc_error *lc_program_seize(struct lc_program *p);
/* The threads of live program p, never stopped: each one's stack pointer
 * and pc where it sleeps in the kernel, per /proc/PID/task/TID/syscall,
 * or marked running. */
struct lc_error *lc_program_list_running(struct lc_program *p);
/* For such a thread, whose unwinding stopped at a frame (its pc and sp)
 * that finds its CFA from rbp, which no system call shows: the frame
 * pointer that frame keeps, guessed from the stack above sp (a word that
 * points higher up the stack, beside the return address of a direct
 * call to that frame's function, as its prologue pushed them).  Sets it
 * as the thread's rbp, for an unwinding again; false when no word
 * fits. */
bool lc_program_guess_fp(struct lc_program *t, int tid, uint64_t pc,
			 uint64_t sp);
/* Read a live program's /proc/PID/maps again (its heap grows, a VM is
 * created after the program was prepared): the scan's regions and the
 * executable mappings of no module, as of now. */
void lc_program_reread_regions(struct lc_program *p);
/* Let a live program's threads go (idempotent). */
void lc_program_detach(struct lc_program *p);
double lc_program_stopped_seconds(const struct lc_program *p);

void lc_program_destroy(struct lc_program *p);

/* List the modules' file-backed segments as fallback memory again, after
 * the modules changed (core.c). */
void lc_program_file_segments(struct lc_program *p);

/* Note what of a core's headers or notes is damaged (the first one
 * found is kept). */
void lc_program_damage(struct lc_program *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- files (program.c) ---- */

/* What is at path if it must not be opened -- a FIFO ("a FIFO"), a
 * device, a socket, a directory -- or NULL: a regular file, or nothing
 * there.  Asks stat only: opening a FIFO blocks until a writer comes,
 * and opening a device may act on it. */
const char *lc_file_unsafe(const char *path);
/* Open path read-only if it is a regular file, without ever blocking:
 * open(O_NONBLOCK | O_NOCTTY), then fstat.  The fd, or -1 with *why
 * saying what was there instead ("a FIFO", strerror) -- static. */
int lc_open_regular(const char *path, const char **why);

/* ---- use ---- */

/* The threads, listing them through libdwfl first when nothing did. */
void lc_program_list_threads(struct lc_program *p);
/* A live thread, stopped, that had not run an instruction of its own
 * yet: clone has just returned 0 to it, and its new stack holds nothing
 * to unwind (what it holds may be what an exited thread left).  False
 * for any other program or thread. */
bool lc_program_thread_born(struct lc_program *p, int tid);
/* Live: thread tid stopped where its clone returned in the parent, after
 * the system call (see lc_program_thread.clone_pc): true with that frame's
 * pc and sp, once its unwinding started. */
bool lc_program_thread_clone(const struct lc_program *p, int tid,
			     uint64_t *pc, uint64_t *sp);
/* For a set_initial_registers callback: libdwfl starts thread at pc with
 * stack pointer sp, every other register unknown (lc_program_thread
 * from_pc, from_sp). */
bool lc_program_start_from(Dwfl_Thread *thread, uint64_t pc, uint64_t sp);
/* ---- names (symbol.c) ---- */

/* A symbol as a person reads it: without the linker's version suffix
 * ("@@GLIBC_2.34"), demangled if it is a C++ name (as gdb's bt and
 * eu-stack show it, parameters included).  malloc'd; NULL for NULL or
 * when memory ran out.  With linkage, *linkage gets the symbol without
 * its version when it was demangled (malloc'd), else NULL. */
char *lc_symbol_display(const char *raw, char **linkage);
/* Symbol name at addr in the program's modules, as lc_symbol_display
 * gives it, or NULL.  Borrowed: valid until the program is destroyed. */
const char *lc_program_symbol(struct lc_program *p, uint64_t addr);
void lc_symnames_free(struct lc_symnames *s);
/* Read ahead, for at most seconds, the DWARF that turning a pc into a
 * function and a line needs: every module's address ranges, then the
 * line tables of each unit of the module at addr (a VM's), so that the
 * first stacks are decoded about as fast as later ones. */
void lc_program_warm_lines(struct lc_program *p, uint64_t addr,
			   double seconds);
/* The name of a module, the same for every kind of program: the path of
 * the file the process mapped, as the kernel names it (a core's NT_FILE
 * note, a live process's /proc/PID/maps; callback programs get the real
 * path of the file they are given), "[vdso]" for the kernel's vDSO.
 * Borrowed: valid until the modules change. */
const char *lc_program_module_name(struct lc_program *p, Dwfl_Module *mod);
/* Record executable memory of no module (name NULL: "[anon:exec]"). */
struct lc_error *lc_program_add_exec(struct lc_program *p, uint64_t start,
				     uint64_t end, const char *name, bool anon);
/* The name of the executable memory of no module holding addr, or NULL;
 * *anon says whether it has no file behind it.  Borrowed. */
const char *lc_program_exec_name(const struct lc_program *p, uint64_t addr,
				 bool *anon);

/* ---- a stopped live program's memory, copied (copy.c) ---- */

struct lc_copy_stats {
	uint64_t mapped;	/* bytes of writable mappings */
	uint64_t copied;	/* bytes copied (untouched pages left out) */
	double seconds;
	bool complete;		/* every writable mapping whole */
};
/* Save the stopped threads' registers and copy the writable memory
 * (the thread stacks first; at most limit bytes, for at most budget_s
 * seconds), which then serves reads in front of the process: the
 * program can be detached and decoded after.  Only while every thread is
 * stopped. */
struct lc_error *lc_program_copy(struct lc_program *t, uint64_t limit,
				 double budget_s, struct lc_copy_stats *ret);
/* Before the stop: buffers for lc_program_copy, the pages the process
 * has touched faulted in (at most limit bytes), so that the stop does
 * not wait for them. */
struct lc_error *lc_program_copy_prepare(struct lc_program *t,
					 uint64_t limit);
/* Free the buffers of lc_program_copy_prepare not used (destroy does). */
void lc_program_copy_drop(struct lc_program *t);

/* ---- debuginfod, bounded (debuginfod.c) ---- */

/* A session's debuginfod client gets the progress function that says
 * what it waits for and gives up at the run's budget (once the URLs
 * were taken: lc_debuginfod_take; else nothing).  Call after
 * dwfl_begin. */
void lc_debuginfod_hook(Dwfl *dwfl);
/* dwfl_standard_find_debuginfo and dwfl_build_id_find_elf, asking
 * debuginfod at most once per build-id and kind in the run. */
int lc_debuginfod_find_debuginfo(Dwfl_Module *mod, void **userdata,
				 const char *modname, Dwarf_Addr base,
				 const char *file_name,
				 const char *debuglink_file,
				 GElf_Word debuglink_crc,
				 char **debuginfo_file_name);
int lc_debuginfod_find_elf(Dwfl_Module *mod, void **userdata,
			   const char *modname, Dwarf_Addr base,
			   char **file_name, Elf **elfp);

/* ---- live processes: ptrace helpers (live.c) ---- */

struct user_regs_struct;
/* A thread's registers as PTRACE_GETREGS gives them, in DWARF x86_64
 * numbering (rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip), into r
 * (LC_NREGS). */
void lc_live_user_regs(const struct user_regs_struct *u, uint64_t *r);
/* A stopped thread's registers, raw into *u, into r as the unwinder is
 * to start from: in the parent's side of clone, just after the system
 * call, its caller's (*clone_pc and *clone_sp then get the clone frame,
 * else are left as they are).  false if they cannot be read. */
bool lc_live_thread_regs(int tid, struct user_regs_struct *u, uint64_t *r,
			 uint64_t *clone_pc, uint64_t *clone_sp);

/* Why ptrace was refused (err: errno), and what to do. */
struct lc_error *lc_live_refused(int pid, int err);
/* Threads held (seized, stopped or about to be), for
 * lc_live_release_all: hold before PTRACE_SEIZE, so that a handler that
 * runs at any point finds the thread.  lc_live_hold returns its slot (-1
 * if the list is full); lc_live_hold_sig sets the signal to hand back on
 * detach, once the stop said which. */
int lc_live_hold(int tid, int sig);
void lc_live_hold_sig(int slot, int sig);
void lc_live_unhold(int slot);
/* The process's state per /proc/PID/stat ('R', 'S', 'Z'...; '?' if it
 * cannot be read), and a thread of it to read it through (pid, or a
 * live thread where the leader is a zombie; 0 if none is alive): a
 * clear error when there is no process, a kernel thread, or a process
 * that has exited. */
struct lc_error *lc_live_check(int pid, int *reader);
/* A thread of pid that has not exited, other than a zombie leader, or 0
 * if none is left. */
int lc_live_reader(int pid);
/* Wait for tid's stop after PTRACE_INTERRUPT: 0, with *sig the signal
 * that stopped it first if one did (to hand back on detach); -1 if the
 * thread is gone. */
int lc_live_wait_stop(int tid, int *sig);
/* The same, polling for up to spin_s seconds before it sleeps: the
 * sampler's stops, where waking up late keeps the thread stopped. */
int lc_live_wait_stop_spin(int tid, int *sig, double spin_s);
/* /proc/PID/task/TID/comm, malloc'd, or NULL. */
char *lc_live_comm(int pid, int tid);
/* process_vm_readv of pid: 0, or -1 if any byte is unreadable. */
int lc_live_read(int pid, uint64_t addr, void *buf, size_t len);

#endif /* LC_PROGRAM_H */
