/*
 * Signatures: keys and libsodium's acceptance rule (RFC 8032 vectors),
 * the trust-anchor file, route attestations and every attack on them, the
 * verification cache.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <sodium.h>

#include "attest.h"
#include "name.h"
#include "nbrp.h"
#include "sigkey.h"
#include "trust.h"

#include "sigfix.h"

static void hex(uint8_t *out, const char *h)
{
	size_t n = strlen(h) / 2;
	assert_int_equal(sodium_hex2bin(out, n, h, strlen(h), NULL, NULL, NULL), 0);
}

/* RFC 8032 7.1, tests 1 to 3. */
static const struct {
	const char *seed, *pk, *msg, *sig;
} rfc8032[] = {
	{ "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
	  "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
	  "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b" },
	{ "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
	  "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
	  "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00" },
	{ "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
	  "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
	  "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a" },
};

static void rfc8032_vectors_and_the_acceptance_rule(void **state)
{
	for (size_t i = 0; i < sizeof(rfc8032) / sizeof(rfc8032[0]); i++) {
		uint8_t seed[32], pk[32], sig[64], msg[2], got[64];
		struct sigkey k;
		size_t ml = strlen(rfc8032[i].msg) / 2;
		hex(seed, rfc8032[i].seed);
		hex(pk, rfc8032[i].pk);
		hex(sig, rfc8032[i].sig);
		if (ml)
			hex(msg, rfc8032[i].msg);
		crypto_sign_seed_keypair(k.pk, k.sk, seed);
		assert_memory_equal(k.pk, pk, 32);
		sigkey_sign(&k, msg, ml, got);
		assert_memory_equal(got, sig, 64);
		assert_true(sigkey_verify(pk, msg, ml, sig));
		/* one bit anywhere: refused */
		got[i * 20] ^= 1;
		assert_false(sigkey_verify(pk, msg, ml, got));
		/* another message */
		uint8_t other[2] = { 0, 0 };
		memcpy(other, msg, ml);
		other[0] ^= 0x80;
		assert_false(sigkey_verify(pk, other, ml ? ml : 1, sig));
	}
	/* test 1 with S + L: the same point, a non-canonical scalar, refused */
	uint8_t pk[32], sig[64];
	hex(pk, rfc8032[0].pk);
	hex(sig, rfc8032[0].sig);
	hex(sig + 32, "4c8c7872aa064e049dbb3013fbf29380d25bf5f0595bbe24655141438e7a101b");
	assert_false(sigkey_verify(pk, NULL, 0, sig));
	/* a small-order key (the identity) with R the identity and S 0 would
	 * satisfy the cofactorless equation; libsodium refuses it */
	uint8_t id[32] = { 1 }, zsig[64] = { 1 };
	assert_false(sigkey_verify(id, (const uint8_t *)"x", 1, zsig));
}

static char tmpdir[64];

static void mktmp(void)
{
	strcpy(tmpdir, "/tmp/test_sig.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
}

static void rmtmp(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	assert_int_equal(system(cmd), 0);
}

static void key_file_round_trip_and_modes(void **state)
{
	char path[128], err[512];
	struct sigkey k, l;
	struct stat st;
	mktmp();
	snprintf(path, sizeof(path), "%s/nbrpd.key", tmpdir);
	assert_int_equal(sigkey_generate(path, &k, err, sizeof(err)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* never over an existing file */
	assert_int_equal(sigkey_generate(path, &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "File exists"));
	assert_int_equal(sigkey_load(path, &l, err, sizeof(err)), 0);
	assert_memory_equal(k.pk, l.pk, 32);
	assert_memory_equal(k.sk, l.sk, 64);
	/* group-readable: refused, naming the file and its mode */
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(sigkey_load(path, &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "mode 0640"));
	assert_int_equal(chmod(path, 0604), 0);
	assert_int_equal(sigkey_load(path, &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "mode 0604"));
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(sigkey_load(path, &l, err, sizeof(err)), 0);
	/* public text */
	char text[SIGKEY_TEXT_LEN + 1];
	uint8_t back[32];
	sigkey_public_text(k.pk, text);
	assert_int_equal(strlen(text), 44);
	assert_int_equal(sigkey_public_parse(text, 44, back), 0);
	assert_memory_equal(back, k.pk, 32);
	assert_int_equal(sigkey_public_parse(text, 43, back), -1);
	/* a byte outside the alphabet that libsodium's decoder reads as a letter
	 * (0xAF as 'o'; found by fuzz_key): one key, one spelling */
	char odd[SIGKEY_TEXT_LEN + 1];
	memcpy(odd, text, sizeof(odd));
	odd[10] = (char)((unsigned char)odd[10] ^ 0xC0);
	assert_int_equal(sigkey_public_parse(odd, 44, back), -1);
	text[10] = '!';
	assert_int_equal(sigkey_public_parse(text, 44, back), -1);
	/* a public line that is not the seed's */
	char bad[128];
	snprintf(bad, sizeof(bad), "%s/bad.key", tmpdir);
	FILE *f = fopen(path, "r");
	char content[256];
	size_t n = fread(content, 1, sizeof(content), f);
	fclose(f);
	/* a character inside the public key's base64 (all 6 bits used there) */
	content[n - 10] = content[n - 10] == 'A' ? 'B' : 'A';
	f = fopen(bad, "w");
	fwrite(content, 1, n, f);
	fclose(f);
	assert_int_equal(chmod(bad, 0600), 0);
	assert_int_equal(sigkey_load(bad, &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not the seed's"));
	f = fopen(bad, "w");
	fputs("hello\n", f);
	fclose(f);
	assert_int_equal(sigkey_load(bad, &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a key file"));
	rmtmp();
}

/* The trust file: routers cr1..cr5 and rx; example.com by the origin key,
 * evil.net by rx's. */
static char *trust_text(size_t *len, bool with_origin)
{
	static char body[4096];
	char t[SIGKEY_TEXT_LEN + 1];
	int n = snprintf(body, sizeof(body), "# test trust\nserial 7\nvalid-from 2026-11-01T00:00:00Z\nvalid-until 2026-12-01T00:00:00Z\n");
	for (int i = F_R1; i <= F_X; i++) {
		sigkey_public_text(fix_keys[i].pk, t);
		n += snprintf(body + n, sizeof(body) - (size_t)n, "router %s %s\n", fix_name[i], t);
	}
	if (with_origin) {
		sigkey_public_text(fix_keys[F_ORIGIN].pk, t);
		n += snprintf(body + n, sizeof(body) - (size_t)n, "origin example.com %s\n", t);
	}
	sigkey_public_text(fix_keys[F_X].pk, t);
	n += snprintf(body + n, sizeof(body) - (size_t)n, "origin evil.net %s\n", t);
	char err[256];
	char *signed_ = trust_sign(body, (size_t)n, "t", &fix_keys[F_ANCHOR], len, err, sizeof(err));
	assert_non_null(signed_);
	return signed_;
}

static void load_trust(struct trust *t, bool with_origin)
{
	size_t len;
	char err[256];
	char *text = trust_text(&len, with_origin);
	int rc = trust_parse(text, len, "t", fix_keys[F_ANCHOR].pk, t, err, sizeof(err));
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	free(text);
}

static void trust_file_signed_and_looked_up(void **state)
{
	struct trust t;
	load_trust(&t, true);
	assert_int_equal(t.n_routers, 6);
	assert_int_equal(t.n_origins, 2);
	assert_true(trust_current(&t, FIX_NOW));
	assert_false(trust_current(&t, 1700000000));
	assert_memory_equal(trust_router_key(&t, "cr3", 3), fix_keys[F_R3].pk, 32);
	assert_null(trust_router_key(&t, "cr", 2));
	assert_null(trust_router_key(&t, "ghost", 5));
	struct name n;
	assert_int_equal(name_from_text(&n, "www.Example.COM", 15), NAME_OK);
	assert_int_equal(trust_origin_check(&t, n.wire, n.len, fix_keys[F_ORIGIN].pk), TRUST_AUTHORISED);
	assert_int_equal(trust_origin_check(&t, n.wire, n.len, fix_keys[F_X].pk), TRUST_UNAUTHORISED);
	const uint8_t *k[4];
	assert_int_equal(trust_origin_keys(&t, n.wire, n.len, k, 4), 1);
	assert_memory_equal(k[0], fix_keys[F_ORIGIN].pk, 32);
	assert_int_equal(name_from_text(&n, "example.org", 11), NAME_OK);
	assert_int_equal(trust_origin_check(&t, n.wire, n.len, fix_keys[F_ORIGIN].pk), TRUST_NOT_FOUND);
	trust_free(&t);
}

static void trust_file_errors(void **state)
{
	size_t len;
	char err[256];
	struct trust t;
	char *good = trust_text(&len, true);
	/* a byte of the body changed: the signature fails */
	char *bad = malloc(len);
	memcpy(bad, good, len);
	bad[3] ^= 1;
	assert_int_equal(trust_parse(bad, len, "t", fix_keys[F_ANCHOR].pk, &t, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "does not verify"));
	/* another anchor */
	assert_int_equal(trust_parse(good, len, "t", fix_keys[F_X].pk, &t, err, sizeof(err)), -1);
	/* no anchor: no check */
	assert_int_equal(trust_parse(bad, len, "t", NULL, &t, err, sizeof(err)), 0);
	trust_free(&t);
	free(bad);
	free(good);

	static const struct {
		const char *text, *err;
	} cases[] = {
		{ "valid-from 2026-11-01T00:00:00Z\nfoo bar\n", "t:2: unknown keyword foo" },
		{ "valid-from 2026-13-01T00:00:00Z\n", "t:1: valid-from: expected" },
		{ "valid-from 2026-02-30T00:00:00Z\n", "t:1: valid-from: expected" },
		{ "valid-from 2026-11-01T00:00:00Z\nvalid-from 2026-11-01T00:00:00Z\n", "t:2: valid-from given twice" },
		{ "valid-from 2026-11-01T00:00:00Z\n", "t:2: valid-from and valid-until are required" },
		{ "valid-from 2026-11-01T00:00:00Z\nvalid-until 2026-10-01T00:00:00Z\n", "valid-until is before" },
		{ "\n\nrouter cr1 AAAA\n", "t:3: router cr1: the key is not" },
		{ "router cr1\n", "t:1: router: expected" },
		{ "origin exa..mple AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", "t:1: origin: exa..mple" },
		{ "valid-from 2026-11-01T00:00:00Z\nvalid-until 2026-12-01T00:00:00Z\n"
		  "router a AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
		  "router b AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", "routers a and b have the same key" },
		{ "valid-from 2026-11-01T00:00:00Z\nvalid-until 2026-12-01T00:00:00Z\n"
		  "router a AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
		  "router a BAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", "router a listed twice" },
		{ "serial 1\nvalid-from 2026-11-01T00:00:00Z\nvalid-until 2026-12-01T00:00:00Z\n", "t:4: no signature line" },
		{ "valid-from 2026-11-01T00:00:00Z\nvalid-until 2026-12-01T00:00:00Z\n", "t:3: serial is required" },
		{ "serial 0\n", "t:1: serial: expected" },
		{ "serial 012\n", "t:1: serial: expected" },
		{ "serial 18446744073709551616\n", "t:1: serial: expected" },
		{ "serial 1 2\n", "t:1: serial: expected" },
		{ "serial 1\nserial 2\n", "t:2: serial given twice" },
		{ "signature AAAA\n", "t:1: signature: not base64" },
		{ "signature AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\nx\n",
		  "t:2: nothing may follow" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		assert_int_equal(trust_parse(cases[i].text, strlen(cases[i].text), "t", fix_keys[F_ANCHOR].pk, &t,
					     err, sizeof(err)), -1);
		if (!strstr(err, cases[i].err))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, err, cases[i].err);
	}
	/* signing replaces an old signature and fixes a missing final newline */
	const char *body = "serial 18446744073709551615\nvalid-from 2026-11-01T00:00:00Z\nvalid-until 2026-12-01T00:00:00Z";
	char *s1 = trust_sign(body, strlen(body), "t", &fix_keys[F_ANCHOR], &len, err, sizeof(err));
	assert_non_null(s1);
	size_t len2;
	char *s2 = trust_sign(s1, len, "t", &fix_keys[F_ANCHOR], &len2, err, sizeof(err));
	assert_non_null(s2);
	assert_int_equal(len, len2);
	assert_memory_equal(s1, s2, len);
	assert_int_equal(trust_parse(s2, len2, "t", fix_keys[F_ANCHOR].pk, &t, err, sizeof(err)), 0);
	assert_true(t.serial == UINT64_MAX);
	trust_free(&t);
	free(s1);
	free(s2);
	assert_null(trust_sign("bogus\n", 6, "t", &fix_keys[F_ANCHOR], &len, err, sizeof(err)));
	assert_string_equal(err, "t:1: unknown keyword bogus");
}

struct fixture {
	struct trust trust;
	struct attest_verifier v;
	struct fix_route b;
	struct attest_job job;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	load_trust(&f->trust, true);
	assert_int_equal(attest_verifier_init(&f->v, fix_keys[F_R4].pk, 1024), 0);
	attest_verifier_set_trust(&f->v, &f->trust);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	attest_verifier_free(&f->v);
	trust_free(&f->trust);
	free(f);
	return 0;
}

static const int chain3[] = { F_R1, F_R2, F_R3 };

static void check(struct fixture *f, const char *peer, enum attest_state st, enum attest_reason why, int where)
{
	enum attest_state got = attest_verify(&f->v, &f->b.r, peer, FIX_NOW, &f->job);
	if (got != st || f->job.reason != why || (where != -2 && f->job.where != where))
		fail_msg("got %s (%s) at %d, want %s (%s) at %d", attest_state_name(got),
			 attest_reason_name(f->job.reason), f->job.where, attest_state_name(st),
			 attest_reason_name(why), where);
}

static void chain_verifies_once_then_from_the_cache(void **state)
{
	struct fixture *f = *state;
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
	assert_int_equal(f->v.verified, 4);
	assert_int_equal(f->job.expiry, FIX_EXPIRY);
	assert_memory_equal(f->job.head, f->b.w[0].link, 32);
	/* a refresh, a load change: no verification */
	f->b.r.load_ms = 250;
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
	assert_int_equal(f->v.verified, 4);
	/* the same origin through cr2 then cr5: only the two new links */
	static const int other[] = { F_R1, F_R2, F_R5 };
	fix_build(&f->b, "www.example.com", F_ORIGIN, other, 3, F_R4, FIX_EXPIRY, NULL, 0);
	check(f, "cr5", ATTEST_VALID, ATTEST_OK, -1);
	assert_int_equal(f->v.verified, 6);
	/* through the protobuf codec and back: the same bytes verify */
	Nbrp__Update u = NBRP__UPDATE__INIT;
	Nbrp__Route *rp = &f->b.r;
	u.routes = &rp;
	u.n_routes = 1;
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	m.body_case = NBRP__MESSAGE__BODY_UPDATE;
	m.update = &u;
	size_t len;
	uint8_t *frame = nbrp_encode(&m, &len);
	assert_non_null(frame);
	Nbrp__Message *dm;
	struct nbrp_error e;
	assert_int_equal(nbrp_decode(frame + 4, len - 4, true, &dm, &e), 1);
	enum attest_state st = attest_verify(&f->v, dm->update->routes[0], "cr5", FIX_NOW, &f->job);
	assert_int_equal(st, ATTEST_VALID);
	nbrp_message_free(dm);
	free(frame);
	/* a hop costs at most 80 bytes in the Route, the origin 114 */
	assert_true(nbrp__attestation__get_packed_size(&f->b.pb[0]) + 2 <= 80);
	assert_true(nbrp__attestation__get_packed_size(&f->b.pb[3]) + 2 <= 114);
}

static void server_mode_origin_for_its_router(void **state)
{
	struct fixture *f = *state;
	fix_build(&f->b, "example.com", F_ORIGIN, NULL, 0, F_R4, FIX_EXPIRY, NULL, 0);
	check(f, NULL, ATTEST_VALID, ATTEST_OK, -1);
	/* made for another first router */
	fix_build(&f->b, "example.com", F_ORIGIN, NULL, 0, F_R5, FIX_EXPIRY, NULL, 0);
	check(f, NULL, ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 0);
}

/* A content server's route must be its own: the origin is the trust file's key for its name. */
static void server_mode_checked_against_its_key(void **state)
{
	struct fixture *f = *state;
	const unsigned srv = ATTEST_SERVER;
	/* cr1's key originates example.com nowhere: rx's key and evil.net are its own */
	fix_build(&f->b, "www.evil.net", F_X, NULL, 0, F_R4, FIX_EXPIRY, NULL, 0);
	assert_int_equal(attest_prepare_flags(&f->v, &f->b.r, "rx", srv, FIX_NOW, &f->job), ATTEST_PENDING);
	attest_job_drop(&f->job);
	/* the origin's chain (captured, made for us) replayed through server rx: refused, no crypto */
	fix_build(&f->b, "www.example.com", F_ORIGIN, NULL, 0, F_R4, FIX_EXPIRY, NULL, 0);
	uint64_t verified = f->v.verified;
	assert_int_equal(attest_prepare_flags(&f->v, &f->b.r, "rx", srv, FIX_NOW, &f->job), ATTEST_INVALID);
	assert_int_equal(f->job.reason, ATTEST_PATH_MISMATCH);
	/* a server the trust file has no key for */
	assert_int_equal(attest_prepare_flags(&f->v, &f->b.r, "nobody", srv, FIX_NOW, &f->job), ATTEST_INVALID);
	assert_int_equal(f->job.reason, ATTEST_UNKNOWN_KEY);
	/* a path from a server */
	fix_build(&f->b, "www.evil.net", F_X, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	assert_int_equal(attest_prepare_flags(&f->v, &f->b.r, "rx", srv, FIX_NOW, &f->job), ATTEST_INVALID);
	assert_int_equal(f->job.reason, ATTEST_PATH_MISMATCH);
	assert_int_equal(f->v.verified, verified);
}

/* The origin's for_key is signed by nobody: anything in it is refused, not kept and passed on. */
static void origin_for_key_must_be_empty(void **state)
{
	struct fixture *f = *state;
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	static uint8_t junk[1 << 20];
	f->b.pb[3].for_key.data = junk;
	f->b.pb[3].for_key.len = sizeof(junk);
	check(f, "cr3", ATTEST_INVALID, ATTEST_MALFORMED, 3);
	f->b.pb[3].for_key.len = 1;
	check(f, "cr3", ATTEST_INVALID, ATTEST_MALFORMED, 3);
	assert_int_equal(f->v.verified, 0);
	f->b.pb[3].for_key.len = 0;
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
}

/* origin_seq is in the origin's signed bytes: a replayed chain cannot be made to look newer. */
static void attack_origin_seq_changed(void **state)
{
	struct fixture *f = *state;
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	f->b.r.origin_seq = 1794999940123u;
	check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 3);
	f->b.r.origin_seq = 0;
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
}

/* Signed origin withdrawals: the second implementation's bytes, and each forgery refused with its reason. */
static void origin_withdrawal_signed_and_forged(void **state)
{
	struct fixture *f = *state;
	struct name n;
	assert_int_equal(name_from_text(&n, "www.example.com", 15), NAME_OK);
	uint8_t sig[64], want[64], msg[ATTEST_WITHDRAW_MSG_MAX];
	assert_int_equal(attest_withdrawal_message(msg, fix_keys[F_ORIGIN].pk, 1794999940123u, FIX_EXPIRY, n.wire, n.len), 81);
	attest_sign_withdrawal(sig, &fix_keys[F_ORIGIN], 1794999940123u, FIX_EXPIRY, n.wire, n.len);
	hex(want, "64f56be559f21ad4b124e1ba6117999680abc24d09af74f379520e75fa9b088a"
		  "2d7407a52c8d477ceee647505c5e4fc88174bcbd5d06c41c19892a18dbbc650c");
	assert_memory_equal(sig, want, 64);     /* tests/integration/sigtest.py's */
	Nbrp__OriginWithdrawal w = NBRP__ORIGIN_WITHDRAWAL__INIT;
	w.name = (ProtobufCBinaryData){ n.len, n.wire };
	w.origin = "cr1";
	w.origin_seq = 1794999940123u;
	w.signer = (ProtobufCBinaryData){ 32, fix_keys[F_ORIGIN].pk };
	w.signature = (ProtobufCBinaryData){ 64, sig };
	w.expiry = FIX_EXPIRY;
	assert_true(attest_withdrawal_signed(&w));
	assert_int_equal(attest_withdrawal_check(&f->v, &w, FIX_NOW), ATTEST_OK);
	/* the stamp raised: the signature does not hold, and the second time costs no verification */
	w.origin_seq++;
	assert_int_equal(attest_withdrawal_check(&f->v, &w, FIX_NOW), ATTEST_BAD_SIGNATURE);
	uint64_t verified = f->v.verified;
	assert_int_equal(attest_withdrawal_check(&f->v, &w, FIX_NOW), ATTEST_BAD_SIGNATURE);
	assert_int_equal(f->v.verified, verified);
	w.origin_seq--;
	/* expired */
	assert_int_equal(attest_withdrawal_check(&f->v, &w, FIX_EXPIRY + 1), ATTEST_EXPIRED);
	/* a key the trust file does not give the name (its own signature) */
	attest_sign_withdrawal(sig, &fix_keys[F_X], w.origin_seq, FIX_EXPIRY, n.wire, n.len);
	w.signer.data = fix_keys[F_X].pk;
	assert_int_equal(attest_withdrawal_check(&f->v, &w, FIX_NOW), ATTEST_UNAUTHORISED_ORIGIN);
	/* the origin's key claimed over another's signature */
	w.signer.data = fix_keys[F_ORIGIN].pk;
	assert_int_equal(attest_withdrawal_check(&f->v, &w, FIX_NOW), ATTEST_BAD_SIGNATURE);
	/* a name the origin may not originate, signed by it */
	struct name evil;
	assert_int_equal(name_from_text(&evil, "www.evil.net", 12), NAME_OK);
	attest_sign_withdrawal(sig, &fix_keys[F_ORIGIN], w.origin_seq, FIX_EXPIRY, evil.wire, evil.len);
	w.name = (ProtobufCBinaryData){ evil.len, evil.wire };
	assert_int_equal(attest_withdrawal_check(&f->v, &w, FIX_NOW), ATTEST_UNAUTHORISED_ORIGIN);
	/* sizes; no stamp */
	w.name = (ProtobufCBinaryData){ n.len, n.wire };
	w.signer.len = 31;
	assert_int_equal(attest_withdrawal_check(&f->v, &w, FIX_NOW), ATTEST_MALFORMED);
	w.signer.len = 32;
	w.origin_seq = 0;
	assert_int_equal(attest_withdrawal_check(&f->v, &w, FIX_NOW), ATTEST_MALFORMED);
	/* no trust file */
	w.origin_seq = 1;
	attest_verifier_set_trust(&f->v, NULL);
	assert_int_equal(attest_withdrawal_check(&f->v, &w, FIX_NOW), ATTEST_UNKNOWN_KEY);
	attest_verifier_set_trust(&f->v, &f->trust);
}

/* A chain received with less than min_lifetime left is refused; a stored one is valid to its end. */
static void chain_about_to_expire_is_refused_at_import(void **state)
{
	struct fixture *f = *state;
	f->v.min_lifetime = 300;
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_NOW + 299, NULL, 0);
	check(f, "cr3", ATTEST_INVALID, ATTEST_EXPIRED, -1);
	assert_int_equal(f->v.verified, 0);
	assert_int_equal(attest_prepare_stored(&f->v, &f->b.r, "cr3", false, FIX_NOW, &f->job), ATTEST_PENDING);
	attest_job_drop(&f->job);
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_NOW + 300, NULL, 0);
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
}

/* A forgery sent again costs no verification: its failed link is remembered, until a new trust file. */
static void failed_links_are_remembered(void **state)
{
	struct fixture *f = *state;
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	f->b.w[1].sig[5] ^= 1;          /* cr2's hop */
	check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 1);
	uint64_t verified = f->v.verified;
	assert_int_equal(verified, 3);  /* the origin, cr1, cr2 */
	for (int i = 0; i < 100; i++)
		check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 1);
	assert_int_equal(f->v.verified, verified);
	assert_int_equal(f->v.bad_hits, 100);
	/* the good chain is not held back by it */
	f->b.w[1].sig[5] ^= 1;
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
	/* a new trust file: the verdict is taken again */
	f->b.w[1].sig[5] ^= 1;
	attest_verifier_set_trust(&f->v, &f->trust);
	check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 1);
	assert_int_equal(f->v.verified, verified + 2 + 1);
}

static void states_without_trust_or_cover(void **state)
{
	struct fixture *f = *state;
	fix_build(&f->b, "www.example.org", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	check(f, "cr3", ATTEST_NOT_FOUND, ATTEST_OK, -1);
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	attest_verifier_set_trust(&f->v, NULL);
	check(f, "cr3", ATTEST_UNVERIFIED, ATTEST_OK, -1);
	attest_verifier_set_trust(&f->v, &f->trust);
	f->trust.valid_until = FIX_NOW - 1;
	check(f, "cr3", ATTEST_UNVERIFIED, ATTEST_OK, -1);
	f->trust.valid_until = FIX_EXPIRY;
	/* unsigned, covered */
	f->b.r.n_attestations = 0;
	check(f, "cr3", ATTEST_INVALID, ATTEST_PATH_MISMATCH, -1);
}

static void attack_origin_not_authorised(void **state)
{
	struct fixture *f = *state;
	fix_build(&f->b, "www.example.com", F_X, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	check(f, "cr3", ATTEST_INVALID, ATTEST_UNAUTHORISED_ORIGIN, 3);
	assert_int_equal(f->v.verified, 0);
	assert_int_equal(f->v.by_reason[ATTEST_UNAUTHORISED_ORIGIN], 1);
}

static void attack_changed_byte(void **state)
{
	struct fixture *f = *state;
	/* in a router name of the path */
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	f->b.path[1] = "cr5";
	check(f, "cr3", ATTEST_INVALID, ATTEST_PATH_MISMATCH, 2);
	f->b.path[1] = "cr6";
	check(f, "cr3", ATTEST_INVALID, ATTEST_UNKNOWN_KEY, 1);
	/* in a signature, an expiry, the origin's timestamp */
	for (int i = 0; i < 3; i++) {
		fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
		if (i == 0)
			f->b.w[1].sig[17] ^= 0x10;
		else if (i == 1)
			f->b.pb[2].expiry--;
		else
			f->b.pb[3].timestamp++;
		check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, i == 0 ? 1 : i == 1 ? 2 : 3);
	}
}

static void attack_hop_removed(void **state)
{
	struct fixture *f = *state;
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	/* cr3 drops cr2: [cr3, cr1], with and without cr2's attestation */
	f->b.path[1] = f->b.path[2];
	f->b.pp[1] = f->b.pp[2];
	f->b.pp[2] = f->b.pp[3];
	f->b.r.n_path = 2;
	f->b.r.n_attestations = 3;
	check(f, "cr3", ATTEST_INVALID, ATTEST_PATH_MISMATCH, 1);
	f->b.r.n_attestations = 4;
	f->b.pp[2] = &f->b.pb[2];
	f->b.pp[3] = &f->b.pb[3];
	check(f, "cr3", ATTEST_INVALID, ATTEST_PATH_MISMATCH, -1);
}

static void attack_hop_added(void **state)
{
	struct fixture *f = *state;
	/* rx takes cr2's route for cr3 and passes it on as its own */
	static const int c2[] = { F_R1, F_R2 };
	struct fix_route b2;
	fix_build(&b2, "www.example.com", F_ORIGIN, c2, 2, F_R3, FIX_EXPIRY, NULL, 0);
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	f->b.path[0] = "rx";
	f->b.path[1] = "cr2";
	f->b.path[2] = "cr1";
	attest_sign_hop(&f->b.w[0], &fix_keys[F_X], b2.w[0].link, fix_keys[F_R4].pk, FIX_EXPIRY);
	attest_to_pb(&f->b.pb[0], &f->b.w[0]);
	f->b.pb[1] = b2.pb[0];
	f->b.pb[2] = b2.pb[1];
	f->b.pb[3] = b2.pb[2];
	check(f, "rx", ATTEST_INVALID, ATTEST_PATH_MISMATCH, 1);
	/* a name added to the path without an attestation */
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	char *p4[4] = { "cr3", "rx", "cr2", "cr1" };
	f->b.r.path = p4;
	f->b.r.n_path = 4;
	check(f, "cr3", ATTEST_INVALID, ATTEST_PATH_MISMATCH, -1);
}

static void attack_replay_to_another_peer(void **state)
{
	struct fixture *f = *state;
	/* cr3's route for cr5 shown to cr4 */
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R5, FIX_EXPIRY, NULL, 0);
	check(f, "cr3", ATTEST_INVALID, ATTEST_REPLAYED, 0);
	/* the same with the hint forged to be ours: the signature fails */
	memcpy(f->b.w[0].for_key, fix_keys[F_R4].pk, 4);
	check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 0);
	/* and the sender must be the first of the path */
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	check(f, "cr2", ATTEST_INVALID, ATTEST_PATH_MISMATCH, 0);
}

static void attack_expired(void **state)
{
	struct fixture *f = *state;
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_NOW - 1, NULL, 0);
	check(f, "cr3", ATTEST_INVALID, ATTEST_EXPIRED, 3);
	/* a valid chain seen again after its expiry: the cache does not help */
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_NOW + 10, NULL, 0);
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
	assert_int_equal(attest_verify(&f->v, &f->b.r, "cr3", FIX_NOW + 11, &f->job), ATTEST_INVALID);
	assert_int_equal(f->job.reason, ATTEST_EXPIRED);
	/* one hop expired */
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	attest_sign_hop(&f->b.w[1], &fix_keys[F_R2], f->b.w[2].link, fix_keys[F_R3].pk, FIX_NOW - 5);
	attest_to_pb(&f->b.pb[1], &f->b.w[1]);
	check(f, "cr3", ATTEST_INVALID, ATTEST_EXPIRED, 1);
}

static void attack_unknown_key(void **state)
{
	struct fixture *f = *state;
	static const int c[] = { F_R1, F_GHOST, F_R3 };
	fix_build(&f->b, "www.example.com", F_ORIGIN, c, 3, F_R4, FIX_EXPIRY, NULL, 0);
	check(f, "cr3", ATTEST_INVALID, ATTEST_UNKNOWN_KEY, 1);
	/* an origin key nobody listed */
	fix_build(&f->b, "www.example.com", F_GHOST, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	check(f, "cr3", ATTEST_INVALID, ATTEST_UNAUTHORISED_ORIGIN, 3);
}

static void attack_signature_over_another_name(void **state)
{
	struct fixture *f = *state;
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	struct name other;
	assert_int_equal(name_from_text(&other, "shop.example.com", 16), NAME_OK);
	f->b.names[0].data = other.wire;
	f->b.names[0].len = other.len;
	check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 3);
	assert_int_equal(f->v.verified, 1);     /* the origin's, and no further */
	/* several names under one signature */
	ProtobufCBinaryData two[2] = { f->b.names[0], f->b.names[0] };
	f->b.r.names = two;
	f->b.r.n_names = 2;
	check(f, "cr3", ATTEST_INVALID, ATTEST_MALFORMED, -1);
}

static void add_name(struct nameset *s, const char *text)
{
	struct name n;
	assert_int_equal(name_from_text(&n, text, strlen(text)), NAME_OK);
	assert_int_equal(nameset_add(s, n.wire, n.len), 1);
}

static void aggregate_members_digest(void **state)
{
	struct fixture *f = *state;
	struct nameset a, b;
	nameset_init(&a);
	nameset_init(&b);
	add_name(&a, "a.shop.example");
	add_name(&a, "b.shop.example");
	add_name(&a, "shop.example");
	add_name(&b, "shop.example");
	add_name(&b, "b.shop.example");
	add_name(&b, "a.shop.example");
	uint8_t da[32], db[32];
	assert_int_equal(attest_member_digest(&a, da), 0);
	assert_int_equal(attest_member_digest(&b, db), 0);
	assert_memory_equal(da, db, 32);
	fix_build(&f->b, "cdn.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, da, 7);
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
	assert_int_equal(attest_members_check(&f->b.r, &b), ATTEST_OK);
	/* a member more, or one less: not what the origin signed */
	add_name(&b, "c.shop.example");
	assert_int_equal(attest_members_check(&f->b.r, &b), ATTEST_DIGEST_MISMATCH);
	/* the digest changed to match other members: the origin's signature fails */
	assert_int_equal(attest_member_digest(&b, db), 0);
	memcpy(f->b.digest, db, 32);
	check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 3);
	/* another version under the same signature */
	fix_build(&f->b, "cdn.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, da, 7);
	f->b.r.aggregate_version = 8;
	check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 3);
	f->b.r.aggregate_version = 1ull << 32;
	check(f, "cr3", ATTEST_INVALID, ATTEST_MALFORMED, -1);
	nameset_free(&a);
	nameset_free(&b);
}

/* The transfer source is the origin's: another one announced, or the signed one changed, or spelt
 * otherwise, is refused; and the found-valid-in-the-cache path refuses it the same. */
static void aggregate_source_is_the_one_signed(void **state)
{
	struct fixture *f = *state;
	uint8_t d[32] = { 7 };
	fix_build(&f->b, "cdn.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, d, 7);
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
	/* a relay naming its own source: the chain is good (cached now), the source is not the origin's */
	f->b.r.aggregate_source = (char *)"198.51.100.66 53";
	check(f, "cr3", ATTEST_INVALID, ATTEST_UNSIGNED_SOURCE, -1);
	uint64_t verified = f->v.verified;
	/* the same with nothing cached: verified, then refused */
	attest_cache_clear(&f->v.cache);
	check(f, "cr3", ATTEST_INVALID, ATTEST_UNSIGNED_SOURCE, -1);
	assert_true(f->v.verified > verified);
	/* both fields changed: the origin signed another source */
	f->b.r.aggregate_signed_source = f->b.r.aggregate_source;
	check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 3);
	/* another spelling of the source, none, or junk: malformed */
	const char *bad[] = { "192.0.2.09 5300", "192.0.2.9 05300", "", "::ffff:192.0.2.9 5300x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f->b.r.aggregate_source = f->b.r.aggregate_signed_source = (char *)bad[i];
		check(f, "cr3", ATTEST_INVALID, ATTEST_MALFORMED, -1);
	}
	f->b.r.aggregate_signed_source = NULL;
	check(f, "cr3", ATTEST_INVALID, ATTEST_MALFORMED, -1);
	/* an origin signature over the aggregate without its source (subject 2, as before): refused */
	fix_build(&f->b, "cdn.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, d, 7);
	uint8_t msg[ATTEST_ORIGIN_MSG_MAX];
	struct attest_subject sub = { .name = f->b.name.wire, .name_len = f->b.name.len, .aggregate = true,
				      .version = 7 };
	memcpy(sub.digest, d, 32);
	size_t len = attest_origin_message(msg, fix_keys[F_ORIGIN].pk, fix_keys[F_R1].pk, FIX_NOW - 60, FIX_EXPIRY, &sub);
	msg[16 + 32 + 32 + 24] = 2;
	len -= 1;       /* no source, not even its length */
	sigkey_sign(&fix_keys[F_ORIGIN], msg, len, f->b.w[3].sig);
	attest_to_pb(&f->b.pb[3], &f->b.w[3]);
	check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 3);
}

/* A signed name set: names routed, others the set's rest; built as fix_build() does, the origin
 * signing the set's digest. */
static void build_set(struct fixture *f, const char *const *names, size_t n, const char *const *others, size_t no)
{
	static struct name nm[16];
	static ProtobufCBinaryData routed[16], rest[16];
	fix_build(&f->b, "example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	for (size_t i = 0; i < n + no; i++) {
		const char *t = i < n ? names[i] : others[i - n];
		assert_int_equal(name_from_text(&nm[i], t, strlen(t)), NAME_OK);
		ProtobufCBinaryData *b = i < n ? &routed[i] : &rest[i - n];
		b->data = nm[i].wire;
		b->len = nm[i].len;
	}
	f->b.r.names = routed;
	f->b.r.n_names = n;
	f->b.r.set_others = rest;
	f->b.r.n_set_others = no;
	struct attest_subject s = { .set = true };
	assert_int_equal(attest_set_digest(&f->b.r, s.digest, NULL), 0);
	memcpy(f->b.digest, s.digest, 32);
	f->b.r.aggregate_digest.data = f->b.digest;
	f->b.r.aggregate_digest.len = 32;
	attest_sign_origin(&f->b.w[3], &fix_keys[F_ORIGIN], fix_keys[F_R1].pk, FIX_NOW - 60, FIX_EXPIRY, &s);
	const uint8_t *prev = f->b.w[3].link;
	for (int h = 0; h < 3; h++) {
		int i = 2 - h;
		attest_sign_hop(&f->b.w[i], &fix_keys[chain3[h]], prev, fix_keys[h + 1 < 3 ? chain3[h + 1] : F_R4].pk, FIX_EXPIRY);
		prev = f->b.w[i].link;
	}
	for (int i = 0; i <= 3; i++)
		attest_to_pb(&f->b.pb[i], &f->b.w[i]);
}

/* The set's digest and its origin's signature, as tests/integration/sigtest.py (Python's
 * hashlib and cryptography) makes them for the same keys and names. */
static void name_set_vector_of_the_second_implementation(void **state)
{
	struct fixture *f = *state;
	static const char *const names[] = { "b.example.com", "example.com", "a.example.com" };
	build_set(f, names, 3, NULL, 0);
	uint8_t want[64];
	hex(want, "3edf631d2887e721919bd3757b9a4f2cec22150ffc6c3877a4411a2f44b13eb2");
	assert_memory_equal(f->b.digest, want, 32);
	/* the origin's bytes: tag, signer, first, timestamp, expiry, origin_seq, 3, the digest */
	uint8_t msg[ATTEST_ORIGIN_MSG_MAX];
	struct attest_subject s = { .set = true };
	memcpy(s.digest, want, 32);
	assert_int_equal(attest_origin_message(msg, fix_keys[F_ORIGIN].pk, fix_keys[F_R1].pk, FIX_NOW - 60, FIX_EXPIRY,
						 &s), 137);
	assert_int_equal(msg[104], 3);
	hex(want, "b380784f06d1359f2fa925057aa6fc21d251b4f5cfb28f9e049fc29a5a54e9c4"
		  "7824d1422a858fe98faa8f76be1542900ba77120406028649b8771ca5f590702");
	assert_memory_equal(f->b.w[3].sig, want, 64);
	/* with a stamp, and for one name */
	struct attest_wire w;
	s.seq = 1794999940123u;
	attest_sign_origin(&w, &fix_keys[F_ORIGIN], fix_keys[F_R1].pk, FIX_NOW - 60, FIX_EXPIRY, &s);
	hex(want, "ffc44f05ac760043cb658991b4f47b0a727f9a699bc3ca2f06c498fb18d643e7"
		  "ce42c32a6f0cf13831e7f3c869d1e5a9bd8853ae959368ec0ab81cfc5ca66700");
	assert_memory_equal(w.sig, want, 64);
	struct name one;
	assert_int_equal(name_from_text(&one, "example.com", 11), NAME_OK);
	struct attest_subject s1 = { .name = one.wire, .name_len = one.len, .seq = 1794999940123u };
	assert_int_equal(attest_origin_message(msg, fix_keys[F_ORIGIN].pk, fix_keys[F_R1].pk, FIX_NOW - 60, FIX_EXPIRY,
						 &s1), 118);
	attest_sign_origin(&w, &fix_keys[F_ORIGIN], fix_keys[F_R1].pk, FIX_NOW - 60, FIX_EXPIRY, &s1);
	hex(want, "dee8f4c52722e24081acd9053fd9bd93d1d2d0cca953d07ea0e0cb70d8db995b"
		  "77a15d7246a267aa15f075618f6d79de6ffebe1c6f7f8c10bc2566973af9f106");
	assert_memory_equal(w.sig, want, 64);
	/* the same names in another order, and split between names and others: the same digest */
	static const char *const a[] = { "a.example.com" }, *const rest[] = { "example.com", "b.example.com" };
	uint8_t d[32];
	memcpy(d, f->b.digest, 32);
	build_set(f, a, 1, rest, 2);
	assert_memory_equal(f->b.digest, d, 32);
}

static void name_set_verifies_once_for_any_subset(void **state)
{
	struct fixture *f = *state;
	static const char *const all[] = { "a.example.com", "b.example.com", "c.example.com", "www.evil.net" };
	/* routing the three example.com names; evil.net (not the origin's) only among the others */
	build_set(f, all, 3, all + 3, 1);
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
	assert_int_equal(f->v.verified, 4);
	/* a router passing on a subset: b's Route, the rest as others: the same chain, cached */
	ProtobufCBinaryData routed = f->b.r.names[1], rest[3] = { f->b.r.names[0], f->b.r.names[2],
								    f->b.r.set_others[0] };
	f->b.r.names = &routed;
	f->b.r.n_names = 1;
	f->b.r.set_others = rest;
	f->b.r.n_set_others = 3;
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
	assert_int_equal(f->v.verified, 4);
	/* the names of a stored route checked again: the digest as stored, no sort, no crypto */
	f->b.r.n_set_others = 0;
	assert_int_equal(attest_prepare_stored(&f->v, &f->b.r, "cr3", true, FIX_NOW, &f->job), ATTEST_VALID);
	/* a name routed that the origin may not originate: the Route is invalid */
	build_set(f, all, 4, NULL, 0);
	check(f, "cr3", ATTEST_INVALID, ATTEST_UNAUTHORISED_ORIGIN, 3);
	/* no routed name covered by the trust file: not-found */
	static const char *const nowhere[] = { "a.nowhere.org", "b.nowhere.org", "www.example.com" };
	build_set(f, nowhere, 2, nowhere + 2, 1);
	check(f, "cr3", ATTEST_NOT_FOUND, ATTEST_OK, -1);
}

static void attack_name_set_altered(void **state)
{
	struct fixture *f = *state;
	static const char *const all[] = { "a.example.com", "b.example.com", "c.example.com" };
	static struct name x;
	assert_int_equal(name_from_text(&x, "x.example.com", 13), NAME_OK);
	/* a name changed: the set is not the one signed */
	build_set(f, all, 2, all + 2, 1);
	f->b.r.names[1].data = x.wire;
	f->b.r.names[1].len = x.len;
	check(f, "cr3", ATTEST_INVALID, ATTEST_DIGEST_MISMATCH, -1);
	assert_int_equal(f->v.verified, 0);
	/* ... and the digest made to match it: the origin's signature fails */
	uint8_t d[32];
	assert_int_equal(attest_set_digest(&f->b.r, d, NULL), 0);
	memcpy(f->b.digest, d, 32);
	check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 3);
	/* a name added that the origin did not sign, routed or among the others */
	build_set(f, all, 3, NULL, 0);
	static ProtobufCBinaryData more[4];
	memcpy(more, f->b.r.names, 3 * sizeof(more[0]));
	more[3] = (ProtobufCBinaryData){ x.len, x.wire };
	f->b.r.names = more;
	f->b.r.n_names = 4;
	check(f, "cr3", ATTEST_INVALID, ATTEST_DIGEST_MISMATCH, -1);
	f->b.r.n_names = 3;
	f->b.r.set_others = more + 3;
	f->b.r.n_set_others = 1;
	check(f, "cr3", ATTEST_INVALID, ATTEST_DIGEST_MISMATCH, -1);
	/* a name dropped without being listed among the others */
	f->b.r.n_set_others = 0;
	f->b.r.n_names = 2;
	check(f, "cr3", ATTEST_INVALID, ATTEST_DIGEST_MISMATCH, -1);
	/* a name twice (routed and among the others): malformed */
	f->b.r.n_names = 3;
	f->b.r.set_others = more;
	f->b.r.n_set_others = 1;
	check(f, "cr3", ATTEST_INVALID, ATTEST_MALFORMED, -1);
	/* others on a Route that is not a set's, a set's digest of the wrong size */
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	f->b.r.set_others = more;
	f->b.r.n_set_others = 1;
	check(f, "cr3", ATTEST_INVALID, ATTEST_MALFORMED, -1);
	build_set(f, all, 3, NULL, 0);
	f->b.r.aggregate_digest.len = 31;
	check(f, "cr3", ATTEST_INVALID, ATTEST_MALFORMED, -1);
	/* the set subject is not the name subject: a set of one does not pass for its name's route */
	static const char *const one[] = { "www.example.com" };
	build_set(f, one, 1, NULL, 0);
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
	f->b.r.aggregate_digest.len = 0;
	check(f, "cr3", ATTEST_INVALID, ATTEST_BAD_SIGNATURE, 3);
}

static void revoked_origin_without_crypto(void **state)
{
	struct fixture *f = *state;
	fix_build(&f->b, "www.example.com", F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
	uint64_t verified = f->v.verified;
	struct trust t2;
	load_trust(&t2, false);
	attest_verifier_set_trust(&f->v, &t2);
	check(f, "cr3", ATTEST_NOT_FOUND, ATTEST_OK, -1);
	attest_verifier_set_trust(&f->v, &f->trust);
	check(f, "cr3", ATTEST_VALID, ATTEST_OK, -1);
	assert_int_equal(f->v.verified, verified);
	trust_free(&t2);
}

static void cache_bounded_lru_and_expiry(void **state)
{
	struct attest_cache c;
	assert_int_equal(attest_cache_init(&c, 2 * ATTEST_CACHE_WAYS), 0);
	assert_int_equal(c.sets_mask, 1);
	uint8_t link[32] = {0};
	for (uint32_t i = 0; i < 1000; i++) {
		memcpy(link, &i, 4);
		attest_cache_add(&c, link, 100 + i, 50);
	}
	int live = 0;
	for (uint32_t i = 0; i < 1000; i++) {
		memcpy(link, &i, 4);
		live += attest_cache_find(&c, link, 50);
	}
	assert_int_equal(live, 2 * ATTEST_CACHE_WAYS);
	assert_int_equal(c.evictions, 1000 - 2 * ATTEST_CACHE_WAYS);
	/* the newest stay; an entry past its expiry is not found */
	uint32_t last = 999;
	memcpy(link, &last, 4);
	assert_true(attest_cache_find(&c, link, 1099));
	assert_false(attest_cache_find(&c, link, 1100));
	attest_cache_clear(&c);
	assert_false(attest_cache_find(&c, link, 50));
	attest_cache_free(&c);
}

/* cr1 originates, cr2..cr4 pass it on, cr5 receives: each router keeps
 * the chain it checked and signs one hop for the next. */
static void chain_passed_on_router_by_router(void **state)
{
	struct fixture *f = *state;
	struct name n;
	assert_int_equal(name_from_text(&n, "www.example.com", 15), NAME_OK);
	struct attest_subject s = { .name = n.wire, .name_len = n.len };
	/* cr1's own content, origin key separate from its router key */
	struct attest_wire o, hop;
	attest_sign_origin(&o, &fix_keys[F_ORIGIN], fix_keys[F_R1].pk, FIX_NOW - 10, FIX_EXPIRY, &s);
	struct attest_chain *c = attest_chain_origin(&o);
	assert_non_null(c);
	const uint8_t *prev = o.link;
	static const int routers[] = { F_R1, F_R2, F_R3, F_R4, F_R5 };
	char *path[5];
	Nbrp__Attestation pb[NBRP_MAX_PATH + 2], *pp[NBRP_MAX_PATH + 2];
	for (int h = 0; h < 4; h++) {
		int me = routers[h], next = routers[h + 1];
		attest_sign_hop(&hop, &fix_keys[me], prev, fix_keys[next].pk, FIX_EXPIRY);
		/* the route next receives: our name first in the path */
		for (int i = h; i > 0; i--)
			path[i] = path[i - 1];
		path[0] = (char *)fix_name[me];
		Nbrp__Route r = NBRP__ROUTE__INIT;
		ProtobufCBinaryData nm = { n.len, n.wire };
		r.names = &nm;
		r.n_names = 1;
		r.path = path;
		r.n_path = (size_t)h + 1;
		r.n_attestations = attest_chain_pb(c, &hop, pb, pp);
		r.attestations = pp;
		assert_int_equal(r.n_attestations, h + 2);
		/* next checks it */
		struct attest_verifier v;
		assert_int_equal(attest_verifier_init(&v, fix_keys[next].pk, 64), 0);
		attest_verifier_set_trust(&v, &f->trust);
		struct attest_job job;
		if (attest_verify(&v, &r, fix_name[me], FIX_NOW, &job) != ATTEST_VALID)
			fail_msg("hop %d: %s (%s) at %d", h, attest_state_name(job.state), attest_reason_name(job.reason), job.where);
		assert_int_equal(v.verified, h + 2);
		attest_verifier_free(&v);
		/* and keeps it to pass on */
		struct attest_chain *kept = attest_chain_copy(&r);
		assert_non_null(kept);
		free(c);
		c = kept;
		assert_int_equal(c->n_hops, h + 1);
		static uint8_t head[32];
		memcpy(head, job.head, 32);
		prev = head;
	}
	free(c);
}

struct pool_test {
	pthread_t loop_thread;
	int batches_done;
	bool on_loop;
};

static void verify_done(struct attest_batch *b)
{
	struct pool_test *t = b->arg;
	t->on_loop = pthread_equal(pthread_self(), t->loop_thread);
	t->batches_done++;
}

static void sign_done(struct attest_sign_batch *b)
{
	struct pool_test *t = b->arg;
	t->on_loop = t->on_loop && pthread_equal(pthread_self(), t->loop_thread);
	t->batches_done++;
}

/* The worker pool gives the states the inline check gives, completes on
 * the loop's thread, and fills the same cache. */
static void worker_pool_batches(void **state)
{
	struct fixture *f = *state;
	enum { N = 48 };
	static struct fix_route b[N];
	struct attest_job *jobs = calloc(N, sizeof(*jobs));
	enum attest_state want[N];
	struct attest_verifier ref;
	assert_int_equal(attest_verifier_init(&ref, fix_keys[F_R4].pk, 1024), 0);
	attest_verifier_set_trust(&ref, &f->trust);
	for (int i = 0; i < N; i++) {
		char name[64];
		snprintf(name, sizeof(name), "n%d.example.com", i % 40);
		fix_build(&b[i], name, i % 7 == 3 ? F_X : F_ORIGIN, chain3, 3, F_R4, FIX_EXPIRY, NULL, 0);
		if (i % 5 == 1)
			b[i].w[1].sig[3] ^= 1;
		struct attest_job j;
		want[i] = attest_verify(&ref, &b[i].r, "cr3", FIX_NOW, &j);
	}
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct sigpool pool;
	assert_int_equal(sigpool_init(&pool, &loop, 2), 0);
	struct pool_test t = { .loop_thread = pthread_self() };
	struct attest_batch batch = { .v = &f->v, .jobs = jobs, .n = N, .now = FIX_NOW, .done = verify_done, .arg = &t };
	for (int i = 0; i < N; i++)
		attest_prepare(&f->v, &b[i].r, "cr3", FIX_NOW, &jobs[i]);
	attest_batch_submit(&pool, &batch);
	while (t.batches_done < 1)
		uv_run(&loop, UV_RUN_ONCE);
	assert_true(t.on_loop);
	for (int i = 0; i < N; i++) {
		if (jobs[i].state != want[i])
			fail_msg("route %d: %s, inline %s", i, attest_state_name(jobs[i].state), attest_state_name(want[i]));
		assert_null(jobs[i].checks);
	}
	/* the cache now holds them: a second pass is final at prepare */
	for (int i = 0; i < N; i++)
		if (want[i] == ATTEST_VALID)
			assert_int_equal(attest_prepare(&f->v, &b[i].r, "cr3", FIX_NOW, &jobs[i]), ATTEST_VALID);

	/* cr4 signs one route for 16 peers */
	struct attest_hop_request req[16];
	for (int i = 0; i < 16; i++) {
		memcpy(req[i].prev, jobs[0].head, 32);
		memcpy(req[i].target, fix_keys[i % 2 ? F_R5 : F_R3].pk, 32);
		req[i].expiry = FIX_EXPIRY;
	}
	struct attest_sign_batch sb = { .key = &fix_keys[F_R4], .req = req, .n = 16, .done = sign_done, .arg = &t };
	attest_sign_batch_submit(&pool, &sb);
	struct attest_sign_batch empty = { .key = &fix_keys[F_R4], .req = req, .n = 0, .done = sign_done, .arg = &t };
	attest_sign_batch_submit(&pool, &empty);
	while (t.batches_done < 3)
		uv_run(&loop, UV_RUN_ONCE);
	assert_true(t.on_loop);
	for (int i = 0; i < 16; i++) {
		struct attest_wire w;
		attest_sign_hop(&w, &fix_keys[F_R4], req[i].prev, req[i].target, FIX_EXPIRY);
		assert_memory_equal(w.sig, req[i].out.sig, 64);
	}
	sigpool_close(&pool);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
	attest_verifier_free(&ref);
	free(jobs);
}

int main(void)
{
	assert_true(sigkey_init());
	fix_keys_make();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rfc8032_vectors_and_the_acceptance_rule),
		cmocka_unit_test(key_file_round_trip_and_modes),
		cmocka_unit_test(trust_file_signed_and_looked_up),
		cmocka_unit_test(trust_file_errors),
		cmocka_unit_test_setup_teardown(chain_verifies_once_then_from_the_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(server_mode_origin_for_its_router, setup, teardown),
		cmocka_unit_test_setup_teardown(server_mode_checked_against_its_key, setup, teardown),
		cmocka_unit_test_setup_teardown(origin_for_key_must_be_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(attack_origin_seq_changed, setup, teardown),
		cmocka_unit_test_setup_teardown(origin_withdrawal_signed_and_forged, setup, teardown),
		cmocka_unit_test_setup_teardown(chain_about_to_expire_is_refused_at_import, setup, teardown),
		cmocka_unit_test_setup_teardown(failed_links_are_remembered, setup, teardown),
		cmocka_unit_test_setup_teardown(states_without_trust_or_cover, setup, teardown),
		cmocka_unit_test_setup_teardown(attack_origin_not_authorised, setup, teardown),
		cmocka_unit_test_setup_teardown(attack_changed_byte, setup, teardown),
		cmocka_unit_test_setup_teardown(attack_hop_removed, setup, teardown),
		cmocka_unit_test_setup_teardown(attack_hop_added, setup, teardown),
		cmocka_unit_test_setup_teardown(attack_replay_to_another_peer, setup, teardown),
		cmocka_unit_test_setup_teardown(attack_expired, setup, teardown),
		cmocka_unit_test_setup_teardown(attack_unknown_key, setup, teardown),
		cmocka_unit_test_setup_teardown(attack_signature_over_another_name, setup, teardown),
		cmocka_unit_test_setup_teardown(aggregate_members_digest, setup, teardown),
		cmocka_unit_test_setup_teardown(aggregate_source_is_the_one_signed, setup, teardown),
		cmocka_unit_test_setup_teardown(name_set_vector_of_the_second_implementation, setup, teardown),
		cmocka_unit_test_setup_teardown(name_set_verifies_once_for_any_subset, setup, teardown),
		cmocka_unit_test_setup_teardown(attack_name_set_altered, setup, teardown),
		cmocka_unit_test_setup_teardown(revoked_origin_without_crypto, setup, teardown),
		cmocka_unit_test(cache_bounded_lru_and_expiry),
		cmocka_unit_test_setup_teardown(worker_pool_batches, setup, teardown),
		cmocka_unit_test_setup_teardown(chain_passed_on_router_by_router, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
