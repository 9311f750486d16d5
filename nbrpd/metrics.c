/*
 * nbrpd's Prometheus metrics (lib/ops/metrics.h serves them): per peer
 * (labelled by the peer's configured name, never by a content name, so the
 * series stay few), the RIB, the FIB channel and BIRD.  Runs on the loop,
 * between events: it reads the same state `nbrc show` does.
 */
#include <stdio.h>
#include <string.h>

#include "aggregates.h"
#include "attest.h"
#include "birdmon.h"
#include "fibpush.h"
#include "metrics.h"
#include "nbrpd.h"
#include "nexthop.h"
#include "prom.h"
#include "rde.h"
#include "rdesig.h"
#include "session.h"

static const char *const notif_codes[8] = {
	"unknown", "message", "open", "update", "hold-timer", "fsm", "cease", "unknown",
};

static const char *const states[] = { "Disabled", "Idle", "Connect", "OpenSent", "OpenConfirm", "Established" };

static const char *peer_state_text(const struct peer *p)
{
	return p->enabled ? nbrp_session_state_name(peer_state(p)) : "Disabled";
}

/* What a family reads of a peer: the session layer's counters, the RDE's and the signature stage's. */
struct peer_view {
	const struct peer *p;
	struct rde_peer_stats rs;
	struct rdesig_peer_stats ss;
};

static void peer_view_read(struct peer_view *v)
{
	if (v->p->rde)
		rde_peer_stats(v->p->rde, &v->rs);
	rdesig_peer_stats(v->p->sig, &v->ss);
}

typedef uint64_t (*peer_value_fn)(const struct peer_view *v);

static uint64_t v_names(const struct peer_view *v) { return v->rs.names; }
static uint64_t v_names_in(const struct peer_view *v) { return v->rs.names_in; }
static uint64_t v_names_out(const struct peer_view *v) { return v->rs.names_out; }
static uint64_t v_updates_in(const struct peer_view *v) { return v->p->updates_in; }
static uint64_t v_updates_out(const struct peer_view *v) { return v->rs.updates_out; }
static uint64_t v_withdrawn_in(const struct peer_view *v) { return v->rs.withdrawn_in; }
static uint64_t v_withdrawn_out(const struct peer_view *v) { return v->rs.withdrawn_out; }
static uint64_t v_bad_routes(const struct peer_view *v) { return v->rs.bad_routes; }
static uint64_t v_owd_refused(const struct peer_view *v) { return v->rs.owd_refused; }
static uint64_t v_owd_forged(const struct peer_view *v) { return v->ss.owd_forged; }
static uint64_t v_restart_capped(const struct peer_view *v) { return v->p->restart_capped; }
static uint64_t v_flaps(const struct peer_view *v) { return v->p->flaps; }
static uint64_t v_auth_refused(const struct peer_view *v) { return v->p->auth_refused; }
static uint64_t v_tls_failures(const struct peer_view *v) { return v->p->tls_failures; }
static uint64_t v_up(const struct peer_view *v) { return v->p->established != NULL; }
static uint64_t v_eor(const struct peer_view *v) { return v->p->eor_received; }
static uint64_t v_verified(const struct peer_view *v) { return v->ss.verified; }
static uint64_t v_failed(const struct peer_view *v) { return v->ss.failed; }
static uint64_t v_queued(const struct peer_view *v) { return v->ss.queued; }
static uint64_t v_throttled(const struct peer_view *v) { return v->ss.throttled; }

static const struct {
	const char *name, *help;
	enum prom_type type;
	peer_value_fn fn;
} peer_families[] = {
	{ "nbrpd_peer_up", "1 while the session is Established.", PROM_GAUGE, v_up },
	{ "nbrpd_peer_end_of_rib", "1 once the peer sent its whole table.", PROM_GAUGE, v_eor },
	{ "nbrpd_peer_names", "Names with a route accepted from the peer.", PROM_GAUGE, v_names },
	{ "nbrpd_peer_names_received_total", "Names in routes the peer sent.", PROM_COUNTER, v_names_in },
	{ "nbrpd_peer_names_advertised_total", "Names in routes sent to the peer.", PROM_COUNTER, v_names_out },
	{ "nbrpd_peer_withdrawals_received_total", "Names the peer withdrew.", PROM_COUNTER, v_withdrawn_in },
	{ "nbrpd_peer_withdrawals_sent_total", "Names withdrawn from the peer.", PROM_COUNTER, v_withdrawn_out },
	{ "nbrpd_peer_updates_received_total", "UPDATE messages from the peer.", PROM_COUNTER, v_updates_in },
	{ "nbrpd_peer_updates_sent_total", "UPDATE messages to the peer.", PROM_COUNTER, v_updates_out },
	{ "nbrpd_peer_bad_routes_total", "Malformed routes from the peer (treated as withdrawn).", PROM_COUNTER,
	  v_bad_routes },
	{ "nbrpd_peer_flaps_total", "Times the session left Established.", PROM_COUNTER, v_flaps },
	{ "nbrpd_peer_session_keys_refused_total",
	  "Sessions refused: the TLS key is not the trust file's for the peer's name.", PROM_COUNTER, v_auth_refused },
	{ "nbrpd_peer_tls_failures_total", "TLS handshakes or records of the peer's sessions that failed.",
	  PROM_COUNTER, v_tls_failures },
	{ "nbrpd_peer_restart_time_capped_total",
	  "OPENs of the peer asking a graceful restart time over max-peer-restart-time.", PROM_COUNTER,
	  v_restart_capped },
	{ "nbrpd_peer_origin_withdrawals_refused_total",
	  "Routes of peers with signatures on that the peer's unsigned origin withdrawals did not remove.",
	  PROM_COUNTER, v_owd_refused },
	{ "nbrpd_peer_origin_withdrawals_forged_total",
	  "The peer's signed origin withdrawals refused: bad signature, a key not the name's origin, expired.",
	  PROM_COUNTER, v_owd_forged },
	{ "nbrpd_peer_verifications_total", "Signatures of the peer's routes verified by the workers.", PROM_COUNTER,
	  v_verified },
	{ "nbrpd_peer_verifications_failed_total", "The peer's routes whose signatures failed on the workers.",
	  PROM_COUNTER, v_failed },
	{ "nbrpd_peer_checks_queued", "The peer's UPDATEs waiting for their signatures' checks.", PROM_GAUGE,
	  v_queued },
	{ "nbrpd_peer_checks_throttled_total",
	  "Loop turns the peer's session stopped reading, its checks at their share of the turn.", PROM_COUNTER,
	  v_throttled },
};

static void write_peers(struct prom *p, struct nbrpd *d)
{
	uint64_t now = uv_now(d->loop);
	unsigned n = sessions_count(d->sessions);
	for (unsigned f = 0; f < sizeof(peer_families) / sizeof(peer_families[0]); f++) {
		prom_family(p, peer_families[f].name, peer_families[f].type, peer_families[f].help);
		for (unsigned i = 0; i < n; i++) {
			struct peer_view v = { .p = sessions_peer(d->sessions, i) };
			peer_view_read(&v);
			prom_u64(p, peer_families[f].name, &(struct prom_label){ "peer", v.p->cfg.name }, 1,
				 peer_families[f].fn(&v));
		}
	}
	prom_family(p, "nbrpd_peer_checks_seconds_total", PROM_COUNTER,
		    "Time the checks of the peer's signatures took, on the event loop and on the workers.");
	for (unsigned i = 0; i < n; i++) {
		struct peer_view v = { .p = sessions_peer(d->sessions, i) };
		if (!v.p->rde)
			continue;
		peer_view_read(&v);
		struct prom_label lb[2] = { { "peer", v.p->cfg.name }, { "where", "loop" } };
		prom_double(p, "nbrpd_peer_checks_seconds_total", lb, 2, (double)v.ss.loop_ns / 1e9);
		lb[1].value = "workers";
		prom_double(p, "nbrpd_peer_checks_seconds_total", lb, 2, (double)v.ss.worker_ns / 1e9);
	}
	prom_family(p, "nbrpd_peer_signed_routes_total", PROM_COUNTER,
		    "Routes from a peer with signatures on, by the state of their check.");
	for (unsigned i = 0; i < n; i++) {
		struct peer_view v = { .p = sessions_peer(d->sessions, i) };
		if (v.p->cfg.signatures == SIG_OFF || !v.p->rde)
			continue;
		peer_view_read(&v);
		for (int s = ATTEST_VALID; s < ATTEST_PENDING; s++) {
			struct prom_label lb[2] = { { "peer", v.p->cfg.name },
						    { "state", attest_state_name((enum attest_state)s) } };
			prom_u64(p, "nbrpd_peer_signed_routes_total", lb, 2, v.ss.state ? v.ss.state[s] : 0);
		}
	}
	prom_family(p, "nbrpd_peer_invalid_routes_total", PROM_COUNTER,
		    "Routes from a peer with signatures on whose check failed, by reason.");
	for (unsigned i = 0; i < n; i++) {
		struct peer_view v = { .p = sessions_peer(d->sessions, i) };
		if (v.p->cfg.signatures == SIG_OFF || !v.p->rde)
			continue;
		peer_view_read(&v);
		for (int k = ATTEST_OK + 1; k < ATTEST_REASONS; k++) {
			struct prom_label lb[2] = { { "peer", v.p->cfg.name },
						    { "reason", attest_reason_name((enum attest_reason)k) } };
			prom_u64(p, "nbrpd_peer_invalid_routes_total", lb, 2, v.ss.invalid ? v.ss.invalid[k] : 0);
		}
	}
	prom_family(p, "nbrpd_peer_state", PROM_GAUGE, "1 for the session's state, 0 for the others.");
	for (unsigned i = 0; i < n; i++) {
		const struct peer *pr = sessions_peer(d->sessions, i);
		const char *now_state = peer_state_text(pr);
		for (unsigned k = 0; k < sizeof(states) / sizeof(states[0]); k++) {
			struct prom_label lb[2] = { { "peer", pr->cfg.name }, { "state", states[k] } };
			prom_u64(p, "nbrpd_peer_state", lb, 2, strcmp(states[k], now_state) == 0);
		}
	}
	prom_family(p, "nbrpd_peer_established_seconds", PROM_GAUGE, "Seconds since the session came up (0: down).");
	for (unsigned i = 0; i < n; i++) {
		const struct peer *pr = sessions_peer(d->sessions, i);
		prom_double(p, "nbrpd_peer_established_seconds", &(struct prom_label){ "peer", pr->cfg.name }, 1,
				    pr->established ? (now - pr->established_at) / 1e3 : 0);
	}
	static const char *const fam[2] = { "nbrpd_peer_notifications_received_total",
					    "nbrpd_peer_notifications_sent_total" };
	static const char *const help[2] = { "NOTIFICATIONs from the peer, by code.",
					     "NOTIFICATIONs to the peer, by code." };
	for (unsigned dir = 0; dir < 2; dir++) {
		prom_family(p, fam[dir], PROM_COUNTER, help[dir]);
		for (unsigned i = 0; i < n; i++) {
			const struct peer *pr = sessions_peer(d->sessions, i);
			const uint64_t *by = dir ? pr->notif_out_code : pr->notif_in_code;
			for (unsigned c = 0; c < 7; c++) {       /* 7 is folded into "unknown" with 0 */
				uint64_t v = by[c] + (c == 0 ? by[7] : 0);
				struct prom_label lb[2] = { { "peer", pr->cfg.name }, { "code", notif_codes[c] } };
				prom_u64(p, fam[dir], lb, 2, v);
			}
		}
	}
}

void nbrpd_metrics_write(struct prom *p, struct nbrpd *d, const char *version, const struct metrics_server *ms)
{
	prom_family(p, "nbrpd_build_info", PROM_GAUGE, "The running nbrpd's version.");
	prom_u64(p, "nbrpd_build_info", &(struct prom_label){ "version", version }, 1, 1);
	prom_one(p, "nbrpd_uptime_seconds", PROM_GAUGE, "Seconds since nbrpd started.",
		 (uv_now(d->loop) - d->started) / 1e3);
	write_peers(p, d);
	struct rde_stats st;
	rde_stats(d->rde, &st);
	prom_one(p, "nbrpd_rib_names", PROM_GAUGE, "Names in the RIB.", (double)st.names);
	prom_one(p, "nbrpd_rib_routes", PROM_GAUGE, "Routes in the RIB, from peers and local content.",
		 (double)st.routes);
	prom_one(p, "nbrpd_rib_jobs", PROM_GAUGE, "Whole-table jobs under way (dumps, purges, re-exports).",
		 (double)st.jobs);
	prom_one(p, "nbrpd_rib_last_best_change_timestamp_seconds", PROM_GAUGE,
		 "Unix time of the last change of a best route to another peer or origin (0: none yet).",
		 st.best_changed_us / 1e6);
	prom_one(p, "nbrpd_loop_turn_max_seconds", PROM_GAUGE, "The longest turn of the event loop since start.",
		 d->turn_max_ms / 1e3);
	prom_one(p, "nbrpd_rib_ready", PROM_GAUGE, "1 once every peer's table is in (or fib-sync-wait passed).",
		 d->rib_ready);
	prom_one(p, "nbrpd_fib_channel_configured", PROM_GAUGE, "1 if a fib-channel socket is configured.",
		 d->fib != NULL);
	prom_one(p, "nbrpd_fib_channel_connected", PROM_GAUGE, "1 while connected to inrpd.",
		 d->fib && fibpush_connected(d->fib));
	prom_one(p, "nbrpd_fib_channel_syncs_total", PROM_COUNTER, "Full syncs sent to inrpd.",
		 d->fib ? (double)fibpush_syncs(d->fib) : 0);
	prom_one(p, "nbrpd_fib_channel_queued_bytes", PROM_GAUGE, "Bytes queued for inrpd and not yet written.",
		 d->fib ? (double)fibpush_queued(d->fib) : 0);
	prom_one(p, "nbrpd_fib_channel_hold_closes_total", PROM_COUNTER,
		 "Connections to inrpd closed because it read nothing for fib-send-hold-time.",
		 d->fib ? (double)fibpush_hold_closes(d->fib) : 0);
	prom_one(p, "nbrpd_bird_configured", PROM_GAUGE, "1 if a BIRD socket is configured.", d->bird != NULL);
	prom_one(p, "nbrpd_bird_up", PROM_GAUGE, "1 while BIRD's control socket answers.",
		 strcmp(birdmon_state(d->bird), "up") == 0);
	prom_one(p, "nbrpd_nexthops", PROM_GAUGE, "Addresses whose IP reachability is followed.",
		 nexthop_count(d->nexthops));
	uint64_t keys_refused, tls_failures;
	sessions_auth_totals(d->sessions, &keys_refused, &tls_failures);
	prom_one(p, "nbrpd_session_keys_refused_total", PROM_COUNTER,
		 "Sessions refused since start: the TLS key is not the trust file's for the peer's name.",
		 (double)keys_refused);
	prom_one(p, "nbrpd_tls_failures_total", PROM_COUNTER, "TLS handshakes or records that failed since start.",
		 (double)tls_failures);

	struct rdesig_stats sg;
	rdesig_stats(d->sig, &sg);
	if (sg.on) {
		prom_one(p, "nbrpd_trust_file_serial", PROM_GAUGE, "The serial of the trust file in force (0: none).",
			 (double)sg.trust_serial);
		prom_one(p, "nbrpd_trust_file_valid_until_seconds", PROM_GAUGE,
			 "Unix time the trust file in force ends (0: none).", (double)sg.trust_valid_until);
		prom_one(p, "nbrpd_trust_file_expiring", PROM_GAUGE,
			 "1 when the trust file in force ends within 7 days, or has ended.", sg.trust_expiring);
		prom_one(p, "nbrpd_origin_seqs_kept", PROM_GAUGE,
			 "(name, origin key) pairs whose newest signed origin_seq is kept (older ones refused).",
			 (double)sg.fresh_kept);
		prom_one(p, "nbrpd_signature_batches_stale_total", PROM_COUNTER,
			 "Batches of checks finished under trust data replaced meanwhile: checked again, not applied.",
			 (double)sg.stale_verdicts);
		prom_family(p, "nbrpd_trust_files_refused_total", PROM_COUNTER,
			    "Trust files read and not installed, by reason (the one in force stays).");
		for (int k = 0; k < TRUST_REFUSALS; k++)
			prom_u64(p, "nbrpd_trust_files_refused_total",
				 &(struct prom_label){ "reason", rdesig_trust_refusal_name((enum rdesig_trust_refusal)k) }, 1,
				 sg.trust_refused[k]);
	}

	/* aggregates: totals, not a series per aggregate (there may be thousands) */
	struct aggregates_stats as = { 0 };
	if (d->aggs)
		aggregates_stats(d->aggs, &as);
	prom_one(p, "nbrpd_aggregates", PROM_GAUGE, "Aggregates known here (defined or learned).",
		 (double)as.aggregates);
	prom_one(p, "nbrpd_aggregate_members", PROM_GAUGE, "Members of the aggregates' versions stored here.",
		 (double)as.members);
	prom_one(p, "nbrpd_aggregate_fetches_total", PROM_COUNTER, "Aggregate transfers fetched from peers.",
		 (double)as.fetches);
	prom_one(p, "nbrpd_aggregate_fetch_failures_total", PROM_COUNTER, "Aggregate fetches that failed.",
		 (double)as.fetch_failures);
	prom_one(p, "nbrpd_aggregate_fetched_bytes_total", PROM_COUNTER, "Bytes received in aggregate transfers.",
		 (double)as.fetch_bytes);
	prom_one(p, "nbrpd_aggregate_store_errors_total", PROM_COUNTER,
		 "Aggregate versions and compactions the state-dir failed to store (full, read-only, I/O error).",
		 (double)as.store_errors);
	prom_one(p, "nbrpd_aggregate_transfers_served_total", PROM_COUNTER, "AXFR and IXFR transfers served.",
		 (double)(as.served_axfr + as.served_ixfr));
	prom_one(p, "nbrpd_aggregate_transfer_bytes_total", PROM_COUNTER, "Bytes of aggregate transfers served.",
		 (double)as.served_bytes);
	prom_one(p, "nbrpd_aggregate_transfers_refused_total", PROM_COUNTER,
		 "Transfers refused (allow-transfer, or too many at once).", (double)as.refused);
	prom_one(p, "nbrpd_aggregate_fetch_over_names_total", PROM_COUNTER,
		 "Aggregate fetches refused for more names than fetch-max-names.", (double)as.fetch_over_names);
	prom_one(p, "nbrpd_aggregate_fetch_over_bytes_total", PROM_COUNTER,
		 "Aggregate fetches refused for more bytes than fetch-max-bytes.", (double)as.fetch_over_bytes);
	prom_one(p, "nbrpd_aggregate_fetch_idle_timeouts_total", PROM_COUNTER,
		 "Aggregate fetches ended by fetch-idle-timeout.", (double)as.fetch_idle);
	prom_one(p, "nbrpd_aggregate_fetch_time_limits_total", PROM_COUNTER,
		 "Aggregate fetches ended by fetch-time-limit.", (double)as.fetch_time);
	prom_one(p, "nbrpd_aggregate_fetch_wrong_version_total", PROM_COUNTER,
		 "Aggregate fetches refused before storing: not the version offered.", (double)as.fetch_wrong_version);
	prom_one(p, "nbrpd_aggregate_fetch_digest_mismatch_total", PROM_COUNTER,
		 "Aggregate fetches refused before storing: not the members signed.", (double)as.fetch_digest_mismatch);
	prom_one(p, "nbrpd_aggregate_versions_discarded_total", PROM_COUNTER,
		 "Aggregate versions held that valid routes did not sign, thrown away and fetched whole.",
		 (double)as.discards);
	prom_one(p, "nbrpd_aggregate_transfer_connections_closed_acl_total", PROM_COUNTER,
		 "Transfer connections from outside allow-transfer, closed when accepted.", (double)as.closed_acl);
	prom_one(p, "nbrpd_aggregate_transfer_connections_closed_full_total", PROM_COUNTER,
		 "Transfer connections closed for want of a free slot.", (double)as.closed_full);
	prom_one(p, "nbrpd_aggregate_transfer_connections_closed_idle_total", PROM_COUNTER,
		 "Transfer connections closed by transfer-idle-timeout.", (double)as.closed_idle);
	prom_one(p, "nbrpd_aggregate_transfer_connections_closed_time_total", PROM_COUNTER,
		 "Transfer connections closed by transfer-time-limit.", (double)as.closed_time);

	struct metrics_server_stats ms_st = { 0 };
	if (ms)
		metrics_server_stats(ms, &ms_st);
	prom_one(p, "nbrpd_metrics_scrapes_total", PROM_COUNTER, "Scrapes of this endpoint answered.",
		 (double)ms_st.scrapes);
	prom_one(p, "nbrpd_metrics_denied_total", PROM_COUNTER, "Connections to this endpoint refused by metrics-allow.",
		 (double)ms_st.denied);
}
