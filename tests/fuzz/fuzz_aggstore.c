/*
 * The aggregate store's file readers.  The first byte picks the reader:
 * even, a snapshot; odd, a journal.  A snapshot either parses whole or
 * not at all; a journal scan returns a prefix of chained, checksummed
 * records that rescanning alone gives back unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aggstore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_snapshot(const uint8_t *buf, size_t len)
{
	struct nameset m;
	nameset_init(&m);
	uint32_t serial;
	const char *why = NULL;
	if (aggstore_snapshot_parse(buf, len, NULL, &m, &serial, &why) == 0) {
		size_t pos = 0;
		const uint8_t *w;
		uint8_t l;
		uint32_t n = 0;
		while (nameset_next(&m, &pos, &w, &l)) {
			if (!name_wire_canonical(w, l))
				abort();
			n++;
		}
		if (n != m.count)
			abort();
	} else if (!why || !why[0]) {
		abort();
	}
	nameset_free(&m);
}

static void check_journal(const uint8_t *buf, size_t len)
{
	struct aggstore_jrec *recs;
	size_t n;
	const char *why;
	size_t good = aggstore_journal_scan(buf, len, &recs, &n, &why);
	if (good == (size_t)-1)
		return;
	if (good > len || (good < len && !why))
		abort();
	uint64_t off = 0;
	for (size_t i = 0; i < n; i++) {
		if (recs[i].off != off || off + recs[i].len > good)
			abort();
		if (i > 0 && recs[i].from != recs[i - 1].to)
			abort();
		if (!serial_gt(recs[i].to, recs[i].from))
			abort();
		struct aggstore_diff d;
		aggstore_diff_from_record(buf + off, &d);
		if (d.from != recs[i].from || d.to != recs[i].to ||
		    !namelist_check(d.dels, d.dels_len, d.ndels) || !namelist_check(d.adds, d.adds_len, d.nadds))
			abort();
		off += recs[i].len;
	}
	if (off != good)
		abort();
	/* the good prefix alone scans to itself */
	struct aggstore_jrec *again;
	size_t n2;
	if (aggstore_journal_scan(buf, good, &again, &n2, &why) != good || n2 != n)
		abort();
	free(again);
	free(recs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		check_journal(data + 1, size - 1);
	else
		check_snapshot(data + 1, size - 1);
	return 0;
}
