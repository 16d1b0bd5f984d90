/* proc: process creation. fork, vfork (+exec), _Fork, posix_spawn, and an
 * execve whose environment lacks LD_PRELOAD/SOCKCAP_* (re-inserted by the
 * library unless SOCKCAP_REINJECT=0). Every child image sends one byte over an
 * inherited socketpair so its log must exist. argv[1] "child" = exec'd image. */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "proc: %s failed: %s\n", #x, strerror(errno)); exit(1); } } while (0)

extern char **environ;

static int fd_arg(const char *s) { return atoi(s); }

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "child")) {
		int fd = fd_arg(argv[2]);
		CHECK(send(fd, "c", 1, 0) == 1);
		return 0;
	}
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	char fdstr[16];
	snprintf(fdstr, sizeof fdstr, "%d", sv[1]);
	char *cargv[] = {argv[0], "child", fdstr, NULL};

	pid_t p = fork();
	if (p == 0) {
		send(sv[1], "f", 1, 0);
		_exit(0);
	}
	CHECK(p > 0);
	waitpid(p, NULL, 0);
	printf("fork %d\n", p);

	p = vfork();
	if (p == 0) {
		execv(argv[0], cargv);
		_exit(127);
	}
	CHECK(p > 0);
	waitpid(p, NULL, 0);
	printf("vfork %d\n", p);

	p = _Fork();
	if (p == 0) {
		send(sv[1], "F", 1, 0);
		_exit(0);
	}
	CHECK(p > 0);
	waitpid(p, NULL, 0);
	printf("_Fork %d\n", p);

	CHECK(posix_spawn(&p, argv[0], NULL, NULL, cargv, environ) == 0);
	waitpid(p, NULL, 0);
	printf("posix_spawn %d\n", p);

	/* exec with a stripped environment */
	p = fork();
	if (p == 0) {
		char *env[] = {"PATH=/usr/bin:/bin", NULL};
		execve(argv[0], cargv, env);
		_exit(127);
	}
	waitpid(p, NULL, 0);
	printf("stripped %d\n", p);

	/* a failing exec is recorded and the program goes on */
	errno = 0;
	CHECK(execl("/nonexistent/prog", "prog", (char *)NULL) == -1 && errno == ENOENT);

	char b[16];
	int n = 0;
	close(sv[1]);
	for (;;) {
		ssize_t r = recv(sv[0], b, sizeof b, 0);
		if (r <= 0)
			break;
		n += (int)r;
	}
	printf("bytes %d\n", n);
	return 0;
}
