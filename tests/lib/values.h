/* tests/lib/values.h: small computations the tests make on what they got: the largest logit,
 * a figure out of a line of text. */
#ifndef MEMWALL_TEST_VALUES_H
#define MEMWALL_TEST_VALUES_H

#include <stddef.h>

/* The index of the largest of v[0..n) (the first of equal ones): greedy decoding. */
int t_argmax(const float *v, int n);

/* The number after " name=" in s (a line the engine prints); -1 and a failed check where s
 * has none. */
double t_key_num(const char *s, const char *name);

/* The median of v[0..n), which it sorts; NaN when n is 0. */
double t_median(double *v, size_t n);

/* The one-token step's engine-accounted weight bytes of the model at path (its tensor table's
 * step bytes, summed) into *step and one embedding row's into *emb_row; 0 and a failed check
 * where the model or its table does not open. */
void t_step_bytes(const char *path, double *step, double *emb_row);

/* The mean of v[0..n) in *mean (n > 0) and the sum of the squared differences from it in *ss:
 * what a population (ss / n) or a sample (ss / (n - 1)) variance divides. */
void t_mean_ss(const double *v, size_t n, double *mean, double *ss);

#endif
