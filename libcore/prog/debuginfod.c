/* Debug info from debuginfod, bounded: lc_debuginfod_take (luacore.h).
 *
 * libdw asks debuginfod from inside its standard find callbacks, as
 * often as it is asked (for every module of every session) and waits
 * as long as DEBUGINFOD_TIMEOUT allows each time: a server that accepts
 * and never answers held luacore-inspect for minutes.  Once taken,
 * DEBUGINFOD_URLS is out of the environment except during a call of
 * ours into those callbacks that is allowed to ask: at most one per
 * build-id and kind, none once the run's one DEBUGINFOD_TIMEOUT is
 * spent.  A progress function on the session's client says what it
 * waits for after a second and cancels the wait at the budget.
 *
 * Process-wide state, as the environment is: for the single-threaded
 * tools that call lc_debuginfod_take. */
#include <config.h>

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "prog/program.h"

#define URLS_ENV	"DEBUGINFOD_URLS"
#define TIMEOUT_ENV	"DEBUGINFOD_TIMEOUT"
#define DEFAULT_TIMEOUT	90	/* libdebuginfod's own default */
#define MAX_ASKED	4096

typedef int progress_fn(debuginfod_client *c, long a, long b);

static bool taken;
static char *urls;		/* DEBUGINFOD_URLS as taken, or NULL */
static double budget = DEFAULT_TIMEOUT;
static double spent;		/* seconds the run's requests waited */
static bool gave_up;
static void (*set_progressfn)(debuginfod_client *, progress_fn *);

/* What was asked for: "KIND BUILDID" keys. */
static char *asked[MAX_ASKED];
static size_t nasked;

/* The request under way, for the progress function. */
static struct {
	const char *module, *kind;
	const char *id;
	double t0;
	bool said, cancelled;
} cur;

void lc_debuginfod_take(void)
{
	const char *u, *t;

	if (taken)
		return;
	taken = true;
	u = getenv(URLS_ENV);
	t = getenv(TIMEOUT_ENV);
	if (t && atof(t) > 0)
		budget = atof(t);
	if (u && *u) {
		urls = strdup(u);
		unsetenv(URLS_ENV);
	}
}

static int progress(debuginfod_client *c, long a, long b)
{
	double waited = lc_now_s() - cur.t0;

	(void)c;
	(void)a;
	(void)b;
	if (!cur.module)
		return 0;
	if (!cur.said && waited >= 1.0) {
		cur.said = true;
		lc_log(LC_LOG_NOTICE,
		       "fetching %s of %s (build-id %s) from debuginfod (%s), %.0f s at most",
		       cur.kind, cur.module, cur.id, urls,
		       budget - spent > 0 ? ceil(budget - spent) : 0);
	}
	if (spent + waited > budget) {
		cur.cancelled = true;
		return 1;
	}
	return 0;
}

static bool was_asked(const char *key)
{
	for (size_t i = 0; i < nasked; i++)
		if (strcmp(asked[i], key) == 0)
			return true;
	return false;
}

/* Whether this call may ask debuginfod: then key gets "KIND BUILDID"
 * (hex) and the environment has the URLs until ask_end. */
static bool ask_begin(Dwfl_Module *mod, const char *modname,
		      const char *kind, char *key, size_t size,
		      char **saved_timeout)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n;
	size_t len;
	char t[32];

	if (!urls || gave_up || nasked == MAX_ASKED)
		return false;
	/* The kernel's vDSO: nothing of Lua's, and rarely served. */
	if (modname && (strncmp(modname, "[vdso", 5) == 0 ||
			strncmp(lc_base_name(modname), "linux-vdso", 10) == 0 ||
			strncmp(lc_base_name(modname), "linux-gate", 10) == 0))
		return false;
	n = dwfl_module_build_id(mod, &bits, &vaddr);
	if (n <= 0 || (size_t)n * 2 + strlen(kind) + 2 > size)
		return false;
	len = (size_t)snprintf(key, size, "%s ", kind);
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(key + len, size - len, "%02x", bits[i]);
	if (was_asked(key) || !(asked[nasked] = strdup(key)))
		return false;
	nasked++;
	cur.module = lc_base_name(modname && *modname ? modname : "?");
	cur.kind = kind;
	cur.id = key + strlen(kind) + 1;
	cur.said = cur.cancelled = false;
	cur.t0 = lc_now_s();
	*saved_timeout = getenv(TIMEOUT_ENV) ? strdup(getenv(TIMEOUT_ENV)) :
		       NULL;
	/* libdebuginfod's own timeout for this request: what is left. */
	snprintf(t, sizeof(t), "%.0f", ceil(budget - spent) > 1 ?
		 ceil(budget - spent) : 1);
	setenv(TIMEOUT_ENV, t, 1);
	setenv(URLS_ENV, urls, 1);
	lc_log(LC_LOG_VERBOSE, "looking for %s of %s (build-id %s), locally, then from debuginfod (%s)",
	       kind, cur.module, cur.id, urls);
	return true;
}

static void ask_end(bool found, char *saved_timeout)
{
	double waited = lc_now_s() - cur.t0;

	unsetenv(URLS_ENV);
	if (saved_timeout)
		setenv(TIMEOUT_ENV, saved_timeout, 1);
	else
		unsetenv(TIMEOUT_ENV);
	free(saved_timeout);
	spent += waited;
	if (cur.cancelled || (!found && spent >= budget)) {
		gave_up = true;
		lc_log(LC_LOG_NOTICE,
		       "gave up on debuginfod after %.0f s in all (%s=%g): no %s of %s from it, and no more requests this run",
		       spent, TIMEOUT_ENV, budget, cur.kind, cur.module);
	} else if (cur.said) {
		lc_log(LC_LOG_NOTICE, found ? "got %s of %s in %.1f s" :
			"debuginfod has no %s of %s (%.1f s)",
		       cur.kind, cur.module, waited);
	} else {
		lc_log(LC_LOG_VERBOSE, "%s of %s: %s (%.2f s)", cur.kind,
		       cur.module, found ? "found" : "not found", waited);
	}
	cur.module = NULL;
}

void lc_debuginfod_hook(Dwfl *dwfl)
{
	debuginfod_client *c;

	if (!urls || gave_up)
		return;
	c = dwfl_get_debuginfod_client(dwfl);
	if (!c)
		return;
	if (!set_progressfn) {
		void *so = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_NOLOAD);

		if (so)
			set_progressfn = (void (*)(debuginfod_client *,
						   progress_fn *))
				dlsym(so, "debuginfod_set_progressfn");
	}
	if (set_progressfn)
		set_progressfn(c, progress);
}

int lc_debuginfod_find_debuginfo(Dwfl_Module *mod, void **userdata,
				 const char *modname, Dwarf_Addr base,
				 const char *file_name,
				 const char *debuglink_file,
				 GElf_Word debuglink_crc,
				 char **debuginfo_file_name)
{
	char key[128], *saved = NULL;
	bool ask = ask_begin(mod, modname, "debug info", key, sizeof(key),
			     &saved);
	int fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base,
					      file_name, debuglink_file,
					      debuglink_crc,
					      debuginfo_file_name);

	if (ask)
		ask_end(fd >= 0, saved);
	if (lc_log_wanted(LC_LOG_VERBOSE))
		lc_log(LC_LOG_VERBOSE, "debug info of %s: %s",
		       lc_base_name(modname && *modname ? modname : "?"),
		       fd >= 0 && *debuginfo_file_name ? *debuginfo_file_name :
		       fd >= 0 ? "found" : "none");
	return fd;
}

int lc_debuginfod_find_elf(Dwfl_Module *mod, void **userdata,
			   const char *modname, Dwarf_Addr base,
			   char **file_name, Elf **elfp)
{
	char key[128], *saved = NULL;
	bool ask = ask_begin(mod, modname, "executable", key, sizeof(key),
			     &saved);
	int fd = dwfl_build_id_find_elf(mod, userdata, modname, base,
					file_name, elfp);

	if (ask)
		ask_end(fd >= 0 || *elfp, saved);
	return fd;
}
