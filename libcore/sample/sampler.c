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
#define HOT_PAGES	32		/* pages of Lua state copied with it */
#define SPIN_S		0.002		/* poll this long for a stop, then sleep */
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

struct page {
	uint64_t addr;
	uint8_t data[PAGE];
};

/* What one thread's sample copied while it was stopped. */
struct snap {
	int tid;
	uint64_t regs[17];
	uint64_t stack_lo, stack_hi;	/* the copy of [rsp - 128, ...) */
	uint8_t stack[STACK_COPY + 128];
	struct page *pages;		/* HOT_PAGES, sorted by addr */
	size_t npages;
	size_t live_reads;		/* reads the copy could not serve */
	/* Pages read from the running process for this sample, so that
	 * each costs one system call: a hash of page address to slot. */
	struct page *live;		/* LIVE_PAGES */
	size_t nlive;
	uint32_t live_slot[2 * LIVE_PAGES];	/* 1 + index into live, 0 free */
};

struct tstate {
	int tid;
	uint64_t cpu_ns;		/* schedstat run time at the last tick */
	bool seen;			/* alive at the last tick */
	uint64_t hot[HOT_PAGES];	/* pages to copy next time */
	size_t nhot;
	size_t stack_need;		/* bytes above rsp to copy, 0: most */
	char *name;
	/* The last stack seen (root last, no synthetic leaf), for samples
	 * that do not stop a sleeping thread. */
	uint32_t *last;
	size_t nlast;
	uint64_t last_vm, last_co;
	enum lc_prof_kind last_leaf;
	bool last_asleep;		/* taken while it was not running */
	char sleep_at[96];		/* its /proc syscall line then */
	int cpu;			/* the CPU it last ran on, -1 unknown */
	uint64_t cpu_stop;		/* its run time at its last sample */
	double last_tick;		/* when the last tick looked at it */
	unsigned idle_reads;		/* reads in a row that found no CPU used */
	bool read;			/* its run time was read this tick */
};

struct lc_sampler {
	int pid;
	struct lc_sampler_options o;
	/* One session for the whole run: the live program (its memory
	 * served by the copy, cur), its unwinder and interpreter.  Each
	 * sample is decoded in a pass of its own. */
	struct lc_target *t;
	struct lc_interp *in;		/* NULL without Lua */
	const struct lc_error *no_lua;	/* why in is NULL (the target's) */
	/* The VMs samples were of, before the vm filter, in order seen. */
	uint64_t vms[LC_SAMPLER_VMS];
	size_t nvms;
	struct snap cur;
	struct tstate *ts;
	size_t nts;
	uint32_t *ts_index;		/* tid -> 1 + index into ts, 0 free */
	size_t ts_mask;			/* ts_index has ts_mask + 1 slots */
	int reader;			/* the thread process_vm_readv reads through */
	clockid_t clock;		/* the process's CPU clock */
	bool have_clock;
	uint64_t proc_ns;		/* its value at the last tick */
	int64_t unseen_ns;		/* CPU time no thread read accounts for */
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
};

/* ---- reading the copy ---- */


static const struct page *find_page(const struct snap *sn, uint64_t pa)
{
	size_t lo = 0, hi = sn->npages;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (sn->pages[mid].addr < pa)
			lo = mid + 1;
		else if (sn->pages[mid].addr > pa)
			hi = mid;
		else
			return &sn->pages[mid];
	}
	return NULL;
}

/* The page at pa as read from the running process during this sample,
 * or NULL when it cannot be read (or the cache is full). */
static const struct page *live_page(struct lc_sampler *s, uint64_t pa)
{
	struct snap *sn = &s->cur;
	size_t i = (size_t)((pa >> 12) * 0x9E3779B97F4A7C15ull >> 55);
	struct page *p;

	for (;; i = (i + 1) % (2 * LIVE_PAGES)) {
		uint32_t k = sn->live_slot[i];

		if (!k)
			break;
		if (sn->live[k - 1].addr == pa)
			return &sn->live[k - 1];
	}
	if (sn->nlive >= LIVE_PAGES)
		return NULL;
	p = &sn->live[sn->nlive];
	sn->live_reads++;
	if (lc_live_read(s->reader, pa, p->data, PAGE) < 0)
		return NULL;
	p->addr = pa;
	sn->live_slot[i] = (uint32_t)++sn->nlive;
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
	struct snap *sn = &s->cur;
	uint8_t *out = buf;

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

	if (*thread_argp)
		return 0;
	*thread_argp = s;
	return s->cur.tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct lc_sampler *s = arg;

	if (tid != s->cur.tid)
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

	for (int i = 0; i < 17; i++)
		regs[i] = s->cur.regs[i];
	return dwfl_thread_state_registers(thread, 0, 17, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ---- taking one thread's copy ---- */

static void regs_from_user(const struct user_regs_struct *u, uint64_t *r)
{
	r[0] = u->rax; r[1] = u->rdx; r[2] = u->rcx; r[3] = u->rbx;
	r[4] = u->rsi; r[5] = u->rdi; r[6] = u->rbp; r[7] = u->rsp;
	r[8] = u->r8; r[9] = u->r9; r[10] = u->r10; r[11] = u->r11;
	r[12] = u->r12; r[13] = u->r13; r[14] = u->r14; r[15] = u->r15;
	r[16] = u->rip;
}

static int cmp_page(const void *a, const void *b)
{
	const struct page *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* RELEASED: a job-control stop of ours let the thread go in the middle
 * (lc_live_stop_self): what was copied may be of it running. */
enum take { TAKEN, GONE, FAILED, RELEASED };

/* The sampler waits for its ticks and stops threads at real-time
 * priority where it may, and decodes at normal priority.  Without it,
 * a sampler that shares a CPU with the thread it samples waits for it
 * to sleep or for the end of its time slice: it would never see it run.
 * (Stopping a thread wakes it on the sampler's CPU, so sharing is the
 * rule, not the exception.) */
static void set_rt(struct lc_sampler *s, bool on)
{
	struct sched_param sp = { .sched_priority = on ? 1 : 0 };

	if (s->rt)
		sched_setscheduler(0, (on ? SCHED_FIFO : SCHED_OTHER) |
				   SCHED_RESET_ON_FORK, &sp);
}

/* Seize, stop, copy, let go.  *stop_us gets how long it was stopped. */
static enum take take(struct lc_sampler *s, struct tstate *ts, double *stop_us)
{
	struct snap *sn = &s->cur;
	struct user_regs_struct u;
	struct iovec local[HOT_PAGES + 1], remote[HOT_PAGES + 1];
	int sig = 0, slot;
	size_t niov = 0;
	double t0;
	enum take res = TAKEN;
	unsigned long releases = lc_live_releases();

	sn->tid = ts->tid;
	sn->npages = 0;
	sn->live_reads = 0;
	sn->nlive = 0;
	memset(sn->live_slot, 0, sizeof(sn->live_slot));
	sn->stack_lo = sn->stack_hi = 0;
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
	lc_live_hold_sig(slot, sig);
	if (ptrace(PTRACE_GETREGS, ts->tid, NULL, &u) < 0) {
		res = FAILED;
		goto out;
	}
	regs_from_user(&u, sn->regs);
	/* One read for last time's Lua pages and the top of the stack,
	 * which ends where its mapping does. */
	sn->stack_lo = (sn->regs[7] - 128) & ~7ull;
	{
		uint64_t end = sn->stack_lo + 128 +
			       (ts->stack_need ? ts->stack_need : STACK_COPY);

		uint64_t rs, re;
		unsigned rf;

		if (lc_memory_region_at(s->t->prog->mem, sn->regs[7], &rs, &re,
					&rf) && re < end)
			end = re;
		sn->stack_hi = end > sn->stack_lo ? end : sn->stack_lo;
	}
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
out:
	ptrace(PTRACE_DETACH, ts->tid, NULL, (void *)(long)sig);
	lc_live_unhold(slot);
	*stop_us = (lc_now_s() - t0) * 1e6;
	qsort(sn->pages, sn->npages, sizeof(*sn->pages), cmp_page);
	return lc_live_releases() != releases ? RELEASED : res;
}

/* ---- the profile sample ---- */

/* Frames of the report's thread, root first into the profile. */
static void add_stack(struct lc_sampler *s, struct tstate *ts,
		      const uint32_t *frames, size_t nframes, int64_t cpu_ns,
		      uint64_t vm, uint64_t coroutine, enum lc_prof_kind leaf);

static void add_sample(struct lc_sampler *s, struct tstate *ts,
		       const struct lc_stack *th, int64_t cpu_ns, bool idle)
{
	uint32_t *locs = calloc(th->nframes + 2, sizeof(*locs));
	enum lc_prof_kind leaf;
	uint64_t coroutine = th->nstates ? th->states[0] : 0;
	size_t n;

	if (!locs)
		return;
	n = lc_profile_stack_of(s->prof, th, locs, &leaf);
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
	add_stack(s, ts, locs, n, cpu_ns, th->vm, coroutine, leaf);
	free(locs);
}

/* Add a stack (leaf first) with a synthetic leaf frame for what the
 * thread was doing when it is not a frame of its own: the collector,
 * or idleness (--wall). */
static void add_stack(struct lc_sampler *s, struct tstate *ts,
		      const uint32_t *frames, size_t nframes, int64_t cpu_ns,
		      uint64_t vm, uint64_t coroutine, enum lc_prof_kind leaf)
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
	lc_profile_add(p, locs, n, cpu_ns, ts->tid, ts->name, vm, coroutine,
		       leaf);
	free(locs);
}

/* ---- ticks ---- */

/* The CPU a thread last ran on (field 39 of its stat), or -1; *state
 * gets its state letter (R running, S sleeping...), '?' if unknown. */
static int stat_of(int pid, int tid, char *state)
{
	char path[80], buf[1024], *p;
	int cpu = -1;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	*state = '?';
	f = fopen(path, "r");
	if (!f)
		return -1;
	/* The whole file, not a line: comm may hold a newline (and ')'),
	 * so the fields start after the last ')'. */
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
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
	fclose(f);
	return cpu;
}

/* The number of threads of the process (field 20 of the leader's stat),
 * or -1; *state gets the leader's state letter, '?' if unknown.  The
 * leader's own stat, not the process's: that one adds up every thread's
 * times. */
static long threads_of(int pid, char *state)
{
	char path[64], buf[1024], *p;
	long n = -1;
	int fd;
	ssize_t got;

	*state = '?';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return -1;
	buf[got] = '\0';
	p = strrchr(buf, ')');
	if (p && sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %ld",
			state, &n) != 2)
		n = -1;
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

static uint64_t cpu_ns_of(int pid, int tid)
{
	char path[80];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return UINT64_MAX;
	if (fscanf(f, "%llu", &ns) != 1)
		ns = UINT64_MAX;
	fclose(f);
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
	p->cpu_stop = UINT64_MAX;
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

static void hot_add(struct tstate *ts, uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len;

	/* Addresses come from the target: garbage wraps around.  Of a long
	 * range (a deep data stack), the last pages: the innermost frames,
	 * which change fastest. */
	if (!addr || end < addr)
		return;
	if (len > HOT_PAGES * PAGE)
		addr = end - HOT_PAGES * PAGE;
	for (uint64_t pa = addr & ~(PAGE - 1); pa < end && pa >= (addr & ~(PAGE - 1));
	     pa += PAGE) {
		size_t i;

		for (i = 0; i < ts->nhot; i++)
			if (ts->hot[i] == pa)
				break;
		if (i == ts->nhot && ts->nhot < HOT_PAGES)
			ts->hot[ts->nhot++] = pa;
	}
}

/* What to copy at this thread's next stop: what a Lua stack changes as
 * it runs (the lua_States on the thread, their CallInfos, the used part
 * of their data stacks), and the machine stack up to a little above the
 * outermost frame this sample unwound. */
static void learn_hot(struct lc_sampler *s, struct tstate *ts,
		      struct lc_pass *pass, const struct lc_stack *th)
{
	uint64_t rsp = s->cur.regs[7], top = 0;

	ts->nhot = 0;
	if (th && s->in && pass) {
		size_t room = 16 + th->nframes;
		uint64_t (*r)[2] = malloc(room * sizeof(*r));
		size_t n = r ? s->in->ops->hot(pass, th->states, th->nstates,
					      th->frames, th->nframes, r,
					      room) : 0;

		for (size_t i = 0; i < n; i++)
			hot_add(ts, r[i][0], r[i][1]);
		free(r);
	}
	for (size_t i = 0; th && i < th->nframes; i++) {
		uint64_t sp = th->frames[i].sp;

		if (th->frames[i].kind != LC_FRAME_LUA && sp > top &&
		    sp >= rsp && sp - rsp < STACK_COPY)
			top = sp;
	}
	ts->stack_need = 0;
	if (top) {
		uint64_t need = (top - rsp + STACK_SLACK + 1023) & ~1023ull;

		ts->stack_need = need < STACK_MIN ? STACK_MIN :
				 need > STACK_COPY ? STACK_COPY : need;
	}
}

/* Decode the copy just taken, in a pass of its own, into *st; learn what
 * to copy next time.  0, or -1 when the pass cannot begin. */
static int decode(struct lc_sampler *s, struct tstate *ts, struct lc_stack *st)
{
	struct lc_stack_options so = { .max_frames = (size_t)s->o.max_frames };
	struct lc_pass *pass = NULL;
	struct lc_error *err = s->in ? s->in->ops->begin(s->in, &pass) : NULL;

	if (err) {
		lc_error_destroy(err);
		memset(st, 0, sizeof(*st));
		learn_hot(s, ts, NULL, NULL);
		return -1;
	}
	lc_stack_decode(s->t, pass, ts->tid, &so, st);
	learn_hot(s, ts, pass, st);
	if (pass)
		s->in->ops->end(pass);
	return 0;
}

static void sample_thread(struct lc_sampler *s, struct tstate *ts,
			  int64_t cpu_ns, bool idle)
{
	struct lc_stack st;
	int err;
	double stop_us = 0;
	enum take k;
	bool first = ts->nhot == 0;
	uint64_t at_stop;

	s->prof->q.attempted++;
	k = take(s, ts, &stop_us);
	set_rt(s, false);
	if (k == RELEASED) {
		/* Not a sample, nor a lost one: we were stopped. */
		s->prof->q.attempted--;
		return;
	}
	/* The thread's run time as of this stop: a stop brings it up to
	 * date, and the thread has barely run since. */
	at_stop = k == TAKEN ? cpu_ns_of(s->pid, ts->tid) : UINT64_MAX;
	if (k != GONE && s->nstops < MAX_STOPS) {
		double *p = s->nstops % 4096 ? s->stops :
			    realloc(s->stops, (s->nstops + 4096) * sizeof(*p));

		if (p) {
			s->stops = p;
			s->stops[s->nstops++] = stop_us;
		}
		s->prof->q.stop_total_s += stop_us / 1e6;
	}
	if (k == GONE) {
		s->prof->q.lost_gone++;
		return;
	}
	if (k == FAILED) {
		s->prof->q.lost_read++;
		return;
	}
	err = decode(s, ts, &st);
	if (!err && first && st.nstates) {
		/* The thread's first sample read its Lua state from the running
		 * process: take it again, now copying that state while it is
		 * stopped. */
		lc_stack_deinit(&st);
		set_rt(s, true);
		k = take(s, ts, &stop_us);
		set_rt(s, false);
		at_stop = k == TAKEN ? cpu_ns_of(s->pid, ts->tid) : UINT64_MAX;
		if (k == RELEASED) {
			s->prof->q.attempted--;
			return;
		}
		if (k != TAKEN) {
			if (k == GONE)
				s->prof->q.lost_gone++;
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
	if (st.vm) {
		size_t i = 0;

		while (i < s->nvms && s->vms[i] != st.vm)
			i++;
		if (i == s->nvms && s->nvms < LC_SAMPLER_VMS)
			s->vms[s->nvms++] = st.vm;
	}
	if (st.nframes == 0) {
		s->prof->q.lost_read++;
	} else if (s->o.vm && st.vm != s->o.vm) {
		/* Another VM's sample (or no VM's): filtered out, and not
		 * one the run attempted.  A sleep that follows is not one
		 * of the VM's either. */
		s->prof->q.attempted--;
		free(ts->last);
		ts->last = NULL;
		ts->nlast = 0;
	} else {
		if (st.partial) {
			if (st.partial & LC_PARTIAL_TRUNCATED)
				s->prof->q.truncated++;
			else if (s->cur.live_reads)
				s->prof->q.lost_inconsistent++;
		}
		/* CPU time: what the thread used from its last sample's stop
		 * to this one's.  What /proc says at a tick is up to date only
		 * as of the thread's last scheduling event or CPU clock
		 * reading, which a program's own os.clock() calls place at the
		 * edges of its phases: weighing a sample with it credits one
		 * phase's time to the next. */
		if (!s->o.wall && at_stop != UINT64_MAX &&
		    ts->cpu_stop != UINT64_MAX && at_stop >= ts->cpu_stop)
			cpu_ns = (int64_t)(at_stop - ts->cpu_stop);
		add_sample(s, ts, &st, cpu_ns, idle);
		s->prof->q.taken++;
	}
	if (at_stop != UINT64_MAX)
		ts->cpu_stop = at_stop;
	lc_stack_deinit(&st);
}

/* What a tick will sample: a record by index (a thread seen later in
 * the tick may move the records: tstate reallocates them). */
struct todo {
	size_t ts;
	int64_t cpu_ns;
	bool idle;
};

struct tick {
	double now, period;
	struct todo *todo;
	size_t ntodo;
	cpu_set_t busy;
	uint64_t seen_ns;		/* CPU time the reads account for */
};

/* Read one thread's run time and state; queue its sample, or take the
 * stack of its sleep again, or skip it.  -1: it could not be read. */
static int look(struct lc_sampler *s, struct tick *k, size_t idx)
{
	struct tstate *ts = &s->ts[idx];
	uint64_t cpu;
	int64_t delta, weight;
	char state, at[sizeof(((struct tstate *)0)->sleep_at)];
	int c, tid = ts->tid;
	void *p;

	ts->read = true;
	cpu = cpu_ns_of(s->pid, tid);
	if (cpu == UINT64_MAX)
		return -1;
	delta = ts->cpu_ns == UINT64_MAX ? 0 : (int64_t)(cpu - ts->cpu_ns);
	if (ts->cpu_ns != UINT64_MAX && delta > 0)
		k->seen_ns += (uint64_t)delta;
	if (ts->cpu_ns != UINT64_MAX && delta <= 0)
		ts->idle_reads++;
	else
		ts->idle_reads = 0;
	ts->cpu_ns = cpu;
	if (!s->o.wall && delta <= 0) {
		s->prof->q.idle_skipped++;
		return 0;
	}
	c = stat_of(s->pid, tid, &state);
	ts->cpu = c;
	/* What a sample stands for: the CPU time used since the last read,
	 * or with --wall the time since then. */
	weight = s->o.wall ? (int64_t)((ts->last_tick ?
		 k->now - ts->last_tick : k->period) * 1e9) : delta;
	if (weight > 1000000000)
		weight = 1000000000;
	ts->last_tick = k->now;
	/* Still in the sleep a stack was taken in: the same system call at
	 * the same place, and no more CPU used than our stop cost it.  That
	 * stack stands; stopping the thread again would only wake it
	 * again. */
	at[0] = '\0';
	if (state != 'R' && state != 'D')
		syscall_of(s->pid, tid, at, sizeof(at));
	if (state == 'S' && ts->last && ts->last_asleep && delta < SELF_NS) {
		if (at[0] && strcmp(at, ts->sleep_at) == 0) {
			if (!s->o.wall) {
				s->prof->q.idle_skipped++;
				return 0;
			}
			s->prof->q.attempted++;
			s->prof->q.taken++;
			add_stack(s, ts, ts->last, ts->nlast, weight, ts->last_vm,
				  ts->last_co, LC_PROF_IDLE);
			return 0;
		}
	}
	/* In uninterruptible sleep it would not even stop. */
	if (state == 'D') {
		if (ts->last) {
			s->prof->q.attempted++;
			s->prof->q.taken++;
			add_stack(s, ts, ts->last, ts->nlast, weight, ts->last_vm,
				  ts->last_co, s->o.wall ? LC_PROF_IDLE :
				  ts->last_leaf);
		} else {
			s->prof->q.idle_skipped++;
		}
		return 0;
	}
	memcpy(ts->sleep_at, at, sizeof(at));
	p = realloc(k->todo, (k->ntodo + 1) * sizeof(*k->todo));
	if (!p)
		return 0;
	k->todo = p;
	k->todo[k->ntodo].ts = idx;
	k->todo[k->ntodo].cpu_ns = weight;
	k->todo[k->ntodo].idle = state != 'R';
	k->ntodo++;
	if (s->affinity && state == 'R' && c >= 0 && c < CPU_SETSIZE)
		CPU_SET(c, &k->busy);
	return 0;
}

static bool asleep(const struct tstate *ts)
{
	return ts->idle_reads >= IDLE_AFTER && ts->cpu_ns != UINT64_MAX;
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
	s->prof->q.ticks++;
	if (s->last_tick && k.now - s->last_tick > 2 * k.period)
		s->prof->q.late_ticks++;
	s->last_tick = k.now;
	nthreads = threads_of(s->pid, &state);
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
	if (s->have_clock) {
		struct timespec t;

		if (clock_gettime(s->clock, &t) == 0)
			proc_ns = (uint64_t)t.tv_sec * 1000000000u +
				  (uint64_t)t.tv_nsec;
		else
			s->have_clock = false;
	}
	/* Of the threads asleep, one in stride each tick, so that each is
	 * read at least twice a second (a --wall sample stands for the time
	 * since its last one). */
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
	if (s->have_clock) {
		/* Run time the process used that no read accounts for: a
		 * thread asleep woke up unseen, or one ended.  The sum over
		 * ticks cancels the skew of reading at different times. */
		if (s->proc_ns)
			s->unseen_ns += (int64_t)(proc_ns - s->proc_ns) -
					(int64_t)k.seen_ns;
		s->proc_ns = proc_ns;
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
	if (s->affinity)
		avoid_cpus(s, &k.busy);
	for (size_t i = 0; i < k.ntodo; i++) {
		sample_thread(s, &s->ts[k.todo[i].ts], k.todo[i].cpu_ns,
			      k.todo[i].idle);
		set_rt(s, true);
	}
	free(k.todo);
	/* Forget threads that exited (as of a listing). */
	for (size_t i = 0; listed && i < s->nts;) {
		if (!s->ts[i].seen) {
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
	return kill(s->pid, 0) == 0 || errno == EPERM ? 0 : -1;
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
	s->cur.pages = calloc(HOT_PAGES, sizeof(*s->cur.pages));
	s->cur.live = calloc(LIVE_PAGES, sizeof(*s->cur.live));
	s->prof = lc_profile_create();
	if (!s->cur.pages || !s->cur.live || !s->prof) {
		lc_sampler_destroy(s);
		return &lc_error_nomem;
	}
	{
		struct lc_program *p;

		err = lc_program_prepare_live(pid, false, &p);
		if (!err)
			err = lc_target_wrap(p, &s->t);
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
	s->reader = s->t->prog->reader;
	s->have_clock = clock_getcpuclockid(pid, &s->clock) == 0;
	/* The layout is read now, before any thread is stopped; without
	 * one, samples are native stacks (the error stays with the target). */
	s->in = lc_target_interp(s->t, &s->no_lua);
	/* Is ptrace allowed at all?  Better to know now than per sample.
	 * (A seized thread is let go only from a stop.) */
	{
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
	s->prof->period_ns = (int64_t)(1e9 / s->o.rate_hz);
	s->prof->wall = s->o.wall;
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
	{
		struct sched_param sp = { .sched_priority = 1 };

		s->rt = sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK,
					   &sp) == 0;
		s->prof->q.realtime = s->rt;
	}
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
	q->achieved_hz = elapsed > 0 ? (double)q->ticks / elapsed : 0;
	if (s->nstops) {
		double *v = malloc(s->nstops * sizeof(*v));

		if (v) {
			memcpy(v, s->stops, s->nstops * sizeof(*v));
			qsort(v, s->nstops, sizeof(*v), cmp_double);
			q->stop_median_us = v[s->nstops / 2];
			q->stop_p99_us = v[(size_t)((double)(s->nstops - 1) * 0.99)];
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

void lc_sampler_destroy(struct lc_sampler *s)
{
	if (!s)
		return;
	lc_target_destroy(s->t);
	for (size_t i = 0; i < s->nts; i++) {
		free(s->ts[i].name);
		free(s->ts[i].last);
	}
	free(s->ts);
	free(s->ts_index);
	free(s->list);
	free(s->cur.pages);
	free(s->cur.live);
	set_rt(s, false);
	free(s->stops);
	lc_profile_destroy(s->prof);
	free(s);
}
