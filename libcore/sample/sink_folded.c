/* Folded stacks, as flamegraph.pl, inferno and speedscope read them: one
 * "root;...;leaf COUNT" line per distinct stack of frame labels, in the
 * order the stacks were first seen.  The count is the number of samples
 * (folded_cpu: microseconds of CPU or wall time; an allocation profile:
 * bytes allocated); with folded_vm a stack
 * of a VM starts with its name, "[vm NAME]". */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "sample/profile.h"
#include "sample/sink.h"

/* A distinct stack: the function ids of a sample, root first, after the
 * VM's name id (UINT32_MAX for none) when stacks are split by VM. */
struct stack {
	const struct lc_prof_sample *first;	/* the sample that made it */
	uint32_t vm_name;
	int64_t count, us;
};

struct stacks {
	struct stack *v;
	size_t n;
	uint32_t *slots;	/* 1 + index into v, 0 free */
	size_t cap;
};

static uint32_t func_at(const struct lc_profile *p,
			const struct lc_prof_sample *s, size_t k)
{
	return s->locs[k] < p->nlocs ? p->locs[s->locs[k]].func : UINT32_MAX;
}

static uint64_t stack_hash(const struct lc_profile *p,
			   const struct lc_prof_sample *s, uint32_t vm_name)
{
	uint64_t h = 1469598103934665603ull ^ vm_name;

	for (size_t k = 0; k < s->nlocs; k++)
		h = (h ^ func_at(p, s, k)) * 1099511628211ull;
	return (h ^ s->nlocs) * 0x9E3779B97F4A7C15ull;
}

static bool same_stack(const struct lc_profile *p, const struct stack *st,
		       const struct lc_prof_sample *s, uint32_t vm_name)
{
	const struct lc_prof_sample *f = st->first;

	if (st->vm_name != vm_name || f->nlocs != s->nlocs)
		return false;
	for (size_t k = 0; k < s->nlocs; k++)
		if (func_at(p, f, k) != func_at(p, s, k))
			return false;
	return true;
}

/* The VM's name's string id, UINT32_MAX when stacks are not split or it
 * has none. */
static uint32_t vm_name_of(const struct lc_profile *p,
			   const struct lc_prof_sample *s)
{
	if (!p->folded_vm || !s->vm)
		return UINT32_MAX;
	for (size_t i = 0; i < p->nvms; i++)
		if (p->vms[i].vm == s->vm && p->vms[i].name)
			return p->vms[i].name;
	return UINT32_MAX;
}

static int collect(const struct lc_profile *p, struct stacks *t)
{
	t->cap = 64;
	while (t->cap < 2 * (p->nsamples + 1))
		t->cap *= 2;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	t->v = calloc(p->nsamples ? p->nsamples : 1, sizeof(*t->v));
	if (!t->slots || !t->v)
		return -1;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct lc_prof_sample *s = &p->samples[i];
		uint32_t vn = vm_name_of(p, s);
		size_t h = (size_t)(stack_hash(p, s, vn) & (t->cap - 1));
		struct stack *st = NULL;

		for (; t->slots[h]; h = (h + 1) & (t->cap - 1))
			if (same_stack(p, &t->v[t->slots[h] - 1], s, vn)) {
				st = &t->v[t->slots[h] - 1];
				break;
			}
		if (!st) {
			st = &t->v[t->n++];
			st->first = s;
			st->vm_name = vn;
			t->slots[h] = (uint32_t)t->n;
		}
		st->count += s->count;
		st->us += lc_sink_weight(p, s);
	}
	return 0;
}

/* Semicolons separate frames, so they become ':' in a label (a label has
 * no newline or other control byte: lc_profile_label escapes them). */
static int put_label(FILE *out, char *label)
{
	for (char *c = label; *c; c++)
		if (*c == ';')
			*c = ':';
	return fputs(label, out);
}

int lc_profile_write_folded(const struct lc_profile *p, const char *title,
			    FILE *out)
{
	char label[LC_SINK_LABEL_MAX], esc[LC_SINK_LABEL_MAX - 8];
	struct stacks t = { 0 };
	int r = -1;

	(void)title;
	if (collect(p, &t) < 0) {
		errno = ENOMEM;
		goto out;
	}
	errno = 0;
	for (size_t i = 0; i < t.n; i++) {
		const struct stack *st = &t.v[i];
		const struct lc_prof_sample *s = st->first;

		if (st->vm_name != UINT32_MAX) {
			lc_esc_copy(esc, sizeof(esc), p->strings[st->vm_name]);
			snprintf(label, sizeof(label), "[vm %s]", esc);
			if (put_label(out, label) < 0 ||
			    (s->nlocs && fputc(';', out) == EOF))
				goto io;
		}
		for (size_t k = s->nlocs; k-- > 0;) {
			lc_profile_label(p, func_at(p, s, k), label,
					 sizeof(label));
			if (put_label(out, label) < 0 ||
			    (k && fputc(';', out) == EOF))
				goto io;
		}
		if (fprintf(out, " %" PRId64 "\n",
			    p->folded_cpu || p->alloc ? st->us : st->count) < 0)
			goto io;
	}
	r = lc_sink_finish(out);
	goto out;
io:
	if (!errno)
		errno = EIO;
out:
	free(t.slots);
	free(t.v);
	return r;
}

/* No suffix: the default, for any name the other sinks do not claim. */
static const char *const suffixes[] = { NULL };

const struct lc_sink lc_sink_folded = {
	.name = "folded",
	.suffixes = suffixes,
	.write = lc_profile_write_folded,
	.what = "folded stacks, one \"root;...;leaf COUNT\" line per stack",
};
