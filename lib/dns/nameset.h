/*
 * Sets and lists of canonical wire names, for aggregates (a million
 * members and more): no allocation per name.
 *
 * Both keep names as entries of one length byte and the wire bytes
 * ([len][wire...]), the same form the aggregate store writes to disk, so
 * a list read from a file or a transfer is used where it lies.
 *
 * A nameset holds its entries in one growing buffer and finds them through
 * an open-addressing table of offsets.  A removed entry is marked dead in
 * place (the high bit of its first label byte, never set in a name) and the
 * space is reclaimed when dead bytes outweigh live ones.  Any change
 * invalidates iteration positions.
 */
#ifndef CR_NAMESET_H
#define CR_NAMESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nameset {
	uint8_t *buf;           /* entries: [len][wire] */
	size_t used, cap;
	size_t dead_bytes;
	uint32_t *slots;        /* entry offset + 1; 0 empty, UINT32_MAX removed */
	uint32_t mask;          /* slot count - 1 (a power of two) */
	uint32_t count;         /* live members */
	uint32_t tombstones;
};

void nameset_init(struct nameset *s);
void nameset_free(struct nameset *s);
void nameset_clear(struct nameset *s);
/* Copies src into dst (initialised, emptied first); 0 or -1 out of memory. */
int nameset_copy(struct nameset *dst, const struct nameset *src);

/* The wire name must be canonical (name.h); len is its length. */
bool nameset_contains(const struct nameset *s, const uint8_t *wire, uint8_t len);
/* 1 added, 0 already a member, -1 out of memory (the set is unchanged). */
int nameset_add(struct nameset *s, const uint8_t *wire, uint8_t len);
/* Room for n more names of bytes entry bytes in all: adding them cannot fail. */
int nameset_reserve(struct nameset *s, uint32_t n, size_t bytes);
/*
 * Adds every name of a list of [len][wire] entries, trusted to be well
 * formed (namelist_check), as nameset_add would one by one, but with the
 * table's slots fetched a block of names ahead: several times faster for
 * big sets, whose adds are each a cache miss.  Returns how many were new,
 * or -1 out of memory (before any was added).
 */
int nameset_add_list(struct nameset *s, const uint8_t *buf, size_t len);
/* 1 removed, 0 not a member. */
int nameset_remove(struct nameset *s, const uint8_t *wire, uint8_t len);

/*
 * Iteration: start with *pos = 0; returns false after the last member.
 * The order is insertion order, compacted.
 */
bool nameset_next(const struct nameset *s, size_t *pos, const uint8_t **wire, uint8_t *len);

/* A list of names: entries appended to one buffer, duplicates allowed. */
struct namelist {
	uint8_t *buf;
	size_t len, cap;
	uint32_t count;
};

void namelist_init(struct namelist *l);
void namelist_free(struct namelist *l);
void namelist_clear(struct namelist *l);
/* 0, or -1 out of memory (the list is unchanged). */
int namelist_add(struct namelist *l, const uint8_t *wire, uint8_t len);

/*
 * Walks entries [len][wire] in buf, trusted to be well formed (checked
 * with namelist_check where they come from outside).
 */
static inline bool namelist_walk(const uint8_t *buf, size_t buf_len, size_t *pos,
				 const uint8_t **wire, uint8_t *len)
{
	if (*pos >= buf_len)
		return false;
	*len = buf[*pos];
	*wire = buf + *pos + 1;
	*pos += 1u + *len;
	return true;
}

/* The members as a list (l emptied first): a copy that later changes leave alone. */
struct nameset;
int nameset_to_list(const struct nameset *s, struct namelist *l);

/*
 * Checks untrusted bytes: exactly count entries, each a canonical wire
 * name, filling buf_len exactly.  Returns true if so.
 */
bool namelist_check(const uint8_t *buf, size_t buf_len, uint32_t count);
/*
 * The same walk for a caller that reports where: the offset of the first
 * entry that is not a canonical name running inside buf (buf_len when
 * every one is), and in *count how many came before it.
 */
size_t namelist_scan(const uint8_t *buf, size_t buf_len, size_t *count);

/*
 * The difference from old to new: members of old not in new go to dels,
 * members of new not in old to adds (both emptied first).  0, or -1 out
 * of memory.
 */
int nameset_diff(const struct nameset *old, const struct nameset *new_set,
		 struct namelist *dels, struct namelist *adds);

#endif
