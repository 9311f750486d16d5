/*
 * The PROXY protocol v2 header (lib/core/proxyv2.c), as inrpd reads it in
 * front of a datagram or at the start of a stream.  Byte 0 picks the
 * limit on the header's length; the rest is what arrived.  Checks: a
 * header taken lies within the bytes and the limit, and says a family
 * and transport that exist; a stream cut anywhere before a header's end
 * reads "wait" (SHORT), and one cut before an error's cause reads "wait"
 * or the same error, so waiting never turns a bad header good; the look
 * ahead (proxyv2_skip) agrees with a header taken.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxyv2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "fuzz_proxyv2: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

static const size_t limits[4] = { 512, PROXYV2_FIXED_LEN, 64, PROXYV2_MAX_LEN };

static enum proxyv2_status parse_exact(const uint8_t *data, size_t len, size_t max, struct proxyv2_header *h)
{
	/* a copy of exactly len bytes, so a read past them is caught */
	uint8_t *copy = malloc(len ? len : 1);
	CHECK(copy);
	if (len)
		memcpy(copy, data, len);
	enum proxyv2_status st = proxyv2_parse(copy, len, max, h);
	free(copy);
	return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t max = limits[data[0] & 3];
	const uint8_t *in = data + 1;
	size_t len = size - 1;
	struct proxyv2_header h, p;

	enum proxyv2_status st = parse_exact(in, len, max, &h);
	CHECK(st < PROXYV2_STATUSES);
	CHECK(strcmp(proxyv2_strerror(st), "?") != 0);
	if (st == PROXYV2_OK) {
		CHECK(h.len >= PROXYV2_FIXED_LEN && h.len <= len && h.len <= max);
		CHECK(proxyv2_skip(in, len) == h.len);
		if (h.command == PROXYV2_PROXY) {
			CHECK(h.src.family == AF_INET || h.src.family == AF_INET6);
			CHECK(h.dst.family == h.src.family);
			CHECK(h.transport == PROXYV2_STREAM || h.transport == PROXYV2_DGRAM);
		} else {
			CHECK(h.command == PROXYV2_LOCAL && h.src.family == 0);
		}
	}
	/* the same bytes cut short, as a stream has them before the rest comes */
	size_t end = st == PROXYV2_OK ? h.len : len;
	for (size_t k = 0; k < end; k += k < 64 ? 1 : 61) {
		enum proxyv2_status part = parse_exact(in, k, max, &p);
		if (st == PROXYV2_OK)
			CHECK(part == PROXYV2_SHORT);
		else if (st == PROXYV2_SHORT)
			CHECK(part == PROXYV2_SHORT);
		else
			CHECK(part == PROXYV2_SHORT || part == st);
	}
	return 0;
}
