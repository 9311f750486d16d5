/*
 * nbrp-key: Ed25519 key files and the signed trust-anchor file for NBRP
 * signatures (docs/SIGNATURES.md, nbrp-key(1)).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomicfile.h"
#include "readfile.h"
#include "sigkey.h"
#include "trust.h"

static int usage(FILE *f)
{
	fputs("usage: nbrp-key generate FILE\n"
	      "       nbrp-key public FILE\n"
	      "       nbrp-key sign-trust ANCHORKEYFILE TRUSTFILE\n"
	      "       nbrp-key check-trust ANCHORPUBLICKEY TRUSTFILE\n", f);
	return f == stdout ? 0 : 2;
}

static char *slurp(const char *path, size_t *len)
{
	char why[128];
	char *buf = readfile(path, 0, false, len, why, sizeof(why));
	if (!buf)
		fprintf(stderr, "nbrp-key: %s: %s\n", path, why);
	return buf;
}

/* path replaced by buf: a temporary file beside it, fsync, rename, fsync the directory. */
static int replace_file(const char *path, const char *buf, size_t len)
{
	char err[512];
	if (atomicfile_replace(path, buf, len, 0644, err, sizeof(err)) < 0) {
		fprintf(stderr, "nbrp-key: %s\n", err);
		return -1;
	}
	return 0;
}

static void print_summary(const char *path, const struct trust *t)
{
	char from[32], until[32];
	time_t a = (time_t)t->valid_from, b = (time_t)t->valid_until;
	struct tm tm;
	strftime(from, sizeof(from), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&a, &tm));
	strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&b, &tm));
	printf("%s: %zu routers, %zu origins, valid from %s until %s%s\n", path, t->n_routers, t->n_origins,
	       from, until, trust_current(t, (uint64_t)time(NULL)) ? "" : " (not valid now)");
}

int main(int argc, char **argv)
{
	char err[1024], text[SIGKEY_TEXT_LEN + 1];
	struct sigkey k;

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return usage(stdout);
	if (argc < 3)
		return usage(stderr);
	if (!sigkey_init()) {
		fputs("nbrp-key: libsodium cannot start\n", stderr);
		return 1;
	}
	const char *cmd = argv[1];
	bool generate = !strcmp(cmd, "generate");
	if ((generate || !strcmp(cmd, "public")) && argc == 3) {
		/* both print the public key: of the new key file, or of the one there */
		int rc = generate ? sigkey_generate(argv[2], &k, err, sizeof(err))
				  : sigkey_load(argv[2], &k, err, sizeof(err));
		if (rc != 0) {
			fprintf(stderr, "nbrp-key: %s\n", err);
			return 1;
		}
		sigkey_public_text(k.pk, text);
		sigkey_wipe(&k);
		printf("%s\n", text);
		return 0;
	}
	if (!strcmp(cmd, "sign-trust") && argc == 4) {
		size_t len, outlen;
		if (sigkey_load(argv[2], &k, err, sizeof(err)) != 0) {
			fprintf(stderr, "nbrp-key: %s\n", err);
			return 1;
		}
		char *buf = slurp(argv[3], &len);
		if (!buf) {
			sigkey_wipe(&k);
			return 1;
		}
		char *out = trust_sign(buf, len, argv[3], &k, &outlen, err, sizeof(err));
		free(buf);
		if (!out) {
			sigkey_wipe(&k);
			fprintf(stderr, "nbrp-key: %s\n", err);
			return 1;
		}
		struct trust t;
		int rc = trust_parse(out, outlen, argv[3], k.pk, &t, err, sizeof(err));
		sigkey_wipe(&k);
		if (rc == 0)
			rc = replace_file(argv[3], out, outlen);
		else
			fprintf(stderr, "nbrp-key: %s\n", err);
		free(out);
		if (rc != 0)
			return 1;
		print_summary(argv[3], &t);
		trust_free(&t);
		return 0;
	}
	if (!strcmp(cmd, "check-trust") && argc == 4) {
		uint8_t anchor[SIGKEY_PUBLIC_LEN];
		struct trust t;
		if (sigkey_public_parse(argv[2], strlen(argv[2]), anchor) != 0) {
			fprintf(stderr, "nbrp-key: %s: not a public key (44 characters of base64)\n", argv[2]);
			return 2;
		}
		if (trust_read(argv[3], anchor, &t, err, sizeof(err)) != 0) {
			fprintf(stderr, "nbrp-key: %s\n", err);
			return 1;
		}
		print_summary(argv[3], &t);
		trust_free(&t);
		return 0;
	}
	return usage(stderr);
}
