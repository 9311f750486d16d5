/*
 * nbrpd's control socket (lib/core/ctl.h): the commands nbrc sends, and the
 * text and JSON they answer with.  Read-only views of the sessions and the
 * RDE, and the few commands that act (enable, disable, reload).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aggregates.h"
#include "attest.h"
#include "birdmon.h"
#include "conf.h"
#include "ctl.h"
#include "fibpush.h"
#include "nbrpd.h"
#include "nexthop.h"
#include "rde.h"
#include "rdesig.h"
#include "refused.h"
#include "session.h"
#include "strbuf.h"

#ifndef NBRPD_VERSION
#define NBRPD_VERSION "unknown"
#endif

/* show status's transfer counters, as JSON members with a trailing ", " (a static buffer). */
static const char *agg_status_json(const struct aggregates_stats *as)
{
	static char buf[1024];
	snprintf(buf, sizeof(buf), "\"aggregates\": %llu, \"aggregate_members\": %llu, \"fetches\": %llu, "
		 "\"fetch_failures\": %llu, \"fetch_over_names\": %llu, \"fetch_over_bytes\": %llu, "
		 "\"fetch_idle_timeouts\": %llu, \"fetch_time_limits\": %llu, \"fetch_wrong_version\": %llu, "
		 "\"fetch_digest_mismatch\": %llu, \"versions_discarded\": %llu, \"transfers_served\": %llu, "
		 "\"transfers_refused\": %llu, \"transfer_closed_acl\": %llu, \"transfer_closed_full\": %llu, "
		 "\"transfer_closed_idle\": %llu, \"transfer_closed_time\": %llu, ",
		 (unsigned long long)as->aggregates, (unsigned long long)as->members,
		 (unsigned long long)as->fetches, (unsigned long long)as->fetch_failures,
		 (unsigned long long)as->fetch_over_names, (unsigned long long)as->fetch_over_bytes,
		 (unsigned long long)as->fetch_idle, (unsigned long long)as->fetch_time,
		 (unsigned long long)as->fetch_wrong_version, (unsigned long long)as->fetch_digest_mismatch,
		 (unsigned long long)as->discards, (unsigned long long)(as->served_axfr + as->served_ixfr), (unsigned long long)as->refused,
		 (unsigned long long)as->closed_acl, (unsigned long long)as->closed_full,
		 (unsigned long long)as->closed_idle, (unsigned long long)as->closed_time);
	return buf;
}

/* Wall-clock microseconds as JSON seconds (null for 0) or as UTC text (- for 0), in buf. */
static const char *unix_us(uint64_t us, bool json, char *buf, size_t len)
{
	if (!us)
		return json ? "null" : "-";
	time_t secs = (time_t)(us / 1000000u);
	struct tm tm;
	char day[32];
	if (json || !gmtime_r(&secs, &tm) || !strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(buf, len, "%llu.%06u", (unsigned long long)secs, (unsigned)(us % 1000000u));
	else
		snprintf(buf, len, "%s.%06uZ", day, (unsigned)(us % 1000000u));
	return buf;
}

static void show_status(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	struct nbrpd *d = ctx;
	(void)args;
	(void)nargs;
	unsigned n = sessions_count(d->sessions), up = 0;
	for (unsigned i = 0; i < n; i++)
		up += sessions_peer(d->sessions, i)->established != NULL;
	unsigned long long uptime = (unsigned long long)((uv_now(d->loop) - d->started) / 1000);
	bool fib = d->fib && fibpush_connected(d->fib);
	struct rde_stats st;
	rde_stats(d->rde, &st);
	struct rdesig_stats sg;
	rdesig_stats(d->sig, &sg);
	struct aggregates_stats as = { 0 };
	if (d->aggs)
		aggregates_stats(d->aggs, &as);
	static const uint64_t none[TRUST_REFUSALS];
	const uint64_t *refused = sg.trust_refused ? sg.trust_refused : none;
	uint64_t keys_refused, tls_failures;
	sessions_auth_totals(d->sessions, &keys_refused, &tls_failures);
	char buf[48];
	const char *changed = unix_us(st.best_changed_us, json, buf, sizeof(buf));
	if (json) {
		ctl_reply_line(r, CTL_DATA, "{\"version\": \"%s\", \"pid\": %d, \"uptime_s\": %llu, "
			       "\"peers\": %u, \"established\": %u, \"names\": %llu, "
			       "\"session_keys_refused\": %llu, \"tls_failures\": %llu, \"fib_channel\": %s, "
			       "\"fib_syncs\": %llu, \"fib_hold_closes\": %llu, \"fib_queued_bytes\": %zu, "
			       "\"bird\": \"%s\", \"nexthops\": %u, %s\"rib_entries\": %llu, \"last_best_change\": %s, "
			       "\"rib_attrs\": %llu, \"jobs\": %u, \"loop_turn_max_ms\": %.3f, \"loop_turn_max_cpu_ms\": %.3f, "
			       "\"loop_turns\": %llu, \"signatures\": %s, \"trust_file\": %s, "
			       "\"signatures_verified\": %llu, \"signature_cache_hits\": %llu, "
			       "\"signature_cache_misses\": %llu, \"bad_signatures_cached\": %llu, \"hops_signed\": %llu, \"origins_signed\": %llu, "
			       "\"hop_signatures_kept\": %llu, \"routes_rechecked\": %llu, \"chain_bytes\": %llu, "
			       "\"origin_seqs_kept\": %llu, \"withdrawals_signed\": %llu, \"trust_serial\": %llu, \"trust_valid_until\": %llu, \"trust_expiring\": %s, "
			       "\"trust_files_refused\": {\"%s\": %llu, \"%s\": %llu, \"%s\": %llu, \"%s\": %llu}, "
			       "\"stale_verdicts\": %llu}",
			       NBRPD_VERSION, (int)getpid(), uptime, n, up, (unsigned long long)st.names,
			       (unsigned long long)keys_refused, (unsigned long long)tls_failures,
			       d->fib ? (fib ? "\"connected\"" : "\"down\"") : "null",
			       (unsigned long long)(d->fib ? fibpush_syncs(d->fib) : 0),
			       (unsigned long long)(d->fib ? fibpush_hold_closes(d->fib) : 0),
			       d->fib ? fibpush_queued(d->fib) : (size_t)0, birdmon_state(d->bird),
			       nexthop_count(d->nexthops), agg_status_json(&as), (unsigned long long)st.entries, changed,
			       (unsigned long long)st.attrs,
			       st.jobs, d->turn_max_ms, d->turn_max_cpu_ms, (unsigned long long)d->turns,
			       sg.on ? "true" : "false", sg.trust ? "true" : "false", (unsigned long long)sg.verified,
			       (unsigned long long)sg.cache_hits, (unsigned long long)sg.cache_misses,
			       (unsigned long long)sg.bad_cached,
			       (unsigned long long)sg.signed_hops, (unsigned long long)sg.signed_origins,
			       (unsigned long long)sg.hops_kept, (unsigned long long)sg.rechecked,
			       (unsigned long long)sg.chain_bytes, (unsigned long long)sg.fresh_kept,
			       (unsigned long long)sg.signed_withdrawals,
			       (unsigned long long)sg.trust_serial,
			       (unsigned long long)sg.trust_valid_until, sg.trust_expiring ? "true" : "false",
			       rdesig_trust_refusal_name(TRUST_REFUSED_BAD), (unsigned long long)refused[TRUST_REFUSED_BAD],
			       rdesig_trust_refusal_name(TRUST_REFUSED_OLDER), (unsigned long long)refused[TRUST_REFUSED_OLDER],
			       rdesig_trust_refusal_name(TRUST_REFUSED_NOT_YET),
			       (unsigned long long)refused[TRUST_REFUSED_NOT_YET],
			       rdesig_trust_refusal_name(TRUST_REFUSED_EXPIRED),
			       (unsigned long long)refused[TRUST_REFUSED_EXPIRED], (unsigned long long)sg.stale_verdicts);
		return;
	}
	ctl_reply_line(r, CTL_DATA, "nbrpd %s, router %s, pid %d, up %llu s", NBRPD_VERSION,
		       d->cfg->router_name, (int)getpid(), uptime);
	ctl_reply_line(r, CTL_DATA, "peers %u, established %u, names %llu; sessions refused for their TLS key %llu, "
		       "TLS failures %llu; last best route change %s", n, up, (unsigned long long)st.names,
		       (unsigned long long)keys_refused, (unsigned long long)tls_failures, changed);
	if (d->fib)
		ctl_reply_line(r, CTL_DATA, "fib-channel %s: %s, %zu bytes queued, %llu syncs, "
			       "%llu closed for fib-send-hold-time", d->cfg->fib_channel, fib ? "connected" : "down",
			       fibpush_queued(d->fib), (unsigned long long)fibpush_syncs(d->fib),
			       (unsigned long long)fibpush_hold_closes(d->fib));
	ctl_reply_line(r, CTL_DATA, "BIRD: %s%s%s, %u addresses followed", birdmon_state(d->bird),
		       d->cfg->bird_socket ? " at " : "", d->cfg->bird_socket ? d->cfg->bird_socket : "",
		       nexthop_count(d->nexthops));
	ctl_reply_line(r, CTL_DATA, "aggregates %llu, %llu members; fetches %llu, failed %llu (over fetch-max-names %llu, "
		       "over fetch-max-bytes %llu, idle %llu, over fetch-time-limit %llu, not the version offered %llu, "
		       "member digest mismatch %llu); versions thrown away %llu",
		       (unsigned long long)as.aggregates, (unsigned long long)as.members,
		       (unsigned long long)as.fetches, (unsigned long long)as.fetch_failures,
		       (unsigned long long)as.fetch_over_names, (unsigned long long)as.fetch_over_bytes,
		       (unsigned long long)as.fetch_idle, (unsigned long long)as.fetch_time,
		       (unsigned long long)as.fetch_wrong_version, (unsigned long long)as.fetch_digest_mismatch,
		       (unsigned long long)as.discards);
	if (as.serving)
		ctl_reply_line(r, CTL_DATA, "transfers served %llu, refused %llu; connections closed: outside "
			       "allow-transfer %llu, over the bound %llu, idle %llu, open too long %llu",
			       (unsigned long long)(as.served_axfr + as.served_ixfr), (unsigned long long)as.refused,
			       (unsigned long long)as.closed_acl, (unsigned long long)as.closed_full,
			       (unsigned long long)as.closed_idle, (unsigned long long)as.closed_time);
	ctl_reply_line(r, CTL_DATA, "table jobs %u; longest loop turn %.1f ms (%.1f ms of CPU) in %llu turns",
		       st.jobs, d->turn_max_ms, d->turn_max_cpu_ms, (unsigned long long)d->turns);
	if (sg.on)
		ctl_reply_line(r, CTL_DATA, "signatures: trust file %s; %llu verified, links cached %llu hits "
			       "%llu misses; %llu refused by a link that failed before; signed %llu hops, %llu origins; "
			       "%llu hop signatures kept; %llu routes checked again; chains kept %llu bytes; "
			       "%llu newest origin_seqs kept; %llu origin withdrawals signed",
			       sg.trust ? "in force" : "NONE",
			       (unsigned long long)sg.verified, (unsigned long long)sg.cache_hits,
			       (unsigned long long)sg.cache_misses, (unsigned long long)sg.bad_cached,
			       (unsigned long long)sg.signed_hops,
			       (unsigned long long)sg.signed_origins, (unsigned long long)sg.hops_kept,
			       (unsigned long long)sg.rechecked, (unsigned long long)sg.chain_bytes,
			       (unsigned long long)sg.fresh_kept, (unsigned long long)sg.signed_withdrawals);
	if (sg.on) {
		char until[32] = "";
		time_t t = (time_t)sg.trust_valid_until;
		struct tm tm;
		if (sg.trust && gmtime_r(&t, &tm))
			strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm);
		ctl_reply_line(r, CTL_DATA, "trust file: serial %llu, valid until %s%s; refused: %llu bad, "
			       "%llu not newer, %llu not yet valid, %llu expired; %llu batches checked again (the trust "
			       "data changed while they were verified)", (unsigned long long)sg.trust_serial,
			       sg.trust ? until : "-", sg.trust_expiring ? " (EXPIRING)" : "",
			       (unsigned long long)refused[TRUST_REFUSED_BAD],
			       (unsigned long long)refused[TRUST_REFUSED_OLDER],
			       (unsigned long long)refused[TRUST_REFUSED_NOT_YET],
			       (unsigned long long)refused[TRUST_REFUSED_EXPIRED], (unsigned long long)sg.stale_verdicts);
	}
}

static const char *const sig_policy_names[] = { "off", "prefer", "require" };

/* Routes received by signature state, and the invalid ones by reason. */
static void sig_counts(struct strbuf *b, const struct rdesig_peer_stats *rs, bool json)
{
	if (!rs->state)
		return;
	strbuf_addf(b, json ? ", \"routes_by_state\": {" : "; signatures:");
	for (int s = ATTEST_VALID; s < ATTEST_PENDING; s++)
		strbuf_addf(b, json ? "%s\"%s\": %llu" : "%s %s %llu", s && json ? ", " : s ? "," : "",
			    attest_state_name((enum attest_state)s), (unsigned long long)rs->state[s]);
	strbuf_addf(b, json ? "}, \"invalid_by_reason\": {" : "");
	bool first = true;
	for (int k = ATTEST_OK + 1; k < ATTEST_REASONS; k++)
		if (json || rs->invalid[k]) {
			strbuf_addf(b, json ? "%s\"%s\": %llu" : "%s%s %llu", first ? (json ? "" : " (") : ", ",
				    attest_reason_name((enum attest_reason)k), (unsigned long long)rs->invalid[k]);
			first = false;
		}
	if (json)
		strbuf_addf(b, "}");
	else if (!first)
		strbuf_addf(b, ")");
	/* its verification budget */
	strbuf_addf(b, json ? ", \"verifications\": %llu, \"verifications_failed\": %llu, \"checks_queued\": %llu, "
			      "\"checks_loop_ms\": %llu, \"checks_worker_ms\": %llu, \"checks_throttled\": %llu, "
			      "\"checks_weight\": %u"
			    : "; checks: verified %llu, failed %llu, queued %llu, loop %llu ms, workers %llu ms, "
			      "throttled %llu, weight %u",
		    (unsigned long long)rs->verified, (unsigned long long)rs->failed,
		    (unsigned long long)rs->queued, (unsigned long long)(rs->loop_ns / 1000000),
		    (unsigned long long)(rs->worker_ns / 1000000), (unsigned long long)rs->throttled,
		    rs->weight);
}

static void show_peers(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	struct nbrpd *d = ctx;
	(void)args;
	(void)nargs;
	unsigned n = sessions_count(d->sessions);
	if (json)
		ctl_reply_line(r, CTL_DATA, "[");
	struct strbuf err = { 0 }, sig = { 0 };
	for (unsigned i = 0; i < n; i++) {
		const struct peer *p = sessions_peer(d->sessions, i);
		struct rde_peer_stats rs = { 0 };
		struct rdesig_peer_stats ss;
		if (p->rde)
			rde_peer_stats(p->rde, &rs);
		rdesig_peer_stats(p->sig, &ss);
		char addr[80];
		ip_endpoint_format(&p->cfg.remote, addr, sizeof(addr));
		const char *state = p->enabled ? nbrp_session_state_name(peer_state(p)) : "Disabled";
		strbuf_reset(&sig);
		if (p->cfg.signatures != SIG_OFF)
			sig_counts(&sig, &ss, json);
		unsigned long long since = p->established ? (uv_now(d->loop) - p->established_at) / 1000 : 0;
		if (json) {
			strbuf_reset(&err);
			strbuf_add_json(&err, p->last_error);
			ctl_reply_line(r, CTL_DATA, "{\"name\": \"%s\", \"address\": \"%s\", \"state\": \"%s\", "
				       "\"established_s\": %llu, \"names\": %llu, \"eor\": %s, \"updates_in\": %llu, "
				       "\"updates_out\": %llu, \"bad_routes\": %llu, \"notifications_in\": %llu, "
				       "\"notifications_out\": %llu, \"flaps\": %llu, \"dumping\": %s, \"queued\": %zu, "
				       "\"origin_withdrawals_refused\": %llu, \"origin_withdrawals_forged\": %llu, "
				       "\"restart_time_s\": %u, "
				       "\"restart_time_asked_s\": %u, \"restart_time_capped\": %llu, \"restarting\": %s, "
				       "\"authentication\": \"%s\", \"session_keys_refused\": %llu, \"tls_failures\": %llu, "
				       "\"trust_refreshes\": %llu, \"last_error\": \"%s\", \"signatures\": \"%s\"%s, "
				       "\"local_role\": \"%s\"}%s",
				       p->cfg.name, addr, state, since, (unsigned long long)rs.names,
				       p->eor_received ? "true" : "false", (unsigned long long)p->updates_in,
				       (unsigned long long)rs.updates_out, (unsigned long long)rs.bad_routes,
				       (unsigned long long)p->notifications_in, (unsigned long long)p->notifications_out,
				       (unsigned long long)p->flaps, rs.dumping ? "true" : "false", peer_queued(p),
				       (unsigned long long)rs.owd_refused, (unsigned long long)ss.owd_forged,
				       p->restart_time_s, p->restart_time_asked_s,
				       (unsigned long long)p->restart_capped, p->restarting ? "true" : "false",
				       p->cfg.tls ? "tls" : "none", (unsigned long long)p->auth_refused,
				       (unsigned long long)p->tls_failures, (unsigned long long)p->trust_refreshes, strbuf_str(&err), sig_policy_names[p->cfg.signatures], strbuf_str(&sig),
				       nbrpd_role_name(p->cfg.role), i + 1 < n ? "," : "");
		} else {
			if (rs.owd_refused)
				strbuf_addf(&sig, "; unsigned origin withdrawals left %llu signed routes",
					    (unsigned long long)rs.owd_refused);
			if (ss.owd_forged)
				strbuf_addf(&sig, "; signed origin withdrawals refused %llu",
					    (unsigned long long)ss.owd_forged);
			if (p->cfg.role != ROLE_NONE)
				strbuf_addf(&sig, "; local role %s", nbrpd_role_name(p->cfg.role));
			if (p->cfg.tls || p->auth_refused || p->tls_failures)
				strbuf_addf(&sig, "; tls%s: session keys refused %llu, failures %llu",
					    p->cfg.tls ? "" : " off", (unsigned long long)p->auth_refused,
					    (unsigned long long)p->tls_failures);
			ctl_reply_line(r, CTL_DATA, "%-16s %-28s %-12s %6llus names %llu updates in %llu out %llu%s%s%s",
				       p->cfg.name, addr, state, since, (unsigned long long)rs.names,
				       (unsigned long long)p->updates_in, (unsigned long long)rs.updates_out,
				       strbuf_str(&sig), p->last_error[0] ? "; last error: " : "", p->last_error);
		}
	}
	strbuf_free(&err);
	strbuf_free(&sig);
	if (json)
		ctl_reply_line(r, CTL_DATA, "]");
}

/* One name's routes: a line for the name and one per route, or one JSON
 * object over several lines (a route per line, so a line stays bounded
 * whatever the paths), followed by `after` (e.g. ","). */
/* Routes refused lately for a name, after its routes (show route NAME only). */
static void refused_lines(const struct refused_entry *ref, unsigned nref, bool json, struct strbuf *b,
			  struct ctl_reply *r)
{
	for (unsigned i = 0; i < nref; i++) {
		char when[32];
		time_t t = (time_t)ref[i].when_s;
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
		const char *state = attest_state_name((enum attest_state)ref[i].state);
		const char *reason = ref[i].state == ATTEST_INVALID ? attest_reason_name((enum attest_reason)ref[i].reason)
								    : "";
		if (json) {
			strbuf_addf(b, "%s{\"from\": \"", i ? ", " : "");
			strbuf_add_json(b, ref[i].peer);
			strbuf_addf(b, "\", \"signatures\": \"%s\", \"signature_reason\": \"%s\", \"at\": \"%s\"}",
				    state, reason, when);
		} else {
			ctl_reply_line(r, CTL_DATA, "  refused from %s at %s: signatures %s%s%s", ref[i].peer, when,
				       state, reason[0] ? ": " : "", reason);
		}
	}
}

static void describe(const struct nbrpd *d, const struct rib_entry *e, bool json, const char *after,
		     const struct refused_entry *ref, unsigned nref, struct ctl_reply *r)
{
	char name[NAME_MAX_TEXT];
	struct name n;
	struct strbuf b = { 0 };
	rde_entry_name(e, &n);
	name_to_text(&n, name, sizeof(name));
	static struct rde_route_view views[1024];
	unsigned cnt = rde_entry_routes(e, views, 1024);
	unsigned nbest = 0;
	for (unsigned i = 0; i < cnt; i++)
		nbest += views[i].rank != 0;
	bool agg = rde_entry_is_aggregate(e);
	if (json) {
		strbuf_addf(&b, "{\"name\": \"");
		strbuf_add_json(&b, name);
		strbuf_addf(&b, "\", \"aggregate\": %s, \"routes\": [", agg ? "true" : "false");
	} else {
		strbuf_addf(&b, "%s%s", name, agg ? " (aggregate)" : "");
	}
	ctl_reply_line(r, CTL_DATA, "%s", strbuf_str(&b));
	for (unsigned i = 0; i < cnt; i++) {
		const struct rde_route_view *v = &views[i];
		strbuf_reset(&b);
		char hop[96] = "local";
		if (v->next_hop)
			ip_endpoint_format(v->next_hop, hop, sizeof(hop));
		if (json) {
			strbuf_addf(&b, "{\"rank\": %u, \"best\": %s, \"from\": \"", i < nbest ? i + 1 : 0,
				    i == 0 ? "true" : "false");
			strbuf_add_json(&b, v->from);
			strbuf_addf(&b, "\", \"next_hop\": \"%s\", \"path\": [", hop);
		} else if (v->next_hop) {
			strbuf_addf(&b, "  %s %s via %s from %s, path [", i == 0 ? "*" : " ",
				    i < nbest ? "ranked" : "      ", hop, v->from);
		} else {
			strbuf_addf(&b, "  %s %s local content, %u of %u servers up, load %u ms", i == 0 ? "*" : " ",
				    i < nbest ? "ranked" : "      ", (unsigned)__builtin_popcount(v->content->up_mask),
				    v->content->nservers, v->load_ms);
			ctl_reply_line(r, CTL_DATA, "%s", strbuf_str(&b));
			continue;
		}
		const char *p = v->path;
		for (unsigned k = 0; k < v->npath; k++) {
			if (json) {
				strbuf_addf(&b, "%s\"", k ? ", " : "");
				strbuf_add_json(&b, p);
				strbuf_addf(&b, "\"");
			} else {
				strbuf_addf(&b, "%s%s", k ? " " : "", p);
			}
			p += strlen(p) + 1;
		}
		char ip[200] = "", src[NBRP_SOURCE_TEXT_MAX] = "";
		bool v_closed = false;          /* the path's ']' is written */
		const struct nexthop *nh = v->nh;
		if (nh && d->bird)
			nexthop_format(nh, ip, sizeof(ip));
		if (v->agg_source)
			nbrp_aggregate_source_format(v->agg_source, src, sizeof(src));
		if (json && v->agg_source)
			strbuf_addf(&b, "], \"aggregate_version\": %u, \"aggregate_source\": \"%s\"", v->agg_version, src);
		else if (v->agg_source)
			strbuf_addf(&b, "], version %u from %s", v->agg_version, src);
		if (json && v->sig_state) {
			strbuf_addf(&b, "%s, \"signatures\": \"%s\", \"signature_reason\": \"%s\"",
				    v->agg_source ? "" : "]", v->sig_state, v->sig_reason ? v->sig_reason : "");
			v_closed = true;
		} else if (v->sig_state) {
			strbuf_addf(&b, "%s signatures %s%s%s", v->agg_source ? "," : "],", v->sig_state,
				    v->sig_reason ? ": " : "", v->sig_reason ? v->sig_reason : "");
			v_closed = true;
		}
		if (json)
			strbuf_addf(&b, "%s, \"load_ms\": %u, \"local_pref\": %u, \"stale\": %s, \"usable\": %s, "
				    "\"ip_known\": %s, \"ip_reachable\": %s, \"igp_metric\": %u, \"as_path_len\": %u, "
				    "\"ip_protocol\": \"%s\"}%s",
				    v->agg_source || v_closed ? "" : "]", v->load_ms, v->local_pref, v->stale ? "true" : "false", v->usable ? "true" : "false",
				    nh && nh->known ? "true" : "false", !nh || nh->reachable ? "true" : "false",
				    nh ? nh->igp_metric : 0, nh ? nh->as_path_len : 0, nh ? nh->protocol : "",
				    i + 1 < cnt ? "," : "");
		else
			strbuf_addf(&b, "%s load %u ms, local-pref %u%s%s%s%s", v->agg_source || v_closed ? "," : "],",
				    v->load_ms, v->local_pref,
				    v->stale ? ", stale" : "", v->usable ? "" : ", UNUSABLE", ip[0] ? "; BIRD: " : "", ip);
		ctl_reply_line(r, CTL_DATA, "%s", strbuf_str(&b));
	}
	strbuf_reset(&b);
	if (json) {
		strbuf_addf(&b, "]");
		if (nref) {
			strbuf_addf(&b, ", \"refused\": [");
			refused_lines(ref, nref, true, &b, r);
			strbuf_addf(&b, "]");
		}
		ctl_reply_line(r, CTL_DATA, "%s}%s", strbuf_str(&b), after ? after : "");
	} else {
		refused_lines(ref, nref, false, &b, r);
	}
	strbuf_free(&b);
}

struct route_walk {
	const struct nbrpd *d;
	struct ctl_reply *r;
	bool json;
	uint64_t total, done;
};

static void describe_one(const struct rib_entry *e, void *arg)
{
	struct route_walk *w = arg;
	w->done++;
	describe(w->d, e, w->json, w->done < w->total ? "," : "", NULL, 0, w->r);
}

static void show_route_count(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	struct nbrpd *d = ctx;
	(void)args;
	(void)nargs;
	if (json)
		ctl_reply_line(r, CTL_DATA, "{\"names\": %llu}", (unsigned long long)rde_names(d->rde));
	else
		ctl_reply_line(r, CTL_DATA, "%llu names", (unsigned long long)rde_names(d->rde));
}

static void show_route(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	struct nbrpd *d = ctx;
	if (nargs == 1) {
		struct name n;
		if (name_from_text(&n, args[0], strlen(args[0])) != NAME_OK) {
			ctl_reply_end(r, CTL_ERR_SYNTAX, "bad name '%s'", args[0]);
			return;
		}
		/* the name's own route, else the aggregate of that name; and what was refused for it */
		const struct rib_entry *e = rde_find(d->rde, &n), *agg = rde_find_aggregate(d->rde, &n);
		struct refused_entry ref[REFUSED_WAYS];
		unsigned nref = rdesig_refused(d->sig, &n, ref);
		if (!e && !agg && !nref) {
			ctl_reply_end(r, CTL_ERR_FAILED, "no route for %s", args[0]);
			return;
		}
		if (!e && !agg) {
			char text[NAME_MAX_TEXT];
			struct strbuf b = { 0 };
			name_to_text(&n, text, sizeof(text));
			if (json) {
				strbuf_addf(&b, "{\"name\": \"");
				strbuf_add_json(&b, text);
				strbuf_addf(&b, "\", \"aggregate\": false, \"routes\": [], \"refused\": [");
				refused_lines(ref, nref, true, &b, r);
				ctl_reply_line(r, CTL_DATA, "%s]}", strbuf_str(&b));
			} else {
				ctl_reply_line(r, CTL_DATA, "%s", text);
				ctl_reply_line(r, CTL_DATA, "  no route");
				refused_lines(ref, nref, false, &b, r);
			}
			strbuf_free(&b);
			return;
		}
		describe(d, e ? e : agg, json, "", ref, nref, r);
		if (e && agg && !json)
			ctl_reply_line(r, CTL_DATA, "%s is an aggregate's name too: nbrc show aggregate %s",
				       args[0], args[0]);
		return;
	}
	/* JSON: one array of the objects a single name gets */
	struct route_walk w = { .d = d, .r = r, .json = json, .total = rde_names(d->rde) };
	if (json)
		ctl_reply_line(r, CTL_DATA, "[");
	rde_walk(d->rde, describe_one, &w);
	if (json)
		ctl_reply_line(r, CTL_DATA, "]");
}

/* ---- aggregates ---- */

struct agg_walk {
	const struct nbrpd *d;
	struct ctl_reply *r;
	bool json, detail;
	unsigned n;
};

static void describe_aggregate(const struct aggregate_view *v, void *arg)
{
	struct agg_walk *w = arg;
	struct ctl_reply *r = w->r;
	char name[NAME_MAX_TEXT], src[NBRP_SOURCE_TEXT_MAX] = "", version[16] = "none";
	name_to_text(&v->name, name, sizeof(name));
	if (v->offered)
		nbrp_aggregate_source_format(&v->offered_source, src, sizeof(src));
	if (v->has_version)
		snprintf(version, sizeof(version), "%u", v->version);
	const char *learned = v->local ? "defined here" : v->offered ? "learned" : "not offered";
	static struct rde_route_view views[1024];
	const struct rib_entry *e = rde_find_aggregate(w->d->rde, &v->name);
	unsigned nroutes = e ? rde_entry_routes(e, views, 1024) : 0;
	struct name first;
	char first_text[NAME_MAX_TEXT] = "";
	uint32_t unauthorised = rdesig_aggregate_unauthorised(w->d->sig, &v->name, &first);
	uint64_t unsigned_sources = rdesig_aggregate_unsigned_sources(w->d->sig, &v->name);
	if (unauthorised)
		name_to_text(&first, first_text, sizeof(first_text));
	struct strbuf b = { 0 };
	if (w->json) {
		strbuf_addf(&b, "%s{\"name\": \"", w->n++ ? "," : "");
		strbuf_add_json(&b, name);
		strbuf_addf(&b, "\", \"origin\": \"%s\", \"version\": %s, \"members\": %u, "
			    "\"snapshot_bytes\": %llu, \"journal_bytes\": %llu, \"journal_versions\": %u, "
			    "\"compactions\": %llu, \"store_errors\": %llu, \"read_only\": %s, "
			    "\"offered_version\": ", v->local ? "local" : v->offered ? "learned" : "none",
			    v->has_version ? version : "null", v->members, (unsigned long long)v->snapshot_bytes,
			    (unsigned long long)v->journal_bytes, v->journal_versions,
			    (unsigned long long)v->compactions, (unsigned long long)v->store_errors,
			    v->read_only ? "true" : "false");
		if (v->offered)
			strbuf_addf(&b, "%u, \"offered_by\": \"%s\"", v->offered_version, src);
		else
			strbuf_addf(&b, "null, \"offered_by\": null");
		strbuf_addf(&b, ", \"fetching\": %s, \"fetches\": %llu, \"fetch_failures\": %llu, "
			    "\"fetch_over_names\": %llu, \"fetch_over_bytes\": %llu, \"fetch_idle_timeouts\": %llu, "
			    "\"fetch_time_limits\": %llu, \"fetch_wrong_version\": %llu, \"fetch_digest_mismatch\": %llu, "
			    "\"discarded\": %s, \"versions_discarded\": %llu, \"last_transfer\": ",
			    v->fetching ? "true" : "false", (unsigned long long)v->fetches,
			    (unsigned long long)v->failures, (unsigned long long)v->over_names,
			    (unsigned long long)v->over_bytes, (unsigned long long)v->idle_cuts,
			    (unsigned long long)v->time_cuts, (unsigned long long)v->wrong_version,
			    (unsigned long long)v->digest_mismatch, v->discarded ? "true" : "false",
			    (unsigned long long)v->discards);
		if (v->has_last) {
			strbuf_addf(&b, "{\"kind\": \"");
			strbuf_add_json(&b, v->last.kind);
			strbuf_addf(&b, "\", \"ok\": %s, \"from_version\": ", v->last.status == 0 ? "true" : "false");
			if (v->last.had_version)
				strbuf_addf(&b, "%u", v->last.from);
			else
				strbuf_addf(&b, "null");
			strbuf_addf(&b, ", \"to_version\": %u, \"versions\": %u, \"bytes\": %llu, \"seconds\": %.3f, "
				    "\"unix_time\": %llu, \"error\": \"", v->last.to, v->last.versions,
				    (unsigned long long)v->last.bytes, v->last.seconds, (unsigned long long)v->last_unix);
			strbuf_add_json(&b, v->last.status == 0 ? "" : v->last.why);
			strbuf_addf(&b, "\"}");
		} else {
			strbuf_addf(&b, "null");
		}
		strbuf_addf(&b, ", \"unauthorised_members\": %u, \"unauthorised_first\": ", unauthorised);
		if (unauthorised) {
			strbuf_addf(&b, "\"");
			strbuf_add_json(&b, first_text);
			strbuf_addf(&b, "\"");
		} else {
			strbuf_addf(&b, "null");
		}
		strbuf_addf(&b, ", \"unsigned_sources\": %llu", (unsigned long long)unsigned_sources);
		strbuf_addf(&b, ", \"routes\": %u, \"error\": \"", nroutes);
		strbuf_add_json(&b, v->error);
		strbuf_addf(&b, "\"}");
		ctl_reply_line(r, CTL_DATA, "%s", strbuf_str(&b));
		strbuf_free(&b);
		return;
	}
	ctl_reply_line(r, CTL_DATA, "%-32s version %-10s %9u members, %s, %u route%s", name, version, v->members,
		       learned, nroutes, nroutes == 1 ? "" : "s");
	if (v->offered)
		ctl_reply_line(r, CTL_DATA, "  offered: version %u by %s%s", v->offered_version, src,
			       v->fetching ? ", fetching" : "");
	if (w->detail)
		ctl_reply_line(r, CTL_DATA, "  stored: snapshot %llu bytes, journal %llu bytes (%u versions for IXFR)",
			       (unsigned long long)v->snapshot_bytes, (unsigned long long)v->journal_bytes,
			       v->journal_versions);
	if (w->detail || v->failures || v->store_errors)
		ctl_reply_line(r, CTL_DATA, "  fetches %llu, failed %llu (over fetch-max-names %llu, over "
			       "fetch-max-bytes %llu, idle %llu, over fetch-time-limit %llu, not the version offered %llu, "
			       "member digest mismatch %llu); store errors %llu%s",
			       (unsigned long long)v->fetches, (unsigned long long)v->failures,
			       (unsigned long long)v->over_names, (unsigned long long)v->over_bytes,
			       (unsigned long long)v->idle_cuts, (unsigned long long)v->time_cuts,
			       (unsigned long long)v->wrong_version, (unsigned long long)v->digest_mismatch,
			       (unsigned long long)v->store_errors, v->read_only ? " (state-dir read-only)" : "");
	if (v->discarded || v->discards)
		ctl_reply_line(r, CTL_DATA, "  versions thrown away %llu%s", (unsigned long long)v->discards,
			       v->discarded ? ": the version held is not the one signed, out of service, fetched whole" : "");
	if (v->has_last) {
		char when[32] = "";
		time_t t = (time_t)v->last_unix;
		struct tm tm;
		if (gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		ctl_reply_line(r, CTL_DATA, "  last transfer %s: %s, %u versions, %llu bytes in %.3f s%s%s", when,
			       v->last.kind, v->last.versions, (unsigned long long)v->last.bytes, v->last.seconds,
			       v->last.status == 0 ? "" : "; failed: ", v->last.status == 0 ? "" : v->last.why);
	}
	if (unauthorised)
		ctl_reply_line(r, CTL_DATA, "  %u members its origin may not originate, %s the first: its signed "
			       "routes are invalid (unauthorised member)", unauthorised, first_text);
	if (unsigned_sources)
		ctl_reply_line(r, CTL_DATA, "  %llu signed routes named another source than the one their origin "
			       "signed (unsigned aggregate source): never fetched from", (unsigned long long)unsigned_sources);
	if (v->error[0])
		ctl_reply_line(r, CTL_DATA, "  error: %s", v->error);
}

static void show_aggregates(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	struct nbrpd *d = ctx;
	(void)args;
	(void)nargs;
	struct agg_walk w = { .d = d, .r = r, .json = json };
	if (json)
		ctl_reply_line(r, CTL_DATA, "[");
	aggregates_walk(d->aggs, describe_aggregate, &w);
	if (json)
		ctl_reply_line(r, CTL_DATA, "]");
}

static void show_aggregate(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	struct nbrpd *d = ctx;
	(void)nargs;
	struct name n;
	struct aggregate_view v;
	if (name_from_text(&n, args[0], strlen(args[0])) != NAME_OK) {
		ctl_reply_end(r, CTL_ERR_SYNTAX, "bad name '%s'", args[0]);
		return;
	}
	if (!aggregates_view(d->aggs, &n, &v)) {
		ctl_reply_end(r, CTL_ERR_FAILED, "no aggregate %s", args[0]);
		return;
	}
	struct agg_walk w = { .d = d, .r = r, .json = json, .detail = true };
	describe_aggregate(&v, &w);
	const struct rib_entry *e = rde_find_aggregate(d->rde, &n);
	if (json)
		return;
	if (e)
		describe(d, e, false, "", NULL, 0, r);
	else
		ctl_reply_line(r, CTL_DATA, "  no route");
}

static void set_peer(struct nbrpd *d, const char *name, bool enable, struct ctl_reply *r)
{
	struct peer *p = sessions_peer_by_name(d->sessions, name);
	if (!p) {
		ctl_reply_end(r, CTL_ERR_FAILED, "no peer '%s'", name);
		return;
	}
	peer_enable(p, enable);
	ctl_reply_end(r, CTL_OK, "%s %s", enable ? "enabled" : "disabled", p->cfg.name);
}

static void cmd_reload(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	char msg[CONF_ERR_LEN + 256];
	(void)args;
	(void)nargs;
	(void)json;
	int rc = nbrpd_reload(ctx, msg, sizeof(msg));
	ctl_reply_end(r, rc == 0 ? CTL_OK : CTL_ERR_FAILED, "%s", msg);
}

static void cmd_enable_peer(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)nargs;
	(void)json;
	set_peer(ctx, args[0], true, r);
}

static void cmd_disable_peer(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)nargs;
	(void)json;
	set_peer(ctx, args[0], false, r);
}

static const struct ctl_command commands[] = {
	{ "show status", 0, 0, true, show_status, "show status [json]",
	  "version, uptime, peers, names, BIRD, table jobs, the longest loop turn" },
	{ "show peers", 0, 0, true, show_peers, "show peers [json]", "sessions, their state and counters" },
	{ "show route count", 0, 0, true, show_route_count, "show route count [json]", "names in the RIB" },
	{ "show route", 0, 1, true, show_route, "show route [NAME] [json]",
	  "routes, the ranked ones marked, with path, load and BIRD's view" },
	{ "show aggregates", 0, 0, true, show_aggregates, "show aggregates [json]",
	  "aggregates: version, members, where learned, last transfer" },
	{ "show aggregate", 1, 1, true, show_aggregate, "show aggregate NAME [json]",
	  "one aggregate: also its stored size and its routes" },
	{ "enable", 1, 1, false, cmd_enable_peer, "enable PEER", "start the peer's session" },
	{ "disable", 1, 1, false, cmd_disable_peer, "disable PEER", "end the peer's session (CEASE)" },
	{ "reload", 0, 0, false, cmd_reload, "reload", "re-read the configuration, keeping unaffected sessions" },
	CTL_CMD_SET_LOG_LEVEL,
	{ NULL, 0, 0, false, NULL, NULL, NULL },
};

static void on_control(void *ctx, int argc, char **argv, struct ctl_reply *r)
{
	ctl_dispatch(commands, ctx, argc, argv, r);
}

struct ctl_server *control_open(struct nbrpd *d, const char *path, const char *greeting, char *err, size_t err_len)
{
	return ctl_server_open(d->loop, path, greeting, on_control, d, err, err_len);
}
