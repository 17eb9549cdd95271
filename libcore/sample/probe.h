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

#endif /* LC_PROBE_H */
