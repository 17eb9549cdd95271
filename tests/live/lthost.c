/*
 * lthost: a hostile live target for tests/run-live-hostile.sh.  A program
 * that runs one Lua 5.4 script on a thread of its own, next to many idle
 * threads, a stream of short-lived ones, or a main thread that is gone.
 *
 *   lthost [-n IDLE] [-s KB] [-c PER_S] [-x] SCRIPT
 *
 *   -n IDLE   IDLE threads that block forever (pthread_cond_wait)
 *   -s KB     their stack size (default: the system's, 8 MiB mostly
 *             untouched: what the memory scan of a live process meets)
 *   -c PER_S  a thread that starts PER_S short-lived threads a second
 *   -x        the main thread calls pthread_exit once the others run: the
 *             thread-group leader is a zombie while Lua runs on
 *   SCRIPT    run by Debian's liblua5.4 (dlopen'ed: no Lua headers or
 *             link-time dependency; its DWARF is liblua5.4-0-dbg's)
 *
 * The script gets ready() (creates the file named by $LC_READY, once the
 * idle threads are up), park() (blocks forever in a C function), and
 * gettid().  Built with -O0 so that each function is a frame of its own.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The few functions of Lua 5.4's C API this uses, as its ABI has them. */
typedef struct LS LS;
typedef int (*cfn)(LS *);
static LS *(*newstate)(void);
static void (*openlibs)(LS *);
static int (*loadfilex)(LS *, const char *, const char *);
static int (*pcallk)(LS *, int, int, int, intptr_t, void *);
static void (*pushcclosure)(LS *, cfn, int);
static void (*setglobal)(LS *, const char *);
static void (*pushinteger)(LS *, long long);
static const char *(*tolstring)(LS *, int, size_t *);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_cond_t up_cond = PTHREAD_COND_INITIALIZER;
static int up;

static void die(const char *what, const char *why)
{
	fprintf(stderr, "lthost: %s: %s\n", what, why ? why : "?");
	_exit(2);
}

static void *idle_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	up++;
	pthread_cond_broadcast(&up_cond);
	for (;;)
		pthread_cond_wait(&never, &lock);
	return NULL;
}

static void *brief_main(void *arg)
{
	return arg;
}

static void *churn_main(void *arg)
{
	long per_s = (long)(intptr_t)arg;
	struct timespec gap = { 0, 1000000000L / per_s };
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		pthread_t t;

		pthread_create(&t, &attr, brief_main, NULL);
		nanosleep(&gap, NULL);
	}
	return NULL;
}

static __attribute__((noinline)) int l_ready(LS *L)
{
	const char *path = getenv("LC_READY");
	int fd;

	(void)L;
	if (path && (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) >= 0)
		close(fd);
	return 0;
}

static __attribute__((noinline)) void block_forever(void)
{
	pthread_mutex_lock(&lock);
	for (;;)
		pthread_cond_wait(&never, &lock);
}

static __attribute__((noinline)) int l_park(LS *L)
{
	(void)L;
	block_forever();
	return 0;
}

static int l_gettid(LS *L)
{
	pushinteger(L, (long long)gettid());
	return 1;
}

static __attribute__((noinline)) void *lua_main(void *arg)
{
	LS *L = newstate();

	if (!L)
		die("luaL_newstate", "out of memory");
	openlibs(L);
	pushcclosure(L, l_ready, 0);
	setglobal(L, "ready");
	pushcclosure(L, l_park, 0);
	setglobal(L, "park");
	pushcclosure(L, l_gettid, 0);
	setglobal(L, "gettid");
	if (loadfilex(L, arg, NULL) != 0 || pcallk(L, 0, 0, 0, 0, NULL) != 0)
		die("script", tolstring(L, -1, NULL));
	_exit(0);
}

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);

	if (!p)
		die(name, dlerror());
	return p;
}

int main(int argc, char **argv)
{
	long idle = 0, churn = 0, stack_kb = 0;
	int exit_main = 0, c;
	pthread_attr_t attr;
	pthread_t t;
	void *lib;

	while ((c = getopt(argc, argv, "n:s:c:x")) != -1) {
		switch (c) {
		case 'n': idle = atol(optarg); break;
		case 's': stack_kb = atol(optarg); break;
		case 'c': churn = atol(optarg); break;
		case 'x': exit_main = 1; break;
		default: return 64;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: lthost [-n IDLE] [-s KB] [-c PER_S] [-x] SCRIPT\n");
		return 64;
	}
	lib = dlopen(getenv("LTHOST_LIBLUA") ? getenv("LTHOST_LIBLUA") :
		     "liblua5.4.so.0", RTLD_NOW);
	if (!lib)
		die("dlopen", dlerror());
	newstate = sym(lib, "luaL_newstate");
	openlibs = sym(lib, "luaL_openlibs");
	loadfilex = sym(lib, "luaL_loadfilex");
	pcallk = sym(lib, "lua_pcallk");
	pushcclosure = sym(lib, "lua_pushcclosure");
	setglobal = sym(lib, "lua_setglobal");
	pushinteger = sym(lib, "lua_pushinteger");
	tolstring = sym(lib, "lua_tolstring");
	pthread_attr_init(&attr);
	if (stack_kb)
		pthread_attr_setstacksize(&attr, (size_t)stack_kb * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (long i = 0; i < idle; i++)
		if ((errno = pthread_create(&t, &attr, idle_main, NULL)))
			die("pthread_create", strerror(errno));
	pthread_mutex_lock(&lock);
	while (up < idle)
		pthread_cond_wait(&up_cond, &lock);
	pthread_mutex_unlock(&lock);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	if (churn > 0 &&
	    (errno = pthread_create(&t, &attr, churn_main, (void *)(intptr_t)churn)))
		die("pthread_create", strerror(errno));
	pthread_attr_setstacksize(&attr, 1024 * 1024);
	if ((errno = pthread_create(&t, &attr, lua_main, argv[optind])))
		die("pthread_create", strerror(errno));
	if (exit_main)
		pthread_exit(NULL);
	for (;;)
		pause();
}
