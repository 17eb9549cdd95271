/* Live targets: a running process, stopped with ptrace for as short a
 * time as a report needs.
 *
 * Threads are taken with PTRACE_SEIZE and stopped with PTRACE_INTERRUPT,
 * never with SIGSTOP: a seized thread in an interrupt stop is restarted
 * by the kernel if we die, even by SIGKILL, and no signal of ours is ever
 * queued to the process.  A signal that arrives while a thread is
 * stopped is handed back on detach.  Every thread is interrupted before
 * any is waited for.  Memory is read with process_vm_readv (never
 * written); modules and debug info come from libdwfl's Linux process
 * support, native unwinding from libdwfl over our own thread callbacks
 * (registers by PTRACE_GETREGS, memory through the program's memory).
 * Where the leader is a zombie (it called pthread_exit), /proc and
 * process_vm_readv are asked through a live thread (t->reader). */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prog/program.h"

#define LC_MAX_THREADS	65536
#define NR_CLONE	56	/* x86_64 system call numbers */
#define NR_CLONE3	435
#define LC_ATTACH_ROUNDS 16	/* re-reads of the thread list */

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = lc_debuginfod_find_debuginfo,
	.debuginfo_path = &lc_debuginfo_path,
};

/* Every thread any live target holds, for lc_live_release_all: a
 * signal handler may run it at any point, so it is a plain array of
 * plain ints, written in an order that leaves it valid at each step (the
 * signal, then the tid, then the count).  Slots are taken lowest first:
 * free_hint is at or below the lowest free one. */
#define LC_HELD_MAX	65536
static volatile int held[LC_HELD_MAX];
static volatile int held_sig[LC_HELD_MAX];
static volatile size_t nheld;
static size_t free_hint;
static volatile unsigned long releases;	/* release_all calls that let a thread go */

int lc_live_hold(int tid, int sig)
{
	size_t i;

	for (i = free_hint; i < nheld; i++)
		if (held[i] == 0)
			break;
	if (i == nheld) {
		if (nheld >= LC_HELD_MAX)
			return -1;
		held[i] = 0;
		nheld = i + 1;
	}
	held_sig[i] = sig;
	held[i] = tid;
	free_hint = i + 1;
	return (int)i;
}

void lc_live_hold_sig(int slot, int sig)
{
	if (slot >= 0 && (size_t)slot < nheld)
		held_sig[slot] = sig;
}

void lc_live_unhold(int slot)
{
	if (slot < 0 || (size_t)slot >= nheld)
		return;
	held[slot] = 0;
	if ((size_t)slot < free_hint)
		free_hint = (size_t)slot;
}

/* Let one held thread go, from a signal handler.  A thread that is
 * seized but not in a stop (the interrupt sent, its stop not yet come)
 * cannot be detached; it would stop a moment later and stay stopped for
 * as long as we are: stop it now, then let it go.  Waiting is bounded
 * by *budget (milliseconds, for all threads: one in uninterruptible
 * sleep stops only when it leaves it).  Only async-signal-safe calls. */
static bool release_one(int tid, int sig, int *budget)
{
	struct timespec ms = { 0, 1000000 };
	int status;

	if (ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig) == 0)
		return true;
	if (errno != ESRCH || ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
		return false;	/* gone, or not ours */
	for (;;) {
		pid_t r = waitpid(tid, &status, __WALL | WNOHANG);

		if (r == tid) {
			if (!WIFSTOPPED(status))
				return false;	/* it exited */
			if ((status >> 16) != PTRACE_EVENT_STOP)
				sig = WSTOPSIG(status);
			return ptrace(PTRACE_DETACH, tid, NULL,
				      (void *)(long)sig) == 0;
		}
		if ((r < 0 && errno != EINTR) || *budget <= 0)
			return false;
		nanosleep(&ms, NULL);
		--*budget;
	}
}

void lc_live_release_all(void)
{
	int saved = errno, budget = 2000;
	bool any = false;

	for (size_t i = 0; i < nheld; i++) {
		int tid = held[i];

		if (tid > 0) {
			any |= release_one(tid, held_sig[i], &budget);
			held[i] = 0;
		}
	}
	if (any)
		releases++;
	errno = saved;
}

unsigned long lc_live_releases(void)
{
	return releases;
}

void lc_live_stop_self(int sig)
{
	int saved = errno;
	struct sigaction dfl = { .sa_handler = SIG_DFL }, old;
	sigset_t set;

	lc_live_release_all();
	/* Stop as the signal would have stopped us, with the default
	 * action, and come back here on SIGCONT.  (In an orphaned process
	 * group the kernel drops it: nothing stops, and we go on.) */
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, &old);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigaction(sig, &old, NULL);
	errno = saved;
}

int lc_live_read(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* The live program's memory: process_vm_readv, or /proc/PID/mem where
 * the kernel has no process_vm_readv. */
static int proc_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	const struct lc_program *t = arg;
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (len == 0)
		return 0;
	n = process_vm_readv(t->reader, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (n < 0 && errno == ENOSYS && t->mem_fd >= 0)
		return pread(t->mem_fd, buf, len, (off_t)addr) == (ssize_t)len ?
		       0 : -1;
	return -1;
}

/* How much of [addr, addr + len) is private memory, from addr up to the
 * first shared mapping: 0 if addr is in one. */
static uint64_t private_run(const struct lc_program *t, uint64_t addr,
			    uint64_t len)
{
	size_t lo = 0, hi = t->nshared;

	/* The first shared mapping that ends after addr. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->shared[mid][1] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == t->nshared)
		return len;
	if (t->shared[lo][0] <= addr)
		return 0;
	return t->shared[lo][0] - addr < len ? t->shared[lo][0] - addr : len;
}

#define PM_PFN(e)	((e) & ((1ull << 55) - 1))

/* The page frame of the kernel's zero page, which backs memory that was
 * read and never written (by a reader like us: an older luacore, gcore),
 * or 0 where /proc/self/pagemap shows no frame numbers (without
 * CAP_SYS_ADMIN). */
static uint64_t zero_pfn(void)
{
	static uint64_t pfn = UINT64_MAX;

	if (pfn == UINT64_MAX) {
		volatile uint8_t *p = mmap(NULL, 4096, PROT_READ,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		uint64_t e = 0;

		pfn = 0;
		if (p != MAP_FAILED && fd >= 0) {
			(void)p[0];
			if (pread(fd, &e, 8, (off_t)((uintptr_t)p / 4096 * 8)) == 8 &&
			    (e >> 63))
				pfn = PM_PFN(e);
		}
		if (fd >= 0)
			close(fd);
		if (p != MAP_FAILED)
			munmap((void *)p, 4096);
	}
	return pfn;
}

/* Pages of a private mapping that /proc/PID/pagemap says are neither
 * present nor swapped out were never written by the process: a Lua VM
 * cannot be there; nor where the kernel's zero page stands in.  (Reading
 * them would fault each one in: the 8 MiB stacks of thousands of idle
 * threads cost seconds of stop.) */
static uint64_t proc_untouched(void *arg, uint64_t addr, uint64_t len)
{
	const struct lc_program *t = arg;
	uint64_t entries[2048], done = 0, zero = zero_pfn();

	if (t->pagemap_fd < 0 || (addr & 4095))
		return 0;
	len = private_run(t, addr, len);
	while (done < len) {
		uint64_t pages = (len - done + 4095) / 4096;
		size_t want = pages < 2048 ? (size_t)pages : 2048;
		ssize_t got = pread(t->pagemap_fd, entries, want * 8,
				    (off_t)((addr + done) / 4096 * 8));

		if (got < 8)
			break;
		for (size_t i = 0; i < (size_t)got / 8; i++) {
			/* bit 63 present, bit 62 swapped */
			if ((entries[i] >> 62) &&
			    !(zero && (entries[i] >> 63) &&
			      PM_PFN(entries[i]) == zero))
				return done;
			done += 4096;
			if (done >= len)
				return len;
		}
	}
	return done < len ? done : len;
}

static const struct lc_mem_source proc_source = {
	.name = "proc",
	.read = proc_read,
	.untouched = proc_untouched,
};

/* Why ptrace was refused, and what to do. */
struct lc_error *lc_live_refused(int pid, int err)
{
	char path[64], scope = '?';
	struct stat st;
	FILE *f;
	unsigned long long capeff = 0;
	char line[256];
	bool cap = false;

	f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	if (f) {
		int c = fgetc(f);

		if (c != EOF)
			scope = (char)c;
		fclose(f);
	}
	f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &capeff) == 1)
			cap = capeff & (1ull << 19);	/* CAP_SYS_PTRACE */
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &st) == 0 && st.st_uid != geteuid() && !cap)
		return lc_error_create(LC_ERR_OS,
			"cannot attach to process %d: %s: it belongs to uid %u and luacore runs as uid %u without CAP_SYS_PTRACE; run as that user or as root",
			pid, strerror(err), (unsigned)st.st_uid,
			(unsigned)geteuid());
	if (scope == '3')
		return lc_error_create(LC_ERR_OS,
			"cannot attach to process %d: %s: kernel.yama.ptrace_scope is 3 (no process may be traced) until the next reboot",
			pid, strerror(err));
	if (scope == '2' && !cap)
		return lc_error_create(LC_ERR_OS,
			"cannot attach to process %d: %s: kernel.yama.ptrace_scope is 2 (only CAP_SYS_PTRACE may trace); run as root or give luacore CAP_SYS_PTRACE",
			pid, strerror(err));
	if (scope == '1' && !cap)
		return lc_error_create(LC_ERR_OS,
			"cannot attach to process %d: %s: kernel.yama.ptrace_scope is 1 (only a parent may trace its children); run as root, give luacore CAP_SYS_PTRACE, or set kernel.yama.ptrace_scope to 0",
			pid, strerror(err));
	if (!cap && geteuid() == 0)
		return lc_error_create(LC_ERR_OS,
			"cannot attach to process %d: %s: root without CAP_SYS_PTRACE, as in a container started without it; start the container with --cap-add=SYS_PTRACE",
			pid, strerror(err));
	return lc_error_create(LC_ERR_OS,
		"cannot attach to process %d: %s (a seccomp filter or another tracer, such as a debugger already attached?)",
		pid, strerror(err));
}

/* The tids of the threads already held, as an open-addressing set (a
 * listing of thousands of threads is looked up in it tid by tid). */
struct tidset {
	int *v;			/* 0 free */
	size_t mask;
};

static struct lc_error *tidset_init(struct tidset *s,
				    const struct lc_program *t)
{
	size_t cap = 64;

	while (cap < 2 * t->nthreads)
		cap *= 2;
	s->v = calloc(cap, sizeof(*s->v));
	if (!s->v)
		return &lc_error_nomem;
	s->mask = cap - 1;
	for (size_t i = 0; i < t->nthreads; i++) {
		size_t h = (size_t)t->threads[i].tid * 2654435761u & s->mask;

		while (s->v[h] && s->v[h] != t->threads[i].tid)
			h = (h + 1) & s->mask;
		s->v[h] = t->threads[i].tid;
	}
	return NULL;
}

static bool tidset_has(const struct tidset *s, int tid)
{
	size_t h = (size_t)tid * 2654435761u & s->mask;

	while (s->v[h]) {
		if (s->v[h] == tid)
			return true;
		h = (h + 1) & s->mask;
	}
	return false;
}

/* /proc/PID/task/TID/NAME, one read of at most size - 1 bytes, ended
 * with a NUL: its length, or -1 (also when empty). */
static ssize_t task_file(int pid, int tid, const char *name, char *buf,
			 size_t size)
{
	char path[96];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", pid, tid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return n;
}

char *lc_live_comm(int pid, int tid)
{
	char buf[64];
	ssize_t got = task_file(pid, tid, "comm", buf, sizeof(buf));
	size_t n;

	if (got < 0)
		return NULL;
	n = (size_t)got;
	/* The kernel ends the name with a newline; the name itself may hold
	 * one (any byte but NUL: it is the executable's file name, or what
	 * the thread set), which the printers escape. */
	if (buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return strdup(buf);
}

/* Process tid has ended (it is a zombie) and is a child of ours, a
 * command we started: its exit status is ours to collect as its parent,
 * not a stop's to swallow. */
static bool our_child_ended(int tid)
{
	char path[64], line[128];
	long tgid = -1, ppid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	if (!(f = fopen(path, "re")))
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Tgid:", 5) == 0)
			tgid = strtol(line + 5, NULL, 10);
		else if (strncmp(line, "PPid:", 5) == 0)
			ppid = strtol(line + 5, NULL, 10);
	}
	fclose(f);
	return tgid == tid && ppid == (long)getpid();
}

int lc_live_wait_stop_spin(int tid, int *sig, double spin_s)
{
	double until = spin_s > 0 ? lc_now_s() + spin_s : 0;
	int status;

	*sig = 0;
	for (;;) {
		siginfo_t si;
		pid_t r;

		/* A look first, and the event taken only when it is a stop:
		 * the exit of a command we started is left to the caller,
		 * who waits for it (reaped here, its status would be lost). */
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)tid, &si, WEXITED | WSTOPPED | WNOWAIT |
			   __WALL | (until ? WNOHANG : 0)) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (si.si_pid == 0) {
			r = 0;
		} else if (si.si_code != CLD_TRAPPED &&
			   si.si_code != CLD_STOPPED && our_child_ended(tid)) {
			return -1;
		} else {
			r = waitpid(tid, &status, __WALL | WNOHANG);
		}
		if (r == 0) {
			/* The thread may be waiting for this very CPU (woken
			 * by the interrupt, it can be placed on the waker's):
			 * yield to it between polls. */
			sched_yield();
			if (lc_now_s() > until)
				until = 0;
			continue;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return -1;
		if (!WIFSTOPPED(status))
			continue;
		/* An interrupt stop or a group-stop (SIGSTOP from
		 * elsewhere) is an event stop; anything else is a signal
		 * that arrived first, the program's own: hand it back on
		 * detach, never swallow it. */
		if ((status >> 16) != PTRACE_EVENT_STOP)
			*sig = WSTOPSIG(status);
		return 0;
	}
}

int lc_live_wait_stop(int tid, int *sig)
{
	return lc_live_wait_stop_spin(tid, sig, 0);
}

/* Fields of /proc/PID/task/TID/stat (TID 0: the leader's): the state
 * letter, the parent, the flags, the name; false if it cannot be read. */
static bool stat_fields(int pid, int tid, char *state, int *ppid,
			unsigned long *flags, char *comm, size_t ncomm)
{
	char buf[1024], *open_, *close_;

	/* The task's own stat, also for the leader: the process's adds up
	 * the times of every thread (slow with thousands of them). */
	if (task_file(pid, tid ? tid : pid, "stat", buf, sizeof(buf)) < 0)
		return false;
	/* "pid (comm) S ppid pgrp session tty tpgid flags ...": the name
	 * may hold spaces and parentheses, the last ')' ends it. */
	open_ = strchr(buf, '(');
	close_ = strrchr(buf, ')');
	if (!open_ || !close_ || close_ < open_ ||
	    sscanf(close_ + 1, " %c %d %*d %*d %*d %*d %lu", state, ppid,
		   flags) != 3)
		return false;
	if (comm && ncomm) {
		size_t k = (size_t)(close_ - open_ - 1);

		if (k >= ncomm)
			k = ncomm - 1;
		memcpy(comm, open_ + 1, k);
		comm[k] = '\0';
	}
	return true;
}

int lc_live_reader(int pid)
{
	char path[64], state = '?';
	int ppid, reader = 0;
	unsigned long flags;
	DIR *d;
	struct dirent *de;

	if (stat_fields(pid, 0, &state, &ppid, &flags, NULL, 0) &&
	    state != 'Z' && state != 'X')
		return pid;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	while (d && !reader && (de = readdir(d))) {
		int tid = atoi(de->d_name);

		if (tid > 0 && tid != pid &&
		    stat_fields(pid, tid, &state, &ppid, &flags, NULL, 0) &&
		    state != 'Z' && state != 'X')
			reader = tid;
	}
	if (d)
		closedir(d);
	return reader;
}

#define PF_KTHREAD_FLAG	0x00200000	/* include/linux/sched.h: PF_KTHREAD */

struct lc_error *lc_live_check(int pid, int *reader)
{
	char state = '?', comm[64] = "";
	int ppid = 0;
	unsigned long flags = 0;

	*reader = 0;
	if (!stat_fields(pid, 0, &state, &ppid, &flags, comm, sizeof(comm))) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d", pid);
		if (access(path, F_OK) < 0)
			return lc_error_create(LC_ERR_NOT_FOUND,
					       "no process %d", pid);
		return lc_error_create(LC_ERR_OS,
			"cannot read /proc/%d/stat: %s", pid, strerror(errno));
	}
	if (flags & PF_KTHREAD_FLAG)
		return lc_error_create(LC_ERR_UNSUPPORTED,
			"process %d (%s) is a kernel thread: it has no user memory and runs no Lua",
			pid, comm);
	*reader = lc_live_reader(pid);
	if (!*reader)
		return lc_error_create(LC_ERR_NOT_FOUND,
			"process %d (%s) has exited: it is a zombie that its parent (process %d) has not reaped yet, and nothing of it is left to read",
			pid, comm, ppid);
	return NULL;
}

/* Whether a stopped thread had not run yet: its registers are those clone
 * gave it, rax 0 on return from clone or clone3 (orig_rax keeps the call
 * until the thread makes a system call of its own or is interrupted). */
bool lc_program_thread_born(struct lc_program *t, int tid)
{
	struct user_regs_struct u;

	if (t->kind != LC_PROGRAM_LIVE)
		return false;
	for (size_t i = 0; i < t->nthreads; i++) {
		struct lc_program_thread *th = &t->threads[i];

		if (th->tid != tid)
			continue;
		if (!th->born_known && !t->detached) {
			th->born_known = true;
			th->born = ptrace(PTRACE_GETREGS, tid, NULL, &u) == 0 &&
				   u.rax == 0 && (u.orig_rax == NR_CLONE ||
						  u.orig_rax == NR_CLONE3);
		}
		return th->born;
	}
	return false;
}

/* A thread's record, before it is stopped. */
static struct lc_error *add_live_thread(struct lc_program *t, int tid, int slot,
					char *name)
{
	void *p = realloc(t->threads, (t->nthreads + 1) * sizeof(*t->threads));

	if (!p) {
		free(name);
		return &lc_error_nomem;
	}
	t->threads = p;
	memset(&t->threads[t->nthreads], 0, sizeof(*t->threads));
	t->threads[t->nthreads].tid = tid;
	t->threads[t->nthreads].held = slot;
	t->threads[t->nthreads].name = name;
	t->nthreads++;
	return NULL;
}

/* Drop thread i (gone, or not stopped): it is let go and forgotten. */
static void drop_thread(struct lc_program *t, size_t i)
{
	lc_live_unhold(t->threads[i].held);
	free(t->threads[i].name);
	memmove(&t->threads[i], &t->threads[i + 1],
		(t->nthreads - i - 1) * sizeof(*t->threads));
	t->nthreads--;
}

/* Seize every thread listed in /proc/PID/task and not yet known, and
 * interrupt each right away; then wait for their stops.  Interrupting all
 * first lets the threads stop side by side, rather than one round trip
 * (wake it, let it run to its stop, wake us) after another.  *grew: a
 * thread was added. */
static struct lc_error *seize_round(struct lc_program *t, bool *grew)
{
	char path[64];
	size_t first = t->nthreads;
	DIR *d;
	struct dirent *de;
	struct lc_error *err = NULL;
	struct tidset known;

	*grew = false;
	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	d = opendir(path);
	if (!d)
		return lc_error_create(LC_ERR_NOT_FOUND, "no process %d (%s)",
				       t->pid, strerror(errno));
	if ((err = tidset_init(&known, t))) {
		closedir(d);
		return err;
	}
	while (!err && (de = readdir(d))) {
		int tid = atoi(de->d_name), slot;
		char *name;

		if (tid <= 0 || tidset_has(&known, tid))
			continue;
		if (t->nthreads >= LC_MAX_THREADS)
			break;
		/* Its name is read before it stops: one system call less
		 * while the threads before it wait. */
		name = lc_live_comm(t->pid, tid);
		/* Held before it is seized: a handler that runs from here on
		 * finds it. */
		slot = lc_live_hold(tid, 0);
		if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
			int e = errno;
			char st = '?';
			int ppid;
			unsigned long flags;

			lc_live_unhold(slot);
			free(name);
			if (e == ESRCH)
				continue;	/* exited meanwhile */
			/* A zombie (a leader that called pthread_exit, a
			 * thread on its way out) cannot be traced, and has
			 * nothing to show. */
			if (e == EPERM &&
			    stat_fields(t->pid, tid, &st, &ppid, &flags, NULL, 0) &&
			    (st == 'Z' || st == 'X'))
				continue;
			err = lc_live_refused(t->pid, e);
			break;
		}
		if (t->stop_start == 0)
			t->stop_start = lc_now_s();
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
			ptrace(PTRACE_DETACH, tid, NULL, NULL);
			lc_live_unhold(slot);
			free(name);
			continue;
		}
		err = add_live_thread(t, tid, slot, name);
		name = NULL;
		if (err) {
			/* Not recorded: it is let go right away. */
			int sig;

			if (lc_live_wait_stop(tid, &sig) == 0)
				ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig);
			lc_live_unhold(slot);
		}
	}
	closedir(d);
	free(known.v);
	/* Their stops, in the order they were interrupted (on an error
	 * too: the caller lets them go from a stop). */
	for (size_t i = first; i < t->nthreads;) {
		struct lc_program_thread *th = &t->threads[i];
		int sig;

		if (lc_live_wait_stop(th->tid, &sig) < 0) {
			ptrace(PTRACE_DETACH, th->tid, NULL, NULL);
			drop_thread(t, i);
			continue;
		}
		th->signo = sig;
		lc_live_hold_sig(th->held, sig);
		*grew = true;
		i++;
	}
	return err;
}

struct lc_error *lc_program_seize(struct lc_program *t)
{
	bool grew = true;

	/* Threads started by threads not yet stopped show up in the next
	 * listing. */
	for (int round = 0; grew && round < LC_ATTACH_ROUNDS; round++) {
		struct lc_error *err = seize_round(t, &grew);

		if (err)
			return err;
	}
	if (!t->nthreads)
		return lc_error_create(LC_ERR_NOT_FOUND,
			"process %d has no thread left to attach to", t->pid);
	return NULL;
}

/* The "syscall" file of a thread that is not stopped: "running", or the
 * system call's number, six arguments, sp and pc ("-1 sp pc" when it
 * sleeps in the kernel outside a system call), in hex. */
static bool syscall_sp_pc(int pid, int tid, uint64_t *sp, uint64_t *pc)
{
	char buf[256], *tok[9], *save = NULL;
	int n = 0;

	if (task_file(pid, tid, "syscall", buf, sizeof(buf)) < 0)
		return false;
	for (char *t = strtok_r(buf, " \n", &save); t && n < 9;
	     t = strtok_r(NULL, " \n", &save))
		tok[n++] = t;
	if (n != 9 && n != 3)
		return false;	/* "running" */
	*sp = strtoull(tok[n - 2], NULL, 16);
	*pc = strtoull(tok[n - 1], NULL, 16);
	return *sp && *pc;
}

bool lc_program_guess_fp(struct lc_program *t, int tid, uint64_t pc,
			 uint64_t sp)
{
	struct lc_program_thread *th = NULL;
	uint64_t w[513], start, rs, re;
	size_t nw = LC_ARRAY_SIZE(w);
	unsigned rf;
	Dwfl_Module *mod;
	GElf_Off off;
	GElf_Sym sym;

	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid)
			th = &t->threads[i];
	if (!th || !th->sp_pc_only || th->regs[6] || !t->dwfl || pc < 2 ||
	    !(mod = dwfl_addrmodule(t->dwfl, pc - 1)) ||
	    !dwfl_module_addrinfo(mod, pc - 1, &off, &sym, NULL, NULL, NULL))
		return false;
	/* Near the top of its stack (a shallow main thread), as far as the
	 * mapping goes. */
	if (lc_memory_region_at(t->mem, sp, &rs, &re, &rf) &&
	    re > (sp & ~7ull) && (re - (sp & ~7ull)) / 8 < nw)
		nw = (size_t)((re - (sp & ~7ull)) / 8);
	if (nw < 2 || lc_live_read(t->pid, sp & ~7ull, w, nw * 8) < 0)
		return false;
	start = pc - 1 - off;
	for (size_t i = 0; i + 1 < nw; i++) {
		uint64_t p = (sp & ~7ull) + 8 * i, ret = w[i + 1];
		uint8_t call[5];
		int32_t rel;

		if (w[i] <= p || w[i] - p >= (1u << 20) || (w[i] & 7) ||
		    ret < 5 || lc_live_read(t->pid, ret - 5, call, 5) < 0 ||
		    call[0] != 0xe8)
			continue;
		memcpy(&rel, call + 1, 4);
		if (ret + (uint64_t)(int64_t)rel == start) {
			th->regs[6] = p;
			return true;
		}
	}
	return false;
}

struct lc_error *lc_program_list_running(struct lc_program *t)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	struct lc_error *err = NULL;

	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	if (!(d = opendir(path)))
		return lc_error_create(LC_ERR_NOT_FOUND, "no process %d (%s)",
				       t->pid, strerror(errno));
	/* Listed again: the threads as they are now. */
	while (t->nthreads)
		drop_thread(t, t->nthreads - 1);
	while (!err && (de = readdir(d))) {
		int tid = atoi(de->d_name);
		struct lc_program_thread *th;
		uint64_t sp, pc;

		if (tid <= 0)
			continue;
		if (t->nthreads >= LC_MAX_THREADS)
			break;
		if ((err = add_live_thread(t, tid, -1, lc_live_comm(t->pid, tid))))
			break;
		th = &t->threads[t->nthreads - 1];
		if (syscall_sp_pc(t->pid, tid, &sp, &pc)) {
			th->sp_pc_only = true;
			th->regs[7] = sp;
			th->regs[16] = pc;
		} else {
			th->running = true;
		}
	}
	closedir(d);
	t->not_stopped = true;
	t->detached = true;
	if (!err && !t->nthreads)
		err = lc_error_create(LC_ERR_NOT_FOUND,
				      "process %d has no thread left", t->pid);
	return err;
}

static void read_regions(struct lc_program *t)
{
	char path[64], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", t->reader);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		char perms[8] = "", name[4096] = "";

		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %4095[^\n]", &lo, &hi,
			   perms, name) < 3)
			continue;
		/* Executable memory: anonymous (JIT code) is never a
		 * module's, whatever libdwfl files it under (it counts an
		 * anonymous mapping after a module's as its .bss); a file
		 * is named by its path where no module covers it. */
		if (perms[2] == 'x' && strcmp(name, "[vdso]") != 0) {
			bool anon = !name[0] || strncmp(name, "[anon:", 6) == 0;

			/* A module's text needs no entry (the list is
			 * searched per frame). */
			if (anon || !t->dwfl || !dwfl_addrmodule(t->dwfl, lo))
				lc_error_destroy(lc_program_add_exec(t, lo, hi,
								     name, anon));
		}
		/* Device memory may not be safe to read; [vvar] is not
		 * readable. */
		if (strncmp(name, "/dev/", 5) == 0 && strcmp(name, "/dev/zero"))
			continue;
		if (strcmp(name, "[vvar]") == 0 || strcmp(name, "[vsyscall]") == 0 ||
		    perms[0] != 'r')
			continue;
		if (perms[1] == 'w' && perms[3] == 's') {
			void *p = realloc(t->shared, (t->nshared + 1) *
					  sizeof(*t->shared));

			/* Without the record the scan skips nothing: no
			 * pagemap. */
			if (!p && t->pagemap_fd >= 0) {
				close(t->pagemap_fd);
				t->pagemap_fd = -1;
			}
			if (p) {
				t->shared = p;
				t->shared[t->nshared][0] = lo;
				t->shared[t->nshared][1] = hi;
				t->nshared++;
			}
		}
		struct lc_error *err = lc_program_add_region(t, lo, hi,
							    perms[1] == 'w');
		lc_error_destroy(err);
	}
	if (f)
		fclose(f);
}

void lc_program_reread_regions(struct lc_program *t)
{
	lc_memory_clear(t->mem, LC_MEM_REGION);
	for (size_t i = 0; i < t->nexec; i++)
		free(t->exec[i].name);
	t->nexec = 0;
	t->nshared = 0;
	read_regions(t);
}

/* ---- libdwfl's view of the stopped threads ----
 *
 * Ours rather than dwfl_linux_proc_attach's: its memory reads go through
 * the program's memory (one page read serves many words, while every
 * thread is stopped), and a thread that cannot be read (let go by a
 * handler, killed while stopped) is one broken stack, not an assertion
 * in libdwfl (0.188 leaves its state attached when PTRACE_GETREGS
 * fails). */

/* A thread's arg is its record (the list does not change while the
 * threads are unwound). */
static pid_t live_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct lc_program *t = arg;
	struct lc_program_thread *cur = *thread_argp;
	size_t i = cur ? (size_t)(cur - t->threads) + 1 : 0;

	(void)dwfl;
	if (i >= t->nthreads)
		return 0;
	*thread_argp = &t->threads[i];
	return t->threads[i].tid;
}

static bool live_get_thread(Dwfl *dwfl, pid_t tid, void *arg,
			    void **thread_argp)
{
	struct lc_program *t = arg;

	(void)dwfl;
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid) {
			*thread_argp = &t->threads[i];
			return true;
		}
	return false;
}

static bool live_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			     void *arg)
{
	struct lc_program *t = arg;
	uint64_t v;

	(void)dwfl;
	if (lc_read_u64(t->mem, addr, &v) < 0)
		return false;
	*result = v;
	return true;
}

static bool live_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct lc_program_thread *th = thread_arg;
	struct user_regs_struct u;
	Dwarf_Word r[17];
	pid_t tid = dwfl_thread_tid(thread);

	uint64_t dummy_pc, dummy_sp;

	/* Not stopped: what its system call shows, or nothing. */
	if (th && th->running)
		return false;
	if (th && th->sp_pc_only) {
		Dwarf_Word sp = th->regs[7], fp = th->regs[6];

		if (!dwfl_thread_state_registers(thread, 7, 1, &sp) ||
		    (fp && !dwfl_thread_state_registers(thread, 6, 1, &fp)))
			return false;
		dwfl_thread_state_register_pc(thread, th->regs[16]);
		return true;
	}
	/* Saved before the threads were let go (lc_program_copy), the
	 * clone frame's fix-up made. */
	if (th && th->have_regs) {
		for (int i = 0; i < 17; i++)
			r[i] = th->regs[i];
	} else {
		uint64_t v[LC_NREGS];

		if (!lc_live_thread_regs(tid, &u, v,
					 th ? &th->clone_pc : &dummy_pc,
					 th ? &th->clone_sp : &dummy_sp))
			return false;
		for (int i = 0; i < 17; i++)
			r[i] = v[i];
	}
	if (th && th->from_sp)
		return lc_program_start_from(thread, th->from_pc, th->from_sp);
	return dwfl_thread_state_registers(thread, 0, 17, r);
}

void lc_live_user_regs(const struct user_regs_struct *u, uint64_t *r)
{
	r[0] = u->rax; r[1] = u->rdx; r[2] = u->rcx; r[3] = u->rbx;
	r[4] = u->rsi; r[5] = u->rdi; r[6] = u->rbp; r[7] = u->rsp;
	r[8] = u->r8; r[9] = u->r9; r[10] = u->r10; r[11] = u->r11;
	r[12] = u->r12; r[13] = u->r13; r[14] = u->r14; r[15] = u->r15;
	r[16] = u->rip;
}

bool lc_live_thread_regs(int tid, struct user_regs_struct *u, uint64_t *r,
			 uint64_t *clone_pc, uint64_t *clone_sp)
{
	if (ptrace(PTRACE_GETREGS, tid, NULL, u) < 0)
		return false;
	lc_live_user_regs(u, r);
	/* The parent's side of clone, just after the system call (rax the
	 * child's tid): nothing pushed since the call, the caller's return
	 * address at [rsp], and no unwind info to say so. */
	if ((u->orig_rax == NR_CLONE || u->orig_rax == NR_CLONE3) &&
	    (int64_t)u->rax > 0) {
		uint8_t insn[2];
		uint64_t ra;

		if (lc_live_read(tid, u->rip - 2, insn, 2) == 0 &&
		    insn[0] == 0x0f && insn[1] == 0x05 &&
		    lc_live_read(tid, u->rsp, &ra, 8) == 0) {
			*clone_pc = u->rip;
			*clone_sp = u->rsp;
			r[16] = ra;
			r[7] = u->rsp + 8;
		}
	}
	return true;
}

bool lc_program_thread_clone(const struct lc_program *t, int tid,
			     uint64_t *pc, uint64_t *sp)
{
	if (t->kind != LC_PROGRAM_LIVE)
		return false;
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid && t->threads[i].clone_pc) {
			*pc = t->threads[i].clone_pc;
			*sp = t->threads[i].clone_sp;
			return true;
		}
	return false;
}

static const Dwfl_Thread_Callbacks live_callbacks = {
	.next_thread = live_next_thread,
	.get_thread = live_get_thread,
	.memory_read = live_memory_read,
	.set_initial_registers = live_set_initial_registers,
};

/* Load a module's symbols and CFI now rather than while threads wait. */
static int warm_module(Dwfl_Module *mod, void **userdata, const char *name,
		       Dwarf_Addr start, void *arg)
{
	Dwarf_Addr bias;

	dwfl_module_getsymtab(mod);
	dwfl_module_eh_cfi(mod, &bias);
	dwfl_module_dwarf_cfi(mod, &bias);
	return DWARF_CB_OK;
}

struct lc_error *lc_program_prepare_live(int pid, bool proc_attach,
					 struct lc_program **ret)
{
	struct lc_program *t;
	struct lc_error *err;
	char path[64], buf[4096];
	ssize_t n;
	int rc;

	int reader;

	if (pid <= 0)
		return lc_error_create(LC_ERR_INVALID, "bad pid %d", pid);
	if (pid == getpid())
		return lc_error_create(LC_ERR_INVALID,
				       "process %d is luacore itself", pid);
	if ((err = lc_live_check(pid, &reader)))
		return err;
	if ((err = lc_program_new(LC_PROGRAM_LIVE, &t)))
		return err;
	t->pid = pid;
	/* A zombie leader has no memory left to show: the process's memory
	 * and maps are its live threads'. */
	t->reader = reader;
	if ((err = lc_memory_add_space(t->mem, 0, &proc_source, t)))
		goto fail;
	snprintf(path, sizeof(path), "/proc/%d/mem", reader);
	t->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/pagemap", reader);
	t->pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/exe", reader);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		t->exe_path = strdup(buf);
	}
	{
		char *comm = lc_live_comm(pid, pid);

		if (comm) {
			snprintf(t->fname, sizeof(t->fname), "%s", comm);
			free(comm);
		}
	}
	/* What does not change while the process runs is read before it is
	 * stopped: modules, symbols, CFI (the layers above add the Lua
	 * layout). */
	t->dwfl = dwfl_begin(&proc_callbacks);
	if (t->dwfl)
		lc_debuginfod_hook(t->dwfl);
	if (!t->dwfl) {
		err = lc_error_create(LC_ERR_NOMEM, "dwfl_begin: %s",
				      dwfl_errmsg(-1));
		goto fail;
	}
	dwfl_report_begin(t->dwfl);
	rc = dwfl_linux_proc_report(t->dwfl, reader);
	if (rc != 0) {
		/* A positive return is an errno (reading /proc/PID/maps). */
		if (rc == ENOENT || rc == ESRCH)
			err = lc_error_create(LC_ERR_NOT_FOUND,
				"process %d ended while it was being read", pid);
		else if (rc == EACCES || rc == EPERM)
			err = lc_live_refused(pid, EPERM);
		else
			err = lc_error_create(LC_ERR_OS,
				"cannot read the modules of process %d: %s", pid,
				rc > 0 ? strerror(rc) : dwfl_errmsg(-1));
		goto fail;
	}
	dwfl_report_end(t->dwfl, NULL, NULL);
	if (proc_attach)
		t->dwfl_attached = dwfl_attach_state(t->dwfl, NULL, pid,
						     &live_callbacks, t);
	dwfl_getmodules(t->dwfl, warm_module, NULL, 0);
	read_regions(t);
	*ret = t;
	return NULL;
fail:
	lc_program_destroy(t);
	return err;
}

void lc_program_detach(struct lc_program *t)
{
	if (!t || t->kind != LC_PROGRAM_LIVE || t->detached)
		return;
	for (size_t i = 0; i < t->nthreads; i++) {
		ptrace(PTRACE_DETACH, t->threads[i].tid, NULL,
		       (void *)(long)t->threads[i].signo);
		lc_live_unhold(t->threads[i].held);
		t->threads[i].held = -1;
	}
	t->detached = true;
	if (t->stop_start)
		t->stop_seconds = lc_now_s() - t->stop_start;
}

double lc_program_stopped_seconds(const struct lc_program *t)
{
	if (t->kind != LC_PROGRAM_LIVE)
		return 0;
	return t->detached ? t->stop_seconds : lc_now_s() - t->stop_start;
}
