/* reconcile-load.c — the load for bench/reconcile.sh: two processes (a
 * client and a forked server) exchanging request/response messages over
 * CONNS loopback TCP connections, MSGS messages in all (requests plus
 * responses). The client writes one request on every connection, then reads
 * every response, so all connections are busy at once; the server polls.
 *
 *   reconcile-load [MSGS [CONNS]]      default 1000000 messages, 16 connections
 *
 * Run it under `wap5 run` (libsockcap must see real libc calls: this is C,
 * dynamically linked). Exit status 0 when every byte came back. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum { REQ = 64, RESP = 128, MAXC = 256 };

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void full(int fd, char *buf, size_t n, int wr)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = wr ? write(fd, buf + done, n - done) : read(fd, buf + done, n - done);
		if (r <= 0)
			die(wr ? "write" : "read");
		done += (size_t)r;
	}
}

int main(int argc, char **argv)
{
	long msgs = argc > 1 ? atol(argv[1]) : 1000000;
	int conns = argc > 2 ? atoi(argv[2]) : 16;
	if (conns < 1 || conns > MAXC || msgs < 2)
		return 2;
	long rounds = msgs / 2 / conns;

	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, MAXC) ||
	    getsockname(ls, (struct sockaddr *)&a, &al))
		die("listen");

	pid_t child = fork();
	if (child < 0)
		die("fork");
	char buf[RESP];
	memset(buf, 'x', sizeof buf);
	if (child == 0) { /* server */
		struct pollfd p[MAXC];
		long left[MAXC];
		for (int i = 0; i < conns; i++) {
			p[i].fd = accept(ls, NULL, NULL);
			if (p[i].fd < 0)
				die("accept");
			p[i].events = POLLIN;
			left[i] = rounds;
		}
		close(ls);
		int open = conns;
		while (open > 0) {
			if (poll(p, (nfds_t)conns, -1) < 0)
				die("poll");
			for (int i = 0; i < conns; i++) {
				if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP)))
					continue;
				if (left[i] == 0) { /* the client closed */
					close(p[i].fd);
					p[i].fd = -1;
					open--;
					continue;
				}
				full(p[i].fd, buf, REQ, 0);
				full(p[i].fd, buf, RESP, 1);
				left[i]--;
			}
		}
		_exit(0);
	}
	close(ls);
	int fd[MAXC];
	for (int i = 0; i < conns; i++) {
		fd[i] = socket(AF_INET, SOCK_STREAM, 0);
		int one = 1;
		setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)&a, sizeof a))
			die("connect");
	}
	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < conns; i++)
			full(fd[i], buf, REQ, 1);
		for (int i = 0; i < conns; i++)
			full(fd[i], buf, RESP, 0);
	}
	for (int i = 0; i < conns; i++)
		close(fd[i]);
	int st;
	if (waitpid(child, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	printf("%ld messages over %d connections\n", rounds * conns * 2, conns);
	return 0;
}
