/* unixsock: a socketpair shared with a forked child, and a named Unix socket
 * served by a child: peer pids (SO_PEERCRED) and inodes pair the ends. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "unixsock: %s failed: %s\n", #x, strerror(errno)); exit(1); } } while (0)

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid_t c = fork();
	CHECK(c >= 0);
	if (c == 0) {
		close(sv[0]);
		CHECK(write(sv[1], "ping", 4) == 4);
		char b[4];
		CHECK(read(sv[1], b, 4) == 4);
		_exit(0);
	}
	close(sv[1]);
	char b[64];
	CHECK(read(sv[0], b, 4) == 4);
	CHECK(write(sv[0], "pong", 4) == 4);
	waitpid(c, NULL, 0);
	close(sv[0]);
	printf("pair_child %d\n", c);

	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s", argv[1]);
	unlink(a.sun_path);
	CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
	CHECK(listen(l, 4) == 0);
	pid_t srv = fork();
	CHECK(srv >= 0);
	if (srv == 0) {
		int s = accept(l, NULL, NULL);
		CHECK(s >= 0);
		CHECK(recv(s, b, 3, MSG_WAITALL) == 3);
		CHECK(send(s, b, 3, 0) == 3);
		close(s);
		_exit(0);
	}
	close(l);
	int cfd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(connect(cfd, (struct sockaddr *)&a, sizeof a) == 0);
	CHECK(send(cfd, "abc", 3, 0) == 3);
	CHECK(recv(cfd, b, 3, MSG_WAITALL) == 3);
	close(cfd);
	waitpid(srv, NULL, 0);
	printf("server_child %d\n", srv);
	unlink(a.sun_path);
	return 0;
}
