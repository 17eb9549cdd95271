/* luacore-alloc.h: the messages between libluacore-alloc.so, preloaded into
 * a launched target, and the sampler that launched it.
 *
 * The sampler makes a SOCK_SEQPACKET socketpair, passes one end to the
 * target as the number in LC_ALLOC_ENV_FD and the sampling mean in bytes
 * in LC_ALLOC_ENV_MEAN.  Every message is one struct lc_alloc_msg, one
 * packet, in the byte order of the target (it runs on the sampler's
 * machine).
 *
 * Sockets.  The first time a thread parks it makes a socketpair of its
 * own and passes one end to the sampler in a HELLO on the shared socket
 * (SCM_RIGHTS, exactly one fd).  A thread's socket carries its PARKs and
 * the sampler's one-byte answers, so threads park independently and share
 * no lock; it reads EOF when the thread exits.  Everything that needs no
 * answer (HELLO, NEW, CLOSE, BYE, and FREE but as below) goes on the
 * shared socket without waiting: when the socket is full the shim drops
 * the message and counts it in `dropped`.  The sampler polls the shared socket and one socket per
 * thread that has parked.
 *
 * System calls.  A park costs the parked thread two: one sendmmsg and one
 * blocking recv.  (A system call can cost a memory-bound program far more
 * than its own time, where it flushes the TLB.)  So FREEs wait in the
 * shim and go in the sendmmsg of the next PARK, on that thread's socket,
 * after it (or on the shared socket when enough are waiting, and before a
 * CLOSE or BYE); NEW is sent only for an allocation that failed; and the
 * time a thread waited in a park goes in its next PARK, its BYE, or at
 * its exit a NEW of no sample.
 *
 * Answers.  A park's answer is one byte, or a uint64_t: a new mean in
 * bytes, for every VM's gaps from their next one on, and at once for the
 * parked VM's (a sampler that caps the rate of parks raises it; each PARK
 * carries the mean then in force).
 *
 * Order.  The sampler has read a PARK before it answers, and NEW and FREE
 * of that sample id are sent after the answer, so they always come after
 * their PARK.  NEW (a failure) and FREE of one id cannot both be sent; either
 * may be lost (dropped): a sampler counts a sample from its PARK, in use
 * until a FREE or NEW of its id, or a CLOSE of its VM, ends it.
 */
#ifndef LUACORE_ALLOC_H
#define LUACORE_ALLOC_H

#include <stdint.h>

#define LC_ALLOC_ENV_FD		"LUACORE_ALLOC_FD"
#define LC_ALLOC_ENV_MEAN	"LUACORE_ALLOC_MEAN"
#define LC_ALLOC_MAGIC		0x3141434cu	/* "LCA1" in memory */
#define LC_ALLOC_VERSION	3
#define LC_ALLOC_MEAN_DEFAULT	(512 * 1024)
#define LC_ALLOC_TIMEOUT_MS	100	/* a park waits this long at most */

enum lc_alloc_kind {
	LC_ALLOC_HELLO = 1,	/* shared socket + SCM_RIGHTS: a thread's socket */
	LC_ALLOC_PARK,		/* sampled; the thread waits for one byte */
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
				 * none, or already told) */
	uint64_t dropped;	/* PARK, BYE: NEW/FREE/CLOSE not sent (full) */
	uint64_t overflow;	/* PARK, BYE: samples the live table missed */
	uint32_t nregs;		/* PARK: entries of regs used */
	uint32_t pad;
	uint64_t regs[LC_NREGS];	/* PARK: enum lc_alloc_reg */
	/* PARK: the bytes this VM asked for since its last park ended
	 * (since it was made, for its first park) and the ns that took: its
	 * allocation rate now, counted rather than sampled, from which the
	 * sampler can cap the park rate at the first park */
	uint64_t since_bytes, since_ns;
};

#endif /* LUACORE_ALLOC_H */
