/*
 * lib/tlslink: two ends joined in memory.  The handshake completes with
 * each side's Ed25519 key seen by the other, a wrong key is what the peer
 * sees (the owner refuses it), a record altered in flight fails, and
 * nothing passes before the handshake.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sodium.h>

#include "sigkey.h"
#include "tlslink.h"

struct pair {
	struct sigkey ka, kb;
	struct tlslink_cred *ca, *cb;
	struct tlslink *client, *server;
};

static void keypair(struct sigkey *k)
{
	crypto_sign_keypair(k->pk, k->sk);
}

/* What from wrote, into to; the bytes moved (flip: the first one altered on the way). */
static size_t move(struct tlslink *from, struct tlslink *to, long flip)
{
	size_t len;
	uint8_t *p = tlslink_take(from, &len);
	if (!p)
		return 0;
	if (flip >= 0 && (size_t)flip < len)
		p[flip] ^= 0x40;
	uint8_t *room = tlslink_space(to, len);
	assert_non_null(room);
	memcpy(room, p, len);
	tlslink_commit(to, len);
	free(p);
	return len;
}

static int handshake(struct pair *x)
{
	int rc_c = 0, rc_s = 0;
	for (int round = 0; round < 10 && (rc_c != 1 || rc_s != 1); round++) {
		rc_c = tlslink_handshake(x->client);
		move(x->client, x->server, -1);
		rc_s = tlslink_handshake(x->server);
		move(x->server, x->client, -1);
		if (rc_c < 0 || rc_s < 0)
			return -1;
	}
	return rc_c == 1 && rc_s == 1 ? 0 : -1;
}

static int setup(void **state)
{
	struct pair *x = calloc(1, sizeof(*x));
	char err[160];
	assert_true(sigkey_init());
	keypair(&x->ka);
	keypair(&x->kb);
	x->ca = tlslink_cred_new(&x->ka, err, sizeof(err));
	x->cb = tlslink_cred_new(&x->kb, err, sizeof(err));
	assert_non_null(x->ca);
	assert_non_null(x->cb);
	x->client = tlslink_new(x->ca, false, err, sizeof(err));
	x->server = tlslink_new(x->cb, true, err, sizeof(err));
	assert_non_null(x->client);
	assert_non_null(x->server);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct pair *x = *state;
	tlslink_free(x->client);
	tlslink_free(x->server);
	tlslink_cred_free(x->ca);
	tlslink_cred_free(x->cb);
	free(x);
	return 0;
}

static void handshake_exchanges_keys(void **state)
{
	struct pair *x = *state;
	assert_null(tlslink_peer_key(x->client));
	assert_int_equal(handshake(x), 0);
	assert_memory_equal(tlslink_peer_key(x->client), x->kb.pk, SIGKEY_PUBLIC_LEN);
	assert_memory_equal(tlslink_peer_key(x->server), x->ka.pk, SIGKEY_PUBLIC_LEN);

	/* both ways, more than a record's worth */
	size_t big = 100000;
	uint8_t *msg = malloc(big), *got = malloc(big);
	for (size_t i = 0; i < big; i++)
		msg[i] = (uint8_t)(i * 7);
	assert_int_equal(tlslink_write(x->client, msg, big), 0);
	assert_true(move(x->client, x->server, -1) > big);
	size_t n = 0;
	ssize_t r;
	while (n < big && (r = tlslink_read(x->server, got + n, big - n)) > 0)
		n += (size_t)r;
	assert_int_equal(n, big);
	uint8_t more[16];
	assert_int_equal(tlslink_read(x->server, more, sizeof(more)), 0);
	assert_memory_equal(got, msg, big);
	assert_int_equal(tlslink_write(x->server, (const uint8_t *)"pong", 4), 0);
	move(x->server, x->client, -1);
	assert_int_equal(tlslink_read(x->client, got, big), 4);
	assert_memory_equal(got, "pong", 4);
	free(msg);
	free(got);
}

/* The key seen is the one presented: a router with another key than the one expected is told apart. */
static void wrong_key_is_visible(void **state)
{
	struct pair *x = *state;
	struct sigkey other;
	char err[160];
	keypair(&other);
	struct tlslink_cred *co = tlslink_cred_new(&other, err, sizeof(err));
	tlslink_free(x->client);
	x->client = tlslink_new(co, false, err, sizeof(err));
	assert_int_equal(handshake(x), 0);
	assert_memory_equal(tlslink_peer_key(x->server), other.pk, SIGKEY_PUBLIC_LEN);
	assert_memory_not_equal(tlslink_peer_key(x->server), x->ka.pk, SIGKEY_PUBLIC_LEN);
	tlslink_free(x->client);
	x->client = NULL;
	tlslink_cred_free(co);
}

/* An on-path rewrite of a record: the receiver gets an error, never the altered bytes. */
static void tampered_record_fails(void **state)
{
	struct pair *x = *state;
	assert_int_equal(handshake(x), 0);
	const char *update = "next hop 192.0.2.1";
	assert_int_equal(tlslink_write(x->client, (const uint8_t *)update, strlen(update)), 0);
	move(x->client, x->server, 5 + 3);       /* a byte of the encrypted payload */
	uint8_t got[64];
	assert_int_equal(tlslink_read(x->server, got, sizeof(got)), -1);
	assert_non_null(strstr(tlslink_error(x->server), "TLS"));
}

/* A tampered handshake fails on both sides' terms: no key is ever exported. */
static void tampered_handshake_fails(void **state)
{
	struct pair *x = *state;
	assert_int_equal(tlslink_handshake(x->client), 0);
	move(x->client, x->server, -1);
	assert_int_equal(tlslink_handshake(x->server), 0);
	size_t len;
	uint8_t *p = tlslink_take(x->server, &len);
	assert_non_null(p);
	p[len - 10] ^= 1;               /* in the encrypted part of the server's flight */
	memcpy(tlslink_space(x->client, len), p, len);
	tlslink_commit(x->client, len);
	free(p);
	assert_int_equal(tlslink_handshake(x->client), -1);
	assert_null(tlslink_peer_key(x->client));
}

/* Plain bytes where TLS is expected (a peer without authentication): refused. */
static void plaintext_peer_fails(void **state)
{
	struct pair *x = *state;
	static const uint8_t open[] = { 0, 0, 0, 12, 0x0a, 0x0a, 0x08, 0x01, 0x12, 0x03, 'c', 'r', '1', 0, 0, 0 };
	memcpy(tlslink_space(x->server, sizeof(open)), open, sizeof(open));
	tlslink_commit(x->server, sizeof(open));
	assert_int_equal(tlslink_handshake(x->server), -1);
	assert_null(tlslink_peer_key(x->server));
	assert_string_equal(tlslink_error(x->server), "TLS handshake: the peer does not speak TLS (its first byte is 0x00)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(handshake_exchanges_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(wrong_key_is_visible, setup, teardown),
		cmocka_unit_test_setup_teardown(tampered_record_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(tampered_handshake_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(plaintext_peer_fails, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tlslink_global_deinit();
	return rc;
}
