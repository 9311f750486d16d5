/*
 * The statements every daemon takes for running as a service, in one
 * keyword table both daemons' top level dispatches to (conf_dispatch_also):
 *
 *     metrics 127.0.0.1 port 9153;    metrics-allow 192.0.2.0/24;
 *     user "inrpd";                   group "inrpd";
 */
#ifndef CR_SERVICE_CONF_H
#define CR_SERVICE_CONF_H

#include "conf.h"
#include "metrics.h"
#include "privdrop.h"

/* The daemon's fields the statements fill: the table's context. */
struct service_conf {
	struct metrics_config *metrics;
	struct privdrop_config *run_as;
};

extern const struct conf_keyword service_keywords[];

#endif
