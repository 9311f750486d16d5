/*
 * inrpd's DNS-over-TCP reading (lib/dns/dnsframe.c as inrpd/tcp.c uses it):
 * the buffer grown before each read as on_alloc does, whole messages
 * taken as conn_process does, the rest kept.  Byte 0 picks the sizes the
 * stream (the rest) arrives in.  Whatever the cuts, the messages taken
 * are those of the stream read in one piece, in order, a zero length ends
 * it as bad, the buffer stays within DNS_FRAME_BUF_MAX, and a read always
 * has room: a client cannot stall the connection or grow it further.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnsframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "fuzz_tcpframe: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

static const size_t read_sizes[8] = { 1, 2, 3, 17, 512, 1500, 4096, 65536 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned pattern = data[0];
	const uint8_t *stream = data + 1;
	size_t len = size - 1;

	/* the reference: the stream's messages read in one piece */
	size_t ref_off = 0;
	bool ref_bad = false;
	while (len - ref_off >= 2) {
		size_t n = (size_t)stream[ref_off] << 8 | stream[ref_off + 1];
		if (n == 0) {
			ref_bad = true;
			break;
		}
		if (len - ref_off - 2 < n)
			break;
		ref_off += 2 + n;
	}

	/* the connection: 4096 bytes to start with, as tcp.c */
	size_t cap = 4096, used = 0, fed = 0, taken = 0;
	uint8_t *buf = malloc(cap);
	bool bad = false;
	for (unsigned r = 0; fed < len && !bad; r++) {
		size_t grown = dns_frame_grow(cap, used);
		CHECK(grown >= cap && grown <= DNS_FRAME_BUF_MAX);
		if (grown != cap) {
			/* not vec: the size is dns_frame_grow's, as tcp.c's */
			buf = realloc(buf, grown);
			cap = grown;
		}
		CHECK(cap > used);
		size_t n = read_sizes[((pattern >> (r % 3 * 3)) ^ r) & 7];
		if (n > cap - used)
			n = cap - used;
		if (n > len - fed)
			n = len - fed;
		memcpy(buf + used, stream + fed, n);
		used += n;
		fed += n;

		size_t off = 0, mlen;
		enum dns_frame f;
		while ((f = dns_frame_next(buf + off, used - off, &mlen)) == DNS_FRAME_MSG) {
			CHECK(2 + mlen <= used - off);
			CHECK(memcmp(buf + off, stream + taken, 2 + mlen) == 0);
			off += 2 + mlen;
			taken += 2 + mlen;
		}
		bad = f == DNS_FRAME_BAD;
		memmove(buf, buf + off, used - off);
		used -= off;
	}
	CHECK(taken == ref_off && bad == ref_bad);
	CHECK(bad || used == len - taken);
	free(buf);
	return 0;
}
