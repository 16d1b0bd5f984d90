/* closeall: a daemon-like program that closes every fd (close_range, closefrom,
 * and a close loop) and dup2s over fds; logging must go on without an fd of
 * its own, and closes of sockets are recorded. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "closeall: %s failed: %s\n", #x, strerror(errno)); exit(2); } } while (0)

static void pair_send(int n)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	for (int i = 0; i < n; i++)
		CHECK(send(sv[0], "x", 1, 0) == 1);
	int d2 = fcntl(sv[0], F_DUPFD_CLOEXEC, 50);
	CHECK(d2 >= 50);
	CHECK(send(d2, "y", 1, 0) == 1);
	/* dup2 a fresh socket over one end: an implicit close */
	int d = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(dup2(d, sv[1]) == sv[1]);
}

int main(void)
{
	int out = dup(1);
	pair_send(3);
	CHECK(close_range(3, ~0U, 0) == 0 || errno == ENOSYS);
	pair_send(3);
	closefrom(3);
	pair_send(3);
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	for (int fd = 0; fd < (int)rl.rlim_cur && fd < 4096; fd++)
		if (fd != 2)
			close(fd);
	pair_send(3);
	dprintf(2, "closeall done\n");
	(void)out;
	return 0;
}
