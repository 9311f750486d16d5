#include "counters.h"

void inrpd_counters_add(struct inrpd_counters *sum, const struct inrpd_counters *c)
{
#define ADD(f) sum->f += __atomic_load_n(&c->f, __ATOMIC_RELAXED)
	for (unsigned p = 0; p < INRPD_PATHS; p++) {
		for (unsigned b = 0; b <= INRPD_LAT_BUCKETS; b++)
			ADD(lat.count[p][b]);
		ADD(lat.sum_us[p]);
	}
	ADD(queries);
	ADD(answered);
	ADD(formerr);
	ADD(refused);
	ADD(truncated);
	ADD(dropped);
	ADD(local);
	ADD(forwarded);
	ADD(fallback);
	ADD(servfail);
	ADD(loops);
	ADD(acl_refused);
	ADD(pending_full);
	ADD(bad_upstream);
	ADD(fwd_wrong_source);
	ADD(fwd_bad_id);
	ADD(fwd_bad_cookie);
	ADD(fwd_0x20_mismatch);
	ADD(fwd_no_socket);
	ADD(upstream_tcp);
	ADD(upstream_tcp_full);
	ADD(nodata);
	ADD(notimp);
	ADD(hop_failed);
	ADD(rrl_dropped);
	ADD(rrl_slipped);
	ADD(amp_truncated);
	ADD(cookies);
	ADD(badcookie);
	ADD(cached);
	ADD(stale);
	ADD(no_route);
	ADD(hop_behind);
	ADD(other_origin);
	ADD(rerouted);
	ADD(refreshed);
	ADD(tcp_evicted);
	ADD(tcp_full);
	ADD(proxy_accepted);
	ADD(proxy_refused);
	ADD(proxy_missing);
	for (unsigned r = 0; r < PROXYV2_STATUSES; r++)
		ADD(proxy_bad[r]);
	ADD(in_flight);
	ADD(dnstap_sent);
	ADD(dnstap_dropped);
#undef ADD
}
