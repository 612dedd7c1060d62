/* engine/quants/x8_kquants.c: the x8 layouts (quants.h) of the K-quants q4_K, q5_K, q6_K. */
#include "quants_impl.h"
