/*
 * Attestations as a receiver checks them: the input is one NBRP message
 * (a frame without its length), decoded as nbrpd decodes it; every route
 * of an UPDATE is checked at cr4 against a fixed trust file (sigfix.h), at
 * once and split as the worker pool splits it.  The two must agree; a
 * state and its reason must agree; a valid route checked again costs no
 * verification (the cache), and kept and laid out again it is the same and
 * still valid; a valid name set's names, each checked again alone with
 * the set's digest (as nbrpd does for a stored route), are valid without
 * a verification; a signed origin withdrawal checks the same twice, the
 * second time without a verification if it failed; nothing leaks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attest.h"
#include "nbrp.h"
#include "sigfix.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct attest_verifier v;

static void check_route(const Nbrp__Route *r)
{
	const char *peer = r->n_path ? r->path[0] : NULL;
	struct attest_job job, job2;
	enum attest_state st = attest_verify(&v, r, peer, FIX_NOW, &job);
	if (job.checks || st == ATTEST_PENDING || st == ATTEST_UNVERIFIED || st != job.state ||
	    (st == ATTEST_INVALID) != (job.reason != ATTEST_OK))
		abort();
	/* prepared and finished as the pool does: the same outcome */
	attest_cache_clear(&v.cache);
	enum attest_state st2 = attest_prepare(&v, r, peer, FIX_NOW, &job2);
	if (st2 == ATTEST_PENDING) {
		for (unsigned j = 0; j < job2.n_checks; j++)
			job2.checks[j].ok = sigkey_verify(job2.checks[j].pk, job2.checks[j].msg,
							  job2.checks[j].len, job2.checks[j].sig);
		st2 = attest_finish(&v, &job2, FIX_NOW);
	}
	if (st2 != st || job2.reason != job.reason || job2.where != job.where)
		abort();
	if (st == ATTEST_VALID) {
		uint64_t before = v.verified;
		if (attest_verify(&v, r, peer, FIX_NOW, &job2) != ATTEST_VALID || v.verified != before ||
		    memcmp(job2.head, job.head, ATTEST_DIGEST_LEN) != 0)
			abort();
		/* kept and laid out again: the same attestations, still valid */
		struct attest_chain *c = attest_chain_copy(r);
		if (!c)
			abort();
		static Nbrp__Attestation pb[NBRP_MAX_PATH + 2], *pp[NBRP_MAX_PATH + 2];
		Nbrp__Route again = *r;
		again.n_attestations = attest_chain_pb(c, NULL, pb, pp);
		again.attestations = pp;
		if (again.n_attestations != r->n_attestations)
			abort();
		for (size_t i = 0; i < again.n_attestations; i++)
			if (pb[i].signature.len != r->attestations[i]->signature.len ||
			    memcmp(pb[i].signature.data, r->attestations[i]->signature.data, pb[i].signature.len) != 0 ||
			    pb[i].expiry != r->attestations[i]->expiry)
				abort();
		attest_cache_clear(&v.cache);
		if (attest_verify(&v, &again, peer, FIX_NOW, &job2) != ATTEST_VALID)
			abort();
		free(c);
		if (attest_route_is_set(r)) {
			/* each routed name alone, as a stored route is checked again: valid, no crypto */
			Nbrp__Route one = *r;
			one.n_names = 1;
			one.n_set_others = 0;
			attest_verify(&v, r, peer, FIX_NOW, &job2);     /* the cache cleared above: filled again */
			before = v.verified;
			for (size_t i = 0; i < r->n_names; i++) {
				one.names = &r->names[i];
				if (attest_prepare_stored(&v, &one, peer, true, FIX_NOW, &job2) != ATTEST_VALID ||
				    v.verified != before)
					abort();
			}
		}
		if (r->aggregate.len) {
			struct nameset empty;
			nameset_init(&empty);
			attest_members_check(r, &empty);
			nameset_free(&empty);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		fix_init();
		if (attest_verifier_init(&v, fix_keys[F_R4].pk, 64) != 0)
			abort();
		attest_verifier_set_trust(&v, &fix_trust);
		ready = true;
	}
	attest_cache_clear(&v.cache);
	Nbrp__Message *m;
	struct nbrp_error e;
	if (nbrp_decode(data, size, true, &m, &e) != 1)
		return 0;
	if (m->body_case == NBRP__MESSAGE__BODY_UPDATE) {
		for (size_t i = 0; i < m->update->n_routes; i++)
			check_route(m->update->routes[i]);
		for (size_t i = 0; i < m->update->n_origin_withdrawals; i++) {
			const Nbrp__OriginWithdrawal *w = m->update->origin_withdrawals[i];
			if (!attest_withdrawal_signed(w))
				continue;
			enum attest_reason why = attest_withdrawal_check(&v, w, FIX_NOW);
			uint64_t before = v.verified;
			if (attest_withdrawal_check(&v, w, FIX_NOW) != why ||
			    (why == ATTEST_BAD_SIGNATURE && v.verified != before))
				abort();
		}
	}
	nbrp_message_free(m);
	return 0;
}
