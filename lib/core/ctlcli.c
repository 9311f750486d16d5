/*
 * The CLI of a daemon's control socket (ctlcli.h).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctlcli.h"

static void usage(const struct ctl_cli *cli, FILE *f)
{
	fprintf(f, "usage: %s [-s SOCKET] [--json] COMMAND...\n"
		   "  -s, --socket SOCKET  %s's control socket (default %s)\n"
		   "  -j, --json           JSON instead of text, for 'show' commands\n"
		   "commands: %s\n", cli->prog, cli->daemon, cli->default_socket, cli->commands);
}

static void print_line(void *arg, int code, const char *text)
{
	const struct ctl_cli *cli = arg;
	if (code >= 8000)
		fprintf(stderr, "%s: %s\n", cli->prog, text);
	else if (code >= CTL_DATA || strcmp(text, "OK") != 0)
		printf("%s\n", text);   /* data, or a final line that says more than OK */
}

int ctl_cli_main(const struct ctl_cli *cli, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = cli->default_socket;
	bool json = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "+s:jh", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': path = optarg; break;
		case 'j': json = true; break;
		case 'h': usage(cli, stdout); return 0;
		default: usage(cli, stderr); return 2;
		}
	}
	if (optind == argc) {
		usage(cli, stderr);
		return 2;
	}
	char command[CTL_MAX_LINE];
	size_t len = 0;
	for (int i = optind; i < argc; i++) {
		int n = snprintf(command + len, sizeof(command) - len, "%s%s", i > optind ? " " : "", argv[i]);
		if (n < 0 || (size_t)n >= sizeof(command) - len) {
			fprintf(stderr, "%s: command too long\n", cli->prog);
			return 2;
		}
		len += (size_t)n;
	}
	if (json && snprintf(command + len, sizeof(command) - len, " json") >= (int)(sizeof(command) - len)) {
		fprintf(stderr, "%s: command too long\n", cli->prog);
		return 2;
	}
	char err[256];
	fflush(stdout);
	bool connected = false;
	int code = ctl_command(path, command, print_line, (void *)cli, &connected, err, sizeof(err));
	fflush(stdout);
	if (code < 0) {
		fprintf(stderr, "%s: %s\n", cli->prog, err);
		if (!connected)
			fprintf(stderr, "%s: is %s running with 'control \"%s\";' in its config? "
				"Another socket: %s -s PATH\n", cli->prog, cli->daemon, path, cli->prog);
		return 2;
	}
	return code >= 8000 ? 1 : 0;
}
