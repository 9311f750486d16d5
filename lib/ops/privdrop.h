/*
 * Giving up root after the sockets are bound, for daemons started as root
 * by hand or by a supervisor other than systemd (whose units set User=
 * themselves):
 *
 *     user "inrpd";            the daemon runs as this user ...
 *     group "inrpd";           ... and group (default: the user's)
 *
 * The change (libcap-ng) sets the user's supplementary groups, empties
 * every capability set and the bounding set: nothing the daemon does after
 * startup needs a privilege, and a reload that would (a new listener on a
 * privileged port) is refused instead.
 */
#ifndef CR_PRIVDROP_H
#define CR_PRIVDROP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conf_stmt;

struct privdrop_config {
	char *user, *group;             /* NULL: not configured */
};

int privdrop_conf_user(const struct conf_stmt *s, struct privdrop_config *c, char *err, size_t err_len);
int privdrop_conf_group(const struct conf_stmt *s, struct privdrop_config *c, char *err, size_t err_len);
/* After the file: 'group' needs 'user', both must exist. */
int privdrop_conf_check(const struct privdrop_config *c, const char *file, char *err, size_t err_len);
void privdrop_conf_free(struct privdrop_config *c);
bool privdrop_config_equal(const struct privdrop_config *a, const struct privdrop_config *b);

/*
 * Hands the files at paths (sockets and directories the daemon made as
 * root, a directory with the files in it; NULL entries skipped) to the
 * user and group, then becomes them, so what the daemon writes after
 * startup it may write.  Without 'user' there is nothing to do but warn
 * when running as root; already running as that user is fine, another
 * non-root user is an error.  Returns 0, or -1 with err set.
 */
int privdrop_apply(const struct privdrop_config *c, const char *const *paths, unsigned npaths,
		   char *err, size_t err_len);

/* Whether this process may still bind port (below ip_unprivileged_port_start it takes
 * root's CAP_NET_BIND_SERVICE); if not, err says why, naming what. */
bool privdrop_can_bind(uint16_t port, const char *what, char *err, size_t err_len);

#endif
