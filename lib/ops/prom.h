/*
 * The Prometheus text exposition format (version 0.0.4), written into a
 * growable buffer:
 *
 *     # HELP inrpd_queries_total Queries received.
 *     # TYPE inrpd_queries_total counter
 *     inrpd_queries_total{transport="udp"} 1027
 *
 * A family is announced once with prom_family(), then its samples follow.
 * Metric and label names are the caller's constants (checked in debug
 * builds); label values and help text are escaped here, so a peer name
 * from a config file cannot break the output.
 */
#ifndef CR_PROM_H
#define CR_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

struct prom {
	struct strbuf b;                /* nomem: an append failed, the output is incomplete */
};

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM };

struct prom_label {
	const char *name;
	const char *value;
};

void prom_init(struct prom *p);
void prom_reset(struct prom *p);        /* empty, keeping the buffer */
void prom_free(struct prom *p);

/* "# HELP name help" and "# TYPE name type". */
void prom_family(struct prom *p, const char *name, enum prom_type type, const char *help);
/* One sample: name{labels} value. */
void prom_u64(struct prom *p, const char *name, const struct prom_label *labels, unsigned nlabels,
	      uint64_t value);
void prom_double(struct prom *p, const char *name, const struct prom_label *labels, unsigned nlabels,
		 double value);
/* prom_family() and one sample without labels. */
void prom_one(struct prom *p, const char *name, enum prom_type type, const char *help, double value);

/*
 * A histogram's samples: name_bucket{...,le="B"} (cumulative), +Inf,
 * name_sum and name_count.  counts[i] is the number of observations in
 * (bounds[i-1], bounds[i]], counts[nbounds] those above the last bound.
 */
struct prom_histogram {
	unsigned nbounds;
	const double *bounds;           /* ascending */
	const uint64_t *counts;         /* nbounds + 1 */
	double sum;
};
void prom_histogram(struct prom *p, const char *name, const struct prom_label *labels, unsigned nlabels,
		    const struct prom_histogram *h);

#endif
