/*
 * nbrpd's configuration through its own keyword tables (nbrpd/config.c):
 * the input is the file.  It loads, or fails with a file:line message,
 * and what loads is freed without leaks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "conffile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	log_set_level(LOG_LVL_ERR);
	char err[1024] = "";
	struct nbrpd_config *cfg = nbrpd_config_load(conffile_write("nbrpd.conf", data, size), err, sizeof(err));
	if (!cfg) {
		conffile_check_error(err);
		return 0;
	}
	if (cfg->npeers > cfg->peers_cap || (cfg->npeers && !cfg->peers) || (cfg->ncontent && !cfg->content) ||
	    (cfg->nallow_transfer && !cfg->allow_transfer))
		abort();
	for (unsigned i = 0; i < cfg->npeers; i++)
		if (strnlen(cfg->peers[i].name, sizeof(cfg->peers[i].name)) == sizeof(cfg->peers[i].name))
			abort();
	nbrpd_config_free(cfg);
	return 0;
}
