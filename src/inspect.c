/* luacore-inspect: mixed C+Lua backtraces of every thread in a core or
 * a running process (-p PID).
 *
 * Exit status: 0 everything shown, 1 partial (something unreadable or
 * suspicious), 2 nothing shown / fatal, 64 usage. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "luacore.h"

#define EXIT_PARTIAL	1
#define EXIT_FATAL	2
#define EXIT_USAGE	64

#define LC_ARRAY_MAX	64	/* --state options */

/* A message on stderr.  Messages quote paths and names read from the
 * target: escaped, as the report prints them. */
static void message(const char *kind, const char *msg)
{
	fprintf(stderr, "luacore-inspect: %s", kind);
	lc_print_escaped(msg, stderr);
	fputc('\n', stderr);
}

static int number(const char *arg, long lo, long hi, const char *opt, long *ret)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(arg, &end, 10);
	if (errno || end == arg || *end || n < lo || n > hi) {
		fprintf(stderr, "luacore-inspect: %s takes a number from %ld to %ld\n",
			opt, lo, hi);
		return -1;
	}
	*ret = n;
	return 0;
}

static int address(const char *arg, const char *opt, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || end == arg || *end || v == 0) {
		fprintf(stderr, "luacore-inspect: %s takes an address such as 0x55d0c0a012a0\n",
			opt);
		return -1;
	}
	*ret = v;
	return 0;
}

/* A live target must not stay stopped whatever ends us: detach, then
 * die of the signal as we would have. */
static void on_fatal_signal(int sig)
{
	lc_live_release_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Nor stay stopped while we are (Ctrl-Z, a background read or write of
 * the terminal): let it go, then stop.  After SIGCONT the report is read
 * again from a new stop (main). */
static void on_stop_signal(int sig)
{
	lc_live_stop_self(sig);
}

static void release_on_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE,
				    SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	static const int stops[] = { SIGTSTP, SIGTTIN, SIGTTOU };
	struct sigaction sa = { .sa_handler = on_fatal_signal };

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		sigaction(stops[i], &sa, NULL);
}

static void usage(FILE *out)
{
	fputs("Usage: luacore-inspect [OPTIONS] CORE [EXECUTABLE]\n"
	      "       luacore-inspect [OPTIONS] -p PID\n"
	      "Show every thread's mixed C+Lua backtrace from a core file of a\n"
	      "process that embeds Lua 5.1-5.5, or from a running one.\n"
	      "\n"
	      "  -p, --pid PID      a running process: stop it with ptrace, copy its\n"
	      "                     writable memory, let it go on (the stop time is\n"
	      "                     shown), then decode the copy\n"
	      "  --json             print one JSON document (format luacore-inspect/1)\n"
	      "  --max-frames N     at most N frames per thread (default 512)\n"
	      "  --locals           show locals, varargs and upvalues of Lua frames\n"
	      "  --stack            show every data-stack slot, and stale ones above top\n"
	      "  --residue N        stale slots above top shown with --stack (default 16)\n"
	      "  --thread TID       only this OS thread\n"
	      "  --vm ADDR          only the VM whose global_State is at ADDR\n"
	      "  --state ADDR       also decode the lua_State at ADDR\n"
	      "  --vm-name GLOBAL   name each VM by the string value of its global\n"
	      "                     GLOBAL (skynet: SERVICE_NAME)\n"
	      "  --no-native        Lua frames only\n"
	      "  --no-scan          do not scan memory for VMs idle on no thread\n"
	      "  --types FILE       the Lua layout from FILE's DWARF (any ELF: the\n"
	      "                     program's lstate.c compiled with -g, a debug\n"
	      "                     file), for a Lua of its own; checked against\n"
	      "                     memory before use\n"
	      "  --layout X.Y.Z     the built-in layout of that Lua release\n"
	      "  --debuginfo-path PATH  where separate debug files are looked for\n"
	      "                     (default \":.debug:/usr/lib/debug\"; as eu-stack)\n"
	      "  --no-copy          with -p: no copy; read the process while it is\n"
	      "                     stopped, for as long as the report takes\n"
	      "  --copy-limit MB    copy at most MB megabytes (default 4096, or half\n"
	      "                     the memory available if less)\n"
	      "  --stop-budget MS   copy for at most MS milliseconds; what is left\n"
	      "                     is read while the process runs, and said so\n"
	      "  --nonblocking      with -p: never stop the process; read it as it\n"
	      "                     runs, until two reads agree (at most 5); a\n"
	      "                     running thread has no machine stack\n"
	      "\n"
	      "Heap (instead of backtraces):\n"
	      "  --heap             a census of every VM's heap: objects by type with\n"
	      "                     the bytes the VM would free, strings, tables,\n"
	      "                     functions by definition, userdata by metatable,\n"
	      "                     threads; the total against the VM's own count\n"
	      "  --top N            entries per list (default 20)\n"
	      "  --paths            the shortest path from the GC roots of every\n"
	      "                     listed table and string\n"
	      "  --path ADDR        the shortest path to the object at ADDR (repeat)\n"
	      "  --strong           paths through strong references only\n"
	      "  --heap-save FILE   write every object to FILE, a baseline for --diff\n"
	      "  --diff BASE        what is new since BASE (a --heap-save file or a\n"
	      "                     core of the same process), grouped by class and\n"
	      "                     path, growth first\n"
	      "  --pprof FILE       a pprof heap profile (inuse_space, inuse_objects)\n"
	      "  --pprof-by WHAT    path (by retaining path, the default) or class\n"
	      "\n"
	      "  -v, --verbose      say what it is doing on stderr (modules, debug\n"
	      "                     info, layouts, scans, copies)\n"
	      "  -h, --help         show this help\n"
	      "  -V, --version      show the version\n"
	      "\n"
	      "EXECUTABLE defaults to the one named in the core.  Debug info is\n"
	      "found by build-id (/usr/lib/debug, Debian -dbg packages), by\n"
	      ".gnu_debuglink, and through debuginfod when DEBUGINFOD_URLS is set:\n"
	      "once per build-id, all waits within one DEBUGINFOD_TIMEOUT (default\n"
	      "90 s), said on stderr after a second.\n"
	      "\n"
	      "Exit status: 0 all shown, 1 partial result, 2 nothing shown or fatal\n"
	      "error (ptrace refused, no such process...), 64 usage error.\n", out);
}

/* MemAvailable of /proc/meminfo in bytes, 0 unknown: the copy of a
 * process's memory stays within half of it by default. */
static uint64_t mem_available(void)
{
	char line[256];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb << 10;
}

/* After a report is printed: its warnings, and the exit status from
 * status as far as it goes (no thread shown, or stdout not written, is
 * fatal). */
static int report_end(const struct lc_report *r, int status)
{
	if (r->nthreads == 0)
		status = EXIT_FATAL;
	for (size_t i = 0; i < r->nwarnings; i++)
		message("warning: ", r->warnings[i]);
	if (fflush(stdout) != 0)
		status = EXIT_FATAL;
	return status;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The report as text: what two reads are compared by. */
static char *report_text(const struct lc_report *r, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	lc_report_print_text(r, f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The section of text for "Thread TID", or the VM list (tid 0); *len
 * its length. */
static const char *section(const char *text, int tid, size_t *len)
{
	char head[32];
	const char *p, *e;

	if (tid)
		snprintf(head, sizeof(head), "\nThread %d", tid);
	else
		snprintf(head, sizeof(head), "\nVMs: ");
	for (p = strstr(text, head); p; p = strstr(p + 1, head))
		if (tid == 0 || p[strlen(head)] == ' ' || p[strlen(head)] == '\n' ||
		    p[strlen(head)] == '(' || p[strlen(head)] == ':')
			break;
	if (!p) {
		*len = 0;
		return "";
	}
	/* A thread's section ends at a blank line; the VM list, whose VMs
	 * blank lines part, at the end. */
	e = tid ? strstr(p + 1, "\n\n") : NULL;
	*len = e ? (size_t)(e - p) : strlen(p);
	return p;
}

/* --types FILE, --layout X.Y.Z: where the Lua layout comes from. */
static const char *layout_types, *layout_release;

/* Up to this many reads of a running process, until two in a row agree. */
#define NONBLOCKING_READS	5

/* -p --nonblocking: the process is never stopped.  Each read lists its
 * threads afresh (where each sleeps; modules, symbols and layout are
 * read once) and reads everything as it runs;
 * a read that agrees with the one before is consistent.  When none
 * does, the last is shown, marked, with the threads whose stacks
 * differed. */
static int inspect_nonblocking(int pid, const struct lc_report_options *opts,
			       bool json)
{
	struct lc_report *r = NULL, *prev = NULL;
	struct lc_target *t = NULL;
	char *text = NULL, *prev_text = NULL;
	size_t len = 0, prev_len = 0;
	int reads = 0, status;
	bool agree = false;
	double t0 = now_s();

	for (reads = 0; reads < NONBLOCKING_READS && !agree; reads++) {
		struct lc_error *err = t ? lc_target_relist(t) :
				       lc_target_attach_nonblocking(pid, &t);

		if (!err && reads == 0 && (layout_types || layout_release))
			err = lc_target_set_layout(t, layout_types, layout_release);

		if (!err)
			err = lc_report_create(t, opts, &r);
		if (err) {
			message("", lc_error_message(err));
			lc_error_destroy(err);
			if (prev)
				lc_report_destroy(prev);
			lc_target_destroy(t);
			free(prev_text);
			return EXIT_FATAL;
		}
		text = report_text(r, &len);
		agree = text && prev_text && len == prev_len &&
			memcmp(text, prev_text, len) == 0;
		if (prev)
			lc_report_destroy(prev);
		free(prev_text);
		prev = r;
		prev_text = text;
		prev_len = len;
		text = NULL;
	}
	if (json)
		lc_report_print_json(prev, stdout);
	else
		lc_report_print_text(prev, stdout);
	status = prev->partial ? EXIT_PARTIAL : 0;
	if (agree) {
		fprintf(stderr, "luacore-inspect: read without stopping process %d: %d reads in %.0f ms, the last two agree\n",
			pid, reads, (now_s() - t0) * 1e3);
	} else {
		/* One more read, only to name what kept changing. */
		struct lc_report *r2 = NULL;
		char *text2 = NULL, *names = NULL;
		size_t len2 = 0, nlen = 0;
		FILE *nf = open_memstream(&names, &nlen);
		int ndiff = 0;

		struct lc_error *e2 = lc_target_relist(t);

		if (!e2)
			e2 = lc_report_create(t, opts, &r2);
		if (!e2)
			text2 = report_text(r2, &len2);
		lc_error_destroy(e2);
		for (size_t i = 0; nf && text2 && i <= prev->nthreads; i++) {
			int tid = i < prev->nthreads ? prev->threads[i].tid : 0;
			size_t a, b;
			const char *sa = section(prev_text, tid, &a);
			const char *sb = section(text2, tid, &b);

			if (a == b && memcmp(sa, sb, a) == 0)
				continue;
			if (tid)
				fprintf(nf, "%sthread %d", ndiff ? ", " : "", tid);
			else
				fprintf(nf, "%sthe VM list", ndiff ? ", " : "");
			ndiff++;
		}
		if (nf)
			fclose(nf);
		fprintf(stderr, "luacore-inspect: read without stopping process %d: %d reads in %.0f ms and no two in a row agree: it changed while it was read%s%s; what is shown is the last read, and may not hold together\n",
			pid, reads, (now_s() - t0) * 1e3,
			ndiff ? "; a read after it differs in " : "",
			ndiff ? names : "");
		free(names);
		free(text2);
		if (r2)
			lc_report_destroy(r2);
		status = EXIT_PARTIAL;
	}
	status = report_end(prev, status);
	free(prev_text);
	lc_report_destroy(prev);
	lc_target_destroy(t);
	return status;
}

/* --heap: the census and what else was asked, printed; the exit status. */
static int run_heap(struct lc_target *t, const struct lc_heap_options *ho,
		    bool json, const char *save, const char *pprof,
		    bool pprof_by_path)
{
	struct lc_heap *h;
	struct lc_error *err = lc_heap_create(t, ho, &h);
	int status;

	if (err) {
		message("", lc_error_message(err));
		lc_error_destroy(err);
		return EXIT_FATAL;
	}
	if (json)
		lc_heap_print_json(h, stdout);
	else
		lc_heap_print_text(h, stdout);
	status = lc_heap_partial(h) ? EXIT_PARTIAL : 0;
	for (int k = 0; k < 2; k++) {
		const char *path = k ? pprof : save;
		FILE *f;

		if (!path)
			continue;
		if (!(f = fopen(path, "wb"))) {
			fprintf(stderr, "luacore-inspect: cannot write %s: %s\n", path,
				strerror(errno));
			status = EXIT_FATAL;
			continue;
		}
		err = k ? lc_heap_write_pprof(h, pprof_by_path, f) :
			lc_heap_save(h, f);
		if (fclose(f) != 0 && !err) {
			fprintf(stderr, "luacore-inspect: cannot write %s: %s\n", path,
				strerror(errno));
			status = EXIT_FATAL;
		}
		if (err) {
			message("", lc_error_message(err));
			lc_error_destroy(err);
			status = EXIT_FATAL;
		}
	}
	lc_heap_destroy(h);
	if (fflush(stdout) != 0)
		status = EXIT_FATAL;
	return status;
}

/* The library's lines (lc_set_log), on stderr. */
static void say(void *arg, enum lc_log_level level, const char *msg)
{
	(void)arg;
	(void)level;
	fprintf(stderr, "luacore-inspect: %s\n", msg);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "max-frames", required_argument, NULL, 'm' },
		{ "locals", no_argument, NULL, 'l' },
		{ "stack", no_argument, NULL, 's' },
		{ "residue", required_argument, NULL, 'r' },
		{ "thread", required_argument, NULL, 't' },
		{ "vm", required_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "copy", no_argument, NULL, 'C' },
		{ "no-copy", no_argument, NULL, 'c' },
		{ "nonblocking", no_argument, NULL, 'b' },
		{ "copy-limit", required_argument, NULL, 'L' },
		{ "stop-budget", required_argument, NULL, 'B' },
		{ "state", required_argument, NULL, 'S' },
		{ "no-native", no_argument, NULL, 'n' },
		{ "no-scan", no_argument, NULL, 'N' },
		{ "vm-name", required_argument, NULL, 'G' },
		{ "types", required_argument, NULL, 'T' },
		{ "layout", required_argument, NULL, 'Y' },
		{ "debuginfo-path", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "pid", required_argument, NULL, 'p' },
		{ "heap", no_argument, NULL, 'H' },
		{ "top", required_argument, NULL, 'k' },
		{ "paths", no_argument, NULL, 'P' },
		{ "path", required_argument, NULL, 'A' },
		{ "strong", no_argument, NULL, 'W' },
		{ "heap-save", required_argument, NULL, 'F' },
		{ "diff", required_argument, NULL, 'd' },
		{ "pprof", required_argument, NULL, 'R' },
		{ "pprof-by", required_argument, NULL, 'y' },
		{ 0 }
	};
	struct lc_report_options opts = { 0 };
	struct lc_target *t;
	struct lc_report *r;
	struct lc_error *err;
	bool json = false, residue_set = false, verbose = false;
	bool copy = true, copy_done = false, complete = true;
	bool limit_set = false, nonblocking = false;
	uint64_t copy_limit = (uint64_t)4 << 30, copied = 0, mapped = 0;
	double stop_budget = 1e9;
	uint64_t states[LC_ARRAY_MAX];
	size_t nstates = 0;
	struct lc_heap_options ho = { 0 };
	uint64_t path_to[LC_ARRAY_MAX];
	bool heap = false, pprof_by_path = true;
	const char *heap_save = NULL, *pprof = NULL;
	long n, pid = 0;
	int c, status;

	while ((c = getopt_long(argc, argv, "hVvp:", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (number(optarg, 1, INT32_MAX, "-p", &pid) < 0)
				return EXIT_USAGE;
			break;
		case 'j':
			json = true;
			break;
		case 'm':
			if (number(optarg, 1, 1000000, "--max-frames", &n) < 0)
				return EXIT_USAGE;
			opts.max_frames = (int)n;
			break;
		case 'r':
			if (number(optarg, 0, 100000, "--residue", &n) < 0)
				return EXIT_USAGE;
			opts.residue = (int)n;
			residue_set = true;
			break;
		case 't':
			if (number(optarg, 1, INT32_MAX, "--thread", &n) < 0)
				return EXIT_USAGE;
			opts.tid = (int)n;
			break;
		case 'v':
			verbose = true;
			break;
		case 'C':
			copy = true;
			break;
		case 'c':
			copy = false;
			break;
		case 'b':
			nonblocking = true;
			break;
		case 'L':
			if (number(optarg, 1, 1 << 30, "--copy-limit", &n) < 0)
				return EXIT_USAGE;
			copy_limit = (uint64_t)n << 20;
			limit_set = true;
			copy = true;
			break;
		case 'B':
			if (number(optarg, 1, 1 << 30, "--stop-budget", &n) < 0)
				return EXIT_USAGE;
			stop_budget = (double)n / 1e3;
			copy = true;
			break;
		case 'M':
			if (address(optarg, "--vm", &opts.vm) < 0)
				return EXIT_USAGE;
			break;
		case 'S':
			if (nstates == LC_ARRAY_MAX ||
			    address(optarg, "--state", &states[nstates]) < 0)
				return EXIT_USAGE;
			nstates++;
			break;
		case 'l':
			opts.locals = true;
			break;
		case 's':
			opts.stack = true;
			break;
		case 'n':
			opts.no_native = true;
			break;
		case 'N':
			opts.no_scan = true;
			break;
		case 'G':
			opts.vm_name = optarg;
			break;
		case 'T':
			layout_types = optarg;
			break;
		case 'D':
			lc_set_debuginfo_path(optarg);
			break;
		case 'Y':
			layout_release = optarg;
			break;
		case 'H':
			heap = true;
			break;
		case 'k':
			if (number(optarg, 1, 1000, "--top", &n) < 0)
				return EXIT_USAGE;
			ho.top = (size_t)n;
			break;
		case 'P':
			ho.paths = heap = true;
			break;
		case 'A':
			if (ho.npath_to == LC_ARRAY_MAX ||
			    address(optarg, "--path", &path_to[ho.npath_to]) < 0)
				return EXIT_USAGE;
			ho.npath_to++;
			heap = true;
			break;
		case 'W':
			ho.strong = true;
			break;
		case 'F':
			heap_save = optarg;
			ho.snapshot = heap = true;
			break;
		case 'd':
			ho.baseline = optarg;
			heap = true;
			break;
		case 'R':
			pprof = optarg;
			heap = true;
			break;
		case 'y':
			if (strcmp(optarg, "path") == 0)
				pprof_by_path = true;
			else if (strcmp(optarg, "class") == 0)
				pprof_by_path = false;
			else {
				fputs("luacore-inspect: --pprof-by takes path or class\n",
				      stderr);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			puts(PACKAGE_STRING);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	lc_set_log(say, NULL, verbose ? LC_LOG_VERBOSE : LC_LOG_NOTICE);
	lc_debuginfod_take();
	if (!residue_set)
		opts.residue = 16;
	opts.states = states;
	opts.nstates = nstates;
	if (pid ? optind != argc : (optind >= argc || argc - optind > 2)) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (nonblocking && !pid) {
		fputs("luacore-inspect: --nonblocking reads a running process: give -p PID\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (pid && nonblocking && heap) {
		fputs("luacore-inspect: --heap reads a heap that holds still: it stops the process while it copies it; leave out --nonblocking\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (pid && nonblocking)
		return inspect_nonblocking((int)pid, &opts, json);
	ho.vm = opts.vm;
	ho.path_to = path_to;
	if (pprof && pprof_by_path)
		ho.pprof_paths = true;
	if (!pid && optind + 1 < argc)
		ho.baseline_exe = argv[optind + 1];
	if (pid)
		release_on_signals();
	if (pid && copy && !limit_set) {
		uint64_t half = mem_available() / 2;

		if (half && half < copy_limit)
			copy_limit = half;
	}
	for (;;) {
		unsigned long releases = lc_live_releases();

		if (pid && copy) {
			/* Copy while stopped, let it go, decode the copy. */
			err = lc_target_attach_copy((int)pid, copy_limit,
						    stop_budget, &copied,
						    &mapped, &complete, &t);
			copy_done = !err;
		} else if (pid)
			err = lc_target_attach((int)pid, &t);
		else
			err = lc_target_open_core(argv[optind], optind + 1 < argc ?
						  argv[optind + 1] : NULL, &t);
		if (err && pid && lc_live_releases() != releases) {
			/* Stopped (job control) in the middle of the stop. */
			lc_error_destroy(err);
			continue;
		}
		if (!err && (layout_types || layout_release) &&
		    (err = lc_target_set_layout(t, layout_types,
						layout_release))) {
			int code = lc_error_code(err) == LC_ERR_INVALID ?
				   EXIT_USAGE : EXIT_FATAL;

			message("", lc_error_message(err));
			lc_error_destroy(err);
			lc_target_destroy(t);
			return code;
		}
		if (err) {
			message("", lc_error_message(err));
			lc_error_destroy(err);
			return EXIT_FATAL;
		}
		if (heap) {
			if (pid) {
				lc_target_detach(t);
				fprintf(stderr, "luacore-inspect: process %ld was stopped for %.1f ms%s\n",
					pid, lc_target_stopped_seconds(t) * 1e3,
					copy_done ? " while its writable memory was copied" : "");
			}
			status = run_heap(t, &ho, json, heap_save, pprof,
					  pprof_by_path);
			if (copy_done && (!complete || lc_target_copy_misses(t)) &&
			    !status)
				status = EXIT_PARTIAL;
			lc_target_destroy(t);
			return status;
		}
		err = lc_report_create(t, &opts, &r);
		if (!pid)
			break;
		/* Everything is read: let the process go on before
		 * printing. */
		lc_target_detach(t);
		if (lc_live_releases() == releases) {
			if (!err)
				r->stopped_seconds = lc_target_stopped_seconds(t);
			break;
		}
		/* We were stopped (job control) while the process was, and
		 * let it go first: what was read since may be of it running.
		 * Read it again, from a new stop. */
		fprintf(stderr, "luacore-inspect: stopped by job control while process %ld was stopped; it was let go first: reading it again\n",
			pid);
		if (err)
			lc_error_destroy(err);
		else
			lc_report_destroy(r);
		lc_target_destroy(t);
	}
	if (err) {
		message("", lc_error_message(err));
		lc_error_destroy(err);
		lc_target_destroy(t);
		return EXIT_FATAL;
	}
	if (json)
		lc_report_print_json(r, stdout);
	else
		lc_report_print_text(r, stdout);
	status = r->partial ? EXIT_PARTIAL : 0;
	if (copy_done && (!complete || lc_target_copy_misses(t))) {
		fprintf(stderr, "luacore-inspect: the copy holds %.1f MB of the %.1f MB of writable memory (cut at the copy limit, %llu MB, or the stop budget: --copy-limit, --stop-budget); %llu reads of the rest were made while the process ran on, and may not agree with the copy\n",
			(double)copied / 1e6, (double)mapped / 1e6,
			(unsigned long long)(copy_limit >> 20),
			(unsigned long long)lc_target_copy_misses(t));
		if (!status)
			status = EXIT_PARTIAL;
	}
	status = report_end(r, status);
	lc_report_destroy(r);
	lc_target_destroy(t);
	return status;
}
