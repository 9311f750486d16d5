/*
 * Trust-anchor files: any input parses or gives one "file:line: reason";
 * what parses answers its own lookups (each router's key, each origin
 * authorised for its suffix); a file that verifies under the anchor also
 * parses without it; signing what parses gives a file that verifies.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sigfix.h"
#include "trust.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(const char *err)
{
	/* "f:LINE: reason" or "f: reason" */
	if (strncmp(err, "f:", 2) != 0 || !strchr(err + 2, ' '))
		abort();
}

static void lookups(const struct trust *t)
{
	for (size_t i = 0; i < t->n_routers; i++) {
		const uint8_t *k = trust_router_key(t, t->routers[i].name, strlen(t->routers[i].name));
		if (!k || memcmp(k, t->routers[i].pk, SIGKEY_PUBLIC_LEN) != 0)
			abort();
	}
	for (size_t i = 0; i < t->n_origins; i++) {
		const struct trust_origin *o = &t->origins[i];
		const uint8_t *keys[1];
		if (trust_origin_check(t, o->wire, o->len, o->pk) != TRUST_AUTHORISED ||
		    trust_origin_keys(t, o->wire, o->len, keys, 1) == 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		fix_init();
		ready = true;
	}
	const char *buf = (const char *)data;
	char err[512];
	struct trust t;
	int plain = trust_parse(buf, size, "f", NULL, &t, err, sizeof(err));
	if (plain == 0) {
		lookups(&t);
		trust_free(&t);
	} else {
		check_err(err);
	}
	if (trust_parse(buf, size, "f", fix_keys[F_ANCHOR].pk, &t, err, sizeof(err)) == 0) {
		if (plain != 0)
			abort();
		trust_free(&t);
	} else {
		check_err(err);
	}
	size_t len;
	char *s = trust_sign(buf, size, "f", &fix_keys[F_ANCHOR], &len, err, sizeof(err));
	if (s) {
		if (trust_parse(s, len, "f", fix_keys[F_ANCHOR].pk, &t, err, sizeof(err)) != 0)
			abort();
		trust_free(&t);
		free(s);
	} else {
		check_err(err);
	}
	return 0;
}
