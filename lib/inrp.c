/*
 * The INRP option codec.  See inrp.h for the wire format.
 */
#include <string.h>
#include <sys/socket.h>

#include "inrp.h"

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

static inline void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void wr64(uint8_t *p, uint64_t v)
{
	wr32(p, (uint32_t)(v >> 32));
	wr32(p + 4, (uint32_t)v);
}

uint64_t inrp_router_id(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	return h;
}

int inrp_query_opt_parse(const uint8_t *d, size_t len, struct inrp_query_opt *o, const char **err)
{
	if (len < 8) {
		*err = "INRP option too short";
		return -1;
	}
	if (d[0] != INRP_VERSION) {
		*err = "unknown INRP version";
		return -1;
	}
	if (d[1] != INRP_KIND_QUERY) {
		*err = "INRP option in a query is not of the query kind";
		return -1;
	}
	o->hop_limit = d[2];
	o->npath = d[3];
	o->nexclude = d[4];
	if (o->npath > INRP_MAX_PATH || o->nexclude > INRP_MAX_EXCLUDE) {
		*err = "INRP path or exclusion list too long";
		return -1;
	}
	o->budget_ms = rd16(d + 6);
	size_t p = 8;
	if (len - p < (size_t)o->npath * 8) {
		*err = "INRP path runs past the option";
		return -1;
	}
	for (unsigned i = 0; i < o->npath; i++, p += 8)
		o->path[i] = rd64(d + p);
	for (unsigned i = 0; i < o->nexclude; i++) {
		if (p >= len) {
			*err = "INRP exclusion list runs past the option";
			return -1;
		}
		uint8_t fam = d[p++];
		size_t alen = fam == 1 ? 4 : fam == 2 ? 16 : 0;
		if (alen == 0) {
			*err = "INRP exclusion with an unknown address family";
			return -1;
		}
		if (len - p < alen) {
			*err = "INRP exclusion list runs past the option";
			return -1;
		}
		o->exclude[i].family = fam == 1 ? AF_INET : AF_INET6;
		memset(o->exclude[i].addr, 0, sizeof(o->exclude[i].addr));
		memcpy(o->exclude[i].addr, d + p, alen);
		p += alen;
	}
	if (p != len) {
		*err = "trailing bytes in the INRP option";
		return -1;
	}
	return 0;
}

int inrp_response_opt_parse(const uint8_t *d, size_t len, struct inrp_response_opt *o,
			    const char **err)
{
	if (len != INRP_RESPONSE_OPT_LEN) {
		*err = "INRP response option has the wrong length";
		return -1;
	}
	if (d[0] != INRP_VERSION) {
		*err = "unknown INRP version";
		return -1;
	}
	if (d[1] != INRP_KIND_RESPONSE) {
		*err = "INRP option in a response is not of the response kind";
		return -1;
	}
	o->status = d[2];
	o->load_ms = rd32(d + 4);
	o->router_id = rd64(d + 8);
	return 0;
}

size_t inrp_query_opt_write(const struct inrp_query_opt *o, uint8_t *out)
{
	unsigned npath = o->npath > INRP_MAX_PATH ? INRP_MAX_PATH : o->npath;
	unsigned nexcl = o->nexclude > INRP_MAX_EXCLUDE ? INRP_MAX_EXCLUDE : o->nexclude;
	size_t p = 0;
	out[p++] = INRP_VERSION;
	out[p++] = INRP_KIND_QUERY;
	out[p++] = o->hop_limit;
	out[p++] = (uint8_t)npath;
	out[p++] = (uint8_t)nexcl;
	out[p++] = 0;
	out[p++] = (uint8_t)(o->budget_ms >> 8);
	out[p++] = (uint8_t)o->budget_ms;
	for (unsigned i = 0; i < npath; i++, p += 8)
		wr64(out + p, o->path[i]);
	for (unsigned i = 0; i < nexcl; i++) {
		bool v4 = o->exclude[i].family == AF_INET;
		out[p++] = v4 ? 1 : 2;
		memcpy(out + p, o->exclude[i].addr, v4 ? 4 : 16);
		p += v4 ? 4 : 16;
	}
	return p;
}

size_t inrp_response_opt_write(const struct inrp_response_opt *o, uint8_t *out)
{
	out[0] = INRP_VERSION;
	out[1] = INRP_KIND_RESPONSE;
	out[2] = o->status;
	out[3] = 0;
	wr32(out + 4, o->load_ms);
	wr64(out + 8, o->router_id);
	return INRP_RESPONSE_OPT_LEN;
}

bool inrp_path_contains(const struct inrp_query_opt *o, uint64_t router_id)
{
	for (unsigned i = 0; i < o->npath; i++)
		if (o->path[i] == router_id)
			return true;
	return false;
}

bool inrp_is_excluded(const struct inrp_query_opt *o, int family, const uint8_t *addr)
{
	for (unsigned i = 0; i < o->nexclude; i++)
		if (o->exclude[i].family == family &&
		    memcmp(o->exclude[i].addr, addr, family == AF_INET ? 4 : 16) == 0)
			return true;
	return false;
}

bool inrp_find_option(const uint8_t *opts, size_t opts_len, uint16_t code,
		      const uint8_t **data, size_t *len)
{
	size_t o = 0;
	while (opts_len - o >= 4) {
		uint16_t c = rd16(opts + o), l = rd16(opts + o + 2);
		o += 4;
		if (opts_len - o < l)
			return false;
		if (c == code) {
			*data = opts + o;
			*len = l;
			return true;
		}
		o += l;
	}
	return false;
}
