/* engine/rng.h: the seeded generator behind the sampler and the synthetic models. Internal.
 *
 * xoshiro256** seeded through splitmix64 (Blackman and Vigna, "Scrambled linear pseudorandom
 * number generators", 2021; splitmix64 from Steele, Lea and Flood, 2014): fast, well tested,
 * and the same sequence on every platform, so a seed names one run everywhere.
 */
#ifndef MEMWALL_RNG_H
#define MEMWALL_RNG_H

#include <stdint.h>

struct eng_rng {
	uint64_t s[4];
};

static inline uint64_t eng_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void eng_rng_seed(struct eng_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = eng_splitmix64(&seed);
}

static inline uint64_t eng_rng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t eng_rng_next(struct eng_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = eng_rng_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = eng_rng_rotl(s[3], 45);
	return result;
}

/* Uniform in [0, 1), 24 random bits: every value exactly representable as a float. */
static inline float eng_rng_float(struct eng_rng *r)
{
	return (float)(eng_rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

#endif
