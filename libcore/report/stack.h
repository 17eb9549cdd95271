/* One OS thread's mixed stack: native frames with the interpreter's
 * frames spliced in, as the report, the sampler and gdb's lua-bt show
 * it.  The unit they share.
 *
 * Per thread: unwind the native frames, collect the interpreter states
 * they hold, order the running ones innermost first (resume chain within
 * a VM by resume depth, VMs by where they first appear), walk each one's
 * frames, and splice them in:
 *  - a C function's frame goes after the native frame of that function;
 *  - a run of Lua frames goes after the native frame that runs them (the
 *    run's extent comes from the family's starts_run);
 *  - what cannot be placed is appended, marked unplaced.
 * The Lua frames' order never depends on placement, only on the walk.
 *
 * Ownership: a decoded stack owns its arrays and every frame's strings;
 * lc_stack_deinit frees them (or the caller takes frames, states and
 * note over, as the report does). */
#ifndef LC_STACK_H
#define LC_STACK_H

#include "report/session.h"

/* Why a stack is partial: bits, not strings to search. */
enum {
	LC_PARTIAL_TRUNCATED = 1,	/* cut at the frame limit */
	LC_PARTIAL_UNWIND = 2,		/* native unwinding failed or stopped early */
	LC_PARTIAL_CHAIN = 4,		/* a state's frame chain is broken or too long */
	LC_PARTIAL_BAD_STATE = 8,	/* a frame runs Lua with a state that does not validate */
	LC_PARTIAL_FRAME = 16,		/* a frame has unreadable parts */
	LC_PARTIAL_NOMEM = 32,
};

struct lc_stack {
	struct lc_frame *frames;	/* innermost first */
	size_t nframes;
	uint64_t *states;	/* validated states running here, innermost first */
	size_t nstates;
	uint64_t vm;		/* the VM of states[0], 0 if none */
	enum lc_activity activity;	/* what the thread was doing */
	const char *vm_label;	/* and its VM, as the VM says it (vm.h
				   vm_label; static), or NULL */
	int32_t trace;		/* with vm_label "trace": its number */
	unsigned partial;	/* LC_PARTIAL_* */
	char *note;		/* the first reason, for people; or NULL */
};

struct lc_stack_options {
	size_t max_frames;	/* natives and Lua frames together */
	bool locals;		/* fill each Lua frame's vars */
	/* The interpreter the pass is of; NULL: the target's first. */
	struct lc_interp *interp;
};

/* Decode thread tid of t.  pass is a pass of t's interpreter, or NULL
 * when there is none (native frames only).  Never fails: what could not
 * be read is in partial and note. */
void lc_stack_decode(struct lc_target *t, struct lc_pass *pass, int tid,
		     const struct lc_stack_options *o, struct lc_stack *ret);
void lc_stack_deinit(struct lc_stack *s);

#endif /* LC_STACK_H */
