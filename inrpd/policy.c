/*
 * Response Policy Zones: configuration, the feed from each zone's primary,
 * NOTIFY, the published rule tables; see policy.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <urcu-qsbr.h>
#include <uv.h>

#include "atomicfile.h"
#include "ctl.h"
#include "dns.h"
#include "dnsrr.h"
#include "log.h"
#include "policy.h"
#include "prom.h"
#include "strbuf.h"
#include "vec.h"
#include "wire.h"
#include "xfrcli.h"

#define DNS_OPCODE_NOTIFY 4
#define REFRESH_MIN_MS  1000u
#define REFRESH_MAX_MS  (86400u * 1000u)
#define RETRY_DEFAULT_MS (60u * 1000u)   /* no SOA yet: a first fetch that failed */
#define BAD_LOGGED      20               /* bad records logged by name in one build */
#define FETCH_MAX_RECORDS (16u << 20)
#define FETCH_MAX_BYTES (1ull << 32)
#define JOURNAL_MIN     (1u << 20)       /* the journal is folded into a new copy past this and the copy's size */

/* ---- configuration ---- */

struct zone_ctx {
	struct inrpd_rpz_zone_conf *z;
	bool seen_primary, seen_key, seen_ede;
};

static int kw_primary(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct zone_ctx *x = arg;
	if (conf_once(&x->seen_primary, s, err, err_len) < 0)
		return -1;
	x->z->primary.port = 53;
	return conf_arg_endpoint(s, 1, &x->z->primary.family, x->z->primary.addr, &x->z->primary.port, err,
				 err_len);
}

static int kw_tsig_key(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct zone_ctx *x = arg;
	char *path = NULL;
	if (conf_arg_path_near(s, 1, &x->seen_key, 4096, &path, err, err_len) < 0)
		return -1;
	char why[CONF_ERR_LEN];
	int rc = tsig_key_read(path, &x->z->key, why, sizeof(why));
	free(path);
	if (rc < 0)
		return conf_error(err, err_len, s, "tsig-key: %s", why);
	x->z->has_key = true;
	return 0;
}

static int kw_ede(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	static const char *const words[] = { "none", "blocked", "censored", "filtered", NULL };
	static const uint16_t codes[] = { 0, 15, 16, 17 };
	struct zone_ctx *x = arg;
	unsigned i;
	if (conf_once(&x->seen_ede, s, err, err_len) < 0 || conf_arg_choice(s, 1, words, &i, err, err_len) < 0)
		return -1;
	x->z->ede = codes[i];
	return 0;
}

static const struct conf_keyword zone_keywords[] = {
	{ "primary", 2, 4, CONF_NO_BLOCK, kw_primary },
	{ "tsig-key", 2, 2, CONF_NO_BLOCK, kw_tsig_key },
	{ "ede", 2, 2, CONF_NO_BLOCK, kw_ede },
	{ NULL, 0, 0, 0, NULL },
};

int inrpd_rpz_conf_zone(struct inrpd_rpz_conf *c, const struct conf_stmt *s, char *err, size_t err_len)
{
	if (c->nzones == INRPD_RPZ_MAX_ZONES)
		return conf_error(err, err_len, s, "more than %d rpz zones", INRPD_RPZ_MAX_ZONES);
	struct inrpd_rpz_zone_conf *z = &c->zones[c->nzones];
	memset(z, 0, sizeof(*z));
	z->ede = 15;                    /* Blocked */
	z->line = s->line;
	int rc = name_from_text(&z->zone, s->argv[1], strlen(s->argv[1]));
	if (rc != NAME_OK)
		return conf_error(err, err_len, s, "bad zone name \"%s\": %s", s->argv[1], name_strerror(rc));
	if (z->zone.len == 1)
		return conf_error(err, err_len, s, "the root cannot be a policy zone");
	for (unsigned i = 0; i < c->nzones; i++)
		if (name_equal(&c->zones[i].zone, &z->zone))
			return conf_error(err, err_len, s, "rpz \"%s\" given twice (line %u)", s->argv[1],
					  c->zones[i].line);
	struct zone_ctx x = { .z = z };
	if (conf_dispatch(s->block, zone_keywords, &x, err, err_len) < 0)
		return -1;
	if (!x.seen_primary)
		return conf_error(err, err_len, s, "rpz \"%s\" needs a primary", s->argv[1]);
	c->nzones++;
	return 0;
}

int inrpd_rpz_conf_log_level(struct inrpd_rpz_conf *c, const struct conf_stmt *s, char *err, size_t err_len)
{
	if (strcmp(s->argv[1], "none") == 0) {
		if (conf_once(&c->seen_log_level, s, err, err_len) < 0)
			return -1;
		c->log_level = -1;
		return 0;
	}
	return conf_once_log_level(s, &c->seen_log_level, &c->log_level, err, err_len);
}

int inrpd_rpz_conf_state_dir(struct inrpd_rpz_conf *c, const struct conf_stmt *s, char *err, size_t err_len)
{
	char *path = NULL;
	if (conf_arg_path(s, 1, &c->seen_state_dir, 400, &path, err,
			  err_len) < 0)
		return -1;
	bool absolute = path[0] == '/';
	snprintf(c->state_dir, sizeof(c->state_dir), "%s", path);
	free(path);
	if (!absolute)
		return conf_error(err, err_len, s, "state-dir must be an absolute path");
	return 0;
}

/* ---- the zones ---- */

struct save_job;

struct zone {
	struct inrpd_rpz_zone_conf conf;
	char name[NAME_MAX_TEXT];
	struct rpz_zone *data;          /* the records in force (and an IXFR's, changed in place, while it runs) */
	struct rpz_diff *diff;          /* the IXFR under way: its changes to data, undone if it fails */
	struct rpz_zone *building;      /* a full transfer's new set */
	struct rpz_table *table;        /* compiled from data, published */
	bool has_serial;
	uint32_t serial, refresh_s, retry_s;
	struct xfrcli *fetch;
	bool fetch_again;               /* a NOTIFY came during a fetch (or a copy being written) */
	uv_timer_t timer;
	bool removed;                   /* gone from the configuration: freed once the timer closed */
	bool timer_closed;
	unsigned busy;                  /* jobs on the thread pool that use it */
	/* state-dir: the last good copy and the journal of the IXFRs since, written off the loop */
	struct save_job *saving;        /* the job running; a copy's reads data: no fetch meanwhile */
	struct save_job *queue, **queue_end;    /* journal entries waiting */
	bool want_copy;                 /* a new copy to write once no fetch runs */
	bool journal_ok;                /* the journal on disk follows the copy up to the serial held */
	uint64_t copy_bytes, journal_bytes;
	bool has_saved;
	uint32_t saved_serial;          /* the serial state-dir holds: what a restart would serve */
	bool compacting;                /* the table's diffs being folded, off the loop */
	uint64_t last_apply_us;         /* the last transfer's end to its rules published */
	/* what `show rpz` says */
	uint64_t transfers, transfer_failures, tsig_failures;
	uint64_t bad_rdata;             /* records in force left out at the transfer: their data did not decode */
	uint64_t building_bad;          /* ... in the transfer under way */
	uint64_t notifies, notifies_refused;
	uint64_t notifies_bad_tsig;     /* from the primary's address, without a TSIG of the zone's key that verifies */
	uint64_t notifies_replayed;     /* signed, but the last one again or older than it: no fetch */
	pthread_mutex_t notify_lock;    /* the last signed NOTIFY, which every worker checks against */
	uint64_t notify_signed_at;
	uint8_t notify_mac[TSIG_MAC_LEN];
	uint64_t save_failures;         /* last good copies that could not be kept */
	time_t last_time;
	char last_result[400];
	uint64_t hits[RPZ_ACTIONS];     /* written by every answering thread: atomic adds */
	unsigned notify_pending;        /* set by a worker, taken by the loop */
};

/* What readers see: the zones in order, their tables as they were when published. */
struct inrpd_policy {
	unsigned n;
	int log_level;
	struct {
		const struct rpz_table *t;
		struct zone *z;
	} z[INRPD_RPZ_MAX_ZONES];
};

static struct {
	uv_loop_t *loop;
	uv_async_t notify;
	bool open;
	unsigned n;
	struct zone *zones[INRPD_RPZ_MAX_ZONES];
	int log_level;
	struct inrpd_policy *policy;          /* readers: rcu_dereference */
	char state_dir[512];
	struct rpz_table *retired[INRPD_RPZ_MAX_ZONES * 2];
} g = { .log_level = -1 };

/* Publishes the tables in force; the replaced ones are freed after a grace period. */
static void publish(struct rpz_table **old, unsigned nold)
{
	struct inrpd_policy *p = calloc(1, sizeof(*p));
	if (!p) {
		log_err("rpz: out of memory publishing the rules; the old ones stay");
		return;
	}
	p->log_level = g.log_level;
	for (unsigned i = 0; i < g.n; i++) {
		p->z[p->n].t = g.zones[i]->table;
		p->z[p->n++].z = g.zones[i];
	}
	struct inrpd_policy *prev = rcu_xchg_pointer(&g.policy, p);
	synchronize_rcu();
	free(prev);
	for (unsigned i = 0; i < nold; i++)
		rpz_table_free(old[i]);
}

static void schedule(struct zone *z, unsigned ms);
static void compact(struct zone *z);

/* STATE-DIR/rpz-ZONE: the zone's name with every byte but [a-z0-9.-] as %XX; its journal beside. */
static bool state_path(const struct zone *z, char *path, size_t len, bool journal)
{
	if (!g.state_dir[0])
		return false;
	int n = snprintf(path, len, "%s/rpz-", g.state_dir);
	for (const char *c = z->name; *c && n > 0 && (size_t)n + 12 < len; c++)
		n += (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '.' || *c == '-'
		     ? snprintf(path + n, len - (size_t)n, "%c", *c)
		     : snprintf(path + n, len - (size_t)n, "%%%02X", (unsigned char)*c);
	if (n > 0 && journal)
		n += snprintf(path + n, len - (size_t)n, ".journal");
	return n > 0 && (size_t)n + 4 < len;
}

/* ---- state-dir, off the loop ---- */

/*
 * One write to state-dir on the thread pool, one at a time per zone: a
 * new copy (the records dumped, replaced whole, then a journal naming the
 * copy's epoch), or an IXFR's entry appended to the journal and synced.
 * A crash at any point leaves a copy and a journal whose whole entries
 * follow it: at start the copy applies, then the entries in turn, so the
 * rules come back at a serial that was in force, never between two.
 */
struct save_job {
	uv_work_t req;
	struct zone *z;
	struct save_job *next;
	bool copy;
	uint32_t serial;                /* what state-dir holds once it is written */
	struct rpz_dump_head head;      /* a copy's */
	uint8_t *entry;                 /* an entry's bytes */
	size_t entry_len;
	char path[1024], jpath[1040];
	uint64_t copy_bytes, journal_bytes;     /* after it */
	int rc;
	char err[1200];
};

static void maybe_free(struct zone *z);

/* The journal's entry appended and synced; a failure cuts the file back, so no torn entry stays. */
static int journal_append(struct save_job *j)
{
	int fd = open(j->jpath, O_WRONLY | O_APPEND | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(j->err, sizeof(j->err), "%s: %s", j->jpath, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	size_t done = 0;
	while (done < j->entry_len) {
		ssize_t n = write(fd, j->entry + done, j->entry_len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	if (done < j->entry_len || fdatasync(fd) < 0) {
		snprintf(j->err, sizeof(j->err), "%s: %s", j->jpath, done < j->entry_len ? strerror(errno ? errno : ENOSPC)
			 : strerror(errno));
		if (ftruncate(fd, st.st_size) == 0)
			fdatasync(fd);
		close(fd);
		return -1;
	}
	close(fd);
	j->journal_bytes = (uint64_t)st.st_size + j->entry_len;
	return 0;
}

static void save_work(uv_work_t *req)
{
	struct save_job *j = req->data;
	if (!j->copy) {
		j->rc = journal_append(j);
		return;
	}
	/* the loop leaves data alone meanwhile: no fetch starts while a copy is written */
	size_t len = 0;
	uint8_t *buf = rpz_zone_dump(j->z->data, &j->head, &len);
	uint8_t head[RPZ_JOURNAL_HEAD];
	rpz_journal_head(head, j->head.epoch);
	if (!buf)
		snprintf(j->err, sizeof(j->err), "%s: out of memory", j->path);
	j->rc = buf ? atomicfile_replace(j->path, buf, len, 0600, j->err, sizeof(j->err)) : -1;
	if (j->rc == 0)
		j->rc = atomicfile_replace(j->jpath, head, sizeof(head), 0600, j->err, sizeof(j->err));
	free(buf);
	j->copy_bytes = len;
	j->journal_bytes = sizeof(head);
}

static void save_kick(struct zone *z);
static void drop_queue(struct zone *z);

static void save_done(uv_work_t *req, int status)
{
	struct save_job *j = req->data;
	struct zone *z = j->z;
	z->saving = NULL;
	z->busy--;
	if (status < 0 && j->rc == 0) {
		j->rc = -1;
		snprintf(j->err, sizeof(j->err), "%s", uv_strerror(status));
	}
	if (j->rc < 0) {
		z->save_failures++;
		z->journal_ok = false;
		log_warn("rpz %s: cannot keep serial %u: %s", z->name, j->copy ? j->head.serial : z->serial, j->err);
		/* the entries after a lost one would not follow: a new copy instead, once (a failed copy waits for the next change) */
		if (!j->copy) {
			drop_queue(z);
			z->want_copy = true;
		}
	} else {
		z->journal_bytes = j->journal_bytes;
		z->has_saved = true;
		z->saved_serial = j->serial;
		if (j->copy) {
			z->copy_bytes = j->copy_bytes;
			z->journal_ok = true;
		}
	}
	bool copy = j->copy;
	free(j->entry);
	free(j);
	if (z->removed) {
		maybe_free(z);
		return;
	}
	if (copy && z->fetch_again) {
		z->fetch_again = false;
		schedule(z, 0);
	}
	save_kick(z);
}

static void drop_queue(struct zone *z)
{
	while (z->queue) {
		struct save_job *j = z->queue;
		z->queue = j->next;
		free(j->entry);
		free(j);
	}
	z->queue_end = &z->queue;
}

/* Starts the next write, if any: a copy once no fetch runs (it covers the entries waiting). */
static void save_kick(struct zone *z)
{
	if (z->saving || z->removed)
		return;
	struct save_job *j = NULL;
	if (z->want_copy) {
		if (z->fetch || !(j = calloc(1, sizeof(*j))))
			return;                 /* fetch_done kicks again; out of memory: the next change does */
		drop_queue(z);
		z->want_copy = false;
		j->copy = true;
		j->head = (struct rpz_dump_head){ z->serial, z->refresh_s, z->retry_s, 0 };
		j->serial = z->serial;
		randombytes_buf(&j->head.epoch, sizeof(j->head.epoch));
	} else if ((j = z->queue)) {
		z->queue = j->next;
		if (!z->queue)
			z->queue_end = &z->queue;
	} else {
		return;
	}
	j->z = z;
	j->req.data = j;
	if (!state_path(z, j->path, sizeof(j->path), false) || !state_path(z, j->jpath, sizeof(j->jpath), true) ||
	    uv_queue_work(g.loop, &j->req, save_work, save_done) < 0) {
		z->save_failures++;
		z->journal_ok = false;
		free(j->entry);
		free(j);
		return;
	}
	z->saving = j;
	z->busy++;
}

/* After a change to data: its journal entry (or a new copy) to be written. */
static void save(struct zone *z, struct rpz_diff *d, uint32_t from)
{
	if (!g.state_dir[0])
		return;
	struct save_job *j = NULL;
	if (d && z->journal_ok && !z->want_copy) {
		struct rpz_dump_head f = { .serial = from }, t = { z->serial, z->refresh_s, z->retry_s, 0 };
		uint64_t most = z->copy_bytes > JOURNAL_MIN ? z->copy_bytes : JOURNAL_MIN;
		if ((j = calloc(1, sizeof(*j))) && !(j->entry = rpz_diff_dump(d, &f, &t, &j->entry_len))) {
			free(j);
			j = NULL;
		}
		if (j && z->journal_bytes + j->entry_len > most) {
			free(j->entry);         /* the journal has grown as large as a copy: a new copy */
			free(j);
			j = NULL;
		}
	}
	if (j) {
		j->serial = z->serial;
		z->journal_bytes += j->entry_len;       /* as it will be: the next entry's room */
		*z->queue_end = j;
		z->queue_end = &j->next;
	} else {
		z->want_copy = true;
	}
	save_kick(z);
}

static void install(struct zone *z);

static uint8_t *read_file(const char *path, size_t *len, bool *whole)
{
	FILE *f = fopen(path, "rb");
	*len = 0;
	*whole = false;
	if (!f)
		return NULL;
	uint8_t *buf = NULL;
	size_t cap = 0;
	for (;;) {
		if (*len == cap && (cap >= (1u << 30) || VEC_RESERVE(buf, cap, *len + 65536) < 0))
			break;
		size_t n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
		if (n == 0)
			break;
	}
	*whole = !ferror(f) && feof(f);
	fclose(f);
	return buf;
}

/* The journal after the copy: its whole entries applied, a torn tail cut off, a missing one begun. */
static void load_journal(struct zone *z, struct rpz_dump_head *h)
{
	char path[1040], err[1200];
	if (!state_path(z, path, sizeof(path), true))
		return;
	size_t len, good = 0;
	bool whole;
	unsigned entries = 0;
	uint8_t *buf = read_file(path, &len, &whole);
	const char *why = errno == ENOENT ? "none" : strerror(errno);
	int rc = buf && whole ? rpz_journal_replay(z->data, buf, len, h, &good, &entries, &why) : -1;
	free(buf);
	if (rc < 0) {
		uint8_t head[RPZ_JOURNAL_HEAD];
		rpz_journal_head(head, h->epoch);
		if (strcmp(why, "none") != 0)
			log_warn("rpz %s: %s: %s; a new journal", z->name, path, why);
		if (atomicfile_replace(path, head, sizeof(head), 0600, err, sizeof(err)) < 0) {
			log_warn("rpz %s: %s", z->name, err);
			z->save_failures++;
			return;
		}
		good = sizeof(head);
	} else if (rc > 0) {
		log_warn("rpz %s: %s: %s after serial %u; the rest cut off", z->name, path, why, h->serial);
		if (truncate(path, (off_t)good) < 0) {
			log_warn("rpz %s: %s: %s", z->name, path, strerror(errno));
			z->save_failures++;
			return;
		}
	}
	if (entries)
		log_info("rpz %s: %u IXFRs from %s, now serial %u", z->name, entries, path, h->serial);
	z->journal_ok = true;
	z->journal_bytes = good;
	z->has_saved = true;
	z->saved_serial = h->serial;
}

/* At start: the last good copy and its journal, if kept, apply until the first fetch. */
static void load(struct zone *z)
{
	char path[1024];
	if (!state_path(z, path, sizeof(path), false))
		return;
	size_t len;
	bool whole;
	uint8_t *buf = read_file(path, &len, &whole);
	if (!buf && errno == ENOENT)
		return;
	struct rpz_dump_head h;
	const char *why = buf ? "cannot read it whole" : strerror(errno);
	if (whole && rpz_zone_undump(z->data, buf, len, &h, &why) == 0) {
		log_info("rpz %s: serial %u from %s, %llu records", z->name, h.serial, path,
			 (unsigned long long)rpz_zone_records(z->data));
		z->copy_bytes = len;
		load_journal(z, &h);
		z->has_serial = true;
		z->serial = h.serial;
		z->refresh_s = h.refresh;
		z->retry_s = h.retry;
		snprintf(z->last_result, sizeof(z->last_result), "serial %u kept in %.300s", h.serial, path);
		install(z);
	} else {
		log_warn("rpz %s: %s: %s; fetching the zone whole", z->name, path, why);
	}
	free(buf);
}

static void bad_record(void *arg, const struct name *owner, uint16_t type, const char *why)
{
	unsigned *logged = arg;
	char text[NAME_MAX_TEXT];
	if (++*logged > BAD_LOGGED)
		return;
	name_to_text(owner, text, sizeof(text));
	log_warn("rpz: record %s type %u skipped: %s", text, type, why);
}

static void installed(struct zone *z, struct rpz_table *t, unsigned logged)
{
	const struct rpz_table_stats *st = rpz_table_stats(t);
	if (logged > BAD_LOGGED)
		log_warn("rpz %s: %u more bad records skipped", z->name, logged - BAD_LOGGED);
	log_info("rpz %s: serial %u, %llu rules (%llu wildcards), %llu bad records skipped", z->name, z->serial,
		 (unsigned long long)st->rules, (unsigned long long)st->wildcards, (unsigned long long)st->bad);
	struct rpz_table *old = z->table;
	z->table = t;
	publish(&old, 1);
}

/* The zone's records changed: compile, then publish. */
static void install(struct zone *z)
{
	unsigned logged = 0;
	struct rpz_table *t = rpz_table_build(z->data, bad_record, &logged);
	if (!t) {
		snprintf(z->last_result, sizeof(z->last_result), "out of memory compiling the rules");
		return;
	}
	installed(z, t, logged);
}

/* ---- folding the diffs into one set, off the loop ---- */

struct compact_job {
	uv_work_t req;
	struct zone *z;
	struct rpz_table *from, *out;
};

static void compact_work(uv_work_t *req)
{
	struct compact_job *j = req->data;
	j->out = rpz_table_compact(j->from);
}

static void compact_done(uv_work_t *req, int status)
{
	struct compact_job *j = req->data;
	struct zone *z = j->z;
	z->compacting = false;
	z->busy--;
	/* an IXFR published meanwhile: its table holds newer diffs, folded next time */
	bool current = status == 0 && j->out && !z->removed && z->table == j->from;
	if (current) {
		struct rpz_table *old = z->table;
		z->table = j->out;
		publish(&old, 1);
	} else {
		rpz_table_free(j->out);
	}
	rpz_table_free(j->from);
	free(j);
	if (z->removed)
		maybe_free(z);
	else if (!current && status == 0)
		compact(z);
}

static void compact(struct zone *z)
{
	if (z->compacting || !z->table || rpz_table_delta(z->table) == 0)
		return;
	struct compact_job *j = calloc(1, sizeof(*j));
	if (!j)
		return;                         /* the diffs stay; the next IXFR tries again */
	j->z = z;
	j->from = rpz_table_ref(z->table);
	j->req.data = j;
	if (uv_queue_work(g.loop, &j->req, compact_work, compact_done) < 0) {
		rpz_table_free(j->from);
		free(j);
		return;
	}
	z->compacting = true;
	z->busy++;
}

/* ---- the feed ---- */

static int sink_begin(void *ctx, bool full)
{
	struct zone *z = ctx;
	if (full) {
		/* an IXFR's diffs that turned into a full transfer: the records held as they were */
		rpz_diff_undo(z->data, z->diff);
		if (!z->building && !(z->building = rpz_zone_new(&z->conf.zone)))
			return -1;
		rpz_zone_clear(z->building);
		z->building_bad = 0;
		return 0;
	}
	if (!z->building && !z->diff) {
		if (!(z->diff = rpz_diff_new()))
			return -1;
		z->building_bad = z->bad_rdata;
	}
	return 0;
}

static int sink_end(void *ctx, bool full, uint32_t from, uint32_t to)
{
	(void)ctx, (void)full, (void)from, (void)to;
	return 0;
}

static int sink_rr(void *ctx, bool add, const uint8_t *msg, size_t len, const struct dns_rr *rr,
		   const struct name *owner)
{
	struct zone *z = ctx;
	const char *why = NULL;
	/* a diff changes the records in force in place (readers see only tables), recorded to undo */
	int rc = z->building ? rpz_zone_change(z->building, add, msg, len, rr, owner, NULL, &why)
			     : rpz_zone_change(z->data, add, msg, len, rr, owner, z->diff, &why);
	if (rc == -1) {                         /* data that does not decode: left out, as a bad rule is */
		char text[NAME_MAX_TEXT];
		name_to_text(owner, text, sizeof(text));
		z->building_bad++;
		log_warn("rpz %s: record %s type %u skipped: %s", z->name, text, rr->type, why);
		return 0;
	}
	if (rc == 1)
		return XFRCLI_NOT_APPLIED;
	return rc < 0 ? -1 : 0;
}

static const struct xfr_in_ops sink_ops = { sink_begin, NULL, sink_end, sink_rr };

static void forget_diff(struct zone *z, bool undo)
{
	if (undo)
		rpz_diff_undo(z->data, z->diff);
	rpz_diff_free(z->diff);
	z->diff = NULL;
}

/* An IXFR ended well: its diff is in data; the table from the one in force and the diff.  -1 out of memory. */
static int apply_diff(struct zone *z)
{
	if (!z->table) {
		install(z);
		return z->table ? 0 : -1;
	}
	if (rpz_diff_changes(z->diff) == 0)
		return 0;
	unsigned logged = 0;
	struct rpz_table *t = rpz_table_apply(z->table, z->data, z->diff, bad_record, &logged);
	if (!t)
		return -1;
	installed(z, t, logged);
	return 0;
}

static void fetch_done(void *ctx, const struct xfrcli_result *r)
{
	struct zone *z = ctx;
	uint64_t t0 = uv_hrtime();
	z->fetch = NULL;
	z->last_time = time(NULL);
	if (r->status == 0) {
		z->transfers++;
		snprintf(z->last_result, sizeof(z->last_result), "%s, serial %u", r->kind, r->to);
		bool changed = (z->building || z->diff) && !(z->has_serial && r->to == z->serial && r->versions == 0);
		uint32_t from = z->serial;
		z->refresh_s = r->refresh;
		z->retry_s = r->retry;
		if (changed && z->building) {
			forget_diff(z, true);
			rpz_zone_free(z->data);
			z->data = z->building;
			z->building = NULL;
			z->has_serial = true;
			z->serial = r->to;
			z->bad_rdata = z->building_bad;
			install(z);
			z->last_apply_us = (uv_hrtime() - t0) / 1000;
			save(z, NULL, 0);
		} else if (changed && apply_diff(z) == 0) {
			z->has_serial = true;
			z->serial = r->to;
			z->bad_rdata = z->building_bad;
			z->last_apply_us = (uv_hrtime() - t0) / 1000;
			save(z, z->diff, from);
			forget_diff(z, false);
			compact(z);
		} else if (changed) {
			forget_diff(z, true);
			z->transfers--;
			z->transfer_failures++;
			snprintf(z->last_result, sizeof(z->last_result), "failed: out of memory applying %s", r->kind);
		}
	} else {
		z->transfer_failures++;
		if (r->cut == XFRCLI_CUT_TSIG)
			z->tsig_failures++;
		snprintf(z->last_result, sizeof(z->last_result), "failed: %s", r->why);
	}
	forget_diff(z, true);
	rpz_zone_free(z->building);
	z->building = NULL;
	if (z->removed)
		return;
	save_kick(z);                           /* a copy waits for no fetch to run */
	if (z->fetch_again && !(z->saving && z->saving->copy)) {       /* else the copy's end fetches */
		z->fetch_again = false;
		schedule(z, 0);
		return;
	}
	unsigned s = r->status == 0 ? z->refresh_s : z->retry_s;
	uint64_t ms = s ? (uint64_t)s * 1000u : RETRY_DEFAULT_MS;
	schedule(z, (unsigned)(ms < REFRESH_MIN_MS ? REFRESH_MIN_MS : ms > REFRESH_MAX_MS ? REFRESH_MAX_MS : ms));
}

static void start_fetch(struct zone *z)
{
	/* one at a time; none while a copy is written from data */
	if (z->fetch || (z->saving && z->saving->copy)) {
		z->fetch_again = true;
		return;
	}
	struct sockaddr_storage ss;
	ip_endpoint_sockaddr(&z->conf.primary, &ss);
	struct xfrcli_zone xz = {
		.zone = z->conf.zone, .has_serial = z->has_serial, .serial = z->serial,
		.ops = &sink_ops, .ctx = z, .key = z->conf.has_key ? &z->conf.key : NULL,
	};
	struct xfrcli_limits lim = { .max_names = FETCH_MAX_RECORDS, .max_bytes = FETCH_MAX_BYTES,
				     .idle_ms = 10000, .time_ms = 600000 };
	if (xfrcli_fetch_zone(&z->fetch, g.loop, &xz, (struct sockaddr *)&ss, NULL, &lim, fetch_done, z) < 0) {
		z->fetch = NULL;
		snprintf(z->last_result, sizeof(z->last_result), "failed: out of memory");
		schedule(z, RETRY_DEFAULT_MS);
	}
}

static void on_timer(uv_timer_t *t)
{
	start_fetch(t->data);
}

static void schedule(struct zone *z, unsigned ms)
{
	uv_timer_start(&z->timer, on_timer, ms, 0);
}

static void on_notify(uv_async_t *a)
{
	(void)a;
	for (unsigned i = 0; i < g.n; i++)
		if (__atomic_exchange_n(&g.zones[i]->notify_pending, 0, __ATOMIC_ACQ_REL))
			start_fetch(g.zones[i]);
}

/* Freed once its timer closed and no job on the thread pool uses it. */
static void maybe_free(struct zone *z)
{
	if (!z->removed || !z->timer_closed || z->busy)
		return;
	drop_queue(z);
	rpz_diff_free(z->diff);
	rpz_zone_free(z->data);
	rpz_zone_free(z->building);
	rpz_table_free(z->table);
	sodium_memzero(&z->conf.key, sizeof(z->conf.key));
	pthread_mutex_destroy(&z->notify_lock);
	free(z);
}

static void zone_closed(uv_handle_t *h)
{
	struct zone *z = h->data;
	z->timer_closed = true;
	maybe_free(z);
}

/* Stops a zone; freed once its timer closed (no reader has it then: unpublished first). */
static void zone_close(struct zone *z)
{
	z->removed = true;
	if (z->fetch)
		xfrcli_cancel(z->fetch);
	z->fetch = NULL;
	uv_close((uv_handle_t *)&z->timer, zone_closed);
}

static struct zone *zone_new(const struct inrpd_rpz_zone_conf *c)
{
	struct zone *z = calloc(1, sizeof(*z));
	if (!z || !(z->data = rpz_zone_new(&c->zone))) {
		free(z);
		return NULL;
	}
	z->conf = *c;
	z->queue_end = &z->queue;
	pthread_mutex_init(&z->notify_lock, NULL);
	name_to_text(&c->zone, z->name, sizeof(z->name));
	snprintf(z->last_result, sizeof(z->last_result), "not fetched yet");
	uv_timer_init(g.loop, &z->timer);
	z->timer.data = z;
	return z;
}

int inrpd_rpz_apply(uv_loop_t *loop, const struct inrpd_rpz_conf *c)
{
	if (!g.open) {
		g.loop = loop;
		if (uv_async_init(loop, &g.notify, on_notify) < 0)
			return -1;
		g.open = true;
	}
	struct zone *next[INRPD_RPZ_MAX_ZONES];
	bool kept[INRPD_RPZ_MAX_ZONES] = { false }, made[INRPD_RPZ_MAX_ZONES] = { false };
	unsigned n = 0;
	snprintf(g.state_dir, sizeof(g.state_dir), "%s", c->state_dir);
	for (unsigned i = 0; i < c->nzones; i++) {
		const struct inrpd_rpz_zone_conf *zc = &c->zones[i];
		struct zone *z = NULL;
		for (unsigned k = 0; k < g.n && !z; k++)
			if (!kept[k] && name_equal(&g.zones[k]->conf.zone, &zc->zone)) {
				z = g.zones[k];
				kept[k] = true;
			}
		if (z) {
			bool refetch = !ip_endpoint_equal(&z->conf.primary, &zc->primary) ||
				       z->conf.has_key != zc->has_key ||
				       (zc->has_key && memcmp(&z->conf.key, &zc->key, sizeof(zc->key)) != 0);
			if (refetch && z->fetch) {      /* it holds the old primary and key */
				xfrcli_cancel(z->fetch);
				z->fetch = NULL;
				z->fetch_again = false;
				forget_diff(z, true);
				rpz_zone_free(z->building);
				z->building = NULL;
			}
			z->conf = *zc;
			if (refetch)
				schedule(z, 0);
		} else if ((z = zone_new(zc))) {
			made[n] = true;
			load(z);
			schedule(z, 0);
		} else {
			for (unsigned k = 0; k < n; k++)
				if (made[k])
					zone_close(next[k]);
			return -1;
		}
		next[n++] = z;
	}
	struct zone *gone[INRPD_RPZ_MAX_ZONES];
	unsigned ngone = 0;
	for (unsigned k = 0; k < g.n; k++)
		if (!kept[k])
			gone[ngone++] = g.zones[k];
	memcpy(g.zones, next, n * sizeof(next[0]));
	g.n = n;
	g.log_level = c->log_level;
	publish(NULL, 0);               /* the removed zones are out of every reader's sight after this */
	for (unsigned k = 0; k < ngone; k++)
		zone_close(gone[k]);
	return 0;
}

void inrpd_rpz_close(void)
{
	if (!g.open)
		return;
	/* no reader may see a zone once it is being freed: the workers still run */
	struct inrpd_policy *p = rcu_xchg_pointer(&g.policy, NULL);
	synchronize_rcu();
	free(p);
	for (unsigned i = 0; i < g.n; i++)
		zone_close(g.zones[i]);
	g.n = 0;
	uv_close((uv_handle_t *)&g.notify, NULL);
	g.open = false;
}

void inrpd_rpz_free(void)
{
	struct inrpd_policy *p = rcu_xchg_pointer(&g.policy, NULL);
	synchronize_rcu();
	free(p);
}

/* ---- readers ---- */

const struct inrpd_policy *inrpd_rpz_policy(void)
{
	return rcu_dereference(g.policy);
}

/* A policy is in force: its zones in order, the first that matches. */
bool inrpd_rpz_match(const struct inrpd_policy *p, const struct name *qname, const struct sockaddr *client,
		     struct inrpd_rpz_match *m)
{
	for (unsigned i = 0; i < p->n; i++) {
		if (!rpz_table_lookup(p->z[i].t, qname, &m->hit))
			continue;
		struct zone *z = p->z[i].z;
		m->zone = &z->conf.zone;
		m->ede = z->conf.ede;
		__atomic_fetch_add(&z->hits[m->hit.action], 1, __ATOMIC_RELAXED);
		if (p->log_level >= 0 && (int)log_level_now() >= p->log_level) {
			char q[NAME_MAX_TEXT], from[INET6_ADDRSTRLEN + 8] = "-";
			name_to_text(qname, q, sizeof(q));
			if (client)
				sockaddr_format(client, from, sizeof(from));
			log_msg((enum log_level)p->log_level, "rpz %s: %s from %s: %s%s", z->name, q, from,
				rpz_action_name(m->hit.action), m->hit.wildcard ? " (wildcard)" : "");
		}
		return true;
	}
	return false;
}

/*
 * A captured NOTIFY verifies for as long as its fudge allows.  RFC 8945
 * 5.2.3: the time signed of a key's messages must not go back, so one
 * signed before the last accepted is BADTIME; the last one itself again
 * (a replay, or the primary resending one whose answer it lost) is
 * answered as before but starts no fetch.  A new one becomes the last.
 */
enum notify_seen { NOTIFY_NEW, NOTIFY_AGAIN, NOTIFY_OLDER };

static enum notify_seen notify_seen(struct zone *z, const struct tsig_request *req)
{
	enum notify_seen seen = NOTIFY_NEW;
	pthread_mutex_lock(&z->notify_lock);
	if (req->signed_at < z->notify_signed_at)
		seen = NOTIFY_OLDER;
	else if (req->signed_at == z->notify_signed_at && memcmp(req->mac, z->notify_mac, TSIG_MAC_LEN) == 0)
		seen = NOTIFY_AGAIN;
	else {
		z->notify_signed_at = req->signed_at;
		memcpy(z->notify_mac, req->mac, TSIG_MAC_LEN);
	}
	pthread_mutex_unlock(&z->notify_lock);
	return seen;
}

size_t inrpd_rpz_notify(const uint8_t *pkt, size_t len, const struct sockaddr *client, uint8_t *out,
			size_t cap)
{
	struct wire_reader r = wire_reader(pkt, len);
	struct dns_header h;
	struct name qname;
	uint16_t qtype, qclass;
	if (!dns_header_read(&r, &h) || ((h.flags1 >> 3) & 0x0f) != DNS_OPCODE_NOTIFY || (h.flags1 & 0x80) ||
	    h.qdcount != 1)
		return 0;
	const uint8_t *q0 = r.p;
	if (!dns_question_read(&r, pkt, &qname, &qtype, &qclass) || qtype != DNS_TYPE_SOA)
		return 0;
	size_t qlen = (size_t)(r.p - q0);
	const struct inrpd_policy *p = rcu_dereference(g.policy);
	struct zone *z = NULL;
	for (unsigned i = 0; p && i < p->n && !z; i++)
		if (name_equal(&p->z[i].z->conf.zone, &qname))
			z = p->z[i].z;
	if (!z || qlen + DNS_HEADER_LEN > cap || (size_t)(q0 - pkt) != DNS_HEADER_LEN)
		return 0;
	struct ip_addr from;
	unsigned rcode = DNS_RCODE_REFUSED;
	struct tsig_request req = { 0 };
	const char *why = NULL;
	enum notify_seen seen;
	if (!client || !sockaddr_ip(client, &from) ||
	    !ip_equal(from.family, from.addr, z->conf.primary.family, z->conf.primary.addr)) {
		__atomic_fetch_add(&z->notifies_refused, 1, __ATOMIC_RELAXED);
	} else if (z->conf.has_key && tsig_verify_request(&z->conf.key, pkt, len, (uint64_t)time(NULL), &req, &why) < 0) {
		/* the address is easily forged: with a key, only a NOTIFY it signed starts a fetch */
		rcode = DNS_RCODE_NOTAUTH;
		__atomic_fetch_add(&z->notifies_bad_tsig, 1, __ATOMIC_RELAXED);
		log_debug("rpz %s: NOTIFY refused: %s", z->name, why);        /* counted; a flood must not fill the log */
	} else if (z->conf.has_key && (seen = notify_seen(z, &req)) != NOTIFY_NEW) {
		if (seen == NOTIFY_OLDER) {
			rcode = DNS_RCODE_NOTAUTH;
			req.error = TSIG_BADTIME;
		} else {
			rcode = DNS_RCODE_NOERROR;      /* answered as the first was */
		}
		__atomic_fetch_add(&z->notifies_replayed, 1, __ATOMIC_RELAXED);
		log_debug("rpz %s: NOTIFY %s", z->name,
			  seen == NOTIFY_OLDER ? "signed before the last one: BADTIME" : "seen before");
	} else {
		rcode = DNS_RCODE_NOERROR;
		__atomic_fetch_add(&z->notifies, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&z->notify_pending, 1, __ATOMIC_RELEASE);
		uv_async_send(&g.notify);
	}
	/*
	 * RFC 1996 4.7: the header and question echoed, QR and AA set; signed
	 * when the NOTIFY was (RFC 8945 5.3), with the TSIG error when its
	 * TSIG failed (5.3.2).
	 */
	memcpy(out, pkt, DNS_HEADER_LEN);
	out[2] = (uint8_t)(0x80 | (DNS_OPCODE_NOTIFY << 3) | 0x04);
	out[3] = (uint8_t)rcode;
	wire_store16(out + 6, 0);
	wire_store16(out + 8, 0);
	wire_store16(out + 10, 0);
	memcpy(out + DNS_HEADER_LEN, q0, qlen);
	size_t n = DNS_HEADER_LEN + qlen;
	if (rcode == DNS_RCODE_NOERROR && z->conf.has_key) {
		size_t signed_len = tsig_sign_reply(&z->conf.key, out, n, cap, (uint64_t)time(NULL), req.mac);
		n = signed_len ? signed_len : n;
	} else if (req.error) {
		struct wire_writer w = wire_writer(out, cap);
		w.len = n;
		if (tsig_write_error(&w, &z->conf.key, &req, (uint64_t)time(NULL)))
			n = wire_written(&w);
	}
	return n;
}

/* ---- show rpz ---- */

void inrpd_rpz_show(struct ctl_reply *r, bool json)
{
	if (json)
		ctl_reply_line(r, CTL_DATA, "[");
	for (unsigned i = 0; i < g.n; i++) {
		const struct zone *z = g.zones[i];
		const struct rpz_table_stats none = { 0 };
		const struct rpz_table_stats *st = z->table ? rpz_table_stats(z->table) : &none;
		char primary[80], when[32] = "never";
		ip_endpoint_format(&z->conf.primary, primary, sizeof(primary));
		if (z->last_time) {
			struct tm tm;
			gmtime_r(&z->last_time, &tm);
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		}
		uint64_t hits[RPZ_ACTIONS];
		for (unsigned a = 0; a < RPZ_ACTIONS; a++)
			hits[a] = __atomic_load_n(&z->hits[a], __ATOMIC_RELAXED);
		struct strbuf b = { 0 };
		char serial[16] = "null", saved[16] = "null";
		if (z->has_serial)
			snprintf(serial, sizeof(serial), "%u", z->serial);
		if (z->has_saved)
			snprintf(saved, sizeof(saved), "%u", z->saved_serial);
		if (json) {
			strbuf_addf(&b, "{\"zone\": \"%s\", \"primary\": \"%s\", \"tsig\": %s, \"serial\": %s, "
				      "\"rules\": %llu, \"wildcards\": %llu, \"bad\": %llu, \"transfers\": %llu, "
				      "\"transfer_failures\": %llu, \"tsig_failures\": %llu, \"notifies\": %llu, "
				      "\"notifies_refused\": %llu, \"notifies_bad_tsig\": %llu, \"notifies_replayed\": %llu, "
				      "\"save_failures\": %llu, "
				      "\"saved_serial\": %s, \"last_apply_ms\": %.3f, \"last_transfer\": \"%s\", \"last_result\": \"",
				      z->name, primary, z->conf.has_key ? "true" : "false", serial, (unsigned long long)st->rules,
				      (unsigned long long)st->wildcards, (unsigned long long)(st->bad + z->bad_rdata),
				      (unsigned long long)z->transfers, (unsigned long long)z->transfer_failures,
				      (unsigned long long)z->tsig_failures,
				      (unsigned long long)__atomic_load_n(&z->notifies, __ATOMIC_RELAXED),
				      (unsigned long long)__atomic_load_n(&z->notifies_refused, __ATOMIC_RELAXED),
				      (unsigned long long)__atomic_load_n(&z->notifies_bad_tsig, __ATOMIC_RELAXED),
				      (unsigned long long)__atomic_load_n(&z->notifies_replayed, __ATOMIC_RELAXED),
				      (unsigned long long)z->save_failures, saved, (double)z->last_apply_us / 1000.0, when);
			strbuf_add_json(&b, z->last_result);
			strbuf_addf(&b, "\", \"hits\": {");
			for (unsigned a = 0; a < RPZ_ACTIONS; a++)
				strbuf_addf(&b, "%s\"%s\": %llu", a ? ", " : "", rpz_action_name(a),
					      (unsigned long long)hits[a]);
			strbuf_addf(&b, "}}%s", i + 1 < g.n ? "," : "");
			ctl_reply_line(r, CTL_DATA, "%s", strbuf_str(&b));
		} else {
			ctl_reply_line(r, CTL_DATA, "rpz %s from %s%s: serial %s, %llu rules (%llu wildcards), %llu bad",
				       z->name, primary, z->conf.has_key ? " (tsig)" : "", z->has_serial ? serial : "none",
				       (unsigned long long)st->rules, (unsigned long long)st->wildcards,
				       (unsigned long long)(st->bad + z->bad_rdata));
			ctl_reply_line(r, CTL_DATA, "  last transfer %s: %s (applied in %.3f ms), serial %s in state-dir",
				       when, z->last_result, (double)z->last_apply_us / 1000.0, z->has_saved ? saved : "none");
			ctl_reply_line(r, CTL_DATA, "  transfers %llu failures %llu tsig-failures %llu notifies %llu "
				       "notifies-refused %llu notifies-bad-tsig %llu notifies-replayed %llu save-failures %llu",
				       (unsigned long long)z->transfers,
				       (unsigned long long)z->transfer_failures, (unsigned long long)z->tsig_failures,
				       (unsigned long long)__atomic_load_n(&z->notifies, __ATOMIC_RELAXED),
				       (unsigned long long)__atomic_load_n(&z->notifies_refused, __ATOMIC_RELAXED),
				       (unsigned long long)__atomic_load_n(&z->notifies_bad_tsig, __ATOMIC_RELAXED),
				       (unsigned long long)__atomic_load_n(&z->notifies_replayed, __ATOMIC_RELAXED),
				       (unsigned long long)z->save_failures);
			for (unsigned a = 0; a < RPZ_ACTIONS; a++)
				strbuf_addf(&b, "%s%s %llu", a ? " " : "  hits ", rpz_action_name(a),
					      (unsigned long long)hits[a]);
			ctl_reply_line(r, CTL_DATA, "%s", strbuf_str(&b));
		}
		strbuf_free(&b);
	}
	if (json)
		ctl_reply_line(r, CTL_DATA, "]");
}

/* ---- metrics ---- */

void inrpd_rpz_metrics(struct prom *p)
{
	static const struct {
		const char *name;
		enum prom_type type;
		const char *help;
	} fams[] = {
		{ "inrpd_rpz_hits_total", PROM_COUNTER, "Questions a response policy zone decided, by action." },
		{ "inrpd_rpz_rules", PROM_GAUGE, "Rules in force in a response policy zone." },
		{ "inrpd_rpz_bad_records", PROM_GAUGE, "Records of a response policy zone left out as bad." },
		{ "inrpd_rpz_serial", PROM_GAUGE, "The serial of the response policy zone held." },
		{ "inrpd_rpz_transfers_total", PROM_COUNTER, "Transfers of a response policy zone, by result." },
		{ "inrpd_rpz_notifies_total", PROM_COUNTER, "NOTIFYs for a response policy zone, by result." },
		{ "inrpd_rpz_last_transfer_timestamp_seconds", PROM_GAUGE, "When the zone's last transfer ended." },
		{ "inrpd_rpz_last_apply_seconds", PROM_GAUGE,
		  "From the zone's last transfer's end to its rules in force for every question." },
	};
	if (g.n == 0)
		return;
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		prom_family(p, fams[f].name, fams[f].type, fams[f].help);
		for (unsigned i = 0; i < g.n; i++) {
			const struct zone *z = g.zones[i];
			const struct rpz_table_stats none = { 0 };
			const struct rpz_table_stats *st = z->table ? rpz_table_stats(z->table) : &none;
			struct prom_label lb[2] = { { "zone", z->name }, { NULL, NULL } };
			switch (f) {
			case 0:
				for (unsigned a = 0; a < RPZ_ACTIONS; a++) {
					lb[1] = (struct prom_label){ "action", rpz_action_name(a) };
					prom_u64(p, fams[f].name, lb, 2, __atomic_load_n(&z->hits[a], __ATOMIC_RELAXED));
				}
				break;
			case 1:
				prom_u64(p, fams[f].name, lb, 1, st->rules);
				break;
			case 2:
				prom_u64(p, fams[f].name, lb, 1, st->bad + z->bad_rdata);
				break;
			case 3:
				if (z->has_serial)
					prom_u64(p, fams[f].name, lb, 1, z->serial);
				break;
			case 4:
				lb[1] = (struct prom_label){ "result", "ok" };
				prom_u64(p, fams[f].name, lb, 2, z->transfers);
				lb[1] = (struct prom_label){ "result", "tsig" };
				prom_u64(p, fams[f].name, lb, 2, z->tsig_failures);
				lb[1] = (struct prom_label){ "result", "failed" };
				prom_u64(p, fams[f].name, lb, 2, z->transfer_failures - z->tsig_failures);
				break;
			case 5:
				lb[1] = (struct prom_label){ "result", "accepted" };
				prom_u64(p, fams[f].name, lb, 2, __atomic_load_n(&z->notifies, __ATOMIC_RELAXED));
				lb[1] = (struct prom_label){ "result", "refused" };
				prom_u64(p, fams[f].name, lb, 2, __atomic_load_n(&z->notifies_refused, __ATOMIC_RELAXED));
				lb[1] = (struct prom_label){ "result", "bad_tsig" };
				prom_u64(p, fams[f].name, lb, 2, __atomic_load_n(&z->notifies_bad_tsig, __ATOMIC_RELAXED));
				lb[1] = (struct prom_label){ "result", "replayed" };
				prom_u64(p, fams[f].name, lb, 2, __atomic_load_n(&z->notifies_replayed, __ATOMIC_RELAXED));
				break;
			case 6:
				if (z->last_time)
					prom_u64(p, fams[f].name, lb, 1, (uint64_t)z->last_time);
				break;
			default:
				if (z->last_time)
					prom_double(p, fams[f].name, lb, 1, (double)z->last_apply_us / 1e6);
				break;
			}
		}
	}
}
