/*
 * UPDATE packing, an object of the RDE's (one per struct rde): names whose
 * attributes look the same to the receiver share one Route, 1,024 names an
 * UPDATE.  Frames go to emit as they fill, and at packer_end.
 */
#ifndef NBRPD_PACKER_H
#define NBRPD_PACKER_H

#include <stdint.h>

struct packer;
struct rde;
struct rde_peer;
struct rib_attrs;
struct rib_entry;
struct wq_buf;

typedef void (*packer_emit_fn)(void *arg, struct wq_buf *frame, unsigned names, unsigned withdrawn);

struct packer *packer_new(struct rde *r);
void packer_free(struct packer *pk);
void packer_begin(struct packer *pk, packer_emit_fn emit, void *arg);
void packer_advertise(struct packer *pk, const struct rib_entry *e, const struct rib_attrs *a, uint32_t load);
void packer_withdraw(struct packer *pk, const struct rib_entry *e);
/* The origin withdrawals noted for e (origin_wd.h), after its Route or withdrawal; a signed peer only the signed ones. */
void packer_origin_withdrawals(struct packer *pk, const struct rib_entry *e);
/* After packer_begin: every Route carries its attestations for p (a peer with signatures on),
 * one name a Route; a name whose signature is not made yet is sent once it is (rdesig.c). */
void packer_sign_for(struct packer *pk, struct rde_peer *p);
/* Sends what is packed; returns the UPDATEs sent since packer_begin. */
unsigned packer_end(struct packer *pk);
/* An END-OF-RIB frame. */
struct wq_buf *packer_end_of_rib(void);

#endif
