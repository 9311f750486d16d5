/*
 * splitmix64 (Steele, Lea and Flood): a repeatable stream of 64-bit
 * numbers from one seed, for load generators and benchmarks that must
 * make the same input again (never for anything an attacker may guess).
 */
#ifndef CR_SPLITMIX_H
#define CR_SPLITMIX_H

#include <stdint.h>

static inline uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif
