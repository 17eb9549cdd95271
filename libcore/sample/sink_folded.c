/* Folded stacks, as flamegraph.pl, inferno and speedscope read them: one
 * "root;...;leaf WEIGHT" line per distinct sample, in the order samples
 * were first seen. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>

#include "sample/profile.h"
#include "sample/sink.h"

/* Semicolons separate frames, so they become ':' in a label (a label has
 * no newline or other control byte: lc_profile_label escapes them); the
 * weight is lc_sink_weight's. */
int lc_profile_write_folded(const struct lc_profile *p, const char *title,
			    FILE *out)
{
	char label[LC_SINK_LABEL_MAX];

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct lc_prof_sample *s = &p->samples[i];
		int64_t w = lc_sink_weight(s);

		for (size_t k = s->nlocs; k-- > 0;) {
			const struct lc_prof_loc *l = &p->locs[s->locs[k]];

			lc_profile_label(p, l->func, label, sizeof(label));
			for (char *c = label; *c; c++)
				if (*c == ';')
					*c = ':';
			if (fputs(label, out) < 0 ||
			    (k && fputc(';', out) == EOF))
				goto io;
		}
		if (fprintf(out, " %" PRId64 "\n", w) < 0)
			goto io;
	}
	if (fflush(out) != 0)
		goto io;
	return 0;
io:
	if (!errno)
		errno = EIO;
	return -1;
}

/* No suffix: the default, for any name the other sinks do not claim. */
static const char *const suffixes[] = { NULL };

const struct lc_sink lc_sink_folded = {
	.name = "folded",
	.suffixes = suffixes,
	.write = lc_profile_write_folded,
	.what = "folded stacks, one \"root;...;leaf WEIGHT\" line per stack",
};
