/* tests/lib/values.c: small computations on what a test got (values.h). */
#include "values.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "test.h"

int t_argmax(const float *v, int n)
{
	int best = 0;
	for (int i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return best;
}

double t_key_num(const char *s, const char *name)
{
	char k[64];
	snprintf(k, sizeof(k), " %s=", name);
	const char *p = s ? strstr(s, k) : NULL;
	T_ASSERT(p);
	return p ? strtod(p + strlen(k), NULL) : -1;
}

double t_median(double *v, size_t n)
{
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n; b++)
			if (v[b] < v[a]) {
				double t = v[a];
				v[a] = v[b];
				v[b] = t;
			}
	return n == 0 ? NAN : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void t_mean_ss(const double *v, size_t n, double *mean, double *ss)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	*mean = s / (double)n;
	*ss = 0;
	for (size_t i = 0; i < n; i++)
		*ss += (v[i] - *mean) * (v[i] - *mean);
}

void t_step_bytes(const char *path, double *step, double *emb_row)
{
	struct eng_model *mod = NULL;
	struct eng_tensor_table *t = NULL;
	struct eng_error err;
	*step = *emb_row = 0;
	T_EQ_INT(eng_model_open(&mod, path, NULL, &err), 0);
	if (mod)
		T_EQ_INT(eng_model_tensors(mod, &t, &err), 0);
	for (size_t k = 0; t && k < t->n; k++) {
		*step += (double)t->t[k].step_bytes;
		if (t->t[k].cls == ENG_TENSOR_EMBEDDING)
			*emb_row = (double)t->t[k].step_bytes;
	}
	eng_tensor_table_free(t);
	eng_model_close(mod);
}
