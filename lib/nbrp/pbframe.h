/*
 * A protobuf-c message in a frame (frame.h's 4-byte length before it), the
 * way NBRP and the FIB channel send theirs.
 */
#ifndef CR_PBFRAME_H
#define CR_PBFRAME_H

#include <stdint.h>
#include <stdlib.h>
#include <protobuf-c/protobuf-c.h>

#include "frame.h"

/*
 * The frame in a malloc'd buffer of *len bytes; NULL when the message packs
 * to nothing (a message without a body, which no frame can carry), to more
 * than max bytes, or out of memory.
 */
static inline uint8_t *pbframe_pack(const ProtobufCMessage *m, size_t max, size_t *len)
{
	size_t size = protobuf_c_message_get_packed_size(m);
	if (size == 0 || size > max || size > UINT32_MAX)
		return NULL;
	uint8_t *buf = malloc(FRAME_HEADER_LEN + size);
	if (!buf)
		return NULL;
	frame_put_header(buf, (uint32_t)size);
	protobuf_c_message_pack(m, buf + FRAME_HEADER_LEN);
	*len = FRAME_HEADER_LEN + size;
	return buf;
}

#endif
