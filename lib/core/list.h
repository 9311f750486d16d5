/*
 * An intrusive doubly-linked list: embed a struct list_node, link it at
 * the head and unlink it from anywhere in O(1), with no allocation.
 */
#ifndef CR_LIST_H
#define CR_LIST_H

#include <stddef.h>

struct list_node {
	struct list_node *prev, *next;
};

struct list {
	struct list_node *head;         /* linked last */
	struct list_node *tail;         /* linked first */
};

/* The struct that embeds node as its member named field. */
#define list_entry(node, type, field) ((type *)((char *)(node) - offsetof(type, field)))

static inline void list_push(struct list *l, struct list_node *n)
{
	n->prev = NULL;
	n->next = l->head;
	if (l->head)
		l->head->prev = n;
	else
		l->tail = n;
	l->head = n;
}

static inline void list_remove(struct list *l, struct list_node *n)
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

#endif
