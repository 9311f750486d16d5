#include "service_conf.h"

static int kw_metrics(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	return metrics_conf_listen(s, ((struct service_conf *)arg)->metrics, err, err_len);
}

static int kw_metrics_allow(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	return metrics_conf_allow(s, ((struct service_conf *)arg)->metrics, err, err_len);
}

static int kw_user(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	return privdrop_conf_user(s, ((struct service_conf *)arg)->run_as, err, err_len);
}

static int kw_group(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	return privdrop_conf_group(s, ((struct service_conf *)arg)->run_as, err, err_len);
}

const struct conf_keyword service_keywords[] = {
	{ "metrics", 2, 4, CONF_NO_BLOCK, kw_metrics },
	{ "metrics-allow", 2, 2, CONF_NO_BLOCK, kw_metrics_allow },
	{ "user", 2, 2, CONF_NO_BLOCK, kw_user },
	{ "group", 2, 2, CONF_NO_BLOCK, kw_group },
	{ NULL, 0, 0, CONF_NO_BLOCK, NULL },
};
