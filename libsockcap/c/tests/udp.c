/* udp: datagrams with checksums and addresses, sendto/recvfrom, recv on an
 * unconnected socket (sender learned anyway), connected UDP, sendmmsg/recvmmsg,
 * recv on a connected receiver (sender = its peer), and after connect(AF_UNSPEC)
 * dissolved the association (sender learned again). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "udp: %s failed: %s\n", #x, strerror(errno)); exit(1); } } while (0)

int main(void)
{
	int srv = socket(AF_INET, SOCK_DGRAM, 0), cli = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(bind(srv, (struct sockaddr *)&a, sizeof a) == 0);
	socklen_t al = sizeof a;
	getsockname(srv, (struct sockaddr *)&a, &al);
	char msg[200];
	for (int i = 0; i < 200; i++)
		msg[i] = (char)i;
	CHECK(sendto(cli, msg, 100, 0, (struct sockaddr *)&a, sizeof a) == 100);
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	char buf[300];
	CHECK(recvfrom(srv, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl) == 100);
	printf("server_port %d\nclient_port %d\n", ntohs(a.sin_port), ntohs(from.sin_port));
	CHECK(sendto(srv, msg, 5, 0, (struct sockaddr *)&from, fl) == 5);
	CHECK(recv(cli, buf, sizeof buf, 0) == 5); /* sender learned by the library */
	/* connected UDP */
	CHECK(connect(cli, (struct sockaddr *)&a, sizeof a) == 0);
	CHECK(send(cli, msg, 150, 0) == 150);
	CHECK(recv(srv, buf, 10, MSG_TRUNC) == 150); /* truncated: sum over what fits? no: over 10 stored bytes */
	/* mmsg */
	struct iovec iov[3] = {{msg, 11}, {msg, 12}, {msg, 13}};
	struct mmsghdr mv[3];
	memset(mv, 0, sizeof mv);
	for (int i = 0; i < 3; i++) {
		mv[i].msg_hdr.msg_iov = &iov[i];
		mv[i].msg_hdr.msg_iovlen = 1;
	}
	CHECK(sendmmsg(cli, mv, 3, 0) == 3);
	char rb[3][64];
	struct iovec riov[3] = {{rb[0], 64}, {rb[1], 64}, {rb[2], 64}};
	struct sockaddr_in names[3];
	struct mmsghdr rv[3];
	memset(rv, 0, sizeof rv);
	for (int i = 0; i < 3; i++) {
		rv[i].msg_hdr.msg_iov = &riov[i];
		rv[i].msg_hdr.msg_iovlen = 1;
		rv[i].msg_hdr.msg_name = &names[i];
		rv[i].msg_hdr.msg_namelen = sizeof names[i];
	}
	int got = 0;
	while (got < 3) {
		int r = recvmmsg(srv, rv + got, 3 - got, 0, NULL);
		CHECK(r > 0);
		got += r;
	}
	/* a receiver connected to cli: the library does not ask for the sender. Its
	 * port is bound explicitly: connect(AF_UNSPEC) keeps only such a port. */
	int tmp = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in b = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t bl = sizeof b;
	CHECK(bind(tmp, (struct sockaddr *)&b, sizeof b) == 0);
	getsockname(tmp, (struct sockaddr *)&b, &bl);
	close(tmp);
	int srv2 = socket(AF_INET, SOCK_DGRAM, 0);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(srv2, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv); /* a lost datagram fails, not hangs */
	CHECK(bind(srv2, (struct sockaddr *)&b, sizeof b) == 0);
	CHECK(connect(srv2, (struct sockaddr *)&from, fl) == 0);
	CHECK(sendto(cli, msg, 7, 0, (struct sockaddr *)&b, sizeof b) == 7);
	CHECK(recv(srv2, buf, sizeof buf, 0) == 7);
	/* association dissolved: a datagram from a third socket names its sender */
	struct sockaddr_in unspec = {.sin_family = AF_UNSPEC};
	CHECK(connect(srv2, (struct sockaddr *)&unspec, sizeof unspec) == 0);
	int oth = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(sendto(oth, msg, 9, 0, (struct sockaddr *)&b, sizeof b) == 9);
	CHECK(recv(srv2, buf, sizeof buf, 0) == 9);
	struct sockaddr_in on;
	socklen_t onl = sizeof on;
	getsockname(oth, (struct sockaddr *)&on, &onl);
	printf("other_port %d\nserver2_port %d\n", ntohs(on.sin_port), ntohs(b.sin_port));
	close(srv2);
	close(oth);
	close(cli);
	close(srv);
	return 0;
}
