/*
 * DNS cookies: see cookie.h.  SipHash-2-4 is libsodium's.
 */
#include <string.h>
#include <sodium.h>

#include "cookie.h"
#include "wire.h"

#define COOKIE_VERSION  1
#define COOKIE_LIFE     3600    /* RFC 9018 4.3: an hour */
#define COOKIE_AHEAD    300     /* ... and five minutes of clock skew */

int cookie_parse(const uint8_t *data, size_t len, const uint8_t **client, const uint8_t **server,
		 size_t *server_len)
{
	if (len != COOKIE_CLIENT_LEN && (len < 16 || len > COOKIE_OPT_MAX))
		return -1;
	*client = data;
	*server = data + COOKIE_CLIENT_LEN;
	*server_len = len - COOKIE_CLIENT_LEN;
	return 0;
}

static void hash(const uint8_t secret[COOKIE_SECRET_LEN], const uint8_t client[COOKIE_CLIENT_LEN],
		 const uint8_t head[8], const uint8_t *addr, size_t addr_len, uint8_t out[8])
{
	uint8_t in[COOKIE_CLIENT_LEN + 8 + 16];
	memcpy(in, client, COOKIE_CLIENT_LEN);
	memcpy(in + COOKIE_CLIENT_LEN, head, 8);
	memcpy(in + COOKIE_CLIENT_LEN + 8, addr, addr_len);
	crypto_shorthash_siphash24(out, in, COOKIE_CLIENT_LEN + 8 + addr_len, secret);
}

void cookie_client_make(const uint8_t secret[COOKIE_SECRET_LEN], const uint8_t *addr, size_t addr_len,
			uint16_t port, uint8_t out[COOKIE_CLIENT_LEN])
{
	uint8_t in[16 + 2];
	memcpy(in, addr, addr_len);
	wire_store16(in + addr_len, port);
	crypto_shorthash_siphash24(out, in, addr_len + 2, secret);
}

void cookie_make(const uint8_t secret[COOKIE_SECRET_LEN], const uint8_t client[COOKIE_CLIENT_LEN],
		 uint32_t now, const uint8_t *addr, size_t addr_len, uint8_t out[COOKIE_SERVER_LEN])
{
	out[0] = COOKIE_VERSION;
	out[1] = out[2] = out[3] = 0;
	wire_store32(out + 4, now);
	hash(secret, client, out, addr, addr_len, out + 8);
}

bool cookie_check(const uint8_t secret[COOKIE_SECRET_LEN], const uint8_t client[COOKIE_CLIENT_LEN],
		  const uint8_t *server, size_t server_len, uint32_t now, const uint8_t *addr,
		  size_t addr_len)
{
	if (server_len != COOKIE_SERVER_LEN || server[0] != COOKIE_VERSION)
		return false;
	uint32_t ts = wire_load32(server + 4);
	/* serial number arithmetic (RFC 1982): the clock wraps in 2106 */
	int32_t age = (int32_t)(now - ts);
	if (age > COOKIE_LIFE || age < -COOKIE_AHEAD)
		return false;
	uint8_t h[8];
	hash(secret, client, server, addr, addr_len, h);
	return sodium_memcmp(h, server + 8, 8) == 0;
}
