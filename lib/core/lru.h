/*
 * A list kept most recently used first, for connections a server closes
 * idle-longest-first when it runs out of room (RFC 7766 6.2.3): touch a
 * node on activity, walk from the tail for the one idle the longest.
 */
#ifndef CR_LRU_H
#define CR_LRU_H

#include "list.h"

/* n was used: to the head. */
static inline void lru_touch(struct list *l, struct list_node *n)
{
	if (l->head == n)
		return;
	list_remove(l, n);
	list_push(l, n);
}

#endif
