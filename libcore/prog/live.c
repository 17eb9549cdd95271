/* Live targets: a running process, stopped with ptrace for as short a
 * time as a report needs.
 *
 * Threads are taken with PTRACE_SEIZE and stopped with PTRACE_INTERRUPT,
 * never with SIGSTOP: a seized thread in an interrupt stop is restarted
 * by the kernel if we die, even by SIGKILL, and no signal of ours is ever
 * queued to the process.  A signal that arrives while a thread is
 * stopped is handed back on detach.  Memory is read with
 * process_vm_readv (never written); modules, debug info and native
 * unwinding come from libdwfl's Linux process support, told the threads
 * are already stopped. */
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
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prog/program.h"

#define LC_MAX_THREADS	65536
#define LC_ATTACH_ROUNDS 16	/* re-reads of the thread list */

static char *debuginfo_path;

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

/* Every thread any live target holds stopped, for lc_live_release_all:
 * a signal handler may run it, so it is a plain array of plain ints. */
#define LC_HELD_MAX	65536
static volatile int held[LC_HELD_MAX];
static volatile int held_sig[LC_HELD_MAX];
static volatile size_t nheld;

void lc_live_hold(int tid, int sig)
{
	for (size_t i = 0; i < nheld; i++)
		if (held[i] == 0) {
			held_sig[i] = sig;
			held[i] = tid;
			return;
		}
	if (nheld < LC_HELD_MAX) {
		held_sig[nheld] = sig;
		held[nheld] = tid;
		nheld++;
	}
}

void lc_live_unhold(int tid)
{
	for (size_t i = 0; i < nheld; i++)
		if (held[i] == tid) {
			held[i] = 0;
			return;
		}
}

void lc_live_release_all(void)
{
	int saved = errno;

	for (size_t i = 0; i < nheld; i++) {
		int tid = held[i];

		if (tid > 0) {
			ptrace(PTRACE_DETACH, tid, NULL,
			       (void *)(long)held_sig[i]);
			held[i] = 0;
		}
	}
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
	n = process_vm_readv(t->pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (n < 0 && errno == ENOSYS && t->mem_fd >= 0)
		return pread(t->mem_fd, buf, len, (off_t)addr) == (ssize_t)len ?
		       0 : -1;
	return -1;
}

static const struct lc_mem_source proc_source = {
	.name = "proc",
	.read = proc_read,
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

static bool known(const struct lc_program *t, int tid)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid)
			return true;
	return false;
}

char *lc_live_comm(int pid, int tid)
{
	char path[64], buf[64];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (!n)
		return NULL;
	/* The kernel ends the name with a newline; the name itself may hold
	 * one (any byte but NUL: it is the executable's file name, or what
	 * the thread set), which the printers escape. */
	if (buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return strdup(buf);
}

int lc_live_wait_stop_spin(int tid, int *sig, double spin_s)
{
	double until = spin_s > 0 ? lc_now_s() + spin_s : 0;
	int status;

	*sig = 0;
	for (;;) {
		pid_t r = waitpid(tid, &status,
				  __WALL | (until ? WNOHANG : 0));

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

struct lc_error *lc_program_seize(struct lc_program *t)
{
	char path[64];
	bool grew = true;

	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	for (int round = 0; grew && round < LC_ATTACH_ROUNDS; round++) {
		DIR *d = opendir(path);
		struct dirent *de;

		grew = false;
		if (!d)
			return lc_error_create(LC_ERR_NOT_FOUND,
				"no process %d (%s)", t->pid, strerror(errno));
		while ((de = readdir(d))) {
			int tid = atoi(de->d_name), sig;
			void *p;

			if (tid <= 0 || known(t, tid))
				continue;
			if (t->nthreads >= LC_MAX_THREADS)
				break;
			if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
				int e = errno;

				if (e == ESRCH)
					continue;	/* exited meanwhile */
				closedir(d);
				return lc_live_refused(t->pid, e);
			}
			if (t->stop_start == 0)
				t->stop_start = lc_now_s();
			if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0 ||
			    lc_live_wait_stop(tid, &sig) < 0) {
				ptrace(PTRACE_DETACH, tid, NULL, NULL);
				continue;
			}
			lc_live_hold(tid, sig);
			p = realloc(t->threads,
				    (t->nthreads + 1) * sizeof(*t->threads));
			if (!p) {
				closedir(d);
				return &lc_error_nomem;
			}
			t->threads = p;
			memset(&t->threads[t->nthreads], 0, sizeof(*t->threads));
			t->threads[t->nthreads].tid = tid;
			t->threads[t->nthreads].signo = sig;
			t->threads[t->nthreads].name = lc_live_comm(t->pid, tid);
			t->nthreads++;
			grew = true;
		}
		closedir(d);
	}
	if (!t->nthreads)
		return lc_error_create(LC_ERR_NOT_FOUND,
			"process %d has no thread left to attach to", t->pid);
	return NULL;
}

static void read_regions(struct lc_program *t)
{
	char path[64], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", t->pid);
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
		struct lc_error *err = lc_program_add_region(t, lo, hi,
							    perms[1] == 'w');
		lc_error_destroy(err);
	}
	if (f)
		fclose(f);
}

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

	if (pid <= 0)
		return lc_error_create(LC_ERR_INVALID, "bad pid %d", pid);
	if (pid == getpid())
		return lc_error_create(LC_ERR_INVALID,
				       "process %d is luacore itself", pid);
	if ((err = lc_program_new(LC_PROGRAM_LIVE, &t)))
		return err;
	t->pid = pid;
	if ((err = lc_memory_add_space(t->mem, 0, &proc_source, t)))
		goto fail;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	t->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
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
	if (!t->dwfl) {
		err = lc_error_create(LC_ERR_NOMEM, "dwfl_begin: %s",
				      dwfl_errmsg(-1));
		goto fail;
	}
	dwfl_report_begin(t->dwfl);
	rc = dwfl_linux_proc_report(t->dwfl, pid);
	if (rc != 0) {
		/* A positive return is an errno (reading /proc/PID/maps). */
		if (rc == ENOENT || rc == ESRCH)
			err = lc_error_create(LC_ERR_NOT_FOUND,
					      "no process %d", pid);
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
		t->dwfl_attached =
			dwfl_linux_proc_attach(t->dwfl, pid, true) == 0;
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
		lc_live_unhold(t->threads[i].tid);
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
