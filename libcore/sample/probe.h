/* Counting probes on functions of a running process: how many times each
 * was entered, counted by the kernel (perf events), with no stop, no
 * signal and no byte of ours in the target: luacore-sample --at
 * --count-only.
 *
 * Internal to libluacore.  Two mechanisms: hardware execute breakpoints
 * (at most LC_PROBE_HW_MAX functions; only where a self-test shows that
 * they fire: some virtual machines accept them and never fire them) and
 * uprobes (the kernel's, which it removes when the last descriptor
 * closes; they need CAP_SYS_ADMIN or a perf_event_paranoid that allows
 * them).  The probes close with their descriptors: a process of ours
 * that dies by any signal leaves nothing behind in the target.  A probe
 * set owns its descriptors and its copy of the points. */
#ifndef LC_PROBE_H
#define LC_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define LC_PROBE_HW_MAX	4	/* debug registers a thread has */

/* A function of the target, as lc_sampler_resolve finds it. */
struct lc_probe_point {
	char *name;		/* as asked */
	uint64_t addr;		/* its address in the target */
	char *module;		/* the file that holds it */
	uint64_t offset;	/* and its offset in that file */
};

enum lc_probe_how { LC_PROBE_HW, LC_PROBE_UPROBE };

struct lc_probe;

/* Count entries of the n points in process pid.  With follow, one event
 * a point on the thread pid only, inherited by the threads it makes from
 * then on (a program we start, held before its main: every thread is
 * counted); without, one on each thread there is, and lc_probe_rescan
 * adds the threads born since.  want: LC_PROBE_HW or LC_PROBE_UPROBE to
 * insist, -1 to choose (hardware breakpoints when they fire here and
 * there are few enough, else uprobes).  The error says what was
 * refused and why (permissions by name), and what still works. */
struct lc_error *lc_probe_open(int pid, bool follow,
			       const struct lc_probe_point *pts, size_t n,
			       int want, struct lc_probe **ret);
/* Threads born since: probed too.  How many threads are probed. */
size_t lc_probe_rescan(struct lc_probe *p);
/* The counts so far, one a point (threads still running and inherited
 * events: what the kernel has folded in).  -1 if a count cannot be read. */
int lc_probe_read(struct lc_probe *p, uint64_t *counts);
enum lc_probe_how lc_probe_how(const struct lc_probe *p);
/* Why hardware breakpoints were not taken (NULL: they were, or were not
 * considered). Static or owned by p. */
const char *lc_probe_why_not_hw(const struct lc_probe *p);
void lc_probe_close(struct lc_probe *p);

/* ---- Stops at the points: luacore-sample --at ----
 *
 * A holder process, forked by lc_probe_hold, seizes every thread of the
 * process with ptrace (and those they start, as they start) and opens on
 * each, per point, a perf event that counts the point's entries and,
 * every so many of them, makes the kernel stop the thread with a SIGTRAP
 * (sigtrap, removed on exec).  The holder reports each such stop to us
 * and keeps the thread stopped until lc_probe_holder_go or its budget;
 * it drops the SIGTRAP.  Nothing is written into the target.
 *
 * The holder owns the attachment and the events, in a session of its
 * own.  When our end of its socket closes (we ended, or died by any
 * signal, SIGKILL included), or it gets SIGTERM, SIGINT or SIGHUP, it
 * disables and closes the events, serves the stops already on their
 * way for 20 ms, and detaches from every thread, none left with a
 * SIGTRAP pending; then it ends.  A SIGKILL of the holder itself cannot
 * be cleaned up after: a SIGTRAP on its way then kills the target (see
 * luacore-sample(1)). */

#define LC_PROBE_MAX	64	/* points at once */

/* A stop, as the holder reports it. */
struct lc_probe_hit {
	int32_t tid;
	uint32_t point;		/* index into the points */
	uint64_t seq;		/* for lc_probe_holder_go */
	uint64_t weight;	/* entries of the point this stop stands for */
	uint64_t regs[17];	/* DWARF x86-64 numbering, 16 the pc */
};

/* How the holder's run went, when it ended. */
struct lc_probe_stats {
	uint64_t counts[LC_PROBE_MAX];	/* entries, exact (the kernel's) */
	uint64_t stops;		/* stops reported to us */
	uint64_t unanswered;	/* let go at the budget, before our go */
	uint64_t drained;	/* stops on their way at the end, dropped */
	uint64_t period_last;	/* the mean period at the end */
	uint64_t threads;	/* threads seized, in all */
	uint64_t left_traced;	/* threads it could not detach from */
	double hold_med_us, hold_p99_us, hold_total_s;	/* stop to go */
	double cleanup_s;	/* disable to the last detach */
	bool complete;		/* every count read */
};

struct lc_probe_holder;

/* Start a holder on process pid for the n points (at most LC_PROBE_MAX).
 * period: stop at every period-th entry of a point on a thread on
 * average (gaps drawn at random, each stop weighing its own gap); 0:
 * start at 1 and raise it (as a power of two) whenever the stops come
 * faster than max_rate a second.  bare: report nothing, let every stop
 * go at once (the floor of a stop's cost).  want: as lc_probe_open's.
 * Returns once every thread is seized and probed, or with what was
 * refused (ptrace or perf_event_open, named), and then no holder. */
struct lc_error *lc_probe_hold(int pid, const struct lc_probe_point *pts,
			       size_t n, int want, uint64_t period,
			       double max_rate, bool bare,
			       struct lc_probe_holder **ret);
/* Mechanism chosen (as lc_probe_how) and why not hardware breakpoints. */
enum lc_probe_how lc_probe_holder_how(const struct lc_probe_holder *h);
const char *lc_probe_holder_why_not_hw(const struct lc_probe_holder *h);
/* The descriptor to poll for stops. */
int lc_probe_holder_fd(const struct lc_probe_holder *h);
/* The next stop: 1, 0 when none is waiting, -1 when the holder is gone. */
int lc_probe_holder_next(struct lc_probe_holder *h, struct lc_probe_hit *hit);
/* Let stop seq's thread go. */
void lc_probe_holder_go(struct lc_probe_holder *h, uint64_t seq);
/* Ask the holder to end (counts read, events closed, threads detached)
 * and wait for it: 0 with *st, -1 if it died before it could say (*st
 * then holds zeros).  Frees h. */
int lc_probe_holder_finish(struct lc_probe_holder *h,
			   struct lc_probe_stats *st);

#endif /* LC_PROBE_H */
