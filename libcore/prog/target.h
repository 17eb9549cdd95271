/* The target: a process image (core, live process or callback) and its
 * memory.  Transitional: being split into mem/ and prog/.  Not installed. */
#ifndef LC_TARGET_H
#define LC_TARGET_H

#include <stdbool.h>
#include <stdint.h>
#include <elfutils/libdwfl.h>

#include "base/base.h"

/* ---- targets (target.c) ---- */

/* A range of target memory backed by bytes mapped in this process. */
struct lc_segment {
	uint64_t start, end;	/* [start, end) */
	const uint8_t *data;	/* bytes for [start, end) */
	bool writable;		/* the mapping was writable in the target */
};

struct lc_target_thread {
	int tid;
	int signo;		/* pr_cursig */
	uint64_t regs[17];	/* DWARF x86_64 numbering, from pr_reg */
	bool have_regs;
	char *name;		/* callback targets: as the debugger names it */
	/* Callback targets: the machine frames a debugger unwound. */
	struct lc_frame_regs *frames;
	size_t nframes;
};

/* Callback targets read whole pages through the callback and keep the
 * last LC_CACHE_PAGES of them until lc_target_invalidate. */
#define LC_PAGE_SIZE	4096
#define LC_CACHE_PAGES	256

struct lc_page {
	uint64_t addr;		/* page address */
	bool valid;		/* data holds the page */
	bool bad;		/* the whole page could not be read */
	uint8_t data[LC_PAGE_SIZE];
};

struct lc_layout;

struct lc_target {
	lc_read_fn *read_cb;	/* callback targets; NULL for cores */
	void *read_arg;
	bool caching;		/* lc_target_set_caching */
	struct lc_page *cache;	/* LC_CACHE_PAGES, direct-mapped */

	/* Core memory first, then the modules' file-backed segments for what
	 * the core does not hold (text, rodata).  Each array sorted by start. */
	struct lc_segment *core_segs;
	size_t ncore_segs;
	struct lc_segment *file_segs;
	size_t nfile_segs;
	/* Callback targets: the mappings a debugger listed (data NULL),
	 * sorted by start; what the scan for idle VMs reads. */
	struct lc_segment *regions;
	size_t nregions;

	Dwfl *dwfl;
	bool dwfl_attached;	/* dwfl_core_file_attach succeeded */
	Elf *core_elf;
	int core_fd;
	size_t core_size;
	char *core_path;
	char *exe_path;

	int pid;
	/* Live targets (live.c). */
	bool live;
	bool detached;
	int mem_fd;		/* /proc/PID/mem, -1 if none */
	double stop_start;	/* CLOCK_MONOTONIC seconds of the first stop */
	double stop_seconds;	/* from the first stop to the detach */
	int signo, si_code;
	uint64_t fault_addr;
	bool have_siginfo;
	bool truncated;		/* the file ends before its segments do */
	bool notes_missing;	/* ... before its notes (gdb writes them last) */
	char fname[17];		/* NT_PRPSINFO pr_fname */
	char *exe_build_id;	/* of the executable given, hex */
	char *core_build_id;	/* of the main program in the core, hex */
	char *core_exe_path;	/* the main program's path per the core */
	bool build_id_mismatch;

	struct lc_target_thread *threads;
	size_t nthreads;

	struct lc_layout *layout;	/* NULL until resolved (layout.c) */
	struct lc_error *layout_err;	/* why no layout */
	bool layout_tried;

	void *pc_cache;		/* unwind.c: DWARF facts per pc */
	/* Other ELF handles this target opened for callback modules. */
	Elf **extra_elfs;
	int *extra_fds;
	size_t nextra;
};

/* Fast internal read: 0 on success, -1 if any byte is unreadable. */
int lc_read(struct lc_target *t, uint64_t addr, void *buf, size_t len);
/* Called with every lc_read when set: the fuzzing harness learns which
 * memory the decoder reads.  NULL (the default) costs one branch. */
extern void (*lc_read_hook)(uint64_t addr, size_t len);
/* Where [addr, addr + len) of a core's memory lies in the core file's
 * image (elf_rawfile), or NULL: not a core, or memory the file does not
 * hold in one piece.  For the tools that damage cores on purpose. */
const uint8_t *lc_core_image_at(struct lc_target *t, uint64_t addr,
				size_t len);
int lc_read_u64(struct lc_target *t, uint64_t addr, uint64_t *ret);
int lc_read_u32(struct lc_target *t, uint64_t addr, uint32_t *ret);
int lc_read_u8(struct lc_target *t, uint64_t addr, uint8_t *ret);
/* Reads an unsigned integer of "size" (1, 2, 4, 8) bytes. */
int lc_read_uint(struct lc_target *t, uint64_t addr, unsigned size,
		 uint64_t *ret);
/* Symbol name at addr in the target's modules, or NULL.  Borrowed from
 * libdwfl: valid until the target is destroyed. */
const char *lc_target_symbol(struct lc_target *t, uint64_t addr);
/* True if [addr, addr+len) lies in a writable core segment (cheap
 * pre-check for pointer candidates).  Callback targets: always true. */
bool lc_target_is_data(struct lc_target *t, uint64_t addr, size_t len);

/* ---- live processes (live.c) ---- */

/* A live target not yet stopped: modules, symbols, CFI, layout and
 * memory regions read; with proc_attach, libdwfl unwinds its threads
 * through ptrace itself (they must be stopped by then). */
struct lc_error *lc_live_prepare(int pid, bool proc_attach,
				 struct lc_target **ret);
/* Why ptrace was refused (err: errno), and what to do. */
struct lc_error *lc_live_refused(int pid, int err);
/* Threads held stopped, for lc_live_release_all. */
void lc_live_hold(int tid, int sig);
void lc_live_unhold(int tid);
/* Wait for tid's stop after PTRACE_INTERRUPT: 0, with *sig the signal
 * that stopped it first if one did (to hand back on detach); -1 if the
 * thread is gone. */
int lc_live_wait_stop(int tid, int *sig);
/* The same, polling for up to spin_s seconds before it sleeps: the
 * sampler's stops, where waking up late keeps the thread stopped. */
int lc_live_wait_stop_spin(int tid, int *sig, double spin_s);
/* /proc/PID/task/TID/comm, malloc'd, or NULL. */
char *lc_live_comm(int pid, int tid);

#endif /* LC_TARGET_H */
