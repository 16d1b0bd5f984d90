/* misc: fortified reads (__read_chk, __recv_chk, __recvfrom_chk when built
 * with _FORTIFY_SOURCE), sendfile and splice to sockets, dup/dup3, the
 * resolver, and reads/writes on a plain file (not recorded). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "misc: %s failed: %s\n", #x, strerror(errno)); exit(1); } } while (0)

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	char buf[64];
	volatile size_t three = 3, four = 4; /* unknown at compile time: the fortified entry points are used */
	CHECK(send(sv[0], "0123456789", 10, 0) == 10);
	CHECK(read(sv[1], buf, three) == 3);                          /* __read_chk */
	CHECK(recv(sv[1], buf, three, 0) == 3);                      /* __recv_chk */
	CHECK(recvfrom(sv[1], buf, four, 0, NULL, NULL) == 4);      /* __recvfrom_chk */

	int f = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(f >= 0);
	CHECK(write(f, "file-data-20-bytes!!", 20) == 20);       /* not a socket */
	CHECK(lseek(f, 0, SEEK_SET) == 0);
	CHECK(read(f, buf, 5) == 5);
	off_t off = 0;
	CHECK(sendfile(sv[0], f, &off, 20) == 20);
	CHECK(recv(sv[1], buf, 20, MSG_WAITALL) == 20);
	int p[2];
	CHECK(pipe(p) == 0);
	CHECK(write(p[1], "pipe!", 5) == 5);
	CHECK(splice(p[0], NULL, sv[0], NULL, 5, 0) == 5);
	CHECK(recv(sv[1], buf, 5, MSG_WAITALL) == 5);
	close(f);

	int d = dup(sv[0]);
	CHECK(send(d, "d", 1, 0) == 1);
	CHECK(dup3(sv[0], 40, O_CLOEXEC) == 40);
	CHECK(send(40, "e", 1, 0) == 1);

	struct addrinfo *res = NULL;
	int r = getaddrinfo("localhost", "80", NULL, &res);
	if (r == 0)
		freeaddrinfo(res);
	printf("gai %d\n", r);
	struct hostent *h = gethostbyname("localhost");
	struct hostent he, *res2 = NULL;
	char hb[1024];
	int herr = 0;
	gethostbyname_r("localhost", &he, hb, sizeof hb, &res2, &herr);
	printf("ghbn %d\n", h != NULL);
	return 0;
}
