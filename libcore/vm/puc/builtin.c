/* Looking up the built-in layouts (the table: builtin-layouts.c). */
#include <config.h>

#include "vm/puc/builtin.h"

const struct lc_layout *lc_layout_builtin(int release)
{
	for (size_t i = 0; i < lc_nbuiltin_layouts; i++)
		for (size_t j = 0; j < LC_BUILTIN_RELEASES &&
		     lc_builtin_layouts[i].releases[j]; j++)
			if (lc_builtin_layouts[i].releases[j] == release)
				return &lc_builtin_layouts[i].layout;
	return NULL;
}
