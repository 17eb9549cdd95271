/* Counting probes on functions (probe.h): perf events, hardware execute
 * breakpoints or uprobes, one per point and thread. */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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

static struct lc_error *open_error(const struct lc_probe *p,
				   const struct lc_probe_point *pt, int tid,
				   int e)
{
	int par = paranoid();

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

struct lc_error *lc_probe_open(int pid, bool follow,
			       const struct lc_probe_point *pts, size_t n,
			       int want, struct lc_probe **ret)
{
	struct lc_probe *p = calloc(1, sizeof(*p));
	struct lc_error *err = NULL;

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
	/* hardware breakpoints when they fire and suffice, else uprobes */
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
