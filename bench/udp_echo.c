/*
 * The CPU reference for scripts/bench inrp: a DNS "server" that only
 * turns each query around (sets QR, sends it back), with the same
 * recvmmsg/sendmmsg batches of 32 inrpd's workers use.  Its CPU time per
 * query is what the kernel charges for receiving and sending one
 * datagram on this machine: no server can go below it.
 *
 *     udp_echo LISTEN_ADDR PORT
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define BATCH 32

int main(int argc, char **argv)
{
	struct sockaddr_in me = { .sin_family = AF_INET };
	if (argc != 3 || inet_pton(AF_INET, argv[1], &me.sin_addr) != 1) {
		fprintf(stderr, "usage: udp_echo LISTEN_ADDR PORT\n");
		return 2;
	}
	me.sin_port = htons((unsigned short)atoi(argv[2]));
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	int rcvbuf = 4 << 20;
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (s < 0 || bind(s, (struct sockaddr *)&me, sizeof(me)) < 0) {
		perror("udp_echo");
		return 1;
	}
	static unsigned char buf[BATCH][4096];
	static struct sockaddr_in peer[BATCH];
	static struct iovec iov[BATCH];
	static struct mmsghdr msg[BATCH];
	for (;;) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		if (poll(&p, 1, -1) < 0)
			continue;
		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ .iov_base = buf[i], .iov_len = sizeof(buf[i]) };
			msg[i].msg_hdr = (struct msghdr){ .msg_name = &peer[i], .msg_namelen = sizeof(peer[i]),
							  .msg_iov = &iov[i], .msg_iovlen = 1 };
		}
		int n = recvmmsg(s, msg, BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (msg[i].msg_len >= 3)
				buf[i][2] |= 0x80;
			iov[i].iov_len = msg[i].msg_len;
		}
		int sent = 0;
		while (sent < n) {
			int r = sendmmsg(s, msg + sent, (unsigned)(n - sent), 0);
			sent += r > 0 ? r : 1;
		}
	}
}
