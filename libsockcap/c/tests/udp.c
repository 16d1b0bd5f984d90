/* udp: datagrams with checksums and addresses, sendto/recvfrom, recv on an
 * unconnected socket (sender learned anyway), connected UDP, sendmmsg/recvmmsg. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
	close(cli);
	close(srv);
	return 0;
}
