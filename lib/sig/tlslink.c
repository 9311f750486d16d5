#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "tlslink.h"
#include "vec.h"

/* TLS 1.3 only, raw public keys only, both ways: nothing to downgrade to */
#define PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CTYPE-ALL:+CTYPE-CLI-RAWPK:+CTYPE-SRV-RAWPK:" \
		 "-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305"
/* Certificates for clients we do not know (DNS over TLS): TLS 1.3 and 1.2, AEAD only, no 1.1 */
#define PRIORITY_X509 "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:%SERVER_PRECEDENCE:" \
		      "-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305"
#define TICKET_LIFETIME_S 7200  /* a resumed session older than this does a full handshake */
#define ERR_LEN 160
#define RECORD_MAX      16384   /* plaintext a record carries at most */
#define RECORD_OVERHEAD 22      /* TLS 1.3: header 5, content type 1, AEAD tag 16 */

struct tlslink_cred {
	gnutls_certificate_credentials_t cert;
	gnutls_priority_t prio;
	unsigned refs;                  /* the owner's and one per link */
	bool x509;                      /* certificate mode: no peer key, tickets */
	gnutls_datum_t ticket_key;      /* x509: the master key of session tickets */
	int64_t not_after;              /* x509: the certificate's expiry, unix seconds */
};

struct buf {
	uint8_t *p;
	size_t off, len, cap;           /* data is p[off, off + len) */
};

struct tlslink {
	gnutls_session_t s;
	struct tlslink_cred *cred;
	struct buf in, out;
	bool done;
	int first;                      /* the first byte the peer sent, -1 before it */
	enum tlslink_failure failure;
	uint8_t peer_key[SIGKEY_PUBLIC_LEN];
	char err[ERR_LEN];
};

static uint8_t *buf_room(struct buf *b, size_t len)
{
	if (b->cap - b->off - b->len >= len)
		return b->p + b->off + b->len;
	if (b->off) {
		memmove(b->p, b->p + b->off, b->len);
		b->off = 0;
	}
	if (VEC_RESERVE(b->p, b->cap, b->len + len) < 0)
		return NULL;
	return b->p + b->len;
}

static void seterr(char *err, size_t errlen, const char *what, int rc)
{
	snprintf(err, errlen, "%s: %s", what, gnutls_strerror(rc));
}

struct tlslink_cred *tlslink_cred_new(const struct sigkey *k, char *err, size_t errlen)
{
	struct tlslink_cred *c = calloc(1, sizeof(*c));
	gnutls_privkey_t priv = NULL;
	if (c)
		c->refs = 1;
	gnutls_pubkey_t pub = NULL;
	gnutls_pcert_st pcert;
	const char *what = "out of memory";
	int rc = GNUTLS_E_MEMORY_ERROR;
	if (!c)
		goto fail;
	gnutls_datum_t x = { (unsigned char *)k->pk, SIGKEY_PUBLIC_LEN };
	gnutls_datum_t seed = { (unsigned char *)k->sk, 32 };        /* libsodium's secret key begins with the seed */
	what = "TLS credentials";
	if ((rc = gnutls_certificate_allocate_credentials(&c->cert)) < 0)
		goto fail;
	what = "TLS private key";
	if ((rc = gnutls_privkey_init(&priv)) < 0 ||
	    (rc = gnutls_privkey_import_ecc_raw(priv, GNUTLS_ECC_CURVE_ED25519, &x, NULL, &seed)) < 0)
		goto fail;
	what = "TLS public key";
	if ((rc = gnutls_pubkey_init(&pub)) < 0 ||
	    (rc = gnutls_pubkey_import_ecc_raw(pub, GNUTLS_ECC_CURVE_ED25519, &x, NULL)) < 0)
		goto fail;
	if ((rc = gnutls_pcert_import_rawpk(&pcert, pub, 0)) < 0)
		goto fail;
	pub = NULL;                     /* pcert's now */
	if ((rc = gnutls_certificate_set_key(c->cert, NULL, 0, &pcert, 1, priv)) < 0) {
		gnutls_pcert_deinit(&pcert);
		goto fail;
	}
	priv = NULL;                    /* the credentials' now */
	what = "TLS priorities";
	if ((rc = gnutls_priority_init(&c->prio, PRIORITY, NULL)) < 0)
		goto fail;
	return c;
fail:
	seterr(err, errlen, what, rc);
	gnutls_pubkey_deinit(pub);
	gnutls_privkey_deinit(priv);
	tlslink_cred_free(c);
	return NULL;
}

void tlslink_cred_free(struct tlslink_cred *c)
{
	if (!c || --c->refs > 0)
		return;
	if (c->ticket_key.data) {
		gnutls_memset(c->ticket_key.data, 0, c->ticket_key.size);
		gnutls_free(c->ticket_key.data);
	}
	if (c->prio)
		gnutls_priority_deinit(c->prio);
	if (c->cert)
		gnutls_certificate_free_credentials(c->cert);
	free(c);
}

/*
 * The chain and key into c's credentials, read and parsed here rather
 * than by gnutls_certificate_set_x509_key_file2, which leaks what it had
 * parsed when a file is malformed (GnuTLS 3.7).
 */
static int load_x509(struct tlslink_cred *c, const char *cert_file, const char *key_file, char *err,
		     size_t errlen)
{
	gnutls_datum_t cd = { NULL, 0 }, kd = { NULL, 0 };
	gnutls_x509_crt_t *crts = NULL;
	unsigned n = 0;
	gnutls_x509_privkey_t key = NULL;
	int rc;
	if ((rc = gnutls_load_file(cert_file, &cd)) < 0) {
		snprintf(err, errlen, "cannot read %s", cert_file);
		goto out;
	}
	if ((rc = gnutls_load_file(key_file, &kd)) < 0) {
		snprintf(err, errlen, "cannot read %s", key_file);
		goto out;
	}
	if ((rc = gnutls_x509_crt_list_import2(&crts, &n, &cd, GNUTLS_X509_FMT_PEM, 0)) < 0) {
		seterr(err, errlen, cert_file, rc);
		goto out;
	}
	if ((rc = gnutls_x509_privkey_init(&key)) < 0 ||
	    (rc = gnutls_x509_privkey_import2(key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
		seterr(err, errlen, key_file, rc);
		goto out;
	}
	if ((rc = gnutls_certificate_set_x509_key(c->cert, crts, n, key)) < 0) {
		snprintf(err, errlen, "%s, %s: %s", cert_file, key_file, gnutls_strerror(rc));
		goto out;
	}
	c->not_after = (int64_t)gnutls_x509_crt_get_expiration_time(crts[0]);
out:
	for (unsigned i = 0; i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	if (key)
		gnutls_x509_privkey_deinit(key);
	if (kd.data) {
		gnutls_memset(kd.data, 0, kd.size);
		gnutls_free(kd.data);
	}
	gnutls_free(cd.data);
	return rc < 0 ? -1 : 0;
}

struct tlslink_cred *tlslink_cred_x509(const char *cert_file, const char *key_file, char *err, size_t errlen)
{
	struct tlslink_cred *c = calloc(1, sizeof(*c));
	const char *what = "out of memory";
	int rc = GNUTLS_E_MEMORY_ERROR;
	if (!c)
		goto fail;
	c->refs = 1;
	c->x509 = true;
	what = "TLS credentials";
	if ((rc = gnutls_certificate_allocate_credentials(&c->cert)) < 0)
		goto fail;
	if (load_x509(c, cert_file, key_file, err, errlen) < 0) {
		tlslink_cred_free(c);
		return NULL;
	}
	what = "TLS priorities";
	if ((rc = gnutls_priority_init(&c->prio, PRIORITY_X509, NULL)) < 0)
		goto fail;
	what = "TLS session ticket key";
	if ((rc = gnutls_session_ticket_key_generate(&c->ticket_key)) < 0)
		goto fail;
	return c;
fail:
	seterr(err, errlen, what, rc);
	tlslink_cred_free(c);
	return NULL;
}

void tlslink_cred_share_tickets(struct tlslink_cred *c, const struct tlslink_cred *from)
{
	if (!c->x509 || !from->x509 || c->ticket_key.size != from->ticket_key.size)
		return;
	memcpy(c->ticket_key.data, from->ticket_key.data, c->ticket_key.size);
}

struct tlslink_cred *tlslink_cred_ref(struct tlslink_cred *c)
{
	c->refs++;
	return c;
}

int64_t tlslink_cred_not_after(const struct tlslink_cred *c)
{
	return c->x509 ? c->not_after : 0;
}

static ssize_t push(gnutls_transport_ptr_t ptr, const void *data, size_t len)
{
	struct tlslink *t = ptr;
	uint8_t *room = buf_room(&t->out, len);
	if (!room) {
		gnutls_transport_set_errno(t->s, ENOMEM);
		return -1;
	}
	memcpy(room, data, len);
	t->out.len += len;
	return (ssize_t)len;
}

static ssize_t pull(gnutls_transport_ptr_t ptr, void *data, size_t len)
{
	struct tlslink *t = ptr;
	if (t->in.len == 0) {
		gnutls_transport_set_errno(t->s, EAGAIN);
		return -1;
	}
	size_t n = len < t->in.len ? len : t->in.len;
	memcpy(data, t->in.p + t->in.off, n);
	t->in.off += n;
	t->in.len -= n;
	if (t->in.len == 0)
		t->in.off = 0;
	return (ssize_t)n;
}

/* Never waits: the owner's loop does (TLS over TCP asks only whether data is in). */
static int pull_timeout(gnutls_transport_ptr_t ptr, unsigned ms)
{
	struct tlslink *t = ptr;
	(void)ms;
	return t->in.len > 0;
}

struct tlslink *tlslink_new(struct tlslink_cred *c, bool server, char *err, size_t errlen)
{
	struct tlslink *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->first = -1;
	/* raw keys: no tickets, a session is one connection, never resumed */
	unsigned flags = (server ? GNUTLS_SERVER : GNUTLS_CLIENT) |
			 (c->x509 ? 0 : GNUTLS_ENABLE_RAWPK | GNUTLS_NO_TICKETS);
	int rc = gnutls_init(&t->s, flags);
	if (rc < 0) {
		seterr(err, errlen, "TLS session", rc);
		free(t);
		return NULL;
	}
	t->cred = c;
	c->refs++;
	if ((rc = gnutls_priority_set(t->s, c->prio)) < 0 ||
	    (rc = gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, c->cert)) < 0) {
		seterr(err, errlen, "TLS session", rc);
		tlslink_free(t);
		return NULL;
	}
	if (c->x509 && server) {
		/*
		 * GnuTLS derives the keys that seal tickets from this master
		 * key and the clock, a new one each ticket lifetime (its
		 * session ticket encryption key rotation), so they rotate
		 * with no timer of ours.
		 */
		gnutls_db_set_cache_expiration(t->s, TICKET_LIFETIME_S);
		if ((rc = gnutls_session_ticket_enable_server(t->s, &c->ticket_key)) < 0) {
			seterr(err, errlen, "TLS session tickets", rc);
			tlslink_free(t);
			return NULL;
		}
	} else if (server) {
		gnutls_certificate_server_set_request(t->s, GNUTLS_CERT_REQUIRE);
	}
	gnutls_handshake_set_timeout(t->s, 0);  /* the owner's timer bounds it */
	gnutls_transport_set_ptr(t->s, t);
	gnutls_transport_set_push_function(t->s, push);
	gnutls_transport_set_pull_function(t->s, pull);
	gnutls_transport_set_pull_timeout_function(t->s, pull_timeout);
	return t;
}

int tlslink_set_alpn(struct tlslink *t, const char *protocol)
{
	gnutls_datum_t p = { (unsigned char *)protocol, (unsigned)strlen(protocol) };
	int rc = gnutls_alpn_set_protocols(t->s, &p, 1, GNUTLS_ALPN_SERVER_PRECEDENCE);
	if (rc < 0)
		seterr(t->err, sizeof(t->err), "TLS ALPN", rc);
	return rc < 0 ? -1 : 0;
}

void tlslink_free(struct tlslink *t)
{
	if (!t)
		return;
	gnutls_deinit(t->s);
	tlslink_cred_free(t->cred);
	free(t->in.p);
	free(t->out.p);
	free(t);
}

uint8_t *tlslink_space(struct tlslink *t, size_t len)
{
	return buf_room(&t->in, len);
}

void tlslink_commit(struct tlslink *t, size_t len)
{
	if (t->first < 0 && len)
		t->first = t->in.p[t->in.off + t->in.len];
	t->in.len += len;
}

/* The peer's raw key, which must be Ed25519: its 32 bytes into peer_key. */
static int export_peer_key(struct tlslink *t)
{
	unsigned n = 0;
	if (gnutls_certificate_type_get2(t->s, GNUTLS_CTYPE_PEERS) != GNUTLS_CRT_RAWPK) {
		snprintf(t->err, sizeof(t->err), "TLS: the peer's credential is not a raw public key");
		return -1;
	}
	const gnutls_datum_t *spki = gnutls_certificate_get_peers(t->s, &n);
	if (!spki || n != 1) {
		snprintf(t->err, sizeof(t->err), "TLS: the peer presented no key");
		return -1;
	}
	gnutls_pubkey_t pub;
	gnutls_datum_t x = { NULL, 0 }, y = { NULL, 0 };
	gnutls_ecc_curve_t curve = GNUTLS_ECC_CURVE_INVALID;
	int rc = gnutls_pubkey_init(&pub);
	if (rc == 0 && (rc = gnutls_pubkey_import(pub, spki, GNUTLS_X509_FMT_DER)) == 0)
		rc = gnutls_pubkey_export_ecc_raw(pub, &curve, &x, &y);
	gnutls_pubkey_deinit(pub);
	bool ok = rc == 0 && curve == GNUTLS_ECC_CURVE_ED25519 && x.size == SIGKEY_PUBLIC_LEN;
	if (ok)
		memcpy(t->peer_key, x.data, SIGKEY_PUBLIC_LEN);
	else if (rc < 0)
		seterr(t->err, sizeof(t->err), "TLS: the peer's key", rc);
	else
		snprintf(t->err, sizeof(t->err), "TLS: the peer's key is not Ed25519");
	gnutls_free(x.data);
	gnutls_free(y.data);
	return ok ? 0 : -1;
}

int tlslink_handshake(struct tlslink *t)
{
	if (t->done)
		return 1;
	int rc = gnutls_handshake(t->s);
	if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED)
		return 0;
	if (rc < 0) {
		seterr(t->err, sizeof(t->err), "TLS handshake", rc);
		t->failure = TLSLINK_FAIL_OTHER;
		/* the peer learns why (protocol_version, handshake_failure, ...) from tlslink_take */
		gnutls_alert_send_appropriate(t->s, rc);
		if (rc == GNUTLS_E_WARNING_ALERT_RECEIVED || rc == GNUTLS_E_FATAL_ALERT_RECEIVED) {
			snprintf(t->err, sizeof(t->err), "TLS handshake: the peer's alert: %s",
				 gnutls_alert_get_name(gnutls_alert_get(t->s)));
			t->failure = TLSLINK_FAIL_ALERT;
		} else if (t->first >= 0 && (t->first < 0x14 || t->first > 0x17)) {  /* no TLS record type */
			snprintf(t->err, sizeof(t->err), "TLS handshake: the peer does not speak TLS "
				 "(its first byte is 0x%02x)", t->first);
			t->failure = TLSLINK_FAIL_NOT_TLS;
		} else if (rc == GNUTLS_E_UNSUPPORTED_VERSION_PACKET) {
			t->failure = TLSLINK_FAIL_VERSION;
		} else if (rc == GNUTLS_E_NO_PRIORITIES_WERE_SET || rc == GNUTLS_E_INSUFFICIENT_SECURITY ||
			   rc == GNUTLS_E_NO_CIPHER_SUITES || rc == GNUTLS_E_UNKNOWN_CIPHER_SUITE) {
			t->failure = TLSLINK_FAIL_CIPHER;
		}
		return -1;
	}
	if (!t->cred->x509 && export_peer_key(t) < 0)
		return -1;
	t->done = true;
	return 1;
}

ssize_t tlslink_read(struct tlslink *t, uint8_t *buf, size_t len)
{
	ssize_t n = gnutls_record_recv(t->s, buf, len);
	if (n > 0)
		return n;
	if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
		return 0;
	if (n == 0)
		snprintf(t->err, sizeof(t->err), "TLS: closed by the peer");
	else
		seterr(t->err, sizeof(t->err), "TLS", (int)n);
	return -1;
}

int tlslink_write(struct tlslink *t, const uint8_t *data, size_t len)
{
	/* room for all the records at once, not grown record by record */
	if (!buf_room(&t->out, len + (len / RECORD_MAX + 1) * RECORD_OVERHEAD)) {
		snprintf(t->err, sizeof(t->err), "TLS: out of memory");
		return -1;
	}
	while (len > 0) {
		/* a record at most: the rest goes in the next */
		ssize_t n = gnutls_record_send(t->s, data, len);
		if (n <= 0) {
			seterr(t->err, sizeof(t->err), "TLS", n < 0 ? (int)n : GNUTLS_E_INTERNAL_ERROR);
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

uint8_t *tlslink_take(struct tlslink *t, size_t *len)
{
	if (t->out.len == 0)
		return NULL;
	uint8_t *p = t->out.p;
	if (t->out.off)
		memmove(p, p + t->out.off, t->out.len);
	*len = t->out.len;
	t->out = (struct buf){ 0 };
	return p;
}

const uint8_t *tlslink_peer_key(const struct tlslink *t)
{
	return t->done ? t->peer_key : NULL;
}

bool tlslink_resumed(const struct tlslink *t)
{
	return t->done && gnutls_session_is_resumed(t->s);
}

bool tlslink_alpn_is(const struct tlslink *t, const char *protocol)
{
	gnutls_datum_t p;
	if (!t->done || gnutls_alpn_get_selected_protocol(t->s, &p) < 0)
		return false;
	return p.size == strlen(protocol) && memcmp(p.data, protocol, p.size) == 0;
}

enum tlslink_failure tlslink_failure(const struct tlslink *t)
{
	return t->failure;
}

const char *tlslink_error(const struct tlslink *t)
{
	return t->err[0] ? t->err : "TLS: no error";
}

void tlslink_global_deinit(void)
{
	gnutls_global_deinit();
}
