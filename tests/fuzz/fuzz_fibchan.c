/*
 * The FIB channel as inrpd reads it: bytes from the socket in pieces,
 * frames reassembled, each Update checked and applied to a FIB.  The
 * first byte of the input picks how the stream is cut.
 */
#include <stdint.h>
#include <stdlib.h>
#include <urcu-qsbr.h>

#include "fibchan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int registered;
	if (!registered) {
		rcu_register_thread();
		registered = 1;
	}
	if (size < 1)
		return 0;
	size_t piece = 1 + data[0] % 64;
	data++;
	size--;

	struct fib *fib = fib_create();
	if (!fib)
		abort();
	struct fibchan_reader r;
	fibchan_reader_init(&r);
	char err[512];
	int broken = 0;
	for (size_t off = 0; off < size && !broken; off += piece) {
		size_t n = size - off < piece ? size - off : piece;
		if (fibchan_reader_feed(&r, data + off, n) < 0)
			break;
		Crfib__FibMessage *m;
		int rc;
		while ((rc = fibchan_reader_next(&r, &m, err, sizeof(err))) == 1) {
			if (m->body_case == CRFIB__FIB_MESSAGE__BODY_UPDATE)
				fibchan_apply_update(fib, m->update, err, sizeof(err));
			fibchan_message_free(m);
		}
		if (rc < 0)
			broken = 1;
	}
	/* whatever went in, the table still answers */
	struct name q;
	struct fib_result res;
	name_from_text(&q, "www.example.com", 15);
	fib_lookup_longest_suffix(fib, &q, &res);
	fibchan_reader_free(&r);
	fib_destroy(fib);
	return 0;
}
