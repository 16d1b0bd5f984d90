/* highfd: sockets numbered above the library's direct fd table (65536), as
 * a proxy holding tens of thousands of connections has: a TCP connection,
 * a UDP pair and a socketpair all at fds >= argv[1], with their endpoints,
 * bytes and closes recorded like those of low fds. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "highfd: %s failed: %s\n", #x, strerror(errno)); exit(1); } } while (0)

static int port_of(int fd, int peer)
{
	struct sockaddr_in a;
	socklen_t l = sizeof a;
	CHECK((peer ? getpeername(fd, (struct sockaddr *)&a, &l) : getsockname(fd, (struct sockaddr *)&a, &l)) == 0);
	return ntohs(a.sin_port);
}

int main(int argc, char **argv)
{
	/* argv[1]: the first fd to use (default 70000, above the shipped table;
	 * the test also runs a build with a small table, where 2000 is above it) */
	int LOW = argc > 1 ? atoi(argv[1]) : 70000;
	struct rlimit rl = {(rlim_t)LOW + 1024, (rlim_t)LOW + 1024};
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		printf("skip 1\n");
		return 0;
	}
	/* fill fds up to LOW so that the sockets below are created up there */
	int nul = open("/dev/null", O_RDONLY);
	CHECK(nul >= 0);
	for (int fd = nul + 1; fd < LOW; fd++)
		CHECK(dup2(nul, fd) == fd);

	char msg[200], buf[1000];
	memset(msg, 'x', sizeof msg);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(l >= LOW);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 4) == 0);
	socklen_t al = sizeof a;
	CHECK(getsockname(l, (struct sockaddr *)&a, &al) == 0);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
	int s = accept(l, NULL, NULL);
	CHECK(s >= LOW);
	for (int i = 0; i < 5; i++)
		CHECK(send(c, msg, 100, 0) == 100);
	for (int got = 0; got < 500;) {
		ssize_t n = recv(s, buf, sizeof buf, 0);
		CHECK(n > 0);
		got += (int)n;
	}
	for (int i = 0; i < 3; i++)
		CHECK(write(s, msg, 50) == 50);
	for (int got = 0; got < 150;) {
		ssize_t n = read(c, buf, sizeof buf);
		CHECK(n > 0);
		got += (int)n;
	}
	printf("server_port %d\nclient_port %d\nlisten_fd %d\nclient_fd %d\nserver_fd %d\n",
	       ntohs(a.sin_port), port_of(c, 0), l, c, s);

	int u1 = socket(AF_INET, SOCK_DGRAM, 0), u2 = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(u1 >= LOW && u2 >= LOW);
	struct sockaddr_in b = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(bind(u2, (struct sockaddr *)&b, sizeof b) == 0);
	socklen_t bl = sizeof b;
	CHECK(getsockname(u2, (struct sockaddr *)&b, &bl) == 0);
	for (int i = 1; i <= 4; i++) {
		CHECK(sendto(u1, msg, (size_t)(10 * i), 0, (struct sockaddr *)&b, sizeof b) == 10 * i);
		CHECK(recvfrom(u2, buf, sizeof buf, 0, NULL, NULL) == 10 * i);
	}
	printf("udp_server_port %d\nudp_client_port %d\n", ntohs(b.sin_port), port_of(u1, 0));

	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && sv[0] >= LOW && sv[1] >= LOW);
	CHECK(send(sv[0], msg, 7, 0) == 7 && recv(sv[1], buf, sizeof buf, 0) == 7);
	CHECK(send(sv[1], msg, 9, 0) == 9 && recv(sv[0], buf, sizeof buf, 0) == 9);
	printf("pair0_fd %d\npair1_fd %d\n", sv[0], sv[1]);

	int all[] = {c, s, l, u1, u2, sv[0], sv[1]};
	for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++)
		CHECK(close(all[i]) == 0);
	return 0;
}
