/* The sinks' table, and the choice of a sink by name or by file name. */
#include <config.h>

#include <stdbool.h>
#include <string.h>

#include "sample/sink.h"

const struct lc_sink *const lc_sinks[] = {
	&lc_sink_folded,
	&lc_sink_pprof,
	&lc_sink_svg,
	&lc_sink_speedscope,
	NULL,
};

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && strcmp(s + n - m, suf) == 0;
}

/* No suffix of one sink ends another's, so no name has the suffixes of
 * two sinks and the order they are tried in does not matter. */
const struct lc_sink *lc_sink_for(const char *path, const char *name)
{
	if (name) {
		for (size_t i = 0; lc_sinks[i]; i++)
			if (strcmp(lc_sinks[i]->name, name) == 0)
				return lc_sinks[i];
		return NULL;
	}
	for (size_t i = 0; path && lc_sinks[i]; i++)
		for (const char *const *s = lc_sinks[i]->suffixes; s && *s; s++)
			if (has_suffix(path, *s))
				return lc_sinks[i];
	return lc_sinks[0];
}
