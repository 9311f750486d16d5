/*
 * NBRP as nbrpd reads it: bytes from a peer in two pieces, messages
 * reassembled and decoded, each one put through the receiver's checks,
 * and each one re-encoded, which must survive a second round unchanged
 * (protobuf-c packs deterministically) and be what protobuf-c packs.  The first byte of the input picks
 * where the stream is cut.  The rest, and its first frame, are also
 * decoded as one message both ways, with nbrpd's fast UPDATE decoder and with protobuf-c alone: the
 * outcome and the message must be the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nbrp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Encodes m, decodes that, and encodes again: both encodings are equal. */
static void round_trip(const Nbrp__Message *m)
{
	size_t l1, l2;
	uint8_t *e1 = nbrp_encode(m, &l1);
	if (!e1)
		abort();
	/* what protobuf-c packs, whichever encoder nbrp_encode used */
	size_t size = nbrp__message__get_packed_size(m);
	uint8_t *want = malloc(size + 1);
	if (!want || l1 != NBRP_HEADER_LEN + size)
		abort();
	nbrp__message__pack(m, want);
	if (memcmp(e1 + NBRP_HEADER_LEN, want, size) != 0)
		abort();
	free(want);
	struct nbrp_reader r;
	struct nbrp_error e;
	Nbrp__Message *m2 = NULL, *more;
	nbrp_reader_init(&r, UINT32_MAX);
	if (nbrp_reader_feed(&r, e1, l1) < 0 || nbrp_reader_next(&r, &m2, &e) != 1)
		abort();
	if (nbrp_reader_next(&r, &more, &e) != 0)
		abort();
	uint8_t *e2 = nbrp_encode(m2, &l2);
	if (!e2 || l1 != l2 || memcmp(e1, e2, l1) != 0)
		abort();
	free(e1);
	free(e2);
	nbrp_message_free(m2);
	nbrp_reader_free(&r);
}

static void check_name(const ProtobufCBinaryData *b)
{
	struct name n;
	char text[NAME_MAX_TEXT];
	if (nbrp_name_of(b, &n) < 0)
		return;
	/* accepted means canonical: the bytes are the name */
	if (n.len != b->len || memcmp(n.wire, b->data, b->len) != 0)
		abort();
	if (name_to_text(&n, text, sizeof(text)) < 0)
		abort();
}

static void check(const Nbrp__Message *m)
{
	struct nbrp_error e;
	const char *why;

	switch (m->body_case) {
	case NBRP__MESSAGE__BODY_OPEN:
		if (nbrp_check_open(m->open, &e) == 0) {
			if (!nbrp_router_name_valid(m->open->router_name))
				abort();
		} else if (e.code != NBRP_ERR_OPEN || !memchr(e.text, 0, sizeof(e.text))) {
			abort();
		}
		break;
	case NBRP__MESSAGE__BODY_UPDATE:
		for (size_t i = 0; i < m->update->n_withdrawn; i++)
			check_name(&m->update->withdrawn[i]);
		for (size_t i = 0; i < m->update->n_routes; i++) {
			const Nbrp__Route *r = m->update->routes[i];
			int router = nbrp_check_route(r, false, &why);
			int server = nbrp_check_route(r, true, &why);
			/* server mode only relaxes the checks */
			if (router == 0 && server != 0)
				abort();
			for (size_t k = 0; k < r->n_names; k++)
				check_name(&r->names[k]);
		}
		break;
	case NBRP__MESSAGE__BODY_NOTIFICATION:
		if (!nbrp_error_text((uint8_t)m->notification->code, (uint8_t)m->notification->subcode))
			abort();
		break;
	default:
		break;
	}
	round_trip(m);
}

/* The NOTIFICATION answering a broken stream encodes and decodes. */
static void answer(const struct nbrp_error *e)
{
	Nbrp__Message m;
	Nbrp__Notification n;
	if (!memchr(e->text, 0, sizeof(e->text)))
		abort();
	nbrp_notification(&m, &n, e);
	round_trip(&m);
}

static void decoders_agree(const uint8_t *body, size_t len)
{
	Nbrp__Message *fast = NULL, *slow = NULL;
	struct nbrp_error ef, es;
	int rf = nbrp_decode(body, len, true, &fast, &ef);
	int rs = nbrp_decode(body, len, false, &slow, &es);
	if (rf != rs)
		abort();
	if (rs < 0) {
		if (ef.code != es.code || ef.subcode != es.subcode)
			abort();
		return;
	}
	size_t lf, ls;
	uint8_t *pf = nbrp_encode(fast, &lf), *ps = nbrp_encode(slow, &ls);
	if (!pf || !ps || lf != ls || memcmp(pf, ps, lf) != 0)
		abort();
	free(pf);
	free(ps);
	nbrp_message_free(fast);
	nbrp_message_free(slow);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t cut = data[0];
	data++;
	size--;
	if (cut > size)
		cut = size;
	if (size > 0)
		decoders_agree(data, size);
	if (size > NBRP_HEADER_LEN) {
		/* the first frame's message, as the reader would cut it */
		size_t flen = (size_t)data[0] << 24 | (size_t)data[1] << 16 | (size_t)data[2] << 8 | data[3];
		if (flen > 0 && flen <= size - NBRP_HEADER_LEN)
			decoders_agree(data + NBRP_HEADER_LEN, flen);
	}

	struct nbrp_reader r;
	struct nbrp_error e;
	nbrp_reader_init(&r, NBRP_MAX_MESSAGE);
	const uint8_t *piece[2] = { data, data + cut };
	size_t len[2] = { cut, size - cut };
	for (int p = 0; p < 2; p++) {
		if (nbrp_reader_feed(&r, piece[p], len[p]) < 0)
			abort();
		Nbrp__Message *m;
		int rc;
		while ((rc = nbrp_reader_next(&r, &m, &e)) == 1) {
			check(m);
			nbrp_message_free(m);
		}
		if (rc < 0) {
			answer(&e);
			break;
		}
	}
	nbrp_reader_free(&r);
	return 0;
}
