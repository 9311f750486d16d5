/*
 * Large growable regions that never move.  The address space is reserved
 * up front (PROT_NONE costs nothing and counts against no overcommit
 * limit) and committed in steps as the region grows, so lock-free readers
 * can keep pointers into it while the writer appends, and memory that was
 * never touched never shows up in RSS.
 */
#ifndef CR_ARENA_H
#define CR_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct region {
	uint8_t *base;
	size_t reserved;        /* bytes of address space */
	size_t committed;       /* bytes readable and writable */
};

/* Reserves max_bytes of address space.  Returns 0 or -1 (errno set). */
int region_init(struct region *r, size_t max_bytes);
/* Makes [0, bytes) usable, growing in 2 MiB steps.  Returns 0 or -1. */
int region_ensure(struct region *r, size_t bytes);
void region_free(struct region *r);

/*
 * A plain zeroed allocation for big tables (hash slots), backed by its own
 * mapping so freeing it returns the memory to the system at once.
 *
 * BIGTABLE_HUGE_PAGES makes it eligible for transparent huge pages, which
 * matters for random probes.  BIGTABLE_SMALL_PAGES keeps it on 4 KiB pages,
 * for memory first written on a latency path (a query storing its answer):
 * the first write to a huge page zeroes 2 MiB, a stall of 100 us or more
 * for that one query, and puts 2 MiB in RSS for a few bytes.
 */
enum bigtable_pages { BIGTABLE_HUGE_PAGES, BIGTABLE_SMALL_PAGES };
void *bigtable_alloc(size_t bytes, enum bigtable_pages pages);
void bigtable_free(void *p, size_t bytes);

#endif
