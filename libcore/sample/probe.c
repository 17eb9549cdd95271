/* Probes on functions (probe.h): perf events, hardware execute
 * breakpoints or uprobes, one per point and thread; counting, or
 * stopping the thread through a holder process. */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prog/program.h"
#include "sample/probe.h"

#define MAX_THREADS	65536

struct probe_thread {
	int tid;
	int *fd;		/* one a point, -1 none */
};

struct lc_probe {
	int pid;
	bool follow;
	enum lc_probe_how how;
	int uprobe_type;
	struct lc_probe_point *pts;
	size_t n;
	struct probe_thread *th;
	size_t nth, cth;
	const char *why_not_hw;
};

static long perf_open(struct perf_event_attr *a, int tid)
{
	return syscall(SYS_perf_event_open, a, tid, -1, -1,
		       PERF_FLAG_FD_CLOEXEC);
}

/* The uprobe PMU's type, or -1. */
static int uprobe_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	int t = -1;

	if (f) {
		if (fscanf(f, "%d", &t) != 1)
			t = -1;
		fclose(f);
	}
	return t;
}

static int paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = 99;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 99;
		fclose(f);
	}
	return v;
}

static void attr_for(const struct lc_probe *p, const struct lc_probe_point *pt,
		     struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->inherit = p->follow;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	if (p->how == LC_PROBE_HW) {
		a->type = PERF_TYPE_BREAKPOINT;
		a->bp_type = HW_BREAKPOINT_X;
		a->bp_addr = pt->addr;
		a->bp_len = sizeof(long);
	} else {
		a->type = (uint32_t)p->uprobe_type;
		a->config1 = (uint64_t)(uintptr_t)pt->module;	/* uprobe_path */
		a->config2 = pt->offset;			/* probe_offset */
	}
}

/* Entered three times: do hardware breakpoints fire here?  Some virtual
 * machines take them and never fire them. */
static __attribute__((noinline)) int selftest_fn(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static const char *hw_selftest(void)
{
	struct perf_event_attr a;
	uint64_t c = 0;
	long fd;
	int (*volatile fn)(int) = selftest_fn;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_BREAKPOINT;
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = (uint64_t)(uintptr_t)selftest_fn;
	a.bp_len = sizeof(long);
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = perf_open(&a, 0);
	if (fd < 0)
		return errno == EACCES || errno == EPERM ?
		       "perf_event_open refused a hardware breakpoint" :
		       "this machine has no hardware breakpoints for perf events";
	for (int i = 0; i < 3; i++)
		fn(i);
	if (read((int)fd, &c, sizeof(c)) != (ssize_t)sizeof(c))
		c = 0;
	close((int)fd);
	return c == 3 ? NULL :
	       "hardware breakpoints are accepted here but do not fire (a virtual machine without debug registers)";
}

/* Does a seccomp filter govern this process (Seccomp: 2)? */
static bool seccomp_filtered(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	int mode = 0;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	fclose(f);
	return mode == 2;
}

static struct lc_error *open_error(const struct lc_probe *p,
				   const struct lc_probe_point *pt, int tid,
				   int e)
{
	int par = paranoid();

	if ((e == EACCES || e == EPERM || e == ENOSYS) && seccomp_filtered())
		return lc_error_create(LC_ERR_OS,
			"--at %s: perf_event_open was refused (%s), and this process runs under a seccomp filter (Seccomp: 2 in /proc/self/status): a container's default profile (docker, podman) denies perf_event_open without CAP_SYS_ADMIN or CAP_PERFMON.  Allow it (--cap-add SYS_ADMIN, or a profile that permits perf_event_open), or run luacore-sample outside the filter.  What still works: luacore-sample without --at (CPU profiles by ptrace, where the filter allows ptrace), and --alloc",
			pt->name, strerror(e));

	if (p->how == LC_PROBE_HW && e == ENOSPC)
		return lc_error_create(LC_ERR_INVALID,
			"--at: a thread has %d hardware breakpoints and %zu functions were asked for: ask for %d at most%s",
			LC_PROBE_HW_MAX, p->n, LC_PROBE_HW_MAX,
			p->uprobe_type >= 0 ? " (uprobes count more, where permitted: as root, or with CAP_SYS_ADMIN)" : "");
	if (e == EACCES || e == EPERM)
		return lc_error_create(LC_ERR_OS,
			"--at %s: perf_event_open refused a %s on thread %d (%s; kernel.perf_event_paranoid is %d%s%s).  %s  A seccomp filter that denies perf_event_open refuses it too.  What still works: luacore-sample without --at (CPU profiles by ptrace), and --alloc",
			pt->name, p->how == LC_PROBE_HW ? "hardware breakpoint" : "uprobe",
			tid, strerror(e), par,
			p->how == LC_PROBE_UPROBE && p->why_not_hw ? "; not hardware breakpoints: " : "",
			p->how == LC_PROBE_UPROBE && p->why_not_hw ? p->why_not_hw : "",
			p->how == LC_PROBE_HW ?
			"Hardware breakpoints on another process need perf_event_paranoid <= 2 and the right to trace it, or CAP_PERFMON." :
			geteuid() == 0 ?
			"Uprobes need CAP_SYS_ADMIN, which this process lacks though it runs as root (its capabilities were dropped), or perf_event_paranoid -1 and CAP_PERFMON." :
			"Uprobes need CAP_SYS_ADMIN (root), or perf_event_paranoid -1 and CAP_PERFMON.");
	if (e == ENOSYS)
		return lc_error_create(LC_ERR_OS,
			"--at: this kernel has no perf_event_open (or a seccomp filter makes it fail with ENOSYS)");
	return lc_error_create(LC_ERR_OS, "--at %s: perf_event_open of a %s on thread %d: %s",
			       pt->name, p->how == LC_PROBE_HW ? "hardware breakpoint" : "uprobe",
			       tid, strerror(e));
}

/* Events for thread tid, one a point: 0, or -1 with *err (the thread gone
 * is no error: nothing added, 0). */
static int add_thread(struct lc_probe *p, int tid, struct lc_error **err)
{
	struct probe_thread *t;
	struct perf_event_attr a;

	for (size_t i = 0; i < p->nth; i++)
		if (p->th[i].tid == tid)
			return 0;
	if (p->nth >= MAX_THREADS)
		return 0;
	if (p->nth == p->cth) {
		size_t nc = p->cth ? 2 * p->cth : 16;
		struct probe_thread *nt = realloc(p->th, nc * sizeof(*nt));

		if (!nt) {
			*err = &lc_error_nomem;
			return -1;
		}
		p->th = nt;
		p->cth = nc;
	}
	t = &p->th[p->nth];
	t->tid = tid;
	t->fd = malloc(p->n * sizeof(*t->fd));
	if (!t->fd) {
		*err = &lc_error_nomem;
		return -1;
	}
	for (size_t k = 0; k < p->n; k++) {
		long fd;

		attr_for(p, &p->pts[k], &a);
		fd = perf_open(&a, tid);
		if (fd < 0) {
			int e = errno;

			for (size_t j = 0; j < k; j++)
				close(t->fd[j]);
			free(t->fd);
			if (e == ESRCH)
				return 0;	/* gone meanwhile */
			*err = open_error(p, &p->pts[k], tid, e);
			return -1;
		}
		t->fd[k] = (int)fd;
	}
	p->nth++;
	return 0;
}

static struct lc_error *scan_threads(struct lc_probe *p)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	struct lc_error *err = NULL;

	snprintf(path, sizeof(path), "/proc/%d/task", p->pid);
	if (!(d = opendir(path)))
		return lc_error_create(LC_ERR_OS, "--at: %s: %s", path,
				       strerror(errno));
	while (!err && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0)
			continue;
		add_thread(p, (int)tid, &err);
	}
	closedir(d);
	return err;
}

/* A probe set for the points: copies, and the mechanism chosen
 * (hardware breakpoints when they fire and suffice, else uprobes). */
static struct lc_error *probe_new(int pid, bool follow,
				  const struct lc_probe_point *pts, size_t n,
				  int want, struct lc_probe **ret)
{
	struct lc_probe *p = calloc(1, sizeof(*p));
	struct lc_error *err;

	*ret = NULL;
	if (!p)
		return &lc_error_nomem;
	p->pid = pid;
	p->follow = follow;
	p->uprobe_type = uprobe_type();
	p->pts = calloc(n ? n : 1, sizeof(*p->pts));
	if (!p->pts) {
		free(p);
		return &lc_error_nomem;
	}
	p->n = n;
	for (size_t i = 0; i < n; i++) {
		p->pts[i] = pts[i];
		p->pts[i].name = strdup(pts[i].name ? pts[i].name : "?");
		p->pts[i].module = strdup(pts[i].module ? pts[i].module : "");
		if (!p->pts[i].name || !p->pts[i].module) {
			lc_probe_close(p);
			return &lc_error_nomem;
		}
	}
	if (want == LC_PROBE_HW && n > LC_PROBE_HW_MAX) {
		err = lc_error_create(LC_ERR_INVALID,
			"--at: hardware breakpoints: a thread has %d, and %zu functions were asked for: ask for %d at most, or let uprobes take them (--at-mechanism uprobe: as root, or with CAP_SYS_ADMIN)",
			LC_PROBE_HW_MAX, n, LC_PROBE_HW_MAX);
		lc_probe_close(p);
		return err;
	}
	if (want == LC_PROBE_UPROBE)
		p->why_not_hw = "uprobes asked for";
	else if (n > LC_PROBE_HW_MAX && want != LC_PROBE_HW)
		p->why_not_hw = "more functions than a thread has hardware breakpoints";
	else
		p->why_not_hw = hw_selftest();
	if (want == LC_PROBE_HW && p->why_not_hw) {
		err = lc_error_create(LC_ERR_UNSUPPORTED, "--at: %s", p->why_not_hw);
		lc_probe_close(p);
		return err;
	}
	if (p->why_not_hw && p->uprobe_type < 0) {
		err = lc_error_create(LC_ERR_UNSUPPORTED,
			"--at: %s, and this kernel has no uprobe events (/sys/bus/event_source/devices/uprobe)",
			p->why_not_hw);
		lc_probe_close(p);
		return err;
	}
	p->how = p->why_not_hw ? LC_PROBE_UPROBE : LC_PROBE_HW;
	*ret = p;
	return NULL;
}

struct lc_error *lc_probe_open(int pid, bool follow,
			       const struct lc_probe_point *pts, size_t n,
			       int want, struct lc_probe **ret)
{
	struct lc_probe *p;
	struct lc_error *err = probe_new(pid, follow, pts, n, want, &p);

	*ret = NULL;
	if (err)
		return err;
	if (follow)
		add_thread(p, pid, &err);
	else
		err = scan_threads(p);
	if (!err && !p->nth)
		err = lc_error_create(LC_ERR_NOT_FOUND,
				      "--at: process %d has no thread left to probe", pid);
	if (err) {
		lc_probe_close(p);
		return err;
	}
	*ret = p;
	return NULL;
}

size_t lc_probe_rescan(struct lc_probe *p)
{
	struct lc_error *err;

	if (!p->follow && (err = scan_threads(p)))
		lc_error_destroy(err);
	return p->nth;
}

int lc_probe_read(struct lc_probe *p, uint64_t *counts)
{
	int ret = 0;

	for (size_t k = 0; k < p->n; k++)
		counts[k] = 0;
	for (size_t i = 0; i < p->nth; i++)
		for (size_t k = 0; k < p->n; k++) {
			uint64_t c;

			if (read(p->th[i].fd[k], &c, sizeof(c)) == (ssize_t)sizeof(c))
				counts[k] += c;
			else
				ret = -1;
		}
	return ret;
}

enum lc_probe_how lc_probe_how(const struct lc_probe *p)
{
	return p->how;
}

const char *lc_probe_why_not_hw(const struct lc_probe *p)
{
	return p->why_not_hw;
}

void lc_probe_close(struct lc_probe *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nth; i++) {
		for (size_t k = 0; k < p->n; k++)
			close(p->th[i].fd[k]);
		free(p->th[i].fd);
	}
	free(p->th);
	for (size_t i = 0; i < p->n; i++) {
		free(p->pts[i].name);
		free(p->pts[i].module);
	}
	free(p->pts);
	free(p);
}

/* ---- The holder: stops at the points (lc_probe_hold) ---- */

#ifndef TRAP_PERF
#define TRAP_PERF	6	/* si_code of a perf event's SIGTRAP */
#endif
#define SIGTRAP_BIT	(1ull << (SIGTRAP - 1))
#define HOLD_BUDGET_S	0.25	/* a stop waits this long for our go */
#define DRAIN_S		0.02	/* stops on their way, served at the end */
#define DETACH_S	1.0	/* per thread, to get it stopped and gone */
#define HOLD_HIST	65536	/* hold times, by microsecond */

enum { M_START = 1, M_HIT, M_END, M_GO, M_QUIT };

struct hmsg {
	uint32_t type;
	uint32_t ok;
	union {
		struct lc_probe_hit hit;
		struct lc_probe_stats st;
		uint64_t seq;
		char text[1024];
	} u;
};

struct hthread {
	int tid;
	int *fd;		/* one a point, -1 none */
	uint64_t *gap;		/* the gap in force on each */
};

struct holder {
	struct lc_probe *p;	/* points and mechanism (no threads) */
	int sock, sfd, pid;
	uint64_t period;	/* mean gap */
	bool fixed, bare;
	double max_rate;
	struct hthread *th;
	size_t nth, cth;
	uint64_t totals[LC_PROBE_MAX];	/* of threads gone */
	bool complete, quit, gone;	/* counts all read; asked to end;
					   our end closed */
	uint64_t seq, stops, unanswered, drained, threads, left;
	uint64_t rng;
	double win_start;
	uint64_t win_stops;
	uint32_t *hist;
	uint64_t hold_over, nhold;
	double hold_total;
};

struct lc_probe_holder {
	struct lc_probe *p;
	int sock;
	pid_t hpid;
	bool dead;
	bool ended;		/* its report came (it ended on its own) */
	struct lc_probe_stats end;
};

static uint64_t h_rand(struct holder *h)
{
	h->rng ^= h->rng << 13;
	h->rng ^= h->rng >> 7;
	h->rng ^= h->rng << 17;
	return h->rng;
}

/* A gap of mean h->period: uniform in [1, 2 period - 1], so that code
 * that calls in a cycle is not seen at one phase of it. */
static uint64_t h_gap(struct holder *h)
{
	return h->period <= 1 ? 1 : 1 + h_rand(h) % (2 * h->period - 1);
}

static struct hthread *h_find(struct holder *h, int tid)
{
	for (size_t i = 0; i < h->nth; i++)
		if (h->th[i].tid == tid)
			return &h->th[i];
	return NULL;
}

static void h_send(struct holder *h, const struct hmsg *m, size_t len)
{
	if (h->gone)
		return;
	while (send(h->sock, m, len, MSG_NOSIGNAL) < 0) {
		if (errno == EINTR)
			continue;
		h->gone = true;
		return;
	}
}

/* The events of a thread, one a point: a counter that every gap
 * entries stops the thread with a SIGTRAP naming the point. */
static int h_open(struct holder *h, struct hthread *t, char *why, size_t wlen)
{
	struct perf_event_attr a;

	for (size_t k = 0; k < h->p->n; k++)
		t->fd[k] = -1;
	for (size_t k = 0; k < h->p->n; k++) {
		long fd;

		attr_for(h->p, &h->p->pts[k], &a);
		a.sigtrap = 1;
		a.remove_on_exec = 1;
		a.sig_data = k;
		t->gap[k] = h_gap(h);
		a.sample_period = t->gap[k];
		fd = perf_open(&a, t->tid);
		if (fd < 0) {
			int e = errno;

			if (e == ESRCH)
				return 0;	/* gone meanwhile */
			if (why) {
				struct lc_error *err = open_error(h->p, &h->p->pts[k], t->tid, e);

				snprintf(why, wlen, "%s", lc_error_message(err));
				lc_error_destroy(err);
			}
			return -1;
		}
		t->fd[k] = (int)fd;
	}
	return 0;
}

/* Read a thread's counts into the totals, and close its events. */
static void h_close(struct holder *h, struct hthread *t)
{
	for (size_t k = 0; k < h->p->n; k++) {
		uint64_t c;

		if (t->fd[k] < 0)
			continue;
		if (read(t->fd[k], &c, sizeof(c)) == (ssize_t)sizeof(c))
			h->totals[k] += c;
		else
			h->complete = false;
		close(t->fd[k]);
		t->fd[k] = -1;
	}
}

/* A thread seized (by us, or as a clone of one): in the table, with
 * events unless we are ending. */
static struct hthread *h_add(struct holder *h, int tid, bool events,
			     char *why, size_t wlen)
{
	struct hthread *t = h_find(h, tid);

	if (t)
		return t;
	if (h->nth == h->cth) {
		size_t nc = h->cth ? 2 * h->cth : 16;
		struct hthread *nt = realloc(h->th, nc * sizeof(*nt));

		if (!nt)
			return NULL;
		h->th = nt;
		h->cth = nc;
	}
	t = &h->th[h->nth];
	t->tid = tid;
	t->fd = malloc(h->p->n * sizeof(*t->fd));
	t->gap = malloc(h->p->n * sizeof(*t->gap));
	if (!t->fd || !t->gap) {
		free(t->fd);
		free(t->gap);
		return NULL;
	}
	for (size_t k = 0; k < h->p->n; k++)
		t->fd[k] = -1;
	h->nth++;
	h->threads++;
	if (events && h_open(h, t, why, wlen) < 0)
		return NULL;
	return t;
}

static void h_remove(struct holder *h, struct hthread *t)
{
	h_close(h, t);
	free(t->fd);
	free(t->gap);
	*t = h->th[--h->nth];
}

static uint64_t sig_pending(int pid, int tid)
{
	char path[64], line[128];
	uint64_t m = 0, v;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if ((sscanf(line, "SigPnd: %" SCNx64, &v) == 1 ||
		     sscanf(line, "ShdPnd: %" SCNx64, &v) == 1))
			m |= v;
	fclose(f);
	return m;
}

/* The point of a perf SIGTRAP (its sig_data), or -1: another SIGTRAP. */
static long perf_trap(int tid)
{
	siginfo_t si;
	uint64_t data;

	if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) < 0 ||
	    si.si_code != TRAP_PERF)
		return -1;
	/* _sigfault: the address, then _perf's data */
	memcpy(&data, (const char *)&si + 24, sizeof(data));
	return (long)data;
}

static void h_hold_time(struct holder *h, double s)
{
	uint64_t us = (uint64_t)(s * 1e6);

	h->nhold++;
	h->hold_total += s;
	if (us < HOLD_HIST && h->hist)
		h->hist[us]++;
	else
		h->hold_over++;
}

/* Over the cap: a longer mean gap, on every event from now. */
static void h_rate(struct holder *h, double now)
{
	double over;
	unsigned k = 1;

	if (h->fixed || h->max_rate <= 0)
		return;
	if (now - h->win_start >= 0.1) {
		h->win_start = now;
		h->win_stops = 0;
	}
	if (++h->win_stops <= h->max_rate / 10 || h->period >= ((uint64_t)1 << 40))
		return;
	over = (double)h->win_stops / fmax(now - h->win_start, 1e-3) / h->max_rate;
	while (k < 10 && over > (double)(1u << k))
		k++;
	h->period <<= k;
	h->win_start = now;
	h->win_stops = 0;
	for (size_t i = 0; i < h->nth; i++)
		for (size_t j = 0; j < h->p->n; j++)
			if (h->th[i].fd[j] >= 0) {
				uint64_t g = h_gap(h);

				if (ioctl(h->th[i].fd[j], PERF_EVENT_IOC_PERIOD, &g) == 0)
					h->th[i].gap[j] = g;
			}
}

/* Wait for our go for stop seq, at most the budget.  A quit or our end
 * closing lets it go too. */
static void h_wait_go(struct holder *h, uint64_t seq, double t0)
{
	struct pollfd pf = { .fd = h->sock, .events = POLLIN };
	struct hmsg m;

	while (!h->gone) {
		double left = HOLD_BUDGET_S - (lc_now_s() - t0);
		ssize_t r;

		if (left <= 0) {
			h->unanswered++;
			return;
		}
		if (poll(&pf, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		r = recv(h->sock, &m, sizeof(m), 0);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			h->gone = true;
			return;
		}
		if (m.type == M_QUIT) {
			h->quit = true;
			return;
		}
		if (m.type == M_GO && m.u.seq == seq)
			return;
	}
}

/* One report of waitpid, for a thread of ours.  ending: events closed;
 * a perf SIGTRAP is only dropped. */
static void h_stopped(struct holder *h, int tid, int st, bool ending)
{
	struct hthread *t = h_find(h, tid);
	int ev = st >> 16, sig;

	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		if (t)
			h_remove(h, t);
		return;
	}
	if (!WIFSTOPPED(st))
		return;
	sig = WSTOPSIG(st);
	if (!t)
		t = h_add(h, tid, !ending, NULL, 0);	/* a clone, first seen */
	if (ev == PTRACE_EVENT_CLONE) {
		unsigned long nt;

		if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &nt) == 0)
			h_add(h, (int)nt, !ending, NULL, 0);
		ptrace(PTRACE_CONT, tid, NULL, NULL);
		return;
	}
	if (ev == PTRACE_EVENT_STOP) {
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
		    sig == SIGTTOU)
			ptrace(PTRACE_LISTEN, tid, NULL, NULL);	/* group stop */
		else
			ptrace(PTRACE_CONT, tid, NULL, NULL);
		return;
	}
	if (ev) {
		ptrace(PTRACE_CONT, tid, NULL, NULL);
		return;
	}
	if (sig == SIGTRAP) {
		long k = perf_trap(tid);
		double t0 = lc_now_s();

		if (k >= 0) {
			if (ending) {
				h->drained++;
			} else if (t && (size_t)k < h->p->n && t->fd[k] >= 0) {
				uint64_t w = t->gap[k];

				if (!h->bare) {
					struct user_regs_struct u;
					struct hmsg m = { .type = M_HIT };

					m.u.hit.tid = tid;
					m.u.hit.point = (uint32_t)k;
					m.u.hit.seq = ++h->seq;
					m.u.hit.weight = w;
					if (ptrace(PTRACE_GETREGS, tid, NULL, &u) == 0) {
						lc_live_user_regs(&u, m.u.hit.regs);
						h_send(h, &m, offsetof(struct hmsg, u) + sizeof(m.u.hit));
						h_wait_go(h, m.u.hit.seq, t0);
					}
				}
				h->stops++;
				if (h->period > 1) {
					uint64_t g = h_gap(h);

					if (ioctl(t->fd[k], PERF_EVENT_IOC_PERIOD, &g) == 0)
						t->gap[k] = g;
				}
				h_rate(h, t0);
			}
			ptrace(PTRACE_CONT, tid, NULL, NULL);
			if (!ending)
				h_hold_time(h, lc_now_s() - t0);
			return;
		}
	}
	/* the program's own signal: delivered */
	ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig);
}

static void h_reap(struct holder *h, bool ending)
{
	int st, tid;

	for (int i = 0; i < 4096 && (tid = waitpid(-1, &st, __WALL | WNOHANG)) > 0; i++)
		h_stopped(h, tid, st, ending);
}

/* Leave thread t: stopped, no SIGTRAP pending, detached.  Its stops on
 * the way are served, a perf SIGTRAP dropped, another signal kept. */
static void h_detach(struct holder *h, int tid)
{
	double t0 = lc_now_s();
	bool asked = false;

	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
		return;		/* gone, or not ours */
	while (lc_now_s() - t0 < DETACH_S) {
		int st, r = waitpid(tid, &st, __WALL | WNOHANG);
		int ev, sig;
		bool trap;

		if (r < 0)
			return;
		if (r == 0) {
			usleep(100);
			continue;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return;
		ev = st >> 16;
		sig = WSTOPSIG(st);
		trap = (sig_pending(h->pid, tid) & SIGTRAP_BIT) != 0;
		if (ev == PTRACE_EVENT_CLONE) {
			unsigned long nt;

			if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &nt) == 0)
				h_add(h, (int)nt, false, NULL, 0);
			ptrace(PTRACE_CONT, tid, NULL, NULL);
			continue;
		}
		if (ev == 0 && sig == SIGTRAP && perf_trap(tid) >= 0) {
			h->drained++;
			sig = 0;
		} else if (ev) {
			sig = 0;
		}
		if (trap) {
			/* let it take the pending SIGTRAP, in a stop of ours */
			ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig);
			if (!asked && ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) == 0)
				asked = true;
			continue;
		}
		ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig);
		return;
	}
	h->left++;
}

/* The end: events disabled, counted and closed; the stops on their way
 * served; every thread detached. */
static double h_cleanup(struct holder *h)
{
	double t0 = lc_now_s();

	for (size_t i = 0; i < h->nth; i++)
		for (size_t k = 0; k < h->p->n; k++)
			if (h->th[i].fd[k] >= 0)
				ioctl(h->th[i].fd[k], PERF_EVENT_IOC_DISABLE, 0);
	for (size_t i = 0; i < h->nth; i++)
		h_close(h, &h->th[i]);
	while (lc_now_s() - t0 < DRAIN_S) {
		h_reap(h, true);
		usleep(1000);
	}
	h_reap(h, true);
	/* (the table grows if a thread is born meanwhile: by index) */
	for (size_t i = 0; i < h->nth; i++)
		h_detach(h, h->th[i].tid);
	return lc_now_s() - t0;
}

static double h_quantile(const struct holder *h, double q)
{
	uint64_t want = (uint64_t)ceil(q * (double)h->nhold), seen = 0;

	if (!h->nhold || !h->hist)
		return 0;
	if (!want)
		want = 1;
	for (size_t us = 0; us < HOLD_HIST; us++) {
		seen += h->hist[us];
		if (seen >= want)
			return (double)us + 0.5;
	}
	return HOLD_HIST;
}

/* Seize every thread of the process, again until a scan finds none
 * new (threads start meanwhile), with events on each. */
static int h_seize_all(struct holder *h, char *why, size_t wlen)
{
	for (int pass = 0; pass < 100; pass++) {
		char path[64];
		DIR *d;
		struct dirent *de;
		int added = 0;

		snprintf(path, sizeof(path), "/proc/%d/task", h->pid);
		if (!(d = opendir(path))) {
			snprintf(why, wlen, "--at: process %d: %s: %s", h->pid,
				 path, strerror(errno));
			return -1;
		}
		while ((de = readdir(d))) {
			char *end;
			long tid = strtol(de->d_name, &end, 10);

			if (*end || tid <= 0 || h_find(h, (int)tid))
				continue;
			if (ptrace(PTRACE_SEIZE, (int)tid, NULL,
				   (void *)(long)PTRACE_O_TRACECLONE) < 0) {
				int e = errno;
				struct lc_error *err;

				if (e == ESRCH)
					continue;
				closedir(d);
				err = lc_live_refused(h->pid, e);
				snprintf(why, wlen, "%s", lc_error_message(err));
				lc_error_destroy(err);
				return -1;
			}
			added++;
			if (!h_add(h, (int)tid, true, why, wlen)) {
				closedir(d);
				if (!*why)
					snprintf(why, wlen, "--at: out of memory");
				return -1;
			}
		}
		closedir(d);
		if (!added)
			return h->nth ? 0 :
			       (snprintf(why, wlen, "--at: process %d has no thread left to probe", h->pid), -1);
	}
	return 0;
}

static void __attribute__((noreturn)) holder_main(struct holder *h)
{
	struct hmsg m;
	sigset_t set;
	struct pollfd pf[2];
	char why[1024] = "";
	FILE *f;

	setsid();
	prctl(PR_SET_NAME, "luacore-holder", 0, 0, 0);
	/* an out-of-memory kill of the holder is a SIGKILL: not it, if
	 * we may say so */
	if ((f = fopen("/proc/self/oom_score_adj", "w"))) {
		fputs("-1000", f);
		fclose(f);
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	h->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	h->hist = calloc(HOLD_HIST, sizeof(*h->hist));
	h->complete = true;
	h->win_start = lc_now_s();

	memset(&m, 0, sizeof(m));
	m.type = M_START;
	if (h_seize_all(h, why, sizeof(why)) < 0) {
		h_cleanup(h);
		snprintf(m.u.text, sizeof(m.u.text), "%s", why);
		h_send(h, &m, sizeof(m));
		_exit(1);
	}
	m.ok = 1;
	h_send(h, &m, sizeof(m));

	pf[0] = (struct pollfd){ .fd = h->sock, .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = h->sfd, .events = POLLIN };
	while (!h->gone && !h->quit) {
		struct signalfd_siginfo si;
		ssize_t r;

		h_reap(h, false);
		if (h->gone || h->quit)
			break;
		if (poll(pf, 2, 100) <= 0)
			continue;
		if (pf[1].revents) {
			bool end = false;

			while (read(h->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				if (si.ssi_signo != SIGCHLD)
					end = true;
			if (end)
				break;
		}
		if (pf[0].revents) {
			r = recv(h->sock, &m, sizeof(m), MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
				h->gone = true;
			else if (r > 0 && m.type == M_QUIT)
				h->quit = true;
			/* a late go: its stop is gone already */
		}
	}
	{
		double cleanup = h_cleanup(h);

		memset(&m, 0, sizeof(m));
		m.type = M_END;
		memcpy(m.u.st.counts, h->totals, sizeof(h->totals));
		m.u.st.stops = h->stops;
		m.u.st.unanswered = h->unanswered;
		m.u.st.drained = h->drained;
		m.u.st.period_last = h->period;
		m.u.st.threads = h->threads;
		m.u.st.left_traced = h->left;
		m.u.st.hold_med_us = h_quantile(h, 0.5);
		m.u.st.hold_p99_us = h_quantile(h, 0.99);
		m.u.st.hold_total_s = h->hold_total;
		m.u.st.cleanup_s = cleanup;
		m.u.st.complete = h->complete;
		h_send(h, &m, sizeof(m));
	}
	_exit(0);
}

struct lc_error *lc_probe_hold(int pid, const struct lc_probe_point *pts,
			       size_t n, int want, uint64_t period,
			       double max_rate, bool bare,
			       struct lc_probe_holder **ret)
{
	struct lc_probe_holder *ph;
	struct lc_probe *p;
	struct lc_error *err;
	struct hmsg m;
	struct pollfd pf;
	int sv[2];
	pid_t hp;
	ssize_t r;

	*ret = NULL;
	if (n > LC_PROBE_MAX)
		return lc_error_create(LC_ERR_INVALID, "--at: %d functions at most",
				       LC_PROBE_MAX);
	err = probe_new(pid, false, pts, n, want, &p);
	if (err)
		return err;
	ph = calloc(1, sizeof(*ph));
	if (!ph) {
		lc_probe_close(p);
		return &lc_error_nomem;
	}
	ph->p = p;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		err = lc_error_create(LC_ERR_OS, "--at: socketpair: %s", strerror(errno));
		goto fail;
	}
	fflush(NULL);
	hp = fork();
	if (hp < 0) {
		err = lc_error_create(LC_ERR_OS, "--at: fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		goto fail;
	}
	if (hp == 0) {
		struct holder h = {
			.p = p, .sock = sv[1], .pid = pid,
			.period = period ? period : 1, .fixed = period != 0,
			.bare = bare, .max_rate = max_rate,
			.rng = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull | 1,
		};

		close(sv[0]);
		holder_main(&h);
	}
	close(sv[1]);
	ph->sock = sv[0];
	ph->hpid = hp;
	/* seizing and opening: uprobes take some 15 ms each */
	pf = (struct pollfd){ .fd = ph->sock, .events = POLLIN };
	memset(&m, 0, sizeof(m));
	r = poll(&pf, 1, 120000) > 0 ? recv(ph->sock, &m, sizeof(m), 0) : -1;
	if (r <= 0 || m.type != M_START || !m.ok) {
		err = r > 0 && m.type == M_START ?
		      lc_error_create(LC_ERR_OS, "%.*s", (int)sizeof(m.u.text), m.u.text) :
		      lc_error_create(LC_ERR_OS, "--at: the holder process did not start (%s)",
				      r < 0 ? "no answer in 120 s" : "it ended");
		kill(hp, r <= 0 ? SIGTERM : 0);
		while (waitpid(hp, NULL, 0) < 0 && errno == EINTR)
			;
		close(ph->sock);
		goto fail;
	}
	*ret = ph;
	return NULL;
fail:
	lc_probe_close(p);
	free(ph);
	return err;
}

enum lc_probe_how lc_probe_holder_how(const struct lc_probe_holder *h)
{
	return h->p->how;
}

const char *lc_probe_holder_why_not_hw(const struct lc_probe_holder *h)
{
	return h->p->why_not_hw;
}

int lc_probe_holder_fd(const struct lc_probe_holder *h)
{
	return h->sock;
}

int lc_probe_holder_next(struct lc_probe_holder *h, struct lc_probe_hit *hit)
{
	struct hmsg m;
	ssize_t r;

	if (h->dead)
		return -1;
	r = recv(h->sock, &m, sizeof(m), MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0) {
		h->dead = true;
		return -1;
	}
	if (m.type == M_END) {
		/* it ended on its own (SIGTERM): its report, kept */
		h->end = m.u.st;
		h->ended = h->dead = true;
		return -1;
	}
	if (m.type != M_HIT ||
	    (size_t)r < offsetof(struct hmsg, u) + sizeof(m.u.hit) ||
	    m.u.hit.point >= h->p->n)
		return 0;
	*hit = m.u.hit;
	return 1;
}

void lc_probe_holder_go(struct lc_probe_holder *h, uint64_t seq)
{
	struct hmsg m = { .type = M_GO };

	m.u.seq = seq;
	if (!h->dead)
		send(h->sock, &m, offsetof(struct hmsg, u) + sizeof(m.u.seq),
		     MSG_NOSIGNAL | MSG_DONTWAIT);
}

int lc_probe_holder_finish(struct lc_probe_holder *h, struct lc_probe_stats *st)
{
	struct hmsg m = { .type = M_QUIT };
	struct pollfd pf = { .fd = h->sock, .events = POLLIN };
	int ret = -1;
	double t0 = lc_now_s();

	memset(st, 0, sizeof(*st));
	if (h->ended) {
		*st = h->end;
		ret = 0;
	}
	if (!h->dead)
		send(h->sock, &m, offsetof(struct hmsg, u), MSG_NOSIGNAL);
	/* stops still queued, then the end (the holder detaches first:
	 * a second a thread at most) */
	while (!h->dead && lc_now_s() - t0 < 600) {
		ssize_t r;

		if (poll(&pf, 1, 1000) <= 0)
			continue;
		r = recv(h->sock, &m, sizeof(m), 0);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			break;
		}
		if (m.type == M_END) {
			*st = m.u.st;
			ret = 0;
			break;
		}
	}
	close(h->sock);
	while (waitpid(h->hpid, NULL, 0) < 0 && errno == EINTR)
		;
	lc_probe_close(h->p);
	free(h);
	return ret;
}
