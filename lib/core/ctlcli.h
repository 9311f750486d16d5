/*
 * The command-line client both daemons' CLIs are (inrpc, nbrc), in the
 * spirit of birdc:
 *
 *     PROG [-s SOCKET] [--json] COMMAND...
 *
 * Data lines go to stdout without their codes; an error reply goes to
 * stderr and the exit status is 1; a socket that does not answer, 2.
 */
#ifndef CR_CTLCLI_H
#define CR_CTLCLI_H

struct ctl_cli {
	const char *prog;               /* "inrpc" */
	const char *daemon;             /* "inrpd" */
	const char *default_socket;     /* "/run/inrpd.ctl" */
	const char *commands;           /* one line listing the commands, for --help */
};

int ctl_cli_main(const struct ctl_cli *cli, int argc, char **argv);

#endif
