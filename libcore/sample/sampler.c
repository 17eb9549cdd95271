/* The sampling engine (sampler.h): stop a thread only to copy what a
 * sample needs, decode it after the thread runs again. */
#include <config.h>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "report/stack.h"
#include "sample/sampler.h"

#define STACK_COPY	(32 * 1024)	/* most bytes above rsp copied while stopped */
#define STACK_MIN	(4 * 1024)	/* least */
#define STACK_SLACK	(2 * 1024)	/* above the outermost frame unwound */
#define HOT_PAGES	LC_SAMPLER_HOT_PAGES	/* pages of Lua state copied with it */
/* A worker thread runs many VMs, one after the other: what the last
 * sample needed is another VM's.  So each lua_State seen has its own
 * pages (STATE_PAGES at most), copied when a word of the stopped
 * thread's registers or stack is its address; KNOWN_STATES states are
 * remembered (all forgotten when that many were seen), their pages
 * copied for FOUND_STATES of them per stop. */
#define STATE_PAGES	12
#define KNOWN_STATES	1024
#define FOUND_STATES	4
/* At most this long reading DWARF ahead, per VM (lc_program_warm_lines) */
#define WARM_S		0.1
#define SNAP_PAGES	(HOT_PAGES + FOUND_STATES * STATE_PAGES)
/* The target's anonymous mappings, which a thread that copies itself may
 * read, are listed again at least this often (seconds) */
#define ANON_REREAD_S	0.1
#define BATCH		8		/* stops of a tick before decoding */
#define FD_CACHE	256		/* threads whose stat stays open */
/* Every thread's schedstat stays open, as many as the open-file limit
 * leaves room for (this many are left to the rest of the program): an
 * idle thread is then looked at with one read. */
#define FD_SPARE	128
/* The process's CPU clock is read every tick up to this many threads,
 * every other tick up to twice as many, and so on. */
#define CLOCK_THREADS	256
/* A stop that comes this long after its point's read is too late to
 * show what the thread ran at the point: in a virtual machine, a vCPU
 * can lose its CPU for milliseconds. */
#define LATE_S		250e-6
/* The share of a period a tick may hold its CPU at real-time priority:
 * its stops, and then its decoding (see flush). */
#define RT_SHARE	1.0
#define SPIN_S		250e-6		/* poll this long for a stop, then sleep
					   (a later stop is dropped: LATE_S) */
/* CPU time a sleeping thread may use between ticks and still be in the
 * same sleep: stopping it for a sample wakes it, and putting itself back
 * to sleep costs it some 10-50 us. */
#define SELF_NS		250000
#define PAGE		4096ull
#define LIVE_PAGES	256		/* pages read after the stop, per sample */
#define MAX_THREADS	4096
#define MAX_STOPS	(1u << 20)	/* stop durations kept for percentiles */
/* Threads that used no CPU at this many ticks in a row are asleep: each
 * tick reads the run time of only some of them, in turn (IDLE_READS or
 * so), so that thousands of idle threads do not slow the ticks down; the
 * process's own CPU clock tells when one of them ran unseen. */
#define IDLE_AFTER	4
#define IDLE_READS	64
/* /proc/PID/task is listed again at least this often (seconds), and
 * whenever the process's thread count changes or its CPU time says a
 * thread ran unseen: listing thousands of threads costs milliseconds. */
#define RELIST_S	0.25
/* The kernel's own codes for a system call a signal or stop broke off,
 * to be restarted (include/linux/errno.h; never seen by programs). */
#define K_ERESTARTSYS		512
#define K_ERESTARTNOINTR	513
#define K_ERESTARTNOHAND	514
#define K_ERESTART_RESTARTBLOCK	516

struct page {
	uint64_t addr;
	bool used;			/* --nonblocking: a read served from it */
	uint8_t data[PAGE];
};

/* What one thread's sample copied while it was stopped. */
struct snap {
	int tid;
	uint64_t regs[17];
	uint64_t from_pc, from_sp;	/* lc_program_thread's, for it */
	uint64_t stack_lo, stack_hi;	/* the copy of [rsp - 128, ...) */
	uint8_t stack[STACK_COPY + 128];
	struct page *pages;		/* SNAP_PAGES, in the order copied */
	size_t npages;
	uint16_t order[SNAP_PAGES];	/* pages' indexes by addr (snap_index) */
	double t_stopped;		/* when the stop was seen */
	/* Stopped in a system call it was asleep in: the stop interrupted
	 * a wait (the call's result is -EINTR or a restart code), so the
	 * thread was not on a CPU. */
	bool asleep;
	uint64_t slices;		/* its schedstat timeslices while
					   stopped, UINT64_MAX unknown */
	uint64_t wait;			/* and its wait for a CPU */
	long syscall;			/* the system call it stopped in, or -1 */
	long sysret;			/* and its result */
	/* The lua_States whose pages this copy holds: those the thread ran
	 * last time, and those its registers or stack pointed to. */
	uint64_t held[FOUND_STATES + 8];
	size_t nheld;
};

struct tstate {
	int tid;
	uint64_t cpu_ns;		/* schedstat run time at the last tick */
	int64_t used_ns;		/* CPU time its reads saw it use */
	int64_t charged_ns;		/* what its points on a CPU stood for */
	int64_t kept_ns;		/* of which in the profile (--vm) */
	double stopped_s;		/* how long our stops held it */
	int64_t off_ns;			/* time we kept it from running since:
					   our stops, our tick on its CPU */
	bool preempted;			/* runnable on our CPU at this tick */
	bool seen;			/* alive at the last tick */
	uint64_t hot[HOT_PAGES];	/* pages to copy next time */
	uint64_t hot_states[LC_SAMPLER_HOT_STATES];	/* their lua_States */
	unsigned nhot_states;
	unsigned nhot;
	size_t stack_need;		/* bytes above rsp to copy, 0: most */
	uint64_t stack_end;		/* where the mapping of its rsp ends */
	/* its last sample's outermost machine frame's sp (0: none), and
	 * whether its Lua state had more pages than hot holds */
	uint64_t stack_top;
	bool hot_over;
	char *name;
	/* The last stack seen (root last, no synthetic leaf), for samples
	 * that do not stop a sleeping thread. */
	uint32_t *last;
	size_t nlast;
	uint64_t last_vm, last_co;
	enum lc_prof_kind last_leaf;
	char last_vmstate[24];		/* its VM's state then, "" none */
	bool last_asleep;		/* taken while it was not running */
	char sleep_at[96];		/* its /proc syscall line then */
	int cpu;			/* the CPU it last ran on, -1 unknown */
	double last_tick;		/* when a tick last looked at it: its
					   last sample point */
	unsigned idle_reads;		/* reads in a row that found no CPU used */
	int stat_fd;			/* its stat, kept open while it is
					   not asleep; -1 */
	int sched_fd;			/* its schedstat, kept open; -1 */
	bool read;			/* its run time was read this tick */
	struct lc_interp *in;		/* the interpreter whose states it
					   held last; NULL: the first */
};

/* A VM's names as last read (a service sets its name global when it
 * starts: one not read yet is read again, at most once a second). */
struct vmname {
	uint64_t vm;
	char *name, *alloc;
	double tried;
};
#define VM_NAMES	4096	/* VMs whose names are kept */

/* --nonblocking: one VM's resume chain at a tick (the states running,
 * innermost first), and the thread charged with it then. */
#define NB_CHAIN	8
struct nbchain {
	uint64_t vm;
	uint64_t states[NB_CHAIN];
	uint64_t depth[NB_CHAIN];
	size_t n;
	int taken_by;
};

/* The thread that last ran a VM, as far as the samples tell. */
struct nbowner {
	uint64_t vm;
	int tid;
};

/* The pages the last read of a VM's chain used (vm 0: the pass over
 * the states), read first in one system call by the next. */
#define NB_HOT		64
struct nbhot {
	uint64_t vm;
	uint64_t pages[NB_HOT];
	unsigned n;
};

/* A lua_State seen in a sample, and the pages its stack needs. */
struct known {
	uint64_t state;
	uint64_t pages[STATE_PAGES];
	unsigned npages;
};

/* A thread that exited: its CPU time and charges, for the calibration. */
struct gone {
	int tid;
	int64_t used_ns, charged_ns, kept_ns;
	double stopped_s;
};

struct lc_sampler {
	int pid;
	struct lc_sampler_options o;
	/* The target's private anonymous writable mappings, by address
	 * (lc_sampler_hot), read at anon_at. */
	uint64_t (*anon)[2];
	size_t nanon;
	double anon_at;
	/* One session for the whole run: the live program (its memory
	 * served by the copy, cur), its unwinder and interpreter.  Each
	 * sample is decoded in a pass of its own. */
	struct lc_target *t;
	struct lc_interp *in;		/* NULL without Lua */
	const struct lc_error *no_lua;	/* why in is NULL (the target's) */
	/* Every interpreter (in is the first): a process may hold PUC Lua
	 * and LuaJIT; each thread is read with the one whose states it
	 * holds (tstate.in).  --nonblocking reads the first only. */
	struct lc_interp *const *ins;
	size_t nins;
	/* The VMs samples were of, before the vm filter, in order seen. */
	uint64_t vms[LC_SAMPLER_VMS];
	size_t nvms;
	int leader_fd;			/* the leader's stat, kept open */
	struct gone *gone;		/* threads that exited */
	size_t ngone, capgone;
	/* The copies of a tick's stops (BATCH, the first few allocated as
	 * needed), and the one being decoded. */
	struct snap *snaps;
	size_t nsnaps;
	struct snap *cur;
	/* Pages read from the running process for the sample being
	 * decoded, so that each costs one system call: a hash of page
	 * address to slot. */
	size_t live_reads;		/* reads the copy could not serve */
	struct page *live;		/* LIVE_PAGES */
	size_t nlive;
	uint32_t live_slot[2 * LIVE_PAGES];	/* 1 + index into live, 0 free */
	struct tstate *ts;
	size_t nts;
	uint32_t *ts_index;		/* tid -> 1 + index into ts, 0 free */
	size_t ts_mask;			/* ts_index has ts_mask + 1 slots */
	int reader;			/* the thread process_vm_readv reads through */
	clockid_t clock;		/* the process's CPU clock */
	bool have_clock;
	uint64_t proc_ns;		/* its value at the last tick */
	uint64_t proc_ns0;		/* at the first tick */
	uint64_t seen_total_ns;		/* the sum of the threads' reads */
	int64_t unseen_ns;		/* CPU time no thread read accounts for */
	uint64_t seen_since_ns;		/* what reads saw since proc_ns */
	bool clock_behind;		/* the last tick did not read it */
	int *list;			/* the tids of the last listing */
	size_t nlist;
	double listed;			/* when it was taken, 0 never */
	struct lc_profile *prof;
	double *stops;			/* microseconds */
	size_t nstops;
	double last_tick;
	struct rusage ru0;
	cpu_set_t allowed;		/* our affinity at the start */
	cpu_set_t current;
	bool affinity;			/* allowed is known */
	bool rt;			/* real-time priority is permitted */
	bool rt_on;			/* and we run at it now */
	double rt_off;			/* when we last left it */
	double rt_since;		/* since when (a tick's start when we
					   slept at it) */
	struct known *known;		/* KNOWN_STATES */
	size_t nknown;
	size_t nfds;			/* threads whose stat is open */
	size_t nsched, sched_cache;	/* whose schedstat is; at most */
	bool many_asleep;		/* this tick: more than IDLE_READS
					   threads asleep (read in turn) */
	struct vmname *names;
	size_t nnames;
	uint32_t *known_slot;		/* 2 * KNOWN_STATES: 1 + index, 0 free */
	uint64_t known_lo, known_hi;	/* the addresses' range */
	cpu_set_t busy;			/* CPUs the last tick found threads on */
	/* --nonblocking (see its section): the lua_States the last scan
	 * found, the tick each was last seen running at (0 never) and
	 * where the round of the others is; when the scan was, what it
	 * cost, and whether a sample asked for another; the resume chains
	 * of the batch of points; which thread ran each VM last. */
	uint64_t *nb_states;
	uint64_t *nb_ran;
	size_t nnb_states, nb_turn;
	double nb_scanned, nb_scan_cost;
	bool nb_want_scan;
	struct nbchain *nb_chains;	/* NB_VMS */
	size_t nnb_chains;
	struct nbowner *nb_owner;	/* NB_VMS */
	size_t nnb_owner;
	struct nbhot *nb_hot;		/* NB_VMS + 1, [0] for the states */
	size_t nnb_hot;
};

static uint64_t schedstat_read(int fd, uint64_t *slices, uint64_t *wait);

/* ---- reading the copy ---- */


static const struct page *find_page(const struct snap *sn, uint64_t pa)
{
	size_t lo = 0, hi = sn->npages;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct page *p = &sn->pages[sn->order[mid]];

		if (p->addr < pa)
			lo = mid + 1;
		else if (p->addr > pa)
			hi = mid;
		else
			return p;
	}
	return NULL;
}

/* The page at pa as read from the running process during this sample,
 * or NULL when it cannot be read (or the cache is full). */
/* The slot of live_slot that holds page pa, or the free one it goes in. */
static size_t live_slot_of(const struct lc_sampler *s, uint64_t pa)
{
	size_t i = (size_t)((pa >> 12) * 0x9E3779B97F4A7C15ull >> 55);

	while (s->live_slot[i] && s->live[s->live_slot[i] - 1].addr != pa)
		i = (i + 1) % (2 * LIVE_PAGES);
	return i;
}

static const struct page *live_page(struct lc_sampler *s, uint64_t pa)
{
	size_t i = live_slot_of(s, pa);
	struct page *p;

	if (s->live_slot[i]) {
		p = &s->live[s->live_slot[i] - 1];
		p->used = true;
		return p;
	}
	if (s->nlive >= LIVE_PAGES)
		return NULL;
	p = &s->live[s->nlive];
	s->live_reads++;
	if (lc_live_read(s->reader, pa, p->data, PAGE) < 0)
		return NULL;
	p->addr = pa;
	p->used = true;
	s->live_slot[i] = (uint32_t)++s->nlive;
	return p;
}

/* Serve a read from the copy; what the copy lacks comes from the
 * running process: what does not change while a thread runs (code,
 * Protos, strings, outer stack frames), or, when it does, a mismatch
 * the decoder's checks catch.  The memory's overlay source, and its
 * sole one: what this cannot read, nothing else can. */
static int snap_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct lc_sampler *s = arg;
	struct snap *sn = s->cur;
	uint8_t *out = buf;

	/* Before the first stop (the layout is read then): all live. */
	if (!sn)
		return lc_live_read(s->reader, addr, buf, len) < 0 ? -1 : 0;
	while (len) {
		size_t n;

		if (addr >= sn->stack_lo && addr < sn->stack_hi) {
			n = sn->stack_hi - addr;
			if (n > len)
				n = len;
			memcpy(out, sn->stack + (addr - sn->stack_lo), n);
		} else {
			uint64_t pa = addr & ~(PAGE - 1);
			const struct page *p = find_page(sn, pa);

			n = PAGE - (addr - pa);
			if (n > len)
				n = len;
			if (!p)
				p = live_page(s, pa);
			if (p) {
				memcpy(out, p->data + (addr - pa), n);
			} else if (lc_live_read(s->reader, addr, out, n) < 0) {
				return -1;
			}
		}
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

/* ---- libdwfl's view of the sampled thread ---- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct lc_sampler *s = arg;

	if (*thread_argp || !s->cur)
		return 0;
	*thread_argp = s;
	return s->cur->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct lc_sampler *s = arg;

	if (!s->cur || tid != s->cur->tid)
		return false;
	*thread_argp = s;
	return true;
}

static const struct lc_mem_source snap_source = {
	.name = "snapshot",
	.read = snap_read,
};

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			void *arg)
{
	uint64_t v;

	if (snap_read(arg, addr, &v, 8) < 0)
		return false;
	*result = v;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct lc_sampler *s = thread_arg;
	Dwarf_Word regs[17];

	if (s->cur->from_sp)
		return lc_program_start_from(thread, s->cur->from_pc,
					     s->cur->from_sp);
	for (int i = 0; i < 17; i++)
		regs[i] = s->cur->regs[i];
	return dwfl_thread_state_registers(thread, 0, 17, regs);
}

/* lc_program.unwind_from: the unwinder starts the thread it reads from
 * another frame (vm.h lc_state_probe.foreign). */
static void unwind_from(void *arg, int tid, uint64_t pc, uint64_t sp)
{
	struct lc_sampler *s = arg;

	if (s->cur && s->cur->tid == tid) {
		s->cur->from_pc = pc;
		s->cur->from_sp = sp;
	}
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ---- taking one thread's copy ---- */

/* The copied pages' order by address, for find_page: an insertion sort
 * of their indexes (a few dozen at most), not of the 4 KiB pages
 * themselves, which qsort would move through a heap buffer. */
static void snap_index(struct snap *sn)
{
	for (size_t i = 0; i < sn->npages; i++) {
		uint64_t a = sn->pages[i].addr;
		size_t j = i;

		while (j > 0 && sn->pages[sn->order[j - 1]].addr > a) {
			sn->order[j] = sn->order[j - 1];
			j--;
		}
		sn->order[j] = (uint16_t)i;
	}
}

static size_t known_hash(uint64_t a)
{
	return (size_t)((a >> 3) * 0x9E3779B97F4A7C15ull >> 53) &
	       (2 * KNOWN_STATES - 1);
}

static struct known *known_find(struct lc_sampler *s, uint64_t a)
{
	if (!s->nknown || a < s->known_lo || a > s->known_hi || (a & 7))
		return NULL;
	for (size_t i = known_hash(a);; i = (i + 1) & (2 * KNOWN_STATES - 1)) {
		uint32_t k = s->known_slot[i];

		if (!k)
			return NULL;
		if (s->known[k - 1].state == a)
			return &s->known[k - 1];
	}
}

/* Add the pages of [addr, addr + len) to pages (*n of max used), each
 * once.  Addresses come from the target: garbage wraps around.  Of a
 * range longer than max pages (a deep data stack), the last pages: the
 * innermost frames, which change fastest. */
static void add_pages(uint64_t *pages, unsigned *n, unsigned max,
		      uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len;

	if (!addr || end < addr)
		return;
	if (len > max * PAGE)
		addr = end - max * PAGE;
	/* pa < end alone would not stop a pa that wrapped past 2^64. */
	for (uint64_t pa = addr & ~(PAGE - 1);
	     pa < end && pa >= (addr & ~(PAGE - 1)); pa += PAGE) {
		unsigned i = 0;

		while (i < *n && pages[i] != pa)
			i++;
		if (i == *n && *n < max)
			pages[(*n)++] = pa;
	}
}

/* Remember the pages of state a (replacing what was known of it). */
static void known_learn(struct lc_sampler *s, uint64_t a,
			const uint64_t (*r)[2], size_t nr)
{
	struct known *k = known_find(s, a);

	if (!a || (a & 7))
		return;
	if (!k) {
		size_t i;

		if (s->nknown == KNOWN_STATES) {
			s->nknown = 0;
			memset(s->known_slot, 0,
			       2 * KNOWN_STATES * sizeof(*s->known_slot));
		}
		if (!s->nknown)
			s->known_lo = s->known_hi = a;
		k = &s->known[s->nknown++];
		k->state = a;
		for (i = known_hash(a); s->known_slot[i];
		     i = (i + 1) & (2 * KNOWN_STATES - 1))
			;
		s->known_slot[i] = (uint32_t)s->nknown;
		if (a < s->known_lo)
			s->known_lo = a;
		if (a > s->known_hi)
			s->known_hi = a;
	}
	k->npages = 0;
	for (size_t j = 0; j < nr; j++)
		add_pages(k->pages, &k->npages, STATE_PAGES, r[j][0], r[j][1]);
}

/* Copy, while the thread is still stopped, the pages of the known states
 * whose addresses its registers or copied stack hold (FOUND_STATES at
 * most, those found first: registers, then the innermost frames). */
static void copy_found_states(struct lc_sampler *s)
{
	struct snap *sn = s->cur;
	struct iovec local[FOUND_STATES * STATE_PAGES];
	struct iovec remote[FOUND_STATES * STATE_PAGES];
	const struct known *found[FOUND_STATES];
	size_t nfound = 0, niov = 0, first = sn->npages;
	size_t nwords = (sn->stack_hi - sn->stack_lo) / 8;

	if (!s->nknown)
		return;
	/* Every known state found: the rest of the stack can hold no
	 * other (a one-VM program stops the scan at its state's word). */
	for (size_t w = 0; w < 17 + nwords && nfound < FOUND_STATES &&
	     nfound < s->nknown; w++) {
		uint64_t v;
		const struct known *k;
		size_t i;

		if (w < 17)
			v = sn->regs[w];
		else
			memcpy(&v, sn->stack + 8 * (w - 17), 8);
		if (!(k = known_find(s, v)))
			continue;
		for (i = 0; i < nfound && found[i] != k; i++)
			;
		if (i == nfound)
			found[nfound++] = k;
	}
	for (size_t f = 0; f < nfound; f++)
		sn->held[sn->nheld++] = found[f]->state;
	for (size_t f = 0; f < nfound; f++) {
		for (unsigned j = 0; j < found[f]->npages; j++) {
			uint64_t pa = found[f]->pages[j];
			size_t i;

			for (i = 0; i < sn->npages && sn->pages[i].addr != pa; i++)
				;
			if (i < sn->npages || sn->npages >= SNAP_PAGES)
				continue;
			sn->pages[sn->npages].addr = pa;
			local[niov] = (struct iovec){ sn->pages[sn->npages].data,
						      PAGE };
			remote[niov++] = (struct iovec){ (void *)(uintptr_t)pa,
							 PAGE };
			sn->npages++;
		}
	}
	if (niov) {
		ssize_t got = process_vm_readv(sn->tid, local, niov, remote,
					       niov, 0);

		/* A short read: the pages before the first unreadable one. */
		sn->npages = first + (got > 0 ? (size_t)got / PAGE : 0);
	}
}

/* RELEASED: a job-control stop of ours let the thread go in the middle
 * (lc_live_stop_self): what was copied may be of it running.  CUT: let
 * go unread, the stop having lasted its budget (options.stop_budget_us)
 * before the copy was done. */
enum take { TAKEN, GONE, FAILED, RELEASED, CUT };

/* The sampler waits for its ticks, stops threads and decodes them at
 * real-time priority where it may (decoding for one period at most: see
 * flush).  Without it,
 * a sampler that shares a CPU with the thread it samples waits for it
 * to sleep or for the end of its time slice: it would never see it run.
 * (Stopping a thread wakes it on the sampler's CPU, so sharing is the
 * rule, not the exception.) */
static void set_rt(struct lc_sampler *s, bool on)
{
	struct sched_param sp = { .sched_priority = on ? 1 : 0 };

	if (s->rt && s->rt_on != on &&
	    sched_setscheduler(0, (on ? SCHED_FIFO : SCHED_OTHER) |
			       SCHED_RESET_ON_FORK, &sp) == 0) {
		s->rt_on = on;
		if (on)
			s->rt_since = lc_now_s();
		else
			s->rt_off = lc_now_s();
	}
}

/* Our thread's CPU time: what its stops and decoding cost, apart. */
static double thread_cpu_s(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) < 0)
		return 0;
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static enum take take_copy(struct lc_sampler *s, struct tstate *ts,
			   int sched_fd, double *stop_us);

/* The stop has held its thread longer than budget seconds. */
static bool over_budget(const struct snap *sn, double budget)
{
	return lc_now_s() - sn->t_stopped > budget;
}

/* Seize, stop, copy, let go.  *stop_us gets how long it was stopped. */
static enum take take(struct lc_sampler *s, struct tstate *ts, int sched_fd,
		      double *stop_us)
{
	double c0 = thread_cpu_s();
	enum take k = take_copy(s, ts, sched_fd, stop_us);

	s->prof->q.sampler_stop_cpu_s += thread_cpu_s() - c0;
	return k;
}

/* A copy about to be taken of thread tid. */
static void snap_reset(struct snap *sn, int tid)
{
	sn->tid = tid;
	sn->asleep = false;
	sn->syscall = -1;
	sn->slices = UINT64_MAX;
	sn->npages = 0;
	sn->nheld = 0;
	sn->t_stopped = 0;
	sn->stack_lo = sn->stack_hi = 0;
}

/* Copy what the thread's sample decodes, its registers in s->cur: one
 * process_vm_readv for last time's Lua pages and the top of its stack,
 * which ends where its mapping does. */
static void copy_snap(struct lc_sampler *s, struct tstate *ts)
{
	struct snap *sn = s->cur;
	struct iovec local[HOT_PAGES + 1], remote[HOT_PAGES + 1];
	size_t niov = 0;

	sn->stack_lo = (sn->regs[7] - 128) & ~7ull;
	{
		uint64_t end = sn->stack_lo + 128 +
			       (ts->stack_need ? ts->stack_need : STACK_COPY);

		uint64_t rs, re;
		unsigned rf;

		ts->stack_end = 0;
		if (lc_memory_region_at(s->t->prog->mem, sn->regs[7], &rs, &re,
					&rf)) {
			ts->stack_end = re;
			if (re < end)
				end = re;
		}
		sn->stack_hi = end > sn->stack_lo ? end : sn->stack_lo;
	}
	for (size_t i = 0; i < ts->nhot_states; i++)
		sn->held[sn->nheld++] = ts->hot_states[i];
	for (size_t i = 0; i < ts->nhot; i++) {
		sn->pages[i].addr = ts->hot[i];
		local[niov] = (struct iovec){ sn->pages[i].data, PAGE };
		remote[niov++] = (struct iovec){ (void *)(uintptr_t)ts->hot[i],
						 PAGE };
	}
	local[niov] = (struct iovec){ sn->stack, sn->stack_hi - sn->stack_lo };
	remote[niov++] = (struct iovec){ (void *)(uintptr_t)sn->stack_lo,
					 sn->stack_hi - sn->stack_lo };
	{
		ssize_t got = process_vm_readv(sn->tid, local, niov, remote,
					       niov, 0);
		/* A short read stops at the first unreadable iovec: a page
		 * freed since; the pages before it and none after count. */
		size_t done = got > 0 ? (size_t)got : 0;
		size_t pages = done / PAGE;

		sn->npages = pages < ts->nhot ? pages : ts->nhot;
		if (done < ts->nhot * PAGE + (sn->stack_hi - sn->stack_lo)) {
			size_t st = done > ts->nhot * PAGE ?
				    done - ts->nhot * PAGE : 0;

			sn->stack_hi = sn->stack_lo + (st & ~7ull);
		}
	}
}

static enum take take_copy(struct lc_sampler *s, struct tstate *ts,
			   int sched_fd, double *stop_us)
{
	struct snap *sn = s->cur;
	struct user_regs_struct u;
	int sig = 0, slot;
	double t0;
	enum take res = TAKEN;
	unsigned long releases = lc_live_releases();
	double budget = s->o.stop_budget_us / 1e6;

	snap_reset(sn, ts->tid);
	/* Held before it is seized: a handler that runs from here on
	 * finds it. */
	slot = lc_live_hold(ts->tid, 0);
	if (ptrace(PTRACE_SEIZE, ts->tid, NULL, NULL) < 0) {
		int e = errno;

		lc_live_unhold(slot);
		return e == ESRCH ? GONE : FAILED;
	}
	t0 = lc_now_s();
	if (ptrace(PTRACE_INTERRUPT, ts->tid, NULL, NULL) < 0) {
		res = GONE;
		goto out;
	}
	/* A signal that arrived first is handed back on detach.  Polling
	 * rather than sleeping: a wake-up of the sampler costs the thread
	 * tens of microseconds more stopped. */
	if (lc_live_wait_stop_spin(ts->tid, &sig,
				   ts->cpu >= 0 && ts->cpu == sched_getcpu() ?
				   0 : SPIN_S) < 0) {
		lc_live_unhold(slot);
		return lc_live_releases() != releases ? RELEASED : GONE;
	}
	sn->t_stopped = lc_now_s();
	lc_live_hold_sig(slot, sig);
	if (ptrace(PTRACE_GETREGS, ts->tid, NULL, &u) < 0) {
		res = FAILED;
		goto out;
	}
	/* The budget is checked between the steps of the copy: a hold
	 * lasts at most the budget and one step (a system call).  A
	 * sampler not given a CPU while it holds a thread (no real-time
	 * priority on a busy machine) holds it that long and more. */
	if (over_budget(sn, budget)) {
		res = CUT;
		goto out;
	}
	lc_live_user_regs(&u, sn->regs);
	/* In a system call (orig_rax is its number) that our interrupt
	 * broke off: it was waiting.  A call that was working on a CPU
	 * ends with its own result before the stop. */
	{
		long ax = (long)u.rax;

		sn->asleep = (long)u.orig_rax >= 0 &&
			     (ax == -EINTR || ax == -K_ERESTARTSYS ||
			      ax == -K_ERESTARTNOINTR ||
			      ax == -K_ERESTARTNOHAND ||
			      ax == -K_ERESTART_RESTARTBLOCK);
		sn->syscall = (long)u.orig_rax;
		sn->sysret = ax;
	}
	/* How many times it was given a CPU, as of the stop: a thread that
	 * was on one when interrupted stops without being given another. */
	if (sched_fd >= 0 &&
	    schedstat_read(sched_fd, &sn->slices, &sn->wait) == UINT64_MAX)
		sn->slices = UINT64_MAX;
	copy_snap(s, ts);
	if (over_budget(sn, budget)) {
		res = CUT;
		goto out;
	}
	copy_found_states(s);
out:
	ptrace(PTRACE_DETACH, ts->tid, NULL, (void *)(long)sig);
	lc_live_unhold(slot);
	{
		double t1 = lc_now_s();

		*stop_us = (t1 - t0) * 1e6;
		/* Held: from the stop we saw to the release.  (Before the
		 * stop it ran, or waited for a CPU it had no more of.)  Not
		 * on a CPU, and not waiting for one either (schedstat counts
		 * neither). */
		if (sn->t_stopped > 0 && t1 > sn->t_stopped) {
			double hold = t1 - sn->t_stopped;

			ts->stopped_s += hold;
			ts->off_ns += (int64_t)(hold * 1e9);
			if (hold * 1e6 > s->prof->q.stop_max_us)
				s->prof->q.stop_max_us = hold * 1e6;
		}
	}
	snap_index(sn);
	return lc_live_releases() != releases ? RELEASED : res;
}

/* ---- the profile sample ---- */

/* Frames of the report's thread, root first into the profile. */
static void add_stack(struct lc_sampler *s, struct tstate *ts,
		      const uint32_t *frames, size_t nframes, int64_t cpu_ns,
		      uint64_t vm, uint64_t coroutine, enum lc_prof_kind leaf,
		      const char *vmstate);

static void add_sample(struct lc_sampler *s, struct tstate *ts,
		       const struct lc_stack *th, int64_t cpu_ns, bool idle)
{
	uint32_t *locs = calloc(th->nframes + 2, sizeof(*locs));
	enum lc_prof_kind leaf;
	uint64_t coroutine = th->nstates ? th->states[0] : 0;
	size_t n;

	if (!locs)
		return;
	n = lc_profile_stack_of(s->prof, th, ts->in ? ts->in : s->in,
				s->o.native, locs, &leaf);
	/* idle: the thread was not running; with --wall that is what the
	 * sample shows. */
	if (idle && s->o.wall)
		leaf = LC_PROF_IDLE;
	/* Remember it for the samples of the same sleep. */
	free(ts->last);
	ts->last = malloc((n ? n : 1) * sizeof(*locs));
	ts->nlast = 0;
	if (ts->last) {
		memcpy(ts->last, locs, n * sizeof(*locs));
		ts->nlast = n;
	}
	ts->last_vm = th->vm;
	ts->last_co = coroutine;
	ts->last_leaf = leaf;
	ts->last_asleep = idle;
	/* What the VM was doing: LuaJIT's vmstate ("trace#N" with the
	 * trace's number). */
	ts->last_vmstate[0] = '\0';
	if (th->vm_label && strcmp(th->vm_label, "trace") == 0)
		snprintf(ts->last_vmstate, sizeof(ts->last_vmstate), "trace#%d",
			 th->trace);
	else if (th->vm_label)
		snprintf(ts->last_vmstate, sizeof(ts->last_vmstate), "%s",
			 th->vm_label);
	add_stack(s, ts, locs, n, cpu_ns, th->vm, coroutine, leaf,
		  ts->last_vmstate[0] ? ts->last_vmstate : NULL);
	free(locs);
}

/* Add a stack (leaf first) with a synthetic leaf frame for what the
 * thread was doing when it is not a frame of its own: the collector,
 * or idleness (--wall). */
static void add_stack(struct lc_sampler *s, struct tstate *ts,
		      const uint32_t *frames, size_t nframes, int64_t cpu_ns,
		      uint64_t vm, uint64_t coroutine, enum lc_prof_kind leaf,
		      const char *vmstate)
{
	struct lc_profile *p = s->prof;
	uint32_t *locs = malloc((nframes + 1) * sizeof(*locs));
	size_t n = 0;

	if (!locs)
		return;
	if (leaf == LC_PROF_GC || leaf == LC_PROF_IDLE) {
		uint32_t fn = lc_profile_func(p, leaf == LC_PROF_GC ? "[GC]" :
					      "[idle]", NULL, 0, leaf);

		if (fn != UINT32_MAX)
			locs[n++] = lc_profile_loc(p, fn, 0, 0);
	}
	memcpy(locs + n, frames, nframes * sizeof(*locs));
	n += nframes;
	lc_profile_add_vmstate(p, locs, n, cpu_ns, ts->tid, ts->name, vm,
			       coroutine, leaf, vmstate);
	free(locs);
}

/* ---- ticks ---- */

/* The CPU a thread last ran on (field 39 of its stat), or -1; *state
 * gets its state letter (R running, S sleeping...), '?' if unknown. */
static int stat_parse(char *buf, char *state);
static int stat_read(int fd, char *state);

static int stat_of(int pid, int tid, char *state)
{
	char path[80];
	int fd, cpu;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	*state = '?';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	cpu = stat_read(fd, state);
	close(fd);
	return cpu;
}

/* The same from the file open at fd (read again from its start). */
static int stat_read(int fd, char *state)
{
	char buf[1024];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	*state = '?';
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return stat_parse(buf, state);
}

static int stat_parse(char *buf, char *state)
{
	char *p;
	int cpu = -1;

	/* The whole file, not a line: comm may hold a newline (and ')'),
	 * so the fields start after the last ')'. */
	if ((p = strrchr(buf, ')'))) {
		/* After "pid (comm)": state is field 3; processor is 39. */
		int field = 2;

		for (char *tok = strtok(p + 1, " "); tok;
		     tok = strtok(NULL, " ")) {
			if (++field == 3)
				*state = tok[0];
			if (field == 39) {
				cpu = atoi(tok);
				break;
			}
		}
	}
	return cpu;
}

/* The number of threads of the process (field 20 of the leader's stat),
 * or -1; *state gets the leader's state letter, '?' if unknown.  The
 * leader's own stat, not the process's: that one adds up every thread's
 * times. */
/* The leader's state and the process's thread count (field 20 of its
 * stat), from the file kept open at *fd (opened on the first call; -1
 * again when the read fails). */
static long threads_of(int pid, int *fd, char *state)
{
	char buf[1024], *p;
	long n = -1;
	ssize_t got;

	*state = '?';
	if (*fd < 0) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, pid);
		*fd = open(path, O_RDONLY | O_CLOEXEC);
		if (*fd < 0)
			return -1;
	}
	got = pread(*fd, buf, sizeof(buf) - 1, 0);
	if (got <= 0) {
		close(*fd);
		*fd = -1;
		return -1;
	}
	buf[got] = '\0';
	/* After "pid (comm)": state is field 3, num_threads field 20. */
	if ((p = strrchr(buf, ')'))) {
		int field = 2;

		for (p++; *p && field < 20;) {
			while (*p == ' ')
				p++;
			if (!*p)
				break;
			if (++field == 3)
				*state = *p;
			else if (field == 20)
				n = strtol(p, NULL, 10);
			while (*p && *p != ' ')
				p++;
		}
	}
	return n;
}

/* List /proc/PID/task into s->list (only the --tid one with it): false if
 * the process is gone. */
static bool relist(struct lc_sampler *s, double now)
{
	char path[64];
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%d/task", s->pid);
	d = opendir(path);
	if (!d)
		return false;
	s->nlist = 0;
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name);
		void *p;

		if (tid <= 0 || (s->o.tid && tid != s->o.tid))
			continue;
		p = realloc(s->list, (s->nlist + 1) * sizeof(*s->list));
		if (!p)
			break;
		s->list = p;
		s->list[s->nlist++] = tid;
	}
	closedir(d);
	s->listed = now;
	return true;
}

/* Keep off the CPUs the sampled threads are running on.  Waking up on a
 * thread's CPU preempts it, and it is then preempted at its next
 * syscall far more often than anywhere else: the samples would pile up
 * at syscall sites (os.clock, I/O).  Only where other CPUs are left, and
 * only while they run: pinned next to a sleeping thread, the sampler
 * would share the CPU it wakes up on and could not look at it until it
 * slept again. */
static void avoid_cpus(struct lc_sampler *s, const cpu_set_t *busy)
{
	cpu_set_t set = s->allowed;
	int n;

	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, busy))
			CPU_CLR(c, &set);
	n = CPU_COUNT(&set);
	if (n > 0 && !CPU_EQUAL(&set, &s->current)) {
		if (sched_setaffinity(0, sizeof(set), &set) == 0)
			s->current = set;
	}
}

/* /proc/PID/task/TID/syscall: "NR ARGS... SP PC" of a blocked thread,
 * where it sleeps; "" if unknown (running, or not readable). */
static void syscall_of(int pid, int tid, char *buf, size_t size)
{
	char path[80];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(buf, (int)size, f) || strncmp(buf, "running", 7) == 0)
		buf[0] = '\0';
	fclose(f);
}

/* A thread's schedstat, open: "RUN_NS WAIT_NS TIMESLICES", the last the
 * number of times it was given a CPU.  -1 if it cannot be opened. */
static int schedstat_open(int pid, int tid)
{
	char path[80];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* Its run time (UINT64_MAX if unreadable); into *slices how many times
 * it was given a CPU, into *wait how long it waited for one (as of the
 * last time it was given one). */
static uint64_t schedstat_read(int fd, uint64_t *slices, uint64_t *wait)
{
	char buf[128];
	unsigned long long ns, wait_ns, n;
	ssize_t got = fd < 0 ? -1 : pread(fd, buf, sizeof(buf) - 1, 0);

	if (got <= 0)
		return UINT64_MAX;
	buf[got] = '\0';
	{
		char *p = buf, *e;

		ns = strtoull(p, &e, 10);
		if (e == p)
			return UINT64_MAX;
		wait_ns = strtoull(p = e, &e, 10);
		if (e == p)
			return UINT64_MAX;
		n = strtoull(p = e, &e, 10);
		if (e == p)
			return UINT64_MAX;
	}
	*slices = n;
	*wait = wait_ns;
	return ns;
}

/* The index of the records by tid, rebuilt when they move. */
static void ts_reindex(struct lc_sampler *s)
{
	size_t cap = 64;

	while (cap < 2 * (s->nts + 1))
		cap *= 2;
	if (cap - 1 != s->ts_mask || !s->ts_index) {
		uint32_t *v = calloc(cap, sizeof(*v));

		if (!v)
			return;	/* the old index stays, too small: lookups scan */
		free(s->ts_index);
		s->ts_index = v;
		s->ts_mask = cap - 1;
	} else {
		memset(s->ts_index, 0, cap * sizeof(*s->ts_index));
	}
	for (size_t i = 0; i < s->nts; i++) {
		size_t h = (size_t)s->ts[i].tid * 2654435761u & s->ts_mask;

		while (s->ts_index[h])
			h = (h + 1) & s->ts_mask;
		s->ts_index[h] = (uint32_t)i + 1;
	}
}

static struct tstate *tstate(struct lc_sampler *s, int tid)
{
	struct tstate *p;
	size_t h;

	if (s->ts_index && 2 * (s->nts + 1) <= s->ts_mask + 1) {
		for (h = (size_t)tid * 2654435761u & s->ts_mask; s->ts_index[h];
		     h = (h + 1) & s->ts_mask)
			if (s->ts[s->ts_index[h] - 1].tid == tid)
				return &s->ts[s->ts_index[h] - 1];
	} else {
		for (size_t i = 0; i < s->nts; i++)
			if (s->ts[i].tid == tid)
				return &s->ts[i];
	}
	if (s->nts >= MAX_THREADS)
		return NULL;
	p = realloc(s->ts, (s->nts + 1) * sizeof(*p));
	if (!p)
		return NULL;
	s->ts = p;
	p = &s->ts[s->nts++];
	memset(p, 0, sizeof(*p));
	p->tid = tid;
	p->cpu_ns = UINT64_MAX;
	p->stat_fd = p->sched_fd = -1;
	p->name = lc_live_comm(s->pid, tid);
	if (s->ts_index && 2 * (s->nts + 1) <= s->ts_mask + 1) {
		for (h = (size_t)tid * 2654435761u & s->ts_mask; s->ts_index[h];
		     h = (h + 1) & s->ts_mask)
			;
		s->ts_index[h] = (uint32_t)s->nts;
	} else {
		ts_reindex(s);
	}
	return p;
}

/* What to copy at this thread's next stop: what a Lua stack changes as
 * it runs (the lua_States on the thread, their CallInfos, the used part
 * of their data stacks), and the machine stack up to a little above the
 * outermost frame this sample unwound. */
static void learn_hot(struct lc_sampler *s, struct tstate *ts,
		      const struct lc_interp *in, struct lc_pass *pass,
		      const struct lc_stack *th)
{
	uint64_t rsp = s->cur->regs[7], top = 0, outer = 0;

	ts->nhot = 0;
	ts->nhot_states = 0;
	ts->hot_over = false;
	if (th && in && pass) {
		size_t room = 16 + th->nframes;
		uint64_t (*r)[2] = malloc(room * sizeof(*r));
		size_t n = r ? in->ops->hot(pass, th->states, th->nstates,
					      th->frames, th->nframes, r,
					      room) : 0;

		ts->hot_over = n == room;
		for (size_t i = 0; i < n; i++) {
			add_pages(ts->hot, &ts->nhot, HOT_PAGES, r[i][0], r[i][1]);
			/* a range cut, or pages left out: more than hot
			 * holds */
			if (ts->nhot == HOT_PAGES &&
			    (r[i][1] > HOT_PAGES * PAGE || i + 1 < n))
				ts->hot_over = true;
		}
		/* And each state's own, for when it runs again, maybe on
		 * another thread. */
		for (size_t i = 0; i < th->nstates && i < LC_SAMPLER_HOT_STATES; i++)
			ts->hot_states[ts->nhot_states++] = th->states[i];
		for (size_t i = 0; r && i < th->nstates && i < LC_SAMPLER_HOT_STATES; i++)
			known_learn(s, th->states[i], r,
				    in->ops->hot(pass, &th->states[i], 1,
						    th->frames, th->nframes,
						    r, room));
		free(r);
	}
	for (size_t i = 0; th && i < th->nframes; i++) {
		uint64_t sp = th->frames[i].sp;

		if (th->frames[i].kind != LC_FRAME_LUA && sp > outer &&
		    sp >= rsp)
			outer = sp;
		if (th->frames[i].kind != LC_FRAME_LUA && sp > top &&
		    sp >= rsp && sp - rsp < STACK_COPY)
			top = sp;
	}
	ts->stack_need = 0;
	ts->stack_top = outer;
	if (top) {
		uint64_t need = (top - rsp + STACK_SLACK + 1023) & ~1023ull;

		ts->stack_need = need < STACK_MIN ? STACK_MIN :
				 need > STACK_COPY ? STACK_COPY : need;
	}
}

/* Read VM vm's names (from the running process: they change rarely) the
 * first time it is seen, and again while its name global is unset. */
static const struct vmname *name_vm(struct lc_sampler *s,
				    const struct lc_interp *in,
				    struct lc_pass *pass, uint64_t vm)
{
	struct vmname *n = NULL;
	double now = lc_now_s();

	for (size_t i = 0; i < s->nnames; i++)
		if (s->names[i].vm == vm) {
			n = &s->names[i];
			break;
		}
	if (n && (n->name || !s->o.vm_name || now - n->tried < 1.0))
		return n;
	if (!n) {
		void *p;

		if (s->nnames >= VM_NAMES ||
		    !(p = realloc(s->names, (s->nnames + 1) * sizeof(*n))))
			return NULL;
		s->names = p;
		n = &s->names[s->nnames++];
		memset(n, 0, sizeof(*n));
		n->vm = vm;
	}
	n->tried = now;
	if (in->ops->vm_names) {
		free(n->name);
		free(n->alloc);
		n->name = n->alloc = NULL;
		in->ops->vm_names(pass, vm, s->o.vm_name, &n->name,
				     &n->alloc);
	}
	lc_profile_set_vm(s->prof, vm, n->name, n->alloc);
	return n;
}

static const char *vm_name_of(const struct lc_sampler *s, uint64_t vm)
{
	for (size_t i = 0; i < s->nnames; i++)
		if (s->names[i].vm == vm)
			return s->names[i].name;
	return NULL;
}

static int decode_copy(struct lc_sampler *s, struct tstate *ts,
		       struct lc_stack *st);

/* Decode the copy just taken, in a pass of its own, into *st; learn what
 * to copy next time.  0, or -1 when the pass cannot begin. */
static int decode(struct lc_sampler *s, struct tstate *ts, struct lc_stack *st)
{
	double c0 = thread_cpu_s();
	int r = decode_copy(s, ts, st);

	s->prof->q.sampler_decode_cpu_s += thread_cpu_s() - c0;
	return r;
}

static int decode_copy(struct lc_sampler *s, struct tstate *ts,
		       struct lc_stack *st)
{
	struct lc_interp *in = ts->in ? ts->in : s->in;
	struct lc_stack_options so = { .max_frames = (size_t)s->o.max_frames,
				       .interp = in };
	struct lc_pass *pass = NULL;
	struct lc_error *err = in ? in->ops->begin(in, &pass) : NULL;

	if (err) {
		lc_error_destroy(err);
		memset(st, 0, sizeof(*st));
		learn_hot(s, ts, NULL, NULL, NULL);
		return -1;
	}
	s->live_reads = 0;
	s->nlive = 0;
	memset(s->live_slot, 0, sizeof(s->live_slot));
	lc_stack_decode(s->t, pass, ts->tid, &so, st);
	/* Two interpreters in the process: a thread that holds no state
	 * of the one it held last is read with the others. */
	for (size_t i = 0; pass && !st->nstates && i < s->nins; i++) {
		struct lc_interp *o = s->ins[i];
		struct lc_pass *op = NULL;
		struct lc_stack other;

		if (o == in || (err = o->ops->begin(o, &op))) {
			lc_error_destroy(err);
			err = NULL;
			continue;
		}
		so.interp = o;
		lc_stack_decode(s->t, op, ts->tid, &so, &other);
		if (!other.nstates) {
			lc_stack_deinit(&other);
			o->ops->end(op);
			continue;
		}
		lc_stack_deinit(st);
		*st = other;
		in->ops->end(pass);
		in = ts->in = o;
		pass = op;
	}
	if (st->vm && pass)
		name_vm(s, in, pass, st->vm);
	learn_hot(s, ts, in, pass, st);
	if (pass)
		in->ops->end(pass);
	return 0;
}

static void count_stop(struct lc_sampler *s, enum take k, double stop_us)
{
	if (k == GONE || k == RELEASED)
		return;
	if (s->nstops < MAX_STOPS) {
		double *p = s->nstops % 4096 ? s->stops :
			    realloc(s->stops, (s->nstops + 4096) * sizeof(*p));

		if (p) {
			s->stops = p;
			s->stops[s->nstops++] = stop_us;
		}
	}
	s->prof->q.stop_total_s += stop_us / 1e6;
}

/* A sample point, as read just before the stop. */
struct point {
	int64_t weight;		/* the time it stands for */
	int64_t delta;		/* CPU time used since the last point */
	int sched_fd;		/* the thread's schedstat, or -1 */
	uint64_t slices;	/* its timeslices, UINT64_MAX unknown */
	uint64_t wait;		/* its wait for a CPU */
	bool ours;		/* runnable on the CPU we run on */
	double rt_since;	/* since when we held our CPU at real-time
				   priority, as of the stop */
	double t_read;		/* when its state was read */
};

/* A stop of this tick, to be decoded after the tick's last stop. */
struct pending {
	size_t ts;		/* index into s->ts */
	struct point pt;
	enum take k;
	double stop_us;
	bool asleep;		/* --nonblocking: a --wall point of a
				   thread asleep */
};

/* A sleep that ended by its own timeout (x86-64 numbers): the system
 * call and its result.  A thread stopped at the end of one, given a CPU
 * since we took ours, was woken by the interrupt that woke us (timers
 * due within their slack expire together), not preempted by us. */
static bool timed_out(long nr, long ret)
{
	switch (nr) {
	case 202:	/* futex */
	case 449:	/* futex_wait */
	case 455:	/* futex_waitv */
		return ret == -ETIMEDOUT;
	case 35:	/* nanosleep */
	case 230:	/* clock_nanosleep */
	case 7:		/* poll */
	case 23:	/* select */
	case 232:	/* epoll_wait */
	case 270:	/* pselect6 */
	case 271:	/* ppoll */
	case 281:	/* epoll_pwait */
	case 441:	/* epoll_pwait2 */
		return ret == 0;
	case 128:	/* rt_sigtimedwait */
		return ret == -EAGAIN;
	default:
		return false;
	}
}

/* Stopped at the end of a system call that sleeps (x86-64 numbers; a
 * futex call that waits): it slept since its point, and woke. */
static bool woke_from_sleep(const struct snap *sn)
{
	switch (sn->syscall) {
	case 202: {	/* futex: the op in rsi, DWARF register 4 */
		unsigned op = (unsigned)sn->regs[4] & 127;

		return op == 0 || op == 6 || op == 9 || op == 11 || op == 13;
	}
	case 449: case 455:		/* futex_wait, futex_waitv */
	case 34: case 35: case 230:	/* pause, nanosleep, clock_nanosleep */
	case 7: case 23: case 270: case 271:	/* poll, select, pselect6, ppoll */
	case 232: case 281: case 441:	/* epoll_wait, epoll_pwait(2) */
	case 128: case 130:		/* rt_sigtimedwait, rt_sigsuspend */
	case 61: case 247:		/* wait4, waitid */
		return true;
	default:
		return false;
	}
}

/* Was the thread on a CPU at its point?  It was when it stopped without
 * being given a CPU again; when it was given one once, having waited
 * for it less than the time since its point (it lost its CPU after the
 * point, and stopped where it lost it) and not woken from a sleep; or
 * when it runs on ours and waited for it just from when we took that
 * CPU at real-time priority. */
static bool on_cpu(const struct point *pt, const struct snap *sn)
{
	if (sn->asleep)
		return false;
	if (pt->slices == UINT64_MAX || sn->slices == UINT64_MAX ||
	    sn->slices == pt->slices)
		return true;
	if (sn->slices - pt->slices == 1 && !woke_from_sleep(sn) &&
	    (double)(sn->wait - pt->wait) / 1e9 + 5e-6 <
	    sn->t_stopped - pt->t_read)
		return true;
	/* Taken from it: it waited from the moment we took the CPU to the
	 * stop, not less (woken since) nor more (waiting already).  A
	 * thread we preempt waits 0-20 us more than we held the CPU by our
	 * clock (measured: its switch in, its stop, our wake-up). */
	{
		double held = sn->t_stopped - pt->rt_since;
		double waited = (double)(sn->wait - pt->wait) / 1e9;

		return pt->ours && sn->slices - pt->slices == 1 &&
		       !timed_out(sn->syscall, sn->sysret) && held > 0 &&
		       waited - held >= -15e-6 &&
		       waited - held <= 25e-6 + 0.02 * held;
	}
}

static bool held(const struct snap *sn, uint64_t state)
{
	for (size_t i = 0; i < sn->nheld; i++)
		if (sn->held[i] == state)
			return true;
	return false;
}

/* A sample decoded: charged to its thread, kept unless --vm filters
 * it out.  asleep: the thread was not on a CPU (--wall); read_live: some
 * of it was read from the running process. */
static void keep_sample(struct lc_sampler *s, struct tstate *ts,
			const struct lc_stack *st, int64_t weight, bool asleep,
			bool read_live)
{
	if (st->vm) {
		size_t i = 0;

		while (i < s->nvms && s->vms[i] != st->vm)
			i++;
		if (i == s->nvms && s->nvms < LC_SAMPLER_VMS)
			s->vms[s->nvms++] = st->vm;
	}
	/* What the thread's points on a CPU stood for, whichever VM they
	 * found: the calibration's measure. */
	if (st->nframes && !asleep)
		ts->charged_ns += weight;
	if (st->nframes == 0) {
		s->prof->q.lost_read++;
	} else if ((s->o.vm && st->vm != s->o.vm) ||
		   (s->o.vm_only &&
		    (!vm_name_of(s, st->vm) ||
		     strcmp(vm_name_of(s, st->vm), s->o.vm_only) != 0))) {
		/* Another VM's sample (or no VM's): filtered out, and not
		 * one the run attempted.  A sleep that follows is not one
		 * of the VM's either. */
		s->prof->q.attempted--;
		free(ts->last);
		ts->last = NULL;
		ts->nlast = 0;
	} else {
		if (st->partial) {
			if (st->partial & LC_PARTIAL_TRUNCATED)
				s->prof->q.truncated++;
			else if (read_live)
				s->prof->q.lost_inconsistent++;
		}
		add_sample(s, ts, st, weight, asleep);
		s->prof->q.taken++;
		if (!asleep) {
			s->prof->q.cpu_charged_ns += weight;
			ts->kept_ns += weight;
		}
	}
}

/* ---- functions by name (lc_sampler_resolve) ---- */

struct resolve {
	const char *name;
	Dwfl_Module *mod;
	GElf_Addr addr;		/* in the process */
	bool shim;		/* only in our allocation shim so far */
};

static int resolve_cb(Dwfl_Module *mod, void **ud, const char *mname,
		      Dwarf_Addr start, void *arg)
{
	struct resolve *r = arg;
	int n = dwfl_module_getsymtab(mod);

	(void)ud;
	(void)start;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr,
							   NULL, NULL, NULL);

		if (!name || sym.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    strcmp(name, r->name) != 0)
			continue;
		/* the shim's wrappers of Lua's API are not the function */
		bool shim = mname && strstr(mname, "libluacore-alloc") != NULL;

		if (!r->mod || (r->shim && !shim)) {
			r->mod = mod;
			r->addr = addr;
			r->shim = shim;
		}
		return r->shim ? DWARF_CB_OK : DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

struct lc_error *lc_sampler_resolve(struct lc_sampler *s, const char *name,
				    struct lc_probe_point *ret)
{
	struct resolve r = { .name = name };
	Dwfl *dwfl = s->t->prog->dwfl;
	GElf_Addr bias = 0, vaddr;
	Elf *elf;
	size_t nph = 0;
	const char *path;

	memset(ret, 0, sizeof(*ret));
	if (dwfl)
		dwfl_getmodules(dwfl, resolve_cb, &r, 0);
	if (!r.mod)
		return lc_error_create(LC_ERR_NOT_FOUND,
			"--at %s: no module of process %d defines a function of that name (symbols of the program and its libraries, and their debug files)",
			name, s->pid);
	path = lc_program_module_name(s->t->prog, r.mod);
	elf = dwfl_module_getelf(r.mod, &bias);
	if (!elf || !path || elf_getphdrnum(elf, &nph) != 0)
		return lc_error_create(LC_ERR_INVALID,
			"--at %s: its module's file cannot be read", name);
	vaddr = r.addr - bias;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    vaddr < ph.p_vaddr || vaddr >= ph.p_vaddr + ph.p_filesz)
			continue;
		ret->name = strdup(name);
		ret->module = strdup(path);
		ret->addr = r.addr;
		ret->offset = vaddr - ph.p_vaddr + ph.p_offset;
		if (!ret->name || !ret->module) {
			free(ret->name);
			free(ret->module);
			return &lc_error_nomem;
		}
		return NULL;
	}
	return lc_error_create(LC_ERR_INVALID,
		"--at %s: 0x%" PRIx64 " is in no loadable segment of %s", name,
		(uint64_t)r.addr, path);
}

/* ---- allocations (lc_sampler_take_parked) ---- */

/* The frames inner to the one whose pc is caller (the allocator's
 * caller, by its return address), native ones: the shim's own.  None
 * dropped when no frame has that pc. */
static void drop_inner(struct lc_stack *st, uint64_t caller)
{
	size_t i = 0;

	if (!caller)
		return;
	while (i < st->nframes && !(st->frames[i].kind == LC_FRAME_NATIVE &&
				    st->frames[i].pc == caller))
		i++;
	if (i == st->nframes)
		return;
	for (size_t k = 0; k < i; k++) {
		if (st->frames[k].kind != LC_FRAME_NATIVE)
			return;
	}
	for (size_t k = 0; k < i; k++)
		lc_frame_free(&st->frames[k]);
	memmove(st->frames, st->frames + i,
		(st->nframes - i) * sizeof(*st->frames));
	st->nframes -= i;
}

/* A state not seen yet: its pages (the lua_State, its stack) learned
 * from memory now, while the thread that may run it waits. */
static void learn_hint(struct lc_sampler *s, uint64_t state)
{
	struct lc_interp *in = s->in;
	struct lc_pass *pass = NULL;
	struct lc_error *err;
	uint64_t r[24][2];
	size_t n;

	if (!state || !in || known_find(s, state))
		return;
	if ((err = in->ops->begin(in, &pass))) {
		lc_error_destroy(err);
		return;
	}
	n = in->ops->hot(pass, &state, 1, NULL, 0, r, 24);
	if (n)
		known_learn(s, state, r, n);
	in->ops->end(pass);
}

/* What this sample of ts read of its Lua state (its hot pages now,
 * learnt by the decoding) was all in the copy, and so were the machine
 * frames it unwound. */
static bool copy_had_hot(const struct snap *sn, const struct tstate *ts)
{
	if (ts->hot_over || (ts->stack_top && ts->stack_top >= sn->stack_hi))
		return false;
	for (unsigned i = 0; i < ts->nhot; i++) {
		size_t j = 0;

		while (j < sn->npages && sn->pages[j].addr != ts->hot[i])
			j++;
		if (j == sn->npages)
			return false;
	}
	return true;
}

/* The parked thread's copy in s->cur, taken: decoded, and into the
 * profile.  early: it went (or goes, go) before decoding, so that a
 * state the copy lacks was read as it ran: not a sample; whole: nor is
 * one whose state's pages the copy lacks any of (they were read as it
 * ran: a CallInfo, a stack slot).  0; -1 lost; 1 lost, it ran a state
 * the copy lacked; 2 lost, the copy lacked pages of its state. */
static int take_finish(struct lc_sampler *s, struct tstate *ts,
		       uint64_t caller, int64_t objects, int64_t bytes,
		       bool early, bool whole, void (*go)(void *arg),
		       void *arg, long *sample)
{
	struct lc_stack st;
	enum lc_prof_kind leaf;
	uint32_t *locs;
	size_t n;
	int r;

	if (early && go)
		go(arg);
	r = decode(s, ts, &st);
	if (!early && go)
		go(arg);
	if (r < 0) {
		s->prof->q.lost_read++;
		return -1;
	}
	if ((whole && !st.nstates) ||
	    (early && st.nstates && (!held(s->cur, st.states[0]) ||
				     (whole && !copy_had_hot(s->cur, ts))))) {
		/* (a copy in which no Lua state is found: as one that
		 * lacks the state it ran) */
		r = st.nstates && held(s->cur, st.states[0]) ? 2 : 1;
		s->prof->q.lost_inconsistent++;
		lc_stack_deinit(&st);
		return r;
	}
	if (st.vm) {
		size_t i = 0;

		while (i < s->nvms && s->vms[i] != st.vm)
			i++;
		if (i == s->nvms && s->nvms < LC_SAMPLER_VMS)
			s->vms[s->nvms++] = st.vm;
	}
	if (st.nframes == 0) {
		s->prof->q.lost_read++;
		lc_stack_deinit(&st);
		return -1;
	}
	drop_inner(&st, caller);
	if ((s->o.vm && st.vm != s->o.vm) ||
	    (s->o.vm_only && (!vm_name_of(s, st.vm) ||
			      strcmp(vm_name_of(s, st.vm), s->o.vm_only) != 0))) {
		s->prof->q.attempted--;
		lc_stack_deinit(&st);
		return 0;
	}
	if (st.partial & LC_PARTIAL_TRUNCATED)
		s->prof->q.truncated++;
	locs = calloc(st.nframes + 2, sizeof(*locs));
	if (!locs) {
		lc_stack_deinit(&st);
		return -1;
	}
	n = lc_profile_stack_of(s->prof, &st, ts->in ? ts->in : s->in,
				s->o.native, locs, &leaf);
	*sample = lc_profile_add_alloc(s->prof, locs, n, ts->tid, ts->name,
				       st.vm, st.nstates ? st.states[0] : 0,
				       leaf, objects, bytes);
	free(locs);
	lc_stack_deinit(&st);
	if (*sample < 0)
		return -1;
	s->prof->q.taken++;
	return 0;
}

/* The parked thread tid's tstate and the copy to fill, reset, with its
 * registers; NULL (lost) without them. */
static struct tstate *park_begin(struct lc_sampler *s, int tid,
				 const uint64_t *regs)
{
	struct tstate *ts = tstate(s, tid);

	s->prof->q.attempted++;
	/* the first of the tick's copies: no tick runs meanwhile */
	if (!s->nsnaps) {
		s->snaps[0].pages = calloc(SNAP_PAGES, sizeof(*s->snaps[0].pages));
		if (s->snaps[0].pages)
			s->nsnaps = 1;
	}
	if (!ts || !s->nsnaps) {
		s->prof->q.lost_read++;
		return NULL;
	}
	s->cur = &s->snaps[0];
	snap_reset(s->cur, tid);
	memcpy(s->cur->regs, regs, sizeof(s->cur->regs));
	s->cur->from_pc = s->cur->from_sp = 0;
	return ts;
}

int lc_sampler_take_parked(struct lc_sampler *s, int tid,
			   const uint64_t *regs, uint64_t caller,
			   uint64_t hint, int64_t objects, int64_t bytes,
			   void (*go)(void *arg), void *arg, long *sample)
{
	struct tstate *ts;
	struct snap *sn;
	double c0;
	int r;

	*sample = -1;
	if (!(ts = park_begin(s, tid, regs))) {
		go(arg);
		return -1;
	}
	learn_hint(s, hint);
	sn = s->cur;
	/* It waits for our answer: nothing of its stack or of its VM
	 * changes meanwhile, and nothing needs stopping.  What the copy
	 * costs us is its time (we run all along): no system call for a
	 * CPU clock while the thread waits. */
	c0 = lc_now_s();
	copy_snap(s, ts);
	copy_found_states(s);
	snap_index(sn);
	s->prof->q.sampler_stop_cpu_s += lc_now_s() - c0;
	/* With the Lua states it ran last time in the copy, it goes now
	 * and the copy is decoded after; a thread that runs a state the
	 * copy lacks was read as it ran: not a sample.  Without them (its
	 * first park), it waits until its stack is decoded. */
	r = take_finish(s, ts, caller, objects, bytes, sn->nheld > 0, false,
			go, arg, sample);
	return r > 0 ? -1 : r;
}

int lc_sampler_take_copied(struct lc_sampler *s, int tid,
			   const uint64_t *regs, uint64_t caller,
			   const struct lc_sampler_copy *c, int64_t objects,
			   int64_t bytes, long *sample)
{
	struct tstate *ts;
	struct snap *sn;
	size_t len;

	*sample = -1;
	if (!(ts = park_begin(s, tid, regs)))
		return -1;
	sn = s->cur;
	/* Its stack as copied from [stack_lo, ...), no further than the
	 * mapping that holds rsp (what copy_snap would take) */
	len = c->stack_len < sizeof(sn->stack) ? c->stack_len :
	      sizeof(sn->stack);
	/* from rsp - 128, as the protocol says, or not a sample */
	sn->stack_lo = c->stack_lo;
	if (c->stack_lo != ((sn->regs[7] - 128) & ~7ull) || !c->stack_len) {
		s->prof->q.lost_read++;
		return -1;
	}
	{
		uint64_t rs, re;
		unsigned rf;

		if (len && lc_memory_region_at(s->t->prog->mem, sn->regs[7],
					       &rs, &re, &rf) &&
		    re > sn->stack_lo && re - sn->stack_lo < len)
			len = re - sn->stack_lo;
	}
	memcpy(sn->stack, c->stack, len);
	sn->stack_hi = sn->stack_lo + (len & ~7ull);
	for (size_t i = 0; i < c->npages && sn->npages < SNAP_PAGES; i++) {
		if (c->page_addr[i] & (PAGE - 1))
			continue;
		sn->pages[sn->npages].addr = c->page_addr[i];
		memcpy(sn->pages[sn->npages].data,
		       (const uint8_t *)c->pages + i * PAGE, PAGE);
		sn->npages++;
	}
	for (size_t i = 0; i < c->nstates &&
	     sn->nheld < sizeof(sn->held) / sizeof(sn->held[0]); i++)
		sn->held[sn->nheld++] = c->states[i];
	snap_index(sn);
	/* It went on as soon as it had copied: what the copy lacks is read
	 * as it runs, and a state it lacks makes no sample. */
	return take_finish(s, ts, caller, objects, bytes, true, true, NULL,
			   NULL, sample);
}

/* Read the target's private anonymous writable mappings again (their
 * list stays as it was when the maps cannot be read). */
static void anon_reread(struct lc_sampler *s)
{
	char path[64], line[512];
	uint64_t (*v)[2] = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", s->pid);
	if (!(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, inode;
		char perms[8] = "", name[64] = "";

		if (!strchr(line, '\n')) {
			/* a path longer than the line: not anonymous */
			int c;

			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		if (sscanf(line, "%llx-%llx %7s %*s %*s %llu %63s", &lo, &hi,
			   perms, &inode, name) < 4 ||
		    strcmp(perms, "rw-p") != 0 || inode != 0 ||
		    (name[0] && strcmp(name, "[heap]") != 0 &&
		     strcmp(name, "[stack]") != 0 &&
		     strncmp(name, "[anon:", 6) != 0))
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 256;
			uint64_t (*nv)[2] = nc < (1u << 20) ?
					    realloc(v, nc * sizeof(*nv)) : NULL;

			if (!nv)
				break;
			v = nv;
			cap = nc;
		}
		v[n][0] = lo;
		v[n][1] = hi;
		n++;
	}
	fclose(f);
	free(s->anon);
	s->anon = v;
	s->nanon = n;
	s->anon_at = lc_now_s();
}

/* [a, a + len) lies in one private anonymous writable mapping, as of the
 * last reading of the maps. */
static bool anon_holds(const struct lc_sampler *s, uint64_t a, uint64_t len)
{
	size_t lo = 0, hi = s->nanon;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->anon[mid][1] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nanon && s->anon[lo][0] <= a &&
	       a + len <= s->anon[lo][1] && a + len >= a;
}

bool lc_sampler_hot(struct lc_sampler *s, int tid, struct lc_sampler_hot *h)
{
	struct tstate *ts = tstate(s, tid);

	memset(h, 0, sizeof(*h));
	if (!ts || !ts->nhot_states || !ts->stack_end)
		return false;
	/* Only what a plain read of memory can give: a thread that copies
	 * itself reads these in its kernel's send, which waits for a file
	 * (FUSE, NFS), a device or a fault handler behind a page.  The maps
	 * are read again every ANON_REREAD_S: a page mapped otherwise since
	 * is not copied, or fails the copy. */
	if (!s->anon_at || lc_now_s() - s->anon_at >= ANON_REREAD_S)
		anon_reread(s);
	if (!anon_holds(s, ts->stack_end - 1, 1))
		return false;
	for (unsigned i = 0; i < ts->nhot; i++)
		if (anon_holds(s, ts->hot[i], PAGE))
			h->page[h->npages++] = ts->hot[i];
	h->nstates = ts->nhot_states;
	memcpy(h->state, ts->hot_states, ts->nhot_states * sizeof(*h->state));
	h->stack_need = ts->stack_need ? ts->stack_need : STACK_COPY;
	h->stack_end = ts->stack_end;
	return true;
}

/* Stop the thread at this sample point and see what it runs.  A thread
 * found on a CPU (in user code, or in a system call doing work) is
 * charged the point's weight, with this stack.  One found waiting in a
 * system call, or waiting for a CPU (it had to be given one to stop:
 * its timeslices went up), was not on a CPU: with --wall its stack is
 * an idle sample; in CPU mode nothing is charged, and the CPU it used
 * since its last point is CPU between samples. */
static void finish_sample(struct lc_sampler *s, const struct pending *pd)
{
	struct tstate *ts = &s->ts[pd->ts];
	const struct point *pt = &pd->pt;
	struct lc_stack st;
	int err;
	double stop_us = 0;
	enum take k = pd->k;
	int64_t weight = pt->weight;

	count_stop(s, k, pd->stop_us);
	if (k == RELEASED)
		return;	/* not a sample, nor a lost one: we were stopped */
	/* Runnable on our CPU: it waits for the tick to let that go. */
	if (k == TAKEN && pt->ours && !s->cur->asleep)
		ts->preempted = true;
	/* Stopped long after its point though it kept its CPU (our CPU was
	 * taken from us, or the interrupt was noticed only at its next
	 * system call, as happens in virtual machines): it ran on, and
	 * what it runs then need not be what it ran at the point.  Dropped:
	 * not a sample.  (One that lost its CPU meanwhile stopped where it
	 * lost it: on_cpu tells.) */
	if (k == TAKEN && s->cur->t_stopped - pt->t_read > LATE_S &&
	    (pt->slices == UINT64_MAX || s->cur->slices == pt->slices)) {
		s->prof->q.late_stops++;
		if (on_cpu(pt, s->cur))
			s->prof->q.cpu_late_ns += weight;
		else if (pt->delta > 0 && !s->o.wall)
			s->prof->q.cpu_between_ns += pt->delta;
		return;
	}
	if (k == TAKEN && !s->cur->asleep && !on_cpu(pt, s->cur) &&
	    !s->o.wall) {
		s->prof->q.found_waiting++;
		if (pt->delta > 0)
			s->prof->q.cpu_between_ns += pt->delta;
		return;
	}
	if (k == TAKEN && s->cur->asleep && !s->o.wall) {
		s->prof->q.found_asleep++;
		if (pt->delta > 0)
			s->prof->q.cpu_between_ns += pt->delta;
		ts->last_asleep = true;
		return;
	}
	s->prof->q.attempted++;
	if (k == GONE) {
		s->prof->q.lost_gone++;
		return;
	}
	if (k == FAILED) {
		s->prof->q.lost_read++;
		return;
	}
	if (k == CUT) {
		s->prof->q.lost_held++;
		return;
	}
	err = decode(s, ts, &st);
	if (!err && st.nstates && !held(s->cur, st.states[0])) {
		/* The state it runs is one the stop did not copy (the first
		 * sample of it), so it was read from the running process:
		 * take the thread again, now copying that state while it is
		 * stopped.  Only then: a second stop comes later than the
		 * point, and may find the thread elsewhere. */
		bool was_rt = s->rt_on;

		lc_stack_deinit(&st);
		set_rt(s, true);
		k = take(s, ts, -1, &stop_us);
		if (!was_rt)
			set_rt(s, false);
		count_stop(s, k, stop_us);
		if (k == RELEASED) {
			s->prof->q.attempted--;
			return;
		}
		if (k != TAKEN) {
			if (k == GONE)
				s->prof->q.lost_gone++;
			else if (k == CUT)
				s->prof->q.lost_held++;
			else
				s->prof->q.lost_read++;
			return;
		}
		err = decode(s, ts, &st);
	}
	if (err) {
		s->prof->q.lost_read++;
		return;
	}
	keep_sample(s, ts, &st, weight, s->cur->asleep, s->live_reads > 0);
	lc_stack_deinit(&st);
}

struct tick {
	double now, period;
	cpu_set_t busy;			/* CPUs threads were found running on */
	uint64_t seen_ns;		/* CPU time the reads account for */
	struct pending batch[BATCH];	/* stops not yet decoded */
	size_t nbatch;
};

/* Decode the stops of the batch, still at real-time priority while the
 * tick has held its CPU less than RT_SHARE of a period.  Decoding at
 * normal priority on a busy machine waits for the CPU, and the next
 * tick comes late when the program is busiest: whatever runs then would
 * be charged the whole wait, short work that ended meanwhile nothing
 * (measured with bench/sky.sh: bursts 1 ms long came out 3-4 points
 * low at 1 kHz on 2 CPUs). */
static void nb_flush(struct lc_sampler *s, struct tick *k);

static void flush(struct lc_sampler *s, struct tick *k)
{
	if (s->o.nonblocking) {
		nb_flush(s, k);
		return;
	}
	for (size_t i = 0; i < k->nbatch; i++) {
		if (s->rt_on && lc_now_s() - s->rt_since > RT_SHARE * k->period)
			set_rt(s, false);
		s->cur = &s->snaps[i];
		finish_sample(s, &k->batch[i]);
	}
	k->nbatch = 0;
}

/* Stop the thread of the point now, at real-time priority, into the
 * batch's next copy; decoding waits for the end of the tick (or a full
 * batch), so that the tick's stops follow each other closely. */
static void stop_at(struct lc_sampler *s, struct tick *k, size_t idx,
		    const struct point *pt)
{
	struct pending *pd;
	struct snap *sn;

	if (k->nbatch == BATCH)
		flush(s, k);
	if (k->nbatch == s->nsnaps) {
		sn = &s->snaps[s->nsnaps];
		sn->pages = calloc(SNAP_PAGES, sizeof(*sn->pages));
		if (!sn->pages) {
			s->prof->q.attempted++;
			s->prof->q.lost_read++;
			return;
		}
		s->nsnaps++;
	}
	set_rt(s, true);
	pd = &k->batch[k->nbatch];
	pd->ts = idx;
	pd->pt = *pt;
	pd->pt.rt_since = s->rt_since;
	pd->stop_us = 0;
	s->cur = &s->snaps[k->nbatch];
	pd->k = take(s, &s->ts[idx], pt->sched_fd, &pd->stop_us);
	k->nbatch++;
}

/* The same sample point again, without stopping the thread: its last
 * stack, as an idle sample (--wall) or as what it still waits in. */
static void reuse_last(struct lc_sampler *s, struct tstate *ts,
		       int64_t weight, enum lc_prof_kind leaf)
{
	s->prof->q.attempted++;
	s->prof->q.taken++;
	add_stack(s, ts, ts->last, ts->nlast, weight, ts->last_vm,
		  ts->last_co, leaf,
		  ts->last_vmstate[0] ? ts->last_vmstate : NULL);
}

/* ---- --nonblocking: read as it runs ----
 *
 * No thread is stopped or traced.  Nothing then says which lua_State a
 * thread runs (its registers cannot be read while it runs), so the
 * states come from the memory: a scan of it finds the VMs and their
 * coroutines (again every NB_RESCAN_S, and sooner when a sample finds
 * a VM resuming one not found yet); each tick reads them and keeps, per
 * VM, those whose status says they run, ordered by their C-call depth
 * (a resumed coroutine counts on from its resumer's): the VM's resume
 * chain.  A thread found on a CPU is charged a chain: the one of the VM
 * it ran last, else one no other thread ran last, else any left; a
 * thread that runs while no chain is left ran host code, whose frames
 * cannot be read.  A chain's frames are read (a page per system call,
 * each page once per read) and read again until two reads in a row
 * agree, at most NB_TRIES times; one that never agrees is a lost
 * sample.  The innermost Lua frame's line is the one its CallInfo last
 * saved (the interpreter keeps its pc in a register).
 *
 * What it cannot tell: a thread that is runnable but waits for a CPU
 * from one on a CPU (/proc says 'R' for both; a stop would tell), so on
 * a machine with no CPU to spare the threads that wait are charged too
 * (skyhost, two busy workers on two CPUs: 1 ms bursts came out at half
 * their share, where one worker gets them within a point). */

#define NB_TRIES	3
#define NB_VMS		64
#define NB_STATES	65536		/* states a scan keeps */
#define NB_ROUND	256		/* of those not seen running, read per tick */
#define NB_HOT_TICKS	1000		/* seen running this recently: read every tick */
#define NB_RESCAN_S	10.0
#define NB_RESCAN_MIN_S	0.02		/* and 20 times what the last one cost */

/* The hot list of vm (0: the pass over the states); NULL when the
 * table is full. */
static struct nbhot *nb_hot_of(struct lc_sampler *s, uint64_t vm)
{
	for (size_t i = 0; i < s->nnb_hot; i++)
		if (s->nb_hot[i].vm == vm)
			return &s->nb_hot[i];
	if (s->nnb_hot == NB_VMS + 1)
		return NULL;
	s->nb_hot[s->nnb_hot].vm = vm;
	s->nb_hot[s->nnb_hot].n = 0;
	return &s->nb_hot[s->nnb_hot++];
}

/* Read hot's pages into the page cache, in one system call: those up
 * to the first unreadable one (a page freed since) are cached, the
 * others read one by one if the decoder asks for them. */
static void nb_prefetch(struct lc_sampler *s, const struct nbhot *hot)
{
	struct iovec local[NB_HOT], remote[NB_HOT];
	size_t n = hot ? hot->n : 0, got;
	ssize_t r;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++) {
		local[i] = (struct iovec){ s->live[i].data, PAGE };
		remote[i] = (struct iovec){ (void *)(uintptr_t)hot->pages[i],
					    PAGE };
	}
	s->live_reads++;
	r = process_vm_readv(s->reader, local, n, remote, n, 0);
	got = r > 0 ? (size_t)r / PAGE : 0;
	for (size_t i = 0; i < got; i++) {
		uint64_t pa = hot->pages[i];
		size_t h = live_slot_of(s, pa);

		if (s->live_slot[h])
			continue;	/* listed twice: garbage in, kept out */
		s->live[s->nlive].addr = pa;
		s->live[s->nlive].used = false;
		if (s->nlive != i)
			memcpy(s->live[s->nlive].data, s->live[i].data, PAGE);
		s->live_slot[h] = (uint32_t)++s->nlive;
	}
}

/* What the read just made used: hot's pages next time. */
static void nb_learn(struct lc_sampler *s, struct nbhot *hot)
{
	if (!hot)
		return;
	hot->n = 0;
	for (size_t i = 0; i < s->nlive && hot->n < NB_HOT; i++)
		if (s->live[i].used)
			hot->pages[hot->n++] = s->live[i].addr;
}

/* A read of the running process: the copy is empty, the page cache
 * fresh (what the last read found is not what this one finds), but for
 * the pages of hot read first, all at once. */
static struct lc_pass *nb_pass(struct lc_sampler *s, const struct nbhot *hot)
{
	struct lc_pass *pass = NULL;
	struct lc_error *err;

	s->cur = &s->snaps[0];
	s->cur->npages = 0;
	s->cur->stack_lo = s->cur->stack_hi = 0;
	s->live_reads = 0;
	s->nlive = 0;
	memset(s->live_slot, 0, sizeof(s->live_slot));
	nb_prefetch(s, hot);
	err = s->in->ops->begin(s->in, &pass);
	if (err) {
		lc_error_destroy(err);
		return NULL;
	}
	return pass;
}

/* Find the VMs and their coroutines again, in a memory map read again. */
static void nb_scan(struct lc_sampler *s, double now)
{
	uint64_t *vms = NULL, *cands = NULL, *keep = NULL, *ran = NULL;
	size_t nvms = 0, ncands = 0, n = 0;
	struct lc_pass *pass;
	struct lc_error *err;

	s->nb_want_scan = false;
	lc_program_reread_regions(s->t->prog);
	if (!(pass = nb_pass(s, NULL)))
		goto out;
	s->cur = NULL;		/* the scan reads big chunks: no page cache */
	err = s->in->ops->scan(pass, &vms, &nvms, &cands, &ncands);
	if (err) {
		lc_error_destroy(err);
		s->in->ops->end(pass);
		goto out;
	}
	keep = malloc(NB_STATES * sizeof(*keep));
	ran = calloc(NB_STATES, sizeof(*ran));
	for (size_t v = 0; keep && ran && v < nvms && v < NB_VMS; v++) {
		struct lc_vm vm;

		memset(&vm, 0, sizeof(vm));
		err = s->in->ops->decode_vm(pass, vms[v], true, cands, ncands,
					    &vm);
		lc_error_destroy(err);
		for (size_t i = 0; i < vm.nthreads && n < NB_STATES; i++) {
			keep[n] = vm.threads[i].addr;
			/* Seen running before: still read every tick. */
			for (size_t j = 0; j < s->nnb_states; j++)
				if (s->nb_states[j] == keep[n]) {
					ran[n] = s->nb_ran[j];
					break;
				}
			n++;
		}
		lc_vm_clear(&vm);
	}
	s->in->ops->end(pass);
	if (keep && ran) {
		free(s->nb_states);
		free(s->nb_ran);
		s->nb_states = keep;
		s->nb_ran = ran;
		s->nnb_states = n;
		keep = ran = NULL;
	}
out:
	free(keep);
	free(ran);
	free(vms);
	free(cands);
	s->nb_scan_cost = lc_now_s() - now;
	s->nb_scanned = lc_now_s();
	s->prof->q.nb_scans++;
	s->prof->q.nb_scan_s += s->nb_scan_cost;
}

/* Order chain c innermost first by what each state resumes, when two
 * of its states have the same depth: from the one no other resumes,
 * along the resumes, where that visits every state once. */
static void nb_order(struct lc_sampler *s, struct lc_pass *pass,
		     struct nbchain *c)
{
	int next[NB_CHAIN];
	bool tie = false, pointed[NB_CHAIN] = { false };
	uint64_t out[NB_CHAIN];
	size_t n = 0, at = SIZE_MAX;

	for (size_t i = 1; i < c->n; i++)
		tie |= c->depth[i] == c->depth[i - 1];
	if (!tie)
		return;
	for (size_t i = 0; i < c->n; i++) {
		struct lc_vstate st;
		uint64_t co = 0;

		next[i] = -1;
		if (s->in->ops->state(pass, c->states[i], &st))
			co = s->in->ops->resumes(pass, &st);
		for (size_t k = 0; co && k < c->n; k++)
			if (k != i && c->states[k] == co) {
				next[i] = (int)k;
				pointed[k] = true;
			}
	}
	for (size_t i = 0; i < c->n; i++)
		if (!pointed[i]) {
			if (at != SIZE_MAX)
				return;		/* two outermost: no order */
			at = i;
		}
	while (at != SIZE_MAX && n < c->n) {
		out[n++] = c->states[at];
		at = next[at] < 0 ? SIZE_MAX : (size_t)next[at];
	}
	if (n != c->n || at != SIZE_MAX)
		return;
	for (size_t i = 0; i < n; i++) {
		c->states[i] = out[n - 1 - i];
		c->depth[i] = (uint64_t)(n - i);
	}
}

/* The resume chains as of now, read for a batch of points. */
static void nb_chains(struct lc_sampler *s)
{
	double now = lc_now_s(), wait = 20 * s->nb_scan_cost;
	uint64_t tick = s->prof->q.ticks;
	struct lc_pass *pass;
	struct nbhot *hot;
	size_t round = 0;

	s->nnb_chains = 0;
	if (wait < NB_RESCAN_MIN_S)
		wait = NB_RESCAN_MIN_S;
	if (!s->nb_scanned || now - s->nb_scanned >= NB_RESCAN_S ||
	    (s->nb_want_scan && now - s->nb_scanned >= wait))
		nb_scan(s, now);
	hot = nb_hot_of(s, 0);
	if (!s->nnb_states || !(pass = nb_pass(s, hot)))
		return;
	for (size_t k = 0; k < s->nnb_states; k++) {
		struct lc_vstate st;
		struct nbchain *c = NULL;
		size_t i = k;

		/* Those not seen running lately: NB_ROUND of them a tick,
		 * in turn. */
		if (!s->nb_ran[i] || tick - s->nb_ran[i] > NB_HOT_TICKS) {
			if (s->nnb_states > NB_ROUND &&
			    (k + s->nnb_states - s->nb_turn) % s->nnb_states >=
			    NB_ROUND)
				continue;
			round++;
		}
		if (!s->in->ops->state(pass, s->nb_states[i], &st) ||
		    !(st.runnable || st.dying))
			continue;
		s->nb_ran[i] = tick;
		for (size_t j = 0; j < s->nnb_chains; j++)
			if (s->nb_chains[j].vm == st.vm)
				c = &s->nb_chains[j];
		if (!c) {
			if (s->nnb_chains == NB_VMS)
				continue;
			c = &s->nb_chains[s->nnb_chains++];
			memset(c, 0, sizeof(*c));
			c->vm = st.vm;
		}
		/* Innermost (deepest) first. */
		{
			size_t at = 0;

			while (at < c->n && c->depth[at] >= st.resume_depth)
				at++;
			if (at == NB_CHAIN)
				continue;
			if (c->n == NB_CHAIN)
				c->n--;
			memmove(&c->states[at + 1], &c->states[at],
				(c->n - at) * sizeof(c->states[0]));
			memmove(&c->depth[at + 1], &c->depth[at],
				(c->n - at) * sizeof(c->depth[0]));
			c->states[at] = st.addr;
			c->depth[at] = st.resume_depth;
			c->n++;
		}
	}
	if (s->nnb_states > NB_ROUND)
		s->nb_turn = (s->nb_turn + NB_ROUND) % s->nnb_states;
	(void)round;
	/* Where the depths do not order a chain (5.1.1 resets the count at
	 * each resume), what each state resumes does. */
	for (size_t j = 0; s->in->ops->resumes && j < s->nnb_chains; j++)
		nb_order(s, pass, &s->nb_chains[j]);
	/* A chain whose innermost state resumes one the scan has not found
	 * (created since): that one runs, innermost. */
	for (size_t j = 0; s->in->ops->resumes && j < s->nnb_chains; j++) {
		struct nbchain *c = &s->nb_chains[j];

		while (c->n < NB_CHAIN) {
			struct lc_vstate st;
			uint64_t co;
			bool known = false;

			if (!s->in->ops->state(pass, c->states[0], &st) ||
			    !(co = s->in->ops->resumes(pass, &st)))
				break;
			for (size_t i = 0; i < c->n; i++)
				known |= c->states[i] == co;
			if (known)
				break;
			memmove(&c->states[1], &c->states[0],
				c->n * sizeof(c->states[0]));
			memmove(&c->depth[1], &c->depth[0],
				c->n * sizeof(c->depth[0]));
			c->states[0] = co;
			c->depth[0] = c->depth[1] + 1;
			c->n++;
			if (s->nnb_states < NB_STATES && s->nb_states) {
				s->nb_states[s->nnb_states] = co;
				s->nb_ran[s->nnb_states++] = tick;
			}
		}
	}
	nb_learn(s, hot);
	s->in->ops->end(pass);
}

static struct nbowner *nb_owner_of(struct lc_sampler *s, uint64_t vm)
{
	for (size_t i = 0; i < s->nnb_owner; i++)
		if (s->nb_owner[i].vm == vm)
			return &s->nb_owner[i];
	return NULL;
}

/* Give each point of the batch its chain, or none (host code): first
 * the chain of the VM its thread ran last; then, to the threads on a CPU
 * left, the chains left, those whose last thread is not on a CPU in the
 * batch first.  A thread asleep (--wall) gets only its own VM's.
 * guessed[i]: more than one chain was left to choose from. */
static void nb_assign(struct lc_sampler *s, const struct tick *k,
		      struct nbchain **got, bool *guessed)
{
	for (size_t i = 0; i < k->nbatch; i++) {
		int tid = s->ts[k->batch[i].ts].tid;

		got[i] = NULL;
		guessed[i] = false;
		for (size_t c = 0; c < s->nnb_chains; c++) {
			struct nbowner *o = nb_owner_of(s, s->nb_chains[c].vm);

			if (!s->nb_chains[c].taken_by && o && o->tid == tid) {
				got[i] = &s->nb_chains[c];
				got[i]->taken_by = tid;
				break;
			}
		}
	}
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < k->nbatch; i++) {
			size_t left = 0;

			if (got[i] || k->batch[i].asleep)
				continue;
			for (size_t c = 0; c < s->nnb_chains; c++) {
				struct nbchain *ch = &s->nb_chains[c];
				struct nbowner *o;
				bool owner_here = false;

				if (ch->taken_by)
					continue;
				left++;
				o = nb_owner_of(s, ch->vm);
				for (size_t b = 0; o && b < k->nbatch; b++)
					owner_here |= !k->batch[b].asleep &&
						      s->ts[k->batch[b].ts].tid == o->tid;
				if (!got[i] && (round == 1 || !owner_here))
					got[i] = ch;
			}
			if (got[i]) {
				got[i]->taken_by = s->ts[k->batch[i].ts].tid;
				guessed[i] = left > 1;
			}
		}
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool same_frame(const struct lc_frame *x, const struct lc_frame *y)
{
	return x->ci == y->ci && x->state == y->state &&
	       x->cfunc == y->cfunc && x->currentline == y->currentline &&
	       x->linedefined == y->linedefined &&
	       same_str(x->source, y->source) && same_str(x->name, y->name);
}

/* Read b, made after read a, shows a stack the thread had: the frames
 * below b's innermost are the outermost frames of a too (the same call
 * records, functions and lines), so they stood still from a's read to
 * b's, and b's innermost frame was read on them.  What the innermost
 * frame runs may change every microsecond (a loop that calls a C
 * function): that frame alone is b's. */
static bool nb_agree(const struct lc_stack *a, const struct lc_stack *b)
{
	size_t m = b->nframes ? b->nframes - 1 : 0;

	if (!b->nframes || a->nframes < m || a->vm != b->vm ||
	    a->nstates != b->nstates ||
	    memcmp(a->states, b->states, a->nstates * sizeof(*a->states)))
		return false;
	for (size_t i = 0; i < m; i++)
		if (!same_frame(&b->frames[1 + i], &a->frames[a->nframes - m + i]))
			return false;
	return true;
}

/* Read chain c's frames into *st (innermost state's first, then its
 * resumer's...).  0; 1 when the chain no longer runs so; -1 when it
 * cannot be read. */
static int nb_read(struct lc_sampler *s, const struct nbchain *c,
		   struct lc_stack *st)
{
	struct nbhot *hot = nb_hot_of(s, c->vm);
	struct lc_pass *pass = nb_pass(s, hot);
	struct lc_frames o = { 0 };
	int ret = 0;

	memset(st, 0, sizeof(*st));
	s->prof->q.nb_reads++;
	if (!pass)
		return -1;
	st->states = calloc(c->n, sizeof(*st->states));
	for (size_t j = 0; st->states && j < c->n && !o.nomem; j++) {
		struct lc_vstate vs;
		struct lc_luathread lt;
		size_t max = (size_t)s->o.max_frames;

		if (!s->in->ops->state(pass, c->states[j], &vs)) {
			ret = j ? 1 : -1;
			break;
		}
		if (!(vs.runnable || vs.dying)) {
			ret = 1;
			break;
		}
		st->states[st->nstates++] = vs.addr;
		memset(&lt, 0, sizeof(lt));
		lt.addr = vs.addr;
		s->in->ops->state_frames(pass, &vs, max > o.n ? max - o.n : 0,
					 false, false, 0, &lt);
		for (size_t i = 0; i < lt.nframes; i++) {
			struct lc_frame *f = lc_frames_push(&o);

			if (f)
				*f = lt.frames[i];
			else
				lc_frame_free(&lt.frames[i]);
		}
		free(lt.frames);
		if (lt.partial)
			st->partial |= LC_PARTIAL_CHAIN;
		lc_luathread_clear(&lt);
		if (o.n >= max) {
			st->partial |= LC_PARTIAL_TRUNCATED;
			break;
		}
	}
	st->frames = o.v;
	st->nframes = o.n;
	st->vm = c->vm;
	st->activity = st->nframes && st->frames[0].what &&
		       strcmp(st->frames[0].what, "C") == 0 ?
		       LC_ACTIVITY_C : LC_ACTIVITY_LUA;
	if (!st->states || o.nomem)
		ret = -1;
	if (ret == 0 && !st->nframes)
		ret = 1;
	if (ret == 0)
		name_vm(s, s->in, pass, c->vm);
	nb_learn(s, hot);
	s->in->ops->end(pass);
	return ret;
}

/* The innermost frame is the C function that resumes a coroutine: the
 * coroutine it runs is one the scan has not found yet. */
static bool nb_resumes_unknown(const struct lc_stack *st)
{
	const struct lc_frame *f = st->nframes ? &st->frames[0] : NULL;
	const char *fn = f ? (f->function ? f->function : f->name) : NULL;

	return f && f->what && strcmp(f->what, "C") == 0 && fn &&
	       (strstr(fn, "resume") || strstr(fn, "auxwrap") ||
		strstr(fn, "wrap"));
}

/* A thread on a CPU that ran no VM's Lua code: host code, unread. */
static void nb_native(struct lc_sampler *s, struct tstate *ts, int64_t weight,
		      bool asleep)
{
	uint32_t fn = lc_profile_func(s->prof,
				      "[native code: not read (--nonblocking)]",
				      NULL, 0, LC_PROF_NATIVE), loc;

	s->prof->q.nb_native++;
	s->prof->q.taken++;
	if (fn == UINT32_MAX)
		return;
	loc = lc_profile_loc(s->prof, fn, 0, 0);
	if (!asleep) {
		ts->charged_ns += weight;
		s->prof->q.cpu_charged_ns += weight;
		ts->kept_ns += weight;
	}
	add_stack(s, ts, &loc, 1, weight, 0, 0,
		  asleep ? LC_PROF_IDLE : LC_PROF_NATIVE, NULL);
}

/* The sample of a thread found on a CPU (asleep: --wall's of one that
 * sleeps), read as it runs, of chain c (NULL: it runs host code). */
static void nb_sample(struct lc_sampler *s, size_t idx, const struct point *pt,
		      bool asleep, struct nbchain *c, bool guessed)
{
	struct tstate *ts = &s->ts[idx];
	struct lc_stack a, b;
	double c0 = thread_cpu_s();
	bool same = false;
	int r;

	s->prof->q.attempted++;
	if (!c) {
		if (!asleep && s->nnb_chains == 0)
			s->nb_want_scan = !s->nnb_states;
		if ((s->o.vm || s->o.vm_only) && !asleep)
			s->prof->q.attempted--;	/* no VM's: filtered */
		else
			nb_native(s, ts, pt->weight, asleep);
		goto out;
	}
	r = nb_read(s, c, &a);
	for (int i = 1; r == 0 && i < NB_TRIES && !same; i++) {
		r = nb_read(s, c, &b);
		if (r == 0) {
			same = nb_agree(&a, &b);
			if (same && i == 1)
				s->prof->q.nb_first++;
		}
		lc_stack_deinit(&a);
		a = b;
	}
	if (r != 0 || !same) {
		lc_stack_deinit(&a);
		if (r < 0)
			s->prof->q.lost_read++;
		else
			s->prof->q.lost_inconsistent++;
		goto out;
	}
	if (nb_resumes_unknown(&a)) {
		s->nb_want_scan = true;
		s->prof->q.nb_unknown++;
		lc_stack_deinit(&a);
		goto out;
	}
	/* Whoever ran the VM last, this thread does now. */
	{
		struct nbowner *o = nb_owner_of(s, c->vm);

		if (!o && s->nnb_owner < NB_VMS) {
			o = &s->nb_owner[s->nnb_owner++];
			o->vm = c->vm;
		}
		if (o && !asleep)
			o->tid = ts->tid;
	}
	if (guessed)
		s->prof->q.nb_guessed++;
	keep_sample(s, ts, &a, pt->weight, asleep, false);
	lc_stack_deinit(&a);
out:
	s->prof->q.sampler_decode_cpu_s += thread_cpu_s() - c0;
}

/* The points of the batch, read as they run: the chains read once for
 * them all, right after their threads' states. */
static void nb_flush(struct lc_sampler *s, struct tick *k)
{
	struct nbchain *got[BATCH];
	bool guessed[BATCH];

	if (!k->nbatch)
		return;
	nb_chains(s);
	nb_assign(s, k, got, guessed);
	for (size_t i = 0; i < k->nbatch; i++)
		nb_sample(s, k->batch[i].ts, &k->batch[i].pt,
			  k->batch[i].asleep, got[i], guessed[i]);
	k->nbatch = 0;
}

/* A sample point found the thread on a CPU (or, with --wall, asleep):
 * stop it, or with --nonblocking read it as it runs, with the batch. */
static void sample_at(struct lc_sampler *s, struct tick *k, size_t idx,
		      const struct point *pt, bool asleep)
{
	if (!s->o.nonblocking) {
		stop_at(s, k, idx, pt);
		return;
	}
	if (k->nbatch == BATCH)
		nb_flush(s, k);
	k->batch[k->nbatch] = (struct pending){ .ts = idx, .pt = *pt,
						 .asleep = asleep };
	k->nbatch++;
}

/* One sample point of one thread: read its run time and state, and
 * stop it there and then when it may be on a CPU.  -1: it could not be
 * read (gone).
 *
 * A point stands for the time since the thread's last one (its weight);
 * a thread is charged that weight only when it is found on a CPU at the
 * point, with the stack it runs there.  Over many points that is the
 * CPU time it used (points come at random, independent of what it
 * does), whatever the length of its bursts.  A thread is stopped when
 * its state says it runs ('R'), and also when it sleeps but used CPU
 * since its last point (it may have woken since this read); the stop
 * itself tells whether it waits in a system call.  Threads that used no
 * CPU since their last point and sleep are not stopped. */
static int look_at(struct lc_sampler *s, struct tick *k, size_t idx,
		   struct point *pt);

static bool asleep(const struct tstate *ts)
{
	return ts->idle_reads >= IDLE_AFTER && ts->cpu_ns != UINT64_MAX;
}

static void close_stat(struct lc_sampler *s, struct tstate *ts)
{
	if (ts->stat_fd >= 0) {
		close(ts->stat_fd);
		ts->stat_fd = -1;
		s->nfds--;
	}
}

static void close_fds(struct lc_sampler *s, struct tstate *ts)
{
	close_stat(s, ts);
	if (ts->sched_fd >= 0) {
		close(ts->sched_fd);
		ts->sched_fd = -1;
		s->nsched--;
	}
}

static int look(struct lc_sampler *s, struct tick *k, size_t idx)
{
	struct tstate *ts = &s->ts[idx];
	struct point pt;
	int ret;

	/* Its schedstat stays open while the limit allows; its stat only
	 * while it is not asleep (a thread asleep is read only from its
	 * schedstat while that shows no CPU used). */
	if (ts->sched_fd < 0 && s->nsched < s->sched_cache) {
		ts->sched_fd = schedstat_open(s->pid, ts->tid);
		if (ts->sched_fd >= 0)
			s->nsched++;
	}
	if (ts->stat_fd < 0 && ts->sched_fd >= 0 && !asleep(ts) &&
	    s->nfds < FD_CACHE) {
		char path[80];

		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", s->pid,
			 ts->tid);
		ts->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (ts->stat_fd >= 0)
			s->nfds++;
	}
	pt = (struct point){ .sched_fd = ts->sched_fd };
	if (pt.sched_fd < 0)
		pt.sched_fd = schedstat_open(s->pid, ts->tid);
	ret = look_at(s, k, idx, &pt);
	ts = &s->ts[idx];
	if (pt.sched_fd >= 0 && pt.sched_fd != ts->sched_fd)
		close(pt.sched_fd);
	if (ret < 0)
		close_fds(s, ts);
	else if (asleep(ts))
		close_stat(s, ts);
	return ret;
}

static int look_at(struct lc_sampler *s, struct tick *k, size_t idx,
		   struct point *pt)
{
	struct tstate *ts = &s->ts[idx];
	uint64_t cpu;
	int64_t delta, weight;
	char state, at[sizeof(((struct tstate *)0)->sleep_at)];
	int c, tid = ts->tid;
	double now;

	ts->read = true;
	cpu = schedstat_read(pt->sched_fd, &pt->slices, &pt->wait);
	if (cpu == UINT64_MAX)
		return -1;
	/* With more threads asleep than a tick reads (they are read in
	 * turn), a CPU profile leaves one that used no CPU since its last
	 * read without reading its state: one read, not two opens, two
	 * reads and two closes, for each of thousands of idle threads.  If
	 * it woke and runs now, with its run time not brought up to date
	 * yet, the process's CPU clock sees it ran unseen (lc_sampler_tick)
	 * and the next reads find it.  With few, each one's state is read:
	 * a thread that wakes for short bursts is caught in them. */
	if (!s->o.wall && s->many_asleep && asleep(ts) && cpu == ts->cpu_ns) {
		c = ts->cpu;
		state = 'S';
	} else {
		c = ts->stat_fd >= 0 ? stat_read(ts->stat_fd, &state) :
		    stat_of(s->pid, tid, &state);
	}
	now = pt->t_read = lc_now_s();
	delta = ts->cpu_ns == UINT64_MAX ? 0 : (int64_t)(cpu - ts->cpu_ns);
	if (ts->cpu_ns != UINT64_MAX && delta > 0) {
		k->seen_ns += (uint64_t)delta;
		ts->used_ns += delta;
	}
	/* The run time in schedstat is brought up to date only at the
	 * scheduler's own ticks and switches: a thread on a CPU may show
	 * none used for milliseconds.  Its state does not lag. */
	if (ts->cpu_ns != UINT64_MAX && delta <= 0 && state != 'R')
		ts->idle_reads++;
	else
		ts->idle_reads = 0;
	ts->cpu_ns = cpu;
	ts->cpu = c;
	weight = (int64_t)((ts->last_tick ? now - ts->last_tick : k->period) *
			   1e9);
	/* Less the time we kept it from running: our last stop held it,
	 * or our tick held the CPU it was on.  Without that, a thread that
	 * runs all along would be charged the whole gap, and the CPU it
	 * lost to us with it. */
	weight -= ts->off_ns;
	if (weight < 0)
		weight = 0;
	if (weight > 1000000000)
		weight = 1000000000;
	ts->off_ns = 0;
	ts->last_tick = now;
	pt->weight = weight;
	pt->delta = delta;
	if (state == 'R') {
		if (s->affinity && c >= 0 && c < CPU_SETSIZE)
			CPU_SET(c, &k->busy);
		pt->ours = c >= 0 && c == sched_getcpu();
		sample_at(s, k, idx, pt, false);
		return 0;
	}
	/* Not on a CPU now.  In uninterruptible sleep (or stopped) it would
	 * not even stop for us. */
	if (state != 'S') {
		if (delta > 0 && !s->o.wall)
			s->prof->q.cpu_between_ns += delta;
		if (s->o.wall && ts->last)
			reuse_last(s, ts, weight, LC_PROF_IDLE);
		else
			s->prof->q.idle_skipped++;
		return 0;
	}
	/* Asleep since its last point (no CPU used), or still in the sleep
	 * its last stop found it in: the same system call at the same
	 * place, and no more CPU used than that stop cost it.  Stopping it
	 * would only wake it again: with --wall its last stack stands. */
	at[0] = '\0';
	if (delta > 0 || s->o.wall)
		syscall_of(s->pid, tid, at, sizeof(at));
	if (delta <= 0 ||
	    (ts->last_asleep && delta < SELF_NS && at[0] &&
	     strcmp(at, ts->sleep_at) == 0)) {
		if (!s->o.wall) {
			if (delta > 0)
				s->prof->q.cpu_between_ns += delta;
			s->prof->q.idle_skipped++;
			return 0;
		}
		if (ts->last && ts->last_asleep) {
			reuse_last(s, ts, weight, LC_PROF_IDLE);
			return 0;
		}
	}
	memcpy(ts->sleep_at, at, sizeof(at));
	/* Only --wall stops a sleeping thread: in CPU mode, a thread
	 * asleep at its point is not on a CPU, whatever it did before. */
	if (!s->o.wall) {
		if (delta > 0)
			s->prof->q.cpu_between_ns += delta;
		s->prof->q.idle_skipped++;
		return 0;
	}
	sample_at(s, k, idx, pt, true);
	return 0;
}


/* Keep an exited thread's CPU time and charges (as many as memory
 * allows: one not kept keeps its samples as charged). */
static void remember_gone(struct lc_sampler *s, const struct tstate *ts)
{
	if (!ts->used_ns && !ts->charged_ns && !ts->stopped_s)
		return;
	if (s->ngone == s->capgone) {
		size_t cap = s->capgone ? 2 * s->capgone : 64;
		struct gone *g = realloc(s->gone, cap * sizeof(*g));

		if (!g)
			return;
		s->gone = g;
		s->capgone = cap;
	}
	s->gone[s->ngone++] = (struct gone){ ts->tid, ts->used_ns,
					     ts->charged_ns, ts->kept_ns,
					     ts->stopped_s };
}

/* Calibrate a CPU profile per thread: each thread's samples are scaled
 * so that they add up to the CPU time its reads saw it use, as the
 * kernel counts it (schedstat); with --vm, those of the VM asked for
 * by the same factor, their share of the thread's points.  Sampling sees a thread on a CPU in
 * proportion to the time it runs there, except where the kernel says
 * it sleeps while it still runs: on its way into a sleep (a timer
 * thread that wakes a thousand times a second can use most of its CPU
 * time there) and in what our own stops cost it.  Without this, such a
 * thread's share goes to every other thread's. */
static void calibrate(struct lc_sampler *s)
{
	struct lc_prof_quality *q = &s->prof->q;
	size_t n = s->nts + s->ngone, k = 0;
	int *tids = malloc((n ? n : 1) * sizeof(*tids));
	double *scales = malloc((n ? n : 1) * sizeof(*scales));

	q->cpu_scaled_ns = q->cpu_charged_ns;
	q->cpu_unseen_ns = 0;
	q->threads_unseen = 0;
	if (!tids || !scales || s->o.wall) {
		free(tids);
		free(scales);
		return;
	}
	q->cpu_scaled_ns = 0;
	for (size_t i = 0; i < n; i++) {
		struct gone g = i < s->nts ?
			(struct gone){ s->ts[i].tid, s->ts[i].used_ns,
				       s->ts[i].charged_ns, s->ts[i].kept_ns,
				       s->ts[i].stopped_s } :
			s->gone[i - s->nts];

		if (g.charged_ns > 0 && g.used_ns > 0) {
			double f = (double)g.used_ns / (double)g.charged_ns;

			tids[k] = g.tid;
			scales[k++] = f;
			q->cpu_scaled_ns += (int64_t)((double)g.kept_ns * f);
		} else if (g.charged_ns > 0) {
			q->cpu_scaled_ns += g.kept_ns;	/* no clock to go by */
		} else if (g.used_ns > 0 && !s->o.vm && !s->o.vm_only) {
			q->cpu_unseen_ns += g.used_ns;
			q->threads_unseen++;
		}
	}
	if (lc_profile_scale_threads(s->prof, tids, scales, k) < 0)
		q->cpu_scaled_ns = q->cpu_charged_ns;
	free(tids);
	free(scales);
}

/* The process's CPU clock in ns, 0 if it cannot be read (it is not
 * read again). */
static uint64_t clock_ns(struct lc_sampler *s)
{
	struct timespec t;

	if (clock_gettime(s->clock, &t) != 0) {
		s->have_clock = false;
		return 0;
	}
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int lc_sampler_tick(struct lc_sampler *s)
{
	struct tick k = { .now = lc_now_s(), .period = 1.0 / s->o.rate_hz };
	size_t *list = NULL, nlist = 0, nasleep = 0, stride = 1, turn = 0;
	uint64_t proc_ns = 0;
	bool moved = false, listed = false;
	char state;
	long nthreads;

	CPU_ZERO(&k.busy);
	/* Asleep at real-time priority, we took our CPU when the tick woke
	 * us. */
	if (s->rt_on)
		s->rt_since = k.now;
	s->prof->q.ticks++;
	if (s->last_tick && k.now - s->last_tick > 2 * k.period)
		s->prof->q.late_ticks++;
	s->last_tick = k.now;
	nthreads = threads_of(s->pid, &s->leader_fd, &state);
	if (!s->listed || k.now - s->listed >= RELIST_S ||
	    (!s->o.tid && nthreads != (long)s->nlist)) {
		if (!relist(s, k.now))
			return -1;
		listed = true;
		for (size_t i = 0; i < s->nts; i++)
			s->ts[i].seen = false;
	}
	for (size_t i = 0; i < s->nts; i++)
		s->ts[i].read = false;
	list = malloc((s->nlist ? s->nlist : 1) * sizeof(*list));
	for (size_t i = 0; list && i < s->nlist; i++) {
		struct tstate *ts = tstate(s, s->list[i]);

		if (!ts)
			continue;
		ts->seen = true;
		list[nlist++] = (size_t)(ts - s->ts);
		nasleep += asleep(ts);
	}
	/* The process's CPU clock sums the run time of all its threads
	 * (under a lock of the kernel's): with thousands of threads, read
	 * it every few ticks, one in CLOCK_THREADS listed, 8 at most. */
	s->clock_behind = false;
	if (s->have_clock) {
		size_t every = (nlist + CLOCK_THREADS - 1) / CLOCK_THREADS;

		if (every > 8)
			every = 8;
		if (every > 1 && s->proc_ns && s->prof->q.ticks % every)
			s->clock_behind = true;
		else
			proc_ns = clock_ns(s);
	}
	/* Of the threads asleep, one in stride each tick, so that each is
	 * read at least twice a second (a --wall sample stands for the time
	 * since its last one). */
	s->many_asleep = nasleep > IDLE_READS;
	if (s->have_clock && nasleep > IDLE_READS) {
		stride = nasleep / IDLE_READS;
		if (stride > (size_t)(s->o.rate_hz / 2))
			stride = s->o.rate_hz / 2 > 1 ? (size_t)(s->o.rate_hz / 2) : 1;
	}
	for (size_t i = 0; i < nlist; i++) {
		struct tstate *ts = &s->ts[list[i]];

		if (!asleep(ts) || stride == 1 ||
		    (turn++ + s->prof->q.ticks) % stride == 0)
			look(s, &k, list[i]);
	}
	if (s->have_clock)
		s->seen_since_ns += k.seen_ns;
	if (s->have_clock && proc_ns) {
		/* Run time the process used that no read accounts for: a
		 * thread asleep woke up unseen, or one ended.  The sum over
		 * ticks cancels the skew of reading at different times. */
		if (s->proc_ns)
			s->unseen_ns += (int64_t)(proc_ns - s->proc_ns) -
					(int64_t)s->seen_since_ns;
		else
			s->proc_ns0 = proc_ns;
		s->proc_ns = proc_ns;
		s->seen_since_ns = 0;
		if (s->unseen_ns > (int64_t)(k.period * 1e9) &&
		    s->unseen_ns > 1000000) {
			for (size_t i = 0; i < nlist; i++)
				if (!s->ts[list[i]].read)
					look(s, &k, list[i]);
			s->unseen_ns = 0;
			/* It may have been a thread not yet listed. */
			if (!listed)
				s->listed = 0;
		}
	}
	free(list);
	flush(s, &k);
	s->seen_total_ns += k.seen_ns;
	/* The threads our tick kept from their CPU lost it from the tick's
	 * start until we let it go (at the end, or when decoding went on at
	 * normal priority); their stops are part of that. */
	if (s->rt) {
		double until = s->rt_on ? lc_now_s() : s->rt_off;
		int64_t held = until > k.now ? (int64_t)((until - k.now) * 1e9) : 0;

		for (size_t i = 0; i < s->nts; i++) {
			struct tstate *ts = &s->ts[i];

			if (ts->preempted && ts->off_ns < held)
				ts->off_ns = held;
			ts->preempted = false;
		}
	}
	if (s->affinity)
		avoid_cpus(s, &k.busy);
	/* Forget threads that exited (as of a listing). */
	for (size_t i = 0; listed && i < s->nts;) {
		if (!s->ts[i].seen) {
			remember_gone(s, &s->ts[i]);
			close_fds(s, &s->ts[i]);
			free(s->ts[i].name);
			free(s->ts[i].last);
			s->ts[i] = s->ts[--s->nts];
			moved = true;
		} else {
			i++;
		}
	}
	if (moved)
		ts_reindex(s);
	/* Gone, or a zombie its parent has not reaped yet; a leader that
	 * is a zombie while other threads run is read through one of them. */
	{
		if (state == '?' || state == 'X')
			return -1;
		if (state == 'Z') {
			char rs = '?';

			if (s->reader == s->pid ||
			    (stat_of(s->pid, s->reader, &rs), rs == 'Z' || rs == 'X' ||
			     rs == '?'))
				s->reader = lc_live_reader(s->pid);
			if (!s->reader)
				return -1;
		}
	}
	/* Sleep until the next tick at real-time priority: its wake-up
	 * then takes a CPU at once, and has no timer slack. */
	set_rt(s, true);
	return kill(s->pid, 0) == 0 || errno == EPERM ? 0 : -1;
}

/* --nonblocking: its tables; and it reads Lua stacks only, so a
 * process without a Lua VM the layout can read is an error.  Memory
 * that cannot be read (process_vm_readv is refused as ptrace is) is one
 * too. */
static struct lc_error *nb_create(struct lc_sampler *s)
{
	uint8_t b;

	s->nb_chains = calloc(NB_VMS, sizeof(*s->nb_chains));
	s->nb_owner = calloc(NB_VMS, sizeof(*s->nb_owner));
	s->nb_hot = calloc(NB_VMS + 1, sizeof(*s->nb_hot));
	if (!s->nb_chains || !s->nb_owner || !s->nb_hot)
		return &lc_error_nomem;
	if (!s->in)
		return lc_error_create(LC_ERR_NOT_FOUND,
			"--nonblocking reads Lua stacks only, and none can be read in process %d: %s",
			s->pid, s->no_lua ? lc_error_message(s->no_lua) :
			"no Lua VM found");
	if (lc_live_read(s->reader, s->in->module_start ? s->in->module_start :
			 s->t->prog->nexec ? s->t->prog->exec[0].start : 0,
			 &b, 1) < 0 && (errno == EPERM || errno == EACCES))
		return lc_live_refused(s->pid, errno);
	return NULL;
}

struct lc_error *lc_sampler_create(int pid,
				   const struct lc_sampler_options *opts,
				   struct lc_sampler **ret)
{
	struct lc_sampler *s = calloc(1, sizeof(*s));
	struct lc_error *err;
	int sig = 0;

	if (!s)
		return &lc_error_nomem;
	s->pid = pid;
	s->o = *opts;
	if (s->o.rate_hz <= 0)
		s->o.rate_hz = 100;
	if (s->o.max_frames <= 0)
		s->o.max_frames = 256;
	if (s->o.stop_budget_us <= 0)
		s->o.stop_budget_us = 1000;
	s->leader_fd = -1;
	{
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY) {
			if (rl.rlim_cur > FD_SPARE + FD_CACHE)
				s->sched_cache = rl.rlim_cur - FD_SPARE - FD_CACHE;
		} else {
			s->sched_cache = MAX_THREADS;
		}
		if (s->sched_cache > MAX_THREADS)
			s->sched_cache = MAX_THREADS;
	}
	s->snaps = calloc(BATCH, sizeof(*s->snaps));
	s->known = calloc(KNOWN_STATES, sizeof(*s->known));
	s->known_slot = calloc(2 * KNOWN_STATES, sizeof(*s->known_slot));
	s->live = calloc(LIVE_PAGES, sizeof(*s->live));
	s->prof = lc_profile_create();
	if (!s->snaps || !s->live || !s->prof || !s->known ||
	    !s->known_slot) {
		lc_sampler_destroy(s);
		return &lc_error_nomem;
	}
	{
		struct lc_program *p;

		err = lc_program_prepare_live(pid, false, &p);
		if (!err)
			err = lc_target_wrap(p, &s->t);
		if (!err && (opts->types || opts->layout))
			err = lc_target_set_layout(s->t, opts->types,
						   opts->layout);
		if (err) {
			lc_sampler_destroy(s);
			return err;
		}
	}
	/* Decoding reads the copy; libdwfl unwinds from it too. */
	err = lc_memory_add_space(s->t->prog->mem, LC_MEM_OVERLAY | LC_MEM_SOLE,
				  &snap_source, s);
	if (err) {
		lc_sampler_destroy(s);
		return err;
	}
	s->t->prog->detached = true;	/* nothing for the target to let go */
	if (!dwfl_attach_state(s->t->prog->dwfl, NULL, pid, &thread_callbacks, s)) {
		err = lc_error_create(LC_ERR_UNSUPPORTED,
				      "cannot unwind process %d: %s", pid,
				      dwfl_errmsg(-1));
		lc_sampler_destroy(s);
		return err;
	}
	s->t->prog->dwfl_attached = true;
	s->t->prog->unwind_from = unwind_from;
	s->t->prog->unwind_from_arg = s;
	s->reader = s->t->prog->reader;
	s->have_clock = clock_getcpuclockid(pid, &s->clock) == 0;
	/* The layout is read now, before any thread is stopped; without
	 * one, samples are native stacks (the error stays with the target). */
	s->in = lc_target_interp(s->t, &s->no_lua);
	s->ins = lc_target_interps(s->t, NULL, &s->nins);
	/* Many short passes: an index of package.loaded serves a second;
	 * frames are for the profile, not for printing. */
	for (size_t i = 0; i < s->nins; i++) {
		s->ins[i]->reuse_s = 1.0;
		s->ins[i]->profile_frames = true;
		/* Read ahead what the first stacks would read: a parked
		 * thread waits for its first decode. */
		lc_program_warm_lines(s->t->prog, s->ins[i]->module_start,
				      WARM_S);
	}
	if (s->o.nonblocking) {
		err = nb_create(s);
		if (err) {
			lc_sampler_destroy(s);
			return err;
		}
	}
	/* Is ptrace allowed at all?  Better to know now than per sample.
	 * (A seized thread is let go only from a stop.) */
	if (!s->o.nonblocking) {
		int tid = s->reader, slot = lc_live_hold(tid, 0);

		if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
			err = lc_live_refused(pid, errno);
			lc_live_unhold(slot);
			lc_sampler_destroy(s);
			return err;
		}
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) == 0 &&
		    lc_live_wait_stop(tid, &sig) == 0)
			ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig);
		lc_live_unhold(slot);
	}
	s->prof->pid = pid;
	{
		char path[64], cwd[4096];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/cwd", pid);
		n = readlink(path, cwd, sizeof(cwd) - 1);
		if (n > 0) {
			cwd[n] = '\0';
			s->prof->cwd = strdup(cwd);
		}
	}
	s->prof->period_ns = (int64_t)(1e9 / s->o.rate_hz);
	s->prof->wall = s->o.wall;
	s->prof->alloc = s->o.alloc_mean > 0;
	s->prof->alloc_mean = s->o.alloc_mean;
	s->prof->at = s->o.at && s->prof->alloc;
	s->prof->q.rate_hz = s->o.rate_hz;
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		s->prof->start_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	}
	getrusage(RUSAGE_SELF, &s->ru0);
	s->affinity = sched_getaffinity(0, sizeof(s->allowed), &s->allowed) == 0 &&
		      CPU_COUNT(&s->allowed) > 1;
	s->current = s->allowed;
	/* Real-time priority keeps stops short; reading as the target
	 * runs, the sampler yields to it instead. */
	if (!s->o.nonblocking) {
		struct sched_param sp = { .sched_priority = 1 };

		s->rt = sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK,
					   &sp) == 0;
		s->prof->q.realtime = s->rt;
		s->prof->q.stop_budget_us = s->o.stop_budget_us;
	}
	s->prof->q.nonblocking = s->o.nonblocking;
	*ret = s;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct lc_profile *lc_sampler_profile(struct lc_sampler *s, double elapsed)
{
	struct lc_prof_quality *q = &s->prof->q;
	struct rusage ru;

	set_rt(s, false);	/* sorting a long run's stops takes a while */
	s->prof->duration_ns = (int64_t)(elapsed * 1e9);
	if (s->have_clock && s->clock_behind) {
		uint64_t ns = clock_ns(s);

		if (ns)
			s->proc_ns = ns;
	}
	/* The process's CPU clock counts every thread, read or not; with
	 * --thread, the one thread's reads. */
	q->cpu_used_ns = s->have_clock && !s->o.tid && s->proc_ns ?
			 (int64_t)(s->proc_ns - s->proc_ns0) :
			 (int64_t)s->seen_total_ns;
	q->cpu_before_ns = s->have_clock && s->proc_ns ?
			   (int64_t)s->proc_ns0 : -1;
	q->achieved_hz = elapsed > 0 ? (double)q->ticks / elapsed : 0;
	calibrate(s);
	{
		double sum = 0, most = 0;
		size_t n = 0;

		for (size_t i = 0; i < s->nts + s->ngone; i++) {
			double st = i < s->nts ? s->ts[i].stopped_s :
				    s->gone[i - s->nts].stopped_s;

			if (st > 0) {
				sum += st;
				n++;
				if (st > most)
					most = st;
			}
		}
		q->stop_share = n && elapsed > 0 ? sum / (double)n / elapsed : 0;
		q->stop_share_max = elapsed > 0 ? most / elapsed : 0;
	}
	if (s->nstops) {
		double *v = malloc(s->nstops * sizeof(*v));

		if (v) {
			memcpy(v, s->stops, s->nstops * sizeof(*v));
			qsort(v, s->nstops, sizeof(*v), cmp_double);
			/* Nearest rank: the smallest value with at least
			 * half (99%) of the stops at or below it. */
			q->stop_median_us = v[(s->nstops - 1) / 2];
			q->stop_p99_us = v[(s->nstops * 99 + 99) / 100 - 1];
			free(v);
		}
	}
	getrusage(RUSAGE_SELF, &ru);
	q->sampler_cpu_s =
		(double)(ru.ru_utime.tv_sec - s->ru0.ru_utime.tv_sec) +
		(double)(ru.ru_utime.tv_usec - s->ru0.ru_utime.tv_usec) / 1e6 +
		(double)(ru.ru_stime.tv_sec - s->ru0.ru_stime.tv_sec) +
		(double)(ru.ru_stime.tv_usec - s->ru0.ru_stime.tv_usec) / 1e6;
	set_rt(s, true);
	return s->prof;
}

struct lc_profile *lc_sampler_take_profile(struct lc_sampler *s,
					   double elapsed)
{
	struct lc_profile *p = lc_sampler_profile(s, elapsed);

	s->prof = NULL;
	return p;
}

const char *lc_sampler_no_lua(const struct lc_sampler *s)
{
	return s->in ? NULL : s->no_lua ? lc_error_message(s->no_lua) :
	       "no Lua VM found";
}

size_t lc_sampler_vms_seen(const struct lc_sampler *s, const uint64_t **ret)
{
	*ret = s->vms;
	return s->nvms;
}

const char *lc_sampler_vm_name(const struct lc_sampler *s, uint64_t vm)
{
	return vm_name_of(s, vm);
}

void lc_sampler_destroy(struct lc_sampler *s)
{
	if (!s)
		return;
	free(s->anon);
	lc_target_destroy(s->t);
	for (size_t i = 0; i < s->nts; i++) {
		close_fds(s, &s->ts[i]);
		free(s->ts[i].name);
		free(s->ts[i].last);
	}
	free(s->ts);
	free(s->ts_index);
	free(s->list);
	for (size_t i = 0; s->snaps && i < s->nsnaps; i++)
		free(s->snaps[i].pages);
	free(s->snaps);
	free(s->gone);
	if (s->leader_fd >= 0)
		close(s->leader_fd);
	free(s->live);
	free(s->known);
	free(s->known_slot);
	for (size_t i = 0; i < s->nnames; i++) {
		free(s->names[i].name);
		free(s->names[i].alloc);
	}
	free(s->names);
	free(s->nb_states);
	free(s->nb_ran);
	free(s->nb_chains);
	free(s->nb_owner);
	free(s->nb_hot);
	set_rt(s, false);
	free(s->stops);
	lc_profile_destroy(s->prof);
	free(s);
}
