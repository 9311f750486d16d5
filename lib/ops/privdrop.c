/*
 * Giving up root after startup (privdrop.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cap-ng.h>

#include "conf.h"
#include "log.h"
#include "privdrop.h"

static int conf_name(const struct conf_stmt *s, char **out, char *err, size_t err_len)
{
	if (*out)
		return conf_error(err, err_len, s, "'%s' given twice", s->argv[0]);
	const char *v = s->argv[1];
	if (!*v || strlen(v) > 64)
		return conf_error(err, err_len, s, "%s must have 1 to 64 characters", s->argv[0]);
	*out = strdup(v);
	if (!*out)
		return conf_error(err, err_len, s, "out of memory");
	return 0;
}

int privdrop_conf_user(const struct conf_stmt *s, struct privdrop_config *c, char *err, size_t err_len)
{
	if (conf_name(s, &c->user, err, err_len) < 0)
		return -1;
	if (!getpwnam(c->user))
		return conf_error(err, err_len, s, "no user '%s' on this system", c->user);
	return 0;
}

int privdrop_conf_group(const struct conf_stmt *s, struct privdrop_config *c, char *err, size_t err_len)
{
	if (conf_name(s, &c->group, err, err_len) < 0)
		return -1;
	if (!getgrnam(c->group))
		return conf_error(err, err_len, s, "no group '%s' on this system", c->group);
	return 0;
}

int privdrop_conf_check(const struct privdrop_config *c, const char *file, char *err, size_t err_len)
{
	if (c->group && !c->user) {
		snprintf(err, err_len, "%s: 'group' needs 'user' (the daemon stays root otherwise)", file);
		return -1;
	}
	return 0;
}

void privdrop_conf_free(struct privdrop_config *c)
{
	free(c->user);
	free(c->group);
	c->user = c->group = NULL;
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

bool privdrop_config_equal(const struct privdrop_config *a, const struct privdrop_config *b)
{
	return same(a->user, b->user) && same(a->group, b->group);
}

/*
 * Hands path to uid:gid and, for a directory, the files in it (one level:
 * a state-dir's stores).  Symbolic links are not followed and a file with
 * other hard links is left alone, so nothing outside can be given away.
 */
static int hand_over(const char *path, uid_t uid, gid_t gid, char *err, size_t err_len)
{
	struct stat st;
	if (lstat(path, &st) < 0 || lchown(path, uid, gid) < 0) {
		snprintf(err, err_len, "chown %s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	DIR *d = opendir(path);
	if (!d) {
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !(S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode)) || st.st_nlink != 1)
			continue;
		if (fchownat(dirfd(d), e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
			snprintf(err, err_len, "chown %s/%s: %s", path, e->d_name, strerror(errno));
			rc = -1;
		}
	}
	closedir(d);
	return rc;
}

int privdrop_apply(const struct privdrop_config *c, const char *const *paths, unsigned npaths,
		   char *err, size_t err_len)
{
	if (!c->user) {
		if (geteuid() == 0)
			log_warn("running as root: set 'user' to give up root after startup");
		return 0;
	}
	const struct passwd *pw = getpwnam(c->user);
	if (!pw) {
		snprintf(err, err_len, "user '%s': no such user", c->user);
		return -1;
	}
	uid_t uid = pw->pw_uid;
	gid_t gid = pw->pw_gid;
	if (c->group) {
		const struct group *gr = getgrnam(c->group);
		if (!gr) {
			snprintf(err, err_len, "group '%s': no such group", c->group);
			return -1;
		}
		gid = gr->gr_gid;
	}
	if (geteuid() != 0) {
		if (geteuid() == uid && getegid() == gid)
			return 0;               /* started as that user already */
		snprintf(err, err_len, "user '%s': only root can become another user", c->user);
		return -1;
	}
	char why[512];
	for (unsigned i = 0; i < npaths; i++)
		if (paths[i] && hand_over(paths[i], uid, gid, why, sizeof(why)) < 0) {
			snprintf(err, err_len, "%s, to user '%s'", why, c->user);
			return -1;
		}
	/* the user's own supplementary groups (e.g. bird's for its socket), or none with 'group' */
	capng_clear(CAPNG_SELECT_BOTH);
	int rc = capng_change_id((int)uid, (int)gid,
				 (c->group ? CAPNG_DROP_SUPP_GRP : CAPNG_INIT_SUPP_GRP) | CAPNG_CLEAR_BOUNDING);
	if (rc < 0) {
		snprintf(err, err_len, "becoming user '%s': libcap-ng capng_change_id failed (%d)", c->user, rc);
		return -1;
	}
	log_info("running as user %s (uid %u, gid %u) without capabilities", c->user, (unsigned)uid,
		 (unsigned)gid);
	return 0;
}

static unsigned unprivileged_port_start(void)
{
	unsigned v = 1024;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_unprivileged_port_start", "re");
	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 1024;
		fclose(f);
	}
	return v;
}

bool privdrop_can_bind(uint16_t port, const char *what, char *err, size_t err_len)
{
	if (port >= unprivileged_port_start())
		return true;
	capng_get_caps_process();
	if (capng_have_capability(CAPNG_EFFECTIVE, CAP_NET_BIND_SERVICE))
		return true;
	struct passwd *pw = getpwuid(geteuid());
	snprintf(err, err_len, "%s needs root's CAP_NET_BIND_SERVICE, which this process (user %s) "
		 "gave up: restart the daemon to apply it", what, pw ? pw->pw_name : "?");
	return false;
}
