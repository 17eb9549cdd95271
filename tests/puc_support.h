/* For the unit tests and tools that reach inside the PUC decoder: its
 * layout and a decoder context for a target, as the session opens them. */
#ifndef LC_TESTS_PUC_SUPPORT_H
#define LC_TESTS_PUC_SUPPORT_H

#include "report/session.h"
#include "vm/puc/layout.h"
#include "vm/puc/puc.h"

/* The layout of t's interpreter; the error, if any, is the target's. */
static inline struct lc_error *lc_layout_get(struct lc_target *t,
					     const struct lc_layout **ret)
{
	const struct lc_error *why;
	struct lc_interp *in = lc_target_interp(t, &why);

	*ret = NULL;
	if (!in)
		return (struct lc_error *)why;
	if (in->ops != &lc_puc_ops)
		return lc_error_create(LC_ERR_UNSUPPORTED, "not PUC Lua");
	*ret = in->priv;
	return NULL;
}

/* A decoder context over t (lc_lua_ctx_destroy); the error of a missing
 * layout is the target's. */
static inline struct lc_error *lc_test_ctx(struct lc_target *t,
					   struct lc_lua_ctx **ret)
{
	const struct lc_layout *l = NULL;
	struct lc_error *err = lc_layout_get(t, &l);

	return err ? err : lc_lua_ctx_create(t->prog, l, NULL, ret);
}

#endif
