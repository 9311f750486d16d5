/*
 * The simulator's graph (sim/topology.py writes it): routers 0..N-1 and
 * their links, each link both ways (a session each way), sorted by
 * neighbour so that a router finds its link to another by bisection.
 */
#ifndef SIM_TOPO_H
#define SIM_TOPO_H

#include <stddef.h>
#include <stdint.h>

/* What the neighbour is to the router (Gao-Rexford); FLAT: no relationship. */
enum rel { REL_CUSTOMER, REL_PEER, REL_PROVIDER, REL_FLAT };

struct topo_link {
	uint32_t to;
	uint32_t delay_us;              /* one way */
	uint8_t rel;                    /* enum rel: what `to` is to us */
};

#define TOPO_MARKS      8

struct topo {
	uint32_t n;
	uint32_t *first;                /* n + 1: router i's links are link[first[i] .. first[i+1]) */
	struct topo_link *link;
	size_t nlinks;                  /* directed: twice the file's */
	struct { char label[16]; uint32_t router; } mark[TOPO_MARKS];
	unsigned nmarks;
};

/* 0, or -1 with err set ("file:line: why"). */
int topo_load(struct topo *t, const char *path, char *err, size_t err_len);
void topo_free(struct topo *t);
/* The index of i's link to j, or -1. */
long topo_find(const struct topo *t, uint32_t i, uint32_t j);
/* A mark's router, or -1. */
long topo_mark(const struct topo *t, const char *label);

#endif
