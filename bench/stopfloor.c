/* The machine's floor for stopping a thread with ptrace, for
 * bench/sample.sh to print beside luacore-sample's own stop times.
 *
 *   stopfloor PID HZ SECONDS
 *
 * At HZ ticks a second (spaced at random, as luacore-sample does), seize
 * thread PID, interrupt it, poll for the stop, read its registers and
 * detach: what every sample must do, and nothing else.  Real-time
 * priority where permitted, and the same wait, as luacore-sample.  Prints "stops N median
 * US p99 US", timed as luacore-sample times its stops (from the
 * interrupt to the detach).
 *
 *   stopfloor PID HZ SECONDS hold US
 *
 * The same, holding the thread US microseconds between the registers and
 * the detach, as a sampler holds it while it copies: what a stop of that
 * length costs beyond the hold (in a virtual machine whose idle vCPU
 * halts at once, the one the thread leaves is woken at the detach).
 *
 *   stopfloor PID HZ SECONDS read
 *
 * The floor of a sampler that never stops (luacore-sample --nonblocking):
 * at the same ticks, only read the thread's /proc stat (is it on a CPU?)
 * and sleep again, at normal priority.  Prints "ticks N"; its CPU time
 * per tick is the floor. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The CPU thread pid last ran on (field 39 of its stat), or -1. */
static int cpu_of(int pid)
{
	char path[64], buf[1024], *p;
	int field = 2, cpu = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " "))
			if (++field == 39) {
				cpu = atoi(tok);
				break;
			}
	fclose(f);
	return cpu;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct sched_param sp = { .sched_priority = 1 };
	double hz, secs, start, next, *v;
	size_t n = 0, cap;
	unsigned seed = (unsigned)getpid();
	int pid;
	int read_only = argc == 5 && strcmp(argv[4], "read") == 0;
	int holding = argc == 6 && strcmp(argv[4], "hold") == 0;
	double hold = holding ? atof(argv[5]) / 1e6 : 0;

	if ((argc != 4 && !read_only && !holding) || hold < 0 || hold >= 1) {
		fprintf(stderr, "usage: stopfloor PID HZ SECONDS [read | hold US]\n");
		return 64;
	}
	pid = atoi(argv[1]);
	hz = atof(argv[2]);
	secs = atof(argv[3]);
	cap = (size_t)(hz * secs * 2) + 16;
	v = malloc(cap * sizeof(*v));
	if (!v || pid <= 0 || hz <= 0)
		return 64;
	if (!read_only)
		sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp);
	start = next = now_s();
	while (n < cap) {
		struct user_regs_struct u;
		struct timespec ts;
		double t0, wait;
		int st, spin;
		pid_t r;

		next += (0.5 + (double)rand_r(&seed) / RAND_MAX) / hz;
		if (next - start > secs)
			break;
		wait = next - now_s();
		if (wait > 0) {
			ts.tv_sec = (time_t)wait;
			ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
			nanosleep(&ts, NULL);
		}
		/* Poll for the stop, as luacore-sample does, unless the
		 * thread is on this CPU: at real-time priority, polling would
		 * keep it from ever reaching its stop. */
		spin = cpu_of(pid) != sched_getcpu();
		if (read_only) {
			v[n++] = 0;
			continue;
		}
		if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0) {
			if (errno == ESRCH)
				break;
			perror("stopfloor: PTRACE_SEIZE");
			return 2;
		}
		t0 = now_s();
		ptrace(PTRACE_INTERRUPT, pid, NULL, NULL);
		/* At most 250 us, then asleep: as luacore-sample waits. */
		while ((r = waitpid(pid, &st, __WALL | (spin ? WNOHANG : 0))) == 0) {
			if (now_s() - t0 > 250e-6)
				spin = 0;
			sched_yield();
		}
		if (r < 0 || !WIFSTOPPED(st))
			break;
		ptrace(PTRACE_GETREGS, pid, NULL, &u);
		if (hold > 0) {
			double until = now_s() + hold;

			while (now_s() < until)
				;
		}
		/* A signal that stopped it first goes back with the detach. */
		ptrace(PTRACE_DETACH, pid, NULL,
		       (void *)(long)((st >> 16) == PTRACE_EVENT_STOP ? 0 :
				      WSTOPSIG(st)));
		v[n++] = (now_s() - t0) * 1e6;
	}
	if (!n) {
		fprintf(stderr, "stopfloor: no stops\n");
		return 1;
	}
	if (read_only) {
		printf("ticks %zu\n", n);
		free(v);
		return 0;
	}
	qsort(v, n, sizeof(*v), cmp);
	printf("stops %zu median %.1f p99 %.1f\n", n, v[n / 2],
	       v[(size_t)((double)(n - 1) * 0.99)]);
	free(v);
	return 0;
}
