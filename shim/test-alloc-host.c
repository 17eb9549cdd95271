/* test-alloc-host: a Lua host linked against a shared liblua, for testing
 * libluacore-alloc.so (Debian's lua5.x interpreters have Lua linked in, so
 * a preloaded shim cannot interpose them).
 *
 *   test-alloc-host [-a std|own|set] [-t THREADS] [-r RUNS] [-f]
 *                   SCRIPT [ARGS...]
 *
 * -a std  luaL_newstate (the library's allocator; the default)
 * -a own  lua_newstate with an allocator of our own
 * -a set  luaL_newstate, then lua_setallocf with ours chained to the
 *         library's, as a host that adds accounting later does
 * -t N    N threads, each running SCRIPT in a VM of its own
 * -r N    each thread runs SCRIPT N times, in a new VM each time (lua_close
 *         in between: the shim frees its records, LuaJIT its arena)
 * -f      one thread: run SCRIPT, fork, run it in the child (no exec) and
 *         in the parent after the child exited; the child must not park
 *
 * With own and set, our allocator counts the bytes of every allocation and
 * realloc that succeeded (the shim's byte line) and the host checks that
 * lua_getallocf gives it back its own allocator, not the shim's wrapper.
 * It prints "host: alloc_bytes=B allocs=N getallocf=own|WRONG" summed over
 * the VMs.  Build against any of 5.1-5.4 or LuaJIT (lua_* API only).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

struct count {
	lua_Alloc next;		/* set: the library's allocator */
	void *next_ud;
	unsigned long long bytes, allocs;
};

struct run {
	pthread_t th;
	struct count c;
	int argc, status, own_ok;
	char **argv;
};

static const char *mode = "std";
static int runs_each = 1;

static void *count_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct count *c = ud;
	void *r;

	if (c->next)
		r = c->next(c->next_ud, ptr, osize, nsize);
	else if (nsize == 0) {
		free(ptr);
		r = NULL;
	} else
		r = realloc(ptr, nsize);
	if (r && nsize) {
		c->bytes += nsize;
		c->allocs++;
	}
	return r;
}

static void run_once(struct run *rn);

static void *run_script(void *arg)
{
	for (int i = 0; i < runs_each; i++)
		run_once(arg);
	return NULL;
}

static void run_once(struct run *rn)
{
	lua_State *L;
	void *ud;
	int i;

	if (strcmp(mode, "own") == 0)
		L = lua_newstate(count_alloc, &rn->c);
	else
		L = luaL_newstate();
	if (!L) {
		fprintf(stderr, "host: cannot make a Lua state\n");
		rn->status = 2;
		return;
	}
	if (strcmp(mode, "set") == 0) {
		Dl_info di;

		rn->c.next = lua_getallocf(L, &rn->c.next_ud);
		/* the library's own l_alloc, not the shim's wrapper */
		if (!dladdr((void *)rn->c.next, &di) || !di.dli_fname ||
		    !strstr(di.dli_fname, "lua")) {
			fprintf(stderr, "host: lua_getallocf gave %s\n",
				di.dli_fname ? di.dli_fname : "?");
			rn->status = 2;
		}
		lua_setallocf(L, count_alloc, &rn->c);
	}
	rn->own_ok = strcmp(mode, "std") == 0 ||
		(lua_getallocf(L, &ud) == count_alloc && ud == &rn->c);
	luaL_openlibs(L);
	lua_createtable(L, rn->argc, 0);
	for (i = 0; i < rn->argc; i++) {
		lua_pushstring(L, rn->argv[i]);
		lua_rawseti(L, -2, i);
	}
	lua_setglobal(L, "arg");
	if (luaL_loadfile(L, rn->argv[0]) ||
	    lua_pcall(L, 0, 0, 0)) {
		fprintf(stderr, "host: %s\n", lua_tostring(L, -1));
		rn->status = 1;
	}
	lua_close(L);
}

int main(int argc, char **argv)
{
	int i = 1, n = 1, status = 0, own_ok = 1, forks = 0;
	unsigned long long bytes = 0, allocs = 0;
	struct run *runs;

	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (strcmp(argv[i], "-f") == 0) {
			forks = 1;
			i--;
		} else if (strcmp(argv[i], "-a") == 0)
			mode = argv[i + 1];
		else if (strcmp(argv[i], "-t") == 0)
			n = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "-r") == 0)
			runs_each = atoi(argv[i + 1]);
		else
			break;
	}
	if (i >= argc || n < 1 || runs_each < 1 || (forks && n > 1) ||
	    (strcmp(mode, "std") &&
	    strcmp(mode, "own") && strcmp(mode, "set"))) {
		fprintf(stderr, "usage: test-alloc-host [-a std|own|set] "
			"[-t THREADS] [-r RUNS] [-f] SCRIPT [ARGS...]\n");
		return 64;
	}
	runs = calloc(n, sizeof *runs);
	if (!runs)
		return 2;
	for (int t = 0; t < n; t++) {
		runs[t].argc = argc - i;
		runs[t].argv = argv + i;
		if (n == 1 && forks) {
			pid_t pid;
			int st = 0;

			run_script(&runs[t]);
			fflush(NULL);
			if ((pid = fork()) == 0) {
				run_script(&runs[t]);
				fflush(NULL);
				_exit(runs[t].status);
			}
			if (pid < 0 || waitpid(pid, &st, 0) < 0 || st)
				runs[t].status |= 2;
			run_script(&runs[t]);
		} else if (n == 1)
			run_script(&runs[t]);
		else if (pthread_create(&runs[t].th, NULL, run_script,
					&runs[t]))
			return 2;
	}
	for (int t = 0; t < n; t++) {
		if (n > 1)
			pthread_join(runs[t].th, NULL);
		status |= runs[t].status;
		own_ok &= runs[t].own_ok;
		bytes += runs[t].c.bytes;
		allocs += runs[t].c.allocs;
	}
	if (strcmp(mode, "std"))
		fprintf(stderr, "host: alloc_bytes=%llu allocs=%llu "
			"getallocf=%s\n", bytes, allocs,
			own_ok ? "own" : "WRONG");
	return status;
}
