/* engine/kernels/kernels.c: the registry of ISA tables and the run-time choice among them.
 *
 * One line per table, best first. meson defines KRN_HAVE_<ISA> for each ISA file it compiled
 * (engine/kernels/meson.build), so a table the compiler could not build is simply absent.
 */
#include <string.h>

#include "kernels.h"

static const struct krn_ops *const tables[] = {
#ifdef KRN_HAVE_AVX512
	&krn_ops_avx512,
#endif
#ifdef KRN_HAVE_AVX2
	&krn_ops_avx2,
#endif
#ifdef KRN_HAVE_NEON
	&krn_ops_neon,
#endif
	&krn_ops_ref,
};

const struct krn_ops *const *krn_ops_all(size_t *n)
{
	*n = sizeof(tables) / sizeof(tables[0]);
	return tables;
}

const struct krn_ops *krn_ops_find(const char *name)
{
	bool best = !name || !strcmp(name, "auto");
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		if (!best && strcmp(tables[i]->name, name))
			continue;
		if (tables[i]->supported())
			return tables[i];
		if (!best)
			return NULL;
	}
	return NULL;
}
