/*
 * inrpd's configuration through its own keyword tables (inrpd/config.c):
 * the input is the file.  It loads, or fails with a file:line message;
 * a configuration that loads holds its limits and becomes a runtime (the
 * FIB built, then freed) without leaks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <urcu-qsbr.h>

#include "config.h"
#include "log.h"
#include "conffile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool registered;
	if (!registered) {
		/* as inrpd's main thread: registered, offline outside the FIB's writes */
		rcu_register_thread();
		rcu_thread_offline();
		log_set_level(LOG_LVL_ERR);
		registered = true;
	}
	char err[1024] = "";
	struct inrpd_config *cfg = inrpd_config_load(conffile_write("inrpd.conf", data, size), err, sizeof(err));
	if (!cfg) {
		conffile_check_error(err);
		return 0;
	}
	if (cfg->nlisten == 0 || cfg->nlisten > INRPD_MAX_LISTEN || cfg->nacl > INRPD_MAX_ACL ||
	    cfg->nupstreams > INRPD_MAX_UPSTREAMS || cfg->nrrl_exempt > INRPD_MAX_ACL || !cfg->fib || !cfg->records)
		abort();
	struct inrpd_runtime *rt = inrpd_runtime_from_config(cfg);
	if (!rt)
		abort();
	inrpd_config_free(cfg);
	inrpd_runtime_free(rt);
	return 0;
}
