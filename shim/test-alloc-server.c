/* test-alloc-server: a stand-in for luacore-sample --heap, to test
 * libluacore-alloc.so.
 *
 *   test-alloc-server [OPTIONS] -- CMD [ARGS...]
 *
 * -s SHIM    the shim to preload (required unless -n)
 * -m MEAN    sampling mean in bytes (LUACORE_ALLOC_MEAN; default the
 *            shim's, 512 KiB)
 * -c BYTES   per park, copy this much of the parked thread's stack with
 *            process_vm_readv, as a sampler does (default 32768; 0: none)
 * -u USEC    per park, sleep this long before answering
 * -k N       SIGKILL ourselves on receiving the N-th park
 * -H N       do not answer the N-th park for 300 ms (the shim times out)
 * -d MS      read the shared socket (HELLO, NEW, FREE, CLOSE, BYE) every
 *            MS ms only, not at each packet: fewer wake-ups of this
 *            process, each of which costs the target on a small machine;
 *            a thread's first park then waits up to MS for its HELLO
 * -n         no shim, no socket: run CMD and time it only
 * -p FILE    write the target's pid to FILE
 * -v N       print the first N parks: ids, sizes, and pc, sp and the
 *            registers taken at the park as MODULE+OFFSET (/proc maps)
 *
 * Runs CMD with the shim preloaded and one end of a SOCK_SEQPACKET
 * socketpair in LUACORE_ALLOC_FD, serves parks and collects NEW, FREE and
 * CLOSE until CMD exits, then prints on stderr what it saw, the last line
 * as key=value pairs for scripts:
 *   parks, parks per second of wall time, service time (park received to
 *   answer sent) and the stall the shim measured (send to answer), medians
 *   and p99; the allocated bytes estimated from the samples, sum of
 *   size / p with p = 1 - exp(-size / mean); frees matched to samples,
 *   live samples at the end and their in-use estimate; the shim's counts of
 *   dropped messages and table overflows; CMD's exit, wall and CPU time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "luacore-alloc.h"

#define MAX_FDS 256

/* the tid of each thread socket's HELLO: a PARK from another tid on it is
 * a forked child that kept its parent's socket (a shim bug) */
static int32_t tid_of[MAX_FDS + 1];

enum { S_PARKED = 1, S_NEW = 2, S_FAILED = 4, S_FREED = 8 };

struct sample {
	uint64_t nsize, ptr, mean;
	uint32_t vm;
	uint8_t state;
};

static struct sample *samples;
static size_t nsamples;		/* ids below this have a slot */
static double *service_us, *stall_us;
static size_t nservice, nstall;

/* "MODULE+0xOFFSET" of addr in pid's mappings, for -v */
static const char *where(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	char path[64], line[512];
	FILE *f;

	snprintf(buf, len, "0x%llx", (unsigned long long)addr);
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "r")))
		return buf;
	while (fgets(line, sizeof line, f)) {
		unsigned long long lo, hi, off;
		int name = 0;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &lo, &hi,
			   &off, &name) < 3 || addr < lo || addr >= hi)
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(buf, len, "%s+0x%llx", name ? line + name : "?",
			 addr - lo + off);
		break;
	}
	fclose(f);
	return buf;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct sample *sample_of(uint64_t id)
{
	if (id == 0 || id > 100000000)
		return NULL;	/* nonsense */
	if (id >= nsamples) {
		size_t n = id * 2;
		struct sample *s = realloc(samples, n * sizeof *s);

		if (!s)
			return NULL;
		memset(s + nsamples, 0, (n - nsamples) * sizeof *s);
		samples = s;
		nsamples = n;
	}
	return &samples[id];
}

static void keep(double **v, size_t *n, double x)
{
	if ((*n & (*n - 1)) == 0 || *n == 0) {
		double *w = realloc(*v, (*n ? *n * 2 : 64) * sizeof *w);

		if (!w)
			return;
		*v = w;
	}
	(*v)[(*n)++] = x;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double p)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof *v, cmp);
	return v[(size_t)(p * (n - 1))];
}

int main(int argc, char **argv)
{
	const char *shim = NULL, *mean = NULL, *pidfile = NULL;
	long kill_at = 0, hang_at = 0, usec = 0, copy = 32768, parks = 0,
	     verbose = 0, short_copies = 0, lazy_ms = 0;
	double last_drain = 0;
	uint64_t dropped = 0, overflow = 0, hellos = 0, frees = 0,
		 freed = 0, unknown = 0, closes = 0, bad = 0, wrongtid = 0;
	int i, sv[2], plain = 0, status = 0, nfds = 1, pidfd = -1;
	struct pollfd pfd[MAX_FDS + 1];
	struct rusage ru;
	double t0, wall, est = 0, inuse = 0, sampled = 0;
	char *copybuf = NULL, num[16];
	pid_t child;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(o, "-n") == 0) {
			plain = 1;
			continue;
		}
		if (!v)
			break;
		if (strcmp(o, "-s") == 0) shim = v;
		else if (strcmp(o, "-m") == 0) mean = v;
		else if (strcmp(o, "-c") == 0) copy = atol(v);
		else if (strcmp(o, "-u") == 0) usec = atol(v);
		else if (strcmp(o, "-k") == 0) kill_at = atol(v);
		else if (strcmp(o, "-H") == 0) hang_at = atol(v);
		else if (strcmp(o, "-p") == 0) pidfile = v;
		else if (strcmp(o, "-v") == 0) verbose = atol(v);
		else if (strcmp(o, "-d") == 0) lazy_ms = atol(v);
		else break;
		i++;
	}
	if (i + 1 >= argc || strcmp(argv[i], "--") || (!shim && !plain)) {
		fprintf(stderr, "usage: test-alloc-server [-s SHIM] [-m MEAN] "
			"[-c BYTES] [-u USEC] [-k N] [-H N] [-d MS] [-n] [-p FILE] "
			"[-v N] "
			"-- CMD [ARGS...]\n");
		return 64;
	}
	argv += i + 1;
	if (copy > 0 && !(copybuf = malloc(copy)))
		return 2;
	if (!plain && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		perror("socketpair");
		return 2;
	}
	t0 = now();
	child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		if (!plain) {
			const char *pre = getenv("LD_PRELOAD");
			char *both = NULL;

			fcntl(sv[1], F_SETFD, 0);	/* for CMD to inherit */
			snprintf(num, sizeof num, "%d", sv[1]);
			setenv(LC_ALLOC_ENV_FD, num, 1);
			if (mean)
				setenv(LC_ALLOC_ENV_MEAN, mean, 1);
			if (pre && *pre && asprintf(&both, "%s:%s", shim, pre) > 0)
				setenv("LD_PRELOAD", both, 1);
			else
				setenv("LD_PRELOAD", shim, 1);
		}
		execvp(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	if (pidfile) {
		FILE *f = fopen(pidfile, "w");

		if (f) {
			fprintf(f, "%d\n", (int)child);
			fclose(f);
		}
	}
	/* a pidfd says when CMD ends even if an fd of ours outlives it */
	pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	pfd[0].fd = pidfd;
	pfd[0].events = POLLIN;
	if (!plain) {
		close(sv[1]);
		pfd[1].fd = sv[0];
		pfd[1].events = POLLIN;
		nfds = 2;
	}
	for (int done = pidfd < 0 && nfds == 1; !done;) {
		int due = 0;

		/* -d: the shared socket (no one waits for what it carries,
		 * but each packet would wake us) is read every lazy_ms */
		if (lazy_ms && nfds > 1) {
			double left = last_drain + lazy_ms / 1e3 - now();

			pfd[1].events = 0;
			if (poll(pfd, nfds, left > 0 ? (int)(left * 1e3) + 1 : 0)
			    < 0 && errno != EINTR)
				break;
			if ((due = now() >= last_drain + lazy_ms / 1e3))
				last_drain = now();
		} else if (poll(pfd, nfds, -1) < 0 && errno != EINTR)
			break;
		/* CMD exited (or, without a pidfd, closed every socket):
		 * drain what is queued, then stop */
		if (pfd[0].revents || (pidfd < 0 && nfds == 1))
			done = 1;
		for (int k = 1; k < nfds; k++) {
			struct lc_alloc_msg m;
			union {
				char buf[CMSG_SPACE(2 * sizeof(int))];
				struct cmsghdr align;
			} c;
			struct iovec iov = { &m, sizeof m };
			struct msghdr mh = {
				.msg_iov = &iov, .msg_iovlen = 1,
				.msg_control = c.buf,
				.msg_controllen = sizeof c.buf,
			};
			struct sample *s;
			int from = pfd[k].fd;
			ssize_t n;

			if (!pfd[k].revents && !done && !(k == 1 && due))
				continue;
			n = recvmsg(from, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
			if (n < 0 && errno == EAGAIN)
				continue;
			if (n <= 0) {	/* EOF: a thread (or CMD) is gone */
				close(from);
				tid_of[k] = tid_of[nfds - 1];
				pfd[k--] = pfd[--nfds];
				continue;
			}
			k--;	/* read this fd again: it may hold more */
			if (n != sizeof m || m.magic != LC_ALLOC_MAGIC ||
			    m.version != LC_ALLOC_VERSION) {
				bad++;
				continue;
			}
			switch (m.kind) {
			case LC_ALLOC_START:
				if (m.ptr == 1 && send(from, "g", 1, MSG_NOSIGNAL) != 1)
					bad++;
				break;
			case LC_ALLOC_HELLO: {
				struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
				int fd;

				hellos++;
				if (!cm || cm->cmsg_type != SCM_RIGHTS)
					break;
				memcpy(&fd, CMSG_DATA(cm), sizeof fd);
				if (cm->cmsg_len >= CMSG_LEN(2 * sizeof(int))) {
					/* the socket of copied parks: never
					 * told what to copy, it sends none */
					int bulk;

					memcpy(&bulk, CMSG_DATA(cm) + sizeof(int),
					       sizeof bulk);
					close(bulk);
				}
				if (nfds > MAX_FDS) {
					close(fd);	/* its parks time out */
					break;
				}
				tid_of[nfds] = m.tid;
				pfd[nfds].fd = fd;
				pfd[nfds++].events = POLLIN;
				break;
			}
			case LC_ALLOC_PARK: {
				double r0 = now();

				if (m.tid != tid_of[k + 1])
					wrongtid++;
				parks++;
				if (kill_at && parks == kill_at) {
					fprintf(stderr, "server: SIGKILL at park "
						"%ld\n", parks);
					raise(SIGKILL);
				}
				if ((s = sample_of(m.id))) {
					s->state |= S_PARKED;
					s->nsize = m.nsize;
					s->mean = m.mean;
					s->vm = m.vm;
				}
				dropped = m.dropped;
				overflow = m.overflow;
				/* the thread's park before, as it saw it */
				if (m.stall_ns)
					keep(&stall_us, &nstall, m.stall_ns / 1e3);
				if (copy > 0) {
					uint64_t sp = m.nregs ?
						m.regs[LC_REG_RSP] : m.sp;
					struct iovec l = { copybuf, copy };
					struct iovec r = {
						(void *)(uintptr_t)sp, copy };

					/* the stack may end before BYTES: a
					 * short copy is normal, counted */
					if (process_vm_readv(m.tid, &l, 1, &r, 1,
							     0) < copy)
						short_copies++;
				}
				if (parks <= verbose) {
					char b[4][256];

					fprintf(stderr, "server: park %lu tid %d "
						"vm %u L 0x%llx ptr 0x%llx osize "
						"%llu nsize %llu\n  pc %s sp 0x%llx"
						"\n  rip %s rsp 0x%llx (%u regs)\n",
						(unsigned long)m.id, m.tid, m.vm,
						(unsigned long long)m.L,
						(unsigned long long)m.ptr,
						(unsigned long long)m.osize,
						(unsigned long long)m.nsize,
						where(m.tid, m.pc, b[0], 256),
						(unsigned long long)m.sp,
						where(m.tid, m.regs[LC_REG_RIP],
						      b[1], 256),
						(unsigned long long)m.regs[LC_REG_RSP],
						m.nregs);
				}
				if (usec)
					usleep(usec);
				if (hang_at && parks == hang_at) {
					fprintf(stderr, "server: park %ld left "
						"unanswered for 300 ms\n", parks);
					usleep(300000);
				}
				if (send(from, "", 1, MSG_NOSIGNAL) == 1)
					keep(&service_us, &nservice,
					     (now() - r0) * 1e6);
				break;
			}
			case LC_ALLOC_NEW:
				/* a failed allocation, or (id 0) only the wait
				 * of an exiting thread's last park */
				keep(&stall_us, &nstall, m.stall_ns / 1e3);
				if (!(s = sample_of(m.id)))
					break;
				s->state |= m.ptr ? S_NEW : S_FAILED;
				s->ptr = m.ptr;
				break;
			case LC_ALLOC_FREE:
				frees++;
				s = sample_of(m.id);
				if (s && (s->state & S_PARKED) &&
				    !(s->state & S_FREED) &&
				    (!(s->state & S_NEW) || s->ptr == m.ptr)) {
					s->state |= S_FREED;
					freed++;
				} else
					unknown++;
				break;
			case LC_ALLOC_CLOSE:
				closes++;
				for (size_t j = 1; j < nsamples; j++)
					if (samples[j].vm == m.vm)
						samples[j].state |= S_FREED;
				break;
			case LC_ALLOC_BYE:
				if (m.stall_ns)
					keep(&stall_us, &nstall, m.stall_ns / 1e3);
				dropped = m.dropped;
				overflow = m.overflow;
				break;
			default:
				bad++;
			}
		}
	}
	wait4(child, &status, 0, &ru);
	free(copybuf);
	wall = now() - t0;
	for (size_t j = 1; j < nsamples; j++) {
		struct sample *s = &samples[j];
		double w;

		/* a PARK whose NEW was dropped still counts; a failed
		 * allocation does not */
		if (!(s->state & S_PARKED) || (s->state & S_FAILED))
			continue;
		w = s->nsize / -expm1(-(double)s->nsize / s->mean);
		sampled += s->nsize;
		est += w;
		if (!(s->state & S_FREED))
			inuse += w;
	}
	if (!plain) {
		size_t live = 0;

		for (size_t j = 1; j < nsamples; j++)
			live += (samples[j].state & (S_PARKED | S_FREED |
				 S_FAILED)) == S_PARKED;
		fprintf(stderr, "server: %ld parks, %.0f/s; service median "
			"%.1f us p99 %.1f us; stall seen by the shim median "
			"%.1f us p99 %.1f us\n", parks, parks / wall,
			pct(service_us, nservice, 0.5),
			pct(service_us, nservice, 0.99),
			pct(stall_us, nstall, 0.5), pct(stall_us, nstall, 0.99));
		fprintf(stderr, "server: sampled %.0f bytes; estimate %.0f "
			"bytes allocated; %zu live samples at the end, in-use "
			"estimate %.0f bytes\n", sampled, est, live, inuse);
		fprintf(stderr, "server: %lu FREE, %lu matched, %lu unmatched; "
			"%lu CLOSE; %lu HELLO; shim dropped %lu, overflow %lu; "
			"%lu bad messages, %lu parks from a thread not its "
			"socket's\n", (unsigned long)frees,
			(unsigned long)freed, (unsigned long)unknown,
			(unsigned long)closes, (unsigned long)hellos,
			(unsigned long)dropped, (unsigned long)overflow,
			(unsigned long)bad, (unsigned long)wrongtid);
	}
	fprintf(stderr, "server: parks=%ld est_bytes=%.0f inuse_bytes=%.0f "
		"frees=%lu matched=%lu unmatched=%lu dropped=%lu overflow=%lu "
		"bad=%lu hellos=%lu short_copies=%ld "
		"service_med_us=%.1f stall_med_us=%.1f stall_p99_us=%.1f "
		"parks_per_s=%.1f wall_s=%.3f cpu_s=%.3f maxrss_kb=%ld closes=%lu "
		"vcsw=%ld ivcsw=%ld exit=%d\n", parks, est,
		inuse, (unsigned long)frees, (unsigned long)freed,
		(unsigned long)unknown, (unsigned long)dropped,
		(unsigned long)overflow, (unsigned long)(bad + wrongtid),
		(unsigned long)hellos, short_copies, pct(service_us, nservice, 0.5),
		pct(stall_us, nstall, 0.5), pct(stall_us, nstall, 0.99),
		parks / wall, wall, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6
		+ ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
		ru.ru_maxrss, (unsigned long)closes, ru.ru_nvcsw, ru.ru_nivcsw,
		WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return 0;
}
