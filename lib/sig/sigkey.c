/*
 * Ed25519 keys: see sigkey.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "sigkey.h"

#define SEED_LEN        32
#define SEED_TAG        "ed25519-seed "
#define PUBLIC_TAG      "ed25519-public "
#define KEYFILE_MAX     256

bool sigkey_init(void)
{
	return sodium_init() >= 0;
}

void sigkey_public_text(const uint8_t pk[SIGKEY_PUBLIC_LEN], char out[SIGKEY_TEXT_LEN + 1])
{
	sodium_bin2base64(out, SIGKEY_TEXT_LEN + 1, pk, SIGKEY_PUBLIC_LEN, sodium_base64_VARIANT_ORIGINAL);
}

/*
 * Exactly 44 characters of standard base64 for 32 bytes, in the one text
 * that encodes them: libsodium's decoder takes some bytes outside the
 * alphabet (0xAF as 'o'), and a key must have one spelling.
 */
static int b64_32(const char *text, size_t len, uint8_t out[32])
{
	char again[SIGKEY_TEXT_LEN + 1];
	size_t got;
	if (len != SIGKEY_TEXT_LEN)
		return -1;
	if (sodium_base642bin(out, 32, text, len, NULL, &got, NULL, sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    got != 32)
		return -1;
	sodium_bin2base64(again, sizeof(again), out, 32, sodium_base64_VARIANT_ORIGINAL);
	return memcmp(again, text, SIGKEY_TEXT_LEN) == 0 ? 0 : -1;
}

int sigkey_public_parse(const char *text, size_t len, uint8_t pk[SIGKEY_PUBLIC_LEN])
{
	return b64_32(text, len, pk);
}

void sigkey_wipe(struct sigkey *k)
{
	sodium_memzero(k, sizeof(*k));
}

void sigkey_sign(const struct sigkey *k, const uint8_t *msg, size_t len, uint8_t sig[SIGKEY_SIG_LEN])
{
	crypto_sign_detached(sig, NULL, msg, len, k->sk);
}

bool sigkey_verify(const uint8_t pk[SIGKEY_PUBLIC_LEN], const uint8_t *msg, size_t len,
		   const uint8_t sig[SIGKEY_SIG_LEN])
{
	return crypto_sign_verify_detached(sig, msg, len, pk) == 0;
}

static int fsync_dir_of(const char *path)
{
	char copy[4096];
	if (strlen(path) >= sizeof(copy))
		return -1;
	strcpy(copy, path);
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

int sigkey_generate(const char *path, struct sigkey *out, char *err, size_t errlen)
{
	uint8_t seed[SEED_LEN];
	char text[KEYFILE_MAX], s64[SIGKEY_TEXT_LEN + 1], p64[SIGKEY_TEXT_LEN + 1];

	randombytes_buf(seed, sizeof(seed));
	crypto_sign_seed_keypair(out->pk, out->sk, seed);
	sodium_bin2base64(s64, sizeof(s64), seed, sizeof(seed), sodium_base64_VARIANT_ORIGINAL);
	sigkey_public_text(out->pk, p64);
	int n = snprintf(text, sizeof(text), SEED_TAG "%s\n" PUBLIC_TAG "%s\n", s64, p64);
	sodium_memzero(seed, sizeof(seed));
	sodium_memzero(s64, sizeof(s64));

	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	/* the umask may only take bits away; never leave more than 0600 */
	if (fchmod(fd, 0600) != 0 || write(fd, text, (size_t)n) != n || fsync(fd) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
		goto fail;
	}
	close(fd);
	if (fsync_dir_of(path) != 0) {
		snprintf(err, errlen, "%s: syncing its directory: %s", path, strerror(errno));
		goto fail;
	}
	sodium_memzero(text, sizeof(text));
	return 0;
fail:
	sodium_memzero(text, sizeof(text));
	sigkey_wipe(out);
	return -1;
}

/* "TAG BASE64\n" at *p: the 32 bytes, *p moved past the line. */
static int keyline(const char **p, const char *end, const char *tag, uint8_t out[32])
{
	size_t tl = strlen(tag);
	if ((size_t)(end - *p) < tl + SIGKEY_TEXT_LEN + 1 || memcmp(*p, tag, tl) != 0 ||
	    (*p)[tl + SIGKEY_TEXT_LEN] != '\n')
		return -1;
	if (b64_32(*p + tl, SIGKEY_TEXT_LEN, out) != 0)
		return -1;
	*p += tl + SIGKEY_TEXT_LEN + 1;
	return 0;
}

int sigkey_load(const char *path, struct sigkey *out, char *err, size_t errlen)
{
	char text[KEYFILE_MAX];
	uint8_t seed[SEED_LEN], pk[SIGKEY_PUBLIC_LEN];
	struct stat st;
	int rc = -1;

	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto out;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "%s: mode %04o: a private key must not be accessible by group or others "
			 "(chmod 600 %s)", path, (unsigned)(st.st_mode & 07777), path);
		goto out;
	}
	ssize_t n = read(fd, text, sizeof(text));
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	const char *p = text, *end = text + n;
	if (keyline(&p, end, SEED_TAG, seed) != 0 || keyline(&p, end, PUBLIC_TAG, pk) != 0 || p != end) {
		snprintf(err, errlen, "%s: not a key file (two lines: \"" SEED_TAG "BASE64\", \"" PUBLIC_TAG "BASE64\")", path);
		goto out;
	}
	crypto_sign_seed_keypair(out->pk, out->sk, seed);
	if (sodium_memcmp(out->pk, pk, sizeof(pk)) != 0) {
		snprintf(err, errlen, "%s: the public key is not the seed's", path);
		sigkey_wipe(out);
		goto out;
	}
	rc = 0;
out:
	sodium_memzero(text, sizeof(text));
	sodium_memzero(seed, sizeof(seed));
	close(fd);
	return rc;
}
