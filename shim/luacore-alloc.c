/* libluacore-alloc.so: byte-sampled allocation profiling of the Lua VMs of
 * a target that luacore-sample launched (LD_PRELOAD).
 *
 * luacore-sample --alloc launches with it (the build makes it as
 * shim/libluacore-alloc.la); shim/run-alloc-test.sh also builds it with
 * gcc and checks it against test-alloc-server.c, a stand-in sampler that
 * answers parks without copying a stack.  luacore-sample --at has it
 * hold a command before its main, and where perf events are refused,
 * interpose functions' PLT slots (below, "--at through the shim").
 *
 * It interposes lua_newstate and wraps the (f, ud) of every VM; Debian's
 * liblua5.x calls lua_newstate through the PLT from luaL_newstate, so the
 * default allocator is wrapped too (and, being the C library's free and
 * realloc as the Lua manual specifies it, called directly by the wrapper:
 * a call less per allocation).  luaL_newstate is interposed as well,
 * for LuaJIT, whose luaL_newstate does not go through lua_newstate: there
 * the allocator is wrapped right after the VM is made.  With Lua linked
 * into the executable nothing here is ever called, and nothing happens.
 *
 * Sampling: each VM walks the byte line of its own allocations (nsize
 * of every allocation and realloc; frees do not count; Lua runs a VM on
 * one thread at a time, so the line is a plain field of the VM's record)
 * with sample points at exponential gaps of mean M, and a block is sampled
 * when a point falls in it.  The thread that allocated it parks: it sends
 * PARK (the registers an unwinder needs, the lua_Alloc arguments) on its
 * own socket and waits for an answer, while the sampler copies its stack;
 * or, once the sampler has told it what to copy (HOT), it sends a copy of
 * its own stack and Lua state with the PARK, in one system call, and does
 * not wait.  Then the real allocator runs; the block is in use until a
 * FREE of it.  One or two system calls a park, none a free: the protocol
 * is in luacore-alloc.h.
 *
 * If the sampler dies, hangs (no answer within LC_ALLOC_TIMEOUT_MS) or a
 * socket call fails, sampling is off for good in the whole process and
 * one line on stderr says why; the allocators stay wrapped and forward.
 * Threads share atomics and the shared socket, whose packets the kernel
 * keeps whole, so no thread ever waits for a parked one; the only lock,
 * around the live-sample filter's counts, is taken for a few instructions
 * when a sampled block comes or goes, never on the fast path.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <elf.h>
#include <link.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "luacore-alloc.h"

typedef struct lua_State lua_State;
typedef void *(*lua_Alloc)(void *ud, void *ptr, size_t osize, size_t nsize);

#define LC_EXPORT __attribute__((visibility("default")))

/* The Lua library's functions we stand in for, found with RTLD_NEXT at
 * load; sampling needs all but luaL_newstate.  lua_newstate has a third
 * argument (a seed) since 5.5: passing it on to 5.1-5.4 fills an argument
 * register they ignore, which the x86-64 and AArch64 conventions allow. */
enum { LC_NEWSTATE, LC_AUXNEWSTATE, LC_GETALLOCF, LC_SETALLOCF, LC_CLOSE,
       LC_NFN };
static const char *const lc_fn_name[LC_NFN] = {
	"lua_newstate", "luaL_newstate", "lua_getallocf", "lua_setallocf",
	"lua_close",
};
static void *lc_fn[LC_NFN];
static uintptr_t lc_lib_lo, lc_lib_hi;	/* the library's mapping */

typedef lua_State *newstate_fn(lua_Alloc, void *, unsigned);
typedef lua_State *auxnewstate_fn(void);
typedef lua_Alloc getallocf_fn(lua_State *, void **);
typedef void setallocf_fn(lua_State *, lua_Alloc, void *);
typedef void close_fn(lua_State *);

/* One per wrapped VM.  Freed after lua_close; a VM its host never closes
 * keeps its record, which is no more than the VM itself leaks. */
struct lc_vm {
	/* bytes to the VM's next sample point.  The byte line is the VM's,
	 * not its thread's: Lua runs one VM on one thread at a time, and
	 * the fast path then reads only what it is given (no TLS) */
	int64_t left;
	lua_Alloc f;		/* the host's allocator, what it last set */
	void *ud;
	lua_State *L;		/* main thread, once lua_newstate returned */
	uint32_t serial;	/* 1, 2, ...: the "vm" of the messages */
	/* f is the Lua library's own, given by its luaL_newstate: the C
	 * library's free and realloc (lc_std_alloc) */
	bool std;
	uint64_t rng;		/* xorshift64* state of its gaps */
	/* the gaps drawn in all: drawn - left is the bytes asked for since
	 * the VM was made, kept off the fast path; at the end of the last
	 * park, that count and the time (since_bytes, since_ns) */
	uint64_t drawn, mark_bytes, mark_ns;
};

struct lc_thread {
	uint64_t rng;		/* xorshift (--at gaps); 0: not seeded yet */
	uint64_t stall_untold;	/* its last park's wait, for the next PARK */
	bool timed;		/* its socket's receives time out */
	int fd;			/* own socket + 1; 0: none yet */
	/* + 1: the socket of its copied PARKs, which the sampler reads
	 * every few milliseconds without waiting on it, so that sending
	 * wakes nothing; and the most a packet on it can carry */
	int bulk;
	size_t sndmax;
	unsigned unheard;	/* copied parks since it read its socket */
	int32_t tid;
	/* What its parks in the VM of main state hot_L copy, as the
	 * sampler's last HOT said (hot_L 0: they wait for the sampler to
	 * copy): pages, and the stack up to hot_need above rsp, short of
	 * hot_end. */
	uint64_t hot_L, hot_need, hot_end;
	uint32_t hot_npages, hot_nstates, hot_seq;
	uint64_t hot_page[LC_ALLOC_HOT_PAGES];
	uint64_t hot_state[LC_ALLOC_HOT_STATES];
};

/* initial-exec: the fast path is one %fs-relative access; the library is
 * preloaded, so static TLS always has room for it */
static __thread struct lc_thread lc_self __attribute__((tls_model("initial-exec")));
/* In the Lua library's luaL_newstate (its lua_newstate gets its own
 * allocator) */
static __thread bool lc_in_auxnewstate __attribute__((tls_model("initial-exec")));

static atomic_int lc_on;	/* 1 while sampling; 0 for good once off */
static int lc_fd = -1;		/* the shared socket */
/* the mean gap in bytes: the sampler may raise it in a park's answer */
static _Atomic uint64_t lc_mean = LC_ALLOC_MEAN_DEFAULT;
static atomic_uint_fast64_t lc_next_id, lc_dropped, lc_overflow;
static atomic_uint lc_next_vm;
static pthread_key_t lc_key;	/* closes a thread's socket at its exit */
/* --at through the shim: the functions interposed (0: none, not this
 * mode), their targets, the mean period between parks, their counts */
static size_t lc_at_n;
static void *lc_at_real[LC_ALLOC_AT_MAX];
static _Atomic uint64_t lc_at_period = 1;
static atomic_uint_fast64_t lc_at_count[LC_ALLOC_AT_MAX];
static pthread_once_t lc_once = PTHREAD_ONCE_INIT;

/* The threads' sockets, + 1, for a forked child to close them all: it
 * must not keep the sampler from seeing EOF when the threads end. */
#define LC_MAX_FDS 8192	/* two a thread */
static atomic_int lc_fds[LC_MAX_FDS];

/* Live sampled blocks, for FREE.  A block's hash picks one bucket of 8
 * slots (a cache line of pointers); a full bucket counts an overflow.  Any
 * thread adds and removes with atomics only; a pointer is in the table at
 * most once because the host cannot free or reuse it concurrently.
 * lc_filter counts the entries of each 1/4 of a bucket (a count never
 * exceeds 8) and lc_filter_bit says which counts are not 0: every free
 * reads one bit, of 2 KiB that stay in the first-level cache, and looks
 * at the bucket only when it is set.  A count and its bit change together
 * under lc_filter_lock, at samples only. */
#define LC_BUCKET_BITS	12
#define LC_FILTER_BITS	14
#define LC_SLOTS	8
static struct {
	_Atomic uintptr_t ptr[LC_SLOTS];
} __attribute__((aligned(64))) lc_live[1 << LC_BUCKET_BITS];
static struct {
	uint64_t id;
	uint32_t vm;
} lc_live_of[1 << LC_BUCKET_BITS][LC_SLOTS];
static uint8_t lc_filter[1 << LC_FILTER_BITS];
static _Atomic uint8_t lc_filter_bit[(1 << LC_FILTER_BITS) / 8];
static atomic_flag lc_filter_lock = ATOMIC_FLAG_INIT;

static inline unsigned lc_filter_of(const void *p);

/* Whether block p may be a live sample: its filter bit. */
static inline bool lc_maybe_live(const void *p)
{
	unsigned f = lc_filter_of(p);

	return atomic_load_explicit(&lc_filter_bit[f >> 3],
				    memory_order_relaxed) >> (f & 7) & 1;
}

/* Sampled blocks freed, not yet told: they go with the next PARK, so
 * that a free costs no system call of its own.  Under lc_filter_lock. */
#define LC_FREED_MAX	16
struct lc_freed {
	uint64_t id, ptr;
	uint32_t vm;
};
static struct lc_freed lc_freed[LC_FREED_MAX];
static unsigned lc_nfreed;

/* Held for a few instructions, at samples only; a holder that lost its
 * CPU is given the CPU back rather than spun against. */
static void lc_filter_lock_take(void)
{
	for (unsigned spins = 0;
	     atomic_flag_test_and_set_explicit(&lc_filter_lock,
					       memory_order_acquire);
	     spins++) {
		if (spins >= 64)
			sched_yield();
	}
}

static void lc_filter_lock_give(void)
{
	atomic_flag_clear_explicit(&lc_filter_lock, memory_order_release);
}

/* One more (delta 1) or one less (-1) entry under p's filter slot. */
static void lc_filter_count(const void *p, int delta)
{
	unsigned f = lc_filter_of(p);

	lc_filter_lock_take();
	lc_filter[f] = (uint8_t)(lc_filter[f] + delta);
	if (lc_filter[f])
		atomic_fetch_or(&lc_filter_bit[f >> 3], (uint8_t)(1u << (f & 7)));
	else
		atomic_fetch_and(&lc_filter_bit[f >> 3],
				 (uint8_t)~(1u << (f & 7)));
	lc_filter_lock_give();
}

/* The freed blocks not yet told, into out (LC_FREED_MAX); how many. */
static unsigned lc_take_freed(struct lc_freed *out)
{
	unsigned n;

	lc_filter_lock_take();
	n = lc_nfreed;
	memcpy(out, lc_freed, n * sizeof *out);
	lc_nfreed = 0;
	lc_filter_lock_give();
	return n;
}

static inline uint64_t lc_hash(const void *p)
{
	return (uintptr_t)p * 0x9e3779b97f4a7c15ull;
}

static inline unsigned lc_filter_of(const void *p)
{
	return (unsigned)(lc_hash(p) >> (64 - LC_FILTER_BITS));
}

static uint64_t lc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void lc_off(const char *why, int err)
{
	char line[200];
	int n;

	if (!atomic_exchange(&lc_on, 0))
		return;		/* said once already */
	n = snprintf(line, sizeof line, "luacore-alloc: %s "
		     "off: %s%s%s\n", lc_at_n ? "stops at calls" :
		     "allocation sampling", why, err ? ": " : "",
		     err ? strerror(err) : "");
	if (n > 0 && write(2, line, (size_t)n < sizeof line ? (size_t)n :
			   sizeof line - 1) < 0)
		return;		/* nowhere else to say it */
}

static void lc_msg(struct lc_alloc_msg *m, int kind, uint32_t vm)
{
	memset(m, 0, sizeof *m);
	m->magic = LC_ALLOC_MAGIC;
	m->version = LC_ALLOC_VERSION;
	m->kind = (uint16_t)kind;
	m->tid = lc_self.tid ? lc_self.tid : (int32_t)syscall(SYS_gettid);
	m->vm = vm;
}

/* NEW, CLOSE, BYE: on the shared socket, never waiting.  A full
 * socket drops the message and counts it; PARK and BYE carry the count. */
/* n messages not sent, the send having failed with errno: dropped and
 * counted when the socket was full, else sampling off. */
static void lc_unsent(unsigned n)
{
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS ||
	    errno == EINTR)
		atomic_fetch_add(&lc_dropped, n);
	else
		lc_off("cannot send to the sampler", errno);
}

static void lc_tell(struct lc_alloc_msg *m)
{
	if (send(lc_fd, m, sizeof *m, MSG_NOSIGNAL | MSG_DONTWAIT) !=
	    (ssize_t)sizeof *m)
		lc_unsent(1);
}

/* A first packet (first[0..nfirst), none when nfirst is 0), and FREE
 * messages of f[0..n) after it; sendmmsg on fd.  The packets sent, or -1
 * (errno). */
static int lc_send_freed(int fd, struct iovec *first, unsigned nfirst,
			 const struct lc_freed *f, unsigned n)
{
	struct lc_alloc_msg msgs[LC_FREED_MAX];
	struct iovec iov[LC_FREED_MAX];
	struct mmsghdr v[LC_FREED_MAX + 1];
	unsigned k = 0, i;
	int sent;

	if (nfirst)
		v[k++] = (struct mmsghdr){ .msg_hdr = { .msg_iov = first,
							.msg_iovlen = nfirst } };
	for (i = 0; i < n; i++, k++) {
		lc_msg(&msgs[i], LC_ALLOC_FREE, f[i].vm);
		msgs[i].id = f[i].id;
		msgs[i].ptr = f[i].ptr;
		iov[i] = (struct iovec){ &msgs[i], sizeof msgs[i] };
		v[k] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i],
						      .msg_iovlen = 1 } };
	}
	do
		sent = sendmmsg(fd, v, k, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (sent < 0 && errno == EINTR);
	return sent;
}

/* Every freed block not yet told, on the shared socket: before a CLOSE or
 * BYE, or when LC_FREED_MAX wait. */
static void lc_flush_freed(void)
{
	struct lc_freed f[LC_FREED_MAX];
	unsigned n = lc_take_freed(f);
	int sent;

	if (!n || lc_fd < 0)
		return;
	sent = lc_send_freed(lc_fd, NULL, 0, f, n);
	if (sent < 0)
		lc_unsent(n);
	else if ((unsigned)sent < n)
		atomic_fetch_add(&lc_dropped, n - (unsigned)sent);
}

/* f into the freed blocks not yet told, unless LC_FREED_MAX wait. */
static bool lc_freed_push(struct lc_freed f)
{
	bool room;

	lc_filter_lock_take();
	room = lc_nfreed < LC_FREED_MAX;
	if (room)
		lc_freed[lc_nfreed++] = f;
	lc_filter_lock_give();
	return room;
}

/* f[0..n), freed blocks a send left out, back to wait for the next
 * (those that find no room are dropped and counted). */
static void lc_freed_requeue(const struct lc_freed *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (!lc_freed_push(f[i]))
			atomic_fetch_add(&lc_dropped, 1);
}

/* Block p, sample id of vm, was freed: told with the next PARK.  When
 * LC_FREED_MAX wait, they go now; if others filled the list again
 * meanwhile, this one is dropped and counted. */
static void lc_free_later(uint64_t id, uint32_t vm, const void *p)
{
	struct lc_freed f = { id, (uintptr_t)p, vm };

	if (lc_freed_push(f))
		return;
	lc_flush_freed();
	if (!lc_freed_push(f))
		atomic_fetch_add(&lc_dropped, 1);
}

static void lc_live_add(void *p, uint64_t id, uint32_t vm)
{
	uint64_t h = lc_hash(p);
	unsigned b = h >> (64 - LC_BUCKET_BITS), i;
	struct lc_alloc_msg m;

	for (i = 0; i < LC_SLOTS; i++) {
		if (atomic_load(&lc_live[b].ptr[i]) != (uintptr_t)p)
			continue;
		/* Freed behind our back (by a caller that had the host's own
		 * allocator from lua_getallocf): it ended when its address
		 * came back. */
		lc_msg(&m, LC_ALLOC_FREE, lc_live_of[b][i].vm);
		m.id = lc_live_of[b][i].id;
		m.ptr = (uintptr_t)p;
		lc_tell(&m);
		lc_live_of[b][i].id = id;
		lc_live_of[b][i].vm = vm;
		return;
	}
	for (i = 0; i < LC_SLOTS; i++) {
		uintptr_t none = 0;

		/* claim the slot with 1, which is no block, fill in its id,
		 * then publish the block */
		if (!atomic_compare_exchange_strong(&lc_live[b].ptr[i], &none, 1))
			continue;
		lc_live_of[b][i].id = id;
		lc_live_of[b][i].vm = vm;
		atomic_store(&lc_live[b].ptr[i], (uintptr_t)p);
		lc_filter_count(p, 1);
		return;
	}
	atomic_fetch_add(&lc_overflow, 1);
}

/* The slot of live block p, or -1. */
static int lc_live_find(const void *p)
{
	uint64_t h = lc_hash(p);
	unsigned b = h >> (64 - LC_BUCKET_BITS), i;

	if (!lc_maybe_live(p))
		return -1;
	for (i = 0; i < LC_SLOTS; i++)
		if (atomic_load(&lc_live[b].ptr[i]) == (uintptr_t)p)
			return (int)(b * LC_SLOTS + i);
	return -1;
}

static void lc_live_drop(int slot, const void *p, int tell)
{
	unsigned b = slot / LC_SLOTS, i = slot % LC_SLOTS;
	uint64_t id = lc_live_of[b][i].id;
	uint32_t vm = lc_live_of[b][i].vm;

	atomic_store(&lc_live[b].ptr[i], 0);
	lc_filter_count(p, -1);
	if (tell && atomic_load_explicit(&lc_on, memory_order_relaxed))
		lc_free_later(id, vm, p);
}

/* An exponential gap of mean lc_mean bytes, at least 1. */
static int64_t lc_gap(uint64_t *rng)
{
	uint64_t x = *rng;
	double u, g;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*rng = x;
	u = (double)((x * 0x2545f4914f6cdd1dull >> 11) + 1) * 0x1p-53;
	g = -(double)atomic_load_explicit(&lc_mean, memory_order_relaxed) *
	    log(u);		/* u in (0, 1]: never log(0) */
	return g < 1 ? 1 : g > 0x1p62 ? (int64_t)1 << 62 : (int64_t)g;
}

/* splitmix64 of an id and the time: threads or VMs started together, or
 * forked siblings, get unrelated streams.  Never 0. */
static uint64_t lc_seed_of(uint64_t id)
{
	uint64_t z = (id << 40 ^ lc_now()) + 0x9e3779b97f4a7c15ull;

	z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ z >> 27) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

static void lc_seed(struct lc_thread *t)
{
	t->tid = (int32_t)syscall(SYS_gettid);
	t->rng = lc_seed_of((uint64_t)t->tid);
}

/* Wait until fd is ready for ev or the deadline passes (then off). */
static int lc_wait(int fd, short ev, uint64_t until)
{
	struct pollfd p = { .fd = fd, .events = ev };

	for (;;) {
		uint64_t now = lc_now();
		int n;

		if (now >= until) {
			lc_off("the sampler did not answer within 100 ms", 0);
			return -1;
		}
		n = poll(&p, 1, (int)((until - now + 999999) / 1000000));
		if (n > 0)
			return 0;	/* ready, or EOF/error: recv says */
		if (n < 0 && errno != EINTR) {
			lc_off("poll", errno);
			return -1;
		}
	}
}

static int lc_send(int fd, struct msghdr *mh, uint64_t until)
{
	while (sendmsg(fd, mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			lc_off("cannot send to the sampler", errno);
			return -1;
		}
		if (lc_wait(fd, POLLOUT, until))
			return -1;
	}
	return 0;
}

/* The thread's own socket: one end stays here, the other goes to the
 * sampler in a HELLO on the shared socket. */
static int lc_thread_socket(struct lc_thread *t, uint64_t until)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct lc_alloc_msg m;
	struct iovec iov = { &m, sizeof m };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = c.buf, .msg_controllen = sizeof c.buf,
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int sv[2], bv[2], i, err;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		lc_off("socketpair", errno);
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, bv)) {
		lc_off("socketpair", errno);
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	{
		/* a park waits in one blocking recv, which times out */
		struct timeval tv = { 0, LC_ALLOC_TIMEOUT_MS * 1000 };

		/* room for a copied PARK and another behind it (the
		 * kernel caps this at its wmem_max, and reports double) */
		int want = (int)(2 * (sizeof m + LC_ALLOC_COPY_MAX)), got = 0;
		socklen_t len = sizeof got;

		t->timed = setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv,
				      sizeof tv) == 0;
		(void)setsockopt(bv[0], SOL_SOCKET, SO_SNDBUF, &want,
				 sizeof want);
		t->sndmax = getsockopt(bv[0], SOL_SOCKET, SO_SNDBUF, &got,
				       &len) == 0 && got > 4096 ?
			    (size_t)got - 4096 : 0;
	}
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(2 * sizeof(int));
	memcpy(CMSG_DATA(cm), &sv[1], sizeof(int));
	memcpy(CMSG_DATA(cm) + sizeof(int), &bv[1], sizeof(int));
	lc_msg(&m, LC_ALLOC_HELLO, 0);
	err = lc_send(lc_fd, &mh, until);
	close(sv[1]);
	close(bv[1]);
	if (err) {
		close(sv[0]);
		close(bv[0]);
		return -1;
	}
	for (int k = 0; k < 2; k++)
		for (i = 0; i < LC_MAX_FDS; i++) {
			int free_slot = 0;

			if (atomic_compare_exchange_strong(&lc_fds[i],
							   &free_slot,
							   (k ? bv[0] : sv[0]) + 1))
				break;
		}
	t->bulk = bv[0] + 1;
	t->fd = sv[0] + 1;
	pthread_setspecific(lc_key, (void *)(intptr_t)t->fd);
	return 0;
}

/* A thread that copies itself reads what the sampler said every this
 * many parks (a waiting park reads it all) */
#define LC_HEAR_EVERY	4

/* A HOT from the sampler: what this thread's parks copy from now on. */
static void lc_hot(struct lc_thread *t, const struct lc_alloc_hot *h)
{
	if (h->mean >= 1 && h->mean <= ((uint64_t)1 << 62))
		atomic_store_explicit(&lc_mean, h->mean, memory_order_relaxed);
	t->hot_L = 0;
	if (!h->L || !h->nstates || h->npages > LC_ALLOC_HOT_PAGES ||
	    h->nstates > LC_ALLOC_HOT_STATES || !h->stack_end ||
	    h->stack_need > LC_ALLOC_STACK_MAX)
		return;		/* wait at parks */
	t->hot_npages = h->npages;
	t->hot_nstates = h->nstates;
	memcpy(t->hot_page, h->page, sizeof t->hot_page);
	memcpy(t->hot_state, h->state, sizeof t->hot_state);
	t->hot_need = h->stack_need;
	t->hot_end = h->stack_end;
	t->hot_seq = h->seq;
	t->hot_L = h->L;
}

/* One packet from the sampler on the thread's socket (recv flags): 1 an
 * answer (a new mean taken), 2 something else (a HOT, taken), 0 none
 * (EAGAIN, EINTR, or timed out), -1 off. */
static int lc_hear(struct lc_thread *t, int flags)
{
	union {
		uint64_t mean;
		struct lc_alloc_hot hot;
	} u;
	ssize_t n = recv(t->fd - 1, &u, sizeof u, flags);

	if (n == 1)
		return 1;
	if (n == (ssize_t)sizeof u.mean) {
		/* a new mean (or period), for every thread's next gaps */
		if (u.mean >= 1 && u.mean <= ((uint64_t)1 << 62))
			atomic_store_explicit(lc_at_n ? &lc_at_period : &lc_mean,
					      u.mean, memory_order_relaxed);
		return 1;
	}
	if (n == (ssize_t)sizeof u.hot && u.hot.magic == LC_ALLOC_MAGIC &&
	    u.hot.version == LC_ALLOC_VERSION && u.hot.kind == LC_ALLOC_HOT) {
		lc_hot(t, &u.hot);
		return 2;
	}
	if (n > 0)
		return 2;	/* not ours to read: passed over */
	if (n == 0) {
		lc_off("the sampler is gone (EOF)", 0);
		return -1;
	}
	if (errno == ECONNRESET) {
		/* it died with messages of ours unread */
		lc_off("the sampler is gone (connection reset)", 0);
		return -1;
	}
	if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
		lc_off("cannot read the sampler's answer", errno);
		return -1;
	}
	return 0;
}

/* A copied PARK: m, the copy its HOT asks for (its stack from rsp - 128,
 * its Lua state's pages), and the freed blocks f after it, in one
 * sendmmsg that does not wait.  The messages sent (the PARK was), or -1
 * when the PARK was not: errno EFAULT (a page is gone), EMSGSIZE (too
 * big), EAGAIN (the sampler is behind), or another error. */
static int lc_send_copied(struct lc_thread *t, struct lc_alloc_msg *m,
			  const struct lc_freed *f, unsigned nf)
{
	struct lc_alloc_copy c;
	struct iovec iov[3 + LC_ALLOC_HOT_PAGES];
	uint64_t rsp = m->regs[LC_REG_RSP], lo, hi;
	size_t total;
	unsigned i, n = 0;

	if (m->nregs < LC_NREGS || rsp < 128 || rsp >= t->hot_end) {
		errno = EINVAL;
		return -1;
	}
	lo = (rsp - 128) & ~7ull;
	hi = rsp + t->hot_need;
	if (hi > t->hot_end || hi < rsp)
		hi = t->hot_end;
	if (hi - lo > LC_ALLOC_STACK_MAX)
		hi = lo + LC_ALLOC_STACK_MAX;
	total = sizeof *m + sizeof c + (hi - lo) +
		(size_t)t->hot_npages * LC_ALLOC_PAGE;
	if (total > t->sndmax) {
		errno = EMSGSIZE;
		return -1;
	}
	memset(&c, 0, sizeof c);
	c.stack_lo = lo;
	c.stack_len = (uint32_t)(hi - lo);
	c.npages = t->hot_npages;
	c.nstates = t->hot_nstates;
	c.seq = t->hot_seq;
	memcpy(c.page, t->hot_page, sizeof c.page);
	memcpy(c.state, t->hot_state, sizeof c.state);
	m->flags = LC_ALLOC_COPIED;
	iov[n++] = (struct iovec){ m, sizeof *m };
	iov[n++] = (struct iovec){ &c, sizeof c };
	/* the kernel reads these (a page gone is EFAULT, not a fault) */
	iov[n++] = (struct iovec){ (void *)(uintptr_t)lo, hi - lo };
	for (i = 0; i < t->hot_npages; i++)
		iov[n++] = (struct iovec){ (void *)(uintptr_t)t->hot_page[i],
					   LC_ALLOC_PAGE };
	{
		int sent = lc_send_freed(t->bulk - 1, iov, n, f, nf);

		m->flags = 0;
		return sent;
	}
}

/* Send m (its registers set), and wait for the sampler's answer, unless
 * the thread copies itself (the sampler's HOT).  The stall in ns, or -1
 * (then off). */
static __attribute__((noinline)) int64_t lc_park_regs(struct lc_thread *t,
						      struct lc_alloc_msg *m)
{
	uint64_t t0 = lc_now(), until = t0 + LC_ALLOC_TIMEOUT_MS * 1000000ull;
	struct lc_freed f[LC_FREED_MAX];
	unsigned nf;
	int sent, k;

	if (!t->fd && lc_thread_socket(t, until))
		return -1;
	nf = m->kind == LC_ALLOC_PARK ? lc_take_freed(f) : 0;
	if (m->kind == LC_ALLOC_PARK && t->hot_L) {
		/* What the sampler said since (a HOT, with a new mean
		 * maybe), every LC_HEAR_EVERY parks: mostly nothing, and a
		 * system call that finds nothing costs a park as much as
		 * its send */
		if (++t->unheard >= LC_HEAR_EVERY) {
			t->unheard = 0;
			for (int i = 0; i < 8 && (k = lc_hear(t, MSG_DONTWAIT));
			     i++)
				if (k < 0)
					return -1;
		}
		if (t->hot_L == m->L) {
			sent = lc_send_copied(t, m, f, nf);
			if (sent > 0) {
				/* the socket filled after the PARK: its
				 * FREEs wait for the next one */
				lc_freed_requeue(f + sent - 1, nf + 1 - (unsigned)sent);
				return (int64_t)(lc_now() - t0);
			}
			if (errno == EPIPE || errno == ECONNRESET) {
				lc_off("the sampler is gone (connection reset)", 0);
				return -1;
			}
			/* a page gone: wait, until told again (too big,
			 * or no room: wait this time) */
			if (errno == EFAULT || errno == EINVAL) {
				t->hot_L = 0;
				m->flags = LC_ALLOC_COPY_FAILED;
			}
		}
	}
	/* the PARK, and after it every freed block not yet told: one
	 * system call (the thread's socket is empty but for a moment) */
	{
		struct iovec iov = { m, sizeof *m };

		while ((sent = lc_send_freed(t->fd - 1, &iov, 1, f, nf)) < 0) {
			if (errno == EPIPE || errno == ECONNRESET) {
				lc_off("the sampler is gone (connection reset)", 0);
				return -1;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				lc_off("cannot send to the sampler", errno);
				return -1;
			}
			if (lc_wait(t->fd - 1, POLLOUT, until))
				return -1;
		}
	}
	lc_freed_requeue(f + sent - 1, nf + 1 - (unsigned)sent);
	for (;;) {
		/* one blocking recv when it times out, else poll first; a
		 * HOT may come before the answer */
		if (!t->timed && lc_wait(t->fd - 1, POLLIN, until))
			return -1;
		k = lc_hear(t, t->timed ? 0 : MSG_DONTWAIT);
		if (k == 1)
			return (int64_t)(lc_now() - t0);
		if (k < 0)
			return -1;
		if (lc_now() >= until) {
			lc_off("the sampler did not answer within 100 ms", 0);
			return -1;
		}
	}
}

/* Park: send m, wait for the sampler's byte.  The stall in ns, or -1
 * (then off).  noinline: the registers are taken in this frame, which
 * the shim's CFI lets an unwinder leave. */
static __attribute__((noinline)) int64_t lc_park(struct lc_thread *t,
						 struct lc_alloc_msg *m)
{
#if defined(__x86_64__)
	uint64_t *r = m->regs;

	__asm__ volatile("leaq 0(%%rip), %%rax\n\tmovq %%rax, %0\n\t"
			 "movq %%rsp, %1\n\tmovq %%rbp, %2\n\tmovq %%rbx, %3\n\t"
			 "movq %%r12, %4\n\tmovq %%r13, %5\n\t"
			 "movq %%r14, %6\n\tmovq %%r15, %7"
			 : "=m"(r[0]), "=m"(r[1]), "=m"(r[2]), "=m"(r[3]),
			   "=m"(r[4]), "=m"(r[5]), "=m"(r[6]), "=m"(r[7])
			 : : "rax");
	m->nregs = LC_NREGS;
#endif
	{
		int64_t r = lc_park_regs(t, m);

		/* not a tail call: this frame, whose registers were taken,
		 * stays as it was while the thread waits */
		__asm__ volatile("" : : : "memory");
		return r;
	}
}

/* Everything but the fast path: seeding, a sample, a live block freed. */
static __attribute__((noinline)) void *
lc_slow(struct lc_vm *vm, void *ptr, size_t osize, size_t nsize,
	void *pc, void *sp)
{
	struct lc_thread *t = &lc_self;
	int slot = ptr ? lc_live_find(ptr) : -1;
	struct lc_alloc_msg m;
	int64_t stall = -1;
	uint64_t id = 0;
	void *r;

	if (!t->rng)
		lc_seed(t);
	if (!nsize || vm->left > (int64_t)nsize) {
		vm->left -= (int64_t)nsize;
		r = vm->f(vm->ud, ptr, osize, nsize);
		if (!r && nsize)
			vm->left += (int64_t)nsize;
	} else if (!atomic_load_explicit(&lc_on, memory_order_relaxed)) {
		vm->left = INT64_MAX;	/* off: fast path from now on */
		r = vm->f(vm->ud, ptr, osize, nsize);
	} else {
		uint64_t asked, now;

		vm->left -= (int64_t)nsize;
		asked = vm->drawn - (uint64_t)vm->left;
		while (vm->left <= 0) {
			int64_t g = lc_gap(&vm->rng);

			vm->left += g;
			vm->drawn += (uint64_t)g;
		}
		id = atomic_fetch_add(&lc_next_id, 1) + 1;
		lc_msg(&m, LC_ALLOC_PARK, vm->serial);
		m.id = id;
		m.L = (uintptr_t)vm->L;
		m.ptr = (uintptr_t)ptr;
		m.osize = osize;
		m.nsize = nsize;
		m.mean = atomic_load_explicit(&lc_mean, memory_order_relaxed);
		m.pc = (uintptr_t)pc;
		m.sp = (uintptr_t)sp;
		m.dropped = atomic_load(&lc_dropped);
		m.overflow = atomic_load(&lc_overflow);
		now = lc_now();
		m.since_bytes = asked - vm->mark_bytes;
		m.since_ns = now - vm->mark_ns;
		m.stall_ns = t->stall_untold;
		t->stall_untold = 0;
		stall = lc_park(t, &m);
		/* the park's end: its start and the wait it measured */
		vm->mark_bytes = asked;
		vm->mark_ns = now + (uint64_t)(stall > 0 ? stall : 0);
		if (atomic_load_explicit(&lc_mean, memory_order_relaxed) !=
		    m.mean) {
			/* the answer changed the mean: the gap to the next
			 * point is drawn again at it (gaps have no memory),
			 * or a raise would take effect a point late */
			int64_t g = lc_gap(&vm->rng);

			vm->drawn += (uint64_t)(g - vm->left);
			vm->left = g;
		}
		r = vm->f(vm->ud, ptr, osize, nsize);
	}
	/* A realloc ends the sample of its old block even in place: the new
	 * size is a new allocation on the byte line, sampled or not. */
	if (slot >= 0 && (r || !nsize))
		lc_live_drop(slot, ptr, 1);
	if (stall >= 0 && atomic_load(&lc_on)) {
		if (r) {
			/* told with the next PARK (or BYE) */
			t->stall_untold = (uint64_t)stall;
			lc_live_add(r, id, vm->serial);
		} else {
			lc_msg(&m, LC_ALLOC_NEW, vm->serial);
			m.id = id;
			m.stall_ns = (uint64_t)stall;
			lc_tell(&m);
		}
	}
	return r;
}

/* luaL_newstate's allocator freeing a block: a call of its own, so that
 * the wrapper has no frame to make and every path of it is a jump */
static __attribute__((noinline)) void *lc_std_free(void *ptr)
{
	free(ptr);
	return NULL;
}

/* luaL_newstate's allocator shrinking a block: as 5.3's, it keeps the
 * block when realloc fails (5.1, 5.2, 5.4 and 5.5 give NULL then, and
 * Lua raises a memory error; glibc's realloc never fails to shrink). */
static __attribute__((noinline)) void *lc_std_shrink(void *ptr, size_t nsize)
{
	void *p = realloc(ptr, nsize);

	return p ? p : ptr;
}

/* The lua_Alloc of every wrapped VM.  Fast path: a free reads the filter
 * bit of its block, no more; an allocation subtracts its size from the
 * VM's byte line (a reallocation does both).  Every path is a jump,
 * so the wrapper makes no frame. */
static void *lc_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct lc_vm *vm = ud;

	if (__builtin_expect(ptr != NULL, 1) &&
	    __builtin_expect(lc_maybe_live(ptr), 0))
		goto slow;
	if (nsize == 0) {
		/* no sample point in a free */
		if (vm->std)
			return lc_std_free(ptr);
		return vm->f(vm->ud, ptr, osize, 0);
	}
	if (__builtin_expect(vm->left <= (int64_t)nsize, 0))
		goto slow;
	/* (A request that fails still moved the byte line: it only shifts
	 * the next sample point, and failures are rare.) */
	vm->left -= (int64_t)nsize;
	if (!vm->std)
		return vm->f(vm->ud, ptr, osize, nsize);
	/* luaL_newstate's allocator as the Lua manual specifies it ("based
	 * on the standard C allocation functions"), called here rather than
	 * through it: one call less */
	if (!ptr || nsize > osize)
		return realloc(ptr, nsize);
	return lc_std_shrink(ptr, nsize);
slow:
	return lc_slow(vm, ptr, osize, nsize, __builtin_return_address(0),
		       __builtin_dwarf_cfa());
}

static struct lc_vm *lc_vm_new(lua_Alloc f, void *ud)
{
	struct lc_vm *vm;
	Dl_info di;

	/* Only a function of a loaded object is wrapped: LuaJIT's
	 * luaL_newstate passes a made-up address (LJ_ALLOCF_INTERNAL,
	 * 0x4d50) for "the built-in allocator". */
	if (!atomic_load(&lc_on) || f == lc_alloc || !dladdr((void *)f, &di) ||
	    !(vm = malloc(sizeof *vm)))
		return NULL;
	vm->f = f;
	vm->ud = ud;
	vm->L = NULL;
	vm->std = false;
	vm->serial = atomic_fetch_add(&lc_next_vm, 1) + 1;
	vm->rng = lc_seed_of(vm->serial);
	vm->left = lc_gap(&vm->rng);
	vm->drawn = (uint64_t)vm->left;
	vm->mark_bytes = 0;
	vm->mark_ns = lc_now();
	return vm;
}

static int lc_find_lib(struct dl_phdr_info *info, size_t size, void *addr)
{
	uintptr_t a = (uintptr_t)addr, lo = UINTPTR_MAX, hi = 0;
	int i, hit = 0;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		hit |= a >= s && a < s + ph->p_memsz;
		lo = s < lo ? s : lo;
		hi = s + ph->p_memsz > hi ? s + ph->p_memsz : hi;
	}
	if (hit) {
		lc_lib_lo = lo;
		lc_lib_hi = hi;
	}
	return hit;
}

/* Drop this library from LD_PRELOAD, keeping any other. */
static void lc_unpreload(void)
{
	const char *pre = getenv("LD_PRELOAD"), *me, *b;
	char *copy, *out, *tok, *save;
	Dl_info di;

	if (!pre || !dladdr((void *)lc_unpreload, &di) || !di.dli_fname)
		return;
	me = strrchr(di.dli_fname, '/') ? strrchr(di.dli_fname, '/') + 1 :
		di.dli_fname;
	copy = strdup(pre);
	out = calloc(1, strlen(pre) + 1);
	if (copy && out) {
		for (tok = strtok_r(copy, " :", &save); tok;
		     tok = strtok_r(NULL, " :", &save)) {
			b = strrchr(tok, '/');
			if (strcmp(b ? b + 1 : tok, me) == 0)
				continue;
			if (*out)
				strcat(out, ":");
			strcat(out, tok);
		}
		if (*out)
			setenv("LD_PRELOAD", out, 1);
		else
			unsetenv("LD_PRELOAD");
	}
	free(copy);
	free(out);
}

static void lc_thread_exit(void *v)
{
	int fd = (int)(intptr_t)v, i;

	if (lc_self.stall_untold && atomic_load(&lc_on)) {
		struct lc_alloc_msg m;

		/* its last park's wait: a NEW of no sample */
		lc_msg(&m, LC_ALLOC_NEW, 0);
		m.ptr = 1;
		m.stall_ns = lc_self.stall_untold;
		lc_self.stall_untold = 0;
		lc_tell(&m);
	}

	for (int k = 0; k < 2; k++) {
		int it = k ? lc_self.bulk : fd;

		for (i = 0; it && i < LC_MAX_FDS; i++) {
			int mine = it;

			if (atomic_compare_exchange_strong(&lc_fds[i], &mine, 0))
				break;
		}
		/* after unlisting: a fork never sees it reused */
		if (it)
			close(it - 1);
	}
	lc_self.fd = lc_self.bulk = 0;
	lc_self.hot_L = 0;
}

/* A forked child is not the process the sampler reads: off, silently,
 * and let go of every socket. */
static void lc_atfork_child(void)
{
	int i, fd;

	atomic_store(&lc_on, 0);
	/* a thread that held it is not in the child */
	atomic_flag_clear(&lc_filter_lock);
	for (i = 0; i < LC_MAX_FDS; i++)
		if ((fd = atomic_exchange(&lc_fds[i], 0)))
			close(fd - 1);
	if (lc_fd >= 0)
		close(lc_fd);
	lc_fd = -1;
	lc_self.fd = lc_self.bulk = 0;
	lc_self.hot_L = 0;
	pthread_setspecific(lc_key, NULL);
}


/* ---- luacore-sample --at through the shim ----
 *
 * Where perf events are refused (a seccomp filter), a launched program's
 * calls of exported functions can still be stopped at: the PLT slots
 * that call them, in every module loaded at start, are pointed at stubs
 * of ours.  Stub k pushes k and jumps to lc_at_common, which saves the
 * argument registers, asks lc_at_enter for the target (counting, and
 * parking every so many calls) and jumps to it with the registers as
 * they were: the function runs as if called directly.  Calls inside a
 * library to its own functions (no PLT) are not seen. */
#if defined(__x86_64__)
void *lc_at_enter(uint64_t *save, uint64_t k, uint64_t sp, uint64_t bp)
	__attribute__((visibility("hidden"), used));
extern const char lc_at_stubs[] __attribute__((visibility("hidden")));

__asm__(
	"	.text\n"
	"	.p2align 4\n"
	"lc_at_common:\n"
	/* 0(%rsp): k, 8(%rsp): the return address */
	"	pushq %rbp\n"
	"	movq %rsp, %rbp\n"
	"	subq $248, %rsp\n"	/* 16-aligned for the call */
	"	movq %rdi, 0(%rsp)\n"
	"	movq %rsi, 8(%rsp)\n"
	"	movq %rdx, 16(%rsp)\n"
	"	movq %rcx, 24(%rsp)\n"
	"	movq %r8, 32(%rsp)\n"
	"	movq %r9, 40(%rsp)\n"
	"	movq %rax, 48(%rsp)\n"
	"	movq %r10, 56(%rsp)\n"
	"	movdqu %xmm0, 64(%rsp)\n"
	"	movdqu %xmm1, 80(%rsp)\n"
	"	movdqu %xmm2, 96(%rsp)\n"
	"	movdqu %xmm3, 112(%rsp)\n"
	"	movdqu %xmm4, 128(%rsp)\n"
	"	movdqu %xmm5, 144(%rsp)\n"
	"	movdqu %xmm6, 160(%rsp)\n"
	"	movdqu %xmm7, 176(%rsp)\n"
	"	movq %rbx, 192(%rsp)\n"
	"	movq %r12, 200(%rsp)\n"
	"	movq %r13, 208(%rsp)\n"
	"	movq %r14, 216(%rsp)\n"
	"	movq %r15, 224(%rsp)\n"
	"	movq %rsp, %rdi\n"
	"	movq 8(%rbp), %rsi\n"
	"	leaq 16(%rbp), %rdx\n"	/* rsp at the function's entry */
	"	movq 0(%rbp), %rcx\n"	/* and rbp */
	"	call lc_at_enter\n"
	"	movq %rax, %r11\n"
	"	movq 0(%rsp), %rdi\n"
	"	movq 8(%rsp), %rsi\n"
	"	movq 16(%rsp), %rdx\n"
	"	movq 24(%rsp), %rcx\n"
	"	movq 32(%rsp), %r8\n"
	"	movq 40(%rsp), %r9\n"
	"	movq 48(%rsp), %rax\n"
	"	movq 56(%rsp), %r10\n"
	"	movdqu 64(%rsp), %xmm0\n"
	"	movdqu 80(%rsp), %xmm1\n"
	"	movdqu 96(%rsp), %xmm2\n"
	"	movdqu 112(%rsp), %xmm3\n"
	"	movdqu 128(%rsp), %xmm4\n"
	"	movdqu 144(%rsp), %xmm5\n"
	"	movdqu 160(%rsp), %xmm6\n"
	"	movdqu 176(%rsp), %xmm7\n"
	"	leave\n"
	"	addq $8, %rsp\n"	/* k */
	"	jmp *%r11\n"
	"	.p2align 4\n"
	"	.globl lc_at_stubs\n"
	"	.hidden lc_at_stubs\n"
	"lc_at_stubs:\n"
	"	.set lc_at_i, 0\n"
	"	.rept 64\n"		/* LC_ALLOC_AT_MAX, 8 bytes each */
	"	pushq $lc_at_i\n"
	"	jmp lc_at_common\n"
	"	.p2align 3\n"
	"	.set lc_at_i, lc_at_i + 1\n"
	"	.endr\n");

/* calls to the next park, per thread and function */
static __thread int64_t lc_at_left[LC_ALLOC_AT_MAX]
	__attribute__((tls_model("initial-exec")));
static __thread int64_t lc_at_gap_of[LC_ALLOC_AT_MAX]
	__attribute__((tls_model("initial-exec")));

static int64_t lc_at_gap(struct lc_thread *t)
{
	uint64_t p = atomic_load_explicit(&lc_at_period, memory_order_relaxed);

	if (p <= 1)
		return 1;
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	return 1 + (int64_t)(t->rng % (2 * p - 1));
}

void *lc_at_enter(uint64_t *save, uint64_t k, uint64_t sp, uint64_t bp)
{
	struct lc_thread *t = &lc_self;
	struct lc_alloc_msg m;
	uint64_t c;
	int64_t gap;

	if (k >= lc_at_n)
		abort();	/* no slot points at it */
	c = atomic_fetch_add_explicit(&lc_at_count[k], 1,
				      memory_order_relaxed) + 1;
	if (!atomic_load_explicit(&lc_on, memory_order_relaxed))
		return lc_at_real[k];
	if (!t->rng)
		lc_seed(t);
	if (!lc_at_left[k]) {
		lc_at_left[k] = lc_at_gap(t);
		lc_at_gap_of[k] = lc_at_left[k];
	}
	if (--lc_at_left[k] > 0)
		return lc_at_real[k];
	gap = lc_at_gap_of[k];		/* the calls this park stands for */
	lc_at_left[k] = lc_at_gap_of[k] = lc_at_gap(t);
	lc_msg(&m, LC_ALLOC_AT, 0);
	m.id = k;
	m.nsize = (uint64_t)gap;
	m.osize = c;
	m.pc = (uintptr_t)lc_at_real[k];
	m.sp = sp;
	m.dropped = atomic_load(&lc_dropped);
	m.regs[LC_REG_RIP] = (uintptr_t)lc_at_real[k];
	m.regs[LC_REG_RSP] = sp;
	m.regs[LC_REG_RBP] = bp;
	m.regs[LC_REG_RBX] = save[24];
	m.regs[LC_REG_R12] = save[25];
	m.regs[LC_REG_R13] = save[26];
	m.regs[LC_REG_R14] = save[27];
	m.regs[LC_REG_R15] = save[28];
	m.nregs = LC_NREGS;
	lc_park_regs(t, &m);
	return lc_at_real[k];
}

/* The slots of module info that call the function named name: pointed
 * at stub k.  Slots in RELRO are made writable for the write, then
 * read-only again. */
struct lc_hook {
	const char *name;
	size_t k;
	size_t slots;
	uintptr_t self;		/* an address in the shim: not hooked */
};

static int lc_hook_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct lc_hook *h = arg;
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *jmprel = NULL;
	size_t pltrelsz = 0;
	uintptr_t relro = 0, relro_end = 0, b = info->dlpi_addr;
	int mine = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(b + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			relro = b + ph->p_vaddr;
			relro_end = relro + ph->p_memsz;
		}
		if (ph->p_type == PT_LOAD && h->self >= b + ph->p_vaddr &&
		    h->self < b + ph->p_vaddr + ph->p_memsz)
			mine = 1;
	}
	if (!dyn || mine || !info->dlpi_name ||
	    strstr(info->dlpi_name, "ld-linux") || strstr(info->dlpi_name, "linux-vdso"))
		return 0;
	/* ld.so has relocated the entries it uses (their addresses are
	 * absolute here); a value below the base is still an offset */
#define LC_DPTR(v) ((uintptr_t)(v) < b ? b + (uintptr_t)(v) : (uintptr_t)(v))
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)LC_DPTR(d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)LC_DPTR(d->d_un.d_ptr); break;
		case DT_JMPREL: jmprel = (const ElfW(Rela) *)LC_DPTR(d->d_un.d_ptr); break;
		case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
		}
	}
#undef LC_DPTR
	if (!symtab || !strtab || !jmprel)
		return 0;
	for (size_t i = 0; i < pltrelsz / sizeof(ElfW(Rela)); i++) {
		const ElfW(Rela) *r = &jmprel[i];
		uintptr_t slot, page;
		int ro;

		if (ELF64_R_TYPE(r->r_info) != R_X86_64_JUMP_SLOT ||
		    strcmp(strtab + symtab[ELF64_R_SYM(r->r_info)].st_name,
			   h->name) != 0)
			continue;
		slot = b + r->r_offset;
		ro = slot >= relro && slot < relro_end;
		page = slot & ~(uintptr_t)4095;
		if (ro && mprotect((void *)page, 4096, PROT_READ | PROT_WRITE))
			continue;
		*(void **)slot = (void *)(lc_at_stubs + 8 * h->k);
		if (ro)
			mprotect((void *)page, 4096, PROT_READ);
		h->slots++;
	}
	return 0;
}

/* The request after START: the functions, hooked; one AT_HOOKED each. */
static int lc_at_setup(int fd, const char *req, size_t len)
{
	char names[LC_ALLOC_AT_REQ_MAX], *tok, *save = NULL;
	uint64_t period;
	struct lc_alloc_msg m;

	if (len < 1 + sizeof(period) + 1 || len > sizeof(names))
		return -1;
	memcpy(&period, req + 1, sizeof(period));
	memcpy(names, req + 1 + sizeof(period), len - 1 - sizeof(period));
	names[len - 1 - sizeof(period) - 1] = '\0';
	atomic_store(&lc_at_period, period ? period : 1);
	for (tok = strtok_r(names, ",", &save); tok && lc_at_n < LC_ALLOC_AT_MAX;
	     tok = strtok_r(NULL, ",", &save)) {
		struct lc_hook h = { .name = tok, .k = lc_at_n,
				     .self = (uintptr_t)lc_at_setup };

		lc_at_real[lc_at_n] = dlsym(RTLD_DEFAULT, tok);
		if (lc_at_real[lc_at_n])
			dl_iterate_phdr(lc_hook_module, &h);
		lc_msg(&m, LC_ALLOC_AT_HOOKED, 0);
		m.id = lc_at_n;
		m.nsize = h.slots;
		if (send(fd, &m, sizeof m, MSG_NOSIGNAL) != (ssize_t)sizeof m)
			return -1;
		lc_at_n++;
	}
	/* and the program goes on at the sampler's word, which does not
	 * come when it finds nothing to stop at (it ends the program) */
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char go;

		if (poll(&p, 1, LC_ALLOC_START_MS) != 1 ||
		    recv(fd, &go, 1, 0) != 1)
			return -1;
	}
	return 0;
}
#else
static int lc_at_setup(int fd, const char *req, size_t len)
{
	(void)fd; (void)req; (void)len;
	return -1;
}
#endif

/* START on the shared socket; on, the sampler's byte awaited.  0, or -1
 * (no answer: nothing sent, or none within LC_ALLOC_START_MS); held
 * only (on 2), 1 when the answer was a request for --at (hooked). */
static int lc_start(int fd, int on, unsigned why)
{
	struct lc_alloc_msg m;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t until = lc_now() + LC_ALLOC_START_MS * 1000000ull;
	static char ack[LC_ALLOC_AT_REQ_MAX];

	lc_msg(&m, LC_ALLOC_START, 0);
	m.ptr = (uint64_t)on;
	m.nsize = why;
	m.mean = atomic_load_explicit(&lc_mean, memory_order_relaxed);
	if (send(fd, &m, sizeof m, MSG_NOSIGNAL) != (ssize_t)sizeof m)
		return -1;
	if (!on)
		return 0;
	for (;;) {
		uint64_t now = lc_now();
		int n;

		if (now >= until)
			return -1;
		n = poll(&p, 1, (int)((until - now + 999999) / 1000000));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		n = (int)recv(fd, ack, sizeof ack, MSG_DONTWAIT);
		if (n == 1)
			return 0;
		if (n > 1 && on == 2 && ack[0] == 'A')
			return lc_at_setup(fd, ack, (size_t)n) ? -1 : 1;
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return -1;
	}
}

static void lc_init(void)
{
	const char *s = getenv(LC_ALLOC_ENV_FD), *mean;
	int fd, type = 0, dom = 0, big = 1 << 20;
	socklen_t len = sizeof type;
	char *end;
	int hold;

	for (int i = 0; i < LC_NFN; i++)
		lc_fn[i] = dlsym(RTLD_NEXT, lc_fn_name[i]);
	if (lc_fn[LC_GETALLOCF])
		dl_iterate_phdr(lc_find_lib, lc_fn[LC_GETALLOCF]);
	if (!s)
		return;		/* not launched by a sampler */
	mean = getenv(LC_ALLOC_ENV_MEAN);
	if (mean && strtod(mean, &end) >= 1 && !*end)
		atomic_store(&lc_mean, (uint64_t)fmin(strtod(mean, NULL), 0x1p62));
	hold = mean && strcmp(mean, "0") == 0;
	fd = (int)strtol(s, &end, 10);
	/* children get neither the variables nor the fd (nor the shim) */
	unsetenv(LC_ALLOC_ENV_FD);
	unsetenv(LC_ALLOC_ENV_MEAN);
	lc_unpreload();
	if (*end || fd < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
	    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) ||
	    type != SOCK_SEQPACKET || dom != AF_UNIX) {
		dprintf(2, "luacore-alloc: %s=%s is not a unix SOCK_SEQPACKET "
			"socket: not sampling\n", LC_ALLOC_ENV_FD, s);
		return;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	/* room for bursts of NEW and FREE; the kernel caps it at wmem_max */
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
	if (hold) {
		/* held only, Lua or not: the program goes on unsampled;
		 * unless the sampler asks for --at through the shim */
		if (lc_start(fd, 2, 0) != 1 ||
		    pthread_key_create(&lc_key, lc_thread_exit) ||
		    pthread_atfork(NULL, NULL, lc_atfork_child)) {
			close(fd);
			return;
		}
		/* parks at calls only: no allocation is ever sampled */
		atomic_store(&lc_mean, (uint64_t)1 << 62);
		lc_fd = fd;
		atomic_store(&lc_on, 1);
		return;
	}
	if (!lc_fn[LC_NEWSTATE] || !lc_fn[LC_GETALLOCF] ||
	    !lc_fn[LC_SETALLOCF] || !lc_fn[LC_CLOSE]) {
		/* the sampler says it, and what to use instead */
		lc_start(fd, 0, LC_ALLOC_WHY_NO_LUA);
		close(fd);
		return;
	}
	if (pthread_key_create(&lc_key, lc_thread_exit) ||
	    pthread_atfork(NULL, NULL, lc_atfork_child))
		return;
	lc_fd = fd;
	atomic_store(&lc_on, 1);
	/* the program runs once the sampler has read its modules */
	if (lc_start(fd, 1, 0))
		lc_off("the sampler did not answer the start", 0);
}

__attribute__((constructor)) static void lc_load(void)
{
	pthread_once(&lc_once, lc_init);
}

__attribute__((destructor)) static void lc_unload(void)
{
	struct lc_alloc_msg m;

	for (size_t k = 0; k < lc_at_n; k++) {
		if (lc_fd < 0)
			break;
		lc_msg(&m, LC_ALLOC_AT_COUNT, 0);
		m.id = k;
		m.nsize = atomic_load(&lc_at_count[k]);
		lc_tell(&m);
	}
	if (!atomic_load(&lc_on))
		return;
	lc_flush_freed();
	lc_msg(&m, LC_ALLOC_BYE, 0);
	m.stall_ns = lc_self.stall_untold;
	m.dropped = atomic_load(&lc_dropped);
	m.overflow = atomic_load(&lc_overflow);
	lc_tell(&m);
}

/* The Lua library's function i: the one found at load, else (a library
 * the global scope cannot see, dlopened RTLD_LOCAL, whose PLT calls still
 * bind here) the caller's own; VMs of such a library are not wrapped.
 * Not found, there is nothing to forward to: say so, rather than jump
 * to 0. */
static void *lc_real(int i, const void *caller)
{
	void *p, *h;
	Dl_info di;

	pthread_once(&lc_once, lc_init);
	if ((p = lc_fn[i]))
		return p;
	if (!(p = dlsym(RTLD_NEXT, lc_fn_name[i])) && dladdr(caller, &di) &&
	    di.dli_fname && (h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD))) {
		p = dlsym(h, lc_fn_name[i]);
		dlclose(h);
	}
	if (!p) {
		dprintf(2, "luacore-alloc: no %s to call\n", lc_fn_name[i]);
		abort();
	}
	return p;
}

#define LC_REAL(i, type) ((type *)lc_real(i, __builtin_return_address(0)))

LC_EXPORT lua_State *lua_newstate(lua_Alloc f, void *ud, unsigned seed)
{
	newstate_fn *real = LC_REAL(LC_NEWSTATE, newstate_fn);
	struct lc_vm *vm = lc_vm_new(f, ud);
	lua_State *L;

	if (!vm)
		return real(f, ud, seed);
	/* Called by the Lua library's luaL_newstate with an allocator of
	 * that library: lauxlib's, the C library's functions. */
	if (lc_in_auxnewstate) {
		Dl_info of_f, of_caller;

		vm->std = dladdr((void *)f, &of_f) &&
			  dladdr(__builtin_return_address(0), &of_caller) &&
			  of_f.dli_fbase == of_caller.dli_fbase;
	}
	if (!(L = real(lc_alloc, vm, seed))) {
		free(vm);
		return NULL;
	}
	vm->L = L;
	return L;
}

LC_EXPORT lua_State *luaL_newstate(void)
{
	auxnewstate_fn *real = LC_REAL(LC_AUXNEWSTATE, auxnewstate_fn);
	lua_State *L;
	struct lc_vm *vm;
	lua_Alloc f;
	void *ud;

	lc_in_auxnewstate = true;
	L = real();
	lc_in_auxnewstate = false;
	/* PUC Lua went through lua_newstate above; LuaJIT did not */
	if (L && atomic_load(&lc_on) &&
	    (f = LC_REAL(LC_GETALLOCF, getallocf_fn)(L, &ud)) != lc_alloc &&
	    (vm = lc_vm_new(f, ud))) {
		vm->L = L;
		LC_REAL(LC_SETALLOCF, setallocf_fn)(L, lc_alloc, vm);
	}
	return L;
}

/* The Lua library's own calls (lauxlib's buffers, 5.5's external strings)
 * get the wrapper, so that what they allocate is sampled and what they
 * free is seen; anyone else gets the host's own allocator. */
LC_EXPORT lua_Alloc lua_getallocf(lua_State *L, void **ud)
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	void *cur;
	lua_Alloc f = LC_REAL(LC_GETALLOCF, getallocf_fn)(L, &cur);

	if (f == lc_alloc && (ra < lc_lib_lo || ra >= lc_lib_hi)) {
		f = ((struct lc_vm *)cur)->f;
		cur = ((struct lc_vm *)cur)->ud;
	}
	if (ud)
		*ud = cur;
	return f;
}

LC_EXPORT void lua_setallocf(lua_State *L, lua_Alloc f, void *ud)
{
	setallocf_fn *set = LC_REAL(LC_SETALLOCF, setallocf_fn);
	struct lc_vm *vm;
	void *cur;

	if (LC_REAL(LC_GETALLOCF, getallocf_fn)(L, &cur) == lc_alloc &&
	    f != lc_alloc) {
		/* the VM keeps its wrapper, now around the new allocator
		 * (the host serializes calls on one VM, as Lua asks) */
		vm = cur;
		vm->std = false;
		vm->ud = ud;
		vm->f = f;
	} else if ((vm = lc_vm_new(f, ud))) {
		vm->L = L;	/* any thread of the VM: an id only */
		set(L, lc_alloc, vm);
	} else {
		set(L, f, ud);
	}
}

LC_EXPORT void lua_close(lua_State *L)
{
	struct lc_vm *vm = NULL;
	struct lc_alloc_msg m;
	void *cur;

	if (LC_REAL(LC_GETALLOCF, getallocf_fn)(L, &cur) == lc_alloc) {
		vm = cur;
		/* The VM's samples end with one CLOSE, not one FREE per
		 * block.  Forget them while their blocks are still allocated,
		 * so that no other VM can have the same addresses yet. */
		for (int i = 0; i < (1 << LC_BUCKET_BITS) * LC_SLOTS; i++) {
			uintptr_t p = atomic_load(&lc_live[i / LC_SLOTS].ptr[i % LC_SLOTS]);

			if (p > 1 && lc_live_of[i / LC_SLOTS][i % LC_SLOTS].vm ==
			    vm->serial)
				lc_live_drop(i, (void *)p, 0);
		}
		/* unwrapped: LuaJIT destroys its arena at close only if it
		 * finds its own allocator */
		LC_REAL(LC_SETALLOCF, setallocf_fn)(L, vm->f, vm->ud);
	}
	LC_REAL(LC_CLOSE, close_fn)(L);
	if (!vm)
		return;
	if (atomic_load(&lc_on)) {
		lc_flush_freed();
		lc_msg(&m, LC_ALLOC_CLOSE, vm->serial);
		lc_tell(&m);
	}
	free(vm);
}
