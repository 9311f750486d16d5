/*
 * The FIB channel's nbrpd end (fibpush.c): the routes nbrpd chose, pushed
 * to inrpd.  It knows nothing of the RDE: a full sync asks the table
 * callback for the names a slice at a time, a loop turn each (calling
 * fibpush_name), and changes come through fibpush_name meanwhile.
 */
#ifndef NBRPD_FIBPUSH_H
#define NBRPD_FIBPUSH_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "name.h"
#include "route.h"

struct fibpush;
/* One slice of a full sync: calls fibpush_name for up to about `budget` more names (*state is
 * NULL at the start, the callback's own after); returns true when every name was given, and
 * is called with budget 0 to abandon a sync (the connection went). */
typedef bool (*fibpush_table_fn)(void *arg, struct fibpush *f, void **state, unsigned budget);

/* About how many names and members a full sync will send (inrpd sizes its new table for them). */
typedef uint64_t (*fibpush_count_fn)(void *arg);

/* hold_ms: fib-send-hold-time; caught_up(arg): fibpush_behind is over (also when inrpd stops
 * reading, or goes). */
struct fibpush *fibpush_open(uv_loop_t *loop, const char *path, uint64_t hold_ms, fibpush_table_fn table,
			     fibpush_count_fn count, void (*caught_up)(void *arg), void *arg);
void fibpush_set_hold(struct fibpush *f, uint64_t hold_ms);
/* Connections closed because inrpd read nothing for the hold time. */
uint64_t fibpush_hold_closes(const struct fibpush *f);
/* Bytes queued for inrpd and not yet written: how far behind it is. */
size_t fibpush_queued(const struct fibpush *f);
/* inrpd reads, but more than the high-water mark waits for it: read no more UPDATEs until
 * caught_up. */
bool fibpush_behind(const struct fibpush *f);
void fibpush_close(struct fibpush *f);
void fibpush_free(struct fibpush *f);
/* Queues a name's routes (count 0: withdrawn); sent at the next flush. */
void fibpush_name(struct fibpush *f, const struct name *n, const struct route *routes, unsigned count);
/* The same for an aggregate: the routes every member follows (created in inrpd if new). */
void fibpush_aggregate(struct fibpush *f, const struct name *agg, const struct route *routes, unsigned count);
void fibpush_flush(struct fibpush *f);

/*
 * Members joining or leaving an aggregate, sent at once after what is
 * pending, in Updates that also carry the aggregate's routes (so that it
 * exists in inrpd's FIB, whatever was sent before).  Members are taken in
 * the order given and copied, packed ([len][wire]), up to 1 MiB a message.
 * replace: the aggregate's old members are dropped first (a whole new set).
 */
void fibpush_members_begin(struct fibpush *f, const struct name *agg, const struct route *routes,
			   unsigned count, bool replace);
void fibpush_member(struct fibpush *f, bool add, const uint8_t *wire, uint8_t len);
void fibpush_members_end(struct fibpush *f);
/* The RIB is complete enough to replace what inrpd has (sent once). */
void fibpush_ready(struct fibpush *f);
bool fibpush_connected(const struct fibpush *f);
uint64_t fibpush_syncs(const struct fibpush *f);

#endif
