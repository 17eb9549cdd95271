/* luacore-sample: an out-of-process CPU sampler for programs that embed
 * Lua: mixed native and Lua stacks, no change to the program.
 *
 * Exit status: 0 profile written, 1 written but poor (more than half the
 * samples lost, or no Lua frames: the Lua VM cannot be read), 2 fatal (no
 * profile: ptrace refused, no such process, cannot write) or nothing of
 * what was asked sampled (no sample at all without Lua; none of the --vm
 * given), 64 usage. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "luacore.h"
#include "luacore-alloc.h"
#include "sample/profile.h"
#include "sample/sampler.h"
#include "sample/sink.h"

#define EXIT_POOR	1
#define EXIT_FATAL	2
#define EXIT_USAGE	64

/* A message on stderr.  Messages quote paths and names read from the
 * target: escaped, as the profile's labels are. */
static void message(const char *kind, const char *msg)
{
	fprintf(stderr, "luacore-sample: %s", kind);
	lc_print_escaped(msg, stderr);
	fputc('\n', stderr);
}

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	stop_requested = sig;
}

/* Anything that ends us badly first lets every held thread go. */
static void on_fatal(int sig)
{
	lc_live_release_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Ctrl-Z, or a background read or write of the terminal: let the thread
 * being sampled go, then stop; after SIGCONT sampling goes on (the sample
 * in the middle is dropped, see sampler.c). */
static void on_job_stop(int sig)
{
	lc_live_stop_self(sig);
}

static void handle_signals(void)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
				     SIGQUIT };
	static const int stops[] = { SIGTSTP, SIGTTIN, SIGTTOU };
	struct sigaction sa = { .sa_handler = on_stop };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sa.sa_handler = on_job_stop;
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		sigaction(stops[i], &sa, NULL);
	sa.sa_flags = 0;
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND;
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		sigaction(fatal[i], &sa, NULL);
}

/* How the command we started ended, said once; the exit status that
 * stands for it, as a shell gives it (128 + a signal's number). */
static int child_exit(const char *cmd, int st)
{
	if (WIFEXITED(st)) {
		fprintf(stderr, "luacore-sample: %s exited with status %d\n",
			cmd, WEXITSTATUS(st));
		return WEXITSTATUS(st);
	}
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "luacore-sample: %s was killed by signal %d (%s)%s\n",
			cmd, WTERMSIG(st), strsignal(WTERMSIG(st)),
			WCOREDUMP(st) ? ", core dumped" : "");
		return 128 + WTERMSIG(st);
	}
	return 0;
}

/* Start the command: 0 once it is past exec, -1 (said) if it cannot be
 * run.  A pipe closed on exec tells which: the child writes exec's errno
 * into it when exec fails. */
static pid_t start_command(char **cmd)
{
	int fds[2], e = 0;
	pid_t child;
	ssize_t n;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		perror("luacore-sample: pipe");
		return -1;
	}
	child = fork();
	if (child < 0) {
		perror("luacore-sample: fork");
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (child == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		close(fds[0]);
		execvp(cmd[0], cmd);
		e = errno;
		if (write(fds[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(fds[1]);
	do
		n = read(fds[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	if (n == (ssize_t)sizeof(e)) {
		fprintf(stderr, "luacore-sample: cannot run %s: %s\n", cmd[0],
			strerror(e));
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
		return -1;
	}
	return child;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The sinks' names, in the table's order: "folded, pprof, svg or
 * speedscope". */
static void sink_names(FILE *out)
{
	for (size_t i = 0; lc_sinks[i]; i++)
		fprintf(out, "%s%s",
			i == 0 ? "" : lc_sinks[i + 1] ? ", " : " or ",
			lc_sinks[i]->name);
}


/* ---- --alloc: allocation profiles through the preloaded shim ---- */

#define ALLOC_MAX_THREADS	4096
#define ALLOC_MAX_VMS		(1u << 20)	/* closed VMs remembered */
/* A thread's copied PARKs wait this long at most to be read: the shim
 * sends them where we do not wait, so that a send wakes nothing (a
 * wake-up costs the sender tens of microseconds, and can put us on its
 * CPU ahead of it). */
#define ALLOC_DRAIN_MS		5
#define ALLOC_MAX_ID		(64u << 20)	/* sample ids we track */

/* A sampled block: the profile sample it went into and what it stands
 * for, until it is freed (in use at the end otherwise). */
struct alloc_live {
	long sample;		/* -1: none (lost, filtered, or freed) */
	int64_t objects, bytes;
	uint32_t vm;
	/* its FREE or NEW came first: a copied PARK, read from its thread's
	 * socket, can come after what the shared socket says of it */
	bool ended;
};

/* A thread that parks, on its own socket. */
struct alloc_thread {
	int tid;
	/* the socket of its copied PARKs (-1: none), read every
	 * ALLOC_DRAIN_MS, never waited on: sending on it wakes nothing */
	int bulk;
	/* what it copies at its parks, as last told it (HOT) */
	struct lc_sampler_hot told;
	uint64_t told_L;	/* its VM (main state); 0: told to wait */
	uint32_t seq;		/* of the last HOT sent it */
	bool hot_told;
	/* what its samples of VM acc_L read, merged (HOT_MERGE): kept
	 * while it is told to wait */
	struct lc_sampler_hot acc;
	uint64_t acc_L;
	unsigned copied_ok;	/* copies in a row that were whole */
	/* its copies lacked the state it ran: this many times, and the
	 * parks it still waits for us at before it copies again */
	unsigned misses, wait_left;
	unsigned page_misses;	/* copies in a row that lacked pages */
	unsigned steady;	/* samples in a row that acc covered */
	bool copied_once;	/* told to copy once */
};

/* Durations in microseconds, as many as memory allows. */
struct times {
	double *v;
	size_t n, cap;
};

static void times_add(struct times *t, double us)
{
	if (t->n == t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 1024;
		double *nd = realloc(t->v, nc * sizeof(*nd));

		if (!nd)
			return;
		t->v = nd;
		t->cap = nc;
	}
	t->v[t->n++] = us;
}

struct alloc_run {
	int sock;		/* our end of the shared socket */
	struct pollfd *pfd;	/* [0] the shared socket, then threads' */
	struct alloc_thread *th;	/* beside pfd ([0] unused) */
	size_t n;
	uint8_t *copy;		/* LC_ALLOC_COPY_MAX: a copied PARK's rest */
	/* VMs closed (by serial): a copied PARK read after its VM's CLOSE
	 * is in use no more */
	bool *closed;
	size_t nclosed;
	struct alloc_live *live;	/* by sample id - 1 */
	size_t nlive;
	bool refused;
	/* the cap on parks a second: over it in a tenth of a second, the
	 * mean is raised in the next answer; under a quarter of it over a
	 * second, halved again (never below the first), so that a chance
	 * burst does not ratchet it up for the rest of the run */
	double max_rate;
	uint64_t mean, first_mean, top_mean;	/* in force, first, highest */
	double window_start, second_start;
	uint64_t window_parks, second_parks;
	uint64_t parks, lost, answered_late;
	uint64_t copied, missed;	/* parks the thread copied; of them,
					   lacking its state */
	uint64_t copied_bytes;		/* what they copied, in all */
	bool copying;			/* a thread was told to copy */
	double drained;			/* when the bulk sockets were read */
	/* the program: when its main began (our go) and when it ended (0:
	 * it runs on), and the CPU it used in all */
	double started_at, ended;
	struct rusage ru;
	uint64_t dropped, overflow, bad;
	/* --at through the shim: each function's calls (the shim's count),
	 * and the PLT slots it took */
	uint64_t at_count[LC_ALLOC_AT_MAX], at_slots[LC_ALLOC_AT_MAX];
	size_t at_hooked;
	bool at_final;		/* the counts from its exit */
	struct times park_us;	/* how long each park took us, to answer */
	struct times stall_us;	/* every park, as its thread saw it */
};

/* The shim: beside our own build (the build tree's shim/.libs), else
 * where it is installed.  NULL if neither has it. */
static char *alloc_shim_path(void)
{
	char exe[4096], *slash, *path = NULL;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		exe[n] = '\0';
		if ((slash = strrchr(exe, '/'))) {
			*slash = '\0';
			if (asprintf(&path, "%s/../shim/.libs/libluacore-alloc.so",
				     exe) > 0 && access(path, R_OK) == 0)
				return path;
			free(path);
			path = NULL;
		}
	}
	if (asprintf(&path, "%s/libluacore-alloc.so", LC_PKGLIBDIR) > 0 &&
	    access(path, R_OK) == 0)
		return path;
	free(path);
	return NULL;
}

/* Our end of the shared socket, and the environment that gives the
 * other end, the mean and the shim to the command (set in ours for the
 * fork, taken out again by alloc_unsetenv).  -1 (said) on failure. */
static int alloc_setup(int64_t mean, int *child_end)
{
	int sv[2];
	char num[32], *shim = alloc_shim_path(), *pre;
	const char *old = getenv("LD_PRELOAD");

	if (!shim) {
		fprintf(stderr, "luacore-sample: --alloc: libluacore-alloc.so is neither in this build's shim/.libs nor in %s: build or install it (make)\n",
			LC_PKGLIBDIR);
		return -1;
	}
	/* ours close on exec; the command's end is inherited */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0) {
		perror("luacore-sample: socketpair");
		free(shim);
		return -1;
	}
	fcntl(sv[0], F_SETFD, FD_CLOEXEC);
	snprintf(num, sizeof(num), "%d", sv[1]);
	setenv(LC_ALLOC_ENV_FD, num, 1);
	snprintf(num, sizeof(num), "%" PRId64, mean);
	setenv(LC_ALLOC_ENV_MEAN, num, 1);
	if (old && *old && asprintf(&pre, "%s:%s", shim, old) > 0) {
		setenv("LD_PRELOAD", pre, 1);
		free(pre);
	} else {
		setenv("LD_PRELOAD", shim, 1);
	}
	free(shim);
	*child_end = sv[1];
	return sv[0];
}

static void alloc_unsetenv(const char *old_preload)
{
	unsetenv(LC_ALLOC_ENV_FD);
	unsetenv(LC_ALLOC_ENV_MEAN);
	if (old_preload)
		setenv("LD_PRELOAD", old_preload, 1);
	else
		unsetenv("LD_PRELOAD");
}

/* The shim's START: 1 it samples (and waits for our byte), 0 it cannot
 * (said), -1 none came (the command ended, or did not load the shim)
 * within LC_ALLOC_START_MS. */
static int alloc_wait_start(struct alloc_run *r, const char *cmd, pid_t child)
{
	double until = now_s() + LC_ALLOC_START_MS / 1e3;

	while (now_s() < until && !stop_requested) {
		struct pollfd p = { .fd = r->sock, .events = POLLIN };
		struct lc_alloc_msg m;
		ssize_t n;

		if (poll(&p, 1, 50) <= 0) {
			if (waitpid(child, NULL, WNOHANG) == child)
				return -1;
			continue;
		}
		n = recv(r->sock, &m, sizeof(m), MSG_DONTWAIT);
		if (n == 0)
			return -1;
		if (n != (ssize_t)sizeof(m) || m.magic != LC_ALLOC_MAGIC ||
		    m.version != LC_ALLOC_VERSION || m.kind != LC_ALLOC_START)
			continue;
		if (m.ptr == 1 || m.ptr == 2)
			return 1;
		fprintf(stderr, "luacore-sample: --alloc: %s loads no shared Lua library (Lua is linked into the program): the allocation shim cannot reach its allocator, and nothing was sampled.  What its heap holds can still be read from outside: luacore-inspect --heap -p PID (or a core)\n",
			cmd);
		r->refused = true;
		return 0;
	}
	return -1;
}

static struct alloc_live *alloc_slot(struct alloc_run *r, uint64_t id)
{
	if (!id || id > ALLOC_MAX_ID)
		return NULL;
	if (id > r->nlive) {
		size_t nn = r->nlive ? r->nlive : 1024;
		struct alloc_live *nl;

		while (nn < id)
			nn *= 2;
		nl = realloc(r->live, nn * sizeof(*nl));
		if (!nl)
			return NULL;
		for (size_t i = r->nlive; i < nn; i++)
			nl[i] = (struct alloc_live){ .sample = -1 };
		r->live = nl;
		r->nlive = nn;
	}
	return &r->live[id - 1];
}

/* A HELLO's thread socket, to poll. */
static void alloc_add_thread(struct alloc_run *r, int fd, int bulk, int tid)
{
	struct pollfd *np;
	struct alloc_thread *nt;

	if (r->n >= ALLOC_MAX_THREADS + 1 ||
	    !(np = realloc(r->pfd, (r->n + 1) * sizeof(*np)))) {
		close(fd);	/* its parks find EOF: the shim goes off */
		if (bulk >= 0)
			close(bulk);
		return;
	}
	r->pfd = np;
	if (!(nt = realloc(r->th, (r->n + 1) * sizeof(*nt)))) {
		close(fd);
		if (bulk >= 0)
			close(bulk);
		return;
	}
	r->th = nt;
	r->pfd[r->n] = (struct pollfd){ .fd = fd, .events = POLLIN };
	r->th[r->n] = (struct alloc_thread){ .tid = tid, .bulk = bulk };
	r->n++;
}

/* The answer to a park: go, with a new mean when parks come faster
 * than the cap. */
struct alloc_answer {
	struct alloc_run *r;
	int fd;
	double t0;
	/* the parks a second the VM's allocation rate since its last park
	 * would bring at the mean in force (0: not known) */
	double rate;
	bool sent;
};

/* Raise the mean by the power of two that brings parks coming over times
 * faster than the cap under half of it: a fast start is tamed in one step
 * rather than ten parks a doubling, and the pace it leaves has room to
 * double before the cap is met again (the mean is halved below a quarter
 * of it).  The new mean. */
static uint64_t alloc_raise(struct alloc_run *r, double over, double now)
{
	unsigned k = 1;

	while (k < 20 && 2 * over > (double)(1u << k))
		k++;
	r->mean <<= k;
	if (r->mean > r->top_mean)
		r->top_mean = r->mean;
	r->window_start = r->second_start = now;
	r->window_parks = r->second_parks = 0;
	return r->mean;
}

/* A park counted against the cap (rate: as alloc_answer's): the new mean,
 * or 0 when it stays.  stale: a copied park taken at a mean lower than
 * the one in force, which its thread has not read yet (it reads what we
 * send every few parks): counted in the second, but no ground for
 * raising the mean again. */
static uint64_t alloc_pace(struct alloc_run *r, double rate, bool stale)
{
	uint64_t mean = 0;
	double now = now_s();

	if (stale) {
		r->second_parks++;
		return 0;
	}

	/* tenths of a second: a burst is capped within one */
	if (now - r->window_start >= 0.1) {
		r->window_start = now;
		r->window_parks = 0;
	}
	r->second_parks++;
	++r->window_parks;
	if (r->max_rate > 0 && r->mean < ((uint64_t)1 << 40) &&
	    rate > r->max_rate) {
		/* this VM alone allocates fast enough to park more often
		 * than the cap: from its first park on */
		mean = alloc_raise(r, rate / r->max_rate, now);
	} else if (r->window_parks > r->max_rate / 10 && r->max_rate > 0 &&
		   r->mean < ((uint64_t)1 << 40)) {
		/* threads together: the rate seen in this window */
		mean = alloc_raise(r, (double)r->window_parks /
				      fmax(now - r->window_start, 1e-3) /
				      r->max_rate, now);
	} else if (now - r->second_start >= 1) {
		if (r->mean > r->first_mean &&
		    (double)r->second_parks / (now - r->second_start) <
		    r->max_rate / 4)
			mean = r->mean /= 2;
		r->second_start = now;
		r->second_parks = 0;
	}
	return mean;
}

static void alloc_go(void *arg)
{
	struct alloc_answer *a = arg;
	struct alloc_run *r = a->r;
	uint64_t mean;

	if (a->sent)
		return;
	a->sent = true;
	mean = alloc_pace(r, a->rate, false);
	if (mean ? send(a->fd, &mean, sizeof(mean), MSG_NOSIGNAL | MSG_DONTWAIT) !=
		   (ssize_t)sizeof(mean) :
		   send(a->fd, "g", 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
		r->answered_late++;
	times_add(&r->park_us, (now_s() - a->t0) * 1e6);
}

/* v[0..n) holds x. */
static bool hot_has(const uint64_t *v, size_t n, uint64_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* What told has copies all that h asks for: its pages, its states, as
 * much stack. */
static bool hot_covers(const struct lc_sampler_hot *told,
		       const struct lc_sampler_hot *h)
{
	if (told->stack_end != h->stack_end ||
	    told->stack_need < h->stack_need)
		return false;
	for (size_t i = 0; i < h->nstates; i++)
		if (!hot_has(told->state, told->nstates, h->state[i]))
			return false;
	for (size_t i = 0; i < h->npages; i++)
		if (!hot_has(told->page, told->npages, h->page[i]))
			return false;
	return true;
}

#define HOT_STEADY	1

/* The pages and states of old into h as well, while they stay few
 * (HOT_MERGE pages in all): a thread that runs coroutines in turn copies
 * each of them at every park, rather than losing the samples of all but
 * the last; and old's stack need when larger. */
#define HOT_MERGE	16
static void hot_merge(struct lc_sampler_hot *h,
		      const struct lc_sampler_hot *old)
{
	if (h->stack_end != old->stack_end)
		return;
	if (old->stack_need > h->stack_need)
		h->stack_need = old->stack_need;
	for (size_t i = 0; i < old->nstates &&
	     h->nstates < LC_SAMPLER_HOT_STATES; i++)
		if (!hot_has(h->state, h->nstates, old->state[i]))
			h->state[h->nstates++] = old->state[i];
	for (size_t i = 0; i < old->npages && h->npages < HOT_MERGE; i++)
		if (!hot_has(h->page, h->npages, old->page[i]))
			h->page[h->npages++] = old->page[i];
}

/* Tell thread th (on fd) what to copy at its parks from now on, and a
 * new mean (0: none): when it changed (what it was told stays, as long
 * as it is not refreshed: its copy failed), or with a mean.  A thread
 * whose copies lacked its state waits for wait_left parks more first
 * (told "wait", an empty HOT). */
static void alloc_tell_hot(struct alloc_run *r, struct lc_sampler *s, int fd,
			   struct alloc_thread *th, uint64_t L, bool refresh,
			   uint64_t mean)
{
	struct lc_sampler_hot h;
	struct lc_alloc_hot m = {
		.magic = LC_ALLOC_MAGIC, .version = LC_ALLOC_VERSION,
		.kind = LC_ALLOC_HOT, .L = L, .mean = mean,
	};

	if (!L || !lc_sampler_hot(s, th->tid, &h))
		memset(&h, 0, sizeof(h));
	/* What its samples read before and did not need this time stays
	 * (some pages more), so that the list does not flap between two
	 * stacks or coroutines; a page of it gone (its copy failed:
	 * refresh) makes it wait once, and then it starts afresh. */
	if (h.nstates) {
		bool same = !refresh && L == th->acc_L &&
			    hot_covers(&th->acc, &h);

		if (!refresh && L == th->acc_L)
			hot_merge(&h, &th->acc);
		th->acc = h;
		th->acc_L = L;
		th->steady = same ? th->steady + 1 : 0;
	}
	/* It first copies once HOT_STEADY samples in a row needed nothing
	 * new: a copy is checked only when we read it, some ms later, and
	 * every copy sent meanwhile by a list that falls short is lost (a
	 * program that starts parks fast, before the cap acts, sends
	 * dozens by a list its start-up gave).  Later a list that grows is
	 * sent as it grows. */
	if (th->wait_left || !h.nstates ||
	    (!th->copied_once && th->steady < HOT_STEADY)) {
		memset(&h, 0, sizeof(h));
		L = 0;
	}
	if (!mean && !refresh && L == th->told_L &&
	    (!L || hot_covers(&th->told, &h)))
		return;		/* as it was told (or it waits, untold) */
	m.npages = (uint32_t)h.npages;
	m.nstates = (uint32_t)h.nstates;
	m.stack_need = h.stack_need;
	m.stack_end = h.stack_end;
	memcpy(m.page, h.page, sizeof(m.page));
	memcpy(m.state, h.state, sizeof(m.state));
	m.L = L;
	m.seq = th->seq + 1;
	if (send(fd, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT) ==
	    (ssize_t)sizeof(m)) {
		th->seq++;
		th->told = h;
		th->told_L = L;
		th->hot_told = true;
		if (h.nstates)
			r->copying = th->copied_once = true;
	}
}

/* A park: the thread's stack into the profile, and its answer (none
 * when it copied itself: c, and data after it, its copy). */
static void alloc_park(struct alloc_run *r, struct lc_sampler *s, int fd,
		       struct alloc_thread *th, const struct lc_alloc_msg *m,
		       const struct lc_alloc_copy *c, const uint8_t *data)
{
	uint64_t regs[17] = { 0 };
	double p, objects, bytes;
	struct alloc_answer ans = { .r = r, .fd = fd, .t0 = now_s() };
	struct alloc_live *l;
	long sample = -1;
	uint64_t mean = 0;
	int got = -1;

	r->parks++;
	/* The VM's rate, when measured over a gap of at least half the mean
	 * and a tenth of a millisecond: a chance short gap inside a burst
	 * must not raise the mean for seconds */
	if (m->kind == LC_ALLOC_PARK && m->since_ns >= 100000 &&
	    m->mean && m->since_bytes >= m->mean / 2 && r->mean)
		ans.rate = (double)m->since_bytes * 1e9 / (double)m->since_ns /
			   (double)r->mean;
	if (m->dropped > r->dropped)
		r->dropped = m->dropped;
	if (m->overflow > r->overflow)
		r->overflow = m->overflow;
	if (m->nregs >= LC_NREGS) {
		regs[16] = m->regs[LC_REG_RIP];
		regs[7] = m->regs[LC_REG_RSP];
		regs[6] = m->regs[LC_REG_RBP];
		regs[3] = m->regs[LC_REG_RBX];
		regs[12] = m->regs[LC_REG_R12];
		regs[13] = m->regs[LC_REG_R13];
		regs[14] = m->regs[LC_REG_R14];
		regs[15] = m->regs[LC_REG_R15];
	}
	/* What one sample stands for: with a sample every mean bytes on
	 * average (exponential gaps), an allocation of n bytes is sampled
	 * with probability 1 - exp(-n / mean). */
	p = m->mean && m->nsize ?
	    -expm1(-(double)m->nsize / (double)m->mean) : 1;
	if (!(p > 0))
		p = 1;
	objects = 1 / p;
	bytes = (double)m->nsize / p;
	if (m->kind == LC_ALLOC_AT) {
		/* a stop at a call: the calls since the last (regs as at
		 * the function's entry: no frame of the shim's to drop) */
		objects = 1;
		bytes = (double)m->nsize;
	}
	if (c) {
		/* it went on at once: nothing to answer; a new mean goes in
		 * a HOT */
		struct lc_sampler_copy sc = {
			.stack_lo = c->stack_lo, .stack = data,
			.stack_len = c->stack_len, .page_addr = c->page,
			.pages = data + c->stack_len, .npages = c->npages,
			.states = c->state, .nstates = c->nstates,
		};

		ans.sent = true;
		mean = alloc_pace(r, ans.rate, m->mean < r->mean);
		r->copied++;
		r->copied_bytes += c->stack_len + (uint64_t)c->npages *
						  LC_ALLOC_PAGE;
		got = m->nregs < LC_NREGS ? -1 :
		      lc_sampler_take_copied(s, m->tid, regs, m->pc, &sc,
					     (int64_t)(objects + 0.5),
					     (int64_t)(bytes + 0.5), &sample);
		if (got > 0)
			r->missed++;
		/* its copies lacked pages twice running (what it was told
		 * no longer holds what it runs: too many coroutines for
		 * HOT_MERGE pages): as another coroutine */
		th->page_misses = got == 2 ? th->page_misses + 1 : 0;
		if (th->page_misses >= 2) {
			th->page_misses = 0;
			got = 1;
		}
		/* a copy taken as an older HOT said: what the last one
		 * changed has not reached it yet (it reads its socket every
		 * few parks, and its copies wait some ms for us) */
		if (got == 1 && c->seq != th->seq)
			got = 2;
		if (got == 1) {
			/* it ran a state its copy lacked (another
			 * coroutine): it waits at its next parks, twice as
			 * many each time this happens, at most 64 */
			th->wait_left = 1u << (th->misses < 6 ? th->misses : 6);
			th->misses++;
			th->copied_ok = 0;
		} else if (got == 0 && ++th->copied_ok >= 256 && th->misses) {
			/* a long run of whole copies: the next miss costs
			 * fewer waits */
			th->misses--;
			th->copied_ok = 0;
		}
	} else if (m->nregs < LC_NREGS) {
		alloc_go(&ans);
	} else {
		got = lc_sampler_take_parked(s, m->tid, regs,
					     m->kind == LC_ALLOC_AT ? 0 : m->pc,
					     m->L, (int64_t)(objects + 0.5),
					     (int64_t)(bytes + 0.5), alloc_go,
					     &ans, &sample);
		if (th->wait_left)
			th->wait_left--;
	}
	if (got != 0)
		r->lost++;
	alloc_go(&ans);		/* answered once: a no-op if it was */
	if (m->kind != LC_ALLOC_PARK)
		return;
	alloc_tell_hot(r, s, fd, th, m->L,
		       !c && (m->flags & LC_ALLOC_COPY_FAILED), mean);
	if ((l = alloc_slot(r, m->id)) && !l->ended &&
	    !(m->vm < r->nclosed && r->closed[m->vm])) {
		l->sample = sample;
		l->objects = (int64_t)(objects + 0.5);
		l->bytes = (int64_t)(bytes + 0.5);
		l->vm = m->vm;
	}
}

/* The descriptors a packet we do not take brought. */
static void alloc_close_fds(struct cmsghdr *cm)
{
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		for (size_t i = 0; CMSG_LEN((i + 1) * sizeof(int)) <=
				   cm->cmsg_len; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			close(fd);
		}
}

/* Every message waiting on fd (the shared socket, a thread's, or its
 * copied PARKs'; k: which of r->pfd); -1 at EOF. */
static int alloc_read_fd(struct alloc_run *r, struct lc_sampler *s, size_t k,
			 int fd, bool bulk)
{
	for (int budget = 0; budget < 4096; budget++) {
		union {
			char buf[CMSG_SPACE(2 * sizeof(int))];
			struct cmsghdr align;
		} c;
		struct lc_alloc_msg m;
		/* a copied PARK's rest, on a thread's socket */
		struct iovec iov[2] = { { &m, sizeof(m) },
					{ r->copy, LC_ALLOC_COPY_MAX } };
		struct msghdr mh = { .msg_iov = iov,
				     .msg_iovlen = k && r->copy ? 2 : 1,
				     .msg_control = c.buf,
				     .msg_controllen = sizeof(c.buf) };
		ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		const struct lc_alloc_copy *copy = NULL;
		struct cmsghdr *cm;
		struct alloc_live *l;
		size_t rest;

		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		if (n == 0)
			return -1;
		cm = CMSG_FIRSTHDR(&mh);
		rest = n > (ssize_t)sizeof(m) ? (size_t)n - sizeof(m) : 0;
		if (rest && n >= (ssize_t)sizeof(m) && m.kind == LC_ALLOC_PARK &&
		    (m.flags & LC_ALLOC_COPIED) &&
		    rest >= sizeof(struct lc_alloc_copy)) {
			copy = (const struct lc_alloc_copy *)(void *)r->copy;
			if (copy->stack_len > LC_ALLOC_STACK_MAX ||
			    copy->npages > LC_ALLOC_HOT_PAGES ||
			    copy->nstates > LC_ALLOC_HOT_STATES ||
			    rest != sizeof(*copy) + copy->stack_len +
				    (size_t)copy->npages * LC_ALLOC_PAGE)
				copy = NULL;
		}
		if (n < (ssize_t)sizeof(m) || (mh.msg_flags & MSG_TRUNC) ||
		    (rest && !copy) || (!rest && (m.flags & LC_ALLOC_COPIED)) ||
		    m.magic != LC_ALLOC_MAGIC ||
		    m.version != LC_ALLOC_VERSION ||
		    /* a thread's bulk socket: its copied PARKs, and the
		     * FREEs sent with them; its own socket: no copy */
		    (bulk && !copy && m.kind != LC_ALLOC_FREE) ||
		    (!bulk && copy) ||
		    (cm && m.kind != LC_ALLOC_HELLO)) {
			r->bad++;
			alloc_close_fds(cm);
			continue;
		}
		switch (m.kind) {
		case LC_ALLOC_HELLO:
			if (k == 0 && cm && cm->cmsg_level == SOL_SOCKET &&
			    cm->cmsg_type == SCM_RIGHTS &&
			    cm->cmsg_len == CMSG_LEN(2 * sizeof(int))) {
				int v[2];

				memcpy(v, CMSG_DATA(cm), sizeof(v));
				alloc_add_thread(r, v[0], v[1], m.tid);
			} else {
				r->bad++;
				alloc_close_fds(cm);
			}
			break;
		case LC_ALLOC_PARK:
			if (!k) {
				r->bad++;
				break;
			}
			alloc_park(r, s, r->pfd[k].fd, &r->th[k], &m, copy,
				   copy ? r->copy + sizeof(*copy) : NULL);
			/* the wait of the thread's park before, as it saw it */
			if (m.stall_ns)
				times_add(&r->stall_us, (double)m.stall_ns / 1e3);
			break;
		case LC_ALLOC_AT:
			if (m.id < LC_ALLOC_AT_MAX && m.osize > r->at_count[m.id])
				r->at_count[m.id] = m.osize;
			if (!k) {
				r->bad++;
				break;
			}
			alloc_park(r, s, r->pfd[k].fd, &r->th[k], &m, NULL,
				   NULL);
			break;
		case LC_ALLOC_AT_COUNT:
			if (m.id < LC_ALLOC_AT_MAX) {
				r->at_count[m.id] = m.nsize;
				r->at_final = true;
			}
			break;
		case LC_ALLOC_NEW:
			times_add(&r->stall_us, (double)m.stall_ns / 1e3);
			/* a failed allocation: no block to be in use */
			if (!m.ptr && (l = alloc_slot(r, m.id))) {
				l->sample = -1;
				l->ended = true;
			}
			break;
		case LC_ALLOC_FREE:
			if ((l = alloc_slot(r, m.id))) {
				l->sample = -1;
				l->ended = true;
			}
			break;
		case LC_ALLOC_CLOSE:
			for (size_t i = 0; i < r->nlive; i++)
				if (r->live[i].vm == m.vm)
					r->live[i].sample = -1;
			if (m.vm < ALLOC_MAX_VMS && m.vm >= r->nclosed) {
				size_t nn = (size_t)m.vm * 2 + 16;
				bool *nc = realloc(r->closed, nn * sizeof(*nc));

				if (nc) {
					memset(nc + r->nclosed, 0,
					       (nn - r->nclosed) * sizeof(*nc));
					r->closed = nc;
					r->nclosed = nn;
				}
			}
			if (m.vm < r->nclosed)
				r->closed[m.vm] = true;
			break;
		case LC_ALLOC_BYE:
			if (m.stall_ns)
				times_add(&r->stall_us, (double)m.stall_ns / 1e3);
			if (m.dropped > r->dropped)
				r->dropped = m.dropped;
			if (m.overflow > r->overflow)
				r->overflow = m.overflow;
			break;
		default:
			break;
		}
	}
	return 0;
}

/* Every message waiting for us from socket k (0 the shared one, else a
 * thread's, and then its copied PARKs); -1 at EOF of the socket. */
static int alloc_read(struct alloc_run *r, struct lc_sampler *s, size_t k)
{
	int rc = alloc_read_fd(r, s, k, r->pfd[k].fd, false);

	if (k && r->th[k].bulk >= 0)
		alloc_read_fd(r, s, k, r->th[k].bulk, true);
	return rc;
}

/* The copied PARKs of every thread told to copy: at each wake-up, a
 * millisecond apart at least (every ALLOC_DRAIN_MS when nothing wakes
 * us), so that a full bulk socket does not make its thread wait. */
static void alloc_drain(struct alloc_run *r, struct lc_sampler *s)
{
	double now = now_s();

	if (now - r->drained < 1e-3)
		return;
	r->drained = now;
	for (size_t k = 1; k < r->n; k++)
		if (r->th[k].bulk >= 0 && r->th[k].hot_told)
			alloc_read_fd(r, s, k, r->th[k].bulk, true);
}

/* What is still allocated at the end, into the profile's in-use values. */
static void alloc_inuse(struct alloc_run *r, struct lc_profile *p)
{
	for (size_t i = 0; i < r->nlive; i++) {
		const struct alloc_live *l = &r->live[i];

		if (l->sample < 0 || (size_t)l->sample >= p->nsamples)
			continue;
		p->samples[l->sample].inuse_objects += l->objects;
		p->samples[l->sample].inuse_bytes += l->bytes;
	}
}

static void alloc_free(struct alloc_run *r)
{
	for (size_t i = 0; i < r->n; i++) {
		close(r->pfd[i].fd);
		if (i && r->th && r->th[i].bulk >= 0)
			close(r->th[i].bulk);
	}
	free(r->pfd);
	free(r->th);
	free(r->copy);
	free(r->closed);
	free(r->live);
	free(r->park_us.v);
	free(r->stall_us.v);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* t's median and 99th percentile (0 when empty), and its sum. */
static double times_summary(struct times *t, double *med, double *p99)
{
	double sum = 0;

	*med = *p99 = 0;
	if (!t->n)
		return 0;
	qsort(t->v, t->n, sizeof(double), cmp_dbl);
	*med = t->v[t->n / 2];
	/* nearest rank: never below the median */
	*p99 = t->v[(t->n * 99 + 99) / 100 - 1];
	for (size_t i = 0; i < t->n; i++)
		sum += t->v[i];
	return sum;
}

static void alloc_report(struct alloc_run *r, double elapsed)
{
	double med, p99, smed, sp99, stall;

	times_summary(&r->park_us, &med, &p99);
	stall = times_summary(&r->stall_us, &smed, &sp99);
	fprintf(stderr, "luacore-sample: %.1f s, %" PRIu64 " allocations sampled (%.1f parks/s), %" PRIu64 " lost; a park took us %.1f us to answer (median), %.1f us (p99)\n",
		elapsed, r->parks, elapsed > 0 ? (double)r->parks / elapsed : 0,
		r->lost, med, p99);
	if (r->parks)
		fprintf(stderr, "luacore-sample: %" PRIu64 " parks were copied by their thread, which went on at once (%.1f KiB each on average; %" PRIu64 " of them lost: their copy lacked part of the Lua state they ran); %" PRIu64 " waited for us to copy\n",
			r->copied, r->copied ? (double)r->copied_bytes / 1024 / (double)r->copied : 0,
			r->missed, r->parks - r->copied);
	if (r->stall_us.n)
		fprintf(stderr, "luacore-sample: a park held its thread %.1f us (median), %.1f us (p99), %.3f s in all\n",
			smed, sp99, stall / 1e6);
	if (r->ended > 0)
		fprintf(stderr, "luacore-sample: the program ran %.3f s from its main and used %.3f s of CPU in all (user %.3f, system %.3f)\n",
			r->ended - r->started_at,
			(double)r->ru.ru_utime.tv_sec + r->ru.ru_utime.tv_usec / 1e6 +
			(double)r->ru.ru_stime.tv_sec + r->ru.ru_stime.tv_usec / 1e6,
			(double)r->ru.ru_utime.tv_sec + r->ru.ru_utime.tv_usec / 1e6,
			(double)r->ru.ru_stime.tv_sec + r->ru.ru_stime.tv_usec / 1e6);
	if (r->top_mean != r->first_mean)
		fprintf(stderr, "luacore-sample: parks would have come faster than %.0f a second: the mean was raised from %" PRIu64 " to %" PRIu64 " bytes at most, %" PRIu64 " at the end (each sample weighs by its own)\n",
			r->max_rate, r->first_mean, r->top_mean, r->mean);
	if (r->dropped || r->overflow || r->answered_late || r->bad)
		fprintf(stderr, "luacore-sample: the shim dropped %" PRIu64 " block messages (its socket was full) and missed %" PRIu64 " blocks in its table; %" PRIu64 " answers could not be sent, %" PRIu64 " messages were unreadable: in-use figures are low by as much\n",
			r->dropped, r->overflow, r->answered_late, r->bad);
}


static void say(void *arg, enum lc_log_level level, const char *msg)
{
	(void)arg;
	(void)level;
	fprintf(stderr, "luacore-sample: %s\n", msg);
}

/* ---- --at: stacks at calls of functions ---- */

#define AT_MAX_STOPS	200	/* stops a second, unless --at-period */

struct at_run {
	struct lc_probe_point pts[LC_PROBE_MAX];
	size_t n;
	struct lc_probe_holder *h;
	bool held;		/* the holder runs */
	bool hw;		/* its mechanism: hardware breakpoints */
	const char *why_not_hw;	/* static */
	uint64_t period;	/* --at-period, 0: the cap's */
	bool bare;
};

struct at_go_arg {
	struct lc_probe_holder *h;
	uint64_t seq;
};

static void at_go(void *arg)
{
	struct at_go_arg *g = arg;

	lc_probe_holder_go(g->h, g->seq);
}

/* The comma-separated functions, resolved in the process's modules. */
static struct lc_error *at_resolve(struct at_run *a, struct lc_sampler *s,
				   const char *list)
{
	char *copy = strdup(list), *tok, *save = NULL;
	struct lc_error *err = NULL;

	if (!copy)
		return &lc_error_nomem;
	for (tok = strtok_r(copy, ",", &save); !err && tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (a->n == LC_PROBE_MAX) {
			err = lc_error_create(LC_ERR_INVALID, "--at: %d functions at most",
					      LC_PROBE_MAX);
			break;
		}
		err = lc_sampler_resolve(s, tok, &a->pts[a->n]);
		if (!err)
			a->n++;
	}
	free(copy);
	if (!err && !a->n)
		err = lc_error_create(LC_ERR_INVALID, "--at: no function named");
	return err;
}

/* The counts on stdout, one line a function; their sum. */
static uint64_t at_print_counts(const struct at_run *a, const uint64_t *counts)
{
	uint64_t calls = 0;

	printf("%12s  %s\n", "calls", "function");
	for (size_t k = 0; k < a->n; k++) {
		printf("%12" PRIu64 "  %s (%s+0x%" PRIx64 ")\n", counts[k],
		       a->pts[k].name, a->pts[k].module, a->pts[k].offset);
		calls += counts[k];
	}
	fflush(stdout);
	return calls;
}

static void at_free(struct at_run *a)
{
	for (size_t k = 0; k < a->n; k++) {
		free(a->pts[k].name);
		free(a->pts[k].module);
	}
	a->n = 0;
}

/* ---- --at --count-only: calls of functions, counted by the kernel ---- */

/* Count the calls of the comma-separated functions in process pid (or
 * the command, held by the shim before its main), until duration,
 * SIGINT or the end; the counts on stdout.  The exit status. */
static int run_at_count(const char *list, int pid, char **cmd, double duration,
			const struct lc_sampler_options *so, int want,
			bool verbose)
{
	struct at_run a = { .n = 0 };
	struct lc_probe *pr = NULL;
	struct lc_sampler *s = NULL;
	struct lc_error *err;
	struct alloc_run ar = { .sock = -1 };
	uint64_t counts[LC_PROBE_MAX];
	pid_t child = 0;
	int status = 0, st = 0;
	bool child_done = false;
	double start;
	int pidfd = -1;

	lc_set_log(say, NULL, verbose ? LC_LOG_VERBOSE : LC_LOG_NOTICE);
	if (!pid) {
		int child_end = -1;
		char *old = getenv("LD_PRELOAD") ? strdup(getenv("LD_PRELOAD")) : NULL;

		/* the shim holds the program before its main, and only that */
		ar.sock = alloc_setup(0, &child_end);
		if (ar.sock < 0) {
			free(old);
			return EXIT_FATAL;
		}
		child = start_command(cmd);
		close(child_end);
		alloc_unsetenv(old);
		free(old);
		if (child < 0) {
			close(ar.sock);
			return 127;
		}
		pid = child;
		ar.pfd = malloc(sizeof(*ar.pfd));
		if (!ar.pfd || alloc_wait_start(&ar, cmd[0], child) <= 0) {
			fprintf(stderr, "luacore-sample: --at: %s was not held before its main (it ended, or does not load the shim: a set-user-ID program?); nothing counted\n",
				cmd[0]);
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			free(ar.pfd);
			close(ar.sock);
			return EXIT_FATAL;
		}
	}
	lc_debuginfod_take();
	err = lc_sampler_create(pid, so, &s);
	if (!err)
		err = at_resolve(&a, s, list);
	if (!err)
		err = lc_probe_open(pid, child != 0, a.pts, a.n, want, &pr);
	if (err) {
		message("", lc_error_message(err));
		lc_error_destroy(err);
		status = EXIT_FATAL;
		goto out;
	}
	if (child && send(ar.sock, "g", 1, MSG_NOSIGNAL) != 1)
		fprintf(stderr, "luacore-sample: cannot let %s go: %s\n", cmd[0],
			strerror(errno));
	start = now_s();
	/* the command's end seen at once (its run time is reported) */
	pidfd = child ? (int)syscall(SYS_pidfd_open, child, 0) : -1;
	while (!stop_requested) {
		if (pidfd >= 0) {
			struct pollfd pf = { .fd = pidfd, .events = POLLIN };

			poll(&pf, 1, 50);
		} else {
			usleep(50000);
		}
		if (duration && now_s() - start > duration)
			break;
		if (child) {
			if (waitpid(child, &st, WNOHANG) == child) {
				child_done = true;
				fprintf(stderr, "luacore-sample: the program ran %.3f s from its main\n",
					now_s() - start);
				break;
			}
		} else {
			if (kill(pid, 0) < 0 && errno == ESRCH)
				break;
			lc_probe_rescan(pr);
		}
	}
	if (lc_probe_read(pr, counts) < 0)
		fprintf(stderr, "luacore-sample: --at: a count could not be read\n");
	at_print_counts(&a, counts);
	{
		size_t nth = lc_probe_rescan(pr);
		const char *why = lc_probe_how(pr) == LC_PROBE_UPROBE ?
				  lc_probe_why_not_hw(pr) : NULL;

		fprintf(stderr, "luacore-sample: counted by %s%s%s%s on %zu thread%s for %.1f s; nothing was stopped\n",
			lc_probe_how(pr) == LC_PROBE_HW ? "hardware breakpoints" : "uprobes",
			why ? " (not hardware breakpoints: " : "", why ? why : "",
			why ? ")" : "", nth, nth == 1 ? "" : "s", now_s() - start);
		if (!child)
			fprintf(stderr, "luacore-sample: threads are probed as they are found, every 50 ms: calls on a thread that began and ended in between are not counted\n");
	}
out:
	if (pidfd >= 0)
		close(pidfd);
	lc_probe_close(pr);
	if (s)
		lc_sampler_destroy(s);
	at_free(&a);
	if (child) {
		if (status)
			kill(child, SIGKILL);
		else if (!child_done)
			fprintf(stderr, "luacore-sample: counting stopped; %s (pid %d) runs on: waiting for it to end\n",
				cmd[0], (int)child);
		if (!child_done)
			while (waitpid(child, &st, 0) < 0 && errno == EINTR)
				;
		if (!status)
			status = child_exit(cmd[0], st);
		free(ar.pfd);
		close(ar.sock);
	}
	return status;
}

/* The holder's stops so far into the profile.  -1 when it is gone. */
static int at_serve(struct at_run *a, struct lc_sampler *s)
{
	struct lc_probe_hit hit;
	int r;

	while ((r = lc_probe_holder_next(a->h, &hit)) == 1) {
		struct at_go_arg g = { .h = a->h, .seq = hit.seq };
		long sample;

		lc_sampler_take_parked(s, hit.tid, hit.regs, 0, 0, 1,
				       (int64_t)hit.weight, at_go, &g, &sample);
	}
	return r < 0 ? -1 : 0;
}

static int at_report(struct at_run *a, const struct lc_probe_stats *st,
		     int finished, double elapsed)
{
	const char *why = a->why_not_hw;
	bool hw = a->hw;
	uint64_t calls;

	if (finished < 0) {
		fprintf(stderr, "luacore-sample: --at: the holder process ended without its report: counts unknown, and the target may be left traced (see TracerPid in /proc/PID/status)\n");
		return EXIT_FATAL;
	}
	calls = at_print_counts(a, st->counts);
	fprintf(stderr, "luacore-sample: %" PRIu64 " calls counted by %s%s%s%s on %" PRIu64 " thread%s in %.1f s%s; %" PRIu64 " stops",
		calls, hw ? "hardware breakpoints" : "uprobes",
		why ? " (not hardware breakpoints: " : "", why ? why : "",
		why ? ")" : "", st->threads, st->threads == 1 ? "" : "s",
		elapsed, st->complete ? "" : " (some counts could not be read: low)",
		st->stops);
	if (a->bare)
		fprintf(stderr, " (bare: no stack read)");
	else if (a->period == 1)
		fprintf(stderr, ", one a call (--at-period 1)");
	else if (a->period)
		fprintf(stderr, ", one every %" PRIu64 " calls on average (--at-period)", a->period);
	else if (st->period_last > 1)
		fprintf(stderr, ", one every %" PRIu64 " calls on average at the end: stops came faster than %d a second (--at-period sets it)",
			st->period_last, AT_MAX_STOPS);
	else
		fprintf(stderr, ", one a call");
	fputc('\n', stderr);
	fprintf(stderr, "luacore-sample: a stop held its thread %.1f us (median), %.1f us (p99), %.3f s in all; %" PRIu64 " let go before their stack was read (held %.0f ms)\n",
		st->hold_med_us, st->hold_p99_us, st->hold_total_s,
		st->unanswered, 250.0);
	fprintf(stderr, "luacore-sample: the holder detached in %.1f ms%s; it dropped %" PRIu64 " stops still on their way%s\n",
		st->cleanup_s * 1e3,
		st->left_traced ? " (some threads could not be detached: they are let go as it ends)" : "",
		st->drained, "");
	return 0;
}

/* Perf events refused (err), a launched command held by the shim: ask
 * the shim to stop at the calls through its PLT slots instead.  0, the
 * shim hooked some (said); -1, refused (said, with err's reason). */
static int at_shim_request(struct alloc_run *r, struct at_run *a,
			   const struct lc_error *err)
{
	char req[LC_ALLOC_AT_REQ_MAX];
	uint64_t period = a->period ? a->period : 1, slots = 0;
	size_t len = 1 + sizeof(period);
	double until;

	req[0] = 'A';
	memcpy(req + 1, &period, sizeof(period));
	for (size_t k = 0; k < a->n && k < LC_ALLOC_AT_MAX; k++) {
		size_t l = strlen(a->pts[k].name);

		if (len + l + 2 > sizeof(req))
			break;
		if (k)
			req[len++] = ',';
		memcpy(req + len, a->pts[k].name, l);
		len += l;
	}
	req[len++] = '\0';
	if (send(r->sock, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		goto refused;
	until = now_s() + 5;
	while (r->at_hooked < a->n && now_s() < until) {
		struct pollfd p = { .fd = r->sock, .events = POLLIN };
		struct lc_alloc_msg m;

		if (poll(&p, 1, 100) <= 0)
			continue;
		if (recv(r->sock, &m, sizeof(m), MSG_DONTWAIT) != (ssize_t)sizeof(m))
			break;
		if (m.magic != LC_ALLOC_MAGIC || m.kind != LC_ALLOC_AT_HOOKED ||
		    m.id >= LC_ALLOC_AT_MAX)
			continue;
		r->at_slots[m.id] = m.nsize;
		slots += m.nsize;
		r->at_hooked++;
	}
	if (!slots || send(r->sock, "g", 1, MSG_NOSIGNAL) != 1)
		goto refused;
	fprintf(stderr, "luacore-sample: %s\nluacore-sample: --at: stopping through the allocation shim instead, at the calls made through these PLT slots of the modules loaded at start:",
		lc_error_message(err));
	for (size_t k = 0; k < a->n; k++)
		fprintf(stderr, " %s (%" PRIu64 ")", a->pts[k].name, r->at_slots[k]);
	fputs("; calls a library makes to its own functions, and those of modules loaded later, are neither stopped at nor counted\n", stderr);
	r->mean = r->first_mean = r->top_mean = period;
	r->max_rate = a->period ? 0 : AT_MAX_STOPS;
	r->window_start = r->second_start = now_s();
	return 0;
refused:
	fprintf(stderr, "luacore-sample: %s\nluacore-sample: --at: nor can the allocation shim stop there: %s\n",
		lc_error_message(err),
		r->at_hooked ? "no module loaded at start calls these functions through a PLT slot (only exported functions called from another module can be interposed)" :
		"it did not answer");
	return -1;
}

/* The report of --at through the shim. */
static void at_shim_report(struct alloc_run *r, struct at_run *a, double elapsed)
{
	double med, p99;
	uint64_t calls;

	calls = at_print_counts(a, r->at_count);
	times_summary(&r->park_us, &med, &p99);
	fprintf(stderr, "luacore-sample: %" PRIu64 " calls counted by the shim%s in %.1f s; %" PRIu64 " stops (%" PRIu64 " lost); a stop took us %.1f us to answer (median), %.1f us (p99)\n",
		calls, r->at_final ? "" : " (as of its last stop: the program did not end normally)",
		elapsed, r->parks, r->lost, med, p99);
	if (r->top_mean != r->first_mean)
		fprintf(stderr, "luacore-sample: stops came faster than %.0f a second: one every %" PRIu64 " calls at most, %" PRIu64 " at the end\n",
			r->max_rate, r->top_mean, r->mean);
}

static void usage(FILE *out)
{
	fputs("Usage: luacore-sample [OPTIONS] -p PID\n"
	      "       luacore-sample [OPTIONS] -- COMMAND [ARGS...]\n"
	      "Sample where a program that embeds Lua 5.1-5.5 spends its CPU time:\n"
	      "mixed native and Lua stacks, read from outside; no change to the\n"
	      "program, no restart.\n"
	      "\n"
	      "  -p, --pid PID        sample this running process\n"
	      "  -r, --rate HZ        samples per second per thread (default 100)\n"
	      "  -d, --duration SEC   stop after SEC seconds (default: until Ctrl-C or\n"
	      "                       the program ends)\n"
	      "  -o, --output FILE    write the profile here (default: profile.folded);\n"
	      "                       the format follows the suffix: .pb.gz pprof,\n"
	      "                       .svg flame graph, .json speedscope, else folded\n"
	      "  -f, --format F       ", out);
	sink_names(out);
	fputs(", whatever the suffix\n"
	      "      --wall           wall-clock samples: every thread every tick, idle\n"
	      "                       ones labelled (default: CPU time: a thread that\n"
	      "                       used no CPU since the last tick is not sampled)\n"
	      "      --alloc          with -- COMMAND: an allocation profile instead of\n"
	      "                       a CPU profile: a preloaded shim wraps the\n"
	      "                       allocator of each Lua VM the program makes and\n"
	      "                       parks the allocating thread once per MEAN bytes\n"
	      "                       on average (exponential gaps): it sends a copy of\n"
	      "                       its stack, or waits while we copy it; pprof with\n"
	      "                       alloc_objects, alloc_space, inuse_objects,\n"
	      "                       inuse_space; the other formats by bytes\n"
	      "                       allocated.  Lua must be a shared library\n"
	      "      --alloc-mean MEAN  bytes between samples on average (default\n"
	      "                       524288); implies --alloc\n"
	      "      --alloc-max-parks N  at most about N parks a second: above, the\n"
	      "                       mean is raised (default 50; 0: no cap)\n"
	      "      --at F[,F...]    the stacks that call these functions (symbols of\n"
	      "                       the program or its libraries), a stop a call\n"
	      "                       (past 200 stops/s, spaced out); the exact\n"
	      "                       counts on stdout.  A holder process owns the\n"
	      "                       attachment and cleans up if we die\n"
	      "      --at-period N    with --at: a stop every N calls on average\n"
	      "      --count-only     with --at: count the calls, stop nothing\n"
	      "      --at-mechanism hardware|uprobe  with --at: insist on one\n"
	      "      --top            a live view of the hottest functions, refreshed\n"
	      "                       every second (no file unless -o is given)\n"
	      "      --host-frames    --top: the host's frames below Lua one by one\n"
	      "                       (default: one row)\n"
	      "      --thread TID     only this thread\n"
	      "      --vm-name GLOBAL name each VM by the string value of its global\n"
	      "                       GLOBAL (skynet: SERVICE_NAME): labels, --vm\n"
	      "      --vm ADDR|NAME   only samples of the VM whose global_State is ADDR,\n"
	      "                       or whose name (--vm-name) is NAME\n"
	      "      --max-frames N   frames per stack (default 256)\n"
	      "      --types FILE     the Lua layout from FILE's DWARF (the program's\n"
	      "                       lstate.c compiled with -g, a debug file)\n"
	      "      --layout X.Y.Z   the built-in layout of that Lua release\n"
	      "      --debuginfo-path PATH  where separate debug files are looked\n"
	      "                       for (default \":.debug:/usr/lib/debug\")\n"
	      "      --stop-budget MS a stop that has held its thread MS milliseconds\n"
	      "                       before its copy is done lets it go unread, a\n"
	      "                       lost sample (default 1)\n"
	      "      --nonblocking    never stop the program: Lua stacks are read as\n"
	      "                       it runs, again until two reads agree; no native\n"
	      "                       frames, and the innermost Lua line is the one\n"
	      "                       last saved\n"
	      "      --title TEXT     the SVG flame graph's title\n"
	      "      --folded-time    folded counts in microseconds of CPU (wall) time,\n"
	      "                       not samples\n"
	      "      --folded-vm      folded stacks start with their VM's name\n"
	      "      --native         keep every machine frame, the interpreter's own\n"
	      "                       too (default: Lua-first stacks, where they fold\n"
	      "                       into the Lua function they run for)\n"
	      "  -q, --quiet          no status line\n"
	      "  -v, --verbose        say what it is doing on stderr (modules, debug\n"
	      "                       info, layouts)\n"
	      "  -h, --help           show this help\n"
	      "  -V, --version        show the version\n"
	      "\n"
	      "Ticks are spaced at random around 1/HZ so that periodic work is not\n"
	      "aliased.  A thread is stopped only while its registers and the memory\n"
	      "it last needed are copied; the report at the end says for how long.\n"
	      "\n"
	      "Exit status: 0 profile written, 1 written but more than half the\n"
	      "samples were lost or the Lua VM cannot be read (native stacks only),\n"
	      "2 fatal error (ptrace refused, no such process, cannot write) or\n"
	      "nothing sampled (no sample of the --vm given; no sample at all\n"
	      "without Lua), 64 usage error, 127 COMMAND cannot be started.  With\n"
	      "-- COMMAND, a sampling that succeeded exits with the command's status\n"
	      "(128 + N for signal N).\n", out);
}

static int parse_double(const char *s, double lo, double hi, const char *opt,
			double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "luacore-sample: %s takes a number from %g to %g\n",
			opt, lo, hi);
		return -1;
	}
	*ret = v;
	return 0;
}

/* The output file, opened before sampling starts (as perf record does):
 * a path that cannot be written is said at once, not after the run.
 * *created: the file did not exist (removed again if no profile is
 * written). */
static FILE *open_output(const char *path, bool *created)
{
	FILE *out;

	*created = access(path, F_OK) != 0;
	out = fopen(path, "w");
	if (!out)
		fprintf(stderr, "luacore-sample: cannot write %s: %s; nothing sampled\n",
			path, strerror(errno));
	return out;
}

/* The output opened before the run, closed unwritten: removed if we made
 * it (outf NULL: none). */
static void discard_output(FILE *outf, bool created, const char *path)
{
	if (!outf)
		return;
	fclose(outf);
	if (created)
		unlink(path);
}

static int write_profile(const struct lc_profile *p,
			 const struct lc_sink *sink, FILE *out,
			 const char *path, const char *title)
{
	int r;

	r = sink->write(p, title, out);
	if (fclose(out) != 0 && r == 0)
		r = -1;
	if (r < 0)
		fprintf(stderr, "luacore-sample: cannot write %s: %s\n", path,
			strerror(errno));
	return r;
}

static void report_quality(const struct lc_profile *p, bool one_vm,
			   bool launched, FILE *out)
{
	const struct lc_prof_quality *q = &p->q;
	uint64_t lost = lc_prof_lost(q);

	fprintf(out, "luacore-sample: %.1f s, %.0f Hz requested, %.1f Hz achieved, %llu late ticks\n",
		(double)p->duration_ns / 1e9, q->rate_hz, q->achieved_hz,
		(unsigned long long)q->late_ticks);
	/* The last cause is --nonblocking's alone; a stopping run never
	 * has it, and its line keeps the form scripts parse. */
	char nb[96] = "";
	if (q->nonblocking)
		snprintf(nb, sizeof nb, ", resuming a coroutine not found yet %llu",
			 (unsigned long long)q->nb_unknown);
	fprintf(out, "luacore-sample: samples: %llu attempted, %llu taken, %llu lost (stack read failed %llu, thread gone %llu, inconsistent %llu, released at the stop budget %llu%s), %llu truncated, %llu idle threads skipped\n",
		(unsigned long long)q->attempted, (unsigned long long)q->taken,
		(unsigned long long)lost, (unsigned long long)q->lost_read,
		(unsigned long long)q->lost_gone,
		(unsigned long long)q->lost_inconsistent,
		(unsigned long long)q->lost_held, nb,
		(unsigned long long)q->truncated,
		(unsigned long long)q->idle_skipped);
	if (q->nonblocking) {
		uint64_t read = q->taken - q->nb_native + q->lost_inconsistent;

		fprintf(out, "luacore-sample: not stopped (--nonblocking): %llu Lua stacks read as the target ran (%llu reads), %llu consistent (%.1f%%: two reads in a row agreed, below the innermost frame at least; %llu at the first two), %llu inconsistent after %d reads (lost), %llu resuming a coroutine not found yet (lost); %llu samples of threads running no Lua VM, whose native frames are not read; %llu charged to a thread by elimination (more than one VM ran); %llu memory scans for VMs and coroutines took %.3f s; sampler CPU %.2f s (per sample %.0f us)\n",
			(unsigned long long)read, (unsigned long long)q->nb_reads,
			(unsigned long long)(q->taken - q->nb_native),
			read ? 100.0 * (double)(q->taken - q->nb_native) / (double)read : 0,
			(unsigned long long)q->nb_first,
			(unsigned long long)q->lost_inconsistent, 3,
			(unsigned long long)q->nb_unknown,
			(unsigned long long)q->nb_native,
			(unsigned long long)q->nb_guessed,
			(unsigned long long)q->nb_scans, q->nb_scan_s,
			q->sampler_cpu_s,
			q->taken ? 1e6 * q->sampler_cpu_s / (double)q->taken : 0);
	} else {
		fprintf(out, "luacore-sample: target stopped %.3f s in all, per sample median %.1f us, p99 %.1f us, longest hold %.1f us (stop budget %.0f us); its threads held stopped %.3f%% of the time (at most %.3f%%); sampler CPU %.2f s (%.2f s in stops, %.2f s decoding; per sample %.0f us and %.0f us)\n",
			q->stop_total_s, q->stop_median_us, q->stop_p99_us,
			q->stop_max_us, q->stop_budget_us,
			100 * q->stop_share, 100 * q->stop_share_max,
			q->sampler_cpu_s, q->sampler_stop_cpu_s,
			q->sampler_decode_cpu_s,
			q->taken ? 1e6 * q->sampler_stop_cpu_s / (double)q->taken : 0,
			q->taken ? 1e6 * q->sampler_decode_cpu_s / (double)q->taken : 0);
	}
	if (!p->wall && q->cpu_used_ns > 0) {
		uint64_t points = q->taken + q->found_asleep + q->found_waiting;

		fprintf(out, "luacore-sample: CPU: %s used %.2f s; the samples %scharge %.2f s and the points of stops too late to count stood for %.2f s (%.0f%% in all); %.2f s was used between samples by threads not on a CPU at their next sample point, and is charged to no stack\n",
			p->pid ? "the process" : "the threads",
			(double)q->cpu_used_ns / 1e9,
			one_vm ? "of the --vm asked for " : "",
			(double)q->cpu_charged_ns / 1e9,
			(double)q->cpu_late_ns / 1e9,
			100.0 * (double)(q->cpu_charged_ns + q->cpu_late_ns) /
			(double)q->cpu_used_ns,
			(double)q->cpu_between_ns / 1e9);
		fprintf(out, "luacore-sample: each thread's samples are scaled to the CPU time the kernel counted for it: %.2f s in all%s",
			(double)q->cpu_scaled_ns / 1e9,
			q->threads_unseen ? "" : "\n");
		if (q->threads_unseen)
			fprintf(out, "; %llu thread%s used %.2f s that no sample point found it on a CPU for, which the profile cannot place\n",
				(unsigned long long)q->threads_unseen,
				q->threads_unseen == 1 ? "" : "s",
				(double)q->cpu_unseen_ns / 1e9);
		if (!q->nonblocking)
			fprintf(out, "luacore-sample: threads stopped at a point and found not on a CPU: %llu waiting in a system call, %llu waiting for a CPU; %llu stops too late to count\n",
				(unsigned long long)q->found_asleep,
				(unsigned long long)q->found_waiting,
				(unsigned long long)q->late_stops);
		if (points > 100 && q->found_waiting * 4 > points)
			fprintf(out, "luacore-sample: warning: at %.0f%% of the points a runnable thread was waiting for a CPU: the machine has no CPU to spare, the sampler's own included; shares between threads that compete for CPUs can be off by several points (a lower --rate costs less)\n",
				100.0 * (double)q->found_waiting / (double)points);
	}
	/* A launched command runs while the sampler starts (its modules
	 * mapped, then read): that start is missing from the profile. */
	if (launched && q->cpu_before_ns > 0)
		fprintf(out, "luacore-sample: the command used %.3f s of CPU before sampling began (while the sampler started): not in the profile\n",
			(double)q->cpu_before_ns / 1e9);
	if (!q->realtime && !q->nonblocking)
		fputs("luacore-sample: not allowed real-time priority (CAP_SYS_NICE or RLIMIT_RTPRIO): a thread that shares the sampler's CPU is sampled late, when it sleeps or its time slice ends\n", out);
	/* LuaJIT: what the VM was doing (each sample's vmstate label), in
	 * jit.p's letters (-jp=v): compiled, interpreted, C, GC, JIT. */
	{
		double w[5] = { 0 }, all = 0;

		for (size_t i = 0; i < p->nsamples; i++) {
			const struct lc_prof_sample *sm = &p->samples[i];
			const char *v;
			int k;

			if (!sm->vmstate || sm->vmstate >= p->nstrings)
				continue;
			v = p->strings[sm->vmstate];
			k = strncmp(v, "trace#", 6) == 0 ? 0 :
			    strcmp(v, "lua") == 0 ? 1 : strcmp(v, "c") == 0 ? 2 :
			    strcmp(v, "gc") == 0 ? 3 : 4;
			w[k] += (double)lc_profile_cpu(sm);
			all += (double)lc_profile_cpu(sm);
		}
		if (all > 0)
			fprintf(out, "luacore-sample: LuaJIT VM states (as jit.p's -jp=v): N %.1f%% compiled, I %.1f%% interpreted, C %.1f%% C code, G %.1f%% garbage collector, J %.1f%% JIT compiler\n",
				100 * w[0] / all, 100 * w[1] / all,
				100 * w[2] / all, 100 * w[3] / all,
				100 * w[4] / all);
	}
}

/* --top: per function, the weights at the last refresh. */
struct top {
	int64_t *self, *total;		/* cumulative, as of the last frame */
	int64_t host;			/* the host's frames below Lua, one row */
	int64_t cpu;			/* charged and late, as of the last frame */
	size_t n;
	double last;
	bool host_rows;			/* --host-frames: those one by one */
};

/* A row: a function, or (func == UINT32_MAX) the host's frames below
 * Lua folded into one. */
struct top_row {
	uint32_t func;
	bool lua;			/* a Lua-side function */
	int64_t self, total;		/* since the last frame */
	int64_t cself, ctotal;		/* since the start */
};

static int cmp_row(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->cself != y->cself)
		return x->cself < y->cself ? 1 : -1;
	if (x->lua != y->lua)
		return x->lua ? -1 : 1;
	if (x->ctotal != y->ctotal)
		return x->ctotal < y->ctotal ? 1 : -1;
	return x->func < y->func ? -1 : x->func > y->func;
}

/* Columns s takes on a terminal: UTF-8 continuation bytes take none. */
static size_t columns(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* The first n columns of s into buf. */
static void cut_columns(char *buf, size_t size, const char *s, size_t n)
{
	size_t i = 0, c = 0;

	while (s[i] && i + 1 < size) {
		if (((unsigned char)s[i] & 0xc0) != 0x80 && c++ == n)
			break;
		i++;
	}
	memcpy(buf, s, i);
	buf[i] = '\0';
}

/* A function's label in room columns: "name (…/dir/file.lua:8)" as the
 * other outputs write it; where that is too wide, the path is cut from
 * the left to its last component ("name (…/file.lua:8)"), then the name
 * from the right, so that file and line survive. */
static void top_label(const struct lc_profile *p, uint32_t func, size_t room,
		      char *buf, size_t size)
{
	const struct lc_prof_func *f;
	char name[256], file[200], tail[250];
	const char *base;

	lc_profile_label(p, func, buf, size);
	if (columns(buf) <= room || func >= p->nfuncs)
		goto cut;
	f = &p->funcs[func];
	if (f->kind != LC_PROF_LUA || !f->file ||
	    strncmp(f->name, "function <", 10) == 0)
		goto cut;
	base = strrchr(f->file, '/');
	lc_esc_copy(file, sizeof(file), base ? base + 1 : f->file);
	lc_esc_copy(name, sizeof(name), f->name);
	snprintf(tail, sizeof(tail), " (%s%s:%" PRId64 ")", base ? "\xe2\x80\xa6/" : "",
		 file, f->start_line);
	if (columns(tail) + 2 < room) {
		char cut[250];

		cut_columns(cut, sizeof(cut), name, room - columns(tail));
		snprintf(buf, size, "%s%s", cut, tail);
		return;
	}
	snprintf(buf, size, "%s", tail + 1);
cut:
	if (columns(buf) > room) {
		char t[LC_SINK_LABEL_MAX];

		cut_columns(t, sizeof(t), buf, room);
		snprintf(buf, size, "%s", t);
	}
}

/* One frame of the live view: shares over the last interval (like
 * py-spy top's %Own and %Total), times over the whole run.  Every line
 * fits the terminal's width: the header is shortened, the time columns
 * go below 80 columns, labels are cut as top_label says. */
static void draw_top(const struct lc_profile *p, struct top *t, int pid,
		     double now, double elapsed, bool tty)
{
	size_t n = p->nfuncs, nrows = 0, show;
	int64_t *self = calloc(n ? n : 1, sizeof(*self));
	int64_t *total = calloc(n ? n : 1, sizeof(*total));
	struct top_row *rows = calloc(n + 1, sizeof(*rows));
	int64_t sum = 0, host = 0;
	double interval = t->last ? now - t->last : elapsed;
	size_t lines = 25, cols = 100, room;
	bool times;
	struct winsize ws;
	char label[LC_SINK_LABEL_MAX], line[LC_SINK_LABEL_MAX + 64];
	uint64_t lost = lc_prof_lost(&p->q);
	double cpu;

	if (!self || !total || !rows ||
	    lc_profile_func_weights(p, true, self, total,
				    t->host_rows ? NULL : &host) < 0)
		goto out;
	if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row &&
	    ws.ws_col) {
		lines = ws.ws_row;
		cols = ws.ws_col;
	}
	for (size_t f = 0; f < n; f++) {
		int64_t s0 = f < t->n ? t->self[f] : 0;
		int64_t t0 = f < t->n ? t->total[f] : 0;

		sum += self[f] - s0;
		if (!total[f])
			continue;
		rows[nrows++] = (struct top_row){
			(uint32_t)f, p->funcs[f].kind != LC_PROF_NATIVE,
			self[f] - s0, total[f] - t0, self[f], total[f] };
	}
	if (host)
		rows[nrows++] = (struct top_row){ UINT32_MAX, false, 0,
			host - t->host, 0, host };
	qsort(rows, nrows, sizeof(*rows), cmp_row);
	if (tty)
		fputs("\033[H\033[2J", stdout);
	/* What the samples stand for, scaled per thread. */
	cpu = interval > 0 ? 100.0 * (double)(p->q.cpu_scaled_ns - t->cpu) /
			     1e9 / interval : 0.0;
	t->cpu = p->q.cpu_scaled_ns;
	snprintf(line, sizeof(line), "luacore-sample --top: pid %d, %.0f s, %llu samples, %.1f Hz, %llu lost; sampled CPU %.0f%% of one core",
		 pid, elapsed, (unsigned long long)p->q.taken, p->q.achieved_hz,
		 (unsigned long long)lost, cpu);
	if (columns(line) > cols)
		snprintf(line, sizeof(line), "pid %d %.0fs %llu samples %llu lost CPU %.0f%%",
			 pid, elapsed, (unsigned long long)p->q.taken,
			 (unsigned long long)lost, cpu);
	cut_columns(label, sizeof(label), line, cols);
	puts(label);
	times = cols >= 80;
	if (times)
		snprintf(line, sizeof(line), "%7s %7s %9s %9s  %s", "%Own", "%Total",
			 "OwnTime", "TotalTime", "Function (file:line)");
	else
		snprintf(line, sizeof(line), "%6s %6s  %s", "%Own", "%Total",
			 "Function (file:line)");
	cut_columns(label, sizeof(label), line, cols);
	puts(label);
	room = cols > (times ? 38 : 16) + 8 ? cols - (times ? 38 : 16) : 8;
	show = lines > 4 ? lines - 3 : 1;
	for (size_t i = 0; i < nrows && i < show; i++) {
		const struct top_row *r = &rows[i];
		double own = sum ? 100.0 * (double)r->self / (double)sum : 0.0;
		double tot = sum ? 100.0 * (double)r->total / (double)sum : 0.0;

		if (r->func == UINT32_MAX)
			cut_columns(label, sizeof(label),
				    "[host frames below Lua]", room);
		else
			top_label(p, r->func, room, label, sizeof(label));
		if (times)
			snprintf(line, sizeof(line), "%6.1f%% %6.1f%% %8.2fs %8.2fs  %s",
				 own, tot, (double)r->cself / 1e9,
				 (double)r->ctotal / 1e9, label);
		else
			snprintf(line, sizeof(line), "%5.1f%% %5.1f%%  %s", own,
				 tot, label);
		cut_columns(label, sizeof(label), line, cols);
		puts(label);
	}
	if (!tty)
		putchar('\n');
	fflush(stdout);
	free(t->self);
	free(t->total);
	t->self = self;
	t->total = total;
	t->host = host;
	t->n = n;
	self = total = NULL;
out:
	t->last = now;
	free(self);
	free(total);
	free(rows);
}

/* --vm matched no sample: say which VMs the samples were of. */
static char *vm_message(const struct lc_sampler *s, uint64_t vm,
			const char *name)
{
	const uint64_t *v;
	size_t n = lc_sampler_vms_seen(s, &v);
	struct lc_strbuf b = { 0 };

	if (name)
		lc_strbuf_appendf(&b, "--vm %s: no sample was of a VM of that name; ",
				  name);
	else
		lc_strbuf_appendf(&b, "--vm 0x%llx: no sample was of that VM; ",
				  (unsigned long long)vm);
	if (n == 0) {
		lc_strbuf_appendf(&b, "no sample was of any Lua VM");
	} else {
		lc_strbuf_appendf(&b, "the samples were of %s", n > 1 ? "the VMs" : "the VM");
		for (size_t i = 0; i < n; i++) {
			const char *nm = lc_sampler_vm_name(s, v[i]);

			lc_strbuf_appendf(&b, "%s 0x%llx", i ? "," : "",
					 (unsigned long long)v[i]);
			if (nm)
				lc_strbuf_appendf(&b, " (%s)", nm);
		}
		lc_strbuf_appendf(&b, "%s (a global_State address, as luacore-inspect lists them)",
				 n == LC_SAMPLER_VMS ? " and maybe more" : "");
	}
	return lc_strbuf_steal(&b);
}

/* The library's lines (lc_set_log), on stderr. */

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "rate", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "wall", no_argument, NULL, 'w' },
		{ "thread", required_argument, NULL, 't' },
		{ "vm", required_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "max-frames", required_argument, NULL, 'm' },
		{ "stop-budget", required_argument, NULL, 'B' },
		{ "nonblocking", no_argument, NULL, 'K' },
		{ "native", no_argument, NULL, 'N' },
		{ "host-frames", no_argument, NULL, 'H' },
		{ "vm-name", required_argument, NULL, 'G' },
		{ "types", required_argument, NULL, 'Y' },
		{ "layout", required_argument, NULL, 'Z' },
		{ "debuginfo-path", required_argument, NULL, 'X' },
		{ "folded-time", no_argument, NULL, 'F' },
		{ "folded-vm", no_argument, NULL, 'P' },
		{ "title", required_argument, NULL, 'L' },
		{ "top", no_argument, NULL, 'T' },
		{ "alloc", no_argument, NULL, 'A' },
		{ "alloc-mean", required_argument, NULL, 'E' },
		{ "alloc-max-parks", required_argument, NULL, 'J' },
		{ "at", required_argument, NULL, 'U' },
		{ "count-only", no_argument, NULL, 'C' },
		{ "at-period", required_argument, NULL, 'Q' },
		{ "at-mechanism", required_argument, NULL, 'R' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	struct lc_sampler_options so = { .rate_hz = 100 };
	bool alloc = false, count_only = false;
	const char *at = NULL;
	int64_t alloc_mean = LC_ALLOC_MEAN_DEFAULT;
	/* a park costs its thread two wake-ups and two system calls: some
	 * 0.2-0.5 ms where wake-ups are slow (virtual machines); 50 a second
	 * at most, some 25 once the mean is raised, keep that near 1% */
	struct alloc_run ar = { .sock = -1, .max_rate = 50 };
	struct at_run atr = { .period = 0 };
	int at_want = -1;
	bool at_shim = false;	/* --at through the shim */
	struct lc_probe_stats at_st;
	int at_finished = -1;
	char *old_preload = NULL;
	const char *output = "profile.folded", *format = NULL;
	double duration = 0, v, start, next, elapsed;
	bool quiet = false, poor, top = false, output_given = false;
	bool folded_time = false, folded_vm = false, out_created = false;
	bool child_done = false, ended = false, verbose = false, launched;
	int child_status = 0;
	FILE *outf = NULL;
	const char *title = NULL;
	const char *no_lua;
	char *vm_unmatched = NULL;
	uint64_t lost;
	struct top topv = { 0 };
	int c, pid = 0, status = 0;
	pid_t child = 0;
	struct lc_sampler *s;
	struct lc_profile *prof;
	struct lc_error *err;
	const struct lc_sink *sink;
	unsigned seed;

	while ((c = getopt_long(argc, argv, "+p:r:d:o:f:qvhV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_double(optarg, 1, 4194304, "-p", &v) < 0 ||
			    v != floor(v))
				return EXIT_USAGE;
			pid = (int)v;
			break;
		case 'r':
			if (parse_double(optarg, 1, 10000, "-r", &so.rate_hz) < 0)
				return EXIT_USAGE;
			break;
		case 'd':
			if (parse_double(optarg, 0.01, 1e7, "-d", &duration) < 0)
				return EXIT_USAGE;
			break;
		case 'o':
			output = optarg;
			output_given = true;
			break;
		case 'f':
			format = optarg;
			break;
		case 'w':
			so.wall = true;
			break;
		case 't':
			if (parse_double(optarg, 1, 4194304, "--thread", &v) < 0)
				return EXIT_USAGE;
			so.tid = (int)v;
			break;
		case 'v':
			verbose = true;
			break;
		case 'M': {
			char *end;

			/* An address, or else a name (--vm-name's). */
			errno = 0;
			so.vm = strtoull(optarg, &end, 0);
			if (!optarg[0]) {
				fprintf(stderr, "luacore-sample: --vm takes an address such as 0x55d0c0a012a0 or a VM's name (with --vm-name)\n");
				return EXIT_USAGE;
			}
			if (!so.vm || *end || errno) {
				so.vm = 0;
				so.vm_only = optarg;
			}
			break;
		}
		case 'G':
			if (!optarg[0]) {
				fprintf(stderr, "luacore-sample: --vm-name takes the name of a global, such as SERVICE_NAME\n");
				return EXIT_USAGE;
			}
			so.vm_name = optarg;
			break;
		case 'Y':
			so.types = optarg;
			break;
		case 'X':
			lc_set_debuginfo_path(optarg);
			break;
		case 'Z':
			so.layout = optarg;
			break;
		case 'm':
			if (parse_double(optarg, 1, 100000, "--max-frames", &v) < 0)
				return EXIT_USAGE;
			so.max_frames = (int)v;
			break;
		case 'B':
			if (parse_double(optarg, 0.001, 10000, "--stop-budget", &v) < 0)
				return EXIT_USAGE;
			so.stop_budget_us = v * 1e3;
			break;
		case 'N':
			so.native = true;
			break;
		case 'K':
			so.nonblocking = true;
			break;
		case 'H':
			topv.host_rows = true;
			break;
		case 'F':
			folded_time = true;
			break;
		case 'P':
			folded_vm = true;
			break;
		case 'L':
			title = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'T':
			top = true;
			break;
		case 'A':
			alloc = true;
			break;
		case 'E':
			if (parse_double(optarg, 1, 1e15, "--alloc-mean", &v) < 0)
				return EXIT_USAGE;
			alloc_mean = (int64_t)v;
			alloc = true;
			break;
		case 'U':
			at = optarg;
			break;
		case 'C':
			count_only = true;
			break;
		case 'R':
			if (strcmp(optarg, "hardware") == 0)
				at_want = LC_PROBE_HW;
			else if (strcmp(optarg, "uprobe") == 0)
				at_want = LC_PROBE_UPROBE;
			else {
				fprintf(stderr, "luacore-sample: --at-mechanism is hardware or uprobe\n");
				return EXIT_USAGE;
			}
			break;
		case 'Q':
			if (parse_double(optarg, 1, 1e12, "--at-period", &v) < 0)
				return EXIT_USAGE;
			atr.period = (uint64_t)v;
			break;
		case 'J':
			if (parse_double(optarg, 0, 1e6, "--alloc-max-parks", &ar.max_rate) < 0)
				return EXIT_USAGE;
			alloc = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			puts(PACKAGE_STRING);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if ((pid != 0) == (optind < argc)) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (count_only && !at) {
		fprintf(stderr, "luacore-sample: --count-only goes with --at FUNCTION[,FUNCTION...]\n");
		return EXIT_USAGE;
	}
	if ((atr.period || at_want >= 0) && !at) {
		fprintf(stderr, "luacore-sample: --at-period and --at-mechanism go with --at FUNCTION[,FUNCTION...]\n");
		return EXIT_USAGE;
	}
	if (at && (alloc || top || so.wall || so.nonblocking)) {
		fprintf(stderr, "luacore-sample: --at takes neither --alloc, --top, --wall nor --nonblocking\n");
		return EXIT_USAGE;
	}
	if (at && count_only && atr.period) {
		fprintf(stderr, "luacore-sample: --count-only stops nowhere: no --at-period\n");
		return EXIT_USAGE;
	}
	if (at && count_only) {
		handle_signals();
		return run_at_count(at, pid, pid ? NULL : argv + optind, duration,
				    &so, at_want, verbose);
	}
	if (alloc && (pid || top || so.nonblocking || so.wall)) {
		fprintf(stderr, "luacore-sample: --alloc samples a program it starts (-- COMMAND), where it preloads its allocation shim; it takes neither -p, --top, --wall nor --nonblocking.  For what a running process's heap holds: luacore-inspect --heap -p PID\n");
		return EXIT_USAGE;
	}
	if (so.vm_only && !so.vm_name) {
		fprintf(stderr, "luacore-sample: --vm %s: not an address; to select a VM by name, say which global names it: --vm-name GLOBAL (skynet: SERVICE_NAME)\n",
			so.vm_only);
		return EXIT_USAGE;
	}
	sink = lc_sink_for(output, format);
	if (!sink) {
		fputs("luacore-sample: --format is ", stderr);
		sink_names(stderr);
		fputc('\n', stderr);
		return EXIT_USAGE;
	}
	handle_signals();
	if (!top || output_given) {
		outf = open_output(output, &out_created);
		if (!outf)
			return EXIT_FATAL;
	}
	launched = false;
	if (at) {
		/* a stop stands for a call, or a period's */
		so.alloc_mean = atr.period ? (int64_t)atr.period : 1;
		so.at = true;
		atr.bare = getenv("LUACORE_AT_BARE") != NULL;	/* bench/at.sh */
	}
	if (alloc || (at && !pid)) {
		int child_end = -1;

		if (getenv("LD_PRELOAD"))
			old_preload = strdup(getenv("LD_PRELOAD"));
		/* --at: the shim only holds the program before its main */
		ar.sock = alloc_setup(at ? 0 : alloc_mean, &child_end);
		if (ar.sock < 0) {
			discard_output(outf, out_created, output);
			return EXIT_FATAL;
		}
		child = start_command(argv + optind);
		close(child_end);
		alloc_unsetenv(old_preload);
		free(old_preload);
		if (child < 0) {
			close(ar.sock);
			discard_output(outf, out_created, output);
			return 127;
		}
		pid = child;
		launched = true;
		if (alloc)
			so.alloc_mean = alloc_mean;
		ar.mean = ar.first_mean = ar.top_mean = (uint64_t)alloc_mean;
		ar.window_start = ar.second_start = now_s();
		ar.pfd = malloc(sizeof(*ar.pfd));
		ar.th = calloc(1, sizeof(*ar.th));
		ar.copy = malloc(LC_ALLOC_COPY_MAX);
		if (!ar.pfd || !ar.th || !ar.copy) {
			fputs("luacore-sample: out of memory\n", stderr);
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			return EXIT_FATAL;
		}
		ar.pfd[0] = (struct pollfd){ .fd = ar.sock, .events = POLLIN };
		ar.n = 1;
		/* It waits in the shim's constructor, before its main, for
		 * us to have read its modules. */
		if (alloc_wait_start(&ar, argv[optind], child) <= 0) {
			int st = 0;

			if (!ar.refused && waitpid(child, &st, WNOHANG) == child) {
				fprintf(stderr, "luacore-sample: %s (pid %d) ended before it started sampling; no profile\n",
					argv[optind], (int)child);
				child_exit(argv[optind], st);
			} else {
				if (!ar.refused)
					fprintf(stderr, "luacore-sample: %s: %s did not load the allocation shim within %d s (a set-user-ID program, or one that clears LD_PRELOAD?); nothing sampled\n",
						at ? "--at" : "--alloc", argv[optind], LC_ALLOC_START_MS / 1000);
				kill(child, SIGKILL);
				waitpid(child, NULL, 0);
			}
			alloc_free(&ar);
			discard_output(outf, out_created, output);
			return EXIT_FATAL;
		}
	} else if (!pid) {
		/* Start the program ourselves; it runs on its own. */
		child = start_command(argv + optind);
		if (child < 0) {
			discard_output(outf, out_created, output);
			return 127;
		}
		pid = child;
		launched = true;
		/* Past exec: let the dynamic loader map its libraries (the
		 * Lua library among them) before reading its modules. */
		usleep(50000);
	}
	/* After the command started: it keeps DEBUGINFOD_URLS. */
	lc_set_log(say, NULL, verbose ? LC_LOG_VERBOSE : LC_LOG_NOTICE);
	lc_debuginfod_take();
	/* The sampler keeps every thread's schedstat open, as many as the
	 * open-file limit allows: raise ours (not the launched command's)
	 * toward the hard limit. */
	{
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 8192) {
			rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ||
				      rl.rlim_max > 8192 ? 8192 : rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	err = lc_sampler_create(pid, &so, &s);
	if (err) {
		int st;

		discard_output(outf, out_created, output);
		/* A command that ended first: how it ended is the news. */
		if (child && waitpid(child, &st, WNOHANG) == child) {
			lc_error_destroy(err);
			fprintf(stderr, "luacore-sample: %s (pid %d) ended before sampling began; no profile\n",
				argv[optind], (int)child);
			child_exit(argv[optind], st);
			return EXIT_FATAL;
		}
		message("", lc_error_message(err));
		lc_error_destroy(err);
		if (child) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
		}
		return EXIT_FATAL;
	}
	if (at) {
		/* The functions, then the holder: every thread seized and
		 * probed before the program goes on. */
		err = at_resolve(&atr, s, at);
		if (!err)
			err = lc_probe_hold(pid, atr.pts, atr.n, at_want, atr.period,
					    AT_MAX_STOPS, atr.bare, &atr.h);
		/* perf events refused, a command of ours: the shim, if the
		 * functions are called through PLT slots */
		if (err && child && atr.n && at_want < 0 && !atr.bare &&
		    lc_error_code(err) == LC_ERR_OS) {
			if (at_shim_request(&ar, &atr, err) == 0) {
				at_shim = true;
				lc_error_destroy(err);
				err = NULL;
			} else {
				lc_error_destroy(err);
				err = lc_error_create(LC_ERR_OS, "--at: nothing to stop at");
			}
		}
		if (err && at_shim) {
			err = NULL;
		} else if (err) {
			discard_output(outf, out_created, output);
			message("", lc_error_message(err));
			lc_error_destroy(err);
			lc_sampler_destroy(s);
			if (child) {
				kill(child, SIGKILL);
				waitpid(child, NULL, 0);
			}
			return EXIT_FATAL;
		}
		if (!at_shim) {
			atr.held = true;
			atr.hw = lc_probe_holder_how(atr.h) == LC_PROBE_HW;
			atr.why_not_hw = lc_probe_holder_why_not_hw(atr.h);
		}
	}
	no_lua = lc_sampler_no_lua(s);
	if (no_lua)
		message("warning: ", no_lua);
	seed = (unsigned)getpid() ^ (unsigned)time(NULL);
	start = now_s();
	next = start;
	if (at && !at_shim) {
		struct pollfd pf = { .fd = lc_probe_holder_fd(atr.h), .events = POLLIN };

		ar.started_at = now_s();
		if (child && send(ar.sock, "g", 1, MSG_NOSIGNAL) != 1)
			fprintf(stderr, "luacore-sample: cannot let %s go: %s\n",
				argv[optind], strerror(errno));
		while (!stop_requested) {
			int st;

			if (duration && now_s() - start > duration)
				break;
			if (poll(&pf, 1, 50) > 0 && at_serve(&atr, s) < 0) {
				fprintf(stderr, "luacore-sample: --at: the holder process ended (a signal to it?): stopping\n");
				break;
			}
			if (child && waitpid(child, &st, WNOHANG) == child) {
				child = 0;
				child_status = st;
				child_done = true;
				ar.ended = now_s();
				break;
			}
			if (!child && !launched && kill(pid, 0) < 0 && errno == ESRCH) {
				ended = true;
				break;
			}
		}
		at_serve(&atr, s);
		at_finished = lc_probe_holder_finish(atr.h, &at_st);
	} else if (alloc || at_shim) {
		/* Go: the program runs its main, and parks at samples (--at
		 * through the shim: it went on once it had hooked). */
		ar.started_at = now_s();
		if (!at_shim && send(ar.sock, "g", 1, MSG_NOSIGNAL) != 1)
			fprintf(stderr, "luacore-sample: cannot start %s's sampling: %s\n",
				argv[optind], strerror(errno));
		while (!stop_requested) {
			int n, st;

			if (duration && now_s() - start > duration)
				break;
			/* copied PARKs are read every few ms, unasked */
			n = poll(ar.pfd, ar.n, ar.copying ? ALLOC_DRAIN_MS : 100);
			alloc_drain(&ar, s);
			for (size_t k = ar.n; n > 0 && k-- > 0;) {
				if (!ar.pfd[k].revents)
					continue;
				if (alloc_read(&ar, s, k) < 0 && k > 0) {
					/* a thread gone: its sockets too */
					close(ar.pfd[k].fd);
					if (ar.th[k].bulk >= 0)
						close(ar.th[k].bulk);
					ar.pfd[k] = ar.pfd[ar.n - 1];
					ar.th[k] = ar.th[ar.n - 1];
					ar.n--;
				} else if (k == 0 && (ar.pfd[0].revents & (POLLHUP | POLLERR))) {
					ar.pfd[0].events = 0;	/* the shim is gone */
				}
			}
			if (child && wait4(child, &st, WNOHANG, &ar.ru) == child) {
				child = 0;
				child_status = st;
				child_done = true;
				ar.ended = now_s();
				break;
			}
		}
		/* What it said before it ended: frees, its last counts. */
		for (size_t k = 0; k < ar.n; k++)
			alloc_read(&ar, s, k);
	} else {
		double last_status = start;
		unsigned long releases = lc_live_releases();
		bool tty = isatty(STDERR_FILENO) && !quiet;

		while (!stop_requested) {
			struct timespec ts;
			double now, sleep_s;

			/* Random spacing, uniform in [0.5, 1.5] periods. */
			next += (0.5 + (double)rand_r(&seed) / RAND_MAX) /
				so.rate_hz;
			now = now_s();
			if (duration && next - start > duration)
				break;
			sleep_s = next - now;
			if (sleep_s > 0) {
				ts.tv_sec = (time_t)sleep_s;
				ts.tv_nsec = (long)((sleep_s - (double)ts.tv_sec) * 1e9);
				nanosleep(&ts, NULL);
			} else if (now - next > 1.0 / so.rate_hz) {
				/* Behind by a period: skip, never burst.  A
				 * sample weighs the time since the last, so
				 * skipping loses nothing, and a burst would
				 * look at the program only after the delay. */
				next = now;
			}
			if (stop_requested)
				break;
			if (lc_sampler_tick(s) < 0) {
				ended = true;	/* the program ended */
				break;
			}
			if (lc_live_releases() != releases) {
				releases = lc_live_releases();
				fprintf(stderr, "luacore-sample: stopped by job control while a thread of process %d was stopped; it was let go first, and its sample dropped: sampling goes on\n",
					pid);
			}
			if (child) {
				int st;

				if (waitpid(child, &st, WNOHANG) == child) {
					child = 0;
					child_status = st;
					child_done = true;
					break;
				}
			}
			now = now_s();
			if (top && now - last_status >= 1.0) {
				draw_top(lc_sampler_profile(s, now - start),
					 &topv, pid, now, now - start,
					 isatty(STDOUT_FILENO));
				last_status = now;
			} else if (tty && !top && now - last_status >= 1.0) {
				const struct lc_profile *p =
					lc_sampler_profile(s, now - start);

				fprintf(stderr, "\r\033[Kluacore-sample: %.0f s, %llu samples, %.1f Hz, %llu lost",
					now - start,
					(unsigned long long)p->q.taken,
					p->q.achieved_hz,
					(unsigned long long)lc_prof_lost(&p->q));
				last_status = now;
			}
		}
		if (tty && !top)
			fputs("\r\033[K", stderr);
	}
	free(topv.self);
	free(topv.total);
	elapsed = now_s() - start;
	prof = lc_sampler_take_profile(s, elapsed);
	if (!prof) {
		lc_sampler_destroy(s);
		fputs("luacore-sample: out of memory\n", stderr);
		return EXIT_FATAL;
	}
	if (alloc)
		alloc_inuse(&ar, prof);
	if ((so.vm || so.vm_only) && prof->q.taken == 0)
		vm_unmatched = vm_message(s, so.vm, so.vm_only);
	prof->folded_cpu = folded_time;
	prof->folded_vm = folded_vm;
	if (outf) {
		if (write_profile(prof, sink, outf, output, title) < 0)
			status = EXIT_FATAL;
		outf = NULL;
	}
	if (at_shim) {
		at_shim_report(&ar, &atr, elapsed);
		if (ar.ended > 0)
			fprintf(stderr, "luacore-sample: the program ran %.3f s from its main\n",
				ar.ended - ar.started_at);
		at_free(&atr);
		alloc_free(&ar);
	} else if (at) {
		if (at_report(&atr, &at_st, at_finished, elapsed) && !status)
			status = EXIT_FATAL;
		if (ar.ended > 0)
			fprintf(stderr, "luacore-sample: the program ran %.3f s from its main\n",
				ar.ended - ar.started_at);
		at_free(&atr);
		if (ar.pfd)
			alloc_free(&ar);
	} else if (alloc) {
		alloc_report(&ar, elapsed);
		alloc_free(&ar);
	} else {
		report_quality(prof, so.vm || so.vm_only, launched, stderr);
	}
	if (!status && (!top || output_given))
		fprintf(stderr, "luacore-sample: wrote %s\n", output);
	lost = lc_prof_lost(&prof->q);
	poor = prof->q.attempted && lost * 2 > prof->q.attempted;
	if (poor)
		fprintf(stderr, "luacore-sample: warning: %llu of %llu samples lost: the profile is not to be trusted\n",
			(unsigned long long)lost,
			(unsigned long long)prof->q.attempted);
	if (no_lua)
		message("warning: native stacks only, no Lua frames: ",
			no_lua);
	if (vm_unmatched) {
		message("", vm_unmatched);
		free(vm_unmatched);
	}
	/* Nothing of what was asked: the --vm's samples, or any sample
	 * when only native stacks can be had. */
	if (!status && (no_lua || so.vm || so.vm_only) && prof->q.taken == 0)
		status = EXIT_FATAL;
	if (!status && (poor || no_lua))
		status = EXIT_POOR;
	lc_sampler_destroy(s);
	lc_profile_destroy(prof);
	/* Ended, it may still be exiting, not yet a zombie to reap: a
	 * second at most. */
	for (int i = 0; child && ended && i < 100; i++) {
		if (waitpid(child, &child_status, WNOHANG) == child) {
			child_done = true;
			break;
		}
		usleep(10000);
	}
	if (child && !child_done &&
	    waitpid(child, &child_status, WNOHANG) == child) {
		child_done = true;
	} else if (child && !child_done) {
		/* We started it and stopped sampling first: let it finish,
		 * as perf record does. */
		fprintf(stderr, "luacore-sample: sampling stopped after %.1f s; %s (pid %d) runs on: waiting for it to end\n",
			elapsed, argv[optind], (int)child);
		while (waitpid(child, &child_status, 0) < 0 && errno == EINTR)
			;
		child_done = true;
	}
	if (child_done) {
		int cs = child_exit(argv[optind], child_status);

		if (!status)
			status = cs;
	}
	return status;
}
