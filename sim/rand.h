/* The simulator's random numbers: splitmix64, a state a stream, seeded. */
#ifndef SIM_RAND_H
#define SIM_RAND_H

#include <stdint.h>

static inline uint64_t sim_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif
