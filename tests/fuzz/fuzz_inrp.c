/*
 * The INRP option codec: the input is the data of one EDNS option, given
 * to both parsers (query and response kind).  Whatever parses:
 *   - is within the limits (path, exclusions, families);
 *   - writes back to the same bytes, except the reserved byte, which is
 *     ignored on receipt and always written as 0;
 *   - re-parses to the same struct, and the path and exclusion tests find
 *     every entry.
 * The input is also walked as an OPT RR's option list with
 * inrp_find_option, and what it finds is parsed as well.
 * Any disagreement abort()s.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "inrp.h"

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "fuzz_inrp: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

#define QUERY_RESERVED_AT       5
#define RESPONSE_RESERVED_AT    3

static void check_query_equal(const struct inrp_query_opt *a, const struct inrp_query_opt *b)
{
	CHECK(a->hop_limit == b->hop_limit);
	CHECK(a->npath == b->npath);
	CHECK(a->nexclude == b->nexclude);
	CHECK(a->budget_ms == b->budget_ms);
	for (unsigned i = 0; i < a->npath; i++)
		CHECK(a->path[i] == b->path[i]);
	for (unsigned i = 0; i < a->nexclude; i++) {
		CHECK(a->exclude[i].family == b->exclude[i].family);
		CHECK(memcmp(a->exclude[i].addr, b->exclude[i].addr, 16) == 0);
	}
}

static void check_query(const uint8_t *data, size_t size)
{
	struct inrp_query_opt o;
	const char *err = NULL;
	if (inrp_query_opt_parse(data, size, &o, &err) != 0) {
		CHECK(err != NULL);
		return;
	}
	CHECK(size >= 8 && size <= INRP_QUERY_OPT_MAX);
	CHECK(o.npath <= INRP_MAX_PATH);
	CHECK(o.nexclude <= INRP_MAX_EXCLUDE);
	static const uint8_t zero[12];
	for (unsigned i = 0; i < o.nexclude; i++) {
		CHECK(o.exclude[i].family == AF_INET || o.exclude[i].family == AF_INET6);
		if (o.exclude[i].family == AF_INET)
			CHECK(memcmp(o.exclude[i].addr + 4, zero, 12) == 0);
		CHECK(inrp_is_excluded(&o, o.exclude[i].family, o.exclude[i].addr));
	}
	for (unsigned i = 0; i < o.npath; i++)
		CHECK(inrp_path_contains(&o, o.path[i]));

	uint8_t out[INRP_QUERY_OPT_MAX];
	size_t n = inrp_query_opt_write(&o, out);
	CHECK(n == size);
	CHECK(out[QUERY_RESERVED_AT] == 0);
	CHECK(memcmp(out, data, QUERY_RESERVED_AT) == 0);
	CHECK(memcmp(out + QUERY_RESERVED_AT + 1, data + QUERY_RESERVED_AT + 1,
		     size - QUERY_RESERVED_AT - 1) == 0);

	struct inrp_query_opt back;
	err = NULL;
	CHECK(inrp_query_opt_parse(out, n, &back, &err) == 0);
	check_query_equal(&o, &back);
}

static void check_response(const uint8_t *data, size_t size)
{
	struct inrp_response_opt o;
	const char *err = NULL;
	if (inrp_response_opt_parse(data, size, &o, &err) != 0) {
		CHECK(err != NULL);
		return;
	}
	CHECK(size == INRP_RESPONSE_OPT_LEN || size == INRP_RESPONSE_OPT_LEN_V1);
	CHECK(size == INRP_RESPONSE_OPT_LEN || o.origin == 0);     /* the first routers' form: not known */
	uint8_t out[INRP_RESPONSE_OPT_LEN];
	CHECK(inrp_response_opt_write(&o, out) == INRP_RESPONSE_OPT_LEN);
	CHECK(out[RESPONSE_RESERVED_AT] == 0);
	CHECK(memcmp(out, data, RESPONSE_RESERVED_AT) == 0);
	CHECK(memcmp(out + RESPONSE_RESERVED_AT + 1, data + RESPONSE_RESERVED_AT + 1,
		     size - RESPONSE_RESERVED_AT - 1) == 0);

	struct inrp_response_opt back;
	err = NULL;
	CHECK(inrp_response_opt_parse(out, sizeof(out), &back, &err) == 0);
	CHECK(back.status == o.status);
	CHECK(back.load_ms == o.load_ms);
	CHECK(back.origin == o.origin);
	CHECK(back.router_id == o.router_id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_query(data, size);
	check_response(data, size);

	/* as an option list: look for INRP's code and for the first option's */
	uint16_t codes[2] = { INRP_OPTION_CODE, 0 };
	if (size >= 2)
		codes[1] = (uint16_t)(data[0] << 8 | data[1]);
	for (int i = 0; i < 2; i++) {
		const uint8_t *d = NULL;
		size_t dl = 0;
		if (!inrp_find_option(data, size, codes[i], &d, &dl))
			continue;
		CHECK(d != NULL && d >= data + 4 && d + dl <= data + size);
		CHECK((uint16_t)(d[-4] << 8 | d[-3]) == codes[i]);
		CHECK((size_t)(d[-2] << 8 | d[-1]) == dl);
		check_query(d, dl);
		check_response(d, dl);
	}
	return 0;
}
