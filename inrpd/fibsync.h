/* fibsync.c: the FIB channel from nbrpd, on the main thread's loop. */
#ifndef INRPD_FIBSYNC_H
#define INRPD_FIBSYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fib;
struct uv_loop_s;
struct fibsync;
struct fibsync_status {
	bool connected, syncing, in_service, stale;
	uint64_t stale_ms;
	uint64_t epoch;
	uint64_t names, aggregates;
	uint64_t connections, messages, syncs, updates, errors;
	uint64_t replaced;              /* connected senders a new one replaced */
	uint64_t last_change_us;        /* unix time of the last change to the routes in service; 0: none */
	char last_error[320];
};
/* The routes from nbrpd (NULL: none); readers use rcu_dereference. */
extern struct fib *inrpd_chan_fib;
struct fibsync *fibsync_open(struct uv_loop_s *loop, const char *path, uint64_t grace_ms,
			     char *err, size_t err_len);
void fibsync_set_grace(struct fibsync *f, uint64_t grace_ms);
/* changed(arg) after the routes in service changed (an Update applied, a sync ended). */
void fibsync_on_change(struct fibsync *f, void (*changed)(void *arg), void *arg);
/* Closes the socket and connection; run the loop afterwards to finish. */
void fibsync_close(struct fibsync *f);
/* After the loop ended; the caller is offline. */
void fibsync_free(struct fibsync *f);
void fibsync_status(const struct fibsync *f, struct fibsync_status *st, uint64_t now_ms);

#endif
