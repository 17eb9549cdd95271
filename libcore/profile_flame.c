/* Speedscope JSON and the SVG flame graph.  (Being written.) */
#include <config.h>

#include <errno.h>

#include "profile.h"

int lc_profile_write_speedscope(const struct lc_profile *p, FILE *out)
{
	(void)p;
	(void)out;
	errno = ENOSYS;
	return -1;
}

int lc_profile_write_svg(const struct lc_profile *p, const char *title,
			 FILE *out)
{
	(void)p;
	(void)title;
	(void)out;
	errno = ENOSYS;
	return -1;
}
