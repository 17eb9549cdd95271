/* test-alloc-dlopen [LIB]: a host that loads a shared Lua library with
 * dlopen(RTLD_LOCAL), as a plugin or an extension module does.  The
 * library's own calls to lua_newstate (from luaL_newstate) still bind to a
 * preloaded shim, which cannot find the library with RTLD_NEXT: it must
 * forward them to the library, not crash.  Runs a chunk that allocates and
 * prints "dlopen: 100000".  LIB defaults to liblua5.4.so.0. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

typedef struct lua_State lua_State;

int main(int argc, char **argv)
{
	const char *lib = argc > 1 ? argv[1] : "liblua5.4.so.0";
	const char *chunk = "local t = {} for i = 1, 100000 do t[i] = { i } end "
		"print('dlopen: ' .. #t)";
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	lua_State *(*newstate)(void);
	void (*openlibs)(lua_State *), (*close)(lua_State *);
	int (*load)(lua_State *, const char *);
	int (*pcallk)(lua_State *, int, int, int, long, void *);
	lua_State *L;

	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	newstate = (lua_State *(*)(void))dlsym(h, "luaL_newstate");
	openlibs = (void (*)(lua_State *))dlsym(h, "luaL_openlibs");
	close = (void (*)(lua_State *))dlsym(h, "lua_close");
	load = (int (*)(lua_State *, const char *))dlsym(h, "luaL_loadstring");
	pcallk = (int (*)(lua_State *, int, int, int, long, void *))
		dlsym(h, "lua_pcallk");	/* 5.2+ */
	if (!newstate || !openlibs || !close || !load || !pcallk) {
		fprintf(stderr, "%s: not a Lua 5.2+ library\n", lib);
		return 2;
	}
	if (!(L = newstate())) {
		fprintf(stderr, "luaL_newstate failed\n");
		return 1;
	}
	openlibs(L);
	if (load(L, chunk) || pcallk(L, 0, 0, 0, 0, NULL)) {
		fprintf(stderr, "the chunk failed\n");
		return 1;
	}
	close(L);
	return 0;
}
