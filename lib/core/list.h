/*
 * Intrusive lists, with no allocation: a doubly-linked list (embed a
 * struct list_node, link it at the head and unlink it from anywhere in
 * O(1)) and a queue, first in first out (embed a struct fifo_node).
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

struct fifo_node {
	struct fifo_node *next;
};

struct fifo {
	struct fifo_node *head;         /* out first */
	struct fifo_node *tail;
};

static inline void fifo_push(struct fifo *q, struct fifo_node *n)
{
	n->next = NULL;
	if (q->tail)
		q->tail->next = n;
	else
		q->head = n;
	q->tail = n;
}

/* The head, taken off; NULL when empty. */
static inline struct fifo_node *fifo_pop(struct fifo *q)
{
	struct fifo_node *n = q->head;
	if (n && !(q->head = n->next))
		q->tail = NULL;
	return n;
}

#endif
