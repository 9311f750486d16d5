/*
 * inrpc: asks a running inrpd over its control socket, as birdc asks BIRD.
 *
 *     inrpc [-s SOCKET] [--json] show counters
 *
 * Data lines go to stdout without their codes; an error reply goes to
 * stderr and the exit status is 1; a socket that does not answer, 2.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define DEFAULT_SOCKET "/run/inrpd.ctl"

static void usage(FILE *f)
{
	fprintf(f, "usage: inrpc [-s SOCKET] [--json] COMMAND...\n"
		   "  -s, --socket SOCKET  inrpd's control socket (default " DEFAULT_SOCKET ")\n"
		   "  -j, --json           JSON instead of text, for 'show' commands\n"
		   "commands: show status, show counters, reload, help\n");
}

static void print_line(void *arg, int code, const char *text)
{
	(void)arg;
	if (code >= 8000)
		fprintf(stderr, "inrpc: %s\n", text);
	else if (code >= CTL_DATA || strcmp(text, "OK") != 0)
		printf("%s\n", text);   /* data, or a final line that says more than OK */
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DEFAULT_SOCKET;
	bool json = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "+s:jh", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': path = optarg; break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return 2;
	}
	char command[CTL_MAX_LINE];
	size_t len = 0;
	for (int i = optind; i < argc; i++) {
		int n = snprintf(command + len, sizeof(command) - len, "%s%s", i > optind ? " " : "", argv[i]);
		if (n < 0 || (size_t)n >= sizeof(command) - len) {
			fprintf(stderr, "inrpc: command too long\n");
			return 2;
		}
		len += (size_t)n;
	}
	if (json && snprintf(command + len, sizeof(command) - len, " json") >= (int)(sizeof(command) - len)) {
		fprintf(stderr, "inrpc: command too long\n");
		return 2;
	}
	char err[256];
	fflush(stdout);
	int code = ctl_command(path, command, print_line, NULL, err, sizeof(err));
	fflush(stdout);
	if (code < 0) {
		fprintf(stderr, "inrpc: %s\n", err);
		return 2;
	}
	return code >= 8000 ? 1 : 0;
}
