/*
 * records.c: records configured for contents (`record` in a route block),
 * read at config load into wire RDATA, answered by the router next to the
 * servers.
 */
#ifndef INRPD_RECORDS_H
#define INRPD_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "name.h"

struct inrpd_records;
struct dns_builder;
struct inrpd_records *inrpd_records_new(void);
/* Parses one record of a route (presentation format); errors go to err. */
int inrpd_records_add(struct inrpd_records *rs, const struct name *owner, const char *type,
		      const char *rdata, char *err, size_t err_len);
/* Sorts the table; call once after the last add. */
void inrpd_records_finish(struct inrpd_records *rs);
unsigned inrpd_records_count(const struct inrpd_records *rs);
void inrpd_records_free(struct inrpd_records *rs);
/* Adds owner's records of qtype (ANY: all) to the answer; returns how many. */
unsigned inrpd_records_answer(const struct inrpd_records *rs, const struct name *owner,
			      uint16_t qtype, struct dns_builder *b, uint32_t ttl);

/* What reload can change; readers see one consistent version. */

#endif
