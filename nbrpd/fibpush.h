/*
 * The FIB channel's nbrpd end (fibpush.c): the routes nbrpd chose, pushed
 * to inrpd.  It knows nothing of the RDE: a full sync asks the table
 * callback for every name (fibpush_name), changes come the same way.
 */
#ifndef NBRPD_FIBPUSH_H
#define NBRPD_FIBPUSH_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "name.h"
#include "route.h"

struct fibpush;
/* Calls fibpush_name for every name with routes; returns how many. */
typedef uint64_t (*fibpush_table_fn)(void *arg, struct fibpush *f);

struct fibpush *fibpush_open(uv_loop_t *loop, const char *path, fibpush_table_fn table, void *arg);
void fibpush_close(struct fibpush *f);
void fibpush_free(struct fibpush *f);
/* Queues a name's routes (count 0: withdrawn); sent at the next flush. */
void fibpush_name(struct fibpush *f, const struct name *n, const struct route *routes, unsigned count);
void fibpush_flush(struct fibpush *f);
/* The RIB is complete enough to replace what inrpd has (sent once). */
void fibpush_ready(struct fibpush *f);
bool fibpush_connected(const struct fibpush *f);
uint64_t fibpush_syncs(const struct fibpush *f);

#endif
