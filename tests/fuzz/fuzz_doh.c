/*
 * A DNS over HTTPS request as inrpd/doh.c hands it to lib/dns/dohreq.c:
 * headers (pseudo-headers included) and body chunks in any order and
 * number, then the verdict.  The input is a list of records: 0x00, a
 * 1-byte name length, the name, a 2-byte value length, the value (a
 * header); 0x01, a 2-byte length, the bytes (a body chunk).  The verdict
 * is one of the documented statuses, or a message of 12 to 65535 bytes;
 * the message is then padded and its TTLs read as tls.c and doh.c do, and
 * padding keeps it within 65535 bytes on a 468-byte block.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnspad.h"
#include "dohreq.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "fuzz_doh: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

static uint8_t padded[DOH_MSG_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_reader r = wire_reader(data, size);
	struct dohreq req;
	dohreq_init(&req, "/dns-query");
	while (wire_left(&r) > 0) {
		uint8_t kind = wire_u8(&r);
		if (kind == 0) {
			uint8_t nlen = wire_u8(&r);
			const uint8_t *name = wire_take(&r, nlen);
			uint16_t vlen = wire_u16(&r);
			const uint8_t *value = wire_take(&r, vlen);
			if (!name || !value)
				break;
			dohreq_header(&req, name, nlen, value, vlen);
		} else {
			uint16_t len = wire_u16(&r);
			const uint8_t *body = wire_take(&r, len);
			if (!body)
				break;
			dohreq_body(&req, body, len);
		}
	}
	const uint8_t *msg = NULL;
	size_t len = 0;
	uint16_t status = dohreq_finish(&req, &msg, &len);
	CHECK(status == 0 || status == 400 || status == 404 || status == 405 || status == 413 ||
	      status == 415 || status == 500);
	if (status == 0) {
		CHECK(msg && len >= 12 && len <= DOH_MSG_MAX);
		(void)dns_msg_padded(msg, len);
		(void)dns_msg_min_ttl(msg, len, 0);
		memcpy(padded, msg, len);
		size_t plen = dns_msg_pad(padded, len, sizeof(padded), DNS_PAD_BLOCK_RESPONSE);
		CHECK(plen == len || (plen > len && plen % DNS_PAD_BLOCK_RESPONSE == 0 && plen <= DOH_MSG_MAX));
		if (plen != len)
			CHECK(dns_msg_padded(padded, plen));
	}
	dohreq_free(&req);
	return 0;
}
