/* What the library says it is doing: lc_set_log (luacore.h).  One
 * handler for the process; lines are formatted only when wanted. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>

#include "base/base.h"

static lc_log_fn *log_fn;
static void *log_arg;
static enum lc_log_level log_max;

void lc_set_log(lc_log_fn *fn, void *arg, enum lc_log_level max)
{
	log_fn = fn;
	log_arg = arg;
	log_max = max;
}

bool lc_log_wanted(enum lc_log_level level)
{
	return log_fn && level <= log_max;
}

void lc_log(enum lc_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (!lc_log_wanted(level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_fn(log_arg, level, line);
}
