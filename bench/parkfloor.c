/* parkfloor: what a park costs a thread on this machine before any
 * sampler work: a thread that computes sends one packet on a
 * SOCK_SEQPACKET socket (as the allocation shim does) and waits in poll
 * for the one-byte answer of a process that does nothing but answer it,
 * at real-time priority where permitted (as luacore-sample runs).  The
 * round trip is two wake-ups: the answering process's and the waiting
 * thread's.
 *
 *   parkfloor RATE COUNT
 *
 * RATE round trips a second (the thread computes 1/RATE s between them),
 * COUNT of them.  Prints "median_us p90_us realtime" on stdout. */
#define _GNU_SOURCE
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
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

int main(int argc, char **argv)
{
	double rate = argc > 1 ? atof(argv[1]) : 0;
	int count = argc > 2 ? atoi(argv[2]) : 0, sv[2], rt[2], isrt = 0;
	double *t;
	pid_t pid;
	char c = 'p';

	if (rate <= 0 || count <= 0 || count > 1000000) {
		fprintf(stderr, "usage: parkfloor RATE COUNT\n");
		return 2;
	}
	if (!(t = calloc((size_t)count, sizeof(*t))) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) || pipe(rt)) {
		perror("parkfloor");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		struct sched_param sp = { .sched_priority = 1 };
		char r = sched_setscheduler(0, SCHED_FIFO, &sp) == 0 ? 'r' : 'n';

		close(sv[0]);
		if (write(rt[1], &r, 1) != 1)
			_exit(1);
		for (;;) {
			struct pollfd p = { .fd = sv[1], .events = POLLIN };

			if (poll(&p, 1, -1) < 0 || read(sv[1], &c, 1) <= 0 ||
			    write(sv[1], &c, 1) != 1)
				_exit(0);
		}
	}
	close(sv[1]);
	if (read(rt[0], &c, 1) == 1)
		isrt = c == 'r';
	for (int i = 0; i < count; i++) {
		double end = now() + 1 / rate, t0;
		struct pollfd p = { .fd = sv[0], .events = POLLIN };
		volatile unsigned long spin = 0;

		while (now() < end)
			spin++;
		t0 = now();
		if (write(sv[0], &c, 1) != 1 || poll(&p, 1, 1000) != 1 ||
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
	       isrt ? "realtime" : "normal");
	return 0;
}
