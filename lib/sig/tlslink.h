/*
 * One end of a TLS 1.3 connection (GnuTLS) authenticated by Ed25519 raw
 * public keys (RFC 7250): no certificates, no CA.  Each side presents the
 * router key it signs with (sigkey.h); who the peer is, the owner decides
 * by comparing tlslink_peer_key with the key it expects (the trust file's).
 *
 * Or, with credentials from tlslink_cred_x509, the server of DNS over TLS
 * and HTTPS: an X.509 certificate chain for clients that are not routers
 * (TLS 1.3 and 1.2, no client certificate), sessions resumed by tickets.
 *
 * It does no I/O: the owner feeds the ciphertext it reads (tlslink_space,
 * tlslink_commit) and takes the ciphertext to write (tlslink_take), so it
 * runs under libuv (nbrp_session.c) as well as under any other loop.
 *
 *     owner reads  -> tlslink_space/commit -> tlslink_handshake / tlslink_read -> plaintext
 *     plaintext    -> tlslink_write -> tlslink_take -> owner writes
 */
#ifndef CR_TLSLINK_H
#define CR_TLSLINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sigkey.h"

struct tlslink_cred;
struct tlslink;

/* Our key, shared by every link (copied).  NULL with err set.  The owner's
 * reference is dropped by tlslink_cred_free; links hold their own. */
struct tlslink_cred *tlslink_cred_new(const struct sigkey *k, char *err, size_t errlen);
void tlslink_cred_free(struct tlslink_cred *c);

/* A server's certificate chain and key (PEM files), tickets sealed under a new
 * random key.  NULL with err set. */
struct tlslink_cred *tlslink_cred_x509(const char *cert_file, const char *key_file, char *err, size_t errlen);
/* c seals tickets with from's key (a reload: tickets given out stay good); before
 * any link uses c. */
void tlslink_cred_share_tickets(struct tlslink_cred *c, const struct tlslink_cred *from);
/* Another reference, dropped by tlslink_cred_free. */
struct tlslink_cred *tlslink_cred_ref(struct tlslink_cred *c);
/* The certificate's notAfter (unix seconds); 0 for raw keys. */
int64_t tlslink_cred_not_after(const struct tlslink_cred *c);

/* A link that presents c's key or certificate (a reference: c may be freed
 * before it); server: the side that accepted.  NULL with err set. */
struct tlslink *tlslink_new(struct tlslink_cred *c, bool server, char *err, size_t errlen);
/* The one application protocol (ALPN) a server offers; a client that offers
 * none still connects. */
int tlslink_set_alpn(struct tlslink *t, const char *protocol);
void tlslink_free(struct tlslink *t);

/* Room for len bytes of ciphertext read (NULL: out of memory), then how many were. */
uint8_t *tlslink_space(struct tlslink *t, size_t len);
void tlslink_commit(struct tlslink *t, size_t len);

/* 1: done (the peer's key is known), 0: waiting for the peer, -1: failed (tlslink_error). */
int tlslink_handshake(struct tlslink *t);
/* Plaintext received, up to len: bytes, 0 when nothing more is in, -1 on error or the
 * peer's close (tlslink_error says which). */
ssize_t tlslink_read(struct tlslink *t, uint8_t *buf, size_t len);
/* Encrypts len bytes of plaintext into the output: 0 or -1. */
int tlslink_write(struct tlslink *t, const uint8_t *data, size_t len);
/* The ciphertext to send (malloc'd, the caller's), or NULL when there is none. */
uint8_t *tlslink_take(struct tlslink *t, size_t *len);

/* The peer's Ed25519 key, once the handshake is done. */
const uint8_t *tlslink_peer_key(const struct tlslink *t);
/* After the handshake: whether it resumed a session, and the protocol agreed. */
bool tlslink_resumed(const struct tlslink *t);
bool tlslink_alpn_is(const struct tlslink *t, const char *protocol);
/* Why the handshake failed. */
enum tlslink_failure {
	TLSLINK_FAIL_OTHER,
	TLSLINK_FAIL_NOT_TLS,           /* the first byte is no TLS record */
	TLSLINK_FAIL_VERSION,           /* no version we speak (TLS 1.1 and older) */
	TLSLINK_FAIL_CIPHER,            /* no cipher suite, group or signature in common */
	TLSLINK_FAIL_ALERT,             /* the peer sent an alert */
};
enum tlslink_failure tlslink_failure(const struct tlslink *t);
const char *tlslink_error(const struct tlslink *t);

/* GnuTLS's one-time state, freed at exit (so leak checkers see none). */
void tlslink_global_deinit(void);

#endif
