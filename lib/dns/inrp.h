/*
 * The INRP option: what content routers tell each other inside a DNS
 * message.  It is one EDNS0 option (RFC 6891) with a
 * code from the local/experimental range, so a plain DNS server ignores it
 * and a plain client never sees it.  Wire format (docs/INRP.md):
 *
 *   query:    version(1) kind=1(1) hop-limit(1) npath(1) nexclude(1)
 *             reserved(1) budget-ms(2)
 *             npath x router-id(8)
 *             nexclude x { family(1: 1=IPv4, 2=IPv6) address(4|16) }
 *   response: version(1) kind=2(1) status(1) reserved(1) load-ms(4)
 *             router-id(8) [origin(4)]
 *
 * All integers big-endian.  A router id is the 64-bit FNV-1a hash of the
 * router's name (inrp_router_id): loop detection needs identity, not
 * secrecy, and any implementation can compute it.  budget-ms is how long
 * the asking router waits for this hop's answer (0: not said); a router
 * gives up on its own alternates in time to answer within it.  origin is
 * the tag (inrp_origin_tag) of the NBRP router whose servers gave the
 * answer, 0 if not known; a response option without it (16 bytes, as the
 * first routers sent) says 0.
 */
#ifndef CR_INRP_H
#define CR_INRP_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "addr.h"

#define INRP_OPTION_CODE        65100
#define INRP_VERSION            1
#define INRP_KIND_QUERY         1
#define INRP_KIND_RESPONSE      2
#define INRP_MAX_PATH           32
#define INRP_MAX_EXCLUDE        16
#define INRP_DEFAULT_HOP_LIMIT  16
#define INRP_QUERY_OPT_MAX      (8 + INRP_MAX_PATH * 8 + INRP_MAX_EXCLUDE * 17)
#define INRP_RESPONSE_OPT_LEN   20
#define INRP_RESPONSE_OPT_LEN_V1 16     /* without origin */

enum inrp_status {
	INRP_STATUS_OK = 0,
	INRP_STATUS_LOOP = 1,           /* the query came back to a router on its path */
	INRP_STATUS_HOP_LIMIT = 2,      /* hop limit reached */
	INRP_STATUS_UNREACHABLE = 3,    /* every alternate failed */
	INRP_STATUS_NO_ROUTE = 4,       /* a router asked us for a name we have no route for */
};

struct inrp_query_opt {
	uint8_t hop_limit;
	uint8_t npath;
	uint8_t nexclude;
	uint16_t budget_ms;
	uint64_t path[INRP_MAX_PATH];   /* router ids, first hop first */
	struct ip_addr exclude[INRP_MAX_EXCLUDE];
};

struct inrp_response_opt {
	uint8_t status;                 /* enum inrp_status */
	uint32_t load_ms;               /* the answering server's load, 0 if unknown */
	uint64_t router_id;             /* the router that answered */
	uint32_t origin;                /* inrp_origin_tag of the servers' router, 0 if not known */
};

uint64_t inrp_router_id(const char *name);
/* A router's tag as a route's origin (route.h): the low half of its id, from its NBRP router-name. */
static inline uint32_t inrp_origin_tag(const char *name)
{
	return (uint32_t)inrp_router_id(name);
}

/*
 * Parses the option data (without code and length).  Returns 0, or -1
 * with err set if it is not a well-formed option of that kind (unknown
 * version, wrong kind, lengths that do not add up, too many entries).
 */
int inrp_query_opt_parse(const uint8_t *data, size_t len, struct inrp_query_opt *o,
			 const char **err);
int inrp_response_opt_parse(const uint8_t *data, size_t len, struct inrp_response_opt *o,
			    const char **err);

/* Writes the option data; returns its length (at most INRP_QUERY_OPT_MAX). */
size_t inrp_query_opt_write(const struct inrp_query_opt *o, uint8_t *out);
size_t inrp_response_opt_write(const struct inrp_response_opt *o, uint8_t *out);

bool inrp_path_contains(const struct inrp_query_opt *o, uint64_t router_id);
bool inrp_is_excluded(const struct inrp_query_opt *o, int family, const uint8_t *addr);

/*
 * Finds option code in an OPT RR's RDATA (already bounds-checked by the
 * DNS parser, checked again here).  Returns true with *data and *len set.
 */
bool inrp_find_option(const uint8_t *opts, size_t opts_len, uint16_t code,
		      const uint8_t **data, size_t *len);

#endif
