/* luacore-inspect: mixed C+Lua backtraces of every thread in a core.
 *
 * Exit status: 0 everything shown, 1 partial (something unreadable or
 * suspicious), 2 nothing shown / fatal, 64 usage. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "luacore.h"

#define EXIT_PARTIAL	1
#define EXIT_FATAL	2
#define EXIT_USAGE	64

static void usage(FILE *out)
{
	fputs("Usage: luacore-inspect [OPTIONS] CORE [EXECUTABLE]\n"
	      "Show every thread's mixed C+Lua backtrace from a core file of a\n"
	      "process that embeds Lua 5.1-5.4.\n"
	      "\n"
	      "  --json             print one JSON document (format luacore-inspect/0)\n"
	      "  --max-frames N     at most N frames per thread (default 512)\n"
	      "  -h, --help         show this help\n"
	      "  -V, --version      show the version\n"
	      "\n"
	      "EXECUTABLE defaults to the one named in the core.  Debug info is\n"
	      "found by build-id (/usr/lib/debug, Debian -dbg packages), by\n"
	      ".gnu_debuglink, and through debuginfod when DEBUGINFOD_URLS is set.\n"
	      "\n"
	      "Exit status: 0 all shown, 1 partial result, 2 nothing shown or fatal\n"
	      "error, 64 usage error.\n", out);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "max-frames", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	struct lc_report_options opts = { 0 };
	struct lc_target *t;
	struct lc_report *r;
	struct lc_error *err;
	bool json = false;
	int c, status;

	while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'm': {
			char *end;
			long n = strtol(optarg, &end, 10);

			if (*end || n <= 0 || n > 1000000) {
				fprintf(stderr, "luacore-inspect: --max-frames takes a number from 1 to 1000000\n");
				return EXIT_USAGE;
			}
			opts.max_frames = (int)n;
			break;
		}
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
	if (optind >= argc || argc - optind > 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	err = lc_target_open_core(argv[optind],
				  optind + 1 < argc ? argv[optind + 1] : NULL, &t);
	if (err) {
		fprintf(stderr, "luacore-inspect: %s\n", lc_error_message(err));
		lc_error_destroy(err);
		return EXIT_FATAL;
	}
	err = lc_report_create(t, &opts, &r);
	if (err) {
		fprintf(stderr, "luacore-inspect: %s\n", lc_error_message(err));
		lc_error_destroy(err);
		lc_target_destroy(t);
		return EXIT_FATAL;
	}
	if (json)
		lc_report_print_json(r, stdout);
	else
		lc_report_print_text(r, stdout);
	status = r->partial ? EXIT_PARTIAL : 0;
	if (r->nthreads == 0)
		status = EXIT_FATAL;
	for (size_t i = 0; i < r->nwarnings; i++)
		fprintf(stderr, "luacore-inspect: warning: %s\n", r->warnings[i]);
	if (fflush(stdout) != 0)
		status = EXIT_FATAL;
	lc_report_destroy(r);
	lc_target_destroy(t);
	return status;
}
