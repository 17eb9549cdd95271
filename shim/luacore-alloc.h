/* luacore-alloc.h: the messages between libluacore-alloc.so, preloaded into
 * a launched target, and the sampler that launched it.
 *
 * The sampler makes a SOCK_SEQPACKET socketpair, passes one end to the
 * target as the number in LC_ALLOC_ENV_FD and the sampling mean in bytes
 * in LC_ALLOC_ENV_MEAN.  Every message is one struct lc_alloc_msg, one
 * packet (a copied PARK: more after it), in the byte order of the target
 * (it runs on the sampler's machine).
 *
 * Sockets.  The first time a thread parks it makes two socketpairs of its
 * own and passes one end of each to the sampler in a HELLO on the shared
 * socket (SCM_RIGHTS, exactly two fds: its socket, then its bulk socket).
 * A thread's socket carries its waiting PARKs, the sampler's answers and
 * HOTs, so threads park independently and share no lock; it reads EOF
 * when the thread exits.  Its bulk socket carries its copied PARKs (and
 * the FREEs sent with them); the sampler reads it every few milliseconds
 * and never waits on it, so that a send there wakes no one.  Everything
 * that needs no answer (HELLO, NEW, CLOSE, BYE, and FREE but as below)
 * goes on the shared socket without waiting: when the socket is full the
 * shim drops the message and counts it in `dropped`.  The sampler polls
 * the shared socket and one socket per thread that has parked.
 *
 * Waiting and copied parks.  A thread's first parks wait: PARK, and the
 * sampler copies the thread's stack and Lua state while it waits for the
 * answer.  Once the sampler has sent it a HOT (what to copy: its stack
 * from rsp - 128 as deep as its last sample reached, and the pages of its
 * Lua state), a park of that VM copies them itself: the PARK (flag
 * LC_ALLOC_COPIED), a struct lc_alloc_copy and the bytes go in one packet
 * on the bulk socket, sent without waiting, and nothing answers it.  The
 * kernel reads those pages: a page gone is EFAULT, never a fault; then,
 * or when the packet is too big or the bulk socket full, the thread waits
 * instead (after EFAULT with LC_ALLOC_COPY_FAILED, and it copies no more
 * until told again).  A HOT of no states tells a
 * thread to wait at its parks again.
 *
 * System calls.  A copied park costs the thread one sendmmsg (and every
 * LC_HEAR_EVERY-th park one recv of what the sampler sent meanwhile); a
 * waiting park, one sendmmsg and one blocking recv.  (A system call can
 * cost a memory-bound program far more than its own time, where it
 * flushes the TLB.)  So FREEs wait in the shim and go in the sendmmsg of
 * the next PARK, after it (or on the shared socket when enough are
 * waiting, and before a CLOSE or BYE; those the socket has no room for
 * wait again); NEW is sent only for an allocation that failed; and the
 * time a park held its thread goes in its next PARK, its BYE, or at its
 * exit a NEW of no sample.
 *
 * Answers.  A waiting park's answer is one byte, or a uint64_t: a new
 * mean in bytes, for every VM's gaps from their next one on, and at once
 * for the parked VM's (a sampler that caps the rate of parks raises it;
 * each PARK carries the mean then in force).  A HOT can carry a new mean
 * too, and comes any time: before an answer, or between parks.
 *
 * Order.  A waiting PARK is read before its answer, and NEW and FREE of
 * its id are sent after the answer, so they come after it.  A copied
 * PARK is read up to some milliseconds after it was sent: a FREE or NEW
 * of its id on the shared socket, or a CLOSE of its VM, may come first,
 * and the sampler keeps what it saw.  NEW (a failure) and FREE of one id
 * cannot both be sent; either may be lost (dropped): a sampler counts a
 * sample from its PARK, in use until a FREE or NEW of its id, or a CLOSE
 * of its VM, ends it.
 */
#ifndef LUACORE_ALLOC_H
#define LUACORE_ALLOC_H

#include <stdint.h>

#define LC_ALLOC_ENV_FD		"LUACORE_ALLOC_FD"
#define LC_ALLOC_ENV_MEAN	"LUACORE_ALLOC_MEAN"
#define LC_ALLOC_MAGIC		0x3141434cu	/* "LCA1" in memory */
#define LC_ALLOC_VERSION	4
#define LC_ALLOC_MEAN_DEFAULT	(512 * 1024)
#define LC_ALLOC_TIMEOUT_MS	100	/* a park waits this long at most */

enum lc_alloc_kind {
	LC_ALLOC_HELLO = 1,	/* shared socket + SCM_RIGHTS: a thread's sockets */
	/* sampled; the thread waits for an answer, or copied itself */
	LC_ALLOC_PARK,
	/* the parked allocation id failed (ptr 0); id 0, ptr 1: no sample,
	 * only the wait of an exiting thread's last park */
	LC_ALLOC_NEW,
	LC_ALLOC_FREE,		/* a sampled block was freed or reallocated */
	LC_ALLOC_CLOSE,		/* lua_close: every sample of vm is gone */
	LC_ALLOC_BYE,		/* shared socket, at exit: dropped, overflow */
	/* shared socket, once, from the shim's constructor (before the
	 * program's main): ptr 1, it samples, and waits for the sampler's
	 * one byte on the shared socket (LC_ALLOC_START_MS at most) before
	 * the program goes on; ptr 0, it cannot (nsize: why, enum
	 * lc_alloc_why), and the program goes on unsampled; ptr 2, asked to
	 * hold the program only (LC_ALLOC_ENV_MEAN "0": luacore-sample
	 * --at), it waits as with 1, then goes on unsampled, Lua or not */
	LC_ALLOC_START,
	/* luacore-sample --at where perf events are refused (launch mode):
	 * answered to a START with ptr 2, a packet "A" + the mean period
	 * (uint64_t) + comma-separated function names + NUL
	 * (LC_ALLOC_AT_REQ_MAX bytes at most) asks the shim to interpose
	 * those functions' PLT slots in every module loaded.  It answers one
	 * AT_HOOKED per name (id: its index, nsize: the slots it took, 0:
	 * none), then the program goes on at the sampler's one byte.  Each call through a slot counts;
	 * every period-th on a thread on average (uniform gaps) parks in an
	 * AT on its own socket: regs as at the function's first instruction
	 * (rip the function, rsp pointing at the return address), id the
	 * index, nsize the calls it stands for, osize the calls of that
	 * function so far.  The answer: one byte, or a uint64_t new period.
	 * AT_COUNT (id, nsize the count) for each function at exit. */
	LC_ALLOC_AT,
	LC_ALLOC_AT_HOOKED,
	LC_ALLOC_AT_COUNT,
	/* sampler to a thread's socket, any time: struct lc_alloc_hot */
	LC_ALLOC_HOT,
};

/* PARK flags: the packet goes on with a struct lc_alloc_copy and what it
 * says, and the thread did not wait: nothing answers it. */
#define LC_ALLOC_COPIED		1u
/* PARK flags: a waiting PARK whose thread could not copy what it was
 * told (a page of it is gone): the sampler tells it afresh */
#define LC_ALLOC_COPY_FAILED	2u

#define LC_ALLOC_HOT_PAGES	32
#define LC_ALLOC_HOT_STATES	8
#define LC_ALLOC_PAGE		4096
#define LC_ALLOC_STACK_MAX	(32 * 1024 + 128)

/* A thread's copy of itself, after the struct lc_alloc_msg of a copied
 * PARK: stack_len bytes from stack_lo (its rsp at the park - 128), then
 * npages pages of LC_ALLOC_PAGE bytes, at page[0], page[1], ...; the
 * states its last HOT named. */
struct lc_alloc_copy {
	uint64_t stack_lo;
	uint32_t stack_len;	/* <= LC_ALLOC_STACK_MAX */
	uint32_t npages;	/* <= LC_ALLOC_HOT_PAGES */
	uint32_t nstates;	/* <= LC_ALLOC_HOT_STATES */
	uint32_t seq;		/* the HOT it copied as */
	uint64_t page[LC_ALLOC_HOT_PAGES];
	uint64_t state[LC_ALLOC_HOT_STATES];
};

#define LC_ALLOC_COPY_MAX	(sizeof(struct lc_alloc_copy) + \
				 LC_ALLOC_STACK_MAX + \
				 LC_ALLOC_HOT_PAGES * LC_ALLOC_PAGE)

/* HOT: what the thread copies at its parks of VM L (the main state of
 * its PARKs) from now on, instead of waiting: npages pages, and its
 * stack from rsp - 128 to rsp + stack_need, no further than stack_end.
 * npages 0 and nstates 0: it waits at its parks again.  mean: a new
 * mean in bytes, as an answer's (0: unchanged). */
struct lc_alloc_hot {
	uint32_t magic;		/* LC_ALLOC_MAGIC */
	uint16_t version;	/* LC_ALLOC_VERSION */
	uint16_t kind;		/* LC_ALLOC_HOT */
	uint32_t npages, nstates;
	uint32_t seq;		/* 1, 2, ... for the thread: copies echo it */
	uint32_t pad;
	uint64_t L, mean, stack_need, stack_end;
	uint64_t page[LC_ALLOC_HOT_PAGES];
	uint64_t state[LC_ALLOC_HOT_STATES];
};

#define LC_ALLOC_AT_REQ_MAX	4096
#define LC_ALLOC_AT_MAX		64	/* functions */

enum lc_alloc_why {
	LC_ALLOC_WHY_NO_LUA = 1,	/* no shared Lua library at start */
};

#define LC_ALLOC_START_MS	10000

/* Registers of a parked thread, x86-64: at the park, inside the shim, so
 * that an unwinder starts with a consistent set (the callee-saved ones are
 * those the shim's own CFI knows how to restore).  nregs is 0 on other
 * architectures, which then have pc, sp and fp only. */
enum lc_alloc_reg {
	LC_REG_RIP, LC_REG_RSP, LC_REG_RBP, LC_REG_RBX,
	LC_REG_R12, LC_REG_R13, LC_REG_R14, LC_REG_R15,
	LC_NREGS
};

struct lc_alloc_msg {
	uint32_t magic;		/* LC_ALLOC_MAGIC */
	uint16_t version;	/* LC_ALLOC_VERSION */
	uint16_t kind;		/* enum lc_alloc_kind */
	int32_t tid;		/* the thread that sent it (gettid) */
	uint32_t vm;		/* VM serial, 1, 2, ... (0: none) */
	uint64_t id;		/* sample id, 1, 2, ... (PARK, NEW, FREE) */
	uint64_t L;		/* main lua_State, 0 while lua_newstate runs */
	uint64_t ptr;		/* PARK: block passed in (0: new); NEW: result
				 * (0: it failed, the sample does not count);
				 * FREE: the block */
	uint64_t osize;		/* PARK: lua_Alloc's osize; with ptr 0 in
				 * Lua 5.2+ the type tag of a new object */
	uint64_t nsize;		/* PARK: bytes asked for */
	uint64_t mean;		/* PARK: sampling mean in bytes */
	uint64_t pc;		/* PARK: return address in Lua's caller of the
				 * lua_Alloc */
	uint64_t sp;		/* PARK: that caller's stack pointer */
	uint64_t stall_ns;	/* NEW: this park as the thread saw it; PARK,
				 * BYE: the thread's last park before (0:
				 * none, or already told): how long it held
				 * the thread, waiting or copying */
	uint64_t dropped;	/* PARK, BYE: NEW/FREE/CLOSE not sent (full) */
	uint64_t overflow;	/* PARK, BYE: samples the live table missed */
	uint32_t nregs;		/* PARK: entries of regs used */
	uint32_t flags;		/* PARK: LC_ALLOC_COPIED, _COPY_FAILED */
	uint64_t regs[LC_NREGS];	/* PARK: enum lc_alloc_reg */
	/* PARK: the bytes this VM asked for since its last park ended
	 * (since it was made, for its first park) and the ns that took: its
	 * allocation rate now, counted rather than sampled, from which the
	 * sampler can cap the park rate at the first park */
	uint64_t since_bytes, since_ns;
};

#endif /* LUACORE_ALLOC_H */
