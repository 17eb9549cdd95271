/* pprof output: profile.proto, gzipped.  (Being written.) */
#include <config.h>

#include <errno.h>

#include "profile.h"

int lc_profile_write_pprof(const struct lc_profile *p, FILE *out)
{
	(void)p;
	(void)out;
	errno = ENOSYS;
	return -1;
}
