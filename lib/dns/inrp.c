/*
 * The INRP option codec.  See inrp.h for the wire format.
 */
#include <string.h>
#include <sys/socket.h>

#include "inrp.h"
#include "wire.h"

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
	struct wire_reader r = wire_reader(d, len);
	uint8_t version = wire_u8(&r), kind = wire_u8(&r);
	o->hop_limit = wire_u8(&r);
	o->npath = wire_u8(&r);
	o->nexclude = wire_u8(&r);
	wire_u8(&r);                    /* reserved */
	o->budget_ms = wire_u16(&r);
	if (r.bad) {
		*err = "INRP option too short";
		return -1;
	}
	if (version != INRP_VERSION) {
		*err = "unknown INRP version";
		return -1;
	}
	if (kind != INRP_KIND_QUERY) {
		*err = "INRP option in a query is not of the query kind";
		return -1;
	}
	if (o->npath > INRP_MAX_PATH || o->nexclude > INRP_MAX_EXCLUDE) {
		*err = "INRP path or exclusion list too long";
		return -1;
	}
	for (unsigned i = 0; i < o->npath; i++)
		o->path[i] = wire_u64(&r);
	if (r.bad) {
		*err = "INRP path runs past the option";
		return -1;
	}
	for (unsigned i = 0; i < o->nexclude; i++) {
		uint8_t fam = wire_u8(&r);
		size_t alen = fam == 1 ? 4 : fam == 2 ? 16 : 0;
		if (!r.bad && alen == 0) {
			*err = "INRP exclusion with an unknown address family";
			return -1;
		}
		const uint8_t *a = wire_take(&r, alen);
		if (!a) {
			*err = "INRP exclusion list runs past the option";
			return -1;
		}
		o->exclude[i].family = fam == 1 ? AF_INET : AF_INET6;
		memset(o->exclude[i].addr, 0, sizeof(o->exclude[i].addr));
		memcpy(o->exclude[i].addr, a, alen);
	}
	if (wire_left(&r)) {
		*err = "trailing bytes in the INRP option";
		return -1;
	}
	return 0;
}

int inrp_response_opt_parse(const uint8_t *d, size_t len, struct inrp_response_opt *o,
			    const char **err)
{
	if (len != INRP_RESPONSE_OPT_LEN && len != INRP_RESPONSE_OPT_LEN_V1) {
		*err = "INRP response option has the wrong length";
		return -1;
	}
	struct wire_reader r = wire_reader(d, len);
	uint8_t version = wire_u8(&r), kind = wire_u8(&r);
	if (version != INRP_VERSION) {
		*err = "unknown INRP version";
		return -1;
	}
	if (kind != INRP_KIND_RESPONSE) {
		*err = "INRP option in a response is not of the response kind";
		return -1;
	}
	o->status = wire_u8(&r);
	wire_u8(&r);                    /* reserved */
	o->load_ms = wire_u32(&r);
	o->router_id = wire_u64(&r);
	o->origin = len == INRP_RESPONSE_OPT_LEN ? wire_u32(&r) : 0;
	return 0;
}

size_t inrp_query_opt_write(const struct inrp_query_opt *o, uint8_t *out)
{
	unsigned npath = o->npath > INRP_MAX_PATH ? INRP_MAX_PATH : o->npath;
	unsigned nexcl = o->nexclude > INRP_MAX_EXCLUDE ? INRP_MAX_EXCLUDE : o->nexclude;
	struct wire_writer w = wire_writer(out, INRP_QUERY_OPT_MAX);
	wire_put8(&w, INRP_VERSION);
	wire_put8(&w, INRP_KIND_QUERY);
	wire_put8(&w, o->hop_limit);
	wire_put8(&w, (uint8_t)npath);
	wire_put8(&w, (uint8_t)nexcl);
	wire_put8(&w, 0);
	wire_put16(&w, o->budget_ms);
	for (unsigned i = 0; i < npath; i++)
		wire_put64(&w, o->path[i]);
	for (unsigned i = 0; i < nexcl; i++) {
		bool v4 = o->exclude[i].family == AF_INET;
		wire_put8(&w, v4 ? 1 : 2);
		wire_put(&w, o->exclude[i].addr, v4 ? 4 : 16);
	}
	return wire_written(&w);        /* INRP_QUERY_OPT_MAX holds the most there can be */
}

size_t inrp_response_opt_write(const struct inrp_response_opt *o, uint8_t *out)
{
	struct wire_writer w = wire_writer(out, INRP_RESPONSE_OPT_LEN);
	wire_put8(&w, INRP_VERSION);
	wire_put8(&w, INRP_KIND_RESPONSE);
	wire_put8(&w, o->status);
	wire_put8(&w, 0);
	wire_put32(&w, o->load_ms);
	wire_put64(&w, o->router_id);
	wire_put32(&w, o->origin);
	return wire_written(&w);
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
		if (ip_equal(o->exclude[i].family, o->exclude[i].addr, family, addr))
			return true;
	return false;
}

bool inrp_find_option(const uint8_t *opts, size_t opts_len, uint16_t code,
		      const uint8_t **data, size_t *len)
{
	struct wire_reader r = wire_reader(opts, opts_len);
	while (wire_left(&r) >= 4) {
		uint16_t c = wire_u16(&r), l = wire_u16(&r);
		const uint8_t *d = wire_take(&r, l);
		if (!d)
			return false;
		if (c == code) {
			*data = d;
			*len = l;
			return true;
		}
	}
	return false;
}
