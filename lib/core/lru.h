/*
 * An intrusive list kept most recently used first, for connections a
 * server closes idle-longest-first when it runs out of room (RFC 7766
 * 6.2.3): embed a struct lru_node, touch it on activity, walk from the
 * tail for the one idle the longest.  No allocation; O(1) each.
 */
#ifndef CR_LRU_H
#define CR_LRU_H

#include <stddef.h>

struct lru_node {
	struct lru_node *prev, *next;
};

struct lru {
	struct lru_node *head;          /* most recently used */
	struct lru_node *tail;          /* used the longest ago */
};

/* The struct that embeds node as its member named field. */
#define lru_entry(node, type, field) ((type *)((char *)(node) - offsetof(type, field)))

static inline void lru_push(struct lru *l, struct lru_node *n)
{
	n->prev = NULL;
	n->next = l->head;
	if (l->head)
		l->head->prev = n;
	else
		l->tail = n;
	l->head = n;
}

static inline void lru_remove(struct lru *l, struct lru_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		l->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		l->tail = n->prev;
}

/* n was used: to the head. */
static inline void lru_touch(struct lru *l, struct lru_node *n)
{
	if (l->head == n)
		return;
	lru_remove(l, n);
	lru_push(l, n);
}

#endif
