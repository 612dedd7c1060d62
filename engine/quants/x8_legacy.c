/* engine/quants/x8_legacy.c: the x8 layouts (quants.h) of the legacy formats q8_0 and q5_0. */
#include "quants_impl.h"
