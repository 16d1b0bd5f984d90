/* tcp: the stream-socket surface. A server and a client in one process:
 * bind to port 0, listen, connect, accept, then every send/recv flavour,
 * a nonblocking connect, shutdown and close. Prints the ports it used. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "tcp: %s failed: %s\n", #x, strerror(errno)); exit(1); } } while (0)

int main(void)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(l >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
	CHECK(listen(l, 8) == 0);
	socklen_t al = sizeof a;
	CHECK(getsockname(l, (struct sockaddr *)&a, &al) == 0);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
	int s = accept(l, NULL, NULL);
	CHECK(s >= 0);
	struct sockaddr_in cl;
	al = sizeof cl;
	getsockname(c, (struct sockaddr *)&cl, &al);
	printf("server_port %d\nclient_port %d\n", ntohs(a.sin_port), ntohs(cl.sin_port));

	char buf[4096];
	memset(buf, 'x', sizeof buf);
	CHECK(send(c, buf, 100, 0) == 100);                       /* 1 */
	CHECK(write(c, buf, 200) == 200);                          /* 2 */
	struct iovec iov[2] = {{buf, 10}, {buf, 20}};
	CHECK(writev(c, iov, 2) == 30);                            /* 3 */
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
	CHECK(sendmsg(c, &m, 0) == 30);                            /* 4 */
	CHECK(sendto(c, buf, 40, 0, NULL, 0) == 40);               /* 5 */
	size_t want = 400, got = 0;
	while (got < want) {
		ssize_t r = recv(s, buf, want - got, 0);
		CHECK(r > 0);
		got += (size_t)r;
	}
	printf("server_received %zu\n", got);
	CHECK(send(s, buf, 7, 0) == 7);
	CHECK(read(c, buf, 7) == 7);
	CHECK(send(s, buf, 8, 0) == 8);
	struct iovec riov = {buf, 8};
	CHECK(readv(c, &riov, 1) == 8);
	CHECK(send(s, buf, 9, 0) == 9);
	struct msghdr rm = {.msg_iov = &riov, .msg_iovlen = 1};
	CHECK(recvmsg(c, &rm, 0) == 8);
	CHECK(recvfrom(c, buf, 1, 0, NULL, NULL) == 1);
	/* a failing recv: nothing to read on a nonblocking socket */
	CHECK(recv(c, buf, 1, MSG_DONTWAIT) == -1 && errno == EAGAIN);
	CHECK(shutdown(c, SHUT_WR) == 0);
	CHECK(recv(s, buf, 10, 0) == 0);
	CHECK(close(s) == 0);
	CHECK(close(c) == 0);

	/* nonblocking connect: local name known at once, peer at first I/O */
	int n = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int r = connect(n, (struct sockaddr *)&a, sizeof a);
	CHECK(r == 0 || errno == EINPROGRESS);
	struct pollfd p = {n, POLLOUT, 0};
	poll(&p, 1, 1000);
	int s2 = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	CHECK(s2 >= 0);
	CHECK(send(n, "hello", 5, 0) == 5);
	CHECK(recv(s2, buf, 5, MSG_WAITALL) == 5);
	al = sizeof cl;
	getsockname(n, (struct sockaddr *)&cl, &al);
	printf("nb_client_port %d\n", ntohs(cl.sin_port));
	close(n);
	close(s2);
	close(l);

	/* listen without bind: the kernel picks the port; the library reports it */
	int lb = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(listen(lb, 1) == 0);
	struct sockaddr_in lba;
	al = sizeof lba;
	getsockname(lb, (struct sockaddr *)&lba, &al);
	printf("unbound_listen_port %d\n", ntohs(lba.sin_port));
	close(lb);
	/* errno preserved by the wrappers */
	errno = 0;
	CHECK(close(12345) == -1 && errno == EBADF);
	return 0;
}
