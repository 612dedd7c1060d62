/* engine/kernels/exp.h: the exponential of SwiGLU's SiLU, the same in every table.
 *
 * e^x for a float x, evaluated in double and rounded once to float: x = k ln2 + r with k an
 * integer (nearest, ties to even) and |r| <= ln2 / 2, then e^r by its Taylor series to r^11
 * (the first term left out is below 7e-15 of the sum) and e^x = e^r 2^k. Before the final
 * rounding the double is within about 1e-14 of e^x, so the float is the correctly rounded
 * e^x unless e^x lies that close to a halfway point between two floats: then it may be an
 * ulp off, as glibc's expf may be (tests/engine/test_kernels.c counts both against each other).
 * Why not expf itself: a vector table evaluates 16 of these in the time libm takes for one
 * or two, and a table-free polynomial is the same few lines in every ISA.
 *
 * ln2 is split Cody-Waite style (Cody and Waite, "Software Manual for the Elementary
 * Functions", 1980): LN2_HI has 33 significant bits, so k * LN2_HI is exact for |k| < 2^20,
 * and LN2_LO carries the rest. x is first clamped to [-150, 150] (NaN stays NaN): e^150
 * overflows float and e^-150 underflows it, as larger magnitudes would.
 */
#ifndef MEMWALL_KERNELS_EXP_H
#define MEMWALL_KERNELS_EXP_H

#define KRN_EXP_CLAMP  150.0
#define KRN_EXP_INVLN2 0x1.71547652b82fep0 /* 1 / ln 2 */
#define KRN_EXP_LN2_HI 0x1.62e42feep-1
#define KRN_EXP_LN2_LO 0x1.a39ef35793c76p-33

/* 1 / j! for the series' terms j = 2..11 (terms 0 and 1 are 1), in Horner order. */
#define KRN_EXP_TAYLOR                                                                           \
	{ 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720,      \
	  1.0 / 120,      1.0 / 24,      1.0 / 6,      1.0 / 2 }
#define KRN_EXP_TERMS 10

#endif
