#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <uv.h>

#include "nbrp_session.h"

/*
 * One NBRP session on an accepted loopback connection; the other end is
 * a plain TCP client that reads nothing.  The watchdog ends the loop if
 * the session outlives it.
 */
struct lab {
	uv_loop_t loop;
	uv_tcp_t listener, client;
	uv_connect_t connect_req;
	uv_timer_t watchdog;
	struct nbrp_session *s;
	int closed, notifications;
	bool timed_out;
	void (*on_start)(struct lab *lab);
};

static void ev(struct nbrp_session *s, enum nbrp_session_event e, uint8_t code, const char *text)
{
	(void)code;
	(void)text;
	struct lab *lab = s->data;
	lab->notifications += e == NBRP_EVENT_NOTIFICATION_SENT;
}

static void closed(struct nbrp_session *s)
{
	struct lab *lab = s->data;
	lab->closed++;
	uv_close((uv_handle_t *)&lab->client, NULL);
	uv_close((uv_handle_t *)&lab->listener, NULL);
	uv_close((uv_handle_t *)&lab->watchdog, NULL);
}

static const struct nbrp_session_ops ops = { .event = ev, .closed = closed };

static void on_accept(uv_stream_t *server, int status)
{
	struct lab *lab = server->data;
	assert_int_equal(status, 0);
	struct nbrp_session_config cfg = { .router_name = "a", .hold_time_s = 90 };
	lab->s = nbrp_session_new(&lab->loop, &cfg, &ops, lab, "peer b");
	assert_non_null(lab->s);
	assert_int_equal(uv_accept(server, (uv_stream_t *)&lab->s->tcp), 0);
	nbrp_session_start(lab->s);             /* OPEN goes: its write is in flight */
	lab->on_start(lab);
}

static void on_connect(uv_connect_t *req, int status)
{
	(void)req;
	assert_int_equal(status, 0);
}

static void on_watchdog(uv_timer_t *t)
{
	struct lab *lab = t->data;
	lab->timed_out = true;
	uv_stop(&lab->loop);
}

static void run(struct lab *lab)
{
	assert_int_equal(uv_loop_init(&lab->loop), 0);
	struct sockaddr_in addr;
	uv_ip4_addr("127.0.0.1", 0, &addr);
	uv_tcp_init(&lab->loop, &lab->listener);
	lab->listener.data = lab;
	assert_int_equal(uv_tcp_bind(&lab->listener, (const struct sockaddr *)&addr, 0), 0);
	assert_int_equal(uv_listen((uv_stream_t *)&lab->listener, 1, on_accept), 0);
	int len = sizeof(addr);
	uv_tcp_getsockname(&lab->listener, (struct sockaddr *)&addr, &len);
	uv_tcp_init(&lab->loop, &lab->client);
	assert_int_equal(uv_tcp_connect(&lab->connect_req, &lab->client, (const struct sockaddr *)&addr,
					on_connect), 0);
	uv_timer_init(&lab->loop, &lab->watchdog);
	lab->watchdog.data = lab;
	uv_timer_start(&lab->watchdog, on_watchdog, 5000, 0);
	uv_run(&lab->loop, UV_RUN_DEFAULT);
}

static void notify_at_once(struct lab *lab)
{
	nbrp_session_notify(lab->s, NBRP_ERR_CEASE, NBRP_CEASE_SHUTDOWN, "shutting down");
}

/* A NOTIFICATION sent while an earlier write is still in flight: the first
 * write's completion drains the queue below its low mark, not to empty; the
 * session must still close once the NOTIFICATION is written (it stayed open
 * for good, and nbrpd with it on SIGTERM). */
static void notification_behind_a_write_in_flight_closes(void **state)
{
	(void)state;
	struct lab lab = { .on_start = notify_at_once };
	run(&lab);
	assert_false(lab.timed_out);
	assert_int_equal(lab.closed, 1);
	assert_int_equal(lab.notifications, 1);
	assert_int_equal(uv_loop_close(&lab.loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(notification_behind_a_write_in_flight_closes),
	};
	return cmocka_run_group_tests_name("nbrp_session", tests, NULL, NULL);
}
