/*
 * Key files (sigkey_load), as nbrpd and nbrp-key read them: the input is
 * written to a private file and loaded.  A key that loads is exactly the
 * two lines with the seed's own public key, in the canonical text, and
 * signs what it verifies; anything else is refused with the path in the
 * message.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sigkey.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PUBLIC_TAG "ed25519-public "

static char path[64];

static void cleanup(void)
{
	unlink(path);
	*strrchr(path, '/') = 0;
	rmdir(path);
}

static void setup(void)
{
	char dir[] = "/tmp/fuzz_key.XXXXXX";
	if (!sigkey_init() || !mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/key", dir);
	atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!path[0])
		setup();
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size || close(fd) != 0)
		abort();

	struct sigkey k;
	char err[512] = "";
	if (sigkey_load(path, &k, err, sizeof(err)) != 0) {
		if (strncmp(err, path, strlen(path)) != 0)
			abort();
		return 0;
	}
	char pub[SIGKEY_TEXT_LEN + 1];
	sigkey_public_text(k.pk, pub);
	const char *nl = memchr(data, '\n', size);
	size_t rest = nl ? size - (size_t)(nl + 1 - (const char *)data) : 0;
	if (!nl || rest != strlen(PUBLIC_TAG) + SIGKEY_TEXT_LEN + 1 ||
	    memcmp(nl + 1 + strlen(PUBLIC_TAG), pub, SIGKEY_TEXT_LEN) != 0)
		abort();
	uint8_t sig[SIGKEY_SIG_LEN];
	sigkey_sign(&k, data, size, sig);
	if (!sigkey_verify(k.pk, data, size, sig))
		abort();
	sigkey_wipe(&k);
	return 0;
}
