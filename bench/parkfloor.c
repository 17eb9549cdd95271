/* parkfloor: what a park costs a thread on this machine before any
 * sampler work.  A thread that computes makes, at a rate, the system
 * call a park makes, and nothing else:
 *
 *   parkfloor RATE COUNT           a waiting park: one packet on a
 *       SOCK_SEQPACKET socket, and a wait in poll for the one-byte answer
 *       of a process that does nothing but answer it (at real-time
 *       priority where permitted, as luacore-sample runs): two wake-ups.
 *   parkfloor RATE COUNT BYTES     a copied park: one packet of BYTES
 *       taken from the thread's own memory (as the allocation shim sends
 *       its stack and Lua pages) on a socket that a process reads every
 *       5 ms without waiting on it, as luacore-sample does: no wake-up.
 *
 * RATE parks a second (between them, for 1/RATE s, the thread reads a
 * 64 MiB buffer at random places, as a program that allocates much walks
 * its heap: a system call then finds the caches and the TLB cold), COUNT
 * of them.  Prints "median_us p90_us realtime|normal|unwaited" on
 * stdout. */
#define _GNU_SOURCE
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The reader of copied parks: every 5 ms, whatever waits. */
static void drain(int fd, size_t bytes)
{
	char *buf = malloc(bytes + 1);

	if (!buf)
		_exit(1);
	for (;;) {
		struct timespec ts = { 0, 5000000 };
		ssize_t n;

		nanosleep(&ts, NULL);
		while ((n = recv(fd, buf, bytes + 1, MSG_DONTWAIT)) > 0)
			;
		if (n == 0)
			_exit(0);
	}
}

/* The answerer of waiting parks. */
static void answer(int fd)
{
	char c;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, -1) < 0 || read(fd, &c, 1) <= 0 ||
		    write(fd, &c, 1) != 1)
			_exit(0);
	}
}

int main(int argc, char **argv)
{
	double rate = argc > 1 ? atof(argv[1]) : 0;
	int count = argc > 2 ? atoi(argv[2]) : 0, sv[2], rt[2], isrt = 0;
	long bytes = argc > 3 ? atol(argv[3]) : 0;
	char *mem = NULL;
	/* what the thread computes over between parks */
	size_t nheap = (size_t)64 << 20;
	unsigned char *heap = malloc(nheap);
	unsigned long x = 88172645463325252ul, sum = 0;
	double *t;
	pid_t pid;
	char c = 'p';

	if (rate <= 0 || count <= 0 || count > 1000000 || bytes < 0 ||
	    bytes > 1 << 20) {
		fprintf(stderr, "usage: parkfloor RATE COUNT [BYTES]\n");
		return 2;
	}
	if (!heap || !(t = calloc((size_t)count, sizeof(*t))) ||
	    (bytes && !(mem = malloc((size_t)bytes))) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) || pipe(rt)) {
		perror("parkfloor");
		return 1;
	}
	if (bytes) {
		int want = (int)(4 * bytes);

		memset(mem, 1, (size_t)bytes);
		(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &want,
				 sizeof(want));
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		struct sched_param sp = { .sched_priority = 1 };
		char r = bytes ? 'u' :
			 sched_setscheduler(0, SCHED_FIFO, &sp) == 0 ? 'r' : 'n';

		close(sv[0]);
		if (write(rt[1], &r, 1) != 1)
			_exit(1);
		if (bytes)
			drain(sv[1], (size_t)bytes);
		answer(sv[1]);
	}
	close(sv[1]);
	if (read(rt[0], &c, 1) == 1)
		isrt = c == 'r' ? 1 : c == 'u' ? 2 : 0;
	for (int i = 0; i < count; i++) {
		double end = now() + 1 / rate, t0;
		struct pollfd p = { .fd = sv[0], .events = POLLIN };
		if (i == 0)
			memset(heap, 1, nheap);
		while (now() < end)
			for (int k = 0; k < 1000; k++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				sum += heap[x % nheap];
			}
		t0 = now();
		if (bytes) {
			if (send(sv[0], mem, (size_t)bytes, MSG_DONTWAIT) !=
			    bytes) {
				perror("parkfloor: send");
				return 1;
			}
		} else if (write(sv[0], &c, 1) != 1 || poll(&p, 1, 1000) != 1 ||
			   read(sv[0], &c, 1) != 1) {
			perror("parkfloor: round trip");
			return 1;
		}
		t[i] = (now() - t0) * 1e6;
	}
	close(sv[0]);
	waitpid(pid, NULL, 0);
	qsort(t, (size_t)count, sizeof(*t), cmp);
	printf("%.1f %.1f %s\n", t[(count - 1) / 2], t[(count * 9 - 1) / 10],
	       isrt == 1 ? "realtime" : isrt == 2 ? "unwaited" : "normal");
	if (sum == 1)	/* (the reads are used) */
		fputc('\n', stderr);
	return 0;
}
