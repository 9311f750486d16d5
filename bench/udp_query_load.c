/*
 * The client scripts/bench inrp measures a server's capacity with: a
 * closed-loop DNS-over-UDP load generator that keeps WINDOW queries in
 * flight and sends and reads them in batches (sendmmsg, recvmmsg), so that
 * on this 2-CPU machine it spends less CPU a query than the servers it
 * drives and the server, not the client, sets the rate.  dnsperf sends and
 * reads one datagram a syscall and is the slower side of every server
 * here, which makes its qps the client's, not the server's.
 *
 *     udp_query_load ADDR PORT QUERY_FILE SECONDS [WINDOW]
 *
 * QUERY_FILE holds "NAME TYPE" lines (dnsperf's format),
 * sent in order, round and round.  A query unanswered after a second is
 * counted lost and its slot reused.  The last line printed:
 *
 *     sent N answered N lost N qps X cpu_s Y
 *
 * where qps is answers a second and cpu_s this process's CPU time.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "dns.h"
#include "name.h"
#include "vec.h"

#define BATCH           64
#define IDS             65536
#define LOST_NS         1000000000ull
#define QUERY_MAX       300

struct query {
	uint16_t len;
	uint8_t wire[QUERY_MAX];
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One query in wire format (id 0, RD clear), or -1 if the line is not one. */
static int encode(const char *line, struct query *q)
{
	char text[NAME_MAX_TEXT], type[16];
	struct name name;
	struct dns_query_spec spec = { .qclass = DNS_CLASS_IN };
	if (sscanf(line, "%1023s %15s", text, type) != 2 || name_from_text(&name, text, strlen(text)) < 0 ||
	    !dns_type_from_text(type, &spec.qtype))
		return -1;
	spec.qname = name.wire;
	spec.qname_len = name.len;
	size_t len = dns_query_write(&spec, q->wire, sizeof(q->wire));
	q->len = (uint16_t)len;
	return len ? 0 : -1;
}

static struct query *load(const char *path, size_t *count)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	struct query *qs = NULL;
	size_t cap = 0, n = 0;
	char line[1100];
	while (fgets(line, sizeof(line), f)) {
		if (VEC_RESERVE(qs, cap, n + 1) < 0) {
			free(qs);
			qs = NULL;
			break;
		}
		if (encode(line, &qs[n]) == 0)
			n++;
	}
	fclose(f);
	*count = n;
	return qs;
}

int main(int argc, char **argv)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	if ((argc != 5 && argc != 6) || inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) {
		fprintf(stderr, "usage: udp_query_load ADDR PORT QUERY_FILE SECONDS [WINDOW]\n");
		return 2;
	}
	to.sin_port = htons((uint16_t)atoi(argv[2]));
	double seconds = atof(argv[4]);
	unsigned window = argc == 6 ? (unsigned)atoi(argv[5]) : 500;
	if (window == 0 || window > IDS / 2)
		window = 500;
	size_t nq;
	struct query *qs = load(argv[3], &nq);
	if (!qs || nq == 0) {
		fprintf(stderr, "udp_query_load: no queries in %s\n", argv[3]);
		return 1;
	}
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	int buf = 4 << 20;
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	if (s < 0 || connect(s, (struct sockaddr *)&to, sizeof(to)) < 0) {
		perror("udp_query_load");
		return 1;
	}

	/* in flight: the time each id was sent, 0 when free */
	static uint64_t sent_at[IDS];
	unsigned inflight = 0;
	uint16_t next_id = 0;
	size_t next_q = 0;
	uint64_t sent = 0, answered = 0, lost = 0;

	static uint8_t out[BATCH][QUERY_MAX], in[BATCH][512];
	static struct iovec oiov[BATCH], iiov[BATCH];
	static struct mmsghdr omsg[BATCH], imsg[BATCH];
	for (int i = 0; i < BATCH; i++) {
		oiov[i].iov_base = out[i];
		omsg[i].msg_hdr = (struct msghdr){ .msg_iov = &oiov[i], .msg_iovlen = 1 };
		iiov[i] = (struct iovec){ .iov_base = in[i], .iov_len = sizeof(in[i]) };
		imsg[i].msg_hdr = (struct msghdr){ .msg_iov = &iiov[i], .msg_iovlen = 1 };
	}

	uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9), now = start, last_scan = start;
	while (now < end) {
		/* top the window up */
		unsigned n = 0;
		while (inflight + n < window && n < BATCH) {
			while (sent_at[next_id])
				next_id++;
			const struct query *q = &qs[next_q];
			next_q = next_q + 1 == nq ? 0 : next_q + 1;
			memcpy(out[n], q->wire, q->len);
			out[n][0] = (uint8_t)(next_id >> 8);
			out[n][1] = (uint8_t)next_id;
			oiov[n].iov_len = q->len;
			sent_at[next_id++] = now;
			n++;
		}
		for (unsigned done = 0; done < n;) {
			int r = sendmmsg(s, omsg + done, n - done, 0);
			if (r < 0 && errno != EINTR && errno != EAGAIN) {
				perror("udp_query_load: sendmmsg");
				return 1;
			}
			done += r > 0 ? (unsigned)r : 0;
			if (r < 0 && errno == EAGAIN) {
				struct pollfd p = { .fd = s, .events = POLLOUT };
				poll(&p, 1, 1);
			}
		}
		inflight += n;
		sent += n;

		int r = recvmmsg(s, imsg, BATCH, 0, NULL);
		if (r > 0) {
			for (int i = 0; i < r; i++) {
				if (imsg[i].msg_len < 12 || !(in[i][2] & 0x80))
					continue;
				uint16_t id = (uint16_t)(in[i][0] << 8 | in[i][1]);
				if (!sent_at[id])
					continue;               /* late, already counted lost */
				sent_at[id] = 0;
				inflight--;
				answered++;
			}
		} else if (inflight >= window) {
			struct pollfd p = { .fd = s, .events = POLLIN };
			poll(&p, 1, 1);
		}
		now = now_ns();
		if (now - last_scan >= LOST_NS / 10) {      /* what waited a second is lost */
			for (unsigned id = 0; id < IDS; id++)
				if (sent_at[id] && now - sent_at[id] >= LOST_NS) {
					sent_at[id] = 0;
					inflight--;
					lost++;
				}
			last_scan = now;
		}
	}
	double wall = (double)(now - start) / 1e9;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	printf("sent %llu answered %llu lost %llu qps %.0f cpu_s %.3f\n", (unsigned long long)sent,
	       (unsigned long long)answered, (unsigned long long)lost, (double)answered / wall, cpu);
	free(qs);
	return 0;
}
