/*
 * nbrc: asks a running nbrpd over its control socket, as birdc asks BIRD.
 *
 *     nbrc [-s SOCKET] [--json] show route www.example
 */
#include "ctlcli.h"

int main(int argc, char **argv)
{
	static const struct ctl_cli cli = {
		.prog = "nbrc",
		.daemon = "nbrpd",
		.default_socket = "/run/nbrpd/nbrpd.ctl",
		.commands = "show status, show peers, show route [NAME], show route count, "
			    "enable PEER, disable PEER, help",
	};
	return ctl_cli_main(&cli, argc, argv);
}
