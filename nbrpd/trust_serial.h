/*
 * The highest trust-file serial installed, kept in the state-dir so that a
 * restarted nbrpd does not take back an older file (docs/SIGNATURES.md, In
 * nbrpd: Trust file).
 */
#ifndef NBRPD_TRUST_SERIAL_H
#define NBRPD_TRUST_SERIAL_H

#include <stddef.h>
#include <stdint.h>

#define TRUST_SERIAL_FILE       "trust-serial"

/* The serial kept in state_dir: 0 and *serial set (0 when there is none), or -1 with err. */
int trust_serial_load(const char *state_dir, uint64_t *serial, char *err, size_t err_len);
/* serial written there (atomicfile_replace): 0, or -1 with err. */
int trust_serial_save(const char *state_dir, uint64_t serial, char *err, size_t err_len);

#endif
