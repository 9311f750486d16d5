/*
 * The CPU reference for scripts/bench inrp: a DNS "server" that only
 * turns each query around (sets QR, sends it back), with the same
 * recvmmsg/sendmmsg batches of 32 inrpd's workers use, read the same way
 * (a poll, then batches until the socket is empty, 8 at most).  Its CPU time per
 * query is what the kernel charges for receiving and sending one
 * datagram on this machine: no server can go below it.
 *
 * With TABLE_BYTES it also reads, for each query, the two 64-byte buckets
 * a two-choice hash table of that size holds the query's name in (the
 * second within 256 buckets of the first, as lib/fib places it), a
 * batch's fetched at once before they are read, as inrpd does: the floor
 * of any server that looks each name up in a table that large, which this
 * machine's memory and TLBs set.
 *
 *     udp_echo LISTEN_ADDR PORT [TABLE_BYTES]
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#define BATCH           32
#define OTHER_WINDOW    256
#define ROUND           8       /* batches a socket is read for, at most, between polls */

struct bucket {
	uint64_t w[8];
};

static struct bucket *table;
static uint64_t nbuckets;
static volatile uint64_t sink;

/* The query name's bytes hashed (the header's 12 bytes skipped; no parsing: any bytes do). */
static uint64_t name_hash(const unsigned char *msg, unsigned len)
{
	uint64_t h = 0x9E3779B97F4A7C15ull;
	for (unsigned i = 12; i < len && msg[i] != 0; i++)
		h = (h ^ msg[i]) * 0x100000001B3ull;
	return h ^ h >> 29;
}

static const struct bucket *first(uint64_t h)
{
	return &table[(uint64_t)(((__uint128_t)h * nbuckets) >> 64)];
}

static const struct bucket *second(uint64_t h)
{
	uint64_t b = (uint64_t)(first(h) - table) + 1 + (h & (OTHER_WINDOW - 1));
	return &table[b < nbuckets ? b : b - nbuckets];
}

static int table_open(const char *bytes)
{
	nbuckets = strtoull(bytes, NULL, 10) / sizeof(struct bucket);
	if (nbuckets == 0)
		return -1;
	size_t size = nbuckets * sizeof(struct bucket);
	table = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (table == MAP_FAILED)
		return -1;
	madvise(table, size, MADV_HUGEPAGE);
	for (uint64_t i = 0; i < nbuckets; i++)
		table[i].w[0] = i;
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in me = { .sin_family = AF_INET };
	if ((argc != 3 && argc != 4) || inet_pton(AF_INET, argv[1], &me.sin_addr) != 1) {
		fprintf(stderr, "usage: udp_echo LISTEN_ADDR PORT [TABLE_BYTES]\n");
		return 2;
	}
	if (argc == 4 && table_open(argv[3]) < 0) {
		perror("udp_echo: table");
		return 1;
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
	uint64_t hash[BATCH];
	const struct bucket *where[2 * BATCH];
	for (unsigned round = 0;; round++) {
		/* as inrpd's workers: poll, then read until the socket is empty (8 batches at most) */
		if (round % ROUND == 0) {
			struct pollfd p = { .fd = s, .events = POLLIN };
			if (poll(&p, 1, -1) < 0)
				continue;
		}
		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ .iov_base = buf[i], .iov_len = sizeof(buf[i]) };
			msg[i].msg_hdr = (struct msghdr){ .msg_name = &peer[i], .msg_namelen = sizeof(peer[i]),
							  .msg_iov = &iov[i], .msg_iovlen = 1 };
		}
		int n = recvmmsg(s, msg, BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0) {
			round = ROUND - 1;
			continue;
		}
		for (int i = 0; table && i < n; i++) {
			hash[i] = name_hash(buf[i], msg[i].msg_len);
			where[2 * i] = first(hash[i]);
			where[2 * i + 1] = second(hash[i]);
		}
		for (int i = 0; table && i < 2 * n; i++)
			__builtin_prefetch(where[i]);
		for (int i = 0; i < n; i++) {
			if (table)
				sink += where[2 * i]->w[0] ^ where[2 * i + 1]->w[0];
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
