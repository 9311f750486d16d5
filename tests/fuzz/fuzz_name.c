/*
 * Name parsing from text, wire and packets.  Checks round trips, and that
 * whenever our packet parser accepts a name, ldns reads the same name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ldns/ldns.h>

#include "name.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text_round_trip(const uint8_t *data, size_t size)
{
	struct name n, back;
	char text[NAME_MAX_TEXT];

	if (name_from_text(&n, (const char *)data, size) != NAME_OK)
		return;
	int len = name_to_text(&n, text, sizeof(text));
	if (len < 0)
		abort();        /* NAME_MAX_TEXT must hold any name */
	if (name_from_text(&back, text, (size_t)len) != NAME_OK || !name_equal(&n, &back))
		abort();
	if (name_label_count(&n) > NAME_MAX_LABELS)
		abort();
}

static void check_packet_against_ldns(const uint8_t *data, size_t size)
{
	if (size < 2)
		return;
	/* first byte picks where in the "packet" the name starts */
	const uint8_t *pkt = data + 1;
	size_t len = size - 1, start = data[0] % len;
	size_t pos = start;
	struct name n;

	if (name_from_packet(&n, pkt, len, &pos) != NAME_OK)
		return;
	if (pos <= start || pos > len)
		abort();
	ldns_rdf *rdf = NULL;
	size_t lpos = start;
	if (ldns_wire2dname(&rdf, pkt, len, &lpos) != LDNS_STATUS_OK)
		abort();        /* ldns must accept what we accept */
	if (lpos != pos || ldns_rdf_size(rdf) != n.len)
		abort();
	const uint8_t *lw = ldns_rdf_data(rdf);
	for (size_t i = 0; i < n.len; i++) {
		uint8_t c = lw[i];
		if (c >= 'A' && c <= 'Z')
			c = (uint8_t)(c + 32);
		if (c != n.wire[i])
			abort();
	}
	ldns_rdf_deep_free(rdf);

	struct name w;
	if (name_from_wire(&w, n.wire, n.len) != NAME_OK || !name_equal(&w, &n))
		abort();
}

/* The in-place check says yes exactly when name_from_wire takes the bytes as they are. */
static void check_wire_canonical(const uint8_t *data, size_t size)
{
	struct name n;
	bool as_is = size > 0 && name_from_wire(&n, data, size) == NAME_OK && n.len == size &&
		     memcmp(n.wire, data, size) == 0;
	if (name_wire_canonical(data, size) != as_is)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_wire_canonical(data, size);
	check_text_round_trip(data, size);
	check_packet_against_ldns(data, size);
	return 0;
}
