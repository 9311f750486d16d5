/*
 * inrpc: asks a running inrpd over its control socket, as birdc asks BIRD.
 *
 *     inrpc [-s SOCKET] [--json] show counters
 */
#include "ctlcli.h"

int main(int argc, char **argv)
{
	static const struct ctl_cli cli = {
		.prog = "inrpc",
		.daemon = "inrpd",
		.default_socket = "/run/inrpd/inrpd.ctl",
		.commands = "show status, show counters, show hops, show cache, show route NAME [TYPE], flush cache [NAME], reload, help",
	};
	return ctl_cli_main(&cli, argc, argv);
}
